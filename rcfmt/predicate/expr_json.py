"""Predicates as JSON text, exactly: :func:`dumps` an unbound expression, :func:`loads`
it back equal, literal types included (so it binds the same way).

This is how an expression travels where only strings do, e.g. as the Spark source's
``filterExpr`` read option. Literals are tagged with their type: ints and decimals as
text, floats as hex (NaN, infinities and -0.0 kept), dates and datetimes in ISO form
(an aware datetime keeps its UTC offset, which is all a comparison uses), bytes in
hex, numpy scalars with their dtype. ``loads`` builds nothing but expressions and
literals of those types, and refuses anything else with :class:`FilterError`.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json

import numpy as np

from ..errors import FilterError
from .expr import And, Comparison, Expr, IsIn, IsNan, IsNull, IsValid, ListContains, Not, Or, StartsWith

__all__ = ["dumps", "loads"]

_OPS = ("==", "!=", "<", "<=", ">", ">=")
_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns")
_PARSERS = {"int": int, "float": float.fromhex, "decimal": decimal.Decimal, "str": str, "bytes": bytes.fromhex,
            "datetime": dt.datetime.fromisoformat, "date": dt.date.fromisoformat}


# ------------------------------------------------------------------ literals
def _literal(v):
    if v is None:
        return ["null"]
    if isinstance(v, np.generic):
        if isinstance(v, (np.datetime64, np.timedelta64)):  # (in the unit itself: 10s -> s)
            kind = "datetime64" if isinstance(v, np.datetime64) else "timedelta64"
            unit = np.datetime_data(v.dtype)[0]
            return [kind, unit, int(v.astype(f"{kind}[{unit}]").view(np.int64))]
        if isinstance(v, np.bool_):
            return ["np", "bool", bool(v)]
        if isinstance(v, np.integer):
            return ["np", v.dtype.str, str(int(v))]
        if isinstance(v, np.floating):
            return ["np", v.dtype.str, float(v).hex()]
        raise FilterError(f"a literal of numpy type {type(v).__name__} cannot be written as JSON")
    if isinstance(v, bool):
        return ["bool", v]
    if isinstance(v, int):
        return ["int", str(v)]
    if isinstance(v, float):
        return ["float", v.hex()]
    if isinstance(v, decimal.Decimal):
        return ["decimal", str(v)]
    if isinstance(v, str):
        return ["str", v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return ["bytes", bytes(v).hex()]
    if isinstance(v, dt.datetime):
        if getattr(v, "nanosecond", 0):  # (a pandas Timestamp: datetime keeps microseconds)
            return ["pandas_timestamp", v.isoformat()]
        return ["datetime", v.isoformat()]
    if isinstance(v, dt.date):
        return ["date", v.isoformat()]
    raise FilterError(f"a literal of type {type(v).__name__} ({v!r}) cannot be written as JSON")


def _value(item):
    if not isinstance(item, list) or not item or not isinstance(item[0], str):
        raise FilterError(f"not a tagged literal: {item!r}")
    tag, args = item[0], item[1:]
    try:
        if tag == "null" and not args:
            return None
        if tag == "datetime64" and len(args) == 2 and args[0] in _UNITS and type(args[1]) is int:
            return np.datetime64(args[1], args[0])
        if tag == "timedelta64" and len(args) == 2 and args[0] in _UNITS and type(args[1]) is int:
            return np.timedelta64(args[1], args[0])
        if tag == "pandas_timestamp" and len(args) == 1 and isinstance(args[0], str):
            import pandas as pd

            return pd.Timestamp(args[0])
        if tag == "np" and len(args) == 2 and isinstance(args[0], str):
            kind, raw = args
            if kind == "bool" and isinstance(raw, bool):
                return np.bool_(raw)
            dtype = np.dtype(kind)
            if dtype.kind in "iu" and isinstance(raw, str):
                return dtype.type(int(raw))
            if dtype.kind == "f" and isinstance(raw, str):
                return dtype.type(float.fromhex(raw))
        if len(args) == 1:
            arg = args[0]
            if tag == "bool" and isinstance(arg, bool):
                return arg
            if isinstance(arg, str) and tag in _PARSERS:
                return _PARSERS[tag](arg)
    except (ValueError, TypeError, OverflowError, decimal.InvalidOperation):
        pass
    raise FilterError(f"not a valid literal: {item!r}")


# ------------------------------------------------------------------ expressions
def _node(e) -> dict:
    if isinstance(e, Comparison):
        return {"cmp": e.op, "column": e.column, "value": _literal(e.value)}
    if isinstance(e, IsIn):
        return {"isin": [_literal(v) for v in e.values], "column": e.column}
    if isinstance(e, StartsWith):
        return {"startswith": _literal(e.prefix), "column": e.column}
    if isinstance(e, ListContains):
        return {"list_contains": _literal(e.value), "column": e.column}
    for cls, name in ((IsNull, "is_null"), (IsValid, "is_valid"), (IsNan, "is_nan")):
        if isinstance(e, cls):
            return {name: e.column}
    if isinstance(e, (And, Or)):
        return {"and" if isinstance(e, And) else "or": [_node(c) for c in e.children]}
    if isinstance(e, Not):
        return {"not": _node(e.child)}
    raise FilterError(f"{e!r} is not an rcfmt expression")


def dumps(expr: Expr) -> str:
    """JSON text of ``expr`` (an unbound expression, e.g. ``col("x") > 5``)."""
    if not isinstance(expr, Expr):
        raise FilterError(f"expected an rcfmt expression, got {type(expr).__name__} {expr!r}")
    try:
        return json.dumps(_node(expr), separators=(",", ":"), allow_nan=False)
    except RecursionError:  # (:func:`loads` refuses more than 200 levels too)
        raise FilterError("the filter is nested too deeply to be written as JSON; write it flatter") from None


def _column(node: dict) -> str:
    name = node.get("column")
    if not isinstance(name, str):
        raise FilterError(f"no column name in {node!r}")
    return name


def _expr(node, depth: int = 0):
    if depth > 200:
        raise FilterError("expression nested too deeply")
    if not isinstance(node, dict):
        raise FilterError(f"not an expression: {node!r}")
    keys = set(node)
    if keys == {"cmp", "column", "value"} and node["cmp"] in _OPS:
        return Comparison(_column(node), node["cmp"], _value(node["value"]))
    if keys == {"isin", "column"} and isinstance(node["isin"], list):
        return IsIn(_column(node), tuple(_value(v) for v in node["isin"]))
    if keys == {"startswith", "column"}:
        return StartsWith(_column(node), _value(node["startswith"]))
    if keys == {"list_contains", "column"}:
        return ListContains(_column(node), _value(node["list_contains"]))
    for cls, name in ((IsNull, "is_null"), (IsValid, "is_valid"), (IsNan, "is_nan")):
        if keys == {name} and isinstance(node[name], str):
            return cls(node[name])
    for cls, name in ((And, "and"), (Or, "or")):
        if keys == {name} and isinstance(node[name], list) and node[name]:
            return cls(tuple(_expr(c, depth + 1) for c in node[name]))
    if keys == {"not"}:
        return Not(_expr(node["not"], depth + 1))
    raise FilterError(f"not an expression: {node!r}")


def loads(text: str) -> Expr:
    """The expression :func:`dumps` wrote (FilterError for anything else)."""
    if not isinstance(text, (str, bytes)):
        raise FilterError(f"expected JSON text, got {type(text).__name__}")
    try:
        node = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise FilterError(f"not JSON: {exc}") from None
    return _expr(node)
