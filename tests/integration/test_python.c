// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Python reader (python/ringkeeper, written from docs/format.md) against
 * ringkeeper's own: show --json of every file of a recorded session and of
 * every buffer of its snapshot bundle, record for record; its runs table
 * against sched --json; its hostile-input unittest; and show and the reader
 * on mutated files, where both must accept or refuse alike.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "helpers.h"
#include "shell.h"

TestSuite(python, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 300);

static char repo[256];

/* The source tree's python/, or skip without a python3. */
static void need_python(void)
{
	int st;
	char *v = sh_out("python3 -c 'import sys; print(sys.version_info >= (3, 9))' 2>&1", &st);

	if (st || strncmp(v, "True", 4))
		cr_skip_test("no python3 (3.9 or later): %s", v);
	free(v);
	source_tree(repo, sizeof(repo), NULL, 0);
}

/* Run @cmd (in @root, the reader on PYTHONPATH); assert it exits 0; print its last line. */
static void must(const char *what, const char *cmd)
{
	char *full, *out, *last;
	int st;

	cr_assert_geq(asprintf(&full, "cd %s && export PYTHONPATH=%s/python && { %s; } 2>&1", root,
			       repo, cmd),
		      0);
	out = sh_out(full, &st);
	free(full);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s\n%s", what, cmd, out);
	while (*out && out[strlen(out) - 1] == '\n')
		out[strlen(out) - 1] = '\0';
	last = strrchr(out, '\n');
	printf("python: %s: %s\n", what, last ? last + 1 : out);
	free(out);
}

/* show's arguments for many buffers, compared by same_show_many() in one interpreter. */
struct show_list {
	char *cmd; /* "python3 .../showdiff.py --many RK_BIN 'ARGS' 'ARGS' ..." */
	size_t n;
};

static void show_list_add(struct show_list *l, const char *fmt, ...)
{
	char *arg, *cmd;
	va_list ap;

	va_start(ap, fmt);
	cr_assert_geq(vasprintf(&arg, fmt, ap), 0);
	va_end(ap);
	if (!l->cmd)
		cr_assert_geq(asprintf(&l->cmd, "python3 %s/python/tests/showdiff.py --many %s",
				       repo, rk_bin),
			      0);
	cr_assert_geq(asprintf(&cmd, "%s '%s'", l->cmd, arg), 0);
	free(l->cmd);
	free(arg);
	l->cmd = cmd;
	l->n++;
}

/*
 * show --json of every buffer of @l by both readers, compared record for
 * record: one interpreter for them all (one per buffer was most of this
 * suite's time).
 */
static void same_show_many(const char *what, struct show_list *l)
{
	cr_assert_gt(l->n, 0, "%s: no buffers", what);
	must(what, l->cmd);
	free(l->cmd);
	l->cmd = NULL;
	l->n = 0;
}

/* Every buffer file of session @s in each of @srcs, compared; return how many. */
static size_t same_show_files(const char *s, const char *const srcs[], unsigned int *tids,
			      size_t *ntids)
{
	struct show_list l = { 0 };
	char dir[300];
	unsigned int t[256];
	size_t n, i, k, total;

	for (k = 0; srcs[k]; k++) {
		snprintf(dir, sizeof(dir), "%s/%s/%s", root, s, srcs[k]);
		n = files_in(dir, t, 256);
		cr_assert_gt(n, 0, "no %s files in %s", srcs[k], dir);
		for (i = 0; i < n; i++)
			show_list_add(&l, "%s/%s/%u", s, srcs[k], t[i]);
		if (!strcmp(srcs[k], "sched")) {
			memcpy(tids, t, n * sizeof(*t));
			*ntids = n;
		}
	}
	total = l.n;
	same_show_many("every file of the session", &l);
	return total;
}

Test(python, reader_agrees_with_show_and_sched_on_a_session_and_its_bundle)
{
	/* Samples with call chains, and a tracepoint's fields (the session's tracing_data). */
	const char *srcs[] = { "sched", "cpu-clock", "sched:sched_switch", "sideband", NULL };
	const char *events[] = { "sched", "cpu-clock", "sched:sched_switch", NULL };
	struct show_list l = { 0 };
	char cmd[2048], bundle[300];
	unsigned int tids[256];
	size_t ntids = 0, files, i, k;
	int st;

	plain_run_only("the Python reader is the same in both runs, and the view and snapshot "
		       "tests run show and sched over such files under ASan");
	need_python();
	{
		char *rec[] = { (char *)rk_bin,
				"record",
				"--root",
				root,
				"--session",
				"py",
				"--wakeups",
				"--offcpu",
				"-e",
				"cpu-clock,sched:sched_switch",
				"-g",
				"--",
				(char *)workload,
				"-t",
				"4",
				"-i",
				"200",
				"-s",
				"100",
				NULL };
		char *o, *e;

		st = run_rk(rec, &o, &e);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "record: %s", e);
		free(o);
		free(e);
	}
	/* Every file of the session: sched (switches, wakeups, stacks), samples, sideband. */
	files = same_show_files("py", srcs, tids, &ntids);
	cr_assert_geq(ntids, 5, "%zu sched files", ntids);
	snprintf(cmd, sizeof(cmd),
		 "%s sched --json --all --root %s py > .sched.json && "
		 "python3 %s/python/tests/runsdiff.py .sched.json py",
		 rk_bin, root, repo);
	must("runs of the session", cmd);

	/* The session's snapshot bundle: every buffer note, read from the bundle alone. */
	snprintf(bundle, sizeof(bundle), "%s/py.rkb", root);
	{
		char *snap[] = { (char *)rk_bin, "snapshot", "--root", root,
				 "-o",		 bundle,     "py",     NULL };
		char *o, *e;

		st = run_rk(snap, &o, &e);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "snapshot: %s", e);
		free(o);
		free(e);
	}
	for (i = 0; i < ntids; i++)
		for (k = 0; events[k]; k++)
			show_list_add(&l, "--core py.rkb -e %s %u", events[k], tids[i]);
	same_show_many("every buffer of the bundle", &l);
	snprintf(
		cmd, sizeof(cmd),
		"%s show --core py.rkb > .c.txt; python3 -m ringkeeper show --core py.rkb > .p.txt && "
		"diff .c.txt .p.txt && echo listing equal",
		rk_bin);
	must("the bundle's listing", cmd);
	snprintf(cmd, sizeof(cmd),
		 "%s sched --json --all --bundle py.rkb > .sched.json && "
		 "python3 %s/python/tests/runsdiff.py .sched.json py.rkb",
		 rk_bin, repo);
	must("runs of the bundle", cmd);
	printf("python: %zu files and %zu bundle buffers read alike\n", files, ntids * 3);

	/* Hostile input: the unittest (real files mutated too), then both readers on mutations. */
	snprintf(cmd, sizeof(cmd),
		 "RK_PY_SAMPLES=%s/py.rkb:%s/py/sched/%u:%s/py/cpu-clock/%u "
		 "python3 -m unittest discover -s %s/python/tests",
		 root, root, tids[1], root, tids[1], repo);
	must("hostile-input unittest", cmd);
	snprintf(cmd, sizeof(cmd),
		 "python3 %s/python/tests/differential.py %s 120 %ld py/sched/%u py/cpu-clock/%u",
		 repo, rk_bin, (long)getpid(), tids[1], tids[1]);
	must("show and the reader on mutated files", cmd);
}

/*
 * A real core (gcore of a traced workload, augmented by the coredump
 * handler run by hand as the kernel would run it): every sched buffer it
 * carries, its listing and its runs read alike by both readers.
 */
Test(python, reader_agrees_with_show_on_a_real_core)
{
	char wo[128], we[128], core[200], state[200], cmd[2048], args[300], line[64];
	struct show_list l = { 0 };
	const char *extra[] = { "--wakeups", NULL };
	unsigned int tids[64];
	size_t n, i;
	int ready, st;
	pid_t wl, rk;
	FILE *f;

	need_python();
	if (system("command -v gcore >/dev/null 2>&1"))
		cr_skip_test("no gcore (gdb) to make a real core: make deps installs gdb");
	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	{
		char *argv[] = { (char *)workload, "-t", "2", "-i", "100000", "-s", "500", NULL };

		wl = spawn(argv, wo, we, -1);
	}
	rk = start_recorder_on(wl, "cr", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "recorder not ready");
	usleep(300000);
	snprintf(core, sizeof(core), "%s/in.core", root);
	snprintf(cmd, sizeof(cmd), "gcore -o %s %d >/dev/null 2>&1 && mv %s.%d %s", core, wl, core,
		 wl, core);
	st = system(cmd);
	snprintf(state, sizeof(state), "%s/state", root);
	f = fopen(state, "we");
	cr_assert_not_null(f);
	fprintf(f, "pattern=%s/core.%%P\npipe_limit=0\n", root);
	cr_assert_eq(fclose(f), 0);
	if (!st) {
		/* The handler's arguments: %P %I %p %i %s %c %t %u %g %d %h %e %E. */
		snprintf(
			cmd, sizeof(cmd),
			"env -i RINGKEEPER_HANDLER_ROOT=%s RINGKEEPER_COREDUMP_STATE=%s %s coredump "
			"--handle %d %d %d %d 11 18446744073709551615 1700000000 0 0 1 testhost "
			"workload '!bin!workload' < %s",
			root, state, rk_bin, wl, wl, wl, wl, core);
		st = system(cmd);
	}
	kill(wl, SIGKILL);
	wait_for(wl, 30000);
	kill(rk, SIGINT);
	wait_for(rk, 30000);
	cr_assert_eq(st, 0, "gcore or the handler failed: %s", cmd);

	snprintf(args, sizeof(args), "%s/cr/sched", root);
	n = files_in(args, tids, 64);
	cr_assert_geq(n, 3, "%zu sched files", n);
	for (i = 0; i < n; i++)
		show_list_add(&l, "--core core.%d %u", wl, tids[i]);
	same_show_many("every buffer of the core", &l);
	snprintf(
		cmd, sizeof(cmd),
		"%s show --core core.%d > .c.txt; python3 -m ringkeeper show --core core.%d > .p.txt "
		"&& diff .c.txt .p.txt && echo listing equal",
		rk_bin, wl, wl);
	must("the core's listing", cmd);
	snprintf(cmd, sizeof(cmd),
		 "%s sched --json --all --core core.%d > .sched.json && "
		 "python3 %s/python/tests/runsdiff.py .sched.json core.%d",
		 rk_bin, wl, repo, wl);
	must("runs of the core", cmd);
}

/*
 * Live files: a busy workload's rings (16 KiB) wrap over and over while the
 * reader reads them again and again; each read is whole records in time
 * order (the spec's live-reader protocol), never a format error.
 */
Test(python, reader_reads_live_files_while_they_wrap)
{
	char wo[128], we[128], cmd[1024], line[64];
	int ready;
	pid_t wl, rk;

	need_python();
	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	{
		char *argv[] = { (char *)workload, "-t", "4", "-i", "100000", "-s", "50", NULL };

		wl = spawn(argv, wo, we, -1);
	}
	rk = start_recorder_on(wl, "live", &ready, NULL);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "recorder not ready");
	usleep(500000);
	snprintf(cmd, sizeof(cmd), "python3 %s/python/tests/live.py live 4", repo);
	{
		char full[1400];
		char *out;
		int st;

		snprintf(full, sizeof(full), "cd %s && PYTHONPATH=%s/python %s 2>&1", root, repo,
			 cmd);
		out = sh_out(full, &st);
		kill(wl, SIGKILL);
		wait_for(wl, 30000);
		kill(rk, SIGINT);
		wait_for(rk, 30000);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s\n%s", cmd, out);
		printf("python: %s", out);
		free(out);
	}
}
