// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Writes the seed corpus of fuzz_bufile: valid buffers of each kind, made
 * through the same write path the loader uses.
 *   mkcorpus DIR
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "bufile.h"
#include "evsel.h"
#include "pmu.h"

static void put(struct rk_bufile *bf, const void *rec, size_t size)
{
	if (rk_bufile__write(bf, rec, size))
		fprintf(stderr, "mkcorpus: a record did not fit\n");
}

int main(int argc, char **argv)
{
	struct rk_thread_ident id = { .tid = 7, .tgid = 7, .comm = "seed" };
	struct rk_evsel ev[1];
	struct rk_evsel_opts o = { .callgraph = 1 };
	struct rk_pmu_entry sched;
	struct rk_bufile *bf;
	char path[512], msg[128];
	int n, i;
	struct {
		struct perf_event_header h;
		__u32 pid, tid;
		__u64 time;
		__u32 cpu, res;
		__u64 id;
	} sw = { { PERF_RECORD_SWITCH, 0, sizeof(sw) }, 7, 7, 1, 0, 0, RK_SCHED_ID };
	struct {
		struct perf_event_header h;
		__u64 id, ip;
		__u32 pid, tid;
		__u64 time;
		__u32 cpu, res;
		__u64 period, nr, chain[3];
	} smp = { { PERF_RECORD_SAMPLE, 0, sizeof(smp) }, 9, 0x401000, 7, 7, 2, 1, 0, 1000, 3,
		  { (__u64)-512, 0x401000, 0x402000 } };
	struct {
		struct perf_event_header h;
		__u32 pid, tid;
		__u64 addr, len, pgoff;
		__u32 maj, min;
		__u64 ino, gen;
		__u32 prot, flags;
		char name[16];
		__u32 spid, stid;
		__u64 time;
		__u32 cpu, res;
		__u64 id;
	} mm = { { PERF_RECORD_MMAP2, 2, sizeof(mm) },
		 7,
		 7,
		 0x400000,
		 0x1000,
		 0,
		 8,
		 1,
		 42,
		 0,
		 5,
		 2,
		 "/bin/true",
		 7,
		 7,
		 0,
		 0,
		 0,
		 9 };

	if (argc != 2)
		return 2;
	rk_pmu_sched_entry(&sched);
	snprintf(path, sizeof(path), "%s/sched", argv[1]);
	bf = rk_bufile__create(path, 4096, 0, &sched, &id);
	if (!bf)
		return 1;
	/* Enough switches to wrap the ring once. */
	for (i = 0; i < 120; i++) {
		sw.h.misc = i % 2 ? PERF_RECORD_MISC_SWITCH_OUT : 0;
		sw.time = (__u64)i;
		put(bf, &sw, sizeof(sw));
	}
	/* record --offcpu: a switch-out into a sleep, its stack, then a switch-in. */
	{
		struct {
			struct rk_stack_record r;
			__u64 chain[5];
			__u32 pid, tid;
			__u64 time;
			__u32 cpu, res;
			__u64 id;
		} st = { { { RK_RECORD_STACK, 0, sizeof(st) }, RK_STACK_OF_SWITCH, 0, 5 },
			 { (__u64)PERF_CONTEXT_KERNEL, 0xffffffff81000000ull,
			   (__u64)PERF_CONTEXT_USER, 0x401000, 0x402000 },
			 7,
			 7,
			 150,
			 1,
			 0,
			 RK_SCHED_ID };

		sw.h.misc = PERF_RECORD_MISC_SWITCH_OUT;
		sw.time = 150;
		put(bf, &sw, sizeof(sw));
		put(bf, &st, sizeof(st));
		sw.h.misc = 0;
		sw.time = 160;
		put(bf, &sw, sizeof(sw));
	}
	/* A history ends with a crash record, then a crash record cut short. */
	{
		struct {
			struct rk_crash_record c;
			__u32 pid, tid;
			__u64 time;
			__u32 cpu, res;
			__u64 id;
		} cr = { { { RK_RECORD_CRASH, 0, sizeof(cr) }, 7, 7, 7, 11, 200 },
			 7,
			 7,
			 200,
			 1,
			 0,
			 RK_SCHED_ID };

		put(bf, &cr, sizeof(cr));
		cr.c.h.size = 16;
		put(bf, &cr, 16);
	}
	rk_bufile__free(bf);
	if (rk_evsel_parse("cpu-clock", &o, ev, 1, &n, msg, sizeof(msg)))
		return 1;
	snprintf(path, sizeof(path), "%s/cpu-clock", argv[1]);
	bf = rk_bufile__create(path, 4096, 0, &ev[0].entry, &id);
	if (!bf)
		return 1;
	for (i = 0; i < 5; i++)
		put(bf, &smp, sizeof(smp));
	put(bf, &mm, sizeof(mm));
	rk_bufile__free(bf);
	/* Issue 11's crafted files: records shorter than their sample_id. */
	snprintf(path, sizeof(path), "%s/short-records", argv[1]);
	bf = rk_bufile__create(path, 4096, 0, &sched, &id);
	if (!bf)
		return 1;
	{
		struct {
			struct perf_event_header h;
			__u64 x;
		} r16 = { { PERF_RECORD_COMM, 0, 16 }, 0 };
		struct perf_event_header r8 = { PERF_RECORD_SWITCH, 0, 8 };

		put(bf, &r16, sizeof(r16));
		r16.h.type = PERF_RECORD_SAMPLE;
		put(bf, &r16, sizeof(r16));
		put(bf, &r8, sizeof(r8));
	}
	rk_bufile__free(bf);
	/* And a page 0 a hostile writer rewrote: head far past a huge data_size. */
	snprintf(path, sizeof(path), "%s/scribbled-page0", argv[1]);
	bf = rk_bufile__create(path, 4096, 0, &sched, &id);
	if (!bf)
		return 1;
	put(bf, &sw, sizeof(sw));
	bf->pg->data_head = 1ull << 40;
	bf->pg->data_size = 1ull << 33;
	rk_bufile__free(bf);
	return 0;
}
