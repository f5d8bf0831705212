/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* show.h - print a buffer file's records, using only the file itself. */
#ifndef RK_SHOW_H
#define RK_SHOW_H

#include <stdio.h>
#include "bufile.h"
#include "session.h"
#include "symbols.h"
#include "tracedata.h"

/** struct rk_show_counts - what a walk over a buffer found. */
struct rk_show_counts {
	unsigned long long records;
	unsigned long long switch_in;
	unsigned long long switch_out;
	unsigned long long other;
	unsigned long long foreign; /* sample_id tid not the file's tid */
	unsigned long long samples;
	unsigned long long lost; /* sum of PERF_RECORD_LOST counts */
	unsigned long long outside; /* records outside the window (--time, --last), not shown */
	unsigned long long wakeups; /* RK_RECORD_WAKEUP: woken by another task */
	unsigned long long stacks; /* RK_RECORD_STACK (record --offcpu) */
};

/**
 * rk_show() - print the identity, pmu_info and records of @bf.
 * @json: one JSON object per line (file header first) instead of text.
 * @syms: resolves sample addresses (NULL: print them raw).
 * @tpf: the format of the file's tracepoint, for its samples' fields (NULL:
 *	not a tracepoint, or its format is not known).
 * @counts: if not NULL, filled in.
 * Return: 0, or -EBADMSG if the records do not parse (what parsed is printed).
 */
int rk_show(FILE *out, const struct rk_bufile *bf, const char *path, int json,
	    struct rk_symbols *syms, const struct rk_tp_format *tpf, struct rk_show_counts *counts);

/**
 * rk_show_range() - rk_show() of the records timed in [@lo, @hi] only
 * (--time, --last); the others are counted in @counts->outside. @loss:
 * what the session did not record, said last (a footer, JSON's "loss");
 * NULL: nothing said.
 */
int rk_show_range(FILE *out, const struct rk_bufile *bf, const char *path, int json,
		  struct rk_symbols *syms, const struct rk_tp_format *tpf,
		  struct rk_show_counts *counts, __u64 lo, __u64 hi, const struct rk_loss *loss);

/** rk_show_end() - the newest record time of @bf (0: none). */
__u64 rk_show_end(const struct rk_bufile *bf);

/** rk_thread_state_name() - "live", "exited", ... */
const char *rk_thread_state_name(__u32 state);

#endif /* RK_SHOW_H */
