// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Exit policy, limits, gc and permissions. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bufile.h"
#include "helpers.h"
#include "session.h"

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
	cr_assert_eq(st.bpf_fork_fail + st.not_traced, 6, "fork_fail %llu not_traced %llu",
		     (unsigned long long)st.bpf_fork_fail, (unsigned long long)st.not_traced);
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
	cr_assert_eq(st.shm_bytes, 3 * 20480);
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
	cr_assert_eq(files_in(dir, files, 8), 3, "dry run removed something");
	free(out);
	free(err);
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

/* Files belong to the traced thread's user, mode 0600; bpffs is root's. */
Test(lifecycle, files_are_owned_by_the_traced_user)
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
		cr_assert_eq(sb.st_uid, 65534, "%s owned by %u", path, sb.st_uid);
		cr_assert_eq(sb.st_mode & 0777, 0600, "%s mode %o", path, sb.st_mode & 0777);
		/* The owner can read it; another unprivileged user cannot. */
		c = fork();
		cr_assert_geq(c, 0);
		if (!c) {
			int ok_owner, fd;

			if (setgid(65534) || setuid(65534))
				_exit(125);
			fd = open(path, O_RDONLY);
			ok_owner = fd >= 0;
			_exit(ok_owner ? 0 : 1);
		}
		st = wait_for(c, 10000);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the owner cannot read %s", path);
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
