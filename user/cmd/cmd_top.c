// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cmd_top.c - ringkeeper top: a live view of a running session, each
 * thread's last interval (on-CPU share, runs, scheduling delay, state now),
 * refreshed, sorted, like perf top's screen (but recomputed from the files
 * each time: no decay, every figure is of the last interval only; what a
 * refresh reads is what changed since the last, rk_tl_live). 'q' quits.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include "cmd.h"
#include "schedsum.h"
#include "timeline.h"
#include "util.h"

static volatile sig_atomic_t top_stop;

/*
 * The terminal's settings before top took its keys (no line editing, no
 * echo: 'q' quits at once and is not printed); put back on every way out,
 * signals included (tcsetattr() is async-signal-safe).
 */
static struct termios tty_saved;
static volatile sig_atomic_t tty_taken;

static void tty_restore(void)
{
	if (tty_taken) {
		tcsetattr(STDIN_FILENO, TCSADRAIN, &tty_saved);
		tty_taken = 0;
	}
}

/* Keys one at a time, unechoed; Ctrl-C still a signal. Return: 1 taken, 0 not a terminal. */
static int tty_take(void)
{
	struct termios t;

	if (tty_taken)
		return 1;
	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &tty_saved))
		return 0;
	t = tty_saved;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t))
		return 0;
	tty_taken = 1;
	return 1;
}

static void on_stop(int sig)
{
	(void)sig;
	tty_restore();
	top_stop = 1;
}

/*
 * Ctrl-Z: the terminal as it was while stopped, taken again when it goes
 * on. The stop is the default action's, here; in a process group the
 * kernel will not stop (orphaned) it does not happen and top goes on.
 */
static void on_tstp(int sig)
{
	struct sigaction sa;
	sigset_t s;
	int e = errno;

	tty_restore();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(sig, &sa, NULL);
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	raise(sig);
	sigprocmask(SIG_BLOCK, &s, NULL);
	sa.sa_handler = on_tstp;
	sigaction(sig, &sa, NULL);
	if (!top_stop)
		tty_take();
	errno = e;
}

static void top_signals(void)
{
	static const int stops[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	for (i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		sigaction(stops[i], &sa, NULL);
	sa.sa_handler = on_tstp;
	sigaction(SIGTSTP, &sa, NULL);
}

/*
 * Until @deadline (CLOCK_MONOTONIC ns), a signal, or 'q' when @keys (the
 * terminal's keys are ours).
 */
static void top_wait(uint64_t deadline, int keys)
{
	while (!top_stop) {
		uint64_t now = rk_now_mono_ns();
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		struct timespec ts;
		char c;

		if (now >= deadline)
			return;
		if (!keys) {
			ts.tv_sec = (time_t)((deadline - now) / 1000000000ull);
			ts.tv_nsec = (long)((deadline - now) % 1000000000ull);
			/* A signal ends the wait (EINTR) and the loop. */
			nanosleep(&ts, NULL);
			continue;
		}
		if (poll(&p, 1, (int)((deadline - now + 999999) / 1000000)) <= 0)
			continue;
		if (read(STDIN_FILENO, &c, 1) != 1)
			keys = 0; /* the terminal went away: the clock alone */
		else if (c == 'q' || c == 'Q')
			top_stop = 1;
	}
}

struct top_row {
	const struct rk_tl_thread *t;
	struct rk_sched_now n;
};

struct top_opts {
	uint64_t every_ns; /* the interval, and the window shown */
	unsigned long long count; /* refreshes (0: until interrupted) */
	size_t top; /* rows (0: all, or what the terminal holds) */
	int sort, all, batch;
};

static int top_cmp(const void *a, const void *b, void *arg)
{
	const struct top_row *x = a, *y = b;
	int key = *(const int *)arg;
	__u64 vx = 0, vy = 0;

	if (key == RK_SCHED_SORT_ONCPU) {
		vx = x->n.on_ns;
		vy = y->n.on_ns;
	} else if (key == RK_SCHED_SORT_DELAY) {
		vx = x->n.delay_ns;
		vy = y->n.delay_ns;
	} else if (key == RK_SCHED_SORT_RUNS) {
		vx = x->n.runs;
		vy = y->n.runs;
	}
	if (vx != vy)
		return vx > vy ? -1 : 1;
	return x->t->id.tid < y->t->id.tid ? -1 : x->t->id.tid > y->t->id.tid;
}

/* The rows the screen holds: its height less the header (all when not a terminal). */
static size_t screen_rows(const struct top_opts *o)
{
	struct winsize ws;

	if (o->top)
		return o->top;
	if (o->batch || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || ws.ws_row < 8)
		return 0;
	return ws.ws_row - 5;
}

/* What the session read is: ended, its CPUs, what it did not record; what reading it took. */
struct top_src {
	int ended;
	unsigned int ncpus;
	struct rk_loss loss;
	uint64_t took_ns;
};

/*
 * Time on CPU beyond what the CPUs had in the interval cannot be: threads
 * whose switch-out was dropped look on CPU still. Said, never printed as is.
 */
static void top_overrun(__u64 on, const struct top_src *src, const struct top_opts *o)
{
	if (on <= (__u64)src->ncpus * o->every_ns)
		return;
	printf("# %.3f s on CPU is more than %u CPUs had in %.1f s: switches were not recorded "
	       "(threads whose switch-out is missing count as running); %%CPU is not to be "
	       "trusted\n",
	       (double)on / 1e9, src->ncpus, (double)o->every_ns / 1e9);
}

/* One screen of @tl's window [@lo, @hi]. Return: 0 or -ENOMEM. */
static int top_frame(const char *session, const struct rk_timeline *tl, __u64 lo, __u64 hi,
		     const struct top_src *src, const struct top_opts *o)
{
	int ended = src->ended;
	struct top_row *rows = calloc(tl->nthreads ? tl->nthreads : 1, sizeof(*rows));
	size_t i, n = 0, quiet = 0, max = screen_rows(o), ran = 0;
	__u64 on = 0, delay = 0;
	int key = o->sort;
	char when[32] = "";

	if (!rows)
		return -ENOMEM;
	for (i = 0; i < tl->nthreads; i++) {
		struct top_row *r = &rows[n];

		r->t = &tl->threads[i];
		rk_sched_now(r->t, lo, hi, &r->n);
		on += r->n.on_ns;
		delay += r->n.delay_ns;
		ran += r->n.runs || r->n.on_ns;
		if (!r->n.active && !o->all) {
			quiet++;
			continue;
		}
		n++;
	}
	qsort_r(rows, n, sizeof(*rows), top_cmp, &key);
	rk_fmt_utc(rk_now_real_ns(), "%H:%M:%S", when, sizeof(when));
	if (!o->batch)
		fputs("\033[H\033[2J", stdout);
	printf("ringkeeper top: session %s%s, %s UTC, the last %.1f s%s\n"
	       "%zu threads, %zu ran, %.3f s on CPU%s, %.3f s of scheduling delay%s\n",
	       session, ended ? " (ended)" : "", when, (double)o->every_ns / 1e9,
	       ended ? " it recorded" : "", tl->nthreads, ran, (double)on / 1e9,
	       on > (__u64)src->ncpus * o->every_ns ? " (impossible: see below)" : "",
	       (double)delay / 1e9, rk_loss_count(&src->loss) ? " (incomplete: see below)" : "");
	/* Never a slower refresh without a word. */
	if (!ended && src->took_ns > o->every_ns)
		printf("# reading the session took %.2f s, more than the %.1f s interval: refreshed "
		       "that far apart\n",
		       (double)src->took_ns / 1e9, (double)o->every_ns / 1e9);
	printf("%8s %8s %-16s %6s %6s %11s %11s  %s\n", "TID", "PID", "COMM", "%CPU", "RUNS",
	       "DELAY (ms)", "MAX (ms)", "STATE");
	for (i = 0; i < n && (!max || i < max); i++) {
		const struct top_row *r = &rows[i];
		char comm[RK_COMM_LEN];

		snprintf(comm, sizeof(comm), "%.*s", RK_COMM_LEN - 1, r->t->id.comm);
		rk_strip_controls(comm);
		printf("%8u %8u %-16s %6.1f %6u %11.3f %11.3f  %s\n", r->t->id.tid, r->t->id.tgid,
		       comm, 100.0 * (double)r->n.on_ns / (double)o->every_ns, r->n.runs,
		       (double)r->n.delay_ns / 1e6, (double)r->n.max_delay_ns / 1e6,
		       rk_sched_now_state(r->n.state));
	}
	if (i < n)
		printf("# %zu more rows (--top N, or a taller terminal)\n", n - i);
	if (quiet)
		printf("# %zu threads neither ran nor waited for a CPU in it (--all lists them)\n",
		       quiet);
	top_overrun(on, src, o);
	rk_loss_say(stdout, &src->loss, "# ");
	fflush(stdout);
	free(rows);
	return 0;
}

/* The interval's window, and the session as it is now (its losses grow while it records). */
static void top_window(const char *dir, const struct rk_timeline *tl, const struct top_opts *o,
		       __u64 *lo, __u64 *hi, struct top_src *src)
{
	struct rk_session_stat st;
	long n = sysconf(_SC_NPROCESSORS_CONF);
	int have = !rk_session_stat_read(dir, &st);

	memset(&src->loss, 0, sizeof(src->loss));
	if (have)
		rk_loss_from_stat(&src->loss, &st);
	src->ncpus = have && st.nr_cpus ? st.nr_cpus : n > 0 ? (unsigned int)n : 1;
	src->ended = !have || !rk_session_alive(&st);
	*hi = src->ended ? rk_sched_end(tl) : rk_now_mono_ns();
	*lo = *hi > o->every_ns ? *hi - o->every_ns : 0;
}

static int top_parse(int argc, char **argv, const char *usage, struct top_opts *o, struct from *f)
{
	static const struct option lo[] = {
		{ "delay", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'n' },
		{ "sort", required_argument, NULL, 'S' },
		{ "top", required_argument, NULL, 'N' },
		{ "all", no_argument, NULL, 'A' },
		{ "batch", no_argument, NULL, 'b' },
		{ "session", required_argument, NULL, 's' },
		{ "root", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const char *const sorts[] = { "tid", "on-cpu", "delay", "", "runs" };
	unsigned long long v;
	struct cmd_line l;
	int c, i;

	cmd_line_init(&l, argc, argv, "d:n:bs:r:h", lo, usage);
	while ((c = cmd_getopt(&l)) != -1) {
		switch (c) {
		case 'd':
			if (rk_parse_duration_ns(optarg, &o->every_ns) ||
			    o->every_ns < 100000000ull) {
				rk_err("--delay: '%s' is not a duration of 100ms or more (500ms, 2s)",
				       optarg);
				return -1;
			}
			break;
		case 'n':
			if (rk_parse_uint(optarg, 1000000000, &v) || !v) {
				rk_err("--count: '%s' is not a number of refreshes (1 or more)",
				       optarg);
				return -1;
			}
			o->count = v;
			break;
		case 'S':
			for (i = 0; i < 5 && (!*sorts[i] || strcmp(optarg, sorts[i])); i++)
				;
			if (i == 5) {
				rk_err("--sort: '%s' is not one of on-cpu, delay, runs, tid",
				       optarg);
				return -1;
			}
			o->sort = i;
			break;
		case 'N':
			if (rk_parse_uint(optarg, 1000000, &v) || !v) {
				rk_err("--top: '%s' is not a number of rows (1 or more)", optarg);
				return -1;
			}
			o->top = v;
			break;
		case 'A':
			o->all = 1;
			break;
		case 'b':
			o->batch = 1;
			break;
		case 's':
		case 'r':
			from_opt(f, c, optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return -1;
		}
	}
	if (optind < argc && !f->session)
		f->session = argv[optind++];
	if (cmd_too_many(usage, 0, argc, argv))
		return -1;
	return 1;
}

/*
 * Frames until the count, a signal, 'q' or the session's end; each reads
 * only what changed since the last (rk_tl_live). Return: 0, or 1 (said).
 */
static int top_loop(const struct from *f, const struct top_opts *o, int keys)
{
	const char *name = f->session ? f->session : strrchr(f->dir, '/') + 1;
	struct rk_tl_live *lv = rk_tl_live__new(f->dir);
	unsigned long long k;
	int r = 0;

	if (!lv) {
		rk_err("top: %s", strerror(errno));
		return 1;
	}
	for (k = 0; !top_stop && (!o->count || k < o->count); k++) {
		uint64_t start = rk_now_mono_ns();
		const struct rk_timeline *tl;
		struct rk_tl_live_stats st;
		struct top_src src;
		__u64 lo, hi;

		if (k && o->batch)
			putchar('\n');
		r = rk_tl_live__update(lv, &st);
		if (r)
			break;
		tl = rk_tl_live__timeline(lv);
		top_window(f->dir, tl, o, &lo, &hi, &src);
		src.took_ns = rk_now_mono_ns() - start;
		r = top_frame(name, tl, lo, hi, &src, o);
		if (r) {
			rk_err("top: %s", strerror(-r));
			break;
		}
		/* The next window starts after this one's start: what it cannot need goes. */
		rk_tl_live__forget_before(lv, lo);
		if (src.ended || (o->count && k + 1 >= o->count))
			break;
		/* The interval is from refresh to refresh, the reading's time in it. */
		top_wait(start + o->every_ns, keys);
	}
	rk_tl_live__free(lv);
	return r ? 1 : 0;
}

int cmd_top(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper top [-d INTERVAL] [-n COUNT] [--sort KEY] [--top N] [--all]\n"
		"                      [--batch] [--root DIR] [SESSION | --session S]\n"
		"\n"
		"A live view of a running session (default: the newest): each thread's last\n"
		"INTERVAL, refreshed every INTERVAL, read from its files as sched reads them:\n"
		"%CPU (its time on CPU in the interval: a run still going counts up to now),\n"
		"RUNS (switch-ins), DELAY and MAX (the scheduling delay of those runs, and of a\n"
		"wait for a CPU still going, as sched counts it), STATE now (running, runnable,\n"
		"sleeping, blocked, idle, stopped, dead, exited). The files are written every\n"
		"5 ms, so now is up to that late. Of an ended session, its last INTERVAL, once.\n"
		"Each refresh reads only what changed since the last; one that takes longer\n"
		"than INTERVAL says so on the screen. q quits (or Ctrl-C).\n"
		"  -d, --delay INTERVAL  the interval (default 1s; 100ms or more)\n"
		"  -n, --count COUNT     stop after COUNT refreshes (default: q or Ctrl-C)\n"
		"  --sort KEY   on-cpu (default), delay, runs or tid\n"
		"  --top N      the first N rows (default: what the terminal holds)\n"
		"  --all        also threads that neither ran nor waited in the interval\n"
		"  -b, --batch  no screen clearing: each refresh printed after the last (as\n"
		"               top -b; also when the output is not a terminal); keys are not\n"
		"               read\n"
		"Exit status: 0, 1 no such session or an error, 2 usage.\n";
	struct top_opts o = { .every_ns = 1000000000ull, .sort = RK_SCHED_SORT_ONCPU };
	struct from f = { .root = RK_DEFAULT_ROOT };
	int r, keys;

	r = top_parse(argc, argv, usage, &o, &f);
	if (r <= 0)
		return r ? 2 : 0;
	if (!isatty(STDOUT_FILENO))
		o.batch = 1;
	if (from_open(&f))
		return 1;
	top_signals();
	keys = !o.batch && tty_take();
	r = top_loop(&f, &o, keys);
	tty_restore();
	return r;
}
