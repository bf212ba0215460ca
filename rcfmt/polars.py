"""rcfmt as a Polars lazy source: ``rcfmt.polars.scan_rcfmt(path)`` returns a
``polars.LazyFrame`` through Polars' IO plugin API (``polars.io.plugins``).

Polars hands the scan its projection, predicate, row limit and batch size. The
projection, the limit and the batch size go to the rcfmt scan as they are. The
predicate is translated where the translation is exact (below) and used to prune files,
blocks, pages and rows; Polars' own predicate is then applied to every batch, so the
rows are always those Polars would select, whatever was translated.

Translated (anything else is simply not pushed):

- ``AND`` of translatable parts (an untranslatable conjunct is dropped: the scan then
  keeps more rows, never fewer); ``OR`` when both sides translate;
- ``==, !=, <, <=, >, >=`` and ``is_between`` of a column and a literal, on integer,
  date and string columns with literals of the same kind; ``is_null`` /
  ``is_not_null`` on any column. Floats are not pushed: Polars orders NaN above every
  number, rcfmt's comparisons never match NaN.

Expressions are read from Polars' JSON serialization of the predicate
(``Expr.meta.serialize(format="json")``); a form this module does not know is not
pushed.
"""
from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa

from .scan.expr import col

__all__ = ["scan_rcfmt", "translate_predicate"]

_OPS = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_INT_SCALARS = {"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"}


def _literal(node: dict):
    """``(kind, value)`` of a Polars literal node: kind "int", "str" or "date"; None if
    the form is not one of those."""
    lit = node.get("Literal") if isinstance(node, dict) else None
    if not isinstance(lit, dict):
        return None
    dyn, scalar = lit.get("Dyn"), lit.get("Scalar")
    if isinstance(dyn, dict) and len(dyn) == 1:
        (kind, value), = dyn.items()
        if kind == "Int" and isinstance(value, int) and not isinstance(value, bool):
            return "int", value
        if kind == "Str" and isinstance(value, str):
            return "str", value
        return None
    if isinstance(scalar, dict) and len(scalar) == 1:
        (kind, value), = scalar.items()
        if kind in _INT_SCALARS and isinstance(value, int) and not isinstance(value, bool):
            return "int", value
        if kind == "String" and isinstance(value, str):
            return "str", value
        if kind == "Date" and isinstance(value, int):
            return "date", dt.date(1970, 1, 1) + dt.timedelta(days=value)
    return None


def _kind_of(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "str"
    if pa.types.is_date32(t):
        return "date"
    return None


def _column(node, schema: pa.Schema) -> str | None:
    name = node.get("Column") if isinstance(node, dict) else None
    return name if isinstance(name, str) and schema.get_field_index(name) >= 0 else None


def _compare(name: str, op: str, lit, schema: pa.Schema):
    if lit is None or _kind_of(schema.field(name).type) != lit[0]:
        return None
    c, v = col(name), lit[1]
    return {"==": c == v, "!=": c != v, "<": c < v, "<=": c <= v, ">": c > v, ">=": c >= v}[op]


def _translate(node, schema: pa.Schema):
    if not isinstance(node, dict) or len(node) != 1:
        return None
    (kind, body), = node.items()
    if kind == "BinaryExpr" and isinstance(body, dict):
        op = body.get("op")
        if op in ("And", "LogicalAnd"):
            left, right = _translate(body.get("left"), schema), _translate(body.get("right"), schema)
            if left is None or right is None:
                return left if right is None else right  # a dropped conjunct keeps more rows
            return left & right
        if op in ("Or", "LogicalOr"):
            left, right = _translate(body.get("left"), schema), _translate(body.get("right"), schema)
            return None if left is None or right is None else left | right
        if op in _OPS:
            name = _column(body.get("left"), schema)
            if name is not None:
                return _compare(name, _OPS[op], _literal(body.get("right")), schema)
            name = _column(body.get("right"), schema)
            if name is not None:
                return _compare(name, _FLIP[_OPS[op]], _literal(body.get("left")), schema)
        return None
    if kind == "Function" and isinstance(body, dict):
        inputs, function = body.get("input"), body.get("function")
        if not isinstance(inputs, list) or not inputs:
            return None
        name = _column(inputs[0], schema)
        if name is None:
            return None
        if function == {"Boolean": "IsNull"} and len(inputs) == 1:
            return col(name).is_null()
        if function == {"Boolean": "IsNotNull"} and len(inputs) == 1:
            return col(name).is_valid()
        between = function.get("Boolean") if isinstance(function, dict) else None
        if isinstance(between, dict) and isinstance(between.get("IsBetween"), dict) and len(inputs) == 3:
            closed = between["IsBetween"].get("closed")
            ops = {"Both": (">=", "<="), "Left": (">=", "<"), "Right": (">", "<="), "None": (">", "<")}.get(closed)
            if ops is None:
                return None
            lo = _compare(name, ops[0], _literal(inputs[1]), schema)
            hi = _compare(name, ops[1], _literal(inputs[2]), schema)
            return None if lo is None or hi is None else lo & hi
    return None


def translate_predicate(predicate, schema: pa.Schema):
    """The rcfmt expression implied by a Polars predicate (exact where translated; parts
    that are not translated are dropped from conjunctions), or None."""
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # a Polars version whose serialization differs: push nothing
        return None
    return _translate(tree, schema)


def scan_rcfmt(path, *, stats=None, use_threads: bool = True, fetch=None):
    """A ``polars.LazyFrame`` over the rcfmt file or dataset at ``path``, with
    projection, predicate (see the module docstring), ``n_rows`` and batch size pushed
    into the rcfmt scan. ``stats``: a :class:`rcfmt.scan.scanner.ScanStats` each
    collection adds its scan's counts to; ``fetch``: :class:`rcfmt.FetchOptions` for
    remote reads."""
    import polars as pl
    from polars.io.plugins import register_io_source

    from .dataset import Dataset

    dataset = Dataset.open(path)
    schema = dataset.schema
    polars_schema = pl.from_arrow(schema.empty_table()).schema

    def source(with_columns, predicate, n_rows, batch_size):
        expr = None if predicate is None else translate_predicate(predicate, schema)
        wanted = list(with_columns) if with_columns is not None else list(schema.names)
        needed = list(dict.fromkeys(wanted + (predicate.meta.root_names() if predicate is not None else [])))
        scan = dataset.scan(columns=needed, filter=expr, use_threads=use_threads, fetch=fetch)
        left = n_rows
        try:
            for batch in scan.iter_batches(batch_size or 65536):
                df = pl.from_arrow(batch)
                if predicate is not None:
                    df = df.filter(predicate)
                df = df.select(wanted)
                if left is not None:
                    df = df.head(left)
                    left -= df.height
                yield df
                if left is not None and left <= 0:
                    break
        finally:
            if stats is not None:
                stats.add(scan.stats)

    return register_io_source(source, schema=polars_schema, explain_name="rcfmt", explain_detail=str(path))
