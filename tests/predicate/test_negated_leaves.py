"""NOT over every kind of leaf, on columns with NULL rows, through the scan: plain
chunks, dictionary-encoded chunks and chunks with bitmap indexes of every kind, small
blocks and pages so stats, page-index and index pruning all take part. The rows (all
their values) and counts are the independent oracle's (tests/oracle_filter.py): a row
is selected only where the predicate is TRUE, so ``~leaf`` never selects a row where
the leaf is NULL (``~is_nan``, NOT IN with a None member, ``~list_contains`` ...)."""
from __future__ import annotations

import pyarrow as pa
import pytest

import not_leaves
import rcfmt
from oracle_filter import filter_table
from rcfmt.index.bitmap.build import supported_kinds
from rcfmt.schema.types import logical_type_from_arrow
from scan.test_scan_soundness import assert_same

FLAT = ["f", "i", "s", "d"]
LAYOUT = dict(block_rows=not_leaves.BLOCK, page_rows=3, stats_truncate=2)


def _kinds(table, kind):
    """Index ``kind`` on every flat column that supports it (equality otherwise)."""
    out = {}
    for name in FLAT:
        ok = supported_kinds(logical_type_from_arrow(table.schema.field(name).type))
        out[name] = kind if kind in ok else "equality"
    return out


VARIANTS = {
    "plain": dict(encoding={name: "plain" for name in FLAT}, bitmap_indexes=None),
    "dictionary": dict(encoding={name: "dictionary" for name in FLAT}, bitmap_indexes=None),
    "equality-index": dict(bitmap_indexes="equality"),
    "range-index": dict(bitmap_indexes="range"),
    "bitsliced-index": dict(bitmap_indexes="bitsliced"),
}


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def written(request, tmp_path_factory):
    table = not_leaves.table()
    options = dict(VARIANTS[request.param])
    if isinstance(options.get("bitmap_indexes"), str):
        options["bitmap_indexes"] = _kinds(table, options["bitmap_indexes"])
    path = tmp_path_factory.mktemp("not") / f"{request.param}.rcfmt"
    rcfmt.write_table(table, path, **LAYOUT, **options)
    if options.get("bitmap_indexes"):
        with rcfmt.open(path) as f:
            assert {f.footer.columns[c].name for c in f.bitmap_columns} == set(FLAT)
    return table, path


@pytest.mark.parametrize("expr", not_leaves.exprs(), ids=repr)
def test_negated_leaves_select_the_oracles_rows(written, expr):
    table, path = written
    expected = filter_table(table, expr)
    got = rcfmt.read_table(path, filter=expr)
    assert_same(got, expected)
    with rcfmt.open(path) as f:
        assert f.scan([], filter=expr).count() == expected.num_rows
        assert_same(f.scan(["k", "l"], filter=expr, use_bitmap_index=False).read(), expected.select(["k", "l"]))
        batches = list(f.iter_batches(batch_size=5, filter=expr))
        streamed = pa.Table.from_batches(batches, schema=table.schema) if batches else table.slice(0, 0)
        assert_same(streamed, expected)


@pytest.mark.parametrize("expr", [
    ~rcfmt.col("f").is_nan() & ~rcfmt.col("i").isin([1, None]),
    ~(rcfmt.col("f").is_nan() | rcfmt.col("s").startswith("a")),
    ~rcfmt.col("f").is_nan() | ~rcfmt.list_contains("l", 1),
    ~(rcfmt.col("i").between(1, 3) & rcfmt.col("d").is_valid()),
    ~rcfmt.col("f").isin([float("nan"), None]) | (rcfmt.col("k") < 3),
], ids=repr)
def test_negations_combined(written, expr):
    table, path = written
    assert_same(rcfmt.read_table(path, filter=expr), filter_table(table, expr))
