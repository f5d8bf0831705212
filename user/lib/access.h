/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * access.h - who may read a trace: the kernel's own rules, applied to the
 * buffer files the root recorder writes.
 *
 * Every file is root's, mode 0600, in root-owned directories: nobody but
 * the recorder can write, shrink or replace it. Read access is granted to
 * one user through a POSIX ACL entry (user:UID:r--), and only where the
 * kernel would let that user read the same data itself:
 *  - the task: PTRACE_MODE_READ without privilege, i.e. the task's real,
 *    effective and saved uids (and gids) are all UID, and it is dumpable
 *    (its /proc/PID directory is owned by UID, the kernel's
 *    task_dump_owner() rule). A setuid program, or one that changed
 *    credentials, is root's only;
 *  - the event: perf_event_paranoid as perf_event_open() applies it to an
 *    unprivileged user: kernel addresses (an event that does not exclude
 *    the kernel) need paranoid <= 1, raw tracepoint data paranoid <= -1.
 * May call: nothing of ours (libc and the kernel's files only).
 */
#ifndef RK_ACCESS_H
#define RK_ACCESS_H

#include <sys/types.h>
#include "ringkeeper.h"

/** rk_access_paranoid() - /proc/sys/kernel/perf_event_paranoid (2 if unreadable). */
int rk_access_paranoid(void);

/**
 * rk_access_event_ok() - may an unprivileged user see what @attr records?
 * @paranoid: as rk_access_paranoid() returned.
 * Return: 1 or 0.
 */
int rk_access_event_ok(const struct rk_perf_event_attr *attr, int paranoid);

/**
 * struct rk_task_ids - the Uid: and Gid: lines of a task's status file.
 * @uid, @gid: the real id, where real, effective and saved are the same.
 * @have_uid, @have_gid: 0 line not seen, 1 ids differ, 2 all the same.
 */
struct rk_task_ids {
	unsigned int uid, gid;
	int have_uid, have_gid;
};

/**
 * rk_access_ids_line() - feed one line of /proc/PID/task/TID/status (for a
 * caller that reads the file anyway). Return: 1 if it was a Uid:/Gid: line.
 */
int rk_access_ids_line(const char *line, struct rk_task_ids *ids);

/**
 * rk_access_reader_of() - rk_access_task_reader() with the ids already read
 * from the task's status (the dumpable check still reads /proc).
 */
int rk_access_reader_of(pid_t tgid, pid_t tid, const struct rk_task_ids *ids, uid_t *uid);

/**
 * rk_access_task_reader() - the one unprivileged user who may read @tid's
 * trace, by the rules above.
 * @uid: set to that user (unchanged otherwise).
 * Return: 1 with *@uid set; 0 if only root may (uid 0, setuid, changed
 * credentials, not dumpable); -errno if the task cannot be read (gone).
 */
int rk_access_task_reader(pid_t tgid, pid_t tid, uid_t *uid);

/**
 * rk_access_grant() - let @uid read the file @fd (ACL user:@uid:r--);
 * rk_access_revoke() - only root again.
 * Return: 0, or -errno (EOPNOTSUPP: the filesystem has no ACLs).
 */
int rk_access_grant(int fd, uid_t uid);
int rk_access_revoke(int fd);

#endif /* RK_ACCESS_H */
