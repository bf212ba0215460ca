"""Full scans, writes and file sizes: rcfmt against pyarrow, DuckDB and Polars (issue 4).

Same data, same 131,072-row blocks / row groups, same run:

- write: rcfmt ``write_table`` (defaults); pyarrow ``pq.write_table`` (zstd, page index);
  DuckDB ``COPY ... (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 131072)``; Polars
  ``write_parquet(compression="zstd", row_group_size=131072)``;
- full scan of all columns into Arrow, one thread and all cores: rcfmt ``read_table``;
  pyarrow ``pq.read_table``; DuckDB ``read_parquet(...)`` to Arrow; Polars
  ``read_parquet`` to Arrow (Polars' thread count is fixed at import, so each Polars
  setting runs in a subprocess). Every reader reads the Parquet file its own engine wrote.

    python bench/bench_fullscan.py --scale 1 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))
import datasets  # noqa: E402
from common import md_table, measure, print_header, scratch_dir, write_json  # noqa: E402

import rcfmt  # noqa: E402

ROWS = 131072


def _polars_read(path: str, threads: int, repeat: int) -> float:
    code = f"""
import os, time, json
os.environ["POLARS_MAX_THREADS"] = "{threads}"
import polars as pl
best = 1e9
for i in range({repeat} + 1):
    t0 = time.perf_counter(); df = pl.read_parquet({path!r}); t = df.to_arrow(); dt = time.perf_counter() - t0
    if i: best = min(best, dt)
print(json.dumps(best))
"""
    env = dict(os.environ, POLARS_MAX_THREADS=str(threads))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    import duckdb

    print_header(f"Full scan / write / size, lineitem SF{args.scale:g}")
    table = datasets.tpch_lineitem(args.scale)
    out = scratch_dir("fullscan")
    paths = {e: out / f"lineitem_sf{args.scale:g}.{e}" for e in ("rcfmt", "pyarrow", "duckdb", "polars")}
    ncores = os.cpu_count() or 1
    con = duckdb.connect()
    con.register("t", table)

    def w_rcfmt():
        rcfmt.write_table(table, paths["rcfmt"], block_rows=ROWS)

    def w_rcfmt_1t():
        rcfmt.write_table(table, paths["rcfmt"], block_rows=ROWS, use_threads=False)

    def w_pyarrow():
        pq.write_table(table, paths["pyarrow"], row_group_size=ROWS, compression="zstd", write_page_index=True)

    def w_duckdb():
        con.execute(f"COPY t TO '{paths['duckdb']}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROWS})")

    def w_polars():
        code = (f"import polars as pl, pyarrow.parquet as pq; pl.from_arrow(pq.read_table({str(paths['pyarrow'])!r}))"
                f".write_parquet({str(paths['polars'])!r}, compression='zstd', row_group_size={ROWS}, statistics=True)")
        subprocess.run([sys.executable, "-c", code], check=True)

    writes = {}
    for engine, fn in (("rcfmt 1t", w_rcfmt_1t), ("rcfmt", w_rcfmt), ("pyarrow", w_pyarrow), ("duckdb", w_duckdb)):
        timing, _ = measure(fn, repeat=args.repeat)
        writes[engine] = timing.best
    w_polars()  # Polars' own write time includes process start and a Parquet read: size only
    sizes = {e: p.stat().st_size for e, p in paths.items()}
    assert rcfmt.read_table(paths["rcfmt"]).equals(table), "rcfmt round trip changed the data"

    reads = {}
    for threads in (1, ncores):
        use = threads > 1
        reads[("rcfmt", threads)] = measure(lambda: rcfmt.read_table(paths["rcfmt"], use_threads=use),
                                            repeat=args.repeat)[0].best
        reads[("pyarrow", threads)] = measure(lambda: pq.read_table(paths["pyarrow"], use_threads=use),
                                              repeat=args.repeat)[0].best
        con.execute(f"SET threads={threads}")
        reads[("duckdb", threads)] = measure(
            lambda: con.sql(f"select * from read_parquet('{paths['duckdb']}')").to_arrow_table(),
            repeat=args.repeat)[0].best
        reads[("polars", threads)] = _polars_read(str(paths["polars"]), threads, args.repeat)

    # what the valid-Arrow checks cost (UTF-8 of strings, decimal precision; the BITPACK
    # decimal range check stays on: it is one comparison per page)
    from rcfmt.file.chunks import ChunkDecoder

    checked = ChunkDecoder._invalid_row
    ChunkDecoder._invalid_row = lambda self, values: -1
    try:
        unchecked = measure(lambda: rcfmt.read_table(paths["rcfmt"], use_threads=False), repeat=args.repeat)[0].best
    finally:
        ChunkDecoder._invalid_row = checked
    checked_time = measure(lambda: rcfmt.read_table(paths["rcfmt"], use_threads=False), repeat=args.repeat)[0].best

    rows = []
    for engine in ("rcfmt", "pyarrow", "duckdb", "polars"):
        w = writes.get(engine)
        rows.append([engine, f"{w:.2f} s" if w else "-", f"{reads[(engine, 1)]:.3f} s",
                     f"{reads[(engine, ncores)]:.3f} s", f"{sizes[engine] / 1e6:.1f} MB",
                     f"{reads[(engine, 1)] / reads[('rcfmt', 1)]:.2f}x",
                     f"{reads[(engine, ncores)] / reads[('rcfmt', ncores)]:.2f}x",
                     f"{sizes['rcfmt'] / sizes[engine]:.2f}"])
    print(md_table(["engine", "write", "read 1 thread", f"read {ncores} threads", "size",
                    "read time / rcfmt (1t)", f"read time / rcfmt ({ncores}t)", "rcfmt size / this"], rows))
    print(f"\nrcfmt write speed vs pyarrow: {writes['pyarrow'] / writes['rcfmt']:.2f}x on {ncores} threads, "
          f"{writes['pyarrow'] / writes['rcfmt 1t']:.2f}x on 1 thread ({writes['rcfmt 1t']:.2f} s) "
          f"(>1 means rcfmt is faster); Polars' write is not timed (it runs in a subprocess).")
    print(f"valid-Arrow checks (UTF-8, decimal precision), 1 thread: {checked_time:.3f} s with, {unchecked:.3f} s "
          f"without: {100 * (checked_time - unchecked) / unchecked:+.1f}% of the scan")
    print(f"rcfmt 1 thread / {ncores} threads: {reads[('rcfmt', 1)] / reads[('rcfmt', ncores)]:.2f}x")
    write_json("fullscan", {"writes": writes, "sizes": sizes, "validation": {"on": checked_time, "off": unchecked},
                            "reads": {f"{e}/{t}": v for (e, t), v in reads.items()}}, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
