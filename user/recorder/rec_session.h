/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_session.h - the recorder's the recording session.
 *
 * Its name, its stat file (mapped: the live counters `stat` reads), what
 * is published there (pool, BPF, loader figures), the memory cgroup cap and
 * real-time priority of the recorder, and resuming a killed recorder's
 * session (its pins, its files, who exited meanwhile).
 * Owns: r->st.
 * May call: rec_bpf, rec_target, rec_threads, memcg, pmu, util, and the libraries below them (bufile, pinpool, drain, evsel, libbpf).
 */
#ifndef RK_REC_SESSION_H
#define RK_REC_SESSION_H

#include "rec.h"

uint64_t rec_loader_cpu_ns(void);
/*
 * The counters into the stat file: BPF's, the pool's, the loader's own
 * figures, the intake's horizon (handed_ns), update_ns. At least every
 * RK_PUBLISH_NS: the loop calls rec_publish_due() at each turn, and the
 * intake and the perf rings' drain every RK_PUBLISH_CHECK records, so a
 * backlog that keeps one turn busy for minutes still shows in `stat`.
 */
#define RK_PUBLISH_NS 250000000ull
#define RK_PUBLISH_CHECK 64
void rec_publish(struct rk_rec *r);
/* rec_publish() if RK_PUBLISH_NS went by since the last. */
void rec_publish_due(struct rk_rec *r);
void rec_make_session_name(struct rk_rec *r);
int rec_stat_open(struct rk_rec *r, int create);
int rec_resume_session(struct rk_rec *r);
int rec_adopt_files(struct rk_rec *r);
void rec_finish_vanished(struct rk_rec *r);
void rec_memory_cap(struct rk_rec *r);
/*
 * rec_cap_earlier() - a new -a or --cgroup session (the service's, started
 * again each boot or restart) and the ended sessions of earlier runs under
 * its root stay within one --max-shm: their dead threads' files, oldest
 * first, are removed until they hold at most half of it (rk_gc; a session
 * left without files goes), and this session's --max-shm (and
 * --max-shm-user) become what they leave (docs/design.md, "Sessions of
 * earlier runs"). Before the session's directory is made; with the
 * system's lock held, so no recorder writes under the root meanwhile; only
 * under a root no one but root can write (a sticky one is left alone).
 */
void rec_cap_earlier(struct rk_rec *r);
void rec_realtime(const struct rk_record_opts *o);
void rec_note_vmlck(struct rk_rec *r);
void rec_sample_vmlck(struct rk_rec *r);

#endif /* RK_REC_SESSION_H */
