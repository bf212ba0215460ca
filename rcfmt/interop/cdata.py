"""Arrow shapes pyarrow's Python API cannot hand over, reached through the Arrow C data
interface (pyarrow and ctypes alone; no other rcfmt module).

**Interval types** (``month_interval``, type id 21: an int32 count of months;
``day_time_interval``, id 22: 8 bytes ``{int32 days, int32 milliseconds}``). pyarrow 26
reads them from IPC files and C data producers (nanoarrow, DuckDB, ...) into Tables,
RecordBatches and ChunkedArrays whose schemas hold them, but has no Python class for an
*Array* of either: ``column.chunk(i)``, ``RecordBatch.column(i)``, ``combine_chunks``,
scalars raise ``KeyError``, and compute has no kernels for them. Whole tables and
batches work (``slice``, ``take``, ``equals``, ``concat_tables``, IPC, the C stream).
So rcfmt converts them at the table/batch level:

- :func:`storage_type` / :func:`storage_schema`: a type or schema with every interval
  type, at any depth (struct fields, list/map/fixed-size-list items, dictionary values,
  run-end-encoded values), replaced by its same-layout *storage* type -- ``int32`` for
  month_interval, ``int64`` for day_time_interval (the 8 bytes read as one
  little-endian int64: days in the low 32 bits, milliseconds, signed, in the high 32);
- :func:`relabel`: a RecordBatch or Table with the same buffers under another schema
  whose types have the same physical layout (interval <-> storage), zero-copy: the
  batch is exported as an ``ArrowArray`` and imported again with the other schema,
  which pyarrow validates on import (buffer counts and sizes);
- :func:`month_interval` / :func:`day_time_interval`: the DataType objects (made once,
  on first use, by importing a C ``ArrowSchema`` of format ``"tiM"`` / ``"tiD"``).

Everything returns its input unchanged (the same object) when no interval type is in
it, so tables without them pay one walk over their schema's types.

**Extension types** whose serialized metadata pyarrow does not expose in Python
(C++ extensions such as ``arrow.fixed_shape_tensor`` or ``arrow.opaque``):
:func:`extension_metadata` exports the type as a C ``ArrowSchema`` and reads its
``ARROW:extension:name`` / ``ARROW:extension:metadata`` back (the schema is released
after).
"""
from __future__ import annotations

import ctypes
import struct as _struct
import threading

import pyarrow as pa

__all__ = ["MONTH_INTERVAL_ID", "DAY_TIME_INTERVAL_ID", "month_interval", "day_time_interval", "is_interval",
           "has_intervals", "storage_type", "storage_schema", "relabel", "to_storage", "extension_metadata"]

MONTH_INTERVAL_ID = 21
DAY_TIME_INTERVAL_ID = 22
_INTERVAL_IDS = (MONTH_INTERVAL_ID, DAY_TIME_INTERVAL_ID)


# ------------------------------------------------------------------ the C structs
class _ArrowSchema(ctypes.Structure):
    pass


_RELEASE_SCHEMA = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))
_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]

_ARROW_ARRAY_SIZE = 80  # struct ArrowArray: 10 pointer-sized members


@_RELEASE_SCHEMA
def _release_own_schema(ptr):
    """The release callback of the ArrowSchema structs made here: they own nothing
    (their strings are kept alive by Python), so releasing marks them released."""
    ptr.contents.release = None


_TYPES: dict = {}
_TYPES_LOCK = threading.Lock()


def _interval_type(fmt: bytes) -> pa.DataType:
    t = _TYPES.get(fmt)
    if t is None:
        with _TYPES_LOCK:
            t = _TYPES.get(fmt)
            if t is None:
                fmt_buf = ctypes.create_string_buffer(fmt)
                c = _ArrowSchema()
                c.format = ctypes.cast(fmt_buf, ctypes.c_char_p)
                c.name = None
                c.metadata = None
                c.flags = 2  # ARROW_FLAG_NULLABLE
                c.n_children = 0
                c.children = None
                c.dictionary = None
                c.release = ctypes.cast(_release_own_schema, ctypes.c_void_p)
                c.private_data = None
                t = pa.DataType._import_from_c(ctypes.addressof(c))  # (moves the struct: released by pyarrow)
                _TYPES[fmt] = t
    return t


def month_interval() -> pa.DataType:
    """Arrow's ``month_interval`` type (int32 months)."""
    return _interval_type(b"tiM")


def day_time_interval() -> pa.DataType:
    """Arrow's ``day_time_interval`` type ({int32 days, int32 milliseconds})."""
    return _interval_type(b"tiD")


def is_interval(t: pa.DataType) -> bool:
    """Whether ``t`` itself is a month_interval or day_time_interval."""
    return t.id in _INTERVAL_IDS


_STORAGE = {MONTH_INTERVAL_ID: pa.int32(), DAY_TIME_INTERVAL_ID: pa.int64()}


def has_intervals(t) -> bool:
    """Whether an interval type is anywhere in ``t`` (a DataType, Field or Schema)."""
    if isinstance(t, pa.Schema):
        return any(has_intervals(f.type) for f in t)
    if isinstance(t, pa.Field):
        t = t.type
    if t.id in _INTERVAL_IDS:
        return True
    if isinstance(t, pa.BaseExtensionType):
        return has_intervals(t.storage_type)
    if pa.types.is_dictionary(t):
        return has_intervals(t.value_type)
    return any(has_intervals(t.field(i).type) for i in range(t.num_fields))


def storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every interval type in it replaced by its storage type (``t`` itself
    when it holds none)."""
    if not has_intervals(t):
        return t
    if t.id in _INTERVAL_IDS:
        return _STORAGE[t.id]
    if pa.types.is_dictionary(t):
        return pa.dictionary(t.index_type, storage_type(t.value_type), t.ordered)
    if pa.types.is_run_end_encoded(t):
        return pa.run_end_encoded(t.run_end_type, storage_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([_storage_field(f) for f in t])
    if pa.types.is_union(t):
        return pa.union([_storage_field(f) for f in t], t.mode, list(t.type_codes))
    if pa.types.is_map(t):
        return pa.map_(_storage_field(t.key_field), _storage_field(t.item_field), keys_sorted=t.keys_sorted)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(_storage_field(t.value_field), t.list_size)
    for test, make in ((pa.types.is_list, pa.list_), (pa.types.is_large_list, pa.large_list),
                       (pa.types.is_list_view, pa.list_view), (pa.types.is_large_list_view, pa.large_list_view)):
        if test(t):
            return make(_storage_field(t.value_field))
    raise TypeError(f"an interval type inside {t}, which rcfmt cannot relabel")


def _storage_field(f: pa.Field) -> pa.Field:
    return f.with_type(storage_type(f.type))


def storage_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every interval type replaced by its storage type (``schema``
    itself when it holds none)."""
    if not has_intervals(schema):
        return schema
    return pa.schema([_storage_field(f) for f in schema], metadata=schema.metadata)


def relabel(data, schema: pa.Schema):
    """``data`` (a RecordBatch or Table) under ``schema``, whose types have the same
    physical layout as ``data``'s (names and metadata may differ), zero-copy: each
    batch goes out through the C data interface and comes back with ``schema``'s types.
    pyarrow validates the import (a layout that does not fit raises ArrowInvalid)."""
    if isinstance(data, pa.Table):
        if data.schema.equals(schema, check_metadata=True):
            return data
        return pa.Table.from_batches([relabel(b, schema) for b in data.to_batches()], schema=schema)
    if data.schema.equals(schema, check_metadata=True):
        return data
    out = ctypes.create_string_buffer(_ARROW_ARRAY_SIZE)
    ptr = ctypes.addressof(out)
    data._export_to_c(ptr)  # (the array alone: the schema is the one given)
    return pa.RecordBatch._import_from_c(ptr, schema)  # (moves the struct: released with the new batch)


def to_storage(data):
    """``data`` (a RecordBatch or Table) with its interval types as storage types
    (``data`` itself when it holds none)."""
    schema = data.schema  # (a new object at each access)
    storage = storage_schema(schema)
    return data if storage is schema else relabel(data, storage)


# ------------------------------------------------------------------ extension metadata
def extension_metadata(t: pa.DataType) -> tuple[str, bytes] | None:
    """``(ARROW:extension:name, ARROW:extension:metadata)`` of an extension type as the
    C data interface exports it (None when the export carries no extension name). Works
    for extension types implemented in C++ whose metadata pyarrow does not expose."""
    c = _ArrowSchema()
    ptr = ctypes.addressof(c)
    t._export_to_c(ptr)
    try:
        pairs = _read_metadata(c.metadata)
    finally:
        if c.release:
            _RELEASE_SCHEMA(c.release)(ctypes.pointer(c))
    name = pairs.get(b"ARROW:extension:name")
    if name is None:
        return None
    return name.decode("utf-8"), pairs.get(b"ARROW:extension:metadata", b"")


def _read_metadata(address: int | None) -> dict[bytes, bytes]:
    """The key-value pairs of an ArrowSchema's metadata (int32 count, then per pair an
    int32 length and the key's bytes, an int32 length and the value's bytes; native
    endianness, as the C data interface specifies)."""
    if not address:
        return {}
    (count,) = _struct.unpack("=i", ctypes.string_at(address, 4))
    pos = address + 4
    out = {}
    for _ in range(count):
        (klen,) = _struct.unpack("=i", ctypes.string_at(pos, 4))
        key = ctypes.string_at(pos + 4, klen)
        pos += 4 + klen
        (vlen,) = _struct.unpack("=i", ctypes.string_at(pos, 4))
        value = ctypes.string_at(pos + 4, vlen)
        pos += 4 + vlen
        out[key] = value
    return out
