// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Perf event sources: demultiplexed per thread, exported as perf.data and
 * read back by Debian's perf (a real client, not our own reader).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bufile.h"
#include "helpers.h"
#include "session.h"

TestSuite(perf, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 180);

struct scount {
	__u32 tid;
	long samples, foreign, other;
};

static int count_fn(const struct perf_event_header *h, void *ctx)
{
	struct scount *c = ctx;
	__u32 tid;

	if (h->type != PERF_RECORD_SAMPLE) {
		c->other++;
		return 0;
	}
	/* IDENTIFIER, IP, then pid/tid */
	memcpy(&tid, (const __u8 *)h + 8 + 16 + 4, 4);
	c->samples++;
	if (tid != c->tid)
		c->foreign++;
	return 0;
}

static long samples_in(const char *path, __u32 tid)
{
	struct scount c = { .tid = tid };
	const char *msg = NULL;
	struct rk_bufile *bf = rk_bufile__open(path, &msg);

	cr_assert_not_null(bf, "%s: %s", path, msg ? msg : strerror(errno));
	cr_assert_eq(bf->ident->tid, tid);
	cr_assert_eq(rk_bufile__for_each(bf, count_fn, &c), 0, "%s does not parse", path);
	cr_assert_eq(c.foreign, 0, "%s: %ld samples of other threads", path, c.foreign);
	rk_bufile__free(bf);
	return c.samples;
}

static int fork_fn(const struct perf_event_header *h, void *ctx)
{
	if (h->type == PERF_RECORD_FORK)
		memcpy(ctx, (const __u8 *)h + 8 + 16, 8); /* pid, ppid, tid, ptid, time */
	return 0;
}

/* The time of the FORK record in a file (0: none), and the file's start_ns. */
static __u64 fork_time(const char *path, __u64 *start_ns)
{
	const char *msg = NULL;
	struct rk_bufile *bf = rk_bufile__open(path, &msg);
	__u64 t = 0;

	cr_assert_not_null(bf, "%s: %s", path, msg ? msg : strerror(errno));
	cr_assert_eq(rk_bufile__for_each(bf, fork_fn, &t), 0, "%s does not parse", path);
	*start_ns = bf->ident->start_ns;
	rk_bufile__free(bf);
	return t;
}

/*
 * Whether @tid's sched file and @event file both begin at its FORK record's
 * time (made by its fork signal, not on the spot by its first sample):
 * 1 yes, 0 no, -1 it has no FORK record (a launched main thread).
 */
static int began_at_fork(const char *session, const char *event, unsigned int tid)
{
	char path[300];
	__u64 forked, sched_start, ev_start;

	snprintf(path, sizeof(path), "%s/%s/sched/%u", root, session, tid);
	forked = fork_time(path, &sched_start);
	if (!forked)
		return -1;
	snprintf(path, sizeof(path), "%s/%s/%s/%u", root, session, event, tid);
	fork_time(path, &ev_start);
	return sched_start == forked && ev_start == forked;
}

static const char *perf_bin(void)
{
	static const char *const cands[] = { "/usr/bin/perf", "/usr/local/bin/perf", NULL };
	int i;

	for (i = 0; cands[i]; i++)
		if (!access(cands[i], X_OK))
			return cands[i];
	return NULL;
}

/* Run a shell command, its stdout into @out (static buffer); return its status. */
static int sh(const char *cmd, char **out)
{
	char path[128], full[4096];
	int st;

	snprintf(path, sizeof(path), "%s/.sh.out", root);
	snprintf(full, sizeof(full), "(%s) >'%s' 2>&1", cmd, path);
	st = system(full);
	*out = slurp(path);
	return st;
}

Test(perf, samples_go_to_their_thread_and_perf_reads_the_export)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "p",
			 "-e",
			 "cpu-clock,page-faults",
			 "-F",
			 "1999",
			 "-g",
			 "--",
			 (char *)workload,
			 "-t",
			 "4",
			 "-i",
			 "50",
			 "-s",
			 "100",
			 "-l",
			 "400000",
			 NULL };
	char path[300], cmd[1024], *out, *err, *txt;
	unsigned int tids[16];
	long cpu[16], pf[16], total = 0, switches = 0;
	struct rk_session_stat st;
	const char *perf = perf_bin();
	size_t n, i;
	int status = run_rk(argv, &out, &err);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "record: %s", err);
	n = expected_tids(out, tids, 16);
	cr_assert_eq(n, 5, "%s", out);
	for (i = 0; i < n; i++) {
		struct check c;

		snprintf(path, sizeof(path), "%s/p/cpu-clock/%u", root, tids[i]);
		cpu[i] = samples_in(path, tids[i]);
		snprintf(path, sizeof(path), "%s/p/page-faults/%u", root, tids[i]);
		pf[i] = samples_in(path, tids[i]);
		snprintf(path, sizeof(path), "%s/p/sched/%u", root, tids[i]);
		check_file(path, &c, NULL);
		switches += c.in + c.out;
		total += cpu[i] + pf[i];
		if (i) { /* the spinning threads */
			cr_assert_gt(cpu[i], 0, "tid %u has no cpu-clock sample", tids[i]);
			cr_assert_eq(
				began_at_fork("p", "cpu-clock", tids[i]), 1,
				"tid %u: no FORK, or its files do not begin at it (-1: no FORK)",
				tids[i]);
		}
	}
	read_stat("p", &st);
	cr_assert_eq(st.nev, 2);
	cr_assert_eq(st.evcpu, 0, "-- CMD keeps per-task events (evcpu %u)", st.evcpu);
	cr_assert_eq(st.perf_lost, 0);
	cr_assert_eq(st.lost, 0, "records with no thread to go to");
	cr_assert_gt(st.sideband, 0, "no mmap/comm/task records in the sideband");
	free(out);
	free(err);

	/* Export and let perf itself read it. */
	{
		char data[200];
		char *ev[] = { (char *)rk_bin, "export", "--root", root, "--session", "p",
			       "--perf-data",  data,	 NULL };

		snprintf(data, sizeof(data), "%s/all.data", root);
		status = run_rk(ev, NULL, &err);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "export: %s", err);
		free(err);
	}
	if (!perf)
		cr_skip_test("perf is not installed (apt-get install linux-perf): the export was "
			     "written but not checked by perf");
	/* Per thread and event, perf script sees exactly the samples of our files. */
	for (i = 0; i < n; i++) {
		long got_cpu = 0, got_pf = 0;
		const char *p;

		snprintf(cmd, sizeof(cmd), "%s script -i %s/all.data -F tid,event --tid %u", perf,
			 root, tids[i]);
		cr_assert_eq(sh(cmd, &txt), 0, "%s: %s", cmd, txt);
		for (p = txt; (p = strstr(p, "cpu-clock")); p++)
			got_cpu++;
		for (p = txt; (p = strstr(p, "page-faults")); p++)
			got_pf++;
		printf("tid %u: cpu-clock %ld (perf script %ld), page-faults %ld (perf script %ld)\n",
		       tids[i], cpu[i], got_cpu, pf[i], got_pf);
		cr_assert_eq(got_cpu, cpu[i], "tid %u cpu-clock: perf %ld, ours %ld", tids[i],
			     got_cpu, cpu[i]);
		cr_assert_eq(got_pf, pf[i], "tid %u page-faults: perf %ld, ours %ld", tids[i],
			     got_pf, pf[i]);
	}
	/* The totals perf counts, switches included. */
	snprintf(cmd, sizeof(cmd), "%s report -i %s/all.data --stats", perf, root);
	cr_assert_eq(sh(cmd, &txt), 0, "%s", txt);
	{
		long samples = -1, sw = -1;
		const char *p = strstr(txt, "SAMPLE events:");

		if (p)
			sscanf(p, "SAMPLE events: %ld", &samples);
		p = strstr(txt, "SWITCH events:");
		if (p)
			sscanf(p, "SWITCH events: %ld", &sw);
		/*
		 * And sched's switches as sched:sched_switch samples: one per
		 * switch-out or -in, one for both sides of a switch between two
		 * traced threads on a CPU.
		 */
		long sched_tp = -1;
		char *tp = NULL;

		snprintf(cmd, sizeof(cmd),
			 "%s script -i %s/all.data -F event | grep -c sched_switch", perf, root);
		sh(cmd, &tp);
		sched_tp = atol(tp);
		cr_assert(sched_tp >= switches / 2 && sched_tp <= switches,
			  "%ld sched_switch samples for %ld switch records", sched_tp, switches);
		cr_assert_eq(samples, total + sched_tp,
			     "perf counts %ld samples, our files %ld and %ld sched_switch", samples,
			     total, sched_tp);
		cr_assert_eq(sw, switches, "perf counts %ld switches, our files %ld", sw, switches);
	}
	/* A known function of the workload, symbolized in the call chains. */
	snprintf(cmd, sizeof(cmd),
		 "%s report -i %s/all.data --stdio --no-children --sort sym -g caller", perf, root);
	cr_assert_eq(sh(cmd, &txt), 0, "%s", txt);
	cr_assert_not_null(strstr(txt, "body"), "'body' not in perf report: %.2000s", txt);
	snprintf(cmd, sizeof(cmd), "%s script -i %s/all.data -F ip,sym", perf, root);
	cr_assert_eq(sh(cmd, &txt), 0, "%s", txt);
	cr_assert_not_null(strstr(txt, "body"), "'body' not in perf script call chains");

	/* --tid exports one thread: perf sees only its samples. */
	{
		char data[200], tid[16];
		char *ev[] = { (char *)rk_bin, "export", "--root", root, "--tid", tid,
			       "--perf-data",  data,	 NULL };
		long got = 0;
		const char *p;

		snprintf(data, sizeof(data), "%s/one.data", root);
		snprintf(tid, sizeof(tid), "%u", tids[1]);
		status = run_rk(ev, NULL, &err);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "export: %s", err);
		free(err);
		snprintf(cmd, sizeof(cmd), "%s script -i %s -F tid,event", perf, data);
		cr_assert_eq(sh(cmd, &txt), 0, "%s", txt);
		for (p = txt; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
			unsigned int t;

			const char *nl = strchr(p, '\n'), *sc = strstr(p, "sched:sched_");

			/* sched's tracepoints: a switch-in's sample is the idle task's (tid 0). */
			if (sc && (!nl || sc < nl))
				continue;
			if (sscanf(p, " %u", &t) == 1) {
				cr_assert_eq(t, tids[1], "a sample of tid %u in a --tid %u export",
					     t, tids[1]);
				got++;
			}
		}
		cr_assert_eq(got, cpu[1] + pf[1]);
	}
}

/*
 * -e given twice records both lists, as perf record does (before, the
 * second -e replaced the first: no cpu-clock file, no word said).
 */
Test(perf, repeated_e_options_record_every_event)
{
	char *argv[] = {
		(char *)rk_bin, "record", "--root",	 root, "--session", "two", "-e",
		"cpu-clock",	"-e",	  "page-faults", "-F", "999",	    "--",  (char *)workload,
		"-t",		"2",	  "-i",		 "20", "-s",	    "100", "-l",
		"400000",	NULL
	};
	char path[300], *out, *err;
	unsigned int tids[8];
	long cpu = 0, pf = 0;
	struct rk_session_stat st;
	size_t n, i;
	int status = run_rk(argv, &out, &err);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "record: %s", err);
	n = expected_tids(out, tids, 8);
	cr_assert_eq(n, 3, "%s", out);
	read_stat("two", &st);
	cr_assert_eq(st.nev, 2, "%u sources for -e cpu-clock -e page-faults", st.nev);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/two/cpu-clock/%u", root, tids[i]);
		cpu += samples_in(path, tids[i]);
		snprintf(path, sizeof(path), "%s/two/page-faults/%u", root, tids[i]);
		pf += samples_in(path, tids[i]);
	}
	cr_assert_gt(cpu, 0, "no cpu-clock sample: the first -e was dropped");
	cr_assert_gt(pf, 0, "no page-faults sample");
	free(out);
	free(err);
}

/*
 * Hundreds of threads sampled from their first microseconds: a drain hands
 * out the fork signals before it routes samples of the same time, so no
 * thread is made on the spot by a sample (no name, the wrong start): each
 * event file begins at its thread's fork, like its sched file.
 */
Test(perf, every_thread_is_known_from_its_fork_before_its_first_sample)
{
	const char *fanout = getenv("RK_FANOUT");
	char cmd[600], path[300], *out, *err;
	char *argv[] = { (char *)rk_bin, "record",    "--root", root,	 "--session", "f",
			 "-e",		 "cpu-clock", "-F",	"20000", "--",	      "/bin/sh",
			 "-c",		 cmd,	      NULL };
	static unsigned int tids[1024];
	size_t n, i, threads = 0, early = 0;
	int status;

	if (!fanout)
		cr_skip_test("RK_FANOUT not set: run through 'make integration'");
	/* 300 threads, 100 of them spinning at once (fanout waits for EOF on stdin). */
	snprintf(cmd, sizeof(cmd), "exec '%s' -t 300 -i 3 -s 1000 -b 100 </dev/null", fanout);
	status = run_rk(argv, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "record: %s", err);
	snprintf(path, sizeof(path), "%s/f/cpu-clock", root);
	n = files_in(path, tids, 1024);
	cr_assert_gt(n, 250, "%zu threads have a cpu-clock file", n);
	for (i = 0; i < n; i++) {
		int b = began_at_fork("f", "cpu-clock", tids[i]);

		if (b < 0)
			continue; /* the main thread: launched, not forked */
		threads++;
		early += !b;
	}
	cr_assert_geq(threads, 300);
	cr_assert_eq(early, 0, "%zu of %zu threads were made by a sample before their fork", early,
		     threads);
	free(out);
	free(err);
}

Test(perf, tracepoint_samples_per_thread)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "t",
			 "-e",
			 "syscalls:sys_enter_clock_nanosleep",
			 "--",
			 (char *)workload,
			 "-t",
			 "3",
			 "-i",
			 "4",
			 NULL };
	unsigned int tids[8];
	char path[300], *out, *err;
	size_t n, i;
	int status = run_rk(argv, &out, &err);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "record: %s", err);
	n = expected_tids(out, tids, 8);
	cr_assert_eq(n, 4);
	/*
	 * Each thread sleeps exactly 4 times (glibc's nanosleep is
	 * clock_nanosleep), each in its own file. The main thread is not the
	 * subject: on the 6.12 guest it was seen making one such call (not
	 * understood yet), so its count is printed, not asserted.
	 */
	for (i = 0; i < n; i++) {
		long got;

		snprintf(path, sizeof(path), "%s/t/syscalls:sys_enter_clock_nanosleep/%u", root,
			 tids[i]);
		got = samples_in(path, tids[i]);
		if (!i)
			printf("main thread %u: %ld clock_nanosleep samples\n", tids[i], got);
		else
			cr_assert_eq(got, 4, "tid %u: %ld samples", tids[i], got);
	}
	free(out);
	free(err);
}

/*
 * Tracepoints end to end: show prints each sample's fields (from the
 * formats the recorder saved), the export carries the tracing data so perf
 * script prints the same fields and perf report reads it; without the saved
 * formats export falls back to this kernel's (same ids); a tracepoint whose
 * format nobody has is refused loudly, with no file written.
 */
Test(perf, tracepoints_end_to_end_fields_in_show_and_in_perf)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "tp",
			 "-e",
			 "sched:sched_wakeup,syscalls:sys_enter_clock_nanosleep",
			 "--",
			 (char *)workload,
			 "-t",
			 "2",
			 "-i",
			 "4",
			 NULL };
	const char *perf = perf_bin();
	char cmd[2048], path[300], *out, *err, *txt;
	unsigned int tids[8];
	long theirs;
	size_t n, i;
	int status, fd;

	if (!perf)
		cr_skip_test("perf is not installed");
	status = run_rk(argv, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "record: %s", err);
	n = expected_tids(out, tids, 8);
	cr_assert_eq(n, 3);
	free(out);
	free(err);

	/* show: the fields of the thread's clock_nanosleep calls, as perf names them. */
	snprintf(cmd, sizeof(cmd),
		 "%s show --root %s --session tp -e syscalls:sys_enter_clock_nanosleep %u | "
		 "grep -c 'sys_enter_clock_nanosleep: __syscall_nr=230 which_clock=0x0 flags=0x0 "
		 "rqtp=0x'",
		 rk_bin, root, tids[1]);
	cr_assert_eq(sh(cmd, &txt), 0, "%s", txt);
	cr_assert_eq(atol(txt), 4, "show's field lines: %s", txt);
	/*
	 * JSON: the fields as an object. (sched_wakeup is recorded too, for a
	 * second system in the tracing data, but whether a traced thread was
	 * current at a wakeup is the scheduler's business: not counted on.)
	 */
	snprintf(cmd, sizeof(cmd),
		 "%s show --json --root %s --session tp -e syscalls:sys_enter_clock_nanosleep %u | "
		 "grep -c '\"fields\":{\"__syscall_nr\":230,\"which_clock\":\"0x0\",'",
		 rk_bin, root, tids[1]);
	sh(cmd, &txt);
	cr_assert_eq(atol(txt), 4, "show --json fields: %s", txt);

	/* perf reads the export: the same samples, with their fields. */
	snprintf(cmd, sizeof(cmd), "%s export --root %s --session tp --perf-data %s/tp.data",
		 rk_bin, root, root);
	cr_assert_eq(sh(cmd, &txt), 0, "%s", txt);
	snprintf(cmd, sizeof(cmd),
		 "%s script -i %s/tp.data 2>/dev/null | grep -c 'sys_enter_clock_nanosleep: .*"
		 "which_clock: 0x00000000'",
		 perf, root);
	sh(cmd, &txt);
	theirs = atol(txt);
	/* Two threads sleep 4 times each (the main thread's calls are not counted on). */
	cr_assert_geq(theirs, 8, "perf script prints %ld clock_nanosleep samples with fields",
		      theirs);
	snprintf(cmd, sizeof(cmd),
		 "%s script -i %s/tp.data 2>/dev/null | grep -c 'sched:sched_wakeup: comm=.*prio=' "
		 "|| true",
		 perf, root);
	sh(cmd, &txt);
	printf("perf script: %ld sched_wakeup samples with fields\n", atol(txt));
	snprintf(cmd, sizeof(cmd), "%s report -i %s/tp.data --stdio 2>&1 >/dev/null", perf, root);
	cr_assert_eq(sh(cmd, &txt), 0, "perf report refuses the export: %s", txt);

	/* No saved formats: this kernel's, whose ids are the same. */
	snprintf(path, sizeof(path), "%s/tp/tracing_data", root);
	cr_assert_eq(unlink(path), 0);
	snprintf(cmd, sizeof(cmd), "%s export --root %s --session tp --perf-data %s/tp2.data",
		 rk_bin, root, root);
	cr_assert_eq(sh(cmd, &txt), 0, "export without saved formats: %s", txt);
	snprintf(cmd, sizeof(cmd),
		 "%s script -i %s/tp2.data 2>/dev/null | grep -c 'which_clock: 0x00000000'", perf,
		 root);
	sh(cmd, &txt);
	cr_assert_gt(atol(txt), 0, "perf script prints no fields from the fallback's export");

	/* A tracepoint id nobody has a format for: refused, nothing written. */
	for (i = 0; i < n; i++) {
		__u64 id = 999999;

		snprintf(path, sizeof(path), "%s/tp/sched:sched_wakeup/%u", root, tids[i]);
		fd = open(path, O_RDWR);
		if (fd < 0)
			continue; /* a thread that was not woken */
		cr_assert_eq(pwrite(fd, &id, 8, RK_PMU_OFFSET + 8), 8); /* attr.config */
		close(fd);
	}
	snprintf(cmd, sizeof(cmd), "%s export --root %s --session tp --perf-data %s/tp3.data",
		 rk_bin, root, root);
	status = sh(cmd, &txt);
	cr_assert_neq(status, 0, "export wrote a file perf cannot read: %s", txt);
	cr_assert_not_null(strstr(txt, "no file is written"), "%s", txt);
	snprintf(path, sizeof(path), "%s/tp3.data", root);
	cr_assert_neq(access(path, F_OK), 0, "%s exists", path);
}

/*
 * Symbols like perf's: the same function for every frame of every sample in
 * show and in perf script on the export (tests/symcmp.py compares them
 * frame by frame), libc's start_thread through its debug file
 * (/usr/lib/debug/.build-id, libc6-dbg) and the vdso's clock_gettime.
 */
Test(perf, show_and_perf_name_the_same_functions)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "y",
			 "-e",
			 "cpu-clock",
			 "-F",
			 "4000",
			 "-g",
			 "--",
			 (char *)workload,
			 "-t",
			 "2",
			 "-i",
			 "10",
			 "-l",
			 "50000",
			 "-T",
			 NULL };
	const char *perf = perf_bin();
	char cmd[1024], repo[256], *txt, *err;
	int status;

	if (!perf)
		cr_skip_test("perf is not installed");
	status = run_rk(argv, NULL, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	free(err);
	snprintf(cmd, sizeof(cmd), "%s export --root %s --session y -o %s/y.data", rk_bin, root,
		 root);
	cr_assert_eq(sh(cmd, &txt), 0, "%s", txt);
	source_tree(repo, sizeof(repo), NULL, 0);
	snprintf(cmd, sizeof(cmd), "python3 %s/tests/symcmp.py %s %s y cpu-clock %s/y.data", repo,
		 rk_bin, root, root);
	status = sh(cmd, &txt);
	cr_assert_eq(status, 0, "show and perf script disagree:\n%s", txt);
	cr_assert_not_null(strstr(txt, "start_thread True vdso True"),
			   "start_thread (libc6-dbg) or the vdso not named:\n%s", txt);

	/* The header features perf reads: machine, command, clock, build ids. */
	snprintf(cmd, sizeof(cmd), "%s report -i %s/y.data --header-only 2>&1", perf, root);
	sh(cmd, &txt);
	cr_assert_not_null(strstr(txt, "# cmdline : ringkeeper record -- "), "%s", txt);
	cr_assert_not_null(strstr(txt, "# hostname : "), "%s", txt);
	cr_assert_not_null(strstr(txt, "# os release : "), "%s", txt);
	cr_assert_not_null(strstr(txt, "# nrcpus online : "), "%s", txt);
	cr_assert_not_null(strstr(txt, "# clockid frequency: "), "%s", txt);
	snprintf(cmd, sizeof(cmd),
		 "%s buildid-list -i %s/y.data 2>&1 | grep -c \"^$(readelf -n %s | "
		 "awk '/Build ID/{print $3}') %s$\"",
		 perf, root, workload, workload);
	sh(cmd, &txt);
	cr_assert_eq(atoi(txt), 1, "perf buildid-list lacks the workload's build id: %s", txt);
}

/*
 * A quiet thread's history survives a busy neighbour: with small buffers,
 * its own ring keeps every switch it made, where a per-CPU overwrite ring
 * (perf record --overwrite) keeps only the busy thread's last events.
 */
Test(perf, quiet_thread_survives_busy_neighbour)
{
	char *argv[] = {
		(char *)rk_bin, "record",	  "--root", root, "--session", "q",  "-m", "4K",
		"--",		(char *)workload, "-Q",	    "-i", "20000",     "-s", "1",  NULL
	};
	unsigned int busy = 0, quiet = 0;
	char path[300], cmd[1024], *out, *err, *txt;
	const char *perf = perf_bin(), *p;
	struct rk_bufile *bf;
	struct check c;
	long ours, theirs = 0, perf_quiet = 0;
	int status = run_rk(argv, &out, &err);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "record: %s", err);
	p = strstr(out, "busy ");
	cr_assert(p && sscanf(p, "busy %u", &busy) == 1, "%s", out);
	p = strstr(out, "quiet ");
	cr_assert(p && sscanf(p, "quiet %u", &quiet) == 1, "%s", out);
	snprintf(path, sizeof(path), "%s/q/sched/%u", root, busy);
	check_file(path, &c, &bf);
	cr_assert_gt(bf->ident->overwritten, 0, "the busy thread should have wrapped its ring");
	rk_bufile__free(bf);
	snprintf(path, sizeof(path), "%s/q/sched/%u", root, quiet);
	check_file(path, &c, &bf);
	cr_assert_eq(bf->ident->overwritten, 0, "the quiet thread lost history");
	cr_assert_eq(c.fork, 1, "its birth is there");
	cr_assert_eq(c.exit_rec, 1, "its exit is there");
	assert_switches_cover(&c, out, path);
	cr_assert_eq(c.last_switch, 2);
	ours = c.in + c.out;
	rk_bufile__free(bf);
	free(out);
	free(err);
	if (!perf) {
		printf("quiet thread: ringkeeper kept all %ld switches; perf not installed, no "
		       "comparison\n",
		       ours);
		return;
	}
	/* The same workload under one per-CPU overwrite ring of one page. */
	snprintf(
		cmd, sizeof(cmd),
		"%s record -q --overwrite -m 1 -e sched:sched_switch -o %s/q.data -- %s -Q -i 20000 "
		"-s 1 >%s/q.out",
		perf, root, workload, root);
	cr_assert_eq(sh(cmd, &txt), 0, "%s", txt);
	snprintf(path, sizeof(path), "%s/q.out", root);
	p = strstr(slurp(path), "quiet ");
	cr_assert(p && sscanf(p, "quiet %u", &quiet) == 1);
	snprintf(cmd, sizeof(cmd), "%s script -i %s/q.data -F trace", perf, root);
	cr_assert_eq(sh(cmd, &txt), 0, "%s", txt);
	for (p = txt; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		char needle[64];
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char line[512];

		snprintf(line, sizeof(line), "%.*s", (int)(len < 511 ? len : 511), p);
		theirs++;
		snprintf(needle, sizeof(needle), "prev_pid=%u ", quiet);
		if (strstr(line, needle))
			perf_quiet++;
		snprintf(needle, sizeof(needle), "next_pid=%u ", quiet);
		if (strstr(line, needle))
			perf_quiet++;
	}
	printf("quiet thread, 10 wakeups next to a thread switching ~40,000 times:\n"
	       "  ringkeeper (own 4 KiB ring):              %ld of its switches kept\n"
	       "  perf record --overwrite -m 1 (per CPU):   %ld of its switches kept "
	       "(%ld events in the rings)\n",
	       ours, perf_quiet, theirs);
	cr_assert_lt(perf_quiet, ours,
		     "the per-CPU overwrite ring kept the quiet thread's whole history: the "
		     "comparison shows nothing");
}

Test(perf, bad_events_get_clear_errors)
{
	{
		char *a[] = { (char *)rk_bin, "record", "-e", "foo", "--", "/bin/true", NULL };

		expect_error(a, 2, "unknown event 'foo'");
	}
	{
		char *a[] = { (char *)rk_bin, "record",	   "-e", "nosuch:tracepoint",
			      "--",	      "/bin/true", NULL };

		expect_error(a, 2, "unknown tracepoint 'nosuch:tracepoint'");
	}
	{
		char *a[] = { (char *)rk_bin, "record",	   "-e", "cpu-clock,cpu-clock",
			      "--",	      "/bin/true", NULL };

		expect_error(a, 2, "given twice");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "-F", "99", "--", "/bin/true", NULL };

		expect_error(a, 2, "apply to -e events");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "-e", "cpu-clock", "-F", "99",
			      "-c",	      "10",	"--", "/bin/true", NULL };

		expect_error(a, 2, "not both");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "--root", root,	       "-e", "cpu-clock",
			      "-F",	      "900000", "--",	  "/bin/true", NULL };

		expect_error(a, 1, "too high -F?");
	}
	if (access("/sys/bus/event_source/devices/cpu", F_OK)) {
		char *a[] = { (char *)rk_bin, "record", "--root",    root, "-e",
			      "cycles",	      "--",	"/bin/true", NULL };
		char *err, path[300];
		unsigned int n;

		expect_error(a, 1, "not supported on this machine");
		/* We stopped the command: not reported as the command's fate; no session left. */
		cr_assert_eq(run_rk(a, NULL, &err) != 0, 1);
		cr_assert_null(strstr(err, "killed by signal"), "%s", err);
		free(err);
		snprintf(path, sizeof(path), "%s", root);
		n = 0;
		{
			DIR *d = opendir(path);
			struct dirent *de;

			while (d && (de = readdir(d)))
				n += de->d_name[0] != '.';
			if (d)
				closedir(d);
		}
		cr_assert_eq(n, 0, "a failed record left a session in %s", root);
	} else {
		printf("this machine has a CPU PMU: the 'cycles not supported' case is not tested\n");
	}
}

/* -p: mappings that existed before attach are synthesized, so samples resolve. */
Test(perf, attach_synthesizes_existing_mappings_and_show_resolves)
{
	char wo[128], we[128], go_fd[16], line[64], e[128];
	char cmd[1024], *txt;
	unsigned int tids[8];
	int gp[2], ready, st;
	pid_t wl, rk;
	size_t n, i;

	cr_assert_eq(pipe(gp), 0);
	snprintf(go_fd, sizeof(go_fd), "%d", gp[0]);
	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	{
		char *argv[] = { (char *)workload, "-t", "2",	"-i", "100", "-s", "100", "-l",
				 "400000",	   "-w", go_fd, NULL };

		wl = spawn(argv, wo, we, gp[0]);
	}
	close(gp[0]);
	{
		/* 128K: what -m defaults to with one -e event and the default budget. */
		const char *const extra[] = { "-m", "128K", "-e", "cpu-clock",
					      "-F", "1999", "-g", NULL };

		rk = start_recorder_on(wl, "a", &ready, extra);
	}
	snprintf(e, sizeof(e), "%s/.rk.err", root);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "%s", slurp(e));
	cr_assert_eq(write(gp[1], "g", 1), 1);
	close(gp[1]);
	st = wait_for(wl, 60000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = wait_for(rk, 30000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", slurp(e));
	close(ready);
	n = expected_tids(slurp(wo), tids, 8);
	cr_assert_eq(n, 3);
	/* The workload's own mapping, from /proc/PID/maps, is in the sideband. */
	snprintf(cmd, sizeof(cmd), "%s show --root %s %s/a/sideband/%d", rk_bin, root, root, wl);
	{
		char path[200];

		snprintf(path, sizeof(path), "%s/.show.out", root);
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " >%s 2>&1", path);
		cr_assert_eq(system(cmd), 0, "%s", slurp(path));
		txt = slurp(path);
		cr_assert_not_null(strstr(txt, "PERF_RECORD_MMAP2"), "%s", txt);
		cr_assert_not_null(strstr(txt, workload), "no mapping of %s: %s", workload, txt);
		/* A spinning thread's samples resolve to body() through it. */
		for (i = 1; i < n; i++) {
			snprintf(cmd, sizeof(cmd), "%s show --root %s -e cpu-clock %u >%s 2>&1",
				 rk_bin, root, tids[i], path);
			cr_assert_eq(system(cmd), 0, "%s", slurp(path));
			txt = slurp(path);
			cr_assert_not_null(strstr(txt, "body+0x"), "tid %u: %.3000s", tids[i], txt);
		}
	}
}

/*
 * A CPU ring's owner (the first event opened on that CPU) belongs to a
 * thread that exits while the process lives on (-p of a process whose main
 * thread then calls pthread_exit): the kernel's perf_poll() says EPOLLHUP
 * on that fd from then on, and the SCHED_FIFO loop spun on it, a full CPU
 * until the process ended (1.55 s of CPU in a 1.6 s run; on PREEMPT_RT the
 * spin starved RCU and a crashing process never finished exiting). The
 * loader's CPU time stays a small part of the run, and the threads' samples
 * are all recorded.
 */
Test(perf, a_ring_whose_owner_thread_exited_does_not_spin_the_loop)
{
	const char *const extra[] = { "-e", "cpu-clock", NULL };
	char wo[128], we[128], go_fd[16], line[64];
	struct rk_session_stat ss;
	unsigned int tids[8];
	uint64_t t0, run_ms;
	int gp[2], ready, st;
	pid_t wl, rk;

	cr_assert_eq(pipe(gp), 0);
	snprintf(go_fd, sizeof(go_fd), "%d", gp[0]);
	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	{
		/* A runner thread now; at the byte the main thread exits, then 300 sleeps of 5 ms. */
		char *argv[] = { (char *)workload, "-X", "-t",	  "2",	"-i",  "300", "-s",
				 "5000",	   "-l", "20000", "-w", go_fd, NULL };

		wl = spawn(argv, wo, we, gp[0]);
	}
	close(gp[0]);
	rk = start_recorder_on(wl, "hup", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "recorder not ready");
	t0 = now_ms();
	cr_assert_eq(write(gp[1], "g", 1), 1);
	close(gp[1]);
	st = wait_for(wl, 60000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", slurp(we));
	run_ms = now_ms() - t0;
	st = wait_for(rk, 30000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(ready);
	cr_assert_eq(expected_tids(slurp(wo), tids, 8), 3, "main and 2 threads: %s", slurp(wo));
	read_stat("hup", &ss);
	/* Before: the loader's CPU time was the whole run's (a spin); now a small part of it. */
	cr_assert_lt(ss.loader_cpu_ns / 1000000, run_ms / 3,
		     "the loader took %llu ms of CPU in a %llu ms run: it spins",
		     (unsigned long long)(ss.loader_cpu_ns / 1000000), (unsigned long long)run_ms);
	cr_assert_gt(ss.perf_records, 0, "no sample recorded");
	cr_assert_eq(ss.bpf_drops + ss.lost + ss.perf_lost, 0);
}
