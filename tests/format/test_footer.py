"""The footer as a reader parses it: records longer than this version's (a newer minor
version's appended fields), and the parse caches that files of one dataset share."""
from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt.format import footer as footer_mod


def _footer_doc(raw: bytes):
    footer_len = struct.unpack_from("<Q", raw, len(raw) - 16)[0]
    footer = raw[len(raw) - 16 - footer_len : len(raw) - 16]
    json_len = struct.unpack_from("<I", footer, 0)[0]
    return raw[: len(raw) - 16 - footer_len], footer, json.loads(footer[4 : 4 + json_len])


def _forged(path, edit):
    """A copy of the file at ``path`` (written with ``metadata={"pad": "p" * 200}``)
    whose footer JSON ``edit(doc)`` changed, its checksum recomputed as a forger would."""
    body, footer, doc = _footer_doc(path.read_bytes())
    json_len = struct.unpack_from("<I", footer, 0)[0]
    edit(doc)
    doc["metadata"] = []
    text = json.dumps(doc).encode()
    assert len(text) <= json_len
    new_footer = footer[:4] + text + b" " * (json_len - len(text)) + footer[4 + json_len :]
    bad = path.with_name("forged.rcfmt")
    bad.write_bytes(body + new_footer + struct.pack("<QI4s", len(new_footer), zlib.crc32(new_footer), b"RCFM"))
    return bad


def _with_longer_records(raw: bytes, extra: int) -> bytes:
    """The file with every block and chunk record ``extra`` bytes longer (filled with
    0xEE, as fields this reader does not know), the JSON pointing at the new tables."""
    body, footer, doc = _footer_doc(raw)
    nblocks = doc["blocks"]["count"]
    old = [(doc["blocks"]["offset"], doc["blocks"]["record_size"])]
    old += [(e["offset"], e["record_size"]) for e in doc["chunks"]]
    tables = []
    for offset, size in old:
        records = [footer[offset + i * size : offset + (i + 1) * size] + b"\xee" * extra for i in range(nblocks)]
        tables.append(b"".join(records))
    start = 4 + len(json.dumps(doc)) + 400  # room for the offsets' digits
    start = (start + 7) // 8 * 8
    entries = [doc["blocks"], *doc["chunks"]]
    pos = start
    for entry, table in zip(entries, tables):
        entry["offset"], entry["record_size"] = pos, entry["record_size"] + extra
        pos += len(table)
    text = json.dumps(doc).encode()
    text += b" " * (start - 4 - len(text))
    new_footer = struct.pack("<I", len(text)) + text + b"".join(tables)
    return body + new_footer + struct.pack("<QI4s", len(new_footer), zlib.crc32(new_footer), b"RCFM")


def test_longer_records_of_a_newer_minor_version_are_read(tmp_path):
    """Records longer than this version's are viewed with their unknown tail skipped
    (FORMAT.md's evolution rules): the file reads, scans and prunes as before."""
    table = pa.table({"x": pa.array(np.arange(5000, dtype=np.int64)),
                      "s": pa.array([f"v{i % 17}" if i % 5 else None for i in range(5000)])})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=1000, page_rows=250)
    longer = tmp_path / "longer.rcfmt"
    longer.write_bytes(_with_longer_records(path.read_bytes(), 24))
    with rcfmt.open(path) as f, rcfmt.open(longer) as g:
        assert g.footer.blocks.dtype.itemsize == f.footer.blocks.dtype.itemsize + 24
        for name in f.footer.blocks.dtype.names:
            assert (g.footer.blocks[name] == f.footer.blocks[name]).all()
        for a, b in zip(f.footer.chunks, g.footer.chunks):
            for name in a.dtype.names:
                assert (a[name] == b[name]).all(), name
        assert g.read().equals(table)
        scan = g.scan(filter=rcfmt.col("x") >= 4200)
        assert scan.read().equals(table.slice(4200))
        assert scan.stats.blocks_pruned_stats == 4 and scan.stats.rows_selected == 800


def test_files_of_one_schema_share_its_parse_and_keep_their_own_numbers(tmp_path):
    """Two files with one schema share the parsed schema (a dataset's second file costs
    no schema work) but keep their own rows, blocks and metadata; a file whose metadata
    differs gets its own."""
    a, b, c = tmp_path / "a.rcfmt", tmp_path / "b.rcfmt", tmp_path / "c.rcfmt"
    rcfmt.write_table(pa.table({"x": np.arange(10), "y": np.arange(10.0)}), a, metadata={"k": "1"})
    rcfmt.write_table(pa.table({"x": np.arange(3000), "y": np.arange(3000.0)}), b, metadata={"k": "1"},
                      block_rows=1000)
    rcfmt.write_table(pa.table({"x": np.arange(7), "y": np.arange(7.0)}), c, metadata={"k": "2"})
    with rcfmt.open(a) as fa, rcfmt.open(b) as fb, rcfmt.open(c) as fc:
        assert fa.schema is fb.schema  # one parse of the schema part
        assert fa.schema is not fc.schema and fc.metadata == {"k": b"2"}
        assert (fa.num_rows, fa.num_blocks, fb.num_rows, fb.num_blocks, fc.num_rows) == (10, 1, 3000, 3, 7)
        assert fb.read()["x"].to_pylist() == list(range(3000))
        assert fa.metadata == fb.metadata == {"k": b"1"}
        fa.footer.metadata["k"] = b"changed"  # each open's footer is its own to change
        assert fb.metadata == {"k": b"1"}


@pytest.mark.parametrize("entry", [{"kinds": {"equality": True}}, {"kinds": None}, {"not_indexed": None},
                                   {"not_indexed": {"why": 1.5}}, {"named": None}, {"values": []}])
def test_malformed_report_fails_only_the_tool_that_reads_it(tmp_path, capsys, entry):
    """The bitmap-index report is checked when read: a file whose report is malformed
    opens and reads; ``bitmap_report`` raises CorruptFileError, and ``rcfmt meta``
    says so (no traceback)."""
    from rcfmt.cli import main
    from rcfmt.errors import CorruptFileError

    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"x": np.arange(10)}), path, metadata={"pad": "p" * 200})
    bad = _forged(path, lambda doc: doc.__setitem__("bitmap_indexes", {"report": {"x": entry}}))
    with rcfmt.open(bad) as f:
        assert f.read()["x"].to_pylist() == list(range(10))
        try:
            f.footer.bitmap_report
        except CorruptFileError as exc:
            assert "report is malformed" in str(exc)
        else:
            raise AssertionError("a malformed report was returned")
    assert main(["meta", "--json", str(bad)]) == 1
    assert "report is malformed" in capsys.readouterr().err
    assert footer_mod.FileMetaData([], np.zeros(0, footer_mod.BLOCK_RECORD), []).bitmap_report == {}


@pytest.mark.parametrize("report", [[], "x", {"k": None}, {"k": {"filters": "2", "estimated_distinct": []}},
                                    {"k": {"filters": 1, "estimated_distinct": {}}}])
def test_a_malformed_bloom_report_is_ignored(tmp_path, report):
    """The bloom report is informational: a forged footer whose report is malformed opens,
    reads and prunes with its filters; the report reads as empty."""
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"k": np.arange(0, 20_000, 2)}), path, block_rows=5_000,
                      bloom_filter_columns=["k"], metadata={"pad": "p" * 200})
    assert _footer_doc(path.read_bytes())[2]["bloom_filters"]["report"]["k"]["filters"] == 2
    bad = _forged(path, lambda doc: doc["bloom_filters"].__setitem__("report", report))
    with rcfmt.open(bad) as f:
        assert f.footer.bloom_report == {}
        assert f.read()["k"].to_pylist() == list(range(0, 20_000, 2))
        absent = f.scan(filter=rcfmt.col("k") == 2_001)
        assert absent.read().num_rows == 0 and absent.stats.blocks_pruned_bloom >= 1
