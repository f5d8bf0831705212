#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Compare why threads left the CPU: `ringkeeper sched --json` against perf's
sched_switch prev_state of the same run.

  states_vs_perf.py RINGKEEPER_JSON PERF_SCRIPT_OUTPUT TID...

PERF_SCRIPT_OUTPUT is `perf script --ns -F cpu,time,trace` of a
`perf record -k CLOCK_MONOTONIC -a -e sched:sched_switch` run. For each TID,
perf's switch-outs within ringkeeper's window of that thread are counted by
prev_state; ringkeeper's off-CPU periods by state. They must agree within
SLACK: ringkeeper counts a period only with both of its ends, so a couple
of switch-outs at the edges differ. Exits 1 on a thread whose blocked (D) or
sleeping (S) counts differ by more, or if none has a D switch-out to compare.
"""
import json
import re
import sys

SLACK = 2
EDGE_NS = 20000
SW = re.compile(r"\[(\d+)\]\s+(\d+)\.(\d+):.*?prev_pid=(\d+) .*?prev_state=(\S+)")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rk = {t["tid"]: t for t in json.load(open(sys.argv[1]))["threads"]}
    tids = [int(a) for a in sys.argv[3:]]
    counts = {tid: {} for tid in tids}
    with open(sys.argv[2], errors="replace") as f:
        for line in f:
            m = SW.search(line)
            if not m or int(m.group(4)) not in counts:
                continue
            tid = int(m.group(4))
            t = rk.get(tid)
            ts = int(m.group(2)) * 1000000000 + int(m.group(3).ljust(9, "0")[:9])
            if t and t["first_ns"] - EDGE_NS <= ts <= t["last_ns"] + EDGE_NS:
                st = m.group(5)
                counts[tid][st] = counts[tid].get(st, 0) + 1
    bad = compared = 0
    for tid in tids:
        if tid not in rk:
            print("tid %d: not in ringkeeper's summary" % tid)
            bad += 1
            continue
        p = counts[tid]
        r = rk[tid]["off_cpu_periods"]
        d, s = p.get("D", 0), p.get("S", 0)
        ok = abs(r["blocked"] - d) <= SLACK and abs(r["sleeping"] - s) <= SLACK
        compared += d > 0
        bad += not ok
        print("tid %d: perf D %d S %d R %d; ringkeeper blocked %d sleeping %d preempted %d%s"
              % (tid, d, s, p.get("R", 0) + p.get("R+", 0), r["blocked"], r["sleeping"],
                 r["preempted"], "" if ok else "  <- differs"))
    print("compared %d threads, %d differ" % (compared, bad))
    sys.exit(1 if bad or not compared else 0)


if __name__ == "__main__":
    main()
