"""Order guarantees of the clustering keys, for every type, under both mappings.

The oracle (``oracle.py``) orders values independently of rcfmt.layout; every test
compares keys against it."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strategies as S
from rcfmt.layout import bucket_ids, cluster_keys, cluster_order, range_bounds

from .oracle import assert_weakly_monotone, row_keys, sort_keys

ALL = S.primitive_types
#: types whose 64-bit normalized key is exact (injective on values)
EXACT = st.one_of(S.bool_type, S.integer_types, S.floating_types, S.temporal_types, S.decimal128_types(1, 18))


def _table(arr) -> pa.Table:
    return pa.table({"c": arr})


# ----------------------------------------------------------------------------- one column
@settings(max_examples=S.examples(150))
@given(arr=S.chunked_arrays(ALL, size=st.integers(0, 40)), curve=st.sampled_from(["zorder", "hilbert"]),
       mapping=st.sampled_from(["rank", "direct"]), key_bits=st.sampled_from([8, 32, 64, 128]))
def test_one_column_keys_are_monotone(arr, curve, mapping, key_bits):
    """1-D Z-order and Hilbert keys never invert the order of two values."""
    keys = cluster_keys(_table(arr), ["c"], curve, mapping, key_bits=key_bits)
    assert keys.dtype == np.uint64 and keys.shape[0] == len(arr)
    assert_weakly_monotone(keys, sort_keys(arr), where=f"{arr.type} {curve} {mapping} {key_bits}")


@settings(max_examples=S.examples(150))
@given(arr=S.arrays(ALL, size=st.integers(0, 40)), curve=st.sampled_from(["zorder", "hilbert"]))
def test_rank_keys_are_strictly_monotone_on_few_values(arr, curve):
    """With fewer distinct values than buckets, "rank" gives every value its own bucket,
    and the bucket search is exact (strings included): keys are order-isomorphic."""
    keys = cluster_keys(_table(arr), ["c"], curve, "rank")
    assert_weakly_monotone(keys, sort_keys(arr), strict=True, where=f"{arr.type}")


@settings(max_examples=S.examples(150))
@given(arr=S.arrays(EXACT, size=st.integers(0, 40)))
def test_direct_full_width_keys_are_strict(arr):
    """"direct" with all 64 bits is exact for fixed-width types, except that the two
    largest normalized keys share the top cell (so that 0 stays NULL's alone)."""
    keys = cluster_keys(_table(arr), ["c"], "zorder", "direct")
    oracle = sort_keys(arr)
    assert_weakly_monotone(keys, oracle)
    top = np.uint64(2**64 - 1)
    for i in range(len(arr)):
        for j in range(len(arr)):
            if oracle[i] < oracle[j] and keys[j] != top:
                assert keys[i] < keys[j], (oracle[i], oracle[j])


@settings(max_examples=S.examples(100))
@given(arr=S.arrays(ALL, size=st.integers(0, 40)), mapping=st.sampled_from(["rank", "direct"]),
       curve=st.sampled_from(["zorder", "hilbert", "sort"]))
def test_nulls_come_first(arr, mapping, curve):
    keys = cluster_keys(_table(arr), ["c"], curve, mapping)
    valid = S.validity_of(arr)
    if valid.any() and not valid.all():
        k = keys if keys.ndim == 1 else keys[:, 0]
        assert k[~valid].max() < k[valid].min()
        assert (k[~valid] == 0).all()


@settings(max_examples=S.examples(60))
@given(arr=S.chunked_arrays(ALL, size=st.integers(0, 40)), batch_rows=st.integers(1, 7),
       mapping=st.sampled_from(["rank", "direct"]), curve=st.sampled_from(["zorder", "hilbert", "sort"]))
def test_keys_do_not_depend_on_chunks_or_batches(arr, batch_rows, mapping, curve):
    combined = _table(arr.combine_chunks())
    bounds = {"c": range_bounds(arr)} if mapping == "rank" else None
    a = cluster_keys(_table(arr), ["c"], curve, mapping, bounds=bounds, batch_rows=batch_rows)
    b = cluster_keys(combined, ["c"], curve, mapping, bounds=bounds)
    np.testing.assert_array_equal(a, b)


def test_dictionary_columns_cluster_like_their_values():
    values = pa.array(["b", None, "a", "c", "a", "b"])
    t1 = pa.table({"c": values})
    t2 = pa.table({"c": values.dictionary_encode()})
    for mapping in ("rank", "direct"):
        np.testing.assert_array_equal(cluster_keys(t1, ["c"], mapping=mapping), cluster_keys(t2, ["c"], mapping=mapping))
    assert cluster_order(t2, ["c"]).tolist() == [1, 2, 4, 0, 5, 3]


# ----------------------------------------------------------------------------- floats, NULLs
@pytest.mark.parametrize("dtype", [pa.float32(), pa.float64()])
@pytest.mark.parametrize("curve", ["zorder", "hilbert", "sort"])
@pytest.mark.parametrize("mapping", ["rank", "direct"])
def test_float_placement(dtype, curve, mapping):
    nan = float("nan")
    values = [nan, 1.0, None, -0.0, 0.0, float("inf"), float("-inf"), None, -nan, 0.0, -1.5]
    t = pa.table({"c": pa.array(values, dtype)})
    order = cluster_order(t, ["c"], curve, mapping)
    assert order.tolist() == [2, 7, 6, 10, 3, 4, 9, 1, 5, 0, 8]  # NULL, -inf, -1.5, zeros, 1, inf, NaN
    keys = cluster_keys(t, ["c"], curve, mapping)
    assert len({int(keys[i]) if keys.ndim == 1 else tuple(keys[i]) for i in (3, 4, 9)}) == 1  # -0.0 == 0.0
    assert (keys[0] == keys[8]).all()  # NaN payload and sign do not matter


def test_nan_payloads_share_a_key():
    bits = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFFFFFFFFFFFFFFF], np.uint64)
    arr = pa.Array.from_buffers(pa.float64(), 4, [None, pa.py_buffer(bits)])
    for mapping in ("rank", "direct"):
        keys = cluster_keys(pa.table({"c": arr}), ["c"], mapping=mapping)
        assert len(set(keys.tolist())) == 1


def test_all_null_and_null_type_columns():
    for arr in (pa.array([None, None], pa.int32()), pa.nulls(3)):
        t = pa.table({"c": arr, "d": pa.array(range(len(arr)), pa.int8())})
        for curve in ("zorder", "hilbert", "sort"):
            for mapping in ("rank", "direct"):
                assert cluster_order(t, ["c", "d"], curve, mapping).tolist() == list(range(len(arr)))


def test_empty_table():
    t = pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.string())})
    for curve in ("zorder", "hilbert", "sort"):
        assert cluster_order(t, ["a", "b"], curve).shape == (0,)
        assert cluster_keys(t, ["a", "b"], curve).shape[0] == 0


# ----------------------------------------------------------------------------- several columns
@st.composite
def _grid_case(draw):
    """A table of k columns, a dimension d and a base row: the rows of a line along d."""
    k = draw(st.integers(2, 4))
    n = draw(st.integers(1, 25))
    cols = [draw(S.arrays(ALL, size=n)) for _ in range(k)]
    return pa.table({f"c{i}": c for i, c in enumerate(cols)}), draw(st.integers(0, k - 1)), draw(st.integers(0, n - 1))


@settings(max_examples=S.examples(120))
@given(case=_grid_case(), mapping=st.sampled_from(["rank", "direct"]), key_bits=st.sampled_from([64, 96, 256]))
def test_zorder_is_monotone_in_each_dimension(case, mapping, key_bits):
    """Fix every column but one to the values of one row: the Z-order key is then
    non-decreasing in the remaining column (bounds fixed beforehand)."""
    table, d, base = case
    names = table.column_names
    bounds = {c: range_bounds(table.column(c), num_buckets=7) for c in names} if mapping == "rank" else None
    n = table.num_rows
    line = pa.table({c: (table.column(c) if i == d else table.column(c).take(pa.array([base] * n)))
                     for i, c in enumerate(names)})
    keys = cluster_keys(line, names, "zorder", mapping, bounds=bounds, key_bits=key_bits)
    assert_weakly_monotone(keys, sort_keys(line.column(d)), where=f"dim {d}")


@settings(max_examples=S.examples(80))
@given(table=S.tables(S.schemas(min_fields=1, max_fields=4), rows=st.integers(0, 40)),
       curve=st.sampled_from(["zorder", "hilbert", "sort"]), mapping=st.sampled_from(["rank", "direct"]))
def test_cluster_order_is_a_stable_permutation(table, curve, mapping):
    by = table.column_names
    order = cluster_order(table, by, curve, mapping)
    assert order.dtype == np.int64
    assert sorted(order.tolist()) == list(range(table.num_rows))
    if curve != "sort":
        keys = cluster_keys(table, by, curve, mapping)
        k = keys[order]
        kk = [tuple(r) if k.ndim == 2 else (r,) for r in k.tolist()]
        assert kk == sorted(kk)
        for a, b, ka, kb in zip(order[:-1], order[1:], kk[:-1], kk[1:]):
            if ka == kb:
                assert a < b  # stable: equal keys keep input order


@settings(max_examples=S.examples(80))
@given(table=S.tables(S.schemas(min_fields=1, max_fields=4), rows=st.integers(0, 40)))
def test_sort_is_exact_lexicographic_and_stable(table):
    by = table.column_names
    order = cluster_order(table, by, "sort")
    oracle = row_keys(table, by)
    assert order.tolist() == sorted(range(table.num_rows), key=lambda i: oracle[i])


def test_wide_keys_are_2d_and_sort_lexicographically():
    rng = np.random.default_rng(1)
    t = pa.table({"a": rng.integers(0, 1000, 500), "b": rng.normal(size=500), "c": rng.integers(-5, 5, 500)})
    keys = cluster_keys(t, ["a", "b", "c"], "hilbert", key_bits=192)
    assert keys.shape == (500, 3) and keys.dtype == np.uint64
    order = cluster_order(t, ["a", "b", "c"], "hilbert", key_bits=192)
    rows = [tuple(r) for r in keys[order].tolist()]
    assert rows == sorted(rows)
    sk = cluster_keys(t, ["a", "b"], "sort")
    assert sk.shape == (500, 2)


def test_to_signed_keeps_order():
    from rcfmt.layout import to_signed

    keys = np.array([0, 1, 2**63 - 1, 2**63, 2**64 - 1], np.uint64)
    s = to_signed(keys)
    assert s.dtype == np.int64 and (np.diff(s) > 0).all()


def test_bucket_ids_of_every_type_follow_the_bounds():
    t = pa.table({"x": pa.array([5, None, 1, 9, 3], pa.int16())})
    assert bucket_ids(t.column("x"), [1, 5]).tolist() == [2, 0, 1, 3, 2]
    s = pa.array(["pear", None, "apple", "zz", "fig"])
    assert bucket_ids(s, ["apple", "fig"]).tolist() == [3, 0, 1, 3, 2]


def _other_type_arrays():
    vals = [5, None, -3, 0, 2**20, -1]
    out = [
        pa.array([None if v is None else v * 86_400_000 for v in vals], pa.date64()),
        pa.array([None if v is None else abs(v) % 86400 for v in vals], pa.time32("s")),
        pa.array([None if v is None else abs(v) for v in vals], pa.time64("us")),
        pa.array(vals, pa.duration("ms")),
        pa.array([None if v is None else float(v) for v in vals], pa.float32()).cast(pa.float16()),
        pa.array(["b", None, "a", "", "ab", "b"], pa.string_view()),
        pa.array([b"b", None, b"a", b"", b"ab", b"\xff"], pa.binary_view()),
        pa.array([b"bb", None, b"aa", b"a\x00", b"ab", b"\xff\x00"], pa.binary(2)),
        pa.array(["b", None, "a", "", "ab", "b"], pa.large_string()).dictionary_encode(),
    ]
    for name in ("decimal32", "decimal64"):
        if hasattr(pa, name):
            import decimal

            out.append(pa.array([None if v is None else decimal.Decimal(v % 1000) / 10 for v in vals],
                                getattr(pa, name)(5, 1)))
    return out


@pytest.mark.parametrize("arr", _other_type_arrays(), ids=lambda a: str(a.type))
@pytest.mark.parametrize("mapping", ["rank", "direct"])
def test_other_arrow_types_cluster_by_value(arr, mapping):
    """Types rcfmt does not store still cluster by their values (views, dictionaries,
    fixed-size binary, float16, date64, time, duration, small decimals)."""
    t = pa.table({"c": arr})
    order = cluster_order(t, ["c"], "zorder", mapping)
    plain = arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr
    if pa.types.is_float16(plain.type):
        plain = plain.cast(pa.float32())
    if pa.types.is_date64(plain.type) or pa.types.is_time(plain.type) or pa.types.is_duration(plain.type):
        plain = plain.view(pa.int32() if pa.types.is_time32(plain.type) else pa.int64())
    values = plain.to_pylist()
    key = [(0,) if v is None else (1, v) for v in values]
    ordered = [key[i] for i in order]
    assert ordered == sorted(key)
    exact = cluster_order(t, ["c"], "sort")
    assert [key[i] for i in exact] == sorted(key)
