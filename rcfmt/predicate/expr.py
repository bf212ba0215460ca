"""Predicate expressions: build, parse, bind to a schema, normalize, evaluate.

Life of a filter::

    col("x") > 5   or   [("x", ">", 5)]     unbound Expr            (col, to_expr)
    -> bind(expr, schema)                   BoundExpr: columns resolved, literals
                                            checked and put in the stats domain
    -> to_nnf(bound)                        negations pushed down to the leaves
    -> evaluate(bound, table)               exact TRUE/FALSE/NULL per row (in memory)

One module a step: this one holds the expressions users build (and DNF filters);
:mod:`rcfmt.predicate.bind` binds them to a schema (literal conversion included);
:mod:`rcfmt.predicate.nnf` holds the bound tree, its negation normal form and the helpers
over trees; :mod:`rcfmt.predicate.arrow_eval` evaluates a bound tree exactly with Arrow.

Semantics, stated once (SQL three-valued logic, IEEE floats, exact literals):

- A comparison with a NULL value is NULL; ``~`` keeps NULL; ``&``/``|`` are Kleene.
  A row is selected only when the predicate is TRUE.
- NaN ``==, <, <=, >, >=`` anything is FALSE and NaN ``!=`` anything is TRUE, for NaN
  values and NaN literals alike; -0.0 equals 0.0.
- Literals compare by exact mathematical value, whatever their Python type: an
  out-of-range or non-representable literal is rewritten to an equivalent comparison
  (``x < 5.5`` on an int column is ``x <= 5``) or folded into a leaf that is TRUE (or
  FALSE) for every non-null row and NULL for null rows (``x < 300`` on uint8).
- ``isin``: a member matches the values ``==`` it (-0.0 matches 0.0) and a NaN member
  matches NaN values (as ``pyarrow.compute.is_in``, SQL engines and Polars do); a None
  member never matches but turns a miss into NULL, so ``x IN (1, NULL)`` is TRUE for 1
  and NULL otherwise, ``NOT IN`` never TRUE. ``list_contains`` refuses NaN.
- ``is_null`` and ``is_valid`` are never NULL; ``is_nan`` of NULL is NULL (as in
  ``pyarrow.compute``), so ``~is_nan`` selects no NULL row.

Literals accepted per column type: bool: bool; ints and floats: int, float, Decimal,
Fraction (not bool); decimal128: the same, floats taken by their shortest repr
(``0.1`` is ``Decimal("0.1")``); date32: date, naive datetime, numpy datetime64, int
days; timestamp: datetime (naive for columns without tz, aware for columns with tz),
pandas Timestamp, numpy datetime64 (UTC), int (units of the column); string: str;
binary: bytes-like. A pyarrow scalar is taken by value (a timestamp as its stored UTC value).
"""
from __future__ import annotations

import pyarrow as pa

from ..runtime.records import record
from ..errors import FilterError

__all__ = [
    "col", "Column", "Expr", "Comparison", "IsIn", "IsNull", "IsValid", "IsNan", "StartsWith",
    "And", "Or", "Not", "to_expr", "ListContains", "list_contains", "OPS",
]

OPS = ("==", "!=", "<", "<=", ">", ">=")
#: the comparison that is TRUE where ``op`` is FALSE (on non-NULL, non-NaN values)
COMPLEMENT = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
#: the error of ``bool()`` on an expression, unbound or bound
NO_TRUTH = (
    "an rcfmt expression has no truth value: combine predicates with & | ~ (not and/or/not) "
    "and write lo <= x <= hi as col('x').between(lo, hi)"
)


def _paren(e) -> str:
    return f"({e!r})" if isinstance(e, (Comparison, And, Or)) else repr(e)


class BoundBase:
    """The base of bound predicates (:class:`rcfmt.predicate.nnf.BoundExpr`), here so that
    this module tells them apart in its error messages without importing the bound tree,
    which builds on this module."""

    __slots__ = ()


def _is_bound(value) -> bool:
    """Whether ``value`` is a bound predicate (for error messages only)."""
    return isinstance(value, BoundBase)


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
        raise FilterError(NO_TRUTH)


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
    if isinstance(value, (Expr, Column)) or _is_bound(value):
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
        values = tuple(values)
        if all(type(v) is int for v in values):  # (a merge's thousands of keys: no check per value)
            return IsIn(self.name, values)
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
        raise FilterError(NO_TRUTH)

    def __contains__(self, value):
        raise FilterError(f"`value in {self!r}` has no meaning in a predicate: a column's membership test is "
                          f"{self!r}.isin([...]) (a list column's elements: list_contains({self!r}, value))")


def col(name: str) -> Column:
    """Reference the column ``name`` in a predicate: ``col("x") > 5``."""
    return Column(name)


@record(frozen=True, repr=False)
class Comparison(Expr):
    """``column op value`` with op one of ``== != < <= > >=``."""

    column: str
    op: str
    value: object

    def __repr__(self):
        return f"col({self.column!r}) {self.op} {_literal_repr(self.value)}"


@record(frozen=True, repr=False)
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


@record(frozen=True, repr=False)
class IsIn(Expr):
    column: str
    values: tuple

    def __repr__(self):
        return f"col({self.column!r}).isin([{', '.join(_literal_repr(v) for v in self.values)}])"


@record(frozen=True, repr=False)
class IsNull(Expr):
    column: str

    def __repr__(self):
        return f"col({self.column!r}).is_null()"


@record(frozen=True, repr=False)
class IsValid(Expr):
    column: str

    def __repr__(self):
        return f"col({self.column!r}).is_valid()"


@record(frozen=True, repr=False)
class IsNan(Expr):
    column: str

    def __repr__(self):
        return f"col({self.column!r}).is_nan()"


@record(frozen=True, repr=False)
class StartsWith(Expr):
    column: str
    prefix: object

    def __repr__(self):
        return f"col({self.column!r}).startswith({self.prefix!r})"


@record(frozen=True, repr=False)
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


@record(frozen=True, repr=False)
class Or(Expr):
    children: tuple

    of = classmethod(And.of.__func__)

    def __repr__(self):
        return " | ".join(_paren(c) for c in self.children)


@record(frozen=True, repr=False)
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
    Anything else raises :class:`FilterError`. ``in`` and ``not in`` select the rows
    pyarrow's ``filters=`` selects (``pyarrow.compute.is_in``): a NULL row is in a list
    exactly when the list holds None, a value never equals None (where SQL's IN would
    leave both unknown); a NULL row they leave out is NULL.
    """
    if filter is None or isinstance(filter, Expr):
        return filter
    if isinstance(filter, Column) or _is_bound(filter):
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


def _dnf_membership(name: str, values, negated: bool) -> Expr:
    """``(name, "in" / "not in", values)`` as pyarrow's ``filters=`` decides it
    (``pyarrow.compute.is_in``, which matches a NULL row to a None member and is never
    NULL): ``isin`` of the members that are not None, OR ``is_null`` when None is one;
    ``not in`` its negation (NULL rows kept when None is not a member)."""
    column = col(name)
    probe = column.isin(values)  # (checks the list and its members)
    present = tuple(v for v in probe.values if v is not None and not (isinstance(v, pa.Scalar) and not v.is_valid))
    has_null = len(present) != len(probe.values)
    members = probe if not has_null else IsIn(name, present)
    if not negated:
        return Or((members, IsNull(name))) if has_null else members
    return Not(members) if has_null else Or((Not(members), IsNull(name)))


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
        return _dnf_membership(name, value, key == "not in")
    if op not in _DNF_OPS:
        raise FilterError(f"{where}: unknown operator {op!r}; use one of {', '.join([*_DNF_OPS, 'in', 'not in'])}")
    return Comparison(name, _DNF_OPS[op], _check_literal(value))
