// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gc.c - remove the buffers of dead threads: older than an age, or the
 * oldest ones until the sessions fit a total size. Live threads of a running
 * session are never touched; a session left with no buffer goes entirely.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bufile.h"
#include "gc.h"
#include "session.h"
#include "util.h"

struct cand {
	char *path;
	__u64 bytes;
	__u64 age_ns;
	int dead;
};

struct gc {
	struct cand *v;
	size_t n, cap;
	__u64 total;
};

static int add(struct gc *g, const char *path, __u64 bytes, __u64 age, int dead)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 256;
		struct cand *n = realloc(g->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		g->v = n;
		g->cap = cap;
	}
	g->v[g->n].path = strdup(path);
	if (!g->v[g->n].path)
		return -ENOMEM;
	g->v[g->n].bytes = bytes;
	g->v[g->n].age_ns = age;
	g->v[g->n].dead = dead;
	g->n++;
	g->total += bytes;
	return 0;
}

static __u64 age_of(const struct rk_thread_ident *id, const struct rk_session_stat *st, int have_st)
{
	__u64 now_mono = rk_now_mono_ns(), now_real = rk_now_real_ns();

	if (id->exit_ns && id->exit_ns <= now_mono)
		return now_mono - id->exit_ns;
	if (have_st && st->update_ns && st->update_ns <= now_real)
		return now_real - st->update_ns;
	return 0;
}

/* Every buffer file of a session: its sources' directories and its sideband. */
static int scan_session(struct gc *g, const char *sdir, const struct rk_session_stat *st,
			int have_st)
{
	int running = have_st && rk_session_alive(st);
	char path[PATH_MAX + 600];
	struct dirent *de, *fe;
	DIR *d = opendir(sdir), *fd;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char sub[PATH_MAX + 256];

		if (de->d_name[0] == '.' || de->d_type != DT_DIR)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", sdir, de->d_name);
		fd = opendir(sub);
		if (!fd)
			continue;
		while (!err && (fe = readdir(fd))) {
			struct rk_bufile *bf;
			struct stat sb;
			int dead;

			if (fe->d_name[0] < '0' || fe->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "%s/%s", sub, fe->d_name);
			if (stat(path, &sb))
				continue;
			bf = rk_bufile__open(path, NULL);
			if (bf) {
				dead = !running || bf->ident->state == RK_THREAD_EXITED;
				err = add(g, path, (__u64)sb.st_blocks * 512,
					  age_of(bf->ident, st, have_st), dead);
				rk_bufile__free(bf);
			} else {
				/* Not a buffer (corrupt): collectable once its session ended. */
				err = add(g, path, (__u64)sb.st_blocks * 512, 0, !running);
			}
		}
		closedir(fd);
	}
	closedir(d);
	return err;
}

static int by_age_desc(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->age_ns != y->age_ns)
		return x->age_ns > y->age_ns ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* Remove an ended session's directory once no buffer is left in it. Return: 1 removed. */
static int prune_session(const char *sdir, int dry, int quiet)
{
	char path[PATH_MAX + 300];
	struct dirent *de;
	int files = 0;
	DIR *d = opendir(sdir);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		DIR *s;
		struct dirent *e;

		if (de->d_name[0] == '.' || de->d_type != DT_DIR)
			continue;
		snprintf(path, sizeof(path), "%s/%s", sdir, de->d_name);
		s = opendir(path);
		if (!s)
			continue;
		while ((e = readdir(s)))
			files += e->d_name[0] != '.';
		closedir(s);
	}
	if (files || dry) {
		closedir(d);
		return 0;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", sdir, de->d_name);
		if (de->d_type == DT_DIR)
			rmdir(path);
		else
			unlink(path);
	}
	closedir(d);
	if (rmdir(sdir))
		return 0;
	if (!quiet)
		printf("removed session %s\n", sdir);
	return 1;
}

/* How many files of each session gc removed, for its summary. */
struct sess_count {
	struct {
		char name[256];
		unsigned long long files, bytes;
	} * v;
	size_t n, cap;
};

/* @path (ROOT/SESSION/SOURCE/TID): one more file of its session. */
static void per_session(struct sess_count *ps, const char *path, __u64 bytes)
{
	const char *e = path + strlen(path), *s;
	int slashes = 0;
	char name[256];
	size_t i;

	/* The session is the third component from the end. */
	for (s = e; s > path; s--)
		if (s[-1] == '/' && ++slashes == 3)
			break;
	snprintf(name, sizeof(name), "%.*s", (int)(strchrnul(s, '/') - s), s);
	for (i = 0; i < ps->n && strcmp(ps->v[i].name, name); i++)
		;
	if (i == ps->n) {
		if (ps->n == ps->cap) {
			size_t c = ps->cap ? ps->cap * 2 : 16;
			void *nv = realloc(ps->v, c * sizeof(*ps->v));

			if (!nv)
				return; /* the total still says it */
			ps->v = nv;
			ps->cap = c;
		}
		snprintf(ps->v[i].name, sizeof(ps->v[i].name), "%s", name);
		ps->v[i].files = ps->v[i].bytes = 0;
		ps->n++;
	}
	ps->v[i].files++;
	ps->v[i].bytes += bytes;
}

int rk_gc(const struct rk_gc_opts *o)
{
	struct gc g = { 0 };
	struct sess_count ps = { 0 };
	struct dirent *de;
	unsigned long long removed = 0, freed = 0, pruned = 0;
	size_t i;
	int err = 0;
	DIR *d = opendir(o->root);

	if (!d) {
		if (errno == ENOENT)
			return 0;
		err = -errno;
		rk_err("cannot read %s: %s", o->root, strerror(errno));
		return err;
	}
	while (!err && (de = readdir(d))) {
		char sdir[PATH_MAX];
		struct rk_session_stat st;
		int have_st;

		if (de->d_name[0] == '.' || de->d_type != DT_DIR ||
		    (o->session && strcmp(o->session, de->d_name)))
			continue;
		snprintf(sdir, sizeof(sdir), "%s/%s", o->root, de->d_name);
		have_st = !rk_session_stat_read(sdir, &st);
		err = scan_session(&g, sdir, &st, have_st);
	}
	if (err) {
		rk_err("gc: cannot scan %s: %s", o->root, strerror(-err));
		goto out;
	}
	if (g.n)
		qsort(g.v, g.n, sizeof(*g.v), by_age_desc);
	for (i = 0; i < g.n; i++) {
		struct cand *c = &g.v[i];
		int go = 0;

		if (!c->dead)
			continue;
		if (o->older_than_ns && c->age_ns > o->older_than_ns)
			go = 1;
		if (o->max_bytes && g.total > o->max_bytes)
			go = 1;
		if (!go)
			continue;
		if (!o->dry_run && unlink(c->path)) {
			rk_warn("gc: cannot remove %s: %s", c->path, strerror(errno));
			continue;
		}
		if (o->quiet)
			;
		else if (o->verbose)
			printf("%s %s (%llu KiB, dead for %llu s)\n",
			       o->dry_run ? "would remove" : "removed", c->path,
			       (unsigned long long)(c->bytes >> 10),
			       (unsigned long long)(c->age_ns / 1000000000ull));
		else
			per_session(&ps, c->path, c->bytes);
		g.total -= c->bytes;
		removed++;
		freed += c->bytes;
	}
	for (i = 0; i < ps.n && !o->quiet; i++)
		printf("gc: %s %llu files (%llu KiB) of session %s\n",
		       o->dry_run ? "would remove" : "removed", ps.v[i].files, ps.v[i].bytes >> 10,
		       ps.v[i].name);
	free(ps.v);
	rewinddir(d);
	while ((de = readdir(d))) {
		char sdir[PATH_MAX];
		struct rk_session_stat st;

		if (de->d_name[0] == '.' || de->d_type != DT_DIR ||
		    (o->session && strcmp(o->session, de->d_name)))
			continue;
		snprintf(sdir, sizeof(sdir), "%s/%s", o->root, de->d_name);
		if (!rk_session_stat_read(sdir, &st) && rk_session_alive(&st))
			continue;
		pruned += prune_session(sdir, o->dry_run, o->quiet);
	}
	if (o->res) {
		o->res->files = removed;
		o->res->freed = freed;
		o->res->left = g.total;
		o->res->sessions = pruned;
	}
	if (o->quiet)
		goto out;
	printf("gc: %s %llu buffer files, %llu KiB; %llu KiB left in %s\n",
	       o->dry_run ? "would remove" : "removed", removed, freed >> 10,
	       (unsigned long long)(g.total >> 10), o->root);
	if (o->max_bytes && g.total > o->max_bytes)
		rk_warn("gc: still over --max-size: what is left belongs to live threads");
out:
	closedir(d);
	for (i = 0; i < g.n; i++)
		free(g.v[i].path);
	free(g.v);
	return err;
}

/* What rm_one() removed so far, and the error it stopped at (nftw takes no context). */
static unsigned long rm_removed;
static int rm_errno;

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) && errno != ENOENT) {
		rm_errno = errno;
		if (rm_removed)
			rk_warn("rm: cannot remove %s: %s", path, strerror(errno));
		return -1;
	}
	rm_removed++;
	return 0;
}

int rk_rm_session(const char *root, const char *name, int dry_run, int quiet)
{
	char sdir[PATH_MAX], sched[PATH_MAX + 16];
	struct rk_session_stat st;
	struct stat sb;

	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
		rk_err("rm: '%s' is not a session name", name);
		return -EINVAL;
	}
	snprintf(sdir, sizeof(sdir), "%s/%s", root, name);
	snprintf(sched, sizeof(sched), "%s/%s", sdir, RK_SCHED_DIR);
	if (lstat(sdir, &sb) || !S_ISDIR(sb.st_mode) || access(sched, F_OK)) {
		rk_err("rm: no session '%s' in %s (ringkeeper ls lists them)", name, root);
		return -ENOENT;
	}
	if (!rk_session_stat_read(sdir, &st) && rk_session_alive(&st)) {
		rk_err("rm: session %s is recording (loader pid %u): stop it first (SIGINT)", name,
		       st.loader_pid);
		return -EBUSY;
	}
	if (dry_run) {
		printf("would remove session %s\n", sdir);
		return 0;
	}
	/* Depth first, never through a symlink, never off this file system. */
	rm_removed = 0;
	rm_errno = 0;
	if (nftw(sdir, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT)) {
		if (!rm_removed)
			rk_err("rm: nothing of session %s removed: %s%s", name,
			       strerror(rm_errno ? rm_errno : EIO),
			       rm_errno == EACCES || rm_errno == EPERM ?
				       " (its files are root's: run "
				       "rm as root)" :
				       "");
		else
			rk_err("rm: %s is only partly removed (%lu entries removed)", sdir,
			       rm_removed);
		return -EIO;
	}
	if (!quiet)
		printf("removed session %s\n", sdir);
	return 0;
}
