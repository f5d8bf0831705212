/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* shell.h - shared by the unit and the integration tests: shell output, counting. */
#ifndef RK_TEST_SHELL_H
#define RK_TEST_SHELL_H

/* A shell command's stdout, malloc'd; its wait status in *@status (may be NULL). */
char *sh_out(const char *cmd, int *status);

/* How many times @needle occurs in @hay (overlapping ones too). */
int count_of(const char *hay, const char *needle);

#endif /* RK_TEST_SHELL_H */
