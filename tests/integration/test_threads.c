// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_threads.c - the recorder's books of threads against the kernel's:
 * a thread whose end was dropped is ended while recording, and a tid that
 * was refused is traced when a new thread is born with it and there is room.
 */
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

TestSuite(threads, .init = rk_test_setup, .fini = rk_test_teardown);

struct ends {
	unsigned int files, live, unseen, exited;
	char unseen_path[512]; /* one file that says its end was unseen */
};

/* Every sched file of @dir (incarnations <tid>.<n> included): their states. */
static void ends_in(const char *dir, struct ends *e)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	memset(e, 0, sizeof(*e));
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		const char *msg = NULL;
		char path[512];
		struct rk_bufile *bf;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		bf = rk_bufile__open(path, &msg);
		cr_assert_not_null(bf, "%s: %s", path, msg ? msg : strerror(errno));
		e->files++;
		e->live += bf->ident->state == RK_THREAD_LIVE;
		e->exited += bf->ident->state == RK_THREAD_EXITED;
		if (bf->ident->flags & RK_IDENT_END_UNSEEN) {
			e->unseen++;
			snprintf(e->unseen_path, sizeof(e->unseen_path), "%s", path);
		}
		rk_bufile__free(bf);
	}
	closedir(d);
}

static void wait_for_line(const char *path, const char *needle, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (!strstr(slurp(path), needle)) {
		cr_assert_lt(now_ms(), end, "no \"%s\" in %s: %s", needle, path, slurp(path));
		usleep(10000);
	}
}

/*
 * The recorder stopped (SIGSTOP: a stalled loader) while 2,000 threads
 * churn: its rings fill and the final switch-outs of threads whose forks
 * got in are dropped. Once it runs again, those threads are ended while
 * it still records (not at its end): only the main thread stays live, and
 * each one ended so says its end was not seen.
 */
Test(threads, a_thread_whose_end_was_dropped_is_ended_while_recording, .timeout = 120)
{
	static const char *const args[] = { "-C", "2000", NULL };
	char wo[128], line[64], dir[256];
	struct rk_session_stat st;
	int go, ready, status;
	struct ends e;
	uint64_t end;
	pid_t wl, rk;

	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	wl = spawn_gated(args, &go);
	{
		/* The smallest rings: a stalled loader drops within a few hundred threads. */
		const char *const extra[] = { "--ringbuf-size", "16K", NULL };

		rk = start_recorder_on(wl, "u", &ready, extra);
	}
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
	cr_assert_eq(kill(rk, SIGSTOP), 0);
	cr_assert_eq(write(go, "g", 1), 1);
	wait_for_line(wo, "churned 2000", 60000);
	cr_assert_eq(kill(rk, SIGCONT), 0);
	/* Bounded: two reconciliations (1 s apart) and the intake between them. */
	snprintf(dir, sizeof(dir), "%s/u", root);
	end = now_ms() + 15000;
	for (;;) {
		cr_assert_eq(rk_session_stat_read(dir, &st), 0);
		if (st.threads_live == 1 && st.threads_reconciled)
			break;
		cr_assert_lt(
			now_ms(), end,
			"%llu threads still live of %llu, %llu reconciled, %llu signals dropped",
			(unsigned long long)st.threads_live, (unsigned long long)st.threads,
			(unsigned long long)st.threads_reconciled,
			(unsigned long long)st.bpf_drops);
		usleep(20000);
	}
	/*
	 * Settled: no signal of the backlog left to make a thread (a late fork
	 * handed out after the last look), two reconciliations later.
	 */
	usleep(2500000);
	snprintf(dir, sizeof(dir), "%s/u", root);
	cr_assert_eq(rk_session_stat_read(dir, &st), 0);
	cr_assert_eq(st.threads_live, 1, "%llu live", (unsigned long long)st.threads_live);
	snprintf(dir, sizeof(dir), "%s/u/sched", root);
	ends_in(dir, &e);
	printf("stalled loader: %llu signals dropped, %u files, %llu threads ended unseen, "
	       "%u live\n",
	       (unsigned long long)st.bpf_drops, e.files, (unsigned long long)st.threads_reconciled,
	       e.live);
	cr_assert_gt(st.bpf_drops, 0, "the stalled loader's rings never filled");
	/* While it records: the main thread alone is live, in the books and in the files. */
	cr_assert_eq(e.live, 1);
	cr_assert_eq(e.unseen, st.threads_reconciled, "each thread ended unseen says so");
	cr_assert_eq(e.exited, e.files - 1);
	{
		char *argv[] = { (char *)rk_bin, "show", e.unseen_path, NULL }, *out, *err;

		cr_assert_eq(run_rk(argv, &out, &err), 0, "%s", err);
		cr_assert_not_null(strstr(out, "end unseen"), "%s", out);
		free(out);
		free(err);
	}
	cr_assert_eq(write(go, "x", 1), 1);
	close(go);
	status = wait_for(wl, 30000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = wait_for(rk, 30000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(ready);
}

/* A pid that no task has now, from the top of the pid space (the test's reborn child). */
static int free_pid(void)
{
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
	int max = 32768, pid;
	char path[64];

	if (f) {
		if (fscanf(f, "%d", &max) != 1)
			max = 32768;
		fclose(f);
	}
	for (pid = max - 100; pid > max - 2000; pid--) {
		snprintf(path, sizeof(path), "/proc/%d", pid);
		if (access(path, F_OK))
			return pid;
	}
	cr_assert_fail("no free pid near pid_max %d", max);
	return -1;
}

/*
 * A full tmpfs refuses a thread, whose tid is then born again (as tids are,
 * pid_max being 32,768 here) once there is room: the new thread is traced.
 * Before, a refused tid kept a marker for the recorder's life and every
 * later thread with it was dropped unseen, so a recorder that met a full
 * tmpfs once traced ever fewer threads after.
 */
Test(threads, a_tid_refused_on_a_full_tmpfs_is_traced_when_born_again_with_room, .timeout = 120)
{
	char mnt[256], filler[300], wo[128], we[128], line[64], path[400], tidbuf[16];
	const char *args[] = { "-C", "20", "-c", "2", "-Y", tidbuf, NULL };
	int go, ready, status, fd, pid = free_pid();
	struct rk_session_stat st;
	static char page[4096];
	pid_t wl, rk;

	/* Outside the scratch root, which is removed before the journal is played. */
	snprintf(mnt, sizeof(mnt), "/run/rk-itest-tmpfs-XXXXXX");
	cr_assert_not_null(mkdtemp(mnt));
	unmount_at_restore(mnt); /* unmounted and removed on every path */
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=2m,mode=0755"))
		cr_skip_test("cannot mount a small tmpfs here: %s", strerror(errno));
	snprintf(tidbuf, sizeof(tidbuf), "%d", pid);
	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	wl = spawn_gated(args, &go);
	{
		const char *const extra[] = { "--root", mnt, "--max-shm", "1G", NULL };

		rk = start_recorder_on(wl, "t", &ready, extra);
	}
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
	/* Full: the session's files are there, no page more. */
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	fd = open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	while (write(fd, page, sizeof(page)) == sizeof(page))
		;
	close(fd);
	cr_assert_eq(write(go, "1", 1), 1);
	wait_for_line(wo, "churned 20", 30000);
	usleep(200000); /* the refusals handed out (the loop's tick is 5 ms) */
	snprintf(path, sizeof(path), "%s/t/sched/%d", mnt, pid);
	cr_assert_neq(access(path, F_OK), 0, "pid %d traced on a full tmpfs", pid);
	cr_assert_eq(unlink(filler), 0);
	cr_assert_eq(write(go, "2", 1), 1);
	{
		uint64_t end = now_ms() + 30000;

		while (strstr(strstr(slurp(wo), "churned 20") + 1, "churned 20") == NULL) {
			cr_assert_lt(now_ms(), end, "round 2 did not finish: %s", slurp(we));
			usleep(10000);
		}
	}
	cr_assert_eq(write(go, "x", 1), 1);
	close(go);
	status = wait_for(wl, 30000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", slurp(we));
	status = wait_for(rk, 30000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(ready);
	{
		char d[300];

		snprintf(d, sizeof(d), "%s/t", mnt);
		cr_assert_eq(rk_session_stat_read(d, &st), 0);
	}
	printf("full tmpfs, then room: %llu threads traced, %llu refused; pid %d born twice\n",
	       (unsigned long long)st.threads, (unsigned long long)st.not_traced, pid);
	cr_assert_geq(st.not_traced, 21, "round 1 (the child and 20 threads) refused");
	cr_assert_eq(access(path, F_OK), 0, "pid %d, born again with room, has no file", pid);
	cr_assert_geq(st.threads, 1 + 21, "round 2 traced: the main thread, the child, 20 threads");
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
}
