// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rec_session.c - the recorder's the recording session (see rec_session.h). */
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
#include "rec_session.h"
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
#include "gc.h"
#include "memcg.h"
#include "pmu.h"
#include "util.h"
#include "rec_bpf.h"
#include "rec_target.h"
#include "rec_threads.h"
#include "rec_files.h"
/* User + system CPU time of the whole loader. */
uint64_t rec_loader_cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

void rec_publish(struct rk_rec *r)
{
	__u64 vals[256];
	struct rk_pin_stats ps;
	__u32 k;

	for (k = 0; k < RK_CNT_MAX && r->ncpus <= 256; k++) {
		__u64 sum = 0;
		unsigned int c;

		if (bpf_map_lookup_elem(r->cnt_fd, &k, vals))
			continue;
		for (c = 0; c < (unsigned int)libbpf_num_possible_cpus() && c < 256; c++)
			sum += vals[c];
		switch (k) {
		case RK_CNT_SIGNALS:
			/* The ringbuf's, and every record the switch rings took. */
			r->st->bpf_signals = sum + rk_swring_written(&r->sw);
			break;
		case RK_CNT_DROPS:
			/* A head beyond its ring (never by our BPF) counts as drops too. */
			r->st->bpf_drops = sum + r->sw.lost;
			break;
		case RK_CNT_FORKS:
			r->st->bpf_forks = sum;
			break;
		case RK_CNT_FORK_FAIL:
			/* Children the BPF side could not add: not traced, as the loader's refusals. */
			if (sum > r->st->bpf_fork_fail)
				r->st->not_traced += sum - r->st->bpf_fork_fail;
			r->st->bpf_fork_fail = sum;
			break;
		case RK_CNT_EXITS:
			r->st->bpf_exits = sum;
			break;
		case RK_CNT_PIN_WAKES:
			r->st->pin_wakeups = sum;
			break;
		case RK_CNT_ADOPTED:
			r->st->bpf_adopted = sum;
			break;
		case RK_CNT_RENAMES_HELD:
			r->st->renames_held = sum;
			break;
		case RK_CNT_CREDS_HELD:
			r->st->creds_held = sum;
			break;
		case RK_CNT_STACK_DROPS:
			r->st->stack_drops = sum;
			r->st->stacks_lost = r->sw.st_lost;
			break;
		}
	}
	rec_prog_stats(r);
	rk_pin_pool__stats(r->pool, &ps);
	r->st->pins = ps.pins;
	r->st->unpins = ps.unpins;
	r->st->refusals = ps.refusals;
	r->st->evictions = ps.evictions;
	r->st->lock_errors = ps.lock_errors;
	r->st->coalesced = ps.coalesced;
	r->st->pins_skipped_short = ps.skipped_short;
	r->st->locked = ps.locked;
	r->st->locked_peak = ps.peak;
	r->st->pin_lat_n = ps.lat_n;
	r->st->pin_hot = ps.lat_hot;
	r->st->pin_lat_p50_ns = ps.lat_p50_ns;
	r->st->pin_lat_p99_ns = ps.lat_p99_ns;
	r->st->oncpu_ns = ps.oncpu_ns;
	r->st->oncpu_pinned_ns = ps.oncpu_pinned_ns;
	r->st->loader_cpu_ns = rec_loader_cpu_ns();
	rec_note_vmlck(r);
	{
		struct rusage ru;

		/* VmHWM, without a second read of /proc/self/status (ms with many mappings). */
		if (!getrusage(RUSAGE_SELF, &ru) && ru.ru_maxrss > 0)
			r->st->loader_rss = (uint64_t)ru.ru_maxrss * 1024;
	}
	/* Every signal before it is in the files: what a snapshot waits for (never 0 here). */
	r->st->handed_ns = r->written_ns ? r->written_ns : 1;
	r->st->update_ns = rk_now_real_ns();
	r->publish_due_ns = rk_now_mono_ns() + RK_PUBLISH_NS;
}

void rec_publish_due(struct rk_rec *r)
{
	r->publish_turn = 0;
	if (rk_now_mono_ns() >= r->publish_due_ns)
		rec_publish(r);
}

void rec_make_session_name(struct rk_rec *r)
{
	struct tm tm;
	time_t now = time(NULL);
	char ts[32];

	if (r->o->session) {
		snprintf(r->session, sizeof(r->session), "%s", r->o->session);
		return;
	}
	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y%m%d-%H%M%S", &tm);
	snprintf(r->session, sizeof(r->session), "%s-%d", ts, getpid());
}

/* Map the session's stat file: a new one, or (resume) the one left behind. */
int rec_stat_open(struct rk_rec *r, int create)
{
	char path[PATH_MAX + 16];
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", r->dir, RK_STAT_FILE);
	fd = open(path, create ? O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC : O_RDWR | O_CLOEXEC, 0644);
	/*
	 * Its pages allocated now: on a full tmpfs a sparse file maps, then
	 * its first store kills the recorder with SIGBUS.
	 */
	if (fd >= 0 && create && (err = fallocate(fd, 0, 0, sizeof(*r->st))) && errno == EOPNOTSUPP)
		err = ftruncate(fd, sizeof(*r->st));
	if (fd < 0 || (create && err)) {
		err = -errno;
		if (errno == ENOSPC)
			rec_err_full(r, "create", path, "; nothing recorded");
		else
			rk_err("cannot %s %s: %s", create ? "create" : "open", path,
			       strerror(errno));
		if (fd >= 0)
			close(fd);
		return err;
	}
	r->st = mmap(NULL, sizeof(*r->st), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r->st == MAP_FAILED) {
		r->st = NULL;
		err = -errno;
		rk_err("cannot map %s: %s", path, strerror(errno));
		return err;
	}
	return 0;
}

/*
 * --resume: take over a session whose recorder was killed. Its programs ran
 * on (pinned links) and their signals wait in the pinned ringbuf; the
 * session's options come from its stat file.
 */
/*
 * The -e events of a session being resumed: their kernel rings died with
 * the recorder and are opened again. Names and directories come from the
 * session's event list; each event's exact attr (period or frequency, call
 * chains, kernel excluded or not) from pmu_info, root's map that the
 * programs kept (any thread's entry of that source).
 */
static int resume_events(struct rk_rec *r, const struct rk_session_stat *cur)
{
	struct rk_record_opts *o = &r->ro;
	struct rk_evsel_opts eo = { 0 };
	struct rk_pmu_key key, *prev = NULL;
	struct rk_pmu_entry e;
	char msg[256];
	int n = 0, k, found = 0;

	o->nev = 0;
	if (!cur->nev)
		return 0;
	if (rk_evsel_parse(cur->events, &eo, o->evs, RK_MAX_SRC - 1, &n, msg, sizeof(msg)) ||
	    n != (int)cur->nev) {
		rk_err("session %s recorded -e %s, which cannot be opened again here (%s): not "
		       "resumed",
		       r->session, cur->events, n != (int)cur->nev ? "a different count" : msg);
		return -EOPNOTSUPP;
	}
	while (found != (1 << n) - 1 && !bpf_map_get_next_key(r->pmu_fd, prev, &key)) {
		prev = &key;
		if (key.src < 1 || key.src > (__u32)n || found & 1 << (key.src - 1) ||
		    bpf_map_lookup_elem(r->pmu_fd, &key, &e))
			continue;
		o->evs[key.src - 1].entry = e;
		found |= 1 << (key.src - 1);
	}
	for (k = 0; k < n; k++) {
		o->evs[k].entry.attr.inherit = o->inherit ? 1 : 0;
		if (!(found & 1 << k))
			rk_warn("resume: no traced thread has %s any more: it is opened as -e %s "
				"alone would (its -F/-c/-g options are not known)",
				o->evs[k].name, o->evs[k].name);
	}
	o->nev = n;
	o->cpu_ring = cur->cpu_ring;
	o->aux_size = cur->aux_size;
	o->cpu_aux = cur->cpu_aux;
	return 0;
}

int rec_resume_session(struct rk_rec *r)
{
	struct rk_record_opts *o = &r->ro;
	struct rk_session_stat cur;
	char path[128];
	size_t i;
	int err, sw_err;

	snprintf(r->session, sizeof(r->session), "%s", o->resume);
	snprintf(r->dir, sizeof(r->dir), "%s/%s", o->root, r->session);
	err = rk_session_stat_read(r->dir, &cur);
	if (err) {
		rk_err("no session %s in %s to resume (%s)", r->session, o->root,
		       err == -EBADMSG ? "unreadable stat file" : strerror(-err));
		return err;
	}
	if (rk_session_alive(&cur)) {
		rk_err("session %s is still being recorded by pid %u", r->session, cur.loader_pid);
		return -EBUSY;
	}
	if (cur.state == RK_SESSION_ENDED) {
		rk_err("session %s ended normally: there is nothing to resume", r->session);
		return -EINVAL;
	}
	r->pmu_fd = bpf_obj_get(RK_BPFFS_DIR "/pmu_info");
	r->cnt_fd = bpf_obj_get(RK_BPFFS_DIR "/counters");
	r->sig_fd = bpf_obj_get(RK_BPFFS_DIR "/signals");
	r->self_fd = bpf_obj_get(RK_BPFFS_DIR "/self");
	r->held_fd = bpf_obj_get(RK_BPFFS_DIR "/renames_held"); /* -1 from an older version */
	/* pin_asked's flags start at 0; traced is kept (the programs kept it right). */
	if (rec_bytes_map(&r->asked, bpf_obj_get(RK_BPFFS_DIR "/pin_asked"), 1))
		rec_bytes_unmap(&r->asked);
	if (rec_bytes_map(&r->traced, bpf_obj_get(RK_BPFFS_DIR "/traced"), 0))
		rec_bytes_unmap(&r->traced);
	/* The switch rings: read on from where the killed recorder stopped. */
	sw_err = rec_swring_map(r, bpf_obj_get(RK_BPFFS_DIR "/swring"),
				bpf_obj_get(RK_BPFFS_DIR "/swpos"));
	/* record --offcpu's stacks (none pinned: recorded without, or by an older version). */
	if (!sw_err)
		sw_err = rec_offcpu_map(r, bpf_obj_get(RK_BPFFS_DIR "/stkring"));
	if (r->pmu_fd >= 0 && r->cnt_fd >= 0 && r->sig_fd >= 0 &&
	    (!r->traced.b || r->self_fd < 0 || sw_err)) {
		rk_err("session %s's programs are an older ringkeeper's (no traced, self or switch "
		       "ring maps pinned in %s): resume it with that version",
		       r->session, RK_BPFFS_DIR);
		return -EPROTO;
	}
	if (r->pmu_fd < 0 || r->cnt_fd < 0 || r->sig_fd < 0) {
		rk_err("nothing pinned in %s to resume from (the machine rebooted, or a new "
		       "recorder took over): session %s stays as it is",
		       RK_BPFFS_DIR, r->session);
		return -ENOENT;
	}
	for (i = 0; i < sizeof(rec_link_names) / sizeof(rec_link_names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", RK_BPFFS_DIR, rec_link_names[i]);
		r->link_fds[r->nlinks] = bpf_obj_get(path);
		if (r->link_fds[r->nlinks] >= 0)
			r->nlinks++;
	}
	err = rec_stat_open(r, 0);
	if (err)
		return err;
	o->data_size = r->st->data_size;
	o->budget = r->st->budget;
	o->inherit = (int)r->st->inherit;
	o->max_threads = r->st->max_threads;
	o->max_shm = r->st->max_shm;
	o->max_shm_user = r->st->max_shm_user;
	/* A stat file from before it was kept: the default, -a and --cgroup only. */
	if (!o->max_shm_user && r->st->scope != RK_SCOPE_TARGET)
		o->max_shm_user = o->max_shm / 2;
	o->keep_exited_ns = r->st->keep_exited_ns;
	o->on_exit_drop = (int)r->st->on_exit_drop;
	o->pid = (pid_t)r->st->target_pid;
	err = resume_events(r, &cur);
	if (err)
		return err;
	/* -a / --cgroup: the pinned programs adopt as before; no target to wait for. */
	o->all = r->st->scope == RK_SCOPE_ALL;
	o->ncgroups = r->st->scope == RK_SCOPE_CGROUP ? 1 : 0;
	r->drops_before = r->st->bpf_drops;
	r->st->loader_pid = (__u32)getpid();
	r->st->state = RK_SESSION_RUNNING;
	r->st->oom_candidate = r->oom_err != 0;
	return 0;
}

/* Resume: every live thread's file becomes ours again, as it was. */
/* @bf, taken over from a killed recorder, as @t's source @k. */
static void adopt_buf(struct rk_rec *r, struct rk_thread *t, int k, struct rk_bufile *bf)
{
	t->b[k].bf = bf;
	/* What the recorder before us counted for it in the stat file's shm_bytes. */
	t->b[k].charged = rec_file_charge(bf->data_size, bf->aux_size, bf->head, &t->b[k].grow_at);
	t->b[k].pin.addr = bf->base;
	t->b[k].pin.len = bf->map_size;
	t->b[k].pin.uid = t->uid;
	t->b[k].pin.owner = &t->b[k];
	t->b[k].pin.pinned_flag = &bf->ident->pinned;
	t->b[k].pin.asked = rec_asked_flag(r, t->tid);
	t->b[k].t = t;
	t->unreleased++;
}

int rec_adopt_files(struct rk_rec *r)
{
	char dir[PATH_MAX + 16], path[PATH_MAX + 300];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s", r->dir, RK_SCHED_DIR);
	d = opendir(dir);
	if (!d)
		return -errno;
	r->st->threads_live = 0;
	while ((de = readdir(d))) {
		struct rk_bufile *bf;
		struct rk_thread *t;
		const char *msg = NULL;
		char *end;
		__u32 tid = (__u32)strtoul(de->d_name, &end, 10);
		int k;

		if (!tid || *end)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		bf = rk_bufile__open_rw(path, &msg);
		if (!bf) {
			rk_warn("resume: leaving %s alone: %s", path, msg ? msg : strerror(errno));
			continue;
		}
		if (bf->ident->state != RK_THREAD_LIVE && bf->ident->state != RK_THREAD_EXITING) {
			rk_bufile__free(bf);
			continue;
		}
		t = calloc(1, sizeof(*t));
		if (!t) {
			rk_bufile__free(bf);
			closedir(d);
			return -ENOMEM;
		}
		t->tid = tid;
		t->tgid = bf->ident->tgid;
		t->uid = bf->ident->uid;
		/* Our own mark in our own (root's) file: what --cgroup traced may still leave. */
		t->via_cgroup = r->o->ncgroups > 0 && (bf->id.flags & RK_IDENT_VIA_CGROUP);
		/* Its pin state died with the old recorder. */
		bf->ident->pinned = 0;
		adopt_buf(r, t, 0, bf);
		/* Its -e files (made again if one is not there to take over). */
		for (k = 1; k < rec_nsrc(r); k++) {
			struct rk_bufile *eb;

			snprintf(path, sizeof(path), "%s/%s/%s", r->dir, rec_src_dir(r, k),
				 de->d_name);
			eb = rk_bufile__open_rw(path, &msg);
			if (!eb) {
				struct rk_thread_ident id = *t->b[0].bf->ident;

				rec_move_aside(r, path, tid);
				eb = rk_bufile__create(path, r->o->data_size, rec_src_aux(r, k),
						       rec_src_entry(r, k), &id);
			}
			if (!eb) {
				rk_warn("resume: tid %u: no %s file: %s", tid, rec_src_dir(r, k),
					strerror(errno));
				break;
			}
			eb->ident->pinned = 0;
			adopt_buf(r, t, k, eb);
		}
		if (k < rec_nsrc(r)) {
			/* A thread with a source missing is not ours to route into. */
			while (k--)
				rk_bufile__free(t->b[k].bf);
			free(t);
			continue;
		}
		t->hnext = r->buckets[tid % NBUCKETS];
		r->buckets[tid % NBUCKETS] = t;
		rec_all_add(r, t);
		r->st->threads_live++;
		rec_live_add(r, t->tgid, 1);
		n++;
	}
	closedir(d);
	return n;
}

/*
 * After the backlog: a thread still live in our books but neither in the
 * traced set nor on the system died while no recorder ran, and its last
 * signals were lost (ringbuf full): finish it, so it does not stay "live".
 */
void rec_finish_vanished(struct rk_rec *r)
{
	struct rk_thread *t;

	for (t = r->all; t; t = t->all_next) {
		struct rk_pmu_key key = { .tid = t->tid, .src = RK_SRC_SCHED };
		struct rk_pmu_entry v;
		char path[64], state;

		if (t->dead)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task/%u", t->tgid, t->tid);
		/* A zombie (not reaped yet) has exited too. */
		state = rec_proc_state((pid_t)t->tid);
		if ((!access(path, F_OK) && state != 'Z' && state != 'X') ||
		    !bpf_map_lookup_elem(r->pmu_fd, &key, &v))
			continue;
		rec_thread_finish(r, t, RK_THREAD_EXITED);
		r->st->outage_exited++;
	}
}

/*
 * Under a memory cgroup limit, commit at most three quarters of the room
 * left at start to buffer files (at their full size, the most they can
 * take): the rest is for our own memory and the page cache. Threads beyond
 * it are not traced, counted, and the recorder is never the OOM victim.
 */
void rec_memory_cap(struct rk_rec *r)
{
	uint64_t room, limit;
	char cg[512], b1[32], b2[32];

	if (rk_memcg_headroom(&room, &limit, cg, sizeof(cg)) != 1)
		return;
	r->mem_cap = room / 4 * 3;
	rk_info("memory cgroup %s: limit %s, buffers capped at %s", cg,
		rk_fmt_size(limit, b1, sizeof(b1)), rk_fmt_size(r->mem_cap, b2, sizeof(b2)));
	if (r->mem_cap < rec_thread_bytes(r))
		rk_warn("memory cgroup %s leaves room for no thread's buffers (%s left of %s): "
			"raise its limit or use a smaller -m",
			cg, rk_fmt_size(room, b1, sizeof(b1)), rk_fmt_size(limit, b2, sizeof(b2)));
}

/*
 * The event loop runs SCHED_FIFO: with thousands of runnable threads, a
 * fair share is too little to keep up with their switches and the BPF
 * ringbuf overflows (measured: 68% of 1.4M signals dropped at 4,096
 * threads on 2 CPUs, 0 with FIFO). Its work is bounded by the signals it
 * is given; the kernel's RT throttling still bounds it. Not inherited by
 * the command we rec_launch (SCHED_RESET_ON_FORK). The pin workers run at the
 * same priority (rk_pin_opts.rt_prio): below it, one preempted while it
 * holds the pool's lock or the mm lock stalls the loop (seen: half the
 * runs at 4,096 threads dropped 30-70% of their signals).
 */
void rec_realtime(const struct rk_record_opts *o)
{
	struct sched_param sp = { .sched_priority = o->rt_prio };

	if (!o->rt_prio)
		return;
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp))
		rk_warn("cannot run the event loop at SCHED_FIFO %d: %s; with many busy threads "
			"signals may be dropped (stat: signals dropped)",
			o->rt_prio, strerror(errno));
}

/* The kernel's view of what we hold locked, kept at its peak. */
void rec_note_vmlck(struct rk_rec *r)
{
	int64_t kb = rk_proc_vmlck_kb(getpid());

	if (kb > 0 && (__u64)kb * 1024 > r->st->vmlck_peak)
		r->st->vmlck_peak = (__u64)kb * 1024;
}

/*
 * Sample VmLck when pins happened, at most every RK_VMLCK_EVERY_NS: the
 * kernel's view, next to our accounting. A read of /proc/self/status costs
 * ms with thousands of files mapped: at every loop turn with a pin (a
 * fork+exec loop) it was 10% of the loader's CPU.
 */
#define RK_VMLCK_EVERY_NS (50 * 1000000ull)

void rec_sample_vmlck(struct rk_rec *r)
{
	struct rk_pin_stats ps;
	uint64_t now;

	rk_pin_pool__stats(r->pool, &ps);
	if (ps.pins == r->last_pins)
		return;
	now = rk_now_mono_ns();
	if (now - r->vmlck_ns < RK_VMLCK_EVERY_NS)
		return;
	r->vmlck_ns = now;
	r->last_pins = ps.pins;
	rec_note_vmlck(r);
}

void rec_cap_earlier(struct rk_rec *r)
{
	struct rk_record_opts *o = &r->ro;
	struct rk_gc_result res = { 0 };
	struct rk_gc_opts go = {
		.root = o->root, .max_bytes = o->max_shm / 2, .quiet = 1, .res = &res
	};
	char a[32], b[32], c[32];
	struct stat sb;

	if (!o->max_shm || (!o->all && !o->ncgroups))
		return;
	/*
	 * Only a root no one else can write (rec_root_dir() also takes a
	 * sticky one): there, every directory down to the files is ours, so
	 * none can be swapped for a symlink between the scan and an unlink.
	 */
	if (lstat(o->root, &sb) || !S_ISDIR(sb.st_mode) || sb.st_uid != 0 || (sb.st_mode & 022)) {
		if (rk_verbose)
			rk_info("earlier sessions in %s not counted against --max-shm: not a "
				"directory only root can write",
				o->root);
		return;
	}
	/* Not fatal: the session keeps its whole --max-shm, as before (said by rk_gc). */
	if (rk_gc(&go))
		return;
	if (res.files)
		rk_info("earlier sessions in %s: %llu exited threads' files removed (%s; %llu "
			"sessions emptied and removed) to keep them within half of --max-shm",
			o->root, (unsigned long long)res.files,
			rk_fmt_size(res.freed, a, sizeof(a)), (unsigned long long)res.sessions);
	if (!res.left)
		return;
	/* At most half: rk_gc removed every dead file over it, and no recorder runs. */
	o->max_shm -= res.left < o->max_shm / 2 ? res.left : o->max_shm / 2;
	if (o->max_shm_user > o->max_shm)
		o->max_shm_user = o->max_shm;
	if (rk_verbose || res.files)
		rk_info("--max-shm of this session: %s (earlier sessions in %s hold %s)",
			rk_fmt_size(o->max_shm, b, sizeof(b)), o->root,
			rk_fmt_size(res.left, c, sizeof(c)));
}
