/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * offcpu.bpf.h - record --offcpu: the stacks of a traced thread at its
 * switch-out into a sleep (where it blocked) and, with --wakeups, its
 * waker's at the wakeup (who let it go), into the CPU's stack ring
 * (struct rk_stack in ringkeeper.h). Included by ringkeeper.bpf.c after
 * its maps and ring helpers; a part of it, kept apart so the switch
 * program's own code reads as before.
 *
 * cfg_offcpu is a constant at load: without --offcpu the verifier drops
 * every instruction below from the programs, and the switch path is what
 * it was (make bench, section offcpu, measures both).
 */
#ifndef RK_OFFCPU_BPF_H
#define RK_OFFCPU_BPF_H

/* record --offcpu; the stack rings' slots per CPU (a power of two), and the fill that wakes. */
const volatile __u8 cfg_offcpu = 0;
const volatile __u32 cfg_st_slots = 64;
const volatile __u32 cfg_st_wake = 16;

/* The stack rings: cfg_st_slots per possible CPU (1 without --offcpu), sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rk_stack);
} stkring SEC(".maps");

/*
 * The next slot of @cpu's stack ring (head @h), or NULL: the ring is full
 * (counted, RK_CNT_STACK_DROPS: the record goes without its stack). As
 * sw_reserve(): the loader's tail is read only from the watermark on, and
 * *@wake is set at it (and every 64th stack past it).
 */
static __always_inline struct rk_stack *st_reserve(struct rk_swpos *h, __u32 cpu, int *wake)
{
	__u32 tk = cpu * 2 + 1, slot;
	struct rk_swpos *t;
	__u64 pos, fill;

	pos = h->st_pos;
	fill = pos - h->st_seen;
	if (fill >= cfg_st_wake) {
		t = bpf_map_lookup_elem(&swpos, &tk);
		if (!t)
			return NULL;
		/* The tail is the loader's: read once. */
		h->st_seen = *(volatile __u64 *)&t->st_pos;
		fill = pos - h->st_seen;
		if (fill >= cfg_st_slots) {
			count(RK_CNT_STACK_DROPS);
			return NULL;
		}
		if (fill == cfg_st_wake || (fill > cfg_st_wake && !(pos & 63)))
			*wake = 1;
	}
	slot = cpu * cfg_st_slots + (__u32)(pos & (cfg_st_slots - 1));
	return bpf_map_lookup_elem(&stkring, &slot);
}

/*
 * The current task's kernel and user stacks (frame pointers, as perf's
 * callchains) into the next slot of @cpu's stack ring, for the record of
 * @tid at @now that the caller commits next (head @h, reserved already: a
 * record dropped takes no stack). Return: RK_SIGF_STACK for the record's
 * flags, or 0 (no --offcpu, or the stack ring full).
 */
static __always_inline __u16 offcpu_stack(void *ctx, struct rk_swpos *h, __u32 cpu, __u32 tid,
					  __u64 now, int *wake)
{
	struct rk_stack *s;
	long n;

	if (!cfg_offcpu || !h)
		return 0;
	s = st_reserve(h, cpu, wake);
	if (!s)
		return 0;
	s->time_ns = now;
	s->tid = tid;
	n = bpf_get_stack(ctx, s->ip, RK_STACK_KERNEL_MAX * sizeof(__u64), 0);
	s->nr_kernel = n > 0 ? (__u16)(n / sizeof(__u64)) : 0;
	n = bpf_get_stack(ctx, &s->ip[RK_STACK_KERNEL_MAX], RK_STACK_USER_MAX * sizeof(__u64),
			  BPF_F_USER_STACK);
	s->nr_user = n > 0 ? (__u16)(n / sizeof(__u64)) : 0;
	/* BPF's own; the loader follows the flagged records, published by their head's add. */
	h->st_pos += 1;
	return RK_SIGF_STACK;
}

/* A switch-out into a sleep (not a preemption, not the final one): where it blocked. */
static __always_inline __u16 offcpu_switch_stack(void *ctx, struct rk_swpos *h, __u32 cpu,
						 __u32 tid, __u64 now, __u16 flags, int *wake)
{
	if (!cfg_offcpu || flags & (RK_SIGF_PREEMPT | RK_SIGF_DEAD))
		return 0;
	return offcpu_stack(ctx, h, cpu, tid, now, wake);
}

#endif /* RK_OFFCPU_BPF_H */
