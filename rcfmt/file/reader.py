"""Read rcfmt files: :func:`open` returns an :class:`RcfmtFile`; :func:`read_table`.

Opening reads the tail, checks magic and footer checksum, parses and validates the
footer. Column chunks are read with positional reads (thread-safe), one per chunk.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np
import pyarrow as pa

from ..runtime import memory
from ..runtime.options import flag
from ..runtime.threads import wait_all
from ..schema import nested as nested_mod
from .._native import pageindex as _pageindex
from .._native.checksum import crc32
from ..errors import ChecksumError, CorruptFileError, InvalidOptionError, SchemaError, UnsupportedError
from ..encodings import holds_type
from ..index.bitmap.layout import IndexEntry, keys_parser, parse_directory, parse_entry
from ..format.footer import FileMetaData, parse_footer
from ..format.layout import (FORMAT_VERSION, HEADER, HEADER_SIZE, MAGIC, MAX_PAGE_ROWS, TAIL, TAIL_SIZE, page_record,
                             view_records)
from ..format.stats_slots import stats_arrays
from ..schema.statistics import StatsArrays
from ..storage import fetch as fetching
from ..storage.fetch import FETCH_CONCURRENCY, LOCAL_COALESCE_GAP, SPLIT_READ_BYTES, FetchOptions, check_fetch, halves, one_read  # noqa: F401 (FETCH_CONCURRENCY: its old home)
from ..storage.registry import open_input
from ..interop.arrow import export_stream
from ..schema.arrow_io import to_arrow
from ..schema.names import ambiguous_name, name_index
from .footer_cache import FOOTERS, CachedTail
from .page_index_cache import PAGE_INDEX_CACHE_BYTES, PageIndexCache  # noqa: F401 (PAGE_INDEX_CACHE_BYTES: its old home)
from .page_index_cache import SHARED as SHARED_PAGE_INDEXES

if TYPE_CHECKING:  # (the chunk decoders and their kernels load with the first decode: an open needs none)
    from .chunks import ChunkDecoder

__all__ = ["RcfmtFile", "open", "read_table"]

#: a local file's open reads this much of its end at once: most footers fit (remote
#: files: :attr:`rcfmt.FetchOptions.tail_bytes`)
_TAIL_READ = 64 * 1024



class RcfmtFile:
    """An open rcfmt file. Use as a context manager or call :meth:`close`.

    Attributes: ``path``, ``schema`` (pyarrow), ``num_rows``, ``num_blocks``,
    ``metadata`` (key-value metadata, str -> bytes), ``footer`` (the parsed
    :class:`~rcfmt.format.footer.FileMetaData`).

    On object storage the open reads the file's tail (the whole file up to 1 MiB) and
    later reads inside it are served from memory; ``fetch``
    (:class:`~rcfmt.storage.fetch.FetchOptions`) sets that tail and how this file's scans
    group their reads into requests. ``size`` (the file's size, when the
    caller knows it) and ``immutable`` (the object is never replaced under this name, as
    a dataset's files and index versions) let a repeated open take the footer and tail
    from a process-wide cache (:mod:`rcfmt.file.footer_cache`) without a request.
    ``shared_page_indexes`` (a file whose name is never reused for other bytes, as a
    dataset's data files): its footer is cached as an immutable remote file's is, on
    local disk too, and (with ``verify_checksums``) the page indexes its scans read and
    check are kept for every open of the file in this process
    (:mod:`rcfmt.file.page_index_cache`).
    """

    def __init__(self, path, *, verify_checksums: bool = True, filesystem=None, size: int | None = None,
                 immutable: bool = False, fetch: FetchOptions | None = None, shared_page_indexes: bool = False):
        self.fetch = check_fetch(fetch)
        self.path, self._source = open_input(path, filesystem, size, self.fetch.open_tail())
        self.verify_checksums = flag(verify_checksums, "verify_checksums")
        self._lock = threading.Lock()
        self.bytes_read = 0
        self.requests = 0  # reads made (each one request on an object store)
        self._local = threading.local()
        self._tail: tuple[int, bytes] | None = None  # remote files: (offset, bytes) read at the open
        self._page_indexes = PageIndexCache()  # (:attr:`page_index_cache`)
        #: the native block executor's views of lists of columns scans of this open file
        #: built (:class:`~rcfmt.scan.programs.Programs`): the next scan of the same
        #: columns (a loader's takes, repeated lookups) builds none
        self.program_cache: dict = {}
        try:
            self.size = self._source.size
            self.footer = self._open_footer(immutable and (self._source.remote or shared_page_indexes))
        except CorruptFileError as exc:
            self.close()
            raise exc.with_context(path=self.path) from None
        except UnsupportedError as exc:
            self.close()
            raise UnsupportedError(f"{self.path}: {exc}") from None
        except BaseException:
            self.close()
            raise
        if shared_page_indexes and self.verify_checksums:  # (once the footer is read and checked)
            self._page_indexes = SHARED_PAGE_INDEXES.get(self._cache_key())
        self._names = [c.name for c in self.footer.columns]
        self._index = name_index(self._names)
        self.schema = self.footer.arrow_schema
        #: the stored columns (nested fields as the dotted paths of their nodes; docs/FORMAT.md §3a)
        self.physical_schema = self.footer.physical_schema
        self.nested = self.footer.nested  # the tree of every field when one is nested, else None
        self._elements = frozenset(nested_mod.element_columns(self.nested)) if self.nested else frozenset()
        if self.nested is None:
            self.filter_schema = self.bind_schema = self.schema
        else:  # filters name top-level leaves and leaves under structs (their slots are rows)
            paths = nested_mod.filter_columns(self.nested)
            self.filter_schema = pa.schema([self.physical_schema.field(c) for _, c in paths],
                                           metadata=self.schema.metadata)
            self.bind_schema = nested_mod.bind_schema(self.schema)  # and lists, for list_contains

    # ------------------------------------------------------------------ basics
    @property
    def num_rows(self) -> int:
        return self.footer.num_rows

    @property
    def num_blocks(self) -> int:
        return self.footer.num_blocks

    @property
    def metadata(self) -> dict[str, bytes]:
        return dict(self.footer.metadata)

    def __repr__(self) -> str:
        return f"<rcfmt file {self.path!r}: {self.num_rows} rows, {self.num_blocks} blocks, {len(self._names)} columns>"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        source = getattr(self, "_source", None)
        if source is not None:
            source.close()

    def __del__(self):
        self.close()

    @property
    def remote(self) -> bool:
        """Whether each read is a request to a server (an object store)."""
        return self._source.remote

    # ------------------------------------------------------------------ raw I/O
    def _from_tail(self, offset: int, length: int):
        """The bytes ``[offset, offset + length)`` if the tail read at the open holds them."""
        tail = self._tail
        if tail is None or offset < tail[0] or offset + length > tail[0] + len(tail[1]):
            return None
        return memoryview(tail[1])[offset - tail[0] : offset - tail[0] + length]

    def read_range(self, offset: int, length: int) -> bytes:
        """Exactly ``length`` bytes at ``offset`` (CorruptFileError if the file is shorter)."""
        self._check_range(offset, length)
        held = self._from_tail(offset, length)
        if held is not None:
            return held.tobytes()
        data = self._source.read_at(offset, length)
        if len(data) != length:
            raise CorruptFileError("file shrank while reading", path=self.path, offset=offset)
        self._count(1, length)
        return data

    def _check_range(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise CorruptFileError(f"range [{offset}, {offset + length}) lies outside the file of {self.size} bytes",
                                   path=self.path, offset=offset)

    def read_into(self, offset: int, out: memoryview) -> None:
        """Fill ``out`` with the bytes at ``offset`` (a caller's reused buffer: no fresh
        memory to fault in; CorruptFileError if the file is shorter)."""
        length = len(out)
        self._check_range(offset, length)
        held = self._from_tail(offset, length)
        if held is not None:
            out[:] = held
            return
        if self._source.read_into(offset, out) != length:
            raise CorruptFileError("file shrank while reading", path=self.path, offset=offset)
        self._count(1, length)

    def _count(self, requests: int, nbytes: int) -> None:
        with self._lock:
            self.bytes_read += nbytes
            self.requests += requests
        local = self._local
        local.requests = getattr(local, "requests", 0) + requests

    def thread_requests(self) -> int:
        """Reads this thread has made from the file (a scan takes the difference around
        the work of one block, which runs on one thread)."""
        return getattr(self._local, "requests", 0)

    def read_ranges(self, starts, ends, pool=None) -> np.ndarray:
        """The bytes ``[starts[0], ends[-1])`` of the file with only the ranges
        ``[starts[i], ends[i])`` (sorted, disjoint) read (on object storage, up to
        :data:`~rcfmt.storage.fetch.FETCH_CONCURRENCY` requests in flight at once): one
        buffer whose positions are file offsets minus ``starts[0]``, so page positions and
        error offsets stay those of one contiguous read. The bytes between ranges are never
        read and must not be used (the buffer is uninitialised there; untouched, it costs
        no memory). ``pool``: a local read of :data:`SPLIT_READ_BYTES` or more is copied
        in two halves at once, the second on this thread pool unless it is busy until the
        first is done (counted as the requests it would be on one thread)."""
        lo, hi = int(starts[0]), int(ends[-1])
        if lo < 0 or hi > self.size or lo > hi:
            raise CorruptFileError(f"range [{lo}, {hi}) lies outside the file of {self.size} bytes",
                                   path=self.path, offset=lo)
        buf = memory.span_buffer(hi - lo, int(np.add.reduce(np.asarray(ends) - np.asarray(starts))))
        many = getattr(self._source, "read_ranges_into", None)
        if many is not None and self._tail is None and (len(starts) > 1 or pool is not None):
            # a local file: every range in one GIL-free call (two, side by side, for a large read on a pool)
            starts_, ends_ = np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(ends, np.int64)
            total = int(np.add.reduce(ends_ - starts_))
            if pool is not None and total >= SPLIT_READ_BYTES:
                first, second = halves(starts_, ends_, total)
                future = pool.submit(many, *second, buf, lo)
                try:
                    failed = many(*first, buf, lo)
                finally:
                    if future.cancel():  # (the pool was busy: this thread reads the second half too)
                        future = None
                    else:
                        wait_all([future])
                failed_second = many(*second, buf, lo) if future is None else future.result()
                failed = int(first[0][failed]) if failed >= 0 else \
                    int(second[0][failed_second]) if failed_second >= 0 else -1
            else:
                failed = many(starts_, ends_, buf, lo)
                failed = int(starts_[failed]) if failed >= 0 else -1
            if failed >= 0:
                raise CorruptFileError("file shrank while reading", path=self.path, offset=failed)
            self._count(len(starts_), total)
            return buf
        view = memoryview(buf)
        ranges = list(zip(starts.tolist(), ends.tolist()))

        if self._tail is not None:  # ranges the open's tail read holds are copied from it
            rest = []
            for a, b in ranges:
                held = self._from_tail(a, b - a)
                if held is None:
                    rest.append((a, b))
                else:
                    view[a - lo : b - lo] = held
            ranges = rest

        def fetch(r):
            a, b = r
            if self._source.read_into(a, view[a - lo : b - lo]) != b - a:
                raise CorruptFileError("file shrank while reading", path=self.path, offset=a)

        if many is not None and len(ranges) > 1:  # (the ranges the tail did not hold)
            starts_, ends_ = np.array(ranges, np.int64).T.copy()
            failed = many(starts_, ends_, buf, lo)
            if failed >= 0:
                raise CorruptFileError("file shrank while reading", path=self.path, offset=int(starts_[failed]))
        elif self._source.remote and len(ranges) > 1:  # a request each: in flight together, bounded
            list(fetching.fetch_pool().map(fetch, ranges))
        else:
            for r in ranges:
                fetch(r)
        self._count(len(ranges), sum(b - a for a, b in ranges))
        return buf

    def _cache_key(self) -> tuple:
        """What names this file in the process-wide caches: its store, path and size, and
        where the store tells it (local files: inode and modification time) the file
        itself, so that a file replaced at its path by one of the same size is not taken
        for it."""
        return self._source.identity, self.path, self.size, self._source.version

    def _open_footer(self, cacheable: bool) -> FileMetaData:
        """The footer: from the footer cache when ``cacheable`` and cached (checked as this
        open asks), else read (and then cached when ``cacheable``)."""
        key = self._cache_key()
        if cacheable:
            hit = FOOTERS.get(key)
            if hit is not None and (hit.verified or not self.verify_checksums):
                if hit.tail:  # (a local file's entry holds no tail: its reads cost no request)
                    self._tail = (hit.start, hit.tail)
                return hit.footer
        footer = self._read_footer()
        if cacheable:
            start, tail = self._tail if self._tail is not None else (0, b"")
            FOOTERS.put(key, CachedTail(footer, start, tail, self.verify_checksums), self._footer_length)
        return footer

    def _read_footer(self) -> FileMetaData:
        if self.size < HEADER_SIZE + TAIL_SIZE:
            raise CorruptFileError(f"file of {self.size} bytes is too short to be rcfmt")
        # one read of the tail, which holds the footer of most files (and the header of
        # small ones); on object storage that is the whole open: the header's magic and
        # version repeat what the footer's checksum-covered format_version says
        remote = self._source.remote
        tail_len = self.fetch.tail_length(self.size) if remote else min(self.size, _TAIL_READ)
        got = self._take_prefetched(self.size - tail_len) if remote else None
        tail_start, end = got if got is not None else (self.size - tail_len, self.read_range(self.size - tail_len,
                                                                                             tail_len))
        whole = tail_start == 0
        if remote:
            self._tail = (tail_start, end)
        head = end[:HEADER_SIZE] if whole else None if remote else self.read_range(0, HEADER_SIZE)
        if head is not None:
            magic, version = HEADER.unpack(head)
            if magic != MAGIC:
                raise CorruptFileError("not an rcfmt file (bad magic at the start)", offset=0)
            if version > FORMAT_VERSION:
                raise UnsupportedError(f"{self.path}: format version {version} is newer than this rcfmt "
                                       f"({FORMAT_VERSION})")
            if version < 1:
                raise CorruptFileError(f"invalid format version {version}", offset=4)
        end_len = len(end)
        footer_len, footer_crc, magic = TAIL.unpack_from(end, end_len - TAIL_SIZE)
        if magic != MAGIC:
            raise CorruptFileError("not an rcfmt file or truncated (bad magic at the end)", offset=self.size - 4)
        footer_start = self.size - TAIL_SIZE - footer_len
        if footer_len < 4 or footer_start < HEADER_SIZE:
            raise CorruptFileError(f"footer length {footer_len} does not fit in the file", offset=self.size - TAIL_SIZE)
        self._footer_length = footer_len
        if footer_len + TAIL_SIZE <= end_len:
            footer = end[end_len - TAIL_SIZE - footer_len : end_len - TAIL_SIZE]
        elif remote:  # the part of the footer before the tail read: one more request
            footer = self.read_range(footer_start, footer_len + TAIL_SIZE - end_len) + end[:end_len - TAIL_SIZE]
        else:
            footer = self.read_range(footer_start, footer_len)
        if self.verify_checksums and crc32(footer) != footer_crc:
            raise ChecksumError("footer checksum mismatch", offset=footer_start)
        return parse_footer(footer, footer_start, holds_type)

    def _take_prefetched(self, want: int) -> tuple[int, bytes] | None:
        """``(offset, bytes from there to the end)``, from ``want`` or before, out of what
        the source read while it opened (one request that also learned the size; the
        part before it, when the fetch policy wants more, is read now); None if the
        source read nothing."""
        pre = getattr(self._source, "prefetched", None)
        if pre is None:
            return None
        self._source.prefetched = None
        start, data = pre
        self._count(1, len(data))
        if start <= want:
            return start, data
        before = self._source.read_at(want, start - want)
        if len(before) != start - want:
            raise CorruptFileError("file shrank while reading", path=self.path, offset=want)
        self._count(1, len(before))
        return want, before + data

    # ------------------------------------------------------------------ metadata access
    def column_index(self, name: str) -> int:
        """The stored column named ``name``; :class:`SchemaError` if there is none, or
        more than one (Arrow allows repeated names: read those with ``columns=None``)."""
        try:
            i = self._index[name]
        except (KeyError, TypeError):
            raise SchemaError(f"unknown column {name!r}; the file has {self._names}") from None
        if i < 0:
            raise ambiguous_name(name, self._names)
        return i

    def resolve_columns(self, columns: Sequence[str] | None) -> list[int]:
        if columns is None:
            return list(range(len(self._names)))
        if isinstance(columns, str) or not isinstance(columns, Sequence):
            raise InvalidOptionError(f"columns must be a list of column names, got {columns!r}")
        return list(dict.fromkeys(self.column_index(c) for c in columns))  # (each once, as nested.project)

    def resolve_outputs(self, columns: Sequence[str] | None) -> list:
        """What a projection returns, field by field: a stored column's index (a flat
        field), or the :class:`rcfmt.schema.nested.Node` of a nested field, pruned to the
        sub-fields named (``"payload.user.id"``)."""
        if self.nested is None:
            return self.resolve_columns(columns)
        if columns is None:  # (by position: names may repeat)
            return [n.column if n.kind == nested_mod.LEAF else n for n in self.nested]
        if isinstance(columns, str) or not isinstance(columns, Sequence):
            raise InvalidOptionError(f"columns must be a list of column names, got {columns!r}")
        return [n.column if n.kind == nested_mod.LEAF else n for n in nested_mod.project(self.nested, list(columns))]

    def element_slots(self, block: int) -> dict[int, int]:
        """Values held by each element column's chunk in ``block`` (list elements, not
        rows), from the block's list lengths; empty for a file without lists."""
        elements = self._elements
        if not elements:
            return {}
        out: dict[int, int] = {}

        def decode(col: int, slots: int, rows) -> pa.Array:
            out[col] = slots
            return self._read_chunk(block, col, slots)

        rows = int(self.footer.blocks[block]["row_count"])
        for node in self.nested:
            nested_mod.assemble(node, decode, rows)
        return {c: n for c, n in out.items() if c in elements}

    def block_stats(self, column: str | int) -> StatsArrays:
        """Footer statistics of every block of ``column`` (a stored column's name, or
        its position)."""
        i = column if isinstance(column, int) and not isinstance(column, bool) and 0 <= column < len(self._names) \
            else self.column_index(column)
        return stats_arrays(self.footer.chunks[i], self.footer.columns[i].type, self.footer.blocks["row_count"])

    def page_indexes(self, block: int, columns) -> dict[int, np.ndarray]:
        """Page-index records of several chunks of one block, fetched with one read
        when the ranges they span are close enough to coalesce
        (:func:`rcfmt.storage.fetch.one_read`; a block's page-index records are
        adjacent in the page-index region)."""
        columns = sorted(set(columns))
        recs = [self.footer.chunks[c][block] for c in columns]
        span = one_read(((int(r["page_index_offset"]), int(r["page_index_length"])) for r in recs),
                        self.fetch.coalesce_gap if self.remote else LOCAL_COALESCE_GAP)
        if span is None:  # one chunk, or far apart: read them one by one
            return {c: self.page_index(block, c) for c in columns}
        lo, hi = span
        raw = self.read_range(lo, hi - lo)
        return {c: self.page_index(block, c, raw, lo) for c in columns}

    @property
    def page_index_cache(self) -> dict:
        """``{(block, column): PageIndex}`` scans of this open file have read and checked
        (:meth:`keep_page_index`): later scans (a loader's takes, repeated lookups) ask no
        read for them, as the footer read at the open serves every scan. Every open of a
        dataset's data file that verifies checksums shares one
        (:mod:`rcfmt.file.page_index_cache`)."""
        return self._page_indexes.entries

    def keep_page_index(self, block: int, column: int, index):
        """``index`` (a :class:`~rcfmt.index.page.PageIndex` of chunk ``column`` of
        ``block``, read and checked) kept in :attr:`page_index_cache` while the cache
        holds at most :data:`PAGE_INDEX_CACHE_BYTES` of records; returned."""
        return self._page_indexes.keep(block, column, index)

    def page_index(self, block: int, column: int, raw: bytes | None = None, base: int = 0) -> np.ndarray:
        """The page-index records of one column chunk (read on demand, checked).

        ``raw`` may hold already read bytes of the page-index region from offset ``base``."""
        col = self.footer.columns[column]
        rec = self.footer.chunks[column][block]
        length = int(rec["page_index_length"])
        dtype = page_record(col.stat_width)
        count = int(rec["page_count"])
        if length == 0:
            if count:
                raise CorruptFileError("chunk has pages but no page index", path=self.path, column=col.name, block=block)
            return np.empty(0, dtype)
        if length != count * dtype.itemsize:
            raise CorruptFileError("page index length disagrees with the page count", path=self.path,
                                   column=col.name, block=block)
        offset = int(rec["page_index_offset"])
        if raw is None:
            raw = self.read_range(offset, length)
        else:
            if offset < base or offset + length > base + len(raw):
                raise CorruptFileError("page index outside the bytes read", path=self.path, column=col.name, block=block)
            raw = memoryview(raw)[offset - base : offset - base + length]
        if self.verify_checksums and crc32(raw) != int(rec["page_index_crc"]):
            raise ChecksumError("page index checksum mismatch", path=self.path, column=col.name, block=block,
                                offset=int(rec["page_index_offset"]))
        rows = int(self.footer.blocks[block]["row_count"])
        if self.is_element_column(column):  # slots are list elements: the pages say how many
            rows = int(view_records(raw, dtype, count, dtype.itemsize)["row_count"].sum())
        start, end = int(rec["offset"]), int(rec["offset"]) + int(rec["length"])
        if count and not _pageindex.entries_consistent(raw, count, dtype.itemsize, rows, start, end):
            raise CorruptFileError("page index entries are inconsistent with their chunk", path=self.path,
                                   column=col.name, block=block)
        return view_records(raw, dtype, count, dtype.itemsize)

    def page_stats(self, block: int, column: int, entries: np.ndarray | None = None) -> StatsArrays:
        """Statistics of the pages of one column chunk, from the page index."""
        if entries is None:
            entries = self.page_index(block, column)
        return stats_arrays(entries, self.footer.columns[column].type, entries["row_count"])

    # ------------------------------------------------------------------ bitmap indexes
    @property
    def bitmap_columns(self) -> dict[int, int]:
        """``{column: row of the bitmap-index directory}`` of the columns with a bitmap
        index in at least one block (docs/FORMAT.md section 6b)."""
        columns = getattr(self, "_bitmap_columns", None)
        if columns is None:
            region = self.footer.bitmap_index
            columns = {} if region is None or "columns" not in region else {
                c: j for j, c in enumerate(region["columns"])}
            self._bitmap_columns = columns
        return columns

    def bitmap_directory(self) -> np.ndarray:
        """The bitmap-index directory, ``(indexed columns, blocks)`` records (read once,
        checked)."""
        directory = getattr(self, "_bitmap_directory", None)
        if directory is None:
            region = self.footer.bitmap_index
            start, end = region["offset"], region["offset"] + region["length"]
            raw = self.read_range(region["directory_offset"], end - region["directory_offset"])
            try:
                directory = parse_directory(raw, len(region["columns"]), self.num_blocks,
                                            (start, region["directory_offset"]), self.verify_checksums)
            except CorruptFileError as exc:
                raise exc.with_context(path=self.path) from None
            self._bitmap_directory = directory
        return directory

    def bitmap_span(self, block: int, column: int) -> tuple[int, int]:
        """``(offset, length)`` of the chunk's bitmap-index entry; length 0 if none."""
        row = self.bitmap_columns.get(column)
        if row is None:
            return 0, 0
        offsets, lengths, _ = self._bitmap_records()
        return offsets[row][block], lengths[row][block]

    def _bitmap_records(self) -> tuple[list, list, list]:
        """The directory as Python lists (offsets, lengths, crc32s per indexed column):
        looked up per entry, many times per scan."""
        records = getattr(self, "_bitmap_lists", None)
        if records is None:
            d = self.bitmap_directory()
            records = self._bitmap_lists = (d["offset"].tolist(), d["length"].tolist(), d["crc32"].tolist())
        return records

    def bitmap_entry(self, block: int, column: int, buf=None, base: int = 0) -> IndexEntry | None:
        """The chunk's bitmap index (checksum verified, layout checked), or None if it
        has none. ``buf`` may hold already read bytes of the file from offset ``base``."""
        offset, length = self.bitmap_span(block, column)
        if not length:
            return None
        name = self._names[column]
        if buf is not None and base <= offset and offset + length <= base + len(buf):
            raw = memoryview(buf)[offset - base : offset - base + length]  # (no copy: the entry views it)
        else:
            raw = self.read_range(offset, length)
        row = self.bitmap_columns[column]
        if self.verify_checksums and crc32(raw) != self._bitmap_records()[2][row][block]:
            raise ChecksumError("bitmap index checksum mismatch", path=self.path, column=name, block=block,
                                offset=offset)
        try:
            return parse_entry(raw, int(self.footer.blocks[block]["row_count"]),
                               keys_parser(self.footer.columns[column].type))
        except CorruptFileError as exc:
            raise exc.with_context(path=self.path, column=name, block=block) from None

    # ------------------------------------------------------------------ decoding
    def chunk_decoder(self, block: int, column: int, buf: bytes | None = None, base: int | None = None,
                      dictionary=None) -> ChunkDecoder:
        """A decoder over the chunk's bytes (read whole unless ``buf``, holding file bytes
        from offset ``base`` on, is given; ``dictionary`` passes an already decoded one)."""
        rec = self.footer.chunks[column][block]
        if buf is None:
            base = int(rec["offset"])
            buf = self.read_range(base, int(rec["length"]))
        from .chunks import ChunkDecoder

        try:
            return ChunkDecoder(buf, base, rec, self.footer.columns[column].type, self.verify_checksums, dictionary)
        except CorruptFileError as exc:
            raise self.locate_error(exc, block, column) from None

    def locate_error(self, exc, block: int, column: int):
        """``exc`` (a CorruptFileError or UnsupportedError raised decoding chunk
        ``column`` of ``block``) naming this file, the column and the block."""
        if isinstance(exc, UnsupportedError):
            return UnsupportedError(f"{self.path}, column {self._names[column]!r}, block {block}: {exc}")
        return exc.with_context(path=self.path, column=self._names[column], block=block)

    def is_element_column(self, column: int) -> bool:
        """Whether stored column ``column`` holds list elements (not one slot per row)."""
        return column in self._elements

    def check_slots(self, block: int, column: int, slots: int, held: int | None = None) -> None:
        """Raise CorruptFileError unless chunk ``column`` of ``block`` can hold ``slots``
        values (list lengths say how many an element column holds): at most 2^20 per
        page, and exactly ``held`` when its page index (which counts them) is given.
        Checked before anything is allocated for them."""
        limit = int(self.footer.chunks[column][block]["page_count"]) * MAX_PAGE_ROWS
        if slots > limit or (held is not None and held != slots):
            raise CorruptFileError(f"list lengths say {slots} values, the pages of {self._names[column]!r} hold "
                                   f"{'at most ' + str(limit) if held is None else held}")

    def read_column_chunk(self, block: int, column: int) -> pa.Array:
        """Decode one whole stored column chunk into an Arrow array (for a column of list
        elements, one value per element)."""
        if self.is_element_column(column):
            return self._read_chunk(block, column, self.element_slots(block)[column])
        return self._read_chunk(block, column, int(self.footer.blocks[block]["row_count"]))

    def _read_chunk(self, block: int, column: int, rows: int, buf=None, base: int | None = None) -> pa.Array:
        """The ``rows`` values of one stored column chunk (checked against its pages
        before anything is allocated for them) as a flat Arrow array."""
        col = self.footer.columns[column]
        try:
            self.check_slots(block, column, rows)
            values, valid = self.chunk_decoder(block, column, buf, base).decode_all(rows)
            if valid is not None and not col.nullable:
                raise CorruptFileError("nulls in a column declared not nullable")
            return to_arrow(values, valid, col.type)
        except (CorruptFileError, UnsupportedError) as exc:
            raise self.locate_error(exc, block, column) from None

    def _check_block(self, i) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise InvalidOptionError(f"block index must be an int, got {type(i).__name__} {i!r}")
        if not -self.num_blocks <= i < self.num_blocks:
            raise InvalidOptionError(f"block index {i!r} out of range for {self.num_blocks} blocks")
        return int(i) % self.num_blocks

    def read_block(self, i: int, columns: Sequence[str] | None = None) -> pa.Table:
        """Read block ``i`` (negative counts from the end)."""
        i = self._check_block(i)
        return self.scan(columns, blocks=(i, i + 1), use_threads=False).read()

    def scan(self, columns: Sequence[str] | None = None, filter=None, *, use_threads: bool = True,
             read_dictionary: Sequence[str] | None = None, use_bloom: bool = True, use_page_index: bool = True,
             blocks: tuple[int, int] | None = None, use_bitmap_index: bool = True,
             with_row_position: bool | str = False, _rows=None, _deleted=None):
        """Plan a skipping scan; returns a :class:`~rcfmt.scan.scanner.FileScan` with
        ``read()``, ``iter_batches()``, ``count()`` and ``stats`` (what was pruned, read,
        decoded).

        ``filter`` is an expression (``rcfmt.col("x") > 5``) or pyarrow-style DNF list.
        ``read_dictionary`` lists columns to return as ``pyarrow.DictionaryArray``.
        ``blocks=(start, stop)`` scans only those blocks (e.g. one task's share).
        ``with_row_position``: each row's position in the file (0-based) as a last int64
        column ``_row_position`` (or of the name given instead of True), which :meth:`take`
        reads back.
        ``use_bloom``, ``use_page_index``, ``use_bitmap_index`` turn a skipping
        structure off (for comparisons; results are the same). ``use_threads``: blocks
        are decoded on a pool of one worker per core -- on a local file only when they
        are large enough to gain from it (:data:`rcfmt.scan.scheduling.PARALLEL_BLOCK_BYTES`
        of decoded columns per block); False keeps every block on the calling thread."""
        from ..scan.scanner import scan_file

        return scan_file(self, columns=columns, filter=filter, use_threads=use_threads,
                         read_dictionary=read_dictionary, use_bloom=use_bloom, use_page_index=use_page_index,
                         blocks=blocks, use_bitmap_index=use_bitmap_index, with_row_position=with_row_position,
                         rows=_rows, deleted=_deleted)

    def read(self, columns: Sequence[str] | None = None, filter=None, *, use_threads: bool = True,
             read_dictionary: Sequence[str] | None = None, with_row_position: bool | str = False) -> pa.Table:
        """Read the selected ``columns`` (all by default) of all rows matching ``filter``
        (``with_row_position``: and each row's position, as :meth:`scan`).

        A scan without a filter (:meth:`scan` also gives its statistics): each block's
        columns decoded by one native call, blocks on the pool with ``use_threads`` (when
        they are large enough: see :meth:`scan`)."""
        return self.scan(columns, filter, use_threads=use_threads, read_dictionary=read_dictionary,
                         with_row_position=with_row_position).read()

    def take(self, indices, columns: Sequence[str] | None = None, *, use_threads: bool = True,
             read_dictionary: Sequence[str] | None = None) -> pa.Table:
        """The rows at 0-based positions ``indices`` (any integer array-like: a list,
        numpy or pyarrow array), in the order given -- unsorted and repeated positions
        allowed; none gives an empty table of the schema.

        Every position is checked before anything is read: one below 0 or at or past
        :attr:`num_rows` is a :class:`~rcfmt.errors.RowIndexError` (an IndexError; no
        wrap-around), floats, NULLs or anything not integers an
        :class:`~rcfmt.errors.InvalidOptionError`, each naming the first bad one. Only the
        blocks and pages holding a wanted row are read, and only those rows decoded
        (the page index finds the pages; one native call per block)."""
        from ..scan.positions import check_positions, reorder

        positions = check_positions(indices, self.num_rows)
        table = self.scan(columns, use_threads=use_threads, read_dictionary=read_dictionary,
                          _rows=positions.rows).read()
        return reorder(table, positions)

    def iter_batches(self, batch_size: int = 65536, columns: Sequence[str] | None = None, filter=None,
                     *, use_threads: bool = False, with_row_position: bool | str = False) -> Iterator[pa.RecordBatch]:
        """Stream record batches of at most ``batch_size`` rows, one block in memory at a time."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise InvalidOptionError(f"batch_size must be a positive integer, got {batch_size!r}")
        yield from self.scan(columns, filter, use_threads=use_threads,
                             with_row_position=with_row_position).iter_batches(batch_size)

    def __arrow_c_stream__(self, requested_schema=None):
        """Every row as an Arrow C stream (the Arrow PyCapsule interface), one block in
        memory at a time; the file must stay open while the stream is read."""
        return export_stream(self.schema, self.iter_batches(), requested_schema)


def open(path, *, verify_checksums: bool = True, filesystem=None,  # noqa: A001 - mirrors builtins.open
         fetch: FetchOptions | None = None) -> RcfmtFile:
    """Open an rcfmt file for reading: a local path, a ``file://`` or object-store URI
    (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``), or a path on ``filesystem`` (see
    :mod:`rcfmt.storage`). ``fetch``: how reads of a remote file trade requests for
    bytes (:class:`~rcfmt.storage.fetch.FetchOptions`)."""
    return RcfmtFile(path, verify_checksums=verify_checksums, filesystem=filesystem, fetch=fetch)


def read_table(path, columns: Sequence[str] | None = None, filter=None, *, use_threads: bool = True,
               read_dictionary: Sequence[str] | None = None, verify_checksums: bool = True,
               filesystem=None, fetch: FetchOptions | None = None, with_row_position: bool | str = False) -> pa.Table:
    """Read an rcfmt file (any path :func:`open` takes) into a :class:`pyarrow.Table`
    (``with_row_position``: each row's position in the file as a last int64 column
    ``_row_position``; ``rcfmt.open(path).take(positions)`` reads those rows back)."""
    with RcfmtFile(path, verify_checksums=verify_checksums, filesystem=filesystem, fetch=fetch) as f:
        return f.read(columns, filter, use_threads=use_threads, read_dictionary=read_dictionary,
                      with_row_position=with_row_position)
