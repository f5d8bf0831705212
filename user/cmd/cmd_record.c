// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cli_record.c - `ringkeeper record`: the option table, its parsers, the
 * checks across options, and the budget/ring defaults that depend on them.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <dirent.h>
#include "bufile.h"
#include "cmd.h"
#include "session.h"
#include "evsel.h"
#include "record.h"
#include "rec_trigger.h"
#include "util.h"

#define DEFAULT_DATA_SIZE (512u * 1024)

/* What the options build up; rk_record_opts plus what only the CLI needs. */
struct rec_args {
	struct rk_record_opts o;
	struct rk_evsel_opts eo;
	const char *events;
	char events_joined[1024]; /* repeated -e options, comma-joined */
	uint64_t mlock_kb;
	int have_m, have_budget, help, resume_or_start;
};

/*
 * One option: its names, its parser (0, or -1 after saying what is wrong),
 * its default (given to the same parser before the command line, and shown
 * in the help; NULL: none, or one the help explains), and its help text.
 */
struct rec_opt {
	const char *lname;
	char sname;
	const char *arg;
	int (*parse)(struct rec_args *a, const char *v);
	const char *dflt;
	const char *help;
};

static int bad(const char *opt, const char *v, const char *want)
{
	rk_err("%s: %s, got '%s'", opt, want, v);
	return -1;
}

/* A power-of-two size from @lo to 1 GiB. */
static int pow2_size(const char *opt, const char *v, int pages, uint64_t lo, uint64_t *out)
{
	uint64_t size;
	char want[96];

	snprintf(want, sizeof(want), "need a power of two from %lluK to 1G",
		 (unsigned long long)(lo >> 10));
	if (rk_parse_size(v, pages, &size) || size < lo || size > (1ull << 30) ||
	    rk_round_pow2(size) != size)
		return bad(opt, v, want);
	*out = size;
	return 0;
}

static int o_pid(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, INT_MAX, &n) || !n)
		return bad("-p", v, "not a pid");
	a->o.pid = (pid_t)n;
	return 0;
}

static int o_all(struct rec_args *a, const char *v)
{
	(void)v;
	a->o.all = 1;
	return 0;
}

#define RK_CGROUP2_MAGIC 0x63677270

/* The cgroup2 mount point (first one in /proc/self/mounts) into @out; 0, or -1. */
static int cgroup2_mount(char *out, size_t len)
{
	char line[4096], dev[256], dir[PATH_MAX], type[64];
	FILE *f = fopen("/proc/self/mounts", "re");
	int rc = -1;

	if (!f)
		return -1;
	while (rc && fgets(line, sizeof(line), f))
		if (sscanf(line, "%255s %4095s %63s", dev, dir, type) == 3 &&
		    !strcmp(type, "cgroup2") && strlen(dir) < len) {
			strcpy(out, dir);
			rc = 0;
		}
	fclose(f);
	return rc;
}

/*
 * --cgroup PATH: a cgroup v2 directory, absolute or relative to the cgroup2
 * mount; its id is its inode number (the kernfs id BPF compares).
 */
static int o_cgroup(struct rec_args *a, const char *v)
{
	static char paths[8][PATH_MAX];
	char mnt[PATH_MAX];
	struct statfs sfs;
	struct stat st;
	int n = a->o.ncgroups;

	if (n == 8)
		return bad("--cgroup", v, "at most 8 cgroups");
	if (v[0] == '/' && strlen(v) < PATH_MAX) {
		strcpy(paths[n], v);
	} else if (cgroup2_mount(mnt, sizeof(mnt))) {
		return bad("--cgroup", v, "an absolute path (no cgroup2 file system is mounted)");
	} else if ((size_t)snprintf(paths[n], PATH_MAX, "%s/%s", mnt, v) >= PATH_MAX) {
		return bad("--cgroup", v, "a shorter path");
	}
	if (stat(paths[n], &st) || !S_ISDIR(st.st_mode))
		return bad("--cgroup", v, "an existing cgroup v2 directory");
	if (statfs(paths[n], &sfs) || sfs.f_type != RK_CGROUP2_MAGIC)
		return bad("--cgroup", v, "a directory of a cgroup v2 (cgroup2) file system");
	a->o.cgroups[n] = paths[n];
	a->o.cgroup_ids[n] = (uint64_t)st.st_ino;
	a->o.ncgroups++;
	return 0;
}

/* -e adds to the events of the -e options before it, as perf's does. */
static int o_event(struct rec_args *a, const char *v)
{
	char prev[sizeof(a->events_joined)];
	int n;

	if (!a->events) {
		a->events = v;
		return 0;
	}
	snprintf(prev, sizeof(prev), "%s", a->events);
	n = snprintf(a->events_joined, sizeof(a->events_joined), "%s,%s", prev, v);
	if (n < 0 || (size_t)n >= sizeof(a->events_joined))
		return bad("-e", v, "the -e options' events together too long");
	a->events = a->events_joined;
	return 0;
}

static int o_freq(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, 1000000, &n) || !n)
		return bad("-F", v, "not a frequency in Hz");
	a->eo.freq = n;
	return 0;
}

static int o_count(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, 1ull << 62, &n) || !n)
		return bad("-c", v, "not a positive count");
	a->eo.period = n;
	return 0;
}

static int o_callgraph(struct rec_args *a, const char *v)
{
	(void)v;
	a->eo.callgraph = 1;
	return 0;
}

static int o_exclude_kernel(struct rec_args *a, const char *v)
{
	(void)v;
	a->eo.exclude_kernel = 1;
	return 0;
}

static int o_cpu_ring(struct rec_args *a, const char *v)
{
	return pow2_size("--cpu-ring", v, 1, 2 * RK_PAGE_SIZE, &a->o.cpu_ring);
}

static int o_mmap_pages(struct rec_args *a, const char *v)
{
	uint64_t size;
	char b[32];

	if (rk_parse_size(v, 1, &size) || !size)
		return bad("-m", v, "not a size (pages, or bytes with K/M/G)");
	if (size < RK_PAGE_SIZE)
		return bad("-m", v, "the data ring needs at least one page (4 KiB)");
	if (size > (1ull << 30))
		return bad("-m", v, "more than 1 GiB per thread is not supported");
	if (rk_round_pow2(size) != size) {
		fprintf(stderr, "ringkeeper: rounding -m %s up to %s (a power of two)\n", v,
			rk_fmt_size(rk_round_pow2(size), b, sizeof(b)));
		size = rk_round_pow2(size);
	}
	a->o.data_size = size;
	a->have_m = 1;
	return 0;
}

static int o_aux(struct rec_args *a, const char *v)
{
	return pow2_size("--aux", v, 1, RK_PAGE_SIZE, &a->o.aux_size);
}

static int o_cpu_aux(struct rec_args *a, const char *v)
{
	return pow2_size("--cpu-aux", v, 1, RK_PAGE_SIZE, &a->o.cpu_aux);
}

static int o_mlock_kb(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, 1ull << 40, &n) || !n)
		return bad("--mlock-kb", v, "not a positive number of KiB");
	a->mlock_kb = n;
	a->have_budget = 1;
	return 0;
}

static int o_workers(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, 256, &n) || !n)
		return bad("--workers", v, "expected 1..256");
	a->o.workers = (unsigned int)n;
	return 0;
}

static int o_linger(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, 3600000, &n))
		return bad("--linger-ms", v, "not a number of ms");
	a->o.linger_ns = n * 1000000ull;
	return 0;
}

static int o_tick(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, 1000, &n) || !n)
		return bad("--tick-ms", v, "expected 1..1000");
	a->o.tick_ns = n * 1000000ull;
	return 0;
}

static int o_ringbuf(struct rec_args *a, const char *v)
{
	return pow2_size("--ringbuf-size", v, 0, 4096, &a->o.ringbuf_size);
}

static int o_no_inherit(struct rec_args *a, const char *v)
{
	(void)v;
	a->o.inherit = 0;
	return 0;
}

/*
 * Whether execvp() would find @cmd (a path, or a name in $PATH): 0, 127 if
 * there is none, 126 if there is one it may not execute.
 */
static int runnable(const char *cmd)
{
	const char *path = getenv("PATH"), *p, *end;
	char full[PATH_MAX];
	struct stat sb;
	int seen = 0;

	if (strchr(cmd, '/'))
		return stat(cmd, &sb) ? 127 : (!S_ISREG(sb.st_mode) || access(cmd, X_OK)) ? 126 : 0;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, ':');
		snprintf(full, sizeof(full), "%.*s%s%s", (int)(end - p), p, end > p ? "/" : "",
			 cmd);
		if (stat(full, &sb) || !S_ISREG(sb.st_mode))
			continue;
		if (!access(full, X_OK))
			return 0;
		seen = 1;
	}
	return seen ? 126 : 127;
}

static int o_wakeups(struct rec_args *a, const char *v)
{
	(void)v;
	a->o.wakeups = 1;
	return 0;
}

static int o_offcpu(struct rec_args *a, const char *v)
{
	(void)v;
	a->o.offcpu = 1;
	return 0;
}

static int o_on_exit(struct rec_args *a, const char *v)
{
	if (strcmp(v, "keep") && strcmp(v, "drop"))
		return bad("--on-exit", v, "'keep' or 'drop'");
	a->o.on_exit_drop = !strcmp(v, "drop");
	return 0;
}

static int o_max_threads(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, RK_MAX_ENTRIES, &n) || !n)
		return bad("--max-threads", v, "expected 1..65536");
	a->o.max_threads = (uint32_t)n;
	return 0;
}

/* A cap of --max-shm or --max-shm-user (@opt): bytes, or K/M/G, not 0. */
static int shm_cap(const char *opt, const char *v, uint64_t *out)
{
	if (rk_parse_size(v, 0, out) || !*out)
		return bad(opt, v, "not a size (bytes, or K/M/G)");
	return 0;
}

static int o_max_shm(struct rec_args *a, const char *v)
{
	return shm_cap("--max-shm", v, &a->o.max_shm);
}

static int o_max_shm_user(struct rec_args *a, const char *v)
{
	return shm_cap("--max-shm-user", v, &a->o.max_shm_user);
}

/*
 * Unbounded growth of tmpfs is nobody's intent: without --max-shm, a
 * quarter of the root's filesystem (the sessions' files are memory);
 * without --max-shm-user, where every user's threads are traced (-a,
 * --cgroup), half of the session's cap, so one user cannot take all of it.
 */
static void default_shm_caps(struct rec_args *a)
{
	const char *root = a->o.root ? a->o.root : RK_DEFAULT_ROOT;
	char parent[PATH_MAX];
	struct statfs sf;

	if (!a->o.max_shm) {
		snprintf(parent, sizeof(parent), "%s", root);
		/* The root is made if its parent exists: ask the parent then. */
		if (statfs(parent, &sf) && strrchr(parent, '/')) {
			*strrchr(parent, '/') = '\0';
			if (statfs(parent[0] ? parent : "/", &sf))
				sf.f_blocks = 0;
		}
		a->o.max_shm = (uint64_t)sf.f_blocks * (uint64_t)sf.f_frsize / 4;
	}
	if (!a->o.max_shm_user && (a->o.all || a->o.ncgroups))
		a->o.max_shm_user = a->o.max_shm / 2;
}

/* --keep-exited: seconds, or with a unit: 30s, 10m, 2h, 7d. */
static int o_keep_exited(struct rec_args *a, const char *v)
{
	static const struct {
		char c;
		uint64_t s;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
	unsigned long long n;
	char num[32];
	size_t l = strlen(v), i;
	uint64_t mul = 1;

	if (!l || l >= sizeof(num))
		return bad("--keep-exited", v, "a duration (30s, 10m, 2h, 7d)");
	memcpy(num, v, l + 1);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (num[l - 1] == units[i].c) {
			mul = units[i].s;
			num[--l] = '\0';
		}
	if (!l || rk_parse_uint(num, 3650ull * 86400 / mul, &n) || !n)
		return bad("--keep-exited", v, "a duration (30s, 10m, 2h, 7d)");
	a->o.keep_exited_ns = n * mul * 1000000000ull;
	return 0;
}

/* A number of milliseconds for @opt, into *@ns: 1 .. 1e7 (0 too with @zero_ok). */
static int ms_of(const char *opt, const char *v, int zero_ok, uint64_t *ns)
{
	unsigned long long n;

	if (rk_parse_uint(v, 10000000, &n) || (!n && !zero_ok))
		return bad(opt, v,
			   zero_ok ? "a number of milliseconds (0: none)" :
				     "a number of milliseconds, 1 or more");
	*ns = n * 1000000ull;
	return 0;
}

/*
 * --trigger SPEC, any number of them: signal | delay:MS | blocked:MS[:S|D|SD]
 * | killed | exit.
 */
static int o_trigger(struct rec_args *a, const char *v)
{
	static const char what[] =
		"signal, delay:MS, blocked:MS[:D|S|SD], killed or exit (see --help)";
	struct rk_trigger_opts *t = &a->o.trig;
	char spec[64], *ms, *st;

	if (strlen(v) >= sizeof(spec))
		return bad("--trigger", v, what);
	strcpy(spec, v);
	ms = strchr(spec, ':');
	if (ms)
		*ms++ = '\0';
	if (!strcmp(spec, "signal") && !ms)
		t->signal = 1;
	else if (!strcmp(spec, "killed") && !ms)
		t->killed = 1;
	else if (!strcmp(spec, "exit") && !ms)
		t->exit_nonzero = 1;
	else if (!strcmp(spec, "delay") && ms)
		return ms_of("--trigger delay", ms, 0, &t->delay_ns);
	else if (!strcmp(spec, "blocked") && ms) {
		st = strchr(ms, ':');
		if (st)
			*st++ = '\0';
		if (!st || !strcmp(st, "D"))
			t->blocked_states = 2;
		else if (!strcmp(st, "S"))
			t->blocked_states = 1;
		else if (!strcmp(st, "SD") || !strcmp(st, "DS"))
			t->blocked_states = 3;
		else
			return bad("--trigger", v, what);
		return ms_of("--trigger blocked", ms, 0, &t->blocked_ns);
	} else
		return bad("--trigger", v, what);
	return 0;
}

static int o_snap_window(struct rec_args *a, const char *v)
{
	return ms_of("--snapshot-window", v, 1, &a->o.trig.window_ns);
}

static int o_snap_after(struct rec_args *a, const char *v)
{
	return ms_of("--snapshot-after", v, 1, &a->o.trig.after_ns);
}

static int o_trigger_gap(struct rec_args *a, const char *v)
{
	return ms_of("--trigger-gap", v, 1, &a->o.trig.gap_ns);
}

static int o_snap_dir(struct rec_args *a, const char *v)
{
	if (!*v)
		return bad("--snapshot-dir", v, "a directory");
	a->o.trig.dir = v;
	return 0;
}

static int o_snap_max(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, 100000, &n) || !n)
		return bad("--snapshot-max", v, "a number of files, 1 or more");
	a->o.trig.max_files = (uint32_t)n;
	return 0;
}

static int o_snap_max_size(struct rec_args *a, const char *v)
{
	return shm_cap("--snapshot-max-size", v, &a->o.trig.max_bytes);
}

static int o_min_run(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, 1000000000, &n))
		return bad("--min-run-us", v, "not a number of microseconds");
	a->o.min_run_ns = n * 1000ull;
	return 0;
}

static int o_realtime(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, 99, &n))
		return bad("--realtime", v, "a SCHED_FIFO priority from 1 to 99, or 0 for none");
	a->o.rt_prio = (int)n;
	return 0;
}

/* Seconds, with a fraction down to the millisecond as perf's -D/--delay takes ms: "0.5". */
static int o_duration(struct rec_args *a, const char *v)
{
	unsigned long long sec = 0, ms = 0;
	const char *dot = strchr(v, '.');
	char whole[32], frac[4] = "000";
	size_t k, l;

	l = dot ? (size_t)(dot - v) : strlen(v);
	if (l >= sizeof(whole) || (dot && (!dot[1] || strlen(dot + 1) > 3)))
		return bad("--duration", v, "seconds, with at most 3 decimals (0.5, 2, 1.250)");
	memcpy(whole, v, l);
	whole[l] = '\0';
	for (k = 0; dot && dot[1 + k]; k++)
		frac[k] = dot[1 + k];
	if ((l && rk_parse_uint(whole, 365ull * 86400, &sec)) || (!l && !dot) ||
	    rk_parse_uint(frac, 999, &ms) || (!sec && !ms))
		return bad("--duration", v, "seconds, with at most 3 decimals (0.5, 2, 1.250)");
	a->o.duration_ns = sec * 1000000000ull + ms * 1000000ull;
	return 0;
}

static int o_session(struct rec_args *a, const char *v)
{
	if (!*v || strchr(v, '/') || !strcmp(v, ".") || !strcmp(v, "..") || strlen(v) > 100)
		return bad("--session", v, "not a usable name (no '/', 1..100 chars)");
	a->o.session = v;
	return 0;
}

static int o_root(struct rec_args *a, const char *v)
{
	a->o.root = v;
	return 0;
}

static int o_keep(struct rec_args *a, const char *v)
{
	(void)v;
	a->o.keep = 1;
	return 0;
}

static int o_ready_fd(struct rec_args *a, const char *v)
{
	unsigned long long n;

	if (rk_parse_uint(v, INT_MAX, &n))
		return bad("--ready-fd", v, "not an fd");
	a->o.ready_fd = (int)n;
	return 0;
}

static int o_resume(struct rec_args *a, const char *v)
{
	if (!*v || strchr(v, '/'))
		return bad("--resume", v, "not a session name");
	a->o.resume = v;
	return 0;
}

static int o_resume_or_start(struct rec_args *a, const char *v)
{
	(void)v;
	a->resume_or_start = 1;
	return 0;
}

/*
 * --resume-or-start: the newest session under @root whose recorder died
 * while recording (its BPF objects still pinned). Return: 0
 * with its name in @name, or -ENOENT.
 */
static int resumable_session(const char *root, char *name, size_t len)
{
	__u64 newest = 0;
	struct dirent *de;
	DIR *d = opendir(root);
	int found = -ENOENT;

	if (!d || access(RK_BPFFS_DIR "/signals", F_OK)) {
		if (d)
			closedir(d);
		return -ENOENT;
	}
	while ((de = readdir(d))) {
		char dir[PATH_MAX];
		struct rk_session_stat st;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= len)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name);
		if (rk_session_stat_read(dir, &st) || st.state != RK_SESSION_RUNNING ||
		    rk_session_alive(&st) || st.start_ns < newest)
			continue;
		newest = st.start_ns;
		strcpy(name, de->d_name);
		found = 0;
	}
	closedir(d);
	return found;
}

static int o_verbose(struct rec_args *a, const char *v)
{
	(void)a;
	(void)v;
	rk_verbose = 1;
	return 0;
}

static int o_help(struct rec_args *a, const char *v)
{
	(void)v;
	a->help = 1;
	return 0;
}

static const struct rec_opt opts[] = {
	{ "pid", 'p', "PID", o_pid, NULL, "trace this existing process" },
	{ "all", 'a', NULL, o_all, NULL,
	  "trace every user-space thread on the machine (not\n"
	  "kernel threads, not the recorder), those born later\n"
	  "included; until SIGINT/SIGTERM or --duration (default\n"
	  "-m 64K)" },
	{ "cgroup", 'G', "PATH", o_cgroup, NULL,
	  "trace every thread in this cgroup v2 subtree (absolute,\n"
	  "or relative to the cgroup2 mount), and those that move\n"
	  "in later, not those that leave; repeat for up to 8" },
	{ "event", 'e', "LIST", o_event, NULL,
	  "also record perf events, per thread: software events\n"
	  "(cpu-clock, task-clock, page-faults, ...), tracepoints\n"
	  "(sched:sched_wakeup), hardware events where there is a PMU,\n"
	  "Intel PT as perf writes it (intel_pt//, intel_pt/cyc,\n"
	  "mtc_period=0/u) where the intel_pt PMU exists; repeat\n"
	  "to add more" },
	{ "freq", 'F', "HZ", o_freq, NULL, "sampling frequency of -e events (default 4000)" },
	{ "count", 'c', "N", o_count, NULL, "sample every N events instead (tracepoints: 1)" },
	{ NULL, 'g', NULL, o_callgraph, NULL, "record user (and kernel) call chains" },
	{ "exclude-kernel", 0, NULL, o_exclude_kernel, NULL,
	  "count and unwind user space only (files the traced\n"
	  "user may read at perf_event_paranoid 2)" },
	{ "cpu-ring", 0, "SIZE", o_cpu_ring, "256K", "kernel ring per CPU for -e events" },
	{ "mmap-pages", 'm', "SIZE", o_mmap_pages, NULL,
	  "data ring per thread and source: pages, or bytes with\n"
	  "a K/M/G suffix; rounded up to a power of two (default:\n"
	  "512K, or less so that a thread's buffers fit in one\n"
	  "CPU's share of the budget)" },
	{ "aux", 0, "SIZE", o_aux, NULL,
	  "AUX area of each thread's intel_pt file (power of two;\n"
	  "default 256K); the history of PT kept per thread" },
	{ "cpu-aux", 0, "SIZE", o_cpu_aux, NULL,
	  "kernel AUX ring per CPU for intel_pt (default 1M)" },
	{ "mlock-kb", 0, "KB", o_mlock_kb, NULL,
	  "locked-memory budget per user, in KiB (default:\n"
	  "perf_event_mlock_kb x online CPUs)" },
	{ "workers", 0, "N", o_workers, NULL, "pin worker threads (default: online CPUs)" },
	{ "linger-ms", 0, "MS", o_linger, "20",
	  "keep an off-CPU thread's buffer locked this long, so a\n"
	  "thread bouncing on and off CPU costs no syscall" },
	{ "min-run-us", 0, "US", o_min_run, "250",
	  "do not lock the buffer of a thread whose last run was\n"
	  "shorter than US on CPU (from a wakeup to its next sleep,\n"
	  "preemptions included): the lock would land late in the\n"
	  "run, for more than the run costs (0: lock every run)" },
	{ "tick-ms", 0, "MS", o_tick, "5", "drain period of the BPF signal rings" },
	{ "ringbuf-size", 0, "SZ", o_ringbuf, "4M",
	  "BPF signal ringbuf size, power of two (the per-CPU switch rings take as much again)" },
	{ "realtime", 'r', "PRIO", o_realtime, "1",
	  "run the event loop and pin workers at SCHED_FIFO PRIO\n"
	  "(0: normal), so thousands of busy threads cannot starve\n"
	  "them into dropping signals; CMD runs at normal priority" },
	{ "no-inherit", 0, NULL, o_no_inherit, NULL, "do not trace children and new threads" },
	{ "wakeups", 0, NULL, o_wakeups, NULL,
	  "also record who woke a thread and when (sched_waking):\n"
	  "sched's scheduling delay, show's wakers. Costs a BPF run\n"
	  "per wakeup in the system (~90 ns per traced one here,\n"
	  "BENCHMARKS.md 2c); off, sched counts only the waits\n"
	  "after a preemption" },
	{ "trigger", 0, "SPEC", o_trigger, NULL,
	  "take a snapshot bundle of the session (as `snapshot`\n"
	  "does) when this happens; any number of them:\n"
	  "signal: SIGUSR2, or `ringkeeper snapshot --trigger S`;\n"
	  "delay:MS: a traced thread waited longer for a CPU\n"
	  "(decided in BPF at its switch-in; attaches the wakeup\n"
	  "programs); blocked:MS[:D|S|SD]: one off CPU in D (or\n"
	  "S) for longer (a hung-task watchdog, checked every\n"
	  "100 ms); killed: a traced process killed by a signal\n"
	  "that makes no core (SIGKILL, the OOM killer's\n"
	  "included: its sender named); exit: one exiting with a\n"
	  "status other than 0. The trigger is a record in the\n"
	  "histories it concerns (show prints it)" },
	{ "snapshot-window", 0, "MS", o_snap_window, "0",
	  "a trigger's snapshot keeps the MS before it (0: all the\n"
	  "rings hold)" },
	{ "snapshot-after", 0, "MS", o_snap_after, "0",
	  "and the MS after it (the cut is then that much later)" },
	{ "snapshot-dir", 0, "DIR", o_snap_dir, RK_SNAPSHOT_DIR,
	  "where triggers' bundles go (root's, made if missing),\n"
	  "named SESSION.T.N.KIND.uUID.rkb; listed in the session's\n"
	  "snapshots file" },
	{ "snapshot-max", 0, "N", o_snap_max, "16",
	  "keep the session's newest N bundles there, fairly per\n"
	  "user (a user's triggers evict its own first)" },
	{ "snapshot-max-size", 0, "SIZE", o_snap_max_size, "1G",
	  "and at most SIZE of them; a bundle that would be larger\n"
	  "leaves out what does not fit and says what" },
	{ "trigger-gap", 0, "MS", o_trigger_gap, "1000",
	  "at most one snapshot per MS; triggers in between are\n"
	  "recorded in the histories and counted as dropped" },
	{ "offcpu", 0, NULL, o_offcpu, NULL,
	  "also record where a thread blocked: its user and kernel\n"
	  "stacks (frame pointers) at each switch-out into a sleep,\n"
	  "and with --wakeups the waker's at each wakeup (show,\n"
	  "sched --offcpu, export --folded); kernel frames only in\n"
	  "root-only files unless perf_event_paranoid <= 1" },
	{ "on-exit", 0, "keep|drop", o_on_exit, "keep",
	  "keep an exited thread's files, or remove them when it\n"
	  "exits (the RFC's truncate)" },
	{ "max-threads", 0, "N", o_max_threads, NULL,
	  "trace at most N threads at a time; others are not\n"
	  "traced and counted (stat: threads not traced)" },
	{ "max-shm", 0, "SIZE", o_max_shm, NULL,
	  "keep at most SIZE of buffer files in the session (a live\n"
	  "thread's file counts the pages it can have filled, in\n"
	  "16 KiB steps, an exited one's the blocks it uses):\n"
	  "exited threads' files are removed to make room, oldest\n"
	  "first, the new thread's own user's first (another user's\n"
	  "only while that user holds more); past that, new threads\n"
	  "are not traced and records that would fill more pages are\n"
	  "not written (both counted) (default: a quarter of the\n"
	  "filesystem of --root). With -a or --cgroup, earlier\n"
	  "sessions under --root count too: at the start their dead\n"
	  "files go, oldest first, down to half of SIZE, and this\n"
	  "session keeps SIZE less what they hold" },
	{ "max-shm-user", 0, "SIZE", o_max_shm_user, NULL,
	  "at most SIZE of them for one user's threads (default:\n"
	  "with -a or --cgroup, half of --max-shm)" },
	{ "keep-exited", 0, "DURATION", o_keep_exited, NULL,
	  "remove an exited thread's files DURATION after its exit\n"
	  "(30s, 10m, 2h, 7d); live threads are never touched" },
	{ "duration", 'd', "SECS", o_duration, NULL,
	  "stop tracing after SECS seconds (fractions: 0.5); with -- CMD, ringkeeper then\n"
	  "lets go of everything it holds and waits for CMD to exit, and says so (SIGINT,\n"
	  "SIGTERM, SIGHUP sent to ringkeeper meanwhile are passed on to CMD)" },
	{ "session", 0, "NAME", o_session, NULL, "session name (default: date-time-loaderpid)" },
	{ "root", 0, "DIR", o_root, RK_DEFAULT_ROOT,
	  "where sessions live: made if its parent exists; must\n"
	  "be root's, writable by root only or sticky" },
	{ "keep", 0, NULL, o_keep, NULL, "leave the maps pinned in " RK_BPFFS_DIR " at exit" },
	{ "ready-fd", 0, "FD", o_ready_fd, NULL, "write \"ready\\n\" to FD once tracing is on" },
	{ "resume", 0, "SESSION", o_resume, NULL,
	  "continue a session whose recorder was killed: its BPF\n"
	  "programs stayed attached (pinned in bpffs) and their\n"
	  "signals waited in the pinned rings; the live threads'\n"
	  "files are taken over as they are; -e events are opened\n"
	  "again (their samples of the outage are missing)" },
	{ "resume-or-start", 0, NULL, o_resume_or_start, NULL,
	  "resume the newest session whose recorder was killed\n"
	  "(as --resume), or else start a new one with the other\n"
	  "options (for a service that restarts the recorder)" },
	{ "verbose", 'v', NULL, o_verbose, NULL, "libbpf and loader details" },
	{ "help", 'h', NULL, o_help, NULL, "this text" },
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))
#define HELP_COL 25

/* Also what a usage error shows (cmd_bad()): up to its empty line. */
static const char rec_synopsis[] =
	"Usage: ringkeeper record [OPTIONS] -p PID\n"
	"       ringkeeper record [OPTIONS] -- CMD [ARGS...]\n"
	"       ringkeeper record [OPTIONS] -a | --cgroup PATH... [-p PID | -- CMD]\n"
	"       ringkeeper record --resume SESSION [--root DIR]\n"
	"\n";

void rk_usage_record(FILE *f)
{
	size_t i;

	fputs(rec_synopsis, f);
	fprintf(f, "Trace every thread of PID (and, with inheritance, every thread and process it\n"
		   "creates), or start CMD traced from its first instruction. Stops when the\n"
		   "target exits, after --duration, or on SIGINT/SIGTERM. Needs root.\n"
		   "With -a or --cgroup, also every thread on the machine or in those cgroups,\n"
		   "present or to come; without -p or CMD, until --duration or SIGINT/SIGTERM.\n"
		   "Each thread's context switches are written as PERF_RECORD_SWITCH records into\n"
		   "ROOT/SESSION/sched/TID.\n"
		   "\n"
		   "Options:\n");
	for (i = 0; i < NOPTS; i++) {
		const struct rec_opt *d = &opts[i];
		const char *h = d->help, *nl;
		char left[64];
		int n;

		n = snprintf(left, sizeof(left), "  %c%c%s%s%s%s%s", d->sname ? '-' : ' ',
			     d->sname ? d->sname : ' ', d->sname && d->lname ? ", " : "  ",
			     d->lname ? "--" : "", d->lname ? d->lname : "", d->arg ? " " : "",
			     d->arg ? d->arg : "");
		fprintf(f, "%s%*s", left, n < HELP_COL - 1 ? HELP_COL - n : 2, "");
		for (; (nl = strchr(h, '\n')); h = nl + 1)
			fprintf(f, "%.*s\n%*s", (int)(nl - h), h, HELP_COL, "");
		fprintf(f, "%s", h);
		/* The default on the last line, or on its own past 80 columns. */
		if (d->dflt && HELP_COL + strlen(h) + strlen(d->dflt) + 11 > 80)
			fprintf(f, "\n%*s(default %s)", HELP_COL, "", d->dflt);
		else if (d->dflt)
			fprintf(f, " (default %s)", d->dflt);
		fputc('\n', f);
	}
}

/* The getopt tables, made from opts[]; long-only options get 256 + index. */
static void getopt_tables(struct option *lo, char *sopts)
{
	size_t i, k = 0, s = 0;

	sopts[s++] = '+';
	for (i = 0; i < NOPTS; i++) {
		if (opts[i].sname) {
			sopts[s++] = opts[i].sname;
			if (opts[i].arg)
				sopts[s++] = ':';
		}
		if (!opts[i].lname)
			continue;
		lo[k].name = opts[i].lname;
		lo[k].has_arg = opts[i].arg ? required_argument : no_argument;
		lo[k].flag = NULL;
		lo[k].val = opts[i].sname ? opts[i].sname : 256 + (int)i;
		k++;
	}
	sopts[s] = '\0';
	memset(&lo[k], 0, sizeof(lo[k]));
}

static const struct rec_opt *opt_of(int c)
{
	size_t i;

	if (c >= 256 && c < 256 + (int)NOPTS)
		return &opts[c - 256];
	for (i = 0; i < NOPTS; i++)
		if (opts[i].sname && opts[i].sname == c)
			return &opts[i];
	return NULL;
}

static int parse_args(struct rec_args *a, int argc, char **argv)
{
	struct option lo[NOPTS + 1];
	char sopts[2 * NOPTS + 2];
	struct cmd_line l;
	size_t i;
	int c;

	memset(a, 0, sizeof(*a));
	a->o.data_size = DEFAULT_DATA_SIZE;
	a->o.inherit = 1;
	a->o.ready_fd = -1;
	for (i = 0; i < NOPTS; i++)
		if (opts[i].dflt && opts[i].parse(a, opts[i].dflt))
			return 2; /* a default its own parser refuses: a bug, said */
	getopt_tables(lo, sopts);
	/* "+": the first operand is the command to run, the rest its own arguments. */
	cmd_line_init(&l, argc, argv, sopts, lo, rec_synopsis);
	while ((c = cmd_getopt(&l)) != -1) {
		const struct rec_opt *d = opt_of(c);

		if (!d)
			return 2;
		if (d->parse(a, optarg))
			return 2;
		if (a->help) {
			rk_usage_record(stdout);
			return 0;
		}
	}
	if (optind < argc)
		a->o.argv = &argv[optind];
	return -1;
}

/* What no single option can check: combinations, and -e. */
static int check_args(struct rec_args *a)
{
	char msg[512];
	int c, aux_ev = 0;

	if (a->o.pid && a->o.argv) {
		rk_err("give either -p PID or a command after --, not both");
		return 2;
	}
	if (!a->o.pid && !a->o.argv && !a->o.all && !a->o.ncgroups) {
		rk_err("nothing to trace: give -p PID, -a, --cgroup PATH or -- CMD ARGS (see --help)");
		return 2;
	}
	if (a->o.all && a->o.ncgroups) {
		rk_err("-a traces every cgroup already: give -a or --cgroup, not both");
		return 2;
	}
	if ((a->o.all || a->o.ncgroups) && !a->o.inherit) {
		rk_err("--no-inherit cannot apply to -a or --cgroup: they trace new threads");
		return 2;
	}
	if (a->eo.freq && a->eo.period) {
		rk_err("give -F or -c, not both");
		return 2;
	}
	if ((a->eo.freq || a->eo.period || a->eo.callgraph || a->eo.exclude_kernel) && !a->events) {
		rk_err("-F, -c, -g and --exclude-kernel apply to -e events: none given");
		return 2;
	}
	/*
	 * Off-CPU stacks' user frames resolve through the process's mappings,
	 * which the sideband of an -e source records: a dummy event (no
	 * samples) gives it when no source was asked for.
	 */
	if (a->o.offcpu && !a->events)
		a->events = "dummy";
	if (a->events && rk_evsel_parse(a->events, &a->eo, a->o.evs, RK_MAX_SRC - 1, &a->o.nev, msg,
					sizeof(msg))) {
		rk_err("-e: %s", msg);
		return 2;
	}
	for (c = 0; c < a->o.nev; c++) {
		a->o.evs[c].entry.attr.inherit = a->o.inherit ? 1 : 0;
		aux_ev |= a->o.evs[c].aux;
	}
	if ((a->o.aux_size || a->o.cpu_aux) && !aux_ev) {
		rk_err("--aux/--cpu-aux: no selected event has an AUX area (only intel_pt has; "
		       "the sched source has none)");
		return 2;
	}
	if (aux_ev && !a->o.aux_size)
		a->o.aux_size = 256 * 1024;
	if (aux_ev && !a->o.cpu_aux)
		a->o.cpu_aux = 1u << 20;
	return 0;
}

/*
 * The budget (perf_event_mlock_kb x CPUs unless given) and, unless -m was
 * given, the largest ring such that one running thread's buffers (one per
 * source) fit in one CPU's share of it.
 */
static int size_budget(struct rec_args *a)
{
	uint64_t cpu_kb, size;
	char b1[32], b2[32], b3[32];

	if (rk_read_u64_file("/proc/sys/kernel/perf_event_mlock_kb", &cpu_kb))
		cpu_kb = 516; /* the kernel's default */
	if (!a->have_budget)
		a->mlock_kb = cpu_kb * rk_online_cpus();
	if (!a->have_m) {
		uint64_t share = a->mlock_kb * 1024 / rk_online_cpus();

		/* System-wide: thousands of threads; 64K holds ~1,600 switches each. */
		if (a->o.all && a->o.data_size > 64 * 1024)
			a->o.data_size = 64 * 1024;
		while (a->o.data_size > RK_PAGE_SIZE &&
		       (a->o.data_size + RK_PAGE_SIZE) * (uint64_t)(1 + a->o.nev) + a->o.aux_size >
			       share)
			a->o.data_size >>= 1;
	}
	a->o.budget = a->mlock_kb * 1024;
	/* A running thread wants all its buffers (sched + each -e event) locked. */
	size = rk_bufile_layout_size(a->o.data_size, 0) * (uint64_t)(1 + a->o.nev) + a->o.aux_size;
	if (a->o.budget < size) {
		rk_err("budget %s is smaller than one thread's buffers, %s (-m %s + one page, "
		       "per source, + --aux): raise --mlock-kb or lower -m/--aux",
		       rk_fmt_size(a->o.budget, b1, sizeof(b1)), rk_fmt_size(size, b2, sizeof(b2)),
		       rk_fmt_size(a->o.data_size, b3, sizeof(b3)));
		return 2;
	}
	return 0;
}

int rk_cmd_record(int argc, char **argv)
{
	static struct rec_args a;
	int rc;

	rc = parse_args(&a, argc, argv);
	if (rc >= 0)
		return rc;
	if (a.resume_or_start && a.o.resume) {
		rk_err("give --resume SESSION or --resume-or-start, not both");
		return 2;
	}
	if (a.resume_or_start) {
		static char name[128];

		if (!resumable_session(a.o.root, name, sizeof(name))) {
			fprintf(stderr, "ringkeeper: session %s lost its recorder: resuming it\n",
				name);
			a.o.resume = name;
			return rk_record(&a.o) ? 1 : 0;
		}
	}
	if (a.o.resume) {
		/* Everything else comes from the session itself. */
		if (a.o.pid || a.o.argv || a.events || a.o.all || a.o.ncgroups) {
			rk_err("--resume continues a session as it was: no -p, -a, --cgroup, "
			       "command or -e");
			return 2;
		}
		return rk_record(&a.o) ? 1 : 0;
	}
	rc = check_args(&a);
	if (!rc)
		rc = size_budget(&a);
	if (rc)
		return rc;
	/* A command that cannot run makes no session (the shell's 127 / 126). */
	if (a.o.argv) {
		rc = runnable(a.o.argv[0]);
		if (rc) {
			rk_err("cannot run %s: %s: nothing recorded", a.o.argv[0],
			       strerror(rc == 127 ? ENOENT : EACCES));
			return rc;
		}
	}
	default_shm_caps(&a);
	/* Like a shell and perf: the command's own status; -p: 0 unless recording failed. */
	{
		int cmd_status = -1;

		a.o.cmd_status = &cmd_status;
		rc = rk_record(&a.o);
		if (cmd_status >= 0)
			return cmd_status;
		return rc ? 1 : 0;
	}
}
