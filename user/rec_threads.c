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
struct rk_thread *rec_thread_find(struct rk_rec *r, __u32 tid)
{
	struct rk_thread *t;

	for (t = r->buckets[tid % NBUCKETS]; t; t = t->hnext)
		if (t->tid == tid)
			return t;
	return NULL;
}

/* A pin worker is done with a retired buffer: unmap it; the last one frees the thread. */
void rec_release_buf(void *owner, void *ctx)
{
	struct rk_tbuf *tb = owner;

	(void)ctx;
	rk_bufile__free(tb->bf);
	/* Pairs with the acquire load in rec_reclaim(). */
	__atomic_sub_fetch(&tb->t->unreleased, 1, __ATOMIC_RELEASE);
}

/* Read Uid and NSpid of a thread from /proc; keeps the defaults if it is gone. */
void rec_proc_ids(__u32 tgid, __u32 tid, __u32 *uid, __u32 *ns_tid, char *comm,
		  struct rk_task_ids *ids)
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

		if (ids && rk_access_ids_line(line, ids) && strncmp(line, "Uid:", 4))
			continue; /* a Gid: line: nothing more of ours in it */
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
int rec_nsrc(const struct rk_rec *r)
{
	return 1 + r->o->nev;
}

const char *rec_src_dir(const struct rk_rec *r, int k)
{
	return k == RK_SRC_SCHED ? RK_SCHED_DIR : r->o->evs[k - 1].dir;
}

/* AUX area bytes of source @k's files (0 but for the AUX event). */
uint64_t rec_src_aux(const struct rk_rec *r, int k)
{
	return k != RK_SRC_SCHED && r->o->evs[k - 1].aux ? r->o->aux_size : 0;
}

/* Bytes of buffer files one thread gets: one file per source. */
uint64_t rec_thread_bytes(const struct rk_rec *r)
{
	uint64_t n = 0;
	int k;

	for (k = 0; k < rec_nsrc(r); k++)
		n += rk_bufile_layout_size(r->o->data_size, rec_src_aux(r, k));
	return n;
}

const struct rk_pmu_entry *rec_src_entry(const struct rk_rec *r, int k)
{
	return k == RK_SRC_SCHED ? &r->sched_entry : &r->o->evs[k - 1].entry;
}

/*
 * A thread we will not trace (a limit, tmpfs full): out of the traced set,
 * so BPF stops signalling it and its children are not inherited; counted.
 * What was recorded for other threads is untouched.
 */
void rec_refuse(struct rk_rec *r, __u32 tid, const char *why)
{
	struct rk_pmu_key key = { .tid = tid };
	int k;

	struct rk_thread *t = calloc(1, sizeof(*t));

	rec_set_traced(r, tid, 0);
	for (k = 0; k < rec_nsrc(r); k++) {
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
int rec_grant(struct rk_rec *r, const char *path, int can, uid_t reader)
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
void rec_move_aside(struct rk_rec *r, const char *path, __u32 tid)
{
	char old[PATH_MAX + 48];
	unsigned int n;

	/*
	 * The first free <tid>.<n>, never replacing one: a tid reused a
	 * thousand times (-a for weeks) must not cost an earlier history.
	 */
	for (n = 1; n; n++) {
		snprintf(old, sizeof(old), "%s.%u", path, n);
		if (!renameat2(AT_FDCWD, path, AT_FDCWD, old, RENAME_NOREPLACE)) {
			rec_gone_renamed(r, path, old);
			return;
		}
		if (errno != EEXIST)
			break;
	}
	if (errno != ENOENT)
		rk_warn("cannot move the file of exited tid %u aside: %s", tid, strerror(errno));
}

/* @uid's --max-shm account (NULL: no memory for a new one). */
static struct rk_uid_shm *ushm_of(struct rk_rec *r, __u32 uid)
{
	struct rk_uid_shm *u;
	size_t i;

	for (i = 0; i < r->nushm; i++)
		if (r->ushm[i].uid == uid)
			return &r->ushm[i];
	u = realloc(r->ushm, (r->nushm + 1) * sizeof(*u));
	if (!u)
		return NULL;
	r->ushm = u;
	u = &r->ushm[r->nushm++];
	memset(u, 0, sizeof(*u));
	u->uid = uid;
	return u;
}

/* A file counted in --max-shm's bytes for @uid (negative: no longer). */
void rec_shm_account(struct rk_rec *r, __u32 uid, int64_t bytes)
{
	struct rk_uid_shm *u = ushm_of(r, uid);

	if (bytes >= 0) {
		r->st->shm_bytes += (uint64_t)bytes;
		if (u)
			u->bytes += (uint64_t)bytes;
		return;
	}
	r->st->shm_bytes -= r->st->shm_bytes < (uint64_t)-bytes ? r->st->shm_bytes :
								  (uint64_t)-bytes;
	if (u)
		u->bytes -= u->bytes < (uint64_t)-bytes ? u->bytes : (uint64_t)-bytes;
}

/* Entry @g goes: unlinked (unless removed already), its bytes no longer counted. */
static void gone_remove(struct rk_rec *r, struct rk_gone *g)
{
	struct rk_uid_shm *u;

	if (!g->path)
		return;
	if (!unlink(g->path) || errno == ENOENT) {
		r->st->retention_removed++;
		r->st->retention_bytes += g->bytes;
		rec_shm_account(r, g->uid, -(int64_t)g->bytes);
		r->mem_bytes -= r->mem_bytes < g->bytes ? r->mem_bytes : g->bytes;
	} else {
		rk_warn("retention: cannot remove %s: %s", g->path, strerror(errno));
	}
	u = ushm_of(r, g->uid);
	if (u && u->ngone)
		u->ngone--;
	free(g->path);
	g->path = NULL;
}

/* The oldest entry goes, and those removed out of order behind it. */
static void gone_pop(struct rk_rec *r)
{
	do {
		gone_remove(r, &r->gone[r->gone_head]);
		r->gone_head = (r->gone_head + 1) % r->gone_cap;
		r->gone_n--;
	} while (r->gone_n && !r->gone[r->gone_head].path);
}

void rec_gone_push_path(struct rk_rec *r, const char *path, uint64_t bytes, __u32 uid)
{
	struct rk_uid_shm *u;
	struct rk_gone *g;

	if (!r->o->max_shm && !r->o->keep_exited_ns)
		return;
	if (r->gone_n == r->gone_cap) {
		size_t cap = r->gone_cap ? r->gone_cap * 2 : 256, i;
		struct rk_gone *n = malloc(cap * sizeof(*n));

		if (!n)
			return; /* kept: only the limits are not enforced on it */
		for (i = 0; i < r->gone_n; i++)
			n[i] = r->gone[(r->gone_head + i) % r->gone_cap];
		free(r->gone);
		r->gone = n;
		r->gone_cap = cap;
		r->gone_head = 0;
	}
	g = &r->gone[(r->gone_head + r->gone_n) % r->gone_cap];
	g->path = strdup(path);
	if (!g->path)
		return;
	g->exit_ns = rk_now_mono_ns();
	g->bytes = bytes;
	g->uid = uid;
	r->gone_n++;
	u = ushm_of(r, uid);
	if (u)
		u->ngone++;
}

/* @t finished: its files join the retention queue (unless already removed). */
static void gone_push(struct rk_rec *r, struct rk_thread *t)
{
	char path[PATH_MAX + 96];
	int k;

	for (k = 0; k < rec_nsrc(r); k++) {
		uint64_t size = rec_thread_bytes(r) / (uint64_t)rec_nsrc(r), used = size;
		struct stat sb;

		snprintf(path, sizeof(path), "%s/%s/%u", r->dir, rec_src_dir(r, k), t->tid);
		/*
		 * Written no more: from now on it counts the memory it holds (a
		 * sparse file's blocks), not the size it could have grown to.
		 */
		if (!stat(path, &sb) && (uint64_t)sb.st_blocks * 512 < size) {
			used = (uint64_t)sb.st_blocks * 512;
			rec_shm_account(r, t->uid, -(int64_t)(size - used));
			r->mem_bytes -= r->mem_bytes < size - used ? r->mem_bytes : size - used;
		}
		rec_gone_push_path(r, path, used, t->uid);
	}
}

void rec_gone_renamed(struct rk_rec *r, const char *from, const char *to)
{
	size_t i;

	for (i = 0; i < r->gone_n; i++) {
		struct rk_gone *g = &r->gone[(r->gone_head + i) % r->gone_cap];
		char *n;

		if (!g->path || strcmp(g->path, from))
			continue;
		n = strdup(to);
		if (n) {
			free(g->path);
			g->path = n;
		}
		return;
	}
}

/*
 * Whose history makes room for @uid's new thread: its own exited files
 * first; another user's only while that user holds more than @uid does
 * (the one holding most first). So a user starting threads by the
 * thousand evicts its own history, not root's or a neighbour's.
 * Return: the victim's account, or NULL (no fair room: the thread waits
 * untraced, counted).
 */
static struct rk_uid_shm *gone_victim(struct rk_rec *r, __u32 uid)
{
	struct rk_uid_shm *me = ushm_of(r, uid), *best = NULL;
	size_t i;

	if (me && me->ngone)
		return me;
	for (i = 0; i < r->nushm; i++) {
		struct rk_uid_shm *u = &r->ushm[i];

		if (u->ngone && (!best || u->bytes > best->bytes))
			best = u;
	}
	if (best && me && best->bytes <= me->bytes + rec_thread_bytes(r))
		return NULL;
	return best;
}

/* The oldest exited file of @victim goes. Return: 1, or 0 if it has none. */
static int gone_remove_oldest_of(struct rk_rec *r, __u32 victim)
{
	size_t i;

	for (i = 0; i < r->gone_n; i++) {
		struct rk_gone *g = &r->gone[(r->gone_head + i) % r->gone_cap];

		if (g->path && g->uid == victim) {
			if (i == 0)
				gone_pop(r);
			else
				gone_remove(r, g);
			return 1;
		}
	}
	return 0;
}

/*
 * Under --max-shm-user: room for @need more bytes of @uid's from its own
 * exited files only. Return: 1 if it fits now.
 */
static int gone_room_user(struct rk_rec *r, uint64_t need, __u32 uid)
{
	struct rk_uid_shm *u = ushm_of(r, uid);

	while (u && u->bytes + need > r->o->max_shm_user && u->ngone &&
	       gone_remove_oldest_of(r, uid))
		;
	return !u || u->bytes + need <= r->o->max_shm_user;
}

/*
 * Make room for @need more bytes of @uid under --max-shm by removing
 * exited threads' files, oldest first, fairly (gone_victim()).
 * Return: 1 if it fits now.
 */
static int gone_room(struct rk_rec *r, uint64_t need, __u32 uid)
{
	while (r->st->shm_bytes + need > r->o->max_shm && r->gone_n) {
		struct rk_uid_shm *v = gone_victim(r, uid);

		/* Its count says it has one: if the ring disagrees, stop rather than spin. */
		if (!v || !gone_remove_oldest_of(r, v->uid))
			break;
	}
	return r->st->shm_bytes + need <= r->o->max_shm;
}

void rec_retention_tick(struct rk_rec *r, uint64_t now)
{
	while (r->o->keep_exited_ns && r->gone_n &&
	       r->gone[r->gone_head].exit_ns + r->o->keep_exited_ns <= now)
		gone_pop(r);
}

void rec_gone_free(struct rk_rec *r)
{
	while (r->gone_n) {
		free(r->gone[r->gone_head].path);
		r->gone_head = (r->gone_head + 1) % r->gone_cap;
		r->gone_n--;
	}
	free(r->gone);
	r->gone = NULL;
	r->gone_cap = 0;
	free(r->ushm);
	r->ushm = NULL;
	r->nushm = 0;
}

/*
 * Files for @tid, one per source. A dead thread with the same tid (tid
 * reuse) keeps its files under <tid>.<n>.
 */
struct rk_thread *rec_thread_new(struct rk_rec *r, __u32 tid, __u32 tgid, __u32 uid,
				 const char *comm, uint64_t start_ns)
{
	struct rk_thread_ident id = { 0 };
	char path[PATH_MAX + 96];
	struct rk_thread *t, *prev = rec_thread_find(r, tid);
	char pcomm[RK_COMM_LEN] = "";
	struct rk_task_ids ids = { 0 };
	uid_t reader = 0;
	int k, can;

	if (prev && !prev->dead)
		return prev;
	if (prev && prev->refused)
		return NULL;
	if (r->o->max_shm_user && !gone_room_user(r, rec_thread_bytes(r), uid)) {
		rec_refuse(r, tid, "--max-shm-user");
		return NULL;
	}
	if (r->o->max_shm && !gone_room(r, rec_thread_bytes(r), uid)) {
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
	rec_proc_ids(tgid, tid, &id.uid, &id.ns_tid, comm && *comm ? NULL : pcomm, &ids);
	snprintf(id.comm, sizeof(id.comm), "%s", comm && *comm ? comm : pcomm);
	/* Who may read it: decided from /proc now; a task already gone stays root's. */
	can = rk_access_reader_of((pid_t)tgid, (pid_t)tid, &ids, &reader) == 1;
	for (k = 0; k < rec_nsrc(r); k++) {
		struct rk_bufile *bf;

		snprintf(path, sizeof(path), "%s/%s/%u", r->dir, rec_src_dir(r, k), tid);
		/* A reused tid: the earlier thread's file (even if reclaimed) stays. */
		rec_move_aside(r, path, tid);
		bf = rk_bufile__create(path, r->o->data_size, rec_src_aux(r, k),
				       rec_src_entry(r, k), &id);
		if (!bf) {
			int err = errno;

			if (!r->st->file_errors)
				rk_err("cannot create buffer file %s: %s%s", path, strerror(err),
				       err == ENOSPC ? " (tmpfs full: free space in /dev/shm or "
						       "use a smaller -m)" :
						       "");
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
	t->all_next = r->all;
	r->all = t;
	r->st->threads++;
	r->st->threads_live++;
	rec_shm_account(r, t->uid, (int64_t)rec_thread_bytes(r));
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
	err = rk_bufile__write(bf, rec, size);

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

void rec_put_rec(struct rk_rec *r, struct rk_thread *t, void *rec, size_t size)
{
	rec_put_rec_src(r, t, RK_SRC_SCHED, rec, size);
}

void rec_fill_id(struct sample_id *id, const struct rk_thread *t, const struct rk_signal *s)
{
	id->pid = t->tgid;
	id->tid = t->tid;
	id->time = s->time_ns;
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
	r->st->threads_live--;
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
	}
	/* Files that stay: --keep-exited and --max-shm may remove them later. */
	if (!(r->o->on_exit_drop && state == RK_THREAD_EXITED))
		gone_push(r, t);
	/* The workers unlock and unmap the files; we never touch them again. */
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
struct rk_thread *rec_access_recheck(struct rk_rec *r, struct rk_thread *t, const char *comm,
				     __u64 time_ns, __u32 why)
{
	uid_t reader = 0;
	int can = rk_access_task_reader((pid_t)t->tgid, (pid_t)t->tid, &reader) == 1;
	int last = t->last_switch;
	struct rk_thread *n;

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
	n = rec_thread_new(r, t->tid, t->tgid, 0, comm, time_ns);
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

int rec_live_threads_of(struct rk_rec *r, __u32 tgid)
{
	struct rk_thread *t;
	int n = 0;

	for (t = r->all; t; t = t->all_next)
		n += !t->dead && t->tgid == tgid;
	return n;
}

/*
 * Free the threads whose buffers are all finished and unmapped, so an
 * always-on recorder's memory follows the live threads, not all it saw.
 * Refused markers stay: they keep queued signals from counting twice.
 */
void rec_reclaim(struct rk_rec *r)
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
