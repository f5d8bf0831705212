/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * timeline.h - a session's per-thread histories read back as events: each
 * thread's runs on a CPU and why each ended, its fork, exec, renames, exit
 * and crash (its sched file), and the samples of every -e source (their
 * call chains symbolized through the sideband, tracepoints' fields as text).
 * What `ringkeeper sched` sums up and `export --perfetto` draws.
 * Every file is read as hostile: a record that does not parse ends that
 * file's walk (counted), sizes come from the files' validated geometry.
 * Owns: nothing past rk_timeline__free().
 * May call: bufile, symbols, tracedata, util.
 */
#ifndef RK_TIMELINE_H
#define RK_TIMELINE_H

#include <stddef.h>
#include <linux/types.h>
#include "bufile.h"

enum rk_tl_kind {
	RK_TL_IN, /* on CPU */
	RK_TL_OUT, /* off CPU: @arg is the switch-out's state word (RK_SWITCH_STATE) */
	RK_TL_FORK, /* born: @arg the parent's tid, @arg2 its pid (the FORK record's ptid, ppid) */
	RK_TL_EXEC, /* @arg: index of the new name in the thread's names */
	RK_TL_COMM, /* a rename: @arg as for EXEC */
	RK_TL_EXIT, /* @arg: the exit code as wait(2) encodes it */
	RK_TL_CRASH, /* @arg: the signal; @arg2: the tid it was delivered to */
	/*
	 * woken by another task on @cpu (RK_RECORD_WAKEUP): @arg its tid (from
	 * an interrupt: the task interrupted), @arg2 the target CPU
	 * (RK_TL_WAKEUP_CPU) | RK_TL_WAKEUP_NEW for a new thread's first
	 * wakeup | the record's context flags (rk_tl_wakeup_context())
	 */
	RK_TL_WAKEUP,
	/*
	 * record --offcpu's stacks, right after the OUT (@arg2
	 * RK_STACK_OF_SWITCH: where it blocked) or WAKEUP (RK_STACK_OF_WAKEUP:
	 * the waker's) they belong to: @arg the index in rk_timeline.stacks
	 */
	RK_TL_STACK,
};

#define RK_TL_WAKEUP_NEW 0x80000000u
#define RK_TL_WAKEUP_CPU 0x00ffffffu
/* RK_WAKEUP_CTX, _HARDIRQ, _SOFTIRQ, _NMI (0x5c) at this shift in a WAKEUP's @arg2 */
#define RK_TL_WAKEUP_CTX_SHIFT 24

/** struct rk_tl_event - one event of a thread's sched history, oldest first. */
struct rk_tl_event {
	__u64 time; /* CLOCK_MONOTONIC ns */
	__u32 kind; /* enum rk_tl_kind */
	__u32 cpu;
	__u32 arg, arg2;
};

/* A WAKEUP event's RK_WAKEUP_CTX and irq bits (RK_WAKEUP_IRQ_MASK: a sched_waking's common_flags). */
static inline __u32 rk_tl_wakeup_context(const struct rk_tl_event *e)
{
	return (e->arg2 >> RK_TL_WAKEUP_CTX_SHIFT) & (RK_WAKEUP_CTX | RK_WAKEUP_IRQ_MASK);
}

/** struct rk_tl_thread - one thread: its sched history and identity. */
struct rk_tl_thread {
	struct rk_thread_ident id; /* a copy; comm is its last name */
	struct rk_tl_event *ev;
	size_t nev;
	char (*names)[RK_COMM_LEN]; /* names[0]: the first one known; EXEC/COMM index the rest */
	size_t nnames;
	int broken; /* its ring stopped parsing part-way */
};

/** struct rk_tl_sample - one sample of an -e source. */
struct rk_tl_sample {
	__u64 time;
	__u32 tid, tgid, cpu;
	__u32 src; /* index into rk_timeline.srcs */
	__u64 period; /* the event count it stands for (PERF_SAMPLE_PERIOD, else the attr's) */
	size_t frame0; /* its frames: frames[frame0 .. frame0 + nframes), leaf first */
	__u32 nframes;
	__u32 fields; /* tracepoints: offset of its "name=value ..." text in strs; else ~0 */
};

/**
 * struct rk_tl_stack - one RK_RECORD_STACK of a sched file.
 * @of, @flags: as the record's (RK_STACK_OF_*, RK_STACKF_*).
 * @ip0: its addresses in rk_timeline.stack_ips, @nkernel kernel ones then
 *	@nuser user ones, each leaf first (what perf.data's call chain takes).
 * @frame0, @nframes: the same symbolized, in rk_timeline.frames (0 frames
 *	when loaded without a session: rk_timeline__add_sched()).
 */
struct rk_tl_stack {
	__u64 time;
	__u32 tid, tgid;
	__u32 of, flags;
	__u32 nkernel, nuser;
	size_t ip0;
	size_t frame0;
	__u32 nframes;
	__u32 pad;
};

/** struct rk_tl_frame - a symbolized address: offsets of its strings in strs. */
struct rk_tl_frame {
	__u64 ip;
	__u32 sym, dso; /* "[unknown]" when not resolved */
	/* the file mapping it is in (map_len 0: none known), the file's build id (~0u: none) */
	__u64 map_start, map_len, map_pgoff;
	__u32 build_id; /* offset in strs of its hex */
	__u32 pad;
};

/**
 * struct rk_tl_timebase - an -e source's event, as its first file's attr
 * says it (what an export names the samples' counter by): @type and
 * @config, @every: sample_period, or sample_freq if @freq; @known: 0 until
 * a file of it was read.
 */
struct rk_tl_timebase {
	__u64 config, every;
	__u32 type;
	__u8 freq, known;
};

/** struct rk_timeline - what rk_timeline__load() read. */
struct rk_timeline {
	struct rk_tl_thread *threads; /* sorted by tid */
	size_t nthreads;
	char (*srcs)[64]; /* the -e sources' names (directory names) */
	size_t nsrcs;
	int *src_is_tp; /* per source: a tracepoint */
	struct rk_tl_timebase *src_tb; /* per source: its event (NULL: not kept) */
	struct rk_tl_sample *samples; /* sorted by time */
	size_t nsamples;
	struct rk_tl_frame *frames;
	size_t nframes;
	struct rk_tl_stack *stacks; /* record --offcpu, in the order of the files' records */
	size_t nstacks;
	__u64 *stack_ips;
	size_t nstack_ips;
	char *strs; /* NUL-terminated strings, interned */
	size_t strs_len;
	unsigned long long skipped; /* files that did not open or parse (reported) */
	/* private: the interning table while loading, capacities */
	__u32 *str_slot;
	size_t str_nslot, str_n, str_cap;
	size_t threads_cap, samples_cap, frames_cap, stacks_cap, stack_ips_cap;
	int oom;
	/* the build ids found, per file (its path's offset in strs -> its hex's, ~0u: none) */
	__u32 (*bids)[2];
	size_t nbids, bids_cap;
};

/**
 * rk_timeline__load() - read @session_dir (a session, or a core's buffers
 * extracted as one): threads with @tid / processes with @pid only (0: all).
 * @with_samples: also the -e sources (and symbolize them).
 * Return: 0, -ENOENT (no thread matched), or -errno (reported).
 */
int rk_timeline__load(struct rk_timeline *tl, const char *session_dir, __u32 tid, __u32 pid,
		      int with_samples);

void rk_timeline__free(struct rk_timeline *tl);

/**
 * rk_timeline__clip() - keep of @tl only what lies in [@lo, @hi] (--time,
 * --last): switches, exits, crashes and samples outside go; births, execs
 * and renames stay (they name the threads). Return: the events and samples
 * removed.
 */
unsigned long long rk_timeline__clip(struct rk_timeline *tl, __u64 lo, __u64 hi);

/**
 * struct rk_wraps - the buffers of a session whose rings wrapped (their
 * oldest records overwritten): @files of them, of @threads threads; from
 * @whole_from (the latest first record of such a file) on, every thread's
 * every source is whole (0: none wrapped).
 */
struct rk_wraps {
	__u64 whole_from;
	size_t threads, files;
};

/**
 * rk_timeline__wraps() - @w of @session_dir's sched and -e buffers of
 * threads @tid / processes @pid (0: all). Return: 0, or -errno.
 */
int rk_timeline__wraps(const char *session_dir, __u32 tid, __u32 pid, struct rk_wraps *w);

/**
 * struct rk_tl_live - a session's sched histories kept from one read to the
 * next (`top`): a file is read once, then only its records past the head
 * the last read reached; a file whose page 0 (head, identity) did not
 * change is not read at all (one page read); a file gone is dropped. -e
 * sources and off-CPU stacks are not read.
 */
struct rk_tl_live;

/** struct rk_tl_live_stats - what one rk_tl_live__update() did. */
struct rk_tl_live_stats {
	size_t files; /* in the directory */
	size_t unchanged; /* page 0 as last read: not read */
	size_t read; /* new or changed: read past their last head (or whole) */
	size_t skipped; /* did not open (said once per file) */
	size_t denied; /* of them, another user's (said in one line, when there are more) */
	size_t gone; /* no longer in the directory: dropped */
};

/** rk_tl_live__new() - a reader of @session_dir's sched files, nothing read yet. NULL: errno. */
struct rk_tl_live *rk_tl_live__new(const char *session_dir);

/**
 * rk_tl_live__update() - read what changed since the last update (all, the
 * first time). Return: 0, or -errno (said; what was read before stays).
 */
int rk_tl_live__update(struct rk_tl_live *lv, struct rk_tl_live_stats *st);

/**
 * rk_tl_live__timeline() - the histories as the last update left them, one
 * thread per file (no samples, stacks or strings; in no particular order).
 * Valid until the next update or forget.
 */
const struct rk_timeline *rk_tl_live__timeline(const struct rk_tl_live *lv);

/**
 * rk_tl_live__forget_before() - drop what no window starting at @t or
 * later needs (memory and time stay in proportion to the window, not the
 * session's length): rk_sched_now() of such a window is unchanged.
 */
void rk_tl_live__forget_before(struct rk_tl_live *lv, __u64 t);

/** rk_tl_live__free() - NULL is a no-op. */
void rk_tl_live__free(struct rk_tl_live *lv);

/** rk_first_time() - the time of @bf's oldest timed record still in its ring (0: none). */
__u64 rk_first_time(const struct rk_bufile *bf);

struct rk_symbols;
struct rk_tp_format;

/*
 * One file into @tl (zeroed, or as loaded so far): a sched file as a
 * thread; an -e source's (index @src of srcs, which the caller sizes) as
 * samples, resolved through @syms and @tpf (may be NULL). What the
 * directory walk does per file; also the fuzzer's way in.
 * Return: 0; -EBADMSG if records past a corrupt one were left out (what
 * parsed is in); -ENOMEM.
 */
int rk_timeline__add_sched(struct rk_timeline *tl, const struct rk_bufile *bf);
int rk_timeline__add_samples(struct rk_timeline *tl, const struct rk_bufile *bf, __u32 src,
			     struct rk_symbols *syms, const struct rk_tp_format *tpf);

/** rk_tl_str() - the string at @off of @tl's table. */
static inline const char *rk_tl_str(const struct rk_timeline *tl, __u32 off)
{
	return tl->strs + off;
}

/**
 * enum rk_offcpu - why a thread was off CPU, from a switch-out's state word
 * (perf sched timehist's and Perfetto's letters: R, S, D, I, T, X).
 */
enum rk_offcpu {
	RK_OFF_PREEMPTED, /* R: runnable, waiting for a CPU */
	RK_OFF_SLEEPING, /* S: interruptible sleep */
	RK_OFF_BLOCKED, /* D: uninterruptible (I/O, locks) */
	RK_OFF_IDLE, /* I: uninterruptible, not counted as load (TASK_NOLOAD) */
	RK_OFF_STOPPED, /* T, t: stopped or traced */
	RK_OFF_DEAD, /* X: its final switch-out */
	RK_OFF_UNKNOWN, /* recorded before the state was kept */
	RK_OFF_NR
};

enum rk_offcpu rk_offcpu_of(__u32 state_word);
/*
 * rk_offcpu_report() - sched_switch's prev_state for a state word, in the
 * kernel's report bits (since 4.14: S 0x1, D 0x2, T 0x4, X 0x10, I 0x80,
 * TASK_REPORT_MAX 0x100 if preempted, "R+"; 0 still runnable, "R", or not
 * recorded), what perf and Perfetto read.
 */
__u64 rk_offcpu_report(__u32 state_word);
const char *rk_offcpu_name(enum rk_offcpu s);

/*
 * The traced threads' switches and wakeups as one CPU's stream sees them,
 * for the writers that turn them into sched_switch events (perf.data,
 * Perfetto): a writer's own event struct starts with struct rk_cpu_ev,
 * sorts its array with rk_cpu_ev_cmp, and asks rk_cpu_ev_pairs whether a
 * switch-out and the event after it are one switch between two traced
 * threads (an in at the same time on the same CPU); otherwise the other
 * side of the switch is not known.
 */
/* an out sorts before an in; FREE: a dead thread's end (the Perfetto export's) */
enum rk_cpu_ev_kind { RK_CPU_OUT, RK_CPU_IN, RK_CPU_WAKE, RK_CPU_FREE };

struct rk_cpu_ev {
	__u64 time;
	__u32 cpu;
	__u32 kind; /* enum rk_cpu_ev_kind */
	__u32 tid; /* the thread's (the last tie-break) */
};

/* qsort comparator of arrays whose elements start with struct rk_cpu_ev: by CPU, time, kind, tid. */
int rk_cpu_ev_cmp(const void *a, const void *b);

/* @out (a switch-out) and @next (the event after it, or NULL) are one switch. */
int rk_cpu_ev_pairs(const struct rk_cpu_ev *out, const struct rk_cpu_ev *next);

#endif /* RK_TIMELINE_H */
