# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Runs on a CPU from a sched buffer (docs/format.md, "Runs and scheduling delay"),
as `ringkeeper sched` counts them: one dict per run, for a table."""
from .records import (MISC_SWITCH_OUT, RECORD_SWITCH, RK_RECORD_WAKEUP, Decoder, offcpu_of)

RUN_COLUMNS = ("tid", "tgid", "comm", "cpu", "start_ns", "end_ns", "on_cpu_ns", "delay_ns",
               "left", "file")


def events(buf):
    """(kind, time, cpu, res) of the switches and wakeups: kind "in", "out" or "wakeup"."""
    dec = Decoder(buf)
    for r in buf.raw_records():
        if r.type == RECORD_SWITCH:
            kind = "out" if r.misc & MISC_SWITCH_OUT else "in"
        elif r.type == RK_RECORD_WAKEUP and r.size >= 24:
            kind = "wakeup"
        else:
            continue
        _pid, _tid, time, cpu, res = dec.sample_id(r.raw)
        yield kind, time or 0, cpu or 0, res or 0


def runs(buf, name=None):
    """A sched buffer's runs: a switch-in followed by a switch-out (no other switch
    between, the out not before the in). delay_ns: from the first wakeup since the
    previous switch-out (or that switch-out, if it left preempted) to the switch-in;
    None when not known. left: why the run ended (preempted, sleeping, blocked, idle,
    stopped, dead, unknown)."""
    out = []
    last_in = None  # (time, cpu, delay)
    ready = 0
    ident = buf.ident
    name = buf.name if name is None else name
    for kind, time, cpu, res in events(buf):
        if kind == "wakeup":
            if not ready:
                ready = time
        elif kind == "in":
            delay = time - ready if ready and ready <= time else None
            last_in = (time, cpu, delay)
        else:
            if last_in is not None and time >= last_in[0]:
                out.append({"tid": ident.tid, "tgid": ident.tgid, "comm": ident.comm,
                            "cpu": last_in[1], "start_ns": last_in[0], "end_ns": time,
                            "on_cpu_ns": time - last_in[0], "delay_ns": last_in[2],
                            "left": offcpu_of(res), "file": name})
            ready = time if offcpu_of(res) == "preempted" else 0
            last_in = None
    return out


def to_dataframe(rows, columns=RUN_COLUMNS):
    """@rows (dicts) as a pandas DataFrame; pandas is imported only here."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError("ringkeeper.to_dataframe() needs pandas (pip install pandas, or "
                          "pip install './python[pandas]'); runs() gives the same rows as "
                          "a list of dicts") from e
    return pandas.DataFrame(list(rows), columns=list(columns))
