// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * workload.c - a multi-threaded program for the demo and the integration
 * tests: it creates threads (and optionally a child process with threads),
 * each sleeping and waking ITERS times, joins them, and prints the tid of
 * every thread it made ("tid T WHO csw N" lines), so tests can assert exact
 * sets. N is the thread's context switches as the kernel counted them
 * (getrusage: voluntary + involuntary) just before it returned: each one is a
 * sched_switch with the thread as prev, so a tracer must have at least N
 * switch-outs and N + 1 switch-ins of it. A sleep does not always switch (a
 * vCPU stalled past the timer returns at once), so tests compare against N,
 * not against the number of sleeps.
 *
 *   workload [-t THREADS] [-i ITERS] [-s SLEEP_US] [-l LOOPS] [-f] [-w FD] [-Q]
 *     -l      spin LOOPS iterations between sleeps (CPU time for cpu-clock)
 *     -f      also fork a child process that runs the same threads
 *     -w FD   wait until FD is readable (a byte or EOF) before creating threads
 *     -Q      instead: a busy thread (ITERS sleeps of SLEEP_US, no spin) next to
 *             a quiet one (10 sleeps of 50 ms); prints "busy T" and "quiet T"
 *     -C N    instead: churn N short-lived threads, 50 at a time; with -w FD,
 *             wait for a second byte on FD before exiting; prints "churned N"
 *     -c R    with -C N and -w FD: R rounds of N, each after a byte on FD
 *             (prints "churned N" after each), then the byte before exiting
 *     -Y PID  with -C: each round first forks a child process whose pid is
 *             PID (clone3's set_tid; root), which sleeps 2 ms three times
 *             and exits: one tid, born again in every round
 *     -T      the spin loop reads the time (clock_gettime: the vdso) every step
 *     -D UID  instead, one thread changing who it is: (as root) setresuid to
 *             UID, then prctl(PR_SET_DUMPABLE) 1, then 0; 30 ms of sleeps
 *             before each step and after the last; prints "step N" lines
 *     -N      rename threads after birth: thread I > 0 names itself "w-self-I"
 *             (prctl) after its first sleep, the main thread names thread 0
 *             "w-by-main" (pthread_setname_np from outside); prints "name T NAME"
 *     -W N    instead: two threads append 64 bytes to one tmpfs file N times
 *             each (truncated every 1,024): they wait for the file's lock in
 *             D and wake each other from the other CPU; prints "tid T" each
 *     -F MS   instead: (as root) setresuid to 65534, then flip PR_SET_DUMPABLE
 *             between 1 and 0 every 100 us (a sleep between) for MS ms;
 *             prints "flipped N" (the number of flips)
 *     -R N    instead: the main thread renames itself N times in a row (r-0,
 *             r-1, ...), then sleeps 50 ms; prints "renamed T r-<N-1> NS" (the
 *             time the renames took)
 *     -I MS   instead: count the SIGINTs delivered in MS ms, spinning on the
 *             last CPU (a handler runs for each at once, none merged with
 *             the next); prints "counting" first and "sigints N" at the end
 *     -O MS   instead: off-CPU stacks for MS ms: thread "offcpu-long" sleeps
 *             20 ms at a time in offcpu_long(), "offcpu-short" 5 ms in
 *             offcpu_short(), "offcpu-reader" blocks in offcpu_read() on a
 *             pipe that "offcpu-writer" writes every 10 ms in offcpu_write();
 *             prints "offcpu T NAME" per thread (built with frame pointers,
 *             each function noinline: a stack walk names it), then "offcpu
 *             done"; with -w FD, waits for a second byte on FD before exiting
 *             (so that a tool reading the stacks at its end finds the process)
 *     -X      a runner thread is made at once; the main thread then exits
 *             (pthread_exit; with -w FD, at the byte), and the runner, when it
 *             has gone, runs the threads and ends the process: a process
 *             whose first thread is gone, and a thread older than the byte
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int iters = 20, rename_threads, renamed_by_main, use_vdso;
static long sleep_us = 200;
static unsigned long loops = 20000;

/* What a thread reports when it is done. */
struct done {
	long tid, csw;
	int idx;
};

static void *finish(struct done *d)
{
	struct rusage ru;

	d->tid = syscall(SYS_gettid);
	d->csw = getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nvcsw + ru.ru_nivcsw;
	return d;
}

/* The function tests look for in symbolized call chains. */
__attribute__((noinline)) void *body(void *arg)
{
	volatile unsigned long spin = 0;
	struct timespec ts = { 0, sleep_us * 1000 };
	int i;

	/* Thread 0 stays until the main thread has renamed it. */
	while (rename_threads && !((struct done *)arg)->idx &&
	       !__atomic_load_n(&renamed_by_main, __ATOMIC_ACQUIRE))
		nanosleep(&ts, NULL);
	for (i = 0; i < iters; i++) {
		unsigned long k;

		for (k = 0; k < loops; k++) {
			if (use_vdso) {
				struct timespec now;

				clock_gettime(CLOCK_MONOTONIC, &now);
				spin += (unsigned long)now.tv_nsec;
			} else {
				spin += k;
			}
		}
		nanosleep(&ts, NULL);
		if (rename_threads && !i && ((struct done *)arg)->idx > 0) {
			char name[32];

			snprintf(name, sizeof(name), "w-self-%d", ((struct done *)arg)->idx % 1000);
			prctl(PR_SET_NAME, name);
		}
	}
	return finish(arg);
}

static void *busy(void *arg)
{
	struct timespec ts = { 0, sleep_us * 1000 };
	int i;

	for (i = 0; i < iters; i++)
		nanosleep(&ts, NULL);
	return finish(arg);
}

static void *quiet(void *arg)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	int i;

	for (i = 0; i < 10; i++)
		nanosleep(&ts, NULL);
	return finish(arg);
}

static void *brief(void *arg)
{
	struct timespec ts = { 0, 10000 };

	(void)arg;
	nanosleep(&ts, NULL);
	return NULL;
}

static int reborn_pid;

/* -Y: a child process with pid reborn_pid, which sleeps a little and exits. */
static int fork_reborn(void)
{
	pid_t want = reborn_pid, got;
	struct clone_args ca = { .exit_signal = SIGCHLD,
				 .set_tid = (__u64)(uintptr_t)&want,
				 .set_tid_size = 1 };
	int st, i;

	got = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (got < 0) {
		fprintf(stderr, "workload: clone3 with pid %d: %s\n", want, strerror(errno));
		return 1;
	}
	if (got == 0) {
		for (i = 0; i < 3; i++)
			usleep(2000);
		_exit(0);
	}
	printf("reborn %d\n", got);
	return waitpid(got, &st, 0) != got || !WIFEXITED(st) || WEXITSTATUS(st);
}

static int churn(long n)
{
	pthread_t th[50];
	long done = 0;
	int i, k;

	if (reborn_pid && fork_reborn())
		return 1;
	while (done < n) {
		for (k = 0; k < 50 && done + k < n; k++)
			if (pthread_create(&th[k], NULL, brief, NULL))
				return 1;
		for (i = 0; i < k; i++)
			pthread_join(th[i], NULL);
		done += k;
	}
	printf("churned %ld\n", done);
	return 0;
}

static int run_pair(void)
{
	struct done db, dq;
	pthread_t b, q;

	if (pthread_create(&q, NULL, quiet, &dq) || pthread_create(&b, NULL, busy, &db))
		return 1;
	pthread_join(b, NULL);
	pthread_join(q, NULL);
	printf("busy %ld csw %ld\nquiet %ld csw %ld\n", db.tid, db.csw, dq.tid, dq.csw);
	return 0;
}

static int run_threads(int n, const char *who)
{
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	struct done *d = calloc((size_t)n, sizeof(*d));
	int i, err = 0;

	if (!th || !d)
		return 1;
	for (i = 0; i < n; i++) {
		d[i].idx = i;
		if (pthread_create(&th[i], NULL, body, &d[i])) {
			fprintf(stderr, "workload: pthread_create failed at %d\n", i);
			n = i;
			err = 1;
			break;
		}
	}
	if (rename_threads && n > 0) {
		if (pthread_setname_np(th[0], "w-by-main"))
			err = 1;
		__atomic_store_n(&renamed_by_main, 1, __ATOMIC_RELEASE);
	}
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		printf("tid %ld %s csw %ld\n", d[i].tid, who, d[i].csw);
		if (rename_threads)
			printf(i ? "name %ld w-self-%d\n" : "name %ld w-by-main\n", d[i].tid, i);
	}
	free(th);
	free(d);
	return err;
}

/* -D: credentials and dumpability change without an exec. */
static int change_creds(long uid)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int i, step;

	for (step = 0; step < 4; step++) {
		for (i = 0; i < 3; i++)
			nanosleep(&ts, NULL);
		switch (step) {
		case 0:
			if (getuid() == 0 && setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid))
				return 1;
			break;
		case 1:
			if (prctl(PR_SET_DUMPABLE, 1))
				return 1;
			break;
		case 2:
			if (prctl(PR_SET_DUMPABLE, 0))
				return 1;
			break;
		}
		printf("step %d\n", step);
	}
	return 0;
}

/* -F: a user flipping its dumpability as fast as it can sleep. */
static int flip_dumpable(long ms)
{
	struct timespec ts = { 0, 100 * 1000 }, t0, t;
	long flips = 0;

	if (getuid() == 0 && setresuid(65534, 65534, 65534))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (prctl(PR_SET_DUMPABLE, (unsigned long)(++flips & 1)))
			return 1;
		nanosleep(&ts, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	printf("flipped %ld\n", flips);
	return 0;
}

/* -W: one file, two writers. */
static int race_fd;

static void *race_writer(void *arg)
{
	char buf[64] = { 0 };
	long i, n = (long)arg;

	printf("tid %ld\n", (long)syscall(SYS_gettid));
	for (i = 0; i < n; i++) {
		if (write(race_fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return (void *)1;
		if (!(i & 1023) && ftruncate(race_fd, 0))
			return (void *)1;
	}
	return NULL;
}

static int write_race(long n)
{
	char path[64];
	pthread_t t[2];
	void *r0, *r1;
	int i;

	snprintf(path, sizeof(path), "/dev/shm/rk-workload-%d", getpid());
	race_fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (race_fd < 0)
		return 1;
	unlink(path);
	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, race_writer, (void *)n))
			return 1;
	pthread_join(t[0], &r0);
	pthread_join(t[1], &r1);
	close(race_fd);
	return r0 || r1;
}

/* -R: a user renaming its thread in a loop (the recorder must not pay per rename). */
static int rename_loop(long n)
{
	struct timespec a, b, nap = { 0, 50 * 1000 * 1000 };
	char name[16];
	long i;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "r-%ld", i % 1000000000l);
		if (prctl(PR_SET_NAME, name))
			return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("renamed %ld %s %lld\n", (long)syscall(SYS_gettid), name,
	       (long long)(b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec));
	nanosleep(&nap, NULL);
	return 0;
}

/* A sleep one frame below its caller: the frame pointer walk from the syscall names the caller. */
static __attribute__((noinline)) void offcpu_nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

static long offcpu_until_ns;
static int offcpu_pipe[2];

/* CLOCK_MONOTONIC in ns (-O, -I). */
static long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static __attribute__((noinline)) void offcpu_long(void)
{
	offcpu_nap(20);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void offcpu_short(void)
{
	offcpu_nap(5);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) ssize_t offcpu_pipe_read(char *b)
{
	ssize_t n = read(offcpu_pipe[0], b, 1);

	__asm__ volatile("" ::: "memory");
	return n;
}

static __attribute__((noinline)) int offcpu_read(void)
{
	char b;
	int r = offcpu_pipe_read(&b) == 1 && b == 'x';

	__asm__ volatile("" ::: "memory");
	return r;
}

static __attribute__((noinline)) void offcpu_write(void)
{
	if (write(offcpu_pipe[1], "x", 1) != 1)
		exit(1);
	__asm__ volatile("" ::: "memory");
}

static void *offcpu_thread(void *arg)
{
	const char *name = arg;

	prctl(PR_SET_NAME, name);
	printf("offcpu %ld %s\n", (long)syscall(SYS_gettid), name);
	while (mono_ns() < offcpu_until_ns) {
		if (!strcmp(name, "offcpu-long"))
			offcpu_long();
		else if (!strcmp(name, "offcpu-short"))
			offcpu_short();
		else if (!strcmp(name, "offcpu-reader"))
			offcpu_read();
		else {
			offcpu_nap(10);
			offcpu_write();
		}
	}
	if (!strcmp(name, "offcpu-writer"))
		offcpu_write(); /* the reader's last read */
	return NULL;
}

static int run_offcpu(long ms)
{
	static const char *names[] = { "offcpu-long", "offcpu-short", "offcpu-reader",
				       "offcpu-writer" };
	pthread_t th[4];
	int i;

	if (pipe(offcpu_pipe))
		return 1;
	offcpu_until_ns = mono_ns() + ms * 1000000L;
	for (i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, offcpu_thread, (void *)names[i]))
			return 1;
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	return 0;
}

/* -I: one SIGINT delivered, counted. */
static volatile sig_atomic_t sigints;

static void count_sigint(int sig)
{
	(void)sig;
	sigints++;
}

static int count_sigints(long ms)
{
	struct sigaction sa = { .sa_handler = count_sigint };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), end;
	cpu_set_t cpus;

	if (sigaction(SIGINT, &sa, NULL))
		return 1;
	/* The last CPU (a test keeps the signal's other receivers on the first). */
	CPU_ZERO(&cpus);
	CPU_SET(ncpu > 1 ? (int)ncpu - 1 : 0, &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	end = mono_ns() + ms * 1000000L;
	printf("counting\n");
	/* On CPU: a signal runs its handler at once, before a second one can merge with it. */
	while (mono_ns() < end)
		;
	printf("sigints %d\n", (int)sigints);
	return 0;
}

/* -X: the threads' runner: when the main thread has gone, the threads, then the process's end. */
static int x_threads;
static pthread_t x_main;

static void *main_gone_runner(void *arg)
{
	(void)arg;
	pthread_join(x_main, NULL);
	exit(run_threads(x_threads, "main"));
}

int main(int argc, char **argv)
{
	int nthreads = 4, do_fork = 0, wait_fd = -1, pair = 0, main_exits = 0, c, err;
	long nchurn = 0, nrounds = 1, creds_uid = -1, nrenames = 0, nwrites = 0, flip_ms = 0,
	     offcpu_ms = 0, count_ms = 0;
	pid_t child = 0;

	while ((c = getopt(argc, argv, "t:i:s:l:fw:QC:c:Y:NTD:R:W:F:O:XI:")) != -1) {
		switch (c) {
		case 't':
			nthreads = atoi(optarg);
			break;
		case 'i':
			iters = atoi(optarg);
			break;
		case 's':
			sleep_us = atol(optarg);
			break;
		case 'l':
			loops = strtoul(optarg, NULL, 10);
			break;
		case 'Q':
			pair = 1;
			break;
		case 'N':
			rename_threads = 1;
			break;
		case 'R':
			nrenames = atol(optarg);
			break;
		case 'W':
			nwrites = atol(optarg);
			break;
		case 'F':
			flip_ms = atol(optarg);
			break;
		case 'O':
			offcpu_ms = atol(optarg);
			break;
		case 'T':
			use_vdso = 1;
			break;
		case 'D':
			creds_uid = atol(optarg);
			break;
		case 'c':
			nrounds = atol(optarg);
			break;
		case 'Y':
			reborn_pid = atoi(optarg);
			break;
		case 'C':
			nchurn = atol(optarg);
			break;
		case 'f':
			do_fork = 1;
			break;
		case 'w':
			wait_fd = atoi(optarg);
			break;
		case 'X':
			main_exits = 1;
			break;
		case 'I':
			count_ms = atol(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: workload [-t N] [-i ITERS] [-s US] [-l LOOPS] [-f] [-w FD] [-Q] [-C N [-c R]] [-N] [-T] [-D UID] [-R N] [-W N] [-F MS] [-O MS] [-X] [-I MS]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("main %d\n", getpid());
	if (main_exits) {
		pthread_t r;

		x_threads = nthreads;
		x_main = pthread_self();
		if (pthread_create(&r, NULL, main_gone_runner, NULL))
			return 1;
	}
	if (wait_fd >= 0) {
		char b;

		if (read(wait_fd, &b, 1) < 0)
			return 1;
	}
	if (count_ms)
		return count_sigints(count_ms);
	if (pair)
		return run_pair();
	if (offcpu_ms) {
		char b;

		err = run_offcpu(offcpu_ms);
		printf("offcpu done\n");
		if (wait_fd >= 0 && read(wait_fd, &b, 1) < 0)
			return 1;
		return err;
	}
	if (nrenames)
		return rename_loop(nrenames);
	if (nwrites)
		return write_race(nwrites);
	if (flip_ms)
		return flip_dumpable(flip_ms);
	if (creds_uid >= 0)
		return change_creds(creds_uid);
	if (nchurn) {
		char b;

		err = churn(nchurn);
		/* Each further round starts at a byte: the test changes the world in between. */
		while (!err && --nrounds > 0) {
			if (wait_fd < 0 || read(wait_fd, &b, 1) != 1)
				return 1;
			err = churn(nchurn);
		}
		if (wait_fd >= 0 && read(wait_fd, &b, 1) < 0)
			return 1;
		return err;
	}
	/* -X: the main thread exits (after -w's byte, above); the runner, made first, goes on. */
	if (main_exits)
		pthread_exit(NULL);
	if (do_fork) {
		fflush(stdout);
		child = fork();
		if (child == 0) {
			printf("child %d\n", getpid());
			exit(run_threads(nthreads, "child"));
		}
	}
	err = run_threads(nthreads, "main");
	if (child > 0) {
		int st;

		waitpid(child, &st, 0);
		err |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	return err;
}
