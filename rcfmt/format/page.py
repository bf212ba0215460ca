"""Pages: the 32-byte header, the body (optional validity bitmap + encoded values),
compression and checksums.

A page is ``header | stored body``; the stored body is the compressed (or not) form
of ``[validity bitmap] encoded values``. See docs/FORMAT.md, "Pages".
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from .. import codecs
from ..errors import ChecksumError, CorruptFileError
from .layout import (
    MAX_PAGE_BYTES,
    MAX_PAGE_ROWS,
    PAGE_DATA,
    PAGE_DICTIONARY,
    PAGE_FLAG_VALIDITY,
    PAGE_HEADER,
    PAGE_HEADER_SIZE,
    PAGE_KNOWN_FLAGS,
)

__all__ = ["PageHeader", "build_page", "parse_page_header", "page_body", "split_validity", "pack_validity"]


@dataclass(frozen=True)
class PageHeader:
    page_type: int
    encoding: int
    compression: int
    flags: int
    row_count: int
    value_count: int
    null_count: int
    compressed_size: int
    uncompressed_size: int
    body_crc: int

    @property
    def has_validity(self) -> bool:
        return bool(self.flags & PAGE_FLAG_VALIDITY)

    @property
    def total_size(self) -> int:
        return PAGE_HEADER_SIZE + self.compressed_size


def pack_validity(valid: np.ndarray) -> bytes:
    """Pack a bool array into an LSB-first bitmap (Arrow's bit order)."""
    return np.packbits(valid, bitorder="little").tobytes()


def build_page(page_type: int, encoding: int, rows: int, null_count: int, body: bytes,
               codec: int, level: int | None = None, compressed: bytes | None = None) -> bytes:
    """Assemble a page from its uncompressed ``body`` (validity bitmap already included
    when ``null_count > 0``). ``compressed`` may pass an already compressed body."""
    if rows > MAX_PAGE_ROWS or len(body) > MAX_PAGE_BYTES:
        raise ValueError("page too large")  # writer bug: it cuts pages well below this
    stored = body if codec == codecs.NONE else (compressed if compressed is not None else codecs.compress(codec, body, level))
    flags = PAGE_FLAG_VALIDITY if null_count > 0 else 0
    head = PAGE_HEADER.pack(page_type, encoding, codec, flags, rows, rows, null_count,
                            len(stored), len(body), zlib.crc32(stored), 0)
    head = head[:-4] + zlib.crc32(head[:-4]).to_bytes(4, "little")
    return head + stored


def parse_page_header(buf, pos: int) -> PageHeader:
    """Parse and check the page header at ``buf[pos:]`` (checksum, flags, sizes vs buffer)."""
    if pos < 0 or pos + PAGE_HEADER_SIZE > len(buf):
        raise CorruptFileError("truncated page header")
    fields = PAGE_HEADER.unpack_from(buf, pos)
    header_crc = fields[-1]
    if zlib.crc32(buf[pos : pos + PAGE_HEADER_SIZE - 4]) != header_crc:
        raise ChecksumError("page header checksum mismatch")
    h = PageHeader(*fields[:-1])
    if h.page_type not in (PAGE_DATA, PAGE_DICTIONARY):
        raise CorruptFileError(f"unknown page type {h.page_type}")
    if h.flags & ~PAGE_KNOWN_FLAGS:
        raise CorruptFileError(f"unknown page flags 0x{h.flags:02x}")
    if h.row_count > MAX_PAGE_ROWS or h.uncompressed_size > MAX_PAGE_BYTES:
        raise CorruptFileError(f"page claims {h.row_count} rows / {h.uncompressed_size} bytes, beyond format limits")
    if h.value_count != h.row_count or h.null_count > h.row_count:
        raise CorruptFileError(f"inconsistent page counts (rows={h.row_count}, values={h.value_count}, nulls={h.null_count})")
    if h.has_validity != (h.null_count > 0):
        raise CorruptFileError("validity flag disagrees with null count")
    if pos + h.total_size > len(buf):
        raise CorruptFileError(f"page body of {h.compressed_size} bytes runs past the end of its chunk")
    return h


def page_body(buf, pos: int, h: PageHeader, verify: bool = True):
    """The uncompressed body of the page whose header ``h`` was parsed at ``pos``."""
    start = pos + PAGE_HEADER_SIZE
    stored = memoryview(buf)[start : start + h.compressed_size]  # no copy
    if verify and zlib.crc32(stored) != h.body_crc:
        raise ChecksumError("page body checksum mismatch")
    return codecs.decompress(h.compression, stored, h.uncompressed_size)


def split_validity(body, h: PageHeader):
    """Split a body into ``(valid bool array or None, values bytes)``; checks null count."""
    if not h.has_validity:
        return None, body
    nbytes = (h.row_count + 7) // 8
    if len(body) < nbytes:
        raise CorruptFileError("page body shorter than its validity bitmap")
    bits = np.frombuffer(body, dtype=np.uint8, count=nbytes)
    valid = np.unpackbits(bits, count=h.row_count, bitorder="little").view(bool)
    nulls = h.row_count - int(np.count_nonzero(valid))
    if nulls != h.null_count:
        raise CorruptFileError(f"validity bitmap has {nulls} nulls, header says {h.null_count}")
    return valid, memoryview(body)[nbytes:]
