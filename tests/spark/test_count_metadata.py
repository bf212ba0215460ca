"""count(*) and existence answered from metadata (issue 38 item 3): when the relation has
no column (``.option("columns", "")`` or ``.schema(StructType([]))``), the source yields
zero-column batches whose row counts come from the stats index (no filter), the footers'
block statistics (blocks the relation's filter prunes or matches entirely) and a count
scan decoding only the filter columns (the other blocks). Counts are checked against
Spark's own Parquet reader on the same rows, NULLs in the filter columns included."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as papq
import pytest

pyspark = pytest.importorskip("pyspark")

import rcfmt  # noqa: E402
import spark_datasource  # noqa: E402
from spark_sample import stats_records  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402

N = 6000
BLOCK_ROWS = 256


def _table() -> pa.Table:
    rng = np.random.default_rng(38)
    ids = np.arange(N, dtype=np.int64)
    x = rng.integers(0, 1000, N)
    x_null = rng.random(N) < 0.15
    x_null[1000:1512] = False  # two blocks (ids 1000-1511) without a NULL in x
    x_null[2000:2256] = True  # a block where x is all NULL
    y = rng.normal(size=N)
    y[rng.random(N) < 0.01] = np.nan
    return pa.table({
        "id": ids,
        "x": pa.array(x, pa.int64(), mask=x_null),
        "y": pa.array(y, pa.float64(), mask=rng.random(N) < 0.05),
        "s": pa.array([f"{'ab'[i % 2]}{i % 13}" for i in range(N)], pa.string()),
        "p": pa.array(ids // 2000, pa.int32()),
    })


@pytest.fixture(scope="module")
def counted(spark, tmp_path_factory):
    """The same rows as Parquet and as an rcfmt dataset (partitioned by p, 1,000-row
    files, 256-row blocks, sorted by id)."""
    base = tmp_path_factory.mktemp("count")
    table = _table()
    pq, rc = str(base / "pq"), str(base / "rc")
    os.makedirs(pq)
    papq.write_table(table, os.path.join(pq, "part-0.parquet"), row_group_size=700)
    rcfmt.write_dataset(table, rc, partition_by=["p"], target_file_rows=1000, block_rows=BLOCK_ROWS)
    return table, pq, rc


FILTERS = [
    None,
    "id < 2500",
    "id >= 300 AND id < 5000",
    "x < 500",
    "x >= 0",  # TRUE wherever x is not NULL: blocks with a NULL in x are decoded
    "x IS NULL",
    "x IS NOT NULL AND id > 1000",
    "x < 500 OR x IS NULL",
    "NOT (x IN (1, 2, 3))",
    "y > 0",  # NaN is above every number in Spark
    "p = 1 AND id > 2100",
    "p >= 1 AND s LIKE 'a%'",
    "id > 100000",  # no row
]


def _spark_count(spark, pq, predicate):
    df = spark.read.parquet(pq)
    return (df if predicate is None else df.filter(predicate)).count()


def _zero_column(spark, rc, predicate, how, stats_dir=None):
    reader = spark.read.format("rcfmt")
    if how == "columns":
        reader = reader.option("columns", "")
    else:
        reader = reader.schema(StructType([]))
    if predicate is not None:
        reader = reader.option("filter", predicate)
    if stats_dir is not None:
        reader = reader.option("statsDir", stats_dir)
    return reader.load(rc)


# (both ways of asking for no column reach the same code: the second on a few filters)
@pytest.mark.parametrize("predicate,how", [(f, "columns") for f in FILTERS]
                         + [(f, "schema") for f in (None, "x >= 0", "y > 0")])
def test_count_star_matches_parquet(spark, counted, predicate, how):
    _, pq, rc = counted
    want = _spark_count(spark, pq, predicate)
    df = _zero_column(spark, rc, predicate, how)
    assert df.schema == StructType([])
    assert df.count() == want
    df.createOrReplaceTempView("zero_cols")
    assert spark.sql("SELECT count(*) FROM zero_cols").first()[0] == want
    assert df.isEmpty() == (want == 0)  # existence


def test_count_without_filter_reads_only_the_index(spark, counted, tmp_path):
    table, _, rc = counted
    d = str(tmp_path / "stats")
    assert _zero_column(spark, rc, None, "columns", d).count() == N
    tasks = stats_records(d, "task")
    assert len(tasks) == 1  # one task (the rows fit one batch), opening no file
    s = tasks[0]["stats"]
    assert tasks[0]["rows_from_metadata"] == N
    assert s["pages_read"] == 0 and s["bytes_read"] == 0 and s["requests"] == 0 and s["rows_decoded"] == 0


def test_count_without_filter_shares_the_rows_among_tasks(spark, counted, tmp_path):
    """Spark takes in every row of a count, so many rows are yielded by several tasks
    (one per batch, at most minPartitions), still from the index alone."""
    d = str(tmp_path / "stats")
    df = (spark.read.format("rcfmt").option("columns", "").option("batchRows", "1000")
          .option("minPartitions", "4").option("statsDir", d).load(counted[2]))
    assert df.count() == N
    tasks = stats_records(d, "task")
    assert sorted(t["rows_from_metadata"] for t in tasks) == [1500] * 4
    assert all(t["stats"]["bytes_read"] == 0 and t["stats"]["rows_decoded"] == 0 for t in tasks)
    assert stats_records(d, "plan")[0]["partitions"] == 4


def test_count_with_filter_decodes_only_boundary_blocks_of_the_filter_column(spark, counted, tmp_path):
    """id is sorted and never NULL: blocks inside the range count from their footer, the
    two blocks holding a boundary are decoded (the id column only)."""
    _, pq, rc = counted
    d = str(tmp_path / "stats")
    predicate = "id >= 300 AND id < 5000"
    assert _zero_column(spark, rc, predicate, "schema", d).count() == _spark_count(spark, pq, predicate) == 4700
    (plan,) = stats_records(d, "plan")
    count = plan["count"]  # counted by planning: its tasks open no file
    assert count["rows"] == 4700
    assert count["rows_from_metadata"] >= 4700 - 2 * BLOCK_ROWS
    assert 0 < count["stats"]["rows_decoded"] <= 2 * BLOCK_ROWS  # (one column: id)
    tasks = stats_records(d, "task")
    assert len(tasks) == 1 and tasks[0]["rows"] == 4700 and tasks[0]["stats"]["rows_decoded"] == 0
    assert spark_datasource.read_scan_stats(d).rows_decoded == count["stats"]["rows_decoded"]


def test_nulls_in_the_filter_column_are_decoded_not_assumed(spark, counted, tmp_path):
    """x >= 0 holds for every non-NULL x: only blocks without a NULL in x count from
    their statistics; the others are decoded, and the NULL rows are not counted."""
    table, pq, rc = counted
    d = str(tmp_path / "stats")
    want = N - table.column("x").null_count
    assert _zero_column(spark, rc, "x >= 0", "columns", d).count() == _spark_count(spark, pq, "x >= 0") == want
    (plan,) = stats_records(d, "plan")
    assert plan["count"]["rows_from_metadata"] == 2 * BLOCK_ROWS  # the two NULL-free blocks (ids 1024-1535)
    assert plan["count"]["stats"]["rows_decoded"] > 0


def test_zero_column_relation_with_spark_filters(spark, counted):
    """Spark cannot filter on columns the relation does not have; the relation's filter
    still applies to every scan (a union of two scans of it, a repeated action)."""
    _, pq, rc = counted
    df = _zero_column(spark, rc, "x < 500", "columns")
    want = _spark_count(spark, pq, "x < 500")
    assert df.union(df).count() == 2 * want
    assert df.count() == want


def test_count_of_an_empty_dataset_plans_no_task(spark, tmp_path):
    path = str(tmp_path / "empty")
    rcfmt.write_dataset(pa.table({"x": pa.array([], pa.int64())}), path)
    df = spark.read.format("rcfmt").option("columns", "").load(path)
    assert df.count() == 0 and df.isEmpty()
