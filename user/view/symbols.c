// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bufile.h"
#include "symbols.h"
#include "symtab.h"
#include "util.h"

/*
 * A mapped file: its symbols from the file, or from a bundle's table for
 * that path (@tab points at one or the other once loaded).
 */
struct dso {
	char *path;
	int loaded;
	struct rk_symtab own;
	const struct rk_symtab *tab;
};

struct map {
	__u64 start, len, pgoff;
	struct dso *dso;
};

struct rk_symbols {
	__u32 parent; /* a forked process inherits its parent's mappings */
	struct map *maps;
	size_t nmaps;
	struct dso **dsos;
	size_t ndsos;
	/* Tables a bundle carried (rk_symbols__add_symtab()): for absent or changed files. */
	struct rk_symtab *alt;
	size_t nalt;
	struct rk_symtab ksyms;
	int kloaded;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct rk_sym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static struct dso *dso_get(struct rk_symbols *s, const char *path)
{
	struct dso **n, *d;
	size_t i;

	for (i = 0; i < s->ndsos; i++)
		if (!strcmp(s->dsos[i]->path, path))
			return s->dsos[i];
	n = realloc(s->dsos, (s->ndsos + 1) * sizeof(*n));
	if (!n)
		return NULL;
	s->dsos = n;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->path = strdup(path);
	if (!d->path) {
		free(d);
		return NULL;
	}
	s->dsos[s->ndsos++] = d;
	return d;
}

int rk_build_id_of(const char *path, char *hex, size_t len)
{
	return rk_symtab_build_id_of(path, hex, len);
}

/*
 * The file's own symbols, unless a bundle carried a table for its path and
 * the file is absent or not the one the table was made from (another build
 * id, or none to compare): then the table, as the file was at the snapshot.
 */
static void dso_load(struct rk_symbols *s, struct dso *d)
{
	const struct rk_symtab *alt = NULL;
	char id[RK_BUILD_ID_HEX];
	size_t i;

	d->loaded = 1;
	for (i = 0; i < s->nalt && !alt; i++)
		if (!strcmp(s->alt[i].path, d->path))
			alt = &s->alt[i];
	/* [vdso] has no file to compare: the recording machine's table wins. */
	if (alt && (!alt->build_id[0] || rk_symtab_build_id_of(d->path, id, sizeof(id)) ||
		    strcmp(id, alt->build_id))) {
		d->tab = alt;
		return;
	}
	rk_symtab__load_file(&d->own, d->path);
	d->tab = &d->own;
	if (alt && !d->own.nsyms)
		d->tab = alt;
}

static int on_sideband(const struct perf_event_header *h, void *ctx)
{
	struct rk_symbols *s = ctx;
	const __u8 *p = (const __u8 *)h + sizeof(*h);
	const char *name;
	struct map *m;

	if (h->type == PERF_RECORD_FORK && h->size >= sizeof(*h) + 16) {
		__u32 pid, ppid, tid;

		memcpy(&pid, p, 4);
		memcpy(&ppid, p + 4, 4);
		memcpy(&tid, p + 8, 4);
		if (pid == tid && ppid != pid && !s->parent)
			s->parent = ppid;
		return 0;
	}
	name = rk_mmap2_name(h);
	if (!name || (name[0] != '/' && strcmp(name, "[vdso]")))
		return 0;
	m = realloc(s->maps, (s->nmaps + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	s->maps = m;
	m = &s->maps[s->nmaps];
	memcpy(&m->start, p + 8, 8);
	memcpy(&m->len, p + 16, 8);
	memcpy(&m->pgoff, p + 24, 8);
	m->dso = dso_get(s, name);
	if (m->dso)
		s->nmaps++;
	return 0;
}

static void load_sideband(struct rk_symbols *s, const char *path)
{
	struct rk_bufile *bf = rk_bufile__open(path, NULL);

	if (!bf)
		return;
	rk_bufile__for_each(bf, on_sideband, s);
	rk_bufile__free(bf);
}

void rk_symbols__add_sideband(struct rk_symbols *s, const struct rk_bufile *sideband)
{
	rk_bufile__for_each(sideband, on_sideband, s);
}

void rk_sideband_path(const char *session_dir, __u32 tgid, char *out, size_t len)
{
	unsigned long best = 0, n;
	char dir[PATH_MAX], pfx[16], *end;
	struct dirent *de;
	size_t pl;
	DIR *d;

	snprintf(out, len, "%s/sideband/%u", session_dir, tgid);
	if (!access(out, R_OK))
		return;
	snprintf(dir, sizeof(dir), "%s/sideband", session_dir);
	pl = (size_t)snprintf(pfx, sizeof(pfx), "%u.", tgid);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		char p[PATH_MAX + 300];

		if (strncmp(de->d_name, pfx, pl))
			continue;
		n = strtoul(de->d_name + pl, &end, 10);
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (!*end && n > best && !access(p, R_OK))
			best = n;
	}
	if (d)
		closedir(d);
	if (best)
		snprintf(out, len, "%s/sideband/%u.%lu", session_dir, tgid, best);
}

/* SESSION/symtab/N next to SESSION/sideband/PID: the tables of an extracted bundle. */
static void load_bundle_tables(struct rk_symbols *s, const char *sideband_path)
{
	char dir[4096], f[4400], *p;
	struct dirent *de;
	const char *why;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s", sideband_path);
	p = strrchr(dir, '/');
	if (p) {
		*p = '\0';
		p = strrchr(dir, '/');
	}
	if (!p)
		return;
	snprintf(p + 1, sizeof(dir) - (size_t)(p + 1 - dir), "%s", RK_SYMTAB_DIR);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		off_t size;
		void *buf;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "%s/%s", dir, de->d_name);
		fd = rk_open_regular(f, 0, &size);
		if (fd < 0)
			continue;
		buf = size > 0 && size < (off_t)(1u << 30) ? malloc((size_t)size) : NULL;
		if (buf && pread(fd, buf, (size_t)size, 0) == (ssize_t)size &&
		    rk_symbols__add_symtab(s, buf, (size_t)size, &why) == -EBADMSG)
			rk_warn("%s: not a symbol table: %s", f, why);
		free(buf);
		close(fd);
	}
	if (d)
		closedir(d);
}

struct rk_symbols *rk_symbols__new(const char *sideband_path)
{
	struct rk_symbols *s = calloc(1, sizeof(*s));
	const char *slash;
	int depth;

	if (!s)
		return NULL;
	if (!sideband_path)
		return s;
	load_bundle_tables(s, sideband_path);
	load_sideband(s, sideband_path);
	/*
	 * A process created by fork() inherited its parent's mappings without
	 * MMAP records: load the ancestors' sidebands first (later maps win).
	 */
	slash = strrchr(sideband_path, '/');
	for (depth = 0; s->parent && slash && depth < 8; depth++) {
		struct rk_symbols *anc = calloc(1, sizeof(*anc));
		char path[4096];
		struct map *m;

		if (!anc)
			break;
		snprintf(path, sizeof(path), "%.*s/%u", (int)(slash - sideband_path), sideband_path,
			 s->parent);
		anc->dsos = s->dsos;
		anc->ndsos = s->ndsos;
		load_sideband(anc, path);
		s->dsos = anc->dsos;
		s->ndsos = anc->ndsos;
		m = realloc(anc->maps, (anc->nmaps + s->nmaps) * sizeof(*m));
		if (m && (anc->nmaps + s->nmaps)) {
			if (s->nmaps)
				memcpy(m + anc->nmaps, s->maps, s->nmaps * sizeof(*m));
			free(s->maps);
			s->maps = m;
			s->nmaps += anc->nmaps;
		} else {
			free(m ? m : anc->maps);
		}
		s->parent = anc->parent;
		free(anc);
	}
	return s;
}

static void kallsyms_load(struct rk_symbols *s)
{
	char line[512], name[256];
	unsigned long long a;
	FILE *f;
	char t;

	s->kloaded = 1;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		struct rk_sym *v;

		if (sscanf(line, "%llx %c %255s", &a, &t, name) != 3 || !a ||
		    (t != 't' && t != 'T'))
			continue;
		if (s->ksyms.nsyms == s->ksyms.capsyms) {
			/* Geometric growth: kallsyms has ~200k. */
			size_t c = s->ksyms.capsyms ? s->ksyms.capsyms * 2 : 1024;

			v = realloc(s->ksyms.syms, c * sizeof(*v));
			if (!v)
				break;
			s->ksyms.syms = v;
			s->ksyms.capsyms = c;
		}
		v = &s->ksyms.syms[s->ksyms.nsyms];
		memset(v, 0, sizeof(*v));
		v->start = a;
		v->name = strdup(name);
		if (v->name)
			s->ksyms.nsyms++;
	}
	fclose(f);
	/* Sorted by address; aliases kept (a binary search takes the last of equals). */
	if (s->ksyms.nsyms)
		qsort(s->ksyms.syms, s->ksyms.nsyms, sizeof(*s->ksyms.syms), ksym_cmp);
}

/* The file mapping @addr is in: the latest that covers it (a later one covers an earlier). */
static struct map *map_at(const struct rk_symbols *s, __u64 addr)
{
	size_t i;

	for (i = s->nmaps; i-- > 0;)
		if (addr >= s->maps[i].start && addr - s->maps[i].start < s->maps[i].len)
			return &s->maps[i];
	return NULL;
}

int rk_symbols_resolve(struct rk_symbols *s, __u64 addr, char *sym, size_t symlen, const char **dso)
{
	return rk_symbols_resolve_map(s, addr, sym, symlen, dso, NULL);
}

int rk_symbols_resolve_map(struct rk_symbols *s, __u64 addr, char *sym, size_t symlen,
			   const char **dso, struct rk_sym_map *map)
{
	const struct rk_sym *hit;
	struct map *m;
	__u64 vaddr;

	snprintf(sym, symlen, "[unknown]");
	*dso = "[unknown]";
	if (map)
		memset(map, 0, sizeof(*map));
	if (addr >= 0xffff800000000000ull) {
		if (!s->kloaded)
			kallsyms_load(s);
		hit = rk_symtab_find(&s->ksyms, addr);
		if (!hit)
			return -ENOENT;
		*dso = "[kernel.kallsyms]";
		snprintf(sym, symlen, "%s+0x%llx", hit->name,
			 (unsigned long long)(addr - hit->start));
		return 0;
	}
	m = map_at(s, addr);
	if (!m)
		return -ENOENT;
	if (map) {
		map->start = m->start;
		map->len = m->len;
		map->pgoff = m->pgoff;
	}
	*dso = m->dso->path;
	if (!m->dso->loaded)
		dso_load(s, m->dso);
	vaddr = rk_symtab_vaddr(m->dso->tab, addr - m->start + m->pgoff);
	hit = rk_symtab_find(m->dso->tab, vaddr);
	if (!hit)
		return -ENOENT;
	snprintf(sym, symlen, "%s+0x%llx", hit->name, (unsigned long long)(vaddr - hit->start));
	return 0;
}

int rk_symbols_for_each_map(const struct rk_symbols *s, rk_map_fn fn, void *ctx)
{
	size_t i;
	int r;

	for (i = 0; i < s->nmaps; i++) {
		r = fn(ctx, s->maps[i].dso->path, s->maps[i].start, s->maps[i].len,
		       s->maps[i].pgoff);
		if (r)
			return r;
	}
	return 0;
}

int rk_symbols__add_symtab(struct rk_symbols *s, const void *desc, size_t size, const char **why)
{
	struct rk_symtab *v;
	int err;

	v = realloc(s->alt, (s->nalt + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->alt = v;
	err = rk_symtab__from_note(&s->alt[s->nalt], desc, size, why);
	if (!err)
		s->nalt++;
	return err;
}

void rk_symbols__free(struct rk_symbols *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->ndsos; i++) {
		rk_symtab__release(&s->dsos[i]->own);
		free(s->dsos[i]->path);
		free(s->dsos[i]);
	}
	for (i = 0; i < s->nalt; i++)
		rk_symtab__release(&s->alt[i]);
	free(s->alt);
	rk_symtab__release(&s->ksyms);
	free(s->dsos);
	free(s->maps);
	free(s);
}
