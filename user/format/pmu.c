// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stddef.h>
#include <string.h>
#include <time.h>
#include "pmu.h"

/* rk_perf_event_attr mirrors the uapi struct: check what both headers have. */
#define SAME_OFFSET(f)                                              \
	_Static_assert(offsetof(struct rk_perf_event_attr, f) ==    \
			       offsetof(struct perf_event_attr, f), \
		       "attr." #f)
SAME_OFFSET(config);
SAME_OFFSET(sample_type);
SAME_OFFSET(read_format);
SAME_OFFSET(wakeup_events);
SAME_OFFSET(config1);
SAME_OFFSET(config2);
SAME_OFFSET(clockid);
SAME_OFFSET(aux_watermark);
SAME_OFFSET(sig_data);

void rk_pmu_sched_entry(struct rk_pmu_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->info.note_size = RK_PMU_INFO_NOTE_SIZE;
	e->info.pmu_descsz = 0;
	e->attr.type = PERF_TYPE_SOFTWARE;
	e->attr.size = RK_PERF_ATTR_SIZE;
	/* Like perf record --switch-events: switch records ride on a dummy event. */
	e->attr.config = PERF_COUNT_SW_DUMMY;
	e->attr.sample_period = 1;
	e->attr.sample_type = RK_SCHED_SAMPLE_TYPE;
	e->attr.sample_id_all = 1;
	e->attr.context_switch = 1;
	e->attr.comm = 1;
	e->attr.comm_exec = 1;
	e->attr.task = 1;
	e->attr.inherit = 1;
	e->attr.use_clockid = 1;
	e->attr.clockid = CLOCK_MONOTONIC;
}
