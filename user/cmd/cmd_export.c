// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_export.c - ringkeeper export: a session or core as perf.data or a Perfetto trace. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmd.h"
#include "export.h"
#include "offcpu.h"
#include "perfetto.h"
#include "schedsum.h"
#include "timeline.h"
#include "util.h"

/* What perf.data cannot carry is said, not dropped silently. */
static void export_crash_note(const struct rk_export_stats *es)
{
	if (es->crashes)
		fprintf(stderr,
			"ringkeeper: %llu crash records (one per thread of a crashed process) are "
			"not in it: perf.data has no such record; `ringkeeper show` and `stat` "
			"print them\n",
			es->crashes);
	if (es->triggers)
		fprintf(stderr,
			"ringkeeper: %llu trigger records are not in it: perf.data has no such "
			"record; `ringkeeper show` prints them (RINGKEEPER_TRIGGER)\n",
			es->triggers);
	if (es->unknown)
		fprintf(stderr,
			"ringkeeper: %llu records of a type this ringkeeper does not know are not "
			"in it (perf would refuse the file): a newer ringkeeper exports them\n",
			es->unknown);
	if (es->wakeups)
		fprintf(stderr,
			"ringkeeper: %llu wakeup records are not in it: this machine's tracefs "
			"has no sched_waking format to write them as; `ringkeeper sched` sums "
			"them (sch delay), `show` prints them\n",
			es->wakeups);
}

/*
 * Which threads' rings wrapped and from when all are whole; with
 * --common-window (@common), the window cut to start there. Said either
 * way: an export of wrapped rings is not what perf would have recorded.
 */
static void export_wraps(const struct from *f, struct twin *tw, int common, struct rk_wraps *w)
{
	if (rk_timeline__wraps(f->dir, (__u32)f->tid, (__u32)f->pid, w))
		memset(w, 0, sizeof(*w));
	if (!w->files)
		return;
	if (common && w->whole_from > tw->lo) {
		if (!tw->set)
			tw->hi = ~0ull;
		tw->lo = w->whole_from;
		tw->set = 1;
	}
}

static void export_wraps_note(const struct rk_wraps *w, int common)
{
	if (!w->files)
		return;
	if (common)
		fprintf(stderr,
			"ringkeeper: %zu thread%s rings wrapped (%zu buffer%s): cut to the common "
			"window from %llu.%09llu on, where every thread's history is whole\n",
			w->threads, w->threads == 1 ? "'s" : "s'", w->files,
			w->files == 1 ? "" : "s",
			(unsigned long long)(w->whole_from / 1000000000ull),
			(unsigned long long)(w->whole_from % 1000000000ull));
	else
		fprintf(stderr,
			"ringkeeper: warning: %zu thread%s rings wrapped (%zu buffer%s): their "
			"oldest records were overwritten, so before %llu.%09llu they have fewer "
			"samples and switches than they had (perf report counts less for them); "
			"every thread is whole from then on: --common-window cuts the export "
			"to that\n",
			w->threads, w->threads == 1 ? "'s" : "s'", w->files,
			w->files == 1 ? "" : "s",
			(unsigned long long)(w->whole_from / 1000000000ull),
			(unsigned long long)(w->whole_from % 1000000000ull));
}

/* export --perfetto: the timeline of f's threads. */
static int export_perfetto(const struct from *f, const char *out, struct twin *tw, int common)
{
	struct rk_wraps wr;
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
	if (tw->set)
		twin_resolve(tw, rk_sched_end(&tl));
	export_wraps(f, tw, common, &wr);
	if (tw->set)
		outside = rk_timeline__clip(&tl, tw->lo, tw->hi);
	err = rk_perfetto_write_noted(&tl, out, &f->loss, &ps);
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
	if (!err)
		export_wraps_note(&wr, common);
	if (!err && ps.switches_added)
		fprintf(stderr,
			"ringkeeper: %llu switches the kernel did not report (stat: unpaired) "
			"written as taking no time, so that each CPU's stream is whole\n",
			ps.switches_added);
	if (!err && ps.irq_unmarked)
		fprintf(stderr,
			"ringkeeper: %llu wakeups from interrupts came before any switch on their "
			"CPU: Perfetto would drop them marked as such, so they are not marked\n",
			ps.irq_unmarked);
	if (!err)
		rk_loss_say(stderr, &f->loss, "ringkeeper: ");
	rk_timeline__free(&tl);
	return err ? 1 : 0;
}

/*
 * export --folded: off-CPU time by blocking stack and/or the -e samples'
 * stacks, folded, for flamegraph.pl, speedscope and Perfetto (@out "-":
 * stdout; a file is written whole and renamed into place).
 */
static int export_folded(const struct from *f, const char *out, int what, struct twin *tw)
{
	struct rk_timeline tl;
	char tmp[PATH_MAX];
	size_t lines = 0;
	FILE *o = stdout;
	int err, fd = -1;

	err = rk_timeline__load(&tl, f->dir, (__u32)f->tid, (__u32)f->pid, what & RK_FOLD_ONCPU);
	if (err == -ENOENT)
		rk_err("%s: no thread to export", f->core ? f->core : f->dir);
	if (err)
		return 1;
	if (tw->set) {
		twin_resolve(tw, rk_sched_end(&tl));
		rk_timeline__clip(&tl, tw->lo, tw->hi);
	}
	if (strcmp(out, "-")) {
		snprintf(tmp, sizeof(tmp), "%s.XXXXXX", out);
		fd = mkostemp(tmp, O_CLOEXEC);
		o = fd < 0 ? NULL : fdopen(fd, "w");
		if (!o) {
			rk_err("cannot create %s: %s (a writable directory is needed)", tmp,
			       strerror(errno));
			if (fd >= 0)
				close(fd);
			rk_timeline__free(&tl);
			return 1;
		}
	}
	err = rk_offcpu_folded(&tl, what, o, &lines);
	if (o != stdout && (fclose(o) || err || rename(tmp, out))) {
		rk_err("cannot write %s: %s", out, strerror(err ? -err : errno));
		unlink(tmp);
		err = err ? err : -EIO;
	}
	if (!err)
		fprintf(stderr, "ringkeeper: wrote %s: %zu folded stacks (%s)%s\n",
			strcmp(out, "-") ? out : "stdout", lines,
			!(what & RK_FOLD_ONCPU)	 ? "off-CPU ns" :
			!(what & RK_FOLD_OFFCPU) ? "on-CPU samples by period" :
						   "off-CPU ns, then on-CPU samples by period",
			lines || !(what & RK_FOLD_OFFCPU) || tl.nstacks ?
				"" :
				"; no off-CPU stacks: record with --offcpu");
	if (!err)
		rk_loss_say(stderr, &f->loss, "ringkeeper: ");
	rk_timeline__free(&tl);
	return err ? 1 : 0;
}

/* export --perf-data: f's threads. */
static int export_perf(const struct from *f, const char *out, struct twin *tw, int common)
{
	struct rk_export_opts eo = { .session_dir = f->dir,
				     .out = out,
				     .tid = (pid_t)f->tid,
				     .pid = (pid_t)f->pid,
				     .loss = &f->loss };
	struct rk_export_stats es;
	struct rk_wraps wr;

	if (tw->set) {
		/* --last: the newest switch of the threads exported ends the window. */
		struct rk_timeline tl;

		if (tw->last && !rk_timeline__load(&tl, f->dir, (__u32)f->tid, (__u32)f->pid, 0)) {
			twin_resolve(tw, rk_sched_end(&tl));
			rk_timeline__free(&tl);
		}
		eo.hi = tw->last && !tw->hi ? ~0ull : tw->hi;
	}
	export_wraps(f, tw, common, &wr);
	if (tw->set) {
		eo.windowed = 1;
		eo.lo = tw->lo;
		if (!eo.hi)
			eo.hi = tw->hi;
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
	export_wraps_note(&wr, common);
	if (es.offcpu_samples)
		fprintf(stderr,
			"ringkeeper: %llu offcpu-time samples (off-CPU stretches with their "
			"stack, period in ns, as perf record --off-cpu writes them)\n",
			es.offcpu_samples);
	export_crash_note(&es);
	rk_loss_say(stderr, &f->loss, "ringkeeper: ");
	if (es.lost)
		fprintf(stderr,
			"ringkeeper: perf.data says so too: a PERF_RECORD_LOST of %llu (perf report: "
			"\"lost\" events)\n",
			es.lost);
	return 0;
}

static const char export_usage[] =
	"Usage: ringkeeper export (-o|--perf-data FILE | --perfetto FILE | --folded FILE)\n"
	"                         [--fold offcpu|oncpu|both] [--tid T | --pid P]\n"
	"                         [--time S,E | --last D] [--common-window] [--root DIR]\n"
	"                         [SESSION | --session S | --core CORE | --bundle FILE]\n"
	"\n"
	"Write the per-thread buffers of a session (default: the newest), or of an ELF\n"
	"core dump's RINGKEEPER notes (--core, from ringkeeper coredump) or a snapshot\n"
	"bundle (--bundle, the same option; from ringkeeper snapshot, its symbols from\n"
	"the bundle where the files here are absent or differ):\n"
	"  -o, --perf-data FILE\n"
	"         as a perf.data file sorted by time, with the sideband of their\n"
	"         processes, for 'perf script -i FILE' and 'perf report -i FILE'; each\n"
	"         source (sched, every -e event) becomes one attr, and sched's switches\n"
	"         and wakeups also sched:sched_switch / sched_waking samples (perf sched\n"
	"         timehist, latency, map read them)\n"
	"  --perfetto FILE\n"
	"         as a Perfetto trace for ui.perfetto.dev or trace_processor: a track per\n"
	"         thread (\"On/off CPU (ringkeeper)\", grouped by process) with its runs\n"
	"         on a CPU and why it was off CPU (preempted, sleeping, blocked) as slices;\n"
	"         fork, exec, renames, exit and crash as instants; -e samples with their\n"
	"         call stacks (the flame graph), tracepoints as instants with their\n"
	"         fields; the scheduler's view (CPU tracks, thread states, wakeup arrows\n"
	"         with record --wakeups, marked when an interrupt made them; a dead\n"
	"         thread's end); each forked process's parent\n"
	"  --folded FILE\n"
	"         folded stacks ('comm;frame;...;frame VALUE', root first, user then\n"
	"         kernel frames, one line per distinct stack) for flamegraph.pl,\n"
	"         speedscope and Perfetto; '-' for stdout. What --fold says:\n"
	"  --fold offcpu|oncpu|both\n"
	"         offcpu (the default): off-CPU time in ns by the stack each sleep\n"
	"         began in (record --offcpu), from the switch-out to the next switch-in,\n"
	"         as bcc's offcputime -f; oncpu: the -e samples with call chains (-g),\n"
	"         weighted by their period (ns for cpu-clock); both: the two, off-CPU\n"
	"         stacks ending in an '[off-cpu]' frame\n"
	"  --fold-user-only\n"
	"         off-CPU stacks without their kernel frames (as offcputime -U)\n"
	"  --time START,END\n"
	"         only the switches and samples timed within it (seconds of the recorded\n"
	"         clock, as show prints them; either may be left out); the sideband\n"
	"         (mappings, names, forks) goes whole\n"
	"  --last DURATION\n"
	"         only the last DURATION (500ms, 2s, 10m, 1h) before the newest switch\n"
	"  --common-window\n"
	"         only what lies where every thread's history is whole: from the latest\n"
	"         first record of a buffer whose ring wrapped (overwrote its oldest\n"
	"         records) on. Without it, an export of wrapped rings says how many\n"
	"         threads wrapped and from when all are whole (a busy thread's older\n"
	"         samples are gone: perf report would count less for it than for a\n"
	"         quiet one)\n"
	"Exit status: 0 written, 1 nothing matched or an error, 2 usage.\n";

int cmd_export(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "perf-data", required_argument, NULL, 'o' },
		{ "perfetto", required_argument, NULL, 'f' },
		{ "common-window", no_argument, NULL, 'M' },
		{ "folded", required_argument, NULL, 'F' },
		{ "fold", required_argument, NULL, 'W' },
		{ "fold-user-only", no_argument, NULL, 'U' },
		TWIN_LONGOPTS,
		FROM_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct from f = { .root = RK_DEFAULT_ROOT };
	struct twin tw = { 0 };
	const char *out = NULL;
	int c, r, perfetto = 0, common = 0, folded = 0, fold = 0, fold_user = 0;
	struct cmd_line l;

	cmd_line_init(&l, argc, argv, "o:" FROM_OPTS "h", lo, export_usage);
	while ((c = cmd_getopt(&l)) != -1) {
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
				rk_err("give one of --perf-data, --perfetto and --folded");
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
		case 'M':
			common = 1;
			break;
		case 'F':
			if (out) {
				rk_err("give one of --perf-data, --perfetto and --folded");
				return 2;
			}
			out = optarg;
			folded = 1;
			break;
		case 'W':
			fold = !strcmp(optarg, "offcpu") ? RK_FOLD_OFFCPU :
			       !strcmp(optarg, "oncpu")	 ? RK_FOLD_ONCPU :
			       !strcmp(optarg, "both")	 ? RK_FOLD_OFFCPU | RK_FOLD_ONCPU :
							   0;
			if (!fold) {
				rk_err("--fold %s: offcpu, oncpu or both", optarg);
				return 2;
			}
			break;
		case 'U':
			fold_user = RK_FOLD_NO_KERNEL;
			break;
		case 'h':
			fputs(export_usage, stdout);
			return 0;
		default:
			return 2;
		}
	}
	/* The session as every reading command takes it: an operand, or --session. */
	if (optind < argc && !f.session && !f.core)
		f.session = argv[optind++];
	if (cmd_too_many(export_usage, 0, argc, argv))
		return 2;
	if (!out) {
		rk_err("export: no output: give --perf-data FILE (-o), --perfetto FILE or --folded "
		       "FILE (ringkeeper export --help)");
		return 2;
	}
	if (fold_user && !(fold & RK_FOLD_OFFCPU) && fold) {
		rk_err("--fold-user-only applies to off-CPU stacks");
		return 2;
	}
	fold |= fold_user;
	if (fold && !folded) {
		rk_err("--fold applies to --folded");
		return 2;
	}
	if (f.core && f.session)
		return cmd_bad(export_usage, "give a session or --core/--bundle, not both");
	if (f.tid && f.pid) {
		rk_err("give --tid or --pid, not both");
		return 2;
	}
	if (from_open(&f)) {
		from_close(&f);
		return 1;
	}
	if (!(fold & (RK_FOLD_OFFCPU | RK_FOLD_ONCPU)))
		fold |= RK_FOLD_OFFCPU;
	r = folded   ? export_folded(&f, out, fold, &tw) :
	    perfetto ? export_perfetto(&f, out, &tw, common) :
		       export_perf(&f, out, &tw, common);
	from_close(&f);
	return r;
}
