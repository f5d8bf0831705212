// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_loss.c - a session that drops signals says so: live in `stat`, in
 * record's end line, and in every reader of it (issue 48).
 *
 * The loss is made at will: RINGKEEPER_TEST_SIGNAL_US slows the loader to
 * 2 ms a signal, and --ringbuf-size 4096 gives the BPF side the smallest
 * rings, so a workload switching a few thousand times a second overflows
 * them within a tick.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "helpers.h"

TestSuite(loss, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 120);

/*
 * A recorder of @target slowed to a backlog, as the file's comment says;
 * ready when it returns. With @offcpu, record --offcpu, 64 KiB rings and
 * 200 us a signal: the stack rings (1 KiB a stack: 64 slots a CPU) fill
 * long before the switch rings (32 bytes a switch: 1,024 slots), and what
 * is left at the end is handed out within a second.
 */
static pid_t slow_recorder(pid_t target, const char *session, int offcpu)
{
	static const char *const plain[] = { "--ringbuf-size", "4096", NULL };
	static const char *const stacks[] = { "--ringbuf-size", "65536", "--offcpu", NULL };
	char line[64];
	int ready;
	pid_t rk;

	setenv("RINGKEEPER_TEST_SIGNAL_US", offcpu ? "200" : "2000", 1);
	rk = start_recorder_on(target, session, &ready, offcpu ? stacks : plain);
	unsetenv("RINGKEEPER_TEST_SIGNAL_US");
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "recorder not ready");
	close(ready);
	return rk;
}

/* Stop the recorder (SIGINT), then the workload; the recorder's stderr (slurp()'s buffer). */
static char *stop_both(pid_t rk, pid_t wl)
{
	char e[128];
	int st;

	kill(rk, SIGINT);
	st = wait_for(rk, 60000);
	kill(wl, SIGKILL);
	wait_for(wl, 10000);
	snprintf(e, sizeof(e), "%s/.rk.err", root);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "recorder: %s", slurp(e));
	return slurp(e);
}

/*
 * Under a backlog that keeps each turn of the loop busy for a long time,
 * `stat` still moves at least once a second, drops included. It published
 * every 20 turns: frozen (bpf_drops 0) for minutes while millions were
 * dropped. Here a turn takes up to ~0.4 s (the rings' ~200 signals at 2 ms),
 * 20 of them ~8 s.
 */
Test(loss, stat_is_published_every_second_under_a_backlog)
{
	struct rk_session_stat st;
	__u64 last_update = 0, gap_ms = 0, max_gap_ms = 0, drops = 0, t0, t;
	unsigned int updates = 0;
	pid_t wl, rk;

	wl = busy_workload(30);
	rk = slow_recorder(wl, "b", 0);
	read_stat("b", &st);
	last_update = st.update_ns;
	t0 = now_ms();
	/* 3 s of polling every 20 ms: how long the counters stayed the same, at most. */
	for (t = t0; t - t0 < 3000; t = now_ms()) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		read_stat("b", &st);
		if (st.update_ns != last_update) {
			last_update = st.update_ns;
			updates++;
			gap_ms = 0;
		} else {
			gap_ms += 20;
		}
		if (gap_ms > max_gap_ms)
			max_gap_ms = gap_ms;
		drops = st.bpf_drops;
	}
	stop_both(rk, wl);
	cr_assert_gt(st.signals, 0, "no signal handled: no backlog made");
	cr_assert_gt(drops, 0,
		     "stat said bpf_drops 0 throughout a backlog with 4 KiB rings (%u updates in "
		     "3 s)",
		     updates);
	cr_assert_leq(max_gap_ms, 1000,
		      "the counters stayed unchanged for %llu ms under a backlog (%u updates in "
		      "3 s)",
		      (unsigned long long)max_gap_ms, updates);
}

/*
 * The trace read with the official protos, where they are installed: a
 * global track "ringkeeper: incomplete" whose instant names the drops (and
 * nothing dangling, no time going back: perfetto_check.py's own checks).
 */
static void perfetto_note(const char *trace, __u64 drops)
{
	const char *py = getenv("RK_PERFETTO_PY");
	char repo[256], cmd[1200], *s;
	int st;

	if (!py || access(py, X_OK)) {
		cr_log_warn("no python with PyPI's perfetto protos (RK_PERFETTO_PY): the trace's "
			    "note is checked by its bytes only");
		return;
	}
	source_tree(repo, sizeof(repo), NULL, 0);
	snprintf(cmd, sizeof(cmd),
		 "%s %s/tests/perfetto_check.py %s --note 'ringkeeper: incomplete: the session did "
		 "not record %llu bpf_drops' 2>&1 | tail -n +2",
		 py, repo, trace, (unsigned long long)drops);
	s = sh_out(cmd, &st);
	cr_assert_eq(s[0], '\0', "%s", s);
	free(s);
}

/* Run ringkeeper with @args (NULL-terminated, after the binary); its exit status must be 0. */
static void rk_ok(const char *const args[], char **out, char **err)
{
	char *argv[24];
	int n = 0, st;

	argv[n++] = (char *)rk_bin;
	while (*args && n < 23)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	st = run_rk(argv, out, err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s %s: %s", argv[1], argv[2],
		  err && *err ? *err : "");
}

/* @text says it is incomplete, with the session's @drops (stat: bpf_drops) after @pfx. */
static void says_drops(const char *what, const char *text, const char *pfx, __u64 drops)
{
	char want[160];

	snprintf(want, sizeof(want), "%sincomplete: the session did not record everything", pfx);
	cr_assert_not_null(strstr(text, want), "%s does not say it is incomplete:\n%s", what, text);
	snprintf(want, sizeof(want), "%s  %llu signals dropped by the BPF side", pfx,
		 (unsigned long long)drops);
	cr_assert_not_null(strstr(text, want), "%s does not say '%s':\n%s", what, want, text);
}

/*
 * A session that dropped signals says so, with how many: record's end line
 * (it said "nothing dropped or lost"), and every reader of the session or
 * of a bundle cut from it: sched, show, ls, top (text and --json), the
 * exports (stderr, and in the file: perf.data's PERF_RECORD_LOST, which
 * perf report counts; a Perfetto track). None of them said a word.
 */
Test(loss, a_session_that_dropped_says_so_in_every_reader)
{
	char bundle[128], pdata[128], ptrace[128], tid[16], want[200], cmd[400];
	const char *const snap[] = { "snapshot", "--root", root, "-o", bundle, "l", NULL };
	struct rk_session_stat st;
	char *out, *err, *end;
	__u64 t0 = now_ms();
	pid_t wl, rk;
	FILE *p;

	snprintf(bundle, sizeof(bundle), "%s/.l.rkb", root);
	snprintf(pdata, sizeof(pdata), "%s/.l.data", root);
	snprintf(ptrace, sizeof(ptrace), "%s/.l.pftrace", root);
	wl = busy_workload(30);
	snprintf(tid, sizeof(tid), "%d", wl);
	rk = slow_recorder(wl, "l", 0);
	do {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		read_stat("l", &st);
	} while (!st.bpf_drops && now_ms() - t0 < 20000);
	cr_assert_gt(st.bpf_drops, 0, "no drop in 20 s with 4 KiB rings and a slowed loader");
	rk_ok(snap, NULL, &err);
	free(err);
	end = strdup(stop_both(rk, wl));
	read_stat("l", &st);

	/* The end line: every loss named, with stat's count; not "nothing dropped". */
	cr_assert_null(strstr(end, "nothing dropped or lost"), "%s", end);
	snprintf(want, sizeof(want),
		 "ringkeeper: %llu signals dropped by the BPF side (ringbuf or switch ring full): "
		 "raise --ringbuf-size (stat: bpf_drops)",
		 (unsigned long long)st.bpf_drops);
	cr_assert_not_null(strstr(end, want), "want '%s' in:\n%s", want, end);
	free(end);

	{
		const char *const a[] = { "sched", "--root", root, "l", NULL };

		rk_ok(a, &out, &err);
		says_drops("sched", out, "# ", st.bpf_drops);
		free(out);
		free(err);
	}
	{
		const char *const a[] = { "sched", "--json", "--root", root, "l", NULL };

		rk_ok(a, &out, &err);
		snprintf(
			want, sizeof(want),
			",\"loss\":{\"known\":true,\"complete\":false,\"counters\":{\"bpf_drops\":%llu",
			(unsigned long long)st.bpf_drops);
		cr_assert_not_null(strstr(out, want), "sched --json lacks '%s'", want);
		free(out);
		free(err);
	}
	{
		const char *const a[] = { "show", "--root", root, "--session", "l", tid, NULL };
		const char *const j[] = { "show",      "--json", "--root", root,
					  "--session", "l",	 tid,	   NULL };

		rk_ok(a, &out, &err);
		says_drops("show", out, "# ", st.bpf_drops);
		free(out);
		free(err);
		rk_ok(j, &out, &err);
		cr_assert_not_null(strstr(out, want), "show --json lacks '%s'", want);
		free(out);
		free(err);
	}
	{
		const char *const a[] = { "ls", "--root", root, "l", NULL };
		const char *const j[] = { "ls", "--json", "--root", root, "l", NULL };

		rk_ok(a, &out, &err);
		says_drops("ls", out, "  ", st.bpf_drops);
		free(out);
		free(err);
		rk_ok(j, &out, &err);
		cr_assert_not_null(strstr(out, want), "ls --json lacks '%s'", want);
		free(out);
		free(err);
	}
	{
		const char *const a[] = { "top", "--batch", "-n", "1", "--root", root, "l", NULL };

		rk_ok(a, &out, &err);
		says_drops("top", out, "# ", st.bpf_drops);
		free(out);
		free(err);
	}
	{
		const char *const a[] = { "export", "--root", root,  "--session",
					  "l",	    "-o",     pdata, NULL };

		rk_ok(a, &out, &err);
		says_drops("export -o", err, "ringkeeper: ", st.bpf_drops);
		cr_assert_not_null(strstr(err, "a PERF_RECORD_LOST of"), "%s", err);
		free(out);
		free(err);
		/* perf itself reads the loss: its own LOST record, counted by perf report --stats. */
		snprintf(cmd, sizeof(cmd),
			 "perf report --stats -i %s 2>/dev/null | grep -c 'LOST events'", pdata);
		p = popen(cmd, "r");
		cr_assert_not_null(p);
		cr_assert_not_null(fgets(want, sizeof(want), p));
		pclose(p);
		cr_assert_eq(atoi(want), 1, "perf report --stats shows no LOST events for %s",
			     pdata);
		snprintf(cmd, sizeof(cmd), "perf script -i %s >/dev/null 2>&1", pdata);
		cr_assert_eq(system(cmd), 0, "perf script cannot read %s", pdata);
	}
	{
		const char *const a[] = { "export", "--root",	  root,	  "--session",
					  "l",	    "--perfetto", ptrace, NULL };

		rk_ok(a, &out, &err);
		says_drops("export --perfetto", err, "ringkeeper: ", st.bpf_drops);
		cr_assert_not_null(memmem(slurp(ptrace), 1 << 20, "ringkeeper: incomplete", 22),
				   "no track 'ringkeeper: incomplete' in %s", ptrace);
		free(out);
		free(err);
		perfetto_note(ptrace, st.bpf_drops);
	}
	{
		/* A bundle cut while it recorded: its drops until then. */
		const char *const a[] = { "sched", "--bundle", bundle, NULL };

		rk_ok(a, &out, &err);
		cr_assert_not_null(strstr(out,
					  "# incomplete: the session did not record everything"),
				   "sched --bundle:\n%s", out);
		cr_assert_not_null(strstr(out,
					  " signals dropped by the BPF side (ringbuf or switch "
					  "ring full) (stat: bpf_drops)"),
				   "sched --bundle:\n%s", out);
		free(out);
		free(err);
	}
}

/*
 * record --offcpu lost 5,948 of 60,648 stacks and only stat's stack_drops
 * said so: the end line and sched --offcpu now say how many.
 */
Test(loss, dropped_off_cpu_stacks_are_said_by_record_and_sched_offcpu)
{
	const char *const a[] = { "sched", "--offcpu", "--root", root, "o", NULL };
	struct rk_session_stat st;
	char want[160], *end, *out, *err;
	__u64 t0 = now_ms();
	pid_t wl, rk;

	wl = busy_workload(30);
	rk = slow_recorder(wl, "o", 1);
	do {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		read_stat("o", &st);
	} while (!st.stack_drops && now_ms() - t0 < 20000);
	cr_assert_gt(st.stack_drops, 0, "no stack dropped in 20 s with 64 KiB rings, slowed");
	end = strdup(stop_both(rk, wl));
	read_stat("o", &st);
	snprintf(want, sizeof(want),
		 "ringkeeper: %llu off-CPU stacks not taken (their CPU's stack ring full): raise "
		 "--ringbuf-size (stat: stack_drops)",
		 (unsigned long long)st.stack_drops);
	cr_assert_not_null(strstr(end, want), "want '%s' in:\n%s", want, end);
	free(end);
	rk_ok(a, &out, &err);
	snprintf(want, sizeof(want), "#   %llu off-CPU stacks not taken",
		 (unsigned long long)st.stack_drops);
	cr_assert_not_null(strstr(out, want), "sched --offcpu lacks '%s':\n%s", want, out);
	free(out);
	free(err);
}
