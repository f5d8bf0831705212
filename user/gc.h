/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* gc.h - `ringkeeper gc`: remove the buffers of dead threads. */
#ifndef RK_GC_H
#define RK_GC_H

#include <linux/types.h>

/**
 * struct rk_gc_opts - what to remove.
 * @root: the sessions' directory.
 * @older_than_ns: buffers of threads dead for longer than this (0: no age rule).
 * @max_bytes: then the oldest dead ones until all sessions fit (0: no size rule).
 * @dry_run: only say what would go.
 */
struct rk_gc_opts {
	const char *root;
	__u64 older_than_ns;
	__u64 max_bytes;
	int dry_run;
};

/** rk_gc() - Return: 0 or -errno (reported). */
int rk_gc(const struct rk_gc_opts *o);

#endif /* RK_GC_H */
