// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rec_offcpu.c - record --offcpu: stacks into sched files (see rec_offcpu.h). */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include "util.h"
#include "rec_offcpu.h"
#include "rec_threads.h"

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
	__u16 i;

	if (!(flags & RK_STACKF_KERNEL_HIDDEN) && st->nr_kernel) {
		o->chain[n++] = (__u64)PERF_CONTEXT_KERNEL;
		for (i = 0; i < st->nr_kernel && i < RK_STACK_KERNEL_MAX; i++)
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
