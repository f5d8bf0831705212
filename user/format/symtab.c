// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * symtab.c - one mapped file's function symbols, from the ELF file or from
 * a bundle's note (see symtab.h). The ELF side was symbols.c's: it moved
 * here so that the snapshot writer (format, below the views) makes exactly
 * the table a reader would.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include "symtab.h"
#include "util.h"

/* Where separate debug files are (perf's and gdb's default). */
#ifndef RK_DEBUG_DIR
#define RK_DEBUG_DIR "/usr/lib/debug"
#endif

/* The header a reader takes (version 1's first), and the one written (with what was trimmed). */
#define HDR_SIZE 40u
#define HDR_SIZE_W 56u
#define SEG_SIZE 24u
#define SYM_SIZE 24u
#define ALIGN8(x) (((x) + 7) & ~(__u64)7)

static int sym_cmp(const void *a, const void *b)
{
	const struct rk_sym *x = a, *y = b;

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
static int better(const struct rk_sym *a, const struct rk_sym *b)
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

void rk_symtab_sort(struct rk_sym *v, size_t *n)
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

/* Room for one more symbol (geometric growth). */
static int grow(struct rk_symtab *t)
{
	struct rk_sym *nv;
	size_t c;

	if (t->nsyms < t->capsyms)
		return 0;
	if (t->nsyms >= RK_SYMTAB_MAX_SYMS)
		return -E2BIG;
	c = t->capsyms ? t->capsyms * 2 : 64;
	nv = realloc(t->syms, c * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	t->syms = nv;
	t->capsyms = c;
	return 0;
}

void rk_symtab_limits_bundle(struct rk_symtab_limits *l)
{
	l->section = RK_SYMTAB_LIM_SECTION;
	l->sections = RK_SYMTAB_LIM_SECTIONS;
	l->syms = RK_SYMTAB_LIM_SYMS;
	l->name = RK_SYMTAB_LIM_NAME;
	l->note = RK_SYMTAB_LIM_NOTE;
}

/*
 * One symbol, within @t->lim: past its count or its note's bytes it is left
 * out, a name past its length cut; both counted (the note says so).
 */
static int add_sym(struct rk_symtab *t, __u64 start, __u64 size, int bind, const char *name)
{
	const struct rk_symtab_limits *l = t->lim;
	size_t n = l && l->name ? strnlen(name, l->name - 1) : strlen(name);
	__u64 cost = SYM_SIZE + n + 1;
	struct rk_sym *s;

	if (l && ((l->syms && t->nsyms >= l->syms) || (l->note && t->cost + cost > l->note))) {
		t->flags |= RK_SYMTAB_F_DROPPED;
		t->dropped++;
		return 0;
	}
	if (grow(t))
		return -ENOMEM;
	s = &t->syms[t->nsyms];
	s->start = start;
	s->size = size;
	s->bind = bind;
	s->order = t->nsyms;
	s->name = strndup(name, n);
	if (!s->name)
		return -ENOMEM;
	if (name[n]) {
		t->flags |= RK_SYMTAB_F_CUT;
		t->cut++;
	}
	t->cost += cost;
	t->nsyms++;
	return 0;
}

/* Is @sh's section (or the one its sh_link names: @linked) over @t's limit? Then refused. */
static int over_limit(struct rk_symtab *t, Elf *e, const GElf_Shdr *sh, int linked)
{
	GElf_Shdr lsh;
	__u64 max = t->lim ? t->lim->section : 0;

	if (!max)
		return 0;
	if (sh->sh_size > max ||
	    (linked && gelf_getshdr(elf_getscn(e, sh->sh_link), &lsh) && lsh.sh_size > max)) {
		t->flags |= RK_SYMTAB_F_REFUSED;
		return 1;
	}
	return 0;
}

/*
 * The ELF's GNU build id (NT_GNU_BUILD_ID) as hex, into @hex; note sections
 * over @max bytes (0: any) are not read. Return: 0 or -1.
 */
static int build_id(Elf *e, char *hex, size_t len, __u64 max)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		size_t off = 0, name_off, desc_off, k;
		GElf_Shdr sh;
		GElf_Nhdr nh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || (max && sh.sh_size > max))
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

int rk_symtab_build_id_of(const char *path, char *hex, size_t len)
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
		err = build_id(e, hex, len, RK_SYMTAB_LIM_SECTION);
	if (e)
		elf_end(e);
	close(fd);
	return err;
}

/* Function symbols of @e's .symtab (@symtab) or .dynsym into @t. */
static void load_syms(struct rk_symtab *t, Elf *e, int symtab)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t n, k;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != (symtab ? SHT_SYMTAB : SHT_DYNSYM) ||
		    !sh.sh_entsize || over_limit(t, e, &sh, 1))
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
			if (add_sym(t, sy.st_value, sy.st_size, GELF_ST_BIND(sy.st_info), name))
				return;
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
static int load_debug_file(struct rk_symtab *t, const char *id)
{
	char id2[RK_BUILD_ID_HEX], path[300];
	int fd, done = 0;
	Elf *de;

	if (strlen(id) < 4)
		return 0;
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", RK_DEBUG_DIR, id, id + 2);
	fd = rk_open_regular(path, 1, NULL);
	if (fd < 0)
		return 0;
	de = elf_begin(fd, ELF_C_READ, NULL);
	if (de && !build_id(de, id2, sizeof(id2), t->lim ? t->lim->section : 0) &&
	    !strcmp(id, id2) && has_symtab(de)) {
		load_syms(t, de, 1);
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

static void load_segments(struct rk_symtab *t, Elf *e)
{
	size_t i, nph;

	if (elf_getphdrnum(e, &nph))
		return;
	for (i = 0; i < nph && t->nseg < RK_SYMTAB_MAX_SEG; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			t->seg[t->nseg].off = ph.p_offset;
			t->seg[t->nseg].vaddr = ph.p_vaddr;
			t->seg[t->nseg].len = ph.p_filesz;
			t->nseg++;
		}
	}
}

static __u64 rd(const __u8 *p, int n, int big)
{
	__u64 v = 0;
	int i;

	for (i = 0; i < n; i++)
		v |= (__u64)p[big ? n - 1 - i : i] << (8 * i);
	return v;
}

/*
 * The number of sections @fd's ELF header says (with e_shnum's extension in
 * section 0), read before libelf, which allocates for each of them when it
 * opens the file. Return: the count, or 0 if it cannot tell (libelf decides).
 */
static __u64 section_count(int fd)
{
	__u8 h[64], s0[64];
	int c64, big;
	__u64 shoff, shnum;

	if (pread(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h) || memcmp(h, ELFMAG, SELFMAG))
		return 0;
	c64 = h[EI_CLASS] == ELFCLASS64;
	big = h[EI_DATA] == ELFDATA2MSB;
	shoff = c64 ? rd(h + 40, 8, big) : rd(h + 32, 4, big);
	shnum = c64 ? rd(h + 60, 2, big) : rd(h + 48, 2, big);
	if (shnum || !shoff || pread(fd, s0, sizeof(s0), (off_t)shoff) != (ssize_t)sizeof(s0))
		return shnum;
	return c64 ? rd(s0 + 32, 8, big) : rd(s0 + 20, 4, big);
}

/* @path's symbols from @fd (-1: "[vdso]", our own), within @lim (NULL: none). */
static int load(struct rk_symtab *t, const char *path, int fd, const struct rk_symtab_limits *lim)
{
	void *vdso_copy = NULL;
	int err = 0;
	Elf *e;

	memset(t, 0, sizeof(*t));
	t->lim = lim;
	t->path = strdup(path);
	if (!t->path)
		return -ENOMEM;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	if (fd >= 0 && lim && lim->sections && section_count(fd) > lim->sections) {
		t->flags |= RK_SYMTAB_F_REFUSED;
		goto out;
	}
	e = fd < 0 ? own_vdso(&vdso_copy) : elf_begin(fd, ELF_C_READ, NULL);
	if (!e) {
		err = -EINVAL;
		goto out;
	}
	load_segments(t, e);
	if (build_id(e, t->build_id, sizeof(t->build_id), lim ? lim->section : 0))
		t->build_id[0] = '\0';
	/* What the note takes before its symbols: header, path, build id, segments. */
	t->cost = ALIGN8(HDR_SIZE_W + strlen(path) + 1 + strlen(t->build_id) / 2) +
		  (__u64)t->nseg * SEG_SIZE;
	if (has_symtab(e))
		load_syms(t, e, 1);
	else if (!t->build_id[0] || !load_debug_file(t, t->build_id))
		load_syms(t, e, 0);
	rk_symtab_sort(t->syms, &t->nsyms);
	elf_end(e);
out:
	free(vdso_copy);
	t->lim = NULL;
	return err;
}

int rk_symtab__load_fd_lim(struct rk_symtab *t, const char *path, int fd,
			   const struct rk_symtab_limits *lim)
{
	if (fd < 0) {
		memset(t, 0, sizeof(*t));
		return -EBADF;
	}
	return load(t, path, fd, lim);
}

int rk_symtab__load_file(struct rk_symtab *t, const char *path)
{
	return rk_symtab__load_file_lim(t, path, NULL);
}

int rk_symtab__load_file_lim(struct rk_symtab *t, const char *path,
			     const struct rk_symtab_limits *lim)
{
	int fd, err;

	if (!strcmp(path, "[vdso]"))
		return load(t, path, -1, lim);
	fd = rk_open_regular(path, 1, NULL);
	if (fd < 0) {
		memset(t, 0, sizeof(*t));
		t->path = strdup(path);
		return t->path ? -ENOENT : -ENOMEM;
	}
	err = load(t, path, fd, lim);
	close(fd);
	return err;
}

/* The build id's raw bytes from its hex. Return: how many. */
static size_t id_bytes(const char *hex, __u8 *out, size_t max)
{
	size_t n = 0;
	unsigned int b;

	while (n < max && hex[2 * n] && hex[2 * n + 1] && sscanf(hex + 2 * n, "%2x", &b) == 1)
		out[n++] = (__u8)b;
	return n;
}

static void put32(__u8 *p, __u32 v)
{
	memcpy(p, &v, 4);
}

static void put64(__u8 *p, __u64 v)
{
	memcpy(p, &v, 8);
}

long long rk_symtab__note(const struct rk_symtab *t, void **out)
{
	__u8 id[64], *p, *q;
	size_t idlen = id_bytes(t->build_id, id, sizeof(id)), plen = strlen(t->path) + 1, i;
	__u64 strsz = 0, off, total;

	for (i = 0; i < t->nsyms; i++)
		strsz += strlen(t->syms[i].name) + 1;
	off = ALIGN8(HDR_SIZE_W + plen + idlen);
	total = off + (__u64)t->nseg * SEG_SIZE + (__u64)t->nsyms * SYM_SIZE + strsz;
	if (total >= (1ull << 32))
		return -E2BIG;
	p = calloc(1, total);
	if (!p)
		return -ENOMEM;
	put32(p, RK_SYMTAB_VERSION);
	put32(p + 4, HDR_SIZE_W);
	put32(p + 8, (__u32)plen);
	put32(p + 12, (__u32)idlen);
	put32(p + 16, (__u32)t->nseg);
	put32(p + 20, (__u32)t->nsyms);
	put64(p + 24, strsz);
	put64(p + 32, t->flags);
	put64(p + 40, t->dropped);
	put64(p + 48, t->cut);
	memcpy(p + HDR_SIZE_W, t->path, plen);
	memcpy(p + HDR_SIZE_W + plen, id, idlen);
	q = p + off;
	for (i = 0; i < (size_t)t->nseg; i++, q += SEG_SIZE) {
		put64(q, t->seg[i].off);
		put64(q + 8, t->seg[i].vaddr);
		put64(q + 16, t->seg[i].len);
	}
	strsz = 0;
	for (i = 0; i < t->nsyms; i++, q += SYM_SIZE) {
		put64(q, t->syms[i].start);
		put64(q + 8, t->syms[i].size);
		put32(q + 16, (__u32)strsz);
		put32(q + 20, (__u32)t->syms[i].bind);
		strsz += strlen(t->syms[i].name) + 1;
	}
	for (i = 0; i < t->nsyms; i++) {
		size_t n = strlen(t->syms[i].name) + 1;

		memcpy(q, t->syms[i].name, n);
		q += n;
	}
	*out = p;
	return (long long)total;
}

#define BAD(msg)                  \
	do {                      \
		*why = (msg);     \
		err = -EBADMSG;   \
		goto out_release; \
	} while (0)

/* The header's counts, each checked against what @size leaves for it. */
static const char *check_header(const __u8 *p, size_t size, __u32 *plen, __u32 *idlen, __u32 *nseg,
				__u32 *nsyms, __u64 *strsz, __u64 *off)
{
	__u32 ver, hsz;
	__u64 need;

	if (size < HDR_SIZE)
		return "shorter than its header";
	memcpy(&ver, p, 4);
	memcpy(&hsz, p + 4, 4);
	memcpy(plen, p + 8, 4);
	memcpy(idlen, p + 12, 4);
	memcpy(nseg, p + 16, 4);
	memcpy(nsyms, p + 20, 4);
	memcpy(strsz, p + 24, 8);
	if (ver != RK_SYMTAB_VERSION)
		return "a symbol note of an unknown version";
	if (hsz < HDR_SIZE || hsz % 8 || hsz > size)
		return "header size out of the note";
	if (!*plen || *plen > 4096 || *idlen > 64 || *nseg > RK_SYMTAB_MAX_SEG ||
	    *nsyms > RK_SYMTAB_MAX_SYMS)
		return "counts beyond what a symbol note holds";
	*off = ALIGN8((__u64)hsz + *plen + *idlen);
	need = *off + (__u64)*nseg * SEG_SIZE + (__u64)*nsyms * SYM_SIZE;
	if (need > size || *strsz != size - need)
		return "tables do not fit the note";
	if (p[hsz + *plen - 1] || memchr(p + hsz, '\0', *plen - 1))
		return "path not one NUL-terminated string";
	if (*nsyms && (!*strsz || p[size - 1]))
		return "names not NUL-terminated";
	return NULL;
}

int rk_symtab__from_note(struct rk_symtab *t, const void *desc, size_t size, const char **why)
{
	const __u8 *p = desc, *q, *strtab;
	__u32 plen, idlen, nseg, nsyms, hsz, i;
	__u64 strsz, off;
	int err = 0;

	memset(t, 0, sizeof(*t));
	*why = check_header(p, size, &plen, &idlen, &nseg, &nsyms, &strsz, &off);
	if (*why)
		return -EBADMSG;
	memcpy(&hsz, p + 4, 4);
	/* What the writer's limits left out (a header of 40 bytes: nothing said). */
	memcpy(&t->flags, p + 32, 8);
	if (hsz >= HDR_SIZE_W) {
		memcpy(&t->dropped, p + 40, 8);
		memcpy(&t->cut, p + 48, 8);
	}
	t->path = strdup((const char *)p + hsz);
	if (!t->path)
		return -ENOMEM;
	for (i = 0; i < idlen; i++)
		snprintf(t->build_id + 2 * i, 3, "%02x", p[hsz + plen + i]);
	q = p + off;
	for (i = 0; i < nseg; i++, q += SEG_SIZE) {
		memcpy(&t->seg[i].off, q, 8);
		memcpy(&t->seg[i].vaddr, q + 8, 8);
		memcpy(&t->seg[i].len, q + 16, 8);
	}
	t->nseg = (int)nseg;
	strtab = p + size - strsz;
	for (i = 0; i < nsyms; i++, q += SYM_SIZE) {
		__u64 start, sz;
		__u32 name, bind;

		memcpy(&start, q, 8);
		memcpy(&sz, q + 8, 8);
		memcpy(&name, q + 16, 4);
		memcpy(&bind, q + 20, 4);
		/* strtab ends in a NUL (checked): every name in it is terminated. */
		if (name >= strsz)
			BAD("a symbol name out of the string table");
		if (add_sym(t, start, sz, (int)bind, (const char *)strtab + name)) {
			err = -ENOMEM;
			goto out_release;
		}
	}
	/* Not trusted to be sorted: lookups are binary searches. */
	rk_symtab_sort(t->syms, &t->nsyms);
	return 0;
out_release:
	rk_symtab__release(t);
	return err;
}

__u64 rk_symtab_vaddr(const struct rk_symtab *t, __u64 off)
{
	int k;

	for (k = 0; k < t->nseg; k++)
		if (off >= t->seg[k].off && off - t->seg[k].off < t->seg[k].len)
			return off - t->seg[k].off + t->seg[k].vaddr;
	return off;
}

const struct rk_sym *rk_symtab_find(const struct rk_symtab *t, __u64 a)
{
	const struct rk_sym *v = t->syms;
	size_t lo = 0, hi = t->nsyms;

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

void rk_symtab__release(struct rk_symtab *t)
{
	size_t i;

	for (i = 0; i < t->nsyms; i++)
		free(t->syms[i].name);
	free(t->syms);
	free(t->path);
	memset(t, 0, sizeof(*t));
}
