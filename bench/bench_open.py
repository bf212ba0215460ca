"""Cost of opening a file (footer read, checked and parsed): rcfmt against pyarrow's
``ParquetFile`` (footer and schema) on the same lineitem rows, in the same run.

rcfmt is timed three ways: with its footer cache warm (the same file opened again, as by
repeated queries), cold (the parsed-footer cache cleared before every open, as for a
file opened once, whose schema other files of its dataset share), and with the schema
never seen either (every footer cache cleared: the first file of a schema in a process).
Best of ``--repeat`` loops of ``--opens`` opens each.

    python bench/bench_open.py --scale 1
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

import bench_peers as peers  # noqa: E402
from common import md_table, print_header  # noqa: E402

import rcfmt  # noqa: E402
from rcfmt.format import footer as _footer  # noqa: E402


def best_per_call(fn, opens: int, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(opens):
            fn()
        best = min(best, (time.perf_counter() - t0) / opens)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--opens", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print_header(f"Opening a file, lineitem SF{args.scale:g}")
    _table, _c, ppaths, _ref = peers.prepare(args.scale)
    ppath = ppaths["natural_128k"]
    rpath = ppath.with_suffix(".rcfmt")
    if not rpath.exists():
        rcfmt.write_table(pq.read_table(ppath), rpath, block_rows=peers.ROW_GROUP_ROWS)
    with rcfmt.open(rpath) as f:
        blocks, columns = f.num_blocks, len(f.schema)

    def rcfmt_open():
        rcfmt.open(rpath).close()

    def rcfmt_cold():
        _footer._parse_json.cache_clear()
        rcfmt.open(rpath).close()

    def rcfmt_new_schema():
        _footer._parse_json.cache_clear()
        _footer._flat_schema.cache_clear()
        _footer._column.cache_clear()
        rcfmt.open(rpath).close()

    def parquet_open():
        pf = pq.ParquetFile(ppath)
        pf.schema_arrow  # noqa: B018 - what a reader needs before planning
        pf.close()

    rows = []
    for name, fn in [("rcfmt (footer seen before)", rcfmt_open), ("rcfmt (cold)", rcfmt_cold),
                     ("rcfmt (cold, schema never seen)", rcfmt_new_schema),
                     ("pyarrow ParquetFile + schema", parquet_open)]:
        t = best_per_call(fn, args.opens, args.repeat)
        rows.append([name, f"{t * 1e6:.0f}"])
    print(f"{blocks} blocks / row groups, {columns} columns\n")
    print(md_table(["open", "µs per open"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
