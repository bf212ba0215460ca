"""Write rcfmt files: :func:`write_table` and the streaming :class:`Writer`.

The writer buffers one block of rows, then for each column chunk computes statistics,
chooses one encoding, cuts pages, encodes and compresses them and records a page-index
entry per page. The file is written under a temporary name next to the target and
renamed into place only when complete, so a failed write never leaves a file at the
target path.
"""
from __future__ import annotations

import collections
import threading
import zlib
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:  # (a module-level import would fail in a first write made at interpreter exit)
    from concurrent.futures import ThreadPoolExecutor

from .. import __version__
from ..encodings.base import Encoding
from ..errors import InvalidDataError, InvalidOptionError, RcfmtError, SchemaError
from ..format.footer import ColumnSchema, FileMetaData, serialize_footer
from ..format.layout import BLOCK_RECORD, FORMAT_VERSION, HEADER, MAGIC, TAIL, chunk_record
from ..format.stats_slots import stat_width
from ..index.bitmap.build import Proposal, within_budget
from ..index.bitmap.layout import DIRECTORY_RECORD, EQUALITY, RANGE, encode_directory, encode_keys, entry_keys
from ..schema.types import same_type
from ..schema import nested
from ..storage import ByteSink, open_output
from ..runtime.options import names as option_names
from ..runtime.spill import SpillList
from ..runtime.threads import shared_pool
from ..interop.arrow import arrow_stream, as_table, with_range_index_columns
from ..interop import cdata
from ..schema.annotated import storage_node
from ..schema.tables import VIEW_STORAGE, physical_columns, storage_schema
from ..schema.arrow_io import from_arrow, one_array, take, to_numpy, validity
from .chunk_encoding import FILE_VALUES_MAX, FILE_VALUES_MAX_BYTES, encode_chunk
from .value_checks import check_table, empty_nulls
from .write_options import (DEFAULT_BLOCK_ROWS, DEFAULT_COMPRESSED_PAGE_SIZE, DEFAULT_PAGE_ROWS,  # noqa: F401
                            DEFAULT_PAGE_SIZE, WriteOptions, refuse_ambiguous)

__all__ = ["Writer", "write_table", "WriteOptions", "value_checker", "append_checked"]

#: blocks smaller than this are encoded on the calling thread
PARALLEL_MIN_ROWS = 8192
#: blocks whose chunks may be encoding at once (each holds its rows and its encoded
#: bytes until it is written)
MAX_BLOCKS_IN_FLIGHT = 2
#: the selector samples a column's chunk again after this many blocks; between, a chunk
#: takes the decision last sampled (if its raw sizes did not drift: selector.choose's
#: ``hint``) ...
RESAMPLE_BLOCKS = 16
#: ... of a block at least this many blocks back: with blocks encoded in parallel, the
#: blocks written when a block is submitted, so a file is the same whatever the threads
HINT_LAG = MAX_BLOCKS_IN_FLIGHT + 1
#: a block's bitmap indexes, built on the pool, are waited for (and held or spilled)
#: this many blocks later
SETTLE_LAG_BLOCKS = 4


def _lagged(history: list, block: int):
    """The value recorded for the latest block at least ``HINT_LAG`` and less than
    ``RESAMPLE_BLOCKS`` blocks before ``block`` in ``history`` (``(block, value)`` in
    block order), or None: sample again. With blocks encoded in parallel, those are the
    blocks already written when ``block`` is submitted, so a file is the same whatever
    the threads."""
    for b, value in reversed(history):
        if b <= block - HINT_LAG:
            return value if block - b < RESAMPLE_BLOCKS else None
    return None


def _pool() -> ThreadPoolExecutor:
    """The process-wide pool that encodes chunks (threads reused across writes)."""
    return shared_pool("write")


def value_checker(schema: pa.Schema):
    """A function of a table of ``schema`` conformed to its storage form (as
    :class:`Writer` conforms what it is given) that raises :class:`InvalidDataError` at
    its first value a reader would refuse (see :mod:`rcfmt.file.value_checks`), and
    otherwise returns the stored columns holding bytes under NULL strings (empty: the
    table is clean)."""
    stored, types = storage_schema(schema)
    nodes, physical = physical_columns(stored, types)
    columns = [ColumnSchema(n, t, nullable, 0) for n, t, nullable in physical]
    if not cdata.has_intervals(stored):
        return lambda table: check_table(table, nodes, columns)
    nodes = None if nodes is None else tuple(storage_node(n) for n in nodes)
    return lambda table: check_table(cdata.to_storage(table), nodes, columns)


class Writer:
    """Streaming writer of one rcfmt file with bounded memory: one block of rows at a
    time, plus what the regions after the data need at :meth:`close` -- each block's
    page-index records (a few hundred bytes a column) and, where enabled, its bloom
    filters and bitmap indexes (about 1 byte a row per bloom-filtered column at the
    default 1% false positives; an equality bitmap index up to the column's values),
    held in memory up to 32 MiB each and beyond that in an unlinked temporary file
    (:mod:`rcfmt.runtime.spill`).

    Parameters
    ----------
    where : str or os.PathLike
        Target: a local path, a ``file://`` URI, an object-store URI (``s3://``,
        ``gs://``, ``abfs://``, ``hdfs://``), or a path of ``filesystem``. Data goes to a
        hidden temporary file beside it, moved over it on :meth:`close` (see
        :func:`rcfmt.storage.open_output`): nothing is at the target before that.
    filesystem : pyarrow.fs.FileSystem or fsspec filesystem, optional
        Where ``where`` lives, when it is not a local path or a URI.
    schema : pyarrow.Schema
        Columns of the file. Dictionary-typed columns are stored as their value type.
    block_rows : int
        Rows per block (row group); the last block may be shorter. At most what the
        narrowest run-end type of a run_end_encoded column addresses (32,767 rows for
        int16 run ends).
    page_size : int
        Target uncompressed bytes per page; ``page_rows`` caps rows per page.
    compressed_page_size : int
        Target uncompressed bytes per page of a chunk stored compressed (zstd, lz4),
        when smaller than ``page_size`` (default 48 KiB): reaching one value of such a
        page decompresses all of it, so smaller pages make random reads (``take``,
        lookups) cheaper, at a little compression lost.
    zstd_block_size : int, optional
        End a zstd block every this many bytes (1 KiB to 128 KiB) inside the zstd pages
        of PLAIN/DELTA_LENGTH string chunks: a ``take`` or a selective filter then
        inflates such a page only up to the block holding its last wanted string, while
        a full read inflates the blocks a little slower (docs/FORMAT.md 4.3). Default:
        one block a page (also where zstd's native library was not found).
    compression : {"auto", "zstd", "lz4", "none"}
        Per chunk; "auto" uses zstd where it saves at least 10% of the chunk's data
        pages, and on a dictionary page where it saves 10% of that page.
    compression_level : int, optional
        zstd level (default 3).
    encoding : str or dict, optional
        Force an encoding ("plain", "dictionary", "rle", "bitpack", "delta", "alp",
        "delta_length", "byte_split", "alp_split") for all or some columns; by default
        the writer chooses one per chunk. A forced encoding that cannot represent a
        chunk (bitpack on decimals beyond 64 bits) falls back to PLAIN for that chunk.
    dictionary : bool
        Whether the selector may choose DICTIONARY.
    stats_truncate : int
        Max bytes of string/binary min/max in footer and page index.
    bloom_filter_columns : "auto", list of str or None
        Columns that get a per-chunk bloom filter for ``==``/``isin`` pruning; "auto"
        picks unsorted high-cardinality integer/string/binary chunks where a filter is
        small (see :class:`~rcfmt.index.bloom.chunks.BloomPolicy`).
    bloom_filter_fpp : float
        Target false-positive rate of named bloom filters (default 0.01).
    bitmap_indexes : "auto", dict or None
        Per-chunk bitmap indexes (docs/FORMAT.md section 6b) that answer comparisons,
        IN and IS NULL, and their AND/OR/NOT across columns, without reading pages: a
        dict of column name -> "equality" | "range" | "bitsliced" | "auto", or "auto"
        (default) for every column where it pays (few distinct values or a narrow
        integer range, unsorted; at most about a tenth of each block's bytes, see
        :mod:`rcfmt.index.bitmap.build`). None: no indexes.
    use_threads : bool
        Encode the column chunks of a block in parallel (default True).
    metadata : dict, optional
        Key-value metadata (str or bytes) stored in the footer, merged over the schema's.
    """

    def __init__(self, where, schema: pa.Schema, *, metadata: dict | None = None, filesystem=None,
                 _hints: dict | None = None, **options):
        if not isinstance(schema, pa.Schema):
            raise SchemaError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
        #: one call at a time: threads sharing a writer take turns (their writes interleaved
        #: whole; unguarded, blocks were written twice or lost and the footer contradicted them)
        self._lock = threading.RLock()
        self.schema, types = storage_schema(schema)
        self._nodes, physical = physical_columns(self.schema, types)
        #: what the data is conformed to: ``schema`` with its interval types (whose arrays
        #: pyarrow cannot hold) relabeled to their storage types, and the tree shredding it
        #: (``schema`` and ``_nodes`` themselves without intervals; rcfmt.interop.cdata)
        self._data_schema = cdata.storage_schema(self.schema)
        self._shred_nodes = self._nodes if self._nodes is None or self._data_schema is self.schema else \
            tuple(storage_node(n) for n in self._nodes)
        self.options = WriteOptions.create(
            pa.schema([pa.field(n, t.to_arrow(), nullable) for n, t, nullable in physical]), **options)
        self._metadata = _merge_metadata(self.schema.metadata, metadata)
        metadata = nested.column_metadata(self._nodes) if self._nodes is not None else \
            {i: nested.field_metadata(f) for i, f in enumerate(self.schema) if f.metadata}
        self._columns = [ColumnSchema(n, t, nullable, stat_width(t, self.options.stats_truncate), metadata.get(i, ()))
                         for i, (n, t, nullable) in enumerate(physical)]
        self._pos = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._blocks: list[tuple] = []
        self._in_flight: collections.deque = collections.deque()  # (rows, chunk futures), oldest first
        self._chunks: list[list[np.ndarray]] = [[] for _ in self._columns]
        self._page_index: list[bytes] = []  # per (block, column), in write order
        # per (block, column), in write order: written after the data, held until close
        # within a memory budget and beyond it in a temporary file (runtime.spill)
        self._blooms = SpillList()
        self._bitmaps = SpillList()  # (entries built on the pool are futures until settled)
        self._bitmap_report: dict[str, dict] = {}  # per column: kinds built, reasons for none
        self._bloom_report: dict[str, dict] = {}  # per column: filters kept, left out, estimates
        self._chunk_keys: list[list] = [[] for _ in self._columns]  # per column, per block: distinct values or None
        # per column: (block, sampled Decision); ``_hints`` (stored column -> Decision, as
        # chunk_encoding.chunk_hints reads them from a file of the same data) as if sampled
        # just before the first block: a dataset's small new files do not sample again
        self._decisions: list[list] = [[(-HINT_LAG, _hints[c.name])] if _hints and c.name in _hints else []
                                       for c in self._columns]
        self._bloom_hopeless: list[list] = [[] for _ in self._columns]  # per column: (block, BloomPolicy.hopeless)
        self._element_ids = nested.element_columns(self._nodes) if self._nodes is not None else set()
        named_elements = [self._columns[i].name for i in self._element_ids
                          if self._columns[i].name in self.options.bitmaps.named]
        if named_elements:
            raise InvalidOptionError(f"bitmap_indexes: column(s) {named_elements} hold list elements; "
                                     "bitmap indexes cover rows")
        self._scrub: set[int] = set()  # stored columns with bytes under NULL strings: stored emptied
        self._failed: BaseException | None = None  # what broke a block's write (see _guarded)
        # (every check above came before the sink: a refused writer leaves no temporary file)
        self._sink = where if isinstance(where, ByteSink) else open_output(where, filesystem)
        self.path = self._sink.path
        self._closed = False
        self._guarded(self._write, HEADER.pack(MAGIC, FORMAT_VERSION))

    # ---------------------------------------------------------------- public API
    def write(self, data) -> None:
        """Append the rows of a Table, RecordBatch, DataFrame or dict of arrays.

        Values a reader would refuse (ill-formed UTF-8 in a string, a decimal beyond its
        precision, offsets that go backwards) raise :class:`InvalidDataError` naming
        the column and the first bad row of ``data``; none of ``data`` is written."""
        self._append(data)

    def _append(self, data, first_row: int = 0, checked: bool = False) -> None:
        """:meth:`write`; ``first_row``: where ``data`` starts in what the caller was
        given (errors name rows of that); ``checked``: the caller found no value a reader
        would refuse and no bytes under a NULL string in ``data`` (conformed as this writer
        conforms it: :func:`value_checker`), so they are not looked for again."""
        with self._lock:
            self._append_locked(data, first_row, checked)

    def _append_locked(self, data, first_row: int, checked: bool) -> None:
        self._check_open()
        table = as_table(data)
        if table.num_columns == 0 and table.num_rows:  # rows live in column chunks: they would be lost
            raise SchemaError(f"a table without columns cannot be written ({table.num_rows} rows would be lost)")
        try:
            if self._data_schema is not self.schema or cdata.has_intervals(table.schema):
                table = self._intervals_to_storage(table)
            table = self._conform(table)
            if self._check_values and not checked:
                self._scrub |= check_table(table, self._shred_nodes, self._columns)
        except InvalidDataError as exc:
            if not first_row or exc.row is None:
                raise
            raise InvalidDataError(exc.reason, column=exc.column, row=first_row + exc.row) from None
        if table.num_rows == 0:
            return
        self._pending.append(table)
        self._pending_rows += table.num_rows
        block_rows = self.options.block_rows
        while self._pending_rows >= block_rows:
            self._check_aborted()  # (an abort from another thread: no further block)
            combined = pa.concat_tables(self._pending)
            self._guarded(self._write_block, combined.slice(0, block_rows))
            rest = combined.slice(block_rows)
            self._pending, self._pending_rows = ([rest] if rest.num_rows else []), rest.num_rows

    write_table = write
    write_batch = write

    def flush_block(self) -> None:
        """End the current block now, even if it has fewer rows (or none)."""
        with self._lock:
            self._check_open()
            combined = pa.concat_tables(self._pending) if self._pending else self._data_schema.empty_table()
            self._guarded(self._write_block, combined)
            self._pending, self._pending_rows = [], 0

    def close(self) -> None:
        """Finish the file and move it into place. Idempotent. After a write that
        failed while writing a block (a full disk, an interrupt), nothing is moved into
        place and this raises :class:`RcfmtError` naming that failure; after
        :meth:`abort` (from any thread) it raises too: nothing was written."""
        with self._lock:
            self._check_failed()
            self._check_aborted()
            if self._closed:
                return
            try:
                if self._pending_rows:
                    self.flush_block()
                self._drain()
                self._finish()
                self._check_aborted()  # (an abort from another thread while the footer was written)
                self._sink.commit()
                self._committed = self._closed = True
                self._drop_held()
            except BaseException:
                self.abort()
                raise

    def abort(self) -> None:
        """Discard everything written; the target path is left untouched. From another
        thread it stops a write in progress: that thread's next call raises
        :class:`RcfmtError` (an abort after :meth:`close` committed the file changes
        nothing)."""
        lock = getattr(self, "_lock", None)  # (a constructor that failed before it: nothing to discard)
        if lock is None or getattr(self, "_committed", False):
            return
        self._aborted = True  # (seen by a writing thread between its steps, before the lock is free)
        with lock:
            if getattr(self, "_committed", False):  # (close() committed first: this abort changed nothing)
                self._aborted = False
            else:
                self._abort_locked()

    def _abort_locked(self) -> None:
        self._closed = True
        for _, futures in getattr(self, "_in_flight", ()):
            for f in futures:
                f.cancel()
        self._in_flight = collections.deque()
        self._drop_held()
        sink = getattr(self, "_sink", None)
        if sink is not None:
            sink.abort()

    def _drop_held(self) -> None:
        """Release the blooms and bitmap indexes held for the file's end (and their
        spill file)."""
        for held in (getattr(self, "_blooms", None), getattr(self, "_bitmaps", None)):
            if held is not None:
                held.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None and not getattr(self, "_aborted", False):
            self.close()
        else:
            self.abort()

    def __del__(self):  # never leave temporary files behind
        if not getattr(self, "_closed", True):
            try:
                self.abort()
            except Exception:
                pass

    # ---------------------------------------------------------------- internals
    #: look for values a reader would refuse in each write
    _check_values = True

    def _check_open(self):
        self._check_failed()
        self._check_aborted()
        if self._closed:
            raise RcfmtError("writer is closed")

    def _check_aborted(self):
        if getattr(self, "_aborted", False):
            raise RcfmtError(f"the writer was aborted: nothing was written to {self.path!r}")

    def _check_failed(self):
        if getattr(self, "_failed", None) is not None:
            raise RcfmtError(f"the writer failed while writing a block ({self._failed!r}): it was aborted and "
                             f"nothing was written to {self.path!r}") from self._failed

    def _guarded(self, step, *args) -> None:
        """``step(*args)``, a step that writes to the sink or changes what the footer will
        say: if it fails part way the file's state is no longer whole, so the writer
        aborts (the target is left untouched) and refuses every later call."""
        try:
            step(*args)
        except BaseException as exc:
            self._failed = exc
            self.abort()
            raise

    def _write(self, data) -> None:
        self._sink.write(data)
        self._pos += len(data)

    def _intervals_to_storage(self, table: pa.Table) -> pa.Table:
        """``table`` with its interval types relabeled to their storage types (the arrays
        of neither can be held in Python: rcfmt.interop.cdata), each field holding one
        checked to be of the writer's type first (an interval is not taken for its
        storage type, nor the other way)."""
        for f, field in zip(table.schema, self.schema):
            if (cdata.has_intervals(f.type) or cdata.has_intervals(field.type)) \
                    and not nested.storage_type(f.type).equals(field.type):
                raise SchemaError(f"column {f.name!r} has type {f.type}, the writer expects {field.type}")
        return cdata.to_storage(table)

    def _conform(self, table: pa.Table) -> pa.Table:
        if table.schema.names != self.schema.names:
            raise SchemaError(f"table columns {table.schema.names} differ from the writer's {self.schema.names}")
        columns = []
        for name, column, field in zip(table.schema.names, table.columns, self._data_schema):
            if pa.types.is_dictionary(column.type) and not nested.is_nested(column.type.value_type):
                try:  # (dictionaries of nested values: nested.to_storage below; of views: of strings first)
                    column = nested.views_as_offsets(column)
                    column = column.cast(column.type.value_type)
                except pa.ArrowException as exc:  # (indices outside the dictionary)
                    raise InvalidDataError(f"dictionary-encoded values do not decode: {exc}", column=name,
                                           row=_bad_index(column)) from None
            if not isinstance(column.type, pa.BaseExtensionType) and column.type in VIEW_STORAGE \
                    and field.type == VIEW_STORAGE[column.type]:
                try:
                    column = column.cast(field.type)
                except pa.ArrowException as exc:
                    raise SchemaError(f"column {name!r}: cannot store {column.type} as {field.type}: {exc}") from None
            if not same_type(column.type, field.type) and (nested.is_nested(field.type)
                                                           or pa.types.is_run_end_encoded(field.type)):
                try:
                    column = nested.to_storage(column, field.type)
                except InvalidDataError as exc:
                    raise InvalidDataError(exc.reason, column=name, row=exc.row) from None
                except (pa.ArrowException, NotImplementedError) as exc:
                    raise SchemaError(f"column {name!r}: cannot store {column.type} as {field.type}: {exc}") from None
            if not same_type(column.type, field.type):
                raise SchemaError(f"column {name!r} has type {column.type}, the writer expects {field.type}")
            if not field.nullable and column.null_count:
                raise SchemaError(f"column {name!r} is not nullable but holds {column.null_count} nulls")
            columns.append(column)
        try:
            return pa.Table.from_arrays(columns, schema=self._data_schema)
        except pa.ArrowInvalid as exc:  # (buffers that do not fit the lengths: arrays built by hand)
            raise InvalidDataError(f"the data is not valid Arrow: {exc}") from None

    def _physical_arrays(self, block: pa.Table) -> list:
        """The stored columns of ``block``: its columns, nested ones shredded."""
        if self._nodes is None:
            return block.columns
        out: dict = {}
        for node, column in zip(self._shred_nodes, block.columns):
            if node.kind == nested.LEAF:
                out[node.column] = column
                continue
            try:
                if column.num_chunks > 1 and nested.holds_dictionaries(column.type):
                    # (an extension's dictionaries: chunk by chunk, as their dictionaries may not unify)
                    nested.shred_chunks(column, node, out, [c.type for c in self._columns])
                else:
                    nested.shred(one_array(column), node, out)
            except nested.SlotError as exc:  # (what only a whole block shows: an extension's dictionaries)
                raise InvalidDataError(exc.reason, column=self._columns[exc.column].name) from None
        return [out[i] for i in range(len(self._columns))]

    def _encode_column(self, arrays: list, i: int, block: int, hint=None):
        col = self._columns[i]
        try:
            values, valid = from_arrow(empty_nulls(arrays[i]) if i in self._scrub else arrays[i], col.type)
        except InvalidDataError as exc:  # (what only a whole block shows: an extension's dictionaries)
            if exc.column is not None:
                raise
            raise InvalidDataError(exc.reason, column=col.name) from None
        request = None if i in self._element_ids else self.options.bitmaps.requested(col.name)
        # an auto filter hopeless in the last block that built one is not hashed again
        # (filters never kept took ~13% of a 1-thread lineitem write)
        return encode_chunk(values, valid, col, self.options, self._forced(col.name), request, hint,
                            bloom=not _lagged(self._bloom_hopeless[i], block))

    def _hint(self, i: int, block: int):
        """The selector's decision for column ``i`` sampled on a block at least
        ``HINT_LAG`` and less than ``RESAMPLE_BLOCKS`` blocks before ``block`` (None: sample)."""
        return _lagged(self._decisions[i], block)

    def _write_block(self, block: pa.Table) -> None:
        """Encode ``block`` and write it after the blocks before it. With threads, its
        chunks are encoded on the pool while earlier blocks finish (at most
        ``MAX_BLOCKS_IN_FLIGHT`` blocks at once), so one slow column does not leave the
        other workers idle at the end of every block."""
        columns = range(len(self._columns))
        arrays = self._physical_arrays(block)
        index = len(self._blocks) + len(self._in_flight)
        hints = [self._hint(i, index) for i in columns]
        if self.options.use_threads and len(self._columns) > 1 and block.num_rows >= PARALLEL_MIN_ROWS:
            # statistics, encoding and compression release the GIL in numpy, the
            # kernels and zstd: encode chunks in parallel, write blocks in order
            pool = _pool()
            self._in_flight.append((block.num_rows, [pool.submit(self._encode_column, arrays, i, index, hints[i])
                                                     for i in columns]))
            while len(self._in_flight) > MAX_BLOCKS_IN_FLIGHT:
                self._write_oldest()
            return
        self._drain()
        self._write_encoded(block.num_rows, [self._encode_column(arrays, i, index, hints[i]) for i in columns])

    def _write_oldest(self) -> None:
        rows, futures = self._in_flight.popleft()
        try:
            encoded = [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise
        self._write_encoded(rows, encoded)

    def _drain(self) -> None:
        while self._in_flight:
            self._write_oldest()

    def _write_encoded(self, rows: int, encoded: list) -> None:
        start = self._pos
        first_row = self._blocks[-1][0] + self._blocks[-1][1] if self._blocks else 0
        for i, (chunk_bytes, chunk, page_index, _, _, decision, keys) in enumerate(encoded):
            self._chunk_keys[i].append(keys)
            if decision is not None:
                self._decisions[i].append((len(self._blocks), decision))
            chunk["offset"] = self._pos
            page_index["offset"] += self._pos
            self._write(chunk_bytes)
            self._chunks[i].append(chunk)
            self._page_index.append(page_index.tobytes())
        candidates = [e[3] for e in encoded]
        kept = self.options.bloom.keep(candidates, self._pos - start)
        self._blooms.extend(kept)
        self._note_blooms(candidates, kept)
        for i, candidate in enumerate(candidates):
            if candidate is not None and candidate.bits is not None:
                self._bloom_hopeless[i].append((len(self._blocks), self.options.bloom.hopeless(candidate,
                                                                                               self._pos - start)))
        self._blocks.append((first_row, rows, start, self._pos - start))
        proposals = [e[4] for e in encoded]
        keep = within_budget(proposals, self._pos - start)
        threaded = self.options.use_threads and rows >= PARALLEL_MIN_ROWS
        for i, (proposal, kept) in enumerate(zip(proposals, keep)):
            entry = None
            if kept:  # built on the pool while the next blocks encode; written by _finish
                entry = _pool().submit(proposal.build) if threaded and not proposal.named else proposal.build()
            self._bitmaps.append(entry)
            self._note_bitmap(self._columns[i].name, proposal, kept)
        self._bitmaps.settle(keep=SETTLE_LAG_BLOCKS * len(self._columns))

    def _note_blooms(self, candidates: list, kept: list) -> None:
        """Per column, for the footer's bloom report: filters kept, candidates left out
        for the block's share (built, or not built as hopeless), and the HyperLogLog
        estimates that sized them (None where the distinct count was exact or no filter
        was built), one per block."""
        for i, (candidate, filt) in enumerate(zip(candidates, kept)):
            name = self._columns[i].name
            report = self._bloom_report.get(name)
            if candidate is None and report is None:
                continue
            if report is None:  # (columns first seen in a later block: no estimate before it)
                report = self._bloom_report[name] = {"filters": 0, "left_out": 0,
                                                     "estimated_distinct": [None] * (len(self._blocks))}
            report["estimated_distinct"].append(candidate.ndv if candidate is not None and candidate.estimated
                                                else None)
            if filt is not None:
                report["filters"] += 1
            elif candidate is not None:
                report["left_out"] += 1

    def _note_bitmap(self, name: str, proposal: Proposal | None, kept: bool) -> None:
        """Count what became of a chunk's index, for the footer's ``bitmap_indexes``
        report: the kinds built, and why the others were not."""
        if proposal is None:
            return
        report = self._bitmap_report.setdefault(name, {"kinds": {}, "not_indexed": {}})
        if proposal.named:  # what was asked, so that rewrites of the file can ask the same
            report["named"] = self.options.bitmaps.named[name]
        if kept:
            report["kinds"][proposal.kind] = report["kinds"].get(proposal.kind, 0) + 1
        else:
            why = proposal.reason if proposal.build is None else "auto: over the block's index budget"
            report["not_indexed"][why] = report["not_indexed"].get(why, 0) + 1

    def _forced(self, name: str) -> Encoding | None:
        return None if self.options.encoding is None else self.options.encoding.get(name)

    def _finish(self) -> None:
        # page-index region: every chunk's records, in block-major order
        region_start = self._pos
        k = 0
        for b in range(len(self._blocks)):
            for i in range(len(self._columns)):
                entries = self._page_index[k]
                k += 1
                if not len(entries):
                    continue
                rec = self._chunks[i][b]
                rec["page_index_offset"] = self._pos
                rec["page_index_length"] = len(entries)
                rec["page_index_crc"] = zlib.crc32(entries)
                self._write(entries)
        region = (region_start, self._pos - region_start)
        bloom_start = self._pos
        k = 0
        for b in range(len(self._blocks)):
            for i in range(len(self._columns)):
                bloom = self._blooms[k]
                k += 1
                if bloom is not None:
                    rec = self._chunks[i][b]
                    rec["bloom_offset"] = self._pos
                    rec["bloom_length"] = len(bloom)
                    self._write(bloom)
        bloom_region = (bloom_start, self._pos - bloom_start)
        bitmap_region = self._write_bitmap_region()
        blocks = np.array(self._blocks, dtype=BLOCK_RECORD) if self._blocks else np.empty(0, BLOCK_RECORD)
        chunks = [  # (one block: its record as it is; concatenating structured arrays costs 25 us each)
            (recs[0] if len(recs) == 1 else np.concatenate(recs)) if recs else np.empty(0, chunk_record(col.stat_width))
            for col, recs in zip(self._columns, self._chunks)
        ]
        # (an empty report says "written without indexes": rewrites keep that too)
        bitmap_region = {**(bitmap_region or {}), "report": self._bitmap_report}
        meta = FileMetaData(self._columns, blocks, chunks, self._metadata, f"rcfmt {__version__}", region,
                            bloom_region=bloom_region, nested=self._nodes, bitmap_index=bitmap_region,
                            bloom_report=self._bloom_report)
        footer = serialize_footer(meta)
        self._write(footer)
        self._write(TAIL.pack(len(footer), zlib.crc32(footer), MAGIC))


    def _note_file_values(self) -> None:
        """Per column whose every block knows its distinct values -- from an equality or
        range index, or from the writer's dictionary of the chunk: the file's distinct
        values (their union), in the column's report when at most
        :data:`FILE_VALUES_MAX` (for a dataset's stats index, docs/DATASET.md §3.2)."""
        ncols = len(self._columns)
        for c, column in enumerate(self._columns):
            report = self._bitmap_report.get(column.name)
            if report is None or not self._chunk_keys[c]:
                continue
            values: set | None = set()
            for k, keys in zip(range(c, len(self._bitmaps), ncols), self._chunk_keys[c]):
                entry = self._bitmaps[k]  # (one at a time: they may be spilled)
                if entry is not None:
                    kind, keys = entry_keys(entry, column.type)
                    keys = keys if kind in (EQUALITY, RANGE) else None
                if keys is None:
                    values = None
                    break
                values.update(keys)
                if len(values) > FILE_VALUES_MAX:
                    values = None
                    break
            if values is not None:
                ordered = sorted(values)
                keys = encode_keys(RANGE, column.type, ordered)
                if len(keys) <= FILE_VALUES_MAX_BYTES:
                    report["values"] = {"count": len(ordered), "keys": keys.hex()}

    def _write_bitmap_region(self):
        """The bitmap-index region: every kept entry (block-major), then the directory
        of the columns with at least one (docs/FORMAT.md section 6b). Returns its
        footer description, or None when no chunk has an index."""
        ncols, nblocks = len(self._columns), len(self._blocks)
        self._bitmaps.settle()
        self._note_file_values()
        present = self._bitmaps.present()
        indexed = sorted({k % ncols for k in present}) if ncols else []
        if not indexed:
            return None
        start = self._pos
        directory = np.zeros((len(indexed), nblocks), DIRECTORY_RECORD)
        row_of = {c: j for j, c in enumerate(indexed)}
        for k in present:
            entry = self._bitmaps[k]
            b, c = divmod(k, ncols)
            directory[row_of[c], b] = (self._pos, len(entry), zlib.crc32(entry))
            self._write(entry)
        directory_offset = self._pos
        self._write(encode_directory(directory))
        return {"offset": start, "length": self._pos - start, "directory_offset": directory_offset,
                "columns": indexed}


def append_checked(writer: Writer, data) -> None:
    """:meth:`Writer.write` of ``data`` that :func:`value_checker` of the writer's schema
    has passed already (the caller checked it once for several files): not checked again."""
    writer._append(data, checked=True)


def _bad_index(column) -> int | None:
    """The first row of a dictionary column whose index is outside its dictionary."""
    base = 0
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        indices = chunk.indices
        codes = to_numpy(indices).astype(np.int64)
        bad = (codes < 0) | (codes >= len(chunk.dictionary))
        if indices.null_count:
            bad &= validity(indices)
        if bad.any():
            return base + int(np.argmax(bad))
        base += len(chunk)
    return None


def _merge_metadata(schema_meta, user_meta) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    user_meta = {} if user_meta is None else user_meta  # (0 or '' is no metadata: refused below)
    for source, error in ((schema_meta or {}), SchemaError), (user_meta, InvalidOptionError):
        if not isinstance(source, dict):
            raise InvalidOptionError("metadata must be a dict of str -> str/bytes")
        for key, value in source.items():
            if isinstance(key, bytes):
                try:
                    key = key.decode("utf-8")
                except UnicodeDecodeError:
                    what = "the schema's metadata" if error is SchemaError else "metadata"
                    raise error(f"{what} keys must be UTF-8 (rcfmt stores them as text), got {key!r}") from None
            if not isinstance(key, str):
                raise InvalidOptionError(f"metadata keys must be str, got {key!r}")
            if isinstance(value, str):
                value = value.encode("utf-8")
            if not isinstance(value, bytes):
                raise InvalidOptionError(f"metadata values must be str or bytes, got {type(value).__name__}")
            out[key] = value
    return out


# -------------------------------------------------------------------- one column chunk
PROGRESS_MIN_ROWS = 1_000_000


def write_table(table, where, *, metadata: dict | None = None, cluster_by=None, curve: str = "zorder",
                mapping: str = "rank", progress=None, **options) -> None:
    """Write a Table, RecordBatch, pandas DataFrame, dict of arrays, or any object with
    ``__arrow_c_stream__`` (Polars and DuckDB results, a RecordBatchReader: streamed
    batch by batch) or ``__arrow_c_array__`` to ``where``.

    ``cluster_by`` (column names) reorders the rows first so that skipping works on
    those columns together: ``curve`` is "zorder", "hilbert" or "sort"; ``mapping`` is
    "rank" (values mapped to buckets of sampled range bounds; robust to skew) or
    "direct" (order-preserving bits). The clustering spec is recorded in the file's
    metadata under ``rcfmt.clustering``. ``progress``: a bar of rows written on stderr
    (None: on a terminal, for streams and tables of at least
    :data:`PROGRESS_MIN_ROWS` rows; True: always; False: never). Other options are
    those of :class:`Writer`. Bad arguments raise before anything is written.
    """
    from ..runtime.progress import progress_bar, wanted

    wanted(progress)  # a bad value raises before anything is written
    if cluster_by is None and (curve, mapping) != ("zorder", "rank"):  # (checked as cluster_by would)
        from ..layout.curves import check_curve

        check_curve(curve, mapping)
    stream = arrow_stream(table) if cluster_by is None else None
    if stream is not None:  # batch by batch: one block in memory at a time
        with Writer(where, stream.schema, metadata=metadata, **options) as writer, \
                progress_bar(progress, desc="write") as step:
            rows = 0
            for batch in stream:
                writer._append(batch, rows)
                rows += batch.num_rows
                step(batch.num_rows)
        return
    table = as_table(table)
    if cluster_by is not None:
        from ..layout import METADATA_KEY, ClusteringSpec

        spec = ClusteringSpec(tuple(option_names(cluster_by, "cluster_by")), curve=curve, mapping=mapping)
        missing = [c for c in spec.columns if c not in table.column_names]
        if missing:
            raise SchemaError(f"cluster_by names unknown columns {missing}; columns: {table.column_names}")
        refuse_ambiguous(table.column_names, cluster_by=spec.columns)
        # unsupported types and bad options fail before the (costly) sort
        WriteOptions.create(table.schema, **{k: v for k, v in options.items() if k != "filesystem"})
        keys = cdata.to_storage(table)  # (intervals cluster by their stored values)
        order = spec.fit(keys).order(keys)
        table = take(with_range_index_columns(table), pa.array(order))  # (labels kept by their rows)
        metadata = {**(metadata or {}), METADATA_KEY: spec.to_json(include_bounds=False)}
    show = progress if progress is not None or table.num_rows >= PROGRESS_MIN_ROWS else False
    try:
        with Writer(where, table.schema, metadata=metadata, **options) as writer, \
                progress_bar(show, total=table.num_rows, desc="write") as step:
            rows = 0
            for batch in table.to_batches(max_chunksize=writer.options.block_rows) if show is not False else [table]:
                writer._append(batch, rows)
                rows += batch.num_rows
                step(batch.num_rows)
    except InvalidDataError as exc:
        if cluster_by is None or exc.row is None:
            raise
        # (rows were clustered: name the row of the table given)
        raise InvalidDataError(exc.reason, column=exc.column, row=int(order[exc.row])) from None
