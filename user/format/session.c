// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "session.h"
#include "util.h"

int rk_session_stat_read(const char *dir, struct rk_session_stat *st)
{
	char path[4096];
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", dir, RK_STAT_FILE);
	/* A FIFO or device there must not hang a reader. */
	fd = rk_open_regular(path, 0, NULL);
	if (fd < 0)
		return fd;
	err = rk_session_stat_readfd(fd, st);
	close(fd);
	return err;
}

int rk_session_stat_readfd(int fd, struct rk_session_stat *st)
{
	ssize_t n;

	memset(st, 0, sizeof(*st));
	n = pread(fd, st, sizeof(*st), 0);
	/* Fields are only ever appended: an older, shorter file reads the new ones as 0. */
	if (n < (ssize_t)RK_STAT_SIZE_V1 || st->magic != RK_STAT_MAGIC ||
	    st->version != RK_STAT_VERSION || st->size < RK_STAT_SIZE_V1 ||
	    st->size > sizeof(*st) || (ssize_t)st->size != n)
		return -EBADMSG;
	st->command[sizeof(st->command) - 1] = '\0';
	return 0;
}

/*
 * Does the loader of @st run as root and have the file at @fd mapped, as
 * the loader keeps its own stat file? A comm anyone can set is no proof;
 * the kernel's list of the process's mappings is.
 */
int rk_session_loader_wrote(const struct rk_session_stat *st, int fd)
{
	char path[64], line[512];
	unsigned int maj, min;
	unsigned long long ino;
	struct stat fs;
	int found = 0;
	FILE *f;

	if (fstat(fd, &fs) || rk_proc_status_num((pid_t)st->loader_pid, "Uid:") != 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/maps", st->loader_pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	/* start-end perms offset MAJ:MIN inode path (device numbers in hex). */
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &ino) == 3 &&
			maj == major(fs.st_dev) && min == minor(fs.st_dev) && ino == fs.st_ino;
	fclose(f);
	return found;
}

int rk_session_alive(const struct rk_session_stat *st)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (st->state != RK_SESSION_RUNNING)
		return 0;
	if (kill((pid_t)st->loader_pid, 0) && errno == ESRCH)
		return 0;
	/* pid reuse: the process must still be a ringkeeper. */
	snprintf(path, sizeof(path), "/proc/%u/comm", st->loader_pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	return !strncmp(comm, "ringkeeper", 10);
}

static const char *state_name(const struct rk_session_stat *st)
{
	if (rk_session_alive(st))
		return "running";
	return st->state == RK_SESSION_ENDED ? "ended" : "dead-loader";
}

#define FIELDS(X)                                              \
	X(bpf_signals, "signals (BPF)")                        \
	X(bpf_drops, "signals dropped (BPF rings full)")       \
	X(bpf_forks, "children added (BPF)")                   \
	X(bpf_fork_fail, "new threads not added (BPF, limit)") \
	X(bpf_exits, "exits (BPF)")                            \
	X(bpf_prog_misses, "BPF runs skipped by the kernel")   \
	X(signals, "signals handled")                          \
	X(records, "records written")                          \
	X(unpaired, "switches with no opposite (kernel)")      \
	X(perf_records, "perf records drained")                \
	X(perf_lost, "perf records lost (PERF_RECORD_LOST)")   \
	X(perf_untraced, "samples of untraced tasks, dropped") \
	X(perf_sb_untraced, "  their mmap/comm/task records")  \
	X(sideband, "sideband records (mmap, comm, task)")     \
	X(overwritten, "records overwritten (ring wrap)")      \
	X(lost, "records lost (too big / no file)")            \
	X(threads, "threads traced")                           \
	X(threads_live, "threads live")                        \
	X(file_errors, "buffer files not created")             \
	X(not_traced, "threads not traced (limits)")           \
	X(mem_refused, "  of which for the memory cgroup")     \
	X(files_broken, "files lost while written (SIGBUS)")   \
	X(files_root_only, "files readable by root only")      \
	X(exec_rotated, "execs into a root-only file")         \
	X(crashes, "processes frozen at a crash")              \
	X(after_crash, "records after a crash, not written")   \
	X(renames, "threads renamed")                          \
	X(renames_held, "  renames held back (rate limit)")    \
	X(creds_changes, "credential/dumpability changes")     \
	X(creds_rotated, "  threads continued in a new file")  \
	X(creds_held, "  turns to dumpable held (rate limit)") \
	X(outage_drops, "signals dropped while no recorder")   \
	X(outage_exited, "threads found exited at resume")     \
	X(threads_reconciled, "threads ended, end unseen")     \
	X(stop_dropped, "signals left at a stop (backlog)")    \
	X(loader_rss, "loader peak resident memory")           \
	X(pins, "pins (mlock)")                                \
	X(unpins, "unpins (munlock)")                          \
	X(refusals, "pins refused by budget")                  \
	X(evictions, "early unpins for budget")                \
	X(lock_errors, "mlock failures")                       \
	X(coalesced, "switches with no syscall")               \
	X(pins_skipped_short, "pins skipped: runs too short")  \
	X(pin_wakeups, "loader wakeups for a pin (BPF)")       \
	X(bpf_adopted, "tasks adopted by -a/--cgroup (BPF)")   \
	X(cgroup_joined, "moves into a --cgroup subtree")      \
	X(cgroup_left, "threads that left the cgroups")        \
	X(retention_removed, "exited threads' files removed")  \
	X(retention_bytes, "  their size")                     \
	X(aux_records, "AUX records (PERF_RECORD_AUX)")        \
	X(aux_bytes, "AUX bytes into thread files")            \
	X(aux_truncated, "AUX records truncated (ring full)")  \
	X(aux_dropped, "AUX bytes with no traced thread")      \
	X(switches, "switches handled")                        \
	X(wakeups, "wakeups recorded")                         \
	X(pin_hot, "switch-ins already pinned")                \
	X(pin_lat_n, "switch-ins that waited for a pin")       \
	X(pin_lat_p50_ns, "switch-in to pinned, p50")          \
	X(pin_lat_p99_ns, "switch-in to pinned, p99")          \
	X(oncpu_ns, "on-CPU time, per buffer")                 \
	X(oncpu_pinned_ns, "  of which pinned")                \
	X(loader_cpu_ns, "loader CPU time")                    \
	X(attach_cpu_ns, "  of which until tracing was on")    \
	X(switch_prog_runs, "sched_switch runs, timed")        \
	X(switch_prog_ns, "  their BPF run time")              \
	X(wake_prog_runs, "wakeup programs' runs, timed")      \
	X(wake_prog_ns, "  their BPF run time")                \
	X(time_clamped, "records re-stamped into time order")  \
	X(time_clamped_max_ns, "  by at most")                 \
	X(exits_late, "exits after the final switch, lost")    \
	X(shm_withheld, "records not written: --max-shm full") \
	X(triggers, "triggers fired")                          \
	X(triggers_dropped, "  triggers dropped (gap, queue)") \
	X(snapshots, "snapshots written")                      \
	X(snapshot_errors, "  snapshots not written (error)")  \
	X(snapshot_bytes, "  their bytes")                     \
	X(snapshots_removed, "  older snapshots removed")      \
	X(oom_candidate, "recorder an OOM-killer candidate")   \
	X(stacks, "off-CPU stacks recorded")                   \
	X(stack_drops, "  stacks dropped (stack rings full)")  \
	X(stacks_lost, "  stacks lost (not their record's)")

static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= ' ' || c > '~' || c == '\\')
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

void rk_crash_line_write(FILE *f, const struct rk_crash_line *c)
{
	fprintf(f, "pid %d tid %d signal %d SIG%s time %lld comm ", c->pid, c->tid, c->sig,
		sigabbrev_np(c->sig) ?: "?", c->time);
	put_escaped(f, c->comm);
	fputs(" core ", f);
	put_escaped(f, c->core[0] ? c->core : "none");
	fputc('\n', f);
}

/* One escaped token into @out (NUL-terminated). Return: 0, or -EINVAL. */
static int get_escaped(const char *in, char *out, size_t len)
{
	size_t n = 0;

	for (; *in && *in != ' ' && *in != '\n'; in++) {
		unsigned int v;
		char c = *in;

		if (c == '\\') {
			if (in[1] != 'x' || sscanf(in + 2, "%2x", &v) != 1 || !in[2] || !in[3])
				return -EINVAL;
			c = (char)v;
			in += 3;
		}
		if (!c || n + 1 >= len)
			return -EINVAL;
		out[n++] = c;
	}
	out[n] = '\0';
	return 0;
}

int rk_crash_line_parse(const char *line, struct rk_crash_line *c)
{
	int comm_at = 0, core_at = 0;

	memset(c, 0, sizeof(*c));
	if (sscanf(line, "pid %d tid %d signal %d %*s time %lld comm %n%*s core %n", &c->pid,
		   &c->tid, &c->sig, &c->time, &comm_at, &core_at) != 4 ||
	    !comm_at || !core_at)
		return -EINVAL;
	if (get_escaped(line + comm_at, c->comm, sizeof(c->comm)) ||
	    get_escaped(line + core_at, c->core, sizeof(c->core)))
		return -EINVAL;
	return 0;
}

/* The crashes file of @dir, line by line, as text or as a JSON array. */
static void print_crashes(FILE *f, const char *dir, int json)
{
	char path[4096], line[8192];
	struct rk_crash_line c;
	int fd, first = 1;
	FILE *in;

	if (json)
		fprintf(f, ",\"crashes_seen\":[");
	snprintf(path, sizeof(path), "%s/%s", dir, RK_CRASHES_FILE);
	fd = rk_open_regular(path, 0, NULL);
	in = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!in && fd >= 0)
		close(fd);
	while (in && fgets(line, sizeof(line), in)) {
		if (rk_crash_line_parse(line, &c)) {
			if (!json)
				fprintf(f, "  crash: (a line that does not parse)\n");
			continue;
		}
		if (!json) {
			fprintf(f,
				"  crash: pid %d (%s) tid %d signal %d (SIG%s) at %lld, core %s\n",
				c.pid, rk_strip_controls(c.comm), c.tid, c.sig,
				sigabbrev_np(c.sig) ?: "?", c.time, rk_strip_controls(c.core));
			continue;
		}
		fprintf(f, "%s{\"pid\":%d,\"tid\":%d,\"signal\":%d,\"time\":%lld,\"comm\":",
			first ? "" : ",", c.pid, c.tid, c.sig, c.time);
		rk_json_str(f, c.comm);
		fprintf(f, ",\"core\":");
		if (strcmp(c.core, "none"))
			rk_json_str(f, c.core);
		else
			fprintf(f, "null");
		fputc('}', f);
		first = 0;
	}
	if (in)
		fclose(in);
	if (json)
		fputc(']', f);
}

/* CLOCK_REALTIME ns as "2026-12-03T16:23:05Z" ("-" if 0). */
static const char *utc(__u64 ns, char *buf, size_t len)
{
	if (!ns || rk_fmt_utc(ns, "%Y-%m-%dT%H:%M:%SZ", buf, len))
		snprintf(buf, len, "-");
	return buf;
}

/* "12.3 ms" style: ns, us, ms or s with 3 significant digits. */
static const char *fmt_ns(__u64 ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.3g us", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.3g ms", ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", ns / 1e9);
	return buf;
}

/*
 * One counter line of `stat`: times and sizes in human units, and the
 * counters that cannot apply left out (AUX without an intel_pt source,
 * perf rings without -e).
 */
static void print_field(FILE *f, const char *field, const char *desc, __u64 v,
			const struct rk_session_stat *st)
{
	size_t l = strlen(field);
	char b[32];

	if (!strncmp(field, "aux_", 4) && !st->aux_size)
		return;
	if ((!strncmp(field, "perf_", 5) || !strcmp(field, "sideband")) && !st->nev)
		return;
	/* The key first, as --json names it; the value in human units; what it means. */
	if (l > 3 && !strcmp(field + l - 3, "_ns"))
		fmt_ns(v, b, sizeof(b));
	else if (!strcmp(field, "loader_rss") || !strcmp(field, "aux_bytes") ||
		 !strcmp(field, "aux_dropped"))
		rk_fmt_size(v, b, sizeof(b));
	else
		snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
	while (*desc == ' ')
		desc++;
	fprintf(f, "  %-20s %14s  %s\n", field, b, desc);
}

static const struct {
	size_t off;
	const char *key, *what, *todo;
} losses[RK_LOSS_NR] = {
#define LOSS(field, what, todo) { offsetof(struct rk_session_stat, field), #field, what, todo },
	RK_LOSSES(LOSS)
#undef LOSS
};

void rk_loss_from_stat(struct rk_loss *l, const struct rk_session_stat *st)
{
	int i;

	l->known = 1;
	for (i = 0; i < RK_LOSS_NR; i++)
		memcpy(&l->v[i], (const char *)st + losses[i].off, sizeof(l->v[i]));
}

const char *rk_loss_key(int k)
{
	return k >= 0 && k < RK_LOSS_NR ? losses[k].key : "?";
}

int rk_loss_count(const struct rk_loss *l)
{
	int i, n = 0;

	for (i = 0; l && l->known && i < RK_LOSS_NR; i++)
		n += !!l->v[i];
	return n;
}

int rk_loss_note(const struct rk_loss *l, char *buf, size_t len)
{
	size_t at;
	int i, n;

	n = snprintf(buf, len, "losses %d\n", rk_loss_count(l));
	for (i = 0, at = (size_t)n; i < RK_LOSS_NR && at < len; i++) {
		if (!l->v[i])
			continue;
		n = snprintf(buf + at, len - at, "loss %s %llu\n", losses[i].key,
			     (unsigned long long)l->v[i]);
		at += (size_t)n;
	}
	return at < len ? (int)at : -ENOSPC;
}

void rk_loss_parse_note(struct rk_loss *l, const char *text)
{
	const char *line;

	memset(l, 0, sizeof(*l));
	for (line = text; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		unsigned long long v;
		char key[32];
		int i;

		if (!strncmp(line, "losses ", 7)) {
			l->known = 1;
			continue;
		}
		if (sscanf(line, "loss %31s %llu", key, &v) != 2)
			continue;
		for (i = 0; i < RK_LOSS_NR; i++)
			if (!strcmp(key, losses[i].key))
				l->v[i] += v;
	}
}

void rk_loss_say(FILE *f, const struct rk_loss *l, const char *pfx)
{
	int i;

	if (!l)
		return;
	if (!l->known) {
		fprintf(f,
			"%swhether the recording dropped anything is not known (no session stat "
			"file, or a bundle or core of an older ringkeeper)\n",
			pfx);
		return;
	}
	if (!rk_loss_count(l))
		return;
	fprintf(f,
		"%sincomplete: the session did not record everything; figures here may be "
		"short by as much:\n",
		pfx);
	for (i = 0; i < RK_LOSS_NR; i++)
		if (l->v[i])
			fprintf(f, "%s  %llu %s (stat: %s)\n", pfx, (unsigned long long)l->v[i],
				losses[i].what, losses[i].key);
}

void rk_loss_json(FILE *f, const struct rk_loss *l)
{
	int i, first = 1;

	if (!l)
		return;
	fprintf(f, ",\"loss\":{\"known\":%s,\"complete\":%s,\"counters\":{",
		l->known ? "true" : "false", l->known && !rk_loss_count(l) ? "true" : "false");
	for (i = 0; l->known && i < RK_LOSS_NR; i++) {
		if (!l->v[i])
			continue;
		fprintf(f, "%s\"%s\":%llu", first ? "" : ",", losses[i].key,
			(unsigned long long)l->v[i]);
		first = 0;
	}
	fputs("}}", f);
}

/*
 * What a counter says is wrong, and what to do about it; one line each:
 * every loss counter, then the other troubles.
 */
static void print_hints(FILE *f, const struct rk_session_stat *st, const char *pfx)
{
	static const struct {
		size_t off;
		const char *what;
	} hints[] = {
#define HINT(field, what) { offsetof(struct rk_session_stat, field), what }
		HINT(threads_reconciled,
		     "threads whose end was among the dropped signals: ended when the recorder "
		     "found them gone, their files say so (end unseen; stat: threads_reconciled)"),
		HINT(lock_errors, "mlock failures: see RLIMIT_MEMLOCK and --mlock-kb"),
		HINT(triggers_dropped,
		     "triggers without a snapshot of their own: within --trigger-gap of the last "
		     "one, or too many waiting (they are in the histories; stat: triggers_dropped)"),
		HINT(snapshot_errors, "snapshots not written: see the warnings above"),
#undef HINT
	};
	__u64 tries = st->pins + st->refusals, v;
	struct rk_loss l;
	size_t i;

	rk_loss_from_stat(&l, st);
	for (i = 0; i < RK_LOSS_NR; i++) {
		const char *todo = losses[i].todo;

		if (!l.v[i])
			continue;
		/* Lost to files whose memory ran out: a larger -m would lose more. */
		if (i == RK_LOSS_lost && st->files_broken)
			todo = "buffer files lost their memory while written (the filesystem "
			       "holding the session full, or a file truncated): free space "
			       "there, or record into another --root";
		fprintf(f, "%s%llu %s%s%s (stat: %s)\n", pfx, (unsigned long long)l.v[i],
			losses[i].what, todo ? ": " : "", todo ? todo : "", losses[i].key);
	}
	for (i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
		memcpy(&v, (const char *)st + hints[i].off, sizeof(v));
		if (v)
			fprintf(f, "%s%llu %s\n", pfx, (unsigned long long)v, hints[i].what);
	}
	/* A few refusals are the budget working; many mean buffers wait unlocked. */
	if (tries >= 100 && st->refusals * 10 > tries)
		fprintf(f,
			"%s%llu%% of pins refused by the budget (running threads' buffers stayed "
			"unlocked): raise --mlock-kb or lower -m\n",
			pfx, (unsigned long long)(st->refusals * 100 / tries));
}

void rk_session_summary(FILE *f, const char *name, const char *dir,
			const struct rk_session_stat *st)
{
	char b1[32], b2[32], b3[32];
	struct rk_loss l;

	fprintf(f,
		"ringkeeper: session %s: %llu threads, %llu records (%llu overwritten by newer "
		"ones), files in %s\n",
		name, (unsigned long long)st->threads, (unsigned long long)st->records,
		(unsigned long long)st->overwritten, dir);
	fprintf(f, "ringkeeper: locked at most %s of a %s budget; loader CPU %s\n",
		rk_fmt_size(st->locked_peak, b1, sizeof(b1)),
		rk_fmt_size(st->budget, b2, sizeof(b2)), fmt_ns(st->loader_cpu_ns, b3, sizeof(b3)));
	/* Every counter of loss, not a few of them: a reader believes this line. */
	rk_loss_from_stat(&l, st);
	if (!rk_loss_count(&l) && !st->triggers_dropped && !st->snapshot_errors)
		fprintf(f, "ringkeeper: nothing dropped or lost\n");
	print_hints(f, st, "ringkeeper: ");
	fprintf(f, "ringkeeper: every counter: ringkeeper stat %s\n", name);
}

void rk_session_print(FILE *f, const char *name, const struct rk_session_stat *st, int json,
		      const char *dir)
{
	char b1[32], b2[32], b3[32], b4[32];

	if (json) {
		fprintf(f, "{\"session\":");
		rk_json_str(f, name);
		fprintf(f, ",\"state\":\"%s\",\"loader_pid\":%u,\"target_pid\":%u,\"command\":",
			state_name(st), st->loader_pid, st->target_pid);
		rk_json_str(f, st->command);
		fprintf(f, ",\"events\":");
		rk_json_str(f, st->nev ? st->events : "");
		/* Wall-clock times as UTC strings: in ns they pass 2^53, what JSON keeps exact. */
		fprintf(f,
			",\"nr_cpus\":%u,\"workers\":%u,\"inherit\":%s,\"record_wakeups\":%s,"
			"\"data_size\":%llu,"
			"\"file_size\":%llu,\"budget\":%llu,\"locked\":%llu,\"locked_peak\":%llu,"
			"\"vmlck_peak\":%llu,\"start_time\":\"%s\",\"update_time\":\"%s\","
			"\"duration_ns\":%llu,\"max_shm\":%llu,\"max_shm_user\":%llu,"
			"\"keep_exited_ns\":%llu,\"on_exit\":\"%s\"",
			st->nr_cpus, st->workers, st->inherit ? "true" : "false",
			st->wakeups_on ? "true" : "false", (unsigned long long)st->data_size,
			(unsigned long long)st->file_size, (unsigned long long)st->budget,
			(unsigned long long)st->locked, (unsigned long long)st->locked_peak,
			(unsigned long long)st->vmlck_peak, utc(st->start_ns, b1, sizeof(b1)),
			utc(st->update_ns, b2, sizeof(b2)),
			(unsigned long long)(st->update_ns > st->start_ns ?
						     st->update_ns - st->start_ns :
						     0),
			(unsigned long long)st->max_shm, (unsigned long long)st->max_shm_user,
			(unsigned long long)st->keep_exited_ns, st->on_exit_drop ? "drop" : "keep");
		fprintf(f, ",\"evcpu\":%u", st->evcpu);
#define J(field, desc) fprintf(f, ",\"" #field "\":%llu", (unsigned long long)st->field);
		FIELDS(J)
#undef J
		if (dir)
			print_crashes(f, dir, 1);
		fprintf(f, "}\n");
		return;
	}
	fprintf(f, "session %s: %s, loader pid %u, target pid %u\n", name, state_name(st),
		st->loader_pid, st->target_pid);
	fprintf(f, "  command: ");
	rk_put_line(f, st->command);
	fputc('\n', f);
	if (st->nev)
		fprintf(f, "  events: sched,%s (%u perf fds, %s; %s ring per CPU)\n", st->events,
			st->nfds,
			st->evcpu == 1 ? "per CPU" :
			st->evcpu == 2 ? "per CPU and cgroup" :
					 "per task and CPU",
			rk_fmt_size(st->cpu_ring, b1, sizeof(b1)));
	if (st->aux_size)
		fprintf(f, "  AUX: %s ring per CPU, %s area per thread\n",
			rk_fmt_size(st->cpu_aux, b1, sizeof(b1)),
			rk_fmt_size(st->aux_size, b2, sizeof(b2)));
	fprintf(f, "  buffer: %s data, %s per file; %u pin workers; inherit %s; wakeups %s\n",
		rk_fmt_size(st->data_size, b1, sizeof(b1)),
		rk_fmt_size(st->file_size, b2, sizeof(b2)), st->workers, st->inherit ? "on" : "off",
		st->wakeups_on ? "recorded" : "not recorded");
	fprintf(f, "  retention: --max-shm %s", rk_fmt_size(st->max_shm, b1, sizeof(b1)));
	if (st->max_shm_user)
		fprintf(f, ", --max-shm-user %s", rk_fmt_size(st->max_shm_user, b1, sizeof(b1)));
	if (st->keep_exited_ns)
		fprintf(f, ", --keep-exited %s", fmt_ns(st->keep_exited_ns, b1, sizeof(b1)));
	fprintf(f, ", --on-exit %s\n", st->on_exit_drop ? "drop" : "keep");
	fprintf(f, "  locked now %s, peak %s, budget %s per user (VmLck peak %s)\n",
		rk_fmt_size(st->locked, b1, sizeof(b1)),
		rk_fmt_size(st->locked_peak, b2, sizeof(b2)),
		rk_fmt_size(st->budget, b3, sizeof(b3)),
		rk_fmt_size(st->vmlck_peak, b4, sizeof(b4)));
	fprintf(f, "  started %s, %s%s\n", utc(st->start_ns, b1, sizeof(b1)),
		fmt_ns(st->update_ns > st->start_ns ? st->update_ns - st->start_ns : 0, b2,
		       sizeof(b2)),
		st->state == RK_SESSION_ENDED ? " recorded" : " so far");
	fprintf(f, "  %-20s %14s  %s\n", "COUNTER (--json key)", "VALUE", "MEANING");
#define H(field, desc) print_field(f, #field, desc, st->field, st);
	FIELDS(H)
#undef H
	print_hints(f, st, "  ");
	if (dir)
		print_crashes(f, dir, 0);
}
