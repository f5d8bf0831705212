// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Integration tests: the real loader, real BPF, real threads. Root only;
 * run serially (--jobs 1): one recorder owns /sys/fs/bpf/ringkeeper at a time.
 * Every wait is on a condition with a bounded timeout.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "bufile.h"
#include "session.h"
#include "helpers.h"
#include "util.h"

TestSuite(record, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 120);

Test(record, launch_traces_every_thread_from_birth)
{
	char *argv[] = {
		(char *)rk_bin, "record",	  "--root", root, "--session", "s",  "-m", "16K",
		"--",		(char *)workload, "-t",	    "8",  "-i",	       "20", NULL
	};
	unsigned int want[64], got[64];
	size_t nw, ng, i;
	char *out, *err, dir[256], path[300];
	struct rk_session_stat st;
	int status = run_rk(argv, &out, &err);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "record failed: %s", err);
	nw = expected_tids(out, want, 64);
	cr_assert_eq(nw, 9, "workload output: %s", out);
	qsort(want, nw, sizeof(*want), cmp_u32);
	snprintf(dir, sizeof(dir), "%s/s/sched", root);
	ng = files_in(dir, got, 64);
	cr_assert_eq(ng, nw, "one file per thread: %zu files for %zu threads", ng, nw);
	for (i = 0; i < nw; i++)
		cr_assert_eq(got[i], want[i], "file for tid %u missing", want[i]);
	read_stat("s", &st);
	for (i = 0; i < ng; i++) {
		struct rk_bufile *bf;
		struct check c;

		snprintf(path, sizeof(path), "%s/%u", dir, got[i]);
		check_file(path, &c, &bf);
		cr_assert_eq(bf->ident->state, RK_THREAD_EXITED, "%s not marked exited", path);
		if (!c.alternation_broken && c.first_switch == 1)
			cr_assert_eq(c.in, c.out, "%s: %ld in vs %ld out", path, c.in, c.out);
		cr_assert_eq(c.last_switch, 2, "%s: last switch must be the final out", path);
		/* Seen once in 6.1's TCG guest with none: what the session counted, to tell why. */
		cr_assert_eq(c.exit_rec, 1,
			     "%s: one exit record, not %ld (%ld in, %ld out; session: exits_late "
			     "%llu, bpf_drops %llu, lost %llu, unpaired %llu, time_clamped %llu)",
			     path, c.exit_rec, c.in, c.out, (unsigned long long)st.exits_late,
			     (unsigned long long)st.bpf_drops, (unsigned long long)st.lost,
			     (unsigned long long)st.unpaired, (unsigned long long)st.time_clamped);
		if (c.tid != c.tgid) {
			assert_switches_cover(&c, out, path);
			/*
			 * Born after attach: fork first, then its very first
			 * switch-in, or an out the loader counted as unpaired
			 * (checked against the stat below).
			 */
			cr_assert_eq(c.fork, 1, "%s", path);
			cr_assert(c.first_switch == 1 || c.in_missing,
				  "%s: first switch of a new thread is in", path);
		} else {
			cr_assert_eq(c.exec, 1, "%s: the launched command's exec", path);
		}
		rk_bufile__free(bf);
	}
	cr_assert_eq((unsigned long long)unpaired_seen, st.unpaired,
		     "files hold %ld unpaired switches, the loader counted %llu", unpaired_seen,
		     (unsigned long long)st.unpaired);
	cr_assert_eq(st.threads, nw);
	cr_assert_eq(st.bpf_drops, 0);
	cr_assert_eq(st.lost, 0);
	cr_assert_eq(st.file_errors, 0);
	cr_assert_eq(st.bpf_signals, st.signals, "every BPF signal handled");
	cr_assert_eq(st.state, RK_SESSION_ENDED);
	cr_assert_eq(access("/sys/fs/bpf/ringkeeper/pmu_info", F_OK), -1, "maps unpinned at exit");
	free(out);
	free(err);
}

Test(record, attach_pid_traces_threads_and_processes_born_after)
{
	char wo[128], we[128], go_fd[16], line[64], path[300], dir[256];
	unsigned int want[64], got[64];
	struct rk_session_stat ss;
	int gp[2], ready, st;
	size_t nw, ng, i;
	pid_t wl, rk;

	cr_assert_eq(pipe(gp), 0);
	snprintf(go_fd, sizeof(go_fd), "%d", gp[0]);
	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	{
		char *argv[] = { (char *)workload, "-t", "4", "-i", "10", "-f", "-w", go_fd, NULL };

		wl = spawn(argv, wo, we, gp[0]);
	}
	close(gp[0]);
	rk = start_recorder_on(wl, "p", &ready, NULL);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "recorder not ready");
	cr_assert_str_eq(line, "ready\n");
	/* Now let the workload create its threads and its child process. */
	cr_assert_eq(write(gp[1], "g", 1), 1);
	close(gp[1]);
	st = wait_for(wl, 60000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = wait_for(rk, 30000);
	{
		char e[128];

		snprintf(e, sizeof(e), "%s/.rk.err", root);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "recorder: %s", slurp(e));
	}
	nw = expected_tids(slurp(wo), want, 64);
	cr_assert_eq(nw, 10, "main + 4 threads + child + 4 threads: %s", slurp(wo));
	qsort(want, nw, sizeof(*want), cmp_u32);
	snprintf(dir, sizeof(dir), "%s/p/sched", root);
	ng = files_in(dir, got, 64);
	cr_assert_eq(ng, nw, "%zu files for %zu threads", ng, nw);
	for (i = 0; i < nw; i++) {
		struct check c;

		cr_assert_eq(got[i], want[i]);
		snprintf(path, sizeof(path), "%s/%u", dir, got[i]);
		check_file(path, &c, NULL);
		cr_assert_eq(c.last_switch, 2, "%s: ends with the final switch-out", path);
		if (!c.alternation_broken && c.first_switch == 1)
			cr_assert_eq(c.in, c.out, "%s: %ld in, %ld out", path, c.in, c.out);
		if (got[i] != (unsigned int)wl) {
			cr_assert_eq(c.fork, 1, "%s: born after attach, traced from fork", path);
			cr_assert(c.first_switch == 1 || c.in_missing, "%s", path);
			if (c.tid != c.tgid)
				assert_switches_cover(&c, slurp(wo), path);
		}
	}
	read_stat("p", &ss);
	cr_assert_eq((unsigned long long)unpaired_seen, ss.unpaired,
		     "files hold %ld unpaired switches, the loader counted %llu", unpaired_seen,
		     (unsigned long long)ss.unpaired);
	close(ready);
}

static size_t map_tids(unsigned int *tids, size_t max, int *fd_out)
{
	struct rk_pmu_key k, next, *prev = NULL;
	int fd = bpf_obj_get("/sys/fs/bpf/ringkeeper/pmu_info");
	size_t n = 0;

	cr_assert_geq(fd, 0, "pmu_info not pinned: %s", strerror(errno));
	while (!bpf_map_get_next_key(fd, prev, &next) && n < max) {
		if (next.src == RK_SRC_SCHED)
			tids[n++] = next.tid;
		k = next;
		prev = &k;
	}
	qsort(tids, n, sizeof(*tids), cmp_u32);
	*fd_out = fd;
	return n;
}

Test(record, pmu_info_map_matches_the_files)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "m",
			 "-m",
			 "16K",
			 "--",
			 (char *)workload,
			 "-t",
			 "6",
			 "-i",
			 "4",
			 "-s",
			 "250000",
			 NULL };
	char o[128], e[128], dir[256], path[300];
	unsigned int files[64], keys[64];
	size_t nf = 0, nk, i;
	uint64_t end = now_ms() + 20000;
	int fd, st;
	pid_t rk;

	snprintf(o, sizeof(o), "%s/.out", root);
	snprintf(e, sizeof(e), "%s/.err", root);
	snprintf(dir, sizeof(dir), "%s/m/sched", root);
	rk = spawn(argv, o, e, -1);
	/* Threads sleep 4 x 250 ms: wait for their 7 files, then compare. */
	while ((nf = files_in(dir, files, 64)) < 7 && now_ms() < end)
		usleep(5000);
	cr_assert_eq(nf, 7, "files: %zu (stderr: %s)", nf, slurp(e));
	nk = map_tids(keys, 64, &fd);
	cr_assert_eq(nk, nf, "%zu map entries for %zu files", nk, nf);
	for (i = 0; i < nf; i++) {
		struct rk_pmu_key k = { .tid = files[i], .src = RK_SRC_SCHED };
		struct rk_pmu_entry v;
		struct rk_bufile *bf;
		const char *msg = NULL;

		cr_assert_eq(keys[i], files[i]);
		cr_assert_eq(bpf_map_lookup_elem(fd, &k, &v), 0);
		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		bf = rk_bufile__open(path, &msg);
		cr_assert_not_null(bf, "%s", msg);
		/*
		 * The map value is {note_size, pmu_descsz}, then exactly what the
		 * file holds at pmu_offset (the RFC's attr + descriptor).
		 */
		cr_assert_eq(bf->ext->pmu_size, v.attr.size + v.info.pmu_descsz);
		cr_assert_eq(memcmp(&v.attr, (__u8 *)bf->base + bf->ext->pmu_offset,
				    bf->ext->pmu_size),
			     0, "tid %u: map value differs from the file's pmu_info", files[i]);
		cr_assert_eq(v.attr.context_switch, 1);
		rk_bufile__free(bf);
	}
	close(fd);
	st = wait_for(rk, 60000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", slurp(e));
	cr_assert_eq(access("/sys/fs/bpf/ringkeeper", F_OK), -1, "bpffs dir removed at exit");
}

Test(record, locked_memory_stays_within_budget_with_200_threads)
{
	/* -m 16K: 20 KiB per file; the budget fits exactly two buffers. */
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "b",
			 "-m",
			 "16K",
			 "--mlock-kb",
			 "40",
			 "--min-run-us",
			 "0", /* pin every run */
			 "--",
			 (char *)workload,
			 "-t",
			 "200",
			 "-i",
			 "10",
			 "-s",
			 "1000",
			 NULL };
	char o[128], e[128], dir[256], path[300], *out;
	struct rk_session_stat st;
	int64_t max_kb = 0, samples = 0;
	unsigned int files[512];
	size_t nf, i;
	int status;
	pid_t rk;

	snprintf(o, sizeof(o), "%s/.out", root);
	snprintf(e, sizeof(e), "%s/.err", root);
	rk = spawn(argv, o, e, -1);
	/* Sample the kernel's view of the loader's locked memory while it runs. */
	for (;;) {
		pid_t r = waitpid(rk, &status, WNOHANG);
		int64_t kb;

		if (r == rk)
			break;
		kb = rk_proc_vmlck_kb(rk);
		if (kb > max_kb)
			max_kb = kb;
		samples++;
		cr_assert_lt(samples, 50000000, "recorder did not finish");
	}
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", slurp(e));
	read_stat("b", &st);
	printf("budget 40 KiB: peak accounted %llu B, VmLck peak %llu B (loader) / %lld KiB "
	       "(sampled %lld times); pins %llu, refusals %llu, evictions %llu, coalesced %llu\n",
	       (unsigned long long)st.locked_peak, (unsigned long long)st.vmlck_peak,
	       (long long)max_kb, (long long)samples, (unsigned long long)st.pins,
	       (unsigned long long)st.refusals, (unsigned long long)st.evictions,
	       (unsigned long long)st.coalesced);
	cr_assert_eq(st.budget, 40 * 1024);
	cr_assert_leq(st.locked_peak, 40 * 1024);
	cr_assert_leq(st.vmlck_peak, 40 * 1024);
	cr_assert_leq(max_kb, 40, "VmLck of the loader reached %lld KiB", (long long)max_kb);
	cr_assert_gt(st.pins, 0, "nothing was ever pinned");
	cr_assert_eq(st.locked, 0, "everything unlocked at the end");
	cr_assert_eq(st.threads, 201);
	cr_assert_eq(st.bpf_drops, 0);
	cr_assert_eq(st.bpf_prog_misses, 0, "the kernel skipped our programs");
	/* Refused pins do not lose data: every thread has its whole history. */
	out = strdup(slurp(o));
	unpaired_seen = 0;
	snprintf(dir, sizeof(dir), "%s/b/sched", root);
	nf = files_in(dir, files, 512);
	cr_assert_eq(nf, 201);
	for (i = 0; i < nf; i++) {
		struct check c;

		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		check_file(path, &c, NULL);
		cr_assert_eq(c.last_switch, 2, "%s", path);
		if (!c.alternation_broken && c.first_switch == 1)
			cr_assert_eq(c.in, c.out, "%s", path);
		/* The main thread (not the lowest tid: pids wrap at pid_max). */
		if (c.tid == c.tgid)
			cr_assert_geq(c.in, 1, "%s", path);
		else
			assert_switches_cover(&c, out, path);
	}
	printf("200 threads: %llu switches not followed by their opposite (kernel), all counted\n",
	       (unsigned long long)st.unpaired);
	cr_assert_eq((unsigned long long)unpaired_seen, st.unpaired);
	free(out);
}

/* A ring smaller than the history keeps the newest whole records, and says so. */
/* Record tests/bench/bursts with @args (NULL-terminated, after "bursts"); its stat. */
static void record_bursts(const char *session, const char *const *args, struct rk_session_stat *st)
{
	const char *bursts = getenv("RK_BURSTS");
	char *argv[32] = { (char *)rk_bin, "record",	    "--root", root,
			   "--session",	   (char *)session, "-m",     "64K",
			   "--mlock-kb",   "4096",	    "--",     (char *)bursts };
	char *err = NULL;
	int n = 12, rc;

	if (!bursts)
		cr_skip_test("RK_BURSTS not set: run through 'make integration'");
	while (*args && n < 31)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	rc = run_rk(argv, NULL, &err);
	cr_assert_eq(rc, 0, "record failed: %s", err);
	free(err);
	read_stat(session, st);
}

/*
 * Pinning follows the thread: a switch-in of a thread whose buffer is not
 * locked wakes the loader (pin_asked), which locks it at once, instead of
 * at its next drain tick (5 ms; a 3 ms run was then over before the lock).
 * Bounds are generous (this is not a timing test): before, about 10% of
 * such runs' on-CPU time was locked and the median switch-in to lock was
 * 1.8 ms. Wakeups stay bounded by what needs one: one per unlock, and one
 * at each thread's first switch-in. Runs too short to be worth a lock cost
 * no wakeup at all after the first.
 */
Test(record, a_thread_is_locked_while_it_runs_and_wakeups_are_few)
{
	static const char *const longr[] = { "-t",    "4",  "-b",   "3000", "-s",
					     "40000", "-d", "1500", NULL };
	static const char *const shortr[] = { "-t",    "4",  "-b",   "50", "-s",
					      "30000", "-d", "1000", NULL };
	struct rk_session_stat st;
	double share;

	record_bursts("long", longr, &st);
	share = st.oncpu_ns ? (double)st.oncpu_pinned_ns / (double)st.oncpu_ns : 0;
	printf("3 ms runs: locked %.1f%% of on-CPU time, switch-in to locked p50 %llu us, "
	       "p99 %llu us; %llu wakeups, %llu pins, %llu unpins, %llu switches\n",
	       share * 100, (unsigned long long)st.pin_lat_p50_ns / 1000,
	       (unsigned long long)st.pin_lat_p99_ns / 1000, (unsigned long long)st.pin_wakeups,
	       (unsigned long long)st.pins, (unsigned long long)st.unpins,
	       (unsigned long long)st.switches);
	cr_assert_gt(st.pin_wakeups, 0, "no switch-in woke the loader");
	cr_assert_leq(st.pin_wakeups, st.pins + st.unpins + st.threads,
		      "more wakeups (%llu) than pins + unpins + threads",
		      (unsigned long long)st.pin_wakeups);
	/* Timing bounds only on a CPU at full speed (not under sanitizers or TCG). */
	if (!rk_sanitized() && !getenv("RK_SLOW")) {
		cr_assert_geq(share, 0.5, "locked for %.1f%% of the runs' on-CPU time",
			      share * 100);
		cr_assert_leq(st.pin_lat_p50_ns, 1000000ull, "switch-in to locked p50 %llu ns",
			      (unsigned long long)st.pin_lat_p50_ns);
	}

	record_bursts("short", shortr, &st);
	printf("50 us runs: %llu skipped, %llu wakeups, %llu pins, %llu switches\n",
	       (unsigned long long)st.pins_skipped_short, (unsigned long long)st.pin_wakeups,
	       (unsigned long long)st.pins, (unsigned long long)st.switches);
	cr_assert_leq(st.pin_wakeups, st.pins + st.unpins + st.threads,
		      "more wakeups (%llu) than pins + unpins + threads",
		      (unsigned long long)st.pin_wakeups);
	/* Under TCG a 50 us burst is no short run (interrupts stretch it): bounds at full speed only. */
	if (!getenv("RK_SLOW")) {
		cr_assert_gt(st.pins_skipped_short, 0, "short runs were pinned");
		cr_assert_leq(st.pin_wakeups, 2 * st.threads + 2,
			      "short runs woke the loader %llu times (%llu threads)",
			      (unsigned long long)st.pin_wakeups, (unsigned long long)st.threads);
	}
}

/*
 * make bench's program-time rows read stat's switch_prog_runs and
 * switch_prog_ns: the kernel's counters of the sched_switch program, which
 * count only while run-time stats are on. BPF_ENABLE_STATS turns them on for
 * as long as its descriptor is open (no sysctl to restore).
 */
Test(record, the_switch_programs_run_time_is_in_stat_while_stats_are_on)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "ps",
			 "--",
			 "/bin/sh",
			 "-c",
			 "for i in 1 2 3 4 5 6 7 8; do /bin/sleep 0.01; done",
			 NULL };
	char *argv_off[] = { (char *)rk_bin, "record", "--root",     root,   "--session",
			     "ps0",	     "--",     "/bin/sleep", "0.05", NULL };
	struct rk_session_stat st;
	char *err = NULL, sysctl[16];
	int fd, rc;

	fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	cr_assert_geq(fd, 0, "BPF_ENABLE_STATS: %s", strerror(-fd));
	rc = run_rk(argv, NULL, &err);
	close(fd);
	cr_assert_eq(rc, 0, "record failed: %s", err);
	free(err);
	read_stat("ps", &st);
	printf("switch program: %llu runs, %llu ns\n", (unsigned long long)st.switch_prog_runs,
	       (unsigned long long)st.switch_prog_ns);
	/* sh and eight sleeps switch in and out at least once each. */
	cr_assert_geq(st.switch_prog_runs, 16, "%llu runs counted",
		      (unsigned long long)st.switch_prog_runs);
	cr_assert_gt(st.switch_prog_ns, 0, "no run time");
	cr_assert_lt(st.switch_prog_ns / st.switch_prog_runs, 1000000ull, "%llu ns per run",
		     (unsigned long long)(st.switch_prog_ns / st.switch_prog_runs));

	/* Off again (unless the sysctl keeps them on): nothing counted. */
	read_sysctl("/proc/sys/kernel/bpf_stats_enabled", sysctl, sizeof(sysctl));
	rc = run_rk(argv_off, NULL, &err);
	cr_assert_eq(rc, 0, "record failed: %s", err);
	free(err);
	read_stat("ps0", &st);
	if (!strcmp(sysctl, "0"))
		cr_assert_eq(st.switch_prog_runs, 0, "%llu runs counted with stats off",
			     (unsigned long long)st.switch_prog_runs);
}

Test(record, small_ring_keeps_the_newest_records)
{
	char *argv[] = {
		(char *)rk_bin,	  "record", "--root", root, "--session", "w",  "-m",  "4K", "--",
		(char *)workload, "-t",	    "1",      "-i", "300",	 "-s", "100", NULL
	};
	char dir[256], path[300], *err;
	unsigned long long overwritten = 0;
	struct rk_session_stat st;
	unsigned int files[8];
	size_t nf, i;
	int status = run_rk(argv, NULL, &err);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	snprintf(dir, sizeof(dir), "%s/w/sched", root);
	nf = files_in(dir, files, 8);
	cr_assert_eq(nf, 2);
	for (i = 0; i < nf; i++) {
		struct rk_bufile *bf;
		struct check c;

		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		check_file(path, &c, &bf);
		overwritten += bf->ident->overwritten;
		if (c.tid != c.tgid) {
			/* 600+ switches into a 4 KiB ring of 40-byte records. */
			cr_assert_gt(bf->ident->overwritten, 0, "%s", path);
			cr_assert_leq(c.in + c.out + c.exit_rec, 4096 / 40);
			cr_assert_geq(bf->pg->data_head - bf->pg->data_tail, 4096 - 64);
			cr_assert_eq(c.last_switch, 2, "the final switch-out is kept");
			cr_assert_eq(c.exit_rec, 1, "the exit is kept");
		}
		rk_bufile__free(bf);
	}
	read_stat("w", &st);
	cr_assert_eq(st.overwritten, overwritten, "stat %llu vs files %llu",
		     (unsigned long long)st.overwritten, overwritten);
	free(err);
}

Test(record, exec_is_recorded_and_tracing_continues)
{
	char cmd[512];
	char *argv[] = { (char *)rk_bin, "record", "--root",  root, "--session", "x", "-m",
			 "16K",		 "--",	   "/bin/sh", "-c", cmd,	 NULL };
	char dir[256], path[300], *err;
	unsigned int files[16];
	struct rk_bufile *bf;
	struct check c;
	int st;

	snprintf(cmd, sizeof(cmd), "exec %s -t 1 -i 3", workload);
	st = run_rk(argv, NULL, &err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
	snprintf(dir, sizeof(dir), "%s/x/sched", root);
	cr_assert_eq(files_in(dir, files, 16), 2, "sh-turned-workload and its thread");
	snprintf(path, sizeof(path), "%s/%u", dir, files[0]);
	check_file(path, &c, &bf);
	if (c.tid != c.tgid) {
		/* Pids wrapped at pid_max: the thread came first. */
		rk_bufile__free(bf);
		snprintf(path, sizeof(path), "%s/%u", dir, files[1]);
		check_file(path, &c, &bf);
	}
	cr_assert_eq(c.tid, c.tgid, "%s: not the main thread", path);
	/* execvp of /bin/sh, then sh's exec of the workload. */
	cr_assert_eq(c.exec, 2, "%s: %ld exec records", path, c.exec);
	cr_assert_str_eq(bf->ident->comm, "workload");
	rk_bufile__free(bf);
	free(err);
}

/* The last COMM record of a buffer (not an exec's): its name, and how many there were. */
struct renamed {
	char comm[RK_COMM_LEN];
	int renames, execs;
};

static int last_comm(const struct perf_event_header *h, void *ctx)
{
	struct renamed *r = ctx;

	if (h->type != PERF_RECORD_COMM || h->size < sizeof(*h) + 8 + RK_COMM_LEN)
		return 0;
	if (h->misc & PERF_RECORD_MISC_COMM_EXEC) {
		r->execs++;
		return 0;
	}
	memcpy(r->comm, (const __u8 *)h + sizeof(*h) + 8, RK_COMM_LEN);
	r->comm[RK_COMM_LEN - 1] = '\0';
	r->renames++;
	return 0;
}

/*
 * A thread renamed in a loop (200,000 times) costs the recorder one rename
 * signal per RK_RENAME_GAP_NS at most, and the name it ends with is its
 * last COMM record and its identity's: the rest are held back in BPF,
 * counted (before, each rename woke the loader: 0.83 CPU, and the
 * renaming thread itself ran 12x slower).
 */
Test(record, a_rename_storm_is_rate_limited_per_thread_and_keeps_the_last_name)
{
	char *argv[] = { (char *)rk_bin, "record",	   "--root", root,     "--session", "rs",
			 "--",		 (char *)workload, "-R",     "200000", NULL };
	char path[300], name[32], *out, *err;
	struct renamed rn = { 0 };
	struct rk_session_stat st;
	struct rk_bufile *bf;
	unsigned long long ns, most;
	unsigned int tid;
	struct check c;
	int status;

	status = run_rk(argv, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	cr_assert_not_null(strstr(out, "renamed "), "%s", out);
	cr_assert_eq(sscanf(strstr(out, "renamed "), "renamed %u %31s %llu", &tid, name, &ns), 3);
	cr_assert_str_eq(name, "r-199999");
	read_stat("rs", &st);
	/* One per gap while it renamed, a held name per write of them, and the last at the end. */
	most = ns / RK_RENAME_GAP_NS + ns / RK_RENAMES_HELD_EVERY_NS + 3;
	cr_assert_leq(st.renames, most, "%llu renames handled in %llu ns (at most %llu)",
		      (unsigned long long)st.renames, ns, most);
	cr_assert_geq(st.renames_held, 200000 - most, "%llu held",
		      (unsigned long long)st.renames_held);
	cr_assert_eq(st.bpf_drops, 0);
	snprintf(path, sizeof(path), "%s/rs/sched/%u", root, tid);
	check_file(path, &c, NULL);
	bf = rk_bufile__open(path, NULL);
	cr_assert_not_null(bf, "%s", path);
	cr_assert_str_eq(bf->ident->comm, name);
	cr_assert_eq(rk_bufile__for_each(bf, last_comm, &rn), 0);
	cr_assert_str_eq(rn.comm, name, "the last COMM record names %s", rn.comm);
	cr_assert_eq((unsigned long long)rn.renames, (unsigned long long)st.renames);
	rk_bufile__free(bf);
	free(out);
	free(err);
}

/*
 * Threads renamed after birth (prctl by the thread itself, and
 * pthread_setname_np from another thread): one COMM record each in their
 * history, the new name in their identity (ls, show) and in the export,
 * where perf script names them so; exec's own rename is not counted twice.
 */
Test(record, renamed_threads_carry_their_new_names)
{
	char *argv[] = { (char *)rk_bin,   "record", "--root", root, "--session", "n",	"--",
			 (char *)workload, "-t",     "3",      "-i", "3",	  "-N", NULL };
	char path[300], cmd[800], name[32], *out, *err, *p;
	struct rk_session_stat st;
	int status, names = 0;

	status = run_rk(argv, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	for (p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		struct renamed r = { 0 };
		struct rk_bufile *bf;
		unsigned int tid;

		if (sscanf(p, "name %u %31s", &tid, name) != 2)
			continue;
		names++;
		snprintf(path, sizeof(path), "%s/n/sched/%u", root, tid);
		bf = rk_bufile__open(path, NULL);
		cr_assert_not_null(bf, "%s", path);
		cr_assert_str_eq(bf->ident->comm, name, "tid %u", tid);
		cr_assert_eq(rk_bufile__for_each(bf, last_comm, &r), 0);
		cr_assert_eq(r.renames, 1, "tid %u: %d renames", tid, r.renames);
		cr_assert_str_eq(r.comm, name);
		cr_assert_eq(r.execs, 0, "a thread, not the exec'ing main");
		rk_bufile__free(bf);
		snprintf(cmd, sizeof(cmd), "%s ls --root %s n | grep -q ' %u .* %s '", rk_bin, root,
			 tid, name);
		cr_assert_eq(system(cmd), 0, "ls does not name tid %u %s", tid, name);
	}
	cr_assert_eq(names, 3);
	snprintf(path, sizeof(path), "%s/n", root);
	cr_assert_eq(rk_session_stat_read(path, &st), 0);
	cr_assert_eq(st.renames, 3, "exec's rename counted too: %llu",
		     (unsigned long long)st.renames);
	snprintf(cmd, sizeof(cmd),
		 "%s export --root %s --session n --perf-data %s/n.data 2>/dev/null && "
		 "perf script -i %s/n.data --show-task-events 2>/dev/null | "
		 "grep -c 'PERF_RECORD_COMM: w-'",
		 rk_bin, root, root, root);
	{
		FILE *f = popen(cmd, "r");
		char line[64] = "";

		cr_assert_not_null(f);
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		pclose(f);
		cr_assert_eq(atoi(line), 3, "perf script sees %s renames", line);
	}
	free(out);
	free(err);
}

/*
 * -d takes fractions; when it stops tracing before CMD ends, record says it
 * waits for CMD. record ends with a short summary; -v adds every counter.
 */
Test(record, duration_fraction_summary_and_verbose_counters)
{
	char *argv[] = { (char *)rk_bin, "record", "--root", root,	   "--session", "d",
			 "-d",		 "0.3",	   "--",     "/bin/sleep", "1",		NULL };
	char *argv_v[] = { (char *)rk_bin, "record", "--root", root,	    "--session",
			   "dv",	   "-v",     "--",     "/bin/true", NULL };
	uint64_t t0 = now_ms();
	char *err;
	int st;

	st = run_rk(argv, NULL, &err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
	cr_assert_geq(now_ms() - t0, 1000, "did not wait for CMD");
	cr_assert_not_null(strstr(err, "tracing stopped; waiting for /bin/sleep"), "%s", err);
	cr_assert_not_null(strstr(err, "ringkeeper: session d: "), "%s", err);
	cr_assert_not_null(strstr(err, "every counter: ringkeeper stat d"), "%s", err);
	cr_assert_null(strstr(err, "signals (BPF)"), "counters without -v:\n%s", err);
	free(err);
	st = run_rk(argv_v, NULL, &err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
	cr_assert_not_null(strstr(err, "signals (BPF)"), "-v shows every counter:\n%s", err);
	free(err);
}

/*
 * A CMD that outlives tracing (-d) is waited for with nothing of the
 * recorder's held: its session already says ended, and another recorder
 * can start (the lock released, the maps unpinned) while the first waits;
 * a SIGINT another process sends it then is passed on to CMD.
 */
Test(record, waiting_for_cmd_after_tracing_stopped_holds_nothing)
{
	char *first[] = { (char *)rk_bin, "record", "--root", root,	    "--session", "w1",
			  "-d",		  "0.3",    "--",     "/bin/sleep", "30",	 NULL };
	char *second[] = { (char *)rk_bin, "record", "--root",	  root, "--session",
			   "w2",	   "--",     "/bin/true", NULL };
	char wo[128], we[128], *err, *out;
	uint64_t end;
	pid_t rk;
	int st;

	snprintf(wo, sizeof(wo), "%s/.w1.out", root);
	snprintf(we, sizeof(we), "%s/.w1.err", root);
	rk = spawn(first, wo, we, -1);
	/* Said once everything is let go of: the point to look from. */
	end = now_ms() + (getenv("RK_SLOW") ? 120000 : 30000);
	while (!strstr(slurp(we), "tracing stopped; waiting for /bin/sleep")) {
		cr_assert_eq(waitpid(rk, &st, WNOHANG), 0, "record ended: %s", slurp(we));
		cr_assert_lt(now_ms(), end, "record never said it waits for CMD: %s", slurp(we));
		usleep(20000);
	}
	cr_assert_neq(access("/sys/fs/bpf/ringkeeper", F_OK), 0, "maps still pinned while waiting");
	st = run_rk(second, NULL, &err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "a second recorder while the first waits: %s", err);
	free(err);
	{
		char *stat[] = { (char *)rk_bin, "stat", "--root", root, "--json", "w1", NULL };

		/* 4: no recorder runs for it (stat's health status). */
		st = run_rk(stat, &out, &err);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 4, "%s", err);
		cr_assert_not_null(strstr(out, "\"state\":\"ended\""), "%s", out);
		free(out);
		free(err);
	}
	/* A signal another process sends the waiting recorder is passed on: sleep ends, and says how. */
	cr_assert_eq(waitpid(rk, &st, WNOHANG), 0, "record did not wait for CMD");
	cr_assert_eq(kill(rk, SIGINT), 0);
	st = wait_for(rk, 30000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGINT, "first record: status %#x: %s",
		  st, slurp(we));
	cr_assert_not_null(strstr(slurp(we), "/bin/sleep was killed by signal 2"), "%s", slurp(we));
}

/* Read what is there of @fd (a pty's master) onto @buf (@len so far, @cap in all). */
static void pty_drain(int fd, char *buf, size_t *len, size_t cap, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	while (poll(&p, 1, ms) > 0 && *len + 1 < cap) {
		n = read(fd, buf + *len, cap - 1 - *len);
		if (n <= 0)
			break;
		*len += (size_t)n;
		buf[*len] = '\0';
		ms = 0;
	}
}

/*
 * A terminal's Ctrl-C while record waits for CMD (tracing stopped first):
 * the kernel signals the terminal's whole foreground process group, CMD
 * with it, so the recorder does not pass that one on a second time. CMD
 * (workload -I) counts the SIGINTs delivered to it: one. (A signal another
 * process sends the recorder is passed on: the test above.) A recorder
 * that passed this one on too failed here in 4 of 6 runs; in the others its
 * SIGINT came while the terminal's was still pending and merged with it.
 */
Test(record, a_terminal_s_ctrl_c_reaches_the_waited_for_cmd_once)
{
	char out[8192] = "", *p;
	char *argv[] = { (char *)rk_bin, "record", "--root",	     root, "--session", "tty", "-d",
			 "0.3",		 "--",	   (char *)workload, "-I", "3000",	NULL };
	size_t len = 0;
	uint64_t end;
	int master, st, n;
	pid_t rk, parent = getpid();

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert_geq(master, 0, "posix_openpt: %s", strerror(errno));
	cr_assert_eq(grantpt(master) | unlockpt(master), 0);
	rk = fork();
	cr_assert_geq(rk, 0);
	if (!rk) {
		const char *slave = ptsname(master);
		cpu_set_t first;
		int fd;

		/* A session of its own, the pty its terminal: the recorder in its foreground. */
		if (prctl(PR_SET_PDEATHSIG, SIGINT) || getppid() != parent || setsid() < 0 ||
		    !slave || (fd = open(slave, O_RDWR)) < 0)
			_exit(125);
		/*
		 * The recorder on the first CPU, CMD spinning on the last: a
		 * SIGINT it passed on would come after CMD handled the terminal's
		 * (one landing on a pending one would merge with it, unseen).
		 */
		CPU_ZERO(&first);
		CPU_SET(0, &first);
		sched_setaffinity(0, sizeof(first), &first);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(126);
	}
	end = now_ms() + 30000;
	while (!strstr(out, "tracing stopped; waiting for") || !strstr(out, "counting")) {
		cr_assert_eq(waitpid(rk, &st, WNOHANG), 0, "record ended: %s", out);
		cr_assert_lt(now_ms(), end, "record never said it waits for CMD: %s", out);
		pty_drain(master, out, &len, sizeof(out), 20);
	}
	cr_assert_eq(write(master, "\x03", 1), 1, "Ctrl-C into the pty: %s", strerror(errno));
	while (waitpid(rk, &st, WNOHANG) == 0) {
		cr_assert_lt(now_ms(), end, "record did not end with CMD: %s", out);
		pty_drain(master, out, &len, sizeof(out), 20);
	}
	pty_drain(master, out, &len, sizeof(out), 0);
	close(master);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "record: status %#x: %s", st, out);
	p = strstr(out, "sigints ");
	cr_assert_not_null(p, "CMD did not say what it counted: %s", out);
	n = atoi(p + 8);
	cr_assert_eq(n, 1, "CMD got %d SIGINTs for one Ctrl-C: %s", n, out);
}

Test(record, sigint_stops_cleanly_and_keeps_files)
{
	char wo[128], we[128], line[64], dir[256], path[300], e[128];
	unsigned int files[16];
	int ready, st;
	size_t nf, i;
	pid_t wl, rk;

	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	{
		char *argv[] = { (char *)workload, "-t", "2", "-i", "100000", "-s", "1000", NULL };

		wl = spawn(argv, wo, we, -1);
	}
	{
		const char *const keep[] = { "--keep", NULL };

		rk = start_recorder_on(wl, "i", &ready, keep);
	}
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
	snprintf(dir, sizeof(dir), "%s/i/sched", root);
	/* Wait (bounded) until both worker threads have switches recorded. */
	{
		uint64_t end = now_ms() + 10000;
		int busy = 0;

		while (busy < 2 && now_ms() < end) {
			nf = files_in(dir, files, 16);
			for (busy = 0, i = 0; i < nf; i++) {
				struct rk_bufile *bf;

				snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
				bf = rk_bufile__open(path, NULL);
				if (bf && bf->ident->tid != bf->ident->tgid &&
				    __atomic_load_n(&bf->pg->data_head, __ATOMIC_ACQUIRE) > 0)
					busy++;
				rk_bufile__free(bf);
			}
			usleep(2000);
		}
		cr_assert_eq(busy, 2, "worker threads have no records after 10 s");
	}
	kill(rk, SIGINT);
	st = wait_for(rk, 30000);
	snprintf(e, sizeof(e), "%s/.rk.err", root);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x: %s", st, slurp(e));
	kill(wl, SIGKILL);
	wait_for(wl, 10000);
	cr_assert_eq(access("/sys/fs/bpf/ringkeeper/pmu_info", F_OK), 0, "--keep keeps the map");
	unlink("/sys/fs/bpf/ringkeeper/pmu_info");
	unlink("/sys/fs/bpf/ringkeeper/counters");
	rmdir("/sys/fs/bpf/ringkeeper");
	nf = files_in(dir, files, 16);
	cr_assert_eq(nf, 3);
	for (i = 0; i < nf; i++) {
		struct rk_bufile *bf;
		struct check c;

		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		check_file(path, &c, &bf);
		cr_assert_eq(bf->ident->state, RK_THREAD_STOPPED, "%s", path);
		/* The main thread sits in pthread_join: no switch while we watched. */
		if (c.tid != c.tgid)
			cr_assert_gt(c.in + c.out, 0, "%s has records", path);
		rk_bufile__free(bf);
	}
	close(ready);
}

Test(record, bad_input_gets_clear_errors)
{
	char garbage[128];
	int fd;

	{
		char *a[] = { (char *)rk_bin, "record", "--root", root, "-p", "2147483", NULL };

		expect_error(a, 1, "no such process: 2147483");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "-m", "16K", "--mlock-kb", "4",
			      "--",	      "true",	NULL };

		expect_error(a, 2, "smaller than one thread's buffers");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "-m", "abc", "--", "true", NULL };

		expect_error(a, 2, "-m: not a size");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "-d", "0.0001", "--", "true", NULL };

		expect_error(a, 2, "--duration: seconds, with at most 3 decimals");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "-d", "0", "--", "true", NULL };

		expect_error(a, 2, "--duration: seconds");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "-m", "2K", "--", "true", NULL };

		expect_error(a, 2, "at least one page");
	}
	{
		char *a[] = { (char *)rk_bin, "record", NULL };

		expect_error(a, 2, "nothing to trace");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "-p", "1", "--", "true", NULL };

		expect_error(a, 2, "not both");
	}
	{
		char *a[] = {
			(char *)rk_bin, "record", "--ringbuf-size", "1000", "--", "true", NULL
		};

		expect_error(a, 2, "power of two");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "--aux", "64K", "--", "true", NULL };

		expect_error(a, 2, "no selected event has an AUX area");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "--aux", "1T", "--", "true", NULL };

		expect_error(a, 2, "--aux: need a power of two from 4K to 1G");
	}
	{
		char *a[] = { (char *)rk_bin, "record", "--cpu-aux", "12K", "-e",
			      "cpu-clock",    "--",	"true",	     NULL };

		expect_error(a, 2, "--cpu-aux: need a power of two");
	}
	if (access("/sys/bus/event_source/devices/intel_pt", F_OK)) {
		char *a[] = { (char *)rk_bin, "record", "-e", "intel_pt/cyc/u", "--", "true", NULL };

		expect_error(a, 2, "the intel_pt PMU is not present on this machine");
	}
	{
		char *a[] = { (char *)rk_bin, "frobnicate", NULL };

		expect_error(a, 2, "unknown command");
	}
	snprintf(garbage, sizeof(garbage), "%s/garbage", root);
	fd = open(garbage, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 8192), 0);
	close(fd);
	{
		char *a[] = { (char *)rk_bin, "show", garbage, NULL };

		expect_error(a, 1, "is not a valid ringkeeper buffer: pmu_offset out of page 0");
	}
	{
		char *a[] = { (char *)rk_bin, "show", "--root", root, "999999", NULL };

		expect_error(a, 1, "no sessions in");
	}
	/* A target that has already exited (a zombie): said so, no session. */
	{
		char pidbuf[16], statp[64], *st;
		char *a[] = { (char *)rk_bin, "record", "--root", root, "-p", pidbuf, NULL };
		uint64_t end = now_ms() + 10000;
		pid_t z = fork();

		cr_assert_geq(z, 0);
		if (!z)
			_exit(0);
		snprintf(pidbuf, sizeof(pidbuf), "%d", z);
		snprintf(statp, sizeof(statp), "/proc/%d/stat", z);
		while (!(st = strrchr(slurp(statp), ')')) || st[2] != 'Z') {
			cr_assert_lt(now_ms(), end, "child did not become a zombie");
			usleep(1000);
		}
		expect_error(a, 1, "has exited (a zombie not yet reaped)");
		waitpid(z, NULL, 0);
	}
	/* -m 100K is usable: rounded up, said so. */
	{
		char *err;
		char *a[] = { (char *)rk_bin, "record", "--root",    root, "-m",
			      "100K",	      "--",	"/bin/true", NULL };
		int st = run_rk(a, NULL, &err);

		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
		cr_assert_not_null(strstr(err, "rounding -m 100K up to 128 KiB"), "%s", err);
		free(err);
	}
}

/* bpffs missing: the loader mounts it (in a private mount namespace here). */
Test(record, mounts_bpffs_when_missing)
{
	char o[128], e[128], *err;
	pid_t pid;
	int st;

	snprintf(o, sizeof(o), "%s/.out", root);
	snprintf(e, sizeof(e), "%s/.err", root);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		int fd = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		struct statfs sfs;

		if (fd < 0 || dup2(fd, 2) < 0 || unshare(CLONE_NEWNS) ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
			_exit(125);
		umount2("/sys/fs/bpf", MNT_DETACH);
		if (!statfs("/sys/fs/bpf", &sfs) && sfs.f_type == 0xcafe4a11)
			_exit(124); /* could not get rid of it: nothing to test */
		pid = fork();
		if (!pid) {
			execl(rk_bin, rk_bin, "record", "-v", "--root", root, "--", "/bin/true",
			      (char *)NULL);
			_exit(126);
		}
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 123);
		/* Mounted by the loader, in our namespace. */
		_exit(!statfs("/sys/fs/bpf", &sfs) && sfs.f_type == 0xcafe4a11 ? 0 : 122);
	}
	st = wait_for(pid, 30000);
	err = slurp(e);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 125)
		cr_skip_test("cannot make a private mount namespace here");
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", WEXITSTATUS(st), err);
	cr_assert_not_null(strstr(err, "mounted bpf at /sys/fs/bpf"), "%s", err);
}

Test(record, not_root_is_told_so)
{
	char *err;
	char o[128], e[128];
	pid_t pid;
	int st;

	snprintf(o, sizeof(o), "%s/.out", root);
	snprintf(e, sizeof(e), "%s/.err", root);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		int fd = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0666);

		if (fd < 0 || dup2(fd, 2) < 0 || setgid(65534) || setuid(65534))
			_exit(125);
		execl(rk_bin, rk_bin, "record", "--", "/bin/true", (char *)NULL);
		_exit(126);
	}
	st = wait_for(pid, 10000);
	err = slurp(e);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d: %s", st, err);
	cr_assert_not_null(strstr(err, "needs root"), "%s", err);
}

/* Can this process lower its oom_score_adj (CAP_SYS_RESOURCE)? Asked in a child. */
static int can_lower_oom_adj(void)
{
	pid_t c = fork();
	int st;

	cr_assert_geq(c, 0);
	if (!c) {
		int fd = open("/proc/self/oom_score_adj", O_WRONLY);

		_exit(fd >= 0 && write(fd, "-1000", 5) == 5 ? 0 : 1);
	}
	st = wait_for(c, 10000);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/*
 * The recorder is never the OOM killer's victim (oom_score_adj -1000: a
 * memory cgroup shared with 2,048 traced threads and hogs chose it), and
 * CMD keeps the value the recorder was started with.
 */
Test(record, the_recorder_is_exempt_from_the_oom_killer_and_cmd_is_not)
{
	char cmd[600], *s;
	int st, rec_adj = 0, cmd_adj = 0;

	if (!can_lower_oom_adj())
		cr_skip_test("root here lacks CAP_SYS_RESOURCE, which oom_score_adj -1000 needs "
			     "(make vmtest runs this test in guests that have it)");
	snprintf(cmd, sizeof(cmd),
		 "echo 100 > /proc/self/oom_score_adj && exec %s record --root %s --session oom "
		 "-- /bin/sh -c 'cat /proc/$PPID/oom_score_adj /proc/self/oom_score_adj' 2>&1",
		 rk_bin, root);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	cr_assert_null(strstr(s, "OOM killer"), "the recorder says it is not exempt:\n%s", s);
	{
		const char *p = s;

		/* The two numbers, after the recorder's own lines on stderr. */
		while (p && sscanf(p, "%d\n%d", &rec_adj, &cmd_adj) != 2)
			p = (p = strchr(p, '\n')) ? p + 1 : NULL;
		cr_assert_not_null(p, "no oom_score_adj values in:\n%s", s);
	}
	cr_assert_eq(rec_adj, -1000, "the recorder's oom_score_adj: %d", rec_adj);
	cr_assert_eq(cmd_adj, 100, "CMD's oom_score_adj: %d, not the caller's 100", cmd_adj);
	free(s);
}

/*
 * The event loop and every pin worker run SCHED_FIFO (--realtime, default
 * 1; field 41 of /proc/PID/task/TID/stat), the command they launch does not
 * (SCHED_RESET_ON_FORK), and a workload that keeps both CPUs busy loses no
 * signal. make vmtest runs it on 6.12 PREEMPT_RT too, where the loop's locks
 * (priority-inheriting: util::mutexes_inherit_priority_...) matter most.
 */
Test(record, the_loop_and_pin_workers_run_sched_fifo_and_the_command_does_not)
{
	char cmd[800], *s, *p;
	int st, fifo = 0, other = 0, cmd_policy = -1;
	struct rk_session_stat stat;

	snprintf(cmd, sizeof(cmd),
		 "%s record --root %s --session rt -- /bin/sh -c 'for t in /proc/$PPID/task/*; "
		 "do echo \"rk $(cut -d\" \" -f41 $t/stat)\"; done; echo \"cmd $(cut -d\" \" -f41 "
		 "/proc/self/stat)\"; %s -t 4 -i 300 -s 100 -l 2000 >/dev/null' 2>/dev/null",
		 rk_bin, root, workload);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	for (p = s; (p = strstr(p, "rk ")); p += 3) {
		int pol = atoi(p + 3);

		fifo += pol == 1;
		other += pol != 1;
	}
	p = strstr(s, "cmd ");
	cr_assert_not_null(p, "%s", s);
	cmd_policy = atoi(p + 4);
	/* The loop and one worker per CPU at least, none left at SCHED_OTHER. */
	cr_assert_geq(fifo, 2, "%d of the recorder's threads SCHED_FIFO:\n%s", fifo, s);
	cr_assert_eq(other, 0, "%d of the recorder's threads not SCHED_FIFO:\n%s", other, s);
	cr_assert_eq(cmd_policy, 0, "the command's policy %d, not SCHED_OTHER", cmd_policy);
	free(s);
	read_stat("rt", &stat);
	cr_assert_eq(stat.bpf_drops, 0);
	cr_assert_gt(stat.signals, 1000);
}

/*
 * The kernel's own events for @tid in @txt (perf script -F tid,event,trace
 * of sched_switch and sched_waking, in time order), counted as check_fn()
 * counts a file's: switch-outs into a sleep (S or D), those with no
 * sched_waking before the next switch-in (the kernel runs a sleeping task
 * again without one now and then: a spurious return from schedule(), the
 * sleep is then taken up again), those woken twice, and sched_waking by
 * another task (the one that woke itself makes no record).
 */
struct kernel_sleeps {
	long sleeps, unwoken, twice, wakeups;
};

static void kernel_sleeps_of(const char *txt, unsigned int tid, struct kernel_sleeps *k)
{
	int asleep = 0, run_wakeups = 0;
	const char *l, *e;

	memset(k, 0, sizeof(*k));
	for (l = txt; l && *l; l = e ? e + 1 : NULL) {
		unsigned int cur, pid, prev, next;
		char line[512], st[8], *f, *g, *h;

		e = strchr(l, '\n');
		snprintf(line, sizeof(line), "%.*s", (int)(e ? e - l : (long)strlen(l)), l);
		if (sscanf(line, " %u", &cur) != 1)
			continue;
		if (strstr(line, "sched:sched_waking:") && (f = strstr(line, " pid=")) &&
		    sscanf(f, " pid=%u", &pid) == 1) {
			if (pid != tid || cur == tid)
				continue;
			k->wakeups++;
			if (asleep)
				asleep++;
			else
				run_wakeups++;
			continue;
		}
		if (!strstr(line, "sched:sched_switch:") || !(f = strstr(line, " prev_pid=")) ||
		    !(g = strstr(line, " prev_state=")) || !(h = strstr(line, " next_pid=")) ||
		    sscanf(f, " prev_pid=%u", &prev) != 1 ||
		    sscanf(g, " prev_state=%7s", st) != 1 || sscanf(h, " next_pid=%u", &next) != 1)
			continue;
		if (prev == tid) {
			asleep = 0; /* one still asleep: no run after it, unpaired (check_fn) */
			if (st[0] == 'S' || st[0] == 'D') {
				k->sleeps++;
				asleep = 1 + run_wakeups;
			}
			run_wakeups = 0;
		}
		if (next == tid) {
			if (asleep) {
				k->unwoken += asleep == 1;
				k->twice += asleep > 2;
				asleep = 0;
			}
			run_wakeups = 0;
		}
	}
}

/*
 * record --wakeups: the wakeup programs load and attach (on each kernel
 * vmtest boots, too), and every thread's file carries its wakeups in time
 * order among its switches, the first its creation (sched_wakeup_new); the
 * counter in stat is their sum; sched has a delay for most runs. Exact, not
 * lucky: perf records the kernel's own sched_switch and sched_waking of the
 * same run, and each thread's file has as many sleeps, wakeups (its birth
 * besides), sleeps woken twice and sleeps with no wakeup before the next
 * run as the kernel's events. (Expecting none of the last failed 1 run in
 * ~50 under ASan here: bpftrace on the kernel's own tracepoints saw the
 * same thread switch out in S and back in on another CPU with no
 * sched_waking, then sleep again at once: a spurious return from
 * schedule(), which callers of it must expect.) In make vmtest the
 * comparison runs in the guest that runs the peers' tools (6.12's; all
 * three guests passed it once, at 3.5x a guest's time for this test).
 */
Test(record, wakeups_are_recorded_in_time_order)
{
	/* In make vmtest, in the guest that runs the peers' tools (6.12's; ~30 s under TCG). */
	int perf = !access("/usr/bin/perf", X_OK) && !getenv("RK_VMTEST_NOPEER");
	char *ktxt = NULL;
	unsigned int files[16];
	char dir[256], path[300], cmd[2048], *s;
	struct rk_session_stat st;
	long total = 0;
	size_t n, i;
	int status;

	/* With perf: the kernel's own events of the same run, the workload's only. */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && %s %s record --root %s --session wk --wakeups -- %s -t 3 -i 30 -s 500 "
		 ">wk.out 2>&1; echo rc=$?; %s",
		 root,
		 perf ? "perf record -q -a -o k.data -e sched:sched_switch --filter "
			"'prev_comm == \"workload\" || next_comm == \"workload\"' -e "
			"sched:sched_waking --filter 'comm == \"workload\"' --" :
			"",
		 rk_bin, root, workload,
		 perf ? "perf script -i k.data -F tid,event,trace 2>&1" : "");
	s = sh_out(cmd, &status);
	cr_assert_eq(status, 0, "%s", s);
	snprintf(path, sizeof(path), "%s/wk.out", root);
	cr_assert_not_null(strstr(s, "rc=0\n"), "record%s: %s\n%s", perf ? " under perf" : "", s,
			   slurp(path));
	if (perf)
		ktxt = s;
	else
		free(s);
	read_stat("wk", &st);
	cr_assert_eq(st.bpf_drops, 0, "signals dropped: a wakeup may be among them");
	snprintf(dir, sizeof(dir), "%s/wk/sched", root);
	n = files_in(dir, files, 16);
	cr_assert_eq(n, 4, "%zu files", n);
	for (i = 0; i < n; i++) {
		struct check c;

		snprintf(path, sizeof(path), "%s/%u", dir, files[i]);
		check_file(path, &c, NULL); /* time order, wakeups included */
		total += c.wakeups;
		if (c.tid == c.tgid)
			continue;
		cr_assert_gt(c.sleeps, 0, "%s: no switch-out into a sleep", path);
		if (ktxt) {
			struct kernel_sleeps k;

			kernel_sleeps_of(ktxt, c.tid, &k);
			cr_assert(
				c.sleeps == k.sleeps && c.sleeps_unwoken == k.unwoken &&
					c.sleeps_woken_twice == k.twice &&
					c.wakeups == k.wakeups + 1,
				"%s: sleeps %ld, unwoken %ld, woken twice %ld, wakeups %ld (birth "
				"included); the kernel's events: %ld, %ld, %ld, %ld (and its birth)",
				path, c.sleeps, c.sleeps_unwoken, c.sleeps_woken_twice, c.wakeups,
				k.sleeps, k.unwoken, k.twice, k.wakeups);
		} else {
			/* No perf: what holds whatever the kernel does. */
			cr_assert_geq(c.wakeups,
				      c.sleeps - c.sleeps_unpaired - c.sleeps_unwoken + 1,
				      "%s: %ld wakeups for %ld sleeps (%ld with no run after them, "
				      "%ld with none before it) and its birth",
				      path, c.wakeups, c.sleeps, c.sleeps_unpaired,
				      c.sleeps_unwoken);
		}
		snprintf(cmd, sizeof(cmd),
			 "%s show --root %s --session wk %u | grep -m1 RINGKEEPER_WAKEUP", rk_bin,
			 root, files[i]);
		s = sh_out(cmd, NULL);
		cr_assert_not_null(strstr(s, "woken (new) by tid"), "%s: first: %s", path, s);
		free(s);
	}
	cr_assert_eq(st.wakeups_on, 1);
	cr_assert_eq((long)st.wakeups, total, "stat %llu, files %ld",
		     (unsigned long long)st.wakeups, total);
	snprintf(
		cmd, sizeof(cmd),
		"%s sched --root %s wk --json | python3 -c 'import json,sys; "
		"t=json.load(sys.stdin)[\"total\"]; print(\"delays\", t[\"sch_delay\"][\"runs\"] * 2 "
		"> t[\"runs\"], t[\"wakeups\"])'",
		rk_bin, root);
	s = sh_out(cmd, &status);
	cr_assert_eq(status, 0, "%s", s);
	cr_assert_not_null(strstr(s, "delays True "), "%s", s);
	free(s);
	free(ktxt);
}
