"""The relation-defining read options ``filter`` and ``columns``: the DataFrame *is* those
rows of those columns, so every scan of it -- however Spark 4.1-4.3 replay read plans --
returns them, pruned by files, blocks, pages and rows."""
from __future__ import annotations

import pyarrow as pa
import pytest

import rcfmt
import spark_datasource
from oracle_filter import selection_mask
from rcfmt.predicate.expr_json import dumps
from .test_spark import N, data, sample_table  # noqa: F401 - the module's fixture and data

SCHEMA = sample_table().schema


# ---------------------------------------------------------------- in Spark
def _ids(df):
    return sorted(r.id for r in df.select("id").collect())


CASES = [
    "id < 40 OR id >= 580", "p = 1 AND i32 BETWEEN 10 AND 20", "s LIKE 'ab%' AND d >= DATE '2024-01-20'",
    "dec < 0 AND ts > TIMESTAMP '2023-11-25 00:00:00+00:00'", "NOT (i8 IN (1, 2, 3)) AND b",
    "f > 0.5 OR f IS NULL", "ntz < TIMESTAMP_NTZ '2023-11-15 02:00:00' OR big > 1000000000000000000",
]


@pytest.mark.parametrize("predicate", CASES)
def test_filter_option_gives_the_rows_spark_gives_on_parquet(spark, data, predicate):  # noqa: F811
    _, pq, rc = data
    want = _ids(spark.read.parquet(pq).filter(predicate))
    df = spark.read.format("rcfmt").option("filter", predicate).load(rc)
    assert _ids(df) == want
    assert df.count() == len(want)


def test_every_scan_of_the_relation_is_right_under_plan_replay(spark, data, tmp_path):  # noqa: F811
    """The patterns where Spark 4.1-4.3 replay one scan's pushed plan in another (the
    pushdown conf on, as register() sets it; pushdown option at its default): with the
    filter given as a relation option, each is exact and still pruned by it."""
    _, pq, rc = data
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        rel = "id < 300"
        base = spark.read.parquet(pq).filter(rel)
        stats_dir = str(tmp_path / "stats")
        df = spark.read.format("rcfmt").option("filter", rel).option("statsDir", stats_dir).load(rc)
        a, b = "i32 < 10", "i32 >= 40"
        assert _ids(df.filter(a)) == _ids(base.filter(a))
        assert df.count() == base.count() == 300  # after a filtered query of the same DataFrame
        assert _ids(df.filter(a).union(df.filter(b))) == _ids(base.filter(a).union(base.filter(b)))
        left, right = df.filter(a).alias("l"), df.filter(b).alias("r")
        assert left.join(right, "id").count() == 0 and base.filter(a).count() > 0
        df.createOrReplaceTempView("rel_view")
        sub = spark.sql(f"SELECT count(*) FROM rel_view WHERE id IN (SELECT id FROM rel_view WHERE {a})").first()[0]
        assert sub == base.filter(a).count()
        df.filter(b).explain()
        assert df.count() == 300
        st = spark_datasource.read_scan_stats(stats_dir)
        assert st.files_pruned > 0  # the relation filter prunes files from the index
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")


def test_columns_option_ships_only_those_columns(spark, data):  # noqa: F811
    table, _, rc = data
    df = spark.read.format("rcfmt").option("columns", "s, ID").load(rc)
    assert df.columns == ["s", "id"]
    rows = sorted((r.id, r.s) for r in df.collect())
    assert rows == sorted(zip(table["id"].to_pylist(), table["s"].to_pylist()))
    with pytest.raises(Exception, match="unknown column"):
        spark.read.format("rcfmt").option("columns", "id, nope").load(rc).collect()


def test_sql_view_with_options_and_python_helper(spark, data):  # noqa: F811
    _, pq, rc = data
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW rcfmt_rel USING rcfmt OPTIONS "
              f"(path '{rc}', filter \"d >= DATE '2024-01-30' AND p = 0\", columns 'id, d')")
    got = sorted(r.id for r in spark.sql("SELECT id FROM rcfmt_rel").collect())
    want = _ids(spark.read.parquet(pq).filter("d >= DATE '2024-01-30' AND p = 0"))
    assert got == want and spark.table("rcfmt_rel").columns == ["id", "d"]
    df = spark_datasource.read(spark, rc, filter="id BETWEEN 10 AND 19", columns=["id"])
    assert _ids(df) == list(range(10, 20)) and df.columns == ["id"]
    with pytest.raises(Exception, match="cannot be translated|UPPER"):
        spark_datasource.read(spark, rc, filter="upper(s) = 'X'").collect()


def test_python_helper_takes_an_rcfmt_expression(spark, data):  # noqa: F811
    """An rcfmt expression travels as the filterExpr option (JSON) and keeps rcfmt's
    semantics: every scan of the DataFrame, replays included, returns exactly the rows
    the expression selects locally; it ANDs with a SQL filter option; a forged option
    is refused by name."""
    import datetime as dt

    table, _, rc = data
    expr = ((rcfmt.col("f") < -1.0) | rcfmt.col("s").startswith("ab")) & (rcfmt.col("d") >= dt.date(2024, 1, 20))
    want = sorted(table["id"].filter(pa.array(selection_mask(expr, table))).to_pylist())
    assert 0 < len(want) < table.num_rows
    df = spark_datasource.read(spark, rc, filter=expr, columns=["id", "f"])
    assert _ids(df) == want and df.columns == ["id", "f"]
    assert df.count() == len(want)  # a second scan of the same relation
    both = (spark.read.format("rcfmt").option("filterExpr", dumps(expr))
            .option("filter", "id < 300").load(rc))
    assert _ids(both) == [i for i in want if i < 300]
    with pytest.raises(Exception, match="filterExpr option"):
        spark.read.format("rcfmt").option("filterExpr", '{"cmp": "==", "column": "nope", "value": ["int", "1"]}') \
            .load(rc).collect()
    # NaN's meaning differs (rcfmt: IEEE; Spark: above every number): refused, never reinterpreted
    with pytest.raises(Exception, match="other rows than Spark SQL"):
        spark_datasource.read(spark, rc, filter=rcfmt.col("f") > 1.0).collect()
