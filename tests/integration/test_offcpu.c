// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record --offcpu: where each thread blocked and who woke it, read back by
 * show, sched --offcpu and export --folded, against the workload's own
 * functions (workload -O), against `sched`'s off-CPU time, against the
 * trust rules for kernel frames, and against bcc's offcputime.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "access.h"
#include "bufile.h"
#include "helpers.h"
#include "shell.h"

TestSuite(offcpu, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 240);

/* The workload's -O threads, by name, from its "offcpu T NAME" lines. */
struct oc_threads {
	unsigned int tid[4];
	char name[4][16];
	size_t n;
	unsigned int pid;
};

static void oc_threads_of(const char *out, struct oc_threads *t)
{
	const char *p = out;

	memset(t, 0, sizeof(*t));
	sscanf(out, "main %u", &t->pid);
	while ((p = strstr(p, "offcpu ")) && t->n < 4) {
		cr_assert_eq(sscanf(p, "offcpu %u %15s", &t->tid[t->n], t->name[t->n]), 2, "%s", p);
		t->n++;
		p++;
	}
	cr_assert_eq(t->n, 4, "the workload's threads: %s", out);
}

/* `record --offcpu --wakeups -- workload -O MS` into session @s: the workload's output. */
static char *record_offcpu(const char *s, const char *ms)
{
	char *argv[] = { (char *)rk_bin, "record",   "--root",	  root, "--session",
			 (char *)s,	 "--offcpu", "--wakeups", "--", (char *)workload,
			 "-O",		 (char *)ms, NULL };
	struct rk_session_stat st;
	char *out, *err;
	int status;

	status = run_rk(argv, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "record: %s", err);
	free(err);
	read_stat(s, &st);
	cr_assert_eq(st.offcpu_on, 1);
	cr_assert_eq(st.stack_drops + st.stacks_lost + st.bpf_drops, 0,
		     "stacks dropped %llu, lost %llu, signals dropped %llu",
		     (unsigned long long)st.stack_drops, (unsigned long long)st.stacks_lost,
		     (unsigned long long)st.bpf_drops);
	cr_assert_gt(st.stacks, 0);
	return out;
}

/* `ringkeeper CMD --root ROOT ARGS` (a shell command line), its stdout; asserted to succeed. */
static char *rk_out(const char *args)
{
	char cmd[1024], verb[16], *s;
	int st;

	sscanf(args, "%15s", verb);
	snprintf(cmd, sizeof(cmd), "%s %s --root %s %s", rk_bin, verb, root, args + strlen(verb));
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s: %s", cmd, s);
	return s;
}

/*
 * Every switch-out into a sleep of the workload's threads is followed by
 * exactly one stack, whose frames name the function it blocked in (user)
 * and the scheduler (kernel, as root's files keep them); with --wakeups,
 * the reader's wakeups carry the writer's stack, in the pipe's write path.
 */
Test(offcpu, show_names_where_each_thread_blocked_and_who_woke_it)
{
	static const char *const want[][2] = { { "offcpu-long", "offcpu_long" },
					       { "offcpu-short", "offcpu_short" },
					       { "offcpu-reader", "offcpu_read" },
					       { "offcpu-writer", "offcpu_thread" } };
	struct oc_threads th;
	char args[256], *out, *s, *p;
	size_t i, k;

	out = record_offcpu("sh", "600");
	oc_threads_of(out, &th);
	free(out);
	for (i = 0; i < th.n; i++) {
		int outs, stacks, leaf_ok = 0, blocks;

		snprintf(args, sizeof(args), "show --session sh %u", th.tid[i]);
		s = rk_out(args);
		outs = count_of(s, "PERF_RECORD_SWITCH OUT sleeping");
		stacks = count_of(s, "RINGKEEPER_STACK where it blocked");
		cr_assert_gt(outs, 5, "%s: %d sleeps", th.name[i], outs);
		cr_assert_eq(stacks, outs, "%s: %d stacks for %d sleeps", th.name[i], stacks, outs);
		/* Each stack: the switch-out right before it, the function in its frames. */
		for (k = 0; k < 4 && strcmp(want[k][0], th.name[i]); k++)
			;
		cr_assert_lt(k, 4);
		blocks = 0;
		for (p = s; (p = strstr(p, "OUT sleeping\n")); p++) {
			char *next = strstr(p + 13, "RINGKEEPER_");
			char *end = next ? strchr(next, '\n') : NULL;
			char *after = end ? strstr(end, "PERF_RECORD") : NULL;
			size_t len = after ? (size_t)(after - p) : strlen(p);
			char *blk = strndup(p, len);

			cr_assert_not_null(next);
			cr_assert_eq(strncmp(next, "RINGKEEPER_STACK where it blocked", 33), 0,
				     "%s: a sleep not followed by its stack:\n%.400s", th.name[i],
				     p);
			leaf_ok += strstr(blk, want[k][1]) && strstr(blk, " schedule+") &&
						   strstr(blk,
							  "(/usr/lib/x86_64-linux-gnu/libc.so.6)") ?
					   1 :
					   0;
			blocks++;
			free(blk);
		}
		cr_assert_eq(leaf_ok, blocks, "%s: %d of %d stacks name %s and schedule:\n%s",
			     th.name[i], leaf_ok, blocks, want[k][1], s);
		if (!strcmp(th.name[i], "offcpu-reader")) {
			int wakes = count_of(s, "RINGKEEPER_WAKEUP woken by tid");
			int wstacks = count_of(s, "RINGKEEPER_STACK the waker's");

			cr_assert_gt(wakes, 5);
			cr_assert_geq(wstacks, wakes, "%d waker stacks for %d wakeups", wstacks,
				      wakes);
			cr_assert_geq(count_of(s, "pipe_write"), wakes - 1,
				      "the writer's stack is not in the pipe's write path:\n%s", s);
		}
		free(s);
	}
}

/*
 * Sum of the folded lines of @comm (its first frame) in @folded; a stack
 * with no frame left is the comm alone ("offcpu-long 1234": a user-only fold
 * of a stack whose user frames the kernel did not give, seen in the guests).
 */
static unsigned long long folded_sum(const char *folded, const char *comm)
{
	unsigned long long sum = 0, v;
	const char *p = folded;
	size_t len = strlen(comm);

	while (*p) {
		const char *nl = strchr(p, '\n'), *sp;

		if (!nl)
			break;
		for (sp = nl; sp > p && sp[-1] != ' '; sp--)
			;
		if (!strncmp(p, comm, len) && (p[len] == ';' || p[len] == ' ') &&
		    sscanf(sp, "%llu", &v) == 1)
			sum += v;
		p = nl + 1;
	}
	return sum;
}

/* The off-CPU ns of thread @tid in state @state ("sleeping", ...) in `sched --json` @js (0: none). */
static unsigned long long sched_off(const char *js, unsigned int tid, const char *state)
{
	char key[48];
	const char *p, *q;
	unsigned long long v = 0;

	snprintf(key, sizeof(key), "\"tid\":%u,", tid);
	p = strstr(js, key);
	p = p ? strstr(p, "\"off_cpu_ns\":{") : NULL;
	snprintf(key, sizeof(key), "\"%s\":", state);
	q = p ? strstr(p, key) : NULL;
	if (q)
		sscanf(q + strlen(key), "%llu", &v);
	return v;
}

/*
 * What has a stack: every switch-out but a preemption and the final one,
 * so the time off CPU sleeping, blocked (D), idle or stopped. The workload's
 * threads sleep in S; on PREEMPT_RT the pipe's writer was off CPU in other
 * states too (849 ms with stacks, 486 ms of them sleeping, once in the RT
 * guest).
 */
static unsigned long long sched_with_stacks(const char *js, unsigned int tid)
{
	return sched_off(js, tid, "sleeping") + sched_off(js, tid, "blocked") +
	       sched_off(js, tid, "idle") + sched_off(js, tid, "stopped");
}

/*
 * Off-CPU time by stack is the time `sched` counts off CPU sleeping (and
 * blocked, idle or stopped: sched_with_stacks()), to the
 * nanosecond per thread (both run from a switch-out to the next switch-in),
 * in export --folded and in sched --offcpu; the folded lines are the shape
 * flamegraph.pl reads (comm first, frames root first, a value), user frames
 * before kernel ones, and --fold-user-only leaves the kernel's out.
 */
Test(offcpu, folded_time_is_sched_sleeping_time)
{
	struct oc_threads th;
	char *out, *js, *folded, *user, *rank, args[256];
	size_t i;

	out = record_offcpu("fo", "500");
	oc_threads_of(out, &th);
	free(out);
	snprintf(args, sizeof(args), "sched --json --session fo");
	js = rk_out(args);
	folded = rk_out("export --session fo --folded - 2>/dev/null");
	user = rk_out("export --session fo --folded - --fold-user-only 2>/dev/null");
	rank = rk_out("sched --offcpu --top 0 --session fo");
	for (i = 0; i < th.n; i++) {
		unsigned long long f = folded_sum(folded, th.name[i]);
		unsigned long long u = folded_sum(user, th.name[i]);
		unsigned long long sl = sched_with_stacks(js, th.tid[i]);
		unsigned long long sleeping = sched_off(js, th.tid[i], "sleeping");
		char line[64];

		cr_assert_gt(sleeping, 100000000ull, "%s: %llu ns sleeping", th.name[i], sleeping);
		cr_assert_eq(
			f, sl,
			"%s: folded %llu ns, sched off CPU with a stack %llu ns (sleeping %llu, "
			"blocked %llu)",
			th.name[i], f, sl, sleeping, sched_off(js, th.tid[i], "blocked"));
		cr_assert_eq(u, sl, "%s: user-only folded %llu ns", th.name[i], u);
		snprintf(line, sizeof(line), "tid %u %s (pid %u): %.3f ms", th.tid[i], th.name[i],
			 th.pid, (double)sl / 1e6);
		cr_assert_not_null(strstr(rank, line), "sched --offcpu has no '%s':\n%s", line,
				   rank);
	}
	/* Root first: the thread's start before its function, its function before the kernel's. */
	cr_assert_not_null(strstr(folded, "offcpu-long;start_thread;offcpu_thread;offcpu_long;"),
			   "%s", folded);
	cr_assert_not_null(strstr(folded, ";do_nanosleep;schedule;__schedule "), "%s", folded);
	cr_assert_null(strstr(user, "schedule"), "kernel frames in --fold-user-only:\n%s", user);
	free(js);
	free(folded);
	free(user);
	free(rank);
}

static int can_open(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return 1;
	close(fd);
	return 0;
}

/* Run can_open(@path) as nobody in a child: 0 if nobody may read it. */
static int nobody_reads(const char *path)
{
	pid_t c = fork();
	int st;

	cr_assert_geq(c, 0);
	if (!c) {
		if (setgid(65534) || setuid(65534))
			_exit(125);
		_exit(can_open(path));
	}
	st = wait_for(c, 10000);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

struct stack_count {
	long stacks, with_kernel, kernel_hidden;
};

static int count_stacks(const struct perf_event_header *h, void *ctx)
{
	struct stack_count *c = ctx;
	static struct rk_stack_rec r;

	if (h->type != RK_RECORD_STACK)
		return 0;
	cr_assert_eq(rk_stack_parse(h, 32, &r), 0);
	c->stacks++;
	c->with_kernel += r.nr_kernel > 0;
	c->kernel_hidden += !!(r.flags & RK_STACKF_KERNEL_HIDDEN);
	return 0;
}

/*
 * The same spans in the other exports: export --perf-data's offcpu-time
 * samples (perf's --off-cpu layout, read by this machine's perf script) and
 * export --perfetto's off-CPU slices with their blocking_stack (read with
 * the official protos): per thread of workload -O, as many samples as
 * slices, their periods and the slices' lengths summed to the folded
 * export's total to the ns, and every one's stack holding the function the
 * thread sleeps in.
 */
Test(offcpu, perf_data_and_perfetto_carry_every_span_and_its_stack)
{
	static const char *const fn[][2] = { { "offcpu-long", "offcpu_long" },
					     { "offcpu-short", "offcpu_short" },
					     { "offcpu-reader", "offcpu_read.isra.0" },
					     { "offcpu-writer", "offcpu_thread" } };
	const char *py = getenv("RK_PERFETTO_PY");
	struct oc_threads th;
	char cmd[2048], repo[256], *out, *folded, *s;
	size_t i, k;
	int st;

	if (access("/usr/bin/perf", X_OK))
		cr_skip_test("perf is not installed");
	if (!py || access(py, X_OK))
		cr_skip_test("no python with PyPI's perfetto protos (RK_PERFETTO_PY)");
	source_tree(repo, sizeof(repo), NULL, 0);
	out = record_offcpu("px", "400");
	oc_threads_of(out, &th);
	free(out);
	folded = rk_out("export --session px --folded - 2>/dev/null");
	snprintf(cmd, sizeof(cmd), "export --session px --perf-data %s/px.data >/dev/null 2>&1",
		 root);
	free(rk_out(cmd));
	snprintf(cmd, sizeof(cmd), "export --session px --perfetto %s/px.pftrace >/dev/null 2>&1",
		 root);
	free(rk_out(cmd));
	for (i = 0; i < th.n; i++) {
		unsigned long long f = folded_sum(folded, th.name[i]), ns = 0;
		unsigned int n = 0, with_fn = 0;

		for (k = 0; k < 4 && strcmp(fn[k][0], th.name[i]); k++)
			;
		cr_assert_lt(k, 4);
		/* perf script: each offcpu-time sample's tid and period, then its chain. */
		snprintf(
			cmd, sizeof(cmd),
			"cd %s && perf script -i px.data -F tid,event,period 2>/dev/null | awk "
			"'$1 == %u && $3 == \"offcpu-time:\" {n++; s += $2} END {printf \"%%d %%d\", "
			"n, s}'; echo; perf script -i px.data -F tid,event,ip,sym 2>/dev/null | awk "
			"'/offcpu-time:/ {cur = ($1 == %u); hit = 0; next} /^$/ {cur = 0} cur && "
			"!hit && $2 == \"%s\" {h++; hit = 1} END {print h + 0}'",
			root, th.tid[i], th.tid[i], fn[k][1]);
		s = sh_out(cmd, &st);
		cr_assert_eq(sscanf(s, "%u %llu %u", &n, &ns, &with_fn), 3, "%s", s);
		free(s);
		cr_assert_gt(n, 5, "%s: %u offcpu-time samples", th.name[i], n);
		cr_assert_eq(ns, f, "%s: offcpu-time periods %llu ns, folded %llu ns", th.name[i],
			     ns, f);
		cr_assert_eq(with_fn, n, "%s: %u of %u samples' chains hold %s", th.name[i],
			     with_fn, n, fn[k][1]);
		snprintf(cmd, sizeof(cmd),
			 "%s %s/tests/perfetto_check.py %s/px.pftrace --blocking %u:%u:%llu:%s "
			 ">/dev/null 2>%s/pc.err || { cat %s/pc.err; %s %s/tests/perfetto_check.py "
			 "%s/px.pftrace --blocking %u:%u:%llu:%s | tail -5; }",
			 py, repo, root, th.tid[i], n, ns, fn[k][1], root, root, py, repo, root,
			 th.tid[i], n, ns, fn[k][1]);
		s = sh_out(cmd, &st);
		cr_assert_eq(st, 0, "%s: %s", th.name[i], s);
		free(s);
	}
	free(folded);
}

/*
 * Kernel frames as perf would give them: a thread of nobody's, whose sched
 * file nobody reads, has stacks without kernel frames (flagged withheld) at
 * perf_event_paranoid > 1, and with them at <= 1 (root-only files keep
 * them whatever the setting: show_names_where_each_thread_blocked... finds
 * schedule() in every stack of root's threads).
 */
Test(offcpu, kernel_frames_follow_perf_event_paranoid)
{
	char *argv[] = { (char *)rk_bin,
			 "record",
			 "--root",
			 root,
			 "--session",
			 "kp",
			 "--offcpu",
			 "--",
			 "/usr/bin/setpriv",
			 "--reuid=65534",
			 "--regid=65534",
			 "--clear-groups",
			 (char *)workload,
			 "-O",
			 "300",
			 NULL };
	int paranoid = rk_access_paranoid(), status;
	struct oc_threads th;
	char path[300], *out, *err;
	size_t i;

	if (access("/usr/bin/setpriv", X_OK))
		cr_skip_test("no /usr/bin/setpriv (util-linux) to run the workload as nobody");
	cr_assert_eq(chmod(root, 0755), 0);
	status = run_rk(argv, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "record: %s", err);
	oc_threads_of(out, &th);
	free(out);
	free(err);
	for (i = 0; i < th.n; i++) {
		struct stack_count c = { 0 };
		const char *msg = NULL;
		struct rk_bufile *bf;

		snprintf(path, sizeof(path), "%s/kp/sched/%u", root, th.tid[i]);
		cr_assert_eq(nobody_reads(path), 0, "%s: not nobody's to read", path);
		bf = rk_bufile__open(path, &msg);
		cr_assert_not_null(bf, "%s: %s", path, msg ? msg : strerror(errno));
		cr_assert_eq(rk_bufile__for_each(bf, count_stacks, &c), 0);
		rk_bufile__free(bf);
		cr_assert_gt(c.stacks, 5, "%s", path);
		if (paranoid > 1) {
			cr_assert_eq(c.with_kernel, 0, "%s: kernel frames at paranoid %d", path,
				     paranoid);
			cr_assert_eq(c.kernel_hidden, c.stacks);
		} else {
			cr_assert_eq(c.kernel_hidden, 0, "%s: withheld at paranoid %d", path,
				     paranoid);
			cr_assert_eq(c.with_kernel, c.stacks);
		}
	}
}

/*
 * A folded line "comm;frame;...;frame US" into @key, each frame named as both
 * tools' names of one address compare: without "@VERSION" (ringkeeper names
 * glibc's exported symbol, clock_nanosleep@GLIBC_2.2.5) and without glibc's
 * internal prefixes (bcc reads libc6-dbg's symbols: __GI___clock_nanosleep,
 * __read), so "clock_nanosleep" and "read"; *@us its value.
 */
static int bcc_line(const char *line, char *key, size_t len, unsigned long long *us)
{
	const char *sp = strrchr(line, ' ');
	size_t i, k = 0;
	int skip = 0, start = 0;

	if (!sp || sscanf(sp + 1, "%llu", us) != 1)
		return -1;
	for (i = 0; line + i < sp && k + 1 < len; i++) {
		if (line[i] == ';') {
			skip = 0;
			start = 1;
			key[k++] = ';';
			continue;
		}
		if (start && !strncmp(line + i, "__GI_", 5)) {
			i += 4;
			continue;
		}
		if (start && line[i] == '_')
			continue;
		start = 0;
		if (line[i] == '@')
			skip = 1;
		if (!skip)
			key[k++] = line[i];
	}
	key[k] = '\0';
	return 0;
}

struct peer_stack {
	char key[1024];
	unsigned long long ours_us, bcc_us;
};

/* Add @us to @key's entry of @v (made if new) for @ours or bcc. */
static void peer_add(struct peer_stack *v, size_t *n, size_t max, const char *key,
		     unsigned long long us, int ours)
{
	size_t i;

	for (i = 0; i < *n && strcmp(v[i].key, key); i++)
		;
	if (i == *n) {
		cr_assert_lt(*n, max, "too many distinct stacks");
		snprintf(v[i].key, sizeof(v[i].key), "%s", key);
		v[i].ours_us = v[i].bcc_us = 0;
		(*n)++;
	}
	if (ours)
		v[i].ours_us += us;
	else
		v[i].bcc_us += us;
}

/* Every folded line of @text (left as it is) into @v. */
static void peer_fill(struct peer_stack *v, size_t *n, size_t max, const char *text, int ours)
{
	char *copy = strdup(text), *line, *save = NULL, key[1024];
	unsigned long long val;

	cr_assert_not_null(copy);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!bcc_line(line, key, sizeof(key), &val))
			peer_add(v, n, max, key, ours ? val / 1000 : val, ours);
	free(copy);
}

/* offcputime-bpfcc, or skip saying why it cannot run here. */
static const char *bcc_offcputime(void)
{
	static const char *const paths[] = { "/usr/sbin/offcputime-bpfcc",
					     "/usr/share/bcc/tools/offcputime" };
	char cmd[512], *s;
	size_t i;
	int st;

	for (i = 0; i < 2 && access(paths[i], X_OK); i++)
		;
	if (i == 2)
		cr_skip_test(
			"bcc's offcputime is not installed (Debian: apt-get install bpfcc-tools)");
	/* One second of tracing: does its program compile and load on this kernel? */
	snprintf(cmd, sizeof(cmd), "%s -f 1 2>&1 >/dev/null", paths[i]);
	s = sh_out(cmd, &st);
	if (st) {
		char why[600], *nl = strchr(s, '\n');

		/* Its first lines say why; the traceback after them does not. */
		if (nl && (nl = strchr(nl + 1, '\n')))
			*nl = '\0';
		snprintf(why, sizeof(why),
			 "%s cannot run on this kernel (bcc compiles its program against the "
			 "kernel's headers: /lib/modules/$(uname -r)/build or the kheaders "
			 "module; neither is here): %.300s",
			 paths[i], s);
		free(s);
		cr_skip_test("%s", why);
	}
	free(s);
	return paths[i];
}

/*
 * Agreement with a peer: one run of workload -O traced by ringkeeper (rings
 * of 512 KiB: the whole run, no wrap) and by bcc's offcputime at once (-f
 * folded, -U user stacks, --state 1: sleeping only, as each thread sleeps
 * here); of the four threads born after both attached (the main thread was
 * already blocked when bcc attached: bcc never saw that sleep begin), for
 * every stack above 1% of their total off-CPU time, the two totals agree
 * within 5%. bcc compiles against the kernel's headers: none on the host
 * here, so it runs in make vmtest's guests (the headers of Debian's kernels).
 */
Test(offcpu, per_stack_totals_agree_with_bcc_offcputime)
{
	const char *bcc = bcc_offcputime();
	const char *const extra[] = { "--offcpu", "-m", "512K", NULL };
	char fdarg[16], wlout[300], wlerr[300], bccerr[300];
	char *wl_argv[] = { (char *)workload, "-w", fdarg, "-O", "2000", NULL };
	static struct peer_stack v[256];
	char cmd[1024], line[64], bccout[300], *ours, *theirs, *st, pidarg[16];
	unsigned long long total = 0;
	int go[2], ready, status;
	size_t n = 0, i, checked = 0;
	pid_t wl, rk, bp;
	uint64_t end;

	cr_assert_eq(pipe(go), 0);
	snprintf(fdarg, sizeof(fdarg), "%d", go[0]);
	snprintf(wlout, sizeof(wlout), "%s/wl.out", root);
	snprintf(wlerr, sizeof(wlerr), "%s/wl.err", root);
	snprintf(bccerr, sizeof(bccerr), "%s/bcc.err", root);
	wl = spawn(wl_argv, wlout, wlerr, go[0]);
	close(go[0]);
	rk = start_recorder_on(wl, "peer", &ready, extra);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
	/* bcc, on the same process, until SIGINT: its output at the end. */
	snprintf(pidarg, sizeof(pidarg), "%d", wl);
	snprintf(bccout, sizeof(bccout), "%s/bcc.folded", root);
	{
		char *bargv[] = { (char *)bcc, "-f", "-U", "--state", "1", "-p", pidarg, NULL };

		bp = spawn(bargv, bccout, bccerr, -1);
	}
	/*
	 * Attached when bpftool lists its program on finish_task_switch: bcc
	 * attaches through the kprobe PMU (perf_event_open), which
	 * kprobe_events does not list. It compiles first: minutes in a TCG guest.
	 */
	end = now_ms() + (getenv("RK_SLOW") ? 600000 : 60000);
	for (;;) {
		char *k = sh_out("bpftool perf show 2>/dev/null", &status);
		int up = strstr(k, "finish_task_switch") != NULL;

		free(k);
		if (up)
			break;
		cr_assert_lt(now_ms(), end, "offcputime did not attach within %d s: %s",
			     getenv("RK_SLOW") ? 600 : 60, slurp(bccerr));
		cr_assert_eq(waitpid(bp, &status, WNOHANG), 0, "offcputime ended: %s",
			     slurp(bccerr));
		usleep(200000);
	}
	cr_assert_eq(write(go[1], "g", 1), 1);
	/*
	 * bcc names user frames when it prints, from the process's maps: it
	 * ends while the workload, done, waits for a second byte (a process
	 * gone by then reads as [unknown] frames).
	 */
	end = now_ms() + (getenv("RK_SLOW") ? 300000 : 30000);
	while (!slurp(wlout) || !strstr(slurp(wlout), "offcpu done")) {
		cr_assert_lt(now_ms(), end, "the workload did not finish: %s", slurp(wlerr));
		usleep(50000);
	}
	kill(bp, SIGINT);
	status = wait_for(bp, getenv("RK_SLOW") ? 300000 : 30000);
	cr_assert(WIFEXITED(status), "offcputime did not end at SIGINT");
	cr_assert_eq(write(go[1], "g", 1), 1);
	close(go[1]);
	status = wait_for(wl, 30000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = wait_for(rk, 30000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(ready);

	snprintf(cmd, sizeof(cmd), "export --session peer --folded - --fold-user-only 2>/dev/null");
	ours = rk_out(cmd);
	theirs = slurp(bccout) ? strdup(slurp(bccout)) : NULL;
	cr_assert_not_null(theirs, "no output from offcputime: %s", slurp(bccerr));
	st = rk_out("stat peer 2>&1 | grep -E 'stack|drops|lost|overwritten'");
	peer_fill(v, &n, 256, ours, 1);
	peer_fill(v, &n, 256, theirs, 0);
	for (i = 0; i < n; i++)
		if (!strncmp(v[i].key, "offcpu-", 7))
			total += v[i].bcc_us;
	cr_assert_gt(total, 1000000ull, "offcputime saw %llu us off CPU:\n%s", total, theirs);
	for (i = 0; i < n; i++) {
		double a = (double)v[i].ours_us, b = (double)v[i].bcc_us;

		/* The threads born after both attached, whole in both. */
		if (strncmp(v[i].key, "offcpu-", 7))
			continue;
		if (b * 100 < (double)total && a * 100 < (double)total)
			continue;
		checked++;
		cr_assert(
			a >= b * 0.95 && a <= b * 1.05,
			"stack %s: ringkeeper %llu us, offcputime %llu us (total %llu us)\nours:\n"
			"%s\ntheirs:\n%s\nstat:\n%s",
			v[i].key, v[i].ours_us, v[i].bcc_us, total, ours, theirs, st);
	}
	cr_assert_geq(checked, 4, "only %zu stacks above 1%%", checked);
	free(ours);
	free(theirs);
	free(st);
}
