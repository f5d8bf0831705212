// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_elfcore.c - ringkeeper's notes in ELF cores: a real core (gcore)
 * augmented through a pipe stays readable by gdb, readelf and eu-readelf,
 * and gives its buffers back byte for byte; PN_XNUM cores; anything else
 * passes through unchanged.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bufile.h"
#include "elfcore.h"
#include "pmu.h"
#include "shell.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rk-elfcore-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
}

TestSuite(elfcore, .init = setup, .fini = teardown);

/* Feed @path into a pipe from a child, as the kernel feeds a core_pattern handler. */
static int pipe_from(const char *path, pid_t *feeder)
{
	int p[2];

	cr_assert_eq(pipe(p), 0);
	*feeder = fork();
	cr_assert_geq(*feeder, 0);
	if (!*feeder) {
		close(p[0]);
		dup2(p[1], 1);
		execlp("cat", "cat", path, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	return p[0];
}

static char *slurp_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *b;
	long n;

	cr_assert_not_null(f, "%s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	cr_assert_not_null(b);
	cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	b[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* Run a shell command, its stdout in a malloc'd string. */
struct found {
	__u32 type[8];
	const void *desc[8];
	__u64 size[8];
	char copy[8][16384];
	int n;
};

static int on_note(__u32 type, const void *desc, __u64 size, void *ctx)
{
	struct found *f = ctx;

	if (f->n < 8) {
		f->type[f->n] = type;
		f->size[f->n] = size;
		memcpy(f->copy[f->n], desc, size < 16384 ? size : 16384);
		f->n++;
	}
	return 0;
}

static void make_buffer(const char *path, __u32 tid)
{
	struct rk_thread_ident id = { .tid = tid, .tgid = tid, .comm = "victim" };
	struct {
		struct perf_event_header h;
		__u32 pid, tid;
		__u64 time;
		__u32 cpu, res;
		__u64 id;
	} sw = { { PERF_RECORD_SWITCH, 0, sizeof(sw) }, tid, tid, 0, 0, 0, RK_SCHED_ID };
	struct rk_pmu_entry e;
	struct rk_bufile *bf;
	int i;

	rk_pmu_sched_entry(&e);
	bf = rk_bufile__create(path, 8192, 0, &e, &id);
	cr_assert_not_null(bf, "%s: %s", path, strerror(errno));
	for (i = 0; i < 50; i++) {
		sw.time = (__u64)i;
		cr_assert_eq(rk_bufile__write(bf, &sw, sizeof(sw)), 0);
	}
	rk_bufile__free(bf);
}

Test(elfcore, a_real_core_keeps_working_and_gives_the_buffers_back)
{
	char core[128], out[128], b0[128], b1[128], cmd[512], *orig_bt, *aug_bt, *s;
	const char *exe = "/bin/sleep";
	const char *why = NULL, *session = "session test\nbuffer 0 sched/100\nbuffer 1 sched/101\n";
	struct rk_core_note notes[3];
	struct found f = { 0 };
	size_t len0, len1, lin, lout;
	pid_t victim, feeder;
	int in, fd, aug = -1;
	ssize_t n;
	char *d0, *d1;

	if (system("command -v gcore >/dev/null 2>&1"))
		cr_skip_test("no gcore (gdb) here to make a real core: install gdb (make deps)");
	/* A small real process (not a fork of this one: under ASan that maps terabytes). */
	victim = fork();
	cr_assert_geq(victim, 0);
	if (!victim) {
		execl(exe, "sleep", "1000", (char *)NULL);
		_exit(127);
	}
	usleep(100000); /* sleep(1) has exec'd: gcore attaches to it, not to our fork */
	snprintf(core, sizeof(core), "%s/core", dir);
	snprintf(cmd, sizeof(cmd), "gcore -o %s %d >/dev/null 2>&1 && mv %s.%d %s", core, victim,
		 core, victim, core);
	cr_assert_eq(system(cmd), 0, "gcore failed");
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);

	snprintf(b0, sizeof(b0), "%s/b0", dir);
	snprintf(b1, sizeof(b1), "%s/b1", dir);
	make_buffer(b0, 100);
	make_buffer(b1, 101);
	d0 = slurp_file(b0, &len0);
	d1 = slurp_file(b1, &len1);
	notes[0] = (struct rk_core_note){ RK_NOTE_BUFFER, open(b0, O_RDONLY), NULL, len0 };
	notes[1] = (struct rk_core_note){ RK_NOTE_BUFFER, open(b1, O_RDONLY), NULL, len1 };
	notes[2] = (struct rk_core_note){ RK_NOTE_SESSION, -1, session, strlen(session) };

	snprintf(out, sizeof(out), "%s/core.rk", dir);
	in = pipe_from(core, &feeder);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	n = rk_elfcore_augment(in, fd, notes, 3, &aug, &why);
	close(in);
	close(fd);
	close(notes[0].fd);
	close(notes[1].fd);
	waitpid(feeder, NULL, 0);
	cr_assert_gt(n, 0, "%s", strerror((int)-n));
	cr_assert_eq(aug, 1, "not augmented: %s", why ? why : "?");
	free(slurp_file(core, &lin));
	free(slurp_file(out, &lout));
	cr_assert_eq((size_t)n, lout);
	cr_assert_eq((lout - lin) % 4096, 0, "everything after the headers moved by pages");
	cr_assert_gt(lout, lin + len0 + len1);

	/* Our reader: every buffer back, byte for byte, then the session note. */
	cr_assert_eq(rk_elfcore_for_each_note(out, on_note, &f, &why), 3, "%s", why ? why : "");
	cr_assert_eq(f.type[0], RK_NOTE_BUFFER);
	cr_assert_eq(f.size[0], len0);
	cr_assert_eq(memcmp(f.copy[0], d0, len0), 0);
	cr_assert_eq(memcmp(f.copy[1], d1, len1), 0);
	cr_assert_eq(f.type[2], RK_NOTE_SESSION);
	{
		struct rk_bufile bf;
		const char *msg = NULL;

		cr_assert_eq(rk_bufile__from_mem(&bf, f.copy[1], len1, &msg), 0, "%s", msg);
		cr_assert_eq(bf.ident->tid, 101);
	}
	/* The original core has none of ours. */
	memset(&f, 0, sizeof(f));
	cr_assert_eq(rk_elfcore_for_each_note(core, on_note, &f, &why), 0);

	/* Other readers: binutils, elfutils, gdb. */
	snprintf(cmd, sizeof(cmd), "readelf -n %s 2>&1", out);
	s = sh_out(cmd, NULL);
	cr_assert_eq(count_of(s, "RINGKEEPER"), 3, "readelf -n:\n%s", s);
	cr_assert_geq(count_of(s, "CORE"), 1, "the kernel-style notes are still there:\n%s", s);
	free(s);
	/*
	 * eu-readelf takes the notes from SHT_NOTE sections when a core has
	 * section headers, as gcore's do: it is checked on a kernel-style core
	 * (kernel_style_core_in_eu_readelf), which is what a core_pattern
	 * handler gets.
	 */
	snprintf(cmd, sizeof(cmd),
		 "gdb -batch -nx -ex 'info threads' -ex bt %s %s 2>&1 | grep -E '^#|^\\*'", exe,
		 core);
	orig_bt = sh_out(cmd, NULL);
	snprintf(cmd, sizeof(cmd),
		 "gdb -batch -nx -ex 'info threads' -ex bt %s %s 2>&1 | grep -E '^#|^\\*'", exe,
		 out);
	aug_bt = sh_out(cmd, NULL);
	cr_assert_gt(strlen(orig_bt), 0, "gdb read nothing from the original core");
	cr_assert_str_eq(aug_bt, orig_bt, "gdb on the augmented core differs");
	free(orig_bt);
	free(aug_bt);

	/* From the core alone: the list, then one thread's history. */
	if (getenv("RK_BIN")) {
		snprintf(cmd, sizeof(cmd), "%s show --core %s 2>&1", getenv("RK_BIN"), out);
		s = sh_out(cmd, NULL);
		cr_assert_not_null(strstr(s, "2 ringkeeper buffers"), "%s", s);
		cr_assert_not_null(strstr(s, "sched/100"), "%s", s);
		cr_assert_not_null(strstr(s, "sched/101"), "%s", s);
		free(s);
		snprintf(cmd, sizeof(cmd), "%s show --core %s 101 2>&1", getenv("RK_BIN"), out);
		s = sh_out(cmd, NULL);
		cr_assert_eq(count_of(s, "PERF_RECORD_SWITCH"), 50, "%s", s);
		cr_assert_not_null(strstr(s, "# 50 records"), "%s", s);
		free(s);
		snprintf(cmd, sizeof(cmd), "%s show --core %s 7 2>&1", getenv("RK_BIN"), out);
		s = sh_out(cmd, NULL);
		cr_assert_not_null(strstr(s, "has no sched buffer of tid 7"), "%s", s);
		free(s);
	} else {
		cr_log_warn("RK_BIN not set: show --core not checked (run through make unit)");
	}
	free(d0);
	free(d1);
}

/*
 * A synthetic core with @nph program headers (PN_XNUM when @xnum, the count
 * in section header 0, as the kernel writes it): a PT_NOTE then PT_LOADs.
 */
static void make_core(const char *path, unsigned int nph, int xnum)
{
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph = { 0 };
	Elf64_Shdr sh = { 0 };
	__u64 table_end = sizeof(eh) + (__u64)nph * sizeof(ph),
	      data = (table_end + 4095) / 4096 * 4096;
	const char note[] = "\x05\0\0\0\x04\0\0\0\x01\0\0\0CORE\0\0\0\0abcd";
	char page[4096];
	FILE *f = fopen(path, "we");
	unsigned int i;

	cr_assert_not_null(f);
	rk_elfcore_ehdr(&eh);
	eh.e_phnum = xnum ? PN_XNUM : (Elf64_Half)nph;
	if (xnum) {
		eh.e_shoff = data + 4096;
		eh.e_shentsize = sizeof(sh);
		eh.e_shnum = 1;
	}
	fwrite(&eh, sizeof(eh), 1, f);
	ph.p_type = PT_NOTE;
	ph.p_offset = table_end;
	ph.p_filesz = sizeof(note) - 1;
	fwrite(&ph, sizeof(ph), 1, f);
	for (i = 1; i < nph; i++) {
		memset(&ph, 0, sizeof(ph));
		ph.p_type = PT_LOAD;
		ph.p_offset = data;
		ph.p_vaddr = 0x400000 + (__u64)i * 4096;
		ph.p_filesz = i == 1 ? 4096 : 0;
		ph.p_memsz = 4096;
		ph.p_align = 4096;
		fwrite(&ph, sizeof(ph), 1, f);
	}
	fwrite(note, sizeof(note) - 1, 1, f);
	memset(page, 0, sizeof(page));
	fwrite(page, data - table_end - (sizeof(note) - 1), 1, f);
	memset(page, 0x77, sizeof(page));
	fwrite(page, sizeof(page), 1, f);
	if (xnum) {
		sh.sh_info = nph;
		fwrite(&sh, sizeof(sh), 1, f);
	}
	cr_assert_eq(fclose(f), 0);
}

/* Augment @core into @out through a pipe, as a core_pattern handler gets it. */
static void augment_file(const char *core, const char *out, const struct rk_core_note *nt, size_t n)
{
	const char *why = NULL;
	pid_t feeder;
	int in, fd, aug = -1;

	in = pipe_from(core, &feeder);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_gt(rk_elfcore_augment(in, fd, nt, n, &aug, &why), 0);
	close(in);
	close(fd);
	waitpid(feeder, NULL, 0);
	cr_assert_eq(aug, 1, "%s", why ? why : "");
}

static void check_xnum(unsigned int nph, int xnum)
{
	char core[128], out[128];
	const char *why = NULL, *desc = "hello";
	struct rk_core_note nt = { RK_NOTE_SESSION, -1, desc, 5 };
	struct found f = { 0 };
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh0;
	Elf64_Phdr ph;
	size_t len;
	char *b;

	snprintf(core, sizeof(core), "%s/x.core", dir);
	snprintf(out, sizeof(out), "%s/x.core.rk", dir);
	make_core(core, nph, xnum);
	augment_file(core, out, &nt, 1);
	b = slurp_file(out, &len);
	eh = (const Elf64_Ehdr *)b;
	cr_assert_eq(eh->e_phnum, PN_XNUM);
	sh0 = (const Elf64_Shdr *)(b + eh->e_shoff);
	cr_assert_eq(sh0->sh_info, nph + 1, "the count in section header 0");
	/* The PT_LOAD's data moved by a page multiple and is intact. */
	memcpy(&ph, b + sizeof(*eh) + sizeof(ph), sizeof(ph));
	cr_assert_eq(ph.p_type, PT_LOAD);
	cr_assert_eq(ph.p_offset % 4096, 0);
	cr_assert_eq((unsigned char)b[ph.p_offset], 0x77);
	cr_assert_eq((unsigned char)b[ph.p_offset + 4095], 0x77);
	cr_assert_eq(rk_elfcore_for_each_note(out, on_note, &f, &why), 1, "%s", why ? why : "");
	cr_assert_eq(f.size[0], 5);
	cr_assert_eq(memcmp(f.copy[0], "hello", 5), 0);
	free(b);
}

Test(elfcore, pn_xnum_core_keeps_its_count_in_section_header_0)
{
	check_xnum(70000, 1);
}

Test(elfcore, one_more_header_crosses_into_pn_xnum)
{
	check_xnum(PN_XNUM - 1, 0);
}

/* The kernel's cores have no section headers: elfutils reads the notes from the segments. */
Test(elfcore, kernel_style_core_in_eu_readelf)
{
	char core[128], out[128], cmd[300], *s;
	struct rk_core_note nt = { RK_NOTE_SESSION, -1, "hello", 5 };

	if (system("command -v eu-readelf >/dev/null 2>&1"))
		cr_skip_test("eu-readelf (elfutils) not installed: make deps installs it");
	snprintf(core, sizeof(core), "%s/k.core", dir);
	snprintf(out, sizeof(out), "%s/k.core.rk", dir);
	make_core(core, 4, 0);
	augment_file(core, out, &nt, 1);
	snprintf(cmd, sizeof(cmd), "eu-readelf -n %s 2>&1", out);
	s = sh_out(cmd, NULL);
	cr_assert_eq(count_of(s, "RINGKEEPER"), 1, "eu-readelf -n:\n%s", s);
	cr_assert_eq(count_of(s, "CORE"), 1, "the original note:\n%s", s);
	free(s);
}

/* Never lose a core: what cannot be augmented comes out byte for byte. */
Test(elfcore, anything_else_passes_through_unchanged)
{
	const char *inputs[] = { "/bin/true", "/etc/hostname", "/dev/null" };
	struct rk_core_note nt = { RK_NOTE_SESSION, -1, "x", 1 };
	size_t i;

	for (i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		char out[128], cmd[300];
		const char *why = NULL;
		pid_t feeder;
		int in, fd, aug = -1;

		if (access(inputs[i], R_OK))
			continue;
		snprintf(out, sizeof(out), "%s/out%zu", dir, i);
		in = pipe_from(inputs[i], &feeder);
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		cr_assert_geq(rk_elfcore_augment(in, fd, &nt, 1, &aug, &why), 0);
		close(in);
		close(fd);
		waitpid(feeder, NULL, 0);
		cr_assert_eq(aug, 0, "%s was augmented", inputs[i]);
		cr_assert_not_null(why);
		snprintf(cmd, sizeof(cmd), "cmp -s %s %s", inputs[i], out);
		cr_assert_eq(system(cmd), 0, "%s changed on its way through", inputs[i]);
	}
}

/* A core is hostile: a session note naming a buffer ../../x writes nothing outside. */
Test(elfcore, extract_refuses_names_that_leave_the_directory)
{
	char core[128], out[128], buf[128], ex[128], path[300];
	const char *session = "session x\nbuffer 0 ../../evil/1\n", *why = NULL;
	struct rk_core_note nt[2];
	struct rk_core_bufs b;
	struct stat st;
	size_t len;
	int bfd;

	snprintf(core, sizeof(core), "%s/h.core", dir);
	snprintf(out, sizeof(out), "%s/h.core.rk", dir);
	snprintf(buf, sizeof(buf), "%s/b", dir);
	snprintf(ex, sizeof(ex), "%s/a/b", dir);
	make_core(core, 4, 0);
	make_buffer(buf, 77);
	free(slurp_file(buf, &len));
	nt[0] = (struct rk_core_note){ RK_NOTE_SESSION, -1, session, strlen(session) };
	bfd = open(buf, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(bfd, 0);
	nt[1] = (struct rk_core_note){ RK_NOTE_BUFFER, bfd, NULL, len };
	augment_file(core, out, nt, 2);
	close(bfd);
	cr_assert_eq(rk_core_bufs__load(out, &b, &why), 0, "%s", why ? why : "");
	cr_assert_eq(b.n, 1);
	snprintf(path, sizeof(path), "%s/a", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(mkdir(ex, 0700), 0);
	cr_assert_eq(rk_core_bufs__extract(&b, ex), 1);
	snprintf(path, sizeof(path), "%s/evil", dir);
	cr_assert_neq(stat(path, &st), 0, "a core's name escaped the directory");
	snprintf(path, sizeof(path), "%s/sched/77", ex);
	cr_assert_eq(stat(path, &st), 0, "named by its identity instead");
	rk_core_bufs__free(&b);
}

/*
 * Many buffers in one core (a 200-thread process): every loaded buffer's
 * attr is its own, wherever the table of buffers moved while loading.
 */
Test(elfcore, many_buffers_each_keep_their_own_attr)
{
	enum { N = 300 };
	char core[128], out[128], buf[128];
	static struct rk_core_note nt[N];
	struct rk_core_bufs b;
	const char *why = NULL;
	size_t len, i;
	int bfd;

	snprintf(core, sizeof(core), "%s/m.core", dir);
	snprintf(out, sizeof(out), "%s/m.core.rk", dir);
	snprintf(buf, sizeof(buf), "%s/b", dir);
	make_core(core, 4, 0);
	make_buffer(buf, 77);
	free(slurp_file(buf, &len));
	bfd = open(buf, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(bfd, 0);
	for (i = 0; i < N; i++)
		nt[i] = (struct rk_core_note){ RK_NOTE_BUFFER, bfd, NULL, len };
	augment_file(core, out, nt, N);
	close(bfd);
	cr_assert_eq(rk_core_bufs__load(out, &b, &why), 0, "%s", why ? why : "");
	cr_assert_eq(b.n, N);
	for (i = 0; i < N; i++) {
		cr_assert_null(b.v[i].why, "buffer %zu: %s", i, b.v[i].why);
		cr_assert_eq(b.v[i].bf.pmu, &b.v[i].bf.pmu_copy, "buffer %zu: a stale attr", i);
		cr_assert_eq(b.v[i].bf.pmu->attr.context_switch, 1);
	}
	rk_core_bufs__free(&b);
}

/*
 * A crafted core of 16.8 MB with 700,000 empty RINGKEEPER buffer notes:
 * the reader takes RK_CORE_MAX_BUFS of them and counts the rest, and an
 * empty note costs no page of its own (the reader once took 3.5 GB).
 */
Test(elfcore, a_core_of_700k_tiny_notes_is_read_within_bounds)
{
	const size_t nnotes = 700000, note = 12 + 12; /* header, "RINGKEEPER\0" padded, no desc */
	struct rk_core_bufs b;
	struct rusage ru0, ru1;
	const char *why = NULL;
	Elf64_Ehdr eh;
	Elf64_Phdr ph = { .p_type = PT_NOTE };
	char path[128];
	__u8 *notes, *p;
	size_t i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/many.core", dir);
	rk_elfcore_ehdr(&eh);
	eh.e_phnum = 1;
	ph.p_offset = sizeof(eh) + sizeof(ph);
	ph.p_filesz = nnotes * note;
	notes = calloc(nnotes, note);
	cr_assert_not_null(notes);
	for (i = 0, p = notes; i < nnotes; i++, p += note) {
		__u32 hdr[3] = { 11, 0, RK_NOTE_BUFFER };

		memcpy(p, hdr, sizeof(hdr));
		memcpy(p + 12, RK_NOTE_OWNER, 11);
	}
	f = fopen(path, "we");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(&eh, sizeof(eh), 1, f), 1);
	cr_assert_eq(fwrite(&ph, sizeof(ph), 1, f), 1);
	cr_assert_eq(fwrite(notes, note, nnotes, f), nnotes);
	cr_assert_eq(fclose(f), 0);
	free(notes);
	getrusage(RUSAGE_SELF, &ru0);
	cr_assert_eq(rk_core_bufs__load(path, &b, &why), 0, "%s", why ? why : "");
	getrusage(RUSAGE_SELF, &ru1);
	cr_assert_eq(b.n, RK_CORE_MAX_BUFS);
	cr_assert_eq(b.skipped, nnotes - RK_CORE_MAX_BUFS);
	for (i = 0; i < b.n; i++)
		cr_assert_not_null(b.v[i].why, "note %zu taken as a buffer", i);
	/* The entries (~1 KB each) and nothing per note: well under 256 MB more. */
	cr_assert_lt(ru1.ru_maxrss - ru0.ru_maxrss, 256 * 1024, "the reader grew by %ld KB",
		     ru1.ru_maxrss - ru0.ru_maxrss);
	rk_core_bufs__free(&b);
	unlink(path);
}

/*
 * A crafted core whose session note has 400,000 "buffer K" lines: the
 * names are read in one pass (it took 25.6 s in every reader, sscanf()
 * measuring the rest of the note at every line), and the lines that name
 * no buffer change nothing.
 */
Test(elfcore, a_session_note_of_400k_lines_is_read_in_one_pass, .timeout = 10)
{
	const size_t nlines = 400000;
	char core[128], out[128], buf[128];
	struct rk_core_note nt[3];
	struct rk_core_bufs b;
	const char *why = NULL;
	size_t len, i, off = 0, cap = nlines * 32;
	char *session = malloc(cap);
	int bfd;

	cr_assert_not_null(session);
	for (i = 0; i < nlines; i++)
		off += (size_t)snprintf(session + off, cap - off, "buffer %zu sched/%zu\n",
					i ? i + 1 : 0, 100 + i);
	snprintf(core, sizeof(core), "%s/l.core", dir);
	snprintf(out, sizeof(out), "%s/l.core.rk", dir);
	snprintf(buf, sizeof(buf), "%s/b", dir);
	make_core(core, 4, 0);
	make_buffer(buf, 77);
	free(slurp_file(buf, &len));
	bfd = open(buf, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(bfd, 0);
	nt[0] = (struct rk_core_note){ RK_NOTE_SESSION, -1, session, off };
	nt[1] = (struct rk_core_note){ RK_NOTE_BUFFER, bfd, NULL, len };
	nt[2] = (struct rk_core_note){ RK_NOTE_BUFFER, bfd, NULL, len };
	augment_file(core, out, nt, 3);
	close(bfd);
	cr_assert_eq(rk_core_bufs__load(out, &b, &why), 0, "%s", why ? why : "");
	cr_assert_eq(b.n, 2);
	cr_assert_str_eq(b.v[0].name, "sched/100");
	cr_assert_str_eq(b.v[1].name, "", "a line naming buffer 2 of 2 named buffer 1");
	rk_core_bufs__free(&b);
	free(session);
}
