# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Records decoded as `ringkeeper show --json` prints them (docs/format.md,
"Records of a sched file", "Records of an -e file"), without symbols: an
address is {"ip": "0x..."} where show adds "sym" and "dso".
"""
import struct

from .buffer import (FormatError, SAMPLE_CALLCHAIN, SAMPLE_CPU, SAMPLE_ID, SAMPLE_IDENTIFIER,
                     SAMPLE_IP, SAMPLE_PERIOD, SAMPLE_RAW, SAMPLE_STREAM_ID, SAMPLE_TID,
                     SAMPLE_TIME, cstr)

# perf's record types (linux/perf_event.h) and ringkeeper's own
RECORD_MMAP, RECORD_LOST, RECORD_COMM, RECORD_EXIT = 1, 2, 3, 4
RECORD_THROTTLE, RECORD_UNTHROTTLE, RECORD_FORK, RECORD_READ, RECORD_SAMPLE = 5, 6, 7, 8, 9
RECORD_MMAP2, RECORD_AUX, RECORD_ITRACE_START, RECORD_SWITCH = 10, 11, 12, 14
RK_RECORD_CRASH, RK_RECORD_WAKEUP, RK_RECORD_STACK, RK_RECORD_TRIGGER = (
    0x524B, 0x524C, 0x524D, 0x524E)

TYPE_NAMES = {
    RECORD_SWITCH: "PERF_RECORD_SWITCH",
    RECORD_COMM: "PERF_RECORD_COMM",
    RECORD_EXIT: "PERF_RECORD_EXIT",
    RECORD_FORK: "PERF_RECORD_FORK",
    RECORD_LOST: "PERF_RECORD_LOST",
    RECORD_SAMPLE: "PERF_RECORD_SAMPLE",
    RECORD_MMAP2: "PERF_RECORD_MMAP2",
    RECORD_THROTTLE: "PERF_RECORD_THROTTLE",
    RECORD_UNTHROTTLE: "PERF_RECORD_UNTHROTTLE",
    RECORD_AUX: "PERF_RECORD_AUX",
    RECORD_ITRACE_START: "PERF_RECORD_ITRACE_START",
    RK_RECORD_CRASH: "RINGKEEPER_CRASH",
    RK_RECORD_WAKEUP: "RINGKEEPER_WAKEUP",
    RK_RECORD_TRIGGER: "RINGKEEPER_TRIGGER",
    RK_RECORD_STACK: "RINGKEEPER_STACK",
}

MISC_COMM_EXEC = 0x2000
MISC_SWITCH_OUT = 0x2000
MISC_SWITCH_OUT_PREEMPT = 0x4000

SWITCH_STATE = 0x80000000
SWITCH_PREEMPTED = 0x40000000

OFFCPU_NAMES = ("preempted", "sleeping", "blocked", "idle", "stopped", "dead", "unknown")

CONTEXT_KERNEL = (1 << 64) - 128
CONTEXT_USER = (1 << 64) - 512
CONTEXT_MAX = (1 << 64) - 4095
STACK_READ_MAX = 256

# glibc's sigabbrev_np() on Linux (x86-64, arm64)
SIGNAMES = {1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 5: "TRAP", 6: "ABRT", 7: "BUS", 8: "FPE",
            9: "KILL", 10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM",
            16: "STKFLT", 17: "CHLD", 18: "CONT", 19: "STOP", 20: "TSTP", 21: "TTIN",
            22: "TTOU", 23: "URG", 24: "XCPU", 25: "XFSZ", 26: "VTALRM", 27: "PROF",
            28: "WINCH", 29: "IO", 30: "PWR", 31: "SYS"}

DETAIL_MAX = 159  # show's detail buffer: 160 bytes with its NUL
EVENT_MAX = 63


def offcpu_of(res):
    """Why a thread left the CPU, from a switch-out's sample_id.res (format.md's order)."""
    s = res & 0xFFFF
    if not res & SWITCH_STATE:
        return "unknown"
    if not s or res & SWITCH_PREEMPTED:
        return "preempted"
    if s & 0x80:
        return "dead"
    if s & (0x4 | 0x8):
        return "stopped"
    if s & 0x2 and s & 0x400:
        return "idle"
    if s & 0x2:
        return "blocked"
    return "sleeping"


# The codes of offcpu_of's classes, in format.md's (and sched's enum) order.
OFFCPU_CODES = {"preempted": 0, "sleeping": 1, "blocked": 2, "idle": 3, "stopped": 4,
                "dead": 5, "unknown": 6}

WAKEUP_NEW, WAKEUP_HIDDEN, WAKEUP_CTX = 0x1, 0x2, 0x4
WAKEUP_HARDIRQ, WAKEUP_SOFTIRQ, WAKEUP_NMI = 0x8, 0x10, 0x40


def wake_context(fl):
    """Where a wakeup ran: "hardirq", "softirq", "nmi", "task", or None (not recorded)."""
    if not fl & WAKEUP_CTX:
        return None
    if fl & WAKEUP_NMI:
        return "nmi"
    if fl & WAKEUP_HARDIRQ:
        return "hardirq"
    if fl & WAKEUP_SOFTIRQ:
        return "softirq"
    return "task"


def wakeup_detail(fl, ctx, wpid, wtid, tcpu):
    """show's text for a wakeup: who woke it, or which task an interrupt found running."""
    new = " (new)" if fl & WAKEUP_NEW else ""
    irq = {"hardirq": "hard irq", "softirq": "softirq", "nmi": "NMI"}.get(ctx)
    if fl & WAKEUP_HIDDEN:
        who = "another user's task (not shown at perf_event_paranoid > -1)"
    elif not wtid and irq:
        who = "the idle task"
    else:
        who = "tid %u (pid %u)" % (wtid, wpid)
    if irq:
        return "woken%s from %s (%s %s), target cpu %u" % (
            new, irq, "running on" if fl & WAKEUP_SOFTIRQ else "interrupted", who, tcpu)
    return "woken%s by %s, target cpu %u" % (new, who, tcpu)


def _addr(ip):
    return {"ip": "0x%x" % ip}


def parse_sample(st, raw):
    """A PERF_RECORD_SAMPLE of the layouts show reads: a dict, or an error string."""
    if st & ~(SAMPLE_IDENTIFIER | SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU
              | SAMPLE_PERIOD | SAMPLE_CALLCHAIN | SAMPLE_RAW):
        return "sample_type not supported by show"
    p, end = 8, len(raw)
    s = {"ip": 0, "pid": 0, "tid": 0, "time": 0, "cpu": 0, "period": 0, "chain": None,
         "raw": None}

    def take(fmt):
        nonlocal p
        n = struct.calcsize(fmt)
        if p + n > end:
            raise FormatError("truncated")
        v = struct.unpack_from(fmt, raw, p)
        p += n
        return v

    try:
        if st & SAMPLE_IDENTIFIER:
            take("<Q")
        if st & SAMPLE_IP:
            (s["ip"],) = take("<Q")
        if st & SAMPLE_TID:
            s["pid"], s["tid"] = take("<II")
        if st & SAMPLE_TIME:
            (s["time"],) = take("<Q")
        if st & SAMPLE_CPU:
            s["cpu"], _ = take("<II")
        if st & SAMPLE_PERIOD:
            (s["period"],) = take("<Q")
        if st & SAMPLE_CALLCHAIN:
            (nr,) = take("<Q")
            if nr > (end - p) // 8:
                return "truncated"
            s["chain"] = struct.unpack_from("<%dQ" % nr, raw, p)
            p += nr * 8
        if st & SAMPLE_RAW:
            (n,) = take("<I")
            if n > end - p:
                return "truncated"
            s["raw"] = raw[p:p + n]
    except FormatError:
        return "truncated"
    return s


def parse_stack(raw, id_size):
    """An RK_RECORD_STACK: (of, flags, kernel ips, user ips), or None if it does not parse."""
    if len(raw) < 24 + id_size:
        return None
    of, flags, nr = struct.unpack_from("<IIQ", raw, 8)
    if nr > (len(raw) - 24 - id_size) // 8:
        return None
    kern, user, into = [], [], None
    for (v,) in struct.iter_unpack("<Q", raw[24:24 + 8 * nr]):
        if v == CONTEXT_KERNEL:
            into = kern
        elif v == CONTEXT_USER:
            into = user
        elif v >= CONTEXT_MAX or into is None or len(into) >= STACK_READ_MAX:
            return None
        else:
            into.append(v)
    return of, flags, kern, user


def _fmt_g(v):
    return "%.3f" % v


_TRIGGER_KINDS = ("unknown", "operator", "delay", "blocked", "killed", "exit")


def trigger_fields(raw):
    """A trigger record's fields, as show --json's "trigger" object (None if short)."""
    if len(raw) < 32:
        return None
    kind, state, value, by_pid, by_tid = struct.unpack_from("<IIQII", raw, 8)
    return {"kind": _TRIGGER_KINDS[kind if kind < len(_TRIGGER_KINDS) else 0],
            "kind_code": kind, "value": value, "state": state, "by_pid": by_pid,
            "by_tid": by_tid}


def trigger_detail(raw):
    if len(raw) < 32:
        return "trigger (short record)"
    kind, state, value, by_pid, by_tid = struct.unpack_from("<IIQII", raw, 8)
    if kind == 1:
        return "trigger: operator (SIGUSR2 from pid %u)" % by_pid
    if kind == 2:
        return "trigger: waited %s ms for a CPU" % _fmt_g(value / 1e6)
    if kind == 3:
        return "trigger: off CPU in %s for %s s" % ("D" if state & 2 else "S",
                                                   _fmt_g(value / 1e9))
    if kind == 4:
        if by_pid:
            return "trigger: killed by signal %u, sent by pid %u tid %u" % (value, by_pid,
                                                                           by_tid)
        if state & 3:
            return "trigger: killed by signal %u, sent by %s" % (
                value, "the kernel" if state & 1 else "another user's task")
        return "trigger: killed by signal %u" % value
    if kind == 5:
        return "trigger: exit status %u" % value
    return "trigger of kind %u" % kind


def event_of(path):
    """The event a file's samples are of: the name of its directory (SESSION/EVENT/TID).
    @path: one char per byte (latin-1), as Buffer names are."""
    i = path.rfind("/")
    if i < 0:
        return ""
    return path[:i].rsplit("/", 1)[-1][:EVENT_MAX]


def _cut(s, n=DETAIL_MAX):
    return s if len(s) <= n else s[:n]


class Decoder:
    """A buffer's records as show --json's record objects (dicts, in its key order)."""

    def __init__(self, buf, path=None, tp_fields=None):
        self.buf = buf
        self.tp_fields = tp_fields
        self.st = buf.attr.sample_type
        self.id_size = buf.sample_id_size()
        self.comm = buf.ident.comm
        self.event = event_of(buf.name if path is None else path)

    def sample_id(self, raw):
        """(pid, tid, time, cpu, res): each None where the sample_id has no such field."""
        st, n = self.st, self.id_size
        out = [None] * 5
        if not self.buf.attr.sample_id_all or n + 8 > len(raw):
            return out
        p = len(raw) - n
        if st & SAMPLE_TID:
            out[0], out[1] = struct.unpack_from("<II", raw, p)
            p += 8
        if st & SAMPLE_TIME:
            (out[2],) = struct.unpack_from("<Q", raw, p)
            p += 8
        p += 8 if st & SAMPLE_ID else 0
        p += 8 if st & SAMPLE_STREAM_ID else 0
        if st & SAMPLE_CPU:
            out[3], out[4] = struct.unpack_from("<II", raw, p)
        return out

    def records(self):
        for r in self.buf.raw_records():
            yield self.decode(r)

    def decode(self, r):
        raw = r.raw
        if r.type == RECORD_SAMPLE:
            return self.sample(raw)
        pid, tid, time, cpu, res = self.sample_id(raw)
        d = {"type": TYPE_NAMES.get(r.type, "PERF_RECORD_UNKNOWN"), "misc": r.misc,
             "size": r.size}
        if pid is not None:
            d["pid"], d["tid"] = pid, tid
        if time is not None:
            d["time"] = time
        if cpu is not None:
            d["cpu"] = cpu
        detail = ""
        t, size, body = r.type, r.size, raw[8:]
        if t == RECORD_SWITCH:
            if not r.misc & MISC_SWITCH_OUT:
                detail = "IN"
            else:
                res = res or 0
                why = offcpu_of(res)
                detail = "OUT" + (" preempt" if r.misc & MISC_SWITCH_OUT_PREEMPT else "")
                if why not in ("unknown", "preempted"):
                    detail += " " + why
                # The reason as data too: the state word, its class and the class's code.
                d.update(res=res, reason=why, reason_code=OFFCPU_CODES[why])
                if res & SWITCH_STATE:
                    d["state"] = res & 0xFFFF
        elif t == RECORD_COMM:
            if size >= 8 + 8 + 16:
                self.comm = cstr(body[8:8 + 15])
                detail = self.comm + (" (exec)" if r.misc & MISC_COMM_EXEC else "")
            else:
                detail = self.comm
        elif t == RECORD_LOST:
            if size >= 8 + 16:
                detail = "lost %u" % struct.unpack_from("<Q", body, 8)
        elif t == RECORD_MMAP2:
            if size > 8 + 72:
                addr, length = struct.unpack_from("<QQ", body, 8)
                tail = raw[72:]
                nul = tail.find(b"\0")
                name = tail[:nul].decode("latin-1") if nul >= 0 else "?"
                detail = "[0x%x(0x%x)]: %s" % (addr, length, name[:50])
        elif t in (RECORD_FORK, RECORD_EXIT):
            if size >= 8 + 16:
                u = struct.unpack_from("<IIII", body, 0)
                detail = "(%u:%u):(%u:%u)" % (u[0], u[2], u[1], u[3])
        elif t == RECORD_AUX:
            if size >= 8 + 24:
                off, sz, fl = struct.unpack_from("<QQQ", body, 0)
                detail = "offset %s size %s flags %s%s%s" % (
                    _hexalt(off), _hexalt(sz), _hexalt(fl),
                    " [truncated]" if fl & 1 else "", " [partial]" if fl & 4 else "")
        elif t == RECORD_ITRACE_START:
            if size >= 8 + 8:
                detail = "pid %u tid %u" % struct.unpack_from("<II", body, 0)
        elif t == RK_RECORD_WAKEUP:
            if size >= 24:
                wpid, wtid, tcpu, fl = struct.unpack_from("<IIII", body, 0)
                ctx = wake_context(fl)
                d.update(waker_pid=wpid, waker_tid=wtid, target_cpu=tcpu, new=bool(fl & 1),
                         waker_hidden=bool(fl & 2), wake_flags=fl, context=ctx)
                detail = wakeup_detail(fl, ctx, wpid, wtid, tcpu)
        elif t == RK_RECORD_STACK:
            s = parse_stack(raw, self.id_size)
            if s is None:
                detail = "does not parse (size %u)" % size
            else:
                of, fl, kern, user = s
                d.update(stack_of="waker" if of == 2 else "switch-out",
                         kernel_hidden=bool(fl & 1), user_hidden=bool(fl & 2),
                         kernel=[_addr(v) for v in kern], user=[_addr(v) for v in user])
                detail = "%s: %u kernel, %u user frames%s%s" % (
                    "the waker's" if of == 2 else "where it blocked", len(kern), len(user),
                    " (kernel's withheld: perf_event_paranoid)" if fl & 1 else "",
                    " (user's withheld: another user's task)" if fl & 2 else "")
        elif t == RK_RECORD_TRIGGER:
            detail = trigger_detail(raw)
            tf = trigger_fields(raw)
            if tf is not None:
                d["trigger"] = tf
        elif t == RK_RECORD_CRASH:
            if size >= 32:
                cpid, ctid, crash_tid, signo, ctime = struct.unpack_from("<IIIiQ", body, 0)
                d.update(signal=signo, crash_tid=crash_tid)
                detail = "signal %d (SIG%s) delivered to tid %u" % (
                    signo, SIGNAMES.get(signo, "?"), crash_tid)
        else:
            detail = "type %u size %u" % (t, size)
        d["detail"] = _cut(detail)
        return d

    def sample(self, raw):
        s = parse_sample(self.st, raw)
        if isinstance(s, str):
            return {"type": "PERF_RECORD_SAMPLE", "error": s}
        d = {"type": "PERF_RECORD_SAMPLE", "pid": s["pid"], "tid": s["tid"], "time": s["time"],
             "cpu": s["cpu"], "period": s["period"], "event": self.event}
        if s["raw"] is not None and self.tp_fields is not None:
            from .tracedata import field_values
            d["fields"] = field_values(self.tp_fields, s["raw"])
        d["ip"] = _addr(s["ip"])
        chain = s["chain"] or ()
        d["callchain"] = [_addr(v) for v in chain if v < CONTEXT_MAX]
        return d


def _hexalt(v):
    """printf's %#llx: 0 is "0", the rest "0x..."."""
    return "0x%x" % v if v else "0"


def record_time(buf, r):
    """A record's time (0 if it has none), as the reference's rk_record_time()."""
    st = buf.attr.sample_type
    if not st & SAMPLE_TIME:
        return 0
    if r.type == RECORD_SAMPLE:
        off = 8 + (8 if st & SAMPLE_IDENTIFIER else 0) + (8 if st & SAMPLE_IP else 0) + (
            8 if st & SAMPLE_TID else 0)
    else:
        n = buf.sample_id_size()
        if r.size < 8 + n:
            return 0
        off = r.size - n + (8 if st & SAMPLE_TID else 0)
    if off + 8 > r.size:
        return 0
    return struct.unpack_from("<Q", r.raw, off)[0]
