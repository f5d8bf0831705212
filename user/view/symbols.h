/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * symbols.h - resolve sample addresses: user addresses through the MMAP2
 * records of a process's sideband and the ELF symbol tables of the mapped
 * files, kernel addresses through /proc/kallsyms.
 */
#ifndef RK_SYMBOLS_H
#define RK_SYMBOLS_H

#include <linux/types.h>
#include <stddef.h>

struct rk_symbols;

/**
 * rk_symbols__new() - load the maps of the sideband file @sideband_path
 * (may be NULL or missing: then only kernel addresses resolve), and the
 * symbol tables a bundle carried, if its session directory (the one above
 * sideband/) has them (SESSION/symtab/N, as rk_core_bufs__extract() writes).
 * Return: NULL only on ENOMEM.
 */
struct rk_bufile;

struct rk_symbols *rk_symbols__new(const char *sideband_path);

/**
 * rk_sideband_path() - the sideband file of process @tgid in the session
 * directory @session_dir, into @out: SIDEBAND/TGID, or where the caller
 * may not read that one (the process became root's again after a part
 * that was this user's), the newest SIDEBAND/TGID.N the caller may read.
 */
void rk_sideband_path(const char *session_dir, __u32 tgid, char *out, size_t len);

/**
 * rk_symbols__add_sideband() - add the maps of a sideband buffer already
 * open (e.g. from a core's notes); later maps win, as in a file.
 */
void rk_symbols__add_sideband(struct rk_symbols *s, const struct rk_bufile *sideband);

/**
 * rk_symbols__add_symtab() - a table of a mapped file's symbols from a
 * snapshot bundle (an RK_NOTE_SYMTAB desc, hostile: checked), used for its
 * path when the file is absent or is not the one the table was made from
 * (build ids differ, or there is none to compare).
 * Return: 0; -EBADMSG with *@why; -ENOMEM.
 */
int rk_symbols__add_symtab(struct rk_symbols *s, const void *desc, size_t size, const char **why);

/* Where rk_core_bufs__extract() puts a bundle's tables: SESSION/symtab/N. */
#define RK_SYMTAB_DIR "symtab"

/**
 * rk_build_id_of() - the GNU build id of the ELF file at @path, as hex
 * into @hex (at least 41 bytes). Return: 0, or -1 (none, not ELF, unreadable).
 */
int rk_build_id_of(const char *path, char *hex, size_t len);

/**
 * rk_symbols_resolve() - "sym+0xoff" and the mapped file for @addr.
 * Return: 0, or -ENOENT (buffers set to "[unknown]").
 */
int rk_symbols_resolve(struct rk_symbols *s, __u64 addr, char *sym, size_t symlen,
		       const char **dso);

/** struct rk_sym_map - a file mapping: where, how long, at what offset of the file. */
struct rk_sym_map {
	__u64 start, len, pgoff;
};

/**
 * rk_symbols_resolve_map() - rk_symbols_resolve(), and in *@map the file
 * mapping @addr is in (the latest that covers it; len 0: none, the kernel,
 * anonymous memory or unknown). @map may be NULL.
 */
int rk_symbols_resolve_map(struct rk_symbols *s, __u64 addr, char *sym, size_t symlen,
			   const char **dso, struct rk_sym_map *map);

/** typedef rk_map_fn - one file mapping; non-zero stops the walk. */
typedef int (*rk_map_fn)(void *ctx, const char *path, __u64 start, __u64 len, __u64 pgoff);

/**
 * rk_symbols_for_each_map() - the file mappings, ancestors' first, each
 * process's in the order it made them (a later one covers an earlier one).
 * Return: 0, or @fn's non-zero value.
 */
int rk_symbols_for_each_map(const struct rk_symbols *s, rk_map_fn fn, void *ctx);

/** rk_symbols__free() - NULL is a no-op. */
void rk_symbols__free(struct rk_symbols *s);

#endif /* RK_SYMBOLS_H */
