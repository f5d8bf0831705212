// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_cli.c - what a user finds without reading the source: --help names
 * every command, help COMMAND and --version work, the man page lists every
 * option each command's --help lists, bash completion offers them, and
 * make install / uninstall put and remove the files where the README says.
 */
#include <criterion/criterion.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "helpers.h"

TestSuite(cli, .init = rk_test_setup, .fini = rk_test_teardown, .timeout = 300);

static const char *const commands[] = { "record", "ls", "stat", "show",
					"export", "gc", "pmu",	"coredump" };

/* A shell command's stdout (and status), malloc'd. */
static char *out_of(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	size_t cap = 1 << 16, len = 0, n;
	char *out = malloc(cap);

	cr_assert(p && out);
	while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 == cap) {
			cap *= 2;
			out = realloc(out, cap);
			cr_assert_not_null(out);
		}
	}
	out[len] = '\0';
	*status = pclose(p);
	return out;
}

Test(cli, help_names_every_command_and_each_has_its_own_help)
{
	char cmd[512], *s, *h;
	int st;
	size_t i;

	snprintf(cmd, sizeof(cmd), "%s --help", rk_bin);
	s = out_of(cmd, &st);
	cr_assert_eq(st, 0);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char want[64];

		snprintf(want, sizeof(want), "\n  %s ", commands[i]);
		cr_assert_not_null(strstr(s, want), "--help does not list %s:\n%s", commands[i], s);
		snprintf(cmd, sizeof(cmd), "%s help %s", rk_bin, commands[i]);
		h = out_of(cmd, &st);
		cr_assert_eq(st, 0, "help %s exits %d", commands[i], st);
		snprintf(want, sizeof(want), "Usage: ringkeeper %s", commands[i]);
		cr_assert_not_null(strstr(h, want), "help %s:\n%s", commands[i], h);
		free(h);
	}
	free(s);
	snprintf(cmd, sizeof(cmd), "%s --version", rk_bin);
	s = out_of(cmd, &st);
	cr_assert_eq(st, 0);
	cr_assert_eq(strncmp(s, "ringkeeper 0.", 13), 0, "--version: %s", s);
	free(s);
	snprintf(cmd, sizeof(cmd), "%s help nosuch 2>&1", rk_bin);
	s = out_of(cmd, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "help nosuch: %d", st);
	cr_assert_not_null(strstr(s, "unknown command 'nosuch'"), "%s", s);
	free(s);
}

/*
 * make install into a staging DESTDIR: the binary in PREFIX/sbin, the man
 * page, the completion; the page lists every option of every command's
 * --help; completion offers commands and options; make uninstall removes
 * all three.
 */
Test(cli, install_man_page_and_completion_follow_the_binary)
{
	char repo[256], out_dir[600], cmd[2048], stage[128], path[700], *s, *h, *man, *tok;
	struct stat sb;
	size_t i;
	int st;

	/* RK_BIN is REPO/OUTPUT/ringkeeper (OUTPUT: build, or build-san). */
	{
		char bin[256], bdir[256];

		snprintf(bin, sizeof(bin), "%s", rk_bin);
		snprintf(bdir, sizeof(bdir), "%s", dirname(bin));
		snprintf(out_dir, sizeof(out_dir), "%s",
			 strrchr(bdir, '/') ? strrchr(bdir, '/') + 1 : bdir);
		snprintf(repo, sizeof(repo), "%s", dirname(bdir));
	}
	snprintf(path, sizeof(path), "%s/Makefile", repo);
	if (access(path, F_OK))
		cr_skip_test("no source tree at %s", repo);
	snprintf(stage, sizeof(stage), "%s/stage", root);
	snprintf(cmd, sizeof(cmd),
		 "make -s -C %s OUTPUT=%s install DESTDIR=%s PREFIX=/usr >%s/make.out 2>&1", repo,
		 out_dir, stage, root);
	cr_assert_eq(system(cmd), 0, "make install failed (see %s/make.out)", root);
	snprintf(path, sizeof(path), "%s/usr/sbin/ringkeeper", stage);
	cr_assert_eq(stat(path, &sb), 0, "%s", path);
	cr_assert(sb.st_mode & S_IXUSR);
	snprintf(cmd, sizeof(cmd), "%s --version", path);
	s = out_of(cmd, &st);
	cr_assert_eq(st, 0);
	free(s);
	snprintf(path, sizeof(path), "%s/usr/share/man/man8/ringkeeper.8", stage);
	man = strdup(slurp(path));
	cr_assert_not_null(strstr(man, ".TH RINGKEEPER 8"), "not a man page: %s", path);

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char *save = NULL;

		snprintf(cmd, sizeof(cmd),
			 "%s %s --help 2>&1 | grep -oE -- '(^|[ ,\\[|])--?[a-zA-Z][a-zA-Z0-9-]*' | "
			 "sed 's/^[ ,\\[|]//' | sort -u",
			 rk_bin, commands[i]);
		h = out_of(cmd, &st);
		cr_assert_neq(h[0], '\0', "%s --help lists no option", commands[i]);
		for (tok = strtok_r(h, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save))
			cr_assert_not_null(strstr(man, tok), "the man page lacks %s %s",
					   commands[i], tok);
		free(h);
	}
	free(man);

	/* Completion, with the installed binary first in PATH. */
	snprintf(cmd, sizeof(cmd),
		 "PATH=%s/usr/sbin:$PATH bash -c 'source %s/usr/share/bash-completion/completions/"
		 "ringkeeper; COMP_WORDS=(ringkeeper st); COMP_CWORD=1; _ringkeeper; "
		 "echo \"${COMPREPLY[*]}\"; COMP_WORDS=(ringkeeper record --mmap); COMP_CWORD=2; "
		 "_ringkeeper; echo \"${COMPREPLY[*]}\"'",
		 stage, stage);
	s = out_of(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	cr_assert_not_null(strstr(s, "stat\n"), "commands: %s", s);
	cr_assert_not_null(strstr(s, "--mmap-pages"), "options of record: %s", s);
	free(s);

	snprintf(cmd, sizeof(cmd),
		 "make -s -C %s OUTPUT=%s uninstall DESTDIR=%s PREFIX=/usr >%s/make.out 2>&1", repo,
		 out_dir, stage, root);
	cr_assert_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/usr/sbin/ringkeeper", stage);
	cr_assert_neq(access(path, F_OK), 0, "uninstall left %s", path);
	snprintf(path, sizeof(path), "%s/usr/share/man/man8/ringkeeper.8", stage);
	cr_assert_neq(access(path, F_OK), 0, "uninstall left %s", path);
	snprintf(path, sizeof(path), "%s/usr/share/bash-completion/completions/ringkeeper", stage);
	cr_assert_neq(access(path, F_OK), 0, "uninstall left %s", path);
}
