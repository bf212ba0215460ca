"""Running a block's plan (:class:`BlockExecutor`): the filter columns decoded at the
candidate rows and the rows decided, in the native call of the plan's program and mode,
then the projected flat columns decoded at those rows through the native block executor
(:mod:`~rcfmt.scan.block_exec`), read as whole chunks or as the pages holding them, the
nested fields assembled from their stored columns, and the columns made Arrow as the
scan was asked for them.

The executor makes one choice of its own: after a filter, whether the projected columns
are read whole or as the pages holding the selected rows (only the filter's answer says).
When a scan runs one block at a time (a one-block file, one block left by pruning, a
stream), or too few blocks to keep every core busy, ``use_threads`` splits a block among
the cores as well: the flat columns in groups of about equal bytes
(:func:`~rcfmt.scan.scheduling.column_groups`), each group one GIL-free executor call on
the "columns" pool, and the nested fields assembled there beside them.
"""
from __future__ import annotations


import numpy as np
import pyarrow as pa

from .._native import pageindex as _pageindex
from ..encodings.base import ColumnValues
from ..errors import CorruptFileError, RcfmtError
from ..runtime.threads import cpu_threads, shared_pool, wait_all
from ..schema.arrow_io import int64_array, take as arrow_take, to_arrow
from ..schema.nested import assemble as nested_assemble
from ..schema.nested import list_node as nested_list_node
from ..schema.nested import under_structs as nested_under_structs
from ..schema.types import LogicalType
from .block_exec import BlockColumns, BlockRead
from ..schema.values import ColumnData
from .fetch_plan import BlockGroups
from .fetching import dense
from .gather import empty_values, gather_data
from .plan import CHUNKS, FUSED, GROUP, LISTS, MASK, PICK, BlockPlan
from .scan_stats import ScanStats
from .scheduling import TAKE_THREADED_CELLS, chunk_costs, column_groups, columns_worth_threads
from ..predicate.selection import Selection

__all__ = ["BlockExecutor"]

_INT32 = LogicalType("int32")  # dictionary indices
_PAGE_COUNT = ("page_count",)


class BlockExecutor:
    """Runs the plans of the scan ``planner`` (:class:`~rcfmt.scan.planner.ScanPlanner`)
    made, with its page indexes, byte ranges and native programs. ``groups``: on object
    storage, the blocks read together (set by the driver before blocks run);
    ``column_threads``: whether a block's columns are decoded on the pool, split in
    groups (:meth:`_decode_split`), also set by the driver."""

    def __init__(self, planner):
        self.query = planner.query
        self.file = planner.file
        self.pages, self.reads, self.programs = planner.pages, planner.reads, planner.programs
        self.blocks = planner.blocks
        self.groups: BlockGroups | None = None
        self.column_threads = False
        self._column_groups: dict[tuple, list | None] = {}

    def execute(self, plan: BlockPlan, cache: dict, stats: ScanStats, count_only: bool = False):
        """Run ``plan`` (:meth:`ScanPlanner.block_plan
        <rcfmt.scan.planner.ScanPlanner.block_plan>`: its mode, program and reads
        decided; ``cache``: the page indexes its planning read): decode the filter
        columns at the candidate rows, decide the rows, and decode the projected columns
        at them -- ``(the block's batch or None, stats)``, or with ``count_only``
        ``(the rows selected, stats)``."""
        block, candidates, nnf, mode = plan.block, plan.candidates, plan.residual, plan.mode
        filter_ids, list_filters = ({}, {}) if nnf is None else self.query.residual_columns(nnf)
        rest = [c for c in self.query.col_ids if c not in filter_ids.values()]
        fetched = None
        if plan.read == GROUP:  # read with its neighbours
            buf, base, nbytes = self.groups.fetch(block, self.file)
            stats.bytes_read += nbytes
            fetched = (buf, base)
        picked = projected = mask = None
        filter_data: dict[int, ColumnData] = {}
        if mode in (FUSED, PICK, MASK):
            block_filter = plan.program
            buf, base, pages = self._filter_bytes(plan, block_filter.columns, cache, stats, fetched)
            wanted = None if plan.every or candidates.row_count == plan.rows else candidates.to_indices()
            block_read = BlockRead(buf, base, block, plan.rows, self.file.verify_checksums, wanted, pages)
            if mode == MASK:  # one native call decodes the filter columns into the mask
                mask, filter_data, read = block_filter.run(block_read)
            else:  # one native call decodes the filter columns and picks the rows (FUSED: and the projection)
                picks, filter_data, read = block_filter.select(block_read)
                picked = Selection.picked(*picks, plan.rows)
                if mode == FUSED:
                    projected = {c: filter_data.pop(c) for c in rest if c in filter_data}
            stats.pages_read += read[0]
            stats.rows_decoded += read[1]
            fetched = (buf, base) if plan.read == GROUP or plan.ride else None
            buf = block_read = None  # (the filter's bytes, freed before the projection's are read unless they hold them)
        if picked is not None:
            selection = picked
            if plan.visible is not None:
                selection, filter_data, projected = _less_deleted(plan.visible, selection, filter_data, projected)
        elif mode == MASK:
            if filter_data and not block_filter.complete:  # (no data: no row is TRUE, the mask is final)
                from ..predicate.evaluate import eval_nnf  # (a filter's: an unfiltered scan loads no evaluation)

                lists = self._lists_at(block, list_filters, candidates, cache, stats)
                ids = self.query.filter_ids
                mask = eval_nnf(nnf, lambda name: lists[name] if name in lists else filter_data[ids[name]],
                                candidates.row_count)
            if plan.visible is not None:
                mask = mask & plan.visible.to_mask()[candidates.to_indices()]
            if count_only:
                selected = int(np.count_nonzero(mask))
                stats.rows_selected += selected
                return selected, stats
            selection = candidates.refine(mask)
        elif mode == LISTS:
            from ..predicate.evaluate import eval_nnf

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
        nested = self._nested_on_pool(block, rest, selection, cache) if self.column_threads else None
        try:
            return self._outputs(block, selection, rest, projected, fetched, filter_data, mask, picked, nested,
                                 cache, stats), stats
        finally:  # (those the pool had not started are assembled here, or not needed: cancelled, not waited for)
            if nested:
                wait_all([f for f in nested.values() if not f.cancel()])

    def _filter_bytes(self, plan: BlockPlan, columns: BlockColumns, cache: dict, stats: ScanStats, fetched):
        """``(buffer, base, page tables or None)`` of the filter columns (``columns``) of
        ``plan``'s block: its ``fetch`` read (or its group's bytes, ``fetched``), and
        unless whole chunks are decoded, the candidate pages' tables in that buffer."""
        if plan.read != GROUP:
            fetched = self.reads.read(plan.fetch, stats)
        if plan.read == CHUNKS or plan.candidates.row_count == plan.rows:
            stats.pages_total += columns.pages[plan.block]
            return *fetched, None
        return self._page_tables(plan.block, columns.cols, plan.candidates, cache, stats, fetched, plan.tables)[:3]

    def _planned_projection(self, plan: BlockPlan, cols: list, cache: dict, stats: ScanStats) -> dict:
        """The projected flat columns ``cols`` of a :data:`ROWS` plan at its candidates,
        from the bytes it planned (``fetch``; ``tables`` for pages; whole chunks whose
        columns are split among the cores are copied by two of them too)."""
        candidates = plan.candidates
        split = plan.read == CHUNKS and self.column_threads and self._split(plan.block, cols) is not None
        fetched = self.reads.read(plan.fetch, stats, shared_pool("columns") if split else None)
        if plan.read == CHUNKS:
            stats.pages_total += self.programs.columns(cols).pages[plan.block]
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
                                    or not dense(block, selection, self.programs.columns(rest)))
            projected = self._whole_columns(block, rest, selection.num_rows, cache, stats, fetched, selection, paged)
        # (else: decoded with the filter, in its call)
        at = None  # the selected rows among the candidates the filter columns hold (None: all)
        if filter_data and picked is None and selected < len(mask):
            at = np.flatnonzero(mask)
        for i, col in enumerate(self.query.outputs):
            if nested and i in nested and not nested[i].cancel():  # (not started: assembled below instead)
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
        if self.query.with_row_position:
            arrays.append(int64_array(selection.to_indices() + self.query.first_rows[block]))
        elif not self.query.outputs:  # no columns projected: only the row count matters
            return pa.record_batch([pa.nulls(selected)], names=["_"]).select([])
        for i in self.query.required:
            if arrays[i].null_count:
                raise self.file.locate_error(CorruptFileError("nulls in a column declared not nullable"), block,
                                        self.query.outputs[i])
        return self.query.labels.batch(arrays)

    def _whole_columns(self, block: int, cols: list, rows: int, cache: dict, stats: ScanStats,
                       fetched: tuple | None = None, selection: Selection | None = None, paged: bool = False,
                       tables: list | None = None) -> dict:
        """``{column: Arrow array or ColumnData}`` of the flat columns ``cols`` at every row of ``block``
        (or the rows ``selection`` selects): one native call decodes them all
        (:mod:`rcfmt.scan.block_exec`), their whole chunks read together unless
        ``fetched`` (``(buffer, base)``) holds them already -- or, ``paged``, only the
        pages holding a selected row (:meth:`_page_tables`; ``tables``: planned). A column the executor
        refuses raises its located error (:mod:`rcfmt.scan.refusals`)."""
        if not cols:
            return {}
        executor = self.programs.columns(cols)
        pages = stored = None
        groups = self._split(block, cols) if self.column_threads and not paged else None
        if paged:
            buf, base, pages, stored = self._page_tables(block, cols, selection, cache, stats, fetched, tables)
        else:  # (the columns split among the cores: their chunks copied by two of them)
            buf, base = fetched if fetched is not None else \
                self._read_whole(executor, block, rows, stats, None if groups is None else shared_pool("columns"))
        out = {}
        read = BlockRead(buf, base, block, rows, self.file.verify_checksums,
                         None if selection is None else selection.to_indices(), pages)
        if paged and self.column_threads:
            groups = self._paged_split(block, cols, stored, read.out_rows)
        if groups is None:
            outputs, pages, rows_read = executor.run(read)
        else:
            outputs, pages, rows_read = self._decode_split(groups, cols, read)
        stats.pages_read += pages
        stats.rows_decoded += rows_read
        for col, ltype, got in zip(cols, executor.ltypes, outputs):
            if isinstance(got, tuple):  # read_dictionary, annotated types: wrapped by _to_arrow
                values, validity, codes, dictionary = got
                out[col] = ColumnData(ltype, values, validity, codes, dictionary)
            else:
                out[col] = got
        return out

    def _split(self, block: int, cols: list) -> list | None:
        """:func:`~rcfmt.scan.scheduling.column_groups` of ``cols`` in ``block``, by
        their :func:`~rcfmt.scan.scheduling.chunk_costs` in the blocks of the scan (one
        split per scan and list of columns: each group's executor is built once); None:
        decoded on this thread (too few bytes in ``block``, or one thread)."""
        key = tuple(cols)
        if key not in self._column_groups:
            costs = chunk_costs(self.file.footer)[:, cols]
            scanned = costs[np.asarray(self.blocks, np.int64)] if self.blocks else costs
            groups = column_groups(scanned.sum(axis=0), cpu_threads())
            self._column_groups[key] = None if groups is None else [[cols[i] for i in g] for g in groups]
        groups = self._column_groups[key]
        if groups is None or not columns_worth_threads(
                self.file.footer.chunk_fields(("uncompressed_size",))[block, cols, 0], cpu_threads()):
            return None
        return groups

    def _paged_split(self, block: int, cols: list, stored: np.ndarray, rows: int) -> list | None:
        """:func:`~rcfmt.scan.scheduling.column_groups` of ``cols`` decoded at ``rows``
        selected rows from some of their pages alone (a take, a lookup: the pages holding
        the rows; ``stored``: their bytes, per column), by the bytes those pages
        decompress to (their stored bytes scaled by their chunk's ratio); None: decoded
        on this thread -- also for fewer wanted (row, column) pairs than a take's blocks
        go to the pool for (:data:`~rcfmt.scan.scheduling.TAKE_THREADED_CELLS`: a row or
        two a column is mostly fixed costs, which a hand-off to the pool only adds to)."""
        if rows * len(cols) < TAKE_THREADED_CELLS:
            return None
        fields = self.file.footer.chunk_fields(("uncompressed_size", "length"))[block, cols]
        groups = column_groups(stored * fields[:, 0] // np.maximum(fields[:, 1], 1), cpu_threads())
        return None if groups is None else [[cols[i] for i in g] for g in groups]

    def _decode_split(self, groups: list, cols: list, read: BlockRead):
        """:meth:`BlockColumns.run` of ``cols`` in ``read`` (its ``pages``: per column of
        ``cols``, when only those pages are in its buffer), one call per unit of columns (``groups``,
        heaviest first), which this thread and ``cpu_threads() - 1`` workers of the pool
        take in turn (a busy pool leaves them all to this thread): ``(outputs in the
        order of cols, pages read, rows decoded)``.
        Every call is waited for; if one refused its columns, ``cols`` are decoded again
        on this thread, which raises the error one thread raises (the first column's)."""
        by_position = None if read.pages is None else dict(zip(cols, read.pages))
        got: list = [None] * len(groups)
        failed: list = []
        units = iter(range(len(groups)))  # (shared: each thread takes the next unit)

        def work():
            for k in units:
                group = groups[k]
                try:
                    got[k] = self.programs.columns(group).run(
                        read if by_position is None else read.with_pages([by_position[c] for c in group]))
                except BaseException as exc:  # (every unit is still decoded or given up)
                    failed.append((k, exc))

        pool = shared_pool("columns")
        futures = [pool.submit(work) for _ in range(min(cpu_threads(), len(groups)) - 1)]
        try:
            work()
        finally:  # (workers the pool had not started by now would find nothing left: not waited for)
            wait_all([f for f in futures if not f.cancel()])
        if failed:
            k, exc = min(failed, key=lambda f: f[0])
            if not isinstance(exc, RcfmtError):
                raise exc
            self.programs.columns(cols).run(read)
            raise exc  # (one thread decoded every column: not reached while decoding is deterministic)
        by_col = {}
        for group, (outputs, _, _) in zip(groups, got):
            by_col.update(zip(group, outputs))
        return [by_col[c] for c in cols], sum(g[1] for g in got), sum(g[2] for g in got)

    def _page_tables(self, block: int, cols, selection: Selection, cache: dict, stats: ScanStats,
                     fetched: tuple | None = None, tables: list | None = None):
        """``(buffer, base, tables, stored)``: the pages of ``cols`` holding a row
        ``selection`` selects (and their dictionary pages; ``tables``: their page tables,
        planned already), read together (:meth:`Reads.table_ranges
        <rcfmt.scan.fetching.Reads.table_ranges>`) unless ``fetched`` (``(buffer,
        base)``) holds them, per column their page table as the executor reads it
        (copies, offsets made positions in the buffer), and per column their bytes."""
        if tables is None:
            tables = self.pages.tables(block, cols, selection, cache)
        stats.pages_total += int(self.file.footer.chunk_fields(_PAGE_COUNT)[block, cols, 0].sum())
        if fetched is None:
            buf, base = self.reads.read(self.reads.table_ranges(block, cols, tables), stats)
        else:
            buf, base = fetched
        return buf, base, *_pageindex.shifted(tables, base)

    def _read_whole(self, executor: BlockColumns, block: int, rows: int, stats: ScanStats, pool=None):
        """``(buffer, base)``: the whole chunks ``executor`` decodes in ``block``, read
        (bytes and pages counted; the pages and rows decoded are counted by the caller,
        from the executor's answer); ``pool``: a large local read is copied in halves,
        one on it."""
        buf, base = self.reads.read(self.reads.chunks(executor, block), stats, pool)
        stats.pages_total += executor.pages[block]
        return buf, base

    def _to_arrow(self, col: int, data: ColumnData, as_requested: bool = True) -> pa.Array:
        """Column ``col``'s values as Arrow: a DictionaryArray when ``read_dictionary``
        names it (and ``as_requested``; parts of a nested field never are)."""
        ltype = data.ltype
        field_type = self.file.physical_schema.field(col).type
        dictionary = as_requested and col in self.query.dictionary_ids
        if data.codes is not None:
            if dictionary:
                indices = to_arrow(ColumnValues(data.codes.astype(np.int32)), data.validity, _INT32)
                return pa.DictionaryArray.from_arrays(indices, to_arrow(data.dictionary, None, ltype))
            from ..encodings.dictionary import take  # (the encoding's kernels, loaded by the first such column)

            values = take(data.dictionary, data.codes, ltype)
            return to_arrow(values, data.validity, ltype)
        if dictionary and ltype.annotated:  # (pyarrow encodes no decimal32/64 or extension arrays)
            from ..schema.annotated import from_storage

            encoded = to_arrow(data.values, data.validity, ltype.storage).dictionary_encode()
            try:
                return pa.DictionaryArray.from_arrays(encoded.indices, from_storage(encoded.dictionary, ltype))
            except pa.ArrowInvalid as exc:  # (more values than a declared index type addresses)
                raise CorruptFileError(f"values that cannot be encoded as {ltype.to_arrow()} ({exc})") from None
        arr = to_arrow(data.values, data.validity, ltype)
        if dictionary:
            arr = arr.dictionary_encode()
            if arr.type != pa.dictionary(pa.int32(), field_type):
                arr = arr.cast(pa.dictionary(pa.int32(), field_type))
        return arr

    def _nested_at(self, block: int, node, selection: Selection, cache: dict, stats: ScanStats) -> pa.Array:
        """A nested field at the selected rows of ``block``, assembled from its stored
        columns (:func:`rcfmt.schema.nested.assemble`). Every stored column is read like a flat
        one at the positions the selection needs in it (rows, or below a list the
        selected lists' elements, found through its lengths): only the pages holding
        them are read and decoded."""
        file = self.file
        rows = None if selection.row_count == selection.num_rows else selection.to_indices()
        # every row: every stored column is read whole, all of them with one read
        fetched = self.reads.fetch(block, {c: ("whole",) for c in node.columns()}, cache, stats) if rows is None else None

        def decode(col: int, slots: int, rows) -> pa.Array:
            if file.is_element_column(col):  # slots from the lengths: check them against the pages
                # (a whole chunk's pages are checked to hold exactly ``slots`` when decoded)
                held = None if rows is None else int(self.pages.page_index(block, col, cache).counts.sum())
                file.check_slots(block, col, slots, held)
            if rows is None:  # every slot: the chunk read with the field's others
                stats.pages_total += int(file.footer.chunks[col][block]["page_count"])
                got = self._whole_columns(block, [col], slots, cache, stats, fetched)[col]
            elif not len(rows):  # (no slot wanted: nothing read)
                stats.pages_total += len(self.pages.page_index(block, col, cache).entries)
                got = ColumnData(file.footer.columns[col].type, empty_values(file.footer.columns[col].type), None)
            else:  # the slots wanted: the pages holding them (or the whole chunk, when dense)
                wanted = Selection.from_indices(rows, slots)
                paged = self.file.remote or not dense(block, wanted, self.programs.columns([col]))
                got = self._whole_columns(block, [col], slots, cache, stats, None, wanted, paged)[col]
            arr = got if isinstance(got, pa.Array) else self._to_arrow(col, got, as_requested=False)
            if rows is None and arr.null_count and not file.footer.columns[col].nullable:
                raise file.locate_error(CorruptFileError("nulls in a column declared not nullable"), block, col)
            return arr

        def check(col: int, slots: int) -> None:  # (the element counts, before positions among them are made)
            file.check_slots(block, col, slots, int(self.pages.page_index(block, col, cache).counts.sum()))

        return self._assembled(node, decode, selection.num_rows, rows, block, check)

    def _lists_at(self, block: int, list_filters: dict, selection: Selection, cache: dict, stats: ScanStats) -> dict:
        """``{name: list array}`` of the filter's lists (name -> dotted path) at the
        selected rows of ``block``."""
        return {name: self._list_at(block, path, selection, cache, stats) for name, path in list_filters.items()}

    def _list_at(self, block: int, path: str, selection: Selection, cache: dict, stats: ScanStats) -> pa.Array:
        """The list at dotted ``path`` (top level or under structs) for the selected rows
        of ``block``: NULL where it or a struct above it is NULL."""
        node, names = nested_list_node(self.file.nested, path)
        return nested_under_structs(self._nested_at(block, node, selection, cache, stats), names)

    def _assembled(self, node, decode, slots: int, rows, block: int, check) -> pa.Array:
        node = self.query.labels.node(node)
        try:
            try:
                return nested_assemble(node, decode, slots, rows, check)
            except pa.ArrowInvalid as exc:  # (more slots or values than a declared run-end or index type addresses)
                raise CorruptFileError(f"values that cannot be encoded as {node.field.type} ({exc})") from None
        except CorruptFileError as exc:
            raise exc.with_context(path=self.file.path, column=node.name, block=block) from None

    def _nested_on_pool(self, block: int, rest: list, selection: Selection, cache: dict) -> dict | None:
        """Futures of the nested outputs of ``block`` at the rows ``selection`` selects,
        each assembled on the pool (``(array, its own ScanStats)``, by output position)
        while this thread decodes the flat columns ``rest`` -- when the scan runs one block
        at a time and :func:`~rcfmt.scan.scheduling.columns_worth_threads` finds the work
        worth splitting (each nested field and the flat columns together a unit, by bytes);
        None otherwise. Local files only (a remote file's reads are planned per block)."""
        if not self.query.nested_outputs or self.file.remote:
            return None
        sizes = self.file.footer.chunk_fields(("uncompressed_size",))[block, :, 0]
        positions = [i for i, out in enumerate(self.query.outputs) if not isinstance(out, int)]
        units = [int(sizes[rest].sum())] + [int(sizes[self.query.outputs[i].columns()].sum()) for i in positions]
        if not columns_worth_threads(units, cpu_threads()) or len(positions) < 2 and not rest:
            return None

        def assemble(node):
            own = ScanStats()
            before = self.file.thread_requests()
            arr = self._nested_at(block, node, selection, cache, own)
            own.requests += self.file.thread_requests() - before
            return arr, own

        pool = shared_pool("columns")
        return {i: pool.submit(assemble, self.query.outputs[i]) for i in positions}


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
