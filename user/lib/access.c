// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * access.c - the kernel's read rules for traces (see access.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include "access.h"

/* The kernel's posix_acl_xattr format (include/uapi/linux/posix_acl_xattr.h). */
#define ACL_XATTR "system.posix_acl_access"
#define ACL_XATTR_VERSION 2
#define ACL_USER_OBJ 0x01
#define ACL_USER 0x02
#define ACL_GROUP_OBJ 0x04
#define ACL_MASK 0x10
#define ACL_OTHER 0x20
#define ACL_UNDEFINED_ID 0xffffffffu

struct acl_entry {
	__u16 tag;
	__u16 perm;
	__u32 id;
};

int rk_access_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = 2;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 2;
		fclose(f);
	}
	return v;
}

int rk_access_event_ok(const struct rk_perf_event_attr *a, int paranoid)
{
	/* perf_tp_event_init(): raw tracepoint data only with paranoid -1. */
	if (a->type == PERF_TYPE_TRACEPOINT && a->sample_type & PERF_SAMPLE_RAW && paranoid > -1)
		return 0;
	/* perf_allow_kernel(): kernel samples and call chains only with paranoid <= 1. */
	if (!a->exclude_kernel && paranoid > 1)
		return 0;
	return 1;
}

/* "Uid:\tR\tE\tS\tFS" of a status file: all of R, E, S equal? */
static int ids_line(const char *line, const char *key, unsigned int *id)
{
	unsigned int r, e, s, fs;

	if (strncmp(line, key, strlen(key)) ||
	    sscanf(line + strlen(key), "%u %u %u %u", &r, &e, &s, &fs) != 4)
		return -1;
	if (r != e || r != s)
		return 0;
	*id = r;
	return 1;
}

int rk_access_ids_line(const char *line, struct rk_task_ids *ids)
{
	int v;

	if ((v = ids_line(line, "Uid:", &ids->uid)) >= 0)
		ids->have_uid = v + 1;
	else if ((v = ids_line(line, "Gid:", &ids->gid)) >= 0)
		ids->have_gid = v + 1;
	return v >= 0;
}

int rk_access_reader_of(pid_t tgid, pid_t tid, const struct rk_task_ids *ids, uid_t *uid)
{
	char path[96];
	struct stat st;

	if (!ids->have_uid || !ids->have_gid)
		return -ESRCH;
	if (ids->have_uid != 2 || ids->have_gid != 2 || ids->uid == 0)
		return 0;
	/*
	 * Dumpable: the kernel gives a task's /proc files to its euid only
	 * then (task_dump_owner()), to root otherwise. Not its directory:
	 * directories (0555) always show the euid, dumpable or not, so ask a
	 * file (status, 0444). Read after the ids: a task that changed
	 * credentials meanwhile fails one of the two.
	 */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", tgid, tid);
	if (stat(path, &st))
		return -errno;
	if (st.st_uid != ids->uid)
		return 0;
	*uid = ids->uid;
	return 1;
}

int rk_access_task_reader(pid_t tgid, pid_t tid, uid_t *uid)
{
	struct rk_task_ids ids = { 0 };
	char path[96], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", tgid, tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		rk_access_ids_line(line, &ids);
	fclose(f);
	return rk_access_reader_of(tgid, tid, &ids, uid);
}

static int set_acl(int fd, const struct acl_entry *e, size_t n)
{
	__u8 buf[4 + 8 * 8];
	__u32 v = ACL_XATTR_VERSION;

	memcpy(buf, &v, 4);
	memcpy(buf + 4, e, n * sizeof(*e));
	if (fsetxattr(fd, ACL_XATTR, buf, 4 + n * sizeof(*e), 0))
		return -errno;
	return 0;
}

int rk_access_grant(int fd, uid_t uid)
{
	/* Sorted by tag, as the kernel requires; the mask caps the named entry at r--. */
	const struct acl_entry e[] = {
		{ ACL_USER_OBJ, 6, ACL_UNDEFINED_ID },	{ ACL_USER, 4, (__u32)uid },
		{ ACL_GROUP_OBJ, 0, ACL_UNDEFINED_ID }, { ACL_MASK, 4, ACL_UNDEFINED_ID },
		{ ACL_OTHER, 0, ACL_UNDEFINED_ID },
	};

	return set_acl(fd, e, sizeof(e) / sizeof(e[0]));
}

int rk_access_revoke(int fd)
{
	if (fremovexattr(fd, ACL_XATTR) && errno != ENODATA && errno != EOPNOTSUPP)
		return -errno;
	if (fchmod(fd, 0600))
		return -errno;
	return 0;
}
