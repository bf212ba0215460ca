"""rcfmt.polars.scan_rcfmt: a Polars LazyFrame whose projection, predicate, row limit
and batch size reach the rcfmt scan. Every query's rows equal Polars' own on the same
data; pruning shows in the scan statistics. (tests/interop/test_polars_pushdown.py checks each
translated form against Polars on random data.)"""
from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

import rcfmt

pl = pytest.importorskip("polars")

from rcfmt.polars import scan_rcfmt, translate_predicate  # noqa: E402
from rcfmt.scan.scanner import ScanStats  # noqa: E402

N = 6000


def _table() -> pa.Table:
    i = np.arange(N)
    f = np.where(i % 13 == 0, np.nan, (i % 50) - 25.0)
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "k": pa.array([None if j % 11 == 3 else int(j % 40) for j in i], pa.int32()),
        "s": pa.array([None if j % 7 == 2 else f"v{j % 30:02d}" for j in i]),
        "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=int(j // 100)) for j in i], pa.date32()),
        "f": pa.array(f),
    })


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("pl") / "t.rcfmt"
    rcfmt.write_table(_table(), p, block_rows=1000, page_rows=250)
    return p


FILTERS = [
    lambda: pl.col("id") >= 5500,
    lambda: (pl.col("id") > 100) & (pl.col("id") <= 1200) & (pl.col("k") != 7),
    lambda: pl.lit(300) > pl.col("id"),
    lambda: pl.col("s") == "v07",
    lambda: (pl.col("s") < "v03") | pl.col("k").is_null(),
    lambda: pl.col("d") < dt.date(2024, 1, 5),
    lambda: pl.col("d").is_between(dt.date(2024, 1, 10), dt.date(2024, 1, 12), closed="left"),
    lambda: pl.lit(3) <= pl.col("k"),
    lambda: pl.col("k").is_between(3, 5) & pl.col("s").is_not_null(),
    lambda: pl.col("f") > 20.0,  # NaN rows: Polars keeps them (NaN above every number)
    lambda: (pl.col("f") < 0) & (pl.col("id") < 2000),
    lambda: pl.col("id") == pl.lit(42, pl.Int32),
    lambda: (pl.col("id") % 2 == 0) & (pl.col("id") < 50),
]


@pytest.mark.parametrize("k", range(len(FILTERS)))
def test_rows_equal_polars_on_the_same_data(path, k):
    expr = FILTERS[k]()
    want = pl.from_arrow(_table()).filter(expr).select("id", "s")
    got = scan_rcfmt(path).filter(expr).select("id", "s").collect()
    assert got.sort("id").equals(want.sort("id"))


def test_pruning_projection_and_limits(path):
    stats = ScanStats()
    got = scan_rcfmt(path, stats=stats).filter(pl.col("id") >= 5500).select("id").collect()
    assert got["id"].to_list() == list(range(5500, 6000))
    assert stats.blocks_pruned_stats == 5 and stats.rows_selected == 500
    head = scan_rcfmt(path).head(7).collect()
    assert head.equals(pl.from_arrow(_table()).head(7))
    stats = ScanStats()
    got = scan_rcfmt(path, stats=stats).filter(pl.col("f") > 20.0).collect()
    assert got.height == pl.from_arrow(_table()).filter(pl.col("f") > 20.0).height
    assert stats.rows_selected == got.height  # pushed with Polars' NaN order: NaN rows kept


@pytest.mark.parametrize("k", [0, 3, 9, 999, 1001, 5999, 7000])
@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_a_head_before_a_filter_limits_the_rows_filtered(path, k, engine):
    """``head(k).filter(p)``: Polars hands the source ``n_rows=k`` and the predicate and
    applies neither, meaning the predicate's rows among the first k (``filter(p).head(k)``
    keeps its own slice); pushable predicates or not, a slice after the filter too."""
    table = pl.from_arrow(_table())
    for expr in (FILTERS[0](), FILTERS[4](), FILTERS[9](), FILTERS[12]()):
        for query in (lambda lf: lf.head(k).filter(expr), lambda lf: lf.filter(expr).head(k),
                      lambda lf: lf.head(k).filter(expr).head(2)):
            want = query(table.lazy()).select("id", "s").collect()
            got = query(scan_rcfmt(path)).select("id", "s").collect(engine=engine)
            assert got.equals(want), (k, expr)


def test_a_predicate_polars_refuses_raises_even_when_no_row_is_left(path, tmp_path):
    """A predicate Polars refuses (is_nan of a date, a naive datetime against a column
    with a time zone) raises what Polars raises, also when the conjuncts rcfmt takes prune
    every block and no row reaches Polars."""
    for expr in ((pl.col("f") > 1000) & pl.col("d").is_nan(), (pl.col("id") > 10**6) & pl.col("d").is_nan()):
        with pytest.raises(pl.exceptions.InvalidOperationError):
            pl.from_arrow(_table()).lazy().filter(expr).collect()
        with pytest.raises(pl.exceptions.InvalidOperationError):
            scan_rcfmt(path).filter(expr).select("id").collect()
    aware = tmp_path / "tz.rcfmt"
    rcfmt.write_table(pa.table({"i": [1, 2], "t": pa.array([0, 10**6], pa.timestamp("us", "UTC"))}), aware)
    expr = (pl.col("i") > 5) & (pl.col("t") > dt.datetime(2020, 1, 1))
    with pytest.raises(pl.exceptions.PolarsError) as want:
        pl.from_arrow(rcfmt.read_table(aware)).lazy().filter(expr).collect()
    with pytest.raises(type(want.value)):
        scan_rcfmt(aware).filter(expr).collect()


def test_a_column_named_like_a_struct_path_is_filtered_by_polars_name(tmp_path):
    """A top-level column "a.b" beside a struct "a" with a field "b": rcfmt's own filters
    refuse the name as ambiguous, but in Polars it names the column only; such a
    predicate is left to Polars, with Polars' rows."""
    t = pa.table({"a.b": [1, 2, 3], "a": pa.array([{"b": 10}, {"b": 20}, {"b": 30}])})
    rcfmt.write_table(t, tmp_path / "t.rcfmt")
    for expr in (pl.col("a.b") > 1, (pl.col("a.b") > 1) & (pl.col("a.b") < 3), pl.col("a").struct.field("b") > 15):
        want = pl.from_arrow(t).filter(expr)
        assert scan_rcfmt(tmp_path / "t.rcfmt").filter(expr).collect().equals(want), expr


def test_translation_is_exact_or_absent():
    schema = _table().schema
    f_gt_1 = (rcfmt.col("f") > 1.0) | rcfmt.col("f").is_nan()  # NaN is above every number in Polars
    assert repr(translate_predicate(pl.col("f") > 1.0, schema)) == repr(f_gt_1)
    opaque = pl.col("id") % 2 == 0
    assert repr(translate_predicate(opaque & (pl.col("id") < 5), schema)) == repr(rcfmt.col("id") < 5)
    assert translate_predicate(opaque | (pl.col("id") < 5), schema) is None
    assert translate_predicate(~(opaque & (pl.col("id") < 5)), schema) is None  # never ~(id < 5) alone
    assert translate_predicate(pl.col("id") == "x", schema) is None  # a literal of another kind
    assert translate_predicate(pl.col("nope") == 1, schema) is None


def test_an_exact_translation_is_not_filtered_again(path, monkeypatch):
    """A predicate translated whole selects Polars' rows in the scan: Polars does not
    filter them again; one with a part left to Polars is filtered by Polars. (Polars
    asks the source for the predicate's columns either way.)"""
    from rcfmt.file.reader import RcfmtFile
    from rcfmt.polars import translate

    schema = _table().schema
    assert translate((pl.col("k") > 3) & pl.col("s").is_not_null(), schema).exact
    assert not translate((pl.col("id") % 2 == 0) & (pl.col("k") > 3), schema).exact
    assert not translate(pl.col("id") % 2 == 0, schema).exact
    scanned = []
    real = RcfmtFile.scan

    def spy(self, columns=None, filter=None, **kw):
        scanned.append(list(columns))
        return real(self, columns, filter, **kw)

    monkeypatch.setattr(RcfmtFile, "scan", spy)
    monkeypatch.setattr(pl.DataFrame, "filter", lambda *a, **k: pytest.fail("Polars filtered again"))
    table = pl.from_arrow(_table())
    exact = (pl.col("k") > 3) & pl.col("s").is_not_null()
    got = scan_rcfmt(path).filter(exact).select("id").collect()
    assert sorted(scanned[-1]) == ["id", "k", "s"]
    monkeypatch.undo()
    assert got["id"].to_list() == table.filter(exact)["id"].to_list()
    filtered = []
    real_filter = pl.DataFrame.filter
    monkeypatch.setattr(pl.DataFrame, "filter", lambda df, *a, **k: filtered.append(1) or real_filter(df, *a, **k))
    partial = (pl.col("id") % 2 == 0) & (pl.col("k") > 3)
    got = scan_rcfmt(path).filter(partial).select("s").collect()
    assert filtered and got["s"].to_list() == table.filter(partial)["s"].to_list()


def test_datasets(tmp_path):
    table = _table()
    rcfmt.write_dataset(table, tmp_path / "ds", target_file_rows=2000)
    stats = ScanStats()
    got = scan_rcfmt(tmp_path / "ds", stats=stats).filter(pl.col("id") < 100).collect()
    assert got.sort("id").equals(pl.from_arrow(table).filter(pl.col("id") < 100))
    assert stats.files_pruned == 2


DUCKDB_FILTERS = [  # (rcfmt filter given to the scan, the same filter in DuckDB's SQL)
    (rcfmt.col("id") >= 5500, "id >= 5500"),
    ((rcfmt.col("k") != 7) & (rcfmt.col("id") < 1200), "k <> 7 AND id < 1200"),
    (rcfmt.col("s").isin(["v07", "v11"]), "s IN ('v07', 'v11')"),
    (rcfmt.col("s").startswith("v1") | rcfmt.col("k").is_null(), "s LIKE 'v1%' OR k IS NULL"),
    (rcfmt.col("d").between(dt.date(2024, 1, 10), dt.date(2024, 1, 12)), "d BETWEEN DATE '2024-01-10' AND DATE '2024-01-12'"),
    (rcfmt.col("f") < 0, "f < 0"),  # NaN: neither rcfmt nor DuckDB (NaN is above every number) selects it
]


@pytest.mark.parametrize("k", range(len(DUCKDB_FILTERS)))
def test_duckdb_over_a_pruned_scan_equals_duckdb(path, k):
    """The DuckDB way: the filter goes to the rcfmt scan, DuckDB reads its pruned Arrow
    stream and applies the same WHERE on top; same rows as DuckDB on the whole table."""
    duckdb = pytest.importorskip("duckdb")
    rc_filter, where = DUCKDB_FILTERS[k]
    whole = _table()
    con = duckdb.connect()
    want = con.execute(f"SELECT id FROM whole WHERE {where} ORDER BY id").fetchall()
    with rcfmt.open(path) as f:
        scan = f.scan(columns=["id", "k", "s", "d", "f"], filter=rc_filter)
        got = con.execute(f"SELECT id FROM scan WHERE {where} ORDER BY id").fetchall()
        assert got == want and len(want) > 0
        assert scan.stats.rows_selected == len(want)  # the scan alone already selected exactly these


@pytest.mark.parametrize("limit", [1, 333, 1500, 5999, 10_000])
def test_small_batches_are_handed_over_together_in_order(path, limit):
    """A selective scan's small per-block batches reach Polars grouped (up to the batch
    size): rows stay in file order and a row limit cuts at the same row."""
    expr = (pl.col("id") % 3 == 0) & (pl.col("id") >= 10)
    want = pl.from_arrow(_table()).filter(expr).head(limit)
    got = scan_rcfmt(path).filter(expr).head(limit).collect()
    assert got.equals(want)
    assert scan_rcfmt(path).filter(expr).select("s").collect().equals(pl.from_arrow(_table()).filter(expr).select("s"))


def test_string_columns_as_categoricals(tmp_path):
    """``categorical=``: the columns arrive as Polars Categorical holding the same
    strings (NULLs kept) across blocks with their own dictionaries and a block stored
    without one; projections, limits and pushed predicates work on them; a group-by
    gives Polars' own answer."""
    table = _table().append_column("t", pa.array([f"w{j % 4}" if j < 4000 else f"x{j}" for j in range(N)]))
    p = tmp_path / "c.rcfmt"
    rcfmt.write_table(table, p, block_rows=1000, page_rows=250)
    with rcfmt.open(p) as f:  # (the last blocks' "t" are too distinct for a dictionary)
        assert {int(e) for e in f.footer.chunks[f.schema.get_field_index("t")]["encoding"]} > {1}
    frame = pl.from_arrow(table)
    as_cat = frame.with_columns(pl.col("s", "t").cast(pl.Categorical))
    for categorical in (True, ["s", "t"]):
        lf = scan_rcfmt(p, categorical=categorical)
        assert lf.collect_schema()["s"] == pl.Categorical and lf.collect_schema()["id"] == pl.Int64
        assert lf.collect().equals(as_cat)
    lf = scan_rcfmt(p, categorical=["s"])
    assert lf.collect_schema()["t"] == pl.String
    stats = ScanStats()
    got = scan_rcfmt(p, categorical=["s"], stats=stats).filter(pl.col("s") == "v07").select("id", "s").collect()
    assert got.equals(as_cat.filter(pl.col("s") == "v07").select("id", "s"))
    assert stats.rows_selected == got.height  # pushed: the scan selected exactly Polars' rows
    assert lf.head(5).collect().equals(as_cat.with_columns(pl.col("t").cast(pl.String)).head(5))
    agg = lambda f: f.group_by("s").agg(pl.col("k").sum()).sort("s").with_columns(pl.col("s").cast(pl.String))  # noqa: E731
    assert agg(lf).collect().equals(agg(frame.lazy()).collect())


def test_categoricals_of_a_dataset(tmp_path):
    """A dataset: stored string columns and a string partition column as Categorical,
    files pruned as before."""
    table = _table().append_column("part", pa.array(["a" if j < 3000 else "b" for j in range(N)]))
    rcfmt.write_dataset(table, tmp_path / "ds", partition_by=["part"], target_file_rows=2000)
    want = pl.from_arrow(table).with_columns(pl.col("s", "part").cast(pl.Categorical))
    stats = ScanStats()
    lf = scan_rcfmt(tmp_path / "ds", categorical=True, stats=stats)
    got = lf.filter(pl.col("id") < 100).collect()
    assert got.select(sorted(got.columns)).sort("id").equals(want.filter(pl.col("id") < 100).select(sorted(want.columns)))
    assert stats.files_pruned >= 2
    got = scan_rcfmt(tmp_path / "ds", categorical=["part"]).filter(pl.col("part") == "b").select("id", "part").collect()
    assert got.sort("id").equals(want.filter(pl.col("part") == "b").select("id", "part"))


def test_bad_categorical_options_are_refused(path, tmp_path):
    from rcfmt.errors import InvalidOptionError

    for bad in ("s", ["k"], ["nope"], 3):
        with pytest.raises(InvalidOptionError):
            scan_rcfmt(path, categorical=bad)
    rcfmt.write_dataset(_table(), tmp_path / "ds")
    ds = rcfmt.dataset(tmp_path / "ds")
    for bad in (["k"], ["s"], "s"):
        with pytest.raises(InvalidOptionError):
            ds.scan(columns=["id", "k"], read_dictionary=bad)
    nested = pa.table({"id": [1, 2], "st": pa.array([{"x": "a"}, {"x": "b"}])})
    rcfmt.write_dataset(nested, tmp_path / "nested")
    with pytest.raises(InvalidOptionError, match="top-level"):  # a path under a struct: not a column of its own
        rcfmt.dataset(tmp_path / "nested").scan(columns=["id", "st.x"], read_dictionary=["st.x"])


def test_types_polars_holds_otherwise_are_handed_over_exactly(tmp_path):
    """decimal256 (up to 38 digits), decimals of negative scale, zero-width fixed-size
    binary, the same inside structs and lists, and extension types (one whose instances
    cannot be hashed too): handed to Polars in a
    type that holds every value (decimal128, decimal(p + k, 0), binary), with predicates
    pushed on them selecting Polars' rows; a decimal of more digits than Polars holds is
    refused with rcfmt's UnsupportedError when the LazyFrame is made (Polars would panic
    at the collect)."""
    import decimal

    from rcfmt.errors import UnsupportedError

    D = decimal.Decimal
    n = 40
    big = [None if i % 9 == 4 else D(i * 37 - 700).scaleb(-2) for i in range(n)]
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "d256": pa.array(big, pa.decimal256(20, 2)),
        "neg": pa.array([None if i % 7 == 1 else D((i - 20) * 100) for i in range(n)], pa.decimal64(5, -2)),
        "fsb0": pa.array([None if i % 5 == 0 else b"" for i in range(n)], pa.binary(0)),
        "st": pa.array([{"a": v} for v in big], pa.struct([("a", pa.decimal256(20, 2))])),
        "li": pa.array([None if v is None else [v, v] for v in big], pa.list_(pa.decimal256(20, 2))),
        "u": pa.ExtensionArray.from_storage(pa.uuid(), pa.array([bytes([i]) * 16 for i in range(n)], pa.binary(16))),
    })
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=16, page_rows=4)
    got = scan_rcfmt(path).collect()
    assert got.schema["d256"] == pl.Decimal(20, 2) and got.schema["neg"] == pl.Decimal(7, 0)
    assert got.schema["fsb0"] == pl.Binary and got.schema["li"] == pl.List(pl.Decimal(20, 2))
    back = rcfmt.read_table(path)
    for name in ("d256", "neg", "fsb0", "st", "li"):
        assert got[name].to_list() == back.column(name).to_pylist(), name
    assert got["u"].to_list() == [bytes([i]) * 16 for i in range(n)]
    frame = got
    for pred in (pl.col("d256") > D("-1.00"), pl.col("d256").is_between(D("-3.00"), D("2.50")),
                 pl.col("neg") >= 500, ~(pl.col("neg") < -300) & pl.col("d256").is_null(),
                 pl.col("fsb0").is_null()):
        stats = ScanStats()
        rows = scan_rcfmt(path, stats=stats).filter(pred).collect()
        want = frame.filter(pred)
        assert rows.equals(want), pred
        assert stats.rows_selected == want.height, pred  # pushed, exactly
    from schema.test_arrow_types import Tagged  # (an extension type its instances cannot be hashed)

    tagged = tmp_path / "tagged.rcfmt"
    rcfmt.write_table(pa.table({"t": pa.ExtensionArray.from_storage(Tagged("a\x00b"), pa.array([1, None, 3]))}), tagged)
    assert scan_rcfmt(tagged).collect()["t"].to_list() == [1, None, 3]
    wide = tmp_path / "wide.rcfmt"
    rcfmt.write_table(pa.table({"x": pa.array([D(1)], pa.decimal256(39, 0))}), wide)
    with pytest.raises(UnsupportedError, match="'x' is decimal256"):
        scan_rcfmt(wide)
