"""The native block executor's Python side: the column spec built once per scan, one
native call per block, and one Arrow wrap per output column.

:class:`BlockColumns` holds, for a list of flat stored columns, the compact spec
:func:`rcfmt._native.block.run_block` reads (kind, width, sign, precision, UTF-8 check,
large offsets, codes kept, the encodings each type admits) and the chunk records of every
block (offset, length, dictionary length and size, page count, encoding), converted from
the footer once. :meth:`BlockColumns.run` decodes every one of those columns of a block
whose rows are all selected (the whole-chunk case) in one GIL-free call.

Errors: the native call returns a status per column; the first column that failed is
explained by :func:`~rcfmt.scan.refusals.raise_refused`, which raises the located
:class:`~rcfmt.errors.CorruptFileError` (ChecksumError, UnsupportedError) the reference
decoder finds in the same bytes. No column is decoded any other way.
"""
from __future__ import annotations

import functools
import weakref

import numpy as np
import pyarrow as pa

from ..runtime import memory
from .._native import abi as _abi
from .._native import block as _block
from .._native import filters as _filters
from ..encodings.base import ColumnValues
from ..encodings.ids import holds
from ..schema.arrow_io import Bitmap
from ..schema.types import PhysicalKind
from ..schema.values import ColumnData
from .refusals import raise_refused

__all__ = ["BlockColumns", "BlockFilter", "BlockRead", "SKIPPED"]

#: what :meth:`BlockColumns.run` gives for a column it did not decode (the filter's mask
#: was already empty)
SKIPPED = "skipped"

_KINDS = {PhysicalKind.FIXED: _abi.KIND_FIXED, PhysicalKind.BOOL: _abi.KIND_BOOL,
          PhysicalKind.VARBINARY: _abi.KIND_VARBINARY}
#: encodings the executor decodes, per physical kind (PLAIN, DICTIONARY, RLE, BITPACK,
#: DELTA, ALP, DELTA_LENGTH, BYTE_SPLIT, ALP_SPLIT); a chunk in any other is refused (no
#: writer makes one: every encoding that can hold a type is here)
_DECODED = {PhysicalKind.FIXED: (0, 1, 2, 3, 4, 5, 7, 8), PhysicalKind.BOOL: (0, 2), PhysicalKind.VARBINARY: (0, 1, 6)}
_CHUNK_FIELDS = ("offset", "length", "dictionary_length", "dictionary_size", "page_count", "encoding")


class BlockRead:
    """What one native call reads of a block, built once per block by the executor and
    handed down unchanged: ``buf`` (the bytes read, file offset ``base`` at ``buf[0]``),
    ``block`` and its ``rows``, whether page checksums are ``verify``-ed, the
    ``selected`` rows (sorted distinct int64; None: every row) and, when only the pages
    holding them are in ``buf``, per column their page table (``pages``: as
    :meth:`PageIndex.table <rcfmt.index.page.PageIndex.table>` gives it, offsets made
    positions in ``buf``; None: whole chunks)."""

    __slots__ = ("buf", "base", "block", "rows", "verify", "selected", "pages")

    def __init__(self, buf, base: int, block: int, rows: int, verify: bool, selected: np.ndarray | None = None,
                 pages: list | None = None):
        self.buf, self.base, self.block, self.rows, self.verify = buf, base, block, rows, verify
        self.selected, self.pages = selected, pages

    def with_pages(self, pages: list | None) -> BlockRead:
        """The same read, for a unit of its columns: ``pages`` their page tables."""
        return BlockRead(self.buf, self.base, self.block, self.rows, self.verify, self.selected, pages)

    @property
    def out_rows(self) -> int:
        """The rows a column of this read gives: every row of the block, or the selected."""
        return self.rows if self.selected is None else len(self.selected)


@functools.lru_cache(maxsize=None)
def _encodings(ltype) -> int:
    """Bit e set: encoding id e can hold ``ltype`` and the executor decodes it."""
    bits = 0
    for e in _DECODED[ltype.kind]:
        if holds(e, ltype):
            bits |= 1 << e
    return bits


class BlockColumns:
    """The executor's view of ``cols`` (flat stored columns) of ``file``, built once per
    scan: ``spec`` (int64, S_COLS per column), ``chunks`` (int64, blocks x columns x
    C_COLS), ``pages`` (page count per block, summed over the columns) and what each
    output is wrapped as. ``discard`` (a bool per column): decoded for its filter only
    (a dictionary chunk then returns no values: :meth:`run` is told it is ``unused``)."""

    def __init__(self, file, cols: list[int], dictionary_ids, gap: int = 0, filters: list | None = None,
                 discard: list | None = None, then: int = 0):
        footer = file.footer
        #: the file, weakly: an open file keeps the specs its scans built
        #: (:class:`~rcfmt.scan.programs.Programs`), and a file dropped without ``close``
        #: must be freed at once, not by the garbage collector
        self._file = weakref.ref(file)
        self.cols = list(cols)
        #: per column a :class:`~rcfmt._native.filters.Filter` spec (None: none), evaluated
        #: into :meth:`run`'s mask; filtered columns keep their dictionary codes (so are
        #: handed over in storage form, for :func:`~rcfmt.predicate.evaluate.eval_nnf`)
        self.filters = None if filters is None else [None if f is None else _filters.Filter(f) for f in filters]
        #: the last ``then`` columns are decoded after the filter, at the rows it picked
        #: (:meth:`decode`); the others are the filter's, handed over in storage form
        self.then = then
        filtered = [filters is not None and i < len(self.cols) - then for i in range(len(self.cols))]
        self.ltypes = [footer.columns[c].type for c in self.cols]
        spec = np.zeros((len(self.cols), _abi.S_COLS), np.int64)
        for i, (col, ltype) in enumerate(zip(self.cols, self.ltypes)):
            decimal = ltype.name == "decimal128"
            spec[i, _abi.S_KIND] = _KINDS[ltype.kind]
            spec[i, _abi.S_WIDTH] = ltype.width
            spec[i, _abi.S_SIGNED] = ltype.is_signed
            spec[i, _abi.S_DECIMAL] = decimal
            spec[i, _abi.S_PRECISION] = (ltype.precision or 0) if decimal else 0
            spec[i, _abi.S_UTF8] = ltype.name == "string"
            spec[i, _abi.S_LARGE] = bool(ltype.large)
            spec[i, _abi.S_CODES] = col in dictionary_ids or filtered[i]
            spec[i, _abi.S_ENCODINGS] = _encodings(ltype)
            spec[i, _abi.S_DISCARD] = bool(discard and discard[i])
        self.spec = spec
        #: what the executor does with every block (:class:`~rcfmt._native.block.BlockProgram`):
        #: this one, or with ``compact`` flags one each, made on first use (:meth:`decode`)
        self.program = _block.BlockProgram(spec, self.filters, self.filters is not None, None, 0)
        self._compacting: dict[tuple, object] = {}
        # (C-contiguous per block, as the executor reads it; the file's other columns not made)
        chunks = footer.chunk_fields(_CHUNK_FIELDS, tuple(self.cols))
        self.chunks = chunks
        self.pages = chunks[:, :, _abi.C_PAGES].sum(axis=1).tolist()
        self._gap = gap
        self._whole = None  # (what :meth:`ranges` needs, worked out on its first call)
        #: the Arrow type each column is wrapped as here (None: by the scan, as the Python
        #: path does -- read_dictionary and annotated columns), and its buffer layout:
        #: bytes per value, 0 bools (bits), -4 / -8 strings/binary (offset width)
        self.arrow_types = [None if lt.annotated or col in dictionary_ids or f else lt.to_arrow()
                            for col, lt, f in zip(self.cols, self.ltypes, filtered)]
        self.widths = [(-8 if lt.large else -4) if lt.kind == PhysicalKind.VARBINARY else
                       (0 if lt.kind == PhysicalKind.BOOL else lt.width) for lt in self.ltypes]

    def _compacting_program(self, compact: tuple):
        """The program that compacts the flagged columns (``compact``) to the rows the
        filter picks, and decodes the :attr:`then` columns after it (one per flags, made
        alike by racing threads)."""
        program = self._compacting.get(compact)
        if program is None:
            program = self._compacting[compact] = _block.BlockProgram(self.spec, self.filters, True, compact,
                                                                      self.then)
        return program

    def ranges(self, block: int):
        """The chunks' byte ranges in ``block``: ``(starts, ends, True)`` merged when
        they make one range, else ``(lo, hi, False)``, sorted, for the caller to coalesce."""
        if self._whole is None:
            chunks = self.chunks
            order = np.argsort(chunks[:, :, _abi.C_OFFSET], axis=1, kind="stable")
            lo = np.take_along_axis(chunks[:, :, _abi.C_OFFSET], order, axis=1)
            hi = lo + np.take_along_axis(chunks[:, :, _abi.C_LENGTH], order, axis=1)
            # blocks whose chunks make one range once merged (``gap``: what coalescing
            # allows; the chunks of a block lie side by side): one read, worked out once
            top = np.maximum.accumulate(hi, axis=1)
            one = ((lo[:, 1:] - top[:, :-1]) <= self._gap).all(axis=1).tolist() if len(self.cols) else []
            self._whole = (lo, hi, one, lo[:, :1], top[:, -1:])  # (built alike by racing threads)
        lo, hi, one, start, end = self._whole
        if one[block]:
            return start[block], end[block], True
        return lo[block], hi[block], False

    def run(self, read: BlockRead, mask: np.ndarray | None = None,
            unused: list | None = None) -> tuple[list, int, int]:
        """Decode every column of ``read``'s block (its rows, or the ``selected`` ones,
        without filters; ``pages``: per column the only bytes of it in ``buf``), per
        column: an Arrow array (wrapped here, once: slices of the column's own arena, and
        the owned string data); ``(values, validity, codes, dictionary)`` for a
        read_dictionary, annotated or filtered column (wrapped by the scan;
        ``codes``/``dictionary``: a dictionary chunk kept as codes, values then None);
        then the data pages whose bodies were read (with ``selected``, those holding a
        selected row) and their rows, summed over the columns.

        With :attr:`filters`, ``mask`` (bool, a byte per row returned) receives their AND, and once it
        holds no TRUE row the columns left are not decoded: they are :data:`SKIPPED`.
        ``unused`` (a bool per column): columns decoded only for the mask, not wrapped
        (given as :data:`SKIPPED` too).

        A column the executor refused raises its located error (see the module)."""
        return self.decode(read, mask, unused)[:3]

    def decode(self, read: BlockRead, mask: np.ndarray | None = None, unused: list | None = None,
               compact: tuple | None = None) -> tuple[list, int, int, tuple | None]:
        """:meth:`run`, and ``compact`` (with :attr:`filters`, a flag per column): the
        mask is final once every column is decoded, the flagged columns are returned at
        the rows it selects only, and those rows as a fourth item, ``(rows, starts,
        ends)``: the selected rows of the block (int64) and their runs (None without
        ``compact``)."""
        program = self.program if compact is None else self._compacting_program(compact)
        block, pages = read.block, read.pages
        got = _block.run_block(program, read.buf, read.base, self.chunks[block], read.rows, read.verify,
                               None if mask is None else mask.view(np.uint8), read.selected, pages)
        out_rows = read.out_rows
        arenas, results, data, dictionaries = got[:4]
        picks = got[4] if compact is not None else None
        first_then = len(self.cols) - self.then
        pages_read = rows_read = 0
        out = []
        for i, (status, page, at, valid_at, nulls, _size, keep, dsize, pages_i, rows_i) in enumerate(results.tolist()):
            pages_read += pages_i
            rows_read += rows_i
            if status and status != _abi.ST_SKIPPED:
                raise_refused(self._file(), block, self.cols[i], status, page, read.buf, read.base, read.rows,
                              None if pages is None else pages[i])
            if status or (unused is not None and unused[i]):
                out.append(SKIPPED)
                continue
            picked = i >= first_then or (compact is not None and compact[i])
            n = len(picks[0]) if picked else out_rows  # (compacted and later columns: at the picked rows)
            atype = self.arrow_types[i]
            if atype is not None:  # straight to Arrow
                whole = pa.py_buffer(arenas[i])
                vbytes = (n + 7) // 8
                validity = whole.slice(valid_at, vbytes) if nulls else None
                width = self.widths[i]
                if width > 0:
                    values = whole.slice(at, n * width)
                    out.append(pa.Array.from_buffers(atype, n, [validity, values], nulls))
                elif width == 0:  # bools: bits
                    out.append(pa.Array.from_buffers(atype, n, [validity, whole.slice(at, vbytes)], nulls))
                else:  # strings/binary: offsets in the arena, data owned
                    offsets = whole.slice(at, (n + 1) * (8 if width == -8 else 4))
                    out.append(pa.Array.from_buffers(atype, n, [validity, offsets, pa.py_buffer(data[i])], nulls))
                continue
            out.append(self._storage_form(i, arenas[i], data[i], dictionaries[i], at, valid_at, nulls, keep, dsize,
                                          n))
        return out, pages_read, rows_read, picks

    def _storage_form(self, i, arena, data, dictionary, at, valid_at, nulls, keep, dsize, rows):
        """``(values, validity, codes, dictionary)`` of column ``i`` in storage form (for
        read_dictionary, annotated and filter columns: :class:`~rcfmt.predicate.evaluate.ColumnData`)."""
        ltype = self.ltypes[i]
        vbytes = (rows + 7) // 8
        validity = Bitmap(arena[valid_at: valid_at + vbytes], rows, nulls) if nulls else None
        if keep:
            codes = arena[at: at + 4 * rows].view(np.int32)
            held, offsets = dictionary
            if offsets is None:
                values = ColumnValues(np.frombuffer(held, ltype.numpy_dtype, dsize))
            else:
                values = ColumnValues(np.frombuffer(held, np.uint8), np.frombuffer(offsets, np.int32))
            return None, validity, codes, values
        if ltype.kind == PhysicalKind.VARBINARY:
            odt = np.int64 if ltype.large else np.int32
            offsets = arena[at: at + (rows + 1) * np.dtype(odt).itemsize].view(odt)
            return ColumnValues(np.frombuffer(data, np.uint8), offsets), validity, None, None
        if ltype.kind == PhysicalKind.BOOL:
            bits = np.unpackbits(arena[at: at + vbytes], count=rows, bitorder="little").view(bool)
            return ColumnValues(bits), validity, None, None
        return ColumnValues(arena[at: at + rows * ltype.width].view(ltype.numpy_dtype)), validity, None, None


#: IN-sets of more members than this are cut to the file's bounds (:func:`_within_file`)
NARROW_MEMBERS = 64


def _within_file(spec, file, name: str):
    """``spec`` with a large integer IN-set cut to the members within the file's bounds
    (the least block min to the greatest block max of column ``name``): no value of the
    file equals another, and a set spanning only the file's values becomes a bitset
    (a merge's 10,000 keys over a dataset's key range, one file of it each)."""
    if spec is None or spec[0] != "values" or spec[6] is None or len(spec[6]) <= NARROW_MEMBERS \
            or spec[1].kind not in "iu":
        return spec
    stats = file.block_stats(name)
    has = np.asarray(stats.has_min_max, bool)
    rows = np.asarray(stats.row_count, np.int64) - np.asarray(stats.null_count, np.int64)
    if not len(has) or not has[rows > 0].all():
        return spec
    members = spec[6]
    if not (rows > 0).any():
        return (*spec[:6], members[:0], spec[7])
    lo, hi = np.min(stats.min[rows > 0]), np.max(stats.max[rows > 0])
    cut = members[np.searchsorted(members, lo, "left"): np.searchsorted(members, hi, "right")]
    return (*spec[:6], cut, spec[7])


class BlockFilter:
    """A scan's filter on a block's candidate rows, in one native call per block: its
    flat filter columns decoded at those rows, each column's conjuncts that
    :func:`~rcfmt.predicate.evaluate.block_predicate` takes evaluated into one shared mask
    (the decode pass of :class:`BlockColumns`), the rest of the filter (OR trees, list
    leaves) left to :func:`~rcfmt.predicate.evaluate.eval_nnf` on the columns' data, which
    carries the mask as :attr:`~rcfmt.predicate.evaluate.ColumnData.pushed`.

    ``filter_ids``: the filter's columns (name -> stored column); ``conjuncts``: the
    top-level conjuncts by column name; ``mask_only``: names of columns nothing but
    their conjuncts needs (their data is then not handed on when all are taken);
    ``leaf_count``: the filter's leaves; ``then``: projected flat columns decoded after
    the filter in the same call; ``keep``: the filter columns the scan also returns
    (:meth:`select` compacts them to the rows picked)."""

    def __init__(self, file, filter_ids: dict, conjuncts: dict, mask_only: set, leaf_count: int, gap: int = 0,
                 then: list | None = None, dictionary_ids=(), keep=()):
        from ..predicate.evaluate import block_predicate  # (a filter's: an unfiltered scan loads no evaluation)

        self.names = list(filter_ids)
        cols = [filter_ids[n] for n in self.names]
        specs, self.ids = [], []
        for name, col in zip(self.names, cols):
            got = block_predicate(conjuncts[name], file.footer.columns[col].type) if conjuncts.get(name) else None
            specs.append(None if got is None else _within_file(got[0], file, name))
            self.ids.append(frozenset() if got is None else got[1])
        #: per column: only the mask needs it (not projected, every leaf taken natively)
        self.unused = [name in mask_only and len(ids) == len(conjuncts.get(name, ()))
                       for name, ids in zip(self.names, self.ids)]
        #: flat projected columns decoded after the filter in the same call, at the rows it
        #: picks (:meth:`select`; their whole chunks read with the filter's)
        self.then = list(then or ())
        self.dictionary_ids = frozenset(dictionary_ids)
        n = len(self.then)
        self.columns = BlockColumns(file, cols + self.then, dictionary_ids, gap, specs + [None] * n,
                                    discard=self.unused + [False] * n, then=n)
        #: per column, what :meth:`select` compacts to the rows the filter picks: the
        #: projected filter columns (``keep``), 2 where a dictionary chunk's values are
        #: gathered natively, 1 where read_dictionary wants its codes; 0 the others
        self.compact = tuple([(1 if c in self.dictionary_ids else 2) if c in keep else 0 for c in cols] + [0] * n)
        self._select_unused = self.unused + [False] * n
        #: whether every leaf of the filter is in the mask (nothing left to evaluate)
        self.complete = sum(map(len, self.ids)) == leaf_count

    def run(self, read: BlockRead):
        """``(mask, {column: ColumnData}, (pages, rows) read)`` of ``read``'s block (its
        candidate rows: all, or the ``selected`` ones): ``mask`` (bool, a byte per row
        decided) the AND of the leaves taken natively, final when :attr:`complete` or
        when no row is TRUE (the columns' data is then empty). A column the executor
        refused raises its located error."""
        mask = memory.empty(read.out_rows, bool)
        got, pages, rows_read = self.columns.run(read, mask, self.unused)
        if any(g is SKIPPED and not u for g, u in zip(got, self.unused)):
            return mask, {}, (pages, rows_read)
        data = {}
        for col, ltype, ids, unused, g in zip(self.columns.cols, self.columns.ltypes, self.ids, self.unused, got):
            pushed = (mask, ids) if ids else None
            data[col] = ColumnData(ltype, None, None, pushed=pushed) if unused else ColumnData(ltype, *g,
                                                                                              pushed=pushed)
        return mask, data, (pages, rows_read)

    def select(self, read: BlockRead):
        """:meth:`run` of a :attr:`complete` filter, whose mask is then final, with no
        Python between the mask and the rows it selects: ``((rows, starts, ends),
        {column: ColumnData}, (pages, rows) read)`` -- the block's selected rows (int64)
        and their runs, found in the same native call, and the projected filter columns
        (``keep``) at those rows only, compacted there (no mask to gather by) --
        with the :attr:`then` columns, decoded at those rows after the filter (an Arrow
        array, or storage form for read_dictionary and annotated ones, as
        :meth:`BlockColumns.run` gives them)."""
        nf = len(self.names)
        compact = self.compact
        got, pages, rows_read, picks = self.columns.decode(read, None, self._select_unused, compact)
        data = {col: ColumnData(ltype, *g) for col, ltype, flag, g in zip(self.columns.cols, self.columns.ltypes,
                                                                          compact, got) if flag and g is not SKIPPED}
        for col, ltype, g in zip(self.then, self.columns.ltypes[nf:], got[nf:]):  # (Arrow, or storage form)
            if g is not SKIPPED:
                data[col] = g if isinstance(g, pa.Array) else ColumnData(ltype, *g)
        return picks, data, (pages, rows_read)
