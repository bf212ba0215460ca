"""Gathers of arrays that hold run_end_encoded arrays inside them (in a struct's field,
a list's items, an extension's storage, a union's child, ...), which Arrow's ``take``
has no kernel for: :func:`take_runs` gathers them level by level, handing every part
without runs to Arrow. A run_end_encoded array gathered keeps one run per stretch of
picked slots that come from one of its runs (valid Arrow, not always maximal runs).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import InvalidDataError

__all__ = ["holds", "holds_runs", "holds_views", "is_view", "take_runs", "with_child_types"]


def holds(t: pa.DataType, test) -> bool:
    """Whether ``test`` holds for ``t`` or a type anywhere in it (its fields, an
    extension's storage, a dictionary's or run_end_encoded type's values)."""
    if test(t):
        return True
    if isinstance(t, pa.BaseExtensionType):
        return holds(t.storage_type, test)
    if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
        return holds(t.value_type, test)
    return any(holds(t.field(i).type, test) for i in range(t.num_fields))


def with_child_types(t: pa.DataType, fn) -> pa.DataType:
    """Nested ``t`` with ``fn`` applied to the type of each of its child fields (list
    views become lists); any other ``t`` as it is."""
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(fn(f.type)) for f in t])
    if pa.types.is_union(t):
        return _union_of(t, [f.with_type(fn(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(fn(t.key_type)), t.item_field.with_type(fn(t.item_type)),
                       keys_sorted=t.keys_sorted)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(fn(t.value_type)), t.list_size)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) \
            or pa.types.is_large_list_view(t):
        item = t.value_field.with_type(fn(t.value_type))
        large = pa.types.is_large_list(t) or pa.types.is_large_list_view(t)
        return pa.large_list(item) if large else pa.list_(item)
    return t


def _union_of(t: pa.DataType, fields) -> pa.DataType:
    """A union of ``t``'s mode and type codes over ``fields``."""
    return pa.union(list(fields), t.mode, list(t.type_codes))


def holds_runs(t: pa.DataType) -> bool:
    """Whether a run_end_encoded type is ``t`` or anywhere in it (remembered per type:
    asked at every gather)."""
    return _holds_remembered(t, pa.types.is_run_end_encoded, _HOLDS_RUNS)


def holds_views(t: pa.DataType) -> bool:
    """Whether a string or binary view type is ``t`` or anywhere in it (remembered per
    type: asked at every gather; Arrow has no take or filter kernel for views)."""
    return _holds_remembered(t, is_view, _HOLDS_VIEWS)


def is_view(t: pa.DataType) -> bool:
    """Whether ``t`` is a string or binary view type."""
    return pa.types.is_string_view(t) or pa.types.is_binary_view(t)


def _holds_remembered(t: pa.DataType, test, known: dict) -> bool:
    try:
        return known[t]
    except KeyError:
        pass
    except TypeError:  # (an unhashable type: a Python extension type)
        return holds(t, test)
    found = holds(t, test)
    if len(known) < 4096:
        known[t] = found
    return found


_HOLDS_RUNS: dict = {}
_HOLDS_VIEWS: dict = {}


def take_runs(arr: pa.Array, indices: np.ndarray, nulls: np.ndarray | None = None) -> pa.Array:
    """The slots ``indices`` (int64, each within ``arr``) of ``arr``, of any type, as an
    array of ``arr``'s type; NULL where ``nulls`` (bools; there ``indices`` may be any
    slot), as Arrow's take makes of a NULL index."""
    t = arr.type
    if nulls is not None and not nulls.any():
        nulls = None
    if not holds_runs(t):
        picked = _int64_array(indices) if nulls is None else pa.array(indices, pa.int64(), mask=nulls)
        return _arrow_take(arr, picked)
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, take_runs(arr.storage, indices, nulls))
    if pa.types.is_run_end_encoded(t):
        return _take_from_runs(arr, indices, nulls)
    if pa.types.is_dictionary(t):
        return pa.DictionaryArray.from_arrays(take_runs(arr.indices, indices, nulls), arr.dictionary,
                                              ordered=t.ordered)
    if pa.types.is_union(t):
        return _take_union(arr, indices, nulls)
    mask = _mask(arr, indices, nulls)
    n = len(indices)
    if pa.types.is_struct(t):
        children = [take_runs(arr.field(i), indices, nulls) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        items = (indices[:, None] * size + np.arange(size, dtype=np.int64)).ravel()
        values = take_runs(arr.values.slice(arr.offset * size, len(arr) * size), items)
        return pa.FixedSizeListArray.from_arrays(values, type=t, mask=mask)
    # list, large_list, map: the items of the picked lists, in order (offsets index arr.values)
    offsets = _ints(arr.offsets).astype(np.int64)
    starts, stops = offsets[indices], offsets[indices + 1]
    lengths = stops - starts
    if nulls is not None:
        lengths[nulls] = 0
    new_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    items = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(int(new_offsets[-1]), dtype=np.int64)
    values = take_runs(arr.values, items)
    width = np.int64 if pa.types.is_large_list(t) else np.int32
    offs = pa.array(new_offsets.astype(width))
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(offs, values.field(0), values.field(1), type=t, mask=mask)
    cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
    return cls.from_arrays(offs, values, type=t, mask=mask)


def _mask(arr: pa.Array, indices: np.ndarray, nulls: np.ndarray | None) -> pa.Array | None:
    """True at each picked slot that is NULL, or where ``nulls`` (None: no NULL)."""
    if not arr.null_count and nulls is None:
        return None
    out = ~_validity(arr)[indices] if arr.null_count else np.zeros(len(indices), bool)
    return _bool_array(out | nulls if nulls is not None else out)


def _take_from_runs(arr: pa.Array, indices: np.ndarray, nulls: np.ndarray | None) -> pa.Array:
    """``take_runs`` of a run_end_encoded ``arr``: a run per stretch of picked slots
    from one of its runs (a NULL slot's: NULL values), their values gathered."""
    t = arr.type
    ends = _ints(arr.run_ends).astype(np.int64)
    physical = np.searchsorted(ends, indices + arr.offset, side="right")
    if nulls is not None:
        physical[nulls] = -1  # (a stretch of its own)
    if len(indices):
        cut = np.flatnonzero(np.diff(physical)) + 1
        firsts = np.concatenate(([0], cut))
        run_ends = np.concatenate((cut, [len(indices)]))
    else:
        firsts = run_ends = np.zeros(0, np.int64)
    value_nulls = None if nulls is None else nulls[firsts]
    picked = np.maximum(physical[firsts], 0).astype(np.int64)
    values = take_runs(arr.values, picked, value_nulls)
    return pa.RunEndEncodedArray.from_arrays(pa.array(run_ends.astype(np.int64)).cast(t.run_end_type), values,
                                             type=t)


def _take_union(arr: pa.Array, indices: np.ndarray, nulls: np.ndarray | None) -> pa.Array:
    """``take_runs`` of a union: its type codes gathered; a sparse union's children at
    the same slots, a dense union's each at the offsets of the picked slots choosing it
    (a NULL slot: the child it chose NULL there)."""
    t = arr.type
    n, off = len(indices), arr.offset
    bufs = arr.buffers()
    codes = np.frombuffer(bufs[1], np.int8, count=off + len(arr))[off:][indices] if len(arr) else np.zeros(0, np.int8)
    codes = np.ascontiguousarray(codes)
    if t.mode == "sparse":
        children = [take_runs(arr.field(i), indices, nulls) for i in range(t.num_fields)]
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(codes)], 0, 0, children)
    offsets = np.frombuffer(bufs[2], np.int32, count=off + len(arr))[off:][indices].astype(np.int64) if len(arr) \
        else np.zeros(0, np.int64)
    new_offsets = np.zeros(n, np.int32)
    children = []
    for i, code in enumerate(t.type_codes):
        chosen = codes == code
        new_offsets[chosen] = np.arange(int(chosen.sum()), dtype=np.int32)
        children.append(take_runs(arr.field(i), offsets[chosen], None if nulls is None else nulls[chosen]))
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(codes), pa.py_buffer(new_offsets)], 0, 0, children)


def concat_runs(arrays: list, t: pa.DataType) -> pa.Array:
    """``arrays`` (of type ``t``) as one array, also where ``t`` holds run_end_encoded
    types, which Arrow's concatenation fails on (no builder for extension values, slices
    past the end below unions): level by level, each run_end_encoded part's runs cut to
    its window and their ends moved on."""
    if not holds_runs(t):
        return pa.concat_arrays(arrays) if arrays else pa.array([], t)
    parts = [a for a in arrays if len(a)]
    if not parts:
        return arrays[0].slice(0, 0) if arrays else _empty(t)
    if len(parts) == 1:
        return parts[0]
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, concat_runs([a.storage for a in parts], t.storage_type))
    if pa.types.is_run_end_encoded(t):
        return _concat_from_runs(parts, t)
    if pa.types.is_dictionary(t):  # (the dictionaries one after the other, the indices moved on)
        starts = np.cumsum([0] + [len(a.dictionary) for a in parts[:-1]])
        indices = pa.concat_arrays([pa.array(_shifted(a.indices, int(k)), t.index_type)
                                    for a, k in zip(parts, starts)])
        return pa.DictionaryArray.from_arrays(indices, concat_runs([a.dictionary for a in parts], t.value_type),
                                              ordered=t.ordered)
    if pa.types.is_union(t):
        return _concat_union(parts, t)
    mask = _joined_nulls(parts)
    if pa.types.is_struct(t):
        children = [concat_runs([a.field(i) for a in parts], f.type) for i, f in enumerate(t)]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        values = concat_runs([a.values.slice(a.offset * size, len(a) * size) for a in parts], t.value_type)
        return pa.FixedSizeListArray.from_arrays(values, type=t, mask=mask)
    offsets, values, base = [np.zeros(1, np.int64)], [], 0
    for a in parts:
        offs = _ints(a.offsets).astype(np.int64)
        values.append(a.values.slice(int(offs[0]), int(offs[-1] - offs[0])))
        offsets.append(offs[1:] - offs[0] + base)
        base += int(offs[-1] - offs[0])
    item_type = pa.struct([t.key_field, t.item_field]) if pa.types.is_map(t) else t.value_type
    joined = concat_runs(values, item_type)
    width = np.int64 if pa.types.is_large_list(t) else np.int32
    offs = pa.array(np.concatenate(offsets).astype(width))
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(offs, joined.field(0), joined.field(1), type=t, mask=mask)
    cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
    return cls.from_arrays(offs, joined, type=t, mask=mask)


def _empty(t: pa.DataType) -> pa.Array:
    """An empty array of ``t`` (any type)."""
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, _empty(t.storage_type))
    return pa.array([], t)


def _shifted(indices: pa.Array, by: int) -> np.ndarray:
    """Dictionary ``indices`` plus ``by``, NULL where they are (a masked numpy array)."""
    values = _ints(indices).astype(np.int64) + by
    return np.ma.masked_array(values, ~_validity(indices)) if indices.null_count else values


def _joined_nulls(parts: list) -> pa.Array | None:
    """True at each NULL slot of ``parts`` joined (None: no NULL)."""
    if not any(a.null_count for a in parts):
        return None
    return _bool_array(~np.concatenate([_validity(a) for a in parts]))


def _concat_from_runs(parts: list, t: pa.DataType) -> pa.Array:
    ends, values, base = [], [], 0
    for c in parts:
        n = len(c)
        runs = _ints(c.run_ends).astype(np.int64)
        first = int(np.searchsorted(runs, c.offset, side="right"))
        last = int(np.searchsorted(runs, c.offset + n - 1, side="right"))
        ends.append(np.minimum(runs[first:last + 1], c.offset + n) - c.offset + base)
        values.append(c.values.slice(first, last + 1 - first))
        base += n
    run_ends = np.concatenate(ends)
    if base > np.iinfo(t.run_end_type.to_pandas_dtype()).max:
        raise InvalidDataError(f"{base} slots in one block, more than {t} addresses: write smaller blocks "
                               f"(block_rows)")
    run_ends = pa.array(run_ends).cast(t.run_end_type)
    return pa.RunEndEncodedArray.from_arrays(run_ends, concat_runs(values, t.value_type), type=t)


def _concat_union(parts: list, t: pa.DataType) -> pa.Array:
    """A union's type codes joined; a sparse union's children joined at the same slots,
    a dense union's whole children joined with the offsets moved on."""
    codes = np.ascontiguousarray(np.concatenate([
        np.frombuffer(a.buffers()[1], np.int8, count=a.offset + len(a))[a.offset:] for a in parts]))
    n = len(codes)
    if t.mode == "sparse":
        children = [concat_runs([a.field(i) for a in parts], f.type) for i, f in enumerate(t)]
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(codes)], 0, 0, children)
    offsets, seen = [], np.zeros(t.num_fields, np.int64)
    index = {c: i for i, c in enumerate(t.type_codes)}
    lookup = np.zeros(128, np.int64)
    for c, i in index.items():
        lookup[c] = i
    for a in parts:
        own = np.frombuffer(a.buffers()[2], np.int32, count=a.offset + len(a))[a.offset:].astype(np.int64)
        part_codes = np.frombuffer(a.buffers()[1], np.int8, count=a.offset + len(a))[a.offset:]
        offsets.append(own + seen[lookup[part_codes]])
        seen += [len(a.field(i)) for i in range(t.num_fields)]
    children = [concat_runs([a.field(i) for a in parts], f.type) for i, f in enumerate(t)]
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(codes), pa.py_buffer(
        np.concatenate(offsets).astype(np.int32))], 0, 0, children)


# ---------------------------------------------------------------------- buffers (no pandas, no upward import)
def _ints(arr: pa.Array) -> np.ndarray:
    """The values of an integer array without NULLs (run ends, offsets), in its window."""
    dtype = np.dtype(f"int{arr.type.bit_width}")
    return np.frombuffer(arr.buffers()[1], dtype, count=arr.offset + len(arr))[arr.offset:]


def _validity(arr: pa.Array) -> np.ndarray:
    """True where ``arr`` (in its window) is not NULL."""
    n = len(arr)
    if not arr.null_count:
        return np.ones(n, bool)
    bits = np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), count=arr.offset + n, bitorder="little")
    return bits[arr.offset:].astype(bool)


def _bool_array(values: np.ndarray) -> pa.Array:
    bits = np.packbits(np.asarray(values, bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])


def _int64_array(values: np.ndarray) -> pa.Array:
    data = np.ascontiguousarray(values, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def _arrow_take(arr: pa.Array, indices: pa.Array) -> pa.Array:
    """Arrow's take of an array holding no runs (:func:`rcfmt.schema.arrow_io.take`'s
    care for sliced fixed_size_lists of fixed_size_lists: copied to offset 0 first)."""
    if arr.offset and _holds_fixed_lists(arr.type):
        arr = pa.concat_arrays([arr])
    return arr.take(indices)


def _holds_fixed_lists(t: pa.DataType) -> bool:
    return holds(t, pa.types.is_fixed_size_list)
