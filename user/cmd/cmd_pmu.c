// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_pmu.c - ringkeeper pmu: the PMU descriptors ringkeeper records. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmd.h"
#include "evsel.h"
#include "pt.h"
#include "util.h"

int cmd_pmu(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper pmu [--json | --events]\n"
		"\n"
		"List the PMUs of this machine (/sys/bus/event_source/devices) and the PMU\n"
		"descriptor a buffer of each carries in its pmu_info: for intel_pt, what a\n"
		"decoder needs (CPU, CPUID 0x15, nominal ratio, caps, config bit layout);\n"
		"software and tracepoint PMUs have an empty descriptor.\n"
		"  --events  the event names record -e knows (one a line; tracepoints\n"
		"            are SYSTEM:EVENT of tracefs' available_events)\n";
	static const char *const fmt[RK_PT_NFMT] = { RK_PT_FMT_NAMES };
	const char *const dir = "/sys/bus/event_source/devices";
	int json = 0, events = 0, first = 1, r, i;
	struct dirent *de;
	char path[PATH_MAX + 300];
	DIR *d;

	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "events", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};

	struct cmd_line l;

	cmd_line_init(&l, argc, argv, "jh", lo, usage);
	while ((r = cmd_getopt(&l)) != -1) {
		if (r == 'j') {
			json = 1;
		} else if (r == 'e') {
			events = 1;
		} else if (r == 'h') {
			fputs(usage, stdout);
			return 0;
		} else {
			return 2;
		}
	}
	if (optind != argc)
		return cmd_bad(usage,
			       "unexpected argument '%s': it takes no PMU name (it lists "
			       "them all)",
			       argv[optind]);
	if (json && events)
		return cmd_bad(usage, "give --json or --events, not both");
	if (events) {
		const char *name;
		size_t k;

		for (k = 0; (name = rk_evsel_named(k)); k++)
			printf("%s\n", name);
		return 0;
	}
	d = opendir(dir);
	if (!d) {
		rk_err("cannot read %s: %s", dir, strerror(errno));
		return 1;
	}
	if (json)
		printf("[");
	while ((de = readdir(d))) {
		struct rk_pt_desc pd;
		uint64_t type = 0;
		int pt;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/type", dir, de->d_name);
		rk_read_u64_file(path, &type);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		pt = !strcmp(de->d_name, "intel_pt") && !rk_pt_desc_read(&pd, path);
		if (json) {
			printf("%s{\"name\":", first ? "" : ",");
			rk_json_str(stdout, de->d_name);
			printf(",\"type\":%llu,\"pmu_descsz\":%zu", (unsigned long long)type,
			       pt ? sizeof(pd) : (size_t)0);
			if (pt)
				printf(",\"cpu\":{\"family\":%u,\"model\":%u,\"stepping\":%u},"
				       "\"cpuid_0x15\":[%u,%u],\"max_nonturbo_ratio\":%u,"
				       "\"mtc_periods\":%u,\"caps\":%u,\"num_address_ranges\":%u",
				       pd.cpu_family, pd.cpu_model, pd.cpu_stepping,
				       pd.cpuid_0x15_eax, pd.cpuid_0x15_ebx, pd.max_nonturbo_ratio,
				       pd.mtc_periods, pd.caps, pd.num_address_ranges);
			printf("}");
			first = 0;
			continue;
		}
		printf("%-16s type %-4llu descriptor: %s\n", de->d_name, (unsigned long long)type,
		       pt ? "intel_pt v1" : "none (0 bytes)");
		if (!pt)
			continue;
		printf("  cpu family %u model %u stepping %u; cpuid 0x15 %u/%u; max_nonturbo_ratio %u\n",
		       pd.cpu_family, pd.cpu_model, pd.cpu_stepping, pd.cpuid_0x15_eax,
		       pd.cpuid_0x15_ebx, pd.max_nonturbo_ratio);
		printf("  mtc_periods %#x cyc_thresholds %#x psb_periods %#x caps %#x address ranges "
		       "%u\n  config:",
		       pd.mtc_periods, pd.cyc_thresholds, pd.psb_periods, pd.caps,
		       pd.num_address_ranges);
		for (i = 0; i < RK_PT_NFMT; i++)
			if (*fmt[i] && (pd.fmt[i][1] & 0x80))
				printf(" %s=%u-%u", fmt[i], pd.fmt[i][0], pd.fmt[i][1] & 0x7f);
		printf("\n");
	}
	closedir(d);
	if (json)
		printf("]\n");
	else if (!rk_pt_present(NULL))
		printf("intel_pt: not present on this machine\n");
	return 0;
}
