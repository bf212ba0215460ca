"""Soundness of the skipping reader against a brute-force filter of the same data.

A pruning bug silently loses rows, so every stage is checked on random tables (all
types, NULLs, NaN, -0.0, duplicates, sorted and unsorted, strings with long common
prefixes, tiny pages and blocks) and random predicate trees:

- block stage: every block holding a matching row is kept (stats and bloom filters);
- page stage: the row ranges of each kept block contain every matching row;
- selection: the result equals ``table.filter(brute-force mask)`` exactly, in order,
  through every entry point (read_table, open().read, iter_batches).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
from oracle_filter import selection_mask
from rcfmt.scan.scanner import scan_file
from strategies import examples
from strategies_expr import exprs, tables

SETTINGS = settings(max_examples=examples(100), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


@st.composite
def cases(draw):
    data = draw(tables(min_rows=0, max_rows=120, max_columns=3))
    expr = draw(exprs(data, max_leaves=5))
    names = data.table.column_names
    options = dict(
        block_rows=draw(st.integers(1, 60)),
        page_size=draw(st.sampled_from([64, 128, 4096])),
        page_rows=draw(st.integers(1, 25)),
        compression=draw(st.sampled_from(["none", "zstd", "lz4", "auto"])),
        stats_truncate=draw(st.sampled_from([1, 3, 32])),
        dictionary=draw(st.booleans()),
        bloom_filter_columns=draw(st.sampled_from(["auto", None, names])),
    )
    if draw(st.booleans()):  # sorted layouts make pruning effective
        table = data.table.sort_by([(names[0], "ascending")])
    else:
        table = data.table
    return table, expr, options


def _matches(table: pa.Table, expr) -> np.ndarray:
    return selection_mask(expr, table)


def _bitwise(column) -> pa.ChunkedArray:
    """Floats viewed as integers, so NaN compares equal to itself (payload included)."""
    column = column if isinstance(column, pa.ChunkedArray) else pa.chunked_array([column])
    if pa.types.is_floating(column.type):
        return column.combine_chunks().view(pa.int32() if column.type == pa.float32() else pa.int64())
    return column.combine_chunks()


def assert_same(got: pa.Table, expected: pa.Table) -> None:
    assert got.schema.remove_metadata() == expected.schema.remove_metadata()
    assert got.num_rows == expected.num_rows
    for name in expected.column_names:
        assert _bitwise(got.column(name)).equals(_bitwise(expected.column(name))), name


@SETTINGS
@given(case=cases())
def test_every_stage_keeps_all_matches(tmp_path_factory, case):
    table, expr, options = case
    path = tmp_path_factory.mktemp("scan") / "t.rcfmt"
    rcfmt.write_table(table, path, **options)
    truth = _matches(table, expr)
    expected = table.filter(pa.array(truth))

    with rcfmt.open(path) as f:
        scan = scan_file(f, filter=expr, use_threads=False)
        # block stage (stats + bloom): a superset of the blocks with matches
        first = f.footer.blocks["first_row"].astype(np.int64)
        rows = f.footer.blocks["row_count"].astype(np.int64)
        for b in range(f.num_blocks):
            block_truth = truth[first[b] : first[b] + rows[b]]
            if block_truth.any():
                assert b in scan.blocks, f"block {b} with matches was pruned"
                # page stage: row ranges hold every matching row of the block
                ranges = scan.row_ranges(b, {})
                mask = ranges.to_mask(int(rows[b]))
                assert not (block_truth & ~mask).any(), f"page pruning lost rows in block {b}"
        got = scan.read()
        assert_same(got, expected)
        assert scan.stats.rows_selected == expected.num_rows

        # other entry points give the same rows
        batches = list(f.iter_batches(batch_size=7, filter=expr))
        streamed = pa.Table.from_batches(batches, schema=table.schema) if batches else table.slice(0, 0)
        assert_same(streamed, expected)
        assert all(b.num_rows <= 7 for b in batches)
    assert_same(rcfmt.read_table(path, filter=expr), expected)


@SETTINGS
@given(case=cases(), data=st.data())
def test_projection_and_dictionary_output(tmp_path_factory, case, data):
    table, expr, options = case
    path = tmp_path_factory.mktemp("proj") / "t.rcfmt"
    rcfmt.write_table(table, path, **options)
    names = table.column_names
    columns = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    as_dict = data.draw(st.lists(st.sampled_from(columns), unique=True)) if columns else []
    expected = table.filter(pa.array(_matches(table, expr))).select(columns)
    got = rcfmt.read_table(path, columns=columns, filter=expr, read_dictionary=as_dict)
    assert got.num_rows == expected.num_rows
    assert got.column_names == columns
    for name in columns:
        column = got.column(name)
        if name in as_dict:
            assert pa.types.is_dictionary(column.type)
            column = column.cast(column.type.value_type)
        assert _bitwise(column).equals(_bitwise(expected.column(name))), name


def test_point_lookup_reads_only_matching_pages(tmp_path):
    n = 100_000
    table = pa.table({"k": np.arange(n, dtype=np.int64), "v": np.arange(n, dtype=np.float64) * 0.5,
                      "s": pa.array([f"row-{i:06d}" for i in range(n)])})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=n, page_rows=1000)
    with rcfmt.open(path) as f:
        scan = scan_file(f, filter=rcfmt.col("k") == 54_321)
        got = scan.read()
        assert got.to_pylist() == [{"k": 54_321, "v": 54_321 * 0.5, "s": "row-054321"}]
        s = scan.stats
        assert s.blocks_total == 1 and s.rows_selected == 1
        assert s.pages_read <= 3 * 2, s  # one page per column (two if a boundary is near)
        assert s.rows_decoded <= 3 * 2 * 1000, s
        assert s.bytes_read < f.size / 20, s


def test_block_pruning_by_stats_and_bloom(tmp_path):
    n = 40_000
    rng = np.random.default_rng(7)
    # unsorted, unique (drawn without the 8 GB permutation of 10**9): min/max cannot prune
    keys = rng.choice(10**9, size=n, replace=False).astype(np.int64)
    table = pa.table({"sorted": np.arange(n), "key": keys})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=4000, bloom_filter_columns=["key"])
    with rcfmt.open(path) as f:
        scan = scan_file(f, filter=rcfmt.col("sorted") < 5000)
        assert scan.read().num_rows == 5000
        assert scan.stats.blocks_pruned_stats == 8

        probe = int(keys[12_345])
        scan = scan_file(f, filter=rcfmt.col("key") == probe)
        assert scan.read().column("sorted").to_pylist() == [12_345]
        assert scan.stats.blocks_pruned_bloom >= 8  # 9 blocks without the key; fpp 1%

        scan = scan_file(f, filter=rcfmt.col("key").isin([probe, int(keys[0])]))
        assert sorted(scan.read().column("sorted").to_pylist()) == [0, 12_345]
        assert scan.stats.blocks_pruned_bloom >= 7


def test_dictionary_predicates_use_codes_and_dictionary_output(tmp_path):
    n = 50_000
    words = np.array(["alpha", "beta", "gamma", "delta", None], dtype=object)
    table = pa.table({"w": pa.array(words[np.arange(n) % 5].tolist()), "i": np.arange(n)})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=10_000)
    with rcfmt.open(path) as f:
        assert set(f.footer.chunks[0]["encoding"]) == {1}  # DICTIONARY
        got = f.read(filter=rcfmt.col("w").startswith("ga") | rcfmt.col("w").is_null(), read_dictionary=["w"])
        assert pa.types.is_dictionary(got.column("w").type)
        assert got.num_rows == 20_000
        assert set(got.column("w").cast(pa.string()).to_pylist()) == {"gamma", None}


def test_filter_errors(tmp_path):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"a": [1, 2, 3]}), path)
    with pytest.raises(rcfmt.SchemaError, match="nope"):
        rcfmt.read_table(path, filter=rcfmt.col("nope") == 1)
    with pytest.raises(rcfmt.FilterError):
        rcfmt.read_table(path, filter=rcfmt.col("a") == "x")
    with pytest.raises(rcfmt.FilterError):
        rcfmt.read_table(path, filter=[("a", "~", 1)])
    assert rcfmt.read_table(path, filter=[("a", ">", 1)]).column("a").to_pylist() == [2, 3]
    assert rcfmt.read_table(path, filter=[[("a", "<", 2)], [("a", "==", 3)]]).column("a").to_pylist() == [1, 3]


def test_in_list_on_decimal_bounds_of_two_widths(tmp_path):
    """Decimal block bounds are int64 where every min fits and Python ints where a max
    does not: an IN list that tests both against its members must not overflow."""
    import decimal

    big = decimal.Decimal("9999999999999999999999999999.9999999999")
    table = pa.table({"c0": pa.array([decimal.Decimal(0)] * 5 + [big], pa.decimal128(38, 10))})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=2, page_rows=1)
    expr = (rcfmt.col("c0") == decimal.Decimal(0)) & ~rcfmt.col("c0").isin([-big])
    assert rcfmt.read_table(path, filter=expr).num_rows == 5
    assert rcfmt.read_table(path, filter=rcfmt.col("c0").isin([big, decimal.Decimal(0)])).num_rows == 6
