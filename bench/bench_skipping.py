"""The data-skipping benchmark: rcfmt against pyarrow, DuckDB and Polars reading Parquet
of the same data and layout, in the same run (TPC-H lineitem, 128k-row blocks).

Layouts (rcfmt files are written from the Parquet files of bench_peers.py, so rows are in
the same order): natural order, Z-ordered by rank on (l_shipdate, l_partkey), and natural
order in a single 6M-row block. Queries: Q_a (one-week l_shipdate range AND ~1% l_partkey
range), Q_b (point lookup on l_orderkey, all columns), Q_c (TPC-H Q6 predicate and sum).

For each cell: best-of-N wall time per engine (one thread, and threaded), rcfmt's ratio to
the fastest peer (>1 means rcfmt is faster), and rcfmt's scan statistics (blocks and
pages read, rows decoded, bytes read).

    python bench/bench_skipping.py --scale 1 --repeat 5
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_peers as peers  # noqa: E402
from common import md_table, print_header, write_json  # noqa: E402

sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # run from a checkout
import rcfmt  # noqa: E402

DEC = pa.decimal128(15, 2)


def rcfmt_filter(q: str, c: peers.Constants):
    col = rcfmt.col
    if q == "Q_a":
        return ((col("l_shipdate") >= c.d("shipdate_lo")) & (col("l_shipdate") < c.d("shipdate_hi"))
                & col("l_partkey").between(c.partkey_lo, c.partkey_hi))
    if q == "Q_b":
        return col("l_orderkey") == c.orderkey
    return ((col("l_shipdate") >= c.d("q6_date_lo")) & (col("l_shipdate") < c.d("q6_date_hi"))
            & col("l_discount").between(Decimal(c.q6_disc_lo), Decimal(c.q6_disc_hi))
            & (col("l_quantity") < Decimal(c.q6_qty_lt)))


def run_rcfmt(q: str, path: Path, c: peers.Constants, threads: bool, stats_out: dict | None = None, fetch=None):
    with rcfmt.open(path, fetch=fetch) as f:
        if q == "Q_c":
            scan = f.scan(columns=["l_extendedprice", "l_discount"], filter=rcfmt_filter(q, c), use_threads=threads)
            t = scan.read()
            result = pc.sum(pc.multiply(t["l_extendedprice"], t["l_discount"]))
        else:
            scan = f.scan(filter=rcfmt_filter(q, c), use_threads=threads)
            result = scan.read()
    if stats_out is not None:
        stats_out.update(scan.stats.as_dict())
    return result


def rcfmt_path(parquet_path: Path) -> Path:
    return parquet_path.with_suffix(".rcfmt")


def build_rcfmt(paths: dict[str, Path]) -> dict[str, Path]:
    out = {}
    for layout, ppath in paths.items():
        rpath = rcfmt_path(ppath)
        out[layout] = rpath
        if rpath.exists() and rpath.stat().st_mtime > ppath.stat().st_mtime:
            continue
        table = pq.read_table(ppath)
        block_rows = table.num_rows if layout == "natural_1rg" else peers.ROW_GROUP_ROWS
        t0 = time.perf_counter()
        rcfmt.write_table(table, rpath, block_rows=block_rows)  # rcfmt defaults (compression="auto")
        print(f"[skipping] wrote {rpath.name} in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--engines", default="pyarrow,duckdb,polars")
    ap.add_argument("--threads", action=argparse.BooleanOptionalAction, default=None)
    args = ap.parse_args(argv)
    modes = [False, True] if args.threads is None else [bool(args.threads)]
    ncores = os.cpu_count() or 1
    peers.ENGINES["rcfmt"] = run_rcfmt
    peers.SUMMARISERS["rcfmt"] = peers.summarise_arrow

    print_header(f"Skipping benchmark, lineitem SF{args.scale:g}")
    table, c, ppaths, ref = peers.prepare(args.scale)
    del table
    rpaths = build_rcfmt(ppaths)
    cells = [(lay, q) for lay in peers.LAYOUTS for q in peers.DEFAULT_MATRIX[lay]]
    engines = [e for e in args.engines.split(",") if e]
    results = {"scale": args.scale, "repeat": args.repeat, "cells": []}
    rows = []
    for lay, q in cells:
        for threads in modes:
            tlabel = str(ncores) if threads else "1"
            stats: dict = {}
            run_rcfmt(q, rpaths[lay], c, threads, stats)  # for the scan statistics
            r = peers.time_query("rcfmt", q, rpaths[lay], c, threads, args.repeat)
            ok = peers.check_result(r["summary"], ref[q])
            times = {"rcfmt": r["timing"]["best"]}
            for engine in engines:
                if engine == "polars":
                    out = peers.polars_subprocess([{"query": q, "layout": lay, "path": str(ppaths[lay])}], c,
                                                  ncores if threads else 1, args.repeat)[0]
                else:
                    out = peers.time_query(engine, q, ppaths[lay], c, threads, args.repeat)
                ok &= peers.check_result(out["summary"], ref[q])
                times[engine] = out["timing"]["best"]
            fastest = min(times[e] for e in engines)
            ratio = fastest / times["rcfmt"]
            results["cells"].append({"layout": lay, "query": q, "threads": tlabel, "times": times,
                                     "ratio_vs_fastest_peer": ratio, "scan_stats": stats, "correct": ok})
            blocks_read = stats["blocks_total"] - stats["blocks_pruned_stats"] - stats["blocks_pruned_bloom"] \
                - stats["blocks_pruned_pages"]
            rows.append([lay, q, tlabel] + [f"{times[e] * 1000:.1f}" for e in ["rcfmt", *engines]]
                        + [f"{ratio:.1f}x", f"{blocks_read}/{stats['blocks_total']}",
                           f"{stats['pages_read']}/{stats['pages_total']}", f"{stats['rows_decoded']:,}",
                           f"{stats['bytes_read'] / 1e6:.2f} MB", "yes" if ok else "NO"])
            print(f"  {lay} {q} threads={tlabel}: " + ", ".join(f"{e} {t * 1000:.1f} ms" for e, t in times.items()),
                  file=sys.stderr, flush=True)
    headers = ["layout", "query", "threads"] + [f"{e} ms" for e in ["rcfmt", *engines]] + [
        "fastest peer / rcfmt", "blocks read", "pages read", "rows decoded", "bytes read", "correct"]
    print(md_table(headers, rows))
    write_json("skipping", results, args)
    return 0 if all(x["correct"] for x in results["cells"]) else 1


if __name__ == "__main__":
    sys.exit(main())
