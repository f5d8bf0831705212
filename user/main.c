// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * main.c - the ringkeeper command line: the command table and dispatch.
 * Each command is in user/cmd/ (cmd_*.c); what they read and write is in
 * user/format (buffer files, session files), user/recorder (record),
 * user/view (show, sched, export), user/crash (coredump), user/lib.
 */
#include <stdio.h>
#include <string.h>
#include "cmd.h"
#include "coredump.h"
#include "util.h"
#include "version.h"

/*
 * Every command, as bpftool's struct cmd table: `ringkeeper --help` is
 * printed from it, so it cannot forget one.
 */
static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} cmds[] = {
	{ "record", rk_cmd_record, "trace a running process (-p PID) or a command (-- CMD ARGS)" },
	{ "ls", cmd_ls, "list sessions and their per-thread buffer files" },
	{ "stat", cmd_stat, "counters of a session (signals, drops, pins, locked bytes)" },
	{ "show", cmd_show, "print the records of one thread's buffer (FILE or TID)" },
	{ "export", cmd_export,
	  "write a session (or threads of it) as a perf.data file or a Perfetto trace" },
	{ "snapshot", cmd_snapshot,
	  "cut a session at this instant into one bundle file, readable elsewhere" },
	{ "sched", cmd_sched, "per-thread scheduling summary: runs, on-CPU and off-CPU time" },
	{ "top", cmd_top, "live view of a running session: each thread's last second, refreshed" },
	{ "gc", cmd_gc, "remove the buffers of threads that exited long ago" },
	{ "rm", cmd_rm, "remove a session entirely" },
	{ "pmu", cmd_pmu, "the PMU descriptor ringkeeper records for an event" },
	{ "coredump", rk_cmd_coredump,
	  "install the core_pattern handler that puts buffers in cores" },
};

static void usage_main(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: ringkeeper COMMAND [OPTIONS]\n"
		   "\n"
		   "A per-thread flight recorder: every traced thread gets its own trace ring\n"
		   "buffer in a tmpfs file, locked in memory only while the thread runs.\n"
		   "\n"
		   "Commands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\nRun 'ringkeeper COMMAND --help' (or 'ringkeeper help COMMAND') for the\n"
		   "options of each; 'ringkeeper --version' for the version; man ringkeeper for\n"
		   "all of it.\n");
}

int main(int argc, char **argv)
{
	const char *cmd;
	size_t i;

	if (argc < 2) {
		rk_err("missing COMMAND");
		usage_main(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("ringkeeper %s\n", RK_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "help") && argc > 2) {
		/* help COMMAND: that command's --help. */
		char *hv[] = { argv[2], "--help", NULL };

		for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			if (!strcmp(argv[2], cmds[i].name))
				return cmds[i].fn(2, hv);
		rk_err("unknown command '%s' (see ringkeeper --help)", argv[2]);
		return 2;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage_main(stdout);
		return 0;
	}
	/* Subcommand options start after the command name. */
	argc--;
	argv++;
	optind = 1;
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmd, cmds[i].name))
			return cmds[i].fn(argc, argv);
	rk_err("unknown command '%s' (see ringkeeper --help)", cmd);
	return 2;
}
