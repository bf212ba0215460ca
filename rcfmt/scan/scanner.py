"""The scan of one file: prune blocks, prune pages into row ranges, evaluate the filter
on the filter columns only (late materialization), then decode the projected columns
only for the pages that hold selected rows, gathering only the selected values.

Every stage keeps a superset of the matching rows until the exact evaluation; each is
counted in :class:`ScanStats`.

:class:`FileScan` plans and drives; its parts live beside it as mixins: pruning blocks
(:mod:`~rcfmt.scan.block_pruning`), pruning pages with the page index
(:mod:`~rcfmt.scan.page_pruning`), the bytes a block needs
(:mod:`~rcfmt.scan.fetching`) and decoding its columns (:mod:`~rcfmt.scan.decoding`).
Every stored column, flat or under a nested field, is decoded by the native block
executor (:mod:`~rcfmt.scan.block_exec`).
"""
from __future__ import annotations

import threading
from concurrent.futures import wait
from dataclasses import replace
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError, InvalidOptionError
from ..runtime.threads import cpu_threads
from ..interop.arrow import export_stream
from ..schema.annotated import Relabeling
from ..schema.arrow_io import int64_array, take as arrow_take
from ..schema.nested import list_node as nested_list_node
from ..index.bitmap.answer import BlockAnswer, to_mask
from .evaluate import ColumnData, column_conjuncts, eval_nnf
from ..storage.fetch import LOCAL_COALESCE_GAP, coalesce
from .fetch_plan import BlockGroups
from .nnf import BoundAnd, BoundListContains, NanCheck, columns as expr_columns, leaves, to_nnf, without_nan_checks
from .bind import bind
from .block_exec import BlockColumns, BlockFilter
from .plan import CHUNKS, FUSED, GROUP, LISTS, MASK, PAGES, PICK, PRUNE_STAGES, RANGED, BlockPlan, FilePlan
from .prune import always_true
from .block_pruning import INDEX_NARROWS, BlockPruning
from .decoding import ColumnDecoding
from .fetching import BlockFetching
from .gather import gather_data
from .page_pruning import PagePruning
from .scan_stats import ScanStats
from .scheduling import STREAM_WINDOW, Probe, blocks_worth_threads, map_blocks, take_worth_threads
from .selection import RowRanges, Selection
from .positions import by_unit, check_no_position_column, position_flag, row_position_field

__all__ = ["ScanStats", "FileScan", "scan_file"]



_LENGTH = ("length",)

#: a block whose deletion vector deletes at most 1/DEFER_DELETED of its rows has its filter
#: decided on the candidates as they are, the deleted rows taken out of the answer after
#: (:meth:`FileScan._deferred`): scattered deleted rows would otherwise cut a run of
#: candidates into thousands, which the executor then gathers instead of streaming
#: (TPC-H Q6 after 1,000 scattered deletes: 1.28x the time before)
DEFER_DELETED = 16

#: a local block whose candidates a filter the executor decides wholly reads in whole
#: chunks has its projected flat columns decoded in the same native call, at the rows it
#: picks, their whole chunks read with the filter's before it says which rows it keeps --
#: when they hold at most this many times the filter columns' bytes: a selective filter
#: then reads at most that much in vain, a dense one saves a read and a call per block
#: (TPC-H Q6 on unclustered lineitem: 1.1x); a projection of many columns (a lookup of
#: every column) keeps reading only the pages holding a selected row
FUSED_BYTES = 2

#: a block whose candidates from the page index are at least this share of its rows, read
#: in whole chunks, has its (wholly native) filter run on every row rather than on the
#: candidates listed: the rows of the pages pruned cost less to decode than a list of
#: every candidate to make, check and gather by (a merge's 10,000 keys leave ~all of
#: every block: its key scan 2-3 ms faster of ~40, on two threads)
EVERY_ROW_SHARE = 0.9

#: a scan whose blocks are decoded on the pool splits each block's columns among the
#: cores as well when it has fewer than this many blocks per core (one block at a time:
#: always)
COLUMN_SPLIT_BLOCKS = 2


class FileScan(BlockPruning, PagePruning, BlockFetching, ColumnDecoding):
    """A planned scan of one open :class:`~rcfmt.file.reader.RcfmtFile`.

    ``columns``: projected column names (None = all); ``filter``: an expression or DNF
    list (None = all rows); ``read_dictionary``: columns to return as
    ``pyarrow.DictionaryArray``; ``blocks``: ``(start, stop)`` to scan only those blocks
    (statistics then count only them); ``rows``: only these rows (file positions,
    ascending and distinct, checked by the caller: ``take``), each block's intersected
    into its candidates before anything is read; ``deleted``: rows of the file a
    dataset's deletion vector removes (file positions, ascending and distinct, checked
    by the caller), subtracted from each block's candidates the same way (a block
    left without rows is never read); ``with_row_position``: each row's position in
    the file as a last int64 column ``_row_position``. ``stats`` accumulates as the
    scan runs.
    """

    def __init__(self, file, columns: Sequence[str] | None = None, filter=None, *, use_threads: bool = True,
                 read_dictionary: Sequence[str] | None = None, use_bloom: bool = True, use_page_index: bool = True,
                 blocks: tuple[int, int] | None = None, use_bitmap_index: bool = True, rows: np.ndarray | None = None,
                 with_row_position: bool = False, deleted: np.ndarray | None = None):
        self.file = file
        asked = rows
        self.with_row_position = position_flag(with_row_position)
        if self.with_row_position:
            check_no_position_column(file.schema.names)
        #: ranges at most this far apart are read together (remote files: the file's FetchOptions)
        self._gap = file.fetch.coalesce_gap if file.remote else LOCAL_COALESCE_GAP
        #: per output field: a stored column's index, or a nested field's (pruned) node
        self.outputs = file.resolve_outputs(columns)
        self.col_ids = [o for o in self.outputs if isinstance(o, int)]
        self.bound = bind(filter, file.bind_schema)
        self.nnf = None if self.bound is None else to_nnf(self.bound)
        self.filter_names = sorted(expr_columns(self.nnf)) if self.nnf is not None else []
        self.filter_ids = {name: file.column_index(name) for name in self.filter_names}
        if self.nnf is not None:  # (is_nan of a column the file holds no NaN in: a constant)
            self.nnf = without_nan_checks(self.nnf, {
                leaf.column.name for leaf in leaves(self.nnf) if isinstance(leaf, NanCheck)
                and leaf.column.name in self.filter_ids
                and not file.footer.chunks[self.filter_ids[leaf.column.name]]["nan_count"].any()})
        # list_contains leaves: their element columns prune blocks (stats, bloom filters);
        # rows are decided on the lists, decoded for the candidate rows (not the elements)
        self.list_filters = {leaf.column.name: leaf.list_name for leaf in leaves(self.nnf)
                             if isinstance(leaf, BoundListContains)} if self.nnf is not None else {}
        self.row_filter_ids = {name: c for name, c in self.filter_ids.items() if name not in self.list_filters}
        self._pushdown_whole = None if self.nnf is None else self._pushdown(self.nnf)
        #: the native block executor's spec, per list of columns decoded whole (built once per scan)
        self._executors: dict[tuple, BlockColumns] = {}
        #: the BlockFilter of the filter, or of a residual of its conjuncts a bitmap index
        #: left, by the conjuncts' ids; built on first use (False: none, a filter on lists alone)
        self._block_filters: dict[tuple, BlockFilter | bool] = {}
        #: the same with the projected flat columns decoded in its call (:meth:`_fused_filter`)
        self._fused_filters: dict[tuple, BlockFilter] = {}
        if read_dictionary is not None and (isinstance(read_dictionary, str) or not isinstance(read_dictionary, Sequence)):
            raise InvalidOptionError("read_dictionary must be a list of column names")
        self.dictionary_ids = {file.column_index(name) for name in (read_dictionary or ())}
        self.use_threads = use_threads
        self.use_bloom = use_bloom
        self.use_page_index = use_page_index
        self.use_bitmap_index = use_bitmap_index
        self._answers: dict[int, BlockAnswer] = {}  # what bitmap indexes said of the blocks kept
        #: blocks of the scanned range each stage pruned while the scan was set up (the
        #: page index and bitmap indexes prune more per block: :meth:`plan` lists all)
        self.pruned: dict[str, list[int]] = {stage: [] for stage in PRUNE_STAGES}
        self.block_range = _block_range(blocks, file.num_blocks)
        lo, hi = self.block_range
        rows = file.num_rows if (lo, hi) == (0, file.num_blocks) else int(
            np.asarray(file.footer.blocks["row_count"][lo:hi], np.int64).sum())
        self.stats = ScanStats(files_total=1, blocks_total=hi - lo, rows_total=rows)
        block_rows = np.asarray(file.footer.blocks["row_count"], np.int64)
        #: each block's first row in the file (row positions)
        self._first_rows = np.concatenate(([0], np.cumsum(block_rows)[:-1])).tolist() if len(block_rows) else []
        #: ``rows`` asked for (take), per block as a Selection (None: every row)
        self._take = None if asked is None else {
            b: Selection.from_indices(local, int(block_rows[b])) for b, local in by_unit(asked, block_rows).items()}
        self.deleted = deleted
        #: per block holding deleted rows, the rows left (a deletion vector's complement)
        self._visible = None if deleted is None or not len(deleted) else {
            b: Selection.from_indices(local, int(block_rows[b])).complement()
            for b, local in by_unit(deleted, block_rows).items()}
        self.output_schema = self._output_schema()
        self._labels = Relabeling(self.output_schema, file.schema)  # (interval types: built as their storage)
        #: output positions of flat columns declared not nullable (nulls there: a corrupt file)
        self._required = [i for i, c in enumerate(self.outputs)
                          if isinstance(c, int) and not file.footer.columns[c].nullable]
        self._nested_outputs = any(not isinstance(c, int) for c in self.outputs)
        self._prefetch_lock = threading.Lock()
        self._page_index_bytes = None
        self._groups: BlockGroups | None = None  # remote files: blocks read together (_plan_groups)
        #: whether a block's columns are decoded on the pool, split in groups
        #: (:meth:`_decode_split`): set by :meth:`_run` when its blocks are not, or are
        #: too few (:data:`COLUMN_SPLIT_BLOCKS`)
        self._column_threads = False
        self._column_groups: dict[tuple, list | None] = {}
        self._proven: dict | None = None  # (_proven_conjuncts)
        self._filter_stats: dict = {}  # the filter columns' block statistics (read by _prune_blocks)
        self._planned_ranges: dict[int, RowRanges] = {}  # remote files: row ranges found while planning
        # does the page index prune pages for this filter here? (remote: fetched with the plan)
        self._page_probe = Probe(enabled=not file.remote)
        before = file.thread_requests()
        self.blocks = self._prune_blocks()
        if self._take is not None:  # (blocks holding no row asked for are never planned)
            self.blocks = [b for b in self.blocks if b in self._take]
        if self._visible is not None:  # (nor blocks whose every row is deleted)
            self.blocks = [b for b in self.blocks if b not in self._visible or self._visible[b].row_count]
        self.stats.requests += file.thread_requests() - before  # bloom filters

    # ---------------------------------------------------------------- planning
    def _output_schema(self) -> pa.Schema:
        out = []
        for c in self.outputs:
            if not isinstance(c, int):
                out.append(c.field)
                continue
            field = self.file.physical_schema.field(c)
            if c in self.dictionary_ids:
                field = field.with_type(pa.dictionary(pa.int32(), field.type))
            out.append(field)
        if self.with_row_position:
            out.append(row_position_field())
        return pa.schema(out, metadata=self.file.schema.metadata)

    # ---------------------------------------------------------------- decoding
    def _pushdown(self, nnf) -> tuple[dict, set]:
        """``(conjuncts, mask-only columns)`` of a predicate: the leaves of its top-level
        AND by column (evaluated in the decode pass where the executor can), and the
        columns whose values serve nothing else (not projected, no leaf elsewhere in the
        tree): decoded only into the mask when every one of their leaves is pushed."""
        conjuncts = column_conjuncts(nnf)
        counts: dict[str, int] = {}
        for leaf in leaves(nnf):
            counts[leaf.column.name] = counts.get(leaf.column.name, 0) + 1
        projected = set(self.col_ids)
        only = {name for name, group in conjuncts.items()
                if counts[name] == len(group) and self.filter_ids.get(name) not in projected}
        return conjuncts, only

    def _block_filter(self, nnf, filter_ids: dict) -> BlockFilter | None:
        """The :class:`BlockFilter` deciding ``nnf`` -- the scan's filter, or the
        residual of its conjuncts a bitmap index left (on ``filter_ids``) -- built once
        per scan; None for a filter on lists alone (no flat column to decode)."""
        key = tuple(map(id, nnf.children if isinstance(nnf, BoundAnd) else (nnf,)))  # (kept alive by self.nnf)
        got = self._block_filters.get(key)
        if got is None:
            conjuncts, mask_only = self._pushdown_whole if nnf is self.nnf else self._pushdown(nnf)
            got = self._block_filters[key] = False if not filter_ids else BlockFilter(
                self.file, filter_ids, conjuncts, mask_only, sum(1 for _ in leaves(nnf)),
                self._gap if self.file.remote else 0, dictionary_ids=self.dictionary_ids)
        return got or None

    def _fused_filter(self, nnf, filter_ids: dict, rest: list) -> list | None:
        """The :class:`BlockFilter` of ``nnf`` (a filter the executor decides wholly) with
        the projected flat columns ``rest`` decoded after it in the same native call, at
        the rows it picks, and per block whether that is worth it (:data:`FUSED_BYTES`):
        ``[filter, worth]`` (filter None when no block is), built once per scan; None
        when the scan's outputs are not all flat columns, or nothing is left to project."""
        if not rest or self._nested_outputs:
            return None
        key = (tuple(map(id, nnf.children if isinstance(nnf, BoundAnd) else (nnf,))), tuple(rest))
        got = self._fused_filters.get(key)
        if got is None:
            # the blocks whose projected chunks are worth reading with the filter's, whole,
            # before it says which rows it keeps: at most FUSED_BYTES times its bytes
            lengths = self.file.footer.chunk_fields(_LENGTH)[:, :, 0]
            worth = (lengths[:, rest].sum(axis=1)
                     <= FUSED_BYTES * lengths[:, list(filter_ids.values())].sum(axis=1)).tolist()
            got = self._fused_filters[key] = [None, worth]  # (the filter made when a block is worth it)
        if got[0] is None and any(got[1]):
            conjuncts, mask_only = self._pushdown_whole if nnf is self.nnf else self._pushdown(nnf)
            got[0] = BlockFilter(self.file, filter_ids, conjuncts, mask_only, sum(1 for _ in leaves(nnf)), 0,
                                 then=rest, dictionary_ids=self.dictionary_ids)  # (built alike by racing threads)
        return got

    # ---------------------------------------------------------------- one block
    def scan_block(self, block: int) -> tuple[pa.RecordBatch | None, ScanStats]:
        """Selected rows of one block (None if none), and what it cost."""
        return self._block(block, False)

    def count_block(self, block: int) -> tuple[int, ScanStats]:
        """The number of rows of ``block`` the filter selects, and what it cost: from
        the bitmap indexes alone when they decide the whole filter there, else from
        the filter columns only."""
        return self._block(block, True)

    def _block(self, block: int, count_only: bool):
        stats = ScanStats()
        before = self.file.thread_requests()
        try:
            return self._scan_block(block, stats, count_only)
        finally:
            stats.requests += self.file.thread_requests() - before
            if self._groups is not None:
                self._groups.done(block)

    def _plan_groups(self, blocks: list[int]) -> BlockGroups | None:
        """On object storage, before any block is decoded: the byte ranges each block
        will need (every page that may hold a matching row, of every column the scan
        reads), grouped so that consecutive blocks needing most of their bytes are read
        with one request (:mod:`rcfmt.scan.fetch_plan`)."""
        spans = {}
        needed = list(dict.fromkeys([*self.row_filter_ids.values(), *self.col_ids]))
        scratch = ScanStats()
        for block in blocks:
            cache: dict = {}
            ranges = self._planned_ranges[block] = self.row_ranges(block, cache)
            if ranges.row_count == 0:
                continue
            rows = int(self.file.footer.blocks[block]["row_count"])
            # (the candidates _execute decodes: deleted rows left in when the plan takes them out after)
            candidates = self._asked(block, Selection.from_ranges(ranges, rows), self._deferred(block) is None)
            if candidates.row_count == 0:
                continue
            plans = {col: self._plan_column(block, col, candidates, cache, scratch) for col in needed}
            found = self._byte_ranges(block, plans, cache)
            if found is not None:
                spans[block] = found
        groups = BlockGroups(spans, self._gap, self.file.fetch.max_request_bytes)
        return groups if len(groups) else None

    def _block_plan(self, block: int, cache: dict, stats: ScanStats, count_only: bool = False,
                    groups: BlockGroups | None = None) -> BlockPlan | None:
        """The plan of ``block`` (None: pruned, no row can match): its candidates and the
        filter left (:meth:`_candidates`), and how the executor decides it
        (:meth:`_physical`; ``count_only``: for a count; ``groups``: the blocks of a
        remote scan read together)."""
        plan = self._candidates(block, cache, stats)
        return None if plan is None else self._physical(plan, cache, count_only, groups)

    def _candidates(self, block: int, cache: dict, stats: ScanStats) -> BlockPlan | None:
        """The plan of ``block`` (None: pruned, no row can match): the rows that may match,
        from its page index and its bitmap indexes, and the filter left to decode, with
        the conjuncts the indexes decided exactly taken out (None when they decided all
        of it: the candidates are then exactly the matching rows). Reads metadata only."""
        rows = int(self.file.footer.blocks[block]["row_count"])
        if self.nnf is None:  # (every row: what row_ranges says without a filter)
            return BlockPlan(block, rows, self._asked(block, Selection.all(rows)), None)
        answer = self._answers.get(block)
        if answer is not None and answer.exact:  # no filter column to decode, no page index to ask
            candidates = self._asked(block, Selection.from_mask(to_mask(answer.maybe, rows), kind="bitmap"))
            stats.rows_selected_index += candidates.row_count
            return BlockPlan(block, rows, candidates, None, "exact")
        ranges = self.row_ranges(block, cache)
        if ranges.row_count == 0:
            stats.blocks_pruned_pages += 1
            return None
        visible = self._deferred(block)
        candidates = self._asked(block, Selection.from_ranges(ranges, rows), visible is None)
        if candidates.row_count == 0:
            return None
        if answer is None or answer.count * INDEX_NARROWS > rows:
            # (an index that leaves many rows would only add gathers to a filter that
            # decodes its columns' pages anyway: it served to prune the block)
            return self._less_proven(BlockPlan(block, rows, candidates, self.nnf, visible=visible))
        candidates = candidates.intersect(Selection.from_mask(to_mask(answer.maybe, rows), kind="bitmap"))
        if candidates.row_count == 0:
            stats.blocks_pruned_index += 1
            return None
        residual = answer.residual
        return self._less_proven(BlockPlan(block, rows, candidates, residual[0] if len(residual) == 1
                                           else BoundAnd.of(*residual), "narrowed", visible=visible))

    def _physical(self, plan: BlockPlan, cache: dict, count_only: bool, groups: BlockGroups | None) -> BlockPlan:
        """``plan`` with its physical choices made (:mod:`rcfmt.scan.plan`), from metadata
        only: its mode, how its first bytes are read and which (``fetch``), whether its
        filter runs on every row and whether the projection rides along."""
        block, candidates, nnf = plan.block, plan.candidates, plan.residual
        if nnf is None:
            return plan if count_only else replace(plan, **self._projection_fetch(block, candidates, cache, groups))
        filter_ids, list_filters = self._residual_columns(nnf)
        block_filter = self._block_filter(nnf, filter_ids)
        if block_filter is None:
            return replace(plan, mode=LISTS)
        all_rows = candidates.row_count == plan.rows
        dense = all_rows or (not self.file.remote and self._dense(block, candidates, block_filter.columns))
        grouped = groups is not None and block in groups
        rest = [c for c in self.col_ids if c not in filter_ids.values()]
        mode, columns = MASK, block_filter.columns
        if block_filter.complete and not list_filters and not count_only:  # the rows, in the same call
            mode = PICK
            fused = None if grouped or self.file.remote else self._fused_filter(nnf, filter_ids, rest)
            if fused is not None and fused[1][block] and dense:  # the projection too: whole chunks, one call
                mode, columns = FUSED, fused[0].columns
        read = GROUP if grouped else RANGED if self.file.remote else CHUNKS if dense else PAGES
        # (rows outside the candidates cannot match when page pruning alone left them out)
        pruned_only = plan.index is None and self._take is None and (
            plan.visible is not None or self._visible is None or block not in self._visible)
        every = (mode != MASK and read == CHUNKS and pruned_only and not all_rows
                 and candidates.row_count >= EVERY_ROW_SHARE * plan.rows)
        ride = {}
        if read == RANGED and rest and not count_only:  # the projected candidate pages along, when few
            scratch = ScanStats()
            ride = {col: self._plan_column(block, col, candidates, cache, scratch) for col in rest}
            if self._planned_bytes(block, ride, cache) > self._gap:
                ride = {}
        fetch, tables = self._filter_fetch(block, read, columns, candidates, cache, ride)
        return replace(plan, mode=mode, read=read, every=every, ride=bool(ride), fetch=fetch, tables=tables)

    def _residual_columns(self, nnf) -> tuple[dict, dict]:
        """``(flat filter columns, list filters)`` of ``nnf``, the scan's filter or a residual of it."""
        if nnf is self.nnf:
            return self.row_filter_ids, self.list_filters
        names = expr_columns(nnf)
        return ({n: c for n, c in self.row_filter_ids.items() if n in names},
                {n: p for n, p in self.list_filters.items() if n in names})

    def _filter_fetch(self, block: int, read: str, columns: BlockColumns, candidates: Selection, cache: dict,
                      ride: dict):
        """``(fetch, tables)`` of a block whose filter columns (``columns``) are read as
        ``read`` says (:meth:`_physical`): the byte ranges, and for :data:`PAGES` the
        candidate pages' tables (file offsets)."""
        if read == CHUNKS:
            starts, ends, merged = columns.ranges(block)
            return ((starts, ends) if merged else coalesce(starts, ends, self._gap if self.file.remote else 0)), None
        if read == PAGES:
            tables = self._candidate_tables(block, columns.cols, candidates, cache)
            return self._table_ranges(block, columns.cols, tables), tables
        if read == RANGED:
            scratch = ScanStats()  # (pages are counted where they are decoded)
            plans = {col: self._plan_column(block, col, candidates, cache, scratch) for col in columns.cols}
            return self._byte_ranges(block, {**plans, **ride}, cache), None
        return None, None  # (GROUP: read with its neighbours)

    def _projection_fetch(self, block: int, selection: Selection, cache: dict, groups: BlockGroups | None) -> dict:
        """The ``read`` and ``fetch`` of a block whose projected flat columns are decoded at
        ``selection`` with no filter before them, as :meth:`_whole_columns` reads them."""
        rest = self.col_ids
        if not rest or not selection.row_count:
            return {}
        if groups is not None and block in groups:
            return {"read": GROUP}
        executor = self._executor(rest)
        if selection.row_count == selection.num_rows or not (self.file.remote or
                                                             not self._dense(block, selection, executor)):
            starts, ends, merged = executor.ranges(block)
            return {"read": CHUNKS, "fetch": (starts, ends) if merged else coalesce(
                starts, ends, self._gap if self.file.remote else 0)}
        tables = self._candidate_tables(block, rest, selection, cache)
        return {"read": RANGED if self.file.remote else PAGES, "fetch": self._table_ranges(block, rest, tables),
                "tables": tables}

    def _less_proven(self, plan: BlockPlan) -> BlockPlan:
        """``plan`` without the conjuncts its block's statistics prove TRUE on every row
        (:func:`~rcfmt.scan.prune.always_true`: a block inside a window's bounds decodes
        no filter column for them); with none left, its candidates (less its deleted
        rows) are exactly the matching rows."""
        proven = self._proven_conjuncts()
        if not proven:
            return plan
        conjuncts = plan.residual.children if isinstance(plan.residual, BoundAnd) else (plan.residual,)
        left = [c for c in conjuncts if id(c) not in proven or not proven[id(c)][plan.block]]
        if len(left) == len(conjuncts):
            return plan
        shown = tuple(str(c) for c in conjuncts if c not in left)
        if left:
            return replace(plan, residual=BoundAnd.of(*left), proven=shown)
        candidates = plan.candidates if plan.visible is None else plan.candidates.intersect(plan.visible)
        return replace(plan, candidates=candidates, residual=None, visible=None, proven=shown)

    def _proven_conjuncts(self) -> dict:
        """Per top-level conjunct of the filter (by ``id``) proven TRUE on every row of
        some block, a bool per block; built once per scan, from the blocks' statistics.
        None without checksum verification: a damaged page may then decode to values
        its statistics do not bound, and the rows returned must still be those whose
        decoded values pass the filter."""
        if not self.file.verify_checksums:
            return {}
        if self._proven is None:
            conjuncts = self.nnf.children if isinstance(self.nnf, BoundAnd) else (self.nnf,)
            stats = self._filter_stats  # (the blocks' statistics pruning read)
            n = self.file.num_blocks
            proven = {id(c): always_true(c, stats, n) for c in conjuncts}
            self._proven = {k: v.tolist() for k, v in proven.items() if v.any()}  # (built alike by racing threads)
        return self._proven

    def _asked(self, block: int, candidates: Selection, less_deleted: bool = True) -> Selection:
        """``candidates`` of ``block`` among the rows asked for (``rows=``, take), less
        the deleted ones (``deleted=``; unless ``less_deleted`` is False: the plan then
        takes them out after the filter): ``pruning ∩ requested − deleted``."""
        if self._take is not None:
            asked = self._take[block]
            candidates = asked if candidates.is_all else candidates.intersect(asked)
        if less_deleted and self._visible is not None and block in self._visible:
            candidates = candidates.intersect(self._visible[block])
        return candidates

    def _deferred(self, block: int) -> Selection | None:
        """The rows of ``block`` its deletion vector leaves, when they are so many (all
        but 1/:data:`DEFER_DELETED` at most) that the filter is best decided on the
        candidates as they are and the deleted rows taken out of its answer; else None."""
        if self._visible is None or block not in self._visible or self._take is not None:
            return None
        visible = self._visible[block]
        return visible if (visible.num_rows - visible.row_count) * DEFER_DELETED <= visible.num_rows else None

    def _changed(self, block: int) -> bool:
        """Whether ``block``'s rows are narrowed by ``rows=`` or ``deleted=``."""
        return self._take is not None or (self._visible is not None and block in self._visible)

    def plan(self, fetch: bool = True) -> FilePlan:
        """The scan's plan (:class:`~rcfmt.scan.plan.FilePlan`), from metadata only: the
        blocks each stage pruned, and per kept block what its execution runs -- its
        candidate rows, the filter left to decode, its mode and (``fetch``) the byte
        ranges it reads first, exactly (:mod:`rcfmt.scan.plan`). Reading the plan costs
        page-index and bitmap-index reads, never a data page; the scan's ``stats`` are
        left as they were."""
        scratch = ScanStats()
        pruned = {stage: list(blocks) for stage, blocks in self.pruned.items()}
        groups = self._plan_groups(self.blocks) if self.file.remote and len(self.blocks) > 1 else None
        plans = []
        for block in self.blocks:
            cache: dict = {}
            before = scratch.blocks_pruned_pages
            plan = self._block_plan(block, cache, scratch, groups=groups)
            if plan is None:
                pruned["pages" if scratch.blocks_pruned_pages > before else "bitmap"].append(block)
                continue
            plans.append(plan if fetch else replace(plan, fetch=None, tables=None))
        if self.nnf is None:
            pushed, mask_only, after = {}, set(), ()
        else:
            conjuncts, mask_only = self._pushdown_whole
            pushed = {name: tuple(str(leaf) for leaf in group) for name, group in conjuncts.items()}
            in_pass = {id(leaf) for group in conjuncts.values() for leaf in group}
            children = self.nnf.children if isinstance(self.nnf, BoundAnd) else (self.nnf,)
            after = tuple(str(c) for c in children if id(c) not in in_pass)
        lo, hi = self.block_range
        return FilePlan(path=str(self.file.path), columns=tuple(self.output_schema.names),
                        filter=None if self.nnf is None else str(self.nnf), blocks_total=hi - lo,
                        rows_total=self.stats.rows_total, pruned={k: tuple(sorted(v)) for k, v in pruned.items()},
                        pushed=pushed, mask_only=tuple(sorted(mask_only)), after_decode=after, blocks=tuple(plans))

    def explain(self) -> str:
        """The plan as text: what pruned which blocks, the candidate rows and bytes of
        each kept block, and where each part of the filter is evaluated."""
        return self.plan().explain()

    def _scan_block(self, block: int, stats: ScanStats, count_only: bool = False):
        cache: dict = {}  # the block's page indexes, read by planning, used by execution
        plan = self._block_plan(block, cache, stats, count_only, self._groups)
        if plan is None:
            return (0 if count_only else None), stats
        return self._execute(plan, cache, stats, count_only)

    def _execute(self, plan: BlockPlan, cache: dict, stats: ScanStats, count_only: bool = False):
        """Run ``plan`` (:meth:`_block_plan`: its mode and its reads decided): decode the
        filter columns at the candidate rows, decide the rows, and decode the projected
        columns at them."""
        block, candidates, nnf, mode = plan.block, plan.candidates, plan.residual, plan.mode
        filter_ids, list_filters = ({}, {}) if nnf is None else self._residual_columns(nnf)
        rest = [c for c in self.col_ids if c not in filter_ids.values()]
        fetched = None
        if plan.read == GROUP:  # read with its neighbours
            buf, base, nbytes = self._groups.fetch(block, self.file)
            stats.bytes_read += nbytes
            fetched = (buf, base)
        picked = projected = mask = None
        filter_data: dict[int, ColumnData] = {}
        if mode in (FUSED, PICK, MASK):
            block_filter = self._fused_filter(nnf, filter_ids, rest)[0] if mode == FUSED else \
                self._block_filter(nnf, filter_ids)
            buf, base, pages = self._filter_bytes(plan, block_filter.columns, cache, stats, fetched)
            wanted = None if plan.every or candidates.row_count == plan.rows else candidates.to_indices()
            verify = self.file.verify_checksums
            if mode == MASK:  # one native call decodes the filter columns into the mask
                mask, filter_data, read = block_filter.run(buf, base, block, plan.rows, verify, wanted, pages)
            else:  # one native call decodes the filter columns and picks the rows (FUSED: and the projection)
                keep = {c for c in self.col_ids if c in filter_ids.values()}
                picks, filter_data, read = block_filter.select(buf, base, block, plan.rows, verify, wanted, pages,
                                                               keep)
                picked = Selection.picked(*picks, plan.rows)
                if mode == FUSED:
                    projected = {c: filter_data.pop(c) for c in rest if c in filter_data}
            stats.pages_read += read[0]
            stats.rows_decoded += read[1]
            fetched = (buf, base) if plan.read == GROUP or plan.ride else None
            buf = None  # (the filter's bytes, freed before the projection's are read unless they hold them)
        if picked is not None:
            selection = picked
            if plan.visible is not None:
                selection, filter_data, projected = _less_deleted(plan.visible, selection, filter_data, projected)
        elif mode == MASK:
            if filter_data and not block_filter.complete:  # (no data: no row is TRUE, the mask is final)
                lists = self._lists_at(block, list_filters, candidates, cache, stats)
                mask = eval_nnf(nnf, lambda name: lists[name] if name in lists else filter_data[self.filter_ids[name]],
                                candidates.row_count)
            if plan.visible is not None:
                mask = mask & plan.visible.to_mask()[candidates.to_indices()]
            if count_only:
                selected = int(np.count_nonzero(mask))
                stats.rows_selected += selected
                return selected, stats
            selection = candidates.refine(mask)
        elif mode == LISTS:
            lists = self._lists_at(block, list_filters, candidates, cache, stats)
            selection = candidates.refine(eval_nnf(nnf, lists.__getitem__, candidates.row_count))
            if plan.visible is not None:
                selection = selection.intersect(plan.visible)
        else:  # ROWS: the candidates are the rows, their projection read as planned
            selection = candidates
            if plan.fetch is not None and not count_only:
                projected = self._planned_projection(plan, rest, cache, stats)
        selected = selection.row_count
        stats.rows_selected += selected
        if count_only:
            return selected, stats
        if not selected:
            return None, stats
        nested = self._nested_on_pool(block, rest, selection, cache) if self._column_threads else None
        try:
            return self._outputs(block, selection, rest, projected, fetched, filter_data, mask, picked, nested,
                                 cache, stats), stats
        finally:
            if nested:
                wait(nested.values())

    def _filter_bytes(self, plan: BlockPlan, columns: BlockColumns, cache: dict, stats: ScanStats, fetched):
        """``(buffer, base, page tables or None)`` of the filter columns (``columns``) of
        ``plan``'s block: its ``fetch`` read (or its group's bytes, ``fetched``), and
        unless whole chunks are decoded, the candidate pages' tables in that buffer."""
        if plan.read != GROUP:
            fetched = self._read(plan.fetch, stats)
        if plan.read == CHUNKS or plan.candidates.row_count == plan.rows:
            stats.pages_total += columns.pages[plan.block]
            return *fetched, None
        return self._page_tables(plan.block, columns.cols, plan.candidates, cache, stats, fetched, plan.tables)

    def _planned_projection(self, plan: BlockPlan, cols: list, cache: dict, stats: ScanStats) -> dict:
        """The projected flat columns ``cols`` of a :data:`ROWS` plan at its candidates,
        from the bytes it planned (``fetch``; ``tables`` for pages)."""
        candidates = plan.candidates
        fetched = self._read(plan.fetch, stats)
        if plan.read == CHUNKS:
            stats.pages_total += self._executor(cols).pages[plan.block]
            return self._whole_columns(plan.block, cols, plan.rows, cache, stats, fetched,
                                       None if candidates.row_count == plan.rows else candidates)
        return self._whole_columns(plan.block, cols, plan.rows, cache, stats, fetched, candidates, True, plan.tables)

    def _outputs(self, block: int, selection: Selection, rest: list, projected: dict | None, fetched,
                 filter_data: dict, mask, picked, nested: dict | None, cache: dict, stats: ScanStats):
        """The batch of ``block`` at the rows ``selection`` selects (not none): the
        projected flat columns ``rest`` decoded unless ``projected`` holds them, the
        filter columns' data (``filter_data``, at the candidates ``mask`` kept unless
        ``picked``) cut to those rows, the nested fields assembled (or taken from
        ``nested``, their futures by output position), the row positions."""
        selected = selection.row_count
        arrays = []
        if projected is None and selected == selection.num_rows:  # every row: one executor call for all of them
            projected = self._whole_columns(block, rest, selected, cache, stats, fetched)
        elif projected is None:  # the executor, on the selected rows: from whole chunks when dense (local), else pages
            paged = bool(rest) and (fetched is not None or self.file.remote
                                    or not self._dense(block, selection, self._executor(rest)))
            projected = self._whole_columns(block, rest, selection.num_rows, cache, stats, fetched, selection, paged)
        # (else: decoded with the filter, in its call)
        at = None  # the selected rows among the candidates the filter columns hold (None: all)
        if filter_data and picked is None and selected < len(mask):
            at = np.flatnonzero(mask)
        for i, col in enumerate(self.outputs):
            if nested and i in nested:
                arr, own = nested[i].result()
                stats.add(own)
                arrays.append(arr)
            elif not isinstance(col, int):
                arrays.append(self._nested_at(block, col, selection, cache, stats))
            elif col in filter_data:  # decoded for the filter: keep its selected rows
                data = filter_data[col]
                arrays.append(self._to_arrow(col, data if at is None else gather_data(data, at)))
            else:
                data = projected[col]  # (Arrow already when the block executor decoded it)
                arrays.append(data if isinstance(data, pa.Array) else self._to_arrow(col, data))
        if self.with_row_position:
            arrays.append(int64_array(selection.to_indices() + self._first_rows[block]))
        elif not self.outputs:  # no columns projected: only the row count matters
            return pa.record_batch([pa.nulls(selected)], names=["_"]).select([])
        for i in self._required:
            if arrays[i].null_count:
                raise self.file.locate_error(CorruptFileError("nulls in a column declared not nullable"), block,
                                        self.outputs[i])
        return self._labels.batch(arrays)

    # ---------------------------------------------------------------- driving
    def _threads(self, blocks: list[int], count_only: bool = False) -> bool:
        """Whether ``blocks`` are decoded on the pool: ``use_threads``, and on a local
        file only when they are large enough (:func:`blocks_worth_threads`, on the
        uncompressed bytes of the stored columns the scan decodes: the filter's, lists'
        lengths and elements included, and with ``count_only`` no other)."""
        if not self.use_threads or len(blocks) < 2 or self.file.remote:
            return self.use_threads
        cols = set(self.row_filter_ids.values())
        nodes = [nested_list_node(self.file.nested, path)[0] for path in self.list_filters.values()]
        if not count_only:
            cols.update(self.col_ids)
            nodes += [out for out in self.outputs if not isinstance(out, int)]
        for node in nodes:
            cols.update(node.columns())
        if not cols:
            return False
        if self._take is not None and self.nnf is None:  # the pages holding the rows asked for
            return take_worth_threads(sum(self._take[b].row_count for b in blocks) * len(cols), len(blocks))
        sizes = self.file.footer.chunk_fields(("uncompressed_size",))[:, sorted(cols), 0]
        return blocks_worth_threads(sizes[np.asarray(blocks, np.int64)].sum(axis=1))

    def _run(self, blocks: list[int], use_threads: bool, window: int | None = None) -> Iterator[pa.RecordBatch]:
        if self.file.remote and len(blocks) > 1:
            self._groups = self._plan_groups(blocks)
        threaded = use_threads and len(blocks) > 1 and self._threads(blocks)
        # a block's columns on the pool too when its blocks are too few to keep every core
        # busy to the end (orders SF1, blocks of 1M and 0.45M rows: 116 -> 98 ms on two
        # cores; lineitem's six blocks gain nothing)
        self._column_threads = use_threads and (not threaded or len(blocks) < COLUMN_SPLIT_BLOCKS * cpu_threads())
        for batch, stats in map_blocks(self.scan_block, blocks, threaded, window):
            self.stats.add(stats)
            if batch is not None:
                yield batch

    def read(self) -> pa.Table:
        """All selected rows as one table (blocks decoded in parallel if use_threads)."""
        batches = list(self._run(self.blocks, self.use_threads))
        if not self.output_schema:
            rows = sum(b.num_rows for b in batches)
            # (replace_schema_metadata would drop the row count of a table without columns)
            return pa.table({"_": pa.nulls(rows)}, metadata=self.output_schema.metadata).select([])
        return pa.Table.from_batches(batches, schema=self.output_schema)

    def count(self) -> int:
        """The number of rows the filter selects (``len(read())`` without decoding the
        projected columns; answered from bitmap indexes where they decide the filter)."""
        if self.nnf is None:
            rows = self.file.footer.blocks
            return sum(self._asked(b, Selection.all(int(rows[b]["row_count"]))).row_count if self._changed(b)
                       else int(rows[b]["row_count"]) for b in self.blocks)
        total = 0
        blocks = []
        for b in self.blocks:
            answer = self._answers.get(b)
            if answer is not None and answer.exact and not self._changed(b):  # counted from the index
                n = answer.count
                total += n
                self.stats.rows_selected += n
                self.stats.rows_selected_index += n
            else:
                blocks.append(b)
        results = list(map_blocks(self.count_block, blocks, self._threads(blocks, count_only=True)))
        for _, stats in results:
            self.stats.add(stats)
        return total + sum(n for n, _ in results)

    def iter_batches(self, batch_size: int = 65536) -> Iterator[pa.RecordBatch]:
        """Stream selected rows block by block, in batches of at most ``batch_size``
        (with ``use_threads``, the next blocks are decoded while one is consumed: at
        most :data:`STREAM_WINDOW` per core in flight)."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise InvalidOptionError(f"batch_size must be a positive integer, got {batch_size!r}")
        window = STREAM_WINDOW * cpu_threads()
        for batch in self._run(self.blocks, self.use_threads, window):
            for start in range(0, batch.num_rows, batch_size):
                yield batch.slice(start, batch_size)

    def __arrow_c_stream__(self, requested_schema=None):
        """The selected rows as an Arrow C stream (the Arrow PyCapsule interface), block
        by block: ``polars.DataFrame(scan)``, ``pyarrow.table(scan)``, DuckDB."""
        return export_stream(self.output_schema, self.iter_batches(), requested_schema)


def _less_deleted(visible: Selection, selection: Selection, filter_data: dict, projected: dict | None):
    """A block's picked rows (``selection``, the filter columns' data at them and the
    projected columns decoded in the same call) without those ``visible`` leaves out."""
    rows = selection.to_indices()
    keep = visible.to_mask()[rows]
    if keep.all():
        return selection, filter_data, projected
    at = np.flatnonzero(keep)
    selection = Selection.from_indices(rows[at], selection.num_rows)
    filter_data = {c: gather_data(d, at) for c, d in filter_data.items()}
    if projected is not None:
        positions = int64_array(at)
        projected = {c: arrow_take(d, positions) if isinstance(d, pa.Array) else gather_data(d, at)
                     for c, d in projected.items()}
    return selection, filter_data, projected


def _block_range(blocks, n: int) -> tuple[int, int]:
    if blocks is None:
        return 0, n
    try:
        lo, hi = (int(b) for b in blocks)
    except (TypeError, ValueError):
        raise InvalidOptionError(f"blocks must be (start, stop), got {blocks!r}") from None
    if not 0 <= lo <= hi <= n:
        raise InvalidOptionError(f"blocks=({lo}, {hi}) is outside the file's {n} blocks")
    return lo, hi


def scan_file(file, columns=None, filter=None, *, use_threads: bool = True, read_dictionary=None,
              use_bloom: bool = True, use_page_index: bool = True, blocks=None,
              use_bitmap_index: bool = True, rows=None, with_row_position: bool = False, deleted=None) -> FileScan:
    """Plan a scan of ``file`` (pruning blocks now, pages and rows as it runs)."""
    return FileScan(file, columns, filter, use_threads=use_threads, read_dictionary=read_dictionary,
                    use_bloom=use_bloom, use_page_index=use_page_index, blocks=blocks,
                    use_bitmap_index=use_bitmap_index, rows=rows, with_row_position=with_row_position,
                    deleted=deleted)

