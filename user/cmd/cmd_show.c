// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_show.c - ringkeeper show: one thread's buffer, of a session or a core. */
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
#include "bufile.h"
#include "elfcore.h"
#include "pt.h"
#include "show.h"
#include "symbols.h"
#include "timeline.h"
#include "tracedata.h"
#include "util.h"

/* Symbols of a thread file's process: <session>/sideband/<tgid> next to <session>/<src>/<tid>. */
static struct rk_symbols *thread_symbols(const char *path, const struct rk_bufile *bf)
{
	char dir[PATH_MAX + 400], sb[PATH_MAX + 500], *p;

	snprintf(dir, sizeof(dir), "%s", path);
	p = strrchr(dir, '/');
	if (p) {
		*p = '\0';
		p = strrchr(dir, '/');
	}
	if (!p)
		return rk_symbols__new(NULL);
	*p = '\0';
	rk_sideband_path(dir, bf->ident->tgid, sb, sizeof(sb));
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

/* A description line read back, at most (a "symbols trimmed" line holds a path). */
#define TRIM_LINE 4400

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

/* A bundle's "key value" line of its description (@key with its space), or "". */
static void desc_value(const char *text, const char *key, char *out, size_t len)
{
	size_t k = strlen(key);
	const char *line = text;

	out[0] = '\0';
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);

		if (n > k && !strncmp(line, key, k)) {
			snprintf(out, len, "%.*s", (int)(n - k), line + k);
			rk_strip_controls(out);
			return;
		}
		line = nl ? nl + 1 : NULL;
	}
}

/*
 * What a bundle's limits left out, as its description says it (lines
 * "size limit", "left out", "symbols trimmed"), each after @prefix.
 * Return: how many lines said something was left out or trimmed.
 */
static int bundle_limits(const char *text, FILE *out, const char *prefix)
{
	const char *line = text;
	char one[TRIM_LINE];
	int n = 0;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		int trimmed = !strncmp(line, "left out ", 9) ||
			      !strncmp(line, "symbols trimmed ", 16);

		if (trimmed || !strncmp(line, "size limit ", 11)) {
			snprintf(one, sizeof(one), "%.*s", (int)len, line);
			if (out)
				fprintf(out, "%s%s\n", prefix, rk_strip_controls(one));
			n += trimmed;
		}
		line = nl ? nl + 1 : NULL;
	}
	return n;
}

/* What a snapshot bundle says of itself: which session, when (T), why, where. */
static void print_bundle_desc(const char *text)
{
	char sess[256], t[32], real[32], why[1024], host[256], utc[64] = "";
	unsigned long long ns;

	if (!text || strncmp(text, "bundle ", 7))
		return;
	desc_value(text, "session ", sess, sizeof(sess));
	desc_value(text, "snapshot time ", t, sizeof(t));
	desc_value(text, "snapshot realtime ", real, sizeof(real));
	desc_value(text, "reason ", why, sizeof(why));
	desc_value(text, "host ", host, sizeof(host));
	if (!rk_parse_uint(real, UINT64_MAX, &ns))
		rk_fmt_utc(ns, " (%Y-%m-%d %H:%M:%S UTC)", utc, sizeof(utc));
	if (!rk_parse_uint(t, UINT64_MAX, &ns))
		snprintf(t, sizeof(t), "%llu.%09llu", ns / 1000000000, ns % 1000000000);
	printf("snapshot of session %s at %s%s on %s, reason: %s\n", sess, t, utc, host, why);
	bundle_limits(text, stdout, "  ");
}

/*
 * What the session of the buffer file at @path (SESSION/SOURCE/TID) did not
 * record, from its stat file; not known for a file outside a session.
 */
static void file_loss(const char *path, struct rk_loss *l)
{
	char dir[PATH_MAX + 400], *p;
	struct rk_session_stat st;
	int up;

	memset(l, 0, sizeof(*l));
	snprintf(dir, sizeof(dir), "%s", path);
	/* Up two: SOURCE/TID (relative, from the session's directory) is in ".". */
	for (up = 0; up < 2; up++) {
		p = strrchr(dir, '/');
		if (!p) {
			snprintf(dir, sizeof(dir), "%s", up ? "." : "..");
			break;
		}
		*p = '\0';
	}
	if (!rk_session_stat_read(dir[0] ? dir : "/", &st))
		rk_loss_from_stat(l, &st);
}

/*
 * show --core CORE [TID]: the buffers a core carries (no TID), or one of
 * them, read from the core alone.
 */
/*
 * --time/--last: what was left out, on stderr as export says it (also under
 * --json, and when stdout is cut by head); and when the window reaches
 * before the oldest record a wrapped ring still holds, that its start is
 * not all there was.
 */
static void window_note(const struct rk_bufile *bf, const struct rk_show_counts *c)
{
	__u64 first;

	if (!show_twin.set)
		return;
	fprintf(stderr, "ringkeeper: %llu of %llu records outside the time window left out\n",
		c->outside, c->outside + c->records);
	first = bf->ident->overwritten ? rk_first_time(bf) : 0;
	if (first > show_twin.lo)
		fprintf(stderr,
			"ringkeeper: warning: the window starts before this thread's oldest record "
			"still in its ring (%llu.%09llu; %llu records were overwritten): what it "
			"recorded before that is gone\n",
			(unsigned long long)(first / 1000000000ull),
			(unsigned long long)(first % 1000000000ull),
			(unsigned long long)bf->ident->overwritten);
}

static int show_from_core(const char *tid_s, int json)
{
	struct rk_show_counts counts = { 0 };
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
	/* A thread's history from a trimmed bundle: its symbols may be partial, others left out. */
	if (tid_s && b.session && !strncmp(b.session, "bundle ", 7) &&
	    bundle_limits(b.session, NULL, ""))
		rk_warn("--core %s was trimmed to its limits (its symbols or buffers are partial; "
			"ringkeeper show --core %s lists what)",
			show_core, show_core);
	if (!tid_s) {
		print_bundle_desc(b.session);
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
			struct rk_loss loss;
			size_t k;

			for (k = 0; syms && k < b.n; k++)
				if (b.v[k].type == RK_NOTE_SIDEBAND && !b.v[k].why &&
				    b.v[k].bf.ident->tgid == cb->bf.ident->tgid)
					rk_symbols__add_sideband(syms, &b.v[k].bf);
			/* A bundle's tables name what the files here do not (or no longer) have. */
			for (k = 0; syms && k < b.nsymtabs; k++)
				if (rk_symbols__add_symtab(syms, b.symtabs[k].data,
							   b.symtabs[k].size, &why) == -EBADMSG)
					rk_warn("--core %s: symbol table %zu: %s", show_core, k,
						why);
			twin_resolve(&show_twin, show_twin.last ? rk_show_end(&cb->bf) : 0);
			rk_loss_parse_note(&loss, b.session);
			err = rk_show_range(stdout, &cb->bf, cb->name, json, syms,
					    tp_format_for(cb->name, &cb->bf, 0, &tpf), &counts,
					    show_twin.lo, show_twin.hi, &loss);
			/* A record that does not parse was said where it is. */
			if (err && err != -EBADMSG)
				rk_err("--core %s: %s: cannot show its records: %s", show_core,
				       cb->name, strerror(-err));
			r = err ? 1 : 0;
			window_note(&cb->bf, &counts);
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

int cmd_show(int argc, char **argv)
{
	struct rk_show_counts counts = { 0 };
	static const char usage[] =
		"Usage: ringkeeper show [--json] [--root DIR] [--session S] [-e EVENT] FILE|TID\n"
		"       ringkeeper show --core CORE|--bundle FILE [-e EVENT] [TID]\n"
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
		"  --core CORE, --bundle FILE\n"
		"         read the buffers from this ELF core dump's RINGKEEPER notes, or from a\n"
		"         snapshot bundle (ringkeeper snapshot; the two options are one): without\n"
		"         a TID, list them (a bundle: its session, instant T, host and reason\n"
		"         first); with one, show its buffer (-e: of that event; a bundle's symbol\n"
		"         tables name functions whose files are absent here or differ). With\n"
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
	struct rk_loss loss;
	int json = 0, r, err;

	r = common_opts(argc, argv, usage, &json, &root, &session, NULL);
	if (r <= 0)
		return -r;
	/* From a core alone: a TID (or nothing) rather than a buffer file. */
	if (show_core && cmd_too_many(usage, 1, argc, argv))
		return 2;
	if (show_core &&
	    (optind == argc ||
	     (optind == argc - 1 && strspn(argv[optind], "0123456789") == strlen(argv[optind]) &&
	      access(argv[optind], F_OK))))
		return show_from_core(optind < argc ? argv[optind] : NULL, json);
	if (optind == argc)
		return cmd_bad(usage, "missing FILE or TID (the buffer to show; ringkeeper ls "
				      "lists them)");
	if (cmd_too_many(usage, 1, argc, argv))
		return 2;
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
	/* Addresses (samples', and sched's off-CPU stacks) resolve through the process's sideband. */
	syms = thread_symbols(path, bf);
	twin_resolve(&show_twin, show_twin.last ? rk_show_end(bf) : 0);
	file_loss(path, &loss);
	err = rk_show_range(stdout, bf, path, json, syms, tp_format_for(path, bf, 1, &tpf), &counts,
			    show_twin.lo, show_twin.hi, &loss);
	window_note(bf, &counts);
	rk_symbols__free(syms);
	rk_bufile__free(bf);
	/* A record that does not parse was said where it is (rk_show_range()). */
	if (err && err != -EBADMSG)
		rk_err("%s: cannot show its records: %s", path, strerror(-err));
	return err ? 1 : 0;
}
