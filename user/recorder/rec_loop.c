// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rec_loop.c - the recorder's the event loop (see rec_loop.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rec_loop.h"
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include "util.h"
#include "rec_session.h"
#include "rec_sideband.h"
#include "rec_threads.h"
#include "rec_trigger.h"
#include "rec_target.h"
#include "rec_bpf.h"
#include "rec_offcpu.h"
#include "rec_evcpu.h"
/* RINGKEEPER_TEST_SIGNAL_US: a loader slower than its signals, so that a backlog builds. */
static void test_slow_signal(struct rk_rec *r)
{
	struct timespec ts = { (time_t)(r->test_signal_ns / 1000000000ull),
			       (long)(r->test_signal_ns % 1000000000ull) };

	nanosleep(&ts, NULL);
}

void rec_stop_due(struct rk_rec *r)
{
	uint64_t now = rk_now_mono_ns();
	sigset_t pending;

	/* Read by the event loop's signalfd after the intake: only looked at here. */
	if (!r->stop_ns && !sigpending(&pending) &&
	    (sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1 ||
	     sigismember(&pending, SIGHUP) == 1))
		r->stop_ns = now;
	if (r->stop_ns && now - r->stop_ns >= RK_STOP_GRACE_NS)
		r->sw.stop = 1;
}

/* One signal, in time order (a ringbuf record or a switch ring's). */
static void on_signal(void *ctx, const struct rk_signal *s)
{
	struct rk_rec *r = ctx;

	if (s->kind == RK_SIG_WAKE)
		return; /* it only woke us */
	r->st->signals++;
	/*
	 * A long intake (a backlog) publishes as it goes: stat is never older
	 * than a second; and it ends soon after a stop signal.
	 */
	if (++r->publish_turn >= RK_PUBLISH_CHECK) {
		rec_stop_due(r);
		rec_publish_due(r);
	}
	if (r->test_signal_ns)
		test_slow_signal(r);
	if (s->time_ns > r->last_sig_ns)
		r->last_sig_ns = s->time_ns;
	if (s->kind == RK_SIG_SWITCH_OUT && s->flags & RK_SIGF_NEXT_IN) {
		/* One record for both sides of a switch between two tracked tasks. */
		struct rk_signal out = *s, in = { 0 };

		out.flags &= ~RK_SIGF_NEXT_IN;
		out.next_tgid = 0;
		in.kind = RK_SIG_SWITCH_IN;
		in.cpu = s->cpu;
		in.tid = s->ptid;
		in.tgid = s->next_tgid;
		in.ptid = s->tid;
		in.time_ns = s->time_ns;
		rec_handle_signal(r, &out);
		rec_offcpu_put(r, &out);
		rec_handle_signal(r, &in);
		return;
	}
	rec_handle_signal(r, s);
	rec_offcpu_put(r, s);
}

/*
 * @s's process is crashing: samples its threads' perf rings took after the
 * signal (the dump itself) stay out of their files (rec_route).
 */
static void mark_crash(struct rk_rec *r, const struct rk_signal *s)
{
	struct rk_thread *t;

	for (t = r->all; t; t = t->all_next)
		if (t->tgid == s->tgid && !t->crash_ns)
			t->crash_ns = s->time_ns;
}

static void early_crash(void *ctx, const struct rk_signal *s)
{
	if (s->kind == RK_SIG_CRASH)
		mark_crash(ctx, s);
}

/* How long a drain waits for BPF to commit a reserved record (microseconds, normally). */
#define RK_RESERVED_WAIT_NS 200000ull

/*
 * The time up to which the perf rings can be routed now: every crash
 * stamped at or before it is known (mark_crash), so no sample its process
 * took after the crash (the dump's own) gets into a file. BPF stamps a
 * crash after reserving its record: once the ringbuf is read to its
 * producer with nothing reserved, a crash not seen is stamped after t0.
 * A record that stays reserved (it cannot, with a sane kernel) bounds the
 * drain at 0: the perf rings keep what they hold for the next tick.
 */
static __u64 crash_horizon(struct rk_rec *r)
{
	uint64_t t0 = rk_now_mono_ns();

	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* the clock before the producer's position */
	while (rk_swring_peek_pending(&r->sw, early_crash, r) < 0) {
		if (rk_now_mono_ns() - t0 > RK_RESERVED_WAIT_NS)
			return 0;
		sched_yield();
	}
	return t0;
}

/* Hand out the signals older than @horizon, in time order. */
static void intake_to(struct rk_rec *r, uint64_t horizon)
{
	rk_swring_snapshot(&r->sw, horizon);
	rk_swring_merge(&r->sw, on_signal, r);
	if (horizon > r->handed_ns)
		r->handed_ns = horizon;
	r->intakes++;
}

void rec_intake(struct rk_rec *r, int all)
{
	intake_to(r, all ? UINT64_MAX : rk_now_mono_ns());
}

/*
 * A thread -a or --cgroup adopted (BPF traces it already): its perf events
 * and, for a process new to us, its sideband (the mappings it has).
 */
static void adopted(struct rk_rec *r, struct rk_thread *t, int new_process)
{
	char msg[256];

	rec_thread_via_cgroup(t, r->o->ncgroups > 0);
	if (!r->drain)
		return;
	if (rec_evcpu_task(r, t->tid, msg, sizeof(msg)) && rk_verbose)
		rk_info("%s", msg);
	if (new_process)
		rec_synthesize(r, (pid_t)t->tgid);
}

/* A tracked task forked: the child's files, and its FORK record. */
static void on_fork(struct rk_rec *r, const struct rk_signal *s)
{
	struct rk_thread *t;
	struct {
		struct perf_event_header h;
		__u32 pid, ppid, tid, ptid;
		__u64 time;
		struct sample_id id;
	} fr = { 0 };
	struct rk_thread *parent = rec_thread_find(r, s->ptid);

	/*
	 * Its tid is live in our books: that thread ended and its end was
	 * dropped (a fork record of the same thread twice has its time).
	 */
	t = rec_thread_find(r, s->tid);
	if (t && !t->dead && SCHED_BF(t)->id.start_ns != s->time_ns)
		rec_thread_end_unseen(r, t);
	t = rec_thread_born(r, s);
	if (!t)
		return;
	/*
	 * Born off CPU: its first switch must be an in. The 6.18 host
	 * kernel sometimes runs a new thread without a sched_switch
	 * naming it (bpftrace sees the same); its first out is then
	 * counted as unpaired like any other, not passed over.
	 */
	if (!t->last_switch)
		t->last_switch = RK_SIG_SWITCH_OUT;
	if (s->flags & RK_SIGF_ADOPTED)
		adopted(r, t, !!(s->flags & RK_SIGF_NEW_PROCESS));
	else if (parent)
		rec_thread_via_cgroup(t, parent->via_cgroup);
	/*
	 * A new process runs its parent's image until it execs, and the kernel
	 * writes no MMAP for a fork: its sideband starts with the mappings it
	 * has, or its samples (and its core's) resolve to nothing.
	 */
	if (r->drain && s->tid == s->tgid && !(s->flags & RK_SIGF_ADOPTED))
		rec_synthesize(r, (pid_t)s->tgid);
	fr.h.type = PERF_RECORD_FORK;
	fr.h.size = sizeof(fr);
	fr.pid = s->tgid;
	fr.ppid = parent ? parent->tgid : 0;
	fr.tid = s->tid;
	fr.ptid = s->ptid;
	fr.time = s->time_ns;
	rec_fill_id(r, &fr.id, t, s);
	rec_put_rec(r, t, &fr, sizeof(fr));
}

/* A switch in or out: its record, the pin wish, and at a final out, the finish. */
static void on_switch(struct rk_rec *r, struct rk_thread *t, const struct rk_signal *s)
{
	struct {
		struct perf_event_header h;
		struct sample_id id;
	} sw = { 0 };

	sw.h.type = PERF_RECORD_SWITCH;
	sw.h.size = sizeof(sw);
	rec_fill_id(r, &sw.id, t, s);
	if (s->kind == RK_SIG_SWITCH_OUT) {
		sw.h.misc = PERF_RECORD_MISC_SWITCH_OUT;
		if (s->flags & RK_SIGF_PREEMPT)
			sw.h.misc |= PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
		/*
		 * Why it left (a preemption reports runnable, as sched_switch's
		 * prev_state does, and says it was one: R+, not R).
		 */
		sw.id.res = RK_SWITCH_STATE |
			    (s->flags & RK_SIGF_INVOLUNTARY ? RK_SWITCH_PREEMPTED : 0) |
			    (s->flags & RK_SIGF_PREEMPT ? 0 : s->prev_state & RK_SWITCH_STATE_MASK);
	}
	rec_put_rec(r, t, &sw, sizeof(sw));
	r->st->switches++;
	rec_trigger_switch(r, t, s);
	/*
	 * Two outs (or ins) in a row: a signal was dropped, or the
	 * kernel ran the task without a sched_switch naming it next
	 * (seen on 6.18 in perf's own sched_switch stream too).
	 * Recorded as it happened, counted so it is not silent.
	 */
	if (t->last_switch == s->kind)
		r->st->unpaired++;
	t->last_switch = s->kind;
	/* Only after its records are in the files may its buffers be unlocked. */
	if (s->kind == RK_SIG_SWITCH_IN) {
		rec_thread_pin(r, t, RK_PIN_ON, s->time_ns);
	} else {
		if ((s->flags & RK_SIGF_DEAD) && !SCHED_BF(t)->id.exit_ns)
			rec_thread_ident(r, t, NULL, 0, 1, SCHED_BF(t)->id.exit_code, s->time_ns);
		rec_defer_off(r, t, s->time_ns,
			      s->flags & RK_SIGF_PREEMPT && !(s->flags & RK_SIGF_DEAD) ?
				      RK_PIN_PREEMPTED :
				      RK_PIN_OFF,
			      s->flags & RK_SIGF_DEAD ? RK_THREAD_EXITED : 0);
	}
}

/*
 * A COMM record (as the kernel writes one for perf: at exec with
 * COMM_EXEC, at a rename without) and the name in the thread's identity.
 */
static void put_comm(struct rk_rec *r, struct rk_thread *t, const struct rk_signal *s, __u16 misc)
{
	struct {
		struct perf_event_header h;
		__u32 pid, tid;
		char comm[RK_COMM_LEN];
		struct sample_id id;
	} cr = { 0 };

	cr.h.type = PERF_RECORD_COMM;
	cr.h.misc = misc;
	cr.h.size = sizeof(cr);
	cr.pid = t->tgid;
	cr.tid = t->tid;
	memcpy(cr.comm, s->comm, sizeof(cr.comm));
	cr.comm[RK_COMM_LEN - 1] = '\0';
	rec_fill_id(r, &cr.id, t, s);
	rec_put_rec(r, t, &cr, sizeof(cr));
	rec_thread_ident(r, t, cr.comm, 0, 0, 0, 0);
}

/* An exec: the thread's access decided again, then its COMM record. */
static void on_exec(struct rk_rec *r, struct rk_thread *t, const struct rk_signal *s)
{
	t = rec_exec_recheck(r, t, s);
	rec_sideband_recheck(r, s->tgid, RK_THREAD_EXECED);
	if (!t)
		return;
	put_comm(r, t, s, PERF_RECORD_MISC_COMM_EXEC);
	if (s->ptid != s->tid) {
		/* A non-leader exec'd and took over this tid. */
		struct rk_thread *old = rec_thread_find(r, s->ptid);

		if (old && !old->dead)
			rec_defer_off(r, old, s->time_ns, RK_PIN_OFF, RK_THREAD_EXITED);
	}
}

/* A rename (prctl(PR_SET_NAME), pthread_setname_np, /proc/TID/comm). */
static void on_rename(struct rk_rec *r, struct rk_thread *t, const struct rk_signal *s)
{
	put_comm(r, t, s, 0);
	r->st->renames++;
}

/*
 * The latest names BPF held back (RK_RENAME_GAP_NS): one COMM per thread
 * every RK_RENAMES_HELD_EVERY_NS at most (@all: now, at the end), however
 * often it was renamed. Only names given before the
 * last intake's horizon are taken (a later one goes back for the next
 * drain, unless BPF put a newer one there meanwhile), and each is stamped
 * no earlier than the newest signal handed out, so a file stays in time
 * order.
 */
/*
 * @tid's held name, if BPF holds one given before @before, into its file
 * (@t: the thread, when the caller has it).
 */
static void held_rename(struct rk_rec *r, __u32 tid, struct rk_thread *t, uint64_t before)
{
	struct rk_rename_held h;
	struct rk_signal s = { 0 };

	if (r->held_fd < 0 || bpf_map_lookup_and_delete_elem(r->held_fd, &tid, &h))
		return;
	if (h.time_ns >= before) {
		bpf_map_update_elem(r->held_fd, &tid, &h, BPF_NOEXIST);
		return;
	}
	if (!t)
		t = rec_thread_find(r, tid);
	if (!t || t->dead || t->refused || t->tgid != h.tgid)
		return;
	s.kind = RK_SIG_RENAME;
	s.tid = tid;
	s.tgid = h.tgid;
	s.time_ns = h.time_ns > r->last_sig_ns ? h.time_ns : r->last_sig_ns;
	memcpy(s.comm, h.comm, sizeof(s.comm));
	on_rename(r, t, &s);
}

void rec_renames_held(struct rk_rec *r, int all)
{
	__u32 keys[256], key, *prev = NULL;
	uint64_t now = rk_now_mono_ns();
	size_t n = 0, i;

	if (r->held_fd < 0 || (!all && now - r->held_ns < RK_RENAMES_HELD_EVERY_NS))
		return;
	r->held_ns = now;
	while (n < sizeof(keys) / sizeof(keys[0]) &&
	       !bpf_map_get_next_key(r->held_fd, prev, &key)) {
		keys[n] = key;
		prev = &keys[n++];
	}
	for (i = 0; i < n; i++)
		held_rename(r, keys[i], NULL, r->handed_ns);
}

/*
 * New credentials or dumpability for a traced task: the thread is looked at
 * again, or with a dumpability change (the process's mm) every thread of
 * its process.
 */
static void on_creds(struct rk_rec *r, const struct rk_signal *s)
{
	struct rk_thread *t, *next;

	r->st->creds_changes++;
	for (t = r->all; t; t = next) {
		next = t->all_next;
		if (t->tgid != s->tgid || t->dead || t->refused ||
		    (!(s->flags & RK_SIGF_DUMPABLE) && t->tid != s->tid))
			continue;
		/* Its new real uid is the signal's (prev_state); the others' did not change. */
		rec_access_recheck(r, t, NULL, s->time_ns, RK_THREAD_CREDS,
				   t->tid == s->tid ? s->prev_state : t->uid);
	}
	rec_sideband_recheck(r, s->tgid, RK_THREAD_CREDS);
}

/*
 * A core-dumping signal about to kill a traced process: what the perf rings
 * hold of it goes into its files now, then each of its threads gets a crash
 * record (signal, time, crashing tid) and is marked crashed (signal and time,
 * wait-encoded with the core flag) and frozen, so
 * nothing after the crash overwrites the history its core will carry. The
 * core handler waits for the mark.
 */
static void on_crash(struct rk_rec *r, const struct rk_signal *s)
{
	struct {
		struct rk_crash_record c;
		struct sample_id id;
	} cr = { 0 };
	struct rk_thread *t;

	mark_crash(r, s);
	if (r->drain) {
		/* Its threads' samples up to the crash; other crashes known first. */
		__u64 bound = crash_horizon(r);

		rk_drain_all(r->drain, bound < s->time_ns ? bound : s->time_ns, rec_route, r);
	}
	cr.c.h.type = RK_RECORD_CRASH;
	cr.c.h.size = sizeof(cr);
	cr.c.crash_tid = s->tid;
	cr.c.signo = s->exit_code;
	cr.c.time = s->time_ns;
	for (t = r->all; t; t = t->all_next) {
		if (t->tgid != s->tgid || t->dead || t->frozen || t->refused)
			continue;
		cr.c.pid = t->tgid;
		cr.c.tid = t->tid;
		rec_fill_id(r, &cr.id, t, s);
		rec_put_rec(r, t, &cr, sizeof(cr));
		rec_thread_ident(r, t, NULL, RK_THREAD_CRASHED, 1, (s->exit_code & 0x7f) | 0x80,
				 s->time_ns);
		t->frozen = 1;
	}
	r->st->crashes++;
}

/*
 * --cgroup: a task moved into a traced subtree (BPF traces it already), with
 * RK_SIGF_THREADGROUP its whole process; or a traced one moved out of all of
 * them: those traced for --cgroup only are no longer traced.
 */
static void on_cgroup(struct rk_rec *r, const struct rk_signal *s)
{
	struct rk_thread *t, *next;
	unsigned int left = 0;

	if (s->kind == RK_SIG_CGROUP_IN) {
		t = rec_thread_find(r, s->tid);
		if (!t || t->dead) {
			t = rec_thread_new(r, s->tid, s->tgid, s->uid, s->comm, s->time_ns);
			if (!t)
				return;
			adopted(r, t, 1);
		}
		if (s->flags & RK_SIGF_THREADGROUP)
			rec_adopt_pid(r, (pid_t)s->tgid, 1);
		r->st->cgroup_joined++;
		return;
	}
	for (t = r->all; t; t = next) {
		struct rk_pmu_key key = { .tid = 0 };
		int k;

		next = t->all_next;
		if (t->dead || t->refused || !t->via_cgroup ||
		    (s->flags & RK_SIGF_THREADGROUP ? t->tgid != s->tgid : t->tid != s->tid))
			continue;
		key.tid = t->tid;
		rec_set_traced(r, t->tid, 0);
		for (k = 0; k < rec_nsrc(r); k++) {
			key.src = (__u32)k;
			bpf_map_delete_elem(r->pmu_fd, &key);
		}
		t->left = 1;
		rec_defer_off(r, t, s->time_ns, RK_PIN_OFF, RK_THREAD_LEFT);
		left++;
	}
	r->st->cgroup_left += left;
}

/* The wakeup record's RK_WAKEUP_CTX and irq bits from the signal's RK_SIGF_* ones. */
static __u32 wakeup_context(__u16 sigf)
{
	__u32 f = 0;

	if (!(sigf & RK_SIGF_CTX))
		return 0;
	f = RK_WAKEUP_CTX;
	if (sigf & RK_SIGF_HARDIRQ)
		f |= RK_WAKEUP_HARDIRQ;
	if (sigf & RK_SIGF_SOFTIRQ)
		f |= RK_WAKEUP_SOFTIRQ;
	if (sigf & RK_SIGF_NMI)
		f |= RK_WAKEUP_NMI;
	return f;
}

/* A wakeup of a thread we have: its record (before its switch-in, in time order). */
static void on_waking(struct rk_rec *r, struct rk_thread *t, const struct rk_signal *s)
{
	struct {
		struct rk_wakeup_record w;
		struct sample_id id;
	} wr = { 0 };

	wr.w.h.type = RK_RECORD_WAKEUP;
	wr.w.h.size = sizeof(wr);
	wr.w.waker_pid = s->next_tgid;
	wr.w.waker_tid = s->ptid;
	wr.w.target_cpu = s->prev_state;
	wr.w.flags = s->flags & RK_SIGF_WAKE_NEW ? RK_WAKEUP_NEW : 0;
	wr.w.flags |= wakeup_context(s->flags);
	/*
	 * Another user's task, in a file this thread's user reads: its ids
	 * only where that user could record sched tracepoints itself.
	 */
	if (s->flags & RK_SIGF_WAKER_OTHER && t->reader && r->paranoid > -1) {
		wr.w.waker_pid = 0;
		wr.w.waker_tid = 0;
		wr.w.flags |= RK_WAKEUP_HIDDEN;
	}
	rec_fill_id(r, &wr.id, t, s);
	rec_put_rec(r, t, &wr, sizeof(wr));
	/* A crashed process's files take nothing more (rec_put_rec counts that as after_crash). */
	if (!t->frozen)
		r->st->wakeups++;
}

/* An exit: its EXIT record; the final switch-out that follows finishes the thread. */
static void on_exit_sig(struct rk_rec *r, struct rk_thread *t, const struct rk_signal *s)
{
	struct {
		struct perf_event_header h;
		__u32 pid, ppid, tid, ptid;
		__u64 time;
		struct sample_id id;
	} er = { 0 };

	/* A name held back is its last before it died: written ahead of the exit. */
	held_rename(r, t->tid, t, s->time_ns + 1);
	er.h.type = PERF_RECORD_EXIT;
	er.h.size = sizeof(er);
	er.pid = t->tgid;
	er.tid = t->tid;
	er.ppid = er.pid;
	er.ptid = er.tid;
	er.time = s->time_ns;
	rec_fill_id(r, &er.id, t, s);
	rec_put_rec(r, t, &er, sizeof(er));
	rec_thread_ident(r, t, NULL, RK_THREAD_EXITING, 1, s->exit_code, s->time_ns);
	rec_trigger_exit(r, s);
}

void rec_handle_signal(struct rk_rec *r, const struct rk_signal *s)
{
	struct rk_thread *t = rec_thread_find(r, s->tid);

	if (s->tgid == r->self)
		return; /* ourselves (a resumed recorder, inherited from a traced parent) */
	if (t && t->refused) {
		if (rec_refused_stale(t, s))
			return; /* over a limit: not traced, already counted */
		rec_unrefuse(r, t); /* a new thread with its tid: tried again */
		t = rec_thread_find(r, s->tid);
	}
	if (s->kind == RK_SIG_FORK) {
		on_fork(r, s);
		return;
	}
	if (s->kind == RK_SIG_CRASH) {
		on_crash(r, s);
		return;
	}
	if (s->kind == RK_SIG_CREDS) {
		on_creds(r, s);
		return;
	}
	if (s->kind == RK_SIG_CGROUP_IN || s->kind == RK_SIG_CGROUP_OUT) {
		on_cgroup(r, s);
		return;
	}
	if (s->kind == RK_SIG_TRIGGER || s->kind == RK_SIG_KILL) {
		rec_trigger_signal(r, s);
		return;
	}
	if (s->kind == RK_SIG_WAKING) {
		/* Only a thread we have: a wakeup makes no file. */
		if (t && !t->dead)
			on_waking(r, t, s);
		return;
	}
	if (!t || t->dead) {
		/*
		 * Its final switch-out came first (stamped earlier: another
		 * CPU's clock read behind) and finished its files: counted.
		 */
		if (t && s->kind == RK_SIG_EXIT) {
			r->st->exits_late++;
			/*
			 * Its record is lost, not its process's end: a killed or
			 * exit trigger still fires (the 6.1 TCG guest's clock read
			 * behind; its bundle was then never written).
			 */
			rec_trigger_exit(r, s);
		}
		/* Tracked before we made its file (attach race): make it now. */
		if (s->kind != RK_SIG_SWITCH_IN && s->kind != RK_SIG_EXEC)
			return;
		/*
		 * Not a thread that left the cgroups: its switches queued before
		 * we untraced it are no new thread (one adopted again comes as
		 * a cgroup move or an adopted exec).
		 */
		if (t && t->left && !(s->flags & RK_SIGF_ADOPTED))
			return;
		t = s->kind == RK_SIG_EXEC ?
			    rec_thread_born(r, s) :
			    rec_thread_new(r, s->tid, s->tgid, s->uid, "", s->time_ns);
		if (!t)
			return;
		if (s->kind == RK_SIG_EXEC && s->flags & RK_SIGF_ADOPTED)
			adopted(r, t, 1);
	}
	switch (s->kind) {
	case RK_SIG_SWITCH_IN:
	case RK_SIG_SWITCH_OUT:
		on_switch(r, t, s);
		break;
	case RK_SIG_EXEC:
		on_exec(r, t, s);
		break;
	case RK_SIG_EXIT:
		on_exit_sig(r, t, s);
		break;
	case RK_SIG_RENAME:
		on_rename(r, t, s);
		break;
	}
}

/*
 * PERF_RECORD_AUX: the range of the CPU's AUX ring it names goes into the
 * AUX area of its thread's file (tid from sample_id: the task the AUX
 * event ran for), the record itself into the data ring.
 */
void rec_route_aux(struct rk_rec *r, const struct rk_evsel *ev, const struct perf_event_header *h,
		   __u32 pid, __u32 tid)
{
	struct rk_aux_chunk ck;
	struct rk_thread *t;
	int err;

	r->st->aux_records++;
	err = rk_drain_aux_chunk(r->drain, h, &ck);
	if (ck.flags & PERF_AUX_FLAG_TRUNCATED)
		r->st->aux_truncated++;
	if (!err && ev && ev->aux && tid != (__u32)-1) {
		t = rec_thread_find(r, tid);
		if (!t)
			t = rec_thread_new(r, tid, pid, 0, "", rk_now_mono_ns());
		if (t && !t->refused && !t->dead && !t->frozen &&
		    !rk_bufile__write_aux_rec(t->b[ev->src].bf, h, ck.p[0], ck.n[0], ck.p[1],
					      ck.n[1])) {
			r->st->aux_bytes += ck.size;
			r->st->records++;
			return;
		}
	}
	/* No ring bytes, no AUX source, no thread or no file: counted, not silent. */
	r->st->aux_dropped += ck.size;
}

/*
 * The thread a per-task event's sample goes to: every task that has the
 * events is traced (a kernel-inherited one BPF has not told us of yet gets
 * its files now). NULL: refused by a limit (counted then) or finished (lost).
 */
static struct rk_thread *task_sample(struct rk_rec *r, __u32 pid, __u32 tid)
{
	struct rk_thread *t = rec_thread_find(r, tid);

	if (t && t->refused)
		return NULL;
	if (t && t->dead) {
		r->st->lost++;
		return NULL;
	}
	if (!t) {
		/* Inherited by the kernel but not (yet) known to BPF. */
		t = rec_thread_new(r, tid, pid, 0, "", rk_now_mono_ns());
		if (!t)
			r->st->lost++;
	}
	return t;
}

/* A drained perf record: to its thread's file, or to its process's sideband. */
void rec_route(void *ctx, const struct rk_evsel *ev, const struct perf_event_header *h, __u32 pid,
	       __u32 tid)
{
	struct rk_rec *r = ctx;
	struct rk_thread *t;
	__u32 body_pid;
	__u64 time;

	r->st->perf_records++;
	if (++r->publish_turn >= RK_PUBLISH_CHECK)
		rec_publish_due(r);
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		if (!ev || (tid == (__u32)-1 && !r->evcpu)) {
			r->st->lost++;
			return;
		}
		time = rk_record_time(ev->entry.attr.sample_type, h);
		t = r->evcpu ? rec_evcpu_sample(r, pid, tid, time) : task_sample(r, pid, tid);
		if (!t)
			return;
		if (t->crash_ns && time > t->crash_ns) {
			/* Taken while its process was dumping core: after the history's end. */
			r->st->after_crash++;
			return;
		}
		rec_put_rec_src(r, t, ev->src, h, h->size);
		return;
	case PERF_RECORD_LOST: {
		__u64 n = 0;

		if (h->size >= sizeof(*h) + 16)
			memcpy(&n, (const __u8 *)h + sizeof(*h) + 8, 8);
		r->st->perf_lost += n;
		t = tid != (__u32)-1 ? rec_thread_find(r, tid) : NULL;
		if (t && !t->dead) {
			int k = ev ? ev->src : 1;

			rec_put_rec_src(r, t, k, h, h->size);
			t->b[k].bf->id.lost += n;
			rk_bufile__publish_ident(t->b[k].bf);
		}
		return;
	}
	case PERF_RECORD_AUX:
		rec_route_aux(r, ev, h, pid, tid);
		return;
	case PERF_RECORD_ITRACE_START:
		/* Which task a CPU's AUX data starts with: the thread's own file. */
		t = ev && ev->aux && tid != (__u32)-1 ? rec_thread_find(r, tid) : NULL;
		if (t && !t->dead && !t->refused)
			rec_put_rec_src(r, t, ev->src, h, h->size);
		return;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (h->size < sizeof(*h) + 4)
			return;
		/* A per-CPU event's: only those of traced tasks (per-task events see no others). */
		if (r->evcpu &&
		    !rec_evcpu_sideband_ours(
			    r, tid, ev ? rk_record_time(ev->entry.attr.sample_type, h) : 0))
			return;
		memcpy(&body_pid, (const __u8 *)h + sizeof(*h), 4);
		rec_put_sideband(r, body_pid, h);
		return;
	default:
		if (r->evcpu &&
		    !rec_evcpu_sideband_ours(
			    r, tid, ev ? rk_record_time(ev->entry.attr.sample_type, h) : 0))
			return;
		if (pid != (__u32)-1)
			rec_put_sideband(r, pid, h);
		else
			r->st->lost++;
	}
}

/*
 * Drain the per-CPU perf rings (after the BPF signals, so the threads the
 * records belong to are known), then let go of what went off CPU.
 */
void rec_drain(struct rk_rec *r)
{
	uint64_t gen;
	__u64 bound;

	if (!r->drain) {
		rec_apply_deferred(r, ++r->drain_gen);
		r->written_ns = r->handed_ns;
		return;
	}
	/*
	 * Up to a time no crash before it is unknown (crash_horizon), and no
	 * fork: the signals before it are handed out first, so a child's first
	 * samples find its thread. Before this drain's number: what they
	 * defer, this drain covers (timed before it).
	 */
	bound = crash_horizon(r);
	if (bound)
		intake_to(r, bound);
	gen = ++r->drain_gen;
	rk_drain_all(r->drain, bound, rec_route, r);
	/* Signals of threads born while we drained. */
	rec_intake(r, 0);
	/* With no bound, their last records are still in the rings. */
	if (bound) {
		rec_apply_deferred(r, gen);
		r->written_ns = bound; /* the signals past it, but not the perf rings' */
	}
}

/* SIGUSR2 (from `ringkeeper snapshot --trigger`, or an operator's kill): a snapshot now. */
static void operator_trigger(struct rk_rec *r, __u32 from)
{
	char why[96];

	if (!(r->st->trigger_flags & RK_TRIGGER_F_SIGNAL)) {
		rk_warn("SIGUSR2 from pid %u: no snapshot taken (record --trigger signal takes one)",
			from);
		return;
	}
	/* Everything up to now first: the instant is this one. */
	rec_intake(r, 0);
	snprintf(why, sizeof(why), "operator: SIGUSR2 from pid %u", from);
	rec_trigger_fire(r, RK_TRIG_OPERATOR, 0, 0, rk_now_mono_ns(), 0, 0, from, 0, 0, why);
}

/* What woke the loop: epoll's data holds the kind, and a ring's fd above it. */
enum { EV_SIGNALS, EV_SIGNALFD, EV_TIMER, EV_TARGET, EV_RING };

static void watch(int ep, int fd, __u32 kind, __u32 flags)
{
	struct epoll_event ev = { .events = EPOLLIN | flags,
				  .data.u64 = (__u64)(__u32)fd << 32 | kind };

	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/*
 * A CPU ring's owner is the first event opened on that CPU, a thread's.
 * Once that thread and every event inherited from it have exited, the
 * kernel's perf_poll() says EPOLLHUP for good (is_event_hup()), and a
 * level-triggered epoll returns at once, every time: the SCHED_FIFO loop
 * spun on a full CPU for as long as the process lived on (1.55 s of CPU in
 * a 1.6 s run whose main thread had exited), and on PREEMPT_RT it starved
 * that CPU's RCU thread, so the exiting threads, waiting in perf's free
 * path for a grace period, never finished: the RT guest's crash test hung.
 * The ring leaves the epoll set; the tick drains it, as it drains every ring.
 */
static void ring_hung_up(int ep, const struct epoll_event *e)
{
	int fd = (int)(e->data.u64 >> 32);

	epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
	if (rk_verbose)
		rk_info("a cpu ring's owner has exited: its ring is drained at each tick");
}

int rec_event_loop(struct rk_rec *r, int sfd, int tfd, int pidfd)
{
	struct epoll_event evs[4];
	uint64_t deadline = r->o->duration_ns ? rk_now_mono_ns() + r->o->duration_ns : 0;
	unsigned int ticks = 0;
	int ep, err = 0;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		err = -errno;
		rk_err("cannot start the event loop: epoll_create1: %s", strerror(errno));
		return err;
	}
	/*
	 * The ringbuf's map polls readable while it holds data, a record
	 * reserved and not yet committed included, which the intake must wait
	 * for: edge-triggered, so the loop sleeps until BPF's next wakeup or
	 * the tick. Level-triggered, a program preempted between reserve and
	 * commit (BPF programs are preemptible on PREEMPT_RT, pinned to their
	 * CPU) would keep the SCHED_FIFO loop spinning on that CPU, where the
	 * program's task cannot run to commit.
	 */
	watch(ep, r->sig_fd, EV_SIGNALS, EPOLLET);
	watch(ep, sfd, EV_SIGNALFD, 0);
	watch(ep, tfd, EV_TIMER, 0);
	if (pidfd >= 0)
		watch(ep, pidfd, EV_TARGET, 0);
	if (r->drain) {
		int c;

		/* The per-CPU rings wake us at their watermark (half full). */
		for (c = 0; c < rk_drain_ncpus(r->drain); c++)
			if (rk_drain_ring_fd(r->drain, c) >= 0)
				watch(ep, rk_drain_ring_fd(r->drain, c), EV_RING, 0);
	}
	for (;;) {
		int n = epoll_wait(ep, evs, 4, -1), i, stop = 0;
		uint64_t now;

		if (n < 0 && errno != EINTR) {
			err = -errno;
			rk_err("epoll_wait: %s", strerror(errno));
			break;
		}
		for (i = 0; i < n; i++) {
			uint64_t exp;
			struct signalfd_siginfo si;

			switch ((__u32)evs[i].data.u64) {
			case EV_SIGNALFD:
				if (read(sfd, &si, sizeof(si)) != sizeof(si) ||
				    si.ssi_signo == SIGCHLD)
					break;
				if (si.ssi_signo == SIGUSR2) {
					operator_trigger(r, si.ssi_pid);
				} else {
					stop = 1;
					/* The intakes from now on have RK_STOP_GRACE_NS. */
					if (!r->stop_ns)
						r->stop_ns = rk_now_mono_ns();
				}
				break;
			case EV_TIMER:
				if (read(tfd, &exp, sizeof(exp)) != sizeof(exp))
					exp = 0;
				break;
			case EV_TARGET:
				if (!r->target_exited) {
					r->target_exited = 1;
					r->drain_deadline = rk_now_mono_ns() + RK_DRAIN_NS;
					epoll_ctl(ep, EPOLL_CTL_DEL, pidfd, NULL);
				}
				break;
			case EV_RING:
				if (evs[i].events & (EPOLLHUP | EPOLLERR))
					ring_hung_up(ep, &evs[i]);
				break;
			}
		}
		/* Everything, including what woke nobody (NO_WAKEUP, the switch rings). */
		rec_intake(r, 0);
		rec_drain(r);
		/*
		 * What a snapshot waits for, at once (one store into the mapped
		 * stat file): it waits a tick, not a publication (250 ms).
		 * Release: the records before it are in their files first.
		 */
		__atomic_store_n(&r->st->handed_ns, r->written_ns ? r->written_ns : 1,
				 __ATOMIC_RELEASE);
		rec_renames_held(r, 0);
		now = rk_now_mono_ns();
		rk_pin_tick(r->pool, now);
		rec_sample_vmlck(r);
		rec_trigger_tick(r, now);
		if (now - r->reconcile_ns >= RK_RECONCILE_NS)
			rec_reconcile(r, now);
		/*
		 * The counters every 20 ticks, and by the clock: a turn may take
		 * far longer than a tick under a backlog (20 turns took minutes).
		 */
		if (++ticks % 20 == 0) {
			rec_retention_tick(r, now);
			rec_sideband_reap(r, now);
			rec_publish(r);
			rec_reclaim(r);
		} else {
			rec_publish_due(r);
		}
		if (stop)
			break;
		if (deadline && now >= deadline)
			break;
		if (r->target_exited &&
		    (now >= r->drain_deadline || !rec_live_threads_of(r, (__u32)r->target)))
			break;
	}
	close(ep);
	return err;
}
