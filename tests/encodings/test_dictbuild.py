"""The writer's native dictionary builder against Arrow's ``dictionary_encode`` (the
oracle): same codes, same dictionary in order of first appearance, values equal by their
bytes (NaN payloads, -0.0), for every fixed width and for strings/binary, including
tables that grow many times and strings with long common prefixes."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt._native import dictbuild
from rcfmt.encodings.base import ColumnValues
from rcfmt.encodings.dictionary import build_dictionary
from rcfmt.schema.types import logical_type_from_arrow as logical_type
from strategies import examples


def oracle_fixed(values: np.ndarray):
    """Arrow's dictionary encoding of the values' bytes: (codes, first rows)."""
    width = values.dtype.itemsize
    if width == 16:
        arr = pa.Array.from_buffers(pa.binary(16), len(values), [None, pa.py_buffer(values.tobytes())])
    else:
        arr = pa.array(np.ascontiguousarray(values).view(f"<u{width}"))
    enc = arr.dictionary_encode()
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int32)
    first = np.array([int(np.flatnonzero(codes == k)[0]) for k in range(len(enc.dictionary))], dtype=np.int64)
    return codes, first


words = st.sampled_from([b"", b"a", b"ab", b"x" * 7, b"x" * 8, b"x" * 9, b"p" * 40 + b"1", b"p" * 40 + b"2",
                         b"\xff\x00", b"\x00"])


@settings(max_examples=examples(200), deadline=None)
@given(width=st.sampled_from([1, 2, 4, 8, 16]), n=st.integers(0, 3000), distinct=st.integers(1, 5000),
       seed=st.integers(0, 2**32 - 1))
def test_fixed_matches_arrow(width, n, distinct, seed):
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 256, size=(distinct, width), dtype=np.uint8)
    raw = pool[rng.integers(0, distinct, size=n)]
    values = np.ascontiguousarray(raw).view(f"V{width}" if width == 16 else f"<u{width}").reshape(-1)
    codes, first = dictbuild.encode_fixed(raw.reshape(-1), width)
    want_codes, want_first = oracle_fixed(values)
    assert codes.tolist() == want_codes.tolist()
    assert first.tolist() == want_first.tolist()


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.one_of(words, st.binary(max_size=20)), max_size=400), st.booleans())
def test_varbinary_matches_arrow(items, large):
    arr = pa.array(items, pa.large_binary() if large else pa.binary())
    offsets = np.frombuffer(arr.buffers()[1], np.int64 if large else np.int32, count=len(items) + 1)
    data = np.frombuffer(arr.buffers()[2], np.uint8) if arr.buffers()[2] is not None else np.empty(0, np.uint8)
    codes, first = dictbuild.encode_varbinary(offsets, data)
    enc = arr.dictionary_encode()
    assert codes.tolist() == enc.indices.to_pylist()
    assert [items[i] for i in first] == enc.dictionary.to_pylist()


def test_floats_are_compared_by_their_bytes():
    nan2 = np.array([0x7FF8000000000001], np.uint64).view(np.float64)[0]
    v = np.array([0.0, -0.0, np.nan, nan2, np.nan, -0.0, 1.5], np.float64)
    codes, dictionary = build_dictionary(ColumnValues(v), logical_type(pa.float64()))
    assert codes.tolist() == [0, 1, 2, 3, 2, 1, 4]
    assert dictionary.values.view(np.uint64).tolist() == v[[0, 1, 2, 3, 6]].view(np.uint64).tolist()


@pytest.mark.parametrize("n", [0, 1, 100_000])
def test_many_distinct_values_grow_the_table(n):
    v = np.random.default_rng(3).permutation(n).astype(np.int64)
    codes, first = dictbuild.encode_fixed(v.view(np.uint8), 8)
    assert codes.tolist() == list(range(n)) and first.tolist() == list(range(n))


def test_many_distinct_strings_short_and_long_grow_the_table():
    # values of at most 8 bytes are keyed by their bytes, longer ones by a hash: both kinds
    # in one table, growing many times, with a short value and a long one sharing a prefix
    rng = np.random.default_rng(5)
    items = [rng.integers(0, 256, int(k), dtype=np.uint8).tobytes() for k in rng.integers(0, 17, 60_000)]
    items += [b"abcdefgh", b"abcdefgh" + b"\0", b"abcdefg", b"abcdefg\0"] * 3
    arr = pa.array(items, pa.binary())
    offsets = np.frombuffer(arr.buffers()[1], np.int32, count=len(items) + 1)
    codes, first = dictbuild.encode_varbinary(offsets, np.frombuffer(arr.buffers()[2], np.uint8))
    enc = arr.dictionary_encode()
    assert codes.tolist() == enc.indices.to_pylist()
    assert [items[i] for i in first] == enc.dictionary.to_pylist()


def test_decimals_and_strings_through_build_dictionary():
    dec = pa.array([1, 2, 1, None, -5], pa.decimal128(20, 2))
    lt = logical_type(dec.type)
    raw = np.frombuffer(dec.buffers()[1], "V16", count=len(dec))
    codes, dictionary = build_dictionary(ColumnValues(raw), lt)
    assert codes.tolist() == [0, 1, 0, 2, 3]
    s = pa.array(["b", "a", "b", "", "a" * 30], pa.large_string())
    codes, dictionary = build_dictionary(
        ColumnValues(np.frombuffer(s.buffers()[2], np.uint8), np.frombuffer(s.buffers()[1], np.int64, count=6)),
        logical_type(s.type))
    assert codes.tolist() == [0, 1, 0, 2, 3]
    assert dictionary.offsets.tolist() == [0, 1, 2, 2, 32]


def test_bad_arguments():
    with pytest.raises(ValueError):
        dictbuild.encode_fixed(np.zeros(6, np.uint8), 3)
    with pytest.raises(ValueError):
        dictbuild.encode_varbinary(np.empty(0, np.int64), np.empty(0, np.uint8))


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from([np.int32, np.int64]), st.integers(0, 3000), st.integers(1, 3000),
       st.integers(-(2**31), 2**31 - 4000), st.integers(0, 2**32 - 1))
def test_range_table_matches_the_hash_table(dtype, n, span, lo, seed):
    """Integers within a narrow range get, from a direct table, the codes and first rows
    the hash table gives; a value outside the range given is refused."""
    values = np.random.default_rng(seed).integers(lo, lo + span, n).astype(dtype)
    codes, first = dictbuild.encode_range(values, lo, lo + span - 1)
    want_codes, want_first = dictbuild.encode_fixed(values.view(np.uint8), values.dtype.itemsize)
    assert codes.tolist() == want_codes.tolist() and first.tolist() == want_first.tolist()
    if n:
        with pytest.raises(ValueError, match="outside"):
            dictbuild.encode_range(values, int(values.min()) + 1, int(values.min()) + span)


def test_build_dictionary_takes_the_range_path_for_dates_and_decimals():
    rng = np.random.default_rng(9)
    days = rng.integers(9000, 9100, 10_000).astype(np.int32)
    lt = logical_type(pa.date32())
    ranged = build_dictionary(ColumnValues(days), lt, (9000, 9099))
    hashed = build_dictionary(ColumnValues(days), lt)
    assert ranged[0].tolist() == hashed[0].tolist() and ranged[1].values.tolist() == hashed[1].values.tolist()
    from decimal import Decimal
    dec = pa.array([Decimal(int(v)) for v in rng.integers(-50, 50, 10_000)], pa.decimal128(10, 0))
    raw = np.frombuffer(dec.buffers()[1], "V16", count=len(dec))
    lt = logical_type(dec.type)
    ranged = build_dictionary(ColumnValues(raw), lt, (-50, 49))
    hashed = build_dictionary(ColumnValues(raw), lt)
    assert ranged[0].tolist() == hashed[0].tolist() and ranged[1].values.tobytes() == hashed[1].values.tobytes()


@settings(max_examples=examples(200), deadline=None)
@given(n=st.integers(0, 3000), entries=st.sampled_from([1, 2, 7, 300, 70_000]), sorted_=st.booleans(),
       null_share=st.sampled_from([None, 0.0, 0.3, 1.0]), seed=st.integers(0, 2**32 - 1))
def test_code_counts_match_bincount(n, entries, sorted_, null_share, seed):
    """Rows per code, non-null rows only when a validity is given, as numpy counts them
    -- runs of one code (sorted) and tables past the four-lane limit included."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, entries, n).astype(np.int32)
    if sorted_:
        codes.sort()
    valid = None if null_share is None else rng.random(n) >= null_share
    got = dictbuild.code_counts(codes, entries, None if valid is None else valid.view(np.uint8))
    want = np.bincount(codes if valid is None else codes[valid], minlength=entries)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()


def test_code_counts_refuses_bad_input():
    codes = np.array([0, 1, 2], np.int32)
    with pytest.raises(ValueError, match="outside"):
        dictbuild.code_counts(codes, 2)
    with pytest.raises(ValueError, match="outside"):
        dictbuild.code_counts(np.array([-1], np.int32), 70_000)
    with pytest.raises(ValueError, match="validity bytes"):
        dictbuild.code_counts(codes, 3, np.ones(2, np.uint8))
    assert dictbuild.code_counts(np.zeros(0, np.int32), 0).tolist() == []


@given(st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "b", "ccc", "a" * 40])), max_size=300),
       st.sampled_from([None, "zstd"]))
@settings(max_examples=40, deadline=None)
def test_a_string_dictionary_holds_only_values_of_valid_rows(tmp_path_factory, items, compression):
    """A variable-length null slot holds an arbitrary (empty) value: it adds no entry to
    the stored dictionary (an extra '' category in pandas), and the rows read back."""
    import rcfmt

    path = tmp_path_factory.mktemp("d") / "d.rcfmt"
    arr = pa.array(items, pa.string())
    rcfmt.write_table(pa.table({"s": arr}), path, page_rows=64, encoding={"s": "dictionary"},
                      compression=compression or "none")
    got = rcfmt.read_table(path, read_dictionary=["s"]).column("s")
    assert got.cast(pa.string()).to_pylist() == items
    stored = {v for chunk in got.chunks for v in chunk.dictionary.to_pylist()}
    valid = {v for v in items if v is not None}
    assert stored == valid or (not valid and stored <= {""})


def test_varbinary_null_slots_add_no_entry_and_repeat_their_neighbour():
    values = [b"", b"b", b"", b"a", b"", b"b"]  # null slots at 0, 2 and 4 (their bytes: empty)
    offsets = np.cumsum([0] + [len(v) for v in values]).astype(np.int64)
    data = np.frombuffer(b"".join(values), np.uint8)
    valid = np.array([0, 1, 0, 1, 0, 1], np.uint8)
    codes, first = dictbuild.encode_varbinary(offsets, data, valid)
    assert codes.tolist() == [0, 0, 0, 1, 1, 0] and first.tolist() == [1, 3]  # entries b, a
    codes, first = dictbuild.encode_varbinary(offsets, data)
    assert first.tolist() == [0, 1, 3]  # (without validity, the empty value is an entry)
    with pytest.raises(ValueError, match="validity bytes"):
        dictbuild.encode_varbinary(offsets, data, valid[:3])
