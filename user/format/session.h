/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * session.h - a recording session's directory and its live status file.
 *
 * <root>/<session>/stat is a small binary file the loader keeps mapped and
 * rewrites on every tick; `ringkeeper stat` and `ls` read it, and it stays
 * behind (state "ended" or, if the loader died, a dead loader_pid).
 */
#ifndef RK_SESSION_H
#define RK_SESSION_H

#include <linux/types.h>
#include <stddef.h>
#include <stdio.h>

#define RK_STAT_MAGIC 0x5441545350454b52ULL /* "RKPESTAT" */
#define RK_STAT_VERSION 1
#define RK_STAT_FILE "stat"
#define RK_SCHED_DIR "sched"
#define RK_SIDEBAND_DIR "sideband"
/* One line per crash of a traced process, appended by the core handler. */
#define RK_CRASHES_FILE "crashes"

#define RK_SESSION_RUNNING 1
#define RK_SESSION_ENDED 2

/**
 * struct rk_session_stat - counters of one session, as last published.
 * Byte counts are bytes; times CLOCK_REALTIME ns.
 */
struct rk_session_stat {
	__u64 magic;
	__u32 version;
	__u32 size;
	__u32 loader_pid;
	__u32 target_pid;
	__u32 state;
	__u32 nr_cpus;
	__u64 start_ns;
	__u64 update_ns;
	__u64 data_size;
	__u64 file_size;
	__u64 budget;
	__u32 workers;
	__u32 inherit;
	/* BPF side */
	__u64 bpf_signals;
	__u64 bpf_drops;
	__u64 bpf_forks;
	__u64 bpf_fork_fail;
	__u64 bpf_exits;
	/* loader side */
	__u64 signals;
	__u64 records;
	__u64 overwritten;
	__u64 lost;
	__u64 threads;
	__u64 threads_live;
	__u64 file_errors;
	/* pin pool */
	__u64 pins;
	__u64 unpins;
	__u64 refusals;
	__u64 evictions;
	__u64 lock_errors;
	__u64 coalesced;
	__u64 locked;
	__u64 locked_peak;
	__u64 vmlck_peak;
	/* a switch-in or -out with no opposite one since the last (docs/design.md, "The sched source") */
	__u64 unpaired;
	/* perf sources */
	__u32 nev;
	__u32 nfds;
	__u64 perf_records;
	__u64 perf_lost;
	__u64 sideband;
	__u64 cpu_ring;
	__u64 not_traced; /* threads refused by --max-threads / --max-shm / tmpfs full */
	__u64 dropped; /* files removed at exit (--on-exit=drop) */
	__u64 shm_bytes; /* bytes of buffer files created */
	__u64 max_shm;
	__u32 max_threads;
	__u32 on_exit_drop;
	char events[128];
	char command[256];
	/* AUX (intel_pt); a stat file written before these existed reads them as 0 */
	__u64 aux_size; /* AUX area of each thread's file of the AUX source */
	__u64 cpu_aux; /* AUX ring per CPU */
	__u64 aux_records; /* PERF_RECORD_AUX drained */
	__u64 aux_bytes; /* AUX bytes copied into thread files */
	__u64 aux_truncated; /* PERF_RECORD_AUX with the TRUNCATED flag: the CPU ring was full */
	__u64 aux_dropped; /* AUX bytes with no traced thread to go to */
	/* for benchmarks (make bench); 0 in older stat files */
	__u64 switches; /* switch signals handled */
	__u64 pin_lat_n; /* runs whose buffer got locked */
	__u64 pin_lat_p50_ns; /* switch-in to locked, median (log-bucket upper bound) */
	__u64 pin_lat_p99_ns;
	__u64 oncpu_ns; /* on-CPU time of traced threads, per buffer */
	__u64 oncpu_pinned_ns; /* the part of it with the buffer locked */
	__u64 loader_cpu_ns; /* user + system CPU time of the loader */
	__u64 pin_hot; /* switch-ins whose buffer was still locked (no wait) */
	__u64 bpf_prog_misses; /* program runs the kernel skipped (recursion): events unseen */
	/* hardening and scale; 0 in older stat files */
	__u64 files_broken; /* files whose pages were lost while written (SIGBUS: truncated, tmpfs full) */
	__u64 files_root_only; /* files not granted to the thread's user (kernel's rules) */
	__u64 exec_rotated; /* threads that exec'd into a program their user may not read */
	__u64 outage_drops; /* signals the BPF side dropped while no recorder ran (resume) */
	__u64 outage_exited; /* threads found exited at resume, their exit signal lost */
	__u64 mem_refused; /* threads not traced to keep the memory cgroup from its limit */
	__u64 loader_rss; /* the loader's peak resident memory (VmHWM) */
	__u64 attach_cpu_ns; /* loader CPU time until tracing was on (files of the threads found) */
	/* switch-ins not pinned: the last run was shorter than --min-run-us */
	__u64 pins_skipped_short;
	__u64 crashes; /* processes frozen at a core-dumping signal */
	/* records of a crashed process not written (its buffers are frozen) */
	__u64 after_crash;
	__u64 renames; /* comm changes after birth (not at exec) */
	__u64 creds_changes; /* credential or dumpability changes of traced tasks (not at exec) */
	__u64 creds_rotated; /* threads continued in a new file after one (new reader or root only) */
	__u64 pin_wakeups; /* switch-ins that woke the loader to lock a buffer (BPF) */
	/* -a / --cgroup; 0 in older stat files */
	__u64 bpf_adopted; /* tasks traced by -a / --cgroup at fork, exec or a cgroup move (BPF) */
	__u64 cgroup_joined; /* moves into a --cgroup subtree of untraced tasks or processes */
	__u64 cgroup_left; /* threads no longer traced: moved out of every --cgroup subtree */
	__u32 scope; /* RK_SCOPE_*: what was traced */
	__u32 pad_scope;
	/* retention (--keep-exited, --max-shm) */
	__u64 retention_removed; /* exited threads' files removed to keep within the limits */
	__u64 retention_bytes; /* their bytes */
	__u64 keep_exited_ns; /* --keep-exited (0: none) */
	/*
	 * The sched_switch program's runs and kernel-measured run time while
	 * run-time stats were on (kernel.bpf_stats_enabled or BPF_ENABLE_STATS;
	 * 0 otherwise, and in older stat files)
	 */
	__u64 switch_prog_runs;
	__u64 switch_prog_ns;
	/* renames within RK_RENAME_GAP_NS of a thread's last: only its latest name written */
	__u64 renames_held;
	/* wakeups of traced threads (0 in older stat files) */
	__u64 wakeups; /* wakeup records written */
	__u32 wakeups_on; /* record --wakeups */
	__u32 pad_wakeups;
	/* the wakeup programs' runs (every wakeup in the system) and run time, as switch_prog_* */
	__u64 wake_prog_runs;
	__u64 wake_prog_ns;
	/*
	 * sched records stamped with their thread's previous record's time:
	 * the clock read on another CPU came out behind it (0 in older files)
	 */
	__u64 time_clamped;
	__u64 time_clamped_max_ns; /* by how much, at most */
	/* --max-shm-user (0 in older stat files: the default applied, see rec_session.c) */
	__u64 max_shm_user;
	/*
	 * exits handed out after their thread's final switch-out, which had
	 * finished its files: not written (its clock read came out behind;
	 * seen in 6.1's TCG guest)
	 */
	__u64 exits_late;
	/* turns back to dumpable signalled late (RK_REGRANT_GAP_NS; 0 in older stat files) */
	__u64 creds_held;
	/*
	 * records not written: the pages they would have filled did not fit
	 * under --max-shm / --max-shm-user (0 in older stat files)
	 */
	__u64 shm_withheld;
	/* record --trigger (0 in older stat files) */
	__u32 trigger_flags; /* RK_TRIGGER_F_*: what is armed */
	__u32 pad_trigger;
	__u64 triggers; /* triggers that fired */
	__u64 triggers_dropped; /* fired within --trigger-gap of the last snapshot, or queue full */
	__u64 snapshots; /* bundles written */
	__u64 snapshot_errors; /* bundles that could not be written */
	__u64 snapshot_bytes; /* their bytes */
	__u64 snapshots_removed; /* older bundles removed for --snapshot-max(-size) */
	/* 1: the recorder's oom_score_adj could not be set to -1000 (0 in older stat files) */
	__u64 oom_candidate;
	/* record --offcpu (0 in older stat files) */
	__u64 stacks; /* stack records written */
	__u64 stack_drops; /* stacks not taken: their CPU's stack ring full (BPF) */
	__u64 stacks_lost; /* flagged records whose stack was not theirs (never, by our BPF) */
	__u32 offcpu_on; /* record --offcpu */
	__u32 pad_offcpu;
	/* -e opened per CPU (-a, --cgroup); 0 in older stat files */
	__u64 perf_untraced; /* samples (and throttle records) of tasks not traced, dropped */
	__u64 perf_sb_untraced; /* mmap/comm/task records of tasks not traced, dropped */
	__u32 evcpu; /* how -e was opened: 0 per task, 1 per CPU (-a), 2 per CPU and cgroup */
	__u32 pad_evcpu;
	/*
	 * CLOCK_MONOTONIC: every signal timed before it has been handed out
	 * (written to its files). The counters are published at least once a
	 * second, also in the middle of a long intake, so a new update_ns no
	 * longer says an intake ended: a snapshot waits for this instead
	 * (0 in older stat files: it waits for two updates).
	 */
	__u64 handed_ns;
	/*
	 * threads the running recorder found out of the traced set (exited,
	 * or gone from the cgroups) with their end's signals dropped: ended
	 * then, flagged RK_IDENT_END_UNSEEN (0 in older stat files)
	 */
	__u64 threads_reconciled;
	/*
	 * signals not handed out: a stop signal came under a backlog and the
	 * intakes ran out of their RK_STOP_GRACE_NS (0 in older stat files)
	 */
	__u64 stop_dropped;
};

/* rk_session_stat.trigger_flags */
#define RK_TRIGGER_F_SIGNAL 0x1
#define RK_TRIGGER_F_DELAY 0x2
#define RK_TRIGGER_F_BLOCKED 0x4
#define RK_TRIGGER_F_KILLED 0x8
#define RK_TRIGGER_F_EXIT 0x10

/* rk_session_stat.scope: a target (-p, CMD) only, or adoption too. */
#define RK_SCOPE_TARGET 0
#define RK_SCOPE_ALL 1 /* -a */
#define RK_SCOPE_CGROUP 2 /* --cgroup */

/* The size of the first stat files, without the AUX counters. */
#define RK_STAT_SIZE_V1 offsetof(struct rk_session_stat, aux_size)

/*
 * The counters of what a session did not record, each a reason a figure
 * read from it may be short: key (its stat field), what was lost and why,
 * what to do (NULL: nothing an option changes). The same keys name them in
 * `stat`, in the end line of `record`, in a bundle's or core's session note
 * ("loss KEY N") and in every reader's --json "loss" object.
 */
#define RK_LOSSES(X)                                                                               \
	X(bpf_drops, "signals dropped by the BPF side (ringbuf or switch ring full)",              \
	  "raise --ringbuf-size")                                                                  \
	X(stack_drops, "off-CPU stacks not taken (their CPU's stack ring full)",                   \
	  "raise --ringbuf-size")                                                                  \
	X(stacks_lost, "off-CPU stacks lost (not their record's)", NULL)                           \
	X(bpf_prog_misses, "BPF program runs the kernel skipped (recursion): events unseen", NULL) \
	X(outage_drops, "signals dropped while no recorder ran (before --resume)", NULL)           \
	X(outage_exited, "threads found exited at resume: their exits not recorded", NULL)         \
	X(perf_lost, "perf records lost in the kernel's per-CPU rings", "raise --cpu-ring")        \
	X(lost, "records lost (larger than a ring, or no file)", "raise -m")                       \
	X(shm_withheld,                                                                            \
	  "records not written: their pages did not fit under --max-shm or --max-shm-user",        \
	  "raise them, or lower -m")                                                               \
	X(exits_late,                                                                              \
	  "exit records lost: handed out after the thread's final switch (the clock read on "      \
	  "another CPU came out behind)",                                                          \
	  NULL)                                                                                    \
	X(not_traced,                                                                              \
	  "threads not traced: --max-threads, --max-shm, the memory cgroup or a full tmpfs",       \
	  "raise the limit that refused them (stat: not_traced, bpf_fork_fail, mem_refused)")      \
	X(file_errors, "buffer or sideband files not created", "see the errors above")             \
	X(files_broken, "files that lost their memory while written (truncated, tmpfs full)",      \
	  NULL)                                                                                    \
	X(aux_truncated, "AUX records truncated (the CPU's AUX ring full)", "raise --cpu-aux")     \
	X(aux_dropped, "AUX bytes with no traced thread to go to", NULL)                           \
	X(stop_dropped,                                                                            \
	  "signals not recorded: the recorder was stopped under a backlog (a few seconds "         \
	  "to catch up, then it ends)",                                                            \
	  NULL)

#define RK_LOSS_ENUM(field, what, todo) RK_LOSS_##field,
enum { RK_LOSSES(RK_LOSS_ENUM) RK_LOSS_NR };
#undef RK_LOSS_ENUM

/**
 * struct rk_loss - what a session did not record, as a reader learns it.
 * @known: 1 when the source said (a session's stat file, a bundle or core
 *	with "losses" in its session note); 0: not known (a bundle or core of
 *	an older ringkeeper, a file outside a session).
 * @v: RK_LOSS_* counters.
 */
struct rk_loss {
	int known;
	__u64 v[RK_LOSS_NR];
};

/** rk_loss_from_stat() - the loss counters of @st (known). */
void rk_loss_from_stat(struct rk_loss *l, const struct rk_session_stat *st);

/** rk_loss_key() - the stat key of RK_LOSS_* @k ("?" out of range). */
const char *rk_loss_key(int k);

/** rk_loss_count() - how many of @l's counters are not 0 (0: nothing lost, or not known). */
int rk_loss_count(const struct rk_loss *l);

/**
 * rk_loss_note() - @l as session note lines into @buf: "losses N" (how many
 * counters are not 0), then "loss KEY VALUE" for each of them.
 * Return: the length, or -ENOSPC (@buf too short).
 */
int rk_loss_note(const struct rk_loss *l, char *buf, size_t len);

/**
 * rk_loss_parse_note() - the "losses" and "loss KEY VALUE" lines of a
 * session note (@text, may be NULL) into @l: known if a "losses" line is
 * there; values of one key are summed (a core's buffers may come from
 * several sessions); unknown keys are ignored.
 */
void rk_loss_parse_note(struct rk_loss *l, const char *text);

/**
 * rk_loss_say() - for a reader's text output: nothing if @l is NULL or
 * nothing was lost; else a line saying what is read is incomplete, then a
 * line per counter (value, what, stat key), each starting with @pfx; if
 * not known, one line saying so.
 */
void rk_loss_say(FILE *f, const struct rk_loss *l, const char *pfx);

/**
 * rk_loss_json() - ,"loss":{"known":B,"complete":B,"counters":{KEY:N,...}}
 * (the counters that are not 0; complete is false when one is, or when
 * not known). Nothing if @l is NULL.
 */
void rk_loss_json(FILE *f, const struct rk_loss *l);

/**
 * rk_session_stat_read() - read and check <dir>/stat.
 * Return: 0, -errno, or -EBADMSG if it is not a ringkeeper stat file.
 */
int rk_session_stat_read(const char *dir, struct rk_session_stat *st);

/** rk_session_stat_readfd() - the same, of the stat file open at @fd. */
int rk_session_stat_readfd(int fd, struct rk_session_stat *st);

/**
 * rk_session_loader_wrote() - whether the loader @st names is root's and
 * has the stat file open at @fd mapped (the loader of that session, not
 * any process that calls itself ringkeeper). Return: 1 or 0.
 */
int rk_session_loader_wrote(const struct rk_session_stat *st, int fd);

/** rk_session_alive() - the loader of @st is still running. */
int rk_session_alive(const struct rk_session_stat *st);

/**
 * struct rk_crash_line - one line of a session's crashes file: a traced
 * process that crashed, as the core handler saw it.
 * @pid, @tid: global; @tid took the signal. @sig: the signal.
 * @time: %t, seconds since the epoch. @comm: %e. @core: where the core went
 *	("none": nowhere).
 */
struct rk_crash_line {
	int pid, tid, sig;
	long long time;
	char comm[64];
	char core[4096];
};

/**
 * rk_crash_line_write() - append @c to @f as one line: space-separated
 * fields, comm and core with every byte outside '!'..'~' and '\\' written
 * as \xNN (a comm or path may hold spaces or newlines).
 */
void rk_crash_line_write(FILE *f, const struct rk_crash_line *c);

/**
 * rk_crash_line_parse() - the inverse, for a line that may have been
 * written by anyone. Return: 0, or -EINVAL.
 */
int rk_crash_line_parse(const char *line, struct rk_crash_line *c);

/**
 * rk_session_print() - human or JSON rendering of one session's counters.
 * @name: session name.
 * @dir: its directory, for the crashes the core handler wrote there (NULL:
 *	counters only).
 */
void rk_session_print(FILE *f, const char *name, const struct rk_session_stat *st, int json,
		      const char *dir);

/**
 * rk_session_summary() - what `record` says when it ends: threads, records,
 * locked memory against the budget, and a line for each counter that says
 * something went wrong, with what to do (the rest: `stat`, or -v).
 */
void rk_session_summary(FILE *f, const char *name, const char *dir,
			const struct rk_session_stat *st);

#endif /* RK_SESSION_H */
