// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* retain.c - a directory of files kept bounded, fairly per user (see retain.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "retain.h"

struct aged {
	char name[256];
	struct timespec mtime;
	off_t size;
	unsigned int uid;
	int gone;
};

/*
 * Names compared as a person would: runs of digits by their value, so that
 * "s.9.1" < "s.10.1" and "s.5.9" < "s.5.10" (seconds and sequence numbers
 * are not zero-padded).
 */
static int natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			size_t na, nb;
			int c;

			while (*a == '0' && a[1] >= '0' && a[1] <= '9')
				a++;
			while (*b == '0' && b[1] >= '0' && b[1] <= '9')
				b++;
			na = strspn(a, "0123456789");
			nb = strspn(b, "0123456789");
			if (na != nb)
				return na < nb ? -1 : 1;
			c = memcmp(a, b, na);
			if (c)
				return c;
			a += na;
			b += nb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a ? 1 : *b ? -1 : 0;
}

/*
 * Newest first: by mtime to the nanosecond, then (files written within one
 * tick of the file system's clock share it) by name, the greater the newer:
 * the names hold their time and, for snapshots, a sequence. Whole seconds
 * then ascending names once removed the newest of the oldest second.
 */
static int by_mtime_desc(const void *a, const void *b)
{
	const struct aged *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	return -natural_cmp(x->name, y->name);
}

/* The user a name says ("...uUID..." after its last ".u"), 0 if none. */
static unsigned int uid_of(const char *name)
{
	const char *u = NULL, *p;

	for (p = strstr(name, ".u"); p; p = strstr(p + 1, ".u"))
		if (p[2] >= '0' && p[2] <= '9')
			u = p;
	return u ? (unsigned int)strtoul(u + 2, NULL, 10) : 0;
}

static int matches(const char *name, const char *prefix, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	return !strncmp(name, prefix, strlen(prefix)) && n > s && !strcmp(name + n - s, suffix);
}

/* The files in @dir, newest first (*@n of them; NULL with *@n 0 if none or no memory). */
static struct aged *list(int dir, const char *prefix, const char *suffix, size_t *n)
{
	struct aged *v = NULL;
	struct dirent *de;
	DIR *d = fdopendir(dup(dir));

	*n = 0;
	/* A dup shares the position of @dir's last walk: from the start. */
	if (d)
		rewinddir(d);
	while (d && (de = readdir(d))) {
		struct stat st;
		struct aged *nv;

		if (!matches(de->d_name, prefix, suffix) ||
		    fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		nv = realloc(v, (*n + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		memset(&v[*n], 0, sizeof(v[*n]));
		memcpy(v[*n].name, de->d_name, strnlen(de->d_name, sizeof(v[*n].name) - 1));
		v[*n].mtime = st.st_mtim;
		v[*n].size = st.st_size;
		v[*n].uid = uid_of(de->d_name);
		(*n)++;
	}
	if (d)
		closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), by_mtime_desc);
	return v;
}

/* Of the files left, the oldest of the user who holds the most, never the newest: -1 if none. */
static long victim(const struct aged *v, size_t n)
{
	size_t i, j, best_count = 0;
	long best = -1;

	for (i = n; i-- > 1;) {
		size_t count = 0;

		if (v[i].gone)
			continue;
		for (j = 0; j < n; j++)
			count += !v[j].gone && v[j].uid == v[i].uid;
		if (count > best_count) {
			best_count = count;
			best = (long)i;
		}
	}
	return best;
}

size_t rk_retain_fair(int dir, const char *prefix, const char *suffix, size_t keep,
		      unsigned long long max_bytes, unsigned long long *bytes_removed)
{
	unsigned long long bytes = 0, removed = 0;
	size_t n, i, left, gone = 0;
	struct aged *v = list(dir, prefix, suffix, &n);

	for (i = 0; i < n; i++)
		bytes += (unsigned long long)v[i].size;
	for (left = n; left > keep || (left > 1 && bytes > max_bytes); left--) {
		long k = victim(v, n);

		if (k < 0)
			break;
		if (!unlinkat(dir, v[k].name, 0)) {
			gone++;
			removed += (unsigned long long)v[k].size;
		}
		v[k].gone = 1;
		bytes -= (unsigned long long)v[k].size;
	}
	free(v);
	if (bytes_removed)
		*bytes_removed = removed;
	return gone;
}
