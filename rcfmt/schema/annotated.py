"""Arrow arrays of annotated types (:attr:`rcfmt.schema.types.LogicalType.annot`) to and from
the arrays of their storage type (docs/FORMAT.md section 3, "Stored as").

- duration, date64, decimal32, decimal64: the same buffer, viewed as int64 / int32;
- float16: widened to float32 exactly (a NaN keeps its sign and payload bits);
- null: a bool column every slot of which is NULL;
- fixed_size_binary(N): binary values of N bytes;
- decimal256: binary values of 32 bytes, the big-endian two's complement with its top
  bit flipped, so that bytewise order is numeric order;
- month_interval, day_time_interval: int32 / int64 of the same bytes. pyarrow cannot
  hold an array of either in Python, so tables and batches are relabeled to and from
  their storage types as wholes (:mod:`rcfmt.interop.cdata`): the arrays seen here are
  already the storage arrays, and :func:`from_storage` returns them as they are;
- an extension type: its storage array, converted as above.

Reading checks what Arrow's full validation would refuse (a decimal beyond its
precision, a fixed-size value of another length, a value in a null column) and raises
:class:`~rcfmt.errors.CorruptFileError`.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError, InvalidDataError, UnsupportedError
from .types import LogicalType, same_type

__all__ = ["to_storage", "from_storage", "decimal256_key", "key_decimal256", "int_key", "shown", "RELABELED",
           "pack_day_time", "unpack_day_time", "decoded", "encoded"]

#: annotated kinds whose arrays pyarrow cannot hold: converted at the table/batch level
#: (rcfmt.interop.cdata), their storage arrays passed through here
RELABELED = frozenset(("month_interval", "day_time_interval"))

_KEY = 32  # bytes of a decimal256 key


def _one(arr) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        return arr.chunk(0) if arr.num_chunks == 1 else combine_chunks(arr)
    return arr


def combine_chunks(arr: pa.ChunkedArray) -> pa.Array:
    """``arr.combine_chunks()``, also where its type holds run_end_encoded types, which
    pyarrow 26 does not always concatenate (:func:`rcfmt.schema.gather.concat_runs`)."""
    from .gather import concat_runs, holds_runs

    if not arr.num_chunks or not holds_runs(arr.type):
        return arr.combine_chunks()
    return concat_runs(arr.chunks, arr.type)


def _validity_buffer(arr: pa.Array) -> pa.Buffer | None:
    """``arr``'s validity as a bitmap starting at bit 0 (None without nulls)."""
    if not arr.null_count:
        return None
    buf = arr.buffers()[0]
    if buf is None:  # (a null-typed array)
        return pa.py_buffer(np.zeros((len(arr) + 7) // 8, np.uint8))
    if arr.offset == 0:
        return buf
    bits = np.unpackbits(np.frombuffer(buf, np.uint8), count=arr.offset + len(arr), bitorder="little")
    return pa.py_buffer(np.packbits(bits[arr.offset:], bitorder="little"))


def _fixed_bytes(arr: pa.Array, width: int) -> np.ndarray:
    """The values of a fixed-width array (``width`` bytes each) as an (n, width) uint8 array."""
    n = len(arr)
    if n == 0 or width == 0:
        return np.zeros((n, width), np.uint8)
    raw = np.frombuffer(arr.buffers()[1], np.uint8, count=(arr.offset + n) * width)
    return raw[arr.offset * width:].reshape(n, width)


def _binary(arr: pa.Array, rows: np.ndarray) -> pa.Array:
    """A binary array of the rows of ``rows`` ((n, w) uint8), NULL where ``arr`` is."""
    n, w = rows.shape
    offsets = np.arange(n + 1, dtype=np.int64) * w
    if offsets[-1] > np.iinfo(np.int32).max:
        raise UnsupportedError(f"{offsets[-1]} bytes of {w}-byte values in one block, beyond the 2 GiB a "
                               "block of binary storage holds: write smaller blocks")
    return pa.Array.from_buffers(pa.binary(), n, [_validity_buffer(arr), pa.py_buffer(offsets.astype(np.int32)),
                                                  pa.py_buffer(np.ascontiguousarray(rows))], arr.null_count)


def decimal256_key(le: np.ndarray) -> np.ndarray:
    """Order-preserving keys ((n, 32) uint8) of 32-byte little-endian two's complement values."""
    key = np.ascontiguousarray(le[:, ::-1])
    key[:, 0] ^= 0x80
    return key


def key_decimal256(key: np.ndarray) -> np.ndarray:
    le = key.copy()
    le[:, 0] ^= 0x80
    return np.ascontiguousarray(le[:, ::-1])


def int_key(v: int) -> bytes:
    """The decimal256 key of an unscaled integer (|v| < 2^255)."""
    b = bytearray(v.to_bytes(_KEY, "big", signed=True))
    b[0] ^= 0x80
    return bytes(b)


def to_storage(arr, ltype: LogicalType, check: bool = False) -> pa.Array:
    """``arr`` (of ``ltype.to_arrow()``, or its dictionary) as an array of
    ``ltype.storage.to_arrow()``. ``check`` (a writer's): a decimal beyond its
    precision, which a reader would refuse, raises :class:`InvalidDataError`; so do
    values of an extension over dictionaries that a reader could not encode again
    (more distinct values in ``arr`` than the declared index type addresses)."""
    out = _to_storage(arr, ltype, check)
    if check and (ltype.ext_storage or ltype.ree_ext_storage) and len(out):
        try:
            from_storage(out, ltype)
        except pa.ArrowInvalid as exc:
            raise InvalidDataError(f"the values of one block cannot be encoded as {ltype.to_arrow().storage_type} "
                                   f"again ({exc}): write smaller blocks (block_rows)") from None
    return out


def _to_storage(arr, ltype: LogicalType, check: bool) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray) and arr.num_chunks > 1 and (ltype.ext_storage or ltype.ree_ext_storage):
        # (each chunk decoded first: the dictionaries of an extension's storage may not unify)
        return _one(pa.chunked_array([_to_storage(c, ltype, check) for c in arr.chunks], ltype.storage.to_arrow()))
    arr = _one(arr)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if ltype.ree is not None:  # (then its values, as below)
        arr, ltype = ree_decode(arr), ltype.values
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = decoded(arr.storage)
    if ltype.annot is None:
        return arr
    kind = ltype.annot[0]
    storage = ltype.storage.to_arrow()
    if kind in RELABELED:  # (relabeled to its storage with the whole table: rcfmt.interop.cdata)
        if arr.type != storage:
            raise UnsupportedError(f"a {kind} column given as {arr.type}, not relabeled to {storage}")
        return arr
    if check and kind in ("decimal32", "decimal64", "decimal256"):
        _check_precision(arr, ltype)
    if check and kind == "date64":
        _check_whole_days(arr, InvalidDataError)
    if check and kind in ("time32", "time64"):
        _check_time_of_day(arr, ltype, InvalidDataError)
    if kind in ("duration", "date64", "decimal32", "decimal64", "time32", "time64"):
        return arr.view(storage)
    if kind == "null":
        return pa.nulls(len(arr), pa.bool_())
    if kind == "float16":
        bits = _fixed_bytes(arr, 2).reshape(-1).view("<u2")
        return pa.Array.from_buffers(pa.float32(), len(arr), [_validity_buffer(arr), pa.py_buffer(widen_f16(bits))],
                                     arr.null_count)
    if kind == "fixed_size_binary":
        return _binary(arr, _fixed_bytes(arr, ltype.annot[1]))
    if kind == "month_day_nano_interval":
        return _binary(arr, _fixed_bytes(arr, 16))
    if kind == "decimal256":
        return _binary(arr, decimal256_key(_fixed_bytes(arr, _KEY)))
    raise AssertionError(kind)


def ree_decode(arr) -> pa.Array:
    """The values of run_end_encoded ``arr`` (or of an extension of one), a slot per
    row (values of a dictionary decoded, of an extension type as their storage), with
    zeros under NULLs."""
    import pyarrow.compute as pc

    arr = _one(arr)
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    values = arr.values  # (the physical values: ``arr`` holds the window)
    if isinstance(values.type, pa.BaseExtensionType):
        values = values.storage
    if pa.types.is_run_end_encoded(values.type):  # (an extension's runs, under runs: a slot per value first)
        values = ree_decode(values)
    values = decoded(values)
    if values is not arr.values:  # (run_end_decode has no kernel for dictionary, view or extension values)
        arr = pa.RunEndEncodedArray.from_arrays(arr.run_ends, values).slice(arr.offset, len(arr))
    return _clean_nulls(pc.run_end_decode(arr))


_VIEWS = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def decoded(arr: pa.Array) -> pa.Array:
    """``arr`` (a flat array, as an extension may declare its storage) as rcfmt stores it:
    a dictionary decoded, a string or binary view as its offset form (``arr`` itself
    otherwise). Indices outside the dictionary raise :class:`InvalidDataError`."""
    if pa.types.is_dictionary(arr.type):
        try:
            return decoded(arr.dictionary_decode())
        except (pa.ArrowIndexError, pa.ArrowInvalid) as exc:
            raise InvalidDataError(f"dictionary-encoded values do not decode: {exc}") from None
    if not isinstance(arr.type, pa.BaseExtensionType) and arr.type in _VIEWS:
        return arr.cast(_VIEWS[arr.type])
    return arr


def encoded(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """``arr`` (of a flat type as rcfmt stores it) as an array of ``t``, the type it was
    declared as (:func:`decoded` undone): dictionaries encoded again (their entries in
    order of first use; ``ArrowInvalid`` when more values than ``t``'s index type
    addresses), views cast back, run_end_encoded values so encoded in turn."""
    if same_type(arr.type, t):
        return arr
    if pa.types.is_dictionary(t):
        values = encoded(arr, t.value_type)
        try:
            enc = values.dictionary_encode()
            dictionary = enc.dictionary
        except pa.ArrowNotImplementedError:  # (decimal32/64: encoded as integers of their width)
            width = values.type.bit_width
            enc = values.view(pa.type_for_alias(f"int{width}")).dictionary_encode()
            dictionary = enc.dictionary.view(values.type)
        indices = enc.indices.cast(t.index_type)  # (ArrowInvalid beyond the index type)
        return pa.DictionaryArray.from_arrays(indices, dictionary, ordered=t.ordered)
    if pa.types.is_run_end_encoded(t):  # (runs of ``arr``'s values, when it has none: maximal ones)
        import pyarrow.compute as pc

        runs = arr if pa.types.is_run_end_encoded(arr.type) else pc.run_end_encode(arr, run_end_type=t.run_end_type)
        values = encoded(runs.values, t.value_type)
        return pa.RunEndEncodedArray.from_arrays(runs.run_ends, values, type=t).slice(runs.offset, len(runs))
    if isinstance(t, pa.BaseExtensionType):
        storage = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
        return pa.ExtensionArray.from_storage(t, encoded(storage, t.storage_type))
    return arr.cast(t)


def _clean_nulls(arr: pa.Array) -> pa.Array:
    """``arr`` with zeros (empty values) under its NULLs: a decoded run_end_encoded array
    holds whatever memory held there, which a writer's value checks would look at."""
    if not arr.null_count:
        return arr
    if pa.types.is_boolean(arr.type) or pa.types.is_null(arr.type):
        return arr
    n = len(arr)
    valid = np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), count=arr.offset + n,
                          bitorder="little")[arr.offset:].view(bool)
    if pa.types.is_primitive(arr.type) or pa.types.is_decimal(arr.type):
        width = arr.type.bit_width // 8
        rows = _fixed_bytes(arr, width).copy()
        rows[~valid] = 0
        return pa.Array.from_buffers(arr.type, n, [_validity_buffer(arr), pa.py_buffer(rows)], arr.null_count)
    return arr.take(pa.array(np.arange(n, dtype=np.int64)))  # (Arrow's take builds NULL strings empty)


def widen_f16(bits: np.ndarray) -> np.ndarray:
    """float32 values of float16 bits (uint16), exactly: NaNs keep sign and payload
    (``payload << 13``), where a conversion by the FPU would quiet signalling ones."""
    out = bits.view(np.float16).astype(np.float32)
    nan = (bits & 0x7C00) == 0x7C00
    nan &= (bits & 0x03FF) != 0
    if nan.any():
        b = bits[nan].astype(np.uint32)
        out.view("<u4")[nan] = ((b & 0x8000) << 16) | np.uint32(0x7F800000) | ((b & 0x03FF) << 13)
    return out


def narrow_f32(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float16 bits of float32 values and where a value is not a float16 exactly."""
    f32 = np.ascontiguousarray(values, np.float32)
    u = f32.view("<u4")
    with np.errstate(over="ignore", invalid="ignore"):
        out = f32.astype(np.float16).view("<u2").copy()
    nan = np.isnan(f32)
    if nan.any():
        b = u[nan]
        out[nan] = (((b >> 16) & 0x8000) | 0x7C00 | ((b >> 13) & 0x03FF)).astype(np.uint16)
    inexact = widen_f16(out).view("<u4") != u
    return out, inexact


def from_storage(arr: pa.Array, ltype: LogicalType) -> pa.Array:
    """An array of ``ltype.to_arrow()`` from one of its storage type, checked (see the
    module doc)."""
    if ltype.ree is not None:
        return _ree_from_storage(arr, ltype)
    if ltype.annot is not None:
        arr = _from_annotated(arr, ltype)
    if ltype.ext is not None:
        t = ltype.to_arrow()
        if isinstance(t, pa.BaseExtensionType):
            arr = pa.ExtensionArray.from_storage(t, encoded(arr, t.storage_type) if ltype.ext_storage else arr)
    return arr


def _ree_from_storage(arr: pa.Array, ltype: LogicalType) -> pa.Array:
    """A run_end_encoded array of ``ltype`` from its decoded values, stored: maximal runs
    of bitwise-equal values (Arrow's run_end_encode: NaNs of one payload form a run,
    -0.0 and 0.0 do not), encoded over the values' Arrow type (an extension's storage)."""
    import pyarrow.compute as pc

    values = ltype.values
    if values.annot is not None:
        arr = _from_annotated(arr, values)
    out = pc.run_end_encode(arr, run_end_type=pa.type_for_alias(ltype.ree))
    if values.ext is not None:
        t = values.to_arrow()
        if isinstance(t, pa.BaseExtensionType):
            inner = encoded(out.values, t.storage_type) if values.ext_storage else out.values
            out = pa.RunEndEncodedArray.from_arrays(out.run_ends, pa.ExtensionArray.from_storage(t, inner))
    if ltype.ree_ext is not None:
        t = ltype.to_arrow()
        if isinstance(t, pa.BaseExtensionType):
            out = pa.ExtensionArray.from_storage(t, encoded(out, t.storage_type) if ltype.ree_ext_storage else out)
    return out


def _lengths_ok(arr: pa.Array, width: int) -> np.ndarray:
    """The data of binary ``arr`` as (n, width) rows, each valid value of ``width`` bytes
    (NULL slots of any length become zeros)."""
    n = len(arr)
    bufs = arr.buffers()
    if n == 0:
        return np.zeros((0, width), np.uint8)
    odt = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offsets = np.frombuffer(bufs[1], odt, count=arr.offset + n + 1)[arr.offset:].astype(np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    valid = None
    if arr.null_count:
        valid = np.unpackbits(np.frombuffer(bufs[0], np.uint8), count=arr.offset + n,
                              bitorder="little")[arr.offset:].view(bool)
    bad = lengths != width if valid is None else (lengths != width) & valid
    if bad.any():
        i = int(np.argmax(bad))
        raise CorruptFileError(f"a value of {int(lengths[i])} bytes in a column of {width}-byte values (slot {i})")
    if valid is None or (lengths == width).all():
        start = int(offsets[0])
        return data[start:start + n * width].reshape(n, width)
    out = np.zeros((n, width), np.uint8)
    rows = np.flatnonzero(valid)
    if len(rows) and width:
        out[rows] = data[offsets[rows][:, None] + np.arange(width)]
    return out


def _from_annotated(arr: pa.Array, ltype: LogicalType) -> pa.Array:
    kind = ltype.annot[0]
    if kind in RELABELED:  # (relabeled with the whole batch: rcfmt.interop.cdata)
        return arr
    t = ltype.base.to_arrow()
    if kind == "date64":
        _check_whole_days(arr)
        return arr.view(t)
    if kind == "duration":
        return arr.view(t)
    if kind in ("time32", "time64"):
        _check_time_of_day(arr, ltype)
        return arr.view(t)
    if kind in ("decimal32", "decimal64"):
        out = arr.view(t)
        _check_valid(out)
        return out
    if kind == "null":
        if arr.null_count != len(arr):
            raise CorruptFileError("a value in a column of type null")
        return pa.nulls(len(arr))
    if kind == "float16":
        n = len(arr)
        f32 = np.frombuffer(arr.buffers()[1], np.float32, count=arr.offset + n)[arr.offset:] if n else \
            np.zeros(0, np.float32)
        bits, inexact = narrow_f32(f32)
        if arr.null_count:
            inexact &= np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), count=arr.offset + n,
                                     bitorder="little")[arr.offset:].view(bool)
        if inexact.any():
            raise CorruptFileError(f"a float32 value that is no float16 in a float16 column (slot "
                                   f"{int(np.argmax(inexact))})")
        return pa.Array.from_buffers(t, n, [_validity_buffer(arr), pa.py_buffer(bits)], arr.null_count)
    width = ltype.annot[1] if kind == "fixed_size_binary" else 16 if kind == "month_day_nano_interval" else _KEY
    rows = _lengths_ok(arr, width)
    if kind == "decimal256":
        rows = key_decimal256(rows)
    out = pa.Array.from_buffers(t, len(arr), [_validity_buffer(arr), pa.py_buffer(np.ascontiguousarray(rows))],
                                arr.null_count)
    if kind == "decimal256":
        _check_valid(out)
    return out


def is_decimal(ltype: LogicalType) -> bool:
    """decimal32, decimal64 or decimal256 (whose values have a precision to keep)."""
    return ltype.annot is not None and ltype.annot[0] in ("decimal32", "decimal64", "decimal256")


def has_invalid_values(ltype: LogicalType) -> bool:
    """Types whose storage holds values their Arrow type does not: decimal32/64/256
    beyond the precision, date64 not a whole number of days, times outside a day."""
    return is_decimal(ltype) or (ltype.annot is not None and ltype.annot[0] in ("date64", "time32", "time64"))


def first_beyond_precision(arr, ltype: LogicalType) -> tuple[int, str] | None:
    """``(slot, why)`` of the first valid value of ``arr`` (decimal32/64/256 or date64,
    or a dictionary or extension of one) that its Arrow type does not hold (a decimal
    beyond its precision, a date64 not a whole number of days); None when there is none."""
    arr = _one(arr)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if ltype.ree is not None:  # (its values, a slot per row)
        arr, ltype = ree_decode(arr), ltype.values
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = decoded(arr.storage)
    try:
        if ltype.annot[0] == "date64":
            _check_whole_days(arr, InvalidDataError)
        elif ltype.annot[0] in ("time32", "time64"):
            _check_time_of_day(arr, ltype, InvalidDataError)
        else:
            _check_precision(arr, ltype)
    except InvalidDataError as exc:
        return exc.slot, exc.reason
    return None


_MS_PER_DAY = 86_400_000


def _check_whole_days(arr: pa.Array, error=CorruptFileError) -> None:
    """``error`` at the first valid date64 (or its int64 storage) of ``arr`` that is not a
    whole number of days, as Arrow's full validation requires."""
    n = len(arr)
    if n == 0:
        return
    ms = np.frombuffer(arr.buffers()[1], "<i8", count=arr.offset + n)[arr.offset:]
    _raise_at_first_valid(ms % _MS_PER_DAY != 0, arr,
                          lambda i: error(f"date64 value {int(ms[i])} ms is not a whole number of days"))


_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}


def _check_time_of_day(arr: pa.Array, ltype: LogicalType, error=CorruptFileError) -> None:
    """``error`` at the first valid time32/time64 (or its storage) of ``arr`` outside
    [0, one day), as Arrow's full validation requires."""
    n = len(arr)
    if n == 0:
        return
    kind, unit = ltype.annot
    v = np.frombuffer(arr.buffers()[1], "<i4" if kind == "time32" else "<i8", count=arr.offset + n)[arr.offset:]
    _raise_at_first_valid((v < 0) | (v >= _PER_DAY[unit]), arr,
                          lambda i: error(f"{kind}[{unit}] value {int(v[i])} is not a time of day"))


def _raise_at_first_valid(bad: np.ndarray, arr: pa.Array, error_at) -> None:
    """Raise ``error_at(slot)`` (its ``slot`` attribute set) at the first slot of ``arr``
    that is ``bad`` and not NULL."""
    if arr.null_count:
        bad &= np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), count=arr.offset + len(arr),
                             bitorder="little")[arr.offset:].view(bool)
    if bad.any():
        i = int(np.argmax(bad))
        exc = error_at(i)
        exc.slot = i
        raise exc


def _check_precision(arr: pa.Array, ltype: LogicalType) -> None:
    """InvalidDataError at the first valid decimal of ``arr`` beyond its precision
    (its ``slot`` attribute says where)."""
    n = len(arr)
    if n == 0:
        return
    _, p, s = ltype.annot
    limit = 10**p - 1
    if ltype.annot[0] == "decimal256":
        keys = decimal256_key(_fixed_bytes(arr, _KEY)).view("S32").reshape(-1)
        bad = (keys > np.bytes_(int_key(limit))) | (keys < np.bytes_(int_key(-limit)))
    else:
        v = _fixed_bytes(arr, 4 if ltype.annot[0] == "decimal32" else 8).reshape(-1).view(
            "<i4" if ltype.annot[0] == "decimal32" else "<i8")
        bad = (v > limit) | (v < -limit)
    _raise_at_first_valid(bad, arr, lambda i: InvalidDataError(
        f"decimal value {arr[i].as_py()} beyond the declared precision of {arr.type}"))


def _check_valid(arr: pa.Array) -> None:
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise CorruptFileError(str(exc)) from None


def shown(value, ltype: LogicalType):
    """A statistics-domain value of an annotated column as its user sees it (for
    describing files): a ``Decimal``, a ``timedelta``/``date`` (the count of units when
    Python's types cannot hold it), a float, or the bytes."""
    import decimal

    if value is None or ltype.annot is None:
        return value
    kind = ltype.annot[0]
    if isinstance(value, np.generic):
        value = value.item()
    if kind in ("decimal32", "decimal64", "decimal256"):
        if kind == "decimal256":
            if not isinstance(value, (bytes, bytearray)) or len(value) != _KEY:
                return value  # (a truncated bound)
            b = bytearray(value)
            b[0] ^= 0x80
            value = int.from_bytes(b, "big", signed=True)
        return decimal.Decimal(int(value)).scaleb(-ltype.annot[2], decimal.Context(prec=100))
    if kind in ("duration", "date64", "time32", "time64"):
        try:
            return pa.scalar(int(value), ltype.values.base.to_arrow()).as_py()
        except (ValueError, OverflowError, pa.ArrowException):
            return int(value)
    if kind == "month_interval":
        return int(value)
    if kind == "day_time_interval":
        return unpack_day_time(int(value))
    return value


def pack_day_time(days: int, milliseconds: int) -> int:
    """The stored int64 of a day_time_interval ``(days, milliseconds)`` (each an int32):
    Arrow's 8 bytes {i32 days, i32 ms} read as one little-endian int64."""
    return (milliseconds << 32) | (days & 0xFFFFFFFF)


def unpack_day_time(value: int) -> tuple[int, int]:
    """``(days, milliseconds)`` of a stored day_time_interval int64."""
    days = value & 0xFFFFFFFF
    return (days - (1 << 32) if days >= 1 << 31 else days), value >> 32


class Relabeling:
    """How a scan builds the batches of an output ``schema`` that may hold interval types
    (whose arrays pyarrow cannot hold: :mod:`rcfmt.interop.cdata`): under ``storage``,
    the schema with them as their storage types, then relabeled as a whole
    (:meth:`batch`); nested fields assembled from storage-typed trees (:meth:`node`)
    wherever ``source`` (the schema the scanned fields come from, filters' lists
    included) holds an interval. Without intervals both are the identity, for the cost
    of a method call."""

    __slots__ = ("schema", "storage", "active", "nested", "_nodes")

    def __init__(self, schema: pa.Schema, source: pa.Schema | None = None):
        from ..interop.cdata import has_intervals, storage_schema

        self.schema = schema
        self.storage = storage_schema(schema)
        self.active = self.storage is not schema
        self.nested = self.active or (source is not None and has_intervals(source))
        self._nodes: dict = {}

    def batch(self, arrays: list) -> pa.RecordBatch:
        """A RecordBatch of ``schema`` from ``arrays`` (interval columns as their storage)."""
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.storage)
        if not self.active:
            return batch
        from ..interop.cdata import relabel

        return relabel(batch, self.schema)

    def node(self, node):
        """``node``'s tree as the storage-typed arrays are assembled (:func:`storage_node`)."""
        if not self.nested:
            return node
        got = self._nodes.get(id(node))
        if got is None or got[0] is not node:
            got = self._nodes[id(node)] = (node, storage_node(node))
        return got[1]


def storage_node(node):
    """A :class:`rcfmt.schema.nested.Node` tree with every interval type in it (leaf
    types) relabeled to its storage type (:mod:`rcfmt.interop.cdata`): the tree that
    shreds and assembles the storage-labeled arrays the writer and the scanner handle
    (``node`` itself when it holds none)."""
    from ..runtime.records import replace

    from ..interop.cdata import has_intervals, storage_type

    if not has_intervals(node.field.type):
        return node
    if node.leaf_type is not None:
        return replace(node, leaf_type=storage_type(node.leaf_type))
    return replace(node, children=tuple(storage_node(c) for c in node.children))
