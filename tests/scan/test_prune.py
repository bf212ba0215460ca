"""Stats pruning: sound against brute force (never skips a unit holding a TRUE row)
and effective where stats allow it."""
from __future__ import annotations

import datetime as dt
import decimal
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
from rcfmt.predicate.expr import And, col
from rcfmt.predicate.nnf import BoundAnd, Cmp, Leaf, to_nnf
from rcfmt.predicate.bind import bind
from rcfmt.predicate.prune import always_true, leaf_always_true, leaf_may_match, may_match, prefix_successor
from rcfmt.scan.scanner import FileScan, scan_file
from rcfmt.schema.statistics import StatsArrays

import strategies_expr as sx  # tests/ is on sys.path (tests/conftest.py)
from oracle_filter import selection_mask
from strategies import examples

NAN = math.nan


def stats_of(values, t, units, **kw) -> StatsArrays:
    return sx.brute_stats(values, t, units, **kw)


def keep(expr, values, t, units, **kw) -> list[bool]:
    """The units pruning keeps, checked sound against the oracle on the way."""
    schema = pa.schema([("x", t)])
    kept = may_match(bind(expr, schema), {"x": stats_of(values, t, units, **kw)}).tolist()
    for u, (matches, k) in enumerate(zip(truth(expr, values, t, units), kept)):
        assert k or not matches, f"unit {u} holds a TRUE row of {expr!r} but was pruned"
    return kept


def truth(expr, values, t, units) -> list[bool]:
    """Per unit: whether a row of it is TRUE (the independent oracle)."""
    mask = selection_mask(expr, pa.table({"x": sx.to_arrow(values, t)}))
    return [bool(mask[a:b].any()) for a, b in units]


def chunks(n, size):
    return [(i, min(i + size, n)) for i in range(0, n, size)]


# =============================================================== effectiveness on easy cases
SORTED = list(range(100))
TENS = chunks(100, 10)


@pytest.mark.parametrize("t", [pa.int8(), pa.uint64(), pa.int64(), pa.float32(), pa.date32(), pa.timestamp("ns")])
def test_sorted_numbers_prune_all_but_the_matching_units(t):
    values = [float(v) for v in SORTED] if pa.types.is_floating(t) else SORTED
    one = [i == 4 for i in range(10)]
    assert keep(col("x") == 42, values, t, TENS) == one
    assert keep(col("x").isin([42, 1000]), values, t, TENS) == one
    assert keep(col("x").isin([5, 42, 99]), values, t, TENS) == [True, False, False, False, True] + [False] * 4 + [True]
    assert keep(col("x") < 20, values, t, TENS) == [True, True] + [False] * 8
    assert keep(col("x") <= 20, values, t, TENS) == [True, True, True] + [False] * 7
    assert keep(col("x") > 89, values, t, TENS) == [False] * 9 + [True]
    assert keep(col("x") >= 89, values, t, TENS) == [False] * 8 + [True, True]
    assert keep(col("x").between(33, 47), values, t, TENS) == [False] * 3 + [True, True] + [False] * 5
    assert keep(~(col("x") >= 20), values, t, TENS) == [True, True] + [False] * 8
    assert keep((col("x") < 10) | (col("x") > 89), values, t, TENS) == [True] + [False] * 8 + [True]


def test_sorted_ints_exact_rewrites():
    assert keep(col("x") < 19.5, SORTED, pa.int32(), TENS) == [True, True] + [False] * 8
    assert keep(col("x") == 19.5, SORTED, pa.int32(), TENS) == [False] * 10
    assert keep(col("x") != 19.5, SORTED, pa.int32(), TENS) == [True] * 10
    assert keep(col("x") < 300, SORTED, pa.uint8(), TENS) == [True] * 10
    assert keep(col("x") > 300, SORTED, pa.uint8(), TENS) == [False] * 10


def test_sorted_strings_and_prefixes():
    words = sorted(f"{p}{i:03d}".encode() for p in ("apple", "banana", "cherry") for i in range(10))
    units = chunks(30, 5)  # apple: units 0-1, banana: 2-3, cherry: 4-5
    t = pa.string()
    assert keep(col("x") == "banana004", words, t, units) == [False, False, True, False, False, False]
    assert keep(col("x").startswith("ban"), words, t, units) == [False, False, True, True, False, False]
    assert keep(col("x").startswith("banana00"), words, t, units) == [False, False, True, True, False, False]
    assert keep(col("x").startswith("banana005"), words, t, units) == [False, False, False, True, False, False]
    assert keep(~col("x").startswith("banana"), words, t, units) == [True, True, False, False, True, True]
    assert keep(col("x") >= "c", words, t, units) == [False, False, False, False, True, True]
    # truncated to 3 bytes: apple's min "app" and max rounded up to "apq"; still prunes by prefix
    assert keep(col("x").startswith("ban"), words, t, units, truncate=3) == [False, False, True, True, False, False]
    assert keep(col("x") == "banana004", words, t, units, truncate=3) == [False, False, True, True, False, False]
    # NOT startswith needs the max below "bao": "ban" rounded up is "bao" (keep), "bana" -> "banb" (prune)
    assert keep(~col("x").startswith("ban"), words, t, units, truncate=3) == [True] * 6
    assert keep(~col("x").startswith("ban"), words, t, units, truncate=4) == [True, True, False, False, True, True]


def test_not_equal_and_not_in_prune_only_constant_units():
    values = [1, 1, 1, 2, 2, 3, None, None, 5, 6, 7, None]
    units = [(0, 3), (3, 5), (5, 6), (6, 8), (8, 11), (11, 12)]
    t = pa.int64()
    assert keep(col("x") != 1, values, t, units) == [False, True, True, False, True, False]
    assert keep(col("x") != 2, values, t, units) == [True, False, True, False, True, False]
    assert keep(~col("x").isin([1, 3]), values, t, units) == [False, True, False, False, True, False]
    # integers: the members cover every value of [min, max]
    assert keep(~col("x").isin([5, 6, 7]), values, t, units) == [True, True, True, False, False, False]
    assert keep(~col("x").isin([5, 7]), values, t, units) == [True, True, True, False, True, False]
    assert keep(~col("x").isin([1, None]), values, t, units) == [False] * 6
    assert keep(~col("x").isin([]), values, t, units) == [True, True, True, False, True, False]
    # with unknown bounds nothing can be proven
    assert keep(col("x") != 1, values, t, units, unknown=[True] * 6) == [True, True, True, False, True, False]
    # truncated bounds are no values: != keeps
    assert keep(col("x") != b"aaa", [b"aaa", b"aaa"], pa.binary(), [(0, 2)], truncate=3) == [False]
    assert keep(col("x") != b"aaa", [b"aaa", b"aaa", None], pa.binary(), [(0, 3)], truncate=3) == [False]
    assert keep(col("x") != b"aaa", [b"aaa", b"aaab"], pa.binary(), [(0, 2)], truncate=3) == [True]  # max -> "aab"
    stats = stats_of([b"aaaa", b"aaaa"], pa.binary(), [(0, 2)], truncate=3)  # min "aaa", max "aab"
    stats.min[0], stats.max[0] = b"aaa", b"aaa"  # equal but inexact bounds prove nothing
    e = bind(col("x") != b"aaa", pa.schema([("x", pa.binary())]))
    assert may_match(e, {"x": stats}).tolist() == [True]


def test_decimal_not_in_covers_range():
    t = pa.decimal128(5, 2)
    values = [100, 101, 102]  # 1.00, 1.01, 1.02 unscaled
    members = [Decimal("1.00"), Decimal("1.01"), Decimal("1.02")]
    assert keep(~col("x").isin(members), values, t, [(0, 3)]) == [False]
    assert keep(~col("x").isin(members[:2]), values, t, [(0, 3)]) == [True]
    assert keep(col("x").isin([Decimal("1.015")]), values, t, [(0, 3)]) == [False]
    assert keep(col("x").isin([Decimal("1.01")]), values, t, [(0, 3)]) == [True]


def test_nulls_nans_and_zeros():
    t = pa.float64()
    values = [None, None, NAN, NAN, -0.0, 0.0, 1.0, NAN, None, 2.0]
    units = [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10), (10, 10)]  # all-null, all-NaN, zeros, mixed, mixed, empty
    assert keep(col("x").is_null(), values, t, units) == [True, False, False, False, True, False]
    assert keep(col("x").is_valid(), values, t, units) == [False, True, True, True, True, False]
    assert keep(col("x").is_nan(), values, t, units) == [False, True, False, True, False, False]
    assert keep(~col("x").is_nan(), values, t, units) == [False, False, True, True, True, False]  # NULL rows: NULL
    assert keep(col("x") == 0, values, t, units) == [False, False, True, False, False, False]
    assert keep(col("x") == -0.0, values, t, units) == [False, False, True, False, False, False]
    assert keep(col("x") != 0, values, t, units) == [False, True, False, True, True, False]
    assert keep(col("x") < 0, values, t, units) == [False, False, False, False, False, False]
    assert keep(col("x") > 0, values, t, units) == [False, False, False, True, True, False]
    assert keep(~(col("x") > 0), values, t, units) == [False, True, True, True, False, False]
    assert keep(col("x") != NAN, values, t, units) == [False, True, True, True, True, False]
    assert keep(col("x") == NAN, values, t, units) == [False] * 6
    assert keep(col("x").isin([0.0]), values, t, units) == [False, False, True, False, False, False]
    assert keep(~col("x").isin([0.0]), values, t, units) == [False, True, False, True, True, False]
    assert keep(col("x") < 300, [1, None], pa.uint8(), [(0, 1), (1, 2)]) == [True, False]


def test_prefix_successor():
    assert prefix_successor(b"ab") == b"ac"
    assert prefix_successor(b"a\xff") == b"b"
    assert prefix_successor(b"\xff\xff") is None
    assert prefix_successor(b"") is None
    values = [b"\xff\xff", b"\xff\xff\x01", b"\xff\xfe"]
    assert keep(col("x").startswith(b"\xff\xff"), values, pa.binary(), [(0, 2), (2, 3)]) == [True, False]
    assert keep(~col("x").startswith(b"\xff\xff"), values, pa.binary(), [(0, 2), (2, 3)]) == [False, True]
    assert keep(~col("x").startswith(b""), values, pa.binary(), [(0, 2), (2, 3)]) == [False, False]


def test_may_match_plumbing():
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64())])
    sa = stats_of([1, 2, 3, 4], pa.int64(), [(0, 2), (2, 4)])
    sb = stats_of([9, 9, 5, 5], pa.int64(), [(0, 2), (2, 4)])
    e = bind((col("a") < 3) & (col("b") == 5), schema)
    assert may_match(e, {"a": sa, "b": sb}).tolist() == [False, False]
    assert may_match(bind((col("a") < 3) | (col("b") == 5), schema), {"a": sa, "b": sb}).tolist() == [True, True]
    assert may_match(e, {"a": sa}).tolist() == [True, False]  # no stats for b: keep
    assert may_match(e, {}, num_units=3).tolist() == [True] * 3
    assert may_match(None, {"a": sa}).tolist() == [True, True]
    assert may_match(bind(~(col("a") >= 3), schema), {"a": sa}).tolist() == [True, False]  # non-NNF input
    with pytest.raises(ValueError, match="number of units"):
        may_match(e, {})
    with pytest.raises(ValueError, match="number of units"):
        may_match(e, {"a": sa, "b": sb.take([0])})
    with pytest.raises(TypeError, match="not a bound leaf"):
        leaf_may_match(e, sa)


# =============================================================== soundness (the property that matters)
SETTINGS = settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check_sound(d, expr, units, stats):
    bound = bind(expr, d.schema)
    mask = selection_mask(expr, d.table)
    kept = may_match(bound, stats)
    for u, (a, b) in enumerate(units):
        if mask[a:b].any():
            assert kept[u], f"unit {u} rows {a}:{b} holds a TRUE row but was pruned: {bound!r}\nstats={stats}"


@SETTINGS
@given(data=st.data())
def test_pruning_is_sound(data):
    d, units, stats = _units_with_stats(data)
    _check_sound(d, data.draw(sx.exprs(d)), units, stats)


def _units_with_stats(data):
    """A random table, its rows cut into units, and brute-force statistics per column
    and unit (string bounds truncated or not, some units without bounds)."""
    d = data.draw(sx.tables())
    units = data.draw(sx.splits(d.table.num_rows))
    truncate = data.draw(st.sampled_from([None, None, 1, 2, 3]))
    stats = {}
    for f in d.schema:
        unknown = data.draw(st.lists(st.booleans(), min_size=len(units), max_size=len(units))) if data.draw(st.booleans()) else None
        stats[f.name] = sx.brute_stats(d.values[f.name], f.type, units, truncate=truncate, unknown=unknown)
    return d, units, stats


@SETTINGS
@given(data=st.data())
def test_single_leaves_are_sound_on_pages_and_precise_where_stats_are_exact(data):
    """Leaves on one column (the page-index case), and their negations; with exact
    bounds the range comparisons and the count-only checks must keep exactly the units
    that match."""
    d = data.draw(sx.tables(max_columns=1, max_rows=40))
    (f,) = d.schema
    units = data.draw(sx.splits(d.table.num_rows, max_units=8))
    stats = sx.brute_stats(d.values[f.name], f.type, units)
    expr = data.draw(sx.leaves(d))
    if data.draw(st.booleans()):
        expr = ~expr  # NOT over every kind of leaf (NULL rows among the values)
    nnf = to_nnf(bind(expr, d.schema))
    whole = np.array([m.any() for m in _per_unit(selection_mask(expr, d.table), units)], bool)
    assert not (whole & ~may_match(nnf, {f.name: stats})).any(), f"pruned a matching unit: {expr!r}"
    for sub, leaf in _paired(expr, nnf):
        mask = selection_mask(sub, d.table)
        got = leaf_may_match(leaf, stats)
        assert got.dtype == bool and got.shape == (len(units),)
        matches = np.array([m.any() for m in _per_unit(mask, units)], bool)
        assert not (matches & ~got).any(), f"pruned a matching unit: {leaf!r} (of {sub!r})"
        exact_kind = type(leaf).__name__ in ("NullCheck", "NanCheck", "Folded") or (
            type(leaf).__name__ == "Cmp" and leaf.op in ("<", "<=", ">", ">="))
        if exact_kind:
            assert (got == matches).all(), f"imprecise pruning of {leaf!r} (of {sub!r}): kept {got}, matches {matches}"


def _per_unit(mask, units):
    return [mask[a:b] for a, b in units]


def _paired(expr, nnf):
    """(user expression, bound leaf) pairs where a leaf of ``nnf`` stands for a whole
    user expression (so the oracle can answer for the leaf alone)."""
    if isinstance(nnf, Leaf):
        return [(expr, nnf)]
    if (isinstance(expr, And) and isinstance(nnf, BoundAnd) and len(expr.children) == len(nnf.children)
            and all(isinstance(c, Leaf) for c in nnf.children)):
        return list(zip(expr.children, nnf.children))
    return []


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=60).map(sorted), st.integers(-60, 60), st.integers(1, 9))
def test_sorted_ints_equality_keeps_only_units_with_the_value(values, v, size):
    units = chunks(len(values), size)
    got = keep(col("x") == v, values, pa.int16(), units)
    want = [values[a] <= v <= values[b - 1] for a, b in units]
    assert got == want


# ---------------------------------------------------------------- page pruning by a native interval pass
_PAGE_COLUMNS = {  # name: (arrow type, value strategy, literal strategy), literals in the stats domain
    "i8": (pa.int8(), st.integers(-128, 127), st.integers(-130, 130)),
    "u64": (pa.uint64(), st.sampled_from([0, 5, 2**63, 2**64 - 1]), st.sampled_from([-1, 0, 5, 2**63, 2**64 - 1, 2**64])),
    "i64": (pa.int64(), st.integers(-(2**63), 2**63 - 1), st.sampled_from([-(2**63), -1, 0, 1, 2**63 - 1])),
    "f64": (pa.float64(), st.sampled_from([0.0, -0.0, 1.5, float("nan"), float("inf"), float("-inf")]),
            st.sampled_from([0.0, -0.0, 1.5, 2, float("inf"), float("-inf")])),
    "d": (pa.date32(), st.integers(0, 9).map(lambda k: dt.date(2024, 1, 1) + dt.timedelta(days=k)), st.integers(19722, 19735)),
    "dec": (pa.decimal128(38, 0), st.sampled_from([-(10**37), -1, 0, 7, 2**70, 10**37]).map(decimal.Decimal),
            st.sampled_from([-(10**38), -(10**37), -1, 0, 7, 2**64, 2**70, 10**37])),
}


@settings(max_examples=examples(150), deadline=None)
@given(data=st.data())
def test_native_interval_page_masks_are_sound_and_as_tight(data, tmp_path_factory):
    """The scanner folds a column's comparisons into one interval tested natively on the
    raw page index. Every page holding a matching row is kept (NULL-only and NaN-only
    pages, unbounded pages, 128-bit decimals, uint64), and no page the per-leaf Python
    path prunes (an integer interval can be tighter: nothing lies strictly between -1
    and 0)."""
    name = data.draw(st.sampled_from(sorted(_PAGE_COLUMNS)))
    t, values, literals = _PAGE_COLUMNS[name]
    rows = data.draw(st.lists(st.one_of(st.none(), values), min_size=1, max_size=40))
    table = pa.table({name: pa.array(rows, t)})
    path = tmp_path_factory.mktemp("pages") / "f.rcfmt"
    rcfmt.write_table(table, path, page_rows=data.draw(st.integers(1, 6)))
    ops = data.draw(st.lists(st.sampled_from(["<", "<=", ">", ">=", "=="]), min_size=1, max_size=4))
    leaves = [(op, data.draw(literals)) for op in ops]
    with rcfmt.open(path) as f:
        exprs = [_cmp(name, op, v) for op, v in leaves]
        bound = [to_nnf(bind(e, f.schema)) for e in exprs]
        cmps = [b for b in bound if isinstance(b, Cmp)]
        cmp_exprs = [e for e, b in zip(exprs, bound) if isinstance(b, Cmp)]
        if not cmps:
            return  # every leaf folded to a constant by the binder
        scan = FileScan(f, filter=rcfmt.col(name).is_valid())
        masks, rest = scan._planner.pages.interval_page_masks(cmps, 0, {})
        assert not rest
        got = masks[0]
        stats = f.page_stats(0, 0)
        python = np.ones(len(stats.row_count), bool)
        for leaf in cmps:
            python &= leaf_may_match(leaf, stats)
        matching = np.ones(len(rows), bool)
        for e in cmp_exprs:
            matching &= selection_mask(e, table)
        entries = f.page_index(0, 0)
        first, counts = entries["first_row"].astype(int), entries["row_count"].astype(int)
        truth = np.array([matching[a:a + n].any() for a, n in zip(first, counts)])
        assert not (truth & ~got).any(), ("a page with a matching row was pruned", leaves)
        assert not (got & ~python).any(), ("kept a page the per-leaf path prunes", leaves)


def _cmp(name, op, v):
    c = rcfmt.col(name)
    return {"<": c < v, "<=": c <= v, ">": c > v, ">=": c >= v, "==": c == v}[op]


# =============================================================== units proven TRUE on every row
@SETTINGS
@given(data=st.data())
def test_always_true_is_sound(data):
    """A unit :func:`always_true` proves must have every row TRUE under the oracle
    (NULL rows, NaN, -0.0, truncated string bounds, units without bounds), for random
    trees with NOT."""
    d, units, stats = _units_with_stats(data)
    expr = data.draw(sx.exprs(d))
    nnf = to_nnf(bind(expr, d.schema))
    proven = always_true(nnf, stats, len(units))
    mask = selection_mask(expr, d.table)
    for u, (a, b) in enumerate(units):
        if proven[u]:
            assert mask[a:b].all(), f"unit {u} rows {a}:{b} proven TRUE but a row is not: {nnf!r}\nstats={stats}"


@SETTINGS
@given(data=st.data())
def test_single_comparisons_are_proven_where_exact_bounds_allow(data):
    """Where bounds are exact, a range comparison is proven on a unit exactly when the
    unit holds no NULL or NaN and every row satisfies it."""
    d = data.draw(sx.tables(max_columns=1, max_rows=40))
    (f,) = d.schema
    units = data.draw(sx.splits(d.table.num_rows, max_units=8))
    stats = sx.brute_stats(d.values[f.name], f.type, units)
    expr = data.draw(sx.leaves(d))
    nnf = to_nnf(bind(expr, d.schema))
    if not (isinstance(nnf, Cmp) and nnf.op in ("<", "<=", ">", ">=")):
        return
    mask = selection_mask(expr, d.table)
    got = leaf_always_true(nnf, stats)
    for u, (a, b) in enumerate(units):
        values = [v for v in d.values[f.name][a:b]]
        clean = b > a and all(v is not None and not (isinstance(v, float) and math.isnan(v)) for v in values)
        assert got[u] == (clean and bool(mask[a:b].all())), f"unit {u} of {nnf!r}: {values}"


@pytest.mark.parametrize("expr, proven", [
    ((col("x") >= 10) & (col("x") < 30), [False, True, True, False, False, False, False, False, False, False]),
    (col("x") != 5, [False] + [True] * 9),
    (col("x").isin(list(range(20, 40))), [False, False, True, True] + [False] * 6),
    (~col("x").isin([5, 55]), [False, True, True, True, True, False, True, True, True, True]),
    (col("x").is_valid(), [True] * 10),
    ((col("x") < 10) | (col("x") >= 90), [True] + [False] * 8 + [True]),
])
def test_sorted_units_inside_a_window_are_proven(expr, proven):
    stats = {"x": stats_of(SORTED, pa.int64(), TENS)}
    assert always_true(to_nnf(bind(expr, pa.schema([("x", pa.int64())]))), stats, 10).tolist() == proven


def test_nulls_and_nans_prove_nothing_but_their_own_checks():
    values = [1.0, 2.0, None, 3.0, NAN, 4.0]
    units = [(0, 2), (2, 4), (4, 6)]
    stats = {"x": stats_of(values, pa.float64(), units)}
    schema = pa.schema([("x", pa.float64())])
    at = lambda e: always_true(to_nnf(bind(e, schema)), stats, 3).tolist()  # noqa: E731
    assert at(col("x") > 0) == [True, False, False]  # (NULL, NaN: not TRUE)
    assert at(col("x") != 10) == [True, False, True]  # (NaN != 10 is TRUE)
    assert at(col("x").is_valid()) == [True, False, True]
    assert at(~col("x").is_nan()) == [True, False, False]
    assert at(col("x").is_null() | (col("x") > 0)) == [True, False, False]


def test_a_scan_skips_the_filter_of_blocks_its_statistics_prove(tmp_path):
    """Blocks inside a window decode no filter column; the rows and counts are the
    oracle's, a deletion vector still applies, and the plan says what was proven."""
    n = 10_000
    table = pa.table({"t": pa.array(np.arange(n), pa.int64()), "v": pa.array(np.arange(n) % 7, pa.int32()),
                      "s": pa.array([None if i % 13 == 0 else f"s{i}" for i in range(n)])})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=1_000, page_rows=100)
    flt = (col("t") >= 1_500) & (col("t") < 7_250) & (col("v") != 9)
    expected = table.filter(pa.array(selection_mask(flt, table)))
    with rcfmt.open(path) as f:
        scan = f.scan(["t", "s"], flt, use_threads=False)
        plan = scan.plan()
        got = scan.read()
        assert scan.stats.rows_selected == expected.num_rows == scan_count(f, flt)
        inner = [b for b in plan.blocks if 2 <= b.block <= 6]
        assert inner and all(b.residual is None and len(b.proven) == 3 for b in inner)
        edge = [b for b in plan.blocks if b.block in (1, 7)]
        assert all(b.residual is not None for b in edge)
        assert "proven by statistics" in plan.explain()
        s_only = f.scan(["s"], flt, use_threads=False).plan()  # (a proven block reads s alone)
        s_col = f.column_index("s")
        for b in s_only.blocks:
            chunk = f.footer.chunks[s_col][b.block]
            lo, hi = int(chunk["offset"]), int(chunk["offset"]) + int(chunk["length"])
            inside = bool(((b.fetch[0] >= lo) & (b.fetch[1] <= hi)).all())
            assert inside == (b.residual is None), b  # (an edge block reads its filter column t too)
            v = f.footer.chunks[f.column_index("v")][b.block]  # (v != 9 is proven everywhere: never read)
            assert not ((b.fetch[0] < int(v["offset"]) + int(v["length"])) & (b.fetch[1] > int(v["offset"]))).any()
        deleted = np.array([2_500, 2_501, 6_000, 7_100], np.int64)
        less = scan_file(f, ["t"], flt, use_threads=False, deleted=deleted).read()
    assert got.equals(expected.select(["t", "s"]))
    assert less["t"].to_pylist() == [t for t in expected["t"].to_pylist() if t not in set(deleted.tolist())]


def test_proven_conjuncts_are_shown_as_text_only_when_asked(tmp_path, monkeypatch):
    """A block whose statistics prove a long IN list keeps the conjunct, not its text:
    formatting 20,000 members per block (per file of a merge) made scans and merges
    quadratic. ``explain`` still shows it."""
    from rcfmt.predicate import nnf

    n = 20_000
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"x": pa.array(np.arange(n), pa.int64())}), path, block_rows=500)
    shown = []
    real = nnf.InSet.__repr__
    monkeypatch.setattr(nnf.InSet, "__repr__", lambda self: shown.append(1) or real(self))
    flt = col("x").isin(list(range(n)))
    with rcfmt.open(path) as f:
        scan = f.scan(["x"], flt, use_threads=False)
        assert scan.read().num_rows == n
        assert not shown
        plan = scan.plan()
        assert sum(len(b.proven) for b in plan.blocks) == n // 500
        assert len(shown) <= 2  # (the plan's own description of the filter, not one a block)
        assert "proven by statistics" in plan.explain()


def scan_count(f, flt) -> int:
    return f.scan([], flt, use_threads=False).count()
