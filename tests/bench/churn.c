// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * churn.c - thread births and deaths as fast as they come: create and join
 * THREADS threads in a loop for SECONDS (each thread returns at once), or
 * with -e, fork+exec PROG (/bin/true) N times, one at a time. Prints the
 * lifetimes done ("lifetimes N seconds S rate R/s"): make bench section
 * churn sets it under the recorder against bare and perf.
 *
 *   churn [-t THREADS] [-d SECONDS] [-r RATE]
 *   churn -e N [PROG]
 *
 * -r RATE: at most RATE lifetimes a second (batches paced by the clock): a
 * steady birth rate for a soak.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *brief(void *arg)
{
	return arg;
}

static int threads_loop(int nthreads, double secs, double rate)
{
	pthread_t *th = calloc((size_t)nthreads, sizeof(*th));
	double t0 = now_s(), t;
	long done = 0;
	int i;

	if (!th)
		return 1;
	do {
		for (i = 0; i < nthreads; i++)
			if (pthread_create(&th[i], NULL, brief, NULL)) {
				perror("churn: pthread_create");
				return 1;
			}
		for (i = 0; i < nthreads; i++)
			pthread_join(th[i], NULL);
		done += nthreads;
		t = now_s() - t0;
		if (rate > 0 && (double)done / rate > t) {
			double w = (double)done / rate - t;
			struct timespec ts = { (time_t)w, (long)((w - (double)(time_t)w) * 1e9) };

			nanosleep(&ts, NULL);
			t = now_s() - t0;
		}
	} while (t < secs);
	printf("lifetimes %ld seconds %.3f rate %.0f/s\n", done, t, (double)done / t);
	free(th);
	return 0;
}

static int exec_loop(long n, const char *prog)
{
	double t0 = now_s(), t;
	long i;

	for (i = 0; i < n; i++) {
		pid_t p = fork();
		int st;

		if (p < 0) {
			perror("churn: fork");
			return 1;
		}
		if (p == 0) {
			execl(prog, prog, (char *)NULL);
			_exit(127);
		}
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "churn: %s failed\n", prog);
			return 1;
		}
	}
	t = now_s() - t0;
	printf("lifetimes %ld seconds %.3f rate %.0f/s\n", n, t, (double)n / t);
	return 0;
}

int main(int argc, char **argv)
{
	int nthreads = 64, c;
	double secs = 10, rate = 0;
	long nexec = 0;

	while ((c = getopt(argc, argv, "t:d:e:r:")) != -1) {
		switch (c) {
		case 't':
			nthreads = atoi(optarg);
			break;
		case 'd':
			secs = atof(optarg);
			break;
		case 'e':
			nexec = atol(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: churn [-t THREADS] [-d SECONDS] [-r RATE] | churn -e N [PROG]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (nexec)
		return exec_loop(nexec, optind < argc ? argv[optind] : "/bin/true");
	return threads_loop(nthreads > 0 ? nthreads : 1, secs, rate);
}
