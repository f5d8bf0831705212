// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pingpong.c - context-switch cost: two threads on one CPU hand a token back
 * and forth through a pipe pair or a futex, so every hand-over is a context
 * switch. Prints "ns_per_switch N" (wall time / switches).
 *
 *   pingpong [-m pipe|futex] [-n ROUNDS] [-c CPU]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long rounds = 200000;
static int cpu;
static int use_futex;
static int p1[2], p2[2];
static _Atomic int word; /* futex: 0 = ping's turn, 1 = pong's turn */

static void pin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		exit(1);
	}
}

static void fwait(int val)
{
	while (__atomic_load_n(&word, __ATOMIC_ACQUIRE) == val)
		syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void fpass(int to)
{
	__atomic_store_n(&word, to, __ATOMIC_RELEASE);
	syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *pong(void *arg)
{
	char c;
	long i;

	(void)arg;
	pin();
	for (i = 0; i < rounds; i++) {
		if (use_futex) {
			fwait(0);
			fpass(0);
		} else {
			if (read(p1[0], &c, 1) != 1 || write(p2[1], &c, 1) != 1)
				exit(1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	pthread_t th;
	char c = 'x';
	long i;
	int opt;

	while ((opt = getopt(argc, argv, "m:n:c:")) != -1) {
		switch (opt) {
		case 'm':
			use_futex = !strcmp(optarg, "futex");
			if (!use_futex && strcmp(optarg, "pipe")) {
				fprintf(stderr, "-m pipe|futex\n");
				return 2;
			}
			break;
		case 'n':
			rounds = atol(optarg);
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: pingpong [-m pipe|futex] [-n ROUNDS] [-c CPU]\n");
			return 2;
		}
	}
	if (pipe(p1) || pipe(p2)) {
		perror("pipe");
		return 1;
	}
	pin();
	if (pthread_create(&th, NULL, pong, NULL)) {
		perror("pthread_create");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < rounds; i++) {
		if (use_futex) {
			fpass(1);
			fwait(1);
		} else {
			if (write(p1[1], &c, 1) != 1 || read(p2[0], &c, 1) != 1)
				return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	pthread_join(th, NULL);
	printf("ns_per_switch %.1f\n",
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (2.0 * rounds));
	return 0;
}
