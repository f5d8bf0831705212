// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rec_target.c - the recorder's the target (see rec_target.h). */
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
#include "rec_evcpu.h"
#include "rec_target.h"
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
#include "pmu.h"
#include "util.h"
#include "rec_threads.h"
#include "rec_sideband.h"
/* The state letter of /proc/PID/stat, or 0. */
char rec_proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	return p && p[1] == ' ' ? p[2] : 0;
}

/*
 * The sessions' root: created if its parent exists (one level, never a
 * whole path a typo made up), and it must be root's and writable by root
 * only (or sticky), or whoever can write it could swap a session directory for a
 * symlink and have us create files where they choose.
 */
int rec_root_dir(const char *root)
{
	struct stat st;

	if (mkdir(root, 0755) && errno != EEXIST) {
		int err = -errno;

		rk_err("cannot create --root %s: %s%s", root, strerror(errno),
		       errno == ENOENT ? " (its parent does not exist: create it first)" : "");
		return err;
	}
	if (lstat(root, &st)) {
		int err = -errno;

		rk_err("cannot stat --root %s: %s", root, strerror(errno));
		return err;
	}
	/*
	 * A sticky directory (/dev/shm itself) is fine: nobody else can rename
	 * or remove what we create in it, and mkdir refuses a name taken.
	 */
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH) && !(st.st_mode & S_ISVTX))) {
		rk_err("refusing --root %s: %s; it must be a directory owned by root and "
		       "writable by root only, or sticky (remove it, or pick another --root)",
		       root,
		       !S_ISDIR(st.st_mode) ? "not a directory (or a symlink)" :
		       st.st_uid	    ? "owned by another user" :
					      "writable by group or others, not sticky");
		return -EPERM;
	}
	return 0;
}

/* A kernel thread has no user space to trace: PF_KTHREAD in /proc/PID/stat. */
int rec_is_kthread(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long flags = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	/* After the comm: state ppid pgrp session tty_nr tpgid flags. */
	for (i = 0; p && i < 7; i++)
		p = strchr(p + 1, ' ');
	if (p)
		flags = strtoul(p + 1, NULL, 10);
	return !!(flags & 0x00200000 /* PF_KTHREAD */);
}

/*
 * Trace @tid: its files, its pmu_info entries (perf sources first, sched
 * last: the fork hook copies a parent's sources once sched is there), and
 * its perf events on every CPU.
 * Return: 0, -ESRCH if it is gone, or -errno (reported).
 */
int rec_track(struct rk_rec *r, __u32 tgid, __u32 tid, const char *comm)
{
	struct rk_pmu_key key = { .tid = tid };
	struct rk_thread *t;
	char msg[256];
	__u64 refused;
	int err, k;

	refused = r->st->not_traced;
	t = rec_thread_find(r, tid);
	if (t && t->refused)
		return 0; /* refused before: counted then */
	t = rec_thread_new(r, tid, tgid, 0, comm, rk_now_mono_ns());
	if (!t && r->st->not_traced != refused)
		return 0; /* over a limit: counted, the others are traced */
	if (!t)
		return -errno ? -errno : -ENOMEM;
	for (k = rec_nsrc(r) - 1; k >= 0; k--) {
		key.src = (__u32)k;
		err = bpf_map_update_elem(r->pmu_fd, &key, rec_src_entry(r, k), BPF_NOEXIST);
		if (err && errno != EEXIST) {
			err = -errno;
			rk_err("cannot add tid %u to the pmu_info map: %s", tid, strerror(errno));
			return err;
		}
	}
	rec_set_traced(r, tid, 1);
	err = rec_evcpu_task(r, tid, msg, sizeof(msg));
	if (err && err != -ESRCH)
		rk_err("%s", msg);
	return err;
}

/*
 * Add every thread of @pid; repeat until a pass finds none new (threads born
 * meanwhile). @quiet: a process gone or exiting is not an error (-a, --cgroup).
 */
int rec_attach_pid_opt(struct rk_rec *r, pid_t pid, int quiet)
{
	char path[64];
	int pass, added, err;

	for (pass = 0; pass < 16; pass++) {
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		d = opendir(path);
		if (!d && quiet)
			return -ESRCH;
		if (!d) {
			err = -errno;
			rk_err("cannot read the threads of pid %d: %s", pid,
			       errno == ENOENT ? "no such process" : strerror(errno));
			return err;
		}
		added = 0;
		while ((de = readdir(d))) {
			__u32 tid = (__u32)strtoul(de->d_name, NULL, 10);

			/* Known: traced already, or refused by a limit (counted once). */
			if (!tid || (rec_thread_find(r, tid) && (!rec_thread_find(r, tid)->dead ||
								 rec_thread_find(r, tid)->refused)))
				continue;
			err = rec_track(r, (__u32)pid, tid, NULL);
			if (err == -ESRCH)
				continue; /* exited meanwhile: nothing to trace */
			if (err) {
				closedir(d);
				return err;
			}
			added++;
		}
		closedir(d);
		if (!added && pass)
			return 0;
		if (!added && !pass) {
			if (!quiet)
				rk_err("pid %d exited while we attached: nothing to trace", pid);
			return -ESRCH;
		}
	}
	return 0;
}

int rec_attach_pid(struct rk_rec *r, pid_t pid)
{
	return rec_attach_pid_opt(r, pid, 0);
}

/*
 * A process traced by adoption (-a, --cgroup) rather than from its parent:
 * its threads, its perf events and its sideband (existing mappings) too.
 * @cgroup: for --cgroup (leaving the subtrees ends it). Quiet: it may be gone.
 */
int rec_adopt_pid(struct rk_rec *r, pid_t pid, int cgroup)
{
	struct rk_thread *t;
	int known, err;

	if ((__u32)pid == r->self || rec_is_kthread(pid))
		return 0;
	known = rec_live_threads_of(r, (__u32)pid) > 0;
	err = rec_attach_pid_opt(r, pid, 1);
	if (err)
		return err == -ESRCH ? 0 : err;
	for (t = r->all; cgroup && t; t = t->all_next)
		if (t->tgid == (__u32)pid && !t->dead)
			rec_thread_via_cgroup(t, 1);
	if (r->drain && !known)
		rec_synthesize(r, pid);
	return 0;
}

/* -a: every user-space process now running (not kernel threads, not us). */
int rec_adopt_all(struct rk_rec *r)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	int err = 0;

	if (!d) {
		err = -errno;
		rk_err("cannot read /proc: %s", strerror(errno));
		return err;
	}
	while (!err && (de = readdir(d))) {
		unsigned long pid = strtoul(de->d_name, NULL, 10);

		if (pid && pid <= INT_MAX)
			err = rec_adopt_pid(r, (pid_t)pid, 0);
	}
	closedir(d);
	return err;
}

/* --cgroup: the processes in @dir (a cgroup v2 directory) and its descendants. */
static int adopt_cgroup_dir(struct rk_rec *r, const char *dir, int depth)
{
	char path[PATH_MAX];
	struct dirent *de;
	unsigned long pid;
	FILE *f;
	DIR *d;
	int err = 0;

	if (depth > 64)
		return 0;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	while (f && !err && fscanf(f, "%lu", &pid) == 1)
		if (pid && pid <= INT_MAX)
			err = rec_adopt_pid(r, (pid_t)pid, 1);
	if (f)
		fclose(f);
	d = opendir(dir);
	while (!err && d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		err = adopt_cgroup_dir(r, path, depth + 1);
	}
	if (d)
		closedir(d);
	return err;
}

int rec_adopt_cgroups(struct rk_rec *r)
{
	int i, err = 0;

	for (i = 0; !err && i < r->o->ncgroups; i++)
		err = adopt_cgroup_dir(r, r->o->cgroups[i], 0);
	return err;
}

/* The recorder's oom_score_adj before rec_oom_exempt(), as CMD is to get it ("" unchanged). */
static char oom_adj_orig[16];
static size_t oom_adj_orig_len;

int rec_oom_exempt(void)
{
	const char min[] = "-1000";
	int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC), err = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, oom_adj_orig, sizeof(oom_adj_orig) - 1);
	if (n <= 0) {
		err = n < 0 ? -errno : -EIO;
		goto out;
	}
	oom_adj_orig[n] = '\0';
	oom_adj_orig[strcspn(oom_adj_orig, "\n")] = '\0';
	if (pwrite(fd, min, sizeof(min) - 1, 0) != (ssize_t)sizeof(min) - 1) {
		err = -errno;
		goto out;
	}
	oom_adj_orig_len = strlen(oom_adj_orig);
out:
	close(fd);
	return err;
}

pid_t rec_launch(char **argv, const sigset_t *oldmask, int *go_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC)) {
		rk_err("pipe: %s", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		rk_err("fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return err;
	}
	if (!pid) {
		char c;

		close(p[1]);
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		/*
		 * CMD is the OOM killer's to choose as before: the recorder's
		 * exemption is not inherited (raising it needs no privilege).
		 * Only async-signal-safe calls here: the workers run already.
		 */
		if (oom_adj_orig_len) {
			int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

			if (fd < 0 || write(fd, oom_adj_orig, oom_adj_orig_len) < 0)
				_exit(126);
			close(fd);
		}
		/* Wait until our tid is in the tracked set, then become CMD. */
		if (read(p[0], &c, 1) != 1)
			_exit(126);
		execvp(argv[0], argv);
		/* As a shell and perf do: 127 not found, 126 found but not runnable. */
		fprintf(stderr, "ringkeeper: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

int rec_open_target_pidfd(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return -errno;
	return fd;
}
