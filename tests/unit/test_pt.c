// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Intel PT without PT hardware: the descriptor from a fake sysfs tree,
 * pt_config from the descriptor, and streams made with libipt's encoder,
 * written into a buffer's AUX ring through the writer the drain uses
 * (wrapping), then dumped and compared packet by packet.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bufile.h"
#include "elfcore.h"
#include "drain.h"
#include "evsel.h"
#include "export.h"
#include "pmu.h"
#include "pt.h"
#include "shell.h"
#include "symbols.h"

static char dir[64];

static void put(const char *rel, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	f = fopen(p, "w");
	cr_assert_not_null(f, "%s", p);
	fputs(text, f);
	fclose(f);
}

/* A sysfs intel_pt directory as a Skylake-class machine shows it. */
static void fake_sysfs(void)
{
	char p[256];

	snprintf(dir, sizeof(dir), "/tmp/rk-pt-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/caps", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/format", dir);
	mkdir(p, 0755);
	put("type", "8\n");
	put("caps/max_nonturbo_ratio", "24\n");
	put("caps/mtc_periods", "249\n");
	put("caps/cycle_thresholds", "3fff\n");
	put("caps/psb_periods", "3f\n");
	put("caps/num_address_ranges", "2\n");
	put("caps/mtc", "1\n");
	put("caps/psb_cyc", "1\n");
	put("caps/ip_filtering", "1\n");
	put("caps/topa_output", "1\n");
	put("format/pt", "config:0\n");
	put("format/cyc", "config:1\n");
	put("format/mtc", "config:9\n");
	put("format/tsc", "config:10\n");
	put("format/noretcomp", "config:11\n");
	put("format/branch", "config:13\n");
	put("format/mtc_period", "config:14-17\n");
	put("format/cyc_thresh", "config:19-22\n");
	put("format/psb_period", "config:24-27\n");
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
}

TestSuite(pt, .init = fake_sysfs, .fini = cleanup);

/* The descriptor as recorded: CPU from cpuid (made Intel here), the rest from sysfs. */
static void desc_for_test(struct rk_pt_desc *d)
{
	cr_assert_eq(rk_pt_desc_read(d, dir), 0);
	d->cpu_vendor = RK_PT_VENDOR_INTEL;
	d->cpu_family = 6;
	d->cpu_model = 0x5e; /* Skylake: libipt knows its errata */
	d->cpu_stepping = 3;
	d->cpuid_0x15_eax = 2;
	d->cpuid_0x15_ebx = 200;
}

Test(pt, descriptor_from_sysfs)
{
	struct rk_pt_desc d;

	memset(&d, 0x5a, sizeof(d)); /* poison */
	cr_assert_eq(rk_pt_desc_read(&d, dir), 0);
	cr_assert_eq(d.size, sizeof(d));
	cr_assert_eq(d.version, RK_PT_DESC_VERSION);
	cr_assert_eq(d.max_nonturbo_ratio, 24);
	cr_assert_eq(d.mtc_periods, 0x249);
	cr_assert_eq(d.cyc_thresholds, 0x3fff);
	cr_assert_eq(d.num_address_ranges, 2);
	cr_assert(d.caps & RK_PT_CAP_MTC);
	cr_assert(d.caps & RK_PT_CAP_IP_FILTERING);
	cr_assert_not(d.caps & RK_PT_CAP_PTWRITE);
	cr_assert_eq(rk_pt_config_field(&d, "tsc", 1ull << 10), 1);
	cr_assert_eq(rk_pt_config_field(&d, "pt", 1), 1, "a field at bit 0");
	cr_assert_eq(rk_pt_config_field(&d, "mtc_period", 3ull << 14), 3);
	cr_assert_eq(rk_pt_config_field(&d, "ptw", ~0ull), -1, "absent in this sysfs");
	cr_assert_eq(rk_pt_desc_read(&d, "/nonexistent/intel_pt"), -ENOENT);
}

/*
 * Issue 38, item 6: a descriptor comes from a file, and a corrupt format
 * field (first bit above the last, a bit past 63) is refused, not shifted
 * by (undefined behaviour the fuzzer found in file mutations).
 */
Test(pt, a_corrupt_format_field_is_refused)
{
	static const char *const names[RK_PT_NFMT] = { RK_PT_FMT_NAMES };
	static const __u8 bad[][2] = { { 20, 10 }, { 64, 70 }, { 70, 127 }, { 0, 64 } };
	struct rk_pt_desc d;
	__u64 config = 0;
	size_t i, k;

	for (k = 0; k < RK_PT_NFMT && strcmp(names[k], "mtc_period"); k++)
		;
	cr_assert_lt(k, RK_PT_NFMT);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(rk_pt_desc_read(&d, dir), 0);
		d.fmt[k][0] = bad[i][0];
		d.fmt[k][1] = bad[i][1] | 0x80;
		cr_assert_eq(rk_pt_config_field(&d, "mtc_period", ~0ull), -1, "bits %u-%u",
			     bad[i][0], bad[i][1]);
		cr_assert_eq(rk_pt_config_set(&d, "mtc_period", 1, &config), -EINVAL);
		cr_assert_eq(rk_pt_field_mask(&d, "mtc_period"), 0);
		cr_assert_eq(config, 0);
	}
	/* The widest good field, all 64 bits: still read. */
	d.fmt[k][0] = 0;
	d.fmt[k][1] = 63 | 0x80;
	cr_assert_eq(rk_pt_field_mask(&d, "mtc_period"), ~0ull);
}

Test(pt, config_needs_the_right_descriptor)
{
	struct rk_pt_desc d;
	struct pt_config cfg;
	const char *why = NULL;
	__u64 mtc_on = (1ull << 9) | (3ull << 14);

	desc_for_test(&d);
	cr_assert_eq(rk_pt_config(NULL, 0, 0, &cfg, &why), -ENOENT);
	cr_assert_not_null(strstr(why, "no intel_pt descriptor"));
	cr_assert_eq(rk_pt_config(&d, sizeof(d) - 8, 0, &cfg, &why), -EINVAL, "size mismatch");
	d.version = 99;
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 0, &cfg, &why), -EINVAL);
	d.version = RK_PT_DESC_VERSION;
	d.cpu_vendor = 0;
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 0, &cfg, &why), -EINVAL);
	cr_assert_not_null(strstr(why, "Intel"));
	d.cpu_vendor = RK_PT_VENDOR_INTEL;
	/* MTC timing needs CPUID 0x15: refused without it, accepted with it. */
	d.cpuid_0x15_eax = 0;
	cr_assert_eq(rk_pt_config(&d, sizeof(d), mtc_on, &cfg, &why), -EPROTO);
	cr_assert_not_null(strstr(why, "CPUID 0x15"), "%s", why);
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 0, &cfg, &why), 0, "no MTC: not needed");
	d.cpuid_0x15_eax = 2;
	cr_assert_eq(rk_pt_config(&d, sizeof(d), mtc_on, &cfg, &why), 0, "%s", why);
	cr_assert_eq(cfg.mtc_freq, 3);
	cr_assert_eq(cfg.nom_freq, 24);
	cr_assert_eq(cfg.cpuid_0x15_ebx, 200);
	cr_assert_eq(cfg.cpu.vendor, pcv_intel);
	cr_assert_eq(cfg.cpu.model, 0x5e);
}

/* One PSB+ block and a little control flow, as libipt's encoder writes them. */
static size_t encode_block(struct pt_encoder *enc, __u64 tsc, char (*text)[128], size_t *nt)
{
	struct pt_packet pk[12];
	size_t i, n = 0, bytes = 0;

	memset(pk, 0, sizeof(pk));
	pk[n++].type = ppt_psb;
	pk[n].type = ppt_tsc;
	pk[n++].payload.tsc.tsc = tsc;
	pk[n].type = ppt_cbr;
	pk[n++].payload.cbr.ratio = 0x18;
	pk[n].type = ppt_mode;
	pk[n].payload.mode.leaf = pt_mol_exec;
	pk[n++].payload.mode.bits.exec.csl = 1;
	pk[n].type = ppt_fup;
	pk[n].payload.ip.ipc = pt_ipc_sext_48;
	pk[n++].payload.ip.ip = 0x401000 + tsc;
	pk[n++].type = ppt_psbend;
	pk[n].type = ppt_tnt_8;
	pk[n].payload.tnt.bit_size = 5;
	pk[n++].payload.tnt.payload = 0x15;
	pk[n].type = ppt_tip;
	pk[n].payload.ip.ipc = pt_ipc_update_16;
	pk[n++].payload.ip.ip = 0x2345;
	pk[n].type = ppt_mtc;
	pk[n++].payload.mtc.ctc = 0x42;
	pk[n++].type = ppt_pad;
	for (i = 0; i < n; i++) {
		int r = pt_enc_next(enc, &pk[i]);

		cr_assert_gt(r, 0, "encode packet %zu: %s", i, pt_errstr(pt_errcode(r)));
		bytes += (size_t)r;
		if (text)
			rk_pt_packet_str(&pk[i], text[(*nt)++], 128);
	}
	return bytes;
}

struct lines {
	char v[16384][128];
	size_t n;
};

/* Parse rk_pt_dump's output back into packet texts. */
static void dump_lines(const __u8 *buf, size_t len, struct pt_config *cfg, struct lines *out,
		       long *n)
{
	char *mem = NULL, *p, *save = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&mem, &sz);

	*n = rk_pt_dump(f, buf, len, 0, cfg);
	fclose(f);
	out->n = 0;
	for (p = strtok_r(mem, "\n", &save); p && out->n < 16384; p = strtok_r(NULL, "\n", &save))
		snprintf(out->v[out->n++], 128, "%s", p + 18); /* after "offset  " */
	free(mem);
}

Test(pt, aux_ring_wraps_and_decodes_from_the_oldest_psb)
{
	static struct lines got;
	static char want[16384][128];
	static __u8 stream[65536];
	struct rk_thread_ident id = { .tid = 1, .tgid = 1 };
	struct pt_config ecfg, dcfg;
	struct rk_pmu_entry e;
	struct rk_pt_desc d;
	struct pt_encoder *enc;
	struct rk_bufile *bf, *ro;
	size_t psb_at[4096], nblocks = 0, total = 0, nw = 0, first_want = 0, i, k;
	const char *why = NULL;
	char path[128];
	__u8 *lin;
	__u64 head, tail;
	long n;

	/* The descriptor goes into pmu_info, as the loader would place it. */
	desc_for_test(&d);
	rk_pmu_sched_entry(&e);
	e.attr.type = 8; /* intel_pt's dynamic type on a typical machine */
	e.attr.config = 1ull << 10; /* tsc */
	e.info.pmu_descsz = sizeof(d);
	memcpy(e.desc, &d, sizeof(d));
	snprintf(path, sizeof(path), "%s/buf", dir);
	bf = rk_bufile__create(path, 4096, 8192, &e, &id);
	cr_assert_not_null(bf);
	cr_assert_eq(bf->pg->aux_offset, 8192);
	cr_assert_eq(bf->pg->aux_size, 8192);

	/* Encode ~40 KiB of PSB blocks: five times the AUX ring. */
	pt_config_init(&ecfg);
	ecfg.begin = stream;
	ecfg.end = stream + sizeof(stream);
	enc = pt_alloc_encoder(&ecfg);
	cr_assert_not_null(enc);
	while (total < 40000) {
		size_t before = nw;

		psb_at[nblocks++] = total;
		total += encode_block(enc, 0x1000 + nblocks, want, &nw);
		(void)before;
	}
	pt_free_encoder(enc);
	/* Into the AUX ring in uneven chunks, as PERF_RECORD_AUX ranges arrive. */
	for (i = 0; i < total;) {
		size_t chunk = 1 + (i * 7919) % 1500;

		if (chunk > total - i)
			chunk = total - i;
		cr_assert_eq(rk_bufile__write_aux(bf, stream + i, chunk), 0);
		i += chunk;
	}
	head = bf->pg->aux_head;
	tail = bf->pg->aux_tail;
	cr_assert_eq(head, total);
	cr_assert_eq(head - tail, 8192, "a full ring keeps exactly its size");

	/* Decode from the file alone: pt_config from its own pmu_info. */
	ro = rk_bufile__open(path, NULL);
	cr_assert_not_null(ro);
	cr_assert_eq(rk_pt_config(ro->pmu->desc, ro->pmu->info.pmu_descsz, ro->pmu->attr.config,
				  &dcfg, &why),
		     0, "%s", why);
	lin = malloc(8192);
	cr_assert_eq(rk_bufile__read_aux(ro, lin, 8192, NULL), 8192);
	cr_assert_eq(memcmp(lin, stream + tail, 8192), 0, "the newest 8 KiB, in order");
	dump_lines(lin, 8192, &dcfg, &got, &n);
	cr_assert_gt(n, 0);
	/* Expected: every packet from the first PSB inside [tail, head) on. */
	for (k = 0; k < nblocks && psb_at[k] < tail; k++)
		;
	cr_assert_lt(k, nblocks);
	first_want = k * 10; /* 10 packets per block */
	cr_assert_geq((size_t)n, nw - first_want - 10, "packets decoded: %ld", n);
	for (i = 0; i < (size_t)n && first_want + i < nw; i++)
		cr_assert_str_eq(got.v[i], want[first_want + i], "packet %zu", i);
	free(lin);
	rk_bufile__free(ro);
	rk_bufile__free(bf);
}

Test(pt, truncated_stream_resyncs_at_the_next_psb)
{
	static __u8 stream[4096];
	static struct lines got;
	struct pt_config ecfg, dcfg;
	struct rk_pt_desc d;
	struct pt_encoder *enc;
	const char *why;
	size_t a, b;
	long n;

	pt_config_init(&ecfg);
	ecfg.begin = stream;
	ecfg.end = stream + sizeof(stream);
	enc = pt_alloc_encoder(&ecfg);
	a = encode_block(enc, 0x10, NULL, NULL);
	b = encode_block(enc, 0x20, NULL, NULL);
	pt_free_encoder(enc);
	desc_for_test(&d);
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 0, &dcfg, &why), 0);
	/* Cut the first block in the middle (an AUX truncation): decoding starts at the second. */
	dump_lines(stream + a / 2, a - a / 2 + b, &dcfg, &got, &n);
	cr_assert_eq(n, 10, "one whole block after the cut");
	cr_assert_str_eq(got.v[0], "psb");
	cr_assert_str_eq(got.v[1], "tsc 20");
	/* Nothing to sync on at all. */
	dump_lines(stream + 20, 10, &dcfg, &got, &n);
	cr_assert_lt(n, 0, "no PSB: an error, not an empty success");
}

Test(pt, evsel_parses_intel_pt_terms_like_perf)
{
	struct rk_evsel ev[RK_MAX_SRC - 1];
	struct rk_evsel_opts o = { .pt_sysfs = dir };
	struct rk_pt_desc d;
	__u64 c;
	char msg[512];
	int n = -1;

	cr_assert_eq(rk_evsel_parse("intel_pt//", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)), 0,
		     "%s", msg);
	cr_assert_eq(n, 1);
	cr_assert(ev[0].aux);
	cr_assert_str_eq(ev[0].name, "intel_pt//");
	cr_assert_str_eq(ev[0].dir, "intel_pt", "a session directory, no slashes");
	cr_assert_eq(ev[0].entry.attr.type, 8, "the PMU's type from sysfs");
	cr_assert_eq(ev[0].entry.attr.sample_period, 1);
	cr_assert(ev[0].entry.attr.sample_id_all);
	cr_assert(ev[0].entry.attr.mmap2, "the first source tracks mappings");
	cr_assert_eq(ev[0].entry.info.pmu_descsz, sizeof(d));
	memcpy(&d, ev[0].entry.desc, sizeof(d));
	cr_assert_eq(d.version, RK_PT_DESC_VERSION);
	cr_assert_eq(d.max_nonturbo_ratio, 24);
	/* perf's default: tsc, pt, branch, psb_period=3 (and mtc where CPUID 0x15 has a ratio). */
	c = ev[0].entry.attr.config;
	cr_assert_eq(rk_pt_config_field(&d, "tsc", c), 1);
	cr_assert_eq(rk_pt_config_field(&d, "pt", c), 1);
	cr_assert_eq(rk_pt_config_field(&d, "branch", c), 1);
	cr_assert_eq(rk_pt_config_field(&d, "psb_period", c), 3);
	cr_assert_eq(rk_pt_config_field(&d, "mtc", c), d.cpuid_0x15_eax && d.cpuid_0x15_ebx);
	cr_assert_eq(rk_pt_config_field(&d, "cyc", c), 0);

	/* Terms override the defaults; commas inside the slashes do not split events. */
	cr_assert_eq(rk_evsel_parse("intel_pt/cyc,mtc=0,psb_period=5,mtc_period=9/u,cpu-clock", &o,
				    ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)),
		     0, "%s", msg);
	cr_assert_eq(n, 2);
	c = ev[0].entry.attr.config;
	cr_assert_eq(rk_pt_config_field(&d, "cyc", c), 1);
	cr_assert_eq(rk_pt_config_field(&d, "mtc", c), 0);
	cr_assert_eq(rk_pt_config_field(&d, "psb_period", c), 5);
	cr_assert_eq(rk_pt_config_field(&d, "mtc_period", c), 9);
	cr_assert_eq(rk_pt_config_field(&d, "tsc", c), 1, "a default kept");
	cr_assert(ev[0].entry.attr.exclude_kernel, ":u");
	cr_assert_str_eq(ev[1].name, "cpu-clock");
	cr_assert_not(ev[1].aux);

	/* Errors a user can act on. */
	cr_assert_eq(rk_evsel_parse("intel_pt/bogus/", &o, ev, RK_MAX_SRC - 1, &n, msg,
				    sizeof(msg)),
		     -EINVAL);
	cr_assert_not_null(strstr(msg, "no term 'bogus'"), "%s", msg);
	cr_assert_eq(rk_evsel_parse("intel_pt/mtc_period=1/", &o, ev, RK_MAX_SRC - 1, &n, msg,
				    sizeof(msg)),
		     -EINVAL, "mtc_periods 0x249 has no bit 1");
	cr_assert_not_null(strstr(msg, "not supported by this CPU"), "%s", msg);
	cr_assert_eq(rk_evsel_parse("intel_pt/tsc=x/", &o, ev, RK_MAX_SRC - 1, &n, msg,
				    sizeof(msg)),
		     -EINVAL);
	cr_assert_eq(rk_evsel_parse("intel_pt/branch=2/", &o, ev, RK_MAX_SRC - 1, &n, msg,
				    sizeof(msg)),
		     -EINVAL, "a one-bit field");
	cr_assert_eq(rk_evsel_parse("intel_pt//x", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)),
		     -EINVAL);
	cr_assert_eq(rk_evsel_parse("intel_pt/tsc", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)),
		     -EINVAL);
	cr_assert_eq(rk_evsel_parse("intel_pt//,intel_pt/cyc/", &o, ev, RK_MAX_SRC - 1, &n, msg,
				    sizeof(msg)),
		     -EINVAL);
	cr_assert_not_null(strstr(msg, "only one AUX event"), "%s", msg);
	o.pt_sysfs = "/nonexistent/intel_pt";
	cr_assert_eq(rk_evsel_parse("intel_pt//", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)),
		     -EOPNOTSUPP);
	cr_assert_not_null(strstr(msg, "intel_pt PMU is not present"), "%s", msg);
	cr_assert_eq(n, 0);
}

/*
 * The AUX path of the recorder, without PT hardware: a CPU's user page,
 * data ring and AUX ring in memory, filled the way the kernel fills them
 * (AUX bytes at aux_head, then a PERF_RECORD_AUX naming the range, its
 * sample_id giving the task), drained by rk_drain_all(), each range copied
 * into its thread's file by rk_bufile__write_aux_rec() as the loader does.
 */
#define CPU_AUX 8192u
#define CPU_DATA 8192u
#define PT_ID 0x77ull

struct aux_sink {
	struct rk_drain *d;
	struct rk_bufile *bf[2]; /* tid 101, 102 */
	long truncated, dropped, records;
};

static void aux_route(void *ctx, const struct rk_evsel *ev, const struct perf_event_header *h,
		      __u32 pid, __u32 tid)
{
	struct aux_sink *s = ctx;
	struct rk_aux_chunk ck;

	(void)pid;
	cr_assert_eq(h->type, PERF_RECORD_AUX);
	cr_assert_not_null(ev, "the id names the source");
	cr_assert_eq(rk_drain_aux_chunk(s->d, h, &ck), 0);
	s->records++;
	if (ck.flags & PERF_AUX_FLAG_TRUNCATED)
		s->truncated++;
	if (tid != 101 && tid != 102) {
		s->dropped += (long)ck.size; /* no file for it: counted, ring freed anyway */
		return;
	}
	cr_assert_eq(rk_bufile__write_aux_rec(s->bf[tid - 101], h, ck.p[0], ck.n[0], ck.p[1],
					      ck.n[1]),
		     0);
}

/* A thread's AUX records in its file: contiguous, in file coordinates, flags kept. */
struct aux_walk {
	__u64 next;
	int n, truncated;
};

static int walk_aux(const struct perf_event_header *h, void *ctx)
{
	struct aux_walk *w = ctx;
	__u64 off, size, flags;

	cr_assert_eq(h->type, PERF_RECORD_AUX);
	memcpy(&off, (const __u8 *)h + 8, 8);
	memcpy(&size, (const __u8 *)h + 16, 8);
	memcpy(&flags, (const __u8 *)h + 24, 8);
	if (w->n)
		cr_assert_eq(off, w->next, "chunk %d follows the previous one", w->n);
	w->next = off + size;
	w->truncated += !!(flags & PERF_AUX_FLAG_TRUNCATED);
	w->n++;
	return 0;
}

Test(pt, drain_copies_aux_ranges_into_each_threads_file)
{
	static __u8 stream[2][16384], cpu_aux[CPU_AUX], lin[32768];
	static char want[2][4096][128];
	static struct lines got;
	struct rk_evsel ev[RK_MAX_SRC - 1];
	struct rk_evsel_opts o = { .pt_sysfs = dir };
	struct rk_thread_ident id = { .tgid = 100 };
	struct aux_sink s = { 0 };
	struct perf_event_mmap_page *pg;
	struct pt_config ecfg, dcfg;
	struct rk_pt_desc d;
	size_t len[2] = { 0 }, used[2] = { 0 }, nw[2] = { 0 }, psb[2][512], npsb[2] = { 0 };
	__u64 cpu_head = 3 * CPU_AUX - 5000; /* the kernel's offsets are monotonic */
	__u64 data_head = 0, ranges = 0;
	const char *why;
	char path[128], msg[256];
	void *base = NULL;
	int t, n, chunk = 0, round;
	long pk;

	/* Two threads' streams, each with its own timestamps. */
	for (t = 0; t < 2; t++) {
		struct pt_encoder *enc;

		pt_config_init(&ecfg);
		ecfg.begin = stream[t];
		ecfg.end = stream[t] + sizeof(stream[t]);
		enc = pt_alloc_encoder(&ecfg);
		cr_assert_not_null(enc);
		while (len[t] < 12000) {
			cr_assert_lt(npsb[t], 512);
			cr_assert_lt(nw[t] + 10, 4096);
			psb[t][npsb[t]++] = len[t];
			len[t] += encode_block(enc, 0x100000 * (t + 1) + npsb[t], want[t], &nw[t]);
		}
		pt_free_encoder(enc);
	}

	cr_assert_eq(rk_evsel_parse("intel_pt//", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)), 0,
		     "%s", msg);
	desc_for_test(&d); /* decodable on any machine: a Skylake with CPUID 0x15 */
	memcpy(ev[0].entry.desc, &d, sizeof(d));
	ev[0].entry.attr.config = 1ull << 10;
	s.d = rk_drain__new(ev, 1, CPU_DATA);
	cr_assert_not_null(s.d);
	cr_assert_eq(rk_drain_add_id(s.d, PT_ID, 0), 0);
	cr_assert_eq(posix_memalign(&base, 4096, 4096 + CPU_DATA), 0);
	memset(base, 0, 4096 + CPU_DATA);
	pg = base;
	pg->aux_tail = cpu_head;
	cr_assert_eq(rk_drain_attach_mem(s.d, 0, base, CPU_DATA, cpu_aux, CPU_AUX), 0);
	for (t = 0; t < 2; t++) {
		id.tid = 101 + t;
		snprintf(path, sizeof(path), "%s/pt.%d", dir, 101 + t);
		/* Thread 101's area is smaller than its trace: its file wraps too. */
		s.bf[t] = rk_bufile__create(path, 8192, t ? 32768 : 8192, &ev[0].entry, &id);
		cr_assert_not_null(s.bf[t]);
	}

	/* Rounds of: ranges into the CPU ring while it has room, then one drain. */
	for (round = 0; used[0] < len[0] || used[1] < len[1]; round++) {
		cr_assert_lt(round, 100);
		for (;;) {
			union {
				struct perf_event_header h;
				__u64 q[8];
			} rec;
			__u32 tid;
			size_t want_n, i;

			t = chunk % 3 == 2 ? -1 :
					     chunk % 3; /* every third: a task without a file */
			want_n = t < 0 ? 700 : 300 + (size_t)(chunk * 7919) % 2500;
			if (t >= 0 && want_n > len[t] - used[t])
				want_n = len[t] - used[t];
			if (t >= 0 && !want_n) {
				chunk++;
				if (used[0] == len[0] && used[1] == len[1])
					break;
				continue;
			}
			if (cpu_head + want_n - pg->aux_tail > CPU_AUX ||
			    data_head + 64 - pg->data_tail > CPU_DATA)
				break; /* full: the kernel would wait for us (or truncate) */
			for (i = 0; i < want_n; i++)
				cpu_aux[(cpu_head + i) & (CPU_AUX - 1)] =
					t < 0 ? 0xee : stream[t][used[t] + i];
			memset(&rec, 0, sizeof(rec));
			rec.h.type = PERF_RECORD_AUX;
			rec.h.size = 64;
			rec.q[1] = cpu_head;
			rec.q[2] = want_n;
			rec.q[3] = chunk == 4 ? PERF_AUX_FLAG_TRUNCATED : 0;
			tid = t < 0 ? 999 : (__u32)(101 + t);
			rec.q[4] = (__u64)tid << 32 | 100; /* sample_id: pid, tid */
			rec.q[5] = 1000 + (__u64)chunk; /* time */
			rec.q[6] = 0; /* cpu */
			rec.q[7] = PT_ID; /* identifier */
			for (i = 0; i < 64; i++)
				((__u8 *)base)[4096 + ((data_head + i) & (CPU_DATA - 1))] =
					((__u8 *)&rec)[i];
			cpu_head += want_n;
			data_head += 64;
			if (t >= 0)
				used[t] += want_n;
			ranges++;
			chunk++;
		}
		__atomic_store_n(&pg->aux_head, cpu_head, __ATOMIC_RELEASE);
		__atomic_store_n(&pg->data_head, data_head, __ATOMIC_RELEASE);
		rk_drain_all(s.d, UINT64_MAX, aux_route, &s);
		cr_assert_eq(pg->data_tail, data_head, "every record consumed");
		cr_assert_eq(pg->aux_tail, cpu_head, "the AUX ring freed up to the last range");
	}
	cr_assert_gt(cpu_head - (3 * CPU_AUX - 5000), 2 * CPU_AUX,
		     "the CPU ring wrapped several times (%d rounds)", round);
	cr_assert_eq(s.records, (long)ranges);
	cr_assert_eq(s.truncated, 1);
	cr_assert_gt(s.dropped, 0);

	for (t = 0; t < 2; t++) {
		struct aux_walk w = { 0 };
		__u64 head = s.bf[t]->pg->aux_head, tail = s.bf[t]->pg->aux_tail;
		size_t k, first, i;
		ssize_t got_n;

		cr_assert_eq(head, len[t], "thread %d: all its bytes, none of the others'", t);
		got_n = rk_bufile__read_aux(s.bf[t], lin, sizeof(lin), NULL);
		cr_assert_eq((__u64)got_n, head - tail);
		cr_assert_eq(memcmp(lin, stream[t] + tail, (size_t)got_n), 0,
			     "thread %d: its own stream, in order", t);
		cr_assert_eq(rk_bufile__for_each(s.bf[t], walk_aux, &w), 0);
		cr_assert_gt(w.n, 1);
		cr_assert_eq(w.next, head, "the last record ends at the AUX head");
		cr_assert_eq(w.truncated, t == 1, "the TRUNCATED flag stays with its chunk");
		/* Decode from the file alone, from its oldest PSB. */
		cr_assert_eq(rk_pt_config(s.bf[t]->pmu->desc, s.bf[t]->pmu->info.pmu_descsz,
					  s.bf[t]->pmu->attr.config, &dcfg, &why),
			     0, "%s", why);
		dump_lines(lin, (size_t)got_n, &dcfg, &got, &pk);
		for (k = 0; k < npsb[t] && psb[t][k] < tail; k++)
			;
		first = k * 10;
		cr_assert_gt(pk, 0);
		cr_assert_geq((size_t)pk, nw[t] - first - 10,
			      "thread %d: %ld packets, want %zu - %zu (tail %llu)", t, pk, nw[t],
			      first, (unsigned long long)tail);
		for (i = 0; i < (size_t)pk && first + i < nw[t]; i++)
			cr_assert_str_eq(got.v[i], want[t][first + i], "thread %d packet %zu", t,
					 i);
		rk_bufile__free(s.bf[t]);
	}
	rk_drain__free(s.d);
	free(base);
}

/*
 * Instruction decoding with the process image: a small code file of ours,
 * mapped (per an MMAP2 record in the process's sideband) at 0x400000:
 *   400000: 31 c0   xor %eax,%eax
 *   400002: 74 03   jz  400007
 *   400004: 90 90 90 (nop x3)
 *   400007: 75 f9   jnz 400002
 *   400009: ff e0   jmp *%rax
 * and a trace through it: enabled at 400000, jz taken, jnz not taken,
 * jmp to 400004, jnz taken, jz not taken, jnz not taken, jmp: disabled.
 */
static const __u8 code[] = { 0x31, 0xc0, 0x74, 0x03, 0x90, 0x90, 0x90, 0x75, 0xf9, 0xff, 0xe0 };

/* @n packets encoded into @buf with libipt's encoder. Return: their bytes. */
static size_t enc(const struct pt_packet *pk, size_t n, __u8 *buf, size_t size)
{
	struct pt_config ecfg;
	struct pt_encoder *e;
	size_t i, bytes = 0;

	pt_config_init(&ecfg);
	ecfg.begin = buf;
	ecfg.end = buf + size;
	e = pt_alloc_encoder(&ecfg);
	cr_assert_not_null(e);
	for (i = 0; i < n; i++) {
		int r = pt_enc_next(e, &pk[i]);

		cr_assert_gt(r, 0, "packet %zu: %s", i, pt_errstr(pt_errcode(r)));
		bytes += (size_t)r;
	}
	pt_free_encoder(e);
	return bytes;
}

static size_t encode_flow(__u8 *buf, size_t size)
{
	struct pt_packet pk[12];
	size_t n = 0;

	memset(pk, 0, sizeof(pk));
	pk[n++].type = ppt_psb;
	pk[n].type = ppt_tsc;
	pk[n++].payload.tsc.tsc = 0x1234;
	pk[n++].type = ppt_psbend;
	pk[n].type = ppt_mode;
	pk[n].payload.mode.leaf = pt_mol_exec;
	pk[n++].payload.mode.bits.exec.csl = 1;
	pk[n].type = ppt_tip_pge;
	pk[n].payload.ip.ipc = pt_ipc_sext_48;
	pk[n++].payload.ip.ip = 0x400000;
	pk[n].type = ppt_tnt_8;
	pk[n].payload.tnt.bit_size = 2;
	pk[n++].payload.tnt.payload = 0x2; /* oldest first: taken, not taken */
	pk[n].type = ppt_tip;
	pk[n].payload.ip.ipc = pt_ipc_sext_48;
	pk[n++].payload.ip.ip = 0x400004;
	pk[n].type = ppt_tnt_8;
	pk[n].payload.tnt.bit_size = 3;
	pk[n++].payload.tnt.payload = 0x4; /* taken, not taken, not taken */
	pk[n].type = ppt_tip_pgd;
	pk[n].payload.ip.ipc = pt_ipc_sext_48;
	pk[n++].payload.ip.ip = 0x400100; /* where the jmp went: not traced */
	/* The next periodic PSB+: the decoder reads past the disable to bind it. */
	pk[n++].type = ppt_psb;
	pk[n++].type = ppt_psbend;
	return enc(pk, n, buf, size);
}

/*
 * A sideband file whose one MMAP2 maps @file at @start, as the loader
 * writes it: with the tracking source's sample_id (RK_EV_SAMPLE_TYPE's
 * TID, TIME, CPU, IDENTIFIER), at time 500, before the trace (2000). perf
 * reads a record's time from its sample_id: without one it read a garbage
 * time, placed the mapping after the trace and could not follow the flow.
 */
static void put_sideband(const char *sb, const char *file, __u64 start, __u64 len)
{
	struct rk_thread_ident id = { .tid = 100, .tgid = 100 };
	union {
		struct perf_event_header h;
		__u8 b[512];
	} rec;
	struct rk_pmu_entry e;
	struct rk_bufile *bf;
	__u32 pid = 100, prot = 5;
	__u64 pgoff = 0, time = 500, ident = PT_ID;
	size_t nlen = strlen(file) + 1, at = RK_ALIGN8(8 + 8 + 24 + 24 + 8 + nlen);

	rk_pmu_sched_entry(&e);
	bf = rk_bufile__create(sb, 4096, 0, &e, &id);
	cr_assert_not_null(bf);
	memset(&rec, 0, sizeof(rec));
	rec.h.type = PERF_RECORD_MMAP2;
	rec.h.size = (__u16)(at + 32);
	memcpy(rec.b + 8, &pid, 4);
	memcpy(rec.b + 12, &pid, 4);
	memcpy(rec.b + 16, &start, 8);
	memcpy(rec.b + 24, &len, 8);
	memcpy(rec.b + 32, &pgoff, 8);
	memcpy(rec.b + 64, &prot, 4);
	memcpy(rec.b + 72, file, nlen);
	/* sample_id: pid, tid; time; cpu, res; id */
	memcpy(rec.b + at, &pid, 4);
	memcpy(rec.b + at + 4, &pid, 4);
	memcpy(rec.b + at + 8, &time, 8);
	memcpy(rec.b + at + 24, &ident, 8);
	cr_assert_eq(rk_bufile__write(bf, rec.b, rec.h.size), 0);
	rk_bufile__free(bf);
}

/* @text in @dir/code.bin, mapped at 0x400000 by the sideband it names in @sb. */
static void flow_image(char *sb, size_t len, const __u8 *text, size_t size)
{
	char file[128];
	FILE *f;

	snprintf(file, sizeof(file), "%s/code.bin", dir);
	snprintf(sb, len, "%s/sideband.100", dir);
	unlink(sb); /* a test may make its image twice */
	f = fopen(file, "w");
	cr_assert_not_null(f);
	fwrite(text, 1, size, f);
	fclose(f);
	put_sideband(sb, file, 0x400000, 0x1000);
}

/* Decode into a string with rk_pt_insn() in @mode. */
static char *decode_flow(const __u8 *tr, size_t len, const char *sb, int mode, long *lines)
{
	struct rk_symbols *syms = rk_symbols__new(sb);
	struct pt_image *img = pt_image_alloc("test");
	struct pt_config cfg;
	struct rk_pt_desc d;
	const char *why;
	char *mem = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&mem, &sz);

	desc_for_test(&d);
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 1ull << 10, &cfg, &why), 0);
	cr_assert_not_null(syms);
	cr_assert_eq(rk_pt_image_add_maps(img, syms), 1, "the one mapped file");
	*lines = rk_pt_insn(f, tr, len, 0, &cfg, img, syms, mode);
	fclose(f);
	pt_image_free(img);
	rk_symbols__free(syms);
	return mem;
}

Test(pt, instructions_decode_with_the_sideband_image)
{
	static const struct {
		__u64 ip;
		const char *cls;
	} want[] = {
		{ 0x400000, "other" }, { 0x400002, "jcc" },   { 0x400007, "jcc" },
		{ 0x400009, "jump" },  { 0x400004, "other" }, { 0x400005, "other" },
		{ 0x400006, "other" }, { 0x400007, "jcc" },   { 0x400002, "jcc" },
		{ 0x400004, "other" }, { 0x400005, "other" }, { 0x400006, "other" },
		{ 0x400007, "jcc" },   { 0x400009, "jump" },
	};
	__u8 tr[256];
	char file[128], sb[128], *out, *line, *save = NULL;
	size_t len = encode_flow(tr, sizeof(tr)), i = 0;
	long lines;

	flow_image(sb, sizeof(sb), code, sizeof(code));
	snprintf(file, sizeof(file), "%s/code.bin", dir);

	out = decode_flow(tr, len, sb, RK_PT_INSN, &lines);
	cr_assert_eq(lines, 17, "[enabled], [exec mode], 14 instructions, [disabled]:\n%s", out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long ip;
		char cls[32];

		if (line[0] == '[') {
			if (!i)
				cr_assert(!strcmp(line, "[enabled]") ||
						  !strcmp(line, "[exec mode: 64-bit]"),
					  "%s", line);
			else
				cr_assert_str_eq(line, "[disabled]");
			continue;
		}
		cr_assert_lt(i, sizeof(want) / sizeof(want[0]));
		cr_assert_eq(sscanf(line, "%llx %31s", &ip, cls), 2, "%s", line);
		cr_assert_eq(ip, want[i].ip, "insn %zu: %s", i, line);
		cr_assert_str_eq(cls, want[i].cls, "insn %zu: %s", i, line);
		i++;
	}
	cr_assert_eq(i, sizeof(want) / sizeof(want[0]));
	free(out);

	/*
	 * Branches as perf script --itrace=b has them: the trace start from 0,
	 * every taken one as from -> to; a conditional branch not taken is
	 * none; the jmp under which tracing stopped goes to 0 ("tr end").
	 */
	out = decode_flow(tr, len, sb, RK_PT_BRANCHES, &lines);
	cr_assert_not_null(strstr(out, "               0  ->           400000   tr strt\n"), "%s",
			   out);
	cr_assert_not_null(strstr(out, "400002  ->           400007   jcc\n"), "%s", out);
	cr_assert_null(strstr(out, "400007  ->           400009"), "not taken, shown:\n%s", out);
	cr_assert_null(strstr(out, "400002  ->           400004"), "not taken, shown:\n%s", out);
	cr_assert_not_null(strstr(out, "400007  ->           400002   jcc\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400009  ->           400004   jmp\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400009  ->           400100   tr end\n"), "%s", out);
	cr_assert_eq(lines, 5, "the start and 4 taken branches:\n%s", out);
	free(out);

	/* Without the image the flow cannot be followed: a clear error, no guessing. */
	unlink(file);
	{
		struct pt_config cfg;
		struct pt_image *img = pt_image_alloc("empty");
		struct rk_pt_desc d;
		const char *why;
		char *mem = NULL;
		size_t sz = 0;
		FILE *f = open_memstream(&mem, &sz);

		desc_for_test(&d);
		cr_assert_eq(rk_pt_config(&d, sizeof(d), 1ull << 10, &cfg, &why), 0);
		lines = rk_pt_insn(f, tr, len, 0, &cfg, img, NULL, RK_PT_INSN);
		fclose(f);
		cr_assert_not_null(strstr(mem, "error: no memory mapped at this address"), "%s",
				   mem);
		free(mem);
		pt_image_free(img);
	}
}

/*
 * An interrupt and an asynchronous disable, as perf's decoder makes them
 * branches: through the code above, enabled at 400000, jz taken; an
 * interrupt at 400007 (FUP) to 400004 (TIP); jnz taken, jz not taken, jnz
 * not taken; tracing disabled at 400009 (FUP + TIP.PGD, before the jmp).
 * perf script --itrace=b: 0 -> 400000 tr strt, 400002 -> 400007 jcc (the
 * pending jz ends where the interrupt struck), 400007 -> 400004 int,
 * 400007 -> 400002 jcc, 400009 -> 0 tr end async (the jnz before it fell
 * through: none). The branch whose target the trace does not hold (here
 * none: the disable) is left out.
 */
Test(pt, branches_are_perf_s_interrupt_and_disable_edges)
{
	struct pt_packet pk[16];
	__u8 tr[256];
	char sb[128], *out;
	size_t n = 0, len;
	long lines;

	memset(pk, 0, sizeof(pk));
	pk[n++].type = ppt_psb;
	pk[n++].type = ppt_psbend;
	pk[n].type = ppt_mode;
	pk[n].payload.mode.leaf = pt_mol_exec;
	pk[n++].payload.mode.bits.exec.csl = 1;
	pk[n].type = ppt_tip_pge;
	pk[n].payload.ip.ipc = pt_ipc_sext_48;
	pk[n++].payload.ip.ip = 0x400000;
	pk[n].type = ppt_tnt_8;
	pk[n].payload.tnt.bit_size = 1;
	pk[n++].payload.tnt.payload = 0x1; /* jz taken */
	pk[n].type = ppt_fup;
	pk[n].payload.ip.ipc = pt_ipc_sext_48;
	pk[n++].payload.ip.ip = 0x400007;
	pk[n].type = ppt_tip;
	pk[n].payload.ip.ipc = pt_ipc_sext_48;
	pk[n++].payload.ip.ip = 0x400004;
	pk[n].type = ppt_tnt_8;
	pk[n].payload.tnt.bit_size = 3;
	pk[n++].payload.tnt.payload = 0x4; /* taken, not taken, not taken */
	pk[n].type = ppt_fup;
	pk[n].payload.ip.ipc = pt_ipc_sext_48;
	pk[n++].payload.ip.ip = 0x400009;
	pk[n].type = ppt_tip_pgd;
	pk[n++].payload.ip.ipc = pt_ipc_suppressed;
	pk[n++].type = ppt_psb;
	pk[n++].type = ppt_psbend;
	len = enc(pk, n, tr, sizeof(tr));
	flow_image(sb, sizeof(sb), code, sizeof(code));
	out = decode_flow(tr, len, sb, RK_PT_BRANCHES, &lines);
	cr_assert_not_null(strstr(out, "               0  ->           400000   tr strt\n"), "%s",
			   out);
	cr_assert_not_null(strstr(out, "400002  ->           400007   jcc\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400007  ->           400004   hw int\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400007  ->           400002   jcc\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400009  ->                0   tr end async\n"), "%s", out);
	cr_assert_eq(lines, 5, "%s", out);
	free(out);
}

/* The ringkeeper binary ('make unit' says where). */
static const char *rk_bin(void)
{
	const char *b = getenv("RK_BIN");

	return b ? b : "build/ringkeeper";
}

/* A whole file, NUL-terminated. */
static char *slurp_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	cr_assert_not_null(f, "%s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void put_core(const char *path);

/* Records of a perf.data file's data section, by type: the first of @type. */
static const __u8 *find_rec(const __u8 *f, size_t len, __u32 type, const __u8 *after)
{
	__u64 off, size, end;
	const __u8 *p;

	memcpy(&off, f + 40, 8); /* header: magic, size, attr_size, attrs{2}, data{off,size} */
	memcpy(&size, f + 48, 8);
	cr_assert_leq(off + size, len);
	end = off + size;
	for (p = f + off; p + 8 <= f + end;) {
		const struct perf_event_header *h = (const void *)p;
		__u64 skip = h->size;

		cr_assert_geq(h->size, 8);
		if (h->type == 71) /* AUXTRACE: its data follows the record */
			skip += *(const __u64 *)(p + 8);
		if (h->type == type && p > after)
			return p;
		p += skip;
	}
	return NULL;
}

/*
 * A session of thread 100 in @sess, as the recorder leaves it: a sched
 * file (one switch in, at 1000), an intel_pt file whose AUX area holds
 * @tr, arrived as one PERF_RECORD_AUX at 2000, and a sideband mapping
 * @text (written to @dir/code.bin) at 0x400000.
 */
static void put_session(const char *sess, const __u8 *tr, size_t len, const __u8 *text, size_t size)
{
	struct rk_evsel ev[RK_MAX_SRC - 1];
	struct rk_evsel_opts o = { .pt_sysfs = dir };
	struct rk_thread_ident id = { .tid = 100, .tgid = 100, .start_ns = 5 };
	struct rk_pmu_entry sched;
	struct rk_bufile *bf;
	struct rk_pt_desc d;
	union {
		struct perf_event_header h;
		__u64 q[8];
	} rec;
	char p[512], msg[256];
	int n;
	FILE *fp;

	snprintf(p, sizeof(p), "mkdir -p %s/sched %s/intel_pt %s/sideband", sess, sess, sess);
	cr_assert_eq(system(p), 0);
	/* The sched file: a thread to export. */
	rk_pmu_sched_entry(&sched);
	snprintf(p, sizeof(p), "%s/sched/100", sess);
	bf = rk_bufile__create(p, 4096, 0, &sched, &id);
	cr_assert_not_null(bf);
	memset(&rec, 0, sizeof(rec));
	rec.h.type = PERF_RECORD_SWITCH;
	rec.h.size = 8 + 32;
	rec.q[1] = 100ull << 32 | 100;
	rec.q[2] = 1000;
	rec.q[4] = RK_SCHED_ID;
	cr_assert_eq(rk_bufile__write(bf, &rec, rec.h.size), 0);
	rk_bufile__free(bf);
	/* The intel_pt file: the flow trace, arrived as one PERF_RECORD_AUX. */
	cr_assert_eq(rk_evsel_parse("intel_pt//", &o, ev, RK_MAX_SRC - 1, &n, msg, sizeof(msg)), 0);
	desc_for_test(&d);
	d.time_mult = 1 << 10;
	d.time_shift = 10;
	memcpy(ev[0].entry.desc, &d, sizeof(d));
	ev[0].entry.attr.config = 1ull << 10;
	snprintf(p, sizeof(p), "%s/intel_pt/100", sess);
	bf = rk_bufile__create(p, 4096, 8192, &ev[0].entry, &id);
	cr_assert_not_null(bf);
	memset(&rec, 0, sizeof(rec));
	rec.h.type = PERF_RECORD_AUX;
	rec.h.size = 64;
	rec.q[2] = len;
	rec.q[4] = 100ull << 32 | 100;
	rec.q[5] = 2000;
	rec.q[7] = 0x77;
	cr_assert_eq(rk_bufile__write_aux_rec(bf, &rec.h, tr, len, NULL, 0), 0);
	rk_bufile__free(bf);
	snprintf(p, sizeof(p), "%s/code.bin", dir);
	fp = fopen(p, "w");
	cr_assert_not_null(fp);
	fwrite(text, 1, size, fp);
	fclose(fp);
	snprintf(msg, sizeof(msg), "%s/sideband/100", sess);
	put_sideband(msg, p, 0x400000, 0x1000);
}

/* @sess exported to @out (perf.data). */
static void export_session(const char *sess, const char *out, struct rk_export_stats *est)
{
	struct rk_export_opts eo = { 0 };

	eo.session_dir = sess;
	eo.out = out;
	cr_assert_eq(rk_export_perf_data(&eo, est), 0);
}

/* Whether perf is installed: the comparisons with it are skipped without. */
static int have_perf(void)
{
	return !system("perf version > /dev/null 2>&1");
}

/*
 * Branch lines as "FROM TO FLAGS" (hex, flags' words single-spaced), one a
 * line, from perf script -F ip,addr,flags lines ("FLAGS FROM => TO") or
 * from ringkeeper's --pt=branches lines ("FROM [SYM] -> TO [SYM]  FLAGS",
 * no symbols here: code.bin has none); other lines (errors) are left out.
 */
static char *branch_rows(const char *text, int perf)
{
	char *mem = NULL, *copy = strdup(text), *line, *save = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&mem, &sz);

	cr_assert_not_null(copy);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *arrow = strstr(line, perf ? " => " : " -> "), *w, *wsave = NULL, *end;
		char flags[128] = "", *left;
		unsigned long long from, to;

		if (!arrow || line[0] == '[')
			continue;
		*arrow = '\0';
		if (perf) {
			/* the last word before the arrow is FROM, the words before it FLAGS */
			left = strrchr(line, ' ');
			from = strtoull(left ? left + 1 : line, NULL, 16);
			if (left)
				*left = '\0';
			to = strtoull(arrow + 4, NULL, 16);
			left = line;
		} else {
			from = strtoull(line, NULL, 16);
			to = strtoull(arrow + 4, &end, 16);
			left = end;
		}
		for (w = strtok_r(left, " ", &wsave); w; w = strtok_r(NULL, " ", &wsave))
			snprintf(flags + strlen(flags), sizeof(flags) - strlen(flags), "%s%s",
				 flags[0] ? " " : "", w);
		fprintf(f, "%llx %llx %s\n", from, to, flags);
	}
	fclose(f);
	free(copy);
	return mem;
}

/*
 * The branches of @sess's trace as perf script --itrace=be decodes its
 * export (*@perf) and as ringkeeper show --pt=branches does (*@rk), as
 * branch_rows() has them; *@perf_out: perf's own lines, for messages.
 */
static void branches_both_ways(const char *sess, char **perf, char **rk, char **perf_out)
{
	struct rk_export_stats est;
	char out[256], cmd[1024], *txt;
	int status;

	snprintf(out, sizeof(out), "%s.perf.data", sess);
	export_session(sess, out, &est);
	snprintf(cmd, sizeof(cmd), "perf script --itrace=be -F ip,addr,flags -i %s 2>&1", out);
	*perf_out = sh_out(cmd, &status);
	cr_assert_eq(status, 0, "%s:\n%s", cmd, *perf_out);
	*perf = branch_rows(*perf_out, 1);
	snprintf(cmd, sizeof(cmd), "%s show --pt=branches %s/intel_pt/100 2>&1", rk_bin(), sess);
	txt = sh_out(cmd, &status);
	cr_assert_eq(status, 0, "%s:\n%s", cmd, txt);
	*rk = branch_rows(txt, 0);
	free(txt);
}

Test(pt, export_writes_perf_auxtrace_that_perf_decodes)
{
	struct rk_export_stats est;
	__u8 tr[256], *f;
	char sess[100], p[512], out[200], cmd[1400], msg[256], *txt;
	size_t len = encode_flow(tr, sizeof(tr)), flen;
	const __u8 *info, *at;

	snprintf(sess, sizeof(sess), "%s/sess", dir);
	put_session(sess, tr, len, code, sizeof(code));
	snprintf(out, sizeof(out), "%s/perf.data", dir);
	export_session(sess, out, &est);
	cr_assert_eq(est.aux_bytes, len);
	f = (__u8 *)slurp_file(out, &flen);
	info = find_rec(f, flen, 70, NULL);
	cr_assert_not_null(info, "AUXTRACE_INFO");
	cr_assert_eq(*(const __u32 *)(info + 8), 1, "PERF_AUXTRACE_INTEL_PT");
	cr_assert_eq(*(const __u64 *)(info + 16), 8, "priv[PMU_TYPE]: the attr's type");
	cr_assert_eq(*(const __u64 *)(info + 16 + 5 * 8), 1ull << 10, "priv[TSC_BIT]: a mask");
	cr_assert_eq(*(const __u64 *)(info + 16 + 9 * 8), 0, "per-thread buffers");
	cr_assert_eq(*(const __u64 *)(info + 16 + 12 * 8), 200, "TSC/CTC n: CPUID 0x15 ebx");
	cr_assert_eq(*(const __u64 *)(info + 16 + 13 * 8), 2, "TSC/CTC d: CPUID 0x15 eax");
	at = find_rec(f, flen, 71, NULL);
	cr_assert_not_null(at, "AUXTRACE");
	cr_assert(at > info, "the info first");
	cr_assert_eq(*(const __u64 *)(at + 8), RK_ALIGN8(len), "size, padded");
	cr_assert_eq(*(const __u32 *)(at + 36), 100, "tid");
	cr_assert_eq(memcmp(at + 48, tr, len), 0, "the thread's trace bytes");
	free(f);

	/* perf itself reads it and dumps the packets with its own decoder. */
	snprintf(cmd, sizeof(cmd), "perf report -D -i %s > %s.txt 2>&1", out, out);
	cr_assert_eq(system(cmd), 0, "perf report -D failed");
	snprintf(p, sizeof(p), "%s.txt", out);
	txt = slurp_file(p, &flen);
	cr_assert_not_null(strstr(txt, "Intel Processor Trace data"), "%.3000s", txt);
	cr_assert_not_null(strstr(txt, "PSB"), "%.3000s", txt);
	cr_assert_not_null(strstr(txt, "TIP.PGE"), "%.3000s", txt);
	cr_assert_not_null(strstr(txt, "TNT"), "%.3000s", txt);
	free(txt);
	/* The header names the CPU the trace came from and the event (HEADER_CPUID, EVENT_DESC). */
	snprintf(cmd, sizeof(cmd), "perf report --header-only -i %s > %s.hdr 2>&1", out, out);
	cr_assert_eq(system(cmd), 0, "perf report --header-only failed");
	snprintf(p, sizeof(p), "%s.hdr", out);
	txt = slurp_file(p, &flen);
	cr_assert_not_null(strstr(txt, "# cpuid : GenuineIntel,"), "%.3000s", txt);
	cr_assert_not_null(strstr(txt, "# event : name = intel_pt,"), "%.3000s", txt);
	cr_assert_not_null(strstr(txt, "# event : name = sched,"), "%.3000s", txt);
	/* HEADER_AUXTRACE: the index of the AUXTRACE records, as perf writes it. */
	{
		const char *m = strstr(txt, "# missing features:");

		cr_assert(!m || !strstr(m, " AUXTRACE"), "%.3000s", txt);
	}
	free(txt);

	/*
	 * With HEADER_AUXTRACE perf script synthesizes branches and prints the
	 * fields its own PT files allow (-F addr: the attr has no ADDR); without
	 * it, it refused ("Cannot print 'addr' field"). With the MMAP2's time
	 * before the trace perf follows the flow through the code: its branches
	 * are --pt=branches' ones, edge for edge.
	 */
	{
		char *perf, *rk, *perf_out;

		branches_both_ways(sess, &perf, &rk, &perf_out);
		cr_assert_null(strstr(perf_out, "Cannot print"), "%s", perf_out);
		cr_assert_null(strstr(perf_out, "Failed to get instruction"), "%s", perf_out);
		cr_assert_eq(count_of(perf, "\n"), 5, "perf:\n%s", perf_out);
		cr_assert_str_eq(rk, perf, "perf script:\n%s", perf_out);
		free(perf);
		free(rk);
		free(perf_out);
	}
	/* The command line, from the session files alone: packets, instructions, records. */
	snprintf(cmd, sizeof(cmd), "%s show --pt=insn %s/intel_pt/100 > %s.insn 2>&1", rk_bin(),
		 sess, out);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(p, sizeof(p), "%s.insn", out);
	txt = slurp_file(p, &flen);
	cr_assert_not_null(strstr(txt, "[enabled]"), "%s", txt);
	cr_assert_not_null(strstr(txt, "400009  jump       ff e0"), "the sideband's image: %s",
			   txt);
	cr_assert_not_null(strstr(txt, "[disabled]"), "%s", txt);
	free(txt);
	snprintf(cmd, sizeof(cmd), "%s show --pt %s/intel_pt/100 > %s.pk 2>&1", rk_bin(), sess,
		 out);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(p, sizeof(p), "%s.pk", out);
	txt = slurp_file(p, &flen);
	cr_assert_not_null(strstr(txt, "tip.pge 3: 400000"), "%s", txt);
	free(txt);
	snprintf(cmd, sizeof(cmd), "%s show %s/intel_pt/100 > %s.rec 2>&1", rk_bin(), sess, out);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(p, sizeof(p), "%s.rec", out);
	txt = slurp_file(p, &flen);
	snprintf(msg, sizeof(msg), "PERF_RECORD_AUX offset 0 size %#zx flags 0", len);
	cr_assert_not_null(strstr(txt, msg), "file coordinates: %s", txt);
	free(txt);
	/* The code file gone: the image comes from a core dump instead. */
	snprintf(p, sizeof(p), "%s/code.bin", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/core", dir);
	put_core(p);
	snprintf(cmd, sizeof(cmd), "%s show --pt=insn --core %s %s/intel_pt/100 > %s.core 2>&1",
		 rk_bin(), p, sess, out);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(p, sizeof(p), "%s.core", out);
	txt = slurp_file(p, &flen);
	cr_assert_not_null(strstr(txt, "400009  jump       ff e0"), "from the core: %s", txt);
	free(txt);
	snprintf(cmd, sizeof(cmd), "%s show --pt --core %s/core %s/intel_pt/100 > %s.err 2>&1",
		 rk_bin(), dir, sess, out);
	cr_assert_eq(WEXITSTATUS(system(cmd)), 2, "--core without --pt=insn");
	snprintf(cmd, sizeof(cmd), "%s show --pt=insn --core %s/type %s/intel_pt/100 > %s.err 2>&1",
		 rk_bin(), dir, sess, out);
	cr_assert_eq(WEXITSTATUS(system(cmd)), 1, "a file that is not a core");
	snprintf(p, sizeof(p), "%s.err", out);
	txt = slurp_file(p, &flen);
	cr_assert_not_null(strstr(txt, "not an ELF core dump"), "%s", txt);
	free(txt);
	/* A file with no AUX area, a descriptor-less file: clear refusals. */
	snprintf(cmd, sizeof(cmd), "%s show --pt %s/sched/100 > %s.err 2>&1", rk_bin(), sess, out);
	cr_assert_neq(system(cmd), 0);
	snprintf(p, sizeof(p), "%s.err", out);
	txt = slurp_file(p, &flen);
	cr_assert_not_null(strstr(txt, "no AUX area"), "%s", txt);
	free(txt);
}

/* A minimal ELF core: one PT_LOAD holding our code at 0x400000. */
static void put_core(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	FILE *f = fopen(path, "w");
	static const __u8 pad[4096];

	cr_assert_not_null(f);
	rk_elfcore_ehdr(&eh);
	eh.e_phnum = 1;
	memset(&ph, 0, sizeof(ph));
	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_X;
	ph.p_offset = 4096;
	ph.p_vaddr = 0x400000;
	ph.p_filesz = sizeof(code);
	ph.p_memsz = 4096;
	ph.p_align = 4096;
	fwrite(&eh, sizeof(eh), 1, f);
	fwrite(&ph, sizeof(ph), 1, f);
	fwrite(pad, 1, 4096 - sizeof(eh) - sizeof(ph), f);
	fwrite(code, 1, sizeof(code), f);
	fclose(f);
}

Test(pt, instructions_decode_from_a_core_dump)
{
	struct rk_pt_desc d;
	struct pt_config cfg;
	struct pt_image *img = pt_image_alloc("core");
	const char *why = NULL;
	char core[128], *mem = NULL;
	size_t sz = 0;
	__u8 tr[256];
	size_t len = encode_flow(tr, sizeof(tr));
	long lines;
	FILE *f;

	snprintf(core, sizeof(core), "%s/core", dir);
	put_core(core);
	cr_assert_eq(rk_pt_image_add_core(img, core, &why), 1, "%s", why ? why : "");
	desc_for_test(&d);
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 1ull << 10, &cfg, &why), 0);
	f = open_memstream(&mem, &sz);
	lines = rk_pt_insn(f, tr, len, 0, &cfg, img, NULL, RK_PT_INSN);
	fclose(f);
	cr_assert_eq(lines, 17, "%s", mem);
	cr_assert_not_null(strstr(mem, "400009  jump       ff e0"), "%s", mem);
	free(mem);
	pt_image_free(img);
	/* Not a core: refused with the reason. */
	img = pt_image_alloc("bad");
	snprintf(core, sizeof(core), "%s/type", dir);
	cr_assert_eq(rk_pt_image_add_core(img, core, &why), -EINVAL);
	cr_assert_not_null(strstr(why, "not an ELF core"), "%s", why);
	pt_image_free(img);
}

/*
 * Issue 15: decoding as libipt's own ptxed does. Each scenario is a packet
 * stream of our own, encoded with libipt's encoder, through the code above.
 */

/* Packet builders. */
static struct pt_packet P(enum pt_packet_type t) {
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = t;
	return p;
}

static struct pt_packet
IP(enum pt_packet_type t, __u64 ip) {
	struct pt_packet p = P(t);

	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = ip;
	return p;
}

static struct pt_packet
TNT(unsigned int bits, __u64 payload) {
	struct pt_packet p = P(ppt_tnt_8);

	p.payload.tnt.bit_size = (uint8_t)bits;
	p.payload.tnt.payload = payload;
	return p;
}

static struct pt_packet
MODE_EXEC64(void) {
	struct pt_packet p = P(ppt_mode);

	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	return p;
}

static struct pt_packet
MODE_TSX(int intx, int abrt) {
	struct pt_packet p = P(ppt_mode);

	p.payload.mode.leaf = pt_mol_tsx;
	p.payload.mode.bits.tsx.intx = intx ? 1 : 0;
	p.payload.mode.bits.tsx.abrt = abrt ? 1 : 0;
	return p;
}

static const __u8 *image_text = code;
static size_t image_size = sizeof(code);

static char *decode_at_work(const __u8 *tr, size_t len, __u64 base, int mode, long *lines,
			    unsigned long long *reread)
{
	struct rk_symbols *syms;
	struct pt_image *img = pt_image_alloc("test");
	struct pt_config cfg;
	struct rk_pt_desc d;
	const char *why;
	char sb[128], *mem = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&mem, &sz);

	flow_image(sb, sizeof(sb), image_text, image_size);
	syms = rk_symbols__new(sb);
	desc_for_test(&d);
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 1ull << 10, &cfg, &why), 0);
	cr_assert_eq(rk_pt_image_add_maps(img, syms), 1);
	*lines = rk_pt_insn_work(f, tr, len, base, &cfg, img, syms, mode, reread);
	fclose(f);
	pt_image_free(img);
	rk_symbols__free(syms);
	return mem;
}

static char *decode_at(const __u8 *tr, size_t len, __u64 base, int mode, long *lines)
{
	return decode_at_work(tr, len, base, mode, lines, NULL);
}

/*
 * End of trace: the stream ends where a taken jz's target still needs a TNT
 * bit (every real trace ends at the AUX head). "[end of trace]", no error,
 * no instruction that was not traced.
 */
Test(pt, end_of_trace_is_not_an_error)
{
	struct pt_packet pk[] = { P(ppt_psb), P(ppt_psbend), MODE_EXEC64(),
				  IP(ppt_tip_pge, 0x400000), TNT(1, 1) /* jz taken */ };
	__u8 tr[128];
	size_t len = enc(pk, sizeof(pk) / sizeof(pk[0]), tr, sizeof(tr));
	long lines;
	char *out = decode_at(tr, len, 0, RK_PT_INSN, &lines);

	cr_assert_null(strstr(out, "error"), "%s", out);
	cr_assert_null(strstr(out, "no memory mapped"), "%s", out);
	cr_assert_not_null(strstr(out, "400000  other"), "%s", out);
	cr_assert_not_null(strstr(out, "400002  jcc"), "%s", out);
	cr_assert_eq(count_of(out, "[end of trace]"), 1, "%s", out);
	/* Nothing after the end: the jnz at 400007 needs a bit the trace does not have. */
	cr_assert_null(strstr(out, "400009"), "made up:\n%s", out);
	free(out);
}

/* An empty trace (timing only): nothing printed, not an error. */
Test(pt, an_empty_trace_decodes_to_nothing)
{
	struct pt_packet tsc = P(ppt_tsc), pk[5];
	__u8 tr[128];
	size_t len;
	long lines;
	char *out;

	tsc.payload.tsc.tsc = 0x1000;
	pk[0] = P(ppt_psb);
	pk[1] = tsc;
	pk[2] = P(ppt_psbend);
	pk[3] = P(ppt_psb);
	pk[4] = P(ppt_psbend);
	len = enc(pk, 5, tr, sizeof(tr));
	out = decode_at(tr, len, 0, RK_PT_INSN, &lines);
	cr_assert_eq(lines, 0, "%s", out);
	cr_assert_str_eq(out, "");
	free(out);
}

/*
 * A PSB+ that does not decode (a TIP inside it), first and between two good
 * segments: a sync error is printed and decoding goes on at the next PSB,
 * so the good segments are all there. Offsets are the ring's: @base added.
 */
Test(pt, a_bad_psb_is_skipped_first_and_in_the_middle)
{
	struct pt_packet bad[] = { P(ppt_psb), IP(ppt_tip, 0x400004), P(ppt_psbend) };
	/* The closing PSB+ lets the decoder bind the disable without reading into the next. */
	struct pt_packet good[] = { P(ppt_psb),	   P(ppt_psbend),
				    MODE_EXEC64(), IP(ppt_tip_pge, 0x400000),
				    TNT(2, 0x2),   IP(ppt_tip, 0x400004),
				    TNT(3, 0x4),   IP(ppt_tip_pgd, 0x400100),
				    P(ppt_psb),	   P(ppt_psbend) };
	__u8 tr[512];
	size_t len = 0, bad_at[2];
	char want[64], *out;
	long lines;

	bad_at[0] = len;
	len += enc(bad, 3, tr + len, sizeof(tr) - len);
	len += enc(good, 10, tr + len, sizeof(tr) - len);
	bad_at[1] = len;
	len += enc(bad, 3, tr + len, sizeof(tr) - len);
	len += enc(good, 10, tr + len, sizeof(tr) - len);
	out = decode_at(tr, len, 0x10000, RK_PT_INSN, &lines);
	cr_assert_eq(count_of(out, "sync error"), 2, "one error per bad PSB+:\n%s", out);
	/*
	 * The first segment is decoded up to where the decoder, looking past
	 * the disable for what binds to it, meets the bad PSB+ (ptxed too);
	 * the second one, after it, whole: 14 instructions, then disabled.
	 */
	cr_assert_geq(count_of(out, "400009  jump"), 3, "%s", out);
	{
		const char *last = out, *p;

		while ((p = strstr(last + 1, "sync error")))
			last = p;
		cr_assert_eq(count_of(last, "  jcc ") + count_of(last, "  jump ") +
				     count_of(last, "  other "),
			     14, "the segment after the bad PSB+:\n%s", last);
		cr_assert_eq(count_of(last, "[disabled]"), 1, "%s", last);
	}
	snprintf(want, sizeof(want), "[%016llx, ", 0x10000ull + bad_at[0]);
	cr_assert_not_null(strstr(out, want), "the first error at ring offset %s:\n%s", want, out);
	snprintf(want, sizeof(want), "[%016llx, ", 0x10000ull + bad_at[1]);
	cr_assert_not_null(strstr(out, want), "the second at ring offset %s:\n%s", want, out);
	free(out);
}

/*
 * The instruction that comes with an error is printed: a jz whose TNT bit
 * is a TIP instead is decoded, then the error.
 */
Test(pt, the_instruction_with_the_error_is_printed)
{
	struct pt_packet pk[] = { P(ppt_psb), P(ppt_psbend), MODE_EXEC64(),
				  IP(ppt_tip_pge, 0x400000), IP(ppt_tip, 0x400004) };
	__u8 tr[128];
	size_t len = enc(pk, sizeof(pk) / sizeof(pk[0]), tr, sizeof(tr));
	long lines;
	char *out = decode_at(tr, len, 0, RK_PT_INSN, &lines), *err;

	err = strstr(out, "error");
	cr_assert_not_null(err, "%s", out);
	cr_assert_not_null(strstr(out, "400000  other"), "%s", out);
	cr_assert(strstr(out, "400002  jcc") && strstr(out, "400002  jcc") < err,
		  "the jz before its error:\n%s", out);
	free(out);
}

/*
 * TSX: the state a PSB+ repeats prints nothing; a begin, commit and abort
 * in the flow print as ptxed names them, and what ran inside the
 * transaction is marked "? ".
 */
Test(pt, tsx_status_repeats_are_quiet_and_transactions_are_named)
{
	struct pt_packet pk[] = { P(ppt_psb),
				  MODE_TSX(0, 0), /* the PSB+'s status: not an event */
				  P(ppt_psbend),
				  MODE_EXEC64(),
				  IP(ppt_tip_pge, 0x400000),
				  MODE_TSX(1, 0),
				  IP(ppt_fup, 0x400002), /* begin at the jz */
				  TNT(2, 0x2), /* jz taken, jnz not taken */
				  MODE_TSX(0, 0),
				  IP(ppt_fup, 0x400009), /* commit at the jmp */
				  IP(ppt_tip, 0x400004),
				  MODE_TSX(0, 1),
				  IP(ppt_fup, 0x400007), /* abort at the jnz... */
				  IP(ppt_tip, 0x400000), /* ...to the handler */
				  IP(ppt_tip_pgd, 0x400100) };
	__u8 tr[256];
	size_t len = enc(pk, sizeof(pk) / sizeof(pk[0]), tr, sizeof(tr));
	long lines;
	char *out = decode_at(tr, len, 0, RK_PT_INSN, &lines);

	cr_assert_null(strstr(out, "[tsx]"), "%s", out);
	cr_assert_eq(count_of(out, "[begin transaction]"), 1, "%s", out);
	cr_assert_eq(count_of(out, "[committed]"), 1, "%s", out);
	cr_assert_eq(count_of(out, "[aborted]"), 1, "%s", out);
	cr_assert_not_null(strstr(out, "? "), "no speculative instruction marked:\n%s", out);
	cr_assert(strstr(out, "[begin transaction]") < strstr(out, "[committed]") &&
			  strstr(out, "[committed]") < strstr(out, "[aborted]"),
		  "%s", out);
	free(out);
}

/* Every payload ptdump prints is in rk_pt_dump's lines. */
Test(pt, packets_show_their_payloads)
{
	struct pt_packet pk[16];
	const char *want[] = { "psb",		"ptw 1: deadbeefcafe, ip", "exstop ip",
			       "pwre c2.3, hw", "pwrx int: c4, c5",	   "pwre c1.0\n",
			       "vmcs 12345000", "mnt 1122334455667788",	   "mwait 5, 1",
			       "mode.tsx intx", "mode.tsx abrt",	   "pip 1000, nr",
			       "psbend" };
	__u8 tr[512];
	size_t len, n = 0, i;
	struct pt_config cfg;
	char *mem = NULL;
	size_t sz = 0;
	FILE *f;

	pk[n++] = P(ppt_psb);
	pk[n] = P(ppt_ptw);
	pk[n].payload.ptw.plc = 1;
	pk[n].payload.ptw.payload = 0xdeadbeefcafeull;
	pk[n++].payload.ptw.ip = 1;
	pk[n] = P(ppt_exstop);
	pk[n++].payload.exstop.ip = 1;
	pk[n] = P(ppt_pwre);
	pk[n].payload.pwre.state = 1;
	pk[n].payload.pwre.sub_state = 2;
	pk[n++].payload.pwre.hw = 1;
	pk[n] = P(ppt_pwrx);
	pk[n].payload.pwrx.last = 3;
	pk[n].payload.pwrx.deepest = 4;
	pk[n++].payload.pwrx.interrupt = 1;
	/* C1.0 is carried as 0.15 (the "c0.15 where ptdump says c1.0"). */
	pk[n] = P(ppt_pwre);
	pk[n].payload.pwre.state = 0;
	pk[n++].payload.pwre.sub_state = 15;
	pk[n] = P(ppt_vmcs);
	pk[n++].payload.vmcs.base = 0x12345000;
	pk[n] = P(ppt_mnt);
	pk[n++].payload.mnt.payload = 0x1122334455667788ull;
	pk[n] = P(ppt_mwait);
	pk[n].payload.mwait.hints = 5;
	pk[n++].payload.mwait.ext = 1;
	pk[n++] = MODE_TSX(1, 0);
	pk[n++] = MODE_TSX(0, 1);
	pk[n] = P(ppt_pip);
	pk[n].payload.pip.cr3 = 0x1000;
	pk[n++].payload.pip.nr = 1;
	pk[n++] = P(ppt_psbend);
	len = enc(pk, n, tr, sizeof(tr));
	pt_config_init(&cfg);
	f = open_memstream(&mem, &sz);
	cr_assert_eq(rk_pt_dump(f, tr, len, 0, &cfg), (long)n);
	fclose(f);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert_not_null(strstr(mem, want[i]), "no '%s' in:\n%s", want[i], mem);
	cr_assert_null(strstr(mem, "packet type"), "%s", mem);
	free(mem);
}

/*
 * Events carry their payloads in --pt=insn: a PTWRITE value (at its
 * ptwrite instruction), power events' states, the CR3 of an asynchronous
 * paging event. The code: 400000 ptwrite %eax; 400004 jmp *%rax.
 */
static const __u8 ptw_code[] = { 0xf3, 0x0f, 0xae, 0xe0, 0xff, 0xe0 };

Test(pt, events_carry_their_payloads)
{
	struct pt_packet pk[14];
	__u8 tr[256];
	size_t len, n = 0;
	long lines;
	char *out;

	pk[n++] = P(ppt_psb);
	pk[n++] = P(ppt_psbend);
	pk[n++] = MODE_EXEC64();
	pk[n++] = IP(ppt_tip_pge, 0x400000);
	pk[n] = P(ppt_ptw);
	pk[n].payload.ptw.plc = 1;
	pk[n++].payload.ptw.payload = 0x1234567890ull;
	pk[n] = P(ppt_pwre);
	pk[n++].payload.pwre.state = 2;
	pk[n] = P(ppt_pwrx);
	pk[n].payload.pwrx.last = 2;
	pk[n].payload.pwrx.deepest = 6;
	pk[n++].payload.pwrx.store = 1;
	/* An asynchronous address space change at the jmp: FUP, PIP, then disabled. */
	pk[n++] = IP(ppt_fup, 0x400004);
	pk[n] = P(ppt_pip);
	pk[n++].payload.pip.cr3 = 0xabc000;
	pk[n++] = IP(ppt_tip_pgd, 0x400100);
	pk[n++] = P(ppt_psb);
	pk[n++] = P(ppt_psbend);
	len = enc(pk, n, tr, sizeof(tr));
	image_text = ptw_code;
	image_size = sizeof(ptw_code);
	out = decode_at(tr, len, 0, RK_PT_INSN, &lines);
	image_text = code;
	image_size = sizeof(code);
	cr_assert_not_null(strstr(out, "400000  ptwrite"), "%s", out);
	cr_assert_not_null(strstr(out, "[ptwrite: 1234567890]"), "%s", out);
	/* As ptxed prints them: the C-states, not the packets' state - 1. */
	cr_assert_not_null(strstr(out, "[pwre c3.1]"), "%s", out);
	cr_assert_not_null(strstr(out, "[pwrx st: c3 (c7)]"), "%s", out);
	cr_assert_not_null(strstr(out, "[paging, cr3: 0000000000abc000]"), "%s", out);
	cr_assert_null(strstr(out, "[event]"), "%s", out);
	cr_assert_null(strstr(out, "error"), "%s", out);
	free(out);
}

/* Address filters from the descriptor reach libipt's configuration. */
Test(pt, address_filters_from_the_descriptor)
{
	struct rk_pt_desc d;
	struct pt_config cfg;
	const char *why;

	desc_for_test(&d);
	snprintf(d.filter, sizeof(d.filter),
		 "filter 400000-400fff; stop 7f0000001000-7f0000001fff");
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 1ull << 10, &cfg, &why), 0, "%s", why);
	cr_assert_eq(cfg.addr_filter.config.ctl.addr0_cfg, 1);
	cr_assert_eq(cfg.addr_filter.config.ctl.addr1_cfg, 2);
	cr_assert_eq(cfg.addr_filter.addr0_a, 0x400000);
	cr_assert_eq(cfg.addr_filter.addr0_b, 0x400fff);
	cr_assert_eq(cfg.addr_filter.addr1_a, 0x7f0000001000ull);
	cr_assert_eq(cfg.addr_filter.addr1_b, 0x7f0000001fffull);
	cr_assert_eq(cfg.addr_filter.config.ctl.addr2_cfg, 0);
	snprintf(d.filter, sizeof(d.filter), "filter 500-400");
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 1ull << 10, &cfg, &why), -EINVAL);
	snprintf(d.filter, sizeof(d.filter), "tracestart 1-2");
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 1ull << 10, &cfg, &why), -EINVAL);
	snprintf(d.filter, sizeof(d.filter),
		 "filter 1-2;filter 3-4;filter 5-6;filter 7-8;filter 9-a");
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 1ull << 10, &cfg, &why), -EINVAL, "5 ranges");
	memset(d.filter, 0, sizeof(d.filter));
	cr_assert_eq(rk_pt_config(&d, sizeof(d), 1ull << 10, &cfg, &why), 0);
	cr_assert_eq(cfg.addr_filter.config.addr_cfg, 0);
}

/*
 * A loop of direct jumps consumes no trace: 400000 jmp 400002; 400002 jmp
 * 400000. Decoding stops it as perf does ("Never-ending loop", within a
 * few turns: the run comes back to an instruction it passed) and goes on
 * at the PSB+ that follows, which libipt read ahead while in the loop
 * (decoding_goes_on_at_the_psb_after_a_loop_or_an_error). Before the bound
 * it printed the two jumps forever (the timeout fails the test).
 */
static const __u8 loop_code[] = { 0xeb, 0x00, 0xeb, 0xfc, 0xcc };

Test(pt, a_loop_of_direct_jumps_is_a_never_ending_loop, .timeout = 20)
{
	struct pt_packet pk[12];
	__u8 tr[256];
	size_t len, n = 0;
	long lines;
	char *out;

	pk[n++] = P(ppt_psb);
	pk[n++] = P(ppt_psbend);
	pk[n++] = MODE_EXEC64();
	pk[n++] = IP(ppt_tip_pge, 0x400000);
	/* More trace after it: the decoder does not stop at its end. */
	pk[n++] = P(ppt_psb);
	pk[n++] = MODE_EXEC64();
	pk[n++] = IP(ppt_fup, 0x400004);
	pk[n++] = P(ppt_psbend);
	len = enc(pk, n, tr, sizeof(tr));
	image_text = loop_code;
	image_size = sizeof(loop_code);
	out = decode_at(tr, len, 0, RK_PT_INSN, &lines);
	image_text = code;
	image_size = sizeof(code);
	cr_assert_not_null(strstr(out, "error: Never-ending loop]"), "%s", out);
	cr_assert_lt(lines, 20, "%ld lines:\n%.2000s", lines, out);
	free(out);
}

/*
 * @text, entered at 0x400000 and never left by a traced branch: the trace
 * (more of it after, in a PSB+ the loop never reaches) decoded in @mode.
 */
static char *decode_loop(const __u8 *text, size_t size, int mode, long *lines)
{
	/* The TIP after the PSB+ waits for a branch: the trace does not end there. */
	struct pt_packet pk[] = { P(ppt_psb),
				  P(ppt_psbend),
				  MODE_EXEC64(),
				  IP(ppt_tip_pge, 0x400000),
				  P(ppt_psb),
				  MODE_EXEC64(),
				  IP(ppt_fup, 0x400100),
				  P(ppt_psbend),
				  IP(ppt_tip, 0x400000) };
	__u8 tr[256];
	size_t len = enc(pk, sizeof(pk) / sizeof(pk[0]), tr, sizeof(tr));
	char *out;

	image_text = text;
	image_size = size;
	out = decode_at(tr, len, 0, mode, lines);
	image_text = code;
	image_size = sizeof(code);
	return out;
}

/*
 * Issue 38, item 1: a loop with other instructions than its jump consumes
 * no trace either. 400000 nop; 400001 jmp 400000 and 400000 add %rbx,%rax;
 * 400003 cmp %rbx,%rax; 400006 jmp 400000 printed hundreds of MB in
 * seconds (the nop, the add ended the run of jumps the bound counted); as
 * perf's decoder they are a never-ending loop within a few turns, in
 * either mode. Before the fix the timeout fails the test.
 */
static const __u8 nop_loop[] = { 0x90, 0xeb, 0xfd, 0xcc };
static const __u8 add_loop[] = { 0x48, 0x01, 0xd8, 0x48, 0x39, 0xd8, 0xeb, 0xf8, 0xcc };

Test(pt, a_loop_with_other_instructions_is_a_never_ending_loop, .timeout = 20)
{
	const struct {
		const __u8 *text;
		size_t size;
	} loops[] = { { nop_loop, sizeof(nop_loop) }, { add_loop, sizeof(add_loop) } };
	size_t i;
	int mode;

	for (i = 0; i < sizeof(loops) / sizeof(loops[0]); i++)
		for (mode = RK_PT_INSN; mode <= RK_PT_BRANCHES; mode++) {
			long lines;
			char *out = decode_loop(loops[i].text, loops[i].size, mode, &lines);

			cr_assert_eq(count_of(out, "error: Never-ending loop]"), 1,
				     "loop %zu, mode %d:\n%.2000s", i, mode, out);
			cr_assert_lt(lines, 40, "loop %zu, mode %d: %ld lines:\n%.2000s", i, mode,
				     lines, out);
			free(out);
		}
}

/*
 * Issue 38, item 2: a loop that takes a TIP each turn is traced, not
 * endless. 400000 jmp *%rax (TIP 400002); 400002 jmp 400000, 8 turns, then
 * the jmp *%rax under which tracing stops (TIP.PGD): 17 instructions, as
 * ptxed and perf decode them. The same with call *%rax. The bound that
 * counted the jmp *%rax as a direct jump called it a never-ending loop
 * after 4 and lost the rest up to the next PSB.
 */
static const __u8 jmp_rax_loop[] = { 0xff, 0xe0, 0xeb, 0xfc, 0xcc };
static const __u8 call_rax_loop[] = { 0xff, 0xd0, 0xeb, 0xfc, 0xcc };

Test(pt, a_loop_that_takes_a_tip_each_turn_is_not_endless, .timeout = 20)
{
	const __u8 *texts[] = { jmp_rax_loop, call_rax_loop };
	struct pt_packet pk[20];
	__u8 tr[256];
	size_t n = 0, len, i;

	pk[n++] = P(ppt_psb);
	pk[n++] = P(ppt_psbend);
	pk[n++] = MODE_EXEC64();
	pk[n++] = IP(ppt_tip_pge, 0x400000);
	for (i = 0; i < 8; i++)
		pk[n++] = IP(ppt_tip, 0x400002);
	pk[n++] = IP(ppt_tip_pgd, 0x400100);
	pk[n++] = P(ppt_psb);
	pk[n++] = P(ppt_psbend);
	len = enc(pk, n, tr, sizeof(tr));
	for (i = 0; i < 2; i++) {
		long lines;
		char *out;

		image_text = texts[i];
		image_size = sizeof(jmp_rax_loop);
		out = decode_at(tr, len, 0, RK_PT_INSN, &lines);
		cr_assert_null(strstr(out, "Never-ending loop"), "%s", out);
		cr_assert_eq(count_of(out, "400000  "), 9, "%s", out);
		cr_assert_eq(count_of(out, "400002  jump"), 8, "%s", out);
		cr_assert_eq(count_of(out, "[disabled]"), 1, "%s", out);
		free(out);
		out = decode_at(tr, len, 0, RK_PT_BRANCHES, &lines);
		cr_assert_null(strstr(out, "Never-ending loop"), "%s", out);
		cr_assert_eq(count_of(out, "400000  ->           400002"), 8, "%s", out);
		cr_assert_eq(count_of(out, "400002  ->           400000   jmp"), 8, "%s", out);
		free(out);
	}
	image_text = code;
	image_size = sizeof(code);
}

/*
 * @pk (a TSC added to its first PSB+, as perf wants one) through @text,
 * decoded by ringkeeper (--pt=branches, returned) and, where perf is
 * installed, compared with perf script --itrace=be on the export: perf's
 * rows are ringkeeper's, or (@prefix) begin with them.
 */
static char *branches_and_perf(const char *name, const struct pt_packet *pk, size_t n,
			       const __u8 *text, size_t size, int prefix)
{
	struct pt_packet q[64];
	char sess[256], cmd[1024], *perf, *rk, *po, *out;
	__u8 tr[1024];
	size_t len;

	cr_assert_lt(n, 63);
	q[0] = pk[0];
	q[1] = P(ppt_tsc);
	q[1].payload.tsc.tsc = 0x1234;
	memcpy(q + 2, pk + 1, (n - 1) * sizeof(*pk));
	len = enc(q, n + 1, tr, sizeof(tr));
	snprintf(sess, sizeof(sess), "%s/%s", dir, name);
	put_session(sess, tr, len, text, size);
	snprintf(cmd, sizeof(cmd), "%s show --pt=branches %s/intel_pt/100 2>&1", rk_bin(), sess);
	out = sh_out(cmd, NULL);
	if (!have_perf())
		return out;
	branches_both_ways(sess, &perf, &rk, &po);
	if (prefix)
		cr_assert_eq(strncmp(perf, rk, strlen(rk)), 0, "%s: perf:\n%s\nringkeeper:\n%s",
			     name, po, out);
	else
		cr_assert_str_eq(rk, perf, "%s: perf:\n%s\nringkeeper:\n%s", name, po, out);
	free(perf);
	free(rk);
	free(po);
	return out;
}

/*
 * Issue 38, item 3: a jz taken (its TNT bit) and then an OVF: the jz went
 * to 400007, not to 400004 where tracing resumes (FUP); perf: 400002 =>
 * 400007 jcc, then tr strt 0 => 400004. (perf then has the jmp *%rax
 * under the TIP.PGD that ends the trace as tr end, which libipt ends the
 * trace before: ringkeeper's rows are the start of perf's.)
 */
Test(pt, a_branch_pending_at_an_overflow_ends_where_it_went)
{
	struct pt_packet pk[] = {
		P(ppt_psb),	P(ppt_psbend), MODE_EXEC64(),	      IP(ppt_tip_pge, 0x400000),
		TNT(1, 1),	P(ppt_ovf),    IP(ppt_fup, 0x400004), TNT(3, 0x4),
		P(ppt_tip_pgd), P(ppt_psb),    P(ppt_psbend)
	};
	char *out = branches_and_perf("ovf", pk, sizeof(pk) / sizeof(pk[0]), code, sizeof(code), 1);

	cr_assert_not_null(strstr(out, "400002  ->           400007   jcc\n"), "%s", out);
	cr_assert_not_null(strstr(out, "     0  ->           400004   tr strt\n"), "%s", out);
	cr_assert_null(strstr(out, "400002  ->           400004"),
		       "an edge that never happened:\n%s", out);
	cr_assert_not_null(strstr(out, "400007  ->           400002   jcc\n"), "%s", out);
	free(out);
}

/*
 * Issue 38, item 4: a transaction begins at the jz (taken inside it: perf's
 * "(x)"), commits at the jmp, begins again and aborts at the jnz to the
 * handler at 400009: one edge, 400007 => 400009 tx abrt, as perf has it
 * (no self-edge, no interrupt after it).
 */
Test(pt, a_transaction_abort_is_one_edge_and_in_transaction_branches_are_marked)
{
	struct pt_packet pk[] = { P(ppt_psb),
				  MODE_TSX(0, 0),
				  P(ppt_psbend),
				  MODE_EXEC64(),
				  IP(ppt_tip_pge, 0x400000),
				  MODE_TSX(1, 0),
				  IP(ppt_fup, 0x400002),
				  TNT(2, 0x2),
				  MODE_TSX(0, 0),
				  IP(ppt_fup, 0x400009),
				  IP(ppt_tip, 0x400004),
				  MODE_TSX(1, 0),
				  IP(ppt_fup, 0x400004),
				  MODE_TSX(0, 1),
				  IP(ppt_fup, 0x400007),
				  IP(ppt_tip, 0x400009),
				  IP(ppt_tip_pgd, 0x400100),
				  P(ppt_psb),
				  P(ppt_psbend) };
	char *out = branches_and_perf("tsx", pk, sizeof(pk) / sizeof(pk[0]), code, sizeof(code), 0);

	cr_assert_not_null(strstr(out, "400002  ->           400007   jcc (x)\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400009  ->           400004   jmp\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400007  ->           400009   tx abrt\n"), "%s", out);
	cr_assert_null(strstr(out, "400007  ->           400007"), "a self-edge:\n%s", out);
	cr_assert_null(strstr(out, " int"), "%s", out);
	cr_assert_eq(count_of(out, "\n"), 5, "%s", out);
	free(out);
}

/*
 * Issue 38, item 5: perf's flags words. 400000 syscall; 400002 sysretq;
 * 400005 iretq; 400007 int3; 400008 sysenter; 40000a sysexit; 40000c jmp
 * *%rax; 40000e call 400013 (not mapped: perf has the edge, then "Failed to
 * get instruction"). Then an interrupt is "hw int", a TIP.PGD with a target
 * is "tr end" to it, and the jmp *%rax whose TIP ends the trace is kept.
 */
static const __u8 far_code[] = { 0x0f, 0x05, 0x48, 0x0f, 0x07, 0x48, 0xcf, 0xcc, 0x0f, 0x34,
				 0x0f, 0x35, 0xff, 0xe0, 0xe8, 0x00, 0x00, 0x00, 0x00 };

Test(pt, branches_have_perf_s_flags_words)
{
	struct pt_packet far[] = { P(ppt_psb),
				   P(ppt_psbend),
				   MODE_EXEC64(),
				   IP(ppt_tip_pge, 0x400000),
				   IP(ppt_tip, 0x400002),
				   IP(ppt_tip, 0x400005),
				   IP(ppt_tip, 0x400007),
				   IP(ppt_tip, 0x400008),
				   IP(ppt_tip, 0x40000a),
				   IP(ppt_tip, 0x40000c),
				   IP(ppt_tip, 0x40000e),
				   IP(ppt_tip_pgd, 0x400100),
				   P(ppt_psb),
				   P(ppt_psbend) };
	struct pt_packet irq[] = { P(ppt_psb),
				   P(ppt_psbend),
				   MODE_EXEC64(),
				   IP(ppt_tip_pge, 0x400000),
				   TNT(1, 1),
				   IP(ppt_fup, 0x400007),
				   IP(ppt_tip, 0x400004),
				   TNT(3, 0x4),
				   IP(ppt_tip_pgd, 0x400100),
				   P(ppt_psb),
				   P(ppt_psbend) };
	struct pt_packet end[] = { P(ppt_psb),	  P(ppt_psbend),
				   MODE_EXEC64(), IP(ppt_tip_pge, 0x400000),
				   TNT(2, 0x2),	  IP(ppt_tip, 0x400004) };
	char *out;

	out = branches_and_perf("far", far, sizeof(far) / sizeof(far[0]), far_code,
				sizeof(far_code), 0);
	cr_assert_not_null(strstr(out, "400000  ->           400002   syscall\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400002  ->           400005   sysret\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400005  ->           400007   iret\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400007  ->           400008   int\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400008  ->           40000a   syscall\n"), "%s", out);
	cr_assert_not_null(strstr(out, "40000a  ->           40000c   sysret\n"), "%s", out);
	cr_assert_not_null(strstr(out, "40000e  ->           400013   call\n"), "%s", out);
	free(out);
	out = branches_and_perf("irq", irq, sizeof(irq) / sizeof(irq[0]), code, sizeof(code), 0);
	cr_assert_not_null(strstr(out, "400007  ->           400004   hw int\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400009  ->           400100   tr end\n"), "%s", out);
	free(out);
	out = branches_and_perf("end", end, sizeof(end) / sizeof(end[0]), code, sizeof(code), 0);
	cr_assert_not_null(strstr(out, "400009  ->           400004   jmp\n"), "the last: %s", out);
	free(out);
}

/*
 * Issue 52, item 7a: @novf overflows between two PSBs, each after a jz
 * taken (TNT) and followed by a FUP at 400000, decoded as branches: the
 * packets read besides libipt's decoder (*@reread). Return: the lines.
 */
static long overflows_decoded(int novf, unsigned long long *reread)
{
	size_t cap = 8 + 3 * (size_t)novf, n = 0, len;
	struct pt_packet *pk = calloc(cap, sizeof(*pk));
	__u8 *tr = malloc(cap * 8);
	long lines;
	char *out;
	int i;

	cr_assert(pk && tr);
	pk[n++] = P(ppt_psb);
	pk[n++] = P(ppt_psbend);
	pk[n++] = MODE_EXEC64();
	pk[n++] = IP(ppt_tip_pge, 0x400000);
	for (i = 0; i < novf; i++) {
		pk[n++] = TNT(1, 1);
		pk[n++] = P(ppt_ovf);
		pk[n++] = IP(ppt_fup, 0x400000);
	}
	pk[n++] = P(ppt_psb);
	pk[n++] = P(ppt_psbend);
	len = enc(pk, n, tr, cap * 8);
	out = decode_at_work(tr, len, 0, RK_PT_BRANCHES, &lines, reread);
	cr_assert_eq(count_of(out, "400002  ->           400007   jcc\n"), novf, "%.2000s", out);
	cr_assert_eq(count_of(out, "     0  ->           400000   tr strt\n"), novf + 1, "%.2000s",
		     out);
	free(out);
	free(pk);
	free(tr);
	return lines;
}

/*
 * Each overflow's look back at what its pending branch took read the
 * packets again from the PSB: twice the overflows between two PSBs, four
 * times the work (16,000 overflows: 5.2 s, perf 0.06 s). Followed once,
 * twice the overflows are twice the packets read.
 */
Test(pt, overflows_cost_linear_work)
{
	unsigned long long one = 0, two = 0;

	cr_assert_eq(overflows_decoded(400, &one), 2 * 400 + 1);
	cr_assert_eq(overflows_decoded(800, &two), 2 * 800 + 1);
	cr_assert_gt(one, 0, "the look back reads the packets at least once");
	cr_assert_leq(two, 2 * one + 16, "400 overflows: %llu packets read, 800: %llu", one, two);
}

/*
 * Issue 52, item 7b: 400000 call 400010; 400005 jmp *%rax; 400010 ret.
 * The ret is compressed (a TNT bit taken: it returns to 400005, where the
 * call pushed) and an OVF comes before 400005 runs. perf: 400010 =>
 * 400005 return, then tr strt 0 => 400005 (FUP) and the jmp's tr end. The
 * return was dropped: its target is in neither its bytes nor a TIP.
 */
static const __u8 ret_code[] = { 0xe8, 0x0b, 0x00, 0x00, 0x00, 0xff, 0xe0, 0xcc, 0xcc,
				 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xc3 };

Test(pt, a_compressed_return_pending_at_an_overflow_goes_where_its_call_pushed)
{
	struct pt_packet pk[] = { P(ppt_psb),
				  P(ppt_psbend),
				  MODE_EXEC64(),
				  IP(ppt_tip_pge, 0x400000),
				  TNT(1, 1), /* the ret, compressed */
				  P(ppt_ovf),
				  IP(ppt_fup, 0x400005),
				  IP(ppt_tip_pgd, 0x400100),
				  P(ppt_psb),
				  P(ppt_psbend) };
	char *out = branches_and_perf("retovf", pk, sizeof(pk) / sizeof(pk[0]), ret_code,
				      sizeof(ret_code), 0);

	cr_assert_not_null(strstr(out, "400000  ->           400010   call\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400010  ->           400005   return\n"), "%s", out);
	cr_assert_not_null(strstr(out, "     0  ->           400005   tr strt\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400005  ->           400100   tr end\n"), "%s", out);
	free(out);
}

/*
 * Issue 52, item 7d: an asynchronous disable whose TIP.PGD has an IP (an
 * interrupt into code not traced): jz taken, then FUP 400007 + TIP.PGD
 * 400100. perf: 400007 => 400100 "tr end  hw int"; it was 400007 -> 0
 * "tr end async", which stays for a TIP.PGD without an IP
 * (branches_are_perf_s_interrupt_and_disable_edges).
 */
Test(pt, an_asynchronous_disable_with_an_ip_is_an_interrupt_that_ends_the_trace)
{
	struct pt_packet pk[] = { P(ppt_psb),
				  P(ppt_psbend),
				  MODE_EXEC64(),
				  IP(ppt_tip_pge, 0x400000),
				  TNT(1, 1),
				  IP(ppt_fup, 0x400007),
				  IP(ppt_tip_pgd, 0x400100),
				  P(ppt_psb),
				  P(ppt_psbend) };
	char *out =
		branches_and_perf("irqpgd", pk, sizeof(pk) / sizeof(pk[0]), code, sizeof(code), 0);

	cr_assert_not_null(strstr(out, "400002  ->           400007   jcc\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400007  ->           400100   tr end  hw int\n"), "%s",
			   out);
	cr_assert_null(strstr(out, "async"), "%s", out);
	cr_assert_eq(count_of(out, "\n"), 3, "%s", out);
	free(out);
}

/*
 * Issue 52, item 7e: a transaction aborted at the jnz (FUP 400007) into a
 * TIP.PGD, with no IP and with one: perf has one edge, 400007 => 0 or
 * 400009 "tr end  tx abrt". It was a self-edge 400007 -> 400007 tx abrt,
 * then 400007 -> 0 tr end async.
 */
Test(pt, a_transaction_abort_into_a_disable_is_one_edge)
{
	struct pt_packet pk[] = { P(ppt_psb),
				  MODE_TSX(0, 0),
				  P(ppt_psbend),
				  MODE_EXEC64(),
				  IP(ppt_tip_pge, 0x400000),
				  MODE_TSX(1, 0),
				  IP(ppt_fup, 0x400002),
				  TNT(1, 1),
				  MODE_TSX(0, 1),
				  IP(ppt_fup, 0x400007),
				  P(ppt_tip_pgd),
				  P(ppt_psb),
				  P(ppt_psbend) };
	const size_t n = sizeof(pk) / sizeof(pk[0]);
	char *out = branches_and_perf("abrtpgd", pk, n, code, sizeof(code), 0);

	cr_assert_not_null(strstr(out, "400002  ->           400007   jcc (x)\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400007  ->                0   tr end  tx abrt\n"), "%s",
			   out);
	cr_assert_null(strstr(out, "400007  ->           400007"), "a self-edge:\n%s", out);
	cr_assert_eq(count_of(out, "\n"), 3, "%s", out);
	free(out);
	pk[10] = IP(ppt_tip_pgd, 0x400009);
	out = branches_and_perf("abrtpgdip", pk, n, code, sizeof(code), 0);
	cr_assert_not_null(strstr(out, "400007  ->           400009   tr end  tx abrt\n"), "%s",
			   out);
	cr_assert_eq(count_of(out, "\n"), 3, "%s", out);
	free(out);
}

/*
 * Issue 52, item 7f: a TIP.PGD with no IP that is the trace's last packet,
 * taken by an indirect jmp (jz taken, jnz not, jmp *%rax), call (call
 * *%rax) or ret (call 400010; ret): libipt's instruction decoder ends the
 * trace there without the disable; perf has it as "tr end" (its kind after
 * it: "tr end  call", "tr end  return") to 0, ptxed's block decoder as
 * [disabled]. The edge was missing.
 */
Test(pt, a_disable_that_ends_the_trace_after_an_indirect_branch_is_kept)
{
	struct pt_packet jmp[] = { P(ppt_psb),	  P(ppt_psbend),
				   MODE_EXEC64(), IP(ppt_tip_pge, 0x400000),
				   TNT(2, 0x2),	  P(ppt_tip_pgd) };
	struct pt_packet pge[] = { P(ppt_psb), P(ppt_psbend), MODE_EXEC64(),
				   IP(ppt_tip_pge, 0x400000), P(ppt_tip_pgd) };
	const size_t njmp = sizeof(jmp) / sizeof(jmp[0]), npge = sizeof(pge) / sizeof(pge[0]);
	__u8 tr[128];
	long lines;
	char *out;

	out = branches_and_perf("pgdjmp", jmp, njmp, code, sizeof(code), 0);
	cr_assert_not_null(strstr(out, "400009  ->                0   tr end\n"), "%s", out);
	free(out);
	out = branches_and_perf("pgdcall", pge, npge, call_rax_loop, sizeof(call_rax_loop), 0);
	cr_assert_not_null(strstr(out, "400000  ->                0   tr end  call\n"), "%s", out);
	free(out);
	out = branches_and_perf("pgdret", pge, npge, ret_code, sizeof(ret_code), 0);
	cr_assert_not_null(strstr(out, "400010  ->                0   tr end  return\n"), "%s",
			   out);
	free(out);
	/* --pt=insn: the jmp, then [disabled] as ptxed's block decoder has it. */
	out = decode_at(tr, enc(jmp, njmp, tr, sizeof(tr)), 0, RK_PT_INSN, &lines);
	cr_assert_not_null(strstr(out, "400009  jump       ff e0"), "%s", out);
	cr_assert_eq(count_of(out, "[disabled]"), 1, "%s", out);
	cr_assert_null(strstr(out, "[end of trace]"), "%s", out);
	free(out);
}

/*
 * Issue 52, item 7c: after a never-ending loop or an error, decoding goes
 * on at the first PSB after the last packet the flow took, as perf does,
 * not at the next PSB after what libipt had read ahead. 400000 jmp 400000
 * (the loop); 400002 jmp *%rax. The PSB+ after the TIP.PGE (FUP 400002)
 * is read ahead as status while the loop runs: perf resumes there, tr strt
 * 0 => 400002 and its jmp's tr end to 400100. Then an error: the jmp
 * *%rax at 400009 goes to 500000, not mapped; the PSB+ after it (FUP
 * 400000) resumes: tr strt, the jz, the jmp's tr end. Both segments were
 * lost (no later PSB than the decoder's position).
 */
static const __u8 self_loop[] = { 0xeb, 0xfe, 0xff, 0xe0, 0xcc };

Test(pt, decoding_goes_on_at_the_psb_after_a_loop_or_an_error)
{
	struct pt_packet loop[] = { P(ppt_psb),
				    P(ppt_psbend),
				    MODE_EXEC64(),
				    IP(ppt_tip_pge, 0x400000),
				    P(ppt_psb),
				    MODE_EXEC64(),
				    IP(ppt_fup, 0x400002),
				    P(ppt_psbend),
				    IP(ppt_tip_pgd, 0x400100),
				    P(ppt_psb),
				    P(ppt_psbend) };
	struct pt_packet err[] = { P(ppt_psb),
				   P(ppt_psbend),
				   MODE_EXEC64(),
				   IP(ppt_tip_pge, 0x400000),
				   TNT(2, 0x2),
				   IP(ppt_tip, 0x500000),
				   P(ppt_psb),
				   MODE_EXEC64(),
				   IP(ppt_fup, 0x400000),
				   P(ppt_psbend),
				   TNT(2, 0x2),
				   IP(ppt_tip_pgd, 0x400100),
				   P(ppt_psb),
				   P(ppt_psbend) };
	char *out;

	out = branches_and_perf("resumeloop", loop, sizeof(loop) / sizeof(loop[0]), self_loop,
				sizeof(self_loop), 0);
	cr_assert_eq(count_of(out, "error: Never-ending loop]"), 1, "%s", out);
	cr_assert_not_null(strstr(out, "     0  ->           400002   tr strt\n"), "%s", out);
	cr_assert_not_null(strstr(out, "400002  ->           400100   tr end\n"), "%s", out);
	free(out);
	out = branches_and_perf("resumeerr", err, sizeof(err) / sizeof(err[0]), code, sizeof(code),
				0);
	cr_assert_not_null(strstr(out, "400009  ->           500000   jmp\n"), "%s", out);
	cr_assert_not_null(strstr(out, "no memory mapped"), "%s", out);
	cr_assert_eq(count_of(out, "     0  ->           400000   tr strt\n"), 2, "%s", out);
	cr_assert_not_null(strstr(out, "400009  ->           400100   tr end\n"), "%s", out);
	free(out);
}
