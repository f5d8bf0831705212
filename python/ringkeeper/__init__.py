# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""ringkeeper: read ringkeeper's buffer files, sessions, cores and snapshot bundles.

    import ringkeeper
    src = ringkeeper.open("/dev/shm/ringkeeper/SESSION")   # or a core, a bundle, a file
    for buf in src.threads():              # one Buffer per thread (sched files)
        for rec in buf.records():          # dicts, as `ringkeeper show --json` prints them
            ...
    rows = ringkeeper.runs(src)            # one dict per run on a CPU
    df = ringkeeper.to_dataframe(rows)     # needs pandas

Written from docs/format.md with the standard library only; every file is
treated as hostile (FormatError on anything that does not hold).
"""
import os

from .buffer import Buffer, FormatError, open_regular
from .core import Core
from .runs import RUN_COLUMNS, to_dataframe
from .runs import runs as _buffer_runs
from .session import Session

__all__ = ["open", "Buffer", "Core", "Session", "FormatError", "runs", "to_dataframe",
           "RUN_COLUMNS"]
__version__ = "0.1.0"


def open(path):  # noqa: A001 - the package's entry point, as in the docs
    """A Session (a directory), a Core (an ELF file: a core or a bundle) or a Buffer."""
    if os.path.isdir(path):
        return Session(path)
    fd, _size = open_regular(path, follow=True)  # a FIFO must not hang us
    try:
        magic = os.pread(fd, 4, 0)
    finally:
        os.close(fd)
    if magic == b"\x7fELF":
        return Core(path)
    return Buffer.open(path)


def runs(src):
    """Every run of every thread of @src (a Session, Core, Buffer or a path)."""
    if isinstance(src, (str, bytes, os.PathLike)):
        src = open(src)
    if isinstance(src, Buffer):
        return _buffer_runs(src)
    out = []
    for buf in src.threads():
        out.extend(_buffer_runs(buf))
    return out
