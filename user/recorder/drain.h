/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * drain.h - the per-CPU kernel perf rings and their demultiplexing by tid.
 *
 * Events are opened per (target thread, CPU) with inherit=1, or once per CPU
 * for every task or a cgroup (rk_drain_open_cpus()); on each CPU
 * the first fd owns the ring and the others write into it
 * (PERF_EVENT_IOC_SET_OUTPUT). Draining copies each record out and hands it,
 * with the source that produced it (by PERF_SAMPLE_IDENTIFIER) and its
 * pid/tid, to a routing callback.
 */
#ifndef RK_DRAIN_H
#define RK_DRAIN_H

#include <linux/perf_event.h>
#include <linux/types.h>
#include <stddef.h>
#include "evsel.h"

struct rk_drain;

/**
 * typedef rk_route_fn - where a drained record goes.
 * @ev: the source (NULL if the id is unknown, e.g. a LOST record).
 * @pid, @tid: from the sample body or sample_id (-1 if none).
 */
typedef void (*rk_route_fn)(void *ctx, const struct rk_evsel *ev, const struct perf_event_header *h,
			    __u32 pid, __u32 tid);

/**
 * rk_drain__new() - set up for @n sources; no event is opened yet.
 * @ring_size: data bytes of each per-CPU kernel ring (power of two pages).
 * Return: NULL with errno set on failure.
 */
struct rk_drain *rk_drain__new(const struct rk_evsel *evs, int n, size_t ring_size);

/**
 * rk_drain_open_task() - open every source on every CPU for task @tid
 * (inherit=1 follows its future children).
 * @errbuf: a message for people on failure.
 * Return: 0; -ESRCH if the task is gone; other -errno from perf_event_open
 * or mmap (the message says which event and what to do).
 */
int rk_drain_open_task(struct rk_drain *d, int tid, char *errbuf, size_t errlen);

/**
 * rk_drain_open_cpus() - open every source once per CPU for every task
 * (@cgroup_fd < 0: pid -1, as perf record -a) or for the tasks of one
 * cgroup v2 subtree (@cgroup_fd: its directory, PERF_FLAG_PID_CGROUP, as
 * perf record -G). No inherit: a task's switches pay for no perf context of
 * its own. The records of tasks nobody traces arrive too: the caller drops
 * them by tid.
 * Return: 0, or -errno from perf_event_open or mmap (@errbuf says which).
 */
int rk_drain_open_cpus(struct rk_drain *d, int cgroup_fd, char *errbuf, size_t errlen);

/** rk_drain_nfds() - fds opened so far. */
int rk_drain_nfds(const struct rk_drain *d);

/** rk_drain_ring_fds() - the ring owner fd of each CPU (for epoll), -1 if none. */
int rk_drain_ring_fd(const struct rk_drain *d, int cpu);
int rk_drain_ncpus(const struct rk_drain *d);

/**
 * rk_drain_all() - drain every CPU ring into @fn, up to @bound: the first
 * record of a source timed after it stops its CPU's ring there, and it and
 * what follows stay for a later call (UINT64_MAX: everything).
 * Return: records delivered.
 */
long rk_drain_all(struct rk_drain *d, __u64 bound, rk_route_fn fn, void *ctx);

/**
 * rk_drain_parse() - find source, pid and tid of one record (exposed for tests).
 * Return: 0, or -EBADMSG if the record is too short for its sample_type.
 */
int rk_drain_parse(const struct rk_drain *d, const struct perf_event_header *h,
		   const struct rk_evsel **ev, __u32 *pid, __u32 *tid);

/** rk_drain_id() - record the id -> source mapping (tests, synthesized records). */
int rk_drain_add_id(struct rk_drain *d, __u64 id, int evsel_idx);

/** rk_drain_tracking_id() - an id of the tracking source (for synthesized records). */
__u64 rk_drain_tracking_id(const struct rk_drain *d);

/**
 * rk_drain_set_aux() - the AUX ring size of each CPU (needed when a source
 * is an AUX event, before the first rk_drain_open_task()).
 * Return: 0, or -EINVAL (not a power of two of at least a page).
 */
int rk_drain_set_aux(struct rk_drain *d, size_t aux_size);

/**
 * struct rk_aux_chunk - the AUX bytes a PERF_RECORD_AUX names, in the CPU's
 * AUX ring: @p[0]/@n[0], then @p[1]/@n[1] if the range wraps.
 * @offset, @size, @flags: the record's fields (PERF_AUX_FLAG_*).
 */
struct rk_aux_chunk {
	const __u8 *p[2];
	size_t n[2];
	__u64 offset, size, flags;
};

/**
 * rk_drain_aux_chunk() - for a PERF_RECORD_AUX being routed: where its bytes
 * are. Valid only inside the route callback; the ring space is freed
 * (aux_tail) after the callback returns.
 * Return: 0; -EINVAL (not an AUX record); -ENODATA (the CPU has no AUX
 * ring: @ck has the fields only); -EBADMSG (a range larger than the ring).
 */
int rk_drain_aux_chunk(const struct rk_drain *d, const struct perf_event_header *h,
		       struct rk_aux_chunk *ck);

/**
 * rk_drain_attach_mem() - use memory as CPU @cpu's ring (tests: a synthetic
 * user page + data ring at @base, and an AUX ring at @aux, may be NULL).
 * Return: 0, or -EINVAL.
 */
int rk_drain_attach_mem(struct rk_drain *d, int cpu, void *base, size_t data_size, void *aux,
			size_t aux_size);

/** rk_drain__free() - close fds, unmap rings; NULL is a no-op. */
void rk_drain__free(struct rk_drain *d);

#endif /* RK_DRAIN_H */
