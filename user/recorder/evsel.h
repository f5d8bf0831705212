/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * evsel.h - perf event sources: parse perf-style event names, open them per
 * CPU with inherit=1 on the target threads, one kernel ring per CPU (the
 * other fds redirected with PERF_EVENT_IOC_SET_OUTPUT, as perf record -p).
 */
#ifndef RK_EVSEL_H
#define RK_EVSEL_H

#include <linux/types.h>
#include <stddef.h>
#include "ringkeeper.h"

/* Every perf source samples this, plus CALLCHAIN (-g) and RAW (tracepoints). */
#define RK_EV_SAMPLE_TYPE                                                               \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

/** struct rk_evsel_opts - the sampling options of `record`. */
struct rk_evsel_opts {
	__u64 freq; /* -F; 0: not given */
	__u64 period; /* -c; 0: not given */
	int callgraph; /* -g */
	int exclude_kernel;
	const char *pt_sysfs; /* the intel_pt PMU's sysfs directory; NULL: RK_PT_SYSFS */
};

/**
 * struct rk_evsel - one perf event source of a session.
 * @name: as the user wrote it ("cpu-clock", "sched:sched_wakeup").
 * @src: its index in the pmu_info map key (1..RK_MAX_SRC-1; 0 is sched).
 * @entry: pmu_info/attr/descriptor, as every buffer of this source holds it.
 * @tracking: carries mmap2/comm/task records (the first perf source).
 * @aux: writes AUX data (intel_pt): per-CPU AUX rings, per-thread AUX areas.
 */
struct rk_evsel {
	char name[64];
	char dir[64]; /* its directory in a session: the name, "intel_pt" for intel_pt/.../ */
	int src;
	int tracking;
	int aux;
	struct rk_pmu_entry entry;
};

/** rk_evsel_named() - the @i-th event name -e knows (cpu-clock, cycles, ...); NULL past the last. */
const char *rk_evsel_named(size_t i);

/**
 * rk_evsel_parse() - parse "EVENT[,EVENT...]"; EVENT may be a PMU event with
 * perf's syntax, "intel_pt/TERM[=VALUE],.../[u|k]".
 * @list: the -e argument; @o: sampling options.
 * @out: room for @max sources; *@n gets how many.
 * @err: a message for people on failure (static or in @errbuf).
 * Return: 0, -EINVAL (unknown name, bad syntax, too many), -ENOENT (a
 * tracepoint that does not exist), -EOPNOTSUPP (no such PMU on this machine).
 */
int rk_evsel_parse(const char *list, const struct rk_evsel_opts *o, struct rk_evsel *out, int max,
		   int *n, char *errbuf, size_t errlen);

/**
 * rk_evsel_to_attr() - the uapi attr to pass to perf_event_open().
 * @buf: at least RK_PERF_ATTR_SIZE bytes.
 */
void rk_evsel_to_attr(const struct rk_evsel *ev, void *buf);

#endif /* RK_EVSEL_H */
