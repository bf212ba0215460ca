"""Deletion vectors through the Spark source: reads, counts from metadata and planning
honour the rows that ``Dataset.delete``, ``update`` and ``merge`` deleted, and the
``replaceWhere`` overwrite replaces the rows matching a predicate in one commit.

The oracle is pyarrow compute on the rows as written (the deletes, the update and the
merge applied to them by hand), not rcfmt's reader; ``rcfmt.dataset(path).read()`` is
checked against it too. The dataset has several files per partition and several blocks
per file (64-row blocks), so counts answered from the footers (blocks matching entirely)
meet deleted rows inside those blocks.
"""
from __future__ import annotations

import os
import pickle
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

pyspark = pytest.importorskip("pyspark")

import rcfmt  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402
from rcfmt import col  # noqa: E402
from rcfmt.errors import CommitConflictError, InvalidOptionError  # noqa: E402

N = 4000
BLOCK_ROWS = 64
FILE_ROWS = 500
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def _table() -> pa.Table:
    rng = np.random.default_rng(41)
    ids = np.arange(N, dtype=np.int64)
    return pa.table({
        "id": ids,
        "x": pa.array(rng.integers(0, 1000, N), pa.int64(), mask=rng.random(N) < 0.1),
        "s": pa.array([f"{'ab'[i % 2]}{i % 11}" for i in range(N)], pa.string()),
        "f": pa.array(rng.normal(size=N), pa.float64()),
        "p": pa.array(ids // 2000, pa.int32()),
    })


def _mask(table: pa.Table, expr) -> np.ndarray:
    return np.asarray(pc.fill_null(expr, False).to_numpy(zero_copy_only=False), bool)


def _oracle_changes(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The rows after the changes the fixture makes, computed with pyarrow alone; and
    the merge source."""
    t = table
    # delete x < 100 (NULL x stays), then delete ids 600..699
    t = t.filter(~_mask(t, pc.less(t["x"], 100)))
    t = t.filter(~_mask(t, pc.and_(pc.greater_equal(t["id"], 600), pc.less(t["id"], 700))))
    # update s = 'upd' where id in 2000, 2005, ..., 2395: the rows move to new files
    upd = np.isin(np.asarray(t["id"]), np.arange(2000, 2400, 5))
    s = np.array(t["s"].to_pylist(), dtype=object)
    s[upd] = "upd"
    t = t.set_column(t.schema.get_field_index("s"), "s", pa.array(s.tolist(), pa.string()))
    # merge on id: ids 3000..3099 updated (x = -1, f = 0.5), 5000..5049 inserted
    src_ids = np.concatenate([np.arange(3000, 3100), np.arange(5000, 5050)]).astype(np.int64)
    source = pa.table({"id": src_ids, "x": pa.array(np.full(len(src_ids), -1), pa.int64()),
                       "s": pa.array(["m"] * len(src_ids), pa.string()),
                       "f": pa.array(np.full(len(src_ids), 0.5)),
                       "p": pa.array(np.where(src_ids >= 5000, 2, src_ids // 2000), pa.int32())})
    present = np.isin(np.asarray(t["id"]), src_ids)
    t = pa.concat_tables([t.filter(~present), source.cast(t.schema)])
    return t, source


def _sorted_rows(rows) -> list[tuple]:
    return sorted(rows, key=lambda r: r[0])


def _as_tuples(table: pa.Table, names) -> list[tuple]:
    return _sorted_rows(zip(*(table.column(n).to_pylist() for n in names)))


@pytest.fixture(scope="module")
def changed(tmp_path_factory):
    """A dataset written by rcfmt (partitioned by p, 500-row files, 64-row blocks), then
    two deletes, an update and a merge; and the oracle of its rows."""
    root = str(tmp_path_factory.mktemp("deletes") / "ds")
    table = _table()
    rcfmt.write_dataset(table, root, partition_by=["p"], target_file_rows=FILE_ROWS, block_rows=BLOCK_ROWS)
    ds = rcfmt.dataset(root)
    ds = ds.delete(col("x") < 100)
    ds = ds.delete((col("id") >= 600) & (col("id") < 700))
    ds = ds.update(col("id").isin(list(range(2000, 2400, 5))), set={"s": "upd"})
    expected, source = _oracle_changes(table)
    ds = ds.merge(source, on="id")
    assert ds.num_deleted_rows > 0 and ds.num_rows == expected.num_rows
    return root, expected


# ------------------------------------------------------------------ without Spark (planning, counting)
def test_planning_counts_live_rows_and_ships_vectors(changed):
    from spark_datasource.reader import RcfmtReader
    from spark_datasource.types import to_spark_schema

    root, expected = changed
    ds = rcfmt.dataset(root)
    counting = RcfmtReader({"path": root, "columns": ""}, StructType([]))
    parts = counting.partitions()
    assert sum(p.rows for p in parts) == expected.num_rows == ds.num_rows
    with_vectors = {f.path for f in ds.get_fragments() if f.deletion is not None}
    assert with_vectors
    reading = RcfmtReader({"path": root}, to_spark_schema(ds.schema))
    parts = [pickle.loads(pickle.dumps(p)) for p in reading.partitions()]  # as executors get them
    assert {f.path for p in parts for f in p.fragments if f.deletion is not None} == with_vectors
    # a relation filter: planning reads the footers and keeps block ranges, each with its file's vector
    reading = RcfmtReader({"path": root, "filter": "id >= 300 AND id < 3000"}, to_spark_schema(ds.schema))
    frags = [f for p in reading.partitions() for f in pickle.loads(pickle.dumps(p)).fragments]
    assert any(f.blocks is not None for f in frags)
    for f in frags:
        assert f.deletion == (ds.get_fragments()[[g.path for g in ds.get_fragments()].index(f.path)].deletion)
    assert any(f.deletion is not None and f.blocks is not None for f in frags)


@pytest.mark.parametrize("predicate", ["id >= 300 AND id < 3000", "p = 1 AND id > 2100", "id < 1000",
                                       "x >= 0", "s = 'upd'"])
def test_count_fragments_subtracts_deleted_rows(changed, predicate):
    """Blocks matching entirely are counted from the footer minus their deleted rows."""
    from rcfmt.predicate.sql_filter import parse_filter
    from spark_datasource.reader import count_fragments

    root, expected = changed
    ds = rcfmt.dataset(root)
    expr = parse_filter(predicate, ds.schema)
    rows, _, from_meta = count_fragments(ds.get_fragments(), ds.schema, expr, partition_names=["p"])
    assert rows == ds.count_rows(expr) == _oracle_count(expected, predicate)
    if predicate.startswith("id"):
        assert from_meta > 0  # (the footer path was taken, over blocks with deleted rows)


def _oracle_count(t: pa.Table, predicate: str) -> int:
    exprs = {
        None: None,
        "id >= 300 AND id < 3000": lambda: pc.and_(pc.greater_equal(t["id"], 300), pc.less(t["id"], 3000)),
        "p = 1 AND id > 2100": lambda: pc.and_(pc.equal(t["p"], 1), pc.greater(t["id"], 2100)),
        "id < 1000": lambda: pc.less(t["id"], 1000),
        "x >= 0": lambda: pc.greater_equal(t["x"], 0),
        "s = 'upd'": lambda: pc.equal(t["s"], "upd"),
        "x IS NULL": lambda: pc.is_null(t["x"]),
        "x < 500 OR s LIKE 'a%'": lambda: pc.or_kleene(pc.less(t["x"], 500), pc.starts_with(t["s"], "a")),
    }
    if predicate is None:
        return t.num_rows
    return int(_mask(t, exprs[predicate]()).sum())


# ------------------------------------------------------------------ Spark reads and counts
def test_spark_reads_rows_left(spark, changed):
    root, expected = changed
    names = expected.schema.names
    df = spark.read.format("rcfmt").load(root)
    got = _sorted_rows(tuple(r[n] for n in names) for r in df.collect())
    assert got == _as_tuples(expected, names)
    assert got == _as_tuples(rcfmt.dataset(root).read(), names)
    assert df.count() == rcfmt.dataset(root).num_rows == expected.num_rows


@pytest.mark.parametrize("pushdown", [False, True])
def test_spark_filtered_counts(spark, changed, pushdown):
    root, expected = changed
    spark.conf.set(PUSHDOWN, str(pushdown).lower())
    try:
        for predicate in ["id >= 300 AND id < 3000", "p = 1 AND id > 2100", "x IS NULL", "s = 'upd'"]:
            # a fresh load per query (pushed plans are replayed by other scans of one DataFrame on 4.1-4.3)
            df = spark.read.format("rcfmt").option("pushdown", str(pushdown).lower()).load(root)
            assert df.where(predicate).count() == _oracle_count(expected, predicate), predicate
    finally:
        spark.conf.set(PUSHDOWN, "false")


def test_spark_zero_column_counts(spark, changed):
    """Relations of no column: counted from the index (no filter) or from footers and a
    count scan (the relation filter option), deleted rows subtracted."""
    root, expected = changed
    assert spark.read.format("rcfmt").option("columns", "").load(root).count() == expected.num_rows
    assert spark.read.format("rcfmt").schema(StructType([])).load(root).count() == expected.num_rows
    for predicate in ["id >= 300 AND id < 3000", "x < 500 OR s LIKE 'a%'"]:
        df = spark.read.format("rcfmt").option("columns", "").option("filter", predicate).load(root)
        assert df.count() == _oracle_count(expected, predicate), predicate


def test_spark_relation_filter_option(spark, changed):
    root, expected = changed
    predicate = "p = 1 AND id > 2100"
    df = spark.read.format("rcfmt").option("filter", predicate).load(root)
    want = expected.filter(_mask(expected, pc.and_(pc.equal(expected["p"], 1), pc.greater(expected["id"], 2100))))
    names = expected.schema.names
    assert _sorted_rows(tuple(r[n] for n in names) for r in df.collect()) == _as_tuples(want, names)
    assert df.count() == want.num_rows
    ids = spark.read.format("rcfmt").option("filter", predicate).option("columns", "id").load(root)
    assert sorted(r.id for r in ids.collect()) == sorted(want["id"].to_pylist())


# ------------------------------------------------------------------ replaceWhere
@pytest.fixture
def replaceable(changed, tmp_path):
    """A copy of the changed dataset (deletion vectors included) to overwrite."""
    root, expected = changed
    path = str(tmp_path / "copy")
    shutil.copytree(root, path)
    return path, expected


def _new_rows(ids, p) -> pa.Table:
    ids = np.asarray(ids, np.int64)
    return pa.table({"id": ids, "x": pa.array(np.full(len(ids), 7), pa.int64()),
                     "s": pa.array(["new"] * len(ids), pa.string()), "f": pa.array(np.full(len(ids), 1.5)),
                     "p": pa.array(np.full(len(ids), p), pa.int32())})


DDL = "id bigint, x bigint, s string, f double, p int"


def test_replace_where(spark, replaceable):
    path, expected = replaceable
    before = rcfmt.dataset(path)
    predicate = "p = 1 AND id >= 2200 AND id < 3200"  # crosses files with vectors (update, merge)
    inside = _mask(expected, pc.and_(pc.equal(expected["p"], 1), pc.and_(
        pc.greater_equal(expected["id"], 2200), pc.less(expected["id"], 3200))))
    new = _new_rows(np.arange(2200, 3200, 3), 1)
    spark.createDataFrame(new, schema=DDL).repartition(2).write.format("rcfmt").mode("overwrite") \
        .option("replaceWhere", predicate).option("blockRows", str(BLOCK_ROWS)).save(path)
    after = rcfmt.dataset(path)
    assert after.version == before.version + 1  # one commit
    want = pa.concat_tables([expected.filter(~inside), new.cast(expected.schema)])
    names = expected.schema.names
    assert _as_tuples(after.read(), names) == _as_tuples(want, names)
    df = spark.read.format("rcfmt").load(path)
    assert _sorted_rows(tuple(r[n] for n in names) for r in df.collect()) == _as_tuples(want, names)
    assert df.count() == after.num_rows == want.num_rows
    assert spark.read.format("rcfmt").option("columns", "").load(path).count() == want.num_rows
    entry = after.history()[-1]
    assert entry["operation"] == "replaceWhere" and entry["replace_where"] == predicate
    assert entry["rows_deleted"] == int(inside.sum()) and entry["rows_inserted"] == new.num_rows
    assert after.num_files >= before.num_files  # (files were not rewritten: rows deleted by vectors)
    # rows of a partition the predicate does not touch: the same files, the same vectors
    kept = {f.path: f.deletion for f in before.get_fragments() if dict(f.partition)["p"] == 0}
    assert {f.path: f.deletion for f in after.get_fragments() if dict(f.partition)["p"] == 0} == kept


def test_replace_where_rows_must_match(spark, replaceable, tmp_path):
    path, expected = replaceable
    before = rcfmt.dataset(path)
    bad = _new_rows([10, 2500], 0)  # id 2500 is outside "id < 1000"
    # (one task: with two, the task of row 10 may still be writing when the job aborts,
    # and Spark does not wait for it; what it leaves in _staging is vacuum's to remove)
    df = spark.createDataFrame(bad, schema=DDL).coalesce(1)
    with pytest.raises(Exception, match="do not satisfy"):
        df.write.format("rcfmt").mode("overwrite").option("replaceWhere", "id < 1000").save(path)
    assert rcfmt.dataset(path).version == before.version
    staging = os.path.join(path, "_rcfmt", "_staging")
    assert not os.path.isdir(staging) or not os.listdir(staging)
    # the check off: the rows are written, the predicate's rows replaced
    df.write.format("rcfmt").mode("overwrite").option("replaceWhere", "id < 1000") \
        .option("replaceWhereCheck", "false").save(path)
    after = rcfmt.dataset(path)
    assert after.version == before.version + 1
    got = after.read(["id"])["id"].to_pylist()
    assert sorted(i for i in got if i < 1000) == [10]
    assert 2500 in got and got.count(2500) == 1 + int(2500 in expected["id"].to_pylist())


def test_replace_where_bad_predicates_fail_before_tasks(spark, replaceable, tmp_path):
    from pyspark.sql.functions import udf

    path, _ = replaceable
    before = rcfmt.dataset(path)
    marker = str(tmp_path / "task-ran")

    @udf("bigint")
    def touch(v):  # runs in a task, if any task runs
        open(marker, "a").close()
        return v

    df = spark.createDataFrame(_new_rows([1, 2], 0), schema=DDL).withColumn("id", touch("id"))
    cases = [("id <", "replaceWhere option"), ("nope = 1", "nope"), ("upper(s) = 'A'", "replaceWhere option")]
    for predicate, message in cases:
        with pytest.raises(Exception, match=message):
            df.write.format("rcfmt").mode("overwrite").option("replaceWhere", predicate).save(path)
    with pytest.raises(Exception, match="mode 'overwrite'"):
        df.write.format("rcfmt").mode("append").option("replaceWhere", "id < 5").save(path)
    assert not os.path.exists(marker)
    assert rcfmt.dataset(path).version == before.version


# ------------------------------------------------------------------ replaceWhere commits (no Spark job)
def _writer(path, predicate, table):
    """A replaceWhere writer driven by hand, as Spark drives it: begin (driver), one task's
    write, then the test decides when to commit."""
    from spark_datasource.types import to_spark_schema
    from spark_datasource.writer import RcfmtWriter

    w = RcfmtWriter({"path": path, "replaceWhere": predicate}, to_spark_schema(table.schema), True)
    return w, w.write(iter(table.to_batches()))


def test_replace_where_conflicts_with_a_concurrent_delete(replaceable):
    path, _ = replaceable
    version = rcfmt.dataset(path).version
    w, message = _writer(path, "id < 1000", _new_rows([1, 2, 3], 0))
    rcfmt.dataset(path).delete(col("id") == 5)  # rows of the same files, deleted meanwhile
    with pytest.raises(CommitConflictError):
        w.commit([message])
    assert rcfmt.dataset(path).version == version + 1  # (the delete's)
    files = {f.path for f in rcfmt.dataset(path).get_fragments()}
    assert not any(os.path.basename(f).startswith(f"part-{w.job_id[:12]}") for f in files)
    assert not [n for _, _, ns in os.walk(path) for n in ns if n.startswith(f"part-{w.job_id[:12]}")]
    assert not [n for _, _, ns in os.walk(path) for n in ns if w.job_id in n]  # (its deletion file too)


def test_replace_where_keeps_a_concurrent_append(replaceable):
    path, expected = replaceable
    w, message = _writer(path, "id < 1000", _new_rows([1, 2, 3], 0))
    rcfmt.write_dataset(_new_rows([900, 6000], 0), path)  # a blind append meanwhile
    w.commit([message])
    ds = rcfmt.dataset(path)
    assert ds.history()[-1]["operation"] == "replaceWhere"
    ids = ds.read(["id"])["id"].to_pylist()
    assert sorted(i for i in ids if i < 1000) == [1, 2, 3, 900]  # (the append came after, as it were)
    assert 6000 in ids


def test_replace_where_option_checks():
    from spark_datasource.options import WriteOptions

    with pytest.raises(InvalidOptionError, match="empty"):
        WriteOptions({"path": "/tmp/x", "replaceWhere": "  "})
    with pytest.raises(InvalidOptionError, match="true or false"):
        WriteOptions({"path": "/tmp/x", "replaceWhere": "a = 1", "replaceWhereCheck": "maybe"})


# ------------------------------------------------------------------ partitionOverwriteMode=dynamic
def _dynamic(path, table, **options):
    from spark_datasource.types import to_spark_schema
    from spark_datasource.writer import RcfmtWriter

    w = RcfmtWriter({"path": path, "partitionOverwriteMode": "dynamic", **options},
                    to_spark_schema(table.schema), True)
    return w, w.write(iter(table.to_batches()))


def _partitioned(path):
    t = pa.table({"id": pa.array(range(12), pa.int64()),
                  "p": pa.array(["a", "b", None, "c"] * 3, pa.string()),
                  "d": pa.array([0, 1] * 6, pa.int32())})
    rcfmt.write_dataset(t, path, partition_by=["p", "d"], target_file_rows=2)
    return t


def _rows(table: pa.Table) -> list:
    return sorted(tuple(r.values()) for r in table.select(["id", "p", "d"]).to_pylist())


def test_dynamic_overwrite_replaces_only_the_partitions_written(tmp_path):
    path = str(tmp_path / "ds")
    old = _partitioned(path)
    version = rcfmt.dataset(path).version
    new = pa.table({"id": pa.array([100, 101, 102], pa.int64()), "p": pa.array(["a", None, "z"], pa.string()),
                    "d": pa.array([0, 1, 0], pa.int32())})
    w, message = _dynamic(path, new)
    w.commit([message])
    ds = rcfmt.dataset(path)
    written = {(r["p"], r["d"]) for r in new.to_pylist()}
    kept = old.filter(pa.array([(r["p"], r["d"]) not in written for r in old.to_pylist()]))
    assert _rows(ds.read()) == _rows(pa.concat_tables([kept, new.select(old.schema.names)]))
    assert ds.version == version + 1
    entry = ds.history()[-1]
    assert entry["operation"] == "overwrite" and entry["partition_overwrite_mode"] == "dynamic"
    assert entry["partitions_replaced"] == 3
    w, message = _dynamic(path, new.slice(0, 0))  # nothing written: nothing replaced, no version
    assert w.commit([message]) is None and rcfmt.dataset(path).version == version + 1


def test_dynamic_overwrite_of_an_unpartitioned_dataset_replaces_it(tmp_path):
    path = str(tmp_path / "ds")
    rcfmt.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64())}), path)
    w, message = _dynamic(path, pa.table({"id": pa.array([7], pa.int64())}))
    w.commit([message])
    assert rcfmt.dataset(path).read()["id"].to_pylist() == [7]
    w, message = _dynamic(str(tmp_path / "new"), pa.table({"id": pa.array([8], pa.int64())}))  # a new dataset
    w.commit([message])
    assert rcfmt.dataset(str(tmp_path / "new")).read()["id"].to_pylist() == [8]


def test_dynamic_overwrite_conflicts_with_a_delete_in_a_replaced_partition_and_keeps_appends(tmp_path):
    path = str(tmp_path / "ds")
    _partitioned(path)
    new = pa.table({"id": pa.array([100], pa.int64()), "p": pa.array(["a"]), "d": pa.array([0], pa.int32())})
    w, message = _dynamic(path, new)
    rcfmt.dataset(path).delete(col("id") == 0)  # a row of the partition (a, 0), deleted meanwhile
    with pytest.raises(CommitConflictError):
        w.commit([message])
    w, message = _dynamic(path, new)
    rcfmt.write_dataset(pa.table({"id": pa.array([500], pa.int64()), "p": ["a"], "d": pa.array([0], pa.int32())}),
                        path)  # an append to that partition meanwhile: after the overwrite, as it were
    w.commit([message])
    got = rcfmt.dataset(path).read(filter=(col("p") == "a") & (col("d") == 0))["id"].to_pylist()
    assert sorted(got) == [100, 500]


def test_dynamic_overwrite_option_checks(tmp_path):
    from spark_datasource.options import WriteOptions
    from spark_datasource.types import to_spark_schema
    from spark_datasource.writer import RcfmtWriter

    from spark_datasource.options import StreamWriteOptions

    with pytest.raises(InvalidOptionError, match="'static' or 'dynamic'"):
        WriteOptions({"path": "/tmp/x", "partitionOverwriteMode": "sometimes"})
    with pytest.raises(InvalidOptionError, match="partitionOverwriteMode applies to batch writes"):
        StreamWriteOptions({"path": "/tmp/x", "partitionOverwriteMode": "dynamic", "txnAppId": "q"})
    t = pa.table({"id": pa.array([1], pa.int64())})
    schema = to_spark_schema(t.schema)
    for options, overwrite in [({}, False), ({"replaceWhere": "id = 1"}, True)]:
        with pytest.raises(InvalidOptionError, match="partitionOverwriteMode=dynamic applies to mode 'overwrite'"):
            RcfmtWriter({"path": str(tmp_path / "x"), "partitionOverwriteMode": "dynamic", **options}, schema,
                        overwrite)
    plain = tmp_path / "plain"
    plain.mkdir()
    rcfmt.write_table(t, plain / "f.rcfmt")
    with pytest.raises(rcfmt.UnsupportedError, match="plain directory"):
        RcfmtWriter({"path": str(plain), "partitionOverwriteMode": "dynamic"}, schema, True)


def test_dynamic_overwrite_through_spark(spark, tmp_path):
    path = str(tmp_path / "ds")
    old = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id INT, p STRING")
    new = spark.createDataFrame([(10, "a"), (20, "d")], "id INT, p STRING")
    old.write.format("rcfmt").mode("overwrite").option("partitionBy", "p").save(path)
    new.write.format("rcfmt").mode("overwrite").option("partitionOverwriteMode", "dynamic") \
        .option("partitionBy", "p").save(path)
    got = sorted(tuple(r) for r in spark.read.format("rcfmt").load(path).select("id", "p").collect())
    assert got == [(2, "b"), (3, "c"), (10, "a"), (20, "d")]
