/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_target.h - the recorder's the target.
 *
 * What is traced: a command launched and held until it is tracked, or a
 * running process attached thread by thread; checks on it (kernel thread,
 * zombie) and the sessions' root directory.
 * Owns: nothing; the threads it tracks belong to the thread table.
 * May call: rec_threads, pmu, util, and the libraries below them (bufile, pinpool, drain, evsel, libbpf).
 */
#ifndef RK_REC_TARGET_H
#define RK_REC_TARGET_H

#include "rec.h"

char rec_proc_state(pid_t pid);
int rec_root_dir(const char *root);
int rec_is_kthread(pid_t pid);
int rec_track(struct rk_rec *r, __u32 tgid, __u32 tid, const char *comm);
int rec_attach_pid(struct rk_rec *r, pid_t pid);
int rec_attach_pid_opt(struct rk_rec *r, pid_t pid, int quiet);
int rec_adopt_pid(struct rk_rec *r, pid_t pid, int cgroup);
int rec_adopt_all(struct rk_rec *r);
int rec_adopt_cgroups(struct rk_rec *r);
/**
 * rec_oom_exempt() - take the recorder out of the OOM killer's choice
 * (oom_score_adj -1000, which needs CAP_SYS_RESOURCE), before anything is
 * launched: CMD gets the value the recorder had. Return: 0, or -errno
 * (the caller says what it means).
 */
int rec_oom_exempt(void);
pid_t rec_launch(char **argv, const sigset_t *oldmask, int *go_fd);
int rec_open_target_pidfd(pid_t pid);

#endif /* RK_REC_TARGET_H */
