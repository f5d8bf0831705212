/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pt.h - Intel PT decoding: the libipt configuration built from a buffer's
 * descriptor (ptdesc.h), and its AUX area as packets (like ptdump),
 * instructions (like ptxed) or branches (like perf script --itrace=b), so a
 * trace decodes from the buffer file alone.
 */
#ifndef RK_PT_H
#define RK_PT_H

#include <linux/types.h>
#include <stdio.h>
#include <intel-pt.h>
#include "ringkeeper.h"
#include "ptdesc.h"

/**
 * rk_pt_config() - libipt's pt_config for a trace of @config, from @d.
 * @desc, @descsz: the descriptor as the buffer holds it (may be absent).
 * @why: on failure, what is wrong with the descriptor, for people.
 * Return: 0; -ENOENT (no descriptor), -EINVAL (wrong size/version/vendor),
 * -EPROTO (the trace's timing needs what the descriptor lacks).
 */
int rk_pt_config(const void *desc, __u32 descsz, __u64 config, struct pt_config *cfg,
		 const char **why);

/**
 * rk_pt_dump() - print the packets of @buf like ptdump: offset, packet.
 * Decoding starts at the first PSB (bytes before it cannot be synchronized).
 * @base: offset added to printed positions (the ring position of @buf).
 * Return: packets printed, or a negative libipt error (pte_*).
 */
long rk_pt_dump(FILE *out, const __u8 *buf, size_t len, __u64 base, struct pt_config *cfg);

struct rk_symbols;

/**
 * rk_pt_image_add_maps() - add the file mappings of @s (a process's
 * sideband) to @img, each file read from disk at its mapped offset.
 * Return: files added (a missing file is skipped and reported on stderr).
 */
int rk_pt_image_add_maps(struct pt_image *img, const struct rk_symbols *s);

/**
 * rk_pt_image_add_core() - add the memory of an ELF core dump to @img: each
 * PT_LOAD segment with contents, at its address (added after the sideband's
 * files, it wins where both map: it is what was in memory).
 * @why: on failure, what is wrong, for people.
 * Return: segments added, or -errno / -EINVAL (not an ELF core file).
 */
int rk_pt_image_add_core(struct pt_image *img, const char *core, const char **why);

#define RK_PT_INSN 0 /* every instruction, like ptxed */
#define RK_PT_BRANCHES 1 /* taken branches as "from -> to", like perf script --itrace=b */

/**
 * rk_pt_insn() - decode @buf's trace into instructions of @img and print
 * them as ptxed does: address, class, bytes and symbol (@syms, may be
 * NULL), "? " before one executed speculatively; events in brackets with
 * their payloads ([paging, cr3: ...], [ptwrite: ...], [begin transaction],
 * ...; not the state a PSB+ repeats), "[end of trace]" where the trace
 * ends. Starts at the first PSB; a PSB+ that does not decode, or an error
 * after it (e.g. no image at an address: kernel code), is printed as
 * "[OFFSET, IP: error: ...]" and decoding goes on at the first PSB after
 * the last packet the flow took (as perf; after a packet that does not
 * decode, at the next PSB past it). The instruction that comes with an
 * error is printed first. A TIP.PGD that ends the trace after an indirect
 * branch is "[disabled]" (libipt's instruction decoder drops it).
 * @base: added to printed offsets: the ring position of @buf's first byte,
 *	as rk_pt_dump() prints them.
 * @mode: RK_PT_INSN, or RK_PT_BRANCHES: the branches perf script
 *	--itrace=b shows, as "FROM sym -> TO sym  FLAGS" (perf's flags words,
 *	"(x)" after one run in a transaction): taken branches (a not-taken
 *	conditional one is left out; syscall, sysret, iret, int by name), a
 *	trace start or a restart after an overflow as 0 -> ip ("tr strt"), a
 *	branch under which tracing stopped as ip -> its TIP.PGD target or 0
 *	("tr end", "tr end  call", ...), an asynchronous disable as at -> 0
 *	("tr end async"; at -> ip, "tr end  hw int", where the TIP.PGD has
 *	one) after the pending branch ends where it struck, an interrupt as
 *	from -> handler ("hw int"), a transaction abort as one at -> handler
 *	("tx abrt"; into a disable "tr end  tx abrt"); a branch pending at an
 *	overflow ends where it went (its bytes, its TIP, or for a compressed
 *	return perf's return stack); the segment after an error starts with
 *	0 -> ip ("tr strt"); the last branch is kept where its target is
 *	known. A loop that consumes no trace is a never-ending loop (perf's
 *	rule), decoding going on as after an error.
 * Return: lines printed (0 for a trace with no instruction), or a negative
 * libipt error if no decoder could be made.
 */
long rk_pt_insn(FILE *out, const __u8 *buf, size_t len, __u64 base, struct pt_config *cfg,
		struct pt_image *img, struct rk_symbols *syms, int mode);

/**
 * rk_pt_insn_work() - rk_pt_insn(), and in *@reread (may be NULL) the
 * packets it read besides libipt's decoder: to follow it (what an overflow
 * interrupted, where to go on after an error), once each. For tests of
 * its cost, which must stay linear in the trace.
 */
long rk_pt_insn_work(FILE *out, const __u8 *buf, size_t len, __u64 base, struct pt_config *cfg,
		     struct pt_image *img, struct rk_symbols *syms, int mode,
		     unsigned long long *reread);

/** rk_pt_packet_str() - one packet as rk_pt_dump prints it. */
void rk_pt_packet_str(const struct pt_packet *p, char *s, size_t len);

#endif /* RK_PT_H */
