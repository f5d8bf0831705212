// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * export.c - perf.data writer.
 *
 * Layout (tools/perf/Documentation/perf.data-file-format.txt): the file
 * header, one u64 id per attr, the attrs (perf_event_attr + the section of
 * its ids), then the records sorted by time. Every source samples
 * PERF_SAMPLE_IDENTIFIER, so each record's id is rewritten to its attr's one
 * id; the kernel's many per-fd ids do not need to be listed.
 */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "bufile.h"
#include "export.h"
#include "pt.h"
#include "session.h"
#include "symbols.h"
#include "timeline.h"
#include "tracedata.h"
#include "util.h"

#define PERF_MAGIC2 0x32454c4946524550ULL /* "PERFILE2" */
#define EXPORT_ATTR_SIZE PERF_ATTR_SIZE_VER7 /* what perf 6.1 knows */
/* The sources, and sched:sched_switch, sched_waking, sched_wakeup_new made from sched's records. */
#define MAX_ATTRS (RK_MAX_SRC + 3)
/* perf's records for AUX area traces (tools/lib/perf/include/perf/event.h). */
#define PERF_RECORD_AUXTRACE_INFO_ 70
#define PERF_RECORD_AUXTRACE_ 71
#define PERF_AUXTRACE_INTEL_PT_ 1
/* tools/perf/util/intel-pt.h: the priv[] of intel_pt's auxtrace_info. */
enum {
	PT_PMU_TYPE,
	PT_TIME_SHIFT,
	PT_TIME_MULT,
	PT_TIME_ZERO,
	PT_CAP_USER_TIME_ZERO,
	PT_TSC_BIT,
	PT_NORETCOMP_BIT,
	PT_HAVE_SCHED_SWITCH,
	PT_SNAPSHOT_MODE,
	PT_PER_CPU_MMAPS,
	PT_MTC_BIT,
	PT_MTC_FREQ_BITS,
	PT_TSC_CTC_N,
	PT_TSC_CTC_D,
	PT_CYC_BIT,
	PT_MAX_NONTURBO_RATIO,
	PT_FILTER_STR_LEN,
	PT_PRIV_MAX,
};

struct file_section {
	__u64 offset, size;
};

struct file_header {
	__u64 magic;
	__u64 size;
	__u64 attr_size;
	struct file_section attrs, data, event_types;
	__u64 adds_features[4];
};

struct rec_ref {
	__u64 time;
	__u64 seq;
	__u64 off;
	__u32 len;
	__u32 attr;
};

/* A switch or wakeup of a sched file, for the sched tracepoint samples made from them. */
struct swev {
	struct rk_cpu_ev c; /* first: sorted and paired as a CPU's stream (c.tid the thread's) */
	__u32 pid; /* the thread's process */
	__u32 arg; /* out: the state word; wake: the waker's tid */
	__u32 arg2; /* wake: the waker's pid */
	__u32 target_cpu, flags; /* wake */
	char comm[RK_COMM_LEN];
};

struct exp {
	const struct rk_export_opts *o;
	struct rk_export_stats *st;
	__u8 attrs[MAX_ATTRS][EXPORT_ATTR_SIZE];
	char names[MAX_ATTRS][64];
	unsigned int nattr;
	int tracking; /* attr index of the source with mmap/comm/task, -1 */
	__u8 *buf;
	size_t buf_len, buf_cap;
	struct rec_ref *refs;
	size_t nrefs, caprefs;
	unsigned int cur_attr;
	__u64 cur_sample_type;
	__u32 pids[1024]; /* processes of the exported threads: their sideband goes too */
	unsigned int npids;
	int auxtrace_info; /* written (one intel_pt source per session) */
	void *tdata; /* tracing data (HEADER_TRACING_DATA), if a source is a tracepoint */
	size_t tdata_len;
	/* the files the sideband maps, for their build ids (HEADER_BUILD_ID) */
	char **dsos;
	size_t ndsos;
	__u32 aux_idx; /* AUXTRACE buffers so far: perf's queue index, one per thread */
	char cpuid[64]; /* HEADER_CPUID: from a PT descriptor, else this machine's */
	/* the sched files' switches and wakeups, and the file being read */
	struct swev *sw;
	size_t nsw, capsw;
	const struct rk_thread_ident *cur_id;
	/* reading a sched file; it had a COMM record, and the first was not an exec's */
	int cur_sched, cur_comm, cur_named;
	/*
	 * record --offcpu: the offcpu-time attr (-1: none yet), and the
	 * current sched file's switch-out with a stack, until its switch-in
	 */
	int offcpu_attr;
	__u64 off_time;
	int off_have;
	__u64 off_chain[2 + 2 * RK_STACK_READ_MAX];
	__u64 off_nr;
	__u32 off_kernel;
	__u8 off_rec[64 + 8 * (2 + 2 * RK_STACK_READ_MAX)] __attribute__((aligned(8)));
};

static __u64 attr_sample_type(const __u8 *attr)
{
	return ((const struct rk_perf_event_attr *)attr)->sample_type;
}

/*
 * Append @len bytes (a record, @h, and what follows it) to the output at
 * @time; with @set_id, the record's IDENTIFIER becomes its attr's one id.
 */
static int push(struct exp *e, const struct perf_event_header *h, const void *tail, size_t tail_len,
		__u64 time, int set_id)
{
	size_t len = h->size + tail_len;
	struct rec_ref *ref;
	__u64 id = e->cur_attr + 1;

	if (len > UINT32_MAX)
		return -E2BIG;
	if (e->buf_len + len > e->buf_cap) {
		size_t cap = e->buf_cap ? e->buf_cap * 2 : 1 << 20;
		__u8 *n;

		while (cap < e->buf_len + len)
			cap *= 2;
		n = realloc(e->buf, cap);
		if (!n)
			return -ENOMEM;
		e->buf = n;
		e->buf_cap = cap;
	}
	if (e->nrefs == e->caprefs) {
		size_t cap = e->caprefs ? e->caprefs * 2 : 4096;
		struct rec_ref *n = realloc(e->refs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		e->refs = n;
		e->caprefs = cap;
	}
	memcpy(e->buf + e->buf_len, h, h->size);
	if (tail_len)
		memcpy(e->buf + e->buf_len + h->size, tail, tail_len);
	/* One id per attr: samples start with IDENTIFIER, other records end with it. */
	if (set_id && e->cur_sample_type & PERF_SAMPLE_IDENTIFIER) {
		if (h->type == PERF_RECORD_SAMPLE)
			memcpy(e->buf + e->buf_len + sizeof(*h), &id, 8);
		else
			memcpy(e->buf + e->buf_len + h->size - 8, &id, 8);
	}
	ref = &e->refs[e->nrefs];
	ref->time = time;
	ref->seq = e->nrefs;
	ref->off = e->buf_len;
	ref->len = (__u32)len;
	ref->attr = e->cur_attr;
	e->nrefs++;
	e->buf_len += len;
	e->st->records++;
	e->st->samples += h->type == PERF_RECORD_SAMPLE;
	return 0;
}

/* A file an MMAP2 record names, once. */
static void note_dso(struct exp *e, const struct perf_event_header *h)
{
	const char *name = rk_mmap2_name(h);
	size_t i;
	char **n;

	if (!name || name[0] != '/' || e->ndsos >= 4096)
		return;
	for (i = 0; i < e->ndsos; i++)
		if (!strcmp(e->dsos[i], name))
			return;
	n = realloc(e->dsos, (e->ndsos + 1) * sizeof(*n));
	if (!n)
		return;
	e->dsos = n;
	e->dsos[e->ndsos] = strdup(name);
	if (e->dsos[e->ndsos])
		e->ndsos++;
}

/* A sched file's switch or wakeup, kept for the tracepoint samples (note_sw's caller checked the window). */
static int note_sw(struct exp *e, const struct perf_event_header *h, __u64 time)
{
	struct rk_wakeup_record wr;
	struct swev *v;
	__u32 cpu, res;

	if (h->type != PERF_RECORD_SWITCH && (h->type != RK_RECORD_WAKEUP || h->size < sizeof(wr)))
		return 0;
	if (rk_record_cpu(e->cur_sample_type, h, &cpu, &res))
		return 0;
	if (e->nsw == e->capsw) {
		size_t c = e->capsw ? e->capsw * 2 : 4096;
		struct swev *n = realloc(e->sw, c * sizeof(*n));

		if (!n)
			return -ENOMEM;
		e->sw = n;
		e->capsw = c;
	}
	v = &e->sw[e->nsw++];
	memset(v, 0, sizeof(*v));
	v->c.time = time;
	v->c.cpu = cpu;
	v->c.tid = e->cur_id->tid;
	v->pid = e->cur_id->tgid;
	memcpy(v->comm, e->cur_id->comm, RK_COMM_LEN);
	v->comm[RK_COMM_LEN - 1] = '\0';
	if (h->type == PERF_RECORD_SWITCH) {
		v->c.kind = h->misc & PERF_RECORD_MISC_SWITCH_OUT ? RK_CPU_OUT : RK_CPU_IN;
		v->arg = res;
	} else {
		memcpy(&wr, h, sizeof(wr));
		v->c.kind = RK_CPU_WAKE;
		v->arg = wr.waker_tid;
		v->arg2 = wr.waker_pid;
		v->target_cpu = wr.target_cpu;
		v->flags = wr.flags;
	}
	return 0;
}

/* The offcpu-time event, as perf record --off-cpu names and lays it out (once). Return: its index. */
static int offcpu_attr(struct exp *e)
{
	struct rk_perf_event_attr *a;

	if (e->offcpu_attr >= 0)
		return e->offcpu_attr;
	if (e->nattr == MAX_ATTRS)
		return -E2BIG;
	a = (struct rk_perf_event_attr *)e->attrs[e->nattr];
	memset(a, 0, EXPORT_ATTR_SIZE);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_BPF_OUTPUT;
	a->size = EXPORT_ATTR_SIZE;
	a->freq = 1;
	a->sample_freq = 1;
	/* Within perf's OFFCPU_SAMPLE_TYPES; PERIOD is the time off CPU in ns. */
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
			 PERF_SAMPLE_CALLCHAIN;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	snprintf(e->names[e->nattr], sizeof(e->names[0]), "offcpu-time");
	e->offcpu_attr = (int)e->nattr++;
	return e->offcpu_attr;
}

/*
 * A sched file's stretch off CPU with a stack (a switch-out into a sleep,
 * its RK_RECORD_STACK, the next switch-in) as one offcpu-time sample, as
 * perf's --off-cpu writes its direct ones: at the switch-in, PERIOD the ns
 * off CPU, the call chain the stack's (kernel frames too, where the file
 * has them), IP its leaf.
 */
static int offcpu_sample(struct exp *e, __u64 t, __u32 cpu)
{
	struct {
		struct perf_event_header h;
		__u64 id, ip;
		__u32 pid, tid;
		__u64 time;
		__u32 cpu, res;
		__u64 period, nr;
	} s;
	unsigned int attr = e->cur_attr;
	__u64 st = e->cur_sample_type, i;
	int idx = offcpu_attr(e), err;

	if (idx < 0)
		return idx;
	memset(&s, 0, sizeof(s));
	s.h.type = PERF_RECORD_SAMPLE;
	s.h.misc = e->off_kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER;
	s.h.size = (__u16)(sizeof(s) + e->off_nr * 8);
	for (i = 0; i < e->off_nr && !s.ip; i++)
		if (e->off_chain[i] < (__u64)PERF_CONTEXT_MAX)
			s.ip = e->off_chain[i];
	s.pid = e->cur_id->tgid;
	s.tid = e->cur_id->tid;
	s.time = t;
	s.cpu = cpu;
	s.period = t - e->off_time;
	s.nr = e->off_nr;
	/* The chain follows the fixed part: one record in one buffer. */
	memcpy(e->off_rec, &s, sizeof(s));
	memcpy(e->off_rec + sizeof(s), e->off_chain, e->off_nr * 8);
	e->cur_attr = (unsigned int)idx;
	e->cur_sample_type = attr_sample_type(e->attrs[idx]);
	err = push(e, (const struct perf_event_header *)e->off_rec, NULL, 0, t, 1);
	e->cur_attr = attr;
	e->cur_sample_type = st;
	e->st->offcpu_samples += !err;
	return err;
}

/* A sched file's record, for the offcpu-time samples: a switch-out's stack kept until the switch-in. */
static int offcpu_note(struct exp *e, const struct perf_event_header *h, __u64 t)
{
	static struct rk_stack_rec r;
	__u32 cpu = 0, res, i;

	if (h->type == RK_RECORD_STACK) {
		if (rk_stack_parse(h, rk_sample_id_size(e->cur_sample_type), &r) ||
		    r.of != RK_STACK_OF_SWITCH || e->off_time != t)
			return 0;
		e->off_nr = 0;
		if (r.nr_kernel)
			e->off_chain[e->off_nr++] = (__u64)PERF_CONTEXT_KERNEL;
		for (i = 0; i < r.nr_kernel; i++)
			e->off_chain[e->off_nr++] = r.kip[i];
		if (r.nr_user)
			e->off_chain[e->off_nr++] = (__u64)PERF_CONTEXT_USER;
		for (i = 0; i < r.nr_user; i++)
			e->off_chain[e->off_nr++] = r.uip[i];
		e->off_kernel = r.nr_kernel;
		e->off_have = 1;
		return 0;
	}
	if (h->type != PERF_RECORD_SWITCH)
		return 0;
	if (h->misc & PERF_RECORD_MISC_SWITCH_OUT) {
		e->off_time = t;
		e->off_have = 0;
		return 0;
	}
	rk_record_cpu(e->cur_sample_type, h, &cpu, &res);
	if (!e->off_have)
		return 0;
	e->off_have = 0;
	return offcpu_sample(e, t, cpu);
}

static int on_record(const struct perf_event_header *h, void *ctx)
{
	struct exp *e = ctx;
	__u64 t = rk_record_time(e->cur_sample_type, h);

	if (h->type == PERF_RECORD_MMAP2)
		note_dso(e, h);

	if (h->type == RK_RECORD_CRASH) {
		/* perf refuses a type it does not know: the crash is in show and stat. */
		e->st->crashes++;
		return 0;
	}
	if (h->type == RK_RECORD_TRIGGER) {
		/* Likewise ("failed to process type: 21070"): the trigger is in show. */
		e->st->triggers++;
		return 0;
	}
	if (h->type >= PERF_RECORD_MAX && h->type != RK_RECORD_STACK &&
	    h->type != RK_RECORD_WAKEUP) {
		/* A type of ours this export does not know (a newer recorder's): perf would stop. */
		e->st->unknown++;
		return 0;
	}
	if (e->o->windowed &&
	    (h->type == PERF_RECORD_SAMPLE || h->type == PERF_RECORD_SWITCH ||
	     h->type == RK_RECORD_WAKEUP) &&
	    (t < e->o->lo || t > e->o->hi)) {
		e->st->outside++;
		return 0;
	}
	if (h->type == PERF_RECORD_COMM) {
		if (!e->cur_comm && !(h->misc & PERF_RECORD_MISC_COMM_EXEC))
			e->cur_named = 1;
		e->cur_comm = 1;
	}
	if (e->cur_sched) {
		int err = note_sw(e, h, t);

		if (!err)
			err = offcpu_note(e, h, t);
		if (err)
			return err;
	}
	/* perf knows no record of ours: the stacks became offcpu-time samples (offcpu_note). */
	if (h->type == RK_RECORD_STACK)
		return 0;
	/* perf has no record for a wakeup: it becomes a sched_waking sample (sched_samples). */
	if (h->type == RK_RECORD_WAKEUP)
		return 0;
	return push(e, h, NULL, 0, t, 1);
}

/*
 * An intel_pt file's AUX area: perf's AUXTRACE_INFO (once: how to decode,
 * from the file's descriptor) and one AUXTRACE record carrying the bytes
 * [aux_tail, aux_head) for the thread, at time 0 so they precede the
 * records that refer to them. perf decodes it per thread (per_cpu_mmaps 0).
 */
static int add_aux(struct exp *e, const char *path, const struct rk_bufile *bf)
{
	struct rk_pt_desc d;
	const char *why;
	struct pt_config cfg;
	__u64 aux_off;
	__u8 *aux;
	ssize_t n;
	int err;

	if (rk_pt_config(bf->pmu->desc, bf->pmu->info.pmu_descsz, bf->pmu->attr.config, &cfg,
			 &why)) {
		rk_warn("export: %s: its AUX area is left out: %s", path, why);
		return 0;
	}
	memcpy(&d, bf->pmu->desc, sizeof(d));
	/* The recording machine's CPU, as perf's HEADER_CPUID says it (its PT decoder reads it). */
	snprintf(e->cpuid, sizeof(e->cpuid), "GenuineIntel,%u,%u,%u", d.cpu_family, d.cpu_model,
		 d.cpu_stepping);
	if (!e->auxtrace_info) {
		struct {
			struct perf_event_header h;
			__u32 type, reserved;
			__u64 priv[PT_PRIV_MAX];
		} info = { 0 };

		info.h.type = PERF_RECORD_AUXTRACE_INFO_;
		info.h.size = sizeof(info);
		info.type = PERF_AUXTRACE_INTEL_PT_;
		info.priv[PT_PMU_TYPE] = bf->pmu->attr.type;
		info.priv[PT_TIME_SHIFT] = d.time_shift;
		info.priv[PT_TIME_MULT] = d.time_mult;
		info.priv[PT_TIME_ZERO] = d.time_zero;
		info.priv[PT_CAP_USER_TIME_ZERO] = d.time_mult != 0;
		info.priv[PT_TSC_BIT] = rk_pt_field_mask(&d, "tsc");
		info.priv[PT_NORETCOMP_BIT] = rk_pt_field_mask(&d, "noretcomp");
		info.priv[PT_PER_CPU_MMAPS] = 0; /* a buffer per thread */
		info.priv[PT_MTC_BIT] = rk_pt_field_mask(&d, "mtc");
		info.priv[PT_MTC_FREQ_BITS] = rk_pt_field_mask(&d, "mtc_period");
		info.priv[PT_TSC_CTC_N] = d.cpuid_0x15_ebx;
		info.priv[PT_TSC_CTC_D] = d.cpuid_0x15_eax;
		info.priv[PT_CYC_BIT] = rk_pt_field_mask(&d, "cyc");
		info.priv[PT_MAX_NONTURBO_RATIO] = d.max_nonturbo_ratio;
		err = push(e, &info.h, NULL, 0, 0, 0);
		if (err)
			return err;
		e->auxtrace_info = 1;
	}
	aux = malloc(bf->aux_size + 8);
	if (!aux)
		return -ENOMEM;
	n = rk_bufile__read_aux(bf, aux, bf->aux_size, &aux_off);
	if (n > 0) {
		struct {
			struct perf_event_header h;
			__u64 size, offset, reference;
			__u32 idx, tid, cpu, reserved;
		} at = { 0 };
		size_t pad = (8 - (size_t)n % 8) % 8;

		memset(aux + n, 0, pad);
		at.h.type = PERF_RECORD_AUXTRACE_;
		at.h.size = sizeof(at); /* the data follows, size bytes */
		at.size = (__u64)n + pad;
		at.offset = aux_off;
		at.reference = bf->ident->start_ns;
		at.idx = e->aux_idx++;
		at.tid = bf->ident->tid;
		at.cpu = (__u32)-1;
		err = push(e, &at.h, aux, (size_t)n + pad, 0, 0);
		if (!err)
			e->st->aux_bytes += (__u64)n;
	} else {
		err = n < 0 ? (int)n : 0;
	}
	free(aux);
	return err;
}

/*
 * A COMM at time 0 for a sched file's thread (its name when recorded),
 * with the sched attr's sample_id (TID, TIME, CPU, IDENTIFIER: only then).
 */
static int synth_comm(struct exp *e, const struct rk_thread_ident *id)
{
	struct {
		struct perf_event_header h;
		__u32 pid, tid;
		char comm[RK_COMM_LEN];
		__u32 spid, stid;
		__u64 time;
		__u32 cpu, res;
		__u64 ident;
	} c;

	if (e->cur_sample_type !=
	    (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER))
		return 0;
	memset(&c, 0, sizeof(c));
	c.h.type = PERF_RECORD_COMM;
	c.h.size = sizeof(c);
	c.pid = c.spid = id->tgid;
	c.tid = c.stid = id->tid;
	memcpy(c.comm, id->comm, RK_COMM_LEN);
	c.comm[RK_COMM_LEN - 1] = '\0';
	return push(e, &c.h, NULL, 0, 0, 1);
}

/* The attr index of a source, registering it from its file's pmu_info. */
static int attr_of(struct exp *e, const char *name, const struct rk_bufile *bf)
{
	const struct rk_perf_event_attr *a = &bf->pmu->attr;
	unsigned int i;

	for (i = 0; i < e->nattr; i++)
		if (!strcmp(e->names[i], name))
			return (int)i;
	if (e->nattr == MAX_ATTRS)
		return -E2BIG;
	if (a->config3 || !(a->sample_type & PERF_SAMPLE_IDENTIFIER)) {
		rk_err("export: source %s has an attr perf.data cannot carry here", name);
		return -EINVAL;
	}
	memset(e->attrs[i], 0, EXPORT_ATTR_SIZE);
	memcpy(e->attrs[i], a, a->size < EXPORT_ATTR_SIZE ? a->size : EXPORT_ATTR_SIZE);
	((struct rk_perf_event_attr *)e->attrs[i])->size = EXPORT_ATTR_SIZE;
	snprintf(e->names[i], sizeof(e->names[i]), "%s", name);
	if (a->mmap2 || a->comm || a->task)
		if (e->tracking < 0 && strcmp(name, RK_SCHED_DIR))
			e->tracking = (int)i;
	e->nattr++;
	return (int)i;
}

static int wanted(const struct exp *e, const struct rk_thread_ident *id)
{
	if (e->o->tid && id->tid != (__u32)e->o->tid)
		return 0;
	if (e->o->pid && id->tgid != (__u32)e->o->pid)
		return 0;
	return 1;
}

static int add_file(struct exp *e, const char *src, const char *path, int sideband)
{
	const char *msg = NULL;
	struct rk_bufile *bf = rk_bufile__open(path, &msg);
	int idx, err;

	if (!bf) {
		rk_warn("export: skipping %s: %s", path,
			errno == EBADMSG && msg ? msg : strerror(errno));
		e->st->skipped++;
		return 0;
	}
	if (sideband) {
		unsigned int i;

		for (i = 0; i < e->npids && e->pids[i] != bf->ident->tgid; i++)
			;
		if (i == e->npids) {
			rk_bufile__free(bf);
			return 0;
		}
		/* Sideband records are the tracking source's. */
		idx = e->tracking;
	} else {
		unsigned int i;

		if (!wanted(e, bf->ident)) {
			rk_bufile__free(bf);
			return 0;
		}
		idx = attr_of(e, src, bf);
		if (idx < 0) {
			rk_bufile__free(bf);
			return idx;
		}
		for (i = 0; i < e->npids && e->pids[i] != bf->ident->tgid; i++)
			;
		if (i == e->npids && e->npids < sizeof(e->pids) / sizeof(e->pids[0]))
			e->pids[e->npids++] = bf->ident->tgid;
	}
	e->cur_attr = (unsigned int)idx;
	e->cur_sample_type = attr_sample_type(e->attrs[idx]);
	e->cur_id = bf->ident;
	e->cur_sched = !sideband && !strcmp(src, RK_SCHED_DIR);
	e->cur_comm = 0;
	e->cur_named = 0;
	e->off_have = 0;
	if (!sideband && bf->aux_size) {
		err = add_aux(e, path, bf);
		if (err) {
			rk_bufile__free(bf);
			return err;
		}
	}
	err = rk_bufile__for_each(bf, on_record, e);
	if (err == -EBADMSG) {
		rk_warn("export: %s: records past a corrupt one are left out", path);
		err = 0;
	}
	/*
	 * A thread traced from before (-p, -a): no COMM names it; perf record
	 * would synthesize one. So for one whose first COMM is its exec's:
	 * perf sched timehist (6.1) named no thread of a process that exec'd
	 * after it began (":12021[12021]", each of its threads too) unless a
	 * COMM came before (perf record synthesizes its child's at its start).
	 * The name before the exec is not recorded: the thread's own.
	 */
	if (!err && e->cur_sched && !e->cur_named)
		err = synth_comm(e, bf->ident);
	if (!sideband && !strcmp(src, RK_SCHED_DIR))
		e->st->threads++;
	rk_bufile__free(bf);
	return err;
}

/*
 * sched's switches and wakeups as the tracepoint samples perf's tools read
 * (perf script, perf sched timehist / latency / map): sched:sched_switch per
 * CPU (an out and an in at the same time on a CPU are one switch between
 * two traced threads; otherwise the other side is the CPU's idle task, as
 * the traced threads are all there is), sched:sched_waking and
 * sched:sched_wakeup_new for the wakeups. Laid out by this machine's
 * formats (tracefs), which go into the tracing data with them.
 */

#define TP_SAMPLE_TYPE                                                                  \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW)
#define TP_RAW_MAX 256

/* Field @name of @f set to @v (its size, little endian), or the string @s; no such field: nothing. */
static void tp_set(const struct rk_tp_format *f, __u8 *raw, const char *name, __u64 v,
		   const char *s)
{
	int i;

	for (i = 0; i < f->nfields; i++) {
		const struct rk_tp_field *fl = &f->f[i];

		if (strcmp(fl->name, name) || fl->offset + fl->size > TP_RAW_MAX || fl->data_loc)
			continue;
		if (s)
			strncpy((char *)raw + fl->offset, s, fl->size ? fl->size - 1 : 0);
		else if (fl->size <= 8)
			memcpy(raw + fl->offset, &v, fl->size); /* little endian: the low bytes */
		return;
	}
}

static __u32 tp_size(const struct rk_tp_format *f)
{
	__u32 n = 0;
	int i;

	for (i = 0; i < f->nfields; i++)
		if (f->f[i].offset + f->f[i].size > n)
			n = f->f[i].offset + f->f[i].size;
	return n <= TP_RAW_MAX ? n : 0;
}

/* A tracepoint attr for @f, named @name. Return: its index, or -errno. */
static int tp_attr(struct exp *e, const char *name, const struct rk_tp_format *f)
{
	struct rk_perf_event_attr *a;
	unsigned int i = e->nattr;

	if (i == MAX_ATTRS)
		return -E2BIG;
	memset(e->attrs[i], 0, EXPORT_ATTR_SIZE);
	a = (struct rk_perf_event_attr *)e->attrs[i];
	a->type = PERF_TYPE_TRACEPOINT;
	a->size = EXPORT_ATTR_SIZE;
	a->config = f->id;
	a->sample_period = 1;
	a->sample_type = TP_SAMPLE_TYPE;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	snprintf(e->names[i], sizeof(e->names[i]), "%s", name);
	e->nattr++;
	return (int)i;
}

/*
 * The common fields every tracepoint starts with (the format parser keeps
 * only the event's own): common_type (u16) at 0, common_flags (u8, the
 * kernel's TRACE_FLAG_*: perf script -L prints them) at 2, common_pid
 * (s32) at 4.
 */
static void tp_common(__u8 *raw, __u64 id, __u8 flags, __u32 pid)
{
	__u16 type = (__u16)id;

	memcpy(raw, &type, 2);
	raw[2] = flags;
	memcpy(raw + 4, &pid, 4);
}

/* One sample of attr @idx: pid/tid, @time, @cpu, the raw bytes. */
static int tp_sample(struct exp *e, int idx, __u32 pid, __u32 tid, __u64 time, __u32 cpu,
		     const __u8 *raw, __u32 raw_len)
{
	struct {
		struct perf_event_header h;
		__u64 id, ip;
		__u32 pid, tid;
		__u64 time;
		__u32 cpu, res;
		__u64 period;
		__u32 raw_size;
		__u8 raw[TP_RAW_MAX + 8];
	} s;
	/* The kernel pads the raw data so the record stays 8-byte aligned. */
	__u32 padded = (__u32)(((raw_len + 4 + 7) & ~7u) - 4);

	memset(&s, 0, sizeof(s));
	s.h.type = PERF_RECORD_SAMPLE;
	s.h.misc = PERF_RECORD_MISC_KERNEL; /* a tracepoint fires in the kernel */
	s.h.size = (__u16)(offsetof(__typeof__(s), raw) + padded);
	s.pid = pid;
	s.tid = tid;
	s.time = time;
	s.cpu = cpu;
	s.period = 1;
	s.raw_size = padded;
	memcpy(s.raw, raw, raw_len);
	e->cur_attr = (unsigned int)idx;
	e->cur_sample_type = TP_SAMPLE_TYPE;
	return push(e, &s.h, NULL, 0, time, 1);
}

static void sw_side(const struct rk_tp_format *f, __u8 *raw, const char *which,
		    const struct swev *v, __u32 cpu)
{
	char name[32], idle[32];

	snprintf(idle, sizeof(idle), "swapper/%u", cpu);
	snprintf(name, sizeof(name), "%s_comm", which);
	tp_set(f, raw, name, 0, v ? v->comm : idle);
	snprintf(name, sizeof(name), "%s_pid", which);
	tp_set(f, raw, name, v ? v->c.tid : 0, NULL);
	snprintf(name, sizeof(name), "%s_prio", which);
	tp_set(f, raw, name, 120, NULL);
}

static int sched_samples(struct exp *e)
{
	struct rk_tp_format *fs, *fw = NULL, *fn = NULL;
	int iss, iw = -1, in = -1, err = 0;
	__u32 ss, sw_len = 0, sn_len = 0;
	__u8 raw[TP_RAW_MAX];
	size_t i, nwake = 0;

	if (!e->nsw)
		return 0;
	for (i = 0; i < e->nsw; i++)
		nwake += e->sw[i].c.kind == RK_CPU_WAKE;
	fs = calloc(3, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	if (rk_tp_format_local("sched:sched_switch", fs) || !(ss = tp_size(fs))) {
		e->st->wakeups += nwake;
		rk_warn("export: no sched:sched_switch format on this machine (tracefs): the "
			"switches are PERF_RECORD_SWITCH only (perf script --show-switch-events), "
			"perf sched cannot read them");
		free(fs);
		return 0;
	}
	iss = tp_attr(e, "sched:sched_switch", fs);
	if (nwake && iss >= 0) {
		fw = fs + 1;
		fn = fs + 2;
		if (!rk_tp_format_local("sched:sched_waking", fw) && (sw_len = tp_size(fw)))
			iw = tp_attr(e, "sched:sched_waking", fw);
		if (!rk_tp_format_local("sched:sched_wakeup_new", fn) && (sn_len = tp_size(fn)))
			in = tp_attr(e, "sched:sched_wakeup_new", fn);
	}
	if (iss < 0 || iw < -1 || in < -1) {
		free(fs);
		rk_err("export: too many sources for the sched tracepoints");
		return -E2BIG;
	}
	qsort(e->sw, e->nsw, sizeof(*e->sw), rk_cpu_ev_cmp);
	for (i = 0; i < e->nsw && !err; i++) {
		const struct swev *v = &e->sw[i], *nx = i + 1 < e->nsw ? &e->sw[i + 1] : NULL;

		memset(raw, 0, sizeof(raw));
		if (v->c.kind == RK_CPU_WAKE) {
			int neu = v->flags & RK_WAKEUP_NEW && in >= 0;
			const struct rk_tp_format *f = neu ? fn : fw;

			if ((neu ? in : iw) < 0) {
				e->st->wakeups++; /* no format for it here: said */
				continue;
			}
			/* From an interrupt: TRACE_FLAG_HARDIRQ and so on, as the kernel's event. */
			tp_common(raw, f->id, (__u8)(v->flags & RK_WAKEUP_IRQ_MASK), v->arg);
			tp_set(f, raw, "comm", 0, v->comm);
			tp_set(f, raw, "pid", v->c.tid, NULL);
			tp_set(f, raw, "prio", 120, NULL);
			tp_set(f, raw, "success", 1, NULL);
			tp_set(f, raw, "target_cpu", v->target_cpu, NULL);
			err = tp_sample(e, neu ? in : iw, v->arg2, v->arg, v->c.time, v->c.cpu, raw,
					neu ? sn_len : sw_len);
			continue;
		}
		tp_common(raw, fs->id, 0, v->c.kind == RK_CPU_OUT ? v->c.tid : 0);
		if (v->c.kind == RK_CPU_OUT) {
			int pair = rk_cpu_ev_pairs(&v->c, nx ? &nx->c : NULL);

			sw_side(fs, raw, "prev", v, v->c.cpu);
			tp_set(fs, raw, "prev_state", rk_offcpu_report(v->arg), NULL);
			sw_side(fs, raw, "next", pair ? nx : NULL, v->c.cpu);
			err = tp_sample(e, iss, v->pid, v->c.tid, v->c.time, v->c.cpu, raw, ss);
			i += pair;
		} else {
			sw_side(fs, raw, "prev", NULL, v->c.cpu);
			sw_side(fs, raw, "next", v, v->c.cpu);
			err = tp_sample(e, iss, 0, 0, v->c.time, v->c.cpu, raw, ss);
		}
	}
	free(fs);
	return err;
}

static int cmp_ref(const void *a, const void *b)
{
	const struct rec_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* perf's feature bits (tools/perf/util/header.h). */
#define HEADER_TRACING_DATA 1
#define HEADER_BUILD_ID 2
#define HEADER_HOSTNAME 3
#define HEADER_OSRELEASE 4
#define HEADER_ARCH 6
#define HEADER_NRCPUS 7
#define HEADER_CPUID 9
#define HEADER_CMDLINE 11
#define HEADER_AUXTRACE 18
#define HEADER_EVENT_DESC 12
#define HEADER_CLOCKID 23
#define NFEAT 24
#define NAME_ALIGN 64
#define PERF_RECORD_MISC_BUILD_ID_SIZE_ (1 << 15)

/* perf's do_write_string(): u32 length (NAME_ALIGN padded), the string, zeros. */
static void fput_str(struct rk_buf *f, const char *s)
{
	static const __u8 zeros[NAME_ALIGN];
	__u32 len = (__u32)((strlen(s) + 1 + NAME_ALIGN - 1) & ~(size_t)(NAME_ALIGN - 1));

	rk_buf_put(f, &len, 4);
	rk_buf_put(f, s, strlen(s) + 1);
	rk_buf_put(f, zeros, len - strlen(s) - 1);
}

/* A build_id_event as perf's write_buildid() lays it out. */
static void fput_build_id(struct rk_buf *f, const char *hex, const char *name, __u16 misc)
{
	static const __u8 zeros[NAME_ALIGN];
	struct {
		struct perf_event_header h;
		__s32 pid;
		__u8 data[20];
		__u8 size, r1;
		__u16 r2;
	} __attribute__((packed)) b = { 0 };
	size_t len = (strlen(name) + 1 + NAME_ALIGN - 1) & ~(size_t)(NAME_ALIGN - 1), i;

	for (i = 0; i < 20 && hex[2 * i] && hex[2 * i + 1]; i++) {
		unsigned int v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return;
		b.data[i] = (__u8)v;
	}
	b.size = (__u8)i;
	b.pid = -1; /* the host */
	b.h.type = 0;
	b.h.misc = misc | PERF_RECORD_MISC_BUILD_ID_SIZE_;
	b.h.size = (__u16)(sizeof(b) + len);
	rk_buf_put(f, &b, sizeof(b));
	rk_buf_put(f, name, strlen(name) + 1);
	rk_buf_put(f, zeros, len - strlen(name) - 1);
}

/* The kernel's build id, from its notes (/sys/kernel/notes). Return: 0 or -1. */
static int kernel_build_id(char *hex, size_t len)
{
	__u8 buf[4096];
	size_t off = 0, n, k;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	ssize_t r = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

	if (fd >= 0)
		close(fd);
	n = r > 0 ? (size_t)r : 0;
	while (off + 12 <= n) {
		__u32 namesz, descsz, type;

		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		off += 12;
		if (namesz > n || descsz > n)
			return -1;
		if (type == 3 && namesz == 4 && off + 4 + descsz <= n &&
		    !memcmp(buf + off, "GNU", 4) && descsz * 2 + 1 <= len && descsz <= 20) {
			for (k = 0; k < descsz; k++)
				snprintf(hex + 2 * k, 3, "%02x", buf[off + 4 + k]);
			return 0;
		}
		off += ((namesz + 3) & ~3u) + ((descsz + 3) & ~3u);
	}
	return -1;
}

/* This machine's CPU as perf's HEADER_CPUID says it on x86: vendor,family,model,stepping. */
static void this_cpuid(char *out, size_t len)
{
	char line[256], vendor[64] = "";
	unsigned int family = 0, model = 0, stepping = 0, got = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");

	out[0] = '\0';
	while (f && got != 15 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "vendor_id : %63s", vendor) == 1)
			got |= 1;
		else if (sscanf(line, "cpu family : %u", &family) == 1)
			got |= 2;
		else if (sscanf(line, "model : %u", &model) == 1)
			got |= 4;
		else if (sscanf(line, "stepping : %u", &stepping) == 1)
			got |= 8;
	}
	if (f)
		fclose(f);
	if (got == 15)
		snprintf(out, len, "%s,%u,%u,%u", vendor, family, model, stepping);
}

/*
 * The header features perf record writes that a reader of ours can use:
 * the machine (host, release, arch, CPUs, CPU id), the command, the clock,
 * the events' names, and the build id of each mapped file (read from the
 * files now) and the kernel.
 */
static void features(struct exp *e, struct rk_buf *f)
{
	struct rk_session_stat st;
	struct timespec res = { 0, 1 };
	struct utsname u;
	char hex[64], cmd[600];
	__u32 nr[2];
	__u64 ns;
	size_t i;

	if (!uname(&u)) {
		fput_str(&f[HEADER_HOSTNAME], u.nodename);
		fput_str(&f[HEADER_OSRELEASE], u.release);
		fput_str(&f[HEADER_ARCH], u.machine);
	}
	nr[0] = (__u32)sysconf(_SC_NPROCESSORS_CONF);
	nr[1] = (__u32)sysconf(_SC_NPROCESSORS_ONLN);
	rk_buf_put(&f[HEADER_NRCPUS], nr, sizeof(nr));
	/* perf's cmdline is its own argv: here, the recording's. */
	if (!rk_session_stat_read(e->o->session_dir, &st))
		snprintf(cmd, sizeof(cmd), "ringkeeper record %s%.*s",
			 st.target_pid && !strncmp(st.command, "-p ", 3) ? "" : "-- ",
			 (int)sizeof(st.command), st.command);
	else
		snprintf(cmd, sizeof(cmd), "ringkeeper export");
	nr[0] = 1;
	rk_buf_put(&f[HEADER_CMDLINE], nr, 4);
	fput_str(&f[HEADER_CMDLINE], cmd);
	/* Samples are timed with CLOCK_MONOTONIC (use_clockid): its resolution. */
	clock_getres(CLOCK_MONOTONIC, &res);
	ns = (__u64)res.tv_sec * 1000000000ull + (__u64)res.tv_nsec;
	rk_buf_put(&f[HEADER_CLOCKID], &ns, 8);
	if (e->tracking >= 0 && !kernel_build_id(hex, sizeof(hex)))
		fput_build_id(&f[HEADER_BUILD_ID], hex, "[kernel.kallsyms]",
			      PERF_RECORD_MISC_KERNEL);
	for (i = 0; i < e->ndsos; i++)
		if (!rk_build_id_of(e->dsos[i], hex, sizeof(hex)))
			fput_build_id(&f[HEADER_BUILD_ID], hex, e->dsos[i], PERF_RECORD_MISC_USER);
	if (e->tdata)
		rk_buf_put(&f[HEADER_TRACING_DATA], e->tdata, e->tdata_len);
	if (!e->cpuid[0])
		this_cpuid(e->cpuid, sizeof(e->cpuid));
	if (e->cpuid[0])
		fput_str(&f[HEADER_CPUID], e->cpuid);
	/*
	 * Each attr's name (perf's write_event_desc()): what perf script and
	 * report call the event, the source's directory (intel_pt, cpu-clock).
	 */
	nr[0] = e->nattr;
	nr[1] = EXPORT_ATTR_SIZE;
	rk_buf_put(&f[HEADER_EVENT_DESC], nr, 8);
	for (i = 0; i < e->nattr; i++) {
		__u32 nids = 1;
		__u64 id = i + 1;

		rk_buf_put(&f[HEADER_EVENT_DESC], e->attrs[i], EXPORT_ATTR_SIZE);
		rk_buf_put(&f[HEADER_EVENT_DESC], &nids, 4);
		fput_str(&f[HEADER_EVENT_DESC], e->names[i]);
		rk_buf_put(&f[HEADER_EVENT_DESC], &id, 8);
	}
}

/* Whether every tracepoint attr's format is in @blob. Return: the first missing, or -1. */
static int missing_format(const struct exp *e, const void *blob, size_t len)
{
	const char *fmt;
	size_t flen;
	unsigned int i;

	for (i = 0; i < e->nattr; i++) {
		const struct rk_perf_event_attr *a = (const void *)e->attrs[i];

		if (a->type == PERF_TYPE_TRACEPOINT &&
		    rk_tracedata_format(blob, len, a->config, &fmt, &flen))
			return (int)i;
	}
	return -1;
}

/*
 * perf reads a tracepoint's samples only with its format (the tracing data
 * feature): the session's saved copy, else this machine's tracefs if the
 * ids match. Without it, no file: perf would refuse it ("broken or missing
 * trace data").
 */
static int tracing_data(struct exp *e)
{
	const char *names[MAX_ATTRS];
	char why[256] = "";
	unsigned int i;
	int n = 0, miss;

	for (i = 0; i < e->nattr; i++)
		if (((const struct rk_perf_event_attr *)(const void *)e->attrs[i])->type ==
		    PERF_TYPE_TRACEPOINT)
			names[n++] = e->names[i];
	if (!n)
		return 0;
	if (!rk_tracedata_load(e->o->session_dir, &e->tdata, &e->tdata_len) &&
	    missing_format(e, e->tdata, e->tdata_len) < 0)
		return 0;
	free(e->tdata);
	e->tdata = NULL;
	if (!rk_tracedata_build(names, n, &e->tdata, &e->tdata_len, why, sizeof(why))) {
		miss = missing_format(e, e->tdata, e->tdata_len);
		if (miss < 0)
			return 0;
		snprintf(why, sizeof(why), "%s has id %llu in the session, another here",
			 e->names[miss],
			 (unsigned long long)((const struct rk_perf_event_attr *)(const void *)
						      e->attrs[miss])
				 ->config);
	}
	rk_err("export: the session has no tracepoint formats and this machine's do not fit (%s): "
	       "perf could not read its samples, so no file is written",
	       why);
	return -ENOENT;
}

/*
 * With a perf source, the kernel wrote each COMM (exec, rename) into the
 * sideband: the sched ring's copy of it would be a duplicate. Not the one
 * synthesized at time 0 (synth_comm), which nothing else writes.
 */
static int duplicate_comm(const struct exp *e, size_t k)
{
	const struct perf_event_header *h = (const void *)(e->buf + e->refs[k].off);

	return e->tracking >= 0 && h->type == PERF_RECORD_COMM && e->refs[k].time &&
	       !strcmp(e->names[e->refs[k].attr], RK_SCHED_DIR);
}

/*
 * HEADER_AUXTRACE: where each AUXTRACE record is in the file (perf's
 * auxtrace index: a u64 count, then {file offset, record size} each),
 * so perf queues the AUX data from it as from its own files. None without one.
 */
static void auxtrace_index(const struct exp *e, __u64 data_offset, struct rk_buf *f)
{
	__u64 at = data_offset, n = 0;
	size_t k;

	rk_buf_put(f, &n, 8); /* the count, set below */
	for (k = 0; k < e->nrefs; k++) {
		const struct perf_event_header *h = (const void *)(e->buf + e->refs[k].off);
		__u64 ent[2] = { at, h->size }; /* the record's own size: perf checks it */

		if (duplicate_comm(e, k))
			continue;
		if (h->type == PERF_RECORD_AUXTRACE_) {
			rk_buf_put(f, ent, sizeof(ent));
			n++;
		}
		at += e->refs[k].len;
	}
	if (!n || f->err)
		f->len = 0; /* no AUX data: no feature */
	else
		memcpy(f->p, &n, 8);
}

static int write_perf_data(struct exp *e)
{
	struct rk_buf feat[NFEAT] = { 0 };
	struct file_header hdr = { 0 };
	int b;
	char tmp[PATH_MAX];
	__u64 off;
	unsigned int i;
	size_t k;
	int fd, err = 0;

	/*
	 * Written beside the target, then renamed over it: a reader never sees
	 * half a file. Never through a symlink someone placed at the temporary
	 * name (we may be root in a directory others can write).
	 */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", e->o->out, (int)getpid());
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		rk_err("cannot create %s: %s", tmp, strerror(errno));
		return err;
	}
	hdr.magic = PERF_MAGIC2;
	hdr.size = sizeof(hdr);
	hdr.attr_size = EXPORT_ATTR_SIZE + sizeof(struct file_section);
	off = sizeof(hdr) + e->nattr * 8ull; /* ids first */
	hdr.attrs.offset = off;
	hdr.attrs.size = e->nattr * hdr.attr_size;
	hdr.data.offset = off + hdr.attrs.size;
	for (k = 0; k < e->nrefs; k++) {
		if (duplicate_comm(e, k))
			e->st->records--;
		else
			hdr.data.size += e->refs[k].len;
	}
	features(e, feat);
	auxtrace_index(e, hdr.data.offset, &feat[HEADER_AUXTRACE]);
	for (b = 0; b < NFEAT; b++)
		if (feat[b].len && !feat[b].err)
			hdr.adds_features[0] |= 1ull << b;
	err = rk_write_all(fd, &hdr, sizeof(hdr));
	for (i = 0; !err && i < e->nattr; i++) {
		__u64 id = i + 1;

		err = rk_write_all(fd, &id, 8);
	}
	for (i = 0; !err && i < e->nattr; i++) {
		struct file_section ids = { sizeof(hdr) + i * 8ull, 8 };

		err = rk_write_all(fd, e->attrs[i], EXPORT_ATTR_SIZE);
		if (!err)
			err = rk_write_all(fd, &ids, sizeof(ids));
	}
	for (k = 0; !err && k < e->nrefs; k++)
		if (!duplicate_comm(e, k))
			err = rk_write_all(fd, e->buf + e->refs[k].off, e->refs[k].len);
	/* The feature sections after the data: a table, one per bit set in order, then the bytes. */
	{
		__u64 at = hdr.data.offset + hdr.data.size;

		for (b = 0; b < NFEAT; b++)
			at += hdr.adds_features[0] >> b & 1 ? sizeof(struct file_section) : 0;
		for (b = 0; !err && b < NFEAT; b++) {
			struct file_section fs = { at, feat[b].len };

			if (!(hdr.adds_features[0] >> b & 1))
				continue;
			err = rk_write_all(fd, &fs, sizeof(fs));
			at += feat[b].len;
		}
		for (b = 0; !err && b < NFEAT; b++)
			if (hdr.adds_features[0] >> b & 1)
				err = rk_write_all(fd, feat[b].p, feat[b].len);
	}
	for (b = 0; b < NFEAT; b++)
		free(feat[b].p);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, e->o->out))
		err = -errno;
	if (err) {
		rk_err("cannot write %s: %s", e->o->out, strerror(-err));
		unlink(tmp);
	}
	return err;
}

static int for_dir(struct exp *e, const char *src, int sideband)
{
	char dir[PATH_MAX], path[PATH_MAX + 300];
	struct dirent *de;
	int err = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s", e->o->session_dir, src);
	d = opendir(dir);
	if (!d)
		return 0;
	while (!err && (de = readdir(d))) {
		char *end;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		strtoul(de->d_name, &end, 10);
		if (*end && *end != '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		err = add_file(e, src, path, sideband);
	}
	closedir(d);
	return err;
}

/*
 * The kernel's map, as perf record synthesizes it, so kernel addresses in
 * samples resolve against /proc/kallsyms. Read here, at export: perf
 * resolves kernel symbols against the running kernel anyway.
 */
static int add_kernel_mmap(struct exp *e)
{
	union {
		struct perf_event_header h;
		__u8 b[256];
	} rec;
	unsigned long long text = 0;
	char line[256], name[128];
	const char *fname = "[kernel.kallsyms]_text";
	__u64 st = attr_sample_type(e->attrs[e->tracking]), v;
	__u32 pid = (__u32)-1;
	size_t n = 8, len;
	FILE *f = fopen("/proc/kallsyms", "re");
	char type;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %127s", &text, &type, name) == 3 &&
		    !strcmp(name, "_text"))
			break;
	fclose(f);
	if (!text)
		return 0; /* kptr_restrict: kernel frames stay unresolved */
	memset(&rec, 0, sizeof(rec));
	rec.h.type = PERF_RECORD_MMAP;
	rec.h.misc = PERF_RECORD_MISC_KERNEL;
	memcpy(rec.b + n, &pid, 4);
	memcpy(rec.b + n + 4, &pid, 4);
	n += 8;
	v = text;
	memcpy(rec.b + n, &v, 8);
	v = ~0ull - text;
	memcpy(rec.b + n + 8, &v, 8);
	v = text;
	memcpy(rec.b + n + 16, &v, 8);
	n += 24;
	len = strlen(fname) + 1;
	memcpy(rec.b + n, fname, len);
	n += (len + 7) & ~(size_t)7;
	/* sample_id, all zero but the id (rewritten by on_record) and pid/tid -1. */
	if (st & PERF_SAMPLE_TID) {
		memcpy(rec.b + n, &pid, 4);
		memcpy(rec.b + n + 4, &pid, 4);
	}
	n += rk_sample_id_size(st);
	rec.h.size = (__u16)n;
	e->cur_attr = (unsigned int)e->tracking;
	e->cur_sample_type = st;
	return on_record(&rec.h, e);
}

/*
 * What the session did not record, as perf says its own losses: one
 * PERF_RECORD_LOST (id, lost, then its attr's sample_id at time 0: the
 * tracking source's, or sched's, the first, in a session without -e)
 * of the sum of the loss counters (all but AUX bytes: they count bytes);
 * perf report warns of it, perf report --stats counts it. The breakdown is
 * said on stderr and in stat.
 */
static int add_lost(struct exp *e)
{
	union {
		struct perf_event_header h;
		__u8 b[128];
	} rec;
	int a = e->tracking >= 0 ? e->tracking : 0, i;
	__u64 st = attr_sample_type(e->attrs[a]), lost = 0, id = (__u64)a + 1;
	__u32 pid = (__u32)-1;
	size_t n = 8;

	for (i = 0; e->o->loss && e->o->loss->known && i < RK_LOSS_NR; i++)
		if (i != RK_LOSS_aux_dropped)
			lost += e->o->loss->v[i];
	if (!lost)
		return 0;
	memset(&rec, 0, sizeof(rec));
	rec.h.type = PERF_RECORD_LOST;
	memcpy(rec.b + n, &id, 8);
	memcpy(rec.b + n + 8, &lost, 8);
	n += 16;
	if (st & PERF_SAMPLE_TID) {
		memcpy(rec.b + n, &pid, 4);
		memcpy(rec.b + n + 4, &pid, 4);
	}
	n += rk_sample_id_size(st);
	rec.h.size = (__u16)n;
	e->cur_attr = (unsigned int)a;
	e->cur_sample_type = st;
	e->st->lost = lost;
	return on_record(&rec.h, e);
}

int rk_export_perf_data(const struct rk_export_opts *o, struct rk_export_stats *st)
{
	struct exp *e = calloc(1, sizeof(*e));
	struct dirent *de;
	int err = 0;
	DIR *d;

	if (!e)
		return -ENOMEM;
	memset(st, 0, sizeof(*st));
	{
		struct stat ost;

		/* /dev/full, a FIFO, a directory: never replaced by our regular file. */
		if (!lstat(o->out, &ost) && !S_ISREG(ost.st_mode)) {
			rk_err("export: %s is not a regular file: not replacing it (perf.data is "
			       "written to a new file and renamed into place)",
			       o->out);
			free(e);
			return -EINVAL;
		}
	}
	e->o = o;
	e->st = st;
	e->tracking = -1;
	e->offcpu_attr = -1;
	d = opendir(o->session_dir);
	if (!d) {
		err = -errno;
		rk_err("cannot read %s: %s", o->session_dir, strerror(errno));
		goto out;
	}
	/* sched first, so its attr is the first: perf shows it first. */
	err = for_dir(e, RK_SCHED_DIR, 0);
	while (!err && (de = readdir(d))) {
		if (de->d_name[0] == '.' || de->d_type != DT_DIR ||
		    !strcmp(de->d_name, RK_SCHED_DIR) || !strcmp(de->d_name, RK_SIDEBAND_DIR))
			continue;
		err = for_dir(e, de->d_name, 0);
	}
	closedir(d);
	if (!err && e->tracking >= 0)
		err = for_dir(e, RK_SIDEBAND_DIR, 1);
	if (!err && e->tracking >= 0)
		err = add_kernel_mmap(e);
	if (!err && e->nattr)
		err = add_lost(e);
	if (err)
		goto out;
	if (!st->threads) {
		rk_err("export: no thread matched in %s%s", o->session_dir,
		       o->tid ? " (--tid)" :
		       o->pid ? " (--pid)" :
				"");
		err = -ENOENT;
		goto out;
	}
	err = sched_samples(e);
	if (err)
		goto out;
	if (e->nrefs)
		qsort(e->refs, e->nrefs, sizeof(*e->refs), cmp_ref);
	st->attrs = e->nattr;
	err = tracing_data(e);
	if (!err)
		err = write_perf_data(e);
out:
	free(e->tdata);
	free(e->sw);
	for (size_t k = 0; k < e->ndsos; k++)
		free(e->dsos[k]);
	free(e->dsos);
	free(e->buf);
	free(e->refs);
	free(e);
	return err;
}
