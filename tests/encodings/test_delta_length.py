"""DELTA_LENGTH (strings/binary with DELTA-packed offsets) and DICTIONARY's bit-packed
code layout (layout 0): round trips, worked examples, hostile bodies."""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strategies
from rcfmt.encodings import by_id, by_name
from rcfmt.encodings import delta_length as dl_mod
from rcfmt.encodings import dictionary as dict_mod
from rcfmt.encodings.analysis import ChunkAnalysis
from rcfmt.encodings.base import ColumnValues
from rcfmt.encodings.bitpack import pack_codes
from rcfmt.encodings.dictionary import LAYOUT_BITPACKED, build_dictionary, decode_codes
from rcfmt.errors import CorruptFileError
from rcfmt.schema.types import LogicalType

DL = by_name("delta_length")
DICT = by_name("dictionary")
STRING = LogicalType("string")
BINARY = LogicalType("binary")


def values_of(items, large=False) -> ColumnValues:
    arr = pa.array(items, type=pa.large_binary() if large else pa.binary())
    dtype = np.int64 if large else np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr) + 1)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] is not None else np.empty(0, np.uint8)
    return ColumnValues(data, offsets)


def as_list(cv: ColumnValues) -> list[bytes]:
    o = cv.offsets
    return [cv.values[o[i]:o[i + 1]].tobytes() for i in range(len(o) - 1)]


def roundtrip(items, ltype=BINARY) -> bytes:
    cv = values_of(items)
    body = DL.encode(cv, ltype)
    got = DL.decode(body, len(items), ltype)
    assert got.offsets.dtype == np.int32 and int(got.offsets[0]) == 0
    assert as_list(got) == list(items)
    shifted = memoryview(bytearray(b"\x00" + body))[1:]
    assert as_list(DL.decode(shifted, len(items), ltype)) == list(items)
    return body


# ------------------------------------------------------------------------ DELTA_LENGTH

def test_registry():
    assert by_id(6) is DL and DL.name == "delta_length"
    assert DL.supports(STRING) and DL.supports(BINARY) and DL.supports(LogicalType("string", large=True))
    for name in ("int64", "float64", "bool"):
        assert not DL.supports(LogicalType(name))


def test_worked_example():
    body = roundtrip([b"ab", b"", b"cde"], STRING)
    expected = (bytes.fromhex("98 00 00 00 00 00 00 00") + bytes.fromhex("02 00 00 00 00 00 00 00") + bytes(16)
                + bytes.fromhex("00 00 00 00 02 00 00 00 00 00 00 00 03 00 00 00") + bytes(112) + b"abcde")
    assert len(expected) == 165
    assert body == expected
    assert "98 00 00 00 00 00 00 00   m = 152" in dl_mod.__doc__


@settings(max_examples=strategies.examples(100))
@given(items=st.lists(st.binary(max_size=70), max_size=1200))
def test_roundtrip_hypothesis(items):
    roundtrip(items)


def test_sliced_and_large_offsets():
    items = [bytes([i % 251]) * (i % 37) for i in range(3000)]
    cv = values_of(items, large=True)
    part = cv.slice(1000, 2500)  # offsets[0] != 0, int64
    body = DL.encode(part, BINARY)
    assert as_list(DL.decode(body, 1500, BINARY)) == items[1000:2500]
    assert roundtrip([]) == DL.encode(values_of([]), BINARY)
    roundtrip([b""] * 5000)  # all empty: width 0


def test_estimate_matches_single_page():
    rng = np.random.default_rng(1)
    for n in (0, 1, 100, 5000):
        items = [b"x" * int(k) for k in rng.integers(10, 44, n)]
        cv = values_of(items)
        a = ChunkAnalysis(rows=n, null_count=0, plain_size=4 * (n + 1) + cv.nbytes)
        assert DL.estimate_size(cv, BINARY, a) == len(DL.encode(cv, BINARY))


def dl_body(n=3000):
    return DL.encode(values_of([b"v" * (i % 23) for i in range(n)]), BINARY), n


def test_truncations_and_extensions():
    for n in (0, 1, 50, 1100):
        body, _ = dl_body(n)
        for cut in range(len(body)):
            with pytest.raises(CorruptFileError):
                DL.decode(body[:cut], n, BINARY)
        for extra in (b"\x00", bytes(8)):
            with pytest.raises(CorruptFileError):
                DL.decode(body + extra, n, BINARY)


def test_absurd_headers():
    body, n = dl_body()
    m = struct.unpack_from("<I", body, 0)[0]
    for bad_m in (0, 23, m - 1, m + 1, len(body), 2**31, 2**32 - 1):
        with pytest.raises(CorruptFileError):
            DL.decode(struct.pack("<I", bad_m) + body[4:], n, BINARY)
    with pytest.raises(CorruptFileError, match="reserved"):
        DL.decode(body[:4] + b"\x01\x00\x00\x00" + body[8:], n, BINARY)
    for w in range(33, 256):  # nested DELTA width
        with pytest.raises(CorruptFileError, match="bit width"):
            DL.decode(body[:8] + bytes([w]) + body[9:], n, BINARY)
    # nested first offset not 0, or a minimum delta that makes offsets decrease
    bad = bytearray(body)
    struct.pack_into("<q", bad, 16, 5)
    with pytest.raises(CorruptFileError, match="offsets"):
        DL.decode(bytes(bad), n, BINARY)
    bad = bytearray(body)
    struct.pack_into("<q", bad, 24, -100)
    with pytest.raises(CorruptFileError, match="offsets"):
        DL.decode(bytes(bad), n, BINARY)
    for rows in (-1, n - 1, n + 2000, 2**40, 2**63):
        with pytest.raises(CorruptFileError):
            DL.decode(body, rows, BINARY)
    # the body does not store the row count (the page header does): one more row whose
    # packed entry is padding decodes as an empty value, like BITPACK's padding rows
    assert as_list(DL.decode(body, n + 1, BINARY))[-1] == b""


decode_or_corrupt = strategies.decode_or_corrupt


@settings(max_examples=strategies.examples(300))
@given(body=st.binary(max_size=300), rows=st.integers(-3, 2000))
def test_random_bodies(body, rows):
    got = decode_or_corrupt(DL.decode, body, rows, BINARY)
    if got is not None:
        assert len(got) == rows and int(got.offsets[-1]) == len(got.values)


@settings(max_examples=strategies.examples(200))
@given(data=st.data())
def test_random_mutations(data):
    n = data.draw(st.integers(0, 1500))
    body = bytearray(DL.encode(values_of([b"ab" * (i % 5) for i in range(n)]), BINARY))
    for _ in range(data.draw(st.integers(1, 4))):
        if body:
            body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    got = decode_or_corrupt(DL.decode, bytes(body[:data.draw(st.integers(0, len(body)))]), n, BINARY)
    if got is not None:
        assert len(got) == n and int(got.offsets[-1]) == len(got.values)


# ------------------------------------------------------------------------ dictionary layout 0

def dictionary_chunk(items, ltype=STRING, layout=LAYOUT_BITPACKED, bounds=None):
    cv = values_of(items)
    a = ChunkAnalysis(rows=len(items), null_count=0, plain_size=0)
    a.dictionary = build_dictionary(cv, ltype)
    a.params["dictionary"] = {"layout": layout}
    return DICT.encode_chunk(cv, ltype, bounds or [0, len(items)], analysis=a), a


def test_dictionary_layout0_worked_example():
    enc, _ = dictionary_chunk([b"b", b"a", b"b"])
    assert enc.dictionary == bytes.fromhex("00000000 01000000 02000000 62 61")
    body = enc.pages[0]
    assert body == bytes(8) + bytes.fromhex("01 00 00 00 00 00 00 00") + bytes.fromhex("00000000 01000000") + bytes(120)
    assert len(body) == 144
    np.testing.assert_array_equal(decode_codes(body, 3, 2), [1 - 1, 1, 0])
    assert "144 bytes; a page of 20,000 codes" in dict_mod.__doc__


@pytest.mark.parametrize("size", [1, 2, 7, 255, 256, 257, 70000])
def test_dictionary_layouts_roundtrip(size):
    rng = np.random.default_rng(size)
    n = 5000
    items = [b"k%d" % i for i in rng.integers(0, size, n)]
    items[: min(size, n)] = [b"k%d" % i for i in range(min(size, n))]
    for layout in ("bytes", LAYOUT_BITPACKED):
        enc, a = dictionary_chunk(items, BINARY, layout, [0, 1000, 1024, 4000, n])
        dictionary = DICT.decode  # noqa: F841 (decode needs the decoded dictionary)
        from rcfmt.encodings.plain import decode_plain
        d = decode_plain(enc.dictionary, enc.dictionary_size, BINARY)
        out = []
        for (start, stop), body in zip([(0, 1000), (1000, 1024), (1024, 4000), (4000, n)], enc.pages):
            assert (body[0] == 0) == (layout == LAYOUT_BITPACKED)
            out += as_list(DICT.decode(body, stop - start, BINARY, d))
        assert out == items
        est = DICT.estimate_size(values_of(items), BINARY, a)
        actual = len(enc.dictionary) + sum(map(len, enc.pages))
        assert abs(est - actual) <= 4 * 300  # per-page headers and tail rounding


def test_dictionary_layout0_corruption():
    codes = np.arange(3000) % 7
    body = bytes(8) + pack_codes(codes, 6)
    np.testing.assert_array_equal(decode_codes(body, 3000, 7), codes)
    with pytest.raises(CorruptFileError, match="out of range for 6 entries"):
        decode_codes(body, 3000, 6)
    for cut in (0, 1, 7, 8, 15, 16, len(body) - 1):
        with pytest.raises(CorruptFileError):
            decode_codes(body[:cut], 3000, 7)
    with pytest.raises(CorruptFileError):
        decode_codes(body + b"\x00", 3000, 7)
    with pytest.raises(CorruptFileError, match="padding"):
        decode_codes(b"\x00\x01" + body[2:], 3000, 7)
    for w in range(33, 256):
        with pytest.raises(CorruptFileError, match="exceeds 32"):
            decode_codes(body[:8] + bytes([w]) + body[9:], 3000, 7)
    for rows in (-1, 2999 - 1024, 5000, 2**62):
        with pytest.raises(CorruptFileError):
            decode_codes(body, rows, 7)
    for layout in (3, 5, 8, 0x80, 0xFF):  # unknown layout bytes
        with pytest.raises(CorruptFileError, match="layout"):
            decode_codes(bytes([layout]) + body[1:], 3000, 7)


def test_dictionary_old_layouts_still_decode():
    for width, dtype in ((1, "<u1"), (2, "<u2"), (4, "<u4")):
        codes = (np.arange(100) % 9).astype(dtype)
        np.testing.assert_array_equal(decode_codes(bytes([width]) + codes.tobytes(), 100, 9), codes)


@settings(max_examples=strategies.examples(300))
@given(body=st.binary(max_size=300), rows=st.integers(-3, 3000), size=st.integers(0, 2**32))
def test_dictionary_random_bodies(body, rows, size):
    try:
        codes = decode_codes(bytes([0]) + body, rows, size)
    except CorruptFileError:
        return
    assert len(codes) == rows and (rows == 0 or int(codes.max()) < size)
