// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * memcg.c - the recorder's memory cgroup limit (see memcg.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "memcg.h"
#include "util.h"

/* A limit this high (v1's "no limit" is LONG_MAX rounded to pages) is none. */
#define NO_LIMIT (1ull << 60)

/* @dir/@name as a number; v2's "max" (no limit) does not parse, and is skipped. */
static int read_u64(const char *dir, const char *name, uint64_t *v)
{
	char path[PATH_MAX + 700]; /* the caller's directory buffer, and a file name */

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return rk_read_u64_file(path, v);
}

/* Where the cgroup2 hierarchy is mounted, from /proc/self/mountinfo. */
static int cgroup2_mount(char *out, size_t len)
{
	char line[1024];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char mnt[512], *sep = strstr(line, " - ");

		if (!sep || strncmp(sep, " - cgroup2 ", 11))
			continue;
		/* id parent maj:min root mountpoint ... */
		if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1) {
			snprintf(out, len, "%s", mnt);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

int rk_memcg_headroom(uint64_t *headroom, uint64_t *limit, char *path, unsigned long path_len)
{
	char line[1024], rel[PATH_MAX] = "", base[512] = "", dir[PATH_MAX + 600];
	const char *lim_name = NULL, *use_name = NULL;
	uint64_t best = UINT64_MAX, best_lim = 0;
	FILE *f = fopen("/proc/self/cgroup", "re");
	int v2 = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		c2[strcspn(c2, "\n")] = '\0';
		/* v1: "N:memory:/path"; v2: "0::/path" (used only if v1 has no memory). */
		if (!strncmp(c1 + 1, "memory:", 7) || !strncmp(c1 + 1, "memory,", 7) ||
		    strstr(c1 + 1, ",memory:")) {
			snprintf(rel, sizeof(rel), "%s", c2 + 1);
			snprintf(base, sizeof(base), "/sys/fs/cgroup/memory");
			v2 = 0;
			break;
		}
		if (c1 == line + 1 && line[0] == '0' && c2 == c1 + 1) {
			snprintf(rel, sizeof(rel), "%s", c2 + 1);
			v2 = 1;
		}
	}
	fclose(f);
	if (!*rel)
		return 0;
	if (v2) {
		if (!cgroup2_mount(base, sizeof(base)))
			return 0;
		lim_name = "memory.max";
		use_name = "memory.current";
	} else {
		lim_name = "memory.limit_in_bytes";
		use_name = "memory.usage_in_bytes";
	}
	/* From our cgroup up to the root: the tightest ancestor decides. */
	for (;;) {
		uint64_t lim, use;
		char *slash;

		snprintf(dir, sizeof(dir), "%s%s", base, rel);
		if (!read_u64(dir, lim_name, &lim) && lim < NO_LIMIT &&
		    !read_u64(dir, use_name, &use)) {
			uint64_t room = use < lim ? lim - use : 0;

			if (room < best) {
				best = room;
				best_lim = lim;
				if (path)
					snprintf(path, path_len, "%s", dir);
			}
		}
		slash = strrchr(rel, '/');
		if (!slash || (slash == rel && !rel[1]))
			break;
		if (slash == rel)
			rel[1] = '\0';
		else
			*slash = '\0';
	}
	if (best == UINT64_MAX)
		return 0;
	*headroom = best;
	if (limit)
		*limit = best_lim;
	return 1;
}
