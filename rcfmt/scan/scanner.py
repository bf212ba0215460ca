"""The scan of one file: prune blocks, prune pages into row ranges, evaluate the filter
on the filter columns only (late materialization), then decode the projected columns
only for the pages that hold selected rows, gathering only the selected values.

Every stage keeps a superset of the matching rows until the exact evaluation; each is
counted in :class:`ScanStats`.

:class:`FileScan` is a facade over three parts: the request bound to the file
(:class:`~rcfmt.scan.query.ScanQuery`), the planner that prunes blocks and makes each
block's plan from metadata (:class:`~rcfmt.scan.planner.ScanPlanner`, a
:class:`~rcfmt.scan.plan.BlockPlan` per block) and the executor that runs a plan
(:class:`~rcfmt.scan.executor.BlockExecutor`); it drives them over the blocks, on the
pool when they are worth it. Every stored column, flat or under a nested field, is
decoded by the native block executor (:mod:`~rcfmt.scan.block_exec`).
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from ..errors import InvalidOptionError
from ..interop.arrow import export_stream
from ..runtime.options import flag
from ..runtime.threads import cpu_threads
from ..schema.arrow_io import compact_fixed_size_lists
from ..schema.nested import list_node as nested_list_node
from .executor import BlockExecutor
from .plan import FilePlan
from .planner import ScanPlanner
from .query import ScanQuery
from .source import ScanFile
from .scan_stats import ScanStats
from .scheduling import STREAM_WINDOW, blocks_worth_threads, map_blocks, take_worth_threads
from ..predicate.selection import Selection

__all__ = ["FileScan", "ScanStats", "scan_file"]

#: a scan whose blocks are decoded on the pool splits each block's columns among the
#: cores as well when it has fewer than this many blocks per core (one block at a time:
#: always)
COLUMN_SPLIT_BLOCKS = 2


class FileScan:
    """A planned scan of one open file (:class:`~rcfmt.scan.source.ScanFile`: an
    :class:`~rcfmt.file.reader.RcfmtFile`).

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
    scan runs; ``blocks`` and ``pruned`` say what block pruning kept and pruned.
    """

    def __init__(self, file: ScanFile, columns: Sequence[str] | None = None, filter=None, *, use_threads: bool = True,
                 read_dictionary: Sequence[str] | None = None, use_bloom: bool = True, use_page_index: bool = True,
                 blocks: tuple[int, int] | None = None, use_bitmap_index: bool = True, rows: np.ndarray | None = None,
                 with_row_position: bool | str = False, deleted: np.ndarray | None = None):
        self.file = file
        self.query = query = ScanQuery(
            file, columns, filter, read_dictionary=read_dictionary, use_bloom=use_bloom,
            use_page_index=use_page_index, blocks=blocks, use_bitmap_index=use_bitmap_index, rows=rows,
            with_row_position=with_row_position, deleted=deleted)
        self.use_threads = flag(use_threads, "use_threads")
        self.output_schema = query.output_schema
        lo, hi = query.block_range
        rows_total = file.num_rows if (lo, hi) == (0, file.num_blocks) else int(
            np.asarray(file.footer.blocks["row_count"][lo:hi], np.int64).sum())
        self.stats = ScanStats(files_total=1, blocks_total=hi - lo, rows_total=rows_total)
        before = file.thread_requests()
        self._planner = ScanPlanner(query, self.stats)  # (prunes blocks: bloom filters read)
        self.stats.requests += file.thread_requests() - before
        self._executor = BlockExecutor(self._planner)
        #: the blocks block pruning kept, and those each stage pruned (:meth:`plan` adds
        #: those the page index and bitmap indexes prune per block)
        self.blocks = self._planner.blocks
        self.pruned = self._planner.pruned

    @property
    def nnf(self):
        """The bound, normalized filter (None: every row)."""
        return self.query.nnf

    @property
    def deleted(self) -> np.ndarray | None:
        """The rows of the file a deletion vector removes (``deleted=``)."""
        return self.query.deleted

    def row_ranges(self, block: int, cache: dict):
        """The rows of ``block`` the page index leaves to the filter (a RowRanges)."""
        return self._planner.pages.row_ranges(block, cache)

    # ---------------------------------------------------------------- planning
    def plan(self, fetch: bool = True) -> FilePlan:
        """The scan's plan (:class:`~rcfmt.scan.plan.FilePlan`), from metadata only: the
        blocks each stage pruned, and per kept block what its execution runs -- its
        candidate rows, the filter left to decode, its mode and (``fetch``) the byte
        ranges it reads first, exactly (:mod:`rcfmt.scan.plan`). Reading the plan costs
        page-index and bitmap-index reads, never a data page; the scan's ``stats`` are
        left as they were."""
        return self._planner.plan(self.stats.rows_total, fetch)

    def explain(self) -> str:
        """The plan as text: what pruned which blocks, the candidate rows and bytes of
        each kept block, how each is decided, and where each part of the filter is
        evaluated."""
        return self.plan().explain()

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
        groups = self._executor.groups
        try:
            cache: dict = {}  # the block's page indexes, read by planning, used by execution
            plan = self._planner.block_plan(block, cache, stats, count_only, groups)
            if plan is None:
                return (0 if count_only else None), stats
            return self._executor.execute(plan, cache, stats, count_only)
        finally:
            stats.requests += self.file.thread_requests() - before
            if groups is not None:
                groups.done(block)

    # ---------------------------------------------------------------- driving
    def _threads(self, blocks: list[int], count_only: bool = False) -> bool:
        """Whether ``blocks`` are decoded on the pool: ``use_threads``, and on a local
        file only when they are large enough (:func:`blocks_worth_threads`, on the
        uncompressed bytes of the stored columns the scan decodes: the filter's, lists'
        lengths and elements included, and with ``count_only`` no other)."""
        if not self.use_threads or len(blocks) < 2 or self.file.remote:
            return self.use_threads
        query = self.query
        cols = set(query.row_filter_ids.values())
        nodes = [nested_list_node(self.file.nested, path)[0] for path in query.list_filters.values()]
        if not count_only:
            cols.update(query.col_ids)
            nodes += [out for out in query.outputs if not isinstance(out, int)]
        for node in nodes:
            cols.update(node.columns())
        if not cols:
            return False
        if query.take is not None and query.nnf is None:  # the pages holding the rows asked for
            return take_worth_threads(sum(query.take[b].row_count for b in blocks) * len(cols), len(blocks))
        sizes = self.file.footer.chunk_fields(("uncompressed_size",))[:, sorted(cols), 0]
        return blocks_worth_threads(sizes[np.asarray(blocks, np.int64)].sum(axis=1))

    def _run(self, blocks: list[int], use_threads: bool, window: int | None = None) -> Iterator[pa.RecordBatch]:
        if self.file.remote and len(blocks) > 1:
            self._executor.groups = self._planner.groups(blocks)
        threaded = use_threads and len(blocks) > 1 and self._threads(blocks)
        # a block's columns on the pool too when its blocks are too few to keep every core
        # busy to the end (orders SF1, blocks of 1M and 0.45M rows: 116 -> 98 ms on two
        # cores; lineitem's six blocks gain nothing)
        self._executor.column_threads = use_threads and (not threaded or len(blocks) < COLUMN_SPLIT_BLOCKS * cpu_threads())
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
        query = self.query
        if query.nnf is None:
            rows = self.file.footer.blocks
            return sum(query.asked(b, Selection.all(int(rows[b]["row_count"]))).row_count if query.changed(b)
                       else int(rows[b]["row_count"]) for b in self.blocks)
        total = 0
        blocks = []
        for b in self.blocks:
            answer = self._planner.answers.get(b)
            if answer is not None and answer.exact and not query.changed(b):  # counted from the index
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
        fixed = [i for i, f in enumerate(self.output_schema) if pa.types.is_fixed_size_list(f.type)]
        for batch in self._run(self.blocks, self.use_threads, window):
            if batch.num_rows <= batch_size:
                yield batch
                continue
            for start in range(0, batch.num_rows, batch_size):
                part = batch.slice(start, batch_size)
                yield compact_fixed_size_lists(part, fixed) if fixed else part

    def __arrow_c_stream__(self, requested_schema=None):
        """The selected rows as an Arrow C stream (the Arrow PyCapsule interface), block
        by block: ``polars.DataFrame(scan)``, ``pyarrow.table(scan)``, DuckDB."""
        return export_stream(self.output_schema, self.iter_batches(), requested_schema)

    def __arrow_c_schema__(self):
        """The stream's schema (``output_schema``)."""
        return self.output_schema.__arrow_c_schema__()


def scan_file(file: ScanFile, columns=None, filter=None, *, use_threads: bool = True, read_dictionary=None,
              use_bloom: bool = True, use_page_index: bool = True, blocks=None,
              use_bitmap_index: bool = True, rows=None, with_row_position: bool | str = False,
              deleted=None) -> FileScan:
    """Plan a scan of ``file`` (pruning blocks now, pages and rows as it runs)."""
    return FileScan(file, columns, filter, use_threads=use_threads, read_dictionary=read_dictionary,
                    use_bloom=use_bloom, use_page_index=use_page_index, blocks=blocks,
                    use_bitmap_index=use_bitmap_index, rows=rows, with_row_position=with_row_position,
                    deleted=deleted)
