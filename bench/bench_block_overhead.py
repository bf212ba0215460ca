"""Time per (block, column) of a full scan with small blocks: what the Python around the
native decode costs (issue 35: <= 10 us of Python per (block, column)).

The file (made on first use): 1,048,576 rows in 4,096-row blocks (256 blocks), five
columns -- int64, float64, int32, strings of 5 values (a dictionary), int8 -- so that
per-(block, column) overhead, not decoding, is most of the time. ``f.scan(...).read()``
is timed best-of-``--repeat``; printed per (block, column).

Two checkouts in alternating fresh processes (each imports rcfmt from its own tree,
whose extensions are built in place)::

    python bench/bench_block_overhead.py --before /work/main --after /work/exec --rounds 5

Printed: the load average, then per thread count the median over rounds of each
checkout's best, in us per (block, column), wall and CPU time (all threads), and the ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, time
root, path, repeat, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, root)
import rcfmt
assert rcfmt.__file__.startswith(root), rcfmt.__file__
f = rcfmt.open(path)
cells = f.num_blocks * len(f.schema.names)
f.scan(use_threads=threads > 1).read()  # warm: imports, page cache
best = cpu = float("inf")
for _ in range(repeat):
    t, c = time.perf_counter(), time.process_time()
    table = f.scan(use_threads=threads > 1).read()
    best, cpu = min(best, time.perf_counter() - t), min(cpu, time.process_time() - c)
print(json.dumps({"us": best / cells * 1e6, "cpu_us": cpu / cells * 1e6, "rows": table.num_rows, "cells": cells}))
"""


def make_file(path: Path, root: str) -> None:
    sys.path.insert(0, root)
    import numpy as np
    import pyarrow as pa

    import rcfmt

    n = 1 << 20
    rng = np.random.default_rng(35)
    words = np.array(["alpha", "bravo", "charlie", "delta", "echo"])
    table = pa.table({
        "i64": rng.integers(-10**12, 10**12, n),
        "f64": rng.standard_normal(n),
        "i32": rng.integers(-10**6, 10**6, n).astype(np.int32),
        "s": pa.array(words[rng.integers(0, 5, n)]),
        "i8": rng.integers(-100, 100, n).astype(np.int8),
    })
    rcfmt.write_table(table, str(path), block_rows=4096)
    sys.path.pop(0)


def run(root: str, path: Path, repeat: int, threads: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, root, str(path), str(repeat), str(threads)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="/work/main")
    ap.add_argument("--after", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--file", default="/tmp/bench_block_overhead.rcfmt")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    path = Path(args.file)
    if not path.exists():
        make_file(path, args.after)
    print(f"load average before: {os.getloadavg()}")
    for threads in (int(t) for t in args.threads.split(",")):
        got = {"before": [], "after": []}
        cpu = {"before": [], "after": []}
        for _ in range(args.rounds):
            for name in ("before", "after"):
                r = run(getattr(args, name), path, args.repeat, threads)
                got[name].append(r["us"])
                cpu[name].append(r["cpu_us"])
        b, a = statistics.median(got["before"]), statistics.median(got["after"])
        cb, ca = statistics.median(cpu["before"]), statistics.median(cpu["after"])
        print(f"threads={threads}: wall before {b:.1f} us/(block, column) (rounds {[round(x, 1) for x in got['before']]}), "
              f"after {a:.1f} (rounds {[round(x, 1) for x in got['after']]}), {b / a:.2f}x; "
              f"CPU (all threads) before {cb:.1f}, after {ca:.1f}, {cb / ca:.2f}x  [load {os.getloadavg()[0]:.2f}]")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
