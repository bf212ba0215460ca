"""ALP encoding (float64/float32): bit-exact round trips (NaN payloads, -0.0, infinities,
subnormals), the worked example, the (e, f) search, and hostile bodies."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import strategies
from strategies import native_decode
from rcfmt._native import bitpack as bp
from rcfmt._native import floats as fl
from rcfmt.encodings import alp as alp_mod
from rcfmt.encodings import by_id, by_name
from rcfmt.encodings.alp import HEADER_SIZE
from rcfmt.encodings.base import ColumnValues
from rcfmt.errors import CorruptFileError
from rcfmt.schema.types import LogicalType

ALP = by_name("alp")
F64 = LogicalType("float64")
F32 = LogicalType("float32")
LENGTHS = [0, 1, 2, 5, 1023, 1024, 1025, 5000]


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"<u{a.dtype.itemsize}")


def roundtrip(values: np.ndarray, ltype: LogicalType, params=None) -> bytes:
    body = ALP.encode(ColumnValues(values), ltype, params)
    got = ALP.decode(body, len(values), ltype).values
    assert got.dtype == values.dtype
    np.testing.assert_array_equal(bits(got), bits(values))
    np.testing.assert_array_equal(bits(native_decode(ALP, body, len(values), ltype).values), bits(values))
    shifted = memoryview(bytearray(b"\x00" + body))[1:]  # misaligned body
    np.testing.assert_array_equal(bits(ALP.decode(shifted, len(values), ltype).values), bits(values))
    return body


def special_values(dtype) -> np.ndarray:
    u = np.dtype(f"<u{np.dtype(dtype).itemsize}")
    if u.itemsize == 8:
        nans = np.array([0x7FF8000000000000, 0x7FF0000000000001, 0xFFF8000000000123, 0x7FF4DEADBEEF0000], u)
    else:
        nans = np.array([0x7FC00000, 0x7F800001, 0xFFC00123, 0x7FA5A5A5], u)
    specials = np.array([-0.0, 0.0, np.inf, -np.inf, np.finfo(dtype).tiny, np.finfo(dtype).max,
                         -np.finfo(dtype).max, np.finfo(dtype).smallest_subnormal, 1e-300 if u.itemsize == 8 else 1e-30],
                        dtype=dtype)
    return np.concatenate([nans.view(dtype), specials])


def test_registry():
    assert by_id(5) is ALP and ALP.name == "alp"
    assert ALP.supports(F64) and ALP.supports(F32)
    for name in ("int64", "string", "bool", "date32"):
        assert not ALP.supports(LogicalType(name))
    assert not ALP.supports(LogicalType("decimal128", precision=10, scale=2))


def test_worked_example():
    """float64 [1.5, 2.25, -0.0, 3.0] with e = 2, f = 0 (module docstring)."""
    body = roundtrip(np.array([1.5, 2.25, -0.0, 3.0]), F64, {"e": 2, "f": 0})
    expected = (bytes.fromhex("02 00 08 00 01 00 00 00") + bytes.fromhex("96 00 00 00 00 00 00 00")
                + bytes(8) + bytes.fromhex("4b 00 00 00 00 00 00 00") * 2 + bytes.fromhex("96 00 00 00 00 00 00 00")
                + bytes(96) + bytes.fromhex("00 00 00 00 00 00 00 80") + bytes.fromhex("02 00 00 00"))
    assert len(expected) == 156
    assert body == expected
    assert "96 00 00 00 00 00 00 00   ref = 150" in alp_mod.__doc__


@pytest.mark.parametrize("ltype", [F64, F32], ids=str)
def test_decimal_like_values_pack_tightly(ltype):
    rng = np.random.default_rng(1)
    values = np.round(rng.uniform(0, 10_000, 20_000), 2).astype(ltype.numpy_dtype)
    body = roundtrip(values, ltype)
    e, f, width, k = body[0], body[1], body[2], struct.unpack_from("<I", body, 4)[0]
    assert width <= 21 and k <= 20  # 2 decimals below 10,000: 20 bits
    assert len(body) < (21 / (8 * values.itemsize) + 0.02) * values.nbytes


@pytest.mark.parametrize("ltype", [F64, F32], ids=str)
def test_specials_are_exceptions(ltype):
    dtype = ltype.numpy_dtype
    rng = np.random.default_rng(2)
    for n in LENGTHS:
        base = np.round(rng.normal(100, 20, n), 1).astype(dtype)
        sp = special_values(dtype)
        if n:
            idx = rng.integers(0, n, min(n, 3 * len(sp)))
            base[idx] = sp[np.arange(len(idx)) % len(sp)]
        roundtrip(base, ltype)
    # all exceptions, leading and trailing
    roundtrip(special_values(dtype), ltype)
    roundtrip(np.concatenate([special_values(dtype), np.arange(3000, dtype=dtype) / 4, special_values(dtype)]), ltype)


@pytest.mark.parametrize("ltype", [F64, F32], ids=str)
@settings(max_examples=strategies.examples(60))
@given(data=st.data())
def test_roundtrip_hypothesis(ltype, data):
    dtype = ltype.numpy_dtype
    n = data.draw(st.one_of(st.integers(0, 40), st.sampled_from(LENGTHS)), label="n")
    kind = data.draw(st.sampled_from(["any", "decimal", "mixed"]), label="kind")
    if kind == "any":
        values = data.draw(hnp.arrays(dtype, n, elements=hnp.from_dtype(dtype, allow_nan=True)), label="values")
    else:
        scale = data.draw(st.integers(0, 6))
        ints = data.draw(hnp.arrays(np.int64, n, elements=st.integers(-(10 ** 9), 10 ** 9)))
        values = (ints / 10.0 ** scale).astype(dtype)
        if kind == "mixed" and n:
            raw = data.draw(hnp.arrays(np.dtype(f"<u{dtype.itemsize}"), n))  # arbitrary bit patterns
            mask = data.draw(hnp.arrays(bool, n))
            values[mask] = raw.view(dtype)[mask]
    e = data.draw(st.one_of(st.none(), st.integers(0, alp_mod._MAX_E[ltype.name])))
    params = None if e is None else {"e": e, "f": data.draw(st.integers(0, e))}
    roundtrip(values, ltype, params)


@pytest.mark.parametrize("name", ["alp", "alp_split"])
@pytest.mark.parametrize("ltype", [F64, F32], ids=str)
@settings(max_examples=strategies.examples(40))
@given(data=st.data())
def test_a_chunks_pages_are_the_pages_encoded_alone(name, ltype, data):
    """``encode_chunk`` (one native call for every page) lays out each page as
    ``encode`` does it alone, and each decodes to its rows."""
    enc = by_name(name)
    dtype = ltype.numpy_dtype
    n = data.draw(st.integers(0, 3000), label="n")
    ints = data.draw(hnp.arrays(np.int64, n, elements=st.integers(-(10 ** 6), 10 ** 6)), label="ints")
    values = (ints / 100.0).astype(dtype)
    if n:
        raw = data.draw(hnp.arrays(np.dtype(f"<u{dtype.itemsize}"), n))
        mask = data.draw(hnp.arrays(bool, n)) & (np.arange(n) % 7 == 0)  # some arbitrary bit patterns
        values[mask] = raw.view(dtype)[mask]
    cuts = sorted(set([0, n] + data.draw(st.lists(st.integers(0, n), max_size=5), label="cuts")))
    e = data.draw(st.integers(0, alp_mod._MAX_E[ltype.name]), label="e")
    params = {"e": e, "f": data.draw(st.integers(0, e)), "aligned": data.draw(st.booleans())}

    class Analysis:
        def __init__(self):
            self.params = {name: params}

    pages = enc.encode_chunk(ColumnValues(values), ltype, cuts, analysis=Analysis()).pages
    assert len(pages) == len(cuts) - 1
    for (a, b), page in zip(zip(cuts[:-1], cuts[1:]), pages):
        assert bytes(page) == enc.encode(ColumnValues(values[a:b]), ltype, params)
        np.testing.assert_array_equal(bits(enc.decode(bytes(page), b - a, ltype).values), bits(values[a:b]))


def test_search_prefers_fewest_bits():
    values = np.round(np.linspace(0, 100, 1000), 3)
    e, f, exc, width = fl.alp_search(values)
    # 3 decimals up to 100: 100,000 steps need 17 bits; a few exceptions may be cheaper
    # than a larger exponent
    assert exc <= 10 and width == 17 and e - f == 3
    rng = np.random.default_rng(3)
    e, f, exc, width = fl.alp_search(rng.standard_normal(1000))
    assert exc > 900  # random doubles are not decimals


def test_exception_slots_do_not_widen():
    values = np.full(3000, 1.25)
    values[::7] = np.nan
    values[0] = 1e300
    body = roundtrip(values, F64)
    assert body[2] == 0  # every integer equal: width 0


def test_tables_match_python():
    assert fl.F10 == [float(10 ** k) for k in range(23)]
    assert fl.IF10 == [float(f"1e-{k}") for k in range(23)]


# ------------------------------------------------------------------------ corruption

def body_of(values, ltype=F64, params=None) -> bytes:
    return ALP.encode(ColumnValues(np.asarray(values, dtype=ltype.numpy_dtype)), ltype, params)


def decode_or_corrupt(body, rows, ltype):
    got = strategies.decode_or_corrupt(ALP.decode, body, rows, ltype)
    return None if got is None else got.values


def sample_bodies():
    rng = np.random.default_rng(4)
    for ltype in (F64, F32):
        for n in (0, 1, 37, 1024, 1100):
            v = np.round(rng.uniform(-50, 50, n), 2).astype(ltype.numpy_dtype)
            if n > 5:
                v[[1, 3, 5]] = [np.nan, -0.0, np.inf]
            yield ltype, n, body_of(v, ltype)


def test_truncations_and_extensions():
    for ltype, n, body in sample_bodies():
        for cut in range(len(body)):
            with pytest.raises(CorruptFileError):
                ALP.decode(body[:cut], n, ltype)
        for extra in (b"\x00", bytes(4), bytes(12), bytes(128)):
            with pytest.raises(CorruptFileError):
                ALP.decode(body + extra, n, ltype)


def test_absurd_headers():
    values = np.round(np.linspace(0, 10, 3000), 1)
    values[[10, 20]] = np.nan
    body = body_of(values)
    k = struct.unpack_from("<I", body, 4)[0]
    assert k == 2
    for e in range(19, 256):
        with pytest.raises(CorruptFileError, match="exponent"):
            ALP.decode(bytes([e]) + body[1:], 3000, F64)
    with pytest.raises(CorruptFileError, match="exponent"):  # f > e
        ALP.decode(body[:1] + bytes([body[0] + 1]) + body[2:], 3000, F64)
    with pytest.raises(CorruptFileError, match="exponent"):  # float32 allows e <= 10
        ALP.decode(bytes([11, 0]) + body[2:], 3000, F32)
    for w in range(65, 256):
        with pytest.raises(CorruptFileError, match="bit width"):
            ALP.decode(body[:2] + bytes([w]) + body[3:], 3000, F64)
    for w in range(0, 65):
        if w != body[2]:
            with pytest.raises(CorruptFileError, match="expected"):
                ALP.decode(body[:2] + bytes([w]) + body[3:], 3000, F64)
    with pytest.raises(CorruptFileError, match="reserved"):
        ALP.decode(body[:3] + b"\x01" + body[4:], 3000, F64)
    # exception counts larger than the page, or than the body
    for bad_k in (3001, 2**31, 2**32 - 1):
        with pytest.raises(CorruptFileError, match="exceptions"):
            ALP.decode(body[:4] + struct.pack("<I", bad_k) + body[8:], 3000, F64)
    for bad_k in (0, 1, 3, 100):
        with pytest.raises(CorruptFileError, match="expected"):
            ALP.decode(body[:4] + struct.pack("<I", bad_k) + body[8:], 3000, F64)
    for rows in (-1, 2**62, 2**64):
        with pytest.raises(CorruptFileError):
            ALP.decode(body, rows, F64)


def test_bad_exception_positions():
    values = np.round(np.linspace(0, 10, 3000), 1)
    values[[10, 20]] = np.nan
    body = bytearray(body_of(values))
    pos_at = len(body) - 8
    for first, second in ((20, 10), (10, 10), (10, 3000), (3000, 3001), (2**32 - 1, 5)):
        bad = bytearray(body)
        struct.pack_into("<II", bad, pos_at, first, second)
        with pytest.raises(CorruptFileError, match="exception position"):
            ALP.decode(bytes(bad), 3000, F64)
        with pytest.raises(CorruptFileError):
            native_decode(ALP, bytes(bad), 3000, F64)


@settings(max_examples=strategies.examples(300))
@given(body=st.binary(max_size=400), rows=st.integers(-5, 3000), name=st.sampled_from(["float64", "float32"]))
def test_random_bodies(body, rows, name):
    decode_or_corrupt(body, rows, LogicalType(name))


@settings(max_examples=strategies.examples(200))
@given(data=st.data())
def test_random_mutations(data):
    ltype = data.draw(st.sampled_from([F64, F32]))
    n = data.draw(st.integers(0, 2100))
    values = (np.arange(n) % 97 / 4).astype(ltype.numpy_dtype)
    if n > 3:
        values[[0, n // 2]] = np.nan
    body = bytearray(body_of(values, ltype))
    for _ in range(data.draw(st.integers(1, 4))):
        if body:
            body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    decode_or_corrupt(bytes(body[:data.draw(st.integers(0, len(body)))]), n, ltype)


def test_packed_part_uses_bitpack_layout():
    values = np.arange(2000) * 0.5
    body = body_of(values, params={"e": 1, "f": 0})
    ints = (values * 10).astype(np.int64)
    assert body[HEADER_SIZE:] == bp.for_pack(ints, 0, body[2])
