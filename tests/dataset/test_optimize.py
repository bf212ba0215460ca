"""Dataset.optimize: clustered rewrites (in memory and range-split through spill files),
compaction, atomic commits against the version read, and the recorded clustering."""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import rcfmt
import rcfmt.dataset.optimize as optimize_module
from rcfmt import col
from rcfmt.dataset.log import list_versions, staging_root
from rcfmt.layout import METADATA_KEY, ClusteringSpec
from strategies import ALL_TYPES, assert_tables_identical, example_table, examples


def _by_id(t: pa.Table) -> pa.Table:
    return t.take(pc.sort_indices(t, [("id", "ascending")]))


def _data_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
                  if not os.path.relpath(d, root).startswith("_rcfmt"))


@pytest.fixture
def grid():
    """Two independent uniform columns in random order, plus a payload."""
    rng = np.random.default_rng(7)
    n = 20_000
    return pa.table({"id": np.arange(n), "x": rng.integers(0, 1000, n), "y": rng.integers(0, 1000, n),
                     "s": pa.array([f"payload-{i % 101}" for i in range(n)])})


@pytest.fixture(params=[False, True], ids=["in_memory", "range_split"])
def split(request, monkeypatch):
    """Run a test through both paths of optimize (range split: via spill files)."""
    if request.param:
        monkeypatch.setattr(optimize_module, "IN_MEMORY_ROWS", 0)
    return request.param


# ---------------------------------------------------------------- same rows, better skipping
@pytest.mark.parametrize("curve", ["zorder", "hilbert", "sort"])
def test_optimize_keeps_rows_and_skips_more(tmp_path, grid, split, curve):
    ds = rcfmt.write_dataset(grid, tmp_path, target_file_rows=2000, block_rows=500)
    query = (col("x") < 100) & (col("y") < 300) if curve != "sort" else col("x") < 100
    before = ds.scan(filter=query)
    expected = before.read()
    opt = ds.optimize(["x", "y"], curve=curve, target_file_rows=2000, block_rows=500)
    assert opt.version == 2 and opt.num_rows == grid.num_rows
    assert opt.info["operation"] == "optimize" and opt.info["removed_files"] == 10
    assert opt.info["clustering"]["columns"] == ["x", "y"] and opt.info["clustering"]["curve"] == curve
    assert opt.info["clustering"]["scope"] == "partition"
    assert_tables_identical(_by_id(opt.read()), _by_id(grid), check_metadata=False)
    sizes = [f.num_rows for f in opt.files]
    assert max(sizes) <= 2000 and (len(sizes) <= 13 if split else sizes == [2000] * 10)
    after = opt.scan(filter=query)
    assert_tables_identical(_by_id(after.read()), _by_id(expected), check_metadata=False)
    assert before.stats.files_pruned == 0
    assert after.stats.files_pruned >= 7  # 10% of x (and 30% of y): most files cannot match
    for f in opt.files:
        with rcfmt.open(f.path) as rf:
            spec = ClusteringSpec.from_metadata(rf.metadata)
            assert spec.columns == ("x", "y") and spec.curve == curve
            if curve == "sort":
                xs = rf.read(columns=["x"])["x"].to_numpy()
                assert (np.diff(xs) >= 0).all()
    if curve == "sort":  # the ranges of x of consecutive files do not overlap (up to bucket ties)
        lo = [f.stats["x"]["min"] for f in opt.files]
        hi = [f.stats["x"]["max"] for f in opt.files]
        order = np.argsort(lo)
        assert all(hi[a] <= lo[b] + 1 for a, b in zip(order[:-1], order[1:]))


def test_optimize_partitioned_dataset_stays_within_partitions(tmp_path, grid, split):
    t = grid.append_column("part", pa.array([["a", "b", None][i % 3] for i in range(grid.num_rows)]))
    ds = rcfmt.write_dataset(t, tmp_path, partition_by=["part"], target_file_rows=1500)
    opt = ds.optimize(["y", "x"], curve="hilbert", target_file_rows=1500)
    assert_tables_identical(_by_id(opt.read()).select(t.column_names), _by_id(t), check_metadata=False)
    for f in opt.files:
        rows = opt.read(filter=col("id").isin(
            rcfmt.open(f.path).read(columns=["id"])["id"].to_pylist()))
        assert set(rows["part"].to_pylist()) == {f.partition["part"]}
    assert {f.relpath.split("/")[0] for f in opt.files} == {"part=a", "part=b", "part=__HIVE_DEFAULT_PARTITION__"}


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), names=st.lists(st.sampled_from(
    ["i8", "u64", "f32", "f64", "str", "bin", "date", "i64", "bool"]), min_size=1, max_size=3, unique=True),
    curve=st.sampled_from(["zorder", "hilbert", "sort"]), mapping=st.sampled_from(["rank", "direct"]),
    in_memory=st.booleans())
def test_optimize_every_type_same_multiset(tmp_path_factory, monkeypatch, seed, names, curve, mapping, in_memory):
    """NULLs, NaN with payloads, -0.0, extremes, long common prefixes: nothing lost or changed."""
    t = example_table(700, seed=seed, types={k: ALL_TYPES[k] for k in ["i8", "u64", "f32", "f64", "str", "bin",
                                                                          "date", "i64", "bool"]})
    t = t.append_column("id", pa.array(np.arange(t.num_rows)))
    monkeypatch.setattr(optimize_module, "IN_MEMORY_ROWS", 1 << 30 if in_memory else 0)
    root = tmp_path_factory.mktemp("opt")
    ds = rcfmt.write_dataset(t, root, target_file_rows=256, block_rows=64)
    opt = ds.optimize(names, curve=curve, mapping=mapping, target_file_rows=200, block_rows=64)
    assert_tables_identical(_by_id(opt.read()), t, check_metadata=False)
    assert max(f.num_rows for f in opt.files) <= 200


def test_range_split_spreads_a_frequent_key(tmp_path, monkeypatch):
    """90% of rows share one key: ranges sharing that boundary split it evenly."""
    monkeypatch.setattr(optimize_module, "IN_MEMORY_ROWS", 0)
    n = 10_000
    x = np.where(np.arange(n) % 10 == 0, np.arange(n), 5)
    t = pa.table({"id": np.arange(n), "x": x})
    ds = rcfmt.write_dataset(t, tmp_path, target_file_rows=1000)
    opt = ds.optimize("x", curve="zorder", target_file_rows=1000)
    sizes = sorted(f.num_rows for f in opt.files)
    assert len(sizes) <= 12 and sizes[-1] <= 1000 and sizes[len(sizes) // 2] >= 700
    assert_tables_identical(_by_id(opt.read()), t, check_metadata=False)
    assert not os.listdir(staging_root(str(tmp_path)))


# ---------------------------------------------------------------- compaction, following the clustering
def test_compaction_without_clustering(tmp_path, grid):
    for i in range(4):
        ds = rcfmt.write_dataset(grid.slice(i * 5000, 5000), tmp_path, target_file_rows=3000)
    assert ds.num_files == 8
    opt = ds.optimize(target_file_rows=10_000)
    assert opt.num_files == 2 and opt.info["clustering"] is None
    assert_tables_identical(opt.read(), grid, check_metadata=False)  # order kept
    assert opt.optimize(target_file_rows=10_000) is opt  # nothing to do: no new version
    assert list_versions(str(tmp_path)) == [1, 2, 3, 4, 5]


def test_recorded_clustering_is_followed(tmp_path, grid):
    ds = rcfmt.write_dataset(grid.slice(0, 10_000), tmp_path, target_file_rows=5000)
    ds = ds.optimize(["x", "y"], curve="hilbert", target_file_rows=5000)
    ds = rcfmt.write_dataset(grid.slice(10_000), tmp_path, target_file_rows=20_000)  # append follows it
    assert ds.info["clustering"]["curve"] == "hilbert" and ds.info["operation"] == "append"
    newest = [f for f in ds.files if f.num_rows == 10_000]
    assert len(newest) == 1
    with rcfmt.open(newest[0].path) as f:
        spec = ClusteringSpec.from_metadata(f.metadata)
        assert (spec.columns, spec.curve) == (("x", "y"), "hilbert")
        rows = f.read()
    keys = spec.fit(rows).keys(rows)
    assert (np.diff(keys.astype(np.float64)) >= 0).all()  # rows are in key order
    # optimize() with no arguments re-clusters by the recorded spec
    again = ds.optimize(target_file_rows=5000)
    assert again.num_files == 4 and again.info["clustering"]["columns"] == ["x", "y"]
    # cluster_by=[] opts out for one append
    plain = rcfmt.write_dataset(grid.slice(0, 100), tmp_path, cluster_by=[])
    with rcfmt.open([f for f in plain.files if f.num_rows == 100][0].path) as f:
        assert METADATA_KEY not in f.metadata


def test_an_append_leaving_a_clustering_column_out_is_not_clustered_and_keeps_the_policy(tmp_path, grid):
    """An append may leave out a nullable column (DATASET.md §3.1), a clustering one too:
    its files, where that column is NULL, are not clustered, and the dataset's recorded
    clustering stays for the appends and optimizes after it."""
    ds = rcfmt.write_dataset(grid.slice(0, 10_000), tmp_path, target_file_rows=5000).optimize(["x", "y"])
    ds = rcfmt.write_dataset(grid.slice(10_000, 100).select(["x"]), tmp_path)
    assert ds.info["clustering"]["columns"] == ["x", "y"] and ds.info["operation"] == "append"
    (new,) = [f for f in ds.files if f.num_rows == 100]
    with rcfmt.open(new.path) as f:
        assert METADATA_KEY not in f.metadata
    assert ds.read(filter=col("y").is_null()).column("x").to_pylist() == grid.column("x").to_pylist()[10_000:10_100]
    again = rcfmt.write_dataset(grid.slice(10_100, 100), tmp_path)
    (newest,) = [f for f in again.files if f.num_rows == 100 and f.path != new.path]
    with rcfmt.open(newest.path) as f:
        assert ClusteringSpec.from_metadata(f.metadata).columns == ("x", "y")


# ---------------------------------------------------------------- commits
def test_concurrent_append_is_kept(tmp_path, grid):
    ds = rcfmt.write_dataset(grid.slice(0, 8000), tmp_path, target_file_rows=2000)
    rcfmt.write_dataset(grid.slice(8000, 100), tmp_path)  # lands after ds was opened
    opt = ds.optimize(["x"], target_file_rows=2000)
    assert opt.version == 3 and opt.num_rows == 8100
    assert_tables_identical(_by_id(opt.read()), grid.slice(0, 8100), check_metadata=False)


def test_a_rebase_after_the_read_version_was_vacuumed(tmp_path, grid, monkeypatch):
    """An optimize that loses its version to a checkpoint rebases from the version it
    read as it holds it, though a vacuum removed that version from the store meanwhile
    (it was past the retention and no longer needed): no raw FileNotFoundError."""
    ds = rcfmt.write_dataset(grid.slice(0, 5000), tmp_path, target_file_rows=1000)
    old = os.path.getmtime(tmp_path / "_rcfmt" / "v00000000000000000001.rcfmt") - 7200
    os.utime(tmp_path / "_rcfmt" / "v00000000000000000001.rcfmt", (old, old))
    real = optimize_module.commit

    def meanwhile(*args, **kwargs):
        monkeypatch.setattr(optimize_module, "commit", real)
        rcfmt.dataset(tmp_path).checkpoint()  # version 2
        os.utime(tmp_path / "_rcfmt" / "v00000000000000000002.rcfmt", (old, old))  # (1 superseded long ago)
        assert rcfmt.dataset.vacuum(tmp_path, retention_seconds=3600)  # removes version 1
        assert list_versions(str(tmp_path)) == [2]
        return real(*args, **kwargs)

    monkeypatch.setattr(optimize_module, "commit", meanwhile)
    opt = ds.optimize(target_file_rows=5000)
    assert opt.version == 3 and opt.num_files == 1
    assert_tables_identical(_by_id(opt.read()), grid.slice(0, 5000), check_metadata=False)


def test_an_optimize_from_a_complete_snapshot_looks_the_latest_version_up(tmp_path):
    """An optimize of a Dataset whose snapshot has every index column (as delete()
    returns it) read long before: a vacuum may have removed version read + 1 since, so
    the commit must not create that version blindly (it was created again below the
    latest, and the optimize's commit was lost)."""
    from rcfmt.dataset.log import list_versions

    for i in range(4):
        rcfmt.write_dataset(pa.table({"a": [i, 10 + i], "b": ["x", "y"]}), tmp_path)
    ds = rcfmt.dataset(tmp_path).delete(col("a") == 0)  # version 5
    rcfmt.write_dataset(pa.table({"a": [100], "b": ["z"]}), tmp_path)  # 6
    rcfmt.dataset(tmp_path).checkpoint()  # 7
    rcfmt.dataset.vacuum(tmp_path, retention_seconds=0, enforce_retention_duration=False)
    assert list_versions(str(tmp_path)) == [7]
    out = ds.optimize()
    assert out.version == 8 and list_versions(str(tmp_path)) == [7, 8]
    assert sorted(rcfmt.dataset(tmp_path).read()["a"].to_pylist()) == [1, 2, 3, 10, 11, 12, 13, 100]


def test_a_checkpoint_rebases_after_the_read_version_was_vacuumed(tmp_path, grid):
    """The same for Dataset.checkpoint(): it rebases from the version it holds."""
    from rcfmt.dataset.log import version_path

    ds = rcfmt.write_dataset(grid.slice(0, 100), tmp_path)
    other = rcfmt.dataset(tmp_path).checkpoint()  # version 2, and version 1 goes
    old = os.path.getmtime(version_path(str(tmp_path), 1)) - 7200
    for v in (1, 2):  # (1 superseded by 2 long ago)
        os.utime(version_path(str(tmp_path), v), (old, old))
    assert rcfmt.dataset.vacuum(tmp_path, retention_seconds=3600) and list_versions(str(tmp_path)) == [2]
    again = ds.checkpoint()  # (read version 1, which is gone: loses the race for 2, rebases)
    assert again.version == 3 and other.version == 2 and again.num_rows == 100


def test_concurrent_overwrite_conflicts_and_changes_nothing(tmp_path, grid):
    ds = rcfmt.write_dataset(grid, tmp_path, target_file_rows=5000)
    rcfmt.write_dataset(grid.slice(0, 10), tmp_path, mode="overwrite")
    files = _data_files(tmp_path)
    with pytest.raises(rcfmt.CommitConflictError, match="removed meanwhile"):
        ds.optimize(["x", "y"], target_file_rows=5000)
    assert list_versions(str(tmp_path)) == [1, 2] and _data_files(tmp_path) == files
    assert rcfmt.dataset(tmp_path).num_rows == 10
    assert not os.listdir(staging_root(str(tmp_path)))


def test_old_version_stays_readable_and_history(tmp_path, grid):
    ds = rcfmt.write_dataset(grid, tmp_path, target_file_rows=5000)
    ds.optimize(["x", "y"], target_file_rows=5000)
    assert_tables_identical(rcfmt.dataset(tmp_path, version=1).read(), grid, check_metadata=False)
    ops = [h["operation"] for h in rcfmt.dataset(tmp_path).history()]
    assert ops == ["append", "optimize"]
    assert rcfmt.dataset(tmp_path).vacuum(retention_seconds=0, dry_run=True)  # the replaced files


def test_optimize_adopts_a_directory_without_index(tmp_path, grid):
    for i in range(3):
        rcfmt.write_table(grid.slice(i * 1000, 1000), tmp_path / f"f{i}.rcfmt")
    opt = rcfmt.dataset(tmp_path).optimize(["y"], curve="sort", target_file_rows=3000)
    assert opt.version == 1 and opt.num_files == 1
    assert opt.read()["y"].to_pylist() == sorted(grid.slice(0, 3000)["y"].to_pylist())


def test_bad_arguments_write_nothing(tmp_path, grid):
    ds = rcfmt.write_dataset(grid, tmp_path)
    files = _data_files(tmp_path)
    with pytest.raises(rcfmt.SchemaError, match="nope"):
        ds.optimize(["x", "nope"])
    with pytest.raises(rcfmt.InvalidOptionError):
        ds.optimize(["x"], curve="peano")
    with pytest.raises(rcfmt.InvalidOptionError):
        ds.optimize(["x"], mapping="fancy")
    with pytest.raises(rcfmt.InvalidOptionError):
        ds.optimize(["x"], target_file_rows=0)
    with pytest.raises(rcfmt.InvalidOptionError):
        ds.optimize(["x"], compression="snappy")
    assert list_versions(str(tmp_path)) == [1] and _data_files(tmp_path) == files
    assert json.loads(json.dumps(ds.info))["operation"] == "append"


# ---------------------------------------------------------------- review findings
def test_files_differing_in_nullability(tmp_path, grid, split):
    strict = pa.schema([f.with_nullable(False) for f in grid.schema])
    rcfmt.write_dataset(grid.slice(0, 10_000).cast(strict), tmp_path, target_file_rows=3000)
    ds = rcfmt.write_dataset(grid.slice(10_000), tmp_path, target_file_rows=3000)  # nullable columns
    opt = ds.optimize(["x", "s"], curve="zorder", target_file_rows=3000)
    assert_tables_identical(_by_id(opt.read()), _by_id(grid), check_metadata=False)


def test_many_ranges_take_several_spill_passes(tmp_path, grid, monkeypatch):
    monkeypatch.setattr(optimize_module, "IN_MEMORY_ROWS", 0)
    monkeypatch.setattr(optimize_module, "MAX_FANOUT", 3)  # 23 ranges: 3 groups, then 3, then 3
    ds = rcfmt.write_dataset(grid, tmp_path, target_file_rows=5000)
    opt = ds.optimize(["x", "y"], curve="hilbert", target_file_rows=1000)
    assert_tables_identical(_by_id(opt.read()), _by_id(grid), check_metadata=False)
    assert max(f.num_rows for f in opt.files) <= 1000 and opt.num_files <= 26
    assert opt.scan(filter=(col("x") < 100) & (col("y") < 100)).stats.files_pruned >= opt.num_files - 4
    assert not os.listdir(staging_root(str(tmp_path)))


@pytest.mark.parametrize("mapping", ["direct", "rank"])
def test_sort_split_is_exact_for_long_common_prefixes(tmp_path, monkeypatch, mapping):
    """Keys see only a string's first bytes; the sort split compares rows exactly, so
    consecutive files cover disjoint ranges."""
    monkeypatch.setattr(optimize_module, "IN_MEMORY_ROWS", 0)
    rng = np.random.default_rng(3)
    n = 12_000
    urls = [f"https://example.com/{v:06d}" for v in rng.permutation(n)]
    t = pa.table({"id": np.arange(n), "url": urls})
    ds = rcfmt.write_dataset(t, tmp_path, target_file_rows=4000)
    opt = ds.optimize(["url"], curve="sort", mapping=mapping, target_file_rows=2000)
    spans = sorted((f.stats["url"]["min"], f.stats["url"]["max"]) for f in opt.files)
    assert len(spans) >= 6
    assert all(hi < lo for (_, hi), (lo, _) in zip(spans[:-1], spans[1:])), spans
    assert opt.scan(filter=col("url") == "https://example.com/000123").stats.files_pruned == len(spans) - 1
    assert_tables_identical(_by_id(opt.read()), t, check_metadata=False)


def test_append_after_optimize_records_file_scope(tmp_path, grid):
    ds = rcfmt.write_dataset(grid.slice(0, 5000), tmp_path).optimize(["x"], curve="sort")
    assert ds.info["clustering"]["scope"] == "partition"
    ds = rcfmt.write_dataset(grid.slice(5000, 10), tmp_path)
    assert ds.info["clustering"]["scope"] == "file" and ds.info["clustering"]["columns"] == ["x"]


def test_optimize_skips_partitions_it_already_clustered(tmp_path, grid):
    t = grid.append_column("p", pa.array([["a", "b", "c"][i % 3] for i in range(grid.num_rows)]))
    ds = rcfmt.write_dataset(t, tmp_path, partition_by=["p"], target_file_rows=2000)
    ds = ds.optimize(["x", "y"], curve="hilbert", target_file_rows=2000)
    assert ds.info["rewritten_partitions"] == 3
    assert ds.optimize(["x", "y"], curve="hilbert", target_file_rows=2000) is ds  # nothing to do
    more = t.filter(pc.equal(t["p"], "b")).slice(0, 50)
    ds = rcfmt.write_dataset(more, tmp_path)
    again = ds.optimize(["x", "y"], curve="hilbert", target_file_rows=2000)
    assert again.info["rewritten_partitions"] == 1  # only the partition that changed
    assert again.num_rows == t.num_rows + 50
    assert again.optimize(["x", "y"], curve="zorder", target_file_rows=2000).info["rewritten_partitions"] == 3
    forced = rcfmt.dataset(tmp_path).optimize(["x", "y"], curve="zorder", target_file_rows=2000, force=True)
    assert forced.info["rewritten_partitions"] == 3
    assert rcfmt.dataset(tmp_path).optimize(["x", "y"], curve="zorder", target_file_rows=500).info[
        "rewritten_partitions"] == 3  # files above the new target


def test_where_selects_partitions(tmp_path, grid):
    days = pa.array([["2024-01-01", "2024-01-02", None][i % 3] for i in range(grid.num_rows)])
    t = grid.append_column("day", days.cast(pa.string()))
    ds = rcfmt.write_dataset(t, tmp_path, partition_by=["day"], target_file_rows=2000)
    before = {f.relpath for f in ds.files}
    opt = ds.optimize(["x"], curve="sort", target_file_rows=3000, where=col("day") >= "2024-01-02")
    assert opt.info["rewritten_partitions"] == 1
    after = {f.relpath for f in opt.files}
    untouched = {p for p in before if not p.startswith("day=2024-01-02/")}
    assert untouched <= after and not ({p for p in before if p.startswith("day=2024-01-02/")} & after)
    assert_tables_identical(_by_id(opt.read()).select(t.column_names), _by_id(t), check_metadata=False)
    nulls = opt.optimize(["x"], curve="sort", target_file_rows=3000, where=col("day").is_null())
    assert nulls.info["rewritten_partitions"] == 1
    assert opt.optimize(["x"], where=col("day") == "2030-01-01") is opt  # no partition selected
    with pytest.raises(rcfmt.InvalidOptionError, match="partition columns"):
        opt.optimize(["x"], where=col("x") > 5)
    with pytest.raises(rcfmt.SchemaError):
        opt.optimize(["x"], where=col("nope") > 5)


def test_decimal256_keys_cluster_in_numeric_order(tmp_path, split):
    """decimal256 (beyond decimal128's 38 digits too) clusters by order-preserving 32-byte
    keys: a sorted file holds the values in numeric order, NULLs first."""
    import decimal
    rng = np.random.default_rng(3)
    values = [None if k % 9 == 0 else decimal.Decimal(int(v)) * 10 ** 50 / 1000
              for k, v in enumerate(rng.integers(-10**15, 10**15, 900))]
    t = pa.table({"d": pa.array(values, pa.decimal256(70, 3)), "id": np.arange(900)})
    rcfmt.write_table(t, tmp_path / "f.rcfmt", cluster_by=["d"], curve="sort")
    got = rcfmt.read_table(tmp_path / "f.rcfmt").column("d").to_pylist()
    assert got == sorted(values, key=lambda v: (v is not None, v or 0))
    ds = rcfmt.write_dataset(t, tmp_path / "ds", target_file_rows=300)
    opt = ds.optimize(["d", "id"], target_file_rows=250)
    assert_tables_identical(_by_id(opt.read()), t, check_metadata=False)


def test_a_clustering_column_added_after_some_files_reads_null_in_them(tmp_path, split):
    """The range split samples the clustering columns of every file: files written before
    the column was added read it as NULL (they failed with 'unknown column')."""
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"id": pa.array(range(40), pa.int64())}), root, target_file_rows=10)
    rcfmt.dataset(root).evolve(add=[pa.field("n", pa.float64())])
    rcfmt.write_dataset(pa.table({"id": pa.array([50, 51], pa.int64()), "n": [1.5, -2.0]}), root)
    before = _by_id(rcfmt.dataset(root).read())
    after = rcfmt.dataset(root).optimize(["n"], target_file_rows=7)
    assert _by_id(after.read()).equals(before)


def test_optimize_of_a_handle_whose_files_were_vacuumed_is_a_corrupt_file_error(tmp_path, grid):
    root = tmp_path / "ds"
    rcfmt.write_dataset(grid, root, target_file_rows=5_000)
    stale = rcfmt.dataset(root)
    rcfmt.dataset(root).optimize(target_file_rows=20_000).vacuum(retention_seconds=0, enforce_retention_duration=False)
    for cluster_by in (None, ["x"]):
        with pytest.raises(rcfmt.CorruptFileError, match="missing"):
            stale.optimize(cluster_by, target_file_rows=3_000)
