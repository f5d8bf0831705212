/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_src.h - what the recorder's modules ask of its state: a thread by
 * tid, the sources (sched and each -e event: directory, pmu_info entry,
 * AUX size, a thread's bytes), a thread's ids from /proc, a process's live
 * threads. Queries only: the lowest layer of the recorder, so the BPF,
 * sideband and thread modules need not include each other.
 * May call: access, pmu, util, bufile.
 */
#ifndef RK_REC_SRC_H
#define RK_REC_SRC_H

#include "rec.h"
#include "access.h"

struct rk_thread *rec_thread_find(struct rk_rec *r, __u32 tid);
/* A pin worker is done with a retired buffer (pinpool's release callback). */
void rec_release_buf(void *owner, void *ctx);
void rec_proc_ids(__u32 tgid, __u32 tid, __u32 *uid, __u32 *ns_tid, char *comm,
		  struct rk_task_ids *ids);
int rec_nsrc(const struct rk_rec *r);
const char *rec_src_dir(const struct rk_rec *r, int k);
uint64_t rec_src_aux(const struct rk_rec *r, int k);
uint64_t rec_thread_bytes(const struct rk_rec *r);
const struct rk_pmu_entry *rec_src_entry(const struct rk_rec *r, int k);
/* Threads of process @tgid not yet finished. */
int rec_live_threads_of(struct rk_rec *r, __u32 tgid);

#endif /* RK_REC_SRC_H */
