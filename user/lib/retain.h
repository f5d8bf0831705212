/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * retain.h - keep a directory of files bounded, fairly per user: the
 * notes-only cores the crash handler keeps, the snapshots triggers take.
 * Owns: nothing beyond a call. May call: nothing of ours.
 */
#ifndef RK_RETAIN_H
#define RK_RETAIN_H

#include <stddef.h>

/**
 * rk_retain_fair() - keep at most @keep files and @max_bytes of them among
 * the regular files of the directory open at @dir whose names start with
 * @prefix and end with @suffix. Whose a file is: the number after the last
 * ".u" in its name (none: root's). The oldest file (mtime) of the user who
 * holds the most goes first, so one user's storm evicts its own files, not
 * root's or another user's; the newest file always stays.
 * @bytes_removed: if not NULL, receives the bytes of the files removed.
 * Return: the number of files removed.
 */
size_t rk_retain_fair(int dir, const char *prefix, const char *suffix, size_t keep,
		      unsigned long long max_bytes, unsigned long long *bytes_removed);

#endif /* RK_RETAIN_H */
