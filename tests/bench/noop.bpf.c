// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The floor of a sched_switch observer: an attached program that does nothing. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(rk_noop_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}
