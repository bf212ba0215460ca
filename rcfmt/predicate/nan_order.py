"""Comparisons with NaN ordered above every number and equal to itself (-0.0 equal to
0.0), as Spark SQL and Polars order floats, built from rcfmt expressions (whose own
comparisons follow IEEE: NaN matches no comparison but ``!=``). Shared by the Spark
``filter`` option (:mod:`rcfmt.predicate.sql_filter`) and the Polars plugin
(:mod:`rcfmt.interop.polars`)."""
from __future__ import annotations

import math

import pyarrow as pa

__all__ = ["is_nan_literal", "nan_order_compare", "compare", "floored_micros_compare"]


def is_nan_literal(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def nan_order_compare(c, t: pa.DataType, op: str, value):
    """``c op value`` with NaN equal to NaN and greater than every other value: NULL for
    NULL rows; on other types than floats, the plain comparison."""
    if not pa.types.is_floating(t):
        return compare(c, op, value)
    if is_nan_literal(value):
        return {
            "==": c.is_nan(), ">=": c.is_nan(),
            "!=": ~c.is_nan(), "<": ~c.is_nan(),  # every non-NaN value (is_nan is NULL for NULL)
            "<=": c.is_valid(),
            ">": c.is_null() & c.is_valid(),  # nothing is above NaN: never TRUE
        }[op]
    out = compare(c, op, value)
    return out | c.is_nan() if op in (">", ">=") else out  # NaN is above v (and != v, as in IEEE)


def compare(c, op: str, value):
    """``c op value`` for a column ``c`` and op one of ``== != < <= > >=``."""
    if op == "==":
        return c == value
    if op == "!=":
        return c != value
    if op == "<":
        return c < value
    if op == "<=":
        return c <= value
    if op == ">":
        return c > value
    return c >= value


def floored_micros_compare(c, op: str, value):
    """``floor(c to microseconds) op value`` for a nanosecond timestamp column ``c`` and a
    ``datetime`` ``value`` (microseconds), as Spark reads and compares such columns: a
    range of ``c``; None when the microsecond after ``value`` is beyond ``datetime``."""
    import datetime as dt

    try:
        after = value + dt.timedelta(microseconds=1)
    except OverflowError:
        return None
    return {"==": (c >= value) & (c < after), "!=": (c < value) | (c >= after), ">": c >= after,
            ">=": c >= value, "<": c < value, "<=": c < after}[op]
