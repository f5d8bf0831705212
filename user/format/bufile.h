/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bufile.h - the per-thread buffer file: layout, ring writer and checked
 * reader.
 *
 * Page 0 holds struct perf_event_mmap_page as in the kernel uapi, then the
 * RFC's pmu_offset/pmu_size, then at pmu_offset exactly what the RFC's
 * perf_event_init_pmu_info() writes: the perf_event_attr (attr.size bytes)
 * and right after it the PMU descriptor (pmu_size = attr.size + its size;
 * the kernel's {note_size, pmu_descsz} container is not copied), then at
 * RK_ALIGN8(pmu_offset + pmu_size) a struct rk_thread_ident. The data
 * area is a forward ring of perf records ([data_tail, data_head) always
 * parses: the writer drops whole records to make room).
 */
#ifndef RK_BUFILE_H
#define RK_BUFILE_H

#include <linux/types.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ringkeeper.h"

#define RK_PAGE_SIZE 4096u
#define RK_ALIGN8(x) (((x) + 7) & ~(__u64)7)

/* "RINGKEEP", little endian. */
#define RK_IDENT_MAGIC 0x504545474b474e52ULL
/*
 * 2: page 0 as the RFC writes it. 1: a pmu_info header before the attr
 * (readers refuse it by name: its attr is 8 bytes further).
 */
#define RK_IDENT_VERSION 2

#define RK_THREAD_LIVE 0
#define RK_THREAD_EXITING 1 /* exit seen, final switch-out not yet */
#define RK_THREAD_EXITED 2
#define RK_THREAD_STOPPED 3 /* the recording stopped while it ran */
/* exec'd a program its user may not read: continued in a new, root-only file */
#define RK_THREAD_EXECED 4
/* its process got a core-dumping signal: drained, then frozen (nothing written after) */
#define RK_THREAD_CRASHED 5
/* its credentials or dumpability changed who may read it: continued in a new file */
#define RK_THREAD_CREDS 6
/* traced for --cgroup, it moved out of every traced subtree: no longer traced */
#define RK_THREAD_LEFT 7

/*
 * rk_thread_ident.flags: traced for --cgroup only (leaving the subtrees
 * ends it). Was the upper half of a __u64 pinned (0/1): 0 in older files.
 */
#define RK_IDENT_VIA_CGROUP 1u
/*
 * Its end was not seen: the signals of its exit (or of its leaving the
 * --cgroup subtrees) were dropped, and the running recorder found it out
 * of the traced set and ended its file then (exit_ns 0: not known).
 */
#define RK_IDENT_END_UNSEEN 2u

/*
 * A record type of ringkeeper's own in a sched ring (perf's kernel types are
 * < 64, its user-space ones < 128): a crash. When a traced process gets a
 * core-dumping signal, each of its threads' histories ends with one, after
 * everything the perf rings held of the thread until then.
 */
#define RK_RECORD_CRASH 0x524b

/*
 * A sched ring's PERF_RECORD_SWITCH out says why the thread left the CPU in
 * its sample_id's res (reserved in perf's layout, where the kernel writes 0
 * and perf ignores it): RK_SWITCH_STATE | the task's state then (the low 16
 * bits of task_struct::__state, TASK_* as in the kernel; 0: preempted, or
 * still runnable), | RK_SWITCH_PREEMPTED if the kernel preempted it
 * (sched_switch's preempt, which it reports as R+; state 0 without it: still
 * runnable, reported R: a wakeup came before it slept, or it yielded; files
 * before 2026-12-05 never set it). res 0 (files before December 2026): not
 * known.
 */
#define RK_SWITCH_STATE 0x80000000u
#define RK_SWITCH_PREEMPTED 0x40000000u
#define RK_SWITCH_STATE_MASK 0xffffu

/**
 * struct rk_crash_record - RK_RECORD_CRASH.
 * @pid, @tid: the thread whose history this is.
 * @crash_tid: the thread the signal was delivered to (the crashing one).
 * @signo: the signal.
 * @time: CLOCK_MONOTONIC of the delivery.
 * The sched ring's sample_id follows (its time is @time).
 */
struct rk_crash_record {
	struct perf_event_header h;
	__u32 pid, tid;
	__u32 crash_tid;
	__s32 signo;
	__u64 time;
};

/*
 * A wakeup of the thread by another task (sched_waking, or
 * sched_wakeup_new for a new thread's first), in its sched ring in time
 * order with its switches: struct rk_wakeup_record, then the sample_id
 * (pid/tid the woken thread; time and cpu those of the wakeup, on the
 * waker's CPU). Recorded with `record --wakeups`.
 */
#define RK_RECORD_WAKEUP 0x524c
#define RK_WAKEUP_NEW 1u /* rk_wakeup_record.flags: the first wakeup of a new thread */
/*
 * rk_wakeup_record.flags: the waker was another user's task, in a file its
 * thread's user may read, at perf_event_paranoid > -1 (where that user
 * could not record sched tracepoints): waker_pid and waker_tid are 0.
 */
#define RK_WAKEUP_HIDDEN 2u
/*
 * rk_wakeup_record.flags: where the wakeup ran. RK_WAKEUP_CTX: recorded
 * (files before 2026-12-06, and kernels whose preempt_count BPF cannot
 * find, leave it and the rest clear); then in a hard irq, a softirq being
 * served, or an NMI (none of them: a task). The bits are the kernel's
 * TRACE_FLAG_HARDIRQ, _SOFTIRQ and _NMI (its events' common_flags), so
 * flags & RK_WAKEUP_IRQ_MASK is what a sched_waking event would carry.
 * waker_pid and waker_tid are then the task the interrupt interrupted.
 */
#define RK_WAKEUP_CTX 0x4u
#define RK_WAKEUP_HARDIRQ 0x8u
#define RK_WAKEUP_SOFTIRQ 0x10u
#define RK_WAKEUP_NMI 0x40u
#define RK_WAKEUP_IRQ_MASK (RK_WAKEUP_HARDIRQ | RK_WAKEUP_SOFTIRQ | RK_WAKEUP_NMI)

/*
 * A record type of ours: a trigger fired here (record --trigger), in the
 * history of each thread it concerns; its snapshot is cut after it.
 */
#define RK_RECORD_TRIGGER 0x524e
#define RK_TRIG_OPERATOR 1 /* SIGUSR2 or `snapshot --trigger` */
#define RK_TRIG_DELAY 2 /* value: the wait for a CPU, ns */
#define RK_TRIG_BLOCKED 3 /* value: off CPU so far, ns; state: its TASK_* state */
#define RK_TRIG_KILLED 4 /* value: the signal; by_pid/by_tid: its sender (0: see state) */
#define RK_TRIG_EXIT 5 /* value: the exit status */
/*
 * RK_TRIG_KILLED's state, where by_pid is 0: the kernel sent it (SI_KERNEL,
 * the OOM killer's way: no task did), or another user's task did and this
 * file's user may not learn which (as a wakeup's RK_WAKEUP_HIDDEN waker).
 */
#define RK_TRIG_BY_KERNEL 1u
#define RK_TRIG_BY_HIDDEN 2u

/**
 * struct rk_trigger_record - RK_RECORD_TRIGGER (then sample_id).
 * @kind: RK_TRIG_*. @state: RK_TRIG_BLOCKED's TASK_* state, RK_TRIG_KILLED's
 *	RK_TRIG_BY_* flags, else 0.
 * @value: as the kind says. @by_pid, @by_tid: who caused it, where known.
 */
struct rk_trigger_record {
	struct perf_event_header h;
	__u32 kind;
	__u32 state;
	__u64 value;
	__u32 by_pid, by_tid;
};

/**
 * struct rk_wakeup_record - RK_RECORD_WAKEUP.
 * @waker_pid, @waker_tid: the task that woke it (in an interrupt, flagged
 *	RK_WAKEUP_HARDIRQ and so on: the one interrupted, as perf reports it).
 * @target_cpu: the CPU the woken thread last ran on (sched_waking's
 *	target_cpu; the scheduler may still pick another).
 * @flags: RK_WAKEUP_*.
 */
struct rk_wakeup_record {
	struct perf_event_header h;
	__u32 waker_pid, waker_tid;
	__u32 target_cpu;
	__u32 flags;
};

/*
 * record --offcpu: stacks, in a sched ring right after the record they
 * belong to (the same sample_id): the thread's own at a switch-out into a
 * sleep (where it blocked; never at a preemption or its final switch-out),
 * and with --wakeups the waker's at a wakeup (who let it go). struct
 * rk_stack_record, then @nr u64s laid out as perf's PERF_SAMPLE_CALLCHAIN
 * (PERF_CONTEXT_KERNEL and the kernel frames, leaf first, then
 * PERF_CONTEXT_USER and the user frames, leaf first; a marker only before
 * frames of its kind), then the sample_id.
 */
#define RK_RECORD_STACK 0x524d
#define RK_STACK_OF_SWITCH 1u /* rk_stack_record.of: the thread's, at the switch-out before it */
#define RK_STACK_OF_WAKEUP 2u /* the waker's, at the wakeup record before it */
/*
 * rk_stack_record.flags: kernel frames withheld: the file is its thread's
 * user's and perf_event_paranoid > 1 (perf would give that user no kernel
 * call chain); root-only files keep them (docs/trust.md).
 */
#define RK_STACKF_KERNEL_HIDDEN 1u
/* ... the waker's user frames withheld: another user's task, where its wakeup hides it. */
#define RK_STACKF_USER_HIDDEN 2u
/* Frames a reader takes at most per kind (what the recorder writes, RK_STACK_*_MAX, and more). */
#define RK_STACK_READ_MAX 256

/**
 * struct rk_stack_record - RK_RECORD_STACK.
 * @of: RK_STACK_OF_*. @flags: RK_STACKF_*.
 * @nr: the call chain's u64s that follow (markers included).
 */
struct rk_stack_record {
	struct perf_event_header h;
	__u32 of;
	__u32 flags;
	__u64 nr;
};

/**
 * struct rk_stack_rec - an RK_RECORD_STACK parsed (rk_stack_parse()).
 * @kip, @uip: kernel and user frames, leaf first; @chain: the call chain
 * as recorded (@nr u64s, markers included), pointing into the record.
 */
struct rk_stack_rec {
	__u32 of, flags;
	__u32 nr_kernel, nr_user;
	__u64 kip[RK_STACK_READ_MAX], uip[RK_STACK_READ_MAX];
	__u64 nr;
	const __u8 *chain;
};

/**
 * rk_stack_parse() - @h (an RK_RECORD_STACK whose sample_id is @id_size
 * bytes) into @s. Return: 0; -EBADMSG if it is not one, is too short for
 * what it says, has a frame before any marker, an unknown marker, or more
 * than RK_STACK_READ_MAX frames of a kind.
 */
int rk_stack_parse(const struct perf_event_header *h, size_t id_size, struct rk_stack_rec *s);

/**
 * struct rk_page_ext - the RFC's extension of perf_event_mmap_page,
 * directly after it (offset 1088).
 * @pmu_offset: >= end of this struct; @pmu_offset + @pmu_size <= page size.
 * @pmu_size: bytes at pmu_offset: attr.size + the descriptor's size.
 */
struct rk_page_ext {
	__u64 pmu_offset;
	__u64 pmu_size;
};

/**
 * struct rk_thread_ident - who the buffer belongs to.
 * @magic: RK_IDENT_MAGIC; @version, @size: versioning.
 * @tid, @tgid: global ids; @ns_tid: the tid in the task's own pid namespace.
 * @uid: real uid of the thread (owner of the file).
 * @state: RK_THREAD_*; @exit_code: as wait(2) encodes it.
 * @start_ns, @exit_ns: CLOCK_MONOTONIC.
 * @pinned: 1 while the loader holds the buffer mlocked (live view only).
 * @flags: RK_IDENT_* (the recorder's own facts about the thread, for a
 *	   resume; files are root's, readers may only read them).
 * @overwritten: records dropped from the tail to make room.
 * @lost: records that could not be stored at all (larger than the ring).
 */
struct rk_thread_ident {
	__u64 magic;
	__u32 version;
	__u32 size;
	__u32 tid;
	__u32 tgid;
	__u32 ns_tid;
	__u32 uid;
	char comm[RK_COMM_LEN];
	__u64 start_ns;
	__u64 exit_ns;
	__s32 exit_code;
	__u32 state;
	__u32 pinned;
	__u32 flags;
	__u64 overwritten;
	__u64 lost;
};

#define RK_PAGE_EXT_OFFSET sizeof(struct perf_event_mmap_page)
#define RK_PMU_OFFSET RK_ALIGN8(RK_PAGE_EXT_OFFSET + sizeof(struct rk_page_ext))

/**
 * struct rk_bufile - an open, mapped buffer file.
 * @base: the mapping; @map_size: its length (the whole file).
 * @pg: page 0; @ext, @ident: inside page 0, validated.
 * @pmu: the attr and descriptor as validated (a copy in our memory, with
 *	the pmu_info sizes the file leaves implicit: pmu_descsz = pmu_size -
 *	attr.size), so nothing read later from page 0 can change them.
 * @data: the data ring.
 * @data_size, @aux_offset, @aux_size: the geometry as validated when the
 *	file was opened or created. Readers and the writer use these, never
 *	page 0 again: whoever can write the file cannot steer them.
 *
 * The writer's state (a file made by rk_bufile__create() or adopted by
 * rk_bufile__open_rw()) lives here too, in the recorder's own memory: page 0
 * is what it publishes, never what it reads back to decide where to write.
 * @head, @tail, @aux_head, @aux_tail: the rings' positions.
 * @id: the identity record; rk_bufile__publish_ident() copies it to page 0.
 * @slot: this mapping's entry in the SIGBUS registry (-1: none).
 */
struct rk_bufile {
	void *base;
	size_t map_size;
	struct perf_event_mmap_page *pg;
	struct rk_page_ext *ext;
	const struct rk_pmu_entry *pmu;
	struct rk_thread_ident *ident;
	__u8 *data;
	__u64 data_size, aux_offset, aux_size;
	struct rk_pmu_entry pmu_copy;
	/* writer only */
	__u64 head, tail, aux_head, aux_tail;
	struct rk_thread_ident id;
	int slot;
};

/**
 * rk_bufile_guard_init() - install the SIGBUS handler that keeps a lost
 * file from killing the process. Idempotent; call before writing files.
 *
 * A write to a writable buffer file whose pages are gone (the file was
 * truncated, or tmpfs is full: shmem faults in pages lazily) raises SIGBUS.
 * The handler replaces that one file's mapping with anonymous memory and
 * marks it broken (rk_bufile__broken()); the write completes harmlessly and
 * the caller counts the file as lost. A SIGBUS on any other address gets
 * the default action (or the handler installed before ours).
 *
 * Return: 0, or -errno from sigaction().
 */
int rk_bufile_guard_init(void);

/**
 * rk_bufile__broken() - whether this file's mapping was lost (see
 * rk_bufile_guard_init()). Its data is gone; write nothing more to it.
 */
int rk_bufile__broken(const struct rk_bufile *bf);

/**
 * rk_bufile__publish_ident() - copy the writer's identity record (@bf->id)
 * to page 0. A broken file is left alone.
 */
void rk_bufile__publish_ident(struct rk_bufile *bf);

/**
 * rk_bufile_layout_size() - validate a data size and return the file size.
 * @data_size: bytes of data ring; a power of two, >= one page.
 * @aux_size: bytes of AUX ring; 0 or a power of two >= one page.
 *
 * Return: the file size, or 0 if the sizes are not usable.
 */
size_t rk_bufile_layout_size(__u64 data_size, __u64 aux_size);

/**
 * rk_bufile__create() - create and map a buffer file.
 * @path: file to create, mode 0600, owned by the caller; it must not exist
 *        (O_EXCL: nobody can have it open or have placed it there).
 * @data_size, @aux_size: as for rk_bufile_layout_size().
 * @pmu: the attr and descriptor to place at pmu_offset (its pmu_info
 *	says their sizes; the header itself is not written).
 * @ident: identity record; magic/version/size are filled in, pinned and the
 *         counters zeroed.
 *
 * The file is sparse: pages take memory (and tmpfs space) when first
 * written, so a quiet thread costs what it used. Page 0 is written at once.
 *
 * Return: the mapped file, or NULL with errno set (EINVAL for bad sizes or
 * a pmu entry that does not fit in page 0, EEXIST, else the failing call's
 * errno).
 */
struct rk_bufile *rk_bufile__create(const char *path, __u64 data_size, __u64 aux_size,
				    const struct rk_pmu_entry *pmu,
				    const struct rk_thread_ident *ident);

/**
 * rk_bufile__open() - map an existing file read-only and validate page 0.
 * @path: the file: a regular file (a FIFO or device is refused without
 *        blocking, EBADMSG "not a regular file"); symlinks are not followed.
 * @err_msg: if not NULL, receives a static description of what is wrong.
 *
 * Return: the file, or NULL with errno set (EBADMSG: not a valid buffer).
 */
struct rk_bufile *rk_bufile__open(const char *path, const char **err_msg);

/**
 * rk_bufile__open_fd() - rk_bufile__open() of the file open at @fd, which
 * stays open (the caller's): for a reader that checked what it opened.
 */
struct rk_bufile *rk_bufile__open_fd(int fd, const char **err_msg);

/**
 * rk_bufile__open_rw() - map an existing, valid file for writing (a loader
 * resuming a session). The writer's state is taken from page 0 once, after
 * validation, so only a file that only root can write is accepted (owned
 * by root, no group or other write bit): EPERM otherwise. Same errors as
 * rk_bufile__open().
 */
struct rk_bufile *rk_bufile__open_rw(const char *path, const char **err_msg);

/**
 * rk_bufile__from_mem() - validate a buffer image in memory (not owned).
 * Return: 0, or -EBADMSG with *@err_msg describing the first problem.
 */
int rk_bufile__from_mem(struct rk_bufile *bf, void *base, size_t size, const char **err_msg);

/** rk_bufile__free() - unmap and free; NULL is a no-op. */
void rk_bufile__free(struct rk_bufile *bf);

/**
 * rk_bufile__write() - append one perf record to the data ring.
 * @bf: a writable buffer.
 * @rec: the record, starting with struct perf_event_header; its size field
 *       must equal @size, a multiple of 8.
 * @size: record size.
 *
 * Drops whole records from the tail to make room, publishing the new tail
 * before overwriting and the new head after writing, so [tail, head) parses
 * at every instant, for a concurrent reader and after a crash.
 *
 * Return: 0; -EINVAL for a malformed record; -E2BIG for a record larger
 * than the ring (counted in ident->lost); -EIO if the file is broken.
 */
int rk_bufile__write(struct rk_bufile *bf, const void *rec, size_t size);

/**
 * typedef rk_record_fn - called for each record, oldest first.
 * @rec: the record, contiguous (copied if it wrapped), @rec->size bytes.
 * Return: 0 to go on, non-zero to stop (returned by rk_bufile__for_each).
 */
typedef int (*rk_record_fn)(const struct perf_event_header *rec, void *ctx);

/**
 * rk_bufile__ring() - a consistent (data_head, data_tail) pair, also of a
 * file being written (see rk_bufile__for_each()).
 * Return: 0; -EBADMSG if the pair is corrupt.
 */
int rk_bufile__ring(const struct rk_bufile *bf, __u64 *head, __u64 *tail);

/**
 * rk_bufile__for_each() - walk the records of [data_tail, data_head).
 *
 * Safe against a live writer: reads head (acquire) and tail, copies each
 * record, and discards what the writer may have overwritten meanwhile.
 *
 * Return: 0; the callback's non-zero value; -EBADMSG if a record header is
 * corrupt (size 0, not a multiple of 8, or past head).
 */
int rk_bufile__for_each(const struct rk_bufile *bf, rk_record_fn fn, void *ctx);

/** typedef rk_record_pos_fn - rk_record_fn, with the record's ring position. */
typedef int (*rk_record_pos_fn)(const struct perf_event_header *rec, __u64 pos, void *ctx);

/**
 * rk_bufile__for_each_at() - rk_bufile__for_each(), telling each record's
 * position: a record not at the end of the one before was reached after
 * the writer lapped the walk (those between were overwritten unread).
 */
int rk_bufile__for_each_at(const struct rk_bufile *bf, rk_record_pos_fn fn, void *ctx);

/**
 * rk_bufile__for_each_since() - rk_bufile__for_each_at() of the records
 * from ring position @from on (0: from data_tail), where an earlier walk's
 * *@end was: a reader that keeps what it read walks only what came since.
 * @end: if not NULL, set to the head this walk reads up to (the next
 *	walk's @from).
 * @gap: if not NULL, set if records between @from and what this walk
 *	reads were overwritten before it read them (also when @from is not in
 *	[data_tail, data_head]: the walk starts at data_tail then).
 * Return: as rk_bufile__for_each().
 */
int rk_bufile__for_each_since(const struct rk_bufile *bf, __u64 from, rk_record_pos_fn fn,
			      void *ctx, __u64 *end, int *gap);

/**
 * rk_bufile__write_aux() - append raw bytes (Intel PT packets) to the AUX
 * ring; the oldest bytes are overwritten to make room.
 * Return: 0, or -EINVAL if the file has no AUX area.
 */
int rk_bufile__write_aux(struct rk_bufile *bf, const void *data, size_t len);

/**
 * rk_bufile__write_aux_rec() - store one PERF_RECORD_AUX's bytes (@p0/@n0
 * then @p1/@n1, the two parts of a range that wrapped in the CPU ring) in
 * the AUX ring, then the record itself in the data ring with aux_offset and
 * aux_size rewritten to where the bytes are in this file (flags kept: a
 * TRUNCATED chunk stays marked).
 * Return: 0; -EINVAL (no AUX area, not an AUX record); rk_bufile__write()'s errors.
 */
int rk_bufile__write_aux_rec(struct rk_bufile *bf, const struct perf_event_header *h,
			     const void *p0, size_t n0, const void *p1, size_t n1);

/**
 * rk_bufile__read_aux() - copy [aux_tail, aux_head) (at most @len, the
 * newest) into @buf, oldest first; safe against a live writer.
 * @offset: if not NULL, set to the AUX offset of @buf[0] (the file's
 *	coordinates, as in its PERF_RECORD_AUX records).
 * Return: bytes copied; -ENODATA (no AUX area), -EBADMSG (head/tail corrupt).
 */
ssize_t rk_bufile__read_aux(const struct rk_bufile *bf, void *buf, size_t len, __u64 *offset);

/* PERF_RECORD_MMAP2: pid, tid, addr, len, pgoff, maj, min, ino, generation, prot, flags, then the name. */
#define RK_MMAP2_NAME_OFFSET (sizeof(struct perf_event_header) + 8 + 24 + 24 + 8)

/**
 * rk_mmap2_name() - the file name of a PERF_RECORD_MMAP2 @h (of any
 * origin: checked to end inside the record). Return: it, or NULL.
 */
const char *rk_mmap2_name(const struct perf_event_header *h);

/**
 * struct rk_sample - a PERF_RECORD_SAMPLE of our sources, parsed; @chain
 * (@nr u64s, context markers included) and @raw point into the record.
 */
struct rk_sample {
	__u64 ip, time, period, nr;
	__u32 pid, tid, cpu, raw_len;
	const __u8 *chain, *raw;
};

/**
 * rk_sample_parse() - @h's IDENTIFIER, IP, TID, TIME, CPU, PERIOD,
 * CALLCHAIN, RAW (those of @sample_type, in the kernel's order) into @s.
 * Return: 0; -EOPNOTSUPP for another sample_type bit; -EBADMSG if the
 * record is too short for what it says it holds.
 */
int rk_sample_parse(__u64 sample_type, const struct perf_event_header *h, struct rk_sample *s);

/** rk_sample_id_size() - bytes of sample_id for an attr's sample_type. */
size_t rk_sample_id_size(__u64 sample_type);

/**
 * rk_record_time() - PERF_SAMPLE_TIME of a record written with @sample_type
 * (a sample's body or another record's sample_id). Return: it, or 0 if it
 * has none or is too short to hold it.
 */
__u64 rk_record_time(__u64 sample_type, const struct perf_event_header *h);

/**
 * rk_record_cpu() - PERF_SAMPLE_CPU's cpu and res of a non-sample record's
 * sample_id. Return: 0, or -ENOENT if it has none or is too short.
 */
int rk_record_cpu(__u64 sample_type, const struct perf_event_header *h, __u32 *cpu, __u32 *res);

#endif /* RK_BUFILE_H */
