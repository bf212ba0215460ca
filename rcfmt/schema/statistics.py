"""Column statistics: the one representation shared by footer, page index and pruning.

Min/max are kept in the *stats domain* of the column's logical type (see
:mod:`rcfmt.schema.types`): numpy scalars of the storage dtype for bool, ints, floats, date32
(days) and timestamps (units since epoch); ``int`` (unscaled) for decimal128; ``bytes``
for string (UTF-8) and binary, ordered bytewise unsigned.

Rules every producer follows and every consumer may rely on:

- NaN never enters min/max; ``nan_count`` counts NaN values (floats only).
- If the minimum is a zero it is stored as -0.0, if the maximum is a zero as +0.0, so
  the bounds hold for readers that order -0.0 before +0.0 and for those that do not.
- ``has_min_max`` is False when no non-null, non-NaN value exists or bounds are unknown.
- String/binary bounds may be truncated; ``min_exact``/``max_exact`` say whether the
  bound is a value that occurs. A truncated min is a prefix of the true min (<= it); a
  truncated max is rounded up so that it is still >= every value.
"""
from __future__ import annotations

import numpy as np

from ..runtime.records import fields, record

__all__ = ["StatsArrays"]


@record
class StatsArrays:
    """Statistics of N units (files, blocks or pages) of one column, as parallel arrays.

    ``min``/``max`` are numpy arrays of the storage dtype for numeric, bool and temporal
    types, and object arrays (of ``int`` for decimal128, of ``bytes`` for string/binary)
    otherwise. Entries where ``has_min_max`` is False hold unspecified values.
    """

    row_count: np.ndarray  # int64
    null_count: np.ndarray  # int64
    nan_count: np.ndarray  # int64
    has_min_max: np.ndarray  # bool
    min: np.ndarray
    max: np.ndarray
    min_exact: np.ndarray  # bool
    max_exact: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.row_count)

    def take(self, indices) -> "StatsArrays":
        """The statistics of the units at ``indices`` (array of ints or bool mask)."""
        return StatsArrays(**{name: getattr(self, name)[indices] for name in fields(self)})

    @classmethod
    def from_units(cls, units: list, rows) -> "StatsArrays":
        """The arrays of a list of :class:`ColumnStats` (one per unit of ``rows`` rows);
        ``min``/``max`` are object arrays, None where a unit has no bounds."""
        n = len(units)
        bounds = [np.empty(n, dtype=object), np.empty(n, dtype=object)]
        for k, unit in enumerate(units):
            bounds[0][k], bounds[1][k] = unit.min, unit.max
        return cls(np.asarray(rows, dtype=np.int64),
                   np.fromiter((u.null_count for u in units), np.int64, n),
                   np.fromiter((u.nan_count for u in units), np.int64, n),
                   np.fromiter((u.has_min_max for u in units), bool, n), bounds[0], bounds[1],
                   np.fromiter((u.min_exact for u in units), bool, n),
                   np.fromiter((u.max_exact for u in units), bool, n))

    def unit(self, k: int) -> "ColumnStats":
        """Unit ``k`` as a :class:`ColumnStats`."""
        if not self.has_min_max[k]:
            return ColumnStats(int(self.null_count[k]), int(self.nan_count[k]))
        return ColumnStats(int(self.null_count[k]), int(self.nan_count[k]), self.min[k], self.max[k],
                           bool(self.min_exact[k]), bool(self.max_exact[k]))


# ---------------------------------------------------------------------------- computing
from .._native import stats as _stats  # noqa: E402
from .types import LogicalType, PhysicalKind  # noqa: E402

__all__ += ["ColumnStats", "compute_stats", "truncate_min", "truncate_max"]


@record
class ColumnStats:
    """Statistics of one unit (chunk or page) of one column, in the stats domain."""

    null_count: int
    nan_count: int = 0
    min: object = None  # None when there is no non-null, non-NaN value (or unknown)
    max: object = None
    min_exact: bool = True
    max_exact: bool = True

    @property
    def has_min_max(self) -> bool:
        return self.min is not None and self.max is not None


def truncate_min(value: bytes, limit: int) -> tuple[bytes, bool]:
    """A lower bound of at most ``limit`` bytes: the prefix. Returns (bound, exact)."""
    return (value, True) if len(value) <= limit else (value[:limit], False)


def truncate_max(value: bytes, limit: int) -> tuple[bytes | None, bool]:
    """An upper bound of at most ``limit`` bytes, or None if none exists that short.

    Truncate, then increment the last byte that is not 0xFF and drop what follows: the
    result is greater than every string that starts with the kept prefix."""
    if len(value) <= limit:
        return value, True
    prefix = bytearray(value[:limit])
    while prefix:
        if prefix[-1] != 0xFF:
            prefix[-1] += 1
            return bytes(prefix), False
        prefix.pop()
    return None, False


def compute_stats(values, valid, ltype: LogicalType, truncate: int) -> ColumnStats:
    """Statistics of ``values`` (a ColumnValues) where ``valid`` (bool array or None)."""
    n = len(values)
    null_count = 0 if valid is None else n - int(np.count_nonzero(valid))
    if null_count == n:
        return ColumnStats(null_count=null_count)
    valid_u8 = None if valid is None else valid.view(np.uint8)
    kind = ltype.kind
    if kind == PhysicalKind.BOOL:
        v = values.values if valid is None else values.values[valid]
        return ColumnStats(null_count, 0, np.bool_(v.min()), np.bool_(v.max()))
    if kind == PhysicalKind.VARBINARY:
        offsets = _offsets(values)
        _, lo_i, hi_i = _stats.minmax_binary(offsets, values.values, valid_u8)
        return _binary_stats(values.values, offsets, null_count, int(lo_i[0]), int(hi_i[0]), truncate)
    if ltype.name == "decimal128":
        raw = np.ascontiguousarray(values.values).view(np.uint8).reshape(n, 16)
        count, lo_i, hi_i = _stats.minmax_decimal128(raw, valid_u8)
        return ColumnStats(null_count, 0, int.from_bytes(raw[lo_i].tobytes(), "little", signed=True),
                           int.from_bytes(raw[hi_i].tobytes(), "little", signed=True))
    # numpy's min/max reductions are SIMD, dispatched at run time: several times faster
    # than one scalar loop in a portable build
    v = np.asarray(values.values)
    if null_count:
        v = v[valid]
    nans = 0
    if ltype.is_float:
        is_nan = np.isnan(v)
        nans = int(np.count_nonzero(is_nan))
        if nans:
            v = v[~is_nan]
    if not len(v):
        return ColumnStats(null_count, nans)
    lo, hi = v.min(), v.max()
    scalar = v.dtype.type
    if ltype.is_float:
        lo = -0.0 if lo == 0 else lo
        hi = 0.0 if hi == 0 else hi
    return ColumnStats(null_count, nans, scalar(lo), scalar(hi))


def _offsets(values) -> np.ndarray:
    """The offsets of string/binary values as int32 or int64, contiguous (no copy when
    they already are)."""
    offsets = values.offsets
    if offsets.dtype in (np.int32, np.int64) and offsets.flags.c_contiguous:
        return offsets
    return np.ascontiguousarray(offsets, dtype=np.int64)


def _binary_stats(data: np.ndarray, offsets: np.ndarray, null_count: int, lo_i: int, hi_i: int,
                  truncate: int) -> ColumnStats:
    """Statistics from the rows of the smallest and largest value (-1: none), truncated."""
    if lo_i < 0:
        return ColumnStats(null_count)
    lo, lo_exact = truncate_min(data[offsets[lo_i]:offsets[lo_i + 1]].tobytes(), truncate)
    hi, hi_exact = truncate_max(data[offsets[hi_i]:offsets[hi_i + 1]].tobytes(), truncate)
    if hi is None:
        return ColumnStats(null_count)
    return ColumnStats(null_count, 0, lo, hi, lo_exact, hi_exact)


__all__ += ["compute_page_stats", "binary_chunk_and_page_stats", "binary_stats_from_dictionary"]


def binary_chunk_and_page_stats(values, valid, bounds, truncate: int) -> tuple[ColumnStats, StatsArrays] | None:
    """Statistics of a string/binary chunk and of each of its pages ``[bounds[k],
    bounds[k+1])`` (as arrays) from one native pass over the pages: the chunk's bounds are the
    smallest page minimum and the largest page maximum, compared untruncated, so they
    equal :func:`compute_stats` of the chunk. None when the pages do not tile the
    chunk or one is empty (then compute each apart)."""
    starts, stops = _tiles(bounds, len(values))
    if starts is None:
        return None
    offsets = _offsets(values)
    data = values.values
    valid_u8 = None if valid is None else valid.view(np.uint8)
    _, lo_i, hi_i = _stats.minmax_binary(offsets, data, valid_u8, np.concatenate((starts, stops[-1:])))
    rows = stops - starts
    nulls = np.zeros(len(starts), np.int64) if valid is None else rows - np.add.reduceat(valid, starts)
    pages = _binary_pages(offsets, data, lo_i, hi_i, rows, nulls, truncate)

    def value(i):
        return data[offsets[i]:offsets[i + 1]].tobytes()

    lo_rows = [int(i) for i in lo_i if i >= 0]
    lo = min(lo_rows, key=value) if lo_rows else -1
    hi = max((int(i) for i in hi_i if i >= 0), key=value) if lo_rows else -1
    return _binary_stats(data, offsets, int(nulls.sum()), lo, hi, truncate), pages


#: :func:`binary_stats_from_dictionary` ranks at most this many distinct values (a sort
#: of Python bytes; beyond, one native pass over the rows is as fast)
DICTIONARY_STATS_MAX = 256


def binary_stats_from_dictionary(dictionary, valid, bounds, truncate: int
                                 ) -> tuple[ColumnStats, StatsArrays] | None:
    """:func:`binary_chunk_and_page_stats` from the writer's dictionary of the chunk,
    ``(codes per row, distinct values)``: a page's bounds are its least and greatest
    entries in byte order (the same values, so the same statistics). None when the
    dictionary has more than :data:`DICTIONARY_STATS_MAX` entries or the pages do not
    tile the chunk."""
    codes, distinct = dictionary
    starts, stops = _tiles(bounds, len(codes))
    if starts is None or len(distinct) > DICTIONARY_STATS_MAX:
        return None
    offsets = _offsets(distinct)
    data = distinct.values
    entries = [data[offsets[i]:offsets[i + 1]].tobytes() for i in range(len(distinct))]
    order = np.array(sorted(range(len(entries)), key=entries.__getitem__), dtype=np.int64)
    rank = np.empty(len(entries), np.uint8)
    rank[order] = np.arange(len(entries))
    ranks = rank[codes]
    rows = stops - starts
    if valid is None:
        nulls = np.zeros(len(starts), np.int64)
        lows, highs = np.minimum.reduceat(ranks, starts), np.maximum.reduceat(ranks, starts)
    else:  # null rows out of both reductions (their codes name whatever fills their slot)
        nulls = rows - np.add.reduceat(valid, starts)
        lows = np.minimum.reduceat(np.where(valid, ranks, 255), starts)
        highs = np.maximum.reduceat(np.where(valid, ranks, 0), starts)
    empty = nulls == rows  # (their ranks are the sentinels: no entry to look up)
    top = max(len(order) - 1, 0)
    lo_rows = np.where(empty, -1, order[np.minimum(lows, top)] if len(order) else -1)
    hi_rows = np.where(empty, -1, order[np.minimum(highs, top)] if len(order) else -1)
    pages = _binary_pages(offsets, data, lo_rows, hi_rows, rows, nulls, truncate)
    if nulls.sum() == len(codes):
        return ColumnStats(len(codes)), pages
    some = nulls < rows
    lo, hi = int(order[lows[some].min()]), int(order[highs[some].max()])
    return _binary_stats(data, offsets, int(nulls.sum()), lo, hi, truncate), pages


def _binary_pages(offsets, data, lo_i, hi_i, rows, nulls, truncate: int) -> StatsArrays:
    """Pages' statistics from the rows of their least and greatest values (-1: none),
    truncated in one native call."""
    has, mins, maxs, min_exact, max_exact = _stats.truncated_bounds(
        offsets, data, np.ascontiguousarray(lo_i, np.int64), np.ascontiguousarray(hi_i, np.int64), truncate)
    return StatsArrays(np.asarray(rows, np.int64), np.asarray(nulls, np.int64), np.zeros(len(rows), np.int64),
                       has, mins, maxs, min_exact, max_exact)


def _tiles(bounds, n: int):
    """``(starts, stops)`` of pages ``[bounds[k], bounds[k+1])`` that tile ``n`` rows, none
    empty; ``(None, None)`` otherwise."""
    starts = np.asarray(bounds[:-1], dtype=np.int64)
    stops = np.asarray(bounds[1:], dtype=np.int64)
    if not len(starts) or not (np.array_equal(starts[1:], stops[:-1]) and starts[0] == 0 and stops[-1] == n
                               and not np.any(stops == starts)):
        return None, None
    return starts, stops


class _Int64View:
    """Low words of decimals that fit 64 bits, seen as int64 values."""

    def __init__(self, values: np.ndarray):
        self.values = values


_INT64 = LogicalType("int64")


def _vectorizable(ltype: LogicalType) -> bool:
    return ltype.kind == PhysicalKind.FIXED and ltype.name != "decimal128"


def compute_page_stats(values, valid, ltype: LogicalType, bounds, truncate: int,
                       chunk: ColumnStats | None = None) -> StatsArrays:
    """Statistics of each page ``[bounds[k], bounds[k+1])`` of a chunk, as arrays.

    Numeric pages are reduced all at once with ``reduceat`` (null slots masked out with
    sentinels; numpy's SIMD reductions, no Python per page): ``min``/``max`` arrays of
    the storage dtype, int64 for decimal128 chunks whose values all fit in 64 bits.
    Strings, bools and wider decimals are computed page by page (object arrays of the
    stats domain). ``chunk``: the chunk's statistics, when known (they tell whether its
    decimals fit in 64 bits without a pass over them).
    """
    starts = np.asarray(bounds[:-1], dtype=np.int64)
    stops = np.asarray(bounds[1:], dtype=np.int64)
    rows = stops - starts
    if ltype.name == "decimal128" and len(starts) and not np.any(stops == starts):
        words = np.ascontiguousarray(values.values).view("<i8").reshape(-1, 2)
        if chunk is not None and chunk.has_min_max and not chunk.null_count:  # its bounds tell
            fits = -(1 << 63) <= int(chunk.min) and int(chunk.max) < (1 << 63)
        else:  # (null slots hold fill values: look at every slot)
            fits = np.array_equal(words[:, 1], words[:, 0] >> 63)
        if fits:
            # every value fits in 64 bits: the pages' bounds are their low words' (int64)
            return compute_page_stats(_Int64View(words[:, 0].copy()), valid, _INT64, bounds, truncate)
    if ltype.kind == PhysicalKind.VARBINARY:
        both = binary_chunk_and_page_stats(values, valid, bounds, truncate)
        if both is not None:
            return both[1]
    if not _vectorizable(ltype) or len(starts) == 0 or np.any(stops == starts):
        return StatsArrays.from_units(
            [compute_stats(values.slice(a, b), None if valid is None else valid[a:b], ltype, truncate)
             for a, b in zip(starts, stops)], rows)
    v = values.values
    nulls = np.zeros(len(starts), np.int64) if valid is None else rows - np.add.reduceat(valid, starts)
    if ltype.is_float:
        nan = np.isnan(v)
        if valid is not None:
            nan &= valid
        nans = np.add.reduceat(nan, starts).astype(np.int64)
        if nans.any() or (valid is not None and nulls.any()):
            # NaN must not enter min/max, and a filled null slot may hold a NaN
            # copied from a neighbour: mask both out with +-inf sentinels
            skip = nan if valid is None else (nan | ~valid)
            lo = np.fmin.reduceat(np.where(skip, np.inf, v), starts)
            hi = np.fmax.reduceat(np.where(skip, -np.inf, v), starts)
            counted = rows - nulls - nans
        else:
            lo, hi, counted = np.minimum.reduceat(v, starts), np.maximum.reduceat(v, starts), rows - nulls
        lo = np.where(lo == 0, -0.0, lo).astype(v.dtype)
        hi = np.where(hi == 0, 0.0, hi).astype(v.dtype)
    else:
        nans = np.zeros(len(starts), np.int64)
        counted = rows - nulls
        if valid is None or not nulls.any():
            lo, hi = np.minimum.reduceat(v, starts), np.maximum.reduceat(v, starts)
        else:
            # a page's leading null slots hold the previous page's last value: mask them
            info = np.iinfo(v.dtype)
            lo = np.minimum.reduceat(np.where(valid, v, info.max), starts)
            hi = np.maximum.reduceat(np.where(valid, v, info.min), starts)
    has = counted > 0
    return StatsArrays(rows, nulls.astype(np.int64), nans, has, lo, hi, has.copy(), has.copy())
