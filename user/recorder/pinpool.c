// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "pinpool.h"
#include "util.h"

/* By default, a pin request older than this is served before newer ones. */
#define RK_PIN_MAX_WAIT_NS (10 * 1000000ull)

struct uid_acct {
	uid_t uid;
	uint64_t locked;
};

struct rk_pin_pool {
	pthread_mutex_t lock;
	pthread_cond_t work; /* queue non-empty or stopping */
	pthread_cond_t idle; /* queue empty and nobody busy */
	/*
	 * Work queue: unlocks and retires first, oldest first (they free
	 * budget); then pins, newest first: a request that waited is the most
	 * likely to be stale (its thread already off CPU again), the newest is
	 * for a thread that is running now; but every fourth pin is the oldest
	 * if it waited longer than opts.max_wait_ns, so a long-running thread
	 * is not starved by a crowd of short ones. work_on() re-reads the state, so the place
	 * in the queue is only a priority.
	 */
	struct rk_pin_item *q_head, *q_tail;
	struct rk_pin_item *pin_new, *pin_old; /* pins: newest, oldest */
	unsigned long pin_turn;
	struct rk_pin_item *lru_head, *lru_tail; /* lingering, oldest first */
	struct rk_pin_item *w_head; /* on CPU, not locked: their run was deemed short */
	unsigned int nbusy;
	int stopping;
	struct uid_acct *uids;
	size_t nuids;
	struct rk_pin_stats st;
	struct rk_pin_opts opts;
	struct rk_pin_ops ops;
	unsigned int nworkers;
	pthread_t *workers;
	uint64_t lat[RK_PIN_LAT_BUCKETS]; /* switch-in to pinned */
};

static uint64_t mono_ns(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

unsigned int rk_pin_lat_bucket(uint64_t ns)
{
	unsigned int k;

	if (ns < 4)
		return (unsigned int)ns;
	k = 63u - (unsigned int)__builtin_clzll(ns);
	return k * 4 + (unsigned int)((ns >> (k - 2)) & 3);
}

uint64_t rk_pin_lat_upper(unsigned int b)
{
	unsigned int k = b / 4, sub = b % 4;

	if (b < 4)
		return b; /* exact; buckets 4..7 are never used (k = 1 has no sub-buckets) */
	if (k >= 63)
		return UINT64_MAX;
	return ((5ull + sub) << (k - 2)) - 1;
}

/* Under the lock: the switch-in to pinned latency of @it's current run. */
static void lat_sample(struct rk_pin_pool *p, uint64_t ns)
{
	p->lat[rk_pin_lat_bucket(ns)]++;
	p->st.lat_n++;
}

/*
 * MLOCK_ONFAULT: pages the thread has not written yet are locked when
 * first touched, not faulted in (and charged) by the pin: a quiet thread's
 * pin costs the pages it used.
 */
static int sys_lock(void *addr, size_t len, void *ctx)
{
	(void)ctx;
	if (!syscall(SYS_mlock2, addr, len, MLOCK_ONFAULT))
		return 0;
	/* No mlock2 (valgrind does not know it; kernels before 4.4): lock it all. */
	if (errno == ENOSYS)
		return syscall(SYS_mlock, addr, len) ? -errno : 0;
	return -errno;
}

/*
 * Through syscall(): ASan intercepts munlock() as a no-op (but not mlock2),
 * which would keep every pin locked in the sanitizer run.
 */
static int sys_unlock(void *addr, size_t len, void *ctx)
{
	(void)ctx;
	return syscall(SYS_munlock, addr, len) ? -errno : 0;
}

/* Under pool->lock. NULL only on ENOMEM. */
static struct uid_acct *acct_of(struct rk_pin_pool *p, uid_t uid)
{
	struct uid_acct *a;
	size_t i;

	for (i = 0; i < p->nuids; i++)
		if (p->uids[i].uid == uid)
			return &p->uids[i];
	a = realloc(p->uids, (p->nuids + 1) * sizeof(*a));
	if (!a)
		return NULL;
	p->uids = a;
	a = &p->uids[p->nuids++];
	a->uid = uid;
	a->locked = 0;
	return a;
}

static void lru_del(struct rk_pin_pool *p, struct rk_pin_item *it)
{
	if (!it->in_lru)
		return;
	if (it->lru_prev)
		it->lru_prev->lru_next = it->lru_next;
	else
		p->lru_head = it->lru_next;
	if (it->lru_next)
		it->lru_next->lru_prev = it->lru_prev;
	else
		p->lru_tail = it->lru_prev;
	it->lru_prev = it->lru_next = NULL;
	it->in_lru = 0;
}

static void lru_add(struct rk_pin_pool *p, struct rk_pin_item *it)
{
	it->lru_next = NULL;
	it->lru_prev = p->lru_tail;
	if (p->lru_tail)
		p->lru_tail->lru_next = it;
	else
		p->lru_head = it;
	p->lru_tail = it;
	it->in_lru = 1;
}

/*
 * The watch list: items on CPU that were not locked at their switch-in
 * (no run yet, or a short last one). rk_pin_tick() locks those whose run
 * goes on past min_run_ns, so a long first run is locked too.
 */
static void watch_del(struct rk_pin_pool *p, struct rk_pin_item *it)
{
	if (!it->in_watch)
		return;
	if (it->w_prev)
		it->w_prev->w_next = it->w_next;
	else
		p->w_head = it->w_next;
	if (it->w_next)
		it->w_next->w_prev = it->w_prev;
	it->w_prev = it->w_next = NULL;
	it->in_watch = 0;
}

static void watch_add(struct rk_pin_pool *p, struct rk_pin_item *it)
{
	if (it->in_watch)
		return;
	it->w_prev = NULL;
	it->w_next = p->w_head;
	if (p->w_head)
		p->w_head->w_prev = it;
	p->w_head = it;
	it->in_watch = 1;
}

/* Is @it's run, by its last one (or its having none yet), too short to lock? */
static int run_short(const struct rk_pin_pool *p, const struct rk_pin_item *it)
{
	return p->opts.min_run_ns && it->last_run_ns < p->opts.min_run_ns;
}

static void enqueue(struct rk_pin_pool *p, struct rk_pin_item *it)
{
	if (it->queued)
		return;
	it->queued = 1;
	if ((it->wanted || it->soon) && !it->pinned && !it->retired) {
		it->queued_at = p->ops.now(p->ops.ctx);
		it->q_prev = NULL;
		it->q_next = p->pin_new;
		if (p->pin_new)
			p->pin_new->q_prev = it;
		else
			p->pin_old = it;
		p->pin_new = it;
	} else {
		it->q_next = NULL;
		if (p->q_tail)
			p->q_tail->q_next = it;
		else
			p->q_head = it;
		p->q_tail = it;
	}
	pthread_cond_signal(&p->work);
}

/* Under the lock: the next item to work on, NULL if none. */
static struct rk_pin_item *dequeue(struct rk_pin_pool *p)
{
	struct rk_pin_item *it = p->q_head;

	if (it) {
		p->q_head = it->q_next;
		if (!p->q_head)
			p->q_tail = NULL;
	} else if (p->pin_old) {
		/*
		 * Newest first; every fourth pin, the oldest if it waited too
		 * long (progress for it without turning the queue into FIFO).
		 */
		if (!(p->pin_turn++ % 4) &&
		    p->ops.now(p->ops.ctx) - p->pin_old->queued_at > p->opts.max_wait_ns)
			it = p->pin_old;
		else
			it = p->pin_new;
		if (it->q_prev)
			it->q_prev->q_next = it->q_next;
		else
			p->pin_new = it->q_next;
		if (it->q_next)
			it->q_next->q_prev = it->q_prev;
		else
			p->pin_old = it->q_prev;
	}
	return it;
}

static int queue_empty(const struct rk_pin_pool *p)
{
	return !p->q_head && !p->pin_new;
}

/* Under the lock: does the item need a worker? */
static int needs_work(const struct rk_pin_item *it)
{
	if (it->retired)
		return 1;
	return (it->wanted || it->soon) && !it->pinned;
}

/*
 * @it's pin_asked byte to @v. Only a change is stored: sched_switch reads
 * the byte at every switch-in of its thread, and a store of the same value
 * (one per handled switch-in) would take the cache line from that CPU
 * every time. Only BPF sets it too, and only from 0 to 1.
 */
static void asked_store(struct rk_pin_item *it, __u8 v)
{
	if (it->asked && __atomic_load_n(it->asked, __ATOMIC_RELAXED) != v)
		__atomic_store_n(it->asked, v, __ATOMIC_RELAXED);
}

/*
 * Under the lock: @it is off CPU and unlocked (or about to be): ask to be
 * woken at its next switch-in, unless that switch-in would not be locked
 * anyway (a short last run, a refused pin: those wait for the drain tick).
 */
static void rearm(const struct rk_pin_pool *p, struct rk_pin_item *it)
{
	if (it->retired || it->refused || it->wanted)
		return;
	if (run_short(p, it))
		return;
	asked_store(it, 0);
}

/*
 * Under the lock, with @it busy: unlock it (dropping the lock around the
 * syscall). @evicted: for another thread's lock; then its next switch-in
 * does not wake us (it waits for the drain tick, as a refused pin does):
 * with more running threads than the budget holds, waking each victim
 * would turn every switch into an eviction.
 */
static void do_unlock(struct rk_pin_pool *p, struct rk_pin_item *it, int evicted)
{
	struct uid_acct *a;

	/* Before the syscall: a switch-in from now on wakes us and is locked again. */
	if (!evicted)
		rearm(p, it);
	pthread_mutex_unlock(&p->lock);
	p->ops.unlock(it->addr, it->len, p->ops.ctx);
	pthread_mutex_lock(&p->lock);
	it->pinned = 0;
	it->pinned_at = 0;
	if (it->pinned_flag)
		__atomic_store_n(it->pinned_flag, 0, __ATOMIC_RELAXED);
	p->st.unpins++;
	a = acct_of(p, it->uid); /* exists: it was charged when pinned */
	if (a)
		a->locked -= it->len;
	p->st.locked -= it->len;
}

/* Under the lock: would @it fit in its user's budget now, with no eviction? */
static int fits_now(struct rk_pin_pool *p, const struct rk_pin_item *it)
{
	struct uid_acct *a = acct_of(p, it->uid);

	return a && a->locked + it->len <= p->opts.budget;
}

/* Under the lock: charge @it to its user, evicting lingering items if needed. */
static int reserve(struct rk_pin_pool *p, struct rk_pin_item *it)
{
	struct uid_acct *a = acct_of(p, it->uid);

	if (!a)
		return -ENOMEM;
	while (a->locked + it->len > p->opts.budget) {
		struct rk_pin_item *v;

		for (v = p->lru_head; v && v->uid != it->uid; v = v->lru_next)
			;
		if (!v)
			return -ENOSPC;
		lru_del(p, v);
		v->soon = 0; /* runnable, not running: it waits for its next switch-in */
		v->busy = 1;
		p->nbusy++;
		do_unlock(p, v, 1);
		p->st.evictions++;
		v->busy = 0;
		p->nbusy--;
		if (needs_work(v))
			enqueue(p, v);
		a = acct_of(p, it->uid); /* the array may have moved */
		if (!a)
			return -ENOMEM;
	}
	a->locked += it->len;
	p->st.locked += it->len;
	if (a->locked > p->st.peak)
		p->st.peak = a->locked;
	return 0;
}

/* Return: 1 if a pin was attempted and did not succeed. */
static int work_on(struct rk_pin_pool *p, struct rk_pin_item *it)
{
	if (it->retired) {
		lru_del(p, it);
		if (it->pinned)
			do_unlock(p, it, 0);
		if (p->ops.release) {
			void *owner = it->owner;

			pthread_mutex_unlock(&p->lock);
			p->ops.release(owner, p->ops.ctx);
			pthread_mutex_lock(&p->lock);
		}
		return 0;
	}
	if ((it->wanted || it->soon) && !it->pinned) {
		int err;

		/*
		 * A preempted thread's pin lands only if there is room: it
		 * evicts nobody (with more runnable threads than the budget
		 * holds, it would take the lock of one that runs now). Its next
		 * switch-in asks again.
		 */
		if (!it->wanted && !fits_now(p, it)) {
			it->soon = 0;
			it->refused = 1; /* no wakeup for it: contended */
			return 0;
		}
		err = reserve(p, it);
		if (err) {
			p->st.refusals++;
			it->refused = 1;
			return 1;
		}
		pthread_mutex_unlock(&p->lock);
		err = p->ops.lock(it->addr, it->len, p->ops.ctx);
		pthread_mutex_lock(&p->lock);
		if (err) {
			struct uid_acct *a = acct_of(p, it->uid);

			/* mlock may have locked part of the range: undo it all. */
			pthread_mutex_unlock(&p->lock);
			p->ops.unlock(it->addr, it->len, p->ops.ctx);
			pthread_mutex_lock(&p->lock);
			if (a)
				a->locked -= it->len;
			p->st.locked -= it->len;
			p->st.lock_errors++;
			p->st.last_lock_errno = -err;
			it->refused = 1;
			return 1;
		}
		it->pinned = 1;
		it->refused = 0;
		/* Locked: its switch-ins need no wakeup (even one that came first). */
		asked_store(it, 1);
		it->pinned_at = p->ops.now(p->ops.ctx);
		if (it->pinned_flag)
			__atomic_store_n(it->pinned_flag, 1, __ATOMIC_RELAXED);
		p->st.pins++;
		if (it->want_since)
			lat_sample(p, it->pinned_at > it->want_since ?
					      it->pinned_at - it->want_since :
					      0);
		it->want_since = 0;
		return 0;
	}
	if (!it->wanted && it->pinned && !it->in_lru)
		do_unlock(p, it, 0);
	return 0;
}

/* Under the lock, after work_on(@it) (not retired): put it where its state says. */
static void work_done(struct rk_pin_pool *p, struct rk_pin_item *it, int tried_pin)
{
	it->busy = 0;
	p->nbusy--;
	/* The state may have moved on while we were in a syscall. */
	if (!it->wanted && it->pinned && !it->in_lru && !it->queued)
		lru_add(p, it);
	else if (it->wanted && it->pinned)
		lru_del(p, it);
	/* Its run ended before the pin: wake us at the next one (if worth it). */
	if (!it->wanted && !it->pinned && !it->queued)
		rearm(p, it);
	/*
	 * A pin that was refused or failed is retried at the thread's
	 * next switch-in, not in a loop here.
	 */
	if (needs_work(it) && (!tried_pin || it->retired))
		enqueue(p, it);
	if (queue_empty(p) && !p->nbusy)
		pthread_cond_broadcast(&p->idle);
}

/*
 * Under the lock: lock @it in the caller's thread if that is cheap and
 * certain: small (opts.inline_max), idle, and within its user's budget
 * without evicting anyone. A worker's wakeup is the larger part of a
 * pin's latency (~50 us here against ~5 us for mlock2 of 64 KiB).
 * Return: 1 if done here (pinned or failed), 0 if a worker is to do it.
 */
static int pin_inline(struct rk_pin_pool *p, struct rk_pin_item *it)
{
	int tried;

	if (!p->opts.inline_max || it->len > p->opts.inline_max || it->busy || it->queued ||
	    it->pinned || it->retired || !fits_now(p, it))
		return 0;
	it->busy = 1;
	p->nbusy++;
	tried = work_on(p, it);
	p->st.inline_pins += it->pinned;
	work_done(p, it, tried);
	return 1;
}

static void *worker_main(void *arg)
{
	struct rk_pin_pool *p = arg;

	if (p->opts.rt_prio) {
		struct sched_param sp = { .sched_priority = p->opts.rt_prio };

		/* Best effort: the caller reports whether real-time priority is to be had. */
		(void)sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp);
	}

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct rk_pin_item *it;
		int tried_pin, retired;

		while (queue_empty(p) && !p->stopping)
			pthread_cond_wait(&p->work, &p->lock);
		it = dequeue(p);
		if (!it)
			break;
		it->queued = 0;
		if (it->busy) {
			/* Another worker has it; it re-checks the state when done. */
			continue;
		}
		it->busy = 1;
		p->nbusy++;
		/* Read before work_on(): release may free the item. */
		retired = it->retired;
		tried_pin = work_on(p, it);
		if (retired) {
			/* Released: the owner may be gone, do not touch it again. */
			p->nbusy--;
			if (queue_empty(p) && !p->nbusy)
				pthread_cond_broadcast(&p->idle);
			continue;
		}
		work_done(p, it, tried_pin);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct rk_pin_pool *rk_pin_pool__new(const struct rk_pin_opts *opts)
{
	struct rk_pin_pool *p;
	unsigned int i;
	int err;

	if (!opts->budget) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->opts = *opts;
	if (!p->opts.max_wait_ns)
		p->opts.max_wait_ns = RK_PIN_MAX_WAIT_NS;
	if (opts->ops)
		p->ops = *opts->ops;
	if (!p->ops.lock)
		p->ops.lock = sys_lock;
	if (!p->ops.unlock)
		p->ops.unlock = sys_unlock;
	if (!p->ops.now)
		p->ops.now = mono_ns;
	p->st.budget = opts->budget;
	p->nworkers = opts->workers;
	if (!p->nworkers) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		p->nworkers = n > 0 ? (unsigned int)n : 1;
	}
	(void)rk_mutex_init_pi(&p->lock);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->workers = calloc(p->nworkers, sizeof(*p->workers));
	if (!p->workers) {
		err = ENOMEM;
		goto err_free;
	}
	for (i = 0; i < p->nworkers; i++) {
		err = pthread_create(&p->workers[i], NULL, worker_main, p);
		if (err) {
			p->nworkers = i;
			rk_pin_pool__free(p);
			errno = err;
			return NULL;
		}
	}
	return p;

err_free:
	free(p->workers);
	free(p);
	errno = err;
	return NULL;
}

void rk_pin_want(struct rk_pin_pool *p, struct rk_pin_item *it, int how, uint64_t now_ns)
{
	int on = how == RK_PIN_ON;

	pthread_mutex_lock(&p->lock);
	if (it->retired)
		goto out;
	it->wanted = !!on;
	if (on) {
		/* A run starts at a switch-in after a sleep (not after a preemption). */
		int new_run = !it->soon;

		/* Known now: no wakeup for it until we ask again. */
		asked_store(it, 1);
		it->soon = 0;
		it->on_since = now_ns;
		if (it->pinned && !it->busy) {
			/* Still locked from its last run: no syscall, no wait. */
			if (new_run)
				p->st.lat_hot++;
			if (it->in_lru)
				p->st.coalesced++;
			lru_del(p, it);
		} else if (!it->pinned) {
			if (run_short(p, it)) {
				if (new_run)
					p->st.skipped_short++; /* locked if it runs on (tick) */
				watch_add(p, it);
			} else {
				if (!it->want_since)
					it->want_since = now_ns;
				if (!pin_inline(p, it))
					enqueue(p, it);
			}
		}
	} else {
		if (it->on_since && now_ns > it->on_since) {
			it->run_ns += now_ns - it->on_since;
			if (how != RK_PIN_PREEMPTED) {
				it->last_run_ns = it->run_ns;
				it->run_ns = 0;
			}
			p->st.oncpu_ns += now_ns - it->on_since;
			/* Locked for the part of the run after its pin completed. */
			if (it->pinned && it->pinned_at < now_ns)
				p->st.oncpu_pinned_ns += now_ns - (it->pinned_at > it->on_since ?
									   it->pinned_at :
									   it->on_since);
		}
		it->on_since = 0;
		it->off_since = now_ns;
		watch_del(p, it);
		it->soon = how == RK_PIN_PREEMPTED;
		if (!it->soon)
			it->want_since = 0;
		if (it->pinned && !it->busy && !it->in_lru)
			lru_add(p, it);
		else if (!it->pinned && it->queued && !it->soon)
			p->st.coalesced++; /* its pin will be skipped */
		/* A run worth a lock ended unlocked: wake us at the next one. */
		if (!it->pinned && !it->queued && !it->busy)
			rearm(p, it);
	}
out:
	pthread_mutex_unlock(&p->lock);
}

/* Under the lock: a run not locked at its switch-in that went on past min_run_ns is locked. */
static void watch_tick(struct rk_pin_pool *p, uint64_t now_ns)
{
	struct rk_pin_item *it = p->w_head, *next;

	for (; it; it = next) {
		next = it->w_next;
		if (!it->wanted || it->pinned || it->retired) {
			watch_del(p, it);
			continue;
		}
		if (it->run_ns + (now_ns > it->on_since ? now_ns - it->on_since : 0) <
		    p->opts.min_run_ns)
			continue;
		watch_del(p, it);
		if (!it->want_since)
			it->want_since = now_ns;
		if (!pin_inline(p, it))
			enqueue(p, it);
	}
}

void rk_pin_tick(struct rk_pin_pool *p, uint64_t now_ns)
{
	pthread_mutex_lock(&p->lock);
	watch_tick(p, now_ns);
	while (p->lru_head && now_ns - p->lru_head->off_since >= p->opts.linger_ns) {
		struct rk_pin_item *it = p->lru_head;

		lru_del(p, it);
		it->soon = 0; /* preempted this long: its next switch-in asks again */
		enqueue(p, it);
	}
	pthread_mutex_unlock(&p->lock);
}

void rk_pin_retire(struct rk_pin_pool *p, struct rk_pin_item *it)
{
	void *owner = it->owner;
	int mine = 0;

	pthread_mutex_lock(&p->lock);
	if (!it->retired) {
		it->retired = 1;
		it->wanted = 0;
		lru_del(p, it);
		watch_del(p, it);
		/* Idle and unlocked: nothing for a worker (and no worker has it). */
		mine = !it->pinned && !it->busy && !it->queued;
		if (!mine)
			enqueue(p, it);
	}
	pthread_mutex_unlock(&p->lock);
	if (mine && p->ops.release)
		p->ops.release(owner, p->ops.ctx);
}

void rk_pin_flush(struct rk_pin_pool *p)
{
	pthread_mutex_lock(&p->lock);
	while (!queue_empty(p) || p->nbusy)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

void rk_pin_pool__stats(struct rk_pin_pool *p, struct rk_pin_stats *st)
{
	uint64_t seen = 0, n;
	unsigned int b;

	pthread_mutex_lock(&p->lock);
	*st = p->st;
	n = st->lat_n;
	st->lat_p50_ns = st->lat_p99_ns = 0;
	for (b = 0; n && b < RK_PIN_LAT_BUCKETS; b++) {
		seen += p->lat[b];
		if (!st->lat_p50_ns && seen * 2 >= n)
			st->lat_p50_ns = rk_pin_lat_upper(b);
		if (seen * 100 >= n * 99) {
			st->lat_p99_ns = rk_pin_lat_upper(b);
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
}

int rk_pin_is_pinned(struct rk_pin_pool *p, const struct rk_pin_item *it)
{
	int r;

	pthread_mutex_lock(&p->lock);
	r = it->pinned;
	pthread_mutex_unlock(&p->lock);
	return r;
}

void rk_pin_pool__free(struct rk_pin_pool *p)
{
	unsigned int i;

	if (!p)
		return;
	/* Unlock whatever lingers, then stop. */
	pthread_mutex_lock(&p->lock);
	while (p->lru_head) {
		struct rk_pin_item *it = p->lru_head;

		lru_del(p, it);
		enqueue(p, it);
	}
	pthread_mutex_unlock(&p->lock);
	rk_pin_flush(p);
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->nworkers; i++)
		pthread_join(p->workers[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->idle);
	free(p->workers);
	free(p->uids);
	free(p);
}
