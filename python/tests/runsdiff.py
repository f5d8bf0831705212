# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""runsdiff.py SCHED.json SOURCE: `ringkeeper sched --json --all` of SOURCE (a session
directory, a core or a bundle) against the reader's runs table of the same SOURCE, per
thread: runs, time on CPU, runs with a known delay and their delay. Exit 0 if all agree."""
import collections
import json
import sys

import ringkeeper


def main():
    with open(sys.argv[1]) as f:
        sched = json.load(f)
    rows = ringkeeper.runs(sys.argv[2])
    df = None
    try:
        df = ringkeeper.to_dataframe(rows)
    except ImportError as e:
        assert "needs pandas" in str(e), e
    if df is not None:
        assert len(df) == len(rows)
    mine = collections.defaultdict(lambda: [0, 0, 0, 0])
    for r in rows:
        m = mine[r["tid"]]
        m[0] += 1
        m[1] += r["on_cpu_ns"]
        if r["delay_ns"] is not None:
            m[2] += 1
            m[3] += r["delay_ns"]
    theirs = collections.defaultdict(lambda: [0, 0, 0, 0])
    for t in sched["threads"]:
        s = theirs[t["tid"]]
        for i, v in enumerate((t["runs"], t["on_cpu_ns"], t["sch_delay"]["runs"],
                               t["sch_delay"]["total_ns"])):
            s[i] += v
    bad = 0
    for tid in sorted(set(mine) | set(theirs)):
        if mine[tid] != theirs[tid]:
            print("tid %d: sched [runs, on_cpu_ns, delayed runs, delay_ns] %s, reader %s"
                  % (tid, theirs[tid], mine[tid]))
            bad += 1
    print("%s: %d threads, %d runs, %s" % (sys.argv[2], len(theirs), len(rows),
                                          "agree" if not bad else "%d differ" % bad))
    return 1 if bad or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
