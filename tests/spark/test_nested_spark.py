"""Arrays, structs and maps through the Spark data source (a real local SparkSession):
Spark writes them and rcfmt reads them, rcfmt writes them and Spark reads them, and
filters on fields under structs arrive as attribute paths and prune."""
from __future__ import annotations

import pyarrow as pa
import pytest

pyspark = pytest.importorskip("pyspark")

import rcfmt  # noqa: E402
import spark_datasource  # noqa: E402
from rcfmt import col  # noqa: E402

SCHEMA = ("id BIGINT, payload STRUCT<user: STRUCT<id: BIGINT, name: STRING>, score: DOUBLE>, "
          "tags ARRAY<STRING>, attrs MAP<STRING, INT>, matrix ARRAY<ARRAY<INT>>")


def _rows(n: int):
    out = []
    for i in range(n):
        user = None if i % 11 == 0 else {"id": i, "name": None if i % 5 == 0 else f"u{i}"}
        payload = None if i % 13 == 0 else {"user": user, "score": i / 4}
        tags = None if i % 7 == 0 else [f"t{j}" if j % 3 else None for j in range(i % 4)]
        attrs = None if i % 9 == 0 else {f"k{j}": (None if j == 2 else j) for j in range(i % 3)}
        matrix = [[i, None], []] if i % 2 else None
        out.append((i, payload, tags, attrs, matrix))
    return out


def _canon(row):
    d = row.asDict(recursive=True)
    d["attrs"] = None if d["attrs"] is None else sorted(d["attrs"].items())
    return d


def test_spark_writes_and_reads_nested_columns(spark, tmp_path, pushdown):
    rows = _rows(400)
    df = spark.createDataFrame(rows, SCHEMA).repartition(3)
    target = str(tmp_path / "nested")
    df.write.format("rcfmt").mode("append").option("targetFileRows", "100").save(target)
    # rcfmt reads what Spark wrote
    t = rcfmt.dataset(target).read().sort_by("id")
    assert t.num_rows == 400
    assert t.schema.field("tags").type == pa.list_(pa.field("element", pa.string()))
    assert t.schema.field("attrs").type.key_type == pa.string()
    py = t.to_pylist()
    assert py[14]["payload"] == {"user": {"id": 14, "name": "u14"}, "score": 3.5}
    assert py[22]["payload"]["user"] is None and py[13]["payload"] is None
    assert py[7]["tags"] is None and py[6]["tags"] == [None, "t1"]
    assert py[5]["attrs"] == [("k0", 0), ("k1", 1)]
    assert py[3]["matrix"] == [[3, None], []]
    # Spark reads what it wrote, unchanged
    back = spark.read.format("rcfmt").load(target)
    assert back.schema.simpleString() == spark.createDataFrame([], SCHEMA).schema.simpleString()
    want = sorted((_canon(r) for r in df.collect()), key=lambda d: d["id"])
    assert sorted((_canon(r) for r in back.collect()), key=lambda d: d["id"]) == want
    # a filter on a field under structs arrives as a path and prunes
    stats_dir = str(tmp_path / "stats")
    hit = (spark.read.format("rcfmt").option("statsDir", stats_dir).option("pushdown", "true").load(target)
           .filter("payload.user.id = 123"))
    got = [_canon(r) for r in hit.collect()]
    assert got == [d for d in want if d["id"] == 123]
    st = spark_datasource.read_scan_stats(stats_dir)
    assert st.rows_selected == 1 and st.files_pruned + st.blocks_pruned_stats > 0


def test_spark_reads_nested_files_rcfmt_wrote(spark, tmp_path):
    n = 300
    t = pa.table({
        "id": pa.array(range(n)),
        "s": pa.array([{"a": i, "b": [i, i + 1]} if i % 4 else None for i in range(n)]),
        "big": pa.array([[i] for i in range(n)], pa.large_list(pa.int16())),
        "pair": pa.array([[i, -i] for i in range(n)], pa.list_(pa.int32(), 2)),
        "m": pa.array([[("x", float(i))] for i in range(n)], pa.map_(pa.string(), pa.float64())),
    })
    rcfmt.write_dataset(t, tmp_path / "ds", block_rows=64)
    df = spark.read.format("rcfmt").load(str(tmp_path / "ds"))
    assert df.schema.simpleString() == ("struct<id:bigint,s:struct<a:bigint,b:array<bigint>>,big:array<smallint>,"
                                        "pair:array<int>,m:map<string,double>>")
    rows = {r.id: r.asDict(recursive=True) for r in df.collect()}
    assert rows[5] == {"id": 5, "s": {"a": 5, "b": [5, 6]}, "big": [5], "pair": [5, -5], "m": {"x": 5.0}}
    assert rows[8]["s"] is None
    assert df.filter("s.a >= 290").count() == sum(1 for i in range(290, n) if i % 4)
    assert df.filter("s.a IS NULL").count() == n // 4
    # the relation's filter option takes array_contains and struct paths (sqlglot, exactly)
    opt = (spark.read.format("rcfmt").option("filter", "array_contains(pair, -7) OR s.a = 9")
           .load(str(tmp_path / "ds")))
    assert sorted(r.id for r in opt.collect()) == [7, 9]


def test_filters_on_nested_paths_translate_exactly():
    from pyspark.sql import datasource as D

    from spark_datasource.filters import translate

    schema = pa.schema([("p", pa.struct([("u", pa.struct([("id", pa.int64())])), ("l", pa.list_(pa.int64()))])),
                        ("x", pa.int32())])
    assert repr(translate(D.EqualTo(("p", "u", "id"), 5), schema)) == repr(col("p.u.id") == 5)
    assert repr(translate(D.IsNull(("p", "u", "id")), schema)) == repr(col("p.u.id").is_null())
    names = {"P": "p", "X": "x"}  # Spark names that differ from the dataset's in case
    assert repr(translate(D.GreaterThan(("P", "u", "id"), 1), schema, names)) == repr(col("p.u.id") > 1)
    for untranslatable in [D.EqualTo(("p", "l"), [1]), D.EqualTo(("p", "u"), {"id": 1}), D.EqualTo(("p", "zz"), 1),
                           D.EqualTo(("p", "u", "id"), "not a number")]:
        assert translate(untranslatable, schema) is None


def test_spark_reads_an_events_dataset_after_appends_and_a_rename(spark, tmp_path):
    """The GitHub-event-like nested dataset of tests/schema/test_nested.py, written by rcfmt in
    partitions, appended to, and with a struct column renamed (files keep the old
    name): Spark reads what Python reads, and a filter on a leaf of the renamed struct
    prunes files and blocks."""
    import pyarrow.compute as pc
    from schema.test_nested import _events

    root = tmp_path / "events"
    rcfmt.write_dataset(_events(300, 1), root, partition_by=["kind"], block_rows=50)
    rcfmt.write_dataset(_events(200, 2), root, block_rows=50)
    ds = rcfmt.dataset(root).evolve(rename={"actor": "user"})
    want = ds.read().sort_by("id")
    df = spark.read.format("rcfmt").load(str(root))
    assert df.columns == ["id", "repo", "user", "labels", "attrs", "kind"]
    got = sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda d: d["id"])
    assert [d["user"] for d in got] == want["user"].to_pylist()
    assert [d["labels"] for d in got] == want["labels"].to_pylist()
    assert [sorted(d["attrs"].items()) for d in got] == [sorted(m) for m in want["attrs"].to_pylist()]
    hit = df.filter("user.org.id = 3 AND id >= 2000")
    oracle = want.filter(pc.and_(pc.equal(pc.struct_field(pc.struct_field(want["user"], "org"), "id"), 3),
                                 pc.greater_equal(want["id"], 2000)))
    assert sorted(r.id for r in hit.collect()) == oracle["id"].to_pylist()
