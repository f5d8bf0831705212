// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record.c - the loader's event loop.
 *
 * One thread consumes the BPF ringbuf on a timer (the BPF side does not wake
 * us per record) and turns each signal into perf records in the buffer file
 * of its thread; switch-in/out become pin wishes that the pin pool's workers
 * act on. Files live on tmpfs, so they outlive us.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "rec_loop.h"
#include "rec_session.h"
#include "rec_sideband.h"
#include "rec_target.h"
#include "rec_threads.h"
#include "access.h"
#include "memcg.h"
#include "bufile.h"
#include "drain.h"
#include "evsel.h"
#include "pinpool.h"
#include "pmu.h"
#include "record.h"
#include "session.h"
#include "util.h"

int rk_record(const struct rk_record_opts *opts)
{
	struct rk_rec *r;
	struct itimerspec its = { 0 };
	sigset_t mask, oldmask;
	int err, sfd = -1, tfd = -1, pidfd = -1, go_fd = -1, status = 0;
	pid_t child = 0;
	char path[PATH_MAX + 32];
	struct rk_pin_opts popts = { 0 };
	struct rk_pin_ops pops = { .release = rec_release_buf };
	const struct rk_record_opts *o;
	struct rk_thread *t;
	int k, resumed = 0;

	if (geteuid() != 0) {
		rk_err("record needs root (CAP_BPF, CAP_PERFMON, CAP_IPC_LOCK): run it with sudo");
		return -EPERM;
	}
	/*
	 * Block the stop signals before any thread exists (the pin workers
	 * inherit the mask): a process-directed SIGINT must reach our
	 * signalfd, not kill us through a worker that does not block it.
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGHUP);
	/*
	 * A background job of a non-interactive shell starts with SIGINT
	 * ignored, and an ignored signal never reaches a signalfd.
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	r = calloc(1, sizeof(*r));
	if (!r) {
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		return -ENOMEM;
	}
	memset(r->prog_fds, -1, sizeof(r->prog_fds));
	r->ro = *opts;
	o = r->o = &r->ro;
	r->lock_fd = -1;
	r->pmu_fd = r->cnt_fd = r->sig_fd = -1;
	r->ncpus = rk_online_cpus();
	r->paranoid = rk_access_paranoid();
	err = rk_bufile_guard_init();
	if (err) {
		rk_err("cannot install the SIGBUS guard: %s", strerror(-err));
		goto out_free;
	}

	if (o->pid && !o->resume) {
		if (o->pid == getpid()) {
			rk_err("will not trace myself (pid %d)", o->pid);
			err = -EINVAL;
			goto out_free;
		}
		if (kill(o->pid, 0) && errno == ESRCH) {
			rk_err("no such process: %d", o->pid);
			err = -ESRCH;
			goto out_free;
		}
		if (rec_is_kthread(o->pid)) {
			rk_err("pid %d is a kernel thread: it has no user space to trace", o->pid);
			err = -EINVAL;
			goto out_free;
		}
		if (rec_proc_state(o->pid) == 'Z') {
			rk_err("pid %d has exited (a zombie not yet reaped): nothing to trace",
			       o->pid);
			err = -ESRCH;
			goto out_free;
		}
	}
	err = rec_ensure_fs("/sys/fs/bpf", BPF_FS_MAGIC_, "bpf");
	if (err)
		goto out_free;
	/* tp_btf needs no tracefs; mount it anyway for users' other tools, without failing. */
	if (access("/sys/kernel/tracing/trace_pipe", F_OK))
		(void)rec_ensure_fs("/sys/kernel/tracing", TRACEFS_MAGIC_, "tracefs");
	err = rec_take_lock(r);
	if (err)
		goto out_free;
	if (o->resume) {
		err = rec_resume_session(r);
		if (err)
			goto out_resume;
		resumed = 1;
		r->maps_pinned = 1; /* the killed recorder's pins, ours now */
		rk_pmu_sched_entry(&r->sched_entry);
		r->sched_entry.attr.inherit = o->inherit ? 1 : 0;
		r->file_size = rk_bufile_layout_size(o->data_size, 0);
		goto setup_pool;
	}
	rk_pmu_sched_entry(&r->sched_entry);
	r->sched_entry.attr.inherit = o->inherit ? 1 : 0;
	r->file_size = rk_bufile_layout_size(o->data_size, 0);

	rec_make_session_name(r);
	err = rec_root_dir(o->root);
	if (err)
		goto out_unlock;
	snprintf(r->dir, sizeof(r->dir), "%s/%s", o->root, r->session);
	snprintf(path, sizeof(path), "%s/%s", r->dir, RK_SCHED_DIR);
	if (!access(r->dir, F_OK)) {
		rk_err("session %s already exists in %s: pick another --session name", r->session,
		       o->root);
		err = -EEXIST;
		goto out_unlock;
	}
	if (mkdir(r->dir, 0755) || mkdir(path, 0755)) {
		err = -errno;
		rk_err("cannot create %s: %s", path, strerror(errno));
		goto out_unlock;
	}
	for (k = 1; k < rec_nsrc(r); k++) {
		snprintf(path, sizeof(path), "%s/%s", r->dir, rec_src_dir(r, k));
		if (mkdir(path, 0755)) {
			err = -errno;
			rk_err("cannot create %s: %s", path, strerror(errno));
			goto out_unlock;
		}
	}
	if (o->nev) {
		snprintf(path, sizeof(path), "%s/%s", r->dir, RK_SIDEBAND_DIR);
		if (mkdir(path, 0755)) {
			err = -errno;
			rk_err("cannot create %s: %s", path, strerror(errno));
			goto out_unlock;
		}
	}
	err = rec_stat_open(r, 1);
	if (err)
		goto out_unlock;
	r->st->magic = RK_STAT_MAGIC;
	r->st->version = RK_STAT_VERSION;
	r->st->size = sizeof(*r->st);
	r->st->loader_pid = (__u32)getpid();
	r->st->state = RK_SESSION_RUNNING;
	r->st->nr_cpus = r->ncpus;
	r->st->start_ns = rk_now_real_ns();
	r->st->data_size = o->data_size;
	r->st->file_size = r->file_size;
	r->st->budget = o->budget;
	r->st->inherit = !!o->inherit;
	r->st->nev = (__u32)o->nev;
	r->st->max_threads = o->max_threads;
	r->st->max_shm = o->max_shm;
	r->st->on_exit_drop = (__u32)o->on_exit_drop;
	r->st->cpu_ring = o->nev ? o->cpu_ring : 0;
	r->st->aux_size = o->aux_size;
	r->st->cpu_aux = o->aux_size ? o->cpu_aux : 0;
	for (k = 0; k < o->nev; k++) {
		size_t len = strlen(r->st->events);

		snprintf(r->st->events + len, sizeof(r->st->events) - len, "%s%s", k ? "," : "",
			 o->evs[k].name);
	}
	if (o->pid) {
		snprintf(r->st->command, sizeof(r->st->command), "-p %d", o->pid);
	} else {
		size_t off = 0;
		int i;

		for (i = 0; o->argv[i] && off < sizeof(r->st->command) - 1; i++)
			off += (size_t)snprintf(r->st->command + off, sizeof(r->st->command) - off,
						"%s%s", i ? " " : "", o->argv[i]);
	}

	libbpf_set_print(rec_libbpf_print);
	r->skel = ringkeeper_bpf__open();
	if (!r->skel) {
		err = -errno;
		rk_err("cannot open the BPF object: %s", strerror(errno));
		goto out_stat;
	}
	r->skel->rodata->cfg_inherit = o->inherit ? 1 : 0;
	r->skel->rodata->cfg_nr_src = (__u32)rec_nsrc(r);
	r->skel->rodata->cfg_wakeup_watermark = o->ringbuf_size / 4;
	bpf_map__set_max_entries(r->skel->maps.signals, (__u32)o->ringbuf_size);
	/*
	 * --max-threads caps the live traced threads: a full map makes the
	 * fork hook leave the child out (counted as "children not added").
	 */
	bpf_map__set_max_entries(r->skel->maps.pmu_info,
				 (o->max_threads ? o->max_threads : RK_MAX_ENTRIES) *
					 (__u32)rec_nsrc(r));
	err = ringkeeper_bpf__load(r->skel);
	if (err) {
		rk_err("cannot load the BPF programs: %s (the verifier log is above; "
		       "kernel needs BTF and tp_btf support, 5.8+)",
		       strerror(-err));
		goto out_skel;
	}
	r->pmu_fd = bpf_map__fd(r->skel->maps.pmu_info);
	r->cnt_fd = bpf_map__fd(r->skel->maps.counters);
	r->sig_fd = bpf_map__fd(r->skel->maps.signals);
	err = rec_pin_maps(r);
	if (err)
		goto out_skel;

setup_pool:
	rec_memory_cap(r);
	popts.workers = o->workers;
	popts.budget = o->budget;
	popts.linger_ns = o->linger_ns;
	popts.ops = &pops;
	popts.rt_prio = o->rt_prio;
	popts.min_run_ns = o->min_run_ns;
	r->pool = rk_pin_pool__new(&popts);
	if (!r->pool) {
		err = -errno;
		rk_err("cannot start the pin workers: %s", strerror(errno));
		goto out_maps;
	}
	r->st->workers = o->workers ? o->workers : r->ncpus;
	if (o->nev) {
		struct rlimit rl;

		/* One fd per thread, CPU and event: take what we are allowed. */
		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		r->drain = rk_drain__new(o->evs, o->nev, o->cpu_ring);
		if (!r->drain) {
			err = -errno;
			rk_err("cannot set up the perf rings: %s", strerror(errno));
			goto out_pool;
		}
		if (o->aux_size && rk_drain_set_aux(r->drain, o->cpu_aux)) {
			err = -EINVAL;
			rk_err("--cpu-aux: not a power of two of at least a page");
			goto out_pool;
		}
	}

	r->rb = ring_buffer__new(r->sig_fd, rec_on_signal, r, NULL);
	if (!r->rb) {
		err = -errno;
		rk_err("cannot set up the BPF ringbuf consumer: %s", strerror(errno));
		goto out_pool;
	}

	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (sfd < 0 || tfd < 0) {
		err = -errno;
		rk_err("signalfd/timerfd: %s", strerror(errno));
		goto out_fds;
	}
	its.it_interval.tv_sec = (time_t)(o->tick_ns / 1000000000ull);
	its.it_interval.tv_nsec = (long)(o->tick_ns % 1000000000ull);
	its.it_value = its.it_interval;
	timerfd_settime(tfd, 0, &its, NULL);

	if (resumed) {
		int n = rec_adopt_files(r);

		if (n < 0) {
			err = n;
			rk_err("resume: cannot read %s: %s", r->dir, strerror(-n));
			goto out_fds;
		}
		/* What happened while no recorder ran, then who vanished meanwhile. */
		ring_buffer__consume(r->rb);
		rec_drain(r);
		rec_finish_vanished(r);
		r->target = o->pid;
		pidfd = rec_open_target_pidfd(o->pid);
		if (pidfd < 0) {
			r->target_exited = 1;
			r->drain_deadline = rk_now_mono_ns();
		}
		/* What the outage cost: drops since the dead recorder last published. */
		rec_publish(r);
		r->st->outage_drops =
			r->st->bpf_drops > r->drops_before ? r->st->bpf_drops - r->drops_before : 0;
		fprintf(stderr, "ringkeeper: resumed session %s: %d live threads adopted",
			r->session, n);
		if (r->st->outage_exited)
			fprintf(stderr, ", %llu of them found exited meanwhile",
				(unsigned long long)r->st->outage_exited);
		fprintf(stderr, "\n");
		if (r->st->outage_drops)
			rk_warn("%llu signals were dropped while no recorder ran (the pinned ringbuf "
				"was full): switches and exits of that time are missing "
				"(--ringbuf-size)",
				(unsigned long long)r->st->outage_drops);
		goto ready;
	}
	err = ringkeeper_bpf__attach(r->skel);
	if (err) {
		rk_err("cannot attach the BPF programs: %s", strerror(-err));
		goto out_fds;
	}
	err = rec_pin_links(r);
	if (err)
		goto out_fds;
	if (o->pid) {
		r->target = o->pid;
		pidfd = rec_open_target_pidfd(o->pid);
		err = rec_attach_pid(r, o->pid);
		if (err)
			goto out_fds;
		if (r->drain)
			rec_synthesize(r, o->pid);
	} else {
		child = rec_launch(o->argv, &oldmask, &go_fd);
		if (child < 0) {
			err = child;
			child = 0;
			goto out_fds;
		}
		r->target = child;
		pidfd = rec_open_target_pidfd(child);
		err = rec_track(r, (__u32)child, (__u32)child, NULL);
		if (err) {
			if (err == -ESRCH)
				rk_err("the command exited before it could be traced");
			kill(child, SIGKILL);
			goto out_fds;
		}
	}
	r->st->target_pid = (__u32)r->target;
ready:
	if (pidfd < 0 && !r->target_exited)
		rk_warn("pidfd_open(%d) failed: the recording stops on SIGINT/SIGTERM only",
			r->target);
	r->st->attach_cpu_ns = rec_loader_cpu_ns();
	if (o->ready_fd >= 0 && write(o->ready_fd, "ready\n", 6) != 6)
		rk_info("cannot write to the ready fd");
	fprintf(stderr,
		"ringkeeper: recording session %s into %s (sched%s%s per thread, budget %llu KiB)\n",
		r->session, r->dir, o->nev ? "," : "", o->nev ? r->st->events : "",
		(unsigned long long)(o->budget >> 10));
	if (go_fd >= 0) {
		/* Let the child exec: it is tracked now, from its first instruction. */
		if (write(go_fd, "g", 1) != 1)
			rk_warn("cannot start the command");
		close(go_fd);
		go_fd = -1;
	}

	rec_find_progs(r);
	rec_realtime(o);
	err = rec_event_loop(r, sfd, tfd, pidfd);

	/* Stop: no new signals (pins first: they hold the links), then the last ones. */
	rec_unpin_links();
	if (r->skel)
		ringkeeper_bpf__detach(r->skel);
	for (k = 0; k < r->nlinks; k++)
		close(r->link_fds[k]);
	r->nlinks = 0;
	ring_buffer__consume(r->rb);
	rec_drain(r);
	rec_drain(r); /* what the first one's signals deferred */

out_fds:
	if (go_fd >= 0) {
		/* Not started: make the child exit without running CMD. */
		close(go_fd);
	}
	if (child > 0) {
		if (waitpid(child, &status, 0) == child) {
			if (WIFEXITED(status) && WEXITSTATUS(status))
				rk_warn("command exited with status %d", WEXITSTATUS(status));
			else if (WIFSIGNALED(status))
				rk_warn("command killed by signal %d", WTERMSIG(status));
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	ring_buffer__free(r->rb);
out_pool:
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
out_maps:
	if (r->maps_pinned && !o->keep)
		rec_unpin_maps();
	else if (r->maps_pinned)
		fprintf(stderr, "ringkeeper: maps kept pinned in %s (--keep)\n", RK_BPFFS_DIR);
out_skel:
	ringkeeper_bpf__destroy(r->skel);
	if (resumed) {
		close(r->pmu_fd);
		close(r->cnt_fd);
		close(r->sig_fd);
	}
out_stat:
	r->st->state = RK_SESSION_ENDED;
	r->st->update_ns = rk_now_real_ns();
	if (!err)
		rk_session_print(stderr, r->session, r->st, 0);
	munmap(r->st, sizeof(*r->st));
	goto out_unlock;
out_resume:
	/* Not taken over: leave the session and the pins as they are. */
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
out_unlock:
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	for (k = 0; k < RK_NPROGS; k++)
		if (r->prog_fds[k] >= 0)
			close(r->prog_fds[k]);
out_free:
	free(r);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	return err;
}
