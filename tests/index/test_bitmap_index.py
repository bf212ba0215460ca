"""Bitmap indexes (docs/FORMAT.md section 6b): every kind on every type it supports is
sound against a brute-force filter (SQL NULL semantics, NaN, -0.0, AND/OR/NOT trees
mixing indexed and unindexed columns), exact where it decides the filter, answers
counts without decoding, and every damaged byte of its region is detected.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rcfmt
from rcfmt import col
from rcfmt.errors import ChecksumError, CorruptFileError, InvalidOptionError, SchemaError
from rcfmt.index.bitmap.build import supported_kinds
from rcfmt.index.bitmap.answer import answer_block, to_mask
from rcfmt.predicate.nnf import to_nnf
from rcfmt.predicate.bind import bind
from oracle_filter import selection_mask
from rcfmt.scan.scanner import scan_file
from strategies import examples
from strategies_expr import exprs, ltype, tables
from scan.test_scan_soundness import SETTINGS as SOUNDNESS_SETTINGS
from scan.test_scan_soundness import assert_same

SETTINGS = settings(SOUNDNESS_SETTINGS, max_examples=examples(150))


@st.composite
def indexed_cases(draw):
    data = draw(tables(min_rows=0, max_rows=150, max_columns=3))
    expr = draw(exprs(data, max_leaves=5))
    kinds = {}
    for field in data.schema:
        if draw(st.integers(0, 4)):  # most columns indexed, some not (mixed trees)
            kinds[field.name] = draw(st.sampled_from([*supported_kinds(ltype(field.type)), "auto"]))
    options = dict(block_rows=draw(st.integers(1, 80)), page_rows=draw(st.integers(1, 30)),
                   bitmap_indexes=kinds, dictionary=draw(st.booleans()))
    table = data.table
    if draw(st.booleans()):
        table = table.sort_by([(table.column_names[0], "ascending")])
    return table, expr, options


@SETTINGS
@given(case=indexed_cases())
def test_indexes_are_sound_and_exact(tmp_path_factory, case):
    table, expr, options = case
    path = tmp_path_factory.mktemp("bitmap") / "t.rcfmt"
    rcfmt.write_table(table, path, **options)
    truth = selection_mask(expr, table)
    expected = table.filter(pa.array(truth))
    with rcfmt.open(path) as f:
        nnf = to_nnf(bind(expr, f.bind_schema))
        first = f.footer.blocks["first_row"].astype(np.int64)
        rows = f.footer.blocks["row_count"].astype(np.int64)
        for b in range(f.num_blocks):
            entries = {}
            for name in table.column_names:
                entry = f.bitmap_entry(b, f.column_index(name))
                if entry is not None:
                    entries[name] = entry
            if not entries:
                continue
            answer = answer_block(nnf, entries, int(rows[b]))
            maybe = to_mask(answer.maybe, int(rows[b]))
            block_truth = truth[first[b] : first[b] + rows[b]]
            assert not (block_truth & ~maybe).any(), f"the index lost matching rows of block {b}"
            if answer.exact:
                assert (block_truth == maybe).all(), f"an exact answer selected non-matching rows in block {b}"
        scan = scan_file(f, filter=expr, use_threads=False)
        assert_same(scan.read(), expected)
        assert scan.stats.rows_selected == expected.num_rows
        assert scan_file(f, filter=expr).count() == expected.num_rows
        plain = scan_file(f, filter=expr, use_bitmap_index=False)
        assert_same(plain.read(), expected)


def _lineitem_like(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "mode": pa.array(rng.choice(["AIR", "MAIL", "SHIP", "RAIL", "TRUCK", "FOB", "REG AIR"], n)),
        "flag": pa.array(rng.choice(["A", "N", "R"], n)),
        "qty": pa.array(rng.integers(1, 51, n), pa.int64()),
        "disc": pa.array(rng.integers(0, 11, n), pa.int32()),
        "price": pa.array(rng.integers(90_000, 10_500_000, n), pa.int64()),
        "comment": pa.array([f"c{i}" for i in rng.integers(0, 10**9, n)]),
        "f": pa.array(rng.choice([0.0, -0.0, 1.5, np.nan, 2.25], n)),
    })


@pytest.fixture(scope="module")
def lineitem_file(tmp_path_factory):
    table = _lineitem_like(60_000)
    path = tmp_path_factory.mktemp("li") / "li.rcfmt"
    rcfmt.write_table(table, path, block_rows=10_000, bitmap_indexes={"price": "bitsliced", "qty": "range",
                                                                         "mode": "equality", "flag": "equality",
                                                                         "disc": "bitsliced", "f": "equality"})
    return table, path


@pytest.mark.parametrize("expr", [
    (col("mode") == "AIR") & (col("flag") == "R") & (col("disc") == 3),
    (col("qty") < 10) & col("disc").between(2, 4),
    col("price").between(1_000_000, 1_200_000),
    ~((col("mode") == "AIR") | (col("qty") >= 5)),
    col("mode").isin(["AIR", "FOB", "nope"]) & (col("price") > 10_000_000),
    (col("f") == 0.0) | col("f").is_nan(),
    (col("f") != 1.5) & ~col("f").is_nan(),
    col("mode").startswith("R") & (col("flag") != "N"),
])
def test_fully_answered_filters_decode_no_filter_column(lineitem_file, expr):
    table, path = lineitem_file
    expected = table.filter(pa.array(selection_mask(expr, table)))
    with rcfmt.open(path) as f:
        scan = f.scan(["comment"], filter=expr)
        got = scan.read()
        assert got.column("comment").to_pylist() == expected.column("comment").to_pylist()
        # rows decoded: only the projected column, only at the selected rows' pages
        assert scan.stats.rows_selected_index == expected.num_rows
        count_scan = f.scan([], filter=expr)
        assert count_scan.count() == expected.num_rows
        assert count_scan.stats.rows_decoded == 0 and count_scan.stats.pages_read == 0


def test_mixed_filter_decodes_only_the_residual(lineitem_file):
    table, path = lineitem_file
    expr = (col("mode") == "MAIL") & (col("flag") == "R") & (col("comment") >= "c5")
    expected = table.filter(pa.array(selection_mask(expr, table)))
    with rcfmt.open(path) as f:
        scan = f.scan([], filter=expr)
        assert scan.count() == expected.num_rows
        # only the comment column is decoded: the index decided the mode and flag conjuncts
        assert scan.stats.rows_decoded == table.num_rows
        assert scan.stats.rows_selected_index == 0
        plain = f.scan([], filter=expr, use_bitmap_index=False)
        assert plain.count() == expected.num_rows
        assert plain.stats.rows_decoded == 3 * table.num_rows
        # an index leaving many rows (1 in 7) only prunes: the whole filter is evaluated
        dense = f.scan([], filter=(col("mode") == "MAIL") & (col("comment") >= "c5"))
        assert dense.count() == int(selection_mask((col("mode") == "MAIL") & (col("comment") >= "c5"), table).sum())
        assert dense.stats.rows_decoded == 2 * table.num_rows


def test_empty_index_answer_prunes_the_block(tmp_path):
    n = 20_000
    flag = np.array(["A", "B"] * (n // 2))
    other = np.where(flag == "A", "x", "y")  # never ("A", "y"): each alone matches every block
    table = pa.table({"flag": flag, "other": other})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=5000, bitmap_indexes={"flag": "equality", "other": "equality"})
    with rcfmt.open(path) as f:
        scan = f.scan(filter=(col("flag") == "A") & (col("other") == "y"))
        assert scan.read().num_rows == 0
        assert scan.stats.blocks_pruned_index == 4 and scan.stats.pages_read == 0
        assert scan.stats.blocks_pruned_stats == 0


def test_auto_indexes_only_what_costs_less_than_the_pages(tmp_path):
    """"auto" keeps an index only where it takes at most AUTO_CHUNK_SHARE of the chunk's
    own pages: not for uniformly spread keys (they cost more than their codes), but for a
    few rare values in an otherwise constant column; what it keeps answers exactly."""
    from rcfmt.index.bitmap.build import AUTO_BUDGET, AUTO_CHUNK_SHARE

    rng = np.random.default_rng(3)
    n = 200_000
    table = _lineitem_like(n).append_column(
        "status", pa.array(np.where(rng.random(n) < 0.999, "OK", rng.choice(["E1", "E2", "E3"], n))))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=100_000)
    over = "auto: over half the bytes of the chunk's pages (a native scan of them costs less)"
    with rcfmt.open(path) as f:
        report = f.footer.bitmap_index["report"]
        for name in ("mode", "flag", "qty", "disc", "f"):
            assert {k: report[name][k] for k in ("kinds", "not_indexed")} == {"kinds": {}, "not_indexed": {over: 2}}
        # without an index, the file still knows a column's few values (from its dictionaries)
        assert report["mode"]["values"]["count"] == 7 and report["flag"]["values"]["count"] == 3
        assert report["f"]["values"]["count"] == 3  # 0.0 and -0.0 one value, NaN none
        assert list(report["comment"]["not_indexed"]) == [
            "auto: too many distinct values for an equality index, no narrow integer range"]
        assert report["status"]["kinds"] == {"equality": 2}
        status = f.footer.columns.index(next(c for c in f.footer.columns if c.name == "status"))
        for b in range(2):
            assert f.bitmap_span(b, status)[1] <= AUTO_CHUNK_SHARE * int(f.footer.chunks[status][b]["length"])
        assert f.footer.bitmap_index["length"] <= AUTO_BUDGET * f.size
        expr = col("status") == "E2"
        scan = f.scan([], filter=expr)
        assert scan.count() == int(selection_mask(expr, table).sum())
        assert scan.stats.rows_decoded == 0  # answered by the index
    rcfmt.write_table(table, path, bitmap_indexes=None)
    with rcfmt.open(path) as f:
        assert f.footer.bitmap_index == {"report": {}} and not f.bitmap_columns  # "written without"


@pytest.mark.parametrize("rows,values", [
    (5000, [7] * 5000),  # a single value
    (5000, [None] * 5000),  # all NULL
    (5000, list(range(5000))),  # all distinct
])
@pytest.mark.parametrize("kind", ["equality", "range", "bitsliced"])
def test_degenerate_blocks(tmp_path, rows, values, kind):
    table = pa.table({"x": pa.array(values, pa.int32())})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, bitmap_indexes={"x": kind})
    for expr in [col("x") == 7, col("x") != 7, col("x") < 2500, col("x").is_null(), col("x").isin([1, None]),
                 ~col("x").isin([1, 2]), col("x") >= -1]:
        expected = int(selection_mask(expr, table).sum())
        with rcfmt.open(path) as f:
            if kind == "range" and len(set(values)) > 1024:  # too many keys for a range index
                assert f.bitmap_entry(0, 0) is None
                continue
            assert f.bitmap_entry(0, 0) is not None
            scan = f.scan([], filter=expr)
            assert scan.count() == expected, expr
            assert scan.stats.rows_selected_index == expected


def test_struct_leaf_index(tmp_path):
    n = 8000
    rng = np.random.default_rng(1)
    s = pa.StructArray.from_arrays([pa.array(rng.integers(0, 4, n)), pa.array(rng.choice(["p", "q"], n))], ["a", "b"],
                                   mask=pa.array(rng.random(n) < 0.1))
    table = pa.table({"s": s, "k": np.arange(n)})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, bitmap_indexes={"s.a": "equality", "s.b": "equality"})
    expr = (col("s.a") == 2) & (col("s.b") != "p")
    with rcfmt.open(path) as f:
        got = f.scan(["k"], filter=expr).read()
    flat = table.column("s").combine_chunks()
    a, b = flat.field("a"), flat.field("b")
    valid = np.asarray(flat.is_valid())
    want = valid & (np.asarray(a.fill_null(-1)) == 2) & (np.asarray(b.fill_null("p")) != "p")
    assert got.column("k").to_pylist() == np.flatnonzero(want).tolist()


def test_options_are_checked(tmp_path):
    table = pa.table({"x": [1.5, 2.5], "s": ["a", "b"], "l": pa.array([[1], [2]])})
    with pytest.raises(InvalidOptionError, match="bitsliced"):
        rcfmt.write_table(table, tmp_path / "a.rcfmt", bitmap_indexes={"x": "bitsliced"})
    with pytest.raises(InvalidOptionError, match="kind"):
        rcfmt.write_table(table, tmp_path / "a.rcfmt", bitmap_indexes={"x": "btree"})
    with pytest.raises(SchemaError, match="unknown column"):
        rcfmt.write_table(table, tmp_path / "a.rcfmt", bitmap_indexes={"nope": "auto"})
    with pytest.raises(InvalidOptionError, match="list elements"):
        rcfmt.write_table(table, tmp_path / "a.rcfmt", bitmap_indexes={"l.item": "equality"})
    with pytest.raises(InvalidOptionError):
        rcfmt.write_table(table, tmp_path / "a.rcfmt", bitmap_indexes="all")
    assert not (tmp_path / "a.rcfmt").exists()


@pytest.fixture(scope="module")
def indexed_file(tmp_path_factory):
    """``(path, filter, rows it selects)``: a file with an equality, a bit-sliced and a
    range index, and a filter that reads every entry of its region."""
    table = _lineitem_like(1200, seed=3).select(["mode", "qty", "f"])
    path = tmp_path_factory.mktemp("bitmap") / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=600, bitmap_indexes={"mode": "equality", "qty": "bitsliced",
                                                                    "f": "range"})
    expr = (col("mode") == "AIR") | (col("qty") < 7) | (col("f") <= 1.5)  # every entry is read
    return path, expr, int(selection_mask(expr, table).sum())


@pytest.mark.parametrize("part", ["entries", "directory"])
def test_every_damaged_byte_of_the_region_is_a_checksum_error(indexed_file, tmp_path, part):
    """Each entry and the directory carry a crc32 (docs/FORMAT.md 6b) that a reader
    verifies before trusting them: damage to any byte of the region is a ChecksumError."""
    path, expr, expected = indexed_file
    raw = path.read_bytes()
    with rcfmt.open(path) as f:
        region = f.footer.bitmap_index
        assert f.scan([], filter=expr).count() == expected
    start, directory, end = region["offset"], region["directory_offset"], region["offset"] + region["length"]
    assert start < directory < end and 1000 < end - start < 20_000
    bad = tmp_path / "bad.rcfmt"
    for pos in range(start, directory) if part == "entries" else range(directory, end):
        damaged = bytearray(raw)
        damaged[pos] ^= 0x5A
        bad.write_bytes(bytes(damaged))
        with pytest.raises(ChecksumError):
            with rcfmt.open(bad) as f:
                f.scan([], filter=expr).count()


def test_old_readers_ignore_the_region(tmp_path):
    """The region is a side structure: a reader that ignores the footer key (as one
    written before it) reads the same rows."""
    table = _lineitem_like(10_000)
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, bitmap_indexes={"mode": "equality"})
    with rcfmt.open(path) as f:
        assert f.bitmap_columns
        region = f.footer.bitmap_index
        assert region["offset"] >= f.footer.bloom_region[0] + f.footer.bloom_region[1]
        assert region["offset"] >= f.footer.page_index_region[0] + f.footer.page_index_region[1]
        plain = f.scan(filter=col("mode") == "AIR", use_bitmap_index=False).read()
        indexed = f.scan(filter=col("mode") == "AIR").read()
        assert_same(indexed, plain)


def test_worked_examples_of_the_spec():
    """The bytes docs/FORMAT.md section 6b shows for each kind."""
    from rcfmt.encodings.base import ColumnValues
    from rcfmt.index.bitmap.build import propose

    valid = np.array([1, 1, 1, 0, 1, 1, 1, 1, 1, 1], bool)
    lt = ltype(pa.int32())
    nulls = "00 02000000 0800"
    expected = {
        "equality": "01 02 0200 0a000000 03000000 0c000000 01000000 02000000 03000000" + nulls
                    + "00 02000000 4200 00 02000000 9000",
        "range": "02 00 0000 0a000000 03000000 0c000000 01000000 02000000 03000000" + nulls
                 + "00 02000000 4200 00 02000000 d200 00 02000000 f703",
        "bitsliced": "03 00 0000 0a000000 02000000 18000000" + "01" + "00" * 15 + "01" + "00" * 7 + nulls
                     + "00 02000000 9000 00 02000000 2503",
    }
    for kind, hexes in expected.items():
        values = ColumnValues(np.array([3, 1, 3, 0, 2, 3, 1, 2, 3, 3], np.int32))
        entry = propose(values, valid, lt, kind, distinct=None, is_sorted=False).build()
        assert entry == bytes.fromhex(hexes), kind
    tens = ColumnValues(np.array([30, 10, 30, 0, 20, 30, 10, 20, 30, 30], np.int32))
    entry = propose(tens, valid, lt, "bitsliced", distinct=None, is_sorted=False).build()
    assert entry == bytes.fromhex(expected["bitsliced"].replace("01" + "00" * 15 + "01", "0a" + "00" * 15 + "0a"))


def test_cli_check_reads_every_bitmap_and_meta_reports_them(tmp_path):
    from rcfmt.cli import reports

    table = _lineitem_like(9000, seed=4).select(["mode", "qty"])
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=4500, bitmap_indexes={"mode": "equality", "qty": "bitsliced"})
    assert reports.check_file(path)["ok"]
    with rcfmt.open(path) as f:
        meta = reports.meta_report(f)
        offset, length = f.bitmap_span(1, 1)
    assert meta["bitmap_indexes"]["qty"]["kinds"] == {"bitsliced": 2}
    assert meta["blocks"][1]["chunks"][1]["bitmap_index_bytes"] == length > 0
    raw = bytearray(path.read_bytes())
    raw[offset + length - 1] ^= 0xFF  # the last bitmap of the last entry
    bad = tmp_path / "bad.rcfmt"
    bad.write_bytes(bytes(raw))
    result = reports.check_file(bad)
    assert not result["ok"] and "bitmap index" in result["error"] and "'qty'" in result["error"]


@pytest.mark.parametrize("forged", [
    {"report": []},
    {"report": {"x": []}},
    {"report": {"x": {"kinds": {"equality": "2"}}}},
    {"report": {"x": {"not_indexed": {"too many keys": True}}}},
    {"report": {"x": {"values": {"keys": "00"}}}},
    {"report": {"x": {"named": "btree"}}},
    {"report": {"x": {"values": {"count": "3", "keys": "00"}}}},
    {"offset": "a", "length": 0, "directory_offset": 0, "columns": [0]},
    {"offset": 8, "length": 4, "directory_offset": 8, "columns": [0, 0]},
    {"offset": 8, "length": 4, "directory_offset": 8, "columns": [True]},
    [],
])
def test_forged_footer_keys_are_corrupt_files(tmp_path, capsys, forged):
    """A footer whose ``bitmap_indexes`` key is malformed (checksums recomputed, as a
    forger would) is refused when opened, or for a malformed report when the report is
    read: a clear CorruptFileError, nothing else."""
    import json
    import struct
    import zlib

    from rcfmt.errors import CorruptFileError

    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"x": pa.array(np.arange(10))}), path, metadata={"pad": "p" * 400})
    raw = path.read_bytes()
    footer_len = struct.unpack_from("<Q", raw, len(raw) - 16)[0]
    footer = raw[len(raw) - 16 - footer_len : len(raw) - 16]
    json_len = struct.unpack_from("<I", footer, 0)[0]
    doc = json.loads(footer[4 : 4 + json_len])
    doc["bitmap_indexes"] = forged
    doc["metadata"] = []  # (room: the binary tables stay where the JSON says they are)
    text = json.dumps(doc).encode()
    assert len(text) <= json_len
    text = text + b" " * (json_len - len(text))
    new_footer = footer[:4] + text + footer[4 + json_len :]
    body = raw[: len(raw) - 16 - footer_len]
    bad = tmp_path / "bad.rcfmt"
    bad.write_bytes(body + new_footer + struct.pack("<QI4s", len(new_footer), zlib.crc32(new_footer), b"RCFM"))
    if isinstance(forged, dict) and set(forged) == {"report"}:
        # the writer's report is informative: reading data never depends on it, so it is
        # checked when a tool reads it (FileMetaData.bitmap_report), not at every open
        with rcfmt.open(bad) as f:
            assert f.scan([], filter=col("x") == 3).count() == 1
            with pytest.raises(CorruptFileError, match="report is malformed"):
                f.footer.bitmap_report
        from rcfmt.cli import main

        assert main(["meta", "--json", str(bad)]) == 1
        assert "report is malformed" in capsys.readouterr().err
        return
    with pytest.raises(CorruptFileError):
        with rcfmt.open(bad) as f:
            f.scan([], filter=col("x") == 3).count()


@settings(max_examples=examples(300), deadline=None)
@given(st.data())
def test_native_equality_containers_match_the_container_rules(data):
    """The writer's native equality containers (two passes over the key codes) are, key
    by key, what encode_mask (up to 64 keys) and encode_bitmap (beyond) give."""
    from rcfmt._native.bitmaps import equality_containers
    from rcfmt.index.bitmap.layout import encode_bitmap, encode_mask

    keys = data.draw(st.integers(1, 80))
    rows = data.draw(st.integers(0, 300))
    run = data.draw(st.sampled_from([1, 3, 40]))  # random, short runs, long runs
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    codes = np.repeat(rng.integers(-1, keys, rows // run + 1), run)[:rows].astype(np.int64)
    counts = np.bincount(codes[codes >= 0], minlength=keys)
    implied = data.draw(st.sampled_from([-1, int(np.argmax(counts))]))
    for mask_rule in (True, False):
        out, offsets = equality_containers(codes, keys, implied, mask_rule)
        got = [bytes(out[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
        want = [encode_mask(codes == k) if mask_rule else encode_bitmap(np.flatnonzero(codes == k), rows)
                for k in range(keys) if k != implied]
        assert got == want


@pytest.mark.parametrize("offset, length", [(2**64 - 1, 112), (2**64 - 50, 100), (1000 - 1, 2), (999, 2**32 - 1),
                                            (10, 5)])
def test_a_directory_entry_outside_its_region_is_refused_without_wrapping(offset, length):
    """An entry whose offset plus length passes 2**64 wraps around in 64-bit arithmetic
    and would seem to lie inside the region (a fuzzed file made one, which then reached
    the reads): the check must not wrap. Region [100, 1000)."""
    from rcfmt.index.bitmap.layout import DIRECTORY_RECORD, encode_directory, parse_directory

    records = np.zeros((1, 2), DIRECTORY_RECORD)
    records[0, 0] = (100, 50, 0)
    records[0, 1] = (offset, length, 0)
    with pytest.raises(CorruptFileError, match="outside the bitmap index region"):
        parse_directory(encode_directory(records.reshape(-1)), 1, 2, (100, 1000), True)
    records[0, 1] = (950, 50, 0)  # ends at the region's end: fine
    assert parse_directory(encode_directory(records.reshape(-1)), 1, 2, (100, 1000), True).shape == (1, 2)
