# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A session's tracing_data (perf's tracing-data layout, docs/format.md) and a
tracepoint's format: the fields of a sample's RAW data, as show prints them."""
import os
import re
import struct

from .buffer import FormatError, OpenFile, Source

MAGIC = b"\x17\x08\x44tracing"
TRACEDATA_MAX = 16 << 20
MAX_FIELDS = 64
TRACEFS_DIRS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")


class _Rd:
    def __init__(self, b):
        self.b, self.off = b, 0

    def take(self, n):
        if n > len(self.b) - self.off:
            raise FormatError("tracing_data: truncated")
        v = self.b[self.off:self.off + n]
        self.off += n
        return v

    def u(self, n):
        return int.from_bytes(self.take(n), "little")

    def cstr(self):
        i = self.b.find(b"\0", self.off)
        if i < 0:
            raise FormatError("tracing_data: a string with no end")
        s = self.b[self.off:i]
        self.off = i + 1
        return s


def _format_id(text):
    """The N of a format text's "ID: N" line (strtoll: 0 if no digits), or None."""
    for line in text.split(b"\n"):
        if 4 < len(line) < 32 and line.startswith(b"ID: "):
            m = re.match(rb"[ \t\n\v\f\r]*([+-]?[0-9]*)", line[4:])
            try:
                return int(m.group(1))
            except ValueError:
                return 0
    return None


def format_in(blob, tp_id):
    """The format text of tracepoint @tp_id in @blob, or None (as rk_tracedata_format())."""
    r = _Rd(blob)
    try:
        if r.take(len(MAGIC)) != MAGIC:
            return None
        r.cstr()
        r.take(6)
        for _ in range(2):
            r.cstr()
            r.take(r.u(8))
        for _ in range(r.u(4)):
            r.take(r.u(8))
        for _ in range(r.u(4)):
            r.cstr()
            for _ in range(r.u(4)):
                t = r.take(r.u(8))
                if _format_id(t) == tp_id:
                    return t
    except FormatError:
        return None
    return None


class Field:
    __slots__ = ("name", "type", "offset", "size", "signed", "data_loc", "string", "pointer")


_OFF = re.compile(rb"offset:[ \t\n\v\f\r]*([+-]?[0-9]+);\tsize:[ \t\n\v\f\r]*([+-]?[0-9]+);"
                  rb"(?:\tsigned:[ \t\n\v\f\r]*([+-]?[0-9]+);)?")


def _u32(s):
    v = int(s)
    return v % (1 << 32) if v < 0 else min(v, (1 << 32) - 1)


def _field(line):
    """'\\tfield:DECL;\\toffset:N;\\tsize:N;\\tsigned:N;' as a Field, or None."""
    if len(line) >= 512:
        return None
    i = line.find(b"field:")
    if i < 0:
        return None
    decl = line[i + 6:]
    semi = decl.find(b";")
    if semi < 0:
        return None
    rest, decl = decl[semi + 1:], decl[:semi]
    j = rest.find(b"offset:")
    m = _OFF.match(rest[j:]) if j >= 0 else None
    if not m:
        return None
    decl = decl.rstrip(b" \t\n\v\f\r")
    sp = decl.rfind(b" ")
    if sp < 0:
        return None
    typ, name = decl[:sp], decl[sp + 1:]
    f = Field()
    br = name.find(b"[")
    f.string = br >= 0 and b"char" in typ
    if br >= 0:
        name = name[:br]
    f.name = name[:63].decode("latin-1")
    f.type = typ[:95].decode("latin-1")
    f.offset, f.size = _u32(m.group(1)), _u32(m.group(2))
    f.signed = bool(m.group(3)) and int(m.group(3)) != 0
    f.data_loc = typ.startswith(b"__data_loc")
    if f.data_loc:
        f.string = b"char" in typ
    f.pointer = b"*" in typ
    return f


def parse_format(text):
    """A format text's fields (common_* left out, at most 64), or None without an ID."""
    if _format_id(text) is None:
        return None
    fields = []
    for line in text.split(b"\n"):
        if line.startswith(b"name: "):
            continue
        f = _field(line) if len(fields) < MAX_FIELDS else None
        if f and not f.name.startswith("common_"):
            fields.append(f)
    return fields


def lookup(session_dir, sys_event, tp_id):
    """The fields of tracepoint @tp_id: from @session_dir's tracing_data, else from this
    machine's tracefs if its @sys_event ("sched:sched_wakeup") has that id; or None."""
    if session_dir:
        try:
            f = OpenFile(os.path.join(session_dir, "tracing_data"))
            try:
                size = f.size
                blob = Source(f, 0, size, "tracing_data").read(0, size) if (
                    0 < size <= TRACEDATA_MAX) else b""
            finally:
                f.close()
            t = format_in(blob, tp_id) if blob else None
            if t is not None:
                return parse_format(t)
        except (OSError, FormatError):
            pass
    if sys_event and ":" in sys_event:
        sysn, ev = sys_event.split(":", 1)
        for d in TRACEFS_DIRS:
            if os.path.exists(os.path.join(d, "events")):
                try:
                    with open(os.path.join(d, "events", sysn, ev, "format"), "rb") as f:
                        t = f.read(1 << 20)
                except (OSError, ValueError):
                    return None
                if _format_id(t) == tp_id:
                    return parse_format(t)
                return None
    return None


def _string(b):
    out = []
    for c in b[:255]:
        if not c:
            break
        out.append(chr(c) if 0x20 <= c < 0x7F else "?")
    return "".join(out)


def field_values(fields, raw):
    """show --json's "fields" object of a sample's RAW data."""
    out = {}
    n = len(raw)
    for f in fields:
        if f.offset + f.size > n:
            continue
        p = raw[f.offset:f.offset + f.size]
        if f.data_loc and f.size == 4:
            (loc,) = struct.unpack("<I", p)
            o, ln = loc & 0xFFFF, loc >> 16
            out[f.name] = _string(raw[o:o + ln]) if o + ln <= n and f.string else None
        elif f.string:
            out[f.name] = _string(p)
        elif f.size in (1, 2, 4, 8):
            v = int.from_bytes(p, "little")
            if f.pointer or (not f.signed and f.size == 8):
                out[f.name] = "0x%x" % v
            elif f.signed:
                out[f.name] = int.from_bytes(p, "little", signed=True)
            else:
                out[f.name] = v
        else:
            out[f.name] = p[:64].hex()
    return out
