// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ptdesc.c - the intel_pt descriptor and config terms (see ptdesc.h). */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include "ptdesc.h"
#include "util.h"

static const char *const fmt_names[RK_PT_NFMT] = { RK_PT_FMT_NAMES };

int rk_pt_present(const char *sysdir)
{
	return !access(sysdir ? sysdir : RK_PT_SYSFS, F_OK);
}

static __u32 read_u32(const char *dir, const char *sub, const char *name)
{
	char path[512];
	uint64_t v = 0;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	if (rk_read_u64_file(path, &v))
		return 0;
	return (__u32)v;
}

/* A caps/ bitmap file is hex ("249" = 0x249). */
static __u32 read_hex(const char *dir, const char *name)
{
	char path[512];
	unsigned int v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/caps/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%x", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* format/NAME holds "config:LO" or "config:LO-HI". */
static void read_fmt(const char *dir, int i, struct rk_pt_desc *d)
{
	char path[512];
	unsigned int lo, hi;
	FILE *f;
	int n;

	if (!*fmt_names[i])
		return;
	snprintf(path, sizeof(path), "%s/format/%s", dir, fmt_names[i]);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fscanf(f, "config:%u-%u", &lo, &hi);
	fclose(f);
	if (n < 1 || lo > 63 || (n == 2 && (hi < lo || hi > 63)))
		return;
	d->fmt[i][0] = (__u8)lo;
	d->fmt[i][1] = (__u8)(n == 2 ? hi : lo);
	/* A field at bit 0 is told apart from "absent" by hi >= lo and the flag below. */
	d->fmt[i][1] |= 0x80;
}

int rk_pt_desc_read(struct rk_pt_desc *d, const char *sysdir)
{
	unsigned int a, b, c, dx;
	int i;

	memset(d, 0, sizeof(*d));
	if (!rk_pt_present(sysdir))
		return -ENOENT;
	d->size = sizeof(*d);
	d->version = RK_PT_DESC_VERSION;
	if (__get_cpuid(0, &a, &b, &c, &dx) && b == 0x756e6547 /* "Genu" */)
		d->cpu_vendor = RK_PT_VENDOR_INTEL;
	if (__get_cpuid(1, &a, &b, &c, &dx)) {
		d->cpu_family = (a >> 8) & 0xf;
		d->cpu_model = (a >> 4) & 0xf;
		d->cpu_stepping = a & 0xf;
		if (d->cpu_family == 0xf)
			d->cpu_family += (a >> 20) & 0xff;
		if (d->cpu_family == 0x6 || d->cpu_family == 0xf)
			d->cpu_model += ((a >> 16) & 0xf) << 4;
	}
	if (__get_cpuid_max(0, NULL) >= 0x15) {
		__cpuid(0x15, a, b, c, dx);
		d->cpuid_0x15_eax = a;
		d->cpuid_0x15_ebx = b;
	}
	d->max_nonturbo_ratio = read_u32(sysdir, "caps", "max_nonturbo_ratio");
	d->mtc_periods = read_hex(sysdir, "mtc_periods");
	d->cyc_thresholds = read_hex(sysdir, "cycle_thresholds");
	d->psb_periods = read_hex(sysdir, "psb_periods");
	d->num_address_ranges = read_u32(sysdir, "caps", "num_address_ranges");
	d->caps |= read_u32(sysdir, "caps", "psb_cyc") ? RK_PT_CAP_PSB_CYC : 0;
	d->caps |= read_u32(sysdir, "caps", "mtc") ? RK_PT_CAP_MTC : 0;
	d->caps |= read_u32(sysdir, "caps", "ip_filtering") ? RK_PT_CAP_IP_FILTERING : 0;
	d->caps |= read_u32(sysdir, "caps", "ptwrite") ? RK_PT_CAP_PTWRITE : 0;
	d->caps |= read_u32(sysdir, "caps", "power_event_trace") ? RK_PT_CAP_POWER_EVENT_TRACE : 0;
	d->caps |= read_u32(sysdir, "caps", "topa_output") ? RK_PT_CAP_TOPA_OUTPUT : 0;
	d->caps |= read_u32(sysdir, "caps", "single_range_output") ? RK_PT_CAP_SINGLE_RANGE_OUTPUT :
								     0;
	for (i = 0; i < RK_PT_NFMT; i++)
		read_fmt(sysdir, i, d);
	return 0;
}

/*
 * Format field @name of @d: its lowest config bit and its value mask (not
 * shifted). The descriptor comes from a file: a field read_fmt() could not
 * have written (lo > hi, a bit past 63) is corrupt, and shifting by it
 * would be undefined.
 * Return: 0, -ENOENT if the descriptor has no such field, -EINVAL if the
 * field is corrupt.
 */
static int find_field(const struct rk_pt_desc *d, const char *name, unsigned int *lo, __u64 *mask)
{
	int i;

	for (i = 0; i < RK_PT_NFMT; i++) {
		unsigned int hi = d->fmt[i][1] & 0x7f;

		if (!*fmt_names[i] || strcmp(fmt_names[i], name) || !(d->fmt[i][1] & 0x80))
			continue;
		*lo = d->fmt[i][0];
		if (*lo > hi || hi > 63)
			return -EINVAL;
		*mask = hi - *lo == 63 ? ~0ull : (1ull << (hi - *lo + 1)) - 1;
		return 0;
	}
	return -ENOENT;
}

long long rk_pt_config_field(const struct rk_pt_desc *d, const char *name, __u64 config)
{
	unsigned int lo;
	__u64 mask;

	if (find_field(d, name, &lo, &mask))
		return -1;
	return (long long)((config >> lo) & mask);
}

int rk_pt_config_set(const struct rk_pt_desc *d, const char *name, __u64 value, __u64 *config)
{
	unsigned int lo;
	__u64 mask;
	int err = find_field(d, name, &lo, &mask);

	if (err)
		return err;
	if (value & ~mask)
		return -ERANGE;
	*config = (*config & ~(mask << lo)) | value << lo;
	return 0;
}

__u64 rk_pt_field_mask(const struct rk_pt_desc *d, const char *name)
{
	unsigned int lo;
	__u64 mask;

	return find_field(d, name, &lo, &mask) ? 0 : mask << lo;
}

/* A period term is valid only if the caps/ bitmap of its PMU has that bit. */
static int period_ok(__u32 bitmap, __u64 v)
{
	return !bitmap || (v < 32 && (bitmap >> v) & 1);
}

__u64 rk_pt_default_config(const struct rk_pt_desc *d)
{
	__u64 c = 0;

	/* perf's default for intel_pt//: tsc,mtc,mtc_period=3,psb_period=3,pt,branch. */
	rk_pt_config_set(d, "tsc", 1, &c);
	if (d->caps & RK_PT_CAP_MTC && d->cpuid_0x15_eax && d->cpuid_0x15_ebx &&
	    period_ok(d->mtc_periods, 3)) {
		rk_pt_config_set(d, "mtc", 1, &c);
		rk_pt_config_set(d, "mtc_period", 3, &c);
	}
	if (d->psb_periods && period_ok(d->psb_periods, 3))
		rk_pt_config_set(d, "psb_period", 3, &c);
	rk_pt_config_set(d, "pt", 1, &c);
	rk_pt_config_set(d, "branch", 1, &c);
	return c;
}

int rk_pt_parse_terms(const struct rk_pt_desc *d, const char *terms, __u64 *config, char *errbuf,
		      size_t errlen)
{
	char buf[256], *save = NULL, *t;

	if (strlen(terms) >= sizeof(buf)) {
		snprintf(errbuf, errlen, "intel_pt terms too long");
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", terms);
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '='), *end;
		unsigned long long v = 1;
		int err;

		if (eq) {
			*eq = '\0';
			errno = 0;
			v = strtoull(eq + 1, &end, 0);
			if (errno || end == eq + 1 || *end) {
				snprintf(errbuf, errlen, "intel_pt term '%s': '%s' is not a number",
					 t, eq + 1);
				return -EINVAL;
			}
		}
		if ((!strcmp(t, "mtc_period") && !period_ok(d->mtc_periods, v)) ||
		    (!strcmp(t, "psb_period") && !period_ok(d->psb_periods, v)) ||
		    (!strcmp(t, "cyc_thresh") && !period_ok(d->cyc_thresholds, v))) {
			snprintf(errbuf, errlen,
				 "intel_pt term %s=%llu: not supported by this CPU (see "
				 "%s/caps/)",
				 t, v, RK_PT_SYSFS);
			return -EINVAL;
		}
		err = rk_pt_config_set(d, t, v, config);
		if (err == -ENOENT) {
			snprintf(errbuf, errlen,
				 "intel_pt has no term '%s' on this machine (see %s/format/)", t,
				 RK_PT_SYSFS);
			return -EINVAL;
		}
		if (err) {
			snprintf(errbuf, errlen, "intel_pt term %s=%llu: value too large", t, v);
			return -EINVAL;
		}
	}
	return 0;
}

int rk_pt_desc_time(struct rk_pt_desc *d)
{
	struct rk_perf_event_attr a;
	struct perf_event_mmap_page *pg;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = RK_PERF_ATTR_SIZE;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.exclude_kernel = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	pg = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
	if (pg == MAP_FAILED) {
		close(fd);
		return -errno;
	}
	if (pg->cap_user_time_zero) {
		d->time_shift = pg->time_shift;
		d->time_mult = pg->time_mult;
		d->time_zero = pg->time_zero;
	}
	munmap(pg, (size_t)sysconf(_SC_PAGESIZE));
	close(fd);
	return 0;
}
