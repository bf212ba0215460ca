"""Split-block bloom filter and XXH64: format, no false negatives, false-positive rate."""
from __future__ import annotations

import ctypes
import ctypes.util
import io
import math
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import rcfmt
import rcfmt.index.bloom.sbbf as bloom_module
from rcfmt.errors import CorruptFileError, InvalidOptionError
from rcfmt.index.bloom.sbbf import (
    MAX_BYTES,
    MIN_BYTES,
    SALT,
    BloomFilter,
    hash_arrow,
    hash_binary,
    hash_fixed,
    hash_scalar,
    expected_fpp,
    hash_values,
    optimal_num_bytes,
    within_fpp,
)
from rcfmt.schema.types import LogicalType
from strategies import examples

M64 = (1 << 64) - 1


# ---------------------------------------------------------------- reference XXH64
def ref_xxh64(data: bytes, seed: int = 0) -> int:
    """Straight transcription of the XXH64 specification, in pure Python."""
    p1, p2, p3, p4, p5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                          0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & M64

    def rnd(acc, lane):
        return (rotl((acc + lane * p2) & M64, 31) * p1) & M64

    n, i = len(data), 0
    if n >= 32:
        v = [(seed + p1 + p2) & M64, (seed + p2) & M64, seed, (seed - p1) & M64]
        while i + 32 <= n:
            for j in range(4):
                v[j] = rnd(v[j], int.from_bytes(data[i + 8 * j:i + 8 * j + 8], "little"))
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M64
        for x in v:
            h = ((h ^ rnd(0, x)) * p1 + p4) & M64
    else:
        h = (seed + p5) & M64
    h = (h + n) & M64
    while i + 8 <= n:
        h ^= rnd(0, int.from_bytes(data[i:i + 8], "little"))
        h = (rotl(h, 27) * p1 + p4) & M64
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * p1) & M64
        h = (rotl(h, 23) * p2 + p3) & M64
        i += 4
    while i < n:
        h ^= (data[i] * p5) & M64
        h = (rotl(h, 11) * p1) & M64
        i += 1
    h ^= h >> 33
    h = (h * p2) & M64
    h ^= h >> 29
    h = (h * p3) & M64
    return h ^ (h >> 32)


def ref_might_contain(buf: bytes, h: int) -> bool:
    """The probe of the module docstring, in pure Python on the filter's bytes."""
    num_blocks = len(buf) // 32
    block = ((h >> 32) * num_blocks) >> 32
    key = h & 0xFFFFFFFF
    words = struct.unpack_from("<8I", buf, 32 * block)
    return all(words[i] >> (((key * SALT[i]) & 0xFFFFFFFF) >> 27) & 1 for i in range(8))


# ---------------------------------------------------------------- XXH64
KNOWN_VECTORS = {
    b"": 0xEF46DB3751D8E999,
    b"a": 0xD24EC4F1A98C6E5B,
    b"abc": 0x44BC2CF5AD770999,
    b"The quick brown fox jumps over the lazy dog": 0x0B242D361FDA71BC,
}


@pytest.mark.parametrize("data,expected", KNOWN_VECTORS.items())
def test_xxh64_known_vectors(data, expected):
    assert hash_scalar(data) == expected
    assert ref_xxh64(data) == expected


def test_xxh64_every_length_against_reference():
    rng = np.random.default_rng(7)
    blob = rng.integers(0, 256, 300, dtype=np.uint8).tobytes()
    # every branch: < 32 bytes, stripes, 8/4/1-byte tails, several stripes
    for n in [*range(0, 100), 127, 128, 129, 255, 300]:
        assert hash_scalar(blob[:n]) == ref_xxh64(blob[:n]), n
    # hash_scalar accepts any bytes-like object
    assert hash_scalar(bytearray(b"abc")) == hash_scalar(memoryview(b"xabc")[1:]) == KNOWN_VECTORS[b"abc"]
    assert hash_scalar(np.frombuffer(b"abc", dtype=np.uint8)) == KNOWN_VECTORS[b"abc"]


def _system_xxhash():
    name = ctypes.util.find_library("xxhash")
    for candidate in (name, "libxxhash.so.0"):
        if not candidate:
            continue
        try:
            lib = ctypes.CDLL(candidate)
        except OSError:
            continue
        lib.XXH64.restype = ctypes.c_uint64
        lib.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
        return lib
    return None


def test_xxh64_against_system_libxxhash():
    lib = _system_xxhash()
    if lib is None:
        pytest.skip("libxxhash is not installed")
    rng = np.random.default_rng(11)
    for n in [0, 1, 3, 4, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 1000, 4099]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert hash_scalar(data) == lib.XXH64(data, n, 0)


# ---------------------------------------------------------------- hash_fixed
FIXED_DTYPES = ["<i1", "<i2", "<i4", "<i8", "<u1", "<u2", "<u4", "<u8", "<f4", "<f8", "V16", "bool"]


@pytest.mark.parametrize("dtype", FIXED_DTYPES)
def test_hash_fixed_is_xxh64_of_the_le_bytes(dtype):
    rng = np.random.default_rng(3)
    dt = np.dtype(dtype)
    values = np.frombuffer(rng.integers(0, 256, 50 * dt.itemsize, dtype=np.uint8).tobytes(), dtype=dt)
    if dt.kind == "f":
        values = values[~np.isnan(values) & (values != 0)]
    if dt.kind == "b":
        values = rng.random(50) < 0.5
    hashes = hash_fixed(values)
    assert hashes.dtype == np.uint64 and len(hashes) == len(values)
    assert hashes.tolist() == [ref_xxh64(v.tobytes()) for v in values]
    # strided and big-endian inputs hash by value
    assert np.array_equal(hash_fixed(values[::2]), hashes[::2])
    if dt.kind in "iuf" and dt.itemsize > 1:
        assert np.array_equal(hash_fixed(values.astype(dt.newbyteorder(">"))), hashes)


def test_hash_fixed_widths_are_distinct_inputs():
    # an int8 5 and an int64 5 hash differently: the width is part of the input
    assert hash_fixed(np.array([5], "<i1"))[0] == ref_xxh64(b"\x05")
    assert hash_fixed(np.array([5], "<i8"))[0] == ref_xxh64(b"\x05" + b"\0" * 7)
    assert hash_fixed(np.array([5], "<i1"))[0] != hash_fixed(np.array([5], "<i8"))[0]


def test_float_normalisation():
    for dt in ("<f4", "<f8"):
        zeros = hash_fixed(np.array([0.0, -0.0], dtype=dt))
        assert zeros[0] == zeros[1] == ref_xxh64(np.zeros(1, dt).tobytes())
        bits = np.array([0x7FC00000, 0x7F800001, 0xFFC00000, 0xFFFFFFFF], dtype="<u4") if dt == "<f4" else \
            np.array([0x7FF8000000000000, 0x7FF0000000000001, 0xFFF8000000000000, M64], dtype="<u8")
        nans = hash_fixed(bits.view(dt))
        assert len(set(nans.tolist())) == 1  # every NaN hashes alike (but is never inserted)
        infs = hash_fixed(np.array([np.inf, -np.inf], dtype=dt))
        assert infs[0] != infs[1] and nans[0] not in infs


def test_bool_normalisation():
    raw = np.array([0, 1, 2, 255], dtype=np.uint8).view(bool)
    assert hash_fixed(raw).tolist() == [ref_xxh64(b"\0")] + [ref_xxh64(b"\1")] * 3


def test_hash_fixed_rejects_other_dtypes():
    for bad in [np.array(["a"]), np.array([1.0], np.float16), np.array([1], "M8[D]"),
                np.array([1 + 1j]), np.array([b"abc"]), np.zeros(2, "V8"), np.array([None])]:
        with pytest.raises(InvalidOptionError):
            hash_fixed(bad)
    assert hash_fixed(np.zeros(0, np.int64)).tolist() == []


# ---------------------------------------------------------------- hash_binary
def test_hash_binary_offsets():
    values = [b"", b"a", b"abc", b"", b"x" * 40]
    data = b"".join(values)
    offsets = np.cumsum([0] + [len(v) for v in values])
    expected = [ref_xxh64(v) for v in values]
    for dt in (np.int32, np.int64):
        assert hash_binary(offsets.astype(dt), data).tolist() == expected
        # Arrow slices: offsets need not start at 0
        assert hash_binary(offsets[2:].astype(dt), data).tolist() == expected[2:]
    assert hash_binary(offsets, np.frombuffer(data, np.uint8)).tolist() == expected
    assert hash_binary(np.array([0]), b"").tolist() == []
    assert hash_binary(np.array([0, 0]), b"").tolist() == [KNOWN_VECTORS[b""]]


@pytest.mark.parametrize("offsets,data", [
    ([0, 3, 2], b"abcd"),  # decreasing
    ([0, 5], b"abcd"),  # past the end
    ([-1, 2], b"abcd"),  # negative
    ([], b""),  # no entry at all
])
def test_hash_binary_rejects_bad_offsets(offsets, data):
    with pytest.raises(InvalidOptionError):
        hash_binary(np.array(offsets, dtype=np.int64), data)


def test_hash_binary_rejects_bad_types():
    with pytest.raises(InvalidOptionError):
        hash_binary(np.array([0, 1], dtype=np.float64), b"a")
    with pytest.raises(InvalidOptionError):
        hash_binary(np.array([0, 1], dtype=np.int16), b"a")
    with pytest.raises(InvalidOptionError):
        hash_binary(np.array([0, 1]), np.zeros(1, dtype=np.int32))
    with pytest.raises(InvalidOptionError):
        hash_binary(np.array([0, 1]), "a")


# ---------------------------------------------------------------- hash_arrow / hash_values
ARROW_CASES = [
    (pa.array([1, None, -3, 2**40], pa.int64()), "int64"),
    (pa.array([1, None, -3], pa.int8()), "int8"),
    (pa.array([1, 200, None], pa.uint8()), "uint8"),
    (pa.array([1, 2**64 - 1], pa.uint64()), "uint64"),
    (pa.array([1.5, float("nan"), -0.0, None, 0.0], pa.float64()), "float64"),
    (pa.array([1.5, float("nan"), -0.0], pa.float32()), "float32"),
    (pa.array([True, None, False, True], pa.bool_()), "bool"),
    (pa.array([0, 19000, None], pa.date32()), "date32"),
    (pa.array([0, -5, 10**15], pa.timestamp("us", tz="UTC")), "timestamp"),
    (pa.array([1, -1, None, 10**30], pa.decimal128(38, 2)), "decimal128"),
    (pa.array(["", "a", None, "héllo"], pa.string()), "string"),
    (pa.array(["", "a", None, "héllo"], pa.large_string()), "string"),
    (pa.array([b"\x00", b"", None], pa.binary()), "binary"),
    (pa.array([b"\x00", b"", None], pa.large_binary()), "binary"),
]


def _python_canonical_bytes(value, arrow_type):
    """Canonical hash input of one Python value, written out per type (the spec table)."""
    if pa.types.is_boolean(arrow_type):
        return b"\x01" if value else b"\x00"
    if pa.types.is_integer(arrow_type):
        return int(value).to_bytes(arrow_type.bit_width // 8, "little", signed=pa.types.is_signed_integer(arrow_type))
    if pa.types.is_floating(arrow_type):
        value = 0.0 if value == 0 else value
        return struct.pack("<f" if arrow_type.bit_width == 32 else "<d", value)
    if pa.types.is_date32(arrow_type):
        return struct.pack("<i", value)
    if pa.types.is_timestamp(arrow_type):
        return struct.pack("<q", value)
    if pa.types.is_decimal(arrow_type):
        return int(value).to_bytes(16, "little", signed=True)
    return value.encode() if isinstance(value, str) else value


@pytest.mark.parametrize("array,name", ARROW_CASES, ids=[str(a.type) for a, _ in ARROW_CASES])
def test_hash_arrow_follows_the_spec_table(array, name):
    if pa.types.is_date32(array.type):
        storage = array.view(pa.int32())
    elif pa.types.is_timestamp(array.type):
        storage = array.view(pa.int64())
    else:
        storage = array
    expected = []
    for v in storage.to_pylist():
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        if pa.types.is_decimal(array.type):
            v = int(v.scaleb(array.type.scale))
        expected.append(ref_xxh64(_python_canonical_bytes(v, array.type)))
    assert hash_arrow(array).tolist() == expected
    # slices, chunked arrays and dictionary arrays hash the same values
    assert hash_arrow(array.slice(1)).tolist() == hash_arrow(pa.concat_arrays([array.slice(1)])).tolist()
    chunked = pa.chunked_array([array.slice(0, 2), array.slice(2)])
    assert hash_arrow(chunked).tolist() == expected
    if not pa.types.is_boolean(array.type):
        assert hash_arrow(array.dictionary_encode()).tolist() == expected
    # probe literals in the stats domain hash like the stored values
    lt = LogicalType(name)
    if name == "timestamp":
        lt = LogicalType("timestamp", unit="us", tz="UTC")
    elif name == "decimal128":
        lt = LogicalType("decimal128", precision=38, scale=2)
    literals = []
    for v in storage.to_pylist():
        if pa.types.is_decimal(array.type) and v is not None:
            v = int(v.scaleb(array.type.scale))
        literals.append(v)
    assert hash_values(literals, lt).tolist() == expected


def test_hash_values_errors_and_drops():
    assert hash_values([None, float("nan")], LogicalType("float64")).tolist() == []
    assert hash_values([3.0], LogicalType("int16")).tolist() == hash_fixed(np.array([3], "<i2")).tolist()
    assert hash_values([np.float32(-0.0)], LogicalType("float32")).tolist() == \
        hash_fixed(np.array([0.0], "<f4")).tolist()
    for values, lt in [([300], "int8"), ([-1], "uint32"), ([2.5], "int64"), (["a"], "int64"),
                       ([1], "string"), ([1.5], "decimal128"), ([10**40], "decimal128"), ([1], "bool"),
                       (["x"], "float64"), ([True], "int32")]:
        t = LogicalType("decimal128", precision=38, scale=0) if lt == "decimal128" else LogicalType(lt)
        with pytest.raises(InvalidOptionError):
            hash_values(values, t)


# ---------------------------------------------------------------- filter: no false negatives
def _fixed_arrays():
    ints = [hnp.arrays(dt, st.integers(0, 60)) for dt in ["<i1", "<i2", "<i4", "<i8", "<u1", "<u2", "<u4", "<u8"]]
    floats = [hnp.arrays(dt, st.integers(0, 60), elements=st.one_of(
        st.sampled_from([0.0, -0.0, np.inf, -np.inf]), st.floats(allow_nan=False, width=w)))
        for dt, w in (("<f4", 32), ("<f8", 64))]
    other = [hnp.arrays(bool, st.integers(0, 60)),
             st.lists(st.binary(min_size=16, max_size=16), max_size=60).map(
                 lambda bs: np.frombuffer(b"".join(bs), dtype="V16"))]
    return st.one_of(*ints, *floats, *other)


@settings(max_examples=examples(150), deadline=None)
@given(values=_fixed_arrays(), size=st.sampled_from([32, 64, 256, 4096]))
def test_no_false_negatives_fixed(values, size):
    f = BloomFilter(size)
    f.insert_hashes(hash_fixed(values))
    assert f.might_contain_hashes(hash_fixed(values)).all()
    if values.dtype.kind == "f":
        assert f.might_contain_hashes(hash_fixed(-values)).tolist() == \
            f.might_contain_hashes(hash_fixed(np.where(values == 0, values, -values))).tolist()
        # -0.0 and +0.0 are the same value for ==
        flipped = np.where(values == 0, np.copysign(0.0, -np.copysign(1.0, values)), values).astype(values.dtype)
        assert f.might_contain_hashes(hash_fixed(flipped)).all()
    # the bytes agree with the pure-Python probe of the spec
    buf = f.to_bytes()
    assert all(ref_might_contain(buf, int(h)) for h in hash_fixed(values))


@settings(max_examples=examples(100), deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.text(max_size=12)), max_size=40),
       large=st.booleans(), start=st.integers(0, 5))
def test_no_false_negatives_strings(values, large, start):
    arr = pa.array(values, pa.large_string() if large else pa.string()).slice(start)
    f = BloomFilter.for_distinct_count(len(values))
    f.insert_hashes(hash_arrow(arr))
    present = [v for v in values[start:] if v is not None]
    assert f.might_contain_hashes(hash_values(present, LogicalType("string"))).all()
    assert all(f.might_contain_hash(hash_scalar(v.encode())) for v in present)


@settings(max_examples=examples(60), deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.floats(allow_nan=True, width=64)), max_size=40))
def test_no_false_negatives_float_arrow(values):
    f = BloomFilter(64)
    f.insert_hashes(hash_arrow(pa.array(values, pa.float64())))
    present = [v for v in values if v is not None and not math.isnan(v)]
    assert f.might_contain_hashes(hash_values(present, LogicalType("float64"))).all()
    assert f.might_contain_hashes(hash_values([-v for v in present if v == 0], LogicalType("float64"))).all()


# ---------------------------------------------------------------- false-positive rate
def _theoretical_fpp(ndv: int, num_blocks: int) -> float:
    """Expected FPP of an SBBF: Poisson block loads, one bit per word per insert."""
    lam = ndv / num_blocks
    total, p = 0.0, math.exp(-lam)
    for k in range(int(lam * 10) + 50):
        if k:
            p *= lam / k
        total += p * (1.0 - (31 / 32) ** k) ** 8
    return total


@pytest.mark.parametrize("ndv,fpp", [(1000, 0.01), (13537, 0.01), (5000, 0.05), (50000, 0.001)])
def test_false_positive_rate(ndv, fpp):
    rng = np.random.default_rng(ndv)
    values = np.unique(rng.integers(-2**63, 2**63 - 1, ndv + 200_000, dtype=np.int64))
    rng.shuffle(values)
    inserted, others = values[:ndv], values[ndv:]
    f = BloomFilter.for_distinct_count(ndv, fpp)
    f.insert_hashes(hash_fixed(inserted))
    assert f.might_contain_hashes(hash_fixed(inserted)).all()
    measured = f.might_contain_hashes(hash_fixed(others)).mean()
    expected = _theoretical_fpp(ndv, f.num_blocks)
    assert expected_fpp(f.num_bytes, ndv) == pytest.approx(expected, rel=1e-6)
    sigma = math.sqrt(expected * (1 - expected) / len(others))
    assert abs(measured - expected) < 5 * sigma + 0.05 * expected, (measured, expected)
    # sized from the formula, the filter lands near the target (SBBF is a bit worse
    # than the formula at an exact power of two, better after rounding up)
    assert measured < 1.6 * fpp


def test_expected_fpp():
    assert expected_fpp(32, 0) == 0.0
    assert expected_fpp(MAX_BYTES, 10**9) == pytest.approx(1.0)
    assert expected_fpp(16384, 13537) == pytest.approx(0.01462, rel=0.01)
    sizes = [expected_fpp(2048, ndv) for ndv in (10, 100, 1000, 10000)]
    assert sizes == sorted(sizes)
    with pytest.raises(InvalidOptionError):
        expected_fpp(48, 10)
    with pytest.raises(InvalidOptionError):
        expected_fpp(64, -1)


@given(st.integers(5, 20), st.integers(0, 60), st.sampled_from([0.001, 0.01, 0.05, 0.1, 0.3]), st.integers(-3, 3))
@example(10, 0, 0.1, 0)
@settings(max_examples=examples(300), deadline=None)
def test_within_fpp_agrees_with_expected_fpp(log_bytes, per_block, fpp, nudge):
    """The writer's load test (one division per filter) decides as computing the rate
    does, including at the load where the rate crosses ``fpp`` (``nudge`` values around it)."""
    from rcfmt.index.bloom.sbbf import _max_load

    num_bytes = 1 << log_bytes
    blocks = num_bytes // 32
    for ndv in (per_block * blocks + nudge, int(_max_load(fpp) * blocks) + nudge):
        if ndv >= 0:
            assert within_fpp(num_bytes, ndv, fpp) == (expected_fpp(num_bytes, ndv) <= fpp), (num_bytes, ndv, fpp)


def test_sizing():
    assert optimal_num_bytes(0) == MIN_BYTES
    assert optimal_num_bytes(1) == MIN_BYTES
    assert optimal_num_bytes(1000, 0.01) == 2048  # same as Parquet's writer
    assert optimal_num_bytes(13537, 0.01) == 16384
    assert optimal_num_bytes(13538, 0.01) == 16384  # 131069.x bits
    assert optimal_num_bytes(13539, 0.01) == 32768  # 131078.x bits
    assert optimal_num_bytes(10**9) == MAX_BYTES
    assert optimal_num_bytes(10**9, max_bytes=4096) == 4096
    assert optimal_num_bytes(1000, 0.01, max_bytes=1024) == 1024
    for ndv in [0, 1, 7, 100, 12345, 10**6, 10**8]:
        for fpp in [0.5, 0.1, 0.01, 1e-6]:
            size = optimal_num_bytes(ndv, fpp)
            assert MIN_BYTES <= size <= MAX_BYTES and size & (size - 1) == 0
            bits = -8 * ndv / math.log(1 - fpp ** 0.125)
            assert size == MAX_BYTES or size * 8 >= bits
    f = BloomFilter.for_distinct_count(1000, 0.01)
    assert f.num_bytes == 2048 and f.num_blocks == 64
    for bad in [dict(ndv=-1), dict(ndv=1.5), dict(ndv=True), dict(ndv=10, fpp=0), dict(ndv=10, fpp=1),
                dict(ndv=10, fpp="x"), dict(ndv=10, max_bytes=100), dict(ndv=10, max_bytes=MAX_BYTES * 2)]:
        with pytest.raises(InvalidOptionError):
            optimal_num_bytes(**bad)
    for bad in [0, 16, 48, 100, MAX_BYTES * 2, 32.0]:
        with pytest.raises(InvalidOptionError):
            BloomFilter(bad)


# ---------------------------------------------------------------- wire format
def test_docstring_worked_example():
    f = BloomFilter(64)
    f.insert_hashes(hash_fixed(np.array([42], dtype="<i4")))
    assert hash_fixed(np.array([42], dtype="<i4"))[0] == 0xD756D7B62FC50BF1
    doc = bloom_module.__doc__
    block = doc[doc.index("filter bytes::"):doc.index("The example is checked")]
    rows = [line.split("block")[0] for line in block.splitlines()[1:] if "block" in line]
    assert len(rows) == 4
    assert bytes.fromhex("".join(rows)) == f.to_bytes()
    words = np.frombuffer(f.to_bytes(), "<u4")[8:]
    assert words.tolist() == [0x10000000, 0x00001000, 0x08000000, 0x00000010,
                              0x00000020, 0x00001000, 0x20000000, 0x40000000]


def test_round_trip_bytes():
    f = BloomFilter.for_distinct_count(500)
    hashes = hash_fixed(np.arange(500, dtype=np.int64))
    f.insert_hashes(hashes)
    buf = f.to_bytes()
    assert isinstance(buf, bytes) and len(buf) == f.num_bytes
    for source in (buf, bytearray(buf), memoryview(buf), np.frombuffer(buf, np.uint8)):
        g = BloomFilter.from_bytes(source)
        assert g == f and g.to_bytes() == buf
        assert g.might_contain_hashes(hashes).all()
    # inserting into a filter read from read-only bytes copies, never writes the buffer
    g = BloomFilter.from_bytes(buf)
    g.insert_hashes(hash_fixed(np.arange(500, 600, dtype=np.int64)))
    assert BloomFilter.from_bytes(buf) == f and g != f
    writable = bytearray(buf)
    g = BloomFilter.from_bytes(writable)
    g.insert_hashes(hash_fixed(np.arange(500, 600, dtype=np.int64)))
    assert bytes(writable) == buf
    assert BloomFilter(32) == BloomFilter.from_bytes(bytes(32))
    assert BloomFilter(32) != BloomFilter(64)
    assert "num_bytes=32" in repr(BloomFilter(32))


@pytest.mark.parametrize("size", [0, 1, 31, 33, 48, 96, 1000, MAX_BYTES + 32, 2 * MAX_BYTES])
def test_corrupt_bytes_raise(size):
    with pytest.raises(CorruptFileError, match="bloom filter"):
        BloomFilter.from_bytes(bytes(size))


def test_from_bytes_wrong_type():
    with pytest.raises(InvalidOptionError):
        BloomFilter.from_bytes("not bytes")
    with pytest.raises(InvalidOptionError):
        BloomFilter(32).insert_hashes(np.array([1, 2], dtype=np.int64))
    with pytest.raises(InvalidOptionError):
        BloomFilter(32).might_contain_hashes([1.0])
    with pytest.raises(InvalidOptionError):
        BloomFilter(32).might_contain_hash(-1)


def test_empty_filter_and_empty_inputs():
    f = BloomFilter(32)
    assert f.might_contain_hashes(np.zeros(0, np.uint64)).tolist() == []
    f.insert_hashes(np.zeros(0, np.uint64))
    assert f == BloomFilter(32)
    assert not f.might_contain_hashes(hash_fixed(np.arange(100))).any()
    assert not f.might_contain_hash(0)


def test_block_index_uses_all_blocks():
    # ((hash >> 32) * num_blocks) >> 32 spreads values over every block
    f = BloomFilter(MAX_BYTES)
    hashes = np.array([0, (1 << 64) - 1, 1 << 63, (1 << 32) - 1], dtype=np.uint64)
    f.insert_hashes(hashes)
    words = np.frombuffer(f.to_bytes(), "<u4").reshape(-1, 8)
    used = np.flatnonzero(words.any(axis=1)).tolist()
    assert used == [0, f.num_blocks // 2, f.num_blocks - 1]
    assert all(ref_might_contain(f.to_bytes(), int(h)) for h in hashes)


def test_bit_compatible_with_parquet():
    """Our filter bytes appear verbatim in a Parquet file written by Arrow C++.

    Arrow may size its filter below the requested ndv (it looks at the data), so
    every size is tried; the bits must match at one of them.
    """
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(0)
    n = 1000
    table = pa.table({
        "i64": pa.array(rng.integers(-10**12, 10**12, n), pa.int64()),
        "i32": pa.array(rng.integers(-10**9, 10**9, n).astype(np.int32)),
        "u32": pa.array(rng.integers(0, 2**32, n).astype(np.uint32)),
        "u64": pa.array(rng.integers(0, 2**63, n).astype(np.uint64) * np.uint64(2)),
        "f64": pa.array(rng.standard_normal(n)),
        "f32": pa.array(rng.standard_normal(n).astype(np.float32)),
        "date": pa.array(rng.integers(-10**5, 10**5, n).astype(np.int32)).view(pa.date32()),
        "ts": pa.array(rng.integers(-10**15, 10**15, n)).view(pa.timestamp("us", tz="UTC")),
        "s": pa.array([f"v{i}" * (i % 7) for i in range(n)]),
        "ls": pa.array([f"w{i}" for i in range(n)], pa.large_string()),
        "bin": pa.array([bytes([i % 256]) * (i % 5) for i in range(n)]),
    })
    for use_dictionary in (False, True):
        buf = io.BytesIO()
        try:
            pq.write_table(table, buf, use_dictionary=use_dictionary,
                           bloom_filter_options={c: {"ndv": n, "fpp": 0.01} for c in table.column_names})
        except TypeError:
            pytest.skip("this pyarrow cannot write Parquet bloom filters")
        data = buf.getvalue()
        for name in table.column_names:
            hashes = hash_arrow(table[name])
            matches = []
            for size in (32 << k for k in range(10)):
                f = BloomFilter(size)
                f.insert_hashes(hashes)
                if f.to_bytes() in data:
                    matches.append(size)
            assert matches, name


@settings(max_examples=examples(100), deadline=None)
@given(st.sampled_from([pa.int64(), pa.float64(), pa.date32(), pa.string(), pa.bool_()]),
       st.integers(0, 400), st.sampled_from([0.0, 0.3]), st.integers(0, 2**32 - 1))
def test_a_filter_built_from_the_writers_dictionary_is_the_same(atype, n, null_share, seed):
    """The writer hashes only the distinct values its dictionary holds (those non-null
    rows use): the filter's bytes are those of hashing every non-null row."""
    from rcfmt.encodings.dictionary import build_dictionary
    from rcfmt.schema.arrow_io import fill_null_slots, from_arrow
    from rcfmt.index.bloom.chunks import build_filter
    from rcfmt.schema.types import logical_type_from_arrow

    rng = np.random.default_rng(seed)
    pool = {pa.int64(): [1, 2, 3, -(2**63)], pa.float64(): [0.0, -0.0, 1.5, float("nan")],
            pa.date32(): [0, 1, 19000], pa.string(): ["", "a", "x" * 20], pa.bool_(): [True, False]}[atype]
    items = [None if rng.random() < null_share else pool[int(rng.integers(0, len(pool)))] for _ in range(n)]
    arr = pa.array(items, atype)
    lt = logical_type_from_arrow(atype)
    values, valid = from_arrow(arr, lt)
    values = fill_null_slots(values, valid)
    plain = build_filter(values, valid, lt, 256)
    assert build_filter(values, valid, lt, 256, build_dictionary(values, lt)) == plain


# ------------------------------------------------------------ sizing: distinct estimates, folding, the auto policy
@pytest.mark.parametrize("ndv", [1, 7, 300, 5_000, 60_000, 400_000])
def test_estimate_distinct_is_close_to_the_exact_count(ndv):
    from rcfmt.index.bloom.sbbf import estimate_distinct

    rng = np.random.default_rng(ndv)
    values = rng.integers(0, 1 << 40, ndv)[rng.integers(0, ndv, 600_000)]
    exact = len(np.unique(values))
    estimate = estimate_distinct(hash_fixed(values))
    assert abs(estimate - exact) <= max(2, 0.06 * exact), (estimate, exact)  # 1.6% std error: 4 sigma
    assert estimate_distinct(np.empty(0, np.uint64)) == 0
    assert estimate_distinct(hash_fixed(values[:3])) <= 3


@pytest.mark.parametrize("num_bytes", [32, 64, 4096, 1 << 16])
def test_folding_a_filter_is_building_it_smaller(num_bytes):
    from rcfmt.index.bloom.chunks import filter_bits, fold

    h = hash_fixed(np.random.default_rng(1).integers(0, 1 << 62, 3_000))
    big = filter_bits(h, 1 << 17)
    assert fold(big, num_bytes) == filter_bits(h, num_bytes)
    assert fold(big, 1 << 17) == big


def test_auto_filters_go_to_keys_within_the_block_share(tmp_path):
    """Auto filters are sized from a distinct estimate and kept smallest first within the
    block's share: a key column with repeats gets one, a column of long unique text (its
    filter as large as the key column's chunk) does not; a named column always does; the
    footer's report records the estimates; lookups stay exact."""
    from rcfmt.index.bloom.chunks import AUTO_BLOCK_SHARE

    rng = np.random.default_rng(5)
    n = 200_000
    key = 2 * rng.integers(0, 20_000, n)  # even keys: an odd one within the range is absent
    text = [f"{'lorem ipsum dolor sit amet ' * 2}{i}" for i in rng.permutation(n)]
    table = pa.table({"key": key, "text": text, "note": text})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=100_000, bloom_filter_columns="auto")
    with rcfmt.open(path) as f:
        footer = f.footer
        lengths = {c.name: footer.chunks[i]["bloom_length"] for i, c in enumerate(footer.columns)}
        assert (lengths["key"] > 0).all() and (lengths["text"] == 0).all() and (lengths["note"] == 0).all()
        for b in range(footer.num_blocks):
            assert sum(int(v[b]) for v in lengths.values()) <= AUTO_BLOCK_SHARE * int(footer.blocks[b]["length"]) + 8
        report = footer.bloom_report
        assert report["key"]["filters"] == 2 and report["text"] == {**report["text"], "filters": 0, "left_out": 2}
        for estimate in report["key"]["estimated_distinct"]:
            assert 0.9 * 20_000 <= estimate <= 1.1 * 20_000
        for v in [int(key[17]), -1]:
            got = f.scan(filter=rcfmt.col("key") == v).read()
            assert got.num_rows == int((key == v).sum())
        absent = f.scan(filter=rcfmt.col("key") == 12_345)
        assert absent.read().num_rows == 0 and absent.stats.blocks_pruned_bloom >= 1
    rcfmt.write_table(table, path, block_rows=100_000, bloom_filter_columns=["note"])
    with rcfmt.open(path) as f:
        assert (f.footer.chunks[2]["bloom_length"] > 0).all() and (f.footer.chunks[1]["bloom_length"] == 0).all()
        assert f.scan(filter=rcfmt.col("note") == text[3]).read().column("note").to_pylist() == [text[3]]


def test_a_filter_too_large_for_any_block_is_not_hashed_again_until_resampled(tmp_path):
    """A column whose auto filter could not fit its block's share even folded to the
    largest false-positive rate allowed is not hashed for the blocks after it (left out
    without an estimate), then sampled again; a key column keeps its filters in every
    block, the file is the same with and without threads, and lookups stay exact."""
    from rcfmt.file.writer import HINT_LAG, RESAMPLE_BLOCKS

    rng = np.random.default_rng(8)
    blocks, rows = RESAMPLE_BLOCKS + HINT_LAG + 2, 8192
    n = blocks * rows
    key = rng.integers(0, 300, n)
    text = [f"{'lorem ipsum dolor sit amet ' * 2}{i}" for i in rng.permutation(n)]
    table = pa.table({"key": key, "text": text})
    one, threaded = tmp_path / "one.rcfmt", tmp_path / "threaded.rcfmt"
    rcfmt.write_table(table, one, block_rows=rows, use_threads=False, bitmap_indexes=None)
    rcfmt.write_table(table, threaded, block_rows=rows, use_threads=True, bitmap_indexes=None)
    assert one.read_bytes() == threaded.read_bytes()
    with rcfmt.open(one) as f:
        report = f.footer.bloom_report
        assert (f.footer.chunks[0]["bloom_length"] > 0).all() and (f.footer.chunks[1]["bloom_length"] == 0).all()
        assert report["key"]["filters"] == blocks
        assert report["text"]["filters"] == 0 and report["text"]["left_out"] == blocks
        hashed = [b for b, e in enumerate(report["text"]["estimated_distinct"]) if e is not None]
        # the first HINT_LAG blocks decide for the blocks up to RESAMPLE_BLOCKS after them
        assert HINT_LAG == 3 and hashed == [0, 1, 2, RESAMPLE_BLOCKS + 2, RESAMPLE_BLOCKS + 3, RESAMPLE_BLOCKS + 4]
        assert f.scan(filter=rcfmt.col("text") == text[n - 5]).read().column("text").to_pylist() == [text[n - 5]]
        assert f.scan(filter=rcfmt.col("key") == 1_000).read().num_rows == 0


def test_hopeless_is_what_keep_would_leave_out_alone():
    """``BloomPolicy.hopeless`` agrees with ``keep`` of the candidate alone in its block,
    for every distinct count and block size: it is only a way to skip work."""
    from rcfmt.index.bloom.chunks import BloomCandidate, BloomPolicy

    policy = BloomPolicy()
    for ndv in (1, 50, 3_000, 40_000, 97_000, 300_000):
        size = policy.filter_size(ndv)
        candidate = BloomCandidate("c", ndv, bytes(size), True)
        for block_bytes in (1_000, 30_000, 500_000, 2_900_000, 5_000_000, 30_000_000):
            left_out = policy.keep([candidate], block_bytes) == [None]
            assert policy.hopeless(candidate, block_bytes) == left_out, (ndv, block_bytes)
    named = BloomPolicy(["c"], schema_names=["c"])
    assert not named.hopeless(BloomCandidate("c", 10**6, bytes(named.filter_size(10**6)), True), 1_000)

