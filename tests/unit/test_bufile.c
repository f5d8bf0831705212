// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Buffer file layout, ring writer and checked reader. */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/valgrind.h>
#include "bufile.h"
#include "pmu.h"

static char dir[64];
static char path[128];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rk-unit-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/buf", dir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

TestSuite(bufile, .init = setup, .fini = teardown);

/* A test record: header, sequence number, filler of a given total size. */
struct trec {
	struct perf_event_header h;
	__u64 seq;
	__u64 fill[30];
};

static size_t make_rec(struct trec *r, __u64 seq, size_t size)
{
	size_t i;

	memset(r, 0xa5, sizeof(*r)); /* poison */
	r->h.type = PERF_RECORD_SWITCH;
	r->h.misc = 0;
	r->h.size = (__u16)size;
	r->seq = seq;
	for (i = 0; i < (size - 16) / 8; i++)
		r->fill[i] = seq * 31 + i;
	return size;
}

static struct rk_bufile *make(size_t data_size)
{
	struct rk_thread_ident id;
	struct rk_pmu_entry e;
	struct rk_bufile *bf;

	memset(&id, 0xcc, sizeof(id)); /* poison: create must set what matters */
	id.tid = 42;
	id.tgid = 41;
	rk_pmu_sched_entry(&e);
	unlink(path); /* create never replaces a file (O_EXCL) */
	bf = rk_bufile__create(path, data_size, 0, &e, &id);
	cr_assert_not_null(bf, "create: %s", strerror(errno));
	return bf;
}

struct collect {
	__u64 seqs[4096];
	size_t n;
	int bad;
};

static int collect_fn(const struct perf_event_header *h, void *ctx)
{
	struct collect *c = ctx;
	const struct trec *r = (const void *)h;
	size_t i;

	for (i = 0; i < (h->size - 16u) / 8; i++)
		if (r->fill[i] != r->seq * 31 + i)
			c->bad++;
	if (c->n < 4096)
		c->seqs[c->n++] = r->seq;
	return 0;
}

Test(bufile, layout_sizes)
{
	cr_assert_eq(rk_bufile_layout_size(0, 0), 0);
	cr_assert_eq(rk_bufile_layout_size(2048, 0), 0, "less than a page");
	cr_assert_eq(rk_bufile_layout_size(12288, 0), 0, "not a power of two");
	cr_assert_eq(rk_bufile_layout_size(4096, 0), 8192);
	cr_assert_eq(rk_bufile_layout_size(65536, 8192), 4096 + 65536 + 8192);
	cr_assert_eq(rk_bufile_layout_size(65536, 100), 0, "bad aux size");
	cr_assert_eq(rk_bufile_layout_size(1ull << 40, 0), 0, "too large");
}

Test(bufile, page0_and_pmu_info_placement)
{
	struct rk_bufile *bf = make(8192), ro;
	struct rk_pmu_entry e;
	const char *msg = NULL;

	rk_pmu_sched_entry(&e);
	/* The RFC's constraints. */
	cr_assert_geq(bf->ext->pmu_offset, sizeof(struct perf_event_mmap_page) + 16);
	cr_assert_leq(bf->ext->pmu_offset + bf->ext->pmu_size, RK_PAGE_SIZE);
	cr_assert_eq(bf->ext->pmu_offset, 1104);
	/* The RFC's perf_event_init_pmu_info(): attr, then the descriptor; no header. */
	cr_assert_eq(bf->ext->pmu_size, 136 + 0);
	cr_assert_eq(memcmp((__u8 *)bf->base + bf->ext->pmu_offset, &e.attr, 136), 0);
	{
		__u32 attr_size;

		memcpy(&attr_size, (__u8 *)bf->base + 1104 + 4, 4);
		cr_assert_eq(attr_size, 136, "attr.size is the second word at pmu_offset");
	}
	cr_assert_eq(bf->pg->data_offset, 4096);
	cr_assert_eq(bf->pg->data_size, 8192);
	cr_assert_eq(bf->pg->aux_size, 0);
	cr_assert_eq(bf->ident->magic, RK_IDENT_MAGIC);
	cr_assert_eq(bf->ident->tid, 42);
	cr_assert_eq(bf->ident->pinned, 0, "counters start at zero whatever was passed");
	cr_assert_eq(bf->ident->overwritten, 0);
	cr_assert_eq(bf->ident->ns_tid, 0xcccccccc, "the rest is copied verbatim");
	cr_assert_eq((__u8 *)bf->ident - (__u8 *)bf->base, RK_ALIGN8(1104 + 136));
	cr_assert_eq(rk_bufile__from_mem(&ro, bf->base, bf->map_size, &msg), 0, "%s", msg);
	/* The reader gives back the map value: pmu_info sizes from pmu_size and attr.size. */
	cr_assert_eq(memcmp(ro.pmu, &e, 8 + 136), 0);
	/* A file of the old layout (identity version 1) is named as such. */
	bf->ident->version = 1;
	cr_assert_eq(rk_bufile__from_mem(&ro, bf->base, bf->map_size, &msg), -EBADMSG);
	cr_assert_not_null(strstr(msg, "older ringkeeper"), "%s", msg);
	rk_bufile__free(bf);
}

Test(bufile, max_descriptor_fits_and_oversize_is_refused)
{
	struct rk_thread_ident id = { .tid = 1 };
	struct rk_pmu_entry e;
	struct rk_bufile *bf;

	rk_pmu_sched_entry(&e);
	e.info.pmu_descsz = RK_PMU_DESC_MAX;
	memset(e.desc, 0x5a, sizeof(e.desc));
	bf = rk_bufile__create(path, 4096, 0, &e, &id);
	cr_assert_not_null(bf);
	cr_assert_eq(bf->ext->pmu_size, 136 + RK_PMU_DESC_MAX);
	cr_assert_leq(bf->ext->pmu_offset + bf->ext->pmu_size + sizeof(struct rk_thread_ident),
		      RK_PAGE_SIZE);
	cr_assert_eq(((const __u8 *)bf->base)[1104 + 136 + RK_PMU_DESC_MAX - 1], 0x5a);
	rk_bufile__free(bf);

	e.info.pmu_descsz = RK_PMU_DESC_MAX + 1;
	errno = 0;
	cr_assert_null(rk_bufile__create(path, 4096, 0, &e, &id));
	cr_assert_eq(errno, EINVAL);
}

Test(bufile, empty_ring_has_no_records)
{
	struct rk_bufile *bf = make(4096);
	struct collect c = { 0 };

	cr_assert_eq(rk_bufile__for_each(bf, collect_fn, &c), 0);
	cr_assert_eq(c.n, 0);
	rk_bufile__free(bf);
}

Test(bufile, records_read_back_in_order)
{
	struct rk_bufile *bf = make(4096);
	struct collect c = { 0 };
	struct trec r;
	__u64 i;

	for (i = 0; i < 10; i++)
		cr_assert_eq(rk_bufile__write(bf, &r, make_rec(&r, i, 32)), 0);
	cr_assert_eq(bf->pg->data_head, 320);
	cr_assert_eq(bf->pg->data_tail, 0);
	cr_assert_eq(rk_bufile__for_each(bf, collect_fn, &c), 0);
	cr_assert_eq(c.n, 10);
	for (i = 0; i < 10; i++)
		cr_assert_eq(c.seqs[i], i);
	rk_bufile__free(bf);
}

Test(bufile, full_ring_drops_whole_oldest_records)
{
	struct rk_bufile *bf = make(4096);
	struct collect c = { 0 };
	struct trec r;
	__u64 i, n = 4096 / 32;

	/* Exactly full: nothing dropped. */
	for (i = 0; i < n; i++)
		cr_assert_eq(rk_bufile__write(bf, &r, make_rec(&r, i, 32)), 0);
	cr_assert_eq(bf->pg->data_head - bf->pg->data_tail, 4096);
	cr_assert_eq(bf->ident->overwritten, 0);
	/* One more: exactly one record goes. */
	cr_assert_eq(rk_bufile__write(bf, &r, make_rec(&r, n, 32)), 0);
	cr_assert_eq(bf->ident->overwritten, 1);
	cr_assert_eq(bf->pg->data_tail, 32);
	cr_assert_eq(rk_bufile__for_each(bf, collect_fn, &c), 0);
	cr_assert_eq(c.n, n);
	cr_assert_eq(c.seqs[0], 1);
	cr_assert_eq(c.seqs[n - 1], n);
	rk_bufile__free(bf);
}

Test(bufile, wrap_around_with_records_straddling_the_end)
{
	struct rk_bufile *bf = make(4096);
	struct collect c = { 0 };
	struct trec r;
	__u64 i, total = 1000;

	/* 56 does not divide 4096: records straddle the ring's end. */
	for (i = 0; i < total; i++)
		cr_assert_eq(rk_bufile__write(bf, &r, make_rec(&r, i, i % 3 ? 56 : 24)), 0);
	cr_assert_leq(bf->pg->data_head - bf->pg->data_tail, 4096);
	cr_assert_eq(rk_bufile__for_each(bf, collect_fn, &c), 0);
	cr_assert_eq(c.bad, 0, "a wrapped record came back corrupted");
	cr_assert_gt(c.n, 4096 / 56);
	for (i = 0; i < c.n; i++)
		cr_assert_eq(c.seqs[i], total - c.n + i, "records must be the newest, in order");
	cr_assert_eq(bf->ident->overwritten, total - c.n);
	rk_bufile__free(bf);
}

Test(bufile, record_larger_than_ring_is_refused_and_counted)
{
	struct rk_bufile *bf = make(4096);
	union {
		struct perf_event_header h;
		__u8 b[8192];
	} big;
	struct trec r;

	memset(&big, 0, sizeof(big));
	big.h.size = 4096 + 8;
	cr_assert_eq(rk_bufile__write(bf, &r, make_rec(&r, 7, 32)), 0);
	cr_assert_eq(rk_bufile__write(bf, &big, 4096 + 8), -E2BIG);
	cr_assert_eq(bf->ident->lost, 1);
	cr_assert_eq(bf->pg->data_head, 32, "nothing of it written, old data intact");
	big.h.size = 4096;
	cr_assert_eq(rk_bufile__write(bf, &big, 4096), 0, "a record of exactly the ring fits");
	cr_assert_eq(bf->pg->data_head - bf->pg->data_tail, 4096);
	rk_bufile__free(bf);
}

Test(bufile, malformed_records_are_refused)
{
	struct rk_bufile *bf = make(4096);
	struct trec r;

	make_rec(&r, 1, 32);
	cr_assert_eq(rk_bufile__write(bf, &r, 30), -EINVAL, "size not a multiple of 8");
	cr_assert_eq(rk_bufile__write(bf, &r, 40), -EINVAL, "size disagrees with header");
	cr_assert_eq(rk_bufile__write(bf, &r, 4), -EINVAL, "shorter than a header");
	cr_assert_eq(bf->pg->data_head, 0);
	rk_bufile__free(bf);
}

Test(bufile, corrupt_record_header_is_detected)
{
	struct rk_bufile *bf = make(4096);
	struct collect c = { 0 };
	struct perf_event_header *h;
	struct trec r;
	int i;

	for (i = 0; i < 3; i++)
		rk_bufile__write(bf, &r, make_rec(&r, (__u64)i, 32));
	h = (struct perf_event_header *)(bf->data + 32);
	h->size = 0;
	cr_assert_eq(rk_bufile__for_each(bf, collect_fn, &c), -EBADMSG);
	cr_assert_eq(c.n, 1, "the record before the corruption is still delivered");
	h->size = 1000; /* past head */
	c.n = 0;
	cr_assert_eq(rk_bufile__for_each(bf, collect_fn, &c), -EBADMSG);
	h->size = 12; /* not a multiple of 8 */
	cr_assert_eq(rk_bufile__for_each(bf, collect_fn, &c), -EBADMSG);
	rk_bufile__free(bf);
}

Test(bufile, hostile_page0_is_rejected_with_a_reason)
{
	struct rk_bufile *bf = make(4096), ro;
	const char *msg;
	void *copy = malloc(bf->map_size);
	struct perf_event_mmap_page *pg = copy;
	struct rk_page_ext *ext = (void *)((__u8 *)copy + RK_PAGE_EXT_OFFSET);
	size_t size = bf->map_size;

#define CASE(stmt)                                                                 \
	do {                                                                       \
		memcpy(copy, bf->base, size);                                      \
		stmt;                                                              \
		msg = NULL;                                                        \
		cr_assert_eq(rk_bufile__from_mem(&ro, copy, size, &msg), -EBADMSG, \
			     "accepted: " #stmt);                                  \
		cr_assert_not_null(msg);                                           \
	} while (0)
	CASE(ext->pmu_offset = 4096);
	CASE(ext->pmu_offset = 8);
	CASE(ext->pmu_offset = 1105);
	CASE(ext->pmu_size = 4096);
	CASE(ext->pmu_size = 143);
	CASE(pg->data_head = 8; pg->data_tail = 16);
	CASE(pg->data_head = 8192; pg->data_tail = 0);
	CASE(pg->data_size = 1ull << 40);
	CASE(pg->data_size = 3000);
	CASE(pg->data_offset = 0);
	CASE(pg->aux_size = 4096; pg->aux_offset = 8192);
	CASE(((struct rk_thread_ident *)((__u8 *)copy + (((__u8 *)bf->ident) - (__u8 *)bf->base)))
		     ->magic = 0);
	/* The RFC's page 0: the attr at pmu_offset, its size its second word. */
	CASE(((struct rk_perf_event_attr *)((__u8 *)copy + 1104))->size = 200);
	CASE(((struct rk_perf_event_attr *)((__u8 *)copy + 1104))->size = 8);
	memcpy(copy, bf->base, size);
	cr_assert_eq(rk_bufile__from_mem(&ro, copy, 100, &msg), -EBADMSG, "truncated file");
	cr_assert_eq(rk_bufile__from_mem(&ro, copy, size, &msg), 0, "the untouched copy is fine");
#undef CASE
	free(copy);
	rk_bufile__free(bf);
}

Test(bufile, open_reads_what_create_wrote)
{
	struct rk_bufile *bf = make(4096), *ro;
	struct collect c = { 0 };
	const char *msg = NULL;
	struct trec r;

	rk_bufile__write(bf, &r, make_rec(&r, 5, 48));
	ro = rk_bufile__open(path, &msg);
	cr_assert_not_null(ro, "%s", msg ? msg : strerror(errno));
	cr_assert_eq(ro->ident->tid, 42);
	cr_assert_eq(rk_bufile__for_each(ro, collect_fn, &c), 0);
	cr_assert_eq(c.n, 1);
	cr_assert_eq(c.seqs[0], 5);
	rk_bufile__free(ro);
	rk_bufile__free(bf);
	rk_bufile__free(NULL);

	cr_assert_eq(truncate(path, 100), 0);
	errno = 0;
	cr_assert_null(rk_bufile__open(path, &msg));
	cr_assert_eq(errno, EBADMSG);
	cr_assert_null(rk_bufile__open("/nonexistent/rk", &msg));
	cr_assert_eq(errno, ENOENT);
}

/* Invariant 3: after the writer dies at any instant, the file parses. */
Test(bufile, parses_after_writer_killed_mid_write)
{
	int round;

	for (round = 0; round < 20; round++) {
		struct rk_bufile *bf = make(4096), *ro;
		struct collect c = { 0 };
		const char *msg = NULL;
		int p[2];
		pid_t pid;
		char b;
		__u64 i;

		cr_assert_eq(pipe(p), 0);
		pid = fork();
		cr_assert_geq(pid, 0);
		if (!pid) {
			struct trec r;

			for (i = 0;; i++) {
				rk_bufile__write(bf, &r, make_rec(&r, i, 16 + 8 * (i % 20)));
				if (i == 1000 && write(p[1], "w", 1) != 1)
					_exit(1);
			}
		}
		/* Once the ring has wrapped, kill it at a different moment each round. */
		cr_assert_eq(read(p[0], &b, 1), 1);
		close(p[0]);
		close(p[1]);
		usleep(100 + 300 * (unsigned int)round);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		ro = rk_bufile__open(path, &msg);
		cr_assert_not_null(ro, "%s", msg);
		cr_assert_eq(rk_bufile__for_each(ro, collect_fn, &c), 0);
		cr_assert_gt(c.n, 0);
		cr_assert_eq(c.bad, 0);
		for (i = 1; i < c.n; i++)
			cr_assert_eq(c.seqs[i], c.seqs[i - 1] + 1);
		rk_bufile__free(ro);
		rk_bufile__free(bf);
	}
}

struct live {
	struct rk_bufile *bf;
	volatile int stop;
	__u64 written;
};

static void *writer(void *arg)
{
	struct live *l = arg;
	struct trec r;
	__u64 i;

	for (i = 0; !l->stop; i++) {
		rk_bufile__write(l->bf, &r, make_rec(&r, i, 16 + 8 * (i % 25)));
		__atomic_store_n(&l->written, i + 1, __ATOMIC_RELEASE);
		/*
		 * valgrind runs one thread at a time and hands over rarely: the
		 * reader once made 54 walks in 60 s. 256 records still lap the
		 * 4 KiB ring several times between two turns.
		 */
		if ((i & 255) == 255)
			sched_yield();
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * A reader racing the writer sees only whole, consecutive records. Progress
 * is counted in records written and walks made, never in loop iterations: a
 * writer thread started late (valgrind's scheduler is not fair) must not be
 * mistaken for a broken reader.
 */
Test(bufile, reader_concurrent_with_writer_sees_no_torn_records)
{
	/* Not on the stack: a failed assert leaves the test while the writer still runs. */
	static struct live l;
	struct rk_bufile *ro;
	double deadline = now_s() + 60;
	pthread_t th;
	int walks = 0; /* that delivered records */

	l.bf = make(4096);
	ro = rk_bufile__open(path, NULL);
	cr_assert_not_null(ro);
	pthread_create(&th, NULL, writer, &l);
	/* Each walk overlaps the writer; it laps the 4 KiB ring many times meanwhile. */
	while (walks < 500 || __atomic_load_n(&l.written, __ATOMIC_ACQUIRE) < 100000) {
		struct collect c = { 0 };
		size_t i;

		cr_assert_lt(now_s(), deadline, "no progress in 60 s: %d walks, %llu records",
			     walks, (unsigned long long)l.written);
		if (!__atomic_load_n(&l.written, __ATOMIC_ACQUIRE)) {
			sched_yield(); /* until the writer is in */
			continue;
		}
		cr_assert_eq(rk_bufile__for_each(ro, collect_fn, &c), 0);
		cr_assert_eq(c.bad, 0, "torn record delivered");
		/*
		 * A writer that laps us takes records away (a gap, or all of
		 * them if it passed the head we started from), never reorders.
		 */
		for (i = 1; i < c.n; i++)
			cr_assert_gt(c.seqs[i], c.seqs[i - 1], "out of order inside one walk");
		walks += c.n > 0;
		sched_yield();
	}
	l.stop = 1;
	pthread_join(th, NULL);
	{
		struct collect c = { 0 };
		size_t i;

		cr_assert_eq(rk_bufile__for_each(ro, collect_fn, &c), 0);
		cr_assert_gt(c.n, 0);
		for (i = 1; i < c.n; i++)
			cr_assert_eq(c.seqs[i], c.seqs[i - 1] + 1, "quiescent ring has a gap");
		cr_assert_eq(c.seqs[c.n - 1], l.written - 1, "the newest record is the last one");
	}
	rk_bufile__free(ro);
	rk_bufile__free(l.bf);
}

/*
 * The writer runs exactly between the reader's loads of head and tail: a
 * hardware watchpoint on the reader's view of head (its own mapping; the
 * writer's is another) traps right after that load, and the handler laps the
 * ring through the writer's mapping, once. The reader then finds a tail past
 * the head it loaded and must load the pair again, not call the file corrupt.
 */
static struct {
	struct rk_bufile *bf;
	int fd, hits;
	__u64 seq;
	int aux;
} lap;

static void lap_handler(int sig, siginfo_t *si, void *uc)
{
	__u64 h;
	struct trec r;

	(void)sig;
	(void)si;
	(void)uc;
	ioctl(lap.fd, PERF_EVENT_IOC_DISABLE, 0);
	lap.hits++;
	if (lap.aux) {
		__u8 chunk[512];

		h = lap.bf->pg->aux_head;
		while (lap.bf->pg->aux_tail <= h) {
			memset(chunk, (int)(lap.seq++ & 0xff), sizeof(chunk));
			rk_bufile__write_aux(lap.bf, chunk, sizeof(chunk));
		}
		return;
	}
	h = lap.bf->pg->data_head;
	while (lap.bf->pg->data_tail <= h)
		rk_bufile__write(lap.bf, &r, make_rec(&r, lap.seq++, 64));
}

static int open_watchpoint(const void *addr)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_RW; /* x86 has no read-only watchpoints */
	a.bp_addr = (__u64)(unsigned long)addr;
	a.bp_len = HW_BREAKPOINT_LEN_8;
	a.sample_period = 1;
	a.sigtrap = 1;
	a.remove_on_exec = 1; /* required with sigtrap */
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Before anything is allocated: a skip must not leak. */
static void need_watchpoint(void)
{
	static __u64 probe;
	int fd;

	if (RUNNING_ON_VALGRIND)
		cr_skip_test("skipped under valgrind: it delivers the trap late, after both loads");
	fd = open_watchpoint(&probe);
	if (fd < 0)
		cr_skip_test("no hardware watchpoint here (perf_event_open: %s)", strerror(errno));
	close(fd);
}

/* Arm a one-shot trap after the next load of @addr by this thread. */
static void arm_lap(const void *addr)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = lap_handler;
	sa.sa_flags = SA_SIGINFO;
	cr_assert_eq(sigaction(SIGTRAP, &sa, NULL), 0);
	lap.hits = 0;
	lap.fd = open_watchpoint(addr);
	cr_assert_geq(lap.fd, 0, "perf_event_open: %s", strerror(errno));
}

static void fill(struct rk_bufile *bf, __u64 n)
{
	struct trec r;

	for (lap.seq = 0; lap.seq < n; lap.seq++)
		rk_bufile__write(bf, &r, make_rec(&r, lap.seq, 64));
}

Test(bufile, walk_lapped_between_head_and_tail_loads_reloads_them)
{
	struct rk_bufile *ro;
	struct collect c = { 0 };
	size_t i;

	need_watchpoint();

	lap.bf = make(4096);
	fill(lap.bf, 10);
	ro = rk_bufile__open(path, NULL);
	cr_assert_not_null(ro);
	arm_lap(&ro->pg->data_head);
	cr_assert_eq(rk_bufile__for_each(ro, collect_fn, &c), 0, "a live ring called corrupt");
	close(lap.fd);
	cr_assert_eq(lap.hits, 1);
	cr_assert_gt(c.n, 0);
	cr_assert_eq(c.bad, 0);
	cr_assert_gt(c.seqs[0], 10, "records from before the lap");
	for (i = 1; i < c.n; i++)
		cr_assert_eq(c.seqs[i], c.seqs[i - 1] + 1);
	cr_assert_eq(c.seqs[c.n - 1], lap.seq - 1);
	rk_bufile__free(ro);
	rk_bufile__free(lap.bf);
}

Test(bufile, open_lapped_between_head_and_tail_loads_succeeds)
{
	struct rk_bufile ro;
	const char *msg = NULL;

	need_watchpoint();

	lap.bf = make(4096);
	fill(lap.bf, 10);
	arm_lap(&lap.bf->pg->data_head);
	/* rk_bufile__from_mem() on the writer's own view: the handler writes
	 * through the same addresses, so it disables the trap before writing. */
	cr_assert_eq(rk_bufile__from_mem(&ro, lap.bf->base, lap.bf->map_size, &msg), 0, "%s",
		     msg ? msg : "");
	close(lap.fd);
	cr_assert_eq(lap.hits, 1);
	rk_bufile__free(lap.bf);
}

Test(bufile, read_aux_lapped_between_head_and_tail_loads_reloads_them)
{
	struct rk_thread_ident id;
	struct rk_pmu_entry e;
	struct rk_bufile *ro;
	__u8 buf[8192], first[512];
	__u64 off;
	ssize_t n;

	need_watchpoint();

	memset(&id, 0, sizeof(id));
	id.tid = 42;
	id.tgid = 41;
	rk_pmu_sched_entry(&e);
	lap.bf = rk_bufile__create(path, 4096, 8192, &e, &id);
	cr_assert_not_null(lap.bf);
	for (lap.seq = 0; lap.seq < 4; lap.seq++) {
		memset(first, (int)lap.seq, sizeof(first));
		cr_assert_eq(rk_bufile__write_aux(lap.bf, first, sizeof(first)), 0);
	}
	ro = rk_bufile__open(path, NULL);
	cr_assert_not_null(ro);
	lap.aux = 1;
	arm_lap(&ro->pg->aux_head);
	n = rk_bufile__read_aux(ro, buf, sizeof(buf), &off);
	close(lap.fd);
	lap.aux = 0;
	cr_assert_eq(lap.hits, 1);
	cr_assert_eq(n, 8192, "a live AUX ring called corrupt (%zd)", n);
	cr_assert_eq(off, ro->pg->aux_head - 8192);
	/* The ring holds the newest 16 chunks, oldest first. */
	memset(first, (int)((lap.seq - 16) & 0xff), sizeof(first));
	cr_assert_eq(memcmp(buf, first, sizeof(first)), 0);
	memset(first, (int)((lap.seq - 1) & 0xff), sizeof(first));
	cr_assert_eq(memcmp(buf + 8192 - 512, first, sizeof(first)), 0);
	rk_bufile__free(ro);
	rk_bufile__free(lap.bf);
}
