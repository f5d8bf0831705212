/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * schedsum.h - `ringkeeper sched`: a per-thread scheduling summary of a
 * timeline, like `perf sched timehist -s`.
 * May call: timeline, show (state names), util.
 */
#ifndef RK_SCHEDSUM_H
#define RK_SCHEDSUM_H

#include <stdio.h>
#include "session.h"
#include "timeline.h"

/** struct rk_sched_sum - one thread's figures (ns). */
struct rk_sched_sum {
	unsigned long long runs; /* runs on a CPU with both ends recorded */
	unsigned long long on_ns, max_on_ns;
	unsigned long long off_ns[RK_OFF_NR]; /* by why the thread left the CPU */
	unsigned long long offs[RK_OFF_NR]; /* how many such off-CPU periods */
	unsigned long long max_off_ns; /* the longest off-CPU gap */
	unsigned long long migrations; /* a run on another CPU than the one before */
	__u64 first_ns, last_ns; /* the history's first and last event */
	/*
	 * Scheduling delay, as perf sched timehist's "sch delay": of a run,
	 * from the thread's first wakeup after it last left the CPU (or from
	 * that switch-out, if it was preempted) to its switch-in. Only runs
	 * with that start known (a wakeup recorded, or a preemption).
	 */
	unsigned long long wakeups; /* wakeups by another task */
	unsigned long long delays; /* runs with a known delay */
	unsigned long long delay_ns, max_delay_ns, p99_delay_ns;
};

/*
 * Scheduling delay, said the same in the table's notes, `sched --help`, the
 * README and docs/format.md.
 */
#define RK_SCHED_DELAY_DEF                                                                    \
	"sch delay: of a run, from the thread's first wakeup after it left the CPU (or from " \
	"that switch-out, if it was preempted) to its switch-in; perf 6.1's sched timehist "  \
	"counts no delay after a preemption, so its sum is smaller"

/*
 * struct rk_sched_hist - log2 histograms (µs) as bcc's runqlat/cpudist keep
 * them: slot i counts values in [2^(i-1), 2^i - 1] (0 and 1 both in slot 1).
 */
#define RK_HIST_SLOTS 64
struct rk_sched_hist {
	__u64 delay[RK_HIST_SLOTS]; /* scheduling delay of a run */
	__u64 run[RK_HIST_SLOTS]; /* a run's length on CPU */
	__u64 off[RK_OFF_NR][RK_HIST_SLOTS]; /* an off-CPU period's, by why it left */
};

/** rk_hist_slot() - bcc's bpf_log2l(@v): the slot of @v (1..64). */
int rk_hist_slot(__u64 v);

/** rk_sched_sum_thread() - @t's figures. */
void rk_sched_sum_thread(const struct rk_tl_thread *t, struct rk_sched_sum *s);

/**
 * rk_sched_sum_window() - @t's figures of what lies in [@lo, @hi]: a run or
 * an off-CPU period counts only with both ends in it (first_ns, last_ns:
 * still the whole history's).
 */
void rk_sched_sum_window(const struct rk_tl_thread *t, __u64 lo, __u64 hi, struct rk_sched_sum *s);

/**
 * rk_sched_sum_window_into() - rk_sched_sum_window(), and the scheduling
 * delays (ns) it counted appended to *@d (*@n of them, *@cap allocated;
 * the appended ones get sorted, for the p99).
 * Return: 0, or -ENOMEM (the figures are whole, the p99 and *@d are not).
 */
int rk_sched_sum_window_into(const struct rk_tl_thread *t, __u64 lo, __u64 hi,
			     struct rk_sched_sum *s, __u64 **d, size_t *n, size_t *cap);

/**
 * rk_sched_sum_hist() - rk_sched_sum_window_into(), and each run, delay and
 * off-CPU period also counted in @h (NULL: not).
 */
int rk_sched_sum_hist(const struct rk_tl_thread *t, __u64 lo, __u64 hi, struct rk_sched_sum *s,
		      struct rk_sched_hist *h, __u64 **d, size_t *n, size_t *cap);

/** rk_sched_p99() - the 99th percentile of @d's @n values (sorts @d; 0 if none). */
__u64 rk_sched_p99(__u64 *d, size_t n);

/**
 * rk_sched_window() - the one window @tl's totals cover: from the latest
 * start of a history that wrapped (its ring overwrote older records: before
 * it, that thread's runs are missing) to the end. @nwrapped: how many did.
 * Return: its start (0: none wrapped, everything).
 */
__u64 rk_sched_window(const struct rk_timeline *tl, size_t *nwrapped);

enum rk_sched_by { RK_SCHED_BY_THREAD, RK_SCHED_BY_PROCESS, RK_SCHED_BY_COMM };
enum rk_sched_sort {
	RK_SCHED_SORT_TID, /* group order: tid; pid; comm */
	RK_SCHED_SORT_ONCPU, /* the rest: largest first */
	RK_SCHED_SORT_DELAY, /* total scheduling delay */
	RK_SCHED_SORT_OFFCPU, /* total off-CPU time */
	RK_SCHED_SORT_RUNS,
};

/**
 * struct rk_sched_opts - what `sched` prints: @json or text (@wide: every
 * column; else at most 120 columns, the sort key's among them), @hist: log2
 * histograms instead of the table, the session's (of the totals' window;
 * JSON: the total's "hist"), and with @hist_rows each row's instead (JSON:
 * each row's "hist" too); rows @by thread, process or comm, sorted by
 * @sort, the first @top (0: all); rows with no complete run only with @all;
 * of [@lo, @hi] only. @loss: what the session did not record, said under
 * the table and as JSON's "loss" (NULL: nothing said).
 */
struct rk_sched_opts {
	int json, wide, hist, hist_rows, all;
	enum rk_sched_by by;
	enum rk_sched_sort sort;
	size_t top;
	__u64 lo, hi;
	const struct rk_loss *loss;
};

/**
 * rk_sched_report() - @tl's rows as @o asks, then the totals (of every
 * thread, in one window: see rk_sched_window()) and notes saying what was
 * left out. Return: 0, or -ENOMEM (nothing or part printed).
 */
int rk_sched_report(FILE *out, const struct rk_timeline *tl, const struct rk_sched_opts *o);

/**
 * rk_sched_fit_ms() - @ns as milliseconds in at most @width columns into
 * @buf (@n bytes, unpadded): 3 decimals, fewer if they do not fit, then
 * whole seconds, hours, days or years marked "s", "h", "d", "y" (the table's figures
 * never push it past 120 columns, whatever the sums).
 */
void rk_sched_fit_ms(char *buf, size_t n, int width, __u64 ns);

/** rk_sched_fit_count() - @v in at most @width columns: as is, else "12346k", "M", "G", ... */
void rk_sched_fit_count(char *buf, size_t n, int width, unsigned long long v);

/** rk_sched_print() - every thread of @tl, then the totals; text or JSON. */
void rk_sched_print(FILE *out, const struct rk_timeline *tl, int json);

/**
 * rk_sched_print_window() - the same, of what lies in [@lo, @hi] only
 * (--time, --last): rows and totals count the runs and off-CPU periods
 * with both ends in it.
 */
void rk_sched_print_window(FILE *out, const struct rk_timeline *tl, int json, __u64 lo, __u64 hi);

/** rk_sched_end() - the newest event of @tl's histories (0: none). */
__u64 rk_sched_end(const struct rk_timeline *tl);

/*
 * struct rk_sched_now - `ringkeeper top`: a thread in the window [lo, hi]
 * (its last second): time on CPU in it (a run cut at either end counted
 * for its part inside, a run still going up to @hi), switch-ins in it and
 * their delays (a wait still going counted up to @hi), its state at @hi.
 */
struct rk_sched_now {
	__u64 on_ns, delay_ns, max_delay_ns;
	__u32 runs;
	int state; /* RK_NOW_*, or RK_NOW_OFF + enum rk_offcpu */
	int active; /* ran or waited in the window */
};

enum { RK_NOW_UNKNOWN, RK_NOW_RUNNING, RK_NOW_RUNNABLE, RK_NOW_EXITED, RK_NOW_OFF };

/** rk_sched_now() - @t's figures of [@lo, @hi] into @n. */
void rk_sched_now(const struct rk_tl_thread *t, __u64 lo, __u64 hi, struct rk_sched_now *n);

/** rk_sched_now_state() - "running", "runnable", "sleeping", ..., "exited". */
const char *rk_sched_now_state(int state);

#endif /* RK_SCHEDSUM_H */
