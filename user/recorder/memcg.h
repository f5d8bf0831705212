/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * memcg.h - the memory cgroup the recorder runs in, and how much it may
 * still take before the OOM killer picks it.
 *
 * The buffer files' pages are shmem charged to the task that first writes
 * them: the recorder. Under a memory limit it must stop taking new threads
 * before it reaches the limit, instead of being the OOM killer's victim.
 * May call: nothing of ours (the kernel's cgroup files only).
 */
#ifndef RK_MEMCG_H
#define RK_MEMCG_H

#include <stdint.h>

/**
 * rk_memcg_headroom() - the smallest (limit - usage) over the calling
 * process's memory cgroup and its ancestors (cgroup v1 memory controller,
 * or cgroup v2 memory.max where the controller is enabled).
 * @headroom: set to it; @limit: set to the limit that gives it (may be NULL).
 * @path: if not NULL, receives the cgroup directory of that limit.
 * Return: 1 with the values set; 0 if no limit applies; -errno.
 */
int rk_memcg_headroom(uint64_t *headroom, uint64_t *limit, char *path, unsigned long path_len);

#endif /* RK_MEMCG_H */
