"""Spark end to end: rcfmt's Python data source against Spark's own Parquet reader.

TPC-H lineitem (SF1 by default) in two layouts -- ``natural`` (generator order, by
l_orderkey) and ``zorder`` (``datasets.zorder_by_rank`` on l_shipdate, l_partkey) --
is written **by Spark** twice from the same DataFrame (so the same rows in the same
order, the same files per task): as Parquet (zstd, 131,072-row row groups through
``parquet.block.row.count.limit``, page index on: parquet-java's default) and as rcfmt
(``blockRows=131072``, compression "auto"). Then, in one ``local[2]`` session:

* ``full``  -- full-scan aggregate: count(*), sum(l_quantity), sum(l_extendedprice);
* ``Q1``    -- TPC-H Q1 (shipdate <= 1998-09-02, group by returnflag, linestatus);
* ``Q6``    -- TPC-H Q6 (the Q_c of bench_peers.py);
* ``Q_a``   -- the selective two-column range query of bench_peers.py, all columns;
* ``point`` -- l_orderkey = K (Q_b of bench_peers.py), all columns.

How rcfmt is read (what a user would do):

* filter pushdown on: ``spark.sql.python.filterPushdown.enabled=true`` and
  ``.option("pushdown", "true")`` with a fresh DataFrame per query (how pushdown is
  safe on Spark 4.1-4.3, see spark_datasource/source.py);
* Spark gives Python sources no column pruning, so each query loads rcfmt with a
  user-supplied ``.schema(...)`` of the columns it needs (all of them for Q_a and
  point; it also saves the schema-inference round trip). Parquet prunes by itself.

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
QUERIES = ("full", "Q1", "Q6", "Q_a", "point")
ALL_COLUMNS = None  # marker: the query needs every column
COLUMNS = {
    "full": ["l_quantity", "l_extendedprice"],
    "Q1": ["l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_shipdate"],
    "Q6": ["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"],
    "Q_a": ALL_COLUMNS,
    "point": ALL_COLUMNS,
}


def sql(q: str, c: "bench_peers.Constants", view: str) -> str:
    if q == "full":
        return f"SELECT count(*) AS n, sum(l_quantity) AS q, sum(l_extendedprice) AS p FROM {view}"
    if q == "Q1":
        return (f"SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, "
                f"sum(l_extendedprice) AS sum_base_price, "
                f"sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price, "
                f"sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge, "
                f"avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc, "
                f"count(*) AS count_order FROM {view} WHERE l_shipdate <= date'1998-09-02' "
                f"GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus")
    if q == "Q6":
        return (f"SELECT sum(l_extendedprice * l_discount) AS revenue FROM {view} "
                f"WHERE l_shipdate >= date'{c.q6_date_lo}' AND l_shipdate < date'{c.q6_date_hi}' "
                f"AND l_discount BETWEEN {c.q6_disc_lo} AND {c.q6_disc_hi} AND l_quantity < {c.q6_qty_lt}")
    if q == "Q_a":
        return (f"SELECT * FROM {view} WHERE l_shipdate >= date'{c.shipdate_lo}' "
                f"AND l_shipdate < date'{c.shipdate_hi}' AND l_partkey BETWEEN {c.partkey_lo} AND {c.partkey_hi}")
    if q == "point":
        return f"SELECT * FROM {view} WHERE l_orderkey = {c.orderkey}"
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
             .config("spark.sql.python.filterPushdown.enabled", "true")
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
        info["parquet_bytes"] = file_size(pq_path)
        info["rcfmt_bytes"] = file_size(rc_path)
        print(f"[spark] {layout}: parquet {fmt_bytes(info['parquet_bytes'])}, rcfmt "
              f"{fmt_bytes(info['rcfmt_bytes'])}", file=sys.stderr, flush=True)
        out[layout] = info
    return out


def ddl(spark, path: str, columns) -> str:
    """The DDL of ``columns`` (None: all), to give rcfmt reads a schema (column pruning;
    also skips the schema inference round trip)."""
    schema = spark.read.format("rcfmt").load(path).schema
    return ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in schema.fields
                     if columns is None or f.name in columns)


def run(spark, fmt: str, path: str, q: str, c, schema_ddl: str | None):
    if fmt == "parquet":
        spark.read.parquet(path).createOrReplaceTempView("t_parquet")
        return spark.sql(sql(q, c, "t_parquet")).collect()
    reader = spark.read.format("rcfmt").option("pushdown", "true")
    if schema_ddl:
        reader = reader.schema(schema_ddl)
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
            schema_ddl = ddl(spark, p["rcfmt"], COLUMNS[q])
            tp, rp = measure(lambda: run(spark, "parquet", p["parquet"], q, c, None), repeat=args.repeat)
            tr, rr = measure(lambda: run(spark, "rcfmt", p["rcfmt"], q, c, schema_ddl), repeat=args.repeat)
            same = summary(q, rp) == summary(q, rr)
            ok &= same
            ratio = tr.best / tp.best
            results.append({"layout": layout, "query": q, "parquet": tp.to_dict(), "rcfmt": tr.to_dict(),
                            "ratio": ratio, "rows": len(rr), "same_result": same})
            rows.append([layout, q, fmt_seconds(tp.best), fmt_seconds(tr.best), f"{ratio:.2f}x",
                         f"{1 / ratio:.2f}x", "ok" if same else "MISMATCH"])
            print(f"[spark] {layout} {q}: parquet {tp}, rcfmt {tr} ({ratio:.2f}x)", file=sys.stderr, flush=True)
    spark.stop()
    print(machine_line())
    print(f"pyspark {pyspark.__version__}, local[2], scale {args.scale}, best of {args.repeat}")
    print()
    print(md_table(["layout", "query", "Spark Parquet", "rcfmt source", "rcfmt / Parquet", "speed-up",
                    "result"], rows))
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
