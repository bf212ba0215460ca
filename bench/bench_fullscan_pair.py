"""rcfmt against pyarrow, full scan of lineitem, in a fresh process holding nothing else.

Reads the files `bench_fullscan.py` wrote (run it first) with ``rcfmt.read_table`` and
``pq.read_table``, one thread then all cores, best of ``--repeat`` after a warm-up. In
``bench_fullscan.py`` the readers share one process with the loaded table and a DuckDB
connection; this isolates the two readers.

    python bench/bench_fullscan_pair.py --scale 1 --repeat 4
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))
from common import busy_warning, machine_line, scratch_dir  # noqa: E402

import rcfmt  # noqa: E402


def _best(fn, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=4)
    args = ap.parse_args(argv)
    print(machine_line())
    if busy_warning():
        print(busy_warning())
    out = scratch_dir("fullscan")
    rc, pa_path = out / f"lineitem_sf{args.scale:g}.rcfmt", out / f"lineitem_sf{args.scale:g}.pyarrow"
    if not rc.exists() or not pa_path.exists():
        raise SystemExit("run bench/bench_fullscan.py first (it writes the files)")
    t = {}
    for threads in (False, True):
        t[("rcfmt", threads)] = _best(lambda: rcfmt.read_table(rc, use_threads=threads), args.repeat)
        t[("pyarrow", threads)] = _best(lambda: pq.read_table(pa_path, use_threads=threads), args.repeat)
    print(f"rcfmt 1 thread {t[('rcfmt', False)]:.3f} s, all cores {t[('rcfmt', True)]:.3f} s; "
          f"pyarrow 1 thread {t[('pyarrow', False)]:.3f} s, all cores {t[('pyarrow', True)]:.3f} s")
    print(f"pyarrow / rcfmt: {t[('pyarrow', False)] / t[('rcfmt', False)]:.2f}x (1 thread), "
          f"{t[('pyarrow', True)] / t[('rcfmt', True)]:.2f}x (all cores); rcfmt 1 thread / all cores: "
          f"{t[('rcfmt', False)] / t[('rcfmt', True)]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
