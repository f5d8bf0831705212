// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* main.c - the ringkeeper command line: record, ls, stat, show. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bufile.h"
#include "export.h"
#include "gc.h"
#include "pt.h"
#include "record.h"
#include "session.h"
#include "show.h"
#include "util.h"

#define DEFAULT_DATA_SIZE (512u * 1024)

static void usage_main(FILE *f)
{
	fprintf(f, "Usage: ringkeeper COMMAND [OPTIONS]\n"
		   "\n"
		   "A per-thread flight recorder: every traced thread gets its own trace ring\n"
		   "buffer in a tmpfs file, locked in memory only while the thread runs.\n"
		   "\n"
		   "Commands:\n"
		   "  record   trace a running process (-p PID) or a command (-- CMD ARGS)\n"
		   "  ls       list sessions and their per-thread buffer files\n"
		   "  stat     counters of a session (signals, drops, pins, locked bytes)\n"
		   "  show     print the records of one thread's buffer (FILE or TID)\n"
		   "\n"
		   "Run 'ringkeeper COMMAND --help' for the options of each.\n");
}

static void usage_record(FILE *f)
{
	fprintf(f,
		"Usage: ringkeeper record [OPTIONS] -p PID\n"
		"       ringkeeper record [OPTIONS] -- CMD [ARGS...]\n"
		"       ringkeeper record --resume SESSION [--root DIR]\n"
		"\n"
		"Trace every thread of PID (and, with inheritance, every thread and process it\n"
		"creates), or start CMD traced from its first instruction. Stops when the\n"
		"target exits, after --duration, or on SIGINT/SIGTERM. Needs root.\n"
		"Each thread's context switches are written as PERF_RECORD_SWITCH records into\n"
		"ROOT/SESSION/sched/TID.\n"
		"\n"
		"Options:\n"
		"  -p, --pid PID          trace this existing process\n"
		"  -e, --event LIST       also record perf events, per thread: software events\n"
		"                         (cpu-clock, task-clock, page-faults, ...), tracepoints\n"
		"                         (sched:sched_wakeup), hardware events where a PMU exists,\n"
		"                         Intel PT as perf writes it (intel_pt//, intel_pt/cyc,\n"
		"                         mtc_period=0/u) where the intel_pt PMU exists\n"
		"  -F, --freq HZ          sampling frequency of -e events (default 4000)\n"
		"  -c, --count N          sample every N events instead (tracepoints: 1)\n"
		"  -g                     record user (and kernel) call chains\n"
		"      --exclude-kernel   count and unwind user space only\n"
		"      --cpu-ring SIZE    kernel ring per CPU for -e events (default 256K)\n"
		"  -m, --mmap-pages SIZE  data ring per thread and source: pages, or bytes with\n"
		"                         a K/M/G suffix; rounded up to a power of two (default:\n"
		"                         512K, or less so that a thread's buffers fit in one\n"
		"                         CPU's share of the budget)\n"
		"      --aux SIZE         AUX area of each thread's intel_pt file (power of two;\n"
		"                         default 256K); the history of PT kept per thread\n"
		"      --cpu-aux SIZE     kernel AUX ring per CPU for intel_pt (default 1M)\n"
		"      --mlock-kb KB      locked-memory budget per user, in KiB (default:\n"
		"                         perf_event_mlock_kb x online CPUs)\n"
		"      --workers N        pin worker threads (default: online CPUs)\n"
		"      --linger-ms MS     keep an off-CPU thread's buffer locked this long, so a\n"
		"                         thread bouncing on and off CPU costs no syscall (20)\n"
		"      --tick-ms MS       drain period of the BPF ringbuf (5)\n"
		"      --ringbuf-size SZ  BPF signal ringbuf size, power of two (4M)\n"
		"      --no-inherit       do not trace children and new threads\n"
		"      --on-exit keep|drop  keep an exited thread's files (default), or remove\n"
		"                         them when it exits (the RFC's truncate)\n"
		"      --max-threads N    trace at most N threads at a time; others are not\n"
		"                         traced and counted (stat: threads not traced)\n"
		"      --max-shm SIZE     create at most SIZE of buffer files in the session\n"
		"      --min-run-us US    do not lock the buffer of a thread whose last run on\n"
		"                         CPU was shorter than US: it would be off CPU before\n"
		"                         the lock lands (default 100; 0: lock every run)\n"
		"  -r, --realtime PRIO    run the event loop at SCHED_FIFO PRIO (default 1; 0:\n"
		"                         normal), so thousands of busy threads cannot starve\n"
		"                         it into dropping signals; CMD runs at normal priority\n"
		"  -d, --duration SECS    stop after SECS seconds\n"
		"      --session NAME     session name (default: date-time-loaderpid)\n"
		"      --root DIR         where sessions live (default " RK_DEFAULT_ROOT ")\n"
		"      --keep             leave the maps pinned in " RK_BPFFS_DIR " at exit\n"
		"      --ready-fd FD      write \"ready\\n\" to FD once tracing is on\n"
		"      --resume SESSION   continue a session whose recorder was killed: its BPF\n"
		"                         programs stayed attached (pinned in bpffs) and their\n"
		"                         signals waited in the pinned ringbuf; the live threads'\n"
		"                         files are taken over as they are (sched-only sessions)\n"
		"  -v, --verbose          libbpf and loader details\n"
		"  -h, --help             this text\n");
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || *end || *out > max)
		return -EINVAL;
	return 0;
}

static uint64_t round_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "event", required_argument, NULL, 'e' },
		{ "freq", required_argument, NULL, 'F' },
		{ "count", required_argument, NULL, 'c' },
		{ "exclude-kernel", no_argument, NULL, 12 },
		{ "cpu-ring", required_argument, NULL, 13 },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "mlock-kb", required_argument, NULL, 1 },
		{ "workers", required_argument, NULL, 2 },
		{ "linger-ms", required_argument, NULL, 3 },
		{ "tick-ms", required_argument, NULL, 4 },
		{ "ringbuf-size", required_argument, NULL, 5 },
		{ "no-inherit", no_argument, NULL, 6 },
		{ "session", required_argument, NULL, 7 },
		{ "root", required_argument, NULL, 8 },
		{ "keep", no_argument, NULL, 9 },
		{ "ready-fd", required_argument, NULL, 10 },
		{ "aux", required_argument, NULL, 11 },
		{ "cpu-aux", required_argument, NULL, 18 },
		{ "on-exit", required_argument, NULL, 14 },
		{ "resume", required_argument, NULL, 17 },
		{ "max-threads", required_argument, NULL, 15 },
		{ "max-shm", required_argument, NULL, 16 },
		{ "realtime", required_argument, NULL, 'r' },
		{ "min-run-us", required_argument, NULL, 19 },
		{ "duration", required_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct rk_record_opts o = {
		.root = RK_DEFAULT_ROOT,
		.data_size = DEFAULT_DATA_SIZE,
		.linger_ns = 20 * 1000000ull,
		.tick_ns = 5 * 1000000ull,
		.ringbuf_size = 4u << 20,
		.inherit = 1,
		.ready_fd = -1,
		.cpu_ring = 256 * 1024,
		.rt_prio = 1,
		.min_run_ns = 100 * 1000ull,
	};
	struct rk_evsel_opts eo = { 0 };
	const char *events = NULL;
	char msg[512];
	uint64_t mlock_kb = 0, size, cpu_kb;
	int have_m = 0;
	unsigned long long v;
	char b1[32], b2[32], b3[32];
	int c, have_budget = 0, aux_ev = 0;

	while ((c = getopt_long(argc, argv, "+p:m:d:e:F:c:gr:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_uint(optarg, INT_MAX, &v) || !v) {
				rk_err("-p: not a pid: '%s'", optarg);
				return 2;
			}
			o.pid = (pid_t)v;
			break;
		case 'm':
			if (rk_parse_size(optarg, 1, &size) || !size) {
				rk_err("-m: not a size: '%s' (pages, or bytes with K/M/G)", optarg);
				return 2;
			}
			if (size < RK_PAGE_SIZE) {
				rk_err("-m %s: the data ring needs at least one page (4 KiB)",
				       optarg);
				return 2;
			}
			if (size > (1ull << 30)) {
				rk_err("-m %s: more than 1 GiB per thread is not supported",
				       optarg);
				return 2;
			}
			if (round_pow2(size) != size) {
				fprintf(stderr,
					"ringkeeper: rounding -m %s up to %s (a power of two)\n",
					optarg, rk_fmt_size(round_pow2(size), b1, sizeof(b1)));
				size = round_pow2(size);
			}
			o.data_size = size;
			have_m = 1;
			break;
		case 1:
			if (parse_uint(optarg, 1ull << 40, &v) || !v) {
				rk_err("--mlock-kb: not a positive number of KiB: '%s'", optarg);
				return 2;
			}
			mlock_kb = v;
			have_budget = 1;
			break;
		case 2:
			if (parse_uint(optarg, 256, &v) || !v) {
				rk_err("--workers: expected 1..256, got '%s'", optarg);
				return 2;
			}
			o.workers = (unsigned int)v;
			break;
		case 3:
			if (parse_uint(optarg, 3600000, &v)) {
				rk_err("--linger-ms: not a number of ms: '%s'", optarg);
				return 2;
			}
			o.linger_ns = v * 1000000ull;
			break;
		case 4:
			if (parse_uint(optarg, 1000, &v) || !v) {
				rk_err("--tick-ms: expected 1..1000, got '%s'", optarg);
				return 2;
			}
			o.tick_ns = v * 1000000ull;
			break;
		case 5:
			if (rk_parse_size(optarg, 0, &size) || size < 4096 || size > (1ull << 30) ||
			    round_pow2(size) != size) {
				rk_err("--ringbuf-size: need a power of two from 4K to 1G, got '%s'",
				       optarg);
				return 2;
			}
			o.ringbuf_size = size;
			break;
		case 6:
			o.inherit = 0;
			break;
		case 7:
			if (!*optarg || strchr(optarg, '/') || !strcmp(optarg, ".") ||
			    !strcmp(optarg, "..") || strlen(optarg) > 100) {
				rk_err("--session: '%s' is not a usable name (no '/', 1..100 chars)",
				       optarg);
				return 2;
			}
			o.session = optarg;
			break;
		case 8:
			o.root = optarg;
			break;
		case 19:
			if (parse_uint(optarg, 1000000000, &v)) {
				rk_err("--min-run-us: not a number of microseconds: '%s'", optarg);
				return 2;
			}
			o.min_run_ns = v * 1000ull;
			break;
		case 'r':
			if (parse_uint(optarg, 99, &v)) {
				rk_err("--realtime: a SCHED_FIFO priority from 1 to 99, or 0 for none; "
				       "got '%s'",
				       optarg);
				return 2;
			}
			o.rt_prio = (int)v;
			break;
		case 9:
			o.keep = 1;
			break;
		case 10:
			if (parse_uint(optarg, INT_MAX, &v)) {
				rk_err("--ready-fd: not an fd: '%s'", optarg);
				return 2;
			}
			o.ready_fd = (int)v;
			break;
		case 11:
		case 18:
			if (rk_parse_size(optarg, 1, &size) || size < RK_PAGE_SIZE ||
			    size > (1ull << 30) || round_pow2(size) != size) {
				rk_err("--%s: need a power of two from 4K to 1G, got '%s'",
				       c == 11 ? "aux" : "cpu-aux", optarg);
				return 2;
			}
			if (c == 11)
				o.aux_size = size;
			else
				o.cpu_aux = size;
			break;
		case 'd':
			if (parse_uint(optarg, 365ull * 86400, &v) || !v) {
				rk_err("--duration: not a number of seconds: '%s'", optarg);
				return 2;
			}
			o.duration_ns = v * 1000000000ull;
			break;
		case 'e':
			events = optarg;
			break;
		case 'F':
			if (parse_uint(optarg, 1000000, &v) || !v) {
				rk_err("-F: not a frequency in Hz: '%s'", optarg);
				return 2;
			}
			eo.freq = v;
			break;
		case 'c':
			if (parse_uint(optarg, 1ull << 62, &v) || !v) {
				rk_err("-c: not a positive count: '%s'", optarg);
				return 2;
			}
			eo.period = v;
			break;
		case 'g':
			eo.callgraph = 1;
			break;
		case 12:
			eo.exclude_kernel = 1;
			break;
		case 13:
			if (rk_parse_size(optarg, 1, &size) || size < 2 * RK_PAGE_SIZE ||
			    size > (1ull << 30) || round_pow2(size) != size) {
				rk_err("--cpu-ring: need a power of two from 8K to 1G, got '%s'",
				       optarg);
				return 2;
			}
			o.cpu_ring = size;
			break;
		case 17:
			if (!*optarg || strchr(optarg, '/')) {
				rk_err("--resume: not a session name: '%s'", optarg);
				return 2;
			}
			o.resume = optarg;
			break;
		case 14:
			if (strcmp(optarg, "keep") && strcmp(optarg, "drop")) {
				rk_err("--on-exit: 'keep' or 'drop', not '%s'", optarg);
				return 2;
			}
			o.on_exit_drop = !strcmp(optarg, "drop");
			break;
		case 15:
			if (parse_uint(optarg, RK_MAX_ENTRIES, &v) || !v) {
				rk_err("--max-threads: expected 1..%d, got '%s'", RK_MAX_ENTRIES,
				       optarg);
				return 2;
			}
			o.max_threads = (uint32_t)v;
			break;
		case 16:
			if (rk_parse_size(optarg, 0, &size) || !size) {
				rk_err("--max-shm: not a size: '%s' (bytes, or K/M/G)", optarg);
				return 2;
			}
			o.max_shm = size;
			break;
		case 'v':
			rk_verbose = 1;
			break;
		case 'h':
			usage_record(stdout);
			return 0;
		default:
			usage_record(stderr);
			return 2;
		}
	}
	if (optind < argc)
		o.argv = &argv[optind];
	if (o.resume) {
		/* Everything else comes from the session itself. */
		if (o.pid || o.argv || events) {
			rk_err("--resume continues a session as it was: no -p, command or -e");
			return 2;
		}
		return rk_record(&o) ? 1 : 0;
	}
	if (o.pid && o.argv) {
		rk_err("give either -p PID or a command after --, not both");
		return 2;
	}
	if (!o.pid && !o.argv) {
		rk_err("nothing to trace: give -p PID or -- CMD ARGS (see --help)");
		return 2;
	}
	if (eo.freq && eo.period) {
		rk_err("give -F or -c, not both");
		return 2;
	}
	if ((eo.freq || eo.period || eo.callgraph || eo.exclude_kernel) && !events) {
		rk_err("-F, -c, -g and --exclude-kernel apply to -e events: none given");
		return 2;
	}
	if (events &&
	    rk_evsel_parse(events, &eo, o.evs, RK_MAX_SRC - 1, &o.nev, msg, sizeof(msg))) {
		rk_err("-e: %s", msg);
		return 2;
	}
	for (c = 0; c < o.nev; c++) {
		o.evs[c].entry.attr.inherit = o.inherit ? 1 : 0;
		aux_ev |= o.evs[c].aux;
	}
	if ((o.aux_size || o.cpu_aux) && !aux_ev) {
		rk_err("--aux/--cpu-aux: no selected event has an AUX area (only intel_pt has; "
		       "the sched source has none)");
		return 2;
	}
	if (aux_ev && !o.aux_size)
		o.aux_size = 256 * 1024;
	if (aux_ev && !o.cpu_aux)
		o.cpu_aux = 1u << 20;
	if (rk_read_u64_file("/proc/sys/kernel/perf_event_mlock_kb", &cpu_kb))
		cpu_kb = 516; /* the kernel's default */
	if (!have_budget)
		mlock_kb = cpu_kb * rk_online_cpus();
	if (!have_m) {
		/*
		 * Default: the largest ring such that one running thread's
		 * buffers (one per source) fit in one CPU's share of the budget.
		 */
		uint64_t share = mlock_kb * 1024 / rk_online_cpus();

		while (o.data_size > RK_PAGE_SIZE &&
		       (o.data_size + RK_PAGE_SIZE) * (uint64_t)(1 + o.nev) + o.aux_size > share)
			o.data_size >>= 1;
	}
	o.budget = mlock_kb * 1024;
	/* A running thread wants all its buffers (sched + each -e event) locked. */
	size = rk_bufile_layout_size(o.data_size, 0) * (uint64_t)(1 + o.nev) + o.aux_size;
	if (o.budget < size) {
		rk_err("budget %s is smaller than one thread's buffers, %s (-m %s + one page, "
		       "per source, + --aux): raise --mlock-kb or lower -m/--aux",
		       rk_fmt_size(o.budget, b1, sizeof(b1)), rk_fmt_size(size, b2, sizeof(b2)),
		       rk_fmt_size(o.data_size, b3, sizeof(b3)));
		return 2;
	}
	return rk_record(&o) ? 1 : 0;
}

/* Session directories under @root, newest first (by stat start time). */
struct sess {
	char name[256];
	struct rk_session_stat st;
	int have_stat;
};

static int sess_cmp(const void *a, const void *b)
{
	const struct sess *x = a, *y = b;

	if (x->st.start_ns != y->st.start_ns)
		return x->st.start_ns < y->st.start_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int list_sessions(const char *root, struct sess **out, size_t *n)
{
	struct sess *v = NULL, *nv;
	struct dirent *de;
	size_t cnt = 0;
	char path[PATH_MAX];
	DIR *d = opendir(root);

	*out = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(v->name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", root, de->d_name, RK_SCHED_DIR);
		if (access(path, F_OK))
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		memset(&v[cnt], 0, sizeof(v[cnt]));
		snprintf(v[cnt].name, sizeof(v[cnt].name), "%s", de->d_name);
		snprintf(path, sizeof(path), "%s/%s", root, de->d_name);
		v[cnt].have_stat = !rk_session_stat_read(path, &v[cnt].st);
		cnt++;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), sess_cmp);
	*out = v;
	*n = cnt;
	return 0;
}

/* list_sessions(), saying what went wrong. Return: 0 or 1 (the exit status). */
static int sessions(const char *root, struct sess **v, size_t *n)
{
	int err = list_sessions(root, v, n);

	if (err)
		rk_err("cannot read %s: %s", root, strerror(-err));
	return err ? 1 : 0;
}

static int tid_cmp(const void *a, const void *b)
{
	unsigned long x = strtoul(*(char *const *)a, NULL, 10);
	unsigned long y = strtoul(*(char *const *)b, NULL, 10);

	if (x != y)
		return x < y ? -1 : 1;
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void ls_session(const char *root, const struct sess *s, int json, int *first)
{
	char dir[PATH_MAX], path[PATH_MAX + 300], b1[32];
	char **names = NULL, **nn;
	size_t n = 0, i;
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s/%s", root, s->name, RK_SCHED_DIR);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn)
			break;
		names = nn;
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	if (d)
		closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), tid_cmp);
	if (!json) {
		printf("%s  %s  %zu threads  %s\n", s->name,
		       !s->have_stat		       ? "no-stat" :
		       rk_session_alive(&s->st)	       ? "running" :
		       s->st.state == RK_SESSION_ENDED ? "ended" :
							 "dead-loader",
		       n, s->have_stat ? s->st.command : "");
		printf("  %8s %8s %-16s %-8s %-6s %10s %10s  %s\n", "TID", "TGID", "COMM", "STATE",
		       "PINNED", "BYTES", "RING", "FILE");
	}
	for (i = 0; i < n; i++) {
		const char *msg = NULL;
		struct rk_bufile *bf;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		bf = rk_bufile__open(path, &msg);
		if (!bf) {
			if (json) {
				printf("%s{\"session\":", *first ? "" : ",\n");
				rk_json_str(stdout, s->name);
				printf(",\"file\":");
				rk_json_str(stdout, path);
				printf(",\"error\":");
				rk_json_str(stdout, msg ? msg : strerror(errno));
				printf("}");
				*first = 0;
			} else {
				printf("  %8s %s: %s\n", names[i], path,
				       msg ? msg : strerror(errno));
			}
			continue;
		}
		{
			__u64 head, tail, used;
			char comm[RK_COMM_LEN];
			int pinned = (int)__atomic_load_n(&bf->ident->pinned, __ATOMIC_RELAXED) &&
				     s->have_stat && rk_session_alive(&s->st);

			/* Checked at open; a live pair that went bad since reads as empty. */
			used = rk_bufile__ring(bf, &head, &tail) ? 0 : head - tail;
			memcpy(comm, bf->ident->comm, sizeof(comm));
			comm[RK_COMM_LEN - 1] = '\0';
			if (json) {
				printf("%s{\"session\":", *first ? "" : ",\n");
				rk_json_str(stdout, s->name);
				printf(",\"tid\":%u,\"tgid\":%u,\"comm\":", bf->ident->tid,
				       bf->ident->tgid);
				rk_json_str(stdout, comm);
				printf(",\"state\":\"%s\",\"pinned\":%s,\"bytes\":%llu,"
				       "\"data_size\":%llu,\"file\":",
				       rk_thread_state_name(bf->ident->state),
				       pinned ? "true" : "false", (unsigned long long)used,
				       (unsigned long long)bf->data_size);
				rk_json_str(stdout, path);
				printf("}");
				*first = 0;
			} else {
				printf("  %8u %8u %-16s %-8s %-6s %10llu %10s  %s\n",
				       bf->ident->tid, bf->ident->tgid, comm,
				       rk_thread_state_name(bf->ident->state),
				       pinned ? "yes" : "no", (unsigned long long)used,
				       rk_fmt_size(bf->data_size, b1, sizeof(b1)), path);
			}
		}
		rk_bufile__free(bf);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* show -e: which source's buffers a TID is looked up in; --pt: dump the AUX area. */
static const char *show_event = RK_SCHED_DIR;
static int show_pt;
static const char *show_core;

static int common_opts(int argc, char **argv, const char *usage, int *json, const char **root,
		       const char **session, int *all)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "root", required_argument, NULL, 'r' },
		{ "session", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "event", required_argument, NULL, 'e' },
		{ "pt", optional_argument, NULL, 'P' },
		{ "core", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "+jr:s:ae:h", lo, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (!session || strchr(optarg, '/'))
				goto bad;
			show_event = optarg;
			break;
		case 'C':
			if (!session)
				goto bad;
			show_core = optarg;
			break;
		case 'P':
			if (!session)
				goto bad;
			if (!optarg || !strcmp(optarg, "packets")) {
				show_pt = 1;
			} else if (!strcmp(optarg, "insn")) {
				show_pt = 2;
			} else if (!strcmp(optarg, "branches")) {
				show_pt = 3;
			} else {
				rk_err("--pt=%s: packets, insn or branches", optarg);
				return -2;
			}
			break;
		case 'j':
			*json = 1;
			break;
		case 'r':
			*root = optarg;
			break;
		case 's':
			if (!session)
				goto bad;
			*session = optarg;
			break;
		case 'a':
			if (!all)
				goto bad;
			*all = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			goto bad;
		}
	}
	return 1;
bad:
	fputs(usage, stderr);
	return -2;
}

static int cmd_ls(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper ls [--json] [--root DIR] [SESSION...]\n"
		"\n"
		"List sessions (newest first) and, for each, one line per thread buffer:\n"
		"tid, tgid, comm, state (live/exiting/exited/stopped), whether it is locked\n"
		"in memory now, bytes of records held, ring size, file.\n";
	const char *root = RK_DEFAULT_ROOT;
	struct sess *v;
	size_t n, i;
	int json = 0, first = 1, r, matched = 0;

	r = common_opts(argc, argv, usage, &json, &root, NULL, NULL);
	if (r <= 0)
		return -r;
	if (sessions(root, &v, &n))
		return 1;
	if (json)
		printf("[");
	for (i = 0; i < n; i++) {
		int want = optind >= argc, k;

		for (k = optind; k < argc; k++)
			want |= !strcmp(argv[k], v[i].name);
		if (!want)
			continue;
		matched++;
		ls_session(root, &v[i], json, &first);
	}
	if (json)
		printf("]\n");
	else if (!n)
		printf("no sessions in %s\n", root);
	free(v);
	if (optind < argc && !matched) {
		rk_err("no such session in %s", root);
		return 1;
	}
	return 0;
}

static int cmd_stat(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper stat [--json] [--root DIR] [--all | SESSION]\n"
		"\n"
		"Counters of a session (default: the newest): BPF signals and ringbuf drops,\n"
		"records written and overwritten, threads, pins, unpins, refusals by the\n"
		"budget, locked bytes now and peak against the budget, the loader's VmLck peak.\n";
	const char *root = RK_DEFAULT_ROOT;
	struct sess *v;
	size_t n, i;
	int json = 0, all = 0, r, shown = 0;

	r = common_opts(argc, argv, usage, &json, &root, NULL, &all);
	if (r <= 0)
		return -r;
	if (sessions(root, &v, &n))
		return 1;
	for (i = 0; i < n; i++) {
		if (optind < argc ? strcmp(argv[optind], v[i].name) : (!all && shown))
			continue;
		if (!v[i].have_stat) {
			rk_err("session %s has no readable stat file", v[i].name);
			continue;
		}
		rk_session_print(stdout, v[i].name, &v[i].st, json);
		shown++;
	}
	free(v);
	if (!shown) {
		rk_err(optind < argc ? "no such session in %s" : "no sessions in %s", root);
		return 1;
	}
	return 0;
}

/* Symbols of a thread file's process: <session>/sideband/<tgid> next to <session>/<src>/<tid>. */
static struct rk_symbols *thread_symbols(const char *path, const struct rk_bufile *bf)
{
	char sb[PATH_MAX + 400], *p;

	snprintf(sb, sizeof(sb), "%s", path);
	p = strrchr(sb, '/');
	if (p) {
		*p = '\0';
		p = strrchr(sb, '/');
	}
	if (!p)
		return rk_symbols__new(NULL);
	snprintf(p + 1, sizeof(sb) - (size_t)(p + 1 - sb), "%s/%u", RK_SIDEBAND_DIR,
		 bf->ident->tgid);
	return rk_symbols__new(sb);
}

/* show --pt: the AUX area of @bf as packets, instructions or branches. */
static int show_pt_trace(const char *path, struct rk_bufile *bf)
{
	struct rk_symbols *syms = NULL;
	struct pt_image *img = NULL;
	struct pt_config cfg;
	const char *why = NULL;
	__u64 aux_off = 0;
	int ret = 0;
	ssize_t n;
	long pk;
	__u8 *aux;

	if (!bf->aux_size) {
		rk_err("%s has no AUX area: not an Intel PT buffer", path);
		return 1;
	}
	if (rk_pt_config(bf->pmu->desc, bf->pmu->info.pmu_descsz, bf->pmu->attr.config, &cfg,
			 &why)) {
		rk_err("%s: cannot decode its Intel PT: %s", path, why);
		return 1;
	}
	aux = malloc(bf->aux_size);
	n = aux ? rk_bufile__read_aux(bf, aux, bf->aux_size, &aux_off) : -ENOMEM;
	if (n < 0) {
		rk_err("%s: %s", path, strerror((int)-n));
		free(aux);
		return 1;
	}
	if (show_pt == 1) {
		pk = rk_pt_dump(stdout, aux, (size_t)n, aux_off, &cfg);
	} else {
		int nmaps = 0, ncore = 0;
		const char *why_core = NULL;

		syms = thread_symbols(path, bf);
		img = pt_image_alloc(path);
		if (syms && img)
			nmaps = rk_pt_image_add_maps(img, syms);
		if (!syms || !img) {
			pk = -pte_nomem;
		} else if (show_core &&
			   (ncore = rk_pt_image_add_core(img, show_core, &why_core)) <= 0) {
			rk_err("--core %s: %s", show_core, why_core);
			pk = 0;
			ret = 1;
		} else {
			if (!nmaps && !ncore)
				rk_err("%s: no mapped files in the sideband of process %u (and no "
				       "--core): only events decode",
				       path, bf->ident->tgid);
			pk = rk_pt_insn(stdout, aux, (size_t)n, &cfg, img, syms,
					show_pt == 3 ? RK_PT_BRANCHES : RK_PT_INSN);
		}
		pt_image_free(img);
		rk_symbols__free(syms);
	}
	free(aux);
	if (pk < 0) {
		rk_err("%s: %s", path, pt_errstr(pt_errcode((int)pk)));
		return 1;
	}
	return ret;
}

static int cmd_show(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper show [--json] [--root DIR] [--session S] [-e EVENT] FILE|TID\n"
		"\n"
		"Print one thread's buffer using only the file: identity, pmu_info (the attr\n"
		"that says how to parse it), then every record from data_tail to data_head,\n"
		"oldest first, in perf script's layout; sample addresses are resolved through\n"
		"the sideband of the thread's process and the mapped files. A TID is looked up\n"
		"in the newest session that has it (or in --session), in the sched buffers or,\n"
		"with -e, in those of that event (e.g. -e cpu-clock).\n"
		"  --pt[=packets|insn|branches]\n"
		"         decode the AUX area as Intel PT, configured by the intel_pt\n"
		"         descriptor in the file's own pmu_info, from its oldest PSB on:\n"
		"         packets (like ptdump; the default), instructions (like ptxed) or\n"
		"         taken branches; insn and branches read the code from the files the\n"
		"         process had mapped (its sideband's MMAP2 records), as they are on\n"
		"         disk now; kernel code is not decoded (an error line, then resync)\n"
		"  --core FILE\n"
		"         with --pt=insn|branches: also take the code from this ELF core dump\n"
		"         (its memory wins over the files where both have an address)\n";
	const char *root = RK_DEFAULT_ROOT, *session = NULL, *msg = NULL;
	char path[PATH_MAX + 300];
	struct rk_symbols *syms = NULL;
	struct rk_bufile *bf;
	int json = 0, r, err;

	r = common_opts(argc, argv, usage, &json, &root, &session, NULL);
	if (r <= 0)
		return -r;
	if (optind != argc - 1) {
		fputs(usage, stderr);
		return 2;
	}
	snprintf(path, sizeof(path), "%s", argv[optind]);
	if (strspn(argv[optind], "0123456789") == strlen(argv[optind]) && access(path, F_OK)) {
		struct sess *v;
		size_t n, i;

		if (sessions(root, &v, &n))
			return 1;
		path[0] = '\0';
		for (i = 0; i < n && !path[0]; i++) {
			char p[PATH_MAX + 300];

			if (session && strcmp(session, v[i].name))
				continue;
			snprintf(p, sizeof(p), "%s/%s/%s/%s", root, v[i].name, show_event,
				 argv[optind]);
			if (!access(p, F_OK))
				snprintf(path, sizeof(path), "%s", p);
		}
		free(v);
		if (!path[0]) {
			rk_err("no buffer for tid %s in %s%s%s", argv[optind], root,
			       session ? " session " : "", session ? session : "");
			return 1;
		}
	}
	bf = rk_bufile__open(path, &msg);
	if (!bf) {
		if (errno == EBADMSG && msg)
			rk_err("%s is not a valid ringkeeper buffer: %s", path, msg);
		else
			rk_err("cannot read %s: %s", path, strerror(errno));
		return 1;
	}
	if (show_core && show_pt < 2) {
		rk_err("--core needs --pt=insn or --pt=branches");
		rk_bufile__free(bf);
		return 2;
	}
	if (show_pt) {
		r = show_pt_trace(path, bf);
		rk_bufile__free(bf);
		return r;
	}
	/* Addresses resolve through the sideband of the thread's process. */
	if (bf->pmu->attr.sample_type & PERF_SAMPLE_IP)
		syms = thread_symbols(path, bf);
	err = rk_show(stdout, bf, path, json, syms, NULL);
	rk_symbols__free(syms);
	rk_bufile__free(bf);
	if (err) {
		rk_err("%s: records do not parse past the point shown (%s)", path, strerror(-err));
		return 1;
	}
	return 0;
}

static int cmd_export(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper export --perf-data FILE [--tid T | --pid P] [--session S]\n"
		"                         [--root DIR]\n"
		"\n"
		"Write the per-thread buffers of a session (default: the newest), with the\n"
		"sideband of their processes, as a perf.data file sorted by time, for\n"
		"'perf script -i FILE' and 'perf report -i FILE'. Each source (sched, every -e\n"
		"event) becomes one attr.\n";
	static const struct option lo[] = {
		{ "perf-data", required_argument, NULL, 'o' },
		{ "tid", required_argument, NULL, 't' },
		{ "pid", required_argument, NULL, 'p' },
		{ "session", required_argument, NULL, 's' },
		{ "root", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *root = RK_DEFAULT_ROOT, *session = NULL;
	struct rk_export_opts eo = { 0 };
	struct rk_export_stats es;
	unsigned long long v;
	char dir[PATH_MAX];
	struct sess *sv;
	size_t n, i;
	int c, err;

	while ((c = getopt_long(argc, argv, "+o:t:p:s:r:h", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			eo.out = optarg;
			break;
		case 't':
		case 'p':
			if (parse_uint(optarg, INT_MAX, &v) || !v) {
				rk_err("--%s: not a %s: '%s'", c == 't' ? "tid" : "pid",
				       c == 't' ? "tid" : "pid", optarg);
				return 2;
			}
			if (c == 't')
				eo.tid = (pid_t)v;
			else
				eo.pid = (pid_t)v;
			break;
		case 's':
			session = optarg;
			break;
		case 'r':
			root = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!eo.out || optind != argc) {
		fputs(usage, stderr);
		return 2;
	}
	if (eo.tid && eo.pid) {
		rk_err("give --tid or --pid, not both");
		return 2;
	}
	if (sessions(root, &sv, &n))
		return 1;
	for (i = 0; i < n && session && strcmp(sv[i].name, session); i++)
		;
	if (i == n) {
		rk_err(session ? "no session %s in %s" : "%sno sessions in %s",
		       session ? session : "", root);
		free(sv);
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/%s", root, sv[i].name);
	free(sv);
	eo.session_dir = dir;
	err = rk_export_perf_data(&eo, &es);
	if (err)
		return 1;
	fprintf(stderr,
		"ringkeeper: wrote %s: %llu records (%llu samples) of %llu threads, %u attrs%s\n",
		eo.out, es.records, es.samples, es.threads, es.attrs,
		es.skipped ? " (some files skipped, see above)" : "");
	return 0;
}

static int cmd_pmu(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper pmu [--json]\n"
		"\n"
		"List the PMUs of this machine (/sys/bus/event_source/devices) and the PMU\n"
		"descriptor a buffer of each carries in its pmu_info: for intel_pt, what a\n"
		"decoder needs (CPU, CPUID 0x15, nominal ratio, caps, config bit layout);\n"
		"software and tracepoint PMUs have an empty descriptor.\n";
	static const char *const fmt[RK_PT_NFMT] = { RK_PT_FMT_NAMES };
	const char *const dir = "/sys/bus/event_source/devices";
	int json = 0, first = 1, r, i;
	struct dirent *de;
	char path[PATH_MAX + 300];
	DIR *d;

	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};

	while ((r = getopt_long(argc, argv, "+jh", lo, NULL)) != -1) {
		if (r == 'j') {
			json = 1;
		} else if (r == 'h') {
			fputs(usage, stdout);
			return 0;
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 2;
	}
	d = opendir(dir);
	if (!d) {
		rk_err("cannot read %s: %s", dir, strerror(errno));
		return 1;
	}
	if (json)
		printf("[");
	while ((de = readdir(d))) {
		struct rk_pt_desc pd;
		uint64_t type = 0;
		int pt;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/type", dir, de->d_name);
		rk_read_u64_file(path, &type);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		pt = !strcmp(de->d_name, "intel_pt") && !rk_pt_desc_read(&pd, path);
		if (json) {
			printf("%s{\"name\":", first ? "" : ",");
			rk_json_str(stdout, de->d_name);
			printf(",\"type\":%llu,\"pmu_descsz\":%zu", (unsigned long long)type,
			       pt ? sizeof(pd) : (size_t)0);
			if (pt)
				printf(",\"cpu\":{\"family\":%u,\"model\":%u,\"stepping\":%u},"
				       "\"cpuid_0x15\":[%u,%u],\"max_nonturbo_ratio\":%u,"
				       "\"mtc_periods\":%u,\"caps\":%u,\"num_address_ranges\":%u",
				       pd.cpu_family, pd.cpu_model, pd.cpu_stepping,
				       pd.cpuid_0x15_eax, pd.cpuid_0x15_ebx, pd.max_nonturbo_ratio,
				       pd.mtc_periods, pd.caps, pd.num_address_ranges);
			printf("}");
			first = 0;
			continue;
		}
		printf("%-16s type %-4llu descriptor: %s\n", de->d_name, (unsigned long long)type,
		       pt ? "intel_pt v1" : "none (0 bytes)");
		if (!pt)
			continue;
		printf("  cpu family %u model %u stepping %u; cpuid 0x15 %u/%u; max_nonturbo_ratio %u\n",
		       pd.cpu_family, pd.cpu_model, pd.cpu_stepping, pd.cpuid_0x15_eax,
		       pd.cpuid_0x15_ebx, pd.max_nonturbo_ratio);
		printf("  mtc_periods %#x cyc_thresholds %#x psb_periods %#x caps %#x address ranges "
		       "%u\n  config:",
		       pd.mtc_periods, pd.cyc_thresholds, pd.psb_periods, pd.caps,
		       pd.num_address_ranges);
		for (i = 0; i < RK_PT_NFMT; i++)
			if (*fmt[i] && (pd.fmt[i][1] & 0x80))
				printf(" %s=%u-%u", fmt[i], pd.fmt[i][0], pd.fmt[i][1] & 0x7f);
		printf("\n");
	}
	closedir(d);
	if (json)
		printf("]\n");
	else if (!rk_pt_present(NULL))
		printf("intel_pt: not present on this machine\n");
	return 0;
}

static int cmd_gc(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper gc [--older-than SECS] [--max-size SIZE] [--dry-run] [--root DIR]\n"
		"\n"
		"Remove the buffer files of dead threads (exited, or of a session whose\n"
		"recorder is gone): those dead for more than SECS, then the oldest ones until\n"
		"all sessions take at most SIZE (K/M/G). Live threads of a running session are\n"
		"never touched; an ended session left without buffers is removed entirely.\n";
	static const struct option lo[] = {
		{ "older-than", required_argument, NULL, 'o' },
		{ "max-size", required_argument, NULL, 's' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "root", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct rk_gc_opts go = { .root = RK_DEFAULT_ROOT };
	unsigned long long v;
	uint64_t size;
	int c;

	while ((c = getopt_long(argc, argv, "+o:s:nr:h", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (parse_uint(optarg, 100ull * 365 * 86400, &v)) {
				rk_err("--older-than: not a number of seconds: '%s'", optarg);
				return 2;
			}
			go.older_than_ns = v * 1000000000ull;
			break;
		case 's':
			if (rk_parse_size(optarg, 0, &size)) {
				rk_err("--max-size: not a size: '%s'", optarg);
				return 2;
			}
			go.max_bytes = size;
			break;
		case 'n':
			go.dry_run = 1;
			break;
		case 'r':
			go.root = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind != argc || (!go.older_than_ns && !go.max_bytes)) {
		rk_err("gc: give --older-than and/or --max-size (see --help)");
		return 2;
	}
	return rk_gc(&go) ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage_main(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage_main(stdout);
		return 0;
	}
	/* Subcommand options start after the command name. */
	argc--;
	argv++;
	optind = 1;
	if (!strcmp(cmd, "record"))
		return cmd_record(argc, argv);
	if (!strcmp(cmd, "ls"))
		return cmd_ls(argc, argv);
	if (!strcmp(cmd, "stat"))
		return cmd_stat(argc, argv);
	if (!strcmp(cmd, "show"))
		return cmd_show(argc, argv);
	if (!strcmp(cmd, "export"))
		return cmd_export(argc, argv);
	if (!strcmp(cmd, "gc"))
		return cmd_gc(argc, argv);
	if (!strcmp(cmd, "pmu"))
		return cmd_pmu(argc, argv);
	rk_err("unknown command '%s' (see ringkeeper --help)", cmd);
	return 2;
}
