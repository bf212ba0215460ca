"""Pages: the 32-byte header, the body (optional validity bitmap + encoded values),
compression and checksums -- the writer's side.

A page is ``header | stored body``; the stored body is the compressed (or not) form
of ``[validity bitmap] encoded values``. See docs/FORMAT.md, "Pages". A chunk's pages
are assembled in one native call (:func:`rcfmt._native.page_writer.write_pages`:
validity packed, bodies compressed and checksummed without the GIL); readers parse and
check them in the native page pipeline, :mod:`rcfmt._native.pages`.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import codecs
from .._native.page_writer import Compressor, write_pages

__all__ = ["assemble_pages", "build_page"]

_local = threading.local()  # a zstd context per thread, reused chunk after chunk


def _compressor() -> Compressor:
    comp = getattr(_local, "compressor", None)
    if comp is None:
        comp = _local.compressor = Compressor()
    return comp


def assemble_pages(bodies: list, page_types, rows, nulls, first_rows, valid: np.ndarray | None, encoding: int,
                   codec: int, level: int | None = None, min_saving: float | None = None,
                   dictionary_codec: int | None = None, zstd_block: int = 0):
    """A chunk's pages laid out back to back: ``(bytes, codec used, page lengths,
    uncompressed body sizes)`` (see :func:`rcfmt._native.page_writer.write_pages`).
    ``valid``: the chunk's validity (bool per row; a page with nulls gets the bitmap of
    its rows in front of its body); ``min_saving``: keep ``codec`` only if it saves at
    least this share of the bytes; ``dictionary_codec``: compress a dictionary page (the
    first body) with this codec, kept by ``min_saving`` on its own bytes, whatever the
    data pages do (None: it goes with them); ``zstd_block`` > 0: a zstd data page larger
    than that ends a zstd block every ``zstd_block`` bytes of its body (one ordinary
    frame, a prefix of which a reader can inflate alone: docs/FORMAT.md 4.3)."""
    level = codecs.DEFAULT_ZSTD_LEVEL if level is None else level
    return write_pages(bodies, page_types, rows, nulls, first_rows, valid, encoding, codec, level,
                       -1.0 if min_saving is None else min_saving, _compressor(),
                       -1 if dictionary_codec is None else dictionary_codec, zstd_block)


def build_page(page_type: int, encoding: int, rows: int, body: bytes, codec: int = codecs.NONE,
               level: int | None = None) -> bytes:
    """One page without nulls from its encoded ``body``, as the writer lays pages out."""
    out, _, _, _ = assemble_pages([body], [page_type], [rows], [0], [0], None, encoding, codec, level)
    return bytes(out)
