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
 * @session: only this session (NULL: all of them).
 * @verbose: say each file removed (else how many per session).
 */
struct rk_gc_opts {
	const char *root;
	const char *session;
	__u64 older_than_ns;
	__u64 max_bytes;
	int dry_run;
	int verbose; /* a line per file; else one per session and the total */
	int quiet; /* nothing on stdout (the recorder's start, rec_cap_earlier()) */
	struct rk_gc_result *res; /* NULL, or what was done */
};

/**
 * struct rk_gc_result - what rk_gc() did.
 * @files, @freed: buffer files removed, their bytes.
 * @left: the bytes of buffer files left under the root.
 * @sessions: sessions removed (left without a buffer).
 */
struct rk_gc_result {
	__u64 files, freed, left, sessions;
};

/** rk_gc() - Return: 0 or -errno (reported). */
int rk_gc(const struct rk_gc_opts *o);

/**
 * rk_rm_session() - remove the session @name under @root entirely, unless
 * its recorder is still running. @quiet: say nothing when it went.
 * Return: 0, or -errno (reported): -ENOENT no such session, -EBUSY
 * recording, -EINVAL not a session name.
 */
int rk_rm_session(const char *root, const char *name, int dry_run, int quiet);

#endif /* RK_GC_H */
