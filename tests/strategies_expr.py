"""Hypothesis strategies for predicate and pruning tests (after pyarrow/tests/strategies.py).

Composable: ``arrow_types()`` -> ``column_values(type)`` (Python values in the type's
*stats domain*, see rcfmt.schema.types, None for NULL) -> ``to_arrow(values, type)`` ->
``tables()`` (a :class:`Data`: table plus the values per column) -> ``exprs(data)``
(random predicate trees whose literals come from the data, its neighbours and its
edges, in every Python type the binder accepts). ``splits(n)`` cuts rows into units and
``brute_stats`` computes their :class:`StatsArrays` by brute force, following the rules
of rcfmt.schema.statistics, optionally with truncated string bounds and unknown bounds.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

from rcfmt.predicate.expr import And, Not, Or, col
from rcfmt.schema.statistics import StatsArrays
from rcfmt.schema.types import LogicalType, logical_type_from_arrow

# ---------------------------------------------------------------- types
INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]
FLOAT_TYPES = [pa.float32(), pa.float64()]
TEMPORAL_TYPES = [
    pa.date32(),
    pa.timestamp("s"), pa.timestamp("ms", tz="UTC"), pa.timestamp("us"), pa.timestamp("ns"),
    pa.timestamp("us", tz="America/New_York"), pa.timestamp("ns", tz="UTC"),
]
DECIMAL_TYPES = [pa.decimal128(5, 2), pa.decimal128(38, 10), pa.decimal128(3, 0), pa.decimal128(3, -1)]
BYTES_TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]
ALL_TYPES = [pa.bool_(), *INT_TYPES, *FLOAT_TYPES, *TEMPORAL_TYPES, *DECIMAL_TYPES, *BYTES_TYPES]


def arrow_types() -> st.SearchStrategy[pa.DataType]:
    return st.sampled_from(ALL_TYPES)


def ltype(t: pa.DataType) -> LogicalType:
    return logical_type_from_arrow(t)


# ---------------------------------------------------------------- values (stats domain)
DATE_MIN, DATE_MAX = -719162, 2932896  # days of date(1, 1, 1) and date(9999, 12, 31)
_STRING_STEMS = ["", "a", "aaaaaaaa", "aaaaaaab", "ab\u00e9", "zz\U0001f600", "\uffff\uffff"]
_BYTES_STEMS = [b"", b"a", b"aaaaaaaa", b"aaaaaaab", b"\xff", b"\xff\xff\xfe", b"\x00\xff"]


def int_range(lt: LogicalType) -> tuple[int, int]:
    if lt.name == "decimal128":
        return -(10**lt.precision - 1), 10**lt.precision - 1
    info = np.iinfo(lt.numpy_dtype)
    return int(info.min), int(info.max)


def domain_values(t: pa.DataType) -> st.SearchStrategy:
    """One non-null value of ``t`` in the stats domain, biased to edges and small values."""
    lt = ltype(t)
    if lt.name == "bool":
        return st.booleans()
    if lt.is_float:
        width = 32 if lt.name == "float32" else 64
        return st.one_of(
            st.sampled_from([math.nan, -0.0, 0.0, math.inf, -math.inf, 1.0, -1.0, 0.5]),
            st.integers(-3, 3).map(float),
            st.floats(width=width),
        )
    if lt.name == "date32":
        return st.one_of(st.integers(-3, 3), st.integers(DATE_MIN, DATE_MAX))
    if lt.name in ("string", "binary"):
        stems, alphabet = (_STRING_STEMS, "ab\x7f\u00e9\U0001f600") if lt.name == "string" else (_BYTES_STEMS, None)
        if lt.name == "string":
            tail = st.text(alphabet=alphabet, max_size=3)
            return st.builds(lambda s, x: (s + x).encode(), st.sampled_from(stems), tail)
        return st.builds(lambda s, x: s + x, st.sampled_from(stems), st.binary(max_size=3))
    lo, hi = int_range(lt)
    small = st.integers(max(lo, -3), min(hi, 3))
    return st.one_of(st.sampled_from([lo, hi]), small, st.integers(lo, hi))


@st.composite
def column_values(draw, t: pa.DataType, size: int) -> list:
    """``size`` values (None = NULL) drawn from a small pool, so duplicates are common."""
    pool = draw(st.lists(domain_values(t), min_size=1, max_size=6))
    null_rate = draw(st.sampled_from([0.0, 0.2, 0.5, 1.0]))
    values = []
    for _ in range(size):
        null = null_rate > 0 and draw(st.floats(0, 1)) < null_rate
        values.append(None if null else draw(st.sampled_from(pool)))
    return values


def to_arrow(values: list, t: pa.DataType) -> pa.Array:
    """An Arrow array of type ``t`` from stats-domain values."""
    lt = ltype(t)
    if lt.name == "date32":
        return pa.array(values, pa.int32()).view(t)
    if lt.name == "timestamp":
        return pa.array(values, pa.int64()).view(t)
    if lt.name == "decimal128":
        ctx = decimal.Context(prec=100)
        return pa.array([None if v is None else decimal.Decimal(v).scaleb(-lt.scale, ctx) for v in values], t)
    if lt.name == "string":
        return pa.array([None if v is None else v.decode() for v in values], t)
    return pa.array(values, t)


@dataclass
class Data:
    """A table and, per column, its values in the stats domain (None = NULL)."""

    table: pa.Table
    values: dict

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema


@st.composite
def tables(draw, types=None, min_rows: int = 0, max_rows: int = 30, max_columns: int = 3) -> Data:
    n = draw(st.integers(min_rows, max_rows))
    ts = draw(st.lists(st.sampled_from(types) if types else arrow_types(), min_size=1, max_size=max_columns))
    values = {f"c{i}": draw(column_values(t, n)) for i, t in enumerate(ts)}
    arrays = [to_arrow(v, t) for v, t in zip(values.values(), ts)]
    return Data(pa.table(arrays, names=list(values)), values)


# ---------------------------------------------------------------- literals (every accepted Python type)
_EPOCH = dt.datetime(1970, 1, 1)
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
_PLUS5 = dt.timezone(dt.timedelta(hours=5, minutes=30))


def _units_to_datetime(units: int, unit: str) -> dt.datetime | None:
    micros, rest = divmod(units * 10**6, _PER_SECOND[unit])
    try:
        return _EPOCH + dt.timedelta(microseconds=micros) if rest == 0 else None
    except OverflowError:
        return None


@st.composite
def literals(draw, t: pa.DataType, sample: list):
    """A literal for comparisons with a column of type ``t``: a sample value (so equality
    hits), a neighbour, an edge or out-of-range value, in any accepted Python type."""
    lt = ltype(t)
    present = [v for v in sample if v is not None]
    base = draw(st.sampled_from(present)) if present and draw(st.booleans()) else draw(domain_values(t))
    if lt.name == "bool":
        return base
    if lt.name == "string":
        s = base.decode()
        return draw(st.sampled_from([s, s[:1], s[:-1], s + "a", s + "\x00"]))
    if lt.name == "binary":
        return draw(st.sampled_from([base, base[:1], base[:-1], base + b"\x00", base + b"\xff"]))
    if lt.is_float:
        f = base
        np_t = np.float32 if lt.name == "float32" else np.float64
        choices = [f, -f, np_t(f), math.nan]
        if math.isfinite(f):
            choices += [float(np.nextafter(np_t(f), np_t(math.inf))), f + 0.1, int(f), decimal.Decimal(f) / 3]
        choices += [2**24 + 1, 2**53 + 1, 10**400, decimal.Decimal("0.1"), -0.0, math.inf]
        return draw(st.sampled_from(choices))
    if lt.name in ("date32", "timestamp"):
        return draw(_temporal_literal(lt, base))
    lo, hi = int_range(lt)
    v = base
    if lt.name == "decimal128":
        ctx = decimal.Context(prec=100)
        exact = decimal.Decimal(v).scaleb(-lt.scale, ctx)
        finer = (decimal.Decimal(2 * v + 1) / 2).scaleb(-lt.scale, ctx)  # halfway to the next value
        choices = [exact, finer, -exact, v, decimal.Decimal(hi + 1).scaleb(-lt.scale, ctx), decimal.Decimal("NaN"),
                   float(exact), decimal.Decimal("-Infinity")]
        return draw(st.sampled_from(choices))
    choices = [v, v + 1, v - 1, lo - 1, hi + 1, v + 0.5, v - 0.5, float(v), math.nan, math.inf, -math.inf,
               decimal.Decimal(v) + decimal.Decimal("0.25"), np.int64(max(min(v, 2**63 - 1), -(2**63)))]
    return draw(st.sampled_from(choices))


@st.composite
def _temporal_literal(draw, lt: LogicalType, v: int):
    v = v + draw(st.sampled_from([0, 0, 1, -1]))
    if lt.name == "date32":
        choices = [v, np.datetime64(v, "D"), np.datetime64(v * 24 + 13, "h")]
        if DATE_MIN <= v <= DATE_MAX:
            day = dt.date(1970, 1, 1) + dt.timedelta(days=v)
            choices += [day, dt.datetime.combine(day, dt.time()), dt.datetime.combine(day, dt.time(12, 0, 0, 1))]
        return draw(st.sampled_from(choices))
    unit = lt.unit
    choices = [v]
    if -(2**62) < v < 2**62:
        choices += [np.datetime64(v, unit)]
        if unit != "ns":  # a finer literal: one sub-unit past the value
            finer = {"s": "ms", "ms": "us", "us": "ns"}[unit]
            f = v * 1000 + 1
            if -(2**63) < f < 2**63:
                choices.append(np.datetime64(f, finer))
    when = _units_to_datetime(v, unit)
    if when is not None:
        if lt.tz is None:
            choices.append(when)
        else:
            utc = when.replace(tzinfo=dt.timezone.utc)
            choices.append(utc)
            try:
                choices.append(utc.astimezone(_PLUS5))
            except OverflowError:
                pass
    return draw(st.sampled_from(choices))


# ---------------------------------------------------------------- expressions
def leaves(data: Data) -> st.SearchStrategy:
    """Single-column predicates over ``data``'s columns."""
    options = []
    for field in data.schema:
        lt, sample, name = ltype(field.type), data.values[field.name], field.name
        lit = literals(field.type, sample)
        c = col(name)
        options.append(st.builds(lambda op, v, c=c: getattr(c, op)(v),
                                 st.sampled_from(["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]), lit))
        options.append(st.builds(lambda vs, c=c: c.isin(vs), st.lists(st.one_of(lit, st.none()), max_size=4)))
        options.append(st.builds(lambda a, b, c=c: c.between(a, b), lit, lit))
        options.append(st.sampled_from([c.is_null(), c.is_valid()]))
        if lt.is_float:
            options.append(st.just(c.is_nan()))
        if lt.name in ("string", "binary"):
            options.append(st.builds(lambda p, c=c: c.startswith(p), lit))
    return st.one_of(options)


def exprs(data: Data, max_leaves: int = 6) -> st.SearchStrategy:
    """Random predicate trees (And / Or / Not) over ``data``."""
    return st.recursive(
        leaves(data),
        lambda kids: st.one_of(
            st.lists(kids, min_size=2, max_size=3).map(lambda cs: And.of(*cs)),
            st.lists(kids, min_size=2, max_size=3).map(lambda cs: Or.of(*cs)),
            kids.map(Not),
        ),
        max_leaves=max_leaves,
    )


# ---------------------------------------------------------------- units and brute-force stats
@st.composite
def splits(draw, n: int, max_units: int = 6) -> list[tuple[int, int]]:
    """Contiguous [start, stop) slices covering 0..n, empty ones included."""
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=max_units - 1)))
    bounds = [0, *cuts, n]
    return list(zip(bounds[:-1], bounds[1:]))


def truncate_min(b: bytes, k: int) -> bytes:
    return b[:k]


def truncate_max(b: bytes, k: int) -> bytes | None:
    """Shortest-ish upper bound of ``b`` at most ``k`` bytes long, or None if none exists."""
    if len(b) <= k:
        return b
    p = b[:k].rstrip(b"\xff")
    return p[:-1] + bytes([p[-1] + 1]) if p else None


def brute_stats(values: list, t: pa.DataType, units, truncate: int | None = None, unknown=None) -> StatsArrays:
    """Stats of each unit (a slice of ``values``) following rcfmt.schema.statistics.

    ``truncate``: cut string/binary bounds to that many bytes (max rounded up, exact flags
    False). ``unknown``: per-unit bools; True drops the bounds (has_min_max False).
    Unspecified min/max entries get arbitrary in-domain garbage (None for object arrays).
    """
    lt = ltype(t)
    obj = lt.name in ("string", "binary", "decimal128")
    dtype = object if obj else lt.numpy_dtype
    n = len(units)
    out = dict(
        row_count=np.zeros(n, np.int64), null_count=np.zeros(n, np.int64), nan_count=np.zeros(n, np.int64),
        has_min_max=np.zeros(n, bool), min=np.empty(n, dtype), max=np.empty(n, dtype),
        min_exact=np.ones(n, bool), max_exact=np.ones(n, bool),
    )
    garbage = None if obj else np.array(1, dtype)  # garbage that would wrongly prune "x < 1"-like tests
    for i, (a, b) in enumerate(units):
        vals = values[a:b]
        nonnull = [v for v in vals if v is not None]
        ordered = [v for v in nonnull if not (isinstance(v, float) and math.isnan(v))]
        out["row_count"][i] = len(vals)
        out["null_count"][i] = len(vals) - len(nonnull)
        out["nan_count"][i] = len(nonnull) - len(ordered)
        out["min"][i] = out["max"][i] = garbage
        if not ordered or (unknown is not None and unknown[i]):
            continue
        lo, hi = min(ordered), max(ordered)
        if lt.is_float:
            lo = -0.0 if lo == 0 else lo
            hi = 0.0 if hi == 0 else hi
        if truncate is not None and lt.name in ("string", "binary"):
            tlo, thi = truncate_min(lo, truncate), truncate_max(hi, truncate)
            out["min_exact"][i] = tlo == lo
            if thi is not None:
                out["max_exact"][i] = thi == hi
                hi = thi
            lo = tlo
        out["has_min_max"][i] = True
        out["min"][i], out["max"][i] = lo, hi
    return StatsArrays(**out)
