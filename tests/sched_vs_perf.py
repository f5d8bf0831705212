#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Compare `ringkeeper sched --json` with perf's own sched_switch stream of
the same run: per thread, the time on CPU.

  sched_vs_perf.py RINGKEEPER_JSON PERF_SCRIPT_OUTPUT TGID [TOLERANCE]

PERF_SCRIPT_OUTPUT is `perf script --ns -F cpu,time,trace` of a
`perf record -k CLOCK_MONOTONIC -a -e sched:sched_switch` run (the clock
ringkeeper's BPF reads). perf's runs of a thread are counted within
ringkeeper's window of that thread (its history's first and last event,
give or take 20 us), as ringkeeper counts only runs it has both ends of. Prints one line per
thread; exits 1 if a thread of TGID with >= 1 ms on CPU differs by more than
TOLERANCE (default 0.02), or if none was compared.
"""
import json
import re
import sys

SLACK_NS = 20000
SW = re.compile(r"\[(\d+)\]\s+(\d+)\.(\d+):.*?prev_pid=(\d+).*?==>.*?next_pid=(\d+)")


def perf_runs(path):
    """tid -> list of (start, end) ns, from sched_switch lines."""
    on = {}  # cpu -> (tid, start)
    runs = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = SW.search(line)
            if not m:
                continue
            cpu = int(m.group(1))
            t = int(m.group(2)) * 1000000000 + int(m.group(3).ljust(9, "0")[:9])
            prev, nxt = int(m.group(4)), int(m.group(5))
            cur = on.get(cpu)
            if cur and cur[0] == prev and prev:
                runs.setdefault(prev, []).append((cur[1], t))
            on[cpu] = (nxt, t)
    return runs


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rk = json.load(open(sys.argv[1]))
    runs = perf_runs(sys.argv[2])
    tgid = int(sys.argv[3])
    tol = float(sys.argv[4]) if len(sys.argv) > 4 else 0.02
    compared = bad = 0
    print("%8s %12s %12s %8s %6s %6s" % ("tid", "ringkeeper", "perf", "diff", "runs", "perf"))
    for t in rk["threads"]:
        if t["tgid"] != tgid:
            continue
        # perf's handler runs before or after our program at the same
        # tracepoint: its times differ from ours by a microsecond or two.
        lo, hi = t["first_ns"] - SLACK_NS, t["last_ns"] + SLACK_NS
        mine = [(a, b) for a, b in runs.get(t["tid"], []) if a >= lo and b <= hi]
        p = sum(b - a for a, b in mine)
        r = t["on_cpu_ns"]
        diff = (r - p) / p if p else float("inf")
        flag = ""
        if r >= 1000000 or p >= 1000000:
            compared += 1
            if abs(diff) > tol:
                bad += 1
                flag = "  <- over %.1f%%" % (tol * 100)
        print("%8d %12d %12d %7.3f%% %6d %6d%s" % (t["tid"], r, p, diff * 100, t["runs"],
                                                 len(mine), flag))
    print("compared %d threads, %d over tolerance" % (compared, bad))
    sys.exit(1 if bad or not compared else 0)


if __name__ == "__main__":
    main()
