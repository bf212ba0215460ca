"""Predicate expressions: build, parse, bind to a schema, normalize, evaluate.

Life of a filter::

    col("x") > 5   or   [("x", ">", 5)]     unbound Expr            (col, to_expr)
    -> bind(expr, schema)                   BoundExpr: columns resolved, literals
                                            checked and put in the stats domain
    -> to_nnf(bound)                        negations pushed down to the leaves
    -> evaluate(bound, table)               exact TRUE/FALSE/NULL per row (the oracle)

Semantics, stated once (SQL three-valued logic, IEEE floats, exact literals):

- A comparison with a NULL value is NULL; ``~`` keeps NULL; ``&``/``|`` are Kleene.
  A row is selected only when the predicate is TRUE.
- NaN ``==, <, <=, >, >=`` anything is FALSE and NaN ``!=`` anything is TRUE, for NaN
  values and NaN literals alike; -0.0 equals 0.0.
- Literals compare by exact mathematical value, whatever their Python type: an
  out-of-range or non-representable literal is rewritten to an equivalent comparison
  (``x < 5.5`` on an int column is ``x <= 5``) or folded into a leaf that is TRUE (or
  FALSE) for every non-null row and NULL for null rows (``x < 300`` on uint8).
- ``isin``: NaN members never match; a None member never matches but turns a miss into
  NULL, so ``x IN (1, NULL)`` is TRUE for 1 and NULL otherwise, ``NOT IN`` never TRUE.
- ``is_null``, ``is_valid``, ``is_nan`` are never NULL; ``is_nan`` of NULL is FALSE.

Literals accepted per column type: bool: bool; ints and floats: int, float, Decimal,
Fraction (not bool); decimal128: the same, floats taken by their shortest repr
(``0.1`` is ``Decimal("0.1")``); date32: date, naive datetime, numpy datetime64, int
days; timestamp: datetime (naive for columns without tz, aware for columns with tz),
pandas Timestamp, numpy datetime64 (UTC), int (units of the column); string: str;
binary: bytes-like. A pyarrow scalar is taken by value (a timestamp as its stored UTC value).
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math
import numbers
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import FilterError, SchemaError
from ..file.arrow_io import to_numpy
from ..types import LogicalType, logical_type_from_arrow

__all__ = [
    "col", "Column", "Expr", "Comparison", "IsIn", "IsNull", "IsValid", "IsNan", "StartsWith",
    "And", "Or", "Not", "to_expr",
    "Ref", "BoundExpr", "Leaf", "Cmp", "Folded", "InSet", "NullCheck", "NanCheck", "Prefix",
    "BoundAnd", "BoundOr", "BoundNot", "bind", "to_nnf", "evaluate", "selection_mask", "columns",
    "ListContains", "list_contains", "BoundListContains", "list_contains_result",
]

OPS = ("==", "!=", "<", "<=", ">", ">=")
_COMPLEMENT = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_NO_TRUTH = (
    "an rcfmt expression has no truth value: combine predicates with & | ~ (not and/or/not) "
    "and write lo <= x <= hi as col('x').between(lo, hi)"
)


def _paren(e) -> str:
    return f"({e!r})" if isinstance(e, (Comparison, And, Or, Cmp, Folded, BoundAnd, BoundOr)) else repr(e)


# =============================================================== unbound expressions
class Expr:
    """An unbound predicate over named columns. Combine with ``&``, ``|``, ``~``."""

    __slots__ = ()

    def __and__(self, other):
        return And.of(self, _check_expr(other))

    def __rand__(self, other):
        return And.of(_check_expr(other), self)

    def __or__(self, other):
        return Or.of(self, _check_expr(other))

    def __ror__(self, other):
        return Or.of(_check_expr(other), self)

    def __invert__(self):
        return Not(self)

    def __bool__(self):
        raise FilterError(_NO_TRUTH)


def _check_expr(other) -> "Expr":
    if isinstance(other, Expr):
        return other
    if isinstance(other, Column):
        raise FilterError(f"{other!r} is a column, not a predicate; compare it, e.g. {other!r} == 1")
    raise FilterError(f"cannot combine an expression with {type(other).__name__} {other!r}")


def _literal_repr(value) -> str:
    """repr of a literal; a pyarrow scalar Python cannot show (a date past year 9999)
    by its stored value."""
    try:
        return repr(value)
    except (OverflowError, ValueError):
        stored = pa.array([value]).view(pa.int32() if value.type.bit_width == 32 else pa.int64())[0].as_py()
        return f"pa.scalar({stored!r}, {value.type})"


def _check_literal(value):
    if isinstance(value, (Expr, Column, BoundExpr)):
        raise FilterError(f"comparing with {value!r} is not supported: compare a column with a literal")
    return value


class Column:
    """A reference to a column by name; comparisons with literals build predicates."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise FilterError(f"column name must be a str, got {type(name).__name__} {name!r}")
        self.name = name

    def __repr__(self):
        return f"col({self.name!r})"

    def _cmp(self, op, value):
        return Comparison(self.name, op, _check_literal(value))

    def __eq__(self, value):  # type: ignore[override]
        return self._cmp("==", value)

    def __ne__(self, value):  # type: ignore[override]
        return self._cmp("!=", value)

    def __lt__(self, value):
        return self._cmp("<", value)

    def __le__(self, value):
        return self._cmp("<=", value)

    def __gt__(self, value):
        return self._cmp(">", value)

    def __ge__(self, value):
        return self._cmp(">=", value)

    __hash__ = None  # type: ignore[assignment]

    def isin(self, values) -> "IsIn":
        """TRUE where the value equals a member (None members never match, see module doc)."""
        if isinstance(values, (str, bytes, bytearray, memoryview, Expr, Column)) or not hasattr(values, "__iter__"):
            raise FilterError(f"isin() needs a list of values, got {type(values).__name__} {values!r}")
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            values = list(values)  # pyarrow scalars, converted at bind time
        return IsIn(self.name, tuple(_check_literal(v) for v in values))

    def between(self, lo, hi) -> "And":
        """``lo <= x <= hi`` (inclusive on both ends)."""
        return And((self >= lo, self <= hi))

    def is_null(self) -> "IsNull":
        return IsNull(self.name)

    def is_valid(self) -> "IsValid":
        return IsValid(self.name)

    def is_nan(self) -> "IsNan":
        """TRUE for NaN values (float columns only); FALSE for NULL."""
        return IsNan(self.name)

    def startswith(self, prefix) -> "StartsWith":
        """Prefix match on string (str prefix) or binary (bytes prefix) columns."""
        return StartsWith(self.name, _check_literal(prefix))

    def _misuse(self, *_):
        raise FilterError(
            f"{self!r} is a column, not a predicate; parenthesize comparisons when combining: "
            "(col('a') > 1) & (col('b') < 2)"
        )

    __and__ = __rand__ = __or__ = __ror__ = __invert__ = _misuse

    def __bool__(self):
        raise FilterError(_NO_TRUTH)


def col(name: str) -> Column:
    """Reference the column ``name`` in a predicate: ``col("x") > 5``."""
    return Column(name)


@dataclass(frozen=True, repr=False)
class Comparison(Expr):
    """``column op value`` with op one of ``== != < <= > >=``."""

    column: str
    op: str
    value: object

    def __repr__(self):
        return f"col({self.column!r}) {self.op} {_literal_repr(self.value)}"


@dataclass(frozen=True, repr=False)
class ListContains(Expr):
    """``list_contains(col(column), value)``: the list holds an element equal to ``value``."""

    column: str
    value: object

    def __repr__(self):
        return f"list_contains(col({self.column!r}), {_literal_repr(self.value)})"


def list_contains(column, value) -> ListContains:
    """TRUE where the list (list, large_list or fixed_size_list of a flat type, at the
    top level or under structs) holds an element equal to ``value``; NULL where the list
    is NULL, or holds no such element but a NULL one (SQL ``array_contains``)."""
    name = column.name if isinstance(column, Column) else column
    if not isinstance(name, str):
        raise FilterError(f"list_contains() needs a column or column name, got {column!r}")
    if value is None or (isinstance(value, pa.Scalar) and not value.is_valid):
        raise FilterError("list_contains() needs a non-null value")
    return ListContains(name, _check_literal(value))


@dataclass(frozen=True, repr=False)
class IsIn(Expr):
    column: str
    values: tuple

    def __repr__(self):
        return f"col({self.column!r}).isin([{', '.join(_literal_repr(v) for v in self.values)}])"


@dataclass(frozen=True, repr=False)
class IsNull(Expr):
    column: str

    def __repr__(self):
        return f"col({self.column!r}).is_null()"


@dataclass(frozen=True, repr=False)
class IsValid(Expr):
    column: str

    def __repr__(self):
        return f"col({self.column!r}).is_valid()"


@dataclass(frozen=True, repr=False)
class IsNan(Expr):
    column: str

    def __repr__(self):
        return f"col({self.column!r}).is_nan()"


@dataclass(frozen=True, repr=False)
class StartsWith(Expr):
    column: str
    prefix: object

    def __repr__(self):
        return f"col({self.column!r}).startswith({self.prefix!r})"


@dataclass(frozen=True, repr=False)
class And(Expr):
    children: tuple

    @classmethod
    def of(cls, *children):
        """Conjunction of ``children``, flattening nested ones; a single child is returned."""
        flat = []
        for c in children:
            flat.extend(c.children if isinstance(c, cls) else (c,))
        return flat[0] if len(flat) == 1 else cls(tuple(flat))

    def __repr__(self):
        return " & ".join(_paren(c) for c in self.children)


@dataclass(frozen=True, repr=False)
class Or(Expr):
    children: tuple

    of = classmethod(And.of.__func__)

    def __repr__(self):
        return " | ".join(_paren(c) for c in self.children)


@dataclass(frozen=True, repr=False)
class Not(Expr):
    child: Expr

    def __repr__(self):
        return f"~{_paren(self.child)}"


# =============================================================== DNF filters
_DNF_OPS = {"=": "==", "==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def to_expr(filter) -> Expr | None:
    """Normalize a filter to an :class:`Expr` (or None for no filter).

    Accepts an Expr, None, or pyarrow-style DNF: a list of ``(column, op, value)`` tuples
    (AND), or a list of such lists (OR of ANDs). Ops: ``= == != < <= > >= in``, ``not in``.
    Anything else raises :class:`FilterError`.
    """
    if filter is None or isinstance(filter, Expr):
        return filter
    if isinstance(filter, (Column, BoundExpr)):
        raise FilterError(f"{filter!r} is not an unbound predicate")
    if not isinstance(filter, list):
        hint = "; wrap a single condition in a list: [(column, op, value)]" if isinstance(filter, tuple) else ""
        raise FilterError(
            f"a filter must be an expression, None, a list of (column, op, value) tuples or a list "
            f"of such lists; got {type(filter).__name__} {filter!r}{hint}"
        )
    if not filter:
        raise FilterError("empty filter list; pass None for no filter")
    if all(isinstance(t, list) for t in filter):
        return Or.of(*(_conjunction(c, f"filter[{i}]") for i, c in enumerate(filter)))
    if any(isinstance(t, list) for t in filter):
        raise FilterError("a DNF filter must be a list of tuples or a list of lists of tuples, not a mix")
    return _conjunction(filter, "filter")


def _conjunction(terms: list, where: str) -> Expr:
    if not terms:
        raise FilterError(f"{where} is an empty conjunction")
    return And.of(*(_term(t, f"{where}[{i}]") for i, t in enumerate(terms)))


def _term(term, where: str) -> Expr:
    if not isinstance(term, tuple) or len(term) != 3:
        raise FilterError(f"{where} must be a (column, op, value) tuple, got {term!r}")
    name, op, value = term
    if not isinstance(name, str):
        raise FilterError(f"{where}: column name must be a str, got {name!r}")
    if not isinstance(op, str):
        raise FilterError(f"{where}: operator must be a str, got {op!r}")
    key = " ".join(op.lower().split())
    if key in ("in", "not in"):
        expr = col(name).isin(value)
        return Not(expr) if key == "not in" else expr
    if op not in _DNF_OPS:
        raise FilterError(f"{where}: unknown operator {op!r}; use one of {', '.join([*_DNF_OPS, 'in', 'not in'])}")
    return Comparison(name, _DNF_OPS[op], _check_literal(value))


# =============================================================== bound expressions
@dataclass(frozen=True)
class Ref:
    """A resolved column: name, Arrow value type (dictionary unwrapped), logical type."""

    name: str
    type: pa.DataType
    ltype: LogicalType

    def __repr__(self):
        return f"col({self.name!r})"


class BoundExpr:
    """A predicate bound to a schema; literals are in the column's stats domain."""

    __slots__ = ()

    def __and__(self, other):
        return BoundAnd.of(self, _check_bound(other))

    def __or__(self, other):
        return BoundOr.of(self, _check_bound(other))

    def __invert__(self):
        return BoundNot(self)

    def __bool__(self):
        raise FilterError(_NO_TRUTH)


def _check_bound(other):
    if not isinstance(other, BoundExpr):
        raise FilterError(f"cannot combine a bound expression with {type(other).__name__} {other!r}")
    return other


class Leaf(BoundExpr):
    """A predicate on one column (attribute ``column``: :class:`Ref`)."""

    __slots__ = ()

    def negate(self) -> BoundExpr:
        """The 3VL-exact negation, as leaves (and an Or for floats) without BoundNot."""
        raise NotImplementedError


@dataclass(frozen=True, repr=False)
class Cmp(Leaf):
    """``column op value``; ``value`` is exact in the column's domain (never NaN)."""

    column: Ref
    op: str
    value: object
    scalar: pa.Scalar = field(compare=False)

    def negate(self):
        flipped = replace(self, op=_COMPLEMENT[self.op])
        if self.op in ("==", "!=") or not self.column.ltype.is_float:
            return flipped
        return BoundOr((flipped, NanCheck(self.column)))  # NOT(x < 5) is TRUE for NaN

    def __repr__(self):
        return f"{self.column!r} {self.op} {self.value!r}"


@dataclass(frozen=True, repr=False)
class Folded(Leaf):
    """``value`` for every non-null row, NULL for null rows (a comparison decided by types)."""

    column: Ref
    value: bool
    origin: str = field(compare=False)

    def negate(self):
        return Folded(self.column, not self.value, f"~({self.origin})")

    def __repr__(self):
        return f"{'TRUE' if self.value else 'FALSE'} if {self.column!r} is valid [{self.origin}]"


@dataclass(frozen=True, repr=False)
class InSet(Leaf):
    """``column IN values`` (``negated``: NOT IN) with SQL NULL semantics (``has_null``).

    ``values`` are sorted, distinct, in the stats domain; ``value_set`` is the same as an
    Arrow array of the column type.
    """

    column: Ref
    values: tuple
    has_null: bool
    negated: bool
    value_set: pa.Array = field(compare=False)

    def negate(self):
        return replace(self, negated=not self.negated)

    def __repr__(self):
        members = list(self.values) + [None] * self.has_null
        return f"{'~' * self.negated}{self.column!r}.isin({members!r})"


@dataclass(frozen=True, repr=False)
class NullCheck(Leaf):
    """is_null (``negated``: is_valid); never NULL."""

    column: Ref
    negated: bool = False

    def negate(self):
        return replace(self, negated=not self.negated)

    def __repr__(self):
        return f"{self.column!r}.{'is_valid' if self.negated else 'is_null'}()"


@dataclass(frozen=True, repr=False)
class NanCheck(Leaf):
    """is_nan (``negated``: NULL or not NaN); never NULL."""

    column: Ref
    negated: bool = False

    def negate(self):
        return replace(self, negated=not self.negated)

    def __repr__(self):
        return f"{'~' * self.negated}{self.column!r}.is_nan()"


@dataclass(frozen=True, repr=False)
class Prefix(Leaf):
    """startswith (``negated``: NOT startswith); ``prefix`` is bytes (UTF-8 for strings)."""

    column: Ref
    prefix: bytes
    negated: bool = False

    def negate(self):
        return replace(self, negated=not self.negated)

    def __repr__(self):
        return f"{'~' * self.negated}{self.column!r}.startswith({self.prefix!r})"


@dataclass(frozen=True, repr=False)
class BoundListContains(Leaf):
    """``list_contains`` (``negated``: its 3VL negation). ``column`` is the list's
    element column (its statistics and bloom filters prune blocks: ``element`` is the
    membership test on it); ``list_name`` and ``list_type`` name the list itself, whose
    rows the leaf is TRUE/FALSE/NULL for."""

    column: Ref
    list_name: str
    list_type: pa.DataType = field(compare=False)
    element: InSet = field(compare=False)
    negated: bool = False

    @property
    def list_ref(self) -> Ref:
        return Ref(self.list_name, self.list_type, self.column.ltype)

    def negate(self):
        return replace(self, negated=not self.negated)

    def __repr__(self):
        return f"{'~' * self.negated}list_contains(col({self.list_name!r}), {list(self.element.values)!r})"


def is_list_type(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


@dataclass(frozen=True, repr=False)
class BoundAnd(BoundExpr):
    children: tuple

    of = classmethod(And.of.__func__)

    def __repr__(self):
        return " & ".join(_paren(c) for c in self.children)


@dataclass(frozen=True, repr=False)
class BoundOr(BoundExpr):
    children: tuple

    of = classmethod(And.of.__func__)

    def __repr__(self):
        return " | ".join(_paren(c) for c in self.children)


@dataclass(frozen=True, repr=False)
class BoundNot(BoundExpr):
    child: BoundExpr

    def __repr__(self):
        return f"~{_paren(self.child)}"


# =============================================================== bind
def bind(filter, schema: pa.Schema) -> BoundExpr | None:
    """Resolve columns and convert literals; None for no filter.

    ``filter`` is anything :func:`to_expr` accepts. Unknown columns raise
    :class:`SchemaError`; literals that cannot be compared with the column's type raise
    :class:`FilterError`. The tree keeps its shape (``~`` stays a :class:`BoundNot`).
    """
    if isinstance(filter, BoundExpr):
        for leaf in _leaves(filter):
            if isinstance(leaf, BoundListContains):
                _check_type(leaf.list_ref, _field(schema, leaf.list_name).type)
            else:
                _check_type(leaf.column, _resolve(schema, leaf.column.name).type)
        return filter
    expr = to_expr(filter)
    return None if expr is None else _bind(expr, schema)


def _check_type(ref: Ref, t: pa.DataType) -> None:
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
    matches = [f for f in schema if f.name == name]
    if not matches:
        raise SchemaError(f"unknown column {name!r} in filter; available columns: {', '.join(map(repr, schema.names)) or '(none)'}")
    if len(matches) > 1:
        raise SchemaError(f"column {name!r} in filter is ambiguous: the schema has {len(matches)} columns of that name")
    return matches[0]


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
        return _bind_compare(ref, e.op, _to_real(ref, e.value, e), repr(e))
    if isinstance(e, IsIn):
        return _bind_isin(ref, e)
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
    return BoundListContains(ref, e.column, t, _bind_isin(ref, IsIn(item, (e.value,))))


def _leaves(e):
    if isinstance(e, (BoundAnd, BoundOr)):
        for c in e.children:
            yield from _leaves(c)
    elif isinstance(e, BoundNot):
        yield from _leaves(e.child)
    elif isinstance(e, Leaf):
        yield e
    else:
        raise TypeError(f"not a bound expression: {e!r}")


def _bind_prefix(ref: Ref, e: StartsWith) -> Prefix:
    p = e.prefix
    if ref.ltype.name == "string" and isinstance(p, str):
        return Prefix(ref, _utf8(p, ref))
    if ref.ltype.name == "binary" and isinstance(p, (bytes, bytearray, memoryview)):
        return Prefix(ref, bytes(p))
    if ref.ltype.name not in ("string", "binary"):
        raise FilterError(f"startswith() needs a string or binary column; {ref.name!r} is {ref.ltype}")
    want = "str" if ref.ltype.name == "string" else "bytes"
    raise FilterError(f"startswith() on {ref.ltype} column {ref.name!r} needs a {want} prefix, got {type(p).__name__} {p!r}")


# ---- the domain of a column: "int" (ints, date32, timestamp, decimal unscaled), "float", "bool", "bytes"
def _domain(lt: LogicalType) -> str:
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


def _bind_isin(ref: Ref, e: IsIn) -> InSet:
    has_null, members = False, set()
    dom = _domain(ref.ltype)
    for v in e.values:
        if v is None or (isinstance(v, pa.Scalar) and not v.is_valid):
            has_null = True
            continue
        real = _to_real(ref, v, e)
        if dom in ("bool", "bytes"):
            members.add(real)
        elif not (isinstance(real, float) and math.isnan(real)):  # NaN never matches
            leaf = _bind_compare(ref, "==", real, "")
            if isinstance(leaf, Cmp):  # Folded: no value of the column equals it
                members.add(leaf.value)
    values = tuple(sorted(members))
    return InSet(ref, values, has_null, False, _arrow_values(ref, values))


# ---- literal conversion
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
        return _temporal(value, ref, 86400, tz=None, bad=bad)
    if lt.name == "timestamp":
        return _temporal(value, ref, Fraction(1, _PER_SECOND[lt.unit]), tz=lt.tz, bad=bad)
    bad()


def _number(value, floats_by_repr: bool = False):
    """A Fraction, or a NaN/+-inf float, for a numeric literal; None if not a number."""
    if isinstance(value, (bool, np.bool_)):
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


def _temporal(value, ref: Ref, unit_seconds, tz, bad):
    """Fraction of column units for a date/time literal (``unit_seconds`` per unit)."""
    lt = ref.ltype
    if isinstance(value, (bool, np.bool_)):
        bad()
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    if isinstance(value, _dt.datetime):
        aware = value.tzinfo is not None and value.tzinfo.utcoffset(value) is not None
        if lt.name == "date32" and aware:
            bad("; date32 columns have no time zone, pass a naive datetime or a date")
        if lt.name == "timestamp" and aware != (tz is not None):
            bad(f"; the column has time zone {tz!r}, pass an aware datetime" if tz is not None else
                "; the column has no time zone, pass a naive datetime")
        if hasattr(value, "to_datetime64"):  # pandas Timestamp: keeps nanoseconds; UTC if aware
            return _datetime64_seconds(value.to_datetime64(), ref) / Fraction(unit_seconds)
        delta = value - (_EPOCH_UTC if aware else _EPOCH)
        micros = (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds
        return Fraction(micros, 10**6) / Fraction(unit_seconds)
    if isinstance(value, _dt.date):
        if lt.name != "date32":
            bad("; timestamp columns take datetime literals")
        return Fraction((value - _EPOCH_DATE).days)
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
    return s.as_py()


# ---- Arrow values of the column type (for evaluation)
def _unscaled_type(lt: LogicalType) -> pa.DataType:
    """Decimals are evaluated as their unscaled integers (pyarrow has no kernels for
    negative scales): the same bytes viewed as decimal128(precision, 0)."""
    return pa.decimal128(lt.precision, 0)


def _arrow_values(ref: Ref, values) -> pa.Array:
    """An Arrow array of the column's type (unscaled for decimals) holding stats-domain
    ``values``. Built from buffers: pyarrow's conversion of Python sequences imports
    pandas on first use (~0.2 s on a user's first filtered read)."""
    lt, values = ref.ltype, list(values)
    n = len(values)
    if lt.name == "decimal128":  # compared unscaled (see evaluate)
        data = b"".join(int(v).to_bytes(16, "little", signed=True) for v in values)
        return pa.Array.from_buffers(_unscaled_type(lt), n, [None, pa.py_buffer(data)])
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
    return _arrow_values(ref, [value])[0]


# =============================================================== NNF
def to_nnf(expr: BoundExpr) -> BoundExpr:
    """An equivalent tree (same TRUE/FALSE/NULL per row) with no :class:`BoundNot`.

    Negations are pushed to the leaves by De Morgan and :meth:`Leaf.negate`; And/Or are
    flattened.
    """
    return _nnf(expr, False)


def _nnf(e: BoundExpr, neg: bool) -> BoundExpr:
    if isinstance(e, BoundNot):
        return _nnf(e.child, not neg)
    if isinstance(e, (BoundAnd, BoundOr)):
        kids = [_nnf(c, neg) for c in e.children]
        return (BoundOr if isinstance(e, BoundOr) != neg else BoundAnd).of(*kids)
    if isinstance(e, Leaf):
        return _nnf(e.negate(), False) if neg else e
    raise TypeError(f"not a bound expression: {e!r}")


# =============================================================== helpers over trees
def fold(expr: BoundExpr, leaf_fn, and_fn, or_fn):
    """Fold an NNF tree bottom-up: leaves through ``leaf_fn``, And/Or children combined
    pairwise with ``and_fn`` / ``or_fn`` (e.g. masks with ``&``/``|``, row ranges with
    intersect/union)."""
    if isinstance(expr, (BoundAnd, BoundOr)):
        combine = and_fn if isinstance(expr, BoundAnd) else or_fn
        out = fold(expr.children[0], leaf_fn, and_fn, or_fn)
        for child in expr.children[1:]:
            out = combine(out, fold(child, leaf_fn, and_fn, or_fn))
        return out
    if isinstance(expr, Leaf):
        return leaf_fn(expr)
    raise TypeError(f"not an NNF expression: {expr!r}")


def _refs(e):
    if isinstance(e, (BoundAnd, BoundOr)):
        for c in e.children:
            yield from _refs(c)
    elif isinstance(e, BoundNot):
        yield from _refs(e.child)
    elif isinstance(e, Leaf):
        yield e.column
    else:
        raise TypeError(f"not a bound expression: {e!r}")


def columns(expr) -> set[str]:
    """Names of the columns ``expr`` (Expr, BoundExpr, DNF or None) refers to."""
    if isinstance(expr, BoundExpr):
        return {r.name for r in _refs(expr)}
    out: set[str] = set()
    stack = [to_expr(expr)] if expr is not None else []
    while stack:
        e = stack.pop()
        if isinstance(e, (And, Or)):
            stack.extend(e.children)
        elif isinstance(e, Not):
            stack.append(e.child)
        else:
            out.add(e.column)
    return out


# =============================================================== evaluation (the oracle)
_PC_OPS = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}


def evaluate(expr, table: pa.Table | pa.RecordBatch) -> pa.BooleanArray:
    """TRUE/FALSE/NULL per row of ``table`` with the semantics of the module doc.

    ``expr`` is a BoundExpr, or anything :func:`bind` accepts (bound to ``table.schema``);
    None selects every row.
    """
    bound = expr if isinstance(expr, BoundExpr) else bind(expr, table.schema)
    if bound is None:
        return _bool_array(np.ones(table.num_rows, bool))
    cache: dict[str, pa.Array] = {}

    def column(ref: Ref) -> pa.Array:
        if ref.name not in cache:
            if table.schema.get_field_index(ref.name) < 0:
                raise SchemaError(f"column {ref.name!r} is not in the table")
            arr = table.column(ref.name)
            _check_type(ref, arr.type)
            if pa.types.is_dictionary(arr.type):
                arr = pc.cast(arr, arr.type.value_type)
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
            if ref.ltype.name == "decimal128" and not is_list_type(arr.type):
                arr = arr.view(_unscaled_type(ref.ltype))
            cache[ref.name] = arr
        return cache[ref.name]

    return _eval(bound, column)


def _eval(e: BoundExpr, column) -> pa.BooleanArray:
    if isinstance(e, BoundAnd):
        out = _eval(e.children[0], column)
        for c in e.children[1:]:
            out = pc.and_kleene(out, _eval(c, column))
        return out
    if isinstance(e, BoundOr):
        out = _eval(e.children[0], column)
        for c in e.children[1:]:
            out = pc.or_kleene(out, _eval(c, column))
        return out
    if isinstance(e, BoundNot):
        return pc.invert(_eval(e.child, column))
    if isinstance(e, BoundListContains):
        return list_contains_result(e, column(e.list_ref))
    arr = column(e.column)
    if isinstance(e, Cmp):
        return _PC_OPS[e.op](arr, e.scalar)
    if isinstance(e, NullCheck):
        return pc.is_valid(arr) if e.negated else pc.is_null(arr)
    if isinstance(e, NanCheck):
        nan = pc.fill_null(pc.is_nan(arr), _FALSE_SCALAR)
        return pc.invert(nan) if e.negated else nan
    if isinstance(e, Prefix):
        pattern = e.prefix.decode("utf-8") if e.column.ltype.name == "string" else e.prefix
        hit = pc.starts_with(arr, pattern=pattern)
        return pc.invert(hit) if e.negated else hit
    valid = _to_numpy(pc.is_valid(arr))
    if isinstance(e, Folded):
        return _bool_array(np.full(len(arr), bool(e.value)), valid)
    if isinstance(e, InSet):
        if e.column.ltype.is_float:  # is_in tells -0.0 from 0.0; the set holds +0.0 only
            zero = pa.Array.from_buffers(arr.type, 1, [None, pa.py_buffer(np.zeros(1, arr.type.to_pandas_dtype()))])
            arr = pc.if_else(pc.equal(arr, 0), zero[0], arr)
        hit = _to_numpy(pc.is_in(arr, value_set=e.value_set))
        known = valid & (hit | (not e.has_null))  # a miss is NULL when the list holds None
        return _bool_array(hit != e.negated, known)
    raise TypeError(f"not a bound expression: {e!r}")


def list_contains_result(leaf: BoundListContains, lists: pa.Array) -> pa.BooleanArray:
    """TRUE/FALSE/NULL of ``leaf`` for each list of ``lists`` (see :func:`list_contains`)."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    n = len(lists)
    if pa.types.is_fixed_size_list(lists.type):
        size = lists.type.list_size
        offsets = (np.arange(n + 1, dtype=np.int64) + lists.offset) * size
    else:
        offsets = to_numpy(lists.offsets).astype(np.int64)
    lo, hi = int(offsets[0]), int(offsets[-1])
    values = lists.values.slice(lo, hi - lo)
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    found = evaluate(leaf.element, pa.table({leaf.element.column.name: values}))
    hits = np.concatenate(([0], np.cumsum(_to_numpy(found), dtype=np.int64)))
    nulls = np.concatenate(([0], np.cumsum(_to_numpy(pc.is_null(found)), dtype=np.int64)))
    start, stop = offsets[:-1] - lo, offsets[1:] - lo
    hit = hits[stop] - hits[start] > 0
    has_null = nulls[stop] - nulls[start] > 0
    valid = _to_numpy(pc.is_valid(lists))
    if leaf.negated:  # NOT contains: TRUE without a hit or a NULL element
        return _bool_array(~hit, valid & (hit | ~has_null))
    return _bool_array(hit, valid & (hit | ~has_null))


# a Scalar, so that pc.fill_null does not convert a Python False (which imports pandas)
_FALSE_SCALAR = pa.Array.from_buffers(pa.bool_(), 1, [None, pa.py_buffer(np.zeros(1, np.uint8))])[0]


def _bits(buf, offset: int, n: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(buf, np.uint8), count=offset + n, bitorder="little")[offset:].view(bool)


def _to_numpy(a) -> np.ndarray:
    """numpy bool per row of a boolean Arrow array (NULL -> False). Read from the
    buffers: pyarrow's to_numpy and pa.array import pandas on first use (~0.2 s)."""
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    n = len(a)
    if n == 0:
        return np.zeros(0, bool)
    out = _bits(a.buffers()[1], a.offset, n)
    if a.null_count:
        out = out & _bits(a.buffers()[0], a.offset, n)
    return out


def _bool_array(values: np.ndarray, valid: np.ndarray | None = None) -> pa.BooleanArray:
    """A boolean Arrow array of ``values`` (NULL where ``valid`` is False)."""
    n = len(values)
    data = pa.py_buffer(np.packbits(values, bitorder="little"))
    if valid is None or valid.all():
        return pa.Array.from_buffers(pa.bool_(), n, [None, data])
    mask = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.bool_(), n, [mask, data], n - int(np.count_nonzero(valid)))


def selection_mask(expr, table: pa.Table | pa.RecordBatch) -> np.ndarray:
    """numpy bool array: True where ``evaluate(expr, table)`` is TRUE."""
    return _to_numpy(evaluate(expr, table))  # NULL -> False
