"""The native programs of a scan (:class:`Programs`), each built once per scan on first
use: the block executor's view of a list of flat columns
(:class:`~rcfmt.scan.block_exec.BlockColumns`) and the filter programs
(:class:`~rcfmt.scan.block_exec.BlockFilter`) of the scan's filter and of the residuals
bitmap indexes leave, alone or with the projected columns decoded in the same call.

The planner picks a block's program (its plan's ``mode``); the executor runs it.
"""
from __future__ import annotations

from .block_exec import BlockColumns, BlockFilter

__all__ = ["FUSED_BYTES", "KEPT_PROGRAMS", "Programs", "keep"]

#: a local block whose candidates a filter the executor decides wholly reads in whole
#: chunks has its projected flat columns decoded in the same native call, at the rows it
#: picks, their whole chunks read with the filter's before it says which rows it keeps --
#: when they hold at most this many times the filter columns' bytes: a selective filter
#: then reads at most that much in vain, a dense one saves a read and a call per block
#: (TPC-H Q6 on unclustered lineitem: 1.1x); a projection of many columns (a lookup of
#: every column) keeps reading only the pages holding a selected row
FUSED_BYTES = 2

#: views of lists of columns an open file keeps for later scans (then it starts afresh)
KEPT_PROGRAMS = 64

_LENGTH = ("length",)


def _leaf_count(nnf) -> int:
    from ..predicate.nnf import leaves  # (a filter's: an unfiltered scan loads no predicate code)

    return sum(1 for _ in leaves(nnf))


def _projected(query, filter_ids: dict) -> set:
    """The filter columns (``filter_ids``: name -> stored column) the scan also returns."""
    ids = set(filter_ids.values())
    return {c for c in query.col_ids if c in ids}


def _key(nnf) -> tuple:
    """A filter's identity: its top-level conjuncts' ids (kept alive by the scan's filter)."""
    from ..predicate.nnf import BoundAnd

    return tuple(map(id, nnf.children if isinstance(nnf, BoundAnd) else (nnf,)))


class Programs:
    """The native programs of the scan ``query`` (:class:`~rcfmt.scan.query.ScanQuery`),
    built on first use and kept (threads racing to build one build equal ones)."""

    def __init__(self, query):
        self.query = query
        self.file = query.file
        #: the executor's spec, per list of columns decoded whole
        self._columns: dict[tuple, BlockColumns] = {}
        #: the BlockFilter of the filter, or of a residual of its conjuncts a bitmap index
        #: left, by the conjuncts' ids (False: none, a filter on lists alone)
        self._filters: dict[tuple, BlockFilter | bool] = {}
        #: the same with the projected flat columns decoded in its call (:meth:`fused`)
        self._fused: dict[tuple, list] = {}

    def columns(self, cols: list) -> BlockColumns:
        """The block executor's spec of the flat columns ``cols`` (kept by the open file
        too, for the next scans of the same columns: at most :data:`KEPT_PROGRAMS`)."""
        key = tuple(cols)
        got = self._columns.get(key)
        if got is None:
            query = self.query
            gap = query.gap if self.file.remote else 0
            held = self.file.program_cache
            whole_key = (key, frozenset(query.dictionary_ids), gap)
            got = held.get(whole_key)
            if got is None:
                got = BlockColumns(self.file, cols, query.dictionary_ids, gap)
                keep(held, whole_key, got)
            self._columns[key] = got
        return got

    def filter(self, nnf, filter_ids: dict) -> BlockFilter | None:
        """The :class:`BlockFilter` deciding ``nnf`` -- the scan's filter, or the residual
        of its conjuncts a bitmap index left (on ``filter_ids``); None for a filter on
        lists alone (no flat column to decode)."""
        key = _key(nnf)
        got = self._filters.get(key)
        if got is None:
            query = self.query
            conjuncts, mask_only = query.pushdown(nnf)
            got = self._filters[key] = False if not filter_ids else BlockFilter(
                self.file, filter_ids, conjuncts, mask_only, _leaf_count(nnf),
                query.gap if self.file.remote else 0, dictionary_ids=query.dictionary_ids,
                keep=_projected(query, filter_ids))
        return got or None

    def fused(self, nnf, filter_ids: dict, rest: list) -> list | None:
        """The :class:`BlockFilter` of ``nnf`` (a filter the executor decides wholly) with
        the projected flat columns ``rest`` decoded after it in the same native call, at
        the rows it picks, and per block whether that is worth it (:data:`FUSED_BYTES`):
        ``[filter, worth]`` (filter None when no block is); None when the scan's outputs
        are not all flat columns, or nothing is left to project."""
        if not rest or self.query.nested_outputs:
            return None
        key = (_key(nnf), tuple(rest))
        got = self._fused.get(key)
        if got is None:
            # the blocks whose projected chunks are worth reading with the filter's, whole,
            # before it says which rows it keeps: at most FUSED_BYTES times its bytes
            lengths = self.file.footer.chunk_fields(_LENGTH)[:, :, 0]
            worth = (lengths[:, rest].sum(axis=1)
                     <= FUSED_BYTES * lengths[:, list(filter_ids.values())].sum(axis=1)).tolist()
            got = self._fused[key] = [None, worth]  # (the filter made when a block is worth it)
        if got[0] is None and any(got[1]):
            query = self.query
            conjuncts, mask_only = query.pushdown(nnf)
            got[0] = BlockFilter(self.file, filter_ids, conjuncts, mask_only, _leaf_count(nnf), 0,
                                 then=rest, dictionary_ids=query.dictionary_ids, keep=_projected(query, filter_ids))
        return got


def keep(held: dict, key, value, limit: int | None = None) -> None:
    """Keep ``value`` in one of a file's caches (``held``: its ``program_cache``, its
    footer's ``derived`` values), which holds at most ``limit`` entries (default
    :data:`KEPT_PROGRAMS`; emptied when full; racing threads build alike)."""
    if len(held) >= (KEPT_PROGRAMS if limit is None else limit):
        held.clear()
    held[key] = value
