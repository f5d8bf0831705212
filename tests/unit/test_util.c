// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <criterion/criterion.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "coredump.h"
#include "session.h"
#include "util.h"

Test(util, parse_size)
{
	uint64_t v = 0xdead;

	cr_assert_eq(rk_parse_size("16", 1, &v), 0);
	cr_assert_eq(v, 16 * 4096, "bare number = pages for -m");
	cr_assert_eq(rk_parse_size("16", 0, &v), 0);
	cr_assert_eq(v, 16);
	cr_assert_eq(rk_parse_size("64K", 1, &v), 0);
	cr_assert_eq(v, 65536);
	cr_assert_eq(rk_parse_size("2MiB", 1, &v), 0);
	cr_assert_eq(v, 2u << 20);
	cr_assert_eq(rk_parse_size("1g", 1, &v), 0);
	cr_assert_eq(v, 1u << 30);
	cr_assert_eq(rk_parse_size("", 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size(NULL, 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size("-1", 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size("12X", 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size("1KK", 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size("99999999999999999999", 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size("17179869184G", 1, &v), -EINVAL, "overflow");
}

Test(util, fmt_size)
{
	char b[32];

	cr_assert_str_eq(rk_fmt_size(516 * 1024, b, sizeof(b)), "516 KiB");
	cr_assert_str_eq(rk_fmt_size(1 << 20, b, sizeof(b)), "1 MiB");
	cr_assert_str_eq(rk_fmt_size(100, b, sizeof(b)), "100 B");
	cr_assert_str_eq(rk_fmt_size(0, b, sizeof(b)), "0 B");
}

/* Stat files only grow: one written before the AUX and benchmark counters still reads. */
Test(session, older_shorter_stat_files_read_with_new_fields_zero)
{
	char dir[] = "/tmp/rk-stat-XXXXXX", path[64];
	struct rk_session_stat st, got;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, RK_STAT_FILE);
	memset(&st, 0, sizeof(st));
	st.magic = RK_STAT_MAGIC;
	st.version = RK_STAT_VERSION;
	st.size = (__u32)RK_STAT_SIZE_V1;
	st.threads = 7;
	st.aux_bytes = 99; /* beyond the old size: must not be read */
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fwrite(&st, 1, RK_STAT_SIZE_V1, f);
	fclose(f);
	cr_assert_eq(rk_session_stat_read(dir, &got), 0);
	cr_assert_eq(got.threads, 7);
	cr_assert_eq(got.aux_bytes, 0);
	cr_assert_eq(got.loader_cpu_ns, 0);
	/* The size field must match what is there, and not exceed what we know. */
	st.size = sizeof(st);
	f = fopen(path, "w");
	fwrite(&st, 1, RK_STAT_SIZE_V1, f);
	fclose(f);
	cr_assert_eq(rk_session_stat_read(dir, &got), -EBADMSG, "size says more than the file has");
	st.size = sizeof(st) + 8;
	f = fopen(path, "w");
	fwrite(&st, 1, sizeof(st), f);
	fclose(f);
	cr_assert_eq(rk_session_stat_read(dir, &got), -EBADMSG, "a newer, larger layout");
	unlink(path);
	rmdir(dir);
}

/*
 * A crashes line round-trips whatever a comm or core path holds (spaces,
 * newlines, backslashes, bytes >= 0x80), and lines that are not ours are
 * refused, not half-read.
 */
Test(util, crash_line_round_trip_and_hostile_lines)
{
	struct rk_crash_line in = { .pid = 123, .tid = 125, .sig = 11, .time = 1764777600 };
	struct rk_crash_line out;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(in.comm, sizeof(in.comm), "a b\n\\x41\xff");
	snprintf(in.core, sizeof(in.core), "/tmp/core dir/core.a b");
	f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	rk_crash_line_write(f, &in);
	fclose(f);
	cr_assert_eq(strchr(buf, '\n'), buf + len - 1, "one line: %s", buf);
	cr_assert_not_null(strstr(buf, "signal 11 SIGSEGV"), "%s", buf);
	cr_assert_eq(rk_crash_line_parse(buf, &out), 0, "%s", buf);
	cr_assert_eq(out.pid, 123);
	cr_assert_eq(out.tid, 125);
	cr_assert_eq(out.sig, 11);
	cr_assert_eq(out.time, 1764777600);
	cr_assert_str_eq(out.comm, in.comm);
	cr_assert_str_eq(out.core, in.core);
	free(buf);

	/* No core: "none". */
	in.core[0] = '\0';
	buf = NULL;
	f = open_memstream(&buf, &len);
	rk_crash_line_write(f, &in);
	fclose(f);
	cr_assert_eq(rk_crash_line_parse(buf, &out), 0);
	cr_assert_str_eq(out.core, "none");
	free(buf);

	cr_assert_eq(rk_crash_line_parse("", &out), -EINVAL);
	cr_assert_eq(rk_crash_line_parse("pid 1 tid 2 signal 11 SIGSEGV time 5 comm x\n", &out),
		     -EINVAL, "no core field");
	cr_assert_eq(rk_crash_line_parse("pid 1 tid 2 signal 11 S time 5 comm x\\x0 core y", &out),
		     -EINVAL, "a cut escape");
	cr_assert_eq(rk_crash_line_parse("pid 1 tid 2 signal 11 S time 5 comm \\x00 core y", &out),
		     -EINVAL, "an escaped NUL");
	{
		char longc[200], line[300];

		memset(longc, 'c', sizeof(longc));
		snprintf(longc + 150, 50, " core /x");
		snprintf(line, sizeof(line), "pid 1 tid 2 signal 11 S time 5 comm %s", longc);
		cr_assert_eq(rk_crash_line_parse(line, &out), -EINVAL, "a comm longer than ours");
	}
}

/*
 * rk_write_sparse(): the same bytes as a plain write, zero pages as holes
 * (fewer blocks allocated), unaligned writes and a trailing hole included.
 */
Test(util, write_sparse_same_bytes_fewer_blocks)
{
	char path[] = "/tmp/rk-sparse-XXXXXX";
	const size_t len = 64 * 4096 + 100;
	unsigned char *buf = calloc(1, len), *back = malloc(len);
	struct stat sb;
	size_t off;
	int fd;

	cr_assert(buf && back);
	memset(buf, 0xaa, 50); /* data, then zero pages */
	memset(buf + 10 * 4096 + 7, 0xbb, 3); /* one page of data in the middle */
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	/* In uneven pieces, as a stream arrives. */
	for (off = 0; off < len; off += 777) {
		size_t n = len - off < 777 ? len - off : 777;

		cr_assert_eq(rk_write_sparse(fd, buf + off, n), 0);
	}
	cr_assert_eq(ftruncate(fd, (off_t)len), 0, "the caller sets the size");
	cr_assert_eq(fstat(fd, &sb), 0);
	cr_assert_eq((size_t)sb.st_size, len);
	cr_assert_eq(pread(fd, back, len, 0), (ssize_t)len);
	cr_assert_eq(memcmp(buf, back, len), 0, "the bytes read back differ");
	cr_assert_lt(sb.st_blocks * 512, 16 * 4096, "zero pages took space: %lld blocks",
		     (long long)sb.st_blocks);
	/* Not a regular file: a plain write. */
	{
		int p[2];
		char c = 0;

		cr_assert_eq(pipe(p), 0);
		cr_assert_eq(rk_write_sparse(p[1], &c, 1), 0);
		cr_assert_eq(read(p[0], &c, 1), 1);
		close(p[0]);
		close(p[1]);
	}
	close(fd);
	free(buf);
	free(back);
}

static char *summary_of(const struct rk_session_stat *st, int full)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	if (full)
		rk_session_print(f, "s", st, 0, NULL);
	else
		rk_session_summary(f, "s", "/dev/shm/ringkeeper/s", st);
	fclose(f);
	return buf;
}

/*
 * record's closing lines: short, a line per counter that signals a problem
 * with what to do; stat's counters in human units, those that cannot apply
 * left out.
 */
Test(util, record_summary_names_problems_and_stat_hides_what_does_not_apply)
{
	struct rk_session_stat st = { 0 };
	char *s;

	st.threads = 9;
	st.records = 1704;
	st.budget = 8192;
	st.locked_peak = 8192;
	st.loader_cpu_ns = 25300000;
	s = summary_of(&st, 0);
	cr_assert_not_null(strstr(s, "session s: 9 threads, 1704 records"), "%s", s);
	cr_assert_not_null(strstr(s, "locked at most 8 KiB of a 8 KiB budget; loader CPU 25.3 ms"),
			   "%s", s);
	cr_assert_not_null(strstr(s, "nothing dropped or lost"), "%s", s);
	cr_assert_not_null(strstr(s, "every counter: ringkeeper stat s"), "%s", s);
	cr_assert_null(strstr(s, "signals (BPF)"), "raw counters in the summary:\n%s", s);
	free(s);

	st.pins = 70;
	st.refusals = 30;
	st.bpf_drops = 5;
	st.not_traced = 2;
	s = summary_of(&st, 0);
	cr_assert_not_null(strstr(s, "30% of pins refused by the budget"), "%s", s);
	cr_assert_not_null(strstr(s, "raise --mlock-kb or lower -m"), "%s", s);
	cr_assert_not_null(strstr(s, "5 signals dropped by the BPF side"), "%s", s);
	cr_assert_not_null(strstr(s, "raise --ringbuf-size"), "%s", s);
	cr_assert_not_null(strstr(s, "2 threads not traced"), "%s", s);
	cr_assert_null(strstr(s, "nothing dropped"), "%s", s);
	free(s);
	/* A few refusals are the budget at work: no hint. */
	st.pins = 1000;
	st.refusals = 20;
	s = summary_of(&st, 0);
	cr_assert_null(strstr(s, "of pins refused"), "%s", s);
	free(s);

	/* stat: no AUX lines without intel_pt, no perf ring lines without -e; units. */
	s = summary_of(&st, 1);
	cr_assert_null(strstr(s, "AUX"), "%s", s);
	cr_assert_null(strstr(s, "perf records"), "%s", s);
	cr_assert_not_null(strstr(s, "  loader_cpu_ns "), "the JSON key first:\n%s", s);
	cr_assert_not_null(strstr(s, " 25.3 ms  loader CPU time\n"), "%s", s);
	free(s);
	st.aux_size = 65536;
	st.nev = 1;
	s = summary_of(&st, 1);
	cr_assert_not_null(strstr(s, "AUX records"), "%s", s);
	cr_assert_not_null(strstr(s, "perf records drained"), "%s", s);
	free(s);
}

/* Every counter of loss (RK_LOSSES): where it is in the stat file, and its key. */
static const struct loss_field {
	size_t off;
	const char *key;
} loss_fields[] = {
#define K(field, what, todo) { offsetof(struct rk_session_stat, field), #field },
	RK_LOSSES(K)
#undef K
};
#define NLOSS (sizeof(loss_fields) / sizeof(loss_fields[0]))

/*
 * The end line says "nothing dropped or lost" only when no counter of loss
 * says otherwise: each one alone takes it away and is named with its count
 * (record --offcpu's stack drops said nothing: issue 48).
 */
Test(session, end_line_names_every_loss_counter)
{
	struct rk_session_stat st;
	char want[64], *s;
	size_t i;

	cr_assert_geq(NLOSS, 15, "a loss counter left out of RK_LOSSES");
	for (i = 0; i < NLOSS; i++) {
		__u64 v = 5948 + i;

		memset(&st, 0, sizeof(st));
		memcpy((char *)&st + loss_fields[i].off, &v, sizeof(v));
		s = summary_of(&st, 0);
		cr_assert_null(strstr(s, "nothing dropped"), "%s alone:\n%s", loss_fields[i].key,
			       s);
		snprintf(want, sizeof(want), "ringkeeper: %llu ", (unsigned long long)v);
		cr_assert_not_null(strstr(s, want), "%s alone:\n%s", loss_fields[i].key, s);
		snprintf(want, sizeof(want), "(stat: %s)", loss_fields[i].key);
		cr_assert_not_null(strstr(s, want), "%s alone:\n%s", loss_fields[i].key, s);
		free(s);
	}
	memset(&st, 0, sizeof(st));
	st.stack_drops = 5948;
	s = summary_of(&st, 0);
	cr_assert_not_null(strstr(s, "5948 off-CPU stacks not taken"), "%s", s);
	free(s);
	/* Not losses, but dropped or not written all the same: not "nothing dropped". */
	memset(&st, 0, sizeof(st));
	st.triggers_dropped = 1;
	s = summary_of(&st, 0);
	cr_assert_null(strstr(s, "nothing dropped"), "%s", s);
	free(s);
}

/* A session note's loss lines, written and read back; what readers print of them. */
Test(session, loss_note_round_trip_and_what_readers_say)
{
	struct rk_session_stat st = { 0 };
	struct rk_loss l, back, two;
	char note[2048], *s = NULL, text[4200];
	size_t len = 0;
	FILE *f;

	st.bpf_drops = 6200000;
	st.stack_drops = 5948;
	st.records = 99; /* not a loss */
	rk_loss_from_stat(&l, &st);
	cr_assert_eq(rk_loss_count(&l), 2);
	cr_assert_gt(rk_loss_note(&l, note, sizeof(note)), 0);
	cr_assert_str_eq(note, "losses 2\nloss bpf_drops 6200000\nloss stack_drops 5948\n");
	cr_assert_eq(rk_loss_note(&l, note, 12), -ENOSPC);
	/* Between other lines; unknown keys and junk ignored. */
	snprintf(text, sizeof(text),
		 "bundle 1\nsession s\nlosses 2\nloss bpf_drops 6200000\n"
		 "loss stack_drops 5948\nloss nosuch 7\nloss bpf_drops x\n"
		 "buffer 0 sched/1\n");
	rk_loss_parse_note(&back, text);
	cr_assert(back.known);
	cr_assert_eq(back.v[RK_LOSS_bpf_drops], 6200000);
	cr_assert_eq(back.v[RK_LOSS_stack_drops], 5948);
	cr_assert_eq(rk_loss_count(&back), 2);
	/* Two sessions' lines in one core: summed. */
	snprintf(text, sizeof(text),
		 "session a\nlosses 1\nloss lost 3\nsession b\nlosses 1\nloss lost 4\n");
	rk_loss_parse_note(&two, text);
	cr_assert_eq(two.v[RK_LOSS_lost], 7);
	/* An older writer: no "losses" line, not known. */
	rk_loss_parse_note(&two, "bundle 1\nsession s\n");
	cr_assert_not(two.known);
	rk_loss_parse_note(&two, NULL);
	cr_assert_not(two.known);

	f = open_memstream(&s, &len);
	rk_loss_say(f, &back, "# ");
	rk_loss_json(f, &back);
	rk_loss_json(f, &two);
	rk_loss_say(f, &two, "# ");
	fclose(f);
	cr_assert_not_null(strstr(s, "# incomplete: "), "%s", s);
	cr_assert_not_null(strstr(s, "#   6200000 signals dropped by the BPF side"), "%s", s);
	cr_assert_not_null(strstr(s, "(stat: stack_drops)"), "%s", s);
	cr_assert_not_null(strstr(s, ",\"loss\":{\"known\":true,\"complete\":false,\"counters\":"
				     "{\"bpf_drops\":6200000,\"stack_drops\":5948}}"),
			   "%s", s);
	cr_assert_not_null(strstr(s,
				  ",\"loss\":{\"known\":false,\"complete\":false,\"counters\":{}}"),
			   "%s", s);
	cr_assert_not_null(strstr(s, "# whether the recording dropped anything is not known"), "%s",
			   s);
	free(s);
	/* Nothing lost: no word in the text, complete in JSON. */
	memset(&st, 0, sizeof(st));
	rk_loss_from_stat(&l, &st);
	s = NULL;
	f = open_memstream(&s, &len);
	rk_loss_say(f, &l, "# ");
	rk_loss_json(f, &l);
	fclose(f);
	cr_assert_str_eq(s, ",\"loss\":{\"known\":true,\"complete\":true,\"counters\":{}}");
	free(s);
}

/* The core_pattern specifiers, as the kernel's format_corename() expands them. */
Test(coredump, expand_follows_the_kernel)
{
	struct rk_crash c;
	char out[256];

	memset(&c, 0x5a, sizeof(c)); /* poison: every field the expander reads is set below */
	c.pid = 100;
	c.tid = 101;
	c.ns_pid = 1;
	c.ns_tid = 2;
	c.sig = 11;
	c.rlimit_core = 0;
	c.time = 1700000000;
	c.uid = 1000;
	c.gid = 100;
	c.dumpable = 1;
	snprintf(c.host, sizeof(c.host), "h/st");
	snprintf(c.comm, sizeof(c.comm), "..");
	snprintf(c.exe, sizeof(c.exe), "!usr!bin!x");
	snprintf(c.exe_name, sizeof(c.exe_name), "x");
	c.cpu = 3;
	c.pidfd = 7;
	cr_assert_eq(rk_core_expand("%P.%I.%p.%i.%u.%g.%d.%s.%t.%c.%C.%F.%f.%E.%h.%%.%z", &c, out,
				    sizeof(out)),
		     0);
	cr_assert_str_eq(out, "100.101.1.2.1000.100.1.11.1700000000.0.3.7.x.!usr!bin!x.h!st.%.");
	/* A leading "." or ".." from %e is escaped, so a core never names a parent directory. */
	cr_assert_eq(rk_core_expand("%e", &c, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "!.");
	/* Unknown to us (no pidfd, no CPU): nothing, as an unknown specifier. */
	c.cpu = -1;
	c.pidfd = -1;
	cr_assert_eq(rk_core_expand("a%Cb%Fc", &c, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "abc");
	cr_assert_eq(rk_core_expand("%t%t%t", &c, out, 12), -ENAMETOOLONG);
}

/*
 * stat's text shows a crash line per crash, whatever the crashing process
 * named itself: a comm (or a core path made from one) with control
 * characters cannot add lines or drive the terminal.
 */
Test(session, stat_text_strips_control_characters_of_a_crash)
{
	struct rk_crash_line c = { .pid = 7, .tid = 8, .sig = 11, .time = 1 };
	struct rk_session_stat st;
	char dir[] = "/tmp/rk-unit-XXXXXX", path[64], *buf = NULL, *line;
	size_t len = 0;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, RK_CRASHES_FILE);
	f = fopen(path, "we");
	cr_assert_not_null(f);
	snprintf(c.comm, sizeof(c.comm), "a\nb\x1b[2J");
	snprintf(c.core, sizeof(c.core), "/c/core.a\nb");
	rk_crash_line_write(f, &c);
	cr_assert_eq(fclose(f), 0);
	memset(&st, 0, sizeof(st));
	f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	rk_session_print(f, "s", &st, 0, dir);
	fclose(f);
	unlink(path);
	rmdir(dir);
	line = strstr(
		buf, "  crash: pid 7 (a?b?[2J) tid 8 signal 11 (SIGSEGV) at 1, core /c/core.a?b\n");
	cr_assert_not_null(line, "%s", buf);
	cr_assert_null(strchr(buf, '\x1b'), "an escape reached the terminal:\n%s", buf);
	free(buf);
}

/* --time START,END and --last DURATION, as show, sched and the tests read them. */
Test(util, time_window_and_duration)
{
	uint64_t lo = 0xdead, hi = 0xdead, ns = 0xdead;

	cr_assert_eq(rk_parse_seconds_ns("12", &ns), 0);
	cr_assert_eq(ns, 12000000000ull);
	cr_assert_eq(rk_parse_seconds_ns("12.5", &ns), 0);
	cr_assert_eq(ns, 12500000000ull);
	cr_assert_eq(rk_parse_seconds_ns("0.000000001", &ns), 0);
	cr_assert_eq(ns, 1);
	cr_assert_eq(rk_parse_seconds_ns("1.0000000001", &ns), -EINVAL, "10 decimals");
	cr_assert_eq(rk_parse_seconds_ns("1.", &ns), -EINVAL);
	cr_assert_eq(rk_parse_seconds_ns(".5", &ns), -EINVAL);
	cr_assert_eq(rk_parse_seconds_ns("1.5x", &ns), -EINVAL);
	cr_assert_eq(rk_parse_seconds_ns("-1", &ns), -EINVAL);

	cr_assert_eq(rk_parse_time_window("10.5,11", &lo, &hi), 0);
	cr_assert_eq(lo, 10500000000ull);
	cr_assert_eq(hi, 11000000000ull);
	cr_assert_eq(rk_parse_time_window(",11", &lo, &hi), 0);
	cr_assert_eq(lo, 0);
	cr_assert_eq(hi, 11000000000ull);
	cr_assert_eq(rk_parse_time_window("10,", &lo, &hi), 0);
	cr_assert_eq(lo, 10000000000ull);
	cr_assert_eq(hi, ~0ull);
	cr_assert_eq(rk_parse_time_window(",", &lo, &hi), -EINVAL);
	cr_assert_eq(rk_parse_time_window("11,10", &lo, &hi), -EINVAL, "end before start");
	cr_assert_eq(rk_parse_time_window("10", &lo, &hi), -EINVAL, "no comma");
	cr_assert_eq(rk_parse_time_window("1,2,3", &lo, &hi), -EINVAL);
	cr_assert_eq(rk_parse_time_window(NULL, &lo, &hi), -EINVAL);

	cr_assert_eq(rk_parse_duration_ns("2", &ns), 0);
	cr_assert_eq(ns, 2000000000ull);
	cr_assert_eq(rk_parse_duration_ns("1.5s", &ns), 0);
	cr_assert_eq(ns, 1500000000ull);
	cr_assert_eq(rk_parse_duration_ns("500ms", &ns), 0);
	cr_assert_eq(ns, 500000000ull);
	cr_assert_eq(rk_parse_duration_ns("1.5ms", &ns), 0);
	cr_assert_eq(ns, 1500000ull);
	cr_assert_eq(rk_parse_duration_ns("250us", &ns), 0);
	cr_assert_eq(ns, 250000ull);
	cr_assert_eq(rk_parse_duration_ns("10m", &ns), 0);
	cr_assert_eq(ns, 600000000000ull);
	cr_assert_eq(rk_parse_duration_ns("2h", &ns), 0);
	cr_assert_eq(ns, 7200000000000ull);
	cr_assert_eq(rk_parse_duration_ns("0s", &ns), -EINVAL);
	cr_assert_eq(rk_parse_duration_ns("5d", &ns), -EINVAL);
	cr_assert_eq(rk_parse_duration_ns("ms", &ns), -EINVAL);
	cr_assert_eq(rk_parse_duration_ns("", &ns), -EINVAL);
	cr_assert_eq(rk_parse_duration_ns("0.1ns", &ns), -EINVAL, "less than a ns");
}

/* glibc's internal kind bit of a PI mutex (nptl/pthreadP.h), not in its headers. */
#define GLIBC_MUTEX_PRIO_INHERIT 32

static pthread_mutex_t pi_m;
static pthread_cond_t pi_c = PTHREAD_COND_INITIALIZER;
static int pi_flag;

static void *pi_waker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pi_m);
	pi_flag = 1;
	pthread_cond_signal(&pi_c);
	pthread_mutex_unlock(&pi_m);
	return NULL;
}

/*
 * The recorder's locks inherit priority (glibc marks the mutex's kind
 * PTHREAD_MUTEX_PRIO_INHERIT_NP, 32: its lock is then a PI futex), and a condition
 * variable waits on one as on a plain mutex.
 */
Test(util, mutexes_inherit_priority_and_work_with_condition_variables)
{
	pthread_t t;

	cr_assert_eq(rk_mutex_init_pi(&pi_m), 0);
	cr_assert(pi_m.__data.__kind & GLIBC_MUTEX_PRIO_INHERIT, "kind %#x",
		  (unsigned int)pi_m.__data.__kind);
	pthread_mutex_lock(&pi_m);
	cr_assert_eq(pthread_create(&t, NULL, pi_waker, NULL), 0);
	while (!pi_flag)
		cr_assert_eq(pthread_cond_wait(&pi_c, &pi_m), 0);
	pthread_mutex_unlock(&pi_m);
	pthread_join(t, NULL);
	pthread_mutex_destroy(&pi_m);
}

/*
 * The Python reader's table of loss counters (python/ringkeeper/loss.py)
 * names the same fields at the same offsets as RK_LOSSES: a stat file with
 * a distinct value in each reads back the same through it.
 */
Test(session, python_reader_reads_every_loss_counter_where_c_writes_it)
{
	char dir[] = "/tmp/rk-loss-XXXXXX", path[128], repo[4096], cmd[8192], want[64], *s;
	struct rk_session_stat st = { 0 };
	const char *bin = getenv("RK_BIN");
	size_t i, len = 0;
	FILE *f, *p;
	int c;

	if (!bin || system("python3 -c '' 2>/dev/null")) {
		cr_log_warn("RK_BIN not set or no python3: the Python reader's table not checked");
		return;
	}
	/* RK_BIN = REPO/OUTPUT/ringkeeper */
	snprintf(repo, sizeof(repo), "%s", bin);
	for (i = 0; i < 2 && strrchr(repo, '/'); i++)
		*strrchr(repo, '/') = '\0';
	cr_assert_not_null(mkdtemp(dir));
	st.magic = RK_STAT_MAGIC;
	st.version = RK_STAT_VERSION;
	st.size = sizeof(st);
	for (i = 0; i < NLOSS; i++) {
		__u64 v = 1000 + i;

		memcpy((char *)&st + loss_fields[i].off, &v, sizeof(v));
	}
	snprintf(path, sizeof(path), "%s/stat", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(&st, sizeof(st), 1, f), 1);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "PYTHONPATH=%s/python python3 -c 'import sys; from ringkeeper.loss import "
		 "from_stat; l = from_stat(sys.argv[1]); print(l.known, len(l.v)); "
		 "[print(k, v) for k, v in l.v.items()]' %s",
		 repo, dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	s = NULL;
	f = open_memstream(&s, &len);
	while ((c = fgetc(p)) != EOF)
		fputc(c, f);
	fclose(f);
	cr_assert_eq(pclose(p), 0, "%s", s);
	snprintf(want, sizeof(want), "True %zu\n", NLOSS);
	cr_assert_not_null(strstr(s, want), "%s", s);
	for (i = 0; i < NLOSS; i++) {
		snprintf(want, sizeof(want), "\n%s %zu\n", loss_fields[i].key, 1000 + i);
		cr_assert_not_null(strstr(s, want), "python reads %s elsewhere:\n%s",
				   loss_fields[i].key, s);
	}
	free(s);
	unlink(path);
	rmdir(dir);
}
