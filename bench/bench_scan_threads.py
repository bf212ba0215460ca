"""Full scans on 1 and 2 threads against Polars, DuckDB and pyarrow, each engine in a
fresh process, rounds interleaved (issue 35's scaling targets).

Every column of lineitem SF1 into Arrow, from the files of bench_skipping.py /
bench_peers.py (128k-row blocks / row groups; the Parquet readers read pyarrow's zstd
Parquet with its page index):

- rcfmt: ``rcfmt.read_table(path, use_threads=threads > 1)``;
- Polars: ``pl.read_parquet(path).to_arrow()`` with ``POLARS_MAX_THREADS`` set;
- DuckDB: ``con.sql("SELECT * FROM read_parquet(path)").to_arrow_table()`` after
  ``SET threads``;
- pyarrow: ``pq.read_table(path, use_threads=threads > 1)``.

A process warms up once and times best-of-``--repeat``; printed per engine: the median
over rounds at 1 and 2 threads, the speed-up, and the load per round.

    python bench/bench_scan_threads.py --rounds 3 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "peers"
ENGINES = ("rcfmt", "polars", "duckdb", "pyarrow")

_CHILD = r"""
import json, os, sys, time
engine, threads, repeat, rc_path, pq_path, root = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:7]
if engine == "rcfmt":
    sys.path.insert(0, root)
    import rcfmt
    scan = lambda: rcfmt.read_table(rc_path, use_threads=threads > 1)
elif engine == "polars":
    import polars as pl  # (POLARS_MAX_THREADS is set by the parent: read at import)
    scan = lambda: pl.read_parquet(pq_path).to_arrow()
elif engine == "duckdb":
    import duckdb
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    scan = lambda: con.sql(f"SELECT * FROM read_parquet('{pq_path}')").to_arrow_table()
else:
    import pyarrow.parquet as pq
    scan = lambda: pq.read_table(pq_path, use_threads=threads > 1)
scan()
best = float("inf")
for _ in range(repeat):
    start = time.perf_counter()
    table = scan()
    best = min(best, time.perf_counter() - start)
    del table
print(json.dumps(best * 1e3))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--layout", default="natural_128k")
    args = ap.parse_args(argv)
    rc_path, pq_path = DATA / f"lineitem_sf1.{args.layout}.rcfmt", DATA / f"lineitem_sf1.{args.layout}.parquet"
    if not (rc_path.exists() and pq_path.exists()):
        sys.exit("missing files: run bench/bench_skipping.py --scale 1 first (it writes both)")
    ms: dict[tuple[str, int], list[float]] = {(e, t): [] for e in ENGINES for t in (1, 2)}
    for r in range(args.rounds):
        for engine in ENGINES:
            for threads in (1, 2):
                env = dict(os.environ, POLARS_MAX_THREADS=str(threads))
                out = subprocess.run([sys.executable, "-c", _CHILD, engine, str(threads), str(args.repeat),
                                      str(rc_path), str(pq_path), str(HERE.parent)],
                                     capture_output=True, text=True, check=True, env=env)
                ms[(engine, threads)].append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    print("| engine | 1 thread ms | 2 threads ms | 2 threads / 1 | 1 thread, all rounds | 2 threads, all rounds |")
    print("| :-- | --: | --: | --: | :-- | :-- |")
    for engine in ENGINES:
        one, two = statistics.median(ms[(engine, 1)]), statistics.median(ms[(engine, 2)])
        print(f"| {engine} | {one:.0f} | {two:.0f} | {one / two:.2f}x | "
              f"{', '.join(f'{x:.0f}' for x in ms[(engine, 1)])} | {', '.join(f'{x:.0f}' for x in ms[(engine, 2)])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
