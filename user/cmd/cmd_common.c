// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_common.c - what the commands share: sessions, --time/--last, the session or core read. */
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
#include "util.h"

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
	int c;

	while ((c = getopt_long(argc, argv, "+jr:s:ae:h", lo, NULL)) != -1) {
		switch (c) {
		case 'T':
		case 'L':
			if (!session)
				goto bad;
			if (twin_opt(&show_twin, c, optarg) < 0)
				return -2;
			break;
		case 'e': {
			char *c = strrchr(optarg, ':');

			if (!session || strchr(optarg, '/'))
				goto bad;
			/* cpu-clock:u was recorded as cpu-clock (perf's modifiers). */
			if (c && c[1] && strspn(c + 1, "uk") == strlen(c + 1) && strlen(c + 1) <= 2)
				*c = '\0';
			show_event = optarg;
			break;
		}
		case 'C':
			if (!session)
				goto bad;
			show_core = optarg;
			break;
		case 'P':
			if (!session)
				goto bad;
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
			if (!session)
				goto bad;
			*session = optarg;
			break;
		case 'a':
			if (!all)
				goto bad;
			*all = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			goto bad;
		}
	}
	return 1;
bad:
	fputs(usage, stderr);
	return -2;
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
