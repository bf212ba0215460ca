"""Planning a scan of one file (:class:`ScanPlanner`), from metadata alone: the blocks
that may match (:mod:`~rcfmt.scan.block_pruning`), then per block the plan its
execution runs (:class:`~rcfmt.scan.plan.BlockPlan`): its candidate rows (the page
index's row ranges, the bitmap indexes' answer, ``take`` positions, less deleted rows),
the filter left to decode (less the conjuncts the indexes decided or the block's
statistics prove), and its physical choices -- the mode, the program, how its first
bytes are read and which. :class:`~rcfmt.scan.executor.BlockExecutor` runs a plan;
:meth:`ScanPlanner.plan` gathers every block's into a
:class:`~rcfmt.scan.plan.FilePlan` (``explain()``).
"""
from __future__ import annotations

from ..runtime.records import replace
from .block_pruning import INDEX_NARROWS, BlockPruning
from .fetch_plan import BlockGroups
from .fetching import Reads, dense
from .page_pruning import PageIndexes
from .plan import CHUNKS, FUSED, GROUP, LISTS, MASK, PAGES, PICK, RANGED, BlockPlan, FilePlan
from .programs import Programs
from .scan_stats import ScanStats
from ..predicate.selection import Selection

__all__ = ["DEFER_DELETED", "EVERY_ROW_SHARE", "ScanPlanner"]

#: a block whose deletion vector deletes at most 1/DEFER_DELETED of its rows has its filter
#: decided on the candidates as they are, the deleted rows taken out of the answer after
#: (:meth:`ScanQuery.deferred <rcfmt.scan.query.ScanQuery.deferred>`): scattered deleted
#: rows would otherwise cut a run of candidates into thousands, which the executor then
#: gathers instead of streaming (TPC-H Q6 after 1,000 scattered deletes: 1.28x the time before)
DEFER_DELETED = 16

#: a block whose candidates from the page index are at least this share of its rows, read
#: in whole chunks, has its (wholly native) filter run on every row rather than on the
#: candidates listed: the rows of the pages pruned cost less to decode than a list of
#: every candidate to make, check and gather by (a merge's 10,000 keys leave ~all of
#: every block: its key scan 2-3 ms faster of ~40, on two threads)
EVERY_ROW_SHARE = 0.9


class ScanPlanner:
    """The planner of the scan ``query`` (:class:`~rcfmt.scan.query.ScanQuery`): it
    prunes blocks when made (counted in ``stats``), keeping ``blocks``, ``pruned`` (per
    stage) and what bitmap indexes said of each block kept; :meth:`block_plan` plans a
    block. ``pages``, ``reads`` and ``programs`` are the scan's page indexes, byte
    ranges and native programs, which its executor shares."""

    def __init__(self, query, stats: ScanStats):
        self.query = query
        self.file = query.file
        self.pages = PageIndexes(query)
        self.reads = Reads(query, self.pages)
        self.programs = Programs(query)
        pruning = BlockPruning(query, self.pages, stats)
        blocks = pruning.run()
        if query.take is not None:  # (blocks holding no row asked for are never planned)
            blocks = [b for b in blocks if b in query.take]
        if query.visible is not None:  # (nor blocks whose every row is deleted)
            blocks = [b for b in blocks if b not in query.visible or query.visible[b].row_count]
        self.blocks = self.pages.blocks = blocks
        self.pruned = pruning.pruned
        self.answers = pruning.answers
        self._filter_stats = pruning.filter_stats
        self._proven: dict | None = None

    # ---------------------------------------------------------------- one block
    def block_plan(self, block: int, cache: dict, stats: ScanStats, count_only: bool = False,
                   groups: BlockGroups | None = None) -> BlockPlan | None:
        """The plan of ``block`` (None: pruned, no row can match): its candidates and the
        filter left (:meth:`candidates`), and how the executor decides it
        (:meth:`_physical`; ``count_only``: for a count; ``groups``: the blocks of a
        remote scan read together). ``cache``: the block's page indexes, kept for its
        execution."""
        plan = self.candidates(block, cache, stats)
        return None if plan is None else self._physical(plan, cache, count_only, groups)

    def candidates(self, block: int, cache: dict, stats: ScanStats) -> BlockPlan | None:
        """The plan of ``block`` (None: pruned, no row can match): the rows that may match,
        from its page index and its bitmap indexes, and the filter left to decode, with
        the conjuncts the indexes decided exactly taken out (None when they decided all
        of it: the candidates are then exactly the matching rows). Reads metadata only."""
        query = self.query
        rows = query.block_rows(block)
        if query.nnf is None:  # (every row: what row_ranges says without a filter)
            return BlockPlan(block, rows, query.asked(block, Selection.all(rows)), None)
        from ..index.bitmap.answer import to_mask  # (a filter's: an unfiltered scan loads none of it)
        from ..predicate.nnf import BoundAnd

        answer = self.answers.get(block)
        if answer is not None and answer.exact:  # no filter column to decode, no page index to ask
            candidates = query.asked(block, Selection.from_mask(to_mask(answer.maybe, rows), kind="bitmap"))
            stats.rows_selected_index += candidates.row_count
            return BlockPlan(block, rows, candidates, None, "exact")
        ranges = self.pages.row_ranges(block, cache)
        if ranges.row_count == 0:
            stats.blocks_pruned_pages += 1
            return None
        visible = query.deferred(block, DEFER_DELETED)
        candidates = query.asked(block, Selection.from_ranges(ranges, rows), visible is None)
        if candidates.row_count == 0:
            return None
        if answer is None or answer.count * INDEX_NARROWS > rows:
            # (an index that leaves many rows would only add gathers to a filter that
            # decodes its columns' pages anyway: it served to prune the block)
            return self._less_proven(BlockPlan(block, rows, candidates, query.nnf, visible=visible))
        candidates = candidates.intersect(Selection.from_mask(to_mask(answer.maybe, rows), kind="bitmap"))
        if candidates.row_count == 0:
            stats.blocks_pruned_index += 1
            return None
        residual = answer.residual
        return self._less_proven(BlockPlan(block, rows, candidates, residual[0] if len(residual) == 1
                                           else BoundAnd.of(*residual), "narrowed", visible=visible))

    def _physical(self, plan: BlockPlan, cache: dict, count_only: bool, groups: BlockGroups | None) -> BlockPlan:
        """``plan`` with its physical choices made (:mod:`rcfmt.scan.plan`), from metadata
        only: its mode and program, how its first bytes are read and which (``fetch``),
        whether its filter runs on every row and whether the projection rides along."""
        query, remote = self.query, self.file.remote
        block, candidates, nnf = plan.block, plan.candidates, plan.residual
        if nnf is None:  # (built, not replaced: a take's many blocks each plan this way)
            extra = {} if count_only else self._projection_fetch(block, candidates, cache, groups)
            return BlockPlan(block, plan.rows, candidates, None, plan.index, visible=plan.visible, proven=plan.proven,
                             **extra) if extra else plan
        filter_ids, list_filters = query.residual_columns(nnf)
        program = self.programs.filter(nnf, filter_ids)
        if program is None:
            return replace(plan, mode=LISTS)
        all_rows = candidates.row_count == plan.rows
        is_dense = all_rows or (not remote and dense(block, candidates, program.columns))
        grouped = groups is not None and block in groups
        rest = [c for c in query.col_ids if c not in filter_ids.values()]
        mode = MASK
        if program.complete and not list_filters and not count_only:  # the rows, in the same call
            mode = PICK
            fused = None if grouped or remote else self.programs.fused(nnf, filter_ids, rest)
            if fused is not None and fused[1][block] and is_dense:  # the projection too: whole chunks, one call
                mode, program = FUSED, fused[0]
        read = GROUP if grouped else RANGED if remote else CHUNKS if is_dense else PAGES
        # (rows outside the candidates cannot match when page pruning alone left them out)
        pruned_only = plan.index is None and query.take is None and (
            plan.visible is not None or query.visible is None or block not in query.visible)
        every = (mode != MASK and read == CHUNKS and pruned_only and not all_rows
                 and candidates.row_count >= EVERY_ROW_SHARE * plan.rows)
        ride = {}
        if read == RANGED and rest and not count_only:  # the projected candidate pages along, when few
            scratch = ScanStats()
            ride = {col: self.reads.plan_column(block, col, candidates, cache, scratch) for col in rest}
            if self.reads.planned_bytes(block, ride, cache) > query.gap:
                ride = {}
        fetch, tables = self._filter_fetch(block, read, program.columns, candidates, cache, ride)
        return replace(plan, mode=mode, read=read, every=every, ride=bool(ride), fetch=fetch, tables=tables,
                       program=program)

    def _filter_fetch(self, block: int, read: str, columns, candidates: Selection, cache: dict, ride: dict):
        """``(fetch, tables)`` of a block whose filter columns (``columns``) are read as
        ``read`` says (:meth:`_physical`): the byte ranges, and for :data:`PAGES` the
        candidate pages' tables (file offsets)."""
        if read == CHUNKS:
            return self.reads.chunks(columns, block), None
        if read == PAGES:
            tables = self.pages.tables(block, columns.cols, candidates, cache)
            return self.reads.table_ranges(block, columns.cols, tables), tables
        if read == RANGED:
            scratch = ScanStats()  # (pages are counted where they are decoded)
            plans = {col: self.reads.plan_column(block, col, candidates, cache, scratch) for col in columns.cols}
            return self.reads.byte_ranges(block, {**plans, **ride}, cache), None
        return None, None  # (GROUP: read with its neighbours)

    def _projection_fetch(self, block: int, selection: Selection, cache: dict, groups: BlockGroups | None) -> dict:
        """The ``read``, ``fetch`` and ``tables`` of a block whose projected flat columns
        are decoded at ``selection`` with no filter before them."""
        cols = self.query.col_ids
        if not cols or not selection.row_count:
            return {}
        if groups is not None and block in groups:
            return {"read": GROUP}
        columns = self.programs.columns(cols)
        if selection.row_count == selection.num_rows or (not self.file.remote and dense(block, selection, columns)):
            return {"read": CHUNKS, "fetch": self.reads.chunks(columns, block)}
        tables = self.pages.tables(block, cols, selection, cache)
        return {"read": RANGED if self.file.remote else PAGES, "fetch": self.reads.table_ranges(block, cols, tables),
                "tables": tables}

    def _less_proven(self, plan: BlockPlan) -> BlockPlan:
        """``plan`` without the conjuncts its block's statistics prove TRUE on every row
        (:func:`~rcfmt.predicate.prune.always_true`: a block inside a window's bounds decodes
        no filter column for them); with none left, its candidates (less its deleted
        rows) are exactly the matching rows."""
        proven = self._proven_conjuncts()
        if not proven:
            return plan
        from ..predicate.nnf import BoundAnd

        conjuncts = plan.residual.children if isinstance(plan.residual, BoundAnd) else (plan.residual,)
        held = [id(c) in proven and bool(proven[id(c)][plan.block]) for c in conjuncts]
        if not any(held):
            return plan
        left = [c for c, h in zip(conjuncts, held) if not h]
        shown = tuple(c for c, h in zip(conjuncts, held) if h)  # (shown as text only when asked: a long IN list's is long)
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
            from ..predicate.nnf import BoundAnd
            from ..predicate.prune import always_true

            nnf = self.query.nnf
            conjuncts = nnf.children if isinstance(nnf, BoundAnd) else (nnf,)
            stats = self._filter_stats  # (the blocks' statistics pruning read)
            n = self.file.num_blocks
            proven = {id(c): always_true(c, stats, n) for c in conjuncts}
            self._proven = {k: v.tolist() for k, v in proven.items() if v.any()}  # (built alike by racing threads)
        return self._proven

    # ---------------------------------------------------------------- the whole file
    def groups(self, blocks: list[int]) -> BlockGroups | None:
        """On object storage, before any block is decoded: the byte ranges each block
        will need (every page that may hold a matching row, of every column the scan
        reads), grouped so that consecutive blocks needing most of their bytes are read
        with one request (:mod:`rcfmt.scan.fetch_plan`)."""
        query = self.query
        spans = {}
        scratch = ScanStats()
        for block in blocks:
            cache: dict = {}
            ranges = self.pages.planned[block] = self.pages.row_ranges(block, cache)
            if ranges.row_count == 0:
                continue
            rows = query.block_rows(block)
            # (the candidates the executor decodes: deleted rows left in when the plan takes them out after)
            candidates = query.asked(block, Selection.from_ranges(ranges, rows),
                                     query.deferred(block, DEFER_DELETED) is None)
            if candidates.row_count == 0:
                continue
            plans = {col: self.reads.plan_column(block, col, candidates, cache, scratch) for col in query.needed}
            found = self.reads.byte_ranges(block, plans, cache)
            if found is not None:
                spans[block] = found
        groups = BlockGroups(spans, query.gap, self.file.fetch.max_request_bytes)
        return groups if len(groups) else None

    def plan(self, rows_total: int, fetch: bool = True) -> FilePlan:
        """The scan's plan (:class:`~rcfmt.scan.plan.FilePlan`), from metadata only: the
        blocks each stage pruned, and per kept block what its execution runs -- its
        candidate rows, the filter left to decode, its mode and (``fetch``) the byte
        ranges it reads first, exactly (:mod:`rcfmt.scan.plan`). Costs page-index and
        bitmap-index reads, never a data page."""
        query = self.query
        scratch = ScanStats()
        pruned = {stage: list(blocks) for stage, blocks in self.pruned.items()}
        groups = self.groups(self.blocks) if self.file.remote and len(self.blocks) > 1 else None
        plans = []
        for block in self.blocks:
            cache: dict = {}
            before = scratch.blocks_pruned_pages
            plan = self.block_plan(block, cache, scratch, groups=groups)
            if plan is None:
                pruned["pages" if scratch.blocks_pruned_pages > before else "bitmap"].append(block)
                continue
            plans.append(plan if fetch else replace(plan, fetch=None, tables=None))
        nnf = query.nnf
        if nnf is None:
            pushed, mask_only, after = {}, set(), ()
        else:
            from ..predicate.nnf import BoundAnd

            conjuncts, mask_only = query.pushdown(nnf)
            pushed = {name: tuple(str(leaf) for leaf in group) for name, group in conjuncts.items()}
            in_pass = {id(leaf) for group in conjuncts.values() for leaf in group}
            children = nnf.children if isinstance(nnf, BoundAnd) else (nnf,)
            after = tuple(str(c) for c in children if id(c) not in in_pass)
        lo, hi = query.block_range
        return FilePlan(path=str(self.file.path), columns=tuple(query.output_schema.names),
                        filter=None if nnf is None else str(nnf), blocks_total=hi - lo,
                        rows_total=rows_total, pruned={k: tuple(sorted(v)) for k, v in pruned.items()},
                        pushed=pushed, mask_only=tuple(sorted(mask_only)), after_decode=after, blocks=tuple(plans))
