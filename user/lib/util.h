/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* util.h - messages for people, sizes, clocks, JSON strings. */
#ifndef RK_UTIL_H
#define RK_UTIL_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define RK_DEFAULT_ROOT "/dev/shm/ringkeeper"
#define RK_BPFFS_DIR "/sys/fs/bpf/ringkeeper"

extern int rk_verbose;

/* "ringkeeper: ..." on stderr. */
void rk_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rk_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rk_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * rk_parse_size() - "4096", "64K", "1M", "2G" (binary units) to bytes.
 * @pages_if_bare: a bare number counts pages (perf's -m), else bytes.
 * Return: 0, or -EINVAL.
 */
int rk_parse_size(const char *s, int pages_if_bare, uint64_t *out);

/** rk_fmt_size() - "516 KiB" style, into @buf. */
const char *rk_fmt_size(uint64_t bytes, char *buf, size_t len);

uint64_t rk_now_mono_ns(void);
uint64_t rk_now_real_ns(void);

/**
 * rk_parse_seconds_ns() - "S" or "S.FRACTION" (up to 9 digits) seconds, as
 * show prints times, into ns. Return: 0, or -EINVAL.
 */
int rk_parse_seconds_ns(const char *s, uint64_t *ns);

/**
 * rk_parse_time_window() - --time START,END (seconds of the recorded clock;
 * either may be empty: from the start, to the end) into [*@lo, *@hi].
 * Return: 0, or -EINVAL (also END before START).
 */
int rk_parse_time_window(const char *s, uint64_t *lo, uint64_t *hi);

/**
 * rk_parse_duration_ns() - --last DURATION: a number with a unit (ns, us,
 * ms, s, m, h; none: s; fractions allowed: 1.5s) into ns, not 0.
 * Return: 0, or -EINVAL.
 */
int rk_parse_duration_ns(const char *s, uint64_t *ns);

/**
 * rk_strip_controls() - replace control characters in @s with '?', in place:
 * a comm or a path is its owner's to choose, and text output is read on a
 * terminal (JSON output escapes them instead).
 * Return: @s.
 */
char *rk_strip_controls(char *s);

/**
 * rk_put_line() - print @s on one line: every byte outside ' '..'~', and
 * '\\', as \xNN (a recorded command line may hold newlines and escapes).
 */
void rk_put_line(FILE *f, const char *s);

/** rk_json_str() - print @s as a JSON string literal. */
void rk_json_str(FILE *f, const char *s);

/** rk_read_u64_file() - first number in a file (sysfs/procfs). */
int rk_read_u64_file(const char *path, uint64_t *out);

/** rk_online_cpus() - CPUs online now (>= 1). */
unsigned int rk_online_cpus(void);

/** rk_parse_uint() - a decimal number up to @max. Return: 0, or -EINVAL. */
int rk_parse_uint(const char *s, unsigned long long max, unsigned long long *out);
/** rk_round_pow2() - the smallest power of two >= @v (1 for 0). */
uint64_t rk_round_pow2(uint64_t v);
/**
 * rk_proc_status_num() - the number of a "KEY: N" line of /proc/PID/status
 * (@key with its colon; N in kB for the Vm* lines), or -errno.
 */
int64_t rk_proc_status_num(int pid, const char *key);
/** rk_write_all() - write all of @buf (EINTR retried). Return: 0, or -errno (-EIO: no progress). */
int rk_write_all(int fd, const void *buf, size_t len);

/*
 * rk_write_sparse() - rk_write_all(), but into a regular file zeros are
 * seeked over, so a page that gets no other byte stays a hole, as the
 * kernel writes a core file (in pieces of any size). The caller
 * ftruncate()s the file to its final size at the end (it may end in a
 * hole). Return: 0, or -errno.
 */
/**
 * struct rk_buf - bytes appended to a growing buffer; the first failed
 * allocation is kept in @err and makes later puts do nothing.
 */
struct rk_buf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

/** rk_buf_put() - append @n bytes of @p to @b. */
void rk_buf_put(struct rk_buf *b, const void *p, size_t n);

/**
 * rk_open_regular() - open @path read-only if it is a regular file, never
 * blocking on a FIFO or device placed there; without @follow, not through a
 * final symlink either. @size: its size, if not NULL.
 * Return: the fd, -errno if it cannot be opened, -EBADMSG if not regular.
 */
int rk_open_regular(const char *path, int follow, off_t *size);

/**
 * rk_fmt_utc() - CLOCK_REALTIME @ns as strftime(@fmt) in UTC, into @buf.
 * Return: 0, or -1 (@buf untouched: the caller says what stands instead).
 */
int rk_fmt_utc(uint64_t ns, const char *fmt, char *buf, size_t len);

/** rk_tracefs_dir() - where tracefs is mounted ("" if nowhere). */
const char *rk_tracefs_dir(void);

#define RK_SPARSE_BLOCK 4096u
int rk_write_sparse(int fd, const void *buf, size_t len);
/** rk_proc_vmlck_kb() - VmLck of a process from /proc/PID/status, or -errno. */
int64_t rk_proc_vmlck_kb(int pid);

/**
 * rk_mutex_init_pi() - a mutex with priority inheritance: the recorder's
 * loop and pin workers run SCHED_FIFO, the snapshot writer and callers of
 * the pool may not; a holder below them inherits the waiter's priority
 * rather than being starved by a third thread (PREEMPT_RT makes such waits
 * likelier: docs/design.md).
 * Return: 0; or -errno where the system has no PI futexes, @m then a plain
 * mutex (still usable).
 */
int rk_mutex_init_pi(pthread_mutex_t *m);

#endif /* RK_UTIL_H */
