// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor of a sched_switch observer that timestamps what it sees: the
 * empty program plus one bpf_ktime_get_ns() (the clock ringkeeper's
 * records carry), kept in a global so the call is not optimised away.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

volatile __u64 rk_clock_last;

SEC("tp_btf/sched_switch")
int BPF_PROG(rk_clock_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	rk_clock_last = bpf_ktime_get_ns();
	return 0;
}
