// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Intel PT without PT hardware: the descriptor from a fake sysfs tree,
 * pt_config from the descriptor, and streams made with libipt's encoder,
 * written into a buffer's AUX ring through the writer the drain uses
 * (wrapping), then dumped and compared packet by packet.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bufile.h"
#include "pmu.h"
#include "pt.h"

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
	cr_assert_eq(rk_bufile__read_aux(ro, lin, 8192), 8192);
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
