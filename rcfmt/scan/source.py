"""What a scan needs of the file it reads (:class:`ScanFile`): its metadata, its page
indexes and bitmap-index entries, where its chunks lie, and a reader of byte ranges.

:class:`~rcfmt.file.reader.RcfmtFile` is one; the scan (``rcfmt.scan``, below ``file/``)
is handed one and uses nothing else of it -- ``tests/test_structure.py`` checks every
``file.<name>`` the scan's modules use against this protocol, and that ``RcfmtFile``
has all of it.
"""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np
import pyarrow as pa

from ..format.footer import FileMetaData
from ..schema.statistics import StatsArrays
from ..storage.fetch import FetchOptions

__all__ = ["ScanFile"]


@runtime_checkable
class ScanFile(Protocol):
    """An open file as a scan reads it."""

    # ---------------------------------------------------------------- metadata
    #: where the file is (error messages, plans)
    path: object
    #: the parsed footer: blocks, chunk records, column types
    footer: FileMetaData
    #: the Arrow schema returned, the one columns are stored as, and the one filters bind to
    schema: pa.Schema
    physical_schema: pa.Schema
    bind_schema: pa.Schema
    #: the tree of every field when one is nested (else None)
    nested: object
    #: whether every page is checked against its CRC
    verify_checksums: bool
    #: how byte ranges are fetched from an object store
    fetch: FetchOptions
    #: page indexes read by earlier scans, by ``(block, column)``
    page_index_cache: dict
    #: native programs built by earlier scans (:class:`~rcfmt.scan.programs.Programs`)
    program_cache: dict

    @property
    def num_rows(self) -> int: ...

    @property
    def num_blocks(self) -> int: ...

    @property
    def remote(self) -> bool:
        """Whether the file is on an object store (reads are requests)."""

    @property
    def bitmap_columns(self) -> dict[int, int]:
        """The columns with a bitmap index (column -> its kind)."""

    def column_index(self, name: str) -> int: ...

    def resolve_outputs(self, columns: Sequence[str] | None) -> list:
        """Per output field, a stored column's index or a nested field's (pruned) node."""

    def block_stats(self, column: str | int) -> StatsArrays:
        """Every block's statistics of one column."""

    def is_element_column(self, column: int) -> bool: ...

    def check_slots(self, block: int, column: int, slots: int, held: int | None = None) -> None: ...

    # ---------------------------------------------------------------- indexes
    def page_index(self, block: int, column: int, raw: bytes | None = None, base: int = 0) -> np.ndarray:
        """A chunk's page-index records (from ``raw``, read already, when given)."""

    def page_indexes(self, block: int, columns) -> dict[int, np.ndarray]:
        """Several chunks' page-index records of one block, read together."""

    def keep_page_index(self, block: int, column: int, index):
        """Keep a parsed page index for later scans of the open file; returns the one kept."""

    def bitmap_span(self, block: int, column: int) -> tuple[int, int]: ...

    def bitmap_entry(self, block: int, column: int, buf=None, base: int = 0): ...

    # ---------------------------------------------------------------- bytes
    def read_ranges(self, starts, ends, pool=None) -> np.ndarray:
        """The bytes ``[starts[0], ends[-1])`` with only the ranges given read (a large
        local read copied in halves side by side, one on ``pool``)."""

    def read_into(self, offset: int, out: memoryview) -> None: ...

    def thread_requests(self) -> int:
        """Requests this thread made so far (object stores; counted by scans)."""

    def chunk_decoder(self, block: int, column: int, buf: bytes | None = None, base: int | None = None, **options):
        """The reference decoder of one chunk (it explains the executor's refusals)."""

    def locate_error(self, exc, block: int, column: int):
        """``exc`` with the file, block and column named."""
