"""The split encodings (FORMAT.md §7.7 BYTE_SPLIT, §7.8 ALP_SPLIT) and a dictionary page
compressed apart from its raw data pages (§4.2) read back exactly from a file written
once.

``tests/data/golden_split.rcfmt`` was written by ``tests/data/make_golden_split.py``
(session 26); its expected content is ``golden_split.arrow``. NEVER REGENERATE THEM: if
this test fails, the reader changed how it reads these layouts -- fix the reader.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

import rcfmt
import strategies as S

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "golden_split.rcfmt"
EXPECTED = DATA / "golden_split.arrow"
GOLDEN_SHA256 = "164e1fee956262a8839662d22fa24d1f3ed1a57bbee1394ba301e323d5a677bb"
EXPECTED_SHA256 = "0a2d66fbfda1f3b24b828ab189fc988038ff21ae254ed73586bcc06fe0201464"
BYTE_SPLIT, ALP_SPLIT, DICTIONARY = 7, 8, 1
NONE, ZSTD = 0, 1


def _expected():
    return S.ipc_table(EXPECTED)


def test_files_are_the_ones_written_once():
    S.assert_written_once((GOLDEN, GOLDEN_SHA256), (EXPECTED, EXPECTED_SHA256))


def test_reads_back_exactly():
    want = _expected()
    got = rcfmt.read_table(GOLDEN)
    got.validate(full=True)
    S.assert_tables_identical(got, want)
    with rcfmt.open(GOLDEN) as f:
        for b in range(f.num_blocks):
            first, rows = int(f.footer.blocks[b]["first_row"]), int(f.footer.blocks[b]["row_count"])
            S.assert_tables_identical(f.read_block(b), want.slice(first, rows))


def test_filters_on_the_split_columns_select_pyarrows_rows():
    want = _expected()
    for flt, arrow in [(rcfmt.col("hhmm") >= 1200, pc.greater_equal(want["hhmm"], 1200)),
                       (rcfmt.col("delay") < 0, pc.less(want["delay"], 0)),
                       (rcfmt.col("u64") == (1 << 63) + 7, pc.equal(want["u64"], pa.scalar((1 << 63) + 7, pa.uint64()))),
                       (rcfmt.col("tail") == "aircraft registration N0007XY",
                        pc.equal(want["tail"], "aircraft registration N0007XY"))]:
        S.assert_tables_identical(rcfmt.read_table(GOLDEN, filter=flt), want.filter(pc.fill_null(arrow, False)))


def test_encodings_and_codecs_are_pinned():
    raw = GOLDEN.read_bytes()
    with rcfmt.open(GOLDEN) as f:
        enc = {c.name: f.footer.chunks[i]["encoding"].tolist() for i, c in enumerate(f.footer.columns)}
        for name in ("hhmm", "wide", "u64", "day", "ts", "f32"):
            assert enc[name] == [BYTE_SPLIT] * 3, name
        assert enc["delay"] == enc["delay32"] == [ALP_SPLIT] * 3
        tail = f.footer.chunks[f.schema.get_field_index("tail")]
        assert tail["encoding"].tolist() == [DICTIONARY] * 3 and tail["compression"].tolist() == [NONE] * 3
        for offset, dict_len in zip(tail["offset"].tolist(), tail["dictionary_length"].tolist()):
            assert raw[offset] == 1 and raw[offset + 2] == ZSTD  # the dictionary page, compressed on its own
            assert raw[offset + dict_len] == 0 and raw[offset + dict_len + 2] == NONE  # a data page, raw
        chunk = f.footer.chunks[0][0]  # the first page header of "hhmm" names its encoding
        assert raw[int(chunk["offset"]) + 1] == BYTE_SPLIT
