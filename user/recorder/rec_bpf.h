/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_bpf.h - the recorder's the BPF side.
 *
 * bpffs and tracefs mounted, the one-recorder lock, the BPF object's
 * links and maps pinned in bpffs (so a killed recorder's programs run on
 * for --resume) and unpinned, our programs' run statistics.
 * Owns: RK_BPFFS_DIR's contents, RK_LOCK_FILE.
 * May call: util, and the libraries below them (bufile, pinpool, drain, evsel, libbpf).
 */
#ifndef RK_REC_BPF_H
#define RK_REC_BPF_H

#include "rec.h"

int rec_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap);
int rec_ensure_fs(const char *path, long magic, const char *type);
int rec_take_lock(struct rk_rec *r);
void rec_unpin_links(void);
void rec_unpin_maps(void);
int rec_pin_links(struct rk_rec *r);
int rec_pin_maps(struct rk_rec *r);
void rec_prog_stats(struct rk_rec *r);
void rec_find_progs(struct rk_rec *r);

int rec_bpf_load(struct rk_rec *r);
/*
 * rec_bpf_fds_needed() - the file descriptors the BPF object takes at most
 * once loaded, attached and mapped: maps, programs, links, its BTF and our
 * own copies. Return: their number.
 */
int rec_bpf_fds_needed(void);

/*
 * rec_offcpu_size() - before the BPF object loads: --offcpu on or off in
 * its constants, and the stack rings' size (as many 1 KiB stacks per
 * possible CPU as --ringbuf-size over all CPUs holds, a power of two, at
 * least 64; one slot in all without --offcpu). Return: 0, -errno.
 */
int rec_offcpu_size(struct rk_rec *r);

/*
 * rec_offcpu_map() - map the stack rings (@fd, taken; -1: none, as in a
 * session recorded without --offcpu or by an older version) and read them
 * from their tails. Call after the switch rings are mapped. Return: 0
 * (also for none), -errno.
 */
int rec_offcpu_map(struct rk_rec *r, int fd);
void rec_offcpu_unmap(struct rk_rec *r);

int rec_adopt_config(struct rk_rec *r);

/*
 * pin_asked and traced (struct rk_asked, one byte per tid): the pin pool's
 * line to the switch-in program, and sched_switch's copy of who is in
 * pmu_info. rec_bytes_map() takes a map's fd and maps it.
 */
unsigned long rec_pid_max(void);
int rec_bytes_map(struct rk_bytes *m, int fd, int zero);
void rec_bytes_unmap(struct rk_bytes *m);
__u8 *rec_asked_flag(struct rk_rec *r, __u32 tid);
void rec_set_traced(struct rk_rec *r, __u32 tid, int on);
/* Does BPF trace @tid now (its byte in traced, or its sched entry beyond the array)? */
int rec_tid_traced(struct rk_rec *r, __u32 tid);

/*
 * The signal rings (swring, swpos, and the ringbuf r->sig_fd): mapped, and
 * read from their consumer positions on (swring.h).
 */
int rec_swring_map(struct rk_rec *r, int ring_fd, int pos_fd);
void rec_swring_unmap(struct rk_rec *r);

#endif /* RK_REC_BPF_H */
