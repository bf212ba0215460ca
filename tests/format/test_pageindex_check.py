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


def reference(first, offset, length, count, nulls, nans, rows, start, end) -> bool:
    expected = 0
    for f, o, ln, n, z, q in zip(first, offset, length, count, nulls, nans):
        if f != expected or n == 0 or o < start or o > end or ln > end - o or z + q > n:
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
    for i, n in enumerate(counts):  # (NULLs and NaNs among a page's rows)
        rec["null_count"][i] = draw(st.integers(0, n))
        rec["nan_count"][i] = draw(st.integers(0, n - int(rec["null_count"][i])))
    rows = int(sum(counts))
    # then break it, sometimes
    mutation = draw(st.sampled_from(["none", "first", "count", "offset", "length", "rows", "huge", "nulls", "nans"]))
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
        elif mutation in ("nulls", "nans"):  # (more than the page's rows, or its NULLs and NaNs together)
            rec[f"{mutation[:-1]}_count"][i] = draw(st.integers(0, 2**32 - 1))
    if mutation == "rows":
        rows = draw(st.integers(0, 2 * rows + 1))
    return rec, rows, start, end


@settings(max_examples=examples(300), deadline=None)
@given(page_indexes())
def test_matches_reference(case):
    rec, rows, start, end = case
    expected = reference(*(rec[k].astype(object) for k in ("first_row", "offset", "length", "row_count",
                                                            "null_count", "nan_count")), rows, start, end)
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


def _records(counts, rng):
    first = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    rec = np.zeros(len(counts), DTYPE)
    rec["first_row"], rec["row_count"] = first, counts
    rec["length"] = rng.integers(1, 500, len(counts))
    return rec


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.lists(st.integers(1, 40), min_size=1, max_size=12), min_size=1, max_size=6), st.data())
def test_a_takes_page_tables_ranges_and_shifted_copies_agree_with_a_reference(columns, data):
    """``page_tables`` (one call for every column of a block) equals ``page_table`` per
    column; ``page_ranges`` (and ``merge_ranges``, given the same spans in any order) merges the pages' and the listing columns' dictionary pages'
    byte ranges as the two-step rule says (each column's ranges within ``gap``, then
    the columns' within ``cross_gap``), checked against a plain loop; ``shifted`` makes
    the offsets positions in a buffer and sums each column's bytes."""
    from rcfmt._native.pageindex import merge_ranges, page_ranges, page_table, page_tables, shifted

    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    offset, raws, pages, chunks = 1000, [], [], []
    for counts in columns:  # (chunks side by side in the file, each with or without a dictionary page)
        rec = _records(counts, rng)
        dictionary = int(rng.integers(0, 60)) if data.draw(st.booleans()) else 0
        gaps = rng.integers(0, 40, len(rec)) * data.draw(st.sampled_from([0, 1]))
        rec["offset"] = offset + dictionary + np.cumsum(np.concatenate(([0], rec["length"][:-1] + gaps[:-1])))
        chunks.append((offset, dictionary))
        offset = int(rec["offset"][-1] + rec["length"][-1]) + int(rng.integers(0, 50))
        raws.append(rec)
        pages.append(np.array(sorted(data.draw(st.sets(st.integers(0, len(rec) - 1)))), np.int64))
    order = data.draw(st.permutations(range(len(raws))))  # (a projection lists columns in any order)
    raws, pages, chunks = [raws[i] for i in order], [pages[i] for i in order], [chunks[i] for i in order]
    got = page_tables([np.frombuffer(r, np.uint8) for r in raws], np.array([len(r) for r in raws], np.int64),
                      np.full(len(raws), DTYPE.itemsize, np.int64), pages)
    for table, rec, p in zip(got, raws, pages):
        assert table.tolist() == page_table(np.frombuffer(rec, np.uint8), len(rec), DTYPE.itemsize, p).tolist()

    gap = data.draw(st.integers(0, 64))
    cross = data.draw(st.sampled_from([0, gap]))  # (as scans merge: columns apart locally, by the gap remotely)
    per_column = []  # the reference: each column's ranges merged within gap, then all within cross
    for table, (start, dictionary) in zip(got, chunks):
        spans = sorted(([(start, start + dictionary)] if dictionary and table.shape[1] else [])
                       + [(int(o), int(o + n)) for o, n in zip(table[0], table[2])])
        per_column += _coalesced(spans, gap)
    want = _coalesced(sorted(per_column), cross)
    found = page_ranges(got, np.array(chunks, np.int64).reshape(-1, 2), gap, cross)
    spans = [(int(o), int(o + n), k) for k, t in enumerate(got) for o, n in zip(t[0], t[2])]
    spans += [(start, start + d, k) for k, (t, (start, d)) in enumerate(zip(got, chunks)) if d and t.shape[1]]
    order = rng.permutation(len(spans))  # (merge_ranges takes the spans in any order)
    lo, hi, owner = (np.array([spans[i][j] for i in order], np.int64) for j in range(3))
    merged = merge_ranges(lo, hi, owner, gap, cross)
    if not want:
        assert found is None and merged is None
    else:
        assert list(zip(found[0].tolist(), found[1].tolist())) == want
        assert list(zip(merged[0].tolist(), merged[1].tolist())) == want

    base = data.draw(st.integers(0, 1000))
    before = [t.copy() for t in got]
    copies, stored = shifted(got, base)
    for copy, table in zip(copies, got):
        assert copy.flags.c_contiguous and copy[0].tolist() == (table[0] - base).tolist()
        assert copy[1:].tolist() == table[1:].tolist()
    assert stored.tolist() == [int(t[2].sum()) for t in got]
    assert all(np.array_equal(t, b) for t, b in zip(got, before))  # (the plan's tables are left as they were)
    with pytest.raises(ValueError):
        page_ranges(got, np.zeros((len(got) + 1, 2), np.int64), gap, cross)
    with pytest.raises(ValueError):
        page_tables([np.frombuffer(raws[0], np.uint8)], np.array([len(raws[0])], np.int64),
                    np.array([DTYPE.itemsize], np.int64), [np.array([len(raws[0])], np.int64)])


def _coalesced(spans, gap):
    out = []
    for lo, hi in spans:
        if out and lo - out[-1][1] <= gap:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out
