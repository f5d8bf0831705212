/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * irqctx.bpf.h - in what context a wakeup runs: a hard irq, a softirq
 * being served, an NMI, or a task. The kernel's own trace events say so in
 * common_flags (TRACE_FLAG_HARDIRQ, _SOFTIRQ, _NMI, from preempt_count in
 * tracing_gen_ctx()); a tp_btf program gets no common_flags, so it reads
 * the CPU's preempt_count itself, with the same masks. Included by
 * ringkeeper.bpf.c.
 *
 * Where preempt_count lives: on x86-64, in a per-CPU variable
 * (__preempt_count up to 6.1 and again from 6.15, pcpu_hot.preempt_count
 * from 6.2 to 6.14); on arm64 in thread_info. A per-CPU variable is a
 * typed ksym to BPF, but the verifier finds its address in kallsyms, which
 * holds no data symbols without CONFIG_KALLSYMS_ALL (this machine's 6.18:
 * the program failed to load). So it is found from a per-CPU object BPF
 * can reach: this CPU's runqueue (the current task's cfs_rq's rq, checked
 * by its cpu field), plus the distance between the two variables in the
 * per-CPU area, which the loader reads from vmlinux BTF (its .data..percpu
 * section) into cfg_pc_from_rq. Both kernels' layouts and a missing
 * variable are then the loader's to resolve; the program is the same.
 * No kfunc (bpf_in_interrupt() of newer bpf_experimental.h is the ksym
 * read above) and nothing libbpf 1.1's headers lack.
 */
#ifndef RK_IRQCTX_BPF_H
#define RK_IRQCTX_BPF_H

/* include/linux/preempt.h: 8 preempt bits, 8 softirq, 4 hardirq, 4 NMI; stable since 5.11. */
#define RK_SOFTIRQ_OFFSET 0x100u
#define RK_HARDIRQ_MASK 0xf0000u
#define RK_NMI_MASK 0xf00000u

/* x86-64: preempt_count's per-CPU address minus runqueues' (the loader's; 0: not found). */
const volatile __s64 cfg_pc_from_rq = 0;

/*
 * sched_entity::cfs_rq and cfs_rq::rq exist with CONFIG_FAIR_GROUP_SCHED
 * (Debian's 6.1 and 6.12, this 6.18); a kernel without it reads as one
 * where the context is not known.
 */
struct cfs_rq___rq {
	struct rq *rq;
} __attribute__((preserve_access_index));

/*
 * The current CPU's preempt_count into *@pc. Return: 1, or 0 if this
 * kernel or arch keeps it where we do not look.
 */
static __always_inline int preempt_count_now(__u32 *pc)
{
#if defined(bpf_target_arm64)
	*pc = (__u32)BPF_CORE_READ(bpf_get_current_task_btf(), thread_info.preempt.count);
	return 1;
#else
	struct task_struct *cur = bpf_get_current_task_btf();
	struct cfs_rq___rq *cfs;
	struct rq *rq;

	if (!cfg_pc_from_rq || !bpf_core_field_exists(cur->se.cfs_rq) ||
	    !bpf_core_field_exists(struct cfs_rq___rq, rq))
		return 0;
	/*
	 * A task's cfs_rq is its CPU's (set when it moves): the one running
	 * here. BTF pointers, read as plain loads (no helper call); only the
	 * variable, which has no type here, takes one.
	 */
	cfs = (struct cfs_rq___rq *)cur->se.cfs_rq;
	rq = cfs ? cfs->rq : NULL;
	if (!rq || rq->cpu != (int)bpf_get_smp_processor_id())
		return 0;
	return !bpf_probe_read_kernel(pc, sizeof(*pc), (const char *)rq + cfg_pc_from_rq);
#endif
}

/*
 * RK_SIGF_CTX and at most one of RK_SIGF_NMI, _HARDIRQ, _SOFTIRQ for the
 * code running now (0: not known). As the kernel's tracing_gen_ctx():
 * a softirq is one being served (SOFTIRQ_OFFSET), not bottom halves merely
 * disabled. PREEMPT_RT serves softirqs in task context with a per-task
 * count: there they read as a task, as the kernel's flag does not say.
 */
static __always_inline __u16 wake_context(void)
{
	__u32 pc;

	if (!preempt_count_now(&pc))
		return 0;
	if (pc & RK_NMI_MASK)
		return RK_SIGF_CTX | RK_SIGF_NMI;
	if (pc & RK_HARDIRQ_MASK)
		return RK_SIGF_CTX | RK_SIGF_HARDIRQ;
	if (pc & RK_SOFTIRQ_OFFSET)
		return RK_SIGF_CTX | RK_SIGF_SOFTIRQ;
	return RK_SIGF_CTX;
}

#endif /* RK_IRQCTX_BPF_H */
