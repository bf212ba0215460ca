"""Peer engines for the data-skipping benchmark: the same queries on Parquet files of
TPC-H lineitem, run with pyarrow, DuckDB and Polars, one-threaded and threaded.

Layouts (all zstd, page index on, built once and cached under bench/data/peers/):

* ``natural_128k`` -- generator order (sorted by l_orderkey), 131,072-row row groups;
* ``zorder_128k``  -- Z-ordered by rank on (l_shipdate, l_partkey), 131,072-row groups;
* ``natural_1rg``  -- generator order, the whole table in a single row group.

Queries (constants derived deterministically from the data, see :func:`choose_constants`):

* ``Q_a`` -- ``l_shipdate`` in a one-week range AND ``l_partkey`` in a ~1% range of the
  part keys; all columns;
* ``Q_b`` -- point lookup ``l_orderkey = K``; all columns;
* ``Q_c`` -- TPC-H Q6: ``sum(l_extendedprice * l_discount)`` where l_shipdate in 1994,
  l_discount between 0.05 and 0.07 and l_quantity < 24.

Engines:

* pyarrow: ``pq.read_table(path, filters=expr, use_threads=...)`` (+ ``pyarrow.compute``
  for Q_c's sum);
* DuckDB: ``con.sql("select ... from read_parquet(path) where ...")`` materialised with
  ``.to_arrow_table()`` (Q_c: ``fetchall()``), ``SET threads=1`` or all cores;
* Polars: ``pl.scan_parquet(path).filter(...).collect()`` (a Polars DataFrame; Q_c:
  ``.select(sum).collect()``). ``POLARS_MAX_THREADS`` is read once, when polars is
  imported, so each Polars thread setting runs in its own subprocess
  (``python bench_peers.py --polars-worker``) and polars is never imported by the
  parent process.

Every engine's result is checked against a reference computed in memory with
``pyarrow.compute`` (row count, sum(l_orderkey), sum(l_extendedprice); Q_c's exact
decimal sum). Each figure is the best of --repeat runs after one untimed warm-up.

    python bench/bench_peers.py                         # SF1, --repeat 3
    python bench/bench_peers.py --scale 0.1 --repeat 1 --engines pyarrow,duckdb

For the rcfmt side, reuse :func:`prepare`, :data:`QUERIES`, :func:`reference_results`,
:func:`time_query` and :func:`check_result`, and register a runner in ``ENGINES``:
``runner(query_name, path, constants, threads: bool) -> result`` and a summariser in
``SUMMARISERS`` that turns the result into :class:`Summary`.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (busy_warning, fmt_bytes, fmt_seconds, machine_line, md_table,
                    measure, scratch_dir, write_json)
import datasets  # noqa: E402

ROW_GROUP_ROWS = 131072
ZORDER_COLUMNS = ("l_shipdate", "l_partkey")
LAYOUTS = ("natural_128k", "zorder_128k", "natural_1rg")
QUERIES = ("Q_a", "Q_b", "Q_c")
# Which queries run on which layout by default (--all-queries runs everything).
DEFAULT_MATRIX = {
    "natural_128k": ("Q_a", "Q_b", "Q_c"),
    "zorder_128k": ("Q_a", "Q_b", "Q_c"),
    "natural_1rg": ("Q_b",),
}
QUERY_TEXT = {
    "Q_a": "l_shipdate in 1 week AND l_partkey in ~1% of parts, all columns",
    "Q_b": "l_orderkey = K, all columns",
    "Q_c": "TPC-H Q6: sum(l_extendedprice*l_discount), 1994, disc 0.05-0.07, qty < 24",
}
PARQUET_OPTS = dict(compression="zstd", write_page_index=True)
DEC = pa.decimal128(15, 2)
Q_C_COLUMNS = ["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"]


# --------------------------------------------------------------------------- constants
@dataclass(frozen=True)
class Constants:
    """Query constants. Dates are ISO strings, bounds as noted (JSON-serialisable)."""

    shipdate_lo: str       # Q_a: l_shipdate >= shipdate_lo
    shipdate_hi: str       # Q_a: l_shipdate <  shipdate_hi (shipdate_lo + 7 days)
    partkey_lo: int        # Q_a: l_partkey between partkey_lo and partkey_hi (inclusive)
    partkey_hi: int
    orderkey: int          # Q_b: l_orderkey = orderkey
    q6_date_lo: str = "1994-01-01"
    q6_date_hi: str = "1995-01-01"
    q6_disc_lo: str = "0.05"
    q6_disc_hi: str = "0.07"
    q6_qty_lt: str = "24"

    def d(self, name: str) -> dt.date:
        return dt.date.fromisoformat(getattr(self, name))


def choose_constants(table: pa.Table) -> Constants:
    """Deterministic constants from lineitem in generator (l_orderkey) order.

    * Q_a: the week starting at the distinct l_shipdate at the 40% position, and a part
      key range of width ceil(#keys / 100) starting at 60% of the key domain;
    * Q_b: the l_orderkey of row floor(0.61 * n) (so it exists).
    """
    dates = np.unique(table.column("l_shipdate").to_numpy())
    start = dates[int(0.4 * (len(dates) - 1))].astype("datetime64[D]").item()
    pk = table.column("l_partkey")
    mm = pc.min_max(pk)
    pmin, pmax = mm["min"].as_py(), mm["max"].as_py()
    span = pmax - pmin + 1
    width = max(1, -(-span // 100))
    lo = pmin + int(0.6 * span)
    orderkey = table.column("l_orderkey")[int(0.61 * table.num_rows)].as_py()
    return Constants(shipdate_lo=start.isoformat(),
                     shipdate_hi=(start + dt.timedelta(days=7)).isoformat(),
                     partkey_lo=lo, partkey_hi=min(pmax, lo + width - 1), orderkey=orderkey)


# --------------------------------------------------------------------------- results
@dataclass
class Summary:
    """What is compared across engines: rows, and checksums (as strings: exact)."""

    rows: int
    sum_orderkey: int | None = None
    sum_extendedprice: str | None = None
    revenue: str | None = None  # Q_c

    def key(self):
        return (self.rows, self.sum_orderkey, self.sum_extendedprice, self.revenue)


def _dec_str(v, places: int) -> str | None:
    if v is None:
        return None
    return str(Decimal(str(v)).quantize(Decimal(1).scaleb(-places)))


def summarise_arrow(query: str, result) -> Summary:
    """Summary of an Arrow table (row queries) or a scalar/Decimal (Q_c)."""
    if query == "Q_c":
        v = result.as_py() if isinstance(result, pa.Scalar) else result
        return Summary(rows=1, revenue=_dec_str(v, 4))
    if isinstance(result, pa.RecordBatchReader):
        result = result.read_all()
    so = pc.sum(result.column("l_orderkey")).as_py() if result.num_rows else 0
    se = pc.sum(result.column("l_extendedprice")).as_py() if result.num_rows else 0
    return Summary(rows=result.num_rows, sum_orderkey=so, sum_extendedprice=_dec_str(se, 2))


def reference_results(table: pa.Table, c: Constants) -> dict[str, Summary]:
    """The expected result of every query, computed in memory with pyarrow.compute."""
    out = {}
    for q in QUERIES:
        mask = _arrow_mask(table, q, c)
        if q == "Q_c":
            sub = table.filter(mask)
            out[q] = summarise_arrow(q, pc.sum(pc.multiply(sub["l_extendedprice"],
                                                           sub["l_discount"])))
        else:
            out[q] = summarise_arrow(q, table.filter(mask))
    return out


# --------------------------------------------------------------------------- predicates
def _predicate(q: str, c: Constants, field: Callable[[str], Any]):
    """Build the predicate of query ``q`` with ``field(name)`` (pc.field or ds.field)."""
    if q == "Q_a":
        return ((field("l_shipdate") >= pa.scalar(c.d("shipdate_lo"), pa.date32()))
                & (field("l_shipdate") < pa.scalar(c.d("shipdate_hi"), pa.date32()))
                & (field("l_partkey") >= pa.scalar(c.partkey_lo, pa.int64()))
                & (field("l_partkey") <= pa.scalar(c.partkey_hi, pa.int64())))
    if q == "Q_b":
        return field("l_orderkey") == pa.scalar(c.orderkey, pa.int64())
    if q == "Q_c":
        return ((field("l_shipdate") >= pa.scalar(c.d("q6_date_lo"), pa.date32()))
                & (field("l_shipdate") < pa.scalar(c.d("q6_date_hi"), pa.date32()))
                & (field("l_discount") >= pa.scalar(Decimal(c.q6_disc_lo), DEC))
                & (field("l_discount") <= pa.scalar(Decimal(c.q6_disc_hi), DEC))
                & (field("l_quantity") < pa.scalar(Decimal(c.q6_qty_lt), DEC)))
    raise ValueError(q)


def _arrow_mask(table: pa.Table, q: str, c: Constants):
    """Boolean mask of query ``q`` over an in-memory table (the reference)."""
    col = table.column
    if q == "Q_a":
        return pc.and_(pc.and_(pc.greater_equal(col("l_shipdate"), pa.scalar(c.d("shipdate_lo"), pa.date32())),
                               pc.less(col("l_shipdate"), pa.scalar(c.d("shipdate_hi"), pa.date32()))),
                       pc.and_(pc.greater_equal(col("l_partkey"), c.partkey_lo),
                               pc.less_equal(col("l_partkey"), c.partkey_hi)))
    if q == "Q_b":
        return pc.equal(col("l_orderkey"), c.orderkey)
    m = pc.and_(pc.greater_equal(col("l_shipdate"), pa.scalar(c.d("q6_date_lo"), pa.date32())),
                pc.less(col("l_shipdate"), pa.scalar(c.d("q6_date_hi"), pa.date32())))
    m = pc.and_(m, pc.greater_equal(col("l_discount"), pa.scalar(Decimal(c.q6_disc_lo), DEC)))
    m = pc.and_(m, pc.less_equal(col("l_discount"), pa.scalar(Decimal(c.q6_disc_hi), DEC)))
    return pc.and_(m, pc.less(col("l_quantity"), pa.scalar(Decimal(c.q6_qty_lt), DEC)))


def row_groups_kept(path: Path, q: str, c: Constants) -> tuple[int, int]:
    """(row groups whose min/max statistics may match the predicate, total row groups):
    what any engine doing row-group skipping has to read at most."""
    md = pq.ParquetFile(path).metadata
    names = {md.schema.column(i).name: i for i in range(md.num_columns)}

    def overlaps(rg, col, lo=None, hi=None, lo_strict=False, hi_strict=False):
        s = rg.column(names[col]).statistics
        if s is None or not s.has_min_max:
            return True
        if lo is not None and (s.max < lo or (lo_strict and s.max == lo)):
            return False
        if hi is not None and (s.min > hi or (hi_strict and s.min == hi)):
            return False
        return True

    kept = 0
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        if q == "Q_a":
            ok = (overlaps(rg, "l_shipdate", c.d("shipdate_lo"), c.d("shipdate_hi"), hi_strict=True)
                  and overlaps(rg, "l_partkey", c.partkey_lo, c.partkey_hi))
        elif q == "Q_b":
            ok = overlaps(rg, "l_orderkey", c.orderkey, c.orderkey)
        else:
            ok = (overlaps(rg, "l_shipdate", c.d("q6_date_lo"), c.d("q6_date_hi"), hi_strict=True)
                  and overlaps(rg, "l_discount", Decimal(c.q6_disc_lo), Decimal(c.q6_disc_hi))
                  and overlaps(rg, "l_quantity", None, Decimal(c.q6_qty_lt), hi_strict=True))
        kept += bool(ok)
    return kept, md.num_row_groups


# --------------------------------------------------------------------------- engines
def run_pyarrow(q: str, path: Path, c: Constants, threads: bool):
    filt = _predicate(q, c, pads.field)
    if q == "Q_c":
        t = pq.read_table(path, columns=Q_C_COLUMNS, filters=filt, use_threads=threads)
        return pc.sum(pc.multiply(t["l_extendedprice"], t["l_discount"]))
    return pq.read_table(path, filters=filt, use_threads=threads)


def duckdb_sql(q: str, path: Path, c: Constants) -> str:
    src = f"read_parquet('{path}')"
    if q == "Q_a":
        return (f"SELECT * FROM {src} WHERE l_shipdate >= DATE '{c.shipdate_lo}' "
                f"AND l_shipdate < DATE '{c.shipdate_hi}' "
                f"AND l_partkey BETWEEN {c.partkey_lo} AND {c.partkey_hi}")
    if q == "Q_b":
        return f"SELECT * FROM {src} WHERE l_orderkey = {c.orderkey}"
    return (f"SELECT sum(l_extendedprice * l_discount) AS revenue FROM {src} "
            f"WHERE l_shipdate >= DATE '{c.q6_date_lo}' AND l_shipdate < DATE '{c.q6_date_hi}' "
            f"AND l_discount BETWEEN {c.q6_disc_lo} AND {c.q6_disc_hi} "
            f"AND l_quantity < {c.q6_qty_lt}")


_DUCK: dict[int, Any] = {}


def duckdb_connection(threads: bool):
    """One DuckDB connection per thread setting (``SET threads``), reused."""
    import duckdb
    n = (os.cpu_count() or 1) if threads else 1
    con = _DUCK.get(n)
    if con is None:
        con = duckdb.connect()
        con.execute(f"SET threads = {n}")
        _DUCK[n] = con
    return con


def run_duckdb(q: str, path: Path, c: Constants, threads: bool):
    con = duckdb_connection(threads)
    rel = con.sql(duckdb_sql(q, path, c))
    if q == "Q_c":
        return rel.fetchall()[0][0]
    return rel.to_arrow_table()


def run_polars(q: str, path: Path, c: Constants, threads: bool):
    """Run in a process whose POLARS_MAX_THREADS was set before polars was imported;
    ``threads`` is only a label here (see :func:`polars_subprocess`)."""
    import polars as pl
    lf = pl.scan_parquet(path)
    if q == "Q_a":
        return lf.filter((pl.col("l_shipdate") >= c.d("shipdate_lo"))
                         & (pl.col("l_shipdate") < c.d("shipdate_hi"))
                         & pl.col("l_partkey").is_between(c.partkey_lo, c.partkey_hi)).collect()
    if q == "Q_b":
        return lf.filter(pl.col("l_orderkey") == c.orderkey).collect()
    # Polars multiplies decimal(15,2) * decimal(15,2) at scale 2 (truncating each
    # product), so widen one side to scale 4 to get the exact TPC-H answer.
    return lf.filter((pl.col("l_shipdate") >= c.d("q6_date_lo"))
                     & (pl.col("l_shipdate") < c.d("q6_date_hi"))
                     & (pl.col("l_discount") >= Decimal(c.q6_disc_lo))
                     & (pl.col("l_discount") <= Decimal(c.q6_disc_hi))
                     & (pl.col("l_quantity") < Decimal(c.q6_qty_lt))).select(
        (pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * pl.col("l_discount"))
        .sum().alias("revenue")).collect()


def summarise_polars(q: str, df) -> Summary:
    if q == "Q_c":
        return Summary(rows=1, revenue=_dec_str(df.item(), 4))
    if df.height == 0:
        return Summary(rows=0, sum_orderkey=0, sum_extendedprice=_dec_str(0, 2))
    return Summary(rows=df.height, sum_orderkey=int(df["l_orderkey"].sum()),
                   sum_extendedprice=_dec_str(df["l_extendedprice"].sum(), 2))


ENGINES: dict[str, Callable] = {"pyarrow": run_pyarrow, "duckdb": run_duckdb,
                                "polars": run_polars}
SUMMARISERS: dict[str, Callable] = {"pyarrow": summarise_arrow, "duckdb": summarise_arrow,
                                    "polars": summarise_polars}
IN_PROCESS = ("pyarrow", "duckdb")  # polars always runs in a subprocess


def time_query(engine: str, q: str, path: Path, c: Constants, threads: bool,
               repeat: int) -> dict:
    """Time one (engine, query, layout, threads) cell; returns timing + Summary."""
    runner, summarise = ENGINES[engine], SUMMARISERS[engine]
    timing, result = measure(lambda: runner(q, path, c, threads), repeat=repeat)
    return {"timing": timing.to_dict(), "summary": asdict(summarise(q, result))}


def check_result(summary: dict | Summary, expected: Summary) -> bool:
    s = Summary(**summary) if isinstance(summary, dict) else summary
    return s.key() == expected.key()


# --------------------------------------------------------------------------- polars worker
def polars_subprocess(tasks: list[dict], c: Constants, nthreads: int, repeat: int) -> list[dict]:
    """Run polars tasks ({query, layout, path}) in a child with POLARS_MAX_THREADS."""
    env = dict(os.environ, POLARS_MAX_THREADS=str(nthreads))
    payload = json.dumps({"tasks": tasks, "constants": asdict(c), "repeat": repeat})
    proc = subprocess.run([sys.executable, __file__, "--polars-worker"], input=payload,
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"polars worker failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def _polars_worker() -> int:
    spec = json.loads(sys.stdin.read())
    c = Constants(**spec["constants"])
    import polars as pl
    out = []
    for task in spec["tasks"]:
        r = time_query("polars", task["query"], Path(task["path"]), c, True, spec["repeat"])
        r["polars_threads"] = pl.thread_pool_size()
        out.append(r)
    json.dump(out, sys.stdout)
    return 0


# --------------------------------------------------------------------------- layouts
def layout_path(layout: str, scale: float) -> Path:
    return scratch_dir("peers") / f"lineitem_sf{scale:g}.{layout}.parquet"


def _layout_ok(path: Path, rows: int, rg_rows: int) -> bool:
    if not path.exists():
        return False
    try:
        md = pq.ParquetFile(path).metadata
    except Exception:  # noqa: BLE001 - a half-written file
        return False
    return md.num_rows == rows and md.row_group(0).num_rows == min(rows, rg_rows)


def build_layouts(table: pa.Table, scale: float, layouts=LAYOUTS, rebuild: bool = False,
                  verbose: bool = True) -> dict[str, Path]:
    """Write (or reuse) the Parquet layouts of ``table`` (lineitem in natural order)."""
    paths = {}
    zordered = None
    for layout in layouts:
        path = layout_path(layout, scale)
        rg_rows = table.num_rows if layout == "natural_1rg" else ROW_GROUP_ROWS
        paths[layout] = path
        if not rebuild and _layout_ok(path, table.num_rows, rg_rows):
            continue
        t0 = time.perf_counter()
        src = table
        if layout == "zorder_128k":
            if zordered is None:
                zordered = datasets.zorder_by_rank(table, ZORDER_COLUMNS)
            src = zordered
        tmp = path.with_suffix(".tmp")
        pq.write_table(src, tmp, row_group_size=rg_rows, **PARQUET_OPTS)
        os.replace(tmp, path)
        if verbose:
            print(f"[peers] wrote {path.name} ({fmt_bytes(path.stat().st_size)}) in "
                  f"{time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    return paths


def prepare(scale: float = 1, rebuild: bool = False, layouts=LAYOUTS):
    """Load lineitem, choose constants, build layouts, compute reference results.
    Returns (table, constants, {layout: path}, {query: Summary})."""
    table = datasets.tpch_lineitem(scale)
    c = choose_constants(table)
    paths = build_layouts(table, scale, layouts, rebuild)
    ref = reference_results(table, c)
    return table, c, paths, ref


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Peer engines (pyarrow, DuckDB, Polars) on "
                                             "the skipping-benchmark queries")
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per figure (default 3)")
    ap.add_argument("--engines", default="pyarrow,duckdb,polars")
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--queries", default=",".join(QUERIES))
    ap.add_argument("--all-queries", action="store_true",
                    help="run every query on every layout (default: Q_b only on natural_1rg)")
    ap.add_argument("--threads", action=argparse.BooleanOptionalAction, default=None,
                    help="--threads: threaded only; --no-threads: one thread only; default both")
    ap.add_argument("--rebuild", action="store_true", help="rewrite the Parquet layouts")
    ap.add_argument("--out", default="peers", help="results name: bench/out/<out>.json")
    ap.add_argument("--polars-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.polars_worker:
        return _polars_worker()

    engines = [e for e in args.engines.split(",") if e]
    layouts = [x for x in args.layouts.split(",") if x]
    queries = [x for x in args.queries.split(",") if x]
    for e in engines:
        if e not in ENGINES:
            ap.error(f"unknown engine {e}")
    modes = [False, True] if args.threads is None else [bool(args.threads)]
    ncores = os.cpu_count() or 1

    print(f"# Peer engines on lineitem SF{args.scale:g}\n\nMachine: {machine_line()}\n",
          flush=True)
    if busy_warning():
        print(busy_warning() + "\n", flush=True)
    t_start = time.perf_counter()
    table, c, paths, ref = prepare(args.scale, args.rebuild, layouts)
    n_rows = table.num_rows
    del table
    cells = [(lay, q) for lay in layouts for q in queries
             if args.all_queries or q in DEFAULT_MATRIX.get(lay, QUERIES)]

    results: dict[str, Any] = {
        "scale": args.scale, "rows": n_rows, "repeat": args.repeat, "constants": asdict(c),
        "reference": {q: asdict(s) for q, s in ref.items()},
        "layouts": {lay: {"path": str(p), "size": p.stat().st_size,
                          "row_groups": pq.ParquetFile(p).metadata.num_row_groups}
                    for lay, p in paths.items()},
        "row_groups_kept": {f"{lay}/{q}": row_groups_kept(paths[lay], q, c) for lay, q in cells},
        "cells": [],
    }
    print(f"Constants: Q_a l_shipdate in [{c.shipdate_lo}, {c.shipdate_hi}) and l_partkey "
          f"between {c.partkey_lo} and {c.partkey_hi}; Q_b l_orderkey = {c.orderkey}\n",
          flush=True)

    def record(engine, lay, q, threads, r):
        ok = check_result(r["summary"], ref[q])
        r.update(engine=engine, layout=lay, query=q,
                 threads=("1" if not threads else str(ncores)), correct=ok)
        results["cells"].append(r)
        t = r["timing"]
        print(f"  {engine:8s} {lay:13s} {q} threads={r['threads']}: "
              f"{fmt_seconds(t['best'])} rows={r['summary']['rows']}"
              f"{'' if ok else '  !! WRONG RESULT ' + str(r['summary'])}",
              file=sys.stderr, flush=True)

    for engine in engines:
        for threads in modes:
            if engine in IN_PROCESS:
                for lay, q in cells:
                    record(engine, lay, q, threads,
                           time_query(engine, q, paths[lay], c, threads, args.repeat))
            else:
                tasks = [{"query": q, "layout": lay, "path": str(paths[lay])} for lay, q in cells]
                out = polars_subprocess(tasks, c, ncores if threads else 1, args.repeat)
                for (lay, q), r in zip(cells, out):
                    record(engine, lay, q, threads, r)

    results["elapsed_s"] = time.perf_counter() - t_start
    results["duckdb_settings"] = _duckdb_settings() if "duckdb" in engines else None
    print(render(results, engines, modes, ncores))
    wrong = [x for x in results["cells"] if not x["correct"]]
    if wrong:
        print(f"\n**{len(wrong)} results differ from the reference** (see JSON)")
    else:
        print("\nAll engines returned the reference row counts / checksums / Q6 sum "
              f"(Q_c revenue = {ref['Q_c'].revenue}).")
    path = write_json(args.out, results, args)
    print(f"Results: {path} (elapsed {results['elapsed_s']:.0f}s)")
    return 1 if wrong else 0


def _duckdb_settings() -> dict:
    con = duckdb_connection(True)
    names = ("enable_external_file_cache", "cache_local_files", "parquet_metadata_cache")
    rows = con.execute("SELECT name, value FROM duckdb_settings() WHERE name IN "
                       f"({', '.join('?' * len(names))})", list(names)).fetchall()
    return dict(rows)


def render(results: dict, engines, modes, ncores: int) -> str:
    by = {(x["engine"], x["layout"], x["query"], x["threads"]): x for x in results["cells"]}
    cols = [(e, "1" if not m else str(ncores)) for e in engines for m in modes]
    headers = ["layout", "query", "rows", "RGs kept"] + [f"{e} {t}t" for e, t in cols]
    rows = []
    seen = []
    for x in results["cells"]:
        k = (x["layout"], x["query"])
        if k not in seen:
            seen.append(k)
    for lay, q in seen:
        kept, total = results["row_groups_kept"][f"{lay}/{q}"]
        row = [lay, q, results["reference"][q]["rows"] if q != "Q_c" else "1",
               f"{kept}/{total}"]
        for e, t in cols:
            x = by.get((e, lay, q, t))
            if x is None:
                row.append("-")
            else:
                row.append(fmt_seconds(x["timing"]["best"]) + ("" if x["correct"] else " (WRONG)"))
        rows.append(row)
    sizes = ", ".join(f"{k} {fmt_bytes(v['size'])} ({v['row_groups']} RGs)"
                      for k, v in results["layouts"].items())
    legend = "\n".join(f"- {q}: {QUERY_TEXT[q]}" for q in QUERY_TEXT)
    return (md_table(headers, rows, align="llrr" + "r" * len(cols))
            + f"\n\nBest of {results['repeat']} after 1 warm-up run. 'RGs kept' = row groups "
              f"whose min/max statistics may match.\nFiles: {sizes}.\n{legend}")


if __name__ == "__main__":
    sys.exit(main())
