/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pfstats.h - what the Perfetto writer's modules (perfetto.c, pfsched.c)
 * count of what they wrote, shared by them and their caller.
 */
#ifndef RK_PFSTATS_H
#define RK_PFSTATS_H

/** struct rk_perfetto_stats - what was written. */
struct rk_perfetto_stats {
	unsigned long long packets, slices, instants, samples, bytes;
	unsigned long long switches, wakeups; /* ftrace sched_switch / sched_waking events */
	/* switches written for a side the kernel did not report (the files' unpaired ones) */
	unsigned long long switches_added;
	/* of the wakeups, those from an interrupt marked so (compact, with common_flags) */
	unsigned long long irq_wakeups;
	/* wakeups from an interrupt before their CPU's first switch: written unmarked */
	unsigned long long irq_unmarked;
	unsigned long long frees; /* sched_process_free: dead threads ended */
	unsigned long long processes_parented; /* ProcessTree entries with their parent */
};

#endif /* RK_PFSTATS_H */
