# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The pure-Python reader run inside this interpreter, as `python3 -m ringkeeper ARGV` would
run in its own: reader(ARGV) gives (exit status, stdout bytes, stderr text). The tests read
hundreds of files; an interpreter started for each was most of their time."""
import contextlib
import io
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ringkeeper.__main__ import main  # noqa: E402


def reader(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's refusals
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        except Exception:  # what the interpreter would print and exit 1 for
            traceback.print_exc()
            code = 1
    return code or 0, out.getvalue().encode(), err.getvalue()
