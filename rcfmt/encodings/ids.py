"""The encodings' wire ids: each one's name and the logical types it holds
(docs/FORMAT.md §7).

One table, consulted by every :meth:`~rcfmt.encodings.base.Encoding.supports` and by
what reads a file's chunk records without encoding anything (the footer check of every
open, the executor's column specs, ``rcfmt inspect``), so that opening, planning a scan
and describing a file load none of the encodings' modules and kernels. The registry
checks that every encoding class agrees with it.
"""
from __future__ import annotations

from ..schema.types import PhysicalKind

__all__ = ["FLOAT_TYPES", "INTEGER_TYPES", "NAMES", "holds"]

#: integer-like FIXED logical types (BITPACK, DELTA and BYTE_SPLIT store their integers)
INTEGER_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                           "date32", "timestamp"})
#: floating-point logical types (ALP, ALP_SPLIT; BYTE_SPLIT splits their bits)
FLOAT_TYPES = frozenset({"float32", "float64"})

#: wire id -> name (never reused)
NAMES = {0: "plain", 1: "dictionary", 2: "rle", 3: "bitpack", 4: "delta", 5: "alp", 6: "delta_length",
         7: "byte_split", 8: "alp_split"}

_FIXED, _BOOL, _VARBINARY = PhysicalKind.FIXED, PhysicalKind.BOOL, PhysicalKind.VARBINARY
_ALL = None  # (every type of the kinds named)

#: wire id -> (the physical kinds it holds, and of them only these type names or _ALL)
_HOLDS: dict[int, tuple[frozenset, frozenset | None]] = {
    0: (frozenset(PhysicalKind), _ALL),                           # PLAIN
    1: (frozenset({_FIXED, _VARBINARY}), _ALL),                   # DICTIONARY
    2: (frozenset({_FIXED, _BOOL}), _ALL),                        # RLE
    3: (frozenset({_FIXED}), INTEGER_TYPES | {"decimal128"}),     # BITPACK (a decimal's low word)
    4: (frozenset({_FIXED}), INTEGER_TYPES),                      # DELTA
    5: (frozenset({_FIXED}), FLOAT_TYPES),                        # ALP
    6: (frozenset({_VARBINARY}), _ALL),                           # DELTA_LENGTH
    7: (frozenset({_FIXED}), INTEGER_TYPES | FLOAT_TYPES),        # BYTE_SPLIT
    8: (frozenset({_FIXED}), FLOAT_TYPES),                        # ALP_SPLIT
}


def holds(encoding_id: int, ltype) -> bool | None:
    """Whether encoding ``encoding_id`` can store values of ``ltype`` (a
    :class:`~rcfmt.schema.types.LogicalType`); None for an id this rcfmt does not know."""
    rule = _HOLDS.get(encoding_id)
    if rule is None:
        return None
    kinds, names = rule
    return ltype.kind in kinds and (names is _ALL or ltype.name in names)
