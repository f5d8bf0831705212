#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Read a Perfetto trace with the official protos (PyPI's perfetto package)
and print what the tests check, as one JSON object:

  threads:   {tid: {name, pid, running, off, instants: {name: n}, tp,
              blocking: {n, ns, funcs: {frame: n}} of its off-CPU slices
              that carry a blocking_stack (record --offcpu)}}
  processes: {pid: name}
  parents:   {pid: ppid} from ProcessTree packets
  track_names: {tid: name} of the thread tracks that have their own (not merged)
  notes:     [{track, event}] of the events on global tracks (no thread, no
             process): "ringkeeper: incomplete" and what the session lost
  perf_samples, tp_samples: counts
  functions: {function: samples whose stack holds it}
  mappings:  [{path, start, end, offset, build_id}] of the samples' frames;
             frames_outside: frames whose rel_pc is not in their mapping's
             range of the file
  leaf:      {function: samples whose leaf it is}
  nonmonotonic: track events whose time is before the previous one's on
             their track
  dangling:  references to an id that was never defined (track uuids,
             interned event and annotation names, annotation strings,
             callstacks, frames, function names, mappings, paths)
  unbalanced: slice ends with no open slice on their track
  ftrace:    the scheduler's view (FtraceEventBundle): switch_ins and
             switch_outs per tid, wakings {tid: n} (sched_waking and
             sched_wakeup_new), states {letter: n} of the switch-outs,
             cpus, system_info (a kernel release was named),
             bad_state (prev_state bits outside the kernel's report set),
             irq_wakings {tid: n} (compact sched_waking with TRACE_FLAG_HARDIRQ
             or _SOFTIRQ in common_flags: what Perfetto marks irq_context),
             compact_errors (compact arrays of unequal length, a comm index
             outside the bundle's table), frees {tid: n} (sched_process_free),
             nonmonotonic (a CPU's events going back in time), mismatch
             (a thread whose ftrace switch-ins differ from its Running
             slices; runs of no length, export's stand-ins for switch-ins
             the kernel did not report, are not counted: added)

Usage: perfetto_check.py TRACE [checks]
  --thread TID:NAME[:RUNS]  a track for TID named NAME (with RUNS "Running"
                            slices: its switch-ins)
  --threads N               exactly N thread tracks
  --perf-samples N, --tp-samples N   that many samples of each kind
  --function F              F is in some sample's stack
  --instant TID:WORD        TID's track has an instant named WORD...
  --wakings TID:N           TID was woken N times (sched_waking + wakeup_new)
  --mapping NAME            a mapping of a file named NAME has its range and
                            its build id
  --blocking TID:N:NS:FUNC  TID has N off-CPU slices with a blocking_stack,
                            NS ns long in all, each stack holding FUNC
  --sched                   the scheduler's view is there (switches, the
                            kernel named) and agrees with the slices
  --irq-wakings TID:N       TID was woken N times from an interrupt (N may be
                            '+': at least once)
  --irq-total N             N wakings from an interrupt in all
  --parent PID:PPID         process PID's parent is PPID (ProcessTree)
  --freed TID               TID's end is there (sched_process_free), once
  --named-tracks            every thread track has a name of its own, not
                            its thread's (the thread-state track has that)
  --note TEXT               an event on a global track (the trace's own notes,
                            "TRACK: EVENT") holds TEXT
Always checked: no dangling id, no time going back on a track, no slice
end without its begin. Prints the report, then each failed check; exit 1
if one failed.
"""
import argparse
import json
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def read(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())

    tracks = {}  # uuid -> tid or None (process)
    threads, processes = {}, {}
    funcs, frames, stacks, mappings, paths = {}, {}, {}, {}, {}
    build_ids, maps_full = {}, {}
    event_names, annotation_names, annotation_strings = {}, {}, {}
    last_ts, depth = {}, {}
    out = dict(perf_samples=0, tp_samples=0, functions={}, leaf={}, with_offset=0,
               nonmonotonic=0, dangling=0, unbalanced=0, packets=0, frames_outside=0)
    ft = dict(switch_ins={}, switch_outs={}, wakings={}, states={}, cpus=[], system_info=False,
              bad_state=0, nonmonotonic=0, mismatch=0, added=0, irq_wakings={}, frees={},
              compact_errors=0)
    parents, track_names = {}, {}
    global_tracks, notes = {}, []  # uuid -> name; {track, event} on them
    ft_last = {}  # cpu -> last timestamp
    ft_in = {}  # cpu -> (time, next_pid) of its last switch
    seq_clean = False
    pending = []  # events seen before their track's descriptor

    def thread_of(uuid):
        tid = tracks.get(uuid)
        return threads.get(tid) if tid is not None else None

    for p in trace.packet:
        out["packets"] += 1
        if p.sequence_flags & 1:
            seq_clean = True
        if p.HasField("interned_data"):
            if not seq_clean:
                out["dangling"] += 1  # interned data before the sequence was cleared
            d = p.interned_data
            for e in d.event_names:
                event_names[e.iid] = e.name
            for e in d.debug_annotation_names:
                annotation_names[e.iid] = e.name
            for e in d.debug_annotation_string_values:
                annotation_strings[e.iid] = e.str.decode()
            for s in d.function_names:
                funcs[s.iid] = s.str.decode()
            for s in d.mapping_paths:
                paths[s.iid] = s.str.decode()
            for s in d.build_ids:
                build_ids[s.iid] = s.str.hex()
            for m in d.mappings:
                mappings[m.iid] = list(m.path_string_ids)
                if m.HasField("build_id") and m.build_id not in build_ids:
                    out["dangling"] += 1
                maps_full[m.iid] = m
            for fr in d.frames:
                frames[fr.iid] = (fr.function_name_id, fr.mapping_id)
                m = maps_full.get(fr.mapping_id)
                if m is not None and m.HasField("end") and not (
                        m.exact_offset <= fr.rel_pc < m.exact_offset + m.end - m.start):
                    out["frames_outside"] += 1
            for c in d.callstacks:
                stacks[c.iid] = list(c.frame_ids)
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            if td.HasField("thread"):
                t = td.thread
                tracks[td.uuid] = t.tid
                threads[t.tid] = dict(name=t.thread_name, pid=t.pid, running=0, off=0,
                                      instants={}, tp=0,
                                      blocking=dict(n=0, ns=0, funcs={}))
                if td.disallow_merging_with_system_tracks and td.name:
                    track_names[t.tid] = td.name
            elif td.HasField("process"):
                tracks[td.uuid] = None
                processes[td.process.pid] = td.process.process_name
            else:
                # A global track (the trace's own notes: "ringkeeper: incomplete").
                tracks[td.uuid] = None
                global_tracks[td.uuid] = td.name
        if p.HasField("process_tree"):
            for pr in p.process_tree.processes:
                if pr.HasField("ppid"):
                    parents[pr.pid] = pr.ppid
        if p.HasField("system_info") and p.system_info.utsname.release:
            ft["system_info"] = True
        if p.HasField("ftrace_events"):
            b = p.ftrace_events
            if b.cpu not in ft["cpus"]:
                ft["cpus"].append(b.cpu)
            if b.HasField("compact_sched"):
                c = b.compact_sched
                n = len(c.waking_timestamp)
                if any(len(x) != n for x in (c.waking_pid, c.waking_target_cpu, c.waking_prio,
                                             c.waking_comm_index)) or \
                        len(c.waking_common_flags) not in (0, n) or \
                        any(i >= len(c.intern_table) for i in c.waking_comm_index):
                    ft["compact_errors"] += 1
                for i, pid in enumerate(c.waking_pid):
                    ft["wakings"][pid] = ft["wakings"].get(pid, 0) + 1
                    if i < len(c.waking_common_flags) and c.waking_common_flags[i] & 0x18:
                        ft["irq_wakings"][pid] = ft["irq_wakings"].get(pid, 0) + 1
            for e in b.event:
                if e.HasField("sched_process_free"):
                    pid = e.sched_process_free.pid
                    ft["frees"][pid] = ft["frees"].get(pid, 0) + 1
                if e.timestamp < ft_last.get(b.cpu, 0):
                    ft["nonmonotonic"] += 1
                ft_last[b.cpu] = e.timestamp
                if e.HasField("sched_switch"):
                    s = e.sched_switch
                    if s.prev_pid:
                        ft["switch_outs"][s.prev_pid] = ft["switch_outs"].get(s.prev_pid, 0) + 1
                        st = s.prev_state
                        # R, S, D, T, t, X, Z, P, I: the report bits since 4.14
                        if st & ~0x1ff:
                            ft["bad_state"] += 1
                        letter = "R" if not st else "SDTtXZPI"[(st & -st).bit_length() - 1] \
                            if st < 0x100 else "R+"
                        ft["states"][letter] = ft["states"].get(letter, 0) + 1
                    if s.next_pid:
                        ft["switch_ins"][s.next_pid] = ft["switch_ins"].get(s.next_pid, 0) + 1
                    # A run of no length: export's stand-in for a switch-in the
                    # kernel did not report (two switch-outs in a row), not a run.
                    if s.prev_pid and ft_in.get(b.cpu) == (e.timestamp, s.prev_pid):
                        ft["switch_ins"][s.prev_pid] -= 1
                        ft["added"] += 1
                    ft_in[b.cpu] = (e.timestamp, s.next_pid)
                for w in (e.sched_waking, e.sched_wakeup_new):
                    if w.pid:
                        ft["wakings"][w.pid] = ft["wakings"].get(w.pid, 0) + 1
        if p.HasField("track_event"):
            pending.append((p.timestamp, p.track_event))
        if p.HasField("perf_sample"):
            out["perf_samples"] += 1
            s = p.perf_sample
            cs = stacks.get(s.callstack_iid)
            if cs is None:
                out["dangling"] += 1
                continue
            names = []
            for fid in cs:
                fr = frames.get(fid)
                if fr is None or fr[0] not in funcs or fr[1] not in mappings:
                    out["dangling"] += 1
                    continue
                if any(i not in paths for i in mappings[fr[1]]):
                    out["dangling"] += 1
                names.append(funcs[fr[0]])
            # A function's name alone (its offset is in the frame's rel_pc).
            out["with_offset"] += sum("+0x" in n for n in names)
            base = names
            for n in set(base):
                out["functions"][n] = out["functions"].get(n, 0) + 1
            if base:
                leaf = base[-1]  # root first: the leaf is last
                out["leaf"][leaf] = out["leaf"].get(leaf, 0) + 1

    def name_of(te):
        """A track event's name, inline or interned (None: a dangling iid)."""
        if te.HasField("name_iid"):
            return event_names.get(te.name_iid)
        return te.name

    def annotations_of(te):
        """{name: value} of a track event's annotations (None for a dangling iid)."""
        a = {}
        for d in te.debug_annotations:
            n = annotation_names.get(d.name_iid) if d.HasField("name_iid") else d.name
            if d.HasField("string_value_iid"):
                v = annotation_strings.get(d.string_value_iid)
            elif d.HasField("string_value"):
                v = d.string_value
            else:
                v = d.uint_value if d.HasField("uint_value") else d.int_value
            if n is None or v is None:
                out["dangling"] += 1
            a[n] = v
        return a

    opened = {}  # uuid -> [(begin ts, blocking_stack or None)] of open slices
    for ts, te in pending:
        uuid = te.track_uuid
        if uuid not in tracks:
            out["dangling"] += 1
            continue
        if ts < last_ts.get(uuid, 0):
            out["nonmonotonic"] += 1
        last_ts[uuid] = ts
        t = thread_of(uuid)
        name = name_of(te)
        annotations = annotations_of(te)
        if uuid in global_tracks:
            notes.append(dict(track=global_tracks[uuid], event=name))
        if te.type != pb.TrackEvent.TYPE_SLICE_END and name is None:
            out["dangling"] += 1
            name = ""
        if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            depth[uuid] = depth.get(uuid, 0) + 1
            opened.setdefault(uuid, []).append((ts, annotations.get("blocking_stack")))
            if t is not None:
                if name == "Running":
                    t["running"] += 1
                else:
                    t["off"] += 1
        elif te.type == pb.TrackEvent.TYPE_SLICE_END:
            if depth.get(uuid, 0) <= 0:
                out["unbalanced"] += 1
            else:
                depth[uuid] -= 1
                begun, stack = opened[uuid].pop()
                if stack is not None and t is not None:
                    b = t["blocking"]
                    b["n"] += 1
                    b["ns"] += ts - begun
                    for fn in stack.split(";"):
                        b["funcs"][fn] = b["funcs"].get(fn, 0) + 1
        elif te.type == pb.TrackEvent.TYPE_INSTANT and t is not None:
            if "fields" in annotations:
                t["tp"] += 1
                out["tp_samples"] += 1
            else:
                word = name.split(" ")[0]
                t["instants"][word] = t["instants"].get(word, 0) + 1

    for tid, t in threads.items():
        if ft["switch_ins"] and ft["switch_ins"].get(tid, 0) != t["running"]:
            ft["mismatch"] += 1
    out["mappings"] = [dict(path="/" + "/".join(paths.get(i, "?") for i in m.path_string_ids),
                            start=m.start, end=m.end, offset=m.exact_offset,
                            build_id=build_ids.get(m.build_id, "") if m.HasField("build_id")
                            else "") for m in maps_full.values()]
    out["threads"] = threads
    out["processes"] = processes
    out["parents"] = parents
    out["track_names"] = track_names
    out["notes"] = notes
    out["ftrace"] = ft
    return out


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("trace")
    ap.add_argument("--thread", action="append", default=[])
    ap.add_argument("--threads", type=int)
    ap.add_argument("--perf-samples", type=int)
    ap.add_argument("--tp-samples", type=int)
    ap.add_argument("--function", action="append", default=[])
    ap.add_argument("--instant", action="append", default=[])
    ap.add_argument("--wakings", action="append", default=[])
    ap.add_argument("--sched", action="store_true")
    ap.add_argument("--mapping", action="append", default=[])
    ap.add_argument("--blocking", action="append", default=[])
    ap.add_argument("--irq-wakings", action="append", default=[])
    ap.add_argument("--irq-total", type=int)
    ap.add_argument("--parent", action="append", default=[])
    ap.add_argument("--freed", action="append", default=[], type=int)
    ap.add_argument("--named-tracks", action="store_true")
    ap.add_argument("--note", action="append", default=[])
    a = ap.parse_args()
    out = read(a.trace)
    json.dump(out, sys.stdout, sort_keys=True)
    print()
    bad = []
    for k in ("dangling", "nonmonotonic", "unbalanced"):
        if out[k]:
            bad.append("%s: %d" % (k, out[k]))
    th = out["threads"]
    for spec in a.thread:
        f = spec.split(":")
        tid = int(f[0])
        if tid not in th:
            bad.append("no track for tid %d" % tid)
            continue
        if th[tid]["name"] != f[1]:
            bad.append("tid %d named %r, not %r" % (tid, th[tid]["name"], f[1]))
        if len(f) > 2 and th[tid]["running"] != int(f[2]):
            bad.append("tid %d: %d Running slices, %s switch-ins" % (tid, th[tid]["running"], f[2]))
    if a.threads is not None and len(th) != a.threads:
        bad.append("%d thread tracks, want %d" % (len(th), a.threads))
    if a.perf_samples is not None and out["perf_samples"] != a.perf_samples:
        bad.append("%d perf samples, want %d" % (out["perf_samples"], a.perf_samples))
    if a.tp_samples is not None and out["tp_samples"] != a.tp_samples:
        bad.append("%d tracepoint instants, want %d" % (out["tp_samples"], a.tp_samples))
    for fn in a.function:
        if fn not in out["functions"]:
            bad.append("no sample's stack holds %s" % fn)
    if out["with_offset"]:
        bad.append("%d frames name a function with its offset (func+0x...): a profiler "
                   "groups by function" % out["with_offset"])
    for spec in a.instant:
        tid, word = spec.split(":")
        if word not in th.get(int(tid), {}).get("instants", {}):
            bad.append("tid %s has no %s instant" % (tid, word))
    if out["frames_outside"]:
        bad.append("%d frames outside their mapping" % out["frames_outside"])
    for spec in a.blocking:
        tid, n, ns, fn = spec.split(":")
        b = th.get(int(tid), {}).get("blocking", dict(n=0, ns=0, funcs={}))
        if (b["n"], b["ns"]) != (int(n), int(ns)):
            bad.append("tid %s: %d slices with a blocking stack, %d ns; want %s, %s ns" %
                       (tid, b["n"], b["ns"], n, ns))
        if b["funcs"].get(fn, 0) != b["n"]:
            bad.append("tid %s: %d of %d blocking stacks hold %s" %
                       (tid, b["funcs"].get(fn, 0), b["n"], fn))
    for name in a.mapping:
        if not any(m["path"].endswith("/" + name) and m["end"] > m["start"] and m["build_id"]
                   for m in out["mappings"]):
            bad.append("no mapping of %s with its range and build id" % name)
    ft = out["ftrace"]
    for k in ("bad_state", "nonmonotonic", "mismatch", "compact_errors"):
        if ft[k]:
            bad.append("ftrace %s: %d" % (k, ft[k]))
    if a.sched:
        if not ft["switch_ins"]:
            bad.append("no scheduler view (ftrace sched_switch)")
        if not ft["system_info"]:
            bad.append("no SystemInfo: Perfetto cannot read prev_state")
    for spec in a.wakings:
        tid, n = (int(x) for x in spec.split(":"))
        if ft["wakings"].get(tid, 0) != n:
            bad.append("tid %d woken %d times, want %d" % (tid, ft["wakings"].get(tid, 0), n))
    for spec in a.irq_wakings:
        tid, n = spec.split(":")
        got = ft["irq_wakings"].get(int(tid), 0)
        if (n == "+" and not got) or (n != "+" and got != int(n)):
            bad.append("tid %s woken %d times from an interrupt, want %s" % (tid, got, n))
    if a.irq_total is not None and sum(ft["irq_wakings"].values()) != a.irq_total:
        bad.append("%d wakings from an interrupt, want %d"
                   % (sum(ft["irq_wakings"].values()), a.irq_total))
    for spec in a.parent:
        pid, ppid = (int(x) for x in spec.split(":"))
        if out["parents"].get(pid) != ppid:
            bad.append("process %d's parent is %s, not %d" % (pid, out["parents"].get(pid), ppid))
    for tid in a.freed:
        if ft["frees"].get(tid, 0) != 1:
            bad.append("tid %d ended (sched_process_free) %d times, want 1"
                       % (tid, ft["frees"].get(tid, 0)))
    if a.named_tracks:
        for tid, t in th.items():
            name = out["track_names"].get(tid)
            if not name or name == t["name"]:
                bad.append("tid %d's track is not named apart from its thread (%r)" % (tid, name))
    for text in a.note:
        if not any(text in "%s: %s" % (n["track"], n["event"]) for n in out["notes"]):
            bad.append("no note on a global track holds %r (%s)" % (text, out["notes"]))
    for b in bad:
        print("FAILED: " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
