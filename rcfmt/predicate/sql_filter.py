"""The ``filter`` read option: a Spark SQL predicate translated exactly into an rcfmt
expression (parsed by :mod:`rcfmt.predicate.sql_parse` when it can, else with sqlglot's
Spark dialect; both give trees of one shape, which this module translates).

Translated: ``= <> != < <= > >= <=>`` between a column and a literal (either side),
``BETWEEN``, ``IN (literals, NULL)``, ``IS [NOT] NULL``, ``LIKE 'prefix%'`` (and ``LIKE``
without wildcards), ``array_contains``, a boolean column on its own, ``AND``/``OR``/``NOT``
and parentheses. Literals: numbers (negative too), strings, ``TRUE``/``FALSE``,
``DATE '...'``, ``TIMESTAMP '...'``, ``CAST('...' AS <type>)`` and its function forms
(``double('NaN')``, ``float('1.5')``); a string literal compared with a date or timestamp
column is read as an ISO date/time, with a float column as Spark casts it (``'NaN'``,
``'Infinity'``, ``'-inf'``, numbers). A literal compared with a TIMESTAMP
(time-zone-aware) column must carry its UTC offset (Spark would read a bare one in the
session time zone, which a data source cannot see).

Semantics are Spark's, row by row: NULL rules of SQL, and on floats NaN equal to NaN
and greater than every other value (-0.0 equal to 0.0), in comparisons, ``BETWEEN`` and
``IN``, under ``NOT`` too. NaN compared with a non-float column is refused.

Everything else (functions, arithmetic, column-to-column comparisons, subqueries,
comparisons with NULL, LIKE patterns with inner wildcards) raises
:class:`~rcfmt.errors.InvalidOptionError` naming the part: a relation filter is never
applied partially.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import functools
import re

import numpy as np

import pyarrow as pa

from rcfmt.predicate.expr import col, list_contains
from rcfmt.predicate.nnf import is_list_type
from rcfmt.errors import FilterError, InvalidOptionError, SchemaError
from rcfmt.predicate.nan_order import floored_micros_compare, is_nan_literal as _is_nan, nan_order_compare

__all__ = ["parse_filter", "parse_filter_expr"]


def _spark_compare(c, t: pa.DataType, op: str, value):
    """``c op value`` as Spark answers it: NaN equal to NaN and above every number; a
    nanosecond timestamp as Spark reads it, floored to microseconds (its literals hold
    microseconds: ``floor(x) op v`` is a range of ``x``)."""
    if pa.types.is_timestamp(t) and t.unit == "ns" and isinstance(value, dt.datetime):
        floored = floored_micros_compare(c, op, value)
        if floored is not None:
            return floored
    return nan_order_compare(c, t, op, value)


def _fail(node, why: str = "cannot be translated exactly") -> InvalidOptionError:
    text = node.sql(dialect="spark") if hasattr(node, "sql") else repr(node)
    return InvalidOptionError(f"filter option: {text!r} {why}")


def parse_filter(text: str, schema: pa.Schema):
    """The rcfmt expression of the SQL predicate ``text`` over ``schema`` (bound once to
    check columns and literal types). Common predicates are parsed without sqlglot
    (:mod:`rcfmt.predicate.sql_parse`, into trees of sqlglot's shape); the rest, and
    every refusal (so that its message names the part as sqlglot writes it), go through
    sqlglot."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidOptionError("filter option: an empty predicate")
    try:
        return _parse_filter(text, schema)
    except RecursionError:
        raise InvalidOptionError("filter option: the predicate is nested too deeply (parentheses or NOTs "
                                 "within one another); write it flatter") from None


def _parse_filter(text: str, schema: pa.Schema):
    from rcfmt.predicate import sql_parse

    tree, refused = sql_parse.parse(text), None
    if tree is not None:
        try:
            return _translated(sql_parse, tree, schema)
        except InvalidOptionError as exc:
            refused = exc
    try:
        import sqlglot
        from sqlglot import exp
        from sqlglot.errors import SqlglotError
    except ImportError:  # pragma: no cover - sqlglot is in the spark extra
        if refused is not None:
            raise refused from None
        raise InvalidOptionError(f"filter option: {text!r} needs sqlglot (rcfmt parses the common predicates "
                                 "itself, not this one): pip install 'rcfmt[spark]'") from None
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except SqlglotError as exc:  # (ParseError, and TokenError of an unclosed quote)
        # (one line, without the terminal underlines sqlglot marks the place with)
        said = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).split())
        raise InvalidOptionError(f"filter option: not a SQL predicate: {said}") from None
    return _translated(exp, tree, schema)


def _translated(exp, tree, schema: pa.Schema):
    """The expression of ``tree`` (nodes of namespace ``exp``), bound once to check it."""
    expr = _Translator(exp, schema).predicate(tree)
    from rcfmt.predicate.bind import bind

    try:
        bind(expr, schema)
    except (FilterError, SchemaError) as exc:  # e.g. a literal of the wrong type, IS NULL of a list
        raise InvalidOptionError(f"filter option: {exc}") from None
    return expr


def parse_filter_expr(text: str, schema: pa.Schema):
    """The rcfmt expression of the ``filterExpr`` option (JSON written by
    :func:`rcfmt.predicate.expr_json.dumps`), bound once to check columns and literals. It is
    applied as it is, so one whose rows could differ from what the same predicate selects
    in Spark SQL (NaN compared on a float column, ``~is_nan``) is refused
    (:func:`rcfmt.predicate.spark_meaning.check_spark_meaning`)."""
    from rcfmt.predicate.bind import bind
    from rcfmt.predicate.expr_json import loads
    from rcfmt.predicate.spark_meaning import check_spark_meaning

    try:
        expr = loads(text)
        bind(expr, schema)
    except (FilterError, SchemaError) as exc:
        raise InvalidOptionError(f"filterExpr option: {exc}") from None
    check_spark_meaning(expr, schema)
    return expr


class _Translator:
    """A Spark SQL predicate as an rcfmt expression TRUE on exactly the rows where Spark's
    is TRUE. NOT is pushed to the leaves here (De Morgan holds in three-valued logic), so
    each leaf is translated in its polarity with Spark's semantics -- the rows where
    Spark's leaf (or its negation) is TRUE -- and the result never leans on rcfmt's NOT
    meaning what Spark's does (they differ for NaN)."""

    def __init__(self, exp, schema: pa.Schema):
        self.exp = exp
        self.schema = schema
        self.names = {name.lower(): name for name in schema.names}

    # ---------------------------------------------------------------- predicates
    def predicate(self, node, neg: bool = False):
        exp = self.exp
        known = _PREDICATE_ARGS | ({"negate"} if isinstance(node, exp.Like) else set()) \
            | ({"table", "db", "catalog"} if isinstance(node, exp.Column) else set())  # (a struct path's parts)
        unknown = [key for key, value in node.args.items() if value and key not in known]
        if unknown:  # a modifier this translation does not know (e.g. BETWEEN SYMMETRIC) would change the rows
            raise _fail(node, f"has {', '.join(sorted(unknown)).upper()}, which the filter option does not translate")
        if isinstance(node, exp.Paren):
            return self.predicate(node.this, neg)
        if isinstance(node, (exp.And, exp.Or)):  # (a chain's terms walked in a loop: a long one is deep)
            kind, terms, todo = type(node), [], [node]
            while todo:
                part = todo.pop()
                if type(part) is kind and all(k in _PREDICATE_ARGS for k, v in part.args.items() if v):
                    todo += [part.expression, part.this]
                else:
                    terms.append(self.predicate(part, neg))
            conjunction = (kind is exp.And) != neg
            return functools.reduce(lambda a, b: a & b if conjunction else a | b, terms)
        if isinstance(node, exp.Not):
            return self.predicate(node.this, not neg)
        if isinstance(node, exp.Is):
            return self._is(node, negated=neg)
        if type(node) in self._ops():
            name, op, value = self._comparison(node)
            return _spark_compare(col(name), self._type(name), _COMPLEMENT[op] if neg else op, value)
        if isinstance(node, exp.NullSafeEQ):  # never NULL: NULL <=> v is FALSE
            sides = [self._strip(node.this), self._strip(node.expression)]
            if any(isinstance(side, exp.Null) for side in sides):  # x <=> NULL: x IS NULL
                other = [side for side in sides if not isinstance(side, exp.Null)]
                if not other:
                    raise _fail(node, "is a constant; leave the filter out instead")
                c = col(self._column(other[0]))
                return c.is_valid() if neg else c.is_null()
            name, _, value = self._comparison(node)
            c, t = col(name), self._type(name)
            return c.is_null() | _spark_compare(c, t, "!=", value) if neg else \
                _spark_compare(c, t, "==", value) & c.is_valid()
        if isinstance(node, exp.Between):  # lo <= x <= hi, in Spark's order (NaN above all)
            name = self._column(node.this)
            c, t = col(name), self._type(name)
            lo, hi = self._literal(node.args["low"], name), self._literal(node.args["high"], name)
            if neg:
                return _spark_compare(c, t, "<", lo) | _spark_compare(c, t, ">", hi)
            return _spark_compare(c, t, ">=", lo) & _spark_compare(c, t, "<=", hi)
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or node.args.get("unnest") is not None:
                raise _fail(node, "has a subquery")
            name = self._column(node.this)
            # rcfmt's isin is SQL's IN: NaN matches NaN, -0.0 matches 0.0, NULL members as in SQL
            self._check_together(node, name, node.expressions)  # (once: every member is coerced with all)
            members = [None if isinstance(self._strip(v), exp.Null) else self._literal(v, name)
                       for v in node.expressions]
            t = self._type(name)
            if pa.types.is_timestamp(t) and t.unit == "ns" and any(isinstance(m, dt.datetime) for m in members):
                # (floored to microseconds, as Spark reads them: a range per member)
                ranges = [_spark_compare(col(name), t, "==", m) for m in members if m is not None]
                found = functools.reduce(lambda a, b: a | b, ranges + [col(name).isin([None])] * (None in members))
                return ~found if neg else found
            found = col(name).isin(members)
            return ~found if neg else found
        if isinstance(node, exp.Like):  # ``x NOT LIKE p`` is a Like with ``negate``
            found = self._like(node)
            return ~found if neg != bool(node.args.get("negate")) else found
        if isinstance(node, exp.ArrayContains):  # array_contains(tags, 'x')
            name = self._column(node.this)
            t = self.schema.field(name).type
            if not is_list_type(t):
                raise _fail(node, "needs a list column")
            found = list_contains(col(name), self._literal_of(node.expression, t.value_type))
            return ~found if neg else found
        if isinstance(node, exp.Column):
            name = self._column(node)
            if not pa.types.is_boolean(self.schema.field(name).type):
                raise _fail(node, "is not a boolean column")
            return col(name) == (not neg)
        if isinstance(node, exp.Boolean):
            raise _fail(node, "is a constant; leave the filter out instead")
        raise _fail(node)

    def _ops(self) -> dict:
        exp = self.exp
        return {exp.EQ: "==", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}

    def _comparison(self, node):
        """``(column, op, literal)`` of a comparison, the column on the left."""
        op = self._ops().get(type(node), "==")
        left, right = node.this, node.expression
        if self._is_column(left) and not self._is_column(right):
            name, value_node = self._column(left), right
        elif self._is_column(right) and not self._is_column(left):
            name, value_node, op = self._column(right), left, _FLIPPED[op]
        else:
            raise _fail(node, "compares no column with a literal")
        value = self._literal(value_node, name)
        if _is_nan(value) and not pa.types.is_floating(self._type(name)):
            raise _fail(node, "compares a non-float column with NaN")
        return name, op, value

    def _type(self, name: str) -> pa.DataType:
        t = self.schema.field(name).type
        return t.value_type if pa.types.is_dictionary(t) else t

    def _strip(self, node):
        while isinstance(node, self.exp.Paren):
            node = node.this
        return node

    def _is(self, node, negated: bool):
        """``IS NULL`` (``negated``: IS NOT NULL); never NULL."""
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
        if self.schema.names.count(name) > 1:
            raise InvalidOptionError(f"filter option: column {name!r} is ambiguous: the data names "
                                     f"{self.schema.names.count(name)} columns so (a field under structs, "
                                     f"or repeated names)")
        if name in self.schema.names:
            return name
        found = self.names.get(name.lower())
        if found is None:
            prefix = name.lower() + "."
            if any(n.startswith(prefix) for n in self.names):  # (the schema here names a struct's leaves)
                raise InvalidOptionError(f"filter option: {name!r} is a struct: predicates on whole struct values "
                                         "are not translated (compare its fields, e.g. "
                                         f"{next(n for n in self.schema.names if n.lower().startswith(prefix))!r})")
            raise InvalidOptionError(f"filter option: unknown column {name!r}; columns: {self.schema.names}")
        return found

    def _literal(self, node, name: str):
        """The literal ``node`` compared with column ``name``."""
        t = self._type(name)
        value = self._literal_of(node, t)
        if pa.types.is_integer(t) and t != pa.uint64() and isinstance(value, (int, decimal.Decimal)) \
                and not isinstance(value, bool) and not -(1 << 63) <= value < (1 << 63):  # (uint64: DECIMAL(20, 0))
            # measured: Spark 4 answers TRUE for NULL rows under NOT here (NOT (i < -9223372036854775808.5))
            raise _fail(node, "is beyond the 64-bit integers; Spark's answer on NULL rows departs from SQL's there")
        self._check_together(node, name, [node])
        if (pa.types.is_integer(t) or pa.types.is_decimal(t)) and self._is_double(node):
            # Spark compares the column cast to DOUBLE: exact comparisons with the double agree
            # while every value of the column is a double exactly, and near the literal
            if pa.types.is_decimal(t) or (t.bit_width > 32 and abs(float(value)) >= 2.0 ** 53):
                raise _fail(node, f"is a DOUBLE in Spark SQL, which compares {name!r} cast to DOUBLE (rounded); "
                                  "write the literal without an exponent")
            return float(value)
        return value

    def _is_double(self, node) -> bool:
        """Whether Spark types literal ``node`` DOUBLE (a number written with an exponent)."""
        exp = self.exp
        node = self._strip(node)
        while isinstance(node, exp.Neg):
            node = self._strip(node.this)
        return isinstance(node, exp.Literal) and not node.is_string and "e" in node.this.lower()

    def _check_together(self, node, name: str, literals) -> None:
        """Raise unless ``literals`` (one, or the members of an IN list, which Spark
        coerces to one type) compare with column ``name`` exactly."""
        t = self._type(name)
        if pa.types.is_integer(t) or pa.types.is_decimal(t):
            types = [_column_decimal(t)] + [self._decimal_type(n) for n in literals]
            types = [d for d in types if d is not None]
            if len(types) > 1 and any(sc for _, sc in types):
                integral = max(p - sc for p, sc in types)
                scale = max(sc for _, sc in types)
                if integral + scale > 38:
                    raise _fail(node, f"needs decimal({integral + scale},{scale}) to be compared with {name!r} "
                                      f"exactly; Spark rounds both to decimal(38,{max(0, 38 - integral)}) instead: "
                                      "write the literal with fewer digits")

    def _decimal_type(self, node):
        """``(precision, scale)`` of the exact numeric type Spark gives literal ``node``
        (None for other literals)."""
        exp = self.exp
        node = self._strip(node)
        if isinstance(node, exp.Neg):
            return self._decimal_type(node.this)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            to = node.to
            if to.this != exp.DataType.Type.DECIMAL:
                return None
            params = [int(e.this.this) if hasattr(e.this, "this") else int(e.this) for e in to.expressions]
            return (params + [10, 0][len(params):])[0], (params + [10, 0][len(params):])[1]
        if not (isinstance(node, exp.Literal) and not node.is_string):
            return None
        text = node.this.lstrip("+-")
        if "e" in text.lower():
            return None  # a double
        digits = text.replace(".", "").lstrip("0") or "0"
        scale = len(text.split(".")[1]) if "." in text else 0
        if scale == 0:
            n = int(text)
            return (10, 0) if n < (1 << 31) else (20, 0) if n < (1 << 63) else (len(digits), 0)
        return max(len(digits), scale), scale

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
            value = self._literal_of(node.this, t)
            if isinstance(value, (bool, str, bytes, dt.date)):
                raise _fail(node, "negates a literal that is not a number")
            return -value
        if isinstance(node, (exp.Cast, exp.TryCast)):
            inner = node.this
            if not isinstance(inner, exp.Literal):
                raise _fail(node, "casts something other than a literal")
            if pa.types.is_timestamp(t) and t.tz is None and node.to.this in (exp.DataType.Type.TIMESTAMP,
                                                                              exp.DataType.Type.TIMESTAMPTZ):
                # Spark compares the column read in the session time zone, which a data source never sees
                raise _fail(node, "is a TIMESTAMP with local time zone: Spark compares a TIMESTAMP_NTZ column with "
                                  "it in the session time zone (its daylight-saving gaps move rows); write "
                                  "TIMESTAMP_NTZ '...' or a string")
            return self._typed(inner.this, node.to.this, t, node)
        if isinstance(node, exp.Literal):
            if not node.is_string:
                return self._number(node.this, t, node)
            if pa.types.is_floating(t):  # Spark casts the string to the column's type
                return _spark_double(node.this, node)
            if pa.types.is_date(t) or pa.types.is_timestamp(t):
                return self._typed(node.this, exp.DataType.Type.DATE if pa.types.is_date(t)
                                   else exp.DataType.Type.TIMESTAMP, t, node)
            if pa.types.is_binary(t) or pa.types.is_large_binary(t):
                return node.this.encode()
            return node.this
        if type(node).__name__ in ("HexString", "ByteString"):
            raise _fail(node, "is a binary literal, which the filter option does not translate")
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
        value = None
        if to == Type.DECIMAL:  # (Python's Decimal also reads '1_000', 'NaN' and 'Infinity': Spark does not)
            if _SPARK_DECIMAL.fullmatch(text.strip()) is None:
                raise _fail(node, "is not a valid literal of its type")
            return _spark_decimal(decimal.Decimal(text.strip()), node)
        try:
            if to == Type.DATE:
                return dt.date.fromisoformat(_spark_text(text, _SPARK_DATE))
            if to in (Type.TIMESTAMP, Type.TIMESTAMPTZ, Type.TIMESTAMPNTZ, Type.DATETIME):
                value = dt.datetime.fromisoformat(_spark_text(text, _SPARK_TIMESTAMP))
            if to in (Type.INT, Type.BIGINT, Type.SMALLINT, Type.TINYINT):
                return int(text.strip())
            if to == Type.DOUBLE:
                return _spark_double(text, node)
            if to == Type.FLOAT:  # a float32 value, widened to double when compared
                return float(np.float32(_spark_double(text, node)))
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


def _spark_decimal(value: decimal.Decimal, cast) -> decimal.Decimal:
    """``value`` as Spark casts it to ``cast``'s ``DECIMAL(p, s)`` (``DECIMAL``: (10, 0)):
    rounded half up to ``s`` digits; one beyond ``p`` digits is refused (Spark fails the
    query under ANSI mode, or reads NULL)."""
    params = [int(p.this.this) for p in (getattr(cast.to, "expressions", None) or [])]
    precision, scale = (params + [10, 0][len(params):])[:2] if len(params) < 2 else params[:2]
    if value and value.adjusted() >= precision - scale:  # (before rounding: 1e250 has more digits than a context)
        raise _fail(cast, f"does not fit DECIMAL({precision}, {scale}): Spark fails the query (or reads NULL)")
    rounded = value.quantize(decimal.Decimal(1).scaleb(-scale), decimal.ROUND_HALF_UP,
                             decimal.Context(prec=200))
    if rounded.adjusted() >= precision - scale:
        raise _fail(cast, f"does not fit DECIMAL({precision}, {scale}): Spark fails the query (or reads NULL)")
    return rounded


#: the decimal texts Spark casts: digits with a point, an exponent, a sign (no '_', NaN, Infinity)
_SPARK_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
#: the date and timestamp texts translated: ISO's extended forms as Spark casts them (Python
#: 3.11's ``fromisoformat`` also reads ``20240101``, week dates ``2024-W01-1`` and more,
#: which Spark reads as NULL or refuses)
_SPARK_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SPARK_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?"
                              r"(Z|[+-]\d{2}(:?\d{2})?)?")


def _spark_text(text: str, form) -> str:
    """``text`` stripped, if it is of ``form`` (else ValueError)."""
    text = text.strip()
    if form.fullmatch(text) is None:
        raise ValueError(text)
    return text


#: the arguments of the predicate nodes translated (any other one set is refused by name)
#: (``negate`` only on LIKE, where it means NOT LIKE; ``query``/``unnest``: IN refuses them by name)
_PREDICATE_ARGS = frozenset({"this", "expression", "expressions", "low", "high", "query", "unnest"})
_COMPLEMENT = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}  # NOT, on non-NULL values
_FLIPPED = {"==": "==", "!=": "!=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}  # operands swapped


def _column_decimal(t: pa.DataType):
    """``(precision, scale)`` of the decimal Spark widens an integer or decimal column to."""
    if pa.types.is_decimal(t):
        return t.precision, t.scale
    return {8: (3, 0), 16: (5, 0), 32: (10, 0), 64: (20, 0)}[t.bit_width]


_SPARK_INFINITY = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf,
                   "-inf": -math.inf, "-infinity": -math.inf, "nan": math.nan}
_DECIMAL_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _spark_double(text: str, node) -> float:
    """A string as Spark casts it to DOUBLE: trimmed; ``NaN``, ``Infinity``, ``inf`` (any
    case, signed); else a decimal number. Anything else is refused (Spark's ANSI mode
    raises; without it the value would be NULL)."""
    text = text.strip()
    special = _SPARK_INFINITY.get(text.lower())
    if special is not None:
        return special
    if not _DECIMAL_NUMBER.fullmatch(text):
        raise _fail(node, "is not a number Spark reads as a double")
    return float(text)
