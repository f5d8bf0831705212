// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* pt.c - Intel PT decoding: packets, instructions, branches (see pt.h). */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include "pt.h"
#include "symbols.h"
#include "util.h"

/* rk_pt_desc.filter into libipt's address filter configuration. Return: 0 or -EINVAL. */
/* A C-state as PWRE/PWRX carry it (the state - 1, mod 16) and as ptdump and ptxed print it. */
#define CSTATE(v) (((unsigned int)(v) + 1) & 0xf)

/* PWRX's wake reason as ptdump prints it: one of int, st, hw, or bad. */
static const char *pwrx_wake_reason(const struct pt_packet_pwrx *p)
{
	if (p->interrupt + p->store + p->autonomous != 1)
		return "bad";
	return p->interrupt ? "int" : p->store ? "st" : "hw";
}

static int filters(const struct rk_pt_desc *d, struct pt_config *cfg)
{
	char text[sizeof(d->filter) + 1], *save = NULL, *tok;
	int n = 0;

	memcpy(text, d->filter, sizeof(d->filter));
	text[sizeof(d->filter)] = '\0';
	for (tok = strtok_r(text, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		unsigned long long a, b;
		char kind[8];
		uint64_t *lo, *hi;
		int used = 0;

		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		if (n >= 4 || sscanf(tok, "%7s %llx-%llx %n", kind, &a, &b, &used) != 3 ||
		    tok[used] || a > b || (strcmp(kind, "filter") && strcmp(kind, "stop")))
			return -EINVAL;
		lo = n == 0 ? &cfg->addr_filter.addr0_a :
		     n == 1 ? &cfg->addr_filter.addr1_a :
		     n == 2 ? &cfg->addr_filter.addr2_a :
			      &cfg->addr_filter.addr3_a;
		hi = lo + 1; /* addrN_b follows addrN_a */
		*lo = a;
		*hi = b;
		/* IA32_RTIT_CTL.ADDRn_CFG: 1 filter, 2 stop. */
		switch (n) {
		case 0:
			cfg->addr_filter.config.ctl.addr0_cfg = kind[0] == 'f' ? 1 : 2;
			break;
		case 1:
			cfg->addr_filter.config.ctl.addr1_cfg = kind[0] == 'f' ? 1 : 2;
			break;
		case 2:
			cfg->addr_filter.config.ctl.addr2_cfg = kind[0] == 'f' ? 1 : 2;
			break;
		default:
			cfg->addr_filter.config.ctl.addr3_cfg = kind[0] == 'f' ? 1 : 2;
		}
		n++;
	}
	return 0;
}

int rk_pt_config(const void *desc, __u32 descsz, __u64 config, struct pt_config *cfg,
		 const char **why)
{
	struct rk_pt_desc d;
	long long mtc, mtc_period;
	int err;

	pt_config_init(cfg);
	if (!desc || !descsz) {
		*why = "no intel_pt descriptor in the buffer's pmu_info (pmu_descsz 0)";
		return -ENOENT;
	}
	if (descsz < 8) {
		*why = "intel_pt descriptor shorter than its own header";
		return -EINVAL;
	}
	memset(&d, 0, sizeof(d));
	memcpy(&d, desc, descsz < sizeof(d) ? descsz : sizeof(d));
	if (d.size != descsz || d.size < offsetof(struct rk_pt_desc, filter) ||
	    d.version != RK_PT_DESC_VERSION) {
		*why = "intel_pt descriptor of an unknown size or version";
		return -EINVAL;
	}
	if (d.cpu_vendor != RK_PT_VENDOR_INTEL) {
		*why = "the descriptor does not describe an Intel CPU";
		return -EINVAL;
	}
	cfg->cpu.vendor = pcv_intel;
	cfg->cpu.family = (uint16_t)d.cpu_family;
	cfg->cpu.model = (uint8_t)d.cpu_model;
	cfg->cpu.stepping = (uint8_t)d.cpu_stepping;
	err = pt_cpu_errata(&cfg->errata, &cfg->cpu);
	if (err < 0) {
		*why = "libipt does not know this CPU's errata";
		return -EINVAL;
	}
	if (filters(&d, cfg)) {
		*why = "the descriptor's address filter does not parse (want up to 4 \"filter|stop "
		       "A-B\" separated by ';')";
		return -EINVAL;
	}
	cfg->cpuid_0x15_eax = d.cpuid_0x15_eax;
	cfg->cpuid_0x15_ebx = d.cpuid_0x15_ebx;
	cfg->nom_freq = (uint8_t)d.max_nonturbo_ratio;
	mtc = rk_pt_config_field(&d, "mtc", config);
	mtc_period = rk_pt_config_field(&d, "mtc_period", config);
	if (mtc > 0) {
		/* MTC packets are timing only with the CTC/TSC ratio of CPUID 0x15. */
		if (!d.cpuid_0x15_eax || !d.cpuid_0x15_ebx) {
			*why = "the trace has MTC timing but the descriptor lacks CPUID 0x15 "
			       "(TSC/ART ratio)";
			return -EPROTO;
		}
		if (mtc_period < 0) {
			*why = "the trace has MTC but the descriptor has no mtc_period field";
			return -EPROTO;
		}
		cfg->mtc_freq = (uint8_t)mtc_period;
	}
	*why = NULL;
	return 0;
}

void rk_pt_packet_str(const struct pt_packet *p, char *s, size_t len)
{
	switch (p->type) {
	case ppt_psb:
		snprintf(s, len, "psb");
		break;
	case ppt_psbend:
		snprintf(s, len, "psbend");
		break;
	case ppt_pad:
		snprintf(s, len, "pad");
		break;
	case ppt_ovf:
		snprintf(s, len, "ovf");
		break;
	case ppt_stop:
		snprintf(s, len, "stop");
		break;
	case ppt_tsc:
		snprintf(s, len, "tsc %llx", (unsigned long long)p->payload.tsc.tsc);
		break;
	case ppt_cbr:
		snprintf(s, len, "cbr %x", p->payload.cbr.ratio);
		break;
	case ppt_mtc:
		snprintf(s, len, "mtc %x", p->payload.mtc.ctc);
		break;
	case ppt_cyc:
		snprintf(s, len, "cyc %llx", (unsigned long long)p->payload.cyc.value);
		break;
	case ppt_tnt_8:
	case ppt_tnt_64: {
		size_t n = 0, i;

		n += (size_t)snprintf(s, len, "tnt.%s ", p->type == ppt_tnt_8 ? "8" : "64");
		for (i = p->payload.tnt.bit_size; i > 0 && n + 1 < len; i--)
			s[n++] = (p->payload.tnt.payload >> (i - 1)) & 1 ? '!' : '.';
		s[n < len ? n : len - 1] = '\0';
		break;
	}
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
	case ppt_fup: {
		const char *n = p->type == ppt_tip     ? "tip" :
				p->type == ppt_tip_pge ? "tip.pge" :
				p->type == ppt_tip_pgd ? "tip.pgd" :
							 "fup";

		snprintf(s, len, "%s %d: %llx", n, p->payload.ip.ipc,
			 (unsigned long long)p->payload.ip.ip);
		break;
	}
	case ppt_mode:
		if (p->payload.mode.leaf == pt_mol_exec)
			snprintf(s, len, "mode.exec%s%s",
				 p->payload.mode.bits.exec.csl ? " cs.l" : "",
				 p->payload.mode.bits.exec.csd ? " cs.d" : "");
		else
			snprintf(s, len, "mode.tsx%s%s",
				 p->payload.mode.bits.tsx.intx ? " intx" : "",
				 p->payload.mode.bits.tsx.abrt ? " abrt" : "");
		break;
	case ppt_pip:
		snprintf(s, len, "pip %llx%s", (unsigned long long)p->payload.pip.cr3,
			 p->payload.pip.nr ? ", nr" : "");
		break;
	case ppt_tma:
		snprintf(s, len, "tma %x, %x", p->payload.tma.ctc, p->payload.tma.fc);
		break;
	case ppt_vmcs:
		snprintf(s, len, "vmcs %llx", (unsigned long long)p->payload.vmcs.base);
		break;
	case ppt_mnt:
		snprintf(s, len, "mnt %llx", (unsigned long long)p->payload.mnt.payload);
		break;
	case ppt_exstop:
		snprintf(s, len, "exstop%s", p->payload.exstop.ip ? " ip" : "");
		break;
	case ppt_mwait:
		snprintf(s, len, "mwait %x, %x", p->payload.mwait.hints, p->payload.mwait.ext);
		break;
	case ppt_pwre:
		/* The packets carry C-state - 1 (mod 16): ptdump prints the state. */
		snprintf(s, len, "pwre c%u.%u%s", CSTATE(p->payload.pwre.state),
			 CSTATE(p->payload.pwre.sub_state), p->payload.pwre.hw ? ", hw" : "");
		break;
	case ppt_pwrx:
		snprintf(s, len, "pwrx %s: c%u, c%u", pwrx_wake_reason(&p->payload.pwrx),
			 CSTATE(p->payload.pwrx.last), CSTATE(p->payload.pwrx.deepest));
		break;
	case ppt_ptw:
		snprintf(s, len, "ptw %u: %llx%s", p->payload.ptw.plc,
			 (unsigned long long)p->payload.ptw.payload,
			 p->payload.ptw.ip ? ", ip" : "");
		break;
	default:
		snprintf(s, len, "packet type %d", (int)p->type);
	}
}

long rk_pt_dump(FILE *out, const __u8 *buf, size_t len, __u64 base, struct pt_config *cfg)
{
	struct pt_packet_decoder *dec;
	struct pt_packet pkt;
	long n = 0;
	int err;

	cfg->begin = (uint8_t *)buf;
	cfg->end = (uint8_t *)buf + len;
	dec = pt_pkt_alloc_decoder(cfg);
	if (!dec)
		return -pte_nomem;
	err = pt_pkt_sync_forward(dec);
	if (err < 0) {
		pt_pkt_free_decoder(dec);
		return err;
	}
	for (;;) {
		uint64_t off;
		char s[128];

		if (pt_pkt_get_offset(dec, &off) < 0)
			break;
		err = pt_pkt_next(dec, &pkt, sizeof(pkt));
		if (err == -pte_eos)
			break;
		if (err < 0) {
			fprintf(out, "%016llx  [error: %s]\n", (unsigned long long)(base + off),
				pt_errstr(pt_errcode(err)));
			/* Resynchronize at the next PSB, as ptdump does. */
			if (pt_pkt_sync_forward(dec) < 0)
				break;
			continue;
		}
		rk_pt_packet_str(&pkt, s, sizeof(s));
		fprintf(out, "%016llx  %s\n", (unsigned long long)(base + off), s);
		n++;
	}
	pt_pkt_free_decoder(dec);
	return n;
}

struct image_ctx {
	struct pt_image *img;
	int added;
};

static int add_map(void *ctx, const char *path, __u64 start, __u64 len, __u64 pgoff)
{
	struct image_ctx *c = ctx;
	int err;

	if (path[0] != '/')
		return 0; /* [vdso]: not a file (a core has it in its memory) */
	err = pt_image_add_file(c->img, path, pgoff, len, NULL, start);
	if (err < 0)
		rk_info("PT image: %s at %#llx: %s", path, (unsigned long long)start,
			pt_errstr(pt_errcode(err)));
	else
		c->added++;
	return 0;
}

int rk_pt_image_add_maps(struct pt_image *img, const struct rk_symbols *s)
{
	struct image_ctx c = { .img = img };

	rk_symbols_for_each_map(s, add_map, &c);
	return c.added;
}

int rk_pt_image_add_core(struct pt_image *img, const char *core, const char **why)
{
	GElf_Ehdr eh;
	size_t i, n;
	Elf *e;
	int fd, added = 0, err;

	*why = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		*why = "libelf does not work";
		return -EINVAL;
	}
	fd = open(core, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		*why = strerror(errno);
		return err;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || !gelf_getehdr(e, &eh) || eh.e_type != ET_CORE || elf_getphdrnum(e, &n)) {
		*why = "not an ELF core dump";
		err = -EINVAL;
		goto out;
	}
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (pt_image_add_file(img, core, ph.p_offset, ph.p_filesz, NULL, ph.p_vaddr) >= 0)
			added++;
	}
	err = added;
	if (!added)
		*why = "the core dump has no memory contents (PT_LOAD with data)";
out:
	if (e)
		elf_end(e);
	close(fd);
	return err;
}

static const char *iclass_name(enum pt_insn_class c)
{
	switch (c) {
	case ptic_other:
		return "other";
	case ptic_call:
		return "call";
	case ptic_return:
		return "return";
	case ptic_jump:
		return "jump";
	case ptic_cond_jump:
		return "jcc";
	case ptic_far_call:
		return "far-call";
	case ptic_far_return:
		return "far-return";
	case ptic_far_jump:
		return "far-jump";
	case ptic_ptwrite:
		return "ptwrite";
	default:
		return "error";
	}
}

/*
 * An event as ptxed prints it (without brackets), into @s; 0 if it is not
 * printed: status updates (what every PSB+ repeats), timing-only events.
 */
static int event_str(const struct pt_event *ev, char *s, size_t len)
{
	if (ev->status_update)
		return 0;
	switch (ev->type) {
	case ptev_enabled:
		snprintf(s, len, "%s", ev->variant.enabled.resumed ? "resumed" : "enabled");
		break;
	case ptev_disabled:
		snprintf(s, len, "disabled");
		break;
	case ptev_async_disabled:
		snprintf(s, len, "async disabled");
		break;
	case ptev_async_branch:
		snprintf(s, len, "interrupt");
		break;
	case ptev_paging:
		snprintf(s, len, "paging, cr3: %016llx%s",
			 (unsigned long long)ev->variant.paging.cr3,
			 ev->variant.paging.non_root ? ", nr" : "");
		break;
	case ptev_async_paging:
		snprintf(s, len, "paging, cr3: %016llx%s",
			 (unsigned long long)ev->variant.async_paging.cr3,
			 ev->variant.async_paging.non_root ? ", nr" : "");
		break;
	case ptev_overflow:
		snprintf(s, len, "overflow");
		break;
	case ptev_exec_mode:
		snprintf(s, len, "exec mode: %s",
			 ev->variant.exec_mode.mode == ptem_64bit ? "64-bit" :
			 ev->variant.exec_mode.mode == ptem_32bit ? "32-bit" :
			 ev->variant.exec_mode.mode == ptem_16bit ? "16-bit" :
								    "unknown");
		break;
	case ptev_tsx:
		snprintf(s, len, "%s",
			 ev->variant.tsx.aborted     ? "aborted" :
			 ev->variant.tsx.speculative ? "begin transaction" :
						       "committed");
		break;
	case ptev_stop:
		snprintf(s, len, "stopped");
		break;
	case ptev_vmcs:
		snprintf(s, len, "vmcs, base: %016llx", (unsigned long long)ev->variant.vmcs.base);
		break;
	case ptev_async_vmcs:
		snprintf(s, len, "vmcs, base: %016llx",
			 (unsigned long long)ev->variant.async_vmcs.base);
		break;
	case ptev_exstop:
		snprintf(s, len, "exstop");
		break;
	case ptev_mwait:
		snprintf(s, len, "mwait %x %x", ev->variant.mwait.hints, ev->variant.mwait.ext);
		break;
	case ptev_pwre:
		snprintf(s, len, "pwre c%u.%u%s", CSTATE(ev->variant.pwre.state),
			 CSTATE(ev->variant.pwre.sub_state), ev->variant.pwre.hw ? " hw" : "");
		break;
	case ptev_pwrx:
		/* As ptxed: each wake reason, then the last (deepest) C-state. */
		snprintf(s, len, "pwrx %s%s%sc%u (c%u)", ev->variant.pwrx.interrupt ? "int: " : "",
			 ev->variant.pwrx.store ? "st: " : "",
			 ev->variant.pwrx.autonomous ? "hw: " : "", CSTATE(ev->variant.pwrx.last),
			 CSTATE(ev->variant.pwrx.deepest));
		break;
	case ptev_ptwrite:
		snprintf(s, len, "ptwrite: %llx", (unsigned long long)ev->variant.ptwrite.payload);
		break;
	case ptev_mnt:
		snprintf(s, len, "mnt: %llx", (unsigned long long)ev->variant.mnt.payload);
		break;
	case ptev_tick:
	case ptev_cbr:
	default:
		return 0; /* timing */
	}
	return 1;
}

/* Symbol of @ip through the sideband's files ("" if none). */
static void sym_of(struct rk_symbols *syms, __u64 ip, char *s, size_t len)
{
	const char *dso;

	s[0] = '\0';
	if (syms && rk_symbols_resolve(syms, ip, s, len, &dso))
		s[0] = '\0';
}

/* @ip of an IP packet, decompressed against the last one (@last). */
static __u64 packet_ip(const struct pt_packet_ip *p, __u64 last)
{
	switch (p->ipc) {
	case pt_ipc_update_16:
		return (last & ~0xffffull) | (p->ip & 0xffff);
	case pt_ipc_update_32:
		return (last & ~0xffffffffull) | (p->ip & 0xffffffff);
	case pt_ipc_update_48:
		return (last & ~0xffffffffffffull) | (p->ip & 0xffffffffffff);
	case pt_ipc_sext_48:
		return (__u64)((__s64)(p->ip << 16) >> 16);
	case pt_ipc_full:
		return p->ip;
	default:
		return last;
	}
}

/*
 * The packets libipt's decoder has read, followed once by a packet decoder
 * of our own from the PSB it synchronized at (an overflow used to read
 * them again from there: the decode was quadratic in the overflows between
 * two PSBs). What it keeps: what was taken last before the last OVF (a TNT
 * bit or a TIP's target), for the branch an overflow interrupted; and the
 * first PSB after the last packet of the flow, where decoding goes on after
 * an error (libipt reads the PSB+s that follow ahead, as status).
 */
struct trail {
	struct pt_packet_decoder *pd; /* NULL until first needed */
	int started;
	uint64_t sync; /* the PSB it follows from */
	uint64_t off; /* read up to here */
	__u64 last_ip; /* for compressed IPs */
	int in_psb; /* between a PSB and its PSBEND: status, not the flow */
	int tnt; /* taken last: 1 a TNT bit (@taken), 0 a TIP (@tip), -1 neither */
	int taken;
	__u64 tip;
	int ovf; /* an OVF was read: @ovf_* are what was taken last before it */
	int ovf_tnt, ovf_taken;
	__u64 ovf_tip;
	uint64_t resume; /* the first PSB after the flow's last packet; 0: none */
	enum pt_packet_type flow; /* the flow's last packet (ppt_invalid: none) */
	int flow_suppressed; /* it had no IP */
	__u64 flow_ip; /* its IP */
	unsigned long long packets; /* read, for rk_pt_insn_work() */
};

/* The state of @t at its PSB @sync, nothing read. */
static void trail_reset(struct trail *t, uint64_t sync)
{
	t->started = 1;
	t->sync = sync;
	t->off = sync;
	t->last_ip = 0;
	t->in_psb = 0;
	t->tnt = -1;
	t->ovf = 0;
	t->resume = 0;
	t->flow = ppt_invalid;
}

/* @p, read at @at, into @t. */
static void trail_take(struct trail *t, const struct pt_packet *p, uint64_t at)
{
	switch (p->type) {
	case ppt_psb:
		t->last_ip = 0;
		t->in_psb = 1;
		if (at > t->sync && !t->resume)
			t->resume = at;
		return;
	case ppt_psbend:
		t->in_psb = 0;
		return;
	case ppt_pad:
	case ppt_tsc:
	case ppt_cbr:
	case ppt_tma:
	case ppt_mtc:
	case ppt_cyc:
	case ppt_mnt:
		return; /* timing: not the flow */
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
	case ppt_fup:
		t->last_ip = packet_ip(&p->payload.ip, t->last_ip);
		break;
	default:
		break;
	}
	if (t->in_psb)
		return; /* the state a PSB+ repeats */
	t->resume = 0;
	t->flow = p->type;
	t->flow_ip = t->last_ip;
	t->flow_suppressed = (p->type == ppt_tip || p->type == ppt_tip_pge ||
			      p->type == ppt_tip_pgd || p->type == ppt_fup) &&
			     p->payload.ip.ipc == pt_ipc_suppressed;
	switch (p->type) {
	case ppt_tnt_8:
	case ppt_tnt_64:
		/* The newest bit is the lowest. */
		t->tnt = 1;
		t->taken = p->payload.tnt.bit_size && (p->payload.tnt.payload & 1);
		break;
	case ppt_tip:
		t->tnt = 0;
		t->tip = t->last_ip;
		break;
	case ppt_ovf:
		t->ovf = 1;
		t->ovf_tnt = t->tnt;
		t->ovf_taken = t->taken;
		t->ovf_tip = t->tip;
		t->tnt = -1;
		break;
	default:
		break;
	}
}

/*
 * Follow the decoder up to @end (a packet offset it reached), from where
 * @t stopped if the decoder is still in the same PSB segment, else from
 * the PSB it synchronized at. Return: 0, -ENOENT (the decoder has no sync
 * point), -ENOMEM.
 */
static int trail_follow(struct trail *t, struct pt_insn_decoder *dec, const struct pt_config *cfg,
			uint64_t end)
{
	uint64_t sync = 0;

	if (pt_insn_get_sync_offset(dec, &sync) < 0)
		return -ENOENT;
	if (!t->pd) {
		t->pd = pt_pkt_alloc_decoder(cfg);
		if (!t->pd)
			return -ENOMEM;
	}
	if (!t->started || sync != t->sync || end < t->off) {
		trail_reset(t, sync);
		if (pt_pkt_sync_set(t->pd, sync) < 0)
			return -ENOENT;
	}
	while (t->off < end) {
		struct pt_packet p;
		uint64_t at = t->off;

		if (pt_pkt_next(t->pd, &p, sizeof(p)) < 0 || pt_pkt_get_offset(t->pd, &t->off) < 0)
			break; /* libipt's decoder meets the same error */
		t->packets++;
		trail_take(t, &p, at);
	}
	return 0;
}

#define RK_PT_RETS 64

/* A decoding in progress. */
struct insn_walk {
	FILE *out;
	struct rk_symbols *syms;
	int mode;
	__u64 base; /* ring position of the buffer's first byte */
	long lines;
	struct pt_insn_decoder *dec;
	struct pt_config trail_cfg; /* the trace, for @trail's packet decoder */
	struct trail trail;
	/*
	 * RK_PT_BRANCHES: the last branch (an instruction, an abort, a trace
	 * start), waiting for where it went; its kind as perf script's flags
	 * name it, and its bytes (a direct branch's target is in them)
	 */
	int pending;
	__u64 from, from_size;
	enum pt_insn_class from_class;
	__u8 raw[16];
	const char *flag;
	int in_tx; /* it ran in a transaction: perf's "(x)" */
	/*
	 * perf's return stack, to know where a compressed return went when an
	 * overflow comes before its target runs: each call pushes where it
	 * returns to (a call to the next instruction, to read the ip, does
	 * not), each return pops; as deep as the CPU's (and libipt's) 64.
	 */
	__u64 rets[RK_PT_RETS];
	unsigned int ret_top, ret_n;
	__u64 ret_to; /* the pending return's target by the stack; 0: unknown */
};

static void ret_push(struct insn_walk *w, __u64 to)
{
	w->rets[w->ret_top] = to;
	w->ret_top = (w->ret_top + 1) % RK_PT_RETS;
	if (w->ret_n < RK_PT_RETS)
		w->ret_n++;
}

static __u64 ret_pop(struct insn_walk *w)
{
	if (!w->ret_n)
		return 0;
	w->ret_n--;
	w->ret_top = (w->ret_top + RK_PT_RETS - 1) % RK_PT_RETS;
	return w->rets[w->ret_top];
}

/* The opcode of @raw (@size bytes) past its prefixes (legacy, REX); @op: its index. */
static int opcode_at(const __u8 *raw, unsigned int size, unsigned int *op)
{
	unsigned int i;

	for (i = 0; i < size; i++) {
		__u8 b = raw[i];

		if (b == 0x66 || b == 0x67 || b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e ||
		    b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65 ||
		    (b & 0xf0) == 0x40)
			continue;
		*op = i;
		return b;
	}
	return -1;
}

/*
 * perf script's flags word of a branch instruction, as perf's instruction
 * decoder classes it: a far transfer by what it is (sysenter is perf's
 * "syscall", sysexit its "sysret"; int, int3, into are "int").
 */
static const char *branch_flag(const struct pt_insn *insn)
{
	unsigned int op = 0;
	int b = opcode_at(insn->raw, insn->size, &op);
	int b2 = b == 0x0f && op + 1 < insn->size ? insn->raw[op + 1] : -1;

	if (b2 == 0x05 || b2 == 0x34)
		return "syscall";
	if (b2 == 0x07 || b2 == 0x35)
		return "sysret";
	if (b2 == 0x01 && op + 2 < insn->size &&
	    (insn->raw[op + 2] == 0xc2 || insn->raw[op + 2] == 0xc3))
		return "vmentry"; /* vmlaunch, vmresume */
	if (b == 0xcf)
		return "iret";
	if (b == 0xcc || b == 0xcd || b == 0xce)
		return "int";
	switch (insn->iclass) {
	case ptic_call:
	case ptic_far_call:
		return "call";
	case ptic_return:
	case ptic_far_return:
		return "return";
	case ptic_cond_jump:
		return "jcc";
	default:
		return "jmp";
	}
}

/*
 * The target of a direct branch (jcc, jmp, call, loop, jrcxz with a
 * relative displacement) at @ip of @size bytes. Return: 0, or -ENOENT if it
 * is not one (its target is in the trace, not in its bytes).
 */
static int direct_target(const __u8 *raw, unsigned int size, __u64 ip, __u64 *to)
{
	unsigned int op = 0;
	int b = opcode_at(raw, size, &op);
	__s32 rel;

	if ((b >= 0x70 && b <= 0x7f) || (b >= 0xe0 && b <= 0xe3) || b == 0xeb) {
		rel = (__s8)raw[size - 1];
	} else if (b == 0xe8 || b == 0xe9 ||
		   (b == 0x0f && op + 1 < size && (raw[op + 1] & 0xf0) == 0x80)) {
		if (size < 4)
			return -ENOENT;
		memcpy(&rel, raw + size - 4, 4);
	} else {
		return -ENOENT;
	}
	*to = ip + size + (__s64)rel;
	return 0;
}

/* One branch @from -> @to (0: not traced, perf's "tr end" / "tr strt"), with its @flag. */
static void branch_edge(struct insn_walk *w, __u64 from, __u64 to, const char *flag, int in_tx)
{
	char s[256], t[256];

	sym_of(w->syms, from, s, sizeof(s));
	sym_of(w->syms, to, t, sizeof(t));
	fprintf(w->out, "%16llx %s -> %16llx %s  %s%s\n", (unsigned long long)from, s,
		(unsigned long long)to, t, flag, in_tx ? " (x)" : "");
	w->lines++;
}

/* The pending branch, ended by @to; @flag overrides its own (NULL: keep). */
static void branch_out(struct insn_walk *w, __u64 to, const char *flag)
{
	w->pending = 0;
	/* A conditional branch that fell through was not taken: not a branch taken. */
	if (!flag && w->from_class == ptic_cond_jump && to == w->from + w->from_size)
		return;
	branch_edge(w, w->from, to, flag ? flag : w->flag, w->in_tx);
}

/* A branch from @from whose target is the next instruction (an event's edge). */
static void branch_pend(struct insn_walk *w, __u64 from, const char *flag)
{
	w->pending = 1;
	w->from = from;
	w->from_size = 0;
	w->from_class = ptic_other;
	w->flag = flag;
	w->in_tx = 0;
}

/*
 * The pending branch at an overflow: the decoder took its TNT bit or TIP
 * and the overflow came before its target ran, so where it went is in its
 * bytes (a direct branch, taken) or in the TIP it took, as perf has it;
 * never where tracing resumes.
 */
static void branch_at_overflow(struct insn_walk *w)
{
	const struct trail *t = &w->trail;
	uint64_t end = 0;
	__u64 to;

	w->pending = 0;
	if (w->from_class == ptic_other || pt_insn_get_offset(w->dec, &end) < 0 ||
	    trail_follow(&w->trail, w->dec, &w->trail_cfg, end) || !t->ovf)
		return;
	if (w->from_class == ptic_cond_jump) {
		if (t->ovf_tnt == 1 && t->ovf_taken &&
		    !direct_target(w->raw, (unsigned int)w->from_size, w->from, &to))
			branch_edge(w, w->from, to, w->flag, w->in_tx);
		return;
	}
	if (!direct_target(w->raw, (unsigned int)w->from_size, w->from, &to))
		branch_edge(w, w->from, to, w->flag, w->in_tx);
	else if (t->ovf_tnt == 0)
		branch_edge(w, w->from, t->ovf_tip, w->flag, w->in_tx);
	else if (t->ovf_tnt == 1 && t->ovf_taken && w->from_class == ptic_return && w->ret_to)
		branch_edge(w, w->from, w->ret_to, w->flag, w->in_tx); /* a compressed return */
}

/* perf's word for tracing stopped under the pending branch: "tr end", with its kind but a jmp's. */
static void branch_end(struct insn_walk *w, __u64 to)
{
	char flag[32];

	if (w->from_class == ptic_other || !strcmp(w->flag, "jmp"))
		snprintf(flag, sizeof(flag), "tr end");
	else
		snprintf(flag, sizeof(flag), "tr end  %s", w->flag);
	w->pending = 0;
	branch_edge(w, w->from, to, flag, w->in_tx);
}

/*
 * The edges perf's decoder makes of an event (perf script --itrace=b): a
 * trace start, or a restart after an overflow, is a branch from 0 to where
 * it starts; tracing disabled by a branch ends that branch at its target
 * if the TIP.PGD has one, else at 0; an asynchronous disable ends the
 * pending branch where it struck, then goes to 0; an interrupt ends the
 * pending branch where it struck, then is itself a branch to its target
 * ("hw int"); a transaction abort is one branch from where it struck to
 * the abort handler ("tx abrt").
 */
static void branch_event(struct insn_walk *w, const struct pt_event *ev)
{
	switch (ev->type) {
	case ptev_enabled:
		if (!ev->ip_suppressed)
			branch_pend(w, 0, "tr strt");
		break;
	case ptev_disabled:
		if (w->pending)
			branch_end(w, ev->ip_suppressed ? 0 : ev->variant.disabled.ip);
		break;
	case ptev_async_disabled: {
		/* ip_suppressed is about where it would go: @at is where it struck. */
		__u64 at = ev->variant.async_disabled.at;
		__u64 to = ev->ip_suppressed ? 0 : ev->variant.async_disabled.ip;

		/* A transaction aborted into the disable: one edge, no self-edge first. */
		if (w->pending && w->from_class == ptic_other && !strcmp(w->flag, "tx abrt") &&
		    w->from == at) {
			w->pending = 0;
			branch_edge(w, at, to, "tr end  tx abrt", 0);
			break;
		}
		if (w->pending)
			branch_out(w, at, NULL);
		/* Where it went known: an interrupt into code not traced, as perf names it. */
		branch_edge(w, at, to, ev->ip_suppressed ? "tr end async" : "tr end  hw int", 0);
		break;
	}
	case ptev_async_branch:
		/* An abort's FUP and TIP come as this event after the abort's own. */
		if (w->pending && w->from_class == ptic_other && !strcmp(w->flag, "tx abrt") &&
		    w->from == ev->variant.async_branch.from) {
			branch_out(w, ev->variant.async_branch.to, NULL);
			break;
		}
		if (w->pending)
			branch_out(w, ev->variant.async_branch.from, NULL);
		branch_edge(w, ev->variant.async_branch.from, ev->variant.async_branch.to, "hw int",
			    0);
		break;
	case ptev_tsx:
		if (!ev->variant.tsx.aborted || ev->ip_suppressed)
			break;
		if (w->pending)
			branch_out(w, ev->variant.tsx.ip, NULL);
		branch_pend(w, ev->variant.tsx.ip, "tx abrt");
		break;
	case ptev_overflow:
		if (w->pending)
			branch_at_overflow(w);
		if (!ev->ip_suppressed)
			branch_edge(w, 0, ev->variant.overflow.ip, "tr strt", 0);
		break;
	default:
		break;
	}
}

/* Print the pending events (ptxed's drain_events_insn()). */
static int drain_events(struct insn_walk *w, struct pt_insn_decoder *dec, int status)
{
	while (status & pts_event_pending) {
		struct pt_event ev;
		char s[128];

		status = pt_insn_event(dec, &ev, sizeof(ev));
		if (status < 0)
			return status;
		if (w->mode == RK_PT_BRANCHES) {
			if (!ev.status_update)
				branch_event(w, &ev);
			continue;
		}
		if (!event_str(&ev, s, sizeof(s)))
			continue;
		fprintf(w->out, "[%s]\n", s);
		w->lines++;
	}
	return status;
}

static void print_insn(struct insn_walk *w, const struct pt_insn *insn)
{
	char s[256], raw[3 * 15 + 1];
	unsigned int i;

	if (w->mode == RK_PT_BRANCHES) {
		if (w->pending)
			branch_out(w, insn->ip, NULL);
		if (insn->iclass != ptic_other && insn->iclass != ptic_ptwrite &&
		    insn->iclass != ptic_error) {
			w->from = insn->ip;
			w->from_size = insn->size;
			w->from_class = insn->iclass;
			memcpy(w->raw, insn->raw, sizeof(insn->raw));
			w->flag = branch_flag(insn);
			w->in_tx = insn->speculative;
			w->pending = 1;
		}
		if (insn->iclass == ptic_call) {
			__u64 to;

			if (direct_target(insn->raw, insn->size, insn->ip, &to) ||
			    to != insn->ip + insn->size)
				ret_push(w, insn->ip + insn->size);
		} else if (insn->iclass == ptic_return) {
			w->ret_to = ret_pop(w);
		}
		return;
	}
	for (i = 0; i < insn->size && i < 15; i++)
		snprintf(raw + 3 * i, 4, "%02x ", insn->raw[i]);
	raw[3 * i] = '\0';
	sym_of(w->syms, insn->ip, s, sizeof(s));
	/* "? ": executed speculatively (in a transaction), as ptxed marks it. */
	fprintf(w->out, "%s%16llx  %-10s %-24s %s\n", insn->speculative ? "? " : "",
		(unsigned long long)insn->ip, iclass_name(insn->iclass), raw, s);
	w->lines++;
}

/*
 * libipt's instruction decoder ends the trace at an indirect branch (jmp,
 * call, ret) whose TIP.PGD is the trace's last packet without reporting
 * the disable; its block decoder does ([disabled], as ptxed prints it), and
 * perf (tr end). The trace's last packet of the flow, read after @insn
 * ended it, says so. Return: 1 if it was printed so.
 */
static int disabled_at_the_end(struct insn_walk *w, const struct pt_insn *insn, size_t len)
{
	const struct trail *t = &w->trail;
	__u64 to;

	if (insn->iclass == ptic_other || insn->iclass == ptic_cond_jump ||
	    insn->iclass == ptic_ptwrite || insn->iclass == ptic_error ||
	    !direct_target(insn->raw, insn->size, insn->ip, &to) ||
	    trail_follow(&w->trail, w->dec, &w->trail_cfg, len) || t->flow != ppt_tip_pgd)
		return 0;
	if (w->mode == RK_PT_INSN) {
		fprintf(w->out, "[disabled]\n");
		w->lines++;
	} else if (w->pending) {
		branch_end(w, t->flow_suppressed ? 0 : t->flow_ip);
	}
	return 1;
}

/* "[offset, ip: what: error]", offsets in the ring's coordinates as rk_pt_dump's. */
static void diagnose(struct insn_walk *w, struct pt_insn_decoder *dec, __u64 ip, const char *what,
		     int err)
{
	uint64_t off = 0;

	pt_insn_get_offset(dec, &off);
	fprintf(w->out, "[%016llx, %llx: %s: %s]\n", (unsigned long long)(w->base + off),
		(unsigned long long)ip, what, pt_errstr(pt_errcode(err)));
	w->lines++;
}

/*
 * After an error of the flow (@err: no image, a packet that does not fit
 * the instruction; 0: a never-ending loop), go on at the first PSB after the
 * last packet the flow took, as perf does: libipt has read the PSB+s that
 * followed it ahead (as status), and its own next PSB is past them. After
 * a packet that does not decode, at the next PSB past it (an earlier one
 * would read it again). Return: pt_insn_sync_set()'s or
 * pt_insn_sync_forward()'s.
 */
static int resync(struct insn_walk *w, int err)
{
	uint64_t end = 0;

	if (err != -pte_bad_opc && err != -pte_bad_packet && err != -pte_bad_context &&
	    !pt_insn_get_offset(w->dec, &end) &&
	    !trail_follow(&w->trail, w->dec, &w->trail_cfg, end) && w->trail.resume)
		return pt_insn_sync_set(w->dec, w->trail.resume);
	return pt_insn_sync_forward(w->dec);
}

/*
 * A decode that consumes no trace cannot tell a loop that ran from one it
 * made up (a decode gone astray, or code that is an endless loop): it
 * would print forever. Trace is consumed where the decoder's packet
 * position moves (a TIP, a TNT packet, an event), and by a conditional
 * branch or a return even where it does not (they take a bit of a TNT
 * packet read before). As perf's decoder does, a run of direct jumps and
 * calls that consumes none is a never-ending loop once it comes back to an
 * instruction it passed (checked at doubling distances), or once it is
 * longer than RK_PT_MAX_LOOPS (perf's INTEL_PT_MAX_LOOPS as perf 5.x had
 * it; no real code runs that many direct branches without one that is
 * traced). Other instructions in the run (nop, add, cmp) neither end nor
 * lengthen it: a loop of them and a jmp back consumes no trace either.
 */
#define RK_PT_MAX_LOOPS 10000

struct loop_check {
	uint64_t off; /* the decoder's packet position at the last instruction */
	__u64 mark; /* an ip of the run, moved at doubling distances */
	unsigned long n, period, left;
};

/* Return: 1 if @insn, decoded with the decoder at packet position @off, closes a never-ending loop. */
static int loop_check(struct loop_check *lc, const struct pt_insn *insn, uint64_t off)
{
	int moved = off != lc->off;

	lc->off = off;
	if (moved || insn->iclass == ptic_cond_jump || insn->iclass == ptic_return ||
	    insn->iclass == ptic_far_return || insn->iclass == ptic_far_call ||
	    insn->iclass == ptic_far_jump) {
		lc->n = 0; /* it consumed trace */
		return 0;
	}
	if (insn->iclass != ptic_jump && insn->iclass != ptic_call)
		return 0;
	if (!lc->n++) {
		lc->mark = insn->ip;
		lc->period = lc->left = 1;
		return 0;
	}
	if (insn->ip == lc->mark || lc->n > RK_PT_MAX_LOOPS)
		return 1;
	if (!--lc->left) {
		lc->period *= 2;
		lc->left = lc->period;
		lc->mark = insn->ip;
	}
	return 0;
}

long rk_pt_insn(FILE *out, const __u8 *buf, size_t len, __u64 base, struct pt_config *cfg,
		struct pt_image *img, struct rk_symbols *syms, int mode)
{
	return rk_pt_insn_work(out, buf, len, base, cfg, img, syms, mode, NULL);
}

long rk_pt_insn_work(FILE *out, const __u8 *buf, size_t len, __u64 base, struct pt_config *cfg,
		     struct pt_image *img, struct rk_symbols *syms, int mode,
		     unsigned long long *reread)
{
	struct insn_walk w = { .out = out, .syms = syms, .mode = mode, .base = base };
	struct pt_insn_decoder *dec;
	struct loop_check lc;
	uint64_t last_sync = 0;
	int status, synced = 0, looped = 0, failed = 0, fail_err = 0, resumed;

	cfg->begin = (uint8_t *)buf;
	cfg->end = (uint8_t *)buf + len;
	w.trail_cfg = *cfg;
	dec = pt_insn_alloc_decoder(cfg);
	if (!dec)
		return -pte_nomem;
	w.dec = dec;
	if (pt_insn_set_image(dec, img) < 0) {
		pt_insn_free_decoder(dec);
		return -pte_internal;
	}
	for (;;) {
		struct pt_insn insn;
		uint64_t off = 0;

		resumed = failed;
		status = failed ? resync(&w, fail_err) : pt_insn_sync_forward(dec);
		failed = 0;
		if (status < 0) {
			uint64_t sync = 0;

			if (status == -pte_eos)
				break;
			/* A PSB+ that does not decode: say so, try the next one. */
			diagnose(&w, dec, 0, "sync error", status);
			if (pt_insn_get_sync_offset(dec, &sync) < 0 ||
			    (synced && sync <= last_sync))
				break;
			last_sync = sync;
			synced = 1;
			continue;
		}
		synced = 1;
		{
			uint64_t sync = 0;

			/* After a never-ending loop, only a later PSB goes on. */
			pt_insn_get_sync_offset(dec, &sync);
			if (looped && sync <= last_sync)
				break;
			looped = 0;
			last_sync = sync;
		}
		w.pending = 0;
		w.ret_n = 0; /* as libipt's and perf's at a synchronization */
		/*
		 * Going on after an error where tracing is on (a PSB+ with a FUP):
		 * perf's trace start (not at the first PSB, nor after a PSB+ that
		 * did not decode, where perf has none).
		 */
		if (mode == RK_PT_BRANCHES && resumed && !(status & pts_ip_suppressed))
			branch_pend(&w, 0, "tr strt");
		memset(&insn, 0, sizeof(insn));
		memset(&lc, 0, sizeof(lc));
		for (;;) {
			status = drain_events(&w, dec, status);
			if (status < 0)
				break;
			/*
			 * The trace ends here (the AUX head): not an error. ptxed
			 * stops; perf's branches go on while no trace is needed
			 * (the last branch's target, direct jumps after it).
			 */
			if (status & pts_eos &&
			    (mode == RK_PT_INSN || status & pts_ip_suppressed)) {
				if (!(status & pts_ip_suppressed) && mode == RK_PT_INSN) {
					fprintf(out, "[end of trace]\n");
					w.lines++;
				}
				status = -pte_eos;
				break;
			}
			status = pt_insn_next(dec, &insn, sizeof(insn));
			/* The instruction comes with the error or end that follows it. */
			if (insn.iclass != ptic_error)
				print_insn(&w, &insn);
			else if (w.pending && insn.ip)
				branch_out(&w, insn.ip, NULL); /* perf's edge to where it failed */
			if (status == -pte_eos && disabled_at_the_end(&w, &insn, len))
				break;
			if (status < 0)
				break;
			/* A branch under which tracing stopped with no TIP.PGD target. */
			if (w.pending && status & pts_ip_suppressed && w.from_class != ptic_other)
				branch_end(&w, 0);
			pt_insn_get_offset(dec, &off);
			if (loop_check(&lc, &insn, off)) {
				/* perf's words; decoding goes on as after an error. */
				fprintf(out, "[%016llx, %llx: error: Never-ending loop]\n",
					(unsigned long long)(w.base + off),
					(unsigned long long)insn.ip);
				w.lines++;
				looped = 1;
				break;
			}
		}
		if (status == -pte_eos)
			break;
		failed = 1;
		fail_err = looped ? 0 : status;
		if (looped)
			continue;
		diagnose(&w, dec, insn.ip, "error", status);
	}
	pt_insn_free_decoder(dec);
	if (w.trail.pd)
		pt_pkt_free_decoder(w.trail.pd);
	if (reread)
		*reread = w.trail.packets;
	return w.lines;
}
