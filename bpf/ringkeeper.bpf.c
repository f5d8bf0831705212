// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ringkeeper.bpf.c - scheduler hooks that tell the loader when a tracked
 * thread goes on or off CPU, forks, execs or exits.
 *
 * The tracked set is the pmu_info map itself: a thread is traced iff it has
 * an entry (mirrored in the traced array, one byte per tid: an untracked
 * switch costs two inlined array reads). sched_switch writes its signals
 * to its CPU's switch ring (plain stores, struct rk_swrec), the other hooks
 * to one BPF ringbuf; neither wakes the loader per record (each wakeup costs
 * ~16 us of the producing CPU, measured on this machine): the loader drains on a
 * timer, and we force a wakeup only past a watermark, for rare lifecycle
 * events, and for a switch-in whose buffer the loader asked to lock
 * (pin_asked: at most one per unlock). A switch's wakeup is an
 * RK_SIG_WAKE record in the ringbuf.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ringkeeper.h"

/* Stable since v4.14; not in BTF because it is a macro. */
#define RK_TASK_DEAD 0x80

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 cfg_wakeup_watermark = 64 * 1024;
const volatile __u8 cfg_inherit = 1;
/* Sources in use: entries {tid, 0 .. cfg_nr_src - 1} exist per traced thread. */
const volatile __u32 cfg_nr_src = 1;
/* -a: every user-space task is traced, whoever its parent. */
const volatile __u8 cfg_all = 0;
/* --cgroup: tasks in one of the first cfg_ncgroups subtrees of the cgroups map. */
const volatile __u32 cfg_ncgroups = 0;
/* Records per switch ring (a power of two), and the fill that wakes the loader. */
const volatile __u32 cfg_sw_slots = 1024;
const volatile __u32 cfg_sw_wake = 512;
/* Record wakeups of traced tasks (--wakeups; without, the loader does not attach their programs). */
const volatile __u8 cfg_wakeups = 0;
/* record --trigger delay:MS (0: off, and the code that follows it is dead) */
const volatile __u64 cfg_trigger_delay_ns = 0;
/* record --trigger killed: a SIGKILL to a traced process is signalled with its sender */
const volatile __u8 cfg_trigger_kill = 0;

/* PF_KTHREAD: stable since v2.6; a macro, not in BTF. */
#define RK_PF_KTHREAD 0x00200000

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, RK_MAX_ENTRIES);
	__type(key, struct rk_pmu_key);
	__type(value, struct rk_pmu_entry);
} pmu_info SEC(".maps");

/* The switch rings (struct rk_swrec): cfg_sw_slots per possible CPU, sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rk_swrec);
} swring SEC(".maps");

/* Their heads (entry 2 * cpu) and tails (2 * cpu + 1): struct rk_swpos. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct rk_swpos);
} swpos SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RK_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} signals SEC(".maps");

/*
 * What a traced task's readers were last decided from, as one __u64:
 * its credentials (the real_cred pointer: commit_creds() always installs a
 * new one) shifted left by 2, ORed with its process's dumpability (0-2).
 * A kernel pointer's top bits are all ones, so the shift loses nothing;
 * 0: not seen yet. One slot per tid, an inlined array access (sized by the
 * loader from pid_max, at most RK_CREDS_MAX_TIDS); a larger tid has it in
 * task-local storage (a helper call). The final switch-out clears a slot,
 * and fork and exec write it: a reused tid starts unseen.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} creds SEC(".maps");

/*
 * record --trigger delay:MS: when each traced tid became runnable (its
 * wakeup, or a preemption), by tid (sized as creds; a larger tid is not
 * watched); 0: not waiting for a CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} runnable SEC(".maps");

struct rk_task {
	__u64 creds; /* as in the creds map */
	__u64 rename_ns; /* the last rename signalled (RK_RENAME_GAP_NS) */
	__u64 regrant_ns; /* the last change toward dumpable signalled (RK_REGRANT_GAP_NS) */
	__u32 regrants; /* how many: each doubles the gap before the next */
	__u32 pad;
};

/* See RK_RENAME_GAP_NS: a thread's latest held name, by tid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RK_RENAMES_HELD_MAX);
	__type(key, __u32);
	__type(value, struct rk_rename_held);
} renames_held SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct rk_task);
} tasks SEC(".maps");

/*
 * sched_switch's O(1) test (struct rk_asked's layout: one byte per tid,
 * 1: has a sched entry in pmu_info). An inlined array access, not a helper
 * call: an untracked switch costs what an empty program does. pmu_info stays
 * the truth; every writer of its sched entries writes this byte too (BPF at
 * fork, exec, adoption and the final switch-out; the loader when it tracks,
 * refuses or lets go of a thread). Sized from pid_max by the loader: a tid
 * beyond it is looked up in pmu_info.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rk_asked);
} traced SEC(".maps");

/*
 * What a task traced by -a or --cgroup gets, per source (pmu_info values of
 * the session's sources, slot = source), written by the loader at start.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RK_MAX_SRC);
	__type(key, __u32);
	__type(value, struct rk_pmu_entry);
} tmpl SEC(".maps");

/*
 * --cgroup: the kernfs ids of the cgroup v2 directories whose subtrees are
 * traced (key), their --cgroup index (value). A hash: one lookup per level of
 * the walk up (nested loops over an array were too complex for 6.1's verifier).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RK_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, __u32);
} cgroups SEC(".maps");

/*
 * The recorder's tgid, never traced by -a or --cgroup (a map, not a
 * constant: a resumed recorder is another process).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} self SEC(".maps");

/* See struct rk_asked. Sized by the loader from pid_max (a larger tid: no wakeup). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rk_asked);
} pin_asked SEC(".maps");

static __always_inline void count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &slot);

	if (v)
		*v += 1; /* per-CPU slot: no other writer */
}

static __always_inline struct rk_task *task_store(struct task_struct *t)
{
	return bpf_task_storage_get(&tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* A tid beyond the traced array: the hash lookup (its key built only here, off the array's path). */
static __noinline int tid_in_pmu_info(__u32 tid)
{
	struct rk_pmu_key key = { .tid = tid, .src = RK_SRC_SCHED };

	return bpf_map_lookup_elem(&pmu_info, &key) != NULL;
}

/* Is @tid traced (has a sched entry in pmu_info)? */
static __always_inline int tid_traced(__u32 tid)
{
	__u32 idx = tid / RK_ASKED_PER;
	struct rk_asked *a = bpf_map_lookup_elem(&traced, &idx);

	if (a)
		return a->b[tid & (RK_ASKED_PER - 1)];
	return tid_in_pmu_info(tid);
}

/* What BPF itself changed in pmu_info for @tid: its byte in traced says so at once. */
static __always_inline void tid_set_traced(__u32 tid, __u8 v)
{
	__u32 idx = tid / RK_ASKED_PER;
	struct rk_asked *a = bpf_map_lookup_elem(&traced, &idx);

	if (a)
		a->b[tid & (RK_ASKED_PER - 1)] = v;
}

/* Is @cg (a cgroup v2 cgroup) in one of the --cgroup subtrees? */
static __always_inline int cgroup_wanted(struct cgroup *cg)
{
	if (!cfg_ncgroups || !cg || BPF_CORE_READ(cg, root, hierarchy_id) != 0)
		return 0; /* hierarchy 0 is the default one, cgroup v2 */
	for (int lvl = 0; lvl < 32 && cg; lvl++) {
		__u64 id = BPF_CORE_READ(cg, kn, id);

		if (bpf_map_lookup_elem(&cgroups, &id))
			return 1;
		/* cgroup::self (the css) is its first member: the parent css is the parent cgroup. */
		cg = (struct cgroup *)BPF_CORE_READ(cg, self.parent);
	}
	return 0;
}

/* Could @t be adopted at all: user space, not the recorder? */
static __always_inline int adoptable(struct task_struct *t)
{
	__u32 zero = 0;
	__u64 *me = bpf_map_lookup_elem(&self, &zero);

	return me && !(BPF_CORE_READ(t, flags) & RK_PF_KTHREAD) &&
	       (__u32)BPF_CORE_READ(t, tgid) != (__u32)*me;
}

/* Is @t, not traced, one that -a or --cgroup wants traced? */
static __always_inline int adopt_wanted(struct task_struct *t)
{
	if (!cfg_all && !cfg_ncgroups)
		return 0;
	return adoptable(t) && (cfg_all || cgroup_wanted(BPF_CORE_READ(t, cgroups, dfl_cgrp)));
}

/*
 * Trace @t with the session's sources (tmpl), perf sources first and sched
 * last, as the loader does: the fork hook copies a parent's sources once
 * sched is there. Return: 0, or -1 (map full: counted).
 */
static __always_inline int adopt(struct task_struct *t)
{
	struct rk_pmu_key key = { .tid = t->pid };
	struct rk_pmu_entry *val;

	for (__u32 j = 0; j < RK_MAX_SRC; j++) {
		__u32 i = RK_MAX_SRC - 1 - j;

		if (i >= cfg_nr_src)
			continue;
		key.src = i;
		val = bpf_map_lookup_elem(&tmpl, &i);
		if (!val || bpf_map_update_elem(&pmu_info, &key, val, BPF_ANY)) {
			count(RK_CNT_FORK_FAIL);
			return -1;
		}
	}
	tid_set_traced(t->pid, 1);
	count(RK_CNT_ADOPTED);
	return 0;
}

/* mm->flags: an unsigned long, then (6.16+) mm_flags_t, a bitmap. */
struct mm_struct___ulong {
	unsigned long flags;
} __attribute__((preserve_access_index));

struct mm_struct___bitmap {
	struct {
		unsigned long __mm_flags[1];
	} flags;
} __attribute__((preserve_access_index));

#define RK_MMF_DUMPABLE_MASK 3ul

/* get_dumpable() of @mm (not NULL). */
static __always_inline __u32 mm_dumpable(struct mm_struct *mm)
{
	unsigned long f = 0;

	if (bpf_core_field_exists(((struct mm_struct___ulong *)mm)->flags))
		f = ((struct mm_struct___ulong *)mm)->flags;
	else
		f = ((struct mm_struct___bitmap *)mm)->flags.__mm_flags[0];
	return (__u32)(f & RK_MMF_DUMPABLE_MASK);
}

/*
 * RK_SIGF_IDS for a new task @t: its tid in its own pid namespace and who
 * may read its files, as the loader decides from /proc (rk_access_reader_of):
 * the user whose real, effective, saved and fs uids (and gids) are all
 * one, not root, and whose mm is dumpable (SUID_DUMP_USER: /proc is then
 * its). A task with no mm or not dumpable is left to the loader (a non-
 * dumpable one's /proc owner is its user namespace's root). Return: 1 if set.
 */
static __always_inline int task_ids(struct rk_signal *s, struct task_struct *t)
{
	const struct cred *c = BPF_CORE_READ(t, real_cred);
	struct mm_struct *mm = t->mm; /* a trusted load, as creds_update() reads it */
	struct pid *pid = BPF_CORE_READ(t, thread_pid);
	__u32 uid, level;

	if (!c || !mm || !pid || mm_dumpable(mm) != 1)
		return 0;
	uid = BPF_CORE_READ(c, uid.val);
	if (BPF_CORE_READ(c, euid.val) != uid || BPF_CORE_READ(c, suid.val) != uid ||
	    BPF_CORE_READ(c, fsuid.val) != uid)
		s->reader = 0;
	else if (BPF_CORE_READ(c, egid.val) != BPF_CORE_READ(c, gid.val) ||
		 BPF_CORE_READ(c, sgid.val) != BPF_CORE_READ(c, gid.val) ||
		 BPF_CORE_READ(c, fsgid.val) != BPF_CORE_READ(c, gid.val))
		s->reader = 0;
	else
		s->reader = uid ? uid + 1 : 0;
	level = BPF_CORE_READ(pid, level);
	if (level > 31)
		return 0;
	s->ns_tid = BPF_CORE_READ(pid, numbers[level].nr);
	return 1;
}

/* @t's slot in creds (NULL: none, no memory). */
static __always_inline __u64 *creds_slot(struct task_struct *t)
{
	__u32 tid = t->pid;
	__u64 *v = bpf_map_lookup_elem(&creds, &tid);
	struct rk_task *c;

	if (v)
		return v;
	c = task_store(t);
	return c ? &c->creds : NULL;
}

/* @tid will not run again (or is another task from now on): its slot starts unseen. */
static __always_inline void creds_forget(__u32 tid)
{
	__u64 *v = bpf_map_lookup_elem(&creds, &tid);

	if (v)
		*v = 0;
}

/*
 * May @t's turn back to dumpable (SUID_DUMP_USER: its user may read it
 * again) be signalled now? Its first is; each one after must wait
 * RK_REGRANT_GAP_NS, doubled per earlier one up to RK_REGRANT_GAP_MAX_NS
 * (it costs the recorder a new set of files). A turn away from dumpable,
 * or new credentials, is never held: the records after it go to files
 * its user may not read from the first one on.
 */
static __always_inline int regrant_due(struct task_struct *t)
{
	struct rk_task *ts = task_store(t);
	__u64 now = bpf_ktime_get_ns(), gap = RK_REGRANT_GAP_NS;
	__u32 k;

	if (!ts)
		return 1; /* no memory: signal it, which costs only time */
	k = ts->regrants;
	if (k > RK_REGRANT_DOUBLINGS)
		k = RK_REGRANT_DOUBLINGS;
	if (k && now - ts->regrant_ns < gap << (k - 1))
		return 0;
	ts->regrant_ns = now;
	ts->regrants++;
	return 1;
}

/*
 * Is @was (@t's slot, seen before) what @t is now: the same objective
 * credentials (real_cred: what ptrace and /proc check; cred, the subjective
 * ones, is swapped for a while by override_creds(), which file systems do and
 * which is not a change of who the task is) and dumpability? Read only, the
 * answer of nearly every switch: three loads, no store. Shifted back
 * arithmetically the slot's pointer is whole (its top bits are ones); a
 * number is compared with a pointer, which the verifier allows a program
 * loaded with CAP_PERFMON, as it allows storing one into a map.
 */
static __always_inline int creds_same(struct task_struct *t, struct mm_struct *mm, __u64 was)
{
	return was && (__s64)was >> 2 == (__s64)t->real_cred && (was & 3) == mm_dumpable(mm);
}

/*
 * Remember @t's credentials and dumpability. Return: 0 unchanged (or first
 * seen), 1 credentials changed, 2 dumpability changed (3: both). A task
 * without an mm (exiting, kernel), or in an exec (@at_exec: the exec hook
 * itself), is not looked at.
 */
static __always_inline int creds_update(struct task_struct *t, int at_exec)
{
	struct mm_struct *mm = t->mm;
	__u64 *slot, was, now;

	if (!mm)
		return 0;
	slot = creds_slot(t);
	if (!slot)
		return 0;
	was = *slot;
	if (creds_same(t, mm, was))
		return 0;
	/* Mid-exec: the exec signal decides, and the exec hook refreshes what is kept. */
	if (!at_exec && bpf_core_field_exists(t->in_execve) && BPF_CORE_READ_BITFIELD(t, in_execve))
		return 0;
	/*
	 * The verifier allows no shift of a pointer: it goes through the slot
	 * (allowed with CAP_PERFMON, as any kernel pointer into a map) and
	 * comes back as a number.
	 */
	*(volatile __u64 *)slot = (__u64)t->real_cred;
	now = *(volatile __u64 *)slot << 2 | mm_dumpable(mm);
	*slot = now;
	if (!was)
		return 0;
	if ((was >> 2) == (now >> 2) && (was & 3) != 1 && (now & 3) == 1 && !regrant_due(t)) {
		/* Held back: its records stay root's until it is due (never looser). */
		*slot = was;
		count(RK_CNT_CREDS_HELD);
		return 0;
	}
	return ((was >> 2) != (now >> 2)) | ((was & 3) != (now & 3)) << 1;
}

/* task_struct::state was renamed __state in v5.14 (bcc core_fixes.bpf.h). */
struct task_struct___o {
	volatile long int state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return ((struct task_struct___o *)t)->state;
}

extern int LINUX_KERNEL_VERSION __kconfig;

/*
 * Why @prev left the CPU: since 5.18 sched_switch passes the state
 * __schedule() decided on (its 4th argument, what perf prints as
 * prev_state). Read live instead, a task being woken meanwhile by another
 * CPU shows TASK_WAKING: a D sleep filed as S (43% of one thread's D
 * switch-outs under i_rwsem contention). Older kernels: the live state.
 * The version is a constant at load: the verifier drops the other branch.
 */
static __always_inline __u32 switch_state(unsigned long long *ctx, struct task_struct *prev)
{
	if (LINUX_KERNEL_VERSION >= KERNEL_VERSION(5, 18, 0))
		return (__u32)ctx[3];
	return task_state(prev);
}

/*
 * @tid, tracked, goes on CPU: does the loader want to know now (to lock its
 * buffer)? Once per request: the flag stays set until the loader clears it.
 * Two CPUs racing on it cost one wakeup more, never one less.
 */
static __always_inline int pin_wanted(__u32 tid)
{
	__u32 idx = tid / RK_ASKED_PER;
	struct rk_asked *a = bpf_map_lookup_elem(&pin_asked, &idx);
	volatile __u8 *f;

	if (!a)
		return 0;
	f = &a->b[tid & (RK_ASKED_PER - 1)];
	if (*f)
		return 0;
	*f = 1;
	count(RK_CNT_PIN_WAKES);
	return 1;
}

static __always_inline struct rk_signal *reserve(void)
{
	struct rk_signal *s = bpf_ringbuf_reserve(&signals, sizeof(*s), 0);

	if (!s) {
		count(RK_CNT_DROPS);
		return NULL;
	}
	__builtin_memset(s, 0, sizeof(*s));
	return s;
}

/*
 * The watermark is looked at every 32nd signal of a CPU (a helper call
 * saved on the others): the ring fills by at most 32 records per CPU past
 * it, a few KiB of the three quarters above it.
 */
static __always_inline void submit(struct rk_signal *s, int urgent)
{
	__u32 slot = RK_CNT_SIGNALS;
	__u64 flags = BPF_RB_NO_WAKEUP, *n = bpf_map_lookup_elem(&counters, &slot);
	int look = 1;

	if (n) {
		*n += 1; /* per-CPU slot: no other writer */
		look = !(*n & 31);
	}
	if (urgent ||
	    (look && bpf_ringbuf_query(&signals, BPF_RB_AVAIL_DATA) >= cfg_wakeup_watermark))
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(s, flags);
}

/* Wake the loader: what the switch rings hold is wanted now. */
static __always_inline void wake_loader(void)
{
	struct rk_signal *s = bpf_ringbuf_reserve(&signals, sizeof(*s), 0);

	if (!s)
		return; /* the ringbuf is full: the loader is past its watermark anyway */
	__builtin_memset(s, 0, sizeof(*s));
	s->kind = RK_SIG_WAKE;
	bpf_ringbuf_submit(s, BPF_RB_FORCE_WAKEUP);
}

/* @cpu's switch ring head (struct rk_swpos), or NULL. */
static __always_inline struct rk_swpos *sw_head(__u32 cpu)
{
	__u32 hk = cpu * 2;

	return bpf_map_lookup_elem(&swpos, &hk);
}

/*
 * The next record of @cpu's switch ring (head @h), or NULL (ring full:
 * counted as a drop, as a full ringbuf is; or no head). *@wake: set when
 * the ring reaches its watermark (and every 64th record past it). The
 * loader's tail is read only from the watermark on (see struct rk_swrec).
 */
static __always_inline struct rk_swrec *sw_reserve(struct rk_swpos *h, __u32 cpu, int *wake)
{
	__u64 pos, fill;
	__u32 slot;

	if (!h)
		return NULL;
	pos = h->pos;
	fill = pos - h->seen;
	if (fill >= cfg_sw_wake) {
		__u32 tk = cpu * 2 + 1;
		struct rk_swpos *t = bpf_map_lookup_elem(&swpos, &tk);

		if (!t)
			return NULL;
		/* The tail is the loader's: read once. */
		h->seen = *(volatile __u64 *)&t->pos;
		fill = pos - h->seen;
		if (fill >= cfg_sw_slots) {
			count(RK_CNT_DROPS);
			return NULL;
		}
		if (fill == cfg_sw_wake || (fill > cfg_sw_wake && !(pos & 63)))
			*wake = 1;
	}
	slot = cpu * cfg_sw_slots + (__u32)(pos & (cfg_sw_slots - 1));
	return bpf_map_lookup_elem(&swring, &slot);
}

/* Two fields side by side, as one store: @lo at the lower address. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RK_PAIR(lo, hi) ((__u64)(hi) << 32 | (__u32)(lo))
#define RK_PAIR16(lo, hi) ((__u32)(__u16)(hi) << 16 | (__u16)(lo))
#else
#define RK_PAIR(lo, hi) ((__u64)(lo) << 32 | (__u32)(hi))
#define RK_PAIR16(lo, hi) ((__u32)(__u16)(lo) << 16 | (__u16)(hi))
#endif

/*
 * Write and publish a record into @w, which sw_reserve() gave from head @h:
 * four 8-byte stores (struct rk_swrec's layout), then a fully ordered atomic
 * add (BPF's fetch atomics are), so the loader that sees the new head sees
 * the record.
 */
static __always_inline void sw_commit(struct rk_swpos *h, struct rk_swrec *w, __u64 now, __u32 tid,
				      __u32 tgid, __u32 ptid, __u32 next_tgid, __u32 prev_state,
				      __u16 kind, __u16 flags)
{
	__u64 *q = (__u64 *)w;

	q[0] = now;
	q[1] = RK_PAIR(tid, tgid);
	q[2] = RK_PAIR(ptid, next_tgid);
	q[3] = RK_PAIR(prev_state, RK_PAIR16(kind, flags));
	if (__sync_fetch_and_add(&h->pos, 1) == ~0ull)
		count(RK_CNT_DROPS); /* never: 2^64 records; the value must be used for a fetch */
}

#include "offcpu.bpf.h"
#include "irqctx.bpf.h"

static __always_inline void fill_task(struct rk_signal *s, struct task_struct *t)
{
	s->tid = BPF_CORE_READ(t, pid);
	s->tgid = BPF_CORE_READ(t, tgid);
	s->uid = BPF_CORE_READ(t, real_cred, uid.val);
	bpf_probe_read_kernel_str(s->comm, sizeof(s->comm), &t->comm);
}

/* --trigger delay: @tid became runnable at @now (0: it went to sleep). */
static __always_inline void runnable_at(__u32 tid, __u64 now)
{
	__u64 *v;

	if (!cfg_trigger_delay_ns)
		return;
	v = bpf_map_lookup_elem(&runnable, &tid);
	if (v)
		*v = now;
}

/*
 * --trigger delay: @next switches in at @now; if it waited for a CPU
 * longer than the threshold, a trigger signal. Costs nothing until then
 * but an array slot read and cleared.
 */
static __always_inline void delay_check(struct task_struct *next, __u64 now, __u32 cpu,
					struct rk_swpos *head, int *wake)
{
	__u32 tid = next->pid;
	__u64 *v, waited;
	struct rk_swrec *w;

	if (!cfg_trigger_delay_ns)
		return;
	v = bpf_map_lookup_elem(&runnable, &tid);
	if (!v || !*v)
		return;
	waited = now > *v ? now - *v : 0;
	*v = 0;
	if (waited <= cfg_trigger_delay_ns)
		return;
	w = sw_reserve(head, cpu, wake);
	if (w)
		sw_commit(head, w, now, tid, next->tgid, 0, 0,
			  waited / 1000 > 0xffffffffull ? 0xffffffff : (__u32)(waited / 1000),
			  RK_SIG_TRIGGER, 0);
	*wake = 1;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(rk_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct rk_pmu_key key = { .src = RK_SRC_SCHED };
	struct rk_swpos *head;
	struct rk_swrec *w;
	int prev_tracked, next_tracked, wake = 0;
	__u64 now;
	__u32 cpu;

	/* O(1) per task, inlined: a byte each, no helper call. */
	prev_tracked = tid_traced(prev->pid);
	next_tracked = tid_traced(next->pid);
	if (!prev_tracked && !next_tracked)
		return 0;
	now = bpf_ktime_get_ns();
	cpu = bpf_get_smp_processor_id();
	head = sw_head(cpu); /* NULL (never: one per possible CPU) writes no record */
	if (prev_tracked) {
		__u32 state = switch_state(ctx, prev), next_tgid = 0;
		int changed = creds_update(prev, 0);
		__u16 flags = 0;

		/*
		 * New credentials or dumpability since it last ran: readers
		 * decided again, by the loader from what the task is then, so
		 * at once (as an exit is), not at its next tick (--tick-ms:
		 * the task may have changed again, or exited, by then).
		 */
		if (changed) {
			w = sw_reserve(head, cpu, &wake);
			if (w)
				sw_commit(head, w, now, prev->pid, prev->tgid, 0, 0,
					  BPF_CORE_READ(prev, real_cred, uid.val), RK_SIG_CREDS,
					  changed & 2 ? RK_SIGF_DUMPABLE : 0);
			wake = 1;
		}

		w = sw_reserve(head, cpu, &wake);
		if (w) {
			if (preempt || state == 0)
				flags |= RK_SIGF_PREEMPT;
			if (preempt)
				flags |= RK_SIGF_INVOLUNTARY;
			if (state & RK_TASK_DEAD) {
				flags |= RK_SIGF_DEAD;
				wake = 1;
			}
			/* Between two tracked tasks, one record says both (half the cost). */
			if (next_tracked) {
				flags |= RK_SIGF_NEXT_IN;
				next_tgid = next->tgid;
				next_tracked = 0;
				wake |= pin_wanted(next->pid);
			}
			flags |= offcpu_switch_stack(ctx, head, cpu, prev->pid, now, flags, &wake);
			sw_commit(head, w, now, prev->pid, prev->tgid, next->pid, next_tgid, state,
				  RK_SIG_SWITCH_OUT, flags);
		}
		/* Still runnable: from now on it waits for a CPU (its wait ends at its switch-in). */
		runnable_at(prev->pid, flags & RK_SIGF_PREEMPT ? now : 0);
		/* The final switch-out: nothing of this tid will run again. */
		if (state & RK_TASK_DEAD) {
			tid_set_traced(prev->pid, 0);
			creds_forget(prev->pid);
			key.tid = prev->pid;
			/* The counter lives in a register: the verifier bounds it. */
			for (__u32 i = 0; i < RK_MAX_SRC; i++) {
				if (i >= cfg_nr_src)
					break;
				key.src = i;
				bpf_map_delete_elem(&pmu_info, &key);
			}
		}
	}
	if (next_tracked) {
		w = sw_reserve(head, cpu, &wake);
		if (w) {
			wake |= pin_wanted(next->pid);
			sw_commit(head, w, now, next->pid, next->tgid, prev->pid, 0, 0,
				  RK_SIG_SWITCH_IN, 0);
		}
	}
	/* After the switch-in's record: the trigger follows it in the ring. */
	if (cfg_trigger_delay_ns && tid_traced(next->pid))
		delay_check(next, now, cpu, head, &wake);
	if (wake)
		wake_loader();
	return 0;
}

/*
 * @p, traced or not, is being woken by the task current here. Only a
 * wakeup by another task is a record: a task waking itself (it had set
 * its state and not yet slept) has no scheduling delay, and it is the one
 * path of try_to_wake_up() that runs with interrupts on, where an interrupt
 * could start a second writer of this CPU's ring. Every other path holds
 * p->pi_lock with interrupts off, as sched_switch runs: one writer per ring.
 */
static __always_inline int waking(void *ctx, struct task_struct *p, __u16 flags)
{
	struct task_struct *cur;
	struct rk_swpos *head;
	struct rk_swrec *w;
	int wake = 0;
	__u64 now;
	__u32 cpu;

	if ((!cfg_wakeups && !cfg_trigger_delay_ns) || !tid_traced(p->pid))
		return 0;
	cur = bpf_get_current_task_btf();
	if (cur == p)
		return 0;
	runnable_at(p->pid, bpf_ktime_get_ns());
	if (!cfg_wakeups)
		return 0;
	/* Who may learn the waker's ids: the loader decides from this (docs/trust.md). */
	if (BPF_CORE_READ(cur, real_cred, uid.val) != BPF_CORE_READ(p, real_cred, uid.val))
		flags |= RK_SIGF_WAKER_OTHER;
	/* From an interrupt, cur is only the task it interrupted: say so. */
	flags |= wake_context();
	cpu = bpf_get_smp_processor_id();
	head = sw_head(cpu);
	w = sw_reserve(head, cpu, &wake);
	if (w) {
		now = bpf_ktime_get_ns();
		/* record --offcpu: the waker's stacks (the woken thread's file decides who sees them). */
		flags |= offcpu_stack(ctx, head, cpu, p->pid, now, &wake);
		sw_commit(head, w, now, p->pid, p->tgid, cur->pid, cur->tgid, p->thread_info.cpu,
			  RK_SIG_WAKING, flags);
	}
	if (wake)
		wake_loader();
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(rk_sched_waking, struct task_struct *p)
{
	return waking(ctx, p, 0);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(rk_sched_wakeup_new, struct task_struct *p)
{
	return waking(ctx, p, RK_SIGF_WAKE_NEW);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(rk_fork, struct task_struct *parent, struct task_struct *child)
{
	struct rk_pmu_key pkey = { .src = RK_SRC_SCHED }, ckey = { .src = RK_SRC_SCHED };
	struct rk_pmu_entry *val;
	struct rk_signal *s;
	__u16 flags = 0;

	pkey.tid = parent->pid;
	val = cfg_inherit ? bpf_map_lookup_elem(&pmu_info, &pkey) : NULL;
	/*
	 * Runs before wake_up_new_task(): the child is in the set before its
	 * first instruction, and this signal precedes its first switch-in in
	 * the ringbuf.
	 */
	if (!val) {
		/* Not inherited: -a or --cgroup may want it all the same. */
		if (!adopt_wanted(child) || adopt(child))
			return 0;
		flags = RK_SIGF_ADOPTED;
		goto signal;
	}
	ckey.tid = child->pid;
	if (bpf_map_update_elem(&pmu_info, &ckey, val, BPF_ANY)) {
		count(RK_CNT_FORK_FAIL);
		return 0;
	}
	/* The child gets every source its parent has (the kernel's inherit=1 does the rest). */
	for (__u32 i = 1; i < RK_MAX_SRC; i++) {
		if (i >= cfg_nr_src)
			break;
		pkey.src = i;
		ckey.src = i;
		val = bpf_map_lookup_elem(&pmu_info, &pkey);
		if (val && bpf_map_update_elem(&pmu_info, &ckey, val, BPF_ANY))
			count(RK_CNT_FORK_FAIL);
	}
	count(RK_CNT_FORKS);
	tid_set_traced(child->pid, 1);
signal:
	creds_update(child, 0); /* its first credentials: no signal */
	s = reserve();
	if (!s)
		return 0;
	s->kind = RK_SIG_FORK;
	s->flags = flags;
	s->cpu = bpf_get_smp_processor_id();
	fill_task(s, child);
	if (task_ids(s, child))
		s->flags |= RK_SIGF_IDS;
	s->ptid = pkey.tid;
	s->time_ns = bpf_ktime_get_ns();
	if (s->tid == s->tgid)
		s->flags |= RK_SIGF_NEW_PROCESS;
	submit(s, 1);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(rk_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct rk_pmu_key key = { .src = RK_SRC_SCHED };
	struct rk_pmu_entry *val;
	struct rk_signal *s;
	__u16 flags = 0;

	key.tid = old_pid;
	val = bpf_map_lookup_elem(&pmu_info, &key);
	/*
	 * Not traced: -a or --cgroup may want it now (a program the kernel
	 * starts, like a core_pattern handler, is a kernel thread until it
	 * execs: begin_new_exec() clears PF_KTHREAD before this tracepoint).
	 */
	if (!val) {
		if ((__u32)old_pid != (__u32)p->pid || !adopt_wanted(p) || adopt(p))
			return 0;
		flags = RK_SIGF_ADOPTED;
	}
	/* A non-leader thread that execs takes over the leader's tid. */
	if ((__u32)old_pid != (__u32)p->pid) {
		struct rk_pmu_key nkey = { .tid = p->pid };

		for (__u32 i = 0; i < RK_MAX_SRC; i++) {
			if (i >= cfg_nr_src)
				break;
			key.src = i;
			nkey.src = i;
			val = bpf_map_lookup_elem(&pmu_info, &key);
			if (!val)
				continue;
			bpf_map_update_elem(&pmu_info, &nkey, val, BPF_ANY);
			bpf_map_delete_elem(&pmu_info, &key);
		}
		/* The old leader, still to switch out for good, now has old_pid: not ours. */
		tid_set_traced(old_pid, 0);
		creds_forget(old_pid);
		tid_set_traced(p->pid, 1);
	}
	/* The exec's new credentials are the exec signal's to handle. */
	creds_update(p, 1);
	s = reserve();
	if (!s)
		return 0;
	s->kind = RK_SIG_EXEC;
	s->flags = flags;
	s->cpu = bpf_get_smp_processor_id();
	fill_task(s, p);
	/* The new program's credentials and dumpability are committed by now (begin_new_exec()). */
	if (task_ids(s, p))
		s->flags |= RK_SIGF_IDS;
	s->ptid = old_pid;
	s->time_ns = bpf_ktime_get_ns();
	submit(s, 1);
	return 0;
}

/* Signals whose default action dumps core (sig_kernel_coredump()). */
#define RK_COREDUMP_SIGS                                                                      \
	((1u << 3) | (1u << 4) | (1u << 5) | (1u << 6) | (1u << 7) | (1u << 8) | (1u << 11) | \
	 (1u << 24) | (1u << 25) | (1u << 31))

/*
 * A traced thread is about to die of a core-dumping signal (default
 * action): the core handler will want its process's buffers drained and
 * frozen. signal_deliver fires in get_signal() before the default action
 * is taken, on the thread that takes it.
 */
SEC("tp_btf/signal_deliver")
int BPF_PROG(rk_signal_deliver, int sig, struct kernel_siginfo *info, struct k_sigaction *ka)
{
	struct rk_pmu_key key = { .src = RK_SRC_SCHED };
	struct task_struct *t = bpf_get_current_task_btf();
	struct rk_signal *s;

	if (sig <= 0 || sig >= 32 || !(RK_COREDUMP_SIGS & (1u << sig)))
		return 0;
	if (BPF_CORE_READ(ka, sa.sa_handler))
		return 0; /* handled or ignored: not the default action */
	key.tid = t->pid;
	if (!bpf_map_lookup_elem(&pmu_info, &key))
		return 0;
	count(RK_CNT_CRASHES);
	s = reserve();
	if (!s)
		return 0;
	s->kind = RK_SIG_CRASH;
	s->cpu = bpf_get_smp_processor_id();
	fill_task(s, t);
	s->exit_code = sig;
	s->time_ns = bpf_ktime_get_ns();
	submit(s, 1);
	return 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256); /* dumps under way at once; each handler takes its own */
	__type(key, __u32);
	__type(value, struct rk_dump_cwd);
} dump_cwd SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rk_dump_cwd);
} dump_cwd_scratch SEC(".maps");

/* The core of a task being dumped: signal_struct::core_state (mm's before 5.16). */
struct mm_struct___core_state {
	struct core_state *core_state;
} __attribute__((preserve_access_index));

static __always_inline int dumping(struct task_struct *t)
{
	struct mm_struct___core_state *mm;

	if (bpf_core_field_exists(t->signal->core_state))
		return BPF_CORE_READ(t, signal, core_state) != NULL;
	mm = (void *)BPF_CORE_READ(t, mm);
	return mm && BPF_CORE_READ(mm, core_state) != NULL;
}

/* Where cwd_step() is in the walk from a dumping task's cwd up to its root. */
struct cwd_walk {
	struct rk_dump_cwd *v;
	struct dentry *d, *root_d;
	struct vfsmount *vm, *root_vm;
	struct mount *m;
	__u32 pos;
};

/*
 * One step up, as d_path() walks: a name, or from a mount's root to where
 * it is mounted. Return: 1 at the task's root (whole), or when the names
 * do not fit, or at the top of the tree (the cwd outside the root); else 0.
 */
static long cwd_step(__u32 i, void *ctx)
{
	/* Locals: CO-RE reads relocate what they walk, and struct cwd_walk is ours. */
	struct cwd_walk *w = ctx;
	struct dentry *d = w->d, *parent;
	struct vfsmount *vm = w->vm;
	struct mount *m = w->m;
	long n;

	if (d == w->root_d && vm == w->root_vm) {
		w->v->flags |= RK_DUMP_CWD_WHOLE;
		return 1;
	}
	parent = BPF_CORE_READ(d, d_parent);
	if (d == BPF_CORE_READ(vm, mnt_root) || d == parent) {
		struct mount *pm = BPF_CORE_READ(m, mnt_parent);

		if (pm == m)
			return 1;
		w->d = BPF_CORE_READ(m, mnt_mountpoint);
		w->m = pm;
		w->vm = (void *)((char *)pm + bpf_core_field_offset(struct mount, mnt));
		return 0;
	}
	if (w->pos >= RK_DUMP_PATH_MAX)
		return 1;
	n = bpf_probe_read_kernel_str(&w->v->path[w->pos & (RK_DUMP_PATH_MAX - 1)],
				      RK_DUMP_NAME_MAX, BPF_CORE_READ(d, d_name.name));
	if (n <= 1)
		return 1;
	w->pos += (__u32)n;
	w->d = parent;
	return 0;
}

/* @v's cwd: its inode, its mount, the names up to the task's root (struct rk_dump_cwd). */
static __always_inline void cwd_names(struct rk_dump_cwd *v, struct fs_struct *fs)
{
	struct dentry *d = BPF_CORE_READ(fs, pwd.dentry);
	struct vfsmount *vm = BPF_CORE_READ(fs, pwd.mnt);
	struct mount *m = (void *)((char *)vm - bpf_core_field_offset(struct mount, mnt));
	struct cwd_walk w = {
		.v = v,
		.d = d,
		.root_d = BPF_CORE_READ(fs, root.dentry),
		.vm = vm,
		.root_vm = BPF_CORE_READ(fs, root.mnt),
		.m = m,
	};

	v->ino = BPF_CORE_READ(d, d_inode, i_ino);
	v->mnt_id = (__u32)BPF_CORE_READ(m, mnt_id);
	bpf_loop(RK_DUMP_DEPTH, cwd_step, &w, 0);
	v->len = w.pos;
}

/* What the kernel queues to start a usermode helper (kernel/umh.c); 0 if not in kallsyms. */
extern const void call_usermodehelper_exec_work __ksym __weak;

/*
 * A core dump's pipe handler is being started: call_usermodehelper_exec()
 * queues its work from the dumping task, after coredump_wait() and the
 * pattern's expansion, where the kernel would open a file pattern's
 * relative name. The task's cwd then, for the handler (struct rk_dump_cwd),
 * taken once per dump. Every dump, traced or not: the handler delivers
 * every core. A tracepoint, as fentry and kprobes are not everywhere.
 */
SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(rk_dump_cwd, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u32 zero = 0, tgid;
	struct rk_dump_cwd *v, *had;
	__u64 start;

	if (!&call_usermodehelper_exec_work ||
	    (const void *)BPF_CORE_READ(work, func) != &call_usermodehelper_exec_work ||
	    (t->flags & RK_PF_KTHREAD) || !dumping(t))
		return 0;
	tgid = (__u32)t->tgid;
	start = BPF_CORE_READ(t, group_leader, start_boottime);
	had = bpf_map_lookup_elem(&dump_cwd, &tgid);
	if (had && had->start_ns == start)
		return 0; /* this dump's, taken already */
	v = bpf_map_lookup_elem(&dump_cwd_scratch, &zero);
	if (!v)
		return 0;
	v->flags = 0;
	v->len = 0;
	v->start_ns = start;
	cwd_names(v, BPF_CORE_READ(t, fs));
	bpf_map_update_elem(&dump_cwd, &tgid, v, BPF_ANY);
	return 0;
}

/*
 * --trigger killed: SIGKILL sent to a traced process, with who sent it:
 * the sender is current here (the OOM killer's SIGKILL, SI_KERNEL, is sent
 * from the task whose allocation invoked it). Its delivery carries no
 * sender (a group exit takes a shortcut), so it is taken here.
 */
SEC("tp_btf/signal_generate")
int BPF_PROG(rk_signal_generate, int sig, struct kernel_siginfo *info, struct task_struct *task,
	     int group, int result)
{
	struct rk_pmu_key key = { .src = RK_SRC_SCHED };
	struct task_struct *cur;
	struct rk_signal *s;

	if (!cfg_trigger_kill || sig != 9 /* SIGKILL */ || result != 0 /* TRACE_SIGNAL_DELIVERED */)
		return 0;
	key.tid = BPF_CORE_READ(task, pid);
	if (!bpf_map_lookup_elem(&pmu_info, &key))
		return 0;
	cur = bpf_get_current_task_btf();
	s = reserve();
	if (!s)
		return 0;
	s->kind = RK_SIG_KILL;
	s->cpu = bpf_get_smp_processor_id();
	s->tid = key.tid;
	s->tgid = BPF_CORE_READ(task, tgid);
	s->uid = BPF_CORE_READ(task, real_cred, uid.val);
	/* SEND_SIG_NOINFO (0) and SEND_SIG_PRIV (1) are not pointers: SI_USER and SI_KERNEL. */
	s->prev_state = (unsigned long)info <= 1 ? ((unsigned long)info ? 0x80 : 0) :
						   (__u32)BPF_CORE_READ(info, si_code);
	/*
	 * SI_KERNEL: no task sent it. current is only where the kernel ran
	 * (the OOM killer's: the task whose allocation failed, often the
	 * victim itself), so no sender is named.
	 */
	if (s->prev_state != 0x80 /* SI_KERNEL */) {
		s->ptid = cur->pid;
		s->next_tgid = cur->tgid;
		bpf_probe_read_kernel_str(s->comm, sizeof(s->comm), &cur->comm);
		/* Who may learn the sender's ids: as for a waker (docs/trust.md). */
		if (BPF_CORE_READ(cur, real_cred, uid.val) != s->uid)
			s->flags |= RK_SIGF_WAKER_OTHER;
	}
	s->time_ns = bpf_ktime_get_ns();
	submit(s, 1);
	return 0;
}

/*
 * A traced thread renamed (PR_SET_NAME, /proc/TID/comm from another thread):
 * @task is the renamed one, not necessarily current. The rename that exec
 * does is left to the exec signal (its COMM record is the exec's).
 */
SEC("tp_btf/task_rename")
int BPF_PROG(rk_task_rename, struct task_struct *task, const char *comm)
{
	struct rk_pmu_key key = { .src = RK_SRC_SCHED };
	__u64 now = bpf_ktime_get_ns();
	struct rk_signal *s;
	struct rk_task *ts;
	__u32 tid;

	key.tid = task->pid;
	tid = task->pid;
	if (!bpf_map_lookup_elem(&pmu_info, &key))
		return 0;
	if (bpf_core_field_exists(task->in_execve) &&
	    BPF_CORE_READ_BITFIELD_PROBED(task, in_execve))
		return 0;
	ts = task_store(task);
	if (ts && ts->rename_ns && now - ts->rename_ns < RK_RENAME_GAP_NS) {
		/* Too soon after the last: keep only the latest name, for the next drain. */
		struct rk_rename_held h = { .time_ns = now, .tgid = task->tgid };

		bpf_probe_read_kernel_str(h.comm, sizeof(h.comm), comm);
		if (bpf_map_update_elem(&renames_held, &tid, &h, BPF_ANY))
			count(RK_CNT_DROPS); /* more threads than slots renaming at once */
		else
			count(RK_CNT_RENAMES_HELD);
		return 0;
	}
	if (ts)
		ts->rename_ns = now;
	s = reserve();
	if (!s)
		return 0;
	/* This name is newer than any held one. */
	bpf_map_delete_elem(&renames_held, &tid);
	s->kind = RK_SIG_RENAME;
	s->cpu = bpf_get_smp_processor_id();
	fill_task(s, task);
	bpf_probe_read_kernel_str(s->comm, sizeof(s->comm), comm);
	/* Stamped after the reserve, as every signal (the drain's bound relies on it). */
	s->time_ns = bpf_ktime_get_ns();
	/* Not urgent: the next drain tick takes it (a wakeup per rename cost 16 us). */
	submit(s, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(rk_exit, struct task_struct *p)
{
	struct rk_pmu_key key = { .src = RK_SRC_SCHED };
	struct rk_signal *s;

	key.tid = p->pid;
	if (!bpf_map_lookup_elem(&pmu_info, &key))
		return 0;
	count(RK_CNT_EXITS);
	s = reserve();
	if (!s)
		return 0;
	s->kind = RK_SIG_EXIT;
	s->cpu = bpf_get_smp_processor_id();
	fill_task(s, p);
	s->exit_code = BPF_CORE_READ(p, exit_code);
	s->time_ns = bpf_ktime_get_ns();
	/* The final switch-out that follows carries RK_SIGF_DEAD and wakes us. */
	submit(s, 0);
	return 0;
}

/*
 * --cgroup: a task (with @threadgroup, a whole process, @task its leader)
 * moved to @dst_cgrp. Into a traced subtree: traced from now on (its other
 * threads by the loader). Out of every one: the loader decides (a process
 * traced with -p stays traced).
 */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(rk_cgroup_attach, struct cgroup *dst_cgrp, const char *path, struct task_struct *task,
	     bool threadgroup)
{
	struct rk_pmu_key key = { .src = RK_SRC_SCHED };
	struct rk_signal *s;
	int in, traced;

	if (!cfg_ncgroups || BPF_CORE_READ(dst_cgrp, root, hierarchy_id) != 0)
		return 0;
	in = cgroup_wanted(dst_cgrp);
	key.tid = BPF_CORE_READ(task, pid);
	traced = bpf_map_lookup_elem(&pmu_info, &key) != NULL;
	if (in == traced && !(in && threadgroup))
		return 0;
	/* @task is in @dst_cgrp now: its cgroup was just looked at. */
	if (in && !traced && (!adoptable(task) || adopt(task)))
		return 0;
	s = reserve();
	if (!s)
		return 0;
	s->kind = in ? RK_SIG_CGROUP_IN : RK_SIG_CGROUP_OUT;
	s->cpu = bpf_get_smp_processor_id();
	fill_task(s, task);
	if (threadgroup)
		s->flags |= RK_SIGF_THREADGROUP;
	s->time_ns = bpf_ktime_get_ns();
	submit(s, 1);
	return 0;
}
