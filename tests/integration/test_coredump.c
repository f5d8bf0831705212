// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_coredump.c - the core_pattern handler: run by hand as the kernel
 * runs it (a real core on stdin, the pattern's arguments), and once through
 * the kernel itself, with core_pattern and core_pipe_limit restored on
 * every path.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "access.h"
#include "coredump.h"
#include "elfcore.h"
#include "helpers.h"

/* The processes a test started and its session: removed by the .fini whatever happened. */
static pid_t started[8];
static int nstarted;
static char traced_session[64];

static void coredump_fini(void)
{
	int i;

	if (traced_session[0]) {
		char rm[200];

		snprintf(rm, sizeof(rm), "rm -rf /dev/shm/ringkeeper/%s", traced_session);
		if (system(rm))
			fprintf(stderr, "cannot remove the session %s\n", traced_session);
		traced_session[0] = '\0';
	}

	for (i = 0; i < nstarted; i++) {
		kill(started[i], SIGKILL);
		waitpid(started[i], NULL, 0);
	}
	nstarted = 0;
	rk_test_teardown();
}

TestSuite(coredump, .init = rk_test_setup, .fini = coredump_fini, .timeout = 180);

static void need_gcore(void)
{
	if (system("command -v gcore >/dev/null 2>&1"))
		cr_skip_test("no gcore (gdb) to make real cores: make deps installs gdb");
}

/* A real core of @pid, by gcore, at @path. */
static void gcore(pid_t pid, const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "gcore -o %s %d >/dev/null 2>&1 && mv %s.%d %s", path, pid, path,
		 pid, path);
	cr_assert_eq(system(cmd), 0, "gcore %d failed", pid);
}

/*
 * A sleeping process of @uid (gid @uid, supplementary group @group unless
 * 0), its cwd the test's root, so a relative core pattern lands there.
 */
static pid_t start_sleep_groups(uid_t uid, gid_t group)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid) {
		if (chdir(root) || setgroups(group ? 1 : 0, &group))
			_exit(125);
		if (uid && (setgid(uid) || setuid(uid)))
			_exit(125);
		execl("/bin/sleep", "sleep", "1000", (char *)NULL);
		_exit(127);
	}
	if (nstarted < 8)
		started[nstarted++] = pid;
	usleep(100000);
	return pid;
}

static pid_t start_sleep(uid_t uid)
{
	return start_sleep_groups(uid, 0);
}

static void write_state(const char *path, const char *pattern)
{
	FILE *f = fopen(path, "we");

	cr_assert_not_null(f);
	fprintf(f, "pattern=%s\npipe_limit=0\n", pattern);
	cr_assert_eq(fclose(f), 0);
}

/* The core's path and a state file naming @pattern as the previous core_pattern. */
static void handler_files(char *core, size_t clen, char *state, size_t slen, const char *pattern)
{
	snprintf(core, clen, "%s/in.core", root);
	snprintf(state, slen, "%s/state", root);
	write_state(state, pattern);
}

/*
 * Run the handler as the kernel would: @core on stdin, the crash of @pid,
 * dump mode (%d) @dumpable.
 */
static int run_handler_mode(const char *state, const char *core, pid_t pid, unsigned int uid,
			    const char *extra_env, const char *rlimit_core, int dumpable)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "env -i %s RINGKEEPER_COREDUMP_STATE=%s %s coredump --handle %d %d %d %d 11 "
		 "%s 1700000000 %u %u %d testhost sleep '!bin!sleep' < %s",
		 extra_env ? extra_env : "", state, rk_bin, pid, pid, pid, pid, rlimit_core, uid,
		 uid, dumpable, core);
	return system(cmd);
}

static int run_handler_limit(const char *state, const char *core, pid_t pid, unsigned int uid,
			     const char *extra_env, const char *rlimit_core)
{
	return run_handler_mode(state, core, pid, uid, extra_env, rlimit_core, 1);
}

static int run_handler(const char *state, const char *core, pid_t pid, unsigned int uid,
		       const char *extra_env)
{
	return run_handler_limit(state, core, pid, uid, extra_env, "18446744073709551615");
}

static int same_file(const char *a, const char *b)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "cmp -s %s %s", a, b);
	return system(cmd) == 0;
}

/*
 * An untraced crash, previous pattern a file: it lands where the pattern
 * says, byte for byte, created as the crashing user, as the kernel would.
 */
Test(coredump, untraced_core_goes_to_the_previous_file_pattern_unchanged)
{
	char core[128], state[128], pattern[200], want[200], dir[128];
	struct stat st;
	pid_t v;

	need_gcore();
	cr_assert_eq(chmod(root, 0755), 0); /* the crashing user reaches its cwd's files */
	snprintf(dir, sizeof(dir), "%s/cores", root);
	cr_assert_eq(mkdir(dir, 0777), 0);
	cr_assert_eq(chmod(dir, 0777), 0);
	snprintf(pattern, sizeof(pattern), "%s/core.%%e.%%P.%%s", dir);
	handler_files(core, sizeof(core), state, sizeof(state), pattern);
	v = start_sleep(65534);
	gcore(v, core);
	cr_assert_eq(run_handler(state, core, v, 65534, NULL), 0);
	kill(v, SIGKILL);
	waitpid(v, NULL, 0);
	snprintf(want, sizeof(want), "%s/core.sleep.%d.11", dir, v);
	cr_assert_eq(stat(want, &st), 0, "no core at %s", want);
	cr_assert(same_file(core, want), "the core changed on its way through");
	cr_assert_eq(st.st_uid, 65534, "created as the crashing user");
	cr_assert_eq(st.st_mode & 0777, 0600);
}

/* ROOT/prev.sh, a stand-in previous pipe handler: a shell script of @fmt. */
static void prev_script(char *script, size_t len, const char *fmt, ...)
{
	va_list ap;
	FILE *f;

	snprintf(script, len, "%s/prev.sh", root);
	f = fopen(script, "we");
	cr_assert_not_null(f);
	fputs("#!/bin/sh\n", f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(script, 0755), 0);
}

/*
 * The previous handler a pipe (a stand-in for systemd-coredump, with its
 * Debian arguments): it gets its own arguments expanded and the core.
 */
Test(coredump, previous_pipe_handler_gets_its_arguments_and_the_core)
{
	char core[128], state[128], script[128], pattern[300], path[200], *args;
	pid_t v;

	need_gcore();
	prev_script(script, sizeof(script), "echo \"$@\" > %s/args\ncat > %s/got\n", root, root);
	snprintf(pattern, sizeof(pattern), "|%s %%P %%u %%g %%s %%t 9223372036854775808 %%h %%d",
		 script);
	handler_files(core, sizeof(core), state, sizeof(state), pattern);
	v = start_sleep(0);
	gcore(v, core);
	cr_assert_eq(run_handler(state, core, v, 0, NULL), 0);
	kill(v, SIGKILL);
	waitpid(v, NULL, 0);
	snprintf(path, sizeof(path), "%s/args", root);
	args = slurp(path);
	{
		char want[200];

		snprintf(want, sizeof(want),
			 "%d 0 0 11 1700000000 9223372036854775808 testhost 1\n", v);
		cr_assert_str_eq(args, want);
	}
	snprintf(path, sizeof(path), "%s/got", root);
	cr_assert(same_file(core, path), "the previous handler got another core");
}

/* A directory of root's, group @gid, mode @mode, under the test's root. */
static void make_dir(char *dir, size_t len, const char *name, gid_t gid, mode_t mode)
{
	cr_assert_eq(chmod(root, 0755), 0); /* the crashing user reaches what is below */
	snprintf(dir, len, "%s/%s", root, name);
	cr_assert_eq(mkdir(dir, mode), 0);
	cr_assert_eq(chown(dir, 0, gid), 0);
	cr_assert_eq(chmod(dir, mode), 0);
}

/*
 * A directory @name of the test's root (group @gid, @mode) into which the
 * previous pattern DIR/core.%P sends cores, and a sleeping process of uid
 * 65534 (supplementary group @group unless 0) with its core at @core.
 */
static pid_t user_crash_into(char *dir, size_t dlen, const char *name, gid_t gid, mode_t mode,
			     gid_t group, char *core, char *state)
{
	char pattern[200];
	pid_t v;

	need_gcore();
	make_dir(dir, dlen, name, gid, mode);
	snprintf(pattern, sizeof(pattern), "%s/core.%%P", dir);
	handler_files(core, 128, state, 128, pattern);
	v = start_sleep_groups(65534, group);
	gcore(v, core);
	return v;
}

/*
 * The kernel writes a core with all of the task's credentials: a directory
 * writable only through a supplementary group gets it.
 */
Test(coredump, a_core_dir_writable_through_a_supplementary_group_gets_the_core)
{
	char core[128], state[128], want[200], dir[128];
	struct stat st;
	pid_t v;

	v = user_crash_into(dir, sizeof(dir), "grp", 4242, 0770, 4242, core, state);
	cr_assert_eq(run_handler(state, core, v, 65534, NULL), 0);
	snprintf(want, sizeof(want), "%s/core.%d", dir, v);
	cr_assert_eq(stat(want, &st), 0, "no core at %s: the group was not used", want);
	cr_assert_eq(st.st_uid, 65534);
	cr_assert(same_file(core, want), "the core changed on its way through");
}

/*
 * fs.suid_dumpable=2 (%d 2): the kernel writes root's core, and only to an
 * absolute path; a user's setuid program must not leave its memory in a
 * file that user owns.
 */
Test(coredump, suid_dumpable_2_cores_are_root_s_and_absolute_only)
{
	char core[128], state[128], want[200], dir[128];
	struct stat st;
	pid_t v;

	v = user_crash_into(dir, sizeof(dir), "cores", 0, 0777, 0, core, state);
	cr_assert_eq(run_handler_mode(state, core, v, 65534, NULL, "18446744073709551615", 2), 0);
	snprintf(want, sizeof(want), "%s/core.%d", dir, v);
	cr_assert_eq(stat(want, &st), 0, "no core at %s", want);
	cr_assert_eq(st.st_uid, 0, "a suid_dumpable=2 core owned by uid %u", st.st_uid);
	/* The kernel changes only the fsuid: the group is the task's fsgid. */
	cr_assert_eq(st.st_gid, 65534, "a suid_dumpable=2 core of group %u", st.st_gid);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert(same_file(core, want));
	/* A relative pattern: no core at all (the kernel's "fully qualified path" rule). */
	handler_files(core, sizeof(core), state, sizeof(state), "core.%P");
	cr_assert_eq(run_handler_mode(state, core, v, 65534, NULL, "18446744073709551615", 2), 0);
	snprintf(want, sizeof(want), "%s/core.%d", root, v);
	cr_assert_neq(stat(want, &st), 0, "a suid_dumpable=2 core written to a relative path");
}

/*
 * A process in its own mount namespace (a container): an absolute pattern
 * names a path in its namespace, where the kernel would have written it.
 */
Test(coredump, an_absolute_pattern_is_resolved_in_the_crashing_process_mount_namespace)
{
	char core[128], state[128], pattern[200], dir[128], mnt[300], cmd[400], comm[64];
	struct stat st;
	uint64_t end;
	pid_t v;

	need_gcore();
	make_dir(dir, sizeof(dir), "ns", 0, 0777);
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o mode=0777 none %s && exec sleep 1000", dir);
	v = fork();
	cr_assert_geq(v, 0);
	if (!v) {
		execl("/usr/bin/unshare", "unshare", "-m", "--propagation", "private", "/bin/sh",
		      "-c", cmd, (char *)NULL);
		_exit(127);
	}
	started[nstarted++] = v;
	snprintf(mnt, sizeof(mnt), "/proc/%d/comm", v);
	end = now_ms() + 10000;
	do {
		FILE *f = fopen(mnt, "re");

		comm[0] = '\0';
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = '\0';
			fclose(f);
		}
		if (!strcmp(comm, "sleep\n"))
			break;
		usleep(10000);
	} while (now_ms() < end);
	cr_assert_str_eq(comm, "sleep\n", "the namespaced sleep did not start");
	snprintf(pattern, sizeof(pattern), "%s/core.%%P", dir);
	handler_files(core, sizeof(core), state, sizeof(state), pattern);
	gcore(v, core);
	cr_assert_eq(run_handler(state, core, v, 0, NULL), 0);
	snprintf(mnt, sizeof(mnt), "/proc/%d/root%s/core.%d", v, dir, v);
	cr_assert_eq(stat(mnt, &st), 0, "no core in the process's own mount namespace");
	snprintf(mnt, sizeof(mnt), "%s/core.%d", dir, v);
	cr_assert_neq(stat(mnt, &st), 0, "the core went to the host's %s", dir);
}

/*
 * %F (a pidfd of the crashing process, Linux 6.16+), %C (its CPU) and %f
 * (the executable's name) reach a chained pipe handler as the kernel
 * would have given them, although our own pattern does not carry them.
 */
Test(coredump, previous_pipe_handler_gets_pidfd_cpu_and_exe_name)
{
	char core[128], state[128], script[128], pattern[300], path[200], want[64], *got;
	unsigned int cpu;
	char name[64];
	pid_t v;

	need_gcore();
	prev_script(script, sizeof(script),
		    "{ echo \"$2 $3\"; grep '^Pid:' /proc/self/fdinfo/$1; } > %s/args\n"
		    "cat > /dev/null\n",
		    root);
	snprintf(pattern, sizeof(pattern), "|%s %%F %%C %%f", script);
	handler_files(core, sizeof(core), state, sizeof(state), pattern);
	v = start_sleep(0);
	gcore(v, core);
	cr_assert_eq(run_handler(state, core, v, 0, NULL), 0);
	snprintf(path, sizeof(path), "%s/args", root);
	got = slurp(path);
	cr_assert_eq(sscanf(got, "%u %63s", &cpu, name), 2, "no %%C %%f: '%s'", got);
	cr_assert_lt(cpu, 4096);
	cr_assert_str_eq(name, "sleep");
	snprintf(want, sizeof(want), "Pid:\t%d\n", v);
	cr_assert_not_null(strstr(got, want), "%%F is not a pidfd of %d: '%s'", v, got);
}

/*
 * The kernel starts a pipe handler with no stdout or stderr, and gives a
 * chained handler the pidfd at fd 3 only, and only with %F. Ours once
 * passed its own pidfd wherever it landed (fd 1, the chained handler's
 * stdout), with or without %F.
 */
Test(coredump, a_chained_handler_gets_the_pidfd_at_fd_3_only_with_percent_f)
{
	char core[128], state[128], script[128], pattern[300], path[200], cmd[1200], *got;
	pid_t v;
	int with;

	need_gcore();
	v = start_sleep(0);
	snprintf(core, sizeof(core), "%s/in.core", root);
	gcore(v, core);
	for (with = 1; with >= 0; with--) {
		prev_script(script, sizeof(script),
			    "{ echo \"arg '$1'\"; for f in /proc/self/fd/*; do "
			    "echo \"${f##*/} $(readlink $f)\"; done; } > %s/fds 2>&1\n"
			    "cat > /dev/null\n",
			    root);
		snprintf(pattern, sizeof(pattern), "|%s %s", script, with ? "%F" : "%P");
		snprintf(state, sizeof(state), "%s/state", root);
		write_state(state, pattern);
		/* As the kernel runs it: the core on stdin, fds 1 and 2 closed. */
		snprintf(cmd, sizeof(cmd),
			 "env -i RINGKEEPER_COREDUMP_STATE=%s %s coredump --handle %d %d %d %d 11 "
			 "18446744073709551615 1700000000 0 0 1 testhost sleep '!bin!sleep' "
			 "< %s >&- 2>&-",
			 state, rk_bin, v, v, v, v, core);
		cr_assert_eq(system(cmd), 0);
		snprintf(path, sizeof(path), "%s/fds", root);
		got = slurp(path);
		cr_assert_null(strstr(got, "\n1 anon_inode:[pidfd]"), "a pidfd at fd 1:\n%s", got);
		cr_assert_null(strstr(got, "\n2 anon_inode:[pidfd]"), "a pidfd at fd 2:\n%s", got);
		if (with) {
			cr_assert_not_null(strstr(got, "arg '3'"), "%%F is not 3:\n%s", got);
			cr_assert_not_null(strstr(got, "\n3 anon_inode:[pidfd]"),
					   "no pidfd at fd 3:\n%s", got);
		} else {
			cr_assert_null(strstr(got, "pidfd"), "a pidfd without %%F:\n%s", got);
		}
	}
}

/*
 * `record --session itest-TAG-PID [-e EVENT] -p @v` in the default root
 * (the handler looks there), ready; the .fini removes the session.
 * Return: the recorder's pid.
 */
static pid_t record_in_default_root(pid_t v, const char *tag, const char *event)
{
	char sess[64], pid[16], fd[16], line[64];
	char *argv[] = { (char *)rk_bin, "record", "--session",		sess,	       "-p", pid,
			 "--ready-fd",	 fd,	   event ? "-e" : NULL, (char *)event, NULL };
	int p[2];
	pid_t rk;

	snprintf(sess, sizeof(sess), "itest-%s-%d", tag, getpid());
	snprintf(traced_session, sizeof(traced_session), "%s", sess);
	snprintf(pid, sizeof(pid), "%d", v);
	cr_assert_eq(pipe(p), 0);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	rk = spawn(argv, "/dev/null", "/dev/null", p[1]);
	close(p[1]);
	cr_assert_eq(read_line_within(p[0], line, sizeof(line), 30000), 0, "recorder not ready");
	close(p[0]);
	return rk;
}

/*
 * Only what the core's owner may read goes into its core: a user's
 * process recorded with kernel call chains at perf_event_paranoid 2 gets
 * its sched history in its own core, not the root-only cpu-clock buffer;
 * with suid_dumpable=2 (root's core) both go in.
 */
Test(coredump, a_user_core_carries_only_buffers_that_user_may_read)
{
	char core[128], state[128], dir[128], out[200], cmd[600], want[64], *s;
	int kernel_ok = rk_access_paranoid() <= 1;
	pid_t v, rk;

	v = user_crash_into(dir, sizeof(dir), "cores", 0, 0777, 0, core, state);
	rk = record_in_default_root(v, "core", "cpu-clock");
	cr_assert_eq(run_handler(state, core, v, 65534, NULL), 0);
	snprintf(out, sizeof(out), "%s/core.%d", dir, v);
	snprintf(cmd, sizeof(cmd), "%s show --core %s 2>&1", rk_bin, out);
	s = sh_out(cmd, NULL);
	snprintf(want, sizeof(want), "sched/%d", v);
	cr_assert_not_null(strstr(s, want), "the user's own sched history is missing:\n%s", s);
	snprintf(want, sizeof(want), "cpu-clock/%d", v);
	cr_assert_eq(
		strstr(s, want) != NULL, kernel_ok,
		"cpu-clock (kernel addresses) %s the user's core at perf_event_paranoid %d:\n%s",
		kernel_ok ? "missing from" : "copied into", rk_access_paranoid(), s);
	free(s);
	cr_assert_eq(unlink(out), 0);
	/* Root's core (suid_dumpable=2): everything. */
	cr_assert_eq(run_handler_mode(state, core, v, 65534, NULL, "18446744073709551615", 2), 0);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, want), "root's core lacks the cpu-clock buffer:\n%s", s);
	free(s);
	kill(rk, SIGINT);
	wait_for(rk, 30000);
}

/* A bug in the handler (here a SIGSEGV injected before the copy) still delivers the core. */
Test(coredump, a_fault_in_the_handler_still_delivers_the_original_core)
{
	char core[128], state[128], pattern[200], want[200];
	pid_t v;
	int st;

	need_gcore();
	snprintf(pattern, sizeof(pattern), "%s/core.%%P", root);
	handler_files(core, sizeof(core), state, sizeof(state), pattern);
	v = start_sleep(0);
	gcore(v, core);
	st = run_handler(state, core, v, 0, "RINGKEEPER_COREDUMP_FAULT=1");
	kill(v, SIGKILL);
	waitpid(v, NULL, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 4, "status 0x%x: the fault path did not run",
		  st);
	snprintf(want, sizeof(want), "%s/core.%d", root, v);
	cr_assert(same_file(core, want), "the original core was not delivered as it was");
}

/*
 * A traced process's core gets its threads' buffers; gdb reads it as
 * before, and show --core gives the history back from the core alone.
 */
Test(coredump, a_traced_process_core_carries_its_buffers)
{
	char core[128], state[128], pattern[200], out[200], cmd[700], line[64], *s, *a, *b;
	int ready;
	pid_t v, rk;

	need_gcore();
	snprintf(pattern, sizeof(pattern), "%s/core.%%P", root);
	handler_files(core, sizeof(core), state, sizeof(state), pattern);
	/* The handler looks in the default root's live sessions. */
	v = start_sleep(0);
	{
		char *argv[] = { (char *)rk_bin, "record", "--session", "", "-p", "",
				 "--ready-fd",	 "",	   NULL };
		char sess[64], pid[16], fd[16];
		int p[2];

		snprintf(sess, sizeof(sess), "itest-core-%d", getpid());
		snprintf(traced_session, sizeof(traced_session), "%s", sess);
		snprintf(pid, sizeof(pid), "%d", v);
		cr_assert_eq(pipe(p), 0);
		snprintf(fd, sizeof(fd), "%d", p[1]);
		argv[3] = sess;
		argv[5] = pid;
		argv[7] = fd;
		rk = spawn(argv, "/dev/null", "/dev/null", p[1]);
		close(p[1]);
		ready = p[0];
		cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0);
		close(ready);
		/* Give the sleeping thread a switch or two. */
		kill(v, SIGSTOP);
		kill(v, SIGCONT);
		usleep(200000);
		gcore(v, core);
		cr_assert_eq(run_handler(state, core, v, 0, NULL), 0);
		{
			/* A relative pattern: the crashes file names the core by its absolute path. */
			char crashes[300], want[PATH_MAX + 64], real[PATH_MAX], *l;

			write_state(state, "rel.%P");
			cr_assert_eq(run_handler(state, core, v, 0, NULL), 0);
			write_state(state, pattern);
			cr_assert_not_null(realpath(root, real));
			snprintf(want, sizeof(want), "%s/rel.%d", real, v);
			cr_assert_eq(access(want, F_OK), 0, "no core %s (in the sleeper's cwd)",
				     want);
			snprintf(want, sizeof(want), " core %s/rel.%d\n", real, v);
			snprintf(crashes, sizeof(crashes), "tail -n 1 %s/%s/crashes",
				 "/dev/shm/ringkeeper", sess);
			l = sh_out(crashes, NULL);
			cr_assert(strlen(l) > strlen(want) &&
					  !strcmp(l + strlen(l) - strlen(want), want),
				  "the crashes file's last line does not end in '%s': %s", want, l);
			free(l);
		}
		{
			/* ulimit -c 0 (Debian's default): no core file, the notes kept apart. */
			char env[200], notes[300], *l;

			snprintf(env, sizeof(env), "RINGKEEPER_CRASH_DIR=%s/crashes", root);
			cr_assert_eq(run_handler_limit(state, core, v, 0, env, "0"), 0);
			snprintf(notes, sizeof(notes),
				 "%s show --core %s/crashes/core.%d.1700000000.u0.notes 2>&1",
				 rk_bin, root, v);
			l = sh_out(notes, NULL);
			snprintf(notes, sizeof(notes), "sched/%d", v);
			cr_assert_not_null(strstr(l, notes),
					   "the notes kept under ulimit -c 0:\n%s", l);
			free(l);
		}
		kill(rk, SIGINT);
		wait_for(rk, 30000);
	}
	kill(v, SIGKILL);
	waitpid(v, NULL, 0);
	snprintf(out, sizeof(out), "%s/core.%d", root, v);
	snprintf(cmd, sizeof(cmd), "%s show --core %s 2>&1", rk_bin, out);
	{
		char want[64];
		int st;

		s = sh_out(cmd, &st);
		snprintf(want, sizeof(want), "sched/%d", v);
		cr_assert_not_null(strstr(s, want), "show --core:\n%s", s);
		cr_assert_eq(st, 0, "show --core listed the buffers and exited %d", st);
	}
	free(s);
	snprintf(cmd, sizeof(cmd), "%s show --core %s %d 2>&1", rk_bin, out, v);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "PERF_RECORD_SWITCH"), "show --core TID:\n%s", s);
	/* The handler said what the session had lost by then (nothing, or how much). */
	cr_assert_null(strstr(s, "dropped anything is not known"), "show --core TID:\n%s", s);
	free(s);
	/* export --core: a perf.data file from the core alone, which perf reads. */
	snprintf(cmd, sizeof(cmd),
		 "%s export --core %s --perf-data %s/core.data >/dev/null 2>&1 && "
		 "perf script -i %s/core.data --show-switch-events 2>/dev/null | grep -c SWITCH",
		 rk_bin, out, root, root);
	s = sh_out(cmd, NULL);
	cr_assert_gt(atoi(s), 0, "perf script finds no switch in the export of the core");
	free(s);
	snprintf(cmd, sizeof(cmd), "gdb -batch -nx -ex bt /bin/sleep %s 2>&1 | grep '^#'", core);
	a = sh_out(cmd, NULL);
	snprintf(cmd, sizeof(cmd), "gdb -batch -nx -ex bt /bin/sleep %s 2>&1 | grep '^#'", out);
	b = sh_out(cmd, NULL);
	cr_assert_gt(strlen(a), 0);
	cr_assert_str_eq(a, b, "gdb reads the augmented core differently");
	free(a);
	free(b);
}

/*
 * Through the kernel: --install, a traced program killed by SIGSEGV, the
 * core where the previous pattern said with the buffers in it, --uninstall
 * restoring exactly what was there. core_pattern and core_pipe_limit are
 * put back by the .fini whatever happens.
 */
static char saved_pattern[256], saved_limit[32];

static void kernel_fini(void)
{
	restore_globals(); /* core_pattern, core_pipe_limit, the handler's state file */
	coredump_fini();
}

/* What --install will change, kept to be put back on every path (helpers.h). */
static void keep_core_settings(void)
{
	sysctl_keep("/proc/sys/kernel/core_pattern");
	sysctl_keep("/proc/sys/kernel/core_pipe_limit");
	remove_at_restore("/run/ringkeeper/coredump.state");
}

/*
 * Save core_pattern and core_pipe_limit (the .fini puts them back), set a
 * file pattern into this test's root, and install the handler over it.
 */
static void install_over(const char *pattern)
{
	char *install[] = { (char *)rk_bin, "coredump", "--install", NULL };
	int status;

	need_gcore();
	read_sysctl("/proc/sys/kernel/core_pattern", saved_pattern, sizeof(saved_pattern));
	read_sysctl("/proc/sys/kernel/core_pipe_limit", saved_limit, sizeof(saved_limit));
	if (strstr(saved_pattern, "ringkeeper coredump --handle"))
		cr_skip_test("ringkeeper's handler is installed on this machine: not touching it");
	keep_core_settings();
	sysctl_set_restored("/proc/sys/kernel/core_pattern", pattern);
	status = run_rk(install, NULL, NULL);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "install failed");
}

static void install_over_file_pattern(char *pattern, size_t len)
{
	snprintf(pattern, len, "%s/core.%%e.%%P", root);
	install_over(pattern);
}

Test(coredump, through_the_kernel_install_crash_uninstall, .fini = kernel_fini)
{
	char pattern[200], cmd[600], core[200], now[256], lim[32], *s;
	char *install[] = { (char *)rk_bin, "coredump", "--install", NULL };
	char *uninstall[] = { (char *)rk_bin, "coredump", "--uninstall", NULL };
	char *rec[] = { (char *)rk_bin,
			"record",
			"--root",
			root,
			"--session",
			"k",
			"--",
			"/bin/sh",
			"-c",
			"ulimit -c unlimited; kill -SEGV $$",
			NULL };
	struct stat st;
	int status;

	install_over_file_pattern(pattern, sizeof(pattern));
	read_sysctl("/proc/sys/kernel/core_pattern", now, sizeof(now));
	cr_assert_not_null(strstr(now, "coredump --handle"), "core_pattern is %s", now);
	read_sysctl("/proc/sys/kernel/core_pipe_limit", lim, sizeof(lim));
	cr_assert_geq(atoi(lim), 1, "core_pipe_limit %s", lim);
	status = run_rk(install, NULL, NULL); /* twice: harmless */
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* Not under the default root: this session's buffers are not found, the core passes. */
	run_rk(rec, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "ls %s/core.sh.* 2>/dev/null | head -1", root);
	s = sh_out(cmd, NULL);
	s[strcspn(s, "\n")] = '\0';
	snprintf(core, sizeof(core), "%s", s);
	free(s);
	cr_assert_neq(core[0], '\0', "no core from the kernel through the handler in %s", root);
	cr_assert_eq(stat(core, &st), 0);
	snprintf(cmd, sizeof(cmd), "gdb -batch -nx -ex bt /bin/sh %s 2>&1 | grep -c '^#'", core);
	s = sh_out(cmd, NULL);
	cr_assert_gt(atoi(s), 0, "gdb finds no frame in %s", core);
	free(s);

	status = run_rk(uninstall, NULL, NULL);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	read_sysctl("/proc/sys/kernel/core_pattern", now, sizeof(now));
	cr_assert_str_eq(now, pattern, "uninstall restores exactly what was there");
	read_sysctl("/proc/sys/kernel/core_pipe_limit", lim, sizeof(lim));
	cr_assert_str_eq(lim, saved_limit);
}

static char crash_session[64];

static void crash_fini(void)
{
	char rm[200];

	kernel_fini();
	if (crash_session[0]) {
		snprintf(rm, sizeof(rm), "rm -rf /dev/shm/ringkeeper/%s", crash_session);
		if (system(rm))
			fprintf(stderr, "cannot remove the session %s\n", crash_session);
	}
}

/*
 * Through the kernel, a traced crash: the BPF side sees the SIGSEGV, the
 * recorder drains and freezes the process's buffers, the handler waits for
 * that and puts them in the core. The history ends at the crash; record
 * exits 128 + 11.
 */
Test(coredump, through_the_kernel_a_traced_crash_carries_its_frozen_history, .fini = crash_fini)
{
	char pattern[200], cmd[600], core[200], dir[200], *s, *err;
	char *rec[] = { (char *)rk_bin,
			"record",
			"--session",
			crash_session,
			"--",
			"/bin/sh",
			"-c",
			"ulimit -c unlimited; sleep 0.2; kill -SEGV $$",
			NULL };
	struct rk_session_stat st;
	int status;

	snprintf(crash_session, sizeof(crash_session), "itest-crash-%d", getpid());
	install_over_file_pattern(pattern, sizeof(pattern));

	status = run_rk(rec, NULL, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGSEGV, "record: 0x%x\n%s",
		  status, err);
	cr_assert_not_null(strstr(err, "killed by signal 11"), "%s", err);
	free(err);
	snprintf(cmd, sizeof(cmd), "ls %s/core.sh.* 2>/dev/null | head -1", root);
	s = sh_out(cmd, NULL);
	s[strcspn(s, "\n")] = '\0';
	snprintf(core, sizeof(core), "%s", s);
	free(s);
	cr_assert_neq(core[0], '\0', "no core in %s", root);

	snprintf(cmd, sizeof(cmd), "%s show --core %s 2>&1", rk_bin, core);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "sched/"), "the core has no sched buffer:\n%s", s);
	cr_assert_not_null(strstr(s, "crashed"), "not frozen as crashed:\n%s", s);
	free(s);
	snprintf(cmd, sizeof(cmd), "readelf -n %s | grep -c RINGKEEPER", core);
	s = sh_out(cmd, NULL);
	cr_assert_geq(atoi(s), 2, "a session note and a buffer: %s", s);
	free(s);
	/* The kernel was dumping core: the handler waited for the freeze, and it came. */
	snprintf(cmd, sizeof(cmd), "grep -a -c 'frozen yes' %s", core);
	s = sh_out(cmd, NULL);
	cr_assert_eq(atoi(s), 1, "the session note does not say 'frozen yes'");
	free(s);

	snprintf(dir, sizeof(dir), "/dev/shm/ringkeeper/%s", crash_session);
	cr_assert_eq(rk_session_stat_read(dir, &st), 0);
	cr_assert_eq(st.crashes, 1);
	cr_assert_geq(st.after_crash, 1, "the exit's records come after the crash: not written");
	/* stat says who crashed, of what, and where its core went. */
	snprintf(cmd, sizeof(cmd), "%s stat %s 2>&1", rk_bin, crash_session);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "crash: pid "), "%s", s);
	cr_assert_not_null(strstr(s, "signal 11"), "%s", s);
	{
		char where[260];

		snprintf(where, sizeof(where), "core %s", core);
		cr_assert_not_null(strstr(s, where), "stat does not say where the core went:\n%s",
				   s);
	}
	free(s);
}

/* What a crasher run printed and where its core went. */
struct crashed {
	char core[200];
	unsigned int pid, crasher, workers[256];
	size_t nworkers;
};

/*
 * `record --session crash_session -e cpu-clock -g -- crasher ARGS` through
 * the installed handler over a file pattern in this test's root: it exits
 * 128 + @sig, its core is where the pattern says.
 */
static void traced_crash(const char *args, int sig, struct crashed *cr)
{
	char pattern[200], cmd[600], *out, *err, *s, *p;
	char *rec[] = { (char *)rk_bin, "record", "--session", crash_session, "-e", "cpu-clock",
			"-g",		"--",	  "/bin/sh",   "-c",	      cmd,  NULL };
	const char *crasher = getenv("RK_CRASHER");
	int status;

	if (!crasher)
		cr_skip_test("RK_CRASHER is not set: run through make integration");
	memset(cr, 0, sizeof(*cr));
	snprintf(crash_session, sizeof(crash_session), "itest-crash-%d", getpid());
	install_over_file_pattern(pattern, sizeof(pattern));
	snprintf(cmd, sizeof(cmd), "exec %s %s", crasher, args);
	status = run_rk(rec, &out, &err);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig,
		  "record: 0x%x, want the shell's 128 + %d\n%s", status, sig, err);
	for (p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		unsigned int v;

		if (sscanf(p, "worker %u", &v) == 1 && cr->nworkers < 256)
			cr->workers[cr->nworkers++] = v;
		else if (sscanf(p, "crasher %u", &v) == 1)
			cr->crasher = v;
	}
	cr_assert_neq(cr->crasher, 0, "no crasher line:\n%s\n%s", out, err);
	free(out);
	free(err);
	snprintf(cmd, sizeof(cmd), "ls %s/core.crasher.* 2>/dev/null | head -1", root);
	s = sh_out(cmd, NULL);
	s[strcspn(s, "\n")] = '\0';
	snprintf(cr->core, sizeof(cr->core), "%s", s);
	free(s);
	cr_assert_neq(cr->core[0], '\0', "no core in %s", root);
	p = strrchr(cr->core, '.');
	cr->pid = (unsigned int)atoi(p + 1);
	cr_assert_gt(cr->pid, 0);
}

/* The time of the crash record that ends @tid's sched history in the core (0: none). */
static unsigned long long crash_time_of(const struct crashed *cr, unsigned int tid)
{
	char cmd[600], *s;
	unsigned long long t;

	snprintf(cmd, sizeof(cmd),
		 "%s show --core %s --json %u | grep RINGKEEPER_CRASH | tail -1 | "
		 "grep -o '\"time\":[0-9]*' | cut -d: -f2",
		 rk_bin, cr->core, tid);
	s = sh_out(cmd, NULL);
	t = strtoull(s, NULL, 10);
	free(s);
	return t;
}

/* The newest cpu-clock sample of @tid in the core (0: none). */
static unsigned long long last_sample_time(const struct crashed *cr, unsigned int tid)
{
	char cmd[600], *s;
	unsigned long long t;

	snprintf(cmd, sizeof(cmd),
		 "%s show --core %s --json -e cpu-clock %u | grep '\"PERF_RECORD_SAMPLE\"' | "
		 "grep -o '\"time\":[0-9]*' | cut -d: -f2 | sort -n | tail -1",
		 rk_bin, cr->core, tid);
	s = sh_out(cmd, NULL);
	t = strtoull(s, NULL, 10);
	free(s);
	return t;
}

/*
 * Every thread's sched history ends with the crash record naming the
 * crashing thread and @sig, and no sample of it is later than that.
 */
static void assert_history_ends_at_crash(const struct crashed *cr, unsigned int tid, int sig)
{
	char cmd[600], want[96], *s;
	unsigned long long ct, st;

	snprintf(cmd, sizeof(cmd), "%s show --core %s %u | grep -v '^#' | tail -1", rk_bin,
		 cr->core, tid);
	s = sh_out(cmd, NULL);
	snprintf(want, sizeof(want), "RINGKEEPER_CRASH signal %d (SIG", sig);
	cr_assert_not_null(strstr(s, want), "tid %u: its last record is not the crash: %s", tid, s);
	snprintf(want, sizeof(want), "delivered to tid %u", cr->crasher);
	cr_assert_not_null(strstr(s, want), "tid %u: %s", tid, s);
	free(s);
	ct = crash_time_of(cr, tid);
	cr_assert_gt(ct, 0);
	st = last_sample_time(cr, tid);
	cr_assert_leq(st, ct, "tid %u: a sample at %llu, after the crash at %llu", tid, st, ct);
}

/*
 * The crashing thread's last samples are in the function it crashed in
 * (the last 3: one may land in the vdso's clock_gettime, whose frame the
 * unwinder can skip).
 */
static void assert_last_sample_in(const struct crashed *cr, const char *fn)
{
	char cmd[600], *s;

	snprintf(cmd, sizeof(cmd),
		 "%s show --core %s -e cpu-clock %u | "
		 "awk '/cpu-clock:/{c=a; a=b; b=\"\"} {b=b $0 \"\\n\"} "
		 "END{printf \"%%s%%s%%s\", c, a, b}'",
		 rk_bin, cr->core, cr->crasher);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "cpu-clock:"), "no sample of the crasher");
	cr_assert_not_null(strstr(s, fn), "none of the last 3 samples is in %s:\n%s", fn, s);
	free(s);
}

/*
 * The core alone, seen: `sched --core` has a row per thread; `export
 * --perfetto --core` reads back with the official protos (when they are
 * installed) with a crash instant on every thread and crash_here in a
 * sample's stack.
 */
static void view_of_core(const struct crashed *cr)
{
	const char *py = getenv("RK_PERFETTO_PY");
	char cmd[1600], repo[256], *s;
	size_t i;
	int st;

	snprintf(cmd, sizeof(cmd), "%s sched --core %s 2>&1", rk_bin, cr->core);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	cr_assert_eq(count_of(s, "\ncrasher "), (int)cr->nworkers + 2, "sched --core:\n%s", s);
	free(s);
	snprintf(cmd, sizeof(cmd), "%s export --core %s --perfetto %s/c.pftrace 2>&1", rk_bin,
		 cr->core, root);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", s);
	free(s);
	if (!py || access(py, X_OK))
		return; /* the protos are not there: the view suite says so */
	source_tree(repo, sizeof(repo), NULL, 0);
	snprintf(cmd, sizeof(cmd),
		 "%s %s/tests/perfetto_check.py %s/c.pftrace --function crash_here "
		 "--instant %u:crash --instant %u:crash",
		 py, repo, root, cr->crasher, cr->pid);
	for (i = 0; i < cr->nworkers; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " --instant %u:crash",
			 cr->workers[i]);
	s = sh_out(cmd, &st);
	cr_assert_eq(st, 0, "%s\n%s", cmd, s);
	free(s);
}

/*
 * Through the kernel, the program: threads running identifiable
 * code, one of which segfaults, recorded with -e cpu-clock -g. The core is
 * where the previous pattern said; gdb shows the crashing function; every
 * thread's history is in the core and ends at the crash; the crashing
 * thread's last samples are in the crashing function; stat (text and JSON)
 * says who crashed and where the core went; export says what perf.data
 * cannot carry (and, on the host only, perf script, sched and Perfetto read
 * the exports).
 */
Test(coredump, through_the_kernel_a_segfault_ends_every_thread_history_at_the_crash,
     .fini = crash_fini)
{
	char cmd[700], want[300], *s;
	struct crashed cr;
	size_t i;

	traced_crash("-t 4", SIGSEGV, &cr);
	cr_assert_eq(cr.nworkers, 3);
	snprintf(cmd, sizeof(cmd), "gdb -batch -nx -ex 'thread apply all bt' %s %s 2>&1",
		 getenv("RK_CRASHER"), cr.core);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "in crash_here ()"), "gdb:\n%s", s);
	cr_assert_not_null(strstr(s, "worker_loop"), "gdb:\n%s", s);
	free(s);

	snprintf(cmd, sizeof(cmd), "%s show --core %s", rk_bin, cr.core);
	s = sh_out(cmd, NULL);
	for (i = 0; i < cr.nworkers; i++) {
		snprintf(want, sizeof(want), "sched/%u ", cr.workers[i]);
		cr_assert_not_null(strstr(s, want), "no %s in the core:\n%s", want, s);
	}
	free(s);
	assert_history_ends_at_crash(&cr, cr.crasher, SIGSEGV);
	assert_history_ends_at_crash(&cr, cr.pid, SIGSEGV);
	for (i = 0; i < cr.nworkers; i++)
		assert_history_ends_at_crash(&cr, cr.workers[i], SIGSEGV);
	assert_last_sample_in(&cr, "crash_here+");

	snprintf(cmd, sizeof(cmd), "%s stat --json %s", rk_bin, crash_session);
	s = sh_out(cmd, NULL);
	snprintf(want, sizeof(want), "\"crashes_seen\":[{\"pid\":%u,\"tid\":%u,\"signal\":11,",
		 cr.pid, cr.crasher);
	cr_assert_not_null(strstr(s, want), "stat --json:\n%s", s);
	snprintf(want, sizeof(want), "\"comm\":\"crasher\",\"core\":\"%s\"}]", cr.core);
	cr_assert_not_null(strstr(s, want), "stat --json:\n%s", s);
	free(s);

	snprintf(cmd, sizeof(cmd), "%s export --core %s --perf-data %s/c.data 2>&1 >/dev/null",
		 rk_bin, cr.core, root);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "5 crash records"), "export is silent about them:\n%s", s);
	free(s);
	if (in_vmtest())
		return; /* what follows reads the export and the core's notes: the host does */
	snprintf(cmd, sizeof(cmd), "%s/c.data", root);
	assert_perf_reads(cmd);
	snprintf(cmd, sizeof(cmd), "perf script -i %s/c.data 2>/dev/null | grep -c crash_here",
		 root);
	s = sh_out(cmd, NULL);
	cr_assert_gt(atoi(s), 0, "perf script finds no sample in crash_here");
	free(s);
	view_of_core(&cr);
}

/* The abort() variant: SIGABRT from inside the crashing function. */
Test(coredump, through_the_kernel_an_abort_ends_every_thread_history_at_the_crash,
     .fini = crash_fini)
{
	char cmd[700], *s;
	struct crashed cr;

	traced_crash("-t 3 -a", SIGABRT, &cr);
	snprintf(cmd, sizeof(cmd), "gdb -batch -nx -ex 'thread apply all bt' %s %s 2>&1",
		 getenv("RK_CRASHER"), cr.core);
	s = sh_out(cmd, NULL);
	cr_assert_not_null(strstr(s, "abort"), "gdb:\n%s", s);
	cr_assert_not_null(strstr(s, "crash_here"), "gdb:\n%s", s);
	free(s);
	assert_history_ends_at_crash(&cr, cr.crasher, SIGABRT);
	assert_history_ends_at_crash(&cr, cr.workers[0], SIGABRT);
	assert_history_ends_at_crash(&cr, cr.pid, SIGABRT);
	/* abort() raises from libc: the sample before it is in libc or in crash_here. */
	assert_last_sample_in(&cr, "crasher");
}

/*
 * A process forked without exec (its image is its parent's, and the kernel
 * writes no MMAP for a fork) crashes: its samples in the core still
 * resolve to the function it crashed in.
 */
Test(coredump, through_the_kernel_a_forked_child_s_core_resolves_its_samples, .fini = crash_fini)
{
	struct crashed cr;

	traced_crash("-f -t 2", SIGSEGV, &cr);
	assert_history_ends_at_crash(&cr, cr.crasher, SIGSEGV);
	assert_last_sample_in(&cr, "crash_here+");
}

/*
 * 200 threads crashing: every one of their buffers is in the core, frozen
 * as crashed (the handler waited and the freeze came), and the core file
 * is as sparse as the kernel would have written it (200 untouched 8 MiB
 * stacks are holes, not 1.6 GB of zeros).
 */
Test(coredump, through_the_kernel_two_hundred_threads_crash, .fini = crash_fini)
{
	char cmd[700], *s;
	struct crashed cr;
	struct stat sb;

	traced_crash("-t 200 -s 50", SIGSEGV, &cr);
	cr_assert_eq(cr.nworkers, 199);
	snprintf(cmd, sizeof(cmd), "%s show --core %s | grep -c '^  sched/.* crashed$'", rk_bin,
		 cr.core);
	s = sh_out(cmd, NULL);
	cr_assert_eq(atoi(s), 201, "sched buffers frozen as crashed: %s", s);
	free(s);
	snprintf(cmd, sizeof(cmd), "grep -a -c 'frozen yes' %s", cr.core);
	s = sh_out(cmd, NULL);
	cr_assert_eq(atoi(s), 1, "the handler did not see the freeze");
	free(s);
	assert_history_ends_at_crash(&cr, cr.crasher, SIGSEGV);
	assert_history_ends_at_crash(&cr, cr.workers[0], SIGSEGV);
	assert_history_ends_at_crash(&cr, cr.workers[198], SIGSEGV);
	cr_assert_eq(stat(cr.core, &sb), 0);
	cr_assert_lt((unsigned long long)sb.st_blocks * 512, (unsigned long long)sb.st_size / 4,
		     "the core takes %lld bytes for %lld: zero pages were written",
		     (long long)sb.st_blocks * 512, (long long)sb.st_size);
}

/*
 * A crash storm through the installed handler: every core the kernel
 * would have written with the file pattern alone is written (the kernel
 * skips a pipe dump past core_pipe_limit concurrent ones).
 */
#define STORM 24

Test(coredump, through_the_kernel_a_crash_storm_loses_no_core, .fini = kernel_fini)
{
	char pattern[200], cmd[400], *s;
	pid_t kids[STORM];
	int go[2], i, dumped = 0;

	install_over_file_pattern(pattern, sizeof(pattern));
	cr_assert_eq(pipe(go), 0);
	for (i = 0; i < STORM; i++) {
		kids[i] = fork();
		cr_assert_geq(kids[i], 0);
		if (!kids[i]) {
			struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
			char b;

			close(go[1]);
			signal(SIGSEGV, SIG_DFL);
			setrlimit(RLIMIT_CORE, &rl);
			/* All wait for the same EOF, then crash at once. */
			if (read(go[0], &b, 1) < 0)
				_exit(1);
			kill(getpid(), SIGSEGV);
			_exit(2);
		}
	}
	close(go[0]);
	close(go[1]);
	for (i = 0; i < STORM; i++) {
		int st = wait_for(kids[i], 60000);

		cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "child %d: 0x%x", i, st);
		dumped += WCOREDUMP(st) ? 1 : 0;
	}
	snprintf(cmd, sizeof(cmd), "ls %s | grep -c '^core\\.'", root);
	s = sh_out(cmd, NULL);
	cr_assert_eq(atoi(s), STORM, "%d cores of %d concurrent crashes (%d dumped)", atoi(s),
		     STORM, dumped);
	free(s);
	cr_assert_eq(dumped, STORM);
}

/*
 * A socket core_pattern (@PATH, Linux 6.16+) cannot be chained to without
 * hiding the crashing process from its server: --install refuses it and
 * changes nothing.
 */
Test(coredump, install_refuses_a_socket_pattern, .fini = kernel_fini)
{
	char *install[] = { (char *)rk_bin, "coredump", "--install", NULL };
	char now[256];
	struct stat st;

	read_sysctl("/proc/sys/kernel/core_pattern", saved_pattern, sizeof(saved_pattern));
	read_sysctl("/proc/sys/kernel/core_pipe_limit", saved_limit, sizeof(saved_limit));
	if (strstr(saved_pattern, "ringkeeper coredump --handle"))
		cr_skip_test("ringkeeper's handler is installed on this machine: not touching it");
	keep_core_settings();
	sysctl_set_restored("/proc/sys/kernel/core_pattern", "@/run/ringkeeper-test-none.sock");
	read_sysctl("/proc/sys/kernel/core_pattern", now, sizeof(now));
	if (now[0] != '@')
		cr_skip_test("this kernel (before 6.16) has no socket core_pattern");
	expect_error(install, 1, "is a socket");
	read_sysctl("/proc/sys/kernel/core_pattern", now, sizeof(now));
	cr_assert_str_eq(now, "@/run/ringkeeper-test-none.sock", "install changed it");
	cr_assert_neq(stat("/run/ringkeeper/coredump.state", &st), 0, "a state was saved");
}

/* Run @cmd (a shell line), failing the test if it fails. */
static void sh_ok(const char *cmd)
{
	cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
}

/*
 * /dev/shm is writable by all: before the first recording after a boot, a
 * user can make the default root of sessions (here RINGKEEPER_HANDLER_ROOT)
 * and fill it with a copy of a live session (its loader a real, running
 * ringkeeper) whose crashes file is a symlink to a root-only file. The
 * handler reads none of it: the core passes unchanged, root's file stays
 * as it was. The same tree made root's is not read either: its stat file
 * is not the one its loader keeps mapped. The live session itself is.
 */
Test(coredump, a_root_of_sessions_a_user_made_is_not_trusted)
{
	char core[128], state[128], dir[128], out[200], cmd[1200], env[300];
	char hostile[160], secret[160];
	pid_t v, rk;

	v = user_crash_into(dir, sizeof(dir), "cores", 0, 0777, 0, core, state);
	rk = record_in_default_root(v, "trust", NULL);

	snprintf(secret, sizeof(secret), "%s/secret", root);
	snprintf(cmd, sizeof(cmd), "printf 'root only\\n' > %s && chmod 600 %s", secret, secret);
	sh_ok(cmd);
	snprintf(hostile, sizeof(hostile), "%s/hostile", root);
	snprintf(cmd, sizeof(cmd),
		 "mkdir %s && cp -a /dev/shm/ringkeeper/%s %s/x && ln -s %s %s/x/crashes && "
		 "chown -hR 65534:65534 %s",
		 hostile, traced_session, hostile, secret, hostile, hostile);
	sh_ok(cmd);
	snprintf(out, sizeof(out), "%s/core.%d", dir, v);
	snprintf(env, sizeof(env), "RINGKEEPER_HANDLER_ROOT=%s", hostile);

	/* A user's root. */
	cr_assert_eq(run_handler(state, core, v, 65534, env), 0);
	cr_assert(same_file(core, out), "a user's root of sessions went into the core");
	cr_assert_str_eq(slurp(secret), "root only\n", "the handler wrote through a symlink");
	cr_assert_eq(unlink(out), 0);

	/* Root's, but not what the loader it names wrote. */
	snprintf(cmd, sizeof(cmd), "chown -hR 0:0 %s && chmod 755 %s %s/x", hostile, hostile,
		 hostile);
	sh_ok(cmd);
	cr_assert_eq(run_handler(state, core, v, 65534, env), 0);
	cr_assert(same_file(core, out), "a session its loader did not write went into the core");
	cr_assert_str_eq(slurp(secret), "root only\n", "the handler wrote through a symlink");
	cr_assert_eq(unlink(out), 0);

	/* The live session: read (so the copies above would have been, were they trusted). */
	cr_assert_eq(run_handler(state, core, v, 65534, NULL), 0);
	cr_assert(!same_file(core, out), "the live session's buffers are not in the core");
	kill(rk, SIGINT);
	wait_for(rk, 30000);
}

/*
 * Notes-only cores (ulimit -c 0) are kept fairly per crashing user: with
 * 33 of one user's in the directory (older: mtime 1,000 s back and up) and
 * one of root's older still, root's next crash evicts that user's oldest,
 * never root's. Trimmed by age alone, root's went first.
 */
Test(coredump, notes_only_cores_are_trimmed_fairly_per_user)
{
	char core[128], state[128], pattern[200], crashes[160], path[300], env[200];
	struct timespec ts[2] = { { 0, 0 }, { 0, 0 } };
	int i, users = 0, roots = 0;
	struct dirent *de;
	pid_t v, rk;
	DIR *d;

	need_gcore();
	snprintf(pattern, sizeof(pattern), "%s/core.%%P", root);
	handler_files(core, sizeof(core), state, sizeof(state), pattern);
	snprintf(crashes, sizeof(crashes), "%s/crashes", root);
	cr_assert_eq(mkdir(crashes, 0700), 0);
	for (i = 0; i <= 33; i++) {
		int f;

		/* root's first and oldest, then the user's 33. */
		snprintf(path, sizeof(path), "%s/core.%d.%d.u%d.notes", crashes, 1000 + i,
			 1600000000 + i, i ? 65534 : 0);
		f = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		cr_assert_geq(f, 0);
		cr_assert_eq(write(f, "x", 1), 1);
		close(f);
		ts[0].tv_sec = ts[1].tv_sec = time(NULL) - 2000 + i;
		cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
	}
	v = start_sleep(0);
	rk = record_in_default_root(v, "fair", NULL);
	gcore(v, core);
	snprintf(env, sizeof(env), "RINGKEEPER_CRASH_DIR=%s", crashes);
	cr_assert_eq(run_handler_limit(state, core, v, 0, env, "0"), 0);
	kill(rk, SIGINT);
	wait_for(rk, 30000);
	d = opendir(crashes);
	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		users += strstr(de->d_name, ".u65534.notes") != NULL;
		roots += strstr(de->d_name, ".u0.notes") != NULL;
	}
	closedir(d);
	snprintf(path, sizeof(path), "%s/core.1000.1600000000.u0.notes", crashes);
	cr_assert_eq(access(path, F_OK), 0, "root's older notes were evicted for a user's");
	cr_assert_eq(roots, 2, "root's old and new notes: %d", roots);
	cr_assert_eq(users + roots, RK_CRASH_KEEP, "%d files kept", users + roots);
}

/*
 * A task in a user namespace of its own (unshare -Ur as nobody: root
 * there) creates its core with its capabilities there: in a directory of
 * its user's that only its CAP_DAC_OVERRIDE lets it write (0555), as the
 * kernel would. The handler once did it as nobody in the initial
 * namespace, and wrote nothing.
 */
Test(coredump, a_user_namespace_root_s_core_goes_where_the_kernel_would_write_it)
{
	char core[128], state[128], dir[128], exe[64], path[200], link[256];
	struct stat st;
	ssize_t n = 0;
	pid_t v;
	int i;

	need_gcore();
	if (access("/usr/bin/unshare", X_OK))
		cr_skip_test("no /usr/bin/unshare (util-linux)");
	cr_assert_eq(chmod(root, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/nsdir", root);
	cr_assert_eq(mkdir(dir, 0555), 0);
	cr_assert_eq(chown(dir, 65534, 65534), 0);
	v = fork();
	cr_assert_geq(v, 0);
	if (!v) {
		if (chdir(dir) || setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(125);
		execl("/usr/bin/unshare", "unshare", "-Ur", "/bin/sleep", "1000", (char *)NULL);
		_exit(127);
	}
	started[nstarted++] = v;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", v);
	for (i = 0; i < 500; i++) {
		n = readlink(exe, link, sizeof(link) - 1);
		if (n > 0 && (link[n] = '\0', strstr(link, "sleep")))
			break;
		if (waitpid(v, NULL, WNOHANG) == v)
			cr_skip_test(
				"unshare -Ur as nobody failed: no unprivileged user namespaces");
		usleep(10000);
	}
	cr_assert(n > 0 && strstr(link, "sleep"), "unshare did not exec sleep");
	snprintf(core, sizeof(core), "%s/in.core", root);
	gcore(v, core);
	snprintf(state, sizeof(state), "%s/state", root);
	write_state(state, "core.%P");
	cr_assert_eq(run_handler(state, core, v, 65534, NULL), 0, "the handler failed");
	snprintf(path, sizeof(path), "%s/core.%d", dir, v);
	cr_assert_eq(stat(path, &st), 0, "no core in %s", dir);
	cr_assert_eq(st.st_uid, 65534, "the core is uid %u's", st.st_uid);
	cr_assert(same_file(core, path), "the core changed on its way");
}

/* The CLONE_FS sibling of the test below: chdir to @arg when told, say so, wait to die. */
static int fs_pipes[2][2];

static int chdir_when_told(void *arg)
{
	char b;

	/* It dies with the process it shares its cwd with (the test's .fini kills that one). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1 ||
	    read(fs_pipes[0][0], &b, 1) != 1 || chdir((const char *)arg) ||
	    write(fs_pipes[1][1], "d", 1) != 1)
		_exit(1);
	pause();
	return 0;
}

/*
 * The kernel opens a relative core at the dump's start, in the cwd then:
 * a process sharing the task's fs_struct (CLONE_FS) that changes it during
 * the dump changes nothing. The handler takes the cwd when it starts; it
 * once took it when it made the file, after its wait.
 */
Test(coredump, a_relative_core_goes_to_the_cwd_at_the_dump_s_start)
{
	static char stack[1 << 16];
	char core[128], state[128], a[128], b[128], path[200], cmd[1200], env[64], line[16], c;
	int sk[2];
	pid_t v, h;

	need_gcore();
	cr_assert_eq(chmod(root, 0755), 0);
	snprintf(a, sizeof(a), "%s/a", root);
	snprintf(b, sizeof(b), "%s/b", root);
	cr_assert_eq(mkdir(a, 0777), 0);
	cr_assert_eq(mkdir(b, 0777), 0);
	cr_assert_eq(pipe(fs_pipes[0]), 0);
	cr_assert_eq(pipe(fs_pipes[1]), 0);
	v = fork();
	cr_assert_geq(v, 0);
	if (!v) {
		if (chdir(a) ||
		    clone(chdir_when_told, stack + sizeof(stack), CLONE_FS | SIGCHLD, b) < 0)
			_exit(125);
		execl("/bin/sleep", "sleep", "1000", (char *)NULL);
		_exit(127);
	}
	started[nstarted++] = v;
	usleep(100000);
	snprintf(core, sizeof(core), "%s/in.core", root);
	gcore(v, core);
	snprintf(state, sizeof(state), "%s/state", root);
	write_state(state, "core.%P");
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sk), 0);
	snprintf(env, sizeof(env), "RINGKEEPER_COREDUMP_PAUSE_FD=%d", sk[1]);
	snprintf(cmd, sizeof(cmd),
		 "env -i %s RINGKEEPER_COREDUMP_STATE=%s %s coredump --handle %d %d %d %d 11 "
		 "18446744073709551615 1700000000 0 0 1 testhost sleep '!bin!sleep' < %s",
		 env, state, rk_bin, v, v, v, v, core);
	{
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };

		h = spawn(argv, "/dev/null", "/dev/null", sk[1]);
	}
	close(sk[1]);
	/* The dump has started; the sibling moves the shared cwd, then the handler goes on. */
	cr_assert_eq(read_line_within(sk[0], line, sizeof(line), 30000), 0,
		     "the handler did not pause");
	cr_assert_eq(write(fs_pipes[0][1], "g", 1), 1);
	cr_assert_eq(read(fs_pipes[1][0], &c, 1), 1, "the sibling did not chdir");
	cr_assert_eq(write(sk[0], "g", 1), 1);
	close(sk[0]);
	cr_assert_eq(wait_for(h, 30000), 0, "the handler failed");
	snprintf(path, sizeof(path), "%s/core.%d", a, v);
	cr_assert_eq(access(path, F_OK), 0, "the core is not in the cwd at the dump's start");
	snprintf(path, sizeof(path), "%s/core.%d", b, v);
	cr_assert_neq(access(path, F_OK), 0, "the core followed the sibling's chdir");
}

/*
 * The CLONE_FS sibling of the test below: once its crasher (its parent)
 * waits for the handler to start or writes its core into the handler's
 * pipe, the dump has started; from then on it moves their shared cwd
 * between @arg's two directories, as fast as it can, until the crasher is
 * gone.
 */
static int move_cwd_once_dumping(void *arg)
{
	char *const *dirs = arg, path[64], wchan[64];
	pid_t crasher = getppid();
	uint64_t end = now_ms() + 30000;
	unsigned int i = 0;

	snprintf(path, sizeof(path), "/proc/%d/wchan", crasher);
	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, wchan, sizeof(wchan) - 1) : -1;

		if (fd >= 0)
			close(fd);
		/*
		 * Waiting for its handler to start (the kernel would have opened
		 * a file core by then), or writing into its pipe: pipe_write,
		 * anon_pipe_write since 6.16.
		 */
		if (n > 0 && (wchan[n] = '\0', strstr(wchan, "call_usermodehelper_exec") ||
						       strstr(wchan, "pipe_write")))
			break;
		if (getppid() != crasher || now_ms() > end)
			_exit(1);
	}
	while (getppid() == crasher)
		if (chdir(dirs[i++ & 1]))
			_exit(2);
	_exit(0);
}

/* The names in @dir, each removed; how many there were (the first in @name). */
static int take_files(const char *dir, char *name, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	char path[600];
	int n = 0;

	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (!n++ && name)
			snprintf(name, len, "%s", de->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	return n;
}

/*
 * Through the kernel, a relative pattern: each crasher's CLONE_FS sibling
 * moves their shared cwd (between two other directories) from the moment
 * the dump is under way, before the handler looks at /proc/PID/cwd. A
 * running recorder's BPF takes the cwd at the dump's start, as the kernel
 * resolves a file pattern there; every core lands in that directory, as
 * the kernel's own would (once: 9 of 20, the handler took the cwd it found).
 */
#define CWD_CRASHES 20

Test(coredump, through_the_kernel_a_clone_fs_sibling_does_not_steer_a_relative_core,
     .fini = kernel_fini)
{
	static char stack[1 << 16];
	char a[128], b[128], c[128], name[300], *dirs[2] = { b, c };
	int ready, i, in_a = 0, elsewhere = 0;
	char line[16];
	pid_t rk, v;

	cr_assert_eq(chmod(root, 0755), 0);
	snprintf(a, sizeof(a), "%s/a", root);
	snprintf(b, sizeof(b), "%s/b", root);
	snprintf(c, sizeof(c), "%s/c", root);
	cr_assert_eq(mkdir(a, 0755), 0);
	cr_assert_eq(mkdir(b, 0755), 0);
	cr_assert_eq(mkdir(c, 0755), 0);
	install_over("core.%P");
	rk = start_recorder_on(start_sleep(0), "cwd", &ready, NULL);
	cr_assert_eq(read_line_within(ready, line, sizeof(line), 30000), 0, "recorder not ready");
	close(ready);
	for (i = 0; i < CWD_CRASHES; i++) {
		int st, na, nb, nc;

		v = fork();
		cr_assert_geq(v, 0);
		if (!v) {
			/* A small core: the handler cuts a file core at RLIMIT_CORE, as the kernel. */
			struct rlimit rl = { 1 << 20, 1 << 20 };

			if (chdir(a) || setrlimit(RLIMIT_CORE, &rl) ||
			    clone(move_cwd_once_dumping, stack + sizeof(stack), CLONE_FS | SIGCHLD,
				  dirs) < 0)
				_exit(125);
			signal(SIGSEGV, SIG_DFL);
			raise(SIGSEGV);
			_exit(126);
		}
		st = wait_for(v, 60000);
		cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV && WCOREDUMP(st),
			  "crash %d: status 0x%x", i, st);
		na = take_files(a, name, sizeof(name));
		nb = take_files(b, NULL, 0);
		nc = take_files(c, NULL, 0);
		cr_assert(na <= 1 && na + nb + nc == 1, "crash %d: %d cores in a, %d in b, %d in c",
			  i, na, nb, nc);
		if (na) {
			char want[32];

			snprintf(want, sizeof(want), "core.%d", v);
			cr_assert_str_eq(name, want);
		}
		in_a += na;
		elsewhere += nb + nc;
	}
	kill(rk, SIGINT);
	cr_assert_eq(wait_for(rk, 30000), 0, "the recorder did not end cleanly");
	cr_assert_eq(in_a, CWD_CRASHES, "%d of %d cores in the cwd of the dump's start (%d moved)",
		     in_a, CWD_CRASHES, elsewhere);
}
