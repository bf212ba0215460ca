"""Pruning whole blocks, the first part of planning a scan (:class:`BlockPruning`):
footer statistics, then on object storage the page indexes (fetched together), then
split-block bloom filters, then bitmap indexes -- each stage asked only about the
blocks the stages before it kept, each counted in the scan's statistics and listed in
``pruned``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..storage.fetch import coalesce, one_read
from .plan import PRUNE_STAGES
from .scheduling import PROBE_BLOCKS, Probe

if TYPE_CHECKING:  # (the stages' modules load with the first filter: an unfiltered scan needs none)
    from ..index.bitmap.answer import BlockAnswer

__all__ = ["BlockPruning", "INDEX_NARROWS"]

#: a bitmap index that leaves some of a block's filter undecided narrows the rows the
#: rest is evaluated on only when it leaves at most 1/INDEX_NARROWS of them
INDEX_NARROWS = 8


class BlockPruning:
    """The blocks of the scan ``query`` (:class:`~rcfmt.scan.query.ScanQuery`) that may
    hold a matching row (:meth:`run`; ``pages``: the scan's
    :class:`~rcfmt.scan.page_pruning.PageIndexes`, ``stats``: its
    :class:`~rcfmt.scan.scan_stats.ScanStats`). After it: ``pruned`` (the blocks each
    stage pruned), ``answers`` (what bitmap indexes said of the blocks kept) and
    ``filter_stats`` (the filter columns' block statistics, read by the first stage)."""

    def __init__(self, query, pages, stats):
        self.query, self.file, self.pages, self.stats = query, query.file, pages, stats
        self.nnf = query.nnf
        self.filter_ids = query.filter_ids
        self._gap = query.gap
        self.pruned: dict[str, list[int]] = {stage: [] for stage in PRUNE_STAGES}
        self.answers: dict[int, BlockAnswer] = {}
        self.filter_stats: dict = {}

    def run(self) -> list[int]:
        """The blocks kept, in order (each stage counted in ``stats``)."""
        query = self.query
        n = self.file.num_blocks
        lo, hi = query.block_range
        if self.nnf is None:
            return list(range(lo, hi))
        from ..predicate.prune import may_match  # (a filter's: an unfiltered scan loads no pruning)

        stats = self.filter_stats = {name: self.file.block_stats(name) for name in query.filter_names}
        keep = may_match(self.nnf, stats, n)
        keep[:lo] = False
        keep[hi:] = False
        self.stats.blocks_pruned_stats += int((hi - lo) - keep.sum())
        self.pruned["stats"] = [lo + int(b) for b in np.flatnonzero(~keep[lo:hi])]
        if self.file.remote and query.use_page_index and keep.any():
            keep = self._remote_page_keep(keep)
        if query.use_bloom and keep.any() and not (self.file.remote and query.use_page_index and keep.sum() < 2):
            by_bloom = self._bloom_keep(np.flatnonzero(keep))
            self.stats.blocks_pruned_bloom += int(keep.sum() - by_bloom.sum())
            self.pruned["bloom"] = [int(b) for b in np.flatnonzero(keep & ~by_bloom)]
            keep = by_bloom
        kept = [int(b) for b in np.flatnonzero(keep)]
        if query.use_bitmap_index and kept and self.file.bitmap_columns:
            kept = self._index_keep(kept)
        return kept

    def _index_keep(self, blocks: list[int]) -> list[int]:
        """Among ``blocks``, those whose bitmap indexes leave rows that may match; what
        the indexes said of each is kept for the scan of the block (``answers``)."""
        from ..index.bitmap.answer import answer_block, leaf_columns

        file = self.file
        cols = {name: c for name in leaf_columns(self.nnf)
                if (c := self.filter_ids.get(name)) is not None and c in file.bitmap_columns}
        if not cols:
            return blocks
        scratch = bytearray()

        def answer(b: int, buf, base: int) -> BlockAnswer | None:
            """What the indexes say of block ``b``: from ``buf`` (bytes from ``base`` on,
            fetched already) or, locally, one read of its adjacent entries into ``scratch``."""
            nonlocal scratch
            here, at = buf, base
            if here is None:
                span = one_read((file.bitmap_span(b, c) for c in cols.values()), self._gap)
                if span is not None:
                    lo, hi = span
                    if len(scratch) < hi - lo:
                        scratch = bytearray(hi - lo)
                    here, at = memoryview(scratch)[: hi - lo], lo
                    file.read_into(lo, here)
            entries = {name: e for name, c in cols.items() if (e := file.bitmap_entry(b, c, here, at)) is not None}
            return answer_block(self.nnf, entries, int(file.footer.blocks[b]["row_count"])) if entries else None

        # On object storage the entries of the first PROBE_BLOCKS blocks come in one request
        # (coalesced), and the others' in one more only if those decided something: the
        # entries of an index that does not narrow this filter cost bytes for nothing
        # (Q6 on lineitem in natural order: its 14 MB of bitmaps). Locally each block's
        # (adjacent) entries are read with one read into a reused buffer, while worth it.
        # (One thread: per block the Python around the native passes is most of the time,
        # and threads measured slower, contending for the GIL.)
        probe = Probe()
        kept = []
        for batch in ([blocks[:PROBE_BLOCKS], blocks[PROBE_BLOCKS:]] if file.remote else [blocks]):
            if not batch or not probe.worth_asking():
                kept.extend(batch)
                continue
            buf, base = self._prefetch_spans([file.bitmap_span(b, c) for b in batch for c in cols.values()]) \
                if file.remote else (None, 0)
            for b in batch:
                a = answer(b, buf, base) if buf is not None or probe.worth_asking() else None
                if a is not None:
                    rows = int(file.footer.blocks[b]["row_count"])
                    probe.note(not a.count or a.exact or a.count * INDEX_NARROWS <= rows)
                    if not a.count:
                        self.stats.blocks_pruned_index += 1
                        self.pruned["bitmap"].append(b)
                        continue
                    self.answers[b] = a
                kept.append(b)
        return kept

    def _prefetch_spans(self, spans, local: bool = False):
        """On object storage (and locally if ``local``), the bytes of ``spans``
        (``(offset, length)``; length 0: none) in as few reads as their coalesced
        ranges allow, as ``(buffer, base)``; ``(None, 0)`` otherwise or for a single
        span (each is then read apart)."""
        spans = sorted((o, n) for o, n in spans if n)
        if not (self.file.remote or local) or len(spans) < 2:
            return None, 0
        lo = np.array([o for o, _ in spans], np.int64)
        starts, ends = coalesce(lo, lo + np.array([n for _, n in spans], np.int64), self._gap)
        return self.file.read_ranges(starts, ends), int(starts[0])

    def _remote_page_keep(self, keep: np.ndarray) -> np.ndarray:
        """On object storage, blocks are pruned by their page indexes before any bloom
        filter is asked: the page indexes of every block kept by statistics come in one
        request, which the scan needs anyway, while bloom filters cost a request of their
        own -- asked only when more than one block is left, since for one block the probe
        could save at most the request it costs."""
        kept = [int(b) for b in np.flatnonzero(keep)]
        self.pages.prefetch(kept)
        keep = keep.copy()
        for b in kept:
            ranges = self.pages.planned[b] = self.pages.row_ranges(b, {})
            if ranges.row_count == 0:
                keep[b] = False
                self.stats.blocks_pruned_pages += 1
                self.pruned["pages"].append(b)
        return keep

    def _bloom_keep(self, blocks: np.ndarray) -> np.ndarray:
        """Among ``blocks`` (kept by stats), which may match once bloom filters are asked.
        Returns a mask over all blocks."""
        from ..index.bloom import chunks as bloom_filters
        from ..predicate.nnf import fold, leaves

        keep = np.zeros(self.file.num_blocks, bool)
        keep[blocks] = True
        probes = [leaf for leaf in leaves(self.nnf) if bloom_filters.can_probe(leaf)]
        if not probes:
            return keep
        cache = {}
        buf, base = self._prefetch_blooms(blocks, {self.filter_ids[leaf.column.name] for leaf in probes})

        def leaf_fn(leaf):
            if not bloom_filters.can_probe(leaf):
                return np.ones(len(blocks), bool)
            col = self.filter_ids[leaf.column.name]
            out = np.ones(len(blocks), bool)
            for j, b in enumerate(blocks):
                key = (int(b), col)
                if key not in cache:
                    cache[key] = bloom_filters.read_filter(self.file, int(b), col, buf, base)
                bf = cache[key]
                if bf is not None:
                    out[j] = bloom_filters.may_contain(bf, leaf)
            return out

        mask = fold(self.nnf, leaf_fn, np.logical_and, np.logical_or)
        result = np.zeros(self.file.num_blocks, bool)
        result[blocks[mask]] = True
        return result

    def _prefetch_blooms(self, blocks, cols):
        """On object storage: the bloom filters of ``cols`` in ``blocks``, fetched in as few
        requests as their coalesced ranges allow, as ``(buffer, base)``; ``(None, 0)``
        locally (each filter is then read when probed)."""
        if not self.file.remote or len(blocks) < 2:
            return None, 0
        footer = self.file.footer
        return self._prefetch_spans((int(footer.chunks[c][b]["bloom_offset"]), int(footer.chunks[c][b]["bloom_length"]))
                                    for b in blocks for c in cols)
