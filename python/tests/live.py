# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""live.py SESSION SECONDS: read every sched file of a session being recorded, over and
over for SECONDS, while the recorder writes (and wraps) them: each read gives whole
records in time order, never a FormatError. Exit 0 if so, and some reads met a ring
that had wrapped (data_tail past 0)."""
import glob
import os
import sys
import time

import ringkeeper


def main():
    end = time.monotonic() + float(sys.argv[2])
    reads = wrapped = records = 0
    while time.monotonic() < end:
        for path in glob.glob(os.path.join(sys.argv[1], "sched", "*")):
            buf = ringkeeper.Buffer.open(path)
            last = 0
            for r in buf.records():
                if r.get("time", last) < last:
                    print("%s: a record at %d after one at %d" % (path, r["time"], last))
                    return 1
                last = r.get("time", last)
                records += 1
            reads += 1
            wrapped += buf.data_tail > 0
    print("%d reads of live files (%d of a wrapped ring), %d records, all whole and in "
          "order" % (reads, wrapped, records))
    return 0 if reads and wrapped else 1


if __name__ == "__main__":
    sys.exit(main())
