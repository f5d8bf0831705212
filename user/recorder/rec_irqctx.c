// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rec_irqctx.c - where a CPU's preempt_count is, for the wakeup programs
 * (see rec_irqctx.h and bpf/irqctx.bpf.h).
 */
#include <errno.h>
#include <string.h>
#include <bpf/btf.h>
#include "rec_irqctx.h"

/* The offset in @sec of the variable named @name, or -1. */
static long long var_offset(const struct btf *btf, const struct btf_type *sec, const char *name,
			    __u32 *type_id)
{
	const struct btf_var_secinfo *vs = btf_var_secinfos(sec);
	__u16 i;

	for (i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *v = btf__type_by_id(btf, vs->type);

		if (v && !strcmp(btf__name_by_offset(btf, v->name_off), name)) {
			*type_id = v->type;
			return vs->offset;
		}
	}
	return -1;
}

/* The byte offset of member @name in struct @id, or -1. */
static long long member_offset(const struct btf *btf, __u32 id, const char *name)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const struct btf_member *m;
	__u16 i;

	if (!t || !btf_is_struct(t))
		return -1;
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), name))
			return btf_member_bit_offset(t, i) / 8;
	return -1;
}

/* In the per-CPU section @sec: preempt_count's offset - runqueues'. Return: 0, -ENOENT. */
static int distance(const struct btf *btf, const struct btf_type *sec, __s64 *off)
{
	long long rq, pc, field = 0;
	__u32 rq_type, pc_type;

	rq = var_offset(btf, sec, "runqueues", &rq_type);
	pc = var_offset(btf, sec, "__preempt_count", &pc_type);
	if (pc < 0) {
		pc = var_offset(btf, sec, "pcpu_hot", &pc_type);
		field = pc < 0 ? -1 : member_offset(btf, pc_type, "preempt_count");
	}
	if (rq < 0 || pc < 0 || field < 0)
		return -ENOENT;
	*off = pc + field - rq;
	return *off ? 0 : -ENOENT;
}

int rec_preempt_count_from_rq(__s64 *off)
{
#if defined(__x86_64__)
	struct btf *btf = btf__load_vmlinux_btf();
	int err = -ENOENT;
	__u32 i, n;

	if (!btf)
		return -errno;
	n = btf__type_cnt(btf);
	for (i = 1; i < n && err == -ENOENT; i++) {
		const struct btf_type *t = btf__type_by_id(btf, i);

		if (btf_is_datasec(t) &&
		    !strcmp(btf__name_by_offset(btf, t->name_off), ".data..percpu"))
			err = distance(btf, t, off);
	}
	btf__free(btf);
	return err;
#else
	(void)off;
	return -ENOENT;
#endif
}
