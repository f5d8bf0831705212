// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* main.c - the ringkeeper command line: record, ls, stat, show. */
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
#include "bufile.h"
#include "cli_record.h"
#include "coredump.h"
#include "elfcore.h"
#include "export.h"
#include "gc.h"
#include "pt.h"
#include "record.h"
#include "session.h"
#include "show.h"
#include "perfetto.h"
#include "schedsum.h"
#include "timeline.h"
#include "util.h"
#include "version.h"

/* Defined below; listed here so the command table can be at the top. */
static int cmd_ls(int argc, char **argv);
static int cmd_stat(int argc, char **argv);
static int cmd_show(int argc, char **argv);
static int cmd_export(int argc, char **argv);
static int cmd_sched(int argc, char **argv);
static int cmd_gc(int argc, char **argv);
static int cmd_rm(int argc, char **argv);
static int cmd_pmu(int argc, char **argv);

/*
 * Every command, as bpftool's struct cmd table: `ringkeeper --help` is
 * printed from it, so it cannot forget one.
 */
static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} cmds[] = {
	{ "record", rk_cmd_record, "trace a running process (-p PID) or a command (-- CMD ARGS)" },
	{ "ls", cmd_ls, "list sessions and their per-thread buffer files" },
	{ "stat", cmd_stat, "counters of a session (signals, drops, pins, locked bytes)" },
	{ "show", cmd_show, "print the records of one thread's buffer (FILE or TID)" },
	{ "export", cmd_export,
	  "write a session (or threads of it) as a perf.data file or a Perfetto trace" },
	{ "sched", cmd_sched, "per-thread scheduling summary: runs, on-CPU and off-CPU time" },
	{ "gc", cmd_gc, "remove the buffers of threads that exited long ago" },
	{ "rm", cmd_rm, "remove a session entirely" },
	{ "pmu", cmd_pmu, "the PMU descriptor ringkeeper records for an event" },
	{ "coredump", rk_cmd_coredump,
	  "install the core_pattern handler that puts buffers in cores" },
};

static void usage_main(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: ringkeeper COMMAND [OPTIONS]\n"
		   "\n"
		   "A per-thread flight recorder: every traced thread gets its own trace ring\n"
		   "buffer in a tmpfs file, locked in memory only while the thread runs.\n"
		   "\n"
		   "Commands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\nRun 'ringkeeper COMMAND --help' (or 'ringkeeper help COMMAND') for the\n"
		   "options of each; 'ringkeeper --version' for the version; man ringkeeper for\n"
		   "all of it.\n");
}

/* Session directories under @root, newest first (by stat start time). */
struct sess {
	char name[256];
	struct rk_session_stat st;
	int have_stat;
};

static int sess_cmp(const void *a, const void *b)
{
	const struct sess *x = a, *y = b;

	if (x->st.start_ns != y->st.start_ns)
		return x->st.start_ns < y->st.start_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int list_sessions(const char *root, struct sess **out, size_t *n)
{
	struct sess *v = NULL, *nv;
	struct dirent *de;
	size_t cnt = 0;
	char path[PATH_MAX];
	DIR *d = opendir(root);

	*out = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(v->name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", root, de->d_name, RK_SCHED_DIR);
		if (access(path, F_OK))
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		memset(&v[cnt], 0, sizeof(v[cnt]));
		snprintf(v[cnt].name, sizeof(v[cnt].name), "%s", de->d_name);
		snprintf(path, sizeof(path), "%s/%s", root, de->d_name);
		v[cnt].have_stat = !rk_session_stat_read(path, &v[cnt].st);
		cnt++;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), sess_cmp);
	*out = v;
	*n = cnt;
	return 0;
}

/* list_sessions(), saying what went wrong. Return: 0 or 1 (the exit status). */
static int sessions(const char *root, struct sess **v, size_t *n)
{
	int err = list_sessions(root, v, n);

	if (err)
		rk_err("cannot read %s: %s", root, strerror(-err));
	return err ? 1 : 0;
}

static int tid_cmp(const void *a, const void *b)
{
	unsigned long x = strtoul(*(char *const *)a, NULL, 10);
	unsigned long y = strtoul(*(char *const *)b, NULL, 10);

	if (x != y)
		return x < y ? -1 : 1;
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted numeric entries of @dir (tids or pids), malloc'd. */
static size_t dir_names(const char *dir, char ***out)
{
	char **names = NULL, **nn;
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn)
			break;
		names = nn;
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	if (d)
		closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), tid_cmp);
	*out = names;
	return n;
}

#define LS_MAX_SRC (RK_MAX_SRC + 2)

static int str_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* A session's sources: sched first, the -e events sorted, the sideband last. */
static size_t session_sources(const char *sdir, char src[][128])
{
	struct dirent *de;
	size_t n = 1;
	DIR *d = opendir(sdir);

	snprintf(src[0], 128, "%s", RK_SCHED_DIR);
	while (d && (de = readdir(d)) && n < LS_MAX_SRC - 1) {
		if (de->d_name[0] == '.' || de->d_type != DT_DIR ||
		    !strcmp(de->d_name, RK_SCHED_DIR) || !strcmp(de->d_name, RK_SIDEBAND_DIR) ||
		    strlen(de->d_name) >= 128)
			continue;
		snprintf(src[n++], 128, "%s", de->d_name);
	}
	if (d)
		closedir(d);
	qsort(src + 1, n - 1, sizeof(src[0]), str_cmp);
	snprintf(src[n], 128, "%s", RK_SIDEBAND_DIR);
	return n + 1;
}

static const char *sess_state(const struct sess *s)
{
	return !s->have_stat		       ? "no-stat" :
	       rk_session_alive(&s->st)	       ? "running" :
	       s->st.state == RK_SESSION_ENDED ? "ended" :
						 "dead-loader";
}

/* The command as one line: bytes outside ' '..'~' (a newline) as \xNN. */
static void print_command(const char *c)
{
	for (; *c; c++) {
		unsigned char ch = (unsigned char)*c;

		if (ch < ' ' || ch > '~' || ch == '\\')
			printf("\\x%02x", ch);
		else
			putchar(ch);
	}
}

/*
 * One session: a header (state, start, how long, threads, sources, command),
 * then a row per buffer file of every source. A file that cannot be read is
 * said on stderr. Return: the files that could not be read.
 */
/*
 * @denied: files the caller may not read (another user's or root's, by the
 * kernel's rules): counted, not listed, not an error.
 */
static int ls_session(const char *root, const struct sess *s, int json, int *first,
		      unsigned long *denied)
{
	char sdir[PATH_MAX], dir[PATH_MAX + 200], path[PATH_MAX + 500], src[LS_MAX_SRC][128];
	char sub[PATH_MAX + 200];
	char when[64] = "?", b1[32];
	size_t nsrc = 0, k, i, nthreads;
	int bad = 0, firstf = 1;
	__u64 dur = 0;
	char **names;

	snprintf(sdir, sizeof(sdir), "%s/%s", root, s->name);
	nsrc = session_sources(sdir, src);
	snprintf(dir, sizeof(dir), "%s/%s", sdir, RK_SCHED_DIR);
	nthreads = dir_names(dir, &names);
	for (i = 0; i < nthreads; i++)
		free(names[i]);
	free(names);
	if (s->have_stat && s->st.start_ns) {
		__u64 end = rk_session_alive(&s->st) ? rk_now_real_ns() : s->st.update_ns;

		/* "?" stays if the time does not format. */
		rk_fmt_utc(s->st.start_ns, json ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M:%S UTC",
			   when, sizeof(when));
		dur = end > s->st.start_ns ? end - s->st.start_ns : 0;
	}
	if (json) {
		printf("%s{\"session\":", *first ? "" : ",\n");
		rk_json_str(stdout, s->name);
		printf(",\"state\":\"%s\",\"start_time\":\"%s\",\"duration_ns\":%llu,\"threads\":%zu,"
		       "\"command\":",
		       sess_state(s), when, (unsigned long long)dur, nthreads);
		rk_json_str(stdout, s->have_stat ? s->st.command : "");
		printf(",\"sources\":[");
		for (k = 0; k < nsrc; k++) {
			printf("%s", k ? "," : "");
			rk_json_str(stdout, src[k]);
		}
		printf("],\"files\":[");
		*first = 0;
	} else {
		printf("%s  %s  started %s, %.1f s, %zu threads, sources ", s->name, sess_state(s),
		       when, dur / 1e9, nthreads);
		for (k = 0; k < nsrc; k++)
			printf("%s%s", k ? "," : "", src[k]);
		printf("\n  command: ");
		print_command(s->have_stat ? s->st.command : "");
		printf("\n  %8s %8s %-16s %-9s %-6s %-20s %10s %10s  %s\n", "TID", "TGID", "COMM",
		       "STATE", "PINNED", "SOURCE", "BYTES", "RING", "FILE");
	}
	for (k = 0; k < nsrc; k++) {
		snprintf(sub, sizeof(sub), "%s/%.127s", sdir, src[k]);
		nthreads = dir_names(sub, &names);
		for (i = 0; i < nthreads; i++) {
			const char *msg = NULL;
			struct rk_bufile *bf;
			__u64 head, tail, used;
			char comm[RK_COMM_LEN];
			const char *state;
			int pinned;

			snprintf(path, sizeof(path), "%s/%s", sub, names[i]);
			bf = rk_bufile__open(path, &msg);
			if (!bf && (errno == EACCES || errno == EPERM)) {
				(*denied)++;
				continue;
			}
			if (!bf) {
				rk_err("%s: %s", path, msg ? msg : strerror(errno));
				bad++;
				continue;
			}
			pinned = (int)__atomic_load_n(&bf->ident->pinned, __ATOMIC_RELAXED) &&
				 s->have_stat && rk_session_alive(&s->st);
			/* Checked at open; a live pair that went bad since reads as empty. */
			used = rk_bufile__ring(bf, &head, &tail) ? 0 : head - tail;
			memcpy(comm, bf->ident->comm, sizeof(comm));
			comm[RK_COMM_LEN - 1] = '\0';
			/* A process's sideband has no thread state of its own. */
			state = strcmp(src[k], RK_SIDEBAND_DIR) ?
					rk_thread_state_name(bf->ident->state) :
					"-";
			if (json) {
				printf("%s{\"source\":", firstf ? "" : ",");
				rk_json_str(stdout, src[k]);
				printf(",\"tid\":%u,\"tgid\":%u,\"comm\":", bf->ident->tid,
				       bf->ident->tgid);
				rk_json_str(stdout, comm);
				printf(",\"state\":\"%s\",\"pinned\":%s,\"bytes\":%llu,"
				       "\"ring\":%llu,\"file\":",
				       state, pinned ? "true" : "false", (unsigned long long)used,
				       (unsigned long long)bf->data_size);
				rk_json_str(stdout, path);
				printf("}");
				firstf = 0;
			} else {
				printf("  %8u %8u %-16s %-9s %-6s %-20s %10llu %10s  %s\n",
				       bf->ident->tid, bf->ident->tgid, comm, state,
				       pinned ? "yes" : "no", src[k], (unsigned long long)used,
				       rk_fmt_size(bf->data_size, b1, sizeof(b1)), path);
			}
			rk_bufile__free(bf);
		}
		for (i = 0; i < nthreads; i++)
			free(names[i]);
		free(names);
	}
	if (json)
		printf("]}");
	return bad;
}

/* show -e: which source's buffers a TID is looked up in; --pt: dump the AUX area. */
static const char *show_event = RK_SCHED_DIR;
static int show_pt;
static const char *show_core;

/* --time START,END / --last DURATION: what show and sched take of a history. */
struct twin {
	uint64_t lo, hi, last;
	int set;
};

#define TWIN_LONGOPTS                                \
	{ "time", required_argument, NULL, 'T' },    \
	{                                            \
		"last", required_argument, NULL, 'L' \
	}

/* Return: 1 taken, 0 not ours, -1 a bad value (said). */
static int twin_opt(struct twin *w, int c, const char *arg)
{
	if ((c == 'T' || c == 'L') && w->set) {
		rk_err("--time and --last: one of them, once");
		return -1;
	}
	if (c == 'T') {
		if (rk_parse_time_window(arg, &w->lo, &w->hi)) {
			rk_err("--time: '%s' is not START,END in seconds, END not before START "
			       "(either may be left out)",
			       arg);
			return -1;
		}
		w->set = 1;
		return 1;
	}
	if (c == 'L') {
		if (rk_parse_duration_ns(arg, &w->last)) {
			rk_err("--last: '%s' is not a duration (500ms, 2s, 10m, 1h)", arg);
			return -1;
		}
		w->set = 1;
		return 1;
	}
	return 0;
}

/* The window in ns, once the newest event (@end) is known; everything if none was asked. */
static void twin_resolve(struct twin *w, uint64_t end)
{
	if (w->last) {
		w->hi = end;
		w->lo = end > w->last ? end - w->last : 0;
	} else if (!w->set) {
		w->lo = 0;
		w->hi = ~0ull;
	}
}

/* show's --time / --last. */
static struct twin show_twin;

static int common_opts(int argc, char **argv, const char *usage, int *json, const char **root,
		       const char **session, int *all)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "root", required_argument, NULL, 'r' },
		{ "session", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "event", required_argument, NULL, 'e' },
		{ "pt", optional_argument, NULL, 'P' },
		{ "core", required_argument, NULL, 'C' },
		TWIN_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "+jr:s:ae:h", lo, NULL)) != -1) {
		switch (c) {
		case 'T':
		case 'L':
			if (!session)
				goto bad;
			if (twin_opt(&show_twin, c, optarg) < 0)
				return -2;
			break;
		case 'e': {
			char *c = strrchr(optarg, ':');

			if (!session || strchr(optarg, '/'))
				goto bad;
			/* cpu-clock:u was recorded as cpu-clock (perf's modifiers). */
			if (c && c[1] && strspn(c + 1, "uk") == strlen(c + 1) && strlen(c + 1) <= 2)
				*c = '\0';
			show_event = optarg;
			break;
		}
		case 'C':
			if (!session)
				goto bad;
			show_core = optarg;
			break;
		case 'P':
			if (!session)
				goto bad;
			if (!optarg || !strcmp(optarg, "packets")) {
				show_pt = 1;
			} else if (!strcmp(optarg, "insn")) {
				show_pt = 2;
			} else if (!strcmp(optarg, "branches")) {
				show_pt = 3;
			} else {
				rk_err("--pt=%s: packets, insn or branches", optarg);
				return -2;
			}
			break;
		case 'j':
			*json = 1;
			break;
		case 'r':
			*root = optarg;
			break;
		case 's':
			if (!session)
				goto bad;
			*session = optarg;
			break;
		case 'a':
			if (!all)
				goto bad;
			*all = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			goto bad;
		}
	}
	return 1;
bad:
	fputs(usage, stderr);
	return -2;
}

static int cmd_ls(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper ls [--json] [--root DIR] [SESSION...]\n"
		"\n"
		"List sessions (newest first): state, start (UTC), how long it recorded,\n"
		"threads, sources (sched, each -e event, sideband) and command; then one line\n"
		"per buffer file of every source: tid, tgid, comm, state\n"
		"(live/exiting/exited/stopped/execed/crashed), whether it is locked in memory\n"
		"now, source, bytes of records held, ring size, file. Files you may not read\n"
		"(other users' threads) are counted in one line on stderr; a file that does\n"
		"not parse is reported on stderr and makes the exit status 1.\n"
		"  --json  an array of sessions, each with its files\n";
	const char *root = RK_DEFAULT_ROOT;
	struct sess *v;
	size_t n, i;
	int json = 0, first = 1, r, bad = 0, k;
	unsigned long denied = 0;

	r = common_opts(argc, argv, usage, &json, &root, NULL, NULL);
	if (r <= 0)
		return -r;
	if (sessions(root, &v, &n))
		return 1;
	for (k = optind; k < argc; k++) {
		for (i = 0; i < n && strcmp(argv[k], v[i].name); i++)
			;
		if (i == n) {
			rk_err("no session '%s' in %s (ringkeeper ls lists them)", argv[k], root);
			bad++;
		}
	}
	if (json)
		printf("[");
	for (i = 0; i < n; i++) {
		int want = optind >= argc;

		for (k = optind; k < argc; k++)
			want |= !strcmp(argv[k], v[i].name);
		if (!want)
			continue;
		bad += ls_session(root, &v[i], json, &first, &denied);
	}
	if (json)
		printf("]\n");
	if (denied)
		fprintf(stderr,
			"ringkeeper: %lu buffer file%s not listed: not yours to read (each follows "
			"its thread's user's rights, as ptrace does; root sees them all)\n",
			denied, denied == 1 ? "" : "s");
	else if (!n)
		printf("no sessions in %s\n", root);
	free(v);
	return bad ? 1 : 0;
}

static int cmd_stat(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper stat [--json] [--root DIR] [--all | SESSION]\n"
		"\n"
		"Counters of a session (default: the newest): BPF signals and ringbuf drops,\n"
		"records written and overwritten, threads, pins, unpins, refusals by the\n"
		"budget, locked bytes now and peak against the budget, the loader's VmLck peak;\n"
		"then each crash of a traced process the core handler saw: pid, comm, the\n"
		"thread the signal was delivered to, the signal, when (seconds since the\n"
		"epoch) and where its core went (JSON: \"crashes_seen\", core null if nowhere).\n"
		"  --json  an array of sessions; the keys are the names the text prints first\n";
	char dir[PATH_MAX + 300];
	const char *root = RK_DEFAULT_ROOT;
	struct sess *v;
	size_t n, i;
	int json = 0, all = 0, r, shown = 0;

	r = common_opts(argc, argv, usage, &json, &root, NULL, &all);
	if (r <= 0)
		return -r;
	if (sessions(root, &v, &n))
		return 1;
	for (i = 0; i < n; i++) {
		if (optind < argc ? strcmp(argv[optind], v[i].name) : (!all && shown))
			continue;
		if (!v[i].have_stat) {
			rk_err("session %s has no readable stat file", v[i].name);
			continue;
		}
		snprintf(dir, sizeof(dir), "%s/%s", root, v[i].name);
		/* JSON: one array of sessions, as ls --json. */
		if (json)
			fputs(shown ? "," : "[", stdout);
		rk_session_print(stdout, v[i].name, &v[i].st, json, dir);
		shown++;
	}
	free(v);
	if (json && shown)
		fputs("]\n", stdout);
	if (!shown) {
		if (optind < argc)
			rk_err("no session %s in %s (ringkeeper ls lists them)", argv[optind],
			       root);
		else
			rk_err("no sessions in %s", root);
		return 1;
	}
	return 0;
}

/* Symbols of a thread file's process: <session>/sideband/<tgid> next to <session>/<src>/<tid>. */
static struct rk_symbols *thread_symbols(const char *path, const struct rk_bufile *bf)
{
	char sb[PATH_MAX + 400], *p;

	snprintf(sb, sizeof(sb), "%s", path);
	p = strrchr(sb, '/');
	if (p) {
		*p = '\0';
		p = strrchr(sb, '/');
	}
	if (!p)
		return rk_symbols__new(NULL);
	snprintf(p + 1, sizeof(sb) - (size_t)(p + 1 - sb), "%s/%u", RK_SIDEBAND_DIR,
		 bf->ident->tgid);
	return rk_symbols__new(sb);
}

/*
 * The format of @bf's tracepoint (NULL if it is none): from the session's
 * saved tracing data (@path is SESSION/SYSTEM:EVENT/TID; a core's buffers
 * have no session) or this machine's tracefs if the id matches.
 */
static const struct rk_tp_format *tp_format_for(const char *path, const struct rk_bufile *bf,
						int in_session, struct rk_tp_format *buf)
{
	char dir[PATH_MAX + 400], *slash, *ev;

	if (bf->pmu->attr.type != PERF_TYPE_TRACEPOINT)
		return NULL;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	slash = strrchr(dir, '/');
	ev = slash ? slash + 1 : dir;
	if (slash)
		*slash = '\0';
	if (!rk_tp_format_lookup(in_session && slash ? dir : NULL, ev, bf->pmu->attr.config, buf))
		return buf;
	rk_warn("%s: no format for tracepoint id %llu (not in the session, not this kernel's): "
		"its fields are not shown",
		path, (unsigned long long)bf->pmu->attr.config);
	return NULL;
}

/* show --pt: the AUX area of @bf as packets, instructions or branches. */
static int show_pt_trace(const char *path, struct rk_bufile *bf)
{
	struct rk_symbols *syms = NULL;
	struct pt_image *img = NULL;
	struct pt_config cfg;
	const char *why = NULL;
	__u64 aux_off = 0;
	int ret = 0;
	ssize_t n;
	long pk;
	__u8 *aux;

	if (!bf->aux_size) {
		rk_err("%s has no AUX area: not an Intel PT buffer", path);
		return 1;
	}
	if (rk_pt_config(bf->pmu->desc, bf->pmu->info.pmu_descsz, bf->pmu->attr.config, &cfg,
			 &why)) {
		rk_err("%s: cannot decode its Intel PT: %s", path, why);
		return 1;
	}
	aux = malloc(bf->aux_size);
	n = aux ? rk_bufile__read_aux(bf, aux, bf->aux_size, &aux_off) : -ENOMEM;
	if (n < 0) {
		rk_err("%s: %s", path, strerror((int)-n));
		free(aux);
		return 1;
	}
	if (show_pt == 1) {
		pk = rk_pt_dump(stdout, aux, (size_t)n, aux_off, &cfg);
	} else {
		int nmaps = 0, ncore = 0;
		const char *why_core = NULL;

		syms = thread_symbols(path, bf);
		img = pt_image_alloc(path);
		if (syms && img)
			nmaps = rk_pt_image_add_maps(img, syms);
		if (!syms || !img) {
			pk = -pte_nomem;
		} else if (show_core &&
			   (ncore = rk_pt_image_add_core(img, show_core, &why_core)) <= 0) {
			rk_err("--core %s: %s", show_core, why_core);
			pk = 0;
			ret = 1;
		} else {
			if (!nmaps && !ncore)
				rk_err("%s: no mapped files in the sideband of process %u (and no "
				       "--core): only events decode",
				       path, bf->ident->tgid);
			pk = rk_pt_insn(stdout, aux, (size_t)n, aux_off, &cfg, img, syms,
					show_pt == 3 ? RK_PT_BRANCHES : RK_PT_INSN);
		}
		pt_image_free(img);
		rk_symbols__free(syms);
	}
	free(aux);
	if (pk < 0) {
		rk_err("%s: %s", path, pt_errstr(pt_errcode((int)pk)));
		return 1;
	}
	return ret;
}

/* Which buffer of a core: SOURCE/TID from the session note, or the sched one by its attr. */
static int core_buf_matches(const struct rk_core_buf *cb, unsigned long tid)
{
	char want[80];

	if (cb->why || cb->type != RK_NOTE_BUFFER || cb->bf.ident->tid != tid)
		return 0;
	snprintf(want, sizeof(want), "%s/%lu", show_event, tid);
	if (cb->name[0])
		return !strcmp(cb->name, want);
	return !strcmp(show_event, RK_SCHED_DIR) && cb->bf.pmu->attr.context_switch;
}

/*
 * show --core CORE [TID]: the buffers a core carries (no TID), or one of
 * them, read from the core alone.
 */
static int show_from_core(const char *tid_s, int json)
{
	struct rk_core_bufs b;
	const char *why = NULL;
	unsigned long long tid;
	char comm[RK_COMM_LEN];
	size_t i;
	int r = 1, err;

	err = rk_core_bufs__load(show_core, &b, &why);
	if (err) {
		rk_err("--core %s: %s", show_core, why ? why : strerror(-err));
		return 1;
	}
	if (!tid_s) {
		printf("core %s: %zu ringkeeper buffers\n", show_core, b.n);
		for (i = 0; i < b.n; i++) {
			const struct rk_core_buf *cb = &b.v[i];

			if (cb->why) {
				printf("  %-24s (not a valid buffer: %s)\n", cb->name, cb->why);
				continue;
			}
			snprintf(comm, sizeof(comm), "%s", cb->bf.ident->comm);
			printf("  %-24s tid %-7u tgid %-7u %-16s %s\n",
			       cb->name[0]		    ? cb->name :
			       cb->type == RK_NOTE_SIDEBAND ? "sideband" :
							      "?",
			       cb->bf.ident->tid, cb->bf.ident->tgid, rk_strip_controls(comm),
			       rk_thread_state_name(cb->bf.ident->state));
		}
		if (b.skipped)
			printf("  (%zu more buffer notes not read: a reader takes %d at most)\n",
			       b.skipped, RK_CORE_MAX_BUFS);
		/* A core with buffers lists them: success; one with none: 1, as for a TID. */
		r = b.n ? 0 : 1;
		rk_core_bufs__free(&b);
		return r;
	}
	if (rk_parse_uint(tid_s, UINT32_MAX, &tid)) {
		rk_err("show --core: '%s' is not a tid", tid_s);
		rk_core_bufs__free(&b);
		return 2;
	}
	for (i = 0; i < b.n; i++) {
		struct rk_core_buf *cb = &b.v[i];

		if (!core_buf_matches(cb, (unsigned long)tid))
			continue;
		if (show_pt) {
			r = show_pt_trace(cb->name, &cb->bf);
		} else {
			/* Sample addresses resolve through the process's sideband note. */
			struct rk_symbols *syms = rk_symbols__new(NULL);
			struct rk_tp_format tpf;
			size_t k;

			for (k = 0; syms && k < b.n; k++)
				if (b.v[k].type == RK_NOTE_SIDEBAND && !b.v[k].why &&
				    b.v[k].bf.ident->tgid == cb->bf.ident->tgid)
					rk_symbols__add_sideband(syms, &b.v[k].bf);
			twin_resolve(&show_twin, show_twin.last ? rk_show_end(&cb->bf) : 0);
			r = rk_show_range(stdout, &cb->bf, cb->name, json, syms,
					  tp_format_for(cb->name, &cb->bf, 0, &tpf), NULL,
					  show_twin.lo, show_twin.hi) ?
				    1 :
				    0;
			rk_symbols__free(syms);
		}
		break;
	}
	if (i == b.n)
		rk_err("core %s has no %s buffer of tid %llu (ringkeeper show --core %s lists them)",
		       show_core, show_event, tid, show_core);
	rk_core_bufs__free(&b);
	return r;
}

static int cmd_show(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper show [--json] [--root DIR] [--session S] [-e EVENT] FILE|TID\n"
		"       ringkeeper show --core CORE [-e EVENT] [TID]\n"
		"\n"
		"Print one thread's buffer using only the file: identity, pmu_info (the attr\n"
		"that says how to parse it), then every record from data_tail to data_head,\n"
		"oldest first, in perf script's layout; sample addresses are resolved through\n"
		"the sideband of the thread's process and the mapped files. A TID is looked up\n"
		"in the newest session that has it (or in --session), in the sched buffers or,\n"
		"with -e, in those of that event (e.g. -e cpu-clock).\n"
		"  --pt[=packets|insn|branches]\n"
		"         decode the AUX area as Intel PT, configured by the intel_pt\n"
		"         descriptor in the file's own pmu_info, from its oldest PSB on:\n"
		"         packets (like ptdump; the default), instructions (like ptxed) or\n"
		"         taken branches; insn and branches read the code from the files the\n"
		"         process had mapped (its sideband's MMAP2 records), as they are on\n"
		"         disk now; kernel code is not decoded (an error line, then resync)\n"
		"  --core CORE\n"
		"         read the buffers from this ELF core dump's RINGKEEPER notes: without\n"
		"         a TID, list them; with one, show its buffer (-e: of that event). With\n"
		"         --pt=insn|branches, the code also comes from the core's memory (it\n"
		"         wins over the files where both have an address), also for a FILE\n"
		"  --json one JSON document: {\"thread\": identity and pmu_info, \"records\":\n"
		"         [one per line]}; addresses as hex strings (schema: man ringkeeper)\n"
		"  --time START,END\n"
		"         only the records timed within it: seconds of the recorded clock, as\n"
		"         shown (START or END may be left out)\n"
		"  --last DURATION\n"
		"         only the records of the last DURATION (500ms, 2s, 10m, 1h) before the\n"
		"         newest one\n";
	const char *root = RK_DEFAULT_ROOT, *session = NULL, *msg = NULL;
	char path[PATH_MAX + 300];
	struct rk_symbols *syms = NULL;
	struct rk_tp_format tpf;
	struct rk_bufile *bf;
	int json = 0, r, err;

	r = common_opts(argc, argv, usage, &json, &root, &session, NULL);
	if (r <= 0)
		return -r;
	/* From a core alone: a TID (or nothing) rather than a buffer file. */
	if (show_core &&
	    (optind == argc ||
	     (optind == argc - 1 && strspn(argv[optind], "0123456789") == strlen(argv[optind]) &&
	      access(argv[optind], F_OK))))
		return show_from_core(optind < argc ? argv[optind] : NULL, json);
	if (optind != argc - 1) {
		fputs(usage, stderr);
		return 2;
	}
	snprintf(path, sizeof(path), "%s", argv[optind]);
	if (strspn(argv[optind], "0123456789") == strlen(argv[optind]) && access(path, F_OK)) {
		struct sess *v;
		size_t n, i;

		int have_session = 0, have_event = 0;

		if (sessions(root, &v, &n))
			return 1;
		path[0] = '\0';
		for (i = 0; i < n && !path[0]; i++) {
			char p[PATH_MAX + 300];

			if (session && strcmp(session, v[i].name))
				continue;
			have_session = 1;
			snprintf(p, sizeof(p), "%s/%s/%s", root, v[i].name, show_event);
			have_event |= !access(p, F_OK);
			snprintf(p, sizeof(p), "%s/%s/%s/%s", root, v[i].name, show_event,
				 argv[optind]);
			if (!access(p, F_OK))
				snprintf(path, sizeof(path), "%s", p);
		}
		free(v);
		/* Say which of the three was not there: the session, the event, the tid. */
		if (!n) {
			rk_err("no sessions in %s: nothing to show tid %s from", root,
			       argv[optind]);
			return 1;
		}
		if (!path[0] && session && !have_session) {
			rk_err("no session '%s' in %s (ringkeeper ls lists them)", session, root);
			return 1;
		}
		if (!path[0] && !have_event) {
			rk_err("%s%s recorded no event '%s' (ringkeeper ls shows each session's "
			       "sources; -e takes one of them)",
			       session ? "session " : "no session in ", session ? session : root,
			       show_event);
			return 1;
		}
		if (!path[0]) {
			rk_err("no %s buffer for tid %s in %s%s%s (ringkeeper ls lists the threads)",
			       show_event, argv[optind], root, session ? " session " : "",
			       session ? session : "");
			return 1;
		}
	}
	bf = rk_bufile__open(path, &msg);
	if (!bf) {
		if (errno == EBADMSG && msg)
			rk_err("%s is not a valid ringkeeper buffer: %s", path, msg);
		else
			rk_err("cannot read %s: %s", path, strerror(errno));
		return 1;
	}
	if (show_core && show_pt < 2) {
		rk_err("--core needs --pt=insn or --pt=branches");
		rk_bufile__free(bf);
		return 2;
	}
	if (show_pt) {
		r = show_pt_trace(path, bf);
		rk_bufile__free(bf);
		return r;
	}
	/* Addresses resolve through the sideband of the thread's process. */
	if (bf->pmu->attr.sample_type & PERF_SAMPLE_IP)
		syms = thread_symbols(path, bf);
	twin_resolve(&show_twin, show_twin.last ? rk_show_end(bf) : 0);
	err = rk_show_range(stdout, bf, path, json, syms, tp_format_for(path, bf, 1, &tpf), NULL,
			    show_twin.lo, show_twin.hi);
	rk_symbols__free(syms);
	rk_bufile__free(bf);
	if (err) {
		rk_err("%s: records do not parse past the point shown (%s)", path, strerror(-err));
		return 1;
	}
	return 0;
}

/* Remove a directory made by rk_core_bufs__extract(): its subdirectories' files, them, it. */
static void remove_extracted(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		char sub[PATH_MAX + 300];
		struct dirent *fe;
		DIR *s;

		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		s = opendir(sub);
		while (s && (fe = readdir(s))) {
			char f[PATH_MAX + 600];

			if (fe->d_name[0] == '.')
				continue;
			snprintf(f, sizeof(f), "%s/%s", sub, fe->d_name);
			unlink(f);
		}
		if (s)
			closedir(s);
		rmdir(sub);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* What perf.data cannot carry is said, not dropped silently. */
static void export_crash_note(const struct rk_export_stats *es)
{
	if (es->crashes)
		fprintf(stderr,
			"ringkeeper: %llu crash records (one per thread of a crashed process) are "
			"not in it: perf.data has no such record; `ringkeeper show` and `stat` "
			"print them\n",
			es->crashes);
	if (es->wakeups)
		fprintf(stderr,
			"ringkeeper: %llu wakeup records are not in it: perf.data has no such "
			"record; `ringkeeper sched` sums them (sch delay), `show` prints them\n",
			es->wakeups);
}

/*
 * Where export and sched read from: a session (by name, or the newest) under
 * a root, or an ELF core dump's buffers (extracted into a directory of the
 * same layout); which threads (tid, pid: 0 all). The options are theirs.
 */
struct from {
	const char *root, *session, *core;
	unsigned long long tid, pid;
	char dir[PATH_MAX]; /* the session's directory, or the core's buffers */
	char cdir[32]; /* the core's buffers (mkdtemp), "" if none */
};

#define FROM_OPTS "t:p:s:r:"
#define FROM_LONGOPTS                                                                     \
	{ "tid", required_argument, NULL, 't' }, { "pid", required_argument, NULL, 'p' }, \
		{ "session", required_argument, NULL, 's' },                              \
		{ "root", required_argument, NULL, 'r' },                                 \
	{                                                                                 \
		"core", required_argument, NULL, 'C'                                      \
	}

/* One of from's options: 1 taken, 0 not one of them, -2 a bad value (reported). */
static int from_opt(struct from *f, int c, const char *arg)
{
	unsigned long long v;

	switch (c) {
	case 't':
	case 'p':
		if (rk_parse_uint(arg, INT_MAX, &v) || !v) {
			rk_err("--%s: not a %s: '%s'", c == 't' ? "tid" : "pid",
			       c == 't' ? "tid" : "pid", arg);
			return -2;
		}
		*(c == 't' ? &f->tid : &f->pid) = v;
		return 1;
	case 's':
		f->session = arg;
		return 1;
	case 'r':
		f->root = arg;
		return 1;
	case 'C':
		f->core = arg;
		return 1;
	}
	return 0;
}

/* f->dir from f's options. Return: 0, or 1 (reported). */
static int from_open(struct from *f)
{
	struct rk_core_bufs b;
	const char *why = NULL;
	struct sess *sv;
	size_t n, i;
	int k, err;

	if (!f->core) {
		if (sessions(f->root, &sv, &n))
			return 1;
		for (i = 0; i < n && f->session && strcmp(sv[i].name, f->session); i++)
			;
		if (i == n) {
			if (f->session)
				rk_err("no session %s in %s (ringkeeper ls lists them)", f->session,
				       f->root);
			else
				rk_err("no sessions in %s", f->root);
			free(sv);
			return 1;
		}
		snprintf(f->dir, sizeof(f->dir), "%s/%s", f->root, sv[i].name);
		free(sv);
		return 0;
	}
	err = rk_core_bufs__load(f->core, &b, &why);
	if (err) {
		rk_err("--core %s: %s", f->core, why ? why : strerror(-err));
		return 1;
	}
	snprintf(f->cdir, sizeof(f->cdir), "/tmp/ringkeeper-core-XXXXXX");
	if (!mkdtemp(f->cdir)) {
		rk_err("cannot make a directory for the core's buffers: %s", strerror(errno));
		f->cdir[0] = '\0';
		rk_core_bufs__free(&b);
		return 1;
	}
	k = rk_core_bufs__extract(&b, f->cdir);
	rk_core_bufs__free(&b);
	if (k <= 0) {
		rk_err("--core %s: %s", f->core,
		       k ? strerror(-k) : "no ringkeeper buffer in it (ringkeeper show --core)");
		return 1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s", f->cdir);
	return 0;
}

/* What from_open() extracted, removed. */
static void from_close(struct from *f)
{
	if (f->cdir[0])
		remove_extracted(f->cdir);
	f->cdir[0] = '\0';
}

/* export --perfetto: the timeline of f's threads. */
static int export_perfetto(const struct from *f, const char *out, struct twin *tw)
{
	struct rk_perfetto_stats ps;
	unsigned long long outside = 0;
	struct rk_timeline tl;
	int err;

	err = rk_timeline__load(&tl, f->dir, (__u32)f->tid, (__u32)f->pid, 1);
	if (err == -ENOENT) {
		rk_err("%s: no thread%s%s to export", f->core ? f->core : f->dir,
		       f->tid || f->pid ? " matched --" : "",
		       f->tid ? "tid" :
		       f->pid ? "pid" :
				"");
		return 1;
	}
	if (err)
		return 1;
	if (tw->set) {
		twin_resolve(tw, rk_sched_end(&tl));
		outside = rk_timeline__clip(&tl, tw->lo, tw->hi);
	}
	err = rk_perfetto_write(&tl, out, &ps);
	if (!err)
		fprintf(stderr,
			"ringkeeper: wrote %s from %s: %zu threads, %llu slices, %llu instants, "
			"%llu samples, %llu packets, %llu bytes%s\n",
			out, f->core ? f->core : f->dir, tl.nthreads, ps.slices, ps.instants,
			ps.samples, ps.packets, ps.bytes,
			tl.skipped ? " (some files skipped, see above)" : "");
	if (!err && outside)
		fprintf(stderr,
			"ringkeeper: %llu events and samples outside the time window left "
			"out\n",
			outside);
	rk_timeline__free(&tl);
	return err ? 1 : 0;
}

/* export --perf-data: f's threads. */
static int export_perf(const struct from *f, const char *out, struct twin *tw)
{
	struct rk_export_opts eo = {
		.session_dir = f->dir, .out = out, .tid = (pid_t)f->tid, .pid = (pid_t)f->pid
	};
	struct rk_export_stats es;

	if (tw->set) {
		/* --last: the newest switch of the threads exported ends the window. */
		struct rk_timeline tl;

		if (tw->last && !rk_timeline__load(&tl, f->dir, (__u32)f->tid, (__u32)f->pid, 0)) {
			twin_resolve(tw, rk_sched_end(&tl));
			rk_timeline__free(&tl);
		}
		eo.windowed = 1;
		eo.lo = tw->lo;
		eo.hi = tw->last && !tw->hi ? ~0ull : tw->hi;
	}
	if (rk_export_perf_data(&eo, &es))
		return 1;
	fprintf(stderr,
		"ringkeeper: wrote %s from %s: %llu records (%llu samples) of %llu threads, %u "
		"attrs%s\n",
		out, f->core ? f->core : f->dir, es.records, es.samples, es.threads, es.attrs,
		es.skipped ? " (some files skipped, see above)" : "");
	if (es.outside)
		fprintf(stderr,
			"ringkeeper: %llu samples and switches outside the time window left "
			"out\n",
			es.outside);
	export_crash_note(&es);
	return 0;
}

static int cmd_export(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper export (-o|--perf-data FILE | --perfetto FILE) [--tid T | --pid P]\n"
		"                         [--session S] [--root DIR | --core CORE]\n"
		"\n"
		"Write the per-thread buffers of a session (default: the newest), or of an ELF\n"
		"core dump's RINGKEEPER notes (--core, from ringkeeper coredump):\n"
		"  -o, --perf-data FILE\n"
		"         as a perf.data file sorted by time, with the sideband of their\n"
		"         processes, for 'perf script -i FILE' and 'perf report -i FILE'; each\n"
		"         source (sched, every -e event) becomes one attr, and sched's switches\n"
		"         and wakeups also sched:sched_switch / sched_waking samples (perf sched\n"
		"         timehist, latency, map read them)\n"
		"  --perfetto FILE\n"
		"         as a Perfetto trace for ui.perfetto.dev or trace_processor: a track per\n"
		"         thread (named by its comm, grouped by process) with its runs on a CPU\n"
		"         and why it was off CPU (preempted, sleeping, blocked) as slices; fork,\n"
		"         exec, renames, exit and crash as instants; -e samples with their call\n"
		"         stacks (the flame graph), tracepoints as instants with their fields;\n"
		"         the scheduler's view (CPU tracks, thread states, wakeup arrows with\n"
		"         record --wakeups)\n"
		"  --time START,END\n"
		"         only the switches and samples timed within it (seconds of the recorded\n"
		"         clock, as show prints them; either may be left out); the sideband\n"
		"         (mappings, names, forks) goes whole\n"
		"  --last DURATION\n"
		"         only the last DURATION (500ms, 2s, 10m, 1h) before the newest switch\n"
		"Exit status: 0 written, 1 nothing matched or an error, 2 usage.\n";
	static const struct option lo[] = {
		{ "perf-data", required_argument, NULL, 'o' },
		{ "perfetto", required_argument, NULL, 'f' },
		TWIN_LONGOPTS,
		FROM_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct from f = { .root = RK_DEFAULT_ROOT };
	struct twin tw = { 0 };
	const char *out = NULL;
	int c, r, perfetto = 0;

	while ((c = getopt_long(argc, argv, "+o:" FROM_OPTS "h", lo, NULL)) != -1) {
		r = from_opt(&f, c, optarg);
		if (!r)
			r = twin_opt(&tw, c, optarg);
		if (r < 0)
			return 2;
		if (r)
			continue;
		switch (c) {
		case 'o':
		case 'f':
			if (out) {
				rk_err("give one of --perf-data and --perfetto");
				return 2;
			}
			out = optarg;
			perfetto = c == 'f';
			/*
			 * Both are written to a file and renamed into place; perf's
			 * pipe format is another one: no stdout.
			 */
			if (!strcmp(out, "-")) {
				rk_err("%s -: a pipe is not supported (the file is written whole, "
				       "then renamed into place): give a file name",
				       perfetto ? "--perfetto" : "--perf-data");
				return 2;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!out || optind != argc || (f.core && f.session)) {
		fputs(usage, stderr);
		return 2;
	}
	if (f.tid && f.pid) {
		rk_err("give --tid or --pid, not both");
		return 2;
	}
	if (from_open(&f)) {
		from_close(&f);
		return 1;
	}
	r = perfetto ? export_perfetto(&f, out, &tw) : export_perf(&f, out, &tw);
	from_close(&f);
	return r;
}

static int cmd_sched(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper sched [--json] [--tid T | --pid P] [--root DIR]\n"
		"                        [SESSION | --session S | --core CORE]\n"
		"\n"
		"A per-thread scheduling summary of a session (default: the newest) or of an\n"
		"ELF core dump's RINGKEEPER notes, like 'perf sched timehist -s', from each\n"
		"thread's own history: runs on a CPU (a switch-in and its switch-out), total,\n"
		"average and longest time on CPU; time off CPU by why the thread left it\n"
		"(preempted: runnable, waiting for a CPU; sleeping; blocked: uninterruptible;\n"
		"other: idle, stopped, or not recorded); the longest off-CPU gap; migrations\n"
		"(a run on another CPU than the run before). Only what the ring still holds\n"
		"counts: a history's first out and last in have one end and are left out.\n"
		"A thread whose ring wrapped is marked '*'; the totals cover one window, where\n"
		"every thread's history is whole.\n"
		"  --json one JSON document: {\"threads\": [...], \"total\": {...}}, times in ns\n"
		"  --time START,END  only runs and off-CPU periods within it (seconds of the\n"
		"         recorded clock, as show prints them; either may be left out)\n"
		"  --last DURATION   only the last DURATION (500ms, 2s, 10m, 1h) before the\n"
		"         newest event\n"
		"Exit status: 0, 1 nothing matched or an error, 2 usage.\n";
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' }, TWIN_LONGOPTS, FROM_LONGOPTS,
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct from f = { .root = RK_DEFAULT_ROOT };
	struct twin tw = { 0 };
	struct rk_timeline tl;
	int c, r, json = 0;

	while ((c = getopt_long(argc, argv, "j" FROM_OPTS "h", lo, NULL)) != -1) {
		r = from_opt(&f, c, optarg);
		if (!r)
			r = twin_opt(&tw, c, optarg);
		if (r < 0)
			return 2;
		if (r)
			continue;
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc && !f.session && !f.core)
		f.session = argv[optind++];
	if (optind != argc || (f.core && f.session) || (f.tid && f.pid)) {
		fputs(usage, stderr);
		return 2;
	}
	if (from_open(&f)) {
		from_close(&f);
		return 1;
	}
	r = rk_timeline__load(&tl, f.dir, (__u32)f.tid, (__u32)f.pid, 0);
	from_close(&f);
	if (r == -ENOENT) {
		rk_err("%s: no thread%s", f.core ? f.core : f.dir,
		       f.tid ? " with that --tid" :
		       f.pid ? " of that --pid" :
			       "s");
		return 1;
	}
	if (r)
		return 1;
	twin_resolve(&tw, rk_sched_end(&tl));
	rk_sched_print_window(stdout, &tl, json, tw.lo, tw.hi);
	rk_timeline__free(&tl);
	return 0;
}

static int cmd_pmu(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper pmu [--json]\n"
		"\n"
		"List the PMUs of this machine (/sys/bus/event_source/devices) and the PMU\n"
		"descriptor a buffer of each carries in its pmu_info: for intel_pt, what a\n"
		"decoder needs (CPU, CPUID 0x15, nominal ratio, caps, config bit layout);\n"
		"software and tracepoint PMUs have an empty descriptor.\n";
	static const char *const fmt[RK_PT_NFMT] = { RK_PT_FMT_NAMES };
	const char *const dir = "/sys/bus/event_source/devices";
	int json = 0, first = 1, r, i;
	struct dirent *de;
	char path[PATH_MAX + 300];
	DIR *d;

	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};

	while ((r = getopt_long(argc, argv, "+jh", lo, NULL)) != -1) {
		if (r == 'j') {
			json = 1;
		} else if (r == 'h') {
			fputs(usage, stdout);
			return 0;
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 2;
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

static int cmd_gc(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper gc [--older-than SECS] [--max-size SIZE] [--dry-run] [-v]\n"
		"                     [--root DIR] [SESSION]\n"
		"\n"
		"Remove the buffer files of dead threads (exited, or of a session whose\n"
		"recorder is gone): those dead for more than SECS, then the oldest ones until\n"
		"the sessions take at most SIZE (K/M/G). With SESSION, only that one. Live\n"
		"threads of a running session are never touched; an ended session left\n"
		"without buffers is removed entirely. To remove a whole session: ringkeeper rm.\n"
		"Says how many files of each session went; -v, --verbose: each file.\n";
	static const struct option lo[] = {
		{ "older-than", required_argument, NULL, 'o' },
		{ "max-size", required_argument, NULL, 's' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "root", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct rk_gc_opts go = { .root = RK_DEFAULT_ROOT };
	unsigned long long v;
	uint64_t size;
	int c;

	while ((c = getopt_long(argc, argv, "+o:s:nr:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (rk_parse_uint(optarg, 100ull * 365 * 86400, &v)) {
				rk_err("--older-than: not a number of seconds: '%s'", optarg);
				return 2;
			}
			go.older_than_ns = v * 1000000000ull;
			break;
		case 's':
			if (rk_parse_size(optarg, 0, &size)) {
				rk_err("--max-size: not a size: '%s'", optarg);
				return 2;
			}
			go.max_bytes = size;
			break;
		case 'n':
			go.dry_run = 1;
			break;
		case 'v':
			go.verbose = 1;
			break;
		case 'r':
			go.root = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc - 1 || (!go.older_than_ns && !go.max_bytes)) {
		rk_err("gc: give --older-than and/or --max-size, and at most one SESSION (see "
		       "--help)");
		return 2;
	}
	if (optind < argc) {
		char sched[PATH_MAX];

		go.session = argv[optind];
		snprintf(sched, sizeof(sched), "%s/%s/%s", go.root, go.session, RK_SCHED_DIR);
		if (strchr(go.session, '/') || access(sched, F_OK)) {
			rk_err("gc: no session '%s' in %s (ringkeeper ls lists them)", go.session,
			       go.root);
			return 1;
		}
	}
	return rk_gc(&go) ? 1 : 0;
}

static int cmd_rm(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper rm [--dry-run] [--root DIR] SESSION...\n"
		"\n"
		"Remove sessions entirely: every buffer file, the sideband, the counters and\n"
		"the crash records. A session whose recorder is still running is refused\n"
		"(stop it with SIGINT first). Exit status 1 if any session was not removed.\n";
	static const struct option lo[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "root", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *root = RK_DEFAULT_ROOT;
	int c, dry = 0, bad = 0;

	while ((c = getopt_long(argc, argv, "+nr:h", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			dry = 1;
			break;
		case 'r':
			root = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind == argc) {
		fputs(usage, stderr);
		return 2;
	}
	for (; optind < argc; optind++)
		bad += rk_rm_session(root, argv[optind], dry, 0) != 0;
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *cmd;
	size_t i;

	if (argc < 2) {
		usage_main(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("ringkeeper %s\n", RK_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "help") && argc > 2) {
		/* help COMMAND: that command's --help. */
		char *hv[] = { argv[2], "--help", NULL };

		for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			if (!strcmp(argv[2], cmds[i].name))
				return cmds[i].fn(2, hv);
		rk_err("unknown command '%s' (see ringkeeper --help)", argv[2]);
		return 2;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage_main(stdout);
		return 0;
	}
	/* Subcommand options start after the command name. */
	argc--;
	argv++;
	optind = 1;
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmd, cmds[i].name))
			return cmds[i].fn(argc, argv);
	rk_err("unknown command '%s' (see ringkeeper --help)", cmd);
	return 2;
}
