// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Exit policy, limits, gc and permissions. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bufile.h"
#include "helpers.h"
#include "session.h"
#include "show.h"
#include <bpf/bpf.h>

TestSuite(lifecycle, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 120);

Test(lifecycle, on_exit_drop_removes_the_files_of_exited_threads)
{
	char *argv[] = { (char *)rk_bin, "record",    "--root", root, "--session",	"d",  "-m",
			 "16K",		 "--on-exit", "drop",	"--", (char *)workload, "-t", "4",
			 "-i",		 "5",	      NULL };
	char dir[256], *err;
	unsigned int files[16];
	struct rk_session_stat st;
	int status = run_rk(argv, NULL, &err);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	snprintf(dir, sizeof(dir), "%s/d/sched", root);
	cr_assert_eq(files_in(dir, files, 16), 0, "every thread exited: no file left");
	read_stat("d", &st);
	cr_assert_eq(st.threads, 5);
	cr_assert_eq(st.dropped, 5);
	cr_assert_eq(st.on_exit_drop, 1);
	free(err);
	{
		char *a[] = {
			(char *)rk_bin, "record", "--on-exit", "truncate", "--", "true", NULL
		};

		expect_error(a, 2, "--on-exit: 'keep' or 'drop'");
	}
}

Test(lifecycle, max_threads_traces_some_and_counts_the_rest)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "m",
			 "-m",
			 "16K",
			 "--max-threads",
			 "3",
			 "--",
			 (char *)workload,
			 "-t",
			 "8",
			 "-i",
			 "20",
			 NULL };
	char dir[256], path[300], *err, *out;
	unsigned int files[16];
	struct rk_session_stat st;
	size_t n, i;
	int status = run_rk(argv, &out, &err);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	snprintf(dir, sizeof(dir), "%s/m/sched", root);
	n = files_in(dir, files, 16);
	read_stat("m", &st);
	/* main + 8 threads alive together, room for 3: the rest are left out, counted. */
	cr_assert_eq(n, 3, "%zu files", n);
	cr_assert_eq(st.threads, 3);
	/* not_traced counts the children the BPF side could not add too (bpf_fork_fail). */
	cr_assert_eq(st.not_traced, 6, "fork_fail %llu not_traced %llu",
		     (unsigned long long)st.bpf_fork_fail, (unsigned long long)st.not_traced);
	cr_assert_leq(st.bpf_fork_fail, st.not_traced);
	cr_assert_eq(st.max_threads, 3);
	for (i = 0; i < n; i++) {
		struct check c;

		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		check_file(path, &c, NULL);
		cr_assert_eq(c.last_switch, 2, "%s: recorded to its end", path);
	}
	cr_assert_eq(strncmp(out, "main", 4), 0, "the workload ran: %s", out);
	free(out);
	free(err);
}

Test(lifecycle, max_shm_caps_the_files_created)
{
	/* 16K data + a page = 20 KiB a thread: 60K fits three. */
	char *argv[] = { (char *)rk_bin, "record",    "--root", root, "--session",	"s",  "-m",
			 "16K",		 "--max-shm", "60K",	"--", (char *)workload, "-t", "6",
			 "-i",		 "5",	      NULL };
	char dir[256], *err;
	unsigned int files[16];
	struct rk_session_stat st;
	int status = run_rk(argv, NULL, &err);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	snprintf(dir, sizeof(dir), "%s/s/sched", root);
	cr_assert_eq(files_in(dir, files, 16), 3);
	read_stat("s", &st);
	/* All exited: each counts the blocks it holds now (at most its 20 KiB). */
	cr_assert_eq(st.shm_bytes, blocks_in(dir));
	cr_assert_leq(st.shm_bytes, 3 * 20480);
	cr_assert_eq(st.not_traced, 4, "7 threads, 3 traced: %llu",
		     (unsigned long long)st.not_traced);
	cr_assert_not_null(strstr(err, "not traced (--max-shm)"), "%s", err);
	free(err);
}

Test(lifecycle, gc_removes_dead_buffers_and_empty_sessions)
{
	char *rec[] = {
		(char *)rk_bin, "record",	  "--root", root, "--session", "g", "-m", "16K",
		"--",		(char *)workload, "-t",	    "2",  "-i",	       "2", NULL
	};
	char *dry[] = { (char *)rk_bin, "gc", "--root", root, "--max-size", "1", "--dry-run", NULL };
	char *gc[] = { (char *)rk_bin, "gc", "--root", root, "--max-size", "1", NULL };
	char *old[] = { (char *)rk_bin, "gc", "--root", root, "--older-than", "3600", NULL };
	char dir[256], *out, *err;
	unsigned int files[8];
	int st;

	st = run_rk(rec, NULL, &err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
	free(err);
	snprintf(dir, sizeof(dir), "%s/g/sched", root);
	cr_assert_eq(files_in(dir, files, 8), 3);
	/* Nothing is an hour old. */
	st = run_rk(old, &out, &err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
	cr_assert_eq(files_in(dir, files, 8), 3);
	free(out);
	free(err);
	st = run_rk(dry, &out, &err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
	cr_assert_not_null(strstr(out, "would remove 3 buffer files"), "%s", out);
	/* A summary: a line for the session and the total, not a line per file. */
	cr_assert_not_null(strstr(out, "gc: would remove 3 files ("), "%s", out);
	cr_assert_eq(count_of(out, "\n"), 2, "%s", out);
	cr_assert_eq(files_in(dir, files, 8), 3, "dry run removed something");
	free(out);
	free(err);
	{
		char *v[] = { (char *)rk_bin, "gc", "--root", root, "--max-size", "1",
			      "--dry-run",    "-v", NULL };

		st = run_rk(v, &out, &err);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
		cr_assert_eq(count_of(out, "would remove /"), 3, "-v: a line per file: %s", out);
		free(out);
		free(err);
	}
	st = run_rk(gc, &out, &err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
	cr_assert_not_null(strstr(out, "removed 3 buffer files"), "%s", out);
	snprintf(dir, sizeof(dir), "%s/g", root);
	cr_assert_eq(access(dir, F_OK), -1, "the emptied session is gone");
	free(out);
	free(err);
	{
		char *a[] = { (char *)rk_bin, "gc", "--root", root, NULL };

		expect_error(a, 2, "give --older-than and/or --max-size");
	}
}

/* Files are root's; the traced user may read (ACL) but not change them; bpffs is root's. */
Test(lifecycle, files_are_roots_and_readable_by_the_traced_user)
{
	char o[128], e[128], line[64], dir[256], path[300];
	unsigned int files[8];
	struct stat sb;
	int gp[2], ready, st;
	size_t n, i;
	pid_t wl, rk;

	/* mkdtemp made the test root 0700; the default root is 0755. */
	cr_assert_eq(chmod(root, 0755), 0);
	cr_assert_eq(pipe(gp), 0);
	snprintf(o, sizeof(o), "%s/.wl.out", root);
	snprintf(e, sizeof(e), "%s/.wl.err", root);
	/* The workload runs as nobody and waits for us. */
	wl = fork();
	cr_assert_geq(wl, 0);
	if (!wl) {
		char fd[16];

		close(gp[1]);
		snprintf(fd, sizeof(fd), "%d", gp[0]);
		if (setgid(65534) || setuid(65534))
			_exit(125);
		execl(workload, workload, "-t", "2", "-i", "3", "-w", fd, (char *)NULL);
		_exit(126);
	}
	close(gp[0]);
	rk = start_recorder_on(wl, "u", &ready, NULL);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
	cr_assert_eq(stat("/sys/fs/bpf/ringkeeper", &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0700, "bpffs dir is root-only");
	cr_assert_eq(write(gp[1], "g", 1), 1);
	close(gp[1]);
	st = wait_for(wl, 30000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "workload status %d", st);
	st = wait_for(rk, 30000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(ready);
	snprintf(dir, sizeof(dir), "%s/u/sched", root);
	n = files_in(dir, files, 8);
	cr_assert_eq(n, 3);
	for (i = 0; i < n; i++) {
		pid_t c;

		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		cr_assert_eq(stat(path, &sb), 0);
		/* Root's file: the traced user reads it through an ACL entry, nothing more. */
		cr_assert_eq(sb.st_uid, 0, "%s owned by %u", path, sb.st_uid);
		cr_assert_eq(sb.st_mode & 0777, 0640, "%s mode %o (ACL mask r--)", path,
			     sb.st_mode & 0777);
		c = fork();
		cr_assert_geq(c, 0);
		if (!c) {
			int fd;

			if (setgid(65534) || setuid(65534))
				_exit(125);
			fd = open(path, O_RDONLY);
			if (fd < 0)
				_exit(1);
			/* It may not change, shrink or replace it. */
			if (open(path, O_WRONLY) >= 0 || errno != EACCES)
				_exit(2);
			if (truncate(path, 0) == 0 || errno != EACCES)
				_exit(3);
			if (unlink(path) == 0 || rename(path, "/tmp/x") == 0)
				_exit(4);
			_exit(0);
		}
		st = wait_for(c, 10000);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "the traced user cannot read %s, or can modify it (step %d)", path,
			  WEXITSTATUS(st));
		c = fork();
		cr_assert_geq(c, 0);
		if (!c) {
			if (setgid(65533) || setuid(65533))
				_exit(125);
			_exit(open(path, O_RDONLY) < 0 && errno == EACCES ? 0 : 1);
		}
		st = wait_for(c, 10000);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "another user can read %s", path);
	}
}

Test(lifecycle, no_inherit_traces_only_the_target)
{
	char *argv[] = {
		(char *)rk_bin, "record", "--root",	    root, "--session", "n",  "-m", "16K",
		"--no-inherit", "--",	  (char *)workload, "-t", "3",	       "-i", "3",  NULL
	};
	char dir[256], *out, *err;
	unsigned int files[8], tids[8];
	struct rk_session_stat st;
	int status = run_rk(argv, &out, &err);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	cr_assert_eq(expected_tids(out, tids, 8), 4);
	snprintf(dir, sizeof(dir), "%s/n/sched", root);
	cr_assert_eq(files_in(dir, files, 8), 1, "only the launched thread");
	cr_assert_eq(files[0], tids[0]);
	read_stat("n", &st);
	cr_assert_eq(st.inherit, 0);
	cr_assert_eq(st.bpf_forks, 0);
	free(out);
	free(err);
}

/* The identity record keeps how the thread ended. */
Test(lifecycle, exit_status_is_in_the_identity_record)
{
	char *argv[] = { (char *)rk_bin, "record", "--root",  root, "--session", "x", "-m",
			 "16K",		 "--",	   "/bin/sh", "-c", "exit 3",	 NULL };
	char dir[256], path[300], *err;
	unsigned int files[4];
	struct rk_bufile *bf;
	int status = run_rk(argv, NULL, &err);

	/* record ends as the command did, as a shell would. */
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3, "%s", err);
	cr_assert_not_null(strstr(err, "/bin/sh exited with status 3"), "%s", err);
	snprintf(dir, sizeof(dir), "%s/x/sched", root);
	cr_assert_eq(files_in(dir, files, 4), 1);
	snprintf(path, sizeof(path), "%s/%u", dir, files[0]);
	bf = rk_bufile__open(path, NULL);
	cr_assert_not_null(bf);
	cr_assert_eq(bf->ident->state, RK_THREAD_EXITED);
	cr_assert_eq(bf->ident->exit_code, 3 << 8, "wait-encoded exit code 0x%x",
		     bf->ident->exit_code);
	cr_assert_gt(bf->ident->exit_ns, bf->ident->start_ns);
	rk_bufile__free(bf);
	free(err);
}

/* In a pid namespace: files by global tid, the identity has the namespace's tid too. */
Test(lifecycle, pid_namespace_tids)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "ns",
			 "-m",
			 "16K",
			 "--",
			 "/usr/bin/unshare",
			 "--pid",
			 "--fork",
			 "--",
			 (char *)workload,
			 "-t",
			 "2",
			 "-i",
			 "2",
			 NULL };
	char dir[256], path[300], *out, *err;
	unsigned int files[8], tids[8];
	size_t n, i, inner = 0;
	int status;

	if (access("/usr/bin/unshare", X_OK))
		cr_skip_test("no /usr/bin/unshare (util-linux)");
	status = run_rk(argv, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	/* Inside, the workload is pid 1 and prints namespace tids. */
	cr_assert_eq(expected_tids(out, tids, 8), 3, "%s", out);
	cr_assert_eq(tids[0], 1, "%s", out);
	snprintf(dir, sizeof(dir), "%s/ns/sched", root);
	n = files_in(dir, files, 8);
	cr_assert_eq(n, 4, "unshare + the workload's 3 threads");
	for (i = 0; i < n; i++) {
		struct rk_bufile *bf;
		size_t k;

		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		bf = rk_bufile__open(path, NULL);
		cr_assert_not_null(bf);
		cr_assert_eq(bf->ident->tid, files[i], "named by the global tid");
		for (k = 0; k < 3; k++)
			if (bf->ident->ns_tid == tids[k] && bf->ident->ns_tid != bf->ident->tid)
				inner++;
		rk_bufile__free(bf);
	}
	cr_assert_eq(inner, 3, "each workload thread carries its namespace tid");
	free(out);
	free(err);
}

static long proc_field(pid_t pid, const char *key)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = strtol(line + strlen(key) + 1, NULL, 10);
	fclose(f);
	return v;
}

static long fd_count(pid_t pid)
{
	char cmd[256], path[128];

	snprintf(path, sizeof(path), "%s/.fds", root);
	snprintf(cmd, sizeof(cmd), "ls /proc/%d/fd | wc -l > %s", pid, path);
	if (system(cmd))
		return -1;
	return strtol(slurp(path), NULL, 10);
}

/*
 * 20,000 short-lived threads while traced: the loader keeps no fd, memory or
 * map entry for the dead ones, and every one was handled by the exit policy.
 */
Test(lifecycle, churn_of_20000_threads_leaks_nothing, .timeout = 300)
{
	static const char *const args[] = { "-C", "20000", NULL };
	char wo[128], we[128], line[64], e[128];
	long fds0, fds1, rss0, rss1;
	struct rk_session_stat st;
	int go, ready, status, mfd;
	struct rk_pmu_key k, next, *prev = NULL;
	unsigned int entries = 0;
	uint64_t end;
	pid_t wl, rk;

	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	wl = spawn_gated(args, &go);
	{
		const char *const extra[] = { "-m", "4K", "--on-exit", "drop", NULL };

		rk = start_recorder_on(wl, "c", &ready, extra);
	}
	snprintf(e, sizeof(e), "%s/.rk.err", root);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "%s", slurp(e));
	fds0 = fd_count(rk);
	rss0 = proc_field(rk, "VmRSS:");
	cr_assert_eq(write(go, "g", 1), 1);
	/* Churn done: the workload prints it and waits for our second byte. */
	end = now_ms() + 240000;
	while (!strstr(slurp(wo), "churned 20000")) {
		cr_assert_lt(now_ms(), end, "churn did not finish: %s", slurp(we));
		usleep(20000);
	}
	/* Let the loader catch up: every churned thread finished (bounded wait). */
	end = now_ms() + 60000;
	for (;;) {
		char d[256];

		snprintf(d, sizeof(d), "%s/c", root);
		cr_assert_eq(rk_session_stat_read(d, &st), 0);
		if (st.dropped >= 20000 && st.threads_live == 1)
			break;
		cr_assert_lt(now_ms(), end, "dropped %llu, live %llu",
			     (unsigned long long)st.dropped, (unsigned long long)st.threads_live);
		usleep(20000);
	}
	usleep(300000); /* one reclaim period (100 ms) plus margin, for the RSS figure */
	fds1 = fd_count(rk);
	rss1 = proc_field(rk, "VmRSS:");
	mfd = bpf_obj_get("/sys/fs/bpf/ringkeeper/pmu_info");
	cr_assert_geq(mfd, 0);
	while (!bpf_map_get_next_key(mfd, prev, &next)) {
		entries++;
		k = next;
		prev = &k;
	}
	close(mfd);
	cr_assert_eq(write(go, "x", 1), 1);
	close(go);
	status = wait_for(wl, 30000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = wait_for(rk, 30000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", slurp(e));
	close(ready);
	read_stat("c", &st);
	printf("churn of 20,000 threads: loader fds %ld -> %ld, VmRSS %ld -> %ld kB; map entries "
	       "left %u; BPF drops %llu, records lost %llu, threads traced %llu, files dropped "
	       "%llu\n",
	       fds0, fds1, rss0, rss1, entries, (unsigned long long)st.bpf_drops,
	       (unsigned long long)st.lost, (unsigned long long)st.threads,
	       (unsigned long long)st.dropped);
	cr_assert_eq(fds1, fds0, "the loader leaked fds");
	cr_assert_eq(entries, 1, "stale map entries: only the main thread is live");
	cr_assert_eq(st.threads, 20001);
	cr_assert_eq(st.dropped, 20001,
		     "every exited thread (the main one last) handled by --on-exit=drop");
	cr_assert_eq(st.bpf_drops, 0, "signals dropped at the default ringbuf size");
	if (rk_sanitized())
		printf("RSS not checked under ASan: its quarantine keeps freed memory (LeakSanitizer "
		       "checks leaks at the loader's exit)\n");
	else
		cr_assert_lt(rss1 - rss0, 8 * 1024, "loader RSS grew by %ld kB", rss1 - rss0);
}

/* A tmpfs of @opts at ROOT/small, for a --root that fills (unmounted by the test). */
static void small_tmpfs(char *mnt, size_t len, const char *opts)
{
	snprintf(mnt, len, "%s/small", root);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	unmount_at_restore(mnt); /* a failed assertion skips the test's own umount */
	if (mount("tmpfs", mnt, "tmpfs", 0, opts))
		cr_skip_test("cannot mount a small tmpfs here: %s", strerror(errno));
}

/*
 * tmpfs full: files are sparse, so it bites twice: a thread whose page 0
 * cannot be allocated is not traced (counted); a file whose data page
 * cannot be is lost while written (SIGBUS, counted), never the recorder.
 * Every file left parses.
 */
Test(lifecycle, tmpfs_full_is_handled_like_a_limit)
{
	char mnt[128], *err;
	/* A cap above the filesystem: the default (a quarter of it) would never fill it. */
	char *argv[] = { (char *)rk_bin, "record", "--root",	mnt,  "--session", "f",
			 "-m",		 "16K",	   "--max-shm", "1G", "--",	   (char *)workload,
			 "-t",		 "8",	   "-i",	"5",  NULL };
	char dir[256], path[300];
	unsigned int files[16];
	struct rk_session_stat st;
	size_t n, i;
	int status;

	/* Room for the stat file and a few threads' first pages, not more. */
	small_tmpfs(mnt, sizeof(mnt), "size=40k,mode=0755");
	status = run_rk(argv, NULL, &err);
	snprintf(dir, sizeof(dir), "%s/f/sched", mnt);
	n = files_in(dir, files, 16);
	snprintf(path, sizeof(path), "%s/f", mnt);
	cr_assert_eq(rk_session_stat_read(path, &st), 0);
	for (i = 0; i < n; i++) {
		struct check c;

		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		check_file(path, &c, NULL);
	}
	umount2(mnt, MNT_DETACH);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	cr_assert_not_null(strstr(err, "No space left on device"), "%s", err);
	cr_assert_gt(n, 0);
	cr_assert_lt(n, 9);
	cr_assert_eq(st.threads, n);
	cr_assert_eq(st.not_traced, 9 - n, "%llu not traced, %zu traced",
		     (unsigned long long)st.not_traced, n);
	printf("tmpfs of 40 KiB: %zu of 9 threads traced, %llu files lost while written\n", n,
	       (unsigned long long)st.files_broken);
	if (st.files_broken)
		cr_assert_not_null(strstr(err, "lost its memory while written"), "%s", err);
	free(err);
}

struct times {
	__u64 t[8192];
	size_t n;
};

static int times_fn(const struct perf_event_header *h, void *ctx)
{
	struct times *tm = ctx;
	__u64 t;

	/* sched records: sample_id = pid,tid, time, cpu,res, id */
	memcpy(&t, (const __u8 *)h + h->size - 24, 8);
	if (tm->n < 8192)
		tm->t[tm->n++] = t;
	return 0;
}

static void times_of(const char *path, struct times *tm)
{
	const char *msg = NULL;
	struct rk_bufile *bf = rk_bufile__open(path, &msg);

	cr_assert_not_null(bf, "%s: %s", path, msg ? msg : strerror(errno));
	tm->n = 0;
	cr_assert_eq(rk_bufile__for_each(bf, times_fn, tm), 0, "%s does not parse", path);
	rk_bufile__free(bf);
}

/*
 * kill -9 the recorder mid-run: every file still parses; --resume takes the
 * session over (the programs ran on, pinned) and nothing recorded before the
 * kill is lost.
 */
Test(lifecycle, resume_after_sigkill_loses_nothing)
{
	char wo[128], we[128], line[64], dir[256], path[300], *err;
	static struct times before[8], after;
	unsigned int files[8];
	int ready, st;
	size_t n, i, k;
	pid_t wl, rk;

	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	{
		char *argv[] = { (char *)workload, "-t", "3", "-i", "600", "-s", "2000", NULL };

		wl = spawn(argv, wo, we, -1);
	}
	{
		/*
		 * A ring that does not wrap, so "nothing lost" means every record;
		 * a --max-shm-user the resume must keep (it took the default).
		 */
		const char *const extra[] = { "-m", "512K", "--max-shm-user", "8M", NULL };

		rk = start_recorder_on(wl, "r", &ready, extra);
	}
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
	close(ready);
	snprintf(dir, sizeof(dir), "%s/r/sched", root);
	/* Wait (bounded) until the three workers have some history. */
	{
		uint64_t end = now_ms() + 20000;
		size_t busy = 0;

		while (busy < 3) {
			cr_assert_lt(now_ms(), end, "the workers have no records");
			n = files_in(dir, files, 8);
			for (busy = 0, i = 0; i < n; i++) {
				snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
				times_of(path, &before[i]);
				busy += before[i].n >= 40;
			}
			usleep(10000);
		}
	}
	kill(rk, SIGKILL);
	st = wait_for(rk, 10000);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* Invariant 3: whatever instant the writer died at, every file parses. */
	n = files_in(dir, files, 8);
	cr_assert_eq(n, 4);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		times_of(path, &before[i]);
	}
	cr_assert_eq(access("/sys/fs/bpf/ringkeeper/link_sched_switch", F_OK), 0,
		     "the programs stay attached for a resume");
	{
		char *argv[] = { (char *)rk_bin, "record", "--root", root, "--resume", "r", NULL };

		st = run_rk(argv, NULL, &err);
	}
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
	cr_assert_not_null(strstr(err, "resumed session r: 4 live threads adopted"), "%s", err);
	st = wait_for(wl, 30000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (i = 0; i < n; i++) {
		struct rk_bufile *bf;
		struct check c;

		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		times_of(path, &after);
		cr_assert_geq(after.n, before[i].n, "%s: %zu records after, %zu before", path,
			      after.n, before[i].n);
		for (k = 0; k < before[i].n; k++)
			cr_assert_eq(after.t[k], before[i].t[k], "%s: record %zu changed", path, k);
		check_file(path, &c, &bf);
		cr_assert_eq(bf->ident->state, RK_THREAD_EXITED, "%s", path);
		cr_assert_eq(bf->ident->overwritten, 0);
		if (c.tid != c.tgid)
			cr_assert_gt(after.n, before[i].n, "%s: nothing recorded after resume",
				     path);
		rk_bufile__free(bf);
	}
	cr_assert_eq(access("/sys/fs/bpf/ringkeeper", F_OK), -1, "pins removed at the end");
	free(err);
	{
		struct rk_session_stat ss;

		read_stat("r", &ss);
		cr_assert_eq(ss.max_shm_user, 8 << 20, "--max-shm-user after the resume: %llu",
			     (unsigned long long)ss.max_shm_user);
	}
	{
		char *argv[] = { (char *)rk_bin, "record", "--root", root, "--resume", "r", NULL };

		expect_error(argv, 1, "ended normally: there is nothing to resume");
	}
}

/*
 * An outage the pinned ringbuf cannot hold (a 4 KiB one: 64 signals): the
 * threads exit while no recorder runs and their exit signals are dropped.
 * The resume marks them exited from /proc and shows what the outage lost.
 */
Test(lifecycle, resume_reconciles_threads_that_exited_during_the_outage)
{
	char wo[128], we[128], line[64], dir[256], path[300], *err;
	const char *const extra[] = { "--ringbuf-size", "4K", NULL };
	char *argv[] = { (char *)rk_bin, "record", "--root", root, "--resume", "o", NULL };
	static const char *const args[] = { "-t", "3", "-i", "200", "-s", "1000", NULL };
	struct rk_session_stat st;
	unsigned int files[8];
	int ready, status, go;
	size_t n, i;
	pid_t wl, rk;

	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	/*
	 * Its threads start once the recorder is attached: they live ~0.25 s,
	 * less than an ASan recorder takes to attach (it found the workload
	 * gone, 2 runs in 3).
	 */
	wl = spawn_gated(args, &go);
	rk = start_recorder_on(wl, "o", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
	close(ready);
	cr_assert_eq(write(go, "g", 1), 1);
	close(go);
	snprintf(dir, sizeof(dir), "%s/o/sched", root);
	{
		uint64_t end = now_ms() + 20000;

		while (files_in(dir, files, 8) < 4)
			cr_assert_lt(now_ms(), end, "no files for the workload's threads");
	}
	kill(rk, SIGKILL);
	status = wait_for(rk, 10000);
	cr_assert(WIFSIGNALED(status));
	/* The whole workload runs and exits (reaped) while no recorder runs. */
	status = wait_for(wl, 30000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = run_rk(argv, NULL, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	cr_assert_not_null(strstr(err, "dropped while no recorder ran"), "%s", err);
	read_stat("o", &st);
	printf("outage: %llu signals dropped, %llu threads found exited at resume\n",
	       (unsigned long long)st.outage_drops, (unsigned long long)st.outage_exited);
	cr_assert_gt(st.outage_drops, 0);
	cr_assert_gt(st.outage_exited, 0, "some exit was lost in the outage: %s", err);
	n = files_in(dir, files, 8);
	cr_assert_eq(n, 4);
	for (i = 0; i < n; i++) {
		struct rk_bufile *bf;
		struct check c;

		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		check_file(path, &c, &bf);
		cr_assert_eq(bf->ident->state, RK_THREAD_EXITED, "%s is still shown %s", path,
			     rk_thread_state_name(bf->ident->state));
		rk_bufile__free(bf);
	}
	free(err);
}

/*
 * A reused tid: the earlier thread's file moves aside to <tid>.<n>, the
 * first free n, and never over one that is there (<tid>.999 included: a
 * tid reused a thousand times under -a). ns_last_pid makes the reuse.
 */
Test(lifecycle, a_reused_tid_never_replaces_an_earlier_history)
{
	char dir[256], path[300], line[64], *s;
	int req[2], rep[2], ready, tries, n;
	pid_t target, rk, p1 = 0, p2 = 0;
	struct stat sb;
	uint64_t end;

	/* Close-on-exec: the recorder must not hold the target's pipe open. */
	cr_assert_eq(pipe2(req, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(rep, O_CLOEXEC), 0);
	target = fork();
	cr_assert_geq(target, 0);
	if (!target) {
		char b;
		pid_t c;

		close(req[1]);
		close(rep[0]);
		/* A fork per byte asked; the child's pid back. */
		while (read(req[0], &b, 1) == 1) {
			c = fork();
			if (!c)
				_exit(0);
			waitpid(c, NULL, 0);
			if (write(rep[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
				_exit(1);
		}
		_exit(0);
	}
	close(req[0]);
	close(rep[1]);
	rk = start_recorder_on(target, "reuse", &ready, NULL);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
	cr_assert_eq(write(req[1], "f", 1), 1);
	cr_assert_eq(read(rep[0], &p1, sizeof(p1)), (ssize_t)sizeof(p1));
	snprintf(dir, sizeof(dir), "%s/reuse/sched", root);
	snprintf(path, sizeof(path), "%s/%d", dir, p1);
	end = now_ms() + 10000;
	while (stat(path, &sb) && now_ms() < end)
		usleep(2000);
	cr_assert_eq(stat(path, &sb), 0, "no file for the first child %d", p1);
	/* 999 earlier histories of the tid (stand-ins), then the tid once more. */
	for (n = 1; n <= 999; n++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%d.%d", dir, p1, n);
		f = fopen(path, "we");
		cr_assert_not_null(f);
		fputs("earlier", f);
		cr_assert_eq(fclose(f), 0);
	}
	for (tries = 0; tries < 50 && p2 != p1; tries++) {
		char last[16];
		FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "we");

		cr_assert_not_null(f);
		snprintf(last, sizeof(last), "%d", p1 - 1);
		fputs(last, f);
		cr_assert_eq(fclose(f), 0);
		cr_assert_eq(write(req[1], "f", 1), 1);
		cr_assert_eq(read(rep[0], &p2, sizeof(p2)), (ssize_t)sizeof(p2));
	}
	cr_assert_eq(p2, p1, "pid %d was not reused in 50 tries", p1);
	snprintf(path, sizeof(path), "%s/%d.1000", dir, p1);
	end = now_ms() + 10000;
	while (stat(path, &sb) && now_ms() < end)
		usleep(2000);
	close(req[1]);
	close(rep[0]);
	wait_for(target, 10000);
	wait_for(rk, 30000);
	close(ready);
	cr_assert_eq(stat(path, &sb), 0, "the first child's history is not at %s", path);
	snprintf(path, sizeof(path), "%s/%d.999", dir, p1);
	s = slurp(path);
	cr_assert_str_eq(s, "earlier", "%s was replaced", path);
}

/*
 * Without --max-shm, a session keeps at most a quarter of its filesystem:
 * 1,000 short threads on a 4 MiB tmpfs never fill it (before, with no cap,
 * "No space left on device" and threads not traced).
 */
Test(lifecycle, default_max_shm_is_a_quarter_of_the_filesystem)
{
	char mnt[128], dir[256], *err;
	char *argv[] = { (char *)rk_bin, "record", "--root",	     mnt,  "--session", "d", "-m",
			 "16K",		 "--",	   (char *)workload, "-C", "1000",	NULL };
	unsigned long long held;
	struct rk_session_stat st;
	int status;

	small_tmpfs(mnt, sizeof(mnt), "size=4m,mode=0755");
	status = run_rk(argv, NULL, &err);
	snprintf(dir, sizeof(dir), "%s/d", mnt);
	cr_assert_eq(rk_session_stat_read(dir, &st), 0);
	snprintf(dir, sizeof(dir), "%s/d/sched", mnt);
	held = blocks_in(dir);
	umount2(mnt, MNT_DETACH);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	cr_assert_eq(st.max_shm, 1024 * 1024, "default --max-shm %llu",
		     (unsigned long long)st.max_shm);
	cr_assert_null(strstr(err, "No space left on device"), "the tmpfs filled up:\n%s", err);
	cr_assert_eq(st.file_errors, 0);
	cr_assert_eq(st.files_broken, 0);
	cr_assert_leq(held, 1024 * 1024ull, "the files hold %llu bytes", held);
	cr_assert_geq(st.retention_removed, 500, "%llu removed",
		      (unsigned long long)st.retention_removed);
	free(err);
}

/*
 * --max-shm-user: one user's threads take at most that much; they make
 * room from their own exited files, and past that are not traced
 * (counted, named), while root's thread in the same session is traced.
 */
Test(lifecycle, max_shm_user_caps_one_user_s_files)
{
	char cmd[600], dir[256], *err;
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "u",
			 "-m",
			 "16K",
			 "--max-shm",
			 "1200K",
			 "--max-shm-user",
			 "400K",
			 "--",
			 "/bin/sh",
			 "-c",
			 cmd,
			 NULL };
	size_t nobody, rootf;
	struct rk_session_stat st;
	int status;

	cr_assert_eq(chmod(root, 0755), 0);
	snprintf(cmd, sizeof(cmd),
		 "setpriv --reuid=65534 --regid=65534 --clear-groups %s -t 40 -i 20 -s 5000 "
		 ">/dev/null",
		 workload);
	status = run_rk(argv, NULL, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	read_stat("u", &st);
	snprintf(dir, sizeof(dir), "%s/u/sched", root);
	nobody = files_of_uid(dir, 65534);
	rootf = files_of_uid(dir, 0);
	/* 20 KiB a thread: 400K is 20 live threads of nobody's. */
	cr_assert_leq(nobody, 20, "nobody's threads have %zu files", nobody);
	cr_assert_geq(nobody, 1);
	cr_assert_geq(rootf, 1, "root's shell was not traced");
	cr_assert_geq(st.not_traced, 21, "%llu not traced", (unsigned long long)st.not_traced);
	cr_assert_not_null(strstr(err, "--max-shm-user"), "%s", err);
	free(err);
}

static int count_samples(const struct perf_event_header *h, void *ctx)
{
	*(size_t *)ctx += h->type == PERF_RECORD_SAMPLE;
	return 0;
}

/* PERF_RECORD_SAMPLEs in @path (a file that must parse). */
static size_t samples_in(const char *path)
{
	struct rk_bufile *bf = rk_bufile__open(path, NULL);
	size_t n = 0;

	cr_assert_not_null(bf, "%s", path);
	cr_assert_eq(rk_bufile__for_each(bf, count_samples, &n), 0, "%s does not parse", path);
	rk_bufile__free(bf);
	return n;
}

/*
 * An -e session resumes too: kill -9 the recorder of `-e cpu-clock`,
 * --resume opens the event again for the live threads, takes their files
 * and the process's sideband over, and the samples go on after the
 * outage, resolved through the sideband (before, --resume refused it and
 * the rest of the run was lost).
 */
Test(lifecycle, resume_of_an_e_session_goes_on_sampling)
{
	char line[64], dir[256], path[300], cmd[600], *err, *s;
	size_t before[8], n, i, more = 0;
	unsigned int files[8];
	int ready, st;
	pid_t wl, rk;
	/*
	 * Long enough to outlive the attach even in a fast QEMU TCG guest (with
	 * -i 400 -l 200000 the workload could end before the recorder's first
	 * samples: "no samples before the kill" in one vmtest run of 6.1).
	 */
	char *wl_argv[] = { (char *)workload, "-t", "2",     "-i", "2000", "-s",
			    "1000",	      "-l", "20000", NULL };
	const char *const extra[] = { "-m", "512K", "-e", "cpu-clock", "-F", "2000", NULL };

	wl = spawn(wl_argv, "/dev/null", "/dev/null", -1);
	rk = start_recorder_on(wl, "e", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
	close(ready);
	snprintf(dir, sizeof(dir), "%s/e/cpu-clock", root);
	{
		uint64_t end = now_ms() + 20000;

		do {
			cr_assert_lt(now_ms(), end, "no samples before the kill");
			usleep(20000);
			n = files_in(dir, files, 8);
			for (i = 0, more = 0; i < n; i++) {
				snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
				more += samples_in(path) >= 5;
			}
		} while (more < 2);
	}
	kill(rk, SIGKILL);
	cr_assert(WIFSIGNALED(wait_for(rk, 10000)));
	n = files_in(dir, files, 8);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		before[i] = samples_in(path);
	}
	{
		char *argv[] = { (char *)rk_bin, "record", "--root", root, "--resume", "e", NULL };

		st = run_rk(argv, NULL, &err);
	}
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
	cr_assert_not_null(strstr(err, "resumed session e"), "%s", err);
	cr_assert_not_null(strstr(err, "-e cpu-clock opened again"), "%s", err);
	free(err);
	st = wait_for(wl, 30000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (i = 0, more = 0; i < n; i++) {
		size_t after;

		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		after = samples_in(path);
		cr_assert_geq(after, before[i], "%s: samples lost", path);
		more += after > before[i] + 5;
	}
	cr_assert_geq(more, 2, "the worker threads were not sampled after the resume");
	/* The samples after the outage resolve through the sideband taken over. */
	snprintf(cmd, sizeof(cmd), "%s show --root %s --session e -e cpu-clock %u | grep -c body",
		 rk_bin, root, files[n - 1]);
	s = sh_out(cmd, NULL);
	cr_assert_gt(atoi(s), 0, "no sample resolves to the workload's body()");
	free(s);
}

/* `ulimit -n @n` (soft and hard, as the shell sets it), then record @opts -- @cmd; its output. */
static char *record_under_nofile(int n, const char *opts, const char *cmd, int *status)
{
	char line[800];

	snprintf(line, sizeof(line),
		 "ulimit -n %d && exec %s record --root %s --session f%d %s -- %s 2>&1 >/dev/null",
		 n, rk_bin, root, n, opts, cmd);
	return sh_out(line, status);
}

/*
 * Too few file descriptors for the start-up: said before anything is made
 * (what is short, the limit, what to do), exit 1. At 48 the loop's epoll
 * once failed after "recording session" without a word; at 32 a failed
 * dup() came out as ENOENT. The need it states is enough to record.
 */
Test(lifecycle, too_few_file_descriptors_are_said_up_front_with_what_is_needed)
{
	static const struct {
		int n;
		const char *opts;
	} runs[] = { { 48, "" }, { 32, "" }, { 48, "-e cpu-clock" } };
	char want[96], dir[128], cmd[300], *out, *p;
	int i, status, need;

	snprintf(cmd, sizeof(cmd), "%s -t 4 -i 50", workload);
	for (i = 0; i < 3; i++) {
		out = record_under_nofile(runs[i].n, runs[i].opts, cmd, &status);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1,
			  "ulimit -n %d: status 0x%x\n%s", runs[i].n, status, out);
		cr_assert_not_null(strstr(out, "too few file descriptors"), "%s", out);
		snprintf(want, sizeof(want), "RLIMIT_NOFILE is %d: raise it (ulimit -n ",
			 runs[i].n);
		p = strstr(out, want);
		cr_assert_not_null(p, "no limit and advice:\n%s", out);
		need = atoi(p + strlen(want));
		cr_assert_gt(need, runs[i].n, "%s", out);
		cr_assert_lt(need, 1024, "a need above the usual default: %s", out);
		cr_assert_null(strstr(out, "recording session"), "said after starting:\n%s", out);
		cr_assert_null(strstr(out, "No such file"), "%s", out);
		snprintf(dir, sizeof(dir), "%s/f%d", root, runs[i].n);
		cr_assert_neq(access(dir, F_OK), 0, "a session was left: %s", dir);
		free(out);
		/* What it asked for is enough: the same run records. */
		out = record_under_nofile(need, runs[i].opts, cmd, &status);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "ulimit -n %d, as asked: status 0x%x\n%s", need, status, out);
		cr_assert_not_null(strstr(out, "nothing dropped or lost"), "%s", out);
		free(out);
		snprintf(dir, sizeof(dir), "rm -rf %s/f%d", root, need);
		free(sh_out(dir, NULL));
	}
}

/* The small tmpfs a test mounted on its root, gone before the root is removed. */
static void tmpfs_root_fini(void)
{
	umount2(root, MNT_DETACH);
	restore_globals();
	rk_test_teardown();
}

/* A small tmpfs on the test's root, with @free_kb left. */
static void full_tmpfs_root(unsigned int free_kb)
{
	char cmd[300];

	umount2(root, MNT_DETACH);
	cr_assert_eq(mount("none", root, "tmpfs", 0, "size=1m,mode=0755"), 0, "mount: %s",
		     strerror(errno));
	snprintf(cmd, sizeof(cmd), "dd if=/dev/zero of=%s/fill bs=1k count=%u 2>/dev/null", root,
		 1024 - free_kb);
	free(sh_out(cmd, NULL));
}

/*
 * A full tmpfs under --root: named (that tmpfs, not /dev/shm), with what
 * to do. Full at the start: exit 1 before anything is recorded (the stat
 * file's first store killed the recorder with SIGBUS); full for the first
 * thread's file; full while recording (the records lost are not for a
 * larger -m, which would lose more).
 */
Test(lifecycle, a_full_tmpfs_under_root_is_named_with_what_to_do, .fini = tmpfs_root_fini)
{
	char want[160], cmd[600], *out;
	int status;

	unmount_at_restore(root);
	snprintf(want, sizeof(want), "the tmpfs holding %s is full", root);
	snprintf(cmd, sizeof(cmd), "%s record --root %s --session s -- %s -t 2 -i 2000 -s 10 2>&1",
		 rk_bin, root, workload);

	full_tmpfs_root(0);
	out = sh_out(cmd, &status);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status 0x%x\n%s", status, out);
	cr_assert_not_null(strstr(out, want), "%s", out);
	cr_assert_not_null(strstr(out, "record into another --root; nothing recorded"), "%s", out);
	cr_assert_null(strstr(out, "recording session"), "%s", out);
	free(out);

	full_tmpfs_root(4); /* the stat file's page, no thread's */
	out = sh_out(cmd, &status);
	cr_assert(WIFEXITED(status), "status 0x%x\n%s", status, out);
	cr_assert_not_null(strstr(out, "cannot create buffer file"), "%s", out);
	cr_assert_not_null(strstr(out, want), "%s", out);
	cr_assert_null(strstr(out, "free space in /dev/shm"), "%s", out);
	free(out);

	full_tmpfs_root(24); /* the first pages of the threads' files */
	out = sh_out(cmd, &status);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x\n%s", status, out);
	cr_assert_not_null(strstr(out, "lost their memory while written"), "%s", out);
	snprintf(want, sizeof(want), "the filesystem holding %s full", root);
	cr_assert_not_null(strstr(out, want), "%s", out);
	cr_assert_null(strstr(out, "raise -m"), "a larger -m would lose more:\n%s", out);
	free(out);
}
