"""NaN literals through the other front ends: the CLI's ``--filter`` (the Spark SQL
translator, run as a user runs it: a fresh ``python -m rcfmt.cli``) selects the rows
DuckDB selects (Spark's float semantics: NaN equal to itself, above every number);
``scan_rcfmt`` returns the rows Polars' own filter returns, and what it pushes selects
them alone."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pyarrow as pa
import pytest

import rcfmt

X = [1.5, math.nan, None, 0.0, -0.0, 1e300, 2.0, -3.25, math.inf, -math.inf, math.nan, None, 7.0]


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    table = pa.table({"id": pa.array(range(len(X)), pa.int64()), "x": pa.array(X, pa.float64())})
    out = tmp_path_factory.mktemp("nan") / "x.rcfmt"
    rcfmt.write_table(table, out, block_rows=4, page_rows=2)
    return out, table


CLI_CASES = [
    ("x IN (1.5, 1e300, double('NaN'), 0)", "x IN (1.5, 1e300, 'NaN'::DOUBLE, 0)"),
    ("x NOT IN (-3.25, double('NaN'), -3.25)", "x NOT IN (-3.25, 'NaN'::DOUBLE, -3.25)"),
    ("NOT (x < double('NaN')) OR x IS NULL", "NOT (x < 'NaN'::DOUBLE) OR x IS NULL"),
    ("x > 2 AND x <> 'NaN'", "x > 2 AND x <> 'NaN'"),
]


@pytest.mark.parametrize("sql, duck_sql", CLI_CASES)
def test_cli_filter_selects_what_spark_semantics_select(path, sql, duck_sql):
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("sqlglot")
    file, table = path
    proc = subprocess.run([sys.executable, "-m", "rcfmt.cli", "cat", str(file), "--format", "json", "--columns", "id",
                           "--filter", sql], capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    got = sorted(json.loads(line)["id"] for line in proc.stdout.splitlines())
    con = duckdb.connect()
    con.register("t", table)
    want = sorted(r[0] for r in con.execute(f"SELECT id FROM t WHERE {duck_sql}").fetchall())
    assert got == want and want


def test_polars_gets_its_own_rows_for_nan_predicates(path):
    pl = pytest.importorskip("polars")
    from rcfmt.polars import scan_rcfmt, translate_predicate

    file, table = path
    frame = pl.from_arrow(table)
    x = pl.col("x")
    nan = float("nan")
    for predicate in [x.is_in([1.5, 1e300, nan, 0.0]), ~x.is_in([nan, 1e300, 0.0]), x == nan, x != nan, x < nan,
                      x >= nan, ~(x < nan), x.is_between(nan, nan), ~x.is_between(0.0, nan), x.is_nan(), ~x.is_nan(),
                      (x > 1.0) | x.is_null(), ~(x > 1.0)]:
        want = frame.filter(predicate)["id"].to_list()
        got = scan_rcfmt(str(file)).filter(predicate).collect()["id"].to_list()
        assert sorted(got) == sorted(want), predicate
        pushed = translate_predicate(predicate, table.schema)  # with Polars' NaN order (rcfmt.predicate.nan_order)
        if pushed is not None:
            assert sorted(rcfmt.read_table(file, columns=["id"], filter=pushed)["id"].to_pylist()) == sorted(want), \
                predicate
