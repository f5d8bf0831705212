/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * perfetto.h - a timeline as a Perfetto trace (a stream of TracePacket
 * protobufs, the format ui.perfetto.dev and trace_processor open).
 *
 * Per process a TrackDescriptor (ProcessDescriptor), per thread one
 * (ThreadDescriptor, named by its last comm) carrying TrackEvent slices:
 * "Running" while on CPU, then why it was off CPU ("Preempted",
 * "Sleeping", "Blocked", ...) until the next run, each with its CPU; fork,
 * exec, rename, exit and crash as instants; tracepoint samples as instants
 * with their fields. Samples of other -e sources as PerfSample packets with
 * interned call stacks (the UI's flame graph). Times are CLOCK_MONOTONIC
 * (the trace's clock, declared by a ClockSnapshot). The scheduler's view
 * too: the switches as ftrace sched_switch events per CPU and the wakeups
 * (record --wakeups) as sched_waking / sched_wakeup_new, in the boot clock
 * ftrace events are read in, with a SystemInfo naming the kernel: Perfetto
 * draws CPU tracks (the traced threads' runs), thread states and who woke
 * whom (an interrupt's wakeups marked so), and ends dead threads; and the
 * process tree where the files name a parent (pfsched.c). Each thread's
 * slice track has a name of its own, apart from its thread-state track.
 * May call: timeline, util.
 */
#ifndef RK_PERFETTO_H
#define RK_PERFETTO_H

#include "pfstats.h"
#include "session.h"
#include "timeline.h"

/**
 * rk_perfetto_write() - write @tl to @path (through a temporary, renamed).
 * Return: 0, or -errno (reported).
 */
int rk_perfetto_write(const struct rk_timeline *tl, const char *path, struct rk_perfetto_stats *st);

/**
 * rk_perfetto_write_noted() - the same, and what the session did not
 * record (@loss, NULL: nothing said) as an instant on a track
 * "ringkeeper: incomplete" at the first event.
 */
int rk_perfetto_write_noted(const struct rk_timeline *tl, const char *path,
			    const struct rk_loss *loss, struct rk_perfetto_stats *st);

#endif /* RK_PERFETTO_H */
