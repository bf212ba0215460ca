"""RowRanges and Selection against a plain set-of-ints model (pyroaring's test style)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, rule

from rcfmt.errors import InvalidOptionError
from rcfmt.predicate.selection import RANGES_MAX_DENSITY, RowRanges, Selection
from strategies import examples


# ---------------------------------------------------------------- model helpers
def runs_of(model) -> list[tuple[int, int]]:
    """Maximal runs of consecutive ints of a set, as half-open intervals."""
    out: list[list[int]] = []
    for x in sorted(model):
        if out and out[-1][1] == x:
            out[-1][1] = x + 1
        else:
            out.append([x, x + 1])
    return [(s, e) for s, e in out]


def expected_kind(model, n) -> str:
    return "ranges" if len(runs_of(model)) <= max(1, n // RANGES_MAX_DENSITY) else "bitmap"


def check_ranges(rr: RowRanges, model, n: int) -> None:
    """Every observable of ``rr`` agrees with the model set (all rows < n)."""
    assert isinstance(rr, RowRanges)
    s, e = rr.starts, rr.ends
    assert s.dtype == np.int64 and e.dtype == np.int64
    assert not s.flags.writeable and not e.flags.writeable
    if len(s):
        assert s[0] >= 0
        assert np.all(s < e)
        assert np.all(e[:-1] < s[1:])  # disjoint and non-adjacent
    assert list(rr) == runs_of(model)
    assert len(rr) == len(runs_of(model))
    assert rr.row_count == len(model)
    assert rr.is_empty == (not model)
    assert rr.end == (max(model) + 1 if model else 0)
    idx = rr.to_indices()
    assert idx.dtype == np.int64
    assert idx.tolist() == sorted(model)
    mask = rr.to_mask(n)
    assert mask.dtype == bool and len(mask) == n
    assert set(np.flatnonzero(mask).tolist()) == model
    assert rr == RowRanges.from_indices(sorted(model))  # canonical form is unique
    assert rr == RowRanges.from_mask(mask)


def check_selection(sel: Selection, model, n: int, auto: bool = True) -> None:
    assert sel.num_rows == n
    assert sel.row_count == len(model)
    assert sel.is_empty == (not model)
    assert sel.is_all == (len(model) == n)
    if auto:
        assert sel.kind == expected_kind(model, n), (sel.kind, runs_of(model), n)
    if model:  # (asked before to_indices, which it then reads)
        assert sel.span() == (min(model), max(model))
    else:
        with pytest.raises(InvalidOptionError):
            sel.span()
    assert sel.to_indices().tolist() == sorted(model)
    assert sel.to_indices().dtype == np.int64
    if model:
        assert sel.span() == (min(model), max(model))
    mask = sel.to_mask()
    assert len(mask) == n and set(np.flatnonzero(mask).tolist()) == model
    assert sel.to_mask(n + 3)[n:].sum() == 0
    assert list(sel.to_ranges()) == runs_of(model)
    # same answers from the other representation
    other = Selection.from_mask(mask, kind="ranges" if sel.kind == "bitmap" else "bitmap")
    assert other.kind != sel.kind
    assert other == sel and sel == other


def check_pages(obj, model, pages) -> None:
    first = [f for f, _ in pages]
    counts = [c for _, c in pages]
    got = obj.overlaps(np.array(first, dtype=np.int64), np.array(counts, dtype=np.int64))
    assert got.dtype == bool
    assert got.tolist() == [any(f <= x < f + c for x in model) for f, c in pages]


def check_for_page(sel: Selection, model, f: int, c: int) -> None:
    local = sorted(x - f for x in model if f <= x < f + c)
    got = sel.for_page(f, c)
    if c > 0 and len(local) == c:
        assert got is None
    else:
        assert got is not None and got.dtype == np.int64
        assert got.tolist() == local


@st.composite
def row_masks(draw, n):
    """Masks of length n with few long runs or many short ones."""
    if n == 0:
        return np.zeros(0, dtype=bool)
    style = draw(st.sampled_from(["runs", "runs", "random", "random", "constant"]))
    if style == "constant":
        return np.full(n, draw(st.booleans()))
    if style == "random":
        bits = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        return np.array(bits, dtype=bool)
    lengths = draw(st.lists(st.integers(1, max(1, n // 3)), min_size=1, max_size=12))
    value = draw(st.booleans())
    mask = np.zeros(n, dtype=bool)
    pos = 0
    for length in lengths:
        mask[pos:pos + length] = value
        pos += length
        value = not value
    return mask


@st.composite
def pages_of(draw, n, min_size=0):
    """A list of (first_row, row_count) pages within [0, n): arbitrary, possibly empty."""
    pages = []
    for _ in range(draw(st.integers(min_size, 6))):
        f = draw(st.integers(0, n))
        c = draw(st.integers(0, n - f))
        pages.append((f, c))
    return pages


@st.composite
def partition(draw, n):
    """Pages of one column: consecutive, covering [0, n), zero-row pages allowed."""
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    bounds = [0, *cuts, n]
    return [(bounds[i], bounds[i + 1] - bounds[i]) for i in range(len(bounds) - 1)]


# ---------------------------------------------------------------- state machine
class SelectionMachine(RuleBasedStateMachine):
    """Random sequences of operations, every result compared with set arithmetic."""

    ranges = Bundle("ranges")  # (RowRanges, frozenset)
    selections = Bundle("selections")  # (Selection, frozenset)

    @initialize(n=st.one_of(st.just(0), st.integers(1, 40), st.integers(41, 400)))
    def set_block_size(self, n):
        self.n = n

    def _new_ranges(self, rr, model):
        model = frozenset(model)
        check_ranges(rr, model, self.n)
        return (rr, model)

    def _new_selection(self, sel, model, auto=True):
        model = frozenset(model)
        check_selection(sel, model, self.n, auto)
        return (sel, model)

    # ------------------------------------------------------------ RowRanges sources
    @rule(target=ranges, data=st.data())
    def from_intervals(self, data):
        n = self.n
        ivs = data.draw(st.lists(st.tuples(st.integers(0, n), st.integers(0, n)), max_size=8))
        model = {x for s, e in ivs for x in range(s, e)}
        rr = RowRanges.from_intervals([s for s, _ in ivs], [e for _, e in ivs])
        return self._new_ranges(rr, model)

    @rule(target=ranges, data=st.data())
    def from_mask(self, data):
        mask = data.draw(row_masks(self.n))
        return self._new_ranges(RowRanges.from_mask(mask), np.flatnonzero(mask).tolist())

    @rule(target=ranges, data=st.data())
    def from_indices(self, data):
        idx = sorted(data.draw(st.lists(st.integers(0, max(self.n - 1, 0)), max_size=30))) if self.n else []
        return self._new_ranges(RowRanges.from_indices(np.array(idx, dtype=np.int64)), idx)

    @rule(target=ranges, data=st.data())
    def from_pages(self, data):
        pages = data.draw(partition(self.n))
        keep = data.draw(st.lists(st.booleans(), min_size=len(pages), max_size=len(pages)))
        rr = RowRanges.from_pages([f for f, _ in pages], [c for _, c in pages], np.array(keep, dtype=bool))
        model = {x for (f, c), k in zip(pages, keep) if k for x in range(f, f + c)}
        return self._new_ranges(rr, model)

    @rule(target=ranges)
    def full(self):
        return self._new_ranges(RowRanges.full(self.n), range(self.n))

    @rule(target=ranges)
    def empty(self):
        return self._new_ranges(RowRanges.empty(), ())

    # ------------------------------------------------------------ RowRanges operations
    @rule(target=ranges, a=ranges, b=ranges)
    def intersect(self, a, b):
        assert (a[0] & b[0]) == a[0].intersect(b[0])
        return self._new_ranges(a[0] & b[0], a[1] & b[1])

    @rule(target=ranges, a=ranges, b=ranges)
    def union(self, a, b):
        assert (a[0] | b[0]) == a[0].union(b[0])
        return self._new_ranges(a[0] | b[0], a[1] | b[1])

    @rule(target=ranges, a=ranges, b=ranges)
    def difference(self, a, b):
        return self._new_ranges(a[0] - b[0], a[1] - b[1])

    @rule(target=ranges, a=ranges, data=st.data())
    def complement(self, a, data):
        m = data.draw(st.integers(0, self.n))
        return self._new_ranges(a[0].complement(m), set(range(m)) - a[1])

    @rule(target=ranges, a=ranges, data=st.data())
    def slice(self, a, data):
        start = data.draw(st.integers(0, self.n))
        stop = data.draw(st.integers(start, self.n))
        return self._new_ranges(a[0].slice(start, stop), {x - start for x in a[1] if start <= x < stop})

    @rule(a=ranges, data=st.data())
    def queries(self, a, data):
        rr, model = a
        check_pages(rr, model, data.draw(pages_of(self.n)))
        rows = data.draw(st.lists(st.integers(0, self.n + 2), max_size=10))
        assert rr.contains(np.array(rows, dtype=np.int64)).tolist() == [r in model for r in rows]
        if model:
            with pytest.raises(InvalidOptionError):
                rr.to_mask(max(model))

    # ------------------------------------------------------------ Selection sources
    @rule(target=selections, a=ranges, kind=st.sampled_from([None, None, "ranges", "bitmap"]))
    def selection_from_ranges(self, a, kind):
        sel = Selection.from_ranges(a[0], self.n, kind=kind)
        if kind is not None:
            assert sel.kind == kind
        return self._new_selection(sel, a[1], auto=kind is None)

    @rule(target=selections, data=st.data(), kind=st.sampled_from([None, None, "ranges", "bitmap"]))
    def selection_from_mask(self, data, kind):
        mask = data.draw(row_masks(self.n))
        sel = Selection.from_mask(mask, kind=kind)
        mask[:] = ~mask  # the selection does not alias the caller's array
        return self._new_selection(sel, np.flatnonzero(~mask).tolist(), auto=kind is None)

    @rule(target=selections, all_rows=st.booleans())
    def selection_all_or_none(self, all_rows):
        if all_rows:
            return self._new_selection(Selection.all(self.n), range(self.n))
        return self._new_selection(Selection.none(self.n), ())

    # ------------------------------------------------------------ Selection operations
    @rule(target=selections, a=selections, b=selections)
    def selection_intersect(self, a, b):
        return self._new_selection(a[0] & b[0], a[1] & b[1])

    @rule(target=selections, a=selections, b=ranges)
    def selection_intersect_ranges(self, a, b):
        return self._new_selection(a[0].intersect(b[0]), a[1] & b[1])

    @rule(target=selections, a=selections, b=selections)
    def selection_union(self, a, b):
        return self._new_selection(a[0] | b[0], a[1] | b[1])

    @rule(target=selections, a=selections, b=ranges)
    def selection_union_ranges(self, a, b):
        return self._new_selection(a[0].union(b[0]), a[1] | b[1])

    @rule(target=selections, a=selections)
    def selection_complement(self, a):
        return self._new_selection(~a[0], set(range(self.n)) - a[1])

    @rule(target=selections, a=selections, data=st.data())
    def selection_refine(self, a, data):
        sel, model = a
        keep = data.draw(row_masks(len(model)))
        refined = sel.refine(keep)
        return self._new_selection(refined, {x for x, k in zip(sorted(model), keep) if k})

    @rule(a=selections, data=st.data())
    def selection_pages(self, a, data):
        sel, model = a
        check_pages(sel, model, data.draw(pages_of(self.n)))
        for f, c in data.draw(pages_of(self.n, min_size=1)):
            check_for_page(sel, model, f, c)
            part = sel.slice(f, f + c)
            assert part.num_rows == c
            assert part.to_indices().tolist() == sorted(x - f for x in model if f <= x < f + c)


TestSelectionMachine = SelectionMachine.TestCase
TestSelectionMachine.settings = settings(
    max_examples=examples(120), stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# ---------------------------------------------------------------- RowRanges edge cases
def test_empty_and_full():
    e = RowRanges.empty()
    assert len(e) == 0 and e.row_count == 0 and e.is_empty and e.end == 0
    assert e.to_indices().tolist() == [] and e.to_mask(0).tolist() == []
    assert e.to_mask(3).tolist() == [False] * 3
    assert RowRanges.full(0) == e
    f = RowRanges.full(5)
    assert list(f) == [(0, 5)] and f.row_count == 5 and len(f) == 1
    assert f.complement(5) == e and e.complement(5) == f
    assert e.complement(0) == e
    assert (f & e) == e and (f | e) == f and (e | f) == f and (f - e) == f and (e - f) == e


def test_single_rows():
    r = RowRanges.from_indices([3])
    assert list(r) == [(3, 4)] and r.row_count == 1
    assert RowRanges.from_indices([0, 2, 4]).row_count == 3
    assert len(RowRanges.from_indices([0, 2, 4])) == 3
    assert (RowRanges.from_indices([3]) & RowRanges.from_indices([4])).is_empty
    assert list(RowRanges.from_indices([3]) | RowRanges.from_indices([4])) == [(3, 5)]


def test_adjacent_ranges_merge():
    assert list(RowRanges.from_intervals([0, 5], [5, 10])) == [(0, 10)]
    assert list(RowRanges.from_intervals([5, 0], [10, 5])) == [(0, 10)]
    assert list(RowRanges.from_intervals([0, 2, 1], [3, 4, 9])) == [(0, 9)]
    assert list(RowRanges.from_intervals([4, 0], [4, 0])) == []  # empty intervals vanish
    assert list(RowRanges.from_pages([0, 10, 20, 30], [10, 10, 10, 10], [True, True, False, True])) == [
        (0, 20), (30, 40)]
    assert list(RowRanges.from_pages([0, 10, 10, 20], [10, 0, 10, 5], [True, False, True, True])) == [(0, 25)]
    assert list(RowRanges.from_indices([1, 2, 2, 3, 7])) == [(1, 4), (7, 8)]  # duplicates are fine
    assert list(RowRanges.from_intervals([0], [5]) | RowRanges.from_intervals([5], [8])) == [(0, 8)]
    # intersections of coalesced inputs stay coalesced
    a = RowRanges.from_intervals([0, 6], [5, 10])
    b = RowRanges.from_intervals([0], [10])
    assert list(a & b) == [(0, 5), (6, 10)]


def test_intersect_arbitrary_page_boundaries():
    # column A has pages of 7 rows, column B of 10: nothing lines up
    a = RowRanges.from_pages(np.arange(0, 70, 7), np.full(10, 7), np.arange(10) % 3 == 0)
    b = RowRanges.from_pages(np.arange(0, 70, 10), np.full(7, 10), np.arange(7) % 2 == 1)
    ma, mb = a.to_mask(70), b.to_mask(70)
    assert a & b == RowRanges.from_mask(ma & mb)
    assert a | b == RowRanges.from_mask(ma | mb)
    assert a - b == RowRanges.from_mask(ma & ~mb)


def test_overlaps_pages():
    r = RowRanges.from_intervals([10, 30], [20, 31])
    first = [0, 5, 10, 19, 20, 25, 30, 31, 15]
    count = [10, 6, 1, 1, 10, 5, 1, 100, 0]
    assert r.overlaps(first, count).tolist() == [False, True, True, True, False, False, True, False, False]
    assert RowRanges.empty().overlaps([0], [10]).tolist() == [False]
    assert r.overlaps([], []).tolist() == []


def test_slice_one_page():
    r = RowRanges.from_intervals([2, 8], [5, 12])
    assert list(r.slice(0, 10)) == [(2, 5), (8, 10)]
    assert list(r.slice(4, 9)) == [(0, 1), (4, 5)]
    assert r.slice(5, 8).is_empty
    assert r.slice(3, 3).is_empty
    assert list(r.slice(10, 100)) == [(0, 2)]


def test_n_zero():
    assert RowRanges.full(0).to_mask(0).tolist() == []
    assert RowRanges.empty().complement(0).is_empty
    s = Selection.all(0)
    assert s.row_count == 0 and s.is_all and s.is_empty and s.kind == "ranges"
    assert s.to_mask().tolist() == [] and s.to_indices().tolist() == []
    assert s.for_page(0, 0).tolist() == []
    assert s.overlaps([0], [0]).tolist() == [False]
    assert Selection.from_mask(np.zeros(0, dtype=bool)) == Selection.none(0)
    assert (~Selection.none(0)) == Selection.all(0)


def test_arrays_are_read_only_and_inputs_not_aliased():
    starts = np.array([0, 10], dtype=np.int64)
    r = RowRanges(starts, np.array([5, 20], dtype=np.int64))
    starts[0] = 3
    assert r.starts[0] == 0
    with pytest.raises(ValueError):
        r.starts[0] = 1


def test_validation_errors():
    with pytest.raises(InvalidOptionError):
        RowRanges([0, 5], [5, 10])  # adjacent: must be coalesced
    with pytest.raises(InvalidOptionError):
        RowRanges([5, 0], [6, 1])  # unsorted
    with pytest.raises(InvalidOptionError):
        RowRanges([0], [0])  # empty range
    with pytest.raises(InvalidOptionError):
        RowRanges([-1], [2])
    with pytest.raises(InvalidOptionError):
        RowRanges([0, 1], [2])
    with pytest.raises(InvalidOptionError):
        RowRanges.from_intervals([-3], [2])
    with pytest.raises(InvalidOptionError):
        RowRanges.from_indices([3, 2])
    with pytest.raises(InvalidOptionError):
        RowRanges.from_indices([-1, 2])
    with pytest.raises(InvalidOptionError):
        RowRanges.from_indices([0.5])
    with pytest.raises(InvalidOptionError):
        RowRanges.from_mask([0, 1])  # not bool
    with pytest.raises(InvalidOptionError):
        RowRanges.from_pages([0, 10], [10], [True, True])
    with pytest.raises(InvalidOptionError):
        RowRanges.from_pages([0], [-1], [True])
    with pytest.raises(InvalidOptionError):
        RowRanges.full(-1)
    with pytest.raises(InvalidOptionError):
        RowRanges.full(5).to_mask(4)
    with pytest.raises(InvalidOptionError):
        RowRanges.full(5).slice(3, 2)
    with pytest.raises(InvalidOptionError):
        RowRanges.full(5) & Selection.all(5)
    with pytest.raises(InvalidOptionError):
        RowRanges.full(5).overlaps([0], [-1])
    with pytest.raises(InvalidOptionError):
        Selection.from_ranges(RowRanges.full(5), 4)
    with pytest.raises(InvalidOptionError):
        Selection.all(5) & Selection.all(6)
    with pytest.raises(InvalidOptionError):
        Selection.all(5).for_page(3, 3)
    with pytest.raises(InvalidOptionError):
        Selection.all(5).overlaps([3], [3])
    with pytest.raises(InvalidOptionError):
        Selection.all(5).refine(np.ones(4, dtype=bool))
    with pytest.raises(InvalidOptionError):
        Selection.from_mask(np.ones(5, dtype=bool), kind="dense")
    with pytest.raises(InvalidOptionError):
        Selection.from_mask(np.ones(5, dtype=bool), kind="bitmap").to_mask(3)


# ---------------------------------------------------------------- Selection specifics
def test_density_rule_threshold():
    n = 16 * 10
    few = np.zeros(n, dtype=bool)
    few[::16] = True  # exactly 10 runs: ranges
    assert Selection.from_mask(few).kind == "ranges"
    many = few.copy()
    many[5] = True  # 11 runs: bitmap
    assert Selection.from_mask(many).kind == "bitmap"
    assert Selection.from_ranges(RowRanges.from_mask(many), n).kind == "bitmap"
    # tiny blocks: a single run is always ranges, two runs in 20 rows are a bitmap
    assert Selection.from_mask(np.array([False, True, True])).kind == "ranges"
    assert Selection.from_mask(np.array([True, False] * 10)).kind == "bitmap"
    # operations re-apply the rule: the union of two sparse selections becomes dense
    assert (Selection.from_mask(few) | Selection.from_mask(many)).kind == "bitmap"
    assert (Selection.from_mask(many) & Selection.from_mask(few)).kind == "ranges"


def test_for_page_shapes():
    sel = Selection.from_ranges(RowRanges.from_intervals([0, 50], [20, 60]), 100)
    assert sel.for_page(0, 20) is None  # whole page selected
    assert sel.for_page(20, 30).tolist() == []  # nothing: skip the page
    assert sel.for_page(10, 20).tolist() == list(range(10))
    assert sel.for_page(45, 10).tolist() == [5, 6, 7, 8, 9]
    bitmap = Selection.from_ranges(sel.to_ranges(), 100, kind="bitmap")
    for f, c in [(0, 20), (20, 30), (10, 20), (45, 10), (0, 100), (99, 1)]:
        a, b = sel.for_page(f, c), bitmap.for_page(f, c)
        assert (a is None and b is None) or a.tolist() == b.tolist()


def test_refine_late_materialization():
    sel = Selection.from_ranges(RowRanges.from_intervals([10, 40], [20, 45]), 50)
    # values decoded for the 15 selected rows; the next predicate keeps every other one
    keep = np.arange(15) % 2 == 0
    out = sel.refine(keep)
    assert out.to_indices().tolist() == [10, 12, 14, 16, 18, 40, 42, 44]
    assert sel.refine(np.ones(15, dtype=bool)) == sel
    assert sel.refine(np.zeros(15, dtype=bool)).is_empty


def test_bitmap_does_not_alias_input():
    mask = np.arange(64) % 3 == 0
    sel = Selection.from_mask(mask)
    assert sel.kind == "bitmap"
    mask[:] = False
    assert sel.row_count == 22 and sel.to_mask().sum() == 22
    assert not sel.to_mask().flags.writeable


@settings(max_examples=examples(30), deadline=None)
@given(st.data())
def test_many_ranges_vectorized(data):
    """Large random inputs: the vectorized operations agree with mask arithmetic."""
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = 20_000
    ma = rng.random(n) < data.draw(st.sampled_from([0.01, 0.5, 0.99]))
    mb = rng.random(n) < data.draw(st.sampled_from([0.01, 0.5, 0.99]))
    a, b = RowRanges.from_mask(ma), RowRanges.from_mask(mb)
    assert (a & b) == RowRanges.from_mask(ma & mb)
    assert (a | b) == RowRanges.from_mask(ma | mb)
    assert (a - b) == RowRanges.from_mask(ma & ~mb)
    assert a.complement(n) == RowRanges.from_mask(~ma)
    assert np.array_equal(a.to_indices(), np.flatnonzero(ma))
    first = np.arange(0, n, 777)
    counts = np.minimum(777, n - first)
    csum = np.concatenate(([0], np.cumsum(ma)))
    expect = csum[first + counts] > csum[first]
    assert np.array_equal(a.overlaps(first, counts), expect)
    assert np.array_equal(Selection.from_mask(ma).overlaps(first, counts), expect)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=40), st.data())
def test_pages_holding_matches_brute_force(page_rows, data):
    """Pages that tile a block (some without rows): the pages holding a selected row,
    found by per-row search or per-page test, are exactly those a brute force finds."""
    counts = np.array(page_rows, np.int64)
    first = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    n = int(counts.sum())
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    expected = [p for p in range(len(counts)) if mask[first[p]:first[p] + counts[p]].any()]
    for sel in (Selection.from_mask(mask), Selection.from_ranges(RowRanges.from_mask(mask), n)):
        got = sel.pages_holding(first, counts)
        assert got.dtype == np.int64
        assert got.tolist() == expected


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=40), st.data())
def test_sparse_positions_match_brute_force(page_rows, data):
    """Few selected rows: their pages, and their positions among those pages' rows
    decoded back to back, as a brute force finds them (pages without rows included)."""
    from rcfmt._native.select import sparse_positions

    counts = np.array(page_rows, np.int64)
    first = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    n = int(counts.sum())
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n))), np.int64)
    page_ids, positions = sparse_positions(rows, first, counts)
    pages = [p for p in range(len(counts)) if any(first[p] <= r < first[p] + counts[p] for r in rows)]
    decoded = [r for p in pages for r in range(first[p], first[p] + counts[p])]
    assert page_ids.tolist() == pages
    assert positions.tolist() == [decoded.index(r) for r in rows]


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_refine_of_many_ranges_matches_brute_force(data):
    """A selection of several ranges refined by a mask over its rows (runs crossing from
    one range into the next, ranges of one row, masks all True or all False) keeps
    exactly the rows a brute-force mask keeps."""
    n = data.draw(st.integers(1, 400))
    block = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    sel = Selection.from_ranges(RowRanges.from_mask(np.array(block)), n, kind="ranges")
    rows = sel.to_indices()
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))), dtype=bool)
    out = sel.refine(keep)
    assert out.to_indices().tolist() == rows[keep].tolist()
    assert out.row_count == int(keep.sum())
    r = out.to_ranges()
    assert np.all(r.starts < r.ends) and np.all(r.ends[:-1] < r.starts[1:])  # normalized: apart, sorted
