/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * elfcore.h - ELF core dumps with ringkeeper's buffers in them: the writer
 * that adds them as notes while a core streams through, and the reader
 * that finds them again.
 *
 * The notes are one new PT_NOTE segment, owner "RINGKEEPER". It and a
 * program header table one entry longer are inserted right after the
 * original table; everything after moves by a multiple of the page size,
 * so every PT_LOAD keeps its alignment, and the core is read once, in
 * order, from a pipe, as the kernel hands it to a core_pattern handler.
 * Type numbers are above 20 and unlike gdb's: BFD interprets those whatever
 * the owner.
 * Here in format (a file format), not in crash: the snapshot bundle
 * (bundle.h), which the recorder may write, is a notes-only core too.
 * Owns: nothing beyond a call. May call: nothing of ours but bufile (types).
 */
#ifndef RK_ELFCORE_H
#define RK_ELFCORE_H

#include <elf.h>
#include <linux/types.h>
#include <stddef.h>
#include <sys/types.h>
#include "bufile.h"

#define RK_NOTE_OWNER "RINGKEEPER"
/* The exact bytes of one (thread, source) buffer file. */
#define RK_NOTE_BUFFER 0x524b0001
/* A process's sideband buffer file. */
#define RK_NOTE_SIDEBAND 0x524b0002
/*
 * A text description of the session: "key value" lines; among them, one
 * "buffer N SOURCE/TID" line per RK_NOTE_BUFFER note (N counts those notes
 * from 0, in file order), naming where the buffer was in the session
 * (sched/1234, cpu-clock/1234).
 */
#define RK_NOTE_SESSION 0x524b0003
/*
 * A snapshot bundle's (bundle.h): one mapped file's build id and function
 * symbols (symtab.h has the layout), so that readers elsewhere name them.
 */
#define RK_NOTE_SYMTAB 0x524b0004
/* A snapshot bundle's: the session's tracing_data file, exact bytes. */
#define RK_NOTE_TRACEDATA 0x524b0005
/*
 * A snapshot bundle's, last: the CRC32 of every byte before it, range by
 * range (the headers, then each note), so that a reader tells a damaged
 * bundle, and where, from a valid one (docs/format.md has the layout).
 */
#define RK_NOTE_CHECKSUM 0x524b0006

/**
 * struct rk_core_note - one note to add.
 * @type: RK_NOTE_*.
 * @fd: an open file whose first @size bytes are the desc (read when
 *	written; if it is shorter by then, the rest is zeros), or -1 for @data.
 * @data: the desc bytes, when @fd is -1.
 * @size: desc size, < 4 GiB.
 */
struct rk_core_note {
	__u32 type;
	int fd;
	const void *data;
	__u64 size;
};

/**
 * rk_elfcore_augment() - copy the core read from @in to @out, with @notes.
 * @in: read once, sequentially (a pipe is fine), to its end.
 * @out: written sequentially.
 * @augmented: set to 1 if the notes were added; 0 if @in was passed
 *	through unchanged (not an ELF64 core with its program headers right
 *	after the ELF header, or no notes).
 * @why: if not NULL and nothing was added, a static reason.
 *
 * Whatever @in holds is written to @out: a core that cannot be augmented
 * is copied byte for byte (the caller never loses a core to this function).
 *
 * Return: bytes written; -errno if reading @in or writing @out failed (what
 * was read before that was written, as far as @out took it).
 */
ssize_t rk_elfcore_augment(int in, int out, const struct rk_core_note *notes, size_t nnotes,
			   int *augmented, const char **why);

/** rk_elfcore_note_size() - bytes @nt takes in a PT_NOTE segment (header, owner, desc, padding). */
__u64 rk_elfcore_note_size(const struct rk_core_note *nt);

/**
 * rk_elfcore_note_write() - write @nt at @out's position, as
 * rk_elfcore_augment() does (for a writer that lays out its own core, as
 * the bundle writer does: it streams notes, then writes the headers).
 * Return: 0, or -errno.
 */
int rk_elfcore_note_write(int out, const struct rk_core_note *nt);

/**
 * rk_elfcore_note_crc() - the zlib CRC32 of the bytes rk_elfcore_note_write()
 * writes for @nt (header, owner, desc, padding), continuing @crc (0 to
 * start); @nt->fd must be -1.
 */
__u32 rk_elfcore_note_crc(const struct rk_core_note *nt, __u32 crc);

/**
 * rk_elfcore_ehdr() - the ELF header of an x86-64 core with no program
 * headers yet, laid out as the kernel writes it (program headers right
 * after it); the caller sets e_phnum and, with PN_XNUM, the section header.
 */
void rk_elfcore_ehdr(Elf64_Ehdr *eh);

/** typedef rk_note_fn - a note found: its type and desc (in the mapped core). */
typedef int (*rk_note_fn)(__u32 type, const void *desc, __u64 size, void *ctx);

/**
 * rk_elfcore_for_each_note() - call @fn for each RINGKEEPER note of the
 * core at @path, in file order; the core is hostile (every offset checked).
 * @why: receives a static reason on -EINVAL.
 * Return: notes found; @fn's non-zero value; -EINVAL (not an ELF64 core, or
 * a corrupt one), -errno.
 */
int rk_elfcore_for_each_note(const char *path, rk_note_fn fn, void *ctx, const char **why);

/**
 * struct rk_core_buf - one buffer note of a core, validated.
 * @bf: the buffer, over @mem (a page-aligned copy of the note's desc).
 * @name: SOURCE/TID from the session note ("" if it has none).
 * @why: NULL if @bf is valid, else why not.
 */
struct rk_core_buf {
	__u32 type;
	char name[80];
	void *mem;
	size_t size;
	struct rk_bufile bf;
	const char *why;
};

/*
 * The most buffer notes the handler writes into a core, and the most a
 * reader takes from one (a crafted core's others are counted, not read):
 * about 64 MiB of entries at most.
 */
#define RK_CORE_MAX_BUFS 65536

/**
 * struct rk_core_bufs - every ringkeeper buffer of a core, and its session text.
 * @skipped: buffer notes past RK_CORE_MAX_BUFS, not read.
 */
struct rk_core_bufs {
	struct rk_core_buf *v;
	size_t n, cap;
	size_t skipped;
	char *session;
	/* A bundle's: its RK_NOTE_SYMTAB descs (copies), its tracing data. */
	struct rk_core_blob {
		void *data;
		size_t size;
	} * symtabs, tracedata, checksum;
	size_t nsymtabs;
};

/**
 * rk_core_bufs__load() - the RINGKEEPER notes of the core at @path. A
 * bundle with a checksum note is checked against it first; one whose
 * description says it has one must have it.
 * Return: 0 (@b filled, maybe with no buffer); -errno / -EINVAL with *@why;
 * -EBADMSG with *@why saying what is damaged and where (bytes, note).
 */
int rk_core_bufs__load(const char *path, struct rk_core_bufs *b, const char **why);

/**
 * rk_core_bufs__extract() - write the valid buffers of @b into @dir as a
 * session directory (SOURCE/TID, sideband/PID), for readers that take one;
 * a bundle's tracing data as tracing_data and its symbol tables as
 * symtab/N (symbols.h reads them there).
 * Names come from the core, so only SOURCE of [A-Za-z0-9_.:-] (not "." or
 * "..") and a numeric TID are used; others are named by their identity.
 * Return: buffers written, or -errno.
 */
int rk_core_bufs__extract(const struct rk_core_bufs *b, const char *dir);

/** rk_core_bufs__free() - free what load() made (a zeroed @b is fine). */
void rk_core_bufs__free(struct rk_core_bufs *b);

#endif /* RK_ELFCORE_H */
