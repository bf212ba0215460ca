"""Filters given as pyarrow-style DNF lists select the rows ``pyarrow.parquet``'s
``filters=`` selects on the same table (docs/PYARROW.md): ``in`` / ``not in`` with
pyarrow's NULL rule (a NULL row is in a list exactly when it holds None), comparisons
with SQL's, on ints, floats with NaN, and strings, NULLs in every column. One difference
stays (docs/DIFFERENCES.md): -0.0 is a member of a list holding 0.0, as ``==`` has it;
pyarrow's ``is_in`` compares the bits."""
from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rcfmt
from strategies import examples

VALUES = {"x": st.integers(-3, 3), "f": st.sampled_from([-1.5, 0.0, 2.0, math.nan]),
          "s": st.sampled_from(["", "a", "ab", "b"])}
OPS = ["in", "not in", "==", "!=", "<", ">="]


@st.composite
def tables(draw):
    n = draw(st.integers(1, 12))
    columns = {name: draw(st.lists(st.none() | values, min_size=n, max_size=n)) for name, values in VALUES.items()}
    types = {"x": pa.int64(), "f": pa.float64(), "s": pa.string()}
    return pa.table({"id": list(range(n)), **{k: pa.array(v, types[k]) for k, v in columns.items()}})


@st.composite
def terms(draw):
    name = draw(st.sampled_from(sorted(VALUES)))
    op = draw(st.sampled_from(OPS))
    if op in ("in", "not in"):
        members = draw(st.lists(VALUES[name], max_size=3))
        if draw(st.booleans()):
            members.insert(draw(st.integers(0, len(members))), None)
        return name, op, members
    return name, op, draw(VALUES[name])


@settings(max_examples=examples(200), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(table=tables(), dnf=st.lists(st.lists(terms(), min_size=1, max_size=3), min_size=1, max_size=3),
       nested=st.booleans())
def test_dnf_lists_select_pyarrows_rows(tmp_path, table, dnf, nested):
    filters = dnf if nested else dnf[0]
    try:  # (pyarrow's meaning of the list, on the rows in memory: its Parquet reader prunes row
        #     groups by statistics that leave NaN out, dropping a NaN row from ``f != -1.5``)
        want = table.filter(pq.filters_to_expression(filters))["id"].to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError, ValueError):
        assume(False)  # (a list pyarrow refuses: nothing to compare)
    rcfmt.write_table(table, tmp_path / "t.rcfmt", page_rows=4, block_rows=8)
    got = rcfmt.read_table(tmp_path / "t.rcfmt", filter=filters)["id"].to_pylist()
    assert sorted(got) == sorted(want), (filters, table.to_pydict())


@pytest.mark.parametrize("filters, rows", [
    ([("x", "not in", [1, 2])], [1, 2]),  # (the NULL row: not a member)
    ([("x", "in", [1, None])], [0, 1]),
    ([("x", "not in", [1, None])], [2, 3]),
    ([("x", "in", [None])], [1]),
    ([("x", "not in", [None])], [0, 2, 3]),
    ([("x", "not in", [])], [0, 1, 2, 3]),
    ([[("x", "in", [None])], [("x", "==", 3)]], [1, 2]),
])
def test_dnf_membership_of_null_rows(tmp_path, filters, rows):
    table = pa.table({"id": [0, 1, 2, 3], "x": pa.array([1, None, 3, 2], pa.int64())})
    pq.write_table(table, tmp_path / "t.parquet")
    rcfmt.write_table(table, tmp_path / "t.rcfmt")
    assert pq.read_table(tmp_path / "t.parquet", filters=filters)["id"].to_pylist() == rows
    assert rcfmt.read_table(tmp_path / "t.rcfmt", filter=filters)["id"].to_pylist() == rows


def test_a_signed_zero_is_a_member_of_a_list_holding_the_other(tmp_path):
    """-0.0 equals 0.0 in a DNF list as everywhere in rcfmt (``==``, ``isin``, merge
    keys); pyarrow's ``is_in`` compares bits (its ``==`` does not): the one difference."""
    table = pa.table({"id": [0, 1, 2], "f": pa.array([-0.0, 0.0, None])})
    rcfmt.write_table(table, tmp_path / "t.rcfmt")
    assert rcfmt.read_table(tmp_path / "t.rcfmt", filter=[("f", "in", [0.0])])["id"].to_pylist() == [0, 1]
    assert rcfmt.read_table(tmp_path / "t.rcfmt", filter=[("f", "not in", [-0.0])])["id"].to_pylist() == [2]
    assert rcfmt.read_table(tmp_path / "t.rcfmt", filter=[("f", "==", 0.0)])["id"].to_pylist() == [0, 1]
