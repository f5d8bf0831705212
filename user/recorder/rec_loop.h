/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_loop.h - the recorder's the event loop.
 *
 * BPF signals in, records out: the ringbuf consumer turns each signal into
 * records in its thread's files and pin wishes; the per-CPU perf rings are
 * drained and each record routed to its thread (or process sideband); the
 * loop waits on the ringbuf, the perf rings, a timer, signals and the
 * target's pidfd, and decides when the recording ends.
 * Owns: nothing that outlives a call but the loop's epoll fd.
 * May call: rec_session, rec_sideband, rec_threads, util, and the libraries below them (bufile, pinpool, drain, evsel, libbpf).
 */
#ifndef RK_REC_LOOP_H
#define RK_REC_LOOP_H

#include "rec.h"

/*
 * The signals so far, in time order: the switch rings' heads, then the
 * merge with the ringbuf (swring.h); with @all, everything (the programs
 * are detached), else what is older than now.
 */
void rec_intake(struct rk_rec *r, int all);
/*
 * rec_renames_held() - write the latest names BPF held back (RK_RENAME_GAP_NS),
 * every RK_RENAMES_HELD_EVERY_NS, or now with @all.
 */
void rec_renames_held(struct rk_rec *r, int all);
void rec_handle_signal(struct rk_rec *r, const struct rk_signal *s);
void rec_route_aux(struct rk_rec *r, const struct rk_evsel *ev, const struct perf_event_header *h,
		   __u32 pid, __u32 tid);
void rec_route(void *ctx, const struct rk_evsel *ev, const struct perf_event_header *h, __u32 pid,
	       __u32 tid);
void rec_drain(struct rk_rec *r);
/*
 * How long the intakes go on handing out signals once a stop signal came:
 * a backlog (a churn, a recorder that was stopped with SIGSTOP) would take
 * minutes to hand out, and systemd's stop timeout (TimeoutStopSec=30s) ends
 * in SIGKILL, which keeps nothing. What is in files stays; the rest is
 * counted (stop_dropped).
 */
#define RK_STOP_GRACE_NS 3000000000ull
/*
 * rec_stop_due() - notice a stop signal that waits (pending: the event loop
 * reads it after the intake) and, RK_STOP_GRACE_NS after the first, end the
 * intakes (r->sw.stop). Called during a long intake.
 */
void rec_stop_due(struct rk_rec *r);
int rec_event_loop(struct rk_rec *r, int sfd, int tfd, int pidfd);

#endif /* RK_REC_LOOP_H */
