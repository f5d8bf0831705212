# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A session directory (docs/format.md, "A session"): SESSION/SOURCE/TID files."""
import os
import re

from .buffer import Buffer, FormatError

_TID_NAME = re.compile(r"^[0-9]+(\.[0-9]+)?$")


class Session:
    """SESSION/: .sources() the directories of buffer files (sched, cpu-clock, ...,
    sideband); .files(source) their paths, by tid (TID, then TID.1, TID.2, ...)."""

    def __init__(self, path):
        self.path = os.fsdecode(path)
        if not os.path.isdir(self.path):
            raise FileNotFoundError(2, "not a session directory", self.path)
        # As the ringkeeper commands tell one: a session has its sched directory
        # from its start (docs/format.md, "A session"); an empty directory is none.
        if not os.path.isdir(os.path.join(self.path, "sched")):
            raise FormatError("%s: not a ringkeeper session: it has no sched directory "
                              "(ringkeeper ls lists the sessions)" % self.path)
        self.name = os.path.basename(os.path.normpath(self.path))

    def sources(self):
        out = []
        for e in sorted(os.listdir(self.path)):
            d = os.path.join(self.path, e)
            if os.path.isdir(d) and not os.path.islink(d):
                out.append(e)
        return out

    def files(self, source="sched"):
        d = os.path.join(self.path, source)
        if not os.path.isdir(d):
            return []
        names = [n for n in os.listdir(d) if _TID_NAME.match(n)]

        def key(n):
            t, _, s = n.partition(".")
            return int(t), int(s or 0)
        return [os.path.join(d, n) for n in sorted(names, key=key)]

    def threads(self, source="sched"):
        """Each file of @source, opened (Buffer); a file that does not open raises."""
        for p in self.files(source):
            yield Buffer.open(p)

    def stat_text(self):
        """The 'crashes' and 'snapshots' lines, as text ("" if absent)."""
        out = {}
        for n in ("crashes", "snapshots"):
            try:
                with open(os.path.join(self.path, n), "rb") as f:
                    out[n] = f.read(1 << 20).decode("latin-1")
            except OSError:
                out[n] = ""
        return out
