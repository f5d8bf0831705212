// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bursts.c - N threads that each spin BURST_US on CPU, then sleep SLEEP_US,
 * for DURATION_MS: the case of the pin pool's latency targets (runs of
 * >= 1 ms separated by sleeps longer than --linger-ms), and with short
 * bursts, the case where a lock costs more than it protects.
 *
 *   bursts [-t N] [-b BURST_US] [-s SLEEP_US] [-d DURATION_MS]
 *
 * A burst is measured on the thread's own CPU clock, so a preempted burst
 * still runs BURST_US on CPU. Prints "runs R" (bursts completed, all
 * threads) at the end.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long burst_us = 2000, sleep_us = 60000, duration_ms = 2000;
static long runs_total;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static long long ns_of(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void *body(void *arg)
{
	long long end = ns_of(CLOCK_MONOTONIC) + duration_ms * 1000000ll;
	struct timespec ts = { sleep_us / 1000000, (sleep_us % 1000000) * 1000 };
	volatile unsigned long spin = 0;
	long runs = 0;

	(void)arg;
	while (ns_of(CLOCK_MONOTONIC) < end) {
		long long until = ns_of(CLOCK_THREAD_CPUTIME_ID) + burst_us * 1000ll;

		while (ns_of(CLOCK_THREAD_CPUTIME_ID) < until)
			for (int k = 0; k < 1000; k++)
				spin += (unsigned long)k;
		runs++;
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&lock);
	runs_total += runs;
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t *th;
	long n = 6, i;
	int opt;

	while ((opt = getopt(argc, argv, "t:b:s:d:")) != -1) {
		switch (opt) {
		case 't':
			n = atol(optarg);
			break;
		case 'b':
			burst_us = atol(optarg);
			break;
		case 's':
			sleep_us = atol(optarg);
			break;
		case 'd':
			duration_ms = atol(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: bursts [-t N] [-b BURST_US] [-s SLEEP_US] [-d DURATION_MS]\n");
			return 2;
		}
	}
	if (n < 1 || burst_us < 0 || sleep_us < 0 || duration_ms < 0) {
		fprintf(stderr, "bursts: bad arguments\n");
		return 2;
	}
	th = calloc((size_t)n, sizeof(*th));
	if (!th)
		return 1;
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, body, NULL)) {
			fprintf(stderr, "bursts: pthread_create failed\n");
			return 1;
		}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("runs %ld\n", runs_total);
	free(th);
	return 0;
}
