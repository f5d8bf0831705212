# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""showdiff.py C.json PY.json: `ringkeeper show --json` against `python3 -m ringkeeper show
--json` of the same buffer, record for record. Symbols ("sym", "dso") are show's alone: left
out of its side. Exit 0 if equal, 1 with the first difference."""
import json
import sys


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in ("sym", "dso")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def main():
    with open(sys.argv[1]) as f:
        c = strip(json.load(f))
    with open(sys.argv[2]) as f:
        p = json.load(f)
    if c["thread"] != p["thread"]:
        print("thread differs:\n  show: %s\n  py:   %s" % (c["thread"], p["thread"]))
        return 1
    cr, pr = c["records"], p["records"]
    for i, (x, y) in enumerate(zip(cr, pr)):
        if x != y:
            print("record %d differs:\n  show: %s\n  py:   %s" % (i, x, y))
            return 1
    if len(cr) != len(pr):
        print("show has %d records, py %d" % (len(cr), len(pr)))
        return 1
    print("%s: %d records equal" % (c["thread"]["file"], len(cr)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
