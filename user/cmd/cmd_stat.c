// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_stat.c - ringkeeper stat: a session's counters. */
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
#include "util.h"

/* The exit status of stat: what the newest session shown says of its recorder (--help). */
enum { STAT_RUNNING = 0, STAT_LOSSES = 3, STAT_NOT_RUNNING = 4 };

static int health_of(const struct rk_session_stat *st)
{
	struct rk_loss l;

	if (!rk_session_alive(st))
		return STAT_NOT_RUNNING;
	rk_loss_from_stat(&l, st);
	return rk_loss_count(&l) ? STAT_LOSSES : STAT_RUNNING;
}

int cmd_stat(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper stat [--json] [--root DIR] [--all | SESSION]\n"
		"\n"
		"Counters of a session (default: the newest): BPF signals and ringbuf drops,\n"
		"records written and overwritten, threads, pins, unpins, refusals by the\n"
		"budget, locked bytes now and peak against the budget, the loader's VmLck peak;\n"
		"then each crash of a traced process the core handler saw: pid, comm, the\n"
		"thread the signal was delivered to, the signal, when (seconds since the\n"
		"epoch) and where its core went (JSON: \"crashes_seen\", core null if nowhere).\n"
		"  --json  an array of sessions; the keys are the names the text prints first\n"
		"\n"
		"Exit status, of the session shown (with --all, the newest), for a health check:\n"
		"  0  its recorder is running and has lost nothing\n"
		"  3  its recorder is running and has lost something (the incomplete lines say what)\n"
		"  4  no recorder is running for it: the session ended, or its recorder died\n"
		"     (state dead-loader; record --resume takes it over)\n"
		"  1  no such session, or no readable stat file; 2  a usage error\n";
	char dir[PATH_MAX + 300];
	const char *root = RK_DEFAULT_ROOT;
	struct sess *v;
	size_t n, i;
	int json = 0, all = 0, r, shown = 0, health = STAT_NOT_RUNNING;

	r = common_opts(argc, argv, usage, &json, &root, NULL, &all);
	if (r <= 0)
		return -r;
	if (cmd_too_many(usage, 1, argc, argv))
		return 2;
	if (sessions(root, &v, &n))
		return 1;
	for (i = 0; i < n; i++) {
		if (optind < argc ? strcmp(argv[optind], v[i].name) : (!all && shown))
			continue;
		if (!v[i].have_stat) {
			rk_err("session %s has no readable stat file", v[i].name);
			continue;
		}
		snprintf(dir, sizeof(dir), "%s/%s", root, v[i].name);
		/* JSON: one array of sessions, as ls --json. */
		if (json)
			fputs(shown ? "," : "[", stdout);
		rk_session_print(stdout, v[i].name, &v[i].st, json, dir);
		/* sessions() lists the newest first. */
		if (!shown)
			health = health_of(&v[i].st);
		shown++;
	}
	free(v);
	if (json && shown)
		fputs("]\n", stdout);
	if (!shown) {
		if (optind < argc)
			rk_err("no session %s in %s (ringkeeper ls lists them)", argv[optind],
			       root);
		else
			rk_err("no sessions in %s", root);
		return 1;
	}
	return health;
}
