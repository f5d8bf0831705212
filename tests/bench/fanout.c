// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fanout.c - many threads for the scale benchmark: N threads exist before a
 * tracer attaches, then each wakes ITERS times SLEEP_US apart (about
 * 2 * N * 1e6 / SLEEP_US switch signals per second), while BUSY of them
 * spin in short bursts for the same time. Prints "ready" once every thread
 * exists, waits for a byte (or EOF) on stdin, runs, prints "done" with the
 * context switches the kernel counted for the threads (voluntary +
 * involuntary: a lower bound of the switch-outs a tracer must see).
 *
 *   fanout [-t N] [-i ITERS] [-s SLEEP_US] [-b BUSY]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int iters = 200, nbusy = 4;
static long sleep_us = 20000;
static pthread_barrier_t start;
static volatile int stop_busy;
static long total_csw;
static pthread_mutex_t csw_lock = PTHREAD_MUTEX_INITIALIZER;

static void count_csw(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return;
	pthread_mutex_lock(&csw_lock);
	total_csw += ru.ru_nvcsw + ru.ru_nivcsw;
	pthread_mutex_unlock(&csw_lock);
}

static void *idle_body(void *arg)
{
	struct timespec ts = { sleep_us / 1000000, (sleep_us % 1000000) * 1000 };
	int i;

	(void)arg;
	pthread_barrier_wait(&start);
	for (i = 0; i < iters; i++)
		nanosleep(&ts, NULL);
	count_csw();
	return NULL;
}

static void *busy_body(void *arg)
{
	volatile unsigned long spin = 0;

	(void)arg;
	pthread_barrier_wait(&start);
	while (!stop_busy) {
		unsigned long k;

		for (k = 0; k < 200000; k++)
			spin += k;
		sched_yield();
	}
	count_csw();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	pthread_t *th;
	int n = 64, c, i;
	char b;

	while ((c = getopt(argc, argv, "t:i:s:b:")) != -1) {
		switch (c) {
		case 't':
			n = atoi(optarg);
			break;
		case 'i':
			iters = atoi(optarg);
			break;
		case 's':
			sleep_us = atol(optarg);
			break;
		case 'b':
			nbusy = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: fanout [-t N] [-i ITERS] [-s SLEEP_US] [-b BUSY]\n");
			return 2;
		}
	}
	if (n < 1 || nbusy < 0 || nbusy > n || iters < 0 || sleep_us < 1)
		return 2;
	th = calloc((size_t)n, sizeof(*th));
	if (!th)
		return 1;
	pthread_barrier_init(&start, NULL, (unsigned int)n + 1);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (i = 0; i < n; i++) {
		if (pthread_create(&th[i], &attr, i < nbusy ? busy_body : idle_body, NULL)) {
			perror("fanout: pthread_create");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	if (read(0, &b, 1) < 0)
		return 1;
	pthread_barrier_wait(&start);
	for (i = nbusy; i < n; i++)
		pthread_join(th[i], NULL);
	stop_busy = 1;
	for (i = 0; i < nbusy; i++)
		pthread_join(th[i], NULL);
	printf("done csw %ld\n", total_csw);
	free(th);
	return 0;
}
