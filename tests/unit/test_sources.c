// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Event parsing, record demultiplexing and the perf.data writer, without a kernel. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "bufile.h"
#include "drain.h"
#include "evsel.h"
#include "export.h"
#include "symbols.h"
#include "pmu.h"
#include "session.h"

Test(evsel, parses_names_and_options)
{
	struct rk_evsel ev[RK_MAX_SRC - 1];
	struct rk_evsel_opts o = { .freq = 999, .callgraph = 1, .exclude_kernel = 1 };
	char msg[256];
	int n = -1;

	memset(ev, 0x5a, sizeof(ev)); /* poison */
	cr_assert_eq(rk_evsel_parse("cpu-clock,page-faults", &o, ev, RK_MAX_SRC - 1, &n, msg,
				    sizeof(msg)),
		     0, "%s", msg);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(ev[0].name, "cpu-clock");
	cr_assert_eq(ev[0].src, 1);
	cr_assert_eq(ev[1].src, 2);
	cr_assert(ev[0].tracking);
	cr_assert_not(ev[1].tracking);
	cr_assert_eq(ev[0].entry.attr.type, PERF_TYPE_SOFTWARE);
	cr_assert_eq(ev[0].entry.attr.config, PERF_COUNT_SW_CPU_CLOCK);
	cr_assert_eq(ev[1].entry.attr.config, PERF_COUNT_SW_PAGE_FAULTS);
	cr_assert(ev[0].entry.attr.freq);
	cr_assert_eq(ev[0].entry.attr.sample_freq, 999);
	cr_assert(ev[0].entry.attr.sample_type & PERF_SAMPLE_IDENTIFIER);
	cr_assert(ev[0].entry.attr.sample_type & PERF_SAMPLE_CALLCHAIN);
	cr_assert(ev[0].entry.attr.exclude_kernel);
	cr_assert(ev[0].entry.attr.inherit);
	cr_assert(ev[0].entry.attr.sample_id_all);
	cr_assert(ev[0].entry.attr.mmap && ev[0].entry.attr.mmap2 && ev[0].entry.attr.comm);
	cr_assert_not(ev[1].entry.attr.mmap, "only the tracking event carries sideband");
	cr_assert_eq(ev[0].entry.attr.clockid, CLOCK_MONOTONIC, "the BPF records' clock");
	cr_assert_eq(ev[0].entry.info.note_size, RK_PMU_INFO_NOTE_SIZE);
	cr_assert_eq(ev[0].entry.info.pmu_descsz, 0);

	o = (struct rk_evsel_opts){ .period = 10 };
	cr_assert_eq(rk_evsel_parse("cycles", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)), 0);
	cr_assert_eq(ev[0].entry.attr.type, PERF_TYPE_HARDWARE);
	cr_assert_not(ev[0].entry.attr.freq);
	cr_assert_eq(ev[0].entry.attr.sample_period, 10);
}

Test(evsel, rejects_bad_lists)
{
	struct rk_evsel ev[RK_MAX_SRC - 1];
	struct rk_evsel_opts o = { 0 };
	char msg[256];
	int n = -1;

	cr_assert_eq(rk_evsel_parse("bogus", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)),
		     -EINVAL);
	cr_assert_not_null(strstr(msg, "unknown event 'bogus'"), "%s", msg);
	cr_assert_eq(n, 0);
	cr_assert_eq(rk_evsel_parse("", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)), -EINVAL);
	cr_assert_eq(rk_evsel_parse(",,", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)), -EINVAL);
	cr_assert_eq(rk_evsel_parse("cs,cs", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)),
		     -EINVAL);
	cr_assert_eq(rk_evsel_parse("cs,faults,cycles", &o, ev, 2, &n, msg, sizeof(msg)), -EINVAL,
		     "more than the room given");
	cr_assert_eq(rk_evsel_parse(":x", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)), -EINVAL);
	cr_assert_eq(rk_evsel_parse("a/b:c", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)),
		     -EINVAL);
}

/* A sample of RK_EV_SAMPLE_TYPE and a COMM with its sample_id, as the kernel writes them. */
struct t_sample {
	struct perf_event_header h;
	__u64 id, ip;
	__u32 pid, tid;
	__u64 time;
	__u32 cpu, res;
	__u64 period;
};

struct t_comm {
	struct perf_event_header h;
	__u32 pid, tid;
	char comm[16];
	__u32 spid, stid;
	__u64 time;
	__u32 cpu, res;
	__u64 id;
};

Test(drain, parse_finds_source_and_tid)
{
	struct rk_evsel ev[2];
	struct rk_evsel_opts o = { 0 };
	const struct rk_evsel *got;
	struct rk_drain *d;
	char msg[128];
	__u32 pid, tid;
	int n;
	struct t_sample s = { { PERF_RECORD_SAMPLE, 0, sizeof(s) }, 77, 0x1234, 10, 11, 5, 1, 0, 1 };
	struct t_comm c = { { PERF_RECORD_COMM, 0, sizeof(c) }, 10, 12, "x", 10, 12, 6, 0, 0, 88 };

	cr_assert_eq(rk_evsel_parse("cpu-clock,page-faults", &o, ev, 2, &n, msg, sizeof(msg)), 0);
	d = rk_drain__new(ev, 2, 8192);
	cr_assert_not_null(d);
	cr_assert_eq(rk_drain_add_id(d, 77, 1), 0);
	cr_assert_eq(rk_drain_add_id(d, 88, 0), 0);
	cr_assert_eq(rk_drain_tracking_id(d), 88);
	cr_assert_eq(rk_drain_parse(d, &s.h, &got, &pid, &tid), 0);
	cr_assert_eq(got, &ev[1]);
	cr_assert_eq(pid, 10);
	cr_assert_eq(tid, 11);
	cr_assert_eq(rk_drain_parse(d, &c.h, &got, &pid, &tid), 0);
	cr_assert_eq(got, &ev[0]);
	cr_assert_eq(tid, 12);
	s.id = 999; /* unknown id: no source, still a tid */
	cr_assert_eq(rk_drain_parse(d, &s.h, &got, &pid, &tid), 0);
	cr_assert_null(got);
	s.h.size = 16; /* truncated */
	cr_assert_eq(rk_drain_parse(d, &s.h, &got, &pid, &tid), -EBADMSG);
	rk_drain__free(d);
	rk_drain__free(NULL);
}

/* Many ids (one per fd per CPU per thread) keep resolving after the table grows. */
Test(drain, id_table_grows)
{
	struct rk_evsel ev[1];
	struct rk_evsel_opts o = { 0 };
	struct rk_drain *d;
	char msg[128];
	__u64 i;
	int n;

	cr_assert_eq(rk_evsel_parse("cpu-clock", &o, ev, 1, &n, msg, sizeof(msg)), 0);
	d = rk_drain__new(ev, 1, 8192);
	for (i = 1; i <= 5000; i++)
		cr_assert_eq(rk_drain_add_id(d, i * 7919, 0), 0);
	for (i = 1; i <= 5000; i++) {
		struct {
			struct perf_event_header h;
			__u64 id, ip;
			__u32 pid, tid;
		} s = { { PERF_RECORD_SAMPLE, 0, sizeof(s) }, i * 7919, 0, 1, 2 };
		const struct rk_evsel *got;
		__u32 pid, tid;

		cr_assert_eq(rk_drain_parse(d, &s.h, &got, &pid, &tid), 0);
		cr_assert_eq(got, &ev[0], "id %llu lost", (unsigned long long)(i * 7919));
	}
	rk_drain__free(d);
}

struct bound_sink {
	__u64 times[16];
	int n;
};

static void bound_route(void *ctx, const struct rk_evsel *ev, const struct perf_event_header *h,
			__u32 pid, __u32 tid)
{
	struct bound_sink *s = ctx;

	(void)pid;
	(void)tid;
	cr_assert_lt(s->n, 16);
	s->times[s->n++] = ev ? rk_record_time(ev->entry.attr.sample_type, h) : 0;
}

/*
 * A drain up to a time (no crash before it is unknown): the first record
 * after it stops the ring and stays, unconsumed, for the next drain; a
 * record of no known source has no time and passes.
 */
Test(drain, a_bound_leaves_later_records_in_the_ring)
{
	struct t_comm c = { { PERF_RECORD_COMM, 0, sizeof(c) }, 10, 12, "x", 10, 12, 50, 0, 0, 77 };
	static const __u64 times[] = { 10, 20, 30, 99, 40 };
	struct rk_evsel ev[1];
	struct rk_evsel_opts o = { 0 };
	struct perf_event_mmap_page *pg;
	struct bound_sink got = { 0 };
	struct rk_drain *d;
	__u64 head = 0, after[5];
	void *base = NULL;
	char msg[128];
	size_t i;
	int n;

	cr_assert_eq(rk_evsel_parse("cpu-clock", &o, ev, 1, &n, msg, sizeof(msg)), 0, "%s", msg);
	d = rk_drain__new(ev, 1, 8192);
	cr_assert_not_null(d);
	cr_assert_eq(rk_drain_add_id(d, 77, 0), 0);
	cr_assert_eq(posix_memalign(&base, 4096, 4096 + 8192), 0);
	memset(base, 0, 4096 + 8192);
	pg = base;
	cr_assert_eq(rk_drain_attach_mem(d, 0, base, 8192, NULL, 0), 0);
	for (i = 0; i < 5; i++) {
		struct t_sample s = {
			{ PERF_RECORD_SAMPLE, 0, sizeof(s) }, 77, 0x1234, 10, 12, times[i], 0, 0, 1
		};

		if (times[i] == 99)
			s.id = 999; /* no source known: no time read, routed (as lost) */
		memcpy((__u8 *)base + 4096 + head, &s, sizeof(s));
		head += sizeof(s);
		after[i] = head;
	}
	memcpy((__u8 *)base + 4096 + head, &c, sizeof(c));
	head += sizeof(c);
	__atomic_store_n(&pg->data_head, head, __ATOMIC_RELEASE);

	cr_assert_eq(rk_drain_all(d, 25, bound_route, &got), 2);
	cr_assert_eq(got.times[0], 10);
	cr_assert_eq(got.times[1], 20);
	cr_assert_eq(pg->data_tail, after[1], "the record at 30 stays in the ring");
	cr_assert_eq(rk_drain_all(d, 25, bound_route, &got), 0, "and stops the ring again");
	cr_assert_eq(pg->data_tail, after[1]);
	cr_assert_eq(rk_drain_all(d, 45, bound_route, &got), 3);
	cr_assert_eq(got.times[2], 30);
	cr_assert_eq(got.times[3], 0, "the unknown id");
	cr_assert_eq(got.times[4], 40);
	cr_assert_eq(pg->data_tail, after[4], "the COMM at 50 (its sample_id's time) stays");
	cr_assert_eq(rk_drain_all(d, UINT64_MAX, bound_route, &got), 1);
	cr_assert_eq(got.times[5], 50);
	cr_assert_eq(pg->data_tail, head, "everything consumed");
	rk_drain__free(d);
	free(base);
}

static char dir[64];

static void mk(const char *sub)
{
	char p[160];

	snprintf(p, sizeof(p), "%s/%s", dir, sub);
	cr_assert_eq(mkdir(p, 0755), 0);
}

/* The writer's layout: header, ids, attrs, records sorted by time, ids rewritten. */
Test(export, writes_a_perf_data_file)
{
	struct rk_thread_ident id = { .tid = 5, .tgid = 5 };
	struct rk_evsel ev[1];
	struct rk_evsel_opts o = { 0 };
	struct rk_pmu_entry sched;
	struct rk_bufile *a, *b;
	struct rk_export_opts eo = { 0 };
	struct rk_export_stats st;
	char p[200], out[200], msg[64];
	__u64 hdr[13];
	int n, fd;
	struct {
		struct perf_event_header h;
		__u32 pid, tid;
		__u64 time;
		__u32 cpu, res;
		__u64 id;
	} sw1 = { { PERF_RECORD_SWITCH, 0, sizeof(sw1) }, 5, 5, 300, 0, 0, RK_SCHED_ID },
	  sw2 = { { PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, sizeof(sw2) },
		  5,
		  5,
		  100,
		  0,
		  0,
		  RK_SCHED_ID };
	struct t_sample smp = {
		{ PERF_RECORD_SAMPLE, 0, sizeof(smp) }, 4242, 0x10, 5, 5, 200, 0, 0, 1
	};
	/* The thread's exec, as the sched ring has it (the sideband has it too). */
	struct t_comm cm = { { PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, sizeof(cm) },
			     5,
			     5,
			     "five",
			     5,
			     5,
			     50,
			     0,
			     0,
			     RK_SCHED_ID };
	union {
		__u8 b[4096];
		struct perf_event_header h;
	} data;

	snprintf(dir, sizeof(dir), "/tmp/rk-export-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	mk(RK_SCHED_DIR);
	mk("cpu-clock");
	rk_pmu_sched_entry(&sched);
	cr_assert_eq(rk_evsel_parse("cpu-clock", &o, ev, 1, &n, msg, sizeof(msg)), 0);
	snprintf(p, sizeof(p), "%s/%s/5", dir, RK_SCHED_DIR);
	a = rk_bufile__create(p, 4096, 0, &sched, &id);
	snprintf(p, sizeof(p), "%s/cpu-clock/5", dir);
	b = rk_bufile__create(p, 4096, 0, &ev[0].entry, &id);
	cr_assert(a && b);
	cr_assert_eq(rk_bufile__write(a, &cm, sizeof(cm)), 0);
	cr_assert_eq(rk_bufile__write(a, &sw1, sizeof(sw1)), 0);
	cr_assert_eq(rk_bufile__write(a, &sw2, sizeof(sw2)), 0);
	cr_assert_eq(rk_bufile__write(b, &smp, sizeof(smp)), 0);
	snprintf(out, sizeof(out), "%s/out.data", dir);
	eo.session_dir = dir;
	eo.out = out;
	cr_assert_eq(rk_export_perf_data(&eo, &st), 0);
	/* sched, cpu-clock, and sched:sched_switch made from sched's switches (tracefs permitting). */
	cr_assert(st.attrs == 3 || st.attrs == 2, "%u attrs", st.attrs);
	cr_assert_eq(st.threads, 1);

	fd = open(out, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(read(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	cr_assert_eq(hdr[0], 0x32454c4946524550ULL, "PERFILE2");
	cr_assert_eq(hdr[1], 104, "header size");
	cr_assert_eq(hdr[2], 128 + 16, "attr_size: VER7 attr + ids section");
	cr_assert_eq(hdr[4], st.attrs * (128 + 16), "the attrs");
	cr_assert_leq(hdr[6], sizeof(data));
	cr_assert_eq(pread(fd, data.b, hdr[6], (off_t)hdr[5]), (ssize_t)hdr[6]);
	close(fd);
	{
		/*
		 * In time order, ids by attr (sched 1, cpu-clock 2, sched_switch
		 * 3): the kernel map (if /proc/kallsyms is readable) at 0, sw2 at 100 and
		 * its sched_switch sample, the cpu-clock sample at 200, sw1 at 300
		 * and its sched_switch sample.
		 */
		static const struct {
			__u32 type;
			__u64 time, id;
		} want[] = {
			{ PERF_RECORD_SWITCH, 100, 1 }, { PERF_RECORD_SAMPLE, 100, 3 },
			{ PERF_RECORD_SAMPLE, 200, 2 }, { PERF_RECORD_SWITCH, 300, 1 },
			{ PERF_RECORD_SAMPLE, 300, 3 },
		};
		size_t off = 0, k = 0;
		int comm = 0, comm0 = 0;

		while (off + sizeof(struct perf_event_header) <= hdr[6]) {
			struct perf_event_header h;
			__u64 t, id;

			memcpy(&h, data.b + off, sizeof(h));
			cr_assert_geq(h.size, sizeof(h));
			if (h.type == PERF_RECORD_MMAP || h.type == PERF_RECORD_COMM) {
				if (h.type == PERF_RECORD_COMM) {
					memcpy(&t, data.b + off + 40, 8);
					comm++;
					comm0 += !t;
				}
				off += h.size;
				continue;
			}
			if (h.type == PERF_RECORD_SAMPLE) {
				memcpy(&id, data.b + off + 8, 8);
				memcpy(&t, data.b + off + 32, 8);
			} else {
				memcpy(&id, data.b + off + h.size - 8, 8);
				memcpy(&t, data.b + off + 16, 8);
			}
			if (st.attrs == 2 && id == 3)
				cr_assert_fail("a sched_switch sample with no attr");
			while (k < 5 && st.attrs == 2 && want[k].id == 3)
				k++;
			cr_assert_lt(k, 5, "record %u at %llu past the expected", h.type,
				     (unsigned long long)t);
			cr_assert_eq(h.type, want[k].type, "record %zu", k);
			cr_assert_eq(t, want[k].time, "record %zu", k);
			cr_assert_eq(id, want[k].id, "record %zu", k);
			k++;
			off += h.size;
		}
		cr_assert_eq(off, hdr[6]);
		cr_assert_eq(k, st.attrs == 3 ? 5u : 4u);
		/*
		 * With a perf source, the kernel's COMMs come from its sideband:
		 * sched's copy (the exec at 50) is left out. One at time 0 names
		 * the thread before its exec, which perf sched timehist needs.
		 */
		cr_assert_eq(comm, 1, "%d COMMs in an export with a sideband source", comm);
		cr_assert_eq(comm0, 1, "the COMM is not the one at time 0");
	}

	eo.tid = 6;
	cr_assert_eq(rk_export_perf_data(&eo, &st), -ENOENT, "no such thread");
	rk_bufile__free(a);
	rk_bufile__free(b);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	cr_assert_eq(system(p), 0);
}

/*
 * Hostile contents reach export too: a record shorter than its sample_id
 * (it used to read 8 bytes before the record, ASan), a session whose only
 * file is empty (qsort of NULL), and a target that is not a regular file.
 */
Test(export, short_records_empty_files_and_devices)
{
	struct rk_thread_ident id = { .tid = 5, .tgid = 5 };
	struct rk_export_opts eo = { 0 };
	struct rk_export_stats st;
	struct rk_pmu_entry sched;
	struct rk_bufile *a, *e;
	struct stat sb;
	char p[200], out[200];
	/*
	 * 16 bytes: the sched attr's sample_id is 32, so the time's offset
	 * (size - 32 + 8) was -8: 8 bytes before the record.
	 */
	struct {
		struct perf_event_header h;
		__u64 x;
	} shortrec[2] = { { { PERF_RECORD_COMM, 0, 16 }, 0 },
			  { { PERF_RECORD_SWITCH, 0, 16 }, 0 } };

	snprintf(dir, sizeof(dir), "/tmp/rk-export-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	mk(RK_SCHED_DIR);
	rk_pmu_sched_entry(&sched);
	snprintf(p, sizeof(p), "%s/%s/5", dir, RK_SCHED_DIR);
	a = rk_bufile__create(p, 4096, 0, &sched, &id);
	cr_assert_not_null(a);
	cr_assert_eq(rk_bufile__write(a, &shortrec[0], 16), 0);
	cr_assert_eq(rk_bufile__write(a, &shortrec[1], 16), 0);
	id.tid = id.tgid = 6;
	snprintf(p, sizeof(p), "%s/%s/6", dir, RK_SCHED_DIR);
	e = rk_bufile__create(p, 4096, 0, &sched, &id);
	cr_assert_not_null(e);
	snprintf(out, sizeof(out), "%s/out.data", dir);
	eo.session_dir = dir;
	eo.out = out;
	cr_assert_eq(rk_export_perf_data(&eo, &st), 0);
	cr_assert_eq(st.threads, 2);
	eo.tid = 6; /* the empty one alone: nothing to sort */
	cr_assert_eq(rk_export_perf_data(&eo, &st), 0);
	eo.tid = 0;
	eo.out = "/dev/full";
	cr_assert_eq(rk_export_perf_data(&eo, &st), -EINVAL);
	cr_assert_eq(stat("/dev/full", &sb), 0);
	cr_assert(S_ISCHR(sb.st_mode), "/dev/full was replaced");
	rk_bufile__free(a);
	rk_bufile__free(e);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	cr_assert_eq(system(p), 0);
}

static int count_map(void *ctx, const char *path, __u64 start, __u64 len, __u64 pgoff)
{
	(void)path;
	(void)start;
	(void)len;
	(void)pgoff;
	(*(int *)ctx)++;
	return 0;
}

/*
 * A forked child's sideband with no mappings of its own inherits its
 * parent's: the merge used to memcpy from the child's NULL map array (UBSan).
 */
Test(symbols, forked_child_without_maps_inherits_the_parents)
{
	struct rk_thread_ident id = { .tid = 99, .tgid = 99 };
	struct rk_pmu_entry sched;
	struct rk_bufile *parent, *child;
	struct rk_symbols *s;
	char p[200];
	int n = 0;
	struct {
		struct perf_event_header h;
		__u32 pid, ppid, tid, ptid;
		__u64 time;
	} fork_rec = { { PERF_RECORD_FORK, 0, sizeof(fork_rec) }, 100, 99, 100, 99, 1 };
	union {
		__u8 b[128];
		struct perf_event_header h;
	} mm = { { 0 } };
	__u32 u32;
	__u64 u64;

	snprintf(dir, sizeof(dir), "/tmp/rk-symbols-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	mk(RK_SIDEBAND_DIR);
	rk_pmu_sched_entry(&sched);
	/* MMAP2 of /bin/true in the parent: pid, tid, addr, len, pgoff, ..., name. */
	mm.h.type = PERF_RECORD_MMAP2;
	u32 = 99;
	memcpy(mm.b + 8, &u32, 4);
	memcpy(mm.b + 12, &u32, 4);
	u64 = 0x400000;
	memcpy(mm.b + 16, &u64, 8);
	u64 = 0x1000;
	memcpy(mm.b + 24, &u64, 8);
	memcpy(mm.b + 72, "/bin/true", 10);
	mm.h.size = 72 + 16;
	snprintf(p, sizeof(p), "%s/%s/99", dir, RK_SIDEBAND_DIR);
	parent = rk_bufile__create(p, 4096, 0, &sched, &id);
	cr_assert_not_null(parent);
	cr_assert_eq(rk_bufile__write(parent, &mm, mm.h.size), 0);
	id.tid = id.tgid = 100;
	snprintf(p, sizeof(p), "%s/%s/100", dir, RK_SIDEBAND_DIR);
	child = rk_bufile__create(p, 4096, 0, &sched, &id);
	cr_assert_not_null(child);
	cr_assert_eq(rk_bufile__write(child, &fork_rec, sizeof(fork_rec)), 0);
	s = rk_symbols__new(p);
	cr_assert_not_null(s);
	cr_assert_eq(rk_symbols_for_each_map(s, count_map, &n), 0);
	cr_assert_eq(n, 1, "the parent's mapping, inherited");
	rk_symbols__free(s);
	rk_bufile__free(parent);
	rk_bufile__free(child);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	cr_assert_eq(system(p), 0);
}
