"""Exact evaluation of a predicate in NNF on decoded column values -> a row mask.

In negation normal form the predicate is monotone, so "the row is TRUE" depends only on
which leaves are TRUE: every leaf is evaluated to a numpy bool mask (TRUE = True;
FALSE and NULL = False) and the masks are combined with ``&`` / ``|``. NULL semantics
and NaN stay exact because each leaf already encodes them (see :mod:`rcfmt.predicate.expr`).

Fast paths: in a conjunction, a column's comparisons (int, date, timestamp, float64,
narrow decimals) become one interval tested in one native pass, and a dictionary
column's leaves are evaluated once per dictionary entry, ANDed there, and looked up by
code in one native pass, both ANDed straight into the conjunction's mask. Lone
comparisons on fixed-width numeric columns run as numpy comparisons on the decoded
buffers. Other leaves go through Arrow compute.

Pushed down: the scanner asks :func:`block_predicate` for what the block executor can
evaluate of a column's conjuncts (an interval, sets the values must be in or not in,
for ``==``, ``!=``, ``isin`` and NOT ``isin``, string comparisons, and the validity
alone for ``is_null`` / ``is_valid``; on a dictionary chunk, once per entry), and the
executor evaluates it on each column's values as soon as they are decoded (one
GIL-free call per block decodes and filters); the mask arrives as
:attr:`ColumnData.pushed` and the conjunction only ANDs it.
"""
from __future__ import annotations

import bisect

import functools
import operator
from typing import Callable

import numpy as np
import pyarrow as pa

from ..runtime import memory
from .._native import select as _select, varbinary as _varbinary
from ..encodings.base import ColumnValues
from ..errors import CorruptFileError
from ..schema.arrow_io import to_arrow
from ..schema.types import LogicalType, PhysicalKind
from .nnf import BoundAnd, BoundListContains, BoundOr, Cmp, Folded, InSet, Leaf, NanCheck, NullCheck, Prefix
from .intervals import Interval
from ..schema.values import ColumnData

__all__ = ["ColumnData", "leaf_mask", "eval_nnf", "column_conjuncts", "block_predicate"]

_NP_OPS = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
           ">": np.greater, ">=": np.greater_equal}


def _numeric(ltype: LogicalType) -> bool:
    """Types whose comparisons numpy evaluates exactly like the bound literal means them
    (float32 goes through Arrow, which compares as the binder defined)."""
    return ltype.kind == PhysicalKind.FIXED and ltype.name not in ("decimal128", "float32")


def _arrow_mask(leaf: Leaf, values: ColumnValues, valid, ltype: LogicalType) -> np.ndarray:
    from .arrow_eval import selection_mask  # (Arrow compute: imported by the leaves that need it)

    arr = to_arrow(values, valid, ltype.storage)  # (annotated types are compared as stored)
    table = pa.table({leaf.column.name: arr})
    return selection_mask(leaf, table)


def _decimal_compare(values: np.ndarray, op: str, literal: int) -> np.ndarray:
    """Compare 16-byte two's complement values with an unscaled literal, as (high word
    signed, low word unsigned) pairs: a few vectorized passes, no Python objects."""
    words = np.ascontiguousarray(values).view("<u8").reshape(-1, 2)
    lo, hi = words[:, 0], words[:, 1].view("<i8")
    lit = literal & ((1 << 128) - 1)
    c_lo = np.uint64(lit & 0xFFFF_FFFF_FFFF_FFFF)
    c_hi = np.int64(((lit >> 64) ^ (1 << 63)) - (1 << 63))  # signed high word
    if op == "==":
        return (hi == c_hi) & (lo == c_lo)
    if op == "!=":
        return (hi != c_hi) | (lo != c_lo)
    strict_hi = np.less(hi, c_hi) if op in ("<", "<=") else np.greater(hi, c_hi)
    low = _NP_OPS[op](lo, c_lo)
    return strict_hi | ((hi == c_hi) & low)


_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _narrow_decimal_compare(values: np.ndarray, op: str, literal: int) -> np.ndarray:
    """Compare unscaled decimals held as int64 with an unscaled literal (exact: a
    literal outside int64 compares the same with every value)."""
    if _I64_MIN <= literal <= _I64_MAX:
        return _NP_OPS[op](values, np.int64(literal))
    above = literal > _I64_MAX  # the literal exceeds every value
    result = {"==": False, "!=": True, "<": above, "<=": above, ">": not above, ">=": not above}[op]
    return np.full(len(values), result, dtype=bool)


#: dictionaries up to this many entries compare strings in Python (no Arrow round trip)
_SMALL_DICTIONARY = 64
_PY_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
           ">=": operator.ge}


def _small_strings_mask(leaf: Cmp, values: ColumnValues) -> np.ndarray:
    """A comparison on a few strings or binaries (a small dictionary): bytes compare in
    UTF-8 byte order, which is code point order, as Arrow compares them."""
    literal = leaf.value.encode("utf-8") if isinstance(leaf.value, str) else bytes(leaf.value)
    data, offsets = memoryview(np.ascontiguousarray(values.values)).cast("B"), values.offsets.tolist()
    op = _PY_OPS[leaf.op]
    return np.fromiter((op(bytes(data[offsets[i] : offsets[i + 1]]), literal) for i in range(len(offsets) - 1)),
                       bool, len(offsets) - 1)


def _prefix_mask(leaf: Prefix, values: ColumnValues) -> np.ndarray:
    """startswith (or not) on strings or binaries, by bytes: a UTF-8 prefix of bytes is
    a prefix of code points, as Arrow's ``starts_with`` means it (native: no Arrow
    compute, whose import a first filtered read would pay)."""
    out = memory.empty(len(values), bool)
    data = np.ascontiguousarray(values.values).view(np.uint8)
    status = _varbinary.prefix_mask(np.ascontiguousarray(values.offsets), data, np.frombuffer(leaf.prefix, np.uint8),
                                    leaf.negated, out.view(np.uint8))
    if status < 0:  # (decoded offsets are checked: only a bug reaches this)
        raise CorruptFileError(f"string offsets outside their data in column {leaf.column.name!r}")
    return out


def _integer_set_mask(leaf: InSet, values: np.ndarray, valid) -> np.ndarray | None:
    """IN / NOT IN on an integer-stored column, natively, with SQL's NULLs (a NULL row is
    never TRUE; NOT IN a list holding NULL is never TRUE); None when a member does not
    fit the values' dtype (Arrow decides those)."""
    info = np.iinfo(values.dtype)
    if not all(isinstance(v, int) and info.min <= v <= info.max for v in leaf.values):
        return None
    if leaf.negated and leaf.has_null:
        return np.zeros(len(values), bool)
    out = memory.empty(len(values), bool)
    _select.member_mask(np.ascontiguousarray(values), np.array(leaf.values, values.dtype), leaf.negated,
                        out.view(np.uint8), False)
    return out if valid is None else out & valid


def _bytes_set_mask(leaf: InSet, values: ColumnValues, valid) -> np.ndarray:
    """IN / NOT IN on strings or binaries (members: sorted bytes), natively, with SQL's
    NULLs as :func:`_integer_set_mask`."""
    if leaf.negated and leaf.has_null:
        return np.zeros(len(values), bool)
    offsets = np.zeros(len(leaf.values) + 1, np.int64)
    np.cumsum([len(m) for m in leaf.values], out=offsets[1:])
    out = memory.empty(len(values), bool)
    status = _varbinary.set_mask(np.ascontiguousarray(values.offsets), np.ascontiguousarray(values.values).view(np.uint8),
                                 offsets, np.frombuffer(b"".join(leaf.values), np.uint8), leaf.negated,
                                 out.view(np.uint8))
    if status < 0:  # (decoded offsets are checked: only a bug reaches this)
        raise CorruptFileError(f"string offsets outside their data in column {leaf.column.name!r}")
    return out if valid is None else out & valid


def _values_mask(leaf: Leaf, values: ColumnValues, valid, ltype: LogicalType) -> np.ndarray:
    if isinstance(leaf, InSet) and values.offsets is not None and all(isinstance(v, bytes) for v in leaf.values):
        return _bytes_set_mask(leaf, values, valid)
    if isinstance(leaf, Prefix):  # (NULL rows are NULL either way: never TRUE)
        mask = _prefix_mask(leaf, values)
        return mask if valid is None else mask & valid
    if isinstance(leaf, InSet) and _numeric(ltype) and values.values.dtype.kind in "iu":
        mask = _integer_set_mask(leaf, values.values, valid)
        if mask is not None:
            return mask
    if (isinstance(leaf, Cmp) and valid is None and ltype.name in ("string", "binary")
            and isinstance(leaf.value, (str, bytes)) and len(values) <= _SMALL_DICTIONARY):
        return _small_strings_mask(leaf, values)
    if isinstance(leaf, Cmp) and _numeric(ltype):
        v = values.values
        mask = _NP_OPS[leaf.op](v, leaf.value if ltype.is_float else np.asarray(leaf.value, dtype=v.dtype))
        return mask if valid is None else mask & valid
    if isinstance(leaf, Cmp) and ltype.name == "decimal128":
        if values.values.dtype == np.int64:  # low words of BITPACK pages: one numpy pass
            mask = _narrow_decimal_compare(values.values, leaf.op, int(leaf.value))
        else:
            mask = _decimal_compare(values.values, leaf.op, int(leaf.value))
        return mask if valid is None else mask & valid
    return _arrow_mask(leaf, values, valid, ltype)


def _entry_mask(leaf: Leaf, dictionary: ColumnValues, ltype: LogicalType) -> tuple[np.ndarray, bool]:
    """``leaf`` evaluated once per dictionary entry (uint8 0/1), and its value on a null
    row."""
    dict_mask = _values_mask(leaf, dictionary, None, ltype)
    # A null row's code points at an arbitrary entry, so nulls are decided apart
    null_true = bool(len(dictionary)) and _on_null(leaf, dictionary, ltype)
    return np.ascontiguousarray(dict_mask, bool).view(np.uint8), null_true


def _on_null(leaf: Leaf, dictionary: ColumnValues, ltype: LogicalType) -> bool:
    """Whether ``leaf`` is TRUE on a null row: is_null is; comparisons, sets, prefixes,
    is_nan, its negation and folded comparisons are NULL there; another leaf is
    evaluated once on a null value."""
    if isinstance(leaf, NullCheck):
        return not leaf.negated
    if isinstance(leaf, (Cmp, InSet, Prefix, Folded, NanCheck)):
        return False
    return bool(_values_mask(leaf, dictionary.slice(0, 1), np.zeros(1, bool), ltype)[0])


def _dictionary_leaf(leaf: Leaf, data: ColumnData) -> tuple[np.ndarray, bool]:
    """:func:`_entry_mask` of the column's dictionary (cached per leaf on its data)."""
    cached = data.entry_masks.get(id(leaf))
    if cached is None:
        cached = data.entry_masks[id(leaf)] = _entry_mask(leaf, data.dictionary, data.ltype)
    return cached


def _codes_mask(data: ColumnData, dict_mask: np.ndarray, null_true: bool, out: np.ndarray | None) -> np.ndarray:
    """Rows whose code's entry is True in ``dict_mask`` (``null_true`` on null rows),
    written to a new mask or ANDed into ``out``."""
    into = out is not None
    if out is None:
        out = memory.empty(len(data.codes), bool)
    valid = None if data.valid is None else np.ascontiguousarray(data.valid, bool).view(np.uint8)
    bad = _select.codes_mask(dict_mask, np.ascontiguousarray(data.codes, np.uint32), valid, null_true,
                             out.view(np.uint8), into)
    if bad >= 0:  # (the decoder checks every code against the dictionary)
        raise CorruptFileError(f"dictionary code {int(data.codes[bad])} outside a dictionary of {len(dict_mask)}")
    return out


def leaf_mask(leaf: Leaf, data: ColumnData) -> np.ndarray:
    """numpy bool per row: is ``leaf`` TRUE? (For ``list_contains``, ``data`` is the
    Arrow array of the lists.)"""
    if isinstance(leaf, BoundListContains):
        from .arrow_eval import list_contains_result, true_mask

        return true_mask(list_contains_result(leaf, data))
    if data.codes is None:
        return _values_mask(leaf, data.values, data.valid, data.ltype)
    return _codes_mask(data, *_dictionary_leaf(leaf, data), None)


# ---------------------------------------------------------------- conjunctions, natively
def _interval_mask(interval: Interval, data: ColumnData, out: np.ndarray | None) -> np.ndarray:
    """Rows of ``data`` inside ``interval`` (nulls not), written to a new mask or ANDed
    into ``out``."""
    into = out is not None
    if out is None:
        out = memory.empty(len(data), bool)
    valid = None if data.valid is None else np.ascontiguousarray(data.valid, bool).view(np.uint8)
    _select.range_mask(data.values.values, interval.lo, interval.lo_kind, interval.hi, interval.hi_kind, valid,
                       out.view(np.uint8), into)
    return out


def _interval_literal(leaf, ltype: LogicalType, dtype: np.dtype):
    """The literal of a comparison the interval kernel evaluates on values of ``dtype``
    exactly as :func:`_values_mask` does (int, date, timestamp, float64, float32 and
    narrow-decimal values, a literal the values' type holds, not NaN), else None."""
    if not Interval.holds(leaf) or not _exact_values(ltype, dtype):
        return None
    return _fit(leaf.value, dtype)


def _exact_values(ltype: LogicalType, dtype: np.dtype) -> bool:
    """Whether comparing decoded values of ``dtype`` with a literal is exactly the
    leaf's meaning (see :func:`_numeric`; float32 against the float32 literals the
    binder gives; narrow decimals as int64 unscaled values)."""
    return _numeric(ltype) or (ltype.name == "float32" and dtype == np.float32) \
        or (ltype.name == "decimal128" and dtype == np.int64)


def _fitting(values, dtype: np.dtype) -> set:
    """The values of an InSet (sorted) that ``dtype`` holds, as :func:`_fit` makes them;
    integers of an integer dtype without a call per value (the members in range are a
    slice)."""
    if dtype.kind in "iu" and all(type(v) is int for v in values):
        lo, hi = _limits(dtype)
        return set(values[bisect.bisect_left(values, lo): bisect.bisect_right(values, hi)])
    return {f for f in (_fit(v, dtype) for v in values) if f is not None}


def _fit(value, dtype: np.dtype):
    """``value`` as a value of ``dtype`` (a Python int or float), or None when the type
    holds no such value (an integer out of range, a non-integer for integers, NaN, a
    double float32 cannot hold)."""
    if dtype.kind == "f":
        value = float(value)
        if value != value or (dtype == np.float32 and float(np.float32(value)) != value):
            return None  # (the binder gives float32 columns float32 values)
        return value
    if dtype.kind not in "iu" or not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        return None  # (the binder gives integer columns integer literals)
    value = int(value)
    lo, hi = _limits(dtype)
    return value if lo <= value <= hi else None


@functools.lru_cache(maxsize=None)
def _limits(dtype: np.dtype) -> tuple[int, int]:
    """The least and greatest values of an integer dtype (``np.iinfo`` costs ~5 µs)."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _data_interval_literal(leaf, data: ColumnData):
    """:func:`_interval_literal` for decoded values (contiguous ones only)."""
    if data.codes is not None or not data.values.values.flags.c_contiguous:
        return None
    return _interval_literal(leaf, data.ltype, data.values.values.dtype)


# ---------------------------------------------------------------- pushed into decoding
def column_conjuncts(expr) -> dict[str, list[Leaf]]:
    """The leaves of ``expr``'s top-level conjunction (``expr`` itself when it is a
    leaf), by column: what :func:`block_predicate` may evaluate while the column is
    decoded. Lists' ``list_contains`` and nested And/Or are left to :func:`eval_nnf`."""
    children = expr.children if isinstance(expr, BoundAnd) else (expr,)
    out: dict[str, list[Leaf]] = {}
    for child in children:
        if not isinstance(child, (BoundAnd, BoundOr, BoundListContains)):
            out.setdefault(child.column.name, []).append(child)
    return out


def _values_predicate(leaves: list[Leaf], ltype: LogicalType, dtype: np.dtype):
    """What the executor evaluates of ``leaves`` on values decoded to ``dtype``: comparisons as one
    interval, ``==``/``isin`` as a set the values must be in, ``!=``/``NOT isin`` as one
    they must not be in (on the types :func:`_exact_values` names; a float set with NaN
    stays with Arrow), and ``is_null``/``is_valid`` on the validity alone (any type)."""
    if _select.dtype_code(dtype) is None:  # (16-byte decimals: no value kernel, validity only)
        return _nulls_predicate(leaves)
    interval, members, excluded = Interval(), None, set()
    taken, nulls = [], []
    empty = False
    exact = _exact_values(ltype, dtype)
    for leaf in leaves:
        if isinstance(leaf, NullCheck):
            if leaf.negated:  # is_valid: what every taken leaf asks of a row anyway
                taken.append(id(leaf))
            else:
                nulls.append(id(leaf))
            continue
        if isinstance(leaf, Folded):  # the leaf's value on valid rows, NULL on null rows
            empty |= not leaf.value
            taken.append(id(leaf))
            continue
        if not exact:
            continue
        if isinstance(leaf, Cmp):
            value = _fit(leaf.value, dtype)
            if leaf.op == "!=":
                if value is not None:
                    excluded.add(value)
                elif not (dtype.kind in "iu" and isinstance(leaf.value, int)):
                    continue  # (an integer the type cannot hold differs from every valid row)
            elif value is None or not Interval.holds(leaf):
                continue
            else:
                interval.add(leaf.op, value)
            taken.append(id(leaf))
        elif isinstance(leaf, InSet):
            if dtype.kind == "f" and any(float(v) != float(v) for v in leaf.values):
                continue  # NaN is a member to Arrow's is_in, equal to nothing here
            members, excluded, never = _fold_set(leaf, _fitting(leaf.values, dtype), members, excluded)
            empty |= never
            taken.append(id(leaf))
    done = _taken(taken, nulls, empty)
    if done is None or done[0] is not None:
        return None if done is None else done[0]
    empty, taken = done[1], done[2]
    if empty:
        members, excluded = set(), set()
    elif members is None and not excluded and not (interval.lo_kind or interval.hi_kind):
        return ("nulls", False), frozenset(taken)  # the validity alone
    if members is not None:
        members -= excluded
        excluded = set()
    spec = ("range", interval.lo, interval.lo_kind, interval.hi, interval.hi_kind)
    if members is not None or excluded:
        spec += (None if members is None else np.array(sorted(members), dtype),
                 np.array(sorted(excluded), dtype) if excluded else None)
    return spec, frozenset(taken)



def _fold_set(leaf: InSet, fitting: set, members: set | None, excluded: set):
    """``leaf`` (IN / NOT IN, its members the column's type holds: ``fitting``) folded
    into a column's ``members`` (None: any value) and ``excluded`` values:
    ``(members, excluded, never)``, ``never`` when no row can be TRUE."""
    if not leaf.negated:
        return (fitting if members is None else members & fitting), excluded, False
    if leaf.has_null:
        return members, excluded, True  # NOT IN (..., NULL) is never TRUE
    return members, excluded | fitting, False


def _nulls_predicate(leaves: list[Leaf]):
    """The ``is_null`` / ``is_valid`` leaves of ``leaves`` when they are all one kind:
    ``(("nulls", want_null), leaf ids)``, else None."""
    checks = [leaf for leaf in leaves if isinstance(leaf, NullCheck)]
    kinds = {leaf.negated for leaf in checks}
    if len(kinds) != 1:
        return None
    return ("nulls", not kinds.pop()), frozenset(map(id, checks))


def _taken(taken: list, nulls: list, empty: bool):
    """What a column's taken value leaves and ``is_null`` leaves (``nulls``) make: None
    when nothing was taken, else ``(answer, empty, ids)``: ``answer`` the whole
    ``(spec, ids)`` when the validity alone decides (is_null alone), else None, and
    ``empty`` set when is_null stands beside a leaf never TRUE on a null row."""
    if nulls and not taken:
        return (("nulls", True), frozenset(nulls)), True, nulls
    if not taken:
        return None
    if nulls:  # every other leaf taken is FALSE or NULL on a null row
        return None, True, taken + nulls
    return None, empty, taken


def block_predicate(leaves: list[Leaf], ltype: LogicalType):
    """:func:`_block_predicate`, kept per (leaves, type): every file of a dataset scan and
    every scan of one filter asks it again for equal leaves, and a large IN-set's costs
    a sort and a check of every member (a merge's 10,000 keys: ~5 ms a file)."""
    leaves = list(leaves)
    try:
        got = _cached_predicate(tuple(leaves), ltype)
    except TypeError:  # (a leaf that cannot be hashed)
        return _block_predicate(leaves, ltype)
    if got is None:
        return None
    spec, positions = got
    return spec, frozenset(id(leaves[i]) for i in positions)


@functools.lru_cache(maxsize=128)
def _cached_predicate(leaves: tuple, ltype: LogicalType):
    """:func:`_block_predicate` of equal leaves, the leaves it takes by their position."""
    got = _block_predicate(list(leaves), ltype)
    if got is None:
        return None
    where = {id(leaf): i for i, leaf in enumerate(leaves)}
    return got[0], tuple(where[i] for i in got[1])


def _block_predicate(leaves: list[Leaf], ltype: LogicalType):
    """What the block executor (:class:`rcfmt._native.filters.Filter`) evaluates of one
    column's conjuncts on every chunk of the column, dictionary or not: ``(spec, leaf
    ids)`` or None. Fixed-width values take the leaves :func:`_values_predicate` takes on
    values of the column's own type; strings and binary their comparisons and sets
    (compared as bytes: UTF-8 byte order is code point order, as Arrow compares them);
    16-byte decimals their comparisons, as an interval of unscaled integers; any type
    ``is_null`` / ``is_valid``. The other leaves are evaluated after decoding."""
    if ltype.annotated or ltype.kind == PhysicalKind.BOOL:
        return _nulls_predicate(leaves)
    if ltype.name in ("string", "binary"):
        return _bytes_predicate(leaves)
    if ltype.name == "decimal128":
        return _decimal_predicate(leaves)
    dtype = np.dtype(ltype.numpy_dtype)
    if ltype.kind != PhysicalKind.FIXED or dtype.itemsize != ltype.width or _select.dtype_code(dtype) is None:
        return _nulls_predicate(leaves)
    got = _values_predicate(leaves, ltype, dtype)
    if got is None or got[0][0] == "nulls":
        return got
    spec = got[0]
    sets = spec[5:7] if len(spec) == 7 else (None, None)
    return ("values", dtype, *spec[1:5], *sets), got[1]


def _as_bytes(value) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _bytes_predicate(leaves: list[Leaf]):
    """:func:`block_predicate` for strings and binary."""
    interval, members, excluded = Interval(), None, set()
    taken, nulls, empty = [], [], False
    for leaf in leaves:
        if isinstance(leaf, NullCheck):
            (taken if leaf.negated else nulls).append(id(leaf))
        elif isinstance(leaf, Folded):
            empty |= not leaf.value
            taken.append(id(leaf))
        elif isinstance(leaf, Cmp) and isinstance(leaf.value, (str, bytes)):
            value = _as_bytes(leaf.value)
            if leaf.op == "!=":
                excluded.add(value)
            elif Interval.holds(leaf):
                interval.add(leaf.op, value)
            else:
                continue
            taken.append(id(leaf))
        elif isinstance(leaf, InSet) and all(isinstance(v, (str, bytes)) for v in leaf.values):
            members, excluded, never = _fold_set(leaf, {_as_bytes(v) for v in leaf.values}, members, excluded)
            empty |= never
            taken.append(id(leaf))
    done = _taken(taken, nulls, empty)
    if done is None or done[0] is not None:
        return None if done is None else done[0]
    if members is not None:
        members, excluded = members - excluded, set()
    return ("bytes", interval.lo, interval.lo_kind, interval.hi, interval.hi_kind,
            None if members is None else sorted(members), sorted(excluded) if excluded else None,
            done[1]), frozenset(done[2])


def _decimal_predicate(leaves: list[Leaf]):
    """:func:`block_predicate` for 16-byte decimals: ``==``, ``<``, ``<=``, ``>``, ``>=``
    as one inclusive interval of unscaled integers (the binder's literals)."""
    lo = hi = None
    taken, nulls, empty = [], [], False
    for leaf in leaves:
        if isinstance(leaf, NullCheck):
            (taken if leaf.negated else nulls).append(id(leaf))
        elif isinstance(leaf, Folded):
            empty |= not leaf.value
            taken.append(id(leaf))
        elif Interval.holds(leaf) and isinstance(leaf.value, int) and not isinstance(leaf.value, bool):
            v = int(leaf.value)
            if leaf.op in (">", ">=", "=="):
                low = v + 1 if leaf.op == ">" else v
                lo = low if lo is None else max(lo, low)
            if leaf.op in ("<", "<=", "=="):
                high = v - 1 if leaf.op == "<" else v
                hi = high if hi is None else min(hi, high)
            taken.append(id(leaf))
    done = _taken(taken, nulls, empty)
    if done is None or done[0] is not None:
        return None if done is None else done[0]
    empty = done[1] or (lo is not None and hi is not None and lo > hi)
    if not -(1 << 127) <= (lo or 0) < (1 << 127) or not -(1 << 127) <= (hi or 0) < (1 << 127):
        return None  # (the binder folds literals beyond the precision: never here)
    return ("decimal", lo, hi, empty), frozenset(done[2])


def _eval_and(expr: BoundAnd, column_data: Callable[[str], ColumnData], n: int) -> np.ndarray:
    """A conjunction: each column's comparisons as one native interval pass, each
    dictionary column's leaves ANDed per entry and looked up in one pass, the rest
    (other leaves, nested ORs) evaluated and ANDed."""
    intervals: dict[str, tuple[Interval, ColumnData]] = {}
    dictionaries: dict[str, list] = {}
    pushed: dict[int, np.ndarray] = {}  # (columns of a block's whole chunks share one mask)
    rest = []
    for child in expr.children:
        if isinstance(child, (BoundAnd, BoundOr, BoundListContains)):
            rest.append(child)
            continue
        name = child.column.name
        data = column_data(name)
        if data.pushed is not None and id(child) in data.pushed[1]:
            pushed[id(data.pushed[0])] = data.pushed[0]
            continue
        if data.codes is not None:
            dict_mask, null_true = _dictionary_leaf(child, data)
            group = dictionaries.get(name)
            if group is None:
                dictionaries[name] = [data, dict_mask, null_true]
            else:
                group[1] = group[1] & dict_mask
                group[2] = group[2] and null_true
            continue
        value = _data_interval_literal(child, data)
        if value is None:
            rest.append(child)
            continue
        intervals.setdefault(name, (Interval(), data))[0].add(child.op, value)
    out = None
    for mask in pushed.values():
        out = mask if out is None else np.logical_and(out, mask, out=out)
    for interval, data in intervals.values():
        out = _interval_mask(interval, data, out)
    for data, dict_mask, null_true in dictionaries.values():
        out = _codes_mask(data, dict_mask, null_true, out)
    for child in rest:
        if out is not None and not out.any():
            break
        mask = eval_nnf(child, column_data, n)
        out = mask if out is None else np.logical_and(out, mask, out=out)
    return out if out is not None else np.ones(n, bool)


def eval_nnf(expr, column_data: Callable[[str], ColumnData], n: int) -> np.ndarray:
    """Row mask of an NNF predicate; ``column_data(name)`` provides decoded columns.
    The mask returned is the caller's to modify."""
    if isinstance(expr, BoundAnd):
        return _eval_and(expr, column_data, n)
    if isinstance(expr, BoundOr):
        out = eval_nnf(expr.children[0], column_data, n)
        for child in expr.children[1:]:
            if out.all():
                break
            out |= eval_nnf(child, column_data, n)
        return out
    data = column_data(expr.column.name)
    if isinstance(data, ColumnData) and data.pushed is not None and id(expr) in data.pushed[1]:
        return data.pushed[0]
    return leaf_mask(expr, data).copy()
