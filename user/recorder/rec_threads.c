// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rec_threads.c - the recorder's the thread table (see rec_threads.h). */
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
#include "rec_bpf.h"
#include "rec_threads.h"
#include "rec_sideband.h"
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
#include "access.h"
#include "pmu.h"
#include "util.h"
/*
 * A thread we will not trace (a limit, tmpfs full): out of the traced set,
 * so BPF stops signalling it and its children are not inherited; counted.
 * What was recorded for other threads is untouched.
 */
void rec_refuse(struct rk_rec *r, __u32 tid, const char *why)
{
	struct rk_pmu_key key = { .tid = tid };
	struct rk_thread *t = rec_thread_find(r, tid);
	int k;

	rec_set_traced(r, tid, 0);
	for (k = 0; k < rec_nsrc(r); k++) {
		key.src = (__u32)k;
		bpf_map_delete_elem(r->pmu_fd, &key);
	}
	/*
	 * A marker, so the signals already queued for it do not count it
	 * again: those stamped before now (rec_refused_stale()). It lasts
	 * until the intake is past now (rec_reclaim()), not for the life of
	 * the tid: a refused thread's exit is never signalled, and a later
	 * thread with its tid is a new one, tried again.
	 */
	if (!t || !t->refused) {
		t = calloc(1, sizeof(*t));
		if (t) {
			t->tid = tid;
			t->refused = 1;
			t->dead = 1;
			t->hnext = r->buckets[tid % NBUCKETS];
			r->buckets[tid % NBUCKETS] = t;
			rec_all_add(r, t);
			rec_fin_add(r, t);
		}
	}
	if (t)
		t->refused_ns = rk_now_mono_ns();
	if (!r->st->not_traced)
		rk_warn("tid %u and later threads over the limit are not traced (%s); see "
			"'ringkeeper stat'",
			tid, why);
	r->st->not_traced++;
}

/*
 * Is @s, for a tid refused at @t (a marker), one of the refused thread's
 * own signals? A fork (or an adoption by -a/--cgroup) stamped after the
 * refusal is a new thread with that tid: not stale. Anything else of
 * that tid is: BPF stopped signalling it at the refusal.
 */
int rec_refused_stale(const struct rk_thread *t, const struct rk_signal *s)
{
	int born = s->kind == RK_SIG_FORK || (s->flags & RK_SIGF_ADOPTED);

	return !born || s->time_ns <= t->refused_ns;
}

/* A marker gives way to a new thread of its tid: out of the table, freed by rec_reclaim(). */
void rec_unrefuse(struct rk_rec *r, struct rk_thread *t)
{
	struct rk_thread **pp = &r->buckets[t->tid % NBUCKETS];

	while (*pp && *pp != t)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = t->hnext;
	t->hnext = NULL;
	t->refused = 0; /* dead, with no buffers: rec_reclaim() frees it */
}

/*
 * Who the new thread is, for its identity and its readers: from its fork
 * signal when BPF could say (RK_SIGF_IDS: read at the fork, no /proc read
 * per birth), else from /proc now (a task already gone stays root's).
 * Return: 1 if @reader may read its files.
 */
static int thread_who(const struct rk_signal *born, struct rk_thread_ident *id, const char *comm,
		      uid_t *reader)
{
	char pcomm[RK_COMM_LEN] = "";
	struct rk_task_ids ids = { 0 };

	if (born && (born->flags & RK_SIGF_IDS)) {
		id->ns_tid = born->ns_tid;
		snprintf(id->comm, sizeof(id->comm), "%s", born->comm);
		*reader = born->reader ? born->reader - 1 : 0;
		return born->reader != 0;
	}
	rec_proc_ids(id->tgid, id->tid, &id->uid, &id->ns_tid, comm && *comm ? NULL : pcomm, &ids);
	snprintf(id->comm, sizeof(id->comm), "%s", comm && *comm ? comm : pcomm);
	return rk_access_reader_of((pid_t)id->tgid, (pid_t)id->tid, &ids, reader) == 1;
}

static struct rk_thread *thread_new(struct rk_rec *r, __u32 tid, __u32 tgid, __u32 uid,
				    const char *comm, uint64_t start_ns,
				    const struct rk_signal *born);

/* A thread whose fork signal is @s: its files, its identity from the signal where it can. */
struct rk_thread *rec_thread_born(struct rk_rec *r, const struct rk_signal *s)
{
	return thread_new(r, s->tid, s->tgid, s->uid, s->comm, s->time_ns, s);
}

struct rk_thread *rec_thread_new(struct rk_rec *r, __u32 tid, __u32 tgid, __u32 uid,
				 const char *comm, uint64_t start_ns)
{
	return thread_new(r, tid, tgid, uid, comm, start_ns, NULL);
}

/*
 * Files for @tid, one per source. A dead thread with the same tid (tid
 * reuse) keeps its files under <tid>.<n>.
 */
static struct rk_thread *thread_new(struct rk_rec *r, __u32 tid, __u32 tgid, __u32 uid,
				    const char *comm, uint64_t start_ns,
				    const struct rk_signal *born)
{
	struct rk_thread_ident id = { 0 };
	char path[PATH_MAX + 96];
	struct rk_thread *t, *prev = rec_thread_find(r, tid);
	uid_t reader = 0;
	int k, can;

	if (prev && !prev->dead)
		return prev;
	if (prev && prev->refused)
		return NULL;
	if (r->o->max_shm_user && !rec_gone_room_user(r, rec_thread_charge0(r), uid)) {
		rec_refuse(r, tid, "--max-shm-user");
		return NULL;
	}
	if (r->o->max_shm && !rec_gone_room(r, rec_thread_charge0(r), uid)) {
		rec_refuse(r, tid, "--max-shm");
		return NULL;
	}
	if (r->o->max_threads && r->st->threads_live >= r->o->max_threads) {
		rec_refuse(r, tid, "--max-threads");
		return NULL;
	}
	if (r->mem_cap && r->mem_bytes + rec_thread_bytes(r) > r->mem_cap) {
		r->st->mem_refused++;
		rec_refuse(r, tid, "memory cgroup limit: room for no more buffers");
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		r->st->file_errors++;
		return NULL;
	}
	id.tid = tid;
	id.tgid = tgid;
	id.ns_tid = tid;
	id.uid = uid;
	id.start_ns = start_ns;
	id.state = RK_THREAD_LIVE;
	can = thread_who(born, &id, comm, &reader);
	for (k = 0; k < rec_nsrc(r); k++) {
		struct rk_bufile *bf;

		snprintf(path, sizeof(path), "%s/%s/%u", r->dir, rec_src_dir(r, k), tid);
		/* A reused tid: the earlier thread's file (even if reclaimed) stays. */
		rec_move_aside(r, path, tid);
		bf = rk_bufile__create(path, r->o->data_size, rec_src_aux(r, k),
				       rec_src_entry(r, k), &id);
		if (!bf) {
			int err = errno;

			if (!r->st->file_errors && err == ENOSPC)
				rec_err_full(r, "create buffer file", path,
					     ", or use a smaller -m; threads without a file are "
					     "not traced (stat: not_traced)");
			else if (!r->st->file_errors)
				rk_err("cannot create buffer file %s: %s", path, strerror(err));
			r->st->file_errors++;
			rec_refuse(r, tid, err == ENOSPC ? "tmpfs full" : "file error");
			while (k--) {
				snprintf(path, sizeof(path), "%s/%s/%u", r->dir, rec_src_dir(r, k),
					 tid);
				unlink(path);
				rk_bufile__free(t->b[k].bf);
			}
			free(t);
			return NULL;
		}
		/*
		 * Root's file, which the thread's user may read where the kernel
		 * would let them read the task and what the source records.
		 */
		if (rec_grant(r, path,
			      can && (k == RK_SRC_SCHED ||
				      rk_access_event_ok(&rec_src_entry(r, k)->attr, r->paranoid)),
			      reader))
			t->reader = reader + 1;
		t->b[k].bf = bf;
		t->b[k].charged = rec_file_charge(bf->data_size, bf->aux_size, 0, &t->b[k].grow_at);
		t->b[k].pin.addr = bf->base;
		t->b[k].pin.len = bf->map_size;
		t->b[k].pin.uid = id.uid;
		t->b[k].pin.owner = &t->b[k];
		t->b[k].t = t;
		t->unreleased++;
		t->b[k].pin.pinned_flag = &bf->ident->pinned;
		t->b[k].pin.asked = rec_asked_flag(r, tid);
	}
	t->tid = tid;
	t->tgid = tgid;
	t->uid = id.uid;
	if (prev) {
		/* Unhook the old one; it stays on the all-list for cleanup. */
		struct rk_thread **pp = &r->buckets[tid % NBUCKETS];

		while (*pp != prev)
			pp = &(*pp)->hnext;
		*pp = prev->hnext;
	}
	t->hnext = r->buckets[tid % NBUCKETS];
	r->buckets[tid % NBUCKETS] = t;
	rec_all_add(r, t);
	r->st->threads++;
	r->st->threads_live++;
	rec_live_add(r, t->tgid, 1);
	rec_shm_account(r, t->uid, (int64_t)rec_thread_charge0(r));
	r->mem_bytes += rec_thread_bytes(r);
	return t;
}

void rec_put_rec_src(struct rk_rec *r, struct rk_thread *t, int k, const void *rec, size_t size)
{
	struct rk_bufile *bf = t->b[k].bf;
	__u64 before = bf->id.overwritten;
	int err;

	if (t->frozen) {
		/* Its process crashed: the history ends at the crash, for its core. */
		r->st->after_crash++;
		return;
	}
	/* The pages it fills first counted in --max-shm: a hard bound, whatever the threads do. */
	if (bf->head + size > t->b[k].grow_at && !rec_shm_grow(r, t, k, size)) {
		r->st->shm_withheld++;
		return;
	}
	err = rk_bufile__write(bf, rec, size);

	/*
	 * Its pages went away (truncated, tmpfs full): this file is lost.
	 * Counted once, whoever met the SIGBUS first (we, or a pin worker
	 * storing the pinned flag).
	 */
	if (err == -EIO && !t->b[k].lost) {
		t->b[k].lost = 1;
		if (!r->st->files_broken)
			rk_warn("the buffer file of tid %u lost its memory while written (the "
				"filesystem holding %s full, or the file truncated); its records "
				"are lost, the others go on (stat: files lost while written)",
				t->tid, r->o->root);
		r->st->files_broken++;
	}
	if (err) {
		r->st->lost++;
		return;
	}
	r->st->records++;
	r->st->overwritten += bf->id.overwritten - before;
}

void rec_put_rec(struct rk_rec *r, struct rk_thread *t, void *rec, size_t size)
{
	rec_put_rec_src(r, t, RK_SRC_SCHED, rec, size);
}

void rec_fill_id(struct rk_rec *r, struct sample_id *id, struct rk_thread *t,
		 const struct rk_signal *s)
{
	__u64 tm = s->time_ns;

	if (tm < t->last_ns) {
		r->st->time_clamped++;
		if (t->last_ns - tm > r->st->time_clamped_max_ns)
			r->st->time_clamped_max_ns = t->last_ns - tm;
		tm = t->last_ns;
	}
	t->last_ns = tm;
	id->pid = t->tgid;
	id->tid = t->tid;
	id->time = tm;
	id->cpu = s->cpu;
	id->res = 0;
	id->id = RK_SCHED_ID;
}

void rec_thread_pin(struct rk_rec *r, struct rk_thread *t, int how, uint64_t now)
{
	int k;

	for (k = 0; k < rec_nsrc(r); k++)
		rk_pin_want(r->pool, &t->b[k].pin, how, now);
}

/* Identity updates go to every file of the thread: each is self-contained. */
void rec_thread_ident(struct rk_rec *r, struct rk_thread *t, const char *comm, __u32 state,
		      int set_exit, __s32 exit_code, __u64 exit_ns)
{
	int k;

	if (t->frozen)
		return; /* crashed: its identity says so, and stays */
	for (k = 0; k < rec_nsrc(r); k++) {
		struct rk_thread_ident *id = &t->b[k].bf->id;

		if (comm)
			memcpy(id->comm, comm, RK_COMM_LEN);
		if (state)
			id->state = state;
		if (set_exit) {
			id->exit_code = exit_code;
			id->exit_ns = exit_ns;
		}
		rk_bufile__publish_ident(t->b[k].bf);
	}
}

void rec_thread_finish(struct rk_rec *r, struct rk_thread *t, __u32 state)
{
	int k;

	if (t->dead)
		return;
	rec_thread_ident(r, t, NULL, state, 0, 0, 0);
	t->dead = 1;
	rec_fin_add(r, t);
	r->st->threads_live--;
	rec_live_add(r, t->tgid, -1);
	if (r->o->on_exit_drop && state == RK_THREAD_EXITED) {
		char path[PATH_MAX + 96];

		/* The RFC's truncate at exit: the mappings go with the retire below. */
		for (k = 0; k < rec_nsrc(r); k++) {
			snprintf(path, sizeof(path), "%s/%s/%u", r->dir, rec_src_dir(r, k), t->tid);
			if (!unlink(path))
				r->st->dropped++;
		}
		/* Its memory goes with the last mapping: room for another thread. */
		r->mem_bytes -= r->mem_bytes < rec_thread_bytes(r) ? r->mem_bytes :
								     rec_thread_bytes(r);
		/* And its files leave --max-shm's count (they were never gone, only dropped). */
		for (k = 0; k < rec_nsrc(r); k++)
			rec_shm_account(r, t->uid, -(int64_t)t->b[k].charged);
	}
	/* Files that stay: --keep-exited and --max-shm may remove them later. */
	if (!(r->o->on_exit_drop && state == RK_THREAD_EXITED))
		rec_gone_push(r, t);
	/*
	 * The workers unlock and unmap the locked files (an unlocked one is
	 * unmapped here, rk_pin_retire()); we never touch them again.
	 */
	for (k = 0; k < rec_nsrc(r); k++)
		rk_pin_retire(r->pool, &t->b[k].pin);
	/* Its process's last thread: the process's sideband is finished too. */
	if (r->o->nev && (state == RK_THREAD_EXITED || state == RK_THREAD_LEFT) &&
	    !rec_live_threads_of(r, t->tgid))
		rec_sideband_done(r, t->tgid, state);
}

/*
 * With perf sources, a switch-out's unpin (and a death's finish) waits for
 * the next drain of the CPU rings, which may still hold the thread's records.
 */
void rec_defer_off(struct rk_rec *r, struct rk_thread *t, uint64_t now, int how, __u32 finish_state)
{
	if (!r->o->nev) {
		rec_thread_pin(r, t, how, now);
		if (finish_state)
			rec_thread_finish(r, t, finish_state);
		return;
	}
	t->off_ns = now;
	t->off_how = how;
	t->defer_gen = r->drain_gen;
	if (finish_state)
		t->pending_state = finish_state;
	if (t->pending)
		return;
	if (r->npending == r->cappending) {
		size_t cap = r->cappending ? r->cappending * 2 : 256;
		struct rk_thread **n = realloc(r->pendingv, cap * sizeof(*n));

		if (!n) {
			/* No room to defer: unpin now, the data is still recorded. */
			rec_thread_pin(r, t, how, now);
			if (finish_state)
				rec_thread_finish(r, t, finish_state);
			return;
		}
		r->pendingv = n;
		r->cappending = cap;
	}
	t->pending = 1;
	r->pendingv[r->npending++] = t;
}

/*
 * Apply what was deferred before drain number @gen started: that drain saw
 * every record the kernel wrote for those threads before they went off CPU.
 * A thread deferred later (its signal consumed while or after we drained)
 * waits for the next drain, or its last records would find it finished.
 */
void rec_apply_deferred(struct rk_rec *r, uint64_t gen)
{
	size_t i, keep = 0;

	for (i = 0; i < r->npending; i++) {
		struct rk_thread *t = r->pendingv[i];

		if (t->defer_gen >= gen && !t->dead) {
			r->pendingv[keep++] = t;
			continue;
		}
		t->pending = 0;
		if (t->dead)
			continue;
		if (t->last_switch != RK_SIG_SWITCH_IN || t->pending_state)
			rec_thread_pin(r, t, t->pending_state ? RK_PIN_OFF : t->off_how, t->off_ns);
		if (t->pending_state)
			rec_thread_finish(r, t, t->pending_state);
		t->pending_state = 0;
	}
	r->npending = keep;
}

/*
 * An exec may make a thread one its user can no longer read (a setuid
 * program: the kernel makes it non-dumpable). Its history up to the exec
 * stays in the user's file, frozen; a new root-only file takes over, so
 * nothing of the new program reaches a descriptor the user opened before.
 * Return: the thread to write to (@t, or its new incarnation), NULL if
 * no file could be made (then counted as not traced).
 */
static struct rk_thread *recheck(struct rk_rec *r, struct rk_thread *t, const char *comm,
				 __u64 time_ns, __u32 why, __u32 uid, const struct rk_signal *sig)
{
	uid_t reader = 0;
	int last = t->last_switch, can;
	struct rk_thread *n;

	/* An exec signal may say who may read the new program (RK_SIGF_IDS), as a fork's does. */
	if (sig && (sig->flags & RK_SIGF_IDS)) {
		can = sig->reader != 0;
		reader = sig->reader ? sig->reader - 1 : 0;
	} else {
		can = rk_access_task_reader((pid_t)t->tgid, (pid_t)t->tid, &reader) == 1;
	}

	/*
	 * The kernel's rule for /proc/PID: its owner now. The same reader (or
	 * root only, still): the file goes on. Otherwise what was recorded
	 * stays with whoever could read it, and the rest goes to a new file
	 * for the new reader (or root only): never looser, not even toward a
	 * task that became readable again (prctl(PR_SET_DUMPABLE, 1)).
	 */
	if ((can ? (uint64_t)reader + 1 : 0) == t->reader || t->frozen)
		return t;
	rec_thread_finish(r, t, why);
	/* Not 0 "for /proc to say": gone, it said nothing, and root was charged. */
	n = thread_new(r, t->tid, t->tgid, uid, comm, time_ns, sig);
	if (!n)
		return NULL;
	r->st->threads--; /* the same thread, in a second file */
	if (why == RK_THREAD_EXECED)
		r->st->exec_rotated++;
	else
		r->st->creds_rotated++;
	n->last_switch = last;
	/* Why it is traced goes on with it: one traced for --cgroup may still leave. */
	rec_thread_via_cgroup(n, t->via_cgroup);
	if (last == RK_SIG_SWITCH_IN)
		rec_thread_pin(r, n, RK_PIN_ON, time_ns);
	return n;
}

struct rk_thread *rec_access_recheck(struct rk_rec *r, struct rk_thread *t, const char *comm,
				     __u64 time_ns, __u32 why, __u32 uid)
{
	return recheck(r, t, comm, time_ns, why, uid, NULL);
}

struct rk_thread *rec_exec_recheck(struct rk_rec *r, struct rk_thread *t, const struct rk_signal *s)
{
	return recheck(r, t, s->comm, s->time_ns, RK_THREAD_EXECED, s->uid, s);
}

void rec_thread_via_cgroup(struct rk_thread *t, int on)
{
	struct rk_bufile *bf = SCHED_BF(t);

	t->via_cgroup = on;
	if (!bf)
		return;
	if (on)
		bf->id.flags |= RK_IDENT_VIA_CGROUP;
	else
		bf->id.flags &= ~RK_IDENT_VIA_CGROUP;
	rk_bufile__publish_ident(bf);
}

/*
 * The running recorder's books against the kernel's: a thread live in our
 * books that BPF no longer traces lost the signals of its end (its final
 * switch-out, dropped with its switch ring full; or its move out of the
 * --cgroup subtrees). Seen so twice with an intake between (which hands
 * out every signal stamped before the first look: a final switch-out is
 * stored before BPF clears the thread's byte), it is ended then, flagged
 * and counted, so its file leaves the live set and joins retention.
 */
void rec_reconcile(struct rk_rec *r, uint64_t now)
{
	struct rk_thread *t;

	r->reconcile_ns = now;
	for (t = r->all; t; t = t->all_next) {
		if (t->dead || t->refused || t->pending)
			continue;
		if (rec_tid_traced(r, t->tid)) {
			t->untraced_seen = 0;
			continue;
		}
		if (!t->untraced_seen) {
			t->untraced_seen = r->intakes;
			continue;
		}
		if (r->intakes > t->untraced_seen)
			rec_thread_end_unseen(r, t);
	}
}

/*
 * @t ended and we missed its end (reconciled, or its tid forked again):
 * its files say so (RK_IDENT_END_UNSEEN), and it is finished as an exit,
 * or as a move out of the cgroups if it is still there.
 */
void rec_thread_end_unseen(struct rk_rec *r, struct rk_thread *t)
{
	int k, alive = t->via_cgroup && !syscall(SYS_tgkill, t->tgid, t->tid, 0);

	/* Counted first: whoever sees threads_live drop sees the count that goes with it. */
	r->st->threads_reconciled++;
	for (k = 0; k < rec_nsrc(r); k++) {
		t->b[k].bf->id.flags |= RK_IDENT_END_UNSEEN;
		rk_bufile__publish_ident(t->b[k].bf);
	}
	rec_thread_finish(r, t, alive ? RK_THREAD_LEFT : RK_THREAD_EXITED);
}

/*
 * Free the threads whose buffers are all finished and unmapped, so an
 * always-on recorder's memory follows the live threads, not all it saw.
 * It walks the finished ones only (r->fin), not every thread: with 50,000
 * live threads, every 100 ms. A refused marker goes once the intake is
 * RK_MARKER_NS past its refusal: every signal stamped before it was
 * handed out by then.
 */
void rec_reclaim(struct rk_rec *r)
{
	struct rk_thread **pp = &r->fin, *t;

	while ((t = *pp)) {
		struct rk_thread **hp;

		if (t->refused && r->handed_ns > t->refused_ns + RK_MARKER_NS)
			t->refused = 0;
		if (t->refused || t->pending || __atomic_load_n(&t->unreleased, __ATOMIC_ACQUIRE)) {
			pp = &t->fin_next;
			continue;
		}
		*pp = t->fin_next;
		for (hp = &r->buckets[t->tid % NBUCKETS]; *hp && *hp != t; hp = &(*hp)->hnext)
			;
		if (*hp)
			*hp = t->hnext;
		if (t->all_prev)
			t->all_prev->all_next = t->all_next;
		else
			r->all = t->all_next;
		if (t->all_next)
			t->all_next->all_prev = t->all_prev;
		free(t);
	}
}
