"""The contract every value encoding implements.

An encoding turns the values of one page (all row slots, nulls included: the validity
bitmap is stored separately by the page layer and values in null slots are
unspecified) into bytes and back. An encoding may also need chunk-wide state (the
dictionary of DICTIONARY): it then overrides :meth:`Encoding.encode_chunk` and receives
the decoded dictionary in :meth:`Encoding.decode`.

Decoders validate every count and length they read against the bytes they were given
and raise :class:`rcfmt.errors.CorruptFileError` (without location; the page layer adds
file/column/block/page) — never crash, over-read or allocate beyond what the page
header already bounds.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Sequence

from ..runtime.records import record
from ..schema.types import LogicalType
from ..schema.values import ColumnValues
from .ids import holds

__all__ = ["ColumnValues", "EncodedChunk", "Encoding"]


@record
class EncodedChunk:
    """The output of encoding one column chunk: an optional dictionary page body and
    one body per data page (uncompressed, before the page layer adds validity)."""

    encoding: "Encoding"
    pages: list[bytes]
    dictionary: bytes | None = None
    dictionary_size: int = 0  # number of dictionary entries
    distinct_count: int | None = None


class Encoding(ABC):
    """A value encoding. Subclasses are stateless; register them in the registry."""

    #: wire id, stored in page headers and the footer; never reused
    id: ClassVar[int]
    #: name shown by tools and accepted in writer options
    name: ClassVar[str]
    @classmethod
    def supports(cls, ltype: LogicalType) -> bool:
        """Whether this encoding can store values of ``ltype`` (the table of
        :mod:`rcfmt.encodings.ids`)."""
        return bool(holds(cls.id, ltype))

    @abstractmethod
    def encode(self, values: ColumnValues, ltype: LogicalType) -> bytes:
        """Encode the values of one page."""

    @abstractmethod
    def decode(self, body, rows: int, ltype: LogicalType, dictionary: ColumnValues | None = None) -> ColumnValues:
        """Decode one page body holding ``rows`` values. ``body`` is a bytes-like object."""

    def encode_chunk(self, chunk: ColumnValues, ltype: LogicalType, page_bounds: Sequence[int],
                     analysis=None) -> EncodedChunk:
        """Encode a whole chunk cut at ``page_bounds`` (row offsets, first 0, last len).

        ``analysis`` is the selector's :class:`~rcfmt.encodings.analysis.ChunkAnalysis`,
        which may carry work already done (e.g. the dictionary)."""
        pages = [
            self.encode(chunk.slice(start, stop), ltype)
            for start, stop in zip(page_bounds[:-1], page_bounds[1:])
        ]
        return EncodedChunk(self, pages)

    def estimate_size(self, chunk: ColumnValues, ltype: LogicalType, analysis) -> int | None:
        """Estimated encoded bytes of ``chunk``, or None if this encoding does not fit.

        ``analysis`` is the selector's :class:`~rcfmt.encodings.analysis.ChunkAnalysis`
        (cheap statistics computed once per chunk).
        The selector keeps the smallest estimate; ties go to the lower wire id.
        """
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id} name={self.name!r}>"
