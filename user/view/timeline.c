// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * timeline.c - a session's files read back as per-thread events and samples
 * (see timeline.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "timeline.h"
#include "session.h"
#include "symbols.h"
#include "tracedata.h"
#include "util.h"

/* TASK_* of the kernel (stable values; macros, not in BTF). */
#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_STOPPED 0x4
#define TASK_TRACED 0x8
#define TASK_DEAD 0x80
#define TASK_NOLOAD 0x400

enum rk_offcpu rk_offcpu_of(__u32 w)
{
	__u32 s = w & RK_SWITCH_STATE_MASK;

	if (!(w & RK_SWITCH_STATE))
		return RK_OFF_UNKNOWN;
	if (!s || (w & RK_SWITCH_PREEMPTED))
		return RK_OFF_PREEMPTED; /* runnable: a preempted task is not dequeued */
	if (s & TASK_DEAD)
		return RK_OFF_DEAD;
	if (s & (TASK_STOPPED | TASK_TRACED))
		return RK_OFF_STOPPED;
	if ((s & TASK_UNINTERRUPTIBLE) && (s & TASK_NOLOAD))
		return RK_OFF_IDLE;
	if (s & TASK_UNINTERRUPTIBLE)
		return RK_OFF_BLOCKED;
	return RK_OFF_SLEEPING;
}

int rk_cpu_ev_cmp(const void *a, const void *b)
{
	const struct rk_cpu_ev *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int rk_cpu_ev_pairs(const struct rk_cpu_ev *out, const struct rk_cpu_ev *next)
{
	return next && next->cpu == out->cpu && next->time == out->time && next->kind == RK_CPU_IN;
}

__u64 rk_offcpu_report(__u32 w)
{
	switch (rk_offcpu_of(w)) {
	case RK_OFF_PREEMPTED:
		/* TASK_REPORT_MAX if the kernel preempted it, whatever the state said; else R */
		return w & RK_SWITCH_PREEMPTED ? 0x100 : 0;
	case RK_OFF_SLEEPING:
		return 0x1;
	case RK_OFF_BLOCKED:
		return 0x2;
	case RK_OFF_STOPPED:
		return 0x4;
	case RK_OFF_DEAD:
		return 0x10;
	case RK_OFF_IDLE:
		return 0x80;
	default:
		return 0;
	}
}

const char *rk_offcpu_name(enum rk_offcpu s)
{
	static const char *const n[RK_OFF_NR] = { "preempted", "sleeping", "blocked", "idle",
						  "stopped",   "dead",	   "unknown" };

	return s < RK_OFF_NR ? n[s] : "unknown";
}

/* The walk of one file. */
struct tl_walk {
	struct rk_timeline *tl;
	const struct rk_bufile *bf;
	struct rk_tl_thread *t; /* sched files */
	size_t cap_ev, cap_names;
	/* -e files */
	__u32 src;
	struct rk_symbols *syms;
	const struct rk_tp_format *tpf;
	struct rk_stack_rec
		*stack; /* sched files: a parsed stack (4 KiB: not on the stack); NULL: skipped */
	int err;
};

/* Interned strings: an open-addressing table of offsets + 1 (0: empty slot). */

static __u32 str_hash(const char *s)
{
	__u32 h = 2166136261u;

	while (*s)
		h = (h ^ (__u8)*s++) * 16777619u;
	return h;
}

static int str_grow(struct rk_timeline *tl)
{
	size_t i, n = tl->str_nslot ? tl->str_nslot * 2 : 1024;
	__u32 *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (i = 0; i < tl->str_nslot; i++) {
		__u32 v = tl->str_slot[i];
		size_t j;

		if (!v)
			continue;
		for (j = str_hash(tl->strs + v - 1) & (n - 1); s[j]; j = (j + 1) & (n - 1))
			;
		s[j] = v;
	}
	free(tl->str_slot);
	tl->str_slot = s;
	tl->str_nslot = n;
	return 0;
}

/* The offset of @s in @tl's table (added once). Return: it, or ~0u (no memory). */
static __u32 intern(struct rk_timeline *tl, const char *s)
{
	size_t len = strlen(s) + 1, j;

	if ((tl->str_n + 1) * 2 > tl->str_nslot && str_grow(tl))
		return ~0u;
	for (j = str_hash(s) & (tl->str_nslot - 1); tl->str_slot[j];
	     j = (j + 1) & (tl->str_nslot - 1))
		if (!strcmp(tl->strs + tl->str_slot[j] - 1, s))
			return tl->str_slot[j] - 1;
	if (tl->strs_len + len > tl->str_cap) {
		size_t c = tl->str_cap ? tl->str_cap * 2 : 65536;
		char *p;

		while (c < tl->strs_len + len)
			c *= 2;
		p = realloc(tl->strs, c);
		if (!p)
			return ~0u;
		tl->strs = p;
		tl->str_cap = c;
	}
	memcpy(tl->strs + tl->strs_len, s, len);
	tl->str_slot[j] = (__u32)tl->strs_len + 1;
	tl->str_n++;
	tl->strs_len += len;
	return (__u32)(tl->strs_len - len);
}

/* Grow *@p (of *@cap elements of @size) to hold @n. Return: 0, -ENOMEM. */
static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap : 64;
	void *q;

	if (n <= *cap)
		return 0;
	while (c < n)
		c *= 2;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* The sample_id at the end of @h: time, cpu, res (0 if the attr has none). */
static void sample_id_of(const struct rk_bufile *bf, const struct perf_event_header *h, __u64 *time,
			 __u32 *cpu, __u32 *res)
{
	__u64 st = bf->pmu->attr.sample_type;
	size_t n = rk_sample_id_size(st);
	const __u8 *p;

	*time = 0;
	*cpu = *res = 0;
	if (!bf->pmu->attr.sample_id_all || n + sizeof(*h) > h->size)
		return;
	p = (const __u8 *)h + h->size - n;
	p += st & PERF_SAMPLE_TID ? 8 : 0;
	if (st & PERF_SAMPLE_TIME) {
		memcpy(time, p, 8);
		p += 8;
	}
	p += st & PERF_SAMPLE_ID ? 8 : 0;
	p += st & PERF_SAMPLE_STREAM_ID ? 8 : 0;
	if (st & PERF_SAMPLE_CPU) {
		memcpy(cpu, p, 4);
		memcpy(res, p + 4, 4);
	}
}

static int add_name(struct tl_walk *w, const char *comm)
{
	struct rk_tl_thread *t = w->t;

	if (grow((void **)&t->names, &w->cap_names, t->nnames + 1, sizeof(*t->names)))
		return -ENOMEM;
	memcpy(t->names[t->nnames], comm, RK_COMM_LEN);
	t->names[t->nnames][RK_COMM_LEN - 1] = '\0';
	return (int)t->nnames++;
}

static int add_ev(struct tl_walk *w, __u32 kind, __u64 time, __u32 cpu, __u32 arg, __u32 arg2)
{
	struct rk_tl_thread *t = w->t;
	struct rk_tl_event *e;

	if (grow((void **)&t->ev, &w->cap_ev, t->nev + 1, sizeof(*t->ev)))
		return -ENOMEM;
	e = &t->ev[t->nev++];
	e->time = time;
	e->kind = kind;
	e->cpu = cpu;
	e->arg = arg;
	e->arg2 = arg2;
	return 0;
}

/* An RK_RECORD_STACK: its addresses kept (symbolized when the session's are), an event for it. */
static int add_stack(struct tl_walk *w, const struct perf_event_header *h, __u64 time, __u32 cpu)
{
	struct rk_timeline *tl = w->tl;
	struct rk_stack_rec *r = w->stack;
	struct rk_tl_stack *s;

	if (rk_stack_parse(h, rk_sample_id_size(w->bf->pmu->attr.sample_type), r))
		return 0; /* not ours to end the walk: the record's size was good */
	if (grow((void **)&tl->stacks, &tl->stacks_cap, tl->nstacks + 1, sizeof(*tl->stacks)) ||
	    grow((void **)&tl->stack_ips, &tl->stack_ips_cap,
		 tl->nstack_ips + r->nr_kernel + r->nr_user, sizeof(*tl->stack_ips)))
		return -ENOMEM;
	s = &tl->stacks[tl->nstacks];
	memset(s, 0, sizeof(*s));
	s->time = time;
	s->tid = w->t->id.tid;
	s->tgid = w->t->id.tgid;
	s->of = r->of;
	s->flags = r->flags;
	s->nkernel = r->nr_kernel;
	s->nuser = r->nr_user;
	s->ip0 = tl->nstack_ips;
	if (r->nr_kernel) /* (an empty array may be no array at all) */
		memcpy(&tl->stack_ips[tl->nstack_ips], r->kip, r->nr_kernel * sizeof(__u64));
	if (r->nr_user)
		memcpy(&tl->stack_ips[tl->nstack_ips + r->nr_kernel], r->uip,
		       r->nr_user * sizeof(__u64));
	tl->nstack_ips += r->nr_kernel + r->nr_user;
	return add_ev(w, RK_TL_STACK, time, cpu, (__u32)tl->nstacks++, r->of);
}

static int on_sched_rec(const struct perf_event_header *h, void *ctx)
{
	struct tl_walk *w = ctx;
	__u64 time;
	__u32 cpu, res;
	int n;

	sample_id_of(w->bf, h, &time, &cpu, &res);
	switch (h->type) {
	case PERF_RECORD_SWITCH:
		if (h->misc & PERF_RECORD_MISC_SWITCH_OUT)
			w->err = add_ev(w, RK_TL_OUT, time, cpu, res, 0);
		else
			w->err = add_ev(w, RK_TL_IN, time, cpu, 0, 0);
		break;
	case PERF_RECORD_COMM:
		if (h->size < sizeof(*h) + 8 + RK_COMM_LEN)
			break;
		n = add_name(w, (const char *)h + sizeof(*h) + 8);
		if (n < 0)
			w->err = n;
		else
			w->err = add_ev(
				w, h->misc & PERF_RECORD_MISC_COMM_EXEC ? RK_TL_EXEC : RK_TL_COMM,
				time, cpu, (__u32)n, 0);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (h->size >= sizeof(*h) + 16) {
			__u32 ptid, ppid;

			memcpy(&ppid, (const __u8 *)h + sizeof(*h) + 4, 4);
			memcpy(&ptid, (const __u8 *)h + sizeof(*h) + 12, 4);
			w->err = h->type == PERF_RECORD_FORK ?
					 add_ev(w, RK_TL_FORK, time, cpu, ptid, ppid) :
					 add_ev(w, RK_TL_EXIT, time, cpu, (__u32)w->t->id.exit_code,
						0);
		}
		break;
	case RK_RECORD_WAKEUP:
		if (h->size >= sizeof(struct rk_wakeup_record)) {
			struct rk_wakeup_record wr;

			memcpy(&wr, h, sizeof(wr));
			w->err = add_ev(w, RK_TL_WAKEUP, time, cpu, wr.waker_tid,
					(wr.target_cpu & RK_TL_WAKEUP_CPU) |
						(wr.flags & RK_WAKEUP_NEW ? RK_TL_WAKEUP_NEW : 0) |
						(wr.flags & (RK_WAKEUP_CTX | RK_WAKEUP_IRQ_MASK))
							<< RK_TL_WAKEUP_CTX_SHIFT);
		}
		break;
	case RK_RECORD_STACK:
		/* A live reader has no use for them (and would keep every one). */
		if (w->stack)
			w->err = add_stack(w, h, time, cpu);
		break;
	case RK_RECORD_CRASH:
		if (h->size >= sizeof(struct rk_crash_record)) {
			struct rk_crash_record c;

			memcpy(&c, h, sizeof(c));
			w->err = add_ev(w, RK_TL_CRASH, c.time, cpu, (__u32)c.signo, c.crash_tid);
		}
		break;
	}
	return w->err;
}

/* The build id of the file at strs offset @dso (read once per file): its hex's offset, or ~0u. */
static __u32 build_id_of(struct rk_timeline *tl, __u32 dso)
{
	char hex[128];
	__u32 v = ~0u;
	size_t i;

	for (i = 0; i < tl->nbids; i++)
		if (tl->bids[i][0] == dso)
			return tl->bids[i][1];
	if (rk_tl_str(tl, dso)[0] == '/' && !rk_build_id_of(rk_tl_str(tl, dso), hex, sizeof(hex)))
		v = intern(tl, hex);
	if (!grow((void **)&tl->bids, &tl->bids_cap, tl->nbids + 1, sizeof(*tl->bids))) {
		tl->bids[tl->nbids][0] = dso;
		tl->bids[tl->nbids][1] = v;
		tl->nbids++;
	}
	return v;
}

/* @a symbolized through @syms (NULL: "[unknown]") as the next of tl->frames. Return: 0, -ENOMEM. */
static int add_frame(struct rk_timeline *tl, struct rk_symbols *syms, __u64 a)
{
	char sym[256];
	struct rk_sym_map map;
	const char *dso = "[unknown]";
	struct rk_tl_frame *f;

	if (grow((void **)&tl->frames, &tl->frames_cap, tl->nframes + 1, sizeof(*tl->frames)))
		return -ENOMEM;
	memset(&map, 0, sizeof(map));
	if (syms) {
		char *off;

		rk_symbols_resolve_map(syms, a, sym, sizeof(sym), &dso, &map);
		/*
		 * The function alone, as a profiler groups frames: its
		 * offset is in the frame's address (show prints both).
		 */
		off = strstr(sym, "+0x");
		if (off)
			*off = '\0';
	} else {
		snprintf(sym, sizeof(sym), "[unknown]");
	}
	f = &tl->frames[tl->nframes];
	memset(f, 0, sizeof(*f));
	f->ip = a;
	f->sym = intern(tl, sym);
	f->dso = intern(tl, dso);
	if (f->sym == ~0u || f->dso == ~0u)
		return -ENOMEM;
	f->map_start = map.start;
	f->map_len = map.len;
	f->map_pgoff = map.pgoff;
	f->build_id = map.len ? build_id_of(tl, f->dso) : ~0u;
	tl->nframes++;
	return 0;
}

/* A PERF_RECORD_SAMPLE of our sources (show.c's layout): time, tid, cpu, ip, chain, raw. */
static int on_sample_rec(const struct perf_event_header *h, void *ctx)
{
	struct tl_walk *w = ctx;
	struct rk_timeline *tl = w->tl;
	struct rk_sample smp;
	__u64 st = w->bf->pmu->attr.sample_type, ip, nr;
	const __u8 *chain, *raw;
	__u32 raw_len, nf = 0;
	struct rk_tl_sample *s;
	__u64 i;

	if (h->type != PERF_RECORD_SAMPLE || rk_sample_parse(st, h, &smp))
		return 0;
	ip = smp.ip;
	nr = smp.nr;
	chain = smp.chain;
	raw = smp.raw;
	raw_len = smp.raw_len;
	if (grow((void **)&tl->samples, &tl->samples_cap, tl->nsamples + 1, sizeof(*tl->samples)))
		return w->err = -ENOMEM;
	s = &tl->samples[tl->nsamples];
	memset(s, 0, sizeof(*s));
	s->time = smp.time;
	s->tid = smp.tid;
	s->tgid = smp.pid;
	s->cpu = smp.cpu;
	s->src = w->src;
	s->period = st & PERF_SAMPLE_PERIOD ? smp.period :
		    w->bf->pmu->attr.freq   ? 0 :
					      w->bf->pmu->attr.sample_period;
	s->frame0 = tl->nframes;
	s->fields = ~0u;
	/* Leaf first: the chain (without its context markers), else the ip alone. */
	for (i = 0; i < (chain ? nr : (st & PERF_SAMPLE_IP ? 1 : 0)); i++) {
		__u64 a = ip;

		if (chain)
			memcpy(&a, chain + i * 8, 8);
		if (a >= (__u64)PERF_CONTEXT_MAX)
			continue;
		if (add_frame(tl, w->syms, a))
			return w->err = -ENOMEM;
		nf++;
	}
	s->nframes = nf;
	if (raw && w->tpf) {
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);

		if (!m)
			return w->err = -ENOMEM;
		rk_tp_print_fields(m, w->tpf, raw, raw_len, 0);
		fclose(m);
		s->fields = text ? intern(tl, text) : ~0u;
		free(text);
	}
	tl->nsamples++;
	return 0;
}

static int wanted(const struct rk_bufile *bf, __u32 tid, __u32 pid)
{
	return (!tid || bf->ident->tid == tid) && (!pid || bf->ident->tgid == pid);
}

/* A file name of a buffer: a tid, maybe with a suffix ("123.1", moved aside). */
static int buffer_name(const char *name)
{
	char *end;

	if (name[0] < '0' || name[0] > '9')
		return 0;
	strtoul(name, &end, 10);
	return !*end || *end == '.';
}

int rk_timeline__add_sched(struct rk_timeline *tl, const struct rk_bufile *bf)
{
	struct tl_walk w = { .tl = tl, .bf = bf };
	struct rk_tl_thread *t;
	int err;

	if (grow((void **)&tl->threads, &tl->threads_cap, tl->nthreads + 1, sizeof(*tl->threads)))
		return -ENOMEM;
	t = &tl->threads[tl->nthreads++];
	memset(t, 0, sizeof(*t));
	t->id = *bf->ident;
	t->id.comm[RK_COMM_LEN - 1] = '\0';
	w.t = t;
	w.stack = malloc(sizeof(*w.stack));
	if (!w.stack)
		return -ENOMEM;
	err = rk_bufile__for_each(bf, on_sched_rec, &w);
	free(w.stack);
	if (w.err)
		return w.err;
	t->broken = err == -EBADMSG;
	/* No name from a record: the identity's (its last) is all there is. */
	if (!t->nnames && add_name(&w, t->id.comm) < 0)
		return -ENOMEM;
	return t->broken ? -EBADMSG : 0;
}

/* A source's buffers, each as wanted (tid, pid), given to @fn with its path. */
struct walk_dir {
	struct rk_timeline *tl;
	const char *session_dir, *src;
	__u32 tid, pid;
	int (*fn)(struct walk_dir *wd, const struct rk_bufile *bf);
	__u32 k; /* load_source: the source's index */
	int tp; /* load_source: it is a tracepoint */
};

/*
 * Every buffer file of @wd->src that opens and is wanted, to @wd->fn: what
 * does not open is reported, counted and passed over; a ring that stops
 * parsing is reported. Return: 0, -ENOMEM, or -errno if the directory
 * cannot be read and @must.
 */
static int walk_dir(struct walk_dir *wd, int must)
{
	char dir[PATH_MAX], path[PATH_MAX + 300];
	size_t denied = 0;
	struct dirent *de;
	int err = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s", wd->session_dir, wd->src);
	d = opendir(dir);
	if (!d) {
		if (!must)
			return 0;
		rk_err("cannot read %s: %s", dir, strerror(errno));
		return -errno;
	}
	while (err != -ENOMEM && (de = readdir(d))) {
		const char *msg = NULL;
		struct rk_bufile *bf;

		if (!buffer_name(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		bf = rk_bufile__open(path, &msg);
		if (!bf && errno == EACCES) {
			/* Another user's threads: one line for them all, not one per file. */
			denied++;
			wd->tl->skipped++;
			continue;
		}
		if (!bf) {
			rk_warn("skipping %s: %s", path,
				errno == EBADMSG && msg ? msg : strerror(errno));
			wd->tl->skipped++;
			continue;
		}
		err = wanted(bf, wd->tid, wd->pid) ? wd->fn(wd, bf) : 0;
		rk_bufile__free(bf);
		if (err == -EBADMSG)
			rk_warn("%s: records past a corrupt one are left out", path);
	}
	closedir(d);
	if (denied)
		rk_warn("skipping %zu file%s of %s: permission denied (other users' threads: "
			"their files are readable by their users and root, docs/trust.md)",
			denied, denied == 1 ? "" : "s", dir);
	return err == -ENOMEM ? err : 0;
}

static int sched_file(struct walk_dir *wd, const struct rk_bufile *bf)
{
	return rk_timeline__add_sched(wd->tl, bf);
}

/* A sample file: resolved through its process's sideband, a tracepoint's through its format. */
static int sample_file(struct walk_dir *wd, const struct rk_bufile *bf)
{
	const struct rk_tp_format *fmt = NULL;
	char sb[PATH_MAX + 300];
	struct rk_symbols *syms;
	struct rk_tp_format tpf;
	int err;

	if (bf->pmu->attr.type == PERF_TYPE_TRACEPOINT) {
		wd->tp = 1;
		if (!rk_tp_format_lookup(wd->session_dir, wd->src, bf->pmu->attr.config, &tpf))
			fmt = &tpf;
	}
	rk_sideband_path(wd->session_dir, bf->ident->tgid, sb, sizeof(sb));
	syms = bf->pmu->attr.sample_type & (PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN) ?
		       rk_symbols__new(sb) :
		       NULL;
	err = rk_timeline__add_samples(wd->tl, bf, wd->k, syms, fmt);
	rk_symbols__free(syms);
	return err;
}

static int load_sched(struct rk_timeline *tl, const char *session_dir, __u32 tid, __u32 pid)
{
	struct walk_dir wd = { .tl = tl,
			       .session_dir = session_dir,
			       .src = RK_SCHED_DIR,
			       .tid = tid,
			       .pid = pid,
			       .fn = sched_file };

	return walk_dir(&wd, 1);
}

static int cmp_thread(const void *a, const void *b)
{
	const struct rk_tl_thread *x = a, *y = b;

	if (x->id.tid != y->id.tid)
		return x->id.tid < y->id.tid ? -1 : 1;
	/* The same tid twice (reused, or a file moved aside): the older first. */
	return x->id.start_ns < y->id.start_ns ? -1 : x->id.start_ns > y->id.start_ns;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct rk_tl_sample *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

int rk_timeline__add_samples(struct rk_timeline *tl, const struct rk_bufile *bf, __u32 src,
			     struct rk_symbols *syms, const struct rk_tp_format *tpf)
{
	struct tl_walk w = { .tl = tl, .bf = bf, .src = src, .syms = syms, .tpf = tpf };
	int err;

	if (tl->src_tb && !tl->src_tb[src].known) {
		struct rk_tl_timebase *tb = &tl->src_tb[src];

		tb->type = bf->pmu->attr.type;
		tb->config = bf->pmu->attr.config;
		tb->freq = bf->pmu->attr.freq;
		tb->every = bf->pmu->attr.sample_period; /* a union with sample_freq */
		tb->known = 1;
	}
	err = rk_bufile__for_each(bf, on_sample_rec, &w);

	if (w.err) {
		tl->oom = 1;
		return w.err;
	}
	return err == -EBADMSG ? err : 0;
}

static int load_source(struct rk_timeline *tl, const char *session_dir, const char *src, __u32 tid,
		       __u32 pid, __u32 k)
{
	struct walk_dir wd = { .tl = tl,
			       .session_dir = session_dir,
			       .src = src,
			       .tid = tid,
			       .pid = pid,
			       .fn = sample_file,
			       .k = k };
	int err = walk_dir(&wd, 0);

	tl->src_is_tp[k] = wd.tp;
	return err;
}

static int load_samples(struct rk_timeline *tl, const char *session_dir, __u32 tid, __u32 pid)
{
	size_t cap = 0;
	struct dirent *de;
	DIR *d = opendir(session_dir);
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char p[PATH_MAX + 300];
		struct rk_tl_timebase *tb;
		int *is_tp;
		DIR *sub;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, RK_SCHED_DIR) ||
		    !strcmp(de->d_name, RK_SIDEBAND_DIR) || strlen(de->d_name) >= 64)
			continue;
		snprintf(p, sizeof(p), "%s/%s", session_dir, de->d_name);
		sub = opendir(p);
		if (!sub)
			continue;
		closedir(sub);
		if (grow((void **)&tl->srcs, &cap, tl->nsrcs + 1, sizeof(*tl->srcs)) ||
		    !(is_tp = realloc(tl->src_is_tp, (tl->nsrcs + 1) * sizeof(int)))) {
			err = -ENOMEM;
			break;
		}
		tl->src_is_tp = is_tp;
		tb = realloc(tl->src_tb, (tl->nsrcs + 1) * sizeof(*tb));
		if (!tb) {
			err = -ENOMEM;
			break;
		}
		tl->src_tb = tb;
		memset(&tb[tl->nsrcs], 0, sizeof(*tb));
		snprintf(tl->srcs[tl->nsrcs], sizeof(tl->srcs[0]), "%s", de->d_name);
		tl->src_is_tp[tl->nsrcs] = 0;
		tl->nsrcs++;
		err = load_source(tl, session_dir, de->d_name, tid, pid, (__u32)tl->nsrcs - 1);
	}
	closedir(d);
	/* qsort() of no array is undefined (its pointer is NULL then). */
	if (!err && tl->nsamples)
		qsort(tl->samples, tl->nsamples, sizeof(*tl->samples), cmp_sample);
	return err;
}

/*
 * The stacks' frames, each process's through its sideband (one symbol
 * table per process, made when its first stack comes). Return: 0, -ENOMEM.
 */
static int symbolize_stacks(struct rk_timeline *tl, const char *session_dir)
{
	struct {
		__u32 tgid;
		struct rk_symbols *syms;
	} *procs = NULL;
	size_t nprocs = 0, cap = 0, i, j, k;
	int err = 0;

	for (i = 0; i < tl->nstacks && !err; i++) {
		struct rk_tl_stack *s = &tl->stacks[i];
		char sb[PATH_MAX + 100];

		for (j = 0; j < nprocs && procs[j].tgid != s->tgid; j++)
			;
		if (j == nprocs) {
			if (grow((void **)&procs, &cap, nprocs + 1, sizeof(*procs))) {
				err = -ENOMEM;
				break;
			}
			rk_sideband_path(session_dir, s->tgid, sb, sizeof(sb));
			procs[j].tgid = s->tgid;
			procs[j].syms = rk_symbols__new(sb);
			nprocs++;
		}
		s->frame0 = tl->nframes;
		for (k = 0; k < (size_t)s->nkernel + s->nuser && !err; k++)
			err = add_frame(tl, procs[j].syms, tl->stack_ips[s->ip0 + k]);
		s->nframes = s->nkernel + s->nuser;
	}
	for (j = 0; j < nprocs; j++)
		rk_symbols__free(procs[j].syms);
	free(procs);
	return err;
}

int rk_timeline__load(struct rk_timeline *tl, const char *session_dir, __u32 tid, __u32 pid,
		      int with_samples)
{
	int err;

	memset(tl, 0, sizeof(*tl));
	/* Offset 0 is the empty string. */
	if (intern(tl, "") == ~0u)
		return -ENOMEM;
	err = load_sched(tl, session_dir, tid, pid);
	if (!err && tl->nstacks)
		err = symbolize_stacks(tl, session_dir);
	if (!err && with_samples)
		err = load_samples(tl, session_dir, tid, pid);
	free(tl->str_slot);
	tl->str_slot = NULL;
	tl->str_nslot = tl->str_n = 0;
	if (err == -ENOMEM)
		rk_err("out of memory reading %s", session_dir);
	if (err) {
		rk_timeline__free(tl);
		return err;
	}
	if (!tl->nthreads) {
		rk_timeline__free(tl);
		return -ENOENT;
	}
	qsort(tl->threads, tl->nthreads, sizeof(*tl->threads), cmp_thread);
	return 0;
}

unsigned long long rk_timeline__clip(struct rk_timeline *tl, __u64 lo, __u64 hi)
{
	unsigned long long gone = 0;
	size_t i, j, k;

	for (i = 0; i < tl->nthreads; i++) {
		struct rk_tl_thread *t = &tl->threads[i];

		for (j = k = 0; j < t->nev; j++) {
			const struct rk_tl_event *e = &t->ev[j];
			int names = e->kind == RK_TL_FORK || e->kind == RK_TL_EXEC ||
				    e->kind == RK_TL_COMM;

			if (names || (e->time >= lo && e->time <= hi))
				t->ev[k++] = *e;
		}
		gone += t->nev - k;
		t->nev = k;
	}
	for (j = k = 0; j < tl->nsamples; j++)
		if (tl->samples[j].time >= lo && tl->samples[j].time <= hi)
			tl->samples[k++] = tl->samples[j];
	gone += tl->nsamples - k;
	tl->nsamples = k;
	return gone;
}

void rk_timeline__free(struct rk_timeline *tl)
{
	size_t i;

	for (i = 0; i < tl->nthreads; i++) {
		free(tl->threads[i].ev);
		free(tl->threads[i].names);
	}
	free(tl->threads);
	free(tl->srcs);
	free(tl->src_is_tp);
	free(tl->src_tb);
	free(tl->samples);
	free(tl->frames);
	free(tl->stacks);
	free(tl->stack_ips);
	free(tl->strs);
	free(tl->str_slot);
	free(tl->bids);
	memset(tl, 0, sizeof(*tl));
}

/* The first record's time of a file (0: none timed). */
struct first_time {
	__u64 sample_type, time;
};

static int on_first(const struct perf_event_header *h, void *ctx)
{
	struct first_time *f = ctx;

	f->time = rk_record_time(f->sample_type, h);
	return f->time != 0;
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

__u64 rk_first_time(const struct rk_bufile *bf)
{
	struct first_time f = { .sample_type = bf->pmu->attr.sample_type };

	rk_bufile__for_each(bf, on_first, &f);
	return f.time;
}

/* One wrapped file into @w: its thread, its first time. Return: 0 or -ENOMEM. */
static int wrapped_file(struct rk_wraps *w, const struct rk_bufile *bf, __u32 **tids, size_t *cap)
{
	__u64 t = rk_first_time(bf);

	w->files++;
	if (t > w->whole_from)
		w->whole_from = t;
	if (grow((void **)tids, cap, w->files, sizeof(**tids)))
		return -ENOMEM;
	(*tids)[w->files - 1] = bf->ident->tid;
	return 0;
}

/* Every buffer of one source directory. Return: 0 or -ENOMEM. */
static int wraps_of_dir(struct rk_wraps *w, const char *dir, __u32 tid, __u32 pid, __u32 **tids,
			size_t *cap)
{
	char path[PATH_MAX + 600];
	struct dirent *de;
	DIR *d = opendir(dir);
	int err = 0;

	if (!d)
		return 0;
	while (!err && (de = readdir(d))) {
		struct rk_bufile *bf;

		if (!buffer_name(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		/* What does not open was said by the load; here it is only not counted. */
		bf = rk_bufile__open(path, NULL);
		if (!bf)
			continue;
		if (wanted(bf, tid, pid) && bf->ident->overwritten)
			err = wrapped_file(w, bf, tids, cap);
		rk_bufile__free(bf);
	}
	closedir(d);
	return err;
}

int rk_timeline__wraps(const char *session_dir, __u32 tid, __u32 pid, struct rk_wraps *w)
{
	char path[PATH_MAX + 300];
	__u32 *tids = NULL;
	struct dirent *de;
	size_t cap = 0, i;
	int err = 0;
	DIR *d;

	memset(w, 0, sizeof(*w));
	d = opendir(session_dir);
	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		/* The sideband's records have no thread's history to cut. */
		if (de->d_name[0] == '.' || !strcmp(de->d_name, RK_SIDEBAND_DIR))
			continue;
		snprintf(path, sizeof(path), "%s/%s", session_dir, de->d_name);
		err = wraps_of_dir(w, path, tid, pid, &tids, &cap);
	}
	closedir(d);
	if (!err && w->files) {
		qsort(tids, w->files, sizeof(*tids), cmp_u32);
		for (i = 0; i < w->files; i++)
			w->threads += !i || tids[i] != tids[i - 1];
	}
	free(tids);
	return err;
}

/* ---- a live session read again and again (top): only what changed since ---- */

/* One sched file as the live reader last read it. */
struct live_file {
	char *name;
	__u64 ino;
	__u64 end; /* the head its last walk read up to: where the next one starts */
	size_t id_off; /* its identity's offset in page 0, as validated */
	struct rk_thread_ident id; /* page 0's identity as read then */
	struct rk_tl_thread t;
	size_t cap_ev, cap_names;
	int seen, warned;
};

struct rk_tl_live {
	char *dir; /* the session's sched directory */
	struct live_file *files; /* sorted by ino, but for those added by the update under way */
	size_t nfiles, cap, nsorted;
	struct rk_timeline tl; /* threads[i]: files[i].t, shallow */
	size_t tl_cap;
	size_t denied_said; /* the most files said to be another user's */
};

struct rk_tl_live *rk_tl_live__new(const char *session_dir)
{
	struct rk_tl_live *lv = calloc(1, sizeof(*lv));
	size_t n = strlen(session_dir) + sizeof(RK_SCHED_DIR) + 2;

	if (!lv)
		return NULL;
	lv->dir = malloc(n);
	if (!lv->dir) {
		free(lv);
		errno = ENOMEM;
		return NULL;
	}
	snprintf(lv->dir, n, "%s/%s", session_dir, RK_SCHED_DIR);
	return lv;
}

static void live_file_free(struct live_file *f)
{
	free(f->name);
	free(f->t.ev);
	free(f->t.names);
}

void rk_tl_live__free(struct rk_tl_live *lv)
{
	size_t i;

	if (!lv)
		return;
	for (i = 0; i < lv->nfiles; i++)
		live_file_free(&lv->files[i]);
	free(lv->files);
	free(lv->tl.threads);
	free(lv->dir);
	free(lv);
}

/*
 * Page 0 of @path is as @f's last read left it: the same head and
 * identity. A read of one page (no mapping); anything amiss is a change
 * (the full open then says what).
 */
static int live_unchanged(const struct live_file *f, int dfd, const char *name)
{
	__u8 page[RK_PAGE_SIZE];
	__u64 head;
	ssize_t n;
	int fd;

	if (!f->id_off || f->id_off + sizeof(f->id) > sizeof(page))
		return 0;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = pread(fd, page, sizeof(page), 0);
	close(fd);
	if (n != (ssize_t)sizeof(page))
		return 0;
	memcpy(&head, page + offsetof(struct perf_event_mmap_page, data_head), sizeof(head));
	return head == f->end && !memcmp(page + f->id_off, &f->id, sizeof(f->id));
}

/* @f's history dropped, to be read again from the ring (its thread changed, or records were lost). */
static void live_reset(struct live_file *f)
{
	f->t.nev = 0;
	f->t.nnames = 0;
	f->t.broken = 0;
	f->end = 0;
}

static int on_sched_rec_at(const struct perf_event_header *h, __u64 pos, void *ctx)
{
	(void)pos;
	return on_sched_rec(h, ctx);
}

/* The records of @bf since @f's last walk appended to its history. Return: 0, -ENOMEM. */
static int live_walk(struct rk_tl_live *lv, struct live_file *f, const struct rk_bufile *bf)
{
	struct tl_walk w = { .tl = &lv->tl, .bf = bf, .t = &f->t };
	__u64 end = 0;
	int err, gap = 0;

	if (f->t.nev && (bf->ident->tid != f->t.id.tid || bf->ident->start_ns != f->t.id.start_ns))
		live_reset(f);
	/* A ring that lapped the last walk: its history has a hole; read what it holds. */
	for (;;) {
		w.cap_ev = f->cap_ev;
		w.cap_names = f->cap_names;
		err = rk_bufile__for_each_since(bf, f->end, on_sched_rec_at, &w, &end, &gap);
		f->cap_ev = w.cap_ev;
		f->cap_names = w.cap_names;
		if (w.err)
			return w.err;
		if (err == -ENOMEM)
			return err;
		if (!gap || !f->end)
			break;
		live_reset(f);
	}
	f->end = end;
	f->t.broken = err == -EBADMSG;
	f->t.id = *bf->ident;
	f->t.id.comm[RK_COMM_LEN - 1] = '\0';
	f->id = *bf->ident;
	f->id_off = (size_t)((const __u8 *)bf->ident - (const __u8 *)bf->base);
	w.cap_names = f->cap_names;
	if (!f->t.nnames && add_name(&w, f->t.id.comm) < 0)
		return -ENOMEM;
	f->cap_names = w.cap_names;
	return 0;
}

/* @f (named @name in the directory) read as far as it changed. Return: 0, -ENOMEM. */
static int live_read(struct rk_tl_live *lv, struct live_file *f, int dfd, const char *name,
		     struct rk_tl_live_stats *st)
{
	char path[PATH_MAX + 300];
	const char *msg = NULL;
	struct rk_bufile *bf;
	int err;

	snprintf(path, sizeof(path), "%s/%s", lv->dir, name);
	if (f->id_off && live_unchanged(f, dfd, name)) {
		st->unchanged++;
		return 0;
	}
	bf = rk_bufile__open(path, &msg);
	if (!bf) {
		/* Said once per file, not once a refresh; its history so far stays. */
		if (!f->warned && errno != EACCES && errno != ENOENT)
			rk_warn("skipping %s: %s", path,
				errno == EBADMSG && msg ? msg : strerror(errno));
		f->warned = 1;
		st->skipped++;
		st->denied += errno == EACCES;
		return 0;
	}
	st->read++;
	err = live_walk(lv, f, bf);
	rk_bufile__free(bf);
	return err;
}

static int live_cmp(const void *a, const void *b)
{
	const struct live_file *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The file of @ino named @name among the sorted ones, or NULL. */
static struct live_file *live_find(struct rk_tl_live *lv, __u64 ino, const char *name)
{
	struct live_file key = { .ino = ino }, *f;

	if (!lv->nsorted)
		return NULL;
	f = bsearch(&key, lv->files, lv->nsorted, sizeof(*f), live_cmp);
	return f && !strcmp(f->name, name) ? f : NULL;
}

/* A file not seen before, added (its history read by the caller). Return: it, or NULL. */
static struct live_file *live_add(struct rk_tl_live *lv, __u64 ino, const char *name)
{
	struct live_file *f;

	if (grow((void **)&lv->files, &lv->cap, lv->nfiles + 1, sizeof(*lv->files)))
		return NULL;
	f = &lv->files[lv->nfiles];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	if (!f->name)
		return NULL;
	f->ino = ino;
	lv->nfiles++;
	return f;
}

/* Files gone from the directory dropped, the rest sorted again, the timeline's view rebuilt. */
static int live_settle(struct rk_tl_live *lv, struct rk_tl_live_stats *st)
{
	size_t i, k = 0;

	for (i = 0; i < lv->nfiles; i++) {
		if (!lv->files[i].seen) {
			live_file_free(&lv->files[i]);
			st->gone++;
			continue;
		}
		lv->files[i].seen = 0;
		lv->files[k++] = lv->files[i];
	}
	lv->nfiles = k;
	qsort(lv->files, lv->nfiles, sizeof(*lv->files), live_cmp);
	lv->nsorted = lv->nfiles;
	if (grow((void **)&lv->tl.threads, &lv->tl_cap, lv->nfiles, sizeof(*lv->tl.threads)))
		return -ENOMEM;
	for (i = 0; i < lv->nfiles; i++)
		lv->tl.threads[i] = lv->files[i].t;
	lv->tl.nthreads = lv->nfiles;
	return 0;
}

int rk_tl_live__update(struct rk_tl_live *lv, struct rk_tl_live_stats *st)
{
	struct dirent *de;
	int err = 0;
	DIR *d;

	memset(st, 0, sizeof(*st));
	d = opendir(lv->dir);
	if (!d) {
		err = -errno;
		rk_err("cannot read %s: %s", lv->dir, strerror(errno));
		return err;
	}
	while (!err && (de = readdir(d))) {
		struct live_file *f;

		if (!buffer_name(de->d_name))
			continue;
		f = live_find(lv, de->d_ino, de->d_name);
		if (!f)
			f = live_add(lv, de->d_ino, de->d_name);
		if (!f) {
			err = -ENOMEM;
			break;
		}
		f->seen = 1;
		st->files++;
		err = live_read(lv, f, dirfd(d), de->d_name, st);
	}
	closedir(d);
	/* Other users' threads: one line for them all, again only when there are more. */
	if (st->denied > lv->denied_said)
		rk_warn("skipping %zu file%s of %s: permission denied (other users' threads: "
			"their files are readable by their users and root, docs/trust.md)",
			st->denied, st->denied == 1 ? "" : "s", lv->dir);
	if (st->denied > lv->denied_said)
		lv->denied_said = st->denied;
	if (!err)
		err = live_settle(lv, st);
	if (err == -ENOMEM)
		rk_err("out of memory reading %s", lv->dir);
	return err;
}

const struct rk_timeline *rk_tl_live__timeline(const struct rk_tl_live *lv)
{
	return &lv->tl;
}

/*
 * What no window from @t on needs: a thread's events before its last
 * switch-out at or before @t. From that switch-out on, a window's figures
 * (rk_sched_now()) are what the whole history gives: earlier runs ended
 * before it, and it sets the state and the wait anew.
 */
void rk_tl_live__forget_before(struct rk_tl_live *lv, __u64 t)
{
	size_t i, j, from;

	for (i = 0; i < lv->nfiles; i++) {
		struct rk_tl_thread *th = &lv->files[i].t;

		from = 0;
		for (j = 0; j < th->nev && th->ev[j].time <= t; j++)
			if (th->ev[j].kind == RK_TL_OUT)
				from = j;
		if (!from)
			continue;
		memmove(th->ev, th->ev + from, (th->nev - from) * sizeof(*th->ev));
		th->nev -= from;
		lv->tl.threads[i].nev = th->nev;
	}
}
