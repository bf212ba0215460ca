"""Cheap statistics of one column chunk, computed once and shared by all candidates."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ChunkAnalysis"]


@dataclass
class ChunkAnalysis:
    """What the selector knows about a chunk before choosing an encoding.

    Integer-like fields are about the storage values of the non-null rows (null slots
    are already filled by the writer with a value that encodes well).
    """

    rows: int
    null_count: int
    plain_size: int  # bytes of PLAIN encoding (values; offsets included for VARBINARY)
    run_count: int | None = None  # runs of equal consecutive values over all slots
    distinct_count: int | None = None
    min_int: int | None = None  # integer-like storage (ints, date32, timestamp): min as int
    max_int: int | None = None
    is_sorted: bool | None = None  # non-decreasing over all slots
    #: ``(codes int32[rows], dictionary ColumnValues)`` when the selector built one
    dictionary: tuple | None = None
