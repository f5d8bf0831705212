// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * coredump.c - install, remove and be the core_pattern pipe handler
 * (see coredump.h).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <bpf/bpf.h>
#include "bufile.h"
#include "coredump.h"
#include "elfcore.h"
#include "retain.h"
#include "session.h"
#include "util.h"

#define PATTERN_FILE "/proc/sys/kernel/core_pattern"
#define PIPE_LIMIT_FILE "/proc/sys/kernel/core_pipe_limit"
#define USES_PID_FILE "/proc/sys/kernel/core_uses_pid"
/* The kernel's CORENAME_MAX_SIZE: a longer core_pattern is cut. */
#define PATTERN_MAX 127
/* What the kernel does with no core_pattern set: a file "core" in the cwd. */
#define SAFE_DEFAULT "core"
#define MAX_NOTES RK_CORE_MAX_BUFS
/*
 * core_pipe_limit while the handler is installed: INT_MAX, the most the
 * sysctl takes. The kernel skips a pipe dump past the limit of concurrent
 * ones; a file core it would have written has no such limit, so neither
 * may we (a crash storm of 20 at limit 1 kept 5-7 cores).
 */
#define RK_PIPE_LIMIT 2147483647

/* Where a chained pipe handler finds the pidfd %F names (the kernel's COREDUMP_PIDFD_NUMBER). */
#define RK_PIDFD_FD 3

/* Our handler's arguments, in struct rk_crash order. */
static const char handler_args[] = "coredump --handle %P %I %p %i %s %c %t %u %g %d %h %e %E";

static int read_line_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -errno;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err = 0;
	size_t n = strlen(s);

	if (fd < 0)
		return -errno;
	if (write(fd, s, n) != (ssize_t)n)
		err = -errno ? -errno : -EIO;
	close(fd);
	return err;
}

int rk_core_expand(const char *t, const struct rk_crash *c, char *out, size_t len)
{
	size_t o = 0;

	for (; *t; t++) {
		char v[4200];
		const char *esc = NULL;

		v[0] = '\0';
		if (*t != '%') {
			v[0] = *t;
			v[1] = '\0';
		} else {
			switch (*++t) {
			case '\0':
				t--;
				break;
			case '%':
				strcpy(v, "%");
				break;
			case 'p':
				snprintf(v, sizeof(v), "%d", c->ns_pid);
				break;
			case 'P':
				snprintf(v, sizeof(v), "%d", c->pid);
				break;
			case 'i':
				snprintf(v, sizeof(v), "%d", c->ns_tid);
				break;
			case 'I':
				snprintf(v, sizeof(v), "%d", c->tid);
				break;
			case 'u':
				snprintf(v, sizeof(v), "%u", c->uid);
				break;
			case 'g':
				snprintf(v, sizeof(v), "%u", c->gid);
				break;
			case 'd':
				snprintf(v, sizeof(v), "%d", c->dumpable);
				break;
			case 's':
				snprintf(v, sizeof(v), "%d", c->sig);
				break;
			case 't':
				snprintf(v, sizeof(v), "%lld", c->time);
				break;
			case 'c':
				snprintf(v, sizeof(v), "%llu", c->rlimit_core);
				break;
			case 'C':
				if (c->cpu >= 0)
					snprintf(v, sizeof(v), "%d", c->cpu);
				break;
			case 'F':
				if (c->pidfd >= 0)
					snprintf(v, sizeof(v), "%d", c->pidfd);
				break;
			case 'h':
				esc = c->host;
				break;
			case 'e':
				esc = c->comm;
				break;
			case 'f':
				esc = c->exe_name;
				break;
			case 'E':
				snprintf(v, sizeof(v), "%s", c->exe);
				break;
			default:
				break; /* the kernel drops an unknown specifier */
			}
		}
		if (esc) {
			/* cn_esc_printf(): '/' is '!', and a leading "." or ".." is escaped too. */
			size_t i;

			snprintf(v, sizeof(v), "%s", esc);
			for (i = 0; v[i]; i++)
				if (v[i] == '/')
					v[i] = '!';
			if ((!strcmp(v, ".") || !strcmp(v, "..")) && o == 0)
				v[0] = '!';
		}
		if (o + strlen(v) >= len)
			return -ENAMETOOLONG;
		memcpy(out + o, v, strlen(v));
		o += strlen(v);
	}
	out[o] = '\0';
	return 0;
}

/* Is @pattern a ringkeeper handler's? */
static int is_ours(const char *pattern)
{
	return pattern[0] == '|' && strstr(pattern, "ringkeeper coredump --handle ");
}

struct state {
	char pattern[PATTERN_MAX + 2];
	unsigned long pipe_limit;
};

/*
 * The state file; RINGKEEPER_COREDUMP_STATE overrides it for tests that
 * run the handler by hand (the kernel starts it with an empty environment).
 */
static const char *state_path(void)
{
	const char *p = getenv("RINGKEEPER_COREDUMP_STATE");

	return p && *p ? p : RK_COREDUMP_STATE;
}

static int state_read(struct state *s)
{
	char line[512];
	FILE *f = fopen(state_path(), "re");
	int have = 0;

	if (!f)
		return -errno;
	memset(s, 0, sizeof(*s));
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "pattern=", 8)) {
			if (strlen(line + 8) >= sizeof(s->pattern))
				continue; /* longer than the kernel takes: not ours */
			memcpy(s->pattern, line + 8, strlen(line + 8) + 1);
			have |= 1;
		} else if (sscanf(line, "pipe_limit=%lu", &s->pipe_limit) == 1) {
			have |= 2;
		}
	}
	fclose(f);
	return have == 3 ? 0 : -EBADMSG;
}

static int state_write(const struct state *s)
{
	char tmp[] = RK_COREDUMP_STATE ".XXXXXX";
	FILE *f;
	int fd;

	if (mkdir(RK_COREDUMP_STATE_DIR, 0700) && errno != EEXIST)
		return -errno;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return -ENOMEM;
	}
	fprintf(f, "pattern=%s\npipe_limit=%lu\n", s->pattern, s->pipe_limit);
	if (fflush(f) || fsync(fd) || fclose(f) || rename(tmp, RK_COREDUMP_STATE)) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	return 0;
}

static int install(void)
{
	char cur[PATTERN_MAX + 2], lim[32], self[PATH_MAX], pattern[PATH_MAX + 128], b[32];
	struct state s;
	ssize_t n;
	int err;

	if (read_line_file(PATTERN_FILE, cur, sizeof(cur)) ||
	    read_line_file(PIPE_LIMIT_FILE, lim, sizeof(lim))) {
		rk_err("cannot read %s / %s: %s", PATTERN_FILE, PIPE_LIMIT_FILE, strerror(errno));
		return 1;
	}
	if (is_ours(cur)) {
		/* An earlier version's install may have left a limit that skips dumps. */
		snprintf(b, sizeof(b), "%d", RK_PIPE_LIMIT);
		err = strcmp(lim, b) ? write_file(PIPE_LIMIT_FILE, b) : 0;
		if (err) {
			rk_err("cannot raise core_pipe_limit from %s to %s: %s", lim, b,
			       strerror(-err));
			return 1;
		}
		printf("ringkeeper's core handler is installed already (core_pattern %s, "
		       "core_pipe_limit %s)\n",
		       cur, b);
		return 0;
	}
	if (cur[0] == '@') {
		/*
		 * Linux 6.16+ connects to that socket itself, and its server knows
		 * the crashing process by the connection's peer: from us it would
		 * see the handler instead. Refusing keeps every core where it goes.
		 */
		rk_err("core_pattern is a socket (%s): ringkeeper cannot chain to a socket "
		       "handler without hiding the crashing process from it; nothing changed "
		       "(set a file or |pipe core_pattern first to use ringkeeper's handler)",
		       cur);
		return 1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		rk_err("cannot find my own path: %s", strerror(errno));
		return 1;
	}
	self[n] = '\0';
	snprintf(pattern, sizeof(pattern), "|%s %s", self, handler_args);
	if (strlen(pattern) > PATTERN_MAX) {
		rk_err("the handler's core_pattern would be %zu characters, the kernel takes %d: "
		       "install ringkeeper in a shorter path (make install)",
		       strlen(pattern), PATTERN_MAX);
		return 1;
	}
	snprintf(s.pattern, sizeof(s.pattern), "%s", cur);
	s.pipe_limit = strtoul(lim, NULL, 10);
	err = state_write(&s);
	if (err) {
		rk_err("cannot save the current core_pattern in %s: %s", RK_COREDUMP_STATE,
		       strerror(-err));
		return 1;
	}
	/*
	 * Nonzero: the kernel keeps the crashing task unreaped while the handler
	 * runs (its /proc, cwd, root, credentials). The largest the kernel takes:
	 * a dump over the limit is skipped, and a file pattern has no limit.
	 */
	snprintf(b, sizeof(b), "%d", RK_PIPE_LIMIT);
	err = write_file(PIPE_LIMIT_FILE, b);
	if (!err)
		err = write_file(PATTERN_FILE, pattern);
	if (err) {
		snprintf(b, sizeof(b), "%lu", s.pipe_limit);
		write_file(PIPE_LIMIT_FILE, b);
		unlink(RK_COREDUMP_STATE);
		rk_err("cannot set core_pattern: %s (left as it was)", strerror(-err));
		return 1;
	}
	printf("installed: core_pattern %s (was: %s; core_pipe_limit %s, was %lu)\n", pattern, cur,
	       b, s.pipe_limit);
	return 0;
}

static int uninstall(void)
{
	char cur[PATTERN_MAX + 2], b[32];
	struct state s;
	int err;

	if (read_line_file(PATTERN_FILE, cur, sizeof(cur))) {
		rk_err("cannot read %s: %s", PATTERN_FILE, strerror(errno));
		return 1;
	}
	err = state_read(&s);
	if (!is_ours(cur)) {
		printf("ringkeeper's core handler is not installed (core_pattern %s)%s\n", cur,
		       err ? "" : "; removing its stale saved state");
		if (!err)
			unlink(RK_COREDUMP_STATE);
		return 0;
	}
	if (err) {
		rk_err("no saved core_pattern in %s (%s): restoring the kernel's default, '%s' "
		       "with core_pipe_limit 0",
		       RK_COREDUMP_STATE, strerror(-err), SAFE_DEFAULT);
		snprintf(s.pattern, sizeof(s.pattern), SAFE_DEFAULT);
		s.pipe_limit = 0;
	}
	err = write_file(PATTERN_FILE, s.pattern[0] ? s.pattern : SAFE_DEFAULT);
	snprintf(b, sizeof(b), "%lu", s.pipe_limit);
	if (!err)
		err = write_file(PIPE_LIMIT_FILE, b);
	if (err) {
		rk_err("cannot restore core_pattern: %s", strerror(-err));
		return 1;
	}
	unlink(RK_COREDUMP_STATE);
	printf("uninstalled: core_pattern %s, core_pipe_limit %lu\n", s.pattern, s.pipe_limit);
	return 0;
}

static int status(void)
{
	char cur[PATTERN_MAX + 2] = "", lim[32] = "";
	struct state s;
	int err;

	read_line_file(PATTERN_FILE, cur, sizeof(cur));
	read_line_file(PIPE_LIMIT_FILE, lim, sizeof(lim));
	printf("core_pattern: %s\n", cur);
	printf("core_pipe_limit: %s\n", lim);
	printf("ringkeeper's handler: %s\n", is_ours(cur) ? "installed" : "not installed");
	err = state_read(&s);
	if (!err)
		printf("previous (restored by --uninstall): core_pattern %s, core_pipe_limit %lu\n",
		       s.pattern, s.pipe_limit);
	else if (is_ours(cur))
		printf("previous: unknown (%s: %s): --uninstall restores '%s'\n", RK_COREDUMP_STATE,
		       strerror(-err), SAFE_DEFAULT);
	return 0;
}

/* --- the handler ----------------------------------------------------------- */

/*
 * Where the core goes, and how much of stdin was consumed: the fault
 * handler's fallback (a bug in us must not cost the core).
 */
static volatile int g_out = -1;
static volatile sig_atomic_t g_started;

static void fault(int sig)
{
	static char buf[1 << 16];
	ssize_t n;

	/* Deliver what is left of the core as it is (all of it if we had not begun). */
	while (g_out >= 0 && (n = read(0, buf, sizeof(buf))) > 0)
		if (write(g_out, buf, (size_t)n) != n)
			break;
	if (g_out >= 0)
		close(g_out);
	(void)sig;
	_exit(g_started ? 3 : 4);
}

static void guard_faults(void)
{
	static char stack[1 << 16];
	const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	struct sigaction sa;
	stack_t ss = { .ss_sp = stack, .ss_size = sizeof(stack) };
	size_t i;

	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fault;
	sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

static int parse_crash(int argc, char **argv, struct rk_crash *c)
{
	if (argc < 13)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->pid = atoi(argv[0]);
	c->tid = atoi(argv[1]);
	c->ns_pid = atoi(argv[2]);
	c->ns_tid = atoi(argv[3]);
	c->sig = atoi(argv[4]);
	c->rlimit_core = strtoull(argv[5], NULL, 10);
	c->time = strtoll(argv[6], NULL, 10);
	c->uid = (unsigned int)strtoul(argv[7], NULL, 10);
	c->gid = (unsigned int)strtoul(argv[8], NULL, 10);
	c->dumpable = atoi(argv[9]);
	snprintf(c->host, sizeof(c->host), "%s", argv[10]);
	snprintf(c->comm, sizeof(c->comm), "%s", argv[11]);
	snprintf(c->exe, sizeof(c->exe), "%s", argv[12]);
	c->cpu = -1;
	c->pidfd = -1;
	return c->pid > 0 ? 0 : -EINVAL;
}

/*
 * What the kernel expands but our pattern does not pass (%C, %f), from the
 * crashing task, which the kernel holds while we run (core_pipe_limit).
 */
static void crash_details(struct rk_crash *c)
{
	char path[96], buf[1024], *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/exe", c->pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
			buf[n - 10] = '\0';
		p = strrchr(buf, '/');
		snprintf(c->exe_name, sizeof(c->exe_name), "%.255s", p ? p + 1 : buf);
	}
	/* stat field 39, "processor": after the comm's last ')', whatever the comm holds. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", c->pid, c->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	for (field = 2; p && field < 39; field++)
		p = strchr(p + 1, ' ');
	if (p)
		c->cpu = atoi(p + 1);
}

/*
 * The crashing task's credentials as the kernel uses them for its core:
 * fsuid, fsgid and the supplementary groups (/proc/PID/status, kernel-made;
 * the task is held while we run). Without it: %u and %g, no groups.
 */
#define MAX_GROUPS 256

struct creds {
	uid_t uid;
	gid_t gid;
	gid_t groups[MAX_GROUPS];
	int ngroups;
	unsigned long long cap_inh, cap_prm, cap_eff; /* its capabilities (in its user ns) */
};

static void task_creds(const struct rk_crash *c, struct creds *cr)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	unsigned int r, e, sv, fs;
	FILE *f;

	cr->uid = c->uid;
	cr->gid = c->gid;
	cr->ngroups = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", c->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		if (sscanf(line, "Uid: %u %u %u %u", &r, &e, &sv, &fs) == 4) {
			cr->uid = fs;
		} else if (sscanf(line, "Gid: %u %u %u %u", &r, &e, &sv, &fs) == 4) {
			cr->gid = fs;
		} else if (sscanf(line, "CapInh: %llx", &cr->cap_inh) == 1 ||
			   sscanf(line, "CapPrm: %llx", &cr->cap_prm) == 1 ||
			   sscanf(line, "CapEff: %llx", &cr->cap_eff) == 1) {
			continue;
		} else if (!strncmp(line, "Groups:", 7)) {
			char *p = line + 7, *end;
			unsigned long g;

			while (cr->ngroups < MAX_GROUPS) {
				g = strtoul(p, &end, 10);
				if (end == p)
					break;
				cr->groups[cr->ngroups++] = (gid_t)g;
				p = end;
			}
		}
	}
	free(line);
	fclose(f);
}

/*
 * May @cr read the file open at @fd? Asked of the kernel: reopen that very
 * inode through /proc/self/fd with those filesystem credentials (ACLs
 * included; a nonzero fsuid drops root's DAC override), whatever name it
 * has by now. @cr NULL: the core is root's, everything goes in.
 */
static int readable_by(int fd, const struct creds *cr)
{
	gid_t saved[MAX_GROUPS];
	char path[64];
	int n, rfd = -1;

	if (!cr || cr->uid == 0)
		return 1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = getgroups(MAX_GROUPS, saved);
	if (n < 0 || setgroups((size_t)cr->ngroups, cr->groups))
		return 0;
	setfsgid(cr->gid);
	setfsuid(cr->uid);
	/* setfsuid() returns only the previous id: a second call tells if the first took. */
	if ((uid_t)setfsuid(cr->uid) == cr->uid)
		rfd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	setfsuid(0);
	setfsgid(0);
	if (setgroups((size_t)n, saved))
		syslog(LOG_ERR, "cannot restore the handler's groups: %s", strerror(errno));
	if (rfd < 0)
		return 0;
	close(rfd);
	return 1;
}

/*
 * The traced buffers of the crashing process: every file of a live session
 * whose identity says so, each opened once, here, and used through that
 * descriptor to the end (never by name again: a name can change meaning
 * during the freeze wait).
 */
#define MAX_SESSIONS 8

struct held {
	int fd;
	__u32 type; /* RK_NOTE_BUFFER or RK_NOTE_SIDEBAND */
	__u64 size;
	off_t state_at; /* where its identity's state is in the file */
};

struct found {
	char sessions[MAX_SESSIONS][NAME_MAX + 1];
	int sdir[MAX_SESSIONS]; /* each session's directory, open: its crashes file goes there */
	int nsessions;
	struct held *h;
	size_t nh;
	size_t left_out; /* buffers not taken: no file descriptor left for them */
	struct rk_core_note *v; /* the notes to add: the session's, then one per held file */
	size_t n;
	char *session;
	size_t slen, scap;
};

/* Append a line to the session description note. */
static void say(struct found *f, const char *line)
{
	size_t len = strlen(line);

	if (f->slen + len + 1 > f->scap) {
		size_t cap = f->scap ? f->scap * 2 + len : 4096;
		char *s = realloc(f->session, cap);

		if (!s)
			return;
		f->session = s;
		f->scap = cap;
	}
	memcpy(f->session + f->slen, line, len + 1);
	f->slen += len;
}

/* The handler's root of sessions; tests point it elsewhere (the kernel sets no environment). */
static const char *sessions_root(void)
{
	const char *p = getenv("RINGKEEPER_HANDLER_ROOT");

	return p && *p ? p : RK_DEFAULT_ROOT;
}

/*
 * Is what @fd holds something only root can have put there: owned by root,
 * of the type asked, not writable by group or others (a directory: unless
 * sticky, where @sticky_ok; every name in it is checked in turn)?
 * Return: NULL, or why not.
 */
static const char *not_root_s(int fd, int dir, int sticky_ok, uid_t *owner)
{
	struct stat st;

	if (fstat(fd, &st))
		return "cannot stat it";
	*owner = st.st_uid;
	if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode) || st.st_nlink != 1)
		return dir ? "not a directory" : "not a regular file with one link";
	if (st.st_uid != 0)
		return "owned by another user than root";
	if (st.st_mode & (S_IWGRP | S_IWOTH) && !(dir && sticky_ok && st.st_mode & S_ISVTX))
		return "writable by group or others";
	return NULL;
}

/* Open @name in @at, never through a symlink, if it is root's (see not_root_s()); or -1. */
static int open_root_s(int at, const char *name, int dir, int sticky_ok, int loud)
{
	int fd = openat(at, name,
			(dir ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK) | O_NOFOLLOW |
				O_CLOEXEC);
	const char *why;
	uid_t owner = 0;

	if (fd < 0) {
		if (loud && errno != ENOENT)
			syslog(LOG_ERR, "refusing %s: %s", name, strerror(errno));
		return -1;
	}
	why = not_root_s(fd, dir, sticky_ok, &owner);
	if (!why)
		return fd;
	if (loud)
		syslog(LOG_ERR,
		       "refusing %s: %s (uid %u): no session in it is trusted; cores go on "
		       "without ringkeeper buffers until root removes it",
		       name, why, owner);
	close(fd);
	return -1;
}

/*
 * Is the session in @sdir recording now, by the loader that made it: its
 * stat file root's, and mapped by that running root process?
 */
static int session_live(int sdir)
{
	struct rk_session_stat st;
	int fd = open_root_s(sdir, RK_STAT_FILE, 0, 0, 0), ok;

	if (fd < 0)
		return 0;
	ok = !rk_session_stat_readfd(fd, &st) && rk_session_alive(&st) &&
	     rk_session_loader_wrote(&st, fd);
	close(fd);
	return ok;
}

/*
 * What the session in @sdir had not recorded by now, as "losses" and
 * "loss KEY N" lines after its name: a reader of the core says its
 * histories are incomplete. Nothing if its stat file cannot be read.
 */
static void say_loss(struct found *f, int sdir)
{
	struct rk_session_stat st;
	int fd = open_root_s(sdir, RK_STAT_FILE, 0, 0, 0);
	struct rk_loss l;
	char text[2048];

	if (fd < 0)
		return;
	if (!rk_session_stat_readfd(fd, &st)) {
		rk_loss_from_stat(&l, &st);
		if (rk_loss_note(&l, text, sizeof(text)) > 0)
			say(f, text);
	}
	close(fd);
}

/* The index of session @name in @f, registered (its directory kept) if new; -1: no room. */
static int session_of(struct found *f, const char *name, int sdir)
{
	char line[NAME_MAX + 16];
	int k;

	for (k = 0; k < f->nsessions; k++)
		if (!strcmp(f->sessions[k], name))
			return k;
	if (k == MAX_SESSIONS || (f->sdir[k] = dup(sdir)) < 0)
		return -1;
	snprintf(f->sessions[k], sizeof(f->sessions[k]), "%s", name);
	f->nsessions++;
	snprintf(line, sizeof(line), "session %s\n", name);
	say(f, line);
	say_loss(f, sdir);
	return k;
}

/* Keep @fd (now @f's) as a note of @type. Return: 0, or -ENOMEM. */
static int hold(struct found *f, int fd, __u32 type, __u64 size, off_t state_at)
{
	struct held *h;

	if (f->nh == MAX_NOTES)
		return -ENOMEM;
	h = realloc(f->h, (f->nh + 1) * sizeof(*h));
	if (!h)
		return -ENOMEM;
	f->h = h;
	f->h[f->nh++] = (struct held){ fd, type, size, state_at };
	return 0;
}

struct scan {
	struct found *f;
	pid_t pid;
	const struct creds *reader; /* who will own the core (NULL: root) */
	unsigned long nbuf; /* buffer notes so far ("buffer N" counts them) */
};

/*
 * Take file @name of directory @src (source @srcname of session @sess,
 * open at @sdir) if it is a buffer of the crashing process, root's, and
 * readable by the core's owner (the kernel's rules as the recorder applied
 * them: another user's thread, kernel call chains at perf_event_paranoid 2
 * stay out).
 */
static void take_file(struct scan *sc, int src, const char *name, const char *sess, int sdir,
		      const char *srcname)
{
	int side = !strcmp(srcname, RK_SIDEBAND_DIR), fd, ok;
	struct rk_bufile *bf;
	struct stat st;
	off_t state_at = 0;
	char line[NAME_MAX * 2 + 32];

	fd = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE)
			sc->f->left_out++;
		return;
	}
	bf = rk_bufile__open_fd(fd, NULL);
	ok = bf && !fstat(fd, &st) && st.st_uid == 0 && st.st_nlink == 1 &&
	     !(st.st_mode & (S_IWGRP | S_IWOTH)) && (__s32)bf->ident->tgid == sc->pid &&
	     (bf->ident->state == RK_THREAD_LIVE || bf->ident->state == RK_THREAD_EXITING ||
	      bf->ident->state == RK_THREAD_CRASHED);
	if (ok)
		state_at = (const char *)&bf->ident->state - (const char *)bf->base;
	rk_bufile__free(bf);
	if (!ok || !readable_by(fd, sc->reader) || session_of(sc->f, sess, sdir) < 0 ||
	    hold(sc->f, fd, side ? RK_NOTE_SIDEBAND : RK_NOTE_BUFFER, (__u64)st.st_size,
		 state_at)) {
		close(fd);
		return;
	}
	if (!side) {
		snprintf(line, sizeof(line), "buffer %lu %s/%s\n", sc->nbuf++, srcname, name);
		say(sc->f, line);
	}
}

/* Every buffer of the crashing process in session @sess (open at @sdir). */
static void scan_session(struct scan *sc, int sdir, const char *sess)
{
	struct dirent *so, *fe;
	DIR *sd = fdopendir(dup(sdir)), *fd;

	while (sd && (so = readdir(sd))) {
		int src;

		if (so->d_name[0] == '.' || !strcmp(so->d_name, RK_STAT_FILE) ||
		    !strcmp(so->d_name, RK_CRASHES_FILE))
			continue;
		src = open_root_s(sdir, so->d_name, 1, 0, 0);
		if (src < 0)
			continue;
		fd = fdopendir(src);
		if (!fd) {
			close(src);
			continue;
		}
		while ((fe = readdir(fd)))
			if (fe->d_name[0] >= '0' && fe->d_name[0] <= '9')
				take_file(sc, src, fe->d_name, sess, sdir, so->d_name);
		closedir(fd);
	}
	if (sd)
		closedir(sd);
}

/*
 * @reader: who will own the core; a buffer that user may not read stays
 * out. NULL: root's core. Only a root of sessions that root made, and in
 * it only sessions and files root made, are read: /dev/shm is writable by
 * all, so before the first recording after a boot anybody could have put
 * a root there.
 */
static void find_buffers(pid_t pid, struct found *f, const struct creds *reader)
{
	struct scan sc = { .f = f, .pid = pid, .reader = reader };
	int rootfd = open_root_s(AT_FDCWD, sessions_root(), 1, 1, 1);
	struct dirent *se;
	DIR *d;

	if (rootfd < 0)
		return;
	d = fdopendir(rootfd);
	if (!d) {
		close(rootfd);
		return;
	}
	while ((se = readdir(d))) {
		int sdir;

		if (se->d_name[0] == '.')
			continue;
		sdir = open_root_s(rootfd, se->d_name, 1, 0, 0);
		if (sdir < 0)
			continue;
		if (session_live(sdir))
			scan_session(&sc, sdir, se->d_name);
		close(sdir);
	}
	closedir(d);
	if (f->left_out)
		syslog(LOG_WARNING,
		       "core of pid %d: %zu ringkeeper buffers left out: no file "
		       "descriptor for them (RLIMIT_NOFILE)",
		       pid, f->left_out);
}

/*
 * The recorder drains and freezes a crashing process's buffers when its BPF
 * side sees the signal: wait for every buffer to say so, 1 s at most,
 * reading each through the descriptor taken at the start.
 * Return: 1 frozen, 0 timed out (the buffers are taken as they are).
 */
#define FREEZE_WAIT_MS 1000

static int wait_frozen(const struct found *f)
{
	int ms;

	for (ms = 0; ms <= FREEZE_WAIT_MS; ms += 10) {
		size_t i, frozen = 0, bufs = 0;

		for (i = 0; i < f->nh; i++) {
			__u32 state = 0;

			if (f->h[i].type != RK_NOTE_BUFFER)
				continue;
			bufs++;
			if (pread(f->h[i].fd, &state, sizeof(state), f->h[i].state_at) ==
				    (ssize_t)sizeof(state) &&
			    state == RK_THREAD_CRASHED)
				frozen++;
		}
		if (frozen == bufs)
			return 1;
		usleep(10000);
	}
	return 0;
}

/*
 * Each session the buffers came from: a line saying who crashed and where
 * the core went, appended to its crashes file: made in the session's
 * directory as opened at the start, never through a link, and only to a
 * file that is root's.
 */
static void record_crash(const struct found *f, const struct rk_crash *c, const char *dest)
{
	struct rk_crash_line l = { .pid = c->pid, .tid = c->tid, .sig = c->sig, .time = c->time };
	int k;

	snprintf(l.comm, sizeof(l.comm), "%s", c->comm);
	snprintf(l.core, sizeof(l.core), "%s", dest);
	for (k = 0; k < f->nsessions; k++) {
		int fd = openat(f->sdir[k], RK_CRASHES_FILE,
				O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
				0644);
		uid_t owner;
		FILE *o;

		if (fd >= 0 && not_root_s(fd, 0, 0, &owner)) {
			syslog(LOG_ERR, "session %s: its %s file is not root's: not written",
			       f->sessions[k], RK_CRASHES_FILE);
			close(fd);
			continue;
		}
		o = fd >= 0 ? fdopen(fd, "a") : NULL;
		if (!o) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		rk_crash_line_write(o, &l);
		fclose(o);
	}
}

/*
 * Is @pid dumping core now ("CoreDumping: 1" in its status, since 4.15)?
 * Only then did the kernel send a fatal signal the recorder freezes for;
 * a handler run by hand (tests, make bench) has nothing to wait for.
 */
static int core_dumping(pid_t pid)
{
	return rk_proc_status_num(pid, "CoreDumping:") == 1;
}

/*
 * The notes to add: the session description first (readers name the
 * buffers from it), then each held file. Return: 1, or 0 if there was no
 * memory for them (the core goes without).
 */
static int build_notes(struct found *f)
{
	size_t i;

	f->v = calloc(f->nh + 1, sizeof(*f->v));
	if (!f->v)
		return 0;
	f->v[0] = (struct rk_core_note){ RK_NOTE_SESSION, -1, f->session,
					 f->session ? strlen(f->session) : 0 };
	for (i = 0; i < f->nh; i++)
		f->v[i + 1] = (struct rk_core_note){ f->h[i].type, f->h[i].fd, NULL, f->h[i].size };
	f->n = f->nh + 1;
	return 1;
}

static void found_free(struct found *f)
{
	size_t i;
	int k;

	for (i = 0; i < f->nh; i++)
		close(f->h[i].fd);
	for (k = 0; k < f->nsessions; k++)
		close(f->sdir[k]);
	free(f->h);
	free(f->v);
	free(f->session);
}

/* The previous pipe handler, its arguments expanded; its stdin is *@in. */
static pid_t spawn_previous(const char *pattern, const struct rk_crash *c, int *in)
{
	char buf[PATTERN_MAX + 2], *tok, *save = NULL, *argv[64], exp[64][4400];
	struct rk_crash as_passed = *c;
	int p[2], n = 0;
	pid_t pid;

	/* %F names the descriptor the handler finds the pidfd at: 3, as the kernel passes it. */
	if (c->pidfd >= 0)
		as_passed.pidfd = RK_PIDFD_FD;
	snprintf(buf, sizeof(buf), "%.*s", (int)sizeof(buf) - 1, pattern + 1);
	/* Split on spaces first, then expand each token (the kernel's way since 5.3). */
	for (tok = strtok_r(buf, " ", &save); tok && n < 63; tok = strtok_r(NULL, " ", &save)) {
		if (rk_core_expand(tok, &as_passed, exp[n], sizeof(exp[n])))
			return -ENAMETOOLONG;
		argv[n] = exp[n];
		n++;
	}
	argv[n] = NULL;
	if (!n || pipe2(p, O_CLOEXEC))
		return -EINVAL;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		dup2(p[0], 0);
		/*
		 * %F: the pidfd at fd 3 and nowhere else (its own descriptor is
		 * close-on-exec: it never lands on a free stdout); no %F, none.
		 */
		if (c->pidfd >= 0 && (c->pidfd == RK_PIDFD_FD ? fcntl(RK_PIDFD_FD, F_SETFD, 0) :
								dup2(c->pidfd, RK_PIDFD_FD)) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[0]);
	*in = p[1];
	return pid;
}

/* An fd and the child's status over a socket, so the child can open as another user. */
static int send_fd(int sock, int fd, int err)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &err, .iov_len = sizeof(err) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *h;

		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &fd, sizeof(int));
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)sizeof(err) ? 0 : -EIO;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	int err = -EIO, fd = -1;
	struct iovec iov = { .iov_base = &err, .iov_len = sizeof(err) };
	struct msghdr m = { .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *h;

	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(err))
		return -EIO;
	for (h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(h), sizeof(int));
	if (err) {
		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd >= 0 ? fd : -EIO;
}

/*
 * The kernel's checks on the file it opened for a core (do_coredump()):
 * a regular file with one link, owned by the dumping fsuid, mode 0600.
 */
static int core_file_ok(int fd, uid_t uid)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
		return -EINVAL;
	if (st.st_uid != uid || (st.st_mode & 0677) != 0600)
		return -EPERM;
	return 0;
}

/* A new core file @name, 0600, never through a link, and checked as the kernel does. */
static int create_core(const char *name, uid_t uid)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_LARGEFILE | O_CLOEXEC,
		      0600);
	int err;

	if (fd < 0)
		return -errno;
	err = core_file_ok(fd, uid);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/*
 * Where the kernel resolves a core file's name: the crashing task's root
 * and cwd, taken when the handler starts (the cwd then corrected to the
 * dump's start where a recorder's BPF took it: dump_cwd_take()), and its
 * user namespace where that is not ours (-1: ours).
 */
struct task_at {
	int root, cwd, userns;
	uid_t ns_uid; /* its fsuid and fsgid as its namespace sees them */
	gid_t ns_gid;
};

/* @id (of ours) as the namespace of /proc/@pid/@map sees it; -1: not mapped there. */
static long long id_in_ns(pid_t pid, const char *map, unsigned int id)
{
	unsigned long long in, out, count;
	long long r = -1;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, map);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (r < 0 && fscanf(f, "%llu %llu %llu", &in, &out, &count) == 3)
		if (id >= out && id - out < count)
			r = (long long)(in + (id - out));
	fclose(f);
	return r;
}

/* Take @c's root, cwd and user namespace now (see struct task_at); closed by task_at_close(). */
static void task_at_take(const struct rk_crash *c, const struct creds *cr, struct task_at *at)
{
	struct stat ours, theirs;
	long long u, g;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/root", c->pid);
	at->root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/cwd", c->pid);
	at->cwd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	at->userns = -1;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", c->pid);
	if (stat("/proc/self/ns/user", &ours) || stat(path, &theirs) ||
	    (ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino))
		return;
	u = id_in_ns(c->pid, "uid_map", cr->uid);
	g = id_in_ns(c->pid, "gid_map", cr->gid);
	if (u < 0 || g < 0) {
		syslog(LOG_WARNING,
		       "pid %d: its fsuid %u or fsgid %u is not mapped in its user "
		       "namespace: its core is written as that user in ours",
		       c->pid, cr->uid, cr->gid);
		return;
	}
	at->userns = open(path, O_RDONLY | O_CLOEXEC);
	at->ns_uid = (uid_t)u;
	at->ns_gid = (gid_t)g;
}

/* @fd's mount id (/proc/self/fdinfo, as statx's STATX_MNT_ID) and inode; -1: unknown. */
static int fd_where(int fd, int *mnt_id, ino_t *ino)
{
	char path[64], line[128];
	struct stat st;
	FILE *f;

	*mnt_id = -1;
	if (fstat(fd, &st))
		return -1;
	*ino = st.st_ino;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "mnt_id: %d", mnt_id) == 1)
			break;
	if (f)
		fclose(f);
	return *mnt_id < 0 ? -1 : 0;
}

/* Did the dump of @c start in the process that runs now (its start, as /proc/PID/stat says it)? */
static int same_start(const struct rk_crash *c, __u64 start_ns)
{
	unsigned long long ticks;
	long hz = sysconf(_SC_CLK_TCK);
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", c->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || hz <= 0)
		return 0;
	buf[n] = '\0';
	/* Field 22, starttime: after the comm's last ')', whatever the comm holds. */
	p = strrchr(buf, ')');
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &ticks) != 1)
		return 0;
	return ticks == start_ns / (1000000000ull / (unsigned long long)hz);
}

/*
 * The names of a struct rk_dump_cwd (the cwd's first) as a path from the
 * task's root ("." for the root itself). Return: 0, or -1 if it is not whole.
 */
static int dump_cwd_path(const struct rk_dump_cwd *v, char *out, size_t len)
{
	const char *names[RK_DUMP_DEPTH];
	size_t n = 0, o = 0, at = 0, l = v->len < RK_DUMP_PATH_MAX ? v->len : RK_DUMP_PATH_MAX;

	if (!(v->flags & RK_DUMP_CWD_WHOLE))
		return -1;
	while (at < l && n < RK_DUMP_DEPTH) {
		names[n++] = v->path + at;
		at += strnlen(v->path + at, l - at) + 1;
	}
	if (at != l)
		return -1; /* a name without its NUL, or more names than a walk takes */
	out[0] = '\0';
	while (n--) {
		int w = snprintf(out + o, len - o, "%s%s", o ? "/" : "", names[n]);

		if (w < 0 || (size_t)w >= len - o)
			return -1;
		o += (size_t)w;
	}
	if (!o)
		snprintf(out, len, ".");
	return 0;
}

/*
 * Make @at's cwd the one the task had when its dump started, where a
 * running recorder's BPF took it (struct rk_dump_cwd): /proc/PID/cwd is
 * the fs_struct's cwd now, which a process sharing it (CLONE_FS) may have
 * changed since. The same directory (mount and inode): nothing to do.
 * Another: found again by its names from the task's root, within it, and
 * taken only if it is still that directory. No recorder, or no record:
 * the cwd as the handler found it, as before.
 */
static void dump_cwd_take(const struct rk_crash *c, struct task_at *at)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS };
	int map = bpf_obj_get(RK_BPFFS_DIR "/dump_cwd"), mnt, fd;
	__u32 key = (__u32)c->pid;
	static struct rk_dump_cwd v;
	char path[RK_DUMP_PATH_MAX + 8];
	ino_t ino;

	if (map < 0)
		return;
	fd = bpf_map_lookup_and_delete_elem(map, &key, &v);
	close(map);
	if (fd || !same_start(c, v.start_ns) || at->cwd < 0 || at->root < 0)
		return;
	if (!fd_where(at->cwd, &mnt, &ino) && (__u32)mnt == v.mnt_id && ino == v.ino)
		return;
	fd = dump_cwd_path(&v, path, sizeof(path)) ?
		     -1 :
		     (int)syscall(SYS_openat2, at->root, path, &how, sizeof(how));
	if (fd >= 0 && !fd_where(fd, &mnt, &ino) && (__u32)mnt == v.mnt_id && ino == v.ino) {
		rk_strip_controls(path); /* names a user chose, into the system log */
		syslog(LOG_INFO,
		       "pid %d: its cwd changed since its dump started (a process sharing it, "
		       "CLONE_FS): the core goes to /%s, the cwd then",
		       c->pid, path);
		close(at->cwd);
		at->cwd = fd;
		return;
	}
	if (fd >= 0)
		close(fd);
	syslog(LOG_WARNING,
	       "pid %d: its cwd changed since its dump started, and that directory (mount %u, "
	       "inode %llu) is no longer found by its names: the core goes to its cwd now",
	       c->pid, v.mnt_id, (unsigned long long)v.ino);
}

static void task_at_close(struct task_at *at)
{
	if (at->root >= 0)
		close(at->root);
	if (at->cwd >= 0)
		close(at->cwd);
	if (at->userns >= 0)
		close(at->userns);
}

/* Set the capabilities of @cr (as the task had them in its user namespace). */
static int set_caps(const struct creds *cr)
{
	struct {
		__u32 version;
		int pid;
	} hdr = { 0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0 };
	struct {
		__u32 effective, permitted, inheritable;
	} d[2] = { { (__u32)cr->cap_eff, (__u32)cr->cap_prm, (__u32)cr->cap_inh },
		   { (__u32)(cr->cap_eff >> 32), (__u32)(cr->cap_prm >> 32),
		     (__u32)(cr->cap_inh >> 32) } };

	return syscall(SYS_capset, &hdr, d) ? -errno : 0;
}

/*
 * suid_dumpable=2: the kernel makes the file with fsuid root and the
 * task's own fsgid (a setgid directory's group where it is one).
 */
static int create_root_core(const char *name, gid_t gid)
{
	int fd;

	setfsgid(gid);
	fd = create_core(name, 0);
	setfsgid(0);
	return fd;
}

/*
 * The child's half of open_as_task(): become the task's root, cwd and
 * credentials, then create @name as the kernel's do_coredump() would. A
 * task in a user namespace of its own creates it with its capabilities
 * there (a rootless container's root may write where its uid may not):
 * enter that namespace, take its ids and capabilities as it sees them.
 */
static int open_in_child(const struct task_at *at, const struct creds *cr, const char *name)
{
	uid_t uid = at->userns >= 0 ? at->ns_uid : cr->uid;
	gid_t gid = at->userns >= 0 ? at->ns_gid : cr->gid;

	/* Groups first, as ids of ours: a namespace may deny setgroups(). */
	if (setgroups((size_t)cr->ngroups, cr->groups))
		return -errno;
	if (at->userns >= 0 && setns(at->userns, CLONE_NEWUSER))
		return -errno;
	if (fchdir(at->root) || chroot(".") || (name[0] != '/' && fchdir(at->cwd)))
		return -errno;
	if (setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -errno;
	if (at->userns >= 0 && set_caps(cr))
		return -errno;
	umask(0);
	unlink(name); /* as the kernel does, for a core it may replace */
	return open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_LARGEFILE | O_CLOEXEC, 0600);
}

/*
 * Create @name where the crashing task would have: resolved from its own
 * root and cwd (its mount namespace: a container's path, not the host's),
 * with its fsuid, fsgid, supplementary groups (and, in a user namespace of
 * its own, its capabilities there). A child does it, as the handler keeps
 * root's credentials; the fd comes back over a socket, and is checked here
 * as the kernel checks it.
 */
static int open_as_task(const struct rk_crash *c, const struct creds *cr, const struct task_at *at,
			const char *name)
{
	struct task_at here = *at;
	int sk[2], fd, status, err;
	pid_t pid;

	if (here.root < 0 && name[0] == '/') {
		/*
		 * Reaped already (core_pipe_limit set to 0 behind our back): its
		 * root is gone, the core is not. Ours, as the user of %u and %g.
		 */
		syslog(LOG_WARNING, "pid %d is gone: its core goes to %s in the host's root",
		       c->pid, name);
		here.root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		here.userns = -1;
	}
	if (here.root < 0 || (name[0] != '/' && here.cwd < 0))
		return -ENOENT;
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sk)) {
		fd = -errno;
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		fd = -errno;
		close(sk[0]);
		close(sk[1]);
		goto out;
	}
	if (!pid) {
		fd = open_in_child(&here, cr, name);
		if (fd < 0)
			fd = -errno;
		_exit(send_fd(sk[1], fd, fd < 0 ? fd : 0) ? 1 : 0);
	}
	close(sk[1]);
	fd = recv_fd(sk[0]);
	close(sk[0]);
	waitpid(pid, &status, 0);
	if (fd >= 0 && (err = core_file_ok(fd, cr->uid))) {
		close(fd);
		fd = err;
	}
out:
	if (here.root != at->root && here.root >= 0)
		close(here.root);
	return fd;
}

/*
 * The file the previous pattern names, created as the kernel would: as the
 * crashing task, in its mount namespace. With fs.suid_dumpable=2 (%d 2) as
 * the kernel does for SUID_DUMP_ROOT: root's file, an absolute path from
 * the init process's root (ours, as a usermode helper), never replacing one.
 * Return: the fd, 0 for "the kernel writes no core" (*@why says why), or -errno.
 */
static int open_previous_file(const char *pattern, const struct rk_crash *c, const struct creds *cr,
			      const struct task_at *at, char *name, size_t len, const char **why)
{
	char uses_pid[8] = "0";

	if (rk_core_expand(pattern, c, name, len))
		return -ENAMETOOLONG;
	read_line_file(USES_PID_FILE, uses_pid, sizeof(uses_pid));
	if (atoi(uses_pid) && !strstr(pattern, "%p")) {
		size_t l = strlen(name);

		snprintf(name + l, len - l, ".%d", c->ns_pid);
	}
	if (c->dumpable != RK_DUMP_ROOT)
		return open_as_task(c, cr, at, name);
	if (name[0] != '/') {
		*why = "fs.suid_dumpable=2 dumps only to an absolute path (as the kernel)";
		return 0;
	}
	return create_root_core(name, cr->gid);
}

/*
 * A relative pattern's core, named by its absolute path (the file as the
 * handler opened it, in the crash-time cwd) in the crashes file and the
 * log, which are read from elsewhere; @dest unchanged where that path is
 * not one from our root.
 */
static void absolute_dest(int fd, char *dest, size_t len)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	if (dest[0] == '/')
		return;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || path[0] != '/')
		return;
	path[n] = '\0';
	snprintf(dest, len, "%s", path);
}

static const char *crash_dir(void)
{
	const char *p = getenv("RINGKEEPER_CRASH_DIR"); /* tests; the kernel sets none */

	return p && *p ? p : RK_CRASH_DIR;
}

/*
 * No core file (RLIMIT_CORE below a page) for a traced process: its notes
 * alone, as an ELF core with no memory, so show --core reads them.
 * Return: 0, or -errno.
 */
static int keep_notes(const struct rk_crash *c, const struct found *f, char *path, size_t len)
{
	Elf64_Ehdr eh;
	int p[2], dir, out, aug = 0, err = 0;
	const char *why = NULL;
	char name[160];
	ssize_t n;

	if (mkdir("/var/lib/ringkeeper", 0700) && errno != EEXIST &&
	    !getenv("RINGKEEPER_CRASH_DIR"))
		return -errno;
	if (mkdir(crash_dir(), 0700) && errno != EEXIST)
		return -errno;
	dir = open(crash_dir(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	snprintf(name, sizeof(name), "core.%d.%lld.u%u.notes", c->pid, c->time, c->uid);
	snprintf(path, len, "%s/%s", crash_dir(), name);
	out = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0 || pipe2(p, O_CLOEXEC)) {
		err = -errno;
		goto out_dir;
	}
	/* An empty core (an ELF header, no program headers) that the writer augments. */
	rk_elfcore_ehdr(&eh);
	if (write(p[1], &eh, sizeof(eh)) != (ssize_t)sizeof(eh))
		err = -EIO;
	close(p[1]);
	n = err ? 0 : rk_elfcore_augment(p[0], out, f->v, f->n, &aug, &why);
	close(p[0]);
	if (!err && (n < 0 || !aug))
		err = n < 0 ? (int)n : -EINVAL;
	if (close(out) && !err)
		err = -errno;
	if (!err)
		rk_retain_fair(dir, "core.", ".notes", RK_CRASH_KEEP, RK_CRASH_MAX_BYTES, NULL);
out_dir:
	close(dir);
	return err;
}

/*
 * Tests: before the core's file is made, say "paused" on the socket at fd
 * RINGKEEPER_COREDUMP_PAUSE_FD and wait for a byte back (the kernel sets
 * no environment for a handler).
 */
static void test_pause(void)
{
	const char *p = getenv("RINGKEEPER_COREDUMP_PAUSE_FD");
	char b;

	if (p && *p && (write(atoi(p), "paused\n", 7) != 7 || read(atoi(p), &b, 1) != 1))
		syslog(LOG_WARNING, "RINGKEEPER_COREDUMP_PAUSE_FD: %s", strerror(errno));
}

/* Each buffer is held open from the start: as many descriptors as root may have. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int handle(int argc, char **argv)
{
	struct found f = { 0 };
	struct task_at at = { -1, -1, -1, 0, 0 };
	struct rk_crash c;
	struct creds cr;
	struct state s;
	char dest[4400] = "";
	const char *why = NULL;
	pid_t child = -1;
	int out = -1, aug = 0, err, status, have_session = 0, root_core;
	ssize_t n;

	openlog("ringkeeper-coredump", LOG_PID, LOG_DAEMON);
	guard_faults();
	raise_nofile();
	if (parse_crash(argc, argv, &c)) {
		syslog(LOG_ERR, "bad arguments from the kernel (%d): passing the core to '%s'",
		       argc, SAFE_DEFAULT);
		memset(&c, 0, sizeof(c));
		c.pid = argc ? atoi(argv[0]) : 0;
		c.cpu = -1;
		c.pidfd = -1;
	}
	/* A socket pattern is never saved by --install: a state naming one is not ours. */
	if (state_read(&s) || !s.pattern[0] || is_ours(s.pattern) || s.pattern[0] == '@') {
		syslog(LOG_ERR, "no saved core_pattern in %s: using the kernel's default '%s'",
		       RK_COREDUMP_STATE, SAFE_DEFAULT);
		snprintf(s.pattern, sizeof(s.pattern), SAFE_DEFAULT);
	}
	crash_details(&c);
	task_creds(&c, &cr);
	task_at_take(&c, &cr, &at);
	dump_cwd_take(&c, &at);
	/*
	 * Whose core it is: the crashing user's (a file it owns, or what the
	 * previous pipe handler gives it), or root's alone (suid_dumpable=2, or
	 * our own notes-only file). Only what its owner may read goes in.
	 */
	root_core = c.dumpable == RK_DUMP_ROOT || (s.pattern[0] != '|' && c.rlimit_core < 4096);
	/* Everything that can fail before a byte of the core is read. */
	find_buffers(c.pid, &f, root_core ? NULL : &cr);
	if (f.nh) {
		char line[200];
		int dumping = core_dumping(c.pid), frozen = dumping && wait_frozen(&f);

		snprintf(
			line, sizeof(line), "crash pid %d tid %d signal %d time %lld\nfrozen %s\n",
			c.pid, c.tid, c.sig, c.time,
			frozen ?
				"yes" :
			!dumping ?
				"no (the process is not dumping core: the handler was run by hand)" :
				"no (timed out after 1 s: the buffers as they were)");
		say(&f, line);
		if (dumping && !frozen)
			syslog(LOG_WARNING,
			       "core of pid %d: the recorder did not freeze its buffers "
			       "within 1 s; they are taken as they are",
			       c.pid);
		have_session = build_notes(&f);
	}
	if (s.pattern[0] == '|') {
		/* As the kernel: a pidfd only for a pattern that asks for one. */
		if (strstr(s.pattern, "%F"))
			c.pidfd = (int)syscall(SYS_pidfd_open, c.pid, 0);
		child = spawn_previous(s.pattern, &c, &out);
		if (c.pidfd >= 0)
			close(c.pidfd);
		snprintf(dest, sizeof(dest), "%s", s.pattern);
		if (child < 0)
			out = -1;
	} else if (c.rlimit_core < 4096) {
		/* The kernel writes no file core under RLIMIT_CORE < a page: neither do we. */
		syslog(LOG_INFO, "core of pid %d (%s), signal %d: RLIMIT_CORE %llu, no file core",
		       c.pid, c.comm, c.sig, c.rlimit_core);
		if (f.nh) {
			/* But its threads' history was asked for: the notes alone, kept bounded. */
			err = have_session ? keep_notes(&c, &f, dest, sizeof(dest)) : -ENOMEM;
			record_crash(&f, &c, err ? "" : dest);
			if (err)
				syslog(LOG_ERR, "pid %d: cannot keep its notes in %s: %s", c.pid,
				       crash_dir(), strerror(-err));
			else
				syslog(LOG_INFO, "pid %d: its %zu ringkeeper buffers kept in %s",
				       c.pid, f.nh, dest);
		}
		found_free(&f);
		task_at_close(&at);
		return 0;
	} else {
		test_pause();
		out = open_previous_file(s.pattern, &c, &cr, &at, dest, sizeof(dest), &why);
		if (!out) {
			syslog(LOG_WARNING, "core of pid %d (%s), signal %d: not written: %s",
			       c.pid, c.comm, c.sig, why);
			record_crash(&f, &c, "");
			found_free(&f);
			task_at_close(&at);
			return 0;
		}
	}
	if (out > 0 && s.pattern[0] != '|')
		absolute_dest(out, dest, sizeof(dest));
	if (out < 0) {
		syslog(LOG_ERR, "core of pid %d (%s): cannot deliver it to '%s': %s", c.pid, c.comm,
		       dest, strerror(-out));
		found_free(&f);
		task_at_close(&at);
		return 1;
	}
	g_out = out;
	/* Tests: a bug in the handler (a crash) still delivers the original core. */
	if (getenv("RINGKEEPER_COREDUMP_FAULT"))
		raise(SIGSEGV);
	g_started = 1;
	n = rk_elfcore_augment(0, out, f.v, f.n, &aug, &why);
	err = n < 0 ? (int)-n : 0;
	if (c.rlimit_core && s.pattern[0] != '|' && n > 0 && (unsigned long long)n > c.rlimit_core)
		err = ftruncate(out, (off_t)c.rlimit_core) ? errno :
							     err; /* as the kernel cuts it */
	close(out);
	g_out = -1;
	if (child > 0)
		waitpid(child, &status, 0);
	record_crash(&f, &c, err ? "" : dest);
	if (err)
		syslog(LOG_ERR, "core of pid %d (%s): writing to '%s' failed: %s", c.pid, c.comm,
		       dest, strerror(err));
	else if (aug)
		syslog(LOG_INFO,
		       "core of pid %d (%s), signal %d: %zu ringkeeper buffers added, to '%s'",
		       c.pid, c.comm, c.sig, f.nh, dest);
	else
		syslog(LOG_INFO, "core of pid %d (%s), signal %d: passed through to '%s'%s%s",
		       c.pid, c.comm, c.sig, dest, f.n ? ": " : "", f.n && why ? why : "");
	found_free(&f);
	task_at_close(&at);
	return err ? 1 : 0;
}

int rk_cmd_coredump(int argc, char **argv)
{
	static const char usage[] =
		"Usage: ringkeeper coredump --install | --uninstall | --status\n"
		"\n"
		"A core_pattern pipe handler that adds the buffers of a traced process's\n"
		"threads to its core as ELF notes (owner RINGKEEPER), and sends every core\n"
		"where the previous core_pattern sent it: a file pattern expanded as the\n"
		"kernel does, or the previous pipe handler (systemd-coredump, apport) with\n"
		"its own arguments. A core it cannot augment goes there unchanged.\n"
		"A file core is created as the kernel would: in the crashing process's mount\n"
		"namespace, root and cwd, with its fsuid, fsgid and groups; with\n"
		"fs.suid_dumpable=2 (%d 2) root's, to an absolute path only. Buffers go into\n"
		"a core only if its owner may read them (root's cores: all).\n"
		"  --install    save core_pattern and core_pipe_limit in " RK_COREDUMP_STATE ",\n"
		"               then install the handler with core_pipe_limit 2147483647, so\n"
		"               no concurrent dump is skipped; a socket pattern (@PATH) is\n"
		"               refused (exit 1)\n"
		"  --uninstall  restore what --install saved\n"
		"  --status     both settings, and what --uninstall would restore\n"
		"Read a core's buffers with 'ringkeeper show --core CORE [TID]'.\n";

	const char *act = NULL;
	int i;

	if (argc >= 2 && !strcmp(argv[1], "--handle"))
		return handle(argc - 2, argv + 2);
	/* As getopt would: --help wins, wherever it is; then one action, alone. */
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		}
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--install") && strcmp(argv[i], "--uninstall") &&
		    strcmp(argv[i], "--status")) {
			rk_err("coredump: %s '%s': give --install, --uninstall or --status",
			       argv[i][0] == '-' ? "unknown option" : "unexpected argument",
			       argv[i]);
			fputs(usage, stderr);
			return 2;
		}
		if (act) {
			rk_err("coredump: %s and %s: give one of them", act, argv[i]);
			fputs(usage, stderr);
			return 2;
		}
		act = argv[i];
	}
	if (!act) {
		rk_err("coredump: give one of --install, --uninstall and --status");
		fputs(usage, stderr);
		return 2;
	}
	argv[1] = (char *)act;
	if (geteuid() != 0 && strcmp(argv[1], "--status")) {
		rk_err("coredump %s changes kernel settings: it needs root", argv[1]);
		return 1;
	}
	if (!strcmp(argv[1], "--install"))
		return install();
	if (!strcmp(argv[1], "--uninstall"))
		return uninstall();
	if (!strcmp(argv[1], "--status"))
		return status();
	fputs(usage, stderr);
	return 2;
}
