// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rec_sideband.c - the recorder's per-process sideband (see rec_sideband.h). */
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
#include "rec_sideband.h"
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
#include "access.h"
#include "util.h"
#include "rec_src.h"
#include "rec_files.h"
/*
 * --resume: a killed recorder's sideband of @pid, taken over as it is (its
 * mappings so far stay with the samples they resolve). Return: 1 taken, 0 not.
 */
int rec_sideband_adopt(struct rk_rec *r, __u32 pid)
{
	char path[PATH_MAX + 64];
	struct rk_bufile *bf;
	struct rk_proc *p;

	for (p = r->procs; p; p = p->next)
		if (p->pid == pid)
			return 1;
	snprintf(path, sizeof(path), "%s/%s/%u", r->dir, RK_SIDEBAND_DIR, pid);
	bf = rk_bufile__open_rw(path, NULL);
	if (!bf)
		return 0;
	if (bf->ident->state != RK_THREAD_LIVE || !(p = calloc(1, sizeof(*p)))) {
		rk_bufile__free(bf);
		return 0;
	}
	p->bf = bf;
	p->pid = pid;
	p->next = r->procs;
	r->procs = p;
	return 1;
}

/* The per-process buffer of records with no single thread owner. */
struct rk_bufile *rec_sideband_for(struct rk_rec *r, __u32 pid)
{
	struct rk_task_ids ids = { 0 };
	struct rk_thread_ident id = { 0 };
	char path[PATH_MAX + 64];
	struct rk_proc *p;

	for (p = r->procs; p; p = p->next) {
		if (p->pid != pid)
			continue;
		if (!p->done_ns)
			return p->bf;
		/* A late record of the finished process: not worth a new file (counted lost). */
		if (!rec_live_threads_of(r, pid))
			return NULL;
		/* A new process with the pid: its own file; the old one moves aside below. */
		p->pid = 0;
		break;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	id.tid = id.tgid = id.ns_tid = pid;
	id.start_ns = rk_now_mono_ns();
	rec_proc_ids(pid, pid, &id.uid, &id.ns_tid, id.comm, &ids);
	snprintf(path, sizeof(path), "%s/%s/%u", r->dir, RK_SIDEBAND_DIR, pid);
	rec_move_aside(r, path, pid);
	p->bf = rk_bufile__create(path, r->o->data_size < (1u << 20) ? 1u << 20 : r->o->data_size,
				  0, &r->o->evs[0].entry, &id);
	if (!p->bf) {
		if (!r->st->file_errors)
			rk_err("cannot create sideband file %s: %s", path, strerror(errno));
		r->st->file_errors++;
		free(p);
		return NULL;
	}
	{
		/*
		 * Decide first: as one call's arguments, reader could be read
		 * (0, root) before rk_access_reader_of() set it.
		 */
		uid_t reader = 0;
		int can = rk_access_reader_of((pid_t)pid, (pid_t)pid, &ids, &reader) == 1;

		p->reader = rec_grant(r, path, can, reader) ? (uint64_t)reader + 1 : 0;
	}
	p->pid = pid;
	p->next = r->procs;
	r->procs = p;
	return p->bf;
}

/*
 * A thread of @pid changed credentials or dumpability, or exec'd: its
 * process's sideband follows the rule its threads' files follow. Its
 * records so far keep the readers they had (the file moves aside as
 * PID.N); the rest goes to a new file for the new reader (or root only),
 * which starts with the process's mappings now, so that reader's samples
 * resolve (a process that started as root and became a user's printed
 * [unknown] for its own samples).
 */
void rec_sideband_recheck(struct rk_rec *r, __u32 pid, __u32 why)
{
	char path[PATH_MAX + 64];
	struct rk_proc *p;
	uid_t reader = 0;
	int can;

	for (p = r->procs; p && (p->pid != pid || p->done_ns || !p->bf); p = p->next)
		;
	if (!p)
		return;
	can = rk_access_task_reader((pid_t)pid, (pid_t)pid, &reader) == 1;
	if ((can ? (uint64_t)reader + 1 : 0) == p->reader)
		return;
	p->bf->id.state = why;
	p->bf->id.exit_ns = rk_now_mono_ns();
	rk_bufile__publish_ident(p->bf);
	snprintf(path, sizeof(path), "%s/%s/%u", r->dir, RK_SIDEBAND_DIR, pid);
	rec_gone_push_path(r, path, 0, p->bf->id.uid);
	rk_bufile__free(p->bf);
	/* The entry goes at the next reap; rec_synthesize() makes the new file. */
	p->bf = NULL;
	p->pid = 0;
	rec_synthesize(r, (pid_t)pid);
}

/*
 * @pid has no live traced thread left: its sideband is finished like its
 * threads' files (state, exit time; removed with them by --keep-exited,
 * --max-shm, or at once with --on-exit drop) and unmapped. Under -a a
 * recorder sees processes come and go for days: a mapping and a list entry
 * kept per process ever seen would run out (vm.max_map_count, and the
 * lookup here is a list walk). The entry stays a while as a marker, so a
 * record the CPU rings deliver late makes no second file (rec_sideband_reap).
 */
void rec_sideband_done(struct rk_rec *r, __u32 pid, __u32 state)
{
	char path[PATH_MAX + 64];
	struct rk_proc *p;
	__u32 uid;

	for (p = r->procs; p && (p->pid != pid || p->done_ns); p = p->next)
		;
	if (!p)
		return;
	p->done_ns = rk_now_mono_ns();
	uid = p->bf->id.uid;
	p->bf->id.state = state;
	p->bf->id.exit_ns = p->done_ns;
	rk_bufile__publish_ident(p->bf);
	rk_bufile__free(p->bf);
	p->bf = NULL;
	snprintf(path, sizeof(path), "%s/%s/%u", r->dir, RK_SIDEBAND_DIR, pid);
	if (r->o->on_exit_drop && state == RK_THREAD_EXITED) {
		if (!unlink(path))
			r->st->dropped++;
		return;
	}
	/* Not counted in --max-shm's bytes when made: 0 bytes when it goes. */
	rec_gone_push_path(r, path, 0, uid);
}

/* Markers of processes done more than 10 s ago go: the CPU rings are drained every tick. */
void rec_sideband_reap(struct rk_rec *r, uint64_t now)
{
	struct rk_proc **pp = &r->procs, *p;

	while ((p = *pp)) {
		if ((p->done_ns && p->done_ns + 10000000000ull <= now) || (!p->pid && !p->bf)) {
			*pp = p->next;
			free(p);
			continue;
		}
		pp = &p->next;
	}
}

void rec_put_sideband(struct rk_rec *r, __u32 pid, const struct perf_event_header *h)
{
	struct rk_bufile *bf = rec_sideband_for(r, pid);

	if (!bf || rk_bufile__write(bf, h, h->size)) {
		r->st->lost++;
		return;
	}
	r->st->sideband++;
}

/* sample_id of the tracking source, for records we rec_synthesize (perf does the same). */
size_t rec_synth_sample_id(struct rk_rec *r, __u8 *p, __u32 pid, __u32 tid)
{
	const struct rk_perf_event_attr *a = &r->o->evs[0].entry.attr;
	__u64 now = rk_now_mono_ns(), id = rk_drain_tracking_id(r->drain);
	__u8 *start = p;
	__u32 cpu[2] = { 0, 0 };

	if (a->sample_type & PERF_SAMPLE_TID) {
		memcpy(p, &pid, 4);
		memcpy(p + 4, &tid, 4);
		p += 8;
	}
	if (a->sample_type & PERF_SAMPLE_TIME) {
		memcpy(p, &now, 8);
		p += 8;
	}
	if (a->sample_type & PERF_SAMPLE_CPU) {
		memcpy(p, cpu, 8);
		p += 8;
	}
	if (a->sample_type & PERF_SAMPLE_IDENTIFIER) {
		memcpy(p, &id, 8);
		p += 8;
	}
	return (size_t)(p - start);
}

/*
 * Threads and mappings that existed before we attached, as perf record
 * synthesizes them: a COMM per thread and an MMAP2 per executable mapping.
 */
void rec_synthesize(struct rk_rec *r, pid_t pid)
{
	union {
		struct perf_event_header h;
		__u8 b[8192];
	} rec;
	struct rk_thread *t;
	char path[64], line[4096 + 256];
	FILE *f;

	for (t = r->all; t; t = t->all_next) {
		size_t n;

		if (t->tgid != (__u32)pid || t->dead)
			continue;
		memset(&rec, 0, sizeof(rec));
		rec.h.type = PERF_RECORD_COMM;
		memcpy(rec.b + 8, &t->tgid, 4);
		memcpy(rec.b + 12, &t->tid, 4);
		memcpy(rec.b + 16, SCHED_BF(t)->id.comm, RK_COMM_LEN);
		rec.b[16 + RK_COMM_LEN - 1] = '\0';
		n = 16 + RK_COMM_LEN;
		n += rec_synth_sample_id(r, rec.b + n, t->tgid, t->tid);
		rec.h.size = (__u16)n;
		rec_put_sideband(r, (__u32)pid, &rec.h);
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff, ino;
		unsigned int maj, min;
		char perms[8], *name;
		__u32 prot = 0, flags, p32 = (__u32)pid;
		__u64 v;
		size_t n, len;
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff,
			   &maj, &min, &ino, &pos) < 7 ||
		    perms[2] != 'x')
			continue;
		name = line + pos;
		name[strcspn(name, "\n")] = '\0';
		if (!*name)
			name = "//anon";
		prot = (perms[0] == 'r' ? 1 : 0) | (perms[1] == 'w' ? 2 : 0) | 4;
		flags = perms[3] == 's' ? 1 /* MAP_SHARED */ : 2 /* MAP_PRIVATE */;
		memset(&rec, 0, sizeof(rec));
		rec.h.type = PERF_RECORD_MMAP2;
		rec.h.misc = PERF_RECORD_MISC_USER;
		n = 8;
		memcpy(rec.b + n, &p32, 4);
		memcpy(rec.b + n + 4, &p32, 4);
		n += 8;
		v = start;
		memcpy(rec.b + n, &v, 8);
		v = end - start;
		memcpy(rec.b + n + 8, &v, 8);
		v = pgoff;
		memcpy(rec.b + n + 16, &v, 8);
		n += 24;
		memcpy(rec.b + n, &maj, 4);
		memcpy(rec.b + n + 4, &min, 4);
		v = ino;
		memcpy(rec.b + n + 8, &v, 8);
		n += 24; /* maj, min, ino, ino_generation */
		memcpy(rec.b + n, &prot, 4);
		memcpy(rec.b + n + 4, &flags, 4);
		n += 8;
		len = strlen(name);
		if (len > 4000)
			continue;
		memcpy(rec.b + n, name, len + 1);
		n += (len + 1 + 7) & ~(size_t)7;
		n += rec_synth_sample_id(r, rec.b + n, (__u32)pid, (__u32)pid);
		rec.h.size = (__u16)n;
		rec_put_sideband(r, (__u32)pid, &rec.h);
	}
	fclose(f);
}
