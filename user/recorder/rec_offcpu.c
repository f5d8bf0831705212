// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rec_offcpu.c - record --offcpu: stacks into sched files (see rec_offcpu.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "rec_offcpu.h"
#include "rec_threads.h"

/*
 * A kernel stack taken in a tp_btf program starts in the program itself
 * (JIT text, outside the kernel's) and the tracepoint's glue
 * (bpf_trace_runN, __bpf_trace_*, __traceiter_*): frames of ours, not
 * the thread's, and their number differs between kernels. They are cut
 * off by address, with the kernel's text and those functions' ranges read
 * from /proc/kallsyms once (nothing cut where it cannot be read).
 */
static struct {
	int loaded;
	__u64 stext, etext;
	__u64 (*glue)[2]; /* [start, end) */
	size_t nglue;
} ktext;

static int glue_name(const char *n)
{
	return !strncmp(n, "bpf_trace_run", 13) || !strncmp(n, "__bpf_trace_", 12) ||
	       !strncmp(n, "__traceiter_", 12);
}

static void ktext_load(void)
{
	char line[512], name[256], type;
	unsigned long long a, open = 0;
	size_t cap = 0;
	FILE *f;

	ktext.loaded = 1;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 || !a)
			continue;
		/* The function before ends where the next symbol starts. */
		if (open && a > ktext.glue[ktext.nglue - 1][0]) {
			ktext.glue[ktext.nglue - 1][1] = a;
			open = 0;
		}
		if (!strcmp(name, "_stext"))
			ktext.stext = a;
		else if (!strcmp(name, "_etext"))
			ktext.etext = a;
		else if ((type == 't' || type == 'T') && glue_name(name)) {
			if (ktext.nglue == cap) {
				void *n = realloc(ktext.glue,
						  (cap ? cap * 2 : 256) * sizeof(*ktext.glue));

				if (!n)
					break;
				ktext.glue = n;
				cap = cap ? cap * 2 : 256;
			}
			ktext.glue[ktext.nglue][0] = a;
			ktext.glue[ktext.nglue][1] = a + 1;
			ktext.nglue++;
			open = 1;
		}
	}
	fclose(f);
}

/* Is @ip ours (the program, or the tracepoint's glue to it)? */
static int frame_is_ours(__u64 ip)
{
	size_t i;

	if (!ktext.stext || !ktext.etext)
		return 0; /* not known: nothing cut */
	if (ip < ktext.stext || ip >= ktext.etext)
		return 1;
	for (i = 0; i < ktext.nglue; i++)
		if (ip >= ktext.glue[i][0] && ip < ktext.glue[i][1])
			return 1;
	return 0;
}

/* How many of @st's first kernel frames are ours (at most 4: the program and the glue). */
static __u16 ours_at_top(const struct rk_stack *st)
{
	__u16 n = 0;

	if (!ktext.loaded)
		ktext_load();
	while (n < st->nr_kernel && n < 4 && frame_is_ours(st->ip[n]))
		n++;
	return n;
}

/* The record as written: header, chain (markers and frames), sample_id. */
struct stack_out {
	struct rk_stack_record h;
	__u64 chain[2 + RK_STACK_KERNEL_MAX + RK_STACK_USER_MAX];
	struct sample_id id;
};

/*
 * Which of @s's frames @t's file may hold (docs/trust.md): kernel frames
 * only in a root-only file, or where perf_event_paranoid <= 1 would give
 * its user kernel call chains; a waker another user's wakeup record hides
 * (rec_loop.c's on_waking) shows none of its frames either.
 */
static __u32 withheld(const struct rk_rec *r, const struct rk_thread *t, const struct rk_signal *s)
{
	__u32 f = 0;

	if (t->reader && r->paranoid > 1)
		f |= RK_STACKF_KERNEL_HIDDEN;
	if (s->kind == RK_SIG_WAKING && s->flags & RK_SIGF_WAKER_OTHER && t->reader &&
	    r->paranoid > -1)
		f |= RK_STACKF_KERNEL_HIDDEN | RK_STACKF_USER_HIDDEN;
	return f;
}

/* @st's frames that @flags leave into @o's chain, perf's layout. Return: the chain's u64s. */
static __u64 fill_chain(struct stack_out *o, const struct rk_stack *st, __u32 flags)
{
	__u64 n = 0;
	__u16 i = 0;

	if (!(flags & RK_STACKF_KERNEL_HIDDEN) && st->nr_kernel)
		i = ours_at_top(st);
	if (!(flags & RK_STACKF_KERNEL_HIDDEN) && i < st->nr_kernel) {
		o->chain[n++] = (__u64)PERF_CONTEXT_KERNEL;
		for (; i < st->nr_kernel && i < RK_STACK_KERNEL_MAX; i++)
			o->chain[n++] = st->ip[i];
	}
	if (!(flags & RK_STACKF_USER_HIDDEN) && st->nr_user) {
		o->chain[n++] = (__u64)PERF_CONTEXT_USER;
		for (i = 0; i < st->nr_user && i < RK_STACK_USER_MAX; i++)
			o->chain[n++] = st->ip[RK_STACK_KERNEL_MAX + i];
	}
	return n;
}

void rec_offcpu_put(struct rk_rec *r, const struct rk_signal *s)
{
	const struct rk_stack *st = rk_swring_stack(&r->sw);
	struct rk_thread *t;
	struct stack_out o;
	__u64 n;

	/* Step 1: a stack, of a thread whose record was just written. */
	if (!st || (s->kind != RK_SIG_SWITCH_OUT && s->kind != RK_SIG_WAKING))
		return;
	t = rec_thread_find(r, s->tid);
	if (!t || t->refused || t->dead || t->frozen || s->tgid == r->self)
		return;
	/* Step 2: the frames its reader may see, as a perf call chain. */
	memset(&o, 0, sizeof(o));
	o.h.of = s->kind == RK_SIG_WAKING ? RK_STACK_OF_WAKEUP : RK_STACK_OF_SWITCH;
	o.h.flags = withheld(r, t, s);
	n = fill_chain(&o, st, o.h.flags);
	o.h.nr = n;
	/* Step 3: the sample_id after the chain, the record's own (its time clamped alike). */
	rec_fill_id(r, &o.id, t, s);
	memmove(&o.chain[n], &o.id, sizeof(o.id));
	o.h.h.type = RK_RECORD_STACK;
	o.h.h.size = (__u16)(sizeof(o.h) + n * 8 + sizeof(o.id));
	rec_put_rec(r, t, &o, o.h.h.size);
	r->st->stacks++;
}
