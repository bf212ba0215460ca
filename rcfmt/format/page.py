"""Pages: the 32-byte header, the body (optional validity bitmap + encoded values),
compression and checksums -- the writer's side.

A page is ``header | stored body``; the stored body is the compressed (or not) form
of ``[validity bitmap] encoded values``. See docs/FORMAT.md, "Pages". Readers parse
and check pages in the native page pipeline, :mod:`rcfmt._native.pages`.
"""
from __future__ import annotations

import zlib

import numpy as np

from .. import codecs
from .layout import MAX_PAGE_BYTES, MAX_PAGE_ROWS, PAGE_FLAG_VALIDITY, PAGE_HEADER

__all__ = ["build_page", "pack_validity"]


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
