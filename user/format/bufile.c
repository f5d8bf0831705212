// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bufile.c - per-thread buffer files: layout, ring writer, checked reader.
 *
 * Unlike a kernel perf ring, the writer here owns both ends: it moves
 * data_tail forward itself (overwrite mode, whole records at a time), so a
 * reader never has to write to the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>
#include <stdint.h>
#include "bufile.h"

_Static_assert(sizeof(struct perf_event_mmap_page) == 1088, "uapi perf_event_mmap_page");
_Static_assert(sizeof(struct rk_thread_ident) == 96, "ident size");
_Static_assert(RK_PMU_OFFSET == 1104, "pmu_offset");
_Static_assert(RK_PMU_OFFSET + sizeof(struct rk_pmu_entry) + sizeof(struct rk_thread_ident) <=
		       RK_PAGE_SIZE,
	       "pmu entry and identity must fit in page 0");

static int is_pow2(__u64 x)
{
	return x && !(x & (x - 1));
}

/*
 * The SIGBUS registry: every writable mapping, so the handler can tell
 * which file an address belongs to without taking a lock or touching a
 * struct rk_bufile (another thread may be freeing one). A slot is claimed
 * by a CAS on @base; the handler only reads.
 */
#define RK_GUARD_SLOTS (1u << 17)

struct guard_slot {
	uintptr_t base;
	size_t size;
	int broken;
};

static struct guard_slot *guard_slots;
/* A slot's base while its claimer fills it in (threads add files concurrently). */
#define GUARD_CLAIMED ((uintptr_t)1)
static unsigned int guard_hint;
static struct sigaction guard_prev;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static int guard_err;

static void guard_handler(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	unsigned int i;

	for (i = 0; guard_slots && i < RK_GUARD_SLOTS; i++) {
		struct guard_slot *g = &guard_slots[i];
		uintptr_t base = __atomic_load_n(&g->base, __ATOMIC_ACQUIRE);

		if (base <= GUARD_CLAIMED || a < base || a - base >= g->size)
			continue;
		/*
		 * The file lost the page (truncated, or tmpfs full): put
		 * anonymous memory where the whole file was, so this write and
		 * any racing one land somewhere harmless, and mark the file
		 * broken for its writer. mmap is a plain syscall here.
		 */
		if (mmap((void *)base, g->size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
			__atomic_store_n(&g->broken, 1, __ATOMIC_RELEASE);
			return;
		}
		break;
	}
	/* Not ours: whatever handled SIGBUS before (default: die with a core). */
	if (guard_prev.sa_flags & SA_SIGINFO && guard_prev.sa_sigaction) {
		guard_prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (guard_prev.sa_handler != SIG_DFL && guard_prev.sa_handler != SIG_IGN &&
	    !(guard_prev.sa_flags & SA_SIGINFO)) {
		guard_prev.sa_handler(sig);
		return;
	}
	/* Returning re-runs the faulting access, which now gets the default action. */
	signal(SIGBUS, SIG_DFL);
}

static void guard_setup(void)
{
	struct sigaction sa;
	void *p;

	p = mmap(NULL, RK_GUARD_SLOTS * sizeof(struct guard_slot), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		guard_err = -errno;
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = guard_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &guard_prev)) {
		guard_err = -errno;
		munmap(p, RK_GUARD_SLOTS * sizeof(struct guard_slot));
		return;
	}
	__atomic_store_n(&guard_slots, (struct guard_slot *)p, __ATOMIC_RELEASE);
}

int rk_bufile_guard_init(void)
{
	pthread_once(&guard_once, guard_setup);
	return guard_err;
}

/* Return: the slot, or -1 (no registry, or full: the file is then unguarded). */
static int guard_add(void *base, size_t size)
{
	unsigned int i, n;

	if (!__atomic_load_n(&guard_slots, __ATOMIC_ACQUIRE))
		return -1;
	for (n = 0; n < RK_GUARD_SLOTS; n++) {
		uintptr_t zero = 0;

		i = (__atomic_fetch_add(&guard_hint, 1, __ATOMIC_RELAXED)) % RK_GUARD_SLOTS;
		if (__atomic_load_n(&guard_slots[i].base, __ATOMIC_RELAXED))
			continue;
		/* Claimed first, filled in, then published: two adders never share a slot. */
		if (!__atomic_compare_exchange_n(&guard_slots[i].base, &zero, GUARD_CLAIMED, 0,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		guard_slots[i].size = size;
		guard_slots[i].broken = 0;
		/* Release: the handler that sees base sees size. */
		__atomic_store_n(&guard_slots[i].base, (uintptr_t)base, __ATOMIC_RELEASE);
		return (int)i;
	}
	return -1;
}

static void guard_del(int slot)
{
	if (slot >= 0)
		__atomic_store_n(&guard_slots[slot].base, 0, __ATOMIC_RELEASE);
}

int rk_bufile__broken(const struct rk_bufile *bf)
{
	return bf->slot >= 0 && __atomic_load_n(&guard_slots[bf->slot].broken, __ATOMIC_ACQUIRE);
}

size_t rk_bufile_layout_size(__u64 data_size, __u64 aux_size)
{
	if (!is_pow2(data_size) || data_size < RK_PAGE_SIZE || data_size > (1ull << 34))
		return 0;
	if (aux_size && (!is_pow2(aux_size) || aux_size < RK_PAGE_SIZE || aux_size > (1ull << 34)))
		return 0;
	return RK_PAGE_SIZE + data_size + aux_size;
}

/*
 * A consistent (head, tail) pair of a ring that a live writer may be moving.
 * The writer moves tail only over bytes head has passed, storing it (release)
 * before it overwrites them, so a head loaded before tail is never more than
 * @size past it; but a reader descheduled between its two loads can find a
 * tail past the head it loaded. Loading both again then gives a good pair;
 * a bad pair that does not move is a corrupt file (-EBADMSG, with the pair),
 * and so is one that stays bad while it moves (bounded: something other than
 * our writer is scribbling on it).
 */
static int ring_pair(const __u64 *headp, const __u64 *tailp, __u64 size, __u64 *head, __u64 *tail)
{
	__u64 h0 = 0, t0 = 0;
	int i;

	for (i = 0;; i++) {
		*head = __atomic_load_n(headp, __ATOMIC_ACQUIRE);
		*tail = __atomic_load_n(tailp, __ATOMIC_ACQUIRE);
		if (*tail <= *head && *head - *tail <= size)
			return 0;
		if ((i && *head == h0 && *tail == t0) || i == 1000)
			return -EBADMSG;
		h0 = *head;
		t0 = *tail;
	}
}

/* What the RFC puts at pmu_offset: the attr, then the descriptor. */
static __u64 pmu_entry_size(const struct rk_pmu_entry *pmu)
{
	return (__u64)pmu->attr.size + pmu->info.pmu_descsz;
}

struct rk_bufile *rk_bufile__create(const char *path, __u64 data_size, __u64 aux_size,
				    const struct rk_pmu_entry *pmu,
				    const struct rk_thread_ident *ident)
{
	size_t size = rk_bufile_layout_size(data_size, aux_size);
	struct rk_bufile *bf;
	__u64 pmu_size;
	int fd, err;

	if (!size || pmu->info.note_size != RK_PMU_INFO_NOTE_SIZE ||
	    pmu->attr.size > RK_PERF_ATTR_SIZE || pmu->info.pmu_descsz > RK_PMU_DESC_MAX) {
		errno = EINVAL;
		return NULL;
	}
	pmu_size = pmu_entry_size(pmu);

	bf = calloc(1, sizeof(*bf));
	if (!bf)
		return NULL;
	bf->slot = -1;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		err = -errno;
		goto err_free;
	}
	/*
	 * Sparse: the ring's pages are allocated when first written, so a
	 * quiet thread costs what it used. Page 0 is allocated now, where a
	 * full tmpfs is an error to report rather than a SIGBUS; a later
	 * ENOSPC while writing costs that file only (rk_bufile_guard_init()).
	 */
	if (ftruncate(fd, (off_t)size) || fallocate(fd, 0, 0, RK_PAGE_SIZE)) {
		err = -errno;
		goto err_close;
	}
	bf->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (bf->base == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	close(fd);
	bf->map_size = size;
	bf->slot = guard_add(bf->base, size);
	bf->pg = bf->base;
	bf->ext = (struct rk_page_ext *)((__u8 *)bf->base + RK_PAGE_EXT_OFFSET);
	bf->pmu_copy = *pmu;
	bf->pmu = &bf->pmu_copy;
	bf->ident =
		(struct rk_thread_ident *)((__u8 *)bf->base + RK_ALIGN8(RK_PMU_OFFSET + pmu_size));
	bf->data = (__u8 *)bf->base + RK_PAGE_SIZE;
	bf->data_size = data_size;
	bf->aux_size = aux_size;
	bf->aux_offset = aux_size ? RK_PAGE_SIZE + data_size : 0;

	/* As the kernel's perf_event_init_userpage() does. */
	bf->pg->cap_bit0_is_deprecated = 1;
	bf->pg->size = offsetof(struct perf_event_mmap_page, __reserved);
	bf->pg->data_offset = RK_PAGE_SIZE;
	bf->pg->data_size = data_size;
	if (aux_size) {
		bf->pg->aux_offset = bf->aux_offset;
		bf->pg->aux_size = aux_size;
	}
	/* As perf_event_init_pmu_info() does: attr, then the descriptor after it. */
	memcpy((__u8 *)bf->base + RK_PMU_OFFSET, &pmu->attr, pmu->attr.size);
	memcpy((__u8 *)bf->base + RK_PMU_OFFSET + pmu->attr.size, pmu->desc, pmu->info.pmu_descsz);
	bf->id = *ident;
	bf->id.magic = RK_IDENT_MAGIC;
	bf->id.version = RK_IDENT_VERSION;
	bf->id.size = sizeof(bf->id);
	/* The writer's own counters start from nothing, whatever the caller passed. */
	bf->id.pinned = 0;
	bf->id.overwritten = 0;
	bf->id.lost = 0;
	memcpy(bf->ident, &bf->id, sizeof(bf->id));
	/*
	 * pmu_offset last: a reader that sees it sees a complete page 0.
	 * Pairs with the acquire load in rk_bufile__from_mem().
	 */
	bf->ext->pmu_size = pmu_size;
	__atomic_store_n(&bf->ext->pmu_offset, RK_PMU_OFFSET, __ATOMIC_RELEASE);
	if (rk_bufile__broken(bf)) {
		/* Page 0 is allocated above: only a truncation by someone else gets here. */
		rk_bufile__free(bf);
		errno = EIO;
		return NULL;
	}
	return bf;

err_close:
	close(fd);
	unlink(path);
err_free:
	free(bf);
	errno = -err;
	return NULL;
}

void rk_bufile__publish_ident(struct rk_bufile *bf)
{
	if (rk_bufile__broken(bf))
		return;
	/* pinned is the pin pool's to store (rk_pin_item.pinned_flag). */
	bf->id.pinned = __atomic_load_n(&bf->ident->pinned, __ATOMIC_RELAXED);
	memcpy(bf->ident, &bf->id, sizeof(bf->id));
}

#define BAD(msg)                        \
	do {                            \
		if (err_msg)            \
			*err_msg = msg; \
		return -EBADMSG;        \
	} while (0)

int rk_bufile__from_mem(struct rk_bufile *bf, void *base, size_t size, const char **err_msg)
{
	const struct perf_event_mmap_page *pg = base;
	const struct rk_page_ext *ext;
	const struct rk_thread_ident *id;
	__u32 attr_size;
	__u64 off, psz, head, tail, data_end, d_off, d_size, a_off, a_size;

	memset(bf, 0, sizeof(*bf));
	if (size < RK_PAGE_SIZE)
		BAD("shorter than one page");
	ext = (const struct rk_page_ext *)((const __u8 *)base + RK_PAGE_EXT_OFFSET);
	off = __atomic_load_n(&ext->pmu_offset, __ATOMIC_ACQUIRE);
	psz = ext->pmu_size;
	/* The RFC's constraints, plus room for our fixed header. */
	if (off < RK_PAGE_EXT_OFFSET + sizeof(*ext) || off % 8 || off >= RK_PAGE_SIZE)
		BAD("pmu_offset out of page 0");
	if (psz < PERF_ATTR_SIZE_VER0 || psz > RK_PAGE_SIZE - off)
		BAD("pmu_size does not fit in page 0");
	/* Where the identity is does not depend on the layout version: look first. */
	if (RK_ALIGN8(off + psz) + sizeof(*id) > RK_PAGE_SIZE)
		BAD("thread identity record does not fit in page 0");
	id = (const struct rk_thread_ident *)((const __u8 *)base + RK_ALIGN8(off + psz));
	if (id->magic != RK_IDENT_MAGIC)
		BAD("no ringkeeper identity record");
	if (id->version == 1)
		BAD("written by an older ringkeeper (layout 1: a pmu_info header before the attr, "
		    "not the RFC's page 0); read it with that version");
	if (id->version != RK_IDENT_VERSION || id->size < sizeof(*id))
		BAD("identity record of an unknown version");
	/* The attr at pmu_offset, its size in its second word; the descriptor after it. */
	memcpy(&attr_size, (const __u8 *)base + off + 4, 4);
	if (attr_size < PERF_ATTR_SIZE_VER0 || attr_size > psz)
		BAD("attr.size at pmu_offset disagrees with pmu_size");
	if (attr_size > RK_PERF_ATTR_SIZE)
		BAD("perf_event_attr larger than this ringkeeper knows");
	if (psz - attr_size > RK_PMU_DESC_MAX)
		BAD("PMU descriptor larger than this ringkeeper knows");
	/*
	 * The geometry is read once: another writer of the file may change
	 * page 0 while we check it, and what we use is what we checked.
	 */
	d_off = __atomic_load_n(&pg->data_offset, __ATOMIC_RELAXED);
	d_size = __atomic_load_n(&pg->data_size, __ATOMIC_RELAXED);
	a_off = __atomic_load_n(&pg->aux_offset, __ATOMIC_RELAXED);
	a_size = __atomic_load_n(&pg->aux_size, __ATOMIC_RELAXED);
	if (d_off != RK_PAGE_SIZE || !is_pow2(d_size) || d_size < RK_PAGE_SIZE ||
	    d_size > size - RK_PAGE_SIZE)
		BAD("data area out of the file");
	data_end = d_off + d_size;
	if (a_size &&
	    (a_off < data_end || !is_pow2(a_size) || a_off > size || a_size > size - a_off))
		BAD("aux area out of the file");
	if (ring_pair(&pg->data_head, &pg->data_tail, d_size, &head, &tail))
		BAD(head < tail ? "data_head is behind data_tail" :
				  "data_head - data_tail exceeds data_size");
	if ((head | tail) % 8)
		BAD("data_head/data_tail not 8-byte aligned");

	bf->base = base;
	bf->map_size = size;
	bf->pg = base;
	bf->ext = (struct rk_page_ext *)ext;
	memset(&bf->pmu_copy, 0, sizeof(bf->pmu_copy));
	bf->pmu_copy.info.note_size = RK_PMU_INFO_NOTE_SIZE;
	bf->pmu_copy.info.pmu_descsz = (__u32)(psz - attr_size);
	memcpy(&bf->pmu_copy.attr, (const __u8 *)base + off, attr_size);
	/* The size we checked, whatever a writer put there meanwhile. */
	bf->pmu_copy.attr.size = attr_size;
	memcpy(bf->pmu_copy.desc, (const __u8 *)base + off + attr_size, psz - attr_size);
	bf->pmu = &bf->pmu_copy;
	bf->ident = (struct rk_thread_ident *)id;
	bf->data = (__u8 *)base + RK_PAGE_SIZE;
	bf->data_size = d_size;
	bf->aux_offset = a_size ? a_off : 0;
	bf->aux_size = a_size;
	bf->head = head;
	bf->tail = tail;
	bf->slot = -1;
	return 0;
}

/* Map the file open at @fd (left open) as open_mode() describes. */
static struct rk_bufile *map_fd(int fd, const char **err_msg, int rw)
{
	struct rk_bufile *bf = NULL;
	struct stat st;
	void *base;
	int err;

	if (fstat(fd, &st))
		return NULL;
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)RK_PAGE_SIZE) {
		if (err_msg)
			*err_msg = S_ISREG(st.st_mode) ? "shorter than one page" :
							 "not a regular file";
		errno = EBADMSG;
		return NULL;
	}
	if (rw && (st.st_uid != 0 || st.st_mode & (S_IWGRP | S_IWOTH))) {
		/* Our writer's state comes from this page 0: only root may have written it. */
		if (err_msg)
			*err_msg = "writable by a user other than root";
		errno = EPERM;
		return NULL;
	}
	base = mmap(NULL, (size_t)st.st_size, rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED,
		    fd, 0);
	if (base == MAP_FAILED)
		return NULL;
	bf = malloc(sizeof(*bf));
	if (!bf) {
		err = -ENOMEM;
		goto err_unmap;
	}
	err = rk_bufile__from_mem(bf, base, (size_t)st.st_size, err_msg);
	if (err)
		goto err_unmap;
	/* A reader, too, must survive the file being truncated under it. */
	bf->slot = guard_add(base, (size_t)st.st_size);
	if (rw) {
		bf->aux_head = bf->pg->aux_head;
		bf->aux_tail = bf->pg->aux_tail;
		memcpy(&bf->id, bf->ident, sizeof(bf->id));
		if (bf->aux_size &&
		    (bf->aux_tail > bf->aux_head || bf->aux_head - bf->aux_tail > bf->aux_size)) {
			if (err_msg)
				*err_msg = "aux_head/aux_tail corrupt";
			err = -EBADMSG;
			guard_del(bf->slot);
			goto err_unmap;
		}
	}
	return bf;

err_unmap:
	munmap(base, (size_t)st.st_size);
	free(bf);
	errno = -err;
	return NULL;
}

static struct rk_bufile *open_mode(const char *path, const char **err_msg, int rw)
{
	struct rk_bufile *bf;
	int fd, err;

	/* O_NONBLOCK: a FIFO put in place of a buffer must not hang us in open(). */
	fd = open(path, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	bf = map_fd(fd, err_msg, rw);
	err = errno;
	close(fd);
	errno = err;
	return bf;
}

struct rk_bufile *rk_bufile__open(const char *path, const char **err_msg)
{
	return open_mode(path, err_msg, 0);
}

struct rk_bufile *rk_bufile__open_rw(const char *path, const char **err_msg)
{
	return open_mode(path, err_msg, 1);
}

struct rk_bufile *rk_bufile__open_fd(int fd, const char **err_msg)
{
	return map_fd(fd, err_msg, 0);
}

void rk_bufile__free(struct rk_bufile *bf)
{
	if (!bf)
		return;
	guard_del(bf->slot);
	munmap(bf->base, bf->map_size);
	free(bf);
}

static void ring_copy_out(const __u8 *ring, __u64 mask, __u64 pos, void *dst, size_t len)
{
	size_t off = pos & mask, first = mask + 1 - off;

	if (first >= len) {
		memcpy(dst, ring + off, len);
	} else {
		memcpy(dst, ring + off, first);
		memcpy((__u8 *)dst + first, ring, len - first);
	}
}

static void ring_copy_in(__u8 *ring, __u64 mask, __u64 pos, const void *src, size_t len)
{
	size_t off = pos & mask, first = mask + 1 - off;

	if (first >= len) {
		memcpy(ring + off, src, len);
	} else {
		memcpy(ring + off, src, first);
		memcpy(ring, (const __u8 *)src + first, len - first);
	}
}

int rk_bufile__write(struct rk_bufile *bf, const void *rec, size_t size)
{
	struct perf_event_mmap_page *pg = bf->pg;
	const struct perf_event_header *h = rec;
	__u64 mask = bf->data_size - 1, head = bf->head, tail = bf->tail;

	if (size < sizeof(*h) || size % 8 || h->size != size)
		return -EINVAL;
	if (rk_bufile__broken(bf))
		return -EIO;
	if (size > bf->data_size) {
		bf->id.lost++;
		bf->ident->lost = bf->id.lost;
		return -E2BIG;
	}
	while (head + size - tail > bf->data_size) {
		struct perf_event_header oh;

		/*
		 * The sizes we step over are our own records', bounded by our
		 * own head: nothing in the file can move tail past head.
		 */
		ring_copy_out(bf->data, mask, tail, &oh, sizeof(oh));
		if (!oh.size || oh.size % 8 || oh.size > head - tail) {
			/* Only if someone else wrote into the ring: start over. */
			tail = head;
			break;
		}
		tail += oh.size;
		bf->id.overwritten++;
	}
	if (tail != bf->tail) {
		bf->tail = tail;
		bf->ident->overwritten = bf->id.overwritten;
		/* Release: a reader that sees this tail sees a head past it (ring_pair()). */
		__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
		/*
		 * The new tail must be visible before we overwrite the bytes it
		 * gave up; pairs with the acquire fence before the tail
		 * re-read in rk_bufile__for_each().
		 */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	ring_copy_in(bf->data, mask, head, rec, size);
	bf->head = head + size;
	/* Publish the record; pairs with the acquire load of data_head in readers. */
	__atomic_store_n(&pg->data_head, bf->head, __ATOMIC_RELEASE);
	/*
	 * Where the next write goes (and, once the ring is full, the oldest
	 * header it reads): fetched now, while other files are written, and
	 * not missed then. A prefetch never faults.
	 */
	__builtin_prefetch(bf->data + (bf->head & mask), 1);
	__builtin_prefetch(bf->data + (bf->tail & mask), 1);
	return rk_bufile__broken(bf) ? -EIO : 0;
}

int rk_bufile__ring(const struct rk_bufile *bf, __u64 *head, __u64 *tail)
{
	return ring_pair(&bf->pg->data_head, &bf->pg->data_tail, bf->data_size, head, tail);
}

struct pos_adapter {
	rk_record_fn fn;
	void *ctx;
};

static int drop_pos(const struct perf_event_header *rec, __u64 pos, void *ctx)
{
	struct pos_adapter *a = ctx;

	(void)pos;
	return a->fn(rec, a->ctx);
}

int rk_bufile__for_each(const struct rk_bufile *bf, rk_record_fn fn, void *ctx)
{
	struct pos_adapter a = { fn, ctx };

	return rk_bufile__for_each_at(bf, drop_pos, &a);
}

int rk_bufile__for_each_at(const struct rk_bufile *bf, rk_record_pos_fn fn, void *ctx)
{
	return rk_bufile__for_each_since(bf, 0, fn, ctx, NULL, NULL);
}

int rk_bufile__for_each_since(const struct rk_bufile *bf, __u64 from, rk_record_pos_fn fn,
			      void *ctx, __u64 *end, int *gap)
{
	const struct perf_event_mmap_page *pg = bf->pg;
	__u64 mask = bf->data_size - 1, head, tail, pos, cur_tail;
	union {
		struct perf_event_header h;
		__u8 bytes[65536];
	} * buf;
	int ret = 0;

	if (gap)
		*gap = 0;
	buf = malloc(sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	/* Pairs with the release stores in rk_bufile__write(). */
	ret = rk_bufile__ring(bf, &head, &tail);
	if (ret)
		goto out;
	if (end)
		*end = head;
	pos = tail;
	if (from > head || (from && from < tail)) {
		/* Overwritten since (or not this ring's): the records between are lost to us. */
		if (gap)
			*gap = 1;
	} else if (from) {
		pos = from;
	}
	while (pos < head) {
		size_t sz;

		ring_copy_out(bf->data, mask, pos, &buf->h, sizeof(buf->h));
		sz = buf->h.size;
		if (sz < sizeof(buf->h) || sz % 8 || sz > head - pos) {
			/* Torn by a live writer, or corrupt. */
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			cur_tail = __atomic_load_n(&pg->data_tail, __ATOMIC_RELAXED);
			if (cur_tail > pos) {
				pos = cur_tail;
				if (gap)
					*gap = 1;
				continue;
			}
			ret = -EBADMSG;
			goto out;
		}
		ring_copy_out(bf->data, mask, pos, buf->bytes, sz);
		/*
		 * Pairs with the full fence after the tail store in
		 * rk_bufile__write(): if the writer overwrote what we copied,
		 * we now see a tail past it.
		 */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		cur_tail = __atomic_load_n(&pg->data_tail, __ATOMIC_RELAXED);
		if (cur_tail > pos) {
			pos = cur_tail;
			if (gap)
				*gap = 1;
			continue;
		}
		ret = fn(&buf->h, pos, ctx);
		if (ret)
			goto out;
		pos += sz;
	}
out:
	free(buf);
	return ret;
}

int rk_bufile__write_aux(struct rk_bufile *bf, const void *data, size_t len)
{
	struct perf_event_mmap_page *pg = bf->pg;
	__u8 *aux = (__u8 *)bf->base + bf->aux_offset;
	__u64 size = bf->aux_size, mask = size - 1, head = bf->aux_head;
	const __u8 *src = data;

	if (!size)
		return -EINVAL;
	if (rk_bufile__broken(bf))
		return -EIO;
	if (len > size) {
		/* Only the newest bytes can be kept: the rest is overwritten at once. */
		head += len - size;
		src += len - size;
		len = size;
	}
	if (head + len - bf->aux_tail > size) {
		/*
		 * Oldest bytes go first; the new tail is visible before they are
		 * overwritten (pairs with the tail re-read in rk_bufile__read_aux()).
		 */
		bf->aux_tail = head + len - size;
		__atomic_store_n(&pg->aux_tail, bf->aux_tail, __ATOMIC_RELEASE);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	ring_copy_in(aux, mask, head, src, len);
	bf->aux_head = head + len;
	/* Pairs with the acquire load of aux_head in rk_bufile__read_aux(). */
	__atomic_store_n(&pg->aux_head, bf->aux_head, __ATOMIC_RELEASE);
	return rk_bufile__broken(bf) ? -EIO : 0;
}

int rk_bufile__write_aux_rec(struct rk_bufile *bf, const struct perf_event_header *h,
			     const void *p0, size_t n0, const void *p1, size_t n1)
{
	union {
		struct perf_event_header h;
		__u8 b[256];
	} rec;
	__u64 start = bf->aux_head, size = n0 + n1;
	int err;

	if (!bf->aux_size || h->type != PERF_RECORD_AUX || h->size < sizeof(*h) + 24 ||
	    h->size > sizeof(rec))
		return -EINVAL;
	err = rk_bufile__write_aux(bf, p0, n0);
	if (!err && n1)
		err = rk_bufile__write_aux(bf, p1, n1);
	if (err)
		return err;
	/* The record, in this file's AUX coordinates: where the chunk starts here. */
	memcpy(rec.b, h, h->size);
	memcpy(rec.b + sizeof(*h), &start, 8);
	memcpy(rec.b + sizeof(*h) + 8, &size, 8);
	return rk_bufile__write(bf, rec.b, h->size);
}

ssize_t rk_bufile__read_aux(const struct rk_bufile *bf, void *buf, size_t len, __u64 *offset)
{
	const struct perf_event_mmap_page *pg = bf->pg;
	const __u8 *aux = (const __u8 *)bf->base + bf->aux_offset;
	__u64 size = bf->aux_size, head, tail, n, cur;

	if (!size)
		return -ENODATA;
	if (ring_pair(&pg->aux_head, &pg->aux_tail, size, &head, &tail))
		return -EBADMSG;
	n = head - tail;
	if (n > len) {
		tail = head - len;
		n = len;
	}
	ring_copy_out(aux, size - 1, tail, buf, n);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	cur = __atomic_load_n(&pg->aux_tail, __ATOMIC_RELAXED);
	if (cur > tail) {
		/* A live writer overwrote the oldest part meanwhile: drop it. */
		__u64 gone = cur - tail < n ? cur - tail : n;

		memmove(buf, (__u8 *)buf + gone, n - gone);
		n -= gone;
	}
	if (offset)
		*offset = head - n;
	return (ssize_t)n;
}

int rk_sample_parse(__u64 st, const struct perf_event_header *h, struct rk_sample *s)
{
	const __u8 *p = (const __u8 *)h + sizeof(*h), *end = (const __u8 *)h + h->size;
	__u64 v;

#define TAKE(dst, n)                     \
	do {                             \
		if (p + (n) > end)       \
			return -EBADMSG; \
		memcpy((dst), p, (n));   \
		p += (n);                \
	} while (0)
	memset(s, 0, sizeof(*s));
	if (st & ~(__u64)(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			  PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
			  PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW))
		return -EOPNOTSUPP;
	if (h->size < sizeof(*h))
		return -EBADMSG;
	if (st & PERF_SAMPLE_IDENTIFIER)
		TAKE(&v, 8);
	if (st & PERF_SAMPLE_IP)
		TAKE(&s->ip, 8);
	if (st & PERF_SAMPLE_TID) {
		TAKE(&s->pid, 4);
		TAKE(&s->tid, 4);
	}
	if (st & PERF_SAMPLE_TIME)
		TAKE(&s->time, 8);
	if (st & PERF_SAMPLE_CPU) {
		TAKE(&s->cpu, 4);
		TAKE(&v, 4);
	}
	if (st & PERF_SAMPLE_PERIOD)
		TAKE(&s->period, 8);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		TAKE(&s->nr, 8);
		if (s->nr > (__u64)(end - p) / 8)
			return -EBADMSG;
		s->chain = p;
		p += s->nr * 8;
	}
	if (st & PERF_SAMPLE_RAW) {
		TAKE(&s->raw_len, 4);
		if (s->raw_len > (size_t)(end - p))
			return -EBADMSG;
		s->raw = p;
	}
#undef TAKE
	return 0;
}

int rk_stack_parse(const struct perf_event_header *h, size_t id_size, struct rk_stack_rec *s)
{
	const __u8 *p = (const __u8 *)h + sizeof(struct rk_stack_record);
	struct rk_stack_record r;
	__u64 *into = NULL, v, i;
	__u32 *n = NULL;

	s->nr_kernel = s->nr_user = 0;
	s->nr = 0;
	s->chain = NULL;
	if (h->type != RK_RECORD_STACK || h->size < sizeof(r) + id_size)
		return -EBADMSG;
	memcpy(&r, h, sizeof(r));
	if (r.nr > (h->size - sizeof(r) - id_size) / 8)
		return -EBADMSG;
	s->of = r.of;
	s->flags = r.flags;
	s->nr = r.nr;
	s->chain = p;
	for (i = 0; i < r.nr; i++) {
		memcpy(&v, p + i * 8, 8);
		if (v == (__u64)PERF_CONTEXT_KERNEL) {
			into = s->kip;
			n = &s->nr_kernel;
		} else if (v == (__u64)PERF_CONTEXT_USER) {
			into = s->uip;
			n = &s->nr_user;
		} else if (v >= (__u64)PERF_CONTEXT_MAX || !n || *n >= RK_STACK_READ_MAX) {
			return -EBADMSG;
		} else {
			into[(*n)++] = v;
		}
	}
	return 0;
}

size_t rk_sample_id_size(__u64 st)
{
	size_t n = 0;

	n += st & PERF_SAMPLE_TID ? 8 : 0;
	n += st & PERF_SAMPLE_TIME ? 8 : 0;
	n += st & PERF_SAMPLE_ID ? 8 : 0;
	n += st & PERF_SAMPLE_STREAM_ID ? 8 : 0;
	n += st & PERF_SAMPLE_CPU ? 8 : 0;
	n += st & PERF_SAMPLE_IDENTIFIER ? 8 : 0;
	return n;
}

__u64 rk_record_time(__u64 st, const struct perf_event_header *h)
{
	const __u8 *p = (const __u8 *)h;
	size_t off;
	__u64 t = 0;

	if (!(st & PERF_SAMPLE_TIME))
		return 0;
	if (h->type == PERF_RECORD_SAMPLE) {
		off = sizeof(*h);
		off += st & PERF_SAMPLE_IDENTIFIER ? 8 : 0;
		off += st & PERF_SAMPLE_IP ? 8 : 0;
		off += st & PERF_SAMPLE_TID ? 8 : 0;
	} else {
		/* A record too short for its sample_id has no time (hostile or torn). */
		if (h->size < sizeof(*h) + rk_sample_id_size(st))
			return 0;
		off = h->size - rk_sample_id_size(st);
		off += st & PERF_SAMPLE_TID ? 8 : 0;
	}
	if (off + 8 <= h->size)
		memcpy(&t, p + off, 8);
	return t;
}

int rk_record_cpu(__u64 st, const struct perf_event_header *h, __u32 *cpu, __u32 *res)
{
	const __u8 *p = (const __u8 *)h;
	size_t off;

	if (!(st & PERF_SAMPLE_CPU) || h->type == PERF_RECORD_SAMPLE ||
	    h->size < sizeof(*h) + rk_sample_id_size(st))
		return -ENOENT;
	off = h->size - rk_sample_id_size(st);
	off += st & PERF_SAMPLE_TID ? 8 : 0;
	off += st & PERF_SAMPLE_TIME ? 8 : 0;
	off += st & PERF_SAMPLE_ID ? 8 : 0;
	off += st & PERF_SAMPLE_STREAM_ID ? 8 : 0;
	memcpy(cpu, p + off, 4);
	memcpy(res, p + off + 4, 4);
	return 0;
}

const char *rk_mmap2_name(const struct perf_event_header *h)
{
	const char *name = (const char *)h + RK_MMAP2_NAME_OFFSET;

	if (h->type != PERF_RECORD_MMAP2 || h->size <= RK_MMAP2_NAME_OFFSET ||
	    !memchr(name, '\0', h->size - RK_MMAP2_NAME_OFFSET))
		return NULL;
	return name;
}
