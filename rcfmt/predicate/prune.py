"""Statistics pruning: which units (files, blocks or pages) may hold a row where a
bound predicate is TRUE.

``may_match`` answers per unit, vectorized over the N units of a :class:`StatsArrays`:
True = may hold a matching row (keep), False = provably holds none (skip). Only
counts and bounds that the stats rules of :mod:`rcfmt.schema.statistics` guarantee are used:

- ``row_count``, ``null_count`` and ``nan_count`` are exact;
- where ``has_min_max`` holds, every non-null non-NaN value lies in ``[min, max]``
  (truncated string bounds included); bounds equal to a value that occurs are
  trusted for ``!=`` / NOT IN only when ``min_exact`` and ``max_exact`` say so;
- -0.0 and +0.0 compare equal (numpy follows IEEE).

Numeric stats are handled with numpy array operations (decimals as int64 where their
bounds fit); object arrays (wider decimal ints, bytes) loop in Python over the units
that have bounds.
"""
from __future__ import annotations

import bisect
import operator

import numpy as np

from ..schema.statistics import StatsArrays
from .nnf import BoundExpr, BoundListContains, Cmp, Folded, InSet, Leaf, NanCheck, NullCheck, Prefix, fold, to_nnf

__all__ = ["always_true", "leaf_always_true", "leaf_may_match", "may_match", "prefix_successor"]

_PY_OPS = {"==": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_NP_OPS = {"==": np.equal, "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


def may_match(expr: BoundExpr | None, stats_by_column: dict[str, StatsArrays], num_units: int | None = None) -> np.ndarray:
    """Bool per unit: may the unit hold a row where ``expr`` is TRUE?

    The units line up across columns (files or blocks): unit i of every
    ``stats_by_column[name]`` is the same rows. A column without stats keeps every unit.
    ``expr`` need not be in NNF (it is normalized here). ``num_units`` is required only
    when ``stats_by_column`` is empty.
    """
    lengths = {len(s) for s in stats_by_column.values() if s is not None}
    if num_units is not None:
        lengths.add(num_units)
    if len(lengths) != 1:
        raise ValueError(f"cannot tell the number of units: stats lengths {sorted(lengths)}, num_units={num_units}")
    n = lengths.pop()
    if expr is None:
        return np.ones(n, bool)
    return _walk(to_nnf(expr), stats_by_column, n)


def _walk(e: BoundExpr, stats_by_column, n: int) -> np.ndarray:
    def leaf(x):
        stats = stats_by_column.get(x.column.name)
        return np.ones(n, bool) if stats is None else leaf_may_match(x, stats)

    return fold(e, leaf, np.logical_and, np.logical_or)


def leaf_may_match(leaf: Leaf, stats: StatsArrays) -> np.ndarray:
    """Bool per unit: may the unit hold a row where ``leaf`` (a bound leaf) is TRUE?"""
    rows = np.asarray(stats.row_count, np.int64)
    valid = rows - np.asarray(stats.null_count, np.int64)  # non-null values
    nans = np.asarray(stats.nan_count, np.int64)
    ordered = valid - nans  # non-null, non-NaN values: the ones min/max bound
    has = np.asarray(stats.has_min_max, bool) & (ordered > 0)

    if isinstance(leaf, BoundListContains):
        # the stats are of the list's elements (their counts are not rows): only bounds are
        # used. A list holds an element equal to the value only where one lies within them.
        if leaf.negated:
            return np.ones(len(rows), bool)
        has = np.asarray(stats.has_min_max, bool)
        if not leaf.element.values:
            return np.zeros(len(rows), bool)
        return _any_member_within(leaf.element, stats, has) | ~has
    if isinstance(leaf, Folded):
        return valid > 0 if leaf.value else np.zeros(len(rows), bool)
    if isinstance(leaf, NullCheck):
        return valid > 0 if leaf.negated else valid < rows
    if isinstance(leaf, NanCheck):
        return ordered > 0 if leaf.negated else nans > 0
    if isinstance(leaf, Cmp):
        return _cmp_may_match(leaf, stats, has, ordered, valid, nans)
    if isinstance(leaf, InSet):
        return _in_may_match(leaf, stats, has, ordered, valid, nans, _is_discrete(leaf))
    if isinstance(leaf, Prefix):
        return _prefix_may_match(leaf, stats, has, valid)
    raise TypeError(f"not a bound leaf: {leaf!r}")


def always_true(expr: BoundExpr, stats_by_column: dict[str, StatsArrays], n: int) -> np.ndarray:
    """Bool per unit: is ``expr`` (in NNF) TRUE on every row of the unit, as the same
    guaranteed counts and bounds prove it? True: the unit's rows need no evaluation
    (a block between a window's bounds); False: unknown. A column without stats proves
    nothing; an AND needs every child proven, an OR one."""
    def leaf(x):
        stats = stats_by_column.get(x.column.name)
        return np.zeros(n, bool) if stats is None else leaf_always_true(x, stats)

    return fold(expr, leaf, np.logical_and, np.logical_or)


def leaf_always_true(leaf: Leaf, stats: StatsArrays) -> np.ndarray:
    """Bool per unit: is ``leaf`` TRUE on every row of the unit? Only the bounds'
    guarantee is used (every non-null non-NaN value lies in ``[min, max]``, truncated
    string bounds included), never their exactness: a NULL row makes a leaf NULL (so
    no unit with one is proven, but for ``is_null``), and a NaN row makes a comparison
    FALSE but for ``!=``."""
    rows = np.asarray(stats.row_count, np.int64)
    nulls = np.asarray(stats.null_count, np.int64)
    nans = np.asarray(stats.nan_count, np.int64)
    valid = rows - nulls
    no_nulls = (nulls == 0) & (rows > 0)
    ordered = valid - nans
    has = np.asarray(stats.has_min_max, bool) & (ordered > 0)
    if isinstance(leaf, NullCheck):
        return (rows > 0) & (nulls == 0 if leaf.negated else nulls == rows)
    if isinstance(leaf, NanCheck):
        return no_nulls & (nans == 0 if leaf.negated else nans == rows)
    if isinstance(leaf, Folded):
        return no_nulls if leaf.value else np.zeros(len(rows), bool)
    if isinstance(leaf, Cmp):
        v, op = leaf.value, leaf.op
        if op == "!=":  # (NaN != v is TRUE: only the ordered values must miss v)
            outside = _compare(stats.min, ">", v, has) | _compare(stats.max, "<", v, has)
            return no_nulls & ((ordered == 0) | outside)
        if op == "==":
            proven = _compare(stats.min, "==", v, has) & _compare(stats.max, "==", v, has)
        elif op in (">", ">="):
            proven = _compare(stats.min, op, v, has)
        else:
            proven = _compare(stats.max, op, v, has)
        return no_nulls & (nans == 0) & proven
    if isinstance(leaf, InSet):
        if leaf.negated:  # (no member within the bounds; NOT IN with a NULL member is never TRUE)
            if leaf.has_null:
                return np.zeros(len(rows), bool)
            return no_nulls & (nans == 0) & has & ~_any_member_within(leaf, stats, has)
        if not leaf.values:
            return np.zeros(len(rows), bool)
        return no_nulls & (nans == 0) & _all_within_members(leaf, stats, has, _is_discrete(leaf))
    if isinstance(leaf, Prefix) and not leaf.negated and leaf.prefix:
        succ = prefix_successor(leaf.prefix)
        inside = _compare(stats.min, ">=", leaf.prefix, has)
        if succ is not None:
            inside &= _compare(stats.max, "<", succ, has)
        return no_nulls & inside
    return np.zeros(len(rows), bool)  # (list leaves, negated prefixes: not proven)


# ---------------------------------------------------------------- comparisons
def _compare(values: np.ndarray, op: str, v, where: np.ndarray) -> np.ndarray:
    """``values op v`` where ``where`` holds, False elsewhere (unspecified entries unread)."""
    if values.dtype != object:
        try:
            return _NP_OPS[op](values, v) & where
        except OverflowError:  # v outside the stats dtype: compare as Python numbers
            values = values.astype(object)
    out = np.zeros(len(values), bool)
    idx = np.flatnonzero(where)
    f = _PY_OPS[op]
    out[idx] = [f(values[i], v) for i in idx]
    return out


def _cmp_may_match(leaf: Cmp, s: StatsArrays, has, ordered, valid, nans) -> np.ndarray:
    v = leaf.value
    if leaf.op == "!=":
        # no row is TRUE only if every non-null value equals v (no NaN: NaN != v is TRUE)
        certain = has & np.asarray(s.min_exact, bool) & np.asarray(s.max_exact, bool) & (nans == 0)
        all_equal = _compare(s.min, "==", v, certain) & _compare(s.max, "==", v, certain)
        return (valid > 0) & ~all_equal
    if leaf.op == "==":
        inside = _compare(s.min, "<=", v, has) & _compare(s.max, ">=", v, has)
    elif leaf.op in ("<", "<="):
        inside = _compare(s.min, leaf.op, v, has)
    else:
        inside = _compare(s.max, leaf.op, v, has)
    return (ordered > 0) & (inside | ~has)


# ---------------------------------------------------------------- isin / not in
def _is_discrete(leaf: InSet) -> bool:
    lt = leaf.column.ltype
    return lt.is_integer or lt.name in ("bool", "date32", "timestamp", "decimal128")


def _alike(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of one dtype: decimal bounds are int64 only when every slot fits, which
    the mins may and the maxes may not -- then both as Python ints."""
    if lo.dtype == hi.dtype:
        return lo, hi
    return lo.astype(object), hi.astype(object)


def _sorted_members(leaf: InSet, dtype: np.dtype) -> np.ndarray:
    """The members (already sorted and distinct) as ``dtype``; for integer stats
    (decimals held as int64 among them) members outside the dtype's range are dropped:
    no value within the bounds can equal them."""
    kept = leaf.__dict__.setdefault("_sorted_members", {})  # (per leaf: asked for by every file, block and page)
    found = kept.get(dtype.str)
    if found is not None:
        return found
    values = leaf.values
    if dtype.kind in "iu":  # (sorted: the members in range are a slice)
        info = np.iinfo(dtype)
        values = values[bisect.bisect_left(values, int(info.min)): bisect.bisect_right(values, int(info.max))]
    found = kept[dtype.str] = np.asarray(values, dtype=dtype)
    found.flags.writeable = False
    return found


def _in_may_match(leaf: InSet, s: StatsArrays, has, ordered, valid, nans, discrete: bool) -> np.ndarray:
    n = len(valid)
    if not leaf.negated:
        if not leaf.values:
            return np.zeros(n, bool)
        return (ordered > 0) & (_any_member_within(leaf, s, has) | ~has)
    if leaf.has_null:  # x NOT IN (..., NULL) is never TRUE
        return np.zeros(n, bool)
    if not leaf.values:
        return valid > 0
    # no row is TRUE only if every non-null value is a member (no NaN: NaN is no member)
    certain = has & np.asarray(s.min_exact, bool) & np.asarray(s.max_exact, bool) & (nans == 0)
    return (valid > 0) & ~_all_within_members(leaf, s, certain, discrete)


def _any_member_within(leaf: InSet, s: StatsArrays, has) -> np.ndarray:
    """Units (where ``has``) whose [min, max] contains a member."""
    lo, hi = _alike(s.min, s.max)
    if lo.dtype != object:
        members = _sorted_members(leaf, lo.dtype)
        if not len(members):
            return np.zeros(len(lo), bool)
        idx = np.searchsorted(members, lo, side="left")  # first member >= min
        first = members[np.minimum(idx, len(members) - 1)]
        return has & (idx < len(members)) & (first <= hi)
    members = leaf.values
    out = np.zeros(len(lo), bool)
    for i in np.flatnonzero(has):
        j = bisect.bisect_left(members, lo[i])
        out[i] = j < len(members) and members[j] <= hi[i]
    return out


def _all_within_members(leaf: InSet, s: StatsArrays, where, discrete: bool) -> np.ndarray:
    """Units (where ``where``) whose every possible value in [min, max] is a member.

    Discrete types: the members cover every integer of [min, max]; others: min == max
    and it is a member.
    """
    lo, hi = _alike(s.min, s.max)
    if lo.dtype != object:
        members = _sorted_members(leaf, lo.dtype)
        first = np.searchsorted(members, lo, side="left")
        if discrete:
            count = np.searchsorted(members, hi, side="right") - first
            as_u64 = (lambda a: a.astype(np.uint8).astype(np.uint64)) if lo.dtype == bool else (lambda a: a.astype(np.uint64))
            with np.errstate(over="ignore"):
                span = as_u64(hi) - as_u64(lo)  # exact modulo 2**64 when hi >= lo
            covered = (hi >= lo) & (count > 0) & (span == np.maximum(count, 1).astype(np.uint64) - np.uint64(1))
        else:
            found = members[np.minimum(first, len(members) - 1)]
            covered = (first < len(members)) & (found == lo) & (lo == hi)
        return where & covered
    members = leaf.values
    out = np.zeros(len(lo), bool)
    for i in np.flatnonzero(where):
        a, b = lo[i], hi[i]
        j = bisect.bisect_left(members, a)
        if discrete:
            out[i] = b >= a and bisect.bisect_right(members, b) - j == b - a + 1
        else:
            out[i] = a == b and j < len(members) and members[j] == a
    return out


# ---------------------------------------------------------------- startswith
def prefix_successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix``.

    None when there is none (``prefix`` empty or all 0xFF): then the strings starting
    with ``prefix`` are exactly those >= ``prefix``.
    """
    p = prefix.rstrip(b"\xff")
    return p[:-1] + bytes([p[-1] + 1]) if p else None


def _prefix_may_match(leaf: Prefix, s: StatsArrays, has, valid) -> np.ndarray:
    # strings starting with p are exactly the interval [p, successor(p))
    p, n = leaf.prefix, len(valid)
    succ = prefix_successor(p)
    if not leaf.negated:
        if not p:
            return valid > 0
        meets = _compare(s.max, ">=", p, has)
        if succ is not None:
            meets &= _compare(s.min, "<", succ, has)
        return (valid > 0) & (meets | ~has)
    if not p:  # every value starts with b""
        return np.zeros(n, bool)
    inside = _compare(s.min, ">=", p, has)
    if succ is not None:
        inside &= _compare(s.max, "<", succ, has)
    return (valid > 0) & ~inside
