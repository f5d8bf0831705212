/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pfsched.h - the Perfetto trace's scheduler view (see perfetto.h): the
 * traced threads' switches, wakeups and ends as ftrace events per CPU,
 * and the process tree from the files' FORK records, in what Perfetto's
 * importer reads them from.
 * Owns: nothing past the calls.
 * May call: timeline, util (pfwire.h's writer).
 */
#ifndef RK_PFSCHED_H
#define RK_PFSCHED_H

#include "pfwire.h"
#include "timeline.h"

/*
 * rk_pf_sched() - the switches as sched_switch, the wakeups as
 * sched_waking (from an interrupt: compact, with its common_flags), each
 * dead thread's end as sched_process_free, per CPU in the boot clock
 * (CLOCK_BOOTTIME = CLOCK_MONOTONIC + @boot_off), after a SystemInfo.
 * Return: 0, -ENOMEM, or o->err.
 */
int rk_pf_sched(struct pf_out *o, const struct rk_timeline *tl, __u64 boot_off);

/*
 * rk_pf_process_tree() - per process whose leader was born traced (its
 * FORK record names its parent), a ProcessTree packet at its birth: pid,
 * ppid, and its name as the cmdline (Perfetto takes a process's parent
 * from ProcessTree or task_newtask only; a ProcessDescriptor has none).
 */
void rk_pf_process_tree(struct pf_out *o, const struct rk_timeline *tl);

/* The name of the process of tl->threads[@first]: its leader's, else that thread's. */
const char *rk_pf_process_name(const struct rk_timeline *tl, size_t first);

#endif /* RK_PFSCHED_H */
