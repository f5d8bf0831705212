#!/usr/bin/env python3
"""Compare the functions ringkeeper show and perf script name for the same samples.

    symcmp.py RINGKEEPER ROOT SESSION EVENT PERF_DATA

For every sample of EVENT in the session (show --json of each thread) and
the same sample in perf script's output of the export (matched by tid and
time in microseconds), compare the function of the sampled address and of
each call chain entry (names without +offset). Prints the counts and every
disagreement; exits 1 if fewer than 95% of the frames agree.
"""
import json
import os
import subprocess
import sys

rk, root, session, event, data = sys.argv[1:6]


def ours():
    out = {}
    d = os.path.join(root, session, event)
    for tid in os.listdir(d):
        doc = json.loads(subprocess.run([rk, "show", "--json", "--root", root, "--session", session,
                                         "-e", event, tid], capture_output=True, text=True,
                                        check=True).stdout)
        for r in doc["records"]:
            if r.get("type") != "PERF_RECORD_SAMPLE" or "callchain" not in r:
                continue
            frames = r["callchain"] or [r["ip"]]
            out[(r["tid"], r["time"] // 1000)] = [f["sym"].split("+0x")[0] for f in frames]
    return out


def theirs():
    out = {}
    text = subprocess.run(["perf", "script", "-i", data, "-F", "tid,time,ip,sym"],
                          capture_output=True, text=True).stdout
    key = None
    for line in text.splitlines():
        if not line.strip():
            key = None
            continue
        if not line.startswith("\t"):
            tid, t = line.split()[:2]
            sec, usec = t.rstrip(":").split(".")
            key = (int(tid), int(sec) * 1000000 + int(usec))
            out[key] = []
        elif key:
            parts = line.split(None, 1)
            out[key].append(parts[1].strip() if len(parts) > 1 else "[unknown]")
    return out


a, b = ours(), theirs()
frames = agree = 0
for k, fa in a.items():
    fb = b.get(k)
    if fb is None:
        continue
    for x, y in zip(fa, fb):
        frames += 1
        if x == y:
            agree += 1
        else:
            print(f"differ at tid {k[0]} {k[1]} us: show {x} perf {y}")
seen = " ".join(" ".join(v) for v in a.values())
print(f"samples {len(a)} matched {sum(1 for k in a if k in b)} frames {frames} agree {agree}")
print(f"names: start_thread {'start_thread' in seen} vdso {'__vdso_clock_gettime' in seen}")
sys.exit(0 if frames and agree >= 0.95 * frames else 1)
