"""Row selections within one block: :class:`RowRanges` and :class:`Selection`.

Rows of a block are numbered ``0 .. n-1``. Two representations of a set of rows:

:class:`RowRanges`
    Sorted, disjoint, non-adjacent half-open intervals ``[start, end)`` held as two
    int64 arrays. Page pruning produces them (one per predicate column, from that
    column's pages) and combines them exactly with ``&`` / ``|``: pages of different
    columns do not line up, so the operations work on arbitrary intervals.

:class:`Selection`
    The exact result of evaluating a predicate: the rows that match. It is stored
    either as row ranges or as a bitmap (numpy bool, one byte per row of the block),
    chosen by density (see :data:`RANGES_MAX_DENSITY`), and offers the same
    interface either way. The reader asks it which pages to decode
    (:meth:`Selection.overlaps`) and, per page, which values to keep
    (:meth:`Selection.for_page`).

Every operation is vectorized with numpy (``searchsorted``, ``cumsum``, ``repeat``):
no Python loop runs once per range or per row.
"""
from __future__ import annotations

import numpy as np

from .._native import select as _select
from ..errors import InvalidOptionError

__all__ = ["RowRanges", "Selection", "RANGES_MAX_DENSITY"]

#: Density rule of :class:`Selection`: it keeps row ranges while
#: ``num_ranges <= max(1, num_rows // RANGES_MAX_DENSITY)`` and a bitmap otherwise.
#: Ranges cost 16 bytes per run (two int64), the bitmap one byte per row, so with
#: 16 the ranges are never larger than the bitmap; equivalently, ranges are used
#: while a run plus the gap after it average at least 16 rows, which is also about
#: where slicing runs stops being cheaper than a boolean gather. An empty or full
#: selection (0 or 1 range) is always ranges.
RANGES_MAX_DENSITY = 16

_I64 = np.dtype(np.int64)
_EMPTY = np.empty(0, dtype=_I64)
_EMPTY.flags.writeable = False


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _as_int64(values, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.size == 0:
        return np.empty(0, dtype=_I64)
    if arr.ndim != 1:
        raise InvalidOptionError(f"{what} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise InvalidOptionError(f"{what} must be integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and int(arr.max()) > np.iinfo(_I64).max:
        raise InvalidOptionError(f"{what} out of range")
    return arr.astype(_I64, copy=False)


def _as_mask(mask, what="mask") -> np.ndarray:
    arr = np.asarray(mask)
    if arr.dtype != np.bool_:
        raise InvalidOptionError(f"{what} must be a bool array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise InvalidOptionError(f"{what} must be one-dimensional, got shape {arr.shape}")
    return arr


def _as_count(n, what="n") -> int:
    if type(n) is int and n >= 0:  # fast path for the per-page calls
        return n
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise InvalidOptionError(f"{what} must be a non-negative integer, got {n!r}")
    return int(n)


def _mask_runs(mask: np.ndarray):
    """(starts, ends) of the runs of True in a bool array."""
    if mask.size == 0:
        return _EMPTY, _EMPTY
    return _select.mask_runs(np.ascontiguousarray(mask).view(np.uint8))


def _count_runs(mask: np.ndarray) -> int:
    """Number of runs of True in a bool array, without materializing them."""
    if mask.size == 0:
        return 0
    return _select.count_runs(np.ascontiguousarray(mask).view(np.uint8))


class RowRanges:
    """A set of rows as sorted, disjoint, non-adjacent half-open intervals.

    ``starts`` and ``ends`` are read-only int64 arrays with ``0 <= starts[i] <
    ends[i] < starts[i+1]``. ``RowRanges(starts, ends)`` checks these invariants
    (:class:`InvalidOptionError` if broken); :meth:`from_intervals` accepts arbitrary
    intervals and normalizes them. Instances are immutable.
    """

    __slots__ = ("starts", "ends")

    def __init__(self, starts, ends):
        s = _as_int64(starts, "starts")
        e = _as_int64(ends, "ends")
        if s.shape != e.shape:
            raise InvalidOptionError(f"starts and ends differ in length ({len(s)} != {len(e)})")
        if s.size and (s[0] < 0 or np.any(s >= e) or np.any(e[:-1] >= s[1:])):
            raise InvalidOptionError(
                "row ranges must be sorted, non-empty, disjoint, non-adjacent and non-negative "
                "(use RowRanges.from_intervals to normalize)")
        self.starts = _readonly(s.copy() if s is starts else s)
        self.ends = _readonly(e.copy() if e is ends else e)

    @classmethod
    def _make(cls, starts: np.ndarray, ends: np.ndarray) -> "RowRanges":
        """Trusted constructor: the arrays are int64 and already normalized."""
        self = cls.__new__(cls)
        self.starts = _readonly(starts) if starts.size else _EMPTY
        self.ends = _readonly(ends) if ends.size else _EMPTY
        return self

    # ------------------------------------------------------------ constructors
    @classmethod
    def empty(cls) -> "RowRanges":
        """No rows."""
        return cls._make(_EMPTY, _EMPTY)

    @classmethod
    def full(cls, n: int) -> "RowRanges":
        """All rows ``0 .. n-1``."""
        n = _as_count(n)
        if n == 0:
            return cls.empty()
        return cls._make(np.array([0], dtype=_I64), np.array([n], dtype=_I64))

    @classmethod
    def from_intervals(cls, starts, ends) -> "RowRanges":
        """The union of arbitrary intervals ``[starts[i], ends[i])``.

        Intervals may be unsorted, overlapping, adjacent or empty (``start >= end``,
        ignored); starts must be non-negative.
        """
        s = _as_int64(starts, "starts")
        e = _as_int64(ends, "ends")
        if s.shape != e.shape:
            raise InvalidOptionError(f"starts and ends differ in length ({len(s)} != {len(e)})")
        keep = s < e
        s, e = s[keep], e[keep]
        if s.size and s.min() < 0:
            raise InvalidOptionError("row ranges must not start before row 0")
        return cls._make(*_normalize(s, e))

    @classmethod
    def from_pages(cls, first_rows, row_counts, keep_mask) -> "RowRanges":
        """The rows of the kept pages of one column, coalesced into ranges.

        ``first_rows[i]`` and ``row_counts[i]`` locate page ``i``; ``keep_mask[i]`` says
        whether it may hold matching rows (True = keep).
        """
        f = _as_int64(first_rows, "first_rows")
        c = _as_int64(row_counts, "row_counts")
        k = _as_mask(keep_mask, "keep_mask")
        if not (f.shape == c.shape == k.shape):
            raise InvalidOptionError(
                f"first_rows, row_counts and keep_mask differ in length ({len(f)}, {len(c)}, {len(k)})")
        if f.size and (f.min() < 0 or c.min() < 0):
            raise InvalidOptionError("page first rows and row counts must be non-negative")
        s, e = f[k], f[k] + c[k]
        nonempty = s < e
        s, e = s[nonempty], e[nonempty]
        if s.size > 1 and np.all(e[:-1] <= s[1:]):
            # pages of one column: already sorted and disjoint, only coalesce
            return cls._make(*_coalesce_sorted(s, e))
        return cls._make(*_normalize(s, e))

    @classmethod
    def from_mask(cls, mask) -> "RowRanges":
        """The rows where a bool array is True."""
        return cls._make(*_mask_runs(_as_mask(mask)))

    @classmethod
    def from_indices(cls, indices) -> "RowRanges":
        """The rows of a sorted (non-decreasing) array of row numbers."""
        idx = _as_int64(indices, "indices")
        if idx.size == 0:
            return cls.empty()
        if idx.size <= 32:  # (a take's few rows in a block: a loop is several times faster than numpy's calls)
            rows = idx.tolist()
            starts, ends, prev = [rows[0]], [], rows[0]
            if prev < 0:
                raise InvalidOptionError("indices must be sorted and non-negative")
            for row in rows[1:]:
                if row < prev:
                    raise InvalidOptionError("indices must be sorted and non-negative")
                if row > prev + 1:
                    ends.append(prev + 1)
                    starts.append(row)
                prev = row
            ends.append(prev + 1)
            return cls._make(np.array(starts, _I64), np.array(ends, _I64))
        step = np.diff(idx)
        if idx[0] < 0 or np.any(step < 0):
            raise InvalidOptionError("indices must be sorted and non-negative")
        brk = np.flatnonzero(step > 1)
        starts = np.concatenate((idx[:1], idx[brk + 1]))
        ends = np.concatenate((idx[brk] + 1, idx[-1:] + 1))
        return cls._make(starts, ends)

    # ------------------------------------------------------------ properties
    @property
    def row_count(self) -> int:
        """Number of rows in the set."""
        if len(self.starts) == 1:  # (most sets: no numpy reduction for one range)
            return int(self.ends[0]) - int(self.starts[0])
        return int(np.add.reduce(self.ends - self.starts))

    def __len__(self) -> int:
        """Number of ranges."""
        return len(self.starts)

    @property
    def is_empty(self) -> bool:
        return len(self.starts) == 0

    @property
    def end(self) -> int:
        """One past the last row in the set (0 when empty)."""
        return int(self.ends[-1]) if len(self.ends) else 0

    def __iter__(self):
        """Iterate ``(start, end)`` pairs as Python ints (not for hot paths)."""
        return zip(self.starts.tolist(), self.ends.tolist())

    def __eq__(self, other):
        if not isinstance(other, RowRanges):
            return NotImplemented
        return np.array_equal(self.starts, other.starts) and np.array_equal(self.ends, other.ends)

    __hash__ = None

    def __repr__(self) -> str:
        shown = ", ".join(f"[{s}, {e})" for s, e in zip(self.starts[:8].tolist(), self.ends[:8].tolist()))
        more = f", ... ({len(self)} ranges)" if len(self) > 8 else ""
        return f"RowRanges({shown}{more})"

    # ------------------------------------------------------------ set operations
    def intersect(self, other: "RowRanges") -> "RowRanges":
        """Rows in both sets (exact for arbitrary intervals)."""
        other = _check_ranges(other)
        a, b = self, other
        if a.is_empty or b.is_empty:
            return RowRanges.empty()
        if len(a) < len(b):
            a, b = b, a
        if len(b) == 1 and b.starts[0] <= a.starts[0] and b.ends[0] >= a.ends[-1]:
            return a  # one range covering the other set (e.g. a whole block)
        # for each range of the smaller b, the ranges of a it overlaps: [lo, hi)
        lo = np.searchsorted(a.ends, b.starts, side="right")
        hi = np.searchsorted(a.starts, b.ends, side="left")
        counts = hi - lo
        total = int(counts.sum())
        if total == 0:
            return RowRanges.empty()
        bi = np.repeat(np.arange(len(b)), counts)
        first = np.cumsum(counts) - counts
        ai = np.arange(total) - np.repeat(first - lo, counts)
        starts = np.maximum(a.starts[ai], b.starts[bi])
        ends = np.minimum(a.ends[ai], b.ends[bi])
        # Pairs come in order and never touch: two results [x, y) [y, z) would put
        # rows y-1 and y in the same range of a and of b, i.e. in the same pair.
        return RowRanges._make(starts, ends)

    def union(self, other: "RowRanges") -> "RowRanges":
        """Rows in either set."""
        other = _check_ranges(other)
        if other.is_empty:
            return self
        if self.is_empty:
            return other
        return RowRanges._make(*_merge_sorted(self.starts, self.ends, other.starts, other.ends))

    def difference(self, other: "RowRanges") -> "RowRanges":
        """Rows in this set and not in ``other``."""
        other = _check_ranges(other)
        if self.is_empty or other.is_empty:
            return self
        return self.intersect(other.complement(max(self.end, other.end)))

    def complement(self, n: int) -> "RowRanges":
        """Rows of ``0 .. n-1`` not in the set (rows at or past ``n`` are ignored)."""
        n = _as_count(n)
        starts = np.concatenate(([0], self.ends)).astype(_I64, copy=False)
        ends = np.concatenate((self.starts, [n])).astype(_I64, copy=False)
        np.minimum(starts, n, out=starts)
        np.minimum(ends, n, out=ends)
        keep = starts < ends
        return RowRanges._make(starts[keep], ends[keep])

    __and__ = intersect
    __or__ = union
    __sub__ = difference

    # ------------------------------------------------------------ queries
    def overlaps(self, first_rows, row_counts) -> np.ndarray:
        """Bool array: which pages ``[first_rows[i], first_rows[i] + row_counts[i])`` hold any row.

        This is how the reader decides which pages of a column to read.
        """
        f, c = _check_pages(first_rows, row_counts)
        return self.page_overlaps(f, c)

    def page_overlaps(self, f: np.ndarray, c: np.ndarray) -> np.ndarray:
        """:meth:`overlaps` without argument checks, for int64 arrays of non-negative
        first rows and counts (a page index, checked when it was read)."""
        if self.is_empty or f.size == 0:
            return np.zeros(f.size, dtype=bool)
        # first range ending after the page's first row; the page overlaps it iff
        # that range starts before the page's end
        i = np.searchsorted(self.ends, f, side="right")
        inside = i < len(self)
        out = np.zeros(f.size, dtype=bool)
        out[inside] = self.starts[i[inside]] < f[inside] + c[inside]
        out &= c > 0  # a page without rows holds no selected row
        return out

    def contains(self, rows) -> np.ndarray:
        """Bool array: which of ``rows`` are in the set."""
        r = _as_int64(rows, "rows")
        i = np.searchsorted(self.ends, r, side="right")
        inside = i < len(self)
        out = np.zeros(r.size, dtype=bool)
        out[inside] = self.starts[i[inside]] <= r[inside]
        return out

    def to_mask(self, n: int) -> np.ndarray:
        """Bool array of length ``n``, True on the rows of the set (all must be < ``n``)."""
        n = _as_count(n)
        if self.end > n:
            raise InvalidOptionError(f"row ranges end at row {self.end}, past n={n}")
        if self.is_empty:
            return np.zeros(n, dtype=bool)
        return _select.ranges_mask(np.ascontiguousarray(self.starts, _I64), np.ascontiguousarray(self.ends, _I64), n)

    def to_indices(self) -> np.ndarray:
        """Sorted int64 array of the rows of the set."""
        return _ranges_to_indices(self.starts, self.ends)

    def slice(self, start: int, stop: int) -> "RowRanges":
        """The part of the set inside ``[start, stop)``, shifted so that ``start`` is row 0.

        For one page: ``ranges.slice(first_row, first_row + row_count)``.
        """
        start = _as_count(start, "start")
        stop = _as_count(stop, "stop")
        if stop < start:
            raise InvalidOptionError(f"slice stop {stop} is before start {start}")
        if stop == start:
            return RowRanges.empty()
        lo = int(np.searchsorted(self.ends, start, side="right"))
        hi = int(np.searchsorted(self.starts, stop, side="left"))
        if hi <= lo:
            return RowRanges.empty()
        starts = np.maximum(self.starts[lo:hi], start) - start
        ends = np.minimum(self.ends[lo:hi], stop) - start
        return RowRanges._make(starts, ends)

    def shift(self, offset: int) -> "RowRanges":
        """The set moved by ``offset`` rows (the result must not go below row 0)."""
        offset = int(offset)
        if len(self) and self.starts[0] + offset < 0:
            raise InvalidOptionError(f"shifting by {offset} moves rows below 0")
        return RowRanges._make(self.starts + offset, self.ends + offset)


def _ranges_to_indices(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The rows of normalized ranges, as a sorted int64 array."""
    if len(starts) == 1:
        return np.arange(starts[0], ends[0], dtype=_I64)
    return _select.ranges_rows(np.ascontiguousarray(starts, _I64), np.ascontiguousarray(ends, _I64))


def _check_ranges(other) -> RowRanges:
    if not isinstance(other, RowRanges):
        raise InvalidOptionError(f"expected RowRanges, got {type(other).__name__}")
    return other


def _check_pages(first_rows, row_counts):
    f = _as_int64(first_rows, "first_rows")
    c = _as_int64(row_counts, "row_counts")
    if f.shape != c.shape:
        raise InvalidOptionError(f"first_rows and row_counts differ in length ({len(f)} != {len(c)})")
    if f.size and (f.min() < 0 or c.min() < 0):
        raise InvalidOptionError("page first rows and row counts must be non-negative")
    return f, c


def _coalesce_sorted(s: np.ndarray, e: np.ndarray):
    """Merge touching intervals of a sorted, disjoint, non-empty interval list."""
    if s.size <= 1:
        return s.copy(), e.copy()
    new = np.concatenate(([True], s[1:] > e[:-1]))
    last = np.concatenate((new[1:], [True]))
    return s[new], e[last]


def _normalize(s: np.ndarray, e: np.ndarray):
    """Union of non-empty intervals in any order, as sorted, coalesced ranges."""
    if s.size == 0:
        return _EMPTY, _EMPTY
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)  # furthest end so far
    new = np.concatenate(([True], s[1:] > reach[:-1]))
    last = np.concatenate((new[1:], [True]))
    return s[new], reach[last]


def _merge_sorted(s1, e1, s2, e2):
    """Union of two normalized range lists."""
    s = np.concatenate((s1, s2))
    e = np.concatenate((e1, e2))
    order = np.argsort(s, kind="stable")  # two sorted runs: cheap for timsort-like merges
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.concatenate(([True], s[1:] > reach[:-1]))
    last = np.concatenate((new[1:], [True]))
    return s[new], reach[last]


class Selection:
    """The rows of a block that satisfy a predicate, as ranges or as a bitmap.

    ``num_rows`` is the size of the block; every selected row is below it. The
    representation follows the density rule of :data:`RANGES_MAX_DENSITY` unless a
    constructor is told otherwise with ``kind="ranges"`` or ``kind="bitmap"``;
    results are the same either way. ``kind`` tells which one is in use.
    Instances are immutable.
    """

    __slots__ = ("_n", "_ranges", "_mask", "_count", "_csum", "_indices")

    def __init__(self):  # pragma: no cover - use the constructors
        raise TypeError("use Selection.from_mask, .from_ranges, .from_indices, .all or .none")

    @classmethod
    def _make(cls, n: int, ranges: RowRanges | None, mask: np.ndarray | None, count: int | None = None):
        self = object.__new__(cls)
        self._n = n
        self._ranges = ranges
        self._mask = _readonly(mask) if mask is not None else None
        self._count = count
        self._csum = None
        self._indices = None
        return self

    @classmethod
    def _choose_from_ranges(cls, ranges: RowRanges, n: int, kind) -> "Selection":
        kind = _check_kind(kind)
        if kind == "bitmap" or (kind is None and not _ranges_fit(len(ranges), n)):
            return cls._make(n, None, ranges.to_mask(n))
        return cls._make(n, ranges, None)

    @classmethod
    def _choose_from_mask(cls, mask: np.ndarray, kind, copy: bool = False) -> "Selection":
        kind = _check_kind(kind)
        n = len(mask)
        if kind == "ranges" or (kind is None and _ranges_fit(_count_runs(mask), n)):
            return cls._make(n, RowRanges.from_mask(mask), None)
        return cls._make(n, None, np.array(mask, dtype=bool, copy=True) if copy else mask)

    # ------------------------------------------------------------ constructors
    @classmethod
    def all(cls, n: int) -> "Selection":
        """Every row of a block of ``n`` rows."""
        n = _as_count(n)
        return cls._make(n, RowRanges.full(n), None, n)

    @classmethod
    def none(cls, n: int) -> "Selection":
        """No row of a block of ``n`` rows."""
        return cls._make(_as_count(n), RowRanges.empty(), None, 0)

    @classmethod
    def from_mask(cls, mask, *, kind: str | None = None) -> "Selection":
        """The rows where ``mask`` (bool array, one entry per row of the block) is True.

        The mask is copied if it is kept as the bitmap.
        """
        return cls._choose_from_mask(_as_mask(mask), kind, copy=True)

    @classmethod
    def from_ranges(cls, ranges: RowRanges, n: int, *, kind: str | None = None) -> "Selection":
        """The rows of ``ranges`` in a block of ``n`` rows (ranges must end by ``n``)."""
        ranges = _check_ranges(ranges)
        n = _as_count(n)
        if ranges.end > n:
            raise InvalidOptionError(f"row ranges end at row {ranges.end}, past the block's {n} rows")
        return cls._choose_from_ranges(ranges, n, kind)

    @classmethod
    def picked(cls, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray, n: int) -> "Selection":
        """Trusted constructor: ``rows`` (int64, sorted, distinct, below ``n``) and their
        runs ``[starts, ends)``, as the block executor picks them (``run_block``'s
        ``compact``). Kept as runs whatever their density: no form is built twice."""
        self = cls._make(n, RowRanges._make(starts, ends), None, len(rows))
        self._indices = _readonly(rows)
        return self

    @classmethod
    def from_indices(cls, indices, n: int, *, kind: str | None = None) -> "Selection":
        """The rows of a sorted array of row numbers, all below ``n``."""
        return cls.from_ranges(RowRanges.from_indices(indices), n, kind=kind)

    # ------------------------------------------------------------ properties
    @property
    def num_rows(self) -> int:
        """Rows in the block (selected or not)."""
        return self._n

    @property
    def kind(self) -> str:
        """``"ranges"`` or ``"bitmap"``: the representation in use."""
        return "ranges" if self._ranges is not None else "bitmap"

    @property
    def row_count(self) -> int:
        """Number of selected rows."""
        if self._count is None:
            self._count = (self._ranges.row_count if self._ranges is not None
                           else int(np.count_nonzero(self._mask)))
        return self._count

    @property
    def is_empty(self) -> bool:
        return self.row_count == 0

    @property
    def is_all(self) -> bool:
        return self.row_count == self._n

    def __eq__(self, other):
        if not isinstance(other, Selection):
            return NotImplemented
        if self._n != other._n or self.row_count != other.row_count:
            return False
        if self._ranges is not None and other._ranges is not None:
            return self._ranges == other._ranges
        return np.array_equal(self.to_mask(), other.to_mask())

    __hash__ = None

    def __repr__(self) -> str:
        return f"Selection({self.row_count} of {self._n} rows, {self.kind})"

    # ------------------------------------------------------------ conversions
    def to_ranges(self) -> RowRanges:
        """The selected rows as :class:`RowRanges`."""
        if self._ranges is not None:
            return self._ranges
        return RowRanges.from_mask(self._mask)

    def to_mask(self, n: int | None = None) -> np.ndarray:
        """Bool array of length ``n`` (default :attr:`num_rows`); selected rows must be < ``n``.

        The bitmap itself (read-only) is returned when it is what is stored.
        """
        n = self._n if n is None else _as_count(n)
        if self._ranges is not None:
            return self._ranges.to_mask(n)
        if n == self._n:
            return self._mask
        if n > self._n:
            return np.concatenate((self._mask, np.zeros(n - self._n, dtype=bool)))
        if self._mask[n:].any():
            raise InvalidOptionError(f"selection holds rows past n={n}")
        return self._mask[:n].copy()

    def to_indices(self) -> np.ndarray:
        """Sorted int64 array of the selected rows (read-only; computed once: a scan
        asks for it once per projected column)."""
        if self._indices is None:
            if self._ranges is not None:
                rows = self._ranges.to_indices()
            else:
                rows = _select.mask_rows(np.ascontiguousarray(self._mask).view(np.uint8))
            self._indices = _readonly(rows.astype(_I64, copy=False))
        return self._indices

    def span(self) -> tuple[int, int]:
        """``(first, last)`` selected rows (none selected: InvalidOptionError), without
        listing the rows between."""
        if self.is_empty:
            raise InvalidOptionError("an empty selection has no first or last row")
        if self._indices is not None:
            return int(self._indices[0]), int(self._indices[-1])
        if self._ranges is not None:
            return int(self._ranges.starts[0]), int(self._ranges.ends[-1]) - 1
        return int(np.argmax(self._mask)), self._n - 1 - int(np.argmax(self._mask[::-1]))

    # ------------------------------------------------------------ per page
    def overlaps(self, first_rows, row_counts) -> np.ndarray:
        """Bool array: which pages hold at least one selected row (pages must lie in the block)."""
        f, c = _check_pages(first_rows, row_counts)
        if f.size and int((f + c).max()) > self._n:
            raise InvalidOptionError(f"a page ends past the block's {self._n} rows")
        return self.page_overlaps(f, c)

    def page_overlaps(self, f: np.ndarray, c: np.ndarray) -> np.ndarray:
        """:meth:`overlaps` without argument checks, for int64 arrays of pages that lie
        in the block (a page index, checked when it was read)."""
        if self._ranges is not None:
            return self._ranges.page_overlaps(f, c)
        if self._csum is None:
            self._csum = _readonly(np.concatenate(([0], np.cumsum(self._mask, dtype=_I64))))
        return self._csum[f + c] > self._csum[f]

    def pages_holding(self, f: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Sorted int64 numbers of the pages holding a selected row, for int64 first
        rows ``f`` and counts ``c`` of pages that tile the block in order (a page index,
        checked when it was read). Few selected rows are looked up one by one (a
        search each); otherwise every page is tested, as :meth:`page_overlaps`."""
        count = self.row_count
        if count == 0 or f.size == 0:
            return _EMPTY
        if count < f.size // 4:
            return _select.sparse_positions(self.to_indices(), f, c)[0]
        return np.flatnonzero(self.page_overlaps(f, c))

    def for_page(self, first_row: int, row_count: int):
        """What a page decoder needs to keep the selected values of one page.

        For the page holding rows ``[first_row, first_row + row_count)`` of the block:
        ``None`` if every row of the page is selected (keep all values), otherwise a
        sorted int64 array of the selected positions *within the page* (``0 ..
        row_count-1``), empty when no row is selected (the page need not be read).
        Gather with ``values[positions]`` / ``pyarrow.Array.take(positions)``.
        """
        first_row = _as_count(first_row, "first_row")
        row_count = _as_count(row_count, "row_count")
        stop = first_row + row_count
        if stop > self._n:
            raise InvalidOptionError(f"page [{first_row}, {stop}) ends past the block's {self._n} rows")
        if row_count == 0:
            return np.empty(0, dtype=_I64)
        if self._ranges is not None:
            starts, ends = self._ranges.starts, self._ranges.ends
            lo = int(ends.searchsorted(first_row, side="right"))  # first range ending after first_row
            hi = int(starts.searchsorted(stop, side="left"))  # first range starting at/after stop
            if hi <= lo:
                return np.empty(0, dtype=_I64)
            if hi - lo == 1 and starts[lo] <= first_row and ends[lo] >= stop:
                return None
            local_starts = np.maximum(starts[lo:hi], first_row) - first_row
            local_ends = np.minimum(ends[lo:hi], stop) - first_row
            return _ranges_to_indices(local_starts, local_ends)
        m = self._mask[first_row:stop]
        if m.all():
            return None
        return np.flatnonzero(m).astype(_I64, copy=False)

    def slice(self, start: int, stop: int) -> "Selection":
        """The selection of rows ``[start, stop)`` as a selection of ``stop - start`` rows."""
        start = _as_count(start, "start")
        stop = _as_count(stop, "stop")
        if not start <= stop <= self._n:
            raise InvalidOptionError(f"slice [{start}, {stop}) is not inside the block's {self._n} rows")
        if self._ranges is not None:
            return Selection._choose_from_ranges(self._ranges.slice(start, stop), stop - start, None)
        return Selection._choose_from_mask(self._mask[start:stop], None)

    # ------------------------------------------------------------ combination
    def intersect(self, other: "RowRanges | Selection") -> "Selection":
        """Rows selected here and in ``other`` (ranges past the block are ignored)."""
        if isinstance(other, RowRanges):
            if self._ranges is not None:
                return Selection._choose_from_ranges(self._ranges & other, self._n, None)
            return Selection._choose_from_mask(self._mask & other.slice(0, self._n).to_mask(self._n), None)
        other = self._check_selection(other)
        if self._ranges is not None and other._ranges is not None:
            return Selection._choose_from_ranges(self._ranges & other._ranges, self._n, None)
        return Selection._choose_from_mask(self.to_mask() & other.to_mask(), None)

    def union(self, other: "RowRanges | Selection") -> "Selection":
        """Rows selected here or in ``other`` (ranges past the block are ignored)."""
        if isinstance(other, RowRanges):
            other = Selection.from_ranges(other.slice(0, self._n), self._n)
        other = self._check_selection(other)
        if self._ranges is not None and other._ranges is not None:
            return Selection._choose_from_ranges(self._ranges | other._ranges, self._n, None)
        return Selection._choose_from_mask(self.to_mask() | other.to_mask(), None)

    def complement(self) -> "Selection":
        """Rows of the block not selected."""
        if self._ranges is not None:
            return Selection._choose_from_ranges(self._ranges.complement(self._n), self._n, None)
        return Selection._choose_from_mask(~self._mask, None)

    __and__ = intersect
    __or__ = union
    __invert__ = complement

    def refine(self, mask) -> "Selection":
        """Keep the selected rows where ``mask`` is True.

        ``mask`` has one entry per *selected* row, in row order -- e.g. the result of
        evaluating the next predicate on values decoded only for the selected rows
        (late materialization). Returns a selection of the same block.
        """
        m = _as_mask(mask)
        if len(m) != self.row_count:
            raise InvalidOptionError(f"mask has {len(m)} entries for {self.row_count} selected rows")
        if self._ranges is not None and len(m) and m.all():
            return Selection._choose_from_ranges(self._ranges, self._n, None)
        if self._ranges is None:
            full = self._mask.copy()
            full[full] = m  # the selected positions take the mask's values, in order
            return Selection._choose_from_mask(full, None)
        if len(self._ranges) <= 1:
            # one run: the refined rows are the mask's runs moved to the run's start
            start = int(self._ranges.starts[0]) if len(self._ranges) else 0
            return Selection._choose_from_ranges(RowRanges.from_mask(m).shift(start), self._n, None)
        # the mask laid out over the candidate ranges' rows; its runs then decide the form
        full = _select.scatter_ranges(np.ascontiguousarray(m).view(np.uint8), self._ranges.starts,
                                      self._ranges.ends, self._n)
        return Selection._choose_from_mask(full, None)

    def _check_selection(self, other) -> "Selection":
        if not isinstance(other, Selection):
            raise InvalidOptionError(f"expected Selection or RowRanges, got {type(other).__name__}")
        if other._n != self._n:
            raise InvalidOptionError(f"selections of blocks of {self._n} and {other._n} rows")
        return other


def _ranges_fit(num_ranges: int, n: int) -> bool:
    """The density rule: keep ranges while there are at most max(1, n // 16) of them."""
    return num_ranges <= max(1, n // RANGES_MAX_DENSITY)


def _check_kind(kind):
    if kind not in (None, "ranges", "bitmap"):
        raise InvalidOptionError(f"kind must be None, 'ranges' or 'bitmap', got {kind!r}")
    return kind
