# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""ringkeeper: read ringkeeper's buffer files, sessions, cores and snapshot bundles.

    import ringkeeper
    src = ringkeeper.open("SESSION")       # its name (root= another root), or a path:
                                           # a session, a core, a bundle, a file
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
           "RUN_COLUMNS", "DEFAULT_ROOT", "resolve"]
__version__ = "0.1.0"

# Where `ringkeeper record` puts its sessions unless --root says otherwise.
DEFAULT_ROOT = "/dev/shm/ringkeeper"


def resolve(path, root=None):
    """The file or directory @path names: a session's name (no '/') under @root
    (default DEFAULT_ROOT), as every ringkeeper command takes it, or a path. With
    no @root, a path that exists wins over a session of that name (`ls` does the
    same with a file). FileNotFoundError names what was looked for."""
    path = os.fsdecode(path)
    named = "/" not in path and path not in ("", ".", "..")
    if root is None and (os.path.exists(path) or not named):
        return path
    if not named:
        raise FileNotFoundError(2, "a session name has no '/' (root=%s was given)" % root,
                                path)
    root = os.fsdecode(root) if root is not None else DEFAULT_ROOT
    full = os.path.join(root, path)
    if not os.path.exists(full):
        raise FileNotFoundError(2, "no session %s in %s (ringkeeper ls lists them)" %
                                (path, root), full)
    return full


def open(path, root=None):  # noqa: A001 - the package's entry point, as in the docs
    """A Session (a directory, or a session's name under @root), a Core (an ELF
    file: a core or a bundle) or a Buffer."""
    path = resolve(path, root)
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


def runs(src, root=None):
    """Every run of every thread of @src (a Session, Core, Buffer, a path, or a
    session's name under @root, default DEFAULT_ROOT)."""
    if isinstance(src, (str, bytes, os.PathLike)):
        src = open(src, root)
    if isinstance(src, Buffer):
        return _buffer_runs(src)
    out = []
    for buf in src.threads():
        out.extend(_buffer_runs(buf))
    return out
