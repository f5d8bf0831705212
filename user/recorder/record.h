/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* record.h - the loader: BPF hooks in, per-thread buffer files out. */
#ifndef RK_RECORD_H
#define RK_RECORD_H

#include "rec_opts.h"

/** rk_record() - run a recording to its end. Return: 0 or -errno (already reported). */
int rk_record(const struct rk_record_opts *opts);

#endif /* RK_RECORD_H */
