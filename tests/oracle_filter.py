"""An independent filter oracle: the TRUE / FALSE / NULL of an rcfmt expression on
each row of a pyarrow table, computed with Arrow's own compute kernels and plain
Python, sharing no code with :mod:`rcfmt.scan` (no binding, no NNF, no evaluator).

It only reads the public attributes of the user's unbound expression objects
(:mod:`rcfmt.predicate.expr`) and parses DNF list filters itself. Every soundness suite
compares the engine's rows and values with it.

Semantics (the ones decided for the release):

- SQL three-valued logic: a comparison with a NULL value is NULL; ``~`` keeps NULL;
  ``&`` / ``|`` are Kleene (``pc.and_kleene`` / ``pc.or_kleene``); a row is selected
  only where the predicate is TRUE (:func:`selection_mask`).
- IEEE floats, as ``pyarrow.compute``: NaN ``== < <= > >=`` anything is FALSE, NaN
  ``!=`` anything is TRUE (NaN values and NaN literals alike); -0.0 equals 0.0.
- Literals compare by their exact mathematical value. Where the literal is exactly a
  value of the column's type it becomes a pyarrow scalar of that type and the Arrow
  kernel compares; otherwise (``5.5`` against ints, ``300`` against uint8, ``0.1``
  against float32, ``Decimal("1.255")`` against decimal(5, 2), ...) each value is
  compared in Python with exact arithmetic (int / float / Fraction). Decimal columns
  take float literals by their shortest repr (``0.1`` is ``Decimal("0.1")``).
- ``is_null`` / ``is_valid`` are never NULL; ``is_nan`` is ``pc.is_nan``: NULL for NULL,
  so ``~is_nan`` selects no NULL row.
- ``isin``: TRUE where the value equals (``==``) a member, and where a NaN member meets
  a NaN value; a None member never matches but turns a miss into NULL; NULL values
  give NULL.
- DNF lists' ``in`` / ``not in``: the rows pyarrow's ``filters=`` selects
  (``pyarrow.compute.is_in``: a NULL value is a member exactly when None is one; a
  non-NULL value never meets None); a NULL value it leaves out is NULL.
- ``startswith``: ``pc.starts_with`` (NULL for NULL).
- ``list_contains(col, v)``: NULL for a NULL list; TRUE if an element equals ``v`` (as
  ``isin([v])`` per element); else NULL if an element is NULL; else FALSE.
- ``between(lo, hi)`` is ``(x >= lo) & (x <= hi)`` (the expression already says so).

Literals are read as rcfmt documents them (bool; int / float / Decimal / Fraction for
numbers; date / datetime / pandas Timestamp / numpy datetime64 / int units for dates
and timestamps; str; bytes-like; pyarrow scalars by value). The oracle does not try to
refuse what the binder refuses: it answers for what it can read and raises
:class:`OracleError` for what it cannot.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math
import numbers
import operator
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rcfmt.predicate.expr import And, Column, Comparison, IsIn, IsNan, IsNull, IsValid, ListContains, Not, Or, StartsWith

__all__ = ["OracleError", "evaluate", "selection_mask", "filter_table", "parse_dnf"]

#: set True (tests of the oracle itself) to compare every numeric or temporal literal
#: value by value in Python, skipping the Arrow kernels; both ways must agree
FORCE_PYTHON = False


class OracleError(Exception):
    """The oracle cannot read this expression or literal."""


_KERNELS = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
            ">=": pc.greater_equal}
_PYOPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
          ">=": operator.ge}
_NULL_BOOL = pa.scalar(None, pa.bool_())
_WIDE = decimal.Context(prec=200)  # (decimal's default 28 digits would round 38-digit values)


# =============================================================== entry points
def evaluate(expr, table: pa.Table | pa.RecordBatch) -> pa.BooleanArray:
    """TRUE / FALSE / NULL per row of ``table``; ``expr`` is an rcfmt expression, a DNF
    list filter or None (every row TRUE)."""
    expr = parse_dnf(expr)
    if expr is None:
        return pa.array(np.ones(table.num_rows, bool), pa.bool_())
    out = _eval(expr, table)
    assert len(out) == table.num_rows and out.type == pa.bool_()
    return out


def selection_mask(expr, table: pa.Table | pa.RecordBatch) -> np.ndarray:
    """numpy bool per row: True only where the predicate is TRUE (FALSE and NULL drop)."""
    return np.array([v is True for v in evaluate(expr, table).to_pylist()], dtype=bool)


def filter_table(table: pa.Table, expr) -> pa.Table:
    """The rows of ``table`` where ``expr`` is TRUE, in order."""
    return table.filter(pa.array(selection_mask(expr, table), pa.bool_()))


# =============================================================== DNF lists (parsed here, not by rcfmt)
_DNF_OPS = {"=": "==", "==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def parse_dnf(filter):
    """An expression for a pyarrow-style DNF filter (a list of (column, op, value)
    tuples ANDed, or a list of such lists ORed); expressions and None pass through."""
    if not isinstance(filter, list):
        return filter
    if not filter:
        raise OracleError("empty DNF filter")
    if all(isinstance(t, list) for t in filter):
        return Or(tuple(_conjunction(c) for c in filter))
    return _conjunction(filter)


def _conjunction(terms: list):
    if not terms:
        raise OracleError("empty DNF conjunction")
    out = []
    for term in terms:
        if not isinstance(term, tuple) or len(term) != 3:
            raise OracleError(f"not a (column, op, value) tuple: {term!r}")
        name, op, value = term
        key = " ".join(str(op).lower().split())
        if key in ("in", "not in"):
            out.append(_DnfMembership(name, tuple(value), key == "not in"))
        elif op in _DNF_OPS:
            out.append(Comparison(name, _DNF_OPS[op], value))
        else:
            raise OracleError(f"unknown DNF operator {op!r}")
    return And(tuple(out))


class _DnfMembership:
    """A DNF ``in`` / ``not in`` term, decided as pyarrow's ``filters=`` decides it."""

    def __init__(self, column: str, values: tuple, negated: bool):
        self.column, self.values, self.negated = column, values, negated


def _dnf_membership(arr: pa.Array, values: tuple, negated: bool) -> pa.BooleanArray:
    """pyarrow.compute.is_in's answer (TRUE where the value equals a member, a NaN
    member meeting a NaN value, and where a NULL value meets a None member; FALSE
    otherwise), inverted for ``not in`` -- except that a NULL value it leaves out is
    NULL, as SQL leaves it (the rows selected are pyarrow's either way)."""
    present = tuple(v for v in values if v is not None)
    hit = pc.fill_null(isin(arr, present), False)
    nulls = pc.is_null(arr)
    hit = pc.if_else(nulls, len(present) != len(values), hit)
    answer = pc.invert(hit) if negated else hit
    return pc.if_else(pc.and_(nulls, pc.invert(answer)), pa.scalar(None, pa.bool_()), answer)


# =============================================================== the tree
def _eval(e, table) -> pa.BooleanArray:
    if isinstance(e, _DnfMembership):
        return _dnf_membership(_column(table, e.column), e.values, e.negated)
    if isinstance(e, And):
        return _fold(pc.and_kleene, [_eval(c, table) for c in e.children], table.num_rows, True)
    if isinstance(e, Or):
        return _fold(pc.or_kleene, [_eval(c, table) for c in e.children], table.num_rows, False)
    if isinstance(e, Not):
        return pc.invert(_eval(e.child, table))
    if isinstance(e, ListContains):
        return _list_contains(_column(table, e.column), e.value)
    if isinstance(e, Column):
        raise OracleError(f"{e!r} is a column, not a predicate")
    arr = _column(table, e.column)
    if isinstance(e, Comparison):
        if e.op not in _KERNELS:
            raise OracleError(f"unknown operator {e.op!r}")
        return compare(arr, e.op, e.value)
    if isinstance(e, IsIn):
        return isin(arr, e.values)
    if isinstance(e, IsNull):
        return pc.is_null(arr)
    if isinstance(e, IsValid):
        return pc.is_valid(arr)
    if isinstance(e, IsNan):
        if not pa.types.is_floating(arr.type):
            raise OracleError(f"is_nan on {arr.type}")
        return pc.is_nan(arr)
    if isinstance(e, StartsWith):
        return _starts_with(arr, e.prefix)
    raise OracleError(f"not an rcfmt expression: {e!r}")


def _fold(fn, parts, n, identity):
    if not parts:
        return pa.array([identity] * n, pa.bool_())
    out = parts[0]
    for p in parts[1:]:
        out = fn(out, p)
    return out


def _column(table, name: str) -> pa.Array:
    """The column ``name`` as one Array of plain (non-dictionary) values; a dotted name
    not in the table is a path through structs (NULL where a parent is NULL)."""
    names = table.schema.names
    if names.count(name) == 1:
        arr = table.column(name)
    elif names.count(name) > 1:
        raise OracleError(f"ambiguous column {name!r}")
    else:
        arr = _struct_path(table, name)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    return _decoded(arr)


def _struct_path(table, name: str) -> pa.Array:
    parts = name.split(".")
    for k in range(len(parts) - 1, 0, -1):
        top = ".".join(parts[:k])
        if top in table.schema.names:
            arr = table.column(top)
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
            rest = parts[k:]
            while rest:
                arr = _decoded(arr)
                if not pa.types.is_struct(arr.type):
                    break
                for j in range(len(rest), 0, -1):
                    field = ".".join(rest[:j])
                    idx = arr.type.get_field_index(field)
                    if idx >= 0:
                        arr = arr.flatten()[idx]  # flatten() folds the struct's validity in
                        rest = rest[j:]
                        break
                else:
                    break
            if not rest:
                return arr
    raise OracleError(f"no column {name!r} in the table")


def _decoded(arr: pa.Array) -> pa.Array:
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


# =============================================================== leaves
def _kind(t: pa.DataType) -> str:
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_date32(t) or pa.types.is_date64(t) or pa.types.is_timestamp(t):
        return "temporal"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        return "string"
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or getattr(pa.types, "is_binary_view", lambda _: False)(t)):
        return "binary"
    raise OracleError(f"the oracle does not filter {t} columns")


def compare(arr: pa.Array, op: str, value) -> pa.BooleanArray:
    """``arr op value`` per row (NULL for NULL rows), by exact value."""
    kind = _kind(arr.type)
    lit = literal_key(arr.type, value)
    if kind in ("bool", "string", "binary"):
        return _KERNELS[op](arr, _plain_scalar(arr.type, kind, lit))
    scalar = None if FORCE_PYTHON else _exact_scalar(arr.type, kind, lit)
    if scalar is not None:
        try:
            return _KERNELS[op](arr, scalar)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # (decimals of negative scale)
            pass
    fn = _PYOPS[op]
    return pa.array([None if v is None else fn(v, lit) for v in value_keys(arr)], pa.bool_())


def isin(arr: pa.Array, members) -> pa.BooleanArray:
    """``arr IN members`` per row (SQL: a None member turns a miss into NULL; a NaN
    member matches NaN values; NULL rows are NULL)."""
    out = pc.if_else(pc.is_valid(arr), False, _NULL_BOOL)  # FALSE, or NULL for NULL rows
    has_null = False
    for m in members:
        if m is None or (isinstance(m, pa.Scalar) and not m.is_valid):
            has_null = True
            continue
        lit = literal_key(arr.type, m)
        if isinstance(lit, float) and math.isnan(lit):
            hit = pc.is_nan(arr) if pa.types.is_floating(arr.type) else pc.if_else(pc.is_valid(arr), False, _NULL_BOOL)
        else:
            hit = compare(arr, "==", m)
        out = pc.or_kleene(out, hit)
    if has_null:
        out = pc.or_kleene(out, pa.nulls(len(arr), pa.bool_()))  # TRUE stays, FALSE becomes NULL
    return out


def _starts_with(arr: pa.Array, prefix) -> pa.BooleanArray:
    kind = _kind(arr.type)
    if kind == "string" and isinstance(prefix, str):
        prefix.encode("utf-8")  # (surrogates are no prefix)
        return pc.starts_with(arr, pattern=prefix)
    if kind == "binary" and isinstance(prefix, (bytes, bytearray, memoryview)):
        return pc.starts_with(arr, pattern=bytes(prefix))
    raise OracleError(f"startswith({prefix!r}) on {arr.type}")


def _list_contains(lists: pa.Array, value) -> pa.BooleanArray:
    t = lists.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or getattr(pa.types, "is_list_view", lambda _: False)(t)):
        raise OracleError(f"list_contains on {t}")
    out = []
    for i in range(len(lists)):
        row = lists[i]
        if not row.is_valid:
            out.append(None)
            continue
        elements = _decoded(row.values)
        hits = isin(elements, (value,)).to_pylist()
        out.append(True if True in hits else None if None in hits else False)
    return pa.array(out, pa.bool_())


# =============================================================== literals, exactly
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_SECONDS = {"W": Fraction(604800), "D": Fraction(86400), "h": Fraction(3600), "m": Fraction(60), "s": Fraction(1),
            "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6), "ns": Fraction(1, 10**9),
            "ps": Fraction(1, 10**12), "fs": Fraction(1, 10**15), "as": Fraction(1, 10**18)}


def _unit_seconds(t: pa.DataType) -> Fraction:
    if pa.types.is_date32(t):
        return Fraction(86400)
    if pa.types.is_date64(t):
        return Fraction(1, 1000)
    return _SECONDS[t.unit]


def literal_key(t: pa.DataType, value):
    """The literal as an exact value comparable with :func:`value_keys` of a ``t``
    column: bool, bytes (strings as UTF-8), or a number (int / Fraction / NaN or +-inf
    float) on the column's number line (column units for dates and timestamps)."""
    kind = _kind(t)
    if isinstance(value, pa.Scalar):
        value = _from_scalar(value)
    if value is None:
        raise OracleError("None is no comparison literal")
    if kind == "bool":
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise OracleError(f"{value!r} against {t}")
    if kind == "string":
        if isinstance(value, str):
            return value.encode("utf-8")  # raises for surrogates
        raise OracleError(f"{value!r} against {t}")
    if kind == "binary":
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise OracleError(f"{value!r} against {t}")
    if kind in ("int", "float"):
        return _number(value, t)
    if kind == "decimal":
        if isinstance(value, (float, np.floating)) and math.isfinite(float(value)):
            value = decimal.Decimal(str(value))  # a float's shortest repr
        return _number(value, t)
    return _temporal(value, t)


def _number(value, t):
    if isinstance(value, (bool, np.bool_)):
        raise OracleError(f"bool {value!r} against {t}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if not math.isfinite(f) else Fraction(f)
    if isinstance(value, decimal.Decimal):
        if value.is_nan():
            return math.nan
        if value.is_infinite():
            return math.inf if value > 0 else -math.inf
        return Fraction(value)
    if isinstance(value, numbers.Rational):
        return Fraction(value)
    raise OracleError(f"{type(value).__name__} {value!r} against {t}")


def _temporal(value, t):
    """Column units (days for date32, ms for date64) of a date / time literal."""
    per = _unit_seconds(t)
    if isinstance(value, (bool, np.bool_)):
        raise OracleError(f"bool {value!r} against {t}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            raise OracleError("NaT is no comparison literal")
        unit, count = np.datetime_data(value.dtype)
        if unit in ("Y", "M"):
            value, unit, count = value.astype("datetime64[D]"), "D", 1
        if unit not in _SECONDS:
            raise OracleError(f"datetime64 without a unit: {value!r}")
        return int(value.astype(np.int64)) * count * _SECONDS[unit] / per
    if isinstance(value, _dt.datetime):
        if hasattr(value, "to_datetime64") and hasattr(value, "nanosecond"):  # pandas Timestamp (ns kept; UTC)
            return _temporal(value.to_datetime64(), t)
        aware = value.tzinfo is not None and value.tzinfo.utcoffset(value) is not None
        delta = value - (_EPOCH_UTC if aware else _EPOCH)
        micros = (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds
        return Fraction(micros, 10**6) / per
    if isinstance(value, _dt.date):
        return Fraction((value - _EPOCH_DATE).days * 86400) / per
    raise OracleError(f"{type(value).__name__} {value!r} against {t}")


def _from_scalar(s: pa.Scalar):
    if not s.is_valid:
        return None
    t = s.type
    if pa.types.is_timestamp(t):
        return np.datetime64(int(pa.array([s]).view(pa.int64())[0].as_py()), t.unit)
    if pa.types.is_date32(t):
        return np.datetime64(int(pa.array([s]).view(pa.int32())[0].as_py()), "D")
    if pa.types.is_date64(t):
        return np.datetime64(int(pa.array([s]).view(pa.int64())[0].as_py()), "ms")
    return s.as_py()


def _plain_scalar(t, kind, lit) -> pa.Scalar:
    if kind == "string":
        return pa.scalar(lit.decode("utf-8"), t)
    if kind == "binary" and pa.types.is_fixed_size_binary(t) and len(lit) != t.byte_width:
        return pa.scalar(lit, pa.binary())
    return pa.scalar(lit, t)


def _exact_scalar(t, kind, lit) -> pa.Scalar | None:
    """A scalar of type ``t`` holding exactly ``lit``, or None if ``t`` has no such value."""
    if kind == "float":
        if t == pa.float16():
            return None
        if isinstance(lit, float):  # NaN, +-inf
            return pa.scalar(lit, t)
        width = np.float32 if t == pa.float32() else np.float64
        if abs(lit) > Fraction(float(np.finfo(width).max)):
            return None  # beyond every finite value of the type
        f = width(float(lit))
        return pa.scalar(float(f), t) if Fraction(float(f)) == lit else None
    if isinstance(lit, float):
        return None  # NaN, +-inf: no value of an integer, decimal or temporal column
    if kind == "int":
        if Fraction(lit).denominator != 1:
            return None
        info = np.iinfo(t.to_pandas_dtype())
        v = int(lit)
        return pa.scalar(v, t) if info.min <= v <= info.max else None
    if kind == "decimal":
        unscaled = Fraction(lit) * Fraction(10) ** t.scale
        if unscaled.denominator != 1 or abs(unscaled.numerator) >= 10**t.precision:
            return None
        return pa.scalar(decimal.Decimal(unscaled.numerator).scaleb(-t.scale, _WIDE), t)
    # temporal: an integer count of the column's units within its storage
    if Fraction(lit).denominator != 1:
        return None
    storage = pa.int32() if pa.types.is_date32(t) else pa.int64()
    v = int(lit)
    bits = 31 if storage == pa.int32() else 63
    if not -(2**bits) <= v < 2**bits:
        return None
    return pa.array([v], storage).view(t)[0]


def value_keys(arr: pa.Array) -> list:
    """The column's values as exact Python numbers (None for NULL): ints, floats (NaN
    and +-inf included), Fractions for decimals, ints of the column's units for dates
    and timestamps."""
    kind = _kind(arr.type)
    if kind == "temporal":
        storage = pa.int32() if pa.types.is_date32(arr.type) else pa.int64()
        return arr.view(storage).to_pylist()
    if kind == "decimal":
        return [None if v is None else Fraction(v) for v in arr.to_pylist()]
    if kind == "float":
        return [None if v is None else float(v) for v in arr.to_pylist()]
    if kind == "int":
        return arr.to_pylist()
    raise OracleError(f"no numeric values for {arr.type}")
