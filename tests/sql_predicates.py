"""Random SQL predicate trees for the differential tests of the ``filter`` option's
translator (:mod:`rcfmt.predicate.sql_filter`), rendered as Spark SQL and as DuckDB SQL.

A tree is built once from a seeded :class:`random.Random` over a table's columns and
rendered per dialect, so the same predicate goes to rcfmt (Spark's text), to Spark (on
Parquet) and to DuckDB. Literals come from the columns' own values plus the edge cases
(NaN in every spelling, +-inf, -0.0, NULL members, empty prefixes). Shared by
``tests/predicate/test_sql_filter.py``, ``tests/spark/test_filter_differential.py`` and the
long run ``fuzz/spark_filter_differential.py``; nothing here imports rcfmt.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import random

import pyarrow as pa

# NaN and infinities as Spark spells them, with the DuckDB spelling of the same value
_DOUBLE_SPECIALS = [
    ("double('NaN')", "CAST('NaN' AS DOUBLE)"), ("CAST('NaN' AS DOUBLE)", "CAST('NaN' AS DOUBLE)"),
    ("'NaN'", "'NaN'"), ("float('nan')", "CAST('nan' AS FLOAT)"), ("'nan'::double", "CAST('nan' AS DOUBLE)"),
    ("double('inf')", "CAST('inf' AS DOUBLE)"), ("-double('Infinity')", "-CAST('Infinity' AS DOUBLE)"),
    ("'-Infinity'", "'-Infinity'"), ("-0.0", "-0.0"), ("0", "0"), ("1e300", "1e300"), ("-1e300", "-1e300"),
]


class Leaf:
    """One predicate on one column; ``spark``/``duckdb`` hold its text per dialect."""

    def __init__(self, spark: str, duckdb: str | None = None):
        self.spark, self.duckdb = spark, duckdb if duckdb is not None else spark

    def render(self, dialect: str) -> str:
        return getattr(self, dialect)


class Node:
    def __init__(self, op: str, children: list):
        self.op, self.children = op, children

    def render(self, dialect: str) -> str:
        if self.op == "NOT":
            return f"NOT ({self.children[0].render(dialect)})"
        return "(" + f" {self.op} ".join(c.render(dialect) for c in self.children) + ")"


def _quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _duck_quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


class PredicateGenerator:
    """Random predicates over ``table`` (pyarrow). ``dialects``: which renderings must be
    meaningful (``"duckdb"`` leaves out what DuckDB evaluates otherwise than Spark:
    array_contains, float32 columns, literals beyond a column's type)."""

    def __init__(self, table: pa.Table, seed: int, duckdb: bool = False):
        self.rng = random.Random(seed)
        self.duckdb = duckdb
        self.columns = {}
        for field in table.schema:
            if duckdb and (pa.types.is_float32(field.type) or pa.types.is_list(field.type)):
                continue
            values = [v for v in table.column(field.name).to_pylist() if v is not None]
            self.columns[field.name] = (field.type, values)

    # ---------------------------------------------------------------- trees
    def predicate(self, depth: int = 3):
        rng = self.rng
        if depth == 0 or rng.random() < 0.35:
            return self.leaf()
        kind = rng.random()
        if kind < 0.2:
            return Node("NOT", [self.predicate(depth - 1)])
        op = "AND" if kind < 0.6 else "OR"
        return Node(op, [self.predicate(depth - 1) for _ in range(rng.randint(2, 3))])

    def leaf(self) -> Leaf:
        rng = self.rng
        name = rng.choice(sorted(self.columns))
        t, values = self.columns[name]
        c = f"`{name}`"
        d = f'"{name}"'
        r = rng.random()
        if r < 0.08:
            return Leaf(f"{c} IS NULL", f"{d} IS NULL")
        if r < 0.14:
            return Leaf(f"{c} IS NOT NULL", f"{d} IS NOT NULL")
        if pa.types.is_boolean(t):
            v = rng.choice(["TRUE", "FALSE"])
            return rng.choice([Leaf(c, d), Leaf(f"NOT {c}", f"NOT {d}"), Leaf(f"{c} = {v}", f"{d} = {v}")])
        if pa.types.is_list(t):
            s, _ = self.literal(t.value_type, self._element(values))
            return Leaf(f"array_contains({c}, {s})")
        if pa.types.is_binary(t):
            return Leaf(f"{c} IS NULL", f"{d} IS NULL")
        if pa.types.is_string(t) and r < 0.35:
            prefix = self._prefix(values)
            like = prefix.replace("%", "").replace("_", "").replace("\\", "") + ("%" if rng.random() < 0.8 else "")
            neg = " NOT" if rng.random() < 0.3 else ""
            return Leaf(f"{c}{neg} LIKE {_quote(like)}", f"{d}{neg} LIKE {_duck_quote(like)}")
        if r < 0.45:
            lo, hi = self.literal(t, self._value(values)), self.literal(t, self._value(values))
            neg = " NOT" if rng.random() < 0.3 else ""
            return Leaf(f"{c}{neg} BETWEEN {lo[0]} AND {hi[0]}", f"{d}{neg} BETWEEN {lo[1]} AND {hi[1]}")
        if r < 0.62:
            members = [self.literal(t, self._value(values)) for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.25:
                members.insert(rng.randrange(len(members) + 1), ("NULL", "NULL"))
            neg = " NOT" if rng.random() < 0.4 else ""
            return Leaf(f"{c}{neg} IN ({', '.join(m[0] for m in members)})",
                        f"{d}{neg} IN ({', '.join(m[1] for m in members)})")
        op = rng.choice(["=", "<>", "!=", "<", "<=", ">", ">=", "<=>"])
        s, k = self.literal(t, self._value(values))
        k_op = "IS NOT DISTINCT FROM" if op == "<=>" else op
        if rng.random() < 0.3:  # literal on the left
            return Leaf(f"{s} {op} {c}", f"{k} {k_op} {d}")
        return Leaf(f"{c} {op} {s}", f"{d} {k_op} {k}")

    # ---------------------------------------------------------------- literals
    def _value(self, values):
        return self.rng.choice(values) if values and self.rng.random() < 0.85 else None

    def _element(self, lists):
        flat = [v for lst in lists for v in lst if v is not None]
        return self.rng.choice(flat) if flat else "x"

    def _prefix(self, values) -> str:
        s = self.rng.choice(values) if values else ""
        return s[: self.rng.randint(0, len(s))]

    def literal(self, t: pa.DataType, v) -> tuple[str, str]:
        """``(spark text, duckdb text)`` of a literal of type ``t`` near ``v`` (None: an
        edge case of the type)."""
        rng = self.rng
        if pa.types.is_floating(t):
            if v is None or (isinstance(v, float) and math.isnan(v)) or rng.random() < 0.3:
                return rng.choice(_DOUBLE_SPECIALS)
            if pa.types.is_float32(t) and rng.random() < 0.3:
                text = repr(float(v) + 0.1)  # not a float32 value
                return text, text
            text = repr(float(v))
            return (text, text) if "inf" not in text else rng.choice(_DOUBLE_SPECIALS)
        if pa.types.is_integer(t):
            base = v if v is not None else rng.choice([0, -1, 127, -128, 2**31, -(2**63)])
            x = base + rng.choice([0, 0, 0, 1, -1])
            if not self.duckdb and rng.random() < 0.1:
                text = f"{x}.5"
                return text, text
            return str(x), str(x)
        if pa.types.is_decimal(t):
            x = v if v is not None else decimal.Decimal(rng.randint(-600, 600)) / 100
            x = x.quantize(decimal.Decimal(1).scaleb(-t.scale)) if x.as_tuple().exponent < -t.scale else x
            if rng.random() < 0.3:
                scale = max(0, -x.as_tuple().exponent)
                precision = max(len(x.as_tuple().digits), scale, rng.choice([10, 12, 38]))
                cast = f"CAST('{x}' AS DECIMAL({precision},{scale}))"
                return cast, cast
            text = str(x)
            return (text, text) if "E" not in text else (f"{x:f}", f"{x:f}")
        if pa.types.is_date(t):
            x = v if v is not None else dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(-5, 45))
            return (f"DATE '{x.isoformat()}'", f"DATE '{x.isoformat()}'") if rng.random() < 0.7 else \
                (f"'{x.isoformat()}'", f"DATE '{x.isoformat()}'")
        if pa.types.is_timestamp(t):
            x = v if v is not None else dt.datetime(2023, 11, 15, 3, 0, tzinfo=t.tz and dt.timezone.utc)
            if t.tz is not None:  # with its UTC offset: Spark reads a bare one in the session time zone
                x = x.astimezone(dt.timezone.utc).replace(tzinfo=None)
                text = x.isoformat(sep=" ") + "+00:00"
                return f"TIMESTAMP '{text}'", f"TIMESTAMPTZ '{text}'"
            text = x.isoformat(sep=" ")  # (Spark's TIMESTAMP would compare it in the session time zone)
            return f"TIMESTAMP_NTZ '{text}'", f"TIMESTAMP '{text}'"
        if pa.types.is_string(t):
            x = v if v is not None else rng.choice(["", "ab", "zz9", "\u00e9"])
            return _quote(x), _duck_quote(x)
        raise TypeError(f"no literal for {t}")
