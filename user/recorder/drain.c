// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "bufile.h"
#include "drain.h"
#include "util.h"

struct id_slot {
	__u64 id;
	int idx; /* -1: empty */
};

struct cpu_ring {
	int fd; /* owner, -1 until the first event on this CPU */
	void *base;
	struct perf_event_mmap_page *pg;
	__u8 *data;
	__u64 size;
	__u8 *aux; /* the AUX ring, if this CPU's owner is an AUX event */
	__u64 aux_size;
	int mem; /* attached memory (tests): not ours to unmap */
};

struct rk_drain {
	const struct rk_evsel *evs;
	int nev;
	size_t ring_size;
	size_t aux_size;
	int aux_idx; /* the AUX source, -1 if none */
	const struct cpu_ring *cur; /* the ring being drained (rk_drain_aux_chunk) */
	int ncpus;
	struct cpu_ring *rings;
	int *fds;
	int nfds, capfds;
	struct id_slot *ids;
	size_t idcap, nids;
	__u64 tracking_id;
	union {
		struct perf_event_header h;
		__u8 b[65536];
	} rec;
};

struct rk_drain *rk_drain__new(const struct rk_evsel *evs, int n, size_t ring_size)
{
	struct rk_drain *d = calloc(1, sizeof(*d));
	size_t i;
	int c;

	if (!d)
		return NULL;
	d->evs = evs;
	d->nev = n;
	d->ring_size = ring_size;
	d->aux_idx = -1;
	for (c = 0; c < n; c++)
		if (evs[c].aux && d->aux_idx < 0)
			d->aux_idx = c;
	d->ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	if (d->ncpus < 1)
		d->ncpus = 1;
	d->rings = calloc((size_t)d->ncpus, sizeof(*d->rings));
	d->idcap = 1024;
	d->ids = malloc(d->idcap * sizeof(*d->ids));
	if (!d->rings || !d->ids) {
		free(d->rings);
		free(d->ids);
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < d->idcap; i++)
		d->ids[i].idx = -1;
	for (c = 0; c < d->ncpus; c++)
		d->rings[c].fd = -1;
	return d;
}

static size_t id_hash(__u64 id, size_t cap)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

int rk_drain_add_id(struct rk_drain *d, __u64 id, int idx)
{
	size_t i;

	if ((d->nids + 1) * 2 > d->idcap) {
		size_t cap = d->idcap * 2, k;
		struct id_slot *n = malloc(cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (k = 0; k < cap; k++)
			n[k].idx = -1;
		for (k = 0; k < d->idcap; k++) {
			if (d->ids[k].idx < 0)
				continue;
			for (i = id_hash(d->ids[k].id, cap); n[i].idx >= 0; i = (i + 1) & (cap - 1))
				;
			n[i] = d->ids[k];
		}
		free(d->ids);
		d->ids = n;
		d->idcap = cap;
	}
	for (i = id_hash(id, d->idcap); d->ids[i].idx >= 0; i = (i + 1) & (d->idcap - 1))
		if (d->ids[i].id == id)
			return 0;
	d->ids[i].id = id;
	d->ids[i].idx = idx;
	d->nids++;
	if (d->evs[idx].tracking && !d->tracking_id)
		d->tracking_id = id;
	return 0;
}

static int id_lookup(const struct rk_drain *d, __u64 id)
{
	size_t i;

	for (i = id_hash(id, d->idcap); d->ids[i].idx >= 0; i = (i + 1) & (d->idcap - 1))
		if (d->ids[i].id == id)
			return d->ids[i].idx;
	return -1;
}

__u64 rk_drain_tracking_id(const struct rk_drain *d)
{
	return d->tracking_id;
}

static int push_fd(struct rk_drain *d, int fd)
{
	if (d->nfds == d->capfds) {
		int cap = d->capfds ? d->capfds * 2 : 64;
		int *n = realloc(d->fds, (size_t)cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		d->fds = n;
		d->capfds = cap;
	}
	d->fds[d->nfds++] = fd;
	return 0;
}

static const char *open_hint(int err, const struct rk_evsel *ev)
{
	switch (err) {
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		return ev->entry.attr.type == PERF_TYPE_HARDWARE ?
			       "not supported on this machine (no hardware PMU for it)" :
			       "not supported by this kernel";
	case EACCES:
	case EPERM:
		return "permission denied (needs root or CAP_PERFMON; see "
		       "/proc/sys/kernel/perf_event_paranoid)";
	case EMFILE:
	case ENFILE:
		return "too many open files: one fd per thread, CPU and event is needed; raise "
		       "'ulimit -n' or trace fewer events";
	case EINVAL:
		return "invalid for this kernel (too high -F? see "
		       "/proc/sys/kernel/perf_event_max_sample_rate)";
	}
	return strerror(err);
}

int rk_drain_set_aux(struct rk_drain *d, size_t aux_size)
{
	if (aux_size < RK_PAGE_SIZE || aux_size & (aux_size - 1))
		return -EINVAL;
	d->aux_size = aux_size;
	return 0;
}

/* Map the AUX ring of @fd (the CPU's ring owner, an AUX event) after its data ring. */
static int map_aux(struct rk_drain *d, struct cpu_ring *r, int fd, int c, char *errbuf,
		   size_t errlen)
{
	void *p;
	int err;

	r->pg->aux_offset = RK_PAGE_SIZE + r->size;
	r->pg->aux_size = d->aux_size;
	/* Writable: the kernel honours aux_tail and never overwrites unread data. */
	p = mmap(NULL, d->aux_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)r->pg->aux_offset);
	if (p == MAP_FAILED) {
		err = errno;
		snprintf(errbuf, errlen, "cannot map the cpu %d AUX ring (%zu KiB): %s%s", c,
			 d->aux_size >> 10, strerror(err),
			 err == EPERM || err == ENOMEM ? " (locked memory: lower --cpu-aux)" : "");
		return -err;
	}
	r->aux = p;
	r->aux_size = d->aux_size;
	return 0;
}

/*
 * Open source @e on CPU @c for @pid (a tid, -1 for every task, or a cgroup
 * directory's fd with PERF_FLAG_PID_CGROUP in @flags); the CPU's first fd
 * owns its ring (and maps it), the others write into it.
 * Return: 0; 1 if the CPU is offline; -ESRCH if the task is gone; other
 * -errno (@errbuf says which event and what to do).
 */
static int open_one(struct rk_drain *d, int c, int e, int pid, unsigned long flags, int percpu,
		    char *errbuf, size_t errlen)
{
	__u8 attr[RK_PERF_ATTR_SIZE];
	struct rk_perf_event_attr *a = (void *)attr;
	struct cpu_ring *r = &d->rings[c];
	int fd, err;
	__u64 id;

	rk_evsel_to_attr(&d->evs[e], attr);
	if (r->fd < 0) {
		/* The ring owner wakes us at half full, not per record. */
		a->watermark = 1;
		a->wakeup_watermark = (__u32)(d->ring_size / 2);
	}
	if (percpu) {
		/*
		 * A CPU's event follows no task: nothing to inherit. The idle
		 * task is never traced: its cpu-clock samples would only be
		 * dropped (the files keep the attr as given, inherit=1).
		 */
		a->inherit = 0;
		if (a->type == PERF_TYPE_SOFTWARE)
			a->exclude_idle = 1;
	}
	fd = (int)syscall(SYS_perf_event_open, attr, pid, c, -1, flags | PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		err = errno;
		if (err == ENODEV && d->evs[e].entry.attr.type != PERF_TYPE_HARDWARE)
			return 1; /* an offline CPU */
		if (err == ESRCH && !percpu)
			return -ESRCH;
		if (percpu)
			snprintf(errbuf, errlen, "cannot open event '%s' (%s, cpu %d): %s",
				 d->evs[e].name,
				 flags & PERF_FLAG_PID_CGROUP ? "cgroup" : "all tasks", c,
				 open_hint(err, &d->evs[e]));
		else
			snprintf(errbuf, errlen, "cannot open event '%s' (tid %d, cpu %d): %s",
				 d->evs[e].name, pid, c, open_hint(err, &d->evs[e]));
		return -err;
	}
	if (push_fd(d, fd)) {
		close(fd);
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) || rk_drain_add_id(d, id, e)) {
		err = errno ? errno : ENOMEM;
		snprintf(errbuf, errlen, "PERF_EVENT_IOC_ID on '%s': %s", d->evs[e].name,
			 strerror(err));
		return -err;
	}
	if (r->fd >= 0) {
		if (!ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd))
			return 0;
		err = errno;
		snprintf(errbuf, errlen, "PERF_EVENT_IOC_SET_OUTPUT for '%s': %s", d->evs[e].name,
			 strerror(err));
		return -err;
	}
	r->base =
		mmap(NULL, RK_PAGE_SIZE + d->ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED) {
		err = errno;
		r->base = NULL;
		snprintf(errbuf, errlen, "cannot map the cpu %d ring (%zu KiB): %s%s", c,
			 d->ring_size >> 10, strerror(err),
			 err == EPERM ? " (locked memory limit: lower --cpu-ring)" : "");
		return -err;
	}
	r->fd = fd;
	r->pg = r->base;
	r->data = (__u8 *)r->base + RK_PAGE_SIZE;
	r->size = d->ring_size;
	return d->evs[e].aux ? map_aux(d, r, fd, c, errbuf, errlen) : 0;
}

/* Every source on every CPU for @pid (see open_one()). */
static int open_all(struct rk_drain *d, int pid, unsigned long flags, int percpu, char *errbuf,
		    size_t errlen)
{
	int c, i, e, err;

	if (d->aux_idx >= 0 && !d->aux_size) {
		snprintf(errbuf, errlen, "no AUX ring size set for '%s'", d->evs[d->aux_idx].name);
		return -EINVAL;
	}
	for (c = 0; c < d->ncpus; c++) {
		/* The AUX event opens first: only its fd can map the CPU's AUX ring. */
		for (i = 0; i < d->nev; i++) {
			e = d->aux_idx < 0 ? i : i == 0 ? d->aux_idx : i <= d->aux_idx ? i - 1 : i;
			err = open_one(d, c, e, pid, flags, percpu, errbuf, errlen);
			if (err < 0)
				return err;
		}
	}
	return 0;
}

int rk_drain_open_task(struct rk_drain *d, int tid, char *errbuf, size_t errlen)
{
	return open_all(d, tid, 0, 0, errbuf, errlen);
}

int rk_drain_open_cpus(struct rk_drain *d, int cgroup_fd, char *errbuf, size_t errlen)
{
	if (cgroup_fd >= 0)
		return open_all(d, cgroup_fd, PERF_FLAG_PID_CGROUP, 1, errbuf, errlen);
	return open_all(d, -1, 0, 1, errbuf, errlen);
}

int rk_drain_nfds(const struct rk_drain *d)
{
	return d->nfds;
}

int rk_drain_ring_fd(const struct rk_drain *d, int cpu)
{
	return cpu < d->ncpus ? d->rings[cpu].fd : -1;
}

int rk_drain_ncpus(const struct rk_drain *d)
{
	return d->ncpus;
}

int rk_drain_parse(const struct rk_drain *d, const struct perf_event_header *h,
		   const struct rk_evsel **ev, __u32 *pid, __u32 *tid)
{
	const __u8 *p = (const __u8 *)h;
	__u64 id;
	int idx;

	*ev = NULL;
	*pid = *tid = (__u32)-1;
	if (h->type == PERF_RECORD_SAMPLE) {
		/* IDENTIFIER, IP, TID: the first fields of every source's samples. */
		if (h->size < sizeof(*h) + 24)
			return -EBADMSG;
		memcpy(&id, p + sizeof(*h), 8);
		idx = id_lookup(d, id);
		if (idx >= 0)
			*ev = &d->evs[idx];
		memcpy(pid, p + sizeof(*h) + 16, 4);
		memcpy(tid, p + sizeof(*h) + 20, 4);
		return 0;
	}
	/* sample_id_all: IDENTIFIER is the last u64 of every other record. */
	if (h->size < sizeof(*h) + 8)
		return -EBADMSG;
	memcpy(&id, p + h->size - 8, 8);
	idx = id_lookup(d, id);
	if (idx < 0)
		return 0;
	*ev = &d->evs[idx];
	{
		size_t n = rk_sample_id_size((*ev)->entry.attr.sample_type);

		if (h->size < sizeof(*h) + n)
			return -EBADMSG;
		memcpy(pid, p + h->size - n, 4);
		memcpy(tid, p + h->size - n + 4, 4);
	}
	return 0;
}

long rk_drain_all(struct rk_drain *d, __u64 bound, rk_route_fn fn, void *ctx)
{
	long delivered = 0;
	int c;

	for (c = 0; c < d->ncpus; c++) {
		struct cpu_ring *r = &d->rings[c];
		__u64 head, tail, mask, aux_tail;

		if (!r->pg)
			continue;
		d->cur = r;
		aux_tail = r->aux ? r->pg->aux_tail : 0;
		mask = r->size - 1;
		/* Pairs with the kernel's smp_store_release() of data_head. */
		head = __atomic_load_n(&r->pg->data_head, __ATOMIC_ACQUIRE);
		tail = r->pg->data_tail;
		while (tail < head) {
			struct perf_event_header hdr;
			size_t off = tail & mask, first;
			const struct rk_evsel *ev;
			__u32 pid, tid;
			int parsed;

			first = r->size - off;
			if (first >= sizeof(hdr)) {
				memcpy(&hdr, r->data + off, sizeof(hdr));
			} else {
				memcpy(&hdr, r->data + off, first);
				memcpy((__u8 *)&hdr + first, r->data, sizeof(hdr) - first);
			}
			if (hdr.size < sizeof(hdr) || hdr.size > head - tail)
				break; /* cannot happen with a sane kernel: stop, do not loop */
			if (first >= hdr.size) {
				memcpy(d->rec.b, r->data + off, hdr.size);
			} else {
				memcpy(d->rec.b, r->data + off, first);
				memcpy(d->rec.b + first, r->data, hdr.size - first);
			}
			parsed = rk_drain_parse(d, &d->rec.h, &ev, &pid, &tid);
			if (!parsed && ev &&
			    rk_record_time(ev->entry.attr.sample_type, &d->rec.h) > bound)
				break; /* later: left in the ring, unconsumed */
			tail += hdr.size;
			if (!parsed) {
				fn(ctx, ev, &d->rec.h, pid, tid);
				delivered++;
			}
			/* The AUX ring is free up to the end of the last range handed out. */
			if (r->aux) {
				struct rk_aux_chunk ck;

				if (rk_drain_aux_chunk(d, &d->rec.h, &ck) != -EINVAL &&
				    ck.offset + ck.size > aux_tail)
					aux_tail = ck.offset + ck.size;
			}
		}
		d->cur = NULL;
		/*
		 * Free the space only after we copied (release orders the copies
		 * before it); pairs with the kernel's read of data_tail/aux_tail.
		 */
		if (r->aux)
			__atomic_store_n(&r->pg->aux_tail, aux_tail, __ATOMIC_RELEASE);
		__atomic_store_n(&r->pg->data_tail, tail, __ATOMIC_RELEASE);
	}
	return delivered;
}

int rk_drain_aux_chunk(const struct rk_drain *d, const struct perf_event_header *h,
		       struct rk_aux_chunk *ck)
{
	const struct cpu_ring *r = d->cur;
	__u64 off;

	memset(ck, 0, sizeof(*ck));
	if (h->type != PERF_RECORD_AUX || h->size < sizeof(*h) + 24)
		return -EINVAL;
	memcpy(&ck->offset, (const __u8 *)h + sizeof(*h), 8);
	memcpy(&ck->size, (const __u8 *)h + sizeof(*h) + 8, 8);
	memcpy(&ck->flags, (const __u8 *)h + sizeof(*h) + 16, 8);
	if (!r || !r->aux)
		return -ENODATA;
	if (ck->size > r->aux_size)
		return -EBADMSG;
	off = ck->offset & (r->aux_size - 1);
	ck->p[0] = r->aux + off;
	ck->n[0] = (size_t)(ck->size < r->aux_size - off ? ck->size : r->aux_size - off);
	ck->p[1] = r->aux;
	ck->n[1] = (size_t)ck->size - ck->n[0];
	return 0;
}

int rk_drain_attach_mem(struct rk_drain *d, int cpu, void *base, size_t data_size, void *aux,
			size_t aux_size)
{
	struct cpu_ring *r;

	if (cpu < 0 || cpu >= d->ncpus || (data_size & (data_size - 1)) ||
	    (aux_size & (aux_size - 1)))
		return -EINVAL;
	r = &d->rings[cpu];
	r->mem = 1;
	r->base = base;
	r->pg = base;
	r->data = (__u8 *)base + RK_PAGE_SIZE;
	r->size = data_size;
	r->aux = aux;
	r->aux_size = aux ? aux_size : 0;
	return 0;
}

void rk_drain__free(struct rk_drain *d)
{
	int c, i;

	if (!d)
		return;
	for (c = 0; c < d->ncpus; c++) {
		struct cpu_ring *r = &d->rings[c];

		if (r->mem)
			continue;
		if (r->aux)
			munmap(r->aux, r->aux_size);
		if (r->base)
			munmap(r->base, RK_PAGE_SIZE + r->size);
	}
	for (i = 0; i < d->nfds; i++)
		close(d->fds[i]);
	free(d->fds);
	free(d->rings);
	free(d->ids);
	free(d);
}
