// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_tracedata.c - tracepoint formats: parsing, field printing, perf's tracing data. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tracedata.h"

static const char fmt[] = "name: demo\nID: 77\nformat:\n"
			  "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
			  "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
			  "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
			  "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
			  "\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n"
			  "\tfield:void * ptr;\toffset:32;\tsize:8;\tsigned:0;\n"
			  "\tfield:u8 flag;\toffset:40;\tsize:1;\tsigned:0;\n"
			  "\nprint fmt: \"comm=%s\", REC->comm\n";

static char *print(const struct rk_tp_format *f, const __u8 *raw, size_t len, int json)
{
	char *buf = NULL;
	size_t sz = 0;
	FILE *m = open_memstream(&buf, &sz);

	cr_assert_not_null(m);
	rk_tp_print_fields(m, f, raw, len, json);
	fclose(m);
	return buf;
}

Test(tracedata, format_fields_print_like_perf_script)
{
	struct rk_tp_format f;
	__u8 raw[64] = { 0 };
	__s32 pid = -5;
	__u32 loc = 48 | (6u << 16);
	__u64 ptr = 0xffffffff81000000ull;
	char *s;

	cr_assert_eq(rk_tp_format_parse(fmt, sizeof(fmt) - 1, &f), 0);
	cr_assert_eq(f.id, 77);
	cr_assert_str_eq(f.name, "demo");
	cr_assert_eq(f.nfields, 5, "common_* fields are left out");
	memcpy(raw + 8, "sleep", 6);
	memcpy(raw + 24, &pid, 4);
	memcpy(raw + 28, &loc, 4);
	memcpy(raw + 32, &ptr, 8);
	raw[40] = 1;
	memcpy(raw + 48, "hello", 6);
	s = print(&f, raw, sizeof(raw), 0);
	cr_assert_str_eq(s, "comm=sleep pid=-5 name=hello ptr=0xffffffff81000000 flag=1");
	free(s);
	s = print(&f, raw, sizeof(raw), 1);
	cr_assert_str_eq(s, ",\"fields\":{\"comm\":\"sleep\",\"pid\":-5,\"name\":\"hello\","
			    "\"ptr\":\"0xffffffff81000000\",\"flag\":1}");
	free(s);
	/* Raw data cut short: fields past it are left out, a data_loc past it is '?'. */
	s = print(&f, raw, 30, 0);
	cr_assert_str_eq(s, "comm=sleep pid=-5");
	free(s);
	loc = 60 | (20u << 16);
	memcpy(raw + 28, &loc, 4);
	s = print(&f, raw, sizeof(raw), 0);
	cr_assert_not_null(strstr(s, "name=?"), "%s", s);
	free(s);
	cr_assert_eq(rk_tp_format_parse("name: x\nformat:\n", 16, &f), -EBADMSG, "no ID");
}

/* A tracing data blob as perf lays it out, with two systems; truncations refused. */
Test(tracedata, tracing_data_lookup_is_bounded)
{
	__u8 blob[1024];
	size_t n = 0, cut;
	__u32 u32;
	__u64 u64;
	const char *t;
	size_t tl;
	const char other[] = "name: other\nID: 5\nformat:\n";

#define PUT(p, l)                           \
	do {                                \
		memcpy(blob + n, (p), (l)); \
		n += (l);                   \
	} while (0)
	PUT("\x17\x08\x44tracing", 10);
	PUT("0.6", 4);
	PUT("\0\x08", 2);
	u32 = 4096;
	PUT(&u32, 4);
	PUT("header_page", 12);
	u64 = 3;
	PUT(&u64, 8);
	PUT("abc", 3);
	PUT("header_event", 13);
	u64 = 0;
	PUT(&u64, 8);
	u32 = 0;
	PUT(&u32, 4);
	u32 = 2;
	PUT(&u32, 4);
	PUT("one", 4);
	u32 = 1;
	PUT(&u32, 4);
	u64 = sizeof(other) - 1;
	PUT(&u64, 8);
	PUT(other, sizeof(other) - 1);
	PUT("two", 4);
	u32 = 1;
	PUT(&u32, 4);
	u64 = sizeof(fmt) - 1;
	PUT(&u64, 8);
	PUT(fmt, sizeof(fmt) - 1);
#undef PUT
	cr_assert_eq(rk_tracedata_format(blob, n, 77, &t, &tl), 0);
	cr_assert_eq(tl, sizeof(fmt) - 1);
	cr_assert_eq(memcmp(t, fmt, tl), 0);
	cr_assert_eq(rk_tracedata_format(blob, n, 5, &t, &tl), 0);
	cr_assert_eq(rk_tracedata_format(blob, n, 6, &t, &tl), -ENOENT);
	for (cut = 0; cut < n; cut++)
		cr_assert_neq(rk_tracedata_format(blob, cut, 77, &t, &tl), 0, "cut at %zu", cut);
	blob[0] = 0;
	cr_assert_eq(rk_tracedata_format(blob, n, 77, &t, &tl), -EBADMSG);
}
