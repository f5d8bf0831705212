// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_snapshot.c - ringkeeper snapshot: a session cut at one instant, in one file (bundle.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"
#include "bundle.h"
#include "session.h"
#include "util.h"

/* How long snapshot waits for a running recorder to write what it holds up to T. */
#define SETTLE_MS 2000

static const char usage[] =
	"Usage: ringkeeper snapshot [--root DIR] [-o FILE] [--force] [-p PID]\n"
	"                           [--reason TEXT] [--for-user USER] [--no-symbols]\n"
	"                           [--max-size SIZE] [SESSION]\n"
	"       ringkeeper snapshot --trigger [--root DIR] SESSION\n"
	"\n"
	"Cut a session (default: the newest) at this instant T and write it as one\n"
	"bundle file that another machine can read: each thread's buffers with\n"
	"exactly their whole records timed up to T, the processes' sidebands, the\n"
	"tracing data, and the build id and function symbols of every file the\n"
	"processes mapped (so functions are named where those files are absent or\n"
	"different). The session may be running or not; a running recorder is given\n"
	"up to 2 s to write the records it still holds from before T. Read the bundle\n"
	"with --core (or --bundle) as a core: 'show --core FILE' lists what, when and\n"
	"why, 'show --core FILE TID', 'sched --core FILE', 'export --core FILE'.\n"
	"  -o, --output FILE  where (default: ./SESSION.T.rkb, T in seconds as show\n"
	"                     prints times); written under a temporary name, then\n"
	"                     renamed: mode 0600, never replacing a file without --force\n"
	"  --force            replace FILE if it exists\n"
	"  -p, --pid PID      only that process's threads and sideband\n"
	"  --reason TEXT      why, kept in the bundle (default: manual)\n"
	"  --for-user USER    only the buffers USER may read (the files' ACLs, as\n"
	"                     record grants them), and the bundle is USER's (0600);\n"
	"                     without it the bundle is the caller's (root's)\n"
	"  --no-symbols       no symbol tables (smaller; names resolve only from the\n"
	"                     files on the reading machine)\n"
	"  --max-size SIZE    at most SIZE bytes (K/M/G): what does not fit is left\n"
	"                     out, symbol tables trimmed to the room left, and the\n"
	"                     bundle says what (record --trigger's bundles: at most\n"
	"                     its --snapshot-max-size); a mapped file's symbols are\n"
	"                     bounded anyway (docs/format.md)\n"
	"  -r, --root DIR     the sessions' root (default " RK_DEFAULT_ROOT ")\n"
	"  --trigger          instead, have SESSION's recorder take the snapshot, as a\n"
	"                     trigger (record --trigger signal; the same as sending it\n"
	"                     SIGUSR2): into its --snapshot-dir, with its window and\n"
	"                     its limits; waits for it (10 s at most), prints where\n"
	"Exit status: 0 written; 1 failed (nothing is left behind; with --trigger: the\n"
	"recorder took none, and says why); 2 usage.\n";

static int trigger; /* --trigger */

/* --for-user: a name or a uid, and its group. Return: 0, or -1 (said). */
static int parse_user(const char *arg, struct rk_bundle_opts *o)
{
	unsigned long long v;
	struct passwd *pw;

	pw = getpwnam(arg);
	if (!pw && !rk_parse_uint(arg, UINT32_MAX - 1, &v))
		pw = getpwuid((uid_t)v);
	if (!pw) {
		rk_err("--for-user: no user '%s' on this machine", arg);
		return -1;
	}
	o->for_uid = pw->pw_uid;
	o->for_gid = pw->pw_gid;
	return 0;
}

static int parse_opts(int argc, char **argv, struct rk_bundle_opts *o, const char **root,
		      const char **out, const char **reason)
{
	static const struct option lo[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "pid", required_argument, NULL, 'p' },
		{ "reason", required_argument, NULL, 'R' },
		{ "for-user", required_argument, NULL, 'u' },
		{ "no-symbols", no_argument, NULL, 'N' },
		{ "max-size", required_argument, NULL, 'M' },
		{ "root", required_argument, NULL, 'r' },
		{ "trigger", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned long long v;
	struct cmd_line l;
	uint64_t size;
	int c;

	cmd_line_init(&l, argc, argv, "o:p:r:h", lo, usage);
	while ((c = cmd_getopt(&l)) != -1) {
		switch (c) {
		case 'o':
			*out = optarg;
			break;
		case 'f':
			o->force = 1;
			break;
		case 'p':
			if (rk_parse_uint(optarg, INT_MAX, &v) || !v) {
				rk_err("--pid: not a pid: '%s'", optarg);
				return 2;
			}
			o->pid = (__u32)v;
			break;
		case 'R':
			*reason = optarg;
			break;
		case 'u':
			if (parse_user(optarg, o))
				return 2;
			break;
		case 'N':
			o->no_symbols = 1;
			break;
		case 'M':
			if (rk_parse_size(optarg, 0, &size) || !size) {
				rk_err("--max-size: not a size (bytes, or with K/M/G): '%s'",
				       optarg);
				return 2;
			}
			o->max_bytes = size;
			break;
		case 'r':
			*root = optarg;
			break;
		case 'T':
			trigger = 1;
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
	return -1;
}

/* The session's directory: SESSION, or the newest. Return: 0, or 1 (said). */
static int find_session(const char *root, const char *name, char *dir, size_t len)
{
	struct from f = { .root = root, .session = name };

	if (from_open(&f))
		return 1;
	snprintf(dir, len, "%s", f.dir);
	return 0;
}

static void report(const char *session, const char *out, __u64 t, const char *reason,
		   const struct rk_bundle_stats *st)
{
	fprintf(stderr,
		"ringkeeper: wrote %s: session %s at %llu.%09llu (%s): %zu buffers, %zu sidebands, "
		"%zu symbol tables, %llu records (%llu after T left out, %llu overwritten while "
		"read), %llu bytes\n",
		out, session, (unsigned long long)(t / 1000000000),
		(unsigned long long)(t % 1000000000), reason, st->buffers, st->sidebands,
		st->symtabs, (unsigned long long)st->kept, (unsigned long long)st->after,
		(unsigned long long)st->overwritten, (unsigned long long)st->bytes);
	if (st->skipped)
		rk_warn("%zu files not bundled (not valid buffers%s)", st->skipped,
			" or not readable by the bundle's user");
	if (st->symtabs_left)
		rk_warn("%zu mapped files have no symbol table in it: gone, not readable by the "
			"bundle's user, or the file at their path is not the one mapped (replaced "
			"since, or a link)",
			st->symtabs_left);
	if (st->left_out || st->trimmed)
		rk_warn("trimmed to its limits: %zu notes or mapped files left out, %zu symbol "
			"tables trimmed (ringkeeper show --bundle %s lists what)",
			st->left_out, st->trimmed, out);
	if (!st->settled)
		rk_warn("the recorder did not publish within %d ms after T: records up to T it "
			"still held may be missing",
			SETTLE_MS);
}

/* What the recorder's counters say of its triggers: written, failed, dropped. */
static int trigger_counts(int fd, struct rk_session_stat *st, __u64 c[3])
{
	if (rk_session_stat_readfd(fd, st))
		return -1;
	c[0] = st->snapshots;
	c[1] = st->snapshot_errors;
	c[2] = st->triggers_dropped;
	return 0;
}

/* The last line of the session's snapshots file (the recorder's list), printed. */
static void print_last_snapshot(const char *dir, const char *name)
{
	char path[PATH_MAX + 32], line[1200], last[1200] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/snapshots", dir);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		memcpy(last, line, sizeof(last));
	if (f)
		fclose(f);
	last[strcspn(last, "\n")] = '\0';
	printf("ringkeeper: session %s: %s\n", name, rk_strip_controls(last));
}

/*
 * --trigger: SIGUSR2 to the session's recorder (the loader that keeps that
 * very stat file mapped, not any process named so), then wait until its
 * counters say what became of it. Return: the exit status.
 */
static int trigger_recorder(const char *dir, const char *name)
{
	char path[PATH_MAX + 16];
	struct rk_session_stat st;
	__u64 before[3], now[3];
	int fd, ms;

	snprintf(path, sizeof(path), "%s/stat", dir);
	fd = rk_open_regular(path, 0, NULL);
	if (fd < 0 || trigger_counts(fd, &st, before)) {
		rk_err("session %s: no readable stat file", name);
		goto fail;
	}
	if (!rk_session_alive(&st) || !rk_session_loader_wrote(&st, fd)) {
		rk_err("session %s is not recording: no recorder to trigger (a snapshot of it "
		       "as it is: ringkeeper snapshot %s)",
		       name, name);
		goto fail;
	}
	if (!(st.trigger_flags & RK_TRIGGER_F_SIGNAL)) {
		rk_err("session %s was not started with --trigger signal: its recorder takes "
		       "no snapshot on request (ringkeeper snapshot %s takes one itself)",
		       name, name);
		goto fail;
	}
	if (kill((pid_t)st.loader_pid, SIGUSR2)) {
		rk_err("cannot signal the recorder of %s (pid %u): %s", name, st.loader_pid,
		       strerror(errno));
		goto fail;
	}
	for (ms = 0; ms < 10000; ms += 50) {
		usleep(50000);
		if (trigger_counts(fd, &st, now))
			break;
		if (now[0] > before[0]) {
			close(fd);
			print_last_snapshot(dir, name);
			return 0;
		}
		if (now[1] > before[1] || now[2] > before[2]) {
			rk_err("the recorder of %s took no snapshot: %s (ringkeeper stat %s)", name,
			       now[1] > before[1] ? "it could not write it" :
						    "within --trigger-gap of its last one",
			       name);
			goto fail;
		}
	}
	rk_err("the recorder of %s wrote no snapshot within 10 s (ringkeeper stat %s)", name, name);
fail:
	if (fd >= 0)
		close(fd);
	return 1;
}

int cmd_snapshot(int argc, char **argv)
{
	const char *root = RK_DEFAULT_ROOT, *out = NULL, *reason = NULL, *name;
	char dir[PATH_MAX], def[PATH_MAX + 64];
	struct rk_bundle_opts o;
	struct rk_bundle_stats st;
	__u64 t = rk_now_mono_ns();
	int r, err;

	rk_bundle_opts_init(&o);
	r = parse_opts(argc, argv, &o, &root, &out, &reason);
	if (r >= 0)
		return r;
	if (find_session(root, optind < argc ? argv[optind] : NULL, dir, sizeof(dir)))
		return 1;
	name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
	if (trigger)
		return trigger_recorder(dir, name);
	if (!out) {
		snprintf(def, sizeof(def), "%s.%llu.%09llu.rkb", name,
			 (unsigned long long)(t / 1000000000),
			 (unsigned long long)(t % 1000000000));
		out = def;
	}
	o.settle_ms = SETTLE_MS;
	err = rk_bundle_write(dir, t, reason, out, &o, &st);
	if (err == -EEXIST) {
		rk_err("%s exists: not replacing it (--force replaces it, -o names another)", out);
		return 1;
	}
	if (err == -ENODATA) {
		char of[32] = "";

		if (o.pid)
			snprintf(of, sizeof(of), " of pid %u", o.pid);
		rk_err("session %s has no buffer%s%s to bundle (ringkeeper ls %s lists them)", name,
		       of, o.for_uid != (uid_t)-1 ? " that --for-user may read" : "", name);
		return 1;
	}
	if (err == -EFBIG) {
		rk_err("no buffer of session %s fits --max-size %llu: nothing written (raise it)",
		       name, (unsigned long long)o.max_bytes);
		return 1;
	}
	if (err) {
		rk_err("cannot write the snapshot of %s to %s: %s", dir, out, strerror(-err));
		return 1;
	}
	report(name, out, t, reason ? reason : "manual", &st);
	return 0;
}
