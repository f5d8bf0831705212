// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_retain.c - rk_retain_fair(): the newest files stay, exactly, and a
 * user's storm evicts its own files first.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "retain.h"

static char dir[64];
static int dfd = -1;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rk-retain-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dfd, 0);
}

static void teardown(void)
{
	char cmd[128];

	if (dfd >= 0)
		close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
}

TestSuite(retain, .init = setup, .fini = teardown);

/* A file @name of 10 bytes, modified at @sec.@nsec. */
static void make(const char *name, long sec, long nsec)
{
	struct timespec ts[2] = { { sec, nsec }, { sec, nsec } };
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0, "%s", name);
	cr_assert_eq(write(fd, "0123456789", 10), 10);
	cr_assert_eq(futimens(fd, ts), 0);
	close(fd);
}

static int there(const char *name)
{
	return !faccessat(dfd, name, F_OK, 0);
}

/*
 * Snapshots 8 to 13 written within one second, in that order: keeping 3
 * keeps 11, 12 and 13. Whole-second mtimes with names in ascending order
 * kept 10, 11 and 12 (the newest, 13, went: "13" < "8" as text).
 */
Test(retain, the_newest_stay_within_one_second)
{
	char name[64];
	int i;

	for (i = 8; i <= 13; i++) {
		snprintf(name, sizeof(name), "s.100.000000%03d.%d.exit.u0.rkb", i, i);
		make(name, 1700000000, i * 1000000L);
	}
	cr_assert_eq(rk_retain_fair(dfd, "s.", ".rkb", 3, ~0ull, NULL), 3);
	for (i = 8; i <= 13; i++) {
		snprintf(name, sizeof(name), "s.100.000000%03d.%d.exit.u0.rkb", i, i);
		cr_assert_eq(there(name), i >= 11, "%s %s", name, there(name) ? "kept" : "removed");
	}
}

/*
 * The same mtime to the nanosecond (one tick of the file system's clock):
 * the names decide, digits by value (9 is older than 10, second 99 than 100).
 */
Test(retain, one_tick_apart_the_names_decide_by_value)
{
	make("s.99.5.1.exit.u0.rkb", 1700000000, 0);
	make("s.100.5.2.exit.u0.rkb", 1700000000, 0);
	make("s.100.5.9.exit.u0.rkb", 1700000000, 0);
	make("s.100.5.10.exit.u0.rkb", 1700000000, 0);
	cr_assert_eq(rk_retain_fair(dfd, "s.", ".rkb", 2, ~0ull, NULL), 2);
	cr_assert(there("s.100.5.10.exit.u0.rkb"));
	cr_assert(there("s.100.5.9.exit.u0.rkb"));
	cr_assert(!there("s.100.5.2.exit.u0.rkb"));
	cr_assert(!there("s.99.5.1.exit.u0.rkb"));
}

/* A user's storm, newer than root's one file: its own oldest go, root's stays. */
Test(retain, a_user_s_storm_evicts_its_own_oldest)
{
	char name[64];
	int i;

	make("s.1.0.1.exit.u0.rkb", 1700000000, 0);
	for (i = 2; i <= 7; i++) {
		snprintf(name, sizeof(name), "s.1.0.%d.exit.u65534.rkb", i);
		make(name, 1700000000, i);
	}
	cr_assert_eq(rk_retain_fair(dfd, "s.", ".rkb", 4, ~0ull, NULL), 3);
	cr_assert(there("s.1.0.1.exit.u0.rkb"), "root's went");
	for (i = 2; i <= 7; i++) {
		snprintf(name, sizeof(name), "s.1.0.%d.exit.u65534.rkb", i);
		cr_assert_eq(there(name), i >= 5, "%s", name);
	}
}
