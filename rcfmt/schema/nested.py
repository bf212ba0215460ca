"""Nested columns (struct, list, large_list, fixed_size_list, map) as flat physical
columns, and back (docs/FORMAT.md §3a).

A nested top-level field is *shredded* into ordinary columns, one per node of its type
tree, named by the node's dotted path:

- a leaf (any flat type) stores its values;
- a struct or fixed_size_list stores its *presence*: a bool column, null where the
  struct (list) is null;
- a list, large_list or map stores its *lengths*: an int32 (int64 for large_list)
  column, null where the list is null (the value under a null is ignored).

A node's values have one slot per slot of its parent: top-level rows at the top, and
below a list the list's elements (a fixed_size_list of size ``n``: ``n`` per parent
slot). Columns whose slots are rows are *row columns*; the others are *element
columns*. A row column under structs is null wherever one of those structs is null, so
it is a flat column of its own: filters, statistics, page indexes and bloom filters
work on it unchanged (``col("payload.user.id") == 42``). The tree is recorded in the
footer under the JSON key ``nested``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import pyarrow as pa

from ..encodings.base import ColumnValues
from ..errors import CorruptFileError, InvalidDataError, SchemaError
from .arrow_io import bool_array, filter_rows, take, to_arrow, to_numpy, validity
from .types import LogicalType, logical_type_from_arrow

__all__ = ["Node", "is_nested", "plan_columns", "shred", "assemble", "project"]

STRUCT, LIST, LARGE_LIST, FIXED_SIZE_LIST, MAP, LEAF = "struct", "list", "large_list", "fixed_size_list", "map", "leaf"
UNION = "union"
KINDS = (STRUCT, LIST, LARGE_LIST, FIXED_SIZE_LIST, MAP, UNION, LEAF)
#: deepest nesting a file may declare (a forged footer cannot make the reader recurse without end)
MAX_DEPTH = 64
#: largest fixed_size_list size a file may declare
MAX_LIST_SIZE = 1 << 20
_VIEWS = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}
# (arrays are built from buffers: pyarrow's conversions of numpy import pandas on first use)
_BOOL = LogicalType("bool")
_LENGTHS = {False: LogicalType("int32"), True: LogicalType("int64")}


def is_nested(t: pa.DataType) -> bool:
    return pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t) \
        or pa.types.is_fixed_size_list(t) or pa.types.is_map(t) or pa.types.is_union(t)


def _union(t: pa.DataType, fields) -> pa.DataType:
    """A union of ``t``'s mode and type codes over ``fields``."""
    return pa.union(list(fields), t.mode, list(t.type_codes))


@dataclass(frozen=True)
class Node:
    """One node of a nested field's type tree; ``column`` is its physical column."""

    name: str
    nullable: bool
    kind: str
    column: int
    children: tuple = ()  # struct: fields; lists: (item,); map: (key, value)
    leaf_type: pa.DataType | None = None  # leaves: the Arrow type of the values
    size: int = 0  # fixed_size_list
    keys_sorted: bool = False  # map
    mode: str = ""  # union: "sparse" or "dense"
    type_codes: tuple = ()  # union: the code of each child

    @property
    def arrow_type(self) -> pa.DataType:
        k = self.kind
        if k == LEAF:
            return self.leaf_type
        if k == STRUCT:
            return pa.struct([c.field for c in self.children])
        if k == LIST:
            return pa.list_(self.children[0].field)
        if k == LARGE_LIST:
            return pa.large_list(self.children[0].field)
        if k == FIXED_SIZE_LIST:
            return pa.list_(self.children[0].field, self.size)
        if k == UNION:
            return pa.union([c.field for c in self.children], self.mode, list(self.type_codes))
        key, value = self.children
        return pa.map_(key.field, value.field, keys_sorted=self.keys_sorted)

    @property
    def field(self) -> pa.Field:
        return pa.field(self.name, self.arrow_type, self.nullable)

    def columns(self) -> list[int]:
        """Physical columns of this subtree, in pre-order."""
        out = [self.column]
        for c in self.children:
            out += c.columns()
        return out


# ---------------------------------------------------------------------- writing
def storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` as rcfmt stores it: dictionaries as their values, views as offsets, inside
    nested types too."""
    if pa.types.is_dictionary(t):
        if is_nested(t.value_type):
            raise SchemaError(f"dictionary-encoded {t.value_type} is not supported; decode it first")
        return storage_type(t.value_type)
    if isinstance(t, pa.BaseExtensionType):  # (stored as its own type; Python ones need not be hashable)
        return t
    if t in _VIEWS:
        return _VIEWS[t]
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(storage_type(f.type)) for f in t])
    if pa.types.is_union(t):
        return _union(t, [f.with_type(storage_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(storage_type(t.key_type)),
                       t.item_field.with_type(storage_type(t.item_type)), keys_sorted=t.keys_sorted)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(storage_type(t.value_type)), t.list_size)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) \
            or pa.types.is_large_list_view(t):
        item = t.value_field.with_type(storage_type(t.value_type))
        large = pa.types.is_large_list(t) or pa.types.is_large_list_view(t)
        return pa.large_list(item) if large else pa.list_(item)
    return t


def _has_list_view(t: pa.DataType) -> bool:
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return True
    if pa.types.is_struct(t) or pa.types.is_union(t):
        return any(_has_list_view(f.type) for f in t)
    if pa.types.is_map(t):
        return _has_list_view(t.key_type) or _has_list_view(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_list_view(t.value_type)
    return False


def to_storage(arr, t: pa.DataType, rows: bool = True):
    """``arr`` (an Array or ChunkedArray of a nested type) as ``t``, the type
    :func:`storage_type` makes of its type. List views (anywhere in the tree) become
    lists here -- pyarrow's cast from list_view to list builds arrays one offset short,
    which fail validation -- and the rest (dictionaries, string views, offset widths)
    goes to Arrow's cast. Views outside their values, or more elements than a list's
    32-bit offsets hold, raise :class:`InvalidDataError` (with the row, when ``rows``:
    the slots of ``arr`` are rows)."""
    if isinstance(arr, pa.ChunkedArray):
        if not rows or arr.num_chunks < 2:
            return pa.chunked_array([to_storage(c, t, rows) for c in arr.chunks], t)
        out, base = [], 0
        for c in arr.chunks:
            try:
                out.append(to_storage(c, t))
            except InvalidDataError as exc:
                raise InvalidDataError(exc.reason, row=base + exc.row if exc.row is not None else None) from None
            base += len(c)
        return pa.chunked_array(out, t)
    if arr.type == t:
        return arr
    src = arr.type
    if not _has_list_view(src):
        return arr.cast(t)
    mask = _null_mask(arr) if arr.null_count else None
    if pa.types.is_list_view(src) or pa.types.is_large_list_view(src):
        large = pa.types.is_large_list(t)
        offsets, values = _view_elements(arr, large, rows)
        cls = pa.LargeListArray if large else pa.ListArray
        return cls.from_arrays(offsets, to_storage(values, t.value_type, False), type=t, mask=mask)
    if pa.types.is_struct(src):
        children = [to_storage(arr.field(i), t.field(i).type, rows) for i in range(src.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_union(src):
        return _union_like(arr, t, [to_storage(c, f.type, False) for c, f in zip(_union_children(arr), t)])
    if pa.types.is_map(src):  # offsets index the whole entries child
        entries = arr.values
        keys, items = to_storage(entries.field(0), t.key_type, False), to_storage(entries.field(1), t.item_type, False)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=t, mask=mask)
    if pa.types.is_fixed_size_list(src):
        size = src.list_size
        values = to_storage(arr.values.slice(arr.offset * size, len(arr) * size), t.value_type, False)
        return pa.FixedSizeListArray.from_arrays(values, type=t, mask=mask)
    cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray  # a list of list views
    return cls.from_arrays(arr.offsets, to_storage(arr.values, t.value_type, False), type=t, mask=mask)


def _view_elements(arr: pa.Array, large: bool, rows: bool) -> tuple[pa.Array, pa.Array]:
    """Offsets (from 0) and elements of list views ``arr`` as a list holds them: the
    elements of each non-null view, in row order (views may overlap, come in any order
    and leave values out; a null view holds none)."""
    n = len(arr)
    starts = to_numpy(arr.offsets).astype(np.int64)  # (a sliced array's own window)
    sizes = to_numpy(arr.sizes).astype(np.int64)
    if arr.null_count:
        sizes[~validity(arr)] = 0
    ends = starts + sizes
    used = sizes > 0
    bad = (sizes < 0) | (used & ((starts < 0) | (ends > len(arr.values))))
    if bad.any():
        at = int(np.argmax(bad))
        raise InvalidDataError(f"list view of {sizes[at]} values at offset {starts[at]} lies outside its "
                               f"{len(arr.values)} values" + ("" if rows else f" (list {at} of its level)"),
                               row=at if rows else None)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    total = int(offsets[-1])
    if not large and total > np.iinfo(np.int32).max:
        raise InvalidDataError(f"list views hold {total} values in all, beyond a list's 32-bit offsets; "
                               "write them as large_list_view")
    shift = starts - offsets[:-1]  # where each view's elements come from, less where they go
    if not used.any():
        values = arr.values.slice(0, 0)
    elif (shift[used] == shift[used][0]).all():  # views in order, back to back: a slice
        values = arr.values.slice(int(shift[used][0]), total)
    else:
        index = np.repeat(shift, sizes) + np.arange(total, dtype=np.int64)
        values = take(arr.values, to_arrow(ColumnValues(index), None, _LENGTHS[True]))
    return to_arrow(ColumnValues(offsets.astype(np.int64 if large else np.int32)), None, _LENGTHS[large]), values


def plan_columns(field: pa.Field, first: int) -> tuple[Node, list[tuple[str, LogicalType, bool]]]:
    """The tree of a (storage-typed) field and its physical columns ``(name, type,
    nullable)``, numbered from ``first``. Raises :class:`SchemaError` for types rcfmt
    cannot store."""
    columns: list[tuple[str, LogicalType, bool]] = []

    def walk(f: pa.Field, path: str, inherited_nulls: bool, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise SchemaError(f"field {path!r} is nested deeper than {MAX_DEPTH} levels")
        t = f.type
        col = first + len(columns)
        nullable = f.nullable or inherited_nulls
        if pa.types.is_struct(t):
            if t.num_fields == 0:  # (docs/FORMAT.md §3a: a reader refuses a struct without fields)
                raise SchemaError(f"field {path!r} is a struct without fields, which cannot be stored")
            columns.append((path, LogicalType("bool"), nullable))
            kids = tuple(walk(c, f"{path}.{c.name}", nullable, depth + 1) for c in t)
            return Node(f.name, f.nullable, STRUCT, col, kids)
        if pa.types.is_union(t):
            if t.num_fields == 0:
                raise SchemaError(f"field {path!r} is a union without fields, which cannot be stored")
            # the type code of every slot (a union has no validity of its own); each child
            # at every slot, NULL where another child is chosen
            columns.append((path, LogicalType("int8"), False))
            kids = tuple(walk(c, f"{path}.{c.name}", True, depth + 1) for c in t)
            if len({c.name for c in t}) != t.num_fields:
                raise SchemaError(f"field {path!r} is a union with duplicate field names, which cannot be stored")
            return Node(f.name, f.nullable, UNION, col, kids, mode=t.mode, type_codes=tuple(t.type_codes))
        if pa.types.is_map(t):
            columns.append((path, LogicalType("int32"), nullable))
            kids = (walk(t.key_field, f"{path}.{t.key_field.name}", False, depth + 1),
                    walk(t.item_field, f"{path}.{t.item_field.name}", False, depth + 1))
            return Node(f.name, f.nullable, MAP, col, kids, keys_sorted=t.keys_sorted)
        if pa.types.is_fixed_size_list(t):
            if not 0 < t.list_size <= MAX_LIST_SIZE:  # (as a reader checks)
                raise SchemaError(f"field {path!r} is a fixed_size_list of size {t.list_size}; rcfmt stores sizes "
                                  f"1 to {MAX_LIST_SIZE}")
            columns.append((path, LogicalType("bool"), nullable))
            kid = walk(t.value_field, f"{path}.{t.value_field.name}", False, depth + 1)
            return Node(f.name, f.nullable, FIXED_SIZE_LIST, col, (kid,), size=t.list_size)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            large = pa.types.is_large_list(t)
            columns.append((path, LogicalType("int64" if large else "int32"), nullable))
            kid = walk(t.value_field, f"{path}.{t.value_field.name}", False, depth + 1)
            return Node(f.name, f.nullable, LARGE_LIST if large else LIST, col, (kid,))
        try:
            ltype = logical_type_from_arrow(t)
        except SchemaError as exc:
            raise SchemaError(f"field {path!r}: {exc}") from None
        columns.append((path, ltype, nullable))
        return Node(f.name, f.nullable, LEAF, col, leaf_type=ltype.to_arrow())

    return walk(field, field.name, False, 0), columns


class SlotError(ValueError):
    """Invalid Arrow found while shredding: at slot ``slot`` of stored column ``column``."""

    def __init__(self, column: int, slot: int, reason: str):
        super().__init__(reason)
        self.column, self.slot, self.reason = column, slot, reason


def shred(arr: pa.Array, node: Node, out: dict[int, pa.Array]) -> None:
    """The physical columns of ``arr`` (of ``node``'s type) into ``out``: column ->
    flat array."""
    k = node.kind
    if k == LEAF:
        out[node.column] = arr if arr.type == node.leaf_type else arr.cast(node.leaf_type)
        return
    n = len(arr)
    if k == UNION:
        out[node.column] = _type_ids(arr)
        for child, values in zip(node.children, _row_children(arr, node.column)):
            shred(values, child, out)
        return
    if k in (STRUCT, FIXED_SIZE_LIST):
        out[node.column] = _presence(arr)
        if k == STRUCT:  # children null where the struct is null
            for child, values in zip(node.children, arr.flatten()):
                shred(values, child, out)
        else:  # every slot of every list, null lists included
            size = node.size
            shred(arr.values.slice(arr.offset * size, n * size), node.children[0], out)
        return
    offsets = to_numpy(arr.offsets)  # n + 1 entries (a sliced array's own window)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64 if k == LARGE_LIST else np.int32)
    if n and int(lengths.min()) < 0:  # (Arrow's full validation refuses them; a reader would)
        raise SlotError(node.column, int(np.argmax(lengths < 0)), "list offsets go backwards")
    valid = validity(arr) if arr.null_count else None
    out[node.column] = to_arrow(ColumnValues(lengths), valid, _LENGTHS[k == LARGE_LIST])
    flat = _elements(arr.values, offsets, None if valid is None else ~valid)
    if k == MAP:
        shred(flat.field(0), node.children[0], out)
        shred(flat.field(1), node.children[1], out)
    else:
        shred(flat, node.children[0], out)


def _elements(values: pa.Array, offsets: np.ndarray, nulls: np.ndarray | None) -> pa.Array:
    """The elements of the non-null lists, in order (a null list's own range, which
    Arrow allows to be non-empty, is left out)."""
    lo, hi = int(offsets[0]), int(offsets[-1])
    if nulls is None or not (offsets[1:] - offsets[:-1])[nulls].any():
        return values.slice(lo, hi - lo)
    keep = np.zeros(hi - lo, bool)
    for a, b in zip(offsets[:-1][~nulls], offsets[1:][~nulls]):
        keep[a - lo:b - lo] = True
    # the kept runs, concatenated: pyarrow 26's filter and take read a sliced
    # fixed_size_list of fixed_size_lists at the wrong place (values from elsewhere)
    edges = np.flatnonzero(np.diff(np.concatenate(([False], keep, [False])).astype(np.int8)))
    runs = [values.slice(lo + int(a), int(b - a)) for a, b in zip(edges[::2], edges[1::2])]
    return pa.concat_arrays(runs) if runs else values.slice(lo, 0)


def _type_ids(arr: pa.Array) -> pa.Array:
    """The type code of every slot of union ``arr`` (int8, no NULLs)."""
    n = len(arr)
    codes = np.frombuffer(arr.buffers()[1], np.int8, count=arr.offset + n)[arr.offset:] if n else np.zeros(0, np.int8)
    return pa.array(codes, pa.int8())


def _union_children(arr: pa.Array) -> list[pa.Array]:
    """The children of union ``arr`` as Arrow holds them (a sparse union's sliced to its
    slots; a dense union's whole)."""
    return [arr.field(i) for i in range(arr.type.num_fields)]


def _row_children(arr: pa.Array, column: int) -> list[pa.Array]:
    """Each child of union ``arr`` at every slot: its value where the slot chose it, NULL
    elsewhere (a sparse union's unchosen values included: Arrow leaves them unspecified).
    A dense union's offset outside its child raises :class:`SlotError` (of ``column``)."""
    codes = to_numpy(_type_ids(arr))
    out = []
    for i, code in enumerate(arr.type.type_codes):
        chosen = codes == code
        if arr.type.mode == "sparse":
            child = arr.field(i)
            out.append(child if chosen.all() else pc_if_else(chosen, child))
            continue
        n = len(arr)
        offsets = np.frombuffer(arr.buffers()[2], np.int32, count=arr.offset + n)[arr.offset:] if n \
            else np.zeros(0, np.int32)
        child = arr.field(i)
        if not chosen.any():
            out.append(pa.nulls(n, child.type))
            continue
        if len(child) <= int(offsets[chosen].max()) or int(offsets[chosen].min()) < 0:
            raise SlotError(column, int(np.argmax(chosen & ((offsets < 0) | (offsets >= len(child))))),
                            f"a dense union's offset lies outside its child {arr.type.field(i).name!r}")
        # (take checks every index, those under NULL too: the unchosen slots read entry 0)
        out.append(take(child, pa.array(np.where(chosen, offsets, 0).astype(np.int64), mask=~chosen)))
    return out


def pc_if_else(mask: np.ndarray, values: pa.Array) -> pa.Array:
    """``values`` where ``mask``, NULL elsewhere."""
    import pyarrow.compute as pc

    return pc.if_else(pa.array(mask), values, pa.nulls(len(values), values.type))


def _union_like(arr: pa.Array, t: pa.DataType, children: list[pa.Array]) -> pa.Array:
    """A union of type ``t`` with ``arr``'s type codes (and offsets) over ``children``."""
    n = len(arr)
    bufs = arr.buffers()
    codes = pa.py_buffer(np.ascontiguousarray(to_numpy(_type_ids(arr))))
    if t.mode == "sparse":
        return pa.Array.from_buffers(t, n, [None, codes], 0, 0, children)
    offsets = np.frombuffer(bufs[2], np.int32, count=arr.offset + n)[arr.offset:] if n else np.zeros(0, np.int32)
    return pa.Array.from_buffers(t, n, [None, codes, pa.py_buffer(np.ascontiguousarray(offsets))], 0, 0, children)


def _assemble_union(node: Node, type_ids: pa.Array, rows: list[pa.Array]) -> pa.Array:
    """The union of ``node`` from its slots' type codes and its children at every slot
    (dense: each child keeps the slots that chose it, in order)."""
    if type_ids.null_count:
        raise CorruptFileError(f"null type code in union {node.name!r}")
    codes = np.ascontiguousarray(to_numpy(type_ids), np.int8)
    known = np.isin(codes, np.asarray(node.type_codes, np.int8))
    if not known.all():
        raise CorruptFileError(f"type code {int(codes[np.argmin(known)])} in union {node.name!r}, whose codes are "
                               f"{list(node.type_codes)}")
    t = node.arrow_type
    n = len(codes)
    if node.mode == "sparse":
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(codes)], 0, 0, rows)
    offsets = np.zeros(n, np.int32)
    children = []
    for code, child in zip(node.type_codes, rows):
        chosen = codes == code
        offsets[chosen] = np.arange(int(chosen.sum()), dtype=np.int32)
        children.append(filter_rows(child, pa.array(chosen)))
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(codes), pa.py_buffer(offsets)], 0, 0, children)


def _presence(arr: pa.Array) -> pa.Array:
    """A bool array, true where ``arr`` is valid and null where it is null."""
    return to_arrow(ColumnValues(np.ones(len(arr), bool)), validity(arr) if arr.null_count else None, _BOOL)


# ---------------------------------------------------------------------- reading
def _with_validity(arr: pa.Array, valid: np.ndarray | None) -> pa.Array:
    """``arr`` (a struct, fixed-size list, list, large list or map array made without
    NULLs, at offset 0) with ``valid`` (numpy bools; None: no NULL) as its validity,
    from buffers: what ``from_arrays(..., mask=)`` makes, without the compute kernel
    that inverts its mask (no ``pyarrow.compute`` import on a first read)."""
    if valid is None:
        return arr
    bits = pa.py_buffer(np.packbits(valid, bitorder="little"))
    t = arr.type
    if pa.types.is_struct(t):
        return pa.Array.from_buffers(t, len(arr), [bits], children=[arr.field(i) for i in range(t.num_fields)])
    if pa.types.is_fixed_size_list(t):
        return pa.Array.from_buffers(t, len(arr), [bits], children=[arr.values])
    return pa.Array.from_buffers(t, len(arr), [bits, arr.buffers()[1]], children=[arr.values])


def _null_mask(arr: pa.Array) -> pa.Array:
    """Boolean array, True where ``arr`` is NULL (from its validity bitmap: no compute
    kernel, so no ``pyarrow.compute`` import on a first read)."""
    return bool_array(~validity(arr))


def assemble(node: Node, decode: Callable, slots: int, rows: np.ndarray | None = None) -> pa.Array:
    """The Arrow array of ``node`` at ``rows`` (ascending positions among its ``slots``
    slots; None: all of them). ``decode(column, slots, rows)`` gives a stored column's
    flat values at those positions (all when None) of its ``slots`` (or raises).

    Below a list the positions are those of the selected lists' elements (found through
    the list's lengths, decoded whole): a selection reads, at every level, only what its
    rows need. Counts read from the file are checked before they size anything: list
    lengths are non-negative and add up to what the element columns hold (``decode``
    checks that against their pages)."""
    k = node.kind
    if k == LEAF:
        return _declared(decode(node.column, slots, rows), node)
    if k == UNION:
        return _assemble_union(node, decode(node.column, slots, rows),
                               [assemble(c, decode, slots, rows) for c in node.children])
    if k in (STRUCT, FIXED_SIZE_LIST):
        own = decode(node.column, slots, rows)
    else:  # the lengths of every list: the elements of a selected one start after all before it
        everything = decode(node.column, slots, None)
        own = everything if rows is None else everything.take(to_arrow(ColumnValues(rows), None, _LENGTHS[True]))
    # a field declared non-nullable is null only where a struct above it is: Arrow wants no
    # validity there (the struct's own says it)
    valid = validity(own) if own.null_count and node.nullable else None
    n = len(own)
    if k == STRUCT:
        children = [assemble(c, decode, slots, rows) for c in node.children]
        return _with_validity(pa.StructArray.from_arrays(children, fields=[c.field for c in node.children]), valid)
    if k == FIXED_SIZE_LIST:
        size = node.size
        inner = None if rows is None else (rows[:, None] * size + np.arange(size)).ravel()
        values = assemble(node.children[0], decode, slots * size, inner)
        return _with_validity(pa.FixedSizeListArray.from_arrays(values, type=node.arrow_type), valid)
    lengths = to_numpy(everything).astype(np.int64)  # (entries under NULL: 0 below)
    if everything.null_count:
        lengths[~validity(everything)] = 0
    if len(lengths) and int(lengths.min()) < 0:
        raise CorruptFileError(f"negative list length in column of {node.name!r}")
    total = int(lengths.sum())
    if k != LARGE_LIST and total > np.iinfo(np.int32).max:
        raise CorruptFileError(f"list lengths of {node.name!r} add up to {total}, beyond 32-bit offsets")
    if rows is None:
        inner, counts = None, lengths
    else:
        starts = np.cumsum(lengths) - lengths
        counts = lengths[rows]
        picked = int(counts.sum())
        ends = np.cumsum(counts)
        inner = np.arange(picked, dtype=np.int64) + np.repeat(starts[rows] - (ends - counts), counts)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    offsets_arr = to_arrow(ColumnValues(offsets.astype(np.int64 if k == LARGE_LIST else np.int32)), None,
                           _LENGTHS[k == LARGE_LIST])
    if k == MAP:
        key, value = node.children
        keys = assemble(key, decode, total, inner)
        if keys.null_count:
            raise CorruptFileError(f"null map key in {node.name!r}")
        items = assemble(value, decode, total, inner)
        return _with_validity(pa.MapArray.from_arrays(offsets_arr, keys, items, type=node.arrow_type), valid)
    values = assemble(node.children[0], decode, total, inner)
    cls = pa.LargeListArray if k == LARGE_LIST else pa.ListArray
    return _with_validity(cls.from_arrays(offsets_arr, values, type=node.arrow_type), valid)


def _declared(arr: pa.Array, node: Node) -> pa.Array:
    """A leaf's values, without validity when its field is declared non-nullable."""
    if node.nullable or not arr.null_count:
        return arr
    return pa.Array.from_buffers(arr.type, len(arr), [None, *arr.buffers()[1:]], 0, arr.offset)


def under_structs(arr: pa.Array, names) -> pa.Array:
    """The field reached from struct array ``arr`` through ``names``, NULL wherever a
    struct on the way is NULL (how a filter sees ``payload.user.id``)."""
    for name in names:
        arr = arr.flatten()[arr.type.get_field_index(name)]  # flatten() ANDs the struct's validity
    return arr


def element_columns(nodes) -> set[int]:
    """Physical columns whose slots are list elements, not rows."""
    out: set[int] = set()

    def walk(node: Node, element: bool) -> None:
        if element:
            out.add(node.column)
        below = element or node.kind in (LIST, LARGE_LIST, FIXED_SIZE_LIST, MAP)
        for c in node.children:
            walk(c, below)

    for n in nodes:
        walk(n, False)
    return out


def filter_columns(nodes) -> dict[str, int]:
    """Physical columns a filter may name: top-level leaves and the leaves under
    structs only (their slots are rows), by dotted path."""
    out: dict[str, int] = {}

    def walk(node: Node, path: str) -> None:
        if node.kind == LEAF:
            out[path] = node.column
        elif node.kind == STRUCT:
            for c in node.children:
                walk(c, f"{path}.{c.name}")

    for n in nodes:
        walk(n, n.name)
    return out


# ---------------------------------------------------------------------- projection
def project(nodes, names) -> list:
    """Outputs of a projection: per requested top-level field (in order of first
    mention), its node -- pruned to the requested struct paths when only sub-fields
    are named (``"payload.user.id"`` keeps ``payload{user{id}}``). Unknown names raise
    :class:`SchemaError`."""
    picked: dict[int, Node | None] = {}  # top-level index -> pruned node (None = whole)
    order: list[int] = []
    for name in names:
        if not isinstance(name, str):
            raise SchemaError(f"column names must be strings, got {name!r}")
        found = _find(nodes, name)
        if found is None:
            raise SchemaError(f"unknown column {name!r}; the file has {[n.name for n in nodes]}")
        i, path = found
        if i not in picked:
            order.append(i)
            picked[i] = _prune(nodes[i], path)
        elif picked[i] is not None:
            picked[i] = None if not path else _merge(picked[i], _prune(nodes[i], path))
        if not path:
            picked[i] = None
    return [nodes[i] if picked[i] is None else picked[i] for i in order]


def _find(nodes, name: str):
    """``(top-level index, remaining path)`` of ``name`` (an exact top-level name wins
    over a dotted path)."""
    for i, n in enumerate(nodes):
        if n.name == name:
            return i, ()
    for i, n in enumerate(nodes):
        if name.startswith(n.name + "."):
            path = _struct_path(n, name[len(n.name) + 1:])
            if path is not None:
                return i, path
    return None


def _struct_path(node: Node, rest: str):
    if node.kind != STRUCT:
        return None
    for c in node.children:
        if c.name == rest:
            return (c.name,)
    for c in node.children:
        if rest.startswith(c.name + "."):
            sub = _struct_path(c, rest[len(c.name) + 1:])
            if sub is not None:
                return (c.name, *sub)
    return None


def _prune(node: Node, path: tuple) -> Node:
    if not path:
        return node
    child = next(c for c in node.children if c.name == path[0])
    return replace(node, children=(_prune(child, path[1:]),))


def _merge(a: Node, b: Node) -> Node:
    """Union of two prunings of the same struct node (children in schema order of
    first mention)."""
    if a.kind != STRUCT or a is b:
        return a
    kids = list(a.children)
    for c in b.children:
        j = next((k for k, x in enumerate(kids) if x.name == c.name), None)
        kids.append(c) if j is None else kids.__setitem__(j, _merge(kids[j], c))
    return replace(a, children=tuple(kids))


# ---------------------------------------------------------------------- schemas
def plan_schema(schema: pa.Schema) -> tuple[tuple, list[tuple[str, LogicalType, bool]]]:
    """The tree of every field of a storage schema (a flat field is a leaf) and the
    stored columns ``(name, type, nullable)`` a file of it holds. Raises
    :class:`SchemaError` for types rcfmt cannot store."""
    nodes, columns = [], []
    for f in schema:
        if is_nested(f.type):
            try:
                node, cols = plan_columns(f, len(columns))
            except SchemaError as exc:
                raise SchemaError(f"column {f.name!r}: {exc}") from None
            nodes.append(node)
            columns += cols
            continue
        try:
            ltype = logical_type_from_arrow(f.type)
        except SchemaError as exc:
            raise SchemaError(f"column {f.name!r}: {exc}") from None
        nodes.append(Node(f.name, f.nullable, LEAF, len(columns), leaf_type=ltype.to_arrow()))
        columns.append((f.name, ltype, f.nullable))
    return tuple(nodes), columns


def _schema_cache(fn):
    """``functools.lru_cache`` for functions of a schema, which calls ``fn`` uncached for
    a schema that cannot be hashed (one holding a Python extension type without
    ``__hash__``)."""
    cached = functools.lru_cache(maxsize=256)(fn)

    @functools.wraps(fn)
    def call(schema):
        try:
            hash(schema)
        except TypeError:
            return fn(schema)
        return cached(schema)

    call.cache_clear = cached.cache_clear
    return call


@_schema_cache
def filter_schema(schema: pa.Schema) -> pa.Schema:
    """The columns a filter may name in data of ``schema``: its flat fields and the
    leaves under its structs (by dotted path). ``schema`` itself when it has no nested
    field."""
    if not any(is_nested(f.type) for f in schema):
        return schema
    out = []

    def walk(f: pa.Field, path: str, nullable: bool) -> None:
        if pa.types.is_struct(f.type):
            for c in f.type:
                walk(c, f"{path}.{c.name}", nullable or f.nullable)
        elif not is_nested(f.type):
            out.append(pa.field(path, f.type, nullable or f.nullable))

    for f in schema:
        walk(f, f.name, False)
    return pa.schema(out, metadata=schema.metadata)


@_schema_cache
def bind_schema(schema: pa.Schema) -> pa.Schema:
    """What a filter binds to: :func:`filter_schema`, plus the lists at the top level
    or under structs (by dotted path, with their list type), which ``list_contains``
    names. ``schema`` itself when it has no nested field."""
    if not any(is_nested(f.type) for f in schema):
        return schema
    lists = []

    def walk(f: pa.Field, path: str) -> None:
        t = f.type
        if pa.types.is_struct(t):
            for c in t:
                walk(c, f"{path}.{c.name}")
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            lists.append(pa.field(path, t, True))  # (list_contains refuses lists of nested values)

    for f in schema:
        walk(f, f.name)
    base = filter_schema(schema)
    return pa.schema([*base, *lists], metadata=base.metadata)


def list_node(nodes, path: str):
    """``(pruned top-level node, names below it)`` of the list at dotted ``path`` (a
    top-level list or one under structs), or None."""
    for i, top in enumerate(nodes):
        if path == top.name:
            return top, ()
        if path.startswith(top.name + "."):
            rest = path[len(top.name) + 1:]
            node, names = top, []
            while node.kind == STRUCT:
                kid = next((c for c in node.children if rest == c.name or rest.startswith(c.name + ".")), None)
                if kid is None:
                    return None
                names.append(kid.name)
                if rest == kid.name:
                    return project(nodes, [path])[0], tuple(names)
                rest, node = rest[len(kid.name) + 1:], kid
    return None


def same_shape(a: pa.DataType, b: pa.DataType, same_leaf: Callable[[pa.DataType, pa.DataType], bool]) -> bool:
    """Whether two types nest the same way (kinds, field names, list sizes) with leaves
    that ``same_leaf`` accepts; nullability aside."""
    if is_nested(a) != is_nested(b):
        return False
    if not is_nested(a):
        return same_leaf(a, b)
    kinds = [pa.types.is_struct, pa.types.is_map, pa.types.is_fixed_size_list, pa.types.is_large_list,
             pa.types.is_list, pa.types.is_union]
    if [k(a) for k in kinds] != [k(b) for k in kinds]:
        return False
    if pa.types.is_fixed_size_list(a) and a.list_size != b.list_size:
        return False
    if pa.types.is_union(a) and (a.mode != b.mode or list(a.type_codes) != list(b.type_codes)):
        return False
    fa = list(a) if pa.types.is_struct(a) or pa.types.is_union(a) else [a.key_field, a.item_field] if pa.types.is_map(a) else [a.value_field]
    fb = list(b) if pa.types.is_struct(b) or pa.types.is_union(b) else [b.key_field, b.item_field] if pa.types.is_map(b) else [b.value_field]
    return len(fa) == len(fb) and all(x.name == y.name and same_shape(x.type, y.type, same_leaf)
                                      for x, y in zip(fa, fb))
