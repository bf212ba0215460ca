"""Spark end to end: rcfmt's Python data source against Spark's own Parquet reader.

TPC-H lineitem (SF1 by default) in two layouts -- ``natural`` (generator order, by
l_orderkey) and ``zorder`` (``datasets.zorder_by_rank`` on l_shipdate, l_partkey) --
is written **by Spark** twice from the same DataFrame (so the same rows in the same
order, the same files per task): as Parquet (zstd, 131,072-row row groups through
``parquet.block.row.count.limit``, page index on: parquet-java's default) and as rcfmt
(``blockRows=131072``, compression "auto"). Then, in one ``local[2]`` session:

* ``trivial`` -- ``count(*)`` of a 1,000-row copy (the fixed cost of a query);
* ``agg1``  -- one-column aggregate: sum(l_quantity);
* ``full``  -- full-scan aggregate reading every column (sums, maxima, a distinct count);
* ``Q1``    -- TPC-H Q1 (shipdate <= 1998-09-02, group by returnflag, linestatus);
* ``Q6``    -- TPC-H Q6 (the Q_c of bench_peers.py);
* ``Q_a``   -- the selective two-column range query of bench_peers.py, all columns;
* ``point`` -- l_orderkey = K (Q_b of bench_peers.py), all columns.

How rcfmt is read (what the README's "Spark: fast and correct" section tells a user):
the relation-defining options, ``.option("columns", ...)`` with the columns the query
needs (Python sources get no column pruning from Spark) and ``.option("filter", ...)``
with the query's WHERE clause (files, blocks, pages and rows pruned; Spark re-applies
its own filter on top). The filter-pushdown conf stays at its default (off).

Every timed run builds the DataFrame and collects the result (planning included).
Results are checked: same row counts and checksums for both formats. Each figure is the
best of --repeat runs after one warm-up. Output: a Markdown table on stdout and
bench/out/spark.json.

    python bench/bench_spark.py                      # SF1, --repeat 3
    python bench/bench_spark.py --scale 0.1 --repeat 1
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (busy_warning, fmt_bytes, fmt_seconds, file_size, machine_info,  # noqa: E402
                    machine_line, md_table, measure, scratch_dir, write_json)
import bench_peers  # noqa: E402
import datasets  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BLOCK_ROWS = 131072
LAYOUTS = ("natural", "zorder")
QUERIES = ("trivial", "agg1", "full", "Q1", "Q6", "Q_a", "point")
TINY_ROWS = 1000
ALL_COLUMNS = None  # marker: the query needs every column
COLUMNS = {
    "trivial": ["l_orderkey"],
    "agg1": ["l_quantity"],
    "full": ALL_COLUMNS,
    "Q1": ["l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_shipdate"],
    "Q6": ["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"],
    "Q_a": ALL_COLUMNS,
    "point": ALL_COLUMNS,
}


def where(q: str, c: "bench_peers.Constants") -> str | None:
    """The query's WHERE clause (also rcfmt's relation filter), None if it has none."""
    if q == "Q1":
        return "l_shipdate <= date'1998-09-02'"
    if q == "Q6":
        return (f"l_shipdate >= date'{c.q6_date_lo}' AND l_shipdate < date'{c.q6_date_hi}' "
                f"AND l_discount BETWEEN {c.q6_disc_lo} AND {c.q6_disc_hi} AND l_quantity < {c.q6_qty_lt}")
    if q == "Q_a":
        return (f"l_shipdate >= date'{c.shipdate_lo}' AND l_shipdate < date'{c.shipdate_hi}' "
                f"AND l_partkey BETWEEN {c.partkey_lo} AND {c.partkey_hi}")
    if q == "point":
        return f"l_orderkey = {c.orderkey}"
    return None


def sql(q: str, c: "bench_peers.Constants", view: str) -> str:
    if q == "trivial":
        return f"SELECT count(*) AS n FROM {view}"
    if q == "agg1":
        return f"SELECT sum(l_quantity) AS q FROM {view}"
    if q == "full":
        return (f"SELECT count(*) AS n, sum(l_quantity) AS q, sum(l_extendedprice) AS p, sum(l_discount) AS d, "
                f"sum(l_tax) AS t, count(DISTINCT l_returnflag, l_linestatus) AS f, max(l_shipdate) AS s, "
                f"max(l_commitdate) AS c, max(l_receiptdate) AS r, max(l_shipinstruct) AS i, "
                f"max(l_shipmode) AS m, max(l_comment) AS cm, sum(l_orderkey) AS o, sum(l_partkey) AS pk, "
                f"sum(l_suppkey) AS sk, sum(l_linenumber) AS ln FROM {view}")
    if q == "Q1":
        return (f"SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, "
                f"sum(l_extendedprice) AS sum_base_price, "
                f"sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price, "
                f"sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge, "
                f"avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc, "
                f"count(*) AS count_order FROM {view} WHERE {where(q, c)} "
                f"GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus")
    if q == "Q6":
        return f"SELECT sum(l_extendedprice * l_discount) AS revenue FROM {view} WHERE {where(q, c)}"
    if q in ("Q_a", "point"):
        return f"SELECT * FROM {view} WHERE {where(q, c)}"
    raise ValueError(q)


def summary(q: str, rows) -> tuple:
    """A comparable digest of a result (exact decimals)."""
    if q in ("Q_a", "point"):
        return (len(rows), sum(r["l_orderkey"] for r in rows), sum(r["l_extendedprice"] for r in rows))
    return tuple(tuple(Decimal(str(v)) if isinstance(v, float) else v for v in r) for r in rows)


# --------------------------------------------------------------------------- session and data
def session(driver_memory: str):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("rcfmt-bench-spark")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.memory", driver_memory)
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def build(spark, table, scale: float, rebuild: bool) -> dict:
    """Write both layouts with Spark, as Parquet and as rcfmt; return their paths and
    write times."""
    tag = datasets._scale_tag(scale)
    out = {}
    peers = bench_peers.build_layouts(table, scale, ("natural_128k", "zorder_128k"), rebuild=False)
    base = scratch_dir("spark")
    for layout, src in (("natural", peers["natural_128k"]), ("zorder", peers["zorder_128k"])):
        pq_path, rc_path = base / f"lineitem_sf{tag}.{layout}.parquet", base / f"lineitem_sf{tag}.{layout}.rcfmt"
        info = {"parquet": str(pq_path), "rcfmt": str(rc_path)}
        df = spark.read.parquet(str(src))  # the same splits, in order, for both writes
        if rebuild or not (pq_path / "_SUCCESS").exists():
            shutil.rmtree(pq_path, ignore_errors=True)
            t0 = time.perf_counter()
            (df.write.mode("overwrite").option("compression", "zstd")
             .option("parquet.block.row.count.limit", BLOCK_ROWS).parquet(str(pq_path)))
            info["parquet_write_s"] = time.perf_counter() - t0
        if rebuild or not (rc_path / "_rcfmt").exists():
            shutil.rmtree(rc_path, ignore_errors=True)
            t0 = time.perf_counter()
            df.write.format("rcfmt").mode("overwrite").option("blockRows", BLOCK_ROWS).save(str(rc_path))
            info["rcfmt_write_s"] = time.perf_counter() - t0
        tiny_pq, tiny_rc = base / f"tiny_sf{tag}.{layout}.parquet", base / f"tiny_sf{tag}.{layout}.rcfmt"
        if rebuild or not (tiny_rc / "_rcfmt").exists():
            shutil.rmtree(tiny_pq, ignore_errors=True)
            shutil.rmtree(tiny_rc, ignore_errors=True)
            tiny = spark.read.parquet(str(pq_path)).limit(TINY_ROWS).coalesce(1)
            tiny.write.parquet(str(tiny_pq))
            spark.read.parquet(str(tiny_pq)).write.format("rcfmt").mode("overwrite").save(str(tiny_rc))
        info["tiny_parquet"], info["tiny_rcfmt"] = str(tiny_pq), str(tiny_rc)
        info["parquet_bytes"] = file_size(pq_path)
        info["rcfmt_bytes"] = file_size(rc_path)
        print(f"[spark] {layout}: parquet {fmt_bytes(info['parquet_bytes'])}, rcfmt "
              f"{fmt_bytes(info['rcfmt_bytes'])}", file=sys.stderr, flush=True)
        out[layout] = info
    return out


def run(spark, fmt: str, path: str, q: str, c):
    if fmt == "parquet":
        spark.read.parquet(path).createOrReplaceTempView("t_parquet")
        return spark.sql(sql(q, c, "t_parquet")).collect()
    reader = spark.read.format("rcfmt")
    if COLUMNS[q] is not ALL_COLUMNS:
        reader = reader.option("columns", ", ".join(COLUMNS[q]))
    if where(q, c) is not None:
        reader = reader.option("filter", where(q, c))
    reader.load(path).createOrReplaceTempView("t_rcfmt")
    return spark.sql(sql(q, c, "t_rcfmt")).collect()


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--queries", default=",".join(QUERIES))
    ap.add_argument("--rebuild", action="store_true", help="rewrite the Spark-written files")
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--out", default="spark")
    args = ap.parse_args(argv)
    warn = busy_warning()
    if warn:
        print(warn, file=sys.stderr)
    table = datasets.tpch_lineitem(args.scale)
    c = bench_peers.choose_constants(table)
    del table
    spark = session(args.driver_memory)
    import pyspark

    layouts = [x for x in args.layouts.split(",") if x]
    queries = [x for x in args.queries.split(",") if x]
    paths = build(spark, datasets.tpch_lineitem(args.scale), args.scale, args.rebuild)
    results, rows, ok = [], [], True
    for layout in layouts:
        p = paths[layout]
        for q in queries:
            pq_path, rc_path = (p["tiny_parquet"], p["tiny_rcfmt"]) if q == "trivial" else (p["parquet"], p["rcfmt"])
            tp, rp = measure(lambda: run(spark, "parquet", pq_path, q, c), repeat=args.repeat)
            tr, rr = measure(lambda: run(spark, "rcfmt", rc_path, q, c), repeat=args.repeat)
            same = summary(q, rp) == summary(q, rr)
            ok &= same
            ratio = tr.best / tp.best
            results.append({"layout": layout, "query": q, "parquet": tp.to_dict(), "rcfmt": tr.to_dict(),
                            "ratio": ratio, "rows": len(rr), "same_result": same})
            rows.append([layout, q, fmt_seconds(tp.best), fmt_seconds(tr.best), f"{ratio:.2f}x",
                         f"{1 / ratio:.2f}x", f"{(tr.best - tp.best) * 1e3:+.0f} ms", "ok" if same else "MISMATCH"])
            print(f"[spark] {layout} {q}: parquet {tp}, rcfmt {tr} ({ratio:.2f}x)", file=sys.stderr, flush=True)
    spark.stop()
    print(machine_line())
    print(f"pyspark {pyspark.__version__}, local[2], scale {args.scale}, best of {args.repeat}")
    print()
    print(md_table(["layout", "query", "Spark Parquet", "rcfmt source", "rcfmt / Parquet", "speed-up",
                    "rcfmt - Parquet", "result"], rows))
    print()
    print(md_table(["layout", "Parquet size", "rcfmt size", "Parquet write", "rcfmt write"],
                   [[lay, fmt_bytes(paths[lay]["parquet_bytes"]), fmt_bytes(paths[lay]["rcfmt_bytes"]),
                     fmt_seconds(paths[lay].get("parquet_write_s")), fmt_seconds(paths[lay].get("rcfmt_write_s"))]
                    for lay in layouts]))
    write_json(args.out, {"machine": machine_info(), "pyspark": pyspark.__version__, "scale": args.scale,
                          "files": paths, "results": results}, args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
