"""Choose one encoding per column chunk from cheap statistics of the whole chunk.

The selector analyses a chunk once (:func:`analyze`), asks every candidate encoding
for its estimated size, and keeps the smallest. An encoding other than PLAIN must save
at least ``MIN_SAVING`` of the PLAIN size to be chosen, since it costs decode time.
"""
from __future__ import annotations

import numpy as np

from ..statistics import ColumnStats
from ..types import LogicalType, PhysicalKind
from . import all_encodings, by_name
from .analysis import ChunkAnalysis
from .base import ColumnValues, Encoding
from .dictionary import build_dictionary
from .rle import run_starts

__all__ = ["analyze", "choose", "plain_size"]

MIN_SAVING = 0.10
#: build a dictionary only if a sample of this many rows is at most half distinct
DICTIONARY_SAMPLE = 4096
DICTIONARY_MAX_DISTINCT_FRACTION = 0.5


def plain_size(chunk: ColumnValues, ltype: LogicalType) -> int:
    n = len(chunk)
    if ltype.kind == PhysicalKind.BOOL:
        return (n + 7) // 8
    if ltype.kind == PhysicalKind.FIXED:
        return n * ltype.width
    return 4 * (n + 1) + chunk.nbytes


def _integer_like(ltype: LogicalType) -> bool:
    return ltype.is_integer or ltype.name in ("date32", "timestamp")


def _dictionary_worthwhile(chunk: ColumnValues, ltype: LogicalType) -> bool:
    n = len(chunk)
    if n == 0 or ltype.kind == PhysicalKind.BOOL:
        return False
    if n <= DICTIONARY_SAMPLE:
        return True
    codes, dictionary = build_dictionary(chunk.slice(0, DICTIONARY_SAMPLE), ltype)
    return len(dictionary) <= DICTIONARY_SAMPLE * DICTIONARY_MAX_DISTINCT_FRACTION


def analyze(chunk: ColumnValues, ltype: LogicalType, stats: ColumnStats, *, dictionary: bool = True) -> ChunkAnalysis:
    """Cheap statistics of a chunk whose null slots were already filled."""
    n = len(chunk)
    a = ChunkAnalysis(rows=n, null_count=stats.null_count, plain_size=plain_size(chunk, ltype))
    if ltype.kind != PhysicalKind.VARBINARY:
        a.run_count = len(run_starts(chunk.values))
    if _integer_like(ltype) and n:
        v = chunk.values
        if stats.has_min_max:
            a.min_int, a.max_int = int(stats.min), int(stats.max)
        else:  # all null: the filled slots are zeros
            a.min_int = a.max_int = 0
        a.is_sorted = bool(np.all(v[1:] >= v[:-1]))
    if dictionary and _dictionary_worthwhile(chunk, ltype):
        a.dictionary = build_dictionary(chunk, ltype)
        # Filled null slots repeat valid values and add no distinct value; VARBINARY null
        # slots hold arbitrary (usually empty) values, so the count is exact only without nulls.
        if stats.null_count == 0 or (ltype.kind == PhysicalKind.FIXED and stats.null_count < n):
            a.distinct_count = len(a.dictionary[1])
    return a


def choose(chunk: ColumnValues, ltype: LogicalType, analysis: ChunkAnalysis,
           candidates: list[Encoding] | None = None) -> Encoding:
    """The encoding with the smallest estimated size among ``candidates`` (default: all)."""
    plain = by_name("plain")
    best, best_size = plain, analysis.plain_size
    threshold = analysis.plain_size * (1 - MIN_SAVING)
    for enc in candidates if candidates is not None else all_encodings():
        if enc is plain or not enc.supports(ltype):
            continue
        size = enc.estimate_size(chunk, ltype, analysis)
        if size is not None and size <= threshold and size < best_size:
            best, best_size = enc, size
    return best
