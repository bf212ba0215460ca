"""Bitmap indexes in datasets: files written by write_dataset, appends and optimize keep
them, scans and count_rows use them, and results match a brute-force filter."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import rcfmt
from oracle_filter import filter_table
from rcfmt import col


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "mode": pa.array(rng.choice(["AIR", "MAIL", "SHIP", "RAIL"], n)),
        "flag": pa.array(rng.choice(["A", "N", "R"], n)),
        "qty": pa.array(rng.integers(1, 51, n), pa.int32()),
        "payload": pa.array(rng.integers(0, 1 << 62, n)),
    })


def _indexed_columns(ds) -> set[str]:
    out = set()
    for info in ds.files:
        with rcfmt.open(info.path) as f:
            out |= {f.footer.columns[c].name for c in f.bitmap_columns}
    return out


def test_dataset_files_carry_indexes_through_append_and_optimize(tmp_path):
    first, second = _table(20_000, 1), _table(20_000, 2)
    path = str(tmp_path / "ds")
    options = dict(block_rows=5000, bitmap_indexes={"mode": "equality", "flag": "equality", "qty": "bitsliced"})
    rcfmt.write_dataset(first, path, **options)
    rcfmt.write_dataset(second, path, block_rows=5000)  # an append keeps the dataset's indexes
    ds = rcfmt.dataset(path)
    assert _indexed_columns(ds) == {"mode", "flag", "qty"}
    table = pa.concat_tables([first, second])
    expr = (col("mode") == "AIR") & (col("flag") == "R") & (col("qty") < 10)
    truth = pc.and_(pc.and_(pc.equal(table["mode"], "AIR"), pc.equal(table["flag"], "R")), pc.less(table["qty"], 10))
    expected = int(pc.sum(truth.cast(pa.int64())).as_py())
    scan = ds.scan(["payload"], expr)
    got = scan.read()
    assert got.num_rows == expected
    assert sorted(got.column("payload").to_pylist()) == sorted(table.filter(truth).column("payload").to_pylist())
    assert scan.stats.rows_selected_index == expected
    counted = ds.scan([], expr)
    assert counted.count() == expected and counted.stats.rows_decoded == 0
    assert ds.count_rows(expr) == expected
    # optimize rewrites the files with the indexes they had
    optimized = ds.optimize(["qty"], force=True, block_rows=5000)
    assert _indexed_columns(optimized) == {"mode", "flag", "qty"}
    assert optimized.count_rows(expr) == expected
    for info in optimized.files:
        with rcfmt.open(info.path) as f:
            report = f.footer.bitmap_index["report"]
        assert {c: r.get("named") for c, r in report.items()} == {"mode": "equality", "flag": "equality",
                                                                   "qty": "bitsliced"}
    # naming the option replaces what the files had, and later writes keep that
    replaced = optimized.optimize(["qty"], force=True, bitmap_indexes=None)
    assert _indexed_columns(replaced) == set()
    appended = rcfmt.write_dataset(_table(20_000, 5), path, block_rows=5000)
    assert _indexed_columns(appended) == set()


@pytest.mark.parametrize("indexes", ["named", "default"])
def test_index_skips_files_by_their_distinct_values(tmp_path, indexes):
    """Files whose indexes or dictionaries know all their values report them to the
    stats index: a file is skipped when a leaf cannot hold for any of its values (or its
    NULLs, NaN). With default options these columns get no bitmap index (their keys are
    spread evenly) and the values come from the writer's dictionaries."""
    rng = np.random.default_rng(3)
    path = str(tmp_path / "ds")
    pieces = [(["AIR", "MAIL"], ["A", "N"], [0.5, float("nan")]), (["SHIP", "MAIL"], ["R", None], [1.5]),
              (["AIR", "RAIL"], ["R"], [0.5])]
    tables = []
    for modes, flags, floats in pieces:
        n = 12_000
        t = pa.table({"mode": pa.array(rng.choice(modes, n)), "flag": pa.array(list(rng.choice(flags, n))),
                      "f": pa.array(rng.choice(floats, n)), "v": pa.array(rng.integers(0, 1 << 40, n))})
        named = {"bitmap_indexes": {"mode": "equality", "flag": "range", "f": "equality"}}
        rcfmt.write_dataset(t, path, block_rows=4000, **(named if indexes == "named" else {}))
        tables.append(t)
    ds = rcfmt.dataset(path)
    assert bool(_indexed_columns(ds)) == (indexes == "named")
    cases = {
        (col("mode") == "AIR") & (col("flag") == "R"): [False, False, True],  # a conjunction no file alone...
        col("mode") == "MAIL": [True, True, False],
        col("flag").is_null(): [False, True, False],
        col("f").is_nan(): [True, False, False],
        (col("f") > 1.0) | (col("mode") == "RAIL"): [False, True, True],
        ~col("mode").isin(["AIR", "MAIL"]): [False, True, True],
        col("mode").startswith("S"): [False, True, False],
        ~col("flag").isin(["R", None]): [False, False, False],  # NOT IN with a None member: never TRUE
        ~(col("f") == 0.5): [True, True, False],  # NaN != 0.5
        ~col("f").is_nan(): [True, True, True],
    }
    for expr, expected in cases.items():
        assert ds.prune(expr).tolist() == expected, expr
        got = sorted(ds.read(["v"], expr)["v"].to_pylist())
        truth = sorted(v for t in tables for v in filter_table(t, expr)["v"].to_pylist())
        assert got == truth, expr


def test_indexes_named_for_a_column_follow_it_through_a_rename(tmp_path):
    """An append and an optimize after ``evolve(rename=...)`` keep the kinds the files
    were written with for the renamed column (their footers report the old name)."""
    path = str(tmp_path / "ds")
    rcfmt.write_dataset(_table(20_000, 1), path, block_rows=5000,
                        bitmap_indexes={"mode": "equality", "flag": "range"})
    ds = rcfmt.dataset(path).evolve(rename={"flag": "status"})
    rcfmt.write_dataset(_table(20_000, 2).rename_columns(ds.schema.names), path, block_rows=5000)
    ds = rcfmt.dataset(path)
    with rcfmt.open(ds.files[-1].path) as f:  # the appended file, written under the new name
        assert {c: r.get("named") for c, r in f.footer.bitmap_index["report"].items()} == {
            "mode": "equality", "status": "range"}
    optimized = ds.optimize(["qty"], force=True, block_rows=5000)
    for info in optimized.files:
        with rcfmt.open(info.path) as f:
            assert {c: r.get("named") for c, r in f.footer.bitmap_index["report"].items()} == {
                "mode": "equality", "status": "range"}
    assert optimized.count_rows(col("status") == "R") == ds.count_rows(col("status") == "R") > 0


def test_file_values_only_when_every_block_knows_them(tmp_path):
    """A file whose first block has few values (a dictionary) and whose second has many
    reports no values: a file skipped on the first block's values would lose the
    second's rows."""
    rng = np.random.default_rng(11)
    few = np.array([0, 1, 2] * 2000, np.int64)
    many = rng.integers(10**6, 10**12, 6000)
    table = pa.table({"a": np.concatenate([few, many]), "v": np.arange(12_000)})
    path = str(tmp_path / "ds")
    rcfmt.write_dataset(table, path, block_rows=6000)
    ds = rcfmt.dataset(path)
    with rcfmt.open(ds.files[0].path) as f:
        assert "values" not in f.footer.bitmap_report["a"]
    target = int(many[1234])
    assert ds.read(["v"], col("a") == target)["v"].to_pylist() == [6000 + 1234]
    assert ds.read(["v"], col("a") == 1).num_rows == 2000


def test_file_values_are_bounded_in_bytes(tmp_path):
    """A few long values are not copied into the footer (nor the dataset's index): the
    report keeps values only while their keys take at most FILE_VALUES_MAX_BYTES."""
    from rcfmt.file.writer import FILE_VALUES_MAX_BYTES

    long_values = [bytes([65 + i]) * 2000 for i in range(10)]  # 20 KB of keys
    short_values = [f"k{i}" for i in range(10)]
    rng = np.random.default_rng(2)
    table = pa.table({"long": pa.array([long_values[i] for i in rng.integers(0, 10, 8000)], pa.binary()),
                      "short": pa.array([short_values[i] for i in rng.integers(0, 10, 8000)])})
    path, plain = tmp_path / "t.rcfmt", tmp_path / "plain.rcfmt"
    rcfmt.write_table(table, path, block_rows=4000)
    rcfmt.write_table(table, plain, block_rows=4000, bitmap_indexes=None)
    with rcfmt.open(path) as f:
        report = f.footer.bitmap_report
        assert "values" not in report["long"] and report["short"]["values"]["count"] == 10
        assert 10 * 2000 > FILE_VALUES_MAX_BYTES
        assert f.size - plain.stat().st_size < 2048  # the report's few short keys, not 20 KB of long ones


@pytest.mark.parametrize("values, leaf, want", [
    (pa.array([1, None, 3, 4], pa.decimal64(18, 0)), col("c").is_null(), [1]),
    (pa.array([1, None, 3, 4], pa.decimal64(18, 0)), ~col("c").is_valid(), [1]),
    (pa.array([3600, None, 7200, 10800], pa.time64("us")), col("c").is_null(), [1]),
    (pa.array([1, None, 2, 3], pa.duration("s")), col("c") == 2, [2]),
    (pa.array(np.array([1, np.nan, 2, 3], np.float16)), col("c").is_nan(), [1]),
    (pa.array(np.array([1, np.nan, 2, 3], np.float16)), col("c") == 2.0, [2]),
], ids=str)
def test_file_values_of_types_stored_as_others_with_nulls_and_nans(tmp_path, values, leaf, want):
    """A file's distinct values of a column stored as another type (decimal64 as int64,
    halffloat as float32) with a NULL or NaN beside them: the placeholder was of the
    column's type, which Arrow refused to concatenate (a raw ArrowInvalid on every read)."""
    t = pa.table({"id": pa.array([0, 1, 2, 3], pa.int64()), "p": pa.array([1, 1, 2, 2], pa.int8()), "c": values})
    rcfmt.write_dataset(t, tmp_path / "ds", partition_by=["p"], bitmap_indexes={"c": "equality"})
    got = sorted(rcfmt.dataset(tmp_path / "ds").read(columns=["id"], filter=leaf).column("id").to_pylist())
    assert got == want
