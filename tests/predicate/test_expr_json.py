"""Expressions as JSON (rcfmt.predicate.expr_json): exact round trips and strict loading."""
from __future__ import annotations

import datetime as dt
import decimal
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rcfmt import col
from rcfmt.errors import FilterError
from oracle_filter import selection_mask
from rcfmt.predicate.bind import bind
from rcfmt.predicate.expr_json import dumps, loads
from strategies_expr import exprs, tables
from strategies import examples


@st.composite
def cases(draw):
    data = draw(tables(min_rows=0, max_rows=40, max_columns=3))
    return data.table, draw(exprs(data, max_leaves=5))


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_round_trip_is_exact(case):
    """Every literal type the binder accepts comes back with its type and value (repr
    tells np.int64 from int, Decimal('1.0') from Decimal('1'), offsets apart), and the
    loaded expression selects exactly the same rows."""
    table, expr = case
    text = dumps(expr)
    back = loads(text)
    assert repr(back) == repr(expr)
    assert dumps(back) == text
    try:
        bind(expr, table.schema)
    except FilterError:  # a literal the column's type refuses: refused the same way
        with pytest.raises(FilterError):
            bind(back, table.schema)
        return
    bind(back, table.schema)
    expected = selection_mask(expr, table)
    np.testing.assert_array_equal(selection_mask(back, table), expected)


def test_literals_of_other_units_and_lists_select_the_same_rows_after_a_round_trip(tmp_path):
    """A datetime64 of a multiple unit (10 s), timedelta64s, a pandas Timestamp's
    nanoseconds and ``list_contains`` survive JSON: the same rows before and after."""
    import pandas as pd
    import pyarrow as pa

    import rcfmt

    table = pa.table({"ts": pa.array([0, 1, 5, 50], pa.timestamp("ns")),
                      "s": pa.array([0, 1, 5, 50], pa.timestamp("s")),
                      "d": pa.array([0, 10**9, 5 * 10**9, 50 * 10**9], pa.duration("ns")),
                      "tags": pa.array([["x"], [], None, ["y", "x"]])})
    exprs = [col("s") == np.datetime64(5, "10s"), col("ts") == pd.Timestamp(1, unit="ns"),
             col("d") == np.timedelta64(1, "s"), col("d") >= np.timedelta64(5_000_000_000, "ns"),
             rcfmt.list_contains(col("tags"), "x") & (col("s") > np.datetime64(0, "s"))]
    table = table.append_column("row", pa.array(range(4)))
    rcfmt.write_table(table, tmp_path / "t.rcfmt")

    def rows(expr):
        return rcfmt.read_table(tmp_path / "t.rcfmt", columns=["row"], filter=expr).column("row").to_pylist()

    for expr, want in zip(exprs, ([3], [1], [1], [2, 3], [3])):
        assert rows(expr) == want and rows(loads(dumps(expr))) == want, expr


def test_special_values_survive():
    values = [math.nan, -0.0, math.inf, decimal.Decimal("-Infinity"), decimal.Decimal("1.10"), 2**80,
              np.float32(0.1), np.uint64(2**64 - 1), np.datetime64(-(2**63), "ns"), np.datetime64(5, "D"),
              dt.datetime(2024, 1, 1, 12, 0, 0, 1, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
              dt.date(1, 1, 1), b"\x00\xff", "\U0001f600\x00", True, np.bool_(False)]
    for v in values:
        back = loads(dumps(col("x") == v)).value
        assert type(back) is type(v)
        assert repr(back) == repr(v)
        if isinstance(v, float):
            assert math.copysign(1, back) == math.copysign(1, v)


@pytest.mark.parametrize("text", [
    "", "nul", "[]", "{}", '{"cmp": "===", "column": "x", "value": ["int", "1"]}',
    '{"cmp": "==", "column": 1, "value": ["int", "1"]}', '{"cmp": "==", "column": "x", "value": ["int", "1x"]}',
    '{"cmp": "==", "column": "x", "value": ["pickle", "..."]}', '{"and": []}', '{"not": null}',
    '{"cmp": "==", "column": "x", "value": ["np", "O", "1"]}', '{"cmp": "==", "column": "x", "value": ["np", "<i1", "300"]}',
    '{"cmp": "==", "column": "x", "value": ["datetime64", "fortnight", 1]}', '{"is_null": "x", "extra": 1}',
    '{"cmp": "==", "column": "x", "value": ["int", "1"], "more": true}', "[" * 100000,
])
def test_loads_refuses_anything_else(text):
    with pytest.raises(FilterError):
        loads(text)


def test_dumps_refuses_what_it_cannot_write():
    with pytest.raises(FilterError):
        dumps("x > 1")
    with pytest.raises(FilterError):
        dumps(col("x") == object())
