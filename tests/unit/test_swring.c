// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The merge of the switch rings with the ringbuf (swring.c), on rings in
 * plain memory written the way the BPF side writes them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "swring.h"

#define NCPU 3
#define SLOTS 8

static struct rk_swrec ring[NCPU * SLOTS];
static struct rk_swpos pos[2 * NCPU];
static struct rk_signal got[256];
static size_t ngot;

static void collect(void *ctx, const struct rk_signal *s)
{
	(void)ctx;
	cr_assert_lt(ngot, sizeof(got) / sizeof(got[0]));
	got[ngot++] = *s;
}

/* What sw_reserve() + sw_commit() do: a record of @cpu's ring, then its head. */
static void bpf_put(__u32 cpu, __u64 t, __u32 tid, __u16 kind)
{
	__u64 h = pos[2 * cpu].pos;
	struct rk_swrec *r = &ring[cpu * SLOTS + (h & (SLOTS - 1))];

	cr_assert_lt(h - pos[2 * cpu + 1].pos, SLOTS, "BPF writes only into a ring with room");
	memset(r, 0, sizeof(*r));
	r->time_ns = t;
	r->tid = tid;
	r->tgid = tid;
	r->kind = kind;
	pos[2 * cpu].pos = h + 1;
}

static void pend(struct rk_swring *w, __u64 t, __u32 tid, __u16 kind)
{
	struct rk_signal s;

	memset(&s, 0, sizeof(s));
	s.time_ns = t;
	s.tid = tid;
	s.kind = kind;
	cr_assert_eq(rk_swring_pend(w, &s, sizeof(s)), 0);
}

static void reset(void)
{
	memset(ring, 0, sizeof(ring));
	memset(pos, 0, sizeof(pos));
	ngot = 0;
}

Test(swring, rings_and_ringbuf_come_out_in_time_order_a_fork_before_its_childs_switch)
{
	struct rk_swring w;
	size_t i;

	reset();
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS), 0);
	bpf_put(0, 10, 1, RK_SIG_SWITCH_IN);
	bpf_put(0, 40, 1, RK_SIG_SWITCH_OUT);
	bpf_put(2, 25, 7, RK_SIG_SWITCH_IN); /* the child, same time as its fork */
	bpf_put(2, 50, 7, RK_SIG_SWITCH_OUT);
	rk_swring_snapshot(&w, 1000);
	/* The ringbuf, out of time order as a preempted hook leaves it. */
	pend(&w, 30, 1, RK_SIG_EXEC);
	pend(&w, 25, 7, RK_SIG_FORK);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 6);
	cr_assert_eq(ngot, 6);
	for (i = 1; i < ngot; i++)
		cr_assert_leq(got[i - 1].time_ns, got[i].time_ns, "record %zu out of order", i);
	cr_assert_eq(got[1].kind, RK_SIG_FORK, "the fork before the child's switch at its time");
	cr_assert_eq(got[2].kind, RK_SIG_SWITCH_IN);
	cr_assert_eq(got[2].tid, 7);
	cr_assert_eq(got[2].cpu, 2, "a ring's records carry its CPU");
	cr_assert_eq(got[3].kind, RK_SIG_EXEC);
	/* Every slot read is BPF's again. */
	cr_assert_eq(pos[1].pos, 2);
	cr_assert_eq(pos[3].pos, 0);
	cr_assert_eq(pos[5].pos, 2);
	cr_assert_eq(rk_swring_written(&w), 4);
	rk_swring_free(&w);
}

Test(swring, what_is_newer_than_the_horizon_waits_for_the_next_intake)
{
	struct rk_swring w;

	reset();
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS), 0);
	bpf_put(1, 100, 3, RK_SIG_SWITCH_IN);
	bpf_put(1, 300, 3, RK_SIG_SWITCH_OUT);
	rk_swring_snapshot(&w, 200);
	pend(&w, 250, 3, RK_SIG_RENAME);
	pend(&w, 150, 3, RK_SIG_EXEC);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 2);
	cr_assert_eq(got[0].time_ns, 100);
	cr_assert_eq(got[1].time_ns, 150);
	cr_assert_eq(pos[3].pos, 1, "the tail stops at the first record not handed out");
	/* Published after the snapshot: not read even below the next horizon. */
	bpf_put(1, 350, 3, RK_SIG_SWITCH_IN);
	rk_swring_snapshot(&w, UINT64_MAX);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 3);
	cr_assert_eq(got[2].time_ns, 250);
	cr_assert_eq(got[3].time_ns, 300);
	cr_assert_eq(got[4].time_ns, 350);
	cr_assert_eq(pos[3].pos, 3);
	cr_assert_eq(w.npend, 0);
	rk_swring_free(&w);
}

Test(swring, a_ring_read_many_times_over_wraps)
{
	struct rk_swring w;
	__u64 t = 1;
	int round, k;

	reset();
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS), 0);
	for (round = 0; round < 5; round++) {
		for (k = 0; k < SLOTS - 1; k++, t++)
			bpf_put(0, t, 1, RK_SIG_SWITCH_IN);
		rk_swring_snapshot(&w, UINT64_MAX);
		cr_assert_eq(rk_swring_merge(&w, collect, NULL), SLOTS - 1);
		cr_assert_eq(got[ngot - 1].time_ns, t - 1);
		ngot = 0;
	}
	cr_assert_eq(pos[1].pos, 5 * (SLOTS - 1));
	rk_swring_free(&w);
}

/* The positions are in a map: a head no BPF of ours writes is never read past the ring. */
Test(swring, a_head_beyond_the_ring_or_behind_the_tail_reads_nothing_out_of_bounds)
{
	struct rk_swring w;

	reset();
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS), 0);
	pos[0].pos = 1000; /* 1000 records past a tail of 0, in an 8-slot ring */
	pos[2].pos = 5;
	pos[3].pos = 9; /* a tail past its head (a resumed recorder's) */
	rk_swring_free(&w);
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS), 0);
	rk_swring_snapshot(&w, UINT64_MAX);
	cr_assert_eq(w.lost, 1000 - SLOTS, "what the ring cannot hold is counted");
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), SLOTS, "only what the ring holds is read");
	cr_assert_eq(pos[1].pos, 1000);
	cr_assert_eq(pos[3].pos, 5, "a tail past its head goes back to the head");
	rk_swring_free(&w);
}

Test(swring, resumes_at_the_tails_a_killed_recorder_left)
{
	struct rk_swring w;

	reset();
	pos[2 * 2 + 1].pos = 6;
	pos[2 * 2].pos = 6;
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS), 0);
	bpf_put(2, 70, 4, RK_SIG_SWITCH_OUT);
	rk_swring_snapshot(&w, UINT64_MAX);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 1);
	cr_assert_eq(got[0].time_ns, 70);
	cr_assert_eq(got[0].kind, RK_SIG_SWITCH_OUT);
	cr_assert_eq(pos[5].pos, 7);
	rk_swring_free(&w);
}

Test(swring, bad_geometry_and_short_records_are_refused)
{
	struct rk_swring w;
	char small[8] = { 0 };

	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, 6), -EINVAL);
	cr_assert_eq(rk_swring_init(&w, ring, pos, 0, SLOTS), -EINVAL);
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS), 0);
	cr_assert_eq(rk_swring_pend(&w, small, sizeof(small)), -EINVAL);
	cr_assert_eq(w.npend, 0);
	rk_swring_free(&w);
}
