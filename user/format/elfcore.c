// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * elfcore.c - add ringkeeper's notes to an ELF core as it streams through,
 * and find them again (see elfcore.h).
 *
 * Layout written, with n the original number of program headers and D the
 * size of what is inserted, rounded up to a page:
 *
 *   [ELF header][n + 1 program headers][section header 0, if we add one]
 *   [our notes][zeros up to D][the original core from its byte 64 + 56 n]
 *
 * Every original offset past its program header table moves by D: the
 * program headers' p_offset, e_shoff and the section headers' sh_offset
 * (patched as they stream past). With n + 1 >= PN_XNUM, e_phnum is
 * PN_XNUM and section header 0's sh_info holds the count, as the kernel
 * writes it.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "elfcore.h"
#include "util.h"

#define PAGE 4096u
/* More program headers than this in a core we stream: not a core we understand. */
#define MAX_PHDRS (1u << 22)
#define NOTE_NAMESZ sizeof(RK_NOTE_OWNER) /* with its NUL: 11 */
#define ALIGN4(x) (((x) + 3) & ~(__u64)3)

/* The reason of a corrupt core or a damaged bundle (it names offsets: no static string fits). */
static __thread char damage[400];

/* Read up to @len; fewer only at end of input. Return: bytes read, or -errno. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (__u8 *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Copy @in to its end. Return: bytes copied, or -errno. */
static ssize_t copy_rest(int in, int out)
{
	static __u8 buf[1 << 16];
	ssize_t total = 0;

	for (;;) {
		ssize_t n = read_full(in, buf, sizeof(buf));
		int err;

		if (n <= 0)
			return n < 0 ? n : total;
		err = rk_write_sparse(out, buf, (size_t)n);
		if (err)
			return err;
		total += n;
	}
}

/* Not ours to change: what was read so far, then the rest, unchanged. */
static ssize_t pass_through(int in, int out, const void *head, size_t len, int *augmented,
			    const char **why, const char *reason)
{
	ssize_t rest;
	int err;

	*augmented = 0;
	if (why)
		*why = reason;
	err = rk_write_sparse(out, head, len);
	if (err)
		return err;
	rest = copy_rest(in, out);
	return rest < 0 ? rest : (ssize_t)len + rest;
}

void rk_elfcore_ehdr(Elf64_Ehdr *eh)
{
	memset(eh, 0, sizeof(*eh));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_CORE;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
}

static int write_note(int out, const struct rk_core_note *nt);

static __u64 notes_size(const struct rk_core_note *notes, size_t n)
{
	__u64 sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += 12 + ALIGN4(NOTE_NAMESZ) + ALIGN4(notes[i].size);
	return sum;
}

__u64 rk_elfcore_note_size(const struct rk_core_note *nt)
{
	return notes_size(nt, 1);
}

int rk_elfcore_note_write(int out, const struct rk_core_note *nt)
{
	return write_note(out, nt);
}

/* The bytes write_note() lays out, in its order. */
__u32 rk_elfcore_note_crc(const struct rk_core_note *nt, __u32 crc)
{
	__u32 hdr[3] = { NOTE_NAMESZ, (__u32)nt->size, nt->type };
	char name[ALIGN4(NOTE_NAMESZ)] = RK_NOTE_OWNER;
	static const __u8 zero[4];
	uLong c = crc;

	c = crc32(c, (const Bytef *)hdr, sizeof(hdr));
	c = crc32(c, (const Bytef *)name, sizeof(name));
	c = crc32_z(c, nt->data, (z_size_t)nt->size);
	c = crc32(c, zero, (uInt)(ALIGN4(nt->size) - nt->size));
	return (__u32)c;
}

/* One note: header, owner, desc (from its file, zero-filled if it came up short), padding. */
static int write_note(int out, const struct rk_core_note *nt)
{
	static __u8 buf[1 << 16];
	__u32 hdr[3] = { NOTE_NAMESZ, (__u32)nt->size, nt->type };
	char name[ALIGN4(NOTE_NAMESZ)] = RK_NOTE_OWNER;
	__u64 done = 0, pad = ALIGN4(nt->size) - nt->size;
	int err;

	err = rk_write_sparse(out, hdr, sizeof(hdr));
	if (!err)
		err = rk_write_sparse(out, name, sizeof(name));
	if (err)
		return err;
	if (nt->fd < 0) {
		err = rk_write_sparse(out, nt->data, nt->size);
		done = nt->size;
	}
	while (!err && done < nt->size) {
		size_t len = nt->size - done < sizeof(buf) ? (size_t)(nt->size - done) :
							     sizeof(buf);
		ssize_t n = pread(nt->fd, buf, len, (off_t)done);

		if (n <= 0) {
			/* Shorter than planned: zeros keep every offset right. */
			memset(buf, 0, len);
			n = (ssize_t)len;
		}
		err = rk_write_sparse(out, buf, (size_t)n);
		done += (__u64)n;
	}
	memset(buf, 0, 4);
	return err ? err : rk_write_sparse(out, buf, pad);
}

struct plan {
	__u64 n, table_end, shift, notes_off, notes_bytes;
	int own_shdr, xnum;
	__u64 shoff, shnum; /* the original section header table, to patch as it streams past */
};

/*
 * Read the program headers (the count from e_phnum, or with PN_XNUM up to
 * the first byte any segment starts at, as the kernel writes them).
 * Return: the headers (malloc'd, after a copy of @eh), or NULL with *@len
 * the bytes read and *@reason why.
 */
static __u8 *read_head(int in, const Elf64_Ehdr *eh, size_t *len, const char **reason)
{
	size_t cap = sizeof(*eh) + 64 * sizeof(Elf64_Phdr), n = 0;
	__u64 min_off = UINT64_MAX;
	__u8 *head = malloc(cap);

	*len = sizeof(*eh);
	if (!head) {
		*reason = "out of memory";
		return NULL;
	}
	memcpy(head, eh, sizeof(*eh));
	for (;;) {
		Elf64_Phdr ph;
		ssize_t r;

		if (eh->e_phnum != PN_XNUM && n == eh->e_phnum)
			break;
		if (eh->e_phnum == PN_XNUM && sizeof(*eh) + n * sizeof(ph) >= min_off)
			break;
		if (n == MAX_PHDRS) {
			*reason = "too many program headers";
			return head;
		}
		if (*len + sizeof(ph) > cap) {
			__u8 *m = realloc(head, cap * 2);

			if (!m) {
				*reason = "out of memory";
				return head;
			}
			head = m;
			cap *= 2;
		}
		r = read_full(in, head + *len, sizeof(ph));
		if (r < 0 || (size_t)r < sizeof(ph)) {
			*len += r > 0 ? (size_t)r : 0;
			*reason = "truncated program header table";
			return head;
		}
		memcpy(&ph, head + *len, sizeof(ph));
		*len += sizeof(ph);
		n++;
		if (ph.p_filesz && ph.p_offset < min_off)
			min_off = ph.p_offset;
	}
	*reason = NULL;
	return head;
}

static const char *make_plan(const Elf64_Ehdr *eh, const __u8 *head, size_t len,
			     const struct rk_core_note *notes, size_t nnotes, struct plan *p)
{
	__u64 i, ins;

	memset(p, 0, sizeof(*p));
	p->n = (len - sizeof(*eh)) / sizeof(Elf64_Phdr);
	p->table_end = sizeof(*eh) + p->n * sizeof(Elf64_Phdr);
	for (i = 0; i < p->n; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, head + sizeof(*eh) + i * sizeof(ph), sizeof(ph));
		if (ph.p_filesz && ph.p_offset < p->table_end)
			return "a segment inside the program header table";
	}
	p->xnum = p->n + 1 >= PN_XNUM;
	p->own_shdr = p->xnum && !eh->e_shoff;
	if (eh->e_shoff) {
		if (eh->e_shoff < p->table_end || eh->e_shentsize != sizeof(Elf64_Shdr))
			return "section headers where they cannot be moved";
		p->shoff = eh->e_shoff;
		/* e_shnum 0 with PN_XNUM-style section counts: only header 0 is known. */
		p->shnum = eh->e_shnum ? eh->e_shnum : 1;
	}
	p->notes_bytes = notes_size(notes, nnotes);
	ins = sizeof(Elf64_Phdr) + (p->own_shdr ? sizeof(Elf64_Shdr) : 0) + p->notes_bytes;
	p->shift = (ins + PAGE - 1) / PAGE * PAGE;
	p->notes_off = p->table_end + sizeof(Elf64_Phdr) + (p->own_shdr ? sizeof(Elf64_Shdr) : 0);
	return NULL;
}

/* The new ELF header, program headers and (if ours) section header 0. */
static int write_headers(int out, const Elf64_Ehdr *eh, const __u8 *head, const struct plan *p)
{
	Elf64_Ehdr ne = *eh;
	Elf64_Phdr ph;
	__u64 i;
	int err;

	ne.e_phnum = p->xnum ? PN_XNUM : (Elf64_Half)(p->n + 1);
	if (p->own_shdr) {
		ne.e_shoff = p->table_end + sizeof(Elf64_Phdr);
		ne.e_shnum = 1;
		ne.e_shentsize = sizeof(Elf64_Shdr);
		ne.e_shstrndx = SHN_UNDEF;
	} else if (ne.e_shoff) {
		ne.e_shoff += p->shift;
	}
	err = rk_write_sparse(out, &ne, sizeof(ne));
	for (i = 0; !err && i < p->n; i++) {
		memcpy(&ph, head + sizeof(*eh) + i * sizeof(ph), sizeof(ph));
		if (ph.p_offset >= p->table_end)
			ph.p_offset += p->shift;
		err = rk_write_sparse(out, &ph, sizeof(ph));
	}
	if (err)
		return err;
	memset(&ph, 0, sizeof(ph));
	ph.p_type = PT_NOTE;
	ph.p_offset = p->notes_off;
	ph.p_filesz = p->notes_bytes;
	ph.p_align = 4;
	err = rk_write_sparse(out, &ph, sizeof(ph));
	if (!err && p->own_shdr) {
		Elf64_Shdr sh;

		memset(&sh, 0, sizeof(sh));
		sh.sh_info = (Elf64_Word)(p->n + 1);
		err = rk_write_sparse(out, &sh, sizeof(sh));
	}
	return err;
}

/* The section headers as they stream past: offsets moved, the PN_XNUM count. */
static int copy_shdrs(int in, int out, const struct plan *p)
{
	size_t len = (size_t)p->shnum * sizeof(Elf64_Shdr), i;
	Elf64_Shdr *sh = malloc(len);
	ssize_t r;
	int err;

	if (!sh)
		return -ENOMEM;
	r = read_full(in, sh, len);
	if (r < 0) {
		free(sh);
		return (int)r;
	}
	for (i = 0; i < (size_t)r / sizeof(*sh); i++) {
		if (sh[i].sh_offset >= p->table_end)
			sh[i].sh_offset += p->shift;
		if (!i && p->xnum)
			sh[i].sh_info = (Elf64_Word)(p->n + 1);
	}
	err = rk_write_sparse(out, sh, (size_t)r);
	free(sh);
	return err;
}

/* The original core after its program header table, section headers patched. */
static ssize_t copy_body(int in, int out, const struct plan *p)
{
	static __u8 buf[1 << 16];
	__u64 pos = p->table_end;
	ssize_t total = 0;

	for (;;) {
		size_t want = sizeof(buf);
		ssize_t n;
		int err;

		if (p->shoff && !p->own_shdr && pos == p->shoff) {
			err = copy_shdrs(in, out, p);
			if (err)
				return err;
			pos += p->shnum * sizeof(Elf64_Shdr);
			total += (ssize_t)(p->shnum * sizeof(Elf64_Shdr));
			continue;
		}
		if (p->shoff && !p->own_shdr && pos < p->shoff && p->shoff - pos < want)
			want = (size_t)(p->shoff - pos);
		n = read_full(in, buf, want);
		if (n <= 0)
			return n < 0 ? n : total;
		err = rk_write_sparse(out, buf, (size_t)n);
		if (err)
			return err;
		pos += (__u64)n;
		total += n;
	}
}

static ssize_t augment(int in, int out, const struct rk_core_note *notes, size_t nnotes,
		       int *augmented, const char **why)
{
	static const __u8 zeros[PAGE];
	const char *reason = NULL;
	Elf64_Ehdr eh;
	struct plan p;
	__u8 *head;
	size_t len, i;
	ssize_t r, body;
	__u64 pad;
	int err;

	r = read_full(in, &eh, sizeof(eh));
	if (r < 0)
		return r;
	if ((size_t)r < sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_type != ET_CORE || eh.e_phoff != sizeof(eh) || eh.e_ehsize != sizeof(eh) ||
	    eh.e_phentsize != sizeof(Elf64_Phdr))
		return pass_through(in, out, &eh, (size_t)r, augmented, why,
				    "not an ELF64 little-endian core with its program headers "
				    "after the ELF header");
	if (!nnotes)
		return pass_through(in, out, &eh, sizeof(eh), augmented, why, "no notes to add");
	head = read_head(in, &eh, &len, &reason);
	if (!head)
		return pass_through(in, out, &eh, len, augmented, why, reason);
	if (!reason)
		reason = make_plan(&eh, head, len, notes, nnotes, &p);
	if (reason) {
		r = pass_through(in, out, head, len, augmented, why, reason);
		free(head);
		return r;
	}
	err = write_headers(out, &eh, head, &p);
	free(head);
	for (i = 0; !err && i < nnotes; i++)
		err = write_note(out, &notes[i]);
	/* Zeros up to the shift, so every later offset moves by a page multiple. */
	pad = p.shift - (p.notes_off - p.table_end) - p.notes_bytes;
	while (!err && pad) {
		size_t n = pad < sizeof(zeros) ? (size_t)pad : sizeof(zeros);

		err = rk_write_sparse(out, zeros, n);
		pad -= n;
	}
	if (err)
		return err;
	body = copy_body(in, out, &p);
	if (body < 0)
		return body;
	*augmented = 1;
	if (why)
		*why = NULL;
	return (ssize_t)(p.table_end + p.shift) + body;
}

ssize_t rk_elfcore_augment(int in, int out, const struct rk_core_note *notes, size_t nnotes,
			   int *augmented, const char **why)
{
	ssize_t r = augment(in, out, notes, nnotes, augmented, why);
	struct stat sb;
	off_t end;

	/* Zero pages were seeked over (rk_write_sparse()): a trailing hole needs the size set. */
	if (r > 0 && !fstat(out, &sb) && S_ISREG(sb.st_mode)) {
		end = lseek(out, 0, SEEK_CUR);
		if (end < 0 || ftruncate(out, end))
			return -errno;
	}
	return r;
}

/*
 * Walk the notes of one PT_NOTE segment [p, end) of the file at @base; a
 * corrupt one is said in damage[] with where it is.
 */
static int walk_notes(const __u8 *base, const __u8 *p, const __u8 *end, rk_note_fn fn, void *ctx,
		      int *found)
{
	while ((size_t)(end - p) >= 12) {
		__u32 namesz, descsz, type;
		const __u8 *name, *desc;

		memcpy(&namesz, p, 4);
		memcpy(&descsz, p + 4, 4);
		memcpy(&type, p + 8, 4);
		name = p + 12;
		/* desc is computed only once inside the segment (no pointer past the map). */
		desc = ALIGN4((__u64)namesz) <= (__u64)(end - name) ? name + ALIGN4(namesz) : NULL;
		if (!desc || (__u64)descsz > (__u64)(end - desc)) {
			snprintf(damage, sizeof(damage),
				 "a corrupt note at byte %llu: its name (%u bytes) or desc (%u "
				 "bytes) runs past its segment's end at byte %llu",
				 (unsigned long long)(p - base), namesz, descsz,
				 (unsigned long long)(end - base));
			return -EINVAL;
		}
		if (namesz == NOTE_NAMESZ && !memcmp(name, RK_NOTE_OWNER, NOTE_NAMESZ)) {
			int ret = fn(type, desc, descsz, ctx);

			(*found)++;
			if (ret)
				return ret;
		}
		/* The last note's padding may be cut by the segment's end. */
		if (ALIGN4((__u64)descsz) >= (__u64)(end - desc))
			break;
		p = desc + ALIGN4(descsz);
	}
	return 0;
}

int rk_elfcore_for_each_note(const char *path, rk_note_fn fn, void *ctx, const char **why)
{
	const Elf64_Ehdr *eh;
	struct stat st;
	__u64 phnum, i;
	int fd, ret = 0, found = 0;
	__u8 *base;

	*why = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(*eh)) {
		close(fd);
		*why = "not a regular file of an ELF header's size";
		return -EINVAL;
	}
	base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return -errno;
	eh = (const Elf64_Ehdr *)base;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_type != ET_CORE || eh->e_phentsize != sizeof(Elf64_Phdr)) {
		*why = "not an ELF64 core (its ELF header, bytes 0 to 63, says otherwise)";
		ret = -EINVAL;
		goto out;
	}
	phnum = eh->e_phnum;
	if (phnum == PN_XNUM) {
		Elf64_Shdr sh0;

		if (!eh->e_shoff || (__u64)st.st_size < sizeof(sh0) ||
		    eh->e_shoff > (__u64)st.st_size - sizeof(sh0)) {
			*why = "PN_XNUM without a section header 0";
			ret = -EINVAL;
			goto out;
		}
		/* Wherever e_shoff says: not necessarily aligned. */
		memcpy(&sh0, base + eh->e_shoff, sizeof(sh0));
		phnum = sh0.sh_info;
	}
	if (eh->e_phoff > (__u64)st.st_size ||
	    phnum > ((__u64)st.st_size - eh->e_phoff) / sizeof(Elf64_Phdr)) {
		*why = "program headers out of the file (the ELF header's e_phoff or e_phnum)";
		ret = -EINVAL;
		goto out;
	}
	for (i = 0; i < phnum && !ret; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, base + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_NOTE)
			continue;
		if (ph.p_offset > (__u64)st.st_size ||
		    ph.p_filesz > (__u64)st.st_size - ph.p_offset) {
			snprintf(damage, sizeof(damage),
				 "a note segment out of the file (program header %llu at byte "
				 "%llu: offset %llu, size %llu, the file has %lld bytes)",
				 (unsigned long long)i,
				 (unsigned long long)(eh->e_phoff + i * sizeof(ph)),
				 (unsigned long long)ph.p_offset, (unsigned long long)ph.p_filesz,
				 (long long)st.st_size);
			*why = damage;
			ret = -EINVAL;
			break;
		}
		ret = walk_notes(base, base + ph.p_offset, base + ph.p_offset + ph.p_filesz, fn,
				 ctx, &found);
		if (ret == -EINVAL)
			*why = damage;
	}
out:
	munmap(base, (size_t)st.st_size);
	return ret ? ret : found;
}

/*
 * A bundle's symbol table, tracing data or checksums, copied (the core is
 * unmapped after the walk). Parsed by their readers; here only counted: at
 * most RK_CORE_MAX_BUFS tables, the first tracing data and checksums.
 */
static int keep_blob(struct rk_core_bufs *b, __u32 type, const void *desc, __u64 size)
{
	struct rk_core_blob *v, *dst = type == RK_NOTE_CHECKSUM ? &b->checksum : &b->tracedata;

	if (!size || (type != RK_NOTE_SYMTAB && dst->data))
		return 0;
	if (type == RK_NOTE_SYMTAB) {
		if (b->nsymtabs == RK_CORE_MAX_BUFS)
			return 0;
		v = realloc(b->symtabs, (b->nsymtabs + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		b->symtabs = v;
		dst = &v[b->nsymtabs];
	}
	dst->data = malloc(size);
	if (!dst->data)
		return -ENOMEM;
	memcpy(dst->data, desc, size);
	dst->size = (size_t)size;
	if (type == RK_NOTE_SYMTAB)
		b->nsymtabs++;
	return 0;
}

static int load_note(__u32 type, const void *desc, __u64 size, void *ctx)
{
	struct rk_core_bufs *b = ctx;
	struct rk_core_buf *v, *cb;
	size_t i;

	if (type == RK_NOTE_SESSION) {
		if (!b->session) {
			b->session = malloc(size + 1);
			if (!b->session)
				return -ENOMEM;
			memcpy(b->session, desc, size);
			b->session[size] = '\0';
		}
		return 0;
	}
	if (type == RK_NOTE_SYMTAB || type == RK_NOTE_TRACEDATA || type == RK_NOTE_CHECKSUM)
		return keep_blob(b, type, desc, size);
	if (type != RK_NOTE_BUFFER && type != RK_NOTE_SIDEBAND)
		return 0;
	if (b->n == RK_CORE_MAX_BUFS) {
		b->skipped++;
		return 0;
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;

		v = realloc(b->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		/* Moved: each buffer's pmu points at its own copy, inside the entry. */
		for (i = 0; v != b->v && i < b->n; i++)
			v[i].bf.pmu = &v[i].bf.pmu_copy;
		b->v = v;
		b->cap = cap;
	}
	cb = &b->v[b->n++];
	memset(cb, 0, sizeof(*cb));
	cb->type = type;
	cb->size = (size_t)size;
	/* No page 0: not a buffer, and not worth a page of memory each. */
	if (size < PAGE) {
		cb->why = "smaller than a page";
		return 0;
	}
	/* The desc is 4-byte aligned in the core: the buffer wants its own page. */
	if (posix_memalign(&cb->mem, PAGE, (size_t)size)) {
		cb->mem = NULL;
		cb->why = "out of memory";
		return 0;
	}
	memcpy(cb->mem, desc, size);
	if (rk_bufile__from_mem(&cb->bf, cb->mem, (size_t)size, &cb->why) && !cb->why)
		cb->why = "not a valid buffer";
	return 0;
}

/*
 * Name each buffer note from the session's "buffer N SOURCE/TID" lines:
 * N counts the RK_NOTE_BUFFER notes, so an index of them first (a crafted
 * core's lines cost one lookup each, not a walk).
 */
static void name_buffers(struct rk_core_bufs *b)
{
	const char *line = b->session;
	size_t *idx_of, nbuf = 0, i;

	idx_of = b->n ? malloc(b->n * sizeof(*idx_of)) : NULL;
	if (!idx_of)
		return;
	for (i = 0; i < b->n; i++)
		if (b->v[i].type == RK_NOTE_BUFFER)
			idx_of[nbuf++] = i;
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		unsigned long idx;
		char one[128], name[80];

		/*
		 * One line at a time, copied out: sscanf() on the rest of a
		 * crafted note would measure all of it each time (quadratic).
		 */
		if (len < sizeof(one) && !strncmp(line, "buffer ", 7)) {
			memcpy(one, line, len);
			one[len] = '\0';
			if (sscanf(one, "buffer %lu %79s", &idx, name) == 2 && idx < nbuf)
				snprintf(b->v[idx_of[idx]].name, sizeof(b->v[0].name), "%s", name);
		}
		line = nl ? nl + 1 : NULL;
	}
	free(idx_of);
}

/* What a checksummed range holds, for a reader told where the damage is. */
static const char *range_what(__u32 type)
{
	switch (type) {
	case 0:
		return "the ELF and program headers";
	case RK_NOTE_BUFFER:
		return "a thread's buffer";
	case RK_NOTE_SIDEBAND:
		return "a process's sideband";
	case RK_NOTE_SESSION:
		return "the description";
	case RK_NOTE_SYMTAB:
		return "a mapped file's symbol table";
	case RK_NOTE_TRACEDATA:
		return "the tracing data";
	}
	return "a note of an unknown type";
}

#define CSUM_ENTRY 24u

/*
 * The checksum note's ranges against the file's bytes (@base, @size): they
 * start at 0 and follow each other, and each one's CRC32 matches. Return:
 * NULL, or what is wrong and where.
 */
static const char *check_ranges(const __u8 *p, __u32 n, const __u8 *base, __u64 size)
{
	__u64 next = 0;
	__u32 i;

	for (i = 0; i < n; i++, p += CSUM_ENTRY) {
		__u64 off, len;
		__u32 crc, type;

		memcpy(&off, p, 8);
		memcpy(&len, p + 8, 8);
		memcpy(&crc, p + 16, 4);
		memcpy(&type, p + 20, 4);
		if (off != next || len > size || off > size - len)
			return "damaged: its checksum note's ranges do not follow each other "
			       "within the file";
		next = off + len;
		if ((__u32)crc32_z(crc32(0, NULL, 0), base + off, (z_size_t)len) != crc) {
			snprintf(damage, sizeof(damage),
				 "damaged: bytes %llu to %llu (range %u of %u: %s) do not match "
				 "the CRC32 it was written with: the file changed after it was "
				 "written (copy it again from where it was made)",
				 (unsigned long long)off, (unsigned long long)(next - 1), i + 1, n,
				 range_what(type));
			return damage;
		}
	}
	return NULL;
}

/*
 * The checksum note, the file's last bytes: its CRC32 (its last 4 bytes)
 * is of its note header and owner, then of its desc before it, so every
 * byte of the file is checked. Return: NULL, or what is wrong.
 */
static const char *check_self(const __u8 *p, size_t size, const __u8 *base, __u64 fsize)
{
	const __u8 *note = base + fsize - size - 24;
	__u32 crc;

	if (memcmp(note + 24, p, size))
		return "damaged: its checksum note is not its last bytes";
	memcpy(&crc, p + size - 4, 4);
	if ((__u32)crc32(crc32(0, NULL, 0), note, (uInt)(24 + size - 4)) != crc)
		return "damaged: its checksum note (its last bytes) does not match its own CRC32";
	return NULL;
}

/*
 * A bundle against its checksum note (docs/format.md): u32 version (1),
 * u32 count, count x {u64 offset, u64 size, u32 crc32, u32 note type},
 * then the CRC32 of the note's header, owner and those bytes; the note is
 * the file's last bytes. Return: 0, or -EBADMSG with *@why.
 */
static int verify(const char *path, const struct rk_core_bufs *b, const char **why)
{
	const __u8 *p = b->checksum.data;
	size_t size = b->checksum.size;
	__u32 ver, n;
	struct stat st;
	__u8 *base;
	int fd;

	if (!p) {
		/* A bundle that says it has checksums, without them: its last note is damaged. */
		if (b->session && !strncmp(b->session, "bundle ", 7) &&
		    strstr(b->session, "\nchecksum crc32\n")) {
			*why = "damaged: its checksum note (the last one) is missing or not "
			       "readable, though its description says it has one";
			return -EBADMSG;
		}
		return 0;
	}
	if (size < 12) {
		*why = "damaged: its checksum note is shorter than its header";
		return -EBADMSG;
	}
	memcpy(&ver, p, 4);
	memcpy(&n, p + 4, 4);
	if (ver != 1 || n > (size - 12) / CSUM_ENTRY || size != 12 + (size_t)n * CSUM_ENTRY) {
		*why = "damaged: its checksum note is not one (its version or its size)";
		return -EBADMSG;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || (__u64)st.st_size < size + 24) {
		close(fd);
		*why = "damaged: its checksum note is not its last bytes";
		return -EBADMSG;
	}
	base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return -errno;
	*why = check_self(p, size, base, (__u64)st.st_size);
	if (!*why)
		*why = check_ranges(p + 8, n, base, (__u64)st.st_size);
	munmap(base, (size_t)st.st_size);
	return *why ? -EBADMSG : 0;
}

int rk_core_bufs__load(const char *path, struct rk_core_bufs *b, const char **why)
{
	int r;

	memset(b, 0, sizeof(*b));
	r = rk_elfcore_for_each_note(path, load_note, b, why);
	if (r >= 0)
		r = verify(path, b, why);
	if (r < 0) {
		rk_core_bufs__free(b);
		return r;
	}
	name_buffers(b);
	return 0;
}

/* SOURCE/TID as a session names it, from a hostile core: or nothing. */
static int safe_name(const char *name, char *src, size_t len, unsigned long *tid)
{
	const char *slash = strchr(name, '/');
	size_t n = slash ? (size_t)(slash - name) : 0, i;
	char *end;

	if (!slash || !n || n >= len || !slash[1])
		return 0;
	for (i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-",
			    name[i]))
			return 0;
	memcpy(src, name, n);
	src[n] = '\0';
	if (!strcmp(src, ".") || !strcmp(src, ".."))
		return 0;
	*tid = strtoul(slash + 1, &end, 10);
	return !*end && *tid;
}

static int write_buffer(const char *dir, const char *src, unsigned long id, const void *mem,
			size_t size)
{
	char path[PATH_MAX];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, src);
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s/%lu", dir, src, id);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = rk_write_all(fd, mem, size);
	if (close(fd) && !err)
		err = -errno;
	return err;
}

/* @data as @dir/@name (a bundle's tracing data, a symbol table). */
static int write_blob(const char *dir, const char *name, const struct rk_core_blob *blob)
{
	char path[PATH_MAX];
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = rk_write_all(fd, blob->data, blob->size);
	if (close(fd) && !err)
		err = -errno;
	return err;
}

/* A bundle's tracing data and symbol tables, where the readers look for them. */
static int extract_blobs(const struct rk_core_bufs *b, const char *dir)
{
	char name[64], sub[PATH_MAX];
	size_t i;
	int err = 0;

	if (b->tracedata.data)
		err = write_blob(dir, "tracing_data", &b->tracedata);
	if (err || !b->nsymtabs)
		return err;
	snprintf(sub, sizeof(sub), "%s/symtab", dir);
	if (mkdir(sub, 0700))
		return -errno;
	for (i = 0; !err && i < b->nsymtabs; i++) {
		snprintf(name, sizeof(name), "symtab/%zu", i);
		err = write_blob(dir, name, &b->symtabs[i]);
	}
	return err;
}

int rk_core_bufs__extract(const struct rk_core_bufs *b, const char *dir)
{
	size_t i;
	int n = 0, err;

	/* First: a buffer note named symtab/N or tracing_data/N then finds its place taken. */
	err = extract_blobs(b, dir);
	if (err)
		return err;

	for (i = 0; i < b->n; i++) {
		const struct rk_core_buf *cb = &b->v[i];
		char src[64];
		unsigned long id;

		if (cb->why)
			continue;
		if (cb->type == RK_NOTE_SIDEBAND) {
			snprintf(src, sizeof(src), "sideband");
			id = cb->bf.ident->tgid;
		} else if (!safe_name(cb->name, src, sizeof(src), &id)) {
			/* Unnamed (or a name we will not use): by its identity. */
			snprintf(src, sizeof(src), "%s",
				 cb->bf.pmu->attr.context_switch ? "sched" : "event");
			id = cb->bf.ident->tid;
		}
		err = write_buffer(dir, src, id, cb->mem, cb->size);
		if (err == -EEXIST || err == -ENOTDIR)
			continue; /* two notes of the same name: the first wins */
		if (err)
			return err;
		n++;
	}
	return n;
}

void rk_core_bufs__free(struct rk_core_bufs *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		free(b->v[i].mem);
	free(b->v);
	free(b->session);
	for (i = 0; i < b->nsymtabs; i++)
		free(b->symtabs[i].data);
	free(b->symtabs);
	free(b->tracedata.data);
	free(b->checksum.data);
	memset(b, 0, sizeof(*b));
}
