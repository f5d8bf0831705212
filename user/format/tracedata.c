// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tracedata.c - tracepoint formats for show and for perf.data (see
 * tracedata.h for the layout perf reads).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ringkeeper.h"
#include "tracedata.h"
#include "util.h"

static const char magic[10] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };

/* A tracefs file's text (tracefs sizes are 0: read to EOF), at most 1 MiB. */
static char *read_text(const char *path, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((r = read(fd, buf + n, cap - n)) > 0) {
		n += (size_t)r;
		if (n == cap) {
			char *m = cap < (1u << 20) ? realloc(buf, cap * 2) : NULL;

			if (!m) {
				free(buf);
				close(fd);
				return NULL;
			}
			buf = m;
			cap *= 2;
		}
	}
	close(fd);
	if (r < 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

/* "name\0" u64 size, then the file. */
static int put_header_file(struct rk_buf *b, const char *dir, const char *name)
{
	char path[512];
	size_t n;
	char *t;
	__u64 sz;

	snprintf(path, sizeof(path), "%s/events/%s", dir, name);
	t = read_text(path, &n);
	if (!t)
		return -errno ?: -EIO;
	rk_buf_put(b, name, strlen(name) + 1);
	sz = n;
	rk_buf_put(b, &sz, 8);
	rk_buf_put(b, t, n);
	free(t);
	return 0;
}

int rk_tracedata_build(const char *const *names, int n, void **out, size_t *len, char *err,
		       size_t errlen)
{
	const char *dir = rk_tracefs_dir();
	struct rk_buf b = { 0 };
	__u32 u32, nsys = 0;
	__u64 u64 = 0;
	char systems[RK_MAX_SRC][64];
	int i, j, e;

	if (!*dir) {
		snprintf(err, errlen, "tracefs is not mounted: the tracepoints' formats are there");
		return -ENOENT;
	}
	rk_buf_put(&b, magic, sizeof(magic));
	rk_buf_put(&b, "0.6", 4);
	rk_buf_put(&b, "\0\x08", 2); /* little endian, 8-byte long */
	u32 = 4096;
	rk_buf_put(&b, &u32, 4);
	if (put_header_file(&b, dir, "header_page") || put_header_file(&b, dir, "header_event")) {
		snprintf(err, errlen, "cannot read %s/events/header_page or header_event", dir);
		free(b.p);
		return -EIO;
	}
	u32 = 0;
	rk_buf_put(&b, &u32, 4); /* no ftrace formats */
	/* Systems in first-seen order, each with its events. */
	for (i = 0; i < n && nsys < RK_MAX_SRC; i++) {
		const char *c = strchr(names[i], ':');
		int len_sys = c ? (int)(c - names[i]) : 0;

		for (j = 0; j < (int)nsys; j++)
			if ((int)strlen(systems[j]) == len_sys &&
			    !strncmp(systems[j], names[i], (size_t)len_sys))
				break;
		if (c && j == (int)nsys && len_sys < 64)
			snprintf(systems[nsys++], 64, "%.*s", len_sys, names[i]);
	}
	rk_buf_put(&b, &nsys, 4);
	for (j = 0; j < (int)nsys; j++) {
		__u32 count = 0;
		size_t at;

		rk_buf_put(&b, systems[j], strlen(systems[j]) + 1);
		at = b.len;
		rk_buf_put(&b, &count, 4);
		for (i = 0; i < n; i++) {
			const char *c = strchr(names[i], ':');
			char path[512];
			size_t flen;
			char *t;

			if (!c || strlen(systems[j]) != (size_t)(c - names[i]) ||
			    strncmp(systems[j], names[i], (size_t)(c - names[i])))
				continue;
			snprintf(path, sizeof(path), "%s/events/%s/%s/format", dir, systems[j],
				 c + 1);
			t = read_text(path, &flen);
			if (!t) {
				e = -errno ?: -EIO;
				snprintf(err, errlen, "cannot read %s: %s", path, strerror(-e));
				free(b.p);
				return e;
			}
			u64 = flen;
			rk_buf_put(&b, &u64, 8);
			rk_buf_put(&b, t, flen);
			free(t);
			count++;
		}
		if (!b.err)
			memcpy(b.p + at, &count, 4);
	}
	u32 = 0;
	rk_buf_put(&b, &u32, 4); /* kallsyms: perf reads /proc/kallsyms itself */
	rk_buf_put(&b, &u32, 4); /* printk formats */
	u64 = 0;
	rk_buf_put(&b, &u64, 8); /* saved cmdlines */
	if (b.err) {
		snprintf(err, errlen, "out of memory");
		free(b.p);
		return b.err;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

int rk_tracedata_load(const char *session_dir, void **out, size_t *len)
{
	char path[4096];
	off_t size = 0;
	void *buf;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", session_dir, RK_TRACEDATA_FILE);
	fd = rk_open_regular(path, 0, &size);
	if (fd < 0)
		return fd;
	if (size <= 0 || size > RK_TRACEDATA_MAX) {
		close(fd);
		return -EBADMSG;
	}
	buf = malloc((size_t)size);
	r = buf ? pread(fd, buf, (size_t)size, 0) : -1;
	close(fd);
	if (r != size) {
		free(buf);
		return buf ? -EIO : -ENOMEM;
	}
	*out = buf;
	*len = (size_t)r;
	return 0;
}

/* A bounded reader over an untrusted blob. */
struct rd {
	const __u8 *p;
	size_t len, off;
	int bad;
};

static const void *take(struct rd *r, size_t n)
{
	const void *p;

	if (r->bad || n > r->len - r->off) {
		r->bad = 1;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

static __u64 take_u(struct rd *r, size_t n)
{
	const void *p = take(r, n);
	__u64 v = 0;

	if (p)
		memcpy(&v, p, n);
	return v;
}

static const char *take_str(struct rd *r)
{
	const char *s = (const char *)r->p + r->off;
	const void *nul;

	if (r->bad || r->off >= r->len || !(nul = memchr(s, '\0', r->len - r->off))) {
		r->bad = 1;
		return NULL;
	}
	r->off += (size_t)((const char *)nul - s) + 1;
	return s;
}

/* The "ID: N" of a format text, or -1. */
static long long format_id(const char *t, size_t len)
{
	const char *p = t, *end = t + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (l > 4 && l < 32 && !memcmp(p, "ID: ", 4)) {
			char num[32];

			memcpy(num, p + 4, l - 4);
			num[l - 4] = '\0';
			return strtoll(num, NULL, 10);
		}
		p += l + 1;
	}
	return -1;
}

int rk_tracedata_format(const void *blob, size_t len, __u64 id, const char **fmt, size_t *fmtlen)
{
	struct rd r = { blob, len, 0, 0 };
	const char *m = take(&r, sizeof(magic));
	__u32 nsys, s, nev, e;

	if (!m || memcmp(m, magic, sizeof(magic)) || !take_str(&r))
		return -EBADMSG;
	take(&r, 6);
	take_str(&r); /* header_page */
	take(&r, take_u(&r, 8));
	take_str(&r); /* header_event */
	take(&r, take_u(&r, 8));
	nev = (__u32)take_u(&r, 4); /* ftrace formats */
	for (e = 0; e < nev && !r.bad; e++)
		take(&r, take_u(&r, 8));
	nsys = (__u32)take_u(&r, 4);
	for (s = 0; s < nsys && !r.bad; s++) {
		take_str(&r);
		nev = (__u32)take_u(&r, 4);
		for (e = 0; e < nev && !r.bad; e++) {
			__u64 n = take_u(&r, 8);
			const char *t = take(&r, n);

			if (t && format_id(t, n) == (long long)id) {
				*fmt = t;
				*fmtlen = n;
				return 0;
			}
		}
	}
	return r.bad ? -EBADMSG : -ENOENT;
}

/* "\tfield:DECL;\toffset:N;\tsize:N;\tsigned:N;" */
static int parse_field(const char *line, size_t l, struct rk_tp_field *f)
{
	char buf[512], *decl, *semi, *name, *br;
	unsigned int off, size, sgn = 0;
	const char *o;

	if (l >= sizeof(buf))
		return -1;
	memcpy(buf, line, l);
	buf[l] = '\0';
	decl = strstr(buf, "field:");
	if (!decl)
		return -1;
	decl += 6;
	semi = strchr(decl, ';');
	if (!semi)
		return -1;
	*semi = '\0';
	o = strstr(semi + 1, "offset:");
	if (!o || sscanf(o, "offset:%u;\tsize:%u;\tsigned:%u;", &off, &size, &sgn) < 2)
		return -1;
	/* The name is the last word of the declaration, without its [N]. */
	while (semi > decl && isspace((unsigned char)semi[-1]))
		*--semi = '\0';
	name = strrchr(decl, ' ');
	if (!name)
		return -1;
	*name++ = '\0';
	br = strchr(name, '[');
	memset(f, 0, sizeof(*f));
	f->is_string = br && strstr(decl, "char") != NULL;
	if (br)
		*br = '\0';
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->type, sizeof(f->type), "%s", decl);
	f->offset = off;
	f->size = size;
	f->is_signed = sgn ? 1 : 0;
	f->data_loc = !strncmp(decl, "__data_loc", 10);
	if (f->data_loc)
		f->is_string = strstr(decl, "char") != NULL;
	f->is_pointer = strchr(decl, '*') != NULL;
	return 0;
}

int rk_tp_format_parse(const char *text, size_t len, struct rk_tp_format *out)
{
	const char *p = text, *end = text + len;
	long long id = format_id(text, len);

	memset(out, 0, sizeof(*out));
	if (id < 0)
		return -EBADMSG;
	out->id = (__u64)id;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (l > 6 && !memcmp(p, "name: ", 6))
			snprintf(out->name, sizeof(out->name), "%.*s", (int)(l - 6), p + 6);
		else if (out->nfields < RK_TP_MAX_FIELDS &&
			 !parse_field(p, l, &out->f[out->nfields]) &&
			 strncmp(out->f[out->nfields].name, "common_", 7))
			out->nfields++;
		p += l + 1;
	}
	return 0;
}

int rk_tp_format_lookup(const char *session_dir, const char *sys_event, __u64 id,
			struct rk_tp_format *out)
{
	const char *fmt;
	size_t len, flen;
	void *blob;
	int err = -ENOENT;

	if (session_dir && !rk_tracedata_load(session_dir, &blob, &len)) {
		if (!rk_tracedata_format(blob, len, id, &fmt, &flen))
			err = rk_tp_format_parse(fmt, flen, out);
		free(blob);
		if (!err)
			return 0;
	}
	if (sys_event && !rk_tp_format_local(sys_event, out) && out->id == id)
		return 0;
	return -ENOENT;
}

int rk_tp_format_local(const char *sys_event, struct rk_tp_format *out)
{
	const char *c = strchr(sys_event, ':');
	char path[512];
	size_t flen;
	char *t;
	int err;

	if (!c || !*rk_tracefs_dir())
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/events/%.*s/%s/format", rk_tracefs_dir(),
		 (int)(c - sys_event), sys_event, c + 1);
	t = read_text(path, &flen);
	if (!t)
		return -ENOENT;
	err = rk_tp_format_parse(t, flen, out);
	free(t);
	return err;
}

static void print_string(FILE *f, const __u8 *p, size_t n, int json)
{
	char s[256];
	size_t l = 0;

	while (l < n && l < sizeof(s) - 1 && p[l]) {
		s[l] = isprint(p[l]) ? (char)p[l] : '?';
		l++;
	}
	s[l] = '\0';
	if (json)
		rk_json_str(f, s);
	else
		fputs(s, f);
}

void rk_tp_print_fields(FILE *f, const struct rk_tp_format *fmt, const __u8 *raw, size_t len,
			int json)
{
	int i, first = 1;

	if (json)
		fprintf(f, ",\"fields\":{");
	for (i = 0; i < fmt->nfields; i++) {
		const struct rk_tp_field *fd = &fmt->f[i];
		const __u8 *p;
		size_t n;

		if ((size_t)fd->offset + fd->size > len)
			continue;
		p = raw + fd->offset;
		n = fd->size;
		if (json) {
			fprintf(f, "%s", first ? "" : ",");
			rk_json_str(f, fd->name);
			fputc(':', f);
		} else {
			fprintf(f, "%s%s=", first ? "" : " ", fd->name);
		}
		first = 0;
		if (fd->data_loc && n == 4) {
			__u32 loc;

			memcpy(&loc, p, 4);
			/* offset in the low 16 bits, length in the high 16 */
			if ((loc & 0xffff) + (size_t)(loc >> 16) <= len && fd->is_string)
				print_string(f, raw + (loc & 0xffff), loc >> 16, json);
			else
				fprintf(f, json ? "null" : "?");
		} else if (fd->is_string) {
			print_string(f, p, n, json);
		} else if (n == 1 || n == 2 || n == 4 || n == 8) {
			__u64 v = 0;

			memcpy(&v, p, n);
			if (fd->is_pointer || (!fd->is_signed && n == 8)) {
				/* above 2^53: a string in JSON */
				fprintf(f, json ? "\"0x%llx\"" : "0x%llx", (unsigned long long)v);
			} else if (fd->is_signed) {
				long long s = n == 1 ? (long long)(__s8)v :
					      n == 2 ? (long long)(__s16)v :
					      n == 4 ? (long long)(__s32)v :
						       (long long)v;

				fprintf(f, "%lld", s);
			} else {
				fprintf(f, "%llu", (unsigned long long)v);
			}
		} else {
			size_t k;

			fputs(json ? "\"" : "", f);
			for (k = 0; k < n && k < 64; k++)
				fprintf(f, "%02x", p[k]);
			fputs(json ? "\"" : "", f);
		}
	}
	if (json)
		fputc('}', f);
}
