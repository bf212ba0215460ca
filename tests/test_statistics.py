"""Chunk and page statistics of strings from one pass over the pages
(rcfmt.schema.statistics.binary_chunk_and_page_stats) against computing each apart."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt.schema.arrow_io import fill_null_slots, from_arrow
from rcfmt.schema.statistics import binary_chunk_and_page_stats, compute_stats
from rcfmt.schema.types import logical_type_from_arrow
from strategies import examples

prefix = b"p" * 40
strings = st.one_of(st.binary(max_size=12), st.sampled_from([b"", b"\xff" * 33, prefix + b"\x00", prefix + b"\xff",
                                                              prefix, b"\xff" * 40 + b"a"]))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.one_of(st.none(), strings), min_size=1, max_size=60), st.data(),
       st.sampled_from([4, 8, 32]))
def test_chunk_bounds_from_pages_equal_the_chunks_own(items, data, truncate):
    arr = pa.array(items, pa.binary())
    lt = logical_type_from_arrow(arr.type)
    values, valid = from_arrow(arr, lt)
    values = fill_null_slots(values, valid)
    n = len(items)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=5)) if n > 1 else []))
    bounds = [0, *cuts, n]
    chunk, pages = binary_chunk_and_page_stats(values, valid, bounds, truncate)
    assert chunk == compute_stats(values, valid, lt, truncate)
    for (a, b), page in zip(zip(bounds[:-1], bounds[1:]), pages):
        assert page == compute_stats(values.slice(a, b), None if valid is None else valid[a:b], lt, truncate)


def test_pages_that_do_not_tile_the_chunk_are_left_to_the_caller():
    arr = pa.array([b"a", b"b", b"c"], pa.binary())
    values, valid = from_arrow(arr, logical_type_from_arrow(arr.type))
    assert binary_chunk_and_page_stats(values, valid, [0, 1, 1, 3], 8) is None  # an empty page
    assert binary_chunk_and_page_stats(values, valid, [0, 2], 8) is None  # rows left over
    assert np.all(binary_chunk_and_page_stats(values, valid, [0, 3], 8)[0].min == b"a")
