"""File pruning from the stats index is sound: every file holding a row that matches a
random predicate is kept, and a scan returns exactly the brute-force result.

Random tables (every type, NULLs, NaN, -0.0, long common string prefixes) are cut into
files (some empty, some with equality or range bitmap indexes, whose distinct values
the index then knows), each under a Hive partition directory ``p=<int>`` or
``q=<string>``; the files are adopted into an index by an append (so the bounds go
through the index file), with string bounds truncated to 1..32 bytes.
"""
from __future__ import annotations

import os
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import not_leaves
import rcfmt
from oracle_filter import filter_table, selection_mask
from strategies import examples
from strategies_expr import Data, exprs, splits, tables

SETTINGS = settings(max_examples=examples(60), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def cases(draw):
    data = draw(tables(min_rows=0, max_rows=80, max_columns=3))
    n = data.table.num_rows
    units = draw(splits(n, max_units=6))
    kind = draw(st.sampled_from(["int", "string", None]))
    pvalues = [draw(st.sampled_from([-3, 0, 7, 2**40]) if kind == "int" else st.sampled_from(["a", "b", "a b", "x/y"]))
               for _ in units] if kind else None
    table = data.table
    values = dict(data.values)
    if kind:
        per_row = [v for (a, b), v in zip(units, pvalues) for _ in range(b - a)]
        if kind == "int":
            table = table.append_column(pa.field("p", pa.int64()), pa.array(per_row, pa.int64()))
            values["p"] = per_row
        else:
            table = table.append_column(pa.field("q", pa.string()), pa.array(per_row, pa.string()))
            values["q"] = [v.encode() for v in per_row]
    full = Data(table, values)
    expr = draw(exprs(full, max_leaves=5))
    truncate = draw(st.sampled_from([1, 2, 32]))
    block_rows = draw(st.integers(1, 30))
    # equality/range indexes make the files report their distinct values to the index
    kinds = {name: k for name in data.table.column_names
             if (k := draw(st.sampled_from(["equality", "range", None]))) is not None}
    return full, units, kind, pvalues, expr, truncate, (block_rows, kinds)


def _write_files(root, table, units, kind, pvalues, truncate, layout):
    block_rows, kinds = layout
    data_cols = [c for c in table.column_names if c not in ("p", "q")]
    for i, (a, b) in enumerate(units):
        d = root
        if kind:
            name = "p" if kind == "int" else "q"
            d = os.path.join(root, f"{name}={rcfmt.dataset.Partitioning((name,), (pa.string(),)).format_value(0, pvalues[i]) if kind == 'string' else pvalues[i]}")
        os.makedirs(d, exist_ok=True)
        rcfmt.write_table(table.select(data_cols).slice(a, b - a), os.path.join(d, f"f{i:03d}.rcfmt"),
                          block_rows=block_rows, stats_truncate=truncate, bitmap_indexes=kinds)


def _raw(column) -> pa.Array:
    """Floats and temporal values viewed as integers (NaN payloads and out-of-range
    timestamps compare bitwise)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    t = arr.type
    if pa.types.is_floating(t):
        return arr.view(pa.int32() if t == pa.float32() else pa.int64())
    if pa.types.is_timestamp(t):
        return arr.view(pa.int64())
    if pa.types.is_date32(t):
        return arr.view(pa.int32())
    return arr


@SETTINGS
@given(case=cases())
def test_file_pruning_keeps_every_matching_file(case):
    full, units, kind, pvalues, expr, truncate, block_rows = case
    with tempfile.TemporaryDirectory() as root:
        _write_files(root, full.table, units, kind, pvalues, truncate, block_rows)
        plain = rcfmt.dataset(root)
        assert plain.version is None and plain.num_files == len(units)
        # adopt the files into an index (an append of no rows); bounds now come from the index file
        empty = plain.schema.empty_table()
        ds = rcfmt.write_dataset(empty, root, stats_truncate=truncate)
        assert ds.version == 1 and ds.num_files == len(units)
        # the table as the dataset sees it (partition column typed as inferred)
        truth_table = full.table
        if kind:
            name = "p" if kind == "int" else "q"
            truth_table = truth_table.set_column(truth_table.schema.get_field_index(name), ds.schema.field(name),
                                                 truth_table.column(name).cast(ds.schema.field(name).type))
        for dataset in (plain, ds):
            keep = dataset.prune(expr)
            for f, kept in zip(dataset.files, keep):
                i = int(os.path.basename(f.relpath)[1:4])
                a, b = units[i]
                piece = truth_table.slice(a, b - a)
                if piece.num_rows and selection_mask(expr, piece).any():
                    assert kept, f"file {f.relpath} holds a match but was pruned by {expr!r}"
            # the scan returns exactly the matching rows, file by file
            scan = dataset.scan(filter=expr)
            got = scan.read()
            pieces = []
            for f in dataset.files:
                i = int(os.path.basename(f.relpath)[1:4])
                a, b = units[i]
                piece = truth_table.slice(a, b - a)
                pieces.append(piece.filter(pa.array(selection_mask(expr, piece))) if piece.num_rows else piece)
            expected = pa.concat_tables(pieces) if pieces else truth_table.slice(0, 0)
            expected = expected.select(got.column_names)
            assert got.num_rows == expected.num_rows
            for name in got.column_names:
                g, e = got.column(name), expected.column(name).cast(got.schema.field(name).type)
                assert _raw(g).equals(_raw(e)), name
            # block pruning at planning time (footers) keeps every matching row too
            kept, dropped, total = rcfmt.dataset.prune_blocks(dataset.get_fragments(expr), dataset.schema, expr,
                                                              partition_names=dataset.partition_by)
            assert total == sum(f.num_blocks for f in dataset.files if keep[[g.relpath for g in dataset.files].index(f.relpath)])
            refined = rcfmt.dataset.scan_fragments(kept, dataset.schema, None, expr,
                                                   partition_names=dataset.partition_by).read()
            assert refined.num_rows == expected.num_rows
            st_ = scan.stats
            assert st_.files_total == len(units)
            assert st_.files_pruned == int((~dataset.prune(expr)).sum())
            assert st_.rows_selected == expected.num_rows


# ---------------------------------------------------------------- NOT over every leaf, NULL rows
@pytest.fixture(scope="module", params=[None, "equality", "range"])
def null_files(request, tmp_path_factory):
    """One file per block of not_leaves.table() (NULLs only, NaNs only, mixed, ...), with
    or without bitmap indexes (whose distinct values the index then knows); the plain
    directory and the same files adopted into an index."""
    table = not_leaves.table()
    root = str(tmp_path_factory.mktemp(f"nulls-{request.param}"))
    kinds = {name: request.param for name in ("f", "i", "s", "d")} if request.param else None
    for i in range(table.num_rows // not_leaves.BLOCK):
        rcfmt.write_table(table.slice(i * not_leaves.BLOCK, not_leaves.BLOCK), os.path.join(root, f"f{i:03d}.rcfmt"),
                          block_rows=3, page_rows=2, stats_truncate=2, bitmap_indexes=kinds)
    plain = rcfmt.dataset(root)
    indexed = rcfmt.write_dataset(plain.schema.empty_table(), root, stats_truncate=2)
    return table, plain, indexed


@pytest.mark.parametrize("expr", not_leaves.exprs(), ids=repr)
def test_negated_leaves_keep_every_matching_file(null_files, expr):
    table, plain, indexed = null_files
    expected = filter_table(table, expr)
    for ds in (plain, indexed):
        keep = ds.prune(expr)
        for f, kept in zip(ds.files, keep):
            i = int(os.path.basename(f.relpath)[1:4])
            piece = table.slice(i * not_leaves.BLOCK, not_leaves.BLOCK)
            if selection_mask(expr, piece).any():
                assert kept, f"file {f.relpath} holds a match but was pruned by {expr!r}"
        got = ds.scan(filter=expr).read().sort_by("k")
        assert got.num_rows == expected.num_rows, expr
        for name in got.column_names:
            assert _raw(got.column(name)).equals(_raw(expected.column(name))), (name, expr)


def test_negated_leaves_prune_files_they_cannot_select(null_files):
    """Under SQL semantics a NULL-only file has no row for ``~is_nan``, a NaN-only file
    none either, and NOT IN with a None member selects no row anywhere."""
    _, plain, indexed = null_files
    f = rcfmt.col("f")
    for ds in (plain, indexed):
        assert ds.prune(~f.is_nan()).tolist() == [False, False, True, True, True, True]
        assert ds.prune(f.isin([float("nan")])).tolist() == [False, True, True, False, True, False]
        assert not ds.prune(~rcfmt.col("i").isin([1, None])).any()
        assert not ds.prune(~f.isin([0.0, None])).any()
