"""Exact evaluation of a bound predicate on an Arrow table with Arrow compute (SQL
three-valued logic, as :mod:`rcfmt.predicate.expr` states it): the engine's in-memory path
(leaves the native kernels do not take, ``list_contains``, residual filters, a
dataset's value sets). Engine code, not a test oracle: the tests check it against
``tests/oracle_filter.py`` and DuckDB, which share no code with it.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import SchemaError
from ..schema.annotated import to_storage
from ..schema.arrow_io import to_numpy
from .bind import bind, check_type, unscaled_type
from .nnf import (BoundAnd, BoundExpr, BoundListContains, BoundNot, BoundOr, Cmp, Folded, InSet, NanCheck, NullCheck,
                  Prefix, Ref, is_list_type)

__all__ = ["evaluate", "selection_mask", "list_contains_result"]


# =============================================================== evaluation
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
            if not (ref.ltype.annotated and arr.type == ref.ltype.storage.to_arrow()):  # (evaluate's: as stored)
                check_type(ref, arr.type)
                if ref.ltype.annotated and not is_list_type(arr.type):  # compared as stored
                    arr = to_storage(arr, ref.ltype)
            if pa.types.is_dictionary(arr.type):
                arr = pc.cast(arr, arr.type.value_type)
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
            if ref.ltype.name == "decimal128" and not is_list_type(arr.type):
                arr = arr.view(unscaled_type(ref.ltype))
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
        nan = pc.is_nan(arr)  # NULL for NULL rows, so ~is_nan never selects them
        return pc.invert(nan) if e.negated else nan
    if isinstance(e, Prefix):
        pattern = e.prefix.decode("utf-8") if e.column.ltype.name == "string" else e.prefix
        hit = pc.starts_with(arr, pattern=pattern)
        return pc.invert(hit) if e.negated else hit
    valid = true_mask(pc.is_valid(arr))
    if isinstance(e, Folded):
        return _bool_array(np.full(len(arr), bool(e.value)), valid)
    if isinstance(e, InSet):
        if e.column.ltype.is_float:  # is_in tells -0.0 from 0.0; the set holds +0.0 only
            zero = pa.Array.from_buffers(arr.type, 1, [None, pa.py_buffer(np.zeros(1, arr.type.to_pandas_dtype()))])
            arr = pc.if_else(pc.equal(arr, 0), zero[0], arr)
        hit = true_mask(pc.is_in(arr, value_set=e.value_set))
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
    hits = np.concatenate(([0], np.cumsum(true_mask(found), dtype=np.int64)))
    nulls = np.concatenate(([0], np.cumsum(true_mask(pc.is_null(found)), dtype=np.int64)))
    start, stop = offsets[:-1] - lo, offsets[1:] - lo
    hit = hits[stop] - hits[start] > 0
    has_null = nulls[stop] - nulls[start] > 0
    valid = true_mask(pc.is_valid(lists))
    if leaf.negated:  # NOT contains: TRUE without a hit or a NULL element
        return _bool_array(~hit, valid & (hit | ~has_null))
    return _bool_array(hit, valid & (hit | ~has_null))



def _bits(buf, offset: int, n: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(buf, np.uint8), count=offset + n, bitorder="little")[offset:].view(bool)


def true_mask(a) -> np.ndarray:
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
    return true_mask(evaluate(expr, table))  # NULL -> False
