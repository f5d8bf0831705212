/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * offcpu.h - off-CPU time by stack (record --offcpu): each stretch from a
 * switch-out into a sleep to the thread's next switch-in, charged to the
 * stacks it blocked in; as folded stacks (flamegraph.pl, speedscope,
 * Perfetto) and as `sched --offcpu`'s ranking per thread and per process.
 * Owns: nothing past the calls.
 * May call: timeline, util.
 */
#ifndef RK_OFFCPU_H
#define RK_OFFCPU_H

#include <stdio.h>
#include "timeline.h"

/**
 * struct rk_offcpu_span - one stretch off CPU with its blocking stack.
 * @thread: index in tl->threads; @stack: index in tl->stacks, or
 *	RK_OFFCPU_MISSED.
 * @out, @in: the switch-out and the next switch-in (CLOCK_MONOTONIC ns).
 * @comm: the thread's name then (offset in tl->strs is not kept: a pointer
 *	into the thread's names).
 */
struct rk_offcpu_span {
	size_t thread, stack;
	__u64 out, in;
	const char *comm;
};

/* A span's @stack when its sleep's stack is not in the files (bcc: "[Missed User Stack]"). */
#define RK_OFFCPU_MISSED ((size_t)-2)

/**
 * rk_offcpu_spans() - every switch-out of @tl's threads that has a stack
 * (a sleep, recorded with --offcpu) and a switch-in after it, oldest first
 * per thread, into *@spans (malloc'd, *@n of them; NULL if none). In a
 * timeline that has stacks, a sleep whose stack is missing (the stack rings
 * were full, or the stack was lost) is a span too, its @stack
 * RK_OFFCPU_MISSED: its time is never left out.
 * Return: 0, -ENOMEM.
 */
int rk_offcpu_spans(const struct rk_timeline *tl, struct rk_offcpu_span **spans, size_t *n);

/**
 * rk_offcpu_folded_stack() - span @sp's stack as folded frames, root
 * first: "comm;user...;kernel..." (bcc offcputime -f's order), into @buf.
 * A ';' or space in a name becomes '_'. @kernel 0: the user frames only.
 * A missed stack is the one frame "[missed-stack]".
 * Return: the length (truncated at @len - 1).
 */
size_t rk_offcpu_folded_stack(const struct rk_timeline *tl, const struct rk_offcpu_span *sp,
			      int kernel, char *buf, size_t len);

#define RK_FOLD_OFFCPU 1 /* off-CPU time by blocking stack, in ns */
#define RK_FOLD_ONCPU 2 /* the -e samples with call chains, weighted by their period */
#define RK_FOLD_NO_KERNEL 4 /* off-CPU stacks without their kernel frames (offcputime -U) */

/**
 * rk_offcpu_folded() - @what (RK_FOLD_*) of @tl as folded stacks, one
 * line per distinct stack ("frame;...;frame VALUE", sorted), into @out.
 * Both at once: off-CPU lines end with a "[off-cpu]" frame.
 * @lines: set to the lines written. Return: 0, -ENOMEM, -EIO.
 */
int rk_offcpu_folded(const struct rk_timeline *tl, int what, FILE *out, size_t *lines);

/**
 * rk_offcpu_print() - `sched --offcpu`: per thread, then per process, its
 * off-CPU time in sleeps with a stack, and the stacks ranked by it (at
 * most @top each, 0: all) with their share and count. Return: 0, -ENOMEM.
 */
int rk_offcpu_print(FILE *out, const struct rk_timeline *tl, size_t top);

#endif /* RK_OFFCPU_H */
