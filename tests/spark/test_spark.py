"""The rcfmt Spark data source against a real local SparkSession (local[2], Java 17).

One session for the module. Covered: discovery without a register call, round trips
of every type (Spark write -> rcfmt read, rcfmt write -> Spark read), filters of every
kind giving the rows Spark's own Parquet reader gives, pruning visible in scan
statistics written by the executors, a user-supplied schema reading a subset of
columns, append/overwrite, partitionBy, a task failing mid-write leaving the dataset
as it was, and reads with the pushdown conf on and off.
"""
from __future__ import annotations

import datetime as dt
import decimal
import os

import numpy as np
import pyarrow as pa
import pytest

pyspark = pytest.importorskip("pyspark")

import rcfmt  # noqa: E402
import spark_datasource  # noqa: E402
from rcfmt.dataset import log  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def _norm(v):
    return "NaN" if isinstance(v, float) and v != v else v


def _rows(df, order):
    """Collected rows, NaN made comparable."""
    return [tuple(_norm(v) for v in r) for r in df.orderBy(*order).collect()]


def _data_files(root):
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith("_")]
        for name in filenames:
            out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out


# ---------------------------------------------------------------- test data
from spark_sample import N, sample_table  # noqa: E402,F401 - tests/ is on sys.path; shared with the Java-free tests


@pytest.fixture(scope="module")
def data(spark, tmp_path_factory):
    """The sample written by Spark as Parquet and as rcfmt (partitioned by p, small
    files and blocks so that pruning has something to prune)."""
    base = tmp_path_factory.mktemp("data")
    table = sample_table()
    ddl = ("id bigint, b boolean, i8 tinyint, i16 smallint, i32 int, f double, r float, dec decimal(10,2), "
           "big decimal(38,0), d date, ts timestamp, ntz timestamp_ntz, s string, bin binary, p int")
    df = spark.createDataFrame(table, schema=ddl).repartitionByRange(2, "id")
    pq, rc = str(base / "pq"), str(base / "rc")
    df.write.mode("overwrite").parquet(pq)
    (df.sortWithinPartitions("id").write.format("rcfmt").mode("append").option("partitionBy", "p")
     .option("blockRows", "64").option("targetFileRows", "128").save(rc))
    return table, pq, rc


# ---------------------------------------------------------------- discovery, types, round trips
def test_found_without_register_and_conf_off(spark, tmp_path):
    """pyspark_rcfmt is discovered on the path: no register call; filters work with the
    pushdown conf off (its default)."""
    assert spark.conf.get(PUSHDOWN) == "false"
    t = pa.table({"a": pa.array(range(100), pa.int64()), "s": [f"v{k}" for k in range(100)]})
    rcfmt.write_table(t, tmp_path / "one.rcfmt", block_rows=10)
    df = spark.read.format("rcfmt").load(str(tmp_path / "one.rcfmt"))
    assert df.schema.simpleString() == "struct<a:bigint,s:string>"
    assert df.filter("a >= 95 and s like 'v9%'").count() == 5
    # a plain directory of rcfmt files without index, Hive partitions inferred
    for day in ("2024-01-01", "2024-01-02"):
        os.makedirs(tmp_path / "plain" / f"dt={day}")
        rcfmt.write_table(t, tmp_path / "plain" / f"dt={day}" / "part-0.rcfmt")
    plain = spark.read.format("rcfmt").load(str(tmp_path / "plain"))
    assert plain.schema.simpleString() == "struct<a:bigint,s:string,dt:date>"
    assert plain.filter("dt = date'2024-01-02' AND a < 10").count() == 10


def test_spark_write_then_rcfmt_read_every_type(data):
    table, _, rc = data
    ds = rcfmt.dataset(rc)
    assert ds.partition_by == ["p"] and ds.num_rows == N and ds.num_files >= 6
    expected = table.select([n for n in table.column_names if n != "p"] + ["p"])
    got = ds.read().sort_by("id")
    assert got.schema.field("ts").type == pa.timestamp("us", tz="UTC")  # instants, not session time
    assert got.schema.field("ntz").type == pa.timestamp("us")
    assert got.schema.field("i8").type == pa.int8() and got.schema.field("r").type == pa.float32()
    for name in expected.column_names:
        g, e = got.column(name), expected.column(name)
        if pa.types.is_floating(g.type):
            assert np.array_equal(g.to_numpy(zero_copy_only=False), e.to_numpy(zero_copy_only=False),
                                  equal_nan=True), name
        else:
            assert g.to_pylist() == e.to_pylist(), name


def test_spark_read_matches_parquet_and_arrow(spark, data):
    table, pq, rc = data
    got = spark.read.format("rcfmt").load(rc)
    ref = spark.read.parquet(pq)
    assert got.schema == ref.select(got.columns).schema
    assert _rows(got.select(ref.columns), ["id"]) == _rows(ref, ["id"])


def test_rcfmt_write_then_spark_read_every_type(spark, tmp_path):
    t = pa.table({
        "u8": pa.array([0, 255, None], pa.uint8()), "u16": pa.array([0, 65535, None], pa.uint16()),
        "u32": pa.array([0, 2**32 - 1, None], pa.uint32()), "u64": pa.array([0, 2**64 - 1, None], pa.uint64()),
        "i8": pa.array([-128, 127, None], pa.int8()), "i16": pa.array([-1, 1, None], pa.int16()),
        "dn": pa.array([decimal.Decimal("1E+3"), decimal.Decimal("-9.99E+4"), None], pa.decimal128(3, -2)),
        "tss": pa.array([0, 1, None], pa.timestamp("s", tz="Asia/Tokyo")),
        "tsn": pa.array([1_001, -1, None], pa.timestamp("ns")),
        "ls": pa.array(["x", "\U0001f600", None], pa.large_string()),
        "lb": pa.array([b"", b"\xff", None], pa.large_binary()),
        "f32": pa.array([np.nan, -0.0, None], pa.float32()),
    })
    rcfmt.write_dataset(t, tmp_path)
    df = spark.read.format("rcfmt").option("pushdown", "true").load(str(tmp_path))
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        "smallint", "int", "bigint", "decimal(20,0)", "tinyint", "smallint", "decimal(5,0)", "timestamp",
        "timestamp_ntz", "string", "binary", "float"]
    got = df.toArrow()
    assert got.column("u64").to_pylist() == [0, 2**64 - 1, None]
    assert got.column("dn").to_pylist() == [1000, -99900, None]
    assert got.column("tss").cast(pa.int64()).to_pylist() == [0, 1_000_000, None]
    assert got.column("tsn").cast(pa.int64()).to_pylist() == [1, -1, None]  # floored to microseconds
    assert got.column("ls").to_pylist() == ["x", "\U0001f600", None]
    # filters on widened and floored columns agree with the values Spark sees
    spark.conf.set(PUSHDOWN, "true")
    try:
        assert df.filter("u64 > 18446744073709551614").count() == 1
        assert df.filter("u8 = 255").count() == 1
        assert df.filter("tsn = timestamp_ntz'1970-01-01 00:00:00.000001'").count() == 1
        assert df.filter("tsn < timestamp_ntz'1970-01-01 00:00:00'").count() == 1
        assert df.filter("isnan(f32)").count() == 1
    finally:
        spark.conf.set(PUSHDOWN, "false")


def test_types_spark_has_are_mapped_and_the_rest_refused_by_name(spark, tmp_path):
    """Durations as INTERVAL DAY TO SECOND (microseconds; ns floored), date64 as DATE,
    float16 as FLOAT, decimal32/64/256 of <= 38 digits as DECIMAL, fixed-size binary and
    UUIDs as BINARY, null as VOID; a month interval or a 40-digit decimal is refused
    naming its column when the relation is loaded."""
    import uuid

    ids = [uuid.UUID(int=1), uuid.UUID(int=2**128 - 1)]
    t = pa.table({
        "id": pa.array([0, 1, 2], pa.int64()),
        "dur_s": pa.array([-5, 86_400, None], pa.duration("s")),
        "dur_ns": pa.array([1_999, -1, None], pa.duration("ns")),
        "d64": pa.array([0, 86_400_000 * 3, None], pa.date64()),
        "f16": pa.array(np.array([1.5, np.nan, 0], np.float16), mask=np.array([False, False, True])),
        "d32": pa.array([decimal.Decimal("1.25"), decimal.Decimal("-9.99"), None], pa.decimal32(5, 2)),
        "d256": pa.array([decimal.Decimal("12345678901234567890.5"), None, decimal.Decimal("-1")], pa.decimal256(38, 1)),
        "fsb": pa.array([b"ab", None, b"\xff\x00"], pa.binary(2)),
        "u": pa.ExtensionArray.from_storage(pa.uuid(), pa.array([ids[0].bytes, None, ids[1].bytes], pa.binary(16))),
        "nothing": pa.nulls(3),
    })
    path = tmp_path / "types.rcfmt"
    rcfmt.write_table(t, path)
    df = spark.read.format("rcfmt").load(str(path))
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        "bigint", "interval day to second", "interval day to second", "date", "float", "decimal(5,2)",
        "decimal(38,1)", "binary", "binary", "void"]
    rows = {r.id: r for r in df.collect()}
    assert rows[0].dur_s == dt.timedelta(seconds=-5) and rows[1].dur_s == dt.timedelta(days=1) and rows[2].dur_s is None
    assert rows[0].dur_ns == dt.timedelta(microseconds=1) and rows[1].dur_ns == dt.timedelta(microseconds=-1)
    assert [rows[i].d64 for i in range(3)] == [dt.date(1970, 1, 1), dt.date(1970, 1, 4), None]
    assert rows[0].f16 == 1.5 and rows[1].f16 != rows[1].f16 and rows[2].f16 is None
    assert [rows[i].d32 for i in range(3)] == [decimal.Decimal("1.25"), decimal.Decimal("-9.99"), None]
    assert rows[0].d256 == decimal.Decimal("12345678901234567890.5") and rows[2].d256 == decimal.Decimal("-1.0")
    assert [rows[i].fsb for i in range(3)] == [bytearray(b"ab"), None, bytearray(b"\xff\x00")]
    assert [rows[i].u for i in range(3)] == [bytearray(ids[0].bytes), None, bytearray(ids[1].bytes)]
    assert all(rows[i].nothing is None for i in range(3))
    assert df.filter("dur_s > INTERVAL '1' SECOND").count() == 1 and df.filter("f16 > 1").count() == 2  # NaN above
    for name, bad in [("months", pa.array([pa.MonthDayNano([1, 2, 3]), None], pa.month_day_nano_interval())),
                      ("wide", pa.array([decimal.Decimal(10) ** 39, None], pa.decimal256(40, 0)))]:
        other = tmp_path / f"{name}.rcfmt"
        try:
            rcfmt.write_table(pa.table({name: bad}), other)
        except rcfmt.RcfmtError:
            continue  # rcfmt does not store it either
        with pytest.raises(Exception, match=name):
            spark.read.format("rcfmt").load(str(other)).schema
    # and the way back: Spark's day-time intervals are stored as microsecond durations
    written = str(tmp_path / "written")
    spark.sql("SELECT 1 AS id, INTERVAL '1 02:03:04.000005' DAY TO SECOND AS iv UNION ALL SELECT 2, NULL") \
        .write.format("rcfmt").mode("append").save(written)
    back = rcfmt.dataset(written).read().sort_by("id")
    assert back.schema.field("iv").type == pa.duration("us")
    assert back.column("iv").to_pylist() == [dt.timedelta(days=1, hours=2, minutes=3, seconds=4, microseconds=5), None]


# ---------------------------------------------------------------- filters vs Parquet
FILTERS = [
    "i32 = 7", "i32 <=> 7", "i32 <=> NULL", "NOT (i32 <=> 7)", "i32 != 7", "i32 < 3", "i32 <= 3", "i32 > 45",
    "i32 >= 45", "i32 IN (1, 2, 49)", "i32 IN (1, NULL)", "NOT i32 IN (1, 2)", "i32 IS NULL", "i32 IS NOT NULL",
    "i8 < -90", "i16 BETWEEN -10 AND 10",
    "f = 0.0", "f = -0.0", "f > 1.5", "f >= 2.5", "f < -2.0", "f <= -2.5", "NOT f > 1.0", "f = 'NaN'",
    "f > 'NaN'", "f >= 'NaN'", "f < 'NaN'", "f <=> 'NaN'", "NOT (f <=> 'NaN')", "f IN (0.5, 'NaN')",
    "NOT f IN (0.5, 'NaN')", "f = 'Infinity'",
    "r = 0.75", "r > 1.5",
    "dec = 1.49", "dec > 4.5", "dec IN (-0.5, 2.3)", "big > 1000000000000000000",
    "d = date'2024-01-05'", "d >= date'2024-02-01'", "d < date'2024-01-03'",
    "ts > timestamp'2023-11-20 00:00:00 UTC'", "ts = timestamp'2023-11-14 22:13:20 UTC'",
    "ntz <= timestamp_ntz'2023-11-14 23:00:00'",
    "s = 'abc3'", "s > 'b'", "s LIKE 'ab%'", "s LIKE '%3'", "s LIKE '%c1%'", "NOT s LIKE 'ab%'", "s IN ('b1', 'zz2')",
    "s = ''", "s < 'ab'", "b = true", "b IS NULL", "NOT b", "bin = X'0100FF'", "bin > X'F0'",
    "p = 1", "p IN (0, 2) AND i32 < 10", "(i32 = 1 OR s = 'b2') AND p <> 1", "i32 = 1 OR f > 2.0",
    "NOT (i32 > 10 AND f < 0.0)", "id BETWEEN 100 AND 110 AND NOT p = 2",
]


#: one filter per translation path, run with pushdown on, each on a DataFrame of its own
PUSHED = [
    "i32 <=> 7", "NOT (i32 <=> 7)", "i32 != 7", "i32 IN (1, NULL)", "NOT i32 IN (1, 2)", "i32 IS NULL",
    "i8 < -90", "f = -0.0", "f > 1.5", "NOT f > 1.0", "f = 'NaN'", "f < 'NaN'", "f <=> 'NaN'",
    "NOT (f <=> 'NaN')", "f IN (0.5, 'NaN')", "NOT f IN (0.5, 'NaN')", "r > 1.5", "dec IN (-0.5, 2.3)", "big > 1000000000000000000", "d >= date'2024-02-01'",
    "ts = timestamp'2023-11-14 22:13:20 UTC'", "ntz <= timestamp_ntz'2023-11-14 23:00:00'", "s LIKE 'ab%'",
    "NOT s LIKE 'ab%'", "s LIKE '%3'", "s < 'ab'", "NOT b", "bin > X'F0'", "p IN (0, 2) AND i32 < 10",
    "(i32 = 1 OR s = 'b2') AND p <> 1", "id BETWEEN 100 AND 110 AND NOT p = 2",
]


def _ids_per_filter(spark, view: str, filters) -> dict:
    """For each filter, the sorted ids of the matching rows: one query, one scan per filter."""
    q = " UNION ALL ".join(f"SELECT {k} AS q, sort_array(collect_list(id)) AS ids FROM {view} WHERE {f}"
                           for k, f in enumerate(filters))
    return {r.q: list(r.ids) for r in spark.sql(q).collect()}


def test_filters_give_parquet_rows(spark, data, pushdown):
    """Every filter, as a WHERE clause and as a value (NOT / NULL-sensitive), against
    Spark's Parquet reader on the same data."""
    table, pq, rc = data
    ref = spark.read.parquet(pq)
    src = spark.read.format("rcfmt").load(rc).select(*ref.columns)  # default pushdown: scanned many times
    ref.createOrReplaceTempView("ref_t")
    src.createOrReplaceTempView("rc_t")
    flags = ", ".join(f"coalesce(CAST(({f}) AS INT), -1) AS c{k}" for k, f in enumerate(FILTERS))
    want = {r[0]: tuple(r[1:]) for r in spark.sql(f"SELECT id, {flags} FROM ref_t").collect()}
    got = {r[0]: tuple(r[1:]) for r in spark.sql(f"SELECT id, {flags} FROM rc_t").collect()}
    assert got == want


def test_pushed_filters_give_parquet_rows(spark, data, pushdown):
    """With pushdown on, each filter on a DataFrame of its own (the way pushdown is safe
    on Spark 4.1-4.3): files, blocks and pages pruned, same rows as Parquet."""
    _, pq, rc = data
    spark.read.parquet(pq).createOrReplaceTempView("ref_t")
    want = _ids_per_filter(spark, "ref_t", PUSHED)
    for k, f in enumerate(PUSHED):
        df = spark.read.format("rcfmt").option("pushdown", "true").load(rc).where(f)
        got = df.agg({"id": "collect_list"}).collect()[0][0]
        assert sorted(got) == want.get(k, []), f


def test_reused_dataframe_never_loses_rows(spark, data, pushdown, tmp_path):
    """Spark 4.1-4.3 hand the read plan of the last filtered query to later unfiltered
    queries of the same DataFrame; the reader must still return every row."""
    table, _, rc = data
    stats_dir = str(tmp_path / "s")
    df = spark.read.format("rcfmt").option("statsDir", stats_dir).option("pushdown", "true").load(rc)
    q = df.filter("id = 301")
    assert [r.id for r in q.collect()] == [301]
    assert spark_datasource.read_scan_stats(stats_dir).files_pruned > 0  # the first run pruned
    assert [r.id for r in q.collect()] == [301]  # the same plan again
    assert df.count() == N  # an unfiltered query given the filtered plan
    assert len(df.collect()) == N
    ends3 = sum(1 for v in table["s"].to_pylist() if v is not None and v.endswith("3"))
    assert df.filter("s LIKE '%3'").count() == ends3
    assert [r.id for r in q.collect()] == [301]


@pytest.mark.parametrize("pushed", [True, False])
def test_one_dataframe_reads_the_version_it_was_loaded_at(spark, tmp_path, pushed):
    """Every action on one DataFrame reads one version, the latest when it was loaded
    (as a Parquet DataFrame reads the files it listed): plans replayed from earlier
    actions and plans made afresh agree after appends and deletes; a new load reads the
    latest version; the version option still travels in time."""
    from rcfmt import col

    spark.conf.set(PUSHDOWN, "true" if pushed else "false")
    try:
        path = str(tmp_path / "v")
        rcfmt.write_dataset(pa.table({"id": pa.array(range(100), pa.int64())}), path)
        df = spark.read.format("rcfmt").load(path)
        assert (df.filter("id < 60").count(), df.count(), len(df.collect())) == (60, 100, 100)
        rcfmt.write_dataset(pa.table({"id": pa.array([1000, 1001], pa.int64())}), path)
        rcfmt.dataset(path).delete(col("id") < 10)
        ids = sorted(r.id for r in df.collect())
        assert (df.count(), df.filter("id >= 0").count(), ids) == (100, 100, list(range(100)))
        fresh = spark.read.format("rcfmt").load(path)
        assert (fresh.count(), fresh.filter("id < 60").count()) == (92, 50)
        old = spark.read.format("rcfmt").option("version", "2").load(path)
        assert old.count() == 102
    finally:
        spark.conf.set(PUSHDOWN, "false")


# ---------------------------------------------------------------- pruning statistics
def test_pruning_shows_in_scan_statistics(spark, data, pushdown, tmp_path):
    _, _, rc = data
    stats_dir = str(tmp_path / "stats")
    df = spark.read.format("rcfmt").option("statsDir", stats_dir).option("pushdown", "true").load(rc)
    assert df.filter("id = 301").count() == 1
    st = spark_datasource.read_scan_stats(stats_dir)
    assert st.files_total == rcfmt.dataset(rc).num_files
    expected_pruned = int((~rcfmt.dataset(rc).prune(rcfmt.col("id") == 301)).sum())
    assert expected_pruned >= 3 and st.files_pruned == expected_pruned  # from the index alone
    assert st.rows_selected == 1 and st.rows_total < N and st.blocks_pruned_stats > 0
    # partition pruning from the index plus block pruning in the files
    stats_dir2 = str(tmp_path / "stats2")
    df2 = spark.read.format("rcfmt").option("statsDir", stats_dir2).option("pushdown", "true").load(rc)
    assert df2.filter("p = 2 AND id < 64").count() == 21
    st2 = spark_datasource.read_scan_stats(stats_dir2)
    assert st2.files_pruned >= st2.files_total * 2 // 3
    assert st2.rows_total < N // 3


def test_pushdown_conf_off_reads_without_pruning(spark, data, tmp_path):
    _, pq, rc = data
    assert spark.conf.get(PUSHDOWN) == "false"
    stats_dir = str(tmp_path / "stats")
    df = spark.read.format("rcfmt").option("statsDir", stats_dir).option("pushdown", "true").load(rc)
    assert df.filter("id = 301").count() == 1
    st = spark_datasource.read_scan_stats(stats_dir)
    assert st.files_pruned == 0 and st.rows_decoded >= N  # no failure, no pruning either


def test_default_pushdown_is_safe_for_repeated_scans(spark, data, pushdown):
    """pushdown=auto: on Spark 4.1-4.3 (plans leak between scans of one DataFrame) no
    pruning, so a self-union with different filters and later scans stay exact."""
    _, _, rc = data
    df = spark.read.format("rcfmt").load(rc)
    both = df.filter("id < 10").union(df.filter("id >= 590"))
    assert sorted(r.id for r in both.collect()) == list(range(10)) + list(range(590, 600))
    assert df.count() == N


def test_user_schema_reads_only_its_columns(spark, data, tmp_path):
    _, _, rc = data
    full_dir, part_dir = str(tmp_path / "a"), str(tmp_path / "b")
    n_full = spark.read.format("rcfmt").option("statsDir", full_dir).load(rc).collect()
    sub = spark.read.format("rcfmt").schema("ID BIGINT, s STRING").option("statsDir", part_dir).load(rc)
    rows = sub.collect()
    assert len(rows) == len(n_full) == N and sub.columns == ["ID", "s"]
    assert sorted(r.ID for r in rows) == list(range(N))
    full, part = spark_datasource.read_scan_stats(full_dir), spark_datasource.read_scan_stats(part_dir)
    assert part.bytes_read < full.bytes_read / 3
    with pytest.raises(Exception, match="is bigint in the rcfmt data"):
        spark.read.format("rcfmt").schema("id INT").load(rc).collect()


def test_a_directory_without_rcfmt_data_is_refused(spark, tmp_path):
    """As Spark's file sources do: a directory holding no rcfmt file and no dataset index
    (empty, or another format's files) has no schema to read, and loading it fails
    clearly instead of reading as an empty relation with no columns."""
    empty, other = tmp_path / "empty", tmp_path / "parquet"
    empty.mkdir()
    spark.range(10).write.parquet(str(other))
    for path in (empty, other):
        with pytest.raises(Exception, match="no rcfmt data at .*no schema to read"):
            spark.read.format("rcfmt").load(str(path)).schema
    with pytest.raises(Exception, match="column 'id' is not in the rcfmt data; columns: \\[\\]"):
        spark.read.format("rcfmt").schema("id BIGINT").load(str(empty)).collect()


# ---------------------------------------------------------------- writes
def test_append_overwrite_and_options(spark, tmp_path):
    path = str(tmp_path / "w")
    df = spark.range(0, 1000).selectExpr("id", "cast(id % 4 as int) as k", "cast(id as string) as s")
    df.write.format("rcfmt").mode("overwrite").option("blockRows", "100").option("compression", "zstd") \
        .option("clusterBy", "k,id").option("curve", "sort").save(path)
    df.write.format("rcfmt").mode("append").save(path)
    ds = rcfmt.dataset(path)
    assert ds.version == 2 and ds.num_rows == 2000
    recorded = rcfmt.dataset(path, version=1).info["clustering"]
    assert (recorded["columns"], recorded["curve"], recorded["scope"]) == (["k", "id"], "sort", "file")
    assert rcfmt.dataset(path).info["clustering"] == recorded  # the append followed it
    with rcfmt.open(rcfmt.dataset(path, version=1).files[0].path) as f:
        assert f.num_blocks >= 2 and max(f.footer.blocks["row_count"]) <= 100
        assert f.read(columns=["k"])["k"].to_pylist() == sorted(f.read(columns=["k"])["k"].to_pylist())
    df.limit(10).write.format("rcfmt").mode("overwrite").save(path)
    assert spark.read.format("rcfmt").load(path).count() == 10
    assert not os.listdir(log.staging_root(path))
    with pytest.raises(Exception, match="cannot append"):  # a lossy schema change is refused on the driver
        spark.range(3).selectExpr("cast(id as string) as id").write.format("rcfmt").mode("append").save(path)
    assert rcfmt.dataset(path).num_rows == 10
    # an append adding a column evolves the schema: earlier rows read it as NULL
    spark.range(3).selectExpr("id", "'new' as tag").write.format("rcfmt").mode("append").save(path)
    back = spark.read.format("rcfmt").load(path)
    assert back.columns == ["id", "k", "s", "tag"] and back.count() == 13
    assert back.filter("tag IS NULL").count() == 10 and back.filter("k IS NULL").count() == 3


def test_renamed_columns_read_and_write_through_spark(spark, tmp_path, pushdown):
    """After ``Dataset.evolve(rename=...)`` Spark reads the files written before under the
    new names (pushed filters prune on them), and appends under the new names."""
    path = str(tmp_path / "r")
    spark.range(0, 1000).selectExpr("id", "cast(id % 10 as int) as k", "cast(id % 3 as string) as p") \
        .write.format("rcfmt").mode("append").option("blockRows", "100").option("partitionBy", "p").save(path)
    rcfmt.dataset(path).evolve(rename={"k": "bucket"})
    df = spark.read.format("rcfmt").load(path)
    assert df.columns == ["id", "bucket", "p"]
    assert df.filter("bucket = 7").count() == 100
    assert sorted(r.id for r in df.filter("bucket = 7 AND id < 100").collect()) == [7, 17, 27, 37, 47, 57, 67, 77,
                                                                                   87, 97]
    spark.range(1000, 1010).selectExpr("id", "cast(7 as int) as bucket", "'0' as p") \
        .write.format("rcfmt").mode("append").save(path)
    back = spark.read.format("rcfmt").load(path)
    assert back.filter("bucket = 7").count() == 110 and back.filter("bucket IS NULL").count() == 0


def test_columns_that_differ_only_in_case_are_refused(spark, tmp_path):
    """Spark resolves column names case-insensitively: an append of ``A`` to a dataset
    of ``a`` (which would hold both) and data with ``a`` and ``A`` are refused before
    anything is written, naming both; the dataset stays as it was and readable."""
    path = str(tmp_path / "case")
    base = spark.range(5).selectExpr("CAST(id AS INT) AS a", "id AS b")
    base.write.format("rcfmt").mode("overwrite").save(path)
    with pytest.raises(Exception, match="columns 'a' and 'A' of the dataset differ only in case"):
        base.withColumnRenamed("a", "A").write.format("rcfmt").mode("append").save(path)
    with pytest.raises(Exception, match="columns 'a' and 'A' of the written data differ only in case"):
        base.selectExpr("a", "b AS A").write.format("rcfmt").mode("append").save(str(tmp_path / "new"))
    assert rcfmt.dataset(path).version == 1 and rcfmt.dataset(path).schema.names == ["a", "b"]
    assert spark.read.format("rcfmt").load(path).filter("A > 1").count() == 3


def test_failed_task_leaves_the_dataset_as_it_was(spark, tmp_path):
    path = str(tmp_path / "f")
    spark.range(0, 100).write.format("rcfmt").mode("append").save(path)
    before = rcfmt.dataset(path)
    files_before = _data_files(path)

    def fail_late(batches):
        seen = 0
        for b in batches:
            seen += b.num_rows
            yield b
            if seen > 600:
                raise RuntimeError("task dies mid-write")

    bad = spark.range(0, 2000, numPartitions=2).mapInArrow(fail_late, "id bigint")
    for mode in ("append", "overwrite"):
        with pytest.raises(Exception, match="task dies mid-write"):
            bad.write.format("rcfmt").mode(mode).option("targetFileRows", "100").save(path)
        after = rcfmt.dataset(path)
        assert after.version == before.version and after.num_rows == 100
        assert _data_files(path) == files_before  # no staged or published file is left
        assert not os.listdir(log.staging_root(path))
    assert spark.read.format("rcfmt").load(path).count() == 100


def test_register_helper(spark):
    spark_datasource.register(spark)
    try:
        assert spark.conf.get(PUSHDOWN) == "true"
    finally:
        spark.conf.set(PUSHDOWN, "false")


# ---------------------------------------------------------------- bitmap indexes
def test_pushed_filters_use_bitmap_indexes(spark, pushdown, tmp_path):
    rng = np.random.default_rng(7)
    n = 30_000
    table = pa.table({"mode": pa.array(rng.choice(["AIR", "MAIL", "SHIP"], n)),
                      "flag": pa.array(rng.choice(["A", "N", "R"], n)),
                      "v": pa.array(rng.integers(0, 1 << 40, n))})
    path = str(tmp_path / "ds")
    rcfmt.write_dataset(table, path, block_rows=5000, bitmap_indexes={"mode": "equality", "flag": "equality"})
    expected = sum(1 for m, f in zip(table["mode"].to_pylist(), table["flag"].to_pylist()) if m == "AIR" and f == "R")
    stats_dir = str(tmp_path / "stats")
    df = spark.read.format("rcfmt").option("statsDir", stats_dir).option("pushdown", "true").load(path)
    rows = df.filter("mode = 'AIR' AND flag = 'R'").select("v").collect()
    assert len(rows) == expected
    st = spark_datasource.read_scan_stats(stats_dir)
    assert st.rows_selected_index == expected  # decided by the indexes, no filter column decoded
    # the relation's filter option takes the same path
    stats_dir2 = str(tmp_path / "stats2")
    df2 = (spark.read.format("rcfmt").option("statsDir", stats_dir2)
           .option("filter", "mode = 'AIR' AND flag = 'R'").load(path))
    assert df2.count() == expected
    assert spark_datasource.read_scan_stats(stats_dir2).rows_selected_index == expected


def test_a_file_with_repeated_names_is_refused_naming_them(spark, tmp_path):
    """A file may repeat a column name (Arrow allows it); Spark resolves columns by name,
    so the relation is refused when loaded, naming the repeated column."""
    path = tmp_path / "dup.rcfmt"
    rcfmt.write_table(pa.Table.from_arrays([pa.array([1, 2]), pa.array(["x", "y"]), pa.array([3, 4])],
                                           names=["a", "a", "b"]), path)
    with pytest.raises(Exception, match=r"column names \['a'\] repeat"):
        spark.read.format("rcfmt").load(str(path)).schema
