// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include "bufile.h"
#include "symbols.h"
#include "util.h"

/* Where separate debug files are (perf's and gdb's default). */
#ifndef RK_DEBUG_DIR
#define RK_DEBUG_DIR "/usr/lib/debug"
#endif

struct sym {
	__u64 start, size; /* file-relative virtual addresses (st_value) */
	char *name;
	int bind; /* STB_* */
	size_t order; /* in the symbol table: perf keeps the first of equals */
};

struct dso {
	char *path;
	int loaded;
	struct sym *syms;
	size_t nsyms, capsyms;
	/* PT_LOAD segments: file offset -> ELF vaddr */
	struct {
		__u64 off, vaddr, len;
	} seg[16];
	int nseg;
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
	struct sym *ksyms;
	size_t nksyms, capksyms;
	int kloaded;
};

/* Room for one more element in *@v (geometric growth: kallsyms has ~200k). */
static int grow(void **v, size_t n, size_t *cap, size_t elem)
{
	void *nv;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	nv = realloc(*v, c * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static size_t underscores(const char *s)
{
	return strspn(s, "_");
}

/*
 * Of two symbols at one address (aliases: __clock_gettime and
 * clock_gettime@@GLIBC_2.17), the one perf names: with a size, not weak,
 * global, fewer leading underscores, the longer name, the first in the
 * table. Return: 1 if @a.
 */
static int better(const struct sym *a, const struct sym *b)
{
	if (!!a->size != !!b->size)
		return !!a->size;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return b->bind == STB_WEAK;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL;
	if (underscores(a->name) != underscores(b->name))
		return underscores(a->name) < underscores(b->name);
	if (strlen(a->name) != strlen(b->name))
		return strlen(a->name) > strlen(b->name);
	return a->order < b->order;
}

/* Sorted by address, one symbol per address (the best of its aliases). */
static void sort_syms(struct sym *v, size_t *n)
{
	size_t i, k = 0;

	if (!*n)
		return;
	qsort(v, *n, sizeof(*v), sym_cmp);
	for (i = 1; i < *n; i++) {
		if (v[i].start != v[k].start) {
			v[++k] = v[i];
			continue;
		}
		if (better(&v[i], &v[k])) {
			free(v[k].name);
			v[k] = v[i];
		} else {
			free(v[i].name);
		}
	}
	*n = k + 1;
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

/* The ELF's GNU build id (NT_GNU_BUILD_ID) as hex, into @hex (>= 41 bytes). Return: 0 or -1. */
static int build_id(Elf *e, char *hex, size_t len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		size_t off = 0, name_off, desc_off, k;
		GElf_Shdr sh;
		GElf_Nhdr nh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((const char *)data->d_buf + name_off, "GNU", 4) ||
			    !nh.n_descsz || nh.n_descsz * 2 + 1 > len)
				continue;
			for (k = 0; k < nh.n_descsz; k++)
				snprintf(hex + 2 * k, 3, "%02x",
					 ((const unsigned char *)data->d_buf)[desc_off + k]);
			return 0;
		}
	}
	return -1;
}

int rk_build_id_of(const char *path, char *hex, size_t len)
{
	int fd, err = -1;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	fd = rk_open_regular(path, 1, NULL);
	if (fd < 0)
		return -1;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e)
		err = build_id(e, hex, len);
	if (e)
		elf_end(e);
	close(fd);
	return err;
}

/* Function symbols of @e's .symtab (@symtab) or .dynsym into @d. */
static void load_syms(struct dso *d, Elf *e, int symtab)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t n, k;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != (symtab ? SHT_SYMTAB : SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (k = 0; k < n; k++) {
			GElf_Sym sy;
			const char *name;

			if (!gelf_getsym(data, (int)k, &sy) ||
			    GELF_ST_TYPE(sy.st_info) != STT_FUNC || !sy.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, sy.st_name);
			if (!name || !*name)
				continue;
			if (grow((void **)&d->syms, d->nsyms, &d->capsyms, sizeof(*d->syms)))
				return;
			d->syms[d->nsyms].start = sy.st_value;
			d->syms[d->nsyms].size = sy.st_size;
			d->syms[d->nsyms].bind = GELF_ST_BIND(sy.st_info);
			d->syms[d->nsyms].order = d->nsyms;
			d->syms[d->nsyms].name = strdup(name);
			if (d->syms[d->nsyms].name)
				d->nsyms++;
		}
	}
}

static int has_symtab(Elf *e)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return 1;
	return 0;
}

/*
 * A stripped file's symbols from its separate debug file, as perf and gdb
 * find it: /usr/lib/debug/.build-id/xx/rest.debug with the same build id
 * (Debian's -dbg and -dbgsym packages). Return: 1 if loaded.
 */
static int load_debug_file(struct dso *d, Elf *e)
{
	char id[128], id2[128], path[300];
	int fd, done = 0;
	Elf *de;

	if (build_id(e, id, sizeof(id)) || strlen(id) < 4)
		return 0;
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", RK_DEBUG_DIR, id, id + 2);
	fd = rk_open_regular(path, 1, NULL);
	if (fd < 0)
		return 0;
	de = elf_begin(fd, ELF_C_READ, NULL);
	if (de && !build_id(de, id2, sizeof(id2)) && !strcmp(id, id2) && has_symtab(de)) {
		load_syms(d, de, 1);
		done = 1;
	}
	if (de)
		elf_end(de);
	close(fd);
	return done;
}

/*
 * [vdso]: the same kernel maps the same image into every 64-bit process,
 * so ours stands for the traced one's (perf does the same).
 */
static Elf *own_vdso(void **copy)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	unsigned long long start, end;
	char line[256];
	Elf *e = NULL;
	FILE *f;

	*copy = NULL;
	if (!base)
		return NULL;
	f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strstr(line, "[vdso]") || sscanf(line, "%llx-%llx", &start, &end) != 2 ||
		    start != base || end <= start || end - start > (1u << 20))
			continue;
		*copy = malloc(end - start);
		if (*copy) {
			memcpy(*copy, (const void *)base, end - start);
			e = elf_memory(*copy, end - start);
		}
		break;
	}
	if (f)
		fclose(f);
	return e;
}

/*
 * Read the PT_LOAD segments of a mapped file, and its function symbols:
 * .symtab, else its debug file's (by build id), else .dynsym.
 */
static void dso_load(struct dso *d)
{
	void *vdso_copy = NULL;
	size_t i, nph;
	Elf *e;
	int fd = -1;

	d->loaded = 1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return;
	if (!strcmp(d->path, "[vdso]")) {
		e = own_vdso(&vdso_copy);
	} else {
		/* A path from a record: hostile; only a regular file, and never block on it. */
		fd = rk_open_regular(d->path, 1, NULL);
		if (fd < 0)
			return;
		e = elf_begin(fd, ELF_C_READ, NULL);
	}
	if (!e)
		goto out_close;
	if (!elf_getphdrnum(e, &nph)) {
		for (i = 0; i < nph && d->nseg < 16; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
				d->seg[d->nseg].off = ph.p_offset;
				d->seg[d->nseg].vaddr = ph.p_vaddr;
				d->seg[d->nseg].len = ph.p_filesz;
				d->nseg++;
			}
		}
	}
	if (has_symtab(e))
		load_syms(d, e, 1);
	else if (!load_debug_file(d, e))
		load_syms(d, e, 0);
	sort_syms(d->syms, &d->nsyms);
	elf_end(e);
out_close:
	if (fd >= 0)
		close(fd);
	free(vdso_copy);
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

struct rk_symbols *rk_symbols__new(const char *sideband_path)
{
	struct rk_symbols *s = calloc(1, sizeof(*s));
	const char *slash;
	int depth;

	if (!s)
		return NULL;
	if (!sideband_path)
		return s;
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
		if (sscanf(line, "%llx %c %255s", &a, &t, name) != 3 || !a ||
		    (t != 't' && t != 'T'))
			continue;
		if (grow((void **)&s->ksyms, s->nksyms, &s->capksyms, sizeof(*s->ksyms)))
			break;
		s->ksyms[s->nksyms].start = a;
		s->ksyms[s->nksyms].size = 0;
		s->ksyms[s->nksyms].name = strdup(name);
		if (s->ksyms[s->nksyms].name)
			s->nksyms++;
	}
	fclose(f);
	if (s->nksyms)
		qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), sym_cmp);
}

/* The last symbol starting at or below @a (and containing it, if sized). */
static const struct sym *find(const struct sym *v, size_t n, __u64 a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (v[lo - 1].size && a >= v[lo - 1].start + v[lo - 1].size)
		return NULL;
	return &v[lo - 1];
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
	const struct sym *hit;
	struct map *m;
	__u64 off, vaddr;
	int k;

	snprintf(sym, symlen, "[unknown]");
	*dso = "[unknown]";
	if (map)
		memset(map, 0, sizeof(*map));
	if (addr >= 0xffff800000000000ull) {
		if (!s->kloaded)
			kallsyms_load(s);
		hit = find(s->ksyms, s->nksyms, addr);
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
		dso_load(m->dso);
	off = addr - m->start + m->pgoff;
	vaddr = off;
	for (k = 0; k < m->dso->nseg; k++) {
		if (off >= m->dso->seg[k].off && off - m->dso->seg[k].off < m->dso->seg[k].len) {
			vaddr = off - m->dso->seg[k].off + m->dso->seg[k].vaddr;
			break;
		}
	}
	hit = find(m->dso->syms, m->dso->nsyms, vaddr);
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

void rk_symbols__free(struct rk_symbols *s)
{
	size_t i, k;

	if (!s)
		return;
	for (i = 0; i < s->ndsos; i++) {
		for (k = 0; k < s->dsos[i]->nsyms; k++)
			free(s->dsos[i]->syms[k].name);
		free(s->dsos[i]->syms);
		free(s->dsos[i]->path);
		free(s->dsos[i]);
	}
	for (k = 0; k < s->nksyms; k++)
		free(s->ksyms[k].name);
	free(s->ksyms);
	free(s->dsos);
	free(s->maps);
	free(s);
}
