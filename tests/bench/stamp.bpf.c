// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The stamp-and-store floor of a sched_switch recorder (issue 41): the
 * empty program plus one bpf_ktime_get_ns() and one store of what a switch
 * record must say at least (the time, both tids) into a per-CPU ring in a
 * mapped array (.bss), its head advanced. Nothing is checked, filtered or
 * signalled: no recorder can do less and still keep the switch.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define STAMP_CPUS 64 /* a power of two */
#define STAMP_SLOTS 512 /* a power of two */

struct stamp {
	__u64 time;
	__u32 prev, next;
};

struct stamp rk_stamp_ring[STAMP_CPUS][STAMP_SLOTS];
__u64 rk_stamp_head[STAMP_CPUS];

SEC("tp_btf/sched_switch")
int BPF_PROG(rk_stamp_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 cpu = bpf_get_smp_processor_id() & (STAMP_CPUS - 1);
	__u64 h = rk_stamp_head[cpu];
	struct stamp *s = &rk_stamp_ring[cpu][h & (STAMP_SLOTS - 1)];

	s->time = bpf_ktime_get_ns();
	s->prev = prev->pid;
	s->next = next->pid;
	rk_stamp_head[cpu] = h + 1;
	return 0;
}
