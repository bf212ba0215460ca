"""Arrow types stored as another type (issue 36; docs/FORMAT.md section 3, "Arrow types
stored as another"): duration, date64, decimal32/64/256, null, halffloat,
fixed_size_binary and extension types (arrow.uuid, Python extension types) round-trip
exactly -- values, NULLs, the Arrow type -- through files, blocks, batches, scans,
datasets, nested fields, pandas and the CLI; filters on them are exact (checked against
pyarrow.compute, not rcfmt's oracle) and prune with statistics and page indexes."""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import struct
import subprocess
import sys
import uuid
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from extension_types import TaggedExtension, register
from rcfmt import col
from rcfmt.errors import CorruptFileError, FilterError, InvalidDataError, SchemaError, UnsupportedError

D = decimal.Decimal


@register
class Tagged(TaggedExtension):
    """A Python extension type with metadata."""

    NAME, DEFAULT_TAG = "rcfmt.test.tagged", "x"

    def __init__(self, tag: str = "x", storage: pa.DataType = pa.int64()):  # (tag first, as these tests write it)
        super().__init__(storage, tag)

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls(serialized.decode(), storage_type)

#: every type of the issue, by a short name
TYPES = {
    "dur_s": pa.duration("s"), "dur_ms": pa.duration("ms"), "dur_us": pa.duration("us"), "dur_ns": pa.duration("ns"),
    "date64": pa.date64(),
    "dec32": pa.decimal32(9, 2), "dec64": pa.decimal64(18, 4), "dec64_neg": pa.decimal64(5, -2),
    "dec256": pa.decimal256(60, 3), "dec256_small": pa.decimal256(5, 0),
    "null": pa.null(), "f16": pa.float16(),
    "fsb3": pa.binary(3), "fsb0": pa.binary(0), "uuid": pa.uuid(), "tagged": Tagged("meta\x00data"),
}
ORDERED = ["dur_s", "dur_ms", "dur_us", "dur_ns", "date64", "dec32", "dec64", "dec64_neg", "dec256", "dec256_small",
           "f16", "fsb3", "uuid", "tagged"]


def _ints(t: pa.DataType) -> tuple[int, int]:
    """The range of the integers a column of ``t`` is generated from."""
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    if pa.types.is_decimal(t):
        return -(10**min(t.precision, 30) - 1), 10**min(t.precision, 30) - 1
    if pa.types.is_date64(t):
        return -700_000, 700_000  # days (years 54 to 3886: Python's dates hold the literals)
    if pa.types.is_fixed_size_binary(t):
        return 0, 2**(8 * t.byte_width) - 1
    return -2**62, 2**62


def column(t: pa.DataType, ints, valid=None) -> pa.Array:
    """An array of type ``t`` from Python ints (their meaning per type; NULL where
    ``valid`` is False)."""
    ints = [int(v) for v in ints]
    mask = None if valid is None else ~np.asarray(valid, bool)
    n = len(ints)
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, column(t.storage_type, ints, valid))
    if pa.types.is_null(t):
        return pa.nulls(n)
    if pa.types.is_duration(t):
        return pa.array(ints, pa.int64(), mask=mask).view(t)
    if pa.types.is_date64(t):
        return pa.array([v * 86_400_000 for v in ints], pa.int64(), mask=mask).view(t)
    if pa.types.is_int64(t):
        return pa.array(ints, pa.int64(), mask=mask)
    if pa.types.is_decimal(t):
        w = t.bit_width // 8
        raw = b"".join(v.to_bytes(w, "little", signed=True) for v in ints)
        if mask is None or not mask.any():
            return pa.Array.from_buffers(t, n, [None, pa.py_buffer(raw)])
        bits = pa.py_buffer(np.packbits(~mask, bitorder="little"))
        return pa.Array.from_buffers(t, n, [bits, pa.py_buffer(raw)], int(mask.sum()))
    if pa.types.is_float16(t):
        with np.errstate(over="ignore"):
            return pa.array(np.array(ints, np.float64).astype(np.float16), mask=mask)
    if pa.types.is_fixed_size_binary(t):
        w = t.byte_width
        return pa.array([v.to_bytes(w, "big") if w else b"" for v in ints], t, mask=mask)
    raise AssertionError(t)


def sample(t: pa.DataType, n: int, seed: int = 0, nulls: float = 0.2) -> pa.Array:
    rng = np.random.default_rng(seed)
    lo, hi = _ints(t)
    ints = [int(v) for v in rng.integers(0, 2**62, n)]
    ints = [lo + v % (hi - lo + 1) for v in ints]
    valid = rng.random(n) >= nulls
    arr = column(t, ints, valid)
    if pa.types.is_float16(t) and n >= 4:  # NaN, -0.0, infinities
        bits = np.frombuffer(arr.buffers()[1], np.uint16, count=n).copy()
        bits[:4] = [0x7E00, 0x8000, 0x7C00, 0xFD01]  # NaN, -0.0, +inf, a negative NaN with a payload
        arr = pa.Array.from_buffers(t, n, [arr.buffers()[0], pa.py_buffer(bits)], arr.null_count)
    return arr


def table_of(*names, n=3000, seed=0, nulls=0.2) -> pa.Table:
    return pa.table({k: sample(TYPES[k], n, seed + i, nulls) for i, k in enumerate(names)})


# ------------------------------------------------------------------ round trips
@pytest.mark.parametrize("name", list(TYPES))
def test_round_trip_exact(tmp_path, name):
    t = table_of(name, n=5000)
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(t, path, block_rows=1000, page_rows=300)
    S.assert_tables_identical(rcfmt.read_table(path), t)
    with rcfmt.open(path) as f:
        assert f.schema == t.schema
        assert f.num_blocks == 5
        S.assert_tables_identical(f.read_block(2), t.slice(2000, 1000))
        batches = list(f.iter_batches(batch_size=700))
        S.assert_tables_identical(pa.Table.from_batches(batches, t.schema), t)


@pytest.mark.parametrize("name", list(TYPES))
def test_empty_and_all_null_blocks(tmp_path, name):
    t = TYPES[name]
    empty = pa.table({"x": column(t, [])})
    rcfmt.write_table(empty, tmp_path / "e.rcfmt")
    S.assert_tables_identical(rcfmt.read_table(tmp_path / "e.rcfmt"), empty)
    nulls = pa.table({"x": sample(t, 500, nulls=1.0)})
    mixed = pa.concat_tables([nulls, pa.table({"x": sample(t, 500, seed=3)})])
    with rcfmt.Writer(tmp_path / "m.rcfmt", mixed.schema, block_rows=500) as w:
        w.write(mixed)
        w.write(empty)
    S.assert_tables_identical(rcfmt.read_table(tmp_path / "m.rcfmt"), mixed)
    with rcfmt.open(tmp_path / "m.rcfmt") as f:
        st0 = f.block_stats("x")
        assert st0.null_count[0] == 500 and not st0.has_min_max[0]
    hit = rcfmt.read_table(tmp_path / "m.rcfmt", filter=col("x").is_valid())
    S.assert_tables_identical(hit, mixed.filter(pc.is_valid(mixed["x"])))


def test_all_types_in_one_file_with_dictionary_input(tmp_path):
    t = table_of(*TYPES, n=2000)
    i = t.schema.get_field_index("dur_ms")
    dictionary = t.set_column(i, "dur_ms", t["dur_ms"].dictionary_encode())
    assert pa.types.is_dictionary(dictionary.schema.field(i).type)
    rcfmt.write_table(dictionary, tmp_path / "a.rcfmt", block_rows=512)
    S.assert_tables_identical(rcfmt.read_table(tmp_path / "a.rcfmt"), t)
    for enc in ("plain", "dictionary"):
        rcfmt.write_table(t, tmp_path / f"{enc}.rcfmt", encoding=enc if enc == "plain" else None,
                          compression="none", bitmap_indexes=None)
        S.assert_tables_identical(rcfmt.read_table(tmp_path / f"{enc}.rcfmt"), t)


def test_float16_bits_exact(tmp_path):
    bits = np.array([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFDFF, 0x0001, 0x83FF, 0x7BFF, 0x3C00],
                    np.uint16)
    arr = pa.Array.from_buffers(pa.float16(), len(bits), [None, pa.py_buffer(bits)])
    t = pa.table({"h": arr})
    for enc in (None, "plain", "dictionary", "rle"):
        rcfmt.write_table(t, tmp_path / "h.rcfmt", encoding=enc)
        back = rcfmt.read_table(tmp_path / "h.rcfmt")["h"].chunk(0)
        assert back.type == pa.float16()
        assert np.array_equal(np.frombuffer(back.buffers()[1], np.uint16, count=len(bits)), bits)
    with rcfmt.open(tmp_path / "h.rcfmt") as f:
        s = f.block_stats("h")
        assert s.nan_count[0] == 3  # 0x7E00, 0x7C01 (signalling), 0xFDFF
        assert float(s.min[0]) == -np.inf and float(s.max[0]) == np.inf


def test_extension_name_and_metadata_kept(tmp_path):
    t = pa.table({"tag": column(Tagged("a\x01b"), [1, 2, 3], [True, False, True]),
                  "u": column(pa.uuid(), [1, 2, 3])})
    rcfmt.write_table(t, tmp_path / "e.rcfmt")
    back = rcfmt.read_table(tmp_path / "e.rcfmt")
    assert back.schema.field("tag").type == Tagged("a\x01b")
    assert back.schema.field("tag").type.tag == "a\x01b"
    S.assert_tables_identical(back, t)
    js = pa.table({"j": pa.ExtensionArray.from_storage(pa.json_(), pa.array(['{"a": 1}', None, "[]"]))})
    rcfmt.write_table(js, tmp_path / "j.rcfmt")
    assert rcfmt.read_table(tmp_path / "j.rcfmt").equals(js)


def test_unregistered_extension_reads_back_in_another_process_as_its_storage(tmp_path):
    class Local(pa.ExtensionType):  # never registered
        def __init__(self):
            super().__init__(pa.int32(), "rcfmt.test.local")

        def __arrow_ext_serialize__(self):
            return b"m"

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type, serialized):
            return cls()

    t = pa.table({"x": pa.ExtensionArray.from_storage(Local(), pa.array([1, None, 3], pa.int32()))})
    path = tmp_path / "l.rcfmt"
    rcfmt.write_table(t, path)
    assert rcfmt.read_table(path).equals(t)  # the same process has seen the type
    code = f"import rcfmt; print(rcfmt.read_table({str(path)!r}).schema.field('x').type)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "int32"


def test_what_no_arrow_format_carries_is_refused_by_name(tmp_path):
    """An extension of an extension type (Arrow's IPC format, C data interface and
    schemas carry one name per field) is refused by name, flat or nested; extensions over
    dictionaries and run_end_encoded nested values are stored (tests/schema/test_last_shapes.py)."""
    with pytest.raises(SchemaError, match="rcfmt.test.tagged.*an extension of extension"):
        rcfmt.Writer(tmp_path / "t.rcfmt", pa.schema([("t", Tagged("d", Tagged("e", pa.int8())))]))
    with pytest.raises(SchemaError, match="'n'.*an extension of an extension type"):
        rcfmt.Writer(tmp_path / "t.rcfmt", pa.schema([("n", Tagged("d", Tagged("e", pa.struct([("a", pa.int8())]))))]))
    assert not list(tmp_path.iterdir())


TIMES = {"t32s": pa.time32("s"), "t32ms": pa.time32("ms"), "t64us": pa.time64("us"), "t64ns": pa.time64("ns")}
_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}


def _times(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    cols = {"id": pa.array(np.arange(n), pa.int64())}
    for name, t in TIMES.items():
        per_day = _PER_DAY[t.unit]
        v = np.sort(rng.integers(0, per_day, n)) if name == "t32s" else rng.integers(0, per_day, n)
        v[:2] = [0, per_day - 1]
        storage = pa.array(v, pa.int32() if t.bit_width == 32 else pa.int64(), mask=rng.random(n) < 0.15)
        cols[name] = storage.view(t)
    return pa.table(cols)


def test_times_round_trip_filter_and_prune(tmp_path):
    """time32[s|ms] and time64[us|ns]: stored as their int32/int64 units since midnight
    (FORMAT.md 3.1), read back as themselves; comparisons with datetime.time or ints of
    the unit agree with pyarrow.compute, NOT keeps NULL rows out, sorted times prune."""
    table = _times(3000, 5)
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=500, page_rows=100)
    assert rcfmt.read_table(path).equals(table)
    with rcfmt.open(path) as f:
        assert pa.Table.from_batches(list(f.iter_batches(batch_size=70))).equals(table)
    for name, t in TIMES.items():
        for lit in (dt.time(12, 0), dt.time(0, 0), dt.time(23, 59, 59, 999999), dt.time(6, 30, 0, 1)):
            scalar = pa.scalar(lit, t) if t.unit in ("us", "ns") or lit.microsecond % 1000 == 0 else None
            for op, f in (("<", pc.less), (">=", pc.greater_equal), ("==", pc.equal)):
                expr = {"<": col(name) < lit, ">=": col(name) >= lit, "==": col(name) == lit}[op]
                got = rcfmt.read_table(path, filter=expr)["id"].to_pylist()
                notgot = rcfmt.read_table(path, filter=~expr)["id"].to_pylist()
                if scalar is not None and (t.unit != "s" or lit.microsecond == 0):
                    want = table.filter(f(table[name], scalar))["id"].to_pylist()
                    assert got == want, (name, op, lit)
                valid = table.filter(pc.is_valid(table[name]))["id"].to_pylist()
                assert sorted(got + notgot) == valid, (name, op, lit)  # NOT: every non-NULL row once
        ints = rcfmt.read_table(path, filter=col(name) <= 1000)["id"].to_pylist()
        assert ints == table.filter(pc.less_equal(table[name].cast(pa.int64() if t.bit_width == 64 else pa.int32()),
                                                  1000))["id"].to_pylist()
    with rcfmt.open(path) as f:
        scan = f.scan(filter=col("t32s") < dt.time(1, 0))
        assert scan.read()["id"].to_pylist() == table.filter(
            pc.less(table["t32s"], pa.scalar(dt.time(1, 0), pa.time32("s"))))["id"].to_pylist()
        assert scan.stats.blocks_pruned_stats >= 4  # sorted: most blocks lie after 01:00
    with pytest.raises(FilterError, match="time zone"):
        rcfmt.read_table(path, filter=col("t64us") < dt.time(1, tzinfo=dt.timezone.utc))
    ds = tmp_path / "ds"
    rcfmt.write_dataset(table, ds)
    rcfmt.write_dataset(table.slice(0, 10), ds, mode="append")
    assert rcfmt.dataset(ds).read(filter=col("t64ns") >= dt.time(12)).num_rows == \
        pc.sum(pc.greater_equal(pa.concat_arrays([table["t64ns"].combine_chunks(), table["t64ns"][:10].combine_chunks()]),
                                pa.scalar(dt.time(12), pa.time64("ns")))).as_py()


def test_times_outside_a_day_are_refused_on_write_and_read(tmp_path, monkeypatch):
    from rcfmt.schema import annotated
    from rcfmt.file.writer import Writer

    bad = pa.array([5, 86_400, None], pa.int32()).view(pa.time32("s"))
    with pytest.raises(InvalidDataError, match="not a time of day") as info:
        rcfmt.write_table(pa.table({"t": bad}), tmp_path / "t.rcfmt")
    assert (info.value.column, info.value.row) == ("t", 1) and not (tmp_path / "t.rcfmt").exists()
    monkeypatch.setattr(Writer, "_check_values", False)
    monkeypatch.setattr(annotated, "_check_time_of_day", lambda arr, ltype, error=None: None)
    rcfmt.write_table(pa.table({"t": bad}), tmp_path / "t.rcfmt")
    monkeypatch.undo()
    with pytest.raises(CorruptFileError, match="not a time of day"):
        rcfmt.read_table(tmp_path / "t.rcfmt")


# ------------------------------------------------------------------ nested
def test_nested_new_types(tmp_path):
    t = pa.table({
        "l": pa.array([[None, None], None, [], [None]], pa.list_(pa.null())),
        "s": pa.array([{"a": dt.timedelta(days=1), "b": b"ab", "c": D("1.5")}, None, {"a": None, "b": None, "c": None},
                       {"a": dt.timedelta(microseconds=-1), "b": b"zz", "c": D("-99999999999999999999999999.5")}],
                      pa.struct([("a", pa.duration("us")), ("b", pa.binary(2)), ("c", pa.decimal256(40, 1))])),
        "m": pa.array([[("k", None)], None, [], [("j", None), ("i", None)]], pa.map_(pa.string(), pa.null())),
        "lu": pa.array([[uuid.UUID(int=1).bytes], None, [None], []], pa.list_(pa.binary(16))),
        "fl": pa.array([[1.5, None], None, [np.nan, -0.0], [None, None]], pa.list_(pa.float16(), 2)),
        "ld": pa.array([[dt.date(2020, 1, 1)], [], None, [None]], pa.list_(pa.date64())),
    })
    path = tmp_path / "n.rcfmt"
    rcfmt.write_table(t, path)
    back = rcfmt.read_table(path)
    assert back.schema == t.schema
    for name in ("l", "s", "m", "lu", "ld"):
        assert back[name].equals(t[name]), name
    fl = back["fl"].combine_chunks()
    assert fl.type == t["fl"].type and fl.is_null().to_pylist() == [False, True, False, False]
    S.assert_arrays_identical(fl.values.slice(0, 8), t["fl"].chunk(0).values)  # (a NULL list's slots too)
    assert rcfmt.read_table(path, filter=col("s.a") > dt.timedelta(hours=1))["s"].to_pylist() == [t["s"][0].as_py()]
    assert rcfmt.read_table(path, filter=col("s.c") < 0).num_rows == 1
    assert rcfmt.read_table(path, filter=rcfmt.list_contains(col("ld"), dt.date(2020, 1, 1))).num_rows == 1
    with pytest.raises(FilterError, match="bytes"):  # (binary(16), not arrow.uuid)
        rcfmt.read_table(path, filter=rcfmt.list_contains(col("lu"), uuid.UUID(int=1)))
    assert rcfmt.read_table(path, filter=rcfmt.list_contains(col("lu"), uuid.UUID(int=1).bytes)).num_rows == 1


def test_list_of_dictionary_is_stored_as_its_values(tmp_path):
    arr = pa.array([["a", "b"], None, ["a"]], pa.list_(pa.dictionary(pa.int8(), pa.string())))
    rcfmt.write_table(pa.table({"l": arr}), tmp_path / "d.rcfmt")
    back = rcfmt.read_table(tmp_path / "d.rcfmt")["l"]
    assert back.type == pa.list_(pa.string())
    assert back.to_pylist() == arr.to_pylist()


def _view_dictionary(indices, values, view, index=pa.int32()):
    return pa.DictionaryArray.from_arrays(pa.array(indices, index), pa.array(values, view))


def test_dictionaries_of_views_are_stored_as_their_values(tmp_path):
    """Dictionary arrays whose values are string or binary views (what Polars exports for
    Categorical and Enum columns) are stored as their values, at the top and inside
    structs, lists and maps, in chunks of different dictionaries, NULLs in the indices and
    in the dictionary, sliced; a filter and ``read_dictionary`` see the values; an index
    outside its dictionary is an InvalidDataError naming the row."""
    sv, bv = pa.string_view(), pa.binary_view()
    top = pa.chunked_array([_view_dictionary([0, 2, None], ["x", "y", None], sv),
                            _view_dictionary([1, 1, 0], ["zz", "w"], sv).slice(1)])
    binary = pa.chunked_array([_view_dictionary([0, None, 1, 0, 1], [b"a\x00", b""], bv, pa.int8())])
    inner = _view_dictionary([2, 0, None, 1, 0], ["p", "q", "r"], sv)
    struct = pa.StructArray.from_arrays([inner], names=["c"])
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 2, 5], pa.int32()), inner)
    maps = pa.MapArray.from_arrays(pa.array([0, 1, 3, 5], pa.int32()), pa.array(["a", "b", "c", "d", "e"]), inner)
    t = pa.table({"k": pa.array(np.arange(5)), "top": top, "bin": binary, "s": pa.chunked_array([struct]),
                  "l": pa.chunked_array([pa.concat_arrays([lists, lists.slice(0, 2)])]),
                  "m": pa.chunked_array([pa.concat_arrays([maps, maps.slice(0, 2)])])})
    path = tmp_path / "views.rcfmt"
    rcfmt.write_table(t, path, block_rows=3)
    back = rcfmt.read_table(path)
    assert back.schema.field("top").type == pa.string() and back.schema.field("bin").type == pa.binary()
    assert back.schema.field("s").type == pa.struct([("c", pa.string())])
    for name in t.column_names:
        assert back[name].to_pylist() == t[name].to_pylist(), name
    assert rcfmt.read_table(path, filter=col("top") == "zz")["k"].to_pylist() == [4]
    assert rcfmt.read_table(path, filter=col("s.c") == "p")["k"].to_pylist() == [1, 4]
    coded = rcfmt.read_table(path, columns=["top"], read_dictionary=["top"])["top"]
    assert pa.types.is_dictionary(coded.type) and coded.to_pylist() == t["top"].to_pylist()
    bad = pa.DictionaryArray.from_arrays(pa.array([0, 5, 1], pa.int32()), pa.array(["x", "y"], sv), safe=False)
    with pytest.raises(InvalidDataError) as info:
        rcfmt.write_table(pa.table({"c": bad}), tmp_path / "bad.rcfmt")
    assert info.value.column == "c" and info.value.row == 1
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"cat": pl.Series(["x", "y", None, "x"], dtype=pl.Categorical),
                          "enum": pl.Series(["b", "a", "b", None], dtype=pl.Enum(["a", "b"]))})
    rcfmt.write_table(frame, tmp_path / "polars.rcfmt")
    assert rcfmt.read_table(tmp_path / "polars.rcfmt").to_pydict() == {"cat": ["x", "y", None, "x"],
                                                                      "enum": ["b", "a", "b", None]}


# ------------------------------------------------------------------ filters against pyarrow.compute
def _comparable(arr: pa.ChunkedArray | pa.Array) -> pa.Array:
    """``arr`` in a form pyarrow.compute orders (its kernels lack decimal32/64 and
    halffloat comparisons): decimal128, float32, binary, int64."""
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    t = arr.type
    if isinstance(t, pa.BaseExtensionType):
        arr, t = arr.storage, t.storage_type
    if pa.types.is_decimal32(t) or pa.types.is_decimal64(t):
        return arr.cast(pa.decimal128(38, t.scale))
    if pa.types.is_float16(t):
        return pa.array(np.frombuffer(arr.buffers()[1], np.float16, count=arr.offset + len(arr))[arr.offset:]
                        .astype(np.float32), mask=arr.is_null().to_numpy(zero_copy_only=False))
    if pa.types.is_fixed_size_binary(t):
        return arr.cast(pa.binary())
    return arr


def _literal_scalar(t: pa.DataType, v):
    """The pyarrow scalar of literal ``v`` for comparing :func:`_comparable` arrays."""
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    if pa.types.is_decimal32(t) or pa.types.is_decimal64(t):
        return pa.scalar(v, pa.decimal128(38, t.scale))
    if pa.types.is_float16(t):
        return pa.scalar(float(v), pa.float32())
    if pa.types.is_fixed_size_binary(t):
        return pa.scalar(bytes(v.bytes if isinstance(v, uuid.UUID) else v), pa.binary())
    return pa.scalar(v, t)


_PC = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}


def _expr(name, op, v):
    c = col(name)
    return {"==": c == v, "!=": c != v, "<": c < v, "<=": c <= v, ">": c > v, ">=": c >= v}[op]


def _literals(t: pa.DataType, arr: pa.Array) -> list:
    """Literals of the kinds users pass: a value of the column, in Python form, and
    ones between values."""
    v = arr.drop_null()[len(arr.drop_null()) // 2]
    if isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid":
        return [v.as_py(), uuid.UUID(int=2**127)]
    if isinstance(t, Tagged):
        return [v.storage.as_py() if hasattr(v, "storage") else v.value.as_py(), 0]
    if pa.types.is_duration(t):
        n = v.cast(pa.int64()).as_py()
        out = [n, np.timedelta64(n, t.unit), np.timedelta64(1, "D")]
        if t.unit in ("s", "ms", "us") and abs(n) < 10**15:
            out.append(v.as_py())
        return out + [dt.timedelta(seconds=-1.5)]
    if pa.types.is_date64(t):
        return [v.as_py(), dt.datetime(1970, 3, 1, 12), np.datetime64("1969-07-20")]
    if pa.types.is_decimal(t):
        d = v.as_py()
        return [d, d + D(1).scaleb(-t.scale - 1) if t.scale >= 0 else d + 1, 0, D("-1.5")]
    if pa.types.is_float16(t):
        return [float(v.as_py()), 0.1, -0.0, 1e6]
    if pa.types.is_fixed_size_binary(t):
        b = v.as_py()
        return [b, b[:1], b + b"\x00"]
    raise AssertionError(t)


def _oracle_rows(t: pa.Table, name: str, op: str, lit) -> pa.Table:
    ty = t.schema.field(name).type
    if isinstance(lit, np.timedelta64):
        lit = pa.scalar(int(lit.astype(f"timedelta64[{ty.unit}]").astype(np.int64)), ty) \
            if (np.timedelta64(1, ty.unit) <= np.timedelta64(1, np.datetime_data(lit.dtype)[0])) else None
    if isinstance(lit, dt.datetime) and pa.types.is_date64(ty):
        lit = pa.scalar(int((lit - dt.datetime(1970, 1, 1)) / dt.timedelta(milliseconds=1)), pa.int64()).cast(ty)
    if isinstance(lit, np.datetime64):
        lit = pa.scalar(int(lit.astype("datetime64[ms]").astype(np.int64)), pa.int64()).cast(ty)
    if isinstance(ty, Tagged):
        return t.filter(_PC[op](t[name].combine_chunks().storage, pa.scalar(lit, pa.int64())))
    if pa.types.is_decimal(ty):  # exact, in Python (pyarrow rescales literals only where no digit is lost)
        want = D(str(lit)) if isinstance(lit, float) else D(lit)
        cmp = {"==": D.__eq__, "!=": D.__ne__, "<": D.__lt__, "<=": D.__le__, ">": D.__gt__, ">=": D.__ge__}[op]
        keep = [v is not None and cmp(v, want) for v in t[name].to_pylist()]
        return t.filter(pa.array(keep, pa.bool_()))
    scalar = lit if isinstance(lit, pa.Scalar) else _literal_scalar(ty, lit)
    return t.filter(_PC[op](_comparable(t[name]), scalar))


@pytest.mark.parametrize("name", ORDERED)
def test_comparisons_match_pyarrow_compute(tmp_path, name):
    t = table_of(name, n=4000, seed=7)
    path = tmp_path / "c.rcfmt"
    rcfmt.write_table(t, path, block_rows=1000, page_rows=250)
    for lit in _literals(t.schema.field(name).type, t[name].combine_chunks()):
        for op in _PC:
            want = _oracle_rows(t, name, op, lit)
            got = rcfmt.read_table(path, filter=_expr(name, op, lit))
            S.assert_tables_identical(got, want)
    lits = _literals(t.schema.field(name).type, t[name].combine_chunks())
    lits = [lits[0], lits[-1]]
    got = rcfmt.read_table(path, filter=col(name).isin(lits))
    want = _oracle_rows(t, name, "==", lits[0])
    other = _oracle_rows(t, name, "==", lits[1])
    assert got.num_rows == want.num_rows + other.num_rows


def test_is_null_and_nan_filters(tmp_path):
    t = table_of("null", "f16", n=2000)
    rcfmt.write_table(t, tmp_path / "n.rcfmt", block_rows=500)
    assert rcfmt.read_table(tmp_path / "n.rcfmt", filter=col("null").is_null()).num_rows == 2000
    assert rcfmt.read_table(tmp_path / "n.rcfmt", filter=col("null").is_valid()).num_rows == 0
    with rcfmt.open(tmp_path / "n.rcfmt") as f:
        sc = f.scan(filter=col("null").is_valid())
        assert sc.read().num_rows == 0 and sc.stats.blocks_pruned_stats == 4
    nan = rcfmt.read_table(tmp_path / "n.rcfmt", filter=col("f16").is_nan())
    f16 = t["f16"].combine_chunks()
    values = np.frombuffer(f16.buffers()[1], np.float16, count=len(f16))
    assert nan.num_rows == int((np.isnan(values) & f16.is_valid().to_numpy(zero_copy_only=False)).sum()) > 0
    with pytest.raises(FilterError, match="null"):
        rcfmt.read_table(tmp_path / "n.rcfmt", filter=col("null") == 1)


def test_literal_conversion_rules(tmp_path):
    t = pa.table({"d": pa.array([0, 1, 1500, 10**9, None], pa.int64()).view(pa.duration("ns")),
                  "dec": column(pa.decimal256(40, 2), [150, -25, 0, 10**39, 5], [True] * 5),
                  "fsb": column(pa.binary(2), [1, 2, 3, 4, 5], [True] * 5)})
    path = tmp_path / "l.rcfmt"
    rcfmt.write_table(t, path)
    import pandas as pd

    def rows(f):
        return rcfmt.read_table(path, filter=f).num_rows

    assert rows(col("d") == pd.Timedelta(nanoseconds=1500)) == 1  # nanoseconds kept
    assert rows(col("d") == dt.timedelta(seconds=1)) == 1
    assert rows(col("d") < np.timedelta64(2, "us")) == 3
    assert rows(col("d") == pa.scalar(1500, pa.duration("ns"))) == 1
    with pytest.raises(FilterError, match="timedelta"):
        rows(col("d") > 0.5)  # (as timestamps take no float)
    assert rows(col("d").isin([np.timedelta64(1, "s"), 1])) == 2
    assert rows(col("dec") == D("1.50")) == 1 and rows(col("dec") == 1.5) == 1
    assert rows(col("dec") >= D("1.495")) == 2
    assert rows(col("dec") < D("-1e60")) == 0 and rows(col("dec") > D("-1e60")) == 5
    assert rows(col("dec").isin([D("-0.25"), D("0.001")])) == 1
    assert rows(col("fsb") >= b"\x00\x03") == 3
    with pytest.raises(FilterError, match="timedelta"):
        rows(col("d") == "1s")
    with pytest.raises(FilterError, match="month"):
        rows(col("d") == np.timedelta64(1, "M"))
    with pytest.raises(FilterError):
        rows(col("dec").startswith(b"\x80"))
    with pytest.raises(FilterError):
        rows(col("fsb") == "ab")
    assert rows(col("fsb").startswith(b"\x00")) == 5


# ------------------------------------------------------------------ skipping
@pytest.mark.parametrize("name", ORDERED)
def test_sorted_columns_prune_blocks_and_pages(tmp_path, name):
    ty = TYPES[name]
    lo, hi = _ints(ty)
    n = 20_000
    ints = np.linspace(max(lo, -10**9), min(hi, 10**9) if hi > 10**9 else hi, n).astype(np.int64)
    if pa.types.is_float16(ty):
        ints = np.linspace(-60000, 60000, n).astype(np.int64)
    t = pa.table({"x": column(ty, sorted(ints))})
    path = tmp_path / "s.rcfmt"
    rcfmt.write_table(t, path, block_rows=2000, page_rows=200, bitmap_indexes=None)
    mid = t["x"].combine_chunks()[n // 2 + 37]
    lit = mid.as_py() if not isinstance(ty, Tagged) else mid.storage.as_py() if hasattr(mid, "storage") \
        else mid.value.as_py()
    if pa.types.is_duration(ty):
        lit = np.timedelta64(mid.cast(pa.int64()).as_py(), ty.unit)
    with rcfmt.open(path) as f:
        sc = f.scan(filter=col("x") == lit)
        got = sc.read()
        assert got.num_rows >= 1
        assert sc.stats.blocks_pruned_stats >= 8, sc.stats
        assert sc.stats.pages_read < 10, sc.stats
        sc = f.scan(filter=col("x") < lit)
        assert sc.read().num_rows == _oracle_rows(t, "x", "<", lit).num_rows
        assert sc.stats.blocks_pruned_stats >= 4, sc.stats


def test_bloom_and_bitmap_indexes_on_new_types(tmp_path):
    n = 8000
    rng = np.random.default_rng(5)
    t = pa.table({"u": column(pa.uuid(), rng.integers(0, 2**62, n)),
                  "d": column(pa.duration("ms"), rng.integers(0, 8, n)),
                  "dec": column(pa.decimal256(50, 1), rng.integers(0, 6, n))})
    path = tmp_path / "b.rcfmt"
    rcfmt.write_table(t, path, block_rows=2000, bloom_filter_columns=["u"],
                      bitmap_indexes={"d": "equality", "dec": "range"})
    probe = uuid.UUID(bytes=t["u"].combine_chunks().storage[123].as_py())
    with rcfmt.open(path) as f:
        sc = f.scan(filter=col("u") == probe)
        assert sc.read().num_rows == 1
        assert sc.stats.blocks_pruned_bloom >= 2, sc.stats
        sc = f.scan(filter=(col("d") == dt.timedelta(milliseconds=3)) & (col("dec") <= D("0.2")))
        got = sc.read()
        want = t.filter(pc.and_(pc.equal(t["d"], pa.scalar(3, pa.duration("ms"))),
                                pc.less_equal(t["dec"], pa.scalar(D("0.2"), pa.decimal256(50, 1)))))
        S.assert_tables_identical(got, want)
        assert sc.stats.rows_selected_index == want.num_rows, sc.stats


# ------------------------------------------------------------------ hypothesis
NEW_TYPE_STRATEGY = st.sampled_from(list(TYPES))


@settings(max_examples=S.examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(name=NEW_TYPE_STRATEGY, n=st.integers(0, 300), seed=st.integers(0, 2**16), nulls=st.sampled_from([0, .3, 1]),
       block_rows=st.integers(1, 128), op=st.sampled_from(list(_PC)), data=st.data())
def test_hypothesis_round_trip_and_filters(tmp_path_factory, name, n, seed, nulls, block_rows, op, data):
    t = table_of(name, n=n, seed=seed, nulls=nulls)
    path = tmp_path_factory.mktemp("h") / "h.rcfmt"
    rcfmt.write_table(t, path, block_rows=block_rows, page_rows=max(1, block_rows // 3))
    S.assert_tables_identical(rcfmt.read_table(path), t)
    if name == "null" or n == 0 or t[name].null_count == n:
        return
    lit = data.draw(st.sampled_from(_literals(t.schema.field(name).type, t[name].combine_chunks())))
    S.assert_tables_identical(rcfmt.read_table(path, filter=_expr(name, op, lit)), _oracle_rows(t, name, op, lit))


# ------------------------------------------------------------------ datasets, pandas, CLI
def test_datasets(tmp_path):
    t = table_of(*TYPES, n=3000, seed=11)
    t = t.append_column("i", pa.array(np.arange(3000)))
    rcfmt.write_dataset(t.slice(0, 1500), tmp_path / "ds", target_file_rows=500)
    rcfmt.write_dataset(t.slice(1500), tmp_path / "ds", target_file_rows=500, mode="append")
    ds = rcfmt.dataset(tmp_path / "ds")
    assert ds.schema == t.schema and len(ds.files) == 6
    S.assert_tables_identical(ds.to_table().sort_by("i"), t)
    for name in ("dur_ns", "date64", "dec32", "dec256", "f16", "fsb3", "uuid", "tagged"):
        lit = _literals(t.schema.field(name).type, t[name].combine_chunks())[0]
        got = ds.to_table(filter=col(name) >= lit).sort_by("i")
        S.assert_tables_identical(got, _oracle_rows(t, name, ">=", lit))
    # file pruning by the index's statistics of a sorted duration column
    rcfmt.write_dataset(pa.table({"d": column(pa.duration("s"), np.arange(3000))}), tmp_path / "ds2",
                        target_file_rows=300)
    sc = rcfmt.dataset(tmp_path / "ds2").scan(filter=col("d") < dt.timedelta(minutes=5))
    assert sc.read().num_rows == 300
    assert sc.stats.files_pruned == 9, sc.stats


def test_pandas_none_timedelta_uuid_columns(tmp_path):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"none": [None, None, None],
                       "td": pd.to_timedelta([1, 2, None], unit="s"),
                       "u": [uuid.uuid4(), None, uuid.uuid4()]})
    rcfmt.write_table(df, tmp_path / "p.rcfmt")
    back = rcfmt.read_pandas(tmp_path / "p.rcfmt")
    pd.testing.assert_frame_equal(back, df)
    got = rcfmt.read_pandas(tmp_path / "p.rcfmt", filter=col("td") > pd.Timedelta(seconds=1))
    pd.testing.assert_frame_equal(got, df.iloc[[1]], check_index_type=False)  # (the row keeps its label)


def test_cli_check_and_head(tmp_path):
    t = table_of(*TYPES, n=50)
    path = tmp_path / "c.rcfmt"
    rcfmt.write_table(t, path)
    probe = str(uuid.UUID(bytes=t["uuid"].combine_chunks().storage.drop_null()[0].as_py()))
    for args in (["check", path], ["head", path, "-n", "5"], ["inspect", path], ["schema", path],
                 ["head", path, "-n", "2", "--filter", "dur_s > 0"], ["head", path, "--json"],
                 ["cat", path, "--format", "json"], ["pages", path, "--column", "dec256"],
                 ["cat", path, "--columns", ",".join(n for n in TYPES if n != "fsb3")],  # (CSV: UTF-8 bytes only)
                 ["meta", path], ["index", path], ["inspect", path, "--json"],
                 ["bloom", path, "--column", "uuid", "--value", probe]):
        proc = subprocess.run([sys.executable, "-m", "rcfmt.cli", *map(str, args)], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, (args, proc.stderr)
    out = subprocess.run([sys.executable, "-m", "rcfmt.cli", "schema", str(path)], capture_output=True,
                         text=True).stdout
    assert "decimal256(60, 3)" in out and "extension<arrow.uuid>" in out and "halffloat" in out


# ------------------------------------------------------------------ invalid values, unknown types
def test_decimal_beyond_precision_is_refused_on_write(tmp_path):
    for t, v in ((pa.decimal32(3, 1), 1000), (pa.decimal64(10, 0), -10**10), (pa.decimal256(40, 2), 10**40)):
        arr = column(t, [1, v], [True, True])
        with pytest.raises(InvalidDataError, match="precision") as info:
            rcfmt.write_table(pa.table({"x": arr}), tmp_path / "d.rcfmt")
        assert (info.value.column, info.value.row) == ("x", 1)
        assert not (tmp_path / "d.rcfmt").exists()
        nested = pa.table({"l": pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), arr)})
        with pytest.raises(InvalidDataError, match="precision") as info:
            rcfmt.write_table(nested, tmp_path / "d.rcfmt")
        assert (info.value.column, info.value.row) == ("l.item", 1)
        with pytest.raises(InvalidDataError, match="precision") as info:
            rcfmt.write_dataset(pa.table({"x": arr}), tmp_path / "ds")
        assert info.value.row == 1
        ok = column(t, [1, v], [True, False])  # the bad value under a NULL
        rcfmt.write_table(pa.table({"x": ok}), tmp_path / "d.rcfmt")
        assert rcfmt.read_table(tmp_path / "d.rcfmt")["x"].to_pylist() == [column(t, [1])[0].as_py(), None]
        (tmp_path / "d.rcfmt").unlink()


def _forge_schema(path, edit) -> None:
    """Rewrite the footer JSON's schema with ``edit`` (keeping its length: table offsets
    are relative to the footer start) and fix the footer checksum."""
    b = bytearray(path.read_bytes())
    flen = struct.unpack("<Q", b[-16:-8])[0]
    start = len(b) - 16 - flen
    jl = struct.unpack("<I", b[start:start + 4])[0]
    text = b[start + 4:start + 4 + jl].decode()
    new = edit(text)
    assert len(new.encode()) == jl
    b[start + 4:start + 4 + jl] = new.encode()
    b[-8:-4] = struct.pack("<I", zlib.crc32(bytes(b[start:len(b) - 16])))
    path.write_bytes(bytes(b))


def test_reader_refuses_an_unknown_type_by_name(tmp_path):
    path = tmp_path / "u.rcfmt"
    rcfmt.write_table(pa.table({"d": pa.array([1, 2], pa.duration("s"))}), path)
    _forge_schema(path, lambda s: s.replace('"duration"', '"interval"'))
    with pytest.raises(UnsupportedError, match="column type 'interval' is not supported"):
        rcfmt.open(path)
    with pytest.raises(UnsupportedError, match="column type 'interval' is not supported"):
        rcfmt.read_table(path)
    rcfmt.write_table(pa.table({"d": pa.array([1, 2], pa.duration("s"))}), path)
    _forge_schema(path, lambda s: s.replace('"unit":"s"', '"unit":"x"'))
    with pytest.raises(CorruptFileError):
        rcfmt.read_table(path)


def test_reader_refuses_values_its_type_cannot_hold(tmp_path):
    path = tmp_path / "v.rcfmt"
    # decimal32(9, 0) forged into decimal32(3, 0): 1000 is beyond its precision
    rcfmt.write_table(pa.table({"x": column(pa.decimal32(9, 0), [1000, 5])}), path, bitmap_indexes=None)
    _forge_schema(path, lambda s: s.replace('"precision":9', '"precision":3'))
    with pytest.raises(CorruptFileError, match="precision"):
        rcfmt.read_table(path)
    rcfmt.write_table(pa.table({"x": pa.array([True, None])}), path)
    _forge_schema(path, lambda s: s.replace('"type":"bool"', '"type":"null"'))
    with pytest.raises(CorruptFileError, match="null"):
        rcfmt.read_table(path)
    rcfmt.write_table(pa.table({"x": pa.array([b"abc", b"ab"])}), path)
    rcfmt.write_table(pa.table({"x": pa.array([1.5, 0.1], pa.float32())}), path)
    _forge_schema(path, lambda s: s.replace('"type":"float32"', '"type":"float16"'))
    with pytest.raises(CorruptFileError, match="float16"):  # 0.1 as float32 is no float16
        rcfmt.read_table(path)
    rcfmt.write_table(pa.table({"x": pa.array([b"abc", None], pa.binary(3))}), path)
    _forge_schema(path, lambda s: s.replace('"byte_width":3', '"byte_width":2'))
    with pytest.raises(CorruptFileError, match="3 bytes in a column of 2-byte values"):
        rcfmt.read_table(path)


def test_declared_types_too_narrow_for_a_block_are_corrupt_files(tmp_path):
    """A footer forged to declare run ends or dictionary indices narrower than a block
    needs (int16 run ends over 40,000 rows, flat or over a struct; int8 indices of an
    extension's dictionaries over 400 distinct values): every read path that meets
    them raises CorruptFileError, where Arrow's re-encoding raised its raw ArrowInvalid
    (a take of a few rows, which the declared type holds, may read them)."""
    n = 40_000
    ends = pa.array(np.arange(1, n + 1), pa.int32())
    flat = pa.RunEndEncodedArray.from_arrays(ends, pa.array(np.arange(n)))
    over_struct = pa.RunEndEncodedArray.from_arrays(ends, pa.StructArray.from_arrays([pa.array(np.arange(n))], ["a"]))
    words = pa.array([f"w{i}" for i in range(400)]).dictionary_encode().cast(pa.dictionary(pa.int16(), pa.string()))
    cases = [(flat, '"run_ends":"int32"', '"run_ends":"int16"'),
             (over_struct, '"run_end_encoded":"int32"', '"run_end_encoded":"int16"'),
             (pa.ExtensionArray.from_storage(Tagged("x", words.type), words), '"index":"int16"', '"index":"int8" ')]
    for i, (arr, declared, forged) in enumerate(cases):
        path = tmp_path / f"f{i}.rcfmt"
        rcfmt.write_table(pa.table({"x": arr}), path, block_rows=n, bitmap_indexes=None, bloom_filter_columns=[])
        _forge_schema(path, lambda s: s.replace(declared, forged) if declared in s else pytest.fail(s))
        for read in (lambda f: f.read(), lambda f: f.read_block(0), lambda f: list(f.iter_batches()),
                     lambda f: f.take(np.arange(f.num_rows)[::-1]), lambda f: f.read(columns=["x"], use_threads=False)):
            with rcfmt.open(path) as f, pytest.raises(CorruptFileError, match="cannot be encoded"):
                read(f)


def test_date64_of_partial_days_is_refused_on_write_and_on_read(tmp_path, monkeypatch):
    """Arrow's date64 holds whole days only: a writer refuses others (naming column and
    row), a reader meeting one in a file (forged, or found by the fuzzer) raises
    CorruptFileError instead of returning invalid Arrow."""
    from rcfmt.schema import annotated
    from rcfmt.file.writer import Writer

    bad = pa.array([86_400_000, 5, None], pa.date64())
    with pytest.raises(InvalidDataError, match="whole number of days") as info:
        rcfmt.write_table(pa.table({"d": bad}), tmp_path / "d.rcfmt")
    assert (info.value.column, info.value.row) == ("d", 1) and not (tmp_path / "d.rcfmt").exists()
    monkeypatch.setattr(Writer, "_check_values", False)
    monkeypatch.setattr(annotated, "_check_whole_days", lambda arr, error=None: None)
    rcfmt.write_table(pa.table({"d": bad}), tmp_path / "d.rcfmt")
    monkeypatch.undo()
    with pytest.raises(CorruptFileError, match="whole number of days"):
        rcfmt.read_table(tmp_path / "d.rcfmt")


def test_footer_json_of_new_types():
    from rcfmt.schema.types import logical_type_from_arrow, logical_type_from_json
    for t in TYPES.values():
        lt = logical_type_from_arrow(t)
        again = logical_type_from_json(json.loads(json.dumps(lt.to_json())))
        assert again == lt and again.to_arrow() == t
    lt = logical_type_from_arrow(pa.uuid())
    assert lt.to_json() == {"type": "extension", "extension_name": "arrow.uuid", "extension_metadata": "",
                            "storage": {"type": "fixed_size_binary", "byte_width": 16}}
    assert base64.b64decode(logical_type_from_arrow(Tagged("q")).to_json()["extension_metadata"]) == b"q"
    for bad in ({"type": "decimal32", "precision": 10, "scale": 0}, {"type": "duration", "unit": "D"},
                {"type": "fixed_size_binary", "byte_width": -1},
                {"type": "extension", "extension_name": "a", "extension_metadata": "!", "storage": {"type": "int8"}}):
        with pytest.raises(ValueError):
            logical_type_from_json(bad)


@pytest.mark.parametrize("encoding", [None, "plain"])
def test_read_dictionary(tmp_path, encoding):
    t = table_of(*TYPES, n=400)
    rcfmt.write_table(t, tmp_path / "d.rcfmt", encoding=encoding, block_rows=150)
    back = rcfmt.read_table(tmp_path / "d.rcfmt", read_dictionary=list(TYPES))
    for name in TYPES:
        assert back.schema.field(name).type == pa.dictionary(pa.int32(), t.schema.field(name).type), name
        # each block's dictionary decoded apart (pyarrow's unification of halffloat dictionaries reads their
        # bits as numbers)
        decoded = pa.chunked_array([c.dictionary_decode() for c in back[name].chunks], t.schema.field(name).type)
        S.assert_arrays_identical(decoded, t[name], where=name)


# ------------------------------------------------------------------ intervals, run_end_encoded
def _intervals(n: int, seed: int = 0) -> pa.Array:
    rng = np.random.default_rng(seed)
    values = [None if rng.random() < 0.2 else pa.MonthDayNano([int(rng.integers(-2**31, 2**31)),
                                                                int(rng.integers(-2**31, 2**31)),
                                                                int(rng.integers(-2**63, 2**63))])
              for _ in range(n)]
    return pa.array(values, pa.month_day_nano_interval())


def test_month_day_nano_interval(tmp_path):
    t = pa.table({"i": _intervals(3000), "k": pa.array(np.arange(3000))})
    path = tmp_path / "i.rcfmt"
    rcfmt.write_table(t, path, block_rows=1000, page_rows=300)
    back = rcfmt.read_table(path)
    assert back.schema == t.schema and back.equals(t)
    with rcfmt.open(path) as f:
        assert pa.Table.from_batches(list(f.iter_batches(batch_size=777))).equals(t)
        assert f.read_block(1).equals(t.slice(1000, 1000))
    nulls = rcfmt.read_table(path, filter=col("i").is_null())
    assert nulls.equals(t.filter(pc.is_null(t["i"])))
    assert rcfmt.read_table(path, filter=(col("k") < 10) & col("i").is_valid()).equals(
        t.filter(pc.and_(pc.less(t["k"], 10), pc.is_valid(t["i"]))))
    for f in (col("i") == b"\x00" * 16, col("i").startswith(b"\x00"), col("i").isin([pa.MonthDayNano([1, 2, 3])])):
        with pytest.raises(FilterError, match="interval"):
            rcfmt.read_table(path, filter=f)
    rcfmt.write_dataset(t, tmp_path / "ds", target_file_rows=1000)
    assert rcfmt.dataset(tmp_path / "ds").to_table().sort_by("k").equals(t)
    nested = pa.table({"l": pa.array([[pa.MonthDayNano([1, 2, 3]), None], None, []],
                                     pa.list_(pa.month_day_nano_interval()))})
    rcfmt.write_table(nested, tmp_path / "n.rcfmt")
    assert rcfmt.read_table(tmp_path / "n.rcfmt").equals(nested)


REE_VALUES = [pa.int64(), pa.string(), pa.timestamp("ms", tz="UTC"), pa.decimal128(25, 2), pa.bool_(), pa.float64()]


@pytest.mark.parametrize("run_ends", [pa.int16(), pa.int32(), pa.int64()])
@pytest.mark.parametrize("values", REE_VALUES, ids=str)
def test_run_end_encoded_reads_back_as_itself(tmp_path, run_ends, values):
    rng = np.random.default_rng(3)
    plain = pa.array(np.repeat(rng.integers(0, 5, 400), rng.integers(1, 20, 400))[:3000]).cast(pa.int64())
    plain = pc.if_else(pc.equal(plain, 4), pa.scalar(None, pa.int64()), plain)
    if pa.types.is_string(values):
        plain = plain.cast(pa.string())
    elif pa.types.is_boolean(values):
        plain = pc.greater(plain, 1)
    else:
        plain = plain.cast(values) if not pa.types.is_timestamp(values) else plain.cast(pa.timestamp("ms", "UTC"))
    ree = pc.run_end_encode(plain, run_end_type=run_ends)
    t = pa.table({"r": ree})
    path = tmp_path / "r.rcfmt"
    rcfmt.write_table(t, path, block_rows=1000)
    back = rcfmt.read_table(path)
    assert back.schema == t.schema
    assert pc.run_end_decode(back["r"].combine_chunks()).equals(plain)
    with rcfmt.open(path) as f:
        batch = next(f.iter_batches(batch_size=500))
        assert batch.schema == t.schema and pc.run_end_decode(batch.column(0)).equals(plain.slice(0, 500))
    lit = plain.drop_null()[0]
    got = rcfmt.read_table(path, filter=col("r") == lit)
    want = plain.filter(pc.equal(plain, lit))
    assert got.schema == t.schema and pc.run_end_decode(got["r"].combine_chunks()).equals(want)
    assert rcfmt.read_table(path, filter=col("r").is_null()).num_rows == plain.null_count


def _ree(plain: pa.Array, run_ends: pa.DataType, dictionary: bool = False) -> pa.Array:
    """``plain`` run-end encoded with maximal runs (of its storage's values for an
    extension type, which run_end_encode has no kernel for); its values dictionary-encoded
    when ``dictionary`` (each run's value an entry; entries repeated, and one unused)."""
    ext = plain.type if isinstance(plain.type, pa.BaseExtensionType) else None
    r = pc.run_end_encode(plain.storage if ext else plain, run_end_type=run_ends)
    values = pa.ExtensionArray.from_storage(ext, r.values) if ext else r.values
    if dictionary:
        m = len(values)
        codes = pa.array(np.arange(m, dtype=np.int32) + 1, pa.int32())
        values = pa.DictionaryArray.from_arrays(codes, pa.concat_arrays([values.slice(0, 1), values])
                                                if m else values)
    return pa.RunEndEncodedArray.from_arrays(r.run_ends, values)


def _ree_decoded(arr) -> pa.Array:
    """The values of a run_end_encoded array (or chunked array), one per row, by pyarrow
    calls alone (dictionaries decoded; extension values through their storage)."""
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks:
            return pa.concat_arrays([_ree_decoded(c) for c in arr.chunks])
        t = arr.type.value_type
        t = t.value_type if pa.types.is_dictionary(t) else t
        if isinstance(t, pa.BaseExtensionType):
            return pa.ExtensionArray.from_storage(t, pa.array([], t.storage_type))
        return pa.array([], t)
    values = arr.values
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    ext = values.type if isinstance(values.type, pa.BaseExtensionType) else None
    out = pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(arr.run_ends, values.storage if ext else values)
                            .slice(arr.offset, len(arr)))
    return pa.ExtensionArray.from_storage(ext, out) if ext else out


def _runs(t: pa.DataType, n: int, seed: int, nulls: float) -> pa.Array:
    """``n`` values of ``t`` in runs (1 to 9 long), NULL runs among them."""
    base = sample(t, max(1, n // 3), seed, nulls)
    rng = np.random.default_rng(seed)
    idx = np.repeat(np.arange(len(base)), rng.integers(1, 10, len(base)))[:n]
    idx = np.concatenate([idx, np.full(n - len(idx), len(base) - 1)]).astype(np.int64)
    return base.take(pa.array(idx)) if n else base.slice(0, 0)


REE_ANNOTATED = [n for n in TYPES if n not in ("fsb0",)] + ["t64us", "t32ms"]


def _assert_rows(actual: pa.Array, expected: pa.Array, where: str) -> None:
    if pa.types.is_time32(expected.type) or pa.types.is_time64(expected.type):  # (not in S's oracle)
        assert actual.type == expected.type and actual.equals(expected), where
    else:
        S.assert_arrays_identical(actual, expected, where=where)


def _ree_values_type(name: str) -> pa.DataType:
    return TYPES[name] if name in TYPES else TIMES[name]


@pytest.mark.parametrize("dictionary", [False, True], ids=["values", "dictionary"])
@pytest.mark.parametrize("name", REE_ANNOTATED)
def test_run_end_encoded_of_annotated_and_dictionary_values(tmp_path, name, dictionary):
    """run_end_encoded of every type stored as another (and of their dictionaries): read
    back as run_end_encoded of the (decoded) values type, its rows exactly; filters as on
    the values (against pyarrow.compute on the decoded rows)."""
    t_values = _ree_values_type(name)
    if pa.types.is_time32(t_values) or pa.types.is_time64(t_values):
        plain = pa.array(np.random.default_rng(1).integers(0, _PER_DAY[t_values.unit], 300)
                         .repeat(4)[:1000], pa.int64()).cast(pa.int32() if pa.types.is_time32(t_values)
                                                             else pa.int64()).view(t_values)
    else:
        plain = _runs(t_values, 1000, 5, 0.2)
    if dictionary and pa.types.is_null(t_values):
        return
    chunks = [_ree(plain.slice(0, 600), pa.int16(), dictionary).slice(7, 400),
              _ree(plain.slice(407), pa.int16(), dictionary)]  # (its own dictionary)
    t = pa.table({"r": pa.chunked_array(chunks), "id": pa.array(np.arange(len(plain) - 7))})
    want_rows = plain.slice(7)
    path = tmp_path / "r.rcfmt"
    rcfmt.write_table(t, path, block_rows=128, page_rows=50)
    back = rcfmt.read_table(path)
    assert back.schema.field("r").type == pa.run_end_encoded(pa.int16(), t_values)
    _assert_rows(_ree_decoded(back["r"]), want_rows, name)
    with rcfmt.open(path) as f:
        batch = next(f.iter_batches(batch_size=100))
        _assert_rows(_ree_decoded(batch.column(0)), want_rows.slice(0, 100), name)
    plain_table = pa.table({"r": want_rows, "id": t["id"]})
    got = rcfmt.read_table(path, filter=col("r").is_null())
    assert got["id"].to_pylist() == plain_table.filter(pc.is_null(want_rows))["id"].to_pylist()
    if name in ORDERED or name in TIMES:
        lits = _literals(t_values, want_rows) if name in ORDERED else [want_rows.drop_null()[3].as_py()]
        for lit in lits[:2]:
            for op in ("==", "<", ">="):
                got = rcfmt.read_table(path, filter=_expr("r", op, lit))
                assert got.schema == back.schema
                if name in ORDERED:
                    want = _oracle_rows(plain_table, "r", op, lit)
                else:
                    want = plain_table.filter(_PC[op](want_rows, pa.scalar(lit, t_values)))
                assert got["id"].to_pylist() == want["id"].to_pylist(), (name, op, lit)
                _assert_rows(_ree_decoded(got["r"]), want["r"].combine_chunks(), name)


def test_run_end_encoded_json_and_extensions_over_it(tmp_path):
    from rcfmt.schema.types import logical_type_from_arrow, logical_type_from_json

    lt = logical_type_from_arrow(pa.run_end_encoded(pa.int32(), pa.duration("s")))
    assert lt.to_json() == {"type": "run_end_encoded", "run_ends": "int32", "values": {"type": "duration", "unit": "s"}}
    lt = logical_type_from_arrow(pa.run_end_encoded(pa.int64(), pa.dictionary(pa.int8(), pa.string())))
    assert lt.to_json() == {"type": "run_end_encoded", "run_ends": "int64", "values": {"type": "string"}}
    assert lt.to_arrow() == pa.run_end_encoded(pa.int64(), pa.string())
    over = Tagged("o", pa.run_end_encoded(pa.int16(), pa.int64()))
    under = pa.run_end_encoded(pa.int16(), Tagged("u", pa.decimal64(10, 2)))
    assert logical_type_from_arrow(over).to_json() == {  # (as files written before REE of annotated values)
        "type": "extension", "extension_name": "rcfmt.test.tagged", "extension_metadata": "bw==",
        "storage": {"type": "run_end_encoded", "run_ends": "int16", "values": {"type": "int64"}}}
    assert logical_type_from_arrow(under).to_json() == {
        "type": "run_end_encoded", "run_ends": "int16", "values": {
            "type": "extension", "extension_name": "rcfmt.test.tagged", "extension_metadata": "dQ==",
            "storage": {"type": "decimal64", "precision": 10, "scale": 2}}}
    for t in (over, under, pa.run_end_encoded(pa.int32(), pa.uuid()), pa.run_end_encoded(pa.int64(), pa.float16())):
        lt = logical_type_from_arrow(t)
        assert logical_type_from_json(json.loads(json.dumps(lt.to_json()))) == lt and lt.to_arrow() == t
    for bad in ({"type": "run_end_encoded", "run_ends": "int32",
                 "values": {"type": "run_end_encoded", "run_ends": "int32", "values": {"type": "int8"}}},
                {"type": "run_end_encoded", "run_ends": "int8", "values": {"type": "int8"}}):
        with pytest.raises(ValueError):
            logical_type_from_json(bad)
    storage = _ree(pa.array([1, 1, None, 5, 5, 5], pa.int64()), pa.int16())
    t = pa.table({"o": pa.ExtensionArray.from_storage(over, storage),
                  "u": _ree(column(Tagged("u", pa.decimal64(10, 2)), [1, 1, 2, 2, 2, 3], [1, 1, 1, 0, 1, 1]),
                            pa.int16())})
    rcfmt.write_table(t, tmp_path / "e.rcfmt", block_rows=4)
    back = rcfmt.read_table(tmp_path / "e.rcfmt")
    assert back.schema == t.schema
    S.assert_arrays_identical(_ree_decoded(back["u"]), _ree_decoded(t["u"]))
    assert back["o"].combine_chunks().storage.to_pylist() == storage.to_pylist()
    assert rcfmt.read_table(tmp_path / "e.rcfmt", filter=col("u") >= D("0.02")).num_rows == 3


REE_NAMES = st.sampled_from([n for n in TYPES if n not in ("fsb0", "null")])


@settings(max_examples=S.examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(name=REE_NAMES, n=st.integers(0, 200), seed=st.integers(0, 2**16), nulls=st.sampled_from([0, .3, 1]),
       block_rows=st.integers(1, 64), dictionary=st.booleans(), run_ends=st.sampled_from([pa.int16(), pa.int64()]),
       op=st.sampled_from(list(_PC)), data=st.data())
def test_hypothesis_run_end_encoded_round_trip_and_filters(tmp_path_factory, name, n, seed, nulls, block_rows,
                                                           dictionary, run_ends, op, data):
    plain = _runs(TYPES[name], n, seed, nulls)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    bounds = [0, *cuts, n]
    chunks = [_ree(plain.slice(a, b - a), run_ends, dictionary) for a, b in zip(bounds[:-1], bounds[1:])]
    t = pa.table({"r": pa.chunked_array(chunks, chunks[0].type), "id": pa.array(np.arange(n))})
    path = tmp_path_factory.mktemp("r") / "r.rcfmt"
    rcfmt.write_table(t, path, block_rows=block_rows, page_rows=max(1, block_rows // 3))
    back = rcfmt.read_table(path)
    assert back.schema.field("r").type == pa.run_end_encoded(run_ends, TYPES[name])
    S.assert_arrays_identical(_ree_decoded(back["r"]), plain, where=name)
    if n == 0 or plain.null_count == n:
        return
    lit = data.draw(st.sampled_from(_literals(TYPES[name], plain)))
    want = _oracle_rows(pa.table({"r": plain, "id": t["id"]}), "r", op, lit)
    got = rcfmt.read_table(path, filter=_expr("r", op, lit))
    assert got["id"].to_pylist() == want["id"].to_pylist()


def test_dataset_columns_of_new_types_added_by_evolution(tmp_path):
    rcfmt.write_dataset(pa.table({"a": [1, 2]}), tmp_path / "ds")
    names = ["uuid", "dur_ms", "f16", "dec256", "null", "fsb3", "tagged"]
    rcfmt.dataset(tmp_path / "ds").evolve(add=[pa.field(n, TYPES[n]) for n in names])
    new = table_of(*names, n=3, nulls=0).add_column(0, "a", pa.array([3, 4, 5]))
    new = new.set_column(new.schema.get_field_index("null"), "null", pa.nulls(3))
    rcfmt.write_dataset(new, tmp_path / "ds", mode="append")
    ds = rcfmt.dataset(tmp_path / "ds")
    back = ds.to_table().sort_by("a")
    assert back.schema == new.schema
    S.assert_tables_identical(back.slice(2), new)
    for n in names:
        assert back[n].slice(0, 2).null_count == 2
    assert ds.to_table(filter=col("dec256").is_null()).num_rows == 2  # the older file's rows
    lit = _literals(TYPES["dur_ms"], new["dur_ms"].combine_chunks())[0]
    assert ds.to_table(filter=col("dur_ms") == lit)["a"].to_pylist() == \
        _oracle_rows(new, "dur_ms", "==", lit)["a"].to_pylist()


def test_arrow_producers_polars_and_duckdb(tmp_path):
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    df = pl.DataFrame({"d": [dt.timedelta(seconds=1), None], "n": [None, None]})
    rcfmt.write_table(df, tmp_path / "p.rcfmt")
    back = rcfmt.read_table(tmp_path / "p.rcfmt")
    assert back.schema.field("d").type == pa.duration("us") and back.schema.field("n").type == pa.null()
    assert pl.DataFrame(back).equals(df)
    rel = duckdb.sql("SELECT INTERVAL 3 DAY AS i, '1 hour'::INTERVAL AS j, NULL AS n")
    rcfmt.write_table(rel, tmp_path / "d.rcfmt")
    back = rcfmt.read_table(tmp_path / "d.rcfmt")
    assert back.schema.field("i").type == pa.month_day_nano_interval()
    assert duckdb.sql("SELECT * FROM back").fetchall() == [(dt.timedelta(days=3), dt.timedelta(hours=1), None)]


@pytest.mark.parametrize("name", [n for n in TYPES if n != "null"])
def test_bloom_filters_hold_what_hash_arrow_says(tmp_path, name):
    """The writer's filters hold the hashes of the stored values (rcfmt.index.bloom.sbbf.hash_arrow
    of the user's array hashes them as stored), and an equality literal probes them."""
    from rcfmt.index.bloom.sbbf import hash_arrow
    from rcfmt.index.bloom.chunks import read_filter

    t = table_of(name, n=2000, nulls=0.1)
    path = tmp_path / "b.rcfmt"
    rcfmt.write_table(t, path, bloom_filter_columns=[name], dictionary=False)
    with rcfmt.open(path) as f:
        bf = read_filter(f, 0, 0)
        assert bf is not None
        assert bf.might_contain_hashes(hash_arrow(t[name])).all()
    lit = _literals(TYPES[name], t[name].combine_chunks())[0]
    S.assert_tables_identical(rcfmt.read_table(path, filter=col(name) == lit), _oracle_rows(t, name, "==", lit))


def test_extension_of_a_nested_type_holding_dictionaries_is_stored(tmp_path):
    """(Extensions of nested types are stored: tests/schema/test_extension_nested.py. One whose
    storage holds dictionaries is stored decoded and encoded again: tests/schema/test_last_shapes.py.)"""
    st_ = pa.struct([("a", pa.dictionary(pa.int8(), pa.string()))])
    arr = pa.ExtensionArray.from_storage(Tagged("s", st_), pa.array([{"a": "x"}], st_))
    rcfmt.write_table(pa.table({"s": arr}), tmp_path / "s.rcfmt")
    assert rcfmt.read_table(tmp_path / "s.rcfmt").equals(pa.table({"s": arr}))


def test_an_extension_class_defined_again_is_written_and_read_back_as_itself(tmp_path):
    """A never-registered extension class defined again under the same name (a notebook
    cell run twice): each definition's column is written and read back as its own class
    (the second was refused: the writer expected the first class; and read back as it)."""

    def define():
        class Redefined(pa.ExtensionType):
            def __init__(self):
                super().__init__(pa.int32(), "rcfmt.test.redefined")

            def __arrow_ext_serialize__(self):
                return b"m"

            @classmethod
            def __arrow_ext_deserialize__(cls, storage_type, serialized):
                return cls()

        return Redefined

    for k in range(3):
        cls = define()
        t = pa.table({"x": pa.ExtensionArray.from_storage(cls(), pa.array([k, 7], pa.int32()))})
        rcfmt.write_table(t, tmp_path / f"r{k}.rcfmt")
        back = rcfmt.read_table(tmp_path / f"r{k}.rcfmt")
        assert type(back.schema.field("x").type) is cls and back.equals(t)
