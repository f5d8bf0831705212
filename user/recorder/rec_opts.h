/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_opts.h - struct rk_record_opts: what `ringkeeper record` was asked,
 * as the command line (cmd_record.c) fills it and every part of the
 * recorder reads it.
 */
#ifndef RK_REC_OPTS_H
#define RK_REC_OPTS_H

#include <stdint.h>
#include <sys/types.h>
#include "evsel.h"

/**
 * struct rk_trigger_opts - record --trigger and the snapshots they take
 * (rec_trigger.h; 0 everywhere: none).
 * @signal: SIGUSR2 and `ringkeeper snapshot --trigger SESSION`.
 * @delay_ns: a traced thread waited for a CPU longer (decided in BPF).
 * @blocked_ns, @blocked_states: a traced thread off CPU longer than that
 *	in a state with one of these TASK_* bits (1 S, 2 D).
 * @killed: a traced process killed by a signal that makes no core.
 * @exit_nonzero: a traced process exited with a status other than 0.
 * @window_ns: records from T - window to T (0: all the rings hold).
 * @after_ns: the cut at the trigger + this.
 * @dir: where the bundles go. @max_files, @max_bytes: kept there for the
 *	session, fairly per user. @gap_ns: at most one snapshot per gap.
 */
struct rk_trigger_opts {
	int signal;
	uint64_t delay_ns;
	uint64_t blocked_ns;
	uint32_t blocked_states;
	int killed;
	int exit_nonzero;
	uint64_t window_ns;
	uint64_t after_ns;
	const char *dir;
	uint32_t max_files;
	uint64_t max_bytes;
	uint64_t gap_ns;
};

/**
 * struct rk_record_opts - what `ringkeeper record` was asked.
 * @pid: trace this process's threads (0: launch @argv).
 * @argv: command to launch and trace from its first instruction.
 * @root: directory of sessions (tmpfs).
 * @session: session name (NULL: generated).
 * @data_size: data ring bytes per thread (a power of two).
 * @budget: locked bytes per user.
 * @workers: pin workers (0: online CPUs).
 * @linger_ns: keep an off-CPU buffer locked this long.
 * @tick_ns: drain period.
 * @ringbuf_size: BPF ringbuf bytes.
 * @inherit: trace children and new threads.
 * @keep: leave the bpffs maps pinned at exit.
 * @duration_ns: stop after this long (0: when the target exits or on signal).
 * @ready_fd: if >= 0, "ready\n" is written here once tracing is on.
 * @evs, @nev: perf event sources (-e), src 1..@nev.
 * @cpu_ring: data bytes of each per-CPU kernel ring for them.
 * @aux_size: AUX area of each thread's file of the AUX event (0: none).
 * @cpu_aux: AUX ring of each CPU for it.
 * @on_exit_drop: remove a thread's files when it exits (the RFC's truncate).
 * @max_threads: trace at most this many threads at once (0: RK_MAX_ENTRIES).
 * @max_shm: at most this many bytes of buffer files at once (0: no cap);
 *	exited threads' files go first, oldest first, the new thread's user's
 *	first. A live file counts its size, an exited one the blocks it uses.
 * @max_shm_user: at most this many of them for one user (0: no cap).
 * @keep_exited_ns: remove an exited thread's files this long after (0: keep).
 * @min_run_ns: do not pin a thread whose last run was shorter (rk_pin_opts).
 * @cmd_status: if not NULL, set to how the launched command ended, as a
 *	shell reports it (its exit status, 128 + signal), or -1 if none ran.
 * @rt_prio: SCHED_FIFO priority of the event loop (0: stay SCHED_OTHER).
 * @resume: continue this session of a recorder that was killed: the BPF
 *          programs, maps and ringbuf it left pinned keep working meanwhile.
 * @all: trace every user-space thread (-a), those born later included.
 * @cgroups, @cgroup_ids, @ncgroups: trace every thread in these cgroup v2
 *	subtrees (--cgroup), and those that move in later, not those that leave.
 */
struct rk_record_opts {
	pid_t pid;
	char **argv;
	const char *root;
	const char *session;
	uint64_t data_size;
	uint64_t budget;
	unsigned int workers;
	uint64_t linger_ns;
	uint64_t tick_ns;
	uint64_t ringbuf_size;
	int inherit;
	int wakeups; /* --wakeups */
	int offcpu; /* --offcpu: stacks at switch-outs into a sleep (and wakeups) */
	int keep;
	uint64_t duration_ns;
	int ready_fd;
	struct rk_evsel evs[RK_MAX_SRC - 1];
	int nev;
	uint64_t cpu_ring;
	uint64_t aux_size;
	uint64_t cpu_aux;
	int on_exit_drop;
	uint32_t max_threads;
	uint64_t max_shm;
	uint64_t max_shm_user;
	const char *resume;
	int rt_prio;
	uint64_t min_run_ns;
	int *cmd_status;
	int all;
	const char *cgroups[8];
	uint64_t cgroup_ids[8];
	int ncgroups;
	uint64_t keep_exited_ns;
	struct rk_trigger_opts trig;
};

#endif /* RK_REC_OPTS_H */
