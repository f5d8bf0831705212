// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* shell.c - see shell.h. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "shell.h"

char *sh_out(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	size_t cap = 1 << 16, len = 0, n;
	char *out = malloc(cap);
	int st;

	cr_assert(p && out, "cannot run %s", cmd);
	while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 == cap) {
			cap *= 2;
			out = realloc(out, cap);
			cr_assert_not_null(out);
		}
	}
	out[len] = '\0';
	st = pclose(p);
	if (status)
		*status = st;
	return out;
}

int count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}
