/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_evcpu.h - how the recorder opens its -e events, and whose records a
 * per-CPU event brings.
 *
 * -a opens each event once per CPU for every task (pid -1), --cgroup once
 * per CPU and cgroup (PERF_FLAG_PID_CGROUP): a context switch then pays for
 * no per-task perf context, and the fds do not grow with the processes.
 * -p and CMD keep per-task events with inherit (docs/design.md, "-e events:
 * per task or per CPU", says why, measured). Intel PT stays per task.
 * A per-CPU event samples whatever runs: its records are demultiplexed by
 * the sample's tid into the same per-thread files, and those of tasks the
 * session does not trace are dropped and counted (stat: perf_untraced,
 * perf_sb_untraced).
 * Owns: r->evcpu.
 * May call: rec_threads, rec_src, rec_bpf, drain, util.
 */
#ifndef RK_REC_EVCPU_H
#define RK_REC_EVCPU_H

#include "rec.h"

/* r->evcpu, rk_session_stat.evcpu: how -e is opened. */
#define RK_EVCPU_TASK 0 /* per traced task and CPU, inherit=1 */
#define RK_EVCPU_ALL 1 /* per CPU, every task (-a) */
#define RK_EVCPU_CGROUP 2 /* per CPU and --cgroup subtree */

/** rec_evcpu_mode() - how @o's -e events are to be opened (RK_EVCPU_*). */
int rec_evcpu_mode(const struct rk_record_opts *o);

/**
 * rec_evcpu_open() - with r->evcpu per CPU, open the events now (before any
 * task is adopted: what runs meanwhile is sampled, and filed once its
 * thread is known). A --cgroup whose events this kernel refuses (perf_event
 * bound to a v1 hierarchy) falls back to per-task events, said once.
 * Return: 0, or -errno (reported).
 */
int rec_evcpu_open(struct rk_rec *r);

/**
 * rec_evcpu_task() - a newly traced thread's events: per-task events of
 * @tid with per-task mode, nothing with per-CPU events (they sample it).
 * Return: 0, -ESRCH if it is gone, other -errno (@msg says what).
 */
int rec_evcpu_task(struct rk_rec *r, __u32 tid, char *msg, size_t len);

/**
 * rec_evcpu_sample() - the thread a per-CPU sample (or throttle record) of
 * @pid/@tid at @time goes to: a live traced one; one BPF traces that we do
 * not know yet (its file made now, as for an inherited task). NULL: not
 * ours (counted in perf_untraced; so is a tid of -1, an exiting task the
 * kernel no longer names, which per-task events never sampled), or a
 * thread already finished whose late record is counted lost, or refused by
 * a limit (counted then).
 */
struct rk_thread *rec_evcpu_sample(struct rk_rec *r, __u32 pid, __u32 tid, __u64 time);

/**
 * rec_evcpu_sideband_ours() - whether a per-CPU sideband record (mmap,
 * comm, fork, exit) whose sample_id names @tid and @time (the task it
 * happened in, the parent for a fork) is of a traced task, as a per-task
 * event would have written it; if not, it is counted (perf_sb_untraced).
 */
int rec_evcpu_sideband_ours(struct rk_rec *r, __u32 tid, __u64 time);

#endif /* RK_REC_EVCPU_H */
