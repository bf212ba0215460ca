"""The per-column Python page path: the selected rows of one column chunk decoded around
one native ``read_pages`` call (:class:`~rcfmt.file.chunks.ChunkDecoder`), the path every
flat column took before the block executor (:mod:`rcfmt.scan.block_exec`).

It is left what the executor does not take: the stored columns of nested fields,
filters on lists, and a column the executor refuses -- the path then decodes it, or
raises the located :class:`~rcfmt.errors.CorruptFileError` it always raised.
"""
from __future__ import annotations

import numpy as np

from ..runtime import memory
from .._native import varbinary as _vb
from ..encodings.base import ColumnValues
from ..errors import CorruptFileError, UnsupportedError
from ..schema.types import PhysicalKind
from .evaluate import ColumnData, native_predicate
from .scan_stats import ScanStats
from .selection import Selection

__all__ = ["PagePath", "empty_values", "gather_data", "gather_values"]


def gather_values(values: ColumnValues, idx: np.ndarray) -> ColumnValues:
    """The values at positions ``idx`` (fixed width, or strings/binary with offsets)."""
    if values.offsets is None:
        return ColumnValues(values.values[idx])
    offsets = np.ascontiguousarray(values.offsets, dtype=np.int64)
    new_offsets, data = _vb.gather(offsets, values.values, idx)
    return ColumnValues(data, new_offsets)


def gather_data(data: ColumnData, idx: np.ndarray) -> ColumnData:
    """A column's decoded data (values or codes, validity, pushed mask) at positions ``idx``."""
    valid = None if data.valid is None else data.valid[idx]
    if valid is not None and valid.all():
        valid = None
    pushed = None if data.pushed is None else (data.pushed[0][idx], data.pushed[1])
    if data.codes is not None:
        return ColumnData(data.ltype, None, valid, data.codes[idx], data.dictionary, pushed)
    return ColumnData(data.ltype, gather_values(data.values, idx), valid, pushed=pushed)


def empty_values(ltype) -> ColumnValues:
    """No values of ``ltype`` (a chunk none of whose rows is read)."""
    if ltype.kind == PhysicalKind.VARBINARY:
        return ColumnValues(np.empty(0, np.uint8), np.zeros(1, np.int64))
    return ColumnValues(np.empty(0, ltype.numpy_dtype))


class PagePath:
    """The page path's part of :class:`~rcfmt.scan.scanner.FileScan` (a mixin): it
    reads ``self.file``, plans with ``_plan_column``, reads with ``_fetch`` and finds
    pages with ``_page_index``; ``_value_predicates`` caches the decode pass's
    predicates per scan."""

    def _gather_positions(self, block: int, col: int, plan: tuple, selection: Selection, cache: dict):
        """Where the selected rows of ``block`` lie among the rows of the pages ``plan``
        decodes (int64), or None when they are all of those rows."""
        index = self._page_index(block, col, cache)
        page_ids = plan[1]
        decoded = int(index.counts[page_ids].sum())
        positions = plan[2]
        if positions is not None:
            return None if len(positions) == decoded else positions
        if selection.row_count == decoded:  # every row of the decoded pages
            return None
        rows = selection.to_indices()
        page_first = index.first[page_ids]
        offsets = np.concatenate(([0], np.cumsum(index.counts[page_ids])[:-1]))
        k = np.searchsorted(page_first, rows, side="right") - 1
        return rows - page_first[k] + offsets[k]

    def _columns_at(self, block: int, cols, selection: Selection, cache: dict, stats: ScanStats,
                    fetched: tuple | None = None) -> dict:
        """``{column: ColumnData}`` of ``cols`` at the selected rows of ``block``, their
        bytes fetched together (:meth:`_fetch`), unless ``fetched`` (``(buffer, base)``)
        already holds them."""
        plans = {col: self._plan_column(block, col, selection, cache, stats) for col in cols}
        buf, base = fetched if fetched is not None else self._fetch(block, plans, cache, stats)
        return {col: self._column_from(block, col, plan, selection, buf, base, cache, stats)
                for col, plan in plans.items()}

    def _column_from(self, block: int, col: int, plan: tuple, selection: Selection, buf, base: int, cache: dict,
                     stats: ScanStats, conjuncts: list | None = None, mask_only: bool = False,
                     shared: dict | None = None) -> ColumnData:
        """Decoded values of column ``col`` at the selected rows of ``block``, from the
        bytes :meth:`_fetch` read for ``plan``.

        Only pages holding a selected row are decoded (one native run, however far apart
        they lie); within them only the selected values are gathered (pages whose rows
        are all selected are kept without copying). Dictionary chunks stay as codes:
        predicates run on the dictionary, and values are materialized once, for the
        selected rows only. ``conjuncts``: the filter's top-level leaves on this column;
        what of them the page pipeline can evaluate is evaluated in the decode pass
        (:attr:`ColumnData.pushed`). ``mask_only``: nothing but those leaves needs the
        values, so when the pipeline takes them all the values are not kept (a page at
        a time in scratch; the data then holds only the mask and validity). ``shared``
        (a dict per block): whole chunks of the block's filter columns write one mask,
        the first column's answers ANDed with the next ones' in the decode pass."""
        file = self.file
        ltype = file.footer.columns[col].type
        if plan[0] == "none":
            return ColumnData(ltype, empty_values(ltype), None)
        gather = None if plan[0] == "whole" else self._gather_positions(block, col, plan, selection, cache)
        gathered = False
        pushed = None
        try:
            decoder = file.chunk_decoder(block, col, buf, base)
            predicate, keep = None, True
            if conjuncts:
                native = self._native_predicate(conjuncts, ltype, decoder)
                if native is not None:
                    predicate, ids = native
                    keep = not mask_only or len(ids) < len(conjuncts)
            if plan[0] == "whole":
                rows = selection.num_rows  # the block's rows (a list's elements for an element column)
                and_into = False
                if predicate is not None:
                    mask = None if shared is None else shared.get("mask")
                    and_into = mask is not None
                    if mask is None:
                        mask = memory.empty(rows, bool)
                        if shared is not None:
                            shared["mask"] = mask
                    pushed = (mask, ids)
                    predicate += (mask,)
                values, valid = decoder.decode_all(rows, codes=True, predicate=predicate, keep=keep, and_into=and_into)
                stats.pages_read += int(file.footer.chunks[col][block]["page_count"])
                stats.rows_decoded += rows
            else:
                entries = self._page_index(block, col, cache).entries
                page_ids = plan[1]
                counts = entries["row_count"][page_ids]
                if predicate is not None:
                    size = len(gather) if gather is not None and decoder.selective else int(counts.sum())
                    pushed = (memory.empty(size, bool), ids)
                    predicate += (pushed[0],)
                values, valid, gathered = decoder.decode_run(
                    entries["offset"][page_ids].astype(np.int64) - base, page_ids, counts, codes=True,
                    expected_lengths=entries["length"][page_ids], selected=gather, predicate=predicate, keep=keep)
                stats.pages_read += len(page_ids)
                stats.rows_decoded += int(counts.sum())
            dictionary = decoder.dictionary
        except (CorruptFileError, UnsupportedError) as exc:
            raise file._locate(exc, block, col) from None
        if gathered:  # the kernel decoded only the selected values: their validity is left
            valid = None if valid is None else valid[gather]
            return ColumnData(ltype, values, None if valid is None or valid.all() else valid, pushed=pushed)
        if not keep:
            data = ColumnData(ltype, None, None, pushed=pushed)
            return data if gather is None else ColumnData(ltype, None, None, pushed=(pushed[0][gather], pushed[1]))
        codes = values if isinstance(values, np.ndarray) else None
        data = ColumnData(ltype, None if codes is not None else values, valid, codes,
                          dictionary if codes is not None else None, pushed)
        return data if gather is None else gather_data(data, gather)

    def _native_predicate(self, conjuncts: list, ltype, decoder):
        """:func:`native_predicate` of a column's ``conjuncts`` for ``decoder``'s chunk:
        per chunk for a dictionary (its table is per dictionary), else worked out once
        per scan (sets sorted, arrays built) and shared by every block."""
        if decoder.is_dictionary:
            return native_predicate(conjuncts, ltype, decoder.value_dtype, decoder.dictionary)
        key = (id(conjuncts), decoder.value_dtype)
        hit = self._value_predicates.get(key)
        if hit is None or hit[0] is not conjuncts:
            hit = self._value_predicates[key] = (conjuncts, native_predicate(conjuncts, ltype, decoder.value_dtype,
                                                                              None))
        return hit[1]
