// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * crasher.c - a multi-threaded program that crashes, for the crash capture
 * tests: THREADS-1 workers loop in worker_loop() (spin, then sleep), and one
 * more thread, once every worker has started, spins in crash_here() for
 * SPIN_MS and then dies there of SIGSEGV (a store through NULL) or, with -a,
 * of abort() called from it. Before the crash it prints "worker TID" for each
 * worker and "crasher TID", so tests know who is who.
 *
 *   crasher [-t THREADS] [-s SPIN_MS] [-a] [-f]
 *
 * -f: fork first, and do all of it in the child, which never execs (its
 * mappings are its parent's); the parent exits 128 + the child's signal.
 *
 * RLIMIT_CORE is raised to its hard limit: a core is the point.
 * Built with frame pointers, so -g call chains reach the thread's start.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int nthreads = 4;
static long spin_ms = 100;
static int use_abort;
static int fork_first;
static pthread_barrier_t started;
static volatile unsigned long sink;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static __attribute__((noinline)) void worker_loop(void)
{
	unsigned long i;

	for (;;) {
		for (i = 0; i < 20000; i++)
			sink += i;
		usleep(1000);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	printf("worker %ld\n", (long)syscall(SYS_gettid));
	pthread_barrier_wait(&started);
	worker_loop();
	return NULL;
}

/* The crashing function: the last samples of its thread land here. */
static __attribute__((noinline)) void crash_here(void)
{
	long end = now_ms() + spin_ms;
	unsigned long i;

	while (now_ms() < end)
		for (i = 0; i < 10000; i++)
			sink += i;
	if (use_abort)
		abort();
	*(volatile int *)(sink & 0) = 1; /* SIGSEGV, here */
}

static void *crasher(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&started);
	printf("crasher %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	crash_here();
	return NULL;
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	pthread_t t;
	int c, i;

	while ((c = getopt(argc, argv, "t:s:af")) != -1) {
		switch (c) {
		case 't':
			nthreads = atoi(optarg);
			break;
		case 's':
			spin_ms = atol(optarg);
			break;
		case 'a':
			use_abort = 1;
			break;
		case 'f':
			fork_first = 1;
			break;
		default:
			fprintf(stderr, "usage: crasher [-t THREADS] [-s SPIN_MS] [-a] [-f]\n");
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > 10000) {
		fprintf(stderr, "crasher: 1 to 10000 threads\n");
		return 2;
	}
	if (fork_first) {
		pid_t child = fork();
		int st;

		if (child < 0)
			return 2;
		if (child > 0) {
			if (waitpid(child, &st, 0) != child)
				return 2;
			return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
		}
	}
	if (!getrlimit(RLIMIT_CORE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_CORE, &rl);
	}
	/* Workers and the crasher wait for each other; main only waits. */
	pthread_barrier_init(&started, NULL, (unsigned int)nthreads);
	for (i = 0; i < nthreads - 1; i++)
		if (pthread_create(&t, NULL, worker, NULL)) {
			perror("crasher: pthread_create");
			return 1;
		}
	if (pthread_create(&t, NULL, crasher, NULL)) {
		perror("crasher: pthread_create");
		return 1;
	}
	pthread_join(t, NULL);
	return 0; /* not reached */
}
