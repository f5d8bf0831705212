/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ringkeeper.h - the one header shared by the BPF programs and the loader.
 *
 * Only fixed-width types, fixed arrays and explicit padding: the same bytes
 * are laid out by clang for the BPF target and by gcc for the host, and the
 * pmu_info map values are written verbatim into buffer files.
 */
#ifndef RINGKEEPER_H
#define RINGKEEPER_H

#define RK_COMM_LEN 16
/* Room for the PMU-specific descriptor in a map value / user page. */
#define RK_PMU_DESC_MAX 512
/* Version of struct pmu_info, by size: the RFC's note_size. */
#define RK_PMU_INFO_NOTE_SIZE 8
/* sizeof(struct perf_event_attr) at PERF_ATTR_SIZE_VER8 (config3). */
#define RK_PERF_ATTR_SIZE 136

/* Signal kinds, BPF -> loader. */
#define RK_SIG_SWITCH_IN 1
#define RK_SIG_SWITCH_OUT 2
#define RK_SIG_FORK 3
#define RK_SIG_EXEC 4
#define RK_SIG_EXIT 5
/* A core-dumping signal with its default action delivered: exit_code holds it. */
#define RK_SIG_CRASH 6
/* A traced thread's comm changed (prctl, pthread_setname_np), not at exec: comm holds the new one. */
#define RK_SIG_RENAME 7
/*
 * A traced task's credentials or its process's dumpability changed since it
 * last ran (seen at its switch-out; exec refreshes what is remembered): who
 * may read its files is decided again (for the whole process with
 * RK_SIGF_DUMPABLE, dumpability being the mm's). prev_state: its real uid
 * now (the loader's /proc may be gone by the time it reads it).
 */
#define RK_SIG_CREDS 8
/*
 * A task moved into a --cgroup subtree (cgroup_attach_task): the BPF side
 * traces it at once; the loader makes its files, and with
 * RK_SIGF_THREADGROUP (the whole process moved) adds its other threads.
 */
#define RK_SIG_CGROUP_IN 9
/* A traced task moved out of every --cgroup subtree: the loader decides (-p, -a keep it). */
#define RK_SIG_CGROUP_OUT 10
/*
 * Nothing but a wakeup (ringbuf, forced): what sched_switch wrote to its
 * CPU's switch ring is wanted now (a lock asked for, a final switch-out, a
 * ring past its watermark). The loader reads the rings and drops it.
 */
#define RK_SIG_WAKE 11
/*
 * A traced task is being woken (sched_waking; sched_wakeup_new with
 * RK_SIGF_WAKE_NEW), by another task: in its waker's CPU's switch ring,
 * tid/tgid the woken task, ptid/next_tgid the waker (the task current on
 * that CPU: in an interrupt, whatever it interrupted, as perf reports it;
 * RK_SIGF_HARDIRQ, _SOFTIRQ, _NMI say it was one), prev_state the CPU the
 * woken task last ran on (sched_waking's target_cpu).
 */
#define RK_SIG_WAKING 12
/*
 * record --trigger delay:MS: a traced task switched in after waiting for a
 * CPU longer than the threshold (decided at its switch-in, in its CPU's
 * switch ring): tid/tgid the task, prev_state the wait in microseconds
 * (saturated), time_ns the switch-in.
 */
#define RK_SIG_TRIGGER 13
/*
 * record --trigger killed: SIGKILL sent to a traced process
 * (signal_generate): tid/tgid its target, ptid/next_tgid the sender
 * (0 for the kernel's own SIGKILL, SI_KERNEL, e.g. the OOM killer's: no
 * task sent it), prev_state the si_code (0 SI_USER, 0x80 SI_KERNEL), comm
 * the sender's, RK_SIGF_WAKER_OTHER if the sender is another user's.
 */
#define RK_SIG_KILL 14

/* rk_signal.flags */
#define RK_SIGF_PREEMPT 0x1 /* switch-out while still runnable */
#define RK_SIGF_DEAD 0x2 /* final switch-out of an exited task */
#define RK_SIGF_NEW_PROCESS 0x4 /* fork created a process, not a thread */
/* switch-out whose next task (ptid, tgid next_tgid) is tracked too: its switch-in */
#define RK_SIGF_NEXT_IN 0x8
#define RK_SIGF_DUMPABLE 0x10 /* RK_SIG_CREDS: the process's dumpability changed */
#define RK_SIGF_THREADGROUP 0x20 /* RK_SIG_CGROUP_*: the whole process moved */
/* RK_SIG_FORK/RK_SIG_EXEC: a task traced for -a or --cgroup, not inherited */
#define RK_SIGF_ADOPTED 0x40
#define RK_SIGF_WAKE_NEW 0x80 /* RK_SIG_WAKING: a new task's first wakeup (wake_up_new_task) */
/* switch-out: sched_switch's preempt, the kernel took the CPU (it reports R+) */
#define RK_SIGF_INVOLUNTARY 0x100
/*
 * RK_SIG_WAKING: the waker (or the task an interrupt woke it from) is
 * another user's; RK_SIG_KILL: the sender is
 */
#define RK_SIGF_WAKER_OTHER 0x200
/*
 * record --offcpu: this switch-out (into a sleep, not a preemption) or
 * wakeup has a stack, the next one of its CPU's stack ring (struct rk_stack).
 */
#define RK_SIGF_STACK 0x400
/*
 * RK_SIG_WAKING: the context of the wakeup, from the waker CPU's
 * preempt_count (as the kernel's TRACE_FLAG_* common_flags): RK_SIGF_CTX
 * says it was read (a kernel or arch where it cannot be leaves all four
 * clear), then at most one of hard irq, NMI, or a softirq being served.
 * In an interrupt, ptid/next_tgid are the task it interrupted.
 */
#define RK_SIGF_CTX 0x800
#define RK_SIGF_HARDIRQ 0x1000
#define RK_SIGF_SOFTIRQ 0x2000
#define RK_SIGF_NMI 0x4000
/*
 * RK_SIG_FORK, RK_SIG_EXEC: the task's identity as /proc would give it,
 * read at the fork (the exec): ns_tid (its tid in its own pid namespace) and reader (uid + 1 of
 * the user who may read its files by the kernel's /proc rule, 0: root
 * only). Set only where BPF decides as the loader would (a dumpable mm):
 * otherwise the loader reads /proc.
 */
#define RK_SIGF_IDS 0x8000

/* Counter slots of the per-CPU "counters" array map. */
#define RK_CNT_SIGNALS 0 /* signals submitted */
#define RK_CNT_DROPS 1 /* ringbuf reserve failures or full switch rings: signals lost */
#define RK_CNT_FORKS 2 /* children added to the tracked set */
#define RK_CNT_FORK_FAIL 3 /* children that could not be added (map full) */
#define RK_CNT_EXITS 4
#define RK_CNT_CRASHES 5 /* fatal core-dumping signals delivered to traced threads */
#define RK_CNT_PIN_WAKES 6 /* switch-ins that woke the loader for a pin (pin_asked) */
#define RK_CNT_ADOPTED 7 /* tasks traced by -a / --cgroup at fork, exec or cgroup move */
#define RK_CNT_RENAMES_HELD 8 /* renames within RK_RENAME_GAP_NS of a thread's last one */
#define RK_CNT_CREDS_HELD 9 /* turns back to dumpable not yet due (RK_REGRANT_GAP_NS) */
#define RK_CNT_STACK_DROPS 10 /* --offcpu: stacks not taken, their CPU's stack ring full */
#define RK_CNT_MAX 11

/*
 * A thread that turns dumpable again (its user may read its new records)
 * is signalled at once the first time, then RK_REGRANT_GAP_NS after its
 * last such turn, the gap doubling with each, up to 2^RK_REGRANT_DOUBLINGS
 * times (~10 s): a user flipping PR_SET_DUMPABLE in a loop costs the
 * recorder two new files per gap at most. Until then its records stay in
 * its root-only file; a turn away from dumpable is never held.
 */
#define RK_REGRANT_GAP_NS 10000000ull
#define RK_REGRANT_DOUBLINGS 10

/*
 * A thread's renames are signalled at most once per RK_RENAME_GAP_NS; in
 * between, only its latest name is kept (renames_held map, RK_RENAMES_HELD_MAX
 * threads), which the loader writes at its next drain. A user renaming a
 * thread in a loop cannot make the recorder handle every rename.
 */
#define RK_RENAME_GAP_NS 10000000ull
#define RK_RENAMES_HELD_MAX 4096
/* How often the loader writes the held names: a renaming thread's name is at most this late. */
#define RK_RENAMES_HELD_EVERY_NS 100000000ull

/**
 * struct rk_rename_held - a thread's latest name not yet signalled.
 * @comm: the name; @time_ns: when it was given; @tgid: the thread's process.
 */
struct rk_rename_held {
	char comm[RK_COMM_LEN];
	__u64 time_ns;
	__u32 tgid;
	__u32 pad;
};

/* Index of the always-present sched source in struct rk_pmu_key. */
#define RK_SRC_SCHED 0
/* Sources (sched + perf events) per session. */
#define RK_MAX_SRC 8

/* --cgroup subtrees at most (their cgroup v2 ids in the cgroups map). */
#define RK_MAX_CGROUPS 8

/* Max tracked (thread, source) entries; --max-threads in a later issue. */
#define RK_MAX_ENTRIES 65536

/**
 * struct pmu_info - versioned header of a PMU's user-page extension.
 * @note_size: size of this structure (versioning), as in the RFC.
 * @pmu_descsz: bytes of PMU-specific descriptor after the attr.
 */
struct pmu_info {
	__u32 note_size;
	__u32 pmu_descsz;
};

/*
 * struct rk_perf_event_attr - struct perf_event_attr as of
 * PERF_ATTR_SIZE_VER8, with the kernel's field names, so that bpftool prints
 * named fields through BTF. Bitfields of __u64 are laid out identically by
 * clang (bpf) and gcc (x86_64, little endian); user code asserts the offsets
 * against the uapi header.
 */
struct rk_perf_event_attr {
	__u32 type;
	__u32 size;
	__u64 config;
	union {
		__u64 sample_period;
		__u64 sample_freq;
	};
	__u64 sample_type;
	__u64 read_format;
	__u64 disabled : 1, inherit : 1, pinned : 1, exclusive : 1, exclude_user : 1,
		exclude_kernel : 1, exclude_hv : 1, exclude_idle : 1, mmap : 1, comm : 1, freq : 1,
		inherit_stat : 1, enable_on_exec : 1, task : 1, watermark : 1, precise_ip : 2,
		mmap_data : 1, sample_id_all : 1, exclude_host : 1, exclude_guest : 1,
		exclude_callchain_kernel : 1, exclude_callchain_user : 1, mmap2 : 1, comm_exec : 1,
		use_clockid : 1, context_switch : 1, write_backward : 1, namespaces : 1,
		ksymbol : 1, bpf_event : 1, aux_output : 1, cgroup : 1, text_poke : 1, build_id : 1,
		inherit_thread : 1, remove_on_exec : 1, sigtrap : 1, __reserved_1 : 26;
	union {
		__u32 wakeup_events;
		__u32 wakeup_watermark;
	};
	__u32 bp_type;
	union {
		__u64 bp_addr;
		__u64 config1;
	};
	union {
		__u64 bp_len;
		__u64 config2;
	};
	__u64 branch_sample_type;
	__u64 sample_regs_user;
	__u32 sample_stack_user;
	__s32 clockid;
	__u64 sample_regs_intr;
	__u32 aux_watermark;
	__u16 sample_max_stack;
	__u16 __reserved_2;
	__u32 aux_sample_size;
	__u32 aux_action;
	__u64 sig_data;
	__u64 config3;
};

/* intel_pt descriptor (the PMU-specific part of pmu_info), version 1. */
#define RK_PT_DESC_VERSION 1
#define RK_PT_VENDOR_INTEL 1
/* Config fields of the intel_pt format/ directory, in this order. */
#define RK_PT_FMT_NAMES                                                                   \
	"pt", "tsc", "noretcomp", "mtc", "cyc", "pwr_evt", "fup_on_ptw", "ptw", "branch", \
		"psb_period", "mtc_period", "cyc_thresh", "notnt", "event", "", ""
#define RK_PT_NFMT 16
/* rk_pt_desc.caps bits, from caps/ (a missing file is 0). */
#define RK_PT_CAP_PSB_CYC (1u << 0)
#define RK_PT_CAP_MTC (1u << 1)
#define RK_PT_CAP_IP_FILTERING (1u << 2)
#define RK_PT_CAP_PTWRITE (1u << 3)
#define RK_PT_CAP_POWER_EVENT_TRACE (1u << 4)
#define RK_PT_CAP_TOPA_OUTPUT (1u << 5)
#define RK_PT_CAP_SINGLE_RANGE_OUTPUT (1u << 6)

/**
 * struct rk_pt_desc - what a decoder of this trace needs (libipt's
 * pt_config), read from cpuid and sysfs when the trace was recorded, so the
 * buffer decodes on another machine or from a core dump.
 * @size, @version: versioning (the RFC's size-prefixed scheme).
 * @cpu_*: the CPU (errata via pt_cpu_errata).
 * @cpuid_0x15_eax, @cpuid_0x15_ebx: TSC/ART ratio (MTC and CYC timing).
 * @max_nonturbo_ratio: nominal frequency ratio (libipt's nom_freq).
 * @mtc_periods, @cyc_thresholds, @psb_periods: caps/ bitmaps.
 * @caps: RK_PT_CAP_*; @num_address_ranges: address filters available.
 * @fmt: bit ranges (first, last) of the config fields, in RK_PT_FMT_NAMES order.
 * @time_shift, @time_mult, @time_zero: TSC to perf time, from the user page.
 * @filter: the address ranges the trace was filtered with, as the
 *	IA32_RTIT_ADDRn_A/B MSRs held them (resolved addresses, not perf's
 *	file@offset syntax): up to 4 entries "filter A-B" (trace only inside)
 *	or "stop A-B" (stop tracing there), hex, separated by ';'. A decoder
 *	needs them (libipt's addr_filter; the skl014 erratum workaround reads
 *	them). Empty: no filter. The recorder sets none (it has no --filter).
 */
struct rk_pt_desc {
	__u32 size;
	__u32 version;
	__u32 cpu_vendor;
	__u32 cpu_family;
	__u32 cpu_model;
	__u32 cpu_stepping;
	__u32 cpuid_0x15_eax;
	__u32 cpuid_0x15_ebx;
	__u32 max_nonturbo_ratio;
	__u32 mtc_periods;
	__u32 cyc_thresholds;
	__u32 psb_periods;
	__u32 caps;
	__u32 num_address_ranges;
	__u8 fmt[RK_PT_NFMT][2];
	__u16 time_shift;
	__u16 __pad;
	__u32 time_mult;
	__u64 time_zero;
	char filter[128];
};

/**
 * struct rk_pmu_key - key of the pmu_info map.
 * @tid: global tid of the traced thread.
 * @src: source (event) index within the session; RK_SRC_SCHED is always there.
 */
struct rk_pmu_key {
	__u32 tid;
	__u32 src;
};

/**
 * struct rk_pmu_entry - value of the pmu_info map, and the bytes a buffer
 * file holds at pmu_offset (the first pmu_size bytes of it).
 * @info: note_size / pmu_descsz.
 * @attr: the event's attr; attr.size says how much of it is meaningful.
 * @desc: PMU descriptor, pmu_descsz bytes used.
 */
struct rk_pmu_entry {
	struct pmu_info info;
	struct rk_perf_event_attr attr;
	__u8 desc[RK_PMU_DESC_MAX];
};

/*
 * The pin_asked map (an mmap-able array): one byte per tid, RK_ASKED_PER
 * tids per entry, entry tid / RK_ASKED_PER, byte tid % RK_ASKED_PER.
 * 0: the loader wants to hear of this tid's next switch-in at once (its
 * buffer is not locked and a run of it is long enough to be worth a lock):
 * the switch-in sets it to 1 and wakes the loader. 1: no wakeup (locked,
 * lock requested, or not worth one); the loader learns at its drain tick.
 * The loader sets 1 when it handles a switch-in and 0 when it wants the next.
 */
#define RK_ASKED_PER 64

/* The creds map's tids at most (8 bytes each: 8 MiB); above, task-local storage. */
#define RK_CREDS_MAX_TIDS (1u << 20)
struct rk_asked {
	__u8 b[RK_ASKED_PER];
};

/**
 * struct rk_swrec - what sched_switch says (the switch and creds signals),
 * in its CPU's switch ring: the fields of struct rk_signal it uses, the CPU
 * being the ring's.
 *
 * The switch rings are one mmap-able array (swring) of `slots` records
 * (a power of two) per possible CPU: CPU c's record number h is entry
 * c * slots + (h & (slots - 1)). Their positions are a second array (swpos)
 * of struct rk_swpos, a cache line each: entry 2c CPU c's head (records
 * written; BPF stores the record, then adds 1 with a fully ordered atomic),
 * entry 2c + 1 its tail (records the loader is done with; it stores it
 * after reading them). BPF writes a record only while head - tail < slots:
 * a full ring drops it (RK_CNT_DROPS). BPF reads the loader's tail only
 * when the fill it computes from the tail it last read (seen, in the head's
 * line) reaches the wakeup watermark: below it, the tail's cache line stays
 * the loader's. The tail never goes back but from past the head (a bad
 * one, mended by the loader), so seen is at most the tail, or past the
 * head: a fill from seen is never less than the true one, or wraps to a
 * huge one that makes BPF read the tail again. One writer per ring:
 * sched_switch runs with interrupts off and never nests on a CPU.
 *
 * Why not the ringbuf: a reserve and a submit are two helper calls with a
 * lock between them, ~65 ns of a ~280 ns tracked switch on this machine
 * (BENCHMARKS.md 2b); plain stores and one atomic cost ~15. The loader
 * merges the rings and the ringbuf by time (user/swring.c).
 */
struct rk_swrec {
	__u64 time_ns;
	__u32 tid;
	__u32 tgid;
	__u32 ptid;
	__u32 next_tgid;
	__u32 prev_state;
	__u16 kind;
	__u16 flags;
};

struct rk_swpos {
	__u64 pos;
	__u64 seen; /* in a head entry: the tail as BPF last read it (BPF's own) */
	/* The same two for the CPU's stack ring (struct rk_stack), --offcpu only. */
	__u64 st_pos;
	__u64 st_seen;
	__u64 pad[4];
};

/* Frames a stack slot holds: kernel, then user (perf's default max is 127 in all). */
#define RK_STACK_KERNEL_MAX 32
#define RK_STACK_USER_MAX 94

/**
 * struct rk_stack - one stack of `record --offcpu`, in its CPU's stack ring
 * (the stkring map, `slots` per possible CPU, a power of two; positions in
 * struct rk_swpos's st_pos, BPF's head, and st_seen / the tail entry's
 * st_pos, the loader's, as for the switch ring). BPF takes one for a
 * switch-out into a sleep (the thread's own stacks) or, with --wakeups, a
 * wakeup (the waker's), writes it before the switch record that says so
 * (RK_SIGF_STACK), and that record's fully ordered head add publishes both.
 * The loader takes the stacks of a CPU in the order of its flagged records.
 * @time_ns, @tid: the record it belongs to (the loader checks them).
 * @nr_kernel: frames in @ip[0 .. nr_kernel), leaf first.
 * @nr_user: frames in @ip[RK_STACK_KERNEL_MAX ..], leaf first.
 *
 * Why a ring of its own, not a wider switch record or a slot per switch
 * record: switch records stay 32 bytes (the switch path without --offcpu
 * unchanged), and a 1 KiB slot per switch record would be 32 times the
 * switch rings (128 MiB at the default --ringbuf-size on 2 CPUs).
 * Why not a stack map (one id per distinct stack): its ids are only
 * reusable by deleting them, and the loader would look each one up with a
 * syscall; bpf_get_stack() into the slot is one helper call per stack.
 */
struct rk_stack {
	__u64 time_ns;
	__u32 tid;
	__u16 nr_kernel;
	__u16 nr_user;
	__u64 ip[RK_STACK_KERNEL_MAX + RK_STACK_USER_MAX];
};

/**
 * struct rk_signal - one BPF -> loader signal (BPF ringbuf record).
 * @kind: RK_SIG_*.
 * @flags: RK_SIGF_*.
 * @cpu: CPU the event happened on.
 * @tid, @tgid: the tracked thread (the child, for RK_SIG_FORK).
 * @ptid: parent tid (fork) or the other task of a switch (next/prev).
 * @prev_state: task state at switch-out (raw __state).
 * @time_ns: CLOCK_MONOTONIC (bpf_ktime_get_ns).
 * @exit_code: task exit_code (RK_SIG_EXIT).
 * @next_tgid: with RK_SIGF_NEXT_IN, the tgid of next (one record for both
 *             sides of a switch between two tracked tasks).
 * @uid: real uid of the task (fork, exec).
 * @comm: task comm (fork, exec, rename).
 */
struct rk_signal {
	__u16 kind;
	__u16 flags;
	__u32 cpu;
	__u32 tid;
	__u32 tgid;
	__u32 ptid;
	union {
		__u32 prev_state;
		__u32 ns_tid; /* RK_SIG_FORK, RK_SIG_EXEC with RK_SIGF_IDS */
	};
	__u64 time_ns;
	union {
		__s32 exit_code;
		__u32 next_tgid;
		__u32 reader; /* RK_SIG_FORK, RK_SIG_EXEC with RK_SIGF_IDS */
	};
	__u32 uid;
	char comm[RK_COMM_LEN];
};

/*
 * The cwd of a process dumping core, taken in BPF at the dump's start, where
 * the kernel would open a relative core file (call_usermodehelper_setup(),
 * after coredump_wait()): a process sharing its fs_struct (CLONE_FS) may
 * chdir() before the core_pattern handler reads /proc/PID/cwd. Keyed by
 * tgid in the pinned map "dump_cwd"; the handler takes and deletes it.
 * @path: the names from the cwd up to the task's root, the cwd's first,
 * each ending in a NUL (mounts crossed in the task's own mount tree).
 */
#define RK_DUMP_PATH_MAX 4096
#define RK_DUMP_NAME_MAX 256 /* NAME_MAX + its NUL */
#define RK_DUMP_DEPTH 256 /* names and mount crossings walked at most */
#define RK_DUMP_CWD_WHOLE 1 /* @path reaches the task's root */

struct rk_dump_cwd {
	__u64 start_ns; /* the process's start (task_struct::start_boottime) */
	__u64 ino; /* the cwd's inode */
	__u32 mnt_id; /* its mount's id (statx's STATX_MNT_ID) */
	__u32 len; /* bytes of @path used */
	__u32 flags; /* RK_DUMP_CWD_* */
	__u32 pad;
	char path[RK_DUMP_PATH_MAX + RK_DUMP_NAME_MAX];
};

_Static_assert(sizeof(struct pmu_info) == RK_PMU_INFO_NOTE_SIZE, "pmu_info size");
_Static_assert(sizeof(struct rk_perf_event_attr) == RK_PERF_ATTR_SIZE, "attr size");
_Static_assert(sizeof(struct rk_pmu_key) == 8, "key size");
_Static_assert(sizeof(struct rk_pmu_entry) == 8 + RK_PERF_ATTR_SIZE + RK_PMU_DESC_MAX,
	       "entry size");
_Static_assert(sizeof(struct rk_signal) == 56, "signal size");
_Static_assert(sizeof(struct rk_rename_held) == 32, "held rename size");
_Static_assert(sizeof(struct rk_swrec) == 32, "switch record size");
_Static_assert(sizeof(struct rk_swpos) == 64, "ring position: a cache line");
_Static_assert(sizeof(struct rk_stack) == 1024, "stack slot size");
_Static_assert(sizeof(struct rk_pt_desc) == 232, "pt descriptor size");
_Static_assert(sizeof(struct rk_pt_desc) <= RK_PMU_DESC_MAX, "pt descriptor fits");
_Static_assert(sizeof(struct rk_dump_cwd) == 32 + RK_DUMP_PATH_MAX + RK_DUMP_NAME_MAX,
	       "dump cwd size");

#endif /* RINGKEEPER_H */
