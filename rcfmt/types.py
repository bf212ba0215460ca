"""Logical types (what a column means) and physical kinds (how its values are stored).

Arrow is the in-memory model. Every logical type maps to exactly one Arrow type and to a
physical kind:

=====================  ==========================  ================================
logical type           Arrow type                  physical kind / numpy dtype
=====================  ==========================  ================================
bool                   bool                        BOOL / ``bool``
int8..int64            int8..int64                 FIXED / ``<i1`` .. ``<i8``
uint8..uint64          uint8..uint64               FIXED / ``<u1`` .. ``<u8``
float32, float64       float32, float64            FIXED / ``<f4``, ``<f8``
date32                 date32                      FIXED / ``<i4`` (days since epoch)
timestamp(unit, tz)    timestamp(unit, tz)         FIXED / ``<i8`` (units since epoch)
decimal128(p, s)       decimal128(p, s)            FIXED / ``V16`` (two's complement LE)
string                 string / large_string       VARBINARY (UTF-8 bytes)
binary                 binary / large_binary       VARBINARY
=====================  ==========================  ================================

The *stats domain* of a type is how its min/max values are represented in Python:
ints, floats, bools as numpy scalars of the storage dtype; date32 as days (int);
timestamps as integers in the column's unit; decimals as the unscaled ``int``;
strings and binary as ``bytes`` (UTF-8 for strings), ordered bytewise unsigned.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from .errors import SchemaError, UnsupportedError

__all__ = ["PhysicalKind", "LogicalType", "logical_type_from_arrow", "logical_type_from_json"]


class PhysicalKind(enum.IntEnum):
    """How values are laid out before encoding."""

    BOOL = 0  # one bit per value on the wire, numpy bool in memory
    FIXED = 1  # fixed-width little-endian values (1, 2, 4, 8 or 16 bytes)
    VARBINARY = 2  # variable-length byte strings: offsets + data


_INT_NAMES = {
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
}
_FLOAT_NAMES = {"float32": pa.float32(), "float64": pa.float64()}
_TIME_UNITS = ("s", "ms", "us", "ns")


@dataclass(frozen=True)
class LogicalType:
    """A column's logical type; serializable to and from the footer's JSON.

    ``name`` is one of: bool, int8..int64, uint8..uint64, float32, float64, date32,
    timestamp, decimal128, string, binary. ``large`` records that the Arrow type used
    64-bit offsets (large_string / large_binary) so the round trip is exact.
    """

    name: str
    unit: str | None = None  # timestamp
    tz: str | None = None  # timestamp
    precision: int | None = None  # decimal128
    scale: int | None = None  # decimal128
    large: bool = False  # string/binary with 64-bit offsets in Arrow

    # ---------------------------------------------------------------- properties
    # (cached: asked per column chunk and per page by readers and writers; a frozen
    # dataclass still has an instance __dict__, which cached_property writes directly)
    @cached_property
    def kind(self) -> PhysicalKind:
        if self.name == "bool":
            return PhysicalKind.BOOL
        if self.name in ("string", "binary"):
            return PhysicalKind.VARBINARY
        return PhysicalKind.FIXED

    @cached_property
    def numpy_dtype(self) -> np.dtype:
        """Storage dtype of one value (bool for BOOL; uint8 bytes for VARBINARY)."""
        return _NUMPY_DTYPES[self.name]

    @cached_property
    def width(self) -> int:
        """Bytes per value for FIXED kinds, 1 for BOOL, 0 for VARBINARY."""
        return 0 if self.kind == PhysicalKind.VARBINARY else self.numpy_dtype.itemsize

    @property
    def is_float(self) -> bool:
        return self.name in _FLOAT_NAMES

    @property
    def is_integer(self) -> bool:
        return self.name in _INT_NAMES

    @property
    def is_signed(self) -> bool:
        return self.name.startswith("int") or self.name in ("date32", "timestamp")

    @property
    def is_string(self) -> bool:
        return self.name == "string"

    # ---------------------------------------------------------------- conversions
    def to_arrow(self) -> pa.DataType:
        """The Arrow type (built once per instance: readers ask per column chunk)."""
        return self._arrow

    @cached_property
    def _arrow(self) -> pa.DataType:
        if self.name == "bool":
            return pa.bool_()
        if self.name in _INT_NAMES:
            return _INT_NAMES[self.name]
        if self.name in _FLOAT_NAMES:
            return _FLOAT_NAMES[self.name]
        if self.name == "date32":
            return pa.date32()
        if self.name == "timestamp":
            return pa.timestamp(self.unit, tz=self.tz)
        if self.name == "decimal128":
            return pa.decimal128(self.precision, self.scale)
        if self.name == "string":
            return pa.large_string() if self.large else pa.string()
        if self.name == "binary":
            return pa.large_binary() if self.large else pa.binary()
        raise UnsupportedError(f"unknown logical type {self.name!r}")

    def to_json(self) -> dict:
        out: dict = {"type": self.name}
        if self.name == "timestamp":
            out["unit"] = self.unit
            if self.tz is not None:
                out["tz"] = self.tz
        elif self.name == "decimal128":
            out["precision"] = self.precision
            out["scale"] = self.scale
        elif self.large:
            out["large"] = True
        return out

    def __str__(self) -> str:
        return str(self.to_arrow())


_NUMPY_DTYPES = {
    "bool": np.dtype(bool),
    **{name: np.dtype(t.to_pandas_dtype()).newbyteorder("<") for name, t in _INT_NAMES.items()},
    "float32": np.dtype("<f4"),
    "float64": np.dtype("<f8"),
    "date32": np.dtype("<i4"),
    "timestamp": np.dtype("<i8"),
    "decimal128": np.dtype("V16"),
    "string": np.dtype(np.uint8),
    "binary": np.dtype(np.uint8),
}


def logical_type_from_arrow(t: pa.DataType) -> LogicalType:
    """Map an Arrow type to its logical type, or raise :class:`SchemaError`."""
    if pa.types.is_dictionary(t):
        return logical_type_from_arrow(t.value_type)
    if pa.types.is_boolean(t):
        return LogicalType("bool")
    for name, at in (*_INT_NAMES.items(), *_FLOAT_NAMES.items()):
        if t == at:
            return LogicalType(name)
    if pa.types.is_date32(t):
        return LogicalType("date32")
    if pa.types.is_timestamp(t):
        return LogicalType("timestamp", unit=t.unit, tz=t.tz)
    if pa.types.is_decimal128(t):
        return LogicalType("decimal128", precision=t.precision, scale=t.scale)
    if pa.types.is_string(t):
        return LogicalType("string")
    if pa.types.is_large_string(t):
        return LogicalType("string", large=True)
    if pa.types.is_binary(t):
        return LogicalType("binary")
    if pa.types.is_large_binary(t):
        return LogicalType("binary", large=True)
    raise SchemaError(f"unsupported column type {t}")


def same_logical_type(a: LogicalType, b: LogicalType) -> bool:
    """Whether ``a`` and ``b`` hold the same values (the offset width of strings and
    binary, ``large``, aside)."""
    return (a.name, a.unit, a.tz, a.precision, a.scale) == (b.name, b.unit, b.tz, b.precision, b.scale)


def logical_type_from_json(obj: dict) -> LogicalType:
    """Parse the footer's JSON type description; unknown types raise UnsupportedError."""
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise ValueError(f"malformed type description {obj!r}")
    name = obj["type"]
    if name in _NUMPY_DTYPES and name not in ("timestamp", "decimal128"):
        large = bool(obj.get("large", False))
        if large and name not in ("string", "binary"):
            raise ValueError(f"'large' is only valid for string/binary, got {name}")
        return LogicalType(name, large=large)
    if name == "timestamp":
        unit, tz = obj.get("unit"), obj.get("tz")
        if unit not in _TIME_UNITS or not (tz is None or isinstance(tz, str)):
            raise ValueError(f"malformed timestamp type {obj!r}")
        return LogicalType("timestamp", unit=unit, tz=tz)
    if name == "decimal128":
        p, s = obj.get("precision"), obj.get("scale")
        # Arrow allows scales beyond the precision (decimal128(5, 7) is 0.00ddddd)
        if not (isinstance(p, int) and isinstance(s, int) and 1 <= p <= 38 and abs(s) < 2**31):
            raise ValueError(f"malformed decimal type {obj!r}")
        return LogicalType("decimal128", precision=p, scale=s)
    raise UnsupportedError(f"column type {name!r} is not supported by this version of rcfmt")
