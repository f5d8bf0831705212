// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rec_evcpu.c - -e events per task or per CPU, and whose records are ours (see rec_evcpu.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "rec_evcpu.h"
#include "rec_src.h"
#include "rec_threads.h"
#include "util.h"

int rec_evcpu_mode(const struct rk_record_opts *o)
{
	int i;

	if (!o->nev || o->aux_size)
		return RK_EVCPU_TASK; /* no events; Intel PT: its AUX stays per task */
	if (o->all)
		return RK_EVCPU_ALL;
	if (!o->ncgroups || o->pid || o->argv)
		return RK_EVCPU_TASK; /* a target besides the cgroups needs its own events */
	for (i = 0; i < o->ncgroups; i++)
		if (!o->cgroups[i])
			return RK_EVCPU_TASK; /* a resumed session: the paths are not known */
	return RK_EVCPU_CGROUP;
}

/*
 * Whether --cgroup @i is inside (or the same as) another one given: its
 * tasks match that one's events already (perf's cgroup events count a
 * subtree), and a second event would sample them twice.
 */
static int cgroup_covered(const struct rk_record_opts *o, int i)
{
	int j;

	for (j = 0; j < o->ncgroups; j++) {
		size_t n = strlen(o->cgroups[j]);

		if (j == i)
			continue;
		if (!strcmp(o->cgroups[i], o->cgroups[j])) {
			if (j < i)
				return 1;
		} else if (!strncmp(o->cgroups[i], o->cgroups[j], n) && o->cgroups[i][n] == '/') {
			return 1;
		}
	}
	return 0;
}

/* The events of --cgroup @i on every CPU. */
static int open_cgroup(struct rk_rec *r, int i, char *msg, size_t len)
{
	int fd = open(r->o->cgroups[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

	if (fd < 0) {
		err = -errno;
		snprintf(msg, len, "cannot open --cgroup %s: %s", r->o->cgroups[i],
			 strerror(errno));
		return err;
	}
	/* The events hold the cgroup: the directory's fd is not needed after. */
	err = rk_drain_open_cpus(r->drain, fd, msg, len);
	close(fd);
	return err;
}

int rec_evcpu_open(struct rk_rec *r)
{
	char msg[512];
	int i, err = 0;

	if (r->evcpu == RK_EVCPU_ALL)
		err = rk_drain_open_cpus(r->drain, -1, msg, sizeof(msg));
	for (i = 0; r->evcpu == RK_EVCPU_CGROUP && !err && i < r->o->ncgroups; i++) {
		if (cgroup_covered(r->o, i))
			continue;
		err = open_cgroup(r, i, msg, sizeof(msg));
		/*
		 * perf_event bound to a v1 hierarchy: v2 directories are not
		 * its cgroups. Nothing opened yet: per-task events will do.
		 */
		if (err && rk_drain_nfds(r->drain) == 0) {
			rk_warn("%s; -e opened per task instead", msg);
			r->evcpu = RK_EVCPU_TASK;
			err = 0;
		}
	}
	if (err) {
		rk_err("%s", msg);
		return err;
	}
	r->st->evcpu = (__u32)r->evcpu;
	r->st->nfds = (__u32)rk_drain_nfds(r->drain);
	return 0;
}

int rec_evcpu_task(struct rk_rec *r, __u32 tid, char *msg, size_t len)
{
	int err;

	if (!r->drain || r->evcpu != RK_EVCPU_TASK)
		return 0;
	err = rk_drain_open_task(r->drain, (int)tid, msg, len);
	r->st->nfds = (__u32)rk_drain_nfds(r->drain);
	return err;
}

/* Whether BPF traces @tid now (its byte in traced, or its sched entry in pmu_info). */
static int bpf_traced(struct rk_rec *r, __u32 tid)
{
	struct rk_pmu_key key = { .tid = tid, .src = RK_SRC_SCHED };
	struct rk_pmu_entry e;

	if (!tid)
		return 0;
	if (r->traced.b && tid < r->traced.n)
		return __atomic_load_n(&r->traced.b[tid], __ATOMIC_ACQUIRE) != 0;
	return !bpf_map_lookup_elem(r->pmu_fd, &key, &e);
}

struct rk_thread *rec_evcpu_sample(struct rk_rec *r, __u32 pid, __u32 tid, __u64 time)
{
	struct rk_thread *t;

	if (tid == (__u32)-1) {
		/*
		 * A task past exit_notify(): its pid released, it still runs to
		 * its last switch and the kernel says -1. A per-task event had
		 * left it at perf_event_exit_task(), before: never sampled there.
		 */
		r->st->perf_untraced++;
		return NULL;
	}
	t = rec_thread_find(r, tid);
	if (t && t->refused)
		return NULL;
	if (t && !t->dead)
		return t;
	if (t && time <= t->last_ns) {
		/* Its own, after its files were finished (as with per-task events). */
		r->st->lost++;
		return NULL;
	}
	if (!bpf_traced(r, tid)) {
		/* Another task on the CPU: the kernel's idle, a thread nobody traces, ourselves. */
		r->st->perf_untraced++;
		return NULL;
	}
	/* Traced by BPF, not yet known here (its signal dropped): made now. */
	t = rec_thread_new(r, tid, pid, 0, "", rk_now_mono_ns());
	if (!t)
		r->st->lost++;
	return t;
}

int rec_evcpu_sideband_ours(struct rk_rec *r, __u32 tid, __u64 time)
{
	struct rk_thread *t = rec_thread_find(r, tid);

	if (t && t->refused)
		return 0; /* counted when refused */
	/* A live thread, one finished after the record (late), or one BPF traces. */
	if (tid != (__u32)-1 && ((t && (!t->dead || time <= t->last_ns)) || bpf_traced(r, tid)))
		return 1;
	r->st->perf_sb_untraced++;
	return 0;
}
