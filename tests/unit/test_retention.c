// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_retention.c - the retention queue of exited threads' files (rec_files.c)
 * at the size an always-on recorder reaches: the work of a birth (its file
 * moved aside, room made under --max-shm) does not grow with the files kept.
 * Work is counted (rk_rec.gone_steps: entries visited), not timed.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rec.h"
#include "rec_files.h"
#include "rec_src.h"

#define NKEPT 50000

static struct rk_record_opts opts;
static struct rk_session_stat st;
static struct rk_rec rec;

/* A recorder's books with @n exited files of @uid kept (paths that name no file). */
static struct rk_rec *books(size_t n, __u32 uid)
{
	char path[64];
	size_t i;

	memset(&rec, 0, sizeof(rec));
	memset(&st, 0, sizeof(st));
	memset(&opts, 0, sizeof(opts));
	opts.max_shm = 1ull << 40;
	opts.data_size = 16384;
	rec.o = &opts;
	rec.st = &st;
	snprintf(rec.dir, sizeof(rec.dir), "/nonexistent-rk-test");
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/nonexistent-rk-test/sched/%zu", i);
		rec_shm_account(&rec, uid, 4096);
		rec_gone_push_path(&rec, path, 4096, uid);
	}
	return &rec;
}

/* The path of kept entry @i now (NULL: none such), by a walk of the ring (the test's, not counted). */
static const char *kept_path(struct rk_rec *r, size_t i)
{
	return i < r->gone_n ? r->gone[(r->gone_head + i) % r->gone_cap].path : NULL;
}

/*
 * A tid's file moved aside (tid reuse: with pid_max 32,768 nearly every
 * birth of an always-on recorder's) finds its retained entry by name: a
 * few steps whatever is kept. Before, each walked the whole ring with
 * strcmp (the 8-minute soak: 58% of the loader's time).
 */
Test(retention, a_file_moved_aside_is_found_in_steps_not_by_a_walk_of_50000)
{
	struct rk_rec *r = books(NKEPT, 1000);
	char from[64], to[64];
	uint64_t steps0 = r->gone_steps;
	int i;

	for (i = 0; i < 1000; i++) {
		size_t k = (size_t)i * 7919 % NKEPT;

		snprintf(from, sizeof(from), "/nonexistent-rk-test/sched/%zu", k);
		snprintf(to, sizeof(to), "/nonexistent-rk-test/sched/%zu.1", k);
		rec_gone_renamed(r, from, to);
		cr_assert_str_eq(kept_path(r, k), to, "entry %zu not renamed", k);
	}
	printf("1000 renames among %d kept files: %llu steps\n", NKEPT,
	       (unsigned long long)(r->gone_steps - steps0));
	cr_assert_leq(r->gone_steps - steps0, 4 * 1000, "%llu steps for 1000 renames",
		      (unsigned long long)(r->gone_steps - steps0));
	/* A name no entry has is not found, in as few. */
	steps0 = r->gone_steps;
	rec_gone_renamed(r, "/nonexistent-rk-test/sched/none", "/nonexistent-rk-test/sched/x");
	cr_assert_leq(r->gone_steps - steps0, 8);
	rec_gone_free(r);
}

/*
 * Room under --max-shm for a user whose files are behind 50,000 of
 * another's: its own oldest goes, found at the head of its own queue, and
 * the ring's order holds for everybody else.
 */
Test(retention, room_is_made_from_a_user_s_own_oldest_behind_50000_of_another_s)
{
	struct rk_rec *r = books(NKEPT, 1000);
	char path[64];
	uint64_t steps0;
	int i;

	for (i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "/nonexistent-rk-test/sched/u2-%d", i);
		rec_shm_account(r, 2000, 4096);
		rec_gone_push_path(r, path, 4096, 2000);
	}
	opts.max_shm = st.shm_bytes; /* full */
	steps0 = r->gone_steps;
	opts.max_shm_user = 10 * 4096;
	for (i = 0; i < 5; i++) {
		cr_assert(rec_gone_room_user(r, 4096, 2000), "no room made for uid 2000");
		rec_shm_account(r, 2000, 4096); /* its new thread's file */
	}
	cr_assert_eq(st.retention_removed, 5);
	/* Its five oldest went, in order; uid 1000's 50,000 are all there. */
	cr_assert_null(kept_path(r, NKEPT + 4));
	cr_assert_str_eq(kept_path(r, NKEPT + 5), "/nonexistent-rk-test/sched/u2-5");
	cr_assert_str_eq(kept_path(r, 0), "/nonexistent-rk-test/sched/0");
	cr_assert_leq(r->gone_steps - steps0, 5 * 8, "%llu steps for 5 removals",
		      (unsigned long long)(r->gone_steps - steps0));
	/* And the global cap takes the oldest of all first: uid 1000's 0 and 1. */
	opts.max_shm_user = 0;
	cr_assert(rec_gone_room(r, 2 * 4096, 1000));
	cr_assert_str_eq(kept_path(r, 0), "/nonexistent-rk-test/sched/2");
	rec_gone_free(r);
}

/*
 * Live threads per process, asked at each death with -e (is it the
 * process's last?): a lookup, and a table that follows the processes that
 * have live threads, not every process ever seen (100,000 come and go).
 */
Test(retention, live_threads_per_process_are_counted_in_a_table_that_stays_small)
{
	struct rk_rec *r = books(0, 0);
	__u32 pid;

	rec_live_add(r, 1, 1); /* a long-lived process, through every rebuild */
	for (pid = 2; pid < 100002; pid++) {
		rec_live_add(r, pid, 1);
		rec_live_add(r, pid, 1);
		cr_assert_eq(rec_live_threads_of(r, pid), 2);
		rec_live_add(r, pid, -1);
		rec_live_add(r, pid, -1);
		cr_assert_eq(rec_live_threads_of(r, pid), 0);
	}
	cr_assert_eq(rec_live_threads_of(r, 1), 1, "a process's count lost in a rebuild");
	cr_assert_eq(rec_live_threads_of(r, 424242), 0);
	cr_assert_leq(r->live_cap, 1024, "the table grew to %zu for 1 live process", r->live_cap);
	free(r->live);
}
