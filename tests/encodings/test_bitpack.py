"""BITPACK encoding, the native block bit-packing kernels and the dictionary-code helpers.

The layout is pinned by an independent numpy reference packer (``reference_pack``)
written from the module docstring, and by the docstring's worked examples byte for
byte. Corrupt bodies must raise CorruptFileError (or decode to *some* values of the
right length) and nothing else.
"""
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
from rcfmt.encodings import bitpack as bitpack_mod
from rcfmt.encodings.analysis import ChunkAnalysis
from rcfmt.encodings.base import ColumnValues
from rcfmt.encodings.bitpack import HEADER_SIZE, pack_codes, unpack_codes
from rcfmt.errors import CorruptFileError
from rcfmt.schema.types import LogicalType

BITPACK = by_name("bitpack")
LENGTHS = [0, 1, 2, 5, 127, 1023, 1024, 1025, 2048, 5000]
UNSIGNED = [np.uint8, np.uint16, np.uint32, np.uint64]
TYPES = [
    LogicalType(n) for n in
    ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "date32")
] + [LogicalType("timestamp", unit="ns", tz="UTC"), LogicalType("timestamp", unit="s")]


# ------------------------------------------------------------------------ reference

def reference_pack(u: np.ndarray, w: int) -> bytes:
    """The packed layout computed independently with numpy bit arrays (see the
    bitpack module docstring): ``u`` unsigned values (of the storage width, which
    sets T) already minus the reference."""
    T = u.dtype.itemsize * 8
    L = 1024 // T
    out = []
    for start in range(0, len(u), 1024):
        block = np.zeros(1024, dtype=np.uint64)
        m = min(1024, len(u) - start)
        block[:m] = u[start:start + m]
        grid = block.reshape(T, L).T  # [lane, row]
        bits = ((grid[:, :, None] >> np.arange(w, dtype=np.uint64)) & 1).astype(np.uint8)
        stream = bits.reshape(L, T * w)  # each lane's bit stream, LSB first
        lane_bytes = np.packbits(stream, axis=1, bitorder="little")  # (L, w * T / 8)
        words = lane_bytes.reshape(L, w, T // 8).transpose(1, 0, 2)  # [word k, lane, byte]
        if m < 1024:
            rows = -(-m // L)
            words = words[: -(-(rows * w) // T)]
        out.append(words.tobytes())
    return b"".join(out)


def unsigned_of(dtype) -> np.dtype:
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def body_of(values, ltype: LogicalType) -> bytes:
    return BITPACK.encode(ColumnValues(np.asarray(values, dtype=ltype.numpy_dtype)), ltype)


def roundtrip(values: np.ndarray, ltype: LogicalType) -> bytes:
    body = BITPACK.encode(ColumnValues(values), ltype)
    got = BITPACK.decode(body, len(values), ltype).values
    assert got.dtype == ltype.numpy_dtype
    np.testing.assert_array_equal(got, values)
    # the reader's kernel (native page pipeline) agrees with the reference decoder
    np.testing.assert_array_equal(native_decode(BITPACK, body, len(values), ltype).values, values)
    # a misaligned body (a slice of an mmap at any offset) decodes the same
    shifted = memoryview(bytearray(b"\xff" + body))[1:]
    np.testing.assert_array_equal(BITPACK.decode(shifted, len(values), ltype).values, values)
    return body


def random_values(rng, dtype, n, width):
    """n values of dtype spanning exactly ``width`` bits above a random reference."""
    T = np.dtype(dtype).itemsize * 8
    u = rng.integers(0, 1 << 63, size=n, dtype=np.uint64, endpoint=True) * 2 + rng.integers(0, 2, size=n, dtype=np.uint64)
    if width < 64:
        u &= np.uint64((1 << width) - 1)
    if n and width:  # make the span exactly `width` bits
        u[0], u[-1] = 0, (1 << width) - 1
    u = u.astype(unsigned_of(dtype))
    ref = int(rng.integers(0, (1 << T) - ((1 << width) - 1), dtype=np.uint64)) if width < T else 0
    return (u + unsigned_of(dtype).type(ref)).view(dtype), ref


# ------------------------------------------------------------------------ kernels

@pytest.mark.parametrize("dtype", UNSIGNED)
def test_kernel_layout_matches_reference(dtype):
    rng = np.random.default_rng(1)
    T = np.dtype(dtype).itemsize * 8
    for w in sorted({0, 1, 2, 3, T // 2 - 1, T // 2 + 1, T - 1, T}):
        for n in LENGTHS:
            values, ref = random_values(rng, dtype, n, w)
            packed = bp.for_pack(values, ref, w)
            assert len(packed) == bp.packed_size(n, w, T // 8)
            offsets = values.view(unsigned_of(dtype)) - unsigned_of(dtype).type(ref)
            assert packed == reference_pack(offsets, w), (w, n)
            back = bp.for_unpack(packed, n, w, ref, dtype)
            np.testing.assert_array_equal(back, values)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_kernel_all_widths(dtype):
    rng = np.random.default_rng(2)
    T = np.dtype(dtype).itemsize * 8
    for w in range(T + 1):
        values, ref = random_values(rng, dtype, 2100, w)
        packed = bp.for_pack(values, ref, w)
        np.testing.assert_array_equal(bp.for_unpack(packed, 2100, w, ref, dtype), values)


def test_packed_size():
    assert bp.packed_size(0, 64, 8) == 0
    assert bp.packed_size(1024, 7, 4) == 7 * 128
    assert bp.packed_size(1025, 7, 4) == 8 * 128  # 1 row of 7 bits -> 1 word per lane
    assert bp.packed_size(5, 3, 2) == 128
    assert bp.packed_size(257, 3, 1) == 256  # worked example 2
    assert bp.packed_size(10**6, 0, 8) == 0
    for n in range(0, 3000, 7):
        assert bp.packed_size(n, 32, 4) == n // 1024 * 4096 + (-(-(n % 1024) // 32) * 128)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int8, np.int16])
def test_unaligned_output_for_narrow_types(dtype):
    """8/16-bit decoding stores whole 64-bit words: a misaligned ``out`` takes the
    copy path and must give the same result."""
    rng = np.random.default_rng(3)
    values, ref = random_values(rng, dtype, 3000, 5)
    packed = bp.for_pack(values, ref, 5)
    raw = np.zeros(3000 * values.itemsize + 16, dtype=np.uint8)
    for shift in range(0, 8, values.itemsize):
        out = raw[shift:shift + 3000 * values.itemsize].view(dtype)
        bp.for_unpack_into(packed, 3000, 5, ref, out)
        np.testing.assert_array_equal(out, values)


def test_kernel_caller_errors():
    packed = bp.for_pack(np.arange(10, dtype=np.uint32), 0, 4)
    out = np.zeros(10, dtype=np.uint32)
    with pytest.raises(ValueError, match="read-only"):
        ro = out.copy()
        ro.flags.writeable = False
        bp.for_unpack_into(packed, 10, 4, 0, ro)
    with pytest.raises(ValueError, match="holds 5 values"):
        bp.for_unpack_into(packed, 10, 4, 0, out[:5])
    with pytest.raises(ValueError, match="contiguous"):
        bp.for_unpack_into(packed, 5, 4, 0, np.zeros(20, np.uint32)[::2][:5])
    with pytest.raises(TypeError):
        bp.for_unpack_into(packed, 10, 4, 0, np.zeros(10, np.float32))
    with pytest.raises(TypeError):
        bp.for_pack([1, 2, 3], 0, 4)
    with pytest.raises(ValueError):
        bp.for_pack(np.arange(3, dtype=np.uint8), 0, 9)
    with pytest.raises(ValueError, match="does not fit"):
        bp.for_pack(np.arange(3, dtype=np.uint8), 256, 2)
    with pytest.raises(CorruptFileError, match="out of range 0..8"):
        bp.for_unpack(packed, 10, 9, 0, np.uint8)
    with pytest.raises(CorruptFileError, match="expected 128"):
        bp.for_unpack(packed, 10, 4, 0, np.uint32, 1)


# ------------------------------------------------------------------------ encoding

def test_registry():
    assert by_id(3) is BITPACK and BITPACK.name == "bitpack"
    for t in TYPES:
        assert BITPACK.supports(t)
    for name in ("float32", "float64", "bool", "string", "binary"):
        assert not BITPACK.supports(LogicalType(name))
    # decimal128 pages whose values fit in int64 (see test_decimal.py)
    assert BITPACK.supports(LogicalType("decimal128", precision=10, scale=2))


@pytest.mark.parametrize("ltype", TYPES, ids=str)
def test_roundtrip_extremes(ltype):
    dtype = ltype.numpy_dtype
    info = np.iinfo(dtype)
    rng = np.random.default_rng(4)
    T = 8 * dtype.itemsize
    for n in LENGTHS:
        cases = {
            "zeros": np.zeros(n, dtype),
            "min": np.full(n, info.min, dtype),
            "max": np.full(n, info.max, dtype),
            "min_max": np.resize(np.array([info.min, info.max], dtype), n),
            "random": rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True),
            "small": rng.integers(-3 if info.min else 0, 4, size=n).astype(dtype),
            "near_max": (np.array(info.max, dtype) - rng.integers(0, 1000, size=n).astype(dtype)),
        }
        for label, values in cases.items():
            body = roundtrip(values, ltype)
            width = body[0]
            if label in ("zeros", "min", "max") or n == 0:
                assert width == 0 and len(body) == HEADER_SIZE, label
            if label == "min_max" and n >= 2:
                assert width == T, label
            if label == "near_max" and n > 100 and T >= 16:
                assert width == 10, label


@pytest.mark.parametrize("ltype", TYPES, ids=str)
@settings(max_examples=strategies.examples(25))
@given(data=st.data())
def test_roundtrip_hypothesis(ltype, data):
    dtype = ltype.numpy_dtype
    n = data.draw(st.one_of(st.integers(0, 40), st.sampled_from(LENGTHS)), label="n")
    values = data.draw(hnp.arrays(dtype, n, elements=hnp.from_dtype(dtype)), label="values")
    body = roundtrip(values, ltype)
    expected_width = (int(values.max()) - int(values.min())).bit_length() if n else 0
    assert body[0] == expected_width
    assert len(body) == HEADER_SIZE + bp.packed_size(n, expected_width, dtype.itemsize)


def test_accepts_datetime64_and_bytes_like_bodies():
    ltype = LogicalType("timestamp", unit="ms")
    values = np.array(["2024-01-01T00:00:00", "2024-01-02T12:00:00"], dtype="datetime64[ms]")
    body = BITPACK.encode(ColumnValues(values), ltype)
    got = BITPACK.decode(np.frombuffer(body, np.uint8), 2, ltype).values
    np.testing.assert_array_equal(got, values.view("<i8"))
    with pytest.raises(TypeError):
        BITPACK.encode(ColumnValues(np.zeros(3, np.float64)), ltype)


# ------------------------------------------------------------------------ worked examples

def test_worked_example_1():
    """int16 [1000, 1003, 1001, 1007, 1000] (module docstring)."""
    body = body_of([1000, 1003, 1001, 1007, 1000], LogicalType("int16"))
    expected = (
        bytes.fromhex("03 00 00 00 00 00 00 00")
        + bytes.fromhex("e8 03 00 00 00 00 00 00")
        + bytes.fromhex("00 00 03 00 01 00 07 00")
        + bytes.fromhex("00 00") + bytes(118)
    )
    assert len(expected) == 144
    assert body == expected
    assert "e8 03 00 00 00 00 00 00   reference 1000" in bitpack_mod.__doc__


def test_worked_example_2():
    """uint8, 257 values, v[0]=1, v[128]=2, v[256]=7 (module docstring)."""
    values = np.zeros(257, np.uint8)
    values[[0, 128, 256]] = [1, 2, 7]
    body = body_of(values, LogicalType("uint8"))
    packed = bytearray(256)
    packed[0] = 0xD1
    packed[128] = 0x01
    assert body == bytes([3]) + bytes(7) + bytes(8) + bytes(packed)
    assert len(body) == 272


def test_signed_reference_is_sign_extended():
    body = body_of([-5, -3], LogicalType("int8"))
    assert body[:16] == bytes([2]) + bytes(7) + (-5).to_bytes(8, "little", signed=True)
    body = body_of([2**64 - 1, 2**64 - 2], LogicalType("uint64"))
    assert body[8:16] == (2**64 - 2).to_bytes(8, "little")


# ------------------------------------------------------------------------ estimate_size

@pytest.mark.parametrize("ltype", TYPES, ids=str)
def test_estimate_size_matches_single_page(ltype):
    rng = np.random.default_rng(5)
    info = np.iinfo(ltype.numpy_dtype)
    for n in (0, 1, 1000, 5000):
        lo = int(rng.integers(info.min, info.max // 2, endpoint=True)) if n else 0
        values = np.clip(lo + rng.integers(0, 5000, size=n), info.min, info.max).astype(ltype.numpy_dtype)
        analysis = ChunkAnalysis(rows=n, null_count=0, plain_size=values.nbytes,
                                 min_int=int(values.min()) if n else None,
                                 max_int=int(values.max()) if n else None)
        chunk = ColumnValues(values)
        estimate = BITPACK.estimate_size(chunk, ltype, analysis)
        assert estimate == len(BITPACK.encode(chunk, ltype))
        # several pages: each page has its own header and last block, never a wider width
        pages = BITPACK.encode_chunk(chunk, ltype, [0, n // 3, 2 * n // 3, n]).pages
        actual = sum(map(len, pages))
        assert actual <= estimate + 3 * (HEADER_SIZE + 256)  # tail rounding: < 2 x 128 bytes
        assert actual >= 0.9 * estimate - 3 * HEADER_SIZE
    assert BITPACK.estimate_size(ColumnValues(np.zeros(3, np.float64)), LogicalType("float64"),
                                 ChunkAnalysis(rows=3, null_count=0, plain_size=24)) is None


# ------------------------------------------------------------------------ dictionary codes

@pytest.mark.parametrize("n", LENGTHS)
def test_codes_roundtrip(n):
    rng = np.random.default_rng(6)
    for size in (1, 2, 255, 256, 70000, 2**32):
        codes = rng.integers(0, size, n, dtype=np.uint64).astype(np.uint32)
        buf = pack_codes(codes, size - 1)
        assert buf[0] == (size - 1).bit_length()
        assert len(buf) == 8 + bp.packed_size(n, (size - 1).bit_length(), 4)
        got = unpack_codes(buf, n, limit=size)
        assert got.dtype == np.uint32
        np.testing.assert_array_equal(got, codes)


def test_codes_errors():
    with pytest.raises(ValueError):
        pack_codes(np.array([0, 5], np.uint32), 4)
    with pytest.raises(ValueError):
        pack_codes(np.array([0], np.int64), 2**32)
    buf = pack_codes(np.array([0, 3, 1], np.uint32), 3)
    np.testing.assert_array_equal(unpack_codes(buf, 3), [0, 3, 1])
    with pytest.raises(CorruptFileError, match="out of range for 3 entries"):
        unpack_codes(buf, 3, limit=3)
    with pytest.raises(CorruptFileError):
        unpack_codes(buf[:-1], 3)
    with pytest.raises(CorruptFileError):
        unpack_codes(buf, 2000)
    with pytest.raises(CorruptFileError, match="exceeds 32"):
        unpack_codes(bytes([33]) + buf[1:], 3)
    with pytest.raises(CorruptFileError, match="reserved"):
        unpack_codes(buf[:5] + b"\x01" + buf[6:], 3)
    with pytest.raises(CorruptFileError, match="shorter"):
        unpack_codes(b"\x02", 0)
    with pytest.raises(CorruptFileError, match="out of range for 0 entries"):
        unpack_codes(pack_codes(np.zeros(4, np.uint32), 0), 4, limit=0)


# ------------------------------------------------------------------------ corruption

def decode_or_corrupt(body, rows, ltype):
    got = strategies.decode_or_corrupt(BITPACK.decode, body, rows, ltype)
    return None if got is None else got.values


def sample_bodies():
    rng = np.random.default_rng(7)
    for ltype in (LogicalType("int8"), LogicalType("uint16"), LogicalType("int32"), LogicalType("int64"),
                  LogicalType("uint64"), LogicalType("date32")):
        info = np.iinfo(ltype.numpy_dtype)
        for n in (0, 1, 37, 1024, 1100):
            values = rng.integers(info.min, info.max, size=n, dtype=ltype.numpy_dtype, endpoint=True)
            yield ltype, n, body_of(values, ltype)
            yield ltype, n, body_of(values % 5, ltype)


def test_truncations_and_extensions():
    for ltype, n, body in sample_bodies():
        for cut in range(len(body)):
            with pytest.raises(CorruptFileError):
                BITPACK.decode(body[:cut], n, ltype)
        for extra in (b"\x00", bytes(7), bytes(8), bytes(128)):
            with pytest.raises(CorruptFileError):
                BITPACK.decode(body + extra, n, ltype)


def test_header_byte_flips():
    rng = np.random.default_rng(8)
    for ltype, n, body in sample_bodies():
        for pos in range(HEADER_SIZE):
            for mask in (1, 0x80, int(rng.integers(1, 256))):
                bad = bytearray(body)
                bad[pos] ^= mask
                got = decode_or_corrupt(bytes(bad), n, ltype)
                if pos in range(1, 8):
                    assert got is None  # reserved bytes must be zero


def test_absurd_headers():
    ltype = LogicalType("int32")
    body = body_of(np.arange(3000), ltype)
    for width in list(range(33, 256)):
        with pytest.raises(CorruptFileError, match="bit width"):
            BITPACK.decode(bytes([width]) + body[1:], 3000, ltype)
    # a width that fits the type but not the body length
    for width in range(0, 33):
        if width != body[0]:
            with pytest.raises(CorruptFileError, match="expected"):
                BITPACK.decode(bytes([width]) + body[1:], 3000, ltype)
    # references outside the type's range
    for ref in (2**31, -(2**31) - 1, 2**62, -(2**63)):
        bad = body[:8] + ref.to_bytes(8, "little", signed=True) + body[16:]
        with pytest.raises(CorruptFileError, match="out of range"):
            BITPACK.decode(bad, 3000, ltype)
    utype = LogicalType("uint32")
    ubody = body_of(np.arange(3000), utype)
    for ref in (2**32, 2**63, 2**64 - 1):  # an unsigned reference is zero-extended
        bad = ubody[:8] + ref.to_bytes(8, "little") + ubody[16:]
        with pytest.raises(CorruptFileError, match="out of range"):
            BITPACK.decode(bad, 3000, utype)


def test_row_counts_that_do_not_fit_the_body():
    ltype = LogicalType("int64")
    body = body_of(np.arange(100) * 7, ltype)
    for rows in (-1, -(2**62), 0, 50, 200, 1024, 2**31, 2**40, 2**62, 2**63 - 1, 2**64, 2**100):
        with pytest.raises(CorruptFileError):
            BITPACK.decode(body, rows, ltype)
    # the body does not store the count: rows that need the same packed size decode
    # (the page header bounds rows; here 97..192 values need the same 2 words per lane)
    np.testing.assert_array_equal(BITPACK.decode(body, 99, ltype).values, np.arange(99) * 7)
    # width 0: any row count matches a header-only body; rows is the caller's bound
    zero = body_of(np.zeros(5), ltype)
    assert len(BITPACK.decode(zero, 7, ltype).values) == 7
    with pytest.raises(CorruptFileError):
        BITPACK.decode(zero, -1, ltype)


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
    values = np.arange(n, dtype=np.int64) % 97
    body = bytearray(body_of(values.astype(ltype.numpy_dtype), ltype))
    for _ in range(data.draw(st.integers(1, 4))):
        if body:
            pos = data.draw(st.integers(0, len(body) - 1))
            body[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(body)))
    decode_or_corrupt(bytes(body[:cut]), n, ltype)


@settings(max_examples=strategies.examples(150), deadline=None)
@given(st.sampled_from(["int8", "uint16", "int32", "uint32", "int64", "uint64", "date32", "decimal128"]),
       st.lists(st.integers(0, 3000), min_size=1, max_size=6), st.booleans(), st.integers(0, 2**32 - 1))
def test_chunk_encoding_is_page_by_page_encoding(name, page_rows, aligned, seed):
    """encode_chunk (one storage array, two reductions, one buffer) writes every page as
    encode() writes it alone, aligned widths and empty pages included."""
    rng = np.random.default_rng(seed)
    n = sum(page_rows)
    if name == "decimal128":
        lt = LogicalType("decimal128", precision=18, scale=2)
        low = rng.integers(-(10**17), 10**17, n)
        values = np.empty(n, "V16")
        words = values.view("<i8").reshape(-1, 2)
        words[:, 0], words[:, 1] = low, low >> 63
    else:
        lt = LogicalType(name)
        dtype = np.int32 if name == "date32" else np.dtype(name)
        info = np.iinfo(dtype)
        span = min(int(rng.choice([0, 100, 2**20, 2**64])), int(info.max) - int(info.min))
        lo = int(info.min) + int(rng.random() * (int(info.max) - int(info.min) - span))
        values = rng.integers(lo, lo + span, n, endpoint=True, dtype=dtype)
    chunk = ColumnValues(values)
    bounds = np.concatenate(([0], np.cumsum(page_rows))).tolist()
    enc = by_name("bitpack")
    analysis = ChunkAnalysis(rows=n, null_count=0, plain_size=0)
    analysis.params["bitpack"] = {"aligned": aligned}
    got = [bytes(p) for p in enc.encode_chunk(chunk, lt, bounds, analysis=analysis).pages]
    want = [enc.encode(chunk.slice(a, b), lt, {"aligned": aligned}) for a, b in zip(bounds[:-1], bounds[1:])]
    assert got == want


@settings(max_examples=strategies.examples(100), deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(0, 3000), min_size=1, max_size=6),
       st.sampled_from([0, 8, 16]), st.integers(0, 2**32 - 1))
def test_code_pages_are_pack_codes_page_by_page(max_code, page_rows, lead, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, max_code, sum(page_rows), endpoint=True).astype(np.int64)
    bounds = np.concatenate(([0], np.cumsum(page_rows))).tolist()
    got = [bytes(p) for p in bitpack_mod.pack_code_pages(codes, max_code, bounds, lead=lead)]
    assert got == [bytes(lead) + pack_codes(codes[a:b], max_code) for a, b in zip(bounds[:-1], bounds[1:])]
    with pytest.raises(ValueError):
        bitpack_mod.pack_code_pages(codes, max_code, bounds, lead=3)
    if max_code < 2**32 - 1:
        with pytest.raises(ValueError):
            bitpack_mod.pack_code_pages(np.array([max_code + 1]), max_code, [0, 1])
