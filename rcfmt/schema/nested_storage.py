"""Arrays of nested types as rcfmt stores them (docs/FORMAT.md §3a): the *storage type*
of an Arrow type -- dictionaries as their values, of any type and at any depth; string
and binary views as their offset forms; list views as lists -- and its arrays converted
to it (:func:`to_storage`), which :mod:`rcfmt.schema.nested` then shreds into columns.
An extension type and a run_end_encoded one keep their type here (their node records
them): the shredder decodes them. :func:`encode_as` goes back, from an array of a
storage type to one of a type it stores (an extension's declared storage).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .values import ColumnValues
from ..errors import InvalidDataError
from .annotated import encoded
from .arrow_io import bool_array, take, to_arrow, to_numpy, validity
from .gather import is_view, with_child_types
from .nested_runs import decode_runs, dictionary_encode, encode_runs, own_validity, type_ids
from .types import LogicalType, same_type

__all__ = ["is_nested", "is_nested_extension", "storage_type", "without_runs", "to_storage", "type_ids", "encode_as",
           "views_as_offsets"]

_LENGTHS = {False: LogicalType("int32"), True: LogicalType("int64")}
_VIEWS = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def is_nested(t: pa.DataType) -> bool:
    """Whether ``t`` (a storage type: :func:`storage_type`) is stored as a nested field
    (docs/FORMAT.md §3a): a struct, list, map or union, or an extension or
    run_end_encoded type over one (over the storage type of one: a dictionary of structs)."""
    return pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t) \
        or pa.types.is_fixed_size_list(t) or pa.types.is_map(t) or pa.types.is_union(t) \
        or is_nested_extension(t) or (pa.types.is_run_end_encoded(t) and is_nested(storage_type(t.value_type)))


def is_nested_extension(t: pa.DataType) -> bool:
    """Whether ``t`` is an extension type over a nested storage type (or over one whose
    storage type is nested: a dictionary of structs)."""
    return isinstance(t, pa.BaseExtensionType) and is_nested(storage_type(t.storage_type))


def storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` as rcfmt stores it: dictionaries as their values (of any type), views as
    offsets, inside nested types and run_end_encoded values too."""
    if pa.types.is_dictionary(t):
        return storage_type(t.value_type)
    if pa.types.is_run_end_encoded(t):
        values = storage_type(t.value_type)
        if pa.types.is_run_end_encoded(values):  # (runs of runs: one level, the outer run ends)
            values = values.value_type
        elif is_nested(values):  # (runs inside run-end-encoded nested values: their values, a slot each)
            values = without_runs(values)
        return pa.run_end_encoded(t.run_end_type, values)
    if isinstance(t, pa.BaseExtensionType):  # (kept: its node or schema entry records it; shredding decodes it)
        return t
    if t in _VIEWS:
        return _VIEWS[t]
    return with_child_types(t, storage_type)


def without_runs(t: pa.DataType) -> pa.DataType:
    """``t`` with every run_end_encoded type in its fields replaced by its values (not
    inside extension types, which keep their storage)."""
    if pa.types.is_run_end_encoded(t):
        return without_runs(t.value_type)
    return t if isinstance(t, pa.BaseExtensionType) else with_child_types(t, without_runs)


def _rebuilt(t: pa.DataType) -> bool:
    """Whether :func:`to_storage` rebuilds arrays of ``t`` (somewhere in it: list views,
    dictionaries of nested values, run_end_encoded dictionaries), which Arrow's cast
    cannot make into their storage type."""
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return True
    if pa.types.is_dictionary(t):  # (Arrow decodes no dictionary of views: no take kernel for them)
        return is_nested(t.value_type) or _rebuilt(t.value_type) or is_view(t.value_type)
    if pa.types.is_run_end_encoded(t):  # (Arrow casts no run_end_encoded array to another type)
        return True
    if isinstance(t, pa.BaseExtensionType):
        return False
    if pa.types.is_union(t):  # (Arrow casts no union: one with a child stored otherwise is rebuilt)
        return any(_rebuilt(f.type) for f in t) or not same_type(storage_type(t), t)
    if pa.types.is_struct(t):
        return any(_rebuilt(f.type) for f in t)
    if pa.types.is_map(t):
        return _rebuilt(t.key_type) or _rebuilt(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _rebuilt(t.value_type)
    return False


def to_storage(arr, t: pa.DataType, rows: bool = True):
    """``arr`` (an Array or ChunkedArray of a nested type) as ``t``, the type
    :func:`storage_type` makes of its type. List views (anywhere in the tree) become
    lists here -- pyarrow's cast from list_view to list builds arrays one offset short,
    which fail validation --, dictionaries of nested values their values (Arrow's cast
    has no kernel for them; each chunk's dictionary gathered by its indices, then
    stored as their type is) and run_end_encoded dictionaries run_end_encoded values;
    the rest (other dictionaries, string views, offset widths) goes to Arrow's cast.
    Views outside their values, dictionary indices outside their dictionary, or more
    elements than a list's 32-bit offsets hold, raise :class:`InvalidDataError` (with
    the row, when ``rows``: the slots of ``arr`` are rows)."""
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
    if same_type(arr.type, t):
        return arr
    src = arr.type
    if pa.types.is_run_end_encoded(src) and not pa.types.is_run_end_encoded(t):  # (runs inside runs)
        return to_storage(decode_runs(arr), t, rows)
    if not _rebuilt(src) and not pa.types.is_struct(src):
        return arr.cast(t)  # (structs child by child, below: Arrow's cast refuses a NULL under a NULL
        # parent in a non-nullable child -- a dictionary's NULL index gathers one -- though it is valid)
    if pa.types.is_dictionary(src):
        return to_storage(_dictionary_values(arr, rows), t, rows)
    if pa.types.is_run_end_encoded(src):  # (the physical values; ``arr`` holds its window)
        values = arr.values
        if pa.types.is_run_end_encoded(values.type):  # (runs of runs: the inner ones undone)
            values = decode_runs(values)
        values = to_storage(values, t.value_type, False)
        return pa.RunEndEncodedArray.from_arrays(arr.run_ends, values).slice(arr.offset, len(arr))
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
        return pa.MapArray.from_arrays(_own_offsets(arr), keys, items, type=t, mask=mask)
    if pa.types.is_fixed_size_list(src):
        size = src.list_size
        values = to_storage(arr.values.slice(arr.offset * size, len(arr) * size), t.value_type, False)
        return pa.FixedSizeListArray.from_arrays(values, type=t, mask=mask)
    cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray  # a list of list views
    return cls.from_arrays(_own_offsets(arr), to_storage(arr.values, t.value_type, False), type=t, mask=mask)


def _own_offsets(arr: pa.Array) -> pa.Array:
    """The offsets of list or map ``arr`` in a buffer of their own (``from_arrays`` with a
    mask refuses the offsets of a sliced array)."""
    offsets = arr.offsets
    if not offsets.offset:
        return offsets
    large = pa.types.is_int64(offsets.type)
    return to_arrow(ColumnValues(np.ascontiguousarray(to_numpy(offsets))), None, _LENGTHS[large])


def _dictionary_values(arr: pa.Array, rows: bool) -> pa.Array:
    """The values of dictionary array ``arr``, a slot per index (NULL where the index or
    the entry it picks is NULL)."""
    indices, n = arr.indices, len(arr.dictionary)
    codes = to_numpy(indices).astype(np.int64)
    bad = (codes < 0) | (codes >= n)
    if indices.null_count:
        bad &= validity(indices)
    if bad.any():
        at = int(np.argmax(bad))
        raise InvalidDataError(f"dictionary index {codes[at]} outside its dictionary of {n} values"
                               + ("" if rows else f" (slot {at} of its level)"), row=at if rows else None)
    return take(views_as_offsets(arr.dictionary), indices)


def views_as_offsets(arr):
    """``arr`` (an array or chunked array) with string or binary views as their offset
    form, also as the values of a dictionary array (Arrow has no take kernel for views,
    so decodes no dictionary of them); any other ``arr`` as it is."""
    t = arr.type
    if pa.types.is_dictionary(t) and is_view(t.value_type):
        kind = pa.dictionary(t.index_type, _VIEWS[t.value_type], t.ordered)
        if isinstance(arr, pa.ChunkedArray):
            return pa.chunked_array([views_as_offsets(c) for c in arr.chunks], kind)
        return pa.DictionaryArray.from_arrays(arr.indices, arr.dictionary.cast(kind.value_type), ordered=t.ordered)
    if is_view(t):
        return arr.cast(_VIEWS[t])
    return arr


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


def _union_children(arr: pa.Array) -> list[pa.Array]:
    """The children of union ``arr`` as Arrow holds them (a sparse union's sliced to its
    slots; a dense union's whole)."""
    return [arr.field(i) for i in range(arr.type.num_fields)]


def _union_like(arr: pa.Array, t: pa.DataType, children: list[pa.Array]) -> pa.Array:
    """A union of type ``t`` with ``arr``'s type codes (and offsets) over ``children``."""
    n = len(arr)
    bufs = arr.buffers()
    codes = pa.py_buffer(np.ascontiguousarray(to_numpy(type_ids(arr))))
    if t.mode == "sparse":
        return pa.Array.from_buffers(t, n, [None, codes], 0, 0, children)
    offsets = np.frombuffer(bufs[2], np.int32, count=arr.offset + n)[arr.offset:] if n else np.zeros(0, np.int32)
    return pa.Array.from_buffers(t, n, [None, codes, pa.py_buffer(np.ascontiguousarray(offsets))], 0, 0, children)


def _null_mask(arr: pa.Array) -> pa.Array:
    """Boolean array, True where ``arr`` is NULL (from its validity bitmap: no compute
    kernel, so no ``pyarrow.compute`` import on a first read)."""
    return bool_array(~validity(arr))


# ---------------------------------------------------------------------- back from storage
def encode_as(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """``arr`` (of a type whose storage type, :func:`storage_type`, is ``arr``'s; parts of
    it may already be of ``t``'s) as an array of ``t``: dictionaries encoded again (their
    distinct values in order of first use), views and list views made again,
    run_end_encoded arrays in maximal runs, extensions over their storage. Raises
    ``ArrowInvalid`` when a dictionary's values are more than its index type addresses."""
    src = arr.type
    if same_type(src, t):
        return arr
    n = len(arr)
    if isinstance(t, pa.BaseExtensionType):
        storage = arr.storage if isinstance(src, pa.BaseExtensionType) else arr
        return pa.ExtensionArray.from_storage(t, encode_as(storage, t.storage_type))
    if pa.types.is_dictionary(t):
        if not is_nested(storage_type(t.value_type)):
            return encoded(arr, t)
        coded = dictionary_encode(arr, t)
        return pa.DictionaryArray.from_arrays(coded.indices, encode_as(coded.dictionary, t.value_type),
                                              ordered=t.ordered)
    if pa.types.is_run_end_encoded(t):
        runs = arr if pa.types.is_run_end_encoded(src) else encode_runs(arr, t.run_end_type)
        values = encode_as(runs.values, t.value_type)
        return pa.RunEndEncodedArray.from_arrays(runs.run_ends, values, type=t).slice(runs.offset, len(runs))
    if pa.types.is_struct(t):
        children = [encode_as(arr.field(i), t.field(i).type) for i in range(t.num_fields)]
        return pa.Array.from_buffers(t, n, [own_validity(arr)], children=children)
    if pa.types.is_union(t):
        return _union_like(arr, t, [encode_as(c, f.type) for c, f in zip(_union_children(arr), t)])
    if pa.types.is_map(t):
        entries = arr.values
        keys, items = encode_as(entries.field(0), t.key_type), encode_as(entries.field(1), t.item_type)
        entries = pa.StructArray.from_arrays([keys, items], fields=[t.key_field, t.item_field])
        return pa.Array.from_buffers(t, n, arr.buffers()[:2], offset=arr.offset, children=[entries])
    if pa.types.is_fixed_size_list(t):
        values = encode_as(arr.values, t.value_type)
        return pa.Array.from_buffers(t, n, arr.buffers()[:1], offset=arr.offset, children=[values])
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        offsets = to_numpy(arr.offsets).astype(np.int64)
        width = np.int64 if pa.types.is_large_list_view(t) else np.int32
        cls = pa.LargeListViewArray if pa.types.is_large_list_view(t) else pa.ListViewArray
        return cls.from_arrays(pa.array(offsets[:-1].astype(width)), pa.array(np.diff(offsets).astype(width)),
                               encode_as(arr.values, t.value_type), type=t,
                               mask=_null_mask(arr) if arr.null_count else None)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = encode_as(arr.values, t.value_type)
        return pa.Array.from_buffers(t, n, arr.buffers()[:2], offset=arr.offset, children=[values])
    return encoded(arr, t)
