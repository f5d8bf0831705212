// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rec_bpf.c - the recorder's the BPF side (see rec_bpf.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rec_bpf.h"
#include "rec_irqctx.h"
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include "util.h"
#include "rec_src.h"
/*
 * Open the BPF object sized for this recording (ringbuf, map entries, the
 * sources per thread), load it and pin its maps.
 * Return: 0, or -errno (reported).
 */
static unsigned long tid_maps_size(void);
static int sw_size(struct rk_rec *r, uint64_t bytes);

/*
 * --wakeups: where the wakeup programs find preempt_count, to tell an
 * interrupt's wakeup from a task's. Without it the records say neither
 * (RK_WAKEUP_CTX clear), as older files: said once, not an error.
 */
static void wakeup_context_setup(struct rk_rec *r)
{
	__s64 off = 0;
	int err = rec_preempt_count_from_rq(&off);

	if (err && err != -ENOENT)
		rk_warn("cannot read this kernel's BTF (%s): wakeups will not say whether an "
			"interrupt made them",
			strerror(-err));
#if defined(__x86_64__)
	else if (err)
		rk_warn("no runqueues and preempt_count in this kernel's BTF: wakeups will not say "
			"whether an interrupt made them");
#endif
	r->skel->rodata->cfg_pc_from_rq = err ? 0 : off;
}

/*
 * The maps the loader maps, each on a descriptor of its own (the mappings
 * outlive the skeleton's). Return: 0, or -errno of the dup() that failed
 * (none taken then): EMFILE, not a missing map.
 */
static int dup_maps(const struct rk_rec *r, int fds[5])
{
	const struct bpf_map *m[5] = { r->skel->maps.pin_asked, r->skel->maps.traced,
				       r->skel->maps.swring, r->skel->maps.swpos,
				       r->skel->maps.stkring };
	int i, err = 0;

	for (i = 0; i < 5; i++) {
		fds[i] = dup(bpf_map__fd(m[i]));
		if (fds[i] < 0 && !err)
			err = -errno;
	}
	for (i = 0; err && i < 5; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return err;
}

int rec_bpf_fds_needed(void)
{
	/* Counted from the skeleton: what the object holds, as it grows. */
	const size_t nmaps = sizeof(((struct ringkeeper_bpf *)0)->maps) / sizeof(void *);
	const size_t nprogs = sizeof(((struct ringkeeper_bpf *)0)->progs) / sizeof(void *);
	const size_t nlinks = sizeof(((struct ringkeeper_bpf *)0)->links) / sizeof(void *);

	/* Its BTF, the 5 maps dup_maps() maps, each program's for its statistics. */
	return (int)(nmaps + nprogs + nlinks + 1 + 5 + RK_NPROGS);
}

int rec_bpf_load(struct rk_rec *r)
{
	const struct rk_record_opts *o = r->o;
	__u32 nsrc = 1 + (__u32)o->nev;
	unsigned long tids;
	int err, fds[5];

	libbpf_set_print(rec_libbpf_print);
	r->skel = ringkeeper_bpf__open();
	if (!r->skel) {
		err = -errno;
		rk_err("cannot open the BPF object: %s", strerror(errno));
		return err;
	}
	r->skel->rodata->cfg_inherit = o->inherit ? 1 : 0;
	r->skel->rodata->cfg_nr_src = nsrc;
	r->skel->rodata->cfg_all = o->all ? 1 : 0;
	r->skel->rodata->cfg_ncgroups = (__u32)o->ncgroups;
	r->skel->rodata->cfg_wakeup_watermark = o->ringbuf_size / 4;
	r->skel->rodata->cfg_wakeups = o->wakeups ? 1 : 0;
	r->skel->rodata->cfg_trigger_delay_ns = o->trig.delay_ns;
	r->skel->rodata->cfg_trigger_kill = o->trig.killed ? 1 : 0;
	if (o->wakeups)
		wakeup_context_setup(r);
	/* Not attached unless asked for: a wakeup's cost is every wakeup in the system's. */
	if (!o->wakeups && !o->trig.delay_ns) {
		bpf_program__set_autoload(r->skel->progs.rk_sched_waking, false);
		bpf_program__set_autoload(r->skel->progs.rk_sched_wakeup_new, false);
	}
	if (!o->trig.killed)
		bpf_program__set_autoload(r->skel->progs.rk_signal_generate, false);
	bpf_map__set_max_entries(r->skel->maps.signals, (__u32)o->ringbuf_size);
	/*
	 * --max-threads caps the live traced threads: a full map makes the
	 * fork hook leave the child out (counted as "children not added").
	 */
	bpf_map__set_max_entries(r->skel->maps.pmu_info,
				 (o->max_threads ? o->max_threads : RK_MAX_ENTRIES) * nsrc);
	/*
	 * A byte per possible tid (pid_max now; a tid above it is locked at
	 * the drain tick, and looked up in pmu_info at its switches), and
	 * 8 bytes per tid for creds up to RK_CREDS_MAX_TIDS (8 MiB; a larger
	 * tid keeps them in task-local storage).
	 */
	tids = tid_maps_size();
	bpf_map__set_max_entries(r->skel->maps.pin_asked,
				 (__u32)((tids + RK_ASKED_PER - 1) / RK_ASKED_PER));
	bpf_map__set_max_entries(r->skel->maps.traced,
				 (__u32)((tids + RK_ASKED_PER - 1) / RK_ASKED_PER));
	bpf_map__set_max_entries(r->skel->maps.creds,
				 (__u32)(tids < RK_CREDS_MAX_TIDS ? tids : RK_CREDS_MAX_TIDS));
	bpf_map__set_max_entries(
		r->skel->maps.runnable,
		o->trig.delay_ns ? (__u32)(tids < RK_CREDS_MAX_TIDS ? tids : RK_CREDS_MAX_TIDS) :
				   1);
	/*
	 * The dumping task's cwd for the core handler is walked with
	 * bpf_loop() (5.17+, in every program type).
	 */
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_SOCKET_FILTER, BPF_FUNC_loop, NULL) != 1)
		bpf_program__set_autoload(r->skel->progs.rk_dump_cwd, false);
	err = sw_size(r, o->ringbuf_size);
	if (!err)
		err = rec_offcpu_size(r);
	if (err)
		return err;
	err = ringkeeper_bpf__load(r->skel);
	if (err) {
		rk_err("cannot load the BPF programs: %s (the verifier log is above; "
		       "kernel needs BTF and tp_btf support, 5.8+)",
		       strerror(-err));
		return err;
	}
	r->pmu_fd = bpf_map__fd(r->skel->maps.pmu_info);
	r->cnt_fd = bpf_map__fd(r->skel->maps.counters);
	r->sig_fd = bpf_map__fd(r->skel->maps.signals);
	r->self_fd = bpf_map__fd(r->skel->maps.self);
	r->held_fd = bpf_map__fd(r->skel->maps.renames_held);
	err = dup_maps(r, fds);
	if (!err)
		err = rec_bytes_map(&r->asked, fds[0], 1);
	if (!err)
		err = rec_bytes_map(&r->traced, fds[1], 1);
	if (!err)
		err = rec_swring_map(r, fds[2], fds[3]);
	if (!err)
		err = rec_offcpu_map(r, fds[4]);
	if (err) {
		rk_err("cannot map pin_asked, traced or the switch rings: %s", strerror(-err));
		return err;
	}
	return rec_pin_maps(r);
}

/* /proc/sys/kernel/pid_max, or the kernel's limit (PID_MAX_LIMIT, 64-bit) if unreadable. */
unsigned long rec_pid_max(void)
{
	unsigned long v = 0;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v && v <= 4194304 ? v : 4194304;
}

/*
 * How many tids the per-tid maps cover: pid_max, or fewer with
 * RINGKEEPER_TEST_TID_MAPS (tests: so most tids take the paths of a tid
 * beyond them). It can only make them smaller.
 */
static unsigned long tid_maps_size(void)
{
	const char *e = getenv("RINGKEEPER_TEST_TID_MAPS");
	unsigned long v = rec_pid_max(), t;
	char *end;

	if (e && *e) {
		errno = 0;
		t = strtoul(e, &end, 10);
		if (!errno && !*end && t && t < v)
			v = t;
	}
	return v;
}

/*
 * The switch rings: as many records per possible CPU as fit @bytes (the
 * ringbuf's size, --ringbuf-size) over all CPUs, a power of two, at least
 * 64; the loader is woken at a quarter full (as by the ringbuf).
 */
static int sw_size(struct rk_rec *r, uint64_t bytes)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t want;
	__u32 slots = 64;

	if (ncpu <= 0) {
		rk_err("cannot count the possible CPUs: %s", strerror(-ncpu));
		return ncpu ? ncpu : -EINVAL;
	}
	want = bytes / (uint64_t)ncpu / sizeof(struct rk_swrec);
	while ((uint64_t)slots * 2 <= want && (uint64_t)slots * 2 * (uint64_t)ncpu <= (1u << 30))
		slots *= 2;
	r->skel->rodata->cfg_sw_slots = slots;
	r->skel->rodata->cfg_sw_wake = slots / 4;
	bpf_map__set_max_entries(r->skel->maps.swring, slots * (__u32)ncpu);
	bpf_map__set_max_entries(r->skel->maps.swpos, 2 * (__u32)ncpu);
	return 0;
}

int rec_offcpu_size(struct rk_rec *r)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t want;
	__u32 slots = 64;

	if (ncpu <= 0) {
		rk_err("cannot count the possible CPUs: %s", strerror(-ncpu));
		return ncpu ? ncpu : -EINVAL;
	}
	r->skel->rodata->cfg_offcpu = r->o->offcpu ? 1 : 0;
	if (!r->o->offcpu) {
		bpf_map__set_max_entries(r->skel->maps.stkring, 1);
		return 0;
	}
	want = r->o->ringbuf_size / (uint64_t)ncpu / sizeof(struct rk_stack);
	while ((uint64_t)slots * 2 <= want && (uint64_t)slots * 2 * (uint64_t)ncpu <= (1u << 20))
		slots *= 2;
	r->skel->rodata->cfg_st_slots = slots;
	r->skel->rodata->cfg_st_wake = slots / 4;
	bpf_map__set_max_entries(r->skel->maps.stkring, slots * (__u32)ncpu);
	return 0;
}

int rec_offcpu_map(struct rk_rec *r, int fd)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	void *p;

	if (fd < 0)
		return 0;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	else if (ncpu <= 0 || info.value_size != sizeof(struct rk_stack) ||
		 !(info.map_flags & BPF_F_MMAPABLE))
		err = -EINVAL;
	/* One slot in all (recorded without --offcpu): nothing to read, whatever the CPUs. */
	else if (info.max_entries > 1 && info.max_entries % (__u32)ncpu)
		err = -EINVAL;
	/* One slot in all: recorded without --offcpu, nothing to read. */
	if (!err && info.max_entries > (__u32)ncpu) {
		r->st_ring_len = (size_t)info.max_entries * sizeof(struct rk_stack);
		p = mmap(NULL, r->st_ring_len, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			err = -errno;
		} else {
			r->st_ring_map = p;
			err = rk_swring_set_stacks(&r->sw, p, info.max_entries / (__u32)ncpu);
		}
	}
	close(fd);
	if (err)
		rk_err("cannot map the stack rings (record --offcpu): %s", strerror(-err));
	return err;
}

void rec_offcpu_unmap(struct rk_rec *r)
{
	if (r->st_ring_map)
		munmap(r->st_ring_map, r->st_ring_len);
	r->st_ring_map = NULL;
	r->st_ring_len = 0;
}

/* The signal ringbuf (r->sig_fd) mapped as libbpf's consumer maps one, into @rb. */
static int map_ringbuf(struct rk_rec *r, struct rk_rbuf *rb)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	memset(&info, 0, sizeof(info));
	if (r->sig_fd < 0)
		return -ENOENT;
	if (bpf_obj_get_info_by_fd(r->sig_fd, &info, &len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_RINGBUF || !info.max_entries ||
	    (info.max_entries & (info.max_entries - 1)))
		return -EINVAL;
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, r->sig_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->rb_cons_map = p;
	/* The producer page, then the data twice in a row (a record across the end reads on). */
	r->rb_prod_len = page + 2 * (size_t)info.max_entries;
	p = mmap(NULL, r->rb_prod_len, PROT_READ, MAP_SHARED, r->sig_fd, (off_t)page);
	if (p == MAP_FAILED)
		return -errno;
	r->rb_prod_map = p;
	rb->cons = r->rb_cons_map;
	rb->prod = r->rb_prod_map;
	rb->data = (const __u8 *)r->rb_prod_map + page;
	rb->size = info.max_entries;
	return 0;
}

/*
 * Map the signal rings: the switch rings (@ring_fd swring, @pos_fd swpos,
 * or -1: none; both taken) and the ringbuf (r->sig_fd, kept), and read them
 * from where their consumer positions are. The switch rings' geometry is
 * the maps' own, checked against each other and the possible CPUs.
 * Return: 0, -ENOENT (not all there), -EINVAL (not ours), -errno.
 */
int rec_swring_map(struct rk_rec *r, int ring_fd, int pos_fd)
{
	struct bpf_map_info ri, pi;
	__u32 len = sizeof(ri), slots = 0;
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	struct rk_rbuf rb;
	void *p;

	memset(&ri, 0, sizeof(ri));
	memset(&pi, 0, sizeof(pi));
	if (ring_fd < 0 || pos_fd < 0)
		err = -ENOENT;
	else if (bpf_obj_get_info_by_fd(ring_fd, &ri, &len) ||
		 (len = sizeof(pi), bpf_obj_get_info_by_fd(pos_fd, &pi, &len)))
		err = -errno;
	else if (ncpu <= 0 || ri.value_size != sizeof(struct rk_swrec) ||
		 pi.value_size != sizeof(struct rk_swpos) || pi.max_entries != 2 * (__u32)ncpu ||
		 !(ri.map_flags & BPF_F_MMAPABLE) || !(pi.map_flags & BPF_F_MMAPABLE) ||
		 ri.max_entries % (__u32)ncpu)
		err = -EINVAL;
	else
		slots = ri.max_entries / (__u32)ncpu;
	if (!err) {
		r->sw_ring_len = (size_t)ri.max_entries * sizeof(struct rk_swrec);
		p = mmap(NULL, r->sw_ring_len, PROT_READ, MAP_SHARED, ring_fd, 0);
		r->sw_ring_map = p == MAP_FAILED ? NULL : p;
		r->sw_pos_len = (size_t)pi.max_entries * sizeof(struct rk_swpos);
		p = mmap(NULL, r->sw_pos_len, PROT_READ | PROT_WRITE, MAP_SHARED, pos_fd, 0);
		r->sw_pos_map = p == MAP_FAILED ? NULL : p;
		if (!r->sw_ring_map || !r->sw_pos_map)
			err = -errno;
	}
	if (!err)
		err = map_ringbuf(r, &rb);
	if (!err)
		err = rk_swring_init(&r->sw, r->sw_ring_map, r->sw_pos_map, (__u32)ncpu, slots,
				     &rb);
	if (ring_fd >= 0)
		close(ring_fd);
	if (pos_fd >= 0)
		close(pos_fd);
	if (err)
		rec_swring_unmap(r);
	return err;
}

void rec_swring_unmap(struct rk_rec *r)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	rec_offcpu_unmap(r);
	rk_swring_free(&r->sw);
	if (r->sw_ring_map)
		munmap(r->sw_ring_map, r->sw_ring_len);
	if (r->sw_pos_map)
		munmap(r->sw_pos_map, r->sw_pos_len);
	if (r->rb_cons_map)
		munmap(r->rb_cons_map, page);
	if (r->rb_prod_map)
		munmap(r->rb_prod_map, r->rb_prod_len);
	r->sw_ring_map = r->sw_pos_map = r->rb_cons_map = r->rb_prod_map = NULL;
}

/*
 * Take @fd (pin_asked or traced, or -1: none) and map it into @m. With
 * @zero, every byte starts at 0: for pin_asked ("wake us"), since what a
 * killed recorder left there is not our state. traced is kept: it is
 * pmu_info's, which the programs kept up to date meanwhile.
 * Return: 0 (also with no map), -errno.
 */
int rec_bytes_map(struct rk_bytes *m, int fd, int zero)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	void *p;

	m->fd = fd;
	if (fd < 0)
		return 0;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.value_size != sizeof(struct rk_asked) || !info.max_entries)
		return -EINVAL;
	p = mmap(NULL, (size_t)info.max_entries * sizeof(struct rk_asked), PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->b = p;
	m->n = (size_t)info.max_entries * RK_ASKED_PER;
	if (zero)
		memset(m->b, 0, m->n);
	return 0;
}

void rec_bytes_unmap(struct rk_bytes *m)
{
	if (m->b)
		munmap(m->b, m->n);
	m->b = NULL;
	m->n = 0;
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
}

/*
 * @tid is in pmu_info now (@on, after its entries were added) or is about
 * to leave it (before they are deleted): sched_switch's byte for it follows.
 * A tid beyond the map: the programs look it up in pmu_info.
 */
void rec_set_traced(struct rk_rec *r, __u32 tid, int on)
{
	if (r->traced.b && tid < r->traced.n)
		__atomic_store_n(&r->traced.b[tid], (__u8)(on ? 1 : 0), __ATOMIC_RELEASE);
}

int rec_tid_traced(struct rk_rec *r, __u32 tid)
{
	struct rk_pmu_key key = { .tid = tid, .src = RK_SRC_SCHED };
	struct rk_pmu_entry v;

	/* Pairs with BPF's store after the final switch-out's record (tid_set_traced()). */
	if (r->traced.b && tid < r->traced.n)
		return __atomic_load_n(&r->traced.b[tid], __ATOMIC_ACQUIRE) != 0;
	return !bpf_map_lookup_elem(r->pmu_fd, &key, &v);
}

/*
 * @tid's pin_asked flag, NULL if none; set to 0 (wake us at its next
 * switch-in), or with --min-run-us to 1: a new thread's first run is not
 * locked (the pool's run_short()), so waking us for it only costs.
 */
__u8 *rec_asked_flag(struct rk_rec *r, __u32 tid)
{
	__u8 *f;

	if (!r->asked.b || tid >= r->asked.n)
		return NULL;
	f = &r->asked.b[tid];
	__atomic_store_n(f, r->o->min_run_ns ? 1 : 0, __ATOMIC_RELAXED);
	return f;
}

const char *const rec_link_names[RK_NLINKS] = { "link_sched_switch",
						"link_fork",
						"link_exec",
						"link_exit",
						"link_signal_deliver",
						"link_task_rename",
						"link_cgroup_attach",
						"link_sched_waking",
						"link_sched_wakeup_new",
						"link_signal_generate",
						"link_dump_cwd" };

int rec_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !rk_verbose)
		return 0;
	if (level == LIBBPF_INFO && !rk_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int rec_ensure_fs(const char *path, long magic, const char *type)
{
	struct statfs sfs;

	if (!statfs(path, &sfs) && sfs.f_type == magic)
		return 0;
	if (mount(type, path, type, 0, NULL)) {
		int err = -errno;

		rk_err("%s is not mounted at %s and mounting it failed: %s "
		       "(run: mount -t %s %s %s)",
		       type, path, strerror(errno), type, type, path);
		return err;
	}
	rk_info("mounted %s at %s", type, path);
	return 0;
}

int rec_take_lock(struct rk_rec *r)
{
	char buf[32];
	int fd = open(RK_LOCK_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0) {
		rk_err("cannot open %s: %s", RK_LOCK_FILE, strerror(errno));
		return -errno;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

		buf[n > 0 ? n : 0] = '\0';
		rk_err("another ringkeeper record is running (pid %s); one recorder owns %s at a time",
		       n > 0 ? strtok(buf, "\n") : "?", RK_BPFFS_DIR);
		close(fd);
		return -EBUSY;
	}
	if (ftruncate(fd, 0) == 0) {
		int n = snprintf(buf, sizeof(buf), "%d\n", getpid());

		if (pwrite(fd, buf, (size_t)n, 0) != n)
			rk_info("cannot write %s", RK_LOCK_FILE);
	}
	r->lock_fd = fd;
	return 0;
}

/*
 * Detach the programs: a pinned link holds them attached, so the pins go
 * first, then our link fds (closed by the skeleton or by the caller).
 */
void rec_unpin_links(void)
{
	char path[128];
	size_t i;

	for (i = 0; i < sizeof(rec_link_names) / sizeof(rec_link_names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", RK_BPFFS_DIR, rec_link_names[i]);
		unlink(path);
	}
}

/* The maps pinned in RK_BPFFS_DIR, in the order rec_pin_maps() pins them. */
static const char *const pinned_maps[] = { "pmu_info",	   "counters", "signals", "self",
					   "pin_asked",	   "traced",   "swring",  "swpos",
					   "renames_held", "stkring",  "dump_cwd" };

/* Our pins (links, then maps) out of RK_BPFFS_DIR; the directory stays. */
static void unpin_all(void)
{
	char path[128];
	size_t i;

	rec_unpin_links();
	for (i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", RK_BPFFS_DIR, pinned_maps[i]);
		unlink(path);
	}
}

void rec_unpin_maps(void)
{
	unpin_all();
	rmdir(RK_BPFFS_DIR);
}

/*
 * Links and the signal ringbuf pinned too: if we are killed, the programs go
 * on and their signals wait in the ringbuf for `record --resume`.
 */
int rec_pin_links(struct rk_rec *r)
{
	struct bpf_link *links[] = {
		r->skel->links.rk_sched_switch,
		r->skel->links.rk_fork,
		r->skel->links.rk_exec,
		r->skel->links.rk_exit,
		r->skel->links.rk_signal_deliver,
		r->skel->links.rk_task_rename,
		r->skel->links.rk_cgroup_attach,
		r->skel->links.rk_sched_waking,
		r->skel->links.rk_sched_wakeup_new,
		r->skel->links.rk_signal_generate,
		r->skel->links.rk_dump_cwd,
	};
	char path[128];
	size_t i;
	int err;

	_Static_assert(sizeof(links) / sizeof(links[0]) == RK_NLINKS, "a name for every link");
	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		if (!links[i])
			continue; /* not attached (no --wakeups) */
		snprintf(path, sizeof(path), "%s/%s", RK_BPFFS_DIR, rec_link_names[i]);
		err = bpf_link__pin(links[i], path);
		if (err) {
			rk_err("cannot pin %s: %s", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

int rec_pin_maps(struct rk_rec *r)
{
	struct bpf_map *maps[] = {
		r->skel->maps.pmu_info, r->skel->maps.counters,	 r->skel->maps.signals,
		r->skel->maps.self,	r->skel->maps.pin_asked, r->skel->maps.traced,
		r->skel->maps.swring,	r->skel->maps.swpos,	 r->skel->maps.renames_held,
		r->skel->maps.stkring,	r->skel->maps.dump_cwd,
	};
	char path[128];
	size_t i;
	int err = 0;

	_Static_assert(sizeof(maps) / sizeof(maps[0]) ==
			       sizeof(pinned_maps) / sizeof(pinned_maps[0]),
		       "a name for every pinned map");

	if (mkdir(RK_BPFFS_DIR, 0700) && errno != EEXIST) {
		err = -errno;
		rk_err("cannot create %s: %s", RK_BPFFS_DIR, strerror(errno));
		return err;
	}
	/* We hold the lock: anything pinned here is a dead recorder's. */
	if (!access(RK_BPFFS_DIR "/signals", F_OK))
		rk_warn("removing what an earlier recorder left pinned in %s (kept with --keep, "
			"or left by a recorder that was killed: such a session can be continued "
			"with record --resume instead)",
			RK_BPFFS_DIR);
	unpin_all();
	for (i = 0; !err && i < sizeof(maps) / sizeof(maps[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", RK_BPFFS_DIR, pinned_maps[i]);
		err = bpf_map__pin(maps[i], path);
	}
	if (err) {
		rk_err("cannot pin maps in %s: %s", RK_BPFFS_DIR, strerror(-err));
		rec_unpin_maps();
		return err;
	}
	r->maps_pinned = 1;
	return 0;
}

/*
 * What the kernel counts of our programs, into stat: runs it skipped
 * (recursion on a CPU: their events were not seen at all, so they are
 * counted, never silent), and sched_switch's runs and run time.
 */
void rec_prog_stats(struct rk_rec *r)
{
	__u64 sum = 0, wake_runs = 0, wake_ns = 0;
	int i;

	for (i = 0; i < RK_NPROGS; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		if (r->prog_fds[i] < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(r->prog_fds[i], &info, &len))
			continue;
		sum += info.recursion_misses;
		/* Counted only while run-time stats are on (make bench). */
		if (!strcmp(info.name, "rk_sched_switch")) {
			r->st->switch_prog_runs = info.run_cnt;
			r->st->switch_prog_ns = info.run_time_ns;
		}
		/* rk_sched_waking, rk_sched_wakeup_new (names cut at 15 characters) */
		if (!strncmp(info.name, "rk_sched_wak", 12)) {
			wake_runs += info.run_cnt;
			wake_ns += info.run_time_ns;
		}
	}
	r->st->bpf_prog_misses = sum;
	r->st->wake_prog_runs = wake_runs;
	r->st->wake_prog_ns = wake_ns;
}

/* The programs behind our links (the skeleton's, or the pinned ones on resume). */
void rec_find_progs(struct rk_rec *r)
{
	int i, n = 0;

	if (r->skel) {
		const struct bpf_program *progs[RK_NPROGS] = {
			r->skel->progs.rk_sched_switch,
			r->skel->progs.rk_fork,
			r->skel->progs.rk_exec,
			r->skel->progs.rk_exit,
			r->skel->progs.rk_signal_deliver,
			r->skel->progs.rk_task_rename,
			r->skel->progs.rk_cgroup_attach,
			r->skel->progs.rk_sched_waking,
			r->skel->progs.rk_sched_wakeup_new,
			r->skel->progs.rk_signal_generate,
		};

		for (i = 0; i < RK_NPROGS; i++) {
			int fd = bpf_program__fd(progs[i]); /* -1: not loaded (no --wakeups) */

			r->prog_fds[i] = fd >= 0 ? dup(fd) : -1;
		}
		return;
	}
	for (i = 0; i < r->nlinks && n < RK_NPROGS; i++) {
		struct bpf_link_info li;
		__u32 len = sizeof(li);

		memset(&li, 0, sizeof(li));
		if (bpf_obj_get_info_by_fd(r->link_fds[i], &li, &len))
			continue;
		r->prog_fds[n++] = bpf_prog_get_fd_by_id(li.prog_id);
	}
}

/*
 * What -a and --cgroup need before the programs attach: the pmu_info value
 * of each source for a task they adopt, the cgroup ids, and our own tgid
 * (never adopted). Return: 0, or -errno (reported).
 */
int rec_adopt_config(struct rk_rec *r)
{
	__u32 k, zero = 0;
	__u64 self = (__u64)getpid();
	int err;

	if (r->self_fd >= 0 && bpf_map_update_elem(r->self_fd, &zero, &self, BPF_ANY))
		goto fail;
	if (!r->skel || (!r->o->all && !r->o->ncgroups))
		return 0;
	for (k = 0; k < (__u32)rec_nsrc(r); k++)
		if (bpf_map_update_elem(bpf_map__fd(r->skel->maps.tmpl), &k,
					rec_src_entry(r, (int)k), BPF_ANY))
			goto fail;
	for (k = 0; k < (__u32)r->o->ncgroups; k++)
		if (bpf_map_update_elem(bpf_map__fd(r->skel->maps.cgroups), &r->o->cgroup_ids[k],
					&k, BPF_ANY))
			goto fail;
	return 0;
fail:
	err = errno;
	rk_err("cannot configure the BPF maps for -a/--cgroup: %s", strerror(err));
	return -err;
}
