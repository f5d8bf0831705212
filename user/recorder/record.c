// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record.c - a recording from start to end: each step of the set-up in
 * order, the event loop (rec_loop), and one teardown that undoes what was
 * set up. See rec.h for the modules and which way data flows.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "ringkeeper.skel.h"
#include "rec_bpf.h"
#include "rec_evcpu.h"
#include "rec_loop.h"
#include "rec_session.h"
#include "rec_sideband.h"
#include "rec_target.h"
#include "rec_threads.h"
#include "rec_trigger.h"
#include "access.h"
#include "memcg.h"
#include "bufile.h"
#include "drain.h"
#include "evsel.h"
#include "gc.h"
#include "pinpool.h"
#include "pmu.h"
#include "record.h"
#include "tracedata.h"
#include "session.h"
#include "util.h"

/* Our state, with the stop signals blocked before any thread exists. */
static struct rk_rec *rec_alloc(const struct rk_record_opts *opts)
{
	struct rk_rec *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->self = (__u32)getpid();
	/*
	 * The pin workers inherit the mask: a process-directed SIGINT must
	 * reach our signalfd, not kill us through a worker that does not
	 * block it.
	 */
	sigemptyset(&r->mask);
	sigaddset(&r->mask, SIGINT);
	sigaddset(&r->mask, SIGTERM);
	sigaddset(&r->mask, SIGCHLD);
	sigaddset(&r->mask, SIGHUP);
	/* record --trigger signal: a snapshot, not the end (perf's --switch-output signal). */
	sigaddset(&r->mask, SIGUSR2);
	/*
	 * A background job of a non-interactive shell starts with SIGINT
	 * ignored, and an ignored signal never reaches a signalfd.
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	sigprocmask(SIG_BLOCK, &r->mask, &r->oldmask);
	memset(r->prog_fds, -1, sizeof(r->prog_fds));
	r->ro = *opts;
	r->o = &r->ro;
	r->lock_fd = -1;
	r->pmu_fd = r->cnt_fd = r->sig_fd = r->self_fd = r->asked.fd = r->traced.fd = -1;
	r->held_fd = -1;
	r->sfd = r->tfd = r->pidfd = r->go_fd = -1;
	r->ncpus = rk_online_cpus();
	r->paranoid = rk_access_paranoid();
	rk_pmu_sched_entry(&r->sched_entry);
	r->sched_entry.attr.inherit = opts->inherit ? 1 : 0;
	r->file_size = rk_bufile_layout_size(opts->data_size, 0);
	return r;
}

/* -p PID: one we can trace. */
static int check_pid(const struct rk_rec *r)
{
	pid_t pid = r->o->pid;

	if (!pid || r->o->resume)
		return 0;
	if (pid == getpid()) {
		rk_err("will not trace myself (pid %d)", pid);
		return -EINVAL;
	}
	if (kill(pid, 0) && errno == ESRCH) {
		rk_err("no such process: %d", pid);
		return -ESRCH;
	}
	if (rec_is_kthread(pid)) {
		rk_err("pid %d is a kernel thread: it has no user space to trace", pid);
		return -EINVAL;
	}
	if (rec_proc_state(pid) == 'Z') {
		rk_err("pid %d has exited (a zombie not yet reaped): nothing to trace", pid);
		return -ESRCH;
	}
	return 0;
}

/* The descriptors open now (inherited ones too), not counting the one that counts them. */
static int fds_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n ? n - 1 : 0;
}

/*
 * Our own descriptors besides the BPF object's: the lock, the signalfd,
 * the timer, the epoll, the pidfd, CMD's start pipe, the stat file while
 * mapped; and room for what the loop opens and closes as it goes (a
 * thread's files, /proc, libbpf's probes while loading).
 */
#define RK_FDS_OWN 8
#define RK_FDS_ROOM 16

/*
 * Enough file descriptors for the start-up, checked before anything is
 * made: those open now, the BPF object's, ours, and one per CPU and -e
 * event (the per-CPU rings; per-thread events take one per thread and event
 * as threads come, counted when refused). The soft limit goes up to the
 * hard one first, as it would for -e.
 */
static int check_nofile(const struct rk_rec *r)
{
	int open_now = fds_open();
	int need =
		open_now + rec_bpf_fds_needed() + RK_FDS_OWN + RK_FDS_ROOM + r->o->nev * r->ncpus;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)need)
		return 0;
	rk_err("too few file descriptors: record needs %d here (%d for its BPF programs and "
	       "maps, %d for its own, %d already open, %d for -e: one per CPU and event), "
	       "RLIMIT_NOFILE is %llu: raise it (ulimit -n %d, or LimitNOFILE= for a "
	       "service); nothing recorded",
	       need, rec_bpf_fds_needed(), RK_FDS_OWN + RK_FDS_ROOM, open_now, r->o->nev * r->ncpus,
	       (unsigned long long)rl.rlim_cur, need);
	return -EMFILE;
}

/* bpffs (and tracefs, for users' other tools) mounted, and the one-recorder lock. */
static int take_system(struct rk_rec *r)
{
	int err = rec_ensure_fs("/sys/fs/bpf", BPF_FS_MAGIC_, "bpf");

	if (err)
		return err;
	/* tp_btf needs no tracefs: a failure to mount it is not ours to report. */
	if (access("/sys/kernel/tracing/trace_pipe", F_OK))
		(void)rec_ensure_fs("/sys/kernel/tracing", TRACEFS_MAGIC_, "tracefs");
	return rec_take_lock(r);
}

static int mkdir_src(const struct rk_rec *r, const char *sub)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", r->dir, sub);
	if (mkdir(path, 0755)) {
		int err = -errno;

		rk_err("cannot create %s: %s", path, strerror(errno));
		return err;
	}
	return 0;
}

/* ROOT/SESSION and a directory per source (and the sideband, with -e). */
static int session_dirs(struct rk_rec *r)
{
	int err, k;

	rec_make_session_name(r);
	err = rec_root_dir(r->o->root);
	if (err)
		return err;
	snprintf(r->dir, sizeof(r->dir), "%s/%s", r->o->root, r->session);
	if (!access(r->dir, F_OK)) {
		rk_err("session %s already exists in %s: pick another --session name", r->session,
		       r->o->root);
		return -EEXIST;
	}
	if (mkdir(r->dir, 0755)) {
		err = -errno;
		rk_err("cannot create %s: %s", r->dir, strerror(errno));
		return err;
	}
	r->made_dir = 1;
	for (k = 0; k < rec_nsrc(r); k++) {
		err = mkdir_src(r, rec_src_dir(r, k));
		if (err)
			return err;
	}
	return r->o->nev ? mkdir_src(r, RK_SIDEBAND_DIR) : 0;
}

/* What the session's stat file says about the recording before it starts. */
static void stat_fill(struct rk_rec *r)
{
	const struct rk_record_opts *o = r->o;
	struct rk_session_stat *st = r->st;
	int k;

	st->magic = RK_STAT_MAGIC;
	st->version = RK_STAT_VERSION;
	st->size = sizeof(*st);
	st->loader_pid = (__u32)getpid();
	st->scope = o->all ? RK_SCOPE_ALL : o->ncgroups ? RK_SCOPE_CGROUP : RK_SCOPE_TARGET;
	st->state = RK_SESSION_RUNNING;
	st->nr_cpus = r->ncpus;
	st->start_ns = rk_now_real_ns();
	st->data_size = o->data_size;
	st->file_size = r->file_size;
	st->budget = o->budget;
	st->inherit = !!o->inherit;
	st->wakeups_on = !!o->wakeups;
	st->oom_candidate = r->oom_err != 0;
	st->offcpu_on = !!o->offcpu;
	st->nev = (__u32)o->nev;
	st->max_threads = o->max_threads;
	st->max_shm = o->max_shm;
	st->max_shm_user = o->max_shm_user;
	st->keep_exited_ns = o->keep_exited_ns;
	st->on_exit_drop = (__u32)o->on_exit_drop;
	st->cpu_ring = o->nev ? o->cpu_ring : 0;
	st->aux_size = o->aux_size;
	st->cpu_aux = o->aux_size ? o->cpu_aux : 0;
	for (k = 0; k < o->nev; k++) {
		size_t len = strlen(st->events);

		snprintf(st->events + len, sizeof(st->events) - len, "%s%s", k ? "," : "",
			 o->evs[k].name);
	}
	{
		size_t off = 0;
		int i;

		/* What was traced, as options: -a, --cgroup PATH..., -p PID, CMD. */
		if (o->all)
			off += (size_t)snprintf(st->command, sizeof(st->command), "-a");
		for (i = 0; i < o->ncgroups && off < sizeof(st->command) - 1; i++)
			off += (size_t)snprintf(st->command + off, sizeof(st->command) - off,
						"%s--cgroup %s", off ? " " : "", o->cgroups[i]);
		if (o->pid && off < sizeof(st->command) - 1)
			off += (size_t)snprintf(st->command + off, sizeof(st->command) - off,
						"%s-p %d", off ? " " : "", o->pid);
		for (i = 0; o->argv && o->argv[i] && off < sizeof(st->command) - 1; i++)
			off += (size_t)snprintf(st->command + off, sizeof(st->command) - off,
						"%s%s", off ? " " : "", o->argv[i]);
	}
}

/*
 * The formats of the session's tracepoints, from the kernel recording them
 * (show and export read them there; perf.data carries them). Readable by
 * all, as the same layouts are in /sys/kernel/btf/vmlinux.
 */
static int save_tracedata(const struct rk_rec *r)
{
	const char *names[RK_MAX_SRC];
	char path[PATH_MAX + 64], why[256];
	size_t len;
	void *blob;
	int k, n = 0, fd, err;

	for (k = 0; k < r->o->nev; k++)
		if (r->o->evs[k].entry.attr.type == PERF_TYPE_TRACEPOINT)
			names[n++] = r->o->evs[k].name;
	if (!n)
		return 0;
	err = rk_tracedata_build(names, n, &blob, &len, why, sizeof(why));
	if (err) {
		rk_err("cannot save the tracepoints' formats: %s", why);
		return err;
	}
	snprintf(path, sizeof(path), "%s/%s", r->dir, RK_TRACEDATA_FILE);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	err = fd < 0 ? -errno : rk_write_all(fd, blob, len);
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	free(blob);
	if (err)
		rk_err("cannot write %s: %s", path, strerror(-err));
	return err;
}

/* A new session: its directories, its stat file, the BPF object loaded and pinned. */
static int session_new(struct rk_rec *r)
{
	int err;

	rec_cap_earlier(r);
	err = session_dirs(r);

	if (!err)
		err = save_tracedata(r);
	if (!err)
		err = rec_stat_open(r, 1);
	if (err)
		return err;
	stat_fill(r);
	return rec_bpf_load(r);
}

/* A killed recorder's session, taken over (its pins, its stat file, its options). */
static int session_resume(struct rk_rec *r)
{
	int err = rec_resume_session(r);

	if (err) {
		r->resume_failed = 1;
		return err;
	}
	r->resumed = 1;
	r->maps_pinned = 1; /* the killed recorder's pins, ours now */
	r->sched_entry.attr.inherit = r->o->inherit ? 1 : 0;
	r->file_size = rk_bufile_layout_size(r->o->data_size, 0);
	return 0;
}

/* The pin workers, and the per-CPU perf rings of -e events. */
static int workers_start(struct rk_rec *r)
{
	const struct rk_record_opts *o = r->o;
	static const struct rk_pin_ops pops = { .release = rec_release_buf };
	struct rk_pin_opts popts = {
		.workers = o->workers,
		.budget = o->budget,
		.linger_ns = o->linger_ns,
		.ops = &pops,
		.rt_prio = o->rt_prio,
		.min_run_ns = o->min_run_ns,
		/* mlock2(MLOCK_ONFAULT) of 256 KiB: ~15 us, less than a worker's wakeup. */
		.inline_max = 256 * 1024,
	};
	rec_memory_cap(r);
	r->pool = rk_pin_pool__new(&popts);
	if (!r->pool) {
		int err = -errno;

		rk_err("cannot start the pin workers: %s", strerror(errno));
		return err;
	}
	r->st->workers = o->workers ? o->workers : r->ncpus;
	if (!o->nev)
		return 0;
	r->drain = rk_drain__new(o->evs, o->nev, o->cpu_ring);
	if (!r->drain) {
		int err = -errno;

		rk_err("cannot set up the perf rings: %s", strerror(errno));
		return err;
	}
	if (o->aux_size && rk_drain_set_aux(r->drain, o->cpu_aux)) {
		rk_err("--cpu-aux: not a power of two of at least a page");
		return -EINVAL;
	}
	r->evcpu = rec_evcpu_mode(o);
	return 0;
}

/* The signalfd and the drain timer (the signal rings are mapped with the maps). */
static int loop_fds(struct rk_rec *r)
{
	struct itimerspec its = { 0 };

	r->sfd = signalfd(-1, &r->mask, SFD_CLOEXEC | SFD_NONBLOCK);
	r->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (r->sfd < 0 || r->tfd < 0) {
		int err = -errno;

		rk_err("signalfd/timerfd: %s", strerror(errno));
		return err;
	}
	its.it_interval.tv_sec = (time_t)(r->o->tick_ns / 1000000000ull);
	its.it_interval.tv_nsec = (long)(r->o->tick_ns % 1000000000ull);
	its.it_value = its.it_interval;
	timerfd_settime(r->tfd, 0, &its, NULL);
	return 0;
}

/* Our threads out of pmu_info (a resumed recorder forked by a traced parent). */
static void rec_untrack_self(struct rk_rec *r)
{
	struct rk_pmu_key key;
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");
	int k;

	while (d && (de = readdir(d))) {
		key.tid = (__u32)strtoul(de->d_name, NULL, 10);
		if (key.tid)
			rec_set_traced(r, key.tid, 0);
		for (k = 0; key.tid && k < RK_MAX_SRC; k++) {
			key.src = (__u32)k;
			bpf_map_delete_elem(r->pmu_fd, &key);
		}
	}
	if (d)
		closedir(d);
}

/* Resume: the files, the backlog of signals, who vanished, what the outage cost. */
/*
 * --resume of an -e session: the events died with the killed recorder;
 * each adopted live thread gets them again, each process its sideband
 * back and its mappings as they are now (what it mapped and unmapped
 * meanwhile was not seen). Their samples of the outage are missing: said.
 */
static void reopen_events(struct rk_rec *r)
{
	struct rk_thread *t, *u;
	char msg[256];
	int opened = 0;

	if (!r->drain)
		return;
	if (r->evcpu && !rec_evcpu_open(r))
		opened = -1; /* per CPU: every thread has them again */
	for (t = r->all; t; t = t->all_next) {
		if (t->dead || t->refused)
			continue;
		if (opened >= 0 && !rec_evcpu_task(r, t->tid, msg, sizeof(msg)))
			opened++;
		else if (opened >= 0 && rk_verbose)
			rk_info("%s", msg);
		/* Once per process: its first thread on the list. */
		for (u = r->all; u != t && (u->tgid != t->tgid || u->dead || u->refused);
		     u = u->all_next)
			;
		if (u == t) {
			rec_sideband_adopt(r, t->tgid);
			rec_synthesize(r, (pid_t)t->tgid);
		}
	}
	r->st->nfds = (__u32)rk_drain_nfds(r->drain);
	if (opened < 0)
		rk_warn("resume: -e %s opened again on every CPU; the samples from the "
			"recorder's death until now are missing",
			r->st->events);
	else
		rk_warn("resume: -e %s opened again for %d threads; their samples from the "
			"recorder's death until now are missing",
			r->st->events, opened);
}

static int resume_catch_up(struct rk_rec *r)
{
	int n = rec_adopt_files(r);

	if (n < 0) {
		rk_err("resume: cannot read %s: %s", r->dir, strerror(-n));
		return n;
	}
	/* Inherited from a traced parent (systemd, with -a): we never trace ourselves. */
	rec_untrack_self(r);
	rec_adopt_config(r);
	reopen_events(r);
	rec_intake(r, 0);
	rec_drain(r);
	rec_finish_vanished(r);
	r->target = r->o->pid;
	r->pidfd = r->target ? rec_open_target_pidfd(r->o->pid) : -1;
	if (r->pidfd < 0 && r->st->scope == RK_SCOPE_TARGET) {
		r->target_exited = 1;
		r->drain_deadline = rk_now_mono_ns();
	}
	/* Drops since the dead recorder last published. */
	rec_publish(r);
	r->st->outage_drops =
		r->st->bpf_drops > r->drops_before ? r->st->bpf_drops - r->drops_before : 0;
	fprintf(stderr, "ringkeeper: resumed session %s: %d live threads adopted", r->session, n);
	if (r->st->outage_exited)
		fprintf(stderr, ", %llu of them found exited meanwhile",
			(unsigned long long)r->st->outage_exited);
	fprintf(stderr, "\n");
	if (r->st->outage_drops)
		rk_warn("%llu signals were dropped while no recorder ran (the pinned rings were "
			"full): switches and exits of that time are missing (--ringbuf-size)",
			(unsigned long long)r->st->outage_drops);
	return 0;
}

/* Attach the programs, then trace -p PID's threads or launch CMD (held until tracked). */
static int target_start(struct rk_rec *r)
{
	const struct rk_record_opts *o = r->o;
	int err = rec_adopt_config(r);

	if (err)
		return err;
	err = ringkeeper_bpf__attach(r->skel);
	if (err) {
		rk_err("cannot attach the BPF programs: %s", strerror(-err));
		return err;
	}
	err = rec_pin_links(r);
	if (err)
		return err;
	/* Per CPU: before the adoption, so what runs meanwhile is sampled. */
	if (r->evcpu)
		err = rec_evcpu_open(r);
	if (err)
		return err;
	/* Attached first: whatever starts while we look is adopted by the fork/exec hooks. */
	if (o->all)
		err = rec_adopt_all(r);
	if (!err && o->ncgroups)
		err = rec_adopt_cgroups(r);
	if (err)
		return err;
	if (!o->pid && !o->argv) {
		r->target = 0; /* system-wide or cgroups only: until a signal or --duration */
	} else if (o->pid) {
		r->target = o->pid;
		r->pidfd = rec_open_target_pidfd(o->pid);
		err = rec_attach_pid(r, o->pid);
		if (err)
			return err;
		if (r->drain)
			rec_synthesize(r, o->pid);
	} else {
		pid_t child = rec_launch(o->argv, &r->oldmask, &r->go_fd);

		if (child < 0)
			return child;
		r->child = r->target = child;
		r->pidfd = rec_open_target_pidfd(child);
		err = rec_track(r, (__u32)child, (__u32)child, NULL);
		if (err) {
			if (err == -ESRCH)
				rk_err("the command exited before it could be traced");
			kill(child, SIGKILL);
			r->killed_child = 1;
			return err;
		}
	}
	r->st->target_pid = (__u32)r->target;
	return 0;
}

/*
 * RINGKEEPER_TEST_SIGNAL_US (tests only): each signal takes that long to
 * hand out, at most 100 ms, so a test can make a backlog and the drops it
 * brings at will. Only a slower recorder of root's own: it steers nothing.
 */
static void test_hooks(struct rk_rec *r)
{
	const char *e = getenv("RINGKEEPER_TEST_SIGNAL_US");
	unsigned long long us;

	if (e && *e && !rk_parse_uint(e, 100000, &us))
		r->test_signal_ns = us * 1000ull;
}

/* Tracing is on: say so, and let a launched command exec. */
static void announce(struct rk_rec *r)
{
	const struct rk_record_opts *o = r->o;

	if (r->target && r->pidfd < 0 && !r->target_exited)
		rk_warn("pidfd_open(%d) failed: the recording stops on SIGINT/SIGTERM only",
			r->target);
	r->st->attach_cpu_ns = rec_loader_cpu_ns();
	r->announced = 1;
	if (o->ready_fd >= 0 && write(o->ready_fd, "ready\n", 6) != 6)
		rk_info("cannot write to the ready fd");
	fprintf(stderr,
		"ringkeeper: recording session %s into %s (sched%s%s per thread, budget %llu KiB)\n",
		r->session, r->dir, o->nev ? "," : "", o->nev ? r->st->events : "",
		(unsigned long long)(o->budget >> 10));
	if (r->go_fd >= 0) {
		/* Let the child exec: it is tracked now, from its first instruction. */
		if (write(r->go_fd, "g", 1) != 1)
			rk_warn("cannot start the command");
		close(r->go_fd);
		r->go_fd = -1;
	}
}

/*
 * --keep: the pinned pmu_info holds every thread's entries again, exited
 * ones too (their final switch-out took them out, as the tracked set), so
 * `bpftool map dump` shows the session. The programs are detached by then:
 * nothing reads it as the tracked set any more. As many as fit.
 */
static void keep_pmu_info(struct rk_rec *r)
{
	struct rk_thread *t;
	unsigned long n = 0, full = 0;
	int k;

	for (t = r->all; t; t = t->all_next) {
		struct rk_pmu_key key = { .tid = t->tid };

		if (t->refused)
			continue;
		for (k = 0; k < rec_nsrc(r); k++) {
			key.src = (__u32)k;
			if (bpf_map_update_elem(r->pmu_fd, &key, rec_src_entry(r, k), BPF_ANY))
				full++;
			else
				n++;
		}
	}
	if (full)
		rk_warn("--keep: %lu pmu_info entries did not fit the map (%lu kept)", full, n);
}

/* Stop: no new signals (the pins first: they hold the links), then the last ones. */
static void stop(struct rk_rec *r)
{
	int k;

	rec_unpin_links();
	if (r->skel)
		ringkeeper_bpf__detach(r->skel);
	for (k = 0; k < r->nlinks; k++)
		close(r->link_fds[k]);
	r->nlinks = 0;
	rec_intake(r, 1);
	rec_drain(r);
	rec_drain(r); /* what the first one's signals deferred */
	/* Stopped by a signal under a backlog: what the intakes had no time for (the end line says it). */
	if (r->sw.stop)
		r->st->stop_dropped += rk_swring_left(&r->sw);
	rec_renames_held(r, 1);
	/* The snapshots still waiting: their instants are all behind the last intake now. */
	rec_trigger_stop(r);
	if (r->o->keep && r->maps_pinned)
		keep_pmu_info(r);
}

/* Whether @pid has exited (not reaped: the caller still waits for it). */
static int child_exited(pid_t pid)
{
	siginfo_t si = { 0 };

	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) || si.si_pid != 0;
}

/* Has CMD started and not exited yet (tracing stopped first: --duration, a signal)? */
static int cmd_still_running(const struct rk_rec *r)
{
	return r->child > 0 && r->go_fd < 0 && !child_exited(r->child);
}

/*
 * Until CMD (started, still running) exits: SIGINT, SIGTERM and SIGHUP that
 * another process sends us (blocked, read from our signalfd) are passed on
 * to it. One the kernel sent (a terminal's Ctrl-C or hangup, SI_KERNEL)
 * reached CMD too, in our process group: not sent twice. Without a
 * signalfd: a plain wait.
 */
static void wait_passing_signals(struct rk_rec *r)
{
	struct signalfd_siginfo si;
	struct pollfd p = { .fd = r->sfd, .events = POLLIN };

	while (r->sfd >= 0 && !child_exited(r->child)) {
		/* SIGCHLD wakes us too; the timeout only bounds a missed one. */
		if (poll(&p, 1, 200) <= 0)
			continue;
		if (read(r->sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		if ((si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP) &&
		    (si.ssi_code == SI_USER || si.ssi_code == SI_QUEUE))
			kill(r->child, (int)si.ssi_signo);
	}
}

/*
 * The command we launched (never started if go_fd is still open): how it
 * ended, in one line, and as a shell reports it; then our fds.
 */
static void close_target(struct rk_rec *r)
{
	/*
	 * Tracing stopped (--duration, a signal) while CMD runs on: not a
	 * silent wait. WNOWAIT: only a look, the wait below reaps it.
	 */
	int status = 0, started = r->go_fd < 0, waiting = cmd_still_running(r);

	if (r->go_fd >= 0)
		close(r->go_fd); /* not started: the child exits without running CMD */
	if (waiting) {
		fprintf(stderr,
			"ringkeeper: tracing stopped; waiting for %s (pid %d) to exit (it is not "
			"traced any more; SIGINT, SIGTERM or SIGHUP sent to ringkeeper is passed on "
			"to it)\n",
			r->o->argv[0], (int)r->child);
		wait_passing_signals(r);
	}
	if (r->child > 0 && waitpid(r->child, &status, 0) == r->child && started &&
	    !r->killed_child) {
		int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);

		if (r->o->cmd_status)
			*r->o->cmd_status = code;
		if (WIFSIGNALED(status))
			fprintf(stderr, "ringkeeper: %s was killed by signal %d (%s)%s\n",
				r->o->argv[0], WTERMSIG(status), strsignal(WTERMSIG(status)),
				WCOREDUMP(status) ? ", core dumped" : "");
		else
			fprintf(stderr, "ringkeeper: %s exited with status %d\n", r->o->argv[0],
				WEXITSTATUS(status));
	}
	if (r->pidfd >= 0)
		close(r->pidfd);
	if (r->sfd >= 0)
		close(r->sfd);
	if (r->tfd >= 0)
		close(r->tfd);
}

/* Every thread finished as stopped, its buffers unlocked and unmapped, all freed. */
static void threads_stop(struct rk_rec *r)
{
	struct rk_thread *t;

	for (t = r->all; t; t = t->all_next)
		if (!t->dead)
			rec_thread_finish(r, t, RK_THREAD_STOPPED);
	if (r->pool) {
		rk_pin_flush(r->pool);
		rec_publish(r);
	}
	rk_pin_pool__free(r->pool);
	rk_drain__free(r->drain);
	while (r->procs) {
		struct rk_proc *p = r->procs;

		r->procs = p->next;
		rk_bufile__free(p->bf);
		free(p);
	}
	free(r->pendingv);
	while (r->all) {
		t = r->all;
		r->all = t->all_next;
		free(t);
	}
}

/* The maps unpinned (unless --keep), the object and the map fds closed. */
static void bpf_release(struct rk_rec *r)
{
	if (r->maps_pinned && !r->o->keep)
		rec_unpin_maps();
	else if (r->maps_pinned)
		fprintf(stderr, "ringkeeper: maps kept pinned in %s (--keep)\n", RK_BPFFS_DIR);
	ringkeeper_bpf__destroy(r->skel);
	if (r->resumed) {
		close(r->pmu_fd);
		close(r->cnt_fd);
		close(r->sig_fd);
		if (r->self_fd >= 0)
			close(r->self_fd);
		if (r->held_fd >= 0)
			close(r->held_fd);
	}
	/* After the pin workers (threads_stop): they store into it. */
	rec_bytes_unmap(&r->asked);
	rec_bytes_unmap(&r->traced);
	rec_swring_unmap(r);
}

/* A resume that did not take over: its session and pins stay as they are. */
static void resume_abandon(struct rk_rec *r)
{
	int k;

	for (k = 0; k < r->nlinks; k++)
		close(r->link_fds[k]);
	if (r->st)
		munmap(r->st, sizeof(*r->st));
	if (r->pmu_fd >= 0)
		close(r->pmu_fd);
	if (r->cnt_fd >= 0)
		close(r->cnt_fd);
	if (r->sig_fd >= 0)
		close(r->sig_fd);
	if (r->self_fd >= 0)
		close(r->self_fd);
	if (r->held_fd >= 0)
		close(r->held_fd);
	rec_bytes_unmap(&r->asked);
	rec_bytes_unmap(&r->traced);
	rec_swring_unmap(r);
}

/* The session's state file says ended; its summary, unless setup failed. */
static void session_end(struct rk_rec *r, int err)
{
	if (r->st) {
		r->st->state = RK_SESSION_ENDED;
		r->st->update_ns = rk_now_real_ns();
		if (!err && rk_verbose)
			rk_session_print(stderr, r->session, r->st, 0, NULL);
		else if (!err)
			rk_session_summary(stderr, r->session, r->dir, r->st);
		munmap(r->st, sizeof(*r->st));
		r->st = NULL;
	}
	/* Failed before tracing was on: nothing was recorded, no session is left. */
	if (err && r->made_dir && !r->announced)
		rk_rm_session(r->o->root, r->session, 0, 1);
}

/*
 * Undo what was set up, whatever step failed. A CMD still running when
 * tracing stopped is waited for last, with nothing of ours held: the
 * programs detached, the maps unpinned, buffers unlocked and the lock
 * released, so that another recorder may start meanwhile.
 */
static void teardown(struct rk_rec *r, int err)
{
	int wait_cmd = !r->resume_failed && cmd_still_running(r);
	int k;

	if (r->resume_failed) {
		resume_abandon(r);
	} else {
		if (!wait_cmd)
			close_target(r);
		rec_trigger_stop(r);
		threads_stop(r);
		bpf_release(r);
		session_end(r, err);
	}
	rec_gone_free(r);
	free(r->live);
	r->live = NULL;
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	for (k = 0; k < RK_NPROGS; k++)
		if (r->prog_fds[k] >= 0)
			close(r->prog_fds[k]);
	if (wait_cmd)
		close_target(r);
}

int rk_record(const struct rk_record_opts *opts)
{
	sigset_t oldmask;
	struct rk_rec *r;
	int err;

	if (geteuid() != 0) {
		rk_err("record needs root (CAP_BPF, CAP_PERFMON, CAP_IPC_LOCK): run it with sudo");
		return -EPERM;
	}
	r = rec_alloc(opts);
	if (!r)
		return -ENOMEM;
	/* Said with -v; stat says it always (oom_candidate), no warning opens every record. */
	r->oom_err = rec_oom_exempt();
	if (r->oom_err && rk_verbose)
		rk_warn("the recorder stays a candidate of the OOM killer: cannot set its "
			"oom_score_adj to -1000: %s%s",
			strerror(-r->oom_err),
			r->oom_err == -EACCES || r->oom_err == -EPERM || r->oom_err == -EIO ?
				" (lowering it needs CAP_SYS_RESOURCE)" :
				"");
	err = rk_bufile_guard_init();
	if (err)
		rk_err("cannot install the SIGBUS guard: %s", strerror(-err));
	if (!err)
		err = check_nofile(r);
	if (!err)
		err = check_pid(r);
	if (!err)
		err = take_system(r);
	if (!err)
		err = r->o->resume ? session_resume(r) : session_new(r);
	if (!err)
		err = workers_start(r);
	if (!err)
		err = rec_trigger_start(r);
	if (!err)
		err = loop_fds(r);
	if (!err)
		err = r->resumed ? resume_catch_up(r) : target_start(r);
	if (!err) {
		announce(r);
		test_hooks(r);
		rec_find_progs(r);
		rec_realtime(r->o);
		err = rec_event_loop(r, r->sfd, r->tfd, r->pidfd);
		stop(r);
	}
	teardown(r, err);
	oldmask = r->oldmask;
	free(r);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	return err;
}
