"""Round trips write -> read: exact equality of data, types, nulls and float bits, and
footer/page-index facts (block and page layout, statistics) checked against brute force.
"""
from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from rcfmt.encodings import by_name
from rcfmt.file.writer import DEFAULT_PAGE_ROWS
from rcfmt.index.bloom.sbbf import hash_arrow
from rcfmt.index.bloom.chunks import read_filter

# The page header as the format defines it (rcfmt/format/layout.py, docs/FORMAT.md):
# page_type, encoding, compression, flags, row_count, value_count, null_count,
# compressed_size, uncompressed_size, body_crc, header_crc
PAGE_HEADER = struct.Struct("<BBBBIIIIIII")
CODEC_IDS = {"none": 0, "zstd": 1, "lz4": 2}
UNKNOWN_COUNT = 2**64 - 1


# ---------------------------------------------------------------------------- oracle
def expected_block_sizes(n: int, block_rows: int) -> list[int]:
    return [block_rows] * (n // block_rows) + ([n % block_rows] if n % block_rows else [])


def _distinct_bounds(arr: pa.Array) -> tuple[int, int]:
    """(value-distinct, bit-distinct) counts of the non-null values of ``arr``."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    valid = S.validity_of(arr)
    slots = S.storage_of(arr)
    if isinstance(slots, list):
        n = len({v for v, ok in zip(slots, valid) if ok})
        return n, n
    vals = slots[valid]
    bits = len({vals[i].tobytes() for i in range(len(vals))})
    if pa.types.is_floating(arr.type):
        f = vals.view(np.float32 if arr.type.bit_width == 32 else np.float64)
        nan = np.isnan(f)
        by_value = len(set(f[~nan].tolist())) + (1 if nan.any() else 0)
        return by_value, bits
    return bits, bits


def check_page_stats(pstats, p: int, block_values, first_row: int, rows: int, truncate: int, where: str):
    page_values = block_values.slice(first_row, rows)
    S.assert_stats_equal(pstats, p, S.expected_stats(page_values, truncate), where)


def check_file(path, table: pa.Table, opts: dict | None = None, *, metadata: dict | None = None,
               block_sizes: list[int] | None = None) -> None:
    """Everything observable about a written file agrees with ``table`` and ``opts``."""
    opts = opts or {}
    truncate = opts.get("stats_truncate", 32)
    bloom_named = opts.get("bloom_filter_columns", "auto")
    bloom_named = set(bloom_named) if isinstance(bloom_named, list) else set()
    forced = opts.get("encoding") or {}
    if isinstance(forced, str):
        forced = {name: forced for name in table.schema.names}
    with rcfmt.open(path) as f:
        got = f.read()
        S.assert_tables_identical(got.replace_schema_metadata(table.schema.metadata), table)
        want_meta = dict(table.schema.metadata or {})
        want_meta.update({k.encode() if isinstance(k, str) else k: v.encode() if isinstance(v, str) else v
                          for k, v in (metadata or {}).items()})
        assert (got.schema.metadata or {}) == want_meta
        assert f.schema == got.schema
        assert f.num_rows == table.num_rows
        sizes = block_sizes if block_sizes is not None else expected_block_sizes(
            table.num_rows, opts.get("block_rows", 1 << 20))
        assert f.num_blocks == len(sizes)
        assert f.footer.blocks["row_count"].tolist() == sizes
        assert f.footer.blocks["first_row"].tolist() == np.cumsum([0, *sizes[:-1]]).tolist()[: len(sizes)]
        raw = Path(path).read_bytes()
        starts = np.cumsum([0, *sizes])
        for c, name in enumerate(table.schema.names):
            column = table.column(c)
            bstats = f.block_stats(name)
            assert len(bstats) == len(sizes)
            for b in range(len(sizes)):
                where = f"column {name!r} block {b}"
                block_values = column.slice(int(starts[b]), sizes[b])
                S.assert_stats_equal(bstats, b, S.expected_stats(block_values, truncate), where)
                rec = f.footer.chunks[c][b]
                enc = int(rec["encoding"])
                if name in forced:
                    assert enc == by_name(forced[name]).id, where
                elif opts.get("dictionary") is False:
                    assert enc != by_name("dictionary").id, where
                comp = opts.get("compression", "auto")
                if comp == "auto":
                    assert int(rec["compression"]) in (0, 1), where
                else:
                    assert int(rec["compression"]) == CODEC_IDS[comp], where
                bf = read_filter(f, b, c)
                if name in bloom_named and sizes[b]:
                    assert bf is not None, f"{where}: no bloom filter although requested"
                if bf is not None:  # no false negatives: every stored value probes positive
                    missed = ~bf.might_contain_hashes(hash_arrow(block_values))
                    assert not missed.any(), f"{where}: bloom filter misses {int(missed.sum())} values"
                dc = int(rec["distinct_count"])
                if dc != UNKNOWN_COUNT:
                    lo, hi = _distinct_bounds(block_values)
                    assert lo <= dc <= hi, f"{where}: distinct_count {dc} not in [{lo}, {hi}]"
                entries = f.page_index(b, c)
                assert len(entries) == int(rec["page_count"])
                if sizes[b] == 0:
                    assert len(entries) == 0
                    continue
                assert entries["first_row"].tolist() == np.cumsum([0, *entries["row_count"][:-1]]).tolist()
                assert int(entries["row_count"].sum()) == sizes[b]
                assert int(entries["row_count"].max()) <= opts.get("page_rows", DEFAULT_PAGE_ROWS), where
                pstats = f.page_stats(b, c, entries)
                for p, e in enumerate(entries):
                    pwhere = f"{where} page {p}"
                    check_page_stats(pstats, p, block_values, int(e["first_row"]), int(e["row_count"]), truncate,
                                     pwhere)
                    # the page header agrees with its page-index entry and its chunk
                    h = PAGE_HEADER.unpack_from(raw, int(e["offset"]))
                    assert h[0] == 0 and h[1] == enc and h[2] == int(rec["compression"]), pwhere
                    assert (h[4], h[6]) == (int(e["row_count"]), int(e["null_count"])), pwhere
                    assert 32 + h[7] == int(e["length"]), pwhere
                    assert (h[3] & 1) == (h[6] > 0), pwhere
        # whole-file statistics agree with the sum of the blocks
        assert int(f.footer.blocks["row_count"].sum()) == table.num_rows


@pytest.mark.parametrize("name", list(S.ALL_TYPES))
def test_bloom_filters_every_type(tmp_path, name):
    """A filter requested for a column exists for every non-empty chunk and holds every value."""
    table = S.example_table(60, seed=13, types={name: S.ALL_TYPES[name]})
    write_and_check(tmp_path, table, {"block_rows": 25, "bloom_filter_columns": [name]})


def write_and_check(tmp_path, table, opts=None, **kw) -> Path:
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, **(opts or {}))
    check_file(path, table, opts, **kw)
    return path


# ---------------------------------------------------------------------------- the oracle itself
def test_oracle_is_strict():
    """assert_tables_identical sees what Table.equals does not (and must)."""
    f = S.build_array(pa.float64(), [0x7FF8_0000_0000_0001, 0])
    base = pa.table({"f": f})
    variants = {
        "NaN payload": pa.table({"f": S.build_array(pa.float64(), [0x7FF8_0000_0000_0002, 0])}),
        "-0.0": pa.table({"f": S.build_array(pa.float64(), [0x7FF8_0000_0000_0001, 1 << 63])}),
        "null position": pa.table({"f": S.build_array(pa.float64(), [0x7FF8_0000_0000_0001, 0],
                                                      np.array([True, False]))}),
        "nullability": pa.table({"f": f}, schema=pa.schema([pa.field("f", pa.float64(), False)])),
        "metadata": base.replace_schema_metadata({"k": "v"}),
        "type": pa.table({"f": f.cast(pa.float32())}),
    }
    S.assert_tables_identical(base, base)
    for what, other in variants.items():
        with pytest.raises(AssertionError):
            S.assert_tables_identical(other, base)
            pytest.fail(f"oracle missed a difference in {what}")
    with pytest.raises(AssertionError):
        S.assert_tables_identical(pa.table({"s": pa.array(["a"], pa.large_string())}), pa.table({"s": ["a"]}))
    # values under nulls do not matter
    a = S.build_array(pa.int32(), [1, 2], np.array([True, False]))
    b = S.build_array(pa.int32(), [1, 99], np.array([True, False]))
    S.assert_arrays_identical(a, b)


def test_stats_oracle_rules():
    st = S.expected_stats(S.build_array(pa.float32(), [0x7FC0_0000, 0x8000_0000, 0, 0x3F80_0000],
                                        np.array([True, True, True, False])))
    assert (st.nan_count, st.null_count, st.has_min_max) == (1, 1, True)
    assert np.signbit(st.min) and st.min == 0 and not np.signbit(st.max) and st.max == 0
    st = S.expected_stats(pa.array([b"ab\xff\xff\xff", b"a"]), truncate=3)
    assert (st.min, st.min_exact, st.max, st.max_exact) == (b"a", True, b"ac", False)
    assert not S.expected_stats(pa.array([b"\xff" * 5]), truncate=3).has_min_max
    st = S.expected_stats(pa.array([None, None], pa.int8()))
    assert (st.null_count, st.has_min_max) == (2, False)


# ---------------------------------------------------------------------------- random round trips
@settings(max_examples=S.examples(70))
@given(data=st.data())
def test_random_tables_random_options(data):
    table = data.draw(S.tables(rows=st.integers(0, 60)), label="table")
    opts = data.draw(S.write_options(table.schema), label="options")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.rcfmt"
        rcfmt.write_table(table, path, **opts)
        check_file(path, table, opts)
        # no temporary files left next to the target
        assert [p.name for p in Path(d).iterdir()] == ["t.rcfmt"]


@settings(max_examples=S.examples(40))
@given(data=st.data())
def test_one_type_many_pages(data):
    """One column, many rows, tiny pages: every encoding and codec at page boundaries."""
    t = data.draw(S.primitive_types, label="type")
    nullable = data.draw(st.booleans())
    n = data.draw(st.integers(0, 150))
    arr = data.draw(S.arrays(t, n, nullable=nullable))
    table = pa.table({"c": arr}, schema=pa.schema([pa.field("c", t, nullable)]))
    enc = data.draw(st.sampled_from([None, *S.encodings_for(t)]))
    opts = {"block_rows": data.draw(st.integers(1, 200)), "page_size": 64,
            "page_rows": data.draw(st.integers(1, 16)), "compression": data.draw(st.sampled_from(S.COMPRESSIONS))}
    if enc:
        opts["encoding"] = enc
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.rcfmt"
        rcfmt.write_table(table, path, **opts)
        check_file(path, table, opts)


@pytest.mark.parametrize("name,encoding", [(name, enc) for name, t in S.ALL_TYPES.items()
                                           for enc in S.encodings_for(t)])
def test_every_type_every_encoding(tmp_path, name, encoding):
    t = S.ALL_TYPES[name]
    table = S.example_table(90, seed=3, types={"c": t})
    for compression in S.COMPRESSIONS:
        opts = {"block_rows": 40, "page_rows": 7, "encoding": encoding, "compression": compression}
        write_and_check(tmp_path, table, opts)


def test_nan_payloads_and_signed_zero_survive_every_encoding(tmp_path):
    bits64 = [0x7FF0_0000_0000_0001, 0xFFF8_0000_0000_0ABC, 0x7FF8_0000_0000_0000, 0x8000_0000_0000_0000, 0,
              0x7FF0_0000_0000_0001, 0x7FFF_FFFF_FFFF_FFFF, 0xFFF0_0000_0000_0000]
    bits32 = [0x7F80_0001, 0xFFC0_0ABC, 0x7FC0_0000, 0x8000_0000, 0, 0x7F80_0001, 0x7FFF_FFFF, 0xFF80_0000]
    table = pa.table({
        "f64": S.build_array(pa.float64(), bits64 * 5),
        "f32": S.build_array(pa.float32(), bits32 * 5),
    })
    for enc in ("plain", "dictionary", "rle"):
        for compression in S.COMPRESSIONS:
            opts = {"encoding": enc, "compression": compression, "page_rows": 3}
            write_and_check(tmp_path, table, opts)
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        st64 = f.block_stats("f64")
        assert st64.nan_count[0] == 5 * 5
        assert np.float64(st64.min[0]).tobytes() == np.float64(-np.inf).tobytes()
        assert np.float64(st64.max[0]).tobytes() == np.float64(0.0).tobytes()  # max zero is +0.0


def test_zero_is_stored_as_signed_bounds(tmp_path):
    """A zero minimum is -0.0 and a zero maximum +0.0, whichever zero the data holds."""
    table = pa.table({"pos": S.build_array(pa.float64(), [0] * 3),  # +0.0 only
                      "neg": S.build_array(pa.float64(), [1 << 63] * 3)})  # -0.0 only
    write_and_check(tmp_path, table)
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        for name in ("pos", "neg"):
            s = f.block_stats(name)
            assert np.signbit(s.min[0]) and not np.signbit(s.max[0])


# ---------------------------------------------------------------------------- sizes and boundaries
@pytest.mark.parametrize("n", [0, 1, 2])
def test_tiny_and_empty_tables_every_type(tmp_path, n):
    table = S.example_table(n, seed=1)
    write_and_check(tmp_path, table)
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        assert f.num_blocks == (1 if n else 0)
        assert f.read().schema == S.storage_schema(table.schema)


def test_empty_table_keeps_schema_and_metadata(tmp_path):
    schema = pa.schema([pa.field("a", pa.int8(), False), pa.field("s", pa.large_string())], metadata={"k": "v"})
    table = schema.empty_table()
    write_and_check(tmp_path, table, {"compression": "zstd"})
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        assert f.num_blocks == 0 and f.num_rows == 0
        assert list(f.iter_batches()) == []
        assert f.read(columns=["s"]).schema == pa.schema([pa.field("s", pa.large_string())], metadata={"k": "v"})


@pytest.mark.parametrize("block_rows", [1, 7, 64])
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_block_boundaries(tmp_path, block_rows, delta):
    n = block_rows + delta
    table = S.example_table(n, seed=block_rows)
    write_and_check(tmp_path, table, {"block_rows": block_rows, "page_rows": 5, "compression": "lz4"})


@pytest.mark.parametrize("page_rows", [1, 4])
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_page_boundaries(tmp_path, page_rows, delta):
    n = 3 * page_rows + delta
    table = S.example_table(n, seed=page_rows)
    opts = {"page_rows": page_rows, "compression": "none"}
    write_and_check(tmp_path, table, opts)
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        for c in range(len(table.schema)):
            rows = f.page_index(0, c)["row_count"]
            assert int(rows.max()) <= page_rows


def test_page_size_cuts_plain_pages(tmp_path):
    """PLAIN fixed-width pages hold at most page_size // width rows; strings are cut by bytes."""
    table = pa.table({"i": pa.array(np.arange(1000, dtype=np.int64)),
                      "s": pa.array([f"value-{i:06d}" for i in range(1000)])})
    write_and_check(tmp_path, table, {"page_size": 256, "encoding": "plain", "compression": "none"})
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        assert int(f.page_index(0, 0)["row_count"].max()) <= 256 // 8
        assert len(f.page_index(0, 0)) >= 1000 * 8 // 256
        assert len(f.page_index(0, 1)) >= (1000 * (12 + 4)) // 256 // 2
        # a page of strings exceeds page_size by at most one value
        for e in f.page_index(0, 1):
            assert int(e["length"]) - 32 <= 256 + 4 + 12 + 32


def test_value_larger_than_page_size(tmp_path):
    big = "x" * 5000
    table = pa.table({"s": [big, "a", big + "y", None, ""]})
    write_and_check(tmp_path, table, {"page_size": 64, "encoding": "plain"})




def test_zero_row_blocks_via_flush_block(tmp_path):
    table = S.example_table(8, seed=4)
    path = tmp_path / "t.rcfmt"
    with rcfmt.Writer(path, table.schema, block_rows=100, compression="zstd") as w:
        w.flush_block()  # empty block first
        w.write(table.slice(0, 5))
        w.flush_block()
        w.flush_block()  # empty block in the middle
        w.write(table.slice(5))
        w.flush_block()
        w.flush_block()  # empty block last
    check_file(path, table, {"compression": "zstd"}, block_sizes=[0, 5, 0, 3, 0])
    with rcfmt.open(path) as f:
        for b in (0, 2, 4, -1):
            empty = f.read_block(b)
            assert empty.num_rows == 0 and empty.schema == f.schema
        S.assert_tables_identical(f.read_block(1), table.slice(0, 5))
        S.assert_tables_identical(f.read_block(-2), table.slice(5))
        assert [len(b) for b in f.iter_batches(2)] == [2, 2, 1, 2, 1]
        stats = f.block_stats("i64")
        assert stats.row_count.tolist() == [0, 5, 0, 3, 0]
        assert not stats.has_min_max[0] and stats.null_count[0] == 0


def test_only_empty_blocks(tmp_path):
    schema = pa.schema([("a", pa.int32()), ("s", pa.string())])
    path = tmp_path / "t.rcfmt"
    with rcfmt.Writer(path, schema, encoding={"s": "dictionary"}) as w:
        w.flush_block()
        w.write(schema.empty_table())
        w.flush_block()
    with rcfmt.open(path) as f:
        assert f.num_blocks == 2 and f.num_rows == 0
        S.assert_tables_identical(f.read(), schema.empty_table())


def test_zero_row_block_bool(tmp_path):
    schema = pa.schema([("b", pa.bool_())])
    path = tmp_path / "t.rcfmt"
    with rcfmt.Writer(path, schema) as w:
        w.flush_block()
    S.assert_tables_identical(rcfmt.read_table(path), schema.empty_table())


def test_all_null_pages(tmp_path):
    """Pages that are entirely null carry no min/max, and full null counts."""
    n = 40
    valid = np.zeros(n, bool)
    valid[25:] = True  # pages of 5 rows: pages 0..4 all null,
    valid[27] = False  # page 5 one null, pages 6 and 7 none
    for t in (pa.int32(), pa.float64(), pa.string(), pa.bool_(), pa.decimal128(10, 2)):
        values = S.example_table(n, seed=5, nulls=False, types={"c": t}).column(0).chunk(0)
        arr = pa.Array.from_buffers(t, n, [pa.py_buffer(np.packbits(valid, bitorder="little")), *values.buffers()[1:]],
                                    int(n - valid.sum()))
        table = pa.table({"c": arr})
        for enc in S.encodings_for(t):
            write_and_check(tmp_path, table, {"page_rows": 5, "encoding": enc})
            with rcfmt.open(tmp_path / "t.rcfmt") as f:
                e = f.page_index(0, 0)
                assert e["null_count"].tolist() == [5, 5, 5, 5, 5, 1, 0, 0]
                ps = f.page_stats(0, 0, e)
                assert ps.has_min_max.tolist() == [False] * 5 + [True] * 3




@pytest.mark.parametrize("t", [pa.int32(), pa.uint8(), pa.date32(), pa.timestamp("ms")], ids=str)
@pytest.mark.parametrize("encoding", ["plain", "rle", "dictionary"])
def test_page_stats_ignore_values_carried_into_leading_nulls(tmp_path, t, encoding):
    """The writer fills null slots with the previous valid value, which for a page that
    starts with nulls comes from the previous page: it must not enter the page's stats."""
    # pages [1, 5] and [null, 7]: the null slot holds 5 on the way to the encoder
    table = pa.table({"c": S.build_array(t, [1, 5, 9, 7], np.array([True, True, False, True]))})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, page_rows=2, encoding=encoding)
    with rcfmt.open(path) as f:
        ps = f.page_stats(0, 0)
        assert ps.null_count.tolist() == [0, 1]
        assert S.storage_of(pa.array(ps.min[1:], t)).tolist() == [7]  # not 5
        assert ps.min_exact[1]


@pytest.mark.parametrize("encoding", ["plain", "rle", "dictionary"])
def test_float_page_stats_ignore_values_carried_into_leading_nulls(tmp_path, encoding):
    table = pa.table({"c": pa.array([1.0, 5.0, None, 7.0])})
    write_and_check(tmp_path, table, {"page_rows": 2, "encoding": encoding})
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        assert f.page_stats(0, 0).min[1] == 7.0


def test_all_null_column_every_type(tmp_path):
    arrays = {name: pa.nulls(30, t) for name, t in S.ALL_TYPES.items()}
    table = pa.table(arrays)
    for compression in S.COMPRESSIONS:
        write_and_check(tmp_path, table, {"block_rows": 12, "page_rows": 4, "compression": compression})


# ---------------------------------------------------------------------------- inputs
def test_streaming_writer_many_small_batches(tmp_path):
    table = S.example_table(300, seed=7)
    rng = np.random.default_rng(7)
    path = tmp_path / "t.rcfmt"
    with rcfmt.Writer(path, table.schema, block_rows=32, page_rows=6, compression="lz4") as w:
        pos = 0
        while pos < table.num_rows:
            k = int(rng.integers(0, 9))
            piece = table.slice(pos, k)
            kind = pos % 3
            w.write(piece if kind == 0 else piece.to_batches()[0] if piece.num_rows and kind == 1 else piece)
            pos += k
    check_file(path, table, {"block_rows": 32, "page_rows": 6, "compression": "lz4"})


def test_record_batch_input(tmp_path):
    batch = S.example_table(20, seed=8).to_batches()[0]
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(batch, path)
    S.assert_tables_identical(rcfmt.read_table(path), pa.Table.from_batches([batch]))


def test_pandas_dataframe_input(tmp_path):
    df = pd.DataFrame({
        "i": np.array([1, -2, 3], dtype=np.int16),
        "f": [0.5, np.nan, -0.0],
        "s": ["a", None, "日本"],
        "b": [True, False, True],
        "t": pd.to_datetime(["2020-01-01 00:00:00", "1969-12-31 23:59:59", None]),
        "tz": pd.to_datetime(["2020-01-01", "2021-06-01", "2022-01-01"]).tz_localize("Europe/Paris"),
    })
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(df, path, block_rows=2)
    got = rcfmt.read_table(path)
    S.assert_tables_identical(got, pa.Table.from_pandas(df))
    pd.testing.assert_frame_equal(got.to_pandas(), df)


def test_pandas_dataframe_with_index(tmp_path):
    df = pd.DataFrame({"x": [1.0, 2.0]}, index=pd.Index(["a", "b"], name="key"))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(df, path)
    pd.testing.assert_frame_equal(rcfmt.read_table(path).to_pandas(), df)


def test_dict_of_numpy_arrays_input(tmp_path):
    data = {"u8": np.array([0, 255], dtype=np.uint8), "f32": np.array([np.inf, -0.0], dtype=np.float32),
            "i64": np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max])}
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(data, path)
    S.assert_tables_identical(rcfmt.read_table(path), pa.table(data))


def test_dictionary_typed_input_is_stored_as_values(tmp_path):
    arr = pa.array(["a", "b", None, "a", "c"]).dictionary_encode()
    table = pa.table({"d": arr, "i": pa.array([1, 2, 3, 1, 1]).dictionary_encode()})
    path = write_and_check(tmp_path, table)
    assert rcfmt.read_table(path).schema.field("d").type == pa.string()


def test_sliced_and_chunked_input(tmp_path):
    base = S.example_table(100, seed=9)
    table = pa.concat_tables([base.slice(3, 30), base.slice(50, 1), base.slice(60, 0), base.slice(77)])
    write_and_check(tmp_path, table, {"block_rows": 13, "page_rows": 4})


def test_non_nullable_fields_round_trip(tmp_path):
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.string(), nullable=True)])
    table = pa.table({"a": [1, 2], "b": ["x", None]}, schema=schema)
    path = write_and_check(tmp_path, table)
    assert not rcfmt.open(path).schema.field("a").nullable


# ---------------------------------------------------------------------------- metadata
@settings(max_examples=S.examples(25))
@given(schema_meta=S.metadata_dicts(), user_meta=S.metadata_dicts())
def test_schema_and_user_metadata_round_trip(schema_meta, user_meta):
    table = pa.table({"a": [1, 2]}).replace_schema_metadata(schema_meta or None)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.rcfmt"
        rcfmt.write_table(table, path, metadata=user_meta)
        merged = {k.encode(): (v.encode() if isinstance(v, str) else v) for k, v in {**schema_meta, **user_meta}.items()}
        with rcfmt.open(path) as f:
            assert f.metadata == {k.decode(): v for k, v in merged.items()}
            assert (f.read().schema.metadata or {}) == merged
            assert (f.schema.metadata or {}) == merged


def test_user_metadata_overrides_schema_metadata(tmp_path):
    table = pa.table({"a": [1]}).replace_schema_metadata({"k": "schema", "only": "s"})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, metadata={"k": b"\xff\x00user", "u": "ü"})
    with rcfmt.open(path) as f:
        assert f.metadata == {"k": b"\xff\x00user", "only": b"s", "u": "ü".encode()}


# ---------------------------------------------------------------------------- partial reads
@settings(max_examples=S.examples(25))
@given(data=st.data())
def test_read_column_subsets_and_order(data):
    table = data.draw(S.tables(S.schemas(max_fields=6), rows=st.integers(0, 30)))
    names = data.draw(st.lists(st.sampled_from(table.schema.names), unique=True, min_size=1))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.rcfmt"
        block_rows = data.draw(st.integers(1, 10))
        rcfmt.write_table(table, path, block_rows=block_rows)
        got = rcfmt.read_table(path, columns=names)
        assert got.schema.names == names
        S.assert_tables_identical(got, table.select(names))
        with rcfmt.open(path) as f:
            S.assert_tables_identical(f.read(names, use_threads=False), table.select(names))
            for b in range(f.num_blocks):
                S.assert_tables_identical(f.read_block(b, columns=names),
                                          table.select(names).slice(b * block_rows, block_rows))


def test_read_block_positive_and_negative(tmp_path):
    table = S.example_table(50, seed=10)
    path = write_and_check(tmp_path, table, {"block_rows": 12})
    with rcfmt.open(path) as f:
        assert f.num_blocks == 5
        for i in range(5):
            want = table.slice(12 * i, 12)
            S.assert_tables_identical(f.read_block(i), want)
            S.assert_tables_identical(f.read_block(i - 5), want)
            S.assert_tables_identical(f.read_block(np.int64(i)), want)
        S.assert_tables_identical(f.read_block(-1, columns=["str", "f64"]), table.slice(48).select(["str", "f64"]))


@pytest.mark.parametrize("batch_size", [1, 3, 12, 13, 1000])
def test_iter_batches_concatenate_to_the_table(tmp_path, batch_size):
    table = S.example_table(50, seed=11)
    path = write_and_check(tmp_path, table, {"block_rows": 12})
    with rcfmt.open(path) as f:
        batches = list(f.iter_batches(batch_size))
        assert all(0 < len(b) <= batch_size for b in batches)
        S.assert_tables_identical(pa.Table.from_batches(batches), table)
        sub = list(f.iter_batches(batch_size, columns=["dec5", "bool"]))
        S.assert_tables_identical(pa.Table.from_batches(sub), table.select(["dec5", "bool"]))


def test_empty_projection_keeps_row_count(tmp_path):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"a": [1, 2, 3]}), path, block_rows=2)
    with rcfmt.open(path) as f:
        got = f.read(columns=[])
        assert got.num_columns == 0
        assert got.num_rows == 3  # like pyarrow.parquet: a projection keeps the rows (count(*))


_PARALLEL_SCRIPT = """
import sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import rcfmt, strategies as S
from rcfmt.file.writer import PARALLEL_MIN_ROWS
n = PARALLEL_MIN_ROWS * 2 + 17
table = S.example_table(n, seed=14)
opts = dict(block_rows=n // 2, page_rows=1000, compression=sys.argv[4], bloom_filter_columns=["i64", "str"])
rcfmt.write_table(table, sys.argv[3] + "/par.rcfmt", use_threads=True, **opts)
rcfmt.write_table(table, sys.argv[3] + "/ser.rcfmt", use_threads=False, **opts)
print("OK")
"""


@pytest.mark.parametrize("compression", ["auto", "lz4"])
def test_parallel_and_serial_writers_write_identical_bytes(tmp_path, compression):
    """Encoding the chunks of a block on threads must not crash nor change a single byte.
    Runs in a subprocess (a data race can kill the interpreter), a few times."""
    import subprocess
    import sys

    tests, root = str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])
    for attempt in range(4):
        proc = subprocess.run([sys.executable, "-c", _PARALLEL_SCRIPT, tests, root, str(tmp_path), compression],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and proc.stdout.strip() == "OK", \
            f"attempt {attempt}: exit {proc.returncode}\n{proc.stderr[-1500:]}"
        assert (tmp_path / "par.rcfmt").read_bytes() == (tmp_path / "ser.rcfmt").read_bytes()
    from rcfmt.file.writer import PARALLEL_MIN_ROWS

    n = PARALLEL_MIN_ROWS * 2 + 17
    check_file(tmp_path / "par.rcfmt", S.example_table(n, seed=14),
               {"block_rows": n // 2, "page_rows": 1000, "compression": compression,
                "bloom_filter_columns": ["i64", "str"]})


def test_reads_with_and_without_threads_agree(tmp_path):
    table = S.example_table(200, seed=12)
    path = write_and_check(tmp_path, table, {"block_rows": 17})
    S.assert_tables_identical(rcfmt.read_table(path, use_threads=False), table)
    S.assert_tables_identical(rcfmt.read_table(path, use_threads=True), table)
