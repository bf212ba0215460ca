"""A conjunction of comparisons on one column as one interval ``lo <(=) x <(=) hi``.

Evaluation (:mod:`rcfmt.predicate.evaluate`, on decoded values) and page pruning
(:mod:`rcfmt.scan.scanner`, on page-index bounds) both fold a column's ``<``, ``<=``,
``>``, ``>=`` and ``==`` leaves into one such interval and test it in one native pass.
The folding is exact for totally ordered values (integers, dates, timestamps, decimals,
floats other than NaN, which callers keep out).
"""
from __future__ import annotations

from .._native.select import BOUND_INCLUSIVE, BOUND_NONE, BOUND_STRICT
from .nnf import Cmp

__all__ = ["Interval", "INTERVAL_OPS"]

_LOWER = {">": BOUND_STRICT, ">=": BOUND_INCLUSIVE, "==": BOUND_INCLUSIVE}
_UPPER = {"<": BOUND_STRICT, "<=": BOUND_INCLUSIVE, "==": BOUND_INCLUSIVE}
#: the comparison operators an interval holds
INTERVAL_OPS = frozenset(_LOWER) | frozenset(_UPPER)


class Interval:
    """``lo`` / ``hi`` with their kinds (BOUND_NONE, BOUND_STRICT, BOUND_INCLUSIVE): the
    tightest bounds of the comparisons added."""

    __slots__ = ("lo", "lo_kind", "hi", "hi_kind")

    def __init__(self):
        self.lo = self.hi = 0
        self.lo_kind = self.hi_kind = BOUND_NONE

    @staticmethod
    def holds(leaf) -> bool:
        """Whether ``leaf`` is a comparison an interval can hold."""
        return isinstance(leaf, Cmp) and leaf.op in INTERVAL_OPS

    def add(self, op: str, value) -> "Interval":
        """AND ``x op value`` into the interval."""
        if op in _LOWER:
            kind = _LOWER[op]
            if not self.lo_kind or value > self.lo or (value == self.lo and kind == BOUND_STRICT):
                self.lo, self.lo_kind = value, kind
        if op in _UPPER:
            kind = _UPPER[op]
            if not self.hi_kind or value < self.hi or (value == self.hi and kind == BOUND_STRICT):
                self.hi, self.hi_kind = value, kind
        return self

    def __repr__(self) -> str:
        lo = {BOUND_NONE: "", BOUND_STRICT: f"{self.lo!r} < ", BOUND_INCLUSIVE: f"{self.lo!r} <= "}[self.lo_kind]
        hi = {BOUND_NONE: "", BOUND_STRICT: f" < {self.hi!r}", BOUND_INCLUSIVE: f" <= {self.hi!r}"}[self.hi_kind]
        return f"Interval({lo}x{hi})"
