"""Range bounds and bucket ids ("rank" mapping): definition, spreading of skewed,
low-cardinality and common-prefix data, determinism, JSON."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strategies as S
from rcfmt.errors import InvalidOptionError
from rcfmt.layout import (
    bounds_from_json,
    bounds_from_sample,
    bounds_to_json,
    bucket_ids,
    cluster_keys,
    range_bounds,
    sample_column,
)

from .oracle import NULL, sort_keys


@settings(max_examples=S.examples(150))
@given(arr=S.chunked_arrays(S.primitive_types, size=st.integers(0, 60)), num_buckets=st.integers(1, 12))
def test_bounds_and_ids_follow_their_definition(arr, num_buckets):
    bounds = range_bounds(arr, num_buckets=num_buckets)
    assert bounds.null_count == 0 and bounds.type == arr.type
    bkeys = sort_keys(bounds)
    assert bkeys == sorted(set(bkeys))  # sorted, distinct
    assert len(bounds) <= max(num_buckets - 1, 0)
    ids = bucket_ids(arr, bounds)
    assert ids.dtype == np.int64
    for key, i in zip(sort_keys(arr), ids.tolist()):
        expected = 0 if key == NULL else 1 + sum(b < key for b in bkeys)
        assert i == expected


@settings(max_examples=S.examples(100))
@given(arr=S.arrays(S.primitive_types, size=st.integers(1, 60)))
def test_few_distinct_values_get_one_bucket_each(arr):
    bounds = range_bounds(arr, num_buckets=1000)
    distinct = {k for k in sort_keys(arr) if k != NULL}
    assert len(bounds) == max(len(distinct) - 1, 0)
    ids = bucket_ids(arr, bounds)
    by_value = {}
    for key, i in zip(sort_keys(arr), ids.tolist()):
        by_value.setdefault(key, set()).add(i)
    assert all(len(v) == 1 for v in by_value.values())
    assert len({next(iter(v)) for k, v in by_value.items() if k != NULL}) == len(distinct)


def _spread(keys: np.ndarray) -> tuple[int, float]:
    """(distinct keys, largest fraction of rows sharing one key)."""
    _, counts = np.unique(keys, return_counts=True)
    return len(counts), counts.max() / len(keys)


def test_rank_spreads_skewed_data_over_the_curve():
    rng = np.random.default_rng(7)
    values = np.round(rng.lognormal(3, 2, 200_000)).astype(np.int64)  # heavy right tail, many small values
    t = pa.table({"x": values})
    rank = cluster_keys(t, ["x"], mapping="rank", num_buckets=256)
    direct = cluster_keys(t, ["x"], mapping="direct", key_bits=32)
    n_rank, worst_rank = _spread(rank)
    n_direct, _ = _spread(direct)
    assert n_direct == 1  # int64 values far below 2**32 share their high 32 bits
    assert n_rank >= 100
    # no bucket much fuller than one equal share, except single values too frequent to split
    single_value_share = np.unique(values, return_counts=True)[1].max() / len(values)
    assert worst_rank <= max(3 / 256, single_value_share * 1.01)
    # the keys span the whole 64-bit range
    assert int(rank.min()) < 2**58 and int(rank.max()) > 2**64 - 2**58


def test_rank_spreads_low_cardinality_columns():
    t = pa.table({"flag": pa.array(np.tile(np.array([0, 1, 2], np.int64), 1000)),
                  "x": pa.array(np.arange(3000.0))})
    rank = cluster_keys(t, ["flag"], "zorder", "rank")
    values = sorted(set(rank.tolist()))
    assert len(values) == 3
    assert values[-1] >= 2**63  # spread over the curve, not huddled in the low bits
    direct = cluster_keys(t, ["flag"], "zorder", "direct", key_bits=32)
    assert len(set(direct.tolist())) == 1

    # over two columns, the low-cardinality one takes the top bits of its dimension:
    # each of its values sits in a few runs of the order, not scattered
    def runs(mapping):
        order = np.argsort(cluster_keys(t, ["flag", "x"], "zorder", mapping), kind="stable")
        flags = t.column("flag").to_numpy()[order]
        return 1 + int(np.count_nonzero(np.diff(flags)))

    assert runs("rank") <= 6
    assert runs("direct") == 3000  # flag ignored: rows follow x, flags alternate


def test_rank_spreads_strings_with_a_long_common_prefix():
    ids = np.random.default_rng(3).permutation(50_000)
    s = pa.array([f"Customer#{i:012d}" for i in ids])
    t = pa.table({"s": s})
    direct = cluster_keys(t, ["s"], mapping="direct")
    rank = cluster_keys(t, ["s"], mapping="rank", num_buckets=512)
    assert len(set(direct.tolist())) == 1  # the first 8 bytes are all "Customer"
    n, worst = _spread(rank)
    assert n == 512 and worst <= 2 / 512
    order = np.argsort(rank, kind="stable")
    ranks = np.asarray(ids)[order]  # every row lands within one bucket of its sorted place
    assert np.abs(ranks - np.arange(len(ranks))).max() <= 2 * len(ranks) / 512


def test_sampling_is_deterministic():
    rng = np.random.default_rng(0)
    col = pa.chunked_array([rng.normal(size=30_000), rng.normal(size=40_000)])
    a = range_bounds(col, num_buckets=100, sample_size=5_000, seed=3)
    b = range_bounds(col, num_buckets=100, sample_size=5_000, seed=3)
    c = range_bounds(col, num_buckets=100, sample_size=5_000, seed=4)
    assert a.equals(b) and not a.equals(c)
    assert sample_column(col, 1000, seed=1).equals(sample_column(col, 1000, seed=1))
    assert len(sample_column(col, 1000)) == 1000
    t = pa.table({"x": col, "y": col})
    k1 = cluster_keys(t, ["x", "y"], "hilbert", sample_size=5_000, seed=9)
    k2 = cluster_keys(t, ["x", "y"], "hilbert", sample_size=5_000, seed=9)
    np.testing.assert_array_equal(k1, k2)


def test_bounds_from_sample_matches_range_bounds_on_a_full_sample():
    col = pa.array(np.random.default_rng(2).integers(0, 10_000, 20_000))
    assert range_bounds(col, 64, sample_size=10**9).equals(bounds_from_sample(col, 64))


def test_dominant_value_takes_one_bucket():
    values = np.zeros(10_000, np.int64)
    values[:1000] = np.arange(1, 1001)
    bounds = bounds_from_sample(pa.array(values), 100)
    assert bounds[0].as_py() == 0
    assert 50 <= len(bounds) <= 99
    assert len(np.unique(bucket_ids(pa.array(values), bounds))) == len(bounds) + 1


# ----------------------------------------------------------------------------- JSON
@settings(max_examples=S.examples(150))
@given(arr=S.arrays(S.primitive_types, size=st.integers(0, 30)))
def test_bounds_json_round_trip(arr):
    import json

    bounds = range_bounds(arr, num_buckets=8)
    text = json.dumps(bounds_to_json(bounds), allow_nan=False)
    back = bounds_from_json(json.loads(text))
    assert back.type == bounds.type
    np.testing.assert_array_equal(bucket_ids(arr, back), bucket_ids(arr, bounds))
    assert sort_keys(back) == sort_keys(bounds)


def test_bounds_json_of_special_floats():
    b = pa.array([float("-inf"), -0.0, 1.5, float("inf"), float("nan")])
    obj = bounds_to_json(b)
    assert obj["values"] == ["-Infinity", 0.0, 1.5, "Infinity", "NaN"]
    back = bounds_from_json(obj)
    assert np.isnan(back[4].as_py()) and back[0].as_py() == float("-inf")


@pytest.mark.parametrize("t,values", [
    (pa.date64(), [0, 86_400_000]), (pa.time32("s"), [1, 2]), (pa.time64("ns"), [5, 6]),
    (pa.duration("ms"), [-3, 4]), (pa.timestamp("ns", tz="Asia/Kathmandu"), [-(2**62), 2**62]),
])
def test_bounds_json_of_other_temporal_types(t, values):
    storage = pa.int32() if pa.types.is_time32(t) else pa.int64()
    b = pa.array(values, storage).view(t)
    back = bounds_from_json(bounds_to_json(b))
    assert back.equals(b)
    assert bucket_ids(b, back).tolist() == [1, 2]


# ----------------------------------------------------------------------------- errors
def test_bounds_must_be_sorted_distinct_and_fit():
    col = pa.array([1, 2, 3])
    with pytest.raises(InvalidOptionError, match="sorted"):
        bucket_ids(col, [3, 1])
    with pytest.raises(InvalidOptionError, match="sorted"):
        bucket_ids(col, [1, 1])
    with pytest.raises(InvalidOptionError, match="NULL"):
        bucket_ids(col, [1, None])
    with pytest.raises(InvalidOptionError):
        bucket_ids(col, ["a"])
    with pytest.raises(InvalidOptionError, match="sorted"):
        bucket_ids(pa.array(["a"]), ["b", "a"])
    with pytest.raises(InvalidOptionError):
        range_bounds(col, num_buckets=0)
    with pytest.raises(InvalidOptionError):
        range_bounds(col, sample_size=0)
    with pytest.raises(ValueError):
        bounds_from_json({"type": {"type": "list"}, "values": []})
