"""A scan's page indexes (:class:`PageIndexes`): a block's page-index records (fetched
together for every column the scan needs, or all blocks' at once on object storage),
and the rows they leave to a filter -- per column a mask over its pages, the comparisons
on one column folded into one interval and tested in one native pass, masks of
different columns turned into row ranges and intersected or united.

The planner prunes pages with it and the executor finds the pages holding selected rows
in it; both share the per-block ``cache`` of the records (``{(block, column):
PageIndex}``) that one block's planning and execution pass along.
"""
from __future__ import annotations

import threading

import numpy as np

from .._native import pageindex as _pageindex
from ..index.page import PageIndex, interval_page_mask, page_interval_kind
from ..storage.fetch import coalesce
from .scheduling import Probe
from ..predicate.selection import RowRanges

__all__ = ["PageIndexes"]


class PageIndexes:
    """The page indexes of the scan ``query`` (:class:`~rcfmt.scan.query.ScanQuery`)
    asks of its file (see the module). ``blocks``: the blocks the scan visits, once
    block pruning has kept them (remote files prefetch theirs together);
    ``planned``: row ranges of blocks worked out before their scan (remote planning)."""

    def __init__(self, query):
        self.query = query
        self.file = query.file
        self.blocks: list[int] = []
        self.planned: dict[int, RowRanges] = {}
        # does the page index prune pages for this filter here? (remote: fetched with the plan)
        self._probe = Probe(enabled=not query.file.remote)
        self._prefetch_lock = threading.Lock()
        self._page_index_bytes = None

    def page_index(self, block: int, col: int, cache: dict) -> PageIndex:
        key = (block, col)
        if key not in cache:
            # first use in this block: the entries of every column the scan needs, those
            # the open file holds from earlier scans, the others fetched together
            held = self.file.page_index_cache
            wanted = []
            for c in {*self.query.row_filter_ids.values(), *self.query.col_ids, col}:
                if (block, c) not in cache:
                    got = held.get((block, c))
                    if got is None:
                        wanted.append(c)
                    else:
                        cache[(block, c)] = _alike(got, block, cache)
            if key in cache:
                return cache[key]
            prefetched = self._prefetched_page_indexes(block)
            if prefetched is not None and key in prefetched[2]:
                buf, base, covered = prefetched
                found = {c: self.file.page_index(block, c, buf, base) for c in wanted if (block, c) in covered}
            else:
                found = self.file.page_indexes(block, wanted)
            for c, entries in found.items():
                cache[(block, c)] = self.file.keep_page_index(block, c, _alike(PageIndex(entries), block, cache))
            if key not in cache:
                index = _alike(PageIndex(self.file.page_index(block, col)), block, cache)
                cache[key] = self.file.keep_page_index(block, col, index)
        return cache[key]

    def tables(self, block: int, cols, selection, cache: dict) -> list:
        """Per column of ``cols``, the page table of its pages holding a row ``selection``
        selects (:meth:`PageIndex.table <rcfmt.index.page.PageIndex.table>`, file offsets)."""
        indexes = [self.page_index(block, col, cache) for col in cols]
        holding: dict[int, np.ndarray] = {}  # (columns paged alike share their rows' pages: :func:`_alike`)
        pages = []
        for index in indexes:
            found = holding.get(id(index.first))
            if found is None:
                found = holding[id(index.first)] = selection.pages_holding(index.first, index.counts)
            pages.append(found)
        return _pageindex.page_tables([i.raw for i in indexes],
                                      np.array([len(i.entries) for i in indexes], np.int64),
                                      np.array([i.entries.dtype.itemsize for i in indexes], np.int64), pages)

    def _prefetched_page_indexes(self, block: int):
        """On object storage, when the scan will visit more than one block: the
        page-index records of every column it needs in every block it keeps, fetched by
        the first block that asks (or by block pruning), in as few
        requests as their coalesced ranges allow (one, for the lineitem file's 46
        blocks), instead of one request per block. ``(buffer, base, {(block, column)})``
        or None (local files, a single block)."""
        if self._page_index_bytes is None and self.file.remote and len(self.blocks) >= 2:
            self.prefetch(self.blocks)
        return self._page_index_bytes

    def prefetch(self, blocks: list[int]) -> None:
        """Fetch the page-index records of every column the scan needs in ``blocks``,
        once (:meth:`_prefetched_page_indexes`)."""
        with self._prefetch_lock:
            if self._page_index_bytes is None:
                footer = self.file.footer
                cols = sorted({*self.query.row_filter_ids.values(), *self.query.col_ids})
                spans = []
                for b in blocks:
                    for c in cols:
                        rec = footer.chunks[c][b]
                        if int(rec["page_index_length"]):
                            spans.append((int(rec["page_index_offset"]), int(rec["page_index_length"]), (b, c)))
                if not spans:
                    self._page_index_bytes = (None, 0, frozenset())
                else:
                    spans.sort()
                    lo = np.array([o for o, _, _ in spans], np.int64)
                    starts, ends = coalesce(lo, lo + np.array([n for _, n, _ in spans], np.int64),
                                             self.query.gap)
                    buf = self.file.read_ranges(starts, ends)
                    self._page_index_bytes = (buf, int(starts[0]), frozenset(k for _, _, k in spans))

    def row_ranges(self, block: int, cache: dict) -> RowRanges:
        """Rows of ``block`` that may match, from the page index of the filter columns.

        Leaves on one column combine as masks over that column's pages (its pages line
        up); only masks of different columns become row ranges, intersected (AND) or
        united (OR)."""
        rows = int(self.file.footer.blocks[block]["row_count"])
        nnf = self.query.nnf
        if nnf is None or not self.query.use_page_index:
            return RowRanges.full(rows)
        planned = self.planned.get(block)
        if planned is not None:
            return planned
        if not self._probe.worth_asking():
            return RowRanges.full(rows)
        ranges = self._as_ranges(self._page_masks(nnf, block, cache), block, cache, rows)
        self._probe.note(ranges.row_count < rows)
        return ranges

    def _page_masks(self, expr, block: int, cache: dict):
        """``{column: page keep mask}`` when every leaf of ``expr`` is on one column,
        else a RowRanges."""
        from ..predicate.nnf import BoundAnd, BoundListContains, BoundOr  # (a filter's: see interval_page_masks)
        from ..predicate.prune import leaf_may_match

        if isinstance(expr, (BoundAnd, BoundOr)):
            is_and = isinstance(expr, BoundAnd)
            masks: dict[int, np.ndarray] = {}
            ranges: list[RowRanges] = []
            children = expr.children
            if is_and:  # a column's comparisons: one native pass over its page index
                masks, children = self.interval_page_masks(children, block, cache)
            for child in children:
                part = self._page_masks(child, block, cache)
                if isinstance(part, RowRanges):
                    ranges.append(part)
                    continue
                ((col, keep),) = part.items()
                masks[col] = keep if col not in masks else (masks[col] & keep if is_and else masks[col] | keep)
            if not ranges and len(masks) == 1:
                return masks
            rows = int(self.file.footer.blocks[block]["row_count"])
            ranges += [self._as_ranges({col: keep}, block, cache, rows) for col, keep in masks.items()]
            out = ranges[0]
            for r in ranges[1:]:
                out = out.intersect(r) if is_and else out.union(r)
            return out
        if isinstance(expr, BoundListContains):  # element pages count elements, not rows
            return RowRanges.full(int(self.file.footer.blocks[block]["row_count"]))
        if page_interval_kind(expr) is not None:  # (a lookup's one comparison: the native pass too)
            return self.interval_page_masks((expr,), block, cache)[0]
        col = self.query.filter_ids[expr.column.name]
        return {col: leaf_may_match(expr, self.page_index(block, col, cache).stats(self.file, block, col))}

    def interval_page_masks(self, children, block: int, cache: dict):
        """``({column: page keep mask}, other children)``: the comparisons among
        ``children`` (ANDed) on columns whose page bounds the native kernel reads, folded
        per column into one interval and tested in one pass over its page index."""
        from ..predicate.intervals import Interval  # (a filter's: an unfiltered scan loads no predicate code)

        intervals: dict[int, tuple[int, Interval]] = {}
        rest = []
        for child in children:
            kind = page_interval_kind(child)
            if kind is None:
                rest.append(child)
                continue
            col = self.query.filter_ids[child.column.name]
            intervals.setdefault(col, (kind, Interval()))[1].add(child.op, child.value)
        masks = {col: interval_page_mask(self.page_index(block, col, cache).entries, kind, interval)
                 for col, (kind, interval) in intervals.items()}
        return masks, rest

    def _as_ranges(self, part, block: int, cache: dict, rows: int) -> RowRanges:
        """``part`` (a RowRanges, or ``{column: page keep mask}``) as row ranges."""
        if isinstance(part, RowRanges):
            return part
        ((col, keep),) = part.items()
        if keep.all():
            return RowRanges.full(rows)
        index = self.page_index(block, col, cache)
        return RowRanges.from_pages(index.first, index.counts, keep)


def _alike(index: PageIndex, block: int, cache: dict) -> PageIndex:
    """``index`` (just read, of a chunk of ``block``) holding the very arrays of first
    rows and counts of an index of the block paged alike that ``cache`` met before, when
    there is one (most of a block's columns are paged alike): searches for the pages
    holding rows then serve them all, found by identity (:meth:`PageIndexes.tables`).
    The block's distinct layouts are kept in ``cache`` under ``("layouts", block)``."""
    layouts = cache.setdefault(("layouts", block), [])
    first = index.first
    for other in layouts:
        if other.first is first:
            return index
        if len(other.first) == len(first) and np.array_equal(other.first, first) \
                and np.array_equal(other.counts, index.counts):  # (a list's elements: counted in values, not rows)
            index.first, index.counts = other.first, other.counts
            return index
    layouts.append(index)
    return index
