"""The Polars predicates ``scan_rcfmt`` pushes into the rcfmt scan, checked against
Polars itself on the same data (NULLs, NaN, -0.0, infinities, empty strings, time
zones): random predicate trees (comparisons either way round, ``is_between`` with every
``closed=``, ``is_in`` with NULL and NaN members and ``nulls_equal``, ``is_null``,
``is_nan``, ``str.starts_with``, boolean columns, ``&``, ``|``, ``~``) over decimals,
floats, integers, dates, timestamps with and without time zone, durations, booleans and
strings. For each:

- ``scan_rcfmt(path).filter(pred)`` has Polars' rows and values;
- the predicate Polars hands the scan (its own, type-coerced form; Polars keeps some
  conjuncts for itself, e.g. a decimal cast that can fail) is translated, and the
  translation alone (``rcfmt.read_table(path, filter=...)``, and the scan's
  ``rows_selected``) selects exactly the rows of that predicate when every leaf is
  translatable, a superset of them when not;
- the predicate as written translates to a superset of Polars' rows.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import tempfile
from pathlib import Path
from unittest import mock
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rcfmt
import strategies

pl = pytest.importorskip("polars")

import rcfmt.polars as rcpl  # noqa: E402
from rcfmt.scan.scanner import ScanStats  # noqa: E402

NAN, INF = math.nan, math.inf
PARIS = ZoneInfo("Europe/Paris")
D = decimal.Decimal

FLOATS = [0.0, -0.0, 1.5, -1.5, 0.1, 2.0, 1e300, INF, -INF, NAN]
INTS8 = [-128, -3, -1, 0, 1, 2, 5, 127]
INTS64 = [-(2**62), -7, 0, 1, 3, 2**53 + 1, 2**62]
DECIMALS = [D("-1.50"), D("0.00"), D("1.25"), D("2.50"), D("9999999.99")]
DATES = [dt.date(1969, 12, 31), dt.date(2024, 1, 1), dt.date(2024, 2, 29), dt.date(2024, 3, 1)]
STAMPS = [dt.datetime(1969, 12, 31, 23, 59, 59, 999000), dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 1000),
          dt.datetime(2024, 3, 31, 1, 30), dt.datetime(2024, 3, 31, 3, 30)]
DURATIONS = [dt.timedelta(0), dt.timedelta(milliseconds=1), dt.timedelta(seconds=-3), dt.timedelta(days=2)]
STRINGS = ["", "a", "ab", "abc", "b", "ba", "é"]

# column: (arrow type, values stored, literals used in predicates)
COLUMNS = {
    "i8": (pa.int8(), INTS8, INTS8),
    "i64": (pa.int64(), INTS64, INTS64),
    "f64": (pa.float64(), FLOATS, FLOATS + [2, -1]),
    "f32": (pa.float32(), FLOATS[:-4] + [INF, -INF, NAN], FLOATS + [2, -1]),
    "dec": (pa.decimal128(9, 2), DECIMALS, DECIMALS + [D("1.255"), D("-1.5"), 1, 0, -2]),
    "d": (pa.date32(), DATES, DATES),
    "ts": (pa.timestamp("us"), STAMPS, STAMPS),
    "ts_ms": (pa.timestamp("ms"), [s.replace(microsecond=s.microsecond // 1000 * 1000) for s in STAMPS], STAMPS),
    "tsz": (pa.timestamp("ns", "Europe/Paris"), [s.replace(tzinfo=PARIS) for s in STAMPS],
            [s.replace(tzinfo=PARIS) for s in STAMPS]),
    "du": (pa.duration("ms"), DURATIONS, DURATIONS + [dt.timedelta(microseconds=1500)]),
    "b": (pa.bool_(), [True, False], [True, False]),
    "s": (pa.string(), STRINGS, STRINGS),
    "bin": (pa.binary(), [s.encode() for s in STRINGS], [s.encode() for s in STRINGS]),
    "tsu": (pa.timestamp("us", "UTC"), [s.replace(tzinfo=dt.timezone.utc) for s in STAMPS],
            [s.replace(tzinfo=dt.timezone.utc) for s in STAMPS]),
}
FLOAT_COLS = ("f64", "f32")


@st.composite
def tables(draw):
    n = draw(st.integers(0, 24))
    cols = {"rid": pa.array(range(n), pa.int64())}
    for name, (t, values, _) in COLUMNS.items():
        pool = st.one_of(st.none(), st.sampled_from(values))
        cols[name] = pa.array(draw(st.lists(pool, min_size=n, max_size=n)), t)
    return pa.table(cols)


def _literal(draw, name):
    return draw(st.sampled_from(COLUMNS[name][2]))


@st.composite
def leaves(draw, cat: bool = False):
    """``(polars predicate, translatable)`` of one leaf (``cat``: column "s" is read as
    Categorical, so ``str`` functions need it cast to String first)."""
    name = draw(st.sampled_from(list(COLUMNS)))
    c = pl.col(name)
    forms = ["cmp", "cmp_flipped", "between", "is_in", "is_null", "is_not_null", "opaque"]
    if name in FLOAT_COLS:
        forms += ["is_nan", "is_not_nan"]
    if name == "s":
        forms += ["starts_with"]
    if name == "b":
        forms = ["cmp", "alone", "is_in", "is_null", "opaque"]
    form = draw(st.sampled_from(forms))
    if form in ("cmp", "cmp_flipped"):
        ops = ["==", "!="] if name == "b" else ["==", "!=", "<", "<=", ">", ">="]
        op = draw(st.sampled_from(ops))
        v = pl.lit(_literal(draw, name))
        if name == "d" and draw(st.booleans()):  # a date column with a datetime: Polars casts the column
            v = pl.lit(draw(st.sampled_from(STAMPS)))
        if name == "tsz" and (op in ("==", "!=") or draw(st.booleans())):
            # (Polars compares ``!=`` of a nanosecond column and a microsecond literal by
            # truncating the column: not pushed. The same literal in nanoseconds is.)
            v = pl.lit(_literal(draw, name), dtype=pl.Datetime("ns", "Europe/Paris"))
        a, b = (c, v) if form == "cmp" else (v, c)
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op], True
    if form == "between":
        lo, hi = _literal(draw, name), _literal(draw, name)
        closed = draw(st.sampled_from(["both", "left", "right", "none"]))
        return c.is_between(pl.lit(lo), pl.lit(hi), closed=closed), True
    if form == "is_in":
        pool = COLUMNS[name][2]
        members = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4))
        members += draw(st.lists(st.none(), max_size=1))
        members = draw(st.permutations(members))
        if name == "dec":  # one list type: Decimals only
            members = [D(m) if isinstance(m, int) else m for m in members]
        if name in FLOAT_COLS:
            members = [float(m) if m is not None else None for m in members]
        return c.is_in(members, nulls_equal=draw(st.booleans())), True
    if form == "is_null":
        return c.is_null(), True
    if form == "is_not_null":
        return c.is_not_null(), True
    if form == "is_nan":
        return c.is_nan(), True
    if form == "is_not_nan":
        return c.is_not_nan(), True
    if form == "starts_with":
        return (c.cast(pl.String) if cat else c).str.starts_with(pl.lit(_literal(draw, name))), True
    if form == "alone":
        return c, True
    # not translated: a computed value
    return pl.col("rid") % 3 == draw(st.integers(0, 2)), False


def _dtype(name):
    return pl.from_arrow(pa.schema([pa.field(name, COLUMNS[name][0])]).empty_table()).schema[name]


@st.composite
def predicates(draw, depth=3, cat: bool = False):
    """``(polars predicate, translatable)``: a tree of leaves under & | ~."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(leaves(cat))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    a, ta = draw(predicates(depth - 1, cat))
    if kind == "not":
        return ~a, ta
    b, tb = draw(predicates(depth - 1, cat))
    return (a & b if kind == "and" else a | b), ta and tb


def _ids(df) -> list:
    return sorted(df["rid"].to_list())


def _check(table, pred, translatable, tmp, categorical=()):
    path = Path(tmp) / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=8, page_rows=4)
    frame = pl.from_arrow(table).with_columns(pl.col(c).cast(pl.Categorical) for c in categorical)
    want = frame.filter(pred).sort("rid")

    pushed = []  # (the predicate Polars hands the scan, its translation)
    real = rcpl.translate

    def spy(predicate, schema, dtypes=None):
        out = real(predicate, schema, dtypes)
        pushed.append((predicate, out))
        return out

    stats = ScanStats()
    with mock.patch.object(rcpl, "translate", spy):
        got = rcpl.scan_rcfmt(path, stats=stats, categorical=list(categorical)).filter(pred).collect().sort("rid")
    assert got.equals(want), (pred, got, want)  # rows and values (NaN equal to NaN)

    wanted = _ids(want)
    assert len(pushed) <= 1
    if pushed:
        # Polars may keep conjuncts for itself (a cast that can fail): the scan sees the rest
        handed, (expr, exact) = pushed[0]
        if translatable:
            assert exact and expr is not None, (str(pred), str(handed))  # reached the scan whole
        if expr is not None:
            handed_ids = _ids(frame.filter(handed))
            ids = sorted(rcfmt.read_table(path, filter=expr).column("rid").to_pylist())
            if translatable or exact:  # (an exact translation's rows reach Polars unfiltered)
                assert ids == handed_ids, (str(pred), str(handed), expr)
                if table.num_rows:
                    assert stats.rows_selected == len(handed_ids)  # the scan selected exactly those
            else:
                assert set(handed_ids) <= set(ids), (str(pred), str(handed), expr)
    # as written (leaves not coerced yet: those Polars would coerce inexactly are dropped)
    expr = real(pred, table.schema).expr if not categorical else None  # (str functions need the cast)
    if expr is not None:
        ids = sorted(rcfmt.read_table(path, filter=expr).column("rid").to_pylist())
        assert set(wanted) <= set(ids), (str(pred), expr)


@settings(max_examples=strategies.examples(120))  # (RCFMT_EXAMPLES_SCALE=10 for a long run)
@given(tables(), predicates())
def test_pushed_predicates_select_exactly_polars_rows(table, case):
    pred, translatable = case
    with tempfile.TemporaryDirectory() as tmp:
        _check(table, pred, translatable, tmp)


@settings(max_examples=strategies.examples(80))
@given(tables(), predicates(cat=True))
def test_predicates_on_a_column_read_as_categorical(table, case):
    """Column "s" handed to Polars as Categorical (``categorical=["s"]``): its
    comparisons (Polars orders categoricals by their strings), ``is_in``, null tests
    and ``starts_with`` after a cast to String are pushed exactly as on strings."""
    pred, translatable = case
    with tempfile.TemporaryDirectory() as tmp:
        _check(table, pred, translatable, tmp, categorical=["s"])


@settings(max_examples=strategies.examples(80))
@given(tables(), leaves())
def test_each_leaf_alone_and_negated(table, case):
    pred, translatable = case
    with tempfile.TemporaryDirectory() as tmp:
        _check(table, pred, translatable, tmp)
        _check(table, ~pred, translatable, tmp)


def test_not_of_a_dropped_conjunct_is_not_pushed():
    schema = pa.schema([("i", pa.int64()), ("f", pa.float64())])
    opaque = pl.col("i") % 2 == 0
    assert repr(rcpl.translate_predicate((pl.col("i") > 1) & opaque, schema)) == repr(rcfmt.col("i") > 1)
    assert rcpl.translate_predicate(~((pl.col("i") > 1) & opaque), schema) is None
    assert rcpl.translate_predicate((pl.col("i") > 1) | opaque, schema) is None
    # ~(a | u) is ~a & ~u: the dropped conjunct is ~u
    assert repr(rcpl.translate_predicate(~((pl.col("i") > 1) | opaque), schema)) == repr(rcfmt.col("i") <= 1)


def test_float_translations_follow_polars_nan_order():
    schema = pa.schema([("f", pa.float64()), ("g", pa.float32()), ("i", pa.int64())])
    tr = rcpl.translate_predicate
    assert repr(tr(pl.col("f") > 1.0, schema)) == repr((rcfmt.col("f") > 1.0) | rcfmt.col("f").is_nan())
    assert repr(tr(pl.col("f") == NAN, schema)) == repr(rcfmt.col("f").is_nan())
    assert repr(tr(~(pl.col("f") < 1.0), schema)) == repr((rcfmt.col("f") >= 1.0) | rcfmt.col("f").is_nan())
    assert repr(tr(pl.col("g") == 0.1, schema)) == repr(rcfmt.col("g") == 0.10000000149011612)  # cast to f32
    assert tr(pl.col("i") > 1.5, schema) is None  # Polars compares the int column as float64
    assert tr(pl.col("f") > 2**60 + 1, schema) is None  # an int literal float64 cannot hold


def test_a_date_column_compared_with_a_datetime(tmp_path):
    """Polars casts the date column to a datetime (midnight): pushed with exact numpy literals."""
    table = pa.table({"rid": pa.array([0, 1, 2], pa.int64()),
                      "d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2), None], pa.date32())})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path)
    for pred in (pl.col("d") > dt.datetime(2024, 1, 1, 5), ~(pl.col("d") >= dt.datetime(2024, 1, 1)),
                 pl.col("d") == dt.datetime(2024, 1, 2), pl.col("d") != dt.datetime(2024, 1, 1, 0, 0, 1)):
        stats = ScanStats()
        got = rcpl.scan_rcfmt(path, stats=stats).filter(pred).collect()
        want = pl.from_arrow(table).filter(pred)
        assert got.equals(want), pred
        assert stats.rows_selected == want.height, pred  # pushed, exactly


def test_a_column_polars_truncates_is_not_pushed(tmp_path):
    """Polars compares ``!=`` of a nanosecond column with a microsecond literal on the
    column truncated to microseconds (``==`` exactly): that form is left to Polars."""
    v = dt.datetime(2024, 1, 1, tzinfo=PARIS)
    stored = pa.array([1704063600000000500, 1704063600000000000, None], pa.timestamp("ns", "Europe/Paris"))
    table = pa.table({"rid": pa.array([0, 1, 2], pa.int64()), "tsz": stored})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path)
    for pred in (pl.col("tsz") != v, ~(pl.col("tsz") == v), pl.col("tsz") == v, pl.col("tsz") > v):
        want = pl.from_arrow(table).filter(pred)
        assert rcpl.scan_rcfmt(path).filter(pred).collect().equals(want), pred
    assert rcpl.translate_predicate(pl.col("tsz") != v, table.schema) is None
    ns = pl.lit(v, dtype=pl.Datetime("ns", "Europe/Paris"))
    assert repr(rcpl.translate_predicate(pl.col("tsz") != ns, table.schema)) == repr(rcfmt.col("tsz") != 1704063600000000000)


def test_constants_polars_folds_in():
    """Polars folds a part it can decide alone (``is_in`` of values the column cannot
    hold) into a constant: TRUE, FALSE or NULL, pushed as such (NULL is never TRUE, under
    NOT neither)."""
    table = pa.table({"l": pa.array([[1], None, []], pa.list_(pa.int64())), "rid": pa.array([0, 1, 2], pa.int64()),
                      "i8": pa.array([None, 1, -1], pa.int8())})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.rcfmt"
        rcfmt.write_table(table, path)
        for pred in (pl.lit(False), ~pl.lit(False), pl.lit(None, pl.Boolean), ~pl.lit(None, pl.Boolean),
                     (pl.col("i8") > 0) | pl.lit(False), ~((pl.col("i8") > 0) & pl.lit(False)),
                     (pl.col("i8") > 0) & pl.lit(None, pl.Boolean)):
            want = _ids(pl.from_arrow(table).filter(pred))
            expr = rcpl.translate_predicate(pred, table.schema)
            assert expr is not None, pred
            assert sorted(rcfmt.read_table(path, filter=expr).column("rid").to_pylist()) == want, pred


def test_an_aliased_predicate_is_translated_as_its_expression():
    """Polars may hand the scan a predicate under an alias (found by the tree test)."""
    import pyarrow as pa
    import polars as pl

    from rcfmt.polars import translate_predicate

    schema = pa.schema([("a", pa.int64()), ("b", pa.int8())])
    plain = (pl.col("a") == 1) | (pl.col("b") == -128)
    for predicate in (plain, ~plain):
        aliased = predicate.alias("b")
        assert translate_predicate(aliased, schema) is not None
        assert repr(translate_predicate(aliased, schema)) == repr(translate_predicate(predicate, schema))


LITERALS = [pl.lit(5, pl.Int8), pl.lit(-(2**63), pl.Int64), pl.lit(2**64 - 1, pl.UInt64),
            pl.lit(7, pl.UInt8), pl.lit(1.5, pl.Float64), pl.lit(-0.0, pl.Float64),
            pl.lit(5e-324, pl.Float64), pl.lit(NAN, pl.Float64), pl.lit(INF, pl.Float64), pl.lit(0.1, pl.Float32),
            pl.lit(D("-123.4500")), pl.lit(D("1E+5")), pl.lit(D("-0.01"), pl.Decimal(38, 2)),
            pl.lit(dt.date(1969, 12, 31)), pl.lit(dt.datetime(2020, 1, 1, 0, 0, 0, 1)),
            pl.lit(dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)),
            pl.lit(dt.datetime(2020, 1, 1), pl.Datetime("ns", "Europe/Paris")),
            pl.lit(dt.datetime(1960, 1, 1), pl.Datetime("ms")), pl.lit(dt.timedelta(microseconds=-1)),
            pl.lit(dt.timedelta(days=3), pl.Duration("ns")), pl.lit("é\x00"), pl.lit(""), pl.lit(b"\x00\xff"),
            pl.lit(True), pl.lit(False), pl.lit(None, pl.Int64), pl.lit(None, pl.String), pl.lit(3), pl.lit(0.25)]


@pytest.mark.parametrize("k", range(len(LITERALS)))
def test_literals_read_from_the_json_equal_polars_values(k):
    """The translator reads a literal's value from the predicate's JSON where it holds
    it exactly (no Polars query per literal); each such value and its type equal what
    Polars evaluates the literal to, and the forms JSON cannot hold (NaN, infinities,
    float32, NULL, dynamic literals) are left to Polars' evaluation."""
    import json

    from rcfmt.interop.polars import _json_scalar

    lit = LITERALS[k]
    node = json.loads(lit.meta.serialize(format="json"))["Literal"]
    got = _json_scalar(node, pl)
    series = pl.select(lit.alias("v")).to_series()
    value = (series.to_physical() if series.dtype.is_temporal() else series).to_list()[0]
    if got is None:  # evaluated by Polars instead
        assert (value is None or series.dtype == pl.Float32 or "Dyn" in node
                or (isinstance(value, float) and not math.isfinite(value))), node
        return
    assert got[0] == series.dtype, node
    assert type(got[1]) is type(value) and got[1] == value, node
    if isinstance(value, float):
        assert math.copysign(1, got[1]) == math.copysign(1, value)


# ------------------------------------------------------------------ found by hunts (session 48)
def _same_rows(path, table, expr):
    want = sorted(pl.from_arrow(table).lazy().filter(expr).collect()["id"].to_list())
    got = sorted(rcpl.scan_rcfmt(path).filter(expr).collect()["id"].to_list())
    assert got == want, expr


def test_second_units_compare_in_seconds(tmp_path):
    """timestamp[s] and duration[s] are held by Polars in ms: the literal is pushed in the
    stored unit (it was pushed as ms, 1000x too large), between two seconds it is left to Polars."""
    t = pa.table({"id": [0, 1, 2, 3, 4],
                  "ts": pa.array([0, 1, 2, 999, 5000], pa.timestamp("s")),
                  "tz": pa.array([0, 1, 2, 999, 5000], pa.timestamp("s", "UTC")),
                  "du": pa.array([0, 1, 2, 999, 5000], pa.duration("s"))})
    rcfmt.write_table(t, tmp_path / "s.rcfmt")
    second = dt.datetime(1970, 1, 1, 0, 0, 1)
    for expr in [pl.col("ts") > second, pl.col("ts") == dt.datetime(1970, 1, 1, 0, 0, 2),
                 pl.col("ts") >= dt.datetime(1970, 1, 1, 0, 0, 1, 500000),
                 pl.col("tz") > second.replace(tzinfo=dt.timezone.utc), pl.col("du") == dt.timedelta(seconds=2),
                 pl.col("ts").is_in([dt.datetime(1970, 1, 1, 0, 0, 2)]),
                 pl.col("du").is_between(dt.timedelta(seconds=1), dt.timedelta(seconds=999)),
                 ~(pl.col("du") < dt.timedelta(milliseconds=1500))]:
        _same_rows(tmp_path / "s.rcfmt", t, expr)


def test_casts_to_nanoseconds_are_left_to_polars(tmp_path):
    """Dates and ms/us stamps outside 1677-2262 overflow nanoseconds (NULL, or an error
    for a strict cast): such a cast keeps not every value, so Polars filters it."""
    t = pa.table({"id": [0, 1, 2], "d": pa.array([dt.date(1, 1, 1), dt.date(2000, 1, 1), dt.date(9999, 12, 31)]),
                  "ts": pa.array([dt.datetime(1, 1, 1), dt.datetime(2000, 1, 1), dt.datetime(9999, 12, 31)],
                                 pa.timestamp("us"))})
    rcfmt.write_table(t, tmp_path / "n.rcfmt")
    ns = pl.lit(dt.datetime(1999, 1, 1), pl.Datetime("ns"))
    for name in ("d", "ts"):
        for expr in [pl.col(name) > ns, pl.col(name) != ns, pl.col(name).cast(pl.Datetime("ns"), strict=False).is_null()]:
            _same_rows(tmp_path / "n.rcfmt", t, expr)
        with pytest.raises(Exception):
            rcpl.scan_rcfmt(tmp_path / "n.rcfmt").filter(pl.col(name).cast(pl.Datetime("ns"), strict=True) > ns) \
                .collect()


# ------------------------------------------------------------------ found by hunts (session 49)
def test_decimal_literals_of_38_digits_are_pushed_unrounded(tmp_path):
    """A Polars decimal literal was read in Python's 28-digit context and pushed rounded as
    exact: ``d == 3333...2533`` found no row."""
    big = D("33333333333333333333333333333333332533")
    t = pa.table({"id": [0, 1, 2], "d": pa.array([big, big - 1, D("-99999999999999999999999999999999999999")],
                                                pa.decimal128(38, 0)),
                  "e": pa.array([D("1234567890123456789012345678.0123456789"), D(0), None], pa.decimal128(38, 10))})
    rcfmt.write_table(t, tmp_path / "d.rcfmt")
    for expr in [pl.col("d") == pl.lit(big, pl.Decimal(38, 0)), pl.col("d") <= pl.lit(big - 1, pl.Decimal(38, 0)),
                 pl.col("e") == pl.lit(D("1234567890123456789012345678.0123456789"), pl.Decimal(38, 10)),
                 pl.col("e") < pl.lit(D("1234567890123456789012345678.0123456788"), pl.Decimal(38, 10))]:
        _same_rows(tmp_path / "d.rcfmt", t, expr)


def test_a_date64_column_against_a_datetime_is_left_to_polars(tmp_path):
    """Polars holds date64 as Datetime("ms"); the translator asked its unit and raised."""
    t = pa.table({"id": [0, 1, 2], "d": pa.array([dt.date(1969, 11, 25), dt.date(1969, 11, 27), None]).cast(pa.date64())})
    rcfmt.write_table(t, tmp_path / "d64.rcfmt")
    for expr in [pl.col("d") > dt.datetime(1969, 11, 26), pl.col("d") == dt.datetime(1969, 11, 27)]:
        _same_rows(tmp_path / "d64.rcfmt", t, expr)


def test_nested_columns_and_names_rcfmt_cannot_filter_are_left_to_polars(tmp_path):
    t = pa.table({"id": [0, 1, 2],
                  "st": pa.array([{"x": 1}, None, {"x": 3}]),
                  "l": pa.array([[1], None, []]),
                  "m": pa.array([[("k", 1)], [], None], pa.map_(pa.string(), pa.int64())),
                  "m.key": pa.array([1, 5, None]), "l.item": pa.array([7, None, 9]),
                  "a.b": pa.array([1, 2, 3]), "a": pa.array([{"b": 1}, {"b": 2}, None])})
    rcfmt.write_table(t, tmp_path / "n.rcfmt")
    for expr in [pl.col("st").is_null(), pl.col("l").is_not_null(), pl.col("m").is_null(),
                 pl.col("m.key") > 2, pl.col("l.item") < 8, pl.col("id").is_in([]), pl.lit(True),
                 (pl.col("id") > 0) | pl.lit(None, pl.Boolean)]:
        _same_rows(tmp_path / "n.rcfmt", t, expr)


def test_columns_polars_cannot_hold_or_names_it_renames(tmp_path):
    for arr in [pa.array([pa.MonthDayNano((1, 2, 3)), None], pa.month_day_nano_interval()),
                pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])])]:
        rcfmt.write_table(pa.table({"id": [1, 2], "x": arr}), tmp_path / "u.rcfmt")
        with pytest.raises(rcfmt.UnsupportedError, match="Polars has no type"):
            rcpl.scan_rcfmt(tmp_path / "u.rcfmt")
    rcfmt.write_table(pa.table({"": [1, 2, 3], "z": [0, 0, 1]}), tmp_path / "e.rcfmt")
    lazy = rcpl.scan_rcfmt(tmp_path / "e.rcfmt")
    assert lazy.collect_schema().names() == ["", "z"]
    assert lazy.filter(pl.col("") > 2).collect()[""].to_list() == [3]
    with pytest.raises(rcfmt.InvalidOptionError, match="stats must be"):
        rcpl.scan_rcfmt(tmp_path / "e.rcfmt", stats=5)


def test_fixed_size_lists_with_nulls_reach_polars_in_slices(tmp_path):
    """Polars refuses a fixed-size list whose values outrun its length, which a slice's
    do (a block longer than a batch, head(k)): such columns are compacted."""
    n = 70_000
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "f": pa.array([None if i % 3 == 0 else [i, i] for i in range(n)], pa.list_(pa.int64(), 2))})
    rcfmt.write_table(t, tmp_path / "f.rcfmt", block_rows=n)
    with rcfmt.open(tmp_path / "f.rcfmt") as f:
        df = pl.DataFrame(f.scan())
    assert df.height == n and df["f"].null_count() == (n + 2) // 3
    got = rcpl.scan_rcfmt(tmp_path / "f.rcfmt").head(5).filter(pl.col("id") >= 2).collect()
    assert got["f"].to_list() == [[2, 2], None, [4, 4]]


def test_a_half_consumed_batch_stream_does_not_abort_the_interpreter_at_exit(tmp_path):
    """Polars' threads pull the source's batches; at exit, one asking for the GIL during
    finalization was ended and the process aborted ("FATAL: exception not rethrown", exit
    134: 8 runs in 30). rcfmt's generators end at the first atexit call."""
    import subprocess
    import sys
    import textwrap

    n = 200_000
    t = pa.table({"k": pa.array(range(n)), "v": pa.array([None if i % 11 == 0 else i / 3 for i in range(n)])})
    rcfmt.write_table(t, tmp_path / "f.rcfmt", block_rows=10_000)
    code = textwrap.dedent(f"""
        from rcfmt.polars import scan_rcfmt
        it = scan_rcfmt({str(tmp_path / "f.rcfmt")!r}).collect_batches(chunk_size=1000)
        print(next(iter(it)).shape, flush=True)
    """)
    codes = [subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120,
                            cwd=tmp_path).returncode for _ in range(8)]  # (SIGABRT: -6)
    assert codes == [0] * 8


def test_scans_collected_by_later_exit_handlers_read_every_row(tmp_path):
    """An exit handler that runs after rcfmt's (registered before the first scan) reads
    a scan whole (it read none: the hook ended every stream for good)."""
    import subprocess
    import sys
    import textwrap

    rcfmt.write_table(pa.table({"k": pa.array(range(1000))}), tmp_path / "f.rcfmt", block_rows=100)
    code = textwrap.dedent(f"""
        import atexit
        from rcfmt.polars import scan_rcfmt
        path = {str(tmp_path / "f.rcfmt")!r}
        # (without threads: Python's thread pools take no work once exiting)
        atexit.register(lambda: print("at exit", scan_rcfmt(path, use_threads=False).collect().height, flush=True))
        print("before", scan_rcfmt(path).collect().height, flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.split() == ["before", "1000", "at", "exit", "1000"], out


def test_frames_handed_to_polars_free_their_buffers_without_the_gil_once_exiting():
    """The frames scan_rcfmt hands Polars hold numpy-backed buffers, whose release takes
    the GIL: Polars' threads freeing them during finalization aborted the process
    ("terminate called without an active exception", 2 runs in 40). Through
    exit_safe_stream they are freed as usual (zero-copy), and after rcfmt's exit hook
    they are left to the process's end instead."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import gc, weakref
        import numpy as np, polars as pl, pyarrow as pa
        from rcfmt.interop.polars_exit import exit_safe_stream
        from rcfmt._native.exit_safe import releases_stopped, stop_releases

        def handed_over():
            values = np.arange(1000, dtype=np.int64)
            table = pa.table({"k": pa.Array.from_buffers(pa.int64(), 1000, [None, pa.py_buffer(values)]),
                              "s": pa.array([str(i) for i in range(1000)])})
            df = pl.DataFrame(exit_safe_stream(table))
            assert df["k"].sum() == 499500 and df.columns == ["k", "s"]
            return df, weakref.ref(values)

        df, values = handed_over()
        assert values() is not None  # (zero-copy: Polars holds the numpy array's memory)
        del df; gc.collect()
        print("before", values() is None, releases_stopped())
        df, values = handed_over()
        print("stopped", stop_releases(1.0))
        del df; gc.collect()
        print("after", values() is None, releases_stopped())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["before", "True", "False", "stopped", "True", "after", "False", "True"]


def test_the_exit_hook_ends_open_streams_a_thread_is_about_to_ask():
    """A stream open when rcfmt's exit hook runs, which a Polars thread asks for its next
    batch a moment later, gets the error while the hook waits -- not during finalization,
    where the thread asking for the GIL was ended and the process aborted ("FATAL:
    exception not rethrown", 1 run in 200 while the hook waited only for batches being
    made), and is done with Python before the hook returns (a thread still using Python
    just after its stream raised aborted the same way). A plain thread stands for
    Polars'; the hook's bounds are raised so that a slow machine cannot decide the order."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import threading, time
        from rcfmt.errors import RcfmtError
        from rcfmt.interop import polars_exit

        polars_exit.EXIT_WAIT_SECONDS, polars_exit.EXIT_IDLE_SECONDS = 60.0, 2.0
        order = []
        stream = polars_exit._Stream(lambda: iter([1, 2, 3]), ())
        assert next(stream) == 1

        def polars_thread():
            time.sleep(0.05)
            try:
                next(stream)
                order.append("batch")
            except RcfmtError:
                order.append("raised")
                time.sleep(0.05)
                order.append("python-after")

        thread = threading.Thread(target=polars_thread)
        thread.start()
        polars_exit._stop()
        order.append("hook done")
        thread.join()
        print(*order, polars_exit._state["open"])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["raised", "python-after", "hook", "done", "0"]


def test_a_stream_polars_makes_while_the_exit_hook_waits_is_ended_too():
    """A Polars thread that makes a stream while rcfmt's exit hook waits (a later input
    of a concat starting) gets the error at its first batch: it was counted as made after
    the hook, read on, and met finalization."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import threading, time
        from rcfmt.errors import RcfmtError
        from rcfmt.interop import polars_exit

        polars_exit.EXIT_WAIT_SECONDS, polars_exit.EXIT_IDLE_SECONDS = 60.0, 2.0
        order = []
        held = polars_exit._Stream(lambda: iter([1, 2]), ())  # (open: the hook waits)
        assert next(held) == 1

        def polars_thread():
            time.sleep(0.05)
            late = polars_exit._Stream(lambda: iter([1, 2]), ())
            try:
                next(late)
                order.append("batch")
            except RcfmtError:
                order.append("raised")

        thread = threading.Thread(target=polars_thread)
        thread.start()
        polars_exit._stop()
        thread.join()
        print(*order)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["raised"]
