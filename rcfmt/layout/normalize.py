"""Order-preserving normalization of Arrow columns, the input of every clustering key.

Each value becomes a ``uint64`` *normalized key* whose unsigned order is the value
order; values narrower than 64 bits are left-aligned, so the high bits of the key are
the high bits of the value ("direct" mapping takes exactly those):

=========================  ==================================================  =====
type                       normalized key                                      exact
=========================  ==================================================  =====
bool                       false -> 0, true -> 2**63                           yes
int8..int64, date32/64,    two's complement with the sign bit flipped, at the  yes
timestamp, time, duration  type's own width, left-aligned
uint8..uint64              the value at the type's own width, left-aligned     yes
float16/32/64              the float bit trick (positive: set the sign bit;    yes
                           negative: invert all bits); -0.0 -> +0.0; every
                           NaN -> 2**64-1 (after +inf); float16 as float32
decimal128(p, s)           the unscaled integer as int32 (p <= 9), int64       p<=18
                           (p <= 18) or the high 64 of 128 bits (exact as two
                           words ``key``, ``lo``)
string, binary             the first 8 bytes, big-endian, zero-padded          no
=========================  ==================================================  =====

NULL is not encoded in the key: :class:`Normalized` carries the validity separately,
and every mapping places NULL before all values (coordinate 0). Worked example, an
``int16`` column ``[-2, 0, None, 7]``::

    -2 -> 0xFFFE ^ 0x8000 = 0x7FFE -> key 0x7FFE000000000000
     0 -> 0x0000 ^ 0x8000 = 0x8000 -> key 0x8000000000000000
     7 -> 0x0007 ^ 0x8000 = 0x8007 -> key 0x8007000000000000
    valid = [1, 1, 0, 1]
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..runtime.records import record
from .._native import layout as _k
from ..errors import SchemaError

__all__ = ["ColumnType", "Normalized", "column_type", "prepare", "normalize"]

_SIGNED = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64}
_UNSIGNED = {pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64}


@record(frozen=True)
class ColumnType:
    """How the values of one Arrow type are normalized.

    ``value_type`` is the type values are kept in (dictionaries decoded, view and
    fixed-size types cast); ``kind`` one of ``bool``, ``signed``, ``unsigned``,
    ``float``, ``decimal``, ``bytes``, ``null``; ``width`` the bits of the stored value
    (decimal: 32, 64 or 128 by precision); ``dtype`` the numpy storage dtype of
    fixed-width values.
    """

    value_type: pa.DataType
    kind: str
    width: int
    dtype: np.dtype | None = None

    @property
    def exact(self) -> bool:
        """Whether the 64-bit normalized key alone orders values exactly."""
        return self.kind not in ("bytes",) and not (self.kind == "decimal" and self.width == 128)

    @property
    def search(self) -> str:
        """How bucket ids are searched: ``u64``, ``u128`` or ``bytes``."""
        if self.kind == "bytes":
            return "bytes"
        if self.kind == "decimal" and self.width == 128:
            return "u128"
        return "u64"


def column_type(t: pa.DataType) -> ColumnType:
    """The normalization of Arrow type ``t``; SchemaError if it has no total order here."""
    if pa.types.is_dictionary(t):
        return column_type(t.value_type)
    if pa.types.is_null(t):
        return ColumnType(t, "null", 0)
    if pa.types.is_boolean(t):
        return ColumnType(t, "bool", 1, np.dtype(np.uint8))
    if t in _SIGNED:
        return ColumnType(t, "signed", t.bit_width, np.dtype(_SIGNED[t]))
    if t in _UNSIGNED:
        return ColumnType(t, "unsigned", t.bit_width, np.dtype(_UNSIGNED[t]))
    if pa.types.is_float16(t):
        return ColumnType(pa.float32(), "float", 32, np.dtype(np.float32))
    if pa.types.is_float32(t):
        return ColumnType(t, "float", 32, np.dtype(np.float32))
    if pa.types.is_float64(t):
        return ColumnType(t, "float", 64, np.dtype(np.float64))
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return ColumnType(t, "signed", 32, np.dtype(np.int32))
    if pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return ColumnType(t, "signed", 64, np.dtype(np.int64))
    if pa.types.is_decimal256(t):  # (order-preserving 32-byte keys, compared bytewise: see prepare)
        return ColumnType(pa.large_binary(), "bytes", 64)
    if pa.types.is_decimal(t) and t.bit_width <= 128:
        value_type = t if pa.types.is_decimal128(t) else pa.decimal128(t.precision, t.scale)
        width = 32 if t.precision <= 9 else 64 if t.precision <= 18 else 128
        return ColumnType(value_type, "decimal", width, np.dtype("V16"))
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return ColumnType(t, "bytes", 64)
    if pa.types.is_string_view(t):
        return ColumnType(pa.large_string(), "bytes", 64)
    if pa.types.is_binary_view(t) or pa.types.is_fixed_size_binary(t):
        return ColumnType(pa.large_binary(), "bytes", 64)
    raise SchemaError(f"cannot cluster by a column of type {t}: it has no total order in rcfmt.layout")


def prepare(column, ctype: ColumnType):
    """``column`` (Array or ChunkedArray) with values of ``ctype.value_type``."""
    if pa.types.is_dictionary(column.type):
        if isinstance(column, pa.ChunkedArray):
            column = pa.chunked_array([c.dictionary_decode() for c in column.chunks], column.type.value_type)
        else:
            column = column.dictionary_decode()
    if pa.types.is_decimal256(column.type):
        if isinstance(column, pa.ChunkedArray):
            return pa.chunked_array([_ordered_bytes(c) for c in column.chunks], ctype.value_type)
        return _ordered_bytes(column)
    if column.type != ctype.value_type:
        column = column.cast(ctype.value_type)
    return column


def _ordered_bytes(arr: pa.Array) -> pa.Array:
    """The values of decimal256 ``arr`` as 32-byte strings that sort bytewise as the
    numbers do (two's complement big-endian, sign bit flipped), large_binary."""
    n = len(arr)
    data = np.frombuffer(arr.buffers()[1], np.uint8, count=(arr.offset + n) * 32)[arr.offset * 32:] if n \
        else np.zeros(0, np.uint8)
    keys = np.ascontiguousarray(data.reshape(n, 32)[:, ::-1])
    keys[:, 0] ^= 0x80
    validity = arr.is_valid().buffers()[1] if arr.null_count else None
    offsets = np.arange(0, 32 * (n + 1), 32, dtype=np.int64)
    return pa.Array.from_buffers(pa.large_binary(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(keys)],
                                 arr.null_count)


@record
class Normalized:
    """Normalized keys of the rows of one Array (see the module docstring).

    ``key``: uint64 normalized key per row (arbitrary under NULL). ``lo``: low words of
    128-bit decimals. ``offsets``/``data``: the byte strings of ``bytes`` columns, for the
    exact bucket search. ``valid``: uint8 (1 = value) or None when there is no NULL.
    """

    key: np.ndarray
    valid: np.ndarray | None = None
    lo: np.ndarray | None = None
    offsets: np.ndarray | None = None
    data: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.key)


def _validity(arr: pa.Array) -> np.ndarray | None:
    n = len(arr)
    if arr.null_count == 0:
        return None
    if pa.types.is_null(arr.type):
        return np.zeros(n, np.uint8)
    buf = arr.buffers()[0]
    if buf is None:
        return None
    bits = np.unpackbits(np.frombuffer(buf, np.uint8), count=arr.offset + n, bitorder="little")
    return np.ascontiguousarray(bits[arr.offset:])


def _fixed(arr: pa.Array, dtype: np.dtype) -> np.ndarray:
    n, off = len(arr), arr.offset
    if n == 0:
        return np.empty(0, dtype)
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=off + n)[off:]


def normalize(arr: pa.Array, ctype: ColumnType) -> Normalized:
    """Normalized keys of one prepared Array (values of ``ctype.value_type``)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    key = np.empty(n, np.uint64)
    valid = _validity(arr)
    kind = ctype.kind
    if kind == "null" or n == 0:
        key[:] = 0
        return Normalized(key, np.zeros(n, np.uint8) if kind == "null" else valid,
                          lo=np.zeros(n, np.uint64) if ctype.search == "u128" else None,
                          offsets=np.zeros(n + 1, np.int64) if kind == "bytes" else None,
                          data=np.empty(0, np.uint8) if kind == "bytes" else None)
    if kind == "bool":
        bits = np.unpackbits(np.frombuffer(arr.buffers()[1], np.uint8), count=arr.offset + n, bitorder="little")
        _k.normalize_bool_into(np.ascontiguousarray(bits[arr.offset:]), key)
        return Normalized(key, valid)
    if kind == "signed":
        _k.normalize_signed_into(_fixed(arr, ctype.dtype), key)
        return Normalized(key, valid)
    if kind == "unsigned":
        _k.normalize_unsigned_into(_fixed(arr, ctype.dtype), key)
        return Normalized(key, valid)
    if kind == "float":
        _k.normalize_float_into(_fixed(arr, ctype.dtype), key)
        return Normalized(key, valid)
    if kind == "decimal":
        raw = _fixed(arr, ctype.dtype).view(np.uint8).reshape(n, 16)
        lo = np.empty(n, np.uint64)
        _k.normalize_decimal128_into(raw, ctype.width, key, lo)
        return Normalized(key, valid, lo=lo if ctype.width == 128 else None)
    # bytes
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], np.int64 if large else np.int32, count=arr.offset + n + 1)[arr.offset:]
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    _k.normalize_varbinary_into(offsets, data, key)
    return Normalized(key, valid, offsets=offsets, data=data)
