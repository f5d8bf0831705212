// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Helpers of the integration tests: processes, bounded waits, file checks. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "bufile.h"
#include "session.h"

#include "helpers.h"

const char *rk_bin, *workload;
char root[64];

/* What rk_test_setup() names a test's scratch root (mkdtemp adds six characters). */
#define RK_ROOT_PREFIX "/dev/shm/rk-itest-"

static void wait_for_a_killed_test_s_recorder(void);
static void remove_tree_at_restore(const char *path);

void rk_test_setup(void)
{
	rk_bin = getenv("RK_BIN");
	workload = getenv("RK_WORKLOAD");
	if (!rk_bin || !workload)
		cr_skip_test("RK_BIN / RK_WORKLOAD not set: run through 'make integration'");
	if (geteuid() != 0)
		cr_skip_test("needs root (BPF, mlock): skipped, not passed");
	snprintf(root, sizeof(root), RK_ROOT_PREFIX "XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	/* A test Criterion kills at its timeout runs no teardown: the runner removes it then. */
	remove_tree_at_restore(root);
	/*
	 * A test that skips itself (cr_skip_test) ends without its suite's
	 * .fini: each skipped test left its empty root in /dev/shm (two per
	 * CI run). Its process exits, though.
	 */
	atexit(rk_test_teardown);
	wait_for_a_killed_test_s_recorder();
}

/* What spawn() started, for the teardown: nothing a failed test started outlives it. */
static pid_t spawned[256];
static size_t nspawned;

/* Does a recorder hold the lock (a service's, or one a test started)? */
static int recorder_running(void)
{
	int fd = open("/run/ringkeeper.lock", O_RDONLY | O_CLOEXEC), held;

	if (fd < 0)
		return 0;
	held = flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

/*
 * A test Criterion killed at its timeout leaves its recorder ending on
 * SIGINT (spawn()'s parent-death signal): wait for it (bounded) rather
 * than fail the next test on "another ringkeeper record is running". A
 * recorder that is not the tests' own (a service's) is still running
 * after the wait, and the tests say so as before.
 */
static void wait_for_a_killed_test_s_recorder(void)
{
	uint64_t end = now_ms() + (getenv("RK_SLOW") ? 60000 : 15000);

	while (recorder_running() && now_ms() < end)
		usleep(50000);
}

/*
 * A child still running at the end of a test (the test failed before it
 * stopped it): SIGINT (a recorder then ends its session and unpins), then
 * SIGKILL. If a recorder had to be killed, its pins go too: the next test's
 * recorder must find /sys/fs/bpf/ringkeeper free, as a stopped one leaves it.
 */
static void reap_leftovers(void)
{
	int killed = 0, st;
	size_t i;

	for (i = 0; i < nspawned; i++) {
		uint64_t end = now_ms() + 10000;
		pid_t p = spawned[i];

		if (waitpid(p, &st, WNOHANG) != 0)
			continue; /* reaped by the test, or just now */
		kill(p, SIGINT);
		while (waitpid(p, &st, WNOHANG) == 0 && now_ms() < end)
			usleep(10000);
		if (waitpid(p, &st, WNOHANG) == 0) {
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
			killed = 1;
		}
	}
	nspawned = 0;
	if (!access("/sys/fs/bpf/ringkeeper", F_OK) && (killed || !recorder_running())) {
		fprintf(stderr, "teardown: pins left by a killed recorder; removing them\n");
		if (system("rm -f /sys/fs/bpf/ringkeeper/* && rmdir /sys/fs/bpf/ringkeeper"))
			fprintf(stderr, "cannot remove /sys/fs/bpf/ringkeeper\n");
	}
}

void rk_test_teardown(void)
{
	char cmd[128];

	reap_leftovers();
	if (!root[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", root);
	root[0] = '\0'; /* once: .fini, then atexit */
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Start argv with stdout/stderr to files; @keep_fd stays open in the child. */
pid_t spawn(char *const argv[], const char *out, const char *err, int keep_fd)
{
	pid_t parent = getpid(), pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		/*
		 * A test Criterion kills at its timeout runs no .fini and no
		 * atexit: what it started is told as a failed test's leftovers
		 * are (SIGINT: a recorder ends its session and unpins), or
		 * one hung test fails every test after it (seen in the RT guest).
		 */
		if (prctl(PR_SET_PDEATHSIG, SIGINT) || getppid() != parent)
			_exit(124);
		if (o < 0 || e < 0)
			_exit(125);
		dup2(o, 1);
		dup2(e, 2);
		if (keep_fd >= 0)
			fcntl(keep_fd, F_SETFD, 0);
		execv(argv[0], argv);
		_exit(126);
	}
	if (nspawned < sizeof(spawned) / sizeof(spawned[0]))
		spawned[nspawned++] = pid;
	return pid;
}

pid_t spawn_gated(const char *const args[], int *go)
{
	char *argv[32], fd[16];
	char wo[128], we[128];
	int p[2], n = 0;
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	snprintf(fd, sizeof(fd), "%d", p[0]);
	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	argv[n++] = (char *)workload;
	for (; *args; args++) {
		cr_assert_lt(n, 28, "too many workload arguments");
		argv[n++] = (char *)*args;
	}
	argv[n++] = "-w";
	argv[n++] = fd;
	argv[n] = NULL;
	pid = spawn(argv, wo, we, p[0]);
	close(p[0]);
	*go = p[1];
	return pid;
}

pid_t busy_workload(double secs)
{
	char wo[128], we[128], iters[32];
	char *argv[] = { (char *)workload, "-t", "2", "-i", iters, "-s", "50", NULL };

	/* A 50 us sleep takes ~110 us here (timer slack): ~9,000 switches a second a thread. */
	snprintf(iters, sizeof(iters), "%d", (int)(secs * 9000));
	snprintf(wo, sizeof(wo), "%s/.wl.out", root);
	snprintf(we, sizeof(we), "%s/.wl.err", root);
	return spawn(argv, wo, we, -1);
}

int rk_sanitized(void)
{
	const char *v = getenv("RK_SANITIZED");

	return v && !strcmp(v, "1");
}

int in_vmtest(void)
{
	const char *v = getenv("RK_VMTEST");

	return v && !strcmp(v, "1");
}

void assert_perf_reads(const char *data)
{
	static const char *const tools[] = { "script", "report --stdio" };
	char cmd[600], *s;
	size_t i;
	int status;

	for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		/* stdout away: perf's own errors ("failed to process type") stay. */
		snprintf(cmd, sizeof(cmd), "perf %s -i %s 2>&1 >/dev/null", tools[i], data);
		s = sh_out(cmd, &status);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "perf %s cannot read %s (status 0x%x):\n%s", tools[i], data, status, s);
		cr_assert_null(strstr(s, "failed to process"), "perf %s on %s:\n%s", tools[i], data,
			       s);
		free(s);
	}
}

void plain_run_only(const char *why)
{
	if (rk_sanitized())
		cr_skip_test("runs in the plain suite only: %s", why);
}

/*
 * A bound against a hang of @ms, four times longer in an emulated guest
 * (RK_SLOW: make vmtest boots its kernels side by side under QEMU TCG, where
 * a crash test that takes 36 s alone took over 60).
 */
static unsigned int hang_ms(unsigned int ms)
{
	return getenv("RK_SLOW") ? ms * 4 : ms;
}

/* Wait for @pid at most @ms; returns its wait status, or fails the test. */
int wait_for(pid_t pid, unsigned int ms)
{
	uint64_t end;
	int st;

	ms = hang_ms(ms);
	end = now_ms() + ms;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return st;
		cr_assert_eq(r, 0, "waitpid: %s", strerror(errno));
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			cr_assert_fail("pid %d did not finish within %u ms", pid, ms);
		}
		usleep(2000);
	}
}

char *slurp(const char *path)
{
	static char buf[1 << 20];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	buf[0] = '\0';
	if (fd < 0)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

int run_rk(char *const argv[], char **out, char **err)
{
	char o[128], e[128];
	int st;

	snprintf(o, sizeof(o), "%s/.out", root);
	snprintf(e, sizeof(e), "%s/.err", root);
	st = wait_for(spawn(argv, o, e, -1), 60000);
	if (out)
		*out = strdup(slurp(o));
	if (err)
		*err = strdup(slurp(e));
	return st;
}

/* Parse "main P", "child P" and "tid T ..." lines of the workload. */
size_t expected_tids(const char *out, unsigned int *tids, size_t max)
{
	const char *p = out;
	size_t n = 0;

	while (p && *p && n < max) {
		unsigned int v;

		if (sscanf(p, "main %u", &v) == 1 || sscanf(p, "child %u", &v) == 1 ||
		    sscanf(p, "tid %u", &v) == 1)
			tids[n++] = v;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

long workload_csw(const char *out, unsigned int tid)
{
	const char *p = out;

	while (p && *p) {
		unsigned int v;
		long csw;
		int n = 0;

		if ((sscanf(p, "tid %u %*s %n", &v, &n) == 1 ||
		     sscanf(p, "busy %u %n", &v, &n) == 1 ||
		     sscanf(p, "quiet %u %n", &v, &n) == 1) &&
		    v == tid && n && sscanf(p + n, "csw %ld", &csw) == 1)
			return csw;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

void assert_switches_cover(const struct check *c, const char *out, const char *path)
{
	long csw = workload_csw(out, c->tid);

	cr_assert_geq(csw, 1, "%s: the workload reports no switches of tid %u: %s", path, c->tid,
		      out);
	/* Each switch the kernel counted is a sched_switch with the thread as prev. */
	cr_assert_geq(c->out, csw, "%s: %ld switch-outs, the kernel counted %ld", path, c->out,
		      csw);
	/*
	 * And it ran csw + 1 times; a run that no sched_switch named (the 6.18
	 * host does that, bpftrace sees the same) shows as an out after an
	 * out, which the loader counts as unpaired.
	 */
	cr_assert_geq(c->in + c->in_missing, csw + 1,
		      "%s: %ld switch-ins (+%ld the kernel did not name), the kernel counted %ld "
		      "switches",
		      path, c->in, c->in_missing, csw);
}

int cmp_u32(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

size_t files_in(const char *dir, unsigned int *tids, size_t max)
{
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max)
		if (de->d_name[0] != '.')
			tids[n++] = (unsigned int)strtoul(de->d_name, NULL, 10);
	closedir(d);
	qsort(tids, n, sizeof(*tids), cmp_u32);
	return n;
}

unsigned long long blocks_in(const char *dir)
{
	unsigned long long bytes = 0;
	char path[PATH_MAX];
	struct dirent *de;
	struct stat sb;
	DIR *d = opendir(dir);

	cr_assert_not_null(d, "%s", dir);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			cr_assert_eq(stat(path, &sb), 0, "%s", path);
			bytes += (unsigned long long)sb.st_blocks * 512;
		}
	closedir(d);
	return bytes;
}

size_t files_of_uid(const char *dir, __u32 uid)
{
	char path[PATH_MAX];
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir);

	cr_assert_not_null(d, "%s", dir);
	while ((de = readdir(d))) {
		struct rk_bufile *bf;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		bf = rk_bufile__open(path, NULL);
		cr_assert_not_null(bf, "%s", path);
		n += bf->ident->uid == uid;
		rk_bufile__free(bf);
	}
	closedir(d);
	return n;
}

static int check_fn(const struct perf_event_header *h, void *ctx)
{
	struct check *c = ctx;
	/* sample_id: pid,tid, time, cpu,res, identifier */
	const __u8 *p = (const __u8 *)h + h->size - 32;
	__u32 pid, tid;
	__u64 time;

	memcpy(&pid, p, 4);
	memcpy(&tid, p + 4, 4);
	memcpy(&time, p + 8, 8);
	if (tid != c->tid || pid != c->tgid)
		c->foreign++;
	if (time < c->last_time && !c->time_backwards++)
		snprintf(c->backwards, sizeof(c->backwards),
			 "record type %u misc %#x at %llu after type %u misc %#x at %llu", h->type,
			 h->misc, (unsigned long long)time, c->last_kind >> 16,
			 c->last_kind & 0xffff, (unsigned long long)c->last_time);
	c->last_time = time;
	c->last_kind = (__u32)h->type << 16 | h->misc;
	switch (h->type) {
	case PERF_RECORD_SWITCH: {
		int k = h->misc & PERF_RECORD_MISC_SWITCH_OUT ? 2 : 1;
		__u32 res;

		memcpy(&res, p + 20, 4);
		if (k == 1 && c->asleep) {
			c->sleeps_unwoken += c->asleep == 1;
			c->sleeps_woken_twice += c->asleep > 2;
			c->asleep = 0;
		}
		/* A sleep with no switch-in after it: whether it was woken, no run says. */
		if (k == 2 && c->asleep) {
			c->sleeps_unpaired++;
			c->asleep = 0;
		}
		if (k == 2 && res & RK_SWITCH_STATE && !(res & RK_SWITCH_PREEMPTED) &&
		    res & (0x1 | 0x2) /* TASK_INTERRUPTIBLE, TASK_UNINTERRUPTIBLE */) {
			c->sleeps++;
			/* A wakeup stamped before the switch-out, in this run, ends this sleep. */
			c->asleep = 1 + c->run_wakeups;
		}
		c->run_wakeups = 0;

		if (!c->first_switch)
			c->first_switch = k;
		if (c->last_switch == k) {
			c->alternation_broken++;
			c->in_missing += k == 2;
		}
		c->last_switch = k;
		if (k == 1)
			c->in++;
		else
			c->out++;
		break;
	}
	case PERF_RECORD_FORK:
		c->fork++;
		/* Born off CPU: a first switch-out is unpaired (the loader counts it so). */
		if (!c->last_switch)
			c->last_switch = 2;
		break;
	case PERF_RECORD_COMM:
		c->exec += !!(h->misc & PERF_RECORD_MISC_COMM_EXEC);
		break;
	case PERF_RECORD_EXIT:
		c->exit_rec++;
		break;
	case RK_RECORD_WAKEUP:
		c->wakeups++;
		if (c->asleep)
			c->asleep++;
		else
			c->run_wakeups++;
		break;
	default:
		c->other++;
	}
	return 0;
}

/*
 * Switches that do not alternate: the loader counts each one (stat
 * "unpaired"); tests assert the files hold exactly that many.
 */
long unpaired_seen;

void check_file(const char *path, struct check *c, struct rk_bufile **keep)
{
	const char *msg = NULL;
	struct rk_bufile *bf = rk_bufile__open(path, &msg);

	cr_assert_not_null(bf, "%s: %s", path, msg ? msg : strerror(errno));
	memset(c, 0, sizeof(*c));
	c->tid = bf->ident->tid;
	c->tgid = bf->ident->tgid;
	cr_assert_eq(rk_bufile__for_each(bf, check_fn, c), 0, "%s does not parse", path);
	cr_assert_eq(c->foreign, 0, "%s: %ld records of another thread", path, c->foreign);
	cr_assert_eq(c->time_backwards, 0, "%s: time goes backwards %d times, first: %s", path,
		     c->time_backwards, c->backwards);
	unpaired_seen += c->alternation_broken;
	if (keep)
		*keep = bf;
	else
		rk_bufile__free(bf);
}

void read_stat(const char *session, struct rk_session_stat *st)
{
	char dir[256];

	snprintf(dir, sizeof(dir), "%s/%s", root, session);
	cr_assert_eq(rk_session_stat_read(dir, st), 0, "no stat file in %s", dir);
}

/* Read a line from @fd within @ms. */
int read_line_within(int fd, char *buf, size_t len, unsigned int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, (int)hang_ms(ms)) != 1)
		return -ETIMEDOUT;
	n = read(fd, buf, len - 1);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	return 0;
}

pid_t start_recorder_on(pid_t target, const char *session, int *ready_rd, const char *const extra[])
{
	char pidbuf[16], fdbuf[16], o[128], e[128];
	char *argv[32];
	int rp[2], n = 0, i;
	pid_t rk;

	cr_assert_eq(pipe(rp), 0);
	snprintf(pidbuf, sizeof(pidbuf), "%d", target);
	snprintf(fdbuf, sizeof(fdbuf), "%d", rp[1]);
	snprintf(o, sizeof(o), "%s/.rk.out", root);
	snprintf(e, sizeof(e), "%s/.rk.err", root);
	argv[n++] = (char *)rk_bin;
	argv[n++] = "record";
	argv[n++] = "--root";
	argv[n++] = root;
	argv[n++] = "--session";
	argv[n++] = (char *)session;
	argv[n++] = "-m";
	argv[n++] = "16K";
	argv[n++] = "--ready-fd";
	argv[n++] = fdbuf;
	/* Later options win: an extra "-m" replaces the default above. */
	for (i = 0; extra && extra[i]; i++) {
		cr_assert_lt(n, 28, "too many extra options");
		argv[n++] = (char *)extra[i];
	}
	if (target > 0) {
		argv[n++] = "-p";
		argv[n++] = pidbuf;
	}
	argv[n] = NULL;
	rk = spawn(argv, o, e, rp[1]);
	close(rp[1]);
	*ready_rd = rp[0];
	return rk;
}

void expect_error(char *const argv[], int code, const char *needle)
{
	char *err;
	int st = run_rk(argv, NULL, &err);

	cr_assert(WIFEXITED(st), "did not exit");
	cr_assert_eq(WEXITSTATUS(st), code, "exit %d, want %d: %s", WEXITSTATUS(st), code, err);
	cr_assert_not_null(strstr(err, needle), "stderr lacks '%s': %s", needle, err);
	free(err);
}

void source_tree(char *repo, size_t len, char *output, size_t olen)
{
	char bin[256], bdir[256];

	snprintf(bin, sizeof(bin), "%s", rk_bin);
	snprintf(bdir, sizeof(bdir), "%s", dirname(bin));
	if (output)
		snprintf(output, olen, "%s", strrchr(bdir, '/') ? strrchr(bdir, '/') + 1 : bdir);
	snprintf(repo, len, "%s", dirname(bdir));
}

void read_sysctl(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

/* --- global state put back on every path ------------------------------------ */

#define RK_RESTORE_DIR "/run/rk-itest-restore"

/*
 * Journal entries: NNN (the order kept), holding "w PATH\nVALUE", "u PATH\n"
 * (unlink it), "m PATH\n" (unmount it) or "r PATH\n" (a test's scratch root:
 * whatever is mounted on it unmounted, then removed with what is in it).
 */
static int journal_has(const char *kind, const char *path)
{
	char want[300], name[300], *c;
	struct dirent *d;
	DIR *dir = opendir(RK_RESTORE_DIR);
	int found = 0;

	if (!dir)
		return 0;
	snprintf(want, sizeof(want), "%s %s\n", kind, path);
	while (!found && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), RK_RESTORE_DIR "/%s", d->d_name);
		c = slurp(name);
		found = !strncmp(c, want, strlen(want));
	}
	closedir(dir);
	return found;
}

static void journal_add(const char *kind, const char *path, const char *value)
{
	char name[300];
	unsigned int n = 0;
	FILE *f;

	if (journal_has(kind, path))
		return; /* the first value kept is the one to put back */
	mkdir(RK_RESTORE_DIR, 0700);
	do
		snprintf(name, sizeof(name), RK_RESTORE_DIR "/%03u", n++);
	while (!access(name, F_OK) && n < 1000);
	f = fopen(name, "we");
	cr_assert_not_null(f, "cannot keep %s to put back: %s", path, strerror(errno));
	fprintf(f, "%s %s\n%s", kind, path, value);
	cr_assert_eq(fclose(f), 0);
}

/*
 * Write @value into @path (a sysctl, a file). Return: 0; -1, it cannot be
 * opened; -2, the write was refused (a sysctl's bad value). errno says why.
 */
static int write_value(const char *path, const char *value)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -1;
	fputs(value, f);
	return fclose(f) ? -2 : 0;
}

void sysctl_keep(const char *path)
{
	char was[4096];

	read_sysctl(path, was, sizeof(was));
	journal_add("w", path, was);
}

void sysctl_set_restored(const char *path, const char *value)
{
	sysctl_keep(path);
	/* A value the kernel refuses shows in what the test reads back. */
	if (write_value(path, value) == -1)
		cr_assert_fail("%s: %s", path, strerror(errno));
}

void remove_at_restore(const char *path)
{
	journal_add("u", path, "");
}

void unmount_at_restore(const char *path)
{
	journal_add("m", path, "");
}

static void remove_tree_at_restore(const char *path)
{
	journal_add("r", path, "");
}

/* A test's scratch root left behind (its test killed): removed. */
static void remove_left_root(const char *path)
{
	char cmd[400];

	/* Only what rk_test_setup() makes: nothing a journal entry names elsewhere. */
	if (strncmp(path, RK_ROOT_PREFIX, strlen(RK_ROOT_PREFIX)) || strstr(path, "..") ||
	    strchr(path, '\'') || access(path, F_OK))
		return;
	umount2(path, MNT_DETACH); /* a killed test's mount on it (a small tmpfs) */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", path);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/*
 * The mounts kept, unmounted first: a scratch root kept before them is
 * removed only once nothing is mounted in it. How many were still there.
 */
static int unmount_kept(struct dirent **ents, int n)
{
	char name[300], path[300], *c, *nl;
	int i, done = 0;

	for (i = 0; i < n; i++) {
		if (ents[i]->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), RK_RESTORE_DIR "/%s", ents[i]->d_name);
		c = slurp(name);
		nl = strchr(c, '\n');
		if (c[0] != 'm' || c[1] != ' ' || !nl)
			continue;
		snprintf(path, sizeof(path), "%.*s", (int)(nl - c - 2), c + 2);
		/* Unmounted by the test already (EINVAL): nothing was left. */
		if (!umount2(path, MNT_DETACH))
			done++;
		else if (errno != EINVAL && errno != ENOENT)
			fprintf(stderr, "cannot unmount %s: %s\n", path, strerror(errno));
		rmdir(path); /* a mount point of its own (outside the root): empty now */
	}
	return done;
}

int restore_globals(void)
{
	struct dirent **ents;
	int n = scandir(RK_RESTORE_DIR, &ents, NULL, by_name), i, done;

	done = unmount_kept(ents, n);
	for (i = 0; i < n; i++) {
		char name[300], path[300], *c, *nl;

		if (ents[i]->d_name[0] == '.')
			goto next;
		snprintf(name, sizeof(name), RK_RESTORE_DIR "/%s", ents[i]->d_name);
		c = slurp(name);
		nl = strchr(c, '\n');
		if ((c[0] != 'w' && c[0] != 'u' && c[0] != 'r' && c[0] != 'm') || c[1] != ' ' ||
		    !nl)
			goto drop;
		snprintf(path, sizeof(path), "%.*s", (int)(nl - c - 2), c + 2);
		if (c[0] == 'r') {
			/*
			 * Its teardown removed it, unless the test was killed. Not
			 * counted: a skipped test's atexit teardown may still be
			 * running, and the root is no global setting.
			 */
			remove_left_root(path);
			goto drop;
		}
		if (c[0] == 'm')
			goto drop; /* unmount_kept() */
		if (c[0] == 'u')
			unlink(path);
		else if (write_value(path, nl + 1))
			fprintf(stderr, "cannot put %s back to '%s': %s\n", path, nl + 1,
				strerror(errno));
		done++;
drop:
		unlink(name);
next:
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
	rmdir(RK_RESTORE_DIR);
	return done;
}

/*
 * In the runner, after each test's .fini, or in its place when Criterion
 * killed the test at its timeout (or it crashed): whatever the test did not
 * put back. A killed coredump test left the handler installed, and every
 * crash test after it skipped ("ringkeeper's handler is installed").
 */
ReportHook(POST_FINI)(struct criterion_test_stats *stats)
{
	int n = restore_globals();

	if (n)
		fprintf(stderr, "runner: %s::%s left %d global setting(s); put back\n",
			stats->test->category, stats->test->name, n);
}

ReportHook(TEST_CRASH)(struct criterion_test_stats *stats)
{
	int n = restore_globals();

	if (n)
		fprintf(stderr, "runner: %s::%s crashed leaving %d global setting(s); put back\n",
			stats->test->category, stats->test->name, n);
}
