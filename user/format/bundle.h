/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bundle.h - a snapshot of a session at one instant T, in one file another
 * machine can read: a notes-only ELF core (elfcore.h) with the session
 * description, every buffer cut at T, the sideband, the tracing data and
 * the symbol tables of the mapped files (docs/format.md, "A snapshot
 * bundle"). Every reader that takes --core takes a bundle.
 *
 * The cut is consistent: each buffer keeps exactly its whole records timed
 * at or before T (read with the readers' acquire protocol, so a record the
 * recorder overwrote while it was copied is dropped, never half kept), laid
 * from offset 0 of a ring the size of what was kept.
 *
 * Nothing here depends on the recorder: `ringkeeper snapshot` calls it, and
 * so can the recorder itself (a trigger) once its own writes up to T are in
 * the files (then without opts->settle_ms).
 * Owns: nothing beyond a call. May call: bufile, elfcore, symtab, session,
 * tracedata, lib.
 */
#ifndef RK_BUNDLE_H
#define RK_BUNDLE_H

#include <linux/types.h>
#include <stddef.h>
#include <sys/types.h>
#include "bufile.h"

/* The bundle's version, first line of its session note ("bundle 1"). */
#define RK_BUNDLE_VERSION 1

/**
 * struct rk_bundle_opts - what to bundle and how.
 * @pid: 0 every process; else only that process's buffers and sideband.
 * @force: replace an existing @out_path (else -EEXIST).
 * @settle_ms: > 0: if the session's recorder runs, wait (at most this long)
 *	until it has written every record timed up to T (its stat file
 *	updated twice after T: the second update follows an intake that began
 *	after T). 0: take the files as they are (a recorder calling this
 *	itself, after its own intake).
 * @no_symbols: no RK_NOTE_SYMTAB notes.
 * @for_uid: (uid_t)-1: the bundle is root's; else only the buffers and
 *	sidebands that user may read (their ACL, as docs/trust.md grants it)
 *	go in, and the file is given to that user (still mode 0600).
 * @for_gid: that user's group (with @for_uid).
 * @from_ns: 0, or the window's start: thread buffers keep only records
 *	timed at or after it (sidebands keep all: their mappings serve it).
 * @max_bytes: 0, or the bundle's size at most: a note that would take it
 *	past (its description and checksums counted first) is left out, a
 *	symbol table trimmed to the room left, and the description says what
 *	(docs/format.md). Each mapped file's symbols are bounded anyway
 *	(symtab.h, RK_SYMTAB_LIM_*), as are the files (RK_BUNDLE_MAX_MAPS).
 */
struct rk_bundle_opts {
	__u32 pid;
	int force;
	int settle_ms;
	int no_symbols;
	uid_t for_uid;
	gid_t for_gid;
	__u64 from_ns;
	__u64 max_bytes;
};

/* Mapped files whose symbols a bundle takes (the rest are counted, left out). */
#define RK_BUNDLE_MAX_MAPS 4096

/** rk_bundle_opts_init() - the defaults: everything, root's, no waiting. */
void rk_bundle_opts_init(struct rk_bundle_opts *o);

/**
 * struct rk_bundle_cut - what one buffer's cut kept and dropped.
 * @kept: records kept (timed <= T, or untimed before the first after T).
 * @after: records after T, dropped.
 * @overwritten: records the recorder overwrote while they were read (its
 *	own counter's growth meanwhile, plus @lapped): dropped whole, never
 *	torn.
 * @lapped: records copied before the writer lapped the walk, dropped so
 *	the cut has no hole (it is the newest unbroken history up to T).
 * @before: records before the window's start, left out.
 * @bytes: of records kept.
 * @corrupt: the walk stopped at a record that does not parse (kept: those
 *	before it).
 */
struct rk_bundle_cut {
	__u64 kept, after, overwritten, lapped, before, bytes;
	int corrupt;
};

/**
 * rk_bundle_cut() - the image of @bf cut at @t: page 0 as the file has it
 * (its data_head/data_tail and geometry rewritten), then the records kept
 * laid from offset 0 of a data ring of the smallest power of two >= one
 * page holding them; an AUX area copied as it is (not cut at T).
 * @image: receives the image (page-aligned, free()), @size its length.
 * Return: 0 (the image passes rk_bufile__from_mem()); -ENOMEM, -EBADMSG.
 */
int rk_bundle_cut(const struct rk_bufile *bf, __u64 t, void **image, size_t *size,
		  struct rk_bundle_cut *cut);

/**
 * rk_bundle_cut_window() - rk_bundle_cut() keeping only the records timed
 * from @from on (untimed ones by position, as before T).
 */
int rk_bundle_cut_window(const struct rk_bufile *bf, __u64 from, __u64 t, void **image,
			 size_t *size, struct rk_bundle_cut *cut);

/**
 * struct rk_bundle_stats - what rk_bundle_write() put in.
 * @buffers, @sidebands, @symtabs: notes; @skipped: files not read (not a
 *	valid buffer, or not @for_uid's). @symtabs_left: mapped files left
 *	without a table: gone, not readable by the bundle's user, or another
 *	file at their path now (or a build id that differs).
 * @kept, @after, @overwritten: summed over the cuts.
 * @bytes: the bundle's size. @settled: 1 if the recorder had written
 *	everything up to T (or did not run), 0 if @settle_ms ran out.
 * @left_out: notes (and mapped files) left out for @max_bytes or
 *	RK_BUNDLE_MAX_MAPS; @trimmed: symbol tables the limits trimmed. Both
 *	are said in the bundle's description.
 */
struct rk_bundle_stats {
	size_t buffers, sidebands, symtabs, skipped, symtabs_left, left_out, trimmed;
	__u64 kept, after, overwritten, bytes;
	int settled;
};

/**
 * rk_bundle_write() - bundle the session at @session_dir cut at @t
 * (CLOCK_MONOTONIC ns, the records' clock) into @out_path.
 * @why: the reason, one line (a trigger's description; control characters
 *	are replaced); may be NULL.
 *
 * The file is written under a temporary name in the same directory (mode
 * 0600, O_EXCL), then renamed into place without replacing anything unless
 * @o->force: a reader never sees half a bundle.
 *
 * Return: 0; -EEXIST (@out_path exists), -ENOENT (no session there),
 * -ENODATA (no buffer to bundle), -EFBIG (no buffer fits @o->max_bytes),
 * -errno of the write.
 */
int rk_bundle_write(const char *session_dir, __u64 t, const char *why, const char *out_path,
		    const struct rk_bundle_opts *o, struct rk_bundle_stats *st);

#endif /* RK_BUNDLE_H */
