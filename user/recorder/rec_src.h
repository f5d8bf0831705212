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

/*
 * --max-shm counts a live file by the pages it can have filled, not its
 * size: page 0, its data ring up to the head rounded up to RK_SHM_STEP
 * (all of it once the head passes its size: then it wraps), its AUX ring
 * (written anywhere). A file of 8,192 quiet threads' holds ~16 KiB, not
 * the 516 KiB of its size.
 */
#define RK_SHM_STEP (16ull << 10)

/*
 * rec_file_charge() - what a file whose ring head is @head is counted; *@grow_at:
 * the head past which it needs more (UINT64_MAX: never).
 */
uint64_t rec_file_charge(__u64 data_size, __u64 aux_size, __u64 head, __u64 *grow_at);
/* rec_thread_charge0() - what a new thread's files are counted together. */
uint64_t rec_thread_charge0(const struct rk_rec *r);
const struct rk_pmu_entry *rec_src_entry(const struct rk_rec *r, int k);
/* Threads of process @tgid not yet finished. */
int rec_live_threads_of(struct rk_rec *r, __u32 tgid);
void rec_live_add(struct rk_rec *r, __u32 tgid, int d);
void rec_all_add(struct rk_rec *r, struct rk_thread *t);
void rec_fin_add(struct rk_rec *r, struct rk_thread *t);

#endif /* RK_REC_SRC_H */
