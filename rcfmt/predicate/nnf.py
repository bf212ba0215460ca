"""Bound predicates: the tree :func:`rcfmt.predicate.bind.bind` produces (columns resolved,
literals in the stats domain), its negation normal form, and helpers over trees.

Semantics are those of :mod:`rcfmt.predicate.expr`.
"""
from __future__ import annotations

import pyarrow as pa

from ..runtime.records import record, field, replace
from ..errors import FilterError
from ..schema.types import LogicalType
from .expr import COMPLEMENT, NO_TRUTH, And, BoundBase, Not, Or, to_expr


def _paren(e) -> str:
    return f"({e!r})" if isinstance(e, (Cmp, Folded, BoundAnd, BoundOr)) else repr(e)

__all__ = [
    "Ref", "BoundExpr", "Leaf", "Cmp", "Folded", "InSet", "NullCheck", "NanCheck", "Prefix", "BoundListContains",
    "without_nan_checks",
    "BoundAnd", "BoundOr", "BoundNot", "is_list_type", "to_nnf", "fold", "columns", "leaves",
]


# =============================================================== bound expressions
@record(frozen=True)
class Ref:
    """A resolved column: name, Arrow value type (dictionary unwrapped), logical type."""

    name: str
    type: pa.DataType
    ltype: LogicalType

    def __repr__(self):
        return f"col({self.name!r})"


class BoundExpr(BoundBase):
    """A predicate bound to a schema; literals are in the column's stats domain."""

    __slots__ = ()

    def __and__(self, other):
        return BoundAnd.of(self, _check_bound(other))

    def __or__(self, other):
        return BoundOr.of(self, _check_bound(other))

    def __invert__(self):
        return BoundNot(self)

    def __bool__(self):
        raise FilterError(NO_TRUTH)


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


@record(frozen=True, repr=False)
class Cmp(Leaf):
    """``column op value``; ``value`` is exact in the column's domain (never NaN)."""

    column: Ref
    op: str
    value: object
    scalar: pa.Scalar = field(compare=False)

    def negate(self):
        flipped = replace(self, op=COMPLEMENT[self.op])
        if self.op in ("==", "!=") or not self.column.ltype.is_float:
            return flipped
        return BoundOr((flipped, NanCheck(self.column)))  # NOT(x < 5) is TRUE for NaN

    def __repr__(self):
        return f"{self.column!r} {self.op} {self.value!r}"


@record(frozen=True, repr=False)
class Folded(Leaf):
    """``value`` for every non-null row, NULL for null rows (a comparison decided by types)."""

    column: Ref
    value: bool
    origin: str = field(compare=False)

    def negate(self):
        return Folded(self.column, not self.value, f"~({self.origin})")

    def __repr__(self):
        return f"{'TRUE' if self.value else 'FALSE'} if {self.column!r} is valid [{self.origin}]"


@record(frozen=True, repr=False)
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


@record(frozen=True, repr=False)
class NullCheck(Leaf):
    """is_null (``negated``: is_valid); never NULL."""

    column: Ref
    negated: bool = False

    def negate(self):
        return replace(self, negated=not self.negated)

    def __repr__(self):
        return f"{self.column!r}.{'is_valid' if self.negated else 'is_null'}()"


@record(frozen=True, repr=False)
class NanCheck(Leaf):
    """is_nan (``negated``: not NaN); NULL for NULL rows, as ``pyarrow.compute.is_nan``."""

    column: Ref
    negated: bool = False

    def negate(self):
        return replace(self, negated=not self.negated)

    def __repr__(self):
        return f"{'~' * self.negated}{self.column!r}.is_nan()"


@record(frozen=True, repr=False)
class Prefix(Leaf):
    """startswith (``negated``: NOT startswith); ``prefix`` is bytes (UTF-8 for strings)."""

    column: Ref
    prefix: bytes
    negated: bool = False

    def negate(self):
        return replace(self, negated=not self.negated)

    def __repr__(self):
        return f"{'~' * self.negated}{self.column!r}.startswith({self.prefix!r})"


@record(frozen=True, repr=False)
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


@record(frozen=True, repr=False)
class BoundAnd(BoundExpr):
    children: tuple

    of = classmethod(And.of.__func__)

    def __repr__(self):
        return " & ".join(_paren(c) for c in self.children)


@record(frozen=True, repr=False)
class BoundOr(BoundExpr):
    children: tuple

    of = classmethod(And.of.__func__)

    def __repr__(self):
        return " | ".join(_paren(c) for c in self.children)


@record(frozen=True, repr=False)
class BoundNot(BoundExpr):
    child: BoundExpr

    def __repr__(self):
        return f"~{_paren(self.child)}"


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


def without_nan_checks(expr: BoundExpr, nan_free) -> BoundExpr:
    """``expr`` (in NNF) for data whose columns named in ``nan_free`` hold no NaN, the
    same TRUE/FALSE/NULL per row: there ``is_nan`` is FALSE for every non-null value
    (NULL for NULL), a :class:`Folded`, and such a leaf next to a comparison, set or
    prefix leaf of its column (NULL exactly on that column's NULLs) is dropped where it
    cannot change the answer -- FALSE in an OR, TRUE in an AND. NaN order (Polars and
    Spark: ``x > 1.0`` is ``(x > 1.0) | is_nan(x)``) and the NOT of a float comparison
    (``(x >= 5) | is_nan(x)``) thus leave a plain comparison, which the block executor
    decides without the Python evaluation of an OR."""
    if not nan_free:
        return expr
    if isinstance(expr, NanCheck):
        if expr.column.name not in nan_free:
            return expr
        return Folded(expr.column, expr.negated, f"{expr!r}, no NaN in the data")
    if not isinstance(expr, (BoundAnd, BoundOr)):
        return expr
    kids = [without_nan_checks(c, nan_free) for c in expr.children]
    neutral = isinstance(expr, BoundAnd)  # (TRUE changes no AND, FALSE no OR)
    witnesses = {k.column for k in kids if isinstance(k, (Cmp, InSet, Prefix))}
    kept = [k for k in kids if not (isinstance(k, Folded) and k.value == neutral and k.column in witnesses)]
    return type(expr).of(*kept)


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


def leaves(e):
    """The leaves of a bound tree, left to right."""
    if isinstance(e, (BoundAnd, BoundOr)):
        for c in e.children:
            yield from leaves(c)
    elif isinstance(e, BoundNot):
        yield from leaves(e.child)
    elif isinstance(e, Leaf):
        yield e
    else:
        raise TypeError(f"not a bound expression: {e!r}")


def columns(expr) -> set[str]:
    """Names of the columns ``expr`` (Expr, BoundExpr, DNF or None) refers to."""
    if isinstance(expr, BoundExpr):
        return {leaf.column.name for leaf in leaves(expr)}
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
