"""Predicate expressions: construction, DNF parsing, binding, evaluation, NNF.

Evaluation is checked on hand-written answers through the engine (a file written
plain and dictionary-encoded, read with the filter and with its negation, which tells
TRUE, FALSE and NULL apart) and through the independent oracle (tests/oracle_filter.py,
itself checked against a plain-Python model in tests/predicate/test_oracle_filter.py); NNF is
checked row by row against the oracle.
"""
from __future__ import annotations

import datetime as dt
import math
import os
import tempfile
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
from rcfmt.errors import FilterError, SchemaError
from rcfmt.schema.arrow_io import from_arrow
from rcfmt.predicate.evaluate import ColumnData, eval_nnf
from rcfmt.predicate.expr import And, Comparison, IsIn, IsNan, IsNull, IsValid, Not, Or, StartsWith, col, to_expr
from rcfmt.predicate.nnf import BoundAnd, BoundNot, BoundOr, Cmp, Folded, InSet, NanCheck, NullCheck, Prefix, columns, to_nnf
from rcfmt.predicate.bind import bind
from rcfmt.schema.types import logical_type_from_arrow

import oracle_filter  # tests/ is on sys.path (tests/conftest.py)
import strategies_expr as sx
from every_type import EVERY_TYPE
from strategies import examples

NAN = math.nan
UTC = dt.timezone.utc


def engine(expr, t: pa.Table, **write_options) -> list:
    """The engine's TRUE / FALSE / NULL per row: ``t`` written to a file, read back with
    ``expr`` (its TRUE rows) and with ``~expr`` (its FALSE rows); NULL rows are in neither."""
    if isinstance(t, pa.RecordBatch):
        t = pa.Table.from_batches([t])
    rows = t.append_column("__row", pa.array(range(t.num_rows), pa.int64()))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.rcfmt")
        rcfmt.write_table(rows, path, **write_options)
        if expr is None:
            return [True if i in set(rcfmt.read_table(path)["__row"].to_pylist()) else None for i in range(t.num_rows)]
        yes = set(rcfmt.read_table(path, columns=["__row"], filter=expr)["__row"].to_pylist())
        no = set(rcfmt.read_table(path, columns=["__row"], filter=~to_expr(expr))["__row"].to_pylist())
    assert not yes & no, f"rows both TRUE and FALSE for {expr!r}: {sorted(yes & no)}"
    return [True if i in yes else False if i in no else None for i in range(t.num_rows)]


def check(expr, t, expected) -> None:
    """``expr`` on ``t`` is ``expected`` (TRUE / FALSE / NULL per row) for the oracle and
    for the engine, on plain and on dictionary-encoded chunks."""
    assert oracle_filter.evaluate(expr, t).to_pylist() == expected, f"oracle: {expr!r}"
    for options in ({"dictionary": False}, {"dictionary": True}):
        assert engine(expr, t, **options) == expected, f"engine {options}: {expr!r}"


def table(**columns):
    return pa.table({k: v if isinstance(v, pa.Array) else pa.array(v) for k, v in columns.items()})


# =============================================================== construction
def test_comparisons_build_expressions():
    assert (col("x") > 5) == Comparison("x", ">", 5)
    assert (5 < col("x")) == Comparison("x", ">", 5)  # reflected
    assert (col("x") == "a") == Comparison("x", "==", "a")
    assert (col("x") != 1) == Comparison("x", "!=", 1)
    assert col("x").isin([1, 2]) == IsIn("x", (1, 2))
    assert col("x").isin(np.array([1, 2])).values == (1, 2)
    assert col("x").is_null() == IsNull("x")
    assert col("x").is_valid() == IsValid("x")
    assert col("x").is_nan() == IsNan("x")
    assert col("s").startswith("ab") == StartsWith("s", "ab")
    assert col("x").between(1, 3) == And((Comparison("x", ">=", 1), Comparison("x", "<=", 3)))


def test_combinators_flatten_and_repr():
    a, b, c = col("a") > 1, col("b") == "x", col("c").is_null()
    assert (a & b & c) == And((a, b, c))
    assert (a | b | c) == Or((a, b, c))
    assert ~a == Not(a)
    assert repr((a & ~b) | c) == "((col('a') > 1) & ~(col('b') == 'x')) | col('c').is_null()"
    assert repr(col("x").isin([1, None])) == "col('x').isin([1, None])"
    assert repr(col("s").startswith(b"\xff")) == "col('s').startswith(b'\\xff')"


@pytest.mark.parametrize("misuse", [
    lambda: bool(col("x") > 1),
    lambda: 1 < col("x") < 3,
    lambda: (col("x") > 1) and (col("y") < 2),
    lambda: not (col("x") > 1),
    lambda: bool(col("x")),
    lambda: col("x") in [1, 2],
])
def test_expressions_have_no_truth_value(misuse):
    with pytest.raises(FilterError, match="no truth value"):
        misuse()


def test_membership_in_a_column_points_to_isin():
    with pytest.raises(FilterError, match=r"isin\(\[\.\.\.\]\)"):
        3 in col("a")  # noqa: B015


def test_construction_errors():
    with pytest.raises(FilterError, match="parenthesize"):
        col("a") > 5 & col("b")  # noqa: B015 -- precedence trap: 5 & col("b")
    with pytest.raises(FilterError, match="column name must be a str"):
        col(5)
    with pytest.raises(FilterError, match="compare a column with a literal"):
        col("a") == col("b")
    with pytest.raises(FilterError, match="isin\\(\\) needs a list"):
        col("a").isin("abc")
    with pytest.raises(FilterError, match="isin\\(\\) needs a list"):
        col("a").isin(5)
    with pytest.raises(FilterError, match="cannot combine"):
        (col("a") > 1) & True
    with pytest.raises(FilterError, match="is a column, not a predicate"):
        (col("a") > 1) & col("b")


# =============================================================== DNF
def test_dnf_conjunction_and_disjunction():
    assert to_expr([("a", ">", 5), ("b", "in", [1, 2])]) == (col("a") > 5) & col("b").isin([1, 2])
    assert to_expr([("a", "=", 5)]) == (col("a") == 5)
    # (in / not in as pyarrow's filters= take them: a NULL row is a member exactly when None is)
    assert to_expr([[("a", "==", 1)], [("b", "not in", {3}), ("c", "!=", "x")]]) == Or((
        col("a") == 1, And((Or((Not(col("b").isin([3])), col("b").is_null())), col("c") != "x")),
    ))
    assert to_expr([("a", "NOT  IN", (1,))]) == ~col("a").isin([1]) | col("a").is_null()
    assert to_expr([("a", "not in", [1, None])]) == ~col("a").isin([1])
    assert to_expr([("a", "in", [None, 2])]) == col("a").isin([2]) | col("a").is_null()
    for op in ("<", "<=", ">", ">=", "!="):
        assert to_expr([("a", op, 1)]) == Comparison("a", op, 1)
    assert to_expr(None) is None
    e = col("a") > 1
    assert to_expr(e) is e


@pytest.mark.parametrize("bad, message", [
    ([], "empty filter list"),
    (("a", "=", 1), "wrap a single condition in a list"),
    ("a > 1", "a filter must be"),
    ({"a": 1}, "a filter must be"),
    ([("a", "=")], r"filter\[0\] must be a \(column, op, value\) tuple"),
    ([("a", "=", 1, 2)], r"filter\[0\] must be"),
    ([["a", "=", 1]], r"filter\[0\]\[0\] must be a \(column, op, value\) tuple"),
    ([("a", "~", 1)], "unknown operator '~'"),
    ([("a", "like", 1)], "unknown operator 'like'"),
    ([(1, "=", 1)], "column name must be a str"),
    ([("a", None, 1)], "operator must be a str"),
    ([("a", "in", "abc")], "isin\\(\\) needs a list"),
    ([("a", "in", 3)], "isin\\(\\) needs a list"),
    ([[("a", "=", 1)], []], r"filter\[1\] is an empty conjunction"),
    ([("a", "=", 1), [("b", "=", 1)]], "not a mix"),
    ([("a", "=", col("b"))], "compare a column with a literal"),
    (col("a"), "not an unbound predicate"),
])
def test_dnf_errors(bad, message):
    with pytest.raises(FilterError, match=message):
        to_expr(bad)


def test_columns():
    assert columns(None) == set()
    assert columns((col("a") > 1) | ~col("b").is_null() & col("c").isin([1])) == {"a", "b", "c"}
    assert columns([[("a", "=", 1)], [("b", "in", [1])]]) == {"a", "b"}
    schema = pa.schema([("a", pa.int8()), ("f", pa.float64())])
    assert columns(bind(~(col("f") < 1) & (col("a") == 1), schema)) == {"a", "f"}


# =============================================================== binding: errors
SCHEMA = pa.schema([
    ("i", pa.int32()), ("u8", pa.uint8()), ("f", pa.float64()), ("f32", pa.float32()), ("b", pa.bool_()),
    ("s", pa.string()), ("bin", pa.binary()), ("d", pa.date32()), ("ts", pa.timestamp("us")),
    ("tz", pa.timestamp("ms", tz="Europe/Paris")), ("dec", pa.decimal128(5, 2)), ("ls", pa.list_(pa.int32())),
])


@pytest.mark.parametrize("expr, error, message", [
    (col("nope") == 1, SchemaError, "unknown column 'nope' in filter; available columns: 'i', 'u8'"),
    (col("ls") == 1, SchemaError, "column 'ls' is a list: filter it with list_contains"),
    (col("i") == "1", FilterError, "cannot compare int32 column 'i' with str literal '1'"),
    (col("i") == True, FilterError, "cannot compare int32 column 'i' with bool"),  # noqa: E712
    (col("i") == b"1", FilterError, "cannot compare int32 column 'i' with bytes"),
    (col("f") < "x", FilterError, "cannot compare double column 'f' with str"),
    (col("b") == 1, FilterError, "cannot compare bool column 'b' with int literal 1"),
    (col("s") == b"x", FilterError, "string columns take str literals"),
    (col("s") == "\ud800", FilterError, "not valid Unicode"),
    (col("bin") == "x", FilterError, "binary columns take bytes"),
    (col("i") == None, FilterError, "None is not a comparison literal.*is_null"),  # noqa: E711
    (col("i").isin([1, "x"]), FilterError, "cannot compare int32 column 'i' with str literal 'x'"),
    (col("i").startswith("1"), FilterError, "startswith\\(\\) needs a string or binary column; 'i' is int32"),
    (col("s").startswith(b"1"), FilterError, "needs a str prefix"),
    (col("bin").startswith("1"), FilterError, "needs a bytes prefix"),
    (col("i").is_nan(), FilterError, "is_nan\\(\\) needs a float column; 'i' is int32"),
    (col("d") == dt.datetime(2020, 1, 1, tzinfo=UTC), FilterError, "date32 columns have no time zone"),
    (col("d") == 1.5, FilterError, "cannot compare date32\\[day\\] column 'd' with float"),
    (col("ts") == dt.datetime(2020, 1, 1, tzinfo=UTC), FilterError, "the column has no time zone, pass a naive"),
    (col("tz") == dt.datetime(2020, 1, 1), FilterError, "the column has time zone 'Europe/Paris', pass an aware"),
    (col("tz") == pd.Timestamp("2020-01-01"), FilterError, "pass an aware datetime"),
    (col("ts") == pd.Timestamp("2020-01-01", tz="UTC"), FilterError, "pass a naive datetime"),
    (col("ts") == dt.date(2020, 1, 1), FilterError, "timestamp columns take datetime literals"),
    (col("ts") == np.datetime64("NaT"), FilterError, "NaT is not a comparison literal"),
    (col("tz") == pd.NaT, FilterError, "NaT is not a comparison literal"),  # (pandas' NaT is a naive datetime)
    (col("ts") == pd.NaT, FilterError, "NaT is not a comparison literal"),
    (col("ts") == "2020-01-01", FilterError, "cannot compare timestamp\\[us\\] column 'ts' with str"),
    (col("dec") == "1.5", FilterError, "cannot compare decimal128\\(5, 2\\) column 'dec' with str"),
    ([("i", ">", None)], FilterError, "None is not a comparison literal"),
])
def test_bind_errors(expr, error, message):
    with pytest.raises(error, match=message):
        bind(expr, SCHEMA)


def test_bind_ambiguous_column():
    schema = pa.schema([("a", pa.int8()), ("a", pa.int16())])
    with pytest.raises(SchemaError, match="'a' in filter is ambiguous"):
        bind(col("a") == 1, schema)


def test_bind_none_and_bound_passthrough():
    assert bind(None, SCHEMA) is None
    b = bind(col("i") > 1, SCHEMA)
    assert bind(b, SCHEMA) is b
    with pytest.raises(SchemaError, match="bound as int32"):
        bind(b, pa.schema([("i", pa.int64())]))


# =============================================================== binding: literal conversion
def leaf(expr, schema=SCHEMA):
    return bind(expr, schema)


def cmp(name, op, value, schema=SCHEMA):
    b = leaf(col(name) == 0, schema)  # any Cmp on the column, for its Ref
    return (b.column, op, value)


def as_tuple(b):
    return (b.column, b.op, b.value) if isinstance(b, Cmp) else ("folded", b.value)


@pytest.mark.parametrize("expr, expected", [
    # out of range ints fold, keeping NULL for NULL rows
    (col("u8") < 300, ("folded", True)), (col("u8") <= 255, ("folded", True)), (col("u8") == 300, ("folded", False)),
    (col("u8") != 300, ("folded", True)), (col("u8") > 255, ("folded", False)), (col("u8") >= 0, ("folded", True)),
    (col("u8") < 0, ("folded", False)), (col("u8") >= -1, ("folded", True)), (col("u8") != -1, ("folded", True)),
    (col("i") < math.inf, ("folded", True)), (col("i") > math.inf, ("folded", False)),
    (col("i") >= -math.inf, ("folded", True)), (col("i") == math.inf, ("folded", False)),
    (col("i") == NAN, ("folded", False)), (col("i") != NAN, ("folded", True)), (col("i") < Decimal("NaN"), ("folded", False)),
    (col("i") < 2**31, ("folded", True)), (col("i") >= 2.0**31, ("folded", False)),
    # non-integral literals on int columns
    (col("i") < 5.5, ("i", "<=", 5)), (col("i") <= 5.5, ("i", "<=", 5)), (col("i") > 5.5, ("i", ">=", 6)),
    (col("i") >= 5.5, ("i", ">=", 6)), (col("i") == 5.5, ("folded", False)), (col("i") != 5.5, ("folded", True)),
    (col("i") < -0.5, ("i", "<=", -1)), (col("i") > Fraction(-1, 3), ("i", ">=", 0)),
    (col("i") == 5.0, ("i", "==", 5)), (col("i") == Decimal("5.000"), ("i", "==", 5)), (col("i") == np.int8(5), ("i", "==", 5)),
    # floats: exact value of the column's dtype, else the neighbouring float
    (col("f") == 0.1, ("f", "==", 0.1)), (col("f") == -0.0, ("f", "==", 0.0)), (col("f") < 2**53 + 1, ("f", "<=", 2.0**53)),
    (col("f") == 2**53 + 1, ("folded", False)), (col("f") > 2**53 + 1, ("f", ">=", 2.0**53 + 2)),
    (col("f") < 10**400, ("f", "<=", 1.7976931348623157e308)), (col("f") > 10**400, ("f", ">=", math.inf)),
    (col("f") == math.inf, ("f", "==", math.inf)), (col("f") == NAN, ("folded", False)), (col("f") != NAN, ("folded", True)),
    (col("f32") == 0.1, ("folded", False)), (col("f32") != 0.1, ("folded", True)),
    (col("f32") < 0.1, ("f32", "<=", float(np.float32(0.1)) if np.float32(0.1) < 0.1 else float(np.nextafter(np.float32(0.1), np.float32(0))))),
    (col("f32") == np.float32(0.1), ("f32", "==", float(np.float32(0.1)))),
    (col("f32") == 16777217, ("folded", False)), (col("f32") >= 16777217, ("f32", ">=", 16777218.0)),
    (col("f32") < 1e39, ("f32", "<=", float(np.finfo(np.float32).max))),
    # dates
    (col("d") == dt.date(1970, 1, 11), ("d", "==", 10)), (col("d") == 10, ("d", "==", 10)),
    (col("d") < dt.datetime(1970, 1, 11, 12), ("d", "<=", 10)), (col("d") == dt.datetime(1970, 1, 11, 12), ("folded", False)),
    (col("d") >= dt.datetime(1970, 1, 11, 0, 0, 0, 1), ("d", ">=", 11)), (col("d") == dt.datetime(1970, 1, 11), ("d", "==", 10)),
    (col("d") > np.datetime64("1970-01-02T01", "h"), ("d", ">=", 2)), (col("d") == np.datetime64("1970-02", "M"), ("d", "==", 31)),
    (col("d") < 2**31, ("folded", True)),
    # timestamps: exact units, finer literals rewritten
    (col("ts") == dt.datetime(1970, 1, 1, 0, 0, 1), ("ts", "==", 10**6)),
    (col("ts") == pd.Timestamp("1970-01-01 00:00:00.000001"), ("ts", "==", 1)),
    (col("ts") < pd.Timestamp("1970-01-01 00:00:00.0000015"), ("ts", "<=", 1)),
    (col("ts") == pd.Timestamp("1970-01-01 00:00:00.0000015"), ("folded", False)),
    (col("ts") > np.datetime64(1500, "ns"), ("ts", ">=", 2)), (col("ts") == np.datetime64(2, "ms"), ("ts", "==", 2000)),
    (col("ts") == 7, ("ts", "==", 7)), (col("ts") == np.datetime64(5, "10ms"), ("ts", "==", 50000)),
    (col("tz") == dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), ("tz", "==", 0)),
    (col("tz") == dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=1500), ("folded", False)),
    (col("tz") <= dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=1500), ("tz", "<=", 1)),
    (col("tz") == pd.Timestamp("1970-01-01 02:00:00.003", tz="Europe/Paris"), ("tz", "==", 3600 * 1000 + 3)),
    (col("tz") == np.datetime64(3, "ms"), ("tz", "==", 3)),
    (col("ts") == pa.scalar(5, pa.timestamp("ms")), ("ts", "==", 5000)),
    # decimals: unscaled ints at the column's scale
    (col("dec") == Decimal("1.25"), ("dec", "==", 125)), (col("dec") == 1, ("dec", "==", 100)),
    (col("dec") == 0.1, ("dec", "==", 10)), (col("dec") < Decimal("1.255"), ("dec", "<=", 125)),
    (col("dec") > Decimal("1.255"), ("dec", ">=", 126)), (col("dec") == Decimal("1.255"), ("folded", False)),
    (col("dec") < Decimal("1000"), ("folded", True)), (col("dec") == Decimal("-999.99"), ("dec", "==", -99999)),
    (col("dec") == Decimal("NaN"), ("folded", False)), (col("dec") == pa.scalar(Decimal("1.5")), ("dec", "==", 150)),
    # strings and binary
    (col("s") == "é", ("s", "==", "é".encode())), (col("bin") < bytearray(b"\xff"), ("bin", "<", b"\xff")),
    (col("b") == np.bool_(True), ("b", "==", True)),
])
def test_literal_conversion(expr, expected):
    b = bind(expr, SCHEMA)
    got = as_tuple(b)
    if got[0] != "folded":
        got = (got[0].name, *got[1:])
    assert got == expected
    assert type(got[-1]) is type(expected[-1])


def test_decimal_negative_scale_and_isin_members():
    schema = pa.schema([("d", pa.decimal128(3, -1)), ("u", pa.uint8()), ("f", pa.float32())])
    assert bind(col("d") == 120, schema).value == 12
    assert bind(col("d") < 125, schema).value == 12 and bind(col("d") < 125, schema).op == "<="
    b = bind(col("u").isin([3, 1, 3.0, 300, -1, 2.5, NAN, None, np.uint8(7)]), schema)
    assert isinstance(b, InSet) and b.values == (1, 3, 7) and b.has_null and not b.negated
    assert bind(col("f").isin([-0.0, 0.1, 0.5]), schema).values == (0.0, 0.5)


# =============================================================== evaluation: hand-written
def test_three_valued_logic_and_nan():
    t = table(x=pa.array([1.0, 5.0, 7.0, NAN, None, -0.0, 0.0], pa.float64()))
    check(col("x") > 5, t, [False, False, True, False, None, False, False])
    check(~(col("x") > 5), t, [True, True, False, True, None, True, True])
    check(col("x") != 5, t, [True, False, True, True, None, True, True])
    check(~(col("x") != 5), t, [False, True, False, False, None, False, False])
    check(col("x") == 0, t, [False, False, False, False, None, True, True])
    check(col("x") == -0.0, t, [False, False, False, False, None, True, True])
    check(col("x") < 0, t, [False, False, False, False, None, False, False])
    check(col("x") == NAN, t, [False, False, False, False, None, False, False])
    check(~(col("x") == NAN), t, [True, True, True, True, None, True, True])
    check(col("x").is_nan(), t, [False, False, False, True, None, False, False])  # NULL for NULL, as pc.is_nan
    check(~col("x").is_nan(), t, [True, True, True, False, None, True, True])  # so ~is_nan keeps no NULL row
    check(col("x").is_null(), t, [False, False, False, False, True, False, False])
    check(~col("x").is_null(), t, [True, True, True, True, False, True, True])
    check(~col("x").is_valid(), t, [False, False, False, False, True, False, False])
    check(col("x").isin([0.0, 7]), t, [False, False, True, False, None, True, True])
    check(col("x").isin([-0.0, NAN]), t, [False, False, False, True, None, True, True])  # NaN members match NaN
    check(~col("x").isin([NAN]), t, [True, True, True, False, None, True, True])
    check(~col("x").isin([NAN, None]), t, [None, None, None, False, None, None, None])
    check(~col("x").isin([5]), t, [True, False, True, True, None, True, True])
    check(col("x").between(0, 5), t, [True, True, False, False, None, True, True])
    check(~col("x").between(0, 5), t, [False, False, True, True, None, False, False])


def test_kleene_and_or_not():
    t = table(a=pa.array([1, 1, 1, None, None, None, 0, 0, 0]), b=pa.array([1, None, 0] * 3))
    a, b = col("a") == 1, col("b") == 1
    T, F, N = True, False, None
    check(a & b, t, [T, N, F, N, N, F, F, F, F])
    check(a | b, t, [T, T, T, T, N, N, T, N, F])
    check(~(a & b), t, [F, N, T, N, N, T, T, T, T])
    check(~a | ~b, t, [F, N, T, N, N, T, T, T, T])
    assert oracle_filter.selection_mask(~(a & b), t).tolist() == [F, F, T, F, F, T, T, T, T]


def test_isin_with_null_is_sql():
    t = table(x=pa.array([1, 2, None]))
    check(col("x").isin([1, None]), t, [True, None, None])
    check(~col("x").isin([1, None]), t, [False, None, None])
    check(col("x").isin([]), t, [False, False, None])
    check(~col("x").isin([]), t, [True, True, None])
    check([("x", "not in", [1, None])], t, [False, True, None])  # (DNF: pyarrow's rows, see test_dnf_pyarrow)
    check(col("x").isin([None]), t, [None, None, None])


def test_out_of_range_folding_keeps_null():
    t = table(x=pa.array([0, 255, None], pa.uint8()))
    check(col("x") < 300, t, [True, True, None])
    check(~(col("x") < 300), t, [False, False, None])
    check(col("x") == 300, t, [False, False, None])
    check(~(col("x") == 300), t, [True, True, None])
    check(col("x") >= -5, t, [True, True, None])
    check(col("x") < 0.5, t, [True, False, None])


def test_startswith_string_and_binary():
    t = table(s=pa.array(["abc", "ab", "a", "", None, "b"], pa.large_string()),
              b=pa.array([b"\xff\x00", b"\xff", b"", b"\xfe", None, b"a"], pa.binary()))
    check(col("s").startswith("ab"), t, [True, True, False, False, None, False])
    check(~col("s").startswith("ab"), t, [False, False, True, True, None, True])
    check(col("s").startswith(""), t, [True, True, True, True, None, True])
    check(col("b").startswith(b"\xff"), t, [True, True, False, False, None, False])
    check(col("s") < "ab", t, [False, False, True, True, None, False])




@pytest.mark.parametrize("expr, expected", [
    (col("bool") == True, [True, False, None]),  # noqa: E712
    (col("bool") < True, [False, True, None]),
    (col("i8") <= -128, [True, False, None]),
    (col("i8").isin([127, 128]), [False, True, None]),
    (col("u64") == 2**64 - 1, [True, False, None]),
    (col("u64") > 2**63, [True, False, None]),
    (col("u64") > 2.0**64, [False, False, None]),
    (col("u64") < -1, [False, False, None]),
    (col("i64") == -(2**63), [True, False, None]),
    (col("i64") < 2.0**63, [True, True, None]),
    (col("f32") == 0, [True, False, None]),
    (col("f32").is_nan(), [False, True, None]),
    (~col("f32").is_nan(), [True, False, None]),
    (col("f32").isin([NAN, 1]), [False, True, None]),
    (col("date") == dt.date(2020, 1, 1), [False, True, None]),
    (col("date") > np.datetime64("1970-01-01T12", "h"), [False, True, None]),
    (col("ts_s") >= dt.datetime(1970, 1, 1, 0, 0, 0, 1), [False, True, None]),
    (col("ts_ns_tz") == pd.Timestamp(1, unit="ns", tz="UTC"), [False, True, None]),
    (col("ts_ns_tz") < dt.datetime(1970, 1, 1, 9, tzinfo=dt.timezone(dt.timedelta(hours=9))), [False, False, None]),
    (col("dec") > Decimal("1.49999999999"), [True, False, None]),
    (col("dec") == Decimal("-99999999999999999999999999.9999999999"), [False, True, None]),
    (col("str") >= "", [True, True, None]),
    (col("str").startswith("é"), [True, False, None]),
    (col("lbin") > b"\x00", [False, True, None]),
    (col("dict") == "a", [False, True, None]),
    (col("dict").isin(["b", None]), [True, None, None]),
])
def test_every_type(expr, expected):
    check(expr, EVERY_TYPE, expected)


def test_chunks_record_batches_and_none():
    t = pa.Table.from_batches([pa.record_batch({"x": [1, 2]}), pa.record_batch({"x": [3, None]})])
    check(col("x") >= 2, t, [False, True, True, None])
    check(col("x") >= 2, t.to_batches()[1], [True, None])
    check(col("x") >= 2, pa.table({"x": pa.chunked_array([], pa.int64())}), [])
    check(None, t, [True] * 4)
    assert oracle_filter.selection_mask(None, t).dtype == bool
    with pytest.raises(SchemaError, match="bound as int64"):
        bind(bind(col("x") > 1, t.schema), pa.schema([("x", pa.string())]))


# =============================================================== NNF
def has_not(e) -> bool:
    if isinstance(e, BoundNot):
        return True
    return isinstance(e, (BoundAnd, BoundOr)) and any(has_not(c) for c in e.children)


def test_nnf_shapes():
    schema = pa.schema([("f", pa.float64()), ("i", pa.int64()), ("s", pa.string())])
    f = bind(~(col("f") < 5), schema)
    assert repr(to_nnf(f)) == "(col('f') >= 5.0) | col('f').is_nan()"
    assert repr(to_nnf(bind(~(col("i") < 5), schema))) == "col('i') >= 5"
    n = to_nnf(bind(~((col("i") == 1) | ~col("s").startswith("a") | col("i").is_null()), schema))
    assert isinstance(n, BoundAnd)
    assert [type(c) for c in n.children] == [Cmp, Prefix, NullCheck]
    assert n.children[0].op == "!=" and not n.children[1].negated and n.children[2].negated
    assert to_nnf(bind(~~(col("f").is_nan()), schema)) == NanCheck(f.child.column)
    assert isinstance(to_nnf(bind(~(col("i") == 1.5), schema)), Folded)


# =============================================================== properties
SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _column_data(arr) -> ColumnData:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    ltype = logical_type_from_arrow(arr.type)
    values, valid = from_arrow(arr, ltype)
    return ColumnData(ltype, values, valid)


@SETTINGS
@given(data=st.data())
def test_nnf_is_equivalent_row_by_row(data):
    """The NNF of a predicate, evaluated by the engine, is TRUE exactly where the oracle
    finds the user's predicate TRUE, and the NNF of its negation where the oracle finds
    it FALSE (so FALSE and NULL are told apart too)."""
    d = data.draw(sx.tables())
    expr = data.draw(sx.exprs(d))
    columns = {name: _column_data(d.table.column(name)) for name in d.table.column_names}
    for e in (expr, ~expr):
        nnf = to_nnf(bind(e, d.schema))
        assert not has_not(nnf)
        assert to_nnf(nnf) == nnf
        got = eval_nnf(nnf, columns.__getitem__, d.table.num_rows)
        assert got.tolist() == oracle_filter.selection_mask(e, d.table).tolist(), e


def test_date_scalars_beyond_python_dates_bind_and_show(tmp_path):
    import rcfmt

    """pyarrow date32 scalars past year 9999 (or before year 1) are literals like any
    other: they bind by their days and print by their stored value (found by hypothesis:
    binding and repr raised Python's OverflowError)."""
    t = pa.table({"d": pa.array([-2**31, 5, 2**31 - 1], pa.date32())})
    rcfmt.write_table(t, tmp_path / "d.rcfmt")
    for days in (-2**31, 5, 2**31 - 1):
        e = col("d") == pa.scalar(days, pa.date32())
        assert rcfmt.read_table(tmp_path / "d.rcfmt", filter=e).num_rows == 1
        assert str(days) in repr(e) or days == 5
    assert rcfmt.read_table(tmp_path / "d.rcfmt", filter=col("d") >= pa.scalar(0, pa.date64())).num_rows == 2


def test_time_scalars_keep_their_unit(tmp_path):
    """A pyarrow time scalar binds by its stored count in its own unit (``as_py`` cuts
    time64[ns] to microseconds: ``== 5 ns`` selected the row at 0), against time columns
    of every unit; the rows are pyarrow.compute's."""
    import pyarrow.compute as pc
    import rcfmt

    ns = pa.array([0, 5, 1000, 1_500_000_000, None], pa.int64())
    t = pa.table({"t_ns": ns.cast(pa.time64("ns")), "t_us": ns.cast(pa.time64("us")),
                  "t_ms": pa.array([0, 5, 1000, 1500, None], pa.int32()).cast(pa.time32("ms")),
                  "t_s": pa.array([0, 1, 2, 3, None], pa.int32()).cast(pa.time32("s"))})
    rcfmt.write_table(t, tmp_path / "t.rcfmt")
    literals = [pa.scalar(v, pa.time64(u)) for u in ("ns", "us") for v in (0, 1, 5, 1000, 1_500_000_000)]
    literals += [pa.scalar(v, pa.time32(u)) for u, v in (("ms", 1500), ("s", 1), ("ms", 5))]
    for name in t.column_names:
        for lit in literals:
            for op, fn in (("==", pc.equal), ("<", pc.less), (">=", pc.greater_equal)):
                e = {"==": col(name) == lit, "<": col(name) < lit, ">=": col(name) >= lit}[op]
                want = t.filter(_as_ns(t[name], fn, lit))
                got = rcfmt.read_table(tmp_path / "t.rcfmt", filter=e)
                assert got.column(name).to_pylist() == want.column(name).to_pylist(), (name, op, lit)


def _as_ns(column, fn, lit: pa.Scalar):
    """``fn(column, lit)`` on both as nanoseconds since midnight (the oracle: pyarrow
    compares times of different units only after a cast that may cut the literal)."""
    import pyarrow.compute as pc

    per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
    width = pa.int64() if pa.types.is_time64(column.type) else pa.int32()
    values = pc.multiply(column.cast(width).cast(pa.int64()), per[column.type.unit])
    lit_width = pa.int64() if pa.types.is_time64(lit.type) else pa.int32()
    target = lit.cast(lit_width).as_py() * per[lit.type.unit]
    return fn(values, target)


def test_a_large_integer_in_list_bound_again_gives_each_column_its_own_members(monkeypatch):
    """A dataset binds one filter per file: a large IN-list's members are remembered by
    the list, per column type -- a narrower column keeps only the members it can hold,
    whichever column bound the list first."""
    keys = tuple([-5, 3, 2**40, 7, 3] + list(range(100, 200)))
    flt = col("k").isin(list(keys))
    wide = pa.schema([("k", pa.int64())])
    narrow = pa.schema([("k", pa.int32())])
    unsigned = pa.schema([("k", pa.uint8())])
    expected = {
        wide: sorted(set(keys)),
        narrow: sorted(v for v in set(keys) if -2**31 <= v < 2**31),
        unsigned: sorted(v for v in set(keys) if 0 <= v < 256),
    }
    first = {}
    for schema in (wide, narrow, unsigned, wide, unsigned, narrow):
        bound = bind(flt, schema)
        assert isinstance(bound, InSet) and list(bound.values) == expected[schema], schema
        assert bound.value_set.to_pylist() == expected[schema]
        # the leaf itself is kept (with the arrays pruning makes of it), per column
        assert first.setdefault(schema, bound) is bound
    other = bind(col("j").isin(flt.values), pa.schema([("j", pa.int64())]))  # (the same values tuple)
    assert other.column.name == "j" and other is not first[wide] and other.values == first[wide].values
    # another list of the same values is bound on its own
    assert list(bind(col("k").isin(list(keys[:3]) + [1]), wide).values) == sorted({-5, 3, 2**40, 1})
    # a large list the general binding serves (a date column) is remembered as such: bound
    # again, it gives the same members, and a plain column of the same list its own leaf
    from rcfmt.predicate import bind as binding

    checked = []
    real = binding._plain_int_members
    monkeypatch.setattr(binding, "_plain_int_members", lambda *a: checked.append(a[0]) or real(*a))
    dates = pa.schema([("k", pa.date32())])
    first_dates = bind(flt, dates)
    again = bind(flt, dates)
    assert again is not first_dates and list(again.values) == list(first_dates.values)
    assert len(checked) == 1  # (not checked again for the next file)
    assert bind(flt, wide) is first[wide]


@pytest.mark.parametrize("literal", [np.timedelta64(1, "s"), np.timedelta64(-3, "D"), np.timedelta64("NaT"),
                                     np.datetime64("NaT"), np.datetime64(5, "ms")], ids=repr)
def test_numpy_time_literals_bind_or_raise_filter_error(literal, tmp_path):
    """numpy's timedelta64 is a numpy integer: on a column that is not a duration it is a
    FilterError naming the literal, like ``datetime.timedelta``, never another exception;
    on a duration column it compares. The same for datetime64 on columns that are not
    dates or timestamps."""
    schema = pa.schema([*EVERY_TYPE.schema, ("dur", pa.duration("us")), ("t64", pa.time64("us")),
                        ("ivl", pa.month_day_nano_interval()), ("l", pa.list_(pa.int64()))])
    for field in schema:
        c = col(field.name)
        for expr in (c == literal, c < literal, c.isin([literal, 1]), c.between(literal, literal)):
            try:
                bind(expr, schema)
            except FilterError as exc:
                assert field.name in str(exc), str(exc)
            except SchemaError as exc:  # (a list: filtered by list_contains)
                assert field.name == "l" and "list_contains" in str(exc)
    if isinstance(literal, np.timedelta64) and not np.isnat(literal):
        rcfmt.write_table(pa.table({"dur": pa.array([0, 1_000_000, None], pa.duration("us"))}), tmp_path / "d.rcfmt")
        got = rcfmt.read_table(tmp_path / "d.rcfmt", filter=col("dur") == literal)["dur"].to_pylist()
        assert got == ([dt.timedelta(seconds=1)] if literal == np.timedelta64(1, "s") else [])


def test_a_filter_nested_too_deeply_is_a_filter_error(tmp_path):
    """``~`` nested 3,000 times: reading with it, or writing it as JSON, is a FilterError
    (Python's RecursionError escaped before); 500 levels read as any filter."""
    import rcfmt
    from rcfmt.predicate import expr_json

    rcfmt.write_table(pa.table({"x": [1, 2, 3]}), tmp_path / "t.rcfmt")
    shallow, deep = col("x") == 2, col("x") == 2
    for _ in range(500):
        shallow = ~shallow
    for _ in range(3000):
        deep = ~deep
    assert rcfmt.read_table(tmp_path / "t.rcfmt", filter=shallow)["x"].to_pylist() == [2]
    with pytest.raises(FilterError, match="nested too deeply"):
        rcfmt.read_table(tmp_path / "t.rcfmt", filter=deep)
    with pytest.raises(FilterError, match="nested too deeply"):
        expr_json.dumps(deep)
