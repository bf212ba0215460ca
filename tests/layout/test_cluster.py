"""cluster(), ClusteringSpec and errors: same rows, recorded spec, clear failures."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from rcfmt.errors import InvalidOptionError, SchemaError
from rcfmt.layout import METADATA_KEY, ClusteringSpec, cluster, cluster_keys, cluster_order


def _rows(table: pa.Table) -> list:
    """Rows as tuples of storage bytes (NaN == NaN, any date in range), NULL as None."""
    cols = []
    for c in table.columns:
        valid = S.validity_of(c)
        values = S.storage_of(c)
        cols.append([(v.tobytes() if hasattr(v, "tobytes") else v) if ok else None for v, ok in zip(values, valid)])
    return list(zip(*cols))


@settings(max_examples=S.examples(80))
@given(table=S.tables(S.schemas(min_fields=1, max_fields=5), rows=st.integers(0, 50)), data=st.data())
def test_cluster_keeps_the_multiset_of_rows(table, data):
    by = data.draw(st.lists(st.sampled_from(table.column_names), min_size=1, unique=True))
    curve = data.draw(st.sampled_from(["zorder", "hilbert", "sort"]))
    mapping = data.draw(st.sampled_from(["rank", "direct"]))
    out = cluster(table, by, curve, mapping)
    assert out.schema == table.schema
    assert sorted(map(repr, _rows(out))) == sorted(map(repr, _rows(table)))
    taken = table.take(pa.array(cluster_order(table, by, curve, mapping)))
    assert repr(_rows(out)) == repr(_rows(taken))  # (Table.equals says NaN != NaN)


def test_cluster_accepts_record_batches_dicts_and_pandas():
    data = {"a": [3, 1, 2], "b": ["z", "y", "x"]}
    expected = cluster(pa.table(data), ["a", "b"])
    assert cluster(data, ["a", "b"]).equals(expected)
    assert cluster(pa.table(data).to_batches()[0], ["a", "b"]).equals(expected)
    pd = pytest.importorskip("pandas")
    assert cluster(pd.DataFrame(data), ["a", "b"]).to_pydict() == expected.to_pydict()


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
@pytest.mark.parametrize("mapping", ["rank", "direct"])
def test_clustering_shrinks_block_boxes(curve, mapping):
    """Over two uniform columns, 16 blocks of a curve order cover the plane about once
    (the sum of their min/max box areas is small); a random order covers it 16 times."""
    rng = np.random.default_rng(5)
    n = 1 << 16
    t = pa.table({"x": rng.integers(-5_000, 5_000, n).astype(np.int16), "y": rng.random(n)})
    out = cluster(t, ["x", "y"], curve, mapping)
    xs = out.column("x").to_numpy().reshape(16, -1).astype(float)
    ys = out.column("y").to_numpy().reshape(16, -1)
    area = ((xs.max(1) - xs.min(1)) / 10_000 * (ys.max(1) - ys.min(1))).sum()
    assert area < 2.5


# ----------------------------------------------------------------------------- spec
def test_spec_json_round_trip_keeps_keys():
    rng = np.random.default_rng(0)
    t = pa.table({
        "d": pa.array(rng.integers(8000, 11000, 5000), pa.int32()).cast(pa.date32()),
        "p": rng.integers(1, 200_000, 5000),
        "s": pa.array([f"s{v}" for v in rng.integers(0, 50, 5000)]),
        "m": pa.array([None if v % 7 == 0 else float(v) for v in range(5000)]),
        "dec": pa.array([v * 3 for v in range(5000)], pa.int64()).cast(pa.decimal128(30, 2)),
        "b": pa.array([bytes([v % 256, 7]) for v in range(5000)]),
    })
    for curve in ("zorder", "hilbert"):
        spec = ClusteringSpec(list(t.column_names), curve=curve, num_buckets=64, key_bits=128).fit(t)
        assert spec.fitted
        text = spec.to_json()
        json.loads(text)  # strict JSON (no NaN literals)
        back = ClusteringSpec.from_json(text.encode())
        assert back == spec and back.fitted
        np.testing.assert_array_equal(back.keys(t), spec.keys(t))
        # fitted bounds are used as they are, even on other data
        part = t.slice(0, 100)
        np.testing.assert_array_equal(back.keys(part), spec.keys(t)[:100])
        assert spec.apply(t).equals(cluster(t, list(t.column_names), curve, bounds=spec.bounds, key_bits=128))
    assert str(ClusteringSpec(["d", "p"], curve="hilbert")) == "hilbert[rank](d, p)"
    assert not ClusteringSpec(["d"]).fitted and ClusteringSpec(["d"], mapping="direct").fitted


def test_spec_without_bounds_and_defaults():
    spec = ClusteringSpec("a")
    assert spec.columns == ("a",) and spec.curve == "zorder" and spec.mapping == "rank"
    obj = json.loads(spec.to_json())
    assert obj == {"version": 1, "columns": ["a"], "curve": "zorder", "mapping": "rank", "key_bits": 64,
                   "num_buckets": 1024, "sample_size": 100000, "seed": 0}
    assert ClusteringSpec.from_json(spec.to_json()) == spec
    fitted = spec.fit(pa.table({"a": [1, 2, 3]}))
    assert "bounds" not in json.loads(fitted.to_json(include_bounds=False))


def test_spec_in_file_metadata(tmp_path):
    rng = np.random.default_rng(1)
    t = pa.table({"x": rng.integers(0, 1000, 20_000), "y": rng.normal(size=20_000)})
    spec = ClusteringSpec(["x", "y"], curve="hilbert").fit(t)
    path = tmp_path / "c.rcfmt"
    rcfmt.write_table(spec.apply(t), path, block_rows=2048, metadata={METADATA_KEY: spec.to_json()})
    with rcfmt.open(path) as f:
        back = ClusteringSpec.from_metadata(f.metadata)
        assert back == spec
        np.testing.assert_array_equal(back.keys(f.read()), spec.keys(spec.apply(t)))
        assert ClusteringSpec.from_metadata({}) is None


@pytest.mark.parametrize("text", [
    "not json", "[]", '{"columns": []}', '{"columns": ["a"], "curve": "spiral"}',
    '{"columns": ["a"], "version": 99}', '{"columns": ["a"], "bounds": {"a": {"type": {"type": "list"}, "values": []}}}',
    '{"columns": ["a"], "mapping": "direct", "bounds": {"a": {"type": {"type": "int64"}, "values": [1]}}}',
    '{"columns": ["a"], "bounds": {"b": {"type": {"type": "int64"}, "values": [1]}}}',
    '{"columns": ["a"], "num_buckets": 0}', '{"columns": ["a", "b"], "key_bits": 1}',
    '{"columns": ["a"], "bounds": {"a": {"type": {"type": "int64"}, "values": [1, null]}}}',
    '{"columns": ["a"], "bounds": {"a": {"type": {"type": "decimal128", "precision": 38, "scale": 0}, '
    '"values": ["1' + "0" * 60 + '"]}}}',
    '{"columns": ["a"], "bounds": {"a": {"type": {"type": "decimal128", "precision": 38, "scale": 0}, "values": [1]}}}',
])
def test_malformed_specs_raise(text):
    with pytest.raises(InvalidOptionError):
        ClusteringSpec.from_json(text)


# ----------------------------------------------------------------------------- errors
def test_errors_are_clear():
    t = pa.table({"a": [1, 2], "l": pa.array([[1], [2]]), "s": ["x", "y"]})
    with pytest.raises(SchemaError, match="unknown clustering column 'zz'"):
        cluster_order(t, ["zz"])
    with pytest.raises(SchemaError, match="cannot cluster by a column of type list"):
        cluster_keys(t, ["l"])
    with pytest.raises(SchemaError, match="cannot cluster by a column of type list"):
        cluster_order(t, ["l"], "sort")
    with pytest.raises(InvalidOptionError, match="curve"):
        cluster_order(t, ["a"], "peano")
    with pytest.raises(InvalidOptionError, match="mapping"):
        cluster_order(t, ["a"], "zorder", "ranks")
    with pytest.raises(InvalidOptionError, match="non-empty"):
        cluster_order(t, [])
    with pytest.raises(InvalidOptionError, match="repeat"):
        cluster_order(t, ["a", "a"])
    with pytest.raises(InvalidOptionError, match="key_bits"):
        cluster_keys(t, ["a", "s"], key_bits=1)
    with pytest.raises(InvalidOptionError, match="rank"):
        cluster_keys(t, ["a"], mapping="direct", bounds={"a": [1]})
    with pytest.raises(InvalidOptionError, match="not clustered by"):
        cluster_keys(t, ["a"], bounds={"s": ["x"]})
    with pytest.raises(SchemaError):
        cluster(42, ["a"])
