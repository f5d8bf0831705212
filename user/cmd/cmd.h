/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cmd.h - the commands of the ringkeeper command line, one file each
 * (cmd_*.c, like perf's builtin-*.c), and what they share (cmd_common.c):
 * the sessions under a root, option parsing of the reading commands (the
 * session or core they read, --time/--last).
 * May call: every subsystem (lib, format, recorder, view, crash).
 */
#ifndef RK_CMD_H
#define RK_CMD_H

#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "session.h"

/*
 * cmd_record.c: `ringkeeper record`, its options as one table whose entries
 * each hold an option's name, parser, default and help, so that the help
 * text is made from what the parser does and cannot drift.
 */
int rk_cmd_record(int argc, char **argv);
void rk_usage_record(FILE *f);
int cmd_ls(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_sched(int argc, char **argv);
/* cmd_top.c: a running session's last second per thread, refreshed. */
int cmd_top(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_pmu(int argc, char **argv);
/* cmd_snapshot.c: a session cut at one instant into a bundle (format/bundle.h). */
int cmd_snapshot(int argc, char **argv);

/*
 * A command's line, parsed: options anywhere among the operands (getopt's
 * in-order mode, which holds whatever POSIXLY_CORRECT says; "--" ends the
 * options), every usage error said (the option or operand, and the
 * synopsis of @usage). After the last option, the operands are
 * argv[optind..argc), in their order.
 */
struct cmd_line {
	int argc;
	char **argv; /* argv[0] is the command's name (main() drops "ringkeeper") */
	const struct option *lo;
	const char *usage;
	char opts[160]; /* "-:" (or "+:") and the short options */
	int nops, started;
};

/*
 * @sopts: getopt's short options; a leading '+' keeps the order instead
 * (record: its first operand is a command, the rest that command's).
 */
void cmd_line_init(struct cmd_line *l, int argc, char **argv, const char *sopts,
		   const struct option *lo, const char *usage);
/*
 * The next option (getopt_long's value; its argument in optarg).
 * Return: -1 after the last (the operands at argv[optind..argc)), or '?'
 * for an unknown option or one without its value (said: exit 2).
 */
int cmd_getopt(struct cmd_line *l);
/* A usage error of @usage's command, said with the synopsis. Return: 2. */
int cmd_bad(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* More than @max operands (of what @usage's synopsis takes): "too many operands: 'a b'". */
int cmd_too_many(const char *usage, int max, int argc, char **argv);

/* Session directories under @root, newest first (by stat start time). */
struct sess {
	char name[256];
	struct rk_session_stat st;
	int have_stat;
};

int sessions(const char *root, struct sess **v, size_t *n);
/* The names in @dir (tids first, by number), malloc'd; the count. */
size_t dir_names(const char *dir, char ***out);

/* --time START,END / --last DURATION: what show and sched take of a history. */
struct twin {
	uint64_t lo, hi, last;
	int set;
};

#define TWIN_LONGOPTS                                \
	{ "time", required_argument, NULL, 'T' },    \
	{                                            \
		"last", required_argument, NULL, 'L' \
	}

/* Return: 1 taken, 0 not ours, -1 a bad value (said). */
int twin_opt(struct twin *w, int c, const char *arg);
/* The window in ns, once the newest event (@end) is known; everything if none was asked. */
void twin_resolve(struct twin *w, uint64_t end);

/* show's -e, --pt, --core and --time/--last (parsed by common_opts). */
extern const char *show_event;
extern int show_pt;
extern const char *show_core;
extern struct twin show_twin;

/*
 * The options of ls, stat and show: --json, --root, and with @session
 * (show) --session, -e, --pt, --core, --time, --last; @all (stat --all).
 * Return: 1 go on, 0 done (--help), or -2 a usage error (said).
 */
int common_opts(int argc, char **argv, const char *usage, int *json, const char **root,
		const char **session, int *all);

/*
 * Where export and sched read from: a session (by name, or the newest) under
 * a root, or an ELF core dump's buffers (extracted into a directory of the
 * same layout); which threads (tid, pid: 0 all). The options are theirs.
 */
struct from {
	const char *root, *session, *core;
	unsigned long long tid, pid;
	char dir[PATH_MAX]; /* the session's directory, or the core's buffers */
	char cdir[32]; /* the core's buffers (mkdtemp), "" if none */
	/* what the session did not record: its stat file's, or the core's or bundle's note */
	struct rk_loss loss;
};

#define FROM_OPTS "t:p:s:r:"

#define FROM_LONGOPTS                                                                     \
	{ "tid", required_argument, NULL, 't' }, { "pid", required_argument, NULL, 'p' }, \
		{ "session", required_argument, NULL, 's' },                              \
		{ "root", required_argument, NULL, 'r' },                                 \
		{ "core", required_argument, NULL, 'C' },                                 \
	{                                                                                 \
		"bundle", required_argument, NULL, 'C'                                    \
	}

/* Return: 1 taken, 0 not ours, -1 a bad value (said). */
int from_opt(struct from *f, int c, const char *arg);
/*
 * The session's directory, or the core's buffers extracted; f->loss from
 * the session's stat file or the core's note. Return: 0, or 1 (said).
 */
int from_open(struct from *f);
void from_close(struct from *f);

#endif /* RK_CMD_H */
