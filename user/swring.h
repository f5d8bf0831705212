/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * swring.h - the BPF signals in time order: sched_switch's per-CPU switch
 * rings (struct rk_swrec, layout in ringkeeper.h) merged with the records
 * of the signal ringbuf.
 *
 * One intake is: rk_swring_snapshot() (the horizon, then every ring's head),
 * then the ringbuf consumed into rk_swring_pend(), then rk_swring_merge(),
 * which hands every record older than the horizon to the callback, oldest
 * first, and gives the rings' slots back (their tails).
 *
 * Why this order is enough, for the loader's one real constraint (a
 * thread's records in the order they happened, a fork before its child's
 * first switch): a record's time is taken before it is published. A child
 * runs only after its fork record is committed, so any switch of it in the
 * head snapshot has its fork in the ringbuf consumed after the snapshot. A
 * ringbuf record older than the horizon was written by a task whose earlier
 * switches were published before that record was even timed, so before the
 * snapshot. What is newer than the horizon waits for the next intake.
 *
 * Owns: the pending ringbuf records and the read positions of the rings;
 * the mappings are the caller's.
 * May call: libc only.
 */
#ifndef RK_SWRING_H
#define RK_SWRING_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "ringkeeper.h"

typedef void (*rk_swring_fn)(void *ctx, const struct rk_signal *s);

struct rk_swring {
	const struct rk_swrec *ring; /* ncpu * slots records, read only */
	struct rk_swpos *pos; /* 2 * ncpu: head (BPF's), tail (ours) */
	__u32 ncpu, slots; /* slots: a power of two */
	__u64 *cur; /* per CPU: the next record to read */
	__u64 *heads; /* per CPU: the head at the snapshot */
	uint64_t horizon; /* the snapshot's time (CLOCK_MONOTONIC) */
	struct rk_signal *pend; /* ringbuf records not handed out yet, by time once merged */
	size_t npend, cappend;
	__u64 lost; /* records a head beyond the ring's size claimed (never by our BPF) */
};

/*
 * Set @w up over mapped @ring and @pos; reading starts at each ring's tail
 * (0 for new maps, where a killed recorder stopped on resume).
 * Return: 0, or -ENOMEM / -EINVAL (slots not a power of two, or none).
 */
int rk_swring_init(struct rk_swring *w, const struct rk_swrec *ring, struct rk_swpos *pos,
		   __u32 ncpu, __u32 slots);
void rk_swring_free(struct rk_swring *w);
/* The horizon (@now; UINT64_MAX: everything, at the end) and every ring's head. */
void rk_swring_snapshot(struct rk_swring *w, uint64_t now);
/* A ringbuf record (@size bytes) to merge. Return: 0, -ENOMEM, or -EINVAL (too short). */
int rk_swring_pend(struct rk_swring *w, const void *data, size_t size);
/*
 * Hand every record older than the horizon to @fn, oldest first (a ringbuf
 * record before a switch of the same time), then store the tails.
 * Return: how many were handed out.
 */
size_t rk_swring_merge(struct rk_swring *w, rk_swring_fn fn, void *ctx);
/* Records the switch rings ever took (the sum of their heads at the snapshot). */
__u64 rk_swring_written(const struct rk_swring *w);

#endif /* RK_SWRING_H */
