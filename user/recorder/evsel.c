// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>
#include "evsel.h"
#include "ptdesc.h"
#include "util.h"

/* perf's default sampling frequency. */
#define RK_DEFAULT_FREQ 4000

struct named {
	const char *name;
	__u32 type;
	__u64 config;
};

static const struct named events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	/* No samples: its rings carry the sideband (mmaps) alone (record --offcpu's default). */
	{ "dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
};

const char *rk_evsel_named(size_t i)
{
	return i < sizeof(events) / sizeof(events[0]) ? events[i].name : NULL;
}

static int tracepoint_id(const char *name, __u64 *id, char *errbuf, size_t errlen)
{
	char sys[64], ev[64], path[256];
	const char *colon = strchr(name, ':');
	uint64_t v;
	int err;

	if (!colon || colon == name || !colon[1] || (size_t)(colon - name) >= sizeof(sys) ||
	    strlen(colon + 1) >= sizeof(ev) || strchr(colon + 1, ':') || strchr(name, '/')) {
		snprintf(errbuf, errlen, "'%s': a tracepoint is SUBSYSTEM:EVENT", name);
		return -EINVAL;
	}
	memcpy(sys, name, (size_t)(colon - name));
	sys[colon - name] = '\0';
	snprintf(ev, sizeof(ev), "%s", colon + 1);
	if (!*rk_tracefs_dir() && geteuid() == 0 &&
	    !mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL))
		rk_info("mounted tracefs at /sys/kernel/tracing");
	if (!*rk_tracefs_dir()) {
		snprintf(
			errbuf, errlen,
			"'%s': tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)",
			name);
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", rk_tracefs_dir(), sys, ev);
	err = rk_read_u64_file(path, &v);
	if (err) {
		snprintf(errbuf, errlen,
			 "unknown tracepoint '%s' (no %s; 'perf list tracepoint' lists them)", name,
			 path);
		return -ENOENT;
	}
	*id = v;
	return 0;
}

/*
 * "cpu-clock:u": the modifier ("u", "k", "ku", "uk") of a non-tracepoint
 * event, its name without it in @base (64 bytes); NULL if @tok has none
 * (a tracepoint is SYSTEM:EVENT, and no event is named u or k).
 */
static const char *modifier(const char *tok, char *base)
{
	const char *c = strrchr(tok, ':');
	size_t i;

	if (!c || c == tok || strchr(tok, ':') != c || !c[1] || strlen(c + 1) > 2 ||
	    strspn(c + 1, "uk") != strlen(c + 1) || (size_t)(c - tok) >= 64)
		return NULL;
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (strlen(events[i].name) == (size_t)(c - tok) &&
		    !strncmp(events[i].name, tok, (size_t)(c - tok)))
			break;
	if (i == sizeof(events) / sizeof(events[0]))
		return NULL;
	if (base)
		snprintf(base, 64, "%.*s", (int)(c - tok), tok);
	return c + 1;
}

static void base_attr(struct rk_perf_event_attr *a, const struct rk_evsel_opts *o, int tracepoint)
{
	a->size = RK_PERF_ATTR_SIZE;
	a->sample_type = RK_EV_SAMPLE_TYPE;
	if (o->callgraph)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (tracepoint)
		a->sample_type |= PERF_SAMPLE_RAW;
	if (o->period) {
		a->sample_period = o->period;
	} else if (o->freq) {
		a->freq = 1;
		a->sample_freq = o->freq;
	} else if (tracepoint) {
		a->sample_period = 1;
	} else {
		a->freq = 1;
		a->sample_freq = RK_DEFAULT_FREQ;
	}
	a->sample_id_all = 1;
	a->inherit = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC; /* the clock of the BPF sched records */
	a->exclude_kernel = o->exclude_kernel ? 1 : 0;
	a->exclude_callchain_kernel = o->exclude_kernel ? 1 : 0;
	a->exclude_hv = 1;
}

/*
 * strtok_r on commas, except inside PMU/terms/ (perf's "intel_pt/tsc,mtc=0/u").
 * Empty tokens are skipped, as strtok_r does.
 */
static char *next_event(char *str, char **save)
{
	char *p = str ? str : *save, *start;
	int in_terms = 0;

	while (p && *p == ',')
		p++;
	if (!p || !*p) {
		*save = p;
		return NULL;
	}
	start = p;
	for (; *p; p++) {
		if (*p == '/')
			in_terms = !in_terms;
		else if (*p == ',' && !in_terms)
			break;
	}
	if (*p)
		*p++ = '\0';
	*save = p;
	return start;
}

/*
 * intel_pt/TERMS/[MODS]: perf's default config, then the terms; the
 * descriptor (cpuid, caps, format, TSC conversion) goes into the entry.
 */
static int pt_attr(const char *tok, const struct rk_evsel_opts *o, struct rk_evsel *ev,
		   char *errbuf, size_t errlen)
{
	const char *sysdir = o->pt_sysfs ? o->pt_sysfs : RK_PT_SYSFS;
	struct rk_perf_event_attr *a = &ev->entry.attr;
	const char *terms = tok + 9, *close = strchr(terms, '/'), *m;
	char path[512], tbuf[256];
	struct rk_pt_desc d;
	uint64_t type;
	int err;

	if (rk_pt_desc_read(&d, sysdir)) {
		snprintf(errbuf, errlen,
			 "'%s': the intel_pt PMU is not present on this machine (no %s)", tok,
			 sysdir);
		return -EOPNOTSUPP;
	}
	snprintf(path, sizeof(path), "%s/type", sysdir);
	if (rk_read_u64_file(path, &type)) {
		snprintf(errbuf, errlen, "'%s': cannot read %s", tok, path);
		return -EOPNOTSUPP;
	}
	if (!close || (size_t)(close - terms) >= sizeof(tbuf)) {
		snprintf(errbuf, errlen, "'%s': intel_pt/TERMS/ expected", tok);
		return -EINVAL;
	}
	memcpy(tbuf, terms, (size_t)(close - terms));
	tbuf[close - terms] = '\0';
	a->size = RK_PERF_ATTR_SIZE;
	a->type = (__u32)type;
	a->config = rk_pt_default_config(&d);
	err = rk_pt_parse_terms(&d, tbuf, &a->config, errbuf, errlen);
	if (err)
		return err;
	for (m = close + 1; *m; m++) {
		if (*m == 'u') {
			a->exclude_kernel = 1;
		} else if (*m == 'k') {
			a->exclude_user = 1;
		} else {
			snprintf(errbuf, errlen, "'%s': unknown modifier '%c' (u or k)", tok, *m);
			return -EINVAL;
		}
	}
	if (o->exclude_kernel)
		a->exclude_kernel = 1;
	a->sample_type = RK_EV_SAMPLE_TYPE;
	a->sample_period = 1; /* as perf: PT makes no samples, only AUX data */
	a->sample_id_all = 1;
	a->inherit = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->exclude_hv = 1;
	if (rk_pt_desc_time(&d))
		rk_info("intel_pt: no TSC conversion from a perf user page; timestamps stay raw");
	memcpy(ev->entry.desc, &d, sizeof(d));
	ev->entry.info.pmu_descsz = sizeof(d);
	ev->aux = 1;
	snprintf(ev->dir, sizeof(ev->dir), "intel_pt");
	return 0;
}

/*
 * @list with each SYSTEM:EVENT glob (sched:*, syscalls:sys_enter_*) replaced
 * by the tracepoints of this machine's tracefs it matches, sorted, as perf
 * does. Return: the new list (malloc'd), or NULL with @errbuf filled.
 */
static char *expand_globs(const char *list, char *errbuf, size_t errlen)
{
	char *copy = strdup(list), *save = NULL, *tok, *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int first = 1, bad = 0;

	if (!copy || !f) {
		free(copy);
		if (f)
			fclose(f);
		free(out);
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	for (tok = next_event(copy, &save); tok && !bad; tok = next_event(NULL, &save)) {
		const char *colon = strchr(tok, ':');
		char dir[PATH_MAX], pat[256];
		struct dirent **names = NULL;
		int nn, i, matched = 0;

		if (strchr(tok, '/') || !colon || !strpbrk(tok, "*?[")) {
			fprintf(f, "%s%s", first ? "" : ",", tok);
			first = 0;
			continue;
		}
		if (strpbrk(tok, "*?[") < colon || strchr(colon + 1, ':')) {
			snprintf(errbuf, errlen,
				 "'%s': a wildcard goes in the event name (sched:*)", tok);
			bad = 1;
			break;
		}
		snprintf(dir, sizeof(dir), "%s/events/%.*s", rk_tracefs_dir(), (int)(colon - tok),
			 tok);
		snprintf(pat, sizeof(pat), "%s", colon + 1);
		nn = *rk_tracefs_dir() ? scandir(dir, &names, NULL, alphasort) : -1;
		for (i = 0; i < nn; i++) {
			if (names[i]->d_name[0] != '.' && names[i]->d_type == DT_DIR &&
			    !fnmatch(pat, names[i]->d_name, 0)) {
				fprintf(f, "%s%.*s:%s", first ? "" : ",", (int)(colon - tok), tok,
					names[i]->d_name);
				first = 0;
				matched++;
			}
			free(names[i]);
		}
		free(names);
		if (!matched) {
			snprintf(errbuf, errlen, "'%s' matches no tracepoint%s", tok,
				 *rk_tracefs_dir() ? "" : " (tracefs is not mounted)");
			bad = 1;
		}
	}
	free(copy);
	fclose(f);
	if (bad) {
		free(out);
		return NULL;
	}
	return out;
}

int rk_evsel_parse(const char *list, const struct rk_evsel_opts *o, struct rk_evsel *out, int max,
		   int *n, char *errbuf, size_t errlen)
{
	char *copy, *save = NULL, *tok;
	int cnt = 0, err = 0;

	copy = expand_globs(list, errbuf, errlen);
	if (!copy)
		return -EINVAL;
	*n = 0;
	if (strchr(list, '/')) {
		/* A PMU event's terms hold commas: check its slashes pair up first. */
		size_t slashes = 0;
		const char *c;

		for (c = list; *c; c++)
			slashes += *c == '/';
		if (slashes % 2) {
			snprintf(errbuf, errlen, "'%s': PMU/terms/ without its closing '/'", list);
			free(copy);
			return -EINVAL;
		}
	}
	for (tok = next_event(copy, &save); tok; tok = next_event(NULL, &save)) {
		struct rk_evsel *ev;
		struct rk_perf_event_attr *a;
		size_t i;
		int k;

		if (cnt >= max) {
			snprintf(errbuf, errlen, "too many events (at most %d)%s", max,
				 strpbrk(list, "*?[") ? ": narrow the wildcard" : "");
			err = -EINVAL;
			goto out;
		}
		if (strlen(tok) >= sizeof(out->name)) {
			snprintf(errbuf, errlen, "event name too long: '%.40s...'", tok);
			err = -EINVAL;
			goto out;
		}
		for (k = 0; k < cnt; k++) {
			if (!strcmp(out[k].name, tok)) {
				snprintf(errbuf, errlen, "event '%s' given twice", tok);
				err = -EINVAL;
				goto out;
			}
		}
		ev = &out[cnt];
		memset(ev, 0, sizeof(*ev));
		snprintf(ev->name, sizeof(ev->name), "%s", tok);
		snprintf(ev->dir, sizeof(ev->dir), "%s", tok);
		ev->src = cnt + 1;
		ev->tracking = cnt == 0;
		ev->entry.info.note_size = RK_PMU_INFO_NOTE_SIZE;
		a = &ev->entry.attr;
		if (!strncmp(tok, "intel_pt/", 9)) {
			err = pt_attr(tok, o, ev, errbuf, errlen);
			if (err)
				goto out;
			for (k = 0; k < cnt; k++) {
				if (out[k].aux) {
					snprintf(errbuf, errlen,
						 "only one AUX event (intel_pt) per session");
					err = -EINVAL;
					goto out;
				}
			}
		} else if (strchr(tok, ':') && !modifier(tok, NULL)) {
			__u64 id;

			err = tracepoint_id(tok, &id, errbuf, errlen);
			if (err)
				goto out;
			a->type = PERF_TYPE_TRACEPOINT;
			a->config = id;
			base_attr(a, o, 1);
		} else {
			char base[64];
			const char *mod = modifier(tok, base);

			for (i = 0; i < sizeof(events) / sizeof(events[0]); i++)
				if (!strcmp(events[i].name, mod ? base : tok))
					break;
			if (i == sizeof(events) / sizeof(events[0])) {
				snprintf(
					errbuf, errlen,
					"unknown event '%s' (software: cpu-clock, task-clock, "
					"page-faults, context-switches, cpu-migrations, minor-faults, "
					"major-faults; hardware: cycles, instructions, branches, ...; "
					"tracepoints: SUBSYSTEM:EVENT)",
					tok);
				err = -EINVAL;
				goto out;
			}
			a->type = events[i].type;
			a->config = events[i].config;
			base_attr(a, o, 0);
			if (mod) {
				/* perf's modifiers: u user, k kernel (both: the default). */
				int u = !!strchr(mod, 'u'), kk = !!strchr(mod, 'k');

				a->exclude_user = kk && !u;
				a->exclude_kernel = u && !kk;
				a->exclude_callchain_kernel = a->exclude_kernel;
				/* The directory is the event's: show -e cpu-clock finds it. */
				snprintf(ev->dir, sizeof(ev->dir), "%s", base);
				for (k = 0; k < cnt; k++)
					if (!strcmp(out[k].dir, ev->dir)) {
						snprintf(errbuf, errlen, "event '%s' given twice",
							 base);
						err = -EINVAL;
						goto out;
					}
			}
		}
		if (ev->tracking) {
			/* mmap enables the records, mmap2 picks their format (as perf sets both). */
			a->mmap = 1;
			a->mmap2 = 1;
			a->comm = 1;
			a->comm_exec = 1;
			a->task = 1;
		}
		cnt++;
	}
	if (!cnt) {
		snprintf(errbuf, errlen, "-e: no event given");
		err = -EINVAL;
	}
out:
	free(copy);
	*n = err ? 0 : cnt;
	return err;
}

void rk_evsel_to_attr(const struct rk_evsel *ev, void *buf)
{
	memcpy(buf, &ev->entry.attr, RK_PERF_ATTR_SIZE);
}
