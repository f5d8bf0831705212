// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * statson.c - run a command with the kernel's BPF run-time stats on
 * (BPF_ENABLE_STATS): every BPF program's run_cnt and run_time_ns count
 * while we live, and stop counting when our descriptor closes, however we
 * end. No sysctl is changed, so nothing is left to restore.
 *
 *   statson CMD [ARG...]    exit status: CMD's (128 + signal if killed)
 *
 * SIGINT, SIGTERM and SIGHUP are passed on to CMD (a benchmark stops a
 * background program by signalling the pid it started: ours).
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	sigset_t set, old;
	int fd, st;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: statson CMD [ARG...]\n");
		return 2;
	}
	fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (fd < 0) {
		fprintf(stderr, "statson: BPF_ENABLE_STATS: %s\n", strerror(-fd));
		return 1;
	}
	/* Held until the handlers know the child: none is lost in between. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid = fork();
	if (pid < 0) {
		perror("statson: fork");
		return 1;
	}
	if (!pid) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(fd);
		execvp(argv[1], argv + 1);
		fprintf(stderr, "statson: %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	child = pid;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			perror("statson: waitpid");
			return 1;
		}
	close(fd);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}
