"""Logical types (what a column means) and physical kinds (how its values are stored).

Arrow is the in-memory model. Every logical type maps to exactly one Arrow type and to a
physical kind:

=====================  ==========================  ================================
logical type           Arrow type                  physical kind / numpy dtype
=====================  ==========================  ================================
bool                   bool                        BOOL / ``bool``
int8..int64            int8..int64                 FIXED / ``<i1`` .. ``<i8``
uint8..uint64          uint8..uint64               FIXED / ``<u1`` .. ``<u8``
float32, float64       float32, float64            FIXED / ``<f4``, ``<f8``
date32                 date32                      FIXED / ``<i4`` (days since epoch)
timestamp(unit, tz)    timestamp(unit, tz)         FIXED / ``<i8`` (units since epoch)
decimal128(p, s)       decimal128(p, s)            FIXED / ``V16`` (two's complement LE)
string                 string / large_string       VARBINARY (UTF-8 bytes)
binary                 binary / large_binary       VARBINARY
=====================  ==========================  ================================

Other Arrow types are *annotated* storage types (``LogicalType.annot`` / ``ext``;
docs/FORMAT.md section 3.1): duration and date64 as int64, decimal32/decimal64 as
int32/int64 (unscaled), decimal256 as binary (32-byte order-preserving keys), halffloat
as float32, null as bool (all NULL), fixed_size_binary as binary, month_interval and
day_time_interval as int32 and int64 (the same bytes: their arrays, which pyarrow cannot
hold in Python, are relabeled a table at a time by :mod:`rcfmt.interop.cdata`),
extension types as their storage. ``name`` is the storage type's, so everything below the Arrow boundary
(encodings, statistics, pruning, evaluation) sees only the storage type;
:mod:`rcfmt.schema.annotated` converts arrays at the boundary and :mod:`rcfmt.predicate.bind`
converts literals.

The *stats domain* of a type is how its min/max values are represented in Python:
ints, floats, bools as numpy scalars of the storage dtype; date32 as days (int);
timestamps as integers in the column's unit; decimals as the unscaled ``int``;
strings and binary as ``bytes`` (UTF-8 for strings), ordered bytewise unsigned.
"""
from __future__ import annotations

import base64
import enum
import json
from functools import cached_property

import numpy as np
import pyarrow as pa

from ..runtime.records import record, replace
from ..errors import SchemaError, UnsupportedError

__all__ = ["PhysicalKind", "LogicalType", "logical_type_from_arrow", "logical_type_from_json"]


class PhysicalKind(enum.IntEnum):
    """How values are laid out before encoding."""

    BOOL = 0  # one bit per value on the wire, numpy bool in memory
    FIXED = 1  # fixed-width little-endian values (1, 2, 4, 8 or 16 bytes)
    VARBINARY = 2  # variable-length byte strings: offsets + data


_INT_NAMES = {
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
}
_FLOAT_NAMES = {"float32": pa.float32(), "float64": pa.float64()}
_TIME_UNITS = ("s", "ms", "us", "ns")


@record(frozen=True)
class LogicalType:
    """A column's logical type; serializable to and from the footer's JSON.

    ``name`` is one of: bool, int8..int64, uint8..uint64, float32, float64, date32,
    timestamp, decimal128, string, binary. ``large`` records that the Arrow type used
    64-bit offsets (large_string / large_binary) so the round trip is exact.
    """

    name: str
    unit: str | None = None  # timestamp
    tz: str | None = None  # timestamp
    precision: int | None = None  # decimal128
    scale: int | None = None  # decimal128
    large: bool = False  # string/binary with 64-bit offsets in Arrow
    #: the Arrow type when it is not ``name``'s own (None for the types above): a tuple
    #: ``(kind, *params)`` -- ("duration", unit), ("time32"|"time64", unit), ("date64",), ("decimal32"|"decimal64"|
    #: "decimal256", precision, scale), ("null",), ("float16",), ("fixed_size_binary",
    #: width). The column is stored, ordered, filtered and pruned as its *storage*
    #: type ``name`` (see :data:`ANNOTATED` and docs/FORMAT.md section 3); only the
    #: Arrow boundary (writing, reading, literals) looks at the annotation.
    annot: tuple | None = None
    #: an extension type over the above: ``(extension name, serialized metadata bytes)``
    ext: tuple | None = None
    #: a run_end_encoded type whose values are the type the fields above describe: its
    #: run-end type ("int16", "int32" or "int64"). Stored decoded, as its values (so
    #: ``annot``/``ext`` stay the values' own: literals, statistics and filters are the
    #: values'); see :attr:`values`
    ree: str | None = None
    #: an extension type over that run_end_encoded type: ``(name, metadata)``, as ``ext``
    ree_ext: tuple | None = None
    #: the storage type of ``ext`` (of ``ree_ext``) as Arrow declares it, when it is not the
    #: stored one: dictionaries and views, stored decoded (docs/FORMAT.md §3.1
    #: ``arrow_storage``); the JSON of :func:`arrow_type_json`, as a canonical string
    ext_storage: str | None = None
    ree_ext_storage: str | None = None

    # ---------------------------------------------------------------- properties
    # (cached: asked per column chunk and per page by readers and writers; a frozen
    # record still has an instance __dict__, which cached_property writes directly)
    @cached_property
    def kind(self) -> PhysicalKind:
        if self.name == "bool":
            return PhysicalKind.BOOL
        if self.name in ("string", "binary"):
            return PhysicalKind.VARBINARY
        return PhysicalKind.FIXED

    @cached_property
    def numpy_dtype(self) -> np.dtype:
        """Storage dtype of one value (bool for BOOL; uint8 bytes for VARBINARY)."""
        return _NUMPY_DTYPES[self.name]

    @cached_property
    def width(self) -> int:
        """Bytes per value for FIXED kinds, 1 for BOOL, 0 for VARBINARY."""
        return 0 if self.kind == PhysicalKind.VARBINARY else self.numpy_dtype.itemsize

    @property
    def is_float(self) -> bool:
        return self.name in _FLOAT_NAMES

    @property
    def is_integer(self) -> bool:
        return self.name in _INT_NAMES

    @property
    def is_signed(self) -> bool:
        return self.name.startswith("int") or self.name in ("date32", "timestamp")

    @property
    def is_string(self) -> bool:
        return self.name == "string"

    @property
    def annotated(self) -> bool:
        """Whether the Arrow type is not the storage type's own (see ``annot``)."""
        return self.annot is not None or self.ext is not None or self.ree is not None

    @cached_property
    def values(self) -> "LogicalType":
        """The values of a run_end_encoded type (``self`` when not one)."""
        return self if self.ree is None else replace(self, ree=None, ree_ext=None, ree_ext_storage=None)

    @cached_property
    def storage(self) -> "LogicalType":
        """The logical type the values are stored, ordered and filtered as (``self``
        when not annotated)."""
        if not self.annotated:
            return self
        return LogicalType(self.name, self.unit, self.tz, self.precision, self.scale, self.large)

    @cached_property
    def base(self) -> "LogicalType":
        """The type without its extension (``self`` when not an extension)."""
        return self if self.ext is None else replace(self, ext=None, ext_storage=None)  # (of a type without ``ree``)

    # ---------------------------------------------------------------- conversions
    def to_arrow(self) -> pa.DataType:
        """The Arrow type (built once per instance: readers ask per column chunk)."""
        return self._arrow

    @cached_property
    def _arrow(self) -> pa.DataType:
        if self.ree_ext is not None:
            return resolved_extension(self.ree_ext, self.ree_ext_storage,
                                      replace(self, ree_ext=None, ree_ext_storage=None).to_arrow())
        if self.ree is not None:
            return pa.run_end_encoded(_RUN_ENDS[self.ree], self.values.to_arrow())
        if self.ext is not None:
            return resolved_extension(self.ext, self.ext_storage, self.base.to_arrow())
        if self.annot is not None:
            return _annotated_arrow(self.annot)
        if self.name == "bool":
            return pa.bool_()
        if self.name in _INT_NAMES:
            return _INT_NAMES[self.name]
        if self.name in _FLOAT_NAMES:
            return _FLOAT_NAMES[self.name]
        if self.name == "date32":
            return pa.date32()
        if self.name == "timestamp":
            return pa.timestamp(self.unit, tz=self.tz)
        if self.name == "decimal128":
            return pa.decimal128(self.precision, self.scale)
        if self.name == "string":
            return pa.large_string() if self.large else pa.string()
        if self.name == "binary":
            return pa.large_binary() if self.large else pa.binary()
        raise UnsupportedError(f"unknown logical type {self.name!r}")

    def to_json(self) -> dict:
        if self.ree_ext is not None:
            return _extension_json(self.ree_ext, replace(self, ree_ext=None, ree_ext_storage=None).to_json(),
                                   self.ree_ext_storage)
        if self.ree is not None:
            return {"type": "run_end_encoded", "run_ends": self.ree, "values": self.values.to_json()}
        if self.ext is not None:
            return _extension_json(self.ext, self.base.to_json(), self.ext_storage)
        if self.annot is not None:
            kind = self.annot[0]
            out = {"type": kind}
            if kind in ("duration", "time32", "time64"):
                out["unit"] = self.annot[1]
            elif kind in ("decimal32", "decimal64", "decimal256"):
                out["precision"], out["scale"] = self.annot[1], self.annot[2]
            elif kind == "fixed_size_binary":
                out["byte_width"] = self.annot[1]
            return out
        out: dict = {"type": self.name}
        if self.name == "timestamp":
            out["unit"] = self.unit
            if self.tz is not None:
                out["tz"] = self.tz
        elif self.name == "decimal128":
            out["precision"] = self.precision
            out["scale"] = self.scale
        elif self.large:
            out["large"] = True
        return out

    def __str__(self) -> str:
        return str(self.to_arrow())


_NUMPY_DTYPES = {
    "bool": np.dtype(bool),
    **{name: np.dtype(t.to_pandas_dtype()).newbyteorder("<") for name, t in _INT_NAMES.items()},
    "float32": np.dtype("<f4"),
    "float64": np.dtype("<f8"),
    "date32": np.dtype("<i4"),
    "timestamp": np.dtype("<i8"),
    "decimal128": np.dtype("V16"),
    "string": np.dtype(np.uint8),
    "binary": np.dtype(np.uint8),
}


def logical_type_from_arrow(t: pa.DataType) -> LogicalType:
    """Map an Arrow type to its logical type, or raise :class:`SchemaError`."""
    if type(t) is pa.DataType:  # (the plain types: asked per column, chunk and page; immutable, so kept)
        known = _PLAIN_TYPES.get(t)
        if known is None:
            known = _PLAIN_TYPES[t] = _logical_type_from_arrow(t)
        return known
    return _logical_type_from_arrow(t)


#: the logical types of the plain Arrow types (no parameters: ints, floats, strings, ...)
_PLAIN_TYPES: dict = {}


def _logical_type_from_arrow(t: pa.DataType) -> LogicalType:
    if pa.types.is_dictionary(t):
        return logical_type_from_arrow(t.value_type)
    if isinstance(t, pa.BaseExtensionType):
        return _extension_from_arrow(t)
    if pa.types.is_run_end_encoded(t):  # (values of any flat type; dictionaries decoded)
        try:
            vt = t.value_type
            values = logical_type_from_arrow(_VIEW_VALUES[vt] if pa.types.is_string_view(vt)
                                             or pa.types.is_binary_view(vt) else vt)
        except SchemaError:
            values = None
        if values is not None and values.ree is not None and values.ree_ext is None:
            values = values.values  # (run_end_encoded values of run_end_encoded values: the inner runs undone)
        elif values is not None and values.ree is not None and isinstance(vt, pa.BaseExtensionType):
            # (values of an extension over runs: the extension over their values, its runs declared)
            declared = values.ree_ext_storage or canonical_json(arrow_type_json(vt.storage_type))
            values = replace(values.values, ext=values.ree_ext, ext_storage=declared)
        if values is None or values.ree is not None or str(t.run_end_type) not in _RUN_ENDS:
            raise SchemaError(f"unsupported column type {t}: run_end_encoded values of type {t.value_type} "
                              "(rcfmt stores run_end_encoded arrays of the flat types it stores)")
        return replace(values, ree=str(t.run_end_type))
    annot = _annotation(t)
    if annot is not None:
        return _ANNOTATED_STORAGE[annot[0]](annot)
    if pa.types.is_boolean(t):
        return LogicalType("bool")
    for name, at in (*_INT_NAMES.items(), *_FLOAT_NAMES.items()):
        if t == at:
            return LogicalType(name)
    if pa.types.is_date32(t):
        return LogicalType("date32")
    if pa.types.is_timestamp(t):
        return LogicalType("timestamp", unit=t.unit, tz=t.tz)
    if pa.types.is_decimal128(t):
        return LogicalType("decimal128", precision=t.precision, scale=t.scale)
    if pa.types.is_string(t):
        return LogicalType("string")
    if pa.types.is_large_string(t):
        return LogicalType("string", large=True)
    if pa.types.is_binary(t):
        return LogicalType("binary")
    if pa.types.is_large_binary(t):
        return LogicalType("binary", large=True)
    raise SchemaError(f"unsupported column type {t}")


def same_logical_type(a: LogicalType, b: LogicalType) -> bool:
    """Whether ``a`` and ``b`` hold the same values (the offset width of strings and
    binary, ``large``, aside)."""
    return (a.name, a.unit, a.tz, a.precision, a.scale, a.annot, a.ext, a.ree, a.ree_ext, a.ext_storage,
            a.ree_ext_storage) == \
        (b.name, b.unit, b.tz, b.precision, b.scale, b.annot, b.ext, b.ree, b.ree_ext, b.ext_storage, b.ree_ext_storage)


def logical_type_from_json(obj: dict, _in_runs: bool = False) -> LogicalType:
    """Parse the footer's JSON type description; unknown types raise UnsupportedError.
    (``_in_runs``: ``obj`` is the values of a run_end_encoded type.)"""
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise ValueError(f"malformed type description {obj!r}")
    name = obj["type"]
    if name in _ANNOTATED_STORAGE or name in ("extension", "run_end_encoded"):
        return _annotated_from_json(obj, _in_runs)
    if name in _NUMPY_DTYPES and name not in ("timestamp", "decimal128"):
        large = bool(obj.get("large", False))
        if large and name not in ("string", "binary"):
            raise ValueError(f"'large' is only valid for string/binary, got {name}")
        return LogicalType(name, large=large)
    if name == "timestamp":
        unit, tz = obj.get("unit"), obj.get("tz")
        if unit not in _TIME_UNITS or not (tz is None or isinstance(tz, str)):
            raise ValueError(f"malformed timestamp type {obj!r}")
        return LogicalType("timestamp", unit=unit, tz=tz)
    if name == "decimal128":
        p, s = obj.get("precision"), obj.get("scale")
        # Arrow allows scales beyond the precision (decimal128(5, 7) is 0.00ddddd)
        if not (isinstance(p, int) and isinstance(s, int) and 1 <= p <= 38 and abs(s) < 2**31):
            raise ValueError(f"malformed decimal type {obj!r}")
        return LogicalType("decimal128", precision=p, scale=s)
    raise UnsupportedError(f"column type {name!r} is not supported by this version of rcfmt")


# ====================================================================== annotated types
# Arrow types stored as one of the types above (docs/FORMAT.md section 3, "Stored as").
# Every ordered one keeps its order in its storage: statistics, page indexes, bloom
# filters and bitmap indexes of the storage type serve it unchanged.
_DECIMAL_LIMITS = {"decimal32": 9, "decimal64": 18, "decimal256": 76}
_ANNOTATED_STORAGE = {
    "duration": lambda a: LogicalType("int64", annot=a),          # i64 units, signed
    "date64": lambda a: LogicalType("int64", annot=a),            # i64 milliseconds since the epoch
    "time32": lambda a: LogicalType("int32", annot=a),            # i32 units since midnight
    "time64": lambda a: LogicalType("int64", annot=a),            # i64 units since midnight
    "decimal32": lambda a: LogicalType("int32", annot=a),         # the unscaled integer
    "decimal64": lambda a: LogicalType("int64", annot=a),
    "decimal256": lambda a: LogicalType("binary", annot=a),       # 32-byte order-preserving key
    "null": lambda a: LogicalType("bool", annot=a),               # every slot NULL
    "float16": lambda a: LogicalType("float32", annot=a),         # widened exactly
    "fixed_size_binary": lambda a: LogicalType("binary", annot=a),
    "month_day_nano_interval": lambda a: LogicalType("binary", annot=a),  # 16 bytes: i32 months, i32 days, i64 ns
    "month_interval": lambda a: LogicalType("int32", annot=a),    # i32 months, signed
    # the 8 bytes {i32 days, i32 ms} as one little-endian i64: days in the low 32 bits, ms in the
    # high 32 (its order serves equality only: a day has no fixed length, Arrow defines no order)
    "day_time_interval": lambda a: LogicalType("int64", annot=a),
}
_RUN_ENDS = {"int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64()}
#: run_end_encoded values stored as another type (rcfmt.schema.tables.VIEW_STORAGE)
_VIEW_VALUES = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}
#: extension types rcfmt knows apart from Python ``pa.ExtensionType`` subclasses (their
#: serialized metadata is empty)
_CANONICAL_EXTENSIONS = {"arrow.uuid": pa.uuid, "arrow.json": pa.json_, "arrow.bool8": pa.bool8}


def _annotation(t: pa.DataType) -> tuple | None:
    if pa.types.is_duration(t):
        return ("duration", t.unit)
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        return ("time32" if pa.types.is_time32(t) else "time64", t.unit)
    if pa.types.is_date64(t):
        return ("date64",)
    for kind, test in (("decimal32", pa.types.is_decimal32), ("decimal64", pa.types.is_decimal64),
                       ("decimal256", pa.types.is_decimal256)):
        if test(t):
            return (kind, t.precision, t.scale)
    if pa.types.is_null(t):
        return ("null",)
    if pa.types.is_float16(t):
        return ("float16",)
    if pa.types.is_fixed_size_binary(t):
        return ("fixed_size_binary", t.byte_width)
    if t == pa.month_day_nano_interval():
        return ("month_day_nano_interval",)
    if t.id in _INTERVAL_KINDS:  # (pyarrow has no Python class for their arrays: rcfmt.interop.cdata)
        return (_INTERVAL_KINDS[t.id],)
    return None


#: Arrow type ids of the intervals pyarrow cannot wrap as arrays, by their JSON name
_INTERVAL_KINDS = {21: "month_interval", 22: "day_time_interval"}


def _annotated_arrow(a: tuple) -> pa.DataType:
    kind = a[0]
    if kind == "duration":
        return pa.duration(a[1])
    if kind in ("time32", "time64"):
        return getattr(pa, kind)(a[1])
    if kind == "date64":
        return pa.date64()
    if kind in _DECIMAL_LIMITS:
        return getattr(pa, kind)(a[1], a[2])
    if kind == "null":
        return pa.null()
    if kind == "float16":
        return pa.float16()
    if kind == "month_day_nano_interval":
        return pa.month_day_nano_interval()
    if kind in ("month_interval", "day_time_interval"):
        from ..interop import cdata

        return cdata.month_interval() if kind == "month_interval" else cdata.day_time_interval()
    return pa.binary(a[1])


#: extension types written in this process, by (name, metadata), one per storage type:
#: read back as themselves even when their class is not registered with pyarrow
_SEEN_EXTENSIONS: dict = {}


def _extension_from_arrow(t: pa.BaseExtensionType) -> LogicalType:
    name, meta = extension_key(t)
    declared = t.storage_type
    decoded = decoded_flat(declared)  # (dictionaries and views are stored decoded: ``arrow_storage``)
    try:
        storage = logical_type_from_arrow(decoded)
    except SchemaError:
        raise SchemaError(f"unsupported column type {t}: an extension of {declared} (rcfmt stores "
                          "extensions of the flat and nested types it stores)") from None
    if storage.ext is not None or storage.ree_ext is not None or declared.id in _INTERVAL_KINDS \
            or (storage.ree is not None and not same_type(storage.to_arrow(), stored_flat(declared))):
        # (an extension of an extension: no Arrow format carries it; intervals: no Python arrays)
        raise SchemaError(f"unsupported column type {t}: an extension of {declared}")
    extra = None if same_type(stored_flat(declared), declared) else canonical_json(arrow_type_json(declared))
    # (over run_end_encoded values: the extension of the run_end_encoded type, not of its values)
    if storage.ree is not None:
        return replace(storage, ree_ext=(name, meta), ree_ext_storage=extra)
    return replace(storage, ext=(name, meta), ext_storage=extra)


def decoded_flat(t: pa.DataType) -> pa.DataType:
    """A flat type as rcfmt stores it: dictionaries as their values, string and binary
    views as their offset forms, inside run_end_encoded values too."""
    if pa.types.is_dictionary(t):
        return decoded_flat(t.value_type)
    if pa.types.is_run_end_encoded(t):
        return pa.run_end_encoded(t.run_end_type, decoded_flat(t.value_type))
    return _VIEW_VALUES.get(t, t) if not isinstance(t, pa.BaseExtensionType) else t


def same_type(a: pa.DataType, b: pa.DataType) -> bool:
    """``a == b``, also where a run_end_encoded type's values hold an extension type:
    pyarrow 26 then takes two run_end_encoded types of different values for equal (its
    fingerprint of such a type leaves the values out), e.g.
    ``run_end_encoded<int16, list<ext<A>>> == run_end_encoded<int16, large_list<ext<B>>>``."""
    return a == b and _runs_agree(a, b)


def same_schema(a: pa.Schema, b: pa.Schema) -> bool:
    """``a.equals(b)`` (names, types, nullability; metadata aside), types compared by
    :func:`same_type`."""
    return a.equals(b) and all(same_type(x.type, y.type) for x, y in zip(a, b))


def _runs_agree(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether the values of every run_end_encoded type in ``a`` and ``b`` (types pyarrow
    finds equal, so of one shape) are the same types."""
    if pa.types.is_run_end_encoded(a):
        return same_type(a.value_type, b.value_type)
    if isinstance(a, pa.BaseExtensionType):
        return _runs_agree(a.storage_type, b.storage_type)
    if pa.types.is_dictionary(a):
        return _runs_agree(a.value_type, b.value_type)
    return all(_runs_agree(a.field(i).type, b.field(i).type) for i in range(a.num_fields))


def stored_flat(t: pa.DataType) -> pa.DataType:
    """:func:`decoded_flat` of ``t`` with runs of runs as one level of runs (the outer
    run ends): the flat type rcfmt stores an extension's declared storage ``t`` as."""
    t = decoded_flat(t)
    if pa.types.is_run_end_encoded(t) and pa.types.is_run_end_encoded(t.value_type):
        return stored_flat(pa.run_end_encoded(t.run_end_type, t.value_type.value_type))
    return t


def resolved_extension(ext: tuple, declared: str | pa.DataType | None, decoded: pa.DataType) -> pa.DataType:
    """The Arrow type of an extension ``ext`` stored as ``decoded``: the extension type
    over its ``declared`` storage (:func:`arrow_type_json`, or the type; None: ``decoded``
    itself) when this process knows it (:func:`extension_type`), else ``decoded``."""
    if declared is None:
        return extension_type(ext, decoded)
    if isinstance(declared, str):
        declared = arrow_type_from_json(json.loads(declared))
    t = extension_type(ext, declared)
    return t if isinstance(t, pa.BaseExtensionType) else decoded


def _extension_json(ext: tuple, storage: dict, declared: str | None) -> dict:
    out = {"type": "extension", "extension_name": ext[0],
           "extension_metadata": base64.b64encode(ext[1]).decode("ascii"), "storage": storage}
    if declared is not None:
        out["arrow_storage"] = json.loads(declared)
    return out


# ---------------------------------------------------------------------- Arrow types as JSON
#: deepest Arrow type :func:`arrow_type_from_json` reads (a forged footer cannot recurse without end)
MAX_TYPE_DEPTH = 128


def canonical_json(obj) -> str:
    """``obj`` as one JSON string (for hashable, comparable fields: :func:`arrow_type_json`
    writes a type one way)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def arrow_type_json(t: pa.DataType) -> dict:
    """Any Arrow type as JSON (docs/FORMAT.md §3.1 ``arrow_storage``): the schema entry of a
    flat type (section 3, 3.1), and ``dictionary`` (``index``, ``ordered``?, ``values``),
    ``string_view``, ``binary_view``, ``run_end_encoded`` (``run_ends``, ``values``),
    ``extension`` (``extension_name``, ``extension_metadata``, ``storage``), and the
    nested types as the dataset index spells them, their fields ``{"name", "nullable",
    ...type}`` (``list_view`` and ``large_list_view`` as lists)."""
    if pa.types.is_dictionary(t):
        out = {"type": "dictionary", "index": str(t.index_type), "values": arrow_type_json(t.value_type)}
        if t.ordered:
            out["ordered"] = True
        return out
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return {"type": str(t)}
    if pa.types.is_run_end_encoded(t):
        return {"type": "run_end_encoded", "run_ends": str(t.run_end_type), "values": arrow_type_json(t.value_type)}
    if isinstance(t, pa.BaseExtensionType):
        name, meta = extension_key(t)
        return {"type": "extension", "extension_name": name,
                "extension_metadata": base64.b64encode(meta).decode("ascii"),
                "storage": arrow_type_json(t.storage_type)}
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [_field_json(f) for f in t]}
    if pa.types.is_union(t):
        return {"type": "union", "mode": t.mode, "type_codes": list(t.type_codes),
                "fields": [_field_json(f) for f in t]}
    if pa.types.is_map(t):
        out = {"type": "map", "key": _field_json(t.key_field), "value": _field_json(t.item_field)}
        if t.keys_sorted:
            out["keys_sorted"] = True
        return out
    if pa.types.is_fixed_size_list(t):
        return {"type": "fixed_size_list", "size": t.list_size, "item": _field_json(t.value_field)}
    for kind in ("list", "large_list", "list_view", "large_list_view"):
        if getattr(pa.types, f"is_{kind}")(t):
            return {"type": kind, "item": _field_json(t.value_field)}
    return logical_type_from_arrow(t).to_json()


def _field_json(f: pa.Field) -> dict:
    return {"name": f.name, "nullable": bool(f.nullable), **arrow_type_json(f.type)}


def arrow_type_from_json(obj, depth: int = 0) -> pa.DataType:
    """Inverse of :func:`arrow_type_json` (an extension this process does not know reads
    as its storage type); malformed input raises ValueError, a type this version does not
    know UnsupportedError."""
    if depth > MAX_TYPE_DEPTH or not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise ValueError(f"malformed Arrow type {obj!r}")
    kind = obj["type"]
    sub = depth + 1
    try:
        if kind == "dictionary":
            index = _INT_NAMES.get(obj.get("index"))
            if index is None or not isinstance(obj.get("ordered", False), bool):
                raise ValueError(f"malformed dictionary type {obj!r}")
            return pa.dictionary(index, arrow_type_from_json(obj.get("values"), sub), obj.get("ordered", False))
        if kind in ("string_view", "binary_view"):
            return getattr(pa, kind)()
        if kind == "run_end_encoded":
            if obj.get("run_ends") not in _RUN_ENDS:
                raise ValueError(f"malformed run_end_encoded type {obj!r}")
            return pa.run_end_encoded(_RUN_ENDS[obj["run_ends"]], arrow_type_from_json(obj.get("values"), sub))
        if kind == "extension":  # (its ``storage`` is the declared storage, of any type)
            name, meta = obj.get("extension_name"), obj.get("extension_metadata")
            if not isinstance(name, str) or not isinstance(meta, str):
                raise ValueError(f"malformed extension type {obj!r}")
            return extension_type((name, base64.b64decode(meta, validate=True)),
                                  arrow_type_from_json(obj["storage"], sub))
        if kind == "struct":
            return pa.struct([_field_from_json(f, sub) for f in _listed(obj, "fields")])
        if kind == "union":
            mode, codes = obj.get("mode"), obj.get("type_codes")
            if mode not in ("sparse", "dense") or not isinstance(codes, list) \
                    or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 128 for c in codes):
                raise ValueError(f"malformed union type {obj!r}")
            return pa.union([_field_from_json(f, sub) for f in _listed(obj, "fields")], mode, codes)
        if kind == "map":
            return pa.map_(_field_from_json(obj.get("key"), sub), _field_from_json(obj.get("value"), sub),
                           keys_sorted=bool(obj.get("keys_sorted", False)))
        if kind == "fixed_size_list":
            size = obj.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < 2**31:
                raise ValueError(f"malformed fixed_size_list type {obj!r}")
            return pa.list_(_field_from_json(obj.get("item"), sub), size)
        if kind in ("list", "large_list", "list_view", "large_list_view"):
            return getattr(pa, kind + ("_" if kind == "list" else ""))(_field_from_json(obj.get("item"), sub))
    except (pa.ArrowException, TypeError) as exc:  # (Arrow refuses the shape: repeated codes, ...)
        raise ValueError(f"malformed Arrow type {obj!r}: {exc}") from None
    return logical_type_from_json(obj).to_arrow()


def _listed(obj: dict, key: str) -> list:
    if not isinstance(obj.get(key), list):
        raise ValueError(f"malformed Arrow type {obj!r}")
    return obj[key]


def _field_from_json(obj, depth: int) -> pa.Field:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not isinstance(obj.get("nullable"), bool):
        raise ValueError(f"malformed Arrow field {obj!r}")
    return pa.field(obj["name"], arrow_type_from_json(obj, depth), obj["nullable"])


def extension_key(t: pa.BaseExtensionType) -> tuple[str, bytes]:
    """``(ARROW:extension:name, ARROW:extension:metadata)`` of extension type ``t``, or
    :class:`SchemaError` when rcfmt cannot serialize it. The type is remembered, so a
    file read back in this process has it even if pyarrow has not registered it."""
    name = t.extension_name
    if isinstance(t, pa.ExtensionType):  # a Python subclass
        meta = bytes(t.__arrow_ext_serialize__())
    elif name in _CANONICAL_EXTENSIONS:
        meta = b""
    else:  # (C++ extensions, e.g. arrow.opaque: their metadata through the C data interface)
        from ..interop.cdata import extension_metadata

        exported = extension_metadata(t)
        if exported is None or exported[0] != name:
            raise SchemaError(f"unsupported column type {t}: the extension type {name!r} does not export its "
                              "metadata through the Arrow C data interface")
        meta = exported[1]
    seen = _SEEN_EXTENSIONS.setdefault((name, meta), [])
    if not any(s == t for s in seen):  # (one per storage type, the last written: a class defined again
        # -- a notebook cell run twice -- is the one its values are written and read back as)
        kept = [s for s in seen if not same_type(s.storage_type, t.storage_type)]
        redefined = len(kept) < len(seen)
        seen[:] = kept + [t]
        if redefined:
            for forget in _EXTENSION_LISTENERS:  # (what was derived from the old class: footers parsed)
                forget()
    return name, meta


#: functions called when an extension type written before is written as another class
_EXTENSION_LISTENERS: list = []


def on_extension_redefined(forget) -> None:
    """Call ``forget()`` whenever a class of an extension type written before is replaced
    by another written under the same name and storage (caches of types derived from it
    drop them)."""
    _EXTENSION_LISTENERS.append(forget)


def extension_type(ext: tuple, storage: pa.DataType) -> pa.DataType:
    """The extension type named ``ext`` over ``storage``: pyarrow's registered type of
    that name (canonical ones included), else one written in this process, else the
    storage type itself (the name is then lost: docs/FORMAT.md section 3)."""
    name, meta = ext
    if name in _CANONICAL_EXTENSIONS and not meta:
        t = _CANONICAL_EXTENSIONS[name]()
        if same_type(t.storage_type, storage):
            return t
    for seen in _SEEN_EXTENSIONS.get((name, meta), ()):
        if same_type(seen.storage_type, storage):
            return seen
    import pyarrow.ipc  # noqa: F401 (the registry is reached through a schema's IPC form)
    field = pa.field("x", storage, metadata={b"ARROW:extension:name": name.encode("utf-8"),
                                             b"ARROW:extension:metadata": meta})
    try:
        t = pa.ipc.read_schema(pa.py_buffer(pa.schema([field]).serialize())).field(0).type
    except (pa.ArrowException, ValueError, TypeError):
        return storage
    return t if isinstance(t, pa.BaseExtensionType) else storage


def _annotated_from_json(obj: dict, in_runs: bool) -> LogicalType:
    kind = obj["type"]
    if kind == "run_end_encoded":
        run_ends, values = obj.get("run_ends"), obj.get("values")
        if run_ends not in _RUN_ENDS or not isinstance(values, dict):
            raise ValueError(f"malformed run_end_encoded type {obj!r}")
        base = logical_type_from_json(values, True)  # (any type of section 3 or 3.1 but run_end_encoded)
        if base.ree is not None:
            raise ValueError(f"malformed run_end_encoded type {obj!r}")
        return replace(base, ree=run_ends)
    if kind == "extension":
        name, meta, storage = obj.get("extension_name"), obj.get("extension_metadata"), obj.get("storage")
        if not isinstance(name, str) or not isinstance(meta, str) or not isinstance(storage, dict):
            raise ValueError(f"malformed extension type {obj!r}")
        base = logical_type_from_json(storage)
        if base.ree_ext is not None or (base.ext is not None and base.ree is None):
            raise ValueError(f"malformed extension type {obj!r}")
        try:
            raw = base64.b64decode(meta, validate=True)
        except ValueError:
            raise ValueError(f"malformed extension metadata {obj!r}") from None
        declared = None
        if "arrow_storage" in obj:  # (the storage as Arrow declares it: it must decode to ``storage``)
            declared = arrow_type_from_json(obj["arrow_storage"])
            stored = (base if base.ree is not None else base.base).to_arrow()
            # (the values of a run_end_encoded type: the extension's runs, declared, are stored as their values)
            runs_inside = in_runs and base.ree is None and pa.types.is_run_end_encoded(declared)
            as_stored = stored_flat(declared)
            if not same_type(as_stored.value_type if runs_inside else as_stored, stored) \
                    or same_type(as_stored, declared) and not runs_inside:
                raise ValueError(f"extension {name!r}: arrow_storage {declared} is not stored as {stored}")
            declared = canonical_json(arrow_type_json(declared))
        if base.ree is not None:
            return replace(base, ree_ext=(name, raw), ree_ext_storage=declared)
        return replace(base, ext=(name, raw), ext_storage=declared)
    if kind == "duration":
        if obj.get("unit") not in _TIME_UNITS:
            raise ValueError(f"malformed duration type {obj!r}")
        annot = ("duration", obj["unit"])
    elif kind in ("time32", "time64"):
        if obj.get("unit") not in (("s", "ms") if kind == "time32" else ("us", "ns")):
            raise ValueError(f"malformed {kind} type {obj!r}")
        annot = (kind, obj["unit"])
    elif kind in _DECIMAL_LIMITS:
        p, s = obj.get("precision"), obj.get("scale")
        if not (isinstance(p, int) and isinstance(s, int) and not isinstance(p, bool)
                and 1 <= p <= _DECIMAL_LIMITS[kind] and abs(s) < 2**31):
            raise ValueError(f"malformed decimal type {obj!r}")
        annot = (kind, p, s)
    elif kind == "fixed_size_binary":
        w = obj.get("byte_width")
        if not (isinstance(w, int) and not isinstance(w, bool) and 0 <= w < 2**31):
            raise ValueError(f"malformed fixed_size_binary type {obj!r}")
        annot = (kind, w)
    else:
        annot = (kind,)
    return _ANNOTATED_STORAGE[kind](annot)
