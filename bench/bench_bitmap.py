"""Bitmap indexes (issue 15): conjunctions and ranges on unclustered TPC-H lineitem
columns, rcfmt with and without bitmap indexes against pyarrow, DuckDB and Polars
reading Parquet of the same rows (natural order, 131,072-row row groups), in one run.

Queries (natural order leaves every value in every block, so statistics prune nothing):

* ``conj3`` -- l_shipmode = 'AIR' AND l_returnflag = 'R' AND l_shipinstruct = 'DELIVER IN
  PERSON' (three low-cardinality columns);
* ``qty_disc`` -- l_quantity < 5 AND l_discount BETWEEN 0.09 AND 0.10;
* ``price`` -- l_extendedprice BETWEEN 50000 AND 50100 (bit-sliced on the named file);

each as ``rows`` (l_orderkey and l_extendedprice of the matching rows) and ``count``
(count(*)). rcfmt files: ``none`` (bitmap_indexes=None), ``auto`` (the default) and
``named`` (equality on the three strings, bit-sliced on the three decimals). Every
engine runs threaded (its default); each figure is the best of --repeat runs after a
warm-up, and every result is checked against pyarrow.compute on the table in memory.

    python bench/bench_bitmap.py --repeat 5
"""
from __future__ import annotations

import argparse
import sys
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_peers as peers  # noqa: E402
from common import md_table, measure  # noqa: E402

sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # run from a checkout
import rcfmt  # noqa: E402

D = Decimal
QUERIES = {
    "conj3": [("l_shipmode", "==", "AIR"), ("l_returnflag", "==", "R"), ("l_shipinstruct", "==", "DELIVER IN PERSON")],
    "qty_disc": [("l_quantity", "<", D("5")), ("l_discount", ">=", D("0.09")), ("l_discount", "<=", D("0.10"))],
    "price": [("l_extendedprice", ">=", D("50000")), ("l_extendedprice", "<=", D("50100"))],
}
PROJECT = ["l_orderkey", "l_extendedprice"]
NAMED = {"l_shipmode": "equality", "l_returnflag": "equality", "l_shipinstruct": "equality",
         "l_quantity": "bitsliced", "l_discount": "bitsliced", "l_extendedprice": "bitsliced"}


def rcfmt_expr(q):
    out = None
    for name, op, v in QUERIES[q]:
        c = rcfmt.col(name)
        term = {"==": c == v, "<": c < v, "<=": c <= v, ">=": c >= v}[op]
        out = term if out is None else out & term
    return out


def sql_where(q):
    def lit(v):
        return f"'{v}'" if isinstance(v, str) else str(v)
    return " AND ".join(f"{n} {'=' if op == '==' else op} {lit(v)}" for n, op, v in QUERIES[q])


def truth(table: pa.Table, q: str) -> tuple[int, int]:
    mask = None
    for name, op, v in QUERIES[q]:
        col = table.column(name)
        scalar = pa.scalar(v, col.type) if not isinstance(v, str) else v
        fn = {"==": pc.equal, "<": pc.less, "<=": pc.less_equal, ">=": pc.greater_equal}[op]
        m = fn(col, scalar)
        mask = m if mask is None else pc.and_(mask, m)
    picked = table.filter(mask)
    return picked.num_rows, int(pc.sum(picked.column("l_orderkey")).as_py() or 0)


# ------------------------------------------------------------------ engines
def run_rcfmt(path, q, mode):
    with rcfmt.open(path) as f:
        scan = f.scan(PROJECT if mode == "rows" else [], filter=rcfmt_expr(q))
        if mode == "count":
            return scan.count(), None, scan.stats
        t = scan.read()
        return t.num_rows, int(pc.sum(t.column("l_orderkey")).as_py() or 0), scan.stats


def run_pyarrow(path, q, mode):
    filt = None
    for name, op, v in QUERIES[q]:
        term = {"==": pc.field(name) == v, "<": pc.field(name) < v, "<=": pc.field(name) <= v,
                ">=": pc.field(name) >= v}[op]
        filt = term if filt is None else filt & term
    t = pq.read_table(path, columns=PROJECT if mode == "rows" else [], filters=filt)
    if mode == "count":
        return t.num_rows, None, None
    return t.num_rows, int(pc.sum(t.column("l_orderkey")).as_py() or 0), None


def run_duckdb(path, q, mode):
    con = peers.duckdb_connection(True)
    if mode == "count":
        ((n,),) = con.execute(f"select count(*) from read_parquet('{path}') where {sql_where(q)}").fetchall()
        return n, None, None
    t = con.sql(f"select {', '.join(PROJECT)} from read_parquet('{path}') where {sql_where(q)}").to_arrow_table()
    return t.num_rows, int(pc.sum(t.column("l_orderkey")).as_py() or 0), None


def run_polars(path, q, mode):
    import polars as pl

    expr = None
    for name, op, v in QUERIES[q]:
        c = pl.col(name)
        lit = pl.lit(v) if isinstance(v, str) else pl.lit(v, dtype=pl.Decimal(15, 2))
        term = {"==": c == lit, "<": c < lit, "<=": c <= lit, ">=": c >= lit}[op]
        expr = term if expr is None else expr & term
    lf = pl.scan_parquet(path).filter(expr)
    if mode == "count":
        return int(lf.select(pl.len()).collect().item()), None, None
    df = lf.select(PROJECT).collect()
    return df.height, int(df["l_orderkey"].sum()), None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    parquet = peers.layout_path("natural_128k", args.scale)
    if not parquet.exists():
        peers.prepare(args.scale, layouts=["natural_128k"])
    table = pq.read_table(parquet)
    files = {}
    sizes = {}
    for variant, option in (("none", None), ("auto", "auto"), ("named", {**NAMED})):
        path = parquet.with_name(parquet.stem + f".bitmap_{variant}.rcfmt")
        t0 = time.perf_counter()
        rcfmt.write_table(table, path, block_rows=peers.ROW_GROUP_ROWS, bitmap_indexes=option)
        elapsed = time.perf_counter() - t0
        with rcfmt.open(path) as f:
            region = f.footer.bitmap_index or {}
            index_bytes = region.get("length", 0)
            indexed = sorted(f.footer.columns[c].name for c in f.bitmap_columns)
        files[variant] = path
        sizes[variant] = (path.stat().st_size, index_bytes, elapsed, indexed)
        print(f"[bitmap] {variant}: {path.stat().st_size / 1e6:.1f} MB, index {index_bytes / 1e6:.2f} MB "
              f"({100 * index_bytes / path.stat().st_size:.1f}%), written in {elapsed:.1f}s; indexed {indexed}",
              file=sys.stderr, flush=True)

    engines = {
        "rcfmt none": lambda q, m: run_rcfmt(files["none"], q, m),
        "rcfmt auto": lambda q, m: run_rcfmt(files["auto"], q, m),
        "rcfmt named": lambda q, m: run_rcfmt(files["named"], q, m),
        "pyarrow": lambda q, m: run_pyarrow(parquet, q, m),
        "duckdb": lambda q, m: run_duckdb(parquet, q, m),
        "polars": lambda q, m: run_polars(parquet, q, m),
    }
    rows = []
    for q in QUERIES:
        expected_rows, expected_sum = truth(table, q)
        for mode in ("rows", "count"):
            times, stats = {}, {}
            for engine, fn in engines.items():
                timing, (n, keysum, st) = measure(lambda: fn(q, mode), repeat=args.repeat)
                if n != expected_rows or (keysum is not None and keysum != expected_sum):
                    raise SystemExit(f"{engine} {q} {mode}: {n} rows / {keysum}, expected {expected_rows} / "
                                     f"{expected_sum}")
                times[engine] = timing.best
                stats[engine] = st
            peer = min(times[e] for e in ("pyarrow", "duckdb", "polars"))
            fastest_peer = min(("pyarrow", "duckdb", "polars"), key=times.get)
            for engine in ("rcfmt none", "rcfmt auto", "rcfmt named"):
                st = stats[engine]
                rows.append([q, mode, engine, f"{times[engine] * 1e3:.1f}", f"{fastest_peer} {peer * 1e3:.1f}",
                             f"{peer / times[engine]:.2f}x", f"{expected_rows:,}",
                             f"{st.rows_decoded:,}", f"{st.rows_selected_index:,}", st.blocks_pruned_index])
            print(f"[bitmap] {q} {mode}: " + ", ".join(f"{e} {t * 1e3:.1f} ms" for e, t in times.items()),
                  file=sys.stderr, flush=True)
    print("\n### Files\n")
    print(md_table(["variant", "file MB", "index MB", "index share", "write s", "indexed columns"],
                   [[v, f"{s / 1e6:.1f}", f"{i / 1e6:.2f}", f"{100 * i / s:.1f}%", f"{w:.1f}", ", ".join(c) or "-"]
                    for v, (s, i, w, c) in sizes.items()]))
    print("\n### Queries (best of %d, ms; ratio = fastest peer / rcfmt, > 1: rcfmt faster)\n" % args.repeat)
    print(md_table(["query", "output", "rcfmt file", "rcfmt ms", "fastest peer ms", "ratio", "rows matching",
                    "rows decoded", "rows by index", "blocks pruned by index"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
