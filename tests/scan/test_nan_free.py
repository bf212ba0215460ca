"""A float column the file holds no NaN in (every chunk's ``nan_count`` is 0): its
``is_nan`` leaves are constants there, and the ``| is_nan(x)`` that NaN order (Polars,
Spark) and the NOT of a float comparison add beside a comparison is dropped, so the
block executor decides the filter alone. The rows are the independent oracle's
(tests/oracle_filter.py), NULLs and -0.0 included, under random trees with NOT."""
from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
from oracle_filter import selection_mask
from rcfmt import col
from rcfmt.predicate.nnf import Folded, NanCheck, leaves
from rcfmt.scan.scanner import scan_file
from strategies import examples
from strategies_expr import Data, exprs, tables
from .test_scan_soundness import assert_same

FLOATS = [pa.float64(), pa.float32(), pa.int32()]


@st.composite
def nan_free_cases(draw):
    data = draw(tables(types=FLOATS, min_rows=0, max_rows=80, max_columns=2))
    values = {name: [2.5 if isinstance(v, float) and math.isnan(v) else v for v in vs]
              for name, vs in data.values.items()}
    table = pa.table({name: pa.array(values[name], data.table.schema.field(name).type) for name in values})
    data = Data(table, values)
    return table, draw(exprs(data, max_leaves=5)), draw(st.integers(1, 40)), draw(st.integers(1, 12))


@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=nan_free_cases())
def test_nan_free_files_select_the_oracles_rows(tmp_path_factory, case):
    table, expr, block_rows, page_rows = case
    path = tmp_path_factory.mktemp("nanfree") / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=block_rows, page_rows=page_rows)
    expected = table.filter(pa.array(selection_mask(expr, table)))
    with rcfmt.open(path) as f:
        scan = scan_file(f, filter=expr, use_threads=False)
        if scan.nnf is not None:
            assert not any(isinstance(leaf, NanCheck) for leaf in leaves(scan.nnf))
        assert_same(scan.read(), expected)
        assert scan_file(f, filter=expr).count() == expected.num_rows
    assert_same(rcfmt.read_table(path, filter=expr), expected)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("nan")
    xs = [None, -0.0, 0.0, 1.5, 7.0, -math.inf, math.inf, 3.0] * 50
    clean, dirty = root / "clean.rcfmt", root / "dirty.rcfmt"
    rcfmt.write_table(pa.table({"x": pa.array(xs, pa.float64())}), clean, block_rows=100, page_rows=20)
    rcfmt.write_table(pa.table({"x": pa.array(xs[:-1] + [math.nan], pa.float64())}), dirty, block_rows=100,
                      page_rows=20)
    return clean, dirty


@pytest.mark.parametrize("expr, kept", [
    ((col("x") > 1.0) | col("x").is_nan(), "col('x') > 1.0"),  # Polars' and Spark's x > 1.0
    (~(col("x") < 5.0), "col('x') >= 5.0"),  # NOT of a float comparison
    ((col("x") >= 0.0) & ~col("x").is_nan(), "col('x') >= 0.0"),
    (col("x").isin([1.5, 3.0]) | col("x").is_nan(), "col('x').isin([1.5, 3.0])"),
])
def test_the_nan_check_beside_a_comparison_is_dropped_where_no_nan_is(files, expr, kept):
    clean, dirty = files
    with rcfmt.open(clean) as f:
        scan = scan_file(f, filter=expr)
        assert repr(scan.nnf) == kept
        got = scan.read()
        table = f.read()
    assert_same(got, table.filter(pa.array(selection_mask(expr, table))))
    with rcfmt.open(dirty) as f:  # NaN in the file: kept, and the NaN row is selected where it should be
        scan = scan_file(f, filter=expr)
        assert any(isinstance(x, NanCheck) for x in leaves(scan.nnf))
        table = f.read()
        assert_same(scan.read(), table.filter(pa.array(selection_mask(expr, table))))


def test_a_lone_nan_check_is_a_constant_with_nulls_kept_unknown(files):
    clean, _ = files
    with rcfmt.open(clean) as f:
        for expr, rows in [(col("x").is_nan(), 0), (~col("x").is_nan(), 350),
                           (col("x").is_nan() | col("x").is_null(), 50)]:
            scan = scan_file(f, filter=expr)
            assert [type(x) for x in leaves(scan.nnf) if isinstance(x, (NanCheck, Folded))] == [Folded]
            assert scan.read().num_rows == rows == scan_file(f, filter=expr).count()
