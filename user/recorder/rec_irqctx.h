/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_irqctx.h - what the wakeup programs need to tell an interrupt's
 * wakeup from a task's (bpf/irqctx.bpf.h): where this kernel keeps a CPU's
 * preempt_count, relative to its runqueue, read from vmlinux BTF.
 * Owns: nothing. May call: util, and libbpf's BTF reader.
 */
#ifndef RK_REC_IRQCTX_H
#define RK_REC_IRQCTX_H

#include <linux/types.h>

/*
 * rec_preempt_count_from_rq() - x86-64: the distance in the per-CPU area
 * from runqueues to the CPU's preempt_count (__preempt_count, or
 * pcpu_hot.preempt_count on 6.2 to 6.14), from the .data..percpu section
 * of /sys/kernel/btf/vmlinux, into *@off.
 * Return: 0; -ENOENT if this kernel's BTF has neither (or is not x86-64:
 * arm64's BPF reads it from thread_info and needs none), -errno if the BTF
 * cannot be read. Not logged: the caller says what is lost.
 */
int rec_preempt_count_from_rq(__s64 *off);

#endif /* RK_REC_IRQCTX_H */
