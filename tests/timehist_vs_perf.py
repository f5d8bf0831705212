#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Compare `ringkeeper sched --json` with `perf sched timehist` of the same
run: per thread, the runs, the time on CPU and the scheduling delay.

  timehist_vs_perf.py RINGKEEPER_JSON TIMEHIST_OUTPUT SWITCHES TGID [TOLERANCE]
                      [--stamps SHOW]

TIMEHIST_OUTPUT is `perf sched timehist --state` of a `perf sched record -k
CLOCK_MONOTONIC` taken around `ringkeeper record -p PID` (both watch the
same sched_switch, sched_waking and sched_wakeup_new tracepoints); SWITCHES
is `perf script -F cpu,time,trace` of the same file. A timehist line is one
run of a thread (printed at its switch-out, with the state it left in), its
"wait time" (since its last switch-out), "sch delay" and "run time", in ms
truncated to microseconds.

Two things of perf 6.1 are undone here, so that what is compared is what
timehist means today:
- a run of a thread that has exited by the time perf reads its switch-out
  is printed as ":-1[-1/PID]": its tid is taken from the sched_switch at
  that CPU and time (SWITCHES);
- a preempted thread's wait for the CPU is its delay (perf since 6.10:
  "time between runnable and actually running"); 6.1 printed 0 for it.
  After a switch-out in state R, the delay is the wait time.

Per thread of TGID, of the runs within ringkeeper's history of it (a run's
delay only if the wakeup is too): runs, summed run time, summed delay and the largest
delay (perf's sums get half a microsecond per run back from the truncation).
Exits 1 if a thread differs by more than TOLERANCE (default 0.01) in runs,
or in on-CPU or summed delay by more than that and half a microsecond a
run, if the largest delays differ by more than the stamps allow, or if no
thread was compared.

What the stamps allow: perf's sample and ringkeeper's BPF program stamp the
same tracepoint hit one after the other, with interrupts on, so the two
stamps of one event differ by whatever ran between them; one run's delay has
two such ends. On this machine's host most are ~1 us apart, and 10-31 us for
a few of every 15,000 (a fixed 10 us slack once failed CI with 922 us
against 907). With --stamps SHOW, SHOW (`ringkeeper show --json ...`, to
which each tid is appended) gives ringkeeper's own records, each switch-in,
switch-out and wakeup is matched to perf's nearest of the same kind and tid,
and the largest delays may differ by the largest switch-in gap plus the
largest wakeup gap seen in this run, plus 2 us of truncation. Without it,
the two read the same stamps (an export of ringkeeper's own records) and
only the truncation is allowed.
"""
import bisect
import json
import re
import shlex
import subprocess
import sys

LINE = re.compile(r"^\s*(\d+\.\d+)\s+\[(\d+)\]\s+(.*?)\[(-?\d+)(?:/(\d+))?\]\s+"
                  r"([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)")
SW = re.compile(r"\[(\d+)\]\s+(\d+\.\d+):.*?prev_pid=(\d+)")
SWITCH = re.compile(r"\[\d+\]\s+(\d+\.\d+):.*?prev_pid=(\d+) .*?next_pid=(\d+)")
WAKING = re.compile(r"\[\d+\]\s+(\d+\.\d+): comm=.*? pid=(\d+) prio=\S+ target_cpu=")


def switch_outs(path):
    """(cpu, time as timehist prints it) -> prev_pid, from sched_switch lines."""
    outs = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = SW.search(line)
            if m:
                outs[(int(m.group(1)), m.group(2))] = int(m.group(3))
    return outs


def us(field):
    return round(float(field) * 1000)


SLACK_US = 20
TRUNC_US = 2
MATCH_US = 200  # farther than this from perf's nearest: not the same event


def perf_threads(path, outs, windows):
    """
    tid -> dict(runs, run_us, delay_us, max_delay_us) from timehist lines:
    of the threads in windows (tid -> (first_us, last_us), ringkeeper's
    history), the runs within it, and their delays that start within it.
    """
    th = {}
    last_state = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            tid = int(m.group(4))
            if tid == -1:
                tid = outs.get((int(m.group(2)), m.group(1)), -1)
            delay = us(m.group(7))
            if last_state.get(tid) == "R":
                delay = us(m.group(6))
            last_state[tid] = m.group(9)
            if tid not in windows:
                continue
            lo, hi = windows[tid]
            out = round(float(m.group(1)) * 1e6)
            run = us(m.group(8))
            if out - run < lo - SLACK_US or out > hi + SLACK_US:
                continue
            if out - run - delay < lo - SLACK_US:
                delay = 0  # woken before ringkeeper's history of it began
            d = th.setdefault(tid, {"runs": 0, "run_us": 0, "delay_us": 0, "max_delay_us": 0})
            d["runs"] += 1
            d["run_us"] += us(m.group(8))
            d["delay_us"] += delay
            d["max_delay_us"] = max(d["max_delay_us"], delay)
    return th


def perf_stamps(path):
    """(kind, tid) -> sorted perf times in us; kind is in, out or wake."""
    ev = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = SWITCH.search(line)
            if m:
                t = round(float(m.group(1)) * 1e6)
                ev.setdefault(("out", int(m.group(2))), []).append(t)
                ev.setdefault(("in", int(m.group(3))), []).append(t)
                continue
            m = WAKING.search(line)
            if m:
                ev.setdefault(("wake", int(m.group(2))), []).append(round(float(m.group(1)) * 1e6))
    for times in ev.values():
        times.sort()
    return ev


def rk_kind(rec):
    if rec["type"] == "PERF_RECORD_SWITCH":
        return "in" if rec["detail"].startswith("IN") else "out"
    return "wake" if rec["type"] == "RINGKEEPER_WAKEUP" else None


def stamp_gaps(show, tids, switches_path):
    """
    kind -> (largest gap in us, events matched, events farther than MATCH_US)
    between ringkeeper's record of each event and perf's nearest of the same
    kind and tid.
    """
    perf = perf_stamps(switches_path)
    gaps = {k: [0.0, 0, 0] for k in ("in", "out", "wake")}
    for tid in tids:
        out = subprocess.run(shlex.split(show) + [str(tid)], capture_output=True, text=True,
                             check=True).stdout
        for rec in json.loads(out)["records"]:
            kind = rk_kind(rec)
            if not kind:
                continue
            times, x = perf.get((kind, tid), []), rec["time"] / 1000
            i = bisect.bisect_left(times, x)
            near = min((abs(times[j] - x) for j in (i - 1, i) if 0 <= j < len(times)),
                       default=None)
            g = gaps[kind]
            if near is None or near > MATCH_US:
                g[2] += 1
            else:
                g[0], g[1] = max(g[0], near), g[1] + 1
    return gaps


def max_slack(args, tids):
    """What the largest delays may differ by (see the module's text)."""
    if "--stamps" not in args:
        return TRUNC_US
    gaps = stamp_gaps(args[args.index("--stamps") + 1], tids, args[3])
    for kind, (gap, n, far) in gaps.items():
        print("stamps %-4s matched %d, largest gap %.1f us, unmatched %d" % (kind, n, gap, far))
    return gaps["in"][0] + gaps["wake"][0] + TRUNC_US


def off(a, b, tol, slack):
    """a (ours) and b (perf's) differ by more than tol of b and by more than slack."""
    return abs(a - b) > max(tol * b, slack)


def main():
    args = sys.argv
    if len(args) < 5:
        sys.exit(__doc__)
    rk = json.load(open(args[1]))
    tgid = int(args[4])
    windows = {t["tid"]: (t["first_ns"] / 1000, t["last_ns"] / 1000)
               for t in rk["threads"] if t["tgid"] == tgid}
    perf = perf_threads(args[2], switch_outs(args[3]), windows)
    tol = float(args[5]) if len(args) > 5 and not args[5].startswith("--") else 0.01
    slack = max_slack(args, list(windows))
    compared = bad = 0
    print("%8s %13s %13s %17s %17s %13s" % ("tid", "runs rk/perf", "on-CPU us", "",
                                            "sch delay us", "max delay us"))
    for t in rk["threads"]:
        if t["tgid"] != tgid:
            continue
        p = perf.get(t["tid"])
        if not p:
            continue
        runs, on_us = t["runs"], t["on_cpu_ns"] / 1000
        delay_us, max_us = t["sch_delay"]["total_ns"] / 1000, t["sch_delay"]["max_ns"] / 1000
        why = []
        if off(runs, p["runs"], tol, 0):
            why.append("runs")
        half = p["runs"] / 2
        if off(on_us, p["run_us"] + half, tol, half):
            why.append("on-CPU")
        if off(delay_us, p["delay_us"] + half, tol, half):
            why.append("sch delay")
        if abs(max_us - p["max_delay_us"]) > slack:
            why.append("max delay")
        compared += 1
        bad += 1 if why else 0
        print("%8d %6d/%-6d %6.0f/%-6d %8.0f/%-8d %6.0f/%-6d%s" % (
            t["tid"], runs, p["runs"], on_us, p["run_us"], delay_us, p["delay_us"], max_us,
            p["max_delay_us"], "  <- " + ", ".join(why) if why else ""))
    print("compared %d threads, %d differ (largest delays by at most %.1f us)" %
          (compared, bad, slack))
    sys.exit(1 if bad or not compared else 0)


if __name__ == "__main__":
    main()
