# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""python3 -m ringkeeper show [--json] FILE | --core CORE [-e EVENT] [TID]
python3 -m ringkeeper runs [--csv] [--root DIR] SESSION|CORE|FILE
python3 -m ringkeeper threads [--root DIR] SESSION|CORE
(SESSION: a session's name under --root, default /dev/shm/ringkeeper, or a path)"""
import argparse
import csv
import json
import os
import sys

from . import Core, FormatError, open as rk_open, runs
from .buffer import Buffer
from .loss import from_file, from_note
from .runs import RUN_COLUMNS
from .show import show_json, thread_header


def _err(msg):
    sys.stderr.write("ringkeeper-py: %s\n" % msg)


def _warn(msg):
    sys.stderr.write("ringkeeper-py: warning: %s\n" % msg)


def _show_buf(buf, path, as_json, in_session=True, loss=None):
    if as_json:
        err = show_json(buf, sys.stdout, path, in_session, _warn, loss)
    else:
        h = thread_header(buf, path)
        print("# file: %s\n# thread: tid %d tgid %d comm %s, %s" % (
            path, h["tid"], h["tgid"], h["comm"], h["state"]))
        err = None
        try:
            for d in buf.records():
                print(json.dumps(d))
        except FormatError as e:
            err = e
        for line in loss.say() if loss else []:
            print(line)
    if err:
        _err("%s: records do not parse past the point shown (%s)" % (path, err))
        return 1
    return 0


def bundle_line(core):
    """What a snapshot bundle says of itself, as show --core prints it."""
    import time as _time

    def val(k):
        v = core.desc_value(k) or ""
        return "".join("?" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch for ch in v)
    t, real, utc = val("snapshot time"), val("snapshot realtime"), ""
    if real.isdigit():
        utc = _time.strftime(" (%Y-%m-%d %H:%M:%S UTC)", _time.gmtime(int(real) // 10**9))
    if t.isdigit():
        t = "%d.%09d" % (int(t) // 10**9, int(t) % 10**9)
    return "snapshot of session %s at %s%s on %s, reason: %s" % (
        val("session"), t, utc, val("host"), val("reason"))


def cmd_show(a):
    if a.core:
        core = Core(a.core)
        if a.target is None:
            desc = core.description or ""
            if desc.startswith("bundle "):
                print(bundle_line(core))
            print("core %s: %d ringkeeper buffers" % (a.core, len(core.buffers)))
            for cb in core.buffers:
                label = cb.name or ("sideband" if cb.kind == 0x524B0002 else "?")
                if cb.why:
                    print("  %-24s (not a valid buffer: %s)" % (label, cb.why))
                else:
                    b = cb.buffer
                    print("  %-24s tid %-7u tgid %-7u %-16s %s" % (
                        label, b.tid, b.tgid, b.comm, b.ident.state_name))
            return 0 if core.buffers else 1
        if not a.target.isdigit() or int(a.target) > 0xFFFFFFFF:
            _err("show --core: '%s' is not a tid" % a.target)
            return 2
        cb = core.find(int(a.target), a.event)
        if cb is None:
            _err("core %s has no %s buffer of tid %s" % (a.core, a.event, a.target))
            return 1
        return _show_buf(cb.buffer, cb.name, a.json, in_session=False,
                         loss=from_note(core.description))
    if a.target is None:
        _err("show: a FILE (or --core CORE)")
        return 2
    path = a.target
    buf = Buffer.open(path)
    return _show_buf(buf, os.fsencode(path).decode("latin-1"), a.json, loss=from_file(path))


def cmd_runs(a):
    rows = runs(a.path, a.root)
    if a.csv:
        w = csv.DictWriter(sys.stdout, fieldnames=list(RUN_COLUMNS))
        w.writeheader()
        for r in rows:
            w.writerow(r)
    else:
        json.dump(rows, sys.stdout)
        sys.stdout.write("\n")
    return 0


def cmd_threads(a):
    src = rk_open(a.path, a.root)
    bufs = [src] if isinstance(src, Buffer) else list(src.threads(a.event))
    for b in bufs:
        print("%-24s tid %-7u tgid %-7u %-16s %s, %d bytes of records" % (
            b.name, b.tid, b.tgid, b.comm, b.ident.state_name, b.data_head - b.data_tail))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m ringkeeper",
                                description="Read ringkeeper files (pure Python).")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("show", help="one thread's buffer, as ringkeeper show (--json)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--core", "--bundle", metavar="CORE")
    s.add_argument("-e", "--event", default="sched")
    s.add_argument("target", nargs="?", metavar="FILE|TID")
    r = sub.add_parser("runs", help="every run on a CPU (JSON list of dicts, or --csv)")
    r.add_argument("--csv", action="store_true")
    r.add_argument("--root", metavar="DIR",
                   help="where SESSION is (default /dev/shm/ringkeeper)")
    r.add_argument("path", metavar="SESSION|CORE|FILE")
    t = sub.add_parser("threads", help="the threads of a session or core")
    t.add_argument("-e", "--event", default="sched")
    t.add_argument("--root", metavar="DIR",
                   help="where SESSION is (default /dev/shm/ringkeeper)")
    t.add_argument("path", metavar="SESSION|CORE|FILE")
    a = p.parse_args(argv)
    try:
        return {"show": cmd_show, "runs": cmd_runs, "threads": cmd_threads}[a.cmd](a)
    except FormatError as e:
        _err("not a valid ringkeeper file: %s" % e)
        return 1
    except BrokenPipeError:
        # Cut by head: quietly, as the C tool is.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as e:
        _err("%s: %s" % (e.filename or "", e.strerror or e))
        return 1


if __name__ == "__main__":
    sys.exit(main())
