/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_sideband.h - the recorder's per-process sideband.
 *
 * Records with no single thread owner (MMAP2, COMM of a process, ...) go
 * to one file per process; at attach, what existed before is synthesized
 * from /proc as perf record does.
 * Owns: struct rk_proc, r->procs.
 * May call: rec_threads, access, util, and the libraries below them (bufile, pinpool, drain, evsel, libbpf).
 */
#ifndef RK_REC_SIDEBAND_H
#define RK_REC_SIDEBAND_H

#include "rec.h"

struct rk_bufile *rec_sideband_for(struct rk_rec *r, __u32 pid);
void rec_put_sideband(struct rk_rec *r, __u32 pid, const struct perf_event_header *h);
/* @pid has no live traced thread left (@state: why): its sideband file is finished. */
void rec_sideband_done(struct rk_rec *r, __u32 pid, __u32 state);
/* Forget processes finished long enough ago (from the loop's slow tick). */
void rec_sideband_reap(struct rk_rec *r, uint64_t now);
size_t rec_synth_sample_id(struct rk_rec *r, __u8 *p, __u32 pid, __u32 tid);
void rec_synthesize(struct rk_rec *r, pid_t pid);
int rec_sideband_adopt(struct rk_rec *r, __u32 pid);
/* A thread of @pid changed who may read it (@why: RK_THREAD_CREDS, _EXECED): its sideband too. */
void rec_sideband_recheck(struct rk_rec *r, __u32 pid, __u32 why);

#endif /* RK_REC_SIDEBAND_H */
