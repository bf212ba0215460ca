"""write_table(cluster_by=...): same rows, recorded spec, and better skipping."""
import json

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt.layout import METADATA_KEY, ClusteringSpec


def _table(n=60_000, seed=3):
    rng = np.random.default_rng(seed)
    return pa.table({"a": rng.integers(0, 1_000_000, n), "b": rng.normal(size=n),
                     "s": pa.array([f"k{v:05d}" for v in rng.integers(0, 5000, n)])})


@pytest.mark.parametrize("curve", ["zorder", "hilbert", "sort"])
def test_clustered_write_keeps_rows_and_records_spec(tmp_path, curve):
    table = _table()
    path = tmp_path / "c.rcfmt"
    rcfmt.write_table(table, path, cluster_by=["a", "b"], curve=curve, block_rows=4096)
    back = rcfmt.read_table(path)
    key = ["a", "b", "s"]
    assert back.sort_by([(k, "ascending") for k in key]).equals(table.sort_by([(k, "ascending") for k in key]))
    with rcfmt.open(path) as f:
        spec = ClusteringSpec.from_json(f.metadata[METADATA_KEY].decode())
        assert spec.columns == ("a", "b") and spec.curve == curve
        assert json.loads(f.metadata[METADATA_KEY])  # tools can read it as JSON


def test_clustering_makes_both_columns_skip(tmp_path):
    table = _table()
    plain, clustered = tmp_path / "p.rcfmt", tmp_path / "c.rcfmt"
    rcfmt.write_table(table, plain, block_rows=4096)
    rcfmt.write_table(table, clustered, block_rows=4096, cluster_by=["a", "b"], curve="hilbert")
    query = (rcfmt.col("a") < 100_000) & (rcfmt.col("b") > 1.0)
    with rcfmt.open(plain) as f, rcfmt.open(clustered) as g:
        s1, s2 = f.scan(filter=query), g.scan(filter=query)
        assert s1.read().num_rows == s2.read().num_rows > 0
        assert s1.stats.blocks_pruned_stats == 0
        assert s2.stats.blocks_pruned_stats >= s2.stats.blocks_total // 2


def test_bad_cluster_arguments_raise_before_writing(tmp_path):
    path = tmp_path / "x.rcfmt"
    with pytest.raises(rcfmt.SchemaError):
        rcfmt.write_table(_table(100), path, cluster_by=["nope"])
    with pytest.raises(rcfmt.InvalidOptionError):
        rcfmt.write_table(_table(100), path, cluster_by=["a"], curve="peano")
    with pytest.raises(rcfmt.InvalidOptionError):
        rcfmt.write_table(_table(100), path, cluster_by=["a"], block_rows=0)
    for bad in ({"curve": "peano"}, {"mapping": "bogus"}):  # (checked without cluster_by too)
        with pytest.raises(rcfmt.InvalidOptionError, match="curve must be one of .* and mapping one of"):
            rcfmt.write_table(_table(100), path, **bad)
    assert not path.exists()


@pytest.mark.parametrize("curve", ["zorder", "hilbert", "sort"])
def test_clustered_write_of_string_and_binary_views(tmp_path, curve):
    """Views (Polars hands strings over as string_view), also inside a struct, a list
    and a map, are reordered with the rows (Arrow has no take kernel for them) whether
    they are the clustering key or not; the file holds the rows of the unclustered one."""
    n = 500
    keys = [(i * 7919) % n for i in range(n)]
    views = pa.array([f"s{k:04d}" for k in keys], pa.string_view())
    table = pa.table({
        "k": pa.array(keys, pa.int64()), "v": views, "b": pa.array([b"%d" % k for k in keys], pa.binary_view()),
        "st": pa.StructArray.from_arrays([views], ["a"]),
        "l": pa.array([[f"x{k}", None] for k in keys], pa.list_(pa.string_view())),
        "m": pa.array([[(f"k{k}", b"v")] for k in keys], pa.map_(pa.string_view(), pa.binary_view())),
    })
    plain, clustered = tmp_path / "plain.rcfmt", tmp_path / "clustered.rcfmt"
    rcfmt.write_table(table, plain)
    for by in (["k"], ["v", "k"]):
        rcfmt.write_table(table, clustered, cluster_by=by, curve=curve)
        got, want = rcfmt.read_table(clustered), rcfmt.read_table(plain)
        assert got.schema == want.schema
        assert got.sort_by("k").equals(want.sort_by("k"))
        if by == ["k"] and curve == "sort":
            assert got.column("k").to_pylist() == list(range(n))
            assert got.column("st").to_pylist() == [{"a": f"s{k:04d}"} for k in range(n)]
