# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""An ELF core with RINGKEEPER notes, or a snapshot bundle (a notes-only core):
docs/format.md, "A core dump's buffers" and "A snapshot bundle".
"""
import os
import re
import struct
import zlib

from .buffer import PAGE, Buffer, FormatError, OpenFile, Source

NOTE_OWNER = b"RINGKEEPER\0"
NOTE_BUFFER, NOTE_SIDEBAND, NOTE_SESSION, NOTE_SYMTAB, NOTE_TRACEDATA, NOTE_CHECKSUM = (
    0x524B0001, 0x524B0002, 0x524B0003, 0x524B0004, 0x524B0005, 0x524B0006)
# What a checksummed range holds (its note type; 0: the ELF and program headers).
_RANGE_WHAT = {0: "the ELF and program headers", NOTE_BUFFER: "a thread's buffer",
               NOTE_SIDEBAND: "a process's sideband", NOTE_SESSION: "the description",
               NOTE_SYMTAB: "a mapped file's symbol table", NOTE_TRACEDATA: "the tracing data"}
MAX_BUFS = 65536
PT_NOTE = 4
ET_CORE = 4
PN_XNUM = 0xFFFF

# sscanf(line, "buffer %lu %79s"): strtoul's sign included ("-0" is 0, "-1" is huge).
_BUFFER_LINE = re.compile(
    rb"buffer[ \t\n\v\f\r]*([+-]?)([0-9]+)[ \t\n\v\f\r]*([^ \t\n\v\f\r]{1,79})")


def _align4(x):
    return (x + 3) & ~3


class CoreBuffer:
    """One buffer note: its name ("sched/TID", or "" if the description names none),
    its kind (NOTE_BUFFER or NOTE_SIDEBAND), and the Buffer, or why it is not one."""

    def __init__(self, kind, src):
        self.kind, self.name, self.size = kind, "", src.size
        self.buffer, self.why = None, None
        if src.size < PAGE:
            self.why = "smaller than a page"
            return
        try:
            self.buffer = Buffer(src, lazy=True)
        except FormatError as e:
            msg = str(e)
            self.why = msg.split(": ", 1)[1] if msg.startswith(src.name + ": ") else msg

    def __repr__(self):
        return "CoreBuffer(%r, %s)" % (self.name, self.why or "tid %d" % self.buffer.tid)


class Core:
    """The RINGKEEPER notes of a core or bundle: .buffers (CoreBuffer, in note order,
    sideband notes included), .description (the 0x524b0003 text), .symtabs and
    .tracing_data (raw bytes), .skipped (buffer notes past the 65,536 a reader takes).
    A bundle is checked against its checksum note first: a damaged one raises
    FormatError saying which bytes and what they hold.

    A buffer's records are read from the file when first asked for: it stays open
    while the Core or one of its buffers is referred to, or until close()."""

    def __init__(self, path):
        self.path = os.fsdecode(path)
        self.buffers, self.description, self.symtabs = [], None, []
        self.tracing_data, self.skipped, self._checksum = None, 0, None
        self._file = OpenFile(path, follow=True)
        try:
            src = Source(self._file, 0, self._file.size, self.path)
            self._read(src)
            self._verify(src)
            self._name_buffers()
        except BaseException:
            self.close()
            raise

    def close(self):
        """Close the file now (else: when neither the Core nor a buffer of it is used)."""
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read(self, f):
        if f.size < 64:
            raise FormatError("%s: not a regular file of an ELF header's size" % f.name)
        eh = f.read(0, 64)
        e_type, _mach, _ver, _entry, phoff, shoff = struct.unpack_from("<HHIQQQ", eh, 16)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        if eh[:4] != b"\x7fELF" or eh[4] != 2 or e_type != ET_CORE or phentsize != 56:
            raise FormatError("%s: not an ELF64 core (its ELF header, bytes 0 to 63, says "
                              "otherwise)" % f.name)
        if phnum == PN_XNUM:
            if not shoff or f.size < 64 or shoff > f.size - 64:
                raise FormatError("%s: PN_XNUM without a section header 0" % f.name)
            (phnum,) = struct.unpack_from("<I", f.read(shoff, 64), 44)
        if phoff > f.size or phnum > (f.size - phoff) // 56:
            raise FormatError("%s: program headers out of the file (the ELF header's e_phoff "
                              "or e_phnum)" % f.name)
        for i in range(phnum):
            if i % 1024 == 0:
                table = f.read(phoff + 56 * i, 56 * min(1024, phnum - i))
            p_type, _fl, p_offset, _va, _pa, p_filesz = struct.unpack_from(
                "<IIQQQQ", table, 56 * (i % 1024))
            if p_type != PT_NOTE:
                continue
            if p_offset > f.size or p_filesz > f.size - p_offset:
                raise FormatError("%s: a note segment out of the file (program header %d at "
                                  "byte %d: offset %d, size %d, the file has %d bytes)"
                                  % (f.name, i, phoff + 56 * i, p_offset, p_filesz, f.size))
            self._walk(f, p_offset, p_offset + p_filesz)

    def _walk(self, f, p, end):
        while end - p >= 12:
            namesz, descsz, typ = struct.unpack("<III", f.read(p, 12))
            name = p + 12
            desc = name + _align4(namesz)
            if _align4(namesz) > end - name or descsz > end - desc:
                raise FormatError("%s: a corrupt note at byte %d: its name (%d bytes) or desc "
                                  "(%d bytes) runs past its segment's end at byte %d"
                                  % (f.name, p, namesz, descsz, end))
            if namesz == len(NOTE_OWNER) and f.read(name, namesz) == NOTE_OWNER:
                self._note(f, typ, desc, descsz)
            # The last note's padding may be cut by the segment's end.
            if _align4(descsz) >= end - desc:
                break
            p = desc + _align4(descsz)

    def _note(self, f, typ, desc, size):
        if typ == NOTE_SESSION:
            if self.description is None:
                text = f.read(desc, size)
                nul = text.find(b"\0")
                self.description = (text if nul < 0 else text[:nul]).decode("latin-1")
        elif typ == NOTE_SYMTAB:
            if size and len(self.symtabs) < MAX_BUFS:
                self.symtabs.append(f.read(desc, size))
        elif typ == NOTE_TRACEDATA:
            if size and self.tracing_data is None:
                self.tracing_data = f.read(desc, size)
        elif typ == NOTE_CHECKSUM:
            if size and self._checksum is None:
                self._checksum = f.read(desc, size)
        elif typ in (NOTE_BUFFER, NOTE_SIDEBAND):
            if len(self.buffers) == MAX_BUFS:
                self.skipped += 1
                return
            self.buffers.append(CoreBuffer(typ, Source(f.file, desc, size, "%s: note %d" % (
                f.name, len(self.buffers)))))

    def _verify(self, f):
        """The file against its checksum note (docs/format.md, "A snapshot bundle")."""
        c = self._checksum
        if c is None:
            d = self.description or ""
            if d.startswith("bundle ") and "\nchecksum crc32\n" in d:
                raise FormatError("%s: damaged: its checksum note (the last one) is missing or "
                                  "not readable, though its description says it has one"
                                  % f.name)
            return
        if len(c) < 12:
            raise FormatError("%s: damaged: its checksum note is shorter than its header"
                              % f.name)
        ver, n = struct.unpack_from("<II", c, 0)
        if ver != 1 or len(c) != 12 + 24 * n:
            raise FormatError("%s: damaged: its checksum note is not one (its version or its "
                              "size)" % f.name)
        # The file's last bytes; its CRC32 is of its note header, owner and desc before it.
        if f.size < len(c) + 24 or f.read(f.size - len(c), len(c)) != c:
            raise FormatError("%s: damaged: its checksum note is not its last bytes" % f.name)
        if zlib.crc32(f.read(f.size - len(c) - 24, len(c) + 20)) != \
                struct.unpack_from("<I", c, len(c) - 4)[0]:
            raise FormatError("%s: damaged: its checksum note (its last bytes) does not match "
                              "its own CRC32" % f.name)
        nxt = 0
        for i in range(n):
            off, ln, crc, typ = struct.unpack_from("<QQII", c, 8 + 24 * i)
            if off != nxt or ln > f.size or off > f.size - ln:
                raise FormatError("%s: damaged: its checksum note's ranges do not follow each "
                                  "other within the file" % f.name)
            nxt, v, p = off + ln, 0, off
            while p < nxt:
                k = min(1 << 20, nxt - p)
                v = zlib.crc32(f.read(p, k), v)
                p += k
            if v != crc:
                raise FormatError(
                    "%s: damaged: bytes %d to %d (range %d of %d: %s) do not match the CRC32 "
                    "it was written with: the file changed after it was written (copy it "
                    "again from where it was made)"
                    % (f.name, off, nxt - 1, i + 1, n,
                       _RANGE_WHAT.get(typ, "a note of an unknown type")))

    def _name_buffers(self):
        bufs = [b for b in self.buffers if b.kind == NOTE_BUFFER]
        for line in (self.description or "").encode("latin-1").split(b"\n"):
            if len(line) >= 128 or not line.startswith(b"buffer "):
                continue
            m = _BUFFER_LINE.match(line)
            if not m:
                continue
            n = int(m.group(2))
            if m.group(1) == b"-":
                n = -n % (1 << 64)
            if n < len(bufs):
                bufs[n].name = m.group(3).decode("latin-1")
        for cb in self.buffers:
            if cb.buffer is not None:
                cb.buffer.name = cb.name

    def desc_value(self, key):
        """A "key value" line of the description: its value, or None."""
        for line in (self.description or "").split("\n"):
            if line.startswith(key + " ") and len(line) > len(key) + 1:
                return line[len(key) + 1:]
        return None

    def find(self, tid, event="sched"):
        """The buffer note show --core would take for @tid and @event (SOURCE/TID), or None."""
        for cb in self.buffers:
            if cb.why or cb.kind != NOTE_BUFFER or cb.buffer.tid != tid:
                continue
            if cb.name:
                if cb.name == "%s/%d" % (event, tid):
                    return cb
            elif event == "sched" and cb.buffer.attr.context_switch:
                return cb
        return None

    def threads(self, event="sched"):
        """The valid buffers of @event (None: all sources), in note order."""
        for cb in self.buffers:
            if cb.why or cb.kind != NOTE_BUFFER:
                continue
            src = cb.name.split("/", 1)[0] if cb.name else (
                "sched" if cb.buffer.attr.context_switch else None)
            if event is None or src == event:
                yield cb.buffer
