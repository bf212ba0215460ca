"""The page index as a scan reads it (docs/FORMAT.md, "Page index"): one column
chunk's page records with their rows (:class:`PageIndex`), and which comparisons the
native interval kernel (``_native/pageindex.pyx``) tests on the pages' bounds.

The records' bytes are parsed and checked by :meth:`rcfmt.file.reader.RcfmtFile.page_index`
(the writer builds them with each page, :mod:`rcfmt.format.layout` defines the record);
this module is what the scan keeps of them per chunk.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._native import pageindex as _pageindex
from ..schema.types import PhysicalKind

if TYPE_CHECKING:  # (loaded with the first filter: an unfiltered scan reads page indexes without it)
    from ..predicate.intervals import Interval


class PageIndex:
    """The page-index records of one column chunk (checked when read: the pages tile
    the block) with their first rows and row counts as int64, converted once, and the
    pages' statistics (computed on first use, shared by every leaf on the column)."""

    __slots__ = ("entries", "raw", "first", "counts", "_stats")

    def __init__(self, entries: np.ndarray):
        self.entries = entries
        self.raw = np.frombuffer(entries, np.uint8)  # (the records' bytes, as the native kernels read them)
        self.first = entries["first_row"].astype(np.int64)
        self.counts = entries["row_count"].astype(np.int64)
        self._stats = None

    def table(self, pages: np.ndarray) -> np.ndarray:
        """Pages ``pages`` (int64 page numbers, in order) as the block executor reads
        them: int64 (4, n), each page's file offset, row count, length and first row
        (one native pass over their records)."""
        e = self.entries
        if not len(pages):
            return np.zeros((4, 0), np.int64)
        return _pageindex.page_table(self.raw, len(e), e.dtype.itemsize, np.ascontiguousarray(pages, np.int64))

    def stats(self, file, block: int, col: int):
        if self._stats is None:
            self._stats = file.page_stats(block, col, self.entries)
        return self._stats


def stats_kind(ltype) -> int | None:
    """How page-index bounds of ``ltype`` are read by the native interval kernel (None:
    not read there; float32 bounds compare in float32 in the Python path)."""
    if ltype.name == "float64":
        return _pageindex.KIND_FLOAT64
    if ltype.name == "decimal128":
        return _pageindex.KIND_DECIMAL128
    if ltype.name in ("date32", "timestamp"):
        return _pageindex.KIND_SIGNED
    if ltype.is_integer:
        return _pageindex.KIND_SIGNED if ltype.is_signed else _pageindex.KIND_UNSIGNED
    return None


def page_interval_kind(leaf) -> int | None:
    """The stats kind of ``leaf``'s column when ``leaf`` is a comparison the native page
    kernel tests exactly (an int literal on integer-like bounds, a non-NaN number on
    float64 bounds, bytes on string and binary bounds: :func:`bytes_pages`), else None."""
    from ..predicate.intervals import Interval

    if not Interval.holds(leaf):
        return None
    value = leaf.value
    if leaf.column.ltype.kind == PhysicalKind.VARBINARY:
        return _pageindex.KIND_BYTES if isinstance(value, bytes) else None
    kind = stats_kind(leaf.column.ltype)
    if kind is None or isinstance(value, (bool, np.bool_)):
        return None
    if kind == _pageindex.KIND_FLOAT64:
        return kind if isinstance(value, (int, float, np.integer, np.floating)) and value == value else None
    return kind if isinstance(value, (int, np.integer)) else None


def interval_page_mask(entries: np.ndarray, kind: int, interval: Interval) -> np.ndarray:
    """Bool per page of ``entries`` (one chunk's page-index records): may the page hold
    a value inside ``interval`` (of stats kind ``kind``, :func:`page_interval_kind`)?
    One native pass over the records' bounds."""
    keep = np.empty(len(entries), np.uint8)
    if len(entries):
        raw = np.frombuffer(entries, np.uint8)
        width = entries.dtype["min"].itemsize
        if kind == _pageindex.KIND_BYTES:
            lo = np.frombuffer(interval.lo if interval.lo_kind else b"", np.uint8)
            hi = np.frombuffer(interval.hi if interval.hi_kind else b"", np.uint8)
            _pageindex.bytes_pages(raw, len(entries), entries.dtype.itemsize, width, lo, interval.lo_kind, hi,
                                   interval.hi_kind, keep)
        else:
            _pageindex.interval_pages(raw, len(entries), entries.dtype.itemsize, width, kind, interval.lo,
                                      interval.lo_kind, interval.hi, interval.hi_kind, keep)
    return keep.view(bool)
