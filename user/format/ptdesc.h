/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ptdesc.h - the intel_pt descriptor (struct rk_pt_desc, the PMU-specific
 * part of an intel_pt pmu_info): read from sysfs and cpuid when recording,
 * the config terms (perf's intel_pt/.../ syntax) against it. What the
 * recorder needs of Intel PT; decoding is view/pt.h's.
 * May call: util.
 */
#ifndef RK_PTDESC_H
#define RK_PTDESC_H

#include <linux/types.h>
#include "ringkeeper.h"

#define RK_PT_SYSFS "/sys/bus/event_source/devices/intel_pt"

/** rk_pt_present() - the intel_pt PMU exists on this machine. */
int rk_pt_present(const char *sysdir);

/**
 * rk_pt_desc_read() - fill @d from cpuid and the PMU's sysfs directory.
 * @sysdir: RK_PT_SYSFS, or a copy of it (tests).
 * Return: 0, or -ENOENT if @sysdir does not exist.
 */
int rk_pt_desc_read(struct rk_pt_desc *d, const char *sysdir);

/**
 * rk_pt_config_field() - value of a format field (e.g. "mtc_period") in @config.
 * Return: the value, or -1 if the descriptor has no such field or a corrupt
 * one (its bits out of order or past 63).
 */
long long rk_pt_config_field(const struct rk_pt_desc *d, const char *name, __u64 config);

/**
 * rk_pt_config_set() - set format field @name of @config to @value.
 * Return: 0; -ENOENT (no such field in the descriptor), -EINVAL (a corrupt
 * field: its bits out of order or past 63), -ERANGE (too wide).
 */
int rk_pt_config_set(const struct rk_pt_desc *d, const char *name, __u64 value, __u64 *config);

/**
 * rk_pt_field_mask() - the config bits of field @name (0: absent or
 * corrupt), as perf's auxtrace_info has them.
 */
__u64 rk_pt_field_mask(const struct rk_pt_desc *d, const char *name);

/** rk_pt_default_config() - perf's default for intel_pt//, as far as @d has it. */
__u64 rk_pt_default_config(const struct rk_pt_desc *d);

/**
 * rk_pt_parse_terms() - apply perf-style terms "tsc,mtc_period=3,cyc=0" to @config.
 * A term without a value sets 1; periods are checked against the caps bitmaps.
 * Return: 0, or -EINVAL with a message in @errbuf.
 */
int rk_pt_parse_terms(const struct rk_pt_desc *d, const char *terms, __u64 *config, char *errbuf,
		      size_t errlen);

/**
 * rk_pt_desc_time() - fill time_shift/time_mult/time_zero (TSC to perf
 * time) from a perf user page of this machine.
 * Return: 0, or -errno from perf_event_open/mmap.
 */
int rk_pt_desc_time(struct rk_pt_desc *d);

#endif /* RK_PTDESC_H */
