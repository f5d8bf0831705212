// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pingpong.c - context-switch cost: two threads on one CPU hand a token back
 * and forth through a pipe pair or a futex, so every hand-over is a context
 * switch. Prints "ns_per_switch N" (wall time / switches).
 *
 * With -S, an A/B comparison within one run: the rounds go in segments of
 * SEG rounds, and between two segments (no switch in flight: the token is
 * ours) the state flips, B first and last. B is
 *   -t  our two threads traced by the running ringkeeper (their bytes in
 *       its pinned traced map set; A: cleared, so sched_switch takes its
 *       untracked path and the loader hears nothing), or
 *   -b OBJ  OBJ's sched_switch program attached (A: detached: bare).
 * Each interior segment gives B - A as its time minus the mean of its two
 * neighbours' (sign flipped for an A segment): machine drift slower than a
 * segment cancels. Prints "ab_diff_ns MEDIAN MIN MAX N" (ns per switch)
 * and "a_ns" / "b_ns" (medians of each state's segments).
 *
 *   pingpong [-m pipe|futex] [-n ROUNDS] [-c CPU] [-S SEG (-t | -b OBJ)]
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long rounds = 200000;
static int cpu;
static int use_futex;
static int p1[2], p2[2];
static _Atomic int word; /* futex: 0 = ping's turn, 1 = pong's turn */
static _Atomic pid_t pong_tid;

/* -S: what state B is, and what flipping it needs. */
static long seg;
static int toggle_traced;
static __u8 *traced; /* ringkeeper's traced map, one byte per tid */
static size_t ntraced;
static struct bpf_program *prog; /* -b */
static struct bpf_link *ab_link;

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
	__atomic_store_n(&pong_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
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

/* ringkeeper's pinned traced map, mapped (it must be recording us). */
static int map_traced(void)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	int fd = bpf_obj_get("/sys/fs/bpf/ringkeeper/traced");
	void *p;

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || info.value_size != 64) {
		fprintf(stderr, "pingpong: no ringkeeper traced map pinned\n");
		return -1;
	}
	ntraced = (size_t)info.max_entries * 64;
	p = mmap(NULL, ntraced, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror("pingpong: mmap traced");
		return -1;
	}
	traced = p;
	return 0;
}

static int load_prog(const char *path)
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);

	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "pingpong: cannot load %s\n", path);
		return -1;
	}
	prog = bpf_object__next_program(obj, NULL);
	return prog ? 0 : -1;
}

/* Enter state @b (1: B). Return: 0, -1. */
static int set_state(int b, pid_t me, pid_t other)
{
	if (toggle_traced) {
		if ((size_t)me >= ntraced || (size_t)other >= ntraced)
			return -1;
		__atomic_store_n(&traced[me], (__u8)b, __ATOMIC_RELEASE);
		__atomic_store_n(&traced[other], (__u8)b, __ATOMIC_RELEASE);
	} else if (b && !ab_link) {
		ab_link = bpf_program__attach(prog);
		if (!ab_link)
			return -1;
	} else if (!b && ab_link) {
		bpf_link__destroy(ab_link);
		ab_link = NULL;
	}
	return 0;
}

static double ns_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e9 + (double)(b->tv_nsec - a->tv_nsec);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void one_round(char *c)
{
	if (use_futex) {
		fpass(1);
		fwait(1);
	} else if (write(p1[1], c, 1) != 1 || read(p2[0], c, 1) != 1) {
		exit(1);
	}
}

/* The -S run: segments, B first and last; the figures from their neighbours. */
static int ab_run(void)
{
	size_t nseg = (size_t)(rounds / seg), i, na = 0, nb = 0, nd = 0;
	double *x, *d, *va, *vb, m;
	pid_t me = (pid_t)syscall(SYS_gettid), other;
	char c = 'x';

	if (nseg % 2 == 0)
		nseg--; /* odd: B at both ends */
	if (nseg < 3) {
		fprintf(stderr, "pingpong: -S needs at least 3 segments in -n\n");
		return 1;
	}
	while (!(other = __atomic_load_n(&pong_tid, __ATOMIC_ACQUIRE)))
		sched_yield();
	x = calloc(nseg, sizeof(*x));
	d = calloc(nseg, sizeof(*d));
	va = calloc(nseg, sizeof(*va));
	vb = calloc(nseg, sizeof(*vb));
	if (!x || !d || !va || !vb)
		return 1;
	for (i = 0; i < nseg; i++) {
		struct timespec a, b;
		long k;

		if (set_state(!(i % 2), me, other)) {
			fprintf(stderr, "pingpong: cannot switch to state %s\n", i % 2 ? "A" : "B");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (k = 0; k < seg; k++)
			one_round(&c);
		clock_gettime(CLOCK_MONOTONIC, &b);
		x[i] = ns_between(&a, &b) / (2.0 * (double)seg);
	}
	/* The rounds -S left over, in state B (ours at the end). */
	for (i = 0; i < (size_t)(rounds - (long)nseg * seg); i++)
		one_round(&c);
	for (i = 0; i < nseg; i++) {
		if (i % 2)
			va[na++] = x[i];
		else
			vb[nb++] = x[i];
		if (i > 0 && i + 1 < nseg)
			d[nd++] = (i % 2 ? -1 : 1) * (x[i] - (x[i - 1] + x[i + 1]) / 2);
	}
	printf("a_ns %.1f\nb_ns %.1f\n", median(va, na), median(vb, nb));
	m = median(d, nd); /* sorts d */
	printf("ab_diff_ns %.1f %.1f %.1f %zu\n", m, d[0], d[nd - 1], nd);
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	pthread_t th;
	char c = 'x';
	long i;
	int opt, err = 0;

	while ((opt = getopt(argc, argv, "m:n:c:S:tb:")) != -1) {
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
		case 'S':
			seg = atol(optarg);
			break;
		case 't':
			toggle_traced = 1;
			break;
		case 'b':
			if (load_prog(optarg))
				return 1;
			break;
		default:
			fprintf(stderr, "usage: pingpong [-m pipe|futex] [-n ROUNDS] [-c CPU] "
					"[-S SEG (-t | -b OBJ)]\n");
			return 2;
		}
	}
	if (seg > 0 && !toggle_traced == !prog) {
		fprintf(stderr, "pingpong: -S takes one of -t and -b\n");
		return 2;
	}
	if (toggle_traced && map_traced())
		return 1;
	if (pipe(p1) || pipe(p2)) {
		perror("pipe");
		return 1;
	}
	pin();
	if (pthread_create(&th, NULL, pong, NULL)) {
		perror("pthread_create");
		return 1;
	}
	if (seg > 0) {
		err = ab_run();
		if (err)
			exit(err); /* the other thread waits for a token that will not come */
		pthread_join(th, NULL);
		if (ab_link)
			bpf_link__destroy(ab_link);
		return 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < rounds; i++)
		one_round(&c);
	clock_gettime(CLOCK_MONOTONIC, &b);
	pthread_join(th, NULL);
	printf("ns_per_switch %.1f\n", ns_between(&a, &b) / (2.0 * (double)rounds));
	return 0;
}
