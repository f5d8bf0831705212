// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rec_files.c - who may read the recorder's files, and their retention (see rec_files.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include "rec_files.h"
#include "rec_src.h"
#include "access.h"
#include "util.h"

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

/* FNV-1a of @n bytes at @s: a file's directory (aside_next()) or its whole path (retention). */
static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static uint64_t fnv1a_str(const char *s)
{
	return fnv1a(s, strlen(s));
}

static size_t aside_home(uint64_t key, size_t mask)
{
	return (size_t)(key ^ key >> 29) & mask;
}

/*
 * The next free <n> for <dir>/<tid>.<n>, by (directory, tid): a counter
 * of each file's incarnations, so moving one aside costs one rename
 * however many came before (a thread flipping its dumpability, a tid
 * reused for weeks). Open addressing; keys are stored + 1 (0: empty).
 * Return: the counter (NULL: no memory for the table).
 */
static __u32 *aside_next(struct rk_rec *r, const char *path, __u32 tid)
{
	const char *slash = strrchr(path, '/');
	uint64_t h = fnv1a(path, slash ? (size_t)(slash - path) : 0), key;
	size_t i, mask;

	key = ((h << 32) | tid) + 1;
	if (!key)
		key = 1;
	if (2 * (r->naside + 1) > r->aside_cap) {
		size_t cap = r->aside_cap ? 2 * r->aside_cap : 1024, j;
		struct rk_aside *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (j = 0; j < r->aside_cap; j++) {
			if (!r->aside[j].key)
				continue;
			for (i = aside_home(r->aside[j].key, cap - 1); v[i].key;
			     i = (i + 1) & (cap - 1))
				;
			v[i] = r->aside[j];
		}
		free(r->aside);
		r->aside = v;
		r->aside_cap = cap;
	}
	mask = r->aside_cap - 1;
	for (i = aside_home(key, mask); r->aside[i].key; i = (i + 1) & mask)
		if (r->aside[i].key == key)
			return &r->aside[i].next;
	r->aside[i].key = key;
	r->aside[i].next = 1;
	r->naside++;
	return &r->aside[i].next;
}

/* Move a dead thread's file aside (tid reuse), so no history is overwritten. */
void rec_move_aside(struct rk_rec *r, const char *path, __u32 tid)
{
	char old[PATH_MAX + 48];
	__u32 *next = aside_next(r, path, tid), n;

	/*
	 * The first free <tid>.<n> from the counter on, never replacing one:
	 * a name taken (files of a resumed session) is skipped once, and the
	 * counter remembers.
	 */
	for (n = next ? *next : 1; n; n++) {
		snprintf(old, sizeof(old), "%s.%u", path, n);
		if (!renameat2(AT_FDCWD, path, AT_FDCWD, old, RENAME_NOREPLACE)) {
			if (next)
				*next = n + 1;
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

/* The entry of sequence number @seq, NULL if it left the ring. */
static struct rk_gone *gone_at(struct rk_rec *r, uint64_t seq)
{
	if (seq < r->gone_seq0 || seq - r->gone_seq0 >= r->gone_n)
		return NULL;
	return &r->gone[(r->gone_head + (seq - r->gone_seq0)) % r->gone_cap];
}

static void hash_link(struct rk_rec *r, uint64_t seq, struct rk_gone *g)
{
	uint64_t *b = &r->gone_hash[g->hash & (r->gone_cap - 1)];

	g->hnext = *b;
	*b = seq + 1;
}

/* @g (sequence @seq) out of its hash chain: the chain is walked, a few entries at most. */
static void hash_unlink(struct rk_rec *r, uint64_t seq, struct rk_gone *g)
{
	uint64_t *link = &r->gone_hash[g->hash & (r->gone_cap - 1)];

	while (*link && *link != seq + 1) {
		struct rk_gone *e = gone_at(r, *link - 1);

		r->gone_steps++;
		if (!e)
			return; /* cannot be: every linked entry is in the ring */
		link = &e->hnext;
	}
	if (*link)
		*link = g->hnext;
	g->hnext = 0;
}

/*
 * Entry @seq, its user's oldest, goes: unlinked (unless removed already),
 * its bytes no longer counted, out of its hash chain and its user's queue.
 */
static void gone_remove(struct rk_rec *r, uint64_t seq)
{
	struct rk_gone *g = gone_at(r, seq);
	struct rk_uid_shm *u;

	if (!g || !g->path)
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
	if (u && u->first == seq + 1) {
		u->first = g->unext;
		if (!u->first)
			u->last = 0;
	}
	hash_unlink(r, seq, g);
	free(g->path);
	g->path = NULL;
}

/* The oldest entry goes, and those removed out of order behind it. */
static void gone_pop(struct rk_rec *r)
{
	do {
		gone_remove(r, r->gone_seq0);
		r->gone_head = (r->gone_head + 1) % r->gone_cap;
		r->gone_seq0++;
		r->gone_n--;
	} while (r->gone_n && !r->gone[r->gone_head].path);
}

/*
 * Room for one more entry: the ring doubles, its entries keep their
 * sequence numbers, and the hash buckets (as many as entries) are laid
 * anew. Return: 0, or -ENOMEM (the entry is then kept out of retention).
 */
static int gone_grow(struct rk_rec *r)
{
	size_t cap = r->gone_cap ? r->gone_cap * 2 : 256, i;
	struct rk_gone *n = malloc(cap * sizeof(*n));
	uint64_t *h = calloc(cap, sizeof(*h));

	if (!n || !h) {
		free(n);
		free(h);
		return -ENOMEM;
	}
	for (i = 0; i < r->gone_n; i++)
		n[i] = r->gone[(r->gone_head + i) % r->gone_cap];
	free(r->gone);
	free(r->gone_hash);
	r->gone = n;
	r->gone_hash = h;
	r->gone_cap = cap;
	r->gone_head = 0;
	for (i = 0; i < r->gone_n; i++)
		if (n[i].path)
			hash_link(r, r->gone_seq0 + i, &n[i]);
	return 0;
}

void rec_gone_push_path(struct rk_rec *r, const char *path, uint64_t bytes, __u32 uid)
{
	struct rk_uid_shm *u;
	struct rk_gone *g;
	uint64_t seq;

	if (!r->o->max_shm && !r->o->keep_exited_ns)
		return;
	if (r->gone_n == r->gone_cap && gone_grow(r))
		return; /* kept: only the limits are not enforced on it */
	seq = r->gone_seq0 + r->gone_n;
	g = &r->gone[(r->gone_head + r->gone_n) % r->gone_cap];
	memset(g, 0, sizeof(*g));
	g->path = strdup(path);
	if (!g->path)
		return;
	g->exit_ns = rk_now_mono_ns();
	g->bytes = bytes;
	g->uid = uid;
	g->hash = fnv1a_str(path);
	r->gone_n++;
	hash_link(r, seq, g);
	u = ushm_of(r, uid);
	if (!u)
		return; /* its file goes when the ring's head reaches it */
	u->ngone++;
	if (u->last) {
		struct rk_gone *prev = gone_at(r, u->last - 1);

		if (prev)
			prev->unext = seq + 1;
	} else {
		u->first = seq + 1;
	}
	u->last = seq + 1;
}

/*
 * @t finished: its files join the retention queue (unless already removed).
 * Written no more, each counts from now on the memory it holds: its page 0
 * and the ring's pages written (a sparse file's, in order from the start;
 * the AUX area is counted whole), with no stat() per file.
 */
void rec_gone_push(struct rk_rec *r, struct rk_thread *t)
{
	char path[PATH_MAX + 96];
	int k;

	for (k = 0; k < rec_nsrc(r); k++) {
		struct rk_bufile *bf = t->b[k].bf;
		uint64_t size = rk_bufile_layout_size(r->o->data_size, rec_src_aux(r, k)), used;
		uint64_t charged = t->b[k].charged, data = bf ? bf->head : r->o->data_size;

		if (data > r->o->data_size)
			data = r->o->data_size;
		used = RK_PAGE_SIZE + ((data + RK_PAGE_SIZE - 1) & ~(uint64_t)(RK_PAGE_SIZE - 1)) +
		       rec_src_aux(r, k);
		if (used > size)
			used = size;
		snprintf(path, sizeof(path), "%s/%s/%u", r->dir, rec_src_dir(r, k), t->tid);
		rec_shm_account(r, t->uid, (int64_t)used - (int64_t)charged);
		t->b[k].charged = used;
		if (used < size)
			r->mem_bytes -= r->mem_bytes < size - used ? r->mem_bytes : size - used;
		rec_gone_push_path(r, path, used, t->uid);
	}
}

/* A retained file moved aside (rec_move_aside()): found by its name's hash. */
void rec_gone_renamed(struct rk_rec *r, const char *from, const char *to)
{
	uint64_t h = fnv1a_str(from), link;

	if (!r->gone_cap)
		return;
	for (link = r->gone_hash[h & (r->gone_cap - 1)]; link;) {
		struct rk_gone *g = gone_at(r, link - 1);
		char *n;

		r->gone_steps++;
		if (!g)
			return;
		if (g->hash != h || !g->path || strcmp(g->path, from)) {
			link = g->hnext;
			continue;
		}
		n = strdup(to);
		if (!n)
			return; /* it keeps the old name: its removal finds nothing there */
		hash_unlink(r, link - 1, g);
		free(g->path);
		g->path = n;
		g->hash = fnv1a_str(to);
		hash_link(r, link - 1, g);
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

/* The oldest exited file of @victim goes (its queue's head). Return: 1, or 0 if it has none. */
static int gone_remove_oldest_of(struct rk_rec *r, __u32 victim)
{
	struct rk_uid_shm *u = ushm_of(r, victim);
	uint64_t seq;

	if (!u || !u->first)
		return 0;
	seq = u->first - 1;
	if (seq == r->gone_seq0)
		gone_pop(r);
	else
		gone_remove(r, seq);
	return 1;
}

int rec_shm_grow(struct rk_rec *r, struct rk_thread *t, int k, size_t size)
{
	struct rk_tbuf *b = &t->b[k];
	__u64 at,
		want = rec_file_charge(b->bf->data_size, b->bf->aux_size, b->bf->head + size, &at);
	uint64_t need = want > b->charged ? want - b->charged : 0;

	if (need && ((r->o->max_shm_user && !rec_gone_room_user(r, need, t->uid)) ||
		     (r->o->max_shm && !rec_gone_room(r, need, t->uid))))
		return 0;
	rec_shm_account(r, t->uid, (int64_t)need);
	b->charged += need;
	b->grow_at = at;
	return 1;
}

/*
 * Under --max-shm-user: room for @need more bytes of @uid's from its own
 * exited files only. Return: 1 if it fits now.
 */
int rec_gone_room_user(struct rk_rec *r, uint64_t need, __u32 uid)
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
int rec_gone_room(struct rk_rec *r, uint64_t need, __u32 uid)
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
	free(r->gone_hash);
	r->gone = NULL;
	r->gone_hash = NULL;
	r->gone_cap = 0;
	free(r->ushm);
	free(r->aside);
	r->ushm = NULL;
	r->nushm = 0;
}

/* statfs(2)'s f_type of a tmpfs (linux/magic.h). */
#define TMPFS_MAGIC_ 0x01021994

void rec_err_full(const struct rk_rec *r, const char *what, const char *path, const char *then)
{
	char b1[32], b2[32];
	struct statfs sf;

	if (statfs(r->o->root, &sf)) {
		rk_err("cannot %s %s: %s on the filesystem of %s: free space there, or record "
		       "into another --root%s",
		       what, path, strerror(ENOSPC), r->o->root, then);
		return;
	}
	rk_err("cannot %s %s: %s: the %s holding %s is full (%s free of %s): free space there, "
	       "or record into another --root%s",
	       what, path, strerror(ENOSPC), sf.f_type == TMPFS_MAGIC_ ? "tmpfs" : "filesystem",
	       r->o->root,
	       rk_fmt_size((uint64_t)sf.f_bavail * (uint64_t)sf.f_frsize, b1, sizeof(b1)),
	       rk_fmt_size((uint64_t)sf.f_blocks * (uint64_t)sf.f_frsize, b2, sizeof(b2)), then);
}
