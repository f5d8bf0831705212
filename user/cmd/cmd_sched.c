// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_sched.c - ringkeeper sched: per-thread scheduling summary. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmd.h"
#include "offcpu.h"
#include "schedsum.h"
#include "timeline.h"
#include "util.h"

/* --sort, --by: a name of @names (n of them). Return: its index, or -1 (said). */
static int pick(const char *opt, const char *arg, const char *const *names, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(arg, names[i]))
			return i;
	rk_err("%s: '%s' is not one of %s%s%s%s%s%s%s%s%s", opt, arg, names[0], n > 1 ? ", " : "",
	       n > 1 ? names[1] : "", n > 2 ? ", " : "", n > 2 ? names[2] : "", n > 3 ? ", " : "",
	       n > 3 ? names[3] : "", n > 4 ? ", " : "", n > 4 ? names[4] : "");
	return -1;
}

/* sched's own options. Return: 1 taken, 0 not ours, -1 a bad value (said). */
/* --top was given (--offcpu takes 10 without it; 0 is all for both). */
static int top_given;

/* The options given that choose rows or the table (what --offcpu and --hist take or refuse). */
enum { G_SORT = 1, G_BY = 2, G_TOP = 4, G_ALL = 8, G_WIDE = 16, G_PER_THREAD = 32 };
static unsigned int given;

static int sched_opt(struct rk_sched_opts *o, int c, const char *arg)
{
	static const char *const sorts[] = { "tid", "on-cpu", "delay", "off-cpu", "runs" };
	static const char *const bys[] = { "thread", "process", "comm" };
	unsigned long long v;
	int k;

	switch (c) {
	case 'j':
		o->json = 1;
		return 1;
	case 'S':
		k = pick("--sort", arg, sorts, 5);
		if (k < 0)
			return -1;
		o->sort = k;
		given |= G_SORT;
		return 1;
	case 'B':
		k = pick("--by", arg, bys, 3);
		if (k < 0)
			return -1;
		o->by = k;
		given |= G_BY;
		return 1;
	case 'N':
		if (rk_parse_uint(arg, INT_MAX, &v)) {
			rk_err("--top: '%s' is not a number of rows (0: all)", arg);
			return -1;
		}
		o->top = v;
		top_given = 1;
		given |= G_TOP;
		return 1;
	case 'A':
		o->all = 1;
		given |= G_ALL;
		return 1;
	case 'W':
		o->wide = 1;
		given |= G_WIDE;
		return 1;
	case 'H':
		o->hist = 1;
		return 1;
	case 'P':
		given |= G_PER_THREAD;
		return 1;
	}
	return 0;
}

/* The first of @mask's options given, by name. */
static const char *given_name(unsigned int mask)
{
	static const char *const names[] = { "--sort", "--by",	 "--top",
					     "--all",  "--wide", "--per-thread" };
	int i;

	for (i = 0; i < 6; i++)
		if (given & mask & (1u << i))
			return names[i];
	return NULL;
}

/*
 * No option is silently dropped: --offcpu ranks stacks (only --top is
 * its); --hist is the session's histograms unless --per-thread or --by
 * asks for a row's, and the text has no rows to sort, cut or widen then.
 * Return: 0, or -1 (said).
 */
static int sched_check(struct rk_sched_opts *o, int offcpu)
{
	const char *n;

	if (offcpu && o->hist) {
		rk_err("--hist is of runs and delays; --offcpu ranks stacks: give one of them");
		return -1;
	}
	if (offcpu && (n = given_name(~(unsigned int)G_TOP))) {
		rk_err("%s is not one of --offcpu's options (it ranks stacks, per thread and "
		       "process: --top N is how many)",
		       n);
		return -1;
	}
	if ((given & G_PER_THREAD) && !o->hist) {
		rk_err("--per-thread is of --hist (the table has a row per thread already)");
		return -1;
	}
	if ((given & G_PER_THREAD) && (given & G_BY) && o->by != RK_SCHED_BY_THREAD) {
		rk_err("--per-thread and --by %s: give one of them",
		       o->by == RK_SCHED_BY_PROCESS ? "process" : "comm");
		return -1;
	}
	o->hist_rows = o->hist && (given & (G_PER_THREAD | G_BY));
	if (o->hist && !o->json && (n = given_name(G_WIDE))) {
		rk_err("--wide is of the table; --hist prints histograms instead");
		return -1;
	}
	if (o->hist && !o->hist_rows && !o->json && (n = given_name(G_SORT | G_TOP | G_ALL))) {
		rk_err("%s chooses rows; --hist alone prints the session's histograms: add "
		       "--per-thread or --by for one per row",
		       n);
		return -1;
	}
	return 0;
}

int cmd_sched(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper sched [--json | --offcpu] [--sort KEY] [--top N]\n"
		"                        [--by thread|process|comm] [--all] [--wide]\n"
		"                        [--hist [--per-thread]]\n"
		"                        [--time S,E | --last D] [--tid T | --pid P] [--root DIR]\n"
		"                        [SESSION | --session S | --core CORE | --bundle FILE]\n"
		"\n"
		"A per-thread scheduling summary of a session (default: the newest) or of an\n"
		"ELF core dump's RINGKEEPER notes or a snapshot bundle (--core and --bundle\n"
		"are the same option), like perf's 'sched timehist --summary', from each\n"
		"thread's own history: runs on a CPU (a switch-in and its switch-out), time on\n"
		"CPU; time off CPU by why the thread left it (preempted: runnable, waiting for\n"
		"a CPU; sleeping; blocked: uninterruptible); scheduling delay (sch delay: of a\n"
		"run, from the thread's first wakeup after it left the CPU, or from that\n"
		"switch-out if it was preempted, to its switch-in; perf 6.1's 'perf sched\n"
		"timehist' counts no delay after a preemption, so its sum is smaller). Only\n"
		"what the ring still holds counts: a history's first out and last in have one\n"
		"end and are left out.\n"
		"A thread whose ring wrapped is marked '*'; the totals cover one window, where\n"
		"every thread's history is whole, and count every thread.\n"
		"  --json one JSON document: {\"threads\": [...], \"total\": {...}} (\"processes\" or\n"
		"         \"comms\" with --by), times in ns\n"
		"  --sort KEY  rows by tid (default: tid, pid or comm, as --by), on-cpu, delay\n"
		"         (total scheduling delay), off-cpu (total off-CPU time) or runs, largest\n"
		"         first; the table shows the key (delay: the sum in place of the\n"
		"         average; off-cpu: an off-CPU column in place of the longest delay)\n"
		"  --top N     only the first N rows (the totals still count every thread)\n"
		"  --by thread|process|comm  one row per thread (default), per process, or per\n"
		"         name (as perf sched latency's rows); a row's p99 is of all its delays\n"
		"  --all  also the threads with no complete run in the window (left out and\n"
		"         counted in a note otherwise)\n"
		"  --wide every column (also average and longest run, other off-CPU time:\n"
		"         idle, stopped, dead or not recorded; the longest off-CPU gap;\n"
		"         migrations: a run on another CPU than the run before); the default\n"
		"         table fits 120 columns\n"
		"  --hist log2 histograms (usecs, as bcc's runqlat and cpudist print them) of\n"
		"         scheduling delay, run length and off-CPU time by why, of the whole\n"
		"         session (the totals' window; with --json: the total's \"hist\")\n"
		"  --per-thread  with --hist: one set per thread instead (--by: per process or\n"
		"         name; with --json: a \"hist\" object in each row too)\n"
		"  --time START,END  only runs and off-CPU periods within it (seconds of the\n"
		"         recorded clock, as show prints them; either may be left out)\n"
		"  --last DURATION   only the last DURATION (500ms, 2s, 10m, 1h) before the\n"
		"         newest event\n"
		"  --offcpu  instead: off-CPU time by the stack each sleep began in (record\n"
		"         --offcpu), from the switch-out to the next switch-in, ranked per\n"
		"         thread and per process (stacks root first: comm;user;kernel)\n"
		"  --top N   with --offcpu: the N heaviest stacks of each (default 10, 0: all)\n"
		"Exit status: 0, 1 nothing matched or an error, 2 usage.\n";
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "sort", required_argument, NULL, 'S' },
		{ "top", required_argument, NULL, 'N' },
		{ "by", required_argument, NULL, 'B' },
		{ "all", no_argument, NULL, 'A' },
		{ "wide", no_argument, NULL, 'W' },
		{ "hist", no_argument, NULL, 'H' },
		{ "per-thread", no_argument, NULL, 'P' },
		{ "offcpu", no_argument, NULL, 'O' },
		TWIN_LONGOPTS,
		FROM_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct rk_sched_opts o = { 0 };
	struct from f = { .root = RK_DEFAULT_ROOT };
	struct twin tw = { 0 };
	struct rk_timeline tl;
	int c, r, offcpu = 0;
	struct cmd_line l;

	cmd_line_init(&l, argc, argv, "j" FROM_OPTS "h", lo, usage);
	while ((c = cmd_getopt(&l)) != -1) {
		r = from_opt(&f, c, optarg);
		if (!r)
			r = twin_opt(&tw, c, optarg);
		if (!r)
			r = sched_opt(&o, c, optarg);
		if (r < 0)
			return 2;
		if (r)
			continue;
		switch (c) {
		case 'O':
			offcpu = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc && !f.session && !f.core)
		f.session = argv[optind++];
	if (cmd_too_many(usage, 0, argc, argv))
		return 2;
	if (offcpu && o.json) {
		rk_err("--offcpu has no --json (export --folded gives the stacks as data)");
		return 2;
	}
	if (sched_check(&o, offcpu))
		return 2;
	if (f.core && f.session)
		return cmd_bad(usage, "give a session or --core/--bundle, not both");
	if (f.tid && f.pid)
		return cmd_bad(usage, "give --tid or --pid, not both");
	if (from_open(&f)) {
		from_close(&f);
		return 1;
	}
	r = rk_timeline__load(&tl, f.dir, (__u32)f.tid, (__u32)f.pid, 0);
	from_close(&f);
	if (r == -ENOENT) {
		rk_err("%s: no thread%s", f.core ? f.core : f.dir,
		       f.tid ? " with that --tid" :
		       f.pid ? " of that --pid" :
			       "s");
		return 1;
	}
	if (r)
		return 1;
	twin_resolve(&tw, rk_sched_end(&tl));
	if (offcpu) {
		if (tw.set)
			rk_timeline__clip(&tl, tw.lo, tw.hi);
		r = rk_offcpu_print(stdout, &tl, top_given ? (size_t)o.top : 10);
		rk_loss_say(stdout, &f.loss, "# ");
		rk_timeline__free(&tl);
		return r ? 1 : 0;
	}
	o.lo = tw.lo;
	o.hi = tw.hi;
	o.loss = &f.loss;
	r = rk_sched_report(stdout, &tl, &o);
	rk_timeline__free(&tl);
	if (r) {
		rk_err("sched: %s", strerror(-r));
		return 1;
	}
	return 0;
}
