"""Filters as a dataset plans them: bound to the dataset's schema in NNF
(:func:`prepare_filter`), and what is left of one for a file once the values its
partition fixes are substituted (:func:`residual_of`; also used with the NULLs of
columns a file lacks). Used by dataset scans, block pruning and ``optimize(where=)``."""
from __future__ import annotations

import pyarrow as pa

from ..schema import nested
from .nnf import BoundAnd, BoundExpr, BoundListContains, BoundOr, Leaf, to_nnf
from .bind import bind

__all__ = ["TRUE", "FALSE", "residual_of", "prepare_filter"]

#: what :func:`residual_of` returns when no filter is left (every row matches) ...
TRUE = object()
#: ... and when no row can match
FALSE = object()


def residual_of(expr: BoundExpr | None, values: dict, schema: pa.Schema):
    """``expr`` with every leaf on a column of ``values`` replaced by its truth for that
    value (a partition's values; None for NULL): a BoundExpr on the other columns,
    :data:`TRUE` (no filter left) or :data:`FALSE` (no row can match). ``expr`` is in
    NNF, where a NULL leaf selects no more rows than a FALSE one."""
    if expr is None:
        return TRUE
    if isinstance(expr, (BoundAnd, BoundOr)):
        is_and = isinstance(expr, BoundAnd)
        kids = []
        for child in expr.children:
            r = residual_of(child, values, schema)
            if r is (FALSE if is_and else TRUE):
                return r
            if r is not (TRUE if is_and else FALSE):
                kids.append(r)
        if not kids:
            return TRUE if is_and else FALSE
        return (BoundAnd if is_and else BoundOr).of(*kids)
    if isinstance(expr, BoundListContains) and expr.column.name in values:
        return FALSE  # a list the file lacks is NULL: list_contains and its negation are NULL
    if isinstance(expr, Leaf) and expr.column.name in values:
        name = expr.column.name
        one = pa.table({name: pa.array([values[name]], schema.field(name).type)})
        from .arrow_eval import evaluate  # (pyarrow.compute: only partitioned data needs it)

        return TRUE if evaluate(expr, one)[0].as_py() is True else FALSE
    return expr


def prepare_filter(filter, schema: pa.Schema):
    """``filter`` bound to ``schema`` (leaves under structs by dotted path, lists) in
    NNF, or None for no filter."""
    bound = bind(filter, nested.bind_schema(schema))
    return None if bound is None else to_nnf(bound)
