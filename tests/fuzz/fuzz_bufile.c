// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the buffer file parser: page 0 validation, the ring
 * walk and every record printer of `show` (text and JSON, a tracepoint's
 * fields included), on arbitrary bytes; bytes that are no buffer go to the
 * tracepoint format parser, the field printer and the tracing data reader,
 * and every input to a snapshot bundle's readers: the symbol table note
 * and the ELF core reader (a bundle is a notes-only core). Built with
 * clang -fsanitize=fuzzer,address,undefined (make fuzz).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "bufile.h"
#include "elfcore.h"
#include "symtab.h"
#include "schedsum.h"
#include "show.h"
#include "offcpu.h"
#include "timeline.h"
#include "tracedata.h"

/* sched:sched_wakeup as 6.18 describes it: samples with RAW print these fields. */
static const char wakeup_fmt[] =
	"name: sched_wakeup\nID: 374\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n"
	"\tfield:void * ptr;\toffset:32;\tsize:8;\tsigned:0;\n";

/* A bundle (or core) of these bytes, read as every reader of --core/--bundle does. */
static void bundle_readers(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct rk_core_bufs b;
	struct rk_symtab t;
	const char *why;
	char path[64];

	if (!rk_symtab__from_note(&t, data, size, &why))
		rk_symtab__release(&t);
	if (fd < 0)
		fd = memfd_create("fuzz-bundle", 0);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!rk_core_bufs__load(path, &b, &why))
		rk_core_bufs__free(&b);
}

static int touch(const struct perf_event_header *h, void *ctx)
{
	const volatile uint8_t *p = (const volatile uint8_t *)h;
	unsigned long *sum = ctx;
	size_t i;

	/* Every byte the walk hands out must be readable. */
	for (i = 0; i < h->size; i++)
		*sum += p[i];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	static struct rk_tp_format tpf;
	struct rk_bufile bf;
	unsigned long sum = 0;
	void *copy;

	if (!null)
		null = fopen("/dev/null", "w");
	/* The parser sees a file mapping: exactly `size` bytes, nothing after. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (!tpf.id)
		rk_tp_format_parse(wakeup_fmt, sizeof(wakeup_fmt) - 1, &tpf);
	if (!rk_bufile__from_mem(&bf, copy, size, NULL)) {
		rk_bufile__for_each(&bf, touch, &sum);
		rk_show(null, &bf, "session/cpu-clock/1", 0, NULL, &tpf, NULL);
		rk_show(null, &bf, "session/cpu-clock/1", 1, NULL, &tpf, NULL);
		/* sched and export --perfetto read it as a thread's history and as samples. */
		{
			static char src[64] = "cpu-clock";
			static int is_tp;
			struct rk_timeline tl = { 0 };

			tl.srcs = &src;
			tl.src_is_tp = &is_tp;
			tl.nsrcs = 1;
			rk_timeline__add_sched(&tl, &bf);
			rk_timeline__add_samples(&tl, &bf, 0, NULL, &tpf);
			/* sched --offcpu, export --folded: the stacks it holds. */
			{
				size_t lines;

				rk_offcpu_print(null, &tl, 0);
				rk_offcpu_folded(&tl, RK_FOLD_OFFCPU | RK_FOLD_ONCPU, null, &lines);
			}
			rk_sched_print(null, &tl, 0);
			rk_sched_print(null, &tl, 1);
			tl.srcs = NULL;
			tl.src_is_tp = NULL;
			rk_timeline__free(&tl);
		}
	} else {
		struct rk_tp_format f;
		const char *fmt;
		size_t flen;

		if (!rk_tp_format_parse(copy, size, &f)) {
			rk_tp_print_fields(null, &f, copy, size, 0);
			rk_tp_print_fields(null, &f, copy, size, 1);
		}
		if (!rk_tracedata_format(copy, size, 374, &fmt, &flen))
			sum += (unsigned long)flen;
		bundle_readers(data, size);
	}
	free(copy);
	return 0;
}
