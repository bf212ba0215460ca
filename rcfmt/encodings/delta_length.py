"""DELTA_LENGTH (wire id 6): strings and binary as DELTA-packed offsets + data bytes.

Like PLAIN for VARBINARY, but the ``rows + 1`` int32 offsets are not stored as 4-byte
integers: they are a nested DELTA body (:mod:`rcfmt.encodings.delta`, storage type
int32), i.e. the value lengths minus the page's shortest length, bit-packed. A column of
10..43-byte comments needs 6 bits per offset instead of 32. Cascade depth: one (the
offsets are DELTA, whose deltas are bit-packed; nothing nests further). Decoding is the
DELTA kernel (unpack + running sum, which yields the offsets Arrow needs directly), one
validation pass over the offsets, and a zero-copy view of the data bytes.

Page body (all little-endian)
-----------------------------

======  ======  ================================================================
offset  size    field
======  ======  ================================================================
0       4       ``m``: byte length of the nested DELTA body
4       4       reserved, zero
8       m       DELTA body (int32) of ``offsets[0 .. rows]``: ``offsets[0] = 0``,
                non-decreasing, ``offsets[rows]`` = data length
8 + m   ...     data bytes; value ``i`` is ``data[offsets[i] : offsets[i+1]]``
======  ======  ================================================================

The data runs to the end of the body, so ``offsets[rows]`` must equal
``len(body) - 8 - m``.

Worked example -- strings ``["ab", "", "cde"]``: offsets ``[0, 2, 2, 5]``, deltas ``2, 0,
3``, minimum delta ``ref = 0``, DELTA entries ``u = [0, 2, 0, 3]``, ``w = 2``. With ``T = 32``
(32 lanes) the 4 entries are row 0 of lanes 0..3; the block keeps
``ceil(1 * 2 / 32) * 32 = 32`` words (128 bytes), so ``m = 24 + 128 = 152``::

    98 00 00 00 00 00 00 00   m = 152, reserved
    02 00 00 00 00 00 00 00   DELTA: w = 2, reserved
    00 00 00 00 00 00 00 00   DELTA: first = offsets[0] = 0
    00 00 00 00 00 00 00 00   DELTA: ref = 0
    00 00 00 00 02 00 00 00   lanes 0, 1: u = 0, 2
    00 00 00 00 03 00 00 00   lanes 2, 3: u = 0, 3
    + 112 x 00                lanes 4..31 (padding)
    61 62 63 64 65            data "abcde"

165 bytes (PLAIN: 21). For 5,000 comments of 10..43 bytes the offsets take
``24 + 4 * 768 + 6 * 128 = 3,864`` bytes instead of 20,004.
"""
from __future__ import annotations

import struct

import numpy as np

from .._native import bitpack as _bp
from .._native import varbinary as _vb
from ..errors import CorruptFileError
from ..schema.types import LogicalType, PhysicalKind
from .base import ColumnValues, Encoding
from .bitpack import MAX_ROWS, as_buffer, packed_size
from .delta import HEADER_SIZE as DELTA_HEADER_SIZE
from .delta import Delta

__all__ = ["DeltaLength", "ENCODINGS", "HEADER_SIZE"]

HEADER_SIZE = 8
_HEADER = struct.Struct("<II")
_INT32 = LogicalType("int32")
_DELTA = Delta()
_I32_MAX = (1 << 31) - 1


def _relative_offsets(values: ColumnValues) -> tuple[np.ndarray, int, int]:
    offsets = values.offsets
    base = int(offsets[0]) if len(offsets) else 0
    end = int(offsets[-1]) if len(offsets) else 0
    if end - base > _I32_MAX:
        raise ValueError("a page of variable-length values must hold less than 2 GiB")
    if base == 0 and offsets.dtype == np.int32:
        return np.ascontiguousarray(offsets), base, end
    return (offsets - base).astype(np.int32), base, end


class DeltaLength(Encoding):
    """PLAIN-like strings whose offsets are DELTA-encoded (see module docs)."""

    id = 6
    name = "delta_length"
    decode_cost = 1.0

    def encode(self, values: ColumnValues, ltype: LogicalType) -> bytes:
        if ltype.kind != PhysicalKind.VARBINARY:
            raise TypeError(f"DELTA_LENGTH does not support {ltype}")
        rel, base, end = _relative_offsets(values)
        nested = _DELTA.encode(ColumnValues(rel), _INT32)
        return _HEADER.pack(len(nested), 0) + nested + values.values[base:end].tobytes()

    def decode(self, body, rows: int, ltype: LogicalType, dictionary: ColumnValues | None = None) -> ColumnValues:
        if ltype.kind != PhysicalKind.VARBINARY:
            raise TypeError(f"DELTA_LENGTH does not support {ltype}")
        if not 0 <= rows < MAX_ROWS:
            raise CorruptFileError(f"DELTA_LENGTH page: row count {rows} out of range")
        body = as_buffer(body)
        size = len(body)
        if size < HEADER_SIZE:
            raise CorruptFileError(f"DELTA_LENGTH page body is {size} bytes, shorter than its header")
        m, reserved = _HEADER.unpack_from(body, 0)
        if reserved:
            raise CorruptFileError("DELTA_LENGTH page header: reserved bytes are not zero")
        if m < DELTA_HEADER_SIZE or m > size - HEADER_SIZE:
            raise CorruptFileError(f"DELTA_LENGTH page: offsets of {m} bytes do not fit a {size}-byte body")
        # the nested DELTA decoder checks m against rows + 1 and its width exactly
        offsets = _DELTA.decode(memoryview(body)[HEADER_SIZE:HEADER_SIZE + m], rows + 1, _INT32).values
        data_len = size - HEADER_SIZE - m
        status = _vb.check_offsets(offsets, data_len)
        if status < 0:
            raise CorruptFileError(f"DELTA_LENGTH page has invalid offsets (entry {-status - 1}) "
                                   f"for {data_len} data bytes")
        return ColumnValues(np.frombuffer(body, dtype=np.uint8, offset=HEADER_SIZE + m), offsets)

    def estimate_size(self, chunk: ColumnValues, ltype: LogicalType, analysis) -> int | None:
        """Size of the chunk as one page (one pass over the offsets for the length range)."""
        if ltype.kind != PhysicalKind.VARBINARY:
            return None
        offsets = np.ascontiguousarray(chunk.offsets)
        n = len(offsets) - 1
        if n < 0:
            return None
        lo, hi = _bp.delta_range(offsets)
        width = min((hi - lo).bit_length(), 32)
        return HEADER_SIZE + DELTA_HEADER_SIZE + packed_size(n + 1, width, 4) + chunk.nbytes


ENCODINGS = [DeltaLength]
