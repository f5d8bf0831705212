// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_trigger.c - record --trigger: each trigger fires on a workload made
 * to hit it and not on one that does not, its snapshot is a bundle cut
 * after it, and the limits hold against a storm.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "craftelf.h"
#include "elfcore.h"
#include "helpers.h"

TestSuite(trigger, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 180);

/* The bundles in ROOT/snaps, and how many. */
static size_t bundles(char names[][600], size_t max)
{
	char dir[200];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/snaps", root);
	d = opendir(dir);
	while (d && (de = readdir(d)))
		if (strstr(de->d_name, ".rkb") && n < max)
			snprintf(names[n++], 600, "%s/%s", dir, de->d_name);
	if (d)
		closedir(d);
	return n;
}

/* `record --root ROOT --session S --snapshot-dir ROOT/snaps --trigger-gap 0 OPTS... -- sh -c CMD`. */
static int record_sh(const char *session, const char *const opts[], const char *cmd,
		     struct rk_session_stat *st, char **out)
{
	char snaps[200], *argv[40], *err = NULL;
	int n = 0, i, rc;

	snprintf(snaps, sizeof(snaps), "%s/snaps", root);
	argv[n++] = (char *)rk_bin;
	argv[n++] = "record";
	argv[n++] = "--root";
	argv[n++] = root;
	argv[n++] = "--session";
	argv[n++] = (char *)session;
	argv[n++] = "--snapshot-dir";
	argv[n++] = snaps;
	argv[n++] = "--trigger-gap";
	argv[n++] = "0";
	for (i = 0; opts[i]; i++)
		argv[n++] = (char *)opts[i];
	argv[n++] = "--";
	argv[n++] = "/bin/sh";
	argv[n++] = "-c";
	argv[n++] = (char *)cmd;
	argv[n] = NULL;
	rc = run_rk(argv, out, &err);
	cr_assert(WIFEXITED(rc), "record did not end: %s", err);
	read_stat(session, st);
	free(err);
	return WEXITSTATUS(rc);
}

/* `show` of @session's history of @tid (all threads: 0) with its RINGKEEPER_TRIGGER lines. */
static char *trigger_lines(const char *session, unsigned int tid)
{
	char cmd[600];
	struct dirent *de;
	char dir[300];
	DIR *d;

	if (tid) {
		snprintf(cmd, sizeof(cmd),
			 "%s show --root %s --session %s %u 2>&1 | grep RINGKEEPER_TRIGGER", rk_bin,
			 root, session, tid);
		return sh_out(cmd, NULL);
	}
	/* Every thread's file: show takes one tid at a time. */
	snprintf(dir, sizeof(dir), "%s/%s/sched", root, session);
	snprintf(cmd, sizeof(cmd), "true");
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		size_t l = strlen(cmd);

		if (de->d_name[0] >= '0' && de->d_name[0] <= '9' && !strchr(de->d_name, '.') &&
		    l + 200 < sizeof(cmd))
			snprintf(cmd + l, sizeof(cmd) - l, "; %s show --root %s --session %s %s",
				 rk_bin, root, session, de->d_name);
	}
	if (d)
		closedir(d);
	strncat(cmd, " 2>&1 | grep RINGKEEPER_TRIGGER", sizeof(cmd) - strlen(cmd) - 1);
	{
		char sh[700];

		snprintf(sh, sizeof(sh), "{ %s; }", cmd);
		return sh_out(sh, NULL);
	}
}

/*
 * Each trigger on a workload made to hit it, and on one that does not:
 * delay (two spinners on one CPU wait for it; a sleeper on an idle CPU
 * does not wait 200 ms), blocked (a 0.4 s sleep in S; 2 ms sleeps are
 * not), killed (kill -9 from the shell; a clean exit is not), exit (a
 * status of 3; 0 is not). Each fired one is a record in the history and
 * a bundle.
 */
Test(trigger, each_fires_on_a_workload_made_to_hit_it_and_not_on_one_that_does_not)
{
	static const struct {
		const char *name, *opt, *hit, *miss, *says;
	} cases[] = {
		/*
		 * Spins of ~15 ms, far past a slice: the scheduler preempts one
		 * spinner for the other at a tick, and it waits a slice or more.
		 * With spins of 1.5 ms (-l 3000000) each yielded before any
		 * preemption and waited about as long as the threshold: delay:1
		 * missed once in a fresh-clone CI run.
		 */
		{ "delay", "delay:1", "taskset -c 0 %s -t 2 -i 10 -s 0 -l 30000000 >/dev/null",
		  NULL, "for a CPU" },
		{ "delay", "delay:200", NULL, "%s -t 1 -i 50 -s 2000 >/dev/null", NULL },
		{ "blocked", "blocked:200:S", "sleep 0.4", "%s -t 1 -i 50 -s 2000 >/dev/null",
		  "off CPU in S" },
		{ "killed", "killed", "sleep 5 & sleep 0.2; kill -9 $!; wait", "sleep 0.1",
		  "killed by signal 9, sent by pid" },
		{ "exit", "exit", "sh -c 'exit 3'; true", "sh -c 'exit 0'", "exit status 3" },
	};
	char cmd[400], sess[32], names[8][600];
	struct rk_session_stat st;
	size_t i, k;

	cr_assert_eq(chmod(root, 0755), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (k = 0; k < 2; k++) {
			const char *fmt = k ? cases[i].miss : cases[i].hit;
			const char *opts[] = { "--trigger", cases[i].opt, NULL };
			char *lines, *out = NULL;

			if (!fmt)
				continue;
			snprintf(sess, sizeof(sess), "%s-%zu-%zu", cases[i].name, i, k);
			snprintf(cmd, sizeof(cmd), fmt, workload);
			record_sh(sess, opts, cmd, &st, &out);
			lines = trigger_lines(sess, 0);
			printf("%s (%s) on '%s': %llu fired, %llu snapshots\n", cases[i].name,
			       cases[i].opt, cmd, (unsigned long long)st.triggers,
			       (unsigned long long)st.snapshots);
			if (k) {
				cr_assert_eq(st.triggers, 0, "%s fired on '%s':\n%s", cases[i].opt,
					     cmd, lines);
			} else {
				cr_assert_gt(st.triggers, 0, "%s did not fire on '%s'",
					     cases[i].opt, cmd);
				cr_assert_eq(st.snapshots + st.triggers_dropped, st.triggers);
				cr_assert_gt(st.snapshots, 0, "no snapshot written");
				cr_assert_not_null(strstr(lines, cases[i].says),
						   "no '%s' in the histories:\n%s", cases[i].says,
						   lines);
			}
			free(lines);
			free(out);
		}
	}
	cr_assert_gt(bundles(names, 8), 0);
}

/*
 * SIGKILL to a traced multi-threaded process: its snapshot, cut after its
 * last thread finished, has every thread's last switch (a final
 * switch-out) and names the sender; the bundle is root's, mode 0600.
 */
Test(trigger, a_sigkilled_process_leaves_a_snapshot_with_every_thread_s_last_switch)
{
	char snaps[200], line[64], names[4][600], *s;
	const char *extra[] = {
		"--trigger", "killed", "--snapshot-dir", snaps, "--",	workload, "-t",
		"4",	     "-i",     "100000",	 "-s",	"1000", NULL
	};
	struct rk_core_bufs b;
	struct stat sb;
	const char *why = NULL;
	int ready, status, lasts = 0;
	pid_t rk, wl = 0;
	size_t i, n;

	snprintf(snaps, sizeof(snaps), "%s/snaps", root);
	rk = start_recorder_on(0, "k", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "not ready");
	close(ready);
	/* The workload is the recorder's child: its pid from the session's stat. */
	{
		struct rk_session_stat st;

		for (i = 0; i < 200 && !wl; i++) {
			read_stat("k", &st);
			wl = (pid_t)st.target_pid;
			usleep(10000);
		}
	}
	cr_assert_gt(wl, 0);
	usleep(200000); /* its threads exist and run: a history to keep */
	cr_assert_eq(kill(wl, SIGKILL), 0);
	status = wait_for(rk, 30000);
	cr_assert(WIFEXITED(status), "recorder: 0x%x", status);
	n = bundles(names, 4);
	cr_assert_eq(n, 1, "%zu bundles", n);
	cr_assert_eq(stat(names[0], &sb), 0);
	cr_assert_eq(sb.st_uid, 0);
	cr_assert_eq(sb.st_mode & 0777, 0600);
	cr_assert_eq(rk_core_bufs__load(names[0], &b, &why), 0, "%s", why ? why : "");
	cr_assert_not_null(strstr(b.session, "killed by signal 9 (SIGKILL), sent by pid"),
			   "the reason does not name the sender:\n%s", b.session);
	for (i = 0; i < b.n; i++) {
		struct check c;
		char tmp[300];
		FILE *f;

		if (b.v[i].type != RK_NOTE_BUFFER || b.v[i].why ||
		    b.v[i].bf.ident->tgid != (__u32)wl || strncmp(b.v[i].name, "sched/", 6))
			continue;
		/* check_file() reads a file: the cut buffer as one. */
		snprintf(tmp, sizeof(tmp), "%s/buf", root);
		f = fopen(tmp, "we");
		cr_assert_not_null(f);
		cr_assert_eq(fwrite(b.v[i].mem, 1, b.v[i].size, f), b.v[i].size);
		fclose(f);
		check_file(tmp, &c, NULL);
		cr_assert_eq(c.last_switch, 2, "%s: its history does not end switched out",
			     b.v[i].name);
		lasts++;
	}
	cr_assert_eq(lasts, 5, "the main thread and 4 others: %d", lasts);
	rk_core_bufs__free(&b);
	s = trigger_lines("k", (unsigned int)wl);
	cr_assert_not_null(strstr(s, "sent by pid"), "no trigger in its history:\n%s", s);
	free(s);
}

/*
 * The operator's trigger: `snapshot --trigger` makes the recorder take a
 * bundle and prints it; a second within --trigger-gap is refused, said,
 * and counted; the window keeps only the last 100 ms before T.
 */
Test(trigger, snapshot_trigger_asks_the_recorder_and_the_gap_holds)
{
	char snaps[200], line[64], cmd[600], names[4][600], *s, *t;
	const char *extra[] = { "--trigger",
				"signal",
				"--snapshot-dir",
				snaps,
				"--snapshot-window",
				"100",
				"--",
				workload,
				"-t",
				"2",
				"-i",
				"2000",
				"-s",
				"500",
				NULL };
	unsigned long long tns, first = ~0ull;
	struct rk_session_stat st;
	struct rk_core_bufs b;
	const char *why = NULL;
	int ready, status;
	size_t i;
	pid_t rk;

	snprintf(snaps, sizeof(snaps), "%s/snaps", root);
	rk = start_recorder_on(0, "op", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "not ready");
	close(ready);
	usleep(300000);
	snprintf(cmd, sizeof(cmd), "%s snapshot --trigger --root %s op 2>&1", rk_bin, root);
	s = sh_out(cmd, &status);
	cr_assert_eq(status, 0, "%s", s);
	cr_assert_not_null(strstr(s, snaps), "where it went is not said: %s", s);
	free(s);
	s = sh_out(cmd, &status);
	cr_assert_neq(status, 0, "a second snapshot within the gap: %s", s);
	cr_assert_not_null(strstr(s, "--trigger-gap"), "%s", s);
	free(s);
	kill(rk, SIGINT);
	wait_for(rk, 30000);
	read_stat("op", &st);
	cr_assert_eq(st.snapshots, 1);
	cr_assert_eq(st.triggers_dropped, 1);
	cr_assert_eq(bundles(names, 4), 1);
	cr_assert_eq(rk_core_bufs__load(names[0], &b, &why), 0, "%s", why ? why : "");
	t = strstr(b.session, "snapshot time ");
	cr_assert(t && sscanf(t, "snapshot time %llu", &tns) == 1, "%s", b.session);
	for (i = 0; i < b.n; i++) {
		const struct rk_core_buf *cb = &b.v[i];
		struct rk_bufile bf = cb->bf;
		__u64 head, tail;

		if (cb->type != RK_NOTE_BUFFER || cb->why || rk_bufile__ring(&bf, &head, &tail))
			continue;
		if (head > tail) {
			/* The first record's time: sample_id's time at the end of a sched record. */
			const struct perf_event_header *h =
				(const void *)(bf.data + (tail & (bf.data_size - 1)));
			__u64 tm = rk_record_time(bf.pmu->attr.sample_type, h);

			if (tm && tm < first)
				first = tm;
		}
	}
	rk_core_bufs__free(&b);
	cr_assert_neq(first, ~0ull, "no record in the bundle");
	cr_assert_geq(first + 100000000ull, tns, "a record %.3f ms before T: the window is 100 ms",
		      (tns - first) / 1e6);
}

/*
 * A traced user's storm of non-zero exits: the snapshots kept stay within
 * --snapshot-max, every trigger is in a history and counted, and the
 * bundles are root's (the user reads none of them).
 */
Test(trigger, a_storm_of_triggers_is_bounded_and_counted)
{
	const char *opts[] = { "--trigger", "exit", "--snapshot-max", "4", NULL };
	char names[64][600], *out = NULL;
	struct rk_session_stat st;
	size_t n, i;
	struct stat sb;

	cr_assert_eq(chmod(root, 0755), 0);
	record_sh("storm", opts,
		  "exec setpriv --reuid=65534 --regid=65534 --clear-groups "
		  "/bin/sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sh -c \"exit 1\"; "
		  "sleep 0.05; done'",
		  &st, &out);
	n = bundles(names, 64);
	printf("storm: %llu triggers, %llu snapshots, %llu dropped, %llu removed, %zu kept\n",
	       (unsigned long long)st.triggers, (unsigned long long)st.snapshots,
	       (unsigned long long)st.triggers_dropped, (unsigned long long)st.snapshots_removed,
	       n);
	cr_assert_eq(st.triggers, 12, "12 exits with status 1: %llu triggers",
		     (unsigned long long)st.triggers);
	cr_assert_eq(st.snapshots + st.triggers_dropped, st.triggers);
	cr_assert_leq(n, 4, "%zu bundles kept past --snapshot-max 4", n);
	cr_assert_eq(n + st.snapshots_removed, st.snapshots);
	for (i = 0; i < n; i++) {
		cr_assert_eq(stat(names[i], &sb), 0);
		cr_assert(sb.st_uid == 0 && (sb.st_mode & 0077) == 0, "%s is not root's alone",
			  names[i]);
		cr_assert_not_null(strstr(names[i], ".u65534.rkb"), "%s: not the user's", names[i]);
	}
	free(out);
}

/*
 * Debian's perf reads every perf.data export of a session with triggers:
 * the session's and its bundle's, with wakeups and off-CPU stacks in them
 * too. A trigger record once went into the export as it was, and perf
 * script stopped at it ("failed to process type: 21070", exit 234).
 */
Test(trigger, perf_reads_the_exports_of_a_session_and_its_bundle)
{
	const char *opts[] = { "--trigger", "exit", "--wakeups", "--offcpu", NULL };
	char cmd[1400], names[4][600], data[300], *s, *out = NULL;
	struct rk_session_stat st;
	int status;
	size_t n;

	if (access("/usr/bin/perf", X_OK))
		cr_skip_test("perf is not installed");
	if (in_vmtest())
		cr_skip_test("perf reads back our own exports, the same on every kernel: the host "
			     "does");
	snprintf(cmd, sizeof(cmd), "%s -t 2 -i 20 -s 1000 >/dev/null; sh -c 'exit 3'; true",
		 workload);
	record_sh("pd", opts, cmd, &st, &out);
	cr_assert_eq(st.triggers, 1, "%llu triggers", (unsigned long long)st.triggers);
	n = bundles(names, 4);
	cr_assert_eq(n, 1, "%zu bundles", n);

	snprintf(data, sizeof(data), "%s/session.data", root);
	snprintf(cmd, sizeof(cmd), "%s export --root %s --session pd --perf-data %s 2>&1", rk_bin,
		 root, data);
	s = sh_out(cmd, &status);
	cr_assert_eq(status, 0, "%s", s);
	cr_assert_not_null(strstr(s, "1 trigger records are not in it"), "not said:\n%s", s);
	free(s);
	assert_perf_reads(data);

	snprintf(data, sizeof(data), "%s/bundle.data", root);
	snprintf(cmd, sizeof(cmd), "%s export --bundle %s --perf-data %s 2>&1", rk_bin, names[0],
		 data);
	s = sh_out(cmd, &status);
	cr_assert_eq(status, 0, "%s", s);
	cr_assert_not_null(strstr(s, "1 trigger records are not in it"), "not said:\n%s", s);
	free(s);
	assert_perf_reads(data);
	free(out);
}

/*
 * A user's process SIGKILLed by root's shell: the trigger's record in that
 * user's own file hides the sender as --wakeups hides another user's waker
 * (pid and tid 0, "another user's task"), unless perf_event_paranoid is -1;
 * the bundle, root's, names it in its reason.
 */
Test(trigger, a_kill_by_another_user_is_hidden_in_the_user_s_file)
{
	const char *opts[] = { "--trigger", "killed", NULL };
	char paranoid[16], cmd[600], *lines, *out = NULL;
	struct rk_session_stat st;

	read_sysctl("/proc/sys/kernel/perf_event_paranoid", paranoid, sizeof(paranoid));
	if (atoi(paranoid) < 0)
		cr_skip_test("perf_event_paranoid is -1: the user may see every sender");
	cr_assert_eq(chmod(root, 0755), 0);
	record_sh("kh", opts,
		  "setpriv --reuid=65534 --regid=65534 --clear-groups sleep 5 & sleep 0.3; "
		  "kill -9 $!; wait",
		  &st, &out);
	cr_assert_eq(st.triggers, 1, "%llu triggers", (unsigned long long)st.triggers);
	lines = trigger_lines("kh", 0);
	cr_assert_not_null(strstr(lines,
				  "trigger: killed by signal 9, sent by another user's task"),
			   "not hidden:\n%s", lines);
	cr_assert_null(strstr(lines, "sent by pid"), "root's sender named:\n%s", lines);
	free(lines);
	snprintf(cmd, sizeof(cmd), "cat %s/kh/snapshots", root);
	lines = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(lines, "killed by signal 9 (SIGKILL), sent by pid"), "%s", lines);
	free(lines);
	free(out);
}

/*
 * Whose a bundle is: the user of the process that fired it when it fired.
 * Root's shell starts short-lived processes as nobody (setpriv: its
 * credentials change, then it exits at once) and nobody runs a setuid-root
 * program that fails (umount): every bundle is nobody's (.u65534.). The
 * file made at the change took its user from /proc, which the loader read
 * after the process was gone: 5 of 60 were booked to root.
 */
Test(trigger, a_short_lived_process_s_bundle_is_its_user_s)
{
	const char *opts[] = { "--trigger", "exit", "--snapshot-max", "200", NULL };
	char names[200][600], *out = NULL;
	struct rk_session_stat st;
	size_t n, i;

	cr_assert_eq(chmod(root, 0755), 0);
	record_sh("who", opts,
		  "for i in $(seq 40); do "
		  "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'exit 1'; "
		  "[ -u /usr/bin/umount ] && setpriv --reuid=65534 --regid=65534 --clear-groups "
		  "umount /nonexistent-rk 2>/dev/null; sleep 0.02; done; true",
		  &st, &out);
	n = bundles(names, 200);
	printf("who: %llu triggers, %llu snapshots, %zu bundles\n", (unsigned long long)st.triggers,
	       (unsigned long long)st.snapshots, n);
	cr_assert_geq(st.triggers, 40, "%llu triggers", (unsigned long long)st.triggers);
	cr_assert_eq(n, st.snapshots);
	cr_assert_gt(n, 20, "%zu bundles", n);
	for (i = 0; i < n; i++)
		cr_assert_not_null(strstr(names[i], ".u65534.rkb"), "%s: not nobody's", names[i]);
	free(out);
}

/*
 * A traced process maps a crafted ELF (970 KB: 40,000 symbols that all name
 * one 10,000-byte string) and exits 1 under --trigger exit
 * --snapshot-max-size 16M: the bundle stays under 16M, says which file's
 * symbols it trimmed and how, and the recorder's peak RSS (its VmHWM, as
 * ru_maxrss reports it once it is waited for) stays far from the 400 MB of
 * names (it wrote a 401 MB bundle and peaked at ~800 MB).
 */
Test(trigger, a_mapped_file_cannot_make_a_bundle_or_the_recorder_unbounded)
{
	const char *opts[] = { "-e",  "dummy", "--trigger", "exit", "--snapshot-max-size",
			       "16M", NULL };
	char elf[300], cmd[1200], names[4][600], *out = NULL, *list;
	struct rk_session_stat st;
	struct rusage ru;
	struct stat sb;
	size_t n;

	snprintf(elf, sizeof(elf), "%s/crafted.so", root);
	cr_assert_eq(craft_elf(elf, 40000, 10000), 0);
	cr_assert_eq(stat(elf, &sb), 0);
	cr_assert_lt(sb.st_size, 1 << 20, "the crafted file is small: %lld", (long long)sb.st_size);
	cr_assert_eq(chmod(root, 0755), 0);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c 'import mmap, os, sys; f = open(sys.argv[1], \"rb\"); "
		 "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC); os._exit(1)' "
		 "%s; true",
		 elf);
	record_sh("bigsyms", opts, cmd, &st, &out);
	cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
	printf("crafted mapping: %llu snapshots, recorder peak RSS %ld KB\n",
	       (unsigned long long)st.snapshots, ru.ru_maxrss);
	snprintf(cmd, sizeof(cmd), "cat %s/bigsyms/snapshots", root);
	list = sh_out(cmd, NULL);
	cr_assert_eq(st.snapshots, 1, "not one snapshot of the exit:\n%s", list);
	free(list);
	n = bundles(names, 4);
	cr_assert_eq(n, 1);
	cr_assert_eq(stat(names[0], &sb), 0);
	cr_assert_leq(sb.st_size, 16 << 20, "a %lld-byte bundle under --snapshot-max-size 16M",
		      (long long)sb.st_size);
	cr_assert_lt(ru.ru_maxrss, 160 * 1024, "the recorder peaked at %ld KB", ru.ru_maxrss);
	snprintf(cmd, sizeof(cmd), "%s show --bundle %s 2>&1", rk_bin, names[0]);
	list = sh_out(cmd, NULL);
	printf("%s", list);
	cr_assert_not_null(strstr(list, "size limit 16777216"), "%s", list);
	snprintf(cmd, sizeof(cmd), "names cut: %s", elf);
	cr_assert_not_null(strstr(list, "symbols trimmed "), "%s", list);
	cr_assert_not_null(strstr(list, cmd), "the bundle does not say it trimmed %s:\n%s", elf,
			   list);
	free(list);
	free(out);
}
