"""The native page-index consistency check against a plain-Python reference."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rcfmt._native.pageindex import entries_consistent
from rcfmt.format.layout import page_record
from strategies import examples

DTYPE = page_record(8)
U64 = 2**64 - 1


def reference(first, offset, length, count, rows, start, end) -> bool:
    expected = 0
    for f, o, ln, n in zip(first, offset, length, count):
        if f != expected or n == 0 or o < start or o > end or ln > end - o:
            return False
        expected = f + n
    return expected == rows


@st.composite
def page_indexes(draw):
    counts = draw(st.lists(st.integers(1, 50), min_size=0, max_size=12))
    first = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.uint64) if counts else np.empty(0, np.uint64)
    start = draw(st.integers(0, 1000))
    end = start + draw(st.integers(0, 1000))
    offsets = [draw(st.integers(start, end)) for _ in counts]
    lengths = [draw(st.integers(0, end - o)) for o in offsets]
    rec = np.zeros(len(counts), DTYPE)
    rec["first_row"], rec["row_count"], rec["offset"], rec["length"] = first, counts, offsets, lengths
    rows = int(sum(counts))
    # then break it, sometimes
    mutation = draw(st.sampled_from(["none", "first", "count", "offset", "length", "rows", "huge"]))
    if len(rec) and mutation != "none":
        i = draw(st.integers(0, len(rec) - 1))
        if mutation == "first":
            rec["first_row"][i] = draw(st.integers(0, U64))
        elif mutation == "count":
            rec["row_count"][i] = draw(st.integers(0, 2**32 - 1))
        elif mutation == "offset":
            rec["offset"][i] = draw(st.integers(0, U64))
        elif mutation == "length":
            rec["length"][i] = draw(st.integers(0, 2**32 - 1))
        elif mutation == "huge":
            rec["offset"][i], rec["length"][i] = U64, 2**32 - 1
    if mutation == "rows":
        rows = draw(st.integers(0, 2 * rows + 1))
    return rec, rows, start, end


@settings(max_examples=examples(300), deadline=None)
@given(page_indexes())
def test_matches_reference(case):
    rec, rows, start, end = case
    expected = reference(*(rec[k].astype(object) for k in ("first_row", "offset", "length", "row_count")),
                         rows, start, end)
    assert entries_consistent(rec.tobytes(), len(rec), DTYPE.itemsize, rows, start, end) == expected


def test_short_buffers_and_bad_sizes_are_inconsistent():
    rec = np.zeros(2, DTYPE)
    rec["row_count"] = 1
    rec["first_row"] = [0, 1]
    raw = rec.tobytes()
    assert entries_consistent(raw, 2, DTYPE.itemsize, 2, 0, 0)
    assert not entries_consistent(raw[:-1], 2, DTYPE.itemsize, 2, 0, 0)
    assert not entries_consistent(raw, 2, 16, 2, 0, 0)
    assert not entries_consistent(raw, 3, DTYPE.itemsize, 2, 0, 0)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=15), st.data())
def test_page_table_gives_the_records_of_the_pages_asked(counts, data):
    """``page_table`` (the executor's table of the pages a lookup or narrow window
    reads) against the records' fields read by numpy: offset, row count, length and
    first row of each page asked, in the order asked; a page past the index is refused."""
    from rcfmt._native.pageindex import page_table

    first = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    rec = np.zeros(len(counts), DTYPE)
    rec["first_row"], rec["row_count"] = first, counts
    rec["offset"] = np.arange(len(counts)) * 1000 + 7 + 2**40
    rec["length"] = np.arange(len(counts)) + 100
    pages = np.array(sorted(data.draw(st.sets(st.integers(0, len(counts) - 1)))), np.int64)
    got = page_table(np.frombuffer(rec, np.uint8), len(rec), DTYPE.itemsize, pages)
    want = np.array([rec["offset"][pages], rec["row_count"][pages], rec["length"][pages], first[pages]], np.int64)
    assert got.flags.c_contiguous and got.dtype == np.int64
    assert got.reshape(4, -1).tolist() == want.reshape(4, -1).tolist()
    for bad in (len(counts), -1):
        with pytest.raises(ValueError):
            page_table(np.frombuffer(rec, np.uint8), len(rec), DTYPE.itemsize, np.append(pages, bad).astype(np.int64))
