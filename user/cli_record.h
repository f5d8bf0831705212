/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cli_record.h - `ringkeeper record`: its options, as one table whose
 * entries each hold an option's name, parser, default and help, so that
 * the help text is made from what the parser does and cannot drift.
 * Owns: turning argv into struct rk_record_opts. May call: record (to run
 * it), evsel (-e), util.
 */
#ifndef RK_CLI_RECORD_H
#define RK_CLI_RECORD_H

#include <stdio.h>

/** rk_cmd_record() - `ringkeeper record ARGS`. Return: the exit status. */
int rk_cmd_record(int argc, char **argv);

/** rk_usage_record() - the --help text of record, made from the option table. */
void rk_usage_record(FILE *f);

#endif /* RK_CLI_RECORD_H */
