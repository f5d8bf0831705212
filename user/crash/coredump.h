/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * coredump.h - the core_pattern pipe handler: every traced process's core
 * gets its threads' buffers as ELF notes; every other core goes where the
 * previous core_pattern sent it, byte for byte. It chains to what handled
 * cores before (a file pattern, or a pipe handler such as
 * systemd-coredump), whose setting it saves at --install and restores at
 * --uninstall.
 *
 * Never lose a core: whatever fails, the core still goes to the previous
 * destination, unchanged, and the reason is logged (syslog).
 * Owns: RK_COREDUMP_STATE. May call: elfcore, bufile, session, util.
 */
#ifndef RK_COREDUMP_H
#define RK_COREDUMP_H

#include <stddef.h>
#include <sys/types.h>

#define RK_COREDUMP_STATE_DIR "/run/ringkeeper"
#define RK_COREDUMP_STATE RK_COREDUMP_STATE_DIR "/coredump.state"
/*
 * A traced process whose RLIMIT_CORE forbids a core file still keeps its
 * threads' history: a notes-only core (no memory) here, the newest
 * RK_CRASH_KEEP files and at most RK_CRASH_MAX_BYTES of them, trimmed fairly
 * per crashing user (its uid in the name: core.PID.TIME.uUID.notes).
 */
#define RK_CRASH_DIR "/var/lib/ringkeeper/crashes"
#define RK_CRASH_KEEP 32
#define RK_CRASH_MAX_BYTES (256ull << 20)

/**
 * struct rk_crash - what the kernel tells a core_pattern handler, in the
 * order of our pattern's arguments.
 * @pid, @tid: global (%P, %I); @ns_pid, @ns_tid: in the process's own pid
 * namespace (%p, %i). @sig: %s. @rlimit_core: %c. @time: %t. @uid, @gid:
 * %u, %g. @dumpable: %d. @host, @comm, @exe: %h, %e, %E (as the kernel
 * expanded them: '/' already '!').
 * Not among our arguments (the pattern's length is bounded), found by the
 * handler while the kernel holds the crashing process: @cpu (%C, -1
 * unknown) the dumping thread's last CPU, @pidfd (%F, -1 none) a pidfd of
 * the process, @exe_name (%f) the executable's file name.
 */
struct rk_crash {
	pid_t pid, tid, ns_pid, ns_tid;
	int sig;
	unsigned long long rlimit_core;
	long long time;
	unsigned int uid, gid;
	int dumpable;
	char host[256];
	char comm[64];
	char exe[4096];
	int cpu;
	int pidfd;
	char exe_name[256];
};

/* %d: the kernel's SUID_DUMP_ROOT (fs.suid_dumpable=2): a root-owned core, absolute paths only. */
#define RK_DUMP_ROOT 2

/**
 * rk_core_expand() - expand one token of a core_pattern as the kernel's
 * format_corename() does (%p %P %i %I %u %g %d %s %t %h %e %f %E %c %C %F
 * %%; an unknown specifier expands to nothing).
 * Return: 0, or -ENAMETOOLONG.
 */
int rk_core_expand(const char *token, const struct rk_crash *c, char *out, size_t len);

/** rk_cmd_coredump() - `ringkeeper coredump ...`. Return: the exit status. */
int rk_cmd_coredump(int argc, char **argv);

#endif /* RK_COREDUMP_H */
