// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The command line of the reading commands, run against a small session
 * made here (no recorder, no root): options go before or after the
 * operands with the same result, whatever POSIXLY_CORRECT says; every usage
 * error names what was wrong; ls lists a bundle as a session; bash
 * completion offers exactly the options each command takes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bufile.h"
#include "bundle.h"
#include "pmu.h"
#include "shell.h"

static char dir[64];
static const char *bin;

/* A sched record: a switch-in (or out) of tid 42 at @time, with its sample_id. */
static void put_switch(struct rk_bufile *bf, __u64 time, int out)
{
	struct {
		struct perf_event_header h;
		__u32 pid, tid;
		__u64 time;
		__u32 cpu, res;
		__u64 id;
	} r = { { PERF_RECORD_SWITCH, (__u16)(out ? PERF_RECORD_MISC_SWITCH_OUT : 0), sizeof(r) },
		41,
		42,
		time,
		1,
		out ? 0x80000001u : 0,
		1ull << 63 };

	cr_assert_eq(rk_bufile__write(bf, &r, sizeof(r)), 0);
}

/* ROOT/s/sched/42: a session of one thread with 4 runs; no recorder, no stat file. */
static void setup(void)
{
	struct rk_thread_ident id = { 0 };
	struct rk_pmu_entry e;
	struct rk_bufile *bf;
	char path[200];
	int i;

	bin = getenv("RK_BIN");
	if (!bin)
		return;
	snprintf(dir, sizeof(dir), "/tmp/rk-cli-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "mkdir -p %s/root/s/sched", dir);
	cr_assert_eq(system(path), 0);
	snprintf(path, sizeof(path), "%s/root/s/sched/42", dir);
	id.tid = 42;
	id.tgid = 41;
	memcpy(id.comm, "unit", 5);
	rk_pmu_sched_entry(&e);
	bf = rk_bufile__create(path, 8192, 0, &e, &id);
	cr_assert_not_null(bf, "create: %s", strerror(errno));
	for (i = 0; i < 8; i++)
		put_switch(bf, 1000000ull * (__u64)(i + 1), i & 1);
	rk_bufile__free(bf);
}

static void teardown(void)
{
	char cmd[128];

	if (!dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(cli, .init = setup, .fini = teardown);

#define NEED_BIN()                                                                       \
	do {                                                                             \
		if (!bin)                                                                \
			cr_skip_test("RK_BIN not set: the binary is not run (make unit " \
				     "sets it)");                                        \
	} while (0)

/* `ringkeeper ARGS` (ROOT and DIR in ARGS replaced), stdout and stderr apart, and its status. */
static char *rk(const char *args, char **err, int *status)
{
	char cmd[2048], a[1024], *o, *p;
	const char *s;
	size_t n = 0;

	for (s = args; *s && n < sizeof(a) - 80; s++) {
		if (!strncmp(s, "ROOT", 4)) {
			n += (size_t)snprintf(a + n, sizeof(a) - n, "%s/root", dir);
			s += 3;
		} else if (!strncmp(s, "DIR", 3)) {
			n += (size_t)snprintf(a + n, sizeof(a) - n, "%s", dir);
			s += 2;
		} else {
			a[n++] = *s;
		}
	}
	a[n] = '\0';
	snprintf(cmd, sizeof(cmd), "%s %s 2>%s/err", bin, a, dir);
	o = sh_out(cmd, status);
	snprintf(cmd, sizeof(cmd), "cat %s/err", dir);
	p = sh_out(cmd, NULL);
	if (err)
		*err = p;
	else
		free(p);
	return o;
}

/* Each line of @same gives the same stdout and exit status as its first. */
static void same_result(const char *const *same, size_t n)
{
	char *want, *got, *e;
	int ws, gs;
	size_t i;

	want = rk(same[0], &e, &ws);
	cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "%s: %d: %s", same[0], ws, e);
	cr_assert_neq(want[0], '\0', "%s printed nothing", same[0]);
	free(e);
	for (i = 1; i < n; i++) {
		got = rk(same[i], &e, &gs);
		cr_assert_eq(gs, ws, "%s: status %d, %s: %d (%s)", same[0], ws, same[i], gs, e);
		cr_assert_str_eq(got, want, "%s differs from %s:\n%s\nstderr: %s", same[i], same[0],
				 got, e);
		free(got);
		free(e);
	}
	free(want);
}

Test(cli, options_go_before_or_after_the_operands)
{
	static const char *const show[] = {
		"show --root ROOT --session s --json 42",
		"show 42 --session s --root ROOT --json",
		"show --session s 42 --json --root ROOT",
		"show --root=ROOT 42 -s s -j",
	};
	static const char *const ls[] = {
		"ls --root ROOT --json s",
		"ls s --json --root ROOT",
	};
	static const char *const sched[] = {
		"sched --root ROOT --all --json s",
		"sched s --json --root ROOT --all",
		"sched --all s --root ROOT -j",
	};
	char path[200], *o, *e;
	struct stat sb;
	int st, i;

	NEED_BIN();
	same_result(show, sizeof(show) / sizeof(show[0]));
	same_result(ls, sizeof(ls) / sizeof(ls[0]));
	same_result(sched, sizeof(sched) / sizeof(sched[0]));
	/* Whatever the environment says: POSIXLY_CORRECT stops no option. */
	setenv("POSIXLY_CORRECT", "1", 1);
	same_result(show, sizeof(show) / sizeof(show[0]));
	same_result(ls, sizeof(ls) / sizeof(ls[0]));
	unsetenv("POSIXLY_CORRECT");

	/* snapshot S -o F; export takes its session as the others do, also before. */
	o = rk("snapshot --root ROOT -o DIR/b1.rkb s", &e, &st);
	cr_assert_eq(st, 0, "%s", e);
	free(o);
	free(e);
	o = rk("snapshot s --root ROOT -o DIR/b2.rkb", &e, &st);
	cr_assert_eq(st, 0, "%s", e);
	free(o);
	free(e);
	o = rk("export --root ROOT --session s --perfetto DIR/p1", &e, &st);
	cr_assert_eq(st, 0, "%s", e);
	free(o);
	free(e);
	o = rk("export s --perfetto DIR/p2 --root ROOT", &e, &st);
	cr_assert_eq(st, 0, "%s", e);
	free(o);
	free(e);
	for (i = 0; i < 4; i++) {
		static const char *const made[] = { "b1.rkb", "b2.rkb", "p1", "p2" };

		snprintf(path, sizeof(path), "%s/%s", dir, made[i]);
		cr_assert_eq(stat(path, &sb), 0, "%s not written", path);
		cr_assert_gt(sb.st_size, 0, "%s is empty", path);
	}
}

/* rc 2, and stderr names what was wrong (and shows the synopsis). */
static void usage_error(const char *args, const char *why)
{
	char *o, *e;
	int st;

	o = rk(args, &e, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s: status %d: %s", args, st, e);
	cr_assert_not_null(strstr(e, why), "%s: stderr does not say \"%s\":\n%s", args, why, e);
	cr_assert_not_null(strstr(e, "Usage: ringkeeper "), "%s: no synopsis:\n%s", args, e);
	cr_assert_str_eq(o, "", "%s printed on stdout: %s", args, o);
	free(o);
	free(e);
}

Test(cli, every_usage_error_says_what_was_wrong)
{
	static const char *const cmds[] = { "record", "ls", "stat", "show", "export",  "sched",
					    "top",    "gc", "rm",   "pmu",  "snapshot" };
	char args[128], *o, *e;
	size_t i;
	int st;

	NEED_BIN();
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		snprintf(args, sizeof(args), "%s --frobnicate s", cmds[i]);
		usage_error(args, "unknown option '--frobnicate'");
		snprintf(args, sizeof(args), "%s -Q", cmds[i]);
		usage_error(args, "unknown option '-Q'");
	}
	o = rk("", &e, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "no command: status %d", st);
	cr_assert_not_null(strstr(e, "ringkeeper: missing COMMAND\nUsage: ringkeeper COMMAND"),
			   "%s", e);
	free(o);
	free(e);
	usage_error("show --root ROOT --json", "missing FILE or TID");
	usage_error("show --root ROOT 42 43 44", "too many operands: '43 44'");
	usage_error("ls --root", "option '--root' needs a value");
	usage_error("ls --pt", "unknown option '--pt'");
	usage_error("stat --root ROOT s t", "too many operands: 't'");
	usage_error("sched --root ROOT s t", "too many operands: 't'");
	usage_error("export --root ROOT s t --perfetto DIR/x", "too many operands: 't'");
	usage_error("snapshot --root ROOT s t -o DIR/x", "too many operands: 't'");
	usage_error("gc --root ROOT --older-than 1 s t", "too many operands: 't'");
	usage_error("gc --root ROOT s", "give --older-than and/or --max-size");
	usage_error("rm --root ROOT", "missing SESSION");
	usage_error("top --root ROOT s t", "too many operands: 't'");
	usage_error("sched --root ROOT --tid 42 --pid 41", "give --tid or --pid, not both");
	/* coredump's help, as every other command's: exit 0, on stdout. */
	o = rk("coredump -h", &e, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "coredump -h: %d: %s", st, e);
	cr_assert_not_null(strstr(o, "Usage: ringkeeper coredump"), "%s", o);
	free(o);
	free(e);
}

/* ls FILE: a bundle's buffers as a session's, each row named FILE:SOURCE/TID. */
Test(cli, ls_lists_a_bundle_as_a_session)
{
	struct rk_bundle_opts bo;
	struct rk_bundle_stats bs;
	char sdir[128], out[128], want[300], *o, *e;
	int st;

	NEED_BIN();
	snprintf(sdir, sizeof(sdir), "%s/root/s", dir);
	snprintf(out, sizeof(out), "%s/b.rkb", dir);
	rk_bundle_opts_init(&bo);
	cr_assert_eq(rk_bundle_write(sdir, 5000000, "unit", out, &bo, &bs), 0);
	o = rk("ls DIR/b.rkb", &e, &st);
	cr_assert_eq(st, 0, "%s", e);
	cr_assert_not_null(strstr(o, "  bundle  started "), "%s", o);
	snprintf(want, sizeof(want), "%s/b.rkb:sched/42\n", dir);
	cr_assert_not_null(strstr(o, want), "%s", o);
	cr_assert_not_null(strstr(o, "      42       41 unit "), "%s", o);
	free(o);
	free(e);
	o = rk("ls --json DIR/b.rkb --root ROOT s", &e, &st);
	cr_assert_eq(st, 0, "%s", e);
	cr_assert_eq(count_of(o, "\"session\":"), 2, "the session and the bundle: %s", o);
	cr_assert_not_null(strstr(o, "\"state\":\"bundle\""), "%s", o);
	free(o);
	free(e);
	/* It fits ls's schema, where the source tree is. */
	{
		char bindir[256], cmd[1024];

		snprintf(bindir, sizeof(bindir), "%s", bin);
		*strrchr(bindir, '/') = '\0';
		snprintf(cmd, sizeof(cmd), "%s/../tests/schema/validate.py", bindir);
		if (!access(cmd, R_OK)) {
			snprintf(cmd, sizeof(cmd),
				 "%s ls --json %s/b.rkb --root %s/root s | python3 "
				 "%s/../tests/schema/validate.py %s/../tests/schema/ls.json 2>&1",
				 bin, dir, dir, bindir, bindir);
			o = sh_out(cmd, &st);
			cr_assert_eq(st, 0, "ls --json of a bundle: %s", o);
			free(o);
		}
	}
	/* Neither a session nor a file: said, exit 1. */
	o = rk("ls --root ROOT nosuch", &e, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%d", st);
	cr_assert_not_null(strstr(e, "no session 'nosuch'"), "%s", e);
	free(o);
	free(e);
}

/*
 * Completion offers exactly the options a command takes among those its
 * --help names: each option offered is taken (not "unknown option"), and
 * each named option that is taken is offered (the prose names other
 * commands' options: snapshot's named --core and --snapshot-dir, export's
 * -i and --offcpu, which completion offered). The completion is sourced from
 * the source tree, before any install, and asks the binary it completes.
 * An option is tried followed by two unknown ones, so that no command acts.
 */
Test(cli, completion_offers_exactly_the_options_each_command_takes)
{
	char bindir[256], script[400], cmd[4096], *o;
	int st;

	NEED_BIN();
	snprintf(bindir, sizeof(bindir), "%s", bin);
	*strrchr(bindir, '/') = '\0';
	snprintf(script, sizeof(script), "%s/../scripts/ringkeeper.bash-completion", bindir);
	if (access(script, R_OK))
		cr_skip_test("no source tree next to %s: %s", bin, script);
	snprintf(
		cmd, sizeof(cmd),
		"cd %s && B=%s; S=%s; "
		"for c in record ls stat show export sched top gc rm pmu snapshot coredump; do "
		"  offered=$(PATH=/usr/bin:/bin bash -c 'source \"$2\"; COMP_WORDS=(\"$0\" \"$1\" -); "
		"    COMP_CWORD=2; _ringkeeper; printf \"%%s\\n\" \"${COMPREPLY[@]}\"' \"$B\" $c \"$S\"); "
		"  [ -n \"$offered\" ] || echo \"$c: nothing offered\"; "
		"  named=$($B $c --help 2>&1 | grep -oE -- '(^|[ ,[|(])--?[a-zA-Z][a-zA-Z0-9-]*' | "
		"    sed 's/^[ ,[|(]//'); "
		"  for o in $(printf '%%s\\n' $offered $named | sort -u); do "
		"    if $B $c $o --zz-unknown-a --zz-unknown-b 2>&1 >/dev/null </dev/null | "
		"      grep -qF \"unknown option '$o'\"; then taken=0; else taken=1; fi; "
		"    off=0; printf '%%s\\n' $offered | grep -qxF -- \"$o\" && off=1; "
		"    [ $taken = $off ] || echo \"$c $o: offered $off, taken $taken\"; "
		"  done; "
		"done",
		dir, bin, script);
	o = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", o);
	cr_assert_str_eq(o, "", "completion and the commands disagree:\n%s", o);
	free(o);
}

/* A trigger record of tid 42 at @time (docs/format.md: kind, state, value, by_pid, by_tid). */
static void put_trigger(struct rk_bufile *bf, __u64 time, __u32 kind, __u32 state, __u64 value,
			__u32 by_pid, __u32 by_tid)
{
	struct {
		struct rk_trigger_record t;
		__u32 pid, tid;
		__u64 time;
		__u32 cpu, res;
		__u64 id;
	} r = { { { RK_RECORD_TRIGGER, 0, sizeof(r) }, kind, state, value, by_pid, by_tid },
		41,
		42,
		time,
		1,
		0,
		1ull << 63 };

	cr_assert_eq(rk_bufile__write(bf, &r, sizeof(r)), 0);
}

/*
 * show --json gives a trigger record's fields as an object, not only its
 * text; the Python reader (python/tests/showdiff.py) gives the same
 * document, and it fits tests/schema/show.json.
 */
Test(cli, show_json_gives_a_trigger_s_fields)
{
	char path[300], cmd[2048], bindir[256], *o, *e;
	struct rk_thread_ident id = { 0 };
	struct rk_pmu_entry pe;
	struct rk_bufile *bf;
	int st;

	NEED_BIN();
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/root/t/sched", dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/root/t/sched/42", dir);
	id.tid = 42;
	id.tgid = 41;
	memcpy(id.comm, "unit", 5);
	rk_pmu_sched_entry(&pe);
	bf = rk_bufile__create(path, 8192, 0, &pe, &id);
	cr_assert_not_null(bf, "create: %s", strerror(errno));
	put_switch(bf, 1000, 0);
	put_trigger(bf, 2000, RK_TRIG_KILLED, RK_TRIG_BY_KERNEL, 9, 0, 0);
	put_trigger(bf, 3000, RK_TRIG_DELAY, 0, 1500000, 0, 0);
	put_trigger(bf, 4000, RK_TRIG_KILLED, 0, 15, 77, 78);
	put_trigger(bf, 5000, 9, 0, 0, 0, 0);
	rk_bufile__free(bf);

	/* Fresh memory is not zeros: show must set every field of what it describes. */
	setenv("MALLOC_PERTURB_", "165", 1);
	o = rk("show --json --root ROOT --session t 42", &e, &st);
	cr_assert_eq(st, 0, "%s", e);
	cr_assert_not_null(strstr(o, "\"trigger\":{\"kind\":\"killed\",\"kind_code\":4,\"value\":9,"
				     "\"state\":1,\"by_pid\":0,\"by_tid\":0}"),
			   "%s", o);
	cr_assert_not_null(strstr(o, "\"trigger\":{\"kind\":\"delay\",\"kind_code\":2,"
				     "\"value\":1500000,\"state\":0,"),
			   "%s", o);
	cr_assert_not_null(strstr(o, "\"kind\":\"killed\",\"kind_code\":4,\"value\":15,\"state\":0,"
				     "\"by_pid\":77,\"by_tid\":78}"),
			   "%s", o);
	cr_assert_not_null(strstr(o, "\"kind\":\"unknown\",\"kind_code\":9,"), "%s", o);
	cr_assert_eq(count_of(o, "\"trigger\":{"), 4, "%s", o);
	free(o);
	free(e);
	/* From a bundle too, and on no other record (show once left the object on others). */
	o = rk("snapshot --root ROOT -o DIR/t.rkb t", &e, &st);
	cr_assert_eq(st, 0, "%s", e);
	free(o);
	free(e);
	o = rk("show --json --bundle DIR/t.rkb 42", &e, &st);
	cr_assert_eq(st, 0, "%s", e);
	cr_assert_eq(count_of(o, "\"trigger\":{"), 4, "%s", o);
	cr_assert_eq(count_of(o, "\"type\":\"RINGKEEPER_TRIGGER\""), 4, "%s", o);
	free(o);
	free(e);
	unsetenv("MALLOC_PERTURB_");

	/* The Python reader, and the schema, where the source tree is. */
	snprintf(bindir, sizeof(bindir), "%s", bin);
	*strrchr(bindir, '/') = '\0';
	snprintf(cmd, sizeof(cmd), "%s/../python/tests/showdiff.py", bindir);
	if (access(cmd, R_OK))
		cr_skip_test("no source tree next to %s: the Python reader not compared", bin);
	snprintf(cmd, sizeof(cmd),
		 "cd %s/root && PYTHONPATH=%s/../python python3 %s/../python/tests/showdiff.py "
		 "--many %s t/sched/42 2>&1 && %s show --json t/sched/42 | python3 "
		 "%s/../tests/schema/validate.py %s/../tests/schema/show.json 2>&1",
		 dir, bindir, bindir, bin, bin, bindir, bindir);
	o = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", o);
	cr_assert_not_null(strstr(o, "show and the reader agree"), "%s", o);
	free(o);
}
