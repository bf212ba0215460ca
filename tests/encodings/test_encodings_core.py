"""The core value encodings PLAIN (0), DICTIONARY (1) and RLE (2): worked examples byte
for byte, round trips for every type, hostile bodies, and what the selector picks
(asserted in the footer, Lance ``with_expected_encoding`` style)."""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from rcfmt.encodings import by_id, by_name, dictionary, plain, rle
from rcfmt.encodings.base import ColumnValues
from rcfmt.encodings.dictionary import code_width, decode_codes
from rcfmt.encodings.plain import decode_plain, encode_plain
from rcfmt.encodings.selector import analyze, choose
from rcfmt.errors import CorruptFileError
from rcfmt.schema.arrow_io import fill_null_slots, from_arrow, to_arrow
from rcfmt.schema.statistics import compute_stats
from rcfmt.schema.types import LogicalType, PhysicalKind, logical_type_from_arrow

PLAIN, DICTIONARY, RLE = by_name("plain"), by_name("dictionary"), by_name("rle")
CORE = [PLAIN, DICTIONARY, RLE]


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def values_of(arr: pa.Array) -> tuple[ColumnValues, LogicalType]:
    lt = logical_type_from_arrow(arr.type)
    values, _ = from_arrow(arr, lt)
    return values, lt


def back_to_arrow(values: ColumnValues, lt: LogicalType) -> pa.Array:
    return to_arrow(values, None, lt)


# ============================================================================ wire ids and registry
def test_wire_ids_are_fixed():
    """Ids are written into files: they never change."""
    assert (PLAIN.id, DICTIONARY.id, RLE.id) == (0, 1, 2)
    assert by_id(0) is PLAIN and by_id(1) is DICTIONARY and by_id(2) is RLE
    with pytest.raises(rcfmt.UnsupportedError, match="unknown encoding id 250"):
        by_id(250)
    with pytest.raises(rcfmt.InvalidOptionError, match="unknown encoding"):
        by_name("PLAIN")


def test_the_wire_id_table_names_every_encoding_and_what_it_holds():
    """rcfmt.encodings.ids is what opens, scans and ``inspect`` consult instead of the
    registry: every registered encoding is in it under its own name, nothing else is,
    an unknown id holds nothing known (the decode refuses it), and the footer check's row
    passes unknown ids and refuses known ones that cannot hold the type."""
    from rcfmt.encodings import all_encodings, holds_type
    from rcfmt.encodings.ids import NAMES, holds

    assert {e.id: e.name for e in all_encodings()} == NAMES
    for t in [LogicalType("bool"), LogicalType("string"), LogicalType("float64"), LogicalType("int16"),
              LogicalType("decimal128", precision=5, scale=0), LogicalType("timestamp", unit="us")]:
        assert holds(200, t) is None
        row = holds_type(t)
        assert row[200] == 1 and all(row[e.id] == e.supports(t) for e in all_encodings())
    assert holds(5, LogicalType("float32")) and not holds(5, LogicalType("int32"))
    assert holds(3, LogicalType("decimal128", precision=30, scale=2)) and not holds(4, LogicalType("decimal128", precision=5, scale=0))


def test_supported_kinds():
    assert PLAIN.supports(LogicalType("bool")) and PLAIN.supports(LogicalType("string"))
    assert not DICTIONARY.supports(LogicalType("bool"))
    assert DICTIONARY.supports(LogicalType("binary")) and DICTIONARY.supports(LogicalType("float32"))
    assert RLE.supports(LogicalType("bool")) and RLE.supports(LogicalType("decimal128", precision=5, scale=0))
    assert not RLE.supports(LogicalType("string"))


# ============================================================================ worked examples
def test_plain_worked_examples():
    """The examples in rcfmt/encodings/plain.py's docstring, byte for byte."""
    assert "``01 00 fe ff``" in plain.__doc__
    assert "``00000000 02000000 02000000 03000000 61 62 63``" in plain.__doc__
    v, lt = values_of(pa.array([1, -2], pa.int16()))
    assert encode_plain(v, lt) == h("01 00 fe ff")
    assert decode_plain(h("01 00 fe ff"), 2, lt).values.tolist() == [1, -2]
    v, lt = values_of(pa.array(["ab", "", "c"]))
    body = h("00000000 02000000 02000000 03000000 61 62 63")
    assert encode_plain(v, lt) == body
    assert back_to_arrow(decode_plain(body, 3, lt), lt).to_pylist() == ["ab", "", "c"]


def test_plain_layouts():
    """FIXED little-endian, BOOL one bit per value LSB first, VARBINARY offsets from 0."""
    v, lt = values_of(pa.array([True, False, True, True, False, False, False, False, True]))
    assert PLAIN.encode(v, lt) == bytes([0b00001101, 0b00000001])
    v, lt = values_of(pa.array([-0.0, float("inf")], pa.float32()))
    assert PLAIN.encode(v, lt) == h("00000080 0000807f")
    v, lt = values_of(pa.array([-1], pa.decimal128(5, 2)))  # unscaled -100
    assert PLAIN.encode(v, lt) == (-100).to_bytes(16, "little", signed=True)
    sliced = pa.array(["zz", "ab", "c"]).slice(1)  # offsets in memory start at 2
    v, lt = values_of(sliced)
    assert PLAIN.encode(v, lt) == h("00000000 02000000 03000000 61 62 63")


def test_dictionary_worked_example():
    """The example in rcfmt/encodings/dictionary.py's docstring, byte for byte."""
    assert "``00000000 01000000 02000000 62 61``" in dictionary.__doc__
    assert "``01 00 01 00``" in dictionary.__doc__
    v, lt = values_of(pa.array(["b", "a", "b"]))
    enc = DICTIONARY.encode_chunk(v, lt, [0, 3])
    assert enc.dictionary == h("00000000 01000000 02000000 62 61")  # first-appearance order
    assert enc.dictionary_size == 2
    assert enc.pages == [h("01 00 01 00")]
    d = decode_plain(enc.dictionary, 2, lt)
    assert back_to_arrow(DICTIONARY.decode(h("01 00 01 00"), 3, lt, d), lt).to_pylist() == ["b", "a", "b"]


def test_rle_worked_example():
    """The example in rcfmt/encodings/rle.py's docstring, byte for byte."""
    assert "``02000000 03000000 01000000 07000000 09000000``" in rle.__doc__
    v, lt = values_of(pa.array([7, 7, 7, 9], pa.int32()))
    body = h("02000000 03000000 01000000 07000000 09000000")
    assert RLE.encode(v, lt) == body
    assert RLE.decode(body, 4, lt).values.tolist() == [7, 7, 7, 9]


def test_rle_runs_compare_bits():
    """NaN payloads and -0.0 are distinct run values (equality is bit equality)."""
    bits = [0x7FF8_0000_0000_0001, 0x7FF8_0000_0000_0001, 0x7FF8_0000_0000_0002, 0, 1 << 63, 1 << 63]
    v, lt = values_of(S.build_array(pa.float64(), bits))
    body = RLE.encode(v, lt)
    assert body[:4] == (4).to_bytes(4, "little")
    assert np.frombuffer(body, "<u4", count=4, offset=4).tolist() == [2, 1, 1, 2]
    assert RLE.decode(body, 6, lt).values.view("<u8").tolist() == bits


@pytest.mark.parametrize("size,width", [(1, 1), (256, 1), (257, 2), (65536, 2), (65537, 4)])
def test_dictionary_code_width(size, width):
    assert code_width(size) == width


def test_dictionary_code_layouts_in_pages():
    """257 distinct values need two-byte codes; the page says so in its first byte."""
    v, lt = values_of(pa.array(np.arange(257, dtype=np.int32)))
    enc = DICTIONARY.encode_chunk(v, lt, [0, 100, 257])
    assert [p[0] for p in enc.pages] == [2, 2]
    assert len(enc.pages[0]) == 1 + 2 * 100
    d = decode_plain(enc.dictionary, enc.dictionary_size, lt)
    got = np.concatenate([DICTIONARY.decode(p, n, lt, d).values for p, n in zip(enc.pages, [100, 157])])
    assert got.tolist() == list(range(257))


# ============================================================================ round trips
def _roundtrip(enc, values: ColumnValues, lt: LogicalType, bounds: list[int]) -> ColumnValues:
    chunk = enc.encode_chunk(values, lt, bounds)
    d = None
    if chunk.dictionary is not None:
        d = decode_plain(chunk.dictionary, chunk.dictionary_size, lt)
    parts = [enc.decode(body, b - a, lt, d) for body, a, b in zip(chunk.pages, bounds[:-1], bounds[1:])]
    for part, a, b in zip(parts, bounds[:-1], bounds[1:]):
        assert len(part) == b - a
    if not parts:
        return ColumnValues(np.empty(0, lt.numpy_dtype)) if lt.kind != PhysicalKind.VARBINARY else ColumnValues(
            np.empty(0, np.uint8), np.zeros(1, np.int64))
    if values.offsets is None:
        return ColumnValues(np.concatenate([p.values for p in parts]))
    datas, offsets, base = [], [0], 0
    for p in parts:
        o = p.offsets.astype(np.int64)
        datas.append(p.values[o[0]: o[-1]])
        offsets.extend((o[1:] - o[0] + base).tolist())
        base += int(o[-1] - o[0])
    return ColumnValues(np.concatenate(datas) if datas else np.empty(0, np.uint8), np.array(offsets, np.int64))


@settings(max_examples=S.examples(120))
@given(data=st.data())
def test_round_trip_every_type_every_core_encoding(data):
    arr = data.draw(S.arrays(S.primitive_types, st.integers(0, 80), nullable=False))
    values, lt = values_of(arr)
    enc = data.draw(st.sampled_from([e for e in CORE if e.supports(lt)]))
    n = len(arr)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, n - 1)), max_size=4)))) if n > 1 else []
    bounds = [0, *cuts, n] if n else [0]
    got = _roundtrip(enc, values, lt, bounds)
    if lt.kind == PhysicalKind.VARBINARY and not lt.large:
        got = ColumnValues(got.values, got.offsets.astype(np.int32))
    S.assert_arrays_identical(back_to_arrow(got, lt), arr, where=f"{enc.name} {arr.type}")


@settings(max_examples=S.examples(40))
@given(arr=S.arrays(S.primitive_types, st.integers(1, 60), nullable=True))
def test_round_trip_with_filled_null_slots(arr):
    """What the writer really hands to encoders: null slots filled (fixed) or left as is
    (variable-length). Non-null values must survive; the selector's estimate must be
    an upper bound of the real size for the encoding it picks."""
    lt = logical_type_from_arrow(arr.type)
    values, valid = from_arrow(arr, lt)
    values = fill_null_slots(values, valid)
    stats = compute_stats(values, valid, lt, 32)
    analysis = analyze(values, lt, stats)
    enc = choose(values, lt, analysis, candidates=CORE)
    got = _roundtrip(enc, values, lt, [0, len(arr)])
    expected = back_to_arrow(values, lt)
    if lt.kind == PhysicalKind.VARBINARY and not lt.large:
        got = ColumnValues(got.values, got.offsets.astype(np.int32))
    S.assert_arrays_identical(back_to_arrow(got, lt), expected, where=enc.name)
    real = sum(len(p) for p in enc.encode_chunk(values, lt, [0, len(arr)], analysis=analysis).pages)
    estimate = enc.estimate_size(values, lt, analysis)
    if enc is not DICTIONARY:  # DICTIONARY's estimate counts the dictionary page too
        assert estimate >= real - 1, (enc.name, estimate, real)


# ============================================================================ hostile bodies
@settings(max_examples=S.examples(300))
@given(t=S.primitive_types, body=st.binary(max_size=64), rows=st.integers(0, 40),
       dict_size=st.integers(0, 5), enc_index=st.integers(0, 2))
def test_decoders_reject_garbage_cleanly(t, body, rows, dict_size, enc_index):
    """Any body either decodes to exactly ``rows`` values or raises CorruptFileError."""
    lt = logical_type_from_arrow(t)
    enc = CORE[enc_index]
    if not enc.supports(lt):
        return
    d = None
    if enc is DICTIONARY:
        d, _ = from_arrow(S.example_table(dict_size, seed=1, nulls=False, types={"c": t}).column(0).chunk(0), lt)
    try:
        out = enc.decode(body, rows, lt, d)
    except CorruptFileError:
        return
    assert len(out) == rows
    if lt.kind == PhysicalKind.VARBINARY:
        o = out.offsets
        assert o[0] >= 0 and np.all(np.diff(o) >= 0) and o[-1] <= len(out.values)


@pytest.mark.parametrize("body,rows,match", [
    (b"", 1, "empty"),
    (b"\x03\x00", 1, "code layout 3"),
    (b"\x01\x00\x01", 3, "need 4 bytes"),
    (b"\x01\x05", 1, "code 5 out of range"),
    (b"\x02\x00\x01", 1, "out of range"),  # code 256 with two-byte layout
])
def test_dictionary_codes_are_checked(body, rows, match):
    with pytest.raises(CorruptFileError, match=match):
        decode_codes(body, rows, 3)


@pytest.mark.parametrize("body,rows,match", [
    (b"\x01\x00", 1, "too short"),
    (h("05000000 01000000"), 2, "claims 5 runs for 2 rows"),
    (h("00000000"), 3, "claims 0 runs for 3 rows"),
    (h("01000000 02000000 07000000"), 3, "do not add up"),
    (h("02000000 00000000 03000000 07000000 08000000"), 3, "do not add up"),  # zero-length run
    (h("01000000 03000000 0700"), 3, "PLAIN page holds 2 bytes"),  # run value truncated
])
def test_rle_bodies_are_checked(body, rows, match):
    with pytest.raises(CorruptFileError, match=match):
        RLE.decode(body, rows, LogicalType("int32"))


@pytest.mark.parametrize("body,rows,match", [
    (h("0000"), 1, "too short"),
    (h("01000000 01000000 61"), 1, r"invalid offsets \(entry 0\)"),
    (h("00000000 05000000 61"), 1, "invalid offsets"),
    (h("00000000 02000000 01000000 616263"), 2, "invalid offsets"),
    (h("00000000 ffffffff 61"), 1, "invalid offsets"),
])
def test_plain_varbinary_offsets_are_checked(body, rows, match):
    with pytest.raises(CorruptFileError, match=match):
        decode_plain(body, rows, LogicalType("string"))


def test_plain_fixed_and_bool_sizes_are_checked():
    with pytest.raises(CorruptFileError, match="PLAIN page holds 7 bytes"):
        decode_plain(b"\0" * 7, 1, LogicalType("int64"))
    with pytest.raises(CorruptFileError, match="bool page holds 2 bytes for 3 values"):
        decode_plain(b"\0\0", 3, LogicalType("bool"))


# ============================================================================ selector, asserted in the footer
def footer_encodings(tmp_path, table: pa.Table, **options) -> dict[str, list[int]]:
    path = tmp_path / "sel.rcfmt"
    # serial: the parallel writer is covered (in a subprocess) by test_roundtrip
    rcfmt.write_table(table, path, use_threads=False, **options)
    with rcfmt.open(path) as f:
        S.assert_tables_identical(f.read(), table)
        return {name: f.footer.chunks[c]["encoding"].tolist() for c, name in enumerate(f.schema.names)}


def test_selector_low_cardinality_strings_get_a_dictionary(tmp_path):
    rng = np.random.default_rng(1)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon"])
    table = pa.table({"s": words[rng.integers(0, 5, 20_000)], "b": pa.array(words[rng.integers(0, 5, 20_000)],
                                                                             pa.large_binary())})
    assert footer_encodings(tmp_path, table) == {"s": [DICTIONARY.id], "b": [DICTIONARY.id]}


def test_selector_long_runs_get_rle(tmp_path):
    n = 20_000
    runs = np.repeat(np.arange(10), n // 10)
    table = pa.table({
        "bool": pa.array(runs % 2 == 0),
        "i64": pa.array(runs * 1_000_003 - 7, pa.int64()),
        "dec": pa.array([None] * 0 + [int(x) for x in runs], pa.int64()).cast(pa.decimal128(20, 0)),
    })
    assert footer_encodings(tmp_path, table) == {"bool": [RLE.id], "i64": [RLE.id], "dec": [RLE.id]}


def test_selector_random_floats_stay_plain(tmp_path):
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 1 << 62, 20_000, dtype=np.int64).view(np.float64)  # finite, incompressible
    table = pa.table({"f64": bits, "f32": rng.integers(0, 1 << 30, 20_000, dtype=np.int32).view(np.float32)})
    assert footer_encodings(tmp_path, table) == {"f64": [PLAIN.id], "f32": [PLAIN.id]}


def test_selector_unique_strings_get_no_dictionary_and_dictionary_can_be_disabled(tmp_path):
    rng = np.random.default_rng(3)
    unique = [f"{x:x}" for x in rng.integers(0, 1 << 60, 5000)]
    few = ["a", "b"] * 2500
    enc = footer_encodings(tmp_path, pa.table({"u": unique}))
    assert enc["u"] != [DICTIONARY.id]  # PLAIN among the core encodings (newer ones may do better)
    enc = footer_encodings(tmp_path, pa.table({"few": few}), dictionary=False, compression="none")
    assert enc["few"] != [DICTIONARY.id]
    assert footer_encodings(tmp_path, pa.table({"few": few}))["few"] == [DICTIONARY.id]


def test_selector_decides_per_chunk(tmp_path):
    """Each block's chunk is chosen on its own data: runs, then random, then runs."""
    rng = np.random.default_rng(4)
    a = np.concatenate([np.zeros(4000), rng.integers(0, 1 << 62, 4000).view(np.float64), np.ones(4000)])
    enc = footer_encodings(tmp_path, pa.table({"f": a}), block_rows=4000)
    assert enc["f"] == [RLE.id, PLAIN.id, RLE.id]


@pytest.mark.parametrize("name,values,want", [
    ("runs", np.repeat(np.arange(5, dtype=np.int32), 2000), "rle"),
    ("few distinct, shuffled", np.random.default_rng(5).integers(0, 7, 10_000).astype(np.int64), "dictionary"),
    ("unique", np.random.default_rng(6).permutation(10_000).astype(np.int64) * 977, "plain"),
    ("constant", np.full(10_000, 42, np.int16), "rle"),
    ("bool noise", np.random.default_rng(7).random(10_000) < 0.5, "plain"),
])
def test_choose_among_core_encodings(name, values, want):
    """The selector alone, restricted to PLAIN/DICTIONARY/RLE (other encodings are
    tested in tests/encodings/)."""
    arr = pa.array(values)
    v, lt = values_of(arr)
    analysis = analyze(v, lt, compute_stats(v, None, lt, 32))
    assert choose(v, lt, analysis, candidates=CORE).name == want


def test_choose_requires_a_real_saving():
    """A candidate must beat PLAIN by at least 10% (MIN_SAVING) to be chosen."""
    def pick(values):
        v, lt = values_of(pa.array(values, pa.int64()))
        a = analyze(v, lt, compute_stats(v, None, lt, 32), dictionary=False)
        return choose(v, lt, a, candidates=CORE).name

    # 16 int64 = 128 bytes PLAIN. 9 runs: RLE 4 + 9 * 12 = 112 bytes (saves 12.5%): chosen.
    assert pick([0] * 8 + list(range(1, 9))) == "rle"
    # 10 runs: RLE 124 bytes is smaller, but saves only 3%: PLAIN it is.
    assert pick([0] * 7 + list(range(1, 10))) == "plain"


# ============================================================================ statistics
def _reference_bounds(arr: pa.Array, lt: LogicalType):
    """Brute force: (nulls, NaNs, min, max) of the non-null non-NaN values, as the
    stats domain holds them (bytes for strings, unscaled ints for decimals)."""
    if lt.name in ("date32", "timestamp"):
        arr = arr.view(pa.int32() if lt.name == "date32" else pa.int64())
    present = [v for v in arr.to_pylist() if v is not None]
    nans = sum(1 for v in present if isinstance(v, float) and v != v)
    ordered = [v for v in present if not (isinstance(v, float) and v != v)]
    if lt.kind == PhysicalKind.VARBINARY:
        ordered = [v.encode() if isinstance(v, str) else v for v in ordered]
    elif lt.name == "decimal128":
        ordered = [int(v.scaleb(lt.scale, decimal.Context(prec=100))) for v in ordered]
    return len(arr) - len(present), nans, (min(ordered) if ordered else None), (max(ordered) if ordered else None)


@settings(max_examples=S.examples(400))
@given(arr=S.arrays(S.primitive_types, size=st.integers(0, 300), sliced=False))
def test_compute_stats_matches_brute_force(arr):
    """Min/max/null/NaN counts of a chunk equal a brute-force scan (NaN skipped, -0.0 and
    +0.0 equal, strings with zero bytes and long shared prefixes, nulls)."""
    lt = logical_type_from_arrow(arr.type)
    values, valid = from_arrow(arr, lt)
    values = fill_null_slots(values, valid)
    stats = compute_stats(values, valid, lt, 1 << 20)  # no truncation
    nulls, nans, lo, hi = _reference_bounds(arr, lt)
    assert (stats.null_count, stats.nan_count) == (nulls, nans)
    if lo is None:
        assert stats.min is None and stats.max is None
        return
    got_lo, got_hi = stats.min, stats.max
    if lt.kind == PhysicalKind.VARBINARY:
        got_lo, got_hi = bytes(got_lo), bytes(got_hi)
    elif lt.kind != PhysicalKind.BOOL:
        got_lo, got_hi = got_lo.item() if hasattr(got_lo, "item") else got_lo, \
            got_hi.item() if hasattr(got_hi, "item") else got_hi
    assert got_lo == lo and got_hi == hi, (got_lo, lo, got_hi, hi)
    if lt.is_float:  # zero bounds are normalized: -0.0 as the min, +0.0 as the max
        assert not (got_lo == 0 and np.signbit(stats.min) is np.False_)
        assert not (got_hi == 0 and np.signbit(stats.max))


_SHORT_AND_SHARED = st.sampled_from([b"", b"\x00", b"a", b"a\x00", b"ab", b"abcdefg", b"abcdefgh", b"abcdefgh\x00",
                                     b"abcdefghi", b"\xff" * 3, b"\xff" * 9, b"p" * 30 + b"a", b"p" * 30 + b"b"])


@settings(max_examples=S.examples(300), deadline=None)
@given(items=st.lists(st.one_of(_SHORT_AND_SHARED, st.binary(max_size=12)), max_size=60),
       cuts=st.lists(st.integers(0, 60), max_size=5), large=st.booleans(), nulls=st.lists(st.booleans()))
def test_minmax_binary_per_range_matches_brute_force(items, cuts, large, nulls):
    """The native min/max of byte strings, per range of rows, against Python's bytes order:
    values of every length up to past 8 bytes (a prefix key decides, or lengths, or the
    bytes), the shortest ones at the very end of the data buffer, nulls skipped."""
    from rcfmt._native import stats as native_stats

    n = len(items)
    arr = pa.array(items, pa.large_binary() if large else pa.binary())
    offsets = np.frombuffer(arr.buffers()[1], np.int64 if large else np.int32, count=n + 1)
    data = np.frombuffer(arr.buffers()[2], np.uint8) if arr.buffers()[2] is not None else np.empty(0, np.uint8)
    valid = np.array([(nulls[i] if i < len(nulls) else True) for i in range(n)], bool)
    bounds = np.array(sorted({0, n, *(min(c, n) for c in cuts)}), np.int64)
    count, lo, hi = native_stats.minmax_binary(offsets, data, valid.view(np.uint8), bounds)
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        rows = [i for i in range(a, b) if valid[i]]
        assert count[k] == len(rows)
        if not rows:
            assert lo[k] == hi[k] == -1
            continue
        assert items[lo[k]] == min(items[i] for i in rows) and items[hi[k]] == max(items[i] for i in rows)
