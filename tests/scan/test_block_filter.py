"""The filter in the native block executor (rcfmt/_native/block.pyx ``Filter``,
rcfmt/scan/block_exec.py ``BlockFilter``): a block whose rows are all candidates has its
filter columns decoded and its conjuncts evaluated into one mask in one native call.

Checked against the independent oracle (tests/oracle_filter.py, pyarrow.compute and
plain Python), on every type the executor filters natively (ints, floats, dates,
timestamps, 16-byte decimals, strings and binary with long common prefixes), NULLs in
every column, dictionary and plain chunks, NOT over every leaf kind, and with the
short cut a mask that is already empty takes."""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
from oracle_filter import filter_table
from rcfmt import col
from rcfmt.errors import ChecksumError
from rcfmt.scan.block_exec import BlockFilter
from rcfmt.predicate.evaluate import block_predicate, column_conjuncts
from rcfmt.predicate.expr import And, Not
from strategies import examples
from strategies_expr import BYTES_TYPES, DECIMAL_TYPES, FLOAT_TYPES, INT_TYPES, TEMPORAL_TYPES, leaves, tables

SETTINGS = settings(max_examples=examples(120), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])
TYPES = [*INT_TYPES, *FLOAT_TYPES, *TEMPORAL_TYPES[:3], *DECIMAL_TYPES, *BYTES_TYPES, pa.bool_()]


@st.composite
def conjunctions(draw):
    """A table and a conjunction of leaves, each maybe negated (NOT reaches the leaves)."""
    data = draw(tables(types=TYPES, min_rows=1, max_rows=80, max_columns=3))
    parts = draw(st.lists(leaves(data), min_size=1, max_size=4))
    parts = [Not(p) if draw(st.booleans()) else p for p in parts]
    options = dict(block_rows=draw(st.integers(1, 40)), page_rows=draw(st.integers(1, 16)),
                   dictionary=draw(st.booleans()), compression=draw(st.sampled_from(["none", "zstd"])))
    table = data.table
    if draw(st.booleans()):  # sorted: the page index narrows the candidates (decided natively too)
        table = table.sort_by([(table.column_names[0], "ascending")])
    return table, parts[0] if len(parts) == 1 else And.of(*parts), options, draw(st.booleans())


def _scan(path, expr, columns=None, page_index=False):
    """A scan whose blocks are decided by the native filter: over every row (no page
    index), or over the candidates the page index leaves when they are as many as the
    chunks' pages. Blocks whose statistics prove the filter would skip it
    (tests/scan/test_prune.py): here every block is decided by the native filter."""
    f = rcfmt.open(path)
    scan = f.scan(columns, filter=expr, use_page_index=page_index, use_threads=False)
    scan._planner._proven = {}  # (none proven: every kept block reaches the executor's filter)
    return scan


@SETTINGS
@given(case=conjunctions())
def test_native_filter_matches_the_oracle(tmp_path_factory, case):
    table, expr, options, page_index = case
    path = tmp_path_factory.mktemp("block_filter") / "t.rcfmt"
    rcfmt.write_table(table, path, bloom_filter_columns=None, bitmap_indexes=None, **options)
    expected = filter_table(table, expr)
    scan = _scan(path, expr, page_index=page_index)
    got = scan.read()
    if scan.blocks and not page_index:  # (blocks pruned by stats or pages never reach the executor)
        assert [type(f) for f in scan._planner.programs._filters.values()] == [BlockFilter]
    assert got.num_rows == expected.num_rows
    for name in table.column_names:
        a, b = got.column(name).combine_chunks(), expected.column(name).combine_chunks()
        if pa.types.is_floating(a.type):  # NaN equals NaN here
            a, b = a.view(pa.int64() if a.type == pa.float64() else pa.int32()), b.view(
                pa.int64() if b.type == pa.float64() else pa.int32())
        assert a.equals(b), name
    assert _scan(path, expr, [], page_index).count() == expected.num_rows


def test_every_leaf_kind_is_taken_natively(tmp_path):
    """What block_predicate takes: comparisons and sets on values, bytes and 16-byte
    decimals, null checks on any type; prefixes, NaN checks and bools stay with Arrow."""
    schema = pa.schema([("i", pa.int32()), ("s", pa.string()), ("d", pa.decimal128(20, 2)), ("f", pa.float64()),
                        ("b", pa.bool_())])
    columns = {n: pa.nulls(1, t) for n, t in zip(schema.names, schema.types)}
    columns["f"] = pa.array([float("nan")])  # (in a file without NaN, is_nan is a constant: taken natively)
    rcfmt.write_table(pa.table(columns), tmp_path / "t.rcfmt")
    f = rcfmt.open(tmp_path / "t.rcfmt")
    cases = {
        (col("i") > 3) & (col("i") != 7) & col("i").isin([1, 5, 9]): ("i", "values", 3),
        (col("s") >= "ab") & (col("s") != "abc") & col("s").isin(["abd", "b"]): ("s", "bytes", 3),
        (col("d") >= decimal.Decimal("1.5")) & (col("d") < 10): ("d", "decimal", 2),
        col("b").is_valid(): ("b", "nulls", 1),
    }
    for expr, (name, kind, taken) in cases.items():
        scan = f.scan(filter=expr)
        leaves = column_conjuncts(scan.nnf)[name]
        spec, ids = block_predicate(leaves, f.footer.columns[f.column_index(name)].type)
        assert spec[0] == kind and len(ids) == taken
    for expr, name in [(col("s").startswith("a"), "s"), (col("f").is_nan(), "f"), (col("b") == True, "b")]:  # noqa: E712
        scan = f.scan(filter=expr)
        assert block_predicate(column_conjuncts(scan.nnf)[name], f.footer.columns[f.column_index(name)].type) is None


def test_prefixes_nulls_and_wide_decimals(tmp_path):
    """Long common prefixes on both sides of a bound, NULL rows of every filter column,
    decimals beyond int64 (PLAIN 16-byte values) and BITPACK decimals (int64 words)."""
    rng = np.random.default_rng(5)
    n = 3000
    stems = ["prefix" * 20 + s for s in ["", "a", "aa", "ab", "b", "\u00e9", "\U0001f600"]]
    nulls = rng.random(n) < 0.2
    table = pa.table({
        "s": pa.array([stems[i] for i in rng.integers(0, len(stems), n)], mask=nulls),
        "small": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-500, 500, n)],
                          pa.decimal128(9, 2)),
        "wide": pa.array([decimal.Decimal(int(v)) * 10**25 for v in rng.integers(-5, 5, n)], pa.decimal128(38, 0)),
        "i": pa.array(rng.integers(0, 50, n), mask=rng.random(n) < 0.3),
    })
    exprs = [
        (col("s") > stems[2]) & (col("s") <= stems[4]),
        (col("s") < stems[0] + "a") & col("s").is_valid(),
        col("s").isin([stems[1], stems[5], "nowhere"]) & ~(col("i") == 3),
        ~col("s").isin([stems[1], None]),
        (col("small") >= decimal.Decimal("-1.5")) & (col("small") < 2) & (col("wide") > 0),
        (col("wide") == decimal.Decimal(3) * 10**25) | col("i").is_null(),
        col("i").is_null() & (col("s") == stems[3]),
        ~((col("i") >= 10) & (col("i") < 40)),
    ]
    for dictionary in (True, False):
        path = tmp_path / f"t{dictionary}.rcfmt"
        rcfmt.write_table(table, path, block_rows=1000, page_rows=128, dictionary=dictionary)
        for expr in exprs:
            assert _scan(path, expr).read().equals(filter_table(table, expr)), (dictionary, expr)
            assert _scan(path, expr, []).count() == filter_table(table, expr).num_rows


def test_an_empty_mask_skips_the_columns_left(tmp_path):
    """Once no row is TRUE the other filter columns of the block are not decoded: a
    damaged page there goes unseen, and the answer is still exact."""
    n = 4000
    a = np.zeros(n, np.int64)
    a[0] = 2  # (stats cannot prune "a == 1")
    table = pa.table({"a": a, "b": np.arange(n, dtype=np.int64)})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=n, page_rows=500, compression="none", bloom_filter_columns=None)
    f = rcfmt.open(path)
    entries = f.page_index(0, f.column_index("b"))
    data = bytearray(path.read_bytes())
    data[int(entries["offset"][3]) + int(entries["length"][3]) - 1] ^= 0x40
    path.write_bytes(bytes(data))
    expr = (col("a") == 1) & (col("b") >= 0)  # "a" decides: no row
    assert _scan(path, expr).read().num_rows == 0
    with pytest.raises(ChecksumError) as info:  # a mask with rows left: "b" is decoded, its damage found
        _scan(path, (col("a") == 0) & (col("b") >= 0)).read()
    assert info.value.column == "b" and info.value.block == 0


def _spy_on_filters(monkeypatch, note):
    """Call ``note(filter, selected rows)`` on every native filter call: the mask alone
    (:meth:`BlockFilter.run`) or the rows it picks (:meth:`BlockFilter.select`)."""
    for name in ("run", "select"):
        original = getattr(BlockFilter, name)

        def spy(self, read, *rest, _original=original):
            note(self, read.selected)
            return _original(self, read, *rest)

        monkeypatch.setattr(BlockFilter, name, spy)


def test_candidates_nearly_every_row_are_filtered_as_every_row(tmp_path, monkeypatch):
    """An IN-list whose members fall in 19 of a block's 20 pages: the filter runs on
    every row of the whole chunks (no candidate list), with the same answer; rows that
    ``take`` asks for or a deletion vector removes stay a list, and stay out."""
    n = 10_000
    table = pa.table({"k": np.arange(n, dtype=np.int64) * 3, "v": np.arange(n) * 0.5})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=n, page_rows=500, bloom_filter_columns=None, bitmap_indexes=None)
    members = [int(k) for k in range(3, 3 * n, 3 * 97)][:-3]  # every page but the last
    expr = col("k").isin(members)
    seen = []
    _spy_on_filters(monkeypatch, lambda self, selected: seen.append(None if selected is None else len(selected)))
    with rcfmt.open(path) as f:
        got = f.scan(["k", "v"], filter=expr, use_threads=False, with_row_position=True).read()
    want = filter_table(table, expr)
    assert got.select(["k", "v"]).equals(want.select(["k", "v"]))
    assert got.column("_row_position").to_pylist() == [k // 3 for k in want.column("k").to_pylist()]
    assert seen == [None]
    root = str(tmp_path / "d")
    ds = rcfmt.write_dataset(table, root, block_rows=n, page_rows=500, bloom_filter_columns=None,
                             bitmap_indexes=None)
    gone = list(range(0, 3 * n, 36))  # every 12th row: more than deferred deletes (1/16), fewer than 1/10
    ds = ds.delete(col("k").isin(gone))
    every = col("k").isin(members + gone[::7])  # every page, some deleted rows
    seen.clear()
    left = filter_table(table, every & ~col("k").isin(gone)).select(["k", "v"])
    assert ds.read(["k", "v"], every).equals(left)
    assert seen and None not in seen
    seen.clear()
    kept = [k for k in table.column("k").to_pylist() if k % 36]
    positions = [0, 5, 33, 1000, 4999]
    assert ds.take(positions).column("k").to_pylist() == [kept[p] for p in positions]


def test_candidates_the_page_index_leaves_are_decided_natively(tmp_path, monkeypatch):
    """Sorted data: the page index leaves a few pages of the block; the filter columns
    are decoded at those candidate rows only (the pages holding them: R_PAGES) and the
    conjuncts evaluated there, natively."""
    n = 8000
    rng = np.random.default_rng(2)
    table = pa.table({"k": np.arange(n, dtype=np.int64), "s": pa.array(rng.choice(["a", "b", "c"], n)),
                      "v": rng.standard_normal(n)})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=n, page_rows=500, bloom_filter_columns=None)
    seen = []
    _spy_on_filters(monkeypatch, lambda self, selected: seen.append(None if selected is None else len(selected)))
    expr = (col("k") >= 1200) & (col("k") < 2600) & (col("s") == "b")
    with rcfmt.open(path) as f:
        scan = f.scan(["k", "v"], filter=expr, use_threads=False)
        got = scan.read()
    assert got.equals(filter_table(table, expr).select(["k", "v"]))
    assert seen == [2000]  # pages 2-5 of 16: rows 1000..2999
    assert scan.stats.pages_read == 3 * 4  # k, s and v: those four pages each, not their chunks


def test_a_residual_the_bitmap_index_leaves_is_decided_natively(tmp_path, monkeypatch):
    """A bitmap index decides ``flag`` and narrows the block to its rows; the residual
    conjuncts on the other columns (NULLs, NOT) are evaluated by the executor at those
    rows only (pages holding them), with the oracle's answer, rows and count."""
    n = 20_000
    rng = np.random.default_rng(7)
    flag = np.where(rng.random(n) < 0.02, "rare", "common")
    table = pa.table({"flag": flag, "v": pa.array(rng.standard_normal(n), mask=rng.random(n) < 0.1),
                      "k": rng.integers(0, 100, n)})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=10_000, page_rows=1000, bitmap_indexes={"flag": "equality"},
                      bloom_filter_columns=None)
    seen = []
    _spy_on_filters(monkeypatch, lambda self, selected: seen.append((tuple(sorted(self.names)),
                                                                     None if selected is None else len(selected))))
    expr = (col("flag") == "rare") & (col("v") < 0.5) & ~col("k").isin([3, 4, 5])
    with rcfmt.open(path) as f:
        scan = f.scan(["k", "v"], filter=expr, use_threads=False)
        got = scan.read()
        assert scan.stats.rows_selected_index == 0  # (narrowed, not answered)
        assert f.scan([], filter=expr).count() == got.num_rows
    expected = filter_table(table, expr).select(["k", "v"])
    assert got.equals(expected)
    rare = [int(np.count_nonzero(flag[b * 10_000:(b + 1) * 10_000] == "rare")) for b in range(2)]
    # the rows, then the threaded count (its blocks in any order)
    assert seen[:2] == [(("k", "v"), rare[0]), (("k", "v"), rare[1])]
    assert sorted(seen[2:]) == sorted(seen[:2])


def _compact_table(n: int, rng) -> pa.Table:
    nulls = rng.random(n) < 0.2
    return pa.table({
        "k": np.arange(n, dtype=np.int64),
        "x": rng.random(n),
        "i": pa.array(rng.integers(-50, 50, n), pa.int64(), mask=nulls),
        "dec": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**6, 10**6, n)],
                        pa.decimal128(15, 2), mask=rng.random(n) < 0.1),
        "b": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
        "s": pa.array([f"prefix-{v:05d}" for v in rng.integers(0, 40, n)], mask=rng.random(n) < 0.15),
        "bin": pa.array([bytes([v % 7]) * int(v % 5) for v in rng.integers(0, 100, n)], pa.binary()),
        "d": pa.array(rng.integers(0, 20000, n).astype(np.int32), pa.date32()),
    })


@pytest.mark.parametrize("encoding", [None, {"i": "bitpack", "dec": "bitpack", "d": "bitpack", "s": "plain"},
                                      {"i": "plain", "dec": "plain", "d": "delta", "s": "dictionary",
                                       "bin": "dictionary"},
                                      {"i": "dictionary", "dec": "dictionary", "d": "dictionary", "s": "plain"}])
def test_projected_filter_columns_come_compacted_from_the_native_call(tmp_path, monkeypatch, encoding):
    """A filter every leaf of which the executor decides: the rows it selects are picked
    in the same native call, and the projected filter columns are returned at those rows
    only (values, NULLs -- is_null keeps them --, bools packed after, BITPACK decimals
    widened after, strings and binary moved, dictionary chunks as their values -- or as
    codes with the dictionary, for read_dictionary), over every row of a block and over
    the candidates the page index leaves: equal to the oracle's rows, with no gather in
    Python."""
    from rcfmt.scan import executor

    n = 6000
    table = _compact_table(n, np.random.default_rng(11))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=2500, page_rows=300, encoding=encoding, bloom_filter_columns=None)
    monkeypatch.setattr(executor, "gather_data", lambda *a: pytest.fail("gathered in Python"))
    picks = []
    original = BlockFilter.select

    def select(self, *args, **kwargs):
        got = original(self, *args, **kwargs)
        picks.append(got[0])
        return got

    monkeypatch.setattr(BlockFilter, "select", select)
    filters = [(col("k") >= 300) & (col("k") < 2100) & (col("x") < 0.5),  # page-index candidates
               (col("x") > 0.3) & (col("i") != 3),
               col("s").is_null() & (col("x") < 0.8),
               col("i").is_null(),  # (nulls kept: the validity of what is returned is all null)
               col("dec").is_valid() & (col("dec") > decimal.Decimal("-2000.00")) & col("b").is_valid(),
               (col("s") >= "prefix-00020") & ~col("bin").isin([b"", b"\x01"]) & (col("d") < 15000),
               col("i").is_null() & (col("i") > 0) & (col("s") == "prefix-00001")]  # (no row: the short cut)
    for expr in filters:
        for columns in (None, ["s", "i", "k"], ["x"]):
            picks.clear()
            expected = filter_table(table, expr)
            with rcfmt.open(path) as f:
                got = f.scan(columns, filter=expr, use_threads=False).read()
            want = expected if columns is None else expected.select(columns)
            assert got.equals(want), (expr, columns)
            assert picks, expr  # the native call picked the rows
            for rows, starts, ends in picks:  # the runs are those of the rows
                assert np.array_equal(np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)] or [[]]),
                                      rows)
        # read_dictionary: the filter's dictionary chunks come compacted as codes, the dictionary kept
        with rcfmt.open(path) as f:
            got = f.scan(["s", "i", "bin"], filter=expr, read_dictionary=["s", "i"], use_threads=False).read()
        assert got.schema.field("s").type == pa.dictionary(pa.int32(), pa.string())
        assert got.schema.field("i").type == pa.dictionary(pa.int32(), pa.int64())
        assert got.cast(expected.select(["s", "i", "bin"]).schema).equals(expected.select(["s", "i", "bin"])), expr


def test_the_projection_is_decoded_in_the_filters_call_when_its_chunks_are_few_bytes(tmp_path, monkeypatch):
    """A block whose filter the executor decides wholly and whose candidates are read in
    whole chunks has its projected columns decoded in the same call at the rows the
    filter picked (every kind: fixed, NULLs, bools, strings, binary, decimals, dictionary
    chunks, read_dictionary's codes) when their chunks hold at most FUSED_BYTES times the
    filter's bytes; a projection of more bytes keeps its own call, reading only the pages
    holding a picked row. Both give the oracle's rows."""
    from rcfmt.scan import programs

    n = 6000
    table = _compact_table(n, np.random.default_rng(5))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=3000, page_rows=300, bloom_filter_columns=None,
                      encoding={"i": "dictionary", "d": "bitpack", "s": "dictionary"})
    calls = []
    original = BlockFilter.select

    def select(self, *args, **kwargs):
        calls.append(list(self.then))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(BlockFilter, "select", select)
    with rcfmt.open(path) as f:
        ids = {name: f.column_index(name) for name in table.column_names}
    wide = ["x", "i", "dec", "s", "bin", "d", "k"]  # (far more bytes than the bools' chunk)
    for expr, columns, then in [  # (then: the projected columns decoded in the filter's call)
        ((col("x") < 0.3) & (col("dec") > decimal.Decimal("-5000.00")) & (col("bin") != b""), ["i", "s", "k"],
         ["i", "s", "k"]),
        (col("b").is_null(), wide, []),
        ((col("s") >= "prefix-00010") & (col("x") > 0.2) & col("i").is_valid(), ["b", "d", "bin", "k", "s"],
         ["b", "d", "bin", "k"]),
    ]:
        for read_dictionary in (None, ["s", "i"]):
            calls.clear()
            with rcfmt.open(path) as f:
                got = f.scan(columns, filter=expr, read_dictionary=read_dictionary, use_threads=False).read()
            want = filter_table(table, expr).select(columns)
            assert got.cast(want.schema).equals(want), (expr, columns, read_dictionary)
            assert calls and all(t == [ids[c] for c in then] for t in calls), (expr, calls)
    assert programs.FUSED_BYTES == 2


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), dtype=st.sampled_from(["int8", "int32", "int64", "uint16", "uint64"]))
def test_large_in_sets_cut_to_a_files_bounds_select_what_the_oracle_does(tmp_path_factory, data, dtype):
    """An IN-set of more than NARROW_MEMBERS integers is cut to each file's bounds before
    the executor builds its bitset: the rows selected are still exactly the oracle's,
    with members below, inside and above the file's values, NULLs and every block."""
    from rcfmt.scan.block_exec import NARROW_MEMBERS

    info = np.iinfo(dtype)
    lo = data.draw(st.integers(int(info.min), int(info.max) - 200))
    values = data.draw(st.lists(st.one_of(st.none(), st.integers(lo, lo + 200)), min_size=1, max_size=300))
    members = data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=NARROW_MEMBERS + 1,
                                 max_size=400) | st.lists(st.integers(lo - 50 if lo - 50 >= info.min else lo, lo + 250),
                                                          min_size=NARROW_MEMBERS + 1, max_size=400))
    members = [m for m in members if info.min <= m <= info.max]
    t = pa.table({"x": pa.array(values, getattr(pa, dtype)())})
    path = tmp_path_factory.mktemp("inset") / "f.rcfmt"
    rcfmt.write_table(t, path, block_rows=64, page_rows=16)
    expr = col("x").isin(members)
    got = rcfmt.read_table(path, filter=expr)
    assert got.equals(filter_table(t, expr)), (len(members), lo)
    assert rcfmt.read_table(path, filter=~expr).equals(filter_table(t, ~expr))


def test_a_filter_is_compiled_once_per_scan_and_each_block_gets_one_read(tmp_path, monkeypatch):
    """The bound filter becomes native filters when the scan first needs them, not per
    block: whatever the plan's mode (the rows picked natively, the projection decoded in
    the same call, an OR tree evaluated after the mask), a scan of 4 or of 16 blocks
    builds at most two BlockFilters (the filter, and the filter with the projection
    decoded in its call) and asks ``block_predicate`` at most once per filter column for
    each; each native call gets one BlockRead for its block; the rows are the oracle's.
    (No index: a bitmap index leaves a residual filter of its own, compiled once too. Counted
    on one thread: threads racing to build a program build equal ones; a threaded scan
    gives the same rows.)"""
    from rcfmt.predicate import evaluate
    from rcfmt.scan import block_exec

    rng = np.random.default_rng(8)
    n = 16 * 400
    table = pa.table({"a": rng.integers(0, 1000, n), "b": pa.array(rng.choice(["x", "yy", "zzz", None], n)),
                      "c": rng.random(n), "d": rng.integers(0, 9, n).astype(np.int16)})
    for rows in (4 * 400, n):
        rcfmt.write_table(table.slice(0, rows), tmp_path / f"{rows}.rcfmt", block_rows=400, page_rows=100,
                          bloom_filter_columns=None, bitmap_indexes=None)
    made, asked, reads = [], [], []
    real_init, real_predicate, real_decode = BlockFilter.__init__, evaluate.block_predicate, \
        block_exec.BlockColumns.decode

    def init(self, *a, **k):
        made.append(1)
        real_init(self, *a, **k)

    def predicate(*a, **k):
        asked.append(1)
        return real_predicate(*a, **k)

    def decode(self, read, *a, **k):
        assert isinstance(read, block_exec.BlockRead)
        reads.append(read.block)
        return real_decode(self, read, *a, **k)

    monkeypatch.setattr(BlockFilter, "__init__", init)
    monkeypatch.setattr(evaluate, "block_predicate", predicate)
    monkeypatch.setattr(block_exec.BlockColumns, "decode", decode)
    filters = [(col("a") > 100) & (col("b") != "x"),  # decided natively: rows picked in the call
               (col("a") < 900) | (col("c") < 0.5),  # an OR tree: the mask, then eval_nnf
               (col("d") != 3) & ~col("b").isin(["yy", "zzz"])]
    for expr, filter_columns in zip(filters, (2, 2, 2)):
        for columns in (None, ["c"], ["a", "d"]):
            for rows in (4 * 400, n):
                with rcfmt.open(tmp_path / f"{rows}.rcfmt") as f:
                    threaded = f.scan(columns, filter=expr, use_threads=True).read()
                    made.clear(), asked.clear(), reads.clear()  # (counted on one thread: racing threads build alike)
                    got = f.scan(columns, filter=expr, use_threads=False).read()
                assert threaded.equals(got)
                want = filter_table(table.slice(0, rows), expr)
                assert got.equals(want.select(got.column_names)), (expr, columns, rows)
                assert sorted(set(reads)) == list(range(rows // 400)), (expr, columns, rows)
                assert 1 <= len(made) <= 2 and len(asked) <= len(made) * filter_columns, (expr, columns, rows)
