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

int cmd_sched(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper sched [--json | --offcpu [--top N]] [--tid T | --pid P] [--root DIR]\n"
		"                        [SESSION | --session S | --core CORE | --bundle FILE]\n"
		"\n"
		"A per-thread scheduling summary of a session (default: the newest) or of an\n"
		"ELF core dump's RINGKEEPER notes or a snapshot bundle (--core and --bundle\n"
		"are the same option), like 'perf sched timehist -s', from each\n"
		"thread's own history: runs on a CPU (a switch-in and its switch-out), total,\n"
		"average and longest time on CPU; time off CPU by why the thread left it\n"
		"(preempted: runnable, waiting for a CPU; sleeping; blocked: uninterruptible;\n"
		"other: idle, stopped, or not recorded); the longest off-CPU gap; migrations\n"
		"(a run on another CPU than the run before). Only what the ring still holds\n"
		"counts: a history's first out and last in have one end and are left out.\n"
		"A thread whose ring wrapped is marked '*'; the totals cover one window, where\n"
		"every thread's history is whole.\n"
		"  --json one JSON document: {\"threads\": [...], \"total\": {...}}, times in ns\n"
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
		{ "offcpu", no_argument, NULL, 'O' },
		{ "top", required_argument, NULL, 'N' },
		TWIN_LONGOPTS,
		FROM_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct from f = { .root = RK_DEFAULT_ROOT };
	struct twin tw = { 0 };
	struct rk_timeline tl;
	int c, r, json = 0, offcpu = 0;
	long top = 10;
	char *end;

	while ((c = getopt_long(argc, argv, "j" FROM_OPTS "h", lo, NULL)) != -1) {
		r = from_opt(&f, c, optarg);
		if (!r)
			r = twin_opt(&tw, c, optarg);
		if (r < 0)
			return 2;
		if (r)
			continue;
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'O':
			offcpu = 1;
			break;
		case 'N':
			top = strtol(optarg, &end, 10);
			if (*end || top < 0) {
				rk_err("--top %s: a count (0: all)", optarg);
				return 2;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc && !f.session && !f.core)
		f.session = argv[optind++];
	if (offcpu && json) {
		rk_err("--offcpu has no --json (export --folded gives the stacks as data)");
		return 2;
	}
	if (optind != argc || (f.core && f.session) || (f.tid && f.pid)) {
		fputs(usage, stderr);
		return 2;
	}
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
		r = rk_offcpu_print(stdout, &tl, (size_t)top);
		rk_timeline__free(&tl);
		return r ? 1 : 0;
	}
	rk_sched_print_window(stdout, &tl, json, tw.lo, tw.hi);
	rk_timeline__free(&tl);
	return 0;
}
