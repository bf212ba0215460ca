"""Spark filter translation and type mapping, without a SparkSession.

Each translated filter must give Spark's TRUE / FALSE / NULL on every row (a pushed
filter leaves Spark's plan, and ``Not`` tells FALSE from NULL). The reference below
implements Spark's semantics: NULL propagates, NaN equals NaN and is greater than every
other value, -0.0 equals 0.0, nanosecond timestamps are seen floored to microseconds.
"""
from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
import os

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
from pyspark.sql import datasource as D  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

from oracle_filter import evaluate  # noqa: E402  (the independent oracle, tests/oracle_filter.py)
from rcfmt.dataset import Fragment  # noqa: E402
from spark_datasource.filters import translate, translate_all  # noqa: E402
from spark_datasource.reader import claim_plan, plan_partitions, split_rows, spread  # noqa: E402
from spark_datasource.source import pushdown_planning  # noqa: E402
from spark_datasource.types import BatchConverter, spark_arrow_schema, to_rcfmt_schema, to_spark_schema  # noqa: E402

NAN = float("nan")


def _key(v):
    """Spark's order of doubles: NaN largest, -0.0 == 0.0."""
    return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)


def spark_eval(f, x):
    """Spark's value of filter ``f`` for one row value ``x`` (None = NULL)."""
    if isinstance(f, D.Not):
        r = spark_eval(f.child, x)
        return None if r is None else not r
    if isinstance(f, D.IsNull):
        return x is None
    if isinstance(f, D.IsNotNull):
        return x is not None
    if isinstance(f, D.EqualNullSafe):
        if x is None or f.value is None:
            return x is None and f.value is None
        return _key(x) == _key(f.value)
    if isinstance(f, D.In):
        if x is None:
            return None
        if any(v is not None and _key(v) == _key(x) for v in f.value):
            return True
        return None if any(v is None for v in f.value) else False
    if isinstance(f, D.StringStartsWith):
        return None if x is None else x.startswith(f.value)
    if isinstance(f, D.StringEndsWith):
        return None if x is None else x.endswith(f.value)
    if x is None or f.value is None:
        return None
    a, b = _key(x), _key(f.value)
    return {D.EqualTo: a == b, D.GreaterThan: a > b, D.GreaterThanOrEqual: a >= b,
            D.LessThan: a < b, D.LessThanOrEqual: a <= b}[type(f)]


CMP = [D.EqualTo, D.EqualNullSafe, D.GreaterThan, D.GreaterThanOrEqual, D.LessThan, D.LessThanOrEqual]


def _filters(name, literals):
    out = []
    for cls, v in itertools.product(CMP, literals):
        out.append(cls((name,), v))
    for k in range(1, 3):
        for combo in itertools.combinations(literals, k):
            out.append(D.In((name,), list(combo)))
            out.append(D.In((name,), list(combo) + [None]))
    out += [D.IsNull((name,)), D.IsNotNull((name,))]
    return out + [D.Not(f) for f in out]


def _check(table, name, filters, reference_values):
    for f in filters:
        expr = translate(f, table.schema)
        assert expr is not None, f"{f} was not pushed"
        got = evaluate(expr, table).to_pylist()
        want = [spark_eval(f, x) for x in reference_values]
        assert got == want, f"{f}: rcfmt {got} != Spark {want}"


@pytest.mark.parametrize("t", [pa.float64(), pa.float32()])
def test_float_filters_follow_spark_nan_semantics(t):
    values = [None, NAN, -math.inf, -1.5, -0.0, 0.0, 2.0, math.inf]
    table = pa.table({"x": pa.array(values, t)})
    _check(table, "x", _filters("x", [NAN, -1.5, 0.0, -0.0, math.inf, 3.0]), values)


def test_int_string_date_filters():
    ints = [None, -3, 0, 5, 2**40]
    _check(pa.table({"x": pa.array(ints, pa.int64())}), "x", _filters("x", [-3, 0, 7, 2**40]), ints)
    strs = [None, "", "a", "ab", "b\u00e9", "\U0001f600"]
    t = pa.table({"x": pa.array(strs)})
    _check(t, "x", _filters("x", ["", "a", "ab", "zz"]), strs)
    for p in ["", "a", "b\u00e9", "\U0001f600"]:
        _check(t, "x", [D.StringStartsWith(("x",), p), D.Not(D.StringStartsWith(("x",), p))], strs)
    days = [None, dt.date(2024, 1, 1), dt.date(1969, 12, 31)]
    _check(pa.table({"x": pa.array(days, pa.date32())}), "x", _filters("x", [dt.date(2024, 1, 1)]), days)


def test_nanosecond_timestamps_compare_as_spark_sees_them():
    base = 1_700_000_000_000_000_000
    raw = [None, base - 1001, base - 1000, base - 1, base, base + 1, base + 999, base + 1000, -1, -1000, -1001]
    floored = [None if v is None else v // 1000 for v in raw]  # what Spark reads

    def us(m):
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=m)

    for tz in ("UTC", None):
        table = pa.table({"x": pa.array(raw, pa.timestamp("ns", tz=tz))})
        lits = [us(base // 1000), us(base // 1000 - 1), us(-1)]
        if tz is None:
            lits = [v.replace(tzinfo=None) for v in lits]
        ref = [None if v is None else (us(v) if tz else us(v).replace(tzinfo=None)) for v in floored]
        _check(table, "x", _filters("x", lits), ref)
        # and the batch conversion floors the same way
        conv = BatchConverter(pa.schema([pa.field("x", pa.timestamp("us", tz=tz))]))
        out = conv(table.to_batches()[0])
        assert out.column(0).cast(pa.int64()).to_pylist() == floored


def test_filters_that_are_not_pushed_come_back_unchanged():
    t = pa.table({"s": ["a"], "b": [b"x"], "n": pa.array([1], pa.int64())})
    filters = [D.StringEndsWith(("s",), "a"), D.StringContains(("s",), "a"), D.EqualTo(("nested", "f"), 1),
               D.EqualTo(("missing",), 1), D.StringStartsWith(("b",), "x"), D.EqualTo(("n",), "text"),
               D.EqualTo(("s",), 1), D.Not(D.StringContains(("s",), "q"))]
    pushed, rest = translate_all(filters + [D.EqualTo(("n",), 1)], t.schema)
    assert all(a is b for a, b in zip(rest, filters)) and len(rest) == len(filters)
    assert pushed is not None


def test_values_pyspark_may_have_altered_are_left_to_spark():
    """pyspark hands a decimal of 28 digits or more rounded (its default context: a
    decimal(38,10) row was pruned away), and a timestamp of 1582-10-05..14 shifted to
    1582-10-15: filters on them are not pushed; their neighbours are, dates too (Spark's
    Parquet reader reads those days as rcfmt does)."""
    t = pa.table({"d": pa.array([decimal.Decimal("1.5")], pa.decimal128(38, 10)),
                  "ts": pa.array([dt.datetime(2000, 1, 1)], pa.timestamp("us")), "day": pa.array([dt.date(2000, 1, 1)])})
    rounded = decimal.Decimal("1234567890123456789012345679")
    refused = [D.EqualTo(("d",), rounded), D.In(("d",), (decimal.Decimal(1), rounded)),
               D.Not(D.LessThan(("d",), rounded)), D.EqualTo(("ts",), dt.datetime(1582, 10, 15, 12)),
               D.GreaterThan(("ts",), dt.datetime(1582, 10, 10))]
    pushed, rest = translate_all(refused, t.schema)
    assert pushed is None and len(rest) == len(refused)
    kept = [D.EqualTo(("d",), decimal.Decimal("12345678901234567890123456.5")),
            D.EqualTo(("ts",), dt.datetime(1582, 10, 20)), D.EqualTo(("day",), dt.date(1582, 10, 15))]
    assert all(translate(f, t.schema) is not None for f in kept)


def test_spark_type_mapping_both_ways():
    arrow = pa.schema([
        ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
        ("u8", pa.uint8()), ("u16", pa.uint16()), ("u32", pa.uint32()), ("u64", pa.uint64()),
        ("f32", pa.float32()), ("f64", pa.float64()), ("d", pa.decimal128(10, 2)), ("dn", pa.decimal128(5, -3)),
        ("day", pa.date32()), ("ts", pa.timestamp("ms", tz="Europe/Paris")), ("ntz", pa.timestamp("ns")),
        ("s", pa.string()), ("ls", pa.large_string()), ("bin", pa.binary()), ("lbin", pa.large_binary()),
    ])
    spark = to_spark_schema(arrow)
    assert [f.dataType.simpleString() for f in spark.fields] == [
        "boolean", "tinyint", "smallint", "int", "bigint", "smallint", "int", "bigint", "decimal(20,0)",
        "float", "double", "decimal(10,2)", "decimal(8,0)", "date", "timestamp", "timestamp_ntz",
        "string", "string", "binary", "binary"]
    assert all(f.nullable for f in spark.fields)
    target = spark_arrow_schema(spark)
    values = {
        "b": [True, None], "i8": [-128, 1], "i16": [1, None], "i32": [1, 2], "i64": [2**63 - 1, 0],
        "u8": [255, 0], "u16": [65535, 0], "u32": [2**32 - 1, 0], "u64": [2**64 - 1, None],
        "f32": [1.5, NAN], "f64": [-0.0, None], "d": [decimal.Decimal("1.25"), None],
        "dn": [decimal.Decimal("12E+3"), None], "day": [dt.date(2024, 1, 1), None],
        "ts": [1_700_000_000_123, None], "ntz": [1_500, None], "s": ["a", None], "ls": ["b", "c"],
        "bin": [b"\x00", None], "lbin": [b"", None]}
    batch = pa.record_batch([pa.array(values[f.name], f.type) for f in arrow], schema=arrow)
    out = BatchConverter(target)(batch)
    assert out.schema.equals(target)
    assert out.column("u64").to_pylist()[0] == decimal.Decimal(2**64 - 1)
    assert out.column("dn").to_pylist()[0] == decimal.Decimal(12000)
    assert out.column("ts").cast(pa.int64()).to_pylist()[0] == 1_700_000_000_123_000
    assert out.column("ntz").cast(pa.int64()).to_pylist()[0] == 1
    # writing: Spark -> rcfmt
    back = to_rcfmt_schema(T.StructType([
        T.StructField("ts", T.TimestampType()), T.StructField("ntz", T.TimestampNTZType()),
        T.StructField("d", T.DecimalType(38, 10)), T.StructField("b", T.ByteType())]))
    assert back.types == [pa.timestamp("us", tz="UTC"), pa.timestamp("us"), pa.decimal128(38, 10), pa.int8()]
    assert to_rcfmt_schema(T.StructType([T.StructField("a", T.ArrayType(T.DayTimeIntervalType()))])).types == [
        pa.list_(pa.field("element", pa.duration("us")))]
    with pytest.raises(TypeError, match="cannot be stored"):
        to_rcfmt_schema(T.StructType([T.StructField("a", T.ArrayType(T.YearMonthIntervalType()))]))


def test_partition_planning_splits_and_packs():
    big = Fragment("/x/big", (), num_rows=1000, size=100 << 20, num_blocks=10)
    small = [Fragment(f"/x/s{i}", (), num_rows=10, size=1 << 10, num_blocks=1) for i in range(20)]
    groups = plan_partitions([big], max_bytes=128 << 20, min_partitions=4)
    assert len(groups) == 4 and [g[0].blocks for g in groups] == [(0, 2), (2, 5), (5, 7), (7, 10)]
    groups = plan_partitions(small, max_bytes=128 << 20, min_partitions=4)
    assert 4 <= len(groups) <= 6 and sum(len(g) for g in groups) == 20  # small files are packed
    assert plan_partitions([], 1, 1) == []
    groups = plan_partitions([big] + small, max_bytes=10 << 20, min_partitions=1)
    assert all(sum(f.estimated_size for f in g) <= 10 << 20 for g in groups)
    flat = [f for g in groups for f in g]
    assert sum(f.blocks[1] - f.blocks[0] for f in flat if f.path == "/x/big") == 10


def test_metadata_counts_are_shared_by_batches_up_to_min_partitions():
    assert split_rows(0, 100, 4) == []
    assert split_rows(99, 100, 4) == [99]
    assert split_rows(1001, 100, 4) == [250, 250, 250, 251]
    assert split_rows(250, 100, 4) == [83, 83, 84]
    assert sum(split_rows(6_001_215, 262_144, 2)) == 6_001_215


def test_pushdown_offered_only_where_spark_can_call_it():
    assert pushdown_planning()  # outside Spark's workers: offered
    code = compile("pushdown_planning()", "/site-packages/pyspark/sql/worker/plan_data_source_read.py", "eval")
    assert eval(code, {"pushdown_planning": pushdown_planning}) is False
    code = compile("pushdown_planning()", "/site-packages/pyspark/sql/worker/data_source_pushdown_filters.py",
                   "eval")
    assert eval(code, {"pushdown_planning": pushdown_planning}) is True


def test_plan_claims_belong_to_the_first_execution(tmp_path):
    d = str(tmp_path / "claims")
    assert claim_plan(d, "plan1", "7") is True
    assert claim_plan(d, "plan1", "7") is True  # other tasks of the same execution
    assert claim_plan(d, "plan1", "8") is False  # another query running the same plan
    assert claim_plan(d, "plan2", "8") is True
    assert sorted(os.listdir(d)) == ["plan1", "plan2"]


def test_pruned_fragments_are_spread_over_the_partitions():
    frags = [Fragment(f"/x/{i}", (), 10, (i + 1) << 20, 1) for i in range(7)]
    out = spread(frags, [[1], [2], [3]], 8)
    assert len(out) == 3 and sorted(f.path for g in out for f in g) == sorted(f.path for f in frags)
    assert len(spread(frags, [], 4)) == 4 and spread([], [[1]], 4) == [[]]


def test_pushdown_reader_hands_back_filters(tmp_path, monkeypatch):
    import rcfmt
    from spark_datasource.reader import RcfmtPushdownReader

    rcfmt.write_dataset(pa.table({"a": [1, 2], "s": ["x", "y"]}), tmp_path)
    schema = T.StructType([T.StructField("a", T.LongType()), T.StructField("s", T.StringType())])
    filters = [D.EqualTo(("a",), 1), D.StringEndsWith(("s",), "x")]
    r = RcfmtPushdownReader({"path": str(tmp_path)}, schema)
    back = list(r.pushFilters(filters))
    assert r.filter is not None
    if r.guarded:  # Spark 4.1-4.3: every filter stays in Spark's plan too
        assert len(back) == 2 and all(a is b for a, b in zip(back, filters))
    r.guarded = False
    back = list(r.pushFilters(filters))
    assert back == [filters[1]] and back[0] is filters[1]
    import pickle
    state = pickle.loads(pickle.dumps(r))
    assert not hasattr(state, "_ds") or state._ds is None


def test_spark_written_types_reach_spark_without_a_conversion_pass(tmp_path):
    """Data Spark wrote (int32-offset strings, timestamp[us, UTC], decimals, dates) is
    decoded straight into the Arrow types Spark expects: the batch goes through as is."""
    spark = T.StructType([T.StructField("s", T.StringType()), T.StructField("ts", T.TimestampType()),
                          T.StructField("ntz", T.TimestampNTZType()), T.StructField("d", T.DecimalType(15, 2)),
                          T.StructField("day", T.DateType()), T.StructField("bin", T.BinaryType())])
    arrow = to_rcfmt_schema(spark)
    table = pa.table({"s": ["a", None], "ts": [1, 2], "ntz": [3, None], "d": [decimal.Decimal("1.25"), None],
                      "day": [dt.date(2024, 1, 1), None], "bin": [b"x", None]}, schema=arrow)
    import rcfmt

    rcfmt.write_table(table, tmp_path / "f.rcfmt")
    batch = rcfmt.read_table(tmp_path / "f.rcfmt").to_batches()[0]
    assert batch.schema.equals(spark_arrow_schema(spark))
    assert BatchConverter(spark_arrow_schema(spark))(batch) is batch
