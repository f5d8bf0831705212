/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * export.h - write a session's per-thread buffers (and the sideband of their
 * processes) as a perf.data file that perf script / perf report read.
 */
#ifndef RK_EXPORT_H
#define RK_EXPORT_H

#include <sys/types.h>
#include "session.h"

/**
 * struct rk_export_opts - what to export.
 * @session_dir: <root>/<session>.
 * @out: the perf.data path (written through a temporary, then renamed).
 * @tid, @pid: only this thread / process (0: all).
 * @windowed: only the samples and switches timed in [@lo, @hi] (--time,
 *	--last); the sideband (mappings, names, forks) goes whole.
 * @loss: what the session did not record (NULL: not known): its sum goes
 *	into the file as one PERF_RECORD_LOST, which perf report warns of.
 */
struct rk_export_opts {
	const char *session_dir;
	const char *out;
	pid_t tid;
	pid_t pid;
	int windowed;
	__u64 lo, hi;
	const struct rk_loss *loss;
};

/** struct rk_export_stats - what was written. */
struct rk_export_stats {
	unsigned long long records;
	unsigned long long samples;
	unsigned long long threads;
	unsigned long long skipped; /* files that did not parse (reported) */
	unsigned long long aux_bytes; /* Intel PT bytes, in AUXTRACE records */
	/* RK_RECORD_CRASH records left out: perf.data has no record type for them */
	unsigned long long crashes;
	/* RK_RECORD_TRIGGER records left out, likewise */
	unsigned long long triggers;
	/* records of a type neither perf nor this export knows, left out */
	unsigned long long unknown;
	/* RK_RECORD_WAKEUP records left out: this machine has no sched_waking format for them */
	unsigned long long wakeups;
	unsigned long long outside; /* samples and switches outside the window, left out */
	/* record --offcpu: stretches off CPU with a stack, as offcpu-time samples */
	unsigned long long offcpu_samples;
	/* the PERF_RECORD_LOST written: the session's losses summed (0: none written) */
	unsigned long long lost;
	unsigned int attrs;
};

/**
 * rk_export_perf_data() - Return: 0, or -errno (reported on stderr): -ENOENT
 * if nothing matched, -EBADMSG if no file parsed.
 */
int rk_export_perf_data(const struct rk_export_opts *o, struct rk_export_stats *st);

#endif /* RK_EXPORT_H */
