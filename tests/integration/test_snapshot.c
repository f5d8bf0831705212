// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ringkeeper snapshot: a session cut at T into a bundle, read back elsewhere. */
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
#include "elfcore.h"
#include "helpers.h"

TestSuite(snapshot, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 240);

/* What one sched history holds up to T (and after it). */
struct upto {
	__u64 t, st;
	long records, switches, after, torn;
};

static int upto_fn(const struct perf_event_header *h, void *ctx)
{
	struct upto *u = ctx;
	__u64 when = rk_record_time(u->st, h);

	if (h->size < sizeof(*h) + 32) {
		u->torn++;
		return 0;
	}
	if (when > u->t) {
		u->after++;
		return 0;
	}
	u->records++;
	u->switches += h->type == PERF_RECORD_SWITCH;
	return 0;
}

static void count_upto(const struct rk_bufile *bf, __u64 t, struct upto *u)
{
	memset(u, 0, sizeof(*u));
	u->t = t;
	u->st = bf->pmu->attr.sample_type;
	cr_assert_eq(rk_bufile__for_each(bf, upto_fn, u), 0, "records do not parse");
}

/* The bundle's T, from its description. */
static __u64 bundle_t(const struct rk_core_bufs *b)
{
	unsigned long long t = 0;
	const char *p = b->session ? strstr(b->session, "snapshot time ") : NULL;

	cr_assert_not_null(p, "no snapshot time in: %s", b->session ? b->session : "(none)");
	cr_assert_eq(sscanf(p, "snapshot time %llu", &t), 1);
	return t;
}

/* Wait (bounded) until @n sched files of the session have records. */
static void wait_for_records(const char *session, size_t n)
{
	char dir[256], path[400];
	unsigned int tids[64];
	uint64_t end = now_ms() + 20000;
	size_t busy = 0, nf, i;

	snprintf(dir, sizeof(dir), "%s/%s/sched", root, session);
	while (busy < n) {
		cr_assert_lt(now_ms(), end, "only %zu of %zu threads recorded in 20 s", busy, n);
		nf = files_in(dir, tids, 64);
		for (busy = 0, i = 0; i < nf; i++) {
			struct rk_bufile *bf;

			snprintf(path, sizeof(path), "%s/%u", dir, tids[i]);
			bf = rk_bufile__open(path, NULL);
			busy += bf && __atomic_load_n(&bf->pg->data_head, __ATOMIC_ACQUIRE) > 4096;
			rk_bufile__free(bf);
		}
		usleep(5000);
	}
}

/*
 * The workload @args (workload's options; "-w FD" added, FD its go pipe)
 * recorded with -p, a snapshot taken while it runs (after @files thread
 * files have records); with @churn, the workload waits for a second byte
 * to exit (-C); with @slow_us, the recorder hands each signal out that much
 * later (RINGKEEPER_TEST_SIGNAL_US: a backlog) from 4 KiB rings. Then the
 * bundle against the live files up to T.
 */
static void cut_matches_live(const char *const args[], size_t files, int churn, const char *slow_us)
{
	char wo[128], we[128], go_fd[16], line[64], out[200], path[400];
	const char *plain[] = { "-m", "1M", NULL };
	const char *slow[] = { "-m", "1M", "--ringbuf-size", "4096", NULL };
	struct rk_core_bufs b;
	const char *why = NULL;
	long bundled = 0, live_after = 0, nbufs = 0;
	int gp[2], ready, st;
	pid_t wl, rk;
	size_t i;
	__u64 t;

	cr_assert_eq(pipe(gp), 0);
	snprintf(go_fd, sizeof(go_fd), "%d", gp[0]);
	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	{
		char *argv[32];
		int n = 0;

		argv[n++] = (char *)workload;
		for (i = 0; args[i] && n < 28; i++)
			argv[n++] = (char *)args[i];
		argv[n++] = "-w";
		argv[n++] = go_fd;
		argv[n] = NULL;
		wl = spawn(argv, wo, we, gp[0]);
	}
	close(gp[0]);
	if (slow_us)
		setenv("RINGKEEPER_TEST_SIGNAL_US", slow_us, 1);
	rk = start_recorder_on(wl, "run", &ready, slow_us ? slow : plain);
	unsetenv("RINGKEEPER_TEST_SIGNAL_US");
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "recorder not ready");
	cr_assert_eq(write(gp[1], "g", 1), 1);
	if (churn) {
		struct rk_session_stat ss = { 0 };
		uint64_t end = now_ms() + 30000;

		/* Threads come and go: cut once this many have been traced. */
		while (ss.threads < files) {
			cr_assert_lt(now_ms(), end, "%llu of %zu threads traced in 30 s",
				     (unsigned long long)ss.threads, files);
			usleep(10000);
			read_stat("run", &ss);
		}
	} else {
		wait_for_records("run", files);
	}
	snprintf(out, sizeof(out), "%s/run.rkb", root);
	{
		char *argv[] = { (char *)rk_bin, "snapshot",	 "--root", root, "-o", out,
				 "--reason",	 "mid-run test", "run",	   NULL };
		char *o, *e;

		st = run_rk(argv, &o, &e);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "snapshot: %s", e);
		cr_assert_not_null(strstr(e, "reason") || strstr(e, "mid-run test"), "%s", e);
		cr_assert_null(strstr(e, "may be missing"), "the recorder did not settle: %s", e);
		free(o);
		free(e);
	}
	/* The churn exits on a second byte; the others at their end. */
	if (churn)
		cr_assert_eq(write(gp[1], "g", 1), 1);
	close(gp[1]);
	st = wait_for(wl, 120000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = wait_for(rk, 30000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	cr_assert_eq(rk_core_bufs__load(out, &b, &why), 0, "%s", why);
	t = bundle_t(&b);
	cr_assert_not_null(strstr(b.session, "reason mid-run test\n"));
	for (i = 0; i < b.n; i++) {
		const struct rk_core_buf *cb = &b.v[i];
		struct upto snap, live;
		struct rk_bufile *bf;

		if (cb->type != RK_NOTE_BUFFER || strncmp(cb->name, "sched/", 6))
			continue;
		cr_assert_null(cb->why, "%s: %s", cb->name, cb->why);
		count_upto(&cb->bf, t, &snap);
		cr_assert_eq(snap.after, 0, "%s: %ld records after T in the bundle", cb->name,
			     snap.after);
		cr_assert_eq(snap.torn, 0, "%s: a record too short for its sample_id", cb->name);
		snprintf(path, sizeof(path), "%s/run/%s", root, cb->name);
		bf = rk_bufile__open(path, NULL);
		cr_assert_not_null(bf, "%s", path);
		/* Nothing overwritten since: the live file still has all it had at T. */
		cr_assert_eq(bf->ident->overwritten, 0, "%s: ring too small for the test", path);
		count_upto(bf, t, &live);
		cr_assert_eq(snap.records, live.records, "%s: %ld records up to T, the file %ld",
			     cb->name, snap.records, live.records);
		cr_assert_eq(snap.switches, live.switches, "%s: %ld switches up to T, the file %ld",
			     cb->name, snap.switches, live.switches);
		bundled += snap.records;
		live_after += live.after;
		nbufs++;
		rk_bufile__free(bf);
	}
	printf("snapshot: %ld thread buffers, %ld records up to T equal the live files', %ld "
	       "after T in the live files\n",
	       nbufs, bundled, live_after);
	cr_assert_geq(nbufs, (long)files, "%ld thread buffers bundled", nbufs);
	cr_assert_gt(bundled, 0, "nothing bundled");
	cr_assert_gt(live_after, 0, "the snapshot was not taken while the threads ran");
	rk_core_bufs__free(&b);
}

/* Busy: 6 threads switching every ~100 us for about 2 s. */
Test(snapshot, running_session_cut_at_t_matches_the_live_files_up_to_t)
{
	const char *args[] = { "-t", "6", "-i", "4000", "-s", "100", "-l", "20000", NULL };

	cut_matches_live(args, 6, 0, NULL);
}

/*
 * The same with a recorder far behind its signals (2 ms each, 4 KiB rings:
 * an intake lasts up to ~0.4 s): its counters are published in the middle
 * of an intake (at least once a second, issue 48), so two publications
 * after T no longer mean an intake that began after T ended; the snapshot
 * waits for the stat file's handed_ns to reach T.
 */
Test(snapshot, a_cut_of_a_recorder_with_a_backlog_matches_the_live_files_up_to_t)
{
	const char *args[] = { "-t", "2", "-i", "6000", "-s", "50", NULL };

	cut_matches_live(args, 2, 0, "2000");
}

/*
 * 2,000 threads that come and go (50 at a time) while the snapshot is
 * cut: the dead ones' files are final, the live ones' still written; each
 * has the same records up to T in the bundle as in its file.
 */
Test(snapshot, a_cut_amid_2000_churning_threads_matches_the_live_files_up_to_t)
{
	const char *args[] = { "-C", "2000", NULL };

	cut_matches_live(args, 200, 1, NULL);
}

/* @cmd's stdout without the lines starting with '#' (file paths). */
static char *output_of(const char *cmd)
{
	char full[1200];
	int st;
	char *s;

	snprintf(full, sizeof(full), "%s | grep -v '^#'", cmd);
	s = sh_out(full, &st);
	cr_assert_eq(st, 0, "%s", cmd);
	return s;
}

Test(snapshot, bundle_read_elsewhere_shows_what_the_session_showed)
{
	char bin[200], out[300], away[200], cmd[1000], tid[16], *live_show, *live_sched,
		*live_samples, *s;
	int st;

	/* A copy of the workload, deleted before reading: its symbols must come from the bundle. */
	snprintf(bin, sizeof(bin), "%s/wl-copy", root);
	snprintf(cmd, sizeof(cmd), "cp %s %s", workload, bin);
	cr_assert_eq(system(cmd), 0);
	{
		char *rec[] = { (char *)rk_bin, "record", "--root", root, "--session", "el", "-e",
				"cpu-clock",	"-g",	  "--",	    bin,  "-t",	       "2",  "-i",
				"50",		"-s",	  "500",    "-l", "300000",    NULL };
		char *o, *e;

		st = run_rk(rec, &o, &e);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", e);
		cr_assert_eq(sscanf(strstr(o, "tid "), "tid %15s", tid), 1, "%s", o);
		free(o);
		free(e);
	}
	snprintf(out, sizeof(out), "%s/el.rkb", root);
	{
		char *argv[] = { (char *)rk_bin, "snapshot", "--root", root, "-o", out, "el", NULL };
		char *o, *e;

		st = run_rk(argv, &o, &e);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", e);
		cr_assert_not_null(strstr(e, "symbol tables"), "%s", e);
		free(o);
		free(e);
	}
	snprintf(cmd, sizeof(cmd), "%s show --root %s --session el %s", rk_bin, root, tid);
	live_show = output_of(cmd);
	snprintf(cmd, sizeof(cmd), "%s sched --root %s el", rk_bin, root);
	live_sched = output_of(cmd);
	snprintf(cmd, sizeof(cmd), "%s show --root %s --session el -e cpu-clock %s", rk_bin, root,
		 tid);
	live_samples = output_of(cmd);
	cr_assert_not_null(strstr(live_samples, "body+0x"), "no symbol live: %s", live_samples);

	/* Elsewhere: the bundle moved, the session and the program gone. */
	snprintf(away, sizeof(away), "%s/away", root);
	cr_assert_eq(mkdir(away, 0700), 0);
	snprintf(cmd, sizeof(cmd), "mv %s %s/el.rkb && %s rm --root %s el >/dev/null && rm %s", out,
		 away, rk_bin, root, bin);
	cr_assert_eq(system(cmd), 0);
	snprintf(out, sizeof(out), "%s/el.rkb", away);

	snprintf(cmd, sizeof(cmd), "%s show --core %s %s", rk_bin, out, tid);
	s = output_of(cmd);
	cr_assert_str_eq(s, live_show, "show differs:\n%s\n--- live:\n%s", s, live_show);
	free(s);
	snprintf(cmd, sizeof(cmd), "%s sched --bundle %s", rk_bin, out);
	s = output_of(cmd);
	cr_assert_str_eq(s, live_sched, "sched differs:\n%s\n--- live:\n%s", s, live_sched);
	free(s);
	snprintf(cmd, sizeof(cmd), "%s show --core %s -e cpu-clock %s", rk_bin, out, tid);
	s = output_of(cmd);
	cr_assert_str_eq(s, live_samples, "samples differ (symbols):\n%s\n--- live:\n%s", s,
			 live_samples);
	free(s);
	/* The listing says what, when and why. */
	snprintf(cmd, sizeof(cmd), "%s show --core %s | head -1", rk_bin, out);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "snapshot of session el at "), "%s", s);
	cr_assert_not_null(strstr(s, "reason: manual"), "%s", s);
	free(s);
	free(live_show);
	free(live_sched);
	free(live_samples);
}

Test(snapshot, bad_input_gets_a_clear_error)
{
	char out[200], cut[200], junk[200], cmd[600];

	{
		char *argv[] = { (char *)rk_bin, "snapshot", "--root", root, "nosuch", NULL };

		expect_error(argv, 1, "no session");
	}
	{
		char *rec[] = {
			(char *)rk_bin,	  "record", "--root", root, "--session", "bad", "--",
			(char *)workload, "-t",	    "1",      "-i", "10",	 NULL
		};
		char *o, *e;
		int st = run_rk(rec, &o, &e);

		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", e);
		free(o);
		free(e);
	}
	snprintf(out, sizeof(out), "%s/bad.rkb", root);
	{
		char *argv[] = {
			(char *)rk_bin, "snapshot", "--root", root, "-o", out, "bad", NULL
		};
		char *o, *e;
		int st = run_rk(argv, &o, &e);

		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", e);
		free(o);
		free(e);
		expect_error(argv, 1, "exists: not replacing it");
	}
	{
		char *argv[] = { (char *)rk_bin, "snapshot", "--root", root,	  "-o", out,
				 "-p",		 "1",	     "bad",    "--force", NULL };

		/* Options after the session are taken as before it (issue 52.1). */
		expect_error(argv, 1, "no buffer of pid 1");
	}
	{
		char *argv[] = { (char *)rk_bin, "snapshot", "--root", root,  "-o", out,
				 "--force",	 "-p",	     "1",      "bad", NULL };

		expect_error(argv, 1, "no buffer of pid 1");
	}
	/* Truncated inside its notes: refused with a reason, or buffers flagged; never a crash. */
	snprintf(cut, sizeof(cut), "%s/cut.rkb", root);
	snprintf(cmd, sizeof(cmd), "head -c 3000 %s > %s", out, cut);
	cr_assert_eq(system(cmd), 0);
	{
		char *argv[] = { (char *)rk_bin, "sched", "--core", cut, NULL };

		expect_error(argv, 1, "--core");
	}
	{
		char *argv[] = { (char *)rk_bin, "show", "--core", cut, "1", NULL };
		char *o, *e;
		int st = run_rk(argv, &o, &e);

		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1,
			  "show --core of a truncated bundle");
		cr_assert_gt(strlen(e), 0);
		free(o);
		free(e);
	}
	/* Not an ELF file at all. */
	snprintf(junk, sizeof(junk), "%s/junk.rkb", root);
	snprintf(cmd, sizeof(cmd), "head -c 5000 /dev/urandom > %s", junk);
	cr_assert_eq(system(cmd), 0);
	{
		char *argv[] = { (char *)rk_bin, "show", "--bundle", junk, NULL };

		expect_error(argv, 1, "not an ELF64 core");
	}
}

Test(snapshot, for_user_bundle_has_only_what_that_user_may_read)
{
	char out[200], cmd[600], *s;
	struct rk_core_bufs b;
	const char *why = NULL;
	struct stat sb;
	size_t i;
	int st;

	if (access("/usr/bin/setpriv", X_OK))
		cr_skip_test("no setpriv to run the workload as nobody");
	/* Before its exec, setpriv's history is root's (exec-root-only); after, nobody's. */
	snprintf(cmd, sizeof(cmd),
		 "cp %s %s/wl && chmod 755 %s %s/wl && %s record --root %s --session fu -- "
		 "setpriv --reuid nobody --regid nogroup --clear-groups %s/wl -t 2 -i 10 "
		 ">/dev/null 2>&1",
		 workload, root, root, root, rk_bin, root, root);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(out, sizeof(out), "%s/fu.rkb", root);
	snprintf(cmd, sizeof(cmd), "%s snapshot --root %s -o %s --for-user nobody fu 2>&1", rk_bin,
		 root, out);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	cr_assert_not_null(strstr(s, "1 files not bundled"), "the root-only file: %s", s);
	free(s);
	cr_assert_eq(stat(out, &sb), 0);
	cr_assert_neq(sb.st_uid, 0, "the bundle is nobody's");
	cr_assert_eq(sb.st_mode & 07777, 0600);
	cr_assert_eq(rk_core_bufs__load(out, &b, &why), 0, "%s", why);
	cr_assert_eq(b.n, 3, "the sched histories of main and its 2 threads after exec: %zu", b.n);
	for (i = 0; i < b.n; i++)
		cr_assert_neq(b.v[i].bf.ident->state, RK_THREAD_EXECED, "a root-only history");
	rk_core_bufs__free(&b);
}

/*
 * --for-user's symbol tables are of the files the user's processes mapped,
 * read as that user: nobody's program, recorded with -e, then replaced by
 * nobody with a symlink to a file only root reads. The bundle has the
 * program's table while it is there, and none after (another file at its
 * path, said), never the root-only file's symbols: it was opened by path,
 * as root, through the link.
 */
Test(snapshot, for_user_symbols_are_of_the_mapped_file_read_as_the_user)
{
	char cmd[1400], out[200], *s, *said;
	int st;

	if (access("/usr/bin/setpriv", X_OK))
		cr_skip_test("no setpriv to run the workload as nobody");
	cr_assert_eq(chmod(root, 0755), 0);
	/* nobody's directory, nobody's program; a root-only ELF (ours) beside. */
	snprintf(cmd, sizeof(cmd),
		 "mkdir %s/u && cp %s %s/u/wl && chown -R nobody %s/u && chmod 755 %s/u/wl && "
		 "cp %s %s/secret && chmod 600 %s/secret && "
		 "%s record --root %s --session sy -e cpu-clock -- setpriv --reuid nobody "
		 "--regid nogroup --clear-groups %s/u/wl -t 1 -i 10 -l 200000 >/dev/null 2>&1",
		 root, workload, root, root, root, rk_bin, root, root, rk_bin, root, root);
	cr_assert_eq(system(cmd), 0, "%s", cmd);

	snprintf(out, sizeof(out), "%s/before.rkb", root);
	snprintf(cmd, sizeof(cmd), "%s snapshot --root %s -o %s --for-user nobody sy 2>&1", rk_bin,
		 root, out);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	cr_assert_null(strstr(s, "no symbol table"), "%s", s);
	free(s);
	snprintf(cmd, sizeof(cmd), "grep -c -a offcpu_pipe_read %s", out);
	s = sh_out(cmd, NULL);
	cr_assert_gt(atoi(s), 0, "no table of nobody's program in the bundle");
	free(s);

	snprintf(cmd, sizeof(cmd),
		 "setpriv --reuid nobody --regid nogroup --clear-groups sh -c "
		 "'rm %s/u/wl && ln -s %s/secret %s/u/wl'",
		 root, root, root);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(out, sizeof(out), "%s/after.rkb", root);
	snprintf(cmd, sizeof(cmd), "%s snapshot --root %s -o %s --for-user nobody sy 2>&1", rk_bin,
		 root, out);
	said = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", said);
	snprintf(cmd, sizeof(cmd), "grep -c -a rk_bundle_write %s", out);
	s = sh_out(cmd, NULL);
	cr_assert_eq(atoi(s), 0, "the root-only file's symbols are in nobody's bundle");
	free(s);
	cr_assert_not_null(strstr(said, "1 mapped files have no symbol table"), "not said:\n%s",
			   said);
	free(said);
	snprintf(cmd, sizeof(cmd), "grep -c -a offcpu_pipe_read %s", out);
	s = sh_out(cmd, NULL);
	cr_assert_eq(atoi(s), 0, "a table for a file no longer there");
	free(s);

	/* Another ELF nobody may read, at the path: not the one mapped either. */
	snprintf(cmd, sizeof(cmd),
		 "setpriv --reuid nobody --regid nogroup --clear-groups sh -c "
		 "'rm %s/u/wl && cp /bin/true %s/u/wl'",
		 root, root);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(out, sizeof(out), "%s/other.rkb", root);
	snprintf(cmd, sizeof(cmd), "%s snapshot --root %s -o %s --for-user nobody sy 2>&1", rk_bin,
		 root, out);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	cr_assert_not_null(strstr(s, "1 mapped files have no symbol table"), "not said:\n%s", s);
	free(s);
}
