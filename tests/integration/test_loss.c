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

/* A workload that switches often for about @secs seconds: two threads sleeping 50 us at a time. */
static pid_t busy_workload(double secs)
{
	char wo[128], we[128], iters[32];
	char *argv[] = { (char *)workload, "-t", "2", "-i", iters, "-s", "50", NULL };

	/* A 50 us sleep takes ~110 us here (timer slack): ~9,000 switches a second a thread. */
	snprintf(iters, sizeof(iters), "%d", (int)(secs * 9000));
	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	return spawn(argv, wo, we, -1);
}

/* A recorder of @target slowed to a backlog, as the file's comment says; ready when it returns. */
static pid_t slow_recorder(pid_t target, const char *session)
{
	static const char *const extra[] = { "--ringbuf-size", "4096", NULL };
	char line[64];
	int ready;
	pid_t rk;

	setenv("RINGKEEPER_TEST_SIGNAL_US", "2000", 1);
	rk = start_recorder_on(target, session, &ready, extra);
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
	rk = slow_recorder(wl, "b");
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
