/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pfwire.h - the protobuf wire format by hand, for the Perfetto writer's
 * modules (perfetto.c, pfsched.c): a message is written with a 4-byte
 * length (a varint padded with continuation bytes, as Perfetto's own
 * protozero writes nested messages) patched when it ends; packets are
 * framed as Trace.packet. Field numbers are those of
 * perfetto/protos/perfetto/trace/ (checked by the tests with the protos
 * PyPI's perfetto package ships).
 * May call: util.
 */
#ifndef RK_PFWIRE_H
#define RK_PFWIRE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "pfstats.h"
#include "util.h"

/* TracePacket: what every packet has */
#define TP_TIMESTAMP 8
#define TP_CLOCK_ID 58
#define TP_SEQ_ID 10
#define TP_SEQ_FLAGS 13
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE 2
/* BuiltinClocks: the trace's clock */
#define CLOCK_MONO 3
/* The track events' sequence (the samples' sources have one each after it). */
#define SEQ_ID 1

static inline void varint(struct rk_buf *b, __u64 v)
{
	__u8 t[10];
	size_t n = 0;

	do {
		t[n++] = (__u8)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	rk_buf_put(b, t, n);
}

static inline void tag(struct rk_buf *b, __u32 field, __u32 wire)
{
	varint(b, (__u64)field << 3 | wire);
}

static inline void f_u64(struct rk_buf *b, __u32 field, __u64 v)
{
	tag(b, field, 0);
	varint(b, v);
}

static inline void f_bytes(struct rk_buf *b, __u32 field, const void *p, size_t n)
{
	tag(b, field, 2);
	varint(b, n);
	rk_buf_put(b, p, n);
}

static inline void f_str(struct rk_buf *b, __u32 field, const char *s)
{
	f_bytes(b, field, s, strlen(s));
}

/* A nested message: its tag, 4 bytes for its length; Return: where they are. */
static inline size_t begin(struct rk_buf *b, __u32 field)
{
	static const __u8 pad[4] = { 0x80, 0x80, 0x80, 0x00 };

	tag(b, field, 2);
	rk_buf_put(b, pad, sizeof(pad));
	return b->len;
}

static inline void end(struct rk_buf *b, size_t at)
{
	size_t n = b->len - at;

	if (b->err || n >= 1u << 28) {
		b->err = b->err ? b->err : -E2BIG;
		return;
	}
	b->p[at - 4] = (__u8)(0x80 | (n & 0x7f));
	b->p[at - 3] = (__u8)(0x80 | ((n >> 7) & 0x7f));
	b->p[at - 2] = (__u8)(0x80 | ((n >> 14) & 0x7f));
	b->p[at - 1] = (__u8)((n >> 21) & 0x7f);
}

/* The trace being written: its file, the packet being built, what was written. */
struct pf_out {
	FILE *f;
	struct rk_buf pkt;
	size_t pkt_bundle; /* the open FtraceEventBundle in pkt */
	struct rk_perfetto_stats *st;
	int err;
};

/* A new packet in o->pkt: timestamp (0: none), its sequence and the sequence's flags. */
static inline void pkt_start_on(struct pf_out *o, __u64 ts, __u32 seq, __u32 flags)
{
	o->pkt.len = 0;
	if (ts) {
		f_u64(&o->pkt, TP_TIMESTAMP, ts);
		f_u64(&o->pkt, TP_CLOCK_ID, CLOCK_MONO);
	}
	f_u64(&o->pkt, TP_SEQ_ID, seq);
	if (flags)
		f_u64(&o->pkt, TP_SEQ_FLAGS, flags);
}

static inline void pkt_start(struct pf_out *o, __u64 ts, __u32 flags)
{
	pkt_start_on(o, ts, SEQ_ID, flags);
}

/* The packet out, as Trace.packet (field 1). */
static inline void pkt_flush(struct pf_out *o)
{
	struct rk_buf hdr = { 0 };

	if (o->err)
		return;
	if (o->pkt.err) {
		o->err = o->pkt.err;
		return;
	}
	tag(&hdr, 1, 2);
	varint(&hdr, o->pkt.len);
	if (hdr.err || fwrite(hdr.p, 1, hdr.len, o->f) != hdr.len ||
	    fwrite(o->pkt.p, 1, o->pkt.len, o->f) != o->pkt.len)
		o->err = hdr.err ? hdr.err : -EIO;
	free(hdr.p);
	o->st->packets++;
	o->st->bytes += o->pkt.len;
}

#endif /* RK_PFWIRE_H */
