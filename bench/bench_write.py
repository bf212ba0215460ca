"""Writes against pyarrow and DuckDB (issue 37): each writer in a fresh process, rounds
interleaved, the load printed.

Same rows (TPC-H lineitem SF1 from bench/datasets.py, already in memory as Arrow), same
131,072-row blocks / row groups:

- ``rcfmt 1t`` / ``rcfmt 2t``: ``rcfmt.write_table(table, path, block_rows=131072,
  use_threads=False / True)``, every other option at its default;
- ``pyarrow``: ``pq.write_table(table, path, row_group_size=131072, compression="zstd",
  write_page_index=True)``;
- ``duckdb 1t`` / ``duckdb 2t`` (``--duckdb``): ``COPY (SELECT * FROM table) TO path
  (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 131072)`` with ``SET threads``.

A process times best-of-``--repeat`` writes to /tmp-like scratch; printed: per writer the
median over rounds of its best, its speed relative to pyarrow, and the file's bytes.

    python bench/bench_write.py --rounds 3 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROWS = 131072

_CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, os.path.dirname(sys.argv[1]))
import datasets
writer, path, repeat, rows = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
table = datasets.tpch_lineitem(1, verbose=False)
if writer.startswith("rcfmt"):
    import rcfmt
    write = lambda: rcfmt.write_table(table, path, block_rows=rows, use_threads=writer == "rcfmt 2t")
elif writer == "pyarrow":
    import pyarrow.parquet as pq
    write = lambda: pq.write_table(table, path, row_group_size=rows, compression="zstd", write_page_index=True)
else:
    import duckdb
    con = duckdb.connect()
    con.execute(f"SET threads = {writer[-2]}")
    con.register("t", table)
    write = lambda: con.execute(f"COPY (SELECT * FROM t) TO '{path}' (FORMAT parquet, COMPRESSION zstd, "
                                f"ROW_GROUP_SIZE {rows})")
best = float("inf")
for _ in range(repeat):
    start = time.perf_counter()
    write()
    best = min(best, time.perf_counter() - start)
print(json.dumps({"seconds": best, "bytes": os.path.getsize(path)}))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--duckdb", action="store_true", help="DuckDB's Parquet writer too, 1 and 2 threads")
    args = ap.parse_args(argv)
    writers = ["pyarrow", "rcfmt 1t", "rcfmt 2t"] + (["duckdb 1t", "duckdb 2t"] if args.duckdb else [])
    seconds: dict[str, list[float]] = {w: [] for w in writers}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            for writer in writers:
                path = os.path.join(scratch, writer.replace(" ", "_"))
                out = subprocess.run([sys.executable, "-c", _CHILD, str(HERE), writer, path, str(args.repeat),
                                      str(ROWS)], capture_output=True, text=True, check=True)
                result = json.loads(out.stdout.strip().splitlines()[-1])
                seconds[writer].append(result["seconds"])
                sizes[writer] = result["bytes"]
            print(f"round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    base = statistics.median(seconds["pyarrow"])
    print("| writer | seconds (median of rounds' best) | speed / pyarrow | MB | all rounds |")
    print("| :-- | --: | --: | --: | :-- |")
    for writer in writers:
        s = statistics.median(seconds[writer])
        print(f"| {writer} | {s:.2f} | {base / s:.2f}x | {sizes[writer] / 1e6:.1f} | "
              f"{', '.join(f'{x:.2f}' for x in seconds[writer])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
