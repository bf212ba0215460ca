"""Cheap statistics of one column chunk, computed once and shared by all candidates."""
from __future__ import annotations

from ..runtime.records import record, field

__all__ = ["ChunkAnalysis"]


@record
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
    #: integer-like storage (ints, date32, timestamp, and decimal128 whose values all
    #: fit in int64): min and max as Python ints
    min_int: int | None = None
    max_int: int | None = None
    is_sorted: bool | None = None  # non-decreasing over all slots
    #: ``(codes int32[rows], dictionary ColumnValues)`` when the selector built one
    dictionary: tuple | None = None
    #: encoder parameters the selector settled on, by encoding name (e.g. ALP's
    #: exponent, BITPACK's byte-aligned width, DICTIONARY's code layout)
    params: dict = field(default_factory=dict)
    #: the selector's compression advice for the chunk: "zstd" when its sample showed a
    #: codec pays, "none" when it does not (dense bit-packed data), None if unknown
    compression: str | None = None
    #: estimated stored bytes (after the advised compression) of the chosen encoding
    estimated_size: int | None = None
    #: every candidate the selector scored: ``(name, variant, est. bytes, score)``
    candidates: list = field(default_factory=list)
    #: the selector's :class:`~rcfmt.encodings.selector.Decision` when it sampled the
    #: chunk (None when it took a hint or had nothing to sample)
    decision: object = None
