"""Rows by position: ``RcfmtFile.take`` and ``Dataset.take`` against ``pyarrow.Table.take``
on the table written, and ``with_row_position`` against the positions an independent
filter (tests/oracle_filter.py, pyarrow.compute) selects -- random tables of every type
(nested, strings over page boundaries, all-NULL pages, every encoding forced), random
positions (unsorted, repeated, empty, the first and last row of every page and block),
1 and several threads; bad positions refused before anything is read; forged page
indexes refused."""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from oracle_filter import selection_mask
from rcfmt.errors import CorruptFileError, InvalidOptionError, RowIndexError, SchemaError
from strategies_expr import exprs, tables as expr_tables
from schema.test_nested import canonical, nested_tables, pylist

SETTINGS = settings(max_examples=S.examples(60), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


def _edges(f) -> list[int]:
    """The first and last row of every block and of every page of every column of ``f``."""
    out, first = [], 0
    for b in range(f.num_blocks):
        rows = int(f.footer.blocks[b]["row_count"])
        out += [first, first + rows - 1]
        for c in range(len(f.footer.columns)):
            if f.is_element_column(c):
                continue
            entries = f.page_index(b, c)
            out += (first + entries["first_row"].astype(np.int64)).tolist()
            out += (first + entries["first_row"].astype(np.int64) + entries["row_count"].astype(np.int64) - 1).tolist()
        first += rows
    return [p for p in out if 0 <= p < f.num_rows]


@st.composite
def position_lists(draw, n: int, edges: list[int]):
    """Positions among ``n`` rows: empty, random (repeats, any order), edges of pages and
    blocks (shuffled), or sorted distinct."""
    if n == 0:
        return []
    kind = draw(st.sampled_from(["empty", "random", "edges", "sorted", "all_reversed"]))
    if kind == "empty":
        return []
    if kind == "edges":
        picked = draw(st.permutations(sorted(set(edges))))
        return list(picked) + draw(st.lists(st.sampled_from(edges), max_size=5))  # and some twice
    if kind == "all_reversed":
        return list(range(n - 1, -1, -1))
    got = draw(st.lists(st.integers(0, n - 1), max_size=3 * n + 5))
    return sorted(set(got)) if kind == "sorted" else got


def _as_kind(positions: list[int], kind: str):
    if kind == "pandas":
        import pandas as pd

        return pd.Series(positions, dtype="int64")
    if kind == "polars":
        import polars as pl

        return pl.Series(positions, dtype=pl.Int64)
    if kind == "numpy":
        return np.array(positions, np.int64)
    if kind == "uint32":
        return np.array(positions, np.uint32)
    if kind == "pyarrow":
        return pa.array(positions, pa.int64())
    if kind == "chunked":
        return pa.chunked_array([pa.array(positions[:2], pa.int32()), pa.array(positions[2:], pa.int32())])
    return positions


@SETTINGS
@given(data=st.data())
def test_take_matches_pyarrow_on_every_type_and_encoding(tmp_path_factory, data):
    table = data.draw(S.tables(S.schemas(min_fields=1, max_fields=4), rows=st.integers(0, 90)))
    options = data.draw(S.write_options(table.schema))
    path = tmp_path_factory.mktemp("take") / "t.rcfmt"
    rcfmt.write_table(table, path, **options)
    with rcfmt.open(path) as f:
        positions = data.draw(position_lists(table.num_rows, _edges(f)))
        kind = data.draw(st.sampled_from(["list", "numpy", "uint32", "pyarrow", "chunked", "pandas", "polars"]))
        threads = data.draw(st.booleans())
        got = f.take(_as_kind(positions, kind), use_threads=threads)
        S.assert_tables_identical(got, table.take(pa.array(positions, pa.int64())))
        names = table.schema.names
        columns = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
        got = f.take(positions, columns=columns, use_threads=threads)
        assert got.num_rows == len(positions) and got.schema.names == columns
        if columns:  # (pyarrow's take of a table without columns returns no rows)
            S.assert_tables_identical(got, table.select(columns).take(pa.array(positions, pa.int64())))


@SETTINGS
@given(data=st.data())
def test_take_of_nested_columns(tmp_path_factory, data):
    table = data.draw(nested_tables(rows=st.integers(0, 60)))
    path = tmp_path_factory.mktemp("take_nested") / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=data.draw(st.integers(1, 25)), page_rows=data.draw(st.integers(1, 9)),
                      compression=data.draw(st.sampled_from(["none", "zstd", "auto"])))
    with rcfmt.open(path) as f:
        positions = data.draw(position_lists(table.num_rows, _edges(f)))
        got = f.take(positions, use_threads=data.draw(st.booleans()))
    got.validate(full=True)
    # (pyarrow 26 gathers a sliced fixed_size_list of fixed_size_lists from the wrong
    # place: the oracle takes from a copy at offset 0)
    contiguous = pa.Table.from_arrays([pa.concat_arrays(c.chunks) if c.num_chunks else c for c in table.columns],
                                      schema=table.schema)
    want = contiguous.take(pa.array(positions, pa.int64()))
    assert got.schema == want.schema
    for name in want.schema.names:
        assert _same_values(got.column(name), want.column(name)), name


def _same_values(a, b) -> bool:
    """Equal values (NaN equal to NaN, by their bits): Arrow's equality, else Python
    values with floats as bits (dates as integers where the cast to them works)."""
    if a.equals(b):
        return True
    try:
        return pylist(a) == pylist(b)
    except pa.ArrowInvalid:  # (a cast pyarrow refuses: nulls under a non-nullable child)
        return canonical(a.to_pylist()) == canonical(b.to_pylist())


def test_take_with_read_dictionary_and_all_null_pages(tmp_path):
    n = 5000
    rng = np.random.default_rng(3)
    s = pa.array([None if 1000 <= i < 2200 else f"{'p' * 40}-{i % 13}" for i in range(n)])  # all-NULL pages
    x = pa.array([None if 3000 <= i < 4100 else float(i) for i in range(n)])
    table = pa.table({"s": s, "x": x, "i": np.arange(n)})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=1500, page_rows=100)
    positions = rng.integers(0, n, 400)
    with rcfmt.open(path) as f:
        got = f.take(positions, read_dictionary=["s"])
        assert pa.types.is_dictionary(got.schema.field("s").type)
        assert got.column("s").cast(pa.string()).equals(table.column("s").take(positions))
        assert got.select(["x", "i"]).equals(table.select(["x", "i"]).take(positions))
        null_rows = np.arange(1000, 1100)
        assert f.take(null_rows, ["s"]).column("s").null_count == 100


def test_take_decodes_only_the_pages_holding_wanted_rows(tmp_path):
    n = 64_000
    table = pa.table({"a": np.arange(n), "b": np.arange(n) * 3.5, "s": [f"v{i}" for i in range(n)]})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=16_000, page_rows=1000, compression="zstd")
    with rcfmt.open(path) as f:
        scan = f.scan(_rows=np.array([5, 17_003, 63_999]))
        got = scan.read()
        assert got.column("a").to_pylist() == [5, 17_003, 63_999]
        assert scan.stats.pages_read == 3 * 3  # a page per column per wanted row
        assert scan.stats.rows_decoded <= 3 * 3 * 1000
        assert scan.stats.blocks_total == 4 and scan.blocks == [0, 1, 3]
        before = f.bytes_read
        f.take([5, 6, 7])
        assert f.bytes_read - before < 3 * 16_000  # one page per column (and its page index), not the chunks


def test_empty_and_zero_column_takes(tmp_path):
    table = pa.table({"a": np.arange(10), "b": [str(i) for i in range(10)]})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=3)
    with rcfmt.open(path) as f:
        empty = f.take([])
        assert empty.num_rows == 0 and empty.schema == f.schema
        assert f.take(np.array([], np.int64), columns=["b"]).schema.names == ["b"]
        assert f.take([3, 3, 1], columns=[]).num_rows == 3
        assert f.take([4, 1], columns=[]).num_rows == 2
        assert f.take([9, 0, 9]).column("a").to_pylist() == [9, 0, 9]
    empty_path = tmp_path / "empty.rcfmt"
    rcfmt.write_table(table.slice(0, 0), empty_path)
    with rcfmt.open(empty_path) as f:
        assert f.take([]).num_rows == 0
        with pytest.raises(RowIndexError):
            f.take([0])


@pytest.mark.parametrize("bad, error, words", [
    ([3, -1, 2], RowIndexError, "row position -1 (at index 1"),
    ([0, 10], RowIndexError, "row position 10 (at index 1"),
    (np.array([5, 2**63 + 1], np.uint64), RowIndexError, "at index 1"),
    ([1, 2**70], RowIndexError, "at index 1"),
    ([1.0, 2.0], InvalidOptionError, "must be integers"),
    (np.array([1.5]), InvalidOptionError, "must be integers"),
    ([1, None], InvalidOptionError, "at index 1 is None"),
    (pa.array([1, None, 3]), InvalidOptionError, "at index 1 is NULL"),
    (pa.array([1.0]), InvalidOptionError, "must be integers"),
    ([True, False], InvalidOptionError, "must be integers"),
    (["1"], InvalidOptionError, "must be integers"),
    ([[1, 2]], InvalidOptionError, "one-dimensional"),
    (__import__("pandas").Series([1, None], dtype="Int64"), InvalidOptionError, "at index 1 is NULL"),
    (__import__("polars").Series([2, None]), InvalidOptionError, "at index 1 is NULL"),
    (3, InvalidOptionError, "array-like"),
    ("12", InvalidOptionError, "array-like"),
    (None, InvalidOptionError, "array-like"),
    ((i for i in [2, 1]), InvalidOptionError, "array-like of integers (a list, a range"),  # (was: "got shape ()")
    ({2: 0}.keys(), InvalidOptionError, "got dict_keys"),
])
def test_bad_positions_are_refused_before_anything_is_read(tmp_path, bad, error, words):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"a": np.arange(10)}), path, block_rows=4)
    with rcfmt.open(path) as f:
        before = (f.bytes_read, f.requests)
        with pytest.raises(error) as info:
            f.take(bad)
        assert words in str(info.value)
        assert (f.bytes_read, f.requests) == before
    if error is RowIndexError:
        assert isinstance(info.value, IndexError) and isinstance(info.value, rcfmt.RcfmtError)


def _forge_first_row(path, block: int, column: int, page: int, delta: int) -> None:
    """Move one page-index entry's first row by ``delta`` (its checksum left stale)."""
    with rcfmt.open(path) as f:
        rec = f.footer.chunks[column][block]
        offset = int(rec["page_index_offset"])
        dtype = f.page_index(block, column).dtype
    raw = bytearray(path.read_bytes())
    at = offset + page * dtype.itemsize + dtype.fields["first_row"][1]
    (value,) = struct.unpack_from("<Q", raw, at)
    struct.pack_into("<Q", raw, at, value + delta)
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("delta", [1, -1])  # a row in no page / a row in two pages
def test_a_forged_page_index_is_corrupt_not_wrong_rows(tmp_path, delta):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"a": np.arange(400), "b": np.arange(400) * 2}), path, block_rows=200,
                      page_rows=50, compression="none")
    _forge_first_row(path, block=1, column=1, page=2, delta=delta)
    with rcfmt.open(path, verify_checksums=False) as f:
        with pytest.raises(CorruptFileError, match="page index"):
            f.take([300, 310])
        assert f.take([10, 20]).column("b").to_pylist() == [20, 40]  # block 0 is sound
    with rcfmt.open(path) as f:  # checksums on: the entry's checksum no longer matches
        with pytest.raises(CorruptFileError):
            f.take([301])


# ---------------------------------------------------------------- row positions
@SETTINGS
@given(data=st.data())
def test_row_positions_are_those_the_filter_selects(tmp_path_factory, data):
    case = data.draw(expr_tables(min_rows=0, max_rows=100, max_columns=3))
    expr = data.draw(exprs(case, max_leaves=4))
    table = case.table
    path = tmp_path_factory.mktemp("positions") / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=data.draw(st.integers(1, 40)), page_rows=data.draw(st.integers(1, 12)),
                      compression=data.draw(st.sampled_from(["none", "zstd"])),
                      dictionary=data.draw(st.booleans()))
    want = np.flatnonzero(selection_mask(expr, table))
    threads = data.draw(st.booleans())
    with rcfmt.open(path) as f:
        got = f.read(filter=expr, with_row_position=True, use_threads=threads)
        assert got.schema.names == [*table.schema.names, "_row_position"]
        assert got.schema.field("_row_position").type == pa.int64()
        positions = got.column("_row_position").to_numpy()
        assert positions.tolist() == want.tolist()
        # take(positions) gives the same rows
        S.assert_tables_identical(f.take(positions), got.drop_columns(["_row_position"]))
        streamed = pa.Table.from_batches(list(f.iter_batches(batch_size=7, filter=expr, with_row_position=True)),
                                         schema=got.schema)
        assert streamed.column("_row_position").to_pylist() == want.tolist()
        assert pa.table(f.scan(["c0"], expr, with_row_position=True)).column("_row_position").to_pylist() == \
            want.tolist()
        assert f.scan([], expr, with_row_position=True).read().column(0).to_pylist() == want.tolist()
    only = rcfmt.read_table(path, columns=[], filter=expr, with_row_position=True)
    assert only.schema.names == ["_row_position"] and only.column(0).to_pylist() == want.tolist()


def test_row_positions_through_the_arrow_stream_and_nested_fields(tmp_path):
    table = pa.table({"id": np.arange(300),
                      "st": pa.array([{"x": i, "y": str(i)} for i in range(300)]),
                      "l": pa.array([[i] * (i % 3) for i in range(300)])})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=64, page_rows=10)
    with rcfmt.open(path) as f:
        scan = f.scan(["st", "l"], rcfmt.col("st.x") >= 250,
                      with_row_position=True)
        got = pa.table(scan)
        assert got.column("_row_position").to_pylist() == list(range(250, 300))
        assert got.column("st").to_pylist() == table.column("st").to_pylist()[250:]


def test_a_user_column_named_row_position_is_refused_clearly(tmp_path):
    """A column read of the positions' name is a SchemaError; the positions may take
    another name, and a column left out does not stand in the way."""
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"_row_position": [1, 2], "v": [5, 6]}), path)
    with pytest.raises(SchemaError, match="_row_position"):
        rcfmt.read_table(path, with_row_position=True)
    assert rcfmt.read_table(path).num_rows == 2  # (without it, read as ever)
    got = rcfmt.read_table(path, with_row_position="pos", filter=rcfmt.col("v") > 5)
    assert got.column_names == ["_row_position", "v", "pos"] and got["pos"].to_pylist() == [1]
    assert rcfmt.read_table(path, columns=["v"], with_row_position=True)["_row_position"].to_pylist() == [0, 1]
    rcfmt.write_dataset(pa.table({"_row_position": [1, 2], "v": [5, 6]}), tmp_path / "ds")
    ds = rcfmt.dataset(tmp_path / "ds")
    with pytest.raises(SchemaError, match="_row_position"):
        ds.read(with_row_position=True)
    assert ds.read(with_row_position="pos")["pos"].to_pylist() == [0, 1]
    assert ds.read(["v"], with_row_position=True)["_row_position"].to_pylist() == [0, 1]
    for bad in ("", 1, None):
        with pytest.raises(InvalidOptionError, match="with_row_position"):
            rcfmt.read_table(path, with_row_position=bad)


def test_row_changes_and_positions_on_a_dataset_with_a_column_named_row_position(tmp_path):
    """delete, update and merge find rows by their positions under a name no column has
    (they failed on such a dataset); a column renamed away no longer stands in the way."""
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"_row_position": [10, 20, 30], "id": [1, 2, 3]}), root)
    ds = rcfmt.dataset(root).delete(rcfmt.col("id") == 1)
    ds = ds.update(rcfmt.col("id") == 2, {"_row_position": 99})
    ds = ds.merge(pa.table({"_row_position": [7, 8], "id": [3, 4]}), on="id")
    assert sorted(ds.read().to_pylist(), key=lambda r: r["id"]) == [
        {"_row_position": 99, "id": 2}, {"_row_position": 7, "id": 3}, {"_row_position": 8, "id": 4}]
    ds = ds.evolve(rename={"_row_position": "rp"})
    assert sorted(ds.read(with_row_position=True)["_row_position"].to_pylist()) == [0, 1, 2]
    assert ds.take([0])["id"].to_pylist() == ds.read()["id"].to_pylist()[:1]


def test_bools_and_mixed_numpy_scalars_are_not_taken_for_positions(tmp_path):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"v": list(range(10))}), path)
    with rcfmt.open(path) as f:
        with pytest.raises(InvalidOptionError, match="at index 1 is False"):
            f.take([0, False, True])
        assert f.take([np.int64(2), np.uint64(3)])["v"].to_pylist() == [2, 3]
        with pytest.raises(rcfmt.RowIndexError, match="-1"):
            f.take([np.uint64(3), -1])


# ---------------------------------------------------------------- datasets
def _dataset(tmp_path, seed: int = 0):
    """A partitioned dataset of three appends (version 3) and its rows in read order."""
    rng = np.random.default_rng(seed)
    root = tmp_path / "ds"
    parts = []
    for k in range(3):
        n = 700 + 300 * k
        t = pa.table({"id": np.arange(n) + 10_000 * k, "x": rng.random(n),
                      "s": pa.array([None if i % 11 == 0 else f"s{i % 50}" for i in range(n)]),
                      "p": pa.array(rng.integers(0, 3, n), pa.int32())})
        parts.append(t)
        rcfmt.write_dataset(t, root, partition_by=["p"], block_rows=256, page_rows=40,
                            mode="append")
    return root


@pytest.mark.parametrize("threads", [False, True])
def test_dataset_take_across_files_partitions_and_versions(tmp_path, threads):
    root = _dataset(tmp_path)
    ds = rcfmt.dataset(root)
    assert ds.version == 3 and ds.num_files > 3
    full = ds.read()
    rng = np.random.default_rng(1)
    for positions in ([], [0], [ds.num_rows - 1, 0, 5, 5], rng.integers(0, ds.num_rows, 300).tolist(),
                      list(range(ds.num_rows))):
        got = ds.take(positions, use_threads=threads)
        assert got.equals(full.take(pa.array(positions, pa.int64()))), positions[:5]
    got = ds.take([7, 3, 7], columns=["p", "x"])
    assert got.equals(full.select(["p", "x"]).take([7, 3, 7]))
    # positions of a scan read back the same rows, at every version
    for version in (1, 2, 3):
        old = rcfmt.dataset(root, version=version)
        scanned = old.read(filter=rcfmt.col("s") == "s7", with_row_position=True)
        assert len(scanned) and scanned.column("_row_position").to_pylist() == sorted(
            scanned.column("_row_position").to_pylist())
        assert old.take(scanned.column("_row_position")).equals(scanned.drop_columns(["_row_position"]))
        everything = old.read(with_row_position=True)
        assert everything.column("_row_position").to_pylist() == list(range(old.num_rows))
        with pytest.raises(RowIndexError):
            old.take([old.num_rows])
    # the stream and count agree
    streamed = pa.Table.from_batches(list(ds.iter_batches(batch_size=100, with_row_position=True)))
    assert streamed.column("_row_position").to_pylist() == list(range(ds.num_rows))


def test_dataset_take_after_evolve_and_optimize(tmp_path):
    root = _dataset(tmp_path, seed=4)
    ds = rcfmt.dataset(root).evolve(add=[("z", pa.int16())], rename={"x": "x2"})
    full = ds.read()
    positions = np.random.default_rng(2).permutation(ds.num_rows)[:500]
    got = ds.take(positions)
    assert got.schema.names == ["id", "x2", "s", "z", "p"]
    assert got.equals(full.take(positions)) and got.column("z").null_count == 500
    optimized = ds.optimize(cluster_by=["x2"])
    assert optimized.version > ds.version
    after = optimized.read(with_row_position=True)
    assert after.column("_row_position").to_pylist() == list(range(optimized.num_rows))
    assert optimized.take(positions).equals(after.drop_columns(["_row_position"]).take(positions))
    assert ds.take(positions).equals(got)  # the version before still reads its own rows


def test_take_from_many_threads_in_a_fresh_interpreter(tmp_path):
    """A user's first takes, four threads at once on one open file and a dataset, with
    threads on and the default rules (no suite override), in a new process."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import os, threading
        os.environ.pop("RCFMT_PARALLEL_BLOCK_BYTES", None)
        import numpy as np, pyarrow as pa, rcfmt
        n = 200_000
        t = pa.table({{"a": np.arange(n), "s": [f"v{{i % 333}}" for i in range(n)], "f": np.arange(n) / 7}})
        rcfmt.write_table(t, {str(tmp_path / 'f.rcfmt')!r}, block_rows=32768)
        rcfmt.write_dataset(t, {str(tmp_path / 'ds')!r}, target_file_rows=50_000)
        f = rcfmt.open({str(tmp_path / 'f.rcfmt')!r})
        ds = rcfmt.dataset({str(tmp_path / 'ds')!r})
        errors = []
        def work(seed):
            try:
                idx = np.random.default_rng(seed).integers(0, n, 2000)
                assert f.take(idx).equals(t.take(idx))
                assert ds.take(idx).equals(t.take(idx))
            except BaseException as exc:
                errors.append(repr(exc))
        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        [th.start() for th in threads]
        [th.join() for th in threads]
        assert not errors, errors
        print("ok")
    """)
    env = {k: v for k, v in __import__("os").environ.items() if k != "RCFMT_PARALLEL_BLOCK_BYTES"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_a_take_uses_the_pool_only_for_many_rows(tmp_path, monkeypatch):
    """With the default thresholds (the suites run with 0: every scan on the pool), a
    take's blocks go to the pool by the rows it wants, not by the blocks' sizes: a few
    rows of large blocks stay on the calling thread, many go to the pool; the rows are
    the same either way."""
    import threading

    from rcfmt.scan import scanner, scheduling

    monkeypatch.setattr(scheduling, "PARALLEL_BLOCK_BYTES", 384 << 10)
    n = 1 << 18
    table = pa.table({"a": np.arange(n), "f": np.random.default_rng(1).standard_normal(n)})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=65_536)
    seen = []
    original = scanner.FileScan._block

    def block(self, b, count_only):
        seen.append(threading.current_thread().name.startswith("rcfmt-scan"))
        return original(self, b, count_only)

    monkeypatch.setattr(scanner.FileScan, "_block", block)
    few = [3, 70_000, 140_000, 250_000]
    many = np.arange(0, n, 97)
    with rcfmt.open(path) as f:
        assert f.take(few).equals(table.take(few)) and set(seen) == {False}
        seen.clear()
        assert f.take(many).equals(table.take(many)) and set(seen) == {True}
        seen.clear()
        assert f.read().num_rows == n and set(seen) == {True}  # (a whole read: by the blocks' sizes)


@pytest.mark.parametrize("compression", ["none", "zstd"])
@pytest.mark.parametrize("distinct, forced", [(2, False), (2, True), (200, False), (200, True), (70_000, True)])
def test_few_rows_of_a_page_are_read_where_they_lie(tmp_path, compression, distinct, forced):
    """Dictionary codes (every layout: bit-packed (the selector's choice on few values),
    1, 2 and 4 bytes (a forced dictionary)) and PLAIN values of a page of which few rows
    are wanted are read in place, not the page decoded: the rows at the first, last,
    1,024-value block edges and random places of 2,000-row pages, against pyarrow."""
    n = 8000 if distinct < 70_000 else 70_000
    rng = np.random.default_rng(distinct)
    codes = rng.integers(0, distinct, n) if distinct < 70_000 else rng.permutation(n)
    table = pa.table({"d": pa.array([f"v{c:06d}" for c in codes]), "i": pa.array(codes * 3 - 7, pa.int64()),
                      "x": pa.array(rng.standard_normal(n)), "b": pa.array(rng.integers(0, 200, n), pa.int16())})
    path = tmp_path / "t.rcfmt"
    forced_encodings = {"d": "dictionary", "b": "dictionary"} if forced else {}
    rcfmt.write_table(table, path, page_rows=2000, compression=compression, compressed_page_size=1 << 20,
                      encoding={"i": "plain", "x": "plain", **forced_encodings})
    positions = [0, 1999, 2000, 1023, 1024, 3071, 3072, 7999, 4000 + 31, 4000 + 32, 5000]
    positions += rng.integers(0, n, 20).tolist()
    with rcfmt.open(path) as f:
        assert f.footer.chunks[f.column_index("d")][0]["encoding"] == 1  # DICTIONARY
        got = f.take(positions, use_threads=False)
        assert got.equals(table.take(positions))
        for k in range(4):  # one row of each page: every page read sparsely
            assert f.take([2000 * k + 977]).equals(table.take([2000 * k + 977]))


def test_a_forged_code_read_in_place_is_corrupt(tmp_path):
    """A dictionary code at or past the dictionary's size, in a page whose checksums
    were recomputed, is refused when a take reads it in place."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "data"))
    import make_bad

    n = 4096
    table = pa.table({"d": pa.array([f"k{i % 5}" for i in range(n)]), "i": np.arange(n)})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, page_rows=n, compression="none")  # (the selector bit-packs the codes)
    data = path.read_bytes()
    (offset,) = make_bad.pages_of(data, path, "d", 0)
    header = make_bad.read_header(data, offset)
    start = offset + make_bad.PAGE_HEADER.size
    body = bytearray(data[start: start + header["compressed_size"]])
    if body[0] == 0:  # bit-packed codes: row 0's is the low bits of lane 0's first word
        assert body[8] == 3  # (five entries)
        body[16] |= 0b111  # 7, past the 5 entries
    else:
        assert body[0] == 1  # a byte a code
        body[1] = 7
    path.write_bytes(make_bad.patch_page(data, offset, bytes(body)))
    with rcfmt.open(path) as f:
        with pytest.raises(CorruptFileError):
            f.take([0])
        with pytest.raises(CorruptFileError):
            f.read()  # (and decoded whole)


def test_a_file_dropped_without_close_releases_its_descriptor(tmp_path):
    """What an open file keeps for its later scans (page indexes) refers back to no file:
    one dropped without ``close`` after takes and lookups is freed, and its descriptor
    closed, at once -- not at the next garbage collection."""
    import gc
    import os

    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"a": np.arange(5000), "s": [f"v{i}" for i in range(5000)]}), path, block_rows=1000)
    gc.disable()
    try:
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(20):
            f = rcfmt.open(path)
            f.take([1, 4321, 1])
            f.read(filter=rcfmt.col("a") == 7, with_row_position=True)
            del f
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        gc.enable()
