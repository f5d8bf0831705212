// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* offcpu.c - off-CPU time by stack (see offcpu.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "offcpu.h"

/* The name @t has at its event @upto (its names change at exec and rename). */
static const char *name_at(const struct rk_tl_thread *t, size_t upto)
{
	const char *n = t->nnames ? t->names[0] : t->id.comm;
	size_t i;

	for (i = 0; i < upto && i < t->nev; i++)
		if (t->ev[i].kind == RK_TL_EXEC || t->ev[i].kind == RK_TL_COMM)
			if (t->ev[i].arg < t->nnames)
				n = t->names[t->ev[i].arg];
	return n;
}

/*
 * The stack of the switch-out at @t->ev[@i]: the index of the switch stack
 * right after it, RK_OFFCPU_MISSED for a sleep whose stack is not there
 * (dropped, lost; in a session that has stacks), SIZE_MAX for none to have
 * (a preemption, the final switch-out, a session without --offcpu).
 */
static size_t out_stack(const struct rk_timeline *tl, const struct rk_tl_thread *t, size_t i)
{
	const struct rk_tl_event *s = i + 1 < t->nev ? &t->ev[i + 1] : NULL;
	enum rk_offcpu why = rk_offcpu_of(t->ev[i].arg);

	if (s && s->kind == RK_TL_STACK && s->arg2 == RK_STACK_OF_SWITCH && s->arg < tl->nstacks)
		return s->arg;
	if (!tl->nstacks || why == RK_OFF_PREEMPTED || why == RK_OFF_DEAD || why == RK_OFF_UNKNOWN)
		return SIZE_MAX;
	return RK_OFFCPU_MISSED;
}

/*
 * One thread's spans: a switch-out with a stack (or whose stack was missed)
 * until the next IN.
 */
static int thread_spans(const struct rk_timeline *tl, size_t ti, struct rk_offcpu_span **v,
			size_t *n, size_t *cap)
{
	const struct rk_tl_thread *t = &tl->threads[ti];
	size_t i, j, stack;

	for (i = 0; i + 1 < t->nev; i++) {
		const struct rk_tl_event *e = &t->ev[i];

		if (e->kind != RK_TL_OUT || (stack = out_stack(tl, t, i)) == SIZE_MAX)
			continue;
		for (j = i + 1;
		     j < t->nev && t->ev[j].kind != RK_TL_IN && t->ev[j].kind != RK_TL_OUT; j++)
			;
		if (j == t->nev || t->ev[j].kind != RK_TL_IN)
			continue; /* still off CPU when the history ends, or a switch lost */
		if (*n == *cap) {
			size_t c = *cap ? *cap * 2 : 256;
			struct rk_offcpu_span *p = realloc(*v, c * sizeof(*p));

			if (!p)
				return -ENOMEM;
			*v = p;
			*cap = c;
		}
		(*v)[*n] = (struct rk_offcpu_span){ .thread = ti,
						    .stack = stack,
						    .out = e->time,
						    .in = t->ev[j].time,
						    .comm = name_at(t, i) };
		(*n)++;
	}
	return 0;
}

int rk_offcpu_spans(const struct rk_timeline *tl, struct rk_offcpu_span **spans, size_t *n)
{
	size_t cap = 0, i;
	int err = 0;

	*spans = NULL;
	*n = 0;
	for (i = 0; i < tl->nthreads && !err; i++)
		err = thread_spans(tl, i, spans, n, &cap);
	if (err) {
		free(*spans);
		*spans = NULL;
		*n = 0;
	}
	return err;
}

/* @s appended to @buf at *@at as one folded frame (';' and blanks made '_'), after a ';'. */
static void put_frame(char *buf, size_t len, size_t *at, const char *s, int sep)
{
	if (sep && *at + 1 < len)
		buf[(*at)++] = ';';
	for (; *s && *at + 1 < len; s++)
		buf[(*at)++] = *s == ';' || *s == ' ' || *s == '\n' || *s == '\t' ? '_' : *s;
	buf[*at < len ? *at : len - 1] = '\0';
}

size_t rk_offcpu_folded_stack(const struct rk_timeline *tl, const struct rk_offcpu_span *sp,
			      int kernel, char *buf, size_t len)
{
	const struct rk_tl_stack *s;
	size_t at = 0, i;

	buf[0] = '\0';
	put_frame(buf, len, &at, sp->comm, 0);
	if (sp->stack == RK_OFFCPU_MISSED) {
		put_frame(buf, len, &at, "[missed-stack]", 1);
		return at;
	}
	s = &tl->stacks[sp->stack];
	/* Root first: user frames from the outermost, then the kernel's. */
	for (i = s->nuser; i-- > 0;)
		put_frame(buf, len, &at,
			  s->nframes ? rk_tl_str(tl, tl->frames[s->frame0 + s->nkernel + i].sym) :
				       "[unknown]",
			  1);
	for (i = kernel ? s->nkernel : 0; i-- > 0;)
		put_frame(buf, len, &at,
			  s->nframes ? rk_tl_str(tl, tl->frames[s->frame0 + i].sym) : "[unknown]",
			  1);
	return at;
}

/* A folded line and its weight, with whose it is (per-thread and per-process rankings). */
struct fold {
	char *line;
	__u64 value;
	__u64 count;
	__u32 tid, tgid;
};

static int cmp_line(const void *a, const void *b)
{
	const struct fold *x = a, *y = b;

	return strcmp(x->line, y->line);
}

/* Equal lines of @v (sorted) summed into the first; Return: how many are left. */
static size_t merge_equal(struct fold *v, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (k && !strcmp(v[k - 1].line, v[i].line)) {
			v[k - 1].value += v[i].value;
			v[k - 1].count += v[i].count;
			free(v[i].line);
			continue;
		}
		v[k++] = v[i];
	}
	return k;
}

static void free_folds(struct fold *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].line);
	free(v);
}

/* Off-CPU spans as folds (with @suffix at the leaf), appended to @v. */
static int offcpu_folds(const struct rk_timeline *tl, const char *suffix, int kernel,
			struct fold **v, size_t *n, size_t *cap)
{
	struct rk_offcpu_span *sp;
	size_t nsp, i;
	char buf[8192];
	int err = rk_offcpu_spans(tl, &sp, &nsp);

	for (i = 0; i < nsp && !err; i++) {
		size_t at = rk_offcpu_folded_stack(tl, &sp[i], kernel, buf, sizeof(buf));

		if (suffix)
			put_frame(buf, sizeof(buf), &at, suffix, 1);
		if (*n == *cap) {
			size_t c = *cap ? *cap * 2 : 256;
			struct fold *p = realloc(*v, c * sizeof(*p));

			if (!p) {
				err = -ENOMEM;
				break;
			}
			*v = p;
			*cap = c;
		}
		(*v)[*n] = (struct fold){ .line = strdup(buf),
					  .value = sp[i].in - sp[i].out,
					  .count = 1,
					  .tid = tl->threads[sp[i].thread].id.tid,
					  .tgid = tl->threads[sp[i].thread].id.tgid };
		if (!(*v)[*n].line)
			err = -ENOMEM;
		else
			(*n)++;
	}
	free(sp);
	return err;
}

/* The name of the thread @tid in @tl (its last), or "?". */
static const char *comm_of(const struct rk_timeline *tl, __u32 tid)
{
	size_t lo = 0, hi = tl->nthreads;

	while (lo < hi) {
		size_t m = (lo + hi) / 2;

		if (tl->threads[m].id.tid < tid)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < tl->nthreads && tl->threads[lo].id.tid == tid ? tl->threads[lo].id.comm : "?";
}

/* The -e samples with frames as folds (root first, weighted by their period), appended. */
static int oncpu_folds(const struct rk_timeline *tl, struct fold **v, size_t *n, size_t *cap)
{
	char buf[8192];
	size_t i, j, at;

	for (i = 0; i < tl->nsamples; i++) {
		const struct rk_tl_sample *s = &tl->samples[i];

		if (!s->nframes || !s->period)
			continue;
		at = 0;
		put_frame(buf, sizeof(buf), &at, comm_of(tl, s->tid), 0);
		for (j = s->nframes; j-- > 0;)
			put_frame(buf, sizeof(buf), &at,
				  rk_tl_str(tl, tl->frames[s->frame0 + j].sym), 1);
		if (*n == *cap) {
			size_t c = *cap ? *cap * 2 : 256;
			struct fold *p = realloc(*v, c * sizeof(*p));

			if (!p)
				return -ENOMEM;
			*v = p;
			*cap = c;
		}
		(*v)[*n] = (struct fold){ .line = strdup(buf),
					  .value = s->period,
					  .count = 1,
					  .tid = s->tid,
					  .tgid = s->tgid };
		if (!(*v)[*n].line)
			return -ENOMEM;
		(*n)++;
	}
	return 0;
}

int rk_offcpu_folded(const struct rk_timeline *tl, int what, FILE *out, size_t *lines)
{
	struct fold *v = NULL;
	size_t n = 0, cap = 0, i;
	int err = 0;

	*lines = 0;
	if (what & RK_FOLD_OFFCPU)
		err = offcpu_folds(tl, what & RK_FOLD_ONCPU ? "[off-cpu]" : NULL,
				   !(what & RK_FOLD_NO_KERNEL), &v, &n, &cap);
	if (!err && what & RK_FOLD_ONCPU)
		err = oncpu_folds(tl, &v, &n, &cap);
	if (!err && n) {
		qsort(v, n, sizeof(*v), cmp_line);
		n = merge_equal(v, n);
		for (i = 0; i < n; i++)
			fprintf(out, "%s %llu\n", v[i].line, (unsigned long long)v[i].value);
		*lines = n;
		if (ferror(out))
			err = -EIO;
	}
	free_folds(v, n);
	return err;
}

/* By whose (tid, or tgid with @by_proc), then heaviest first. */
static int by_proc;

static int cmp_rank(const void *a, const void *b)
{
	const struct fold *x = a, *y = b;
	__u32 kx = by_proc ? x->tgid : x->tid, ky = by_proc ? y->tgid : y->tid;

	if (kx != ky)
		return kx < ky ? -1 : 1;
	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return strcmp(x->line, y->line);
}

/* Equal (owner, line) pairs of @v summed: sorted by owner and line first. */
static int cmp_owner_line(const void *a, const void *b)
{
	const struct fold *x = a, *y = b;
	__u32 kx = by_proc ? x->tgid : x->tid, ky = by_proc ? y->tgid : y->tid;

	if (kx != ky)
		return kx < ky ? -1 : 1;
	return strcmp(x->line, y->line);
}

static size_t merge_owned(struct fold *v, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (k && !cmp_owner_line(&v[k - 1], &v[i])) {
			v[k - 1].value += v[i].value;
			v[k - 1].count += v[i].count;
			free(v[i].line);
			continue;
		}
		v[k++] = v[i];
	}
	return k;
}

/* One ranking (per thread, or per process with by_proc): owners in order, stacks by weight. */
static void print_ranking(FILE *out, const struct rk_timeline *tl, struct fold *v, size_t n,
			  size_t top)
{
	size_t i = 0, j, k;

	while (i < n) {
		__u32 key = by_proc ? v[i].tgid : v[i].tid;
		__u64 total = 0;

		for (j = i; j < n && (by_proc ? v[j].tgid : v[j].tid) == key; j++)
			total += v[j].value;
		if (by_proc)
			fprintf(out, "  pid %u: %.3f ms off CPU with a stack\n", key, total / 1e6);
		else
			fprintf(out, "  tid %u %s (pid %u): %.3f ms off CPU with a stack\n", key,
				comm_of(tl, key), v[i].tgid, total / 1e6);
		for (k = i; k < j && (!top || k - i < top); k++)
			fprintf(out, "    %12.3f ms %5.1f%% %6llu  %s\n", v[k].value / 1e6,
				total ? 100.0 * (double)v[k].value / (double)total : 0.0,
				(unsigned long long)v[k].count, v[k].line);
		if (k < j)
			fprintf(out, "    ... %zu more stacks\n", j - k);
		i = j;
	}
}

int rk_offcpu_print(FILE *out, const struct rk_timeline *tl, size_t top)
{
	struct fold *v = NULL;
	size_t n = 0, cap = 0;
	int err = offcpu_folds(tl, NULL, 1, &v, &n, &cap);

	if (err) {
		free_folds(v, n);
		return err;
	}
	if (!n) {
		fprintf(out, "No off-CPU stacks: record with --offcpu (stacks are taken at "
			     "switch-outs into a sleep, not at preemptions).\n");
		free(v);
		return 0;
	}
	fprintf(out, "Off-CPU time by blocking stack (from each switch-out into a sleep to the "
		     "next switch-in; stacks root first: comm;user;kernel)\n");
	fprintf(out, "\nPer thread:\n");
	by_proc = 0;
	qsort(v, n, sizeof(*v), cmp_owner_line);
	n = merge_owned(v, n);
	qsort(v, n, sizeof(*v), cmp_rank);
	print_ranking(out, tl, v, n, top);
	/* Per process: the comm (the first frame) stays; threads of one name sum up. */
	fprintf(out, "\nPer process:\n");
	by_proc = 1;
	qsort(v, n, sizeof(*v), cmp_owner_line);
	n = merge_owned(v, n);
	qsort(v, n, sizeof(*v), cmp_rank);
	print_ranking(out, tl, v, n, top);
	free_folds(v, n);
	return 0;
}
