# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Hostile input: files built here from docs/format.md, then cut, bent and scrambled.
Whatever the bytes, the reader returns records or raises FormatError: never another
exception, never a read out of range, never a hang.

    PYTHONPATH=python python3 -m unittest discover -s python/tests -v

With RK_PY_SAMPLES=FILE[:FILE...] (real buffer files, cores or bundles), those are
mutated too (the integration test passes the files it recorded).
"""
import io
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

import ringkeeper
from ringkeeper import Buffer, Core, FormatError
from ringkeeper.show import show_json

PAGE = 4096
SAMPLE_ST = 0x2 | 0x4 | 0x80 | 0x10000  # TID | TIME | CPU | IDENTIFIER
SCHED_FLAGS = (1 << 18) | (1 << 25) | (1 << 26)  # sample_id_all, use_clockid, context_switch


def sample_id(pid, tid, t, cpu, res=0):
    return struct.pack("<IIQIIQ", pid, tid, t, cpu, res, 1 << 63)


def rec(typ, misc, body, sid):
    size = 8 + len(body) + len(sid)
    return struct.pack("<IHH", typ, misc, size) + body + sid


def sched_records(n=40, tid=101):
    out, t = [], 1000
    out.append(rec(7, 0, struct.pack("<IIIIQ", 100, 100, tid, 100, t), sample_id(100, tid, t, 0)))
    for i in range(n):
        t += 10
        out.append(rec(0x524C, 0, struct.pack("<IIII", 100, 100, 1, 0),
                       sample_id(100, tid, t, 1)))
        t += 5
        out.append(rec(14, 0, b"", sample_id(100, tid, t, i % 2)))
        t += 100
        out.append(rec(14, 0x2000, b"", sample_id(100, tid, t, i % 2, 0x80000001)))
    stack = struct.pack("<IIQ", 1, 0, 4) + struct.pack("<4Q", (1 << 64) - 128, 0xffffffff81000000,
                                                       (1 << 64) - 512, 0x401000)
    out.append(rec(0x524D, 0, stack, sample_id(100, tid, t, 0)))
    out.append(rec(4, 0, struct.pack("<IIIIQ", 100, 100, tid, 100, t + 1),
                   sample_id(100, tid, t + 1, 0)))
    return out


def make_buffer(records, data_size=2 * PAGE, tail=0, tid=101, comm=b"worker",
                attr=(1, 9, SAMPLE_ST, SCHED_FLAGS)):
    """A buffer file's bytes (a sched one unless @attr: type, config, sample_type, flags),
    the records written from position @tail on."""
    f = bytearray(PAGE + data_size)
    mask = data_size - 1
    pos = tail
    for r in records:
        for i, byte in enumerate(r):
            f[PAGE + ((pos + i) & mask)] = byte
        pos += len(r)
    head = pos
    assert head - tail <= data_size
    struct.pack_into("<QQQQ", f, 1024, head, tail, PAGE, data_size)
    struct.pack_into("<QQ", f, 1088, 1104, 136)
    a_type, a_config, a_st, a_flags = attr
    attr = bytearray(136)
    struct.pack_into("<IIQQQQQ", attr, 0, a_type, 136, a_config, 0, a_st, 0, a_flags)
    struct.pack_into("<i", attr, 92, 1)
    f[1104:1240] = attr
    ident = struct.pack("<QIIIIII16sQQiIIIQQ", 0x504545474B474E52, 2, 96, tid, 100, tid, 0,
                        comm, 500, 900, 0, 2, 0, 0, 0, 0)
    f[1240:1240 + 96] = ident
    return bytes(f)


def make_core(notes, description=None):
    """A notes-only ELF core (a bundle's layout): [(type, desc bytes)], then the text."""
    if description is not None:
        notes = notes + [(0x524B0003, description)]
    blob = b""
    for typ, desc in notes:
        blob += struct.pack("<III", 11, len(desc), typ) + b"RINGKEEPER\0\0"
        blob += desc + bytes(-len(desc) % 4)
    eh = bytearray(64)
    eh[:16] = b"\x7fELF\x02\x01\x01" + bytes(9)
    struct.pack_into("<HHIQQQIHHHHHH", eh, 16, 4, 62, 1, 0, 64, 0, 0, 64, 56, 1, 0, 0, 0)
    ph = struct.pack("<IIQQQQQQ", 4, 0, 120, 0, 0, len(blob), 0, 4)
    return bytes(eh) + ph + blob


def checksummed(core):
    """@core (make_core's: one PT_NOTE at 120) with a checksum note, as docs/format.md
    lays it out: the CRC32 of the headers and of each note, then of itself."""
    ranges, p = [(0, 120, 0)], 120
    while p < len(core):
        _nsz, dsz, typ = struct.unpack_from("<III", core, p)
        size = 24 + dsz + (-dsz % 4)
        ranges.append((p, size, typ))
        p += size
    desc_size = 12 + 24 * len(ranges)
    core = bytearray(core)
    struct.pack_into("<Q", core, 64 + 32, len(core) - 120 + 24 + desc_size)
    desc = struct.pack("<II", 1, len(ranges))
    for off, size, typ in ranges:
        desc += struct.pack("<QQII", off, size, zlib.crc32(bytes(core[off:off + size])), typ)
    head = struct.pack("<III", 11, len(desc) + 4, 0x524B0006) + b"RINGKEEPER\0\0"
    return bytes(core) + head + desc + struct.pack("<I", zlib.crc32(head + desc))


def read_all(obj):
    """Everything a reader can be asked of @obj: decoded records, show's document, runs."""
    if isinstance(obj, Core):
        for cb in obj.buffers:
            if cb.buffer is not None:
                read_all(cb.buffer)
        return
    list(obj.records())
    show_json(obj, io.StringIO())
    ringkeeper.runs(obj)


class Hostile(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.n = 0

    def tearDown(self):
        self.dir.cleanup()

    def write(self, data):
        self.n += 1
        p = os.path.join(self.dir.name, "f%d" % self.n)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def survives(self, data, opener=Buffer.open):
        """@data opens and reads whole, or raises FormatError; returns which."""
        p = self.write(data)
        t0 = time.monotonic()
        try:
            read_all(opener(p))
            ok = True
        except FormatError:
            ok = False
        self.assertLess(time.monotonic() - t0, 10, "took too long")
        os.unlink(p)
        return ok

    def rejects(self, data, why):
        p = self.write(data)
        with self.assertRaises(FormatError) as cm:
            read_all(Buffer.open(p))
        self.assertIn(why, str(cm.exception))

    # ---- the good files first: the builder agrees with the reader ----------
    def test_good_file_reads(self):
        buf = Buffer.open(self.write(make_buffer(sched_records())))
        recs = list(buf.records())
        self.assertEqual(recs[0]["type"], "PERF_RECORD_FORK")
        self.assertEqual(recs[1]["detail"], "woken by tid 100 (pid 100), target cpu 1")
        self.assertEqual(recs[3]["detail"], "OUT sleeping")
        self.assertEqual(recs[-2]["kernel"], [{"ip": "0xffffffff81000000"}])
        self.assertEqual(len(ringkeeper.runs(buf)), 40)
        self.assertEqual(buf.comm, "worker")

    def test_a_record_wrapping_past_the_ring_end_is_read_whole(self):
        recs = sched_records(n=30)
        for tail in (0, 8, 4000, 8192 - 16, 8192 - 8, 3 * 8192 + 24):
            buf = Buffer.open(self.write(make_buffer(recs, tail=tail)))
            self.assertEqual([r.raw for r in buf.raw_records()], recs, "tail %d" % tail)

    # ---- page 0 ------------------------------------------------------------
    def test_page0_fields_out_of_range_are_refused(self):
        good = make_buffer(sched_records())

        def bent(off, fmt, v):
            b = bytearray(good)
            struct.pack_into(fmt, b, off, v)
            return bytes(b)
        cases = [
            (bent(1088, "<Q", 1096), "pmu_offset"),
            (bent(1088, "<Q", 1108), "pmu_offset"),
            (bent(1088, "<Q", 1 << 63), "pmu_offset"),
            (bent(1096, "<Q", 4000), "pmu_size"),
            (bent(1096, "<Q", (1 << 64) - 8), "pmu_size"),
            (bent(1096, "<Q", 8), "pmu_size"),
            (bent(1096, "<Q", 2900), "identity"),
            (bent(1240, "<Q", 0), "no ringkeeper identity"),
            (bent(1248, "<I", 1), "older ringkeeper"),
            (bent(1248, "<I", 3), "unknown version"),
            (bent(1252, "<I", 95), "unknown version"),
            (bent(1108, "<I", 200), "attr.size"),
            (bent(1108, "<I", 8), "attr.size"),
            (bent(1040, "<Q", 0), "data area"),
            (bent(1048, "<Q", 3 * PAGE), "data area"),
            (bent(1048, "<Q", 4 * PAGE), "data area"),
            (bent(1048, "<Q", 1 << 63), "data area"),
            (bent(1048, "<Q", 0), "data area"),
            (bent(1080, "<Q", PAGE), "aux area"),
            (bent(1024, "<Q", 1 << 40), "exceeds data_size"),
            (bent(1032, "<Q", 1 << 40), "behind data_tail"),
            (bent(1024, "<Q", 12), "8-byte aligned"),
            (bent(1032, "<Q", (1 << 64) - 8), "behind data_tail"),
        ]
        for data, why in cases:
            with self.subTest(why=why):
                self.rejects(data, why)
        b = bytearray(good)
        struct.pack_into("<QQ", b, 1024, 20, 4)
        self.rejects(bytes(b), "8-byte aligned")

    def test_a_record_of_size_0_or_past_head_stops_the_walk(self):
        recs = sched_records(n=3)
        for bad in (struct.pack("<IHH", 14, 0, 0), struct.pack("<IHH", 14, 0, 12),
                    struct.pack("<IHH", 14, 0, 65528), struct.pack("<IHH", 14, 0, 4)):
            data = make_buffer(recs[:2] + [bad + bytes(24)] + recs[2:])
            buf = Buffer.open(self.write(data))
            got = []
            with self.assertRaises(FormatError):
                for r in buf.records():
                    got.append(r)
            self.assertEqual(len(got), 2)

    def test_odd_records_are_described_not_trusted(self):
        sid = sample_id(100, 101, 5, 0)
        recs = [
            rec(0x524D, 0, struct.pack("<IIQ", 1, 0, 1) + struct.pack("<Q", 0x400000), sid),
            rec(0x524D, 0, struct.pack("<IIQ", 1, 0, 1 << 60), sid),
            rec(0x524D, 0, struct.pack("<IIQ", 1, 0, 2) + struct.pack("<2Q", (1 << 64) - 128,
                                                                      (1 << 64) - 2048), sid),
            rec(0x524C, 0, b"", b""),
            rec(3, 0, b"", b""),
            rec(10, 0, bytes(64) + b"/lib/x.so\0\0\0\0\0\0\0", sid),
            rec(0x524E, 0, b"", b""),
            rec(0x7777, 0, b"", sid),
            rec(9, 0, b"", b""),
            rec(10, 0, bytes(64) + b"y" * 16, b""),
        ]
        buf = Buffer.open(self.write(make_buffer(recs)))
        out = list(buf.records())
        self.assertEqual([d["detail"] for d in out[:3]], ["does not parse (size 64)",
                                                          "does not parse (size 56)",
                                                          "does not parse (size 72)"])
        self.assertEqual(out[3]["detail"], "")
        self.assertEqual(out[4]["detail"], "worker")
        self.assertEqual(out[5]["detail"], "[0x0(0x0)]: /lib/x.so")
        self.assertEqual(out[9]["detail"], "[0x0(0x0)]: ?")
        self.assertEqual(out[6]["detail"], "trigger (short record)")
        self.assertEqual(out[7]["detail"], "type 30583 size 40")
        self.assertEqual(out[8], {"type": "PERF_RECORD_SAMPLE", "error": "truncated"})

    # ---- cut and scrambled: nothing but FormatError ------------------------
    def test_every_truncation(self):
        data = make_buffer(sched_records(n=5))
        for n in list(range(0, PAGE + 64, 61)) + list(range(PAGE, len(data), 97)):
            with self.subTest(n=n):
                self.assertFalse(self.survives(data[:n]))

    def test_random_mutations(self):
        rng = random.Random(42)
        good = make_buffer(sched_records(n=20))
        hot = list(range(1024, 1104)) + list(range(1104, 1240, 4)) + list(range(1240, 1336))
        ok = 0
        for i in range(600):
            b = bytearray(good)
            for _ in range(rng.randint(1, 8)):
                where = rng.choice(hot) if rng.random() < 0.5 else rng.randrange(PAGE, len(b))
                b[where] = rng.randrange(256)
            ok += self.survives(bytes(b))
        self.assertGreater(ok, 0)

    def test_a_fifo_does_not_hang(self):
        p = os.path.join(self.dir.name, "fifo")
        os.mkfifo(p)
        with self.assertRaises(FormatError):
            Buffer.open(p)
        with self.assertRaises(FormatError):
            ringkeeper.open(p)

    # ---- cores and bundles -------------------------------------------------
    def good_core(self):
        buf = make_buffer(sched_records(n=5))
        return make_core([(0x524B0001, buf), (0x524B0002, buf), (0x524B0001, buf)],
                         b"bundle 1\nsession s\nbuffer 1 sched/101\nbuffer 0 cpu-clock/101\n"
                         b"buffer 7 sched/7\nbuffer -1 x/1\n")

    def test_core_reads_and_names_buffer_notes(self):
        core = Core(self.write(self.good_core()))
        self.assertEqual([cb.name for cb in core.buffers], ["cpu-clock/101", "", "sched/101"])
        self.assertIs(core.find(101, "sched"), core.buffers[2])
        self.assertIs(core.find(101, "cpu-clock"), core.buffers[0])
        self.assertEqual(core.desc_value("session"), "s")

    def test_core_truncations_and_mutations(self):
        good = self.good_core()
        for n in range(0, len(good), 173):
            self.survives(good[:n], Core)
        rng = random.Random(7)
        for i in range(300):
            b = bytearray(good)
            for _ in range(rng.randint(1, 6)):
                b[rng.randrange(0, 200) if rng.random() < 0.6 else rng.randrange(len(b))] = \
                    rng.randrange(256)
            self.survives(bytes(b), Core)

    def test_a_bundle_with_a_flipped_byte_is_refused_saying_where(self):
        good = checksummed(make_core([(0x524B0001, make_buffer(sched_records(n=5)))],
                                     b"bundle 1\nsession s\nchecksum crc32\nbuffer 0 sched/101\n"))
        self.assertEqual(Core(self.write(good)).find(101).buffer.tid, 101)
        for off in range(0, len(good), 5):
            b = bytearray(good)
            b[off] ^= 1
            try:
                core = Core(self.write(bytes(b)))
            except FormatError as e:
                msg = str(e)
                self.assertTrue("byte" in msg or "checksum note" in msg or "ELF" in msg,
                                "byte %d: %s" % (off, msg))
                continue
            # e_phnum or p_type changed: a core with no note at all, nothing read from it.
            self.assertEqual((core.buffers, core.description, core.symtabs), ([], None, []),
                             "a flipped byte at %d was not seen" % off)
        # The description says it has checksums: with the last note of another type, damaged.
        b = bytearray(good)
        struct.pack_into("<I", b, len(b) - (24 + 12 + 24 * 3) + 8, 0x524B0099)
        with self.assertRaisesRegex(FormatError, "checksum note .* missing"):
            Core(self.write(bytes(b)))

    def test_core_headers_out_of_range(self):
        good = self.good_core()
        for off, fmt, v in ((32, "<Q", 1 << 62), (56, "<H", 0xFFFF), (56, "<H", 60000),
                            (64 + 8, "<Q", 1 << 62), (64 + 32, "<Q", 1 << 62),
                            (120, "<I", 0xFFFFFFF0), (124, "<I", 0xFFFFFFF0)):
            b = bytearray(good)
            struct.pack_into(fmt, b, off, v)
            with self.subTest(off=off, v=v):
                self.assertFalse(self.survives(bytes(b), Core))

    # ---- a tracepoint's fields, from the session's tracing_data -------------
    FORMAT = (b"name: demo\nID: 77\nformat:\n"
              b"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
              b"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
              b"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
              b"\tfield:void * ptr;\toffset:32;\tsize:8;\tsigned:0;\n"
              b"\tfield:__data_loc char[] name;\toffset:40;\tsize:4;\tsigned:0;\n"
              b"\tfield:u8 blob[3];\toffset:44;\tsize:3;\tsigned:0;\n"
              b"\tfield:int far;\toffset:4000;\tsize:4;\tsigned:1;\n")

    def tracing_data(self, fmt):
        hdr = b"header_page\0" + struct.pack("<Q", 3) + b"abc"
        hdr += b"header_event\0" + struct.pack("<Q", 0)
        return (b"\x17\x08\x44tracing" + b"0.6\0" + b"\0\x08" + struct.pack("<I", 4096) + hdr
                + struct.pack("<I", 0) + struct.pack("<I", 1) + b"demo\0" + struct.pack("<I", 1)
                + struct.pack("<Q", len(fmt)) + fmt + bytes(16))

    def tracepoint_session(self, blob, raw):
        d = os.path.join(self.dir.name, "s%d" % self.n)
        self.n += 1
        os.makedirs(os.path.join(d, "demo:demo"))
        with open(os.path.join(d, "tracing_data"), "wb") as f:
            f.write(blob)
        st = 0x2 | 0x4 | 0x80 | 0x100 | 0x400  # TID TIME CPU PERIOD RAW
        body = struct.pack("<IIQIIQI", 100, 101, 5, 0, 0, 1, len(raw)) + raw
        body += bytes(-(8 + len(body)) % 8)
        sample = struct.pack("<IHH", 9, 0, 8 + len(body)) + body
        p = os.path.join(d, "demo:demo", "101")
        with open(p, "wb") as f:
            f.write(make_buffer([sample], attr=(2, 77, st, 1 << 18)))
        return p

    def test_tracepoint_fields(self):
        raw = bytearray(52)
        raw[8:14] = b"work\x01r"
        struct.pack_into("<i", raw, 24, -5)
        struct.pack_into("<QI", raw, 32, 0xffff800000001000, (4 << 16) | 48)
        raw[44:47] = b"\x01\x02\x03"
        raw[48:52] = b"abc\0"
        p = self.tracepoint_session(self.tracing_data(self.FORMAT), bytes(raw))
        out = io.StringIO()
        self.assertIsNone(show_json(Buffer.open(p), out, p))
        import json
        rec = json.loads(out.getvalue())["records"][0]
        self.assertEqual(rec["fields"], {"comm": "work?r", "pid": -5,
                                         "ptr": "0xffff800000001000", "name": "abc",
                                         "blob": "010203"})
        self.assertEqual(list(rec)[6:8], ["event", "fields"])

    def test_tracing_data_mutated(self):
        rng = random.Random(3)
        good = self.tracing_data(self.FORMAT)
        for i in range(200):
            b = bytearray(good)
            for _ in range(rng.randint(1, 5)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            raw = bytes(rng.randrange(256) for _ in range(rng.choice((0, 8, 30, 52, 64))))
            p = self.tracepoint_session(bytes(b[:rng.randrange(len(b) + 1)]), raw)
            show_json(Buffer.open(p), io.StringIO(), p)

    # ---- the command line: a message, never a traceback --------------------
    def test_cli_on_garbage(self):
        p = self.write(os.urandom(9000))
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ringkeeper.__file__)))
        r = subprocess.run([sys.executable, "-m", "ringkeeper", "show", "--json", p], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a valid ringkeeper file", r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    # ---- real files, if the caller gave some -------------------------------
    def test_real_files_mutated(self):
        paths = [p for p in os.environ.get("RK_PY_SAMPLES", "").split(":") if p]
        if not paths:
            self.skipTest("RK_PY_SAMPLES not set")
        rng = random.Random(1)
        for path in paths:
            with open(path, "rb") as f:
                good = f.read()
            opener = Core if good[:4] == b"\x7fELF" else Buffer.open
            self.assertTrue(self.survives(good, opener), path)
            cuts = sorted({rng.randrange(len(good)) for _ in range(20)} | {0, 63, 4095, 4097})
            for n in cuts:
                self.survives(good[:n], opener)
            for i in range(60):
                b = bytearray(good)
                for _ in range(rng.randint(1, 8)):
                    b[rng.randrange(min(len(b), 8192)) if rng.random() < 0.7
                      else rng.randrange(len(b))] = rng.randrange(256)
                self.survives(bytes(b), opener)


if __name__ == "__main__":
    unittest.main()
