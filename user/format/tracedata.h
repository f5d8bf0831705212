/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tracedata.h - tracepoint formats: perf's "tracing data" (the perf.data
 * HEADER_TRACING_DATA feature, as tools/perf/util/trace-event-info.c writes
 * it) and the fields of a tracepoint sample's raw data.
 *
 * The recorder saves the tracing data of its tracepoints in the session
 * (RK_TRACEDATA_FILE) when it starts, from the kernel that recorded them:
 * a tracepoint's id and field layout belong to that kernel. show and export
 * read it from there, and fall back to this machine's tracefs (checking the
 * id) for sessions without one.
 *
 * Blob layout (all little endian, this is what perf 6.1 reads):
 *   "\x17\x08\x44tracing" "0.6\0" u8 bigendian u8 sizeof(long) u32 page size
 *   "header_page\0" u64 size, bytes; "header_event\0" u64 size, bytes
 *   u32 ftrace formats (0)
 *   u32 systems, each: name\0 u32 events, each: u64 size, format text
 *   u32 kallsyms size (0), u32 printk formats size (0), u64 cmdlines size (0)
 */
#ifndef RK_TRACEDATA_H
#define RK_TRACEDATA_H

#include <linux/types.h>
#include <stddef.h>
#include <stdio.h>

#define RK_TRACEDATA_FILE "tracing_data"
/* A session's tracing data larger than this is not ours. */
#define RK_TRACEDATA_MAX (16u << 20)

/**
 * rk_tracedata_build() - the tracing data for tracepoints @names
 * ("SYSTEM:EVENT"), from this machine's tracefs.
 * Return: 0 (*@out malloc'd, *@len), or -errno with @err filled.
 */
int rk_tracedata_build(const char *const *names, int n, void **out, size_t *len, char *err,
		       size_t errlen);

/**
 * rk_tracedata_load() - a session's saved tracing data (a regular file,
 * at most RK_TRACEDATA_MAX). Return: 0, -ENOENT if it has none, -errno.
 */
int rk_tracedata_load(const char *session_dir, void **out, size_t *len);

/**
 * rk_tracedata_format() - the format text of the event whose "ID:" is @id
 * in a tracing data blob that may come from anywhere (every length checked).
 * Return: 0 (*@fmt points into @blob), -ENOENT, or -EBADMSG.
 */
int rk_tracedata_format(const void *blob, size_t len, __u64 id, const char **fmt, size_t *fmtlen);

#define RK_TP_MAX_FIELDS 64

/** struct rk_tp_field - one field of a tracepoint's format. */
struct rk_tp_field {
	char name[64];
	char type[96];
	__u32 offset, size;
	__u8 is_signed, data_loc, is_string, is_pointer;
};

/** struct rk_tp_format - a tracepoint's format, the common_* fields left out. */
struct rk_tp_format {
	char name[128];
	__u64 id;
	int nfields;
	struct rk_tp_field f[RK_TP_MAX_FIELDS];
};

/**
 * rk_tp_format_parse() - parse a format file's text (untrusted).
 * Return: 0, or -EBADMSG (no "ID:" line).
 */
int rk_tp_format_parse(const char *text, size_t len, struct rk_tp_format *out);

/**
 * rk_tp_format_local() - this machine's format of @sys_event ("sched:sched_switch"),
 * from tracefs. Return: 0, -ENOENT, or -EBADMSG.
 */
int rk_tp_format_local(const char *sys_event, struct rk_tp_format *out);

/**
 * rk_tp_format_lookup() - the format of tracepoint @id: from @session_dir's
 * tracing data, else from this machine's tracefs as @sys_event
 * ("SYSTEM:EVENT", may be NULL) if its id is @id.
 * Return: 0, or -ENOENT.
 */
int rk_tp_format_lookup(const char *session_dir, const char *sys_event, __u64 id,
			struct rk_tp_format *out);

/**
 * rk_tp_print_fields() - print @raw (a sample's PERF_SAMPLE_RAW bytes) as
 * "name=value ..." (text) or as ',"fields":{"name":value,...}' (JSON); a
 * field outside @raw is left out.
 */
void rk_tp_print_fields(FILE *f, const struct rk_tp_format *fmt, const __u8 *raw, size_t len,
			int json);

#endif /* RK_TRACEDATA_H */
