// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <criterion/criterion.h>
#include <errno.h>
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
