#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Check user/'s layering: each subsystem includes only itself and the layers
below it, and no two modules (a .c and its .h) include each other, directly
or around a circle.

  scripts/layers.py USER_DIR

  lib        the C library's complement (util, access)
  format     what is on disk: buffer files, session files, tracepoint and PT
             descriptors, gc            -> lib
  recorder   record and its modules     -> format, lib
  view       show, sched, export        -> format, lib
  crash      the core_pattern handler   -> format, lib
  cmd        one file per command       -> all of the above
  main.c     the command table          -> cmd, crash, lib

Exits 1 and says which include breaks a rule.
"""
import os
import re
import sys

BELOW = {
    "lib": {"lib"},
    "format": {"format", "lib"},
    "recorder": {"recorder", "format", "lib"},
    "view": {"view", "format", "lib"},
    "crash": {"crash", "format", "lib"},
    "cmd": {"cmd", "recorder", "view", "crash", "format", "lib"},
    ".": {"cmd", "crash", "lib"},
}
# Not ours to place: the BPF side's header, generated files.
OUTSIDE = {"ringkeeper.h", "ringkeeper.skel.h", "version.h"}
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "user"
    where = {}  # header -> layer
    files = []
    for d, _, names in os.walk(root):
        layer = os.path.relpath(d, root)
        for n in names:
            if n.endswith((".c", ".h")):
                files.append((layer, os.path.join(d, n), n))
                if n.endswith(".h"):
                    where[n] = layer
    bad = []
    deps = {}  # module -> modules it includes
    for layer, path, name in files:
        mod = name[:-2]
        for inc in INC.findall(open(path, errors="replace").read()):
            if inc in OUTSIDE:
                continue
            if inc not in where:
                bad.append("%s: includes %s, which is in no layer" % (path, inc))
                continue
            if where[inc] not in BELOW.get(layer, set()):
                bad.append("%s (%s) includes %s (%s): not a layer below it"
                           % (path, layer, inc, where[inc]))
            if inc[:-2] != mod:
                deps.setdefault(mod, set()).add(inc[:-2])
    # Circles among modules: a depth-first search for a back edge.
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(deps.get(m, ())):
            if state.get(n) == 1:
                bad.append("circle: " + " -> ".join(stack[stack.index(n):] + [n]))
            elif not state.get(n):
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(deps):
        if not state.get(m):
            visit(m)
    for b in bad:
        print("layers: " + b)
    if not bad:
        print("layers: %d files, every include goes to its own layer or one below, no circle"
              % len(files))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
