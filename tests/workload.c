// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * workload.c - a multi-threaded program for the demo and the integration
 * tests: it creates threads (and optionally a child process with threads),
 * each sleeping and waking ITERS times, joins them, and prints the tid of
 * every thread it made ("tid T" lines), so tests can assert exact sets.
 *
 *   workload [-t THREADS] [-i ITERS] [-s SLEEP_US] [-l LOOPS] [-f] [-w FD] [-Q]
 *     -l      spin LOOPS iterations between sleeps (CPU time for cpu-clock)
 *     -f      also fork a child process that runs the same threads
 *     -w FD   wait until FD is readable (a byte or EOF) before creating threads
 *     -Q      instead: a busy thread (ITERS sleeps of SLEEP_US, no spin) next to
 *             a quiet one (10 sleeps of 50 ms); prints "busy T" and "quiet T"
 *     -C N    instead: churn N short-lived threads, 50 at a time; with -w FD,
 *             wait for a second byte on FD before exiting; prints "churned N"
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int iters = 20;
static long sleep_us = 200;
static unsigned long loops = 20000;

/* The function tests look for in symbolized call chains. */
__attribute__((noinline)) void *body(void *arg)
{
	volatile unsigned long spin = 0;
	struct timespec ts = { 0, sleep_us * 1000 };
	int i;

	(void)arg;
	for (i = 0; i < iters; i++) {
		unsigned long k;

		for (k = 0; k < loops; k++)
			spin += k;
		nanosleep(&ts, NULL);
	}
	return (void *)(long)syscall(SYS_gettid);
}

static void *busy(void *arg)
{
	struct timespec ts = { 0, sleep_us * 1000 };
	int i;

	(void)arg;
	for (i = 0; i < iters; i++)
		nanosleep(&ts, NULL);
	return (void *)(long)syscall(SYS_gettid);
}

static void *quiet(void *arg)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	int i;

	(void)arg;
	for (i = 0; i < 10; i++)
		nanosleep(&ts, NULL);
	return (void *)(long)syscall(SYS_gettid);
}

static void *brief(void *arg)
{
	struct timespec ts = { 0, 10000 };

	(void)arg;
	nanosleep(&ts, NULL);
	return NULL;
}

static int churn(long n)
{
	pthread_t th[50];
	long done = 0;
	int i, k;

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
	pthread_t b, q;
	void *rb, *rq;

	if (pthread_create(&q, NULL, quiet, NULL) || pthread_create(&b, NULL, busy, NULL))
		return 1;
	pthread_join(b, &rb);
	pthread_join(q, &rq);
	printf("busy %ld\nquiet %ld\n", (long)rb, (long)rq);
	return 0;
}

static int run_threads(int n, const char *who)
{
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	int i, err = 0;

	if (!th)
		return 1;
	for (i = 0; i < n; i++) {
		if (pthread_create(&th[i], NULL, body, NULL)) {
			fprintf(stderr, "workload: pthread_create failed at %d\n", i);
			n = i;
			err = 1;
			break;
		}
	}
	for (i = 0; i < n; i++) {
		void *ret;

		pthread_join(th[i], &ret);
		printf("tid %ld %s\n", (long)ret, who);
	}
	free(th);
	return err;
}

int main(int argc, char **argv)
{
	int nthreads = 4, do_fork = 0, wait_fd = -1, pair = 0, c, err;
	long nchurn = 0;
	pid_t child = 0;

	while ((c = getopt(argc, argv, "t:i:s:l:fw:QC:")) != -1) {
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
		case 'C':
			nchurn = atol(optarg);
			break;
		case 'f':
			do_fork = 1;
			break;
		case 'w':
			wait_fd = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: workload [-t N] [-i ITERS] [-s US] [-l LOOPS] [-f] [-w FD] [-Q] [-C N]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("main %d\n", getpid());
	if (wait_fd >= 0) {
		char b;

		if (read(wait_fd, &b, 1) < 0)
			return 1;
	}
	if (pair)
		return run_pair();
	if (nchurn) {
		char b;

		err = churn(nchurn);
		if (wait_fd >= 0 && read(wait_fd, &b, 1) < 0)
			return 1;
		return err;
	}
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
