// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The merge of the switch rings with the ringbuf (swring.c), on rings in
 * plain memory written the way the BPF side and the kernel write them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "swring.h"

#define NCPU 3
#define SLOTS 8
#define RBSIZE 512

static struct rk_swrec ring[NCPU * SLOTS];
static struct rk_swpos pos[2 * NCPU];
static __u64 rb_cons, rb_prod;
static __u8 rb_data[2 * RBSIZE]; /* mapped twice in a row, as the kernel does */
static const struct rk_rbuf rb = { &rb_cons, &rb_prod, rb_data, RBSIZE };
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

/* Bytes at ringbuf position @p, into both copies of the data. */
static void rb_bytes(__u64 p, const void *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t o = (size_t)((p + i) & (RBSIZE - 1));

		rb_data[o] = ((const __u8 *)src)[i];
		rb_data[o + RBSIZE] = ((const __u8 *)src)[i];
	}
}

/*
 * A ringbuf record of @size bytes (a signal at time @t) with header bits
 * @bits (RK_RB_BUSY: reserved, not committed); Return: its position.
 */
static __u64 rb_put(__u64 t, __u32 tid, __u16 kind, __u32 size, __u32 bits)
{
	__u64 p = rb_prod;
	__u32 hdr[2] = { size | bits, 0 };
	__u8 buf[128] = { 0 };
	struct rk_signal s;

	cr_assert_leq(size, sizeof(buf));
	memset(&s, 0, sizeof(s));
	s.time_ns = t;
	s.tid = tid;
	s.kind = kind;
	memcpy(buf, &s, size < sizeof(s) ? size : sizeof(s));
	rb_bytes(p, hdr, sizeof(hdr));
	rb_bytes(p + RK_RB_HDR, buf, size);
	rb_prod = p + ((size + RK_RB_HDR + 7) & ~7u);
	return p;
}

static void rb_commit(__u64 p, __u32 size)
{
	__u32 len = size;

	rb_bytes(p, &len, sizeof(len));
}

static void reset(void)
{
	memset(ring, 0, sizeof(ring));
	memset(pos, 0, sizeof(pos));
	memset(rb_data, 0, sizeof(rb_data));
	rb_cons = rb_prod = 0;
	ngot = 0;
}

#define SIG ((__u32)sizeof(struct rk_signal))

/* Empty rings, and @w reading them from the start. */
static void start(struct rk_swring *w)
{
	reset();
	cr_assert_eq(rk_swring_init(w, ring, pos, NCPU, SLOTS, &rb), 0);
}

Test(swring, rings_and_ringbuf_come_out_in_time_order_a_fork_before_its_childs_switch)
{
	struct rk_swring w;
	size_t i;

	start(&w);
	bpf_put(0, 10, 1, RK_SIG_SWITCH_IN);
	bpf_put(0, 40, 1, RK_SIG_SWITCH_OUT);
	bpf_put(2, 25, 7, RK_SIG_SWITCH_IN); /* the child, same time as its fork */
	bpf_put(2, 50, 7, RK_SIG_SWITCH_OUT);
	rb_put(25, 7, RK_SIG_FORK, SIG, 0);
	rb_put(30, 1, RK_SIG_EXEC, SIG, 0);
	rk_swring_snapshot(&w, 1000);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 6);
	cr_assert_eq(ngot, 6);
	for (i = 1; i < ngot; i++)
		cr_assert_leq(got[i - 1].time_ns, got[i].time_ns, "record %zu out of order", i);
	cr_assert_eq(got[1].kind, RK_SIG_FORK, "the fork before the child's switch at its time");
	cr_assert_eq(got[2].kind, RK_SIG_SWITCH_IN);
	cr_assert_eq(got[2].tid, 7);
	cr_assert_eq(got[2].cpu, 2, "a ring's records carry its CPU");
	cr_assert_eq(got[3].kind, RK_SIG_EXEC);
	/* Everything read is the writers' again. */
	cr_assert_eq(pos[1].pos, 2);
	cr_assert_eq(pos[3].pos, 0);
	cr_assert_eq(pos[5].pos, 2);
	cr_assert_eq(rb_cons, rb_prod);
	cr_assert_eq(rk_swring_written(&w), 4);
	cr_assert_eq(w.lost, 0);
	rk_swring_free(&w);
}

Test(swring, what_is_newer_than_the_horizon_stays_in_the_rings_for_the_next_intake)
{
	struct rk_swring w;
	__u64 rename_at;

	start(&w);
	bpf_put(1, 100, 3, RK_SIG_SWITCH_IN);
	bpf_put(1, 300, 3, RK_SIG_SWITCH_OUT);
	rb_put(150, 3, RK_SIG_EXEC, SIG, 0);
	rename_at = rb_put(250, 3, RK_SIG_RENAME, SIG, 0);
	rk_swring_snapshot(&w, 200);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 2);
	cr_assert_eq(got[0].time_ns, 100);
	cr_assert_eq(got[1].time_ns, 150);
	cr_assert_eq(pos[3].pos, 1, "the tail stops at the first record not handed out");
	cr_assert_eq(rb_cons, rename_at, "nor is a ringbuf record consumed before it is handled");
	/* Published after the snapshot: not read even below the next horizon. */
	bpf_put(1, 350, 3, RK_SIG_SWITCH_IN);
	rk_swring_snapshot(&w, UINT64_MAX);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 3);
	cr_assert_eq(got[2].time_ns, 250);
	cr_assert_eq(got[3].time_ns, 300);
	cr_assert_eq(got[4].time_ns, 350);
	cr_assert_eq(pos[3].pos, 3);
	cr_assert_eq(rb_cons, rb_prod);
	rk_swring_free(&w);
}

/* What the horizon held back can be looked at (a crash bounds the perf rings) but stays. */
Test(swring, peeking_at_held_back_ringbuf_records_consumes_nothing)
{
	struct rk_swring w;
	__u64 crash_at, busy_at;

	start(&w);
	rb_put(100, 1, RK_SIG_EXEC, SIG, 0);
	crash_at = rb_put(300, 2, RK_SIG_CRASH, SIG, 0);
	rb_put(310, 3, RK_SIG_EXIT, 16, 0); /* not a signal */
	busy_at = rb_put(320, 3, RK_SIG_EXIT, SIG, RK_RB_BUSY);
	rk_swring_snapshot(&w, 200);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 1);
	cr_assert_eq(rk_swring_peek_pending(&w, collect, NULL), -1, "stopped at a reserved record");
	cr_assert_eq(ngot, 2, "up to the reserved record");
	cr_assert_eq(got[1].kind, RK_SIG_CRASH);
	cr_assert_eq(rb_cons, crash_at);
	cr_assert_eq(w.lost, 0, "the short record is counted when it is read");
	rk_swring_snapshot(&w, UINT64_MAX);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 1, "handed out once");
	cr_assert_eq(got[2].kind, RK_SIG_CRASH);
	cr_assert_eq(w.lost, 1);
	cr_assert_eq(rk_swring_peek_pending(&w, collect, NULL), -1, "still reserved");
	cr_assert_eq(ngot, 3, "nothing committed before it");
	rb_commit(busy_at, SIG);
	cr_assert_eq(rk_swring_peek_pending(&w, collect, NULL), 0, "read up to the producer");
	cr_assert_eq(ngot, 4);
	cr_assert_eq(got[3].kind, RK_SIG_EXIT);
	rk_swring_free(&w);
}

static __u64 tails_seen[8], cons_seen[8];

/* collect(), noting what the reader had given back when each record came. */
static void collect_positions(void *ctx, const struct rk_signal *s)
{
	tails_seen[ngot] = pos[1].pos;
	cons_seen[ngot] = rb_cons;
	collect(ctx, s);
}

/* A recorder killed in the middle of a merge handles at most one record again. */
Test(swring, each_record_is_given_back_as_soon_as_it_was_handed_out)
{
	struct rk_swring w;
	__u64 second;

	start(&w);
	bpf_put(0, 10, 1, RK_SIG_SWITCH_IN);
	rb_put(20, 1, RK_SIG_EXEC, SIG, 0);
	second = rb_put(25, 1, RK_SIG_RENAME, SIG, 0);
	bpf_put(0, 30, 1, RK_SIG_SWITCH_OUT);
	rk_swring_snapshot(&w, UINT64_MAX);
	cr_assert_eq(rk_swring_merge(&w, collect_positions, NULL), 4);
	cr_assert_eq(tails_seen[0], 0);
	cr_assert_eq(tails_seen[1], 1, "the switch ring's slot before the ringbuf's record");
	cr_assert_eq(cons_seen[1], 0);
	cr_assert_eq(cons_seen[2], second);
	cr_assert_eq(tails_seen[3], 1);
	cr_assert_eq(cons_seen[3], rb_prod);
	cr_assert_eq(pos[1].pos, 2);
	rk_swring_free(&w);
}

/*
 * A reserved ringbuf record holds back what follows it, in the switch rings
 * too: a fork not committed behind another CPU's record while its child
 * already switched in (below the head) comes before that switch-in.
 */
Test(swring, a_reserved_ringbuf_record_holds_back_what_follows_it_until_committed)
{
	struct rk_swring w;
	__u64 busy;

	start(&w);
	rb_put(10, 1, RK_SIG_EXEC, SIG, 0);
	busy = rb_put(20, 2, RK_SIG_FORK, SIG, RK_RB_BUSY);
	rb_put(30, 3, RK_SIG_EXIT, SIG, 0);
	bpf_put(1, 25, 2, RK_SIG_SWITCH_IN);
	bpf_put(0, 5, 3, RK_SIG_SWITCH_OUT);
	rk_swring_snapshot(&w, UINT64_MAX);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 2, "up to the reserved record");
	cr_assert_eq(got[0].time_ns, 5);
	cr_assert_eq(got[1].kind, RK_SIG_EXEC);
	cr_assert_eq(rb_cons, busy);
	cr_assert_eq(pos[3].pos, 0, "the child's switch-in stays in its ring");
	rb_commit(busy, SIG);
	rk_swring_snapshot(&w, UINT64_MAX);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 3);
	cr_assert_eq(got[2].kind, RK_SIG_FORK);
	cr_assert_eq(got[3].kind, RK_SIG_SWITCH_IN);
	cr_assert_eq(got[3].tid, 2);
	cr_assert_eq(got[4].kind, RK_SIG_EXIT);
	cr_assert_eq(pos[3].pos, 1);
	rk_swring_free(&w);
}

Test(swring, discarded_and_short_ringbuf_records_are_passed_over)
{
	struct rk_swring w;

	start(&w);
	rb_put(10, 1, RK_SIG_EXEC, SIG, RK_RB_DISCARD);
	rb_put(20, 2, RK_SIG_EXEC, 16, 0); /* not a signal */
	rb_put(30, 3, RK_SIG_EXIT, SIG, 0);
	rk_swring_snapshot(&w, UINT64_MAX);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 1);
	cr_assert_eq(got[0].tid, 3);
	cr_assert_eq(w.lost, 1, "the short one is counted");
	cr_assert_eq(rb_cons, rb_prod);
	rk_swring_free(&w);
}

Test(swring, rings_read_many_times_over_wrap)
{
	struct rk_swring w;
	__u64 t = 1;
	int round, k;

	start(&w);
	for (round = 0; round < 20; round++) {
		for (k = 0; k < SLOTS - 1; k++, t++)
			bpf_put(0, t, 1, RK_SIG_SWITCH_IN);
		rb_put(t++, 2, RK_SIG_RENAME, SIG, 0);
		rb_put(t++, 2, RK_SIG_RENAME, SIG, 0);
		rk_swring_snapshot(&w, UINT64_MAX);
		cr_assert_eq(rk_swring_merge(&w, collect, NULL), SLOTS + 1);
		cr_assert_eq(got[ngot - 1].time_ns, t - 1);
		cr_assert_eq(got[ngot - 1].kind, RK_SIG_RENAME,
			     "a record across the ring's end reads whole");
		ngot = 0;
	}
	cr_assert_eq(pos[1].pos, 20 * (SLOTS - 1));
	cr_assert_gt(rb_cons, 2 * RBSIZE, "the ringbuf wrapped");
	rk_swring_free(&w);
}

/* The positions are in maps: a head no BPF of ours writes is never read past the ring. */
Test(swring, bad_positions_and_lengths_read_nothing_out_of_bounds)
{
	struct rk_swring w;
	__u32 hdr[2] = { 4 * RBSIZE, 0 }; /* a length beyond the ringbuf */

	reset();
	pos[0].pos = 1000; /* 1000 records past a tail of 0, in an 8-slot ring */
	pos[2].pos = 5;
	pos[3].pos = 9; /* a tail past its head */
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS, &rb), 0);
	rb_bytes(0, hdr, sizeof(hdr));
	rb_prod = 64;
	rk_swring_snapshot(&w, UINT64_MAX);
	cr_assert_eq(w.lost, 1000 - SLOTS, "what the ring cannot hold is counted");
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), SLOTS, "only what the ring holds is read");
	cr_assert_eq(w.lost, 1000 - SLOTS + 1, "and the ringbuf's bad length");
	cr_assert_eq(pos[1].pos, 1000);
	cr_assert_eq(pos[3].pos, 5, "a tail past its head goes back to the head");
	cr_assert_eq(rb_cons, 64);
	rk_swring_free(&w);
}

Test(swring, resumes_where_a_killed_recorder_stopped)
{
	struct rk_swring w;

	reset();
	pos[2 * 2 + 1].pos = 6;
	pos[2 * 2].pos = 6;
	rb_put(5, 9, RK_SIG_EXEC, SIG, 0);
	rb_cons = rb_prod; /* handled before the kill */
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS, &rb), 0);
	bpf_put(2, 70, 4, RK_SIG_SWITCH_OUT);
	rb_put(60, 4, RK_SIG_EXIT, SIG, 0);
	rk_swring_snapshot(&w, UINT64_MAX);
	cr_assert_eq(rk_swring_merge(&w, collect, NULL), 2);
	cr_assert_eq(got[0].kind, RK_SIG_EXIT);
	cr_assert_eq(got[1].kind, RK_SIG_SWITCH_OUT);
	cr_assert_eq(pos[5].pos, 7);
	rk_swring_free(&w);
}

Test(swring, bad_geometry_is_refused)
{
	struct rk_swring w;
	struct rk_rbuf odd = rb;

	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, 6, &rb), -EINVAL);
	cr_assert_eq(rk_swring_init(&w, ring, pos, 0, SLOTS, &rb), -EINVAL);
	odd.size = 3 * 64;
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS, &odd), -EINVAL);
}

/* record --offcpu's stack rings, beside the switch rings. */
#define ST_SLOTS 4
static struct rk_stack stk[NCPU * ST_SLOTS];
static const struct rk_stack *seen_stack[64];
static __u64 seen_time[64];
static size_t nseen;

static void collect_stack(void *ctx, const struct rk_signal *s)
{
	const struct rk_stack *st = rk_swring_stack(ctx);

	cr_assert_lt(nseen, 64);
	seen_stack[nseen] = st;
	seen_time[nseen] = st ? st->time_ns : 0;
	nseen++;
	(void)s;
}

/* What offcpu_stack() does before the record's commit: a stack for (@t, @tid), flagged. */
static void bpf_put_stack(__u32 cpu, __u64 t, __u32 tid, __u64 tag_t)
{
	__u64 h = pos[2 * cpu].st_pos;
	struct rk_stack *s = &stk[cpu * ST_SLOTS + (h & (ST_SLOTS - 1))];
	struct rk_swrec *r;

	cr_assert_lt(h - pos[2 * cpu + 1].st_pos, ST_SLOTS,
		     "BPF writes only into a ring with room");
	memset(s, 0, sizeof(*s));
	s->time_ns = tag_t;
	s->tid = tid;
	s->nr_kernel = 2;
	s->nr_user = 3;
	pos[2 * cpu].st_pos = h + 1;
	bpf_put(cpu, t, tid, RK_SIG_SWITCH_OUT);
	r = &ring[cpu * SLOTS + ((pos[2 * cpu].pos - 1) & (SLOTS - 1))];
	r->flags = RK_SIGF_STACK;
}

/*
 * Flagged records take their CPU's stacks in order, across the stack
 * ring's wrap; unflagged ones have none; a stack that is not its record's
 * (time or tid) is counted lost and not handed out; the stack tail follows.
 */
Test(swring, stacks_follow_their_records)
{
	struct rk_swring w;
	size_t i;

	memset(ring, 0, sizeof(ring));
	memset(pos, 0, sizeof(pos));
	memset(stk, 0, sizeof(stk));
	rb_cons = rb_prod = 0;
	nseen = 0;
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS, &rb), 0);
	cr_assert_eq(rk_swring_set_stacks(&w, stk, 3), -EINVAL, "not a power of two");
	cr_assert_eq(rk_swring_set_stacks(&w, stk, ST_SLOTS), 0);
	for (i = 0; i < 3; i++) {
		bpf_put_stack(1, 100 + 10 * i, 7, 100 + 10 * i);
		bpf_put(1, 105 + 10 * i, 7, RK_SIG_SWITCH_IN);
	}
	rk_swring_snapshot(&w, 1000);
	rk_swring_merge(&w, collect_stack, &w);
	cr_assert_eq(nseen, 6);
	for (i = 0; i < 6; i++)
		cr_assert_eq(!!seen_stack[i], !(i & 1), "record %zu", i);
	cr_assert_eq(seen_time[0], 100);
	cr_assert_eq(seen_time[4], 120);
	cr_assert_eq(pos[3].st_pos, 3, "the stack tail follows what was handed out");
	/* Past the stack ring's end, and one stack that is not its record's. */
	nseen = 0;
	bpf_put_stack(1, 200, 7, 200);
	bpf_put_stack(1, 210, 7, 999);
	rk_swring_snapshot(&w, 1000);
	rk_swring_merge(&w, collect_stack, &w);
	cr_assert_eq(nseen, 2);
	cr_assert_not_null(seen_stack[0]);
	cr_assert_eq(seen_time[0], 200);
	cr_assert_null(seen_stack[1], "a stack tagged for another record was handed out");
	cr_assert_eq(w.st_lost, 1);
	cr_assert_eq(pos[3].st_pos, 5);
	rk_swring_free(&w);
}

/* Without stack rings (a session recorded without --offcpu), a flagged record is counted, not read. */
Test(swring, flagged_record_without_stack_rings)
{
	struct rk_swring w;

	memset(ring, 0, sizeof(ring));
	memset(pos, 0, sizeof(pos));
	rb_cons = rb_prod = 0;
	nseen = 0;
	cr_assert_eq(rk_swring_init(&w, ring, pos, NCPU, SLOTS, &rb), 0);
	bpf_put(0, 50, 9, RK_SIG_SWITCH_OUT);
	ring[0].flags = RK_SIGF_STACK;
	rk_swring_snapshot(&w, 1000);
	rk_swring_merge(&w, collect_stack, &w);
	cr_assert_eq(nseen, 1);
	cr_assert_null(seen_stack[0]);
	cr_assert_eq(w.st_lost, 1);
	rk_swring_free(&w);
}
