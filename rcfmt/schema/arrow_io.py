"""Conversions between Arrow arrays and rcfmt's storage form (values + validity).

``from_arrow`` never copies value buffers of fixed-width arrays; ``to_arrow`` wraps the
decoded numpy buffers into Arrow arrays without another copy where it can.
"""
from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa

from ..runtime import memory
from ..errors import CorruptFileError, UnsupportedError
from .gather import holds_runs, holds_views, with_child_types
from .types import LogicalType, PhysicalKind, logical_type_from_arrow
from .values import Bitmap, ColumnValues
from .._native import floats as _fl
from .._native import stats as _stats
from .._native import varbinary as _vb

__all__ = ["Bitmap", "compact_fixed_size_lists", "tzinfo_of", "one_array", "from_arrow", "to_arrow", "to_numpy",
           "validity", "wide_decimals", "fill_null_slots", "concat_values", "take", "filter_rows"]


def _bits(buf: pa.Buffer, offset: int, n: int) -> np.ndarray:
    raw = np.frombuffer(buf, dtype=np.uint8)
    return np.unpackbits(raw, count=offset + n, bitorder="little")[offset:].view(bool)


def one_array(arr) -> pa.Array:
    """An Array of the values of an Array or ChunkedArray: the chunk itself when there is
    one (``combine_chunks`` copies even then: a fresh megabyte buffer per column of every
    block a writer encodes, first-touch page faults included), else the chunks
    concatenated."""
    if not isinstance(arr, pa.ChunkedArray):
        return arr
    if arr.num_chunks == 1:
        return arr.chunk(0)
    if holds_runs(arr.type):
        from .annotated import combine_chunks  # (of runs anywhere, which pyarrow does not always concatenate)

        return combine_chunks(arr)
    return arr.combine_chunks()


def _nests_fixed_lists(t: pa.DataType) -> bool:
    """Whether a fixed_size_list of fixed_size_lists sits anywhere in ``t``."""
    if pa.types.is_fixed_size_list(t) and pa.types.is_fixed_size_list(t.value_type):
        return True
    return any(_nests_fixed_lists(t.field(i).type) for i in range(t.num_fields))


def _gatherable(data):
    """``data`` (array, chunked array, record batch or table) laid out so that pyarrow's
    take and filter read it right: pyarrow 26 gathers a *sliced* fixed_size_list of
    fixed_size_lists of primitives from the wrong place (values from elsewhere, no
    error), so such columns are first copied to offset 0 (other columns are untouched)."""
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        if not any(_nests_fixed_lists(f.type) for f in data.schema):
            return data
        columns = [_gatherable(c) if _nests_fixed_lists(c.type) else c for c in data.columns]
        return type(data).from_arrays(columns, schema=data.schema)
    if not _nests_fixed_lists(data.type):
        return data
    if isinstance(data, pa.ChunkedArray):
        return pa.chunked_array([pa.concat_arrays([c]) for c in data.chunks], data.type)
    return pa.concat_arrays([data])


def compact_fixed_size_lists(batch: pa.RecordBatch, columns) -> pa.RecordBatch:
    """``batch`` (a slice of a longer one) whose fixed-size-list ``columns`` (indices)
    holding NULLs are copied to hold exactly their slots: Polars (2.1) refuses such a
    list whose values outrun its length ("validity mask length must be equal to the
    number of values divided by size"), which a slice's do."""
    arrays = list(batch.columns)
    changed = False
    for i in columns:
        arr = arrays[i]
        if arr.null_count and len(arr.values) != len(arr) * arr.type.list_size:
            arrays[i] = pa.concat_arrays([arr])
            changed = True
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema) if changed else batch


def int64_array(values: np.ndarray) -> pa.Array:
    """An int64 Arrow array of numpy integers, from their buffer (``pa.array`` imports
    pandas, 0.2 s, on its first call: kept off the read paths)."""
    data = np.ascontiguousarray(values, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def bool_array(values: np.ndarray) -> pa.Array:
    """A boolean Arrow array (no NULL) of numpy bools, from a packed buffer (not
    ``pa.array``: see :func:`int64_array`)."""
    bits = np.packbits(np.asarray(values, bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])


def temporal_value(value: int, atype: pa.DataType):
    """The Python value (``datetime.date``, ``datetime.datetime``) of one stored integer
    of a date32 or timestamp type ``atype``, from a buffer (``pa.scalar`` imports pandas);
    OverflowError or ValueError outside Python's range."""
    data = np.array([value], np.int32 if pa.types.is_date32(atype) else np.int64)
    zone = tzinfo_of(atype.tz) if pa.types.is_timestamp(atype) and atype.tz and atype.unit != "ns" else None
    if zone is None:
        return pa.Array.from_buffers(atype, 1, [None, pa.py_buffer(data)])[0].as_py()
    # (an aware one as a naive UTC one: pyarrow imports pandas to convert aware timestamps)
    naive = pa.Array.from_buffers(pa.timestamp(atype.unit), 1, [None, pa.py_buffer(data)])[0].as_py()
    return naive.replace(tzinfo=dt.timezone.utc).astimezone(zone)


def tzinfo_of(name: str) -> dt.tzinfo | None:
    """The ``tzinfo`` of an Arrow time zone (``UTC``, ``+05:30``, an IANA name); None
    if Python does not know it."""
    if name in ("UTC", "utc", "Z", "Etc/UTC"):
        return dt.timezone.utc
    if len(name) == 6 and name[0] in "+-" and name[3] == ":" and name[1:3].isdigit() and name[4:].isdigit():
        sign = 1 if name[0] == "+" else -1
        return dt.timezone(sign * dt.timedelta(hours=int(name[1:3]), minutes=int(name[4:])))
    import zoneinfo

    try:
        return zoneinfo.ZoneInfo(name)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        return None


def take(data, indices):
    """``data.take(indices)`` (arrays, chunked arrays, batches, tables), right for every
    nesting pyarrow gathers (see ``_gatherable``), for run_end_encoded arrays anywhere
    in a type, which Arrow's take has no kernel for (:mod:`rcfmt.schema.gather`; a NULL
    index makes a NULL slot, as Arrow's take does), and for string and binary views
    anywhere in a type (no kernel either: gathered in their offset form, cast back). Use
    it for every gather of user data."""
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        if any(holds_runs(f.type) for f in data.schema):
            picked = _positions(indices)
            columns = [_take_runs_of(c, *picked) for c in data.columns]
            return type(data).from_arrays(columns, schema=data.schema)
        if any(holds_views(f.type) for f in data.schema):
            return type(data).from_arrays([take(c, indices) for c in data.columns], schema=data.schema)
    elif holds_runs(data.type):
        return _take_runs_of(data, *_positions(indices))
    elif holds_views(data.type):
        return _gatherable(data.cast(_offsets_form(data.type))).take(indices).cast(data.type)
    return _gatherable(data).take(indices)


def filter_rows(data, mask):
    """``data.filter(mask)``, right for every nesting (see ``take``)."""
    types = [f.type for f in data.schema] if isinstance(data, (pa.Table, pa.RecordBatch)) else [data.type]
    if any(holds_runs(t) or holds_views(t) for t in types):
        keep = np.asarray(mask.to_numpy(zero_copy_only=False) if isinstance(mask, (pa.Array, pa.ChunkedArray))
                          else mask)
        return take(data, np.flatnonzero(np.asarray(keep == True)))  # noqa: E712 (NULL drops the row, as filter does)
    return _gatherable(data).filter(mask)


def _offsets_form(t: pa.DataType) -> pa.DataType:
    """``t`` with its string and binary views as large strings and binaries, which Arrow
    casts to and from views and gathers (views anywhere among its children, and a
    dictionary's values)."""
    if pa.types.is_string_view(t):
        return pa.large_string()
    if pa.types.is_binary_view(t):
        return pa.large_binary()
    if pa.types.is_dictionary(t):
        return pa.dictionary(t.index_type, _offsets_form(t.value_type), t.ordered)
    return with_child_types(t, _offsets_form)


def _positions(indices) -> tuple[np.ndarray, np.ndarray | None]:
    """``indices`` (Arrow, numpy or a sequence of ints) as int64 numpy, and where they
    are NULL (None: nowhere)."""
    if isinstance(indices, (pa.Array, pa.ChunkedArray)):
        nulls = ~validity(indices) if indices.null_count else None
        return to_numpy(indices).astype(np.int64, copy=True), nulls
    return np.asarray(indices, np.int64), None


def _take_runs_of(column, picked: np.ndarray, nulls: np.ndarray | None):
    """:func:`rcfmt.schema.gather.take_runs` of an array or chunked array (its chunks
    joined)."""
    from .gather import take_runs

    if nulls is not None:
        picked[nulls] = 0  # (any slot: it is NULL)
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([take_runs(one_array(column), picked, nulls)], column.type)
    return take_runs(column, picked, nulls)


def from_arrow(arr: pa.Array, ltype: LogicalType) -> tuple[ColumnValues, np.ndarray | None]:
    """Storage values and validity (None when there are no nulls) of one Arrow array."""
    if ltype.annotated:  # (an Arrow type stored as another: rcfmt.schema.annotated; chunks converted first)
        from .annotated import to_storage
        arr, ltype = to_storage(arr, ltype, check=True), ltype.storage
    arr = one_array(arr)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    n, off = len(arr), arr.offset
    bufs = arr.buffers()
    valid = None
    if arr.null_count:
        valid = _bits(bufs[0], off, n) if bufs[0] is not None else np.ones(n, bool)
    kind = ltype.kind
    if kind == PhysicalKind.BOOL:
        return ColumnValues(_bits(bufs[1], off, n) if n else np.empty(0, bool)), valid
    if kind == PhysicalKind.FIXED:
        dtype = ltype.numpy_dtype
        if n == 0:
            return ColumnValues(np.empty(0, dtype)), valid
        values = np.frombuffer(bufs[1], dtype=dtype, count=off + n)[off:]
        return ColumnValues(values), valid
    offset_dtype = np.int64 if ltype.large else np.int32
    if n == 0:
        return ColumnValues(np.empty(0, np.uint8), np.zeros(1, offset_dtype)), valid
    offsets = np.frombuffer(bufs[1], dtype=offset_dtype, count=off + n + 1)[off:]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    return ColumnValues(data, offsets), valid


def to_numpy(arr) -> np.ndarray:
    """numpy values of a fixed-width or boolean Arrow array (or chunked array); entries
    under NULL are unspecified. Read from the buffers, not with ``to_numpy``: pyarrow's
    conversions import pandas on first use, 0.2-0.3 s in every fresh process (a Spark
    worker's first task, a user's first read)."""
    values, _ = from_arrow(arr, logical_type_from_arrow(arr.type))
    return values.values


def validity(arr) -> np.ndarray:
    """numpy bool per row of an Arrow array (or chunked array): True where not NULL."""
    arr = one_array(arr)
    n = len(arr)
    if arr.null_count == 0:
        return np.ones(n, bool)
    buf = arr.buffers()[0]
    return _bits(buf, arr.offset, n).copy() if buf is not None else np.zeros(n, bool)


def struct_fields(arr: pa.StructArray) -> list[pa.Array]:
    """The children of struct array ``arr`` in its window, each NULL where the struct
    is (``StructArray.flatten``), except a union child (or an extension over one), which
    has no validity of its own and is returned as it is: Arrow's flatten gives a union
    child a validity bitmap, which pyarrow 26 then aborts the process on
    (``array_nested.cc: Check failed``)."""
    if arr.buffers()[0] is None or not any(_union_storage(f.type) for f in arr.type):
        return arr.flatten()  # (a validity bitmap, even without a NULL in the window, is ANDed in)
    nulls = bool_array(~validity(arr))
    return [arr.field(i) if _union_storage(f.type)
            else pa.StructArray.from_arrays([arr.field(i)], fields=[f], mask=nulls).flatten()[0]
            for i, f in enumerate(arr.type)]


def _union_storage(t: pa.DataType) -> bool:
    """Whether ``t`` is a union or an extension type over one (at any depth)."""
    while isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    return pa.types.is_union(t)


def fill_null_slots(values: ColumnValues, valid: np.ndarray | None) -> ColumnValues:
    """Copy of fixed-width/bool values whose null slots repeat the previous valid value
    (leading nulls take the first valid one), so that nulls do not break runs or widen
    value ranges. Variable-length values are returned unchanged."""
    if valid is None or values.offsets is not None or len(values) == 0:
        return values
    v = values.values
    if v.ndim == 1 and v.dtype.itemsize in (1, 2, 4, 8, 16):  # one native pass
        filled = _stats.fill_null_slots(np.ascontiguousarray(v), np.ascontiguousarray(valid, dtype=bool).view(np.uint8))
        return ColumnValues(np.zeros(len(v), dtype=v.dtype) if filled is None else filled)
    n = len(valid)
    if not valid.any():
        return ColumnValues(np.zeros(n, dtype=v.dtype))
    idx = np.where(valid, np.arange(n), 0)
    np.maximum.accumulate(idx, out=idx)
    first = int(np.argmax(valid))
    idx[:first] = first
    return ColumnValues(v[idx])


def concat_values(parts: list[ColumnValues], kind: PhysicalKind, large: bool = False) -> ColumnValues:
    """Concatenate runs of values (e.g. decoded pages of one chunk) into one.

    VARBINARY results have offsets starting at 0, int32 unless ``large`` (or the data
    exceeds 2 GiB), so they can become Arrow buffers without another pass."""
    if kind != PhysicalKind.VARBINARY:
        if len(parts) == 1:
            return parts[0]
        return ColumnValues(np.concatenate([p.values for p in parts]))
    if not parts:
        return ColumnValues(np.empty(0, np.uint8), np.zeros(1, np.int64 if large else np.int32))
    p = parts[0]
    if len(parts) == 1 and p.offsets[0] == 0 and (p.offsets.dtype == np.int64) == large:
        return p
    offsets, data = _vb.concat([q.offsets for q in parts], [q.values for q in parts], large)
    return ColumnValues(data, offsets)


def wide_decimals(values: np.ndarray) -> np.ndarray:
    """decimal128 storage (16-byte values) of decimals held as int64 low words (the
    form BITPACK pages decode to); other arrays unchanged."""
    if values.dtype != np.int64:
        return values
    out = memory.empty(len(values), "V16")
    _fl.widen_i64_to_i128(np.ascontiguousarray(values), out.view("<i8"))
    return out


def too_big(ltype) -> UnsupportedError:
    """The error of a block holding more string/binary data than 32-bit offsets reach."""
    return UnsupportedError(f"a block holds more than 2 GiB of {ltype.name} data; read it as large_{ltype.name} "
                            "or write smaller blocks")


def to_arrow(values: ColumnValues, valid: np.ndarray | Bitmap | None, ltype: LogicalType) -> pa.Array:
    """Wrap storage values (and validity: bools, or a :class:`Bitmap`, used as it is) as
    an Arrow array of ``ltype``. Decimals may be int64 low words (see
    :func:`wide_decimals`)."""
    if ltype.annotated:  # (an Arrow type stored as another: rcfmt.schema.annotated)
        from .annotated import from_storage
        try:
            return from_storage(to_arrow(values, valid, ltype.storage), ltype)
        except pa.ArrowInvalid as exc:  # (more values or rows than the declared index or run-end type addresses)
            raise CorruptFileError(f"values that cannot be encoded as {ltype.to_arrow()} ({exc})") from None
    atype = ltype.to_arrow()
    n = len(values)
    if isinstance(valid, Bitmap):
        null_count, validity = valid.null_count, pa.py_buffer(valid.bits)
    else:
        null_count = 0 if valid is None else n - int(np.count_nonzero(valid))
        validity = None if not null_count else pa.py_buffer(np.packbits(valid, bitorder="little"))
    kind = ltype.kind
    if kind == PhysicalKind.BOOL:
        data = pa.py_buffer(np.packbits(values.values, bitorder="little"))
        return pa.Array.from_buffers(atype, n, [validity, data], null_count)
    if kind == PhysicalKind.FIXED:
        data = values.values if ltype.name != "decimal128" else wide_decimals(values.values)
        return pa.Array.from_buffers(atype, n, [validity, pa.py_buffer(np.ascontiguousarray(data))], null_count)
    if values.offsets[0] != 0:
        values = concat_values([values], kind, ltype.large)
    offsets = values.offsets
    if ltype.large:
        offsets = offsets.astype(np.int64, copy=False)
    else:
        if n and int(offsets[-1]) > np.iinfo(np.int32).max:
            raise too_big(ltype)
        offsets = offsets.astype(np.int32, copy=False)
    return pa.Array.from_buffers(atype, n, [validity, pa.py_buffer(offsets), pa.py_buffer(values.values)], null_count)
