# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""One ringkeeper buffer file (docs/format.md, "A buffer file"), read with
nothing but the standard library.

Every offset and size comes from a file that may be hostile: each is checked
against what was actually read before it is used, and anything that does not
hold raises FormatError (a ValueError) with the reason, never an IndexError or
a read past the end.
"""
import os
import stat
import struct

PAGE = 4096
PMU_OFFSET_MIN = 1104  # 1088 (perf_event_mmap_page) + u64 pmu_offset + u64 pmu_size
IDENT_MAGIC = 0x504545474B474E52  # "RINGKEEP"
IDENT_VERSION = 2
IDENT_SIZE = 96
ATTR_SIZE_VER0 = 64
ATTR_SIZE_MAX = 136  # PERF_ATTR_SIZE_VER8: the largest the reference reader takes
PMU_DESC_MAX = 512
DATA_SIZE_MAX = 1 << 34

# perf_event_attr.sample_type bits
SAMPLE_IP = 1 << 0
SAMPLE_TID = 1 << 1
SAMPLE_TIME = 1 << 2
SAMPLE_ADDR = 1 << 3
SAMPLE_READ = 1 << 4
SAMPLE_CALLCHAIN = 1 << 5
SAMPLE_ID = 1 << 6
SAMPLE_CPU = 1 << 7
SAMPLE_PERIOD = 1 << 8
SAMPLE_STREAM_ID = 1 << 9
SAMPLE_RAW = 1 << 10
SAMPLE_IDENTIFIER = 1 << 16

THREAD_STATES = {
    0: "live",
    1: "exiting",
    2: "exited",
    3: "stopped",
    4: "exec-root-only",
    5: "crashed",
    6: "creds-changed",
    7: "left-cgroup",
}


class FormatError(ValueError):
    """The input is not a valid ringkeeper file (or stops being one)."""


def _pow2(x):
    return x > 0 and not x & (x - 1)


def _align8(x):
    return (x + 7) & ~7


def cstr(b):
    """A NUL-padded char array as text: up to its first NUL, one char per byte."""
    i = b.find(b"\0")
    return (b if i < 0 else b[:i]).decode("latin-1")


class Attr:
    """The fields of perf_event_attr a reader needs (linux/perf_event.h)."""

    __slots__ = ("type", "size", "config", "sample_period", "sample_type",
                 "read_format", "flags", "clockid", "raw")

    def __init__(self, raw):
        b = raw + bytes(max(0, ATTR_SIZE_MAX - len(raw)))
        self.raw = bytes(raw)
        (self.type, self.size, self.config, self.sample_period, self.sample_type,
         self.read_format, self.flags) = struct.unpack_from("<IIQQQQQ", b, 0)
        (self.clockid,) = struct.unpack_from("<i", b, 92)

    def _bit(self, n):
        return (self.flags >> n) & 1

    sample_id_all = property(lambda self: self._bit(18))
    use_clockid = property(lambda self: self._bit(25))
    context_switch = property(lambda self: self._bit(26))


class Ident:
    """struct rk_thread_ident (version 2, its 96 known bytes)."""

    __slots__ = ("magic", "version", "size", "tid", "tgid", "ns_tid", "uid", "comm_raw",
                 "start_ns", "exit_ns", "exit_code", "state", "pinned", "flags",
                 "overwritten", "lost")

    def __init__(self, b):
        (self.magic, self.version, self.size, self.tid, self.tgid, self.ns_tid, self.uid,
         self.comm_raw, self.start_ns, self.exit_ns, self.exit_code, self.state, self.pinned,
         self.flags, self.overwritten, self.lost) = struct.unpack_from(
             "<QIIIIII16sQQiIIIQQ", b, 0)

    @property
    def comm(self):
        # The reference reader forces the 16th byte to NUL (TASK_COMM_LEN).
        return cstr(self.comm_raw[:15])

    @property
    def state_name(self):
        return THREAD_STATES.get(self.state, "unknown")


class OpenFile:
    """An fd, closed by close() or when nothing refers to it any longer (a core's
    buffers keep their core's file open while they are used)."""

    def __init__(self, path, follow=False):
        self.fd = None
        self.fd, self.size = open_regular(path, follow)

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __del__(self):
        self.close()


class Source:
    """Bytes [base, base + size) of an open file, read with pread and checked.

    Small reads (headers) come from a window read ahead, so walking many small
    records of a large file costs few system calls."""

    WINDOW = 1 << 16

    def __init__(self, file, base, size, name):
        self.file, self.base, self.size, self.name = file, base, size, name
        self._win_off, self._win = 0, b""

    def _pread(self, off, n):
        if self.file.fd is None:
            raise ValueError("%s: read after its file was closed" % self.name)
        out = bytearray()
        while len(out) < n:
            chunk = os.pread(self.file.fd, min(n - len(out), 1 << 24), self.base + off + len(out))
            if not chunk:
                raise FormatError("%s: shorter than it was (truncated while read)" % self.name)
            out += chunk
        return bytes(out)

    def read(self, off, n):
        if off < 0 or n < 0 or off > self.size or n > self.size - off:
            raise FormatError("%s: %d bytes at %d are past its end (%d bytes)"
                              % (self.name, n, off, self.size))
        if n > 4096:
            return self._pread(off, n)
        w = self._win_off
        if not (w <= off and off + n <= w + len(self._win)):
            self._win_off = off
            self._win = self._pread(off, min(self.WINDOW, self.size - off))
            w = off
        return self._win[off - w:off - w + n]

    def reread(self, off, n):
        """The bytes as they are now (a live file's head and tail), not from the window."""
        if off < 0 or n < 0 or off > self.size or n > self.size - off:
            raise FormatError("%s: %d bytes at %d are past its end" % (self.name, n, off))
        return self._pread(off, n)


def open_regular(path, follow=False):
    """An fd of a regular file, opened so that a FIFO or device cannot hang us."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FormatError("%s: not a regular file" % path)
        return fd, st.st_size
    except BaseException:
        os.close(fd)
        raise


class Record:
    """One record of the data ring: its header, its bytes, where it was."""

    __slots__ = ("type", "misc", "size", "pos", "raw")

    def __init__(self, typ, misc, size, pos, raw):
        self.type, self.misc, self.size, self.pos, self.raw = typ, misc, size, pos, raw

    def __repr__(self):
        return "Record(type=%#x, misc=%#x, size=%d, pos=%d)" % (
            self.type, self.misc, self.size, self.pos)


class Buffer:
    """A buffer file read into memory: page 0 checked, then its data ring.

    Buffer.open(path) reads a file; Buffer(source) reads any Source (a core's
    note; lazy: its ring is read when its records are first asked for, while
    the source's file is open). The ring is copied with the live-file protocol
    of docs/format.md: data_head, then data_tail, then the bytes, then
    data_tail again (records before it may have been overwritten meanwhile).
    """

    def __init__(self, src, name=None, lazy=False):
        self.name = src.name if name is None else name
        self.file_size = src.size
        if src.size < PAGE:
            raise FormatError("%s: shorter than one page" % self.name)
        pg = src.read(0, PAGE)
        self.page0 = pg
        off, psz = struct.unpack_from("<QQ", pg, 1088)
        if off < PMU_OFFSET_MIN or off % 8 or off >= PAGE:
            raise FormatError("%s: pmu_offset out of page 0" % self.name)
        if psz < ATTR_SIZE_VER0 or psz > PAGE - off:
            raise FormatError("%s: pmu_size does not fit in page 0" % self.name)
        ioff = _align8(off + psz)
        if ioff + IDENT_SIZE > PAGE:
            raise FormatError("%s: thread identity record does not fit in page 0" % self.name)
        ident = Ident(pg[ioff:ioff + IDENT_SIZE])
        if ident.magic != IDENT_MAGIC:
            raise FormatError("%s: no ringkeeper identity record" % self.name)
        if ident.version == 1:
            raise FormatError("%s: written by an older ringkeeper (layout 1); read it with "
                              "that version" % self.name)
        if ident.version != IDENT_VERSION or ident.size < IDENT_SIZE:
            raise FormatError("%s: identity record of an unknown version" % self.name)
        (attr_size,) = struct.unpack_from("<I", pg, off + 4)
        if attr_size < ATTR_SIZE_VER0 or attr_size > psz:
            raise FormatError("%s: attr.size at pmu_offset disagrees with pmu_size" % self.name)
        if attr_size > ATTR_SIZE_MAX:
            raise FormatError("%s: perf_event_attr larger than this reader knows" % self.name)
        if psz - attr_size > PMU_DESC_MAX:
            raise FormatError("%s: PMU descriptor larger than this reader knows" % self.name)
        self.pmu_offset, self.pmu_size, self.ident_offset = off, psz, ioff
        self.attr = Attr(pg[off:off + attr_size])
        self.attr.size = attr_size
        self.pmu_desc = pg[off + attr_size:off + psz]
        self.ident = ident
        (self.time_shift,) = struct.unpack_from("<H", pg, 50)
        (self.time_mult,) = struct.unpack_from("<I", pg, 52)
        (self.time_zero,) = struct.unpack_from("<Q", pg, 64)
        (d_off, d_size, a_head, a_tail, a_off, a_size) = struct.unpack_from("<QQQQQQ", pg, 1040)
        if d_off != PAGE or not _pow2(d_size) or d_size < PAGE or d_size > src.size - PAGE:
            raise FormatError("%s: data area out of the file" % self.name)
        if a_size and (a_off < PAGE + d_size or not _pow2(a_size) or a_off > src.size
                       or a_size > src.size - a_off):
            raise FormatError("%s: aux area out of the file" % self.name)
        self.data_size = d_size
        self.aux_offset, self.aux_size = (a_off, a_size) if a_size else (0, 0)
        self.aux_head, self.aux_tail = a_head, a_tail
        self._src, self._ring = src, None
        self.data_head, self.data_tail = self._ring_pair(src, pg)
        if not lazy:
            self._load()

    def _load(self):
        """The ring, copied once: data_head and data_tail were loaded (head first) at open;
        now the bytes; then data_tail again (records before it may have been overwritten
        while they were copied: they are dropped)."""
        if self._ring is not None:
            return
        src, tail = self._src, self.data_tail
        ring = src.read(PAGE, self.data_size)
        (tail2,) = struct.unpack_from("<Q", src.reread(1032, 8), 0)
        self._start = tail2 if tail < tail2 else tail
        self._ring, self._src = ring, None

    def _ring_pair(self, src, pg):
        """(data_head, data_tail), loaded head first; retried while a writer moves them."""
        prev = None
        for i in range(1000):
            b = pg[1024:1040] if i == 0 else src.reread(1024, 16)
            head, tail = struct.unpack("<QQ", b)
            if tail <= head and head - tail <= self.data_size:
                if (head | tail) % 8:
                    raise FormatError("%s: data_head/data_tail not 8-byte aligned" % self.name)
                return head, tail
            if prev == (head, tail):
                break
            prev = (head, tail)
        raise FormatError("%s: %s" % (self.name, "data_head is behind data_tail" if head < tail
                                      else "data_head - data_tail exceeds data_size"))

    @classmethod
    def open(cls, path):
        f = OpenFile(path)
        try:
            return cls(Source(f, 0, f.size, os.fsencode(path).decode("latin-1")))
        finally:
            f.close()

    # ---- the thread --------------------------------------------------------
    tid = property(lambda self: self.ident.tid)
    tgid = property(lambda self: self.ident.tgid)
    comm = property(lambda self: self.ident.comm)
    is_sched = property(lambda self: bool(self.attr.context_switch))

    def sample_id_size(self):
        st = self.attr.sample_type
        return 8 * sum(1 for bit in (SAMPLE_TID, SAMPLE_TIME, SAMPLE_ID, SAMPLE_STREAM_ID,
                                     SAMPLE_CPU, SAMPLE_IDENTIFIER) if st & bit)

    def _copy(self, pos, n):
        mask = self.data_size - 1
        off = pos & mask
        if off + n <= self.data_size:
            return self._ring[off:off + n]
        return self._ring[off:] + self._ring[:n - (self.data_size - off)]

    def raw_records(self):
        """Every record in [data_tail, data_head), oldest first.

        Raises FormatError at a record whose size is below 8, not a multiple of
        8, or past data_head (after yielding the ones before it).
        """
        self._load()
        pos, head = self._start, self.data_head
        while pos < head:
            typ, misc, size = struct.unpack("<IHH", self._copy(pos, 8))
            if size < 8 or size % 8 or size > head - pos:
                raise FormatError("%s: records do not parse past position %d (a record of "
                                  "size %d)" % (self.name, pos, size))
            yield Record(typ, misc, size, pos, self._copy(pos, size))
            pos += size

    def records(self):
        """Every record, decoded (ringkeeper.records.decode: dicts as show --json prints)."""
        from .records import Decoder
        return Decoder(self).records()
