// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * show.c - decode a buffer with nothing but the file: the attr at pmu_offset
 * says what sample_id every record carries.
 */
#include <errno.h>
#include <string.h>
#include "show.h"
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
	case RK_THREAD_STOPPED:
		return "stopped";
	}
	return "unknown";
}

struct walk {
	FILE *out;
	const struct rk_bufile *bf;
	int json;
	struct rk_show_counts c;
	char comm[RK_COMM_LEN];
};

/* The sample_id fields we print, parsed from the end of a non-sample record. */
struct sid {
	int have_tid, have_time, have_cpu;
	__u32 pid, tid, cpu;
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
		s->have_cpu = 1;
	}
	return 0;
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
	}
	return "PERF_RECORD_UNKNOWN";
}

static int on_rec(const struct perf_event_header *h, void *ctx)
{
	struct walk *w = ctx;
	char detail[96] = "";
	struct sid s;

	w->c.records++;
	parse_sample_id(w->bf, h, &s);
	if (s.have_tid && s.tid != w->bf->ident->tid)
		w->c.foreign++;
	switch (h->type) {
	case PERF_RECORD_SWITCH:
		if (h->misc & PERF_RECORD_MISC_SWITCH_OUT) {
			w->c.switch_out++;
			snprintf(detail, sizeof(detail), "OUT%s",
				 h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT ? " preempt" : "");
		} else {
			w->c.switch_in++;
			snprintf(detail, sizeof(detail), "IN");
		}
		break;
	case PERF_RECORD_COMM:
		w->c.other++;
		if (h->size >= sizeof(*h) + 8 + RK_COMM_LEN) {
			memcpy(w->comm, (const __u8 *)h + sizeof(*h) + 8, RK_COMM_LEN);
			w->comm[RK_COMM_LEN - 1] = '\0';
		}
		snprintf(detail, sizeof(detail), "%s%s", w->comm,
			 h->misc & PERF_RECORD_MISC_COMM_EXEC ? " (exec)" : "");
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		w->c.other++;
		if (h->size >= sizeof(*h) + 16) {
			__u32 v[4];

			memcpy(v, (const __u8 *)h + sizeof(*h), sizeof(v));
			snprintf(detail, sizeof(detail), "(%u:%u):(%u:%u)", v[0], v[2], v[1], v[3]);
		}
		break;
	default:
		w->c.other++;
		snprintf(detail, sizeof(detail), "type %u size %u", h->type, h->size);
	}
	if (w->json) {
		fprintf(w->out, "{\"type\":\"%s\",\"misc\":%u,\"size\":%u", type_name(h->type),
			h->misc, h->size);
		if (s.have_tid)
			fprintf(w->out, ",\"pid\":%u,\"tid\":%u", s.pid, s.tid);
		if (s.have_time)
			fprintf(w->out, ",\"time\":%llu", (unsigned long long)s.time);
		if (s.have_cpu)
			fprintf(w->out, ",\"cpu\":%u", s.cpu);
		fprintf(w->out, ",\"detail\":");
		rk_json_str(w->out, detail);
		fprintf(w->out, "}\n");
		return 0;
	}
	/* perf script's layout: comm tid [cpu] secs.usecs: record details */
	fprintf(w->out, "%16s %6u [%03u] %llu.%09llu: %s %s\n", w->comm, s.have_tid ? s.tid : 0,
		s.have_cpu ? s.cpu : 0, (unsigned long long)(s.time / 1000000000ull),
		(unsigned long long)(s.time % 1000000000ull), type_name(h->type), detail);
	return 0;
}

int rk_show(FILE *out, const struct rk_bufile *bf, const char *path, int json,
	    struct rk_show_counts *counts)
{
	const struct rk_thread_ident *id = bf->ident;
	const struct rk_perf_event_attr *a = &bf->pmu->attr;
	struct walk w = { .out = out, .bf = bf, .json = json };
	__u64 head = __atomic_load_n(&bf->pg->data_head, __ATOMIC_ACQUIRE);
	__u64 tail = __atomic_load_n(&bf->pg->data_tail, __ATOMIC_ACQUIRE);
	int err;

	memcpy(w.comm, id->comm, RK_COMM_LEN);
	w.comm[RK_COMM_LEN - 1] = '\0';
	if (json) {
		fprintf(out, "{\"file\":");
		rk_json_str(out, path);
		fprintf(out, ",\"tid\":%u,\"tgid\":%u,\"ns_tid\":%u,\"uid\":%u,\"comm\":", id->tid,
			id->tgid, id->ns_tid, id->uid);
		rk_json_str(out, w.comm);
		fprintf(out,
			",\"state\":\"%s\",\"exit_code\":%d,\"start_ns\":%llu,\"exit_ns\":%llu,"
			"\"data_size\":%llu,\"data_head\":%llu,\"data_tail\":%llu,"
			"\"overwritten\":%llu,\"lost\":%llu,\"pmu_offset\":%llu,\"pmu_size\":%llu,"
			"\"attr\":{\"type\":%u,\"size\":%u,\"config\":%llu,\"sample_type\":%llu,"
			"\"context_switch\":%u,\"clockid\":%d},\"pmu_descsz\":%u}\n",
			rk_thread_state_name(id->state), id->exit_code,
			(unsigned long long)id->start_ns, (unsigned long long)id->exit_ns,
			(unsigned long long)bf->pg->data_size, (unsigned long long)head,
			(unsigned long long)tail, (unsigned long long)id->overwritten,
			(unsigned long long)id->lost, (unsigned long long)bf->ext->pmu_offset,
			(unsigned long long)bf->ext->pmu_size, a->type, a->size,
			(unsigned long long)a->config, (unsigned long long)a->sample_type,
			a->context_switch, a->clockid, bf->pmu->info.pmu_descsz);
	} else {
		fprintf(out, "# file: %s\n", path);
		fprintf(out, "# thread: tid %u (ns tid %u) tgid %u uid %u comm %s, %s", id->tid,
			id->ns_tid, id->tgid, id->uid, w.comm, rk_thread_state_name(id->state));
		if (id->state == RK_THREAD_EXITED || id->state == RK_THREAD_EXITING)
			fprintf(out, " (exit_code 0x%x)", (unsigned int)id->exit_code);
		fprintf(out,
			"\n# data: %llu bytes ring, %llu in use [tail %llu, head %llu), "
			"%llu records overwritten, %llu lost\n",
			(unsigned long long)bf->pg->data_size, (unsigned long long)(head - tail),
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
	err = rk_bufile__for_each(bf, on_rec, &w);
	if (counts)
		*counts = w.c;
	if (!json)
		fprintf(out, "# %llu records: %llu switch-in, %llu switch-out, %llu other\n",
			w.c.records, w.c.switch_in, w.c.switch_out, w.c.other);
	return err;
}
