// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * noop_attach.c - load and attach noop.bpf.o (an empty sched_switch
 * program), print "ready", stay until SIGINT/SIGTERM: the benchmark's floor
 * for what any sched_switch observer costs.
 *
 *   noop_attach OBJ
 */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_link *link;
	sigset_t set;
	int sig;

	if (argc != 2) {
		fprintf(stderr, "usage: noop_attach OBJ\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "noop_attach: cannot load %s\n", argv[1]);
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, "rk_noop_switch");
	link = prog ? bpf_program__attach(prog) : NULL;
	if (!link) {
		fprintf(stderr, "noop_attach: cannot attach\n");
		return 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
	bpf_link__destroy(link);
	bpf_object__close(obj);
	return 0;
}
