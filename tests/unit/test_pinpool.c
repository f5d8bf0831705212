// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Pin pool: budget, coalescing, linger, eviction, retire; with counting fake ops. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "pinpool.h"

#define L 4096u
#define MS 1000000ull

static char mem[64][L];

struct fake {
	pthread_mutex_t m;
	long locks, unlocks, releases;
	uint64_t locked, max_locked; /* what the "kernel" has locked */
	int fail_next;
	pthread_cond_t c;
	int gate_closed; /* locking mem[1] waits until the test opens it */
	int at_gate; /* a worker waits there */
	uint64_t clock_ns; /* the pool's clock, where a test sets it */
	int order[64]; /* mem index of each successful lock, in order */
	int norder;
};

static int f_lock(void *addr, size_t len, void *ctx)
{
	struct fake *f = ctx;
	int err = 0;

	(void)addr;
	pthread_mutex_lock(&f->m);
	f->locks++;
	if (f->fail_next) {
		f->fail_next = 0;
		err = -ENOMEM;
	} else {
		f->locked += len;
		if (f->locked > f->max_locked)
			f->max_locked = f->locked;
	}
	pthread_mutex_unlock(&f->m);
	return err;
}

/* munlock of a range that is not locked is harmless; model that. */
static int f_unlock(void *addr, size_t len, void *ctx)
{
	struct fake *f = ctx;
	char *a = addr;

	pthread_mutex_lock(&f->m);
	f->unlocks++;
	if (a[0] == 1) { /* our items mark "locked" in their first byte */
		f->locked -= len;
		a[0] = 0;
	}
	pthread_mutex_unlock(&f->m);
	return 0;
}

static int f_lock_mark(void *addr, size_t len, void *ctx)
{
	struct fake *f = ctx;
	int err;

	pthread_mutex_lock(&f->m);
	while (addr == mem[1] && f->gate_closed) {
		f->at_gate = 1;
		pthread_cond_broadcast(&f->c);
		pthread_cond_wait(&f->c, &f->m);
	}
	pthread_mutex_unlock(&f->m);
	err = f_lock(addr, len, ctx);

	if (!err) {
		((char *)addr)[0] = 1;
		pthread_mutex_lock(&f->m);
		if (f->norder < 64)
			f->order[f->norder++] = (int)(((char(*)[L])addr) - mem);
		pthread_mutex_unlock(&f->m);
	}
	return err;
}

static void f_release(void *owner, void *ctx)
{
	struct fake *f = ctx;

	(void)owner;
	pthread_mutex_lock(&f->m);
	f->releases++;
	pthread_mutex_unlock(&f->m);
}

static uint64_t f_now(void *ctx)
{
	struct fake *f = ctx;
	uint64_t t;

	pthread_mutex_lock(&f->m);
	t = f->clock_ns;
	pthread_mutex_unlock(&f->m);
	return t;
}

static struct fake fk;
static struct rk_pin_ops ops = { f_lock_mark, f_unlock, f_release, &fk, NULL };
static struct rk_pin_ops ops_clock = { f_lock_mark, f_unlock, f_release, &fk, f_now };

static void reset(void)
{
	memset(&fk, 0, sizeof(fk));
	pthread_mutex_init(&fk.m, NULL);
	pthread_cond_init(&fk.c, NULL);
	memset(mem, 0, sizeof(mem));
}

TestSuite(pinpool, .init = reset);

/* Until a worker waits at the closed gate, inside the lock call of mem[1] (bounded). */
static void gate_reached(void)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&fk.m);
	while (!fk.at_gate)
		cr_assert_neq(pthread_cond_timedwait(&fk.c, &fk.m, &until), ETIMEDOUT,
			      "the worker never took mem[1]");
	pthread_mutex_unlock(&fk.m);
}

/* Let the worker at the gate go on. */
static void gate_open(void)
{
	pthread_mutex_lock(&fk.m);
	fk.gate_closed = 0;
	pthread_cond_broadcast(&fk.c);
	pthread_mutex_unlock(&fk.m);
}

static struct rk_pin_pool *pool(uint64_t budget, uint64_t linger, unsigned int workers)
{
	struct rk_pin_opts o = {
		.workers = workers, .budget = budget, .linger_ns = linger, .ops = &ops
	};
	struct rk_pin_pool *p = rk_pin_pool__new(&o);

	cr_assert_not_null(p);
	return p;
}

static void item(struct rk_pin_item *it, int i, uid_t uid)
{
	memset(it, 0x5a, sizeof(*it)); /* poison, then set the public part */
	memset(it, 0, sizeof(*it));
	it->addr = mem[i];
	it->len = L;
	it->uid = uid;
	it->owner = it;
}

Test(pinpool, zero_budget_is_refused)
{
	struct rk_pin_opts o = { .budget = 0 };

	errno = 0;
	cr_assert_null(rk_pin_pool__new(&o));
	cr_assert_eq(errno, EINVAL);
	rk_pin_pool__free(NULL);
}

Test(pinpool, budget_refuses_third_pin_and_data_path_goes_on)
{
	struct rk_pin_pool *p = pool(2 * L, 1000 * MS, 2);
	struct rk_pin_item it[3];
	struct rk_pin_stats st;
	int i;

	for (i = 0; i < 3; i++) {
		item(&it[i], i, 1000);
		rk_pin_want(p, &it[i], 1, 0);
	}
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_eq(st.pins, 2);
	cr_assert_eq(st.refusals, 1);
	cr_assert_eq(st.locked, 2 * L);
	cr_assert_leq(st.peak, 2 * L);
	cr_assert_eq(fk.locked, 2 * L);
	for (i = 0; i < 3; i++)
		rk_pin_retire(p, &it[i]);
	rk_pin_pool__free(p);
	cr_assert_eq(fk.locked, 0, "retire + free unlocks everything");
	cr_assert_eq(fk.releases, 3);
}

Test(pinpool, budget_is_per_user)
{
	struct rk_pin_pool *p = pool(L, 1000 * MS, 1);
	struct rk_pin_item a, b;
	struct rk_pin_stats st;

	item(&a, 0, 1000);
	item(&b, 1, 1001);
	rk_pin_want(p, &a, 1, 0);
	rk_pin_want(p, &b, 1, 0);
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_eq(st.pins, 2, "two users, one buffer each");
	cr_assert_eq(st.refusals, 0);
	rk_pin_pool__free(p);
}

Test(pinpool, bouncing_thread_costs_one_lock)
{
	struct rk_pin_pool *p = pool(2 * L, 1000 * MS, 2);
	struct rk_pin_item a;
	struct rk_pin_stats st;
	int i;

	item(&a, 0, 0);
	rk_pin_want(p, &a, 1, 0);
	rk_pin_flush(p);
	for (i = 0; i < 1000; i++) {
		rk_pin_want(p, &a, 0, (uint64_t)i * 1000);
		rk_pin_tick(p, (uint64_t)i * 1000 + 500); /* well within the linger time */
		rk_pin_want(p, &a, 1, (uint64_t)i * 1000 + 600);
	}
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_eq(fk.locks, 1, "one mlock for 1000 on/off cycles, got %ld", fk.locks);
	cr_assert_eq(fk.unlocks, 0);
	cr_assert_eq(st.coalesced, 1000);
	rk_pin_pool__free(p);
}

Test(pinpool, on_off_before_worker_runs_is_coalesced_away)
{
	struct rk_pin_pool *p = pool(2 * L, 0, 1);
	struct rk_pin_item a, blocker;
	struct rk_pin_stats st;

	item(&a, 0, 0);
	item(&blocker, 1, 0);
	/* Keep the only worker busy on the blocker... */
	fk.gate_closed = 1;
	rk_pin_want(p, &blocker, 1, 0);
	/* ...while a goes on and off: the latest state wins, no syscall for a. */
	rk_pin_want(p, &a, 1, 0);
	rk_pin_want(p, &a, 0, 1);
	gate_open();
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_eq(fk.locks, 1, "only the blocker was locked");
	cr_assert_eq(st.pins, 1);
	cr_assert_eq(st.coalesced, 1);
	cr_assert_not(rk_pin_is_pinned(p, &a));
	rk_pin_pool__free(p);
}

Test(pinpool, linger_then_unlock)
{
	struct rk_pin_pool *p = pool(2 * L, 10 * MS, 1);
	struct rk_pin_item a;

	item(&a, 0, 0);
	rk_pin_want(p, &a, 1, 0);
	rk_pin_flush(p);
	cr_assert(rk_pin_is_pinned(p, &a));
	rk_pin_want(p, &a, 0, 100 * MS);
	rk_pin_tick(p, 105 * MS);
	rk_pin_flush(p);
	cr_assert(rk_pin_is_pinned(p, &a), "still lingering");
	rk_pin_tick(p, 111 * MS);
	rk_pin_flush(p);
	cr_assert_not(rk_pin_is_pinned(p, &a));
	cr_assert_eq(fk.unlocks, 1);
	cr_assert_eq(fk.locked, 0);
	rk_pin_pool__free(p);
}

Test(pinpool, lingering_buffer_is_evicted_for_a_running_thread)
{
	struct rk_pin_pool *p = pool(2 * L, 1000 * MS, 1);
	struct rk_pin_item it[3];
	struct rk_pin_stats st;
	int i;

	for (i = 0; i < 3; i++)
		item(&it[i], i, 7);
	rk_pin_want(p, &it[0], 1, 0);
	rk_pin_want(p, &it[1], 1, 0);
	rk_pin_flush(p);
	rk_pin_want(p, &it[0], 0, 1); /* lingers */
	rk_pin_want(p, &it[2], 1, 2);
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_eq(st.evictions, 1);
	cr_assert_eq(st.refusals, 0);
	cr_assert_not(rk_pin_is_pinned(p, &it[0]));
	cr_assert(rk_pin_is_pinned(p, &it[1]));
	cr_assert(rk_pin_is_pinned(p, &it[2]));
	cr_assert_eq(fk.max_locked, 2 * L);
	rk_pin_pool__free(p);
}

Test(pinpool, lock_failure_is_counted_and_unaccounted)
{
	struct rk_pin_pool *p = pool(2 * L, 1000 * MS, 1);
	struct rk_pin_item a;
	struct rk_pin_stats st;
	__u32 flag = 7;

	item(&a, 0, 0);
	a.pinned_flag = &flag;
	fk.fail_next = 1;
	rk_pin_want(p, &a, 1, 0);
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_eq(st.lock_errors, 1);
	cr_assert_eq(st.last_lock_errno, ENOMEM);
	cr_assert_eq(st.locked, 0);
	cr_assert_eq(st.pins, 0);
	cr_assert_eq(flag, 7, "flag untouched on failure");
	/* Next switch-in retries. */
	rk_pin_want(p, &a, 0, 1);
	rk_pin_want(p, &a, 1, 2);
	rk_pin_flush(p);
	cr_assert(rk_pin_is_pinned(p, &a));
	cr_assert_eq(flag, 1);
	rk_pin_pool__free(p);
}

Test(pinpool, retire_unlocks_and_releases_once)
{
	struct rk_pin_pool *p = pool(2 * L, 1000 * MS, 2);
	struct rk_pin_item a, b;

	item(&a, 0, 0);
	item(&b, 1, 0);
	rk_pin_want(p, &a, 1, 0);
	rk_pin_flush(p);
	rk_pin_retire(p, &a);
	rk_pin_retire(p, &a);
	rk_pin_retire(p, &b); /* never pinned */
	rk_pin_flush(p);
	cr_assert_eq(fk.releases, 2);
	cr_assert_eq(fk.locked, 0);
	rk_pin_want(p, &a, 1, 5); /* ignored after retire */
	rk_pin_flush(p);
	cr_assert_eq(fk.locks, 1);
	rk_pin_pool__free(p);
}

struct stress {
	struct rk_pin_pool *p;
	struct rk_pin_item *it;
	int n;
	unsigned int seed;
};

static void *stress_fn(void *arg)
{
	struct stress *s = arg;
	int k;

	for (k = 0; k < 20000; k++) {
		int i = rand_r(&s->seed) % s->n;

		rk_pin_want(s->p, &s->it[i], rand_r(&s->seed) & 1, (uint64_t)k * 1000);
		if (k % 50 == 0)
			rk_pin_tick(s->p, (uint64_t)k * 1000);
	}
	return NULL;
}

/* Invariant 1 with real concurrency: what is locked never exceeds the budget. */
Test(pinpool, locked_never_exceeds_budget_under_concurrency)
{
	struct rk_pin_pool *p = pool(3 * L, 20000, 3);
	struct rk_pin_item it[64];
	struct stress s[2];
	pthread_t th[2];
	struct rk_pin_stats st;
	int i;

	for (i = 0; i < 64; i++)
		item(&it[i], i, 0);
	for (i = 0; i < 2; i++) {
		s[i] = (struct stress){ p, it, 64, (unsigned int)i + 1 };
		pthread_create(&th[i], NULL, stress_fn, &s[i]);
	}
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_leq(fk.max_locked, 3 * L, "kernel-side locked %lu > budget",
		      (unsigned long)fk.max_locked);
	cr_assert_leq(st.peak, 3 * L);
	cr_assert_gt(st.pins, 0);
	cr_assert_eq(st.locked, fk.locked, "accounting agrees with what is locked");
	for (i = 0; i < 64; i++)
		rk_pin_retire(p, &it[i]);
	rk_pin_flush(p);
	cr_assert_eq(fk.releases, 64);
	cr_assert_eq(fk.locked, 0);
	rk_pin_pool__free(p);
}

/* The real syscalls on a real shmem mapping. */
Test(pinpool, real_mlock_on_memfd)
{
	struct rk_pin_opts o = { .workers = 1, .budget = 1 << 20, .linger_ns = 0 };
	struct rk_pin_pool *p = rk_pin_pool__new(&o);
	struct rk_pin_item a;
	struct rk_pin_stats st;
	int fd = memfd_create("rk-test", 0);
	void *m;

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 65536), 0);
	m = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(m, MAP_FAILED);
	memset(&a, 0, sizeof(a));
	a.addr = m;
	a.len = 65536;
	rk_pin_want(p, &a, 1, 0);
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	if (st.lock_errors)
		cr_skip_test("mlock refused here (errno %d): no CAP_IPC_LOCK and a low "
			     "RLIMIT_MEMLOCK",
			     st.last_lock_errno);
	cr_assert_eq(st.pins, 1);
	cr_assert(rk_pin_is_pinned(p, &a));
	rk_pin_want(p, &a, 0, 1);
	rk_pin_tick(p, 10);
	rk_pin_flush(p);
	cr_assert_not(rk_pin_is_pinned(p, &a));
	rk_pin_pool__free(p);
	munmap(m, 65536);
	close(fd);
}

Test(pinpool, latency_buckets_bound_their_values)
{
	uint64_t v[] = { 0, 1, 3, 4, 7, 8, 9, 10, 1000, 123456, 999999999, 1ull << 40 };
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		unsigned int b = rk_pin_lat_bucket(v[i]);

		cr_assert_lt(b, RK_PIN_LAT_BUCKETS);
		cr_assert_geq(rk_pin_lat_upper(b), v[i], "%llu", (unsigned long long)v[i]);
		/* Within 25% above: 4 buckets per power of two. */
		cr_assert_leq(rk_pin_lat_upper(b), v[i] + v[i] / 4 + 1, "%llu",
			      (unsigned long long)v[i]);
		if (b)
			cr_assert_lt(rk_pin_lat_upper(b - 1 - (b == 8 ? 4 : 0)), v[i] + 1);
	}
}

/*
 * One worker held on mem[1]; pins queued meanwhile (mem[2], then mem[3..9])
 * are served newest first, but every fourth pin is the oldest if it waited
 * longer than max_wait. The pool's clock is the test's: ages are exact.
 */
static void queue_order(int age_first, const int *want)
{
	struct rk_pin_opts o = { .workers = 1,
				 .budget = 64 * L,
				 .linger_ns = 1000 * MS,
				 .ops = &ops_clock,
				 .max_wait_ns = 300 * MS };
	struct rk_pin_pool *p;
	struct rk_pin_item it[10];
	int i;

	fk.clock_ns = 1000 * MS;
	p = rk_pin_pool__new(&o);
	cr_assert_not_null(p);
	for (i = 1; i < 10; i++)
		item(&it[i], i, 1000);
	fk.gate_closed = 1;
	rk_pin_want(p, &it[1], 1, 1);
	gate_reached();
	pthread_mutex_lock(&fk.m);
	fk.clock_ns += MS;
	pthread_mutex_unlock(&fk.m);
	rk_pin_want(p, &it[2], 1, 2);
	pthread_mutex_lock(&fk.m);
	fk.clock_ns += age_first ? 400 * MS : MS; /* over max_wait, or far under it */
	pthread_mutex_unlock(&fk.m);
	for (i = 3; i < 10; i++)
		rk_pin_want(p, &it[i], 1, (uint64_t)i);
	gate_open();
	rk_pin_flush(p);
	cr_assert_eq(fk.norder, 9);
	for (i = 0; i < 9; i++)
		cr_assert_eq(fk.order[i], want[i], "lock %d: mem[%d], want mem[%d]", i, fk.order[i],
			     want[i]);
	for (i = 1; i < 10; i++)
		rk_pin_retire(p, &it[i]);
	rk_pin_pool__free(p);
}

Test(pinpool, pins_are_served_newest_first)
{
	static const int want[] = { 1, 9, 8, 7, 6, 5, 4, 3, 2 };

	queue_order(0, want);
}

Test(pinpool, a_pin_that_waited_too_long_gets_every_fourth_turn)
{
	static const int want[] = { 1, 9, 8, 7, 2, 6, 5, 4, 3 };

	queue_order(1, want);
}

/*
 * A run shorter than min_run_ns is over before a lock would land: the next
 * switch-in after one is not pinned (counted); after a long run it is. A
 * buffer still locked from before stays locked whatever the run length.
 */
Test(pinpool, short_runs_are_not_pinned_long_ones_are)
{
	struct rk_pin_opts o = {
		.workers = 1, .budget = 2 * L, .linger_ns = 0, .ops = &ops, .min_run_ns = 100 * 1000
	};
	struct rk_pin_pool *p = rk_pin_pool__new(&o);
	struct rk_pin_item a;
	struct rk_pin_stats st;

	cr_assert_not_null(p);
	item(&a, 0, 0);
	rk_pin_want(p, &a, 1, 1000); /* no run yet (a new thread): not pinned */
	rk_pin_want(p, &a, 0, 11000); /* a 10 us run */
	rk_pin_want(p, &a, 1, 20000);
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_eq(fk.locks, 0, "a new thread's run, or a run after a 10 us one, was pinned");
	cr_assert_eq(st.skipped_short, 2);
	rk_pin_want(p, &a, 0, 520000); /* a 500 us run */
	rk_pin_want(p, &a, 1, 600000);
	rk_pin_flush(p);
	cr_assert_eq(fk.locks, 1, "a run after a 500 us one was not pinned");
	rk_pin_want(p, &a, 0, 610000); /* short, but still locked when it comes back */
	rk_pin_want(p, &a, 1, 611000);
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_eq(fk.locks, 1);
	cr_assert_eq(fk.unlocks, 0, "a locked buffer was dropped for a short run");
	cr_assert_eq(st.skipped_short, 2);
	/* Not pinned at its switch-in (a 9 us run before), it runs on: locked at a tick. */
	rk_pin_want(p, &a, 0, 620000);
	rk_pin_tick(p, 621000); /* linger 0: unlocked */
	rk_pin_flush(p);
	cr_assert_eq(fk.unlocks, 1);
	rk_pin_want(p, &a, 1, 630000);
	rk_pin_tick(p, 680000); /* 50 us on CPU: not yet */
	rk_pin_flush(p);
	cr_assert_eq(fk.locks, 1, "locked before its run reached min_run_ns");
	rk_pin_tick(p, 731000); /* 101 us */
	rk_pin_flush(p);
	cr_assert_eq(fk.locks, 2, "a run that went on past min_run_ns was not locked at a tick");
	rk_pin_want(p, &a, 0, 740000);
	rk_pin_pool__free(p);
}

/*
 * The switch-in program's flag (rk_pin_item.asked): 1 from the moment we
 * know of a switch-in (no wakeup needed), back to 0 only when a lock is
 * wanted at the next one: after the unlock, or after a run long enough that
 * ended unlocked. Never 0 while the buffer is locked, nor after a short run
 * or a refused pin (those wait for the drain tick).
 */
Test(pinpool, wakeup_flag_is_cleared_only_when_a_lock_is_wanted)
{
	struct rk_pin_opts o = {
		.workers = 1, .budget = L, .linger_ns = 0, .ops = &ops, .min_run_ns = 100 * 1000
	};
	struct rk_pin_pool *p = rk_pin_pool__new(&o);
	struct rk_pin_item a, b;
	__u8 fa = 0, fb = 0;

	cr_assert_not_null(p);
	item(&a, 0, 0);
	item(&b, 1, 0);
	a.asked = &fa;
	b.asked = &fb;
	/* Threads with a long run behind them (a new one's first run is not pinned). */
	a.last_run_ns = b.last_run_ns = MS;
	fa = 1; /* what the switch-in program stores before it wakes us */
	rk_pin_want(p, &a, RK_PIN_ON, 1000);
	rk_pin_flush(p);
	cr_assert_eq(fk.locks, 1);
	cr_assert_eq(fa, 1, "flag cleared while the buffer is locked");
	rk_pin_want(p, &a, RK_PIN_OFF, 1001000); /* a 1 ms run */
	cr_assert_eq(fa, 1, "flag cleared while still locked (lingering)");
	rk_pin_tick(p, 1002000); /* linger 0: unlocked */
	rk_pin_flush(p);
	cr_assert_eq(fk.unlocks, 1);
	cr_assert_eq(fa, 0, "not asked to hear of the next switch-in after the unlock");

	/* b is refused (a holds the whole budget): no wakeup until a pin works. */
	rk_pin_want(p, &a, RK_PIN_ON, 2000000);
	rk_pin_flush(p);
	fb = 1;
	rk_pin_want(p, &b, RK_PIN_ON, 2000000);
	rk_pin_flush(p);
	rk_pin_want(p, &b, RK_PIN_OFF, 3000000);
	rk_pin_flush(p);
	cr_assert_eq(fb, 1, "a refused thread wakes us at every switch-in");

	/* A short run (10 us) that ended unlocked: no wakeup for the next one either. */
	rk_pin_want(p, &a, RK_PIN_OFF, 2010000);
	rk_pin_tick(p, 2020000);
	rk_pin_flush(p);
	cr_assert_eq(fa, 1, "flag cleared after a run too short to pin");
	rk_pin_want(p, &a, RK_PIN_ON, 2100000);
	rk_pin_want(p, &a, RK_PIN_OFF, 2700000); /* skipped; a 600 us run */
	cr_assert_eq(fk.locks, 2);
	cr_assert_eq(fa, 0, "a long run ended unlocked, and we did not ask for the next");
	rk_pin_pool__free(p);
}

/*
 * A run is from a wakeup to the next sleep: preempted parts add up, so a
 * run cut by preemptions (our own wakeup preempts the thread it is about)
 * is not taken for a short one; and a pin in flight when the thread is
 * preempted still lands, then lingers like any off-CPU buffer.
 */
Test(pinpool, a_preempted_run_is_one_run_and_its_pin_lands)
{
	struct rk_pin_opts o = { .workers = 1,
				 .budget = 4 * L,
				 .linger_ns = 10 * MS,
				 .ops = &ops,
				 .min_run_ns = 100 * 1000 };
	struct rk_pin_pool *p = rk_pin_pool__new(&o);
	struct rk_pin_item a;
	struct rk_pin_stats st;
	int i;

	cr_assert_not_null(p);
	item(&a, 0, 0);
	a.last_run_ns = MS; /* a long run behind it: its switch-in is pinned */
	/* Gate closed: the pin stays in flight while the thread is preempted. */
	fk.gate_closed = 1;
	a.addr = mem[1];
	rk_pin_want(p, &a, RK_PIN_ON, 1);
	gate_reached();
	rk_pin_want(p, &a, RK_PIN_PREEMPTED, 30001);
	gate_open();
	rk_pin_flush(p);
	cr_assert_eq(fk.locks, 1);
	cr_assert(rk_pin_is_pinned(p, &a), "a pin in flight was dropped at a preemption");
	/* Four 30 us slices of one 120 us run, then a sleep; then a new run. */
	for (i = 1; i < 4; i++) {
		rk_pin_want(p, &a, RK_PIN_ON, (uint64_t)i * 40000);
		rk_pin_want(p, &a, i < 3 ? RK_PIN_PREEMPTED : RK_PIN_OFF,
			    (uint64_t)i * 40000 + 30000);
	}
	rk_pin_tick(p, 200 * MS); /* lingered out: unlocked */
	rk_pin_flush(p);
	cr_assert_eq(fk.unlocks, 1);
	rk_pin_want(p, &a, RK_PIN_ON, 201 * MS);
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_eq(st.skipped_short, 0, "a 120 us run cut by preemptions was taken for 30 us");
	cr_assert_eq(fk.locks, 2);
	rk_pin_want(p, &a, RK_PIN_OFF, 202 * MS);
	rk_pin_pool__free(p);
}

/*
 * With inline_max, a small pin within the budget is done by the caller of
 * rk_pin_want() before it returns (no worker wakeup on the way); one that
 * would need an eviction, or a larger one, goes to the workers.
 */
Test(pinpool, small_pins_with_room_are_done_inline)
{
	struct rk_pin_opts o = {
		.workers = 1, .budget = 2 * L, .linger_ns = 10 * MS, .ops = &ops, .inline_max = L
	};
	struct rk_pin_pool *p = rk_pin_pool__new(&o);
	struct rk_pin_item it[3];
	struct rk_pin_stats st;
	int i;

	cr_assert_not_null(p);
	for (i = 0; i < 3; i++)
		item(&it[i], i, 0);
	rk_pin_want(p, &it[0], RK_PIN_ON, 0);
	cr_assert_eq(fk.locks, 1, "not locked when rk_pin_want() returned");
	cr_assert(rk_pin_is_pinned(p, &it[0]));
	rk_pin_want(p, &it[1], RK_PIN_ON, 0);
	rk_pin_want(p, &it[1], RK_PIN_OFF, 1); /* lingers, holding the rest of the budget */
	rk_pin_want(p, &it[2], RK_PIN_ON, 2); /* needs an eviction: a worker's job */
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_eq(st.inline_pins, 2);
	cr_assert_eq(st.pins, 3);
	cr_assert_eq(st.evictions, 1);
	cr_assert_leq(fk.max_locked, 2 * L, "over budget");
	for (i = 0; i < 3; i++)
		rk_pin_retire(p, &it[i]);
	rk_pin_pool__free(p);
}

/*
 * Under contention, wakeups would turn every switch into an eviction: a
 * buffer evicted for another thread is not re-armed (its next switch-in
 * waits for the drain tick), and a preempted thread's pin in flight lands
 * only if there is room, evicting nobody.
 */
Test(pinpool, contention_costs_no_wakeups_and_preempted_pins_evict_nobody)
{
	struct rk_pin_opts o = { .workers = 1, .budget = 2 * L, .linger_ns = 10 * MS, .ops = &ops };
	struct rk_pin_pool *p = rk_pin_pool__new(&o);
	struct rk_pin_item a, b, g, c;
	__u8 fa = 1, fc = 1;
	struct rk_pin_stats st;

	cr_assert_not_null(p);
	item(&a, 0, 0);
	item(&b, 2, 0);
	item(&g, 1, 0); /* mem[1]: its lock waits at the gate */
	item(&c, 3, 0);
	a.asked = &fa;
	c.asked = &fc;
	rk_pin_want(p, &a, RK_PIN_ON, 1);
	rk_pin_flush(p);
	rk_pin_want(p, &a, RK_PIN_OFF, 2); /* lingers */
	rk_pin_want(p, &b, RK_PIN_ON, 3);
	rk_pin_flush(p); /* a and b hold the budget */
	fk.gate_closed = 1;
	rk_pin_want(p, &g, RK_PIN_ON, 4); /* running: evicts a, then waits at the gate */
	gate_reached();
	rk_pin_want(p, &c, RK_PIN_ON, 5);
	rk_pin_want(p, &c, RK_PIN_PREEMPTED, 6); /* its pin is still queued */
	gate_open();
	rk_pin_flush(p);
	rk_pin_pool__stats(p, &st);
	cr_assert_eq(st.evictions, 1, "%lu evictions", (unsigned long)st.evictions);
	cr_assert_eq(fa, 1, "an evicted buffer asked for a wakeup");
	cr_assert(rk_pin_is_pinned(p, &b) && rk_pin_is_pinned(p, &g),
		  "a preempted thread's pin took a running one's lock");
	cr_assert_not(rk_pin_is_pinned(p, &c));
	cr_assert_eq(fc, 1, "a pin passed over for lack of room asked for a wakeup");
	cr_assert_leq(fk.max_locked, 2 * L, "over budget");
	rk_pin_retire(p, &a);
	rk_pin_retire(p, &b);
	rk_pin_retire(p, &g);
	rk_pin_retire(p, &c);
	rk_pin_pool__free(p);
}
