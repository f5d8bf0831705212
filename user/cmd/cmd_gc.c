// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_gc.c - ringkeeper gc and rm: removing what sessions hold. */
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
#include "gc.h"
#include "util.h"

int cmd_gc(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper gc [--older-than SECS] [--max-size SIZE] [--dry-run]\n"
		"                     [-v|--verbose] [--root DIR] [SESSION]\n"
		"\n"
		"Remove the buffer files of dead threads (exited, or of a session whose\n"
		"recorder is gone): those dead for more than SECS, then the oldest ones until\n"
		"the sessions take at most SIZE (K/M/G). With SESSION, only that one. Live\n"
		"threads of a running session are never touched; an ended session left\n"
		"without buffers is removed entirely. To remove a whole session: ringkeeper rm.\n"
		"Says how many files of each session went; -v, --verbose: each file.\n";
	static const struct option lo[] = {
		{ "older-than", required_argument, NULL, 'o' },
		{ "max-size", required_argument, NULL, 's' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "root", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct rk_gc_opts go = { .root = RK_DEFAULT_ROOT };
	unsigned long long v;
	struct cmd_line l;
	uint64_t size;
	int c;

	cmd_line_init(&l, argc, argv, "o:s:nr:vh", lo, usage);
	while ((c = cmd_getopt(&l)) != -1) {
		switch (c) {
		case 'o':
			if (rk_parse_uint(optarg, 100ull * 365 * 86400, &v)) {
				rk_err("--older-than: not a number of seconds: '%s'", optarg);
				return 2;
			}
			go.older_than_ns = v * 1000000000ull;
			break;
		case 's':
			if (rk_parse_size(optarg, 0, &size)) {
				rk_err("--max-size: not a size: '%s'", optarg);
				return 2;
			}
			go.max_bytes = size;
			break;
		case 'n':
			go.dry_run = 1;
			break;
		case 'v':
			go.verbose = 1;
			break;
		case 'r':
			go.root = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return 2;
		}
	}
	if (cmd_too_many(usage, 1, argc, argv))
		return 2;
	if (!go.older_than_ns && !go.max_bytes)
		return cmd_bad(usage, "give --older-than and/or --max-size (what to remove)");
	if (optind < argc) {
		char sched[PATH_MAX];

		go.session = argv[optind];
		snprintf(sched, sizeof(sched), "%s/%s/%s", go.root, go.session, RK_SCHED_DIR);
		if (strchr(go.session, '/') || access(sched, F_OK)) {
			rk_err("gc: no session '%s' in %s (ringkeeper ls lists them)", go.session,
			       go.root);
			return 1;
		}
	}
	return rk_gc(&go) ? 1 : 0;
}

int cmd_rm(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper rm [--dry-run] [--root DIR] SESSION...\n"
		"\n"
		"Remove sessions entirely: every buffer file, the sideband, the counters and\n"
		"the crash records. A session whose recorder is still running is refused\n"
		"(stop it with SIGINT first). Exit status 1 if any session was not removed.\n";
	static const struct option lo[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "root", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *root = RK_DEFAULT_ROOT;
	int c, dry = 0, bad = 0;
	struct cmd_line l;

	cmd_line_init(&l, argc, argv, "nr:h", lo, usage);
	while ((c = cmd_getopt(&l)) != -1) {
		switch (c) {
		case 'n':
			dry = 1;
			break;
		case 'r':
			root = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return 2;
		}
	}
	if (optind == argc)
		return cmd_bad(usage, "missing SESSION (the sessions to remove; ringkeeper ls "
				      "lists them)");
	for (; optind < argc; optind++)
		bad += rk_rm_session(root, argv[optind], dry, 0) != 0;
	return bad ? 1 : 0;
}
