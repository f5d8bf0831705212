// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util.h"

int rk_verbose;

static void vmsg(const char *pfx, const char *fmt, va_list ap)
{
	fprintf(stderr, "ringkeeper: %s", pfx);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void rk_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void rk_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void rk_info(const char *fmt, ...)
{
	va_list ap;

	if (!rk_verbose)
		return;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

int rk_parse_size(const char *s, int pages_if_bare, uint64_t *out)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		mult = pages_if_bare ? 4096 : 1;
		break;
	case 'B':
		mult = 1;
		end++;
		break;
	case 'K':
		mult = 1ull << 10;
		end++;
		break;
	case 'M':
		mult = 1ull << 20;
		end++;
		break;
	case 'G':
		mult = 1ull << 30;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (mult > 1 && (*end == 'i' || *end == 'I'))
		end++;
	if (mult > 1 && (*end == 'b' || *end == 'B'))
		end++;
	if (*end)
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

const char *rk_fmt_size(uint64_t b, char *buf, size_t len)
{
	/* Exact where it is (a ring of 516 KiB); past 10 of a unit, a tenth is enough. */
	if (b >= 10ull << 30 && b % (1ull << 30))
		snprintf(buf, len, "%.1f GiB", b / (double)(1ull << 30));
	else if (b >= 10ull << 20 && b < 10ull << 30 && b % (1ull << 20))
		snprintf(buf, len, "%.1f MiB", b / (double)(1ull << 20));
	else if (b && !(b % (1ull << 30)))
		snprintf(buf, len, "%llu GiB", (unsigned long long)(b >> 30));
	else if (b && !(b % (1ull << 20)))
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else if (b && !(b % 1024))
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	return buf;
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t rk_now_mono_ns(void)
{
	return now_ns(CLOCK_MONOTONIC);
}

uint64_t rk_now_real_ns(void)
{
	return now_ns(CLOCK_REALTIME);
}

int rk_parse_seconds_ns(const char *s, uint64_t *ns)
{
	unsigned long long sec = 0, frac = 0;
	const char *dot = strchr(s, '.');
	char whole[24];
	size_t n = dot ? (size_t)(dot - s) : strlen(s), k;

	if (!n || n >= sizeof(whole))
		return -EINVAL;
	memcpy(whole, s, n);
	whole[n] = '\0';
	if (rk_parse_uint(whole, 18000000000ull, &sec))
		return -EINVAL;
	if (dot) {
		const char *f = dot + 1;

		if (!*f || strlen(f) > 9)
			return -EINVAL;
		for (k = 0; k < 9; k++) {
			if (*f && (*f < '0' || *f > '9'))
				return -EINVAL;
			frac = frac * 10 + (*f ? (unsigned long long)(*f++ - '0') : 0);
		}
	}
	*ns = sec * 1000000000ull + frac;
	return 0;
}

int rk_parse_time_window(const char *s, uint64_t *lo, uint64_t *hi)
{
	const char *comma = s ? strchr(s, ',') : NULL;
	char start[32];
	size_t n;

	if (!comma || strchr(comma + 1, ','))
		return -EINVAL;
	n = (size_t)(comma - s);
	if (n >= sizeof(start))
		return -EINVAL;
	memcpy(start, s, n);
	start[n] = '\0';
	*lo = 0;
	*hi = ~0ull;
	if (n && rk_parse_seconds_ns(start, lo))
		return -EINVAL;
	if (comma[1] && rk_parse_seconds_ns(comma + 1, hi))
		return -EINVAL;
	if (!n && !comma[1])
		return -EINVAL;
	return *hi < *lo ? -EINVAL : 0;
}

int rk_parse_duration_ns(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = { { "ns", 1 },
		      { "us", 1000 },
		      { "ms", 1000000 },
		      { "s", 1000000000ull },
		      { "m", 60000000000ull },
		      { "h", 3600000000000ull } };
	char num[32];
	size_t i, l = s ? strspn(s, "0123456789.") : 0;
	uint64_t v, mul = 1000000000ull;

	if (!l || l >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, l);
	num[l] = '\0';
	if (s[l]) {
		for (i = 0; i < sizeof(units) / sizeof(units[0]) && strcmp(s + l, units[i].unit);
		     i++)
			;
		if (i == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		mul = units[i].ns;
	}
	/* As seconds with 9 decimals, then scaled: 1.5ms is 1,500,000 ns. */
	if (rk_parse_seconds_ns(num, &v) || !v || v / 1000000000ull > ~0ull / mul)
		return -EINVAL;
	*ns = (__u64)((unsigned __int128)v * mul / 1000000000ull);
	return *ns ? 0 : -EINVAL;
}

char *rk_strip_controls(char *s)
{
	char *c;

	for (c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return s;
}

void rk_put_line(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch < ' ' || ch > '~' || ch == '\\')
			fprintf(f, "\\x%02x", ch);
		else
			fputc(ch, f);
	}
}

void rk_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

int rk_read_u64_file(const char *path, uint64_t *out)
{
	unsigned long long v;
	FILE *f = fopen(path, "re");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%llu", &v);
	fclose(f);
	if (n != 1)
		return -EINVAL;
	*out = v;
	return 0;
}

unsigned int rk_online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned int)n : 1;
}

int64_t rk_proc_status_num(int pid, const char *key)
{
	char path[64], line[256];
	size_t n = strlen(key);
	long long kb = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && sscanf(line + n, " %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int64_t rk_proc_vmlck_kb(int pid)
{
	return rk_proc_status_num(pid, "VmLck:");
}

int rk_parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || *end || *out > max)
		return -EINVAL;
	return 0;
}

uint64_t rk_round_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

int rk_write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Whether @p[0..n) is all zero. */
static int all_zero(const unsigned char *p, size_t n)
{
	return !p[0] && !memcmp(p, p + 1, n - 1);
}

int rk_write_sparse(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	struct stat sb;
	off_t pos;

	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode))
		return rk_write_all(fd, buf, len);
	pos = lseek(fd, 0, SEEK_CUR);
	if (pos < 0)
		return rk_write_all(fd, buf, len);
	while (len) {
		/*
		 * A run of pieces of one kind, each up to the next page boundary
		 * of the file: zeros are skipped (seeking over zeros is always
		 * right, and a page nothing is written to stays a hole), the
		 * rest written.
		 */
		size_t n = 0;
		int zero = -1;

		while (n < len) {
			size_t k = RK_SPARSE_BLOCK - (size_t)((pos + (off_t)n) % RK_SPARSE_BLOCK);
			int z;

			if (k > len - n)
				k = len - n;
			z = all_zero(p + n, k);
			if (zero >= 0 && z != zero)
				break;
			zero = z;
			n += k;
		}
		if (zero) {
			if (lseek(fd, (off_t)n, SEEK_CUR) < 0)
				return -errno;
		} else {
			int err = rk_write_all(fd, p, n);

			if (err)
				return err;
		}
		pos += (off_t)n;
		p += n;
		len -= n;
	}
	return 0;
}

const char *rk_tracefs_dir(void)
{
	if (!access("/sys/kernel/tracing/events", F_OK))
		return "/sys/kernel/tracing";
	if (!access("/sys/kernel/debug/tracing/events", F_OK))
		return "/sys/kernel/debug/tracing";
	return "";
}

void rk_buf_put(struct rk_buf *b, const void *p, size_t n)
{
	if (b->err || !n)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		unsigned char *m;

		while (cap < b->len + n)
			cap *= 2;
		m = realloc(b->p, cap);
		if (!m) {
			b->err = -ENOMEM;
			return;
		}
		b->p = m;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

int rk_open_regular(const char *path, int follow, off_t *size)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW));

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return -EBADMSG;
	}
	if (size)
		*size = sb.st_size;
	return fd;
}

int rk_fmt_utc(uint64_t ns, const char *fmt, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000ull);
	char tmp[128];
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(tmp, sizeof(tmp), fmt, &tm))
		return -1;
	snprintf(buf, len, "%s", tmp);
	return 0;
}

int rk_mutex_init_pi(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int err = pthread_mutexattr_init(&a);

	if (!err) {
		err = pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
		if (!err)
			err = pthread_mutex_init(m, &a);
		pthread_mutexattr_destroy(&a);
	}
	if (err)
		pthread_mutex_init(m, NULL);
	return -err;
}
