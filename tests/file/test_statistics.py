"""Chunk and page statistics of strings from one pass over the pages
(rcfmt.schema.statistics.binary_chunk_and_page_stats) against computing each apart."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt.schema.arrow_io import fill_null_slots, from_arrow
from rcfmt.schema.statistics import (DICTIONARY_STATS_MAX, binary_chunk_and_page_stats,
                                     binary_stats_from_dictionary, compute_stats)
from rcfmt.schema.types import logical_type_from_arrow
from strategies import examples

prefix = b"p" * 40
strings = st.one_of(st.binary(max_size=12), st.sampled_from([b"", b"\xff" * 33, prefix + b"\x00", prefix + b"\xff",
                                                              prefix, b"\xff" * 40 + b"a"]))


def _chunk_in_pages(items, data):
    """``(logical type, values with null slots filled, validity, page bounds)`` of a
    binary chunk of ``items`` cut into pages drawn from ``data``."""
    arr = pa.array(items, pa.binary())
    lt = logical_type_from_arrow(arr.type)
    values, valid = from_arrow(arr, lt)
    n = len(items)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=5)) if n > 1 else []))
    return lt, fill_null_slots(values, valid), valid, [0, *cuts, n]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.one_of(st.none(), strings), min_size=1, max_size=60), st.data(),
       st.sampled_from([4, 8, 32]))
def test_chunk_bounds_from_pages_equal_the_chunks_own(items, data, truncate):
    lt, values, valid, bounds = _chunk_in_pages(items, data)
    chunk, pages = binary_chunk_and_page_stats(values, valid, bounds, truncate)
    assert chunk == compute_stats(values, valid, lt, truncate)
    assert len(pages) == len(bounds) - 1
    for (a, b), page in zip(zip(bounds[:-1], bounds[1:]), _units(pages)):
        assert page == compute_stats(values.slice(a, b), None if valid is None else valid[a:b], lt, truncate)


def _units(pages) -> list:
    return [pages.unit(k) for k in range(len(pages))]


def test_pages_that_do_not_tile_the_chunk_are_left_to_the_caller():
    arr = pa.array([b"a", b"b", b"c"], pa.binary())
    values, valid = from_arrow(arr, logical_type_from_arrow(arr.type))
    assert binary_chunk_and_page_stats(values, valid, [0, 1, 1, 3], 8) is None  # an empty page
    assert binary_chunk_and_page_stats(values, valid, [0, 2], 8) is None  # rows left over
    assert np.all(binary_chunk_and_page_stats(values, valid, [0, 3], 8)[0].min == b"a")


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.one_of(st.none(), strings), min_size=1, max_size=60), st.data(),
       st.sampled_from([4, 8, 32]))
def test_string_statistics_from_the_writers_dictionary_equal_the_rows_own(items, data, truncate):
    """Chunk and page bounds from a dictionary's entries ranked once are those of the
    rows: NULLs (whatever their filled slots hold), all-null pages, long common
    prefixes, truncation."""
    from rcfmt.encodings.dictionary import build_dictionary

    lt, values, valid, bounds = _chunk_in_pages(items, data)
    chunk, pages = binary_stats_from_dictionary(build_dictionary(values, lt), valid, bounds, truncate)
    want_chunk, want_pages = binary_chunk_and_page_stats(values, valid, bounds, truncate)
    assert chunk == want_chunk and _units(pages) == _units(want_pages)


def test_statistics_from_a_large_dictionary_or_untiled_pages_are_left_to_the_rows():
    from rcfmt.encodings.dictionary import build_dictionary

    many = pa.array([str(i).encode() for i in range(DICTIONARY_STATS_MAX + 1)], pa.binary())
    values, valid = from_arrow(many, logical_type_from_arrow(many.type))
    assert binary_stats_from_dictionary(build_dictionary(values, logical_type_from_arrow(many.type)), valid,
                                        [0, len(many)], 8) is None
    few = pa.array([b"b", b"a", b"b"], pa.binary())
    values, valid = from_arrow(few, logical_type_from_arrow(few.type))
    dictionary = build_dictionary(values, logical_type_from_arrow(few.type))
    assert binary_stats_from_dictionary(dictionary, valid, [0, 1, 1, 3], 8) is None
    chunk, pages = binary_stats_from_dictionary(dictionary, valid, [0, 1, 3], 8)
    assert (chunk.min, chunk.max, pages.min[0], pages.min[1]) == (b"a", b"b", b"b", b"a")


_PAGE_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint64(), pa.float32(), pa.float64(),
               pa.date32(), pa.timestamp("ms"), pa.bool_(), pa.decimal128(18, 2), pa.decimal128(38, 0), pa.string()]


@settings(max_examples=examples(150), deadline=None)
@given(st.data())
def test_page_records_filled_from_arrays_equal_each_page_encoded_apart(data):
    """The writer's page statistics (compute_page_stats: one vectorized pass per chunk,
    the records filled by fill_slots without Python per page) equal, record for record,
    compute_stats of each page encoded by encode_slots: NULLs, NaN, -0.0, all-null
    pages, extremes and decimals past 64 bits included."""
    import strategies as S
    from rcfmt.format.layout import page_record
    from rcfmt.format.stats_slots import encode_slots, fill_slots, stat_width
    from rcfmt.schema.statistics import compute_page_stats

    t = data.draw(st.sampled_from(_PAGE_TYPES), label="type")
    n = data.draw(st.integers(1, 80), label="rows")
    arr = data.draw(S.arrays(t, n, nullable=True, sliced=False))
    lt = logical_type_from_arrow(t)
    values, valid = from_arrow(arr, lt)
    values = fill_null_slots(values, valid)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=6)) if n > 1 else []))
    bounds = [0, *cuts, n]
    width = stat_width(lt, 8)
    got = np.zeros(len(bounds) - 1, dtype=page_record(width))
    chunk = compute_stats(values, valid, lt, 8) if data.draw(st.booleans(), label="chunk known") else None
    stats = compute_page_stats(values, valid, lt, bounds, 8, chunk)
    fill_slots(got, stats, lt, width)
    want = np.zeros(len(bounds) - 1, dtype=page_record(width))
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        page = compute_stats(values.slice(a, b), None if valid is None else valid[a:b], lt, 8)
        assert (int(stats.null_count[k]), int(stats.nan_count[k])) == (page.null_count, page.nan_count)
        for key, value in encode_slots(page, lt, width).items():
            want[k][key] = value
    assert got.tobytes() == want.tobytes()
