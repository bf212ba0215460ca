"""Schema evolution of datasets: which changes an append may make, and how files
written under an older schema are read under a newer one (docs/DATASET.md).

An append may

- add columns: older files read them as NULL (the column becomes nullable);
- leave out nullable columns: its files read them as NULL;
- widen a column's type, without loss: a signed or unsigned integer to a wider one of
  the same signedness, an unsigned integer to a wider signed one, float32 to float64,
  decimal128 to a larger precision at the same scale, string to large_string and
  binary to large_binary; older files' values (and their statistics) are converted
  when read.

Anything else (a narrower type, another kind of type, another nesting) would lose or
change data and raises :class:`~rcfmt.errors.SchemaError`. Nested types evolve only
in nullability.
"""
from __future__ import annotations

import pyarrow as pa

from .. import nested
from ..errors import SchemaError
from ..types import logical_type_from_arrow, same_logical_type

__all__ = ["widens", "merge_schemas"]

_SIGNED = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]
_UNSIGNED = [pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


def _same_flat(a: pa.DataType, b: pa.DataType) -> bool:
    return same_logical_type(logical_type_from_arrow(a), logical_type_from_arrow(b))


def widens(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether every value of type ``a`` is a value of type ``b`` (``a`` may be read as
    ``b``): the same type, or a widening the module docstring lists."""
    if a == b:
        return True
    if nested.is_nested(a) or nested.is_nested(b):
        return nested.same_shape(a, b, _same_flat)
    if a in _SIGNED and b in _SIGNED:
        return _SIGNED.index(a) <= _SIGNED.index(b)
    if a in _UNSIGNED and b in _UNSIGNED:
        return _UNSIGNED.index(a) <= _UNSIGNED.index(b)
    if a in _UNSIGNED and b in _SIGNED:
        return _UNSIGNED.index(a) < _SIGNED.index(b)
    if a == pa.float32() and b == pa.float64():
        return True
    if pa.types.is_decimal128(a) and pa.types.is_decimal128(b):
        return a.scale == b.scale and a.precision <= b.precision
    texts = [(pa.string(), pa.large_string()), (pa.binary(), pa.large_binary())]
    if any(a in pair and b in pair for pair in texts):
        return True  # the same values: only Arrow's offset width differs
    return False


def _wider(name: str, a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if nested.is_nested(a) or _same_flat(a, b):  # the same values (string and large_string): as stored
        if widens(a, b):
            return a
    if widens(a, b):
        return b
    if widens(b, a):
        return a
    raise SchemaError(f"column {name!r}: {a} and {b} cannot hold each other's values; a dataset column may only "
                      f"widen (int32 -> int64, float32 -> float64, decimal precision up, string -> large_string)")


def merge_schemas(old: pa.Schema, new: pa.Schema) -> pa.Schema:
    """The data schema of a dataset at ``old`` after an append of data of schema
    ``new``: ``old``'s columns (widened where ``new`` widens them; ``new`` may lack
    nullable ones), then ``new``'s added columns, nullable. Raises SchemaError for a
    change that would lose data."""
    theirs = {f.name: f for f in new}
    out = []
    for f in old:
        g = theirs.get(f.name)
        if g is None:
            if not f.nullable:
                raise SchemaError(f"column {f.name!r} is not nullable, so an append must hold it")
            out.append(f)
            continue
        out.append(pa.field(f.name, _wider(f.name, f.type, g.type), f.nullable or g.nullable))
    known = set(old.names)
    out += [f.with_nullable(True) for f in new if f.name not in known]
    return pa.schema(out)


def keeps_columns(before: pa.Schema, after: pa.Schema) -> bool:
    """Whether ``after`` still holds every column of ``before``, each in its type or a
    wider one: what appends may do to a schema (an overwrite may do anything)."""
    names = set(after.names)
    return all(f.name in names and widens(f.type, after.field(f.name).type) for f in before)
