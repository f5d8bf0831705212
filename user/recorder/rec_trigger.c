// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rec_trigger.c - record --trigger: a trigger's record in the histories it
 * concerns, and its snapshot bundle, written by a thread of its own (see
 * rec_trigger.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bundle.h"
#include "rec_src.h"
#include "rec_threads.h"
#include "rec_trigger.h"
#include "retain.h"
#include "util.h"

/* Snapshots waiting for the loop's intake to pass their instant, or for the writer. */
#define RK_TRIG_QUEUE 16
/* A process that ended: its snapshot waits for its last thread's final switch, this long at most. */
#define RK_TRIG_EXIT_WAIT_NS 2000000000ull
/* The blocked-thread watchdog looks this often. */
#define RK_TRIG_WATCH_NS 100000000ull

struct req {
	__u32 kind, pid, uid, seq;
	__u64 t; /* the cut: trigger + --snapshot-after */
	uint64_t gen; /* the loop's drain generation that must have passed */
	uint64_t deadline; /* a process's end: wait for its last thread until then */
	char why[200];
};

struct rk_trig {
	const struct rk_trigger_opts *o;
	struct rk_rec *r;
	int dir; /* --snapshot-dir, open */
	uint64_t last_fire, last_watch;
	__u32 seq; /* snapshots asked for: each bundle's name has its number */
	/* Waiting for the loop (the loop's own). */
	struct req wait[RK_TRIG_QUEUE];
	int nwait;
	/* Handed to the writer (under lock). */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct req todo[RK_TRIG_QUEUE];
	int ntodo, stop, started;
	pthread_t writer;
	/* A process whose SIGKILL's sender we saw, for its end's trigger. */
	struct {
		__u32 pid, by_pid, by_tid, si_code;
		int other; /* the sender is another user's (RK_SIGF_WAKER_OTHER) */
		char comm[RK_COMM_LEN];
	} killed[8];
	int nkilled;
};

static const char *const kind_names[] = { "", "operator", "delay", "blocked", "killed", "exit" };

static int armed(const struct rk_trigger_opts *o)
{
	return o->signal || o->delay_ns || o->blocked_ns || o->killed || o->exit_nonzero;
}

/* One snapshot: the bundle, the session's list of them, retention. */
static void write_one(struct rk_trig *g, const struct req *q)
{
	struct rk_rec *r = g->r;
	struct rk_bundle_opts bo;
	struct rk_bundle_stats bs = { 0 };
	unsigned long long removed = 0;
	char name[512], path[PATH_MAX + 600], prefix[200];
	size_t gone;
	FILE *f;
	int err, fd;

	/* T, and a sequence: two triggers of one watchdog pass share their instant. */
	snprintf(name, sizeof(name), "%s.%llu.%09llu.%u.%s.u%u.rkb", r->session,
		 (unsigned long long)(q->t / 1000000000ull),
		 (unsigned long long)(q->t % 1000000000ull), q->seq, kind_names[q->kind], q->uid);
	snprintf(path, sizeof(path), "%s/%s", g->o->dir, name);
	rk_bundle_opts_init(&bo);
	bo.from_ns = g->o->window_ns && q->t > g->o->window_ns ? q->t - g->o->window_ns : 0;
	/* --snapshot-max-size holds for each bundle too, not only for all of them. */
	bo.max_bytes = g->o->max_bytes;
	err = rk_bundle_write(r->dir, q->t, q->why, path, &bo, &bs);
	if (err == -EFBIG) {
		__atomic_add_fetch(&r->st->snapshot_errors, 1, __ATOMIC_RELAXED);
		rk_warn("trigger (%s): no snapshot: not even one buffer fits --snapshot-max-size "
			"(%llu bytes): raise it",
			q->why, (unsigned long long)g->o->max_bytes);
		return;
	}
	if (err) {
		__atomic_add_fetch(&r->st->snapshot_errors, 1, __ATOMIC_RELAXED);
		rk_warn("trigger (%s): cannot write the snapshot %s: %s", q->why, path,
			strerror(-err));
		return;
	}
	__atomic_add_fetch(&r->st->snapshots, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&r->st->snapshot_bytes, bs.bytes, __ATOMIC_RELAXED);
	if (bs.left_out || bs.trimmed)
		rk_info("trigger (%s): snapshot %s trimmed to its limits: %zu notes or files left "
			"out (--snapshot-max-size %llu), %zu symbol tables trimmed; the bundle "
			"says which",
			q->why, name, bs.left_out, (unsigned long long)g->o->max_bytes, bs.trimmed);
	snprintf(prefix, sizeof(prefix), "%s.", r->session);
	gone = rk_retain_fair(g->dir, prefix, ".rkb", g->o->max_files, g->o->max_bytes, &removed);
	__atomic_add_fetch(&r->st->snapshots_removed, gone, __ATOMIC_RELAXED);
	/* The session's list: which bundle, when, why (`snapshot --trigger` prints the last). */
	snprintf(path, sizeof(path), "%s/%s", r->dir, RK_SNAPSHOTS_FILE);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	f = fd >= 0 ? fdopen(fd, "a") : NULL;
	if (f) {
		fprintf(f, "time %llu kind %s file %s/%s reason %s\n", (unsigned long long)q->t,
			kind_names[q->kind], g->o->dir, name, q->why);
		fclose(f);
	} else if (fd >= 0) {
		close(fd);
	}
}

/* The writer: below the loop's priority, so a bundle never holds the recording up. */
static void *writer(void *arg)
{
	struct rk_trig *g = arg;
	struct sched_param sp = { 0 };

	pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
	setpriority(PRIO_PROCESS, 0, 10);
	pthread_mutex_lock(&g->lock);
	for (;;) {
		struct req q;

		while (!g->ntodo && !g->stop)
			pthread_cond_wait(&g->cond, &g->lock);
		if (!g->ntodo)
			break;
		q = g->todo[0];
		memmove(g->todo, g->todo + 1, (size_t)--g->ntodo * sizeof(q));
		pthread_mutex_unlock(&g->lock);
		write_one(g, &q);
		pthread_mutex_lock(&g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

/* Is the directory at @fd root's and writable by root only? 0 if so. */
static int not_root_only(int fd)
{
	struct stat st;

	return fstat(fd, &st) || st.st_uid != 0 || st.st_mode & (S_IWGRP | S_IWOTH);
}

int rec_trigger_start(struct rk_rec *r)
{
	const struct rk_trigger_opts *o = &r->o->trig;
	struct rk_trig *g;
	int err;

	if (!armed(o))
		return 0;
	if (mkdir(o->dir, 0700) && errno != EEXIST) {
		err = -errno;
		rk_err("cannot create --snapshot-dir %s: %s%s", o->dir, strerror(errno),
		       errno == ENOENT ? " (its parent does not exist: create it first)" : "");
		return err;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->o = o;
	g->r = r;
	/* Our own directory: root's, not a link, not writable by others (the bundles are root's). */
	g->dir = open(o->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (g->dir < 0 || not_root_only(g->dir)) {
		err = g->dir < 0 ? -errno : -EPERM;
		rk_err("refusing --snapshot-dir %s: %s", o->dir,
		       g->dir < 0 ? strerror(errno) :
				    "it must be a directory of root's, writable by root only");
		if (g->dir >= 0)
			close(g->dir);
		free(g);
		return err;
	}
	(void)rk_mutex_init_pi(&g->lock);
	pthread_cond_init(&g->cond, NULL);
	err = -pthread_create(&g->writer, NULL, writer, g);
	if (err) {
		rk_err("cannot start the snapshot writer: %s", strerror(-err));
		close(g->dir);
		free(g);
		return err;
	}
	g->started = 1;
	r->trig = g;
	r->st->trigger_flags =
		(o->signal ? RK_TRIGGER_F_SIGNAL : 0) | (o->delay_ns ? RK_TRIGGER_F_DELAY : 0) |
		(o->blocked_ns ? RK_TRIGGER_F_BLOCKED : 0) | (o->killed ? RK_TRIGGER_F_KILLED : 0) |
		(o->exit_nonzero ? RK_TRIGGER_F_EXIT : 0);
	return 0;
}

/*
 * rec_trigger_fire()'s @state bit for RK_TRIG_KILLED: the sender is another
 * user's. Ours only: each file's record gets RK_TRIG_BY_HIDDEN or the ids.
 */
#define TRIG_SENDER_OTHER 0x80000000u

/* The trigger's record in @t's history. */
static void put_record(struct rk_rec *r, struct rk_thread *t, const struct rk_trigger_record *tr,
		       __u64 time_ns)
{
	struct {
		struct rk_trigger_record tr;
		struct sample_id id;
	} rec = { .tr = *tr };
	struct rk_signal s = { .time_ns = time_ns, .cpu = t->last_cpu };

	rec.tr.state &= ~TRIG_SENDER_OTHER;
	/* Another user's sender, in a file this thread's user reads: hidden as a waker is. */
	if (tr->state & TRIG_SENDER_OTHER && t->reader && r->paranoid > -1) {
		rec.tr.by_pid = 0;
		rec.tr.by_tid = 0;
		rec.tr.state |= RK_TRIG_BY_HIDDEN;
	}
	rec.tr.h.type = RK_RECORD_TRIGGER;
	rec.tr.h.size = sizeof(rec);
	rec_fill_id(r, &rec.id, t, &s);
	rec_put_rec(r, t, &rec, sizeof(rec));
}

/* In the histories it concerns: @tid's, or with @whole every live thread of its process. */
static void put_records(struct rk_rec *r, __u32 tid, int whole, const struct rk_trigger_record *tr,
			__u64 time_ns)
{
	struct rk_thread *t = tid ? rec_thread_find(r, tid) : NULL;
	__u32 tgid;

	if (!t || t->refused)
		return;
	tgid = t->tgid;
	if (!whole) {
		if (!t->dead)
			put_record(r, t, tr, time_ns);
		return;
	}
	for (t = r->all; t; t = t->all_next)
		if (t->tgid == tgid && !t->dead && !t->refused)
			put_record(r, t, tr, time_ns);
}

void rec_trigger_fire(struct rk_rec *r, __u32 kind, __u32 tid, int whole, __u64 time_ns,
		      __u64 value, __u32 state, __u32 by_pid, __u32 by_tid, __u32 uid,
		      const char *why)
{
	struct rk_trigger_record tr = {
		.kind = kind, .state = state, .value = value, .by_pid = by_pid, .by_tid = by_tid
	};
	struct rk_trig *g = r->trig;
	struct rk_thread *t = tid ? rec_thread_find(r, tid) : NULL;
	struct req *q;

	if (!g)
		return;
	r->st->triggers++;
	put_records(r, tid, whole, &tr, time_ns);
	/* One snapshot per gap: a storm (or a hostile user) costs a count, not the disk. */
	if ((g->last_fire && time_ns < g->last_fire + g->o->gap_ns) || g->nwait == RK_TRIG_QUEUE) {
		r->st->triggers_dropped++;
		return;
	}
	g->last_fire = time_ns;
	q = &g->wait[g->nwait++];
	memset(q, 0, sizeof(*q));
	q->kind = kind;
	q->uid = uid;
	q->seq = ++g->seq;
	q->t = time_ns + g->o->after_ns;
	/* Its -e samples up to T may still be in the CPU rings: after the next full drain. */
	q->gen = r->drain_gen + 2;
	if (kind == RK_TRIG_KILLED || kind == RK_TRIG_EXIT) {
		q->pid = t ? t->tgid : 0;
		q->deadline = time_ns + RK_TRIG_EXIT_WAIT_NS;
	}
	snprintf(q->why, sizeof(q->why), "%s", why);
	rk_info("trigger: %s", why);
}

/* Is snapshot @q's instant behind the loop's intake (and its process's end complete)? */
static int ready(struct rk_rec *r, const struct req *q, uint64_t now, int all)
{
	if (all)
		return 1;
	if (now < q->t || r->drain_gen < q->gen)
		return 0;
	return !q->pid || !rec_live_threads_of(r, q->pid) || now >= q->deadline;
}

/* Hand the ready snapshots to the writer; a process's end is cut when its last thread is done. */
static void hand_over(struct rk_rec *r, uint64_t now, int all)
{
	struct rk_trig *g = r->trig;
	int i, keep = 0;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->nwait; i++) {
		struct req q = g->wait[i];

		if (!ready(r, &q, now, all) || g->ntodo == RK_TRIG_QUEUE) {
			if (all)
				r->st->triggers_dropped++; /* the end: no room left to wait in */
			else
				g->wait[keep++] = q;
			continue;
		}
		if (q.pid && q.t < now)
			q.t = now; /* after its last thread's final records */
		g->todo[g->ntodo++] = q;
	}
	g->nwait = keep;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static const char *state_name(__u32 s)
{
	return s & 2 ? "D (uninterruptible)" : "S (sleeping)";
}

/* --trigger blocked: a live thread off CPU in a watched state for longer than the threshold. */
static void watchdog(struct rk_rec *r, uint64_t now)
{
	const struct rk_trigger_opts *o = r->trig->o;
	struct rk_thread *t;
	char why[200];

	for (t = r->all; t; t = t->all_next) {
		if (t->dead || t->refused || t->blocked_fired || !t->off_since ||
		    !(t->off_state & o->blocked_states) || now < t->off_since + o->blocked_ns)
			continue;
		t->blocked_fired = 1;
		snprintf(why, sizeof(why), "tid %u (pid %u) off CPU in %s for %.3f s", t->tid,
			 t->tgid, state_name(t->off_state), (now - t->off_since) / 1e9);
		rec_trigger_fire(r, RK_TRIG_BLOCKED, t->tid, 0, now, now - t->off_since,
				 t->off_state, 0, 0, t->uid, why);
	}
}

void rec_trigger_tick(struct rk_rec *r, uint64_t now)
{
	struct rk_trig *g = r->trig;

	if (!g)
		return;
	if (g->o->blocked_ns && now >= g->last_watch + RK_TRIG_WATCH_NS) {
		g->last_watch = now;
		watchdog(r, now);
	}
	if (g->nwait)
		hand_over(r, now, 0);
}

void rec_trigger_switch(struct rk_rec *r, struct rk_thread *t, const struct rk_signal *s)
{
	t->last_cpu = s->cpu;
	if (!r->trig || !r->trig->o->blocked_ns)
		return;
	if (s->kind == RK_SIG_SWITCH_IN) {
		t->off_since = 0;
		t->blocked_fired = 0;
		return;
	}
	/* A preemption or a final switch-out is no block. */
	t->off_since = s->flags & (RK_SIGF_PREEMPT | RK_SIGF_DEAD) ? 0 : s->time_ns;
	t->off_state = s->prev_state & 0xffff;
}

/* A SIGKILL's sender, kept for its process's end. */
static void kill_seen(struct rk_trig *g, const struct rk_signal *s)
{
	int i = 0;

	while (i < g->nkilled && g->killed[i].pid != s->tgid)
		i++;
	if (i == g->nkilled) {
		if (g->nkilled == 8)
			memmove(g->killed, g->killed + 1, sizeof(g->killed[0]) * 7);
		else
			g->nkilled++;
		i = g->nkilled - 1;
	}
	g->killed[i].pid = s->tgid;
	g->killed[i].by_pid = s->next_tgid;
	g->killed[i].by_tid = s->ptid;
	g->killed[i].si_code = s->prev_state;
	g->killed[i].other = !!(s->flags & RK_SIGF_WAKER_OTHER);
	memcpy(g->killed[i].comm, s->comm, RK_COMM_LEN);
	g->killed[i].comm[RK_COMM_LEN - 1] = '\0';
}

void rec_trigger_signal(struct rk_rec *r, const struct rk_signal *s)
{
	struct rk_thread *t;
	char why[200];

	if (!r->trig)
		return;
	if (s->kind == RK_SIG_KILL) {
		kill_seen(r->trig, s);
		return;
	}
	snprintf(why, sizeof(why), "tid %u (pid %u) waited %.3f ms for a CPU", s->tid, s->tgid,
		 s->prev_state / 1e3);
	t = rec_thread_find(r, s->tid);
	rec_trigger_fire(r, RK_TRIG_DELAY, s->tid, 0, s->time_ns, (__u64)s->prev_state * 1000, 0, 0,
			 0, t ? t->uid : 0, why);
}

/*
 * Who sent @pid's SIGKILL, as a phrase for the reason (the bundle is
 * root's) and as the record's sender and RK_TRIG_BY_* @state.
 */
static void killer(struct rk_trig *g, __u32 pid, char *buf, size_t len, __u32 *by_pid,
		   __u32 *by_tid, __u32 *state)
{
	int i;

	for (i = 0; i < g->nkilled && g->killed[i].pid != pid; i++)
		;
	if (i == g->nkilled) {
		snprintf(buf, len, "sender not seen");
		return;
	}
	if (g->killed[i].si_code == 0x80 /* SI_KERNEL */) {
		/* The task the kernel ran in is no sender (the OOM killer's: often the victim). */
		*state = RK_TRIG_BY_KERNEL;
		snprintf(buf, len, "sent by the kernel (SI_KERNEL: the OOM killer's way)");
		return;
	}
	*by_pid = g->killed[i].by_pid;
	*by_tid = g->killed[i].by_tid;
	*state = g->killed[i].other ? TRIG_SENDER_OTHER : 0;
	snprintf(buf, len, "sent by pid %u (%s)", g->killed[i].by_pid,
		 rk_strip_controls(g->killed[i].comm));
}

void rec_trigger_exit(struct rk_rec *r, const struct rk_signal *s)
{
	struct rk_trig *g = r->trig;
	int sig = s->exit_code & 0x7f, status = (s->exit_code >> 8) & 0xff;
	__u32 by_pid = 0, by_tid = 0, state = 0;
	char why[240], who[120], comm[RK_COMM_LEN];

	/*
	 * The leader's exit stands for its process's: every thread's exit code
	 * says the same. Only the signal is read: its thread may be finished
	 * (an exit handed out after the final switch-out) or even freed.
	 */
	if (!g || s->tid != s->tgid)
		return;
	memcpy(comm, s->comm, sizeof(comm));
	comm[sizeof(comm) - 1] = '\0';
	if (sig && !(s->exit_code & 0x80) && g->o->killed) {
		if (sig == SIGKILL)
			killer(g, s->tgid, who, sizeof(who), &by_pid, &by_tid, &state);
		else
			snprintf(who, sizeof(who), "no core");
		snprintf(why, sizeof(why), "pid %u (%s) killed by signal %d (SIG%s), %s", s->tgid,
			 rk_strip_controls(comm), sig, sigabbrev_np(sig) ?: "?", who);
		rec_trigger_fire(r, RK_TRIG_KILLED, s->tid, 1, s->time_ns, (__u64)sig, state,
				 by_pid, by_tid, s->uid, why);
	} else if (!sig && status && g->o->exit_nonzero) {
		snprintf(why, sizeof(why), "pid %u (%s) exited with status %d", s->tgid,
			 rk_strip_controls(comm), status);
		rec_trigger_fire(r, RK_TRIG_EXIT, s->tid, 1, s->time_ns, (__u64)status, 0, 0, 0,
				 s->uid, why);
	}
}

void rec_trigger_stop(struct rk_rec *r)
{
	struct rk_trig *g = r->trig;

	if (!g)
		return;
	hand_over(r, rk_now_mono_ns(), 1);
	pthread_mutex_lock(&g->lock);
	g->stop = 1;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->writer, NULL);
	close(g->dir);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	free(g);
	r->trig = NULL;
}
