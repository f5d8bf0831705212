// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "session.h"
#include "util.h"

Test(util, parse_size)
{
	uint64_t v = 0xdead;

	cr_assert_eq(rk_parse_size("16", 1, &v), 0);
	cr_assert_eq(v, 16 * 4096, "bare number = pages for -m");
	cr_assert_eq(rk_parse_size("16", 0, &v), 0);
	cr_assert_eq(v, 16);
	cr_assert_eq(rk_parse_size("64K", 1, &v), 0);
	cr_assert_eq(v, 65536);
	cr_assert_eq(rk_parse_size("2MiB", 1, &v), 0);
	cr_assert_eq(v, 2u << 20);
	cr_assert_eq(rk_parse_size("1g", 1, &v), 0);
	cr_assert_eq(v, 1u << 30);
	cr_assert_eq(rk_parse_size("", 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size(NULL, 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size("-1", 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size("12X", 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size("1KK", 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size("99999999999999999999", 1, &v), -EINVAL);
	cr_assert_eq(rk_parse_size("17179869184G", 1, &v), -EINVAL, "overflow");
}

Test(util, fmt_size)
{
	char b[32];

	cr_assert_str_eq(rk_fmt_size(516 * 1024, b, sizeof(b)), "516 KiB");
	cr_assert_str_eq(rk_fmt_size(1 << 20, b, sizeof(b)), "1 MiB");
	cr_assert_str_eq(rk_fmt_size(100, b, sizeof(b)), "100 B");
	cr_assert_str_eq(rk_fmt_size(0, b, sizeof(b)), "0 B");
}

/* Stat files only grow: one written before the AUX and benchmark counters still reads. */
Test(session, older_shorter_stat_files_read_with_new_fields_zero)
{
	char dir[] = "/tmp/rk-stat-XXXXXX", path[64];
	struct rk_session_stat st, got;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, RK_STAT_FILE);
	memset(&st, 0, sizeof(st));
	st.magic = RK_STAT_MAGIC;
	st.version = RK_STAT_VERSION;
	st.size = (__u32)RK_STAT_SIZE_V1;
	st.threads = 7;
	st.aux_bytes = 99; /* beyond the old size: must not be read */
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fwrite(&st, 1, RK_STAT_SIZE_V1, f);
	fclose(f);
	cr_assert_eq(rk_session_stat_read(dir, &got), 0);
	cr_assert_eq(got.threads, 7);
	cr_assert_eq(got.aux_bytes, 0);
	cr_assert_eq(got.loader_cpu_ns, 0);
	/* The size field must match what is there, and not exceed what we know. */
	st.size = sizeof(st);
	f = fopen(path, "w");
	fwrite(&st, 1, RK_STAT_SIZE_V1, f);
	fclose(f);
	cr_assert_eq(rk_session_stat_read(dir, &got), -EBADMSG, "size says more than the file has");
	st.size = sizeof(st) + 8;
	f = fopen(path, "w");
	fwrite(&st, 1, sizeof(st), f);
	fclose(f);
	cr_assert_eq(rk_session_stat_read(dir, &got), -EBADMSG, "a newer, larger layout");
	unlink(path);
	rmdir(dir);
}
