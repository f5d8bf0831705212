// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_hostile.c - what a traced, unprivileged user (and a careless root)
 * can do to the recorder: nothing that crashes or steers it, nothing that
 * shows them more than the kernel would.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include "access.h"
#include "helpers.h"

TestSuite(hostile, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 180);

#define NOBODY 65534

/*
 * Fork a child that becomes nobody (and dumpable again, which setuid()
 * turned off), waits for a byte on a pipe, then execs @argv.
 */
static pid_t spawn_nobody(char *const argv[], int *go_wr)
{
	int p[2];
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		char b;

		close(p[1]);
		/* A user's process: dumpable, as one that a login started would be. */
		if (setgid(NOBODY) || setuid(NOBODY) || prctl(PR_SET_DUMPABLE, 1))
			_exit(125);
		if (read(p[0], &b, 1) != 1)
			_exit(124);
		close(p[0]);
		execv(argv[0], argv);
		_exit(126);
	}
	close(p[0]);
	*go_wr = p[1];
	/*
	 * Ready when it is nobody's and dumpable (its /proc files are then
	 * nobody's): a recorder attached before would see root's process.
	 */
	{
		char path[64];
		struct stat sb;
		uint64_t end = now_ms() + 10000;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, pid);
		while ((stat(path, &sb) || sb.st_uid != NOBODY) && now_ms() < end)
			usleep(1000);
		cr_assert_eq(sb.st_uid, NOBODY, "the child did not become nobody");
	}
	return pid;
}

/* Run @fn(@arg) as nobody in a child; its exit status. */
static int as_nobody(int (*fn)(const char *), const char *arg)
{
	pid_t c = fork();
	int st;

	cr_assert_geq(c, 0);
	if (!c) {
		if (setgid(NOBODY) || setuid(NOBODY))
			_exit(125);
		_exit(fn(arg));
	}
	st = wait_for(c, 10000);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int try_modify(const char *path)
{
	if (truncate(path, 0) == 0 || errno != EACCES)
		return 1;
	if (open(path, O_RDWR) >= 0 || errno != EACCES)
		return 2;
	if (open(path, O_RDONLY) < 0)
		return 3; /* the traced user may read its own sched file */
	return 0;
}

static int can_open(const char *path)
{
	int fd = open(path, O_RDONLY);

	return fd >= 0 ? 0 : 1;
}

/* Wait (bounded) until @dir holds at least @n files. */
static size_t wait_files(const char *dir, unsigned int *tids, size_t max, size_t n)
{
	uint64_t end = now_ms() + 20000;
	size_t k;

	do {
		k = files_in(dir, tids, max);
		if (k >= n)
			return k;
		usleep(10000);
	} while (now_ms() < end);
	return k;
}

/*
 * The two attacks of issue 11 (truncate the live file: the recorder died of
 * SIGBUS; rewrite data_head/data_size: it wrote where the user chose) fail
 * for the traced user: the files are root's. Done by root by mistake, they
 * cost that one file, counted, and the recorder and every other file go on.
 */
Test(hostile, user_cannot_touch_files_and_root_mistakes_cost_one_file)
{
	char fd[16], dir[256], path[300], line[64];
	char *wl_argv[] = { (char *)workload, "-t", "3", "-i", "400", "-s", "2000", NULL };
	unsigned int tids[16];
	struct rk_session_stat st;
	struct rk_bufile *bf;
	const char *msg = NULL;
	int go, ready, status;
	size_t n, i;
	pid_t wl, rk;
	__u64 bad;

	(void)fd;
	cr_assert_eq(chmod(root, 0755), 0);
	wl = spawn_nobody(wl_argv, &go);
	rk = start_recorder_on(wl, "h", &ready, NULL);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
	cr_assert_eq(write(go, "g", 1), 1);
	close(go);
	snprintf(dir, sizeof(dir), "%s/h/sched", root);
	n = wait_files(dir, tids, 16, 4);
	cr_assert_eq(n, 4, "main and 3 threads have files (%zu)", n);

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%u", dir, tids[i]);
		cr_assert_eq(as_nobody(try_modify, path), 0,
			     "the traced user could modify %s, or not read it", path);
	}
	/* Root's mistakes, on a live recording: truncate one file, scribble on another. */
	snprintf(path, sizeof(path), "%s/%u", dir, tids[0]);
	cr_assert_eq(truncate(path, 0), 0);
	snprintf(path, sizeof(path), "%s/%u", dir, tids[1]);
	{
		int f = open(path, O_WRONLY);

		cr_assert_geq(f, 0);
		bad = 1ull << 40;
		cr_assert_eq(pwrite(f, &bad, 8, offsetof(struct perf_event_mmap_page, data_head)),
			     8);
		bad = 1ull << 33;
		cr_assert_eq(pwrite(f, &bad, 8, offsetof(struct perf_event_mmap_page, data_size)),
			     8);
		close(f);
	}
	status = wait_for(wl, 60000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "workload status %d", status);
	status = wait_for(rk, 60000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the recorder did not survive: status 0x%x\n%s", status,
		  slurp(strcat(strcpy(path, root), "/.rk.err")));
	close(ready);
	read_stat("h", &st);
	/* The truncated file's thread (the main one) still wrote its exit records. */
	cr_assert_eq(st.files_broken, 1, "files lost while written: %llu (truncated tid %u)\n%s",
		     (unsigned long long)st.files_broken, tids[0],
		     slurp(strcat(strcpy(path, root), "/.rk.err")));
	cr_assert_eq(st.bpf_drops, 0);
	/* The scribbled file is refused by readers, with a reason, not misread. */
	snprintf(path, sizeof(path), "%s/%u", dir, tids[1]);
	bf = rk_bufile__open(path, &msg);
	cr_assert_null(bf, "a page 0 with data_size 8 GiB was accepted");
	cr_assert_not_null(msg);
	for (i = 2; i < n; i++) {
		struct check c;

		snprintf(path, sizeof(path), "%s/%u", dir, tids[i]);
		check_file(path, &c, NULL);
		cr_assert_gt(c.in + c.out, 10, "%s kept its history", path);
	}
}

/*
 * A setuid program run inside a traced tree: the kernel makes it
 * non-dumpable, so its trace is root's. The history before the exec stays
 * the user's (renamed TID.1, state exec-root-only); the new file is root's.
 */
Test(hostile, setuid_exec_continues_in_a_root_only_file)
{
	char *argv[] = { "/bin/sh", "-c", "exec /usr/bin/chfn --help >/dev/null 2>&1", NULL };
	char line[64], before[300], after[300];
	struct rk_session_stat st;
	struct rk_bufile *bf;
	struct stat sb;
	int go, ready, status;
	pid_t sh, rk;

	if (stat("/usr/bin/chfn", &sb) || !(sb.st_mode & S_ISUID) || sb.st_uid != 0)
		cr_skip_test("no setuid-root /usr/bin/chfn here");
	cr_assert_eq(chmod(root, 0755), 0);
	sh = spawn_nobody(argv, &go);
	rk = start_recorder_on(sh, "x", &ready, NULL);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
	cr_assert_eq(write(go, "g", 1), 1);
	close(go);
	status = wait_for(sh, 30000);
	cr_assert(WIFEXITED(status), "chfn status %d", status);
	status = wait_for(rk, 30000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(ready);
	read_stat("x", &st);
	cr_assert_eq(st.exec_rotated, 1,
		     "exec_rotated %llu, creds_rotated %llu, creds_changes %llu",
		     (unsigned long long)st.exec_rotated, (unsigned long long)st.creds_rotated,
		     (unsigned long long)st.creds_changes);

	snprintf(after, sizeof(after), "%s/x/sched/%d", root, sh);
	snprintf(before, sizeof(before), "%s/x/sched/%d.1", root, sh);
	cr_assert_eq(stat(after, &sb), 0);
	cr_assert_eq(sb.st_uid, 0);
	cr_assert_eq(sb.st_mode & 0777, 0600, "after the exec: root only, mode %o",
		     sb.st_mode & 0777);
	cr_assert_neq(as_nobody(can_open, after), 0, "nobody can read the setuid program's trace");
	bf = rk_bufile__open(after, NULL);
	cr_assert_not_null(bf);
	cr_assert_str_eq(bf->ident->comm, "chfn");
	rk_bufile__free(bf);

	cr_assert_eq(stat(before, &sb), 0, "the history before the exec is kept");
	cr_assert_eq(as_nobody(can_open, before), 0, "the user reads its own shell's history");
	bf = rk_bufile__open(before, NULL);
	cr_assert_not_null(bf);
	cr_assert_eq(bf->ident->state, RK_THREAD_EXECED);
	rk_bufile__free(bf);
}

/*
 * Credentials and dumpability change without an exec, as the kernel's rule
 * for /proc/PID has it: a root thread drops to nobody (setresuid: not
 * dumpable, so still root's), makes itself dumpable (nobody's from then
 * on, in a new file), then not dumpable again (root's, in a third). Each
 * part of its history keeps the readers it had when it was recorded.
 */
static void credential_changes(const char *tid_maps, const char *tick_ms)
{
	char *argv[] = {
		(char *)rk_bin,	 "record", "--root",	     root, "--session", "c", "--tick-ms",
		(char *)tick_ms, "--",	   (char *)workload, "-D", "65534",	NULL
	};
	char p0[300], p1[300], p2[300], *out, *err;
	struct rk_session_stat st;
	struct rk_bufile *bf;
	unsigned int tid;
	int status;

	cr_assert_eq(chmod(root, 0755), 0);
	if (tid_maps)
		setenv("RINGKEEPER_TEST_TID_MAPS", tid_maps, 1);
	status = run_rk(argv, &out, &err);
	unsetenv("RINGKEEPER_TEST_TID_MAPS");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s\n%s", out, err);
	cr_assert_not_null(strstr(out, "step 3"), "%s", out);
	cr_assert_eq(sscanf(out, "main %u", &tid), 1, "%s", out);
	/* The maps cover fewer tids: this one takes the paths of a tid beyond them. */
	if (tid_maps)
		cr_assert_geq(tid, strtoul(tid_maps, NULL, 10), "tid %u is in the maps", tid);
	read_stat("c", &st);
	cr_assert_geq(st.creds_changes, 3, "setresuid, dumpable 1, dumpable 0: %llu seen",
		      (unsigned long long)st.creds_changes);
	cr_assert_eq(st.creds_rotated, 2, "root -> nobody -> root: %llu new files",
		     (unsigned long long)st.creds_rotated);
	/* Oldest first: TID.1 (root's, then setresuid), TID.2 (dumpable), TID (not again). */
	snprintf(p0, sizeof(p0), "%s/c/sched/%u.1", root, tid);
	snprintf(p1, sizeof(p1), "%s/c/sched/%u.2", root, tid);
	snprintf(p2, sizeof(p2), "%s/c/sched/%u", root, tid);
	cr_assert_neq(as_nobody(can_open, p0), 0, "nobody reads what root recorded");
	cr_assert_eq(as_nobody(can_open, p1), 0, "nobody reads its dumpable part");
	cr_assert_neq(as_nobody(can_open, p2), 0, "nobody reads its non-dumpable part");
	bf = rk_bufile__open(p0, NULL);
	cr_assert_not_null(bf);
	cr_assert_eq(bf->ident->state, RK_THREAD_CREDS);
	rk_bufile__free(bf);
	bf = rk_bufile__open(p1, NULL);
	cr_assert_not_null(bf);
	cr_assert_eq(bf->ident->state, RK_THREAD_CREDS);
	rk_bufile__free(bf);
	bf = rk_bufile__open(p2, NULL);
	cr_assert_not_null(bf);
	cr_assert_eq(bf->ident->state, RK_THREAD_EXITED);
	rk_bufile__free(bf);
	free(out);
	free(err);
}

/* An MMAP2 record of a file whose path has "workload" in it: count it. */
static int count_workload_mmap(const struct perf_event_header *h, void *ctx)
{
	/* pid, tid, addr, len, pgoff, maj, min, ino, ino_gen, prot, flags, then the path */
	const size_t off = sizeof(*h) + 8 + 24 + 24 + 8;

	if (h->type == PERF_RECORD_MMAP2 && h->size > off &&
	    strstr((const char *)h + off, "workload"))
		++*(long *)ctx;
	return 0;
}

/*
 * A process that starts as root and becomes a user's (setresuid, then
 * dumpable) has, for that part, a sideband file its user may read, which
 * starts with its mappings then: its samples resolve for that user. The
 * root part's and the part after it turned non-dumpable again stay root's.
 * The sideband once stayed root's from the start to the end.
 */
Test(hostile, a_process_that_becomes_a_user_s_gets_a_sideband_that_user_reads)
{
	char *argv[] = { (char *)rk_bin, "record", "--root",	     root, "--session", "sb", "-e",
			 "cpu-clock",	 "--",	   (char *)workload, "-D", "65534",	NULL };
	char p0[300], p1[300], p2[300], *out, *err;
	struct rk_bufile *bf;
	unsigned int pid;
	long mmaps = 0;
	int status;

	cr_assert_eq(chmod(root, 0755), 0);
	status = run_rk(argv, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s\n%s", out, err);
	cr_assert_eq(sscanf(out, "main %u", &pid), 1, "%s", out);
	snprintf(p0, sizeof(p0), "%s/sb/sideband/%u.1", root, pid);
	snprintf(p1, sizeof(p1), "%s/sb/sideband/%u.2", root, pid);
	snprintf(p2, sizeof(p2), "%s/sb/sideband/%u", root, pid);
	cr_assert_neq(as_nobody(can_open, p0), 0, "nobody reads the root part's sideband");
	cr_assert_eq(as_nobody(can_open, p1), 0, "nobody cannot read its own part's sideband");
	cr_assert_neq(as_nobody(can_open, p2), 0, "nobody reads the non-dumpable part's sideband");
	bf = rk_bufile__open(p1, NULL);
	cr_assert_not_null(bf, "no sideband %s", p1);
	cr_assert_eq(bf->ident->state, RK_THREAD_CREDS);
	rk_bufile__for_each(bf, count_workload_mmap, &mmaps);
	rk_bufile__free(bf);
	cr_assert_gt(mmaps, 0, "the user's sideband does not start with the program's mappings");
	free(out);
	free(err);
}

Test(hostile, credential_changes_without_exec_follow_the_proc_rule)
{
	credential_changes(NULL, "5");
}

/*
 * The same with per-tid maps of 300 tids (as after pid_max was raised):
 * "traced" from pmu_info, credentials from task-local storage, pins at the
 * drain tick.
 */
Test(hostile, credential_changes_beyond_the_per_tid_maps)
{
	credential_changes("300", "5");
}

/*
 * The loader decides a change's readers from what the task is when it
 * reads it: a credentials signal wakes it at once, whatever its tick
 * (--tick-ms; the workload's steps are 30 ms apart). With a 200 ms tick
 * and no wakeup, none of the two new files was made.
 */
Test(hostile, credential_changes_are_seen_at_once_whatever_the_tick)
{
	credential_changes(NULL, "200");
}

/*
 * Kernel addresses (an event that does not exclude the kernel) reach the
 * traced user only where perf_event_paranoid lets an unprivileged user
 * record them (<= 1); the sched history, which has none, always does.
 */
Test(hostile, kernel_addresses_follow_perf_event_paranoid)
{
	char *wl_argv[] = { (char *)workload, "-t", "2", "-i", "20", NULL };
	const char *const extra_k[] = { "-e", "cpu-clock", "-g", NULL };
	const char *const extra_u[] = { "-e", "cpu-clock", "-g", "--exclude-kernel", NULL };
	const char *const *extra[] = { extra_k, extra_u };
	int paranoid = rk_access_paranoid(), round;

	cr_assert_eq(chmod(root, 0755), 0);
	for (round = 0; round < 2; round++) {
		char session[8], dir[256], path[300], line[64];
		unsigned int tids[8];
		int go, ready, status, want;
		size_t n, i;
		pid_t wl, rk;

		snprintf(session, sizeof(session), "k%d", round);
		wl = spawn_nobody(wl_argv, &go);
		rk = start_recorder_on(wl, session, &ready, extra[round]);
		cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
		cr_assert_eq(write(go, "g", 1), 1);
		close(go);
		status = wait_for(wl, 30000);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		status = wait_for(rk, 30000);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		close(ready);
		snprintf(dir, sizeof(dir), "%s/%s/cpu-clock", root, session);
		n = files_in(dir, tids, 8);
		cr_assert_geq(n, 1);
		/* With the kernel excluded, always; otherwise only as perf would allow. */
		want = round == 1 || paranoid <= 1;
		for (i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/%u", dir, tids[i]);
			cr_assert_eq(as_nobody(can_open, path) == 0, want,
				     "%s: readable by the traced user %s, perf_event_paranoid %d",
				     path, want ? "expected" : "not expected", paranoid);
			snprintf(path, sizeof(path), "%s/%s/sched/%u", root, session, tids[i]);
			cr_assert_eq(as_nobody(can_open, path), 0, "%s: sched history", path);
		}
		/*
		 * The process's sideband (its mmaps, comm: what the user's own samples
		 * are resolved with) is the traced user's too, not root's alone.
		 */
		snprintf(path, sizeof(path), "%s/%s/sideband/%d", root, session, wl);
		cr_assert_eq(as_nobody(can_open, path), 0, "%s: not readable by the traced user",
			     path);
	}
}

/* Readers open regular files only: a FIFO in place of a buffer never hangs them. */
Test(hostile, readers_refuse_fifos_and_devices)
{
	char *rec[] = {
		(char *)rk_bin, "record",	  "--root", root, "--session", "f", "-m", "16K",
		"--",		(char *)workload, "-t",	    "1",  "-i",	       "2", NULL
	};
	char dir[256], path[300], tid[16], out[300];
	char *show[] = { (char *)rk_bin, "show", "--root", root, "--session", "f", tid, NULL };
	char *ls[] = { (char *)rk_bin, "ls", "--root", root, "f", NULL };
	char *exp[] = { (char *)rk_bin, "export",    "--root", root, "--session", "f",
			"-o",		"/dev/full", NULL };
	char *exp2[] = {
		(char *)rk_bin, "export", "--root", root, "--session", "f", "-o", out, NULL
	};
	unsigned int tids[8];
	struct stat sb;
	uint64_t t0;
	char *err;
	int st;

	st = run_rk(rec, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(dir, sizeof(dir), "%s/f/sched", root);
	cr_assert_geq(files_in(dir, tids, 8), 1);
	snprintf(tid, sizeof(tid), "%u", tids[0]);
	snprintf(path, sizeof(path), "%s/%u", dir, tids[0]);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(mkfifo(path, 0644), 0);
	t0 = now_ms();
	st = run_rk(show, NULL, &err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "show of a FIFO succeeded: %s", err);
	cr_assert_not_null(strstr(err, "not a regular file"), "%s", err);
	free(err);
	st = run_rk(ls, NULL, NULL);
	cr_assert(WIFEXITED(st));
	cr_assert_lt(now_ms() - t0, 20000, "a reader blocked on the FIFO");

	/* export never replaces a device with its regular file. */
	st = run_rk(exp, NULL, &err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "%s", err);
	cr_assert_not_null(strstr(err, "not a regular file"), "%s", err);
	free(err);
	cr_assert_eq(stat("/dev/full", &sb), 0);
	cr_assert(S_ISCHR(sb.st_mode), "/dev/full was replaced");

	/* Nor writes through a symlink planted at its temporary name. */
	snprintf(out, sizeof(out), "%s/out.data", root);
	snprintf(path, sizeof(path), "%s/victim", root);
	cr_assert_eq(close(open(path, O_CREAT | O_WRONLY, 0644)), 0);
	cr_assert_eq(truncate(path, 4096), 0);
	{
		char lnk[340];
		int i;

		/* The temporary name has the exporter's pid: plant a range of them. */
		for (i = 0; i < 64; i++) {
			snprintf(lnk, sizeof(lnk), "%s.tmp.%d", out, (int)getpid() + i);
			cr_assert_eq(symlink(path, lnk), 0);
		}
	}
	run_rk(exp2, NULL, NULL);
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_size, 4096, "export truncated the symlink's target");
}

/* Refusals with a reason: a --root whose parent does not exist, a kernel thread. */
Test(hostile, bad_root_and_kernel_threads_are_refused)
{
	char deep[128];
	char *a[] = { (char *)rk_bin, "record", "--root", deep, "--", "/bin/true", NULL };
	char *k[] = { (char *)rk_bin, "record", "--root", root, "-p", "2", NULL };
	struct stat sb;

	snprintf(deep, sizeof(deep), "%s/nonexistent/deep/dir", root);
	expect_error(a, 1, "its parent does not exist");
	snprintf(deep, sizeof(deep), "%s/nonexistent", root);
	cr_assert_neq(stat(deep, &sb), 0, "--root created a path of directories");
	expect_error(k, 1, "kernel thread");
}

/*
 * One traced user flipping PR_SET_DUMPABLE every 100 us for 3 s, next to a
 * busy neighbour process in the same session: each turn back to dumpable
 * waits twice as long as the one before (RK_REGRANT_GAP_NS), so the flips
 * cost a bounded number of new files, and the neighbour loses no switch.
 * Before the rate limit: a new file per flip, each move aside a search
 * through every earlier one, and signals dropped for everybody.
 */
Test(hostile, a_thread_flipping_dumpable_costs_bounded_files_and_its_neighbour_nothing)
{
	char cmd[600], path[300], *out, *err, *l;
	char *argv[] = { (char *)rk_bin, "record", "--root",  root, "--session", "f", "-m",
			 "64K",		 "--",	   "/bin/sh", "-c", cmd,	 NULL };
	struct rk_session_stat st;
	long flipped = 0, loosen = 0, ntids = 0;
	int status;

	/* Turns back to dumpable that fit in 4 s: the first, then after 10, 20, 40 ... ms. */
	while (10 * ((1L << loosen) - 1) <= 4000)
		loosen++;
	cr_assert_eq(chmod(root, 0755), 0);
	snprintf(cmd, sizeof(cmd), "%s -F 3000 & sleep 0.5; %s -t 16 -i 400 -s 500; wait", workload,
		 workload);
	status = run_rk(argv, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s\n%s", out, err);
	l = strstr(out, "flipped ");
	cr_assert(l && sscanf(l, "flipped %ld", &flipped) == 1, "%s", out);
	read_stat("f", &st);
	printf("%ld flips: %llu changes seen, %llu held, %llu new files; %llu signals, %llu "
	       "dropped; loader CPU %.2f s\n",
	       flipped, (unsigned long long)st.creds_changes, (unsigned long long)st.creds_held,
	       (unsigned long long)st.creds_rotated, (unsigned long long)st.bpf_signals,
	       (unsigned long long)st.bpf_drops, st.loader_cpu_ns / 1e9);
	cr_assert_gt(flipped, 1000, "the flipper ran: %s", out);
	cr_assert_gt(st.creds_held, 0, "no turn back to dumpable was held");
	cr_assert_leq(st.creds_rotated, (__u64)(2 * loosen + 2),
		      "%llu new files for %ld flips (at most %ld turns back in 4 s)",
		      (unsigned long long)st.creds_rotated, flipped, loosen);
	cr_assert_eq(st.bpf_drops, 0, "signals dropped");
	/* Every neighbour thread has every switch the kernel counted for it. */
	for (l = out; (l = strstr(l, "tid ")); l++) {
		struct check c;
		unsigned int tid;

		if ((l != out && l[-1] != '\n') || sscanf(l, "tid %u", &tid) != 1)
			continue;
		snprintf(path, sizeof(path), "%s/f/sched/%u", root, tid);
		check_file(path, &c, NULL);
		assert_switches_cover(&c, out, path);
		ntids++;
	}
	cr_assert_eq(ntids, 16, "neighbour threads checked: %ld\n%s", ntids, out);
	free(out);
	free(err);
}

/*
 * Scale: @n threads that exist before we attach, waking @iters times
 * @sleep_us apart (4 of them busy), lose no signal and no record, and each
 * has its file. @extra: options after the tests' own (-m 16K), NULL for
 * none; @sroot: the --root it names (NULL: the test's).
 */
static void fanout_run_with(const char *session, int n, int iters, int sleep_us,
			    const char *const extra[], const char *sroot)
{
	const char *fanout = getenv("RK_FANOUT");
	char nb[16], ib[16], sb[16], line[64];
	char *argv[] = { (char *)fanout, "-t", nb, "-i", ib, "-s", sb, NULL };
	int in[2], out[2], ready, status;
	struct rk_session_stat st;
	FILE *fo;
	pid_t f, rk;

	if (!fanout)
		cr_skip_test("RK_FANOUT not set: run through 'make integration'");
	snprintf(nb, sizeof(nb), "%d", n);
	snprintf(ib, sizeof(ib), "%d", iters);
	snprintf(sb, sizeof(sb), "%d", sleep_us);
	cr_assert_eq(pipe(in), 0);
	cr_assert_eq(pipe(out), 0);
	f = fork();
	cr_assert_geq(f, 0);
	if (!f) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execv(fanout, argv);
		_exit(126);
	}
	close(in[0]);
	close(out[1]);
	fo = fdopen(out[0], "r");
	cr_assert_not_null(fgets(line, sizeof(line), fo), "fanout did not start");
	cr_assert_str_eq(line, "ready\n");
	rk = start_recorder_on(f, session, &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 60000), 0);
	cr_assert_eq(write(in[1], "g", 1), 1);
	close(in[1]);
	status = wait_for(f, 120000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = wait_for(rk, 60000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(ready);
	fclose(fo);
	if (sroot) {
		char dir[300];

		snprintf(dir, sizeof(dir), "%s/%s", sroot, session);
		cr_assert_eq(rk_session_stat_read(dir, &st), 0, "no stat file in %s", dir);
	} else {
		read_stat(session, &st);
	}
	printf("%d threads x %d wakeups: %llu signals, %llu dropped, %llu records lost, %llu not "
	       "traced, %llu KiB counted in --max-shm (%llu MiB); loader CPU %.2f s\n",
	       n, iters, (unsigned long long)st.bpf_signals, (unsigned long long)st.bpf_drops,
	       (unsigned long long)st.lost, (unsigned long long)st.not_traced,
	       (unsigned long long)st.shm_bytes >> 10, (unsigned long long)st.max_shm >> 20,
	       st.loader_cpu_ns / 1e9);
	cr_assert_eq(st.threads, (__u64)n + 1);
	cr_assert_gt(st.bpf_signals, (__u64)n * (__u64)iters, "the threads ran");
	cr_assert_eq(st.bpf_drops, 0, "signals dropped");
	cr_assert_eq(st.lost, 0, "records lost");
	cr_assert_eq(st.files_broken + st.not_traced + st.file_errors + st.shm_withheld, 0);
}

static void fanout_run(const char *session, int n, int iters, int sleep_us)
{
	fanout_run_with(session, n, iters, sleep_us, NULL, NULL);
}

/* The tmpfs a test mounted: unmounted on every path. */
static char tmpfs_dir[128];

static void tmpfs_cleanup(void)
{
	if (tmpfs_dir[0] && umount2(tmpfs_dir, MNT_DETACH))
		fprintf(stderr, "cannot unmount %s: %s\n", tmpfs_dir, strerror(errno));
	tmpfs_dir[0] = '\0';
	rk_test_teardown();
}

/*
 * 8,192 threads at default sizes (-m 512K) under the default --max-shm of
 * a 4 GiB tmpfs (a quarter: 1 GiB): every one traced. A live file counts
 * the pages it can have filled (20 KiB for a quiet thread), not its size
 * (516 KiB): counted at their size, 2,032 were traced and the rest refused.
 */
Test(hostile, eight_thousand_threads_fit_under_the_default_max_shm, .fini = tmpfs_cleanup)
{
	char sroot[160];
	const char *extra[] = { "--root", sroot, "-m", "512K", NULL };

	snprintf(tmpfs_dir, sizeof(tmpfs_dir), "%s/tmpfs", root);
	cr_assert_eq(mkdir(tmpfs_dir, 0755), 0);
	if (mount("tmpfs", tmpfs_dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=4g,mode=0755")) {
		int err = errno;

		tmpfs_dir[0] = '\0';
		cr_skip_test("cannot mount a tmpfs for the test: %s", strerror(err));
	}
	snprintf(sroot, sizeof(sroot), "%s/rk", tmpfs_dir);
	fanout_run_with("s8192", 8192, 20, 1000, extra, sroot);
}

Test(hostile, thousands_of_threads_drop_nothing)
{
	fanout_run("s4096", 4096, 50, 1000);
}

Test(hostile, fifty_thousand_signals_a_second_drop_nothing)
{
	/* 512 threads waking every 20 ms: about 51,000 switch signals per second, for 2 s. */
	fanout_run("s512", 512, 100, 20000);
}

/*
 * The memory cgroup test's cgroup: under the memory controller of our own
 * cgroup (v1 here; v2 where its memory controller is enabled). Removed by
 * the test's .fini on every path, and by the next run if a crash left it.
 */
static char memcg_dir[512];

static int memcg_find(void)
{
	char line[512], rel[400] = "";
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d:memory:%399s", rel) == 1)
			break;
	fclose(f);
	if (*rel) {
		snprintf(memcg_dir, sizeof(memcg_dir), "/sys/fs/cgroup/memory%s/rk-itest-memcg",
			 strcmp(rel, "/") ? rel : "");
		return 1;
	}
	return 0;
}

static void memcg_remove(void)
{
	char path[600], pid[32];
	FILE *f;

	if (!*memcg_dir)
		return;
	snprintf(path, sizeof(path), "%s/cgroup.procs", memcg_dir);
	f = fopen(path, "re");
	if (f) {
		while (fgets(pid, sizeof(pid), f))
			kill(atoi(pid), SIGKILL);
		fclose(f);
	}
	for (int i = 0; i < 100 && rmdir(memcg_dir) && errno == EBUSY; i++)
		usleep(20000);
}

/* Whatever happened in the test (Criterion runs .fini after a failed assertion too). */
static void memcg_cleanup(void)
{
	memcg_remove();
	rk_test_teardown();
}

/*
 * Our memory cgroup (memcg_dir) made afresh with a limit of @bytes: the
 * test is skipped, said, where there is no v1 memory controller.
 */
static void memcg_make(long bytes)
{
	char lim[600];
	FILE *f;

	if (!memcg_find())
		cr_skip_test("no cgroup v1 memory controller here (cgroup v2 memory: not "
			     "implemented in this test)");
	memcg_remove(); /* left by a run that crashed */
	if (mkdir(memcg_dir, 0755))
		cr_skip_test("cannot create %s: %s", memcg_dir, strerror(errno));
	snprintf(lim, sizeof(lim), "%s/memory.limit_in_bytes", memcg_dir);
	f = fopen(lim, "we");
	cr_assert_not_null(f);
	fprintf(f, "%ld\n", bytes);
	cr_assert_eq(fclose(f), 0);
}

/*
 * record --trigger killed, an OOM kill: a traced process (tail of
 * /dev/zero, which buffers without end) in a memory cgroup of 32 MiB is
 * killed by the kernel's SIGKILL; its snapshot says so (SI_KERNEL, the
 * OOM killer's way) and its history ends with the trigger and its final
 * switch-out. The recorder itself stays outside the cgroup.
 */
Test(hostile, an_oom_killed_process_leaves_a_snapshot, .fini = memcg_cleanup)
{
	char cmd[1200], snaps[200], *out = NULL, *err = NULL, *s;
	char *argv[] = { (char *)rk_bin, "record",    "--root",
			 root,		 "--session", "oom",
			 "--trigger",	 "killed",    "--snapshot-dir",
			 snaps,		 "--",	      "/bin/sh",
			 "-c",		 cmd,	      NULL };
	struct rk_session_stat st;

	memcg_make(32 << 20);
	snprintf(snaps, sizeof(snaps), "%s/snaps", root);
	snprintf(cmd, sizeof(cmd),
		 "sh -c 'echo $$ > %s/cgroup.procs && exec tail /dev/zero'; echo status $?",
		 memcg_dir);
	run_rk(argv, &out, &err);
	cr_assert_not_null(strstr(out, "status 137"), "tail was not SIGKILLed: %s\n%s", out, err);
	read_stat("oom", &st);
	cr_assert_eq(st.triggers, 1, "%llu triggers", (unsigned long long)st.triggers);
	cr_assert_eq(st.snapshots, 1, "%llu snapshots", (unsigned long long)st.snapshots);
	snprintf(cmd, sizeof(cmd), "cat %s/oom/snapshots", root);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "killed by signal 9 (SIGKILL), sent by the kernel (SI_KERNEL"),
			   "%s", s);
	/* No task sent it: the one the OOM killer ran in (here tail itself) is no sender. */
	cr_assert_null(strstr(s, "by pid"), "the reason names a sender:\n%s", s);
	free(s);
	snprintf(cmd, sizeof(cmd),
		 "for f in %s/oom/sched/[0-9]*; do %s show --root %s --session oom "
		 "${f##*/}; done 2>&1 | grep RINGKEEPER_TRIGGER",
		 root, rk_bin, root);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "trigger: killed by signal 9, sent by the kernel"), "%s", s);
	cr_assert_null(strstr(s, "sent by pid"), "the history names a sender:\n%s", s);
	free(s);
	free(out);
	free(err);
}

/*
 * Under a memory cgroup limit the recorder degrades instead of being the
 * OOM killer's victim: it takes the threads whose buffers fit, counts the
 * others, and finishes.
 */
Test(hostile, memory_cgroup_limit_degrades_instead_of_oom, .fini = memcg_cleanup)
{
	char procs[600], oom[600], go_s[8], line[256];
	/*
	 * The threads live at once (5 sleeps of 100 ms): an exited thread's
	 * file counts only the pages it holds, so short threads could all fit.
	 */
	char *argv[] = { (char *)rk_bin, "record",	   "--root", root,  "--session", "m",
			 "--",		 (char *)workload, "-t",     "200", "-i",	 "5",
			 "-s",		 "100000",	   NULL };
	struct rk_session_stat st;
	int p[2], status, kills = -1;
	pid_t c;
	FILE *f;

	/*
	 * 64 MiB: room for the recorder (also under ASan, whose shadow and
	 * quarantine take tens of MiB) and some threads' 516 KiB files, not for
	 * 201 of them (104 MB).
	 */
	memcg_make(64 << 20);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", memcg_dir);
	cr_assert_eq(pipe(p), 0);
	c = fork();
	cr_assert_geq(c, 0);
	if (!c) {
		char b;

		close(p[1]);
		if (read(p[0], &b, 1) != 1)
			_exit(124);
		execv(rk_bin, argv);
		_exit(126);
	}
	close(p[0]);
	f = fopen(procs, "we");
	cr_assert_not_null(f);
	fprintf(f, "%d\n", c);
	cr_assert_eq(fclose(f), 0, "cannot move the recorder into %s", memcg_dir);
	snprintf(go_s, sizeof(go_s), "g");
	cr_assert_eq(write(p[1], go_s, 1), 1);
	close(p[1]);
	status = wait_for(c, 60000);
	{
		char mu[600], fc[600], a[32] = "?", b[32] = "?";
		FILE *g;

		snprintf(mu, sizeof(mu), "%s/memory.max_usage_in_bytes", memcg_dir);
		snprintf(fc, sizeof(fc), "%s/memory.failcnt", memcg_dir);
		if ((g = fopen(mu, "re"))) {
			if (!fgets(a, sizeof(a), g))
				a[0] = '\0';
			fclose(g);
		}
		if ((g = fopen(fc, "re"))) {
			if (!fgets(b, sizeof(b), g))
				b[0] = '\0';
			fclose(g);
		}
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "the recorder did not finish: status 0x%x; cgroup peak %s failures %s",
			  status, a, b);
	}
	snprintf(oom, sizeof(oom), "%s/memory.oom_control", memcg_dir);
	f = fopen(oom, "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		sscanf(line, "oom_kill %d", &kills);
	fclose(f);
	cr_assert_eq(kills, 0, "the OOM killer ran in the recorder's cgroup");
	read_stat("m", &st);
	printf("memory cgroup of 64 MiB: %llu threads traced, %llu not traced for it\n",
	       (unsigned long long)st.threads, (unsigned long long)st.mem_refused);
	cr_assert_gt(st.threads, 0);
	cr_assert_gt(st.mem_refused, 0, "201 threads' buffers cannot fit in 64 MiB");
	cr_assert_eq(st.threads + st.not_traced, 201);
}

/* record -- CMD ends like a shell: CMD's status, 128 + signal, 127 / 126 (perf does the same). */
Test(hostile, record_returns_the_commands_status)
{
	struct {
		const char *cmd;
		int code;
		const char *says;
	} cases[] = {
		{ "exit 7", 7, "exited with status 7" },
		{ "kill -SEGV $$", 128 + SIGSEGV, "killed by signal 11" },
		{ "exit 0", 0, "exited with status 0" },
	};
	char notexec[128];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = {
			(char *)rk_bin,	      "record", "--root", root, "--", "/bin/sh", "-c",
			(char *)cases[i].cmd, NULL
		};

		expect_error(argv, cases[i].code, cases[i].says);
	}
	{
		char *argv[] = { (char *)rk_bin, "record",	     "--root", root,
				 "--",		 "/nonexistent/cmd", NULL };

		expect_error(argv, 127, "cannot run /nonexistent/cmd: No such file or directory");
	}
	snprintf(notexec, sizeof(notexec), "%s/notexec", root);
	cr_assert_eq(close(open(notexec, O_CREAT | O_WRONLY, 0644)), 0);
	{
		char *argv[] = { (char *)rk_bin, "record", "--root", root, "--", notexec, NULL };

		expect_error(argv, 126, "Permission denied");
	}
}

/*
 * --wakeups, a user's thread woken by root's task: in the file that user
 * reads, the waker is "another user's task" (no pid, no tid) at
 * perf_event_paranoid > -1; a wakeup by the user's own task names it. The
 * root waker's ids were written for the user to read.
 */
Test(hostile, wakeups_name_another_user_s_task_only_as_perf_would)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "wk",
			 "--wakeups",
			 "--",
			 "/bin/sh",
			 "-c",
			 "(sleep 0.2; echo x) | setpriv --reuid=65534 --regid=65534 --clear-groups "
			 "/bin/sh -c 'read a; echo reader $$'",
			 NULL };
	char cmd[600], *out, *err, *l, *s;
	unsigned int reader;
	int status, hidden = 0, named_other = 0;

	if (rk_access_paranoid() <= -1)
		cr_skip_test("perf_event_paranoid is -1: every user may see every waker");
	cr_assert_eq(chmod(root, 0755), 0);
	status = run_rk(argv, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s\n%s", out, err);
	l = strstr(out, "reader ");
	cr_assert(l && sscanf(l, "reader %u", &reader) == 1, "%s", out);
	snprintf(cmd, sizeof(cmd), "%s show --root %s --session wk --json %u", rk_bin, root,
		 reader);
	s = sh_out(cmd, NULL);
	for (l = s; (l = strstr(l, "\"type\":\"RINGKEEPER_WAKEUP\"")); l++) {
		char *e = strchr(l, '\n');
		unsigned int pid = 0;
		char *w = strstr(l, "\"waker_pid\":");

		if (e)
			*e = '\0';
		hidden += strstr(l, "\"waker_hidden\":true") != NULL;
		if (w && sscanf(w, "\"waker_pid\":%u", &pid) == 1 && pid && pid != reader)
			named_other++;
		if (e)
			*e = '\n';
	}
	cr_assert_gt(hidden, 0, "root's write woke the reader, and no waker is hidden:\n%s", s);
	cr_assert_eq(named_other, 0, "another user's task is named to the reader:\n%s", s);
	free(s);
	free(out);
	free(err);
}
