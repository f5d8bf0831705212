// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * schedsum.c - per-thread scheduling figures from a thread's switch history:
 * a run is a switch-in followed by a switch-out, an off-CPU period a
 * switch-out followed by a switch-in (charged to the state the thread left
 * in). A history's first out, or last in, has only one end: not counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "schedsum.h"
#include "show.h"
#include "util.h"

static int grow_push(__u64 **d, size_t *n, size_t *cap, __u64 v)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		__u64 *p = realloc(*d, nc * sizeof(**d));

		if (!p)
			return -ENOMEM;
		*d = p;
		*cap = nc;
	}
	(*d)[(*n)++] = v;
	return 0;
}

/*
 * One pass over @t's events in [@lo, @hi]: runs, off-CPU periods and
 * delays into @s, each delay also appended to *@d. Return: 0, or -ENOMEM
 * if a delay could not be appended (the figures are whole; *@d is not).
 */
static int walk(const struct rk_tl_thread *t, __u64 lo, __u64 hi, struct rk_sched_sum *s, __u64 **d,
		size_t *n, size_t *cap)
{
	const struct rk_tl_event *in = NULL, *out = NULL;
	__u64 ready = 0, delay = 0;
	int has_delay = 0, err = 0;
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
			ready = 0;
			has_delay = 0;
			continue;
		}
		if (e->kind == RK_TL_WAKEUP) {
			s->wakeups++;
			/* The first since it left the CPU (perf's ready_to_run). */
			if (!ready)
				ready = e->time;
		} else if (e->kind == RK_TL_IN) {
			if (out && e->time >= out->time) {
				enum rk_offcpu k = rk_offcpu_of(out->arg);
				__u64 dt = e->time - out->time;

				s->off_ns[k] += dt;
				s->offs[k]++;
				if (dt > s->max_off_ns)
					s->max_off_ns = dt;
			}
			if (last_cpu != ~0u && e->cpu != last_cpu)
				s->migrations++;
			last_cpu = e->cpu;
			has_delay = ready && ready <= e->time;
			delay = has_delay ? e->time - ready : 0;
			in = e;
			out = NULL;
		} else if (e->kind == RK_TL_OUT) {
			if (in && e->time >= in->time) {
				__u64 dt = e->time - in->time;

				s->runs++;
				s->on_ns += dt;
				if (dt > s->max_on_ns)
					s->max_on_ns = dt;
				/* A run's delay counts with the run, as perf prints it. */
				if (has_delay) {
					s->delays++;
					s->delay_ns += delay;
					if (delay > s->max_delay_ns)
						s->max_delay_ns = delay;
					if (!err)
						err = grow_push(d, n, cap, delay);
				}
			}
			/* Left runnable: ready again at once (perf's 'R'). */
			ready = rk_offcpu_of(e->arg) == RK_OFF_PREEMPTED ? e->time : 0;
			has_delay = 0;
			out = e;
			in = NULL;
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

__u64 rk_sched_p99(__u64 *d, size_t n)
{
	if (!n)
		return 0;
	qsort(d, n, sizeof(*d), cmp_u64);
	/* The smallest value at or above 99% of them (nearest rank). */
	return d[(n * 99 + 99) / 100 - 1];
}

int rk_sched_sum_window_into(const struct rk_tl_thread *t, __u64 lo, __u64 hi,
			     struct rk_sched_sum *s, __u64 **d, size_t *n, size_t *cap)
{
	size_t first = *n;
	int err = walk(t, lo, hi, s, d, n, cap);

	/* No memory for the p99: the rest. */
	s->p99_delay_ns = err || *n == first ? 0 : rk_sched_p99(*d + first, *n - first);
	return err;
}

void rk_sched_sum_window(const struct rk_tl_thread *t, __u64 lo, __u64 hi, struct rk_sched_sum *s)
{
	__u64 *d = NULL;
	size_t n = 0, cap = 0;

	rk_sched_sum_window_into(t, lo, hi, s, &d, &n, &cap);
	free(d);
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
	fprintf(out,
		",\"wakeups\":%llu,\"sch_delay\":{\"runs\":%llu,\"total_ns\":%llu,\"avg_ns\":%llu,"
		"\"max_ns\":%llu,\"p99_ns\":%llu}",
		s->wakeups, s->delays, s->delay_ns, s->delays ? s->delay_ns / s->delays : 0,
		s->max_delay_ns, s->p99_delay_ns);
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
	tot->wakeups += s->wakeups;
	tot->delays += s->delays;
	tot->delay_ns += s->delay_ns;
	if (s->max_delay_ns > tot->max_delay_ns)
		tot->max_delay_ns = s->max_delay_ns;
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
	ms(out, s->delays ? s->delay_ns / s->delays : 0, 9);
	ms(out, s->max_delay_ns, 9);
	ms(out, s->p99_delay_ns, 9);
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
	size_t i, nwrapped, nall = 0, capall = 0;
	__u64 *all = NULL;
	int dfail = 0;

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
			"%-16s %8s %8s %7s %11s %9s %9s %11s %11s %11s %11s %11s %5s %9s %9s %9s "
			"%10s\n"
			"%-16s %8s %8s %7s %11s %9s %9s %11s %11s %11s %11s %11s %5s %9s %9s %9s "
			"%10s\n",
			"comm", "tid", "tgid", "runs", "on-CPU", "avg", "max", "preempted",
			"sleeping", "blocked", "other", "longest off", "migr", "sch delay", "max",
			"p99", "history", "", "", "", "", "(ms)", "(ms)", "(ms)", "(ms, off)",
			"(ms, off)", "(ms, off)", "(ms, off)", "(ms)", "", "(ms, avg)", "(ms)",
			"(ms)", "(s)");
	for (i = 0; i < tl->nthreads; i++) {
		const struct rk_tl_thread *t = &tl->threads[i];
		char comm[RK_COMM_LEN];

		/*
		 * The totals' window is the row's unless a wrapped history starts
		 * later; the totals' p99 is of every thread's delays in it.
		 */
		if (lo == from) {
			dfail |= !!rk_sched_sum_window_into(t, from, to, &s, &all, &nall, &capall);
			w = s;
		} else {
			rk_sched_sum_window(t, from, to, &s);
			dfail |= !!rk_sched_sum_window_into(t, lo, to, &w, &all, &nall, &capall);
		}
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
	tot.p99_delay_ns = dfail ? 0 : rk_sched_p99(all, nall);
	free(all);
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
	if (!tot.wakeups && tot.runs)
		fprintf(out,
			"# sch delay: no wakeups in these histories (`record --wakeups` records "
			"them): only the waits after a preemption are counted\n");
	if (tot.offs[RK_OFF_UNKNOWN])
		fprintf(out,
			"# %llu off-CPU periods of unknown state: recorded by a ringkeeper that "
			"did not keep it (before December 2026)\n",
			tot.offs[RK_OFF_UNKNOWN]);
}
