"""PLAIN (wire id 0): values as they are.

- FIXED: ``rows * width`` bytes, little-endian values back to back.
- BOOL: ``ceil(rows / 8)`` bytes, one bit per value, LSB first.
- VARBINARY: ``int32 offsets[rows + 1]`` (0, non-decreasing, last = data length)
  followed by the data bytes.

Worked example, int16 ``[1, -2]`` -> ``01 00 fe ff``; strings ``["ab", "", "c"]`` ->
``00000000 02000000 02000000 03000000 61 62 63``.
"""
from __future__ import annotations

import numpy as np

from .._native import varbinary as _vb
from ..errors import CorruptFileError
from ..schema.types import LogicalType, PhysicalKind
from .base import ColumnValues, Encoding

__all__ = ["Plain", "encode_plain", "decode_plain"]


def encode_plain(values: ColumnValues, ltype: LogicalType) -> bytes:
    kind = ltype.kind
    if kind == PhysicalKind.FIXED:
        return np.ascontiguousarray(values.values).tobytes()
    if kind == PhysicalKind.BOOL:
        return np.packbits(values.values, bitorder="little").tobytes()
    offsets = values.offsets
    base = int(offsets[0]) if len(offsets) else 0
    end = int(offsets[-1]) if len(offsets) else 0
    rel = (offsets - base).astype("<i4", copy=False)
    if end - base > np.iinfo(np.int32).max:
        raise ValueError("a page of variable-length values must hold less than 2 GiB")
    return rel.tobytes() + values.values[base:end].tobytes()


def decode_plain(body, rows: int, ltype: LogicalType) -> ColumnValues:
    kind = ltype.kind
    size = len(body)
    if kind == PhysicalKind.FIXED:
        width = ltype.width
        if size != rows * width:
            raise CorruptFileError(f"PLAIN page holds {size} bytes, {rows} values of width {width} need {rows * width}")
        return ColumnValues(np.frombuffer(body, dtype=ltype.numpy_dtype, count=rows))
    if kind == PhysicalKind.BOOL:
        if size != (rows + 7) // 8:
            raise CorruptFileError(f"PLAIN bool page holds {size} bytes for {rows} values")
        bits = np.frombuffer(body, dtype=np.uint8)
        return ColumnValues(np.unpackbits(bits, count=rows, bitorder="little").view(bool))
    head = 4 * (rows + 1)
    if size < head:
        raise CorruptFileError(f"PLAIN page of {size} bytes too short for {rows + 1} offsets")
    offsets = np.frombuffer(body, dtype="<i4", count=rows + 1)
    status = _vb.check_offsets(offsets, size - head)
    if status < 0:
        raise CorruptFileError(f"PLAIN page has invalid offsets (entry {-status - 1})")
    return ColumnValues(np.frombuffer(body, dtype=np.uint8, offset=head), offsets)


class Plain(Encoding):
    id = 0
    name = "plain"

    def encode(self, values, ltype):
        return encode_plain(values, ltype)

    def decode(self, body, rows, ltype, dictionary=None):
        return decode_plain(body, rows, ltype)

    def estimate_size(self, chunk, ltype, analysis):
        return analysis.plain_size


ENCODINGS = [Plain]
