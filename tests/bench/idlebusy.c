// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * idlebusy.c - N threads that first sleep IDLE ms, then spin BUSY ms, then
 * exit: the many-threads case of the locked-memory benchmark. Prints
 * "ready" once every thread exists (so a tracer can attach with -p and see
 * them all), then waits for them.
 *
 *   idlebusy [-t N] [-I IDLE_MS] [-B BUSY_MS]
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long idle_ms = 3000, busy_ms = 200;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *body(void *arg)
{
	struct timespec ts = { idle_ms / 1000, (idle_ms % 1000) * 1000000 };
	volatile unsigned long spin = 0;
	double end;

	(void)arg;
	nanosleep(&ts, NULL);
	/* Busy in short bursts: the thread comes on and off CPU many times. */
	for (end = now_ms() + busy_ms; now_ms() < end;) {
		unsigned long k;

		for (k = 0; k < 100000; k++)
			spin += k;
		sched_yield();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_attr_t at;
	pthread_t *th;
	long n = 16, i;
	int opt;

	while ((opt = getopt(argc, argv, "t:I:B:")) != -1) {
		switch (opt) {
		case 't':
			n = atol(optarg);
			break;
		case 'I':
			idle_ms = atol(optarg);
			break;
		case 'B':
			busy_ms = atol(optarg);
			break;
		default:
			fprintf(stderr, "usage: idlebusy [-t N] [-I IDLE_MS] [-B BUSY_MS]\n");
			return 2;
		}
	}
	th = calloc((size_t)n, sizeof(*th));
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 * 1024);
	for (i = 0; i < n; i++) {
		if (pthread_create(&th[i], &at, body, NULL)) {
			perror("pthread_create");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}
