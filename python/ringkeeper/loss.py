# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What a session did not record (docs/format.md; RK_LOSSES in user/format/session.h), as
ringkeeper's readers say it: from a session's stat file, or from a core's or bundle's
session note ("losses N", "loss KEY VALUE" lines)."""
import os
import re
import stat as _stat
import struct

# The loss counters, in RK_LOSSES' order, with their offsets in struct rk_session_stat
# (fields are only ever appended: an offset never moves), and what each means.
KEYS = (
    ("bpf_drops", 88, "signals dropped by the BPF side (ringbuf or switch ring full)"),
    ("stack_drops", 1192, "off-CPU stacks not taken (their CPU's stack ring full)"),
    ("stacks_lost", 1200, "off-CPU stacks lost (not their record's)"),
    ("bpf_prog_misses", 832,
     "BPF program runs the kernel skipped (recursion): events unseen"),
    ("outage_drops", 864, "signals dropped while no recorder ran (before --resume)"),
    ("outage_exited", 872, "threads found exited at resume: their exits not recorded"),
    ("perf_lost", 272, "perf records lost in the kernel's per-CPU rings"),
    ("lost", 144, "records lost (larger than a ring, or no file)"),
    ("shm_withheld", 1112,
     "records not written: their pages did not fit under --max-shm or --max-shm-user"),
    ("exits_late", 1096,
     "exit records lost: handed out after the thread's final switch (the clock read on "
     "another CPU came out behind)"),
    ("not_traced", 296,
     "threads not traced: --max-threads, --max-shm, the memory cgroup or a full tmpfs"),
    ("file_errors", 168, "buffer or sideband files not created"),
    ("files_broken", 840, "files that lost their memory while written (truncated, tmpfs full)"),
    ("aux_truncated", 752, "AUX records truncated (the CPU's AUX ring full)"),
    ("aux_dropped", 760, "AUX bytes with no traced thread to go to"),
    ("stop_dropped", 1256,
     "signals not recorded: the recorder was stopped under a backlog (a few seconds to catch "
     "up, then it ends)"),
)
_MAGIC = 0x5441545350454B52  # "RKPESTAT"
_SIZE_V1 = 720
_LINE = re.compile(r"^loss (\S{1,31}) ([0-9]+)$")


class Loss:
    """.known: the source said; .v: {key: value} of every counter."""

    def __init__(self, known=False, v=None):
        self.known = known
        self.v = dict(v or {})

    def count(self):
        return sum(1 for k, _, _ in KEYS if self.v.get(k)) if self.known else 0

    def as_json(self):
        """The "loss" object of show --json."""
        return {"known": self.known, "complete": self.known and not self.count(),
                "counters": {k: self.v[k] for k, _, _ in KEYS
                             if self.known and self.v.get(k)}}

    def say(self, pfx="# "):
        """The footer of a text output (a list of lines, [] when nothing is to be said)."""
        if not self.known:
            return [pfx + "whether the recording dropped anything is not known (no session "
                    "stat file, or a bundle or core of an older ringkeeper)"]
        if not self.count():
            return []
        out = [pfx + "incomplete: the session did not record everything; figures here may "
               "be short by as much:"]
        for k, _, what in KEYS:
            if self.v.get(k):
                out.append("%s  %d %s (stat: %s)" % (pfx, self.v[k], what, k))
        return out


def from_stat(session_dir):
    """The counters of SESSION/stat; not known if it is not a ringkeeper stat file."""
    try:
        fd = os.open(os.path.join(session_dir, "stat"),
                     os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return Loss()
    try:
        if not _stat.S_ISREG(os.fstat(fd).st_mode):
            return Loss()
        data = os.pread(fd, 1 << 16, 0)
    finally:
        os.close(fd)
    if len(data) < _SIZE_V1:
        return Loss()
    magic, version, size = struct.unpack_from("<QII", data, 0)
    if magic != _MAGIC or version != 1 or size < _SIZE_V1 or size != len(data):
        return Loss()
    v = {}
    for k, off, _ in KEYS:
        v[k] = struct.unpack_from("<Q", data, off)[0] if off + 8 <= size else 0
    return Loss(True, v)


def from_file(path):
    """The counters of the session a buffer file (SESSION/SOURCE/TID) is in."""
    d = os.path.dirname(os.path.dirname(os.fsdecode(path)))
    if not os.path.dirname(os.fsdecode(path)):
        d = ".."
    return from_stat(d or ".")


def from_note(text):
    """The "losses" and "loss KEY VALUE" lines of a session note, values of a key summed."""
    loss = Loss()
    for line in (text or "").split("\n"):
        if line.startswith("losses "):
            loss.known = True
            continue
        m = _LINE.match(line)
        if m and any(m.group(1) == k for k, _, _ in KEYS):
            loss.v[m.group(1)] = loss.v.get(m.group(1), 0) + int(m.group(2))
    return loss
