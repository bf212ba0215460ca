"""A process's first sparse read: the memory its ranges land in (RESULTS section 32).

A lookup reads a few pages of each column it touches, scattered over a block's span (132
KB in 20 ranges over 20 MB for ``l_orderkey == k`` on lineitem SF1). Into the memory
pool's fresh buffer, each range faults in and zeroes a 2 MiB huge page; into a small-page
mapping (``rcfmt.runtime.memory.span_buffer``), a 4 KiB page. Each run is a fresh
process that imports what a lookup needs, then times the first lookup and the next ones;
``pool`` runs take the pool for every read (the behaviour before), ``mapped`` the default.

    python bench/bench_first_read.py [--runs 15]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, busy_warning, machine_line, md_table  # noqa: E402

_CHILD = r"""
import sys, time
import numpy, pyarrow
import rcfmt
from rcfmt.runtime import memory
path, key, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with rcfmt.open(path) as f:  # (the imports a lookup makes, on another key's first call: then dropped)
    f.schema
import rcfmt.scan.scanner, rcfmt.scan.executor, rcfmt.predicate.bind, rcfmt.predicate.evaluate  # noqa
if mode == "pool":
    memory.SPARSE_SPAN = 1 << 62
from rcfmt.storage import local
reads = []  # the time of the reads into the buffer (its pages faulted in), per lookup
real = local.LocalFile.read_ranges_into
def timed(self, *args):
    t = time.perf_counter()
    try:
        return real(self, *args)
    finally:
        reads[-1] += time.perf_counter() - t
local.LocalFile.read_ranges_into = timed
times = []
for _ in range(4):
    reads.append(0.0)
    t = time.perf_counter()
    rcfmt.read_table(path, filter=rcfmt.col("l_orderkey") == key)
    times.append(time.perf_counter() - t)
print(*times, *reads)
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args(argv)
    warning = busy_warning()
    if warning:
        print(warning, file=sys.stderr)
    path = DATA_DIR / "cold" / "sf1" / "lineitem.rcfmt"
    if not path.exists():
        sys.exit(f"{path} is missing: run bench/bench_cold.py once to write it")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    got = {"pool": [], "mapped": []}
    for r in range(args.runs):
        for mode in (("pool", "mapped") if r % 2 == 0 else ("mapped", "pool")):
            out = subprocess.run([sys.executable, "-c", _CHILD, str(path), "3000001", mode], env=env,
                                 capture_output=True, text=True, check=True)
            got[mode].append([float(x) * 1e3 for x in out.stdout.split()])
    rows = []
    for mode, runs in got.items():
        first, warm = [r[0] for r in runs], [min(r[1:4]) for r in runs]
        read_first, read_warm = [r[4] for r in runs], [min(r[5:8]) for r in runs]
        rows.append([mode, f"{statistics.median(read_first):.2f} ({min(read_first):.2f}-{max(read_first):.2f})",
                     f"{statistics.median(read_warm):.3f}", f"{statistics.median(first):.2f}",
                     f"{statistics.median(warm):.2f}"])
    print(machine_line())
    print(md_table(["buffers of sparse reads", "first lookup's reads ms (range)", "warm lookup's reads ms",
                    "first lookup ms", "warm lookup ms"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
