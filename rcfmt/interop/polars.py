"""rcfmt as a Polars lazy source: ``rcfmt.polars.scan_rcfmt(path)`` returns a
``polars.LazyFrame`` through Polars' IO plugin API (``polars.io.plugins``).

Polars hands the scan its projection, predicate, row limit and batch size. The
projection, the limit and the batch size go to the rcfmt scan as they are. The
predicate is translated where the translation is exact (below) and used to prune files,
blocks, pages and rows. When all of it translates, the scan's rows are Polars' rows and
are handed over as they are; otherwise Polars' own predicate is applied to every batch,
so the rows are always those Polars would select, whatever was translated.

Translated exactly (the pushed rcfmt expression is TRUE on the rows where Polars'
predicate is TRUE), as Polars evaluates them -- the predicate Polars hands a source is
already type-coerced, so a literal has the column's type or the column sits under a
cast:

- ``==, !=, <, <=, >, >=`` (column and literal either way round) and ``is_between``
  with every ``closed=``, on integer, float, decimal, date, timestamp (with or without
  time zone, literal of the column's unit and zone), duration (the column's unit),
  string, binary and (``==``, ``!=``) boolean columns; also under the casts Polars
  inserts that keep every value (a decimal to more scale, a narrower integer to a wider
  one or to float64, float32 to float64, a date to a datetime, a timestamp or duration
  to a finer unit). ``!=`` of a nanosecond column and a microsecond literal is not
  pushed: Polars compares it on the column truncated to microseconds. Floats follow
  Polars' order: NaN is above every number and equal to itself, -0.0 equals 0.0
  (``x > 1.0`` is pushed as ``(x > 1.0) | x.is_nan()``, ``x == nan`` as
  ``x.is_nan()``); a dynamic literal is taken as Polars casts it to the column's type
  (``0.1`` to float32).
- ``is_in`` of a literal list: NaN members match NaN, -0.0 matches 0.0, a NULL value is
  NULL and a NULL member matches nothing -- or, with ``nulls_equal=True``, a NULL value
  is TRUE when a member is NULL and FALSE otherwise.
- ``is_null``, ``is_not_null``, ``is_nan``, ``is_not_nan`` (NULL for NULL values),
  ``str.starts_with`` of a literal, a boolean column on its own, and the boolean
  constants Polars folds parts into (TRUE, FALSE, NULL).
- ``&``, ``|`` and ``~`` (Kleene logic in Polars and rcfmt alike). ``~`` is pushed
  down to the leaves, each translated as the rows where Polars' leaf is FALSE, so no
  translation leans on NULL or NaN meaning the same under NOT. An untranslatable part
  is dropped only where it is a conjunct after that (the scan then keeps more rows,
  never fewer): ``a & u`` and ``~(a | u)`` push ``a`` and ``~a``; ``a | u`` and
  ``~(a & u)`` push nothing.

Expressions are read from Polars' JSON serialization of the predicate
(``Expr.meta.serialize(format="json")``), literals by evaluating their node with
Polars (JSON holds no NaN or infinity); a form this module does not know is not pushed.
"""
from __future__ import annotations

import decimal
import functools
import json
import os
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from ..errors import InvalidOptionError, SchemaError, UnsupportedError
from ..predicate.expr import col
from ..predicate.nan_order import is_nan_literal, nan_order_compare
from ..schema.nested_schemas import filter_schema

__all__ = ["scan_rcfmt", "translate", "translate_predicate", "Translation", "polars_arrow_schema", "polars_schema"]

_OPS = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_COMPLEMENT = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}  # NOT, in a total order
_BETWEEN = {"Both": (">=", "<="), "Left": (">=", "<"), "Right": (">", "<="), "None": (">", "<")}
_UNITS = ("ms", "us", "ns")  # coarse to fine
_UNIT_NANOS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_UNIT_NAMES = {"Milliseconds": "ms", "Microseconds": "us", "Nanoseconds": "ns"}
_SIMPLE_TYPES = {"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Float32", "Float64"}
_NUMPY = {"Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int64",
          "UInt8": "uint8", "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint64"}


def _first_rows(batches: list, limit: int) -> list:
    """The first ``limit`` rows of ``batches`` (each a batch of the source's columns)."""
    from ..schema.arrow_io import compact_fixed_size_lists

    out = []
    for batch in batches:
        if limit <= 0:
            break
        if batch.num_rows > limit:
            batch = compact_fixed_size_lists(batch.slice(0, limit), [
                i for i, f in enumerate(batch.schema) if pa.types.is_fixed_size_list(f.type)])
        out.append(batch)
        limit -= batch.num_rows
    return out


@functools.lru_cache(maxsize=256)
def _bindable(schema: pa.Schema, name: str) -> bool:
    from ..errors import RcfmtError
    from ..predicate.residual import prepare_filter

    try:
        prepare_filter(col(name).is_valid(), schema)
        return True
    except RcfmtError:
        return False


@functools.lru_cache(maxsize=64)
def _stored_columns(schema: pa.Schema) -> list[str]:
    """The names of the nested fields' stored columns in a file of ``schema`` (a map's
    ``m.key``, a list's ``l.item``), which a flat column of that name would repeat."""
    from ..errors import RcfmtError
    from ..schema.nested import plan_schema
    from ..schema.tables import storage_schema

    if not any(pa.types.is_nested(f.type) for f in schema):
        return []
    try:
        return [name for name, _, _ in plan_schema(storage_schema(schema)[0])[1] if "." in name]
    except RcfmtError:
        return []


def _stored_columns_of(schema: pa.Schema) -> list[str]:
    try:
        return _stored_columns(schema)
    except TypeError:  # (a schema that cannot be hashed)
        return _stored_columns.__wrapped__(schema)


class _Ref(NamedTuple):
    name: str  # the column
    ct: object  # the Polars type it is compared in (its own, or a widening cast's)


class _Skip(Exception):
    """A part of the predicate that is not translated exactly."""


class _Translator:
    """A Polars predicate (its JSON tree, walked with the ``polars.Expr`` of each node
    for literal values: JSON cannot hold NaN or infinities) as an rcfmt expression TRUE
    on the rows where Polars' is TRUE, or a superset of them where a conjunct is dropped.

    NOT is pushed to the leaves (De Morgan holds in Kleene logic, which Polars' ``&``,
    ``|`` and ``~`` follow), so each leaf is translated in its polarity -- the rows where
    Polars' leaf is TRUE, or where it is FALSE -- and a dropped conjunct (which widens
    the result) is never negated: ``~(a & u)`` is ``~a | ~u``, untranslatable as a whole."""

    def __init__(self, schema: pa.Schema, dtypes=None):
        import polars as pl

        self.pl = pl
        self.schema = schema
        self.dtypes = polars_schema(schema) if dtypes is None else dtypes
        #: names rcfmt's filters read twice, as a column and as a struct's leaf ("a.b" beside
        #: a struct "a" with a field "b"): left to Polars, which names columns only
        names = filter_schema(schema).names + _stored_columns_of(schema)  # (a map's or list's leaves too)
        self.ambiguous = {n for n in names if names.count(n) > 1}
        self.dropped = False  # whether a conjunct was left out (the translation keeps more rows)
        #: a flat column, to spell the constants Polars folds parts into
        self.flat = next((f.name for f in schema if not pa.types.is_nested(f.type)
                          and not pa.types.is_dictionary(f.type) and self.bindable(f.name)), None)

    def bindable(self, name: str) -> bool:
        """Whether an rcfmt filter can name column ``name`` (not a struct, list or map,
        not a name that also spells a path into a nested column): others are Polars'."""
        try:
            return _bindable(self.schema, name)
        except TypeError:  # (a schema that cannot be hashed: an extension type's)
            return _bindable.__wrapped__(self.schema, name)

    # ---------------------------------------------------------------- predicates
    def predicate(self, node, expr, neg: bool = False):
        """The translation, or None where nothing is (a superset: nothing pushed)."""
        try:
            return self._node(node, expr, neg)
        except _Skip:
            return None

    def _node(self, node, expr, neg: bool):
        if not isinstance(node, dict) or len(node) != 1:
            return None
        (kind, body), = node.items()
        if kind == "Alias" and isinstance(body, list) and body:  # a name changes no value
            return self._node(body[0], self._children(expr, 1)[0], neg)
        if kind == "Literal" and self.flat is not None:  # a constant Polars folded a part into
            scalar = _json_scalar(body, self.pl)
            if scalar is None:
                try:
                    series = self.pl.select(expr.get().alias("v")).to_series()
                except Exception:
                    raise _Skip from None
                if series.dtype != self.pl.Boolean or len(series) != 1:
                    return None
                value = series[0]
            elif scalar[0] == self.pl.Boolean:
                value = scalar[1]
            else:
                return None
            c = col(self.flat)
            if value is None or value == neg:  # NULL stays NULL under NOT: never TRUE
                return c.is_null() & c.is_valid()
            return c.is_null() | c.is_valid()
        if kind == "Column":  # a boolean column on its own
            ref = self._column(node)
            if ref is None or ref.ct != self.pl.Boolean:
                return None
            return col(ref.name) == (not neg)
        if kind == "BinaryExpr" and isinstance(body, dict):
            op = body.get("op")
            if op in ("And", "LogicalAnd", "Or", "LogicalOr"):
                left, right = self._children(expr, 2)
                a = self.predicate(body.get("left"), left, neg)
                b = self.predicate(body.get("right"), right, neg)
                if (op in ("And", "LogicalAnd")) != neg:  # a conjunction: a dropped side keeps more rows
                    self.dropped |= a is None or b is None
                    return a if b is None else b if a is None else a & b
                return None if a is None or b is None else a | b
            if op in _OPS:
                left, right = self._children(expr, 2)
                ref, flip = self._column(body.get("left")), False
                lit_node, lit_expr = body.get("right"), right
                if ref is None:
                    ref, flip = self._column(body.get("right")), True
                    lit_node, lit_expr = body.get("left"), left
                if ref is None:
                    return None
                o = _FLIP[_OPS[op]] if flip else _OPS[op]
                return self._compare(ref, _COMPLEMENT[o] if neg else o, self._operand(ref, lit_node, lit_expr))
            return None
        if kind == "Function" and isinstance(body, dict):
            inputs, function = body.get("input"), body.get("function")
            if not isinstance(inputs, list) or not inputs:
                return None
            children = self._children(expr, len(inputs))
            if function == {"Boolean": "Not"} and len(inputs) == 1:
                return self.predicate(inputs[0], children[0], not neg)
            ref = self._column(inputs[0])
            if ref is None:
                return None
            name, c = ref.name, col(ref.name)
            if len(inputs) == 1 and function in ({"Boolean": "IsNull"}, {"Boolean": "IsNotNull"}):
                return c.is_null() if (function == {"Boolean": "IsNull"}) != neg else c.is_valid()
            if len(inputs) == 1 and function in ({"Boolean": "IsNan"}, {"Boolean": "IsNotNan"}):
                if not pa.types.is_floating(self._type(name)):
                    return None
                # is_nan of NULL is NULL in both; ~is_nan: the non-null non-NaN rows
                return c.is_nan() if (function == {"Boolean": "IsNan"}) != neg else ~c.is_nan()
            if function == {"StringExpr": "StartsWith"} and len(inputs) == 2:
                if ref.ct != self.pl.String:
                    return None
                prefix = self._operand(ref, inputs[1], children[1])
                return ~c.startswith(prefix) if neg else c.startswith(prefix)
            boolean = function.get("Boolean") if isinstance(function, dict) else None
            if isinstance(boolean, dict) and isinstance(boolean.get("IsBetween"), dict) and len(inputs) == 3:
                ops = _BETWEEN.get(boolean["IsBetween"].get("closed"))
                if ops is None:
                    return None
                lo = self._operand(ref, inputs[1], children[1])
                hi = self._operand(ref, inputs[2], children[2])
                if neg:
                    return self._compare(ref, _COMPLEMENT[ops[0]], lo) | self._compare(ref, _COMPLEMENT[ops[1]], hi)
                return self._compare(ref, ops[0], lo) & self._compare(ref, ops[1], hi)
            if isinstance(boolean, dict) and isinstance(boolean.get("IsIn"), dict) and len(inputs) == 2:
                return self._is_in(ref, inputs[1], children[1], boolean["IsIn"].get("nulls_equal"), neg)
        return None

    def _is_in(self, ref, node, expr, nulls_equal, neg: bool):
        """Polars' ``is_in``: a member matches the values equal to it (NaN matches NaN,
        -0.0 matches 0.0); a NULL value is NULL, and a NULL member matches nothing -- or,
        with ``nulls_equal``, a NULL value is TRUE if a member is NULL and FALSE if not."""
        if nulls_equal not in (True, False) or not self._is_literal(node):
            raise _Skip
        series = self._evaluate(expr)
        if not isinstance(series.dtype, self.pl.List):
            raise _Skip
        members = series[0]
        inner = members.dtype
        name, ct = ref.name, ref.ct
        if not (inner == ct or inner == self.pl.Null or (inner.is_integer() and ct.is_integer())
                or (inner.is_float() and ct.is_float()) or (inner.is_decimal() and ct.is_decimal())):
            raise _Skip
        has_null = members.null_count() > 0
        values = [self._value(ref, inner, v, dyn=False) for v in self._physical(members.drop_nulls(), inner)]
        c = col(name)
        if values:
            found = c.isin(values)  # no None member: TRUE, FALSE, NULL for NULL rows (as Polars without nulls_equal)
        else:
            found = c.is_null() & c.is_valid()  # never TRUE ...
            if neg:
                found = c.is_valid()  # ... and FALSE on every non-null row
        if nulls_equal:
            nulls = has_null != neg  # NULL rows: TRUE if a member is NULL, else FALSE
            out = (~found if values else found) if neg else found
            return out | c.is_null() if nulls else out
        return (~found if values else found) if neg else found

    # ---------------------------------------------------------------- operands
    @staticmethod
    def _children(expr: "_Lazy", n: int) -> list:
        return [_Lazy(expr, i, n) for i in range(n)]

    def _column(self, node) -> _Ref | None:
        """The column ``node`` reads: a column, or a column under a cast Polars inserts
        that keeps every value (an integer or decimal widened, float32 to float64, a
        32-bit or narrower integer to float64); ``ct``: the type compared in."""
        if not isinstance(node, dict):
            return None
        cast = node.get("Cast")
        if isinstance(cast, dict):
            ref = self._column(cast.get("expr"))
            if ref is None or ref.ct != self.dtypes[ref.name]:
                return None
            target = self._dtype_of(cast.get("dtype"))
            return _Ref(ref.name, target) if target is not None and self._widens(ref.ct, target) else None
        name = node.get("Column")
        if not isinstance(name, str) or name not in self.dtypes or name in self.ambiguous or not self.bindable(name):
            return None
        return _Ref(name, self.dtypes[name])

    def _dtype_of(self, node):
        """The Polars type of a cast's ``dtype`` node (None for forms not known)."""
        pl = self.pl
        literal = node.get("Literal") if isinstance(node, dict) else None
        if isinstance(literal, str) and (literal in _SIMPLE_TYPES or literal == "String"):
            return getattr(pl, literal)
        if isinstance(literal, dict) and len(literal) == 1:
            (kind, args), = literal.items()
            first = args[0] if isinstance(args, list) and args else args
            unit = _UNIT_NAMES.get(first) if isinstance(first, str) else None
            if kind == "Duration" and unit is not None:
                return pl.Duration(unit)
            if kind == "Datetime" and isinstance(args, list) and len(args) == 2 and unit is not None:
                zone = args[1]
                if zone is None:
                    return pl.Datetime(unit)
                if isinstance(zone, dict) and isinstance(zone.get("inner"), str):
                    return pl.Datetime(unit, zone["inner"])
        if isinstance(literal, dict) and isinstance(literal.get("Decimal"), list) and len(literal["Decimal"]) == 2:
            precision, scale = literal["Decimal"]
            if isinstance(precision, int) and isinstance(scale, int):
                return pl.Decimal(precision, scale)
        return None

    def _widens(self, source, target) -> bool:
        """Whether casting ``source`` to ``target`` keeps every value exactly."""
        pl = self.pl
        if source == target:  # (a Categorical column is cast to String, its stored type)
            return True
        if source.is_decimal() and target.is_decimal():
            return target.scale >= source.scale and target.precision - target.scale >= source.precision - source.scale
        if source.is_integer() and target.is_integer():
            s, t = np.iinfo(_NUMPY[str(source)]), np.iinfo(_NUMPY[str(target)])
            return t.min <= s.min and s.max <= t.max
        if source == pl.Float32 and target == pl.Float64:
            return True
        # (to nanoseconds, values outside 1677-2262 overflow: Polars makes them NULL, or raises
        # for a strict cast, so such a cast is left to it; ms and us hold +-294,000 years)
        if source == pl.Date and isinstance(target, pl.Datetime):
            return target.time_zone is None and target.time_unit != "ns"  # midnight of the day
        if type(source) is type(target) and isinstance(source, (pl.Datetime, pl.Duration)):
            same_zone = not isinstance(source, pl.Datetime) or source.time_zone == target.time_zone
            finer = _UNITS.index(target.time_unit) >= _UNITS.index(source.time_unit)
            return same_zone and finer and (target.time_unit != "ns" or source.time_unit == "ns")
        if source.is_integer() and target == pl.Float64:
            return np.iinfo(_NUMPY[str(source)]).bits <= 32
        return False

    def _type(self, name: str) -> pa.DataType:
        return self.schema.field(name).type

    @staticmethod
    def _is_literal(node) -> bool:
        while isinstance(node, dict) and isinstance(node.get("Alias"), list) and node["Alias"]:
            node = node["Alias"][0]  # (a Series given to is_in arrives named)
        return isinstance(node, dict) and isinstance(node.get("Literal"), dict)

    def _evaluate(self, expr: "_Lazy"):
        try:
            series = self.pl.select(expr.get().alias("v")).to_series()
        except Exception:
            raise _Skip from None
        if len(series) != 1 or series.null_count():
            raise _Skip  # (a comparison with NULL is NULL on every row: left to Polars)
        return series

    def _physical(self, series, dtype) -> list:
        """Values of ``series`` as Python values, temporal ones as ints of their unit."""
        if dtype.is_temporal():
            return series.to_physical().to_list()
        return series.to_list()

    def _operand(self, ref: _Ref, node, expr):
        """The rcfmt literal equal to what Polars compares column ``name`` with (Polars
        casts a literal to the column's type where they differ: only exact cases kept)."""
        if not self._is_literal(node):
            raise _Skip
        while "Alias" in node:
            node = node["Alias"][0]
        scalar = _json_scalar(node["Literal"], self.pl)
        if scalar is not None:  # (the JSON holds it exactly: no Polars query to evaluate it)
            return self._value(ref, scalar[0], scalar[1], False)
        dyn = "Dyn" in node["Literal"]
        series = self._evaluate(expr)
        return self._value(ref, series.dtype, self._physical(series, series.dtype)[0], dyn)

    def _value(self, ref: _Ref, lt, v, dyn: bool):
        pl = self.pl
        ct = ref.ct
        if ct.is_integer():
            if not lt.is_integer() or isinstance(v, bool):
                raise _Skip
            if not dyn and lt != ct and pl.UInt64 in (ct, lt) and (ct.is_signed_integer() or lt.is_signed_integer()):
                raise _Skip  # UInt64 with a signed type: no exact common type
            return int(v)
        if ct.is_float():
            if lt.is_float():
                if dyn and ct == pl.Float32:  # Polars casts a dynamic float literal to the column's type
                    with np.errstate(over="ignore"):
                        w = float(np.float32(v))
                    if np.isinf(w) and not np.isinf(v):
                        raise _Skip
                    return w
                return float(v)  # the same type, or a comparison in the wider one: exact
            if dyn and lt.is_integer():  # cast to the column's type: exact only if it round-trips
                try:
                    with np.errstate(over="ignore"):
                        w = float(np.float32(v)) if ct == pl.Float32 else float(v)
                except OverflowError:
                    raise _Skip from None
                if np.isinf(w) or int(w) != v:
                    raise _Skip
                return w
            raise _Skip
        if ct.is_decimal():
            if lt.is_decimal() and isinstance(v, decimal.Decimal):
                return v
            if lt.is_integer() and dyn:
                return int(v)
            raise _Skip
        if ct == pl.Date and lt == pl.Date:
            return _date(v)
        if isinstance(ct, (pl.Datetime, pl.Duration)) and type(lt) is type(ct):
            if isinstance(ct, pl.Datetime) and ct.time_zone != lt.time_zone:
                raise _Skip
            if ct.time_unit != lt.time_unit:
                raise _Skip  # Polars casts one side to the other's unit, truncating, which way depends on the op
            if ct == self.dtypes[ref.name]:  # an int of the column's unit (UTC for a time zone; date64: no unit)
                stored = _UNIT_NANOS.get(getattr(self._type(ref.name), "unit", None), 0)  # (s: Polars' ms)
                factor, rest = divmod(stored, _UNIT_NANOS[ct.time_unit])
                if factor == 1 and not rest:
                    return int(v)
                if rest or not factor or int(v) % factor:
                    raise _Skip  # (between two stored values, or date64's days: left to Polars)
                return int(v) // factor
            # the column under a widening cast (a date to a datetime, to a finer unit): exact numpy values
            return (np.datetime64 if isinstance(ct, pl.Datetime) else np.timedelta64)(int(v), ct.time_unit)
        if ct == pl.String and lt == pl.String:
            return v
        if ct == pl.Binary and lt == pl.Binary:
            return bytes(v)
        if ct == pl.Boolean and lt == pl.Boolean:
            return bool(v)
        raise _Skip

    def _compare(self, ref: _Ref, op: str, value):
        if ref.ct == self.pl.Boolean and op not in ("==", "!="):
            raise _Skip
        t = self._type(ref.name)
        if is_nan_literal(value) and not pa.types.is_floating(t):
            raise _Skip  # (an integer column cast to float64: NaN is above all its values)
        return nan_order_compare(col(ref.name), t, op, value)


class _Lazy:
    """The ``polars.Expr`` of a node of the predicate's tree, made only when asked for
    (a literal JSON cannot hold, an ``is_in`` list): splitting an expression into its
    children (``meta.pop``) costs a few microseconds a node."""

    __slots__ = ("_parent", "_index", "_n", "_expr", "_children")

    def __init__(self, parent=None, index: int = 0, n: int = 0, expr=None):
        self._parent, self._index, self._n, self._expr, self._children = parent, index, n, expr, None

    def get(self):
        if self._expr is None:
            self._expr = self._parent._child_exprs(self._n)[self._index]
        return self._expr

    def _child_exprs(self, n: int) -> list:
        if self._children is None:
            children = list(reversed(self.get().meta.pop()))
            if len(children) != n:
                raise _Skip
            self._children = children
        return self._children


_EXACT = decimal.Context(prec=100)  # (Python's default context rounds to 28 digits)
_INTEGER_SCALARS = ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64")


def _json_scalar(literal, pl):
    """``(Polars type, value as the translator takes it)`` of a literal node's JSON
    (``{"Scalar": {type: value}}``) where the JSON holds the value exactly: integers,
    float64 (JSON has no NaN nor infinities: Polars writes them as null, left to
    Polars to evaluate), decimals (unscaled, precision, scale), dates (days),
    datetimes and durations (ints of their unit), strings, binary and booleans.
    None for every other form (evaluated with Polars)."""
    scalar = literal.get("Scalar") if isinstance(literal, dict) else None
    if not isinstance(scalar, dict) or len(scalar) != 1:
        return None
    (kind, v), = scalar.items()
    if kind in _INTEGER_SCALARS:
        return (getattr(pl, kind), v) if type(v) is int else None
    if kind == "Float64":
        return (pl.Float64, float(v)) if type(v) in (int, float) else None
    if kind == "Boolean":
        return (pl.Boolean, v) if type(v) is bool else None
    if kind == "String":
        return (pl.String, v) if type(v) is str else None
    if kind == "Date":
        return (pl.Date, v) if type(v) is int else None
    if kind == "Decimal":
        if isinstance(v, list) and len(v) == 3 and all(type(x) is int for x in v):
            unscaled, precision, scale = v
            return pl.Decimal(precision, scale), decimal.Decimal(unscaled).scaleb(-scale, _EXACT)  # (not rounded)
        return None
    if kind == "Binary":
        if isinstance(v, list) and all(type(x) is int and 0 <= x < 256 for x in v):
            return pl.Binary, bytes(v)
        return None
    if kind == "Datetime" and isinstance(v, list) and len(v) == 3 and type(v[0]) is int:
        unit, zone = _UNIT_NAMES.get(v[1]), v[2]
        if unit is None:
            return None
        if zone is None:
            return pl.Datetime(unit), v[0]
        if isinstance(zone, dict) and isinstance(zone.get("inner"), str):
            return pl.Datetime(unit, zone["inner"]), v[0]
        return None
    if kind == "Duration" and isinstance(v, list) and len(v) == 2 and type(v[0]) is int:
        unit = _UNIT_NAMES.get(v[1])
        return (pl.Duration(unit), v[0]) if unit is not None else None
    return None


def _date(days: int):
    import datetime as dt

    return dt.date(1970, 1, 1) + dt.timedelta(days=days)


#: the widest decimal Polars holds
_POLARS_DIGITS = 38


def _holdable(t: pa.DataType, name: str) -> pa.DataType:
    """``t`` as a type Polars holds every value of exactly: decimal256 and negative-scale
    decimals as decimal128 (``decimal(p, -k)`` as ``decimal(p + k, 0)``; decimal32 and
    decimal64 Polars reads as they are), a zero-width
    fixed-size binary as binary, nested types by their children; UnsupportedError for a
    decimal of more digits than Polars holds, and for intervals of months or of (days,
    milliseconds) or of (months, days, nanoseconds) and for unions, which Polars has no type for."""
    if t.id in (21, 22) or t == pa.month_day_nano_interval() or pa.types.is_union(t):  # (intervals, unions)
        raise UnsupportedError(
            f"column {name!r} is {t}, which Polars has no type for; read it with rcfmt.read_table (pyarrow), "
            f"or scan_rcfmt a dataset or file without it")
    if pa.types.is_decimal(t):
        precision, scale = (t.precision - t.scale, 0) if t.scale < 0 else (t.precision, t.scale)
        if precision > _POLARS_DIGITS:
            raise UnsupportedError(
                f"column {name!r} is {t}: Polars holds decimals of at most {_POLARS_DIGITS} digits; read it "
                f"with rcfmt.read_table (pyarrow), or scan_rcfmt a dataset or file without it")
        return t if t.scale >= 0 and not pa.types.is_decimal256(t) else pa.decimal128(precision, scale)
    if pa.types.is_fixed_size_binary(t) and t.byte_width == 0:
        return pa.binary()
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        held = [f.with_type(_holdable(f.type, f"{name}.{f.name}")) for f in fields]
        return t if held == fields else pa.struct(held)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        item = t.value_field.with_type(_holdable(t.value_type, f"{name}[]"))
        if item == t.value_field:
            return t
        if pa.types.is_fixed_size_list(t):
            return pa.list_(item, t.list_size)
        return pa.large_list(item) if pa.types.is_large_list(t) else pa.list_(item)
    if pa.types.is_map(t):
        key = t.key_field.with_type(_holdable(t.key_type, f"{name}.key"))
        item = t.item_field.with_type(_holdable(t.item_type, f"{name}.value"))
        return t if (key, item) == (t.key_field, t.item_field) else pa.map_(key, item, t.keys_sorted)
    return t


def polars_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with each type Polars cannot hold as it is replaced by one holding
    every value exactly (:func:`_holdable`): what ``scan_rcfmt`` casts the scan's
    batches to before Polars takes them."""
    fields = [f.with_type(_holdable(f.type, f.name)) for f in schema]
    return schema if all(a.type == b.type for a, b in zip(fields, schema)) else pa.schema(fields, schema.metadata)


def _polars_types(schema: pa.Schema):
    import polars as pl

    held = polars_arrow_schema(schema)
    try:  # (from_arrow names an empty name "column_0": the names are the schema's)
        return dict(zip(held.names, pl.from_arrow(held.empty_table()).schema.values()))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # (Polars panics on some types: a PanicException is a BaseException)
        raise UnsupportedError(f"Polars cannot hold the types of this data ({type(exc).__name__}: {exc}); read it "
                               f"with rcfmt.read_table (pyarrow)") from None


_cached_polars_types = functools.lru_cache(maxsize=64)(lambda schema, field_metadata: _polars_types(schema))


def polars_schema(schema: pa.Schema):
    """``schema`` as a ``polars.Schema`` (of :func:`polars_arrow_schema`'s types; a copy
    of one cached per schema: converting an empty table costs ~0.2 ms, once per
    ``scan_rcfmt`` and per collect)."""
    import polars as pl

    key = tuple(None if f.metadata is None else tuple(sorted(f.metadata.items())) for f in schema)
    try:
        return pl.Schema(_cached_polars_types(schema, key))
    except TypeError:  # (an extension type that cannot be hashed: converted every time)
        return pl.Schema(_polars_types(schema))


class Translation(NamedTuple):
    """A Polars predicate as rcfmt sees it."""

    #: TRUE on the rows where the predicate is TRUE, or on more of them where a conjunct
    #: could not be translated; None if nothing translates
    expr: object
    #: the whole predicate translated: the rows where ``expr`` is TRUE are exactly its rows
    exact: bool


def translate(predicate, schema: pa.Schema, dtypes=None) -> Translation:
    """The rcfmt expression implied by a Polars predicate (untranslatable conjuncts are
    dropped, which keeps more rows), and whether it is the whole predicate. ``dtypes``:
    :func:`polars_schema` of ``schema``, when the caller has it (else converted here)."""
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # a Polars version whose serialization differs: push nothing
        return Translation(None, False)
    translator = _Translator(schema, dtypes)
    expr = translator.predicate(tree, _Lazy(expr=predicate))
    return Translation(expr, expr is not None and not translator.dropped)


def translate_predicate(predicate, schema: pa.Schema, dtypes=None):
    """:func:`translate`'s expression: TRUE on the rows where the Polars predicate is TRUE
    (exact where translated; untranslatable conjuncts are dropped, which keeps more rows),
    or None if nothing translates."""
    return translate(predicate, schema, dtypes).expr


def _groups_of_rows(batches, size: int):
    """``batches`` in consecutive lists of at least ``size`` rows (the last: the rest)."""
    group, rows = [], 0
    for batch in batches:
        group.append(batch)
        rows += batch.num_rows
        if rows >= size:
            yield group
            group, rows = [], 0
    if group:
        yield group


def _categorical_columns(categorical, schema: pa.Schema) -> list[str]:
    """The string columns ``scan_rcfmt(categorical=...)`` hands over as Categorical."""
    strings = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    if categorical is True:
        return strings
    if categorical is False or categorical is None:
        return []
    if isinstance(categorical, str) or not isinstance(categorical, (list, tuple)):
        raise InvalidOptionError(f"categorical must be True, False or a list of column names, got {categorical!r}")
    for name in categorical:
        if name not in strings:
            raise InvalidOptionError(f"categorical names {name!r}, which is not a string column of the source")
    return list(dict.fromkeys(categorical))


def scan_rcfmt(path, *, stats=None, use_threads: bool = True, fetch=None, categorical=False):
    """A ``polars.LazyFrame`` over the rcfmt file or dataset at ``path``, with
    projection, predicate (see the module docstring), ``n_rows`` and batch size pushed
    into the rcfmt scan. ``stats``: a :class:`rcfmt.scan.scanner.ScanStats` each
    collection adds its scan's counts to; ``fetch``: :class:`rcfmt.FetchOptions` for
    remote reads; ``categorical``: string columns to hand over as ``pl.Categorical``
    (True: every string column), their dictionary chunks' codes kept as they are --
    no string is materialized, and Polars' group-bys and joins on them run on codes.
    Predicates on them are pushed as on strings (Polars compares categoricals by their
    strings). Types Polars does not hold as they are stored are handed over in one that
    holds every value exactly (:func:`polars_arrow_schema`: decimal256 and decimals of
    negative scale as decimal128, zero-width fixed-size binary as binary); a decimal of
    more than 38 digits raises :class:`~rcfmt.errors.UnsupportedError` here."""
    import polars as pl
    from .polars_exit import exit_safe_stream, register_io_source  # (safe at interpreter exit)

    from ..dataset import Dataset
    from ..file.reader import RcfmtFile
    from ..storage import is_remote, local_path

    if stats is not None:
        from ..scan.scanner import ScanStats

        if not isinstance(stats, ScanStats):
            raise InvalidOptionError(f"stats must be a ScanStats or None, got {type(stats).__name__}")
    if not is_remote(path) and os.path.isfile(local_path(path)):  # one file: no dataset index to build
        file = os.path.abspath(local_path(path))
        with RcfmtFile(file, fetch=fetch) as f:
            schema = f.schema

        def start(columns, expr, as_dictionary):
            f = RcfmtFile(file, fetch=fetch)
            try:
                return f.scan(columns, expr, use_threads=use_threads, read_dictionary=as_dictionary or None), f.close
            except BaseException:
                f.close()
                raise
    else:
        dataset = Dataset.open(path)
        schema = dataset.schema

        def start(columns, expr, as_dictionary):
            return dataset.scan(columns=columns, filter=expr, use_threads=use_threads, fetch=fetch,
                                read_dictionary=as_dictionary or None), lambda: None
    if len(set(schema.names)) != len(schema.names):
        repeated = sorted({n for n in schema.names if schema.names.count(n) > 1})
        raise SchemaError(f"{path}: column names {repeated} repeat, which a Polars frame cannot hold: read the file "
                          "with rcfmt.read_table and rename them")
    pl_schema = polars_schema(schema)  # (predicates are translated on the stored types)
    held = polars_arrow_schema(schema)
    # columns handed over cast to a type Polars holds them in (decimal256 as decimal128, ...)
    recast = {f.name: f for f, g in zip(held, schema) if f.type != g.type}
    categories = _categorical_columns(categorical, schema)
    out_schema = pl.Schema({name: pl.Categorical() if name in categories else dtype
                            for name, dtype in pl_schema.items()})

    def source(with_columns, predicate, n_rows, batch_size):
        # with a predicate, Polars' n_rows (head(k).filter(p)) counts the source's rows: the
        # first n_rows rows, then the predicate -- not pushed, so that it sees those rows
        limit_first = predicate is not None and n_rows is not None
        translation = Translation(None, False) if predicate is None or limit_first else \
            translate(predicate, schema, pl_schema)
        # an exact translation selects Polars' rows: Polars need not filter them again
        refilter = predicate is not None and not translation.exact
        wanted = list(with_columns) if with_columns is not None else list(schema.names)
        needed = list(dict.fromkeys(wanted + (predicate.meta.root_names() if refilter else [])))
        scan, close = start(needed, translation.expr, [c for c in categories if c in needed])
        size = batch_size or 65536
        left = n_rows

        def frame(batches, limit=None):
            """One DataFrame of ``batches`` (their buffers, not copies; the first
            ``limit`` rows), filtered, and the rows it was made of: Polars' filter and
            select cost ~0.3 ms a call, so a selective scan's small batches (one per
            block) are handed over together, up to ``size`` rows."""
            if limit is not None:  # (the first rows: a slice, with fixed-size lists Polars reads)
                table = pa.Table.from_batches(_first_rows(batches, limit))
            else:
                table = pa.Table.from_batches(batches)
            if recast and any(name in recast for name in table.column_names):
                table = table.cast(pa.schema([recast.get(f.name, f) for f in table.schema], table.schema.metadata))
            # (through rcfmt's C stream: buffers freed by Polars' threads never take the
            # GIL once the interpreter exits -- polars_exit; zero-copy, names kept as given)
            df = pl.DataFrame(exit_safe_stream(table))
            if refilter:
                df = df.filter(predicate)
            return (df if needed == wanted else df.select(wanted)), table.num_rows  # (a select: ~0.2 ms a call)

        yielded = False
        try:
            for batches in _groups_of_rows(scan.iter_batches(size), size):
                if limit_first:
                    df, rows = frame(batches, left)
                    left -= rows
                else:
                    df, _ = frame(batches)
                    if left is not None:
                        df = df.head(left)
                        left -= df.height
                yielded = True
                yield df
                if left is not None and left <= 0:
                    break
            if predicate is not None and not yielded:
                # no row reached Polars: its predicate still raises what it raises (a
                # date's is_nan, a naive datetime against an aware column), whatever the data
                names = dict.fromkeys([*needed, *predicate.meta.root_names()])
                pl.DataFrame(schema={name: out_schema[name] for name in names if name in out_schema}).filter(predicate)
        finally:
            close()
            if stats is not None:
                stats.add(scan.stats)

    return register_io_source(source, schema=out_schema, explain_name="rcfmt", explain_detail=str(path))
