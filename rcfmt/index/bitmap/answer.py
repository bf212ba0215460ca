"""Answering a predicate from bitmap indexes (docs/FORMAT.md section 6b), before any
data page of a block is read.

A predicate in NNF is monotone, so each node is folded into two bitmaps over the
block's rows: ``true`` (rows certainly TRUE) and ``maybe`` (rows that may be TRUE).
A leaf the index answers gives the exact rows where it is TRUE as both (SQL NULL
semantics and NaN exactly as :mod:`rcfmt.predicate.evaluate` decides them); a leaf it cannot
answer (no index on its column in this block, or a kind of leaf no index answers)
gives nothing for ``true`` and every row for ``maybe``. And/Or intersect/unite both.
A block whose ``maybe`` is empty cannot match; a conjunct whose leaves are all answered
is decided exactly, so its columns need not be decoded.
"""
from __future__ import annotations

import functools
from bisect import bisect_left, bisect_right

import numpy as np

from ...runtime.records import record
from ..._native import bitmaps as _bitmaps
from .layout import BITSLICED, EQUALITY, IndexEntry, words
from ...predicate.nnf import BoundAnd, BoundOr, Cmp, Folded, InSet, NanCheck, NullCheck, Prefix

__all__ = ["BlockAnswer", "answer_block", "popcount", "to_mask", "leaf_columns"]

#: an IN list on a bit-sliced column is answered up to this many values (each costs
#: one pass over the slices)
BITSLICED_MAX_IN = 64


def popcount(bits: np.ndarray) -> int:
    """Rows marked in a bitmap of words."""
    return _bitmaps.popcount(bits)


def to_mask(bits: np.ndarray, rows: int) -> np.ndarray:
    """Words -> numpy bool per row."""
    return np.unpackbits(bits.view(np.uint8), count=rows, bitorder="little").view(bool)


@functools.lru_cache(maxsize=16)
def _all(rows: int) -> np.ndarray:
    """Every row of a block (shared, read-only: blocks of a file mostly have one size)."""
    out = np.full(words(rows), np.uint64(0xFFFF_FFFF_FFFF_FFFF), np.uint64)
    if rows & 63:
        out[-1] = np.uint64((1 << (rows & 63)) - 1)
    out.flags.writeable = False
    return out


class _Column:
    """One chunk's index seen as row sets: ``valid`` (not NULL), ``numbers`` (not NULL,
    not NaN) and, for a value ``v`` of the column's domain, the rows ``== v``, ``< v``
    and ``<= v`` (among ``numbers``)."""

    def __init__(self, entry: IndexEntry, everything: np.ndarray):
        self.entry = entry
        self.all = everything
        self._valid = self._numbers = None

    @property
    def valid(self) -> np.ndarray:
        if self._valid is None:
            self._valid = self.all & ~self.entry.nulls
        return self._valid

    @property
    def numbers(self) -> np.ndarray:
        if self._numbers is None:
            nans = self.entry.nans
            self._numbers = self.valid if nans is None else self.valid & ~nans
        return self._numbers

    # ---- keys kinds (equality, range)
    def _key_range(self, i: int, j: int) -> np.ndarray:
        """Rows whose value is among keys ``i..j-1``."""
        entry = self.entry
        if i >= j:
            return np.zeros_like(self.all)
        if entry.kind == EQUALITY:
            if j - i > len(entry.keys) // 2:  # fewer bitmaps through the complement
                return self.numbers & ~entry.union(list(range(0, i)) + list(range(j, len(entry.keys))))
            return entry.union(list(range(i, j)))
        upper = entry.bitmap(j - 1)  # RANGE: rows <= key j-1, minus rows <= key i-1
        return upper if i == 0 else upper & ~entry.bitmap(i - 1)

    def _slices(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """Bit-sliced ``(rows < base + c, rows == base + c)`` for ``0 <= c < 2^w``
        (O'Neil and Quass's comparison: from the highest slice down)."""
        lt, eq = np.empty_like(self.all), np.empty_like(self.all)
        _bitmaps.slices_compare(self.entry.matrix(), self.numbers, c, lt, eq)
        return lt, eq

    def compare(self, op: str, v) -> np.ndarray:
        """Rows where ``value op v`` is TRUE (op one of == < <=), among ``numbers``."""
        entry = self.entry
        if entry.kind == BITSLICED:
            base, step = entry.keys
            d = int(v) - base  # values are base + step * u: compare u with d / step
            if op == "==":
                if d % step:
                    return np.zeros_like(self.all)
                c = d // step
            else:  # u < d/step  <=>  u <= ceil(d/step) - 1;  u <= d/step  <=>  u <= floor(d/step)
                c = -(-d // step) - 1 if op == "<" else d // step
            top = (1 << entry.count) - 1
            if c < 0:
                return np.zeros_like(self.all)
            if c > top:
                return np.zeros_like(self.all) if op == "==" else self.numbers
            lt, eq = self._slices(c)
            return eq if op == "==" else lt | eq
        if isinstance(v, float):
            v = v + 0.0  # -0.0 is key +0.0
        keys = entry.keys
        if op == "==":
            i = bisect_left(keys, v)
            return self._key_range(i, i + 1) if i < len(keys) and keys[i] == v else np.zeros_like(self.all)
        end = bisect_left(keys, v) if op == "<" else bisect_right(keys, v)
        return self._key_range(0, end)

    def members(self, values) -> np.ndarray | None:
        """Rows whose value is one of ``values`` (sorted, in the column's domain)."""
        entry = self.entry
        if entry.kind == BITSLICED:
            if len(values) > BITSLICED_MAX_IN:
                return None
            out = np.zeros_like(self.all)
            for v in values:
                out |= self.compare("==", v)
            return out
        keys = entry.keys
        ids = []
        for v in values:
            v = v + 0.0 if isinstance(v, float) else v
            i = bisect_left(keys, v)
            if i < len(keys) and keys[i] == v:
                ids.append(i)
        if entry.kind == EQUALITY:
            return entry.union(ids) if ids else np.zeros_like(self.all)
        out = np.zeros_like(self.all)
        for i in ids:
            out |= self._key_range(i, i + 1)
        return out

    def prefixed(self, prefix: bytes) -> np.ndarray | None:
        entry = self.entry
        if entry.kind == BITSLICED or not (entry.keys and isinstance(entry.keys[0], bytes)):
            return None
        keys = entry.keys
        i = j = bisect_left(keys, prefix)
        while j < len(keys) and keys[j].startswith(prefix):
            j += 1
        return self._key_range(i, j)


def _leaf(leaf, col: _Column) -> np.ndarray | None:
    """Rows where ``leaf`` is TRUE, or None if the index cannot tell."""
    if isinstance(leaf, Cmp):
        op, v = leaf.op, leaf.value
        if op in ("==", "<", "<="):
            return col.compare(op, v)
        if op == "!=":  # TRUE for NaN too
            return col.valid & ~col.compare("==", v)
        return col.numbers & ~col.compare("<=" if op == ">" else "<", v)
    if isinstance(leaf, Folded):
        return col.valid if leaf.value else np.zeros_like(col.all)
    if isinstance(leaf, NullCheck):
        return col.valid if leaf.negated else col.all & ~col.valid
    if isinstance(leaf, NanCheck):
        nans = col.entry.nans
        nans = np.zeros_like(col.all) if nans is None else nans
        return col.valid & ~nans if leaf.negated else nans
    if isinstance(leaf, InSet):
        members = col.members(leaf.values)
        if members is None:
            return None
        if not leaf.negated:
            return members
        return np.zeros_like(col.all) if leaf.has_null else col.valid & ~members
    if isinstance(leaf, Prefix):
        rows = col.prefixed(leaf.prefix)
        if rows is None or not leaf.negated:
            return rows
        return col.valid & ~rows
    return None  # list_contains and anything new: not answered


def leaf_columns(expr) -> set[str]:
    """Names of the columns whose leaves an index could answer."""
    if isinstance(expr, (BoundAnd, BoundOr)):
        return set().union(*(leaf_columns(c) for c in expr.children))
    return {expr.column.name} if isinstance(expr, (Cmp, Folded, NullCheck, NanCheck, InSet, Prefix)) else set()


@record(frozen=True)
class BlockAnswer:
    """What a block's indexes say: ``maybe`` (words: rows that may match; all matching
    rows are among them), and the top-level conjuncts they did not decide exactly
    (``residual``; empty when ``maybe`` is exactly the matching rows)."""

    maybe: np.ndarray
    residual: tuple
    count: int  # rows in ``maybe``

    @property
    def exact(self) -> bool:
        return not self.residual


def answer_block(nnf, entries: dict, rows: int) -> BlockAnswer:
    """Fold ``nnf`` over one block's index ``entries`` (``{column name: IndexEntry}``)."""
    everything = _all(rows)
    columns = {name: _Column(e, everything) for name, e in entries.items()}

    def fold(e) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(true, maybe); None stands for no rows / every row."""
        if isinstance(e, (BoundAnd, BoundOr)):
            parts = [fold(c) for c in e.children]
            trues = [t for t, _ in parts]
            maybes = [m for _, m in parts]
            if isinstance(e, BoundAnd):
                return _combine(trues, np.bitwise_and, none_wins=True), _combine(maybes, np.bitwise_and, False)
            return _combine(trues, np.bitwise_or, none_wins=False), _combine(maybes, np.bitwise_or, True)
        col = columns.get(getattr(e, "column", None) and e.column.name)
        rows_true = None if col is None else _leaf(e, col)
        if rows_true is None:
            return None, None
        return rows_true, rows_true

    conjuncts = nnf.children if isinstance(nnf, BoundAnd) else (nnf,)
    maybe = everything
    residual = []
    for c in conjuncts:
        true, m = fold(c)
        if m is not None:
            maybe = maybe & m
        if true is None or m is None or (true is not m and not np.array_equal(true, m)):
            residual.append(c)
    return BlockAnswer(maybe, tuple(residual), popcount(maybe))


def _combine(parts: list, op, none_wins: bool):
    """Combine word arrays with ``op``; a None part (no rows for true-sets, every row for
    maybe-sets) decides the result when ``none_wins``, else it is skipped."""
    out = None
    for p in parts:
        if p is None:
            if none_wins:
                return None
            continue
        out = p if out is None else op(out, p)
    return out
