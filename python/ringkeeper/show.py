# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""`ringkeeper show --json`'s document, written the way show writes it."""
import re

from .buffer import FormatError
from .records import Decoder
from .tracedata import lookup


_ESCAPED = re.compile('["\\\\\x00-\x1f\x7f-\U0010ffff]')


def _escape(m):
    ch = m.group()
    return "\\" + ch if ch in '"\\' else "\\u%04x" % ord(ch)


def json_str(s):
    """rk_json_str(): " and \\ escaped, bytes below 0x20 and from 0x7f as \\u00XX."""
    return '"' + _ESCAPED.sub(_escape, s) + '"'


def json_value(v):
    t = type(v)
    if t is int:  # the usual ones first, by exact type (bool is an int too)
        return str(v)
    if t is str:
        return json_str(v)
    if isinstance(v, dict):
        return "{" + ",".join(json_str(k) + ":" + json_value(x) for k, x in v.items()) + "}"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json_str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(json_value(x) for x in v) + "]"
    if v is None:
        return "null"
    raise TypeError(type(v))


# rk_thread_ident.flags: the signals of its end were dropped (docs/format.md).
IDENT_END_UNSEEN = 2


def thread_header(buf, path):
    """show --json's "thread" object."""
    i, a = buf.ident, buf.attr
    return {
        "file": path, "tid": i.tid, "tgid": i.tgid, "ns_tid": i.ns_tid, "uid": i.uid,
        "comm": i.comm, "state": i.state_name, "end_unseen": bool(i.flags & IDENT_END_UNSEEN),
        "exit_code": i.exit_code,
        "start_ns": i.start_ns, "exit_ns": i.exit_ns, "data_size": buf.data_size,
        "data_head": buf.data_head, "data_tail": buf.data_tail, "overwritten": i.overwritten,
        "lost": i.lost, "pmu_offset": buf.pmu_offset, "pmu_size": buf.pmu_size,
        "attr": {"type": a.type, "size": a.size, "config": "0x%x" % a.config,
                 "sample_type": a.sample_type, "context_switch": a.context_switch,
                 "clockid": a.clockid},
        "pmu_descsz": buf.pmu_size - a.size,
    }


PERF_TYPE_TRACEPOINT = 2


def tp_fields_for(buf, path, in_session):
    """A tracepoint file's fields, as show finds them: @path is SESSION/SYS:EVENT/TID
    (a core's buffer: SYS:EVENT/TID, with no session); "missing" if it has none."""
    if buf.attr.type != PERF_TYPE_TRACEPOINT:
        return None
    i = path.rfind("/")
    if i < 0:
        return None
    d = path[:i]
    j = d.rfind("/")
    ev = d[j + 1:] if j >= 0 else d
    session = d[:j] if in_session and j >= 0 else None
    fields = lookup(session, ev, buf.attr.config)
    return "missing" if fields is None else fields


def show_json(buf, out, path=None, in_session=True, warn=None, loss=None):
    """Write @buf's document to @out; return None, or the FormatError that ended the records
    (the document is closed either way, as show's is). @in_session: @path is a session's
    file (its tracing_data names tracepoints' fields), not a core's buffer. @loss: what the
    session did not record (loss.Loss), its "loss" object (None: none)."""
    path = buf.name if path is None else path
    fields = tp_fields_for(buf, path, in_session)
    if fields == "missing":
        if warn:
            warn("%s: no format for tracepoint id %d (not in the session, not this kernel's): "
                 "its fields are not shown" % (path, buf.attr.config))
        fields = None
    h = thread_header(buf, path)
    out.write('{"thread":' + json_value(h) + ',\n"records":[\n')
    err, n = None, 0
    try:
        for d in Decoder(buf, path, fields).records():
            out.write(("," if n else "") + json_value(d) + "\n")
            n += 1
    except FormatError as e:
        err = e
    out.write("]")
    if loss is not None:
        out.write(',"loss":' + json_value(loss.as_json()))
    out.write("}\n")
    return err
