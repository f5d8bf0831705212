/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_threads.h - the recorder's the thread table.
 *
 * The recorder's threads: find (a hash by tid), create (one buffer file per
 * source, root's, granted to the thread's user by access.c's rules), write
 * records to them, their pins (pin pool), their identity, finish (at exit,
 * or when the recording stops), the deferral of a switch-out's unpin until
 * the perf rings were drained, and reclaim of what finished threads kept.
 * Owns: struct rk_thread, r->buckets, r->all, r->pendingv.
 * May call: rec_src, rec_files, rec_bpf, rec_sideband, access, pmu, util, and
 * the libraries below them (bufile, pinpool, drain, evsel, libbpf).
 */
#ifndef RK_REC_THREADS_H
#define RK_REC_THREADS_H

#include "rec.h"
#include "rec_src.h"
#include "rec_files.h"
#include "access.h"

void rec_refuse(struct rk_rec *r, __u32 tid, const char *why);
struct rk_thread *rec_thread_born(struct rk_rec *r, const struct rk_signal *s);
struct rk_thread *rec_thread_new(struct rk_rec *r, __u32 tid, __u32 tgid, __u32 uid,
				 const char *comm, uint64_t start_ns);
void rec_put_rec_src(struct rk_rec *r, struct rk_thread *t, int k, const void *rec, size_t size);
void rec_put_rec(struct rk_rec *r, struct rk_thread *t, void *rec, size_t size);
/*
 * The sample_id of a record for @t's sched file about @s. Its time is never
 * before the file's previous record's: one read on another CPU that comes
 * out behind (seen by up to 0.4 ms in QEMU TCG guests) takes the previous
 * time instead, counted in stat (time_clamped, time_clamped_max_ns).
 */
void rec_fill_id(struct rk_rec *r, struct sample_id *id, struct rk_thread *t,
		 const struct rk_signal *s);
void rec_thread_pin(struct rk_rec *r, struct rk_thread *t, int how, uint64_t now);
void rec_thread_ident(struct rk_rec *r, struct rk_thread *t, const char *comm, __u32 state,
		      int set_exit, __s32 exit_code, __u64 exit_ns);
void rec_thread_finish(struct rk_rec *r, struct rk_thread *t, __u32 state);
void rec_defer_off(struct rk_rec *r, struct rk_thread *t, uint64_t now, int how,
		   __u32 finish_state);
void rec_apply_deferred(struct rk_rec *r, uint64_t gen);
/*
 * Who may read @t's files, decided again (exec, credentials, dumpability):
 * if that changed, @t is finished as @why and a new thread record with new
 * files is returned (NULL if none could be made); else @t. @uid: its real
 * uid now, from the signal (the new files' user, charged for them: /proc
 * may already be gone, a short-lived process exited and reaped).
 */
struct rk_thread *rec_access_recheck(struct rk_rec *r, struct rk_thread *t, const char *comm,
				     __u64 time_ns, __u32 why, __u32 uid);
/* rec_access_recheck() at an exec: the new program's readers from its signal where BPF said. */
struct rk_thread *rec_exec_recheck(struct rk_rec *r, struct rk_thread *t,
				   const struct rk_signal *s);
/* @t traced for --cgroup only (@on) or not: in memory and in its file, for a resume. */
void rec_thread_via_cgroup(struct rk_thread *t, int on);
void rec_reclaim(struct rk_rec *r);
/* A refused marker lives this long past its refusal (signals in flight then). */
#define RK_MARKER_NS (100 * 1000000ull)
/* How often the running recorder checks its live threads against BPF's set. */
#define RK_RECONCILE_NS (1000 * 1000000ull)
int rec_refused_stale(const struct rk_thread *t, const struct rk_signal *s);
void rec_unrefuse(struct rk_rec *r, struct rk_thread *t);
void rec_reconcile(struct rk_rec *r, uint64_t now);
void rec_thread_end_unseen(struct rk_rec *r, struct rk_thread *t);

#endif /* RK_REC_THREADS_H */
