"""Run-end and dictionary encodings of arrays of any type, nested ones included: rcfmt
stores run_end_encoded nested fields decoded, a slot per row, and encodes them again on
read (docs/FORMAT.md §3a "Wrappers"); it encodes an extension's declared storage again
the same way (:func:`rcfmt.schema.nested_storage.encode_as`).

- :func:`decode_runs`: the values of a run_end_encoded array, one per slot (any value
  type: a gather by run, where Arrow's ``run_end_decode`` has no kernel for unions);
- :func:`encode_runs`: maximal runs, as Arrow's ``run_end_encode`` finds them (within a
  nested value it takes no NaN for equal to another); for values it has no kernel for
  (unions, extensions inside structs, ...), rcfmt finds the same runs itself;
- :func:`slot_keys`: an exact, hashable key per slot (values compared bit for bit), on
  which both the runs it finds itself and the dictionaries of nested values rest.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import InvalidDataError
from .arrow_io import from_arrow, take, to_numpy, validity
from .types import PhysicalKind, logical_type_from_arrow

__all__ = ["decode_runs", "encode_runs", "slot_keys", "dictionary_encode", "type_ids", "own_validity"]


def type_ids(arr: pa.Array) -> pa.Array:
    """The type code of every slot of union ``arr`` (int8, no NULLs)."""
    n = len(arr)
    codes = np.frombuffer(arr.buffers()[1], np.int8, count=arr.offset + n)[arr.offset:] if n else np.zeros(0, np.int8)
    return pa.array(codes, pa.int8())


def own_validity(arr: pa.Array) -> pa.Buffer | None:
    """``arr``'s validity as a bitmap from bit 0 (None without NULLs)."""
    if not arr.null_count:
        return None
    return pa.py_buffer(np.packbits(validity(arr), bitorder="little"))


# ---------------------------------------------------------------------- runs
def decode_runs(arr: pa.Array) -> pa.Array:
    """The values of run_end_encoded ``arr``, one per slot (of any value type). Run ends
    Arrow's validation refuses (not increasing, short of the array, more than the
    values) raise :class:`InvalidDataError`."""
    n, off = len(arr), arr.offset
    values = arr.values  # (the physical values: ``arr`` holds its window)
    if n == 0:
        return values.slice(0, 0)
    ends = to_numpy(arr.run_ends).astype(np.int64)
    if not len(ends) or len(ends) > len(values) or int(ends[0]) <= 0 or (len(ends) > 1 and (np.diff(ends) <= 0).any()) \
            or int(ends[-1]) < off + n:
        raise InvalidDataError("run ends that are not increasing, or short of the array, or more than its values")
    picked = np.searchsorted(ends, np.arange(off, off + n, dtype=np.int64), side="right")
    return take(values, pa.array(picked, pa.int64()))


def encode_runs(arr: pa.Array, run_end_type: pa.DataType) -> pa.Array:
    """``arr`` (any type) as a run_end_encoded array of ``run_end_type``: maximal runs of
    equal slots (Arrow's ``run_end_encode``; an extension's runs are its storage's)."""
    if isinstance(arr.type, pa.BaseExtensionType):
        runs = encode_runs(arr.storage, run_end_type)
        return pa.RunEndEncodedArray.from_arrays(runs.run_ends, pa.ExtensionArray.from_storage(arr.type, runs.values))
    import pyarrow.compute as pc

    try:
        return pc.run_end_encode(arr, run_end_type=run_end_type)
    except pa.ArrowNotImplementedError:  # (unions, extensions below structs, ...): the same runs, found here
        pass
    n = len(arr)
    keys = slot_keys(arr, runs=True)
    starts = [0] + [i for i in range(1, n) if keys[i] != keys[i - 1]] if n else []
    ends = np.asarray(starts[1:] + [n] if n else [], np.int64)
    values = take(arr, pa.array(np.asarray(starts, np.int64), pa.int64()))
    return pa.RunEndEncodedArray.from_arrays(pa.array(ends).cast(run_end_type), values)


# ---------------------------------------------------------------------- dictionaries
def dictionary_encode(arr: pa.Array, t: pa.DictionaryType) -> pa.Array:
    """``arr`` (nested values) as a dictionary array of type ``t`` whose value type is
    ``arr``'s: its distinct values in order of first use (NULL slots NULL indices);
    ``ArrowInvalid`` when they are more than ``t``'s index type addresses."""
    keys = slot_keys(arr)
    first: dict = {}
    picked = np.zeros(len(arr), np.int64)
    for i, key in enumerate(keys):
        if key is not None:
            picked[i] = first.setdefault(key, i)
    entries = np.fromiter(first.values(), np.int64, len(first))
    codes = np.searchsorted(entries, picked)  # (entries ascend: each slot's entry number)
    valid = np.fromiter((k is not None for k in keys), bool, len(keys))
    indices = pa.array(codes, pa.int64(), mask=None if valid.all() else ~valid).cast(t.index_type)
    return pa.DictionaryArray.from_arrays(indices, take(arr, pa.array(entries, pa.int64())), ordered=t.ordered)


# ---------------------------------------------------------------------- keys
def slot_keys(arr: pa.Array, runs: bool = False) -> list:
    """A hashable key per slot of ``arr`` (any type), equal exactly when the slots hold the
    same value: NULL slots ``None``, flat values by their bits (a NaN by its payload,
    -0.0 apart from 0.0), nested ones by their parts; a union's by its type code and its
    value. ``runs``: a NaN equals nothing, not even itself (how Arrow's run_end_encode
    compares the values inside nested ones)."""
    t = arr.type
    n = len(arr)
    if isinstance(t, pa.BaseExtensionType):
        return slot_keys(arr.storage, runs)
    if pa.types.is_dictionary(t):
        return slot_keys(arr.dictionary_decode(), runs)
    if pa.types.is_run_end_encoded(t):
        return slot_keys(decode_runs(arr), runs)
    if pa.types.is_null(t):
        return [None] * n
    if pa.types.is_union(t):
        codes = to_numpy(type_ids(arr)).tolist()
        index = {c: i for i, c in enumerate(t.type_codes)}
        children = [slot_keys(arr.field(i), runs) for i in range(t.num_fields)]
        if t.mode == "sparse":
            return [(c, children[index[c]][i]) for i, c in enumerate(codes)]
        offsets = np.frombuffer(arr.buffers()[2], np.int32, count=arr.offset + n)[arr.offset:].tolist() if n else []
        return [(c, children[index[c]][o]) for c, o in zip(codes, offsets)]
    if pa.types.is_struct(t):
        parts = [slot_keys(arr.field(i), runs) for i in range(t.num_fields)]
        keys = list(zip(*parts)) if parts else [()] * n
    elif pa.types.is_fixed_size_list(t):
        size = t.list_size
        items = slot_keys(arr.values.slice(arr.offset * size, n * size), runs)
        keys = [tuple(items[i * size:(i + 1) * size]) for i in range(n)]
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        offsets = to_numpy(arr.offsets).astype(np.int64).tolist()
        items = slot_keys(arr.values, runs)
        keys = [tuple(items[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
    else:
        keys = _flat_keys(arr, runs)
    if arr.null_count:
        keys = [k if v else None for k, v in zip(keys, validity(arr).tolist())]
    return keys


def _flat_keys(arr: pa.Array, runs: bool) -> list:
    """The bytes of each slot of a flat array, as rcfmt stores it (NULL slots: any)."""
    n = len(arr)
    ltype = logical_type_from_arrow(arr.type)
    values, _ = from_arrow(arr, ltype)
    storage = ltype.storage
    if storage.kind == PhysicalKind.BOOL:
        return np.asarray(values.values, bool).tolist()
    if storage.kind == PhysicalKind.VARBINARY:
        data = np.asarray(values.values, np.uint8).tobytes()
        offsets = np.asarray(values.offsets, np.int64).tolist()
        return [data[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    raw = np.ascontiguousarray(values.values)
    width = raw.dtype.itemsize
    data = raw.tobytes()
    keys = [data[i * width:(i + 1) * width] for i in range(n)]
    if runs and storage.is_float:
        for i in np.flatnonzero(np.isnan(raw)).tolist():
            keys[i] = object()  # (equal to nothing but itself, and never compared with itself)
    return keys
