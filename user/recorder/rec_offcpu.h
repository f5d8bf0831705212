/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_offcpu.h - record --offcpu: the stacks BPF takes at a traced
 * thread's switch-out into a sleep (and, with --wakeups, its waker's at a
 * wakeup), from the per-CPU stack rings into the thread's sched file as
 * RK_RECORD_STACK records, right after the record they belong to; kernel
 * frames only where the file's reader may see them (docs/trust.md).
 * Owns: nothing (the stack rings are mapped by rec_bpf.c, read by swring.c).
 * May call: rec_threads, swring, util, and the libraries below them.
 */
#ifndef RK_REC_OFFCPU_H
#define RK_REC_OFFCPU_H

#include "rec.h"

/*
 * rec_offcpu_put() - after @s (a switch-out or wakeup the merge handed
 * out) was handled: its stack, if the merge had one, into its thread's
 * sched file, right after @s's own record.
 */
void rec_offcpu_put(struct rk_rec *r, const struct rk_signal *s);

#endif /* RK_REC_OFFCPU_H */
