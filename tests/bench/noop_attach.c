// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * noop_attach.c - load and attach noop.bpf.o (an empty sched_switch
 * program), print "ready", stay until SIGINT/SIGTERM: the benchmark's floor
 * for what any sched_switch observer costs. At exit it prints the program's
 * "runs N ns T" (the kernel's run_cnt and run_time_ns: 0 unless run-time
 * stats were on, e.g. under statson).
 *
 *   noop_attach OBJ
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
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
	{
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			printf("runs %llu ns %llu\n", (unsigned long long)info.run_cnt,
			       (unsigned long long)info.run_time_ns);
		fflush(stdout);
	}
	bpf_link__destroy(link);
	bpf_object__close(obj);
	return 0;
}
