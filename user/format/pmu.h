/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* pmu.h - pmu_info entries: what each source's buffer says about itself. */
#ifndef RK_PMU_H
#define RK_PMU_H

#include <linux/types.h>
#include <linux/perf_event.h>
#include "ringkeeper.h"

/*
 * The sched source's records carry this sample_id. IDENTIFIER (as every
 * source has) lets records of several sources share one perf.data file.
 */
#define RK_SCHED_SAMPLE_TYPE \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)
/* The id in the sched source's records: far from the kernel's small event ids. */
#define RK_SCHED_ID (1ull << 63)

/**
 * rk_pmu_sched_entry() - the pmu_info entry of the BPF-native sched source.
 *
 * Describes what the records written from BPF signals are, in perf's terms:
 * a software dummy event (as perf attaches switch records to) with context_switch, comm(_exec) and task
 * records, sample_id_all (tid, time, cpu), on CLOCK_MONOTONIC (bpf_ktime_get_ns).
 * The sched source has no PMU descriptor (pmu_descsz 0).
 */
void rk_pmu_sched_entry(struct rk_pmu_entry *e);

/** rk_pmu_entry_size() - bytes of @e that a buffer holds at pmu_offset. */
static inline __u64 rk_pmu_entry_size(const struct rk_pmu_entry *e)
{
	return (__u64)e->info.note_size + e->attr.size + e->info.pmu_descsz;
}

#endif /* RK_PMU_H */
