#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What the Perfetto UI makes of an export, against `ringkeeper sched`.

  perfetto_ui_vs_sched.py TRACE SCHED_JSON [--samples N] [--counter NAME]...

Opens TRACE (export --perfetto) in the Perfetto UI with
scripts/perfetto-ui.py (run by this python, which needs websocket-client)
and asks its trace processor, per thread of SCHED_JSON (`ringkeeper sched
--json` of the same session):
- its name, and its runs: Running thread states and CPU sched slices (not
  those of no length: export's stand-ins for switches the kernel did not
  report, which Perfetto would count as import errors);
- its waits for a CPU (Runnable and Runnable (Preempted) states that end in
  a run): as many as sch_delay.runs, summing to sch_delay.total_ns, the
  longest sch_delay.max_ns;
and of the trace: no import error or data loss (the UI's --check), N perf
samples with a call stack (--samples), a counter track per CPU of each
source NAME (--counter; not the "cpu-clock" Perfetto assumes for a sample
whose sequence names no counter), one value per sample on them.
Exits 1 on a difference (each printed), 2 if the UI could not be used.
"""
import argparse
import json
import os
import subprocess
import sys

UI = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                  "scripts", "perfetto-ui.py")

Q_THREADS = "select tid, coalesce(name, '') from thread where tid > 0"
# Runs of no length are the switches export wrote for the ones the kernel did
# not report (the files' unpaired switches): not sched's runs.
Q_RUNS = ("select t.tid, count(*) from thread_state ts join thread t using(utid) "
          "where ts.state = 'Running' and ts.dur != 0 group by t.tid")
Q_SCHED = ("select t.tid, count(*) from sched s join thread t using(utid) where s.dur != 0 "
           "group by t.tid")
# A wait for a CPU is a Runnable state followed by a run (open ones: dur -1).
Q_WAITS = ("select t.tid, count(*), sum(ts.dur), max(ts.dur) from thread_state ts "
           "join thread t using(utid) where ts.state in ('R', 'R+') and ts.dur >= 0 "
           "and exists (select 1 from sched s where s.utid = ts.utid and s.ts = ts.ts + ts.dur "
           "and s.dur != 0) "
           "group by t.tid")
Q_SAMPLES = "select count(*) from perf_sample where callsite_id is not null"
Q_COUNTERS = ("select t.name, count(c.id) from track t left join counter c on c.track_id = t.id "
              "where t.type = 'perf_cpu_counter' group by t.id order by t.name")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("sched_json")
    ap.add_argument("--samples", type=int)
    ap.add_argument("--counter", action="append", default=[])
    a = ap.parse_args()

    queries = [Q_THREADS, Q_RUNS, Q_SCHED, Q_WAITS, Q_SAMPLES, Q_COUNTERS]
    marks = ["@@%d" % i for i in range(len(queries))]
    cmd = [sys.executable, UI, "--check"]
    for m, q in zip(marks, queries):
        cmd += ["--query", "select '%s'" % m, "--query", q]
    p = subprocess.run(cmd + [a.trace], capture_output=True, text=True)
    if p.returncode == 2:
        sys.stderr.write(p.stderr)
        return 2
    bad = []
    parts, cur = {}, None
    for line in p.stdout.splitlines():
        if line in marks:
            cur = marks.index(line)
            parts[cur] = []
        elif cur is None:
            bad.append("perfetto says: " + line)  # --check's lines
        else:
            parts[cur].append(line.split("\t"))
    if len(parts) != len(queries):
        print(p.stdout + p.stderr)
        return 2
    names = {int(r[0]): r[1] for r in parts[0]}
    runs = {int(r[0]): int(r[1]) for r in parts[1]}
    sched = {int(r[0]): int(r[1]) for r in parts[2]}
    waits = {int(r[0]): (int(r[1]), int(r[2]), int(r[3])) for r in parts[3]}

    with open(a.sched_json) as f:
        threads = json.load(f)["threads"]
    print("%8s %-12s %11s %11s %9s %23s %23s" % ("tid", "comm", "runs rk/pf", "sched", "waits",
                                                  "delay ns rk/pf", "max ns rk/pf"))
    for t in threads:
        tid, d = t["tid"], t["sch_delay"]
        w = waits.get(tid, (0, 0, 0))
        diff = []
        if names.get(tid) != t["comm"]:
            diff.append("name %r" % names.get(tid))
        if runs.get(tid, 0) != t["runs"] or sched.get(tid, 0) != t["runs"]:
            diff.append("runs")
        if w[0] != d["runs"]:
            diff.append("waits")
        if w[1] != d["total_ns"] or w[2] != d["max_ns"]:
            diff.append("delay")
        print("%8d %-12s %5d/%-5d %11d %4d/%-4d %11d/%-11d %11d/%-11d%s" % (
            tid, t["comm"][:12], t["runs"], runs.get(tid, 0), sched.get(tid, 0), d["runs"], w[0],
            d["total_ns"], w[1], d["max_ns"], w[2], "  <- " + ", ".join(diff) if diff else ""))
        if diff:
            bad.append("tid %d: %s" % (tid, ", ".join(diff)))
    if not threads:
        bad.append("no thread in " + a.sched_json)

    samples = int(parts[4][0][0])
    print("perf samples with a stack: %d" % samples)
    if a.samples is not None and samples != a.samples:
        bad.append("%d perf samples with a stack, want %d" % (samples, a.samples))
    counters = {}
    for name, n in parts[5]:
        counters.setdefault(name, []).append(int(n))
    print("counter tracks: %s" % ", ".join("%s x%d (%s values)" % (k, len(v), "+".join(map(str, v)))
                                          for k, v in sorted(counters.items())))
    for name in a.counter:
        if name not in counters:
            bad.append("no counter track of %s" % name)
    for k, v in counters.items():
        if not sum(v):
            bad.append("counter track %s is empty" % k)
    if counters and sum(sum(v) for v in counters.values()) != samples:
        bad.append("the counter tracks hold %d values, not one per sample"
                   % sum(sum(v) for v in counters.values()))
    for b in bad:
        print("DIFF " + b)
    print("compared %d threads, %d differences" % (len(threads), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
