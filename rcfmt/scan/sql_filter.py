"""The ``filter`` read option: a Spark SQL predicate translated exactly into an rcfmt
expression (parsed with sqlglot's Spark dialect).

Translated: ``= <> != < <= > >=`` between a column and a literal (either side),
``BETWEEN``, ``IN (literals)``, ``IS [NOT] NULL``, ``LIKE 'prefix%'`` (and ``LIKE`` without
wildcards), a boolean column on its own, ``AND``/``OR``/``NOT`` and parentheses. Literals:
numbers (negative too), strings, ``TRUE``/``FALSE``, ``DATE '...'``, ``TIMESTAMP '...'``
and ``CAST('...' AS <type>)``; a string literal compared with a date or timestamp column
is read as an ISO date/time. A literal compared with a TIMESTAMP (time-zone-aware)
column must carry its UTC offset (Spark would read a bare one in the session time
zone, which a data source cannot see). Float comparisons follow Spark: NaN is greater
than every number and equal to itself.

Everything else (functions, arithmetic, column-to-column comparisons, subqueries,
comparisons with NULL, LIKE patterns with inner wildcards) raises
:class:`~rcfmt.errors.InvalidOptionError` naming the part: a relation filter is never
applied partially.
"""
from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa

from rcfmt import col
from rcfmt.scan.expr import list_contains
from rcfmt.scan.nnf import is_list_type
from rcfmt.errors import FilterError, InvalidOptionError, SchemaError

__all__ = ["parse_filter", "parse_filter_expr"]


def _fail(node, why: str = "cannot be translated exactly") -> InvalidOptionError:
    text = node.sql(dialect="spark") if hasattr(node, "sql") else repr(node)
    return InvalidOptionError(f"filter option: {text!r} {why}")


def parse_filter(text: str, schema: pa.Schema):
    """The rcfmt expression of the SQL predicate ``text`` over ``schema`` (bound once to
    check columns and literal types)."""
    try:
        import sqlglot
        from sqlglot import exp
        from sqlglot.errors import ParseError
    except ImportError:  # pragma: no cover - sqlglot is in the spark extra
        raise InvalidOptionError("the filter option needs sqlglot: pip install 'rcfmt[spark]'") from None
    if not isinstance(text, str) or not text.strip():
        raise InvalidOptionError("filter option: an empty predicate")
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except ParseError as exc:
        raise InvalidOptionError(f"filter option: not a SQL predicate: {exc}") from None
    expr = _Translator(exp, schema).predicate(tree)
    from rcfmt.scan.bind import bind

    try:
        bind(expr, schema)
    except FilterError as exc:
        raise InvalidOptionError(f"filter option: {exc}") from None
    return expr


def parse_filter_expr(text: str, schema: pa.Schema):
    """The rcfmt expression of the ``filterExpr`` option (JSON written by
    :func:`rcfmt.scan.expr_json.dumps`), bound once to check columns and literals. It
    keeps rcfmt's semantics (e.g. NaN matches no comparison), not Spark SQL's."""
    from rcfmt.scan.bind import bind
    from rcfmt.scan.expr_json import loads

    try:
        expr = loads(text)
        bind(expr, schema)
    except (FilterError, SchemaError) as exc:
        raise InvalidOptionError(f"filterExpr option: {exc}") from None
    return expr


class _Translator:
    def __init__(self, exp, schema: pa.Schema):
        self.exp = exp
        self.schema = schema
        self.names = {name.lower(): name for name in schema.names}

    # ---------------------------------------------------------------- predicates
    def predicate(self, node):
        exp = self.exp
        if isinstance(node, exp.Paren):
            return self.predicate(node.this)
        if isinstance(node, exp.And):
            return self.predicate(node.this) & self.predicate(node.expression)
        if isinstance(node, exp.Or):
            return self.predicate(node.this) | self.predicate(node.expression)
        if isinstance(node, exp.Not):
            inner = node.this.this if isinstance(node.this, exp.Paren) else node.this
            if isinstance(inner, exp.Is):
                return self._is(inner, negated=True)
            return ~self.predicate(node.this)
        if isinstance(node, exp.Is):
            return self._is(node, negated=False)
        ops = {exp.EQ: "==", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
        flipped = {"==": "==", "!=": "!=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}
        for cls, op in ops.items():
            if type(node) is cls:
                left, right = node.this, node.expression
                if self._is_column(left) and not self._is_column(right):
                    name, value_node = self._column(left), right
                elif self._is_column(right) and not self._is_column(left):
                    name, value_node, op = self._column(right), left, flipped[op]
                else:
                    raise _fail(node, "compares no column with a literal")
                value = self._literal(value_node, name)
                out = _compare(col(name), op, value)
                if op in (">", ">=") and pa.types.is_floating(self.schema.field(name).type):
                    out = out | col(name).is_nan()  # Spark orders NaN above every number
                return out
        if isinstance(node, exp.Between):
            name = self._column(node.this)
            return col(name).between(self._literal(node.args["low"], name), self._literal(node.args["high"], name))
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or node.args.get("unnest") is not None:
                raise _fail(node, "has a subquery")
            name = self._column(node.this)
            return col(name).isin([self._literal(v, name) for v in node.expressions])
        if isinstance(node, exp.Like):
            return self._like(node)
        if isinstance(node, exp.ArrayContains):  # array_contains(tags, 'x')
            name = self._column(node.this)
            t = self.schema.field(name).type
            if not is_list_type(t):
                raise _fail(node, "needs a list column")
            return list_contains(col(name), self._literal_of(node.expression, t.value_type))
        if isinstance(node, exp.Column):
            name = self._column(node)
            if not pa.types.is_boolean(self.schema.field(name).type):
                raise _fail(node, "is not a boolean column")
            return col(name) == True  # noqa: E712 - an rcfmt expression, not a Python test
        if isinstance(node, exp.Boolean):
            raise _fail(node, "is a constant; leave the filter out instead")
        raise _fail(node)

    def _is(self, node, negated: bool):
        if not isinstance(node.expression, self.exp.Null):
            raise _fail(node, "(IS TRUE/FALSE) is not supported; compare with = instead")
        c = col(self._column(node.this))
        return c.is_valid() if negated else c.is_null()

    def _like(self, node):
        if node.args.get("escape") is not None:
            raise _fail(node, "has an ESCAPE clause")
        name = self._column(node.this)
        pattern = node.expression
        if not (isinstance(pattern, self.exp.Literal) and pattern.is_string):
            raise _fail(node, "needs a string pattern")
        text = pattern.this
        body = text[:-1] if text.endswith("%") else text
        if "%" in body or "_" in body or "\\" in body:
            raise _fail(node, "has wildcards other than one trailing %")
        value = body if pa.types.is_string(self.schema.field(name).type) or \
            pa.types.is_large_string(self.schema.field(name).type) else body.encode()
        return col(name).startswith(value) if text.endswith("%") else col(name) == value

    # ---------------------------------------------------------------- operands
    def _is_column(self, node) -> bool:
        return isinstance(node, self.exp.Column) or (isinstance(node, self.exp.Paren) and self._is_column(node.this))

    def _column(self, node) -> str:
        while isinstance(node, self.exp.Paren):
            node = node.this
        if not isinstance(node, self.exp.Column):
            raise _fail(node, "is not a column of the data")
        # a dotted reference names a field under structs (payload.user.id)
        name = ".".join(part.name for part in node.parts) if node.table else node.name
        if name in self.schema.names:
            return name
        found = self.names.get(name.lower())
        if found is None:
            raise InvalidOptionError(f"filter option: unknown column {name!r}; columns: {self.schema.names}")
        return found

    def _literal(self, node, name: str):
        return self._literal_of(node, self.schema.field(name).type)

    def _literal_of(self, node, t: pa.DataType):
        """The literal ``node`` as a value of Arrow type ``t``."""
        exp = self.exp
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Null):
            raise _fail(node, "is NULL: a comparison with NULL is never true (use IS NULL)")
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Neg):
            inner = node.this
            if isinstance(inner, exp.Literal) and not inner.is_string:
                return -self._number(inner.this, t, node)
            raise _fail(node)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            inner = node.this
            if not isinstance(inner, exp.Literal):
                raise _fail(node, "casts something other than a literal")
            return self._typed(inner.this, node.to.this, t, node)
        if isinstance(node, exp.Literal):
            if not node.is_string:
                return self._number(node.this, t, node)
            if pa.types.is_date(t) or pa.types.is_timestamp(t):
                return self._typed(node.this, exp.DataType.Type.DATE if pa.types.is_date(t)
                                   else exp.DataType.Type.TIMESTAMP, t, node)
            if pa.types.is_binary(t) or pa.types.is_large_binary(t):
                return node.this.encode()
            return node.this
        raise _fail(node, "is not a literal")

    @staticmethod
    def _number(text: str, t: pa.DataType, node):
        if pa.types.is_floating(t):
            return float(text)
        try:
            value = decimal.Decimal(text)
        except decimal.InvalidOperation:
            raise _fail(node, "is not a number") from None
        if value == value.to_integral_value() and "e" not in text.lower() and "." not in text:
            return int(value)
        return value

    def _typed(self, text: str, to, t: pa.DataType, node):
        Type = self.exp.DataType.Type
        try:
            if to == Type.DATE:
                return dt.date.fromisoformat(text.strip())
            if to in (Type.TIMESTAMP, Type.TIMESTAMPTZ, Type.TIMESTAMPNTZ, Type.DATETIME):
                value = dt.datetime.fromisoformat(text.strip())
            if to == Type.DECIMAL:
                return decimal.Decimal(text.strip())
            if to in (Type.INT, Type.BIGINT, Type.SMALLINT, Type.TINYINT):
                return int(text.strip())
            if to in (Type.DOUBLE, Type.FLOAT):
                return float(text)
            if to in (Type.VARCHAR, Type.TEXT, Type.CHAR):
                return text
        except ValueError:
            raise _fail(node, "is not a valid literal of its type") from None
        else:
            if isinstance(value, dt.datetime):
                if pa.types.is_timestamp(t) and t.tz is not None and value.tzinfo is None:
                    # Spark reads it in the session time zone, which a data source never sees
                    raise _fail(node, "has no UTC offset; Spark would read it in the session time zone: "
                                      "write one, e.g. '2024-01-01 00:00:00+00:00'")
                return value
        raise _fail(node, "casts to a type the filter option does not translate")


def _compare(c, op: str, value):
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
