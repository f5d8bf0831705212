// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * show.c - decode a buffer with nothing but the file: the attr at pmu_offset
 * says what sample_id every record carries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "show.h"
#include "timeline.h"
#include "util.h"

const char *rk_thread_state_name(__u32 state)
{
	switch (state) {
	case RK_THREAD_LIVE:
		return "live";
	case RK_THREAD_EXITING:
		return "exiting";
	case RK_THREAD_EXITED:
		return "exited";
	case RK_THREAD_EXECED:
		return "exec-root-only";
	case RK_THREAD_CREDS:
		return "creds-changed";
	case RK_THREAD_LEFT:
		return "left-cgroup";
	case RK_THREAD_CRASHED:
		return "crashed";
	case RK_THREAD_STOPPED:
		return "stopped";
	}
	return "unknown";
}

struct walk {
	FILE *out;
	const struct rk_bufile *bf;
	struct rk_symbols *syms;
	int json;
	struct rk_show_counts c;
	char comm[RK_COMM_LEN];
	char event[64];
	const struct rk_tp_format *tpf;
	int nrec_json; /* records printed into the JSON "records" array */
	__u64 lo, hi; /* only records timed within (0, ~0: all) */
	struct rec_desc *desc; /* the record being described (8 KiB: not on the stack) */
	__u64 next; /* where the record after the last one read starts (a corrupt one: there) */
};

/* Between two records of the JSON array: a comma. */
static void json_sep(struct walk *w)
{
	if (w->nrec_json++)
		fputc(',', w->out);
}

/* The sample_id fields we print, parsed from the end of a non-sample record. */
struct sid {
	int have_tid, have_time, have_cpu;
	__u32 pid, tid, cpu, res;
	__u64 time;
};

static int parse_sample_id(const struct rk_bufile *bf, const struct perf_event_header *h,
			   struct sid *s)
{
	__u64 st = bf->pmu->attr.sample_type;
	size_t n = rk_sample_id_size(st);
	const __u8 *p;

	memset(s, 0, sizeof(*s));
	if (!bf->pmu->attr.sample_id_all || n + sizeof(*h) > h->size)
		return -1;
	p = (const __u8 *)h + h->size - n;
	if (st & PERF_SAMPLE_TID) {
		memcpy(&s->pid, p, 4);
		memcpy(&s->tid, p + 4, 4);
		s->have_tid = 1;
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		memcpy(&s->time, p, 8);
		s->have_time = 1;
		p += 8;
	}
	p += st & PERF_SAMPLE_ID ? 8 : 0;
	p += st & PERF_SAMPLE_STREAM_ID ? 8 : 0;
	if (st & PERF_SAMPLE_CPU) {
		memcpy(&s->cpu, p, 4);
		memcpy(&s->res, p + 4, 4);
		s->have_cpu = 1;
	}
	return 0;
}

/* A trigger record (record --trigger) as one line of text. */
static void trigger_detail(const struct perf_event_header *h, char *buf, size_t len)
{
	struct rk_trigger_record tr;

	if (h->size < sizeof(tr)) {
		snprintf(buf, len, "trigger (short record)");
		return;
	}
	memcpy(&tr, h, sizeof(tr));
	switch (tr.kind) {
	case RK_TRIG_OPERATOR:
		snprintf(buf, len, "trigger: operator (SIGUSR2 from pid %u)", tr.by_pid);
		break;
	case RK_TRIG_DELAY:
		snprintf(buf, len, "trigger: waited %.3f ms for a CPU", tr.value / 1e6);
		break;
	case RK_TRIG_BLOCKED:
		snprintf(buf, len, "trigger: off CPU in %s for %.3f s", tr.state & 2 ? "D" : "S",
			 tr.value / 1e9);
		break;
	case RK_TRIG_KILLED:
		if (tr.by_pid)
			snprintf(buf, len, "trigger: killed by signal %llu, sent by pid %u tid %u",
				 (unsigned long long)tr.value, tr.by_pid, tr.by_tid);
		else if (tr.state & (RK_TRIG_BY_KERNEL | RK_TRIG_BY_HIDDEN))
			snprintf(buf, len, "trigger: killed by signal %llu, sent by %s",
				 (unsigned long long)tr.value,
				 tr.state & RK_TRIG_BY_KERNEL ? "the kernel" :
								"another user's task");
		else
			snprintf(buf, len, "trigger: killed by signal %llu",
				 (unsigned long long)tr.value);
		break;
	case RK_TRIG_EXIT:
		snprintf(buf, len, "trigger: exit status %llu", (unsigned long long)tr.value);
		break;
	default:
		snprintf(buf, len, "trigger of kind %u", tr.kind);
	}
}

static const char *type_name(__u32 type)
{
	switch (type) {
	case PERF_RECORD_SWITCH:
		return "PERF_RECORD_SWITCH";
	case PERF_RECORD_COMM:
		return "PERF_RECORD_COMM";
	case PERF_RECORD_EXIT:
		return "PERF_RECORD_EXIT";
	case PERF_RECORD_FORK:
		return "PERF_RECORD_FORK";
	case PERF_RECORD_LOST:
		return "PERF_RECORD_LOST";
	case PERF_RECORD_SAMPLE:
		return "PERF_RECORD_SAMPLE";
	case PERF_RECORD_MMAP2:
		return "PERF_RECORD_MMAP2";
	case PERF_RECORD_THROTTLE:
		return "PERF_RECORD_THROTTLE";
	case PERF_RECORD_UNTHROTTLE:
		return "PERF_RECORD_UNTHROTTLE";
	case PERF_RECORD_AUX:
		return "PERF_RECORD_AUX";
	case PERF_RECORD_ITRACE_START:
		return "PERF_RECORD_ITRACE_START";
	case RK_RECORD_CRASH:
		return "RINGKEEPER_CRASH";
	case RK_RECORD_WAKEUP:
		return "RINGKEEPER_WAKEUP";
	case RK_RECORD_TRIGGER:
		return "RINGKEEPER_TRIGGER";
	case RK_RECORD_STACK:
		return "RINGKEEPER_STACK";
	}
	return "PERF_RECORD_UNKNOWN";
}

static void print_addr(struct walk *w, __u64 ip, const char *indent, int first)
{
	char sym[256];
	const char *dso = "[unknown]";

	if (w->syms)
		rk_symbols_resolve(w->syms, ip, sym, sizeof(sym), &dso);
	else
		snprintf(sym, sizeof(sym), "[unknown]");
	if (w->json) {
		/* Addresses as hex strings, as perf data convert --to-json: above 2^53. */
		fprintf(w->out, "%s{\"ip\":\"0x%llx\",\"sym\":", first ? "" : ",",
			(unsigned long long)ip);
		rk_json_str(w->out, sym);
		fprintf(w->out, ",\"dso\":");
		rk_json_str(w->out, dso);
		fprintf(w->out, "}");
	} else {
		fprintf(w->out, "%s%16llx %s (%s)\n", indent, (unsigned long long)ip, sym, dso);
	}
}

/*
 * A PERF_RECORD_SAMPLE of our sources: IDENTIFIER, IP, TID, TIME, CPU,
 * PERIOD, then CALLCHAIN and RAW if present (fields in the kernel's order).
 */
static int show_sample(struct walk *w, const struct perf_event_header *h)
{
	struct rk_sample smp;
	int err = rk_sample_parse(w->bf->pmu->attr.sample_type, h, &smp);
	__u64 ip = smp.ip, time = smp.time, period = smp.period, nr = smp.nr, v;
	__u32 pid = smp.pid, tid = smp.tid, cpu = smp.cpu;
	const __u8 *chain = smp.chain, *raw = smp.raw;
	size_t raw_len = smp.raw_len;

	if (err)
		return err;
	if (tid != w->bf->ident->tid)
		w->c.foreign++;
	w->c.samples++;
	if (w->json) {
		json_sep(w);
		fprintf(w->out,
			"{\"type\":\"PERF_RECORD_SAMPLE\",\"pid\":%u,\"tid\":%u,\"time\":%llu,"
			"\"cpu\":%u,\"period\":%llu,\"event\":",
			pid, tid, (unsigned long long)time, cpu, (unsigned long long)period);
		rk_json_str(w->out, w->event);
		if (raw && w->tpf)
			rk_tp_print_fields(w->out, w->tpf, raw, raw_len, 1);
		fprintf(w->out, ",\"ip\":");
		print_addr(w, ip, "", 1);
		fprintf(w->out, ",\"callchain\":[");
	} else {
		fprintf(w->out, "%16s %6u [%03u] %llu.%09llu: %10llu %s:", w->comm, tid, cpu,
			(unsigned long long)(time / 1000000000ull),
			(unsigned long long)(time % 1000000000ull), (unsigned long long)period,
			w->event);
		/* A tracepoint's fields, as perf script prints them after the event. */
		if (raw && w->tpf) {
			fputc(' ', w->out);
			rk_tp_print_fields(w->out, w->tpf, raw, raw_len, 0);
		}
		fputc('\n', w->out);
		if (!chain)
			print_addr(w, ip, "\t", 1);
	}
	if (chain) {
		__u64 i;
		int first = 1;

		for (i = 0; i < nr; i++) {
			memcpy(&v, chain + i * 8, 8);
			if (v >= (__u64)PERF_CONTEXT_MAX)
				continue; /* kernel/user context markers */
			print_addr(w, v, "\t", first);
			first = 0;
		}
	}
	if (w->json)
		fprintf(w->out, "]}\n");
	else
		fputc('\n', w->out);
	return 0;
}

/* What one record says, beyond its sample_id: the text, and the fields JSON names. */
struct rec_desc {
	char detail[160];
	int have_crash, have_wake, have_stack, have_out, have_trig;
	__u32 out_res; /* a switch-out's sample_id.res: RK_SWITCH_STATE | the task's state bits */
	struct rk_crash_record crash;
	struct rk_wakeup_record wake;
	struct rk_stack_rec stack;
	struct rk_trigger_record trig;
};

/* Records outside --time / --last are counted, not shown. Return: 1 if @h is shown. */
static int in_window(struct walk *w, const struct perf_event_header *h)
{
	__u64 t;

	if (!w->lo && w->hi == ~0ull)
		return 1;
	t = rk_record_time(w->bf->pmu->attr.sample_type, h);
	if (t < w->lo || t > w->hi) {
		w->c.outside++;
		return 0;
	}
	return 1;
}

/* A sample, or why it is not shown. */
static void sample_rec(struct walk *w, const struct perf_event_header *h)
{
	int err = show_sample(w, h);

	if (!err)
		return;
	w->c.other++;
	if (w->json)
		json_sep(w);
	fprintf(w->out,
		w->json ? "{\"type\":\"PERF_RECORD_SAMPLE\",\"error\":\"%s\"}\n" :
			  "# sample not shown: %s\n",
		err == -EOPNOTSUPP ? "sample_type not supported by show" : "truncated");
}

/* A switch: in, or out and why it left (where the recorder kept it). */
static void describe_switch(struct walk *w, const struct perf_event_header *h, const struct sid *s,
			    struct rec_desc *d)
{
	enum rk_offcpu why = rk_offcpu_of(s->res);

	if (!(h->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
		w->c.switch_in++;
		snprintf(d->detail, sizeof(d->detail), "IN");
		return;
	}
	w->c.switch_out++;
	d->have_out = 1;
	d->out_res = s->res;
	/* A preemption says so already. */
	snprintf(d->detail, sizeof(d->detail), "OUT%s%s",
		 h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT ? " preempt" : "",
		 why == RK_OFF_UNKNOWN || why == RK_OFF_PREEMPTED ? "" :
		 why == RK_OFF_SLEEPING				  ? " sleeping" :
		 why == RK_OFF_BLOCKED				  ? " blocked" :
		 why == RK_OFF_IDLE				  ? " idle" :
		 why == RK_OFF_STOPPED				  ? " stopped" :
								    " dead");
}

/* The kernel's records of a perf ring (and ours of the same layout): LOST, MMAP2, FORK, ... */
static void describe_perf(struct walk *w, const struct perf_event_header *h, struct rec_desc *d)
{
	const __u8 *b = (const __u8 *)h + sizeof(*h);
	__u64 v[3];
	__u32 u[4];

	w->c.other++;
	if (h->type == PERF_RECORD_COMM && h->size >= sizeof(*h) + 8 + RK_COMM_LEN) {
		memcpy(w->comm, b + 8, RK_COMM_LEN);
		w->comm[RK_COMM_LEN - 1] = '\0';
		if (!w->json)
			rk_strip_controls(w->comm);
		snprintf(d->detail, sizeof(d->detail), "%s%s", w->comm,
			 h->misc & PERF_RECORD_MISC_COMM_EXEC ? " (exec)" : "");
	} else if (h->type == PERF_RECORD_COMM) {
		snprintf(d->detail, sizeof(d->detail), "%s", w->comm);
	} else if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16) {
		memcpy(v, b + 8, 8);
		w->c.lost += v[0];
		snprintf(d->detail, sizeof(d->detail), "lost %llu", (unsigned long long)v[0]);
	} else if (h->type == PERF_RECORD_MMAP2 && h->size > sizeof(*h) + 72) {
		const char *name = rk_mmap2_name(h);

		memcpy(v, b + 8, 16);
		snprintf(d->detail, sizeof(d->detail), "[0x%llx(0x%llx)]: %.50s",
			 (unsigned long long)v[0], (unsigned long long)v[1], name ? name : "?");
	} else if ((h->type == PERF_RECORD_FORK || h->type == PERF_RECORD_EXIT) &&
		   h->size >= sizeof(*h) + 16) {
		memcpy(u, b, sizeof(u));
		snprintf(d->detail, sizeof(d->detail), "(%u:%u):(%u:%u)", u[0], u[2], u[1], u[3]);
	} else if (h->type == PERF_RECORD_AUX && h->size >= sizeof(*h) + 24) {
		memcpy(v, b, sizeof(v));
		/* Offsets in this file's AUX area, as the loader rewrote them. */
		snprintf(d->detail, sizeof(d->detail), "offset %#llx size %#llx flags %#llx%s%s",
			 (unsigned long long)v[0], (unsigned long long)v[1],
			 (unsigned long long)v[2],
			 v[2] & PERF_AUX_FLAG_TRUNCATED ? " [truncated]" : "",
			 v[2] & PERF_AUX_FLAG_PARTIAL ? " [partial]" : "");
	} else if (h->type == PERF_RECORD_ITRACE_START && h->size >= sizeof(*h) + 8) {
		memcpy(u, b, 8);
		snprintf(d->detail, sizeof(d->detail), "pid %u tid %u", u[0], u[1]);
	}
}

/*
 * Where a wakeup ran (RK_WAKEUP_CTX and its irq bits): "hardirq",
 * "softirq", "nmi", "task", or NULL (not recorded: older files, or a
 * kernel whose preempt_count the recorder could not find).
 */
static const char *wake_context(__u32 flags)
{
	if (!(flags & RK_WAKEUP_CTX))
		return NULL;
	return flags & RK_WAKEUP_NMI	 ? "nmi" :
	       flags & RK_WAKEUP_HARDIRQ ? "hardirq" :
	       flags & RK_WAKEUP_SOFTIRQ ? "softirq" :
					   "task";
}

/*
 * Who woke it, from where (the record's cpu), and where it last ran. From
 * an interrupt, the task current then is not the waker but the one it
 * interrupted (or, for a softirq, the one it ran on: ksoftirqd's too).
 */
static void describe_wakeup(struct walk *w, const struct perf_event_header *h, struct rec_desc *d)
{
	const char *ctx, *irq;
	char who[80];

	w->c.wakeups++;
	if (h->size < sizeof(d->wake))
		return;
	memcpy(&d->wake, h, sizeof(d->wake));
	d->have_wake = 1;
	ctx = wake_context(d->wake.flags);
	irq = !ctx || !strcmp(ctx, "task") ? NULL :
	      !strcmp(ctx, "hardirq")	   ? "hard irq" :
	      !strcmp(ctx, "softirq")	   ? "softirq" :
					     "NMI";
	if (d->wake.flags & RK_WAKEUP_HIDDEN)
		snprintf(who, sizeof(who),
			 "another user's task (not shown at perf_event_paranoid > -1)");
	else if (!d->wake.waker_tid && irq)
		snprintf(who, sizeof(who), "the idle task");
	else
		snprintf(who, sizeof(who), "tid %u (pid %u)", d->wake.waker_tid, d->wake.waker_pid);
	if (irq)
		snprintf(d->detail, sizeof(d->detail), "woken%s from %s (%s %s), target cpu %u",
			 d->wake.flags & RK_WAKEUP_NEW ? " (new)" : "", irq,
			 d->wake.flags & RK_WAKEUP_SOFTIRQ ? "running on" : "interrupted", who,
			 d->wake.target_cpu);
	else
		snprintf(d->detail, sizeof(d->detail), "woken%s by %s, target cpu %u",
			 d->wake.flags & RK_WAKEUP_NEW ? " (new)" : "", who, d->wake.target_cpu);
}

/* record --offcpu's stacks: whose, how many frames, what was withheld (frames print after). */
static void describe_stack(struct walk *w, const struct perf_event_header *h, struct rec_desc *d)
{
	struct rk_stack_rec *st = &d->stack;

	w->c.stacks++;
	if (rk_stack_parse(h, rk_sample_id_size(w->bf->pmu->attr.sample_type), st)) {
		snprintf(d->detail, sizeof(d->detail), "does not parse (size %u)", h->size);
		return;
	}
	d->have_stack = 1;
	snprintf(d->detail, sizeof(d->detail), "%s: %u kernel, %u user frames%s%s",
		 st->of == RK_STACK_OF_WAKEUP ? "the waker's" : "where it blocked", st->nr_kernel,
		 st->nr_user,
		 st->flags & RK_STACKF_KERNEL_HIDDEN ? " (kernel's withheld: perf_event_paranoid)" :
						       "",
		 st->flags & RK_STACKF_USER_HIDDEN ? " (user's withheld: another user's task)" :
						     "");
}

/* Ours: a crash, a wakeup, stacks, a trigger; or a type nobody knows. */
static void describe_ours(struct walk *w, const struct perf_event_header *h, struct rec_desc *d)
{
	if (h->type == RK_RECORD_WAKEUP) {
		describe_wakeup(w, h, d);
	} else if (h->type == RK_RECORD_STACK) {
		describe_stack(w, h, d);
	} else if (h->type == RK_RECORD_TRIGGER) {
		w->c.other++;
		trigger_detail(h, d->detail, sizeof(d->detail));
		if (h->size >= sizeof(d->trig)) {
			memcpy(&d->trig, h, sizeof(d->trig));
			d->have_trig = 1;
		}
	} else if (h->type == RK_RECORD_CRASH) {
		w->c.other++;
		if (h->size < sizeof(d->crash))
			return;
		memcpy(&d->crash, h, sizeof(d->crash));
		d->have_crash = 1;
		snprintf(d->detail, sizeof(d->detail), "signal %d (SIG%s) delivered to tid %u",
			 d->crash.signo, sigabbrev_np(d->crash.signo) ?: "?", d->crash.crash_tid);
	} else {
		w->c.other++;
		snprintf(d->detail, sizeof(d->detail), "type %u size %u", h->type, h->size);
	}
}

/* A stack's frames, leaf first, kernel then user (as perf script prints a call chain). */
static void print_stack(struct walk *w, const struct rk_stack_rec *st)
{
	__u32 i;

	for (i = 0; i < st->nr_kernel; i++)
		print_addr(w, st->kip[i], "\t", !i);
	if (w->json && st->nr_kernel)
		fprintf(w->out, "],\"user\":[");
	for (i = 0; i < st->nr_user; i++)
		print_addr(w, st->uip[i], "\t", !i);
}

/*
 * A trigger record's fields, as one object (docs/format.md, the trigger
 * record): what fired (kind, and its number), its value (ns, a signal or an
 * exit status, by kind), its state, and who sent a kill.
 */
static void print_json_trigger(struct walk *w, const struct rk_trigger_record *t)
{
	static const char *const kinds[] = { "unknown", "operator", "delay",
					     "blocked", "killed",   "exit" };

	fprintf(w->out,
		",\"trigger\":{\"kind\":\"%s\",\"kind_code\":%u,\"value\":%llu,\"state\":%u,"
		"\"by_pid\":%u,\"by_tid\":%u}",
		kinds[t->kind < sizeof(kinds) / sizeof(kinds[0]) ? t->kind : 0], t->kind,
		(unsigned long long)t->value, t->state, t->by_pid, t->by_tid);
}

static void print_json_rec(struct walk *w, const struct perf_event_header *h, const struct sid *s,
			   const struct rec_desc *d)
{
	json_sep(w);
	fprintf(w->out, "{\"type\":\"%s\",\"misc\":%u,\"size\":%u", type_name(h->type), h->misc,
		h->size);
	if (s->have_tid)
		fprintf(w->out, ",\"pid\":%u,\"tid\":%u", s->pid, s->tid);
	if (s->have_time)
		fprintf(w->out, ",\"time\":%llu", (unsigned long long)s->time);
	if (s->have_cpu)
		fprintf(w->out, ",\"cpu\":%u", s->cpu);
	if (d->have_crash)
		fprintf(w->out, ",\"signal\":%d,\"crash_tid\":%u", d->crash.signo,
			d->crash.crash_tid);
	if (d->have_trig)
		print_json_trigger(w, &d->trig);
	if (d->have_wake)
		fprintf(w->out,
			",\"waker_pid\":%u,\"waker_tid\":%u,\"target_cpu\":%u,\"new\":%s,"
			"\"waker_hidden\":%s",
			d->wake.waker_pid, d->wake.waker_tid, d->wake.target_cpu,
			d->wake.flags & RK_WAKEUP_NEW ? "true" : "false",
			d->wake.flags & RK_WAKEUP_HIDDEN ? "true" : "false");
	if (d->have_wake) {
		const char *ctx = wake_context(d->wake.flags);

		fprintf(w->out, ",\"wake_flags\":%u,\"context\":", d->wake.flags);
		if (ctx)
			fprintf(w->out, "\"%s\"", ctx);
		else
			fprintf(w->out, "null");
	}
	if (d->have_out) {
		fprintf(w->out, ",\"res\":%u,\"reason\":\"%s\",\"reason_code\":%d", d->out_res,
			rk_offcpu_name(rk_offcpu_of(d->out_res)), (int)rk_offcpu_of(d->out_res));
		if (d->out_res & RK_SWITCH_STATE)
			fprintf(w->out, ",\"state\":%u", d->out_res & RK_SWITCH_STATE_MASK);
	}
	if (d->have_stack) {
		fprintf(w->out,
			",\"stack_of\":\"%s\",\"kernel_hidden\":%s,\"user_hidden\":%s,\"kernel\":[",
			d->stack.of == RK_STACK_OF_WAKEUP ? "waker" : "switch-out",
			d->stack.flags & RK_STACKF_KERNEL_HIDDEN ? "true" : "false",
			d->stack.flags & RK_STACKF_USER_HIDDEN ? "true" : "false");
		if (!d->stack.nr_kernel)
			fprintf(w->out, "],\"user\":[");
		print_stack(w, &d->stack);
		fprintf(w->out, "]");
	}
	fprintf(w->out, ",\"detail\":");
	rk_json_str(w->out, d->detail);
	fprintf(w->out, "}\n");
}

/* perf script's layout: comm tid [cpu] secs.nsecs: record details; a stack's frames below. */
static void print_text_rec(struct walk *w, const struct perf_event_header *h, const struct sid *s,
			   const struct rec_desc *d)
{
	fprintf(w->out, "%16s %6u [%03u] %llu.%09llu: %s %s\n", w->comm, s->have_tid ? s->tid : 0,
		s->have_cpu ? s->cpu : 0, (unsigned long long)(s->time / 1000000000ull),
		(unsigned long long)(s->time % 1000000000ull), type_name(h->type), d->detail);
	if (d->have_stack)
		print_stack(w, &d->stack);
}

static int on_rec(const struct perf_event_header *h, __u64 at, void *ctx)
{
	struct walk *w = ctx;
	struct rec_desc *d = w->desc;
	struct sid s;

	w->next = at + h->size;

	/* Step 1: in the window, and a sample has a layout of its own. */
	if (!in_window(w, h))
		return 0;
	w->c.records++;
	if (h->type == PERF_RECORD_SAMPLE) {
		sample_rec(w, h);
		return 0;
	}
	/* Step 2: whose record, when, where. */
	parse_sample_id(w->bf, h, &s);
	if (s.have_tid && s.tid != w->bf->ident->tid)
		w->c.foreign++;
	/* Step 3: what it says. */
	d->detail[0] = '\0';
	d->have_crash = d->have_wake = d->have_stack = d->have_out = d->have_trig = 0;
	if (h->type == PERF_RECORD_SWITCH)
		describe_switch(w, h, &s, d);
	else if (h->type == PERF_RECORD_COMM || h->type == PERF_RECORD_LOST ||
		 h->type == PERF_RECORD_MMAP2 || h->type == PERF_RECORD_FORK ||
		 h->type == PERF_RECORD_EXIT || h->type == PERF_RECORD_AUX ||
		 h->type == PERF_RECORD_ITRACE_START)
		describe_perf(w, h, d);
	else
		describe_ours(w, h, d);
	/* Step 4: printed. */
	if (w->json)
		print_json_rec(w, h, &s, d);
	else
		print_text_rec(w, h, &s, d);
	return 0;
}

/* The summary's mention of stacks (record --offcpu), only where there are. */
static const char *stacks_note(unsigned long long n)
{
	static __thread char b[48];

	snprintf(b, sizeof(b), " (%llu of them stacks)", n);
	return b;
}

static int end_of(const struct perf_event_header *h, void *ctx)
{
	struct walk *w = ctx;
	__u64 t = rk_record_time(w->bf->pmu->attr.sample_type, h);

	if (t > w->hi)
		w->hi = t;
	return 0;
}

__u64 rk_show_end(const struct rk_bufile *bf)
{
	struct walk w = { .bf = bf };

	rk_bufile__for_each(bf, end_of, &w);
	return w.hi;
}

/*
 * On stderr: the record at ring position @at of @path does not parse (its
 * header's size is not a multiple of 8 of at least 8 within [at, @head)).
 */
static void corrupt_note(const struct rk_bufile *bf, const char *path, __u64 at, __u64 head)
{
	struct perf_event_header h;
	__u64 mask = bf->data_size - 1;
	size_t first = (size_t)(bf->data_size - (at & mask));

	/* The header may wrap the ring's end, as the walk reads it. */
	if (first >= sizeof(h)) {
		memcpy(&h, bf->data + (at & mask), sizeof(h));
	} else {
		memcpy(&h, bf->data + (at & mask), first);
		memcpy((__u8 *)&h + first, bf->data, sizeof(h) - first);
	}
	fprintf(stderr,
		"ringkeeper: %s: corrupt: the record at ring position %llu (byte %llu of the "
		"data ring) says type %u size %u, which does not fit before its head %llu: what "
		"follows it is not shown\n",
		path, (unsigned long long)at, (unsigned long long)(at & mask), h.type, h.size,
		(unsigned long long)head);
}

int rk_show(FILE *out, const struct rk_bufile *bf, const char *path, int json,
	    struct rk_symbols *syms, const struct rk_tp_format *tpf, struct rk_show_counts *counts)
{
	return rk_show_range(out, bf, path, json, syms, tpf, counts, 0, ~0ull, NULL);
}

int rk_show_range(FILE *out, const struct rk_bufile *bf, const char *path, int json,
		  struct rk_symbols *syms, const struct rk_tp_format *tpf,
		  struct rk_show_counts *counts, __u64 lo, __u64 hi, const struct rk_loss *loss)
{
	const struct rk_thread_ident *id = bf->ident;
	const struct rk_perf_event_attr *a = &bf->pmu->attr;
	struct walk w = {
		.out = out, .bf = bf, .json = json, .syms = syms, .tpf = tpf, .lo = lo, .hi = hi
	};
	const char *slash = strrchr(path, '/'), *start = path;

	/* The event is the name of the file's directory (<session>/<event>/<tid>). */
	if (slash) {
		const char *p;

		for (p = slash - 1; p >= path && *p != '/'; p--)
			;
		start = p + 1;
	}
	snprintf(w.event, sizeof(w.event), "%.*s", slash ? (int)(slash - start) : 0, start);
	__u64 head, tail;
	int err;

	err = rk_bufile__ring(bf, &head, &tail);
	if (err)
		return err;

	memcpy(w.comm, id->comm, RK_COMM_LEN);
	w.comm[RK_COMM_LEN - 1] = '\0';
	if (!json)
		rk_strip_controls(w.comm);
	if (json) {
		/* One document: the thread's header, then its records, one per line. */
		fprintf(out, "{\"thread\":{\"file\":");
		rk_json_str(out, path);
		fprintf(out, ",\"tid\":%u,\"tgid\":%u,\"ns_tid\":%u,\"uid\":%u,\"comm\":", id->tid,
			id->tgid, id->ns_tid, id->uid);
		rk_json_str(out, w.comm);
		fprintf(out,
			",\"state\":\"%s\",\"end_unseen\":%s,\"exit_code\":%d,\"start_ns\":%llu,"
			"\"exit_ns\":%llu,"
			"\"data_size\":%llu,\"data_head\":%llu,\"data_tail\":%llu,"
			"\"overwritten\":%llu,\"lost\":%llu,\"pmu_offset\":%llu,\"pmu_size\":%llu,"
			"\"attr\":{\"type\":%u,\"size\":%u,\"config\":\"0x%llx\",\"sample_type\":%llu,"
			"\"context_switch\":%u,\"clockid\":%d},\"pmu_descsz\":%u},\n\"records\":[\n",
			rk_thread_state_name(id->state),
			id->flags & RK_IDENT_END_UNSEEN ? "true" : "false", id->exit_code,
			(unsigned long long)id->start_ns, (unsigned long long)id->exit_ns,
			(unsigned long long)bf->data_size, (unsigned long long)head,
			(unsigned long long)tail, (unsigned long long)id->overwritten,
			(unsigned long long)id->lost, (unsigned long long)bf->ext->pmu_offset,
			(unsigned long long)bf->ext->pmu_size, a->type, a->size,
			(unsigned long long)a->config, (unsigned long long)a->sample_type,
			a->context_switch, a->clockid, bf->pmu->info.pmu_descsz);
	} else {
		fprintf(out, "# file: %s\n", path);
		fprintf(out, "# thread: tid %u (ns tid %u) tgid %u uid %u comm %s, %s", id->tid,
			id->ns_tid, id->tgid, id->uid, w.comm, rk_thread_state_name(id->state));
		if (id->flags & RK_IDENT_END_UNSEEN)
			fprintf(out, " (end unseen: the signals of its end were dropped; ended "
				     "when the recorder found it gone)");
		else if (id->state == RK_THREAD_EXITED || id->state == RK_THREAD_EXITING)
			fprintf(out, " (exit_code 0x%x)", (unsigned int)id->exit_code);
		fprintf(out,
			"\n# data: %llu bytes ring, %llu in use [tail %llu, head %llu), "
			"%llu records overwritten, %llu lost\n",
			(unsigned long long)bf->data_size, (unsigned long long)(head - tail),
			(unsigned long long)tail, (unsigned long long)head,
			(unsigned long long)id->overwritten, (unsigned long long)id->lost);
		fprintf(out,
			"# pmu_info at %llu (%llu bytes): attr type %u config %llu size %u "
			"sample_type 0x%llx%s clockid %d; pmu_descsz %u\n",
			(unsigned long long)bf->ext->pmu_offset,
			(unsigned long long)bf->ext->pmu_size, a->type,
			(unsigned long long)a->config, a->size, (unsigned long long)a->sample_type,
			a->context_switch ? " context_switch" : "", a->clockid,
			bf->pmu->info.pmu_descsz);
	}
	w.desc = malloc(sizeof(*w.desc));
	if (!w.desc)
		return -ENOMEM;
	w.next = tail;
	err = rk_bufile__for_each_at(bf, on_rec, &w);
	free(w.desc);
	/* A record that does not parse: said, with where, never a silent stop. */
	if (err == -EBADMSG)
		corrupt_note(bf, path, w.next, head);
	if (counts)
		*counts = w.c;
	if (json) {
		fputc(']', out);
		rk_loss_json(out, loss);
		fputs("}\n", out);
	}
	if (!json)
		fprintf(out,
			"# %llu records: %llu samples, %llu switch-in, %llu switch-out, %llu wakeups, "
			"%llu other%s%s\n",
			w.c.records, w.c.samples, w.c.switch_in, w.c.switch_out, w.c.wakeups,
			w.c.other, w.c.outside ? " (in the time window)" : "",
			w.c.stacks ? stacks_note(w.c.stacks) : "");
	if (!json && w.c.outside)
		fprintf(out, "# %llu records outside the time window, not shown\n", w.c.outside);
	if (!json)
		rk_loss_say(out, loss, "# ");
	return err;
}
