"""Every kind of leaf, and its negation, over columns with NULL rows (shared by the scan,
dataset-pruning and missing-column tests; answers come from tests/oracle_filter.py).

``table()`` holds blocks of six rows chosen to corner pruning: a block of NULLs only, a
block of NaNs only, mixed blocks (NaN, -0.0, NULL elements in lists), a block half
constant half NULL, and a block without NULLs. ``LEAVES`` are user leaves on each
column, ``exprs()`` each leaf and its ``~``.
"""
from __future__ import annotations

import datetime as dt

import pyarrow as pa

from rcfmt import col, list_contains

NAN = float("nan")
INF = float("inf")
BLOCK = 6
D0 = dt.date(2024, 1, 1)


def _day(k):
    return None if k is None else D0 + dt.timedelta(days=k)


def table() -> pa.Table:
    f = ([None] * 6 + [NAN] * 6 + [-0.0, 0.0, None, 1.5, NAN, None] + [1.5] * 3 + [None] * 3
         + [NAN, None, 0.0, 2.0, NAN, -1.0] + [0.5, 2.0, -1.0, INF, -INF, 0.0])
    i = ([None] * 6 + [3] * 6 + [1, None, 2, 3, None, 4] + [None] * 3 + [7] * 3
         + [3, 3, None, -5, 2**31 - 1, None] + [0, 1, 2, 3, 4, 5])
    s = ([None] * 6 + ["ab"] * 6 + ["", "ab", None, "abc", "b", None] + ["b"] * 3 + [None] * 3
         + ["abd", None, "a", "ab", "\u00e9", None] + ["a", "aa", "ab", "b", "ba", "c"])
    lists = ([None] * 6 + [[1]] * 6 + [[1, 2], [None], None, [], [3, None], [1, None]] + [[7]] * 3 + [None] * 3
             + [[None, None], [2], None, [1, 1], [], [7, None]] + [[0], [1], [2], [3], [4], [5, 1]])
    d = ([None] * 6 + [3] * 6 + [0, None, 1, 2, None, 3] + [5] * 3 + [None] * 3
         + [None, 1, 1, None, 4, 4] + [0, 1, 2, 3, 4, 5])
    n = len(f)
    assert all(len(c) == n for c in (i, s, lists, d)) and n % BLOCK == 0
    return pa.table({
        "k": pa.array(range(n), pa.int64()),
        "f": pa.array(f, pa.float64()),
        "i": pa.array(i, pa.int32()),
        "s": pa.array(s, pa.string()),
        "l": pa.array(lists, pa.list_(pa.int32())),
        "d": pa.array([_day(v) for v in d], pa.date32()),
    })


F, I, S, D = col("f"), col("i"), col("s"), col("d")
LEAVES = {
    "f": [F == 0.0, F != 1.5, F < 1.0, F >= -0.0, F > 1e300, F == NAN, F != NAN, F < NAN, F.isin([0.0, NAN]),
          F.isin([1.5, None]), F.isin([NAN]), F.isin([NAN, None]), F.isin([]), F.between(0, 1.5), F.between(NAN, 2),
          F.is_null(), F.is_valid(), F.is_nan()],
    "i": [I == 3, I != 3, I < 2, I > 2.5, I <= 2**31 - 1, I == 2**40, I.isin([1, 3]), I.isin([1, None]),
          I.isin([None]), I.isin([]), I.isin([NAN, 3]), I.between(1, 3), I.between(2.5, 2**40), I.is_null(),
          I.is_valid()],
    "s": [S == "ab", S != "ab", S > "ab", S <= "a", S.startswith("ab"), S.startswith(""), S.isin(["b", None]),
          S.isin(["ab", "c"]), S.between("a", "b"), S.is_null(), S.is_valid()],
    "l": [list_contains(col("l"), 1), list_contains("l", 7), list_contains("l", 2.5)],
    "d": [D == D0 + dt.timedelta(days=3), D < dt.datetime(2024, 1, 2, 12), D.isin([D0, None]),
          D.between(D0, D0 + dt.timedelta(days=2)), D.is_null()],
}


def exprs(columns=None) -> list:
    """Each leaf (on ``columns``, default all) and its negation."""
    out = []
    for name, leaves in LEAVES.items():
        if columns is None or name in columns:
            for leaf in leaves:
                out += [leaf, ~leaf]
    return out
