"""The differential check of the ``filter`` option against Spark itself, shared by
``tests/spark/test_filter_differential.py`` (a bounded number of predicates) and the
long run ``fuzz/spark_filter_differential.py``.

Spark's answer is its own WHERE on a Parquet copy of the table; for many predicates at
once it is one query computing each predicate's truth per row. rcfmt's answer is the
translated predicate run by rcfmt's scan on an rcfmt copy (small blocks and pages, a
bitmap index: every pruning stage decides rows), and, for some predicates, the Spark
relation itself (``spark.read.format("rcfmt").option("filter", p)``), with and without
the same WHERE on top.
"""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

import rcfmt
from rcfmt.predicate.sql_filter import parse_filter
from spark_sample import sample_table

DDL = ("id bigint, b boolean, i8 tinyint, i16 smallint, i32 int, f double, r float, dec decimal(10,2), "
       "big decimal(38,0), d date, ts timestamp, ntz timestamp_ntz, s string, bin binary, p int, "
       "x double, tags array<string>")


def differential_table() -> pa.Table:
    """The Spark sample plus ``x`` (a double with 5% NaN, +-0.0, +-inf and 10% NULL) and
    ``tags`` (lists of strings, NULL lists and NULL elements)."""
    t = sample_table()
    n = t.num_rows
    rng = np.random.default_rng(7)
    x = rng.choice([1.5, 0.0, -0.0, 1e300, -3.25, 2.0, math.inf, -math.inf, 7.75], n)
    x = np.where(rng.random(n) < 0.05, np.nan, x)
    x_null = rng.random(n) < 0.1
    words = ["a", "ab", "b", "zz", ""]
    tags = []
    for i in range(n):
        if i % 19 == 5:
            tags.append(None)
        else:
            tags.append([None if (i + k) % 7 == 0 else words[(i * 3 + k) % 5] for k in range(i % 4)])
    return t.append_column("x", pa.array(x, pa.float64(), mask=x_null)) \
            .append_column("tags", pa.array(tags, pa.list_(pa.string())))


def write_copies(spark, table: pa.Table, base: str) -> tuple[str, str]:
    """``(parquet dir, rcfmt file)``: the table written by Spark as Parquet, and by rcfmt."""
    pq, rc = f"{base}/pq", f"{base}/table.rcfmt"
    spark.createDataFrame(table, schema=DDL).write.mode("overwrite").parquet(pq)
    rcfmt.write_table(table, rc, block_rows=128, page_rows=32,
                      bitmap_indexes={"i32": "equality", "f": "range", "s": "auto"})
    return pq, rc


def spark_truths(spark, pq: str, predicates: list[str], per_query: int = 40) -> list[list[int]]:
    """For each predicate, the sorted ids of the rows where Spark's WHERE is TRUE."""
    out = []
    df = spark.read.parquet(pq)
    df.createOrReplaceTempView("pq_table")
    for start in range(0, len(predicates), per_query):
        chunk = predicates[start:start + per_query]
        cols = ", ".join(f"CASE WHEN ({p}) THEN 1 ELSE 0 END AS c{i}" for i, p in enumerate(chunk))
        rows = spark.sql(f"SELECT id, {cols} FROM pq_table").collect()
        for i in range(len(chunk)):
            out.append(sorted(r["id"] for r in rows if r[f"c{i}"] == 1))
    return out


def rcfmt_ids(rc: str, schema: pa.Schema, predicate: str) -> list[int]:
    """The ids rcfmt's scan selects with the translated predicate."""
    return sorted(rcfmt.read_table(rc, columns=["id"], filter=parse_filter(predicate, schema))["id"].to_pylist())


def relation_ids(spark, rc: str, predicate: str, where: bool) -> list[int]:
    """The ids of the Spark relation defined by the filter option (``where``: with the same
    predicate as Spark's WHERE on top)."""
    df = spark.read.format("rcfmt").option("filter", predicate).load(rc)
    if where:
        df = df.filter(predicate)
    return sorted(r.id for r in df.select("id").collect())
