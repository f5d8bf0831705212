# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The pure-Python reader run inside this interpreter, as `python3 -m ringkeeper ARGV` would
run in its own: reader(ARGV) gives (exit status, stdout bytes, stderr text). The tests read
hundreds of files; an interpreter started for each was most of their time."""
import contextlib
import io
import os
import signal
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ringkeeper.__main__ import main  # noqa: E402


class _TimedOut(Exception):
    pass


def _alarm(signum, frame):
    raise _TimedOut()


def reader(argv, timeout=60):
    """As the interpreter would exit: SystemExit's code (its message on stderr, then 1),
    1 after an uncaught exception's traceback; 124 after @timeout seconds (a reader that
    loops on a hostile file fails its test, naming the file, instead of hanging it)."""
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's refusals
            if e.code is None or isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except _TimedOut:
            print("timed out after %d s: %s" % (timeout, " ".join(argv)), file=sys.stderr)
            code = 124
        except Exception:  # what the interpreter would print and exit 1 for
            traceback.print_exc()
            code = 1
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    return code or 0, out.getvalue().encode(), err.getvalue()
