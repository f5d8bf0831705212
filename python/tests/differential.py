# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""differential.py RK_BIN N SEED [FILE...]: N mutated copies of a buffer built from the
spec (and of each FILE, real buffer files), each read by `RK_BIN show --json` and by the
reader's `show --json` (run in this interpreter: inproc.py): both accept it or both refuse
it, and where they print records, the same ones (show's symbols aside). Exit 0 if they
always agree."""
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
from inproc import reader  # noqa: E402
from showdiff import strip  # noqa: E402
from test_hostile import make_buffer, sched_records  # noqa: E402


def main():
    rk, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    srcs = [make_buffer(sched_records(n=20))]
    for p in sys.argv[4:]:
        with open(p, "rb") as f:
            srcs.append(f.read())
    hot = list(range(1024, 1104)) + list(range(1104, 1400))
    bad = accepted = 0
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "s", "sched"))
        for i in range(n):
            b = bytearray(rng.choice(srcs))
            for _ in range(rng.randint(1, 6)):
                w = rng.choice(hot) if rng.random() < 0.4 else rng.randrange(4096, len(b))
                b[w] = rng.randrange(256)
            p = os.path.join(d, "s", "sched", str(i + 1))
            with open(p, "wb") as f:
                f.write(b)
            c = subprocess.run([rk, "show", "--json", p], capture_output=True, timeout=60)
            y_code, y_out, y_err = reader(["show", "--json", p])
            if (c.returncode == 0) != (y_code == 0) or (c.stdout == b"") != (y_out == b""):
                print("%d: show exit %d, reader exit %d: %s / %s" % (
                    i, c.returncode, y_code, c.stderr[:200], y_err[:200]))
                bad += 1
            elif c.stdout and strip(json.loads(c.stdout)) != json.loads(y_out):
                print("%d: the documents differ" % i)
                bad += 1
            accepted += c.returncode == 0
            os.unlink(p)
    print("%d mutated files (%d accepted by both): %s" % (
        n, accepted, "show and the reader agree" if not bad else "%d differ" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
