// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_ls.c - ringkeeper ls: sessions and their buffer files. */
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
#include "bufile.h"
#include "elfcore.h"
#include "show.h"
#include "util.h"

#define LS_MAX_SRC (RK_MAX_SRC + 2)

static int str_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* A session's sources: sched first, the -e events sorted, the sideband last. */
static size_t session_sources(const char *sdir, char src[][128])
{
	struct dirent *de;
	size_t n = 1;
	DIR *d = opendir(sdir);

	snprintf(src[0], 128, "%s", RK_SCHED_DIR);
	while (d && (de = readdir(d)) && n < LS_MAX_SRC - 1) {
		if (de->d_name[0] == '.' || de->d_type != DT_DIR ||
		    !strcmp(de->d_name, RK_SCHED_DIR) || !strcmp(de->d_name, RK_SIDEBAND_DIR) ||
		    strlen(de->d_name) >= 128)
			continue;
		snprintf(src[n++], 128, "%s", de->d_name);
	}
	if (d)
		closedir(d);
	qsort(src + 1, n - 1, sizeof(src[0]), str_cmp);
	snprintf(src[n], 128, "%s", RK_SIDEBAND_DIR);
	return n + 1;
}

static const char *sess_state(const struct sess *s)
{
	return !s->have_stat		       ? "no-stat" :
	       rk_session_alive(&s->st)	       ? "running" :
	       s->st.state == RK_SESSION_ENDED ? "ended" :
						 "dead-loader";
}

/*
 * One session: a header (state, start, how long, threads, sources, command),
 * then a row per buffer file of every source. A file that cannot be read is
 * said on stderr. Return: the files that could not be read.
 */
/*
 * What ls lists: a session's directory, or a core's (or bundle's) buffers
 * extracted into one, named and described as @file says.
 * @file: the core or bundle (NULL: a session); its rows name FILE:SOURCE/TID.
 * @state: a core's ("core", "bundle"); a session's comes from its stat file.
 * @loss: a core's, from its note; a session's comes from its stat file.
 */
struct ls_what {
	const char *sdir, *file, *state;
	const struct sess *s;
	struct rk_loss loss;
};

/*
 * @denied: files the caller may not read (another user's or root's, by the
 * kernel's rules): counted, not listed, not an error.
 */
static int ls_session(const struct ls_what *w, int json, int *first, unsigned long *denied)
{
	char dir[PATH_MAX + 200], path[PATH_MAX + 500], src[LS_MAX_SRC][128];
	char sub[PATH_MAX + 200], shown[PATH_MAX + 700];
	char when[64] = "?", b1[32];
	size_t nsrc = 0, k, i, nthreads;
	int bad = 0, firstf = 1;
	const struct sess *s = w->s;
	const char *sdir = w->sdir;
	const char *state = w->state ? w->state : sess_state(s);
	struct rk_loss loss = w->loss;
	__u64 dur = 0;
	char **names;

	nsrc = session_sources(sdir, src);
	snprintf(dir, sizeof(dir), "%s/%s", sdir, RK_SCHED_DIR);
	nthreads = dir_names(dir, &names);
	for (i = 0; i < nthreads; i++)
		free(names[i]);
	free(names);
	if (!w->file && s->have_stat)
		rk_loss_from_stat(&loss, &s->st);
	if ((s->have_stat || w->file) && s->st.start_ns) {
		__u64 end = rk_session_alive(&s->st) ? rk_now_real_ns() : s->st.update_ns;

		/* "?" stays if the time does not format. */
		rk_fmt_utc(s->st.start_ns, json ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M:%S UTC",
			   when, sizeof(when));
		dur = end > s->st.start_ns ? end - s->st.start_ns : 0;
	}
	if (json) {
		printf("%s{\"session\":", *first ? "" : ",\n");
		rk_json_str(stdout, s->name);
		printf(",\"state\":\"%s\",\"start_time\":\"%s\",\"duration_ns\":%llu,\"threads\":%zu,"
		       "\"command\":",
		       state, when, (unsigned long long)dur, nthreads);
		rk_json_str(stdout, s->have_stat ? s->st.command : "");
		printf(",\"sources\":[");
		for (k = 0; k < nsrc; k++) {
			printf("%s", k ? "," : "");
			rk_json_str(stdout, src[k]);
		}
		printf("],\"files\":[");
		*first = 0;
	} else {
		printf("%s  %s  started %s, %.1f s, %zu threads, sources ", s->name, state, when,
		       dur / 1e9, nthreads);
		for (k = 0; k < nsrc; k++)
			printf("%s%s", k ? "," : "", src[k]);
		printf("\n  command: ");
		rk_put_line(stdout, s->have_stat ? s->st.command : "");
		fputc('\n', stdout);
		rk_loss_say(stdout, &loss, "  ");
		printf("  %8s %8s %-16s %-9s %-6s %-20s %10s %10s  %s\n", "TID", "TGID", "COMM",
		       "STATE", "PINNED", "SOURCE", "BYTES", "RING", "FILE");
	}
	for (k = 0; k < nsrc; k++) {
		snprintf(sub, sizeof(sub), "%s/%.127s", sdir, src[k]);
		nthreads = dir_names(sub, &names);
		for (i = 0; i < nthreads; i++) {
			const char *msg = NULL;
			struct rk_bufile *bf;
			__u64 head, tail, used;
			char comm[RK_COMM_LEN];
			const char *state;
			int pinned;

			snprintf(path, sizeof(path), "%s/%s", sub, names[i]);
			/* A core's buffers are in a directory that goes: named in the core. */
			if (w->file)
				snprintf(shown, sizeof(shown), "%s:%s/%s", w->file, src[k],
					 names[i]);
			else
				snprintf(shown, sizeof(shown), "%s", path);
			bf = rk_bufile__open(path, &msg);
			if (!bf && (errno == EACCES || errno == EPERM)) {
				(*denied)++;
				continue;
			}
			if (!bf) {
				rk_err("%s: %s", shown, msg ? msg : strerror(errno));
				bad++;
				continue;
			}
			pinned = (int)__atomic_load_n(&bf->ident->pinned, __ATOMIC_RELAXED) &&
				 s->have_stat && rk_session_alive(&s->st);
			/* Checked at open; a live pair that went bad since reads as empty. */
			used = rk_bufile__ring(bf, &head, &tail) ? 0 : head - tail;
			memcpy(comm, bf->ident->comm, sizeof(comm));
			comm[RK_COMM_LEN - 1] = '\0';
			/* A process's sideband has no thread state of its own. */
			state = strcmp(src[k], RK_SIDEBAND_DIR) ?
					rk_thread_state_name(bf->ident->state) :
					"-";
			if (json) {
				printf("%s{\"source\":", firstf ? "" : ",");
				rk_json_str(stdout, src[k]);
				printf(",\"tid\":%u,\"tgid\":%u,\"comm\":", bf->ident->tid,
				       bf->ident->tgid);
				rk_json_str(stdout, comm);
				printf(",\"state\":\"%s\",\"pinned\":%s,\"bytes\":%llu,"
				       "\"ring\":%llu,\"file\":",
				       state, pinned ? "true" : "false", (unsigned long long)used,
				       (unsigned long long)bf->data_size);
				rk_json_str(stdout, shown);
				printf("}");
				firstf = 0;
			} else {
				/* A name the thread chose: no control character reaches a terminal. */
				printf("  %8u %8u %-16s %-9s %-6s %-20s %10llu %10s  %s\n",
				       bf->ident->tid, bf->ident->tgid, rk_strip_controls(comm),
				       state, pinned ? "yes" : "no", src[k],
				       (unsigned long long)used,
				       rk_fmt_size(bf->data_size, b1, sizeof(b1)), shown);
			}
			rk_bufile__free(bf);
		}
		for (i = 0; i < nthreads; i++)
			free(names[i]);
		free(names);
	}
	if (json) {
		putchar(']');
		rk_loss_json(stdout, &loss);
		putchar('}');
	}
	return bad;
}

/*
 * When a core's buffers were taken, from its description: a bundle's
 * "snapshot realtime NS", a crash's "crash ... time SECONDS"; 0 if neither.
 */
static __u64 desc_realtime(const char *text)
{
	const char *line = text;
	unsigned long long v;

	while (line && *line) {
		const char *t = NULL;

		if (!strncmp(line, "snapshot realtime ", 18) && sscanf(line + 18, "%llu", &v) == 1)
			return v;
		if (!strncmp(line, "crash ", 6) && (t = strstr(line, " time ")) &&
		    t < line + strcspn(line, "\n") && sscanf(t + 6, "%llu", &v) == 1)
			return v * 1000000000ull;
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return 0;
}

/*
 * ls FILE: a core's or a bundle's buffers, listed as a session's (the
 * core's buffers extracted into a directory of that layout, then removed).
 * A bundle's header is its session's, at its instant T. Return: the files
 * that could not be read, or 1 (said).
 */
static int ls_core(const char *file, int json, int *first, unsigned long *denied)
{
	struct from f = { .core = file };
	struct ls_what w = { .file = file, .state = "core" };
	struct rk_core_bufs b;
	const char *why = NULL;
	struct sess s = { 0 };
	int bad;

	if (access(file, F_OK)) {
		rk_err("%s: %s (not a session's name either: ringkeeper ls lists them)", file,
		       strerror(errno));
		return 1;
	}
	/* The description first: a bundle's instant and session, for the header. */
	if (!rk_core_bufs__load(file, &b, &why)) {
		w.state = b.session && !strncmp(b.session, "bundle ", 7) ? "bundle" : "core";
		s.st.start_ns = desc_realtime(b.session);
		rk_core_bufs__free(&b);
	}
	if (from_open(&f)) {
		from_close(&f);
		return 1;
	}
	snprintf(s.name, sizeof(s.name), "%s", file);
	s.have_stat = 0;
	w.sdir = f.dir;
	w.s = &s;
	w.loss = f.loss;
	bad = ls_session(&w, json, first, denied);
	from_close(&f);
	return bad;
}

/* Is @arg a file (a core or bundle) rather than a session's name? */
static int is_file_arg(const char *arg)
{
	struct stat sb;

	return strchr(arg, '/') || (!stat(arg, &sb) && S_ISREG(sb.st_mode));
}

int cmd_ls(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper ls [--json] [--root DIR] [SESSION|FILE...]\n"
		"\n"
		"List sessions (newest first): state, start (UTC), how long it recorded,\n"
		"threads, sources (sched, each -e event, sideband) and command; then one line\n"
		"per buffer file of every source: tid, tgid, comm, state\n"
		"(live/exiting/exited/stopped/execed/crashed), whether it is locked in memory\n"
		"now, source, bytes of records held, ring size, file. Files you may not read\n"
		"(other users' threads) are counted in one line on stderr; a file that does\n"
		"not parse is reported on stderr and makes the exit status 1.\n"
		"A FILE (a path, or a file here that is not a session's name) is an ELF core\n"
		"with ringkeeper's buffers or a snapshot bundle: listed as a session is (state\n"
		"core or bundle; a bundle's start is its instant T), its rows naming each\n"
		"buffer FILE:SOURCE/TID.\n"
		"  --json  an array of sessions, each with its files\n";
	const char *root = RK_DEFAULT_ROOT;
	struct sess *v;
	size_t n, i;
	int json = 0, first = 1, r, bad = 0, k;
	unsigned long denied = 0;

	r = common_opts(argc, argv, usage, &json, &root, NULL, NULL);
	if (r <= 0)
		return -r;
	if (sessions(root, &v, &n))
		return 1;
	for (k = optind; k < argc; k++) {
		for (i = 0; i < n && strcmp(argv[k], v[i].name); i++)
			;
		if (i < n || is_file_arg(argv[k]))
			continue;
		rk_err("no session '%s' in %s (ringkeeper ls lists them)", argv[k], root);
		bad++;
	}
	if (json)
		printf("[");
	for (i = 0; i < n; i++) {
		struct ls_what w = { .s = &v[i] };
		char sdir[PATH_MAX];
		int want = optind >= argc;

		for (k = optind; k < argc; k++)
			want |= !strcmp(argv[k], v[i].name);
		if (!want)
			continue;
		snprintf(sdir, sizeof(sdir), "%s/%s", root, v[i].name);
		w.sdir = sdir;
		bad += ls_session(&w, json, &first, &denied);
	}
	/* Then the cores and bundles, in the order given. */
	for (k = optind; k < argc; k++) {
		for (i = 0; i < n && strcmp(argv[k], v[i].name); i++)
			;
		if (i == n && is_file_arg(argv[k]))
			bad += ls_core(argv[k], json, &first, &denied);
	}
	if (json)
		printf("]\n");
	if (denied)
		fprintf(stderr,
			"ringkeeper: %lu buffer file%s not listed: not yours to read (each follows "
			"its thread's user's rights, as ptrace does; root sees them all)\n",
			denied, denied == 1 ? "" : "s");
	else if (!n && optind >= argc)
		printf("no sessions in %s\n", root);
	free(v);
	return bad ? 1 : 0;
}
