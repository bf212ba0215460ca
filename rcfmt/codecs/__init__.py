"""Byte-level compression of page bodies: none, zstd, lz4 (raw block).

Separate from value encodings. Every decompression is bounded by the uncompressed size
recorded in the (checksummed) page header (no more than that many bytes, plus one, are
ever produced, whatever the compressed frame claims), and its output length is verified.
These are the Python codecs: the page pipeline (:mod:`rcfmt._native.pages`) calls the
libraries' C entry points directly when it finds them, and these otherwise. The
``zstandard`` and ``lz4`` modules are imported on first use (a read whose pipeline has
the C entry points never imports them).
"""
from __future__ import annotations

import threading

from ..errors import CorruptFileError, InvalidOptionError, UnsupportedError

__all__ = ["NONE", "ZSTD", "LZ4", "CODEC_NAMES", "codec_id", "compress", "decompress"]

NONE = 0
ZSTD = 1
LZ4 = 2
CODEC_NAMES = {NONE: "none", ZSTD: "zstd", LZ4: "lz4"}
_IDS = {name: cid for cid, name in CODEC_NAMES.items()}
DEFAULT_ZSTD_LEVEL = 3

_local = threading.local()  # zstd contexts are not thread-safe: one per thread and level


def codec_id(name: str) -> int:
    """Wire id of the codec called ``name`` ("none", "zstd", "lz4")."""
    try:
        return _IDS[name]
    except (KeyError, TypeError):
        raise InvalidOptionError(f"unknown compression {name!r}; expected one of {sorted(_IDS)} or 'auto'") from None


def _zstd_compressor(level: int) -> "zstandard.ZstdCompressor":
    cache = getattr(_local, "compressors", None)
    if cache is None:
        cache = _local.compressors = {}
    comp = cache.get(level)
    if comp is None:
        import zstandard

        comp = cache[level] = zstandard.ZstdCompressor(level=level, write_content_size=False)
    return comp


def _zstd_decompressor() -> "zstandard.ZstdDecompressor":
    dec = getattr(_local, "decompressor", None)
    if dec is None:
        import zstandard

        dec = _local.decompressor = zstandard.ZstdDecompressor()
    return dec


def compress(codec: int, data, level: int | None = None) -> bytes:
    """Compress ``data`` (bytes-like) with ``codec``."""
    if codec == NONE:
        return bytes(data)
    if codec == ZSTD:
        return _zstd_compressor(DEFAULT_ZSTD_LEVEL if level is None else level).compress(data)
    if codec == LZ4:
        import lz4.block

        return lz4.block.compress(data, store_size=False)
    raise InvalidOptionError(f"unknown codec id {codec}")


def _zstd_bounded(data, size: int):
    """The zstd frame ``data`` decompressed, producing at most ``size`` (+ 1) bytes
    whatever the frame says: a frame that declares its content size gets a buffer of
    that size only if it is ``size`` (python-zstandard's one-shot ``decompress`` sizes its
    buffer by the declared size, ignoring ``max_output_size``); one that does not is
    decompressed into a buffer of ``size`` bytes, or, for ``size`` 0 (which the one-shot
    call cannot take), streamed for at most one byte."""
    import zstandard

    dec = _zstd_decompressor()
    if size == 0:
        with dec.stream_reader(data) as reader:
            return reader.read(1)  # one byte is already too many
    declared = zstandard.frame_content_size(data)  # -1: not in the frame header
    if declared != -1 and declared != size:
        raise CorruptFileError(f"zstd frame declares {declared} bytes, header says {size}")
    return dec.decompress(data, max_output_size=size)


def decompress(codec: int, data, uncompressed_size: int):
    """Decompress ``data`` to exactly ``uncompressed_size`` bytes or raise CorruptFileError."""
    if codec == NONE:
        if len(data) != uncompressed_size:
            raise CorruptFileError(f"stored size {len(data)} != uncompressed size {uncompressed_size}")
        return data
    import lz4.block
    import zstandard

    try:
        if codec == ZSTD:
            out = _zstd_bounded(data, uncompressed_size)
        elif codec == LZ4:  # (lz4 writes into a buffer of uncompressed_size: bounded, 0 included)
            out = lz4.block.decompress(data, uncompressed_size=uncompressed_size)
        else:
            raise UnsupportedError(f"unknown compression codec id {codec} (written by a newer rcfmt?)")
    except (zstandard.ZstdError, lz4.block.LZ4BlockError, ValueError, MemoryError) as exc:
        raise CorruptFileError(f"{CODEC_NAMES.get(codec, codec)} decompression failed: {exc}") from None
    if len(out) != uncompressed_size:
        raise CorruptFileError(
            f"{CODEC_NAMES[codec]} page decompressed to {len(out)} bytes, header says {uncompressed_size}"
        )
    return out
