// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record.c - the loader's event loop.
 *
 * One thread consumes the BPF ringbuf on a timer (the BPF side does not wake
 * us per record) and turns each signal into perf records in the buffer file
 * of its thread; switch-in/out become pin wishes that the pin pool's workers
 * act on. Files live on tmpfs, so they outlive us.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "ringkeeper.skel.h"
#include "access.h"
#include "memcg.h"
#include "bufile.h"
#include "drain.h"
#include "evsel.h"
#include "pinpool.h"
#include "pmu.h"
#include "record.h"
#include "session.h"
#include "util.h"

#define BPF_FS_MAGIC_ 0xcafe4a11
#define TRACEFS_MAGIC_ 0x74726163
#define RK_LOCK_FILE "/run/ringkeeper.lock"
#define NBUCKETS 16384
/* After the target exits, wait this long at most for its threads' last switch-out. */
#define RK_DRAIN_NS (500 * 1000000ull)
/* Our BPF programs: sched_switch, fork, exec, exit. */
#define RK_NPROGS 4

struct rk_thread {
	struct rk_thread *hnext;
	struct rk_thread *all_next;
	__u32 tid, tgid, uid;
	int dead; /* final switch-out written, pin retired */
	int last_switch; /* RK_SIG_SWITCH_IN/OUT of the last switch record, 0 not known */
	int refused; /* over a limit: no files, never traced (a marker, dead too) */
	int pending; /* on the deferred list: unpin/finish after the next drain */
	uint64_t defer_gen; /* r->drain_gen when it was last deferred */
	__u32 pending_state; /* RK_THREAD_* to finish with, 0: just unpin */
	uint64_t off_ns;
	uint64_t reader; /* uid + 1 of the user granted a read of its sched file, 0: root only */
	/* Buffers whose unmap (by a pin worker) is still to come; 0: reclaimable. */
	int unreleased;
	/* One buffer per source: [0] sched, [1..] the perf events. */
	struct rk_tbuf {
		struct rk_bufile *bf;
		struct rk_pin_item pin;
		struct rk_thread *t;
		int lost; /* its mapping was lost (SIGBUS), counted */
	} b[RK_MAX_SRC];
};

/* The sched buffer: the thread's identity lives in every file, this one is canonical. */
#define SCHED_BF(t) ((t)->b[RK_SRC_SCHED].bf)

struct rk_proc {
	struct rk_proc *next;
	__u32 pid;
	struct rk_bufile *bf;
};

struct rk_rec {
	const struct rk_record_opts *o;
	struct ringkeeper_bpf *skel;
	struct ring_buffer *rb;
	struct rk_pin_pool *pool;
	struct rk_thread *buckets[NBUCKETS];
	struct rk_thread *all;
	char dir[PATH_MAX]; /* <root>/<session> */
	char session[128];
	struct rk_session_stat *st;
	struct rk_pmu_entry sched_entry;
	uint64_t file_size;
	pid_t target;
	int target_exited;
	uint64_t drain_deadline;
	int lock_fd;
	int maps_pinned;
	unsigned int ncpus;
	uint64_t last_pins;
	struct rk_thread **pendingv;
	size_t npending, cappending;
	uint64_t drain_gen; /* drains started */
	struct rk_drain *drain;
	struct rk_proc *procs;
	int pmu_fd, cnt_fd, sig_fd; /* the maps, from the skeleton or from bpffs (resume) */
	int link_fds[8]; /* pinned links taken over on resume */
	int prog_fds[RK_NPROGS]; /* our programs, for their run statistics; -1: not known */
	int nlinks;
	int paranoid; /* perf_event_paranoid at start: who may see kernel addresses */
	/*
	 * Under a memory cgroup limit: the buffer bytes we may commit (files
	 * at their full size: the most they can take), and what is committed.
	 */
	uint64_t mem_cap, mem_bytes;
	uint64_t drops_before; /* resume: BPF drops the dead recorder last published */
	struct rk_record_opts ro; /* the options, completed from the session on resume */
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !rk_verbose)
		return 0;
	if (level == LIBBPF_INFO && !rk_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static struct rk_thread *thread_find(struct rk_rec *r, __u32 tid)
{
	struct rk_thread *t;

	for (t = r->buckets[tid % NBUCKETS]; t; t = t->hnext)
		if (t->tid == tid)
			return t;
	return NULL;
}

/* A pin worker is done with a retired buffer: unmap it; the last one frees the thread. */
static void release_buf(void *owner, void *ctx)
{
	struct rk_tbuf *tb = owner;

	(void)ctx;
	rk_bufile__free(tb->bf);
	/* Pairs with the acquire load in reclaim(). */
	__atomic_sub_fetch(&tb->t->unreleased, 1, __ATOMIC_RELEASE);
}

/* Read Uid and NSpid of a thread from /proc; keeps the defaults if it is gone. */
static void proc_ids(__u32 tgid, __u32 tid, __u32 *uid, __u32 *ns_tid, char *comm)
{
	char path[96], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/status", tgid, tid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned int v;
		char *p;

		if (comm && !strncmp(line, "Name:\t", 6)) {
			line[strcspn(line, "\n")] = '\0';
			size_t n = strlen(line + 6);

			if (n > RK_COMM_LEN - 1)
				n = RK_COMM_LEN - 1;
			memcpy(comm, line + 6, n);
			comm[n] = '\0';
		} else if (sscanf(line, "Uid: %u", &v) == 1) {
			*uid = v;
		} else if (!strncmp(line, "NSpid:", 6)) {
			/* The last field is the innermost namespace's tid. */
			p = strrchr(line, '\t');
			if (p && sscanf(p, "%u", &v) == 1)
				*ns_tid = v;
		}
	}
	fclose(f);
}

/*
 * A file for @tid. A dead thread's file with the same tid (tid reuse) is
 * renamed to <tid>.<n> first, so no history is overwritten.
 */
static int nsrc(const struct rk_rec *r)
{
	return 1 + r->o->nev;
}

static const char *src_dir(const struct rk_rec *r, int k)
{
	return k == RK_SRC_SCHED ? RK_SCHED_DIR : r->o->evs[k - 1].dir;
}

/* AUX area bytes of source @k's files (0 but for the AUX event). */
static uint64_t src_aux(const struct rk_rec *r, int k)
{
	return k != RK_SRC_SCHED && r->o->evs[k - 1].aux ? r->o->aux_size : 0;
}

/* Bytes of buffer files one thread gets: one file per source. */
static uint64_t thread_bytes(const struct rk_rec *r)
{
	uint64_t n = 0;
	int k;

	for (k = 0; k < nsrc(r); k++)
		n += rk_bufile_layout_size(r->o->data_size, src_aux(r, k));
	return n;
}

static const struct rk_pmu_entry *src_entry(const struct rk_rec *r, int k)
{
	return k == RK_SRC_SCHED ? &r->sched_entry : &r->o->evs[k - 1].entry;
}

/*
 * A thread we will not trace (a limit, tmpfs full): out of the traced set,
 * so BPF stops signalling it and its children are not inherited; counted.
 * What was recorded for other threads is untouched.
 */
static void refuse(struct rk_rec *r, __u32 tid, const char *why)
{
	struct rk_pmu_key key = { .tid = tid };
	int k;

	struct rk_thread *t = calloc(1, sizeof(*t));

	for (k = 0; k < nsrc(r); k++) {
		key.src = (__u32)k;
		bpf_map_delete_elem(r->pmu_fd, &key);
	}
	/* A marker, so the signals already queued for it do not count it again. */
	if (t) {
		t->tid = tid;
		t->refused = 1;
		t->dead = 1;
		t->hnext = r->buckets[tid % NBUCKETS];
		r->buckets[tid % NBUCKETS] = t;
		t->all_next = r->all;
		r->all = t;
	}
	if (!r->st->not_traced)
		rk_warn("tid %u and later threads over the limit are not traced (%s); see "
			"'ringkeeper stat'",
			tid, why);
	r->st->not_traced++;
}

/*
 * Let @reader read the file at @path (a file we just created: root's, 0600).
 * Return: 1 if granted, 0 if it stays root's.
 */
static int grant(struct rk_rec *r, const char *path, int can, uid_t reader)
{
	int fd, err;

	if (!can)
		goto root_only;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		goto root_only;
	err = rk_access_grant(fd, reader);
	close(fd);
	if (!err)
		return 1;
	if (!r->st->files_root_only)
		rk_warn("cannot let uid %u read %s: %s (its files stay root's)", reader, path,
			strerror(-err));
root_only:
	r->st->files_root_only++;
	return 0;
}

/* Move a dead thread's file aside (tid reuse), so no history is overwritten. */
static void move_aside(const char *path, __u32 tid)
{
	char old[PATH_MAX + 48];
	unsigned int n;

	for (n = 1; n < 1000; n++) {
		snprintf(old, sizeof(old), "%s.%u", path, n);
		if (access(old, F_OK))
			break;
	}
	if (rename(path, old) && errno != ENOENT)
		rk_warn("cannot move the file of exited tid %u aside: %s", tid, strerror(errno));
}

/*
 * Files for @tid, one per source. A dead thread with the same tid (tid
 * reuse) keeps its files under <tid>.<n>.
 */
static struct rk_thread *thread_new(struct rk_rec *r, __u32 tid, __u32 tgid, __u32 uid,
				    const char *comm, uint64_t start_ns)
{
	struct rk_thread_ident id = { 0 };
	char path[PATH_MAX + 96];
	struct rk_thread *t, *prev = thread_find(r, tid);
	char pcomm[RK_COMM_LEN] = "";
	uid_t reader = 0;
	int k, can;

	if (prev && !prev->dead)
		return prev;
	if (prev && prev->refused)
		return NULL;
	if (r->o->max_shm && r->st->shm_bytes + thread_bytes(r) > r->o->max_shm) {
		refuse(r, tid, "--max-shm");
		return NULL;
	}
	if (r->o->max_threads && r->st->threads_live >= r->o->max_threads) {
		refuse(r, tid, "--max-threads");
		return NULL;
	}
	if (r->mem_cap && r->mem_bytes + thread_bytes(r) > r->mem_cap) {
		r->st->mem_refused++;
		refuse(r, tid, "memory cgroup limit: room for no more buffers");
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
	proc_ids(tgid, tid, &id.uid, &id.ns_tid, comm && *comm ? NULL : pcomm);
	snprintf(id.comm, sizeof(id.comm), "%s", comm && *comm ? comm : pcomm);
	/* Who may read it: decided from /proc now; a task already gone stays root's. */
	can = rk_access_task_reader((pid_t)tgid, (pid_t)tid, &reader) == 1;
	for (k = 0; k < nsrc(r); k++) {
		struct rk_bufile *bf;

		snprintf(path, sizeof(path), "%s/%s/%u", r->dir, src_dir(r, k), tid);
		/* A reused tid: the earlier thread's file (even if reclaimed) stays. */
		move_aside(path, tid);
		bf = rk_bufile__create(path, r->o->data_size, src_aux(r, k), src_entry(r, k), &id);
		if (!bf) {
			int err = errno;

			if (!r->st->file_errors)
				rk_err("cannot create buffer file %s: %s%s", path, strerror(err),
				       err == ENOSPC ? " (tmpfs full: free space in /dev/shm or "
						       "use a smaller -m)" :
						       "");
			r->st->file_errors++;
			refuse(r, tid, err == ENOSPC ? "tmpfs full" : "file error");
			while (k--) {
				snprintf(path, sizeof(path), "%s/%s/%u", r->dir, src_dir(r, k),
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
		if (grant(r, path,
			  can && (k == RK_SRC_SCHED ||
				  rk_access_event_ok(&src_entry(r, k)->attr, r->paranoid)),
			  reader))
			t->reader = reader + 1;
		t->b[k].bf = bf;
		t->b[k].pin.addr = bf->base;
		t->b[k].pin.len = bf->map_size;
		t->b[k].pin.uid = id.uid;
		t->b[k].pin.owner = &t->b[k];
		t->b[k].t = t;
		t->unreleased++;
		t->b[k].pin.pinned_flag = &bf->ident->pinned;
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
	t->all_next = r->all;
	r->all = t;
	r->st->threads++;
	r->st->threads_live++;
	r->st->shm_bytes += thread_bytes(r);
	r->mem_bytes += thread_bytes(r);
	return t;
}

static void put_rec_src(struct rk_rec *r, struct rk_thread *t, int k, const void *rec, size_t size)
{
	struct rk_bufile *bf = t->b[k].bf;
	__u64 before = bf->id.overwritten;
	int err = rk_bufile__write(bf, rec, size);

	/*
	 * Its pages went away (truncated, tmpfs full): this file is lost.
	 * Counted once, whoever met the SIGBUS first (we, or a pin worker
	 * storing the pinned flag).
	 */
	if (err == -EIO && !t->b[k].lost) {
		t->b[k].lost = 1;
		if (!r->st->files_broken)
			rk_warn("the buffer file of tid %u lost its memory while written (truncated, "
				"or tmpfs full); its records are lost, the others go on "
				"(stat: files lost while written)",
				t->tid);
		r->st->files_broken++;
	}
	if (err) {
		r->st->lost++;
		return;
	}
	r->st->records++;
	r->st->overwritten += bf->id.overwritten - before;
}

static void put_rec(struct rk_rec *r, struct rk_thread *t, void *rec, size_t size)
{
	put_rec_src(r, t, RK_SRC_SCHED, rec, size);
}

/* sample_id of RK_SCHED_SAMPLE_TYPE. */
struct sample_id {
	__u32 pid, tid;
	__u64 time;
	__u32 cpu, res;
	__u64 id;
};

static void fill_id(struct sample_id *id, const struct rk_thread *t, const struct rk_signal *s)
{
	id->pid = t->tgid;
	id->tid = t->tid;
	id->time = s->time_ns;
	id->cpu = s->cpu;
	id->res = 0;
	id->id = RK_SCHED_ID;
}

static void thread_pin(struct rk_rec *r, struct rk_thread *t, int on, uint64_t now)
{
	int k;

	for (k = 0; k < nsrc(r); k++)
		rk_pin_want(r->pool, &t->b[k].pin, on, now);
}

/* Identity updates go to every file of the thread: each is self-contained. */
static void thread_ident(struct rk_rec *r, struct rk_thread *t, const char *comm, __u32 state,
			 int set_exit, __s32 exit_code, __u64 exit_ns)
{
	int k;

	for (k = 0; k < nsrc(r); k++) {
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

static void thread_finish(struct rk_rec *r, struct rk_thread *t, __u32 state)
{
	int k;

	if (t->dead)
		return;
	thread_ident(r, t, NULL, state, 0, 0, 0);
	t->dead = 1;
	r->st->threads_live--;
	if (r->o->on_exit_drop && state == RK_THREAD_EXITED) {
		char path[PATH_MAX + 96];

		/* The RFC's truncate at exit: the mappings go with the retire below. */
		for (k = 0; k < nsrc(r); k++) {
			snprintf(path, sizeof(path), "%s/%s/%u", r->dir, src_dir(r, k), t->tid);
			if (!unlink(path))
				r->st->dropped++;
		}
		/* Its memory goes with the last mapping: room for another thread. */
		r->mem_bytes -= r->mem_bytes < thread_bytes(r) ? r->mem_bytes : thread_bytes(r);
	}
	/* The workers unlock and unmap the files; we never touch them again. */
	for (k = 0; k < nsrc(r); k++)
		rk_pin_retire(r->pool, &t->b[k].pin);
}

/*
 * With perf sources, a switch-out's unpin (and a death's finish) waits for
 * the next drain of the CPU rings, which may still hold the thread's records.
 */
static void defer_off(struct rk_rec *r, struct rk_thread *t, uint64_t now, __u32 finish_state)
{
	if (!r->o->nev) {
		thread_pin(r, t, 0, now);
		if (finish_state)
			thread_finish(r, t, finish_state);
		return;
	}
	t->off_ns = now;
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
			thread_pin(r, t, 0, now);
			if (finish_state)
				thread_finish(r, t, finish_state);
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
static void apply_deferred(struct rk_rec *r, uint64_t gen)
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
			thread_pin(r, t, 0, t->off_ns);
		if (t->pending_state)
			thread_finish(r, t, t->pending_state);
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
static struct rk_thread *exec_access(struct rk_rec *r, struct rk_thread *t,
				     const struct rk_signal *s)
{
	uid_t reader = 0;
	int can = rk_access_task_reader((pid_t)t->tgid, (pid_t)t->tid, &reader) == 1;
	int last = t->last_switch;
	struct rk_thread *n;

	if (!t->reader || (can && (uint64_t)reader + 1 == t->reader))
		return t;
	thread_finish(r, t, RK_THREAD_EXECED);
	n = thread_new(r, t->tid, t->tgid, 0, s->comm, s->time_ns);
	if (!n)
		return NULL;
	r->st->threads--; /* the same thread, in a second file */
	r->st->exec_rotated++;
	n->last_switch = last;
	if (last == RK_SIG_SWITCH_IN)
		thread_pin(r, n, 1, s->time_ns);
	return n;
}

static void handle_signal(struct rk_rec *r, const struct rk_signal *s);

static int on_signal(void *ctx, void *data, size_t size)
{
	struct rk_rec *r = ctx;
	const struct rk_signal *s = data;

	if (size < sizeof(*s))
		return 0;
	r->st->signals++;
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
		handle_signal(r, &out);
		handle_signal(r, &in);
		return 0;
	}
	handle_signal(r, s);
	return 0;
}

static void handle_signal(struct rk_rec *r, const struct rk_signal *s)
{
	struct rk_thread *t;

	t = thread_find(r, s->tid);
	if (t && t->refused)
		return; /* over a limit: not traced, already counted */
	if (s->kind == RK_SIG_FORK) {
		struct {
			struct perf_event_header h;
			__u32 pid, ppid, tid, ptid;
			__u64 time;
			struct sample_id id;
		} fr = { 0 };
		struct rk_thread *parent = thread_find(r, s->ptid);

		t = thread_new(r, s->tid, s->tgid, s->uid, s->comm, s->time_ns);
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
		fr.h.type = PERF_RECORD_FORK;
		fr.h.size = sizeof(fr);
		fr.pid = s->tgid;
		fr.ppid = parent ? parent->tgid : 0;
		fr.tid = s->tid;
		fr.ptid = s->ptid;
		fr.time = s->time_ns;
		fill_id(&fr.id, t, s);
		put_rec(r, t, &fr, sizeof(fr));
		return;
	}
	if (!t || t->dead) {
		/* Tracked before we made its file (attach race): make it now. */
		if (s->kind != RK_SIG_SWITCH_IN && s->kind != RK_SIG_EXEC)
			return;
		t = thread_new(r, s->tid, s->tgid, s->uid, s->kind == RK_SIG_EXEC ? s->comm : "",
			       s->time_ns);
		if (!t)
			return;
	}
	switch (s->kind) {
	case RK_SIG_SWITCH_IN:
	case RK_SIG_SWITCH_OUT: {
		struct {
			struct perf_event_header h;
			struct sample_id id;
		} sw = { 0 };

		sw.h.type = PERF_RECORD_SWITCH;
		sw.h.size = sizeof(sw);
		if (s->kind == RK_SIG_SWITCH_OUT) {
			sw.h.misc = PERF_RECORD_MISC_SWITCH_OUT;
			if (s->flags & RK_SIGF_PREEMPT)
				sw.h.misc |= PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
		}
		fill_id(&sw.id, t, s);
		put_rec(r, t, &sw, sizeof(sw));
		r->st->switches++;
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
			thread_pin(r, t, 1, s->time_ns);
		} else {
			if ((s->flags & RK_SIGF_DEAD) && !SCHED_BF(t)->id.exit_ns)
				thread_ident(r, t, NULL, 0, 1, SCHED_BF(t)->id.exit_code,
					     s->time_ns);
			defer_off(r, t, s->time_ns, s->flags & RK_SIGF_DEAD ? RK_THREAD_EXITED : 0);
		}
		break;
	}
	case RK_SIG_EXEC: {
		struct {
			struct perf_event_header h;
			__u32 pid, tid;
			char comm[RK_COMM_LEN];
			struct sample_id id;
		} cr = { 0 };

		t = exec_access(r, t, s);
		if (!t)
			break;
		cr.h.type = PERF_RECORD_COMM;
		cr.h.misc = PERF_RECORD_MISC_COMM_EXEC;
		cr.h.size = sizeof(cr);
		cr.pid = t->tgid;
		cr.tid = t->tid;
		memcpy(cr.comm, s->comm, sizeof(cr.comm));
		cr.comm[RK_COMM_LEN - 1] = '\0';
		fill_id(&cr.id, t, s);
		put_rec(r, t, &cr, sizeof(cr));
		thread_ident(r, t, cr.comm, 0, 0, 0, 0);
		if (s->ptid != s->tid) {
			/* A non-leader exec'd and took over this tid. */
			struct rk_thread *old = thread_find(r, s->ptid);

			if (old && !old->dead)
				defer_off(r, old, s->time_ns, RK_THREAD_EXITED);
		}
		break;
	}
	case RK_SIG_EXIT: {
		struct {
			struct perf_event_header h;
			__u32 pid, ppid, tid, ptid;
			__u64 time;
			struct sample_id id;
		} er = { 0 };

		er.h.type = PERF_RECORD_EXIT;
		er.h.size = sizeof(er);
		er.pid = t->tgid;
		er.tid = t->tid;
		er.ppid = er.pid;
		er.ptid = er.tid;
		er.time = s->time_ns;
		fill_id(&er.id, t, s);
		put_rec(r, t, &er, sizeof(er));
		thread_ident(r, t, NULL, RK_THREAD_EXITING, 1, s->exit_code, s->time_ns);
		break;
	}
	}
}

/* The state letter of /proc/PID/stat, or 0. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	return p && p[1] == ' ' ? p[2] : 0;
}

/*
 * The sessions' root: created if its parent exists (one level, never a
 * whole path a typo made up), and it must be root's and writable by root
 * only (or sticky), or whoever can write it could swap a session directory for a
 * symlink and have us create files where they choose.
 */
static int root_dir(const char *root)
{
	struct stat st;

	if (mkdir(root, 0755) && errno != EEXIST) {
		int err = -errno;

		rk_err("cannot create --root %s: %s%s", root, strerror(errno),
		       errno == ENOENT ? " (its parent does not exist: create it first)" : "");
		return err;
	}
	if (lstat(root, &st)) {
		int err = -errno;

		rk_err("cannot stat --root %s: %s", root, strerror(errno));
		return err;
	}
	/*
	 * A sticky directory (/dev/shm itself) is fine: nobody else can rename
	 * or remove what we create in it, and mkdir refuses a name taken.
	 */
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH) && !(st.st_mode & S_ISVTX))) {
		rk_err("refusing --root %s: %s; it must be a directory owned by root and "
		       "writable by root only, or sticky (remove it, or pick another --root)",
		       root,
		       !S_ISDIR(st.st_mode) ? "not a directory (or a symlink)" :
		       st.st_uid	    ? "owned by another user" :
					      "writable by group or others, not sticky");
		return -EPERM;
	}
	return 0;
}

/* A kernel thread has no user space to trace: PF_KTHREAD in /proc/PID/stat. */
static int is_kthread(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long flags = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	/* After the comm: state ppid pgrp session tty_nr tpgid flags. */
	for (i = 0; p && i < 7; i++)
		p = strchr(p + 1, ' ');
	if (p)
		flags = strtoul(p + 1, NULL, 10);
	return !!(flags & 0x00200000 /* PF_KTHREAD */);
}

/*
 * The event loop runs SCHED_FIFO: with thousands of runnable threads, a
 * fair share is too little to keep up with their switches and the BPF
 * ringbuf overflows (measured: 68% of 1.4M signals dropped at 4,096
 * threads on 2 CPUs, 0 with FIFO). Its work is bounded by the signals it
 * is given; the kernel's RT throttling still bounds it. Not inherited by
 * the command we launch (SCHED_RESET_ON_FORK). The pin workers run at the
 * same priority (rk_pin_opts.rt_prio): below it, one preempted while it
 * holds the pool's lock or the mm lock stalls the loop (seen: half the
 * runs at 4,096 threads dropped 30-70% of their signals).
 */
static void realtime(const struct rk_record_opts *o)
{
	struct sched_param sp = { .sched_priority = o->rt_prio };

	if (!o->rt_prio)
		return;
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp))
		rk_warn("cannot run the event loop at SCHED_FIFO %d: %s; with many busy threads "
			"signals may be dropped (stat: signals dropped)",
			o->rt_prio, strerror(errno));
}

/*
 * Under a memory cgroup limit, commit at most three quarters of the room
 * left at start to buffer files (at their full size, the most they can
 * take): the rest is for our own memory and the page cache. Threads beyond
 * it are not traced, counted, and the recorder is never the OOM victim.
 */
static void memory_cap(struct rk_rec *r)
{
	uint64_t room, limit;
	char cg[512], b1[32], b2[32];

	if (rk_memcg_headroom(&room, &limit, cg, sizeof(cg)) != 1)
		return;
	r->mem_cap = room / 4 * 3;
	rk_info("memory cgroup %s: limit %s, buffers capped at %s", cg,
		rk_fmt_size(limit, b1, sizeof(b1)), rk_fmt_size(r->mem_cap, b2, sizeof(b2)));
	if (r->mem_cap < thread_bytes(r))
		rk_warn("memory cgroup %s leaves room for no thread's buffers (%s left of %s): "
			"raise its limit or use a smaller -m",
			cg, rk_fmt_size(room, b1, sizeof(b1)), rk_fmt_size(limit, b2, sizeof(b2)));
}

static int ensure_fs(const char *path, long magic, const char *type)
{
	struct statfs sfs;

	if (!statfs(path, &sfs) && sfs.f_type == magic)
		return 0;
	if (mount(type, path, type, 0, NULL)) {
		int err = -errno;

		rk_err("%s is not mounted at %s and mounting it failed: %s "
		       "(run: mount -t %s %s %s)",
		       type, path, strerror(errno), type, type, path);
		return err;
	}
	rk_info("mounted %s at %s", type, path);
	return 0;
}

static int take_lock(struct rk_rec *r)
{
	char buf[32];
	int fd = open(RK_LOCK_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0) {
		rk_err("cannot open %s: %s", RK_LOCK_FILE, strerror(errno));
		return -errno;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

		buf[n > 0 ? n : 0] = '\0';
		rk_err("another ringkeeper record is running (pid %s); one recorder owns %s at a time",
		       n > 0 ? strtok(buf, "\n") : "?", RK_BPFFS_DIR);
		close(fd);
		return -EBUSY;
	}
	if (ftruncate(fd, 0) == 0) {
		int n = snprintf(buf, sizeof(buf), "%d\n", getpid());

		if (pwrite(fd, buf, (size_t)n, 0) != n)
			rk_info("cannot write %s", RK_LOCK_FILE);
	}
	r->lock_fd = fd;
	return 0;
}

static const char *const link_names[] = { "link_sched_switch", "link_fork", "link_exec",
					  "link_exit" };

/*
 * Detach the programs: a pinned link holds them attached, so the pins go
 * first, then our link fds (closed by the skeleton or by the caller).
 */
static void unpin_links(void)
{
	char path[128];
	size_t i;

	for (i = 0; i < sizeof(link_names) / sizeof(link_names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", RK_BPFFS_DIR, link_names[i]);
		unlink(path);
	}
}

static void unpin_maps(void)
{
	unpin_links();
	unlink(RK_BPFFS_DIR "/pmu_info");
	unlink(RK_BPFFS_DIR "/counters");
	unlink(RK_BPFFS_DIR "/signals");
	rmdir(RK_BPFFS_DIR);
}

/*
 * Links and the signal ringbuf pinned too: if we are killed, the programs go
 * on and their signals wait in the ringbuf for `record --resume`.
 */
static int pin_links(struct rk_rec *r)
{
	struct bpf_link *links[] = { r->skel->links.rk_sched_switch, r->skel->links.rk_fork,
				     r->skel->links.rk_exec, r->skel->links.rk_exit };
	char path[128];
	size_t i;
	int err;

	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", RK_BPFFS_DIR, link_names[i]);
		err = bpf_link__pin(links[i], path);
		if (err) {
			rk_err("cannot pin %s: %s", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

static int pin_maps(struct rk_rec *r)
{
	int err;

	if (mkdir(RK_BPFFS_DIR, 0700) && errno != EEXIST) {
		err = -errno;
		rk_err("cannot create %s: %s", RK_BPFFS_DIR, strerror(errno));
		return err;
	}
	/* We hold the lock: anything pinned here is a dead recorder's. */
	if (!access(RK_BPFFS_DIR "/signals", F_OK))
		rk_warn("removing what a killed recorder left pinned in %s (its session could "
			"have been continued with --resume)",
			RK_BPFFS_DIR);
	unpin_links();
	unlink(RK_BPFFS_DIR "/pmu_info");
	unlink(RK_BPFFS_DIR "/counters");
	unlink(RK_BPFFS_DIR "/signals");
	err = bpf_map__pin(r->skel->maps.pmu_info, RK_BPFFS_DIR "/pmu_info");
	if (!err)
		err = bpf_map__pin(r->skel->maps.counters, RK_BPFFS_DIR "/counters");
	if (!err)
		err = bpf_map__pin(r->skel->maps.signals, RK_BPFFS_DIR "/signals");
	if (err) {
		rk_err("cannot pin maps in %s: %s", RK_BPFFS_DIR, strerror(-err));
		unpin_maps();
		return err;
	}
	r->maps_pinned = 1;
	return 0;
}

/*
 * Trace @tid: its files, its pmu_info entries (perf sources first, sched
 * last: the fork hook copies a parent's sources once sched is there), and
 * its perf events on every CPU.
 * Return: 0, -ESRCH if it is gone, or -errno (reported).
 */
static int track(struct rk_rec *r, __u32 tgid, __u32 tid, const char *comm)
{
	struct rk_pmu_key key = { .tid = tid };
	struct rk_thread *t;
	char msg[256];
	__u64 refused;
	int err, k;

	refused = r->st->not_traced;
	t = thread_find(r, tid);
	if (t && t->refused)
		return 0; /* refused before: counted then */
	t = thread_new(r, tid, tgid, 0, comm, rk_now_mono_ns());
	if (!t && r->st->not_traced != refused)
		return 0; /* over a limit: counted, the others are traced */
	if (!t)
		return -errno ? -errno : -ENOMEM;
	for (k = nsrc(r) - 1; k >= 0; k--) {
		key.src = (__u32)k;
		err = bpf_map_update_elem(r->pmu_fd, &key, src_entry(r, k), BPF_NOEXIST);
		if (err && errno != EEXIST) {
			err = -errno;
			rk_err("cannot add tid %u to the pmu_info map: %s", tid, strerror(errno));
			return err;
		}
	}
	if (!r->drain)
		return 0;
	err = rk_drain_open_task(r->drain, (int)tid, msg, sizeof(msg));
	if (err == -ESRCH)
		return err;
	if (err) {
		rk_err("%s", msg);
		return err;
	}
	r->st->nfds = (__u32)rk_drain_nfds(r->drain);
	return 0;
}

/* The per-process buffer of records with no single thread owner. */
static struct rk_bufile *sideband_for(struct rk_rec *r, __u32 pid)
{
	struct rk_thread_ident id = { 0 };
	char path[PATH_MAX + 64];
	struct rk_proc *p;

	for (p = r->procs; p; p = p->next)
		if (p->pid == pid)
			return p->bf;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	id.tid = id.tgid = id.ns_tid = pid;
	id.start_ns = rk_now_mono_ns();
	proc_ids(pid, pid, &id.uid, &id.ns_tid, id.comm);
	snprintf(path, sizeof(path), "%s/%s/%u", r->dir, RK_SIDEBAND_DIR, pid);
	move_aside(path, pid);
	p->bf = rk_bufile__create(path, r->o->data_size < (1u << 20) ? 1u << 20 : r->o->data_size,
				  0, &r->o->evs[0].entry, &id);
	if (!p->bf) {
		if (!r->st->file_errors)
			rk_err("cannot create sideband file %s: %s", path, strerror(errno));
		r->st->file_errors++;
		free(p);
		return NULL;
	}
	{
		uid_t reader = 0;

		grant(r, path, rk_access_task_reader((pid_t)pid, (pid_t)pid, &reader) == 1, reader);
	}
	p->pid = pid;
	p->next = r->procs;
	r->procs = p;
	return p->bf;
}

static void put_sideband(struct rk_rec *r, __u32 pid, const struct perf_event_header *h)
{
	struct rk_bufile *bf = sideband_for(r, pid);

	if (!bf || rk_bufile__write(bf, h, h->size)) {
		r->st->lost++;
		return;
	}
	r->st->sideband++;
}

/*
 * PERF_RECORD_AUX: the range of the CPU's AUX ring it names goes into the
 * AUX area of its thread's file (tid from sample_id: the task the AUX
 * event ran for), the record itself into the data ring.
 */
static void route_aux(struct rk_rec *r, const struct rk_evsel *ev,
		      const struct perf_event_header *h, __u32 pid, __u32 tid)
{
	struct rk_aux_chunk ck;
	struct rk_thread *t;
	int err;

	r->st->aux_records++;
	err = rk_drain_aux_chunk(r->drain, h, &ck);
	if (ck.flags & PERF_AUX_FLAG_TRUNCATED)
		r->st->aux_truncated++;
	if (!err && ev && ev->aux && tid != (__u32)-1) {
		t = thread_find(r, tid);
		if (!t)
			t = thread_new(r, tid, pid, 0, "", rk_now_mono_ns());
		if (t && !t->refused && !t->dead &&
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

/* A drained perf record: to its thread's file, or to its process's sideband. */
static void route(void *ctx, const struct rk_evsel *ev, const struct perf_event_header *h,
		  __u32 pid, __u32 tid)
{
	struct rk_rec *r = ctx;
	struct rk_thread *t;
	__u32 body_pid;

	r->st->perf_records++;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		if (!ev || tid == (__u32)-1) {
			r->st->lost++;
			return;
		}
		t = thread_find(r, tid);
		if (t && t->refused)
			return; /* not traced (a limit), already counted */
		if (t && t->dead) {
			r->st->lost++;
			return;
		}
		if (!t) {
			/* Inherited by the kernel but not (yet) known to BPF. */
			t = thread_new(r, tid, pid, 0, "", rk_now_mono_ns());
			if (!t) {
				r->st->lost++;
				return;
			}
		}
		put_rec_src(r, t, ev->src, h, h->size);
		return;
	case PERF_RECORD_LOST: {
		__u64 n = 0;

		if (h->size >= sizeof(*h) + 16)
			memcpy(&n, (const __u8 *)h + sizeof(*h) + 8, 8);
		r->st->perf_lost += n;
		t = tid != (__u32)-1 ? thread_find(r, tid) : NULL;
		if (t && !t->dead) {
			int k = ev ? ev->src : 1;

			put_rec_src(r, t, k, h, h->size);
			t->b[k].bf->id.lost += n;
			rk_bufile__publish_ident(t->b[k].bf);
		}
		return;
	}
	case PERF_RECORD_AUX:
		route_aux(r, ev, h, pid, tid);
		return;
	case PERF_RECORD_ITRACE_START:
		/* Which task a CPU's AUX data starts with: the thread's own file. */
		t = ev && ev->aux && tid != (__u32)-1 ? thread_find(r, tid) : NULL;
		if (t && !t->dead && !t->refused)
			put_rec_src(r, t, ev->src, h, h->size);
		return;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (h->size < sizeof(*h) + 4)
			return;
		memcpy(&body_pid, (const __u8 *)h + sizeof(*h), 4);
		put_sideband(r, body_pid, h);
		return;
	default:
		if (pid != (__u32)-1)
			put_sideband(r, pid, h);
		else
			r->st->lost++;
	}
}

/* sample_id of the tracking source, for records we synthesize (perf does the same). */
static size_t synth_sample_id(struct rk_rec *r, __u8 *p, __u32 pid, __u32 tid)
{
	const struct rk_perf_event_attr *a = &r->o->evs[0].entry.attr;
	__u64 now = rk_now_mono_ns(), id = rk_drain_tracking_id(r->drain);
	__u8 *start = p;
	__u32 cpu[2] = { 0, 0 };

	if (a->sample_type & PERF_SAMPLE_TID) {
		memcpy(p, &pid, 4);
		memcpy(p + 4, &tid, 4);
		p += 8;
	}
	if (a->sample_type & PERF_SAMPLE_TIME) {
		memcpy(p, &now, 8);
		p += 8;
	}
	if (a->sample_type & PERF_SAMPLE_CPU) {
		memcpy(p, cpu, 8);
		p += 8;
	}
	if (a->sample_type & PERF_SAMPLE_IDENTIFIER) {
		memcpy(p, &id, 8);
		p += 8;
	}
	return (size_t)(p - start);
}

/*
 * Threads and mappings that existed before we attached, as perf record
 * synthesizes them: a COMM per thread and an MMAP2 per executable mapping.
 */
static void synthesize(struct rk_rec *r, pid_t pid)
{
	union {
		struct perf_event_header h;
		__u8 b[8192];
	} rec;
	struct rk_thread *t;
	char path[64], line[4096 + 256];
	FILE *f;

	for (t = r->all; t; t = t->all_next) {
		size_t n;

		if (t->tgid != (__u32)pid || t->dead)
			continue;
		memset(&rec, 0, sizeof(rec));
		rec.h.type = PERF_RECORD_COMM;
		memcpy(rec.b + 8, &t->tgid, 4);
		memcpy(rec.b + 12, &t->tid, 4);
		memcpy(rec.b + 16, SCHED_BF(t)->id.comm, RK_COMM_LEN);
		rec.b[16 + RK_COMM_LEN - 1] = '\0';
		n = 16 + RK_COMM_LEN;
		n += synth_sample_id(r, rec.b + n, t->tgid, t->tid);
		rec.h.size = (__u16)n;
		put_sideband(r, (__u32)pid, &rec.h);
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff, ino;
		unsigned int maj, min;
		char perms[8], *name;
		__u32 prot = 0, flags, p32 = (__u32)pid;
		__u64 v;
		size_t n, len;
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff,
			   &maj, &min, &ino, &pos) < 7 ||
		    perms[2] != 'x')
			continue;
		name = line + pos;
		name[strcspn(name, "\n")] = '\0';
		if (!*name)
			name = "//anon";
		prot = (perms[0] == 'r' ? 1 : 0) | (perms[1] == 'w' ? 2 : 0) | 4;
		flags = perms[3] == 's' ? 1 /* MAP_SHARED */ : 2 /* MAP_PRIVATE */;
		memset(&rec, 0, sizeof(rec));
		rec.h.type = PERF_RECORD_MMAP2;
		rec.h.misc = PERF_RECORD_MISC_USER;
		n = 8;
		memcpy(rec.b + n, &p32, 4);
		memcpy(rec.b + n + 4, &p32, 4);
		n += 8;
		v = start;
		memcpy(rec.b + n, &v, 8);
		v = end - start;
		memcpy(rec.b + n + 8, &v, 8);
		v = pgoff;
		memcpy(rec.b + n + 16, &v, 8);
		n += 24;
		memcpy(rec.b + n, &maj, 4);
		memcpy(rec.b + n + 4, &min, 4);
		v = ino;
		memcpy(rec.b + n + 8, &v, 8);
		n += 24; /* maj, min, ino, ino_generation */
		memcpy(rec.b + n, &prot, 4);
		memcpy(rec.b + n + 4, &flags, 4);
		n += 8;
		len = strlen(name);
		if (len > 4000)
			continue;
		memcpy(rec.b + n, name, len + 1);
		n += (len + 1 + 7) & ~(size_t)7;
		n += synth_sample_id(r, rec.b + n, (__u32)pid, (__u32)pid);
		rec.h.size = (__u16)n;
		put_sideband(r, (__u32)pid, &rec.h);
	}
	fclose(f);
}

/* Add every thread of @pid; repeat until a pass finds none new (threads born meanwhile). */
static int attach_pid(struct rk_rec *r, pid_t pid)
{
	char path[64];
	int pass, added, err;

	for (pass = 0; pass < 16; pass++) {
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		d = opendir(path);
		if (!d) {
			err = -errno;
			rk_err("cannot read the threads of pid %d: %s", pid,
			       errno == ENOENT ? "no such process" : strerror(errno));
			return err;
		}
		added = 0;
		while ((de = readdir(d))) {
			__u32 tid = (__u32)strtoul(de->d_name, NULL, 10);

			/* Known: traced already, or refused by a limit (counted once). */
			if (!tid || (thread_find(r, tid) &&
				     (!thread_find(r, tid)->dead || thread_find(r, tid)->refused)))
				continue;
			err = track(r, (__u32)pid, tid, NULL);
			if (err == -ESRCH)
				continue; /* exited meanwhile: nothing to trace */
			if (err) {
				closedir(d);
				return err;
			}
			added++;
		}
		closedir(d);
		if (!added && pass)
			return 0;
		if (!added && !pass) {
			rk_err("pid %d exited while we attached: nothing to trace", pid);
			return -ESRCH;
		}
	}
	return 0;
}

static pid_t launch(char **argv, const sigset_t *oldmask, int *go_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC)) {
		rk_err("pipe: %s", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		rk_err("fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return err;
	}
	if (!pid) {
		char c;

		close(p[1]);
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		/* Wait until our tid is in the tracked set, then become CMD. */
		if (read(p[0], &c, 1) != 1)
			_exit(126);
		execvp(argv[0], argv);
		fprintf(stderr, "ringkeeper: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

/* The kernel's view of what we hold locked, kept at its peak. */
static void note_vmlck(struct rk_rec *r)
{
	int64_t kb = rk_proc_vmlck_kb(getpid());

	if (kb > 0 && (__u64)kb * 1024 > r->st->vmlck_peak)
		r->st->vmlck_peak = (__u64)kb * 1024;
}

/*
 * Runs of our programs the kernel skipped (recursion on a CPU): their
 * events were not seen at all, so they are counted, never silent.
 */
static void prog_misses(struct rk_rec *r)
{
	__u64 sum = 0;
	int i;

	for (i = 0; i < RK_NPROGS; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		if (r->prog_fds[i] < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(r->prog_fds[i], &info, &len))
			sum += info.recursion_misses;
	}
	r->st->bpf_prog_misses = sum;
}

/* The programs behind our links (the skeleton's, or the pinned ones on resume). */
static void find_progs(struct rk_rec *r)
{
	int i, n = 0;

	if (r->skel) {
		const struct bpf_program *progs[RK_NPROGS] = {
			r->skel->progs.rk_sched_switch,
			r->skel->progs.rk_fork,
			r->skel->progs.rk_exec,
			r->skel->progs.rk_exit,
		};

		for (i = 0; i < RK_NPROGS; i++) {
			int fd = bpf_program__fd(progs[i]);

			r->prog_fds[i] = fd >= 0 ? dup(fd) : -1;
		}
		return;
	}
	for (i = 0; i < r->nlinks && n < RK_NPROGS; i++) {
		struct bpf_link_info li;
		__u32 len = sizeof(li);

		memset(&li, 0, sizeof(li));
		if (bpf_obj_get_info_by_fd(r->link_fds[i], &li, &len))
			continue;
		r->prog_fds[n++] = bpf_prog_get_fd_by_id(li.prog_id);
	}
}

/* User + system CPU time of the whole loader. */
static uint64_t loader_cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

static void publish(struct rk_rec *r)
{
	__u64 vals[256];
	struct rk_pin_stats ps;
	__u32 k;

	for (k = 0; k < RK_CNT_MAX && r->ncpus <= 256; k++) {
		__u64 sum = 0;
		unsigned int c;

		if (bpf_map_lookup_elem(r->cnt_fd, &k, vals))
			continue;
		for (c = 0; c < (unsigned int)libbpf_num_possible_cpus() && c < 256; c++)
			sum += vals[c];
		switch (k) {
		case RK_CNT_SIGNALS:
			r->st->bpf_signals = sum;
			break;
		case RK_CNT_DROPS:
			r->st->bpf_drops = sum;
			break;
		case RK_CNT_FORKS:
			r->st->bpf_forks = sum;
			break;
		case RK_CNT_FORK_FAIL:
			r->st->bpf_fork_fail = sum;
			break;
		case RK_CNT_EXITS:
			r->st->bpf_exits = sum;
			break;
		}
	}
	prog_misses(r);
	rk_pin_pool__stats(r->pool, &ps);
	r->st->pins = ps.pins;
	r->st->unpins = ps.unpins;
	r->st->refusals = ps.refusals;
	r->st->evictions = ps.evictions;
	r->st->lock_errors = ps.lock_errors;
	r->st->coalesced = ps.coalesced;
	r->st->pins_skipped_short = ps.skipped_short;
	r->st->locked = ps.locked;
	r->st->locked_peak = ps.peak;
	r->st->pin_lat_n = ps.lat_n;
	r->st->pin_hot = ps.lat_hot;
	r->st->pin_lat_p50_ns = ps.lat_p50_ns;
	r->st->pin_lat_p99_ns = ps.lat_p99_ns;
	r->st->oncpu_ns = ps.oncpu_ns;
	r->st->oncpu_pinned_ns = ps.oncpu_pinned_ns;
	r->st->loader_cpu_ns = loader_cpu_ns();
	note_vmlck(r);
	{
		int64_t kb = rk_proc_status_kb(getpid(), "VmHWM:");

		if (kb > 0)
			r->st->loader_rss = (uint64_t)kb * 1024;
	}
	r->st->update_ns = rk_now_real_ns();
}

/* Sample VmLck whenever pins happened: the kernel's view, next to our accounting. */
static void sample_vmlck(struct rk_rec *r)
{
	struct rk_pin_stats ps;

	rk_pin_pool__stats(r->pool, &ps);
	if (ps.pins == r->last_pins)
		return;
	r->last_pins = ps.pins;
	note_vmlck(r);
}

static int live_threads_of(struct rk_rec *r, __u32 tgid)
{
	struct rk_thread *t;
	int n = 0;

	for (t = r->all; t; t = t->all_next)
		n += !t->dead && t->tgid == tgid;
	return n;
}

static int open_target_pidfd(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return -errno;
	return fd;
}

/*
 * Free the threads whose buffers are all finished and unmapped, so an
 * always-on recorder's memory follows the live threads, not all it saw.
 * Refused markers stay: they keep queued signals from counting twice.
 */
static void reclaim(struct rk_rec *r)
{
	struct rk_thread **pp = &r->all, *t;

	while ((t = *pp)) {
		struct rk_thread **hp;

		if (!t->dead || t->refused || t->pending ||
		    __atomic_load_n(&t->unreleased, __ATOMIC_ACQUIRE)) {
			pp = &t->all_next;
			continue;
		}
		for (hp = &r->buckets[t->tid % NBUCKETS]; *hp && *hp != t; hp = &(*hp)->hnext)
			;
		if (*hp)
			*hp = t->hnext;
		*pp = t->all_next;
		free(t);
	}
}

/*
 * Drain the per-CPU perf rings (after the BPF signals, so the threads the
 * records belong to are known), then let go of what went off CPU.
 */
static void drain(struct rk_rec *r)
{
	uint64_t gen = ++r->drain_gen;

	if (r->drain) {
		rk_drain_all(r->drain, route, r);
		/* Signals of threads born while we drained. */
		ring_buffer__consume(r->rb);
	}
	apply_deferred(r, gen);
}

static int event_loop(struct rk_rec *r, int sfd, int tfd, int pidfd)
{
	struct epoll_event ev, evs[4];
	uint64_t deadline = r->o->duration_ns ? rk_now_mono_ns() + r->o->duration_ns : 0;
	unsigned int ticks = 0;
	int ep, err = 0;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return -errno;
	ev.events = EPOLLIN;
	ev.data.u32 = 0;
	epoll_ctl(ep, EPOLL_CTL_ADD, ring_buffer__epoll_fd(r->rb), &ev);
	ev.data.u32 = 1;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	ev.data.u32 = 2;
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	if (pidfd >= 0) {
		ev.data.u32 = 3;
		epoll_ctl(ep, EPOLL_CTL_ADD, pidfd, &ev);
	}
	if (r->drain) {
		int c;

		/* The per-CPU rings wake us at their watermark (half full). */
		ev.data.u32 = 4;
		for (c = 0; c < rk_drain_ncpus(r->drain); c++)
			if (rk_drain_ring_fd(r->drain, c) >= 0)
				epoll_ctl(ep, EPOLL_CTL_ADD, rk_drain_ring_fd(r->drain, c), &ev);
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

			switch (evs[i].data.u32) {
			case 1:
				if (read(sfd, &si, sizeof(si)) == sizeof(si) &&
				    si.ssi_signo != SIGCHLD)
					stop = 1;
				break;
			case 2:
				if (read(tfd, &exp, sizeof(exp)) != sizeof(exp))
					exp = 0;
				break;
			case 3:
				if (!r->target_exited) {
					r->target_exited = 1;
					r->drain_deadline = rk_now_mono_ns() + RK_DRAIN_NS;
					epoll_ctl(ep, EPOLL_CTL_DEL, pidfd, NULL);
				}
				break;
			}
		}
		/* Consume everything, including rings epoll did not report (NO_WAKEUP). */
		if (ring_buffer__consume(r->rb) < 0 && errno != EINTR)
			rk_warn("ring_buffer__consume: %s", strerror(errno));
		drain(r);
		now = rk_now_mono_ns();
		rk_pin_tick(r->pool, now);
		sample_vmlck(r);
		if (++ticks % 20 == 0) {
			publish(r);
			reclaim(r);
		}
		if (stop)
			break;
		if (deadline && now >= deadline)
			break;
		if (r->target_exited &&
		    (now >= r->drain_deadline || !live_threads_of(r, (__u32)r->target)))
			break;
	}
	close(ep);
	return err;
}

static void make_session_name(struct rk_rec *r)
{
	struct tm tm;
	time_t now = time(NULL);
	char ts[32];

	if (r->o->session) {
		snprintf(r->session, sizeof(r->session), "%s", r->o->session);
		return;
	}
	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y%m%d-%H%M%S", &tm);
	snprintf(r->session, sizeof(r->session), "%s-%d", ts, getpid());
}

/* Map the session's stat file: a new one, or (resume) the one left behind. */
static int stat_open(struct rk_rec *r, int create)
{
	char path[PATH_MAX + 16];
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", r->dir, RK_STAT_FILE);
	fd = open(path, create ? O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC : O_RDWR | O_CLOEXEC, 0644);
	if (fd < 0 || (create && ftruncate(fd, sizeof(*r->st)))) {
		err = -errno;
		rk_err("cannot %s %s: %s", create ? "create" : "open", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return err;
	}
	r->st = mmap(NULL, sizeof(*r->st), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r->st == MAP_FAILED) {
		r->st = NULL;
		err = -errno;
		rk_err("cannot map %s: %s", path, strerror(errno));
		return err;
	}
	return 0;
}

/*
 * --resume: take over a session whose recorder was killed. Its programs ran
 * on (pinned links) and their signals wait in the pinned ringbuf; the
 * session's options come from its stat file.
 */
static int resume_session(struct rk_rec *r)
{
	struct rk_record_opts *o = &r->ro;
	struct rk_session_stat cur;
	char path[128];
	size_t i;
	int err;

	snprintf(r->session, sizeof(r->session), "%s", o->resume);
	snprintf(r->dir, sizeof(r->dir), "%s/%s", o->root, r->session);
	err = rk_session_stat_read(r->dir, &cur);
	if (err) {
		rk_err("no session %s in %s to resume (%s)", r->session, o->root,
		       err == -EBADMSG ? "unreadable stat file" : strerror(-err));
		return err;
	}
	if (rk_session_alive(&cur)) {
		rk_err("session %s is still being recorded by pid %u", r->session, cur.loader_pid);
		return -EBUSY;
	}
	if (cur.state == RK_SESSION_ENDED) {
		rk_err("session %s ended normally: there is nothing to resume", r->session);
		return -EINVAL;
	}
	if (cur.nev) {
		rk_err("session %s also recorded perf events (-e %s): their kernel rings died with "
		       "the recorder, so only its sched history could continue; not resumed",
		       r->session, cur.events);
		return -EOPNOTSUPP;
	}
	r->pmu_fd = bpf_obj_get(RK_BPFFS_DIR "/pmu_info");
	r->cnt_fd = bpf_obj_get(RK_BPFFS_DIR "/counters");
	r->sig_fd = bpf_obj_get(RK_BPFFS_DIR "/signals");
	if (r->pmu_fd < 0 || r->cnt_fd < 0 || r->sig_fd < 0) {
		rk_err("nothing pinned in %s to resume from (the machine rebooted, or a new "
		       "recorder took over): session %s stays as it is",
		       RK_BPFFS_DIR, r->session);
		return -ENOENT;
	}
	for (i = 0; i < sizeof(link_names) / sizeof(link_names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", RK_BPFFS_DIR, link_names[i]);
		r->link_fds[r->nlinks] = bpf_obj_get(path);
		if (r->link_fds[r->nlinks] >= 0)
			r->nlinks++;
	}
	err = stat_open(r, 0);
	if (err)
		return err;
	o->data_size = r->st->data_size;
	o->budget = r->st->budget;
	o->inherit = (int)r->st->inherit;
	o->max_threads = r->st->max_threads;
	o->max_shm = r->st->max_shm;
	o->on_exit_drop = (int)r->st->on_exit_drop;
	o->pid = (pid_t)r->st->target_pid;
	o->nev = 0;
	r->drops_before = r->st->bpf_drops;
	r->st->loader_pid = (__u32)getpid();
	r->st->state = RK_SESSION_RUNNING;
	return 0;
}

/* Resume: every live thread's file becomes ours again, as it was. */
static int adopt_files(struct rk_rec *r)
{
	char dir[PATH_MAX + 16], path[PATH_MAX + 300];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s", r->dir, RK_SCHED_DIR);
	d = opendir(dir);
	if (!d)
		return -errno;
	r->st->threads_live = 0;
	while ((de = readdir(d))) {
		struct rk_bufile *bf;
		struct rk_thread *t;
		const char *msg = NULL;
		char *end;
		__u32 tid = (__u32)strtoul(de->d_name, &end, 10);

		if (!tid || *end)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		bf = rk_bufile__open_rw(path, &msg);
		if (!bf) {
			rk_warn("resume: leaving %s alone: %s", path, msg ? msg : strerror(errno));
			continue;
		}
		if (bf->ident->state != RK_THREAD_LIVE && bf->ident->state != RK_THREAD_EXITING) {
			rk_bufile__free(bf);
			continue;
		}
		t = calloc(1, sizeof(*t));
		if (!t) {
			rk_bufile__free(bf);
			closedir(d);
			return -ENOMEM;
		}
		t->tid = tid;
		t->tgid = bf->ident->tgid;
		t->uid = bf->ident->uid;
		/* Its pin state died with the old recorder. */
		bf->ident->pinned = 0;
		t->b[0].bf = bf;
		t->b[0].pin.addr = bf->base;
		t->b[0].pin.len = bf->map_size;
		t->b[0].pin.uid = t->uid;
		t->b[0].pin.owner = &t->b[0];
		t->b[0].pin.pinned_flag = &bf->ident->pinned;
		t->b[0].t = t;
		t->unreleased = 1;
		t->hnext = r->buckets[tid % NBUCKETS];
		r->buckets[tid % NBUCKETS] = t;
		t->all_next = r->all;
		r->all = t;
		r->st->threads_live++;
		n++;
	}
	closedir(d);
	return n;
}

/*
 * After the backlog: a thread still live in our books but neither in the
 * traced set nor on the system died while no recorder ran, and its last
 * signals were lost (ringbuf full): finish it, so it does not stay "live".
 */
static void finish_vanished(struct rk_rec *r)
{
	struct rk_thread *t;

	for (t = r->all; t; t = t->all_next) {
		struct rk_pmu_key key = { .tid = t->tid, .src = RK_SRC_SCHED };
		struct rk_pmu_entry v;
		char path[64], state;

		if (t->dead)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task/%u", t->tgid, t->tid);
		/* A zombie (not reaped yet) has exited too. */
		state = proc_state((pid_t)t->tid);
		if ((!access(path, F_OK) && state != 'Z' && state != 'X') ||
		    !bpf_map_lookup_elem(r->pmu_fd, &key, &v))
			continue;
		thread_finish(r, t, RK_THREAD_EXITED);
		r->st->outage_exited++;
	}
}

int rk_record(const struct rk_record_opts *opts)
{
	struct rk_rec *r;
	struct itimerspec its = { 0 };
	sigset_t mask, oldmask;
	int err, sfd = -1, tfd = -1, pidfd = -1, go_fd = -1, status = 0;
	pid_t child = 0;
	char path[PATH_MAX + 32];
	struct rk_pin_opts popts = { 0 };
	struct rk_pin_ops pops = { .release = release_buf };
	const struct rk_record_opts *o;
	struct rk_thread *t;
	int k, resumed = 0;

	if (geteuid() != 0) {
		rk_err("record needs root (CAP_BPF, CAP_PERFMON, CAP_IPC_LOCK): run it with sudo");
		return -EPERM;
	}
	/*
	 * Block the stop signals before any thread exists (the pin workers
	 * inherit the mask): a process-directed SIGINT must reach our
	 * signalfd, not kill us through a worker that does not block it.
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGHUP);
	/*
	 * A background job of a non-interactive shell starts with SIGINT
	 * ignored, and an ignored signal never reaches a signalfd.
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	r = calloc(1, sizeof(*r));
	if (!r) {
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		return -ENOMEM;
	}
	memset(r->prog_fds, -1, sizeof(r->prog_fds));
	r->ro = *opts;
	o = r->o = &r->ro;
	r->lock_fd = -1;
	r->pmu_fd = r->cnt_fd = r->sig_fd = -1;
	r->ncpus = rk_online_cpus();
	r->paranoid = rk_access_paranoid();
	err = rk_bufile_guard_init();
	if (err) {
		rk_err("cannot install the SIGBUS guard: %s", strerror(-err));
		goto out_free;
	}

	if (o->pid && !o->resume) {
		if (o->pid == getpid()) {
			rk_err("will not trace myself (pid %d)", o->pid);
			err = -EINVAL;
			goto out_free;
		}
		if (kill(o->pid, 0) && errno == ESRCH) {
			rk_err("no such process: %d", o->pid);
			err = -ESRCH;
			goto out_free;
		}
		if (is_kthread(o->pid)) {
			rk_err("pid %d is a kernel thread: it has no user space to trace", o->pid);
			err = -EINVAL;
			goto out_free;
		}
		if (proc_state(o->pid) == 'Z') {
			rk_err("pid %d has exited (a zombie not yet reaped): nothing to trace",
			       o->pid);
			err = -ESRCH;
			goto out_free;
		}
	}
	err = ensure_fs("/sys/fs/bpf", BPF_FS_MAGIC_, "bpf");
	if (err)
		goto out_free;
	/* tp_btf needs no tracefs; mount it anyway for users' other tools, without failing. */
	if (access("/sys/kernel/tracing/trace_pipe", F_OK))
		(void)ensure_fs("/sys/kernel/tracing", TRACEFS_MAGIC_, "tracefs");
	err = take_lock(r);
	if (err)
		goto out_free;
	if (o->resume) {
		err = resume_session(r);
		if (err)
			goto out_resume;
		resumed = 1;
		r->maps_pinned = 1; /* the killed recorder's pins, ours now */
		rk_pmu_sched_entry(&r->sched_entry);
		r->sched_entry.attr.inherit = o->inherit ? 1 : 0;
		r->file_size = rk_bufile_layout_size(o->data_size, 0);
		goto setup_pool;
	}
	rk_pmu_sched_entry(&r->sched_entry);
	r->sched_entry.attr.inherit = o->inherit ? 1 : 0;
	r->file_size = rk_bufile_layout_size(o->data_size, 0);

	make_session_name(r);
	err = root_dir(o->root);
	if (err)
		goto out_unlock;
	snprintf(r->dir, sizeof(r->dir), "%s/%s", o->root, r->session);
	snprintf(path, sizeof(path), "%s/%s", r->dir, RK_SCHED_DIR);
	if (!access(r->dir, F_OK)) {
		rk_err("session %s already exists in %s: pick another --session name", r->session,
		       o->root);
		err = -EEXIST;
		goto out_unlock;
	}
	if (mkdir(r->dir, 0755) || mkdir(path, 0755)) {
		err = -errno;
		rk_err("cannot create %s: %s", path, strerror(errno));
		goto out_unlock;
	}
	for (k = 1; k < nsrc(r); k++) {
		snprintf(path, sizeof(path), "%s/%s", r->dir, src_dir(r, k));
		if (mkdir(path, 0755)) {
			err = -errno;
			rk_err("cannot create %s: %s", path, strerror(errno));
			goto out_unlock;
		}
	}
	if (o->nev) {
		snprintf(path, sizeof(path), "%s/%s", r->dir, RK_SIDEBAND_DIR);
		if (mkdir(path, 0755)) {
			err = -errno;
			rk_err("cannot create %s: %s", path, strerror(errno));
			goto out_unlock;
		}
	}
	err = stat_open(r, 1);
	if (err)
		goto out_unlock;
	r->st->magic = RK_STAT_MAGIC;
	r->st->version = RK_STAT_VERSION;
	r->st->size = sizeof(*r->st);
	r->st->loader_pid = (__u32)getpid();
	r->st->state = RK_SESSION_RUNNING;
	r->st->nr_cpus = r->ncpus;
	r->st->start_ns = rk_now_real_ns();
	r->st->data_size = o->data_size;
	r->st->file_size = r->file_size;
	r->st->budget = o->budget;
	r->st->inherit = !!o->inherit;
	r->st->nev = (__u32)o->nev;
	r->st->max_threads = o->max_threads;
	r->st->max_shm = o->max_shm;
	r->st->on_exit_drop = (__u32)o->on_exit_drop;
	r->st->cpu_ring = o->nev ? o->cpu_ring : 0;
	r->st->aux_size = o->aux_size;
	r->st->cpu_aux = o->aux_size ? o->cpu_aux : 0;
	for (k = 0; k < o->nev; k++) {
		size_t len = strlen(r->st->events);

		snprintf(r->st->events + len, sizeof(r->st->events) - len, "%s%s", k ? "," : "",
			 o->evs[k].name);
	}
	if (o->pid) {
		snprintf(r->st->command, sizeof(r->st->command), "-p %d", o->pid);
	} else {
		size_t off = 0;
		int i;

		for (i = 0; o->argv[i] && off < sizeof(r->st->command) - 1; i++)
			off += (size_t)snprintf(r->st->command + off, sizeof(r->st->command) - off,
						"%s%s", i ? " " : "", o->argv[i]);
	}

	libbpf_set_print(libbpf_print);
	r->skel = ringkeeper_bpf__open();
	if (!r->skel) {
		err = -errno;
		rk_err("cannot open the BPF object: %s", strerror(errno));
		goto out_stat;
	}
	r->skel->rodata->cfg_inherit = o->inherit ? 1 : 0;
	r->skel->rodata->cfg_nr_src = (__u32)nsrc(r);
	r->skel->rodata->cfg_wakeup_watermark = o->ringbuf_size / 4;
	bpf_map__set_max_entries(r->skel->maps.signals, (__u32)o->ringbuf_size);
	/*
	 * --max-threads caps the live traced threads: a full map makes the
	 * fork hook leave the child out (counted as "children not added").
	 */
	bpf_map__set_max_entries(r->skel->maps.pmu_info,
				 (o->max_threads ? o->max_threads : RK_MAX_ENTRIES) *
					 (__u32)nsrc(r));
	err = ringkeeper_bpf__load(r->skel);
	if (err) {
		rk_err("cannot load the BPF programs: %s (the verifier log is above; "
		       "kernel needs BTF and tp_btf support, 5.8+)",
		       strerror(-err));
		goto out_skel;
	}
	r->pmu_fd = bpf_map__fd(r->skel->maps.pmu_info);
	r->cnt_fd = bpf_map__fd(r->skel->maps.counters);
	r->sig_fd = bpf_map__fd(r->skel->maps.signals);
	err = pin_maps(r);
	if (err)
		goto out_skel;

setup_pool:
	memory_cap(r);
	popts.workers = o->workers;
	popts.budget = o->budget;
	popts.linger_ns = o->linger_ns;
	popts.ops = &pops;
	popts.rt_prio = o->rt_prio;
	popts.min_run_ns = o->min_run_ns;
	r->pool = rk_pin_pool__new(&popts);
	if (!r->pool) {
		err = -errno;
		rk_err("cannot start the pin workers: %s", strerror(errno));
		goto out_maps;
	}
	r->st->workers = o->workers ? o->workers : r->ncpus;
	if (o->nev) {
		struct rlimit rl;

		/* One fd per thread, CPU and event: take what we are allowed. */
		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		r->drain = rk_drain__new(o->evs, o->nev, o->cpu_ring);
		if (!r->drain) {
			err = -errno;
			rk_err("cannot set up the perf rings: %s", strerror(errno));
			goto out_pool;
		}
		if (o->aux_size && rk_drain_set_aux(r->drain, o->cpu_aux)) {
			err = -EINVAL;
			rk_err("--cpu-aux: not a power of two of at least a page");
			goto out_pool;
		}
	}

	r->rb = ring_buffer__new(r->sig_fd, on_signal, r, NULL);
	if (!r->rb) {
		err = -errno;
		rk_err("cannot set up the BPF ringbuf consumer: %s", strerror(errno));
		goto out_pool;
	}

	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (sfd < 0 || tfd < 0) {
		err = -errno;
		rk_err("signalfd/timerfd: %s", strerror(errno));
		goto out_fds;
	}
	its.it_interval.tv_sec = (time_t)(o->tick_ns / 1000000000ull);
	its.it_interval.tv_nsec = (long)(o->tick_ns % 1000000000ull);
	its.it_value = its.it_interval;
	timerfd_settime(tfd, 0, &its, NULL);

	if (resumed) {
		int n = adopt_files(r);

		if (n < 0) {
			err = n;
			rk_err("resume: cannot read %s: %s", r->dir, strerror(-n));
			goto out_fds;
		}
		/* What happened while no recorder ran, then who vanished meanwhile. */
		ring_buffer__consume(r->rb);
		drain(r);
		finish_vanished(r);
		r->target = o->pid;
		pidfd = open_target_pidfd(o->pid);
		if (pidfd < 0) {
			r->target_exited = 1;
			r->drain_deadline = rk_now_mono_ns();
		}
		/* What the outage cost: drops since the dead recorder last published. */
		publish(r);
		r->st->outage_drops =
			r->st->bpf_drops > r->drops_before ? r->st->bpf_drops - r->drops_before : 0;
		fprintf(stderr, "ringkeeper: resumed session %s: %d live threads adopted",
			r->session, n);
		if (r->st->outage_exited)
			fprintf(stderr, ", %llu of them found exited meanwhile",
				(unsigned long long)r->st->outage_exited);
		fprintf(stderr, "\n");
		if (r->st->outage_drops)
			rk_warn("%llu signals were dropped while no recorder ran (the pinned ringbuf "
				"was full): switches and exits of that time are missing "
				"(--ringbuf-size)",
				(unsigned long long)r->st->outage_drops);
		goto ready;
	}
	err = ringkeeper_bpf__attach(r->skel);
	if (err) {
		rk_err("cannot attach the BPF programs: %s", strerror(-err));
		goto out_fds;
	}
	err = pin_links(r);
	if (err)
		goto out_fds;
	if (o->pid) {
		r->target = o->pid;
		pidfd = open_target_pidfd(o->pid);
		err = attach_pid(r, o->pid);
		if (err)
			goto out_fds;
		if (r->drain)
			synthesize(r, o->pid);
	} else {
		child = launch(o->argv, &oldmask, &go_fd);
		if (child < 0) {
			err = child;
			child = 0;
			goto out_fds;
		}
		r->target = child;
		pidfd = open_target_pidfd(child);
		err = track(r, (__u32)child, (__u32)child, NULL);
		if (err) {
			if (err == -ESRCH)
				rk_err("the command exited before it could be traced");
			kill(child, SIGKILL);
			goto out_fds;
		}
	}
	r->st->target_pid = (__u32)r->target;
ready:
	if (pidfd < 0 && !r->target_exited)
		rk_warn("pidfd_open(%d) failed: the recording stops on SIGINT/SIGTERM only",
			r->target);
	r->st->attach_cpu_ns = loader_cpu_ns();
	if (o->ready_fd >= 0 && write(o->ready_fd, "ready\n", 6) != 6)
		rk_info("cannot write to the ready fd");
	fprintf(stderr,
		"ringkeeper: recording session %s into %s (sched%s%s per thread, budget %llu KiB)\n",
		r->session, r->dir, o->nev ? "," : "", o->nev ? r->st->events : "",
		(unsigned long long)(o->budget >> 10));
	if (go_fd >= 0) {
		/* Let the child exec: it is tracked now, from its first instruction. */
		if (write(go_fd, "g", 1) != 1)
			rk_warn("cannot start the command");
		close(go_fd);
		go_fd = -1;
	}

	find_progs(r);
	realtime(o);
	err = event_loop(r, sfd, tfd, pidfd);

	/* Stop: no new signals (pins first: they hold the links), then the last ones. */
	unpin_links();
	if (r->skel)
		ringkeeper_bpf__detach(r->skel);
	for (k = 0; k < r->nlinks; k++)
		close(r->link_fds[k]);
	r->nlinks = 0;
	ring_buffer__consume(r->rb);
	drain(r);
	drain(r); /* what the first one's signals deferred */

out_fds:
	if (go_fd >= 0) {
		/* Not started: make the child exit without running CMD. */
		close(go_fd);
	}
	if (child > 0) {
		if (waitpid(child, &status, 0) == child) {
			if (WIFEXITED(status) && WEXITSTATUS(status))
				rk_warn("command exited with status %d", WEXITSTATUS(status));
			else if (WIFSIGNALED(status))
				rk_warn("command killed by signal %d", WTERMSIG(status));
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	ring_buffer__free(r->rb);
out_pool:
	for (t = r->all; t; t = t->all_next)
		if (!t->dead)
			thread_finish(r, t, RK_THREAD_STOPPED);
	if (r->pool) {
		rk_pin_flush(r->pool);
		publish(r);
	}
	rk_pin_pool__free(r->pool);
	rk_drain__free(r->drain);
	while (r->procs) {
		struct rk_proc *p = r->procs;

		r->procs = p->next;
		rk_bufile__free(p->bf);
		free(p);
	}
	free(r->pendingv);
	while (r->all) {
		t = r->all;
		r->all = t->all_next;
		free(t);
	}
out_maps:
	if (r->maps_pinned && !o->keep)
		unpin_maps();
	else if (r->maps_pinned)
		fprintf(stderr, "ringkeeper: maps kept pinned in %s (--keep)\n", RK_BPFFS_DIR);
out_skel:
	ringkeeper_bpf__destroy(r->skel);
	if (resumed) {
		close(r->pmu_fd);
		close(r->cnt_fd);
		close(r->sig_fd);
	}
out_stat:
	r->st->state = RK_SESSION_ENDED;
	r->st->update_ns = rk_now_real_ns();
	if (!err)
		rk_session_print(stderr, r->session, r->st, 0);
	munmap(r->st, sizeof(*r->st));
	goto out_unlock;
out_resume:
	/* Not taken over: leave the session and the pins as they are. */
	for (k = 0; k < r->nlinks; k++)
		close(r->link_fds[k]);
	if (r->st)
		munmap(r->st, sizeof(*r->st));
	if (r->pmu_fd >= 0)
		close(r->pmu_fd);
	if (r->cnt_fd >= 0)
		close(r->cnt_fd);
	if (r->sig_fd >= 0)
		close(r->sig_fd);
out_unlock:
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	for (k = 0; k < RK_NPROGS; k++)
		if (r->prog_fds[k] >= 0)
			close(r->prog_fds[k]);
out_free:
	free(r);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	return err;
}
