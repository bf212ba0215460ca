"""Does an rcfmt expression select the rows Spark would select for the same predicate?

The ``filterExpr`` option (and ``spark_datasource.read(..., filter=<rcfmt expression>)``)
applies an rcfmt expression inside a Spark relation. rcfmt's semantics and Spark's agree
everywhere but on floats and ``is_nan``: rcfmt follows IEEE (NaN compares FALSE,
``!=`` TRUE; ``is_nan(NULL)`` is NULL), Spark orders NaN above every number, equal to
itself (and its ``isnan(NULL)`` is FALSE). An expression whose selected rows could
differ is refused by :func:`check_spark_meaning`, naming the part, instead of being
applied with a meaning the user did not ask for.

The check is exact per row kind and conservative across rows: for each float column a
row is NULL, NaN or an ordinary value; a leaf that does not depend on those kinds (any
leaf on another column, a comparison with a number on an ordinary value) is a free
TRUE/FALSE/NULL, the same in both semantics. Every combination is evaluated in both
(Kleene logic) and must select the same rows (TRUE). Leaves are taken as independent,
which can refuse a predicate that is in fact safe, never accept one that is not.
"""
from __future__ import annotations

import itertools
import math

import pyarrow as pa

from ..errors import InvalidOptionError
from .expr import And, Comparison, IsIn, IsNan, IsNull, IsValid, Not, Or

__all__ = ["check_spark_meaning"]

_MAX_CASES = 200_000  # combinations evaluated at most (3 ** leaves)
_ORDINARY, _NAN, _NULL = "ordinary", "NaN", "NULL"
_FREE = object()  # a leaf whose value is the same free variable in both semantics


def _nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _rcfmt_cmp(op: str, value_is_nan: bool, row: str):
    """rcfmt's value of ``x op literal`` for a row kind (NULL: None)."""
    if row == _NULL:
        return None
    if row == _NAN or value_is_nan:
        return op == "!="  # IEEE: NaN compares FALSE, != TRUE
    return _FREE


def _spark_cmp(op: str, value_is_nan: bool, row: str):
    """Spark's value of ``x op literal``: NaN equal to itself, above every number."""
    if row == _NULL:
        return None
    if row == _NAN and value_is_nan:
        return op in ("==", "<=", ">=")
    if row == _NAN:
        return op in ("!=", ">", ">=")
    if value_is_nan:
        return op in ("!=", "<", "<=")
    return _FREE


def _leaf_values(leaf, row: str | None):
    """``(rcfmt value, Spark value)`` of ``leaf`` on a row kind of its float column
    (``row`` None: the column is not a float)."""
    if row is None:
        return _FREE, _FREE
    if isinstance(leaf, (IsNull, IsValid)):
        null = row == _NULL
        value = null if isinstance(leaf, IsNull) else not null
        return value, value
    if isinstance(leaf, IsNan):
        return (None if row == _NULL else row == _NAN), row == _NAN  # Spark's isnan(NULL) is FALSE
    if isinstance(leaf, Comparison):
        is_nan = _nan(leaf.value)
        return _rcfmt_cmp(leaf.op, is_nan, row), _spark_cmp(leaf.op, is_nan, row)
    if isinstance(leaf, IsIn):  # SQL's IN in both (NaN members match NaN)
        if row == _NULL:
            return None, None
        values = list(leaf.values)
        if row == _NAN:
            hit = any(_nan(v) for v in values)
            value = True if hit else (None if any(v is None for v in values) else False)
            return value, value
        return _FREE, _FREE
    return _FREE, _FREE


def _leaves(e, out: list):
    if isinstance(e, (And, Or)):
        for c in e.children:
            _leaves(c, out)
    elif isinstance(e, Not):
        _leaves(e.child, out)
    else:
        out.append(e)
    return out


def _kleene(e, value_of):
    if isinstance(e, And):
        vals = [_kleene(c, value_of) for c in e.children]
        return False if False in vals else (None if None in vals else True)
    if isinstance(e, Or):
        vals = [_kleene(c, value_of) for c in e.children]
        return True if True in vals else (None if None in vals else False)
    if isinstance(e, Not):
        v = _kleene(e.child, value_of)
        return None if v is None else not v
    return value_of(e)


def check_spark_meaning(expr, schema: pa.Schema, what: str = "filterExpr option") -> None:
    """Raise :class:`InvalidOptionError` unless ``expr`` (an unbound rcfmt expression over
    ``schema``) selects on every row what the same predicate selects in Spark SQL."""
    leaves = _leaves(expr, [])
    floats = sorted({leaf.column for leaf in leaves
                     if schema.get_field_index(getattr(leaf, "column", "")) >= 0
                     and pa.types.is_floating(_value_type(schema.field(leaf.column).type))})
    if not floats:
        return
    ids = {id(leaf): i for i, leaf in enumerate(leaves)}
    for kinds in itertools.product((_ORDINARY, _NAN, _NULL), repeat=len(floats)):
        row_of = dict(zip(floats, kinds))
        pairs = [_leaf_values(leaf, row_of.get(getattr(leaf, "column", None))) for leaf in leaves]
        free = [i for i, (a, _) in enumerate(pairs) if a is _FREE]
        if 3 ** len(free) * 3 ** len(floats) > _MAX_CASES:
            raise InvalidOptionError(f"{what}: {expr!r} has too many leaves to check that it means what it "
                                     "would mean in Spark SQL; give it as the SQL filter option instead")
        for assignment in itertools.product((True, False, None), repeat=len(free)):
            given = dict(zip(free, assignment))

            def value(leaf, side):
                i = ids[id(leaf)]
                return given[i] if i in given else pairs[i][side]

            ours = _kleene(expr, lambda leaf: value(leaf, 0))
            spark = _kleene(expr, lambda leaf: value(leaf, 1))
            if (ours is True) != (spark is True):
                culprit = next((leaf for leaf, (a, b) in zip(leaves, pairs) if a is not _FREE and a != b), expr)
                rows = ", ".join(f"{name} {kind}" for name, kind in row_of.items() if kind != _ORDINARY) \
                    or "ordinary values"
                raise InvalidOptionError(
                    f"{what}: {expr!r} would select other rows than Spark SQL does (on rows with {rows}, through "
                    f"{culprit!r}): rcfmt compares NaN as IEEE does (FALSE; != TRUE) and its is_nan is NULL on NULL, "
                    "Spark orders NaN above every number and equal to itself; give the predicate as the SQL filter "
                    "option to have Spark's meaning")


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t
