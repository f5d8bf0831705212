/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* helpers.h - shared by the integration tests (root, BPF, real processes). */
#ifndef RK_TEST_HELPERS_H
#define RK_TEST_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "bufile.h"
#include "session.h"
#include "shell.h"

extern const char *rk_bin, *workload;
extern char root[64]; /* a fresh --root per test, removed after it */
extern long unpaired_seen; /* switches that do not alternate, summed by check_file() */

/* Skip (not pass) without root or outside 'make integration'; make root. */
void rk_test_setup(void);
void rk_test_teardown(void);

uint64_t now_ms(void);
/* Start argv with stdout/stderr to files; @keep_fd stays open in the child. */
pid_t spawn(char *const argv[], const char *out, const char *err, int keep_fd);
/*
 * The workload with @args (NULL-terminated) and "-w FD", its output in
 * ROOT/.wl.out and .wl.err: it waits for a byte on *@go, a pipe's write end
 * (the caller's to write and close).
 */
pid_t spawn_gated(const char *const args[], int *go);
/* Two threads sleeping 50 us at a time for about @secs seconds (~9,000 switches a second each). */
pid_t busy_workload(double secs);
/* Wait for @pid at most @ms; returns its wait status, or fails the test. */
int wait_for(pid_t pid, unsigned int ms);
/* A file's contents (static buffer, up to 1 MiB). */
char *slurp(const char *path);
/* Run to completion (60 s at most); out and err get malloc'd copies. */
int run_rk(char *const argv[], char **out, char **err);
/* The tids a workload printed ("main P", "child P", "tid T" lines). */
size_t expected_tids(const char *out, unsigned int *tids, size_t max);
struct check;
/*
 * The context switches the kernel counted for @tid, from the workload's
 * "... T ... csw N" line; -1 if there is none.
 */
long workload_csw(const char *out, unsigned int tid);
/*
 * @c has at least the switches the kernel counted for its thread (from the
 * workload output @out): N switch-outs and N + 1 switch-ins.
 */
void assert_switches_cover(const struct check *c, const char *out, const char *path);
int cmp_u32(const void *a, const void *b);
/* The tids that have a file in @dir, sorted. */
size_t files_in(const char *dir, unsigned int *tids, size_t max);
/* The memory the files in @dir hold: their blocks, as tmpfs counts them. */
unsigned long long blocks_in(const char *dir);
/* The buffer files in @dir whose identity says uid @uid. */
size_t files_of_uid(const char *dir, __u32 uid);

/** struct check - what check_file() found in one buffer. */
struct check {
	__u32 tid, tgid;
	long in, out, fork, exec, exit_rec, other, foreign;
	long wakeups; /* RK_RECORD_WAKEUP (record --wakeups) */
	/*
	 * Switch-outs into a sleep (S or D, not preempted): each needs another
	 * task's wakeup before the thread runs again. With --wakeups, each has
	 * exactly one between the switch-in of the run it ends and the next
	 * switch-in; the ones that do not (none, or more) are counted. Usually
	 * it follows the switch-out; a wakeup racing with it on another CPU
	 * (try_to_wake_up() then waits for the switch to finish) is stamped
	 * before it, inside the run (seen once in CI: "1 of 30 sleeps").
	 */
	long sleeps, sleeps_unwoken, sleeps_woken_twice;
	long run_wakeups; /* wakeups since the last switch, the thread not asleep */
	/* sleeps followed by another switch-out, no switch-in between (the kernel's unpaired) */
	long sleeps_unpaired;
	int asleep; /* the last switch-out was a sleep: wakeups since it, + 1 */
	long in_missing; /* outs with no in since the last out (or since the fork) */
	int last_switch; /* 0 none, 1 in, 2 out */
	int first_switch;
	int alternation_broken;
	__u64 last_time;
	int time_backwards;
	__u32 last_kind; /* type << 16 | misc of the record before */
	char backwards[160]; /* the first pair out of time order */
};

/* Parse a sched buffer and assert what holds for every file. */
void check_file(const char *path, struct check *c, struct rk_bufile **keep);
void read_stat(const char *session, struct rk_session_stat *st);
int read_line_within(int fd, char *buf, size_t len, unsigned int ms);
/*
 * `record --root ROOT --session S -m 16K --ready-fd W [EXTRA...] -p TARGET`,
 * output in ROOT/.rk.out and .rk.err; *ready_rd is the read end of W.
 * @extra: NULL-terminated options (may be NULL). @target <= 0: no -p (-a, --cgroup).
 */
pid_t start_recorder_on(pid_t target, const char *session, int *ready_rd,
			const char *const extra[]);
/*
 * The source tree and the build directory's name (build, or build-san),
 * from RK_BIN = REPO/OUTPUT/ringkeeper; @output may be NULL.
 */
void source_tree(char *repo, size_t len, char *output, size_t olen);
/* A sysctl's value without its newline ("" if it cannot be read). */
void read_sysctl(const char *path, char *buf, size_t len);
/*
 * Global state a test changes (a sysctl, a file a command it runs leaves),
 * put back on every path: what it was is kept in a journal under /run
 * before the change; restore_globals() puts back and removes all of it (a
 * test's .fini calls it), and so does the runner after every test, for a
 * test Criterion killed at its timeout or that crashed (no .fini runs then).
 * One journal for the run: the tests run one at a time (--jobs 1, as make
 * integration runs them), or one test's end would put back another's.
 */
/* Keep @path's value to put back (the first kept value wins), then write @value. */
void sysctl_set_restored(const char *path, const char *value);
/* Keep @path's value to put back, changing nothing now (a command will). */
void sysctl_keep(const char *path);
/* Remove @path (a file a command the test runs will make) when restoring. */
void remove_at_restore(const char *path);
/* Unmount @path (a mount the test makes; lazily, whatever still uses it) when restoring. */
void unmount_at_restore(const char *path);
/* Put back everything kept, in the order kept; how many entries were put back. */
int restore_globals(void);
/* Run, expect exit @code and @needle in stderr. */
void expect_error(char *const argv[], int code, const char *needle);
/* Whether this is the ASan+UBSan build's run (make sanitize: RK_SANITIZED=1). */
int rk_sanitized(void);
/*
 * Skip (said, with @why) in the sanitizer's run: for a test that adds
 * nothing there, what it runs of ours under ASan other tests run too.
 */
void plain_run_only(const char *why);
/*
 * Debian's perf reads the perf.data file @data whole: `perf script` and
 * `perf report` exit 0 and stop at no record (the caller skips if perf is
 * not installed).
 */
void assert_perf_reads(const char *data);
/*
 * Whether this runs in make vmtest's guest (RK_VMTEST=1): a test may leave
 * out there what only reads back files our own code wrote, which is the
 * same on every kernel and ~25x slower under QEMU's TCG.
 */
int in_vmtest(void);

#endif /* RK_TEST_HELPERS_H */
