"""Backward compatibility: the format-v1 golden file reads back exactly, forever.

``tests/data/golden_v1.rcfmt`` was written once by rcfmt 0.1.0 (commit 4d07f28) with
``tests/data/make_golden.py``; its expected content is ``tests/data/golden_v1.arrow``
(an Arrow IPC file, independent of rcfmt). NEVER REGENERATE THE GOLDEN FILE FOR
FORMAT V1: reading files written by older versions is a promise, and a golden file
rewritten by today's writer proves nothing about yesterday's files. If this test
fails, the reader broke compatibility — fix the reader. A new format version gets its
own golden file next to this one (``golden_v2.rcfmt``) and its own test.

Besides the data, a few footer facts are pinned (encodings, codecs and page counts per
chunk, block layout) so that a silent change in how the file is interpreted is caught.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
import strategies as S
from rcfmt.index.bloom.sbbf import hash_arrow
from rcfmt.index.bloom.chunks import read_filter

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "golden_v1.rcfmt"
EXPECTED = DATA / "golden_v1.arrow"
GOLDEN_SHA256 = "67643e19214befeb811e72a1378d5a452df2f73241dc3db6d79bded9b8029157"
EXPECTED_SHA256 = "8b30a310fda4045a749e9ce0f0f324063976524a1d1d8b189b3ca321ed73a4af"

PLAIN, DICTIONARY, RLE = 0, 1, 2
NONE, ZSTD, LZ4 = 0, 1, 2
VARBINARY = {"str", "lstr", "bin", "lbin"}
#: dictionary sizes of block 0 (DICTIONARY chunks)
DICTIONARY_SIZES = {"i8": 2, "i16": 8, "i32": 2, "i64": 6, "u8": 3, "u16": 3, "u32": 3, "u64": 8, "f32": 7,
                    "f64": 5, "str": 3, "lstr": 6, "bin": 5, "lbin": 7, "date": 2, "ts_s": 6, "ts_ms_utc": 3,
                    "ts_us_ny": 6, "ts_ns_off": 2, "dec38": 8, "dec5": 5, "dec_neg": 6}
BLOOM_COLUMNS = ["i64", "str", "lbin", "ts_us_ny", "dec38"]
STAT_WIDTHS = [1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8, 8, 8, 8, 4, 8, 8, 8, 8, 16, 16, 16]


@pytest.fixture(scope="module")
def expected() -> pa.Table:
    return S.ipc_table(EXPECTED)


@pytest.fixture(scope="module")
def golden():
    with rcfmt.open(GOLDEN) as f:
        yield f


def test_golden_files_are_the_committed_ones():
    """Guards against regeneration: these bytes were written by rcfmt 0.1.0."""
    S.assert_written_once((GOLDEN, GOLDEN_SHA256), (EXPECTED, EXPECTED_SHA256))




def test_reads_back_exactly(golden, expected):
    got = golden.read()
    S.assert_tables_identical(got, expected)  # bitwise: NaN payloads, -0.0
    assert got.schema.metadata == {b"golden": b"format v1", b"binary": b"\xff\x00\x01"}
    S.assert_tables_identical(rcfmt.read_table(GOLDEN, use_threads=False), expected)


def test_reads_back_exactly_block_by_block(golden, expected):
    got = pa.concat_tables([golden.read_block(b) for b in range(3)])
    S.assert_tables_identical(got, expected)  # bitwise: NaN payloads, -0.0
    assert got.schema.metadata == {b"golden": b"format v1", b"binary": b"\xff\x00\x01"}


def _valid_values(column):
    arr = column.combine_chunks()
    return [v for v, ok in zip(S.storage_of(arr), S.validity_of(arr)) if ok]


def test_edge_values_are_present(expected):
    """The golden file really holds (as non-null values) the edge cases it pins."""
    f64 = {int(v) for v in _valid_values(expected.column("f64"))}
    assert {0x7FF8_0000_0000_0001, 0x8000_0000_0000_0000, 0x7FF0_0000_0000_0000, 0x1} <= f64
    f32 = {int(v) for v in _valid_values(expected.column("f32"))}
    assert {0x7FC0_0001, 0xFFC0_BEEF, 0x7F80_0001, 0x8000_0000, 0x7F80_0000} <= f32
    for name in ("i16", "u8", "u16", "u32", "u64", "ts_s"):
        t = expected.schema.field(name).type
        info = np.iinfo(np.int64) if pa.types.is_timestamp(t) else np.iinfo(t.to_pandas_dtype())
        values = {int(v) for v in _valid_values(expected.column(name))}
        assert {int(info.min), int(info.max)} <= values, name
    assert np.iinfo(np.int32).max in {int(v) for v in _valid_values(expected.column("date"))}
    assert "\U0010FFFF".encode() in _valid_values(expected.column("lstr"))
    assert any(b"\x00" in v for v in _valid_values(expected.column("bin")) + _valid_values(expected.column("lbin")))
    for name in expected.schema.names:
        assert expected.schema.field(name).type == S.ALL_TYPES[name]


def test_blocks_and_columns(golden, expected):
    assert golden.num_rows == 24 and golden.num_blocks == 4
    assert golden.footer.blocks["row_count"].tolist() == [8, 8, 8, 0]
    assert golden.footer.blocks["first_row"].tolist() == [0, 8, 16, 24]
    assert golden.schema == expected.schema
    assert [c.stat_width for c in golden.footer.columns] == STAT_WIDTHS
    assert golden.footer.created_by == "rcfmt 0.1.0"
    raw = GOLDEN.read_bytes()
    assert raw[:8] == b"RCFM" + struct.pack("<I", 1)
    assert raw[-4:] == b"RCFM"
    for b in range(3):
        S.assert_tables_identical(golden.read_block(b), expected.slice(8 * b, 8))


def test_zero_row_block(golden, expected):
    S.assert_tables_identical(golden.read_block(3), expected.slice(0, 0))


def test_encodings_codecs_and_pages_per_chunk(golden):
    names = golden.schema.names
    for c, name in enumerate(names):
        chunks = golden.footer.chunks[c]
        if name == "bool":
            want_enc = [RLE, RLE, PLAIN, RLE]
        elif name in VARBINARY:
            want_enc = [DICTIONARY, PLAIN, PLAIN, DICTIONARY]
        else:
            want_enc = [DICTIONARY, RLE, PLAIN, DICTIONARY]
        assert chunks["encoding"].tolist() == want_enc, name
        assert chunks["compression"].tolist() == [ZSTD, LZ4, NONE, ZSTD], name
        assert chunks["page_count"].tolist() == [2, 2, 2, 0], name
        if name != "bool":
            assert int(chunks["dictionary_size"][0]) == DICTIONARY_SIZES[name], name
            assert chunks["dictionary_size"][1:].tolist() == [0, 0, 0], name
        for b in range(3):
            e = golden.page_index(b, c)
            assert e["first_row"].tolist() == [0, 5] and e["row_count"].tolist() == [5, 3], (name, b)


def test_bloom_filters(golden, expected):
    """Filters exist exactly where written, pass their checksum and hold every value."""
    assert golden.footer.bloom_region == (18171, 540)
    for c, name in enumerate(golden.schema.names):
        lengths = golden.footer.chunks[c]["bloom_length"].tolist()
        assert lengths == ([36, 36, 36, 0] if name in BLOOM_COLUMNS else [0, 0, 0, 0]), name
        for b in range(4):
            bf = read_filter(golden, b, c)
            assert (bf is not None) == bool(lengths[b]), (name, b)
            if bf is not None:
                block = expected.column(name).slice(8 * b, 8)
                assert bf.might_contain_hashes(hash_arrow(block)).all(), (name, b)


def test_pages_headers_agree_with_footer(golden):
    raw = GOLDEN.read_bytes()
    for c in range(len(golden.schema)):
        for b in range(3):
            rec = golden.footer.chunks[c][b]
            for e in golden.page_index(b, c):
                page_type, enc, codec, flags, rows = struct.unpack_from("<BBBBI", raw, int(e["offset"]))
                assert (page_type, enc, codec, rows) == (0, int(rec["encoding"]), int(rec["compression"]),
                                                         int(e["row_count"]))
                assert bool(flags & 1) == bool(e["null_count"])


def test_statistics(golden, expected):
    for c, name in enumerate(golden.schema.names):
        stats = golden.block_stats(name)
        for b in range(4):
            block = expected.column(name).slice(8 * b, 8)
            S.assert_stats_equal(stats, b, S.expected_stats(block, truncate=8), f"{name} block {b}")
            if b == 3:
                continue
            entries = golden.page_index(b, c)
            pstats = golden.page_stats(b, c, entries)
            for p, e in enumerate(entries):
                page = block.slice(int(e["first_row"]), int(e["row_count"]))
                S.assert_stats_equal(pstats, p, S.expected_stats(page, truncate=8), f"{name} block {b} page {p}")


def test_partial_reads(golden, expected):
    cols = ["dec_neg", "bool", "ts_ns_off", "lbin"]
    S.assert_tables_identical(golden.read(columns=cols), expected.select(cols))
    batches = list(golden.iter_batches(5, columns=cols))
    assert [len(b) for b in batches] == [5, 3, 5, 3, 5, 3]
    S.assert_tables_identical(pa.Table.from_batches(batches), expected.select(cols))
