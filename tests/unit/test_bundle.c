// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The snapshot bundle: the cut at T, the buffer image, the symbol note, the file. */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bufile.h"
#include "bundle.h"
#include "craftelf.h"
#include "elfcore.h"
#include "pmu.h"
#include "shell.h"
#include "symtab.h"

static char dir[64];
static char path[160];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rk-bundle-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sched", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/sched/42", dir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(bundle, .init = setup, .fini = teardown);

/*
 * A sched-like record: header, seq, filler derived from seq (a torn record
 * shows as a filler that does not match), then the sched attr's sample_id
 * (pid, tid, time, cpu, res, id), whose time the cut reads. @size 16: no
 * room for a sample_id, so no time.
 */
struct trec {
	struct perf_event_header h;
	__u64 seq;
	__u64 w[30];
};

static size_t make_rec(struct trec *r, __u64 seq, __u64 time, size_t size)
{
	__u8 *end;
	size_t i, nfill;
	__u32 pid = 41, tid = 42;

	memset(r, 0xa5, sizeof(*r)); /* poison */
	r->h.type = PERF_RECORD_SWITCH;
	r->h.misc = 0;
	r->h.size = (__u16)size;
	r->seq = seq;
	if (size < 16 + 32)
		return size;
	nfill = (size - 16 - 32) / 8;
	for (i = 0; i < nfill; i++)
		r->w[i] = seq * 31 + i;
	end = (__u8 *)r + size - 32;
	memcpy(end, &pid, 4);
	memcpy(end + 4, &tid, 4);
	memcpy(end + 8, &time, 8);
	memset(end + 16, 0, 16);
	return size;
}

/* Is @h what make_rec() wrote for its seq (not torn)? */
static int rec_whole(const struct perf_event_header *h)
{
	const struct trec *r = (const void *)h;
	size_t i, nfill;

	if (h->size < 16 + 32)
		return 1;
	nfill = (h->size - 16u - 32u) / 8;
	for (i = 0; i < nfill; i++)
		if (r->w[i] != r->seq * 31 + i)
			return 0;
	return 1;
}

static struct rk_bufile *make(size_t data_size)
{
	struct rk_thread_ident id;
	struct rk_pmu_entry e;
	struct rk_bufile *bf;

	memset(&id, 0, sizeof(id));
	id.tid = 42;
	id.tgid = 41;
	memcpy(id.comm, "unit", 5);
	rk_pmu_sched_entry(&e);
	unlink(path);
	bf = rk_bufile__create(path, data_size, 0, &e, &id);
	cr_assert_not_null(bf, "create: %s", strerror(errno));
	return bf;
}

struct seen {
	__u64 seq[8192], time[8192];
	size_t n, torn;
	__u64 st;
};

static int seen_fn(const struct perf_event_header *h, void *ctx)
{
	struct seen *s = ctx;
	const struct trec *r = (const void *)h;

	if (!rec_whole(h))
		s->torn++;
	if (s->n < 8192) {
		s->seq[s->n] = r->seq;
		s->time[s->n] = rk_record_time(s->st, h);
		s->n++;
	}
	return 0;
}

/* The image's records, after checking it is a buffer any reader accepts. */
static void walk_image(void *img, size_t size, struct seen *s)
{
	struct rk_bufile bf;
	const char *why = NULL;

	memset(s, 0, sizeof(*s));
	cr_assert_eq(rk_bufile__from_mem(&bf, img, size, &why), 0, "image refused: %s", why);
	s->st = bf.pmu->attr.sample_type;
	cr_assert_eq(bf.pg->data_tail, 0);
	cr_assert_eq(rk_bufile__for_each(&bf, seen_fn, s), 0);
}

Test(bundle, cut_keeps_exactly_the_records_up_to_t)
{
	struct rk_bufile *bf = make(65536);
	struct rk_bundle_cut cut;
	struct trec r;
	struct seen s;
	size_t size, i;
	void *img;

	for (i = 0; i < 100; i++)
		cr_assert_eq(rk_bufile__write(bf, &r, make_rec(&r, i, 1000 * (i + 1), 64)), 0);
	/* T on a record's time: it is kept (<= T). */
	cr_assert_eq(rk_bundle_cut(bf, 50000, &img, &size, &cut), 0);
	cr_assert_eq(cut.kept, 50);
	cr_assert_eq(cut.after, 50);
	cr_assert_eq(cut.bytes, 50 * 64);
	cr_assert_eq(cut.corrupt, 0);
	/* The ring is cut down to what it holds: 3200 bytes fit a page. */
	cr_assert_eq(size, RK_PAGE_SIZE + 4096);
	walk_image(img, size, &s);
	cr_assert_eq(s.n, 50);
	for (i = 0; i < s.n; i++) {
		cr_assert_eq(s.seq[i], i);
		cr_assert_leq(s.time[i], 50000);
	}
	cr_assert_eq(((struct perf_event_mmap_page *)img)->data_head, 50 * 64);
	free(img);
	/* Before the first record: an empty, valid buffer. */
	cr_assert_eq(rk_bundle_cut(bf, 999, &img, &size, &cut), 0);
	cr_assert_eq(cut.kept, 0);
	walk_image(img, size, &s);
	cr_assert_eq(s.n, 0);
	free(img);
	rk_bufile__free(bf);
}

Test(bundle, cut_of_a_wrapped_ring_starts_at_its_oldest_record)
{
	struct rk_bufile *bf = make(4096);
	struct rk_bundle_cut cut;
	struct trec r;
	struct seen s, live = { 0 };
	size_t size, i, want = 0;
	void *img;

	/* 72-byte records do not divide 4096: some straddle the ring's end. */
	for (i = 0; i < 500; i++)
		rk_bufile__write(bf, &r, make_rec(&r, i, 10 * (i + 1), 72));
	cr_assert_gt(bf->ident->overwritten, 0);
	live.st = bf->pmu->attr.sample_type;
	cr_assert_eq(rk_bufile__for_each(bf, seen_fn, &live), 0);
	for (i = 0; i < live.n; i++)
		want += live.time[i] <= 4900;
	cr_assert_gt(want, 0);
	cr_assert_lt(want, live.n);
	cr_assert_eq(rk_bundle_cut(bf, 4900, &img, &size, &cut), 0);
	cr_assert_eq(cut.kept, want);
	walk_image(img, size, &s);
	cr_assert_eq(s.n, want);
	for (i = 0; i < s.n; i++) {
		cr_assert_eq(s.seq[i], live.seq[i], "record %zu", i);
		cr_assert_eq(s.torn, 0);
	}
	free(img);
	rk_bufile__free(bf);
}

Test(bundle, untimed_records_are_kept_by_position)
{
	struct rk_bufile *bf = make(4096);
	struct rk_bundle_cut cut;
	struct trec r;
	struct seen s;
	size_t size;
	void *img;

	/* timed 10, untimed, timed 20, untimed | timed 30 (after T), untimed. */
	rk_bufile__write(bf, &r, make_rec(&r, 0, 10, 64));
	rk_bufile__write(bf, &r, make_rec(&r, 1, 0, 16));
	rk_bufile__write(bf, &r, make_rec(&r, 2, 20, 64));
	rk_bufile__write(bf, &r, make_rec(&r, 3, 0, 16));
	rk_bufile__write(bf, &r, make_rec(&r, 4, 30, 64));
	rk_bufile__write(bf, &r, make_rec(&r, 5, 0, 16));
	cr_assert_eq(rk_bundle_cut(bf, 25, &img, &size, &cut), 0);
	cr_assert_eq(cut.kept, 4);
	cr_assert_eq(cut.after, 2);
	walk_image(img, size, &s);
	cr_assert_eq(s.n, 4);
	cr_assert_eq(s.seq[3], 3);
	free(img);
	rk_bufile__free(bf);
}

/* A writer lapping a 4 KiB ring as fast as it can: time = seq + 1. */
struct live {
	struct rk_bufile *bf;
	__u64 written;
	int stop;
};

static void *writer(void *arg)
{
	struct live *l = arg;
	struct trec r;
	__u64 seq;

	for (seq = 0; !__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE); seq++) {
		rk_bufile__write(l->bf, &r, make_rec(&r, seq, seq + 1, 64 + 8 * (seq % 16)));
		__atomic_store_n(&l->written, seq + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

Test(bundle, cut_concurrent_with_the_writer_never_keeps_a_torn_record)
{
	/* Not on the stack: a failed assert leaves the test while the writer still runs. */
	static struct live l;
	struct rk_bufile *ro;
	pthread_t th;
	int cuts = 0;

	l.bf = make(4096);
	ro = rk_bufile__open(path, NULL);
	cr_assert_not_null(ro);
	pthread_create(&th, NULL, writer, &l);
	while (cuts < 2000) {
		__u64 t = __atomic_load_n(&l.written, __ATOMIC_ACQUIRE);
		struct rk_bundle_cut cut;
		struct seen s;
		size_t size, i;
		void *img;

		if (!t) {
			sched_yield();
			continue;
		}
		cr_assert_eq(rk_bundle_cut(ro, t, &img, &size, &cut), 0);
		cr_assert_eq(cut.corrupt, 0);
		walk_image(img, size, &s);
		cr_assert_eq(s.torn, 0, "torn record kept");
		cr_assert_eq(s.n, cut.kept);
		for (i = 0; i < s.n; i++) {
			cr_assert_leq(s.time[i], t, "a record after T kept");
			if (i)
				cr_assert_eq(s.seq[i], s.seq[i - 1] + 1, "a gap inside the cut");
		}
		free(img);
		cuts++;
	}
	__atomic_store_n(&l.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	rk_bufile__free(ro);
	rk_bufile__free(l.bf);
}

static void sample_table(struct rk_symtab *t)
{
	memset(t, 0, sizeof(*t));
	t->path = strdup("/usr/lib/x/libfoo.so");
	snprintf(t->build_id, sizeof(t->build_id), "0123456789abcdef0123456789abcdef01234567");
	t->nseg = 2;
	t->seg[0].off = 0;
	t->seg[0].vaddr = 0;
	t->seg[0].len = 0x1000;
	t->seg[1].off = 0x1000;
	t->seg[1].vaddr = 0x401000;
	t->seg[1].len = 0x2000;
	t->syms = calloc(3, sizeof(*t->syms));
	t->capsyms = 3;
	t->syms[0] = (struct rk_sym){ 0x401000, 0x40, strdup("main"), 1, 0 };
	t->syms[1] = (struct rk_sym){ 0x401040, 0x20, strdup("helper"), 0, 1 };
	t->syms[2] = (struct rk_sym){ 0x402000, 0, strdup("tail_fn"), 1, 2 };
	t->nsyms = 3;
}

Test(bundle, symbol_note_round_trips)
{
	struct rk_symtab t, back;
	const struct rk_sym *s;
	const char *why = NULL;
	long long n;
	void *desc;

	sample_table(&t);
	n = rk_symtab__note(&t, &desc);
	cr_assert_gt(n, 0);
	cr_assert_eq(rk_symtab__from_note(&back, desc, (size_t)n, &why), 0, "%s", why);
	cr_assert_str_eq(back.path, t.path);
	cr_assert_str_eq(back.build_id, t.build_id);
	cr_assert_eq(back.nseg, 2);
	cr_assert_eq(back.nsyms, 3);
	cr_assert_eq(rk_symtab_vaddr(&back, 0x1050), 0x401050);
	s = rk_symtab_find(&back, rk_symtab_vaddr(&back, 0x1050));
	cr_assert_not_null(s);
	cr_assert_str_eq(s->name, "helper");
	cr_assert_null(rk_symtab_find(&back, 0x401060), "past helper's size: no symbol");
	s = rk_symtab_find(&back, 0x402100);
	cr_assert_not_null(s);
	cr_assert_str_eq(s->name, "tail_fn");
	rk_symtab__release(&back);
	rk_symtab__release(&t);
	free(desc);
}

static void expect_bad(const void *desc, size_t size, const char *what)
{
	struct rk_symtab t;
	const char *why = NULL;

	cr_assert_eq(rk_symtab__from_note(&t, desc, size, &why), -EBADMSG, "%s accepted", what);
	cr_assert_not_null(why, "%s: no reason given", what);
	cr_assert_null(t.path, "%s: memory kept after a refusal", what);
}

Test(bundle, crafted_symbol_notes_are_refused_with_a_reason)
{
	struct rk_symtab t;
	__u8 *desc, *bad;
	long long n;
	size_t len, symoff;
	__u32 v, hsz;

	sample_table(&t);
	n = rk_symtab__note(&t, (void **)&desc);
	cr_assert_gt(n, 0);
	len = (size_t)n;
	memcpy(&hsz, desc + 4, 4);
	cr_assert_eq(hsz, 56, "the header says what was trimmed");
	bad = malloc(len);
	/* Every truncation: too short for what the header says. */
	for (size_t k = 0; k < len; k++) {
		void *cut = malloc(k ? k : 1); /* exactly k bytes: ASan sees any read past them */

		memcpy(cut, desc, k);
		expect_bad(cut, k, "a truncated note");
		free(cut);
	}
#define CRAFT(off, val, what)               \
	do {                                \
		memcpy(bad, desc, len);     \
		v = (val);                  \
		memcpy(bad + (off), &v, 4); \
		expect_bad(bad, len, what); \
	} while (0)
	CRAFT(0, 2, "an unknown version");
	CRAFT(4, 1u << 30, "a header size past the note");
	CRAFT(8, 4097, "a path longer than a path");
	CRAFT(12, 65, "a build id longer than 64 bytes");
	CRAFT(16, 17, "more segments than a table holds");
	CRAFT(20, 0xffffffffu, "a symbol count beyond the note");
	CRAFT(20, 4, "a symbol count one too many");
	/* A name offset past the string table. */
	symoff = (size_t)((hsz + strlen(t.path) + 1 + 20 + 7) & ~7ul) + 2 * 24;
	CRAFT(symoff + 16, 0x7fffffff, "a name out of the string table");
	/* The path's NUL gone. */
	memcpy(bad, desc, len);
	bad[hsz + strlen(t.path)] = 'x';
	expect_bad(bad, len, "an unterminated path");
	/* The string table's last NUL gone. */
	memcpy(bad, desc, len);
	bad[len - 1] = 'x';
	expect_bad(bad, len, "an unterminated name");
#undef CRAFT
	free(bad);
	free(desc);
	rk_symtab__release(&t);
}

/* A session directory with one sched file: 10 records, times 100..1000. */
static void small_session(void)
{
	struct rk_bufile *bf = make(8192);
	struct trec r;
	int i;

	for (i = 0; i < 10; i++)
		rk_bufile__write(bf, &r, make_rec(&r, (__u64)i, 100 * (__u64)(i + 1), 64));
	rk_bufile__free(bf);
}

Test(bundle, written_bundle_reads_back_as_a_core)
{
	struct rk_bundle_opts o;
	struct rk_bundle_stats st;
	struct rk_core_bufs b;
	const char *why = NULL;
	char out[200], ex[200];
	struct stat sb;
	struct seen s;

	small_session();
	rk_bundle_opts_init(&o);
	snprintf(out, sizeof(out), "%s/b.rkb", dir);
	cr_assert_eq(rk_bundle_write(dir, 550, "unit\ntest", out, &o, &st), 0);
	cr_assert_eq(st.buffers, 1);
	cr_assert_eq(st.kept, 5);
	cr_assert_eq(st.after, 5);
	cr_assert_eq(st.settled, 1);
	cr_assert_eq(stat(out, &sb), 0);
	cr_assert_eq(sb.st_mode & 07777, 0600);
	cr_assert_eq(sb.st_size, (off_t)st.bytes);
	cr_assert_eq(rk_core_bufs__load(out, &b, &why), 0, "%s", why);
	cr_assert_eq(b.n, 1);
	cr_assert_null(b.v[0].why);
	cr_assert_str_eq(b.v[0].name, "sched/42");
	cr_assert_not_null(strstr(b.session, "bundle 1\n"));
	cr_assert_not_null(strstr(b.session, "snapshot time 550\n"));
	/* One line: the newline in the reason is not a new key. */
	cr_assert_not_null(strstr(b.session, "reason unit?test\n"), "%s", b.session);
	walk_image(b.v[0].mem, b.v[0].size, &s);
	cr_assert_eq(s.n, 5);
	snprintf(ex, sizeof(ex), "%s/ex", dir);
	cr_assert_eq(mkdir(ex, 0700), 0);
	cr_assert_eq(rk_core_bufs__extract(&b, ex), 1);
	rk_core_bufs__free(&b);
	/* Never over an existing file, unless forced. */
	cr_assert_eq(rk_bundle_write(dir, 550, NULL, out, &o, &st), -EEXIST);
	o.force = 1;
	cr_assert_eq(rk_bundle_write(dir, 1000, NULL, out, &o, &st), 0);
	cr_assert_eq(st.kept, 10);
	/* Only one process's: none of pid 7 here. */
	o.pid = 7;
	cr_assert_eq(rk_bundle_write(dir, 1000, NULL, out, &o, &st), -ENODATA);
	cr_assert_eq(stat(out, &sb), 0, "a failed write left the earlier bundle alone");
}

Test(bundle, truncated_bundle_is_refused_or_its_buffers_flagged)
{
	struct rk_bundle_opts o;
	struct rk_bundle_stats st;
	char out[200], cut[200];
	off_t sizes[] = { 0, 10, 64, 100, 120, 140, 4000, 4200, 8000 };
	size_t i;

	small_session();
	rk_bundle_opts_init(&o);
	snprintf(out, sizeof(out), "%s/b.rkb", dir);
	snprintf(cut, sizeof(cut), "%s/cut.rkb", dir);
	cr_assert_eq(rk_bundle_write(dir, 550, NULL, out, &o, &st), 0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct rk_core_bufs b;
		const char *why = NULL;
		char cmd[512];
		int r;

		snprintf(cmd, sizeof(cmd), "head -c %lld %s > %s", (long long)sizes[i], out, cut);
		cr_assert_eq(system(cmd), 0);
		r = rk_core_bufs__load(cut, &b, &why);
		if (r) {
			cr_assert_not_null(why, "refused without a reason at %lld bytes",
					   (long long)sizes[i]);
			continue;
		}
		/* Loaded: then no buffer may claim to be valid past the file's end. */
		for (size_t k = 0; k < b.n; k++)
			cr_assert(b.v[k].why || b.v[k].size <= (size_t)sizes[i]);
		rk_core_bufs__free(&b);
	}
}

/*
 * A mapped file whose 2,000 symbols all name one 5,000-byte string (24
 * bytes a symbol on disk, 10 MB of names to a naive reader): within the
 * bundle's limits its names are cut and, past the note's bytes, symbols
 * left out, both counted in the note; a section over its limit, or more
 * sections than a file may have, is not read at all. A reader of the file
 * itself (no limits) still gets everything.
 */
Test(bundle, a_mapped_files_symbols_are_loaded_within_the_limits)
{
	struct rk_symtab_limits lim;
	struct rk_symtab t, back;
	char elf[200];
	const char *why = NULL;
	long long n;
	void *desc;
	size_t i;
	int fd;

	snprintf(elf, sizeof(elf), "%s/crafted.so", dir);
	cr_assert_eq(craft_elf(elf, 2000, 5000), 0);
	cr_assert_eq(rk_symtab__load_file(&t, elf), 0);
	cr_assert_eq(t.nsyms, 2000, "no limits: every symbol");
	cr_assert_eq(strlen(t.syms[0].name), 5000);
	cr_assert_eq(t.flags, 0);
	rk_symtab__release(&t);

	rk_symtab_limits_bundle(&lim);
	lim.note = 1 << 20;
	cr_assert_eq(rk_symtab__load_file_lim(&t, elf, &lim), 0);
	cr_assert_eq(t.flags, RK_SYMTAB_F_DROPPED | RK_SYMTAB_F_CUT);
	cr_assert_eq(t.nsyms + t.dropped, 2000);
	cr_assert_eq(t.cut, t.nsyms);
	cr_assert_gt(t.nsyms, 900, "%zu kept", t.nsyms);
	for (i = 0; i < t.nsyms; i++)
		cr_assert_eq(strlen(t.syms[i].name), RK_SYMTAB_LIM_NAME - 1);
	n = rk_symtab__note(&t, &desc);
	cr_assert_gt(n, 0);
	cr_assert_leq(n, 1 << 20, "the note holds its bound: %lld bytes", n);
	cr_assert_eq(rk_symtab__from_note(&back, desc, (size_t)n, &why), 0, "%s", why);
	cr_assert_eq(back.flags, t.flags);
	cr_assert_eq(back.dropped, t.dropped);
	cr_assert_eq(back.cut, t.cut);
	rk_symtab__release(&back);
	rk_symtab__release(&t);
	free(desc);

	/* Its symbol section (48 KB) over a 4 KB limit: refused, said. */
	lim.section = 4096;
	cr_assert_eq(rk_symtab__load_file_lim(&t, elf, &lim), 0);
	cr_assert_eq(t.nsyms, 0);
	cr_assert_eq(t.flags, RK_SYMTAB_F_REFUSED);
	rk_symtab__release(&t);

	/* e_shnum 0: section 0's sh_size is the count, here a billion. */
	rk_symtab_limits_bundle(&lim);
	fd = open(elf, O_RDWR);
	cr_assert_geq(fd, 0);
	{
		Elf64_Ehdr eh;
		__u64 count = 1ull << 30;

		cr_assert_eq(pread(fd, &eh, sizeof(eh), 0), (ssize_t)sizeof(eh));
		eh.e_shnum = 0;
		cr_assert_eq(pwrite(fd, &eh, sizeof(eh), 0), (ssize_t)sizeof(eh));
		cr_assert_eq(pwrite(fd, &count, 8, (off_t)eh.e_shoff + 32), 8);
	}
	close(fd);
	cr_assert_eq(rk_symtab__load_file_lim(&t, elf, &lim), 0);
	cr_assert_eq(t.nsyms, 0);
	cr_assert_eq(t.flags, RK_SYMTAB_F_REFUSED);
	rk_symtab__release(&t);
}

/*
 * A sideband of process 41 whose MMAP2 record (time 50) names @file, with
 * its device and inode as the kernel gives them (a bundle takes the symbols
 * of the very file mapped only).
 */
static void put_sideband(const char *file)
{
	struct rk_thread_ident id = { .tid = 41, .tgid = 41 };
	union {
		struct perf_event_header h;
		__u8 b[512];
	} rec;
	struct rk_pmu_entry e;
	struct rk_bufile *bf;
	char sb[200];
	__u32 pid = 41, prot = 5;
	__u64 start = 0x400000, len = 0x10000, time = 50;
	size_t nlen = strlen(file) + 1, at = RK_ALIGN8(8 + 8 + 24 + 24 + 8 + nlen);
	struct stat st;
	__u32 maj, min;
	__u64 ino;

	snprintf(sb, sizeof(sb), "%s/sideband", dir);
	mkdir(sb, 0700);
	snprintf(sb, sizeof(sb), "%s/sideband/41", dir);
	rk_pmu_sched_entry(&e);
	bf = rk_bufile__create(sb, 4096, 0, &e, &id);
	cr_assert_not_null(bf);
	memset(&rec, 0, sizeof(rec));
	rec.h.type = PERF_RECORD_MMAP2;
	rec.h.size = (__u16)(at + 32);
	memcpy(rec.b + 8, &pid, 4);
	memcpy(rec.b + 12, &pid, 4);
	memcpy(rec.b + 16, &start, 8);
	memcpy(rec.b + 24, &len, 8);
	cr_assert_eq(stat(file, &st), 0);
	maj = major(st.st_dev);
	min = minor(st.st_dev);
	ino = st.st_ino;
	memcpy(rec.b + 40, &maj, 4);
	memcpy(rec.b + 44, &min, 4);
	memcpy(rec.b + 48, &ino, 8);
	memcpy(rec.b + 64, &prot, 4);
	memcpy(rec.b + 72, file, nlen);
	memcpy(rec.b + at, &pid, 4);
	memcpy(rec.b + at + 4, &pid, 4);
	memcpy(rec.b + at + 8, &time, 8);
	cr_assert_eq(rk_bufile__write(bf, rec.b, rec.h.size), 0);
	rk_bufile__free(bf);
}

/*
 * --snapshot-max-size for one bundle: a session of two threads, a sideband
 * and a mapped file whose symbols take 10 MB. Under a limit the bundle
 * stays under it, and its description says what it left out and trimmed
 * (the symbol table trimmed to the room left, not to its own limit); under
 * a limit no buffer fits, nothing is written (-EFBIG).
 */
Test(bundle, a_bundle_holds_its_size_limit_and_says_what_it_left_out)
{
	struct rk_bundle_opts o;
	struct rk_bundle_stats st;
	struct rk_core_bufs b;
	struct rk_symtab t;
	const char *why = NULL;
	char out[200], elf[200], line[300];
	struct stat sb;
	struct rk_bufile *bf;
	struct trec r;
	int i;

	small_session();
	snprintf(path, sizeof(path), "%s/sched/43", dir);
	bf = make(8192);
	for (i = 0; i < 10; i++)
		rk_bufile__write(bf, &r, make_rec(&r, (__u64)i, 100 * (__u64)(i + 1), 64));
	rk_bufile__free(bf);
	snprintf(elf, sizeof(elf), "%s/crafted.so", dir);
	cr_assert_eq(craft_elf(elf, 2000, 5000), 0);
	put_sideband(elf);
	rk_bundle_opts_init(&o);
	snprintf(out, sizeof(out), "%s/b.rkb", dir);

	/* Room for one buffer (16 KiB each, cut), the sideband and some symbols. */
	o.max_bytes = 100000;
	cr_assert_eq(rk_bundle_write(dir, 550, NULL, out, &o, &st), 0);
	cr_assert_eq(stat(out, &sb), 0);
	cr_assert_leq(sb.st_size, 100000, "%lld bytes", (long long)sb.st_size);
	cr_assert_eq(st.buffers, 2);
	cr_assert_eq(st.symtabs, 1);
	cr_assert_eq(st.trimmed, 1);
	cr_assert_eq(rk_core_bufs__load(out, &b, &why), 0, "%s", why);
	cr_assert_not_null(strstr(b.session, "size limit 100000\n"), "%s", b.session);
	snprintf(line, sizeof(line), "names cut: %s\n", elf);
	cr_assert_not_null(strstr(b.session, "symbols trimmed "), "%s", b.session);
	cr_assert_not_null(strstr(b.session, line), "%s", b.session);
	cr_assert_eq(b.nsymtabs, 1);
	cr_assert_eq(rk_symtab__from_note(&t, b.symtabs[0].data, b.symtabs[0].size, &why), 0);
	cr_assert_eq(t.flags, RK_SYMTAB_F_DROPPED | RK_SYMTAB_F_CUT);
	cr_assert_eq(t.nsyms + t.dropped, 2000);
	rk_symtab__release(&t);
	rk_core_bufs__free(&b);
	/* Showing a thread of it warns that it was trimmed. */
	if (getenv("RK_BIN")) {
		char cmd[600], *o1;

		snprintf(cmd, sizeof(cmd), "%s show --bundle %s 42 2>&1 >/dev/null",
			 getenv("RK_BIN"), out);
		o1 = sh_out(cmd, NULL);
		cr_assert_not_null(strstr(o1, "was trimmed to its limits"), "%s", o1);
		free(o1);
	}

	/* Room for one buffer only (8 KiB each): the other is left out, and the sideband. */
	o.force = 1;
	o.max_bytes = 20000;
	cr_assert_eq(rk_bundle_write(dir, 550, NULL, out, &o, &st), 0);
	cr_assert_eq(stat(out, &sb), 0);
	cr_assert_leq(sb.st_size, 20000, "%lld bytes", (long long)sb.st_size);
	cr_assert_eq(st.buffers, 1);
	cr_assert_eq(st.left_out, 2);
	cr_assert_eq(rk_core_bufs__load(out, &b, &why), 0, "%s", why);
	cr_assert_not_null(strstr(b.session, "left out buffers 1 sidebands 1 "), "%s", b.session);
	rk_core_bufs__free(&b);

	/* No room for any buffer: nothing written, the earlier bundle left alone. */
	o.max_bytes = 12000;
	cr_assert_eq(rk_bundle_write(dir, 550, NULL, out, &o, &st), -EFBIG);
	cr_assert_eq(stat(out, &sb), 0);
	cr_assert_leq(sb.st_size, 20000);
}

/* @src's bytes with the one at @off flipped, into @dst. */
static void flip_copy(const char *src, const char *dst, size_t off)
{
	char buf[1 << 16];
	FILE *f = fopen(src, "rb"), *g = fopen(dst, "wb");
	size_t n;

	cr_assert(f && g);
	n = fread(buf, 1, sizeof(buf), f);
	cr_assert_lt(off, n);
	buf[off] ^= 0x01;
	cr_assert_eq(fwrite(buf, 1, n, g), n);
	fclose(f);
	fclose(g);
}

/*
 * One bit flipped anywhere in a bundle (headers, a buffer's page 0 or its
 * records, the description, the checksums): every reader refuses it and
 * says what is damaged and where; `show --bundle F TID` prints that on
 * stderr, nothing on stdout, and exits 1 (it printed made-up tids and
 * times, or exited 1 saying nothing).
 */
Test(bundle, a_flipped_byte_anywhere_is_refused_saying_where)
{
	struct rk_bundle_opts o;
	struct rk_bundle_stats st;
	char out[200], bad[200], cmd[600];
	struct stat sb;
	size_t off, tried = 0;

	small_session();
	rk_bundle_opts_init(&o);
	snprintf(out, sizeof(out), "%s/b.rkb", dir);
	snprintf(bad, sizeof(bad), "%s/bad.rkb", dir);
	cr_assert_eq(rk_bundle_write(dir, 550, NULL, out, &o, &st), 0);
	cr_assert_eq(stat(out, &sb), 0);
	cr_assert_leq(sb.st_size, 1 << 16);
	/* Every 5th byte, and each of the last 128 (the checksum note and before it). */
	for (off = 0; off < (size_t)sb.st_size; off += off + 128 >= (size_t)sb.st_size ? 1 : 5) {
		struct rk_core_bufs b;
		const char *why = NULL;
		int r;

		flip_copy(out, bad, off);
		r = rk_core_bufs__load(bad, &b, &why);
		/* e_phnum 0 (byte 56): an ELF core with no notes, nothing read from it. */
		if (!r && !b.n && !b.session && !b.nsymtabs) {
			rk_core_bufs__free(&b);
			continue;
		}
		cr_assert_neq(r, 0, "a bit flipped at byte %zu was not seen", off);
		cr_assert_not_null(why, "byte %zu: refused without a reason", off);
		cr_assert(strstr(why, "byte") || strstr(why, "checksum note") ||
				  strstr(why, "ELF header"),
			  "byte %zu: the reason does not say where: %s", off, why);
		tried++;
	}
	cr_assert_gt(tried, 500);
	if (!getenv("RK_BIN")) {
		cr_log_warn("RK_BIN not set: show --bundle not checked (run through make unit)");
		return;
	}
	/* In the buffer's records, its page 0, the description: said, stdout empty, exit 1. */
	{
		const size_t offs[] = { 4300, 6711, 500, (size_t)sb.st_size - 200 };

		for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
			char *o1, *e1;
			int status;

			flip_copy(out, bad, offs[i]);
			snprintf(cmd, sizeof(cmd), "%s show --bundle %s 42 2>%s/err",
				 getenv("RK_BIN"), bad, dir);
			o1 = sh_out(cmd, &status);
			snprintf(cmd, sizeof(cmd), "cat %s/err", dir);
			e1 = sh_out(cmd, NULL);
			cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1,
				  "byte %zu: exit status %d", offs[i], status);
			cr_assert_str_eq(o1, "", "byte %zu: printed %s", offs[i], o1);
			cr_assert_not_null(strstr(e1, "damaged: bytes "), "byte %zu: %s", offs[i],
					   e1);
			free(o1);
			free(e1);
		}
	}
}

/*
 * A record whose header does not parse (size 13) in a session's file:
 * show prints the records before it, then says on stderr which record,
 * where in the ring and what its header says, and exits 1 (a bundle's
 * reader stopped there saying nothing).
 */
Test(bundle, show_says_where_a_record_does_not_parse)
{
	char cmd[600], *o1, *e1;
	struct rk_bufile *bf;
	struct trec r;
	__u16 bad = 13;
	int i, fd, status;

	snprintf(path, sizeof(path), "%s/root", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/root/s", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/root/s/sched", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/root/s/sched/42", dir);
	bf = make(8192);
	for (i = 0; i < 10; i++)
		rk_bufile__write(bf, &r, make_rec(&r, (__u64)i, 100 * (__u64)(i + 1), 64));
	rk_bufile__free(bf);
	/* The 4th record's size: at byte 6 of its header, 3 records of 64 into the ring. */
	fd = open(path, O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, &bad, 2, 4096 + 3 * 64 + 6), 2);
	close(fd);
	if (!getenv("RK_BIN")) {
		cr_log_warn("RK_BIN not set: show not checked (run through make unit)");
		return;
	}
	snprintf(cmd, sizeof(cmd), "%s show --root %s/root --session s 42 2>%s/err",
		 getenv("RK_BIN"), dir, dir);
	o1 = sh_out(cmd, &status);
	snprintf(cmd, sizeof(cmd), "cat %s/err", dir);
	e1 = sh_out(cmd, NULL);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "exit status %d", status);
	cr_assert_eq(count_of(o1, "PERF_RECORD_SWITCH"), 3, "%s", o1);
	cr_assert_not_null(strstr(e1, "corrupt: the record at ring position 192 "), "%s", e1);
	cr_assert_not_null(strstr(e1, "size 13"), "%s", e1);
	free(o1);
	free(e1);
}

/*
 * snapshot --max-size: the bundle ringkeeper snapshot writes holds it and
 * says so (two 8 KiB buffers under 20,000 bytes: one left out); none fits:
 * exit 1, said, nothing written; not a size: exit 2.
 */
Test(bundle, snapshot_max_size_holds_and_is_said)
{
	char cmd[700], out[200], *o1;
	struct rk_bufile *bf;
	struct stat sb;
	struct trec r;
	int i, k, status;

	for (k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/root", dir);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/root/s", dir);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/root/s/sched", dir);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/root/s/sched/%d", dir, 42 + k);
		bf = make(8192);
		for (i = 0; i < 10; i++)
			rk_bufile__write(bf, &r, make_rec(&r, (__u64)i, 100 * (__u64)(i + 1), 64));
		rk_bufile__free(bf);
	}
	if (!getenv("RK_BIN")) {
		cr_log_warn("RK_BIN not set: snapshot not checked (run through make unit)");
		return;
	}
	snprintf(out, sizeof(out), "%s/m.rkb", dir);
	snprintf(cmd, sizeof(cmd), "%s snapshot --root %s/root --max-size 20000 -o %s s 2>&1",
		 getenv("RK_BIN"), dir, out);
	o1 = sh_out(cmd, &status);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", o1);
	cr_assert_not_null(strstr(o1, "1 notes or mapped files left out"), "%s", o1);
	free(o1);
	cr_assert_eq(stat(out, &sb), 0);
	cr_assert_leq(sb.st_size, 20000);
	snprintf(cmd, sizeof(cmd), "%s show --bundle %s 2>&1", getenv("RK_BIN"), out);
	o1 = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(o1, "size limit 20000\n"), "%s", o1);
	cr_assert_not_null(strstr(o1, "left out buffers 1 "), "%s", o1);
	free(o1);
	snprintf(cmd, sizeof(cmd), "%s snapshot --root %s/root --max-size 10K -o %s/n.rkb s 2>&1",
		 getenv("RK_BIN"), dir, dir);
	o1 = sh_out(cmd, &status);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "%s", o1);
	cr_assert_not_null(strstr(o1, "fits --max-size 10240"), "%s", o1);
	free(o1);
	snprintf(cmd, sizeof(cmd), "%s/n.rkb", dir);
	cr_assert_neq(stat(cmd, &sb), 0, "a bundle was left behind");
	snprintf(cmd, sizeof(cmd), "%s snapshot --root %s/root --max-size lots s 2>&1",
		 getenv("RK_BIN"), dir);
	o1 = sh_out(cmd, &status);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2, "%s", o1);
	free(o1);
}
