// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record --offcpu's stack records (rk_stack_parse: the valid, empty, full,
 * overflowing and malformed cases) and the off-CPU spans and folded lines
 * made from a timeline (offcpu.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bufile.h"
#include "offcpu.h"

/* A stack record: header, @n chain entries, a 32-byte sample_id; into @buf. */
static struct perf_event_header *stack_rec(__u8 *buf, const __u64 *chain, __u64 n, __u32 of)
{
	struct rk_stack_record r = { 0 };

	r.h.type = RK_RECORD_STACK;
	r.h.size = (__u16)(sizeof(r) + n * 8 + 32);
	r.of = of;
	r.nr = n;
	memset(buf, 0xa5, r.h.size); /* poisoned sample_id */
	memcpy(buf, &r, sizeof(r));
	if (n)
		memcpy(buf + sizeof(r), chain, n * 8);
	return (struct perf_event_header *)buf;
}

static __u8 buf[65536];
static struct rk_stack_rec st;

Test(offcpu, parse_kernel_then_user)
{
	const __u64 chain[] = { (__u64)PERF_CONTEXT_KERNEL,
				0xffffffff81000010ull,
				0xffffffff81000020ull,
				(__u64)PERF_CONTEXT_USER,
				0x401000,
				0x402000,
				0x403000 };

	memset(&st, 0x5a, sizeof(st));
	cr_assert_eq(rk_stack_parse(stack_rec(buf, chain, 7, RK_STACK_OF_SWITCH), 32, &st), 0);
	cr_assert_eq(st.of, RK_STACK_OF_SWITCH);
	cr_assert_eq(st.nr_kernel, 2);
	cr_assert_eq(st.nr_user, 3);
	cr_assert_eq(st.kip[1], 0xffffffff81000020ull);
	cr_assert_eq(st.uip[2], 0x403000);
	cr_assert_eq(st.nr, 7);
}

Test(offcpu, parse_empty_and_withheld)
{
	struct perf_event_header *h = stack_rec(buf, NULL, 0, RK_STACK_OF_WAKEUP);

	((struct rk_stack_record *)h)->flags = RK_STACKF_KERNEL_HIDDEN | RK_STACKF_USER_HIDDEN;
	cr_assert_eq(rk_stack_parse(h, 32, &st), 0);
	cr_assert_eq(st.nr_kernel + st.nr_user, 0);
	cr_assert_eq(st.flags, RK_STACKF_KERNEL_HIDDEN | RK_STACKF_USER_HIDDEN);
}

Test(offcpu, parse_full_and_one_too_many)
{
	static __u64 chain[2 + 2 * RK_STACK_READ_MAX + 1];
	size_t i, n = 0;

	chain[n++] = (__u64)PERF_CONTEXT_USER;
	for (i = 0; i < RK_STACK_READ_MAX; i++)
		chain[n++] = 0x400000 + i;
	cr_assert_eq(rk_stack_parse(stack_rec(buf, chain, n, 1), 32, &st), 0);
	cr_assert_eq(st.nr_user, RK_STACK_READ_MAX);
	chain[n++] = 0x500000;
	cr_assert_eq(rk_stack_parse(stack_rec(buf, chain, n, 1), 32, &st), -EBADMSG,
		     "more frames than a reader takes");
}

Test(offcpu, parse_refuses_malformed)
{
	const __u64 no_marker[] = { 0x401000 };
	const __u64 bad_marker[] = { (__u64)PERF_CONTEXT_HV, 0x401000 };
	const __u64 ok[] = { (__u64)PERF_CONTEXT_USER, 0x401000 };
	struct perf_event_header *h;

	cr_assert_eq(rk_stack_parse(stack_rec(buf, no_marker, 1, 1), 32, &st), -EBADMSG,
		     "a frame before any marker");
	cr_assert_eq(rk_stack_parse(stack_rec(buf, bad_marker, 2, 1), 32, &st), -EBADMSG,
		     "a marker we do not write");
	h = stack_rec(buf, ok, 2, 1);
	((struct rk_stack_record *)h)->nr = 3;
	cr_assert_eq(rk_stack_parse(h, 32, &st), -EBADMSG, "nr past the record");
	((struct rk_stack_record *)h)->nr = ~0ull;
	cr_assert_eq(rk_stack_parse(h, 32, &st), -EBADMSG, "nr overflowing");
	h = stack_rec(buf, ok, 2, 1);
	h->size = sizeof(struct rk_stack_record) + 16;
	cr_assert_eq(rk_stack_parse(h, 32, &st), -EBADMSG, "no room for the sample_id");
	h->type = RK_RECORD_WAKEUP;
	cr_assert_eq(rk_stack_parse(h, 32, &st), -EBADMSG, "not a stack record");
}

/* A timeline of one thread by hand: its events, one stack, frames named. */
static void one_thread(struct rk_timeline *tl, struct rk_tl_event *ev, size_t nev)
{
	static struct rk_tl_thread th;
	static struct rk_tl_stack stacks[1];
	static struct rk_tl_frame frames[3];
	static char names[1][RK_COMM_LEN] = { "sleeper" };
	static char strs[] = "\0a_kernel\0main\0do_sleep";

	memset(tl, 0, sizeof(*tl));
	memset(&th, 0, sizeof(th));
	th.id.tid = 10;
	th.id.tgid = 10;
	th.ev = ev;
	th.nev = nev;
	th.names = names;
	th.nnames = 1;
	tl->threads = &th;
	tl->nthreads = 1;
	/* Leaf first: the kernel's frame, then user do_sleep, main. */
	stacks[0] = (struct rk_tl_stack){ .tid = 10,
					  .tgid = 10,
					  .of = RK_STACK_OF_SWITCH,
					  .nkernel = 1,
					  .nuser = 2,
					  .frame0 = 0,
					  .nframes = 3 };
	frames[0].sym = 1;
	frames[1].sym = 15;
	frames[2].sym = 10;
	tl->stacks = stacks;
	tl->nstacks = 1;
	tl->frames = frames;
	tl->nframes = 3;
	tl->strs = strs;
	tl->strs_len = sizeof(strs);
}

/*
 * A span runs from a switch-out with a stack to the next switch-in (a
 * wakeup between them changes nothing); a sleep whose stack is missing
 * (dropped when the stack rings were full) is a span of "[missed-stack]",
 * never left out; a preemption, or a switch-out with no switch-in after it,
 * makes none; the folded line is root first.
 */
Test(offcpu, spans_and_folded_lines)
{
	struct rk_tl_event ev[] = {
		{ 100, RK_TL_IN, 0, 0, 0 },    { 200, RK_TL_OUT, 0, 0x80000001, 0 },
		{ 200, RK_TL_STACK, 0, 0, 1 }, { 250, RK_TL_WAKEUP, 1, 5, 0 },
		{ 300, RK_TL_IN, 0, 0, 0 },    { 400, RK_TL_OUT, 0, 0x80000001, 0 },
		{ 500, RK_TL_IN, 0, 0, 0 },    { 550, RK_TL_OUT, 0, 0x80000000, 0 },
		{ 560, RK_TL_IN, 0, 0, 0 },    { 600, RK_TL_OUT, 0, 0x80000001, 0 },
		{ 600, RK_TL_STACK, 0, 0, 1 },
	};
	struct rk_offcpu_span *sp;
	struct rk_timeline tl;
	char line[256], *text = NULL;
	size_t n, len = 0, lines;
	FILE *m;

	one_thread(&tl, ev, sizeof(ev) / sizeof(ev[0]));
	cr_assert_eq(rk_offcpu_spans(&tl, &sp, &n), 0);
	cr_assert_eq(n, 2, "%zu spans", n);
	cr_assert_eq(sp[0].out, 200);
	cr_assert_eq(sp[0].in, 300);
	rk_offcpu_folded_stack(&tl, &sp[0], 1, line, sizeof(line));
	cr_assert_str_eq(line, "sleeper;main;do_sleep;a_kernel");
	rk_offcpu_folded_stack(&tl, &sp[0], 0, line, sizeof(line));
	cr_assert_str_eq(line, "sleeper;main;do_sleep");
	cr_assert_eq(sp[1].out, 400);
	cr_assert_eq(sp[1].in, 500);
	cr_assert_eq(sp[1].stack, RK_OFFCPU_MISSED);
	rk_offcpu_folded_stack(&tl, &sp[1], 1, line, sizeof(line));
	cr_assert_str_eq(line, "sleeper;[missed-stack]");
	free(sp);
	m = open_memstream(&text, &len);
	cr_assert_eq(rk_offcpu_folded(&tl, RK_FOLD_OFFCPU, m, &lines), 0);
	fclose(m);
	cr_assert_str_eq(text, "sleeper;[missed-stack] 100\nsleeper;main;do_sleep;a_kernel 100\n");
	cr_assert_eq(lines, 2);
	free(text);

	/* A timeline with no stacks at all (no --offcpu): no spans. */
	tl.nstacks = 0;
	cr_assert_eq(rk_offcpu_spans(&tl, &sp, &n), 0);
	cr_assert_eq(n, 0);
	free(sp);
}
