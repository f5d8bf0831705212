/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * swring.h - the BPF signals in time order: sched_switch's per-CPU switch
 * rings (struct rk_swrec, layout in ringkeeper.h) merged with the signal
 * ringbuf (the other hooks' struct rk_signal records).
 *
 * One intake is: rk_swring_snapshot() (the horizon, then every switch
 * ring's head), then rk_swring_merge(), which hands every record older
 * than the horizon to the callback, oldest first, and then gives back what
 * it read: the switch rings' tails and the ringbuf's consumer position. A
 * record is consumed only once it was handed out: what a killed recorder
 * had not handled is still in the (pinned) rings for --resume.
 *
 * Why this order is enough, for the loader's one real constraint (a
 * thread's records in the order they happened, a fork before its child's
 * first switch): a record's time is taken before it is published. A child
 * runs only after its fork record is committed, so any switch of it below
 * the heads read at the snapshot has its fork in the ringbuf, which the
 * merge reads after the snapshot, unless a record before it is reserved and
 * not yet committed (another CPU's): then the merge stops there and hands
 * out nothing more, from any ring, until the next intake (a reserved
 * record's time is unknown). A ringbuf record older than the horizon
 * was written by a task whose earlier switches were published before that
 * record was even timed, so before the snapshot. What is newer than the
 * horizon waits for the next intake. The ringbuf is read in its own order
 * (a hook preempted between its clock read and its reserve commits late,
 * as with one ringbuf for all).
 *
 * Owns: the read positions; the mappings are the caller's.
 * May call: libc only.
 */
#ifndef RK_SWRING_H
#define RK_SWRING_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "ringkeeper.h"

typedef void (*rk_swring_fn)(void *ctx, const struct rk_signal *s);

/* A source of the merge: id 0 the ringbuf, 1 + c CPU c's ring; t its next record's time. */
struct rk_swsrc {
	uint64_t t;
	__u32 id;
};

/* A BPF ringbuf as the kernel maps it (the layout libbpf's consumer reads). */
struct rk_rbuf {
	__u64 *cons; /* the consumer position: ours to store */
	const __u64 *prod; /* the producer position: the kernel's */
	const __u8 *data; /* size bytes of records, mapped twice in a row */
	__u64 size; /* a power of two */
};

/* The ringbuf record header: length, with these two bits, then a page offset. */
#define RK_RB_BUSY (1u << 31)
#define RK_RB_DISCARD (1u << 30)
#define RK_RB_HDR 8u

struct rk_swring {
	const struct rk_swrec *ring; /* ncpu * slots records, read only */
	struct rk_swpos *pos; /* 2 * ncpu: head (BPF's), tail (ours) */
	__u32 ncpu, slots; /* slots: a power of two */
	__u64 *cur; /* per CPU: the next record to read */
	__u64 *heads; /* per CPU: the head at the snapshot */
	uint64_t horizon; /* the snapshot's time (CLOCK_MONOTONIC) */
	struct rk_rbuf rb;
	__u64 rb_pos; /* the next ringbuf byte to read */
	/* Records not read: beyond a ring's size, or not a signal (never from our BPF). */
	__u64 lost;
	struct rk_swsrc *heap; /* the merge's sources, ncpu + 1 (allocated once) */
	/* record --offcpu: the stack rings (struct rk_stack), NULL without */
	const struct rk_stack *st_ring; /* ncpu * st_slots, read only */
	__u32 st_slots; /* a power of two */
	__u64 *st_cur; /* per CPU: the next stack to read (its tail: pos[2c + 1].st_pos) */
	struct rk_stack stack; /* the stack of the record being handed out, a copy */
	int has_stack; /* ... if it has one */
	/* Flagged records whose stack was not there (no ring, or not theirs: time or tid). */
	__u64 st_lost;
	/*
	 * Set by the callback: the merge hands out no more, and none after it
	 * (a recorder stopped under a backlog, whose time ran out).
	 */
	int stop;
};

/*
 * Set @w up over mapped @ring and @pos, and the ringbuf @rb; reading starts
 * at each switch ring's tail and at the ringbuf's consumer position (0 for
 * new maps, where a killed recorder stopped on resume).
 * Return: 0, or -ENOMEM / -EINVAL (a size not a power of two, or none).
 */
int rk_swring_init(struct rk_swring *w, const struct rk_swrec *ring, struct rk_swpos *pos,
		   __u32 ncpu, __u32 slots, const struct rk_rbuf *rb);
void rk_swring_free(struct rk_swring *w);
/* The horizon (@now; UINT64_MAX: everything, at the end) and every switch ring's head. */
void rk_swring_snapshot(struct rk_swring *w, uint64_t now);
/*
 * Hand every record older than the horizon to @fn, oldest first (a ringbuf
 * record before a switch ring's of the same time), up to a reserved,
 * uncommitted ringbuf record if there is one, then store the tails
 * and the ringbuf's consumer position. @fn must not start an intake.
 * Return: how many were handed out.
 */
size_t rk_swring_merge(struct rk_swring *w, rk_swring_fn fn, void *ctx);
/*
 * @fn for each committed ringbuf signal the merge left for a later intake
 * (newer than the horizon), in ringbuf order; nothing is consumed or
 * handed out. For what must be known before its turn comes.
 * Return: 0 if it read up to the producer, -1 if it stopped at a reserved
 * record (committed ones may follow it: not looked at).
 */
int rk_swring_peek_pending(struct rk_swring *w, rk_swring_fn fn, void *ctx);
/*
 * rk_swring_set_stacks() - read @ring (@slots stacks per CPU, a power of
 * two), the stack rings of record --offcpu, from their tails: a record
 * flagged RK_SIGF_STACK takes its CPU's next stack. Return: 0, -EINVAL,
 * -ENOMEM.
 */
int rk_swring_set_stacks(struct rk_swring *w, const struct rk_stack *ring, __u32 slots);
/*
 * rk_swring_stack() - during the callback of a merge, the stack of the
 * record handed out (a copy, valid until the callback returns), or NULL.
 */
const struct rk_stack *rk_swring_stack(const struct rk_swring *w);
/*
 * rk_swring_left() - the signals a merge left in the rings, up to the last
 * snapshot's heads and the ringbuf's producer (committed ones), not handed
 * out; nothing is consumed. For what a stopped merge did not record.
 */
__u64 rk_swring_left(struct rk_swring *w);
/* Records the switch rings ever took (the sum of their heads at the snapshot). */
__u64 rk_swring_written(const struct rk_swring *w);

#endif /* RK_SWRING_H */
