"""Binding: an :class:`~rcfmt.predicate.expr.Expr` (or DNF filter) resolved against a schema
into a bound tree (:mod:`rcfmt.predicate.nnf`), literals checked and converted to each
column's stats domain by exact value (the rules are stated in :mod:`rcfmt.predicate.expr`),
and literals as Arrow values of the column's type for evaluation.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math
import numbers
import uuid as _uuid
from fractions import Fraction

import numpy as np
import pyarrow as pa

from ..runtime.records import replace
from ..errors import FilterError, SchemaError
from ..schema.annotated import int_key, pack_day_time
from ..schema.nested_schemas import UNFILTERABLE_KEY
from ..schema.types import LogicalType, logical_type_from_arrow
from .expr import (OPS, And, Comparison, Expr, IsIn, IsNan, IsNull, IsValid, ListContains, Not, Or, StartsWith,
                   to_expr)
from .nnf import (BoundAnd, BoundExpr, BoundListContains, BoundNot, BoundOr, Cmp, Folded, InSet, Leaf, NanCheck,
                  NullCheck, Prefix, Ref, is_list_type, leaves)

__all__ = ["bind", "check_type", "arrow_values", "unscaled_type"]


# =============================================================== bind
def bind(filter, schema: pa.Schema) -> BoundExpr | None:
    """Resolve columns and convert literals; None for no filter.

    ``filter`` is anything :func:`to_expr` accepts. Unknown columns raise
    :class:`SchemaError`; literals that cannot be compared with the column's type raise
    :class:`FilterError`. The tree keeps its shape (``~`` stays a :class:`BoundNot`).
    """
    if isinstance(filter, BoundExpr):
        for leaf in leaves(filter):
            if isinstance(leaf, BoundListContains):
                check_type(leaf.list_ref, _field(schema, leaf.list_name).type)
            else:
                check_type(leaf.column, _resolve(schema, leaf.column.name).type)
        return filter
    expr = to_expr(filter)
    if expr is None:
        return None
    try:
        return _bind(expr, schema)
    except RecursionError:
        raise FilterError("the filter is nested too deeply (NOTs or AND/OR within one another); write it "
                          "flatter") from None


def check_type(ref: Ref, t: pa.DataType) -> None:
    """Raise SchemaError unless ``t`` has the logical type ``ref`` was bound to (any
    offsets; a list's elements for a list)."""
    if is_list_type(ref.type) != is_list_type(t):
        raise SchemaError(f"column {ref.name!r} was bound as {ref.type}, but is {t} here")
    if is_list_type(t):
        t = t.value_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if replace(logical_type_from_arrow(t), large=False) != replace(ref.ltype, large=False):
        raise SchemaError(f"column {ref.name!r} was bound as {ref.ltype}, but is {t} here")


def _field(schema: pa.Schema, name: str) -> pa.Field:
    matches = schema.get_all_field_indices(name) if isinstance(name, str) else []
    if not matches:
        unfilterable = (schema.metadata or {}).get(UNFILTERABLE_KEY, b"").decode().split("\n")
        if isinstance(name, str) and name in unfilterable:
            raise SchemaError(f"column {name!r} cannot be filtered: maps, unions, structs without fields and "
                              f"extension types over nested types are read, not filtered (filter the rows read, "
                              f"e.g. with pyarrow.compute)")
        fields = [n for n in schema.names if isinstance(name, str) and n.startswith(name + ".")]
        if fields:  # (a struct: the filter schema holds its leaves by dotted path)
            raise SchemaError(f"column {name!r} is a struct: filter its fields by their dotted paths "
                              f"({', '.join(map(repr, fields[:5]))}{', ...' if len(fields) > 5 else ''})")
        raise SchemaError(f"unknown column {name!r} in filter; available columns: {', '.join(map(repr, schema.names)) or '(none)'}")
    if len(matches) > 1:
        raise SchemaError(f"column {name!r} in filter is ambiguous: the schema has {len(matches)} columns of that name")
    return schema.field(matches[0])


def _resolve(schema: pa.Schema, name: str) -> Ref:
    t = _field(schema, name).type
    if is_list_type(t):
        raise SchemaError(f"column {name!r} is a list: filter it with list_contains(col({name!r}), value)")
    if pa.types.is_dictionary(t):
        t = t.value_type
    try:
        ltype = logical_type_from_arrow(t)
    except SchemaError as e:
        raise SchemaError(f"column {name!r} cannot be filtered: {e}") from None
    return Ref(name, t, ltype)


def _bind(e: Expr, schema) -> BoundExpr:
    if isinstance(e, And):
        return BoundAnd.of(*(_bind(c, schema) for c in e.children))
    if isinstance(e, Or):
        return BoundOr.of(*(_bind(c, schema) for c in e.children))
    if isinstance(e, Not):
        return BoundNot(_bind(e.child, schema))
    if isinstance(e, ListContains):
        return _bind_list_contains(schema, e)
    ref = _resolve(schema, e.column)
    if isinstance(e, Comparison):
        if e.op not in OPS:
            raise FilterError(f"unknown comparison operator {e.op!r} in {e!r}")
        if e.op not in ("==", "!=") and ref.ltype.annot == ("day_time_interval",):
            raise FilterError(f"{e.op} on day_time_interval column {ref.name!r} (in {e!r}): a day has no fixed "
                              "length in milliseconds, so these intervals have no order; compare them with ==, "
                              "!= or isin()")
        return _bind_compare(ref, e.op, _to_real(ref, e.value, e), repr(e))
    if isinstance(e, IsIn):
        members, has_nan = _bind_isin(ref, e)
        return BoundOr.of(members, NanCheck(ref)) if has_nan else members  # NaN matches NaN
    if isinstance(e, (IsNull, IsValid)):
        return NullCheck(ref, isinstance(e, IsValid))
    if isinstance(e, IsNan):
        if not ref.ltype.is_float:
            raise FilterError(f"is_nan() needs a float column; {ref.name!r} is {ref.ltype}")
        return NanCheck(ref)
    if isinstance(e, StartsWith):
        return _bind_prefix(ref, e)
    raise FilterError(f"not a predicate: {e!r}")


def _bind_list_contains(schema: pa.Schema, e: ListContains) -> BoundListContains:
    t = _field(schema, e.column).type
    if not is_list_type(t) or is_list_type(t.value_type):
        raise FilterError(f"list_contains() needs a list of flat values; {e.column!r} is {t}")
    item = f"{e.column}.{t.value_field.name}"
    ref = _resolve(pa.schema([pa.field(item, t.value_type)]), item)
    members, has_nan = _bind_isin(ref, IsIn(item, (e.value,)))
    if has_nan:
        raise FilterError(f"list_contains() of NaN is not supported (in {e!r}): filter the exploded values with is_nan()")
    return BoundListContains(ref, e.column, t, members)


def _bind_prefix(ref: Ref, e: StartsWith) -> Prefix:
    p = e.prefix
    if ref.ltype.name == "string" and isinstance(p, str):
        return Prefix(ref, _utf8(p, ref))
    if ref.ltype.name == "binary" and isinstance(p, (bytes, bytearray, memoryview)) and not _not_bytes(ref.ltype):
        return Prefix(ref, bytes(p))
    if ref.ltype.name not in ("string", "binary") or _not_bytes(ref.ltype):
        raise FilterError(f"startswith() needs a string or binary column; {ref.name!r} is {ref.ltype}")
    want = "str" if ref.ltype.name == "string" else "bytes"
    raise FilterError(f"startswith() on {ref.ltype} column {ref.name!r} needs a {want} prefix, got {type(p).__name__} {p!r}")


# ---- the domain of a column: "int" (ints, date32, timestamp, decimal unscaled), "float", "bool", "bytes"
def _keyed_decimal(lt: LogicalType) -> bool:
    """decimal256: unscaled integers on the number line, stored as order-preserving
    32-byte keys (rcfmt.schema.annotated)."""
    return lt.annot is not None and lt.annot[0] == "decimal256"


def _not_bytes(lt: LogicalType) -> bool:
    """Stored as binary, but not bytes to its user (decimal256, intervals)."""
    return lt.annot is not None and lt.annot[0] in ("decimal256", "month_day_nano_interval")


def _domain(lt: LogicalType) -> str:
    if _keyed_decimal(lt):
        return "int"
    if lt.is_float:
        return "float"
    if lt.name == "bool":
        return "bool"
    if lt.name in ("string", "binary"):
        return "bytes"
    return "int"


def _int_range(lt: LogicalType) -> tuple[int, int]:
    if lt.name == "decimal128":
        return -(10**lt.precision - 1), 10**lt.precision - 1
    if lt.annot is not None and lt.annot[0] in _DECIMALS:
        return -(10**lt.annot[1] - 1), 10**lt.annot[1] - 1
    info = np.iinfo(lt.numpy_dtype)
    return int(info.min), int(info.max)


def _bind_compare(ref: Ref, op: str, real, origin: str) -> Leaf:
    dom = _domain(ref.ltype)
    if dom in ("bool", "bytes"):
        return Cmp(ref, op, real, _scalar(ref, real))
    if isinstance(real, float) and math.isnan(real):
        return Folded(ref, op == "!=", origin)  # NaN compares FALSE, != TRUE
    if dom == "float":
        lo, hi = _float_bracket(real, ref.ltype.numpy_dtype)
        if lo == hi:
            return Cmp(ref, op, lo, _scalar(ref, lo))
        if op in ("==", "!="):
            return Folded(ref, op == "!=", origin)
        op, v = ("<=", lo) if op in ("<", "<=") else (">=", hi)
        return Cmp(ref, op, v, _scalar(ref, v))
    lo, hi = _int_range(ref.ltype)
    if isinstance(real, float):  # +-inf: beyond every value of the column
        real = Fraction(hi + 1 if real > 0 else lo - 1)
    fl, ce = math.floor(real), math.ceil(real)
    v = fl
    if fl != ce:  # not an integer: no value equals it, < and <= meet at the floor
        if op in ("==", "!="):
            return Folded(ref, op == "!=", origin)
        op, v = ("<=", fl) if op in ("<", "<=") else (">=", ce)
    always = _fold_range(op, v, lo, hi)
    if always is not None:
        return Folded(ref, always, origin)
    if _keyed_decimal(ref.ltype):
        v = int_key(int(v))
    return Cmp(ref, op, v, _scalar(ref, v))


def _fold_range(op: str, v: int, lo: int, hi: int) -> bool | None:
    """The constant value of ``x op v`` for every x in [lo, hi], or None if it depends on x."""
    if op in ("==", "!="):
        return (op == "!=") if not lo <= v <= hi else None
    if op == "<":
        return False if v <= lo else True if v > hi else None
    if op == "<=":
        return False if v < lo else True if v >= hi else None
    if op == ">":
        return False if v >= hi else True if v < lo else None
    return False if v > hi else True if v <= lo else None  # >=


def _float_bracket(q: Fraction | float, dtype: np.dtype) -> tuple[float, float]:
    """The largest value of ``dtype`` <= q and the smallest >= q (equal if q is exact)."""
    t = dtype.type
    if isinstance(q, float):  # +-inf
        return q, q
    big = float(np.finfo(dtype).max)
    if q > Fraction(big):
        return big, math.inf
    if q < -Fraction(big):
        return -math.inf, -big
    f = t(float(q))  # correctly rounded, so f is the floor or the ceiling of q
    exact = Fraction(float(f))
    if exact == q:
        return float(f) + 0.0, float(f) + 0.0  # +0.0 normalizes -0.0
    if exact < q:
        return float(f), float(np.nextafter(f, t(np.inf)))
    return float(np.nextafter(f, t(-np.inf))), float(f)


def _plain_int_members(ref: Ref, values) -> set | None:
    """The members of an ``isin`` of Python or numpy integers on a plain integer column
    (not a decimal, date, time or other annotated type) that the column can hold, or
    None when another kind of value or column needs the general binding. The same
    members :func:`_bind_compare` keeps, without a leaf per value."""
    lt = ref.ltype
    if lt.annot is not None or lt.is_float or lt.name not in _PLAIN_INTS:
        return None
    lo, hi = _int_range(lt)
    if values and all(type(v) is int for v in values) and lo <= min(values) and max(values) <= hi:
        return set(values)
    out = set()
    for v in values:
        if type(v) is not int:
            if not isinstance(v, np.integer) or isinstance(v, np.timedelta64):
                return None
            v = int(v)
        if lo <= v <= hi:
            out.add(v)
    return out


#: The leaves :func:`_bind_isin` bound of the last large IN-lists of plain integers, by
#: ``id`` of the values tuple (kept here, so the id is not reused while cached) and the
#: column: a dataset scan binds one filter once per file, and a merge's 10,000 keys cost
#: ~2.5 ms to check and sort each time, and ~1 ms more to turn into the arrays pruning
#: and the kernel take (a leaf keeps those: see ``prune._sorted_members``)
_MEMBERS: dict[int, tuple] = {}
_NOT_PLAIN = object()
_MEMBERS_CACHED = 16
_MEMBERS_FROM = 64


def _plain_int_leaf(ref: Ref, values: tuple) -> "InSet | None":
    """The InSet of :func:`_plain_int_members` (None when those are None), the same
    leaf again for a large IN-list bound to an equal column before."""
    hit = _MEMBERS.get(id(values))
    if hit is not None and hit[0] is values:
        leaf = hit[1].get(ref)
        if leaf is not None:
            return None if leaf is _NOT_PLAIN else leaf
    plain = _plain_int_members(ref, values)
    members = None if plain is None else tuple(sorted(plain))
    leaf = _NOT_PLAIN if plain is None else InSet(ref, members, False, False, arrow_values(ref, members))
    if len(values) >= _MEMBERS_FROM:
        if hit is None or hit[0] is not values:
            if len(_MEMBERS) >= _MEMBERS_CACHED:
                _MEMBERS.clear()
            hit = _MEMBERS[id(values)] = (values, {})
        hit[1][ref] = leaf  # (a list the general binding serves is remembered too: not checked per file)
    return None if leaf is _NOT_PLAIN else leaf


_PLAIN_INTS = frozenset(("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"))


def _bind_isin(ref: Ref, e: IsIn) -> tuple[InSet, bool]:
    """The members of ``e`` other than NaN as an InSet, and whether NaN is one."""
    has_null, has_nan, members = False, False, set()
    dom = _domain(ref.ltype)
    leaf = _plain_int_leaf(ref, e.values)
    if leaf is not None:  # (a merge's thousands of integer keys: no per-value binding)
        return leaf, False
    for v in e.values:
        if v is None or (isinstance(v, pa.Scalar) and not v.is_valid):
            has_null = True
            continue
        real = _to_real(ref, v, e)
        if dom in ("bool", "bytes"):
            members.add(real)
        elif isinstance(real, float) and math.isnan(real):
            has_nan = dom == "float"  # (an integer column holds no NaN)
        else:
            leaf = _bind_compare(ref, "==", real, "")
            if isinstance(leaf, Cmp):  # Folded: no value of the column equals it
                members.add(leaf.value)
    values = tuple(sorted(members))
    return InSet(ref, values, has_null, False, arrow_values(ref, values)), has_nan


# ---- literal conversion
_DECIMALS = ("decimal32", "decimal64", "decimal256")
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
_NP_SECONDS = {
    "W": Fraction(604800), "D": Fraction(86400), "h": Fraction(3600), "m": Fraction(60), "s": Fraction(1),
    "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6), "ns": Fraction(1, 10**9),
    "ps": Fraction(1, 10**12), "fs": Fraction(1, 10**15), "as": Fraction(1, 10**18),
}


def _utf8(s: str, ref: Ref) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as err:
        raise FilterError(f"literal {s!r} for column {ref.name!r} is not valid Unicode: {err}") from None


#: numbers Python or numpy call integers that are not integer literals: bools, and
#: numpy's timedelta64 (a numpy integer, but a duration: compared with duration columns)
_NOT_INTEGERS = (bool, np.bool_, np.timedelta64)


def _to_real(ref: Ref, value, origin):
    """``value`` in the column's domain: bool, bytes, or a Fraction / NaN / +-inf float
    on the column's number line (unscaled for decimals, days or units for temporal types)."""
    lt = ref.ltype

    def bad(hint=""):
        raise FilterError(
            f"cannot compare {lt} column {ref.name!r} with {type(value).__name__} literal {value!r} "
            f"in {origin!r}{hint}"
        )

    if isinstance(value, pa.Scalar):
        value = _from_scalar(value)
    if value is None:
        raise FilterError(
            f"None is not a comparison literal (in {origin!r}); use col({ref.name!r}).is_null() / .is_valid()"
        )
    if lt.annot is not None:
        kind = lt.annot[0]
        if kind == "null":
            bad("; a column of type null holds only NULLs: filter it with is_null() / is_valid()")
        if kind == "month_day_nano_interval":
            bad("; intervals have no order (a month has no fixed length): filter them with is_null() / is_valid()")
        if kind == "month_interval":  # a count of months (ordered)
            if isinstance(value, (int, np.integer)) and not isinstance(value, _NOT_INTEGERS):
                return Fraction(int(value))
            bad("; month_interval columns take an int (a count of months)")
        if kind == "day_time_interval":  # compared as stored: the packed int64 (equality only)
            if isinstance(value, tuple) and len(value) == 2 and all(
                    isinstance(x, (int, np.integer)) and not isinstance(x, _NOT_INTEGERS) for x in value):
                days, ms = int(value[0]), int(value[1])
                if not (-2**31 <= days < 2**31 and -2**31 <= ms < 2**31):
                    return Fraction(2**63)  # (beyond every stored value: equal to none)
                return Fraction(pack_day_time(days, ms))
            bad("; day_time_interval columns take a (days, milliseconds) tuple of ints")
        if kind == "duration":
            return _duration(value, ref, lt.annot[1], bad)
        if kind in ("time32", "time64"):
            return _time_of_day(value, lt.annot[1], bad)
        if kind == "date64":
            return _temporal(value, ref, Fraction(1, 1000), tz=None, bad=bad, dates=True)
        if kind in _DECIMALS:
            real = _number(value, floats_by_repr=True)
            if real is None:
                bad()
            return real * Fraction(10) ** lt.annot[2] if isinstance(real, Fraction) else real
        if kind == "fixed_size_binary":
            if isinstance(value, _uuid.UUID) and lt.ext is not None and lt.ext[0] == "arrow.uuid":
                return value.bytes
            if isinstance(value, (bytes, bytearray, memoryview)):
                return bytes(value)
            bad("; fixed_size_binary columns take bytes" + (" or uuid.UUID" if lt.ext and lt.ext[0] == "arrow.uuid"
                                                            else ""))
    if lt.name == "bool":
        return bool(value) if isinstance(value, (bool, np.bool_)) else bad()
    if lt.name == "string":
        return _utf8(value, ref) if isinstance(value, str) else bad("; string columns take str literals")
    if lt.name == "binary":
        return bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else bad("; binary columns take bytes")
    if lt.is_integer or lt.is_float:
        real = _number(value)
        return bad() if real is None else real
    if lt.name == "decimal128":
        real = _number(value, floats_by_repr=True)
        if real is None:
            bad()
        return real * Fraction(10) ** lt.scale if isinstance(real, Fraction) else real
    if lt.name == "date32":
        return _temporal(value, ref, 86400, tz=None, bad=bad, dates=True)
    if lt.name == "timestamp":
        return _temporal(value, ref, Fraction(1, _PER_SECOND[lt.unit]), tz=lt.tz, bad=bad)
    bad()


def _time_of_day(value, unit: str, bad):
    """Fraction of column units since midnight for a time literal: a naive
    ``datetime.time`` or an int of the column's unit."""
    if isinstance(value, _NOT_INTEGERS):
        bad()
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, _TimeOfDay):  # (a pyarrow time scalar, in its own unit)
        return Fraction(value.count * _PER_SECOND[unit], _PER_SECOND[value.unit])
    if isinstance(value, _dt.time):
        if value.tzinfo is not None:
            bad("; time columns have no time zone: give a naive datetime.time")
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 10**6 + value.microsecond
        return Fraction(micros * _PER_SECOND[unit], 10**6)
    bad("; time columns take datetime.time or an int of the column's unit")


def _duration(value, ref: Ref, unit: str, bad):
    """Fraction of column units for a duration literal: a ``datetime.timedelta``
    (pandas ``Timedelta`` to the nanosecond), a ``numpy.timedelta64`` or an int of the
    column's unit."""
    per = Fraction(_PER_SECOND[unit])
    if isinstance(value, (bool, np.bool_)):
        bad()
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.timedelta64):
        return Fraction(int(value))
    if isinstance(value, _dt.timedelta):
        if hasattr(value, "to_timedelta64"):  # pandas Timedelta: keeps nanoseconds
            value = value.to_timedelta64()
        else:
            micros = (value.days * 86400 + value.seconds) * 10**6 + value.microseconds
            return Fraction(micros, 10**6) * per
    if isinstance(value, np.timedelta64):
        if np.isnat(value):
            raise FilterError(f"NaT is not a comparison literal for column {ref.name!r}; use is_null()")
        u, count = np.datetime_data(value.dtype)
        if u not in _NP_SECONDS:
            bad("; a timedelta64 in months or years has no fixed length" if u in ("Y", "M") else "")
        return int(value.astype(np.int64)) * count * _NP_SECONDS[u] * per
    bad("; duration columns take datetime.timedelta, numpy.timedelta64 or int literals")


def _number(value, floats_by_repr: bool = False):
    """A Fraction, or a NaN/+-inf float, for a numeric literal; None if not a number
    (numpy's timedelta64 is a numpy integer, but a duration, not a number)."""
    if isinstance(value, _NOT_INTEGERS):
        return None
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if not math.isfinite(f):
            return f
        return Fraction(decimal.Decimal(str(value))) if floats_by_repr else Fraction(f)
    if isinstance(value, decimal.Decimal):
        if value.is_nan():
            return math.nan
        if value.is_infinite():
            return math.inf if value > 0 else -math.inf
        return Fraction(value)
    if isinstance(value, numbers.Rational):
        return Fraction(value)
    return None


def _temporal(value, ref: Ref, unit_seconds, tz, bad, dates: bool = False):
    """Fraction of column units for a date/time literal (``unit_seconds`` per unit;
    ``dates``: a date32 or date64 column)."""
    lt = ref.ltype
    if isinstance(value, _NOT_INTEGERS):
        bad()
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    if isinstance(value, _dt.datetime):
        if hasattr(value, "to_datetime64") and np.isnat(value.to_datetime64()):  # (pandas' NaT: naive, whatever the column)
            raise FilterError(f"NaT is not a comparison literal for column {ref.name!r}; use is_null()")
        aware = value.tzinfo is not None and value.tzinfo.utcoffset(value) is not None
        if dates and aware:
            bad(f"; {lt.annot[0] if lt.annot else lt.name} columns have no time zone, pass a naive datetime or a date")
        if not dates and aware != (tz is not None):
            bad(f"; the column has time zone {tz!r}, pass an aware datetime" if tz is not None else
                "; the column has no time zone, pass a naive datetime")
        if hasattr(value, "to_datetime64"):  # pandas Timestamp: keeps nanoseconds; UTC if aware
            return _datetime64_seconds(value.to_datetime64(), ref) / Fraction(unit_seconds)
        delta = value - (_EPOCH_UTC if aware else _EPOCH)
        micros = (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds
        return Fraction(micros, 10**6) / Fraction(unit_seconds)
    if isinstance(value, _dt.date):
        if not dates:
            bad("; timestamp columns take datetime literals")
        return Fraction((value - _EPOCH_DATE).days) * 86400 / Fraction(unit_seconds)
    if isinstance(value, np.datetime64):
        return _datetime64_seconds(value, ref) / Fraction(unit_seconds)
    bad()


def _datetime64_seconds(v: np.datetime64, ref: Ref) -> Fraction:
    if np.isnat(v):
        raise FilterError(f"NaT is not a comparison literal for column {ref.name!r}; use is_null()")
    unit, count = np.datetime_data(v.dtype)
    if unit in ("Y", "M"):
        v, unit, count = v.astype("datetime64[D]"), "D", 1
    if unit not in _NP_SECONDS:
        raise FilterError(f"datetime64 literal {v!r} for column {ref.name!r} has no unit")
    return int(v.astype(np.int64)) * count * _NP_SECONDS[unit]


def _from_scalar(s: pa.Scalar):
    """A pyarrow scalar as a Python literal; timestamps as datetime64 of their stored value."""
    if not s.is_valid:
        return None
    if pa.types.is_timestamp(s.type):
        return np.datetime64(s.cast(pa.int64()).as_py(), s.type.unit)
    if pa.types.is_date32(s.type):  # (Python dates stop at year 9999; days do not)
        return np.datetime64(s.cast(pa.int32()).as_py(), "D")
    if pa.types.is_date64(s.type):
        return np.datetime64(s.cast(pa.int64()).as_py(), "ms")
    if pa.types.is_duration(s.type):  # (as_py rounds nanoseconds away)
        return np.timedelta64(s.cast(pa.int64()).as_py(), s.type.unit)
    if pa.types.is_time64(s.type) or pa.types.is_time32(s.type):  # (as_py rounds nanoseconds away)
        return _TimeOfDay(s.cast(pa.int64() if pa.types.is_time64(s.type) else pa.int32()).as_py(), s.type.unit)
    return s.as_py()


class _TimeOfDay:
    """A time scalar's stored value and unit (``datetime.time`` stops at microseconds)."""

    __slots__ = ("count", "unit")

    def __init__(self, count: int, unit: str):
        self.count, self.unit = count, unit

    def __repr__(self):
        return f"{self.count} {self.unit} since midnight"


# ---- Arrow values of the column type (for evaluation)
def unscaled_type(lt: LogicalType) -> pa.DataType:
    """Decimals are evaluated as their unscaled integers (pyarrow has no kernels for
    negative scales): the same bytes viewed as decimal128(precision, 0)."""
    return pa.decimal128(lt.precision, 0)


def arrow_values(ref: Ref, values) -> pa.Array:
    """An Arrow array of the column's type (unscaled for decimals) holding stats-domain
    ``values``. Built from buffers: pyarrow's conversion of Python sequences imports
    pandas on first use (~0.2 s on a user's first filtered read)."""
    lt, values = ref.ltype, list(values)
    n = len(values)
    if lt.annotated:  # compared as stored (rcfmt.schema.annotated)
        lt = lt.storage
        ref = Ref(ref.name, lt.to_arrow(), lt)
    if lt.name == "decimal128":  # compared unscaled (see evaluate)
        data = b"".join(int(v).to_bytes(16, "little", signed=True) for v in values)
        return pa.Array.from_buffers(unscaled_type(lt), n, [None, pa.py_buffer(data)])
    if lt.name == "bool":
        bits = np.packbits(np.array(values, dtype=bool), bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])
    if lt.name in ("string", "binary"):
        lengths = [len(v) for v in values]
        offsets = np.zeros(n + 1, dtype=np.int64 if lt.large else np.int32)
        np.cumsum(lengths, out=offsets[1:])
        return pa.Array.from_buffers(ref.type, n, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(values))])
    data = np.array(values, dtype=lt.numpy_dtype)
    return pa.Array.from_buffers(ref.type, n, [None, pa.py_buffer(data)])


def _scalar(ref: Ref, value) -> pa.Scalar:
    return arrow_values(ref, [value])[0]
