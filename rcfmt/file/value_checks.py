"""Write-time checks of values: what rcfmt writes, rcfmt reads back.

A reader refuses values that would make an invalid Arrow array (rcfmt/_native/validate.pyx,
used by :mod:`rcfmt.file.chunks` on every page it decodes): ill-formed UTF-8 in a string
column, a decimal beyond its declared precision. It also refuses list lengths that are
negative, which backwards list offsets would store. A writer given such values (an
array built from buffers, a producer with a bug) would write a file that cannot be
read back; :func:`check_table` finds them first, with the same kernels the reader
uses, on the columns exactly as the writer stores them (nested fields shredded), and
raises :class:`InvalidDataError` naming the stored column and the first bad row.

Only what can be invalid is looked at: the bytes of string columns (one pass, 64 ASCII
bytes per step), the offsets of string and binary columns (one vectorized comparison),
decimal values (one pass) and, for nested fields, the list offsets shredding checks
anyway. Tables without those types cost nothing.

Arrow allows any bytes under a NULL string (its full validation skips them); a writer
stores them, and a reader would refuse them. Such columns are not refused: they are
reported back, and the writer stores them with those slots emptied (:func:`empty_nulls`).
"""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa

from ..schema import nested
from .._native import validate as _validate
from ..errors import InvalidDataError
from ..schema.types import PhysicalKind
from ..schema import annotated
from ..schema.arrow_io import fill_null_slots, from_arrow, one_array, to_numpy, validity

__all__ = ["check_table", "empty_nulls"]


def _needs_check(ltype) -> bool:
    return ltype.kind == PhysicalKind.VARBINARY or ltype.name == "decimal128" or annotated.has_invalid_values(ltype)


def _checked_columns(node: nested.Node, columns) -> list[int]:
    """Stored columns of ``node`` whose values can be invalid."""
    return [c for c in node.columns() if _needs_check(columns[c].type)]


def _has_lists(node: nested.Node) -> bool:
    """Whether shredding ``node`` follows offsets (lists, maps, dense unions), type codes
    (unions), run ends or an extension's dictionaries that it must check."""
    return node.kind in (nested.LIST, nested.LARGE_LIST, nested.MAP, nested.UNION) or node.ree is not None \
        or node.ext_storage is not None or node.ree_ext_storage is not None or any(_has_lists(c) for c in node.children)


def empty_nulls(arr):
    """``arr`` (strings or binaries) with nothing stored under its NULLs (Arrow's take
    builds them empty)."""
    arr = one_array(arr)
    return arr.take(pa.array(np.arange(len(arr), dtype=np.int64)))


def _first_invalid(arr: pa.Array, ltype) -> tuple[int, str] | None:
    """``(slot, why)`` of the first value of ``arr`` (one stored column: strings,
    binaries or decimals) that a reader would refuse, if it stored what ``arr`` holds,
    NULL slots included; None when there is none."""
    n = len(arr)
    if n == 0:
        return None
    if annotated.has_invalid_values(ltype):  # decimal32/64/256, date64 (valid slots: NULL ones are stored as they are)
        return annotated.first_beyond_precision(arr, ltype)
    values, _ = from_arrow(arr, ltype)
    if ltype.kind == PhysicalKind.VARBINARY:
        offsets = values.offsets
        if int(offsets[0]) < 0 or int(offsets[-1]) > len(values.values):
            return 0, "offsets outside the data"
        backwards = _validate.backwards_offset_row(np.ascontiguousarray(offsets))
        if backwards >= 0:
            return backwards, f"{ltype.name} offsets go backwards"
        if ltype.name != "string":
            return None
        slot = _validate.utf8_invalid_row(values.values, offsets)
        return None if slot < 0 else (slot, "ill-formed UTF-8 in a string value")
    data = np.ascontiguousarray(values.values)
    slot = _validate.decimal_invalid_row(data, ltype.precision)
    return None if slot < 0 else (slot, _beyond(data[slot], ltype))


def _beyond(value: np.void, ltype) -> str:
    unscaled = int.from_bytes(value.tobytes(), "little", signed=True)
    shown = decimal.Decimal(unscaled).scaleb(-ltype.scale, decimal.Context(prec=100))
    return f"decimal value {shown} beyond the declared precision of decimal128({ltype.precision}, {ltype.scale})"


def _check_stored(arr: pa.Array, ltype) -> tuple[int, str] | None | bool:
    """The first value of one stored column a reader would refuse among those the
    writer stores: ``(slot, why)``; True when the only bad bytes lie under NULL strings
    (valid Arrow: the writer must store those slots empty); None when all is well."""
    found = _first_invalid(arr, ltype)
    if found is None:
        return None
    slot, why = found
    if not arr.null_count or why.endswith("go backwards") or why.startswith("offsets"):
        return found
    valid = validity(arr)
    if valid[slot]:
        return found
    if ltype.kind == PhysicalKind.VARBINARY:  # bytes under a NULL: look at the valid values alone
        return _first_invalid(empty_nulls(arr), ltype) or True
    # decimals: the writer stores a NULL slot as the value before it
    values, valid = from_arrow(arr, ltype)
    filled = np.ascontiguousarray(fill_null_slots(values, valid).values)
    slot = _validate.decimal_invalid_row(filled, ltype.precision)
    return None if slot < 0 else (slot, _beyond(filled[slot], ltype))


def _row_of(path: list[nested.Node], out: dict, slot: int) -> int:
    """The top-level slot (row) holding slot ``slot`` of the column below the nodes
    ``path`` (the top-level node first)."""
    for parent in reversed(path):
        if parent.kind == nested.FIXED_SIZE_LIST:
            slot //= parent.size
        elif parent.kind in (nested.LIST, nested.LARGE_LIST, nested.MAP):
            lengths = out[parent.column]
            counts = to_numpy(lengths).astype(np.int64)
            if lengths.null_count:
                counts[~validity(lengths)] = 0
            slot = int(np.searchsorted(np.cumsum(counts), slot, side="right"))
    return slot


def _ancestors(node: nested.Node, column: int) -> list[nested.Node] | None:
    """The nodes from ``node`` down to (not including) the one storing ``column``."""
    if node.column == column:
        return []
    for child in node.children:
        below = _ancestors(child, column)
        if below is not None:
            return [node, *below]
    return None


def check_table(table: pa.Table, nodes, columns) -> set[int]:
    """Raise :class:`InvalidDataError` at the first value of ``table`` (conformed to a
    writer's storage schema) that a reader would refuse; ``nodes``: the writer's tree
    (None when no field is nested); ``columns``: its stored columns (``.name``,
    ``.type``). Returns the stored columns that hold bad bytes under NULL strings only
    (to be stored emptied)."""
    scrub: set[int] = set()
    for j, column in enumerate(table.columns):
        node = nodes[j] if nodes is not None else None
        if node is None or node.kind == nested.LEAF:
            c = j if node is None else node.column
            if not _needs_check(columns[c].type):
                continue
            base = 0
            for chunk in column.chunks:
                try:
                    found = _check_stored(chunk, columns[c].type)
                except InvalidDataError as exc:  # (an extension's dictionary that does not decode)
                    raise InvalidDataError(exc.reason, column=columns[c].name) from None
                if found is True:
                    scrub.add(c)
                elif found is not None:
                    raise InvalidDataError(found[1], column=columns[c].name, row=base + found[0])
                base += len(chunk)
            continue
        wanted = _checked_columns(node, columns)
        if not wanted and not _has_lists(node):
            continue  # (structs and fixed-size lists of fixed-width values)
        base = 0
        for chunk in column.chunks:
            out: dict = {}
            try:
                nested.shred(chunk, node, out)
            except nested.SlotError as exc:
                row = _row_of(_ancestors(node, exc.column), out, exc.slot)
                raise InvalidDataError(exc.reason, column=columns[exc.column].name, row=base + row) from None
            for c in wanted:
                found = _check_stored(out[c], columns[c].type)
                if found is True:
                    scrub.add(c)
                elif found is not None:
                    row = _row_of(_ancestors(node, c), out, found[0])
                    raise InvalidDataError(found[1], column=columns[c].name, row=base + row)
            base += len(chunk)
    return scrub
