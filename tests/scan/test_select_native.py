"""The native selection kernels (rcfmt._native.select) against brute force."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt._native import select as _select
from rcfmt._native.select import codes_mask, count_runs, mask_runs
from strategies import examples


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(0, 40), st.lists(st.integers(0, 50), max_size=300), st.data())
def test_codes_mask_matches_numpy(size, raw_codes, data):
    table = np.array(data.draw(st.lists(st.booleans(), min_size=size, max_size=size)), bool)
    codes = np.array(raw_codes, np.uint32)
    valid = np.array(data.draw(st.lists(st.booleans(), min_size=len(codes), max_size=len(codes))), bool)
    null_value = data.draw(st.booleans())
    for v in (None, valid):
        out = np.full(len(codes), 7, np.uint8)
        bad = codes_mask(table.view(np.uint8), codes, None if v is None else v.view(np.uint8), null_value, out)
        live = np.ones(len(codes), bool) if v is None else v
        outside = np.flatnonzero(live & (codes >= size))
        if len(outside):  # the first valid row whose code is outside the table
            assert bad == outside[0]
            continue
        assert bad == -1
        expected = np.where(live, table[np.minimum(codes, max(size - 1, 0))] if size else False, null_value)
        np.testing.assert_array_equal(out.view(bool), expected)


def test_codes_mask_refuses_short_outputs():
    with pytest.raises(ValueError):
        codes_mask(np.ones(2, np.uint8), np.zeros(3, np.uint32), None, False, np.empty(2, np.uint8))


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 40)), max_size=30), st.integers(0, 7))
def test_mask_runs_match_brute_force(pieces, offset):
    """Runs of True (any length, across the 8-byte steps, at either end), also in a
    buffer that starts off an 8-byte boundary."""
    mask = np.array([v for v, k in pieces for _ in range(k)], bool)
    starts, ends = [], []
    for i, v in enumerate(mask):
        if v and (i == 0 or not mask[i - 1]):
            starts.append(i)
        if v and (i == len(mask) - 1 or not mask[i + 1]):
            ends.append(i + 1)
    padded = np.zeros(len(mask) + offset, bool)
    padded[offset:] = mask
    view = padded[offset:].view(np.uint8)
    assert count_runs(view) == len(starts)
    got_starts, got_ends = mask_runs(view)
    assert got_starts.dtype == got_ends.dtype == np.int64
    assert got_starts.tolist() == starts and got_ends.tolist() == ends


def test_sparse_positions_refuses_rows_outside_the_pages():
    from rcfmt._native.select import sparse_positions

    first, counts = np.array([0, 4, 4], np.int64), np.array([4, 0, 3], np.int64)
    pages, pos = sparse_positions(np.array([1, 4, 6], np.int64), first, counts)
    assert pages.tolist() == [0, 2] and pos.tolist() == [1, 4, 6]
    for rows in ([7], [-1], [5, 1]):
        with pytest.raises(ValueError):
            sparse_positions(np.array(rows, np.int64), first, counts)


def test_mask_runs_treat_any_nonzero_byte_as_true():
    """A bool view of arbitrary bytes (numpy allows it) counts as numpy's truth: no run
    is miscounted, so the fill never writes past the arrays it sized."""
    raw = np.array([0, 2, 255, 0, 4, 0, 0, 1, 1, 9, 0, 0, 3], np.uint8)
    for n in range(len(raw) + 1):
        b = raw[:n]
        truth = b != 0
        edges = np.diff(truth.view(np.int8), prepend=np.int8(0), append=np.int8(0))
        starts, ends = mask_runs(b)
        assert count_runs(b) == len(starts)
        assert starts.tolist() == np.flatnonzero(edges == 1).tolist()
        assert ends.tolist() == np.flatnonzero(edges == -1).tolist()


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(["i1", "u2", "i4", "f8", "i8", "V16"]), st.integers(1, 50), st.data())
def test_take_matches_numpy_and_refuses_indices_outside(dtype, size, data):
    values = np.frombuffer(np.random.default_rng(size).bytes(size * np.dtype(dtype).itemsize), dtype)
    kind = data.draw(st.sampled_from([np.uint32, np.int64]))
    idx = np.array(data.draw(st.lists(st.integers(0, size - 1), max_size=200)), dtype=kind)
    out = _select.take(values, idx, np.empty(len(idx), values.dtype))
    assert out.tobytes() == values[idx.astype(np.int64)].tobytes()
    bad = np.append(idx, size if kind == np.uint32 else data.draw(st.sampled_from([size, -1]))).astype(kind)
    with pytest.raises(IndexError):
        _select.take(values, bad, np.empty(len(bad), values.dtype))
    with pytest.raises(ValueError):
        _select.take(values, idx, np.empty(max(len(idx) - 1, 0) if len(idx) else 0, "V3"))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(0, 3), max_size=700), st.sampled_from([0, 1, 2, 7, 8, 9]))
def test_mask_rows_is_flatnonzero(raw, offset):
    """Any nonzero byte counts (a bool view of other bytes), at every alignment and length."""
    buf = np.zeros(len(raw) + offset, np.uint8)
    buf[offset:] = raw
    mask = buf[offset:]
    got = _select.mask_rows(mask)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.flatnonzero(mask))


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(0, 300), st.data())
def test_ranges_mask_matches_numpy(n, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=20)))
    starts, ends = np.array(cuts[0::2][: len(cuts) // 2], np.int64), np.array(cuts[1::2], np.int64)
    expected = np.zeros(n, bool)
    for s, e in zip(starts, ends):
        expected[s:e] = True
    np.testing.assert_array_equal(_select.ranges_mask(starts, ends, n), expected)
    if n:
        with pytest.raises(ValueError, match="outside"):
            _select.ranges_mask(np.array([0], np.int64), np.array([n + 1], np.int64), n)
        with pytest.raises(ValueError, match="outside"):
            _select.ranges_mask(np.array([1], np.int64), np.array([0], np.int64), n)


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(0, 300), st.data())
def test_scatter_ranges_lays_a_mask_over_the_ranges_rows(n, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=20)))
    starts, ends = np.array(cuts[0::2][: len(cuts) // 2], np.int64), np.array(cuts[1::2], np.int64)
    rows = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends)] + [np.zeros(0, np.int64)])
    values = np.array(data.draw(st.lists(st.integers(0, 2), min_size=len(rows), max_size=len(rows))), np.uint8)
    expected = np.zeros(n, bool)
    expected[rows] = values != 0
    np.testing.assert_array_equal(_select.scatter_ranges(values, starts, ends, n), expected)
    with pytest.raises(ValueError, match="rows for"):
        _select.scatter_ranges(np.zeros(len(rows) + 1, np.uint8), starts, ends, n)
    if len(starts) > 1 and starts[1] > ends[0]:
        with pytest.raises(ValueError, match="out of order"):
            _select.scatter_ranges(values, starts[::-1].copy(), ends[::-1].copy(), n)


_MEMBER_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float64]


@pytest.mark.parametrize("dtype", _MEMBER_DTYPES, ids=lambda t: np.dtype(t).name)
@settings(max_examples=examples(60), deadline=None)
@given(data=st.data())
def test_member_mask_is_isin(dtype, data):
    """member_mask is numpy's isin (negated or not, written or ANDed), for sets under
    and over the linear-scan limit, with NaN values and -0.0 / 0.0 on doubles."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        elems = st.sampled_from([0.0, -0.0, 1.5, -7.0, np.inf, -np.inf, np.nan, 3.0, 1e300])
        member = st.sampled_from([0.0, -0.0, 1.5, -7.0, np.inf, 3.0, 2.0])
    else:
        info = np.iinfo(dtype)
        small = st.integers(max(int(info.min), -40), min(int(info.max), 40))
        elems = small | st.sampled_from([int(info.min), int(info.max)])
        member = elems
    values = np.array(data.draw(st.lists(elems, max_size=300)), dtype)
    members = np.array(sorted(set(data.draw(st.lists(member, max_size=40)))), dtype)
    if dtype.kind == "f":  # (-0.0 and 0.0 are one member)
        members = np.unique(members)
    negate, and_into = data.draw(st.booleans()), data.draw(st.booleans())
    before = np.array(data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values))), bool)
    out = before.view(np.uint8).copy()
    _select.member_mask(values, members, negate, out, and_into)
    want = np.isin(values, members) != negate
    if and_into:
        want &= before
    assert (out.view(bool) == want).all()


def test_member_mask_refuses_unsorted_or_mismatched_sets():
    out = np.zeros(3, np.uint8)
    with pytest.raises(ValueError, match="sorted and distinct"):
        _select.member_mask(np.arange(3), np.array([2, 1]), False, out, False)
    with pytest.raises(ValueError, match="one numeric dtype"):
        _select.member_mask(np.arange(3), np.array([1], np.int32), False, out, False)
    with pytest.raises(ValueError, match="one byte per value"):
        _select.member_mask(np.arange(4), np.array([1]), False, out, False)


@pytest.mark.parametrize("dtype", _MEMBER_DTYPES[:8], ids=lambda t: np.dtype(t).name)
def test_member_sets_as_bit_tables_and_searched_agree(dtype):
    """Integer sets of more than 16 members over a narrow span go through a bit table
    (its ends, and values just outside them, included), wide ones through a search:
    both are isin."""
    dtype = np.dtype(dtype)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.integers(int(info.min), int(info.max), 5000, dtype=dtype, endpoint=True),
                             np.array([info.min, info.max, 0, 1], dtype),
                             np.arange(-30, 30).clip(int(info.min), int(info.max)).astype(dtype)])
    low = 0 if dtype.kind == "u" else -20
    narrow = np.unique(np.concatenate([rng.integers(low, low + 40, 30), [low, low + 45]]).astype(dtype))
    wide = np.unique(np.concatenate([values[:40], np.array([info.min, info.max], dtype)]))
    assert _select.member_bits(narrow) is not None and len(narrow) > 16
    assert len(wide) > 16 and (_select.member_bits(wide) is None) == (dtype.itemsize > 2)
    for members in (narrow, wide):
        for negate in (False, True):
            out = np.zeros(len(values), np.uint8)
            _select.member_mask(values, members, negate, out, False)
            assert (out.view(bool) == (np.isin(values, members) != negate)).all()


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=20))
def test_ranges_rows_lists_each_ranges_rows(pairs):
    starts = np.array([min(a, b) for a, b in pairs], np.int64)
    ends = np.array([max(a, b) for a, b in pairs], np.int64)
    want = [r for a, b in zip(starts.tolist(), ends.tolist()) for r in range(a, b)]
    got = _select.ranges_rows(starts, ends)
    assert got.dtype == np.int64 and got.tolist() == want
    with pytest.raises(ValueError, match="ends before it starts"):
        _select.ranges_rows(np.array([3], np.int64), np.array([2], np.int64))


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.floats(width=32), min_size=1, max_size=40), st.floats(allow_nan=False),
       st.floats(allow_nan=False), st.sampled_from([0, 1, 2]), st.sampled_from([0, 1, 2]))
def test_float32_intervals_take_any_double_bound(values, lo, hi, lo_kind, hi_kind):
    """float32 values against double bounds float32 may not hold (0.1, 1e300): the rows
    an exact comparison in double keeps, NaN in no interval."""
    x = np.array(values, np.float32)
    out = np.zeros(len(x), np.uint8)
    _select.range_mask(x, lo, lo_kind, hi, hi_kind, None, out)
    exact = [v == v and (not lo_kind or (v > lo if lo_kind == 1 else v >= lo))
             and (not hi_kind or (v < hi if hi_kind == 1 else v <= hi)) for v in x.astype(np.float64).tolist()]
    assert out.view(bool).tolist() == exact


@settings(max_examples=examples(400), deadline=None)
@given(st.sampled_from([np.int8, np.uint8, np.int64, np.uint64]),
       st.one_of(st.integers(-300, 300), st.floats(-300, 300), st.sampled_from([float("inf"), float("-inf"), 2.5, -2.5])),
       st.one_of(st.integers(-300, 300), st.floats(-300, 300), st.sampled_from([float("inf"), float("-inf"), 2.5, -2.5])),
       st.sampled_from([0, 1, 2]), st.sampled_from([0, 1, 2]))
def test_integer_intervals_take_non_integer_bounds(dtype, lo, hi, lo_kind, hi_kind):
    """An integer interval from any numeric bound (2.5, -inf, beyond the type): exactly
    the integers an exact comparison keeps, clamped to the type."""
    info = np.iinfo(dtype)
    got = _select.inclusive_bounds(np.dtype(dtype), lo, lo_kind, hi, hi_kind)
    for x in list(range(-310, 311)) + [int(info.min), int(info.max)]:
        if not info.min <= x <= info.max:
            continue
        inside = (not lo_kind or (x > lo if lo_kind == 1 else x >= lo)) and \
                 (not hi_kind or (x < hi if hi_kind == 1 else x <= hi))
        assert inside == (got is not None and got[0] <= x <= got[1]), (x, got)
    assert _select.inclusive_bounds(np.dtype(np.int64), np.int64(4), 1, np.int32(9), 2) == (5, 9)
