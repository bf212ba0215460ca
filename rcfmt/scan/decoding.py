"""Decoding a block's columns for :class:`~rcfmt.scan.scanner.FileScan` (a mixin):
flat stored columns through the native block executor (:mod:`~rcfmt.scan.block_exec`),
read as whole chunks or as the pages holding the selected rows; nested fields assembled
from their stored columns; columns made Arrow as the scan was asked for them.

When a scan runs one block at a time (a one-block file, one block left by pruning, a
stream), or too few blocks to keep every core busy, ``use_threads`` splits a block among
the cores as well: the
flat columns in groups of about equal bytes (:func:`~rcfmt.scan.scheduling.column_groups`),
each group one GIL-free executor call on the "columns" pool, and the nested fields
assembled there beside them.
"""
from __future__ import annotations

from concurrent.futures import wait

import numpy as np
import pyarrow as pa

from ..encodings.base import ColumnValues
from ..encodings.dictionary import take as dictionary_take
from ..errors import CorruptFileError
from ..runtime.threads import cpu_threads, shared_pool
from ..schema.arrow_io import to_arrow
from ..schema.nested import assemble as nested_assemble
from ..schema.nested import list_node as nested_list_node
from ..schema.nested import under_structs as nested_under_structs
from ..schema.types import LogicalType
from ..storage.fetch import coalesce
from .block_exec import BlockColumns
from .evaluate import ColumnData
from .gather import empty_values
from .scan_stats import ScanStats
from .scheduling import column_groups, columns_worth_threads
from .selection import Selection

__all__ = ["ColumnDecoding"]

_INT32 = LogicalType("int32")  # dictionary indices


class ColumnDecoding:
    """The decoding half of :class:`~rcfmt.scan.scanner.FileScan`."""

    def _executor(self, cols: list) -> BlockColumns:
        """The block executor's spec of the flat columns ``cols`` (built once per scan)."""
        key = tuple(cols)
        executor = self._executors.get(key)
        if executor is None:
            executor = self._executors[key] = BlockColumns(self.file, cols, self.dictionary_ids,
                                                           self._gap if self.file.remote else 0)
        return executor

    def _dense(self, block: int, selection: Selection, executor: BlockColumns) -> bool:
        """Whether the selected rows of ``block`` are worth reading ``executor``'s whole
        chunks for (one read): at least as many as a column has pages, and spanning a
        quarter of the block or more. Either way the executor decodes only the pages
        holding a selected row and gathers the rows; for fewer or clustered rows
        (lookups, narrow windows) the page index names those pages and only their
        bytes are read (:meth:`_page_tables`)."""
        if selection.row_count * len(executor.cols) < executor.pages[block]:
            return False
        first, last = selection.span()
        return 4 * (last - first + 1) >= selection.num_rows

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
        executor = self._executor(cols)
        pages = None
        if paged:
            buf, base, pages = self._page_tables(block, cols, selection, cache, stats, fetched, tables)
        else:
            buf, base = self._read_whole(executor, block, rows, stats) if fetched is None else fetched
        out = {}
        wanted = None if selection is None else selection.to_indices()
        groups = None if paged or not self._column_threads else self._split(block, cols)
        if groups is None:
            outputs, pages, rows_read = executor.run(buf, base, block, rows, self.file.verify_checksums,
                                                     selected=wanted, pages=pages)
        else:
            outputs, pages, rows_read = self._decode_split(groups, cols, buf, base, block, rows, wanted)
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
        their uncompressed bytes in the blocks of the scan (one split per scan and list
        of columns: each group's executor is built once); None: decoded on this thread
        (too few bytes in ``block``, or one thread)."""
        key = tuple(cols)
        if key not in self._column_groups:
            sizes = self.file.footer.chunk_fields(("uncompressed_size",))[:, cols, 0]
            scanned = sizes[np.asarray(self.blocks, np.int64)] if self.blocks else sizes
            groups = column_groups(scanned.sum(axis=0), cpu_threads())
            self._column_groups[key] = None if groups is None else [[cols[i] for i in g] for g in groups]
        groups = self._column_groups[key]
        if groups is None or not columns_worth_threads(
                self.file.footer.chunk_fields(("uncompressed_size",))[block, cols, 0], len(groups)):
            return None
        return groups

    def _decode_split(self, groups: list, cols: list, buf, base: int, block: int, rows: int, wanted):
        """:meth:`BlockColumns.run` of ``cols`` in ``block`` (all ``rows`` rows, or the
        ``wanted`` ones) from ``buf``, one call per group of columns, the first group on
        this thread and the others on the pool at the same time: ``(outputs in the order
        of cols, pages read, rows decoded)``. Every call is waited for before an error of
        one (the first group's, then the pool's in order) is raised."""
        verify = self.file.verify_checksums
        pool = shared_pool("columns")
        futures = [pool.submit(self._executor(g).run, buf, base, block, rows, verify, selected=wanted)
                   for g in groups[1:]]
        try:
            got = [self._executor(groups[0]).run(buf, base, block, rows, verify, selected=wanted)]
        finally:
            wait(futures)
        got += [f.result() for f in futures]
        by_col = {}
        for group, (outputs, _, _) in zip(groups, got):
            by_col.update(zip(group, outputs))
        return [by_col[c] for c in cols], sum(g[1] for g in got), sum(g[2] for g in got)

    def _candidate_tables(self, block: int, cols, selection: Selection, cache: dict) -> list:
        """Per column of ``cols``, the page table of its pages holding a row ``selection``
        selects (:meth:`PageIndex.table <rcfmt.index.page.PageIndex.table>`, file offsets)."""
        tables = []
        for col in cols:
            index = self._page_index(block, col, cache)
            tables.append(index.table(selection.pages_holding(index.first, index.counts)))
        return tables

    def _page_tables(self, block: int, cols, selection: Selection, cache: dict, stats: ScanStats,
                     fetched: tuple | None = None, tables: list | None = None):
        """``(buffer, base, tables)``: the pages of ``cols`` holding a row ``selection``
        selects (and their dictionary pages; ``tables``: their page tables, planned
        already), read together as :meth:`_fetch` reads them unless ``fetched``
        (``(buffer, base)``) holds them, and per column their page table as the
        executor reads it (offsets made positions in the buffer)."""
        own = tables is None  # (planned tables are the plan's: made relative in copies)
        if own:
            tables = self._candidate_tables(block, cols, selection, cache)
        for col in cols:
            stats.pages_total += len(self._page_index(block, col, cache).entries)
        if fetched is None:
            buf, base = self._read(self._table_ranges(block, cols, tables), stats)
        else:
            buf, base = fetched
        out = []
        for table in tables:
            table = table if own else table.copy()
            table[0] -= base
            out.append(table)
        return buf, base, out

    def _read_whole(self, executor: BlockColumns, block: int, rows: int, stats: ScanStats):
        """``(buffer, base)``: the whole chunks ``executor`` decodes in ``block``, read
        as :meth:`_fetch` would read them (bytes and pages counted; the pages and rows
        decoded are counted by the caller, from the executor's answer)."""
        starts, ends, merged = executor.ranges(block)
        if not merged:
            starts, ends = coalesce(starts, ends, self._gap if self.file.remote else 0)
        buf = self.file.read_ranges(starts, ends)
        stats.bytes_read += int(ends[0] - starts[0]) if len(starts) == 1 else int(np.add.reduce(ends - starts))
        stats.pages_total += executor.pages[block]
        return buf, int(starts[0])

    def _to_arrow(self, col: int, data: ColumnData, as_requested: bool = True) -> pa.Array:
        """Column ``col``'s values as Arrow: a DictionaryArray when ``read_dictionary``
        names it (and ``as_requested``; parts of a nested field never are)."""
        ltype = data.ltype
        field_type = self.file.physical_schema.field(col).type
        dictionary = as_requested and col in self.dictionary_ids
        if data.codes is not None:
            if dictionary:
                indices = to_arrow(ColumnValues(data.codes.astype(np.int32)), data.validity, _INT32)
                return pa.DictionaryArray.from_arrays(indices, to_arrow(data.dictionary, None, ltype))
            values = dictionary_take(data.dictionary, data.codes, ltype)
            return to_arrow(values, data.validity, ltype)
        if dictionary and ltype.annotated:  # (pyarrow encodes no decimal32/64 or extension arrays)
            from ..schema.annotated import from_storage

            encoded = to_arrow(data.values, data.validity, ltype.storage).dictionary_encode()
            return pa.DictionaryArray.from_arrays(encoded.indices, from_storage(encoded.dictionary, ltype))
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
        fetched = self._fetch(block, {c: ("whole",) for c in node.columns()}, cache, stats) if rows is None else None

        def decode(col: int, slots: int, rows) -> pa.Array:
            if file.is_element_column(col):  # slots from the lengths: check them against the pages
                # (a whole chunk's pages are checked to hold exactly ``slots`` when decoded)
                held = None if rows is None else int(self._page_index(block, col, cache).counts.sum())
                file.check_slots(block, col, slots, held)
            if rows is None:  # every slot: the chunk read with the field's others
                stats.pages_total += int(file.footer.chunks[col][block]["page_count"])
                got = self._whole_columns(block, [col], slots, cache, stats, fetched)[col]
            elif not len(rows):  # (no slot wanted: nothing read)
                stats.pages_total += len(self._page_index(block, col, cache).entries)
                got = ColumnData(file.footer.columns[col].type, empty_values(file.footer.columns[col].type), None)
            else:  # the slots wanted: the pages holding them (or the whole chunk, when dense)
                wanted = Selection.from_indices(rows, slots)
                paged = self.file.remote or not self._dense(block, wanted, self._executor([col]))
                got = self._whole_columns(block, [col], slots, cache, stats, None, wanted, paged)[col]
            arr = got if isinstance(got, pa.Array) else self._to_arrow(col, got, as_requested=False)
            if rows is None and arr.null_count and not file.footer.columns[col].nullable:
                raise file.locate_error(CorruptFileError("nulls in a column declared not nullable"), block, col)
            return arr

        return self._assembled(node, decode, selection.num_rows, rows, block)

    def _lists_at(self, block: int, list_filters: dict, selection: Selection, cache: dict, stats: ScanStats) -> dict:
        """``{name: list array}`` of the filter's lists (name -> dotted path) at the
        selected rows of ``block``."""
        return {name: self._list_at(block, path, selection, cache, stats) for name, path in list_filters.items()}

    def _list_at(self, block: int, path: str, selection: Selection, cache: dict, stats: ScanStats) -> pa.Array:
        """The list at dotted ``path`` (top level or under structs) for the selected rows
        of ``block``: NULL where it or a struct above it is NULL."""
        node, names = nested_list_node(self.file.nested, path)
        return nested_under_structs(self._nested_at(block, node, selection, cache, stats), names)

    def _assembled(self, node, decode, slots: int, rows, block: int) -> pa.Array:
        node = self._labels.node(node)
        try:
            return nested_assemble(node, decode, slots, rows)
        except CorruptFileError as exc:
            raise exc.with_context(path=self.file.path, column=node.name, block=block) from None

    def _nested_on_pool(self, block: int, rest: list, selection: Selection, cache: dict) -> dict | None:
        """Futures of the nested outputs of ``block`` at the rows ``selection`` selects,
        each assembled on the pool (``(array, its own ScanStats)``, by output position)
        while this thread decodes the flat columns ``rest`` -- when the scan runs one block
        at a time and :func:`~rcfmt.scan.scheduling.columns_worth_threads` finds the work
        worth splitting (each nested field and the flat columns together a unit, by bytes);
        None otherwise. Local files only (a remote file's reads are planned per block)."""
        if not self._nested_outputs or self.file.remote:
            return None
        sizes = self.file.footer.chunk_fields(("uncompressed_size",))[block, :, 0]
        positions = [i for i, out in enumerate(self.outputs) if not isinstance(out, int)]
        units = [int(sizes[rest].sum())] + [int(sizes[self.outputs[i].columns()].sum()) for i in positions]
        if not columns_worth_threads(units, cpu_threads()) or len(positions) < 2 and not rest:
            return None

        def assemble(node):
            own = ScanStats()
            before = self.file.thread_requests()
            arr = self._nested_at(block, node, selection, cache, own)
            own.requests += self.file.thread_requests() - before
            return arr, own

        pool = shared_pool("columns")
        return {i: pool.submit(assemble, self.outputs[i]) for i in positions}
