# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A perf script (perf script -i FILE -s tests/perf_waking_flags.py): per
woken tid, how many of its sched:sched_waking samples carry an interrupt in
common_flags (TRACE_FLAG_HARDIRQ 0x08, _SOFTIRQ 0x10, _NMI 0x40, as the
kernel's own event does), and how many do not, as "waking TID IRQ TASK"
lines. perf 6.1's perf script has no field for common_flags; its python
scripting reads them (perf_trace_context.common_flags)."""
import os
import sys

sys.path.append(os.environ["PERF_EXEC_PATH"] + "/scripts/python/Perf-Trace-Util/lib/Perf/Trace")
from perf_trace_context import common_flags  # noqa: E402

seen = {}


# Its fields after the common ones: comm, pid, prio, [success,] target_cpu (by kernel).
def sched__sched_waking(event_name, context, common_cpu, common_secs, common_nsecs, common_pid,
                        common_comm, common_callchain, comm, pid, *rest):
    irq, task = seen.get(pid, (0, 0))
    if common_flags(context) & 0x58:
        irq += 1
    else:
        task += 1
    seen[pid] = (irq, task)


def trace_unhandled(event_name, context, event_fields_dict, *rest):
    pass


def trace_end():
    for pid in sorted(seen):
        print("waking %d %d %d" % (pid, seen[pid][0], seen[pid][1]))
