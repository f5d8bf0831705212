// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_common.c - what the commands share: sessions, --time/--last, the session or core read. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmd.h"
#include "bufile.h"
#include "elfcore.h"
#include "util.h"

void cmd_line_init(struct cmd_line *l, int argc, char **argv, const char *sopts,
		   const struct option *lo, const char *usage)
{
	memset(l, 0, sizeof(*l));
	l->argc = argc;
	l->argv = argv;
	l->lo = lo;
	l->usage = usage;
	/* "+" (record: operands are a command and its arguments) keeps the order. */
	if (sopts[0] == '+')
		snprintf(l->opts, sizeof(l->opts), "+:%s", sopts + 1);
	else
		snprintf(l->opts, sizeof(l->opts), "-:%s", sopts);
}

/* The synopsis of @usage: its lines up to the first empty one. */
static void put_synopsis(const char *usage)
{
	const char *end = strstr(usage, "\n\n");

	fprintf(stderr, "%.*s\n", end ? (int)(end - usage) : (int)strlen(usage), usage);
}

/* "Usage: ringkeeper NAME ...": NAME, for messages. */
static const char *usage_name(const char *usage, char *out, size_t len)
{
	const char *p = strstr(usage, "ringkeeper ");

	snprintf(out, len, "%s", p ? p + 11 : "ringkeeper");
	out[strcspn(out, " \n")] = '\0';
	return out;
}

int cmd_bad(const char *usage, const char *fmt, ...)
{
	char name[32];
	va_list ap;

	fprintf(stderr, "ringkeeper: %s: ", usage_name(usage, name, sizeof(name)));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	put_synopsis(usage);
	fprintf(stderr, "(ringkeeper %s --help says more)\n", name);
	return 2;
}

int cmd_too_many(const char *usage, int max, int argc, char **argv)
{
	char extra[512] = "";
	size_t o = 0;
	int i;

	if (argc - optind <= max)
		return 0;
	for (i = optind + max; i < argc && o < sizeof(extra) - 1; i++) {
		int w = snprintf(extra + o, sizeof(extra) - o, "%s%s", i > optind + max ? " " : "",
				 argv[i]);

		if (w < 0)
			break;
		o += (size_t)w;
	}
	rk_strip_controls(extra);
	return cmd_bad(usage, "too many operands: '%s'", extra);
}

/* An option as the user wrote it (a long one without its "=VALUE"). */
static void bad_option(const struct cmd_line *l, int missing)
{
	const char *arg = optind > 0 && optind <= l->argc ? l->argv[optind - 1] : "";
	char opt[128];

	/* A long option's text is its argv word; a short one's, optopt (it may sit in a group). */
	if (!strncmp(arg, "--", 2) && (missing || !optopt))
		snprintf(opt, sizeof(opt), "%.*s", (int)strcspn(arg, "="), arg);
	else
		snprintf(opt, sizeof(opt), "-%c", optopt);
	rk_strip_controls(opt);
	if (missing)
		cmd_bad(l->usage, "option '%s' needs a value", opt);
	else
		cmd_bad(l->usage, "unknown option '%s'", opt);
}

int cmd_getopt(struct cmd_line *l)
{
	int c;

	if (!l->started) {
		/* 0: glibc starts afresh, so the "-" mode holds whatever ran before. */
		optind = 0;
		opterr = 0;
		l->started = 1;
	}
	while ((c = getopt_long(l->argc, l->argv, l->opts, l->lo, NULL)) == 1)
		/* An operand: kept in a slot getopt has passed (each gave at most one). */
		l->argv[1 + l->nops++] = optarg;
	if (c == '?' || c == ':') {
		bad_option(l, c == ':');
		return '?';
	}
	if (c != -1)
		return c;
	/* After "--": operands too. Then all of them at the end, where optind points. */
	while (optind < l->argc)
		l->argv[1 + l->nops++] = l->argv[optind++];
	memmove(l->argv + l->argc - l->nops, l->argv + 1, (size_t)l->nops * sizeof(*l->argv));
	optind = l->argc - l->nops;
	return -1;
}

static int sess_cmp(const void *a, const void *b)
{
	const struct sess *x = a, *y = b;

	if (x->st.start_ns != y->st.start_ns)
		return x->st.start_ns < y->st.start_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int list_sessions(const char *root, struct sess **out, size_t *n)
{
	struct sess *v = NULL, *nv;
	struct dirent *de;
	size_t cnt = 0;
	char path[PATH_MAX];
	DIR *d = opendir(root);

	*out = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(v->name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", root, de->d_name, RK_SCHED_DIR);
		if (access(path, F_OK))
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		memset(&v[cnt], 0, sizeof(v[cnt]));
		snprintf(v[cnt].name, sizeof(v[cnt].name), "%s", de->d_name);
		snprintf(path, sizeof(path), "%s/%s", root, de->d_name);
		v[cnt].have_stat = !rk_session_stat_read(path, &v[cnt].st);
		cnt++;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), sess_cmp);
	*out = v;
	*n = cnt;
	return 0;
}

/* list_sessions(), saying what went wrong. Return: 0 or 1 (the exit status). */
int sessions(const char *root, struct sess **v, size_t *n)
{
	int err = list_sessions(root, v, n);

	if (err)
		rk_err("cannot read %s: %s", root, strerror(-err));
	return err ? 1 : 0;
}

static int tid_cmp(const void *a, const void *b)
{
	unsigned long x = strtoul(*(char *const *)a, NULL, 10);
	unsigned long y = strtoul(*(char *const *)b, NULL, 10);

	if (x != y)
		return x < y ? -1 : 1;
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted numeric entries of @dir (tids or pids), malloc'd. */
size_t dir_names(const char *dir, char ***out)
{
	char **names = NULL, **nn;
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn)
			break;
		names = nn;
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	if (d)
		closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), tid_cmp);
	*out = names;
	return n;
}

/* Return: 1 taken, 0 not ours, -1 a bad value (said). */
int twin_opt(struct twin *w, int c, const char *arg)
{
	if ((c == 'T' || c == 'L') && w->set) {
		rk_err("--time and --last: one of them, once");
		return -1;
	}
	if (c == 'T') {
		if (rk_parse_time_window(arg, &w->lo, &w->hi)) {
			rk_err("--time: '%s' is not START,END in seconds, END not before START "
			       "(either may be left out)",
			       arg);
			return -1;
		}
		w->set = 1;
		return 1;
	}
	if (c == 'L') {
		if (rk_parse_duration_ns(arg, &w->last)) {
			rk_err("--last: '%s' is not a duration (500ms, 2s, 10m, 1h)", arg);
			return -1;
		}
		w->set = 1;
		return 1;
	}
	return 0;
}

/* The window in ns, once the newest event (@end) is known; everything if none was asked. */
void twin_resolve(struct twin *w, uint64_t end)
{
	if (w->last) {
		w->hi = end;
		w->lo = end > w->last ? end - w->last : 0;
	} else if (!w->set) {
		w->lo = 0;
		w->hi = ~0ull;
	}
}

/* show -e: which source's buffers a TID is looked up in; --pt: dump the AUX area. */
const char *show_event = RK_SCHED_DIR;
int show_pt;
const char *show_core;

/* show's --time / --last. */
struct twin show_twin;

int common_opts(int argc, char **argv, const char *usage, int *json, const char **root,
		const char **session, int *all)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "root", required_argument, NULL, 'r' },
		{ "session", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "event", required_argument, NULL, 'e' },
		{ "pt", optional_argument, NULL, 'P' },
		{ "core", required_argument, NULL, 'C' },
		{ "bundle", required_argument, NULL, 'C' },
		TWIN_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct option mine[sizeof(lo) / sizeof(lo[0])];
	struct cmd_line l;
	size_t i, n = 0;
	int c;

	/* show's own options, and stat's --all, are unknown to the others. */
	for (i = 0; i < sizeof(lo) / sizeof(lo[0]); i++) {
		int shows = lo[i].val && strchr("TLeCPs", lo[i].val);

		if (!lo[i].name || ((session || !shows) && (all || lo[i].val != 'a')))
			mine[n++] = lo[i];
	}
	cmd_line_init(&l, argc, argv, session ? "jr:s:e:h" : all ? "jr:ah" : "jr:h", mine, usage);
	while ((c = cmd_getopt(&l)) != -1) {
		switch (c) {
		case 'T':
		case 'L':
			if (twin_opt(&show_twin, c, optarg) < 0)
				return -2;
			break;
		case 'e': {
			char *c = strrchr(optarg, ':');

			if (strchr(optarg, '/'))
				return -cmd_bad(usage, "-e %s: an event name, not a path", optarg);
			/* cpu-clock:u was recorded as cpu-clock (perf's modifiers). */
			if (c && c[1] && strspn(c + 1, "uk") == strlen(c + 1) && strlen(c + 1) <= 2)
				*c = '\0';
			show_event = optarg;
			break;
		}
		case 'C':
			show_core = optarg;
			break;
		case 'P':
			if (!optarg || !strcmp(optarg, "packets")) {
				show_pt = 1;
			} else if (!strcmp(optarg, "insn")) {
				show_pt = 2;
			} else if (!strcmp(optarg, "branches")) {
				show_pt = 3;
			} else {
				rk_err("--pt=%s: packets, insn or branches", optarg);
				return -2;
			}
			break;
		case 'j':
			*json = 1;
			break;
		case 'r':
			*root = optarg;
			break;
		case 's':
			*session = optarg;
			break;
		case 'a':
			*all = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return -2;
		}
	}
	return 1;
}

/* Remove a directory made by rk_core_bufs__extract(): its subdirectories' files, them, it. */
static void remove_extracted(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		char sub[PATH_MAX + 300];
		struct dirent *fe;
		DIR *s;

		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		s = opendir(sub);
		if (!s) {
			/* A bundle's tracing_data. */
			unlink(sub);
			continue;
		}
		while (s && (fe = readdir(s))) {
			char f[PATH_MAX + 600];

			if (fe->d_name[0] == '.')
				continue;
			snprintf(f, sizeof(f), "%s/%s", sub, fe->d_name);
			unlink(f);
		}
		if (s)
			closedir(s);
		rmdir(sub);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* One of from's options: 1 taken, 0 not one of them, -2 a bad value (reported). */
int from_opt(struct from *f, int c, const char *arg)
{
	unsigned long long v;

	switch (c) {
	case 't':
	case 'p':
		if (rk_parse_uint(arg, INT_MAX, &v) || !v) {
			rk_err("--%s: not a %s: '%s'", c == 't' ? "tid" : "pid",
			       c == 't' ? "tid" : "pid", arg);
			return -2;
		}
		*(c == 't' ? &f->tid : &f->pid) = v;
		return 1;
	case 's':
		f->session = arg;
		return 1;
	case 'r':
		f->root = arg;
		return 1;
	case 'C':
		f->core = arg;
		return 1;
	}
	return 0;
}

/* What the session at f->dir did not record, from its stat file (not known without one). */
static void from_loss(struct from *f)
{
	struct rk_session_stat st;

	memset(&f->loss, 0, sizeof(f->loss));
	if (!rk_session_stat_read(f->dir, &st))
		rk_loss_from_stat(&f->loss, &st);
}

/* f->dir from f's options. Return: 0, or 1 (reported). */
int from_open(struct from *f)
{
	struct rk_core_bufs b;
	const char *why = NULL;
	struct sess *sv;
	size_t n, i;
	int k, err;

	if (!f->core) {
		if (sessions(f->root, &sv, &n))
			return 1;
		for (i = 0; i < n && f->session && strcmp(sv[i].name, f->session); i++)
			;
		if (i == n) {
			if (f->session)
				rk_err("no session %s in %s (ringkeeper ls lists them)", f->session,
				       f->root);
			else
				rk_err("no sessions in %s", f->root);
			free(sv);
			return 1;
		}
		snprintf(f->dir, sizeof(f->dir), "%s/%s", f->root, sv[i].name);
		free(sv);
		from_loss(f);
		return 0;
	}
	err = rk_core_bufs__load(f->core, &b, &why);
	if (err) {
		rk_err("--core %s: %s", f->core, why ? why : strerror(-err));
		return 1;
	}
	rk_loss_parse_note(&f->loss, b.session);
	snprintf(f->cdir, sizeof(f->cdir), "/tmp/ringkeeper-core-XXXXXX");
	if (!mkdtemp(f->cdir)) {
		rk_err("cannot make a directory for the core's buffers: %s", strerror(errno));
		f->cdir[0] = '\0';
		rk_core_bufs__free(&b);
		return 1;
	}
	k = rk_core_bufs__extract(&b, f->cdir);
	rk_core_bufs__free(&b);
	if (k <= 0) {
		rk_err("--core %s: %s", f->core,
		       k ? strerror(-k) : "no ringkeeper buffer in it (ringkeeper show --core)");
		return 1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s", f->cdir);
	return 0;
}

/* What from_open() extracted, removed. */
void from_close(struct from *f)
{
	if (f->cdir[0])
		remove_extracted(f->cdir);
	f->cdir[0] = '\0';
}
