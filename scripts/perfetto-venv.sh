#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# perfetto-venv.sh DIR - a virtualenv in DIR with PyPI's perfetto package
# (the official trace protos) and protobuf >= 6.31, which they need. The
# tests read every --perfetto export with them. Idempotent: a DIR whose
# python imports both is left as it is. Never fails the build: without
# PyPI, it says why and the tests that need it are skipped.
set -u
dir=$1
py=/usr/bin/python3
check() {
	"$dir/bin/python" - <<'PY' 2>/dev/null
import google.protobuf as g
from perfetto.protos.perfetto.trace import perfetto_trace_pb2  # noqa: F401
major, minor = (int(x) for x in g.__version__.split(".")[:2])
raise SystemExit(0 if (major, minor) >= (6, 31) else 1)
PY
}
[ -x "$dir/bin/python" ] && check && exit 0
echo "perfetto-venv: installing perfetto and protobuf>=6.31 from PyPI into $dir"
rm -rf "$dir"
if ! { "$py" -m venv "$dir" && "$dir/bin/pip" install -q perfetto 'protobuf>=6.31'; } \
	>"$dir.log" 2>&1 || ! check; then
	echo "perfetto-venv: cannot install them (see $dir.log): the Perfetto checks will be skipped" >&2
	rm -rf "$dir"
fi
exit 0
