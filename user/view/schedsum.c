// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * schedsum.c - per-thread scheduling figures from a thread's switch history:
 * a run is a switch-in followed by a switch-out, an off-CPU period a
 * switch-out followed by a switch-in (charged to the state the thread left
 * in). A history's first out, or last in, has only one end: not counted.
 */
#include <errno.h>
#include <stdarg.h>
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
static int walk(const struct rk_tl_thread *t, __u64 lo, __u64 hi, struct rk_sched_sum *s,
		struct rk_sched_hist *h, __u64 **d, size_t *n, size_t *cap)
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
				if (h)
					h->off[k][rk_hist_slot(dt / 1000)]++;
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
				if (h)
					h->run[rk_hist_slot(dt / 1000)]++;
				if (dt > s->max_on_ns)
					s->max_on_ns = dt;
				/* A run's delay counts with the run, as perf prints it. */
				if (has_delay) {
					s->delays++;
					s->delay_ns += delay;
					if (h)
						h->delay[rk_hist_slot(delay / 1000)]++;
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
	return err;
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

int rk_hist_slot(__u64 v)
{
	int i = 0;

	/* bcc's bpf_log2l(v): floor(log2(v)) + 1, and 0 and 1 share slot 1. */
	while (v > 1) {
		v >>= 1;
		i++;
	}
	return i + 1;
}

int rk_sched_sum_hist(const struct rk_tl_thread *t, __u64 lo, __u64 hi, struct rk_sched_sum *s,
		      struct rk_sched_hist *h, __u64 **d, size_t *n, size_t *cap)
{
	size_t first = *n;
	int err = walk(t, lo, hi, s, h, d, n, cap);

	/* No memory for the p99: the rest. */
	s->p99_delay_ns = err || *n == first ? 0 : rk_sched_p99(*d + first, *n - first);
	return err;
}

int rk_sched_sum_window_into(const struct rk_tl_thread *t, __u64 lo, __u64 hi,
			     struct rk_sched_sum *s, __u64 **d, size_t *n, size_t *cap)
{
	return rk_sched_sum_hist(t, lo, hi, s, NULL, d, n, cap);
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

/* ---- the report: rows of threads, processes or comms; sorted, cut, printed ---- */

/* One row: a thread, or a group of them (--by process|comm) laid next to each other. */
struct row {
	struct rk_sched_sum s; /* in the asked window */
	struct rk_sched_hist *h; /* --hist: its histograms */
	const struct rk_tl_thread *t; /* the thread; a group's first (its process's leader if seen) */
	__u32 tgid;
	size_t nthreads, nprocs, nwrapped;
	unsigned long long overwritten;
	size_t d0, dn; /* its delays: rowd[d0, d0 + dn) */
	size_t seq; /* its place in group order (the ties' order) */
};

/* What one report holds while it is built. */
struct report {
	const struct rk_timeline *tl;
	const struct rk_sched_opts *o;
	const struct rk_tl_thread **order; /* the threads, grouped */
	struct row *rows;
	size_t nrows, shown, no_runs;
	__u64 *rowd, *alld; /* the rows' delays; the totals' (when their window differs) */
	size_t nrowd, caprowd, nalld, capalld;
	struct rk_sched_sum tot;
	struct rk_sched_hist *tot_h; /* --hist: the totals' (their window's) */
	__u64 lo, first, last; /* the totals' window */
	size_t nwrapped;
	int dfail;
};

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
	if (s->first_ns && (!tot->first_ns || s->first_ns < tot->first_ns))
		tot->first_ns = s->first_ns;
	if (s->last_ns > tot->last_ns)
		tot->last_ns = s->last_ns;
}

static void add_hist(struct rk_sched_hist *to, const struct rk_sched_hist *h)
{
	int i, k;

	for (i = 0; i < RK_HIST_SLOTS; i++) {
		to->delay[i] += h->delay[i];
		to->run[i] += h->run[i];
		for (k = 0; k < RK_OFF_NR; k++)
			to->off[k][i] += h->off[k][i];
	}
}

static unsigned long long off_total(const struct rk_sched_sum *s)
{
	unsigned long long v = 0;
	int k;

	for (k = 0; k < RK_OFF_NR; k++)
		v += s->off_ns[k];
	return v;
}

/* Threads in the order their rows group them: by tid; tgid, tid; comm, tgid, tid. */
static int group_cmp(const void *a, const void *b, void *arg)
{
	const struct rk_tl_thread *x = *(const struct rk_tl_thread *const *)a;
	const struct rk_tl_thread *y = *(const struct rk_tl_thread *const *)b;
	int by = *(const int *)arg, c;

	if (by == RK_SCHED_BY_COMM && (c = strncmp(x->id.comm, y->id.comm, RK_COMM_LEN)))
		return c;
	if (by != RK_SCHED_BY_THREAD && x->id.tgid != y->id.tgid)
		return x->id.tgid < y->id.tgid ? -1 : 1;
	return x->id.tid < y->id.tid ? -1 : x->id.tid > y->id.tid;
}

static int same_group(const struct report *r, const struct rk_tl_thread *a,
		      const struct rk_tl_thread *b)
{
	if (r->o->by == RK_SCHED_BY_PROCESS)
		return a->id.tgid == b->id.tgid;
	if (r->o->by == RK_SCHED_BY_COMM)
		return !strncmp(a->id.comm, b->id.comm, RK_COMM_LEN);
	return 0;
}

/*
 * Step 1: every thread's figures, in group order: the row window's into
 * its row (delays into rowd, contiguous per group), the totals' window's
 * into the totals. Return: 0 or -ENOMEM.
 */
static int sum_rows(struct report *r)
{
	const struct rk_sched_opts *o = r->o;
	size_t i, n = r->tl->nthreads;
	int by = o->by;

	r->order = calloc(n ? n : 1, sizeof(*r->order));
	r->rows = calloc(n ? n : 1, sizeof(*r->rows));
	if (!r->order || !r->rows)
		return -ENOMEM;
	if (o->hist && !(r->tot_h = calloc(1, sizeof(*r->tot_h))))
		return -ENOMEM;
	for (i = 0; i < n; i++)
		r->order[i] = &r->tl->threads[i];
	qsort_r(r->order, n, sizeof(*r->order), group_cmp, &by);
	for (i = 0; i < n; i++) {
		const struct rk_tl_thread *t = r->order[i];
		struct rk_sched_hist th, wh, *hp = NULL, *whp = NULL;
		struct rk_sched_sum s, w;
		struct row *row;

		if (o->hist) {
			memset(&th, 0, sizeof(th));
			hp = &th;
		}
		/* The totals' histograms are of the totals' window, as their figures. */
		if (o->hist && r->lo != o->lo) {
			memset(&wh, 0, sizeof(wh));
			whp = &wh;
		}
		if (!r->nrows || !same_group(r, r->rows[r->nrows - 1].t, t)) {
			row = &r->rows[r->nrows++];
			row->t = t;
			row->tgid = t->id.tgid;
			row->d0 = r->nrowd;
			row->seq = r->nrows - 1;
			if (o->hist_rows && !(row->h = calloc(1, sizeof(*row->h))))
				return -ENOMEM;
		}
		row = &r->rows[r->nrows - 1];
		r->dfail |= !!rk_sched_sum_hist(t, o->lo, o->hi, &s, hp, &r->rowd, &r->nrowd,
						&r->caprowd);
		if (r->lo == o->lo)
			w = s;
		else
			r->dfail |= !!rk_sched_sum_hist(t, r->lo, o->hi, &w, whp, &r->alld,
							&r->nalld, &r->capalld);
		add(&r->tot, &w);
		add(&row->s, &s);
		if (row->h)
			add_hist(row->h, hp);
		if (r->tot_h)
			add_hist(r->tot_h, whp ? whp : hp);
		/* A process's row is named by its leader when the leader is there. */
		if (t->id.tid == t->id.tgid && by == RK_SCHED_BY_PROCESS)
			row->t = t;
		if (row->nthreads && row->tgid != t->id.tgid)
			row->nprocs++;
		if (!row->nthreads)
			row->nprocs = 1;
		row->tgid = t->id.tgid;
		row->nthreads++;
		row->nwrapped += !!t->id.overwritten;
		row->overwritten += t->id.overwritten;
		row->dn = r->nrowd - row->d0;
	}
	return 0;
}

/* Step 2: each row's p99 (of its own delays), the totals'. */
static void p99s(struct report *r)
{
	size_t i;

	for (i = 0; i < r->nrows; i++) {
		struct row *row = &r->rows[i];

		/* No delay at all: no array (NULL + 0 is no pointer arithmetic C allows). */
		row->s.p99_delay_ns =
			r->dfail || !r->rowd ? 0 : rk_sched_p99(r->rowd + row->d0, row->dn);
	}
	if (r->dfail)
		r->tot.p99_delay_ns = 0;
	else if (r->lo == r->o->lo)
		r->tot.p99_delay_ns = rk_sched_p99(r->rowd, r->nrowd);
	else
		r->tot.p99_delay_ns = rk_sched_p99(r->alld, r->nalld);
}

static unsigned long long sort_value(const struct row *x, int key)
{
	switch (key) {
	case RK_SCHED_SORT_ONCPU:
		return x->s.on_ns;
	case RK_SCHED_SORT_DELAY:
		return x->s.delay_ns;
	case RK_SCHED_SORT_OFFCPU:
		return off_total(&x->s);
	case RK_SCHED_SORT_RUNS:
		return x->s.runs;
	}
	return 0;
}

/* Largest first; ties (and --sort tid) in group order. */
static int row_cmp(const void *a, const void *b, void *arg)
{
	const struct row *x = a, *y = b;
	int key = *(const int *)arg;
	unsigned long long vx = sort_value(x, key), vy = sort_value(y, key);

	if (vx != vy)
		return vx > vy ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Step 3: rows with no run left out (unless --all), the rest sorted, the
 * first --top of them shown.
 */
static void cut_rows(struct report *r)
{
	size_t i, k = 0;
	int key = r->o->sort;

	for (i = 0; i < r->nrows; i++) {
		if (!r->o->all && !r->rows[i].s.runs) {
			free(r->rows[i].h);
			r->no_runs++;
			continue;
		}
		r->rows[k++] = r->rows[i];
	}
	r->nrows = k;
	qsort_r(r->rows, r->nrows, sizeof(*r->rows), row_cmp, &key);
	r->shown = r->o->top && r->o->top < r->nrows ? r->o->top : r->nrows;
}

/* The name in a row's first column: its thread's (a group's: its leader's) comm, clean. */
static void row_comm(const struct row *row, char *comm, size_t n)
{
	snprintf(comm, n, "%.*s", RK_COMM_LEN - 1, row->t->id.comm);
	rk_strip_controls(comm);
}

/* The first three columns' headings, by what a row is. */
static void heads(const struct rk_sched_opts *o, const char **a, const char **b)
{
	*a = o->by == RK_SCHED_BY_THREAD ? "tid" : o->by == RK_SCHED_BY_PROCESS ? "pid" : "procs";
	*b = o->by == RK_SCHED_BY_THREAD ? "tgid" : "threads";
}

static void row_ids(const struct rk_sched_opts *o, const struct row *row, unsigned *a, size_t *b)
{
	*a = o->by == RK_SCHED_BY_THREAD  ? row->t->id.tid :
	     o->by == RK_SCHED_BY_PROCESS ? row->tgid :
					    (unsigned)row->nprocs;
	*b = o->by == RK_SCHED_BY_THREAD ? row->t->id.tgid : row->nthreads;
}

/* The wide table (--wide): every column, as before issue 42. */
static void text_wide_figures(FILE *out, const struct rk_sched_sum *s)
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

/* ---- the default table: at most 120 columns, whatever the sums ---- */

/* Units a figure too wide for its column is said in instead: ns per unit, its mark. */
static const struct {
	double ns;
	const char *mark;
} units[] = { { 1e6, "" }, { 1e9, "s" }, { 3.6e12, "h" }, { 8.64e13, "d" }, { 3.15576e16, "y" } };

/* @ns in @width columns, from unit @u on (@u's own mark left out: the column's unit). */
static void fit_time(char *buf, size_t n, int width, __u64 ns, size_t u)
{
	size_t k;
	int d;

	for (d = 3; d >= 0; d--)
		if (snprintf(buf, n, "%.*f", d, (double)ns / units[u].ns) <= width)
			return;
	for (k = u + 1; k < sizeof(units) / sizeof(units[0]); k++)
		if (snprintf(buf, n, "%.0f%s", (double)ns / units[k].ns, units[k].mark) <= width)
			return;
}

void rk_sched_fit_ms(char *buf, size_t n, int width, __u64 ns)
{
	fit_time(buf, n, width, ns, 0);
}

void rk_sched_fit_count(char *buf, size_t n, int width, unsigned long long v)
{
	static const char marks[] = "kMGTPE";
	double x = (double)v;
	int k;

	if (snprintf(buf, n, "%llu", v) <= width)
		return;
	for (k = 0; marks[k]; k++) {
		x /= 1000;
		if (snprintf(buf, n, "%.0f%c", x, marks[k]) <= width)
			return;
	}
}

/*
 * The default table's columns. The sort key is always one of them: --sort
 * delay shows the summed delay in place of the average, --sort off-cpu the
 * off-CPU sum in place of the longest delay (the rest narrower to make
 * room); tid, on-cpu and runs are there already.
 */
enum col_of { C_RUNS, C_ON, C_OFF, C_PRE, C_SLEEP, C_BLOCK, C_DAVG, C_DSUM, C_DMAX, C_DP99 };

struct col {
	enum col_of of;
	int width;
	const char *h1, *h2;
};

#define RK_COL_DELAY                               \
	{                                          \
		C_DAVG, 9, "sch delay", "avg (ms)" \
	}
static const struct col cols_plain[] = {
	{ C_RUNS, 6, "runs", "" },
	{ C_ON, 10, "on-CPU", "(ms)" },
	{ C_PRE, 10, "preempted", "(ms, off)" },
	{ C_SLEEP, 10, "sleeping", "(ms, off)" },
	{ C_BLOCK, 10, "blocked", "(ms, off)" },
	RK_COL_DELAY,
	{ C_DMAX, 8, "max", "(ms)" },
	{ C_DP99, 8, "p99", "(ms)" },
	{ 0, 0, NULL, NULL },
};
static const struct col cols_delay[] = {
	{ C_RUNS, 6, "runs", "" },
	{ C_ON, 10, "on-CPU", "(ms)" },
	{ C_PRE, 10, "preempted", "(ms, off)" },
	{ C_SLEEP, 10, "sleeping", "(ms, off)" },
	{ C_BLOCK, 10, "blocked", "(ms, off)" },
	{ C_DSUM, 9, "sch delay", "sum (ms)" },
	{ C_DMAX, 8, "max", "(ms)" },
	{ C_DP99, 8, "p99", "(ms)" },
	{ 0, 0, NULL, NULL },
};
static const struct col cols_offcpu[] = {
	{ C_RUNS, 6, "runs", "" },
	{ C_ON, 9, "on-CPU", "(ms)" },
	{ C_OFF, 9, "off-CPU", "(ms, sum)" },
	{ C_PRE, 10, "preempted", "(ms, off)" },
	{ C_SLEEP, 10, "sleeping", "(ms, off)" },
	{ C_BLOCK, 10, "blocked", "(ms, off)" },
	RK_COL_DELAY,
	{ C_DP99, 8, "p99", "(ms)" },
	{ 0, 0, NULL, NULL },
};

static const struct col *table_cols(const struct rk_sched_opts *o)
{
	return o->sort == RK_SCHED_SORT_DELAY  ? cols_delay :
	       o->sort == RK_SCHED_SORT_OFFCPU ? cols_offcpu :
						 cols_plain;
}

static void col_value(char *b, size_t n, const struct col *c, const struct rk_sched_sum *s)
{
	switch (c->of) {
	case C_RUNS:
		rk_sched_fit_count(b, n, c->width, s->runs);
		return;
	case C_ON:
		rk_sched_fit_ms(b, n, c->width, s->on_ns);
		return;
	case C_OFF:
		rk_sched_fit_ms(b, n, c->width, off_total(s));
		return;
	case C_PRE:
		rk_sched_fit_ms(b, n, c->width, s->off_ns[RK_OFF_PREEMPTED]);
		return;
	case C_SLEEP:
		rk_sched_fit_ms(b, n, c->width, s->off_ns[RK_OFF_SLEEPING]);
		return;
	case C_BLOCK:
		rk_sched_fit_ms(b, n, c->width, s->off_ns[RK_OFF_BLOCKED]);
		return;
	case C_DAVG:
		rk_sched_fit_ms(b, n, c->width, s->delays ? s->delay_ns / s->delays : 0);
		return;
	case C_DSUM:
		rk_sched_fit_ms(b, n, c->width, s->delay_ns);
		return;
	case C_DMAX:
		rk_sched_fit_ms(b, n, c->width, s->max_delay_ns);
		return;
	case C_DP99:
		rk_sched_fit_ms(b, n, c->width, s->p99_delay_ns);
		return;
	}
}

static void text_figures(FILE *out, const struct rk_sched_opts *o, const struct rk_sched_sum *s)
{
	const struct col *c;
	char b[32];

	for (c = table_cols(o); c->width; c++) {
		col_value(b, sizeof(b), c, s);
		fprintf(out, " %*s", c->width, b);
	}
}

/* The history column: the span in seconds, '*' if a ring wrapped (the span is all there is). */
static void text_history(FILE *out, int wide, __u64 first, __u64 last, int wrapped)
{
	char b[32];

	fit_time(b, sizeof(b), wide ? 9 : 8, last > first ? last - first : 0, 1);
	fprintf(out, " %*s%s\n", wide ? 9 : 8, b, wrapped ? "*" : "");
}

static void text_head(FILE *out, const struct rk_sched_opts *o)
{
	const struct col *c;
	const char *a, *b;
	int row;

	heads(o, &a, &b);
	if (o->wide) {
		fprintf(out,
			"%-16s %8s %8s %7s %11s %9s %9s %11s %11s %11s %11s %11s %5s %9s %9s %9s "
			"%10s\n"
			"%-16s %8s %8s %7s %11s %9s %9s %11s %11s %11s %11s %11s %5s %9s %9s %9s "
			"%10s\n",
			"comm", a, b, "runs", "on-CPU", "avg", "max", "preempted", "sleeping",
			"blocked", "other", "longest off", "migr", "sch delay", "max", "p99",
			"history", "", "", "", "", "(ms)", "(ms)", "(ms)", "(ms, off)", "(ms, off)",
			"(ms, off)", "(ms, off)", "(ms)", "", "(ms, avg)", "(ms)", "(ms)", "(s)");
		return;
	}
	for (row = 0; row < 2; row++) {
		fprintf(out, "%-15s %7s %7s", row ? "" : "comm", row ? "" : a, row ? "" : b);
		for (c = table_cols(o); c->width; c++)
			fprintf(out, " %*s", c->width, row ? c->h2 : c->h1);
		fprintf(out, " %9s\n", row ? "(s)" : "history");
	}
}

static void text_row(FILE *out, const struct rk_sched_opts *o, const struct row *row)
{
	char comm[RK_COMM_LEN];
	unsigned a;
	size_t b;

	row_comm(row, comm, sizeof(comm));
	row_ids(o, row, &a, &b);
	if (o->wide) {
		fprintf(out, "%-16s %8u %8zu", comm, a, b);
		text_wide_figures(out, &row->s);
	} else {
		fprintf(out, "%-15s %7u %7zu", comm, a, b);
		text_figures(out, o, &row->s);
	}
	text_history(out, o->wide, row->s.first_ns, row->s.last_ns, !!row->nwrapped);
}

/* One log2 histogram as bcc prints it (table.py _print_log2_hist, 40 stars). */
static void hist_print(FILE *out, const __u64 *v, const char *unit)
{
	int i, idx_max = -1, wide, stars;
	__u64 vmax = 0;

	for (i = 0; i < RK_HIST_SLOTS; i++) {
		if (v[i])
			idx_max = i;
		if (v[i] > vmax)
			vmax = v[i];
	}
	if (idx_max <= 0)
		return;
	wide = idx_max > 32;
	stars = wide ? 20 : 40;
	fprintf(out,
		wide ? "               %-29s : count     distribution\n" :
		       "     %-19s : count     distribution\n",
		unit);
	for (i = 1; i <= idx_max; i++) {
		unsigned long long low = (1ull << i) >> 1, high = (1ull << i) - 1;
		int n = (int)(stars * v[i] / vmax), j;

		if (low == high)
			low--;
		fprintf(out, wide ? "%20llu -> %-20llu : %-8llu |" : "%10llu -> %-10llu : %-8llu |",
			low, high, (unsigned long long)v[i]);
		for (j = 0; j < stars; j++)
			fputc(j < n ? '*' : ' ', out);
		fputs("|\n", out);
	}
}

/* A row's or the session's histograms, each where it counted something. */
static void hist_set(FILE *out, const struct rk_sched_sum *s, const struct rk_sched_hist *h)
{
	int k;

	fprintf(out, ": %llu runs, %llu with a scheduling delay\n", s->runs, s->delays);
	if (s->delays) {
		fprintf(out, "scheduling delay:\n");
		hist_print(out, h->delay, "usecs");
	}
	if (s->runs) {
		fprintf(out, "run length (on CPU):\n");
		hist_print(out, h->run, "usecs");
	}
	for (k = 0; k < RK_OFF_NR; k++) {
		if (!s->offs[k])
			continue;
		fprintf(out, "off CPU, %s:\n", rk_offcpu_name(k));
		hist_print(out, h->off[k], "usecs");
	}
}

static void text_hists(FILE *out, const struct rk_sched_opts *o, const struct row *row)
{
	char comm[RK_COMM_LEN];

	row_comm(row, comm, sizeof(comm));
	if (o->by == RK_SCHED_BY_THREAD)
		fprintf(out, "\ntid %u %s (pid %u)", row->t->id.tid, comm, row->tgid);
	else if (o->by == RK_SCHED_BY_PROCESS)
		fprintf(out, "\npid %u %s (%zu threads)", row->tgid, comm, row->nthreads);
	else
		fprintf(out, "\ncomm %s (%zu threads)", comm, row->nthreads);
	hist_set(out, &row->s, row->h);
}

/* A histogram in JSON: element k counts values in [2^k, 2^(k+1)) us (element 0 also 0). */
static void json_slots(FILE *out, const __u64 *v)
{
	int i, idx_max = 0;

	for (i = 1; i < RK_HIST_SLOTS; i++)
		if (v[i])
			idx_max = i;
	fputc('[', out);
	for (i = 1; i <= idx_max; i++)
		fprintf(out, "%s%llu", i > 1 ? "," : "", (unsigned long long)v[i]);
	fputc(']', out);
}

static void json_hist(FILE *out, const struct rk_sched_hist *h)
{
	int k;

	fprintf(out, ",\"hist\":{\"unit\":\"us\",\"sch_delay\":");
	json_slots(out, h->delay);
	fprintf(out, ",\"run\":");
	json_slots(out, h->run);
	fprintf(out, ",\"off_cpu\":{");
	for (k = 0; k < RK_OFF_NR; k++) {
		fprintf(out, "%s\"%s\":", k ? "," : "", rk_offcpu_name(k));
		json_slots(out, h->off[k]);
	}
	fprintf(out, "}}");
}

static void json_row(FILE *out, const struct rk_sched_opts *o, const struct row *row)
{
	const struct rk_tl_thread *t = row->t;

	if (o->by == RK_SCHED_BY_THREAD)
		fprintf(out, "{\"tid\":%u,\"tgid\":%u,\"comm\":", t->id.tid, t->id.tgid);
	else if (o->by == RK_SCHED_BY_PROCESS)
		fprintf(out, "{\"tgid\":%u,\"threads\":%zu,\"comm\":", row->tgid, row->nthreads);
	else
		fprintf(out, "{\"processes\":%zu,\"threads\":%zu,\"comm\":", row->nprocs,
			row->nthreads);
	rk_json_str(out, t->id.comm);
	fprintf(out, ",");
	json_sum(out, &row->s);
	fprintf(out, ",\"first_ns\":%llu,\"last_ns\":%llu,", (unsigned long long)row->s.first_ns,
		(unsigned long long)row->s.last_ns);
	if (o->by == RK_SCHED_BY_THREAD) {
		fprintf(out, "\"wrapped\":%s,\"overwritten\":%llu,\"state\":",
			row->nwrapped ? "true" : "false", row->overwritten);
		rk_json_str(out, rk_thread_state_name(t->id.state));
	} else {
		fprintf(out, "\"wrapped_threads\":%zu,\"overwritten\":%llu", row->nwrapped,
			row->overwritten);
	}
	if (row->h)
		json_hist(out, row->h);
	fputc('}', out);
}

static const char *const by_names[] = { "thread", "process", "comm" };
static const char *const sort_names[] = { "tid", "on-cpu", "delay", "off-cpu", "runs" };

/* Step 4: the document, or the table (or histograms) and its notes. */
static void print_json(FILE *out, struct report *r)
{
	static const char *const arrays[] = { "threads", "processes", "comms" };
	size_t i;

	fprintf(out, "{\"%s\":[", arrays[r->o->by]);
	for (i = 0; i < r->shown; i++) {
		if (i)
			fputc(',', out);
		json_row(out, r->o, &r->rows[i]);
	}
	fprintf(out, "],\"total\":{\"threads\":%zu,", r->tl->nthreads);
	json_sum(out, &r->tot);
	fprintf(out,
		",\"window\":{\"first_ns\":%llu,\"last_ns\":%llu},\"wrapped_threads\":%zu,"
		"\"by\":\"%s\",\"sort\":\"%s\",\"rows\":%zu,\"left_out\":{\"no_runs\":%zu,"
		"\"past_top\":%zu}",
		(unsigned long long)r->first, (unsigned long long)r->last, r->nwrapped,
		by_names[r->o->by], sort_names[r->o->sort], r->shown, r->no_runs,
		r->nrows - r->shown);
	if (r->tot_h)
		json_hist(out, r->tot_h);
	fputc('}', out);
	rk_loss_json(out, r->o->loss);
	fputs("}\n", out);
}

/* A note under the table, "# " and words wrapped to fit 120 columns. */
static void __attribute__((format(printf, 2, 3))) note(FILE *out, const char *fmt, ...)
{
	char buf[1024], *p = buf;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	while (*p) {
		size_t n = strlen(p), cut = n;

		if (n > 116) {
			for (cut = 116; cut > 0 && p[cut] != ' '; cut--)
				;
			if (!cut)
				cut = 116;
		}
		fprintf(out, "%s%.*s\n", p == buf ? "# " : "#   ", (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
	}
}

static void text_notes(FILE *out, const struct report *r)
{
	const struct rk_sched_opts *o = r->o;
	int rows = !o->hist || o->hist_rows;

	if (rows && r->nrows > r->shown)
		note(out, "the first %zu of %zu rows by %s (--top); the total is of all", r->shown,
		     r->nrows, sort_names[o->sort]);
	if (rows && r->no_runs)
		note(out,
		     "%zu thread%s with no complete run left out (--all shows them); the "
		     "total counts them",
		     r->no_runs, r->no_runs == 1 ? "" : "s");
	if (r->nwrapped && !rows)
		note(out,
		     "%zu thread%s ring wrapped (older runs overwritten; perf, which saw them, "
		     "counts more): the histograms cover the last %.3f s, where every thread's "
		     "history is whole",
		     r->nwrapped, r->nwrapped == 1 ? "'s" : "s'",
		     (double)(r->last - r->first) / 1e9);
	else if (r->nwrapped)
		note(out,
		     "*: %zu thread%s ring wrapped: %s row covers only the history shown (its "
		     "older runs were overwritten; perf, which saw them, counts more); the total "
		     "covers the last %.3f s, where every thread's history is whole",
		     r->nwrapped, r->nwrapped == 1 ? "'s" : "s'", r->nwrapped == 1 ? "its" : "each",
		     (double)(r->last - r->first) / 1e9);
	if (!r->tot.wakeups && r->tot.runs)
		note(out, "sch delay: no wakeups in these histories (`record --wakeups` records "
			  "them): only the waits after a preemption are counted");
	else if (r->tot.delays)
		note(out, "%s", RK_SCHED_DELAY_DEF);
	if (r->tot.offs[RK_OFF_UNKNOWN])
		note(out,
		     "%llu off-CPU periods of unknown state: recorded by a ringkeeper that "
		     "did not keep it (before December 2026)",
		     r->tot.offs[RK_OFF_UNKNOWN]);
	/* Dropped switches make runs and delays out of thin air: said, with how many. */
	rk_loss_say(out, o->loss, "# ");
}

/*
 * --hist without rows: the session's histograms, as runqlat's are (of the
 * totals' window), then the notes that are not about rows.
 */
static void print_session_hists(FILE *out, struct report *r)
{
	fprintf(out, "all %zu threads", r->tl->nthreads);
	if (r->nwrapped || r->o->lo)
		fprintf(out, " (the %.3f s from %.3f s on)", (double)(r->last - r->first) / 1e9,
			(double)r->first / 1e9);
	hist_set(out, &r->tot, r->tot_h);
	fputc('\n', out);
	text_notes(out, r);
}

static void print_text(FILE *out, struct report *r)
{
	const struct rk_sched_opts *o = r->o;
	size_t i;

	if (o->hist && !o->hist_rows) {
		print_session_hists(out, r);
		return;
	}
	if (o->hist) {
		for (i = 0; i < r->shown; i++)
			text_hists(out, o, &r->rows[i]);
		if (r->shown)
			fputc('\n', out);
		text_notes(out, r);
		return;
	}
	text_head(out, o);
	for (i = 0; i < r->shown; i++)
		text_row(out, o, &r->rows[i]);
	if (o->wide) {
		fprintf(out, "%-16s %8s %8zu", "total", "threads:", r->tl->nthreads);
		text_wide_figures(out, &r->tot);
	} else {
		char n[32];

		snprintf(n, sizeof(n), "%zu threads", r->tl->nthreads);
		fprintf(out, "%-15s %15s", "total", n);
		text_figures(out, o, &r->tot);
	}
	text_history(out, o->wide, r->first, r->last, 0);
	text_notes(out, r);
}

/* The totals' window, as said: from the latest wrapped start (or --time's) to the end. */
static void window(struct report *r)
{
	__u64 first = r->tot.first_ns, last = r->tot.last_ns;

	if (!first || first > last)
		first = last = 0;
	if (r->lo > first)
		first = r->lo;
	if (r->o->hi < last)
		last = r->o->hi;
	if (first > last)
		first = last;
	r->first = first;
	r->last = last;
}

int rk_sched_report(FILE *out, const struct rk_timeline *tl, const struct rk_sched_opts *o)
{
	struct report r = { .tl = tl, .o = o };
	size_t i;
	int err;

	/*
	 * A thread whose ring wrapped lost its oldest runs: the totals cover
	 * only the time every thread's history is whole in, not a mix of
	 * windows (its rows: its own, marked).
	 */
	r.lo = rk_sched_window(tl, &r.nwrapped);
	if (o->lo > r.lo)
		r.lo = o->lo;
	err = sum_rows(&r);
	if (err)
		goto out;
	p99s(&r);
	cut_rows(&r);
	window(&r);
	if (o->json)
		print_json(out, &r);
	else
		print_text(out, &r);
out:
	for (i = 0; i < r.nrows; i++)
		free(r.rows[i].h);
	free(r.tot_h);
	free(r.rows);
	free(r.order);
	free(r.rowd);
	free(r.alld);
	return err;
}

void rk_sched_print(FILE *out, const struct rk_timeline *tl, int json)
{
	rk_sched_print_window(out, tl, json, 0, ~0ull);
}

void rk_sched_print_window(FILE *out, const struct rk_timeline *tl, int json, __u64 from, __u64 to)
{
	struct rk_sched_opts o = { .json = json, .all = 1, .lo = from, .hi = to };

	rk_sched_report(out, tl, &o);
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

/* ---- top: each thread's last window ---- */

static __u64 overlap(__u64 a, __u64 b, __u64 lo, __u64 hi)
{
	if (a < lo)
		a = lo;
	if (b > hi)
		b = hi;
	return b > a ? b - a : 0;
}

void rk_sched_now(const struct rk_tl_thread *t, __u64 lo, __u64 hi, struct rk_sched_now *n)
{
	__u64 in = 0, ready = 0;
	int seen_in = 0;
	size_t i;

	memset(n, 0, sizeof(*n));
	n->state = RK_NOW_UNKNOWN;
	for (i = 0; i < t->nev && t->ev[i].time <= hi; i++) {
		const struct rk_tl_event *e = &t->ev[i];

		if (e->kind == RK_TL_WAKEUP) {
			if (!ready)
				ready = e->time;
			if (n->state != RK_NOW_RUNNING)
				n->state = RK_NOW_RUNNABLE;
		} else if (e->kind == RK_TL_IN) {
			if (e->time >= lo) {
				n->runs++;
				if (ready && ready <= e->time) {
					n->delay_ns += e->time - ready;
					if (e->time - ready > n->max_delay_ns)
						n->max_delay_ns = e->time - ready;
				}
			}
			in = e->time;
			seen_in = 1;
			ready = 0;
			n->state = RK_NOW_RUNNING;
		} else if (e->kind == RK_TL_OUT) {
			enum rk_offcpu k = rk_offcpu_of(e->arg);

			if (seen_in)
				n->on_ns += overlap(in, e->time, lo, hi);
			seen_in = 0;
			ready = k == RK_OFF_PREEMPTED ? e->time : 0;
			n->state = k == RK_OFF_PREEMPTED ? RK_NOW_RUNNABLE : (int)k + RK_NOW_OFF;
		} else if (e->kind == RK_TL_EXIT || e->kind == RK_TL_CRASH) {
			n->state = RK_NOW_EXITED;
		}
	}
	/* Still on CPU at the window's end: its run so far. */
	if (seen_in && n->state == RK_NOW_RUNNING)
		n->on_ns += overlap(in, hi, lo, hi);
	/* Waiting for a CPU now: its delay so far (a late thread shows before it runs). */
	if (ready && n->state == RK_NOW_RUNNABLE && hi > ready) {
		n->delay_ns += overlap(ready, hi, lo, hi);
		if (hi - ready > n->max_delay_ns)
			n->max_delay_ns = hi - ready;
	}
	if (t->id.state != 0 && t->id.state != 1)
		n->state = RK_NOW_EXITED;
	n->active = n->runs || n->on_ns || n->delay_ns;
}

const char *rk_sched_now_state(int state)
{
	if (state == RK_NOW_RUNNING)
		return "running";
	if (state == RK_NOW_RUNNABLE)
		return "runnable";
	if (state == RK_NOW_EXITED)
		return "exited";
	if (state >= RK_NOW_OFF && state < RK_NOW_OFF + RK_OFF_NR)
		return rk_offcpu_name(state - RK_NOW_OFF);
	return "-";
}
