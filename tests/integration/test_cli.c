// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_cli.c - what a user finds without reading the source: --help names
 * every command, help COMMAND and --version work, the man page lists every
 * option each command's --help lists, bash completion offers them, and
 * make install / uninstall put and remove the files where the README says.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "helpers.h"

TestSuite(cli, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 300);

static const char *const commands[] = { "record", "ls", "stat", "show",	   "export",
					"gc",	  "rm", "pmu",	"coredump" };

Test(cli, help_names_every_command_and_each_has_its_own_help)
{
	char cmd[512], *s, *h;
	int st;
	size_t i;

	snprintf(cmd, sizeof(cmd), "%s --help", rk_bin);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char want[64];

		snprintf(want, sizeof(want), "\n  %s ", commands[i]);
		cr_assert_not_null(strstr(s, want), "--help does not list %s:\n%s", commands[i], s);
		snprintf(cmd, sizeof(cmd), "%s help %s", rk_bin, commands[i]);
		h = sh_out(cmd, &st);
		cr_assert_eq(st, 0, "help %s exits %d", commands[i], st);
		snprintf(want, sizeof(want), "Usage: ringkeeper %s", commands[i]);
		cr_assert_not_null(strstr(h, want), "help %s:\n%s", commands[i], h);
		free(h);
	}
	free(s);
	snprintf(cmd, sizeof(cmd), "%s --version", rk_bin);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0);
	cr_assert_eq(strncmp(s, "ringkeeper 0.", 13), 0, "--version: %s", s);
	free(s);
	snprintf(cmd, sizeof(cmd), "%s help nosuch 2>&1", rk_bin);
	s = sh_out(cmd, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "help nosuch: %d", st);
	cr_assert_not_null(strstr(s, "unknown command 'nosuch'"), "%s", s);
	free(s);
}

/*
 * make install into a staging DESTDIR: the binary in PREFIX/sbin, the man
 * page, the completion; the page lists every option of every command's
 * --help; completion offers commands and options; make uninstall removes
 * all three.
 */
Test(cli, install_man_page_and_completion_follow_the_binary)
{
	char repo[256], out_dir[600], cmd[2048], stage[128], path[700], *s, *h, *man, *tok;
	struct stat sb;
	size_t i;
	int st;

	source_tree(repo, sizeof(repo), out_dir, sizeof(out_dir));
	snprintf(path, sizeof(path), "%s/Makefile", repo);
	if (access(path, F_OK))
		cr_skip_test("no source tree at %s", repo);
	snprintf(stage, sizeof(stage), "%s/stage", root);
	snprintf(cmd, sizeof(cmd),
		 "make -s -C %s OUTPUT=%s install DESTDIR=%s PREFIX=/usr >%s/make.out 2>&1", repo,
		 out_dir, stage, root);
	cr_assert_eq(system(cmd), 0, "make install failed (see %s/make.out)", root);
	snprintf(path, sizeof(path), "%s/usr/sbin/ringkeeper", stage);
	cr_assert_eq(stat(path, &sb), 0, "%s", path);
	cr_assert(sb.st_mode & S_IXUSR);
	snprintf(cmd, sizeof(cmd), "%s --version", path);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0);
	free(s);
	snprintf(path, sizeof(path), "%s/usr/share/man/man8/ringkeeper.8", stage);
	man = strdup(slurp(path));
	cr_assert_not_null(strstr(man, ".TH RINGKEEPER 8"), "not a man page: %s", path);
	cr_assert_not_null(strstr(man, "\n.SH EXAMPLES\n"), "no EXAMPLES in %s", path);
	/* A schema without a final newline glued ".fi" to its last line. */
	cr_assert_null(strstr(man, "}.fi"), "a stray }.fi in %s", path);

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char *save = NULL;

		snprintf(cmd, sizeof(cmd),
			 "%s %s --help 2>&1 | grep -oE -- '(^|[ ,\\[|])--?[a-zA-Z][a-zA-Z0-9-]*' | "
			 "sed 's/^[ ,\\[|]//' | sort -u",
			 rk_bin, commands[i]);
		h = sh_out(cmd, &st);
		cr_assert_neq(h[0], '\0', "%s --help lists no option", commands[i]);
		for (tok = strtok_r(h, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save))
			cr_assert_not_null(strstr(man, tok), "the man page lacks %s %s",
					   commands[i], tok);
		free(h);
	}
	free(man);

	/* Completion, with the installed binary first in PATH. */
	snprintf(cmd, sizeof(cmd),
		 "PATH=%s/usr/sbin:$PATH bash -c 'source %s/usr/share/bash-completion/completions/"
		 "ringkeeper; COMP_WORDS=(ringkeeper st); COMP_CWORD=1; _ringkeeper; "
		 "echo \"${COMPREPLY[*]}\"; COMP_WORDS=(ringkeeper record --mmap); COMP_CWORD=2; "
		 "_ringkeeper; echo \"${COMPREPLY[*]}\"'",
		 stage, stage);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	cr_assert_not_null(strstr(s, "stat\n"), "commands: %s", s);
	cr_assert_not_null(strstr(s, "--mmap-pages"), "options of record: %s", s);
	free(s);
	/* -e: events (the binary's) and tracepoints, the list's last item; -p: pids. */
	snprintf(
		cmd, sizeof(cmd),
		"PATH=%s/usr/sbin:$PATH bash -c 'source "
		"%s/usr/share/bash-completion/completions/ringkeeper; "
		"COMP_WORDS=(ringkeeper record -e cpu-clock,sched:sched_swi); COMP_CWORD=3; "
		"_ringkeeper; echo \"e: ${COMPREPLY[*]}\"; COMP_WORDS=(ringkeeper record -e page-f); "
		"COMP_CWORD=3; COMPREPLY=(); _ringkeeper; echo \"s: ${COMPREPLY[*]}\"; "
		"COMP_WORDS=(ringkeeper record -p 1); COMP_CWORD=3; _ringkeeper; "
		"echo \"p: ${COMPREPLY[*]} \"'",
		stage, stage);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	cr_assert_not_null(strstr(s, "e: cpu-clock,sched:sched_switch\n"), "%s", s);
	cr_assert_not_null(strstr(s, "s: page-faults\n"), "%s", s);
	cr_assert_not_null(strstr(s, "p: 1 "), "pid 1: %s", s);
	free(s);

	snprintf(cmd, sizeof(cmd),
		 "make -s -C %s OUTPUT=%s uninstall DESTDIR=%s PREFIX=/usr >%s/make.out 2>&1", repo,
		 out_dir, stage, root);
	cr_assert_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/usr/sbin/ringkeeper", stage);
	cr_assert_neq(access(path, F_OK), 0, "uninstall left %s", path);
	snprintf(path, sizeof(path), "%s/usr/share/man/man8/ringkeeper.8", stage);
	cr_assert_neq(access(path, F_OK), 0, "uninstall left %s", path);
	snprintf(path, sizeof(path), "%s/usr/share/bash-completion/completions/ringkeeper", stage);
	cr_assert_neq(access(path, F_OK), 0, "uninstall left %s", path);
}

/*
 * The small things a first run trips over: export to "-" is refused, not a
 * file named "-"; -o is --perf-data and says so; a command that cannot run
 * leaves no session and exits as a shell would (127); stat of no such
 * session names it; -e takes perf's wildcards (sched:sched_wak*), a glob
 * that matches nothing or too much says so; --keep leaves pmu_info filled
 * for bpftool after every thread exited; --max-threads counts what it left
 * out as not traced and says which limit.
 */
Test(cli, small_things_a_first_run_trips_over)
{
	char *ex[] = { (char *)rk_bin, "export", "--root", root, "--perf-data", "-", NULL };
	char *miss[] = { (char *)rk_bin, "record", "--root",	     root, "--session",
			 "miss",	 "--",	   "no-such-cmd-rk", NULL };
	char *st1[] = { (char *)rk_bin, "stat", "--root", root, "nosuch", NULL };
	char *wc0[] = { (char *)rk_bin, "record",  "--root", root,	  "--session", "wc0",
			"-e",		"nosys:*", "--",     "/bin/true", NULL };
	char *wc1[] = { (char *)rk_bin, "record",  "--root", root,	  "--session", "wc1",
			"-e",		"sched:*", "--",     "/bin/true", NULL };
	char *wc2[] = { (char *)rk_bin,
			"record",
			"--root",
			root,
			"--session",
			"wc2",
			"-e",
			"sched:sched_wak*",
			"--",
			(char *)workload,
			"-t",
			"1",
			"-i",
			"3",
			NULL };
	char *kp[] = {
		(char *)rk_bin, "record",	  "--root", root, "--session", "kp", "--keep",
		"--",		(char *)workload, "-t",	    "2",  "-i",	       "3",  NULL
	};
	char *mt[] = { (char *)rk_bin,
		       "record",
		       "--root",
		       root,
		       "--session",
		       "mt",
		       "--max-threads",
		       "2",
		       "--",
		       (char *)workload,
		       "-t",
		       "6",
		       "-i",
		       "3",
		       NULL };
	char path[400], cmd[1024], *out, *err, *s;
	struct rk_session_stat st;
	int status;

	expect_error(ex, 2, "--perf-data -: a pipe is not supported");
	cr_assert_neq(access("-", F_OK), 0, "a file named -");
	snprintf(cmd, sizeof(cmd), "%s export --help", rk_bin);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "-o, --perf-data FILE"), "%s", s);
	free(s);

	status = run_rk(miss, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 127, "status %#x: %s", status, err);
	cr_assert_not_null(strstr(err, "cannot run no-such-cmd-rk"), "%s", err);
	free(out);
	free(err);
	snprintf(path, sizeof(path), "%s/miss", root);
	cr_assert_neq(access(path, F_OK), 0, "a session for a command that cannot run");

	expect_error(st1, 1, "no session nosuch in");
	expect_error(wc0, 2, "'nosys:*' matches no tracepoint");
	expect_error(wc1, 2, "narrow the wildcard");
	status = run_rk(wc2, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	free(out);
	free(err);
	snprintf(path, sizeof(path), "%s/wc2/sched:sched_waking", root);
	cr_assert_eq(access(path, F_OK), 0, "sched:sched_wak* did not give sched_waking");
	snprintf(path, sizeof(path), "%s/wc2/sched:sched_wakeup", root);
	cr_assert_eq(access(path, F_OK), 0, "sched:sched_wak* did not give sched_wakeup");

	/* --keep: every thread's entries, after all of them exited. */
	status = run_rk(kp, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	free(out);
	free(err);
	s = sh_out("bpftool map dump pinned /sys/fs/bpf/ringkeeper/pmu_info | grep -c '\"tid\"'; "
		   "rm -rf /sys/fs/bpf/ringkeeper",
		   &status);
	cr_assert_eq(atoi(s), 3, "pmu_info after --keep: %s", s);
	free(s);

	/* --max-threads: the threads left out are counted, and the limit named. */
	status = run_rk(mt, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", err);
	read_stat("mt", &st);
	cr_assert_gt(st.not_traced, 0, "%s", err);
	cr_assert_eq(st.not_traced, st.bpf_fork_fail, "%s", err);
	cr_assert_not_null(strstr(err, "threads not traced: --max-threads"), "%s", err);
	cr_assert_null(strstr(err, "map was full"), "%s", err);
	free(out);
	free(err);

	/* ls by a user who may read none of root's files: one line says so, exit 0. */
	snprintf(cmd, sizeof(cmd),
		 "chmod 755 %s && setpriv --reuid=65534 --regid=65534 --clear-groups %s ls --root "
		 "%s kp 2>&1 >/dev/null; echo rc=$?",
		 root, rk_bin, root);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "buffer files not listed: not yours to read"), "%s", s);
	cr_assert_eq(count_of(s, "\n"), 2, "one line, then the status: %s", s);
	cr_assert_not_null(strstr(s, "rc=0\n"), "%s", s);
	free(s);

	/* rm by that user: nothing removed, and said so (not "partly removed"), exit 1. */
	snprintf(cmd, sizeof(cmd),
		 "setpriv --reuid=65534 --regid=65534 --clear-groups %s rm --root %s kp 2>&1; "
		 "echo rc=$?; test -d %s/kp && echo still there",
		 rk_bin, root, root);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "nothing of session kp removed"), "%s", s);
	cr_assert_null(strstr(s, "partly"), "%s", s);
	cr_assert_not_null(strstr(s, "rc=1\nstill there"), "%s", s);
	free(s);
}

/*
 * ls shows every source with sizes and the session's start, duration and
 * state; a file it cannot read goes to stderr with exit 1; gc and rm take a
 * session; show says which of session, event and tid is missing; perf's
 * event modifiers are taken.
 */
Test(cli, ls_gc_rm_and_errors_name_what_is_wrong)
{
	char *rec_a[] = { (char *)rk_bin,
			  "record",
			  "--root",
			  root,
			  "--session",
			  "a",
			  "-e",
			  "cpu-clock:u",
			  "--",
			  (char *)workload,
			  "-t",
			  "1",
			  "-i",
			  "2",
			  NULL };
	char *rec_b[] = { (char *)rk_bin,   "record", "--root", root, "--session", "b", "--",
			  (char *)workload, "-t",     "1",	"-i", "2",	   NULL };
	char cmd[1024], path[300], tid[16], *s, *err;
	unsigned int tids[8];
	struct rk_bufile *bf;
	int st, rd;
	pid_t sleeper, rk;

	st = run_rk(rec_a, NULL, &err);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err);
	free(err);
	st = run_rk(rec_b, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(path, sizeof(path), "%s/a/cpu-clock", root);
	cr_assert_geq(files_in(path, tids, 8), 2, "-e cpu-clock:u files in %s", path);
	snprintf(path, sizeof(path), "%s/a/cpu-clock/%u", root, tids[0]);
	bf = rk_bufile__open(path, NULL);
	cr_assert_not_null(bf);
	cr_assert(bf->pmu->attr.exclude_kernel && !bf->pmu->attr.exclude_user, ":u: user only");
	rk_bufile__free(bf);

	snprintf(cmd, sizeof(cmd), "%s ls --root %s a", rk_bin, root);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	cr_assert_not_null(strstr(s, "a  ended  started 20"), "%s", s);
	cr_assert_not_null(strstr(s, "sources sched,cpu-clock,sideband"), "%s", s);
	cr_assert_not_null(strstr(s, " cpu-clock "), "no cpu-clock rows:\n%s", s);
	cr_assert_not_null(strstr(s, " sideband "), "no sideband row:\n%s", s);
	free(s);
	snprintf(cmd, sizeof(cmd), "%s ls --json --root %s a", rk_bin, root);
	s = sh_out(cmd, &st);
	cr_assert_not_null(strstr(s, "\"sources\":[\"sched\",\"cpu-clock\",\"sideband\"]"), "%s",
			   s);
	cr_assert_not_null(strstr(s, "\"start_time\":\"20"), "%s", s);
	cr_assert_not_null(strstr(s, "\"duration_ns\":"), "%s", s);
	free(s);

	/* A file that does not parse: stderr, exit 1, no row for it. */
	snprintf(path, sizeof(path), "%s/a/sched/%u", root, tids[0]);
	cr_assert_eq(truncate(path, 100), 0);
	snprintf(cmd, sizeof(cmd), "%s ls --root %s a 2>%s/ls.err", rk_bin, root, root);
	s = sh_out(cmd, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "ls exits %d on a bad file", st);
	cr_assert_null(strstr(s, path), "the error is in the table:\n%s", s);
	free(s);
	snprintf(path, sizeof(path), "%s/ls.err", root);
	s = slurp(path);
	snprintf(path, sizeof(path), "%s/a/sched/%u: ", root, tids[0]);
	cr_assert_not_null(strstr(s, path), "stderr: %s", s);

	/* show: the missing session, event, tid, each by name. */
	snprintf(tid, sizeof(tid), "%u", tids[1]);
	{
		char *a1[] = { (char *)rk_bin, "show",	      "--root", root, "--session", "a",
			       "-e",	       "page-faults", tid,	NULL };
		char *a2[] = { (char *)rk_bin, "show",	 "--root", root,
			       "--session",    "nosuch", tid,	   NULL };
		char *a3[] = { (char *)rk_bin, "show",	      "--root", root, "--session", "a",
			       "-e",	       "cpu-clock:u", "1",	NULL };
		char *a4[] = { (char *)rk_bin, "ls", "--root", root, "nosuch", NULL };

		expect_error(a1, 1, "session a recorded no event 'page-faults'");
		expect_error(a2, 1, "no session 'nosuch'");
		expect_error(a3, 1, "no cpu-clock buffer for tid 1"); /* recorded as cpu-clock */
		expect_error(a4, 1, "no session 'nosuch'");
	}
	{
		char *a5[] = { (char *)rk_bin, "show",	    "--root", root, "--session", "a",
			       "-e",	       "cpu-clock", tid,      NULL };

		st = run_rk(a5, NULL, NULL);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "show -e cpu-clock of :u");
	}

	/* gc of one session leaves the others alone. */
	snprintf(cmd, sizeof(cmd), "%s gc --root %s --max-size 1 b >/dev/null", rk_bin, root);
	cr_assert_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/b", root);
	cr_assert_neq(access(path, F_OK), 0, "gc b left the emptied session b");
	snprintf(path, sizeof(path), "%s/a/cpu-clock/%u", root, tids[1]);
	cr_assert_eq(access(path, F_OK), 0, "gc b touched session a");

	/* rm: a session entirely; twice is an error; a recording one is refused. */
	snprintf(cmd, sizeof(cmd), "%s rm --root %s a >/dev/null", rk_bin, root);
	cr_assert_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/a", root);
	cr_assert_neq(access(path, F_OK), 0, "rm left %s", path);
	{
		char *again[] = { (char *)rk_bin, "rm", "--root", root, "a", NULL };
		char *live[] = { (char *)rk_bin, "rm", "--root", root, "live", NULL };
		char *slp[] = { "/bin/sleep", "30", NULL };
		char line[64];

		expect_error(again, 1, "no session 'a'");
		sleeper = spawn(slp, "/dev/null", "/dev/null", -1);
		rk = start_recorder_on(sleeper, "live", &rd, NULL);
		cr_assert_eq(read_line_within(rd, line, sizeof(line), 30000), 0);
		close(rd);
		expect_error(live, 1, "is recording");
		kill(rk, SIGINT);
		wait_for(rk, 30000);
		kill(sleeper, SIGKILL);
		waitpid(sleeper, NULL, 0);
		snprintf(path, sizeof(path), "%s/live", root);
		cr_assert_eq(access(path, F_OK), 0, "rm removed a recording session");
	}
}

/* @cmd's stdout validated by tests/schema/validate.py against @schema. */
static void assert_valid(const char *repo, const char *cmd, const char *schema, const char *extra)
{
	char full[2048], *s;
	int st;

	snprintf(full, sizeof(full),
		 "%s | python3 %s/tests/schema/validate.py %s/tests/schema/%s %s 2>&1", cmd, repo,
		 repo, schema, extra ? extra : "");
	s = sh_out(full, &st);
	cr_assert_eq(st, 0, "%s:\n%s", cmd, s);
	cr_assert_not_null(strstr(s, "valid"), "%s", s);
	free(s);
}

/*
 * Every --json output parses as one JSON document and fits its schema
 * (tests/schema/, also in the man page); no integer passes 2^53; stat's
 * counter keys are the names its text prints.
 */
Test(cli, json_outputs_fit_their_schemas)
{
	char *rec[] = { (char *)rk_bin,
			"record",
			"--root",
			root,
			"--session",
			"j",
			"-e",
			"cpu-clock,sched:sched_wakeup",
			"-g",
			"--wakeups",
			"--",
			(char *)workload,
			"-t",
			"2",
			"-i",
			"3",
			NULL };
	char repo[256], cmd[1024], path[400], txt[300];
	unsigned int tids[8];
	int st;

	source_tree(repo, sizeof(repo), NULL, 0);
	snprintf(path, sizeof(path), "%s/tests/schema/validate.py", repo);
	if (access(path, F_OK))
		cr_skip_test("no source tree at %s", repo);
	if (system("python3 -c 'import jsonschema' 2>/dev/null"))
		cr_skip_test("python3-jsonschema is not installed (make deps)");
	st = run_rk(rec, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(path, sizeof(path), "%s/j/cpu-clock", root);
	cr_assert_geq(files_in(path, tids, 8), 1);

	snprintf(cmd, sizeof(cmd), "%s ls --json --root %s", rk_bin, root);
	assert_valid(repo, cmd, "ls.json", NULL);
	snprintf(txt, sizeof(txt), "%s/stat.txt", root);
	snprintf(cmd, sizeof(cmd), "%s stat --root %s j >%s", rk_bin, root, txt);
	/* Exit 4: the session ended (stat's health status). */
	cr_assert_eq(system(cmd), 4 << 8);
	snprintf(cmd, sizeof(cmd), "%s stat --json --root %s --all", rk_bin, root);
	snprintf(path, sizeof(path), "--keys-in %s", txt);
	assert_valid(repo, cmd, "stat.json", path);
	snprintf(cmd, sizeof(cmd), "%s show --json --root %s --session j %u", rk_bin, root,
		 tids[0]);
	assert_valid(repo, cmd, "show.json", NULL);
	/* Its wakeups (--wakeups) are records of their own, with their fields. */
	snprintf(cmd, sizeof(cmd),
		 "%s show --json --root %s --session j %u | grep -c '\"waker_tid\":' >%s", rk_bin,
		 root, tids[1], txt);
	cr_assert_eq(system(cmd), 0, "no wakeup record in a --wakeups session");
	snprintf(cmd, sizeof(cmd), "%s show --json --root %s --session j -e cpu-clock %u", rk_bin,
		 root, tids[0]);
	assert_valid(repo, cmd, "show.json", NULL);
	snprintf(cmd, sizeof(cmd), "%s show --json --root %s --session j -e sched:sched_wakeup %u",
		 rk_bin, root, tids[0]);
	assert_valid(repo, cmd, "show.json", NULL);
	snprintf(cmd, sizeof(cmd), "%s pmu --json", rk_bin);
	assert_valid(repo, cmd, "pmu.json", NULL);
	snprintf(cmd, sizeof(cmd), "%s sched --json --root %s j", rk_bin, root);
	assert_valid(repo, cmd, "sched.json", NULL);
	/* Its other shapes: processes with histograms, names, the first rows. */
	snprintf(cmd, sizeof(cmd), "%s sched --json --root %s j --by process --hist --all", rk_bin,
		 root);
	assert_valid(repo, cmd, "sched.json", NULL);
	snprintf(cmd, sizeof(cmd), "%s sched --json --root %s j --by comm --sort delay --top 1",
		 rk_bin, root);
	assert_valid(repo, cmd, "sched.json", NULL);
}

/*
 * A thread's name is the user's to choose: one with a newline and an
 * escape sequence is listed by ls without either (as stat and show do).
 */
Test(cli, ls_prints_no_control_character_of_a_thread_s_name)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "evil",
			 "--",
			 "/bin/sh",
			 "-c",
			 "printf 'ev\\nil\\033[2J' > /proc/$$/comm; sleep 0.05",
			 NULL };
	char *ls[] = { (char *)rk_bin, "ls", "--root", root, "evil", NULL };
	char *out = NULL, *err = NULL;
	int rc = run_rk(argv, NULL, &err);

	cr_assert_eq(rc, 0, "record failed: %s", err);
	free(err);
	rc = run_rk(ls, &out, &err);
	cr_assert_eq(rc, 0, "ls failed: %s", err);
	cr_assert_not_null(strstr(out, "ev?il?[2J"), "the renamed thread is not listed:\n%s", out);
	cr_assert_null(strchr(out, '\033'), "an escape reached the terminal:\n%s", out);
	free(out);
	free(err);
}

/*
 * Every claim the README and the guide back with a test names it
 * (`suite::name`): each named test exists, so a claim cannot outlive its
 * test unnoticed (issue 42: "hold every claim in the README to a test").
 */
Test(cli, every_test_the_readme_and_guide_cite_exists)
{
	char repo[256], cmd[1024], *s;
	int st;

	source_tree(repo, sizeof(repo), NULL, 0);
	snprintf(cmd, sizeof(cmd), "%s/README.md", repo);
	if (access(cmd, F_OK))
		cr_skip_test("no source tree at %s", repo);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && n=0; for t in $(grep -oh '`[a-z_]*::[a-z_0-9]*`' README.md "
		 "docs/guide.md | tr -d '`' | sort -u); do n=$((n+1)); grep -q "
		 "\"^Test(${t%%%%::*}, ${t##*::}[,)]\" tests/unit/*.c tests/integration/*.c || "
		 "echo \"missing $t\"; done; echo \"cited $n\"",
		 repo);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	cr_assert_null(strstr(s, "missing"), "%s", s);
	cr_assert_null(strstr(s, "cited 0\n"), "no test cited: %s", s);
	free(s);
}

/* A recorded command with a newline is one line in stat and ls, the newline as \x0a. */
Test(cli, stat_and_ls_print_a_multi_line_command_on_one_line)
{
	char *argv[] = { (char *)rk_bin, "record", "--root",	    root, "--session", "ml", "--",
			 "/bin/sh",	 "-c",	   "true\necho hi", NULL };
	char cmd[400], *s;
	int rc = run_rk(argv, NULL, NULL);

	cr_assert_eq(rc, 0);
	snprintf(cmd, sizeof(cmd), "%s stat --root %s ml; %s ls --root %s ml", rk_bin, root, rk_bin,
		 root);
	s = sh_out(cmd, NULL);
	cr_assert_eq(count_of(s, "command: /bin/sh -c true\\x0aecho hi\n"), 2, "%s", s);
	cr_assert_null(strstr(s, "\necho hi"), "a raw newline:\n%s", s);
	free(s);
}

/*
 * Where the recorder cannot exempt itself from the OOM killer (no
 * CAP_SYS_RESOURCE), record does not open with a warning about it: stat
 * says it (oom_candidate), and -v once.
 */
Test(cli, the_oom_candidate_warning_is_in_stat_and_with_v_only)
{
	char *argv[] = { (char *)rk_bin, "record",    "--root", root, "--session", "o",
			 "--",		 "/bin/true", NULL };
	struct rk_session_stat st;
	char *err = NULL, cmd[400], *s;
	int rc;

	rc = run_rk(argv, NULL, &err);
	cr_assert_eq(rc, 0, "%s", err);
	read_stat("o", &st);
	if (!st.oom_candidate) {
		free(err);
		cr_skip_test("root here may lower oom_score_adj (CAP_SYS_RESOURCE): no warning to "
			     "place");
	}
	cr_assert_null(strstr(err, "OOM killer"), "record warns without -v:\n%s", err);
	free(err);
	/* -v also prints libbpf's log: only the count of the warning is read. */
	snprintf(cmd, sizeof(cmd),
		 "%s record -v --root %s --session o2 -- /bin/true 2>&1 >/dev/null | "
		 "grep -c 'candidate of the OOM killer'",
		 rk_bin, root);
	s = sh_out(cmd, NULL);
	cr_assert_str_eq(s, "1\n", "with -v, once: %s", s);
	free(s);
}
