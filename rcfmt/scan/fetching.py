"""The bytes a block's plan needs (:class:`Reads`): per column what of its chunk the
selected rows need (the whole chunk, the pages holding them, or nothing), those pages'
byte ranges (with the chunk's dictionary page), merged across columns into as few reads
as the coalescing rule allows, and read into one buffer. The planner works the ranges
out; the executor reads them.
"""
from __future__ import annotations

import numpy as np

from .._native import pageindex as _pageindex
from ..storage.fetch import coalesce
from .scan_stats import ScanStats
from ..predicate.selection import Selection

__all__ = ["Reads", "dense"]


def dense(block: int, selection: Selection, columns) -> bool:
    """Whether the selected rows of ``block`` are worth reading the whole chunks of
    ``columns`` (a :class:`~rcfmt.scan.block_exec.BlockColumns`) for (one read): at
    least as many as a column has pages, and spanning a quarter of the block or more.
    Either way the executor decodes only the pages holding a selected row and gathers
    the rows; for fewer or clustered rows (lookups, narrow windows) the page index names
    those pages and only their bytes are read."""
    if selection.row_count * len(columns.cols) < columns.pages[block]:
        return False
    first, last = selection.span()
    return 4 * (last - first + 1) >= selection.num_rows


class Reads:
    """The byte ranges of a scan's file (``query``: its
    :class:`~rcfmt.scan.query.ScanQuery`; ``pages``: its
    :class:`~rcfmt.scan.page_pruning.PageIndexes`) and their reads (see the module)."""

    def __init__(self, query, pages):
        self.file, self.pages = query.file, pages
        self._gap = query.gap

    def chunks(self, columns, block: int):
        """``(starts, ends)``: the whole chunks of ``columns`` (a
        :class:`~rcfmt.scan.block_exec.BlockColumns`) in ``block``, coalesced."""
        starts, ends, merged = columns.ranges(block)
        return (starts, ends) if merged else coalesce(starts, ends, self._gap if self.file.remote else 0)

    def plan_column(self, block: int, col: int, selection: Selection, cache: dict, stats: ScanStats) -> tuple:
        """What of chunk ``col`` the rows ``selection`` needs: ``("whole",)`` (every
        row: the chunk is walked without its page index), ``("pages", page_ids)`` (the
        pages holding selected rows) or ``("none",)``."""
        if 0 < selection.row_count == selection.num_rows:
            stats.pages_total += int(self.file.footer.chunks[col][block]["page_count"])
            return ("whole",)
        index = self.pages.page_index(block, col, cache)
        stats.pages_total += len(index.entries)
        page_ids = selection.pages_holding(index.first, index.counts)
        if not len(page_ids):
            return ("none",)
        return ("pages", page_ids)

    def column_ranges(self, block: int, col: int, plan: tuple, cache: dict):
        """``(lo, hi)`` of the byte ranges ``plan`` needs of one column: its whole chunk,
        or its pages and its dictionary page (which precedes every data page); None
        for a plan that reads nothing."""
        rec = self.file.footer.chunks[col][block]
        offset = int(rec["offset"])
        if plan[0] == "whole":
            return np.array([offset], np.int64), np.array([offset + int(rec["length"])], np.int64)
        if plan[0] != "pages":
            return None
        entries = self.pages.page_index(block, col, cache).entries
        lo = entries["offset"][plan[1]].astype(np.int64)
        return _with_dictionary(rec, lo, lo + entries["length"][plan[1]].astype(np.int64))

    def byte_ranges(self, block: int, plans: dict, cache: dict):
        """The bytes ``plans`` need, for every column at once, as sorted disjoint
        ``(starts, ends)`` (None if nothing). A column's ranges closer than
        the scan's gap (:data:`~rcfmt.storage.fetch.LOCAL_COALESCE_GAP` locally) are merged; ranges of different columns only when they touch
        (the chunks of a block are adjacent in the file, so adjacent projected columns
        cost one read) -- and on object storage, where a request costs as much as ~1 MB
        of transfer, whenever they are closer than ``FetchOptions.coalesce_gap``."""
        return self.merge([r for col, plan in plans.items()
                            if (r := self.column_ranges(block, col, plan, cache)) is not None])

    def merge(self, parts: list):
        """Per-column ``(lo, hi)`` ranges merged by :meth:`byte_ranges`' rule: sorted
        disjoint ``(starts, ends)``, or None for no part."""
        if not parts:
            return None
        if len(parts) == 1:
            return coalesce(*parts[0], self._gap)
        return _pageindex.merge_ranges(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                                       np.repeat(np.arange(len(parts), dtype=np.int64), [len(p[0]) for p in parts]),
                                       self._gap, self._gap if self.file.remote else 0)

    def fetch(self, block: int, plans: dict, cache: dict, stats: ScanStats):
        """Read the bytes ``plans`` need (:meth:`byte_ranges`): ``(buffer, base)``, file
        offset ``base`` at ``buffer[0]``; ranges apart are read apart into the same
        buffer (:meth:`RcfmtFile.read_ranges`), never the bytes between them."""
        return self.read(self.byte_ranges(block, plans, cache), stats)

    def read(self, ranges, stats: ScanStats, pool=None):
        """``(buffer, base)`` of merged ``ranges`` (``(starts, ends)``; None: nothing
        to read), their bytes counted; ``pool``: see :meth:`RcfmtFile.read_ranges
        <rcfmt.file.reader.RcfmtFile.read_ranges>`."""
        if ranges is None:
            return None, 0
        starts, ends = ranges
        buf = self.file.read_ranges(starts, ends, pool)
        stats.bytes_read += int((ends - starts).sum())
        return buf, int(starts[0])

    def planned_bytes(self, block: int, plans: dict, cache: dict) -> int:
        """Bytes of the chunks and pages the ``plans`` of :meth:`plan_column` name (not
        the gaps a coalesced read would add)."""
        parts = (self.column_ranges(block, col, plan, cache) for col, plan in plans.items())
        return sum(int((hi - lo).sum()) for r in parts if r is not None for lo, hi in [r])

    def table_ranges(self, block: int, cols, tables: list):
        """The bytes of the pages of ``tables`` (per column of ``cols``, a page table with
        file offsets: :meth:`PageIndex.table <rcfmt.index.page.PageIndex.table>`) and of
        each column's dictionary page, merged as :meth:`byte_ranges` merges them."""
        return _pageindex.page_ranges(tables, self.file.footer.chunk_fields(_DICTIONARY_FIELDS)[block, cols],
                                      self._gap, self._gap if self.file.remote else 0)


#: a chunk record's fields its dictionary page is found by (at the chunk's offset, before every data page)
_DICTIONARY_FIELDS = ("offset", "dictionary_length")


def _with_dictionary(rec, lo: np.ndarray, hi: np.ndarray):
    """A column's page ranges ``(lo, hi)`` with its chunk's dictionary page (chunk
    record ``rec``) first, when it has one: it precedes every data page."""
    length = int(rec["dictionary_length"])
    if not length:
        return lo, hi
    offset = int(rec["offset"])
    return np.concatenate(([offset], lo)), np.concatenate(([offset + length], hi))
