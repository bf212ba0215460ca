"""BYTE_SPLIT (integers and float bits as byte planes) and ALP_SPLIT (ALP's integers as
byte planes): worked examples, bit-exact round trips through the reference decoder,
the native kernel and whole files (nulls, NaN, -0.0, extremes), hostile headers, and
the selector choosing them where their compressed pages are smaller."""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strategies as S
from strategies import native_decode
import rcfmt
from rcfmt.encodings import by_name
from rcfmt.encodings.base import ColumnValues
from rcfmt.errors import CorruptFileError
from rcfmt.schema.types import LogicalType

SPLIT = by_name("byte_split")
ALP_SPLIT = by_name("alp_split")
INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"<u{a.dtype.itemsize}")


def roundtrip(enc, values: np.ndarray, ltype: LogicalType) -> bytes:
    """Encode, then decode with the reference decoder and the native kernel (aligned
    and misaligned): all give the values' exact bits back."""
    body = enc.encode(ColumnValues(values), ltype)
    for got in (enc.decode(body, len(values), ltype).values,
                enc.decode(memoryview(bytearray(b"\0" + body))[1:], len(values), ltype).values,
                native_decode(enc, body, len(values), ltype).values):
        np.testing.assert_array_equal(bits(np.asarray(got).view(values.dtype)), bits(values))
    return body


def test_worked_example_of_the_spec():
    """docs/FORMAT.md §7.7 and the module's example, byte for byte."""
    body = roundtrip(SPLIT, np.array([1000, 1003, 1301], np.int16), LogicalType("int16"))
    assert body.hex() == "02" + "00" * 7 + "e803" + "00" * 6 + "00032d" + "000001"


def test_alp_split_worked_example():
    """float64 [1.5, 2.25, -0.0, 3.0], e = 2, f = 0: integers 150 225 (225) 300,
    ref 150, offsets 0 75 75 150 in one byte plane, then the exception."""
    values = np.array([1.5, 2.25, -0.0, 3.0])
    body = ALP_SPLIT.encode(ColumnValues(values), LogicalType("float64"), {"e": 2, "f": 0})
    assert body.hex() == ("02000100" "01000000" "9600000000000000" "004b4b96"
                          "0000000000000080" "02000000")
    assert native_decode(ALP_SPLIT, body, 4, LogicalType("float64")).values.tobytes() == values.tobytes()


@pytest.mark.parametrize("name", INT_TYPES)
def test_extremes_and_widths(name):
    """Every width from 0 bytes to the type's, the type's extremes, and a reference
    that wraps (values minus the minimum, modulo 2**T)."""
    dtype = np.dtype(name)
    info = np.iinfo(dtype)
    lt = LogicalType(name)
    for values in ([], [7], [7, 7, 7], [info.min, info.max], [info.max, info.min, 0],
                   [info.min] * 3 + [info.min + 1], [max(info.max - 300, info.min), info.max]):
        body = roundtrip(SPLIT, np.array(values, dtype), lt)
        width = body[0]
        span = (max(values) - min(values)) if values else 0
        assert width == (span.bit_length() + 7) // 8
        assert len(body) == 16 + width * len(values)


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_floats_keep_every_bit(name):
    dtype = np.dtype(name)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, np.finfo(dtype).tiny / 2, 1.5], dtype)
    with np.errstate(invalid="ignore"):  # a NaN with a payload, narrowed for float32
        payload = np.frombuffer(np.array([0x7FF0000000000123], "<u8").tobytes(), "<f8").astype(dtype)
    body = roundtrip(SPLIT, np.concatenate([special, payload]), LogicalType(name))
    assert body[0] == dtype.itemsize and body[8:16] == bytes(8)  # all the bytes, reference 0
    roundtrip(ALP_SPLIT, np.concatenate([special, np.arange(100, dtype=dtype) / 4]), LogicalType(name))


@settings(max_examples=S.examples(200))
@given(data=st.data())
def test_random_values_round_trip(data):
    name = data.draw(st.sampled_from(INT_TYPES + ["date32", "float32", "float64"]))
    lt = LogicalType(name)
    arr = data.draw(S.arrays(lt.to_arrow(), data.draw(st.integers(0, 300)), nullable=False, sliced=False))
    from rcfmt.schema.arrow_io import from_arrow

    values, _ = from_arrow(arr, lt)
    roundtrip(SPLIT, np.asarray(values.values), lt)
    if name.startswith("float"):
        roundtrip(ALP_SPLIT, np.asarray(values.values), lt)


def _header(width: int, ref: int, signed=True, reserved=b"\0" * 7) -> bytes:
    return bytes([width]) + reserved + struct.pack("<q" if signed else "<Q", ref)


@pytest.mark.parametrize("body, rows, name, message", [
    (_header(3, 0) + bytes(6), 2, "int16", "bytes per value"),          # wider than the type
    (_header(1, 0, reserved=b"\0\0\1\0\0\0\0") + bytes(2), 2, "int16", "reserved"),
    (_header(1, 200) + bytes(2), 2, "int8", "reference"),                # beyond int8
    (_header(1, -1) + bytes(2), 2, "uint8", "reference"),                # a uint8 reference read as 2**64 - 1
    (_header(2, 0) + bytes(5), 2, "int32", "expected"),                  # a byte short
    (_header(2, 0) + bytes(7), 2, "int32", "expected"),                  # a byte long
    (bytes(15), 0, "int32", "header"),
    (_header(4, 0, signed=False) + bytes(4), 1, "float32", None),        # valid: any bits
    (_header(4, 5, signed=False) + bytes(4), 1, "float32", None),        # a reference on float bits: still exact
])
def test_hostile_headers(body, rows, name, message):
    """The reference decoder and the native kernel refuse (or accept) the same bodies."""
    lt = LogicalType(name)
    if message is None:
        want = SPLIT.decode(body, rows, lt).values
        assert native_decode(SPLIT, body, rows, lt).values.tobytes() == want.tobytes()
        return
    with pytest.raises(CorruptFileError, match=message):
        SPLIT.decode(body, rows, lt)
    with pytest.raises(CorruptFileError):
        native_decode(SPLIT, body, rows, lt)


def test_alp_split_hostile_headers():
    lt = LogicalType("float64")
    body = ALP_SPLIT.encode(ColumnValues(np.arange(50) / 4), lt, {"e": 2, "f": 0})
    assert body[2] == 2  # e = 2: integers 0..1225, two bytes each
    for bad, message in [(body[:2] + bytes([9]) + body[3:], "byte width 9 exceeds 8"),
                         (body[:-1], "expected"), (body + b"\0", "expected"),
                         (body[:3] + b"\1" + body[4:], "reserved")]:
        with pytest.raises(CorruptFileError, match=message):
            ALP_SPLIT.decode(bad, 50, lt)
        with pytest.raises(CorruptFileError):
            native_decode(ALP_SPLIT, bad, 50, lt)


# ---------------------------------------------------------------------- whole files

_FILE_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64(), pa.date32(),
               pa.timestamp("us", "UTC"), pa.float32(), pa.float64()]


@settings(max_examples=S.examples(40), deadline=None)
@given(data=st.data())
def test_files_round_trip_and_filter_like_pyarrow(data, tmp_path_factory):
    """Forced BYTE_SPLIT / ALP_SPLIT chunks, nulls included, any codec: read back
    exactly by the block executor, and a range filter (evaluated in the decode pass)
    keeps exactly pyarrow.compute's rows."""
    t = data.draw(st.sampled_from(_FILE_TYPES), label="type")
    encoding = data.draw(st.sampled_from(["byte_split", "alp_split"] if pa.types.is_floating(t) else ["byte_split"]))
    arr = data.draw(S.arrays(t, data.draw(st.integers(1, 120)), nullable=True, sliced=False))
    table = pa.table({"c": arr})
    path = tmp_path_factory.mktemp("split") / "t.rcfmt"
    rcfmt.write_table(table, path, encoding=encoding, block_rows=50, page_rows=data.draw(st.integers(1, 30)),
                      compression=data.draw(st.sampled_from(["none", "zstd", "lz4", "auto"])))
    with rcfmt.open(path) as f:
        used = {int(e) for e in f.footer.chunks[0]["encoding"]}
    # ALP_SPLIT, like ALP, leaves a chunk of mostly exceptions (NaN, -0.0, ...) to PLAIN
    assert used <= {by_name(encoding).id, *([by_name("plain").id] if encoding == "alp_split" else [])}
    back = rcfmt.read_table(path).column("c").combine_chunks()
    assert back.type == t and _exact(back) == _exact(arr)
    valid = arr.drop_null()
    if len(valid) and pa.types.is_integer(t):
        pivot = valid[len(valid) // 2]
        want = table.filter(pc.greater_equal(table["c"], pivot))
        got = rcfmt.read_table(path, filter=rcfmt.col("c") >= pivot.as_py())
        assert got.column("c").to_pylist() == want.column("c").to_pylist()


def _exact(arr: pa.Array) -> list:
    """Each row's value bytes (floats' bits: NaN equal to itself, -0.0 apart from 0.0),
    None for nulls (to_pylist cannot convert dates and times at the types' extremes)."""
    width = arr.type.bit_width // 8
    data = np.frombuffer(arr.buffers()[1], np.uint8)[arr.offset * width:(arr.offset + len(arr)) * width]
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    return [bytes(data[i * width:(i + 1) * width]) if valid[i] else None for i in range(len(arr))]


# ---------------------------------------------------------------------- the selector

def _flights(days: int = 200, seed: int = 7) -> pa.Table:
    """Arrival times (HHMM) of a daily schedule of 900 flights, 5% of them missing on
    any day, each late by a skewed delay with a long tail; and the delays as doubles
    (as nycflights13 stores them)."""
    rng = np.random.default_rng(seed)
    schedule = np.sort(np.clip(rng.normal(14 * 60, 240, 900), 300, 1430)).astype(np.int64)
    duration = rng.choice([65, 80, 140, 185, 310], 900)
    times, delays = [], []
    for _ in range(days):
        flies = rng.random(900) > 0.05
        delay = np.round(rng.gamma(1.2, 18, flies.sum()) - 10).astype(np.int64)
        tail = rng.random(len(delay)) < 0.01
        delay[tail] = rng.integers(200, 1300, tail.sum())
        minute = (schedule[flies] + duration[flies] + delay) % 1440
        times.append((minute // 60) * 100 + minute % 60)
        delays.append(delay)
    arrival = np.concatenate(times).astype(np.int16)
    key = rng.integers(0, 1 << 40, len(arrival))
    return pa.table({"arr_time": arrival, "arr_delay": np.concatenate(delays).astype(np.float64), "key": key})


def test_the_writer_chooses_the_split_layouts_where_they_compress_better(tmp_path):
    """A daily schedule's arrival times and delays stored as doubles: zstd over byte
    planes beats bit-packing (uncompressed: an 11-bit field straddles bytes, so a
    repeated day shows zstd no repeated bytes) and ALP's bit-packed integers. The
    default writer picks the split layouts, smaller than the old encodings forced."""
    table = _flights()
    path = tmp_path / "auto.rcfmt"
    rcfmt.write_table(table, path)
    with rcfmt.open(path) as f:
        chosen = {c.name: by_name_of(int(f.footer.chunks[i]["encoding"][0])) for i, c in enumerate(f.footer.columns)}
        split_bytes = {c.name: int(f.footer.chunks[i]["length"].sum()) for i, c in enumerate(f.footer.columns)}
    assert chosen == {"arr_time": "byte_split", "arr_delay": "alp_split", "key": "bitpack"}  # random bits: no gain
    assert rcfmt.read_table(path).equals(table)
    for column, old in [("arr_time", "bitpack"), ("arr_delay", "alp")]:
        other = tmp_path / f"{old}.rcfmt"
        rcfmt.write_table(table.select([column]), other, encoding=old)
        with rcfmt.open(other) as f:
            assert split_bytes[column] < 0.95 * int(f.footer.chunks[0]["length"].sum())


def by_name_of(encoding_id: int) -> str:
    from rcfmt.encodings import by_id

    return by_id(encoding_id).name
