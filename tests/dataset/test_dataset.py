"""Datasets: writing, reading, partitions, the stats index, file pruning statistics."""
from __future__ import annotations

import datetime as dt
import decimal
import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from rcfmt import col
from rcfmt.dataset.index import entry_from_file
from rcfmt.dataset.log import list_versions, version_path
from strategies import ALL_TYPES, assert_tables_identical, example_table


def _files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(out)


def _data_files(root):
    return [f for f in _files(root) if not f.startswith("_rcfmt")]


@pytest.fixture
def table():
    n = 1000
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "x": pa.array(np.arange(n) % 97, pa.int32()),
        "f": pa.array(np.where(np.arange(n) % 50 == 0, np.nan, np.arange(n) / 7.0)),
        "s": pa.array([f"name{i % 13:03d}" for i in range(n)]),
        "day": pa.array([dt.date(2024, 1, 1 + i % 4) for i in range(n)], pa.date32()),
        "region": pa.array([["north", "south", None][i % 3] for i in range(n)]),
    })


# ---------------------------------------------------------------- round trips
def test_round_trip_every_type(tmp_path):
    t = example_table(300, seed=3, types=ALL_TYPES)
    ds = rcfmt.write_dataset(t, tmp_path / "d", target_file_rows=128, block_rows=50)
    assert ds.version == 1 and ds.num_files == 3 and ds.num_rows == 300
    assert_tables_identical(ds.read(), t, check_metadata=False)
    assert_tables_identical(rcfmt.dataset(tmp_path / "d").read(use_threads=False), t, check_metadata=False)
    batches = list(ds.iter_batches(batch_size=40))
    assert max(b.num_rows for b in batches) <= 40
    assert_tables_identical(pa.Table.from_batches(batches), t, check_metadata=False)


def test_api_entry_points(tmp_path, table):
    assert rcfmt.Dataset is rcfmt.dataset.Dataset
    assert issubclass(rcfmt.CommitConflictError, rcfmt.RcfmtError)
    ds = rcfmt.write_dataset(table, tmp_path)
    assert isinstance(rcfmt.dataset(tmp_path), rcfmt.Dataset)
    assert_tables_identical(rcfmt.dataset(tmp_path).read(), table, check_metadata=False)
    assert ds.read(columns=["s", "id"]).column_names == ["s", "id"]
    assert ds.count_rows(col("x") == 5) == table.filter(pa.compute.equal(table["x"], 5)).num_rows
    assert "version 1" in repr(ds)


def test_single_file_and_plain_directory(tmp_path, table):
    rcfmt.write_table(table, tmp_path / "one.rcfmt", block_rows=100)
    ds = rcfmt.dataset(tmp_path / "one.rcfmt")
    assert ds.version is None and ds.num_files == 1 and ds.num_rows == 1000
    assert ds.read(filter=col("id") < 10).num_rows == 10
    # a plain directory: files found recursively, '_'/'.' names and other suffixes ignored
    (tmp_path / "_hidden").mkdir()
    rcfmt.write_table(table, tmp_path / "_hidden" / "x.rcfmt")
    (tmp_path / "README.txt").write_text("not data")
    rcfmt.write_table(table.slice(0, 10), tmp_path / "two.rcf")
    plain = rcfmt.dataset(tmp_path)
    assert plain.num_files == 2 and plain.num_rows == 1010


def test_files_carry_stats_from_the_index(tmp_path, table):
    ds = rcfmt.write_dataset(table, tmp_path, target_file_rows=400, block_rows=100)
    files = ds.files
    assert [f.num_rows for f in files] == [400, 400, 200]
    assert all(os.path.isfile(f.path) and f.size == os.path.getsize(f.path) for f in files)
    first = files[0]
    assert first.stats["id"] == {"min": 0, "max": 399, "null_count": 0, "nan_count": 0, "min_exact": True,
                                 "max_exact": True}
    assert first.stats["f"]["nan_count"] == 8 and first.stats["f"]["min"] == 1 / 7.0
    assert first.stats["region"]["null_count"] == 133
    assert first.stats["s"]["min"] == "name000" and first.stats["day"]["max"] == dt.date(2024, 1, 4)
    assert first.num_blocks == 4


def test_string_bounds_are_truncated_in_the_index(tmp_path):
    t = pa.table({"s": ["a" * 50 + "b", "a" * 50 + "c", "\U0001f600" * 20]})
    ds = rcfmt.write_dataset(t, tmp_path, stats_truncate=5)
    s = ds.files[0].stats["s"]
    assert s["min"] == "aaaaa" and not s["min_exact"]
    assert s["max"] == b"\xf0\x9f\x98\x80\xf1"  # cut inside a character, rounded up: kept as bytes
    assert not s["max_exact"]
    stats = ds.stats_arrays("s")
    assert stats.min[0] == b"aaaaa" and stats.max[0] > "\U0001f600".encode() * 20
    # a bound cut inside a character is still a correct bound: pruning stays sound
    assert ds.read(filter=col("s") == "\U0001f600" * 20).num_rows == 1
    assert ds.read(filter=col("s").startswith("aaaaaaa")).num_rows == 2
    assert ds.read(filter=col("s") > "\U0001f600" * 21).num_rows == 0


def test_file_entry_from_footer_matches_brute_force(tmp_path, table):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=64)
    with rcfmt.open(path) as f:
        e = entry_from_file(f, "t.rcfmt")
    assert e.num_rows == 1000 and e.num_blocks == 16 and e.size == os.path.getsize(path)
    fs = e.stats["f"]
    finite = table["f"].to_numpy()
    assert fs.min == np.nanmin(finite) and fs.max == np.nanmax(finite) and fs.nan_count == 20
    assert e.stats["x"].min == 0 and e.stats["x"].max == 96


def test_float_zero_bounds(tmp_path):
    t = pa.table({"f": [0.0, 1.0, -0.0, 2.0]})
    ds = rcfmt.write_dataset(t, tmp_path, block_rows=2)
    s = ds.stats_arrays("f")
    assert np.signbit(s.min[0]) and s.max[0] == 2.0
    assert ds.read(filter=col("f") == 0.0).num_rows == 2
    assert ds.read(filter=col("f") < 0.0).num_rows == 0


def test_all_null_and_empty_files(tmp_path):
    t = pa.table({"a": pa.array([None, None], pa.int64()), "b": ["x", "y"]})
    ds = rcfmt.write_dataset(t, tmp_path)
    assert ds.files[0].stats["a"]["min"] is None and ds.files[0].stats["a"]["null_count"] == 2
    assert ds.read(filter=col("a") > 0).num_rows == 0
    assert ds.scan(filter=col("a") > 0).stats.files_total == 1
    sc = ds.scan(filter=col("a") > 0)
    sc.read()
    assert sc.stats.files_pruned == 1
    assert ds.read(filter=col("a").is_null()).num_rows == 2
    empty = rcfmt.write_dataset(t.slice(0, 0), tmp_path / "e")
    assert empty.num_files == 0 and empty.version == 1 and empty.read().num_rows == 0
    assert empty.read().schema == t.schema


# ---------------------------------------------------------------- pruning statistics
def test_scan_stats_count_pruned_files(tmp_path, table):
    ds = rcfmt.write_dataset(table, tmp_path, target_file_rows=100, block_rows=25)
    assert ds.num_files == 10
    scan = ds.scan(filter=(col("id") >= 250) & (col("id") < 260))
    got = scan.read()
    assert got["id"].to_pylist() == list(range(250, 260))
    st = scan.stats
    assert st.files_total == 10 and st.files_pruned == 9
    assert st.blocks_total == 4 and st.blocks_pruned_stats == 3
    assert st.rows_selected == 10
    # iter_batches accumulates the same statistics
    scan2 = ds.scan(filter=(col("id") >= 250) & (col("id") < 260))
    assert sum(b.num_rows for b in scan2.iter_batches(3)) == 10
    assert scan2.stats.files_pruned == 9 and scan2.stats.blocks_pruned_stats == 3
    # no filter: nothing pruned
    scan3 = ds.scan(columns=["id"])
    assert scan3.read().num_rows == 1000 and scan3.stats.files_pruned == 0 and scan3.stats.files_total == 10
    # a filter no file can match prunes every file without opening one
    scan4 = ds.scan(filter=col("x") > 500)
    assert scan4.read().num_rows == 0 and scan4.stats.files_pruned == 10 and scan4.stats.bytes_read == 0


def test_fragments_split_into_block_ranges(tmp_path, table):
    ds = rcfmt.write_dataset(table, tmp_path, block_rows=100)
    (frag,) = ds.get_fragments()
    parts = frag.split(3)
    assert [p.blocks for p in parts] == [(0, 3), (3, 6), (6, 10)]
    scan = rcfmt.dataset.scan_fragments(parts, ds.schema, ["id"], col("id") >= 550)
    got = scan.read()
    assert got["id"].to_pylist() == list(range(550, 1000))
    assert scan.stats.blocks_total == 10 and scan.stats.blocks_pruned_stats == 5
    assert scan.stats.rows_total == 1000


def test_prune_blocks_at_planning(tmp_path, table):
    ds = rcfmt.write_dataset(table, tmp_path, partition_by=["day"], block_rows=50)
    f = (col("id") >= 100) & (col("id") < 180) & (col("day") != dt.date(2024, 1, 1))
    frags = ds.get_fragments(f)
    assert len(frags) == 3
    kept, dropped, total = rcfmt.dataset.prune_blocks(frags, ds.schema, f, partition_names=ds.partition_by)
    assert total == sum(fr.num_blocks for fr in frags) == 15
    assert all(k.blocks is not None for k in kept) and sum(k.blocks[1] - k.blocks[0] for k in kept) == 3
    assert sum(d.blocks[1] - d.blocks[0] for d in dropped) == 12
    got = rcfmt.dataset.scan_fragments(kept, ds.schema, ["id"], f, partition_names=ds.partition_by).read()
    assert sorted(got["id"].to_pylist()) == [i for i in range(100, 180) if i % 4 != 0]
    # no filter, or a filter on partitions only: nothing to read in footers
    assert rcfmt.dataset.prune_blocks(frags, ds.schema, None)[0] == frags
    kept, dropped, _ = rcfmt.dataset.prune_blocks(ds.get_fragments(), ds.schema, col("day") == dt.date(2024, 1, 2),
                                                  partition_names=ds.partition_by)
    assert len(kept) == 1 and kept[0].blocks is None and len(dropped) == 3


@pytest.mark.parametrize("with_nulls", [False, True])
def test_prune_blocks_with_indexes_keeps_every_block_that_holds_a_match(tmp_path, with_nulls):
    """``use_indexes``: bloom filters drop blocks whose statistics cannot (interleaved keys:
    every block spans the whole range), and no block holding a matching row is dropped
    (checked against the rows themselves, with pyarrow.compute); a range filter (no bloom
    probe) keeps what the statistics keep."""
    import pyarrow.compute as pc

    from rcfmt.predicate.arrow_eval import evaluate
    from rcfmt.predicate.residual import prepare_filter

    blocks, rows = 8, 512
    keys = np.arange(blocks * rows).reshape(rows, blocks).T.ravel()  # block b: b, b + 8, b + 16, ...
    k = pa.array(keys, mask=(keys % 97 == 5) if with_nulls else None)
    table = pa.table({"k": k, "v": pa.array(keys * 3)})
    ds = rcfmt.write_dataset(table, tmp_path, block_rows=rows, bloom_filter_columns=["k"])
    block_of = np.repeat(np.arange(blocks), rows)
    for f in (col("k") == 1234, col("k").isin([3, 1234, 4095, 999_999]), col("k") == 5, (col("k") < 20) & (col("v") > 3),
              ~(col("k") == 7)):
        stats_only = rcfmt.dataset.prune_blocks(ds.get_fragments(f), ds.schema, f)[0]
        kept, dropped, total = rcfmt.dataset.prune_blocks(ds.get_fragments(f), ds.schema, f, use_indexes=True)
        kept_blocks = {b for fr in kept for b in range(*(fr.blocks or (0, fr.num_blocks)))}
        truth = pc.fill_null(evaluate(prepare_filter(f, ds.schema), table), False).to_numpy(zero_copy_only=False)
        assert set(block_of[truth]) <= kept_blocks, f
        assert total == blocks and len(kept_blocks) + sum(d.blocks[1] - d.blocks[0] for d in dropped) == blocks
        assert kept_blocks <= {b for fr in stats_only for b in range(*(fr.blocks or (0, fr.num_blocks)))}
    kept, _, _ = rcfmt.dataset.prune_blocks(ds.get_fragments(), ds.schema, col("k") == 1234, use_indexes=True)
    assert [fr.blocks for fr in kept] == [(1234 % blocks, 1234 % blocks + 1)]  # the bloom filters found it
    got = rcfmt.dataset.scan_fragments(kept, ds.schema, ["k", "v"], col("k") == 1234).read()
    assert got.to_pylist() == [{"k": 1234, "v": 3702}]


def _sql_truth(k, leaf: str, arg, negate: bool):
    """SQL's three-valued truth of one leaf on one key (None: NULL), in plain Python."""
    if k is None:
        return None
    if leaf == "eq":
        v = k == arg
    elif leaf == "isin":
        v = True if k in [m for m in arg if m is not None] else (None if None in arg else False)
    else:
        v = arg[0] <= k < arg[1]
    return v if not negate or v is None else not v


@settings(max_examples=S.examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_prune_blocks_with_indexes_never_drops_a_match_brute_force(tmp_path_factory, data):
    """Random keys (NULLs included) in random block sizes, with bloom filters on the key and
    a random filter (==, isin with NULL members, a range, NOT of each): every block holding
    a row the filter keeps (SQL's three-valued logic, evaluated in plain Python) stays
    kept, and a scan of the kept blocks returns exactly those rows."""
    n = data.draw(st.integers(1, 3000), label="rows")
    block_rows = data.draw(st.integers(64, 1024), label="block_rows")
    keys = data.draw(st.lists(st.one_of(st.none(), st.integers(-50, 5000)), min_size=n, max_size=n), label="keys")
    table = pa.table({"k": pa.array(keys, pa.int64()), "i": pa.array(np.arange(n))})
    path = tmp_path_factory.mktemp("prune_idx")
    ds = rcfmt.write_dataset(table, path, block_rows=block_rows, bloom_filter_columns=["k"])
    present = [k for k in keys if k is not None] or [0]
    pick = st.one_of(st.sampled_from(present), st.integers(-60, 5010))
    leaf = data.draw(st.sampled_from(["eq", "isin", "range"]), label="leaf")
    if leaf == "eq":
        arg = data.draw(pick)
        f = col("k") == arg
    elif leaf == "isin":
        arg = data.draw(st.lists(st.one_of(st.none(), pick), min_size=1, max_size=5))
        f = col("k").isin(arg)
    else:
        lo = data.draw(pick)
        arg = (lo, lo + data.draw(st.integers(0, 100)))
        f = (col("k") >= arg[0]) & (col("k") < arg[1])
    negate = data.draw(st.booleans(), label="not")
    if negate:
        f = ~f
    kept, dropped, total = rcfmt.dataset.prune_blocks(ds.get_fragments(f), ds.schema, f, use_indexes=True)
    kept_blocks = {b for fr in kept for b in range(*(fr.blocks or (0, fr.num_blocks)))}
    matches = [r for r, k in enumerate(keys) if _sql_truth(k, leaf, arg, negate) is True]
    assert {r // block_rows for r in matches} <= kept_blocks, f
    got = rcfmt.dataset.scan_fragments(kept, ds.schema, ["i"], f).read()["i"].to_pylist() if kept else []
    assert sorted(got) == matches


# ---------------------------------------------------------------- partitions
def test_partitioned_write_read_and_pruning(tmp_path, table):
    ds = rcfmt.write_dataset(table, tmp_path, partition_by=["day", "region"], block_rows=64)
    assert ds.partition_by == ["day", "region"]
    assert ds.schema.names == ["id", "x", "f", "s", "day", "region"]
    assert ds.schema.field("day").type == pa.date32() and ds.schema.field("region").type == pa.string()
    dirs = sorted({os.path.dirname(f) for f in _data_files(tmp_path)})
    assert "day=2024-01-01/region=north" in dirs and "day=2024-01-02/region=__HIVE_DEFAULT_PARTITION__" in dirs
    assert ds.num_files == 12
    # files hold only the data columns
    with rcfmt.open(ds.files[0].path) as f:
        assert f.schema.names == ["id", "x", "f", "s"]
    got = ds.read().sort_by("id")
    assert_tables_identical(got, table.select(ds.schema.names), check_metadata=False)
    scan = ds.scan(filter=(col("day") == dt.date(2024, 1, 2)) & col("region").is_null())
    part = scan.read()
    assert scan.stats.files_pruned == 11
    expected = table.filter(pa.compute.and_(pa.compute.equal(table["day"], pa.scalar(dt.date(2024, 1, 2))),
                                            pa.compute.is_null(table["region"])))
    assert sorted(part["id"].to_pylist()) == expected["id"].to_pylist()
    # partition and data columns mixed in OR
    f = (col("region") == "north") | (col("id") < 3)
    want = {i for i in range(1000) if i % 3 == 0 or i < 3}
    assert set(ds.read(filter=f)["id"].to_pylist()) == want
    assert ds.read(columns=["region"], filter=col("region").startswith("sou")).num_rows == 333
    assert ds.read(columns=[]).num_rows == 1000


def test_partition_types_and_escaping(tmp_path):
    t = pa.table({"v": range(6), "b": [True, False, None, True, False, True],
                  "k": pa.array([-5, 0, 2**40, None, 7, 7], pa.int64()),
                  "s": ["a/b", "x=y", "", "%", "100%", "é ü"]})
    ds = rcfmt.write_dataset(t, tmp_path, partition_by=["b", "k", "s"])
    dirs = {os.path.dirname(p) for p in _data_files(tmp_path)}
    assert "b=true/k=-5/s=a%2Fb" in dirs and "b=false/k=0/s=x%3Dy" in dirs
    assert "b=__HIVE_DEFAULT_PARTITION__/k=1099511627776/s=__HIVE_DEFAULT_PARTITION__" in dirs
    got = ds.read().sort_by("v")
    assert got["s"].to_pylist() == ["a/b", "x=y", None, "%", "100%", "é ü"]  # '' is the default partition
    assert got["k"].to_pylist() == [-5, 0, 2**40, None, 7, 7]
    assert got["b"].to_pylist() == [True, False, None, True, False, True]
    assert ds.read(filter=col("s") == "100%")["v"].to_pylist() == [4]
    # without the index the types are inferred from the paths
    import shutil
    shutil.rmtree(tmp_path / "_rcfmt")
    plain = rcfmt.dataset(tmp_path)
    assert plain.schema.field("k").type == pa.int64() and plain.schema.field("b").type == pa.string()
    assert sorted(plain.read(filter=col("k") > 1)["v"].to_pylist()) == [2, 4, 5]


def test_partition_inference(tmp_path):
    t = pa.table({"v": [1, 2, 3]})
    for d in ["n=1/d=2024-01-31/z=007", "n=-2/d=2024-02-01/z=8", "n=__HIVE_DEFAULT_PARTITION__/d=2024-02-02/z=9"]:
        os.makedirs(tmp_path / d)
        rcfmt.write_table(t, tmp_path / d / "part.rcfmt")
    ds = rcfmt.dataset(tmp_path)
    assert ds.schema.field("n").type == pa.int32()
    assert ds.schema.field("d").type == pa.date32()
    assert ds.schema.field("z").type == pa.string()  # '007' would not round-trip as an int
    assert ds.read(filter=col("n").is_null()).num_rows == 3
    scan = ds.scan(filter=col("d") >= dt.date(2024, 2, 1))
    assert scan.read().num_rows == 6 and scan.stats.files_pruned == 1
    os.makedirs(tmp_path / "other")
    rcfmt.write_table(t, tmp_path / "other" / "x.rcfmt")
    with pytest.raises(rcfmt.SchemaError):
        rcfmt.dataset(tmp_path)


def test_minus_zero_is_no_integer_partition_value(tmp_path):
    """``k=-0`` beside ``k=0``: two directories, two values (as '007' stays a string, only
    canonical integers are integers, so that values round-trip)."""
    for d in ("k=-0", "k=0", "k=5"):
        os.makedirs(tmp_path / d)
        rcfmt.write_table(pa.table({"v": [1]}), tmp_path / d / "part.rcfmt")
    ds = rcfmt.dataset(tmp_path)
    assert ds.schema.field("k").type == pa.string()
    assert sorted(ds.read()["k"].to_pylist()) == ["-0", "0", "5"]
    assert ds.read(filter=col("k") == "0").num_rows == 1


@pytest.mark.parametrize("name", ["_p", ".p"])
def test_partition_columns_are_not_named_as_hidden_directories(tmp_path, name):
    """Directories starting with '_' or '.' are never data (readers and vacuum skip them):
    such a partition column is refused before anything is written."""
    with pytest.raises(rcfmt.InvalidOptionError, match="cannot start with '_' or '.'"):
        rcfmt.write_dataset(pa.table({name: [1, 2], "v": [3, 4]}), tmp_path / "ds", partition_by=[name])
    assert not (tmp_path / "ds").exists()


def test_a_dataset_partitioned_by_such_a_column_before_the_rule_takes_appends(tmp_path, monkeypatch):
    from rcfmt.dataset.partitioning import Partitioning

    monkeypatch.setattr(Partitioning, "check_new_names", lambda self, existing=(): None)  # (an older writer)
    rcfmt.write_dataset(pa.table({"_p": [1, 2], "v": [3, 4]}), tmp_path / "ds", partition_by=["_p"])
    monkeypatch.undo()
    rcfmt.write_dataset(pa.table({"_p": [1], "v": [5]}), tmp_path / "ds")  # (its own partitioning: kept)
    assert sorted(rcfmt.dataset(tmp_path / "ds").read()["v"].to_pylist()) == [3, 4, 5]
    with pytest.raises(rcfmt.InvalidOptionError, match="cannot start with"):  # (a new one: refused)
        rcfmt.write_dataset(pa.table({"_q": [1], "v": [5]}), tmp_path / "ds", mode="overwrite", partition_by=["_q"])


def test_a_partition_value_too_long_for_a_directory_name_is_an_rcfmt_error(tmp_path):
    value = "é" * 130  # 260 bytes of UTF-8, escaped: more than a file system's 255
    with pytest.raises(rcfmt.InvalidDataError, match="partition column 'p'.*longer than the file system allows"):
        rcfmt.write_dataset(pa.table({"p": ["a", value], "v": [1, 2]}), tmp_path / "ds", partition_by=["p"])
    assert rcfmt.write_dataset(pa.table({"p": ["a"], "v": [1]}), tmp_path / "ds", partition_by=["p"]).count_rows() == 1


@pytest.mark.parametrize("first, later", [
    (pa.array([0.5], pa.float32()), pa.array([0.1, 1e300])),  # (rounded, and inf)
    (pa.array([True]), pa.array([2, 0, -1])),
    (pa.array([dt.date(2024, 1, 1)]), pa.array([dt.datetime(2024, 1, 2, 13, 30)], pa.timestamp("us"))),
    (pa.array(["a"]), pa.array([7])),
    (pa.array([b"a"]), pa.array(["b"])),
    (pa.array([1], pa.duration("s")), pa.array([5])),
    (pa.array([1], pa.int32()), pa.array([2**40])),
])
def test_later_items_of_a_write_that_do_not_fit_the_first_s_types_are_refused(tmp_path, first, later):
    """Items of one write_dataset call widen into the first one's types or are refused,
    as appends are (a cast changed their values)."""
    with pytest.raises(rcfmt.SchemaError, match="does not fit the dataset's"):
        rcfmt.write_dataset([pa.table({"x": first}), pa.table({"x": later})], tmp_path / "ds")
    assert not (tmp_path / "ds").exists() or rcfmt.dataset(tmp_path / "ds").count_rows() == 0


def test_later_items_that_widen_name_another_zone_or_hold_only_nulls_are_taken(tmp_path):
    """Widenings, aware timestamps in another zone (under structs and lists too: Spark's
    batches name the session's) and columns of NULLs only (a chunk of an empty column:
    Arrow's null type, or pandas' float NaN) fit."""
    def item(i, t, zone, s):
        ts = pa.array([t], pa.timestamp("us", zone))
        return pa.table({"i": i, "t": ts, "st": pa.StructArray.from_arrays([ts], ["t"]),
                         "l": pa.array([[t]], pa.list_(pa.timestamp("us", zone))), "s": s})
    items = [item(pa.array([1], pa.int64()), 0, "UTC", pa.array(["a"])),
             item(pa.array([2], pa.int32()), 1, "America/Los_Angeles", pa.nulls(1)),
             item(pa.array([3], pa.int64()), 2, "Europe/Paris", pa.array([None], pa.float64()))]
    got = rcfmt.write_dataset(items, tmp_path / "ds").read()
    assert got["i"].to_pylist() == [1, 2, 3] and got["t"].cast(pa.int64()).to_pylist() == [0, 1, 2]
    assert got["s"].to_pylist() == ["a", None, None] and got["l"].type == pa.list_(pa.timestamp("us", "UTC"))


def test_a_date_partition_past_year_9999_is_an_rcfmt_error(tmp_path):
    days = pa.array([0, 3_000_000], pa.int32()).view(pa.date32())  # (year ~10183: no Python date names it)
    with pytest.raises(rcfmt.InvalidDataError, match="partition column 'd'.*years 1-9999"):
        rcfmt.write_dataset(pa.table({"d": days, "v": [1, 2]}), tmp_path / "ds", partition_by=["d"])


def test_negative_scale_decimals_beyond_38_digits_in_the_stats_index(tmp_path):
    """decimal128(38, -2) holding 1E+39 (unscaled 10**37): the index's statistics are
    built from the unscaled integers (as Decimals, pyarrow refused to rescale them)."""
    unscaled = pa.array([10**37, 5, None], pa.decimal128(38, 0))
    t = pa.table({"d": pa.Array.from_buffers(pa.decimal128(38, -2), 3, unscaled.buffers()), "i": [0, 1, 2]})
    ds = rcfmt.write_dataset(t, tmp_path / "ds")
    assert rcfmt.dataset(tmp_path / "ds").read().equals(t)
    import decimal

    assert ds.read(filter=col("d") > decimal.Decimal("1E+38"))["i"].to_pylist() == [0]
    assert ds.count_rows(filter=col("d") < decimal.Decimal("1E+3")) == 1


def test_a_partition_directory_whose_escapes_are_not_utf8_is_an_rcfmt_error(tmp_path):
    os.makedirs(tmp_path / "k=%FF")
    rcfmt.write_table(pa.table({"v": [1]}), tmp_path / "k=%FF" / "f.rcfmt")
    with pytest.raises(rcfmt.InvalidDataError, match="'%FF': its %-escapes are not UTF-8 text"):
        rcfmt.dataset(tmp_path).read()


def test_append_uses_partitioning_and_checks_schema(tmp_path, table):
    rcfmt.write_dataset(table, tmp_path, partition_by="day")
    ds = rcfmt.write_dataset(table, tmp_path)  # keeps partition_by=day
    assert ds.version == 2 and ds.partition_by == ["day"] and ds.num_rows == 2000
    before = _files(tmp_path)
    with pytest.raises(rcfmt.SchemaError, match="'s'"):  # string -> int64 would lose every value
        rcfmt.write_dataset(table.set_column(table.schema.get_field_index("s"), "s", table["id"]), tmp_path)
    with pytest.raises(rcfmt.SchemaError):
        rcfmt.write_dataset(table, tmp_path, partition_by=["region"])
    day = table.schema.get_field_index("day")
    with pytest.raises(rcfmt.SchemaError, match=r"dataset's \['day'\] \(\['date32\[day\]'\]\)"):
        rcfmt.write_dataset(table.set_column(day, "day", table["day"].cast(pa.string())), tmp_path)  # types named
    with pytest.raises(rcfmt.InvalidOptionError):
        rcfmt.write_dataset(table, tmp_path, compression="brotli")
    with pytest.raises(rcfmt.InvalidOptionError):
        rcfmt.write_dataset(table, tmp_path, mode="upsert")
    assert _files(tmp_path) == before  # nothing written by refused writes
    # large_string data appends to a string dataset and reads back as string
    big = table.cast(pa.schema([f.with_type(pa.large_string()) if f.type == pa.string() else f
                                for f in table.schema]))
    ds = rcfmt.write_dataset(big, tmp_path)
    assert ds.read().schema.field("s").type == pa.string()


def test_overwrite_replaces_files_and_schema(tmp_path, table):
    rcfmt.write_dataset(table, tmp_path, partition_by=["day"])
    t2 = pa.table({"a": [1, 2, 3]})
    ds = rcfmt.write_dataset(t2, tmp_path, mode="overwrite")
    assert ds.version == 2 and ds.read().equals(t2) and ds.partition_by == []
    assert ds.info["operation"] == "overwrite" and ds.info["removed_files"] == 4
    # the old version is still readable (time travel) until vacuumed
    old = rcfmt.dataset(tmp_path, version=1)
    assert old.num_rows == 1000
    removed = ds.vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert version_path(str(tmp_path), 1) in removed
    assert list_versions(str(tmp_path)) == [2]
    assert len(_data_files(tmp_path)) == 1 and rcfmt.dataset(tmp_path).read().equals(t2)


def test_target_file_rows_and_streaming_input(tmp_path, table):
    batches = table.to_batches(max_chunksize=77)
    ds = rcfmt.write_dataset(iter(batches), tmp_path, target_file_rows=300, block_rows=128)
    assert [f.num_rows for f in ds.files] == [300, 300, 300, 100]
    assert_tables_identical(ds.read(), table, check_metadata=False)
    reader = pa.RecordBatchReader.from_batches(table.schema, batches)
    ds = rcfmt.write_dataset(reader, tmp_path / "r")
    assert_tables_identical(ds.read(), table, check_metadata=False)


def test_clustering_sort_and_hook(tmp_path, table):
    shuffled = table.take(np.random.default_rng(0).permutation(1000))
    ds = rcfmt.write_dataset(shuffled, tmp_path, cluster_by=["x", "id"], curve="sort", block_rows=100)
    info = ds.info["clustering"]
    assert (info["columns"], info["curve"], info["mapping"], info["scope"]) == (["x", "id"], "sort", "rank", "file")
    got = ds.read()
    assert got["x"].to_pylist() == sorted(got["x"].to_pylist())
    scan = ds.scan(filter=col("x") == 5)
    assert scan.read().num_rows == 11 and scan.stats.blocks_pruned_stats == 9
    ds = rcfmt.write_dataset(shuffled, tmp_path / "z", cluster_by=["x", "id"], curve="zorder", block_rows=100)
    assert (ds.info["clustering"]["columns"], ds.info["clustering"]["curve"]) == (["x", "id"], "zorder")
    assert sorted(ds.read()["id"].to_pylist()) == list(range(1000))
    z = ds.scan(filter=(col("x") < 10) & (col("id") < 100))
    assert z.read().num_rows == sum(1 for i in range(100) if i % 97 < 10) and z.stats.blocks_pruned_stats > 0
    with pytest.raises(rcfmt.InvalidOptionError):
        rcfmt.write_dataset(table, tmp_path / "bad", cluster_by=["x"], curve="peano")


def test_history_and_versions(tmp_path, table):
    for _ in range(3):
        rcfmt.write_dataset(table.slice(0, 10), tmp_path)
    ds = rcfmt.dataset(tmp_path)
    first = rcfmt.dataset(tmp_path, version=1)
    assert first.refresh().version == 3
    hist = ds.history()
    assert [h["version"] for h in hist] == [1, 2, 3]
    assert [h["num_files"] for h in hist] == [1, 2, 3]
    assert rcfmt.dataset(tmp_path, version=2).num_rows == 20
    with pytest.raises(rcfmt.InvalidOptionError):
        rcfmt.dataset(tmp_path, version=9)


def test_index_is_an_rcfmt_file_with_typed_bounds(tmp_path, table):
    ds = rcfmt.write_dataset(table, tmp_path, target_file_rows=250)
    with rcfmt.open(version_path(str(tmp_path), ds.version)) as f:
        schema = f.schema
        assert schema.field("id.min").type == pa.int64()
        assert schema.field("day.max").type == pa.date32()
        assert schema.field("s.min").type == pa.binary()
        idx = f.read(filter=col("id.max") < 500)
        assert idx.num_rows == 2


def test_decimal_and_timestamp_bounds(tmp_path):
    t = pa.table({
        "d": pa.array([decimal.Decimal("1.50"), decimal.Decimal("-3.25"), None], pa.decimal128(5, 2)),
        "n": pa.array([decimal.Decimal("1E+3"), decimal.Decimal("-2E+1"), None], pa.decimal128(3, -1)),
        "ts": pa.array([0, 10**18, None], pa.timestamp("ns", tz="Europe/Paris")),
        "u": pa.array([0, 2**64 - 1, 5], pa.uint64()),
    })
    ds = rcfmt.write_dataset(t, tmp_path)
    s = ds.files[0].stats
    assert s["d"]["min"] == decimal.Decimal("-3.25") and s["d"]["max"] == decimal.Decimal("1.50")
    assert s["u"]["max"] == 2**64 - 1
    assert ds.read(filter=col("d") > decimal.Decimal("1.49")).num_rows == 1
    assert ds.read(filter=col("n") == 1000).num_rows == 1
    assert ds.scan(filter=col("u") > 2**64).stats.files_pruned == 1


def test_a_datasets_index_load_does_not_wait_on_another_datasets(tmp_path):
    """Each snapshot guards its own statistics columns: a filtered read of one dataset
    loads its index columns while another dataset's snapshot is in the middle of a load
    (its lock held by another thread), and threads sharing one snapshot still load a
    column once."""
    import threading

    table = pa.table({"k": np.arange(20_000, dtype=np.int64), "v": np.arange(20_000) * 0.5})
    one = rcfmt.write_dataset(table, str(tmp_path / "one"), target_file_rows=5_000)
    two = rcfmt.write_dataset(table, str(tmp_path / "two"), target_file_rows=5_000)
    holding, release = threading.Event(), threading.Event()

    def hold():
        with one.snapshot.loading:
            holding.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(60)
        done = []
        reader = threading.Thread(target=lambda: done.append(two.read(["k"], rcfmt.col("v") < 10).num_rows))
        reader.start()
        reader.join(60)
        assert done == [20]  # (with one lock for every snapshot, the read waits for the holder)
    finally:
        release.set()
        holder.join()
    results = []
    threads = [threading.Thread(target=lambda: results.append(one.read(["k"], rcfmt.col("v") < 10).num_rows))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [20] * 4
    names = one.snapshot.table.schema.names
    assert len(names) == len(set(names))


def test_dataset_scans_share_one_files_pool_and_finish_every_file_before_an_error(tmp_path, monkeypatch):
    """Files scanned in parallel run on the process's one "files" pool (no threads
    started per read: a 10-row take of 12 files paid 3 ms for them), answers equal the
    one-thread ones, and when one file fails every other file's scan has ended (its file
    closed) before the error is raised."""
    import threading

    from rcfmt.dataset import scanning
    from rcfmt.runtime.threads import MAX_FILE_THREADS

    monkeypatch.setattr(scanning, "_files_worth_threads", lambda frags: True)
    table = pa.table({"k": pa.array(np.arange(4000, dtype=np.int64)), "v": pa.array(np.arange(4000) * 0.5)})
    root = str(tmp_path / "ds")
    for i in range(6):
        rcfmt.write_dataset(table.slice(i * 600, 600), root, mode="append" if i else "overwrite")
    ds = rcfmt.dataset(root)
    want = ds.take([5, 1900, 3000, 3599], use_threads=False)
    for _ in range(4):
        assert ds.take([5, 1900, 3000, 3599]).equals(want)
        assert ds.read(filter=col("k") >= 3000).equals(ds.read(filter=col("k") >= 3000, use_threads=False))
    names = [t.name for t in threading.enumerate()]
    assert 1 <= sum(n.startswith("rcfmt-files") for n in names) <= MAX_FILE_THREADS
    assert not any(n.startswith("ThreadPoolExecutor") for n in names)

    ended, real = [], scanning.DatasetScan._read_fragment

    def failing(self, frag, use_threads):
        if frag is self.fragments[0]:
            raise rcfmt.CorruptFileError("forged", path=frag.path)
        try:
            return real(self, frag, use_threads)
        finally:
            ended.append(frag.path)

    monkeypatch.setattr(scanning.DatasetScan, "_read_fragment", failing)
    with pytest.raises(rcfmt.CorruptFileError, match="forged"):
        ds.read()
    assert len(ended) == len(ds.get_fragments()) - 1


def test_a_write_keeps_at_most_max_open_files_open(tmp_path, monkeypatch):
    """Partitions written in turn: a new partition's file first finishes the one
    written longest ago, so the writer never holds more than MAX_OPEN_FILES files
    (file descriptors, blocks in memory); every row lands in its partition."""
    import rcfmt.dataset.files as files

    monkeypatch.setattr(files, "MAX_OPEN_FILES", 4)
    most, new_file = [0], files.FileSetWriter._new_file

    def counting(self, key):
        out = new_file(self, key)
        most[0] = max(most[0], len(self._open))
        return out

    monkeypatch.setattr(files.FileSetWriter, "_new_file", counting)
    keys = [i % 50 for i in range(1000)]
    table = pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(range(1000), pa.int64())})
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=100))
    ds = rcfmt.write_dataset(reader, str(tmp_path / "d"), partition_by="k")
    assert most[0] == 4 and ds.num_files >= 50
    got = ds.read().sort_by("v")
    assert got.column("v").to_pylist() == list(range(1000)) and got.column("k").to_pylist() == keys


def test_more_partitions_than_open_files_allowed_in_a_fresh_interpreter(tmp_path):
    """600 partitions in one write under a limit of 200 open files (the default cap is
    128 files): no "too many open files", every row read back."""
    import subprocess
    import sys

    code = f"""
import resource
resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))
import pyarrow as pa, rcfmt
t = pa.table({{"k": pa.array([i % 600 for i in range(3000)]), "v": pa.array(range(3000))}})
ds = rcfmt.write_dataset(t, {str(tmp_path / "d")!r}, partition_by="k")
assert ds.read().num_rows == 3000 and ds.num_files >= 600, ds.num_files
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
