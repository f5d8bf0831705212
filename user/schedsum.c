// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * schedsum.c - per-thread scheduling figures from a thread's switch history:
 * a run is a switch-in followed by a switch-out, an off-CPU period a
 * switch-out followed by a switch-in (charged to the state the thread left
 * in). A history's first out, or last in, has only one end: not counted.
 */
#include <string.h>
#include "schedsum.h"
#include "show.h"
#include "util.h"

void rk_sched_sum_window(const struct rk_tl_thread *t, __u64 lo, __u64 hi, struct rk_sched_sum *s)
{
	const struct rk_tl_event *in = NULL, *out = NULL;
	__u32 last_cpu = ~0u;
	size_t i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < t->nev; i++) {
		const struct rk_tl_event *e = &t->ev[i];

		if (!s->first_ns || e->time < s->first_ns)
			s->first_ns = e->time;
		if (e->time > s->last_ns)
			s->last_ns = e->time;
		if (e->time < lo || e->time > hi) {
			/* Outside: the next event inside has no other end in it. */
			in = out = NULL;
			last_cpu = ~0u;
			continue;
		}
		if (e->kind == RK_TL_IN) {
			if (out && e->time >= out->time) {
				enum rk_offcpu k = rk_offcpu_of(out->arg);
				__u64 d = e->time - out->time;

				s->off_ns[k] += d;
				s->offs[k]++;
				if (d > s->max_off_ns)
					s->max_off_ns = d;
			}
			if (last_cpu != ~0u && e->cpu != last_cpu)
				s->migrations++;
			last_cpu = e->cpu;
			in = e;
			out = NULL;
		} else if (e->kind == RK_TL_OUT) {
			if (in && e->time >= in->time) {
				__u64 d = e->time - in->time;

				s->runs++;
				s->on_ns += d;
				if (d > s->max_on_ns)
					s->max_on_ns = d;
			}
			out = e;
			in = NULL;
		}
	}
}

void rk_sched_sum_thread(const struct rk_tl_thread *t, struct rk_sched_sum *s)
{
	rk_sched_sum_window(t, 0, ~0ull, s);
}

__u64 rk_sched_window(const struct rk_timeline *tl, size_t *nwrapped)
{
	__u64 lo = 0;
	size_t i;

	*nwrapped = 0;
	for (i = 0; i < tl->nthreads; i++) {
		const struct rk_tl_thread *t = &tl->threads[i];

		if (!t->id.overwritten || !t->nev)
			continue;
		(*nwrapped)++;
		if (t->ev[0].time > lo)
			lo = t->ev[0].time;
	}
	return lo;
}

static void ms(FILE *out, unsigned long long ns, int width)
{
	fprintf(out, " %*.3f", width, (double)ns / 1e6);
}

static void json_sum(FILE *out, const struct rk_sched_sum *s)
{
	int k;

	fprintf(out,
		"\"runs\":%llu,\"on_cpu_ns\":%llu,\"avg_on_cpu_ns\":%llu,\"max_on_cpu_ns\":%llu,"
		"\"off_cpu_ns\":{",
		s->runs, s->on_ns, s->runs ? s->on_ns / s->runs : 0, s->max_on_ns);
	for (k = 0; k < RK_OFF_NR; k++)
		fprintf(out, "%s\"%s\":%llu", k ? "," : "", rk_offcpu_name(k), s->off_ns[k]);
	fprintf(out, "},\"off_cpu_periods\":{");
	for (k = 0; k < RK_OFF_NR; k++)
		fprintf(out, "%s\"%s\":%llu", k ? "," : "", rk_offcpu_name(k), s->offs[k]);
	fprintf(out, "},\"longest_off_cpu_ns\":%llu,\"migrations\":%llu", s->max_off_ns,
		s->migrations);
}

static void add(struct rk_sched_sum *tot, const struct rk_sched_sum *s)
{
	int k;

	tot->runs += s->runs;
	tot->on_ns += s->on_ns;
	if (s->max_on_ns > tot->max_on_ns)
		tot->max_on_ns = s->max_on_ns;
	for (k = 0; k < RK_OFF_NR; k++) {
		tot->off_ns[k] += s->off_ns[k];
		tot->offs[k] += s->offs[k];
	}
	if (s->max_off_ns > tot->max_off_ns)
		tot->max_off_ns = s->max_off_ns;
	tot->migrations += s->migrations;
}

/* A text row: its first three columns already printed, then @s's figures. */
static void text_figures(FILE *out, const struct rk_sched_sum *s)
{
	fprintf(out, " %7llu", s->runs);
	ms(out, s->on_ns, 11);
	ms(out, s->runs ? s->on_ns / s->runs : 0, 9);
	ms(out, s->max_on_ns, 9);
	ms(out, s->off_ns[RK_OFF_PREEMPTED], 11);
	ms(out, s->off_ns[RK_OFF_SLEEPING], 11);
	ms(out, s->off_ns[RK_OFF_BLOCKED], 11);
	ms(out,
	   s->off_ns[RK_OFF_IDLE] + s->off_ns[RK_OFF_STOPPED] + s->off_ns[RK_OFF_DEAD] +
		   s->off_ns[RK_OFF_UNKNOWN],
	   11);
	ms(out, s->max_off_ns, 11);
	fprintf(out, " %5llu", s->migrations);
}

/* The history column: the span in seconds, '*' if the ring wrapped (the span is all there is). */
static void text_history(FILE *out, __u64 first, __u64 last, int wrapped)
{
	fprintf(out, " %9.3f%s\n", last > first ? (double)(last - first) / 1e9 : 0.0,
		wrapped ? "*" : "");
}

__u64 rk_sched_end(const struct rk_timeline *tl)
{
	__u64 end = 0;
	size_t i;

	for (i = 0; i < tl->nthreads; i++)
		if (tl->threads[i].nev && tl->threads[i].ev[tl->threads[i].nev - 1].time > end)
			end = tl->threads[i].ev[tl->threads[i].nev - 1].time;
	return end;
}

void rk_sched_print(FILE *out, const struct rk_timeline *tl, int json)
{
	rk_sched_print_window(out, tl, json, 0, ~0ull);
}

void rk_sched_print_window(FILE *out, const struct rk_timeline *tl, int json, __u64 from, __u64 to)
{
	struct rk_sched_sum tot = { 0 }, s, w;
	__u64 first = ~0ull, last = 0, lo;
	size_t i, nwrapped;

	/*
	 * A thread whose ring wrapped lost its oldest runs: the totals cover
	 * only the time every thread's history is whole in, not a mix of
	 * windows (its rows: its own, marked).
	 */
	lo = rk_sched_window(tl, &nwrapped);
	if (from > lo)
		lo = from;
	if (json)
		fprintf(out, "{\"threads\":[");
	else
		fprintf(out,
			"%-16s %8s %8s %7s %11s %9s %9s %11s %11s %11s %11s %11s %5s %10s\n"
			"%-16s %8s %8s %7s %11s %9s %9s %11s %11s %11s %11s %11s %5s %10s\n",
			"comm", "tid", "tgid", "runs", "on-CPU", "avg", "max", "preempted",
			"sleeping", "blocked", "other", "longest off", "migr", "history", "", "",
			"", "", "(ms)", "(ms)", "(ms)", "(ms, off)", "(ms, off)", "(ms, off)",
			"(ms, off)", "(ms)", "", "(s)");
	for (i = 0; i < tl->nthreads; i++) {
		const struct rk_tl_thread *t = &tl->threads[i];
		char comm[RK_COMM_LEN];

		rk_sched_sum_window(t, from, to, &s);
		/* The totals' window is the row's unless a wrapped history starts later. */
		if (lo == from)
			w = s;
		else
			rk_sched_sum_window(t, lo, to, &w);
		add(&tot, &w);
		if (s.first_ns && s.first_ns < first)
			first = s.first_ns;
		if (s.last_ns > last)
			last = s.last_ns;
		if (json) {
			fprintf(out, "%s{\"tid\":%u,\"tgid\":%u,\"comm\":", i ? "," : "", t->id.tid,
				t->id.tgid);
			rk_json_str(out, t->id.comm);
			fprintf(out, ",");
			json_sum(out, &s);
			fprintf(out,
				",\"first_ns\":%llu,\"last_ns\":%llu,\"wrapped\":%s,"
				"\"overwritten\":%llu,\"state\":",
				(unsigned long long)s.first_ns, (unsigned long long)s.last_ns,
				t->id.overwritten ? "true" : "false",
				(unsigned long long)t->id.overwritten);
			rk_json_str(out, rk_thread_state_name(t->id.state));
			fprintf(out, "}");
			continue;
		}
		/* A comm is the thread's to choose: no control characters in our table. */
		snprintf(comm, sizeof(comm), "%s", t->id.comm);
		rk_strip_controls(comm);
		fprintf(out, "%-16s %8u %8u", comm, t->id.tid, t->id.tgid);
		text_figures(out, &s);
		text_history(out, s.first_ns, s.last_ns, !!t->id.overwritten);
	}
	if (first > last)
		first = last = 0;
	if (lo > first)
		first = lo;
	if (to < last)
		last = to;
	if (first > last)
		first = last;
	if (json) {
		fprintf(out, "],\"total\":{\"threads\":%zu,", tl->nthreads);
		json_sum(out, &tot);
		fprintf(out,
			",\"window\":{\"first_ns\":%llu,\"last_ns\":%llu},\"wrapped_threads\":%zu}}\n",
			(unsigned long long)first, (unsigned long long)last, nwrapped);
		return;
	}
	fprintf(out, "%-16s %8s %8zu", "total", "threads:", tl->nthreads);
	text_figures(out, &tot);
	text_history(out, first, last, 0);
	if (nwrapped)
		fprintf(out,
			"# *: %zu thread%s ring wrapped: %s row covers only the history shown (its "
			"older runs were overwritten; perf, which saw them, counts more); the total "
			"covers the last %.3f s, where every thread's history is whole\n",
			nwrapped, nwrapped == 1 ? "'s" : "s'", nwrapped == 1 ? "its" : "each",
			(double)(last - first) / 1e9);
	if (tot.offs[RK_OFF_UNKNOWN])
		fprintf(out,
			"# %llu off-CPU periods of unknown state: recorded by a ringkeeper that "
			"did not keep it (before December 2026)\n",
			tot.offs[RK_OFF_UNKNOWN]);
}
