// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rec_src.c - what the recorder's modules ask of its state (see rec_src.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rec_src.h"
#include "pmu.h"
#include "util.h"

/* @t joins the table of every thread the loader has (r->all). */
void rec_all_add(struct rk_rec *r, struct rk_thread *t)
{
	t->all_prev = NULL;
	t->all_next = r->all;
	if (r->all)
		r->all->all_prev = t;
	r->all = t;
}

/* @t is dead: rec_reclaim() frees it once its buffers are released. */
void rec_fin_add(struct rk_rec *r, struct rk_thread *t)
{
	if (t->on_fin)
		return;
	t->on_fin = 1;
	t->fin_next = r->fin;
	r->fin = t;
}

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
uint64_t rec_file_charge(__u64 data_size, __u64 aux_size, __u64 head, __u64 *grow_at)
{
	__u64 data = head < RK_SHM_STEP ? RK_SHM_STEP :
					  (head + RK_SHM_STEP - 1) & ~(RK_SHM_STEP - 1);

	if (data >= data_size) {
		data = data_size;
		*grow_at = UINT64_MAX; /* the ring wraps within what is counted */
	} else {
		*grow_at = data;
	}
	return RK_PAGE_SIZE + data + aux_size;
}

uint64_t rec_thread_charge0(const struct rk_rec *r)
{
	__u64 n = 0, at;
	int k;

	for (k = 0; k < rec_nsrc(r); k++)
		n += rec_file_charge(r->o->data_size, rec_src_aux(r, k), 0, &at);
	return n;
}

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

static size_t live_home(__u32 key, size_t mask)
{
	return (size_t)(key * 2654435761u) & mask;
}

/* @tgid's slot (NULL: none, and @make 0 or no memory). */
static struct rk_live *live_slot(struct rk_rec *r, __u32 tgid, int make)
{
	__u32 key = tgid + 1;
	size_t i, mask;

	if (make && 2 * (r->nlive + 1) > r->live_cap) {
		size_t cap = 256, j, n = 0;
		struct rk_live *v;

		/* Sized for the processes with live threads: tombstones do not grow it. */
		for (j = 0; j < r->live_cap; j++)
			n += r->live[j].n != 0;
		while (cap < 4 * (n + 1))
			cap *= 2;
		v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		n = 0;
		for (j = 0; j < r->live_cap; j++) {
			if (!r->live[j].n)
				continue; /* tombstones go */
			for (i = live_home(r->live[j].key, cap - 1); v[i].key;
			     i = (i + 1) & (cap - 1))
				;
			v[i] = r->live[j];
			n++;
		}
		free(r->live);
		r->live = v;
		r->live_cap = cap;
		r->nlive = n;
	}
	if (!r->live_cap)
		return NULL;
	mask = r->live_cap - 1;
	for (i = live_home(key, mask); r->live[i].key; i = (i + 1) & mask)
		if (r->live[i].key == key)
			return &r->live[i];
	if (!make)
		return NULL;
	r->live[i].key = key;
	r->nlive++;
	return &r->live[i];
}

/*
 * A thread of @tgid became live (+1) or finished (-1): each process's
 * count, so "has it live threads" costs a lookup, not a walk of every
 * thread (a death asked it, with -e: O(threads) per thread).
 */
void rec_live_add(struct rk_rec *r, __u32 tgid, int d)
{
	struct rk_live *l = live_slot(r, tgid, d > 0);

	if (!l)
		return;
	if (d > 0)
		l->n++;
	else if (l->n)
		l->n--;
}

int rec_live_threads_of(struct rk_rec *r, __u32 tgid)
{
	struct rk_live *l = live_slot(r, tgid, 0);

	return l ? (int)l->n : 0;
}
