"""The native page-bound tests (``index.page.interval_page_mask``: ``interval_pages``
for numbers, ``bytes_pages`` for strings and binaries) against the Python path that
reads the same page-index records as Python values (``leaf_may_match`` on
``page_stats``): they keep exactly the same pages, truncated string bounds, NULL-only
pages and long common prefixes included; and a page they drop holds no matching value
(checked against the values themselves with pyarrow.compute)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings, strategies as st

import rcfmt
from rcfmt.index.page import interval_page_mask, page_interval_kind
from rcfmt.predicate.bind import bind
from rcfmt.predicate.intervals import Interval
from rcfmt.predicate.nnf import to_nnf
from rcfmt.predicate.prune import leaf_may_match
from strategies import examples

PREFIX = "common-prefix-" * 3
texts = st.one_of(st.sampled_from(["", "a", "ab", "b", "\xff", PREFIX, PREFIX + "a", PREFIX + "b"]),
                  st.text(alphabet="ab\x00\xff\u00e9", max_size=6).map(lambda s: PREFIX[: len(s) * 7] + s))
OPS = ["==", "<", "<=", ">", ">="]


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.none() | texts, min_size=1, max_size=60), st.integers(1, 7), st.integers(1, 24),
       st.lists(st.tuples(st.sampled_from(OPS), texts), min_size=1, max_size=2), st.booleans())
def test_string_page_bounds_match_the_python_path(tmp_path_factory, values, page_rows, truncate, comparisons, binary):
    typ = pa.binary() if binary else pa.string()
    arr = pa.array([None if v is None else (v.encode() if binary else v) for v in values], typ)
    path = tmp_path_factory.mktemp("pages") / "t.rcfmt"
    rcfmt.write_table(pa.table({"s": arr}), path, page_rows=page_rows, stats_truncate=truncate,
                      dictionary=False, bloom_filter_columns=None, bitmap_indexes=None)
    with rcfmt.open(path) as f:
        entries = f.page_index(0, 0)
        stats = f.page_stats(0, 0, entries)
        interval, expr, kept_py = Interval(), None, np.ones(len(entries), bool)
        for op, text in comparisons:
            literal = text.encode() if binary else text
            term = {"==": rcfmt.col("s") == literal, "<": rcfmt.col("s") < literal,
                    "<=": rcfmt.col("s") <= literal, ">": rcfmt.col("s") > literal,
                    ">=": rcfmt.col("s") >= literal}[op]
            leaf = to_nnf(bind(term, f.bind_schema))
            assert page_interval_kind(leaf) is not None
            interval.add(leaf.op, leaf.value)
            kept_py &= leaf_may_match(leaf, stats)
            expr = term if expr is None else expr & term
        kept = interval_page_mask(entries, page_interval_kind(leaf), interval)
        assert kept.tolist() == kept_py.tolist()
        # a page dropped holds no row the comparisons select
        match = pc.fill_null(pc.and_kleene(*[_cmp(arr, op, t, binary) for op, t in comparisons])
                             if len(comparisons) > 1 else _cmp(arr, *comparisons[0], binary), False)
        for first, count, keep in zip(entries["first_row"], entries["row_count"], kept):
            if not keep:
                assert not pc.any(match.slice(int(first), int(count))).as_py()


def _cmp(arr, op, text, binary):
    literal = pa.scalar(text.encode() if binary else text, arr.type)
    return {"==": pc.equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}[op](arr, literal)


def test_a_float_and_an_int_interval_agree_with_the_python_path(tmp_path):
    """The numeric kernel through the same helper (a regression guard for the refactor)."""
    t = pa.table({"i": pa.array(np.arange(100) * 3 - 50), "x": pa.array(np.linspace(-1, 1, 100))})
    rcfmt.write_table(t, tmp_path / "n.rcfmt", page_rows=7, dictionary=False)
    with rcfmt.open(tmp_path / "n.rcfmt") as f:
        for col, (lo, hi) in ((0, (10, 40)), (1, (-0.2, 0.3))):
            entries, stats = f.page_index(0, col), f.page_stats(0, col)
            name = t.column_names[col]
            leaves = [to_nnf(bind(rcfmt.col(name) >= lo, f.bind_schema)), to_nnf(bind(rcfmt.col(name) < hi, f.bind_schema))]
            interval = Interval()
            for leaf in leaves:
                interval.add(leaf.op, leaf.value)
            want = leaf_may_match(leaves[0], stats) & leaf_may_match(leaves[1], stats)
            got = interval_page_mask(entries, page_interval_kind(leaves[0]), interval)
            assert got.tolist() == want.tolist() and 0 < got.sum() < len(got)


def test_forged_string_bounds_longer_than_their_slot_are_unknown_bounds():
    """A bound length past the slot (no writer makes one) leaves the page's bounds
    unknown: the page may match, as the Python path decides (``stats_arrays``); a page
    whose values are all NULL may not."""
    from rcfmt._native.pageindex import bytes_pages
    from rcfmt.format.layout import page_record

    width = 4
    rec = np.zeros(4, page_record(width))
    rec["row_count"] = 10
    rec["stats_flags"] = 1
    rec["min"] = np.frombuffer(b"zzzz" * 4, f"V{width}")
    rec["max"] = np.frombuffer(b"zzzz" * 4, f"V{width}")
    rec["min_len"], rec["max_len"] = width, width
    rec["min_len"][1] = width + 1  # forged: a min longer than its slot
    rec["max_len"][2] = 255  # forged: a max longer than its slot
    rec["null_count"][3] = 10  # all NULL
    out = np.empty(4, np.uint8)
    lo = np.frombuffer(b"a", np.uint8)
    bytes_pages(np.frombuffer(rec, np.uint8), 4, rec.dtype.itemsize, width, lo, 2, lo, 2, out)  # x == b"a"
    assert out.tolist() == [0, 1, 1, 0]
