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
footer under the JSON key ``nested``. An extension type over a nested type is its
storage's node carrying the extension's name and metadata (``Node.ext``; its declared
storage, when that holds dictionaries or views, in ``Node.ext_storage``), a
run_end_encoded one its values' node carrying the run-end type (``Node.ree``, and an
extension over that in ``Node.ree_ext``): the *wrappers* of the node's type, which
shredding takes off and assembling puts back. The arrays shredded here are in their
stored form (:mod:`rcfmt.schema.nested_storage`).
"""
from __future__ import annotations

from functools import cached_property
from typing import Callable

import numpy as np
import pyarrow as pa

from ..runtime.records import record, replace
from .values import ColumnValues
from ..errors import CorruptFileError, InvalidDataError, SchemaError
from .annotated import from_storage
from .annotated import to_storage as annotated_to_storage
from .arrow_io import filter_rows, one_array, struct_fields, take, to_arrow, to_numpy, validity
from .types import LogicalType, extension_key, logical_type_from_arrow, resolved_extension, same_type
from .names import ambiguous_name
# (the storage form of nested arrays, shredded here: dictionaries decoded, views as lists)
from .gather import concat_runs, holds, holds_runs
from .nested_storage import (encode_as, is_nested, is_nested_extension, storage_type, to_storage,
                             views_as_offsets, without_runs)
from .nested_runs import decode_runs, encode_runs
# (what filters and datasets see of nested schemas: re-exported for them)
from .nested_schemas import bind_schema, filter_schema, relax_nullability, row_struct, same_shape
from .nested_runs import type_ids as _type_ids

__all__ = ["Node", "is_nested", "is_nested_extension", "storage_type", "to_storage", "views_as_offsets",
           "plan_columns", "shred", "assemble", "project", "row_struct", "filter_schema", "bind_schema", "same_shape", "relax_nullability",
           "holds_dictionaries", "shred_chunks"]

STRUCT, LIST, LARGE_LIST, FIXED_SIZE_LIST, MAP, LEAF = "struct", "list", "large_list", "fixed_size_list", "map", "leaf"
UNION = "union"
KINDS = (STRUCT, LIST, LARGE_LIST, FIXED_SIZE_LIST, MAP, UNION, LEAF)
#: deepest nesting a file may declare (a forged footer cannot make the reader recurse without end)
MAX_DEPTH = 64
#: largest fixed_size_list size a file may declare
MAX_LIST_SIZE = 1 << 20
# (arrays are built from buffers: pyarrow's conversions of numpy import pandas on first use)
_BOOL = LogicalType("bool")
_LENGTHS = {False: LogicalType("int32"), True: LogicalType("int64")}
RUN_ENDS = {"int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64()}


@record(frozen=True)
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
    #: an extension type over the node's (nested) type: ``(name, serialized metadata)``
    ext: tuple | None = None
    #: the storage type of ``ext`` as Arrow declares it, when it is not :attr:`stored_type`
    #: (it holds dictionaries or views, stored decoded)
    ext_storage: pa.DataType | None = None
    #: a run_end_encoded type over the above: its run-end type ("int16", "int32", "int64")
    ree: str | None = None
    #: an extension type over that run_end_encoded type, and its declared storage, as ``ext``
    ree_ext: tuple | None = None
    ree_ext_storage: pa.DataType | None = None
    #: the Arrow field's metadata, ``((key, value), ...)`` of bytes (stored with the
    #: node's column: docs/FORMAT.md §5)
    metadata: tuple = ()

    @cached_property
    def arrow_type(self) -> pa.DataType:
        """The node's Arrow type: :attr:`stored_type` in its wrappers -- the extension
        type over it when the node has one (the registered type, else one written in this
        process, else :attr:`stored_type` itself, as for flat extensions), the
        run_end_encoded type over that, an extension over that."""
        return self.wrapped_types[-1]

    @cached_property
    def wrapped_types(self) -> tuple:
        """:attr:`stored_type`, then the type each wrapper makes of it (the extension,
        the run_end_encoded type, the extension over that), in that order."""
        t = self.stored_type
        out = [t]
        if self.ext is not None:
            out.append(resolved_extension(self.ext, self.ext_storage, out[-1]))
        if self.ree is not None:
            out.append(pa.run_end_encoded(RUN_ENDS[self.ree], out[-1]))
        if self.ree_ext is not None:
            out.append(resolved_extension(self.ree_ext, self.ree_ext_storage, out[-1]))
        return tuple(out)

    @property
    def wrapped(self) -> bool:
        """Whether the node's type wraps its kind's (an extension, a run_end_encoded type)."""
        return self.ext is not None or self.ree is not None

    @property
    def row_slots(self) -> bool:
        """Whether the node's stored column has NULLs only where the field is NULL as
        declared (False below a run_end_encoded type, whose values are NULL where its
        field is declared non-nullable)."""
        return self.nullable or self.ree is not None

    @property
    def stored_type(self) -> pa.DataType:
        """The node's Arrow type without its extension (its kind's type of its children)."""
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
        return pa.field(self.name, self.arrow_type, self.nullable, dict(self.metadata) or None)

    def columns(self) -> list[int]:
        """Physical columns of this subtree, in pre-order."""
        out = [self.column]
        for c in self.children:
            out += c.columns()
        return out


# ---------------------------------------------------------------------- writing
def plan_columns(field: pa.Field, first: int) -> tuple[Node, list[tuple[str, LogicalType, bool]]]:
    """The tree of a (storage-typed) field and its physical columns ``(name, type,
    nullable)``, numbered from ``first``. Raises :class:`SchemaError` for types rcfmt
    cannot store."""
    columns: list[tuple[str, LogicalType, bool]] = []

    def walk(f: pa.Field, path: str, inherited_nulls: bool, depth: int, in_runs: bool = False) -> Node:
        node = node_of(f, path, inherited_nulls, depth, in_runs)
        return replace(node, metadata=field_metadata(f)) if f.metadata else node

    def node_of(f: pa.Field, path: str, inherited_nulls: bool, depth: int, in_runs: bool) -> Node:
        if depth > MAX_DEPTH:
            raise SchemaError(f"field {path!r} is nested deeper than {MAX_DEPTH} levels")
        t = f.type
        if is_nested_extension(t):  # its storage's node, with the extension's name and metadata
            try:
                ext = extension_key(t)
            except SchemaError as exc:
                raise SchemaError(f"field {path!r}: {exc}") from None
            decoded = storage_type(t.storage_type)  # (dictionaries, views: stored decoded)
            if in_runs:  # (below runs, runs are stored as their values, in an extension's storage too)
                decoded = without_runs(decoded)
            declared = None if same_type(decoded, t.storage_type) else t.storage_type
            node = walk(f.with_type(decoded), path, inherited_nulls, depth, in_runs)
            if node.ree is not None and node.ree_ext is None:  # (an extension of a run_end_encoded type)
                return replace(node, ree_ext=ext, ree_ext_storage=declared)
            if node.ext is not None or node.ree is not None:  # (no Arrow format carries them)
                raise SchemaError(f"field {path!r} is an extension of an extension type ({t})")
            return replace(node, ext=ext, ext_storage=declared)
        if pa.types.is_run_end_encoded(t) and is_nested(t):  # its values' node, with the run-end type
            node = walk(pa.field(f.name, t.value_type), path, inherited_nulls, depth, True)
            return replace(node, nullable=f.nullable, ree=str(t.run_end_type))
        col = first + len(columns)
        nullable = f.nullable or inherited_nulls
        if pa.types.is_struct(t):  # (a struct without fields: its presence alone)
            columns.append((path, LogicalType("bool"), nullable))
            kids = tuple(walk(c, f"{path}.{c.name}", nullable, depth + 1, in_runs) for c in t)
            return Node(f.name, f.nullable, STRUCT, col, kids)
        if pa.types.is_union(t):  # (a union without fields: its type codes alone, of empty arrays)
            # the type code of every slot (a union has no validity of its own); each child
            # at every slot, NULL where another child is chosen
            columns.append((path, LogicalType("int8"), False))
            kids = tuple(walk(c, f"{path}.{c.name}", True, depth + 1, in_runs) for c in t)
            return Node(f.name, f.nullable, UNION, col, kids, mode=t.mode, type_codes=tuple(t.type_codes))
        if pa.types.is_map(t):
            columns.append((path, LogicalType("int32"), nullable))
            kids = (walk(t.key_field, f"{path}.{t.key_field.name}", False, depth + 1, in_runs),
                    walk(t.item_field, f"{path}.{t.item_field.name}", False, depth + 1, in_runs))
            return Node(f.name, f.nullable, MAP, col, kids, keys_sorted=t.keys_sorted)
        if pa.types.is_fixed_size_list(t):
            if not 0 < t.list_size <= MAX_LIST_SIZE:  # (as a reader checks)
                raise SchemaError(f"field {path!r} is a fixed_size_list of size {t.list_size}; rcfmt stores sizes "
                                  f"1 to {MAX_LIST_SIZE}")
            columns.append((path, LogicalType("bool"), nullable))
            kid = walk(t.value_field, f"{path}.{t.value_field.name}", False, depth + 1, in_runs)
            return Node(f.name, f.nullable, FIXED_SIZE_LIST, col, (kid,), size=t.list_size)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            large = pa.types.is_large_list(t)
            columns.append((path, LogicalType("int64" if large else "int32"), nullable))
            kid = walk(t.value_field, f"{path}.{t.value_field.name}", False, depth + 1, in_runs)
            return Node(f.name, f.nullable, LARGE_LIST if large else LIST, col, (kid,))
        try:
            ltype = logical_type_from_arrow(t)
        except SchemaError as exc:
            raise SchemaError(f"field {path!r}: {exc}") from None
        columns.append((path, ltype, nullable))
        return Node(f.name, f.nullable, LEAF, col, leaf_type=ltype.to_arrow())

    return walk(field, field.name, False, 0), columns


def field_metadata(f: pa.Field) -> tuple:
    """``f``'s Arrow metadata as ``((key, value), ...)`` of bytes (empty: none)."""
    return tuple(f.metadata.items()) if f.metadata else ()


def column_metadata(nodes) -> dict[int, tuple]:
    """``{stored column: the metadata of its node's field}``, for the nodes that have some."""
    out: dict[int, tuple] = {}

    def walk(node: Node) -> None:
        if node.metadata:
            out[node.column] = node.metadata
        for c in node.children:
            walk(c)

    for n in nodes:
        walk(n)
    return out


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
    if node.wrapped:
        arr = _unwrapped(arr, node)
    n = len(arr)
    if k == UNION:
        codes = _type_ids(arr)
        _check_type_codes(codes, node)
        out[node.column] = codes
        for child, values in zip(node.children, _row_children(arr, node.column)):
            shred(values, child, out)
        return
    if k in (STRUCT, FIXED_SIZE_LIST):
        out[node.column] = _presence(arr)
        if k == STRUCT:  # children null where the struct is null
            for child, field, values in zip(node.children, arr.type, struct_fields(arr)):
                if not field.nullable and values.null_count > arr.null_count:  # (a NULL where the struct is not)
                    raise SchemaError(f"field {field.name!r} of struct {node.name!r} is not nullable but holds "
                                      f"{values.null_count - arr.null_count} nulls where its struct is valid")
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


def _check_type_codes(codes: pa.Array, node: Node) -> None:
    """:class:`SlotError` at the first of a union's type codes that it does not declare
    (Arrow's full validation refuses them; a reader would)."""
    known = np.isin(to_numpy(codes), np.asarray(node.type_codes, np.int8))
    if not known.all():
        at = int(np.argmin(known))
        raise SlotError(node.column, at, f"type code {codes[at].as_py()} is not among the union's "
                                         f"{list(node.type_codes)}")


def _unwrapped(arr: pa.Array, node: Node) -> pa.Array:
    """``arr`` (of ``node``'s Arrow type) as its kind's stored type: out of an extension
    over a run_end_encoded type, its runs decoded, out of its extension, its declared
    storage decoded. Run ends or dictionary indices Arrow's validation refuses raise
    :class:`SlotError` (of ``node``'s column)."""
    declared = None
    try:
        if node.ree_ext is not None and isinstance(arr.type, pa.BaseExtensionType):
            arr = arr.storage
        if node.ree is not None:
            arr = decode_runs(arr)
        if node.ext is not None and isinstance(arr.type, pa.BaseExtensionType):
            arr = arr.storage
        if not same_type(arr.type, node.stored_type):  # (an extension's storage of dictionaries or views)
            declared = arr.type
            arr = to_storage(arr, node.stored_type)
            encode_as(arr, declared)  # (as a reader will: the indices must address the block's values)
    except InvalidDataError as exc:
        raise SlotError(node.column, exc.row or 0, exc.reason) from None
    except pa.ArrowIndexError as exc:  # (Arrow's cast of a dictionary below: indices outside it)
        raise SlotError(node.column, 0, f"dictionary-encoded values do not decode: {exc}") from None
    except pa.ArrowInvalid as exc:
        if declared is None:
            raise
        raise SlotError(node.column, 0, f"the values of one block cannot be encoded as {declared} again ({exc}): "
                                        "write smaller blocks (block_rows)") from None
    return arr


def _wrap(arr: pa.Array, node: Node) -> pa.Array:
    """``arr`` (of ``node``'s stored type) in ``node``'s wrappers (:meth:`Node.wrapped_types`)."""
    types = iter(node.wrapped_types[1:])
    ext = next(types) if node.ext is not None else None
    if node.ree is not None:  # the runs of the stored values (an extension's are its storage's), then their wrapper
        runs_type = next(types)
        runs = encode_runs(arr, runs_type.run_end_type)
        values = _extended(runs.values, ext)
        arr = pa.RunEndEncodedArray.from_arrays(runs.run_ends, values, type=runs_type).slice(runs.offset, len(runs))
    elif ext is not None:
        arr = _extended(arr, ext)
    if node.ree_ext is not None:
        arr = _extended(arr, next(types))
    return arr


def _extended(arr: pa.Array, t: pa.DataType | None) -> pa.Array:
    """``arr`` (a node's stored type) as extension type ``t`` over its declared storage
    (as it is when ``t`` is not an extension: one this process does not know, read as
    its storage decoded)."""
    if t is None or not isinstance(t, pa.BaseExtensionType):
        return arr
    return pa.ExtensionArray.from_storage(t, encode_as(arr, t.storage_type))


def shred_chunks(column: pa.ChunkedArray, node: Node, out: dict[int, pa.Array], ltypes: list) -> None:
    """:func:`shred` of ``column`` (one block, of ``node``'s type) chunk by chunk, each
    stored column's parts chunks of one chunked array: for an extension's dictionaries,
    which Arrow may not concatenate (it unifies no dictionaries holding NULLs). The
    block is then assembled as a reader will assemble it (``ltypes``: the logical type of
    each stored column); an extension's storage that cannot be encoded again (more
    distinct values than a dictionary's index type addresses) raises :class:`SlotError`."""
    parts: list[dict] = [{} for _ in column.chunks]
    for chunk, part in zip(column.chunks, parts):
        shred(chunk, node, part)
    merged = {c: pa.chunked_array([p[c] for p in parts], parts[0][c].type) for c in parts[0]}

    def decode(col: int, slots: int, selected) -> pa.Array:
        arr, ltype = merged[col], ltypes[col]
        if ltype.annotated and holds_dictionaries(arr.type):  # (a leaf's: decoded chunk by chunk, as read)
            return from_storage(annotated_to_storage(arr, ltype), ltype)
        return one_array(arr)

    try:
        assemble(node, decode, len(column))
    except pa.ArrowInvalid as exc:
        raise SlotError(node.column, 0, f"the values of one block cannot be encoded as their extension's storage "
                                        f"again ({exc}): write smaller blocks (block_rows)") from None
    out.update(merged)


def holds_dictionaries(t: pa.DataType) -> bool:
    """Whether a dictionary type sits anywhere in ``t`` (a storage type: in an extension's
    storage), whose arrays' chunks may not concatenate (Arrow unifies no dictionaries
    holding NULLs, nor beyond their index type)."""
    return holds(t, pa.types.is_dictionary)


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
    return concat_runs(runs, runs[0].type) if runs else values.slice(lo, 0)


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
    if isinstance(values.type, pa.BaseExtensionType) or holds_runs(values.type):  # (if_else has no kernel)
        n = len(values)
        return take(values, pa.array(np.arange(n, dtype=np.int64), mask=~np.asarray(mask, bool)))
    import pyarrow.compute as pc

    return pc.if_else(pa.array(mask), values, pa.nulls(len(values), values.type))


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
    t = node.stored_type
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


def assemble(node: Node, decode: Callable, slots: int, rows: np.ndarray | None = None,
             check: Callable | None = None) -> pa.Array:
    """The Arrow array of ``node`` at ``rows`` (ascending positions among its ``slots``
    slots; None: all of them). ``decode(column, slots, rows)`` gives a stored column's
    flat values at those positions (all when None) of its ``slots`` (or raises).

    Below a list the positions are those of the selected lists' elements (found through
    the list's lengths, decoded whole): a selection reads, at every level, only what its
    rows need. Counts read from the file are checked before they size anything: list
    lengths are non-negative and add up to what the element columns hold (``decode``
    checks that against their pages; with ``rows``, ``check(column, slots)`` must raise
    unless element column ``column`` holds ``slots`` values, and is called before the
    positions among them are made). A node with an extension type gives an array of
    that type (over its stored type's), a run_end_encoded one in maximal runs."""
    arr = _assemble(node, decode, slots, rows, check)
    return _wrap(arr, node) if node.wrapped else arr


def _assemble(node: Node, decode: Callable, slots: int, rows: np.ndarray | None, check: Callable | None) -> pa.Array:
    k = node.kind
    if k == LEAF:
        return _declared(decode(node.column, slots, rows), node)
    if k == UNION:
        return _assemble_union(node, decode(node.column, slots, rows),
                               [assemble(c, decode, slots, rows, check) for c in node.children])
    if k in (STRUCT, FIXED_SIZE_LIST):
        own = decode(node.column, slots, rows)
    else:  # the lengths of every list: the elements of a selected one start after all before it
        everything = decode(node.column, slots, None)
        own = everything if rows is None else everything.take(to_arrow(ColumnValues(rows), None, _LENGTHS[True]))
    # a field declared non-nullable is null only where a struct above it is: Arrow wants no
    # validity there (the struct's own says it)
    valid = validity(own) if own.null_count and node.row_slots else None
    n = len(own)
    if k == STRUCT:
        children = [assemble(c, decode, slots, rows, check) for c in node.children]
        if not children:  # (a struct without fields: its length and validity alone)
            bits = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
            return pa.Array.from_buffers(node.stored_type, n, [bits])
        return _with_validity(pa.StructArray.from_arrays(children, fields=[c.field for c in node.children]), valid)
    if k == FIXED_SIZE_LIST:
        size = node.size
        inner = None if rows is None else (rows[:, None] * size + np.arange(size)).ravel()
        values = assemble(node.children[0], decode, slots * size, inner, check)
        return _with_validity(pa.FixedSizeListArray.from_arrays(values, type=node.stored_type), valid)
    lengths = to_numpy(everything).astype(np.int64)  # (entries under NULL: 0 below)
    if everything.null_count:
        lengths[~validity(everything)] = 0
    if len(lengths) and int(lengths.min()) < 0:
        raise CorruptFileError(f"negative list length in column of {node.name!r}")
    total = int(lengths.sum())
    if len(lengths) and int(lengths.max()) > 2**62 // len(lengths):  # (the int64 sum may wrap: exact)
        total = sum(int(x) for x in lengths)
    if k != LARGE_LIST and total > np.iinfo(np.int32).max:
        raise CorruptFileError(f"list lengths of {node.name!r} add up to {total}, beyond 32-bit offsets")
    if rows is None:
        inner, counts = None, lengths
    else:
        if check is None:
            raise TypeError("assemble: rows below a list need check (the element counts are checked before use)")
        check(node.children[0].column, total)  # (before the positions among them are made)
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
        keys = assemble(key, decode, total, inner, check)
        if keys.null_count:
            raise CorruptFileError(f"null map key in {node.name!r}")
        items = assemble(value, decode, total, inner, check)
        return _with_validity(pa.MapArray.from_arrays(offsets_arr, keys, items, type=node.stored_type), valid)
    values = assemble(node.children[0], decode, total, inner, check)
    cls = pa.LargeListArray if k == LARGE_LIST else pa.ListArray
    return _with_validity(cls.from_arrays(offsets_arr, values, type=node.stored_type), valid)


def _declared(arr: pa.Array, node: Node) -> pa.Array:
    """A leaf's values, without validity when its field is declared non-nullable."""
    if node.row_slots or not arr.null_count:
        return arr
    return pa.Array.from_buffers(arr.type, len(arr), [None, *arr.buffers()[1:]], 0, arr.offset)


def under_structs(arr: pa.Array, names) -> pa.Array:
    """The field reached from struct array ``arr`` through ``names``, NULL wherever a
    struct on the way is NULL (how a filter sees ``payload.user.id``)."""
    for name in names:
        if pa.types.is_run_end_encoded(arr.type):  # (a run_end_encoded struct: its slots decoded)
            arr = decode_runs(arr)
        arr = struct_fields(arr)[arr.type.get_field_index(name)]  # (NULL where the struct is)
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


def filter_columns(nodes) -> list[tuple[str, int]]:
    """Physical columns a filter may name, ``(dotted path, column)``: top-level leaves
    and the leaves under structs only (their slots are rows; not under an extension
    type's struct: its fields are the extension's). A path may repeat (Arrow allows
    repeated field names); binding refuses a filter that names one of those. A
    run_end_encoded struct's leaves are, a slot per row."""
    out: list[tuple[str, int]] = []

    def walk(node: Node, path: str) -> None:
        if node.kind == LEAF:
            out.append((path, node.column))
        elif node.kind == STRUCT and node.ext is None and node.ree_ext is None:
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
            raise SchemaError(f"unknown column {name!r}; the columns are {[n.name for n in nodes]}")
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
    over a dotted path); :class:`SchemaError` when it names more than one field."""
    exact = [(i, ()) for i, n in enumerate(nodes) if n.name == name]
    found = exact or [(i, path) for i, n in enumerate(nodes) if name.startswith(n.name + ".")
                      for path in _struct_paths(n, name[len(n.name) + 1:])]
    if len(found) > 1:
        raise ambiguous_name(name, [n.name for n in nodes])
    return found[0] if found else None


def _struct_paths(node: Node, rest: str) -> list[tuple]:
    """Every path of child names under struct ``node`` that ``rest`` spells (an exact
    child name wins over a dotted path); more than one when names repeat. An extension
    type's struct is read whole (its fields are not projected apart)."""
    if node.kind != STRUCT or node.ext is not None or node.ree_ext is not None:
        return []
    exact = [(c.name,) for c in node.children if c.name == rest]
    if exact:
        return exact
    return [(c.name, *sub) for c in node.children if rest.startswith(c.name + ".")
            for sub in _struct_paths(c, rest[len(c.name) + 1:])]


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
        nodes.append(Node(f.name, f.nullable, LEAF, len(columns), leaf_type=ltype.to_arrow(),
                          metadata=field_metadata(f)))
        columns.append((f.name, ltype, f.nullable))
    return tuple(nodes), columns


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
