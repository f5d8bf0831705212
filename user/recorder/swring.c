// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* swring.c - the BPF signals in time order (see swring.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "swring.h"

int rk_swring_init(struct rk_swring *w, const struct rk_swrec *ring, struct rk_swpos *pos,
		   __u32 ncpu, __u32 slots, const struct rk_rbuf *rb)
{
	__u32 c;

	memset(w, 0, sizeof(*w));
	if (!ncpu || !slots || (slots & (slots - 1)) || !rb->size || (rb->size & (rb->size - 1)))
		return -EINVAL;
	w->cur = calloc(ncpu, sizeof(*w->cur));
	w->heads = calloc(ncpu, sizeof(*w->heads));
	w->heap = calloc((size_t)ncpu + 1, sizeof(*w->heap));
	if (!w->cur || !w->heads || !w->heap) {
		rk_swring_free(w);
		return -ENOMEM;
	}
	w->ring = ring;
	w->pos = pos;
	w->ncpu = ncpu;
	w->slots = slots;
	w->rb = *rb;
	w->rb_pos = __atomic_load_n(rb->cons, __ATOMIC_RELAXED);
	for (c = 0; c < ncpu; c++) {
		w->cur[c] = __atomic_load_n(&pos[2 * c + 1].pos, __ATOMIC_RELAXED);
		w->heads[c] = w->cur[c];
	}
	return 0;
}

void rk_swring_free(struct rk_swring *w)
{
	free(w->st_cur);
	free(w->cur);
	free(w->heads);
	free(w->heap);
	memset(w, 0, sizeof(*w));
}

void rk_swring_snapshot(struct rk_swring *w, uint64_t now)
{
	__u32 c;

	w->horizon = now;
	for (c = 0; c < w->ncpu; c++) {
		/* Acquire: the records below the head are written (BPF's add is fully ordered). */
		__u64 h = __atomic_load_n(&w->pos[2 * c].pos, __ATOMIC_ACQUIRE);

		/*
		 * Our BPF never runs a head past the tail by more than the
		 * ring, nor backwards; anything else is not read, and counted.
		 */
		if (h - w->cur[c] > w->slots) {
			if (h > w->cur[c]) {
				w->lost += h - w->cur[c] - w->slots;
				w->cur[c] = h - w->slots;
			} else {
				w->cur[c] = h;
			}
		}
		w->heads[c] = h;
	}
}

/*
 * The ringbuf's next signal at rb_pos, copied into *@s, the position after
 * it into *@end; discarded records and ones too short to be a signal are
 * passed over (consumed). Return: 1, 0 (nothing more), or -1 (the next
 * record is reserved, not committed: its time is not known yet).
 */
static int rb_peek(struct rk_swring *w, struct rk_signal *s, __u64 *end)
{
	__u64 prod = __atomic_load_n(w->rb.prod, __ATOMIC_ACQUIRE);

	while (w->rb_pos < prod) {
		const __u8 *h = w->rb.data + (w->rb_pos & (w->rb.size - 1));
		__u32 len = __atomic_load_n((const __u32 *)h, __ATOMIC_ACQUIRE);
		__u64 n = len & ~(RK_RB_BUSY | RK_RB_DISCARD);
		__u64 total = (n + RK_RB_HDR + 7) & ~7ull;

		if (len & RK_RB_BUSY)
			return -1; /* reserved, not committed: what follows waits for it */
		if (total > w->rb.size || prod - w->rb_pos < total) {
			/* No record the kernel wrote: nothing up to its head can be read. */
			w->lost++;
			w->rb_pos = prod;
			return 0;
		}
		if (!(len & RK_RB_DISCARD) && n >= sizeof(*s)) {
			/* The data is mapped twice: a record across the end reads on. */
			memcpy(s, h + RK_RB_HDR, sizeof(*s));
			*end = w->rb_pos + total;
			return 1;
		}
		if (!(len & RK_RB_DISCARD))
			w->lost++; /* not a signal: not ours */
		w->rb_pos += total;
	}
	return 0;
}

static int before(const struct rk_swsrc *a, const struct rk_swsrc *b)
{
	return a->t < b->t || (a->t == b->t && a->id < b->id);
}

static void sift_down(struct rk_swsrc *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct rk_swsrc tmp;

		if (l < n && before(&h[l], &h[m]))
			m = l;
		if (l + 1 < n && before(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

static const struct rk_swrec *rec_at(const struct rk_swring *w, __u32 c, __u64 n)
{
	return &w->ring[(size_t)c * w->slots + (n & (w->slots - 1))];
}

int rk_swring_set_stacks(struct rk_swring *w, const struct rk_stack *ring, __u32 slots)
{
	__u32 c;

	if (!ring || !slots || (slots & (slots - 1)) || !w->ncpu)
		return -EINVAL;
	free(w->st_cur);
	w->st_cur = calloc(w->ncpu, sizeof(*w->st_cur));
	if (!w->st_cur)
		return -ENOMEM;
	w->st_ring = ring;
	w->st_slots = slots;
	for (c = 0; c < w->ncpu; c++)
		w->st_cur[c] = __atomic_load_n(&w->pos[2 * c + 1].st_pos, __ATOMIC_RELAXED);
	return 0;
}

const struct rk_stack *rk_swring_stack(const struct rk_swring *w)
{
	return w->has_stack ? &w->stack : NULL;
}

/*
 * CPU @c's record @r was flagged with a stack: its CPU's next one, copied
 * (the slot is BPF's again once the stack tail passes it). BPF writes a
 * stack only below that tail, and before the record's head add (fully
 * ordered, read with acquire at the snapshot): the copy is whole. One that
 * is not the record's (a ring lost, a head mended) is counted, not used.
 */
static void take_stack(struct rk_swring *w, __u32 c, const struct rk_swrec *r)
{
	const struct rk_stack *s;

	if (!w->st_ring) {
		w->st_lost++;
		return;
	}
	s = &w->st_ring[(size_t)c * w->st_slots + (w->st_cur[c] & (w->st_slots - 1))];
	w->stack = *s;
	w->st_cur[c]++;
	if (w->stack.time_ns != r->time_ns || w->stack.tid != r->tid ||
	    w->stack.nr_kernel > RK_STACK_KERNEL_MAX || w->stack.nr_user > RK_STACK_USER_MAX) {
		w->st_lost++;
		return;
	}
	w->has_stack = 1;
}

/* Give back CPU @c's stacks up to what was handed out (release: our copies came first). */
static void st_give_back(struct rk_swring *w, __u32 c)
{
	if (w->st_cur)
		__atomic_store_n(&w->pos[2 * c + 1].st_pos, w->st_cur[c], __ATOMIC_RELEASE);
}

/* The ringbuf's record in hand during a merge. */
struct rb_next {
	struct rk_signal s;
	__u64 end;
};

/*
 * Source @id's next time below the horizon into @s (for the ringbuf, its
 * record into @rn). Return: 1, 0 (nothing more now), or -1 (the ringbuf's
 * next record is reserved, not committed).
 */
static int next_of(struct rk_swring *w, __u32 id, struct rk_swsrc *s, struct rb_next *rn)
{
	uint64_t t;

	if (id == 0) {
		int got = rb_peek(w, &rn->s, &rn->end);

		if (got <= 0)
			return got;
		t = rn->s.time_ns;
	} else {
		__u32 c = id - 1;

		if (w->cur[c] == w->heads[c])
			return 0;
		t = rec_at(w, c, w->cur[c])->time_ns;
	}
	if (t >= w->horizon)
		return 0;
	s->t = t;
	s->id = id;
	return 1;
}

size_t rk_swring_merge(struct rk_swring *w, rk_swring_fn fn, void *ctx)
{
	struct rk_swsrc *h = w->heap;
	struct rb_next rn;
	size_t n = 0, done = 0;
	__u32 id, c;
	int busy = 0;

	/*
	 * A reserved ringbuf record may be older than anything in the switch
	 * rings (a fork whose child already ran: its switch-in is below the
	 * head, the fork behind a record another CPU has not committed yet).
	 * Its time is unknown until committed: nothing more is handed out in
	 * this intake (BPF commits within microseconds; the next one goes on).
	 */
	for (id = 0; id <= w->ncpu; id++) {
		int got = next_of(w, id, &h[n], &rn);

		busy |= got < 0;
		n += got > 0;
	}
	for (size_t i = n / 2; i-- > 0;)
		sift_down(h, n, i);
	while (n && !busy && !w->stop) {
		struct rk_signal s;
		int got;

		id = h[0].id;
		if (id == 0) {
			s = rn.s;
			w->rb_pos = rn.end;
		} else {
			/* A copy: the slot is BPF's again once the tail passes it. */
			struct rk_swrec r = *rec_at(w, id - 1, w->cur[id - 1]);

			memset(&s, 0, sizeof(s));
			s.kind = r.kind;
			s.flags = r.flags;
			s.cpu = id - 1;
			s.tid = r.tid;
			s.tgid = r.tgid;
			s.ptid = r.ptid;
			s.prev_state = r.prev_state;
			s.time_ns = r.time_ns;
			s.next_tgid = r.next_tgid;
			w->cur[id - 1]++;
			if (r.flags & RK_SIGF_STACK)
				take_stack(w, id - 1, &r);
		}
		fn(ctx, &s);
		w->has_stack = 0;
		done++;
		/*
		 * Given back after each record, as libbpf's consumer does: a
		 * recorder killed here leaves at most this one to be handled
		 * again at --resume. Release: our read of it came first.
		 */
		if (id == 0)
			__atomic_store_n(w->rb.cons, w->rb_pos, __ATOMIC_RELEASE);
		else
			__atomic_store_n(&w->pos[2 * id - 1].pos, w->cur[id - 1], __ATOMIC_RELEASE);
		if (id != 0)
			st_give_back(w, id - 1);
		got = next_of(w, id, &h[0], &rn);
		busy |= got < 0;
		if (got <= 0)
			h[0] = h[--n];
		sift_down(h, n, 0);
	}
	/* Also past what was skipped, not handed out (discarded records, bad heads). */
	for (c = 0; c < w->ncpu; c++) {
		__atomic_store_n(&w->pos[2 * c + 1].pos, w->cur[c], __ATOMIC_RELEASE);
		st_give_back(w, c);
	}
	__atomic_store_n(w->rb.cons, w->rb_pos, __ATOMIC_RELEASE);
	return done;
}

int rk_swring_peek_pending(struct rk_swring *w, rk_swring_fn fn, void *ctx)
{
	__u64 pos = w->rb_pos, lost = w->lost, end;
	struct rk_signal s;
	int got;

	while ((got = rb_peek(w, &s, &end)) > 0) {
		fn(ctx, &s);
		w->rb_pos = end;
	}
	/* Read again, and counted then, by the intake that hands them out. */
	w->rb_pos = pos;
	w->lost = lost;
	return got < 0 ? -1 : 0;
}

__u64 rk_swring_left(struct rk_swring *w)
{
	__u64 pos = w->rb_pos, lost = w->lost, end, left = 0;
	struct rk_signal s;
	__u32 c;

	for (c = 0; c < w->ncpu; c++) {
		__u64 n = w->heads[c] - w->cur[c];

		/* Beyond a ring's size they were overwritten: not there to leave. */
		left += n < w->slots ? n : w->slots;
	}
	while (rb_peek(w, &s, &end) > 0) {
		w->rb_pos = end;
		left++;
	}
	w->rb_pos = pos;
	w->lost = lost;
	return left;
}

__u64 rk_swring_written(const struct rk_swring *w)
{
	__u64 sum = 0;
	__u32 c;

	for (c = 0; c < w->ncpu; c++)
		sum += w->heads[c];
	return sum;
}
