"""DELTA (wire id 4): first value + bit-packed deltas, for sorted or nearly sorted
integers, dates and timestamps (int8..int64, uint8..uint64, date32, timestamp).

The deltas ``d[i] = v[i] - v[i-1]`` (modulo ``2**T``, ``T`` = bits of the storage type)
are stored with a frame of reference: the page's minimum delta ``ref`` (read as a
signed ``T``-bit integer) is subtracted, so sorted data with a steady step has tiny
widths (a constant step packs at 0 bits) and slightly unsorted data (small negative
deltas) needs no zigzag. Everything is modular, so any input round-trips, int64
extremes included.

Page body (all little-endian)
-----------------------------

======  =====  =================================================================
offset  size   field
======  =====  =================================================================
0       1      ``w``: bit width, ``0 <= w <= T``
1       7      reserved, zero
8       8      ``first``: the first value, sign-extended (signed types) or
               zero-extended (unsigned types) to 8 bytes (0 if ``rows = 0``)
16      8      ``ref``: the minimum delta, signed, ``-2**(T-1) <= ref < 2**(T-1)``
24      ...    ``rows`` entries ``u[0] = 0``, ``u[i] = (d[i] - ref) mod 2**T``,
               bit-packed at ``w`` bits in the block layout of
               :mod:`rcfmt.encodings.bitpack`
======  =====  =================================================================

Decoding: ``v[i] = v[i-1] + ref + u[i]`` (mod ``2**T``) with ``v[-1] = first - ref``,
i.e. unpack a block of 1024 entries (vectorized) then a running sum over it in L1.
The body length must be exactly ``24 + packed_size(rows, w, T)``.

Worked example -- timestamp (int64) ``[1000, 2000, 3001, 4000, 5002]``: deltas
``1000, 1001, 999, 1002``, ``ref = 999``, ``u = [0, 1, 2, 0, 3]``, ``w = 2``. ``T = 64``,
``L = 16`` lanes: the 5 entries are row 0 of lanes 0..4, and the only block keeps
``ceil(1 * 2 / 64) * 16 = 16`` words (128 bytes)::

    02 00 00 00 00 00 00 00   w = 2, reserved
    e8 03 00 00 00 00 00 00   first = 1000
    e7 03 00 00 00 00 00 00   ref = 999
    00 00 00 00 00 00 00 00   lane 0: u[0] = 0
    01 00 00 00 00 00 00 00   lane 1: u[1] = 1
    02 00 00 00 00 00 00 00   lane 2: u[2] = 2
    00 00 00 00 00 00 00 00   lane 3: u[3] = 0
    03 00 00 00 00 00 00 00   lane 4: u[4] = 3
    + 88 x 00                 lanes 5..15 (padding)

152 bytes in all (PLAIN: 40). A page of 10,000 timestamps whose steps stay within
999..1002 takes 24 + 9 * 256 + 256 = 2,584 bytes (PLAIN: 80,000): 9 full blocks of
2-bit entries and a last block of 784 entries = 49 rows, 2 words per lane.
"""
from __future__ import annotations

import struct

import numpy as np

from .._native import bitpack as _bp
from ..errors import CorruptFileError
from ..schema.types import LogicalType
from .base import ColumnValues, Encoding
from .bitpack import (
    INT_TYPES, IntType, as_buffer, check_body_size, int_type, packed_size,
    storage_array,
)

__all__ = ["Delta", "ENCODINGS", "HEADER_SIZE"]

HEADER_SIZE = 24
_HEADER = struct.Struct("<B3xIqq")  # w, reserved, first (signed), ref (signed)
_HEADER_U = struct.Struct("<B3xIQq")  # w, reserved, first (unsigned), ref (signed)


class Delta(Encoding):
    """First value + frame-of-reference deltas, bit-packed (see module docs)."""

    id = 4
    name = "delta"


    # ------------------------------------------------------------------ encode
    def encode(self, values: ColumnValues, ltype: LogicalType) -> bytes:
        info = int_type(ltype, "DELTA")
        arr = storage_array(values, info)
        lo, hi = _bp.delta_range(arr)  # signed min/max of the modular deltas; (0, 0) if n < 2
        width = (hi - lo).bit_length()
        first = int(arr[0]) if len(arr) else 0
        size = packed_size(len(arr), width, info.itemsize)
        buf = np.empty((HEADER_SIZE + size) // 8, dtype=np.uint64)  # 8-byte aligned
        raw = buf.view(np.uint8)
        (_HEADER if info.signed else _HEADER_U).pack_into(raw, 0, width, 0, first, lo)
        _bp.delta_pack_into(arr, lo, width, raw[HEADER_SIZE:])
        return raw.tobytes()

    # ------------------------------------------------------------------ decode
    def decode(self, body, rows: int, ltype: LogicalType, dictionary: ColumnValues | None = None) -> ColumnValues:
        info = int_type(ltype, "DELTA")
        body = as_buffer(body)
        width, first, ref = self._header(body, rows, info)
        return ColumnValues(_bp.delta_unpack(body, rows, width, first, ref, info.dtype, HEADER_SIZE))

    @staticmethod
    def _header(body, rows: int, info: IntType) -> tuple[int, int, int]:
        if len(body) < HEADER_SIZE:
            raise CorruptFileError(
                f"DELTA page body is {len(body)} bytes, shorter than its {HEADER_SIZE}-byte header")
        width, reserved, first, ref = (_HEADER if info.signed else _HEADER_U).unpack_from(body, 0)
        if reserved or body[1] or body[2] or body[3]:
            raise CorruptFileError("DELTA page header: reserved bytes are not zero")
        if width > info.bits:
            raise CorruptFileError(f"DELTA page header: bit width {width} exceeds {info.bits} for {info.dtype}")
        if not info.min <= first <= info.max:
            raise CorruptFileError(f"DELTA page header: first value {first} is out of range for {info.dtype}")
        half = 1 << (info.bits - 1)
        if not -half <= ref < half:
            raise CorruptFileError(f"DELTA page header: minimum delta {ref} is out of range for {info.dtype}")
        check_body_size(body, rows, width, info.itemsize, HEADER_SIZE, "DELTA")
        return width, first, ref

    # ------------------------------------------------------------------ estimate
    def estimate_size(self, chunk: ColumnValues, ltype: LogicalType, analysis) -> int | None:
        """Exact size of the chunk as one page: one native pass over the values for
        the delta range (no temporary array)."""
        info = INT_TYPES.get(ltype.name)
        if info is None:
            return None
        arr = storage_array(chunk, info)
        lo, hi = _bp.delta_range(arr)
        return HEADER_SIZE + packed_size(len(arr), (hi - lo).bit_length(), info.itemsize)


ENCODINGS = [Delta]
