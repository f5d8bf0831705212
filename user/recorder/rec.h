/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec.h - the recorder's state, shared by its modules (rec_*.c, record.c).
 *
 * Data flows one way: BPF signals -> event loop (rec_loop) -> {thread table
 * (rec_threads), drain, pin pool, sideband (rec_sideband)} -> buffer files.
 * record.c sets up and tears down; rec_target says what is traced;
 * rec_session publishes; rec_bpf owns what is pinned in bpffs.
 */
#ifndef RK_REC_H
#define RK_REC_H

#include <stdint.h>
#include <signal.h>
#include <sys/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "ringkeeper.skel.h"
#include "bufile.h"
#include "drain.h"
#include "evsel.h"
#include "pinpool.h"
#include "rec_opts.h"
#include "session.h"
#include "swring.h"

#define RK_NLINKS 11

#define BPF_FS_MAGIC_ 0xcafe4a11
#define TRACEFS_MAGIC_ 0x74726163
#define RK_LOCK_FILE "/run/ringkeeper.lock"
#define NBUCKETS 16384
/* After the target exits, wait this long at most for its threads' last switch-out. */
#define RK_DRAIN_NS (500 * 1000000ull)
/* Our BPF programs: sched_switch, fork, exec, exit, signal_deliver, task_rename, cgroup_attach. */
#define RK_NPROGS 10

struct rk_thread {
	struct rk_thread *hnext;
	struct rk_thread *all_next, *all_prev; /* r->all (rec_all_add()) */
	struct rk_thread *fin_next; /* r->fin: finished, to be freed once released */
	int on_fin;
	__u32 tid, tgid, uid;
	int dead; /* final switch-out written, pin retired */
	int last_switch; /* RK_SIG_SWITCH_IN/OUT of the last switch record, 0 not known */
	int refused; /* over a limit: no files, never traced (a marker, dead too) */
	/*
	 * A marker's refusal (CLOCK_MONOTONIC, after its map entries went):
	 * its signals stamped before are stale; a fork of its tid after it is
	 * a new thread. Freed once the intake is past it (rec_reclaim()).
	 */
	uint64_t refused_ns;
	/*
	 * rec_reconcile(): r->intakes when it was first seen out of the traced
	 * set while still live in our books (0: not seen so).
	 */
	uint64_t untraced_seen;
	int frozen; /* its process crashed: nothing more is written to its files */
	int via_cgroup; /* traced for --cgroup only: leaving the subtrees ends it */
	int left; /* it left the --cgroup subtrees: its signals still in flight are not a new thread */
	__u64 crash_ns; /* its process crashed at: later samples are not written */
	__u64 last_ns; /* the latest time in its sched file's records (they stay in time order) */
	int pending; /* on the deferred list: unpin/finish after the next drain */
	uint64_t defer_gen; /* r->drain_gen when it was last deferred */
	__u32 pending_state; /* RK_THREAD_* to finish with, 0: just unpin */
	uint64_t off_ns;
	int off_how; /* RK_PIN_OFF, or RK_PIN_PREEMPTED (still runnable) */
	uint64_t reader; /* uid + 1 of the user granted a read of its sched file, 0: root only */
	/* --trigger blocked: since when it is off CPU, in which state; fired for that stretch */
	uint64_t off_since;
	__u32 off_state;
	__u32 last_cpu; /* of its last switch: where a trigger record says it is */
	int blocked_fired;
	/* Buffers whose unmap (by a pin worker) is still to come; 0: reclaimable. */
	int unreleased;
	/* One buffer per source: [0] sched, [1..] the perf events. */
	struct rk_tbuf {
		struct rk_bufile *bf;
		struct rk_pin_item pin;
		struct rk_thread *t;
		int lost; /* its mapping was lost (SIGBUS), counted */
		/*
		 * Bytes of it counted in --max-shm (rec_shm_grow()), and the
		 * ring head past which a record needs more counted first.
		 */
		__u64 charged, grow_at;
	} b[RK_MAX_SRC];
};

/* The sched buffer: the thread's identity lives in every file, this one is canonical. */
#define SCHED_BF(t) ((t)->b[RK_SRC_SCHED].bf)

struct rk_proc {
	struct rk_proc *next;
	__u32 pid;
	struct rk_bufile *bf; /* NULL once done */
	uint64_t done_ns; /* its last live thread finished (the file unmapped); 0: not */
	uint64_t reader; /* uid + 1 of the user granted a read of its file, 0: root only */
};

struct rk_rec {
	const struct rk_record_opts *o;
	struct ringkeeper_bpf *skel;
	/*
	 * The signal rings, mapped: sched_switch's per-CPU switch rings
	 * (swring read only, swpos read-write) and the ringbuf (its consumer
	 * page read-write, the rest read only), read in time order (swring.h).
	 */
	struct rk_swring sw;
	void *sw_ring_map, *sw_pos_map, *rb_cons_map, *rb_prod_map; /* NULL: not mapped */
	size_t sw_ring_len, sw_pos_len, rb_prod_len;
	void *st_ring_map; /* record --offcpu: the stack rings, read only (NULL: none) */
	size_t st_ring_len;
	struct rk_pin_pool *pool;
	struct rk_thread *buckets[NBUCKETS];
	struct rk_thread *all;
	struct rk_thread *fin; /* the dead ones, which rec_reclaim() frees: it walks no live one */
	char dir[PATH_MAX]; /* <root>/<session> */
	char session[128];
	struct rk_session_stat *st;
	struct rk_pmu_entry sched_entry;
	uint64_t file_size;
	pid_t target;
	int target_exited;
	uint64_t drain_deadline;
	int lock_fd;
	int maps_pinned;
	unsigned int ncpus;
	uint64_t last_pins;
	uint64_t vmlck_ns; /* when VmLck was last sampled (rec_sample_vmlck()) */
	struct rk_thread **pendingv;
	size_t npending, cappending;
	uint64_t drain_gen; /* drains started */
	struct rk_drain *drain;
	int evcpu; /* RK_EVCPU_* (rec_evcpu.h): -e opened per task or per CPU */
	struct rk_proc *procs;
	int pmu_fd, cnt_fd, sig_fd; /* the maps, from the skeleton or from bpffs (resume) */
	int self_fd; /* the self map: our tgid (-1: none) */
	int held_fd; /* renames_held (-1: none, a session pinned by an older version) */
	/*
	 * The last intake's horizon (every signal before it is handed out) and
	 * the newest signal handed out: a held rename is written between them.
	 */
	uint64_t handed_ns, last_sig_ns;
	/*
	 * Every record timed before it is in its file: the signals handed out
	 * and, with -e, the perf rings drained to it (rec_drain()). Stored into
	 * the stat file at each turn of the loop: what a snapshot waits for.
	 */
	uint64_t written_ns;
	uint64_t intakes; /* intakes done: rec_reconcile() waits for one after what it saw */
	/*
	 * Live threads per process (rec_live_add()): open addressing, keys
	 * tgid + 1 (0: empty), a power of two; an entry at 0 stays (a tombstone
	 * a later add of the tgid reuses), cleared when the table is rebuilt.
	 */
	struct rk_live {
		__u32 key, n;
	} * live;
	size_t nlive, live_cap;
	uint64_t reconcile_ns; /* when rec_reconcile() last ran */
	uint64_t held_ns; /* when the held renames were last written (RK_RENAMES_HELD_EVERY_NS) */
	/*
	 * When the stat file's counters are next due (rec_publish_due()), and
	 * the signals and perf records handled since the clock was last read.
	 */
	uint64_t publish_due_ns;
	unsigned int publish_turn;
	/* RINGKEEPER_TEST_SIGNAL_US: each signal handled takes that long (tests: a backlog) */
	uint64_t test_signal_ns;
	/*
	 * When a stop signal (SIGINT, SIGTERM, SIGHUP) was first seen, 0 none:
	 * the intakes hand out signals for RK_STOP_GRACE_NS after it, then stop
	 * (rec_stop_due(); the rest counted in stop_dropped).
	 */
	uint64_t stop_ns;
	/*
	 * pin_asked and traced, mapped (struct rk_asked): one byte per tid
	 * below n; b NULL: none.
	 */
	struct rk_bytes {
		int fd;
		__u8 *b;
		size_t n;
	} asked, traced;
	int link_fds[RK_NLINKS]; /* pinned links taken over on resume */
	int prog_fds[RK_NPROGS]; /* our programs, for their run statistics; -1: not known */
	int made_dir; /* this recording created its session directory */
	__u32 self; /* our tgid: never traced */
	/*
	 * Retention: exited threads' files, oldest first (ring of gone_cap
	 * entries). An entry is named by its sequence number (gone_seq0 is
	 * gone[gone_head]'s), so the links between entries survive the ring's
	 * growth: each path's hash chain (found by name in O(1) when its file
	 * is moved aside) and each user's own queue (its oldest in O(1)).
	 */
	struct rk_gone {
		uint64_t exit_ns; /* CLOCK_MONOTONIC */
		uint64_t bytes;
		char *path; /* NULL: removed out of order (fair retention) */
		uint64_t hash; /* of path */
		uint64_t hnext; /* sequence + 1 of the next entry of its hash bucket; 0: none */
		uint64_t unext; /* sequence + 1 of its user's next entry; 0: none */
		__u32 uid;
	} * gone;
	size_t gone_head, gone_n, gone_cap;
	uint64_t gone_seq0;
	uint64_t gone_steps; /* entries a lookup or removal visited: its work, which tests count */
	uint64_t *gone_hash; /* gone_cap buckets: sequence + 1 of the first entry; 0: none */
	/*
	 * --max-shm's bytes per user (live and exited files) and each user's
	 * exited files in the ring: who pays for room (fair retention).
	 */
	struct rk_uid_shm {
		__u32 uid;
		size_t ngone;
		uint64_t bytes;
		uint64_t first, last; /* sequence + 1 of its oldest and newest entry; 0: none */
	} * ushm;
	size_t nushm;
	/* Each (directory, tid)'s next <tid>.<n> (rec_move_aside()): a table, a power of two. */
	struct rk_aside {
		uint64_t key;
		__u32 next;
	} * aside;
	size_t naside, aside_cap;
	int announced; /* tracing was on ("recording session ..." said) */
	int nlinks;
	int paranoid; /* perf_event_paranoid at start: who may see kernel addresses */
	/*
	 * Under a memory cgroup limit: the buffer bytes we may commit (files
	 * at their full size: the most they can take), and what is committed.
	 */
	uint64_t mem_cap, mem_bytes;
	uint64_t drops_before; /* resume: BPF drops the dead recorder last published */
	struct rk_record_opts ro; /* the options, completed from the session on resume */
	/* Set up by record.c, undone by its teardown; -1 / 0 when not (yet) there. */
	int sfd, tfd, pidfd, go_fd;
	pid_t child; /* the command we launched */
	int killed_child; /* we killed it (tracing failed): its end is no news */
	int resumed; /* a killed recorder's session, taken over */
	int resume_failed; /* not taken over: its session and pins are left as they are */
	sigset_t mask, oldmask; /* the stop signals (to our signalfd); the caller's mask */
	struct rk_trig *trig; /* record --trigger (rec_trigger.h); NULL: none armed */
	int oom_err; /* setting oom_score_adj -1000 failed (-errno), 0: exempt */
};

/* sample_id of RK_SCHED_SAMPLE_TYPE. */
struct sample_id {
	__u32 pid, tid;
	__u64 time;
	__u32 cpu, res;
	__u64 id;
};

extern const char *const rec_link_names[RK_NLINKS];

#endif /* RK_REC_H */
