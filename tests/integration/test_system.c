// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Always on: -a (every user-space thread), --cgroup (a cgroup v2 subtree,
 * moves in and out), retention (--max-shm, --keep-exited) and the systemd
 * unit. The cgroup made here is removed on every path (suite fini).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bufile.h"
#include "session.h"
#include "helpers.h"
#include "util.h"

static char cg[PATH_MAX], cg_parent[PATH_MAX];

/* Kill what is left in our cgroup, then remove it: on every path, failures included. */
static void cg_remove(void)
{
	char path[PATH_MAX + 32];
	int i;

	if (!cg[0])
		return;
	/* A test's nested cgroup first (none: rmdir fails, harmless). */
	snprintf(path, sizeof(path), "%s/sub", cg);
	for (i = 0; i < 50 && rmdir(path) && errno == EBUSY; i++) {
		char procs[PATH_MAX + 48];
		FILE *f;
		int pid;

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
		f = fopen(procs, "re");
		while (f && fscanf(f, "%d", &pid) == 1)
			kill(pid, SIGKILL);
		if (f)
			fclose(f);
		usleep(20000);
	}
	snprintf(path, sizeof(path), "%s/cgroup.kill", cg);
	for (i = 0; i < 50 && rmdir(cg) && errno == EBUSY; i++) {
		FILE *f;
		int pid;

		/* No cgroup.kill before 5.14: kill the members one by one. */
		snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
		f = fopen(path, "re");
		while (f && fscanf(f, "%d", &pid) == 1)
			kill(pid, SIGKILL);
		if (f)
			fclose(f);
		usleep(20000);
	}
	if (access(cg, F_OK) == 0)
		fprintf(stderr, "cannot remove cgroup %s: %s\n", cg, strerror(errno));
	cg[0] = '\0';
}

static void sys_teardown(void)
{
	cg_remove();
	rk_test_teardown();
}

TestSuite(system, .init = rk_test_setup, .fini = sys_teardown, .timeout = 120);

/* Make our cgroup under the cgroup2 mount; skip if there is none. */
static void cg_make(void)
{
	char line[4096], dev[256], dir[PATH_MAX], type[64];
	FILE *f = fopen("/proc/self/mounts", "re");

	cr_assert_not_null(f);
	cg_parent[0] = '\0';
	while (!cg_parent[0] && fgets(line, sizeof(line), f))
		if (sscanf(line, "%255s %4095s %63s", dev, dir, type) == 3 &&
		    !strcmp(type, "cgroup2"))
			snprintf(cg_parent, sizeof(cg_parent), "%s", dir);
	fclose(f);
	if (!cg_parent[0])
		cr_skip_test("no cgroup2 file system mounted");
	snprintf(cg, sizeof(cg), "%s/rk-itest-%d", cg_parent, getpid());
	cr_assert_eq(mkdir(cg, 0755), 0, "mkdir %s: %s", cg, strerror(errno));
}

static void cg_move(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 32], buf[16];
	int fd, n;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	n = snprintf(buf, sizeof(buf), "%d", pid);
	cr_assert_eq(write(fd, buf, (size_t)n), n, "move %d to %s: %s", pid, dir, strerror(errno));
	close(fd);
}

/* Wait (up to 20 s: a TCG guest is slow) until @pid is a member of @dir. */
static void cg_wait_member(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 32];
	uint64_t end = now_ms() + 20000;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	for (;;) {
		FILE *f = fopen(path, "re");
		int p, found = 0;

		while (f && fscanf(f, "%d", &p) == 1)
			found |= p == pid;
		if (f)
			fclose(f);
		if (found)
			return;
		cr_assert_lt(now_ms(), end, "pid %d never joined %s", pid, dir);
		usleep(10000);
	}
}

static int has_file(const char *session, unsigned int tid)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s/sched/%u", root, session, tid);
	return access(path, F_OK) == 0;
}

static __u32 file_state(const char *session, unsigned int tid)
{
	char path[256];
	struct rk_bufile *bf;
	__u32 st;

	snprintf(path, sizeof(path), "%s/%s/sched/%u", root, session, tid);
	bf = rk_bufile__open(path, NULL);
	cr_assert_not_null(bf, "%s does not open", path);
	st = bf->ident->state;
	rk_bufile__free(bf);
	return st;
}

/* Does the thread's file begin with its FORK record (traced from birth)? */
static int first_is_fork(const struct perf_event_header *h, void *ctx)
{
	int *first = ctx;

	if (*first < 0)
		*first = h->type == PERF_RECORD_FORK;
	return 1;
}

static int born_traced(const char *session, unsigned int tid)
{
	char path[256];
	struct rk_bufile *bf;
	int first = -1;

	snprintf(path, sizeof(path), "%s/%s/sched/%u", root, session, tid);
	bf = rk_bufile__open(path, NULL);
	cr_assert_not_null(bf, "%s does not open", path);
	rk_bufile__for_each(bf, first_is_fork, &first);
	rk_bufile__free(bf);
	return first == 1;
}

/* Run `sh -c CMD` in the background, its output in ROOT/NAME.out. */
static pid_t sh_bg(const char *name, const char *cmd)
{
	char out[128], err[128];
	char *argv[] = { "/bin/sh", "-c", (char *)cmd, NULL };

	snprintf(out, sizeof(out), "%s/%s.out", root, name);
	snprintf(err, sizeof(err), "%s/%s.err", root, name);
	return spawn(argv, out, err, -1);
}

/* The workload tids printed in ROOT/NAME.out. */
static size_t tids_of(const char *name, unsigned int *tids, size_t max)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s.out", root, name);
	return expected_tids(slurp(path), tids, max);
}

/* What the recorder started by start_recorder_on() said. */
static const char *rk_err_text(void)
{
	static char path[160];

	snprintf(path, sizeof(path), "%s/.rk.err", root);
	return slurp(path);
}

/*
 * The workload tids printed in ROOT/NAME.out (at least @min): each has a
 * file in SESSION (@traced), or none; @born: each file starts with its FORK.
 */
static void assert_tids(const char *session, const char *name, size_t min, int traced, int born)
{
	unsigned int tids[64];
	size_t n = tids_of(name, tids, 64), i;

	cr_assert_geq(n, min, "%s: %zu tids", name, n);
	for (i = 0; i < n; i++) {
		cr_assert_eq(has_file(session, tids[i]), traced, "%s: tid %u %s", name, tids[i],
			     traced ? "not traced" : "traced");
		if (born)
			cr_assert(born_traced(session, tids[i]),
				  "%s: tid %u not traced from birth (no FORK first)", name,
				  tids[i]);
	}
}

static void stop_recorder(pid_t rk)
{
	int st;

	kill(rk, SIGINT);
	st = wait_for(rk, 30000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "recorder: %s", rk_err_text());
}

/*
 * --cgroup: a process present at start is adopted; one started in the
 * cgroup is traced from birth; one moved in later is traced from its move
 * (its threads included); one outside is not; one that leaves is no longer
 * traced (its files say "left-cgroup").
 */
Test(system, cgroup_traces_what_is_inside_and_moves_in_not_what_stays_out)
{
	const char *extra[] = { "--cgroup", cg, NULL };
	char cmd[PATH_MAX * 2], line[64];
	struct rk_session_stat st;
	pid_t before, born, moved, outside, leaver, rk;
	int ready;

	cg_make();
	extra[1] = cg;
	/* Long enough to be there when tracing starts, even in a TCG guest. */
	snprintf(cmd, sizeof(cmd), "echo $$ > %s/cgroup.procs && exec %s -t 2 -i 400 -s 10000", cg,
		 workload);
	before = sh_bg("before", cmd);
	cg_wait_member(cg, before);
	usleep(100000); /* its threads running */
	rk = start_recorder_on(0, "cg", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 20000), 0,
		     "recorder not ready: %s", rk_err_text());
	/* Born inside: the shell joins, then forks the workload. */
	snprintf(cmd, sizeof(cmd), "echo $$ > %s/cgroup.procs && %s -t 2 -i 5", cg, workload);
	born = sh_bg("born", cmd);
	/* Moved in 100 ms after it started (its threads exist by then). */
	snprintf(cmd, sizeof(cmd), "exec %s -t 2 -i 60 -s 10000", workload);
	moved = sh_bg("moved", cmd);
	outside = sh_bg("outside", cmd);
	snprintf(cmd, sizeof(cmd), "echo $$ > %s/cgroup.procs && exec %s -t 1 -i 100 -s 10000", cg,
		 workload);
	leaver = sh_bg("leaver", cmd);
	usleep(100000);
	cg_move(cg, moved);
	cg_wait_member(cg, leaver);
	usleep(200000);
	cg_move(cg_parent, leaver);
	wait_for(before, 30000);
	wait_for(born, 30000);
	wait_for(moved, 30000);
	wait_for(outside, 30000);
	wait_for(leaver, 30000);
	stop_recorder(rk);
	read_stat("cg", &st);

	assert_tids("cg", "before", 3, 1, 0);
	assert_tids("cg", "born", 3, 1, 1);
	assert_tids("cg", "moved", 3, 1, 0);
	cr_assert_not(born_traced("cg", (unsigned int)moved),
		      "the moved process's file starts at its birth, before the move");
	assert_tids("cg", "outside", 3, 0, 0);
	cr_assert(has_file("cg", (unsigned int)leaver));
	{
		char aside[256];

		/* Its switches queued before it was untraced made no second file of it. */
		snprintf(aside, sizeof(aside), "%s/cg/sched/%d.1", root, leaver);
		cr_assert_neq(access(aside, F_OK), 0, "the process that left came back as %s",
			      aside);
	}
	cr_assert_eq(file_state("cg", (unsigned int)leaver), RK_THREAD_LEFT,
		     "the process that left: state %u", file_state("cg", (unsigned int)leaver));
	cr_assert_geq(st.cgroup_joined, 1);
	cr_assert_geq(st.cgroup_left, 1);
	printf("cgroup: %llu joined, %llu left, %llu adopted by BPF, %llu threads\n",
	       (unsigned long long)st.cgroup_joined, (unsigned long long)st.cgroup_left,
	       (unsigned long long)st.bpf_adopted, (unsigned long long)st.threads);
}

/* Wait (bounded) until @pid runs as @uid: its exec under setpriv is done. */
static void wait_uid(pid_t pid, unsigned int uid)
{
	uint64_t end = now_ms() + 20000;
	char path[64], line[256];

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	for (;;) {
		FILE *f = fopen(path, "re");
		unsigned int u = ~0u;

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "Uid: %u", &u) == 1)
				break;
		if (f)
			fclose(f);
		if (u == uid)
			return;
		cr_assert_lt(now_ms(), end, "pid %d never became uid %u", pid, uid);
		usleep(10000);
	}
}

/*
 * --cgroup: a process whose file was rotated (its reader changed: root ->
 * nobody, by setpriv and an exec) is still one traced for the cgroup only,
 * and leaving the cgroup ends its tracing in the new file too.
 */
Test(system, cgroup_leave_after_a_reader_change_ends_tracing)
{
	const char *extra[] = { "--cgroup", cg, NULL };
	char cmd[PATH_MAX * 2], line[64], aside[PATH_MAX];
	pid_t p, rk;
	int ready;

	cg_make();
	extra[1] = cg;
	rk = start_recorder_on(0, "cgrot", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 20000), 0,
		     "recorder not ready: %s", rk_err_text());
	snprintf(cmd, sizeof(cmd),
		 "echo $$ > %s/cgroup.procs && exec setpriv --reuid=65534 --regid=65534 "
		 "--clear-groups sleep 3",
		 cg);
	p = sh_bg("rot", cmd);
	wait_uid(p, 65534);
	usleep(300000); /* the loader's drain ticks are 5 ms */
	cg_move(cg_parent, p);
	usleep(300000);
	cr_assert_eq(file_state("cgrot", (unsigned int)p), RK_THREAD_LEFT,
		     "the rotated file after leaving: state %u",
		     file_state("cgrot", (unsigned int)p));
	snprintf(aside, sizeof(aside), "%s/cgrot/sched/%d.1", root, p);
	cr_assert_eq(access(aside, F_OK), 0, "no rotation happened (%s)", aside);
	wait_for(p, 30000);
	stop_recorder(rk);
}

/*
 * --cgroup, kill -9, --resume: what the dead recorder traced for the cgroup
 * is still so after the resume (the mark is in the file): leaving ends it.
 */
Test(system, cgroup_leave_after_a_resume_ends_tracing)
{
	const char *extra[] = { "--cgroup", cg, NULL };
	char cmd[PATH_MAX * 2], line[64], fd[16], o[128], e[128];
	int ready, rp[2], st;
	pid_t p, rk;

	cg_make();
	extra[1] = cg;
	rk = start_recorder_on(0, "cgres", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 20000), 0,
		     "recorder not ready: %s", rk_err_text());
	close(ready);
	snprintf(cmd, sizeof(cmd), "echo $$ > %s/cgroup.procs && exec sleep 4", cg);
	p = sh_bg("res", cmd);
	cg_wait_member(cg, p);
	usleep(300000);
	cr_assert(has_file("cgres", (unsigned int)p), "the process in the cgroup is not traced");
	kill(rk, SIGKILL);
	st = wait_for(rk, 10000);
	cr_assert(WIFSIGNALED(st));
	cr_assert_eq(pipe(rp), 0);
	snprintf(fd, sizeof(fd), "%d", rp[1]);
	snprintf(o, sizeof(o), "%s/.rk.out", root);
	snprintf(e, sizeof(e), "%s/.rk.err", root);
	{
		char *argv[] = { (char *)rk_bin, "record",     "--root", root, "--resume",
				 "cgres",	 "--ready-fd", fd,	 NULL };

		rk = spawn(argv, o, e, rp[1]);
	}
	close(rp[1]);
	cr_assert_eq(read_line_within(rp[0], line, sizeof(line), 20000), 0,
		     "resumed recorder not ready: %s", rk_err_text());
	close(rp[0]);
	cg_move(cg_parent, p);
	usleep(300000);
	cr_assert_eq(file_state("cgres", (unsigned int)p), RK_THREAD_LEFT,
		     "after the resume and the move: state %u",
		     file_state("cgres", (unsigned int)p));
	wait_for(p, 30000);
	stop_recorder(rk);
}

/* -a: a process started after the recorder is traced; kernel threads and the recorder are not. */
Test(system, all_traces_processes_born_later_not_kthreads_nor_itself)
{
	const char *extra[] = { "-a", NULL };
	char cmd[PATH_MAX], line[64];
	struct rk_session_stat st;
	pid_t w, rk;
	int ready;

	rk = start_recorder_on(0, "all", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0,
		     "recorder not ready: %s", rk_err_text());
	snprintf(cmd, sizeof(cmd), "exec %s -t 3 -i 5", workload);
	w = sh_bg("later", cmd);
	wait_for(w, 30000);
	stop_recorder(rk);
	read_stat("all", &st);
	assert_tids("all", "later", 4, 1, 0);
	cr_assert(born_traced("all", (unsigned int)w), "the new process's file has no FORK first");
	cr_assert_not(has_file("all", (unsigned int)rk), "the recorder traced itself");
	cr_assert_not(has_file("all", 2), "kthreadd (a kernel thread) was traced");
	cr_assert(has_file("all", 1), "init (present at start) was not adopted");
	cr_assert_eq(st.bpf_drops, 0);
	printf("-a: %llu threads, %llu adopted by BPF, %llu signals\n",
	       (unsigned long long)st.threads, (unsigned long long)st.bpf_adopted,
	       (unsigned long long)st.signals);
}

static size_t count_in(const char *session, const char *sub)
{
	char dir[256];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s/%s", root, session, sub);
	d = opendir(dir);
	cr_assert_not_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static size_t count_files(const char *session)
{
	return count_in(session, "sched");
}

/* The memory @session's sched files hold. */
static unsigned long long blocks_of(const char *session)
{
	char dir[256];

	snprintf(dir, sizeof(dir), "%s/%s/sched", root, session);
	return blocks_in(dir);
}
/* The files in @session's sched directory whose identity says uid @uid. */
static size_t count_of_uid(const char *session, __u32 uid)
{
	char dir[256];

	snprintf(dir, sizeof(dir), "%s/%s/sched", root, session);
	return files_of_uid(dir, uid);
}
/*
 * Retention is fair per user: root's exited history (a workload of 21
 * threads), then an unprivileged user churning 300 short threads through
 * the same --max-shm. The user's own exited files make its room; root's
 * stay (all of them were removed, oldest first, before).
 */
Test(system, max_shm_retention_takes_room_from_the_user_who_needs_it)
{
	char cmd[700];
	char *argv[] = { (char *)rk_bin, "record",  "--root", root,	   "--session",
			 "fair",	 "-m",	    "16K",    "--max-shm", "1200K",
			 "--",		 "/bin/sh", "-c",     cmd,	   NULL };
	struct rk_session_stat st;
	char *err = NULL;
	size_t mine;
	int rc;

	cr_assert_eq(chmod(root, 0755), 0);
	snprintf(cmd, sizeof(cmd),
		 "%s -C 20 >/dev/null && exec setpriv --reuid=65534 --regid=65534 --clear-groups "
		 "%s -C 300 >/dev/null",
		 workload, workload);
	rc = run_rk(argv, NULL, &err);
	cr_assert_eq(rc, 0, "record failed: %s", err);
	read_stat("fair", &st);
	mine = count_of_uid("fair", 0);
	printf("fair --max-shm 1200K: root's files %zu, nobody's %zu, %llu removed, %llu not "
	       "traced\n",
	       mine, count_of_uid("fair", 65534), (unsigned long long)st.retention_removed,
	       (unsigned long long)st.not_traced);
	cr_assert_geq(mine, 21, "root's history went for another user's threads: %zu files left",
		      mine);
	/*
	 * Every removed file was nobody's: each of its 301 threads has its file
	 * kept, counted removed, or was not traced (while nobody held more than
	 * root and had no exited file of its own yet: its own threads wait).
	 */
	cr_assert_gt(st.retention_removed, 0, "the user's own exited files did not make room");
	cr_assert_eq(count_of_uid("fair", 65534) + st.retention_removed + st.not_traced, 301,
		     "%zu of nobody's files kept, %llu removed, %llu not traced",
		     count_of_uid("fair", 65534), (unsigned long long)st.retention_removed,
		     (unsigned long long)st.not_traced);
	cr_assert_leq(st.shm_bytes, 1200 * 1024ull);
	free(err);
}

/*
 * --max-shm is kept continuously: 300 short-lived threads (50 at a time)
 * through a cap of 60 files' worth, the oldest exited ones removed to make
 * room, none refused, and the live main thread's history intact. An exited
 * file counts the blocks it holds, not its size: more history is kept than
 * 60 files, and what the files hold stays under the cap.
 */
Test(system, max_shm_removes_the_oldest_exited_files_never_a_live_one)
{
	char *argv[] = { (char *)rk_bin, "record", "--root", root,
			 "--session",	 "ret",	   "-m",     "16K",
			 "--max-shm",	 "1200K",  "--",     (char *)workload,
			 "-C",		 "300",	   NULL };
	struct rk_session_stat st;
	struct check c = { 0 };
	char path[256], *out = NULL, *err = NULL, *m;
	int rc = run_rk(argv, &out, &err);
	unsigned int tid;
	size_t files;

	cr_assert_eq(rc, 0, "record failed: %s", err);
	read_stat("ret", &st);
	files = count_files("ret");
	printf("--max-shm 1200K: %zu files left, %llu removed (%llu KiB), %llu not traced\n", files,
	       (unsigned long long)st.retention_removed,
	       (unsigned long long)st.retention_bytes >> 10, (unsigned long long)st.not_traced);
	cr_assert_geq(st.retention_removed, 100, "%llu removed",
		      (unsigned long long)st.retention_removed);
	/* Each of the 301 threads' file is there, or was removed to make room. */
	cr_assert_eq(files + st.retention_removed, 301, "%zu kept, %llu removed", files,
		     (unsigned long long)st.retention_removed);
	cr_assert_eq(st.not_traced, 0, "threads refused although exited files could go");
	cr_assert_leq(st.shm_bytes, 1200 * 1024ull, "%llu bytes of files kept",
		      (unsigned long long)st.shm_bytes);
	cr_assert_gt(files, 60, "%zu files: exited files counted at their size, not their blocks",
		     files);
	cr_assert_leq(blocks_of("ret"), 1200 * 1024ull, "the files hold %llu bytes",
		      blocks_of("ret"));
	/* The main thread lived through it all: its file is there, whole. */
	m = strstr(out, "main ");
	cr_assert_not_null(m, "no main line: %s", out);
	tid = (unsigned int)strtoul(m + 5, NULL, 10);
	cr_assert(has_file("ret", tid), "the live main thread's file was removed");
	snprintf(path, sizeof(path), "%s/ret/sched/%u", root, tid);
	check_file(path, &c, NULL);
	cr_assert_gt(c.in + c.out, 0, "the main thread's history is empty");
	free(out);
	free(err);
}

/*
 * --max-shm is a hard bound on what live files fill too, and a quiet
 * thread's file is not counted at its size: four busy threads and the
 * main one with 256 KiB rings (1.3 MB if every ring filled) under a cap of
 * 600 KiB are all traced (each file counted by the pages it can have
 * filled, 20 KiB at first), and once the cap is reached the records that
 * would fill more pages are not written, counted (shm_withheld), while the
 * files hold no more than the cap. Counted at their size, two threads
 * were traced and three refused.
 */
Test(system, max_shm_bounds_what_live_files_fill)
{
	char *argv[] = { (char *)rk_bin, "record", "--root", root,
			 "--session",	 "hard",   "-m",     "256K",
			 "--max-shm",	 "600K",   "--",     (char *)workload,
			 "-t",		 "4",	   "-i",     "3000",
			 "-s",		 "20",	   NULL };
	struct rk_session_stat st;
	char *out = NULL, *err = NULL;
	int rc = run_rk(argv, &out, &err);

	cr_assert_eq(rc, 0, "record failed: %s", err);
	read_stat("hard", &st);
	printf("--max-shm 600K, -m 256K, 5 busy threads: %llu traced, %llu not, %llu KiB counted, "
	       "files hold %llu KiB, %llu records withheld of %llu\n",
	       (unsigned long long)st.threads, (unsigned long long)st.not_traced,
	       (unsigned long long)st.shm_bytes >> 10, blocks_of("hard") >> 10,
	       (unsigned long long)st.shm_withheld, (unsigned long long)st.records);
	cr_assert_eq(st.not_traced, 0, "threads refused: live files counted at their size");
	cr_assert_eq(st.threads, 5);
	cr_assert_gt(st.shm_withheld, 0, "the rings did not reach the cap: the test is too short");
	cr_assert_leq(st.shm_bytes, 600 * 1024ull, "%llu bytes counted",
		      (unsigned long long)st.shm_bytes);
	cr_assert_leq(blocks_of("hard"), 600 * 1024ull, "the files hold %llu bytes",
		      blocks_of("hard"));
	cr_assert_not_null(strstr(err, "records not written"), "record did not say so:\n%s", err);
	free(out);
	free(err);
}

/*
 * --on-exit drop under --max-shm: a dropped thread's files leave the count
 * too. They did not: the same 300 short-lived threads through a cap of 60
 * files' worth traced 60 and refused the other 240 ("not traced"), though
 * no file was left but the live main thread's.
 */
Test(system, on_exit_drop_gives_its_room_back_to_max_shm)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "drop",
			 "-m",
			 "16K",
			 "--max-shm",
			 "1200K",
			 "--on-exit",
			 "drop",
			 "--",
			 (char *)workload,
			 "-C",
			 "300",
			 NULL };
	struct rk_session_stat st;
	char *out = NULL, *err = NULL;
	int rc = run_rk(argv, &out, &err);

	cr_assert_eq(rc, 0, "record failed: %s", err);
	read_stat("drop", &st);
	printf("--on-exit drop --max-shm 1200K: %llu traced, %llu not, %zu files left, %llu "
	       "bytes counted\n",
	       (unsigned long long)st.threads, (unsigned long long)st.not_traced,
	       count_files("drop"), (unsigned long long)st.shm_bytes);
	cr_assert_eq(st.not_traced, 0, "threads refused for room that dropped files had freed");
	cr_assert_eq(st.threads, 301);
	cr_assert_eq(count_files("drop"), 0, "every thread exited: no file stays");
	cr_assert_eq(st.shm_bytes, 0, "%llu bytes counted for no file",
		     (unsigned long long)st.shm_bytes);
	free(out);
	free(err);
}

/* --keep-exited: files of threads exited longer ago go; a live thread's stay. */
Test(system, keep_exited_removes_old_exited_files)
{
	char cmd[PATH_MAX];
	char *argv[] = {
		(char *)rk_bin,	 "record", "--root", root,	"--session", "kx", "-m", "16K",
		"--keep-exited", "1s",	   "--",     "/bin/sh", "-c",	     cmd,  NULL
	};
	struct rk_session_stat st;
	char *err = NULL;
	int rc;

	snprintf(cmd, sizeof(cmd), "%s -C 50 >/dev/null; sleep 2.5", workload);
	rc = run_rk(argv, NULL, &err);
	cr_assert_eq(rc, 0, "record failed: %s", err);
	free(err);
	read_stat("kx", &st);
	printf("--keep-exited 1s: %llu removed, %zu files left\n",
	       (unsigned long long)st.retention_removed, count_files("kx"));
	cr_assert_geq(st.retention_removed, 51, "%llu removed",
		      (unsigned long long)st.retention_removed);
	cr_assert(has_file("kx", (unsigned int)st.target_pid), "the live shell's file was removed");
	cr_assert_leq(count_files("kx"), 3);
}

/*
 * With -e, every process gets a sideband file (its mmaps, comm, exit): once
 * its last thread exits the file is finished, unmapped by the recorder, and
 * removed by --keep-exited like its threads' files. Before, 30 processes
 * that came and went left 30 mappings in the recorder (an always-on one
 * would reach vm.max_map_count) and 30 files that retention never removed.
 */
Test(system, exited_processes_sidebands_are_unmapped_and_removed)
{
	char cmd[PATH_MAX], mapsf[128];
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "sb",
			 "-m",
			 "16K",
			 "-e",
			 "cpu-clock",
			 "--keep-exited",
			 "1s",
			 "--",
			 "/bin/sh",
			 "-c",
			 cmd,
			 NULL };
	struct rk_session_stat st;
	char *err = NULL;
	unsigned int mapped = ~0u;
	FILE *f;
	int rc;

	snprintf(mapsf, sizeof(mapsf), "%s/.maps.n", root);
	/* $PPID: the recorder, which forked the command. */
	snprintf(cmd, sizeof(cmd),
		 "for i in $(seq 30); do /bin/true; done; sleep 0.5; "
		 "grep -c /sideband/ /proc/$PPID/maps > %s; sleep 2.5",
		 mapsf);
	rc = run_rk(argv, NULL, &err);
	cr_assert_eq(rc, 0, "record failed: %s", err);
	free(err);
	f = fopen(mapsf, "re");
	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%u", &mapped), 1);
	fclose(f);
	read_stat("sb", &st);
	printf("sidebands: %u mapped while 30 processes had come and gone; %zu files left, "
	       "%llu files removed\n",
	       mapped, count_in("sb", "sideband"), (unsigned long long)st.retention_removed);
	cr_assert_leq(mapped, 2, "the recorder still maps %u sideband files", mapped);
	cr_assert_leq(count_in("sb", "sideband"), 2, "%zu sideband files left",
		      count_in("sb", "sideband"));
	cr_assert_geq(st.retention_removed, 60, "%llu removed",
		      (unsigned long long)st.retention_removed);
}

/*
 * The systemd unit: make install puts it where systemd looks for units of
 * PREFIX, pointing at the installed binary; systemd-analyze verify (with the
 * installed man page for its Documentation=) accepts it; uninstall removes it.
 */
Test(system, unit_file_installs_and_verifies)
{
	char repo[256], out_dir[600], cmd[2048], pfx[128], unit[400], *s;
	int st;

	source_tree(repo, sizeof(repo), out_dir, sizeof(out_dir));
	snprintf(unit, sizeof(unit), "%s/Makefile", repo);
	if (access(unit, F_OK))
		cr_skip_test("no source tree at %s", repo);
	if (access("/usr/bin/systemd-analyze", X_OK))
		cr_skip_test("systemd-analyze is not installed");
	snprintf(pfx, sizeof(pfx), "%s/pfx", root);
	snprintf(cmd, sizeof(cmd), "make -s -C %s OUTPUT=%s install PREFIX=%s >%s/make.out 2>&1",
		 repo, out_dir, pfx, root);
	cr_assert_eq(system(cmd), 0, "make install failed (see %s/make.out)", root);
	snprintf(unit, sizeof(unit), "%s/lib/systemd/system/ringkeeper.service", pfx);
	s = strdup(slurp(unit));
	snprintf(cmd, sizeof(cmd), "ExecStart=%s/sbin/ringkeeper record -a --resume-or-start", pfx);
	cr_assert_not_null(strstr(s, cmd), "%s", s);
	cr_assert_not_null(strstr(s, "coredump --install"), "the crash handler is not installed");
	cr_assert_not_null(strstr(s, "coredump --uninstall"), "the crash handler is not restored");
	cr_assert_not_null(strstr(s, "Restart=on-failure"));
	free(s);
	snprintf(cmd, sizeof(cmd), "MANPATH=%s/share/man systemd-analyze verify %s 2>&1", pfx,
		 unit);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "systemd-analyze verify: %s", s);
	free(s);
	snprintf(cmd, sizeof(cmd), "make -s -C %s OUTPUT=%s uninstall PREFIX=%s >%s/make.out 2>&1",
		 repo, out_dir, pfx, root);
	cr_assert_eq(system(cmd), 0);
	cr_assert_neq(access(unit, F_OK), 0, "uninstall left %s", unit);
}

/*
 * The budget is per user (the RFC's per-user accounting): threads of two
 * uids, each uid with room for one buffer. Each stays within its own budget
 * (accounted peak of the user with most <= budget), while both were locked
 * at once (the loader's VmLck went over one budget).
 */
Test(system, each_user_has_its_own_budget)
{
	const char *bursts = getenv("RK_BURSTS");
	char cmd[PATH_MAX * 2];
	char *argv[] = { (char *)rk_bin, "record", "--root",	  root,
			 "--session",	 "uids",   "-m",	  "16K",
			 "--mlock-kb",	 "20",	   "--linger-ms", "200",
			 "--min-run-us", "0",	   "--",	  "/bin/sh",
			 "-c",		 cmd,	   NULL };
	struct rk_session_stat st;
	char *err = NULL;
	int rc;

	if (!bursts)
		cr_skip_test("RK_BURSTS not set: run through 'make integration'");
	if (access("/usr/bin/setpriv", X_OK))
		cr_skip_test("setpriv (util-linux) is not installed");
	snprintf(cmd, sizeof(cmd),
		 "for u in 65531 65532; do setpriv --reuid=$u --regid=$u --clear-groups "
		 "%s -t 2 -b 3000 -s 30000 -d 1500 & done; wait",
		 bursts);
	rc = run_rk(argv, NULL, &err);
	cr_assert_eq(rc, 0, "record failed: %s", err);
	free(err);
	read_stat("uids", &st);
	printf("two users, budget %llu B each: peak of one user %llu B, loader VmLck peak %llu B; "
	       "%llu pins, %llu refusals, %llu evictions\n",
	       (unsigned long long)st.budget, (unsigned long long)st.locked_peak,
	       (unsigned long long)st.vmlck_peak, (unsigned long long)st.pins,
	       (unsigned long long)st.refusals, (unsigned long long)st.evictions);
	cr_assert_leq(st.locked_peak, st.budget, "a user over its budget");
	cr_assert_gt(st.vmlck_peak, st.budget,
		     "never more than one user's budget locked at once: not per user?");
	cr_assert_gt(st.pins, 0);
}

/*
 * -e per CPU (-a, --cgroup): what `show --json` prints of one file's
 * samples, each of which must be of the file's own tid; their number.
 */
static long json_samples(const char *path)
{
	static char line[1 << 17];
	char cmd[PATH_MAX + 128];
	unsigned long tid = 0;
	const char *q;
	long n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' show --json '%s' 2>&1", rk_bin, path);
	p = popen(cmd, "r");
	cr_assert_not_null(p, "%s", cmd);
	while (fgets(line, sizeof(line), p)) {
		/* One record a line; those after the first begin with the comma. */
		const char *l = line[0] == ',' ? line + 1 : line;

		if (!strncmp(l, "{\"thread\":", 10)) {
			q = strstr(l, "\"tid\":");
			cr_assert_not_null(q, "%s: %.200s", path, l);
			tid = strtoul(q + 6, NULL, 10);
			continue;
		}
		if (strncmp(l, "{\"type\":\"PERF_RECORD_SAMPLE\"", 28))
			continue;
		/* pid, then tid: the first "tid" key of a sample's line. */
		q = strstr(l, "\"tid\":");
		cr_assert(tid && q && strtoul(q + 6, NULL, 10) == tid,
			  "%s: a sample of another thread in the file of tid %lu: %.300s", path,
			  tid, line);
		n++;
	}
	cr_assert_eq(pclose(p), 0, "%s failed", cmd);
	return n;
}

/* Every file of @event in @session through json_samples(): the samples of them all. */
static long json_samples_all(const char *session, const char *event, size_t *files)
{
	char dir[PATH_MAX], path[PATH_MAX + 300];
	struct dirent *de;
	long n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s/%s", root, session, event);
	d = opendir(dir);
	cr_assert_not_null(d, "%s", dir);
	*files = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n += json_samples(path);
		++*files;
	}
	closedir(d);
	return n;
}

/* The worker threads ("tid T ..." lines) of a workload's output ROOT/NAME.out. */
static size_t worker_tids(const char *name, unsigned int *tids, size_t max)
{
	char path[128];
	const char *p;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%s.out", root, name);
	for (p = slurp(path); n < max && (p = strstr(p, "tid ")); p++)
		tids[n++] = (unsigned int)strtoul(p + 4, NULL, 10);
	return n;
}

/* The samples in @tid's file of @event (-1: it has none). */
static long samples_of(const char *session, const char *event, unsigned int tid)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/%s/%u", root, session, event, tid);
	return access(path, F_OK) ? -1 : json_samples(path);
}

#define NS_EV "syscalls:sys_enter_clock_nanosleep"

/*
 * The worker threads of a `workload -f -t 3 -i 4` (ROOT/NAME.out) each
 * make exactly 4 clock_nanosleep calls (glibc's nanosleep): each has
 * exactly 4 samples, in its own file, whichever CPU event took them.
 */
static void assert_four_sleeps_each(const char *session, const char *name)
{
	unsigned int tids[16];
	size_t workers = worker_tids(name, tids, 16), i;

	cr_assert_eq(workers, 6, "%s: %zu worker threads", name, workers);
	for (i = 0; i < workers; i++) {
		long n = samples_of(session, NS_EV, tids[i]);

		cr_assert_eq(n, 4, "%s: tid %u has %ld clock_nanosleep samples, not 4", name,
			     tids[i], n);
	}
}

/*
 * -a opens -e once per CPU (pid -1): every sample of a process born later
 * (two processes: -f) is in the file of its tid, none is missing (the
 * workload's exact clock_nanosleep calls; with a clock event besides, the
 * kernel drops some tracepoint samples, perf record -a alike, so none
 * here), the fds do not grow with the threads, and the samples of tasks
 * not traced (the recorder's own page faults) are counted, never filed.
 */
Test(system, all_opens_events_per_cpu_and_files_each_sample_under_its_tid)
{
	const char *extra[] = { "-a", "-e", NS_EV ",page-faults", NULL };
	char cmd[PATH_MAX], line[64], path[PATH_MAX];
	struct rk_session_stat st;
	size_t files, i;
	long n, ns;
	pid_t w, rk;
	int ready;

	rk = start_recorder_on(0, "evall", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0,
		     "recorder not ready: %s", rk_err_text());
	snprintf(cmd, sizeof(cmd), "exec %s -f -t 3 -i 4 -l 200000", workload);
	w = sh_bg("evall", cmd);
	wait_for(w, 30000);
	stop_recorder(rk);
	read_stat("evall", &st);
	cr_assert_eq(st.evcpu, 1, "-e opened per task (evcpu %u), not per CPU", st.evcpu);
	cr_assert_leq(st.nfds, (unsigned int)sysconf(_SC_NPROCESSORS_CONF) * 2,
		      "%u fds for 2 events: they grew with the threads", st.nfds);
	assert_four_sleeps_each("evall", "evall");
	ns = json_samples_all("evall", NS_EV, &files);
	n = json_samples_all("evall", "page-faults", &files);
	printf("-a per CPU: %zu threads with files, %ld page-faults and %ld clock_nanosleep "
	       "samples each in its tid's file; %llu samples and %llu sideband records of "
	       "untraced tasks dropped\n",
	       files, n, ns, (unsigned long long)st.perf_untraced,
	       (unsigned long long)st.perf_sb_untraced);
	cr_assert_gt(st.perf_untraced, 0, "the recorder's own page faults were not counted");
	/* Neither the recorder nor any of its threads has a file. */
	cr_assert_not(has_file("evall", (unsigned int)rk), "the recorder traced itself");
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/evall/%s/%d", root, i ? NS_EV : "page-faults", rk);
		cr_assert_neq(access(path, F_OK), 0, "%s: the recorder's samples were filed", path);
	}
	cr_assert_eq(st.perf_lost, 0);
	cr_assert_eq(st.lost, 0, "records with no thread to go to");
}

/*
 * -a -e cpu-clock -g per CPU: the spinning threads' samples in their own
 * files, symbolized through the sideband the per-CPU tracking event
 * wrote for the process born after the start (its exec's MMAP2).
 */
Test(system, all_per_cpu_cpu_clock_resolves_through_the_sideband)
{
	const char *extra[] = { "-a", "-e", "cpu-clock", "-F", "999", "-g", "-m", "64K", NULL };
	char cmd[PATH_MAX * 2], line[64], path[300];
	unsigned int tids[16];
	struct rk_session_stat st;
	size_t n, i, files;
	long total;
	pid_t w, rk;
	int ready;

	rk = start_recorder_on(0, "evclk", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0,
		     "recorder not ready: %s", rk_err_text());
	snprintf(cmd, sizeof(cmd), "exec %s -f -t 2 -i 20 -s 1000 -l 2000000", workload);
	w = sh_bg("evclk", cmd);
	wait_for(w, 30000);
	stop_recorder(rk);
	read_stat("evclk", &st);
	cr_assert_eq(st.evcpu, 1);
	total = json_samples_all("evclk", "cpu-clock", &files);
	n = worker_tids("evclk", tids, 16);
	cr_assert_eq(n, 4, "%zu worker tids", n);
	for (i = 0; i < n; i++) {
		char *txt;

		cr_assert_gt(samples_of("evclk", "cpu-clock", tids[i]), 0,
			     "spinning tid %u has no cpu-clock sample", tids[i]);
		snprintf(path, sizeof(path), "%s/.show.out", root);
		snprintf(cmd, sizeof(cmd),
			 "%s show --root %s --session evclk -e cpu-clock %u >%s 2>&1", rk_bin, root,
			 tids[i], path);
		cr_assert_eq(system(cmd), 0, "%s", slurp(path));
		txt = slurp(path);
		cr_assert_not_null(strstr(txt, "body+0x"), "tid %u: %.2000s", tids[i], txt);
	}
	printf("-a -e cpu-clock per CPU: %ld samples in %zu files, each of its tid; %llu of "
	       "untraced tasks dropped\n",
	       total, files, (unsigned long long)st.perf_untraced);
	cr_assert_eq(st.lost, 0);
}

/*
 * --cgroup opens -e once per CPU and cgroup (PERF_FLAG_PID_CGROUP): a
 * process in a nested cgroup of the subtree has every sample in its own
 * files; a process outside has none; the nested cgroup given as well adds
 * no second event (its tasks' samples would be doubled: exactly 4 each).
 */
Test(system, cgroup_opens_events_per_cpu_and_cgroup)
{
	const char *extra[] = { "--cgroup", cg, "--cgroup", NULL, "-e", NS_EV ",page-faults", NULL };
	char cmd[PATH_MAX * 2], line[64], sub[PATH_MAX + 8];
	unsigned int tids[16];
	struct rk_session_stat st;
	size_t n, i, files;
	pid_t in, out, rk;
	int ready;

	cg_make();
	extra[1] = cg;
	snprintf(sub, sizeof(sub), "%s/sub", cg);
	cr_assert_eq(mkdir(sub, 0755), 0, "mkdir %s: %s", sub, strerror(errno));
	extra[3] = sub;
	rk = start_recorder_on(0, "evcg", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0,
		     "recorder not ready: %s", rk_err_text());
	snprintf(cmd, sizeof(cmd), "echo $$ > %s/cgroup.procs && exec %s -f -t 3 -i 4 -l 200000",
		 sub, workload);
	in = sh_bg("evcgin", cmd);
	snprintf(cmd, sizeof(cmd), "exec %s -f -t 3 -i 4 -l 200000", workload);
	out = sh_bg("evcgout", cmd);
	wait_for(in, 30000);
	wait_for(out, 30000);
	stop_recorder(rk);
	read_stat("evcg", &st);
	if (st.evcpu != 2)
		cr_assert_fail("-e not opened per CPU and cgroup (evcpu %u): %s", st.evcpu,
			       rk_err_text());
	cr_assert_leq(st.nfds, (unsigned int)sysconf(_SC_NPROCESSORS_CONF) * 2,
		      "%u fds: the nested --cgroup got events of its own", st.nfds);
	assert_four_sleeps_each("evcg", "evcgin");
	n = tids_of("evcgout", tids, 16);
	cr_assert_eq(n, 8);
	for (i = 0; i < n; i++)
		cr_assert_eq(samples_of("evcg", NS_EV, tids[i]), -1,
			     "tid %u outside the cgroup has a file", tids[i]);
	json_samples_all("evcg", "page-faults", &files);
	printf("--cgroup per CPU: %zu threads, %u fds; %llu samples of untraced tasks\n", files,
	       st.nfds, (unsigned long long)st.perf_untraced);
	cr_assert_eq(st.lost, 0);
	cr_assert_eq(st.perf_lost, 0);
}

static int fork_fn(const struct perf_event_header *h, void *ctx)
{
	if (h->type == PERF_RECORD_FORK)
		memcpy(ctx, (const __u8 *)h + 8 + 16, 8); /* pid, ppid, tid, ptid, time */
	return 0;
}

/* A file's FORK time (0: none), its start_ns and tgid. */
static __u64 fork_time(const char *path, __u64 *start_ns, __u32 *tgid)
{
	struct rk_bufile *bf = rk_bufile__open(path, NULL);
	__u64 t = 0;

	cr_assert_not_null(bf, "%s does not open", path);
	cr_assert_eq(rk_bufile__for_each(bf, fork_fn, &t), 0, "%s does not parse", path);
	*start_ns = bf->ident->start_ns;
	*tgid = bf->ident->tgid;
	rk_bufile__free(bf);
	return t;
}

/*
 * -a, per-CPU cpu-clock at 20 kHz, 300 threads born 100 spinning at once:
 * the drain hands out each fork signal before it routes the samples after
 * it, so no thread's file is made by its first sample (it would begin
 * after its FORK, without it): each cpu-clock file begins at its FORK.
 */
Test(system, all_per_cpu_threads_are_known_from_their_fork_before_their_first_sample)
{
	const char *fanout = getenv("RK_FANOUT");
	const char *extra[] = { "-a", "-e", "cpu-clock", "-F", "20000", NULL };
	static unsigned int tids[4096];
	char cmd[PATH_MAX], line[64], path[PATH_MAX];
	struct rk_session_stat st;
	size_t n, i, threads = 0, early = 0;
	pid_t w, rk;
	int ready;

	if (!fanout)
		cr_skip_test("RK_FANOUT not set: run through 'make integration'");
	rk = start_recorder_on(0, "evfan", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0,
		     "recorder not ready: %s", rk_err_text());
	snprintf(cmd, sizeof(cmd), "exec '%s' -t 300 -i 3 -s 1000 -b 100 </dev/null", fanout);
	w = sh_bg("evfan", cmd);
	wait_for(w, 60000);
	stop_recorder(rk);
	read_stat("evfan", &st);
	cr_assert_eq(st.evcpu, 1);
	snprintf(path, sizeof(path), "%s/evfan/cpu-clock", root);
	n = files_in(path, tids, 4096);
	for (i = 0; i < n; i++) {
		__u64 forked, sched_start, ev_start;
		__u32 tgid;

		snprintf(path, sizeof(path), "%s/evfan/sched/%u", root, tids[i]);
		if (access(path, F_OK))
			continue; /* a reused tid's later file: not ours to check */
		forked = fork_time(path, &sched_start, &tgid);
		if (tgid != (__u32)w || !forked)
			continue; /* another process's, or the main thread */
		snprintf(path, sizeof(path), "%s/evfan/cpu-clock/%u", root, tids[i]);
		fork_time(path, &ev_start, &tgid);
		threads++;
		early += !(sched_start == forked && ev_start == forked);
	}
	printf("-a per CPU, fanout: %zu threads, %zu made by a sample; %llu samples of untraced "
	       "tasks\n",
	       threads, early, (unsigned long long)st.perf_untraced);
	cr_assert_geq(threads, 300);
	cr_assert_eq(early, 0, "%zu of %zu threads were made by a sample before their fork", early,
		     threads);
	cr_assert_eq(st.lost, 0);
}
