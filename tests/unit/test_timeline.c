// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The timeline reader and `sched`'s figures, from sched files written with
 * the recorder's own writer: exact sums for a known history, the states a
 * switch-out's word maps to, and hostile records that must not be believed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "bufile.h"
#include "perfetto.h"
#include "pmu.h"
#include "schedsum.h"
#include "session.h"
#include "timeline.h"

static char dir[64];

static void setup(void)
{
	char p[128];

	snprintf(dir, sizeof(dir), "/tmp/rk-timeline-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/%s", dir, RK_SCHED_DIR);
	cr_assert_eq(mkdir(p, 0700), 0);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(timeline, .init = setup, .fini = teardown);

struct sid {
	__u32 pid, tid;
	__u64 time;
	__u32 cpu, res;
	__u64 id;
};

static struct rk_bufile *make(__u32 tid, __u32 tgid, const char *comm)
{
	struct rk_thread_ident id = { 0 };
	struct rk_pmu_entry e;
	struct rk_bufile *bf;
	char path[128];

	snprintf(path, sizeof(path), "%s/%s/%u", dir, RK_SCHED_DIR, tid);
	id.tid = tid;
	id.tgid = tgid;
	snprintf(id.comm, sizeof(id.comm), "%s", comm);
	rk_pmu_sched_entry(&e);
	bf = rk_bufile__create(path, 16384, 0, &e, &id);
	cr_assert_not_null(bf, "%s", strerror(errno));
	return bf;
}

/* A switch: @out (with the state word @res), at @t ms on @cpu. */
static void sw(struct rk_bufile *bf, int out, __u32 res, __u64 t_ms, __u32 cpu)
{
	struct {
		struct perf_event_header h;
		struct sid id;
	} r = { 0 };

	r.h.type = PERF_RECORD_SWITCH;
	r.h.size = sizeof(r);
	r.h.misc = out ? PERF_RECORD_MISC_SWITCH_OUT : 0;
	r.id.pid = bf->ident->tgid;
	r.id.tid = bf->ident->tid;
	r.id.time = t_ms * 1000000;
	r.id.cpu = cpu;
	r.id.res = res;
	cr_assert_eq(rk_bufile__write(bf, &r, sizeof(r)), 0);
}

#define S(x) (RK_SWITCH_STATE | (x))

/*
 * In at 10 on CPU 0, out sleeping at 13; in at 20 on CPU 1, preempted at 21;
 * in at 25 on CPU 1, blocked at 30; in at 40 on CPU 0, idle at 41; in at 50.
 * The file is closed after.
 */
static void known_history(struct rk_bufile *bf)
{
	sw(bf, 0, 0, 10, 0);
	sw(bf, 1, S(0x1), 13, 0);
	sw(bf, 0, 0, 20, 1);
	sw(bf, 1, S(0), 21, 1);
	sw(bf, 0, 0, 25, 1);
	sw(bf, 1, S(0x2), 30, 1);
	sw(bf, 0, 0, 40, 0);
	sw(bf, 1, S(0x402), 41, 0);
	sw(bf, 0, 0, 50, 0);
	rk_bufile__free(bf);
}

/*
 * In at 10 on CPU 0, out sleeping at 13; in at 20 on CPU 1 (a migration),
 * preempted at 21; in at 25 on CPU 1, blocked at 30; in at 40 on CPU 0 (a
 * migration), idle (D|NOLOAD) at 41; in at 50 (CPU 0), still on CPU: 4 runs
 * of 3 + 1 + 5 + 1 ms; off 7 sleeping, 4 preempted, 10 blocked, 9 idle.
 */
Test(timeline, sums_of_a_known_history)
{
	struct rk_bufile *bf = make(100, 100, "known");
	struct rk_timeline tl;
	struct rk_sched_sum s;

	known_history(bf);

	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	cr_assert_eq(tl.nthreads, 1);
	cr_assert_str_eq(tl.threads[0].id.comm, "known");
	cr_assert_eq(tl.threads[0].nev, 9);
	rk_sched_sum_thread(&tl.threads[0], &s);
	cr_assert_eq(s.runs, 4);
	cr_assert_eq(s.on_ns, 10000000ull);
	cr_assert_eq(s.max_on_ns, 5000000ull);
	cr_assert_eq(s.off_ns[RK_OFF_SLEEPING], 7000000ull);
	cr_assert_eq(s.off_ns[RK_OFF_PREEMPTED], 4000000ull);
	cr_assert_eq(s.off_ns[RK_OFF_BLOCKED], 10000000ull);
	cr_assert_eq(s.off_ns[RK_OFF_IDLE], 9000000ull);
	cr_assert_eq(s.max_off_ns, 10000000ull);
	cr_assert_eq(s.migrations, 2);
	cr_assert_eq(s.first_ns, 10000000ull);
	cr_assert_eq(s.last_ns, 50000000ull);
	rk_timeline__free(&tl);
}

Test(timeline, state_words)
{
	cr_assert_eq(rk_offcpu_of(0), RK_OFF_UNKNOWN, "files before the state was kept");
	cr_assert_eq(rk_offcpu_of(S(0)), RK_OFF_PREEMPTED);
	cr_assert_eq(rk_offcpu_of(S(0x1)), RK_OFF_SLEEPING);
	cr_assert_eq(rk_offcpu_of(S(0x2)), RK_OFF_BLOCKED);
	cr_assert_eq(rk_offcpu_of(S(0x402)), RK_OFF_IDLE);
	cr_assert_eq(rk_offcpu_of(S(0x4)), RK_OFF_STOPPED);
	cr_assert_eq(rk_offcpu_of(S(0x8)), RK_OFF_STOPPED);
	cr_assert_eq(rk_offcpu_of(S(0x80)), RK_OFF_DEAD);
	cr_assert_eq(rk_offcpu_of(S(0x81)), RK_OFF_DEAD);
	cr_assert_str_eq(rk_offcpu_name(RK_OFF_BLOCKED), "blocked");
	cr_assert_str_eq(rk_offcpu_name(RK_OFF_NR), "unknown");
}

/*
 * What a thread could have written into its own file: a COMM record too
 * short to hold a name, a FORK too short for its tids, a crash record cut
 * short, time going backwards. None is read past its end; the backwards
 * pair counts as no run; tids are filtered; threads come sorted.
 */
Test(timeline, hostile_records_are_not_believed)
{
	struct rk_bufile *a = make(7, 7, "a"), *b = make(3, 7, "b");
	struct {
		struct perf_event_header h;
		__u8 pad[8];
	} shortrec = { { 0 } };
	struct rk_timeline tl;
	struct rk_sched_sum s;
	__u16 types[] = { PERF_RECORD_COMM, PERF_RECORD_FORK, PERF_RECORD_EXIT, RK_RECORD_CRASH };
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		shortrec.h.type = types[i];
		shortrec.h.size = sizeof(shortrec);
		cr_assert_eq(rk_bufile__write(a, &shortrec, sizeof(shortrec)), 0);
	}
	sw(a, 0, 0, 50, 0);
	sw(a, 1, S(1), 40, 0); /* before its in */
	sw(b, 0, 0, 1, 0);
	sw(b, 1, S(1), 2, 0);
	rk_bufile__free(a);
	rk_bufile__free(b);

	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	cr_assert_eq(tl.nthreads, 2);
	cr_assert_eq(tl.threads[0].id.tid, 3, "sorted by tid");
	cr_assert_eq(tl.threads[1].nev, 2, "only the two switches were events");
	rk_sched_sum_thread(&tl.threads[1], &s);
	cr_assert_eq(s.runs, 0, "a run that ends before it starts is no run");
	rk_timeline__free(&tl);

	cr_assert_eq(rk_timeline__load(&tl, dir, 3, 0, 0), 0);
	cr_assert_eq(tl.nthreads, 1);
	rk_timeline__free(&tl);
	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 99, 0), -ENOENT);
}

/*
 * A thread whose ring wrapped says so, and the totals cover one window:
 * from its history's start on, where every thread's runs are whole. B runs
 * 1 ms every 10 ms from 0 to 1 s (100 runs, ring never full); A, in a ring
 * of 16 KiB, ran 1 ms every 2 ms for 1 s (500 runs): only its last ~200
 * switches are left, from about 0.6 s on. The totals count A's runs and
 * B's after A's first record, not B's whole second.
 */
Test(timeline, a_wrapped_ring_is_said_and_totals_cover_one_window)
{
	struct rk_bufile *a = make(200, 200, "wrapped"), *b = make(201, 200, "whole");
	struct rk_sched_sum sa, sb, wb;
	struct rk_timeline tl;
	char *buf = NULL;
	size_t len = 0, nwrapped;
	__u64 lo, t;
	FILE *f;

	for (t = 0; t < 1000; t += 10) {
		sw(b, 0, 0, t, 0);
		sw(b, 1, S(0x1), t + 1, 0);
	}
	for (t = 0; t < 1000; t += 2) {
		sw(a, 0, 0, t, 1);
		sw(a, 1, S(0x1), t + 1, 1);
	}
	cr_assert_gt(a->ident->overwritten, 0, "the ring did not wrap");
	cr_assert_eq(b->ident->overwritten, 0);
	rk_bufile__free(a);
	rk_bufile__free(b);
	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	cr_assert_eq(tl.nthreads, 2);
	lo = rk_sched_window(&tl, &nwrapped);
	cr_assert_eq(nwrapped, 1);
	rk_sched_sum_thread(&tl.threads[0], &sa);
	rk_sched_sum_thread(&tl.threads[1], &sb);
	cr_assert_eq(lo, sa.first_ns, "the window starts where the wrapped history does");
	cr_assert_gt(lo, 500000000ull);
	cr_assert_eq(sb.runs, 100);
	rk_sched_sum_window(&tl.threads[1], lo, ~0ull, &wb);
	cr_assert_lt(wb.runs, 50, "B's runs in A's window: %llu", wb.runs);
	cr_assert_gt(wb.runs, 0);

	f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	rk_sched_print(f, &tl, 1);
	fclose(f);
	{
		char want[200];

		snprintf(want, sizeof(want), "\"total\":{\"threads\":2,\"runs\":%llu,",
			 sa.runs + wb.runs);
		cr_assert_not_null(strstr(buf, want), "%s", buf);
		snprintf(want, sizeof(want), "\"window\":{\"first_ns\":%llu,",
			 (unsigned long long)lo);
		cr_assert_not_null(strstr(buf, want), "%s", buf);
	}
	cr_assert_not_null(strstr(buf, "\"wrapped\":true"), "%s", buf);
	cr_assert_not_null(strstr(buf, "\"wrapped\":false"), "%s", buf);
	cr_assert_not_null(strstr(buf, "\"wrapped_threads\":1,"), "%s", buf);
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	rk_sched_print(f, &tl, 0);
	fclose(f);
	cr_assert_not_null(strstr(buf, "*\n"), "no wrapped mark:\n%s", buf);
	cr_assert_not_null(strstr(buf, "# *: 1 thread's ring wrapped"), "%s", buf);
	free(buf);
	rk_timeline__free(&tl);
	/* What export says and --common-window cuts to: one thread, from A's first record. */
	{
		struct rk_wraps w;

		cr_assert_eq(rk_timeline__wraps(dir, 0, 0, &w), 0);
		cr_assert_eq(w.threads, 1);
		cr_assert_eq(w.files, 1);
		cr_assert_eq(w.whole_from, lo);
		cr_assert_eq(rk_timeline__wraps(dir, 201, 0, &w), 0);
		cr_assert_eq(w.files, 0, "--tid of the whole thread: nothing wrapped");
	}
}

/*
 * --time / --last: of the known history (runs 10-13, 20-21, 25-30, 40-41,
 * in at 50), the window [12, 35] ms holds the runs 20-21 and 25-30 and the
 * off-CPU periods 13-20 (sleeping) and 21-25 (preempted), nothing else.
 */
Test(timeline, a_time_window_counts_what_lies_in_it)
{
	struct rk_bufile *bf = make(100, 100, "known");
	struct rk_timeline tl;
	struct rk_sched_sum s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	known_history(bf);
	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	rk_sched_sum_window(&tl.threads[0], 12000000, 35000000, &s);
	cr_assert_eq(s.runs, 2);
	cr_assert_eq(s.on_ns, 6000000ull);
	cr_assert_eq(s.off_ns[RK_OFF_SLEEPING], 7000000ull);
	cr_assert_eq(s.off_ns[RK_OFF_PREEMPTED], 4000000ull);
	cr_assert_eq(s.off_ns[RK_OFF_BLOCKED], 0);
	cr_assert_eq(s.migrations, 0, "the run before 20 (on CPU 0) is outside");
	cr_assert_eq(rk_sched_end(&tl), 50000000ull);
	f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	rk_sched_print_window(f, &tl, 1, 12000000, 35000000);
	fclose(f);
	cr_assert_not_null(strstr(buf,
				  "\"total\":{\"threads\":1,\"runs\":2,\"on_cpu_ns\":6000000,"),
			   "%s", buf);
	cr_assert_not_null(strstr(buf, "\"window\":{\"first_ns\":12000000,\"last_ns\":35000000}"),
			   "%s", buf);
	free(buf);
	rk_timeline__free(&tl);
}

/* A wakeup of @bf's thread by tid @waker at @t_us microseconds on @cpu, RK_WAKEUP_* @flags. */
static void wk_on(struct rk_bufile *bf, __u32 waker, __u64 t_us, __u32 cpu, __u32 flags)
{
	struct {
		struct rk_wakeup_record w;
		struct sid id;
	} r = { 0 };

	r.w.h.type = RK_RECORD_WAKEUP;
	r.w.h.size = sizeof(r);
	r.w.waker_pid = waker;
	r.w.waker_tid = waker;
	r.w.flags = flags;
	r.id.pid = bf->ident->tgid;
	r.id.tid = bf->ident->tid;
	r.id.time = t_us * 1000;
	r.id.cpu = cpu;
	cr_assert_eq(rk_bufile__write(bf, &r, sizeof(r)), 0);
}

/* A wakeup of @bf's thread by tid @waker at @t_us microseconds. */
static void wk(struct rk_bufile *bf, __u32 waker, __u64 t_us)
{
	wk_on(bf, waker, t_us, 0, 0);
}

/*
 * Scheduling delay as perf sched timehist counts it (ms): in 10, out
 * sleeping 11, woken 15 and again 16 (the first counts), in 17: delay 2;
 * out preempted 18, in 21: delay 3 (runnable from the switch-out); out
 * sleeping 22, in 25 with no wakeup recorded: none; woken 26.5 while still
 * switching out, out sleeping at 27 (the switch-out comes after: perf
 * starts again from 0), woken 28, in 29.5: delay 1.5; out 30. Runs 5,
 * delays 3 (sum 6.5, max 3, p99 3), wakeups 4. A window from 20 has lost
 * the preemption at 18: only the delay 28 -> 29.5, and the wakeups 26.5, 28.
 */
Test(timeline, scheduling_delay_as_perf_sched_timehist)
{
	struct rk_bufile *bf = make(100, 100, "delays");
	struct rk_timeline tl;
	struct rk_sched_sum s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	sw(bf, 0, 0, 10, 0);
	sw(bf, 1, S(0x1), 11, 0);
	wk(bf, 7, 15000);
	wk(bf, 8, 16000);
	sw(bf, 0, 0, 17, 0);
	sw(bf, 1, S(0), 18, 0);
	sw(bf, 0, 0, 21, 0);
	sw(bf, 1, S(0x1), 22, 0);
	sw(bf, 0, 0, 25, 0);
	wk(bf, 7, 26500);
	sw(bf, 1, S(0x1), 27, 0);
	wk(bf, 7, 28000);
	{
		struct {
			struct perf_event_header h;
			struct sid id;
		} r = { 0 };

		r.h.type = PERF_RECORD_SWITCH;
		r.h.size = sizeof(r);
		r.id.pid = r.id.tid = 100;
		r.id.time = 29500000;
		cr_assert_eq(rk_bufile__write(bf, &r, sizeof(r)), 0);
	}
	sw(bf, 1, S(0x1), 30, 0);
	rk_bufile__free(bf);

	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	rk_sched_sum_thread(&tl.threads[0], &s);
	cr_assert_eq(s.runs, 5);
	cr_assert_eq(s.wakeups, 4);
	cr_assert_eq(s.delays, 3);
	cr_assert_eq(s.delay_ns, 6500000ull);
	cr_assert_eq(s.max_delay_ns, 3000000ull);
	cr_assert_eq(s.p99_delay_ns, 3000000ull);
	rk_sched_sum_window(&tl.threads[0], 20000000, ~0ull, &s);
	cr_assert_eq(s.delays, 1, "the preemption at 18 is outside: only 28 -> 29.5");
	cr_assert_eq(s.delay_ns, 1500000ull);
	cr_assert_eq(s.wakeups, 2);
	f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	rk_sched_print(f, &tl, 1);
	fclose(f);
	cr_assert_not_null(strstr(buf,
				  "\"wakeups\":4,\"sch_delay\":{\"runs\":3,\"total_ns\":6500000,"
				  "\"avg_ns\":2166666,\"max_ns\":3000000,\"p99_ns\":3000000}"),
			   "%s", buf);
	free(buf);
	rk_timeline__free(&tl);
}

/* The p99 is a value of the set (nearest rank): of 1..200, 198; of one, it. */
Test(timeline, p99_by_nearest_rank)
{
	__u64 d[200], one = 5;
	size_t i;

	for (i = 0; i < 200; i++)
		d[i] = 200 - i;
	cr_assert_eq(rk_sched_p99(d, 200), 198);
	cr_assert_eq(rk_sched_p99(&one, 1), 5);
	cr_assert_eq(rk_sched_p99(NULL, 0), 0);
}

/*
 * prev_state as the kernel's sched_switch reports it: a preemption is R+
 * (TASK_REPORT_MAX), whatever state the task had set; runnable without one
 * (a wakeup before it slept, a yield) is R; the rest its report bit; an
 * unrecorded state R. A preemption counts as preempted in the sums.
 */
Test(timeline, prev_state_is_the_kernel_s_report)
{
	cr_assert_eq(rk_offcpu_report(S(0) | RK_SWITCH_PREEMPTED), 0x100);
	cr_assert_eq(rk_offcpu_report(S(0x1) | RK_SWITCH_PREEMPTED), 0x100);
	cr_assert_eq(rk_offcpu_of(S(0x1) | RK_SWITCH_PREEMPTED), RK_OFF_PREEMPTED);
	cr_assert_eq(rk_offcpu_report(S(0)), 0);
	cr_assert_eq(rk_offcpu_of(S(0)), RK_OFF_PREEMPTED);
	cr_assert_eq(rk_offcpu_report(S(0x1)), 0x1);
	cr_assert_eq(rk_offcpu_report(S(0x2)), 0x2);
	cr_assert_eq(rk_offcpu_report(S(0x402)), 0x80);
	cr_assert_eq(rk_offcpu_report(S(0x80)), 0x10);
	cr_assert_eq(rk_offcpu_report(0), 0);
	cr_assert_eq(rk_offcpu_report(RK_SWITCH_PREEMPTED), 0);
}

/* A protobuf varint at *@p (before @end); 0 at a truncation. */
static __u64 pb_varint(const __u8 **p, const __u8 *end)
{
	__u64 v = 0;
	int sh = 0;

	while (*p < end && sh < 64) {
		__u8 b = *(*p)++;

		v |= (__u64)(b & 0x7f) << sh;
		if (!(b & 0x80))
			return v;
		sh += 7;
	}
	return 0;
}

/*
 * In message [@p, @end), the next field: its number and wire type, its
 * value (varint) or its bytes (length-delimited). 0 at the end.
 */
static int pb_next(const __u8 **p, const __u8 *end, __u32 *field, __u64 *v, const __u8 **b)
{
	__u64 key;

	if (*p >= end)
		return 0;
	key = pb_varint(p, end);
	*field = (__u32)(key >> 3);
	switch (key & 7) {
	case 0:
		*v = pb_varint(p, end);
		return 1;
	case 1:
		*p += 8;
		return 1;
	case 2:
		*v = pb_varint(p, end);
		*b = *p;
		*p += *v;
		return *p <= end;
	case 5:
		*p += 4;
		return 1;
	default:
		return 0;
	}
}

/* Per CPU of the trace at @path: its sched_switch events' prev/next pids, in order. */
static int ftrace_switches(const char *path, __u32 cpus[], __u32 prev[], __u32 next[], int max)
{
	FILE *f = fopen(path, "r");
	static __u8 buf[1 << 16];
	const __u8 *p = buf, *end, *pk, *b, *e, *s, *x;
	__u64 v, pv, ev, sv;
	__u32 fl, f2, f3, f4;
	size_t len;
	int n = 0;

	cr_assert_not_null(f);
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	cr_assert_lt(len, sizeof(buf));
	end = buf + len;
	while (pb_next(&p, end, &fl, &v, &pk)) { /* Trace.packet */
		const __u8 *pe = pk + v;

		while (pb_next(&pk, pe, &f2, &pv, &b)) {
			const __u8 *be = b + pv;
			__u32 cpu = 0;

			if (f2 != 1) /* TracePacket.ftrace_events */
				continue;
			while (pb_next(&b, be, &f3, &ev, &e)) {
				const __u8 *ee = e + ev;

				if (f3 == 1) /* FtraceEventBundle.cpu */
					cpu = (__u32)ev;
				if (f3 != 2) /* .event */
					continue;
				while (pb_next(&e, ee, &f4, &sv, &s)) {
					const __u8 *se = s + sv;
					__u32 f5;

					if (f4 != 4) /* FtraceEvent.sched_switch */
						continue;
					cr_assert_lt(n, max);
					cpus[n] = cpu;
					while (pb_next(&s, se, &f5, &sv, &x)) {
						if (f5 == 2)
							prev[n] = (__u32)sv;
						if (f5 == 6)
							next[n] = (__u32)sv;
					}
					n++;
				}
			}
		}
	}
	return n;
}

/*
 * Two switch-outs of a thread in a row, and a switch-in of another with no
 * switch-out of the one before it: the kernel did not report a switch
 * (counted as "unpaired" by the recorder). The Perfetto export writes one
 * for each, taking no time, so that on every CPU a switch's prev is the
 * last one's next: Perfetto counts anything else an import error
 * (mismatched_sched_switch_tids), and its UI says so in red.
 */
Test(timeline, perfetto_writes_the_switches_the_kernel_did_not_report)
{
	struct rk_bufile *a = make(100, 100, "a"), *b = make(101, 100, "b");
	struct rk_perfetto_stats st = { 0 };
	__u32 cpus[32], prev[32] = { 0 }, next[32] = { 0 };
	struct rk_timeline tl;
	char out[128];
	int n, i;

	sw(a, 0, 0, 10, 0);
	sw(a, 1, S(0), 11, 0); /* preempted... */
	sw(a, 1, S(0x1), 20, 0); /* ...and out again, never back in */
	sw(b, 0, 0, 30, 0);
	sw(b, 0, 0, 40, 0); /* in again, never out */
	sw(b, 1, S(0x1), 41, 0);
	rk_bufile__free(a);
	rk_bufile__free(b);

	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	snprintf(out, sizeof(out), "%s/t.pftrace", dir);
	cr_assert_eq(rk_perfetto_write(&tl, out, &st), 0);
	rk_timeline__free(&tl);
	cr_assert_eq(st.switches, 6);
	cr_assert_eq(st.switches_added, 2);
	n = ftrace_switches(out, cpus, prev, next, 32);
	cr_assert_eq(n, 8);
	for (i = 1; i < n; i++)
		if (cpus[i] == cpus[i - 1])
			cr_assert_eq(prev[i], next[i - 1], "switch %d: prev %u after next %u", i,
				     prev[i], next[i - 1]);
}

/* @f's text (a memstream's) after rk_sched_report() with @o. */
static char *report(const struct rk_timeline *tl, struct rk_sched_opts o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	if (!o.hi)
		o.hi = ~0ull;
	cr_assert_eq(rk_sched_report(f, tl, &o), 0);
	fclose(f);
	return buf;
}

/*
 * A thousand threads' table: "known" (tid 100, 4 runs, 10 ms on CPU) and
 * "busy" (tid 101 of the same process: 2 runs, 40 ms), "idle" (tid 300,
 * its own process: out at 5, in at 60, no complete run). Left out by
 * default and said; --sort on-cpu puts busy first; --top 1 keeps one row
 * while the totals count all three; --by process sums a process's threads;
 * --by comm one row per name; every line of the default table fits 120
 * columns, --wide has the rest.
 */
Test(timeline, sched_sorts_groups_cuts_and_fits_120_columns)
{
	struct rk_bufile *busy, *idle;
	struct rk_timeline tl;
	char *buf, *l;

	known_history(make(100, 100, "known"));
	busy = make(101, 100, "busy");
	sw(busy, 0, 0, 0, 1);
	sw(busy, 1, S(0), 20, 1);
	sw(busy, 0, 0, 30, 1);
	sw(busy, 1, S(0x1), 50, 1);
	rk_bufile__free(busy);
	idle = make(300, 300, "idle");
	sw(idle, 1, S(0x1), 5, 0);
	sw(idle, 0, 0, 60, 0);
	rk_bufile__free(idle);
	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	cr_assert_eq(tl.nthreads, 3);

	buf = report(&tl, (struct rk_sched_opts){ 0 });
	for (l = buf; *l; l = strchr(l, '\n') + 1)
		cr_assert_leq(strcspn(l, "\n"), 120, "a line wider than 120 columns:\n%s", buf);
	cr_assert_null(strstr(buf, "idle "), "a thread with no run is listed:\n%s", buf);
	cr_assert_not_null(strstr(buf, "# 1 thread with no complete run left out (--all shows"),
			   "%s", buf);
	cr_assert_null(strstr(buf, "longest off"), "%s", buf);
	cr_assert_lt(strstr(buf, "known "), strstr(buf, "busy "), "tid order by default:\n%s", buf);
	free(buf);

	buf = report(&tl, (struct rk_sched_opts){ .sort = RK_SCHED_SORT_ONCPU });
	cr_assert_lt(strstr(buf, "busy "), strstr(buf, "known "), "not by on-CPU:\n%s", buf);
	free(buf);

	buf = report(&tl,
		     (struct rk_sched_opts){ .json = 1, .sort = RK_SCHED_SORT_ONCPU, .top = 1 });
	cr_assert_not_null(strstr(buf, "{\"threads\":[{\"tid\":101,"), "%s", buf);
	cr_assert_null(strstr(buf, "\"tid\":100"), "%s", buf);
	cr_assert_not_null(strstr(buf,
				  "\"total\":{\"threads\":3,\"runs\":6,\"on_cpu_ns\":50000000,"),
			   "%s", buf);
	cr_assert_not_null(strstr(buf, "\"by\":\"thread\",\"sort\":\"on-cpu\",\"rows\":1,"
				       "\"left_out\":{\"no_runs\":1,\"past_top\":1}}"),
			   "%s", buf);
	free(buf);

	buf = report(&tl, (struct rk_sched_opts){ .json = 1, .by = RK_SCHED_BY_PROCESS });
	cr_assert_not_null(strstr(buf, "{\"processes\":[{\"tgid\":100,\"threads\":2,\"comm\":"
				       "\"known\",\"runs\":6,\"on_cpu_ns\":50000000,"),
			   "%s", buf);
	cr_assert_null(strstr(buf, "\"tgid\":300"), "%s", buf);
	free(buf);
	buf = report(&tl, (struct rk_sched_opts){ .json = 1, .by = RK_SCHED_BY_PROCESS, .all = 1 });
	cr_assert_not_null(strstr(buf, "{\"tgid\":300,\"threads\":1,\"comm\":\"idle\",\"runs\":0,"),
			   "%s", buf);
	free(buf);
	buf = report(&tl, (struct rk_sched_opts){ .by = RK_SCHED_BY_COMM, .wide = 1 });
	cr_assert_not_null(strstr(buf, "longest off"), "%s", buf);
	cr_assert_not_null(strstr(buf, "\nbusy                    1        1       2 "), "%s", buf);
	free(buf);
	rk_timeline__free(&tl);
}

/*
 * --hist: bcc's log2 layout (slot i holds [2^(i-1), 2^i - 1], 40 stars
 * scaled to the largest count). known's runs are 3, 1, 5 and 1 ms: 1000 us
 * twice in 512 -> 1023, 3000 in 2048 -> 4095, 5000 in 4096 -> 8191; in
 * JSON element k counts [2^k, 2^(k+1)).
 */
Test(timeline, sched_hist_is_bcc_s_log2_layout)
{
	struct rk_timeline tl;
	char *buf;

	known_history(make(100, 100, "known"));
	cr_assert_eq(rk_hist_slot(0), 1);
	cr_assert_eq(rk_hist_slot(1), 1);
	cr_assert_eq(rk_hist_slot(2), 2);
	cr_assert_eq(rk_hist_slot(1023), 10);
	cr_assert_eq(rk_hist_slot(1024), 11);
	cr_assert_eq(rk_hist_slot(~0ull), 64);
	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	buf = report(&tl, (struct rk_sched_opts){ .hist = 1, .hist_rows = 1 });
	cr_assert_not_null(strstr(buf, "\ntid 100 known (pid 100): 4 runs, 1 with a scheduling "
				       "delay\n"),
			   "%s", buf);
	cr_assert_not_null(strstr(buf, "run length (on CPU):\n"
				       "     usecs               : count     distribution\n"
				       "         0 -> 1          : 0        |"
				       "                                        |\n"),
			   "%s", buf);
	cr_assert_not_null(strstr(buf, "       512 -> 1023       : 2        |"
				       "****************************************|\n"
				       "      1024 -> 2047       : 0        |"
				       "                                        |\n"
				       "      2048 -> 4095       : 1        |"
				       "********************                    |\n"
				       "      4096 -> 8191       : 1        |"
				       "********************                    |\n"
				       "off CPU, preempted:\n"),
			   "%s", buf);
	free(buf);
	buf = report(&tl, (struct rk_sched_opts){ .hist = 1, .hist_rows = 1, .json = 1 });
	cr_assert_not_null(strstr(buf,
				  "\"hist\":{\"unit\":\"us\",\"sch_delay\":[0,0,0,0,0,0,0,0,0,0,"
				  "0,1],\"run\":[0,0,0,0,0,0,0,0,0,2,0,1,1],\"off_cpu\":{"
				  "\"preempted\":[0,0,0,0,0,0,0,0,0,0,0,1],"),
			   "%s", buf);
	free(buf);
	rk_timeline__free(&tl);
}

/*
 * docs/format.md as a spec: switch-out states are bit sets, classified by
 * bits in the order it gives (0x2001 and 0x102 occur: sleeping, blocked);
 * a record of a type the reader does not know is skipped by its size and
 * the walk goes on; the crashes line is exactly the format it gives.
 */
Test(timeline, format_md_states_unknown_records_and_crash_lines)
{
	struct rk_bufile *bf = make(100, 100, "spec");
	struct rk_crash_line c = { .pid = 8178, .tid = 8180, .sig = 11, .time = 1764954484 };
	struct {
		struct perf_event_header h;
		__u64 body[3];
	} unk = { .h = { .type = 0x5300, .size = sizeof(unk) } };
	struct rk_timeline tl;
	struct rk_sched_sum s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	cr_assert_eq(rk_offcpu_of(S(0x2001)), RK_OFF_SLEEPING);
	cr_assert_eq(rk_offcpu_of(S(0x102)), RK_OFF_BLOCKED);
	cr_assert_eq(rk_offcpu_of(S(0x402)), RK_OFF_IDLE);
	cr_assert_eq(rk_offcpu_of(S(0x82)), RK_OFF_DEAD);
	cr_assert_eq(rk_offcpu_of(S(0x8)), RK_OFF_STOPPED);
	cr_assert_eq(rk_offcpu_of(S(0x2) | RK_SWITCH_PREEMPTED), RK_OFF_PREEMPTED);
	cr_assert_eq(rk_offcpu_of(0x2), RK_OFF_UNKNOWN, "0x80000000 clear: not recorded");

	sw(bf, 0, 0, 10, 0);
	cr_assert_eq(rk_bufile__write(bf, &unk, sizeof(unk)), 0);
	sw(bf, 1, S(0x2001), 12, 0);
	sw(bf, 0, 0, 20, 0);
	sw(bf, 1, S(0x102), 23, 0);
	sw(bf, 0, 0, 30, 0);
	rk_bufile__free(bf);
	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	cr_assert_eq(tl.threads[0].broken, 0, "an unknown type ended the walk");
	rk_sched_sum_thread(&tl.threads[0], &s);
	cr_assert_eq(s.runs, 2);
	cr_assert_eq(s.off_ns[RK_OFF_SLEEPING], 8000000ull);
	cr_assert_eq(s.off_ns[RK_OFF_BLOCKED], 7000000ull);
	rk_timeline__free(&tl);

	snprintf(c.comm, sizeof(c.comm), "a b\\");
	snprintf(c.core, sizeof(c.core), "/var/crash/core.8178");
	f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	rk_crash_line_write(f, &c);
	fclose(f);
	cr_assert_str_eq(buf,
			 "pid 8178 tid 8180 signal 11 SIGSEGV time 1764954484 comm a\\x20b\\x5c "
			 "core /var/crash/core.8178\n");
	free(buf);
}

/* @bf's thread born at @t_ms of @ptid in process @ppid (its first record, as the recorder writes it). */
static void fork_rec(struct rk_bufile *bf, __u32 ppid, __u32 ptid, __u64 t_ms)
{
	struct {
		struct perf_event_header h;
		__u32 pid, ppid, tid, ptid;
		__u64 time;
		struct sid id;
	} r = { 0 };

	r.h.type = PERF_RECORD_FORK;
	r.h.size = sizeof(r);
	r.pid = bf->ident->tgid;
	r.ppid = ppid;
	r.tid = bf->ident->tid;
	r.ptid = ptid;
	r.time = t_ms * 1000000;
	r.id.pid = r.pid;
	r.id.tid = r.tid;
	r.id.time = r.time;
	cr_assert_eq(rk_bufile__write(bf, &r, sizeof(r)), 0);
}

/*
 * Issue 42, item 4, in the Perfetto export: process 100 (forked by 7) has
 * threads 100 and 101. 100 sleeps at 11 and a hard irq wakes it at 15 on
 * CPU 0 (after a switch there: written compact, marked); 101 is woken from
 * a softirq at 5 on CPU 1 before any switch on that CPU (Perfetto would
 * drop it: written unmarked, counted) and by task 100 at 20. 100 dies at
 * 30 on CPU 0, 101 at 40 on CPU 1: two frees, the leader's last (after
 * 40, on CPU 1). One ProcessTree entry (100's parent, 7). The timeline
 * keeps each wakeup's context and the fork's parent pid.
 */
Test(timeline, perfetto_marks_irq_wakeups_ends_threads_and_names_parents)
{
	struct rk_bufile *a = make(100, 100, "lead"), *b = make(101, 100, "other");
	struct rk_perfetto_stats st = { 0 };
	struct rk_timeline tl;
	char out[128];
	size_t i;

	fork_rec(a, 7, 7, 1);
	sw(a, 0, 0, 10, 0);
	sw(a, 1, S(0x1), 11, 0);
	wk_on(a, 0, 15000, 0, RK_WAKEUP_CTX | RK_WAKEUP_HARDIRQ);
	sw(a, 0, 0, 16, 0);
	sw(a, 1, S(0x80), 30, 0);
	wk_on(b, 55, 5000, 1, RK_WAKEUP_CTX | RK_WAKEUP_SOFTIRQ);
	sw(b, 0, 0, 12, 1);
	sw(b, 1, S(0x1), 13, 1);
	wk_on(b, 100, 20000, 0, RK_WAKEUP_CTX);
	sw(b, 0, 0, 21, 1);
	sw(b, 1, S(0x80), 40, 1);
	rk_bufile__free(a);
	rk_bufile__free(b);

	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	cr_assert_eq(tl.nthreads, 2);
	for (i = 0; i < tl.nthreads; i++) {
		const struct rk_tl_thread *t = &tl.threads[i];
		size_t k, w = 0;

		for (k = 0; k < t->nev; k++) {
			const struct rk_tl_event *e = &t->ev[k];

			if (e->kind == RK_TL_FORK)
				cr_assert_eq(e->arg2, 7, "the parent's pid");
			if (e->kind != RK_TL_WAKEUP)
				continue;
			cr_assert_eq(e->arg2 & RK_TL_WAKEUP_CPU, 0);
			cr_assert_eq(rk_tl_wakeup_context(e),
				     t->id.tid == 100 ? RK_WAKEUP_CTX | RK_WAKEUP_HARDIRQ :
				     w == 0	      ? RK_WAKEUP_CTX | RK_WAKEUP_SOFTIRQ :
							RK_WAKEUP_CTX,
				     "tid %u wakeup %zu", t->id.tid, w);
			w++;
		}
	}
	snprintf(out, sizeof(out), "%s/t.pftrace", dir);
	cr_assert_eq(rk_perfetto_write(&tl, out, &st), 0);
	rk_timeline__free(&tl);
	cr_assert_eq(st.wakeups, 3);
	cr_assert_eq(st.irq_wakeups, 1);
	cr_assert_eq(st.irq_unmarked, 1);
	cr_assert_eq(st.frees, 2);
	cr_assert_eq(st.processes_parented, 1);
}

/*
 * `top` of a session whose threads look on CPU at once beyond what its CPUs
 * had (their switch-outs were dropped): said, not printed as a figure to
 * trust (it printed "1699.000 s on CPU in the last 1.0 s" on 2 CPUs).
 * Three threads switched in at 1 s on a 1-CPU session, one out at 2 s: 3 s
 * on CPU in the last second.
 */
Test(timeline, top_says_when_its_total_on_cpu_cannot_be)
{
	struct rk_session_stat st = { 0 };
	char path[128], cmd[512], *out = NULL;
	size_t len = 0;
	FILE *f, *p;
	int tid, c;

	if (!getenv("RK_BIN")) {
		cr_log_warn("RK_BIN not set: top not run (run through make unit)");
		return;
	}
	snprintf(path, sizeof(path), "%s/s", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/s/%s", dir, RK_SCHED_DIR);
	cr_assert_eq(mkdir(path, 0700), 0);
	for (tid = 501; tid <= 503; tid++) {
		struct rk_thread_ident id = { .tid = (__u32)tid, .tgid = 501 };
		struct rk_pmu_entry e;
		struct rk_bufile *bf;

		snprintf(path, sizeof(path), "%s/s/%s/%d", dir, RK_SCHED_DIR, tid);
		snprintf(id.comm, sizeof(id.comm), "t%d", tid);
		rk_pmu_sched_entry(&e);
		bf = rk_bufile__create(path, 16384, 0, &e, &id);
		cr_assert_not_null(bf, "%s", strerror(errno));
		sw(bf, 0, 0, 1000, 0);
		if (tid == 503)
			sw(bf, 1, S(0x1), 2000, 0);
		rk_bufile__free(bf);
	}
	st.magic = RK_STAT_MAGIC;
	st.version = RK_STAT_VERSION;
	st.size = sizeof(st);
	st.state = RK_SESSION_ENDED;
	st.nr_cpus = 1;
	snprintf(path, sizeof(path), "%s/s/%s", dir, RK_STAT_FILE);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(&st, sizeof(st), 1, f), 1);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s top --batch -n 1 --root %s s 2>&1", getenv("RK_BIN"), dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	f = open_memstream(&out, &len);
	while ((c = fgetc(p)) != EOF)
		fputc(c, f);
	fclose(f);
	cr_assert_eq(pclose(p), 0, "%s", out);
	cr_assert_not_null(strstr(out, "3 ran, 3.000 s on CPU (impossible: see below)"), "%s", out);
	cr_assert_not_null(strstr(out, "# 3.000 s on CPU is more than 1 CPUs had in 1.0 s"), "%s",
			   out);
	/* The stat file says nothing was lost: no word of that. */
	cr_assert_null(strstr(out, "incomplete"), "%s", out);
	free(out);
}

/* The output of `RK_BIN @args` (2>&1) into *@out; its exit status. NULL: RK_BIN not set. */
static int rk_run(const char *args, char **out)
{
	char cmd[1024];
	size_t len = 0;
	FILE *p, *f;
	int c, st;

	*out = NULL;
	if (!getenv("RK_BIN")) {
		cr_log_warn("RK_BIN not set: the command not run (run through make unit)");
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", getenv("RK_BIN"), args);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	f = open_memstream(out, &len);
	cr_assert_not_null(f);
	while ((c = fgetc(p)) != EOF)
		fputc(c, f);
	fclose(f);
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

/*
 * Issue 52, item 2: `sched --hist` is the session's histograms, one set, as
 * runqlat prints (it printed one set per thread: 867,604 lines for 16,260
 * threads); per row with --per-thread or --by. known's runs are 3, 1, 5, 1
 * ms, busy's (same process) 20 and 20: run length 512 -> 1023 twice, 2048
 * -> 4095, 4096 -> 8191, 16384 -> 32767 twice. The JSON total has its
 * "hist"; --hist is not silently dropped by --offcpu, nor made pointless by
 * row options.
 */
Test(timeline, sched_hist_is_the_session_s_unless_asked_per_row)
{
	struct rk_bufile *busy;
	struct rk_timeline tl;
	char *buf, *tot, args[512];

	known_history(make(100, 100, "known"));
	busy = make(101, 100, "busy");
	sw(busy, 0, 0, 0, 1);
	sw(busy, 1, S(0), 20, 1);
	sw(busy, 0, 0, 30, 1);
	sw(busy, 1, S(0x1), 50, 1);
	rk_bufile__free(busy);
	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);

	buf = report(&tl, (struct rk_sched_opts){ .hist = 1 });
	cr_assert_eq(count_of(buf, "run length (on CPU):"), 1, "%s", buf);
	cr_assert_null(strstr(buf, "\ntid 10"), "%s", buf);
	cr_assert_not_null(strstr(buf, "all 2 threads: 6 runs, 2 with a scheduling delay\n"), "%s",
			   buf);
	cr_assert_not_null(strstr(buf, "       512 -> 1023       : 2        |"
				       "****************************************|\n"),
			   "%s", buf);
	cr_assert_not_null(strstr(buf, "     16384 -> 32767      : 2        |"
				       "****************************************|\n"),
			   "%s", buf);
	free(buf);

	buf = report(&tl, (struct rk_sched_opts){ .hist = 1, .hist_rows = 1 });
	cr_assert_eq(count_of(buf, "run length (on CPU):"), 2, "%s", buf);
	cr_assert_not_null(strstr(buf, "\ntid 100 known (pid 100): 4 runs"), "%s", buf);
	cr_assert_not_null(strstr(buf, "\ntid 101 busy (pid 100): 2 runs"), "%s", buf);
	free(buf);

	buf = report(&tl, (struct rk_sched_opts){ .hist = 1, .json = 1 });
	tot = strstr(buf, "\"total\":");
	cr_assert_not_null(tot, "%s", buf);
	cr_assert_eq(count_of(buf, "\"hist\":"), 1, "%s", buf);
	cr_assert_not_null(strstr(tot, "\"hist\":{\"unit\":\"us\",\"sch_delay\":["), "%s", buf);
	cr_assert_not_null(strstr(tot, "\"run\":[0,0,0,0,0,0,0,0,0,2,0,1,1,0,2]"), "%s", buf);
	free(buf);
	buf = report(&tl, (struct rk_sched_opts){ .hist = 1, .hist_rows = 1, .json = 1 });
	cr_assert_eq(count_of(buf, "\"hist\":"), 3, "%s", buf);
	free(buf);
	rk_timeline__free(&tl);

	/* The command: the session's by default, per row when asked, no option dropped. */
	snprintf(args, sizeof(args), "sched --root /tmp %s --hist", strrchr(dir, '/') + 1);
	if (rk_run(args, &buf) < 0)
		return;
	cr_assert_eq(count_of(buf, "run length (on CPU):"), 1, "%s", buf);
	free(buf);
	snprintf(args, sizeof(args), "sched --root /tmp %s --hist --per-thread",
		 strrchr(dir, '/') + 1);
	cr_assert_eq(rk_run(args, &buf), 0, "%s", buf);
	cr_assert_eq(count_of(buf, "run length (on CPU):"), 2, "%s", buf);
	free(buf);
	snprintf(args, sizeof(args), "sched --root /tmp %s --hist --by process",
		 strrchr(dir, '/') + 1);
	cr_assert_eq(rk_run(args, &buf), 0, "%s", buf);
	cr_assert_not_null(strstr(buf, "\npid 100 known (2 threads): 6 runs"), "%s", buf);
	free(buf);
	snprintf(args, sizeof(args), "sched --root /tmp %s --hist --offcpu", strrchr(dir, '/') + 1);
	cr_assert_eq(rk_run(args, &buf), 2, "%s", buf);
	cr_assert_not_null(strstr(buf, "--hist"), "%s", buf);
	free(buf);
	snprintf(args, sizeof(args), "sched --root /tmp %s --hist --top 1", strrchr(dir, '/') + 1);
	cr_assert_eq(rk_run(args, &buf), 2, "%s", buf);
	cr_assert_not_null(strstr(buf, "--per-thread"), "%s", buf);
	free(buf);
}

/*
 * Issue 52, item 3: --sort delay and --sort off-cpu ranked rows by sums no
 * column showed; the table shows its sort key. "two" waits 3 and 5 ms after
 * wakeups (sum 8, average 4); known is off CPU 30 ms in all (7 sleeping, 4
 * preempted, 10 blocked, 9 idle: no column but the key's has 30). And the
 * default table stays within 120 columns whatever the sums: four threads of
 * 10^12 ms (31 years) on and off CPU.
 */
Test(timeline, sched_shows_its_sort_key_and_fits_120_columns_whatever_the_sums)
{
	struct rk_bufile *two;
	struct rk_timeline tl;
	static const int sorts[] = { RK_SCHED_SORT_TID, RK_SCHED_SORT_ONCPU, RK_SCHED_SORT_DELAY,
				     RK_SCHED_SORT_OFFCPU, RK_SCHED_SORT_RUNS };
	char *buf, *row, *l;
	__u32 tid;
	size_t i, by;

	known_history(make(100, 100, "known"));
	two = make(102, 102, "two");
	sw(two, 0, 0, 0, 0);
	sw(two, 1, S(0x1), 1, 0);
	wk(two, 7, 2000);
	sw(two, 0, 0, 5, 0);
	sw(two, 1, S(0x1), 6, 0);
	wk(two, 7, 7000);
	sw(two, 0, 0, 12, 0);
	sw(two, 1, S(0x1), 13, 0);
	rk_bufile__free(two);
	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);

	buf = report(&tl, (struct rk_sched_opts){ .sort = RK_SCHED_SORT_DELAY });
	cr_assert_not_null(strstr(buf, "sum (ms)"), "no column of the sort key:\n%s", buf);
	row = strstr(buf, "\ntwo ");
	cr_assert_not_null(row, "%s", buf);
	cr_assert_lt(row, strstr(buf, "\nknown "), "%s", buf);
	cr_assert_not_null(strstr(row, " 8.000 "), "two's summed delay is not shown:\n%s", buf);
	free(buf);
	buf = report(&tl, (struct rk_sched_opts){ .sort = RK_SCHED_SORT_OFFCPU });
	row = strstr(buf, "\nknown ");
	cr_assert_not_null(row, "%s", buf);
	cr_assert_not_null(strstr(row, " 30.000 "), "known's off-CPU sum is not shown:\n%s", buf);
	cr_assert_lt(row, strstr(buf, "\ntwo "), "%s", buf);
	free(buf);
	rk_timeline__free(&tl);

	for (tid = 200; tid < 204; tid++) {
		struct rk_bufile *bf = make(tid, 200, "huge");

		sw(bf, 0, 0, 1, 0);
		sw(bf, 1, S(0x1), 1000000000000ull, 0);
		wk(bf, 7, 1500000000000000ull);
		sw(bf, 0, 0, 2000000000000ull, 1);
		sw(bf, 1, S(0), 3000000000000ull, 1);
		sw(bf, 0, 0, 3000000000001ull, 0);
		sw(bf, 1, S(0x2), 3000000000002ull, 0);
		rk_bufile__free(bf);
	}
	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	for (by = 0; by < 3; by++) {
		for (i = 0; i < sizeof(sorts) / sizeof(sorts[0]); i++) {
			buf = report(&tl, (struct rk_sched_opts){ .sort = sorts[i], .by = by });
			for (l = buf; *l; l = strchr(l, '\n') + 1)
				cr_assert_leq(
					strcspn(l, "\n"), 120,
					"a line wider than 120 columns (sort %d, by %zu):\n%s",
					sorts[i], by, buf);
			free(buf);
		}
	}
	rk_timeline__free(&tl);
}

/* A figure in its column's width whatever its size: fewer decimals, then a larger unit. */
Test(timeline, table_figures_fit_their_columns)
{
	static const __u64 ns[] = { 0,
				    999,
				    1234567,
				    99999999999ull,
				    1234567890123ull,
				    987654321987654ull,
				    18446744073709551615ull };
	static const unsigned long long n[] = { 0,	  999999,	 1000000,
						12345678, 9999999999ull, 18446744073709551615ull };
	char b[64];
	size_t i;
	int w;

	for (w = 6; w <= 11; w++) {
		for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
			rk_sched_fit_ms(b, sizeof(b), w, ns[i]);
			cr_assert_leq(strlen(b), (size_t)w, "%llu ns in %d columns: '%s'",
				      (unsigned long long)ns[i], w, b);
		}
		for (i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
			rk_sched_fit_count(b, sizeof(b), w, n[i]);
			cr_assert_leq(strlen(b), (size_t)w, "%llu in %d columns: '%s'", n[i], w, b);
		}
	}
	rk_sched_fit_ms(b, sizeof(b), 10, 1234567);
	cr_assert_str_eq(b, "1.235");
	rk_sched_fit_ms(b, sizeof(b), 10, 123456789012345ull);
	cr_assert_str_eq(b, "123456789");
	rk_sched_fit_ms(b, sizeof(b), 8, 123456789012345ull);
	cr_assert_str_eq(b, "123457s");
	rk_sched_fit_count(b, sizeof(b), 6, 999999);
	cr_assert_str_eq(b, "999999");
	rk_sched_fit_count(b, sizeof(b), 6, 12345678);
	cr_assert_str_eq(b, "12346k");
}

/* Thread @tid's history in @tl (NULL: none). */
static const struct rk_tl_thread *thread_of(const struct rk_timeline *tl, __u32 tid)
{
	size_t i;

	for (i = 0; i < tl->nthreads; i++)
		if (tl->threads[i].id.tid == tid)
			return &tl->threads[i];
	return NULL;
}

/* @a's events are @b's last @a->nev (a live reader may have forgotten older ones). */
static void same_tail(const struct rk_tl_thread *a, const struct rk_tl_thread *b)
{
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_leq(a->nev, b->nev);
	cr_assert_eq(memcmp(a->ev, b->ev + (b->nev - a->nev), a->nev * sizeof(*a->ev)), 0,
		     "tid %u: the live reader's events are not the file's", a->id.tid);
}

/*
 * Issue 52, item 4: `top` read every file whole at every refresh (5.65 s a
 * frame at 43,990 threads, so its 1 s refresh was 4.5 s). The live reader
 * reads a file once, then only its records past the head it reached, and a
 * file whose page 0 did not change not at all: three files, nothing
 * written, nothing read; two records to one, that one read and its history
 * what a full read gives; a ring lapped between two reads, read again from
 * what it holds; a file gone, dropped. Forgetting what no later window
 * needs leaves top's figures of the window as they were.
 */
Test(timeline, live_reader_reads_only_what_changed)
{
	struct rk_bufile *a = make(100, 100, "a"), *b = make(101, 100, "b"),
			 *c = make(102, 100, "c");
	struct rk_tl_live *lv = rk_tl_live__new(dir);
	const struct rk_timeline *live;
	struct rk_tl_live_stats st;
	struct rk_sched_now n0, n1;
	struct rk_timeline tl;
	char path[128];
	int i;

	cr_assert_not_null(lv);
	sw(a, 0, 0, 10, 0);
	sw(a, 1, S(0x1), 12, 0);
	sw(b, 0, 0, 11, 1);
	sw(c, 0, 0, 5, 1);
	sw(c, 1, S(0), 6, 1);

	cr_assert_eq(rk_tl_live__update(lv, &st), 0);
	cr_assert_eq(st.files, 3);
	cr_assert_eq(st.read, 3);
	cr_assert_eq(st.unchanged, 0);
	live = rk_tl_live__timeline(lv);
	cr_assert_eq(live->nthreads, 3);
	cr_assert_eq(thread_of(live, 100)->nev, 2);

	cr_assert_eq(rk_tl_live__update(lv, &st), 0);
	cr_assert_eq(st.read, 0, "%zu files read again with nothing written", st.read);
	cr_assert_eq(st.unchanged, 3);

	sw(a, 0, 0, 20, 1);
	sw(a, 1, S(0x2), 25, 1);
	cr_assert_eq(rk_tl_live__update(lv, &st), 0);
	cr_assert_eq(st.read, 1);
	cr_assert_eq(st.unchanged, 2);
	live = rk_tl_live__timeline(lv);
	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	cr_assert_eq(thread_of(live, 100)->nev, 4);
	same_tail(thread_of(live, 100), thread_of(&tl, 100));
	rk_timeline__free(&tl);

	/* 1000 switches through a 16 KiB ring: it lapped what was read. */
	for (i = 0; i < 500; i++) {
		sw(b, 1, S(0x1), 12 + 2 * (__u64)i, 1);
		sw(b, 0, 0, 13 + 2 * (__u64)i, 1);
	}
	cr_assert_gt(b->ident->overwritten, 0);
	cr_assert_eq(rk_tl_live__update(lv, &st), 0);
	cr_assert_eq(st.read, 1);
	live = rk_tl_live__timeline(lv);
	cr_assert_eq(rk_timeline__load(&tl, dir, 0, 0, 0), 0);
	cr_assert_eq(thread_of(live, 101)->nev, thread_of(&tl, 101)->nev);
	same_tail(thread_of(live, 101), thread_of(&tl, 101));
	rk_timeline__free(&tl);

	rk_bufile__free(c);
	snprintf(path, sizeof(path), "%s/%s/102", dir, RK_SCHED_DIR);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(rk_tl_live__update(lv, &st), 0);
	cr_assert_eq(st.gone, 1);
	live = rk_tl_live__timeline(lv);
	cr_assert_eq(live->nthreads, 2);
	cr_assert_null(thread_of(live, 102));

	/* top's window [900, 1000] ms before and after forgetting what it cannot need. */
	rk_sched_now(thread_of(live, 101), 900000000ull, 1000000000ull, &n0);
	cr_assert_gt(thread_of(live, 101)->nev, 300);
	rk_tl_live__forget_before(lv, 900000000ull);
	live = rk_tl_live__timeline(lv);
	/* From its switch-out at 900 ms (at or before 900): one event a ms up to 1011. */
	cr_assert_eq(thread_of(live, 101)->nev, 1011 - 900 + 1);
	rk_sched_now(thread_of(live, 101), 900000000ull, 1000000000ull, &n1);
	cr_assert_eq(memcmp(&n0, &n1, sizeof(n0)), 0, "runs %u/%u on %llu/%llu", n0.runs, n1.runs,
		     (unsigned long long)n0.on_ns, (unsigned long long)n1.on_ns);
	cr_assert_gt(n1.runs, 0);
	/* and written after forgetting: appended as before. */
	sw(a, 0, 0, 1100, 0);
	cr_assert_eq(rk_tl_live__update(lv, &st), 0);
	cr_assert_eq(st.read, 1);
	live = rk_tl_live__timeline(lv);
	cr_assert_eq(thread_of(live, 100)->ev[thread_of(live, 100)->nev - 1].time, 1100000000ull);
	/*
	 * Preempted at 1150, a wakeup at 1160, in at 1180: a wait of 30 ms
	 * (from the switch-out) in the window from 1170, forgotten up to it
	 * or not; and a run from 1180 across 1190.
	 */
	sw(a, 1, S(0), 1150, 0);
	wk(a, 7, 1160000);
	sw(a, 0, 0, 1180, 0);
	cr_assert_eq(rk_tl_live__update(lv, &st), 0);
	rk_tl_live__forget_before(lv, 1170000000ull);
	live = rk_tl_live__timeline(lv);
	rk_sched_now(thread_of(live, 100), 1170000000ull, 1200000000ull, &n1);
	cr_assert_eq(n1.delay_ns, 30000000ull);
	cr_assert_eq(n1.runs, 1);
	rk_tl_live__forget_before(lv, 1190000000ull);
	live = rk_tl_live__timeline(lv);
	rk_sched_now(thread_of(live, 100), 1190000000ull, 1200000000ull, &n1);
	cr_assert_eq(n1.on_ns, 10000000ull, "the run across the window's start");
	cr_assert_eq(n1.state, RK_NOW_RUNNING);
	rk_bufile__free(a);
	rk_bufile__free(b);
	rk_tl_live__free(lv);
}

/* What @fd (a pty's master) has within @ms, appended to @buf (@len of @cap). */
static void pty_read(int fd, char *buf, size_t *len, size_t cap, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	while (*len + 1 < cap && poll(&p, 1, ms) > 0) {
		n = read(fd, buf + *len, cap - 1 - *len);
		if (n <= 0)
			break;
		*len += (size_t)n;
		buf[*len] = '\0';
		ms = 0;
	}
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * `top` of a running session (its stat file names top itself as the
 * recorder: alive) on a pty, a 10 s refresh: after the first screen, @key
 * ('q') or @sig. Return: its wait status within 3 s (-1: still running,
 * killed), *@raw whether the terminal had echo and line editing off while
 * it ran, *@restored whether they were back after.
 */
static int top_on_a_pty(char key, int sig, int *raw, int *restored, char *out, size_t cap)
{
	char stat_path[128], args_dir[128];
	struct rk_session_stat st = { 0 };
	struct termios t;
	int master, go[2], status = -1;
	size_t len = 0;
	uint64_t end;
	pid_t pid;
	FILE *f;

	snprintf(args_dir, sizeof(args_dir), "%s", dir);
	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert_geq(master, 0, "posix_openpt: %s", strerror(errno));
	cr_assert_eq(grantpt(master) | unlockpt(master), 0);
	cr_assert_eq(pipe(go), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		const char *slave = ptsname(master);
		char c;
		int fd;

		/* A session of its own, the pty its terminal. */
		if (setsid() < 0 || !slave || (fd = open(slave, O_RDWR)) < 0)
			_exit(125);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(125);
		execl(getenv("RK_BIN"), "ringkeeper", "top", "-d", "10s", "--root", "/tmp",
		      strrchr(args_dir, '/') + 1, (char *)NULL);
		_exit(126);
	}
	close(go[0]);
	st.magic = RK_STAT_MAGIC;
	st.version = RK_STAT_VERSION;
	st.size = sizeof(st);
	st.state = RK_SESSION_RUNNING;
	st.nr_cpus = 1;
	st.loader_pid = (__u32)pid;
	snprintf(stat_path, sizeof(stat_path), "%s/%s", dir, RK_STAT_FILE);
	f = fopen(stat_path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(&st, sizeof(st), 1, f), 1);
	fclose(f);
	cr_assert_eq(write(go[1], "g", 1), 1);
	close(go[1]);
	end = mono_ms() + 10000;
	while (!strstr(out, "STATE")) {
		cr_assert_lt(mono_ms(), end, "no screen from top: %s", out);
		pty_read(master, out, &len, cap, 50);
	}
	cr_assert_eq(tcgetattr(master, &t), 0);
	*raw = !(t.c_lflag & ECHO) && !(t.c_lflag & ICANON);
	if (key)
		cr_assert_eq(write(master, &key, 1), 1);
	else
		kill(pid, sig);
	end = mono_ms() + 3000;
	while (mono_ms() < end && waitpid(pid, &status, WNOHANG) == 0) {
		status = -1;
		pty_read(master, out, &len, cap, 20);
	}
	if (status == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	cr_assert_eq(tcgetattr(master, &t), 0);
	*restored = (t.c_lflag & ECHO) && (t.c_lflag & ICANON);
	close(master);
	return status;
}

/*
 * Issue 52, item 4: 'q' did nothing in top (echoed onto the screen, the
 * refresh went on): it quits at once, the terminal as it was; a signal
 * puts the terminal back too; --help says how to quit.
 */
Test(timeline, top_quits_on_q_and_gives_the_terminal_back)
{
	struct rk_bufile *bf = make(100, 100, "a");
	char out[16384] = "", *help;
	int raw, restored, st;

	sw(bf, 0, 0, 10, 0);
	rk_bufile__free(bf);
	if (rk_run("top --help", &help) < 0)
		return;
	cr_assert_not_null(strstr(help, "q quits"), "%s", help);
	free(help);

	st = top_on_a_pty('q', 0, &raw, &restored, out, sizeof(out));
	cr_assert_neq(st, -1, "top still ran 3 s after a 'q':\n%s", out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x:\n%s", st, out);
	cr_assert(raw, "the terminal echoed and edited lines while top ran");
	cr_assert(restored, "the terminal was left without echo or line editing");

	memset(out, 0, sizeof(out));
	st = top_on_a_pty(0, SIGTERM, &raw, &restored, out, sizeof(out));
	cr_assert_neq(st, -1, "top still ran 3 s after SIGTERM:\n%s", out);
	cr_assert(restored, "a SIGTERM left the terminal without echo or line editing");
}
