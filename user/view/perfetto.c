// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * perfetto.c - write a timeline as a Perfetto trace (see perfetto.h).
 *
 * The protobuf wire format by hand (pfwire.h); the scheduler's view and
 * the process tree are pfsched.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "offcpu.h"
#include "perfetto.h"
#include "pfsched.h"
#include "pfwire.h"
#include "util.h"

/* TracePacket */
#define TP_TRACK_EVENT 11
#define TP_TRACK_DESCRIPTOR 60
#define TP_CLOCK_SNAPSHOT 6
#define TP_INTERNED_DATA 12
#define TP_PERF_SAMPLE 66
#define TP_DEFAULTS 59
/* TracePacketDefaults, PerfSampleDefaults, PerfEvents.Timebase and RawEvent */
#define TPD_PERF_SAMPLE 12
#define PSD_TIMEBASE 1
#define TB_PERIOD 1
#define TB_FREQUENCY 2
#define TB_COUNTER 4
#define TB_RAW_EVENT 5
#define TB_NAME 10
#define RAW_TYPE 1
#define RAW_CONFIG 2
/* ClockSnapshot, BuiltinClocks */
#define CS_CLOCKS 1
#define CS_PRIMARY 2
#define CLK_ID 1
#define CLK_TS 2
#define CLOCK_BOOT 6
/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
#define TD_UUID 1
#define TD_NAME 2
#define TD_NO_MERGE 9 /* disallow_merging_with_system_tracks */
#define TD_PROCESS 3
#define TD_THREAD 4
#define PD_PID 1
#define PD_NAME 6
#define THD_PID 1
#define THD_TID 2
#define THD_NAME 5
/* TrackEvent, DebugAnnotation */
#define TE_TYPE 9
#define TE_TRACK_UUID 11
#define TE_NAME 23
#define TE_NAME_IID 10
#define TE_DEBUG 4
#define TE_SLICE_BEGIN 1
#define TE_SLICE_END 2
#define TE_INSTANT 3
#define DA_NAME 10
#define DA_NAME_IID 1
#define DA_STRING_IID 17
#define DA_UINT 3
#define DA_INT 4
#define DA_STRING 6
/* PerfSample, InternedData and its messages */
#define PS_CPU 1
#define PS_PID 2
#define PS_TID 3
#define PS_CALLSTACK 4
#define PS_TIMEBASE_COUNT 6
#define ID_EVENT_NAMES 2
#define ID_ANNOTATION_NAMES 3
#define ID_FUNCTION_NAMES 5
#define ID_ANNOTATION_STRINGS 29
#define EN_IID 1
#define EN_NAME 2
#define ID_FRAMES 6
#define ID_CALLSTACKS 7
#define ID_MAPPING_PATHS 17
#define ID_MAPPINGS 19
#define IS_IID 1
#define IS_STR 2
#define MAP_IID 1
#define MAP_BUILD_ID 2
#define MAP_START_OFFSET 3
#define MAP_START 4
#define MAP_END 5
#define MAP_EXACT_OFFSET 8
#define MAP_PATH_IDS 7
#define ID_BUILD_IDS 16
#define FR_IID 1
#define FR_FUNCTION 2
#define FR_MAPPING 3
#define FR_REL_PC 4
#define CSK_IID 1
#define CSK_FRAMES 2

/* Small (short varints, in every packet), never 0, processes odd, threads even. */
#define UUID_PROCESS(pid) (2ull * (__u64)(pid) + 1)
#define UUID_THREAD(i) (2ull * (__u64)(i) + 2)
/* The name of a thread's track of slices (its thread-state track is "comm tid"). */
#define RK_PF_HISTORY_TRACK "On/off CPU (ringkeeper)"

/*
 * Interned names of the track events (InternedData.event_names) and of
 * their annotations (debug_annotation_names, and the off-CPU states as
 * debug_annotation_string_values): a slice's packet says a small id, not
 * the name. Emitted once, before the first track event.
 */
enum {
	EV_RUNNING = 1,
	EV_OFF, /* + enum rk_offcpu */
	EV_FORK = EV_OFF + RK_OFF_NR,
	EV_EXIT,
	EV_EVENT,
	EV_SRC, /* + the source's index */
};
enum {
	AN_CPU = 1,
	AN_STATE,
	AN_LEFT_CPU,
	AN_PARENT_TID,
	AN_EXIT_CODE,
	AN_SIGNAL,
	AN_CRASHING_TID,
	AN_FIELDS,
	AN_STACK,
	AN_NR,
};
static const char *const annotation_names[AN_NR] = {
	[AN_CPU] = "cpu",
	[AN_STATE] = "state",
	[AN_LEFT_CPU] = "left_cpu",
	[AN_PARENT_TID] = "parent_tid",
	[AN_EXIT_CODE] = "exit_code",
	[AN_SIGNAL] = "signal",
	[AN_CRASHING_TID] = "crashing_tid",
	[AN_FIELDS] = "fields",
	[AN_STACK] = "blocking_stack",
};
/* debug_annotation_string_values: the off-CPU state names, 1 + enum rk_offcpu. */
#define SV_STATE(s) (1u + (__u32)(s))

static __u64 clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/*
 * The first packet: the sequence starts clean, the trace's clock is
 * CLOCK_MONOTONIC; *@boot_off: CLOCK_BOOTTIME - CLOCK_MONOTONIC then (ftrace
 * events are read in the boot clock).
 */
static void clock_snapshot(struct pf_out *o, __u64 *boot_off)
{
	__u64 mono = clock_ns(CLOCK_MONOTONIC), boot = clock_ns(CLOCK_BOOTTIME);
	size_t cs, c;

	*boot_off = boot - mono;
	pkt_start(o, 0, SEQ_INCREMENTAL_STATE_CLEARED);
	cs = begin(&o->pkt, TP_CLOCK_SNAPSHOT);
	c = begin(&o->pkt, CS_CLOCKS);
	f_u64(&o->pkt, CLK_ID, CLOCK_BOOT);
	f_u64(&o->pkt, CLK_TS, boot);
	end(&o->pkt, c);
	c = begin(&o->pkt, CS_CLOCKS);
	f_u64(&o->pkt, CLK_ID, CLOCK_MONO);
	f_u64(&o->pkt, CLK_TS, mono);
	end(&o->pkt, c);
	f_u64(&o->pkt, CS_PRIMARY, CLOCK_MONO);
	end(&o->pkt, cs);
	pkt_flush(o);
}

static void descriptors(struct pf_out *o, const struct rk_timeline *tl)
{
	size_t i, j, td, d;

	for (i = 0; i < tl->nthreads; i++) {
		const struct rk_tl_thread *t = &tl->threads[i];

		/* A process's track, before its first thread's. */
		for (j = 0; j < i && tl->threads[j].id.tgid != t->id.tgid; j++)
			;
		if (j == i) {
			pkt_start(o, 0, 0);
			td = begin(&o->pkt, TP_TRACK_DESCRIPTOR);
			f_u64(&o->pkt, TD_UUID, UUID_PROCESS(t->id.tgid));
			d = begin(&o->pkt, TD_PROCESS);
			f_u64(&o->pkt, PD_PID, t->id.tgid);
			f_str(&o->pkt, PD_NAME, rk_pf_process_name(tl, i));
			end(&o->pkt, d);
			end(&o->pkt, td);
			pkt_flush(o);
		}
		pkt_start(o, 0, 0);
		td = begin(&o->pkt, TP_TRACK_DESCRIPTOR);
		f_u64(&o->pkt, TD_UUID, UUID_THREAD(i));
		d = begin(&o->pkt, TD_THREAD);
		f_u64(&o->pkt, THD_PID, t->id.tgid);
		f_u64(&o->pkt, THD_TID, t->id.tid);
		f_str(&o->pkt, THD_NAME, t->id.comm);
		end(&o->pkt, d);
		/*
		 * Its own name: merged into the thread's track, the UI names it
		 * as the thread ("comm tid"), the name its thread-state track
		 * (from the ftrace events) also has. Not merged, it is a track
		 * of the thread named by TD_NAME.
		 */
		f_str(&o->pkt, TD_NAME, RK_PF_HISTORY_TRACK);
		f_u64(&o->pkt, TD_NO_MERGE, 1);
		end(&o->pkt, td);
		pkt_flush(o);
	}
}

/* What goes on a thread's track, sorted by time before it is written. */
enum item_kind {
	IT_END, /* the open slice ends */
	IT_RUN, /* "Running" begins: a = CPU */
	IT_OFF, /* off CPU begins: a = enum rk_offcpu, b = the CPU it left */
	IT_INSTANT, /* a = the event index in the thread */
	IT_TP, /* a tracepoint sample: a = the sample index */
};

struct item {
	__u64 time;
	__u32 thread;
	__u32 kind;
	__u32 a, b;
	__u64 seq;
	__u32 stack; /* IT_OFF: 1 + its blocking stack's index in tl->stacks, 0: none */
	__u32 pad;
};

static int cmp_item(const void *x, const void *y)
{
	const struct item *a = x, *b = y;

	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

struct plan {
	struct item *v;
	size_t n, cap;
};

static int plan_add(struct plan *p, __u64 time, size_t thread, __u32 kind, __u32 a, __u32 b)
{
	struct item *it;

	if (p->n == p->cap) {
		size_t c = p->cap ? p->cap * 2 : 4096;
		struct item *v = realloc(p->v, c * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = c;
	}
	it = &p->v[p->n];
	it->time = time;
	it->thread = (__u32)thread;
	it->kind = kind;
	it->a = a;
	it->b = b;
	it->stack = 0;
	it->seq = p->n++;
	return 0;
}

/* A thread's slices: Running from each in to its out, its off-CPU state from each out to the next in. */
static int plan_thread(struct plan *p, const struct rk_tl_thread *t, size_t ti)
{
	int open = 0, err = 0;
	size_t i;

	for (i = 0; !err && i < t->nev; i++) {
		const struct rk_tl_event *e = &t->ev[i];

		switch (e->kind) {
		case RK_TL_IN:
		case RK_TL_OUT:
			if (open)
				err = plan_add(p, e->time, ti, IT_END, 0, 0);
			if (!err && e->kind == RK_TL_IN)
				err = plan_add(p, e->time, ti, IT_RUN, e->cpu, 0);
			/* A final switch-out: nothing follows it. */
			else if (!err && rk_offcpu_of(e->arg) != RK_OFF_DEAD)
				err = plan_add(p, e->time, ti, IT_OFF, rk_offcpu_of(e->arg),
					       e->cpu);
			/* record --offcpu: where it blocked, the switch-out's stack after it. */
			if (!err && e->kind == RK_TL_OUT && i + 1 < t->nev &&
			    t->ev[i + 1].kind == RK_TL_STACK &&
			    t->ev[i + 1].arg2 == RK_STACK_OF_SWITCH)
				p->v[p->n - 1].stack = t->ev[i + 1].arg + 1;
			open = e->kind == RK_TL_IN || rk_offcpu_of(e->arg) != RK_OFF_DEAD;
			break;
		case RK_TL_WAKEUP:
			break; /* the scheduler's view draws it (ftrace sched_waking) */
		case RK_TL_STACK:
			break; /* the off-CPU slice it follows carries it (blocking_stack) */
		default:
			err = plan_add(p, e->time, ti, IT_INSTANT, (__u32)i, 0);
		}
	}
	/* Still on CPU (or off) when the history ends: it ends at the exit if known. */
	if (!err && open && t->id.exit_ns && t->nev && t->id.exit_ns >= t->ev[t->nev - 1].time)
		err = plan_add(p, t->id.exit_ns, ti, IT_END, 0, 0);
	return err;
}

/* The thread a sample of @tid at @time belongs to (tids are reused): index, or -1. */
static long thread_of(const struct rk_timeline *tl, __u32 tid, __u64 time)
{
	size_t lo = 0, hi = tl->nthreads;
	long best = -1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (tl->threads[mid].id.tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < tl->nthreads && tl->threads[lo].id.tid == tid; lo++)
		if (best < 0 || tl->threads[lo].id.start_ns <= time)
			best = (long)lo;
	return best;
}

static const char *slice_name(enum rk_offcpu s)
{
	static const char *const n[RK_OFF_NR] = {
		"Preempted", "Sleeping", "Blocked (uninterruptible)",	"Idle",
		"Stopped",   "Dead",	 "Off CPU (state not recorded)"
	};

	return s < RK_OFF_NR ? n[s] : n[RK_OFF_UNKNOWN];
}

static void annotation_u64(struct rk_buf *b, __u32 name, __u64 v)
{
	size_t d = begin(b, TE_DEBUG);

	f_u64(b, DA_NAME_IID, name);
	f_u64(b, DA_UINT, v);
	end(b, d);
}

static void annotation_str(struct rk_buf *b, __u32 name, const char *v)
{
	size_t d = begin(b, TE_DEBUG);

	f_u64(b, DA_NAME_IID, name);
	f_str(b, DA_STRING, v);
	end(b, d);
}

/* An interned string: {iid, name} as message @field of InternedData. */
static void interned(struct rk_buf *b, __u32 field, __u64 iid, const char *str)
{
	size_t m = begin(b, field);

	f_u64(b, EN_IID, iid);
	f_str(b, EN_NAME, str);
	end(b, m);
}

/* The interned names track_events() refers to, in one packet. */
static void interned_names(struct pf_out *o, const struct rk_timeline *tl)
{
	size_t id, i;

	pkt_start(o, 0, SEQ_NEEDS_INCREMENTAL_STATE);
	id = begin(&o->pkt, TP_INTERNED_DATA);
	interned(&o->pkt, ID_EVENT_NAMES, EV_RUNNING, "Running");
	for (i = 0; i < RK_OFF_NR; i++)
		interned(&o->pkt, ID_EVENT_NAMES, EV_OFF + i, slice_name((enum rk_offcpu)i));
	interned(&o->pkt, ID_EVENT_NAMES, EV_FORK, "fork");
	interned(&o->pkt, ID_EVENT_NAMES, EV_EXIT, "exit");
	interned(&o->pkt, ID_EVENT_NAMES, EV_EVENT, "event");
	for (i = 0; i < tl->nsrcs; i++)
		interned(&o->pkt, ID_EVENT_NAMES, EV_SRC + i, tl->srcs[i]);
	for (i = 1; i < AN_NR; i++)
		interned(&o->pkt, ID_ANNOTATION_NAMES, i, annotation_names[i]);
	/* InternedString: {iid, str}, the same field numbers. */
	for (i = 0; i < RK_OFF_NR; i++)
		interned(&o->pkt, ID_ANNOTATION_STRINGS, SV_STATE(i),
			 rk_offcpu_name((enum rk_offcpu)i));
	end(&o->pkt, id);
	pkt_flush(o);
}

static const char *sig_name(int sig)
{
	const char *n = sigabbrev_np(sig);

	return n ? n : "?";
}

/* An instant of the thread's history: its name and annotations. */
static void instant(struct rk_buf *b, const struct rk_tl_thread *t, const struct rk_tl_event *e)
{
	char name[64];

	switch (e->kind) {
	case RK_TL_FORK:
		f_u64(b, TE_NAME_IID, EV_FORK);
		annotation_u64(b, AN_PARENT_TID, e->arg);
		break;
	case RK_TL_EXEC:
	case RK_TL_COMM:
		snprintf(name, sizeof(name), "%s %s", e->kind == RK_TL_EXEC ? "exec" : "rename",
			 e->arg < t->nnames ? t->names[e->arg] : "?");
		f_str(b, TE_NAME, name);
		break;
	case RK_TL_EXIT:
		f_u64(b, TE_NAME_IID, EV_EXIT);
		annotation_u64(b, AN_EXIT_CODE, e->arg);
		break;
	case RK_TL_CRASH:
		snprintf(name, sizeof(name), "crash SIG%s", sig_name((int)e->arg));
		f_str(b, TE_NAME, name);
		annotation_u64(b, AN_SIGNAL, e->arg);
		annotation_u64(b, AN_CRASHING_TID, e->arg2);
		break;
	default:
		f_u64(b, TE_NAME_IID, EV_EVENT);
	}
	annotation_u64(b, AN_CPU, e->cpu);
}

/*
 * record --offcpu: a sleeping or blocked slice's stack, where the thread
 * blocked, as a folded line (root first: user frames, then the kernel's).
 */
static void blocking_stack(struct rk_buf *b, const struct rk_timeline *tl, const struct item *it)
{
	struct rk_offcpu_span sp = { .thread = it->thread, .stack = it->stack - 1, .comm = "" };
	char buf[4096];

	if (sp.stack >= tl->nstacks)
		return;
	rk_offcpu_folded_stack(tl, &sp, 1, buf, sizeof(buf));
	/* Without the comm (the track says whose): from the first frame on. */
	annotation_str(b, AN_STACK, buf[0] == ';' ? buf + 1 : buf);
}

static void track_events(struct pf_out *o, const struct rk_timeline *tl, const struct plan *p)
{
	size_t i;

	interned_names(o, tl);
	for (i = 0; i < p->n && !o->err; i++) {
		const struct item *it = &p->v[i];
		const struct rk_tl_thread *t = &tl->threads[it->thread];
		size_t te;

		pkt_start(o, it->time, SEQ_NEEDS_INCREMENTAL_STATE);
		te = begin(&o->pkt, TP_TRACK_EVENT);
		f_u64(&o->pkt, TE_TRACK_UUID, UUID_THREAD(it->thread));
		switch (it->kind) {
		case IT_END:
			f_u64(&o->pkt, TE_TYPE, TE_SLICE_END);
			break;
		case IT_RUN:
			f_u64(&o->pkt, TE_TYPE, TE_SLICE_BEGIN);
			f_u64(&o->pkt, TE_NAME_IID, EV_RUNNING);
			annotation_u64(&o->pkt, AN_CPU, it->a);
			o->st->slices++;
			break;
		case IT_OFF:
			f_u64(&o->pkt, TE_TYPE, TE_SLICE_BEGIN);
			f_u64(&o->pkt, TE_NAME_IID,
			      EV_OFF + (it->a < RK_OFF_NR ? it->a : RK_OFF_UNKNOWN));
			{
				size_t d = begin(&o->pkt, TE_DEBUG);

				f_u64(&o->pkt, DA_NAME_IID, AN_STATE);
				f_u64(&o->pkt, DA_STRING_IID,
				      SV_STATE(it->a < RK_OFF_NR ? it->a : RK_OFF_UNKNOWN));
				end(&o->pkt, d);
			}
			annotation_u64(&o->pkt, AN_LEFT_CPU, it->b);
			if (it->stack)
				blocking_stack(&o->pkt, tl, it);
			o->st->slices++;
			break;
		case IT_INSTANT:
			f_u64(&o->pkt, TE_TYPE, TE_INSTANT);
			instant(&o->pkt, t, &t->ev[it->a]);
			o->st->instants++;
			break;
		case IT_TP: {
			const struct rk_tl_sample *s = &tl->samples[it->a];

			f_u64(&o->pkt, TE_TYPE, TE_INSTANT);
			f_u64(&o->pkt, TE_NAME_IID, EV_SRC + s->src);
			annotation_u64(&o->pkt, AN_CPU, s->cpu);
			annotation_str(&o->pkt, AN_FIELDS,
				       s->fields != ~0u ? rk_tl_str(tl, s->fields) :
							  "(no format for this tracepoint)");
			o->st->samples++;
			break;
		}
		}
		end(&o->pkt, te);
		pkt_flush(o);
	}
}

/* Interning of call stacks: frames by (function, file), stacks by their frames. */
struct intern {
	__u64 *keys; /* frames: sym << 32 | dso; 0: empty */
	__u64 *ids;
	size_t nslot, n;
};

static __u64 mix(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* The id of @key (not 0), made if new (*@made set). Return: 0 if out of memory. */
static __u64 intern_id(struct intern *h, __u64 key, int *made)
{
	size_t j;

	*made = 0;
	if ((h->n + 1) * 2 > h->nslot) {
		size_t n = h->nslot ? h->nslot * 2 : 1024, i;
		__u64 *k = calloc(n, sizeof(*k)), *v = calloc(n, sizeof(*v));

		if (!k || !v) {
			free(k);
			free(v);
			return 0;
		}
		for (i = 0; i < h->nslot; i++) {
			if (!h->keys[i])
				continue;
			for (j = mix(h->keys[i]) & (n - 1); k[j]; j = (j + 1) & (n - 1))
				;
			k[j] = h->keys[i];
			v[j] = h->ids[i];
		}
		free(h->keys);
		free(h->ids);
		h->keys = k;
		h->ids = v;
		h->nslot = n;
	}
	for (j = mix(key) & (h->nslot - 1); h->keys[j]; j = (j + 1) & (h->nslot - 1))
		if (h->keys[j] == key)
			return h->ids[j];
	h->keys[j] = key;
	h->ids[j] = ++h->n;
	*made = 1;
	return h->ids[j];
}

static void intern_free(struct intern *h)
{
	free(h->keys);
	free(h->ids);
}

/* perf's generic events as PerfEvents.Counter (0: none of them). */
static __u64 perfetto_counter(__u32 type, __u64 config)
{
	static const __u8 sw[] = { 1, 3, 2, 4, 5, 6, 7, 8, 9, 20 }; /* PERF_COUNT_SW_* */

	if (type == PERF_TYPE_HARDWARE && config <= 9)
		return 10 + config; /* HW_CPU_CYCLES .. HW_REF_CPU_CYCLES */
	if (type == PERF_TYPE_SOFTWARE && config < sizeof(sw))
		return sw[config];
	return 0;
}

/* Source @k's TracePacketDefaults: its samples' counter, named as the source. */
static void timebase_defaults(struct rk_buf *b, const struct rk_timeline *tl, size_t k)
{
	const struct rk_tl_timebase *tb = tl->src_tb ? &tl->src_tb[k] : NULL;
	size_t d = begin(b, TP_DEFAULTS), p = begin(b, TPD_PERF_SAMPLE), t = begin(b, PSD_TIMEBASE);

	if (tb && tb->known) {
		__u64 c = perfetto_counter(tb->type, tb->config);

		if (tb->every)
			f_u64(b, tb->freq ? TB_FREQUENCY : TB_PERIOD, tb->every);
		if (c) {
			f_u64(b, TB_COUNTER, c);
		} else {
			size_t r = begin(b, TB_RAW_EVENT);

			f_u64(b, RAW_TYPE, tb->type);
			f_u64(b, RAW_CONFIG, tb->config);
			end(b, r);
		}
	}
	f_str(b, TB_NAME, tl->srcs[k]);
	end(b, t);
	end(b, p);
	end(b, d);
}

struct tb_key {
	__u32 src, cpu;
	size_t i;
};

static int tb_key_cmp(const void *a, const void *b)
{
	const struct tb_key *x = a, *y = b;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * Per sample written (stack_of[i] != 0): its source's count on its CPU
 * since the recording began, as far as the samples tell (the sum of their
 * periods up to it), which Perfetto's per-CPU counter tracks want. Sorted,
 * not indexed by CPU: a file's CPU numbers size nothing. NULL: no memory.
 */
static __u64 *timebase_counts(const struct rk_timeline *tl, const __u64 *stack_of)
{
	struct tb_key *key = malloc((tl->nsamples + 1) * sizeof(*key));
	__u64 *count = calloc(tl->nsamples + 1, sizeof(*count)), sum = 0;
	size_t i, n = 0;

	if (!key || !count) {
		free(key);
		free(count);
		return NULL;
	}
	for (i = 0; i < tl->nsamples; i++)
		if (stack_of[i])
			key[n++] = (struct tb_key){ tl->samples[i].src, tl->samples[i].cpu, i };
	/* Samples are in time order: by index within a source and CPU. */
	if (n)
		qsort(key, n, sizeof(*key), tb_key_cmp);
	for (i = 0; i < n; i++) {
		if (i && (key[i].src != key[i - 1].src || key[i].cpu != key[i - 1].cpu))
			sum = 0;
		sum += tl->samples[key[i].i].period;
		count[key[i].i] = sum;
	}
	free(key);
	return count;
}

/*
 * Samples of non-tracepoint sources: per source, a sequence whose first
 * packet names its counter (defaults) and holds the interned data (names,
 * files, frames, stacks: string ids are offsets in the timeline's table +
 * 1), then a PerfSample each, with the counter's running count. Stacks are
 * keyed by a hash of their frame ids, checked against the frames themselves
 * on a hit.
 */
/* The interning tables and interned-data fields of the samples' call stacks, built once. */
struct stacks_out {
	struct intern frames, names, files, stacks, bids, maps;
	struct rk_buf fn, mp, mm, fr, cs, bi;
	__u64 *frame_of; /* per tl->frames: its frame iid */
	__u64 *stack_of; /* per sample: its callstack iid, 0: none */
	__u64 *stack_first; /* per callstack (by iid - 1): the first sample that has it */
	size_t nstack_first;
};

static void stacks_out_free(struct stacks_out *so)
{
	intern_free(&so->frames);
	intern_free(&so->names);
	intern_free(&so->files);
	intern_free(&so->stacks);
	intern_free(&so->bids);
	intern_free(&so->maps);
	free(so->fn.p);
	free(so->bi.p);
	free(so->mp.p);
	free(so->mm.p);
	free(so->fr.p);
	free(so->cs.p);
	free(so->frame_of);
	free(so->stack_of);
	free(so->stack_first);
}

/* @f's function name and file path, interned once each. Return: 0, -ENOMEM. */
static int intern_name_and_file(struct stacks_out *so, const struct rk_timeline *tl,
				const struct rk_tl_frame *f)
{
	int made;
	size_t m;

	if (!intern_id(&so->names, f->sym + 1, &made))
		return -ENOMEM;
	if (made) {
		m = begin(&so->fn, ID_FUNCTION_NAMES);
		f_u64(&so->fn, IS_IID, f->sym + 1);
		f_str(&so->fn, IS_STR, rk_tl_str(tl, f->sym));
		end(&so->fn, m);
	}
	if (!intern_id(&so->files, f->dso + 1, &made))
		return -ENOMEM;
	if (made) {
		const char *path = rk_tl_str(tl, f->dso);

		/* The reader joins the path's components with '/' after a '/'. */
		m = begin(&so->mp, ID_MAPPING_PATHS);
		f_u64(&so->mp, IS_IID, f->dso + 1);
		f_str(&so->mp, IS_STR, path[0] == '/' ? path + 1 : path);
		end(&so->mp, m);
	}
	return 0;
}

/* @f's file's build id, once (raw bytes, as Perfetto's own profilers intern them). */
static int intern_build_id(struct stacks_out *so, const struct rk_timeline *tl,
			   const struct rk_tl_frame *f)
{
	const char *hex;
	__u8 raw[64];
	size_t nb = 0, m;
	int made;

	if (f->build_id == ~0u)
		return 0;
	if (!intern_id(&so->bids, (__u64)f->build_id + 1, &made))
		return -ENOMEM;
	if (!made)
		return 0;
	hex = rk_tl_str(tl, f->build_id);
	for (; hex[2 * nb] && hex[2 * nb + 1] && nb < sizeof(raw); nb++) {
		unsigned int byte;

		if (sscanf(hex + 2 * nb, "%2x", &byte) != 1)
			break;
		raw[nb] = (__u8)byte;
	}
	m = begin(&so->bi, ID_BUILD_IDS);
	f_u64(&so->bi, IS_IID, (__u64)f->build_id + 1);
	f_bytes(&so->bi, IS_STR, raw, nb);
	end(&so->bi, m);
	return 0;
}

/* @f's mapping: the file's range where it was mapped, once per (file, start). Return: its iid. */
static __u64 intern_mapping(struct stacks_out *so, const struct rk_tl_frame *f)
{
	int made;
	__u64 iid = intern_id(&so->maps, mix((__u64)f->dso << 40 ^ f->map_start) | 1, &made);
	size_t m;

	if (!iid || !made)
		return iid;
	m = begin(&so->mm, ID_MAPPINGS);
	f_u64(&so->mm, MAP_IID, iid);
	f_u64(&so->mm, MAP_PATH_IDS, f->dso + 1);
	if (f->map_len) {
		f_u64(&so->mm, MAP_START, f->map_start);
		f_u64(&so->mm, MAP_END, f->map_start + f->map_len);
		f_u64(&so->mm, MAP_EXACT_OFFSET, f->map_pgoff);
		f_u64(&so->mm, MAP_START_OFFSET, 0);
	}
	if (f->build_id != ~0u)
		f_u64(&so->mm, MAP_BUILD_ID, (__u64)f->build_id + 1);
	end(&so->mm, m);
	return iid;
}

/* tl->frames[@j] as an interned frame (with its name, file, build id, mapping). Return: 0, -ENOMEM. */
static int intern_frame(struct stacks_out *so, const struct rk_timeline *tl, size_t j)
{
	const struct rk_tl_frame *f = &tl->frames[j];
	__u64 fid, map;
	int made;
	size_t m;

	fid = intern_id(&so->frames, (__u64)(f->sym + 1) << 32 | (f->dso + 1), &made);
	if (!fid)
		return -ENOMEM;
	so->frame_of[j] = fid;
	if (!made)
		return 0;
	if (intern_name_and_file(so, tl, f) || intern_build_id(so, tl, f))
		return -ENOMEM;
	map = intern_mapping(so, f);
	if (!map)
		return -ENOMEM;
	m = begin(&so->fr, ID_FRAMES);
	f_u64(&so->fr, FR_IID, fid);
	f_u64(&so->fr, FR_FUNCTION, f->sym + 1);
	f_u64(&so->fr, FR_MAPPING, map);
	/* The pc in the file: from the mapping's start, plus its offset in the file. */
	f_u64(&so->fr, FR_REL_PC, f->map_len ? f->ip - f->map_start + f->map_pgoff : f->ip);
	end(&so->fr, m);
	return 0;
}

/*
 * Sample @i's frames as one interned callstack (root first). A hash hit is
 * the same stack only if its frames are; a collision gets an id of its own,
 * past every hashed one. Return: 0, -ENOMEM.
 */
static int intern_callstack(struct stacks_out *so, const struct rk_timeline *tl, size_t i)
{
	const struct rk_tl_sample *s = &tl->samples[i];
	__u64 h = 0x9e3779b97f4a7c15ull, id;
	size_t j;
	int made;

	for (j = s->frame0; j < s->frame0 + s->nframes; j++)
		h = mix(h ^ so->frame_of[j]) + j - s->frame0;
	id = intern_id(&so->stacks, h | 1, &made);
	if (!id)
		return -ENOMEM;
	if (!made) {
		const struct rk_tl_sample *t = &tl->samples[so->stack_first[id - 1]];

		if (t->nframes != s->nframes ||
		    memcmp(&so->frame_of[t->frame0], &so->frame_of[s->frame0],
			   s->nframes * sizeof(*so->frame_of)))
			made = 2;
	}
	if (made == 2)
		id = tl->nsamples + 1 + i;
	if (made) {
		size_t m = begin(&so->cs, ID_CALLSTACKS);

		if (made == 1)
			so->stack_first[so->nstack_first++] = i;
		f_u64(&so->cs, CSK_IID, id);
		/* Root first: our frames are leaf first. */
		for (j = s->nframes; j-- > 0;)
			f_u64(&so->cs, CSK_FRAMES, so->frame_of[s->frame0 + j]);
		end(&so->cs, m);
	}
	so->stack_of[i] = id;
	return 0;
}

/* Every sampled call stack interned. Return: 1 if a sample has one, 0 if none, -ENOMEM. */
static int intern_samples(struct stacks_out *so, const struct rk_timeline *tl)
{
	size_t i, j;
	int any = 0;

	so->frame_of = calloc(tl->nframes + 1, sizeof(*so->frame_of));
	so->stack_of = calloc(tl->nsamples + 1, sizeof(*so->stack_of));
	so->stack_first = calloc(tl->nsamples + 1, sizeof(*so->stack_first));
	if (!so->frame_of || !so->stack_of || !so->stack_first)
		return -ENOMEM;
	for (i = 0; i < tl->nsamples; i++) {
		const struct rk_tl_sample *s = &tl->samples[i];

		if (tl->src_is_tp[s->src] || !s->nframes)
			continue;
		any = 1;
		for (j = s->frame0; j < s->frame0 + s->nframes; j++)
			if (intern_frame(so, tl, j))
				return -ENOMEM;
		if (intern_callstack(so, tl, i))
			return -ENOMEM;
	}
	if (so->fn.err || so->bi.err || so->mp.err || so->mm.err || so->fr.err || so->cs.err)
		return -ENOMEM;
	return any;
}

/*
 * Source @k's samples on a sequence of its own: Perfetto takes a sample's
 * counter (its name, the per-CPU track of its count) from its sequence's
 * defaults, and interned data is per sequence, so each gets the whole table.
 */
static void source_samples(struct pf_out *o, const struct rk_timeline *tl,
			   const struct stacks_out *so, const __u64 *count, size_t k)
{
	__u32 seq = SEQ_ID + 1 + (__u32)k;
	size_t d, i;

	pkt_start_on(o, 0, seq, SEQ_INCREMENTAL_STATE_CLEARED);
	timebase_defaults(&o->pkt, tl, k);
	d = begin(&o->pkt, TP_INTERNED_DATA);
	rk_buf_put(&o->pkt, so->fn.p, so->fn.len);
	rk_buf_put(&o->pkt, so->bi.p, so->bi.len);
	rk_buf_put(&o->pkt, so->mp.p, so->mp.len);
	rk_buf_put(&o->pkt, so->mm.p, so->mm.len);
	rk_buf_put(&o->pkt, so->fr.p, so->fr.len);
	rk_buf_put(&o->pkt, so->cs.p, so->cs.len);
	end(&o->pkt, d);
	pkt_flush(o);
	for (i = 0; i < tl->nsamples && !o->err; i++) {
		const struct rk_tl_sample *s = &tl->samples[i];

		if (s->src != k || !so->stack_of[i])
			continue;
		pkt_start_on(o, s->time, seq, SEQ_NEEDS_INCREMENTAL_STATE);
		d = begin(&o->pkt, TP_PERF_SAMPLE);
		f_u64(&o->pkt, PS_CPU, s->cpu);
		f_u64(&o->pkt, PS_PID, s->tgid);
		f_u64(&o->pkt, PS_TID, s->tid);
		f_u64(&o->pkt, PS_CALLSTACK, so->stack_of[i]);
		f_u64(&o->pkt, PS_TIMEBASE_COUNT, count[i]);
		end(&o->pkt, d);
		pkt_flush(o);
		o->st->samples++;
	}
}

static int perf_samples(struct pf_out *o, const struct rk_timeline *tl)
{
	struct stacks_out so;
	__u64 *count = NULL;
	__u8 *has = NULL;
	size_t i, k;
	int err;

	/* Step 1: the frames and call stacks, interned. */
	memset(&so, 0, sizeof(so));
	err = intern_samples(&so, tl);
	if (err <= 0)
		goto out;
	err = 0;
	/* Step 2: each sample's count of its timebase, and which sources have samples. */
	count = timebase_counts(tl, so.stack_of);
	has = calloc(tl->nsrcs + 1, 1);
	if (!count || !has) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < tl->nsamples; i++)
		if (so.stack_of[i])
			has[tl->samples[i].src] = 1;
	/* Step 3: a sequence per source. */
	for (k = 0; k < tl->nsrcs && !o->err; k++)
		if (has[k])
			source_samples(o, tl, &so, count, k);
out:
	free(count);
	free(has);
	stacks_out_free(&so);
	return err;
}

/* The track of the trace's own notes: apart from every process's (odd) and thread's (even). */
#define UUID_NOTES (1ull << 62)

/*
 * What the session did not record, in the trace itself: a track
 * "ringkeeper: incomplete" with one instant at the first event, named with
 * each loss counter and its value (stat's keys), so the UI and
 * trace_processor (its slice table) show it beside the figures it affects.
 */
static void loss_marker(struct pf_out *o, const struct rk_timeline *tl, const struct rk_loss *l)
{
	char name[1024];
	size_t at, td, i;
	__u64 first = ~0ull;
	int k;

	if (!rk_loss_count(l))
		return;
	for (i = 0; i < tl->nthreads; i++)
		if (tl->threads[i].nev && tl->threads[i].ev[0].time < first)
			first = tl->threads[i].ev[0].time;
	if (first == ~0ull)
		return;
	at = (size_t)snprintf(name, sizeof(name), "the session did not record");
	for (k = 0; k < RK_LOSS_NR && at < sizeof(name); k++)
		if (l->v[k])
			at += (size_t)snprintf(name + at, sizeof(name) - at, " %llu %s,",
					       (unsigned long long)l->v[k], rk_loss_key(k));
	if (at < sizeof(name) && name[at - 1] == ',')
		snprintf(name + at - 1, sizeof(name) - at + 1, " (ringkeeper stat names them)");
	pkt_start(o, 0, 0);
	td = begin(&o->pkt, TP_TRACK_DESCRIPTOR);
	f_u64(&o->pkt, TD_UUID, UUID_NOTES);
	f_str(&o->pkt, TD_NAME, "ringkeeper: incomplete");
	end(&o->pkt, td);
	pkt_flush(o);
	pkt_start(o, first, 0);
	td = begin(&o->pkt, TP_TRACK_EVENT);
	f_u64(&o->pkt, TE_TYPE, TE_INSTANT);
	f_u64(&o->pkt, TE_TRACK_UUID, UUID_NOTES);
	f_str(&o->pkt, TE_NAME, name);
	end(&o->pkt, td);
	pkt_flush(o);
}

int rk_perfetto_write(const struct rk_timeline *tl, const char *path, struct rk_perfetto_stats *st)
{
	return rk_perfetto_write_noted(tl, path, NULL, st);
}

int rk_perfetto_write_noted(const struct rk_timeline *tl, const char *path,
			    const struct rk_loss *loss, struct rk_perfetto_stats *st)
{
	char tmp[4096];
	struct plan p = { 0 };
	struct pf_out o = { .st = st };
	struct stat ost;
	__u64 boot_off = 0;
	size_t i;
	int err = 0, fd;

	memset(st, 0, sizeof(*st));
	/* /dev/null, a FIFO, a directory: never replaced by our regular file. */
	if (!lstat(path, &ost) && !S_ISREG(ost.st_mode)) {
		rk_err("%s is not a regular file: not replacing it (the trace is written to a new "
		       "file and renamed into place)",
		       path);
		return -EINVAL;
	}
	for (i = 0; i < tl->nthreads && !err; i++)
		err = plan_thread(&p, &tl->threads[i], i);
	for (i = 0; i < tl->nsamples && !err; i++) {
		const struct rk_tl_sample *s = &tl->samples[i];
		long t;

		if (!tl->src_is_tp[s->src])
			continue;
		t = thread_of(tl, s->tid, s->time);
		if (t >= 0)
			err = plan_add(&p, s->time, (size_t)t, IT_TP, (__u32)i, 0);
	}
	if (err) {
		free(p.v);
		rk_err("out of memory planning %s", path);
		return err;
	}
	if (p.n)
		qsort(p.v, p.n, sizeof(*p.v), cmp_item);
	snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0 || !(o.f = fdopen(fd, "w"))) {
		err = -errno;
		rk_err("cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(p.v);
		return err;
	}
	clock_snapshot(&o, &boot_off);
	descriptors(&o, tl);
	rk_pf_process_tree(&o, tl);
	track_events(&o, tl, &p);
	free(p.v);
	if (!o.err)
		o.err = rk_pf_sched(&o, tl, boot_off);
	if (!o.err)
		o.err = perf_samples(&o, tl);
	if (!o.err)
		loss_marker(&o, tl, loss);
	free(o.pkt.p);
	if (fflush(o.f) && !o.err)
		o.err = -errno;
	if (fclose(o.f) && !o.err)
		o.err = -errno;
	if (!o.err && rename(tmp, path))
		o.err = -errno;
	if (o.err) {
		rk_err("cannot write %s: %s", path, strerror(-o.err));
		unlink(tmp);
	}
	return o.err;
}
