"""Random NULL-heavy tables and predicate trees, each tree spelled twice: as an rcfmt
expression and as DuckDB SQL text of the same meaning. Shared by the differential test
(tests/scan/test_duckdb_differential.py, through hypothesis) and the long run
(fuzz/differential_duckdb.py, through a seeded ``random.Random``).

Every generator takes a *chooser* (:class:`RandomChooser` or :class:`DrawChooser`), so the
same code draws from a seeded generator (fast, for millions of predicates) or from
hypothesis (which then shrinks a failure to a small table and a small tree).

What is generated, and why it is a fair comparison (see docs/DIFFERENCES.md):

- columns: bool, int8..int64, uint8..uint64, float32/64 (-0.0 and +-inf included; NaN
  only in columns that get no comparisons, as DuckDB orders NaN above every number and
  says NaN = NaN: those get isin, with NaN members too, is_nan and NULL tests), date32,
  timestamps s/ms/us/ns without and with time zones, decimal128 (non-negative scales:
  DuckDB has no negative scale), string and binary (and their large variants). Each has
  a NULL rate of 0 to 100% (all-NULL columns included) and values drawn from a small
  pool (so literals hit), in runs, sorted, or fresh per row; strings and binaries share
  long common prefixes and hold empty values, NULs, quotes and LIKE wildcards;
- literals: values of the column, their neighbours, the type's edges and values just
  beyond them, finer ones (``x < 5.5`` on an int column, a datetime with a time on a
  date column, a microsecond on a seconds column), in several Python types; each has an
  SQL spelling of exactly the same value (DATE, TIMESTAMP[_NS], TIMESTAMPTZ[_NS] in UTC,
  CAST(... AS DECIMAL(p, s)) with the literal's own precision and scale, CAST('...' AS
  FLOAT/DOUBLE) of a value the column's float type holds exactly, '\\x..'::BLOB);
- trees: ``== != < <= > >=``, between, isin (with and without None members, empty
  where DuckDB spells ``x IN ()``), is_nan (``isnan``), startswith (``starts_with``,
  ``LIKE 'p%' ESCAPE`` or ``prefix`` for strings; a byte slice for binary), is_null /
  is_valid, NOT, AND, OR.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import operator
import random
from dataclasses import dataclass
from functools import reduce

import numpy as np
import pyarrow as pa

import rcfmt
from rcfmt import col

__all__ = [
    "RandomChooser", "DrawChooser", "Lit", "Leaf", "Not", "And", "Or", "KINDS", "Table", "kinds_for",
    "gen_table", "gen_tree", "gen_write_options", "gen_cuts", "to_rcfmt", "to_sql", "leaf_count",
    "write_file", "write_as_dataset", "FILE_PATHS", "read_ids", "DuckOracle", "duckdb_capabilities",
    "shrink_tree",
]


# ====================================================================== choosers
class RandomChooser:
    """Choices from a seeded ``random.Random``."""

    def __init__(self, seed_or_rng):
        self.rng = seed_or_rng if isinstance(seed_or_rng, random.Random) else random.Random(seed_or_rng)

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def coin(self, p: float = 0.5) -> bool:
        return self.rng.random() < p


class DrawChooser:
    """Choices from a hypothesis ``draw`` (inside ``st.composite``); shrinks toward small
    integers, the first element of a sequence and False."""

    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw, self.st = draw, st

    def int(self, lo: int, hi: int) -> int:
        if hi - lo < 256:  # (about uniform, as the seeded run draws; shrinks toward lo)
            return self.draw(self.st.sampled_from(range(lo, hi + 1)))
        return self.draw(self.st.integers(lo, hi))

    def choice(self, seq):
        return self.draw(self.st.sampled_from(seq))

    def coin(self, p: float = 0.5) -> bool:
        # (sampled_from is about uniform; integers are biased to small values)
        k = round(p * 20)
        return self.draw(self.st.sampled_from((False,) * (20 - k) + (True,) * k))


# ====================================================================== column kinds
INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]
TZS = [None, "UTC", "America/New_York", "+05:30", "Europe/Paris"]
#: every column type the differential covers (ns with a time zone only where DuckDB has
#: TIMESTAMPTZ_NS, see :func:`duckdb_capabilities`)
KINDS = [
    pa.bool_(), *INT_TYPES, pa.float32(), pa.float64(), pa.date32(),
    pa.timestamp("s"), pa.timestamp("ms"), pa.timestamp("us"), pa.timestamp("ns"),
    pa.timestamp("s", tz="UTC"), pa.timestamp("ms", tz="+05:30"), pa.timestamp("us", tz="America/New_York"),
    pa.timestamp("ns", tz="UTC"), pa.timestamp("ns", tz="Europe/Paris"),
    pa.decimal128(5, 2), pa.decimal128(38, 10), pa.decimal128(18, 0), pa.decimal128(3, 0), pa.decimal128(20, 4),
    pa.string(), pa.large_string(), pa.binary(), pa.large_binary(),
]
_SHORT = {"bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
          "uint32": "u32", "uint64": "u64", "float": "f32", "double": "f64", "date32[day]": "date", "string": "str",
          "large_string": "lstr", "binary": "bin", "large_binary": "lbin"}


def short_name(t: pa.DataType) -> str:
    if pa.types.is_timestamp(t):
        return f"ts_{t.unit}" + ("" if t.tz is None else "_" + "".join(ch for ch in t.tz if ch.isalnum())[:6].lower())
    if pa.types.is_decimal(t):
        return f"dec{t.precision}_{t.scale}"
    return _SHORT[str(t)]


def _is_str(t):
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_bin(t):
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
DAY_MIN, DAY_MAX = -719162, 2932896  # 0001-01-01, 9999-12-31
SEC_MIN, SEC_MAX = DAY_MIN * 86400, DAY_MAX * 86400 + 86399
# nanoseconds: years 1678..2261 (DuckDB reads int64 extremes as -infinity/infinity and
# cannot parse literals next to them; the order is the same either way)
NS_MIN, NS_MAX = -9_214_646_400 * 10**9, 9_214_646_399 * 10**9 + 999_999_999


def ts_range(unit: str) -> tuple[int, int]:
    if unit == "ns":
        return NS_MIN, NS_MAX
    k = _PER_SECOND[unit]
    return SEC_MIN * k, SEC_MAX * k + k - 1


def int_range(t: pa.DataType) -> tuple[int, int]:
    if pa.types.is_decimal(t):
        return -(10**t.precision - 1), 10**t.precision - 1  # unscaled
    if pa.types.is_date32(t):
        return DAY_MIN, DAY_MAX
    if pa.types.is_timestamp(t):
        return ts_range(t.unit)
    info = np.iinfo(np.dtype(t.to_pandas_dtype()))
    return int(info.min), int(info.max)


# ====================================================================== values
# Values are held in a "domain" form: bool; int (ints, days, timestamp units, decimal
# unscaled); float (float32 values rounded to float32); str; bytes.
_ALPHABET = ["a", "b", "z", "%", "_", "\\", "'", "\x00", "\u00e9", "\U0001f600", "\uffff", " ", "A"]
_STEMS = ["", "a", "ab", "b", "a%", "a_b", "%", "_", "\\", "'", "it's", "\x00", "a\x00", "\u00e9", "\U0001f600",
          "\uffff", " ", "A", "zz"]
_LONG = ["x" * 40, "common/prefix/" * 4, "\u00e9" * 25, "a" * 33]
_BSTEMS = [b"", b"\x00", b"\xff", b"\xff\xff", b"a", b"ab", b"\x00\xff", b"\x7f\x80", b"'", b"\\", b"%"]
_BLONG = [b"\xab" * 40, b"prefix-bytes/" * 4, b"\x00" * 33, b"\xff" * 34]


def _text(r, alphabet, max_len):
    return "".join(r.choice(alphabet) for _ in range(r.int(0, max_len)))


def _float_value(r, t) -> float:
    f32 = t == pa.float32()
    big = float(np.finfo(np.float32).max) if f32 else float(np.finfo(np.float64).max)
    tiny = float(np.finfo(np.float32).smallest_subnormal) if f32 else 5e-324
    pick = r.int(0, 5)
    if pick == 0:
        v = r.choice([0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, 0.5, big, -big, tiny, -tiny, 0.1, 1e-30])
    elif pick == 1:
        v = float(r.int(-3, 3))
    elif pick == 2:
        v = r.int(-2**24, 2**24) / r.choice([1, 3, 7, 1024])
    elif pick == 3:
        v = float(r.int(-2**60, 2**60))
    else:
        v = r.int(-10**6, 10**6) * 10.0 ** r.int(-40, 30)
    return float(np.float32(v)) if f32 else v


def gen_value(r, t: pa.DataType):
    """One non-null value of type ``t`` in domain form, biased to edges and collisions."""
    if pa.types.is_boolean(t):
        return r.coin()
    if pa.types.is_floating(t):
        return _float_value(r, t)
    if _is_str(t):
        pick = r.int(0, 3)
        if pick == 0:
            return r.choice(_STEMS)
        if pick == 1:
            return r.choice(_LONG) + _text(r, _ALPHABET, 3)
        if pick == 2:
            return r.choice(_STEMS) + _text(r, _ALPHABET, 3)
        return _text(r, _ALPHABET, 8)
    if _is_bin(t):
        pick = r.int(0, 3)
        if pick == 0:
            return r.choice(_BSTEMS)
        if pick == 1:
            return r.choice(_BLONG) + bytes(r.int(0, 255) for _ in range(r.int(0, 3)))
        if pick == 2:
            return r.choice(_BSTEMS) + bytes(r.choice([0, 1, 97, 127, 128, 255]) for _ in range(r.int(0, 3)))
        return bytes(r.int(0, 255) for _ in range(r.int(0, 8)))
    lo, hi = int_range(t)
    pick = r.int(0, 3)
    if pick == 0:
        return r.choice([0, lo, hi, max(lo, -1), min(hi, 1), lo + 1, hi - 1])
    if pick == 1:
        return r.int(max(lo, -5), min(hi, 5))
    if pick == 2 and pa.types.is_timestamp(t):  # around now, so sub-second literals matter
        k = _PER_SECOND[t.unit]
        return r.int(1_600_000_000 * k, 1_600_000_100 * k)
    return r.int(lo, hi)


def gen_column(r, t: pa.DataType, n: int) -> list:
    """``n`` values (None = NULL): NULL-heavy, from a pool of few values, in runs, sorted
    or fresh per row."""
    null_rate = r.choice([0.0, 0.3, 0.6, 0.9, 1.0, 0.1, 0.0, 0.3, 0.6, 0.9])
    mode = r.choice(["pool", "runs", "sorted", "fresh"])
    pool = [gen_value(r, t) for _ in range(r.int(1, 6))]
    if mode == "fresh":
        values = [gen_value(r, t) for _ in range(n)]
    elif mode == "runs":
        values = []
        while len(values) < n:
            values += [r.choice(pool)] * r.int(1, 12)
        values = values[:n]
    else:
        values = [r.choice(pool) for _ in range(n)]
        if mode == "sorted":
            values.sort()
    if null_rate:
        values = [None if (null_rate == 1.0 or r.coin(null_rate)) else v for v in values]
    return values


def to_arrow(values: list, t: pa.DataType) -> pa.Array:
    if pa.types.is_date32(t):
        return pa.array(values, pa.int32()).view(t)
    if pa.types.is_timestamp(t):
        return pa.array(values, pa.int64()).view(t)
    if pa.types.is_decimal(t):
        ctx = decimal.Context(prec=80)
        return pa.array([None if v is None else decimal.Decimal(v).scaleb(-t.scale, ctx) for v in values], t)
    return pa.array(values, t)


@dataclass
class Table:
    """A generated table: ``id`` (the row number) and data columns, plus each column's
    values in domain form (the literal generators draw from them)."""

    table: pa.Table
    values: dict  # name -> list of domain values (None = NULL)
    types: dict  # name -> pa.DataType
    nan_columns: frozenset = frozenset()  # float columns holding NaN (isin / is_nan / NULL tests only)

    @property
    def data_columns(self) -> list[str]:
        return [c for c in self.table.column_names if c != "id"]


def gen_table(r, *, max_rows: int = 120, max_columns: int = 4, kinds=KINDS, sort: bool = True) -> Table:
    # (choices shrink toward False, the first element and small integers: small tables)
    n = r.choice([0, 1, 2]) if not r.coin(0.9) else r.choice([r.int(3, max(3, max_rows)), max_rows])
    k = r.int(1, max_columns)
    names, arrays, values, types, nans = ["id"], [pa.array(range(n), pa.int64())], {}, {}, set()
    for i in range(k):
        t = r.choice(kinds)
        name = f"c{i}_{short_name(t)}"
        v = gen_column(r, t, n)
        if pa.types.is_floating(t) and r.coin(0.4):  # NaN (either sign) among the values
            name += "_nan"
            nans.add(name)
            rate = r.choice([0.3, 0.6, 1.0])
            v = [x if x is None or not r.coin(rate) else r.choice([math.nan, -math.nan]) for x in v]
        names.append(name)
        arrays.append(to_arrow(v, t))
        values[name], types[name] = v, t
    table = pa.table(arrays, names=names)
    if sort and n and r.coin(0.3):  # a sorted layout: pruning by min/max bites
        key = r.choice(names[1:])
        table = table.sort_by([(key, r.choice(["ascending", "descending"]))])
    return Table(table, values, types, frozenset(nans))


# ====================================================================== literals
@dataclass(frozen=True)
class Lit:
    """A literal: what rcfmt is given (``py``) and its SQL spelling (``sql``), the same value."""

    py: object
    sql: str

    def __repr__(self):
        return repr(self.py)


def sql_string(s: str) -> str:
    parts = ["'" + p.replace("'", "''") + "'" for p in s.split("\x00")]
    return parts[0] if len(parts) == 1 else "(" + " || chr(0) || ".join(parts) + ")"


def sql_blob(b: bytes) -> str:
    return "'" + "".join(f"\\x{x:02X}" for x in b) + "'::BLOB"


def sql_decimal(d: decimal.Decimal) -> str | None:
    """``CAST('d' AS DECIMAL(p, s))`` with the literal's own precision and scale (None if
    it needs more than 38 digits)."""
    sign, digits, exp = d.as_tuple()
    scale = max(0, -exp)
    text = format(d, "f")
    ndigits = len(digits) + max(0, exp)
    precision = max(ndigits, scale + 1, 1)
    if precision > 38:
        return None
    return f"CAST('{text}' AS DECIMAL({precision},{scale}))"


def _fmt_time(seconds: int, frac: int, digits: int) -> str:
    day, rest = divmod(seconds, 86400)
    d = dt.date(1970, 1, 1) + dt.timedelta(days=day)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    out = f"{d.year:04d}-{d.month:02d}-{d.day:02d} {h:02d}:{m:02d}:{s:02d}"
    return out + (f".{frac:0{digits}d}" if digits else "")


def sql_timestamp(units: int, unit: str, tz) -> str:
    """The instant ``units`` (of ``unit`` since the epoch, UTC) as a DuckDB literal: ns
    precision for ns columns (TIMESTAMP_NS / TIMESTAMPTZ_NS), else microseconds."""
    k = _PER_SECOND[unit]
    if unit == "ns":
        seconds, frac = divmod(units, k)
        text, kw = _fmt_time(seconds, frac, 9), "TIMESTAMP_NS" if tz is None else "TIMESTAMPTZ_NS"
    else:
        micros = units * (10**6 // k)
        seconds, frac = divmod(micros, 10**6)
        text, kw = _fmt_time(seconds, frac, 6), "TIMESTAMP" if tz is None else "TIMESTAMPTZ"
    return f"{kw} '{text}{'' if tz is None else '+00'}'"


_EPOCH = dt.datetime(1970, 1, 1)
_PLUS = dt.timezone(dt.timedelta(hours=5, minutes=30))
_MINUS = dt.timezone(dt.timedelta(hours=-8))


def _pool(tab: Table | None, name: str | None) -> list:
    if tab is None or name is None:
        return []
    return [v for v in tab.values.get(name, []) if v is not None]


def gen_lit(r, t: pa.DataType, pool: list) -> Lit:
    """A literal for comparisons with a column of type ``t`` (``pool``: its values)."""
    from_pool = bool(pool) and r.coin(0.75)
    base = r.choice(pool) if from_pool else gen_value(r, t)
    keep = from_pool and r.coin(0.5)  # a value the column holds, exactly (boundaries matter)
    if pa.types.is_boolean(t):
        return Lit(bool(base), "true" if base else "false")
    if pa.types.is_floating(t):
        return _float_lit(r, t, base, keep)
    if pa.types.is_decimal(t):
        return _decimal_lit(r, t, base, keep)
    if pa.types.is_date32(t):
        return _date_lit(r, base, keep)
    if pa.types.is_timestamp(t):
        return _ts_lit(r, t, base, keep)
    if _is_str(t):
        s = base if keep else r.choice([
            base, base[:1], base[:-1], base + "a", base + "\x00", base[: len(base) // 2], "",
            base[:-1] + chr(ord(base[-1]) + 1) if base and ord(base[-1]) not in (0xD7FF, 0x10FFFF) else base])
        return Lit(s, sql_string(s))
    if _is_bin(t):
        b = base if keep else r.choice([base, base[:1], base[:-1], base + b"\x00", base + b"\xff",
                                        base[: len(base) // 2], b""])
        return Lit(b, sql_blob(b))
    return _int_lit(r, t, base, keep)


def _int_lit(r, t, v: int, keep: bool) -> Lit:
    lo, hi = int_range(t)
    v = v if keep else r.choice([v, v + 1, v - 1, lo - 1, hi + 1, lo, hi])
    if not keep and r.coin(0.25):  # a finer literal: between two integers
        half = decimal.Decimal(v) + r.choice([decimal.Decimal("0.5"), decimal.Decimal("-0.5"), decimal.Decimal("0.25")])
        if abs(v) < 2**50 and r.coin():
            return Lit(float(half), sql_decimal(half))
        return Lit(half, sql_decimal(half))
    py = r.choice([v, v, decimal.Decimal(v), np.int64(v) if -2**63 <= v < 2**63 else v,
                   float(v) if abs(v) <= 2**53 else v])
    return Lit(py, str(v))


def _float_lit(r, t, v: float, keep: bool) -> Lit:
    f32 = t == pa.float32()
    nt = np.float32 if f32 else np.float64
    choices = [v, v, -v, 0.0, -0.0, math.inf, -math.inf]
    if math.isfinite(v):
        with np.errstate(over="ignore"):
            choices += [float(np.nextafter(nt(v), nt(math.inf))), float(np.nextafter(nt(v), nt(-math.inf)))]
    x = float(nt(v if keep else r.choice(choices)))  # a value of the column's type: exact in both engines
    if math.isinf(x):
        text = "inf" if x > 0 else "-inf"
    else:  # the shortest text that reads back as this value of the type
        text = str(np.float32(x)) if f32 else repr(x)
    sql = f"CAST('{text}' AS {'FLOAT' if f32 else 'DOUBLE'})"
    if x.is_integer() and abs(x) <= 2**53 and r.coin(0.3):
        return Lit(int(x), sql)
    if f32 and r.coin(0.3):
        return Lit(np.float32(x), sql)
    return Lit(x, sql)


def _decimal_lit(r, t, unscaled: int, keep: bool) -> Lit:
    lo, hi = int_range(t)
    ulp = decimal.Decimal(1).scaleb(-t.scale)
    ctx = decimal.Context(prec=80)
    v = decimal.Decimal(unscaled if keep else r.choice([unscaled, unscaled, lo, hi])).scaleb(-t.scale, ctx)
    d = v if keep else r.choice([v, ctx.add(v, ulp), ctx.subtract(v, ulp), ctx.add(v, ulp / 2), ctx.subtract(v, ulp / 4),
                  ctx.add(decimal.Decimal(hi).scaleb(-t.scale, ctx), ulp),
                  ctx.subtract(decimal.Decimal(lo).scaleb(-t.scale, ctx), ulp)])
    sql = sql_decimal(d)
    if sql is None or _common_digits(t, d) > 38:  # (DuckDB fails to cast, docs/DIFFERENCES.md)
        d, sql = v, sql_decimal(v)
    choices = [d, d]
    if d == d.to_integral_value():
        choices.append(int(d))
    f = float(d)
    if decimal.Decimal(repr(f)) == d:  # rcfmt reads a float literal by its shortest repr
        choices.append(f)
    return Lit(r.choice(choices), sql)


def _common_digits(t, d: decimal.Decimal) -> int:
    """Digits of the decimal type DuckDB compares a column of type ``t`` and ``d`` in."""
    sign, digits, exp = d.as_tuple()
    scale = max(0, -exp)
    integral = max(len(digits) + exp, 1)
    return max(t.precision - t.scale, integral) + max(t.scale, scale)


def _date_lit(r, days: int, keep: bool) -> Lit:
    days = min(max(days + (0 if keep else r.choice([0, 1, -1])), DAY_MIN), DAY_MAX)
    day = dt.date(1970, 1, 1) + dt.timedelta(days=days)
    text = f"{day.year:04d}-{day.month:02d}-{day.day:02d}"
    pick = r.choice([0, 1, 3, 4]) if keep else r.int(0, 4)
    if pick == 0:
        return Lit(days, f"DATE '{text}'")
    if pick == 1:
        return Lit(np.datetime64(days, "D"), f"DATE '{text}'")
    if pick == 2:  # a datetime with a time of day: between two days
        moment = dt.datetime.combine(day, dt.time(12, 0, 0, 1))
        return Lit(moment, f"TIMESTAMP '{text} 12:00:00.000001'")
    if pick == 3:
        return Lit(dt.datetime.combine(day, dt.time()), f"TIMESTAMP '{text} 00:00:00'")
    return Lit(day, f"DATE '{text}'")


def _ts_lit(r, t, units: int, keep: bool) -> Lit:
    lo, hi = ts_range(t.unit)
    units = min(max(units + (0 if keep else r.choice([0, 1, -1])), lo), hi)
    k = _PER_SECOND[t.unit]
    if not keep and t.unit != "ns" and t.unit != "us" and r.coin(0.3):
        # finer than the column: a microsecond past (or before) the value, as a datetime
        micros = units * (10**6 // k) + r.choice([1, -1, 500])
        if SEC_MIN * 10**6 <= micros <= SEC_MAX * 10**6:
            return Lit(_datetime(micros, t.tz, r), sql_timestamp(micros, "us", t.tz))
    sql = sql_timestamp(units, t.unit, t.tz)
    pick = r.int(0, 3)
    if pick == 0:
        return Lit(units, sql)
    if pick == 1:
        return Lit(np.datetime64(units, t.unit), sql)
    micros, rest = divmod(units * 10**6, k)
    if rest == 0 and SEC_MIN * 10**6 <= micros <= SEC_MAX * 10**6:
        return Lit(_datetime(micros, t.tz, r), sql)
    return Lit(units, sql)


def _datetime(micros: int, tz, r) -> dt.datetime:
    naive = _EPOCH + dt.timedelta(microseconds=micros)
    if tz is None:
        return naive
    utc = naive.replace(tzinfo=dt.timezone.utc)
    try:
        return utc.astimezone(r.choice([dt.timezone.utc, _PLUS, _MINUS]))
    except OverflowError:
        return utc


# ====================================================================== trees
OPS = ("==", "!=", "<", "<=", ">", ">=")
#: whether isin lists may be empty (DuckDB spells ``x IN ()`` since 1.x-something; set by kinds_for)
EMPTY_IN = [False]
_SQL_OP = {"==": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_PY_OP = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
          ">=": operator.ge}


@dataclass(frozen=True)
class Leaf:
    """One predicate on one column: kind is cmp, between, isin, startswith, is_null or
    is_valid; ``lits`` holds its literals (None members in isin); ``variant`` picks the
    SQL spelling of startswith."""

    kind: str
    column: str
    op: str = ""
    lits: tuple = ()
    variant: int = 0


@dataclass(frozen=True)
class Not:
    child: object


@dataclass(frozen=True)
class And:
    children: tuple


@dataclass(frozen=True)
class Or:
    children: tuple


def gen_leaf(r, tab: Table) -> Leaf:
    names = tab.data_columns
    name = r.choice(names) if names and not r.coin(0.03) else "id"
    t = tab.types.get(name, pa.int64())
    pool = _pool(tab, name)
    kinds = ["cmp", "cmp", "cmp", "between", "isin", "isin", "is_null", "is_valid"]
    if _is_str(t) or _is_bin(t):
        kinds += ["startswith", "startswith"]
    if pa.types.is_floating(t):
        kinds.append("is_nan")
    if name in tab.nan_columns:  # (DuckDB orders NaN above every number: no comparisons)
        kinds = ["isin", "isin", "is_nan", "is_null", "is_valid"]
    kind = r.choice(kinds)
    if kind == "cmp":
        return Leaf("cmp", name, r.choice(OPS), (gen_lit(r, t, pool),))
    if kind == "between":
        return Leaf("between", name, "", (gen_lit(r, t, pool), gen_lit(r, t, pool)))
    if kind == "isin":
        members = [gen_lit(r, t, pool) for _ in range(r.int(0 if EMPTY_IN[0] else 1, 4))]
        if pa.types.is_floating(t) and r.coin(0.3):  # a NaN member matches NaN values
            f32 = t == pa.float32()
            nan = Lit(np.float32("nan") if f32 and r.coin() else math.nan, f"CAST('nan' AS {'FLOAT' if f32 else 'DOUBLE'})")
            members.insert(r.int(0, len(members)), nan)
        if r.coin(0.35):
            members.insert(r.int(0, len(members)), None)
        return Leaf("isin", name, "", tuple(members))
    if kind == "startswith":
        lit = gen_lit(r, t, pool)
        if r.coin(0.5) and lit.py:  # a proper prefix of a value
            cut = lit.py[: r.int(0, len(lit.py))]
            lit = Lit(cut, sql_string(cut) if isinstance(cut, str) else sql_blob(cut))
        return Leaf("startswith", name, "", (lit,), r.int(0, 2))
    return Leaf(kind, name)


def gen_tree(r, tab: Table, max_depth: int = 4, depth: int = 0):
    """A random tree of AND / OR / NOT over leaves, at most ``max_depth`` levels deep."""
    if depth >= max_depth or not r.coin(0.65 - 0.15 * depth):  # (shrinks toward a leaf)
        return gen_leaf(r, tab)
    pick = r.int(0, 4)
    if pick == 4:
        return Not(gen_tree(r, tab, max_depth, depth + 1))
    kids = tuple(gen_tree(r, tab, max_depth, depth + 1) for _ in range(r.int(2, 3)))
    return And(kids) if pick in (0, 1) else Or(kids)


def leaf_count(tree) -> int:
    if isinstance(tree, Leaf):
        return 1
    if isinstance(tree, Not):
        return leaf_count(tree.child)
    return sum(leaf_count(c) for c in tree.children)


def to_rcfmt(tree):
    """The rcfmt expression of ``tree`` (built through the public API)."""
    if isinstance(tree, Not):
        return ~to_rcfmt(tree.child)
    if isinstance(tree, And):
        return reduce(operator.and_, [to_rcfmt(c) for c in tree.children])
    if isinstance(tree, Or):
        return reduce(operator.or_, [to_rcfmt(c) for c in tree.children])
    c = col(tree.column)
    if tree.kind == "cmp":
        return _PY_OP[tree.op](c, tree.lits[0].py)
    if tree.kind == "between":
        return c.between(tree.lits[0].py, tree.lits[1].py)
    if tree.kind == "isin":
        return c.isin([None if m is None else m.py for m in tree.lits])
    if tree.kind == "startswith":
        return c.startswith(tree.lits[0].py)
    if tree.kind == "is_nan":
        return c.is_nan()
    return c.is_null() if tree.kind == "is_null" else c.is_valid()


def _like_pattern(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return sql_string(escaped + "%")


def to_sql(tree, types: dict) -> str:
    """DuckDB SQL text with the meaning of ``tree`` (``types``: column name -> type)."""
    if isinstance(tree, Not):
        return f"(NOT {to_sql(tree.child, types)})"
    if isinstance(tree, (And, Or)):
        joiner = " AND " if isinstance(tree, And) else " OR "
        return "(" + joiner.join(to_sql(c, types) for c in tree.children) + ")"
    q = '"' + tree.column.replace('"', '""') + '"'
    if tree.kind == "cmp":
        return f"({q} {_SQL_OP[tree.op]} {tree.lits[0].sql})"
    if tree.kind == "between":
        return f"({q} BETWEEN {tree.lits[0].sql} AND {tree.lits[1].sql})"
    if tree.kind == "isin":
        return f"({q} IN ({', '.join('NULL' if m is None else m.sql for m in tree.lits)}))"
    if tree.kind == "startswith":
        p = tree.lits[0].py
        if isinstance(p, (bytes, bytearray)):
            return f"({q}[1:{len(p)}] = {tree.lits[0].sql})"
        if tree.variant == 0:
            return f"starts_with({q}, {tree.lits[0].sql})"
        if tree.variant == 1:
            return f"({q} LIKE {_like_pattern(p)} ESCAPE '\\')"
        return f"prefix({q}, {tree.lits[0].sql})"
    if tree.kind == "is_nan":
        return f"isnan({q})"
    return f"({q} IS {'NOT ' if tree.kind == 'is_valid' else ''}NULL)"


def shrink_tree(tree):
    """Smaller trees to try in place of ``tree`` (each child instead of a node)."""
    if isinstance(tree, Leaf):
        if tree.kind == "isin" and len(tree.lits) > 1:
            for i in range(len(tree.lits)):
                rest = tree.lits[:i] + tree.lits[i + 1:]
                if any(m is not None for m in rest):
                    yield Leaf(tree.kind, tree.column, tree.op, rest, tree.variant)
        return
    if isinstance(tree, Not):
        yield tree.child
        for c in shrink_tree(tree.child):
            yield Not(c)
        return
    yield from tree.children
    kind = type(tree)
    for i, child in enumerate(tree.children):
        if len(tree.children) > 2:
            yield kind(tree.children[:i] + tree.children[i + 1:])
        for smaller in shrink_tree(child):
            yield kind(tree.children[:i] + (smaller,) + tree.children[i + 1:])


# ====================================================================== writing
def gen_write_options(r, tab: Table) -> dict:
    """Writer options that make blocks and pages small (so pruning happens at both
    levels) and turn dictionaries, encodings, bitmap indexes and bloom filters on and off."""
    from rcfmt.encodings import all_encodings
    from rcfmt.index.bitmap.build import supported_kinds
    from rcfmt.schema.types import logical_type_from_arrow

    names = tab.table.column_names
    data = tab.data_columns
    opts: dict = {
        # (by the number of blocks: each costs a reader and a writer about a millisecond)
        "block_rows": max(1, -(-tab.table.num_rows // r.choice([1, 2, 3, 5, 8, 13, 30])) + r.choice([0, 0, 1, -1])),
        "page_size": r.choice([64, 64, 200, 1 << 20]),
        "page_rows": r.choice([1, 2, 5, 16, 1 << 20]),
        "dictionary": r.coin(0.6),
        "compression": r.choice(["none", "lz4", "zstd", "auto"]),
        "stats_truncate": r.choice([1, 2, 5, 32]),
        "use_threads": False,
    }
    pick = r.int(0, 3)
    if pick == 0:
        opts["bitmap_indexes"] = None
    elif pick == 1:
        opts["bitmap_indexes"] = "auto"
    else:  # named: always built where the type allows
        chosen = {}
        for name in data:
            if r.coin(0.6):
                chosen[name] = r.choice(list(supported_kinds(logical_type_from_arrow(tab.types[name]))) + ["auto"])
        opts["bitmap_indexes"] = chosen
    pick = r.int(0, 2)
    if pick == 0:
        opts["bloom_filter_columns"] = None
    elif pick == 1:
        opts["bloom_filter_columns"] = [n for n in names if r.coin(0.5)]
        opts["bloom_filter_fpp"] = r.choice([0.01, 0.3, 0.9])  # false positives: must not matter
    if r.coin(0.3):
        forced = {}
        for name in data:
            lt = logical_type_from_arrow(tab.types[name])
            able = [e.name for e in all_encodings() if e.supports(lt)]
            if able and r.coin(0.5):
                forced[name] = r.choice(able)
        if forced:
            opts["encoding"] = forced
    return opts


def gen_cuts(r, n: int) -> list[int]:
    """Row positions after which the writer ends a block early (flush_block); repeats
    make empty blocks."""
    if not r.coin(0.4):
        return []
    return sorted(r.int(0, n) for _ in range(r.int(1, 4)))


def write_file(tab: Table, path, options: dict, cuts=()) -> None:
    table = tab.table
    with rcfmt.Writer(str(path), table.schema, **options) as w:
        start = 0
        for cut in cuts:
            if cut > start:
                w.write(table.slice(start, cut - start))
                start = cut
            w.flush_block()
        if start < table.num_rows:
            w.write(table.slice(start))


_PARTITION_OK = (pa.types.is_boolean, pa.types.is_integer, pa.types.is_date32)


def write_as_dataset(tab: Table, path, options: dict, r) -> None:
    """The table as a dataset of several files, maybe partitioned by a bool, integer or
    date column (not strings: "" reads back as NULL, docs/DATASET.md)."""
    opts = {k: v for k, v in options.items() if k != "use_threads"}
    candidates = [n for n in tab.data_columns if any(f(tab.types[n]) for f in _PARTITION_OK)]
    if candidates and r.coin(0.5):
        key = r.choice(candidates)
        if len({v for v in tab.values[key]}) <= 6:  # few partitions
            opts["partition_by"] = [key]
            for option in ("bitmap_indexes", "encoding"):  # (options name data-file columns)
                if isinstance(opts.get(option), dict):
                    opts[option] = {k: v for k, v in opts[option].items() if k != key}
            if isinstance(opts.get("bloom_filter_columns"), list):
                opts["bloom_filter_columns"] = [k for k in opts["bloom_filter_columns"] if k != key]
    rows = tab.table.num_rows
    opts["target_file_rows"] = r.choice([max(1, rows // 3), max(1, rows // 2), 1 << 20])
    rcfmt.write_dataset(tab.table, str(path), mode="overwrite", progress=False, **opts)


# ====================================================================== reading
#: read paths of a single file (and "dataset", of a dataset directory)
FILE_PATHS = ("read_table", "read_table_id", "scan", "scan_plain", "iter_batches", "scan_batches", "blocks",
              "count")


def _ids(table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def read_ids(path, expr, how: str, batch_size: int = 7):
    """Row ids (sorted) that ``expr`` selects from the file (or dataset) at ``path``
    through read path ``how``; for "count", the number of rows."""
    if how == "read_table":  # (blocks in parallel)
        return _ids(rcfmt.read_table(str(path), filter=expr))
    if how == "read_table_id":  # filter columns not projected
        return _ids(rcfmt.read_table(str(path), columns=["id"], filter=expr, use_threads=False))
    if how == "dataset":
        return _ids(rcfmt.dataset(str(path)).to_table(filter=expr, use_threads=False))
    with rcfmt.open(str(path)) as f:
        if how == "scan":
            return _ids(f.scan(filter=expr, use_threads=False).read())
        if how == "scan_plain":  # no bitmap index, bloom filter or page index
            return _ids(f.scan(filter=expr, use_threads=False, use_bitmap_index=False, use_bloom=False,
                               use_page_index=False).read())
        if how == "iter_batches":
            return sorted(i for b in f.iter_batches(batch_size=batch_size, filter=expr)
                          for i in b.column("id").to_pylist())
        if how == "scan_batches":
            return sorted(i for b in f.scan(["id"], filter=expr, use_threads=False).iter_batches(batch_size)
                          for i in b.column("id").to_pylist())
        if how == "blocks":  # as tasks would split it
            nb = f.num_blocks
            out = []
            for lo, hi in ((0, nb // 2), (nb // 2, nb)):
                if hi > lo:
                    out += f.scan(["id"], filter=expr, blocks=(lo, hi), use_threads=False).read().column("id").to_pylist()
            return sorted(out)
        if how == "count":
            return f.scan([], filter=expr, use_threads=False).count()
    raise ValueError(how)


def duckdb_capabilities() -> dict:
    """What the installed DuckDB can express (TIMESTAMPTZ_NS arrived in 1.3-ish)."""
    import duckdb

    con = duckdb.connect()
    caps = {"tz_ns": True, "empty_in": True}
    try:  # NULL IN () is NULL, as in rcfmt
        caps["empty_in"] = con.execute("SELECT NULL::INT IN (), 1 IN ()").fetchall() == [(None, False)]
    except Exception:
        caps["empty_in"] = False
    try:
        con.execute("SELECT TIMESTAMPTZ_NS '2000-01-01 00:00:00.000000001+00'").fetchall()
        con.register("probe", pa.table({"x": pa.array([1], pa.timestamp("ns", tz="UTC"))}))
        got = con.execute("SELECT typeof(x) FROM probe").fetchall()[0][0]
        caps["tz_ns"] = "NS" in got.upper()
    except Exception:
        caps["tz_ns"] = False
    return caps


def kinds_for(caps: dict) -> list[pa.DataType]:
    """The column types to generate with this DuckDB (and whether isin lists may be empty)."""
    EMPTY_IN[0] = caps.get("empty_in", False)
    return [t for t in KINDS if caps.get("tz_ns") or not (pa.types.is_timestamp(t) and t.unit == "ns" and t.tz)]


class DuckOracle:
    """DuckDB over the same Arrow table: ``SELECT id FROM t WHERE <sql>``."""

    def __init__(self, threads: int = 1):
        import duckdb

        self.con = duckdb.connect()
        self.con.execute("SET TimeZone='UTC'")
        self.con.execute(f"SET threads={threads}")

    def load(self, table: pa.Table) -> None:
        self.table = table
        self.con.register("t", table)

    def ids(self, sql: str) -> list[int]:
        return sorted(row[0] for row in self.con.execute(f"SELECT id FROM t WHERE {sql}").fetchall())
