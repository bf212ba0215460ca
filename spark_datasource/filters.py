"""Spark filters -> rcfmt expressions, only where rcfmt's answer equals Spark's.

A pushed filter disappears from Spark's plan, so a translation must give the same
TRUE / FALSE / NULL as Spark for every row (``Not`` needs FALSE and NULL apart, not just
the TRUE rows). Differences between the two semantics and how they are bridged:

- Floats: Spark treats NaN as equal to NaN and greater than every other value; rcfmt
  follows IEEE (NaN compares FALSE). So, for float columns: ``x = NaN`` ->
  ``is_nan(x) | (x == NaN)``, ``x > v`` -> ``(x > v) | is_nan(x)`` (``>=`` likewise),
  ``x < NaN`` -> ``(x != NaN) & ~is_nan(x)``, ``x <= NaN`` -> ``x != NaN``. ``x == NaN`` /
  ``x != NaN`` are rcfmt's "FALSE / TRUE unless NULL" terms (``is_nan`` is NULL on NULL
  too); -0.0 equals 0.0 on both sides; ``IN`` is rcfmt's ``isin`` as it is (a NaN member
  matches NaN there as in Spark).
- ``<=>`` (EqualNullSafe) is never NULL: ``(x == v) & is_valid(x)``; ``x <=> NULL`` is
  ``is_null(x)``.
- Nanosecond timestamps are floored to microseconds for Spark, so comparisons become
  ranges over the nanosecond values (``x = t`` -> ``t <= x < t + 1us`` ...).
- ``StringEndsWith`` and ``StringContains`` (and filters on nested fields) are not
  pushed: rcfmt cannot evaluate them; Spark does.

Anything that does not bind to the column's type is not pushed either.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math

import pyarrow as pa
from pyspark.sql import datasource as D

from rcfmt.errors import RcfmtError
from rcfmt.schema.nested import filter_schema
from rcfmt.predicate.expr import And, Not, Or, col
from rcfmt.predicate.bind import bind
from rcfmt.predicate.nan_order import floored_micros_compare

__all__ = ["translate", "translate_all"]


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _float_cmp(name: str, op: str, v):
    c = col(name)
    if _is_nan(v):
        never = c == math.nan  # FALSE for every value, NULL for NULL
        always = c != math.nan  # TRUE for every value, NULL for NULL
        return {"==": c.is_nan() | never, ">": never, ">=": c.is_nan() | never,
                "<": always & ~c.is_nan(), "<=": always}[op]
    plain = {"==": c == v, ">": c > v, ">=": c >= v, "<": c < v, "<=": c <= v}[op]
    return plain | c.is_nan() if op in (">", ">=") else plain


def _ns_range(name: str, op: str, v):
    """Comparison of floor(x / 1000) (the microseconds Spark sees) with ``v``."""
    if not isinstance(v, _dt.datetime):
        return None
    return floored_micros_compare(col(name), op, v)


def _cmp(name: str, t: pa.DataType, op: str, v):
    if v is None:
        return None
    if pa.types.is_floating(t):
        return _float_cmp(name, op, v)
    if pa.types.is_timestamp(t) and t.unit == "ns":
        return _ns_range(name, op, v)
    if pa.types.is_duration(t) and t.unit == "ns":
        return None  # Spark sees them floored to microseconds: not pushed
    c = col(name)
    return {"==": c == v, ">": c > v, ">=": c >= v, "<": c < v, "<=": c <= v}[op]


def _as_received(v) -> bool:
    """Whether ``v`` is the value of the Spark query's literal: pyspark hands a decimal
    computed in Python's default context (28 digits: a longer one arrives rounded) and a
    timestamp of 1582-10-05..14, days the JVM's hybrid calendar lacks, shifted to
    1582-10-15; filters on such values are left to Spark."""
    if isinstance(v, decimal.Decimal):
        return not v.is_finite() or len(v.as_tuple().digits) < 28
    if isinstance(v, _dt.datetime):
        return not (v.year == 1582 and v.month == 10 and 4 <= v.day <= 16)  # (a day's margin for time zones)
    return True


_OPS = {D.EqualTo: "==", D.GreaterThan: ">", D.GreaterThanOrEqual: ">=", D.LessThan: "<", D.LessThanOrEqual: "<="}


def _translate(f, types: dict, names: dict):
    if isinstance(f, D.Not):
        child = _translate(f.child, types, names)
        return None if child is None else Not(child)
    attr = getattr(f, "attribute", None)
    if not isinstance(attr, tuple) or not attr or attr[0] not in names:
        return None
    # a path under structs arrives as the tuple of its names: ("payload", "user", "id")
    name = ".".join([names[attr[0]], *attr[1:]])
    if name not in types:
        return None
    t = types[name]
    if pa.types.is_dictionary(t):
        t = t.value_type
    c = col(name)
    value = getattr(f, "value", None)
    if not all(_as_received(v) for v in (value if isinstance(f, D.In) else [value])):
        return None
    if type(f) in _OPS:
        return _cmp(name, t, _OPS[type(f)], f.value)
    if isinstance(f, D.EqualNullSafe):
        v = f.value
        if v is None:
            return c.is_null()
        if pa.types.is_floating(t) and _is_nan(v):
            return c.is_nan() & c.is_valid()  # FALSE (not NULL) on a NULL row, as <=> is
        eq = _cmp(name, t, "==", v)
        return None if eq is None else eq & c.is_valid()
    if isinstance(f, D.In):
        values = list(f.value)
        if pa.types.is_duration(t) and t.unit == "ns":
            return None  # (floored for Spark, as above)
        if pa.types.is_timestamp(t) and t.unit == "ns":
            parts = [_ns_range(name, "==", v) for v in values if v is not None]
            if any(p is None for p in parts):
                return None
            if any(v is None for v in values):
                parts.append(c.isin([None]))  # a miss is NULL when the list holds NULL
            if not parts:
                return c.isin([])
            return Or.of(*parts)
        return c.isin(values)  # rcfmt's isin is SQL's IN: NaN matches NaN, NULL members as in SQL
    if isinstance(f, D.IsNull):
        return c.is_null()
    if isinstance(f, D.IsNotNull):
        return c.is_valid()
    if isinstance(f, D.StringStartsWith):
        if (pa.types.is_string(t) or pa.types.is_large_string(t)) and isinstance(f.value, str):
            return c.startswith(f.value)
        return None
    return None  # StringEndsWith, StringContains, anything new


def translate(f, schema: pa.Schema, names: dict | None = None):
    """The rcfmt expression equivalent to Spark filter ``f`` over ``schema`` (the
    dataset's Arrow schema), or None when it cannot be pushed exactly. ``names`` maps
    Spark column names to dataset column names (default: the same names)."""
    if names is None:
        names = {n: n for n in schema.names}
    schema = filter_schema(schema)  # leaves under structs by dotted path
    types = {field.name: field.type for field in schema}
    try:
        expr = _translate(f, types, names)
        if expr is None:
            return None
        bind(expr, schema)  # literals must fit the column type
        return expr
    except (RcfmtError, TypeError, ValueError, OverflowError, pa.ArrowException):
        return None


def translate_all(filters, schema: pa.Schema, names: dict | None = None):
    """``(pushed rcfmt expression or None, filters Spark must still evaluate)``; the
    returned filters are the very objects received."""
    pushed, rest = [], []
    for f in filters:
        e = translate(f, schema, names)
        if e is None:
            rest.append(f)
        else:
            pushed.append(e)
    return (And.of(*pushed) if pushed else None), rest
