// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_service.c - what an operator of the ringkeeper service counts on
 * (issue 53): a stop under a backlog ends within systemd's stop timeout,
 * `stat` says by its exit status whether the recorder is healthy, and the
 * sessions of earlier runs stay under one --max-shm.
 *
 * The backlog is made as test_loss.c makes it: RINGKEEPER_TEST_SIGNAL_US
 * slows the loader to 2 ms a signal under a workload that switches some
 * 18,000 times a second.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "helpers.h"

TestSuite(service, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 120);

/* A recorder of @target, each signal handled in @signal_us (0: at full speed); ready. */
static pid_t recorder(pid_t target, const char *session, const char *signal_us,
		      const char *const extra[])
{
	char line[64];
	int ready;
	pid_t rk;

	if (signal_us)
		setenv("RINGKEEPER_TEST_SIGNAL_US", signal_us, 1);
	rk = start_recorder_on(target, session, &ready, extra);
	unsetenv("RINGKEEPER_TEST_SIGNAL_US");
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "recorder not ready");
	close(ready);
	return rk;
}

/* `ringkeeper stat --root ROOT SESSION`'s exit status. */
static int stat_status(const char *session)
{
	char *argv[] = { (char *)rk_bin, "stat", "--root", root, (char *)session, NULL };
	char *out, *err;
	int st = run_rk(argv, &out, &err);

	cr_assert(WIFEXITED(st), "stat did not exit: %s", err);
	free(out);
	free(err);
	return WEXITSTATUS(st);
}

/*
 * A SIGTERM to a recorder with a backlog of tens of thousands of signals
 * (minutes of work at 2 ms each) ends it within seconds: RK_STOP_GRACE_NS
 * (3 s) of catching up, then the rest counted in stop_dropped and said;
 * exit 0, the session ended, and its files read. It took as long as the
 * backlog (62 s measured under a churn, against TimeoutStopSec=30s).
 */
Test(service, a_stop_under_a_backlog_ends_within_seconds)
{
	static const char *const extra[] = { "--ringbuf-size", "1M", NULL };
	struct rk_session_stat st;
	char e[128],
		*argv[] = { (char *)rk_bin, "show", "--root", root, "--session", "b", NULL, NULL };
	char tid[16], *out, *err;
	uint64_t t0, took;
	pid_t wl, rk;
	int status;

	wl = busy_workload(30);
	rk = recorder(wl, "b", "2000", extra);
	/* A backlog: 2 s of ~18,000 switches a second handed out at 500 a second. */
	usleep(2000000);
	t0 = now_ms();
	cr_assert_eq(kill(rk, SIGTERM), 0);
	status = wait_for(rk, 20000);
	took = now_ms() - t0;
	kill(wl, SIGKILL);
	wait_for(wl, 10000);
	snprintf(e, sizeof(e), "%s/.rk.err", root);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "recorder: status %#x, %s", status,
		  slurp(e));
	cr_assert_lt(took, 8000, "the stop took %llu ms", (unsigned long long)took);
	cr_assert_not_null(strstr(slurp(e), "stopped under a backlog"), "%s", slurp(e));
	read_stat("b", &st);
	cr_assert_eq(st.state, RK_SESSION_ENDED);
	/* A backlog of minutes' work: more left than 3 s hand out (1,500), and counted. */
	cr_assert_gt(st.stop_dropped, 5000, "left at the stop: %llu",
		     (unsigned long long)st.stop_dropped);
	/* What was handed out is in the files: the workload's main thread reads. */
	snprintf(tid, sizeof(tid), "%d", (int)wl);
	argv[6] = tid;
	status = run_rk(argv, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "show: %s", err);
	cr_assert_not_null(strcasestr(out, "switch"), "show %s: %s", tid, out);
	free(out);
	free(err);
}

/*
 * stat's exit status, for a health check: 0 running and nothing lost, 3
 * running with losses, 4 no recorder running (ended), 1 no such session.
 * It was 0 for all but the last.
 */
Test(service, stat_exit_status_says_whether_the_recorder_is_healthy)
{
	static const char *const small[] = { "--ringbuf-size", "4096", NULL };
	struct rk_session_stat st;
	uint64_t end;
	pid_t wl, rk;

	wl = busy_workload(30);
	rk = recorder(wl, "ok", NULL, NULL);
	cr_assert_eq(stat_status("ok"), 0, "a running recorder that lost nothing");
	kill(rk, SIGINT);
	cr_assert(WIFEXITED(wait_for(rk, 20000)));
	cr_assert_eq(stat_status("ok"), 4, "an ended session");
	cr_assert_eq(stat_status("nosuch"), 1);

	/* The smallest rings and a slow loader: BPF drops within a tick. */
	rk = recorder(wl, "lossy", "2000", small);
	end = now_ms() + 10000;
	do {
		usleep(50000);
		read_stat("lossy", &st);
	} while (!st.bpf_drops && now_ms() < end);
	cr_assert_gt(st.bpf_drops, 0, "no drops made");
	cr_assert_eq(stat_status("lossy"), 3, "a running recorder that dropped signals");
	kill(rk, SIGINT);
	cr_assert(WIFEXITED(wait_for(rk, 20000)));
	cr_assert_eq(stat_status("lossy"), 4, "an ended session, with losses");
	kill(wl, SIGKILL);
	wait_for(wl, 10000);
}

/* `sh -c CMD`'s exit status (0 expected) with its output, asserted. */
static char *sh_ok(const char *cmd)
{
	int st;
	char *s = sh_out(cmd, &st);

	cr_assert_eq(st, 0, "%s:\n%s", cmd, s);
	return s;
}

/*
 * The package `make deb` built (make test builds it before this step):
 * its fields and files, installed into a scratch root with dpkg --root
 * (maintainer scripts chrootless, DPKG_ROOT set: they touch only that
 * root), run from there, then removed (pins go) and purged (sessions go):
 * nothing of it is left. The running system's service, core_pattern and
 * bpffs are not this test's: see the guide's service section.
 */
Test(service, the_debian_package_installs_runs_and_leaves_nothing)
{
	char repo[512], deb[700], py[700], cmd[3000], r[128], *s;
	const char *dpkg = "dpkg --force-script-chrootless --force-depends --log=/dev/null";

	source_tree(repo, sizeof(repo), NULL, 0);
	snprintf(cmd, sizeof(cmd), "ls %s/build/deb/ringkeeper_*.deb 2>/dev/null | head -1", repo);
	s = sh_out(cmd, NULL);
	s[strcspn(s, "\n")] = '\0';
	if (!*s)
		cr_skip_test("no package in %s/build/deb: make deb builds it (make test does)",
			     repo);
	snprintf(deb, sizeof(deb), "%s", s);
	snprintf(cmd, sizeof(cmd), "ls %s/build/deb/python3-ringkeeper_*_all.deb", repo);
	free(s);
	s = sh_ok(cmd);
	s[strcspn(s, "\n")] = '\0';
	snprintf(py, sizeof(py), "%s", s);

	/* Control fields: Depends computed from what the binary links (dh_shlibdeps). */
	snprintf(cmd, sizeof(cmd), "dpkg-deb -f %s Package Architecture Depends", deb);
	free(s);
	s = sh_ok(cmd);
	cr_assert_not_null(strstr(s, "Package: ringkeeper\n"), "%s", s);
	cr_assert_null(strstr(s, "Architecture: all"), "%s", s);
	cr_assert(strstr(s, "libbpf1") && strstr(s, "libipt2") && strstr(s, "libelf1") &&
			  strstr(s, "libc6"),
		  "Depends lacks a library the binary links:\n%s", s);
	/* Its files, and the unit as the package installs it. */
	snprintf(cmd, sizeof(cmd), "dpkg-deb -c %s; dpkg-deb -c %s", deb, py);
	free(s);
	s = sh_ok(cmd);
	cr_assert(strstr(s, "./usr/sbin/ringkeeper\n") &&
			  strstr(s, "./usr/lib/systemd/system/ringkeeper.service\n") &&
			  strstr(s, "./usr/share/man/man8/ringkeeper.8.gz\n") &&
			  strstr(s, "./usr/share/bash-completion/completions/ringkeeper\n") &&
			  strstr(s, "./usr/share/doc/ringkeeper/copyright\n") &&
			  strstr(s, "./usr/lib/python3/dist-packages/ringkeeper/__init__.py\n"),
		  "a file missing:\n%s", s);
	snprintf(cmd, sizeof(cmd),
		 "dpkg-deb --fsys-tarfile %s | tar -xO ./usr/lib/systemd/system/ringkeeper.service",
		 deb);
	free(s);
	s = sh_ok(cmd);
	cr_assert_not_null(strstr(s, "ExecStart=/usr/sbin/ringkeeper record -a --resume-or-start"),
			   "%s", s);
	cr_assert_null(strstr(s, "@SBINDIR@"), "%s", s);

	/* Installed into a scratch root, and run from there. */
	snprintf(r, sizeof(r), "%s/dpkgroot", root);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/var/lib/dpkg/info %s/var/lib/dpkg/updates && touch "
		 "%s/var/lib/dpkg/status && %s --root=%s -i %s %s 2>&1",
		 r, r, r, dpkg, r, deb, py);
	free(sh_ok(cmd));
	snprintf(cmd, sizeof(cmd), "%s/usr/sbin/ringkeeper --version", r);
	free(s);
	s = sh_ok(cmd);
	cr_assert_eq(strncmp(s, "ringkeeper 0.", 13), 0, "%s", s);
	/* What a recorder leaves: pins, a session. Remove: pins go; purge: sessions go. */
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/sys/fs/bpf/ringkeeper %s/dev/shm/ringkeeper/s1 && touch "
		 "%s/sys/fs/bpf/ringkeeper/pmu_info %s/dev/shm/ringkeeper/s1/stat && "
		 "%s --root=%s -r ringkeeper 2>&1 && test ! -e %s/usr/sbin/ringkeeper && "
		 "test ! -e %s/sys/fs/bpf/ringkeeper && test -e %s/dev/shm/ringkeeper/s1/stat && "
		 "%s --root=%s --purge ringkeeper python3-ringkeeper 2>&1",
		 r, r, r, r, dpkg, r, r, r, r, dpkg, r);
	free(sh_ok(cmd));
	snprintf(cmd, sizeof(cmd),
		 "cd %s && find . -mindepth 1 -not -type d -not -path './var/lib/dpkg/*'", r);
	free(s);
	s = sh_ok(cmd);
	cr_assert_str_empty(s, "left after the purge:\n%s", s);
	free(s);
}

/* The buffer files of session @s (its sched/ directory), and their bytes into *@bytes. */
static int sched_files(const char *s, unsigned long long *bytes)
{
	char cmd[300], *out;
	unsigned long long n = 0, b = 0;

	snprintf(cmd, sizeof(cmd), "find %s/%s/sched -type f -printf '%%b\\n' 2>/dev/null", root,
		 s);
	out = sh_out(cmd, NULL);
	for (char *p = out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		b += strtoull(p, NULL, 10) * 512;
		n++;
	}
	free(out);
	*bytes += b;
	return (int)n;
}

/*
 * A service started again and again (each boot, each restart that does not
 * resume) keeps the sessions of its earlier runs and its own within one
 * --max-shm: at a new -a session's start the earlier sessions' dead files,
 * oldest first, go until they hold at most half of it, and the new session
 * gets what they leave. Three earlier sessions of 7 files (8 KiB each, 168
 * KiB), then -a with --max-shm 200K: old1 goes entirely, old2 in part, old3
 * stays; this session's cap is 200K less what is left. Nothing was removed:
 * a year of daily restarts kept a year of sessions.
 */
Test(service, earlier_sessions_stay_under_one_max_shm)
{
	static const char *const all[] = { "-a", "--max-shm", "200K", NULL };
	char *rec[] = { (char *)rk_bin, "record", "--root", root, "--session",
			NULL,		"-m",	  "16K",    "--", (char *)workload,
			"-t",		"6",	  "-i",	    "20", "-s",
			"1000",		NULL };
	const char *names[] = { "old1", "old2", "old3" };
	unsigned long long before = 0, left = 0;
	struct rk_session_stat st;
	char path[200];
	pid_t rk;
	int i, st_rc;

	for (i = 0; i < 3; i++) {
		rec[5] = (char *)names[i];
		st_rc = run_rk(rec, NULL, NULL);
		cr_assert(WIFEXITED(st_rc) && WEXITSTATUS(st_rc) == 0, "record %s", names[i]);
		cr_assert_eq(sched_files(names[i], &before), 7);
		/* Ages apart: a second between the sessions' ends. */
		usleep(1100000);
	}
	cr_assert_gt(before, 100 * 1024, "earlier sessions hold %llu bytes", before);

	rk = recorder(0, "new", NULL, all);
	read_stat("new", &st);
	kill(rk, SIGINT);
	cr_assert(WIFEXITED(wait_for(rk, 30000)));

	snprintf(path, sizeof(path), "%s/old1", root);
	cr_assert_neq(access(path, F_OK), 0, "the oldest session was not removed");
	sched_files("old2", &left);
	cr_assert_eq(sched_files("old3", &left), 7, "the newest earlier session lost files");
	cr_assert_leq(left, 100 * 1024, "earlier sessions hold %llu bytes, over half of 200K",
		      left);
	cr_assert_eq(st.max_shm, 200 * 1024 - left, "this session's --max-shm: %llu",
		     (unsigned long long)st.max_shm);
}

/*
 * The unit's ExecStart= command (scripts/ringkeeper.service.in) as systemd
 * runs it, with --root and --ready-fd added, as far as no systemd runs here:
 * a session starts, stat says 0 or 3 (running); systemd's stop (SIGTERM to
 * the main process, KillMode=mixed) ends it with exit 0 well within
 * TimeoutStopSec=30s and stat says 4; after a kill -9 (a failure: systemd
 * restarts it), the same command resumes that session (--resume-or-start).
 * Not run: ExecStartPre=/ExecStopPost= (coredump --install/--uninstall,
 * tested by the coredump suite), systemd's own restart and timeout.
 */
Test(service, the_unit_s_command_starts_stops_and_resumes)
{
	char repo[512], path[700], *unit, *line, *argv[32], cmd[600], fdbuf[16], o[128], e[128],
		rd[64], *s;
	int n = 0, rp[2], status;
	uint64_t t0;
	pid_t rk;

	source_tree(repo, sizeof(repo), NULL, 0);
	snprintf(path, sizeof(path), "%s/scripts/ringkeeper.service.in", repo);
	unit = strdup(slurp(path));
	line = strstr(unit, "\nExecStart=@SBINDIR@/ringkeeper ");
	cr_assert_not_null(line, "no ExecStart= in %s", path);
	line += strlen("\nExecStart=@SBINDIR@/ringkeeper ");
	line[strcspn(line, "\n")] = '\0';
	argv[n++] = (char *)rk_bin;
	for (char *tok = strtok(line, " "); tok && n < 24; tok = strtok(NULL, " "))
		argv[n++] = tok;
	{
		int resumes = 0;

		for (int k = 1; k < n; k++)
			resumes |= !strcmp(argv[k], "--resume-or-start");
		cr_assert(resumes, "the unit does not resume its session after a failure");
	}
	argv[n++] = "--root";
	argv[n++] = root;
	argv[n++] = "--ready-fd";
	argv[n++] = fdbuf;
	argv[n] = NULL;
	snprintf(o, sizeof(o), "%s/.rk.out", root);
	snprintf(e, sizeof(e), "%s/.rk.err", root);

	for (int round = 0; round < 3; round++) {
		cr_assert_eq(pipe(rp), 0);
		snprintf(fdbuf, sizeof(fdbuf), "%d", rp[1]);
		rk = spawn(argv, o, e, rp[1]);
		close(rp[1]);
		cr_assert_eq(read_line_within(rp[0], rd, sizeof(rd), 60000), 0, "not ready: %s",
			     slurp(e));
		close(rp[0]);
		snprintf(cmd, sizeof(cmd), "%s stat --root %s >/dev/null 2>&1", rk_bin, root);
		status = system(cmd);
		cr_assert(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3,
			  "stat of the running service: %d", WEXITSTATUS(status));
		if (round == 1) {
			/* The restart after round 0's kill -9 took its session over. */
			cr_assert_not_null(strstr(slurp(e), "resuming it"), "%s", slurp(e));
			snprintf(cmd, sizeof(cmd), "ls %s | wc -l", root);
			s = sh_out(cmd, NULL);
			cr_assert_eq(atoi(s), 1, "a new session instead of resuming: %s", s);
			free(s);
		}
		if (round == 0) {
			kill(rk, SIGKILL);
			wait_for(rk, 10000);
			continue;
		}
		t0 = now_ms();
		kill(rk, SIGTERM);
		status = wait_for(rk, 30000);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "stop: %#x, %s", status,
			  slurp(e));
		cr_assert_lt(now_ms() - t0, 30000);
		snprintf(cmd, sizeof(cmd), "%s stat --root %s >/dev/null 2>&1", rk_bin, root);
		cr_assert_eq(WEXITSTATUS(system(cmd)), 4, "stat of the stopped service");
	}
	free(unit);
}
