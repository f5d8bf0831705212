/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * symtab.h - the function symbols of one mapped file: read from the ELF file
 * on disk (the reader's lookups, symbols.c) or from a bundle's RK_NOTE_SYMTAB
 * note (bundle.c writes them at a snapshot, so that another machine, where
 * the files are absent or different, still names the functions).
 *
 * The note (one per file, little endian; docs/format.md, "A snapshot bundle"):
 *
 *   0   u32 version (1)         4   u32 hdr_size (56; 40 before trimming was
 *   8   u32 path_len (with NUL)     said; more: fields appended)
 *   12  u32 build_id_len (raw bytes, <= 64)
 *   16  u32 nseg (<= 16)        20  u32 nsyms
 *   24  u64 strtab_size         32  u64 flags (RK_SYMTAB_F_*: what was trimmed)
 *   40  u64 symbols left out    48  u64 names cut
 *   hdr_size: path, NUL-terminated; then the build id; then zeros to 8
 *   then nseg x {u64 offset, u64 vaddr, u64 filesz} (the PT_LOAD segments)
 *   then nsyms x {u64 addr, u64 size, u32 name, u32 bind} (addr as st_value)
 *   then strtab_size bytes of NUL-terminated names (name: an offset in it)
 *
 * Owns: struct rk_symtab's memory. May call: lib (util) and libelf.
 */
#ifndef RK_SYMTAB_H
#define RK_SYMTAB_H

#include <linux/types.h>
#include <stddef.h>

#define RK_SYMTAB_VERSION 1
#define RK_SYMTAB_MAX_SEG 16
/* Hex of the longest build id we keep (64 bytes: sha512), with its NUL. */
#define RK_BUILD_ID_HEX 129
/* A crafted note's cost: symbols per file (a browser has ~1M). */
#define RK_SYMTAB_MAX_SYMS (4u << 20)

/*
 * What one mapped file may cost a snapshot bundle (the writer's limits,
 * rk_symtab_limits_bundle(); docs/format.md): a traced user chooses the
 * file, so its symbols are read within these bounds, and the note says
 * what they left out.
 */
/* A symbol or string section larger than this is not read (libelf reads one whole). */
#define RK_SYMTAB_LIM_SECTION (64u << 20)
/* More sections than this (e_shnum's extension): the file is not read. */
#define RK_SYMTAB_LIM_SECTIONS 65536u
/* Symbols kept per file. */
#define RK_SYMTAB_LIM_SYMS (1u << 20)
/* A name's bytes kept, with its NUL: a longer one is cut. */
#define RK_SYMTAB_LIM_NAME 1024u
/* A note's bytes (tables and names) per file. */
#define RK_SYMTAB_LIM_NOTE (32u << 20)

/* The note's flags: what the limits left out. */
#define RK_SYMTAB_F_DROPPED 0x1 /* symbols left out (count, bytes, the bundle's room) */
#define RK_SYMTAB_F_CUT 0x2 /* names cut to RK_SYMTAB_LIM_NAME - 1 bytes */
#define RK_SYMTAB_F_REFUSED 0x4 /* a section (or the file) over its limit, not read */

/**
 * struct rk_symtab_limits - bounds on what loading one file keeps (0: none).
 * @section: bytes of a symbol or string section read (larger: refused).
 * @sections: sections a file may have.
 * @syms: symbols kept. @name: bytes of a name kept, with its NUL.
 * @note: bytes the table's note may take (each symbol costs 24 bytes and
 *	its name's; the header, path and segments are counted first).
 */
struct rk_symtab_limits {
	__u64 section, sections, syms, name, note;
};

/** rk_symtab_limits_bundle() - the snapshot writer's limits (RK_SYMTAB_LIM_*). */
void rk_symtab_limits_bundle(struct rk_symtab_limits *l);

/** struct rk_sym - one function: @start (st_value), @size, @name, @bind (STB_*). */
struct rk_sym {
	__u64 start, size;
	char *name;
	int bind;
	size_t order; /* in the symbol table: perf keeps the first of equals */
};

/**
 * struct rk_symtab - one file's function symbols, sorted by address, one per
 * address (the alias perf would name).
 * @path: the file's name as the MMAP2 records give it ("[vdso]" included).
 * @build_id: its GNU build id as hex ("" if it has none).
 * @seg: PT_LOAD segments, to turn a file offset into a symbol address.
 * @flags: RK_SYMTAB_F_*: what limits left out (from a note: as it says).
 * @dropped: function symbols left out; @cut: names cut.
 */
struct rk_symtab {
	char *path;
	char build_id[RK_BUILD_ID_HEX];
	struct {
		__u64 off, vaddr, len;
	} seg[RK_SYMTAB_MAX_SEG];
	int nseg;
	struct rk_sym *syms;
	size_t nsyms, capsyms;
	__u64 flags, dropped, cut;
	/* While loading: the limits (NULL: none) and the note's bytes so far. */
	const struct rk_symtab_limits *lim;
	__u64 cost;
};

/**
 * rk_symtab__load_file() - @path's function symbols: .symtab, else its
 * separate debug file's (by build id, under /usr/lib/debug/.build-id), else
 * .dynsym; "[vdso]" is this process's own (the same kernel maps the same one
 * into every process). @path comes from a record: only a regular file is
 * opened, never blocking.
 * Return: 0 (@t filled, maybe with no symbol); -ENOENT (cannot open it),
 * -EINVAL (not ELF), -ENOMEM. @t is usable (empty) whatever the return.
 */
int rk_symtab__load_file(struct rk_symtab *t, const char *path);

/**
 * rk_symtab__load_file_lim() - rk_symtab__load_file() within @lim: what it
 * leaves out is in @t->flags, @t->dropped and @t->cut (and in its note).
 * Memory: the sections read (each <= @lim->section) and what is kept.
 */
int rk_symtab__load_file_lim(struct rk_symtab *t, const char *path,
			     const struct rk_symtab_limits *lim);

/**
 * rk_symtab__load_fd_lim() - rk_symtab__load_file_lim() from @fd, a regular
 * file the caller opened (and checked is the one @path names in its records:
 * the path itself is not opened again); @fd stays open.
 * Return: as rk_symtab__load_file() (-EBADF: @fd < 0).
 */
int rk_symtab__load_fd_lim(struct rk_symtab *t, const char *path, int fd,
			   const struct rk_symtab_limits *lim);

/**
 * rk_symtab_build_id_of() - the GNU build id of the ELF file at @path as hex
 * into @hex (at least 41 bytes for sha1). Return: 0, or -1 (none, not ELF,
 * unreadable).
 */
int rk_symtab_build_id_of(const char *path, char *hex, size_t len);

/**
 * rk_symtab__note() - @t as an RK_NOTE_SYMTAB desc.
 * Return: its size (*@out malloc'd), or -ENOMEM / -E2BIG (over 4 GiB).
 */
long long rk_symtab__note(const struct rk_symtab *t, void **out);

/**
 * rk_symtab__from_note() - parse a note (hostile: every size and offset
 * checked against @size) into @t, which owns copies of what it keeps.
 * Return: 0, or -EBADMSG with *@why (static) saying what is wrong; -ENOMEM.
 */
int rk_symtab__from_note(struct rk_symtab *t, const void *desc, size_t size, const char **why);

/**
 * rk_symtab_vaddr() - the symbol address of file offset @off (through the
 * PT_LOAD segments; @off itself if none covers it).
 */
__u64 rk_symtab_vaddr(const struct rk_symtab *t, __u64 off);

/** rk_symtab_find() - the symbol containing @vaddr, or NULL. */
const struct rk_sym *rk_symtab_find(const struct rk_symtab *t, __u64 vaddr);

/** rk_symtab_sort() - sort @v by address, one per address (perf's choice of alias). */
void rk_symtab_sort(struct rk_sym *v, size_t *n);

/** rk_symtab__release() - free what @t holds (a zeroed @t is fine); @t is zeroed. */
void rk_symtab__release(struct rk_symtab *t);

#endif /* RK_SYMTAB_H */
