// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pfsched.c - the Perfetto trace's scheduler view and process tree (see
 * pfsched.h).
 *
 * Per CPU, the traced threads' switches as ftrace sched_switch events (a
 * switch-out and a switch-in at the same time on a CPU are one switch
 * between two traced threads; otherwise the other side is not known and is
 * written as the CPU's idle task, which Perfetto does not draw: a CPU
 * track shows the traced threads' runs only) and their wakeups as
 * sched_waking on the waker's CPU, from which Perfetto derives thread
 * states (Running, Runnable, Sleeping, ...) and draws who woke whom. A new
 * thread's first wakeup too: the kernel's event for it is
 * sched_wakeup_new, which Perfetto's importer keeps as a raw event only,
 * so written as that the thread's first wait would not be Runnable
 * (perf.data keeps sched_wakeup_new, which perf sched reads). A SystemInfo
 * packet names the kernel, which Perfetto needs to read prev_state.
 *
 * A wakeup from an interrupt: Perfetto's thread_state.irq_context (the UI's
 * "woken from interrupt") comes from a sched_waking's common_flags, which
 * its importer reads from the compact encoding only (FtraceEvent's own
 * common_flags field is not read for sched_waking, v52). So those are
 * written compact, with the kernel's TRACE_FLAG_HARDIRQ / _SOFTIRQ bits;
 * the importer takes their waker from the CPU's stream (what our last
 * switch there brought in: the interrupted task where it is traced, else
 * idle). A task's wakeups stay full events, naming their waker.
 *
 * A dead thread's end: after its final switch-out, sched_process_free
 * (1 ns later: the kernel frees it after an RCU grace period; we have no
 * record of when; a group leader after its process's last thread, as the
 * kernel does), which ends the thread and, for a leader, its process, in
 * Perfetto's model: a later thread of the same tid is another thread.
 * Perfetto v52 keeps the final state (X) open to the trace's end all the
 * same: its importer closes a thread state only at that thread's next
 * event (thread_state_tracker.cc), and a free is none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include "pfsched.h"

/* TracePacket.ftrace_events (FtraceEventBundle), FtraceEvent and its sched events; SystemInfo */
#define TP_FTRACE_EVENTS 1
#define TP_SYSTEM_INFO 45
#define SI_UTSNAME 1
#define UTS_SYSNAME 1
#define UTS_VERSION 2
#define UTS_RELEASE 3
#define UTS_MACHINE 4
#define FB_CPU 1
#define FB_EVENT 2
#define FE_TIMESTAMP 1
#define FE_PID 2
#define FE_SCHED_SWITCH 4
#define FE_SCHED_WAKING 20
#define SS_PREV_COMM 1
#define SS_PREV_PID 2
#define SS_PREV_PRIO 3
#define SS_PREV_STATE 4
#define SS_NEXT_COMM 5
#define SS_NEXT_PID 6
#define SS_NEXT_PRIO 7
#define SW_COMM 1
#define SW_PID 2
#define SW_PRIO 3
#define SW_SUCCESS 4
#define SW_TARGET_CPU 5
#define FE_SCHED_PROCESS_FREE 240
#define SPF_COMM 1
#define SPF_PID 2
#define SPF_PRIO 3
/* FtraceEventBundle.compact_sched: CompactSched's sched_waking arrays (packed) */
#define FB_COMPACT_SCHED 4
#define CS_INTERN_TABLE 5
#define CS_WAKING_TIMESTAMP 7
#define CS_WAKING_PID 8
#define CS_WAKING_TARGET_CPU 9
#define CS_WAKING_PRIO 10
#define CS_WAKING_COMM_INDEX 11
#define CS_WAKING_COMMON_FLAGS 12
/* TracePacket.process_tree: ProcessTree.Process */
#define TP_PROCESS_TREE 2
#define PT_PROCESSES 1
#define PTP_PID 1
#define PTP_PPID 2
#define PTP_CMDLINE 3
#define PTP_CMDLINE_IS_COMM 9
/* Ftrace events per bundle packet: small packets, as traced writes them. */
#define RK_FTRACE_BUNDLE 512

/* Packed CompactSched.waking_* arrays of the bundle being written: written when it closes. */
struct compact {
	struct rk_buf ts, pid, tcpu, prio, comm, flags, names;
	__u32 n;
	__u64 last;
};

/* A CPU's bundle, open in o->pkt (@n events so far: 0, none open). */
struct bundle {
	__u32 cpu;
	size_t n;
	struct compact c;
};

struct fev {
	struct rk_cpu_ev c; /* first: sorted and paired as a CPU's stream */
	size_t thread, ev; /* the timeline's thread and its event */
};

static void system_info(struct pf_out *o)
{
	struct utsname u;
	size_t si, un;

	if (uname(&u))
		return;
	pkt_start(o, 0, 0);
	si = begin(&o->pkt, TP_SYSTEM_INFO);
	un = begin(&o->pkt, SI_UTSNAME);
	f_str(&o->pkt, UTS_SYSNAME, u.sysname);
	f_str(&o->pkt, UTS_VERSION, u.version);
	f_str(&o->pkt, UTS_RELEASE, u.release);
	f_str(&o->pkt, UTS_MACHINE, u.machine);
	end(&o->pkt, un);
	end(&o->pkt, si);
	pkt_flush(o);
}

static void idle_comm(char *buf, size_t n, __u32 cpu)
{
	snprintf(buf, n, "swapper/%u", cpu);
}

/* One switch on @cpu at @t: @prev (NULL: idle) leaving in @state, @next (NULL: idle) coming. */
static void ft_switch(struct rk_buf *b, __u64 t, __u32 cpu, const struct rk_tl_thread *prev,
		      __u64 state, const struct rk_tl_thread *next)
{
	char idle[32];
	size_t ev, ss;

	idle_comm(idle, sizeof(idle), cpu);
	ev = begin(b, FB_EVENT);
	f_u64(b, FE_TIMESTAMP, t);
	f_u64(b, FE_PID, prev ? prev->id.tid : 0);
	ss = begin(b, FE_SCHED_SWITCH);
	f_str(b, SS_PREV_COMM, prev ? prev->id.comm : idle);
	f_u64(b, SS_PREV_PID, prev ? prev->id.tid : 0);
	f_u64(b, SS_PREV_PRIO, 120);
	f_u64(b, SS_PREV_STATE, prev ? state : 0);
	f_str(b, SS_NEXT_COMM, next ? next->id.comm : idle);
	f_u64(b, SS_NEXT_PID, next ? next->id.tid : 0);
	f_u64(b, SS_NEXT_PRIO, 120);
	end(b, ss);
	end(b, ev);
}

static void ft_waking(struct rk_buf *b, __u64 t, const struct rk_tl_thread *woken,
		      const struct rk_tl_event *e)
{
	size_t ev, w;

	ev = begin(b, FB_EVENT);
	f_u64(b, FE_TIMESTAMP, t);
	f_u64(b, FE_PID, e->arg);
	w = begin(b, FE_SCHED_WAKING);
	f_str(b, SW_COMM, woken->id.comm);
	f_u64(b, SW_PID, woken->id.tid);
	f_u64(b, SW_PRIO, 120);
	f_u64(b, SW_SUCCESS, 1);
	f_u64(b, SW_TARGET_CPU, e->arg2 & RK_TL_WAKEUP_CPU);
	end(b, w);
	end(b, ev);
}

/* A dead thread's end, as the kernel's sched_process_free reports it (freed by another task). */
static void ft_free(struct rk_buf *b, __u64 t, const struct rk_tl_thread *th)
{
	size_t ev, fr;

	ev = begin(b, FB_EVENT);
	f_u64(b, FE_TIMESTAMP, t);
	f_u64(b, FE_PID, 0);
	fr = begin(b, FE_SCHED_PROCESS_FREE);
	f_str(b, SPF_COMM, th->id.comm);
	f_u64(b, SPF_PID, th->id.tid);
	f_u64(b, SPF_PRIO, 120);
	end(b, fr);
	end(b, ev);
}

/* A wakeup from an interrupt, into the bundle's compact arrays (its comm interned as its own). */
static void compact_waking(struct compact *c, __u64 t, const struct rk_tl_thread *woken,
			   const struct rk_tl_event *e)
{
	varint(&c->ts, c->n ? t - c->last : t); /* the first absolute, then deltas */
	varint(&c->pid, woken->id.tid);
	varint(&c->tcpu, e->arg2 & RK_TL_WAKEUP_CPU);
	varint(&c->prio, 120);
	varint(&c->comm, c->n);
	varint(&c->flags, rk_tl_wakeup_context(e) & RK_WAKEUP_IRQ_MASK);
	f_str(&c->names, CS_INTERN_TABLE, woken->id.comm);
	c->last = t;
	c->n++;
}

/* The compact arrays into the open bundle (if any), emptied for the next. */
static void compact_flush(struct rk_buf *b, struct compact *c)
{
	size_t cs;

	if (c->names.err || c->ts.err || c->pid.err || c->tcpu.err || c->prio.err || c->comm.err ||
	    c->flags.err)
		b->err = b->err ? b->err : -ENOMEM;
	if (c->n) {
		cs = begin(b, FB_COMPACT_SCHED);
		rk_buf_put(b, c->names.p, c->names.len);
		f_bytes(b, CS_WAKING_TIMESTAMP, c->ts.p, c->ts.len);
		f_bytes(b, CS_WAKING_PID, c->pid.p, c->pid.len);
		f_bytes(b, CS_WAKING_TARGET_CPU, c->tcpu.p, c->tcpu.len);
		f_bytes(b, CS_WAKING_PRIO, c->prio.p, c->prio.len);
		f_bytes(b, CS_WAKING_COMM_INDEX, c->comm.p, c->comm.len);
		f_bytes(b, CS_WAKING_COMMON_FLAGS, c->flags.p, c->flags.len);
		end(b, cs);
	}
	c->names.len = c->ts.len = c->pid.len = c->tcpu.len = c->prio.len = c->comm.len =
		c->flags.len = 0;
	c->n = 0;
}

static void compact_free(struct compact *c)
{
	free(c->names.p);
	free(c->ts.p);
	free(c->pid.p);
	free(c->tcpu.p);
	free(c->prio.p);
	free(c->comm.p);
	free(c->flags.p);
}

/* The open bundle out (its compact events last), if there is one. */
static void bundle_close(struct pf_out *o, struct bundle *bd)
{
	if (!bd->n)
		return;
	compact_flush(&o->pkt, &bd->c);
	end(&o->pkt, o->pkt_bundle);
	pkt_flush(o);
	bd->n = 0;
}

/* A bundle for @cpu open, the current one closed if it is another CPU's or full. */
static void bundle_for(struct pf_out *o, struct bundle *bd, __u32 cpu)
{
	if (bd->n && bd->cpu == cpu && bd->n < RK_FTRACE_BUNDLE)
		return;
	bundle_close(o, bd);
	pkt_start(o, 0, 0);
	o->pkt_bundle = begin(&o->pkt, TP_FTRACE_EVENTS);
	f_u64(&o->pkt, FB_CPU, cpu);
	bd->cpu = cpu;
}

static int fev_add(struct fev **v, size_t *n, size_t *cap, __u64 time, __u32 cpu, __u32 kind,
		   __u32 tid, size_t thread, size_t ev)
{
	struct fev *f;

	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 4096;
		struct fev *nv = realloc(*v, c * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = c;
	}
	f = &(*v)[(*n)++];
	f->c.time = time;
	f->c.cpu = cpu;
	f->c.kind = kind;
	f->c.tid = tid;
	f->thread = thread;
	f->ev = ev;
	return 0;
}

/* A thread's final switch-out (its time and CPU; time 0: none, it did not end here). */
struct death {
	__u32 tgid;
	__u32 cpu;
	__u64 time;
	size_t thread;
};

static int cmp_death(const void *a, const void *b)
{
	const struct death *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

/*
 * Each dead thread's end, 1 ns after its final switch-out; a leader's
 * after its whole process's (the kernel frees a group leader last: ended
 * first, Perfetto would end its process under the threads still running),
 * and none while a thread of its process did not die here.
 */
static int add_frees(const struct rk_timeline *tl, struct fev **v, size_t *n, size_t *cap)
{
	struct death *d = calloc(tl->nthreads + 1, sizeof(*d));
	size_t t, i, j;
	int err = 0;

	if (!d)
		return -ENOMEM;
	for (t = 0; t < tl->nthreads; t++) {
		const struct rk_tl_thread *th = &tl->threads[t];
		const struct rk_tl_event *e = th->nev ? &th->ev[th->nev - 1] : NULL;

		d[t] = (struct death){ .tgid = th->id.tgid, .thread = t };
		if (e && e->kind == RK_TL_OUT && rk_offcpu_of(e->arg) == RK_OFF_DEAD) {
			d[t].time = e->time;
			d[t].cpu = e->cpu;
		}
	}
	qsort(d, tl->nthreads, sizeof(*d), cmp_death);
	for (i = 0; i < tl->nthreads && !err; i = j) {
		size_t leader = ~(size_t)0;
		int all = 1;

		for (j = i; j < tl->nthreads && d[j].tgid == d[i].tgid && !err; j++) {
			all &= d[j].time != 0;
			if (tl->threads[d[j].thread].id.tid == d[j].tgid)
				leader = j;
			else if (d[j].time)
				err = fev_add(v, n, cap, d[j].time + 1, d[j].cpu, RK_CPU_FREE,
					      tl->threads[d[j].thread].id.tid, d[j].thread, 0);
		}
		/* The last death of the process is d[j - 1]'s (sorted by time). */
		if (!err && leader != ~(size_t)0 && all)
			err = fev_add(v, n, cap, d[j - 1].time + 2, d[j - 1].cpu, RK_CPU_FREE,
				      d[leader].tgid, d[leader].thread, 0);
	}
	free(d);
	return err;
}

/* Every switch and wakeup of @tl's threads, and each dead thread's end, unsorted. */
static int collect(const struct rk_timeline *tl, struct fev **v, size_t *n)
{
	size_t cap = 0, t, k;
	int err = 0;

	for (t = 0; t < tl->nthreads && !err; t++) {
		const struct rk_tl_thread *th = &tl->threads[t];

		for (k = 0; k < th->nev && !err; k++) {
			const struct rk_tl_event *e = &th->ev[k];
			__u32 kind = e->kind == RK_TL_OUT ? RK_CPU_OUT :
				     e->kind == RK_TL_IN  ? RK_CPU_IN :
							    RK_CPU_WAKE;

			if (e->kind == RK_TL_IN || e->kind == RK_TL_OUT || e->kind == RK_TL_WAKEUP)
				err = fev_add(v, n, &cap, e->time, e->cpu, kind, th->id.tid, t, k);
		}
	}
	return err ? err : add_frees(tl, v, n, &cap);
}

/* What the CPU's stream has on it, as written so far. */
struct cpu_state {
	const struct rk_tl_thread *cur; /* NULL: idle */
	int known; /* a switch was written on this CPU */
};

/* A wakeup: compact with its irq flags where one made it (and the CPU's stream says who ran). */
static void write_waking(struct pf_out *o, struct bundle *bd, const struct cpu_state *cs, __u64 t,
			 const struct rk_tl_thread *th, const struct rk_tl_event *e)
{
	if (rk_tl_wakeup_context(e) & RK_WAKEUP_IRQ_MASK) {
		/* Before the CPU's first switch Perfetto would drop it (no waker): a full event. */
		if (cs->known) {
			compact_waking(&bd->c, t, th, e);
			o->st->irq_wakeups++;
			o->st->wakeups++;
			return;
		}
		o->st->irq_unmarked++;
	}
	ft_waking(&o->pkt, t, th, e);
	o->st->wakeups++;
}

/* Sorted event @i of @v (and its pair) into the CPU's bundle. Return: how many more it took. */
static size_t write_event(struct pf_out *o, const struct rk_timeline *tl, struct bundle *bd,
			  struct cpu_state *cs, const struct fev *v, size_t n, size_t i,
			  __u64 boot_off)
{
	const struct fev *f = &v[i];
	const struct rk_tl_thread *th = &tl->threads[f->thread];
	const struct rk_tl_event *e = &th->ev[f->ev];
	const struct rk_tl_thread *prev = f->c.kind == RK_CPU_OUT ? th : NULL;
	__u64 t = f->c.time + boot_off;
	int pair;

	/*
	 * Who leaves is not who the CPU's last switch brought in: the kernel
	 * reported no sched_switch for one side (the files' "unpaired"
	 * switches: two outs, or two ins, in a row). Perfetto counts that as
	 * an import error; the missing switch is written at this time (a run,
	 * or an idle time, of no length), counted.
	 */
	if ((f->c.kind == RK_CPU_OUT || f->c.kind == RK_CPU_IN) && cs->known && cs->cur != prev) {
		ft_switch(&o->pkt, t, f->c.cpu, cs->cur, 0, prev);
		o->st->switches_added++;
		bd->n++;
	}
	bd->n++;
	switch (f->c.kind) {
	case RK_CPU_WAKE:
		write_waking(o, bd, cs, t, th, e);
		return 0;
	case RK_CPU_FREE:
		ft_free(&o->pkt, t, th);
		o->st->frees++;
		return 0;
	case RK_CPU_OUT:
		pair = rk_cpu_ev_pairs(&f->c, i + 1 < n ? &v[i + 1].c : NULL);
		ft_switch(&o->pkt, t, f->c.cpu, th, rk_offcpu_report(e->arg),
			  pair ? &tl->threads[v[i + 1].thread] : NULL);
		cs->cur = pair ? &tl->threads[v[i + 1].thread] : NULL;
		break;
	default:
		pair = 0;
		ft_switch(&o->pkt, t, f->c.cpu, NULL, 0, th);
		cs->cur = th;
	}
	o->st->switches++;
	cs->known = 1;
	return (size_t)pair;
}

int rk_pf_sched(struct pf_out *o, const struct rk_timeline *tl, __u64 boot_off)
{
	struct bundle bd;
	struct cpu_state cs = { 0 };
	struct fev *v = NULL;
	size_t n = 0, i;
	int err;

	/* Step 1: every CPU's events, in its order. */
	err = collect(tl, &v, &n);
	if (err || !n) {
		free(v);
		return err;
	}
	qsort(v, n, sizeof(*v), rk_cpu_ev_cmp);
	/* Step 2: per CPU, in bundles. */
	memset(&bd, 0, sizeof(bd));
	system_info(o);
	for (i = 0; i < n && !o->err; i++) {
		/* What ran first on a CPU is taken from its first switch. */
		if (!i || v[i - 1].c.cpu != v[i].c.cpu)
			memset(&cs, 0, sizeof(cs));
		bundle_for(o, &bd, v[i].c.cpu);
		i += write_event(o, tl, &bd, &cs, v, n, i, boot_off);
	}
	bundle_close(o, &bd);
	compact_free(&bd.c);
	free(v);
	return o->err;
}

const char *rk_pf_process_name(const struct rk_timeline *tl, size_t first)
{
	__u32 pid = tl->threads[first].id.tgid;
	size_t i;

	for (i = 0; i < tl->nthreads; i++)
		if (tl->threads[i].id.tid == pid)
			return tl->threads[i].id.comm;
	return tl->threads[first].id.comm;
}

void rk_pf_process_tree(struct pf_out *o, const struct rk_timeline *tl)
{
	size_t i, pt, p;

	for (i = 0; i < tl->nthreads && !o->err; i++) {
		const struct rk_tl_thread *t = &tl->threads[i];

		/* A leader's history begins with its FORK where it was born traced. */
		if (t->id.tid != t->id.tgid || !t->nev || t->ev[0].kind != RK_TL_FORK ||
		    !t->ev[0].arg2 || t->ev[0].arg2 == t->id.tgid)
			continue;
		pkt_start(o, t->ev[0].time, 0);
		pt = begin(&o->pkt, TP_PROCESS_TREE);
		p = begin(&o->pkt, PT_PROCESSES);
		f_u64(&o->pkt, PTP_PID, t->id.tgid);
		f_u64(&o->pkt, PTP_PPID, t->ev[0].arg2);
		/* Perfetto skips a process without a cmdline; the files have its name only. */
		f_str(&o->pkt, PTP_CMDLINE, rk_pf_process_name(tl, i));
		f_u64(&o->pkt, PTP_CMDLINE_IS_COMM, 1);
		end(&o->pkt, p);
		end(&o->pkt, pt);
		pkt_flush(o);
		o->st->processes_parented++;
	}
}
