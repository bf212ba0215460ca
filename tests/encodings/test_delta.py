"""DELTA encoding: round trips (sorted, unsorted, int64 extremes whose deltas
overflow), the worked example byte for byte, estimate_size, and corrupt bodies."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import strategies
from strategies import native_decode
from rcfmt._native import bitpack as bp
from rcfmt.encodings import by_id, by_name
from rcfmt.encodings import delta as delta_mod
from rcfmt.encodings.analysis import ChunkAnalysis
from rcfmt.encodings.base import ColumnValues
from rcfmt.encodings.delta import HEADER_SIZE
from rcfmt.errors import CorruptFileError
from rcfmt.schema.types import LogicalType

DELTA = by_name("delta")
LENGTHS = [0, 1, 2, 5, 1023, 1024, 1025, 2048, 5000]
TYPES = [
    LogicalType(n) for n in
    ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "date32")
] + [LogicalType("timestamp", unit="us", tz="Europe/Paris")]


def encode(values, ltype) -> bytes:
    return DELTA.encode(ColumnValues(np.asarray(values, dtype=ltype.numpy_dtype)), ltype)


def roundtrip(values: np.ndarray, ltype: LogicalType) -> bytes:
    body = DELTA.encode(ColumnValues(values), ltype)
    got = DELTA.decode(body, len(values), ltype).values
    assert got.dtype == ltype.numpy_dtype
    np.testing.assert_array_equal(got, values)
    np.testing.assert_array_equal(native_decode(DELTA, body, len(values), ltype).values, values)  # the reader's kernel
    shifted = memoryview(bytearray(b"\x00" * 3 + body))[3:]
    np.testing.assert_array_equal(DELTA.decode(shifted, len(values), ltype).values, values)
    return body


def expected_width(values: np.ndarray) -> int:
    """Reference: width of the modular deltas read as signed, computed with Python ints."""
    if len(values) < 2:
        return 0
    T = 8 * values.dtype.itemsize
    v = [int(x) for x in values.view(f"u{values.dtype.itemsize}")]
    d = [((b - a) % (1 << T)) for a, b in zip(v, v[1:])]
    d = [x - (1 << T) if x >= 1 << (T - 1) else x for x in d]
    return (max(d) - min(d)).bit_length()


def test_registry():
    assert by_id(4) is DELTA and DELTA.name == "delta"
    assert all(DELTA.supports(t) for t in TYPES)
    assert not DELTA.supports(LogicalType("float64"))
    assert not DELTA.supports(LogicalType("string"))


@pytest.mark.parametrize("ltype", TYPES, ids=str)
def test_roundtrip_shapes(ltype):
    dtype = ltype.numpy_dtype
    info = np.iinfo(dtype)
    rng = np.random.default_rng(11)
    T = 8 * dtype.itemsize
    for n in LENGTHS:
        steps = rng.integers(0, 3, size=n)
        cases = {
            "constant": np.full(n, info.max, dtype),
            "step": (np.arange(n) * 3 % (int(info.max) + 1)).astype(dtype) if T < 64 else np.arange(n, dtype=dtype) * 3,
            "sorted": np.sort(rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)),
            "reverse": np.sort(rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True))[::-1].copy(),
            "random": rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True),
            "alternating_extremes": np.resize(np.array([info.min, info.max], dtype), n),
            "nearly_sorted": (np.cumsum(steps) - (steps == 0) * 2).astype(dtype),
        }
        for label, values in cases.items():
            body = roundtrip(values, ltype)
            assert body[0] == expected_width(values), label
            if label == "constant" or n == 0:
                assert len(body) == HEADER_SIZE, label
            if label == "step" and n > 1 and T >= 16:
                assert body[0] == 0 and len(body) == HEADER_SIZE, label


@pytest.mark.parametrize("ltype", TYPES, ids=str)
@settings(max_examples=strategies.examples(25))
@given(data=st.data())
def test_roundtrip_hypothesis(ltype, data):
    dtype = ltype.numpy_dtype
    n = data.draw(st.one_of(st.integers(0, 40), st.sampled_from(LENGTHS)), label="n")
    values = data.draw(hnp.arrays(dtype, n, elements=hnp.from_dtype(dtype)), label="values")
    if data.draw(st.booleans(), label="sort"):
        values = np.sort(values)
    body = roundtrip(values, ltype)
    assert body[0] == expected_width(values)
    assert len(body) == HEADER_SIZE + bp.packed_size(n, body[0], dtype.itemsize)


def test_int64_extremes():
    ltype = LogicalType("int64")
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    for values in ([lo, hi], [hi, lo], [hi, lo, hi, lo, 0, -1, 1], [lo] * 3 + [hi] * 3, [0, hi, lo, 0]):
        body = roundtrip(np.array(values, np.int64), ltype)
        assert body[0] <= 64
    ltype = LogicalType("uint64")
    roundtrip(np.array([0, 2**64 - 1, 0, 1, 2**63], np.uint64), ltype)


def test_worked_example():
    """timestamp [1000, 2000, 3001, 4000, 5002] (module docstring)."""
    ltype = LogicalType("timestamp", unit="ms")
    body = encode([1000, 2000, 3001, 4000, 5002], ltype)
    expected = (
        bytes.fromhex("02 00 00 00 00 00 00 00")
        + (1000).to_bytes(8, "little")
        + (999).to_bytes(8, "little")
        + b"".join(u.to_bytes(8, "little") for u in (0, 1, 2, 0, 3))
        + bytes(88)
    )
    assert len(expected) == 152
    assert body == expected
    assert "e7 03 00 00 00 00 00 00   ref = 999" in delta_mod.__doc__


def test_docstring_size_claim():
    """10,000 timestamps with steps within 999..1002 take 2,584 bytes."""
    rng = np.random.default_rng(12)
    steps = rng.integers(999, 1003, size=10_000)
    steps[1], steps[2] = 999, 1002  # make sure the range is exactly 999..1002
    values = np.cumsum(steps)
    body = roundtrip(values.astype(np.int64), LogicalType("timestamp", unit="ms"))
    assert len(body) == 2584
    assert "2,584 bytes" in delta_mod.__doc__


def test_negative_min_delta_no_zigzag():
    """Nearly sorted data: small negative deltas only widen the range a little."""
    ltype = LogicalType("int32")
    values = np.arange(0, 50_000, 10, dtype=np.int32)
    values[::7] -= 3  # deltas in {7, 10, 13}
    body = roundtrip(values, ltype)
    assert int.from_bytes(body[16:24], "little", signed=True) == 7
    assert body[0] == 3


@pytest.mark.parametrize("ltype", TYPES, ids=str)
def test_estimate_size_is_exact_for_one_page(ltype):
    rng = np.random.default_rng(13)
    info = np.iinfo(ltype.numpy_dtype)
    for n in (0, 1, 1000, 5000):
        values = np.sort(rng.integers(info.min, info.max, size=n, dtype=ltype.numpy_dtype, endpoint=True))
        analysis = ChunkAnalysis(rows=n, null_count=0, plain_size=values.nbytes, is_sorted=True)
        chunk = ColumnValues(values)
        assert DELTA.estimate_size(chunk, ltype, analysis) == len(DELTA.encode(chunk, ltype))
    assert DELTA.estimate_size(ColumnValues(np.zeros(2)), LogicalType("float64"),
                               ChunkAnalysis(rows=2, null_count=0, plain_size=16)) is None


# ------------------------------------------------------------------------ corruption

def decode_or_corrupt(body, rows, ltype):
    got = strategies.decode_or_corrupt(DELTA.decode, body, rows, ltype)
    return None if got is None else got.values


def sample_bodies():
    rng = np.random.default_rng(14)
    for ltype in (LogicalType("int8"), LogicalType("uint16"), LogicalType("int32"),
                  LogicalType("int64"), LogicalType("uint64")):
        info = np.iinfo(ltype.numpy_dtype)
        for n in (0, 1, 40, 1024, 1100):
            values = rng.integers(info.min, info.max, size=n, dtype=ltype.numpy_dtype, endpoint=True)
            yield ltype, n, encode(values, ltype)
            yield ltype, n, encode(np.sort(values), ltype)


def test_truncations_and_extensions():
    for ltype, n, body in sample_bodies():
        for cut in range(len(body)):
            with pytest.raises(CorruptFileError):
                DELTA.decode(body[:cut], n, ltype)
        for extra in (b"\x00", bytes(8), bytes(128)):
            with pytest.raises(CorruptFileError):
                DELTA.decode(body + extra, n, ltype)


def test_header_byte_flips():
    for ltype, n, body in sample_bodies():
        for pos in range(HEADER_SIZE):
            for mask in (1, 0x40, 0x80, 0xFF):
                bad = bytearray(body)
                bad[pos] ^= mask
                got = decode_or_corrupt(bytes(bad), n, ltype)
                if pos in range(1, 8):
                    assert got is None


def test_absurd_headers():
    ltype = LogicalType("int16")
    body = encode(np.arange(3000) * 5 % 1000, ltype)
    for width in range(17, 256):
        with pytest.raises(CorruptFileError, match="bit width"):
            DELTA.decode(bytes([width]) + body[1:], 3000, ltype)
    for first in (2**15, -(2**15) - 1, 2**40):
        bad = body[:8] + first.to_bytes(8, "little", signed=True) + body[16:]
        with pytest.raises(CorruptFileError, match="first value"):
            DELTA.decode(bad, 3000, ltype)
    for ref in (2**15, -(2**15) - 1, -(2**63)):
        bad = body[:16] + ref.to_bytes(8, "little", signed=True) + body[24:]
        with pytest.raises(CorruptFileError, match="minimum delta"):
            DELTA.decode(bad, 3000, ltype)
    for rows in (-1, 2999 - 1024, 4096, 2**62, 2**80):
        with pytest.raises(CorruptFileError):
            DELTA.decode(body, rows, ltype)


@settings(max_examples=strategies.examples(300))
@given(body=st.binary(max_size=400), rows=st.integers(-5, 3000),
       name=st.sampled_from(["int8", "uint16", "int32", "uint64", "int64"]))
def test_random_bodies(body, rows, name):
    decode_or_corrupt(body, rows, LogicalType(name))


@settings(max_examples=strategies.examples(200))
@given(data=st.data())
def test_random_mutations(data):
    ltype = LogicalType(data.draw(st.sampled_from(["int8", "uint16", "int32", "int64"])))
    n = data.draw(st.integers(0, 2100))
    values = (np.arange(n, dtype=np.int64) * 3) % 1000
    body = bytearray(encode(values.astype(ltype.numpy_dtype), ltype))
    for _ in range(data.draw(st.integers(1, 4))):
        if body:
            pos = data.draw(st.integers(0, len(body) - 1))
            body[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(body)))
    decode_or_corrupt(bytes(body[:cut]), n, ltype)
