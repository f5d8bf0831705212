/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pinpool.h - worker threads that mlock a thread's buffer while the thread
 * runs and munlock it after, under a per-user budget.
 *
 * The event path only records the latest wanted state of an item and queues
 * it once (coalescing); workers do the syscalls. An item that goes off CPU
 * stays locked for a linger time (hysteresis: a thread bouncing on and off
 * CPU costs no syscall), unless its budget is needed by a thread that is on
 * CPU, in which case the least recently used lingering item is unlocked
 * first. Locked bytes are accounted before mlock and released after
 * munlock, so the accounted figure is never below the real one and never
 * above the budget.
 */
#ifndef RK_PINPOOL_H
#define RK_PINPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

/**
 * struct rk_pin_ops - how to lock and unlock; NULL members mean
 * mlock/munlock. Tests replace them to count calls.
 * @release: called by a worker once a retired item is unlocked (may be NULL).
 * @now: the clock of queue ages and pin times, in ns (NULL: CLOCK_MONOTONIC,
 *	the clock of the now_ns arguments). Tests replace it to set ages exactly.
 */
struct rk_pin_ops {
	int (*lock)(void *addr, size_t len, void *ctx);
	int (*unlock)(void *addr, size_t len, void *ctx);
	void (*release)(void *item_owner, void *ctx);
	void *ctx;
	uint64_t (*now)(void *ctx);
};

/**
 * struct rk_pin_item - one buffer's pin state, embedded in its owner.
 * @addr, @len, @uid: what to lock and whose budget it counts against.
 * @owner: passed to ops->release.
 * The rest is the pool's, under its lock.
 */
struct rk_pin_item {
	void *addr;
	size_t len;
	uid_t uid;
	void *owner;
	__u32 *pinned_flag; /* if set, the pool stores 1/0 here (live view) */
	/*
	 * If set, the event source's "wake me at this thread's next switch-in"
	 * flag (0: wake; 1: not needed): the pool stores 1 when it learns of a
	 * switch-in, and 0 when a lock would be wanted at the next one (the
	 * buffer was unlocked, or a run long enough ended unlocked). Items of
	 * one thread may share it.
	 */
	__u8 *asked;
	/* private */
	struct rk_pin_item *q_next, *q_prev;
	uint64_t queued_at; /* CLOCK_MONOTONIC when queued for a pin */
	struct rk_pin_item *lru_prev, *lru_next;
	struct rk_pin_item *w_prev, *w_next; /* on CPU and not locked for a short last run */
	uint64_t off_since;
	uint64_t on_since; /* switch-in of the current run, 0 while off CPU */
	uint64_t last_run_ns; /* on-CPU length of its last run (see RK_PIN_PREEMPTED), 0 if none yet */
	uint64_t run_ns; /* on-CPU time of the current run, before its last preemption */
	uint64_t pinned_at; /* CLOCK_MONOTONIC of the last completed pin, 0 if unpinned */
	uint64_t want_since; /* the switch-in that asked for the pin in flight, 0: none */
	unsigned wanted : 1, pinned : 1, queued : 1, busy : 1, in_lru : 1, retired : 1,
		in_watch : 1;
	/* preempted: off CPU but runnable; a pin in flight still lands (then it lingers) */
	unsigned soon : 1;
	/* the last pin was refused, failed or passed over (no room): no wakeup until one works */
	unsigned refused : 1;
};

struct rk_pin_opts {
	unsigned int workers; /* 0: online CPUs */
	uint64_t budget; /* bytes per user */
	uint64_t linger_ns; /* keep an off-CPU buffer locked this long */
	const struct rk_pin_ops *ops; /* NULL: mlock/munlock */
	uint64_t max_wait_ns; /* a pin queued longer goes before newer ones; 0: 10 ms */
	/*
	 * SCHED_FIFO priority of the workers (0: SCHED_OTHER). The event loop
	 * waits on the pool's lock and on the mm lock mlock takes: a worker
	 * below it, preempted while holding either, stalls it (inversion).
	 */
	int rt_prio;
	/*
	 * Do not pin a thread whose last run was shorter than this, or that
	 * has had no run yet (a new thread: most live a few runs of a few
	 * microseconds): it would be off CPU again before the lock lands (a
	 * lock takes ~100 us), and the pin, and the eviction that makes room
	 * for it, only cost. Its records are written all the same; a run that
	 * goes on past it is locked at the next rk_pin_tick(). 0: pin every
	 * switch-in.
	 */
	uint64_t min_run_ns;
	/*
	 * rk_pin_want() locks a buffer of at most this many bytes itself, in
	 * the caller's thread, when the budget has room without an eviction:
	 * no worker wakeup on the way (0: workers do every lock). Unlocks
	 * and evictions stay with the workers.
	 */
	size_t inline_max;
};

/** struct rk_pin_stats - counters; locked/peak are of the user with most. */
struct rk_pin_stats {
	uint64_t pins; /* lock calls that succeeded */
	uint64_t unpins; /* unlock calls */
	uint64_t refusals; /* pins refused by the budget */
	uint64_t evictions; /* lingering items unlocked early for another */
	uint64_t lock_errors; /* lock calls that failed (ENOMEM, EPERM...) */
	uint64_t coalesced; /* state changes that needed no syscall */
	uint64_t skipped_short; /* runs not pinned: the last one was < min_run_ns */
	uint64_t inline_pins; /* pins done by rk_pin_want()'s caller (opts.inline_max) */
	uint64_t locked; /* bytes accounted now, all users */
	uint64_t peak; /* highest per-user accounted bytes */
	uint64_t budget;
	int last_lock_errno;
	/*
	 * Switch-in to pinned: one sample per run whose buffer had to be
	 * locked; percentiles as the upper bound of a log-scale bucket (4 per
	 * power of two). @lat_hot: runs whose buffer was still locked.
	 */
	uint64_t lat_n, lat_p50_ns, lat_p99_ns, lat_hot;
	uint64_t oncpu_ns; /* on-CPU time of the items' threads (per item) */
	uint64_t oncpu_pinned_ns; /* the part of it during which the item was locked */
};

#define RK_PIN_LAT_BUCKETS 256

struct rk_pin_pool;

/** rk_pin_pool__new() - start the workers. Return: pool, or NULL with errno set. */
struct rk_pin_pool *rk_pin_pool__new(const struct rk_pin_opts *opts);

/**
 * rk_pin_pool__free() - unlock lingering items, wait for pending work, stop
 * the workers, free; NULL is a no-op. Retire every item first: an item that
 * is still wanted (on CPU) when the pool goes stays locked until its memory
 * is unmapped.
 */
void rk_pin_pool__free(struct rk_pin_pool *pool);

/* What rk_pin_want() is told. */
#define RK_PIN_OFF 0 /* off CPU: asleep, blocked, exited */
#define RK_PIN_ON 1 /* on CPU */
/*
 * Off CPU but still runnable (preempted): its run goes on at its next
 * switch-in. For --min-run-us, a run lasts from a switch-in after a sleep
 * to the next sleep, the preempted parts added up: a run cut by our own
 * wakeup is not a short one.
 */
#define RK_PIN_PREEMPTED 2

/** rk_pin_want() - the item's thread went on or off CPU (@how: RK_PIN_*) at @now_ns. */
void rk_pin_want(struct rk_pin_pool *pool, struct rk_pin_item *it, int how, uint64_t now_ns);

/** rk_pin_tick() - queue the unlock of items that lingered past linger_ns. */
void rk_pin_tick(struct rk_pin_pool *pool, uint64_t now_ns);

/**
 * rk_pin_retire() - the item will not run again: unlock it and call
 * ops->release(owner) from a worker. The pool does not touch it after that.
 * An item that is idle (not locked, queued or worked on: most threads that
 * lived a few short runs) needs no worker: ops->release is called here, in
 * the caller's thread, with no hand-off between threads.
 */
void rk_pin_retire(struct rk_pin_pool *pool, struct rk_pin_item *it);

/** rk_pin_flush() - wait until no item is queued or being worked on. */
void rk_pin_flush(struct rk_pin_pool *pool);

/** rk_pin_pool__stats() - a consistent copy of the counters. */
void rk_pin_pool__stats(struct rk_pin_pool *pool, struct rk_pin_stats *st);

/** rk_pin_lat_bucket() - histogram bucket of @ns; rk_pin_lat_upper(): its largest value. */
unsigned int rk_pin_lat_bucket(uint64_t ns);
uint64_t rk_pin_lat_upper(unsigned int bucket);

/** rk_pin_is_pinned() - whether @it is locked now (racy by nature: a hint). */
int rk_pin_is_pinned(struct rk_pin_pool *pool, const struct rk_pin_item *it);

#endif /* RK_PINPOOL_H */
