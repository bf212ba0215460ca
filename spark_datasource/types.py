"""Type mapping between rcfmt (Arrow types) and Spark SQL, and batch conversion.

Reading (rcfmt -> Spark):

============================  =========================  ===============================
rcfmt / Arrow type            Spark type                 batch conversion
============================  =========================  ===============================
bool                          BOOLEAN                    none
int8, int16, int32, int64     BYTE, SHORT, INT, BIGINT   none
uint8, uint16, uint32         SHORT, INT, BIGINT         widened (exact)
uint64                        DECIMAL(20, 0)             exact
float32, float64              FLOAT, DOUBLE              none
float16                       FLOAT                      widened (exact)
decimal32/64/128/256(p, s)    DECIMAL(p, s)              to decimal128 (exact); p <= 38
decimal(p, s), s < 0          DECIMAL(p - s, 0)          rescaled (exact); p - s <= 38
date32, date64                DATE                       date64 -> date32
timestamp(unit, tz=...)       TIMESTAMP                  to microseconds, UTC
timestamp(unit)               TIMESTAMP_NTZ              to microseconds
duration(unit)                INTERVAL DAY TO SECOND     to microseconds
string (large too)            STRING                     large_string -> string
binary (large too)            BINARY                     large_binary -> binary
fixed_size_binary[N]          BINARY                     to binary
extension types (arrow.uuid)  their storage's type       the storage (uuid: 16 bytes)
null                          VOID (NullType)            none
============================  =========================  ===============================

Spark has no type for the rest (intervals of months, of (days, milliseconds) or of
(months, days, nanos), unions, decimals of over 38 digits): a column of one is refused
by name when the relation is loaded.

Timestamps and durations in seconds and milliseconds convert exactly (an out-of-range
value raises); nanoseconds are **floored** to microseconds (Spark's precision), and
pushed filters on such timestamp columns are rewritten to ranges so that they agree with
the floored values (on such duration columns they are not pushed).
Every Spark field is nullable.

Writing (Spark -> rcfmt) is the inverse: BYTE..BIGINT -> int8..int64, FLOAT/DOUBLE ->
float32/float64, DECIMAL(p, s) -> decimal128(p, s), DATE -> date32, TIMESTAMP ->
timestamp('us', tz='UTC') (instants, whatever the session time zone), TIMESTAMP_NTZ ->
timestamp('us'), STRING -> string, BINARY -> binary, BOOLEAN -> bool, and nested: ARRAY ->
list<element>, STRUCT -> struct, MAP -> map (read back as the same Spark types; lists,
large lists and fixed-size lists of rcfmt data read as ARRAY). Other Spark types
(year-month intervals, variant, NULL) are refused when the write starts; INTERVAL DAY TO
SECOND is stored as duration('us').
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import types as T

__all__ = ["to_spark_type", "to_spark_schema", "spark_arrow_schema", "to_rcfmt_type", "to_rcfmt_schema",
           "to_spark_batch", "BatchConverter"]


def to_spark_type(t: pa.DataType, name: str = "?") -> T.DataType:
    """The Spark type a column of Arrow/rcfmt type ``t`` is read as."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if isinstance(t, pa.BaseExtensionType):  # arrow.uuid and others: read as their storage
        t = t.storage_type
    if pa.types.is_boolean(t):
        return T.BooleanType()
    if pa.types.is_null(t):
        return T.NullType()
    simple = {
        pa.int8(): T.ByteType(), pa.int16(): T.ShortType(), pa.int32(): T.IntegerType(), pa.int64(): T.LongType(),
        pa.uint8(): T.ShortType(), pa.uint16(): T.IntegerType(), pa.uint32(): T.LongType(),
        pa.uint64(): T.DecimalType(20, 0), pa.float16(): T.FloatType(), pa.float32(): T.FloatType(),
        pa.float64(): T.DoubleType(), pa.date32(): T.DateType(), pa.date64(): T.DateType(),
    }
    for at, st in simple.items():
        if t == at:
            return st
    if pa.types.is_decimal(t):
        if 0 <= t.scale <= t.precision <= 38:
            return T.DecimalType(t.precision, t.scale)
        if t.scale < 0 and t.precision - t.scale <= 38:
            return T.DecimalType(t.precision - t.scale, 0)
        raise TypeError(f"column {name!r}: {t} has no exact Spark type (Spark's decimals hold 38 digits)")
    if pa.types.is_duration(t):
        return T.DayTimeIntervalType()
    if pa.types.is_fixed_size_binary(t):
        return T.BinaryType()
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz is not None else T.TimestampNTZType()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return T.StringType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return T.BinaryType()
    if pa.types.is_struct(t):
        return T.StructType([T.StructField(f.name, to_spark_type(f.type, f"{name}.{f.name}"), True) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return T.ArrayType(to_spark_type(t.value_type, f"{name}.{t.value_field.name}"), True)
    if pa.types.is_map(t):
        return T.MapType(to_spark_type(t.key_type, f"{name}.key"), to_spark_type(t.item_type, f"{name}.value"), True)
    raise TypeError(f"column {name!r}: type {t} has no Spark mapping")


def to_spark_schema(schema: pa.Schema) -> T.StructType:
    return T.StructType([T.StructField(f.name, to_spark_type(f.type, f.name), True) for f in schema])


def spark_arrow_schema(schema: T.StructType) -> pa.Schema:
    """The Arrow schema Spark requires of the batches a reader yields for ``schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def to_rcfmt_type(t: T.DataType, name: str = "?") -> pa.DataType:
    """The Arrow type rcfmt stores a Spark column of type ``t`` as."""
    mapping = [
        (T.BooleanType, pa.bool_()), (T.ByteType, pa.int8()), (T.ShortType, pa.int16()),
        (T.IntegerType, pa.int32()), (T.LongType, pa.int64()), (T.FloatType, pa.float32()),
        (T.DoubleType, pa.float64()), (T.DateType, pa.date32()), (T.BinaryType, pa.binary()),
    ]
    for st, at in mapping:
        if type(t) is st:
            return at
    if isinstance(t, T.DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, T.DayTimeIntervalType):  # microseconds, as Spark holds them
        return pa.duration("us")
    if isinstance(t, T.TimestampNTZType):
        return pa.timestamp("us")
    if isinstance(t, T.TimestampType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(t, T.StringType):  # (collated strings are stored as their UTF-8 bytes)
        return pa.string()
    if isinstance(t, T.StructType):
        return pa.struct([pa.field(f.name, to_rcfmt_type(f.dataType, f"{name}.{f.name}"), f.nullable)
                          for f in t.fields])
    if isinstance(t, T.ArrayType):  # named as Spark's (and Parquet's) Arrow batches name it
        return pa.list_(pa.field("element", to_rcfmt_type(t.elementType, f"{name}.element"), t.containsNull))
    if isinstance(t, T.MapType):
        return pa.map_(pa.field("key", to_rcfmt_type(t.keyType, f"{name}.key"), False),
                       pa.field("value", to_rcfmt_type(t.valueType, f"{name}.value"), t.valueContainsNull))
    raise TypeError(f"column {name!r}: Spark type {t.simpleString()} cannot be stored in rcfmt")


def to_rcfmt_schema(schema: T.StructType) -> pa.Schema:
    return pa.schema([pa.field(f.name, to_rcfmt_type(f.dataType, f.name), True) for f in schema.fields])


def _floor_ns_to_us(arr: pa.Array, target: pa.DataType) -> pa.Array:
    ints = arr.cast(pa.int64())
    values = np.asarray(ints.fill_null(0).to_numpy(zero_copy_only=False), np.int64) // 1000
    mask = None if arr.null_count == 0 else np.asarray(arr.is_null().to_numpy(zero_copy_only=False), bool)
    return pa.array(values, pa.int64(), mask=mask).view(target)


def _convert(arr, target: pa.DataType):
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if t == target:
        return arr
    if pa.types.is_dictionary(t):
        arr = arr.cast(t.value_type)
        t = arr.type
    if isinstance(t, pa.BaseExtensionType):
        arr = arr.storage
        t = arr.type
    if (pa.types.is_timestamp(t) or pa.types.is_duration(t)) and t.unit == "ns":
        return _floor_ns_to_us(arr, target)
    return arr if t == target else arr.cast(target)


class BatchConverter:
    """Turns rcfmt batches (dataset types) into the exact batches Spark expects."""

    def __init__(self, target: pa.Schema):
        self.target = target

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.schema.equals(self.target):
            return batch
        arrays = [_convert(batch.column(batch.schema.get_field_index(f.name)), f.type) for f in self.target]
        return pa.RecordBatch.from_arrays(arrays, schema=self.target)


def to_spark_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    return BatchConverter(target)(batch)
