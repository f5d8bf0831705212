# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""showdiff.py C.json PY.json: `ringkeeper show --json` against `python3 -m ringkeeper show
--json` of the same buffer, record for record. Symbols ("sym", "dso") are show's alone: left
out of its side. Exit 0 if equal, 1 with the first difference.

showdiff.py --many RK_BIN ARGS...: the same for each ARGS (show's arguments as one string:
"FILE", or "--core CORE -e EVENT TID"), `RK_BIN show --json ARGS` against the reader's
`show --json ARGS` run in this interpreter (inproc.py); either refusing is a difference."""
import json
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in ("sym", "dso")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def compare(c, p):
    """The first difference of show's document @c and the reader's @p, or None."""
    c = strip(c)
    if c["thread"] != p["thread"]:
        return "thread differs:\n  show: %s\n  py:   %s" % (c["thread"], p["thread"])
    cr, pr = c["records"], p["records"]
    for i, (x, y) in enumerate(zip(cr, pr)):
        if x != y:
            return "record %d differs:\n  show: %s\n  py:   %s" % (i, x, y)
    if len(cr) != len(pr):
        return "show has %d records, py %d" % (len(cr), len(pr))
    return None


def many(rk, argss):
    from inproc import reader

    records = 0
    for args in argss:
        a = shlex.split(args)
        c = subprocess.run([rk, "show", "--json"] + a, capture_output=True, timeout=120)
        if c.returncode:
            why = c.stderr.decode(errors="replace")[-500:]
            print("%s: show exit %d: %s" % (args, c.returncode, why))
            return 1
        code, out, err = reader(["show", "--json"] + a)
        if code:
            print("%s: reader exit %d: %s" % (args, code, err[-500:]))
            return 1
        p = json.loads(out)
        diff = compare(json.loads(c.stdout), p)
        if diff:
            print("%s: %s" % (args, diff))
            return 1
        print("%s: %d records equal" % (args, len(p["records"])))
        records += len(p["records"])
    print("%d buffers, %d records: show and the reader agree" % (len(argss), records))
    return 0


def main():
    if sys.argv[1] == "--many":
        return many(sys.argv[2], sys.argv[3:])
    with open(sys.argv[1]) as f:
        c = json.load(f)
    with open(sys.argv[2]) as f:
        p = json.load(f)
    diff = compare(c, p)
    if diff:
        print(diff)
        return 1
    print("%s: %d records equal" % (c["thread"]["file"], len(p["records"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
