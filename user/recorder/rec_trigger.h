/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_trigger.h - record --trigger: keeping the moment that matters.
 *
 * A trigger (an operator's SIGUSR2 or `snapshot --trigger`; a traced
 * thread that waited for a CPU too long, decided in BPF at its switch-in;
 * one off CPU in a sleep or block too long, from the loader's watchdog; a
 * traced process killed by a signal that makes no core, or exiting with a
 * status other than 0) becomes a record in the history of the threads it
 * concerns, and a snapshot bundle of the session (bundle.h) cut after its
 * instant (+ --snapshot-after), keeping --snapshot-window before it. A
 * thread of its own writes the bundles, so the loop never waits on one.
 * Bounded: one snapshot per --trigger-gap (others counted as dropped),
 * and the newest --snapshot-max files, --snapshot-max-size bytes, of the
 * session in --snapshot-dir, fairly per user (retain.h).
 * Owns: r->trig. May call: rec_threads, rec_src, bundle, retain, util.
 */
#ifndef RK_REC_TRIGGER_H
#define RK_REC_TRIGGER_H

#include "rec.h"

/* Where the bundles go without --snapshot-dir: root's, next to the crash handler's notes. */
#define RK_SNAPSHOT_DIR "/var/lib/ringkeeper/snapshots"
/* One line per snapshot written, in the session's directory (`snapshot --trigger` reads it). */
#define RK_SNAPSHOTS_FILE "snapshots"

/*
 * rec_trigger_start() - make the snapshot directory and start the writer
 * thread if any trigger is armed. Return: 0, or -errno (said).
 */
int rec_trigger_start(struct rk_rec *r);
/*
 * rec_trigger_fire() - trigger @kind (RK_TRIG_*) at @time_ns, concerning
 * thread @tid (0: none, the session: an operator's) or, with @whole, every
 * live thread of its process; @value, @state, @by_pid, @by_tid as in
 * struct rk_trigger_record; @uid: whose the snapshot is (".uUID.", its
 * retention's account): the real uid of the task that fired it, when it
 * fired (0 for the operator's); @why: the reason, one line.
 */
void rec_trigger_fire(struct rk_rec *r, __u32 kind, __u32 tid, int whole, __u64 time_ns,
		      __u64 value, __u32 state, __u32 by_pid, __u32 by_tid, __u32 uid,
		      const char *why);
/* The signals of the BPF side (RK_SIG_TRIGGER, RK_SIG_KILL) and a thread's exit. */
void rec_trigger_signal(struct rk_rec *r, const struct rk_signal *s);
/* A leader's exit signal (its thread finished or not): the killed and exit triggers. */
void rec_trigger_exit(struct rk_rec *r, const struct rk_signal *s);
/* A thread switched: the watchdog's view of it. */
void rec_trigger_switch(struct rk_rec *r, struct rk_thread *t, const struct rk_signal *s);
/*
 * rec_trigger_tick() - the blocked-thread watchdog, and the snapshots whose
 * instant the loop's intake and drain have passed handed to the writer.
 */
void rec_trigger_tick(struct rk_rec *r, uint64_t now);
/* rec_trigger_stop() - hand over every pending snapshot, wait for the writer, free. */
void rec_trigger_stop(struct rk_rec *r);

#endif /* RK_REC_TRIGGER_H */
