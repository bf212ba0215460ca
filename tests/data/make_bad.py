"""Generate the hand-forged corrupt files in ``tests/data/bad/`` (run once, commit them).

    python tests/data/make_bad.py           # writes tests/data/bad/*.rcfmt
    python tests/data/make_bad.py --check   # regenerates in memory, reports differences

Every file is a small valid rcfmt v1 file (see :func:`base_file`) with exactly one
defect, and *with every checksum recomputed*, so the defect has to be caught by
validation, not by a CRC. Each file must have a named test in
``tests/file/test_corruption.py`` (a meta-test enforces it).

The forging helpers (:func:`split_file`, :func:`build_file`, :func:`patch_page`,
:func:`pages_of`) are also imported by the tests. They know the v1 byte layout:

- file = ``"RCFM" u32 version | pages ... | page-index region | footer | tail``;
- tail = ``u64 footer_length | u32 crc32(footer) | "RCFM"``;
- footer = ``u32 json_length | JSON | zero padding to 8 | blocks table | chunk tables``
  (table offsets in the JSON are relative to the footer start);
- page = 32-byte header ``<BBBBIIIIIII`` (type, encoding, compression, flags, rows,
  values, nulls, stored size, uncompressed size, crc32(stored body),
  crc32(first 28 header bytes)) followed by the stored body.
"""
from __future__ import annotations

import copy
import json
import struct
import sys
import zlib
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
BAD = HERE / "bad"
sys.path.insert(0, str(HERE.parent.parent))

import rcfmt  # noqa: E402
from rcfmt.format.layout import BLOCK_RECORD, chunk_record, page_record  # noqa: E402

TAIL = struct.Struct("<QI4s")
PAGE_HEADER = struct.Struct("<BBBBIIIIIII")
HEADER_FIELDS = ("page_type", "encoding", "compression", "flags", "row_count", "value_count", "null_count",
                 "compressed_size", "uncompressed_size", "body_crc", "header_crc")


# ============================================================================ forging helpers
class Parts:
    """A file split into what precedes the footer, the footer's JSON and its tables."""

    def __init__(self, body: bytes, doc: dict, blocks: np.ndarray, chunks: list[np.ndarray]):
        self.body, self.doc, self.blocks, self.chunks = body, doc, blocks, chunks

    def column(self, name: str) -> int:
        return [c["name"] for c in self.doc["schema"]].index(name)


def split_file(data: bytes) -> Parts:
    footer_len, _crc, magic = TAIL.unpack_from(data, len(data) - TAIL.size)
    assert magic == b"RCFM"
    start = len(data) - TAIL.size - footer_len
    footer = data[start: len(data) - TAIL.size]
    (json_len,) = struct.unpack_from("<I", footer, 0)
    doc = json.loads(footer[4: 4 + json_len])
    b = doc["blocks"]
    blocks = np.frombuffer(footer, BLOCK_RECORD, count=b["count"], offset=b["offset"]).copy()
    chunks = []
    for entry, col in zip(doc["chunks"], doc["schema"]):
        dtype = chunk_record(col["stat_width"])
        chunks.append(np.frombuffer(footer, dtype, count=b["count"], offset=entry["offset"]).copy())
    return Parts(data[:start], doc, blocks, chunks)


def build_file(parts: Parts, *, fix_offsets: bool = True, json_text: bytes | None = None) -> bytes:
    """Reassemble a file; table offsets are recomputed unless ``fix_offsets`` is False.
    ``json_text`` replaces the serialized JSON verbatim (for malformed JSON)."""
    doc = copy.deepcopy(parts.doc)
    tables = [parts.blocks.tobytes(), *(c.tobytes() for c in parts.chunks)]
    text = json_text
    for _ in range(5):
        if json_text is None:
            text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        start = (4 + len(text) + 7) // 8 * 8
        if not fix_offsets or json_text is not None:
            break
        pos, changed = start, False
        for entry, table in zip([doc["blocks"], *doc["chunks"]], tables):
            changed |= entry["offset"] != pos
            entry["offset"] = pos
            pos += len(table)
        if not changed:
            break
    footer = struct.pack("<I", len(text)) + text + b"\0" * (start - 4 - len(text)) + b"".join(tables)
    return parts.body + footer + TAIL.pack(len(footer), zlib.crc32(footer), b"RCFM")


def retail(data: bytes) -> bytes:
    """Recompute the footer checksum in the tail (after editing footer bytes in place)."""
    footer_len, _crc, magic = TAIL.unpack_from(data, len(data) - TAIL.size)
    footer = data[len(data) - TAIL.size - footer_len: len(data) - TAIL.size]
    return data[: len(data) - TAIL.size] + TAIL.pack(footer_len, zlib.crc32(footer), magic)


def read_header(data: bytes, offset: int) -> dict:
    return dict(zip(HEADER_FIELDS, PAGE_HEADER.unpack_from(data, offset)))


def patch_page(data: bytes, offset: int, stored_body: bytes | None = None, **fields) -> bytes:
    """Rewrite the page at ``offset``: header ``fields`` and/or a stored body of the same
    length; both checksums are recomputed so the page passes CRC checks."""
    h = read_header(data, offset)
    start = offset + PAGE_HEADER.size
    old = data[start: start + h["compressed_size"]]
    body = old if stored_body is None else stored_body
    assert len(body) == len(old), "patch_page keeps the page length"
    h.update(fields)
    h["body_crc"] = zlib.crc32(body)
    head = PAGE_HEADER.pack(*[h[k] for k in HEADER_FIELDS[:-1]], 0)[:-4]
    head += zlib.crc32(head).to_bytes(4, "little")
    return data[:offset] + head + body + data[start + len(old):]


def pages_of(data: bytes, path_hint: Path, column: str, block: int) -> list[int]:
    """File offsets of the data pages of one chunk (from its page index)."""
    tmp = path_hint.with_suffix(".probe")
    tmp.write_bytes(data)
    try:
        with rcfmt.open(tmp) as f:
            entries = f.page_index(block, f.column_index(column))
            return [int(o) for o in entries["offset"]]
    finally:
        tmp.unlink()


def patch_page_index(parts: Parts, column: str, block: int, edit) -> Parts:
    """Apply ``edit(entries)`` to one chunk's page-index records in place; fix its CRC."""
    c = parts.column(column)
    rec = parts.chunks[c][block]
    off, length = int(rec["page_index_offset"]), int(rec["page_index_length"])
    dtype = page_record(parts.doc["schema"][c]["stat_width"])
    entries = np.frombuffer(parts.body, dtype, count=length // dtype.itemsize, offset=off).copy()
    edit(entries)
    raw = entries.tobytes()
    parts.body = parts.body[:off] + raw + parts.body[off + length:]
    rec["page_index_crc"] = zlib.crc32(raw)
    return parts


# ============================================================================ the base files
BASE_SCHEMA = pa.schema([
    pa.field("i", pa.int64(), nullable=False),  # PLAIN
    pa.field("s", pa.string()),  # PLAIN, with nulls
    pa.field("d", pa.string()),  # DICTIONARY
    pa.field("r", pa.int32()),  # RLE
    pa.field("x", pa.decimal128(5, 2)),  # PLAIN
])


def base_table() -> pa.Table:
    return pa.table({
        "i": pa.array(range(100, 112), pa.int64()),
        "s": ["alpha", "beta", None, "delta", "epsilon", "zeta", "eta", None, "iota", "kappa", "lambda", "mu"],
        "d": ["red", "green", "red", "blue", "red", "green", "blue", "blue", "red", "red", "green", "red"],
        "r": pa.array([7, 7, 7, 9, 9, 9, 1, 1, 1, 1, 2, 2], pa.int32()),
        "x": pa.array([Decimal(f"{k}.25") for k in range(-6, 6)], pa.decimal128(5, 2)),
    }, schema=BASE_SCHEMA)


BASE_OPTIONS = dict(block_rows=6, page_rows=3, compression="none", stats_truncate=4, bloom_filter_columns=["i"],
                    encoding={"i": "plain", "s": "plain", "d": "dictionary", "r": "rle", "x": "plain"})


def base_file(work: Path, **overrides) -> bytes:
    path = work / "base.rcfmt"
    rcfmt.write_table(base_table(), path, **{**BASE_OPTIONS, **overrides})
    return path.read_bytes()


# ============================================================================ the defects
FORGERS = {}


def forger(name: str):
    def register(fn):
        FORGERS[name] = fn
        return fn
    return register


def _doc_edit(data, edit, **kw):
    parts = split_file(data)
    edit(parts)
    return build_file(parts, **kw)


# ---- footer JSON: versions and features
@forger("newer_footer_version.rcfmt")
def _(data, work):
    return _doc_edit(data, lambda p: p.doc.update(format_version=2))


@forger("newer_header_version.rcfmt")
def _(data, work):
    return data[:4] + struct.pack("<I", 2) + data[8:]


@forger("unknown_required_feature.rcfmt")
def _(data, work):
    return _doc_edit(data, lambda p: p.doc.update(required_features=["zorder-v9"]))


@forger("unknown_column_type.rcfmt")
def _(data, work):
    return _doc_edit(data, lambda p: p.doc["schema"][3].update(type="list"))


# ---- footer JSON: malformed
@forger("footer_json_not_an_object.rcfmt")
def _(data, work):
    return build_file(split_file(data), json_text=b"[1, 2, 3]")


@forger("footer_json_truncated.rcfmt")
def _(data, work):
    parts = split_file(data)
    text = json.dumps(parts.doc).encode()
    return build_file(parts, json_text=text[: len(text) // 2])


@forger("footer_json_length_past_footer.rcfmt")
def _(data, work):
    parts = split_file(data)
    out = bytearray(build_file(parts))
    footer_len = TAIL.unpack_from(out, len(out) - TAIL.size)[0]
    start = len(out) - TAIL.size - footer_len
    out[start: start + 4] = struct.pack("<I", footer_len + 100)
    return retail(bytes(out))


@forger("footer_json_deeply_nested.rcfmt")
def _(data, work):
    return build_file(split_file(data), json_text=b"[" * 3000 + b"]" * 3000)


@forger("footer_json_infinite_number.rcfmt")
def _(data, work):
    parts = split_file(data)
    text = json.dumps(parts.doc, separators=(",", ":")).encode()
    text = text.replace(b'"stat_width":8', b'"stat_width":1e999', 1)
    return build_file(parts, json_text=text)


@forger("duplicate_column_name.rcfmt")
def _(data, work):
    return _doc_edit(data, lambda p: p.doc["schema"][1].update(name="i"))


@forger("stat_width_mismatch.rcfmt")
def _(data, work):
    def edit(p):
        p.doc["schema"][0]["stat_width"] = 4  # int64 needs 8
        p.chunks[0] = np.zeros(len(p.chunks[0]), chunk_record(4))
    return _doc_edit(data, edit)


# ---- footer: absurd counts
@forger("absurd_block_count.rcfmt")
def _(data, work):
    return _doc_edit(data, lambda p: p.doc["blocks"].update(count=10**15))


@forger("absurd_num_rows.rcfmt")
def _(data, work):
    return _doc_edit(data, lambda p: p.doc.update(num_rows=2**70))


@forger("absurd_page_count.rcfmt")
def _(data, work):
    def edit(p):
        p.chunks[p.column("r")][1]["page_count"] = 2**32 - 1
    return _doc_edit(data, edit)


@forger("absurd_null_count.rcfmt")
def _(data, work):
    def edit(p):
        p.chunks[p.column("s")][0]["null_count"] = 10**12
    return _doc_edit(data, edit)


@forger("absurd_block_rows.rcfmt")
def _(data, work):
    def edit(p):  # consistent footer, but the pages hold 6 rows
        p.blocks["row_count"][1] = 2**40
        p.doc["num_rows"] = 6 + 2**40
    return _doc_edit(data, edit)


@forger("block_rows_overflow.rcfmt")
def _(data, work):
    def edit(p):  # first rows that wrap around 2**64 still "follow" the row counts mod 2**64
        p.blocks["row_count"][0] = 2**64 - 1
        p.blocks["first_row"][1] = 2**64 - 1
    return _doc_edit(data, edit)


# ---- footer: locations
@forger("footer_length_past_start.rcfmt")
def _(data, work):
    footer_len, crc, magic = TAIL.unpack_from(data, len(data) - TAIL.size)
    return data[: len(data) - TAIL.size] + TAIL.pack(len(data) * 4, crc, magic)


@forger("block_offset_past_eof.rcfmt")
def _(data, work):
    def edit(p):
        p.blocks["offset"][1] = 10**9
    return _doc_edit(data, edit)


@forger("chunk_offset_past_eof.rcfmt")
def _(data, work):
    def edit(p):
        p.chunks[p.column("d")][1]["offset"] = 10**9
    return _doc_edit(data, edit)


@forger("chunk_length_wraps.rcfmt")
def _(data, work):
    def edit(p):
        p.chunks[p.column("s")][0]["length"] = 2**64 - 8
    return _doc_edit(data, edit)


@forger("table_offset_past_footer.rcfmt")
def _(data, work):
    parts = split_file(data)
    parts.doc["blocks"]["offset"] = 10**6
    return build_file(parts, fix_offsets=False)


@forger("negative_table_offset.rcfmt")
def _(data, work):
    parts = split_file(data)
    parts.doc["chunks"][2]["offset"] = -8
    return build_file(parts, fix_offsets=False)


@forger("negative_record_size.rcfmt")
def _(data, work):
    return _doc_edit(data, lambda p: p.doc["blocks"].update(record_size=-32))


@forger("negative_block_count.rcfmt")
def _(data, work):
    return _doc_edit(data, lambda p: p.doc["blocks"].update(count=-1))


@forger("negative_page_index_length.rcfmt")
def _(data, work):
    return _doc_edit(data, lambda p: p.doc["page_index"].update(length=-40))


@forger("page_index_region_past_eof.rcfmt")
def _(data, work):
    return _doc_edit(data, lambda p: p.doc["page_index"].update(offset=10**9))


@forger("dictionary_longer_than_chunk.rcfmt")
def _(data, work):
    def edit(p):
        rec = p.chunks[p.column("d")][0]
        rec["dictionary_length"] = int(rec["length"]) + 1
    return _doc_edit(data, edit)


# ---- page index
@forger("page_index_first_row_gap.rcfmt")
def _(data, work):
    parts = patch_page_index(split_file(data), "i", 1, lambda e: e["first_row"].__setitem__(1, 4))
    return build_file(parts)


@forger("page_index_offset_wraps.rcfmt")
def _(data, work):
    def edit(e):  # offset + length wraps around 2**64 to a position inside the chunk
        e["offset"][1] = 2**64 - 16
        e["length"][1] = int(e["length"][1]) + 16 + int(e["offset"][0])
    return build_file(patch_page_index(split_file(data), "i", 0, edit))


@forger("page_index_nulls_over_rows.rcfmt")
def _(data, work):  # more NULLs than the page's rows: a scan would prune the page by them
    return build_file(patch_page_index(split_file(data), "s", 0, lambda e: e["null_count"].__setitem__(1, 5000)))


@forger("page_index_length_mismatch.rcfmt")
def _(data, work):
    def edit(p):
        p.chunks[p.column("r")][0]["page_index_length"] -= 8
    return _doc_edit(data, edit)


# ---- chunks
@forger("more_pages_than_recorded.rcfmt")
def _(data, work):
    def edit(p):
        rec = p.chunks[p.column("i")][1]
        rec["page_count"] = 1
        rec["page_index_length"] = page_record(8).itemsize  # keep the page index consistent
    return _doc_edit(data, edit)


@forger("unknown_encoding_id.rcfmt")
def _(data, work):
    """A chunk (footer and pages agree) in an encoding from the future."""
    parts = split_file(data)
    parts.chunks[parts.column("i")][0]["encoding"] = 99
    data = build_file(parts)
    for off in pages_of(data, work / "x", "i", 0):
        data = patch_page(data, off, encoding=99)
    return data


@forger("encoding_cannot_hold_type.rcfmt")
def _(data, work):
    """An int64 chunk (footer and pages agree) claiming ALP, a float-only encoding."""
    offsets = pages_of(data, work / "x", "i", 0)  # (the forged file no longer opens)
    for off in offsets:
        data = patch_page(data, off, encoding=5)
    parts = split_file(data)
    parts.chunks[parts.column("i")][0]["encoding"] = 5
    return build_file(parts)


@forger("block_rows_with_agreeing_page_counts.rcfmt")
def _(data, work):
    def edit(p):  # 2^40 rows, and page counts raised to hold them: only the bytes disagree
        rows = 2**40
        p.doc["num_rows"] += rows - int(p.blocks["row_count"][1])
        p.blocks["row_count"][1] = rows
        for chunk in p.chunks:
            chunk[1]["page_count"] = rows >> 20
    return _doc_edit(data, edit)


@forger("rows_without_columns.rcfmt")
def _(data, work):
    def edit(p):  # blocks with rows, no columns to hold them
        p.doc["schema"], p.doc["chunks"], p.chunks = [], [], []
    return _doc_edit(data, edit)


@forger("page_encoding_differs_from_chunk.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "r", 1)[1]
    return patch_page(data, off, encoding=0)


@forger("dictionary_size_mismatch.rcfmt")
def _(data, work):
    def edit(p):
        p.chunks[p.column("d")][1]["dictionary_size"] += 1
    return _doc_edit(data, edit)


@forger("nulls_in_non_nullable_column.rcfmt")
def _(data, work):
    return _doc_edit(data, lambda p: p.doc["schema"][1].update(nullable=False))


# ---- page headers
@forger("page_rows_larger_than_page.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "i", 1)[0]
    return patch_page(data, off, row_count=13, value_count=13)


@forger("page_validity_flag_without_nulls.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "i", 0)[1]
    return patch_page(data, off, flags=1)


@forger("page_nulls_without_validity_flag.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "s", 0)[0]  # rows 0..2, one null
    assert read_header(data, off)["null_count"] == 1
    return patch_page(data, off, flags=0)


@forger("page_unknown_type.rcfmt")
def _(data, work):
    return patch_page(data, pages_of(data, work / "x", "r", 0)[0], page_type=7)


@forger("page_unknown_flags.rcfmt")
def _(data, work):
    return patch_page(data, pages_of(data, work / "x", "r", 0)[0], flags=0x80)


@forger("page_unknown_codec.rcfmt")
def _(data, work):
    return patch_page(data, pages_of(data, work / "x", "i", 1)[1], compression=9)


@forger("page_body_past_chunk.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "i", 1)[1]
    h = read_header(data, off)
    # a larger stored size in a header whose checksum matches: patch_page keeps the body,
    # so rewrite the header by hand
    h["compressed_size"] += 1000
    head = PAGE_HEADER.pack(*[h[k] for k in HEADER_FIELDS[:-1]], 0)[:-4]
    head += zlib.crc32(head).to_bytes(4, "little")
    return data[:off] + head + data[off + 32:]


@forger("page_uncompressed_size_mismatch.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "i", 0)[0]
    h = read_header(data, off)
    return patch_page(data, off, uncompressed_size=h["uncompressed_size"] + 8)


@forger("validity_bitmap_disagrees_with_null_count.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "s", 0)[0]  # rows 0..2, row 2 null: bitmap 0b011
    body = bytearray(data[off + 32: off + 32 + read_header(data, off)["compressed_size"]])
    body[0] = 0b001  # two nulls, header says one
    return patch_page(data, off, bytes(body))


# ---- page bodies (encodings)
def _body(data: bytes, off: int) -> bytearray:
    h = read_header(data, off)
    return bytearray(data[off + 32: off + 32 + h["compressed_size"]])


@forger("plain_offsets_not_monotonic.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "s", 1)[0]  # rows 6..8 of block 1: "eta", None, "iota"
    body = _body(data, off)
    h = read_header(data, off)
    start = (h["row_count"] + 7) // 8 if h["flags"] & 1 else 0
    offsets = np.frombuffer(bytes(body[start: start + 4 * (h["row_count"] + 1)]), "<i4").copy()
    offsets[1] = offsets[-1] + 5  # larger than the next offset
    body[start: start + len(offsets) * 4] = offsets.tobytes()
    return patch_page(data, off, bytes(body))


@forger("plain_offsets_past_data.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "s", 0)[1]  # rows 3..5, no nulls
    body = _body(data, off)
    offsets = np.frombuffer(bytes(body[:16]), "<i4").copy()
    offsets[3] += 1000
    body[:16] = offsets.tobytes()
    return patch_page(data, off, bytes(body))


@forger("invalid_utf8_in_string.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "s", 0)[1]  # "delta", "epsilon", "zeta"
    body = _body(data, off)
    pos = bytes(body).index(b"epsilon")
    body[pos] = 0xFF
    return patch_page(data, off, bytes(body))


@forger("decimal_beyond_precision.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "x", 1)[0]
    body = _body(data, off)
    body[:16] = (10**7).to_bytes(16, "little", signed=True)  # 100000.00 needs precision 7
    return patch_page(data, off, bytes(body))


@forger("dictionary_code_out_of_range.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "d", 1)[1]
    body = _body(data, off)
    assert body[0] == 1  # one-byte codes
    body[2] = 200  # the dictionary holds 3 values
    return patch_page(data, off, bytes(body))


@forger("dictionary_unknown_code_width.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "d", 0)[0]
    body = _body(data, off)
    body[0] = 3
    return patch_page(data, off, bytes(body))


@forger("rle_lengths_do_not_add_up.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "r", 0)[0]  # [7, 7, 7]: one run of 3
    body = _body(data, off)
    assert body[:8] == b"\x01\0\0\0\x03\0\0\0"
    body[4] = 4
    return patch_page(data, off, bytes(body))


@forger("rle_zero_length_run.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "r", 1)[1]  # [1, 2, 2]: runs 1, 2
    body = _body(data, off)
    assert body[:12] == b"\x02\0\0\0\x01\0\0\0\x02\0\0\0"
    body[4:12] = b"\x00\0\0\0\x03\0\0\0"
    return patch_page(data, off, bytes(body))


@forger("rle_run_count_absurd.rcfmt")
def _(data, work):
    off = pages_of(data, work / "x", "r", 0)[1]
    body = _body(data, off)
    body[:4] = struct.pack("<I", 2**32 - 1)
    return patch_page(data, off, bytes(body))


# ---- bloom filters (column "i" has one per block)
@forger("bloom_length_too_short.rcfmt")
def _(data, work):
    def edit(p):
        p.chunks[p.column("i")][0]["bloom_length"] = 8
    return _doc_edit(data, edit)


@forger("bloom_offset_outside_region.rcfmt")
def _(data, work):
    def edit(p):
        p.chunks[p.column("i")][1]["bloom_offset"] = p.doc["page_index"]["offset"]
    return _doc_edit(data, edit)


@forger("bloom_region_overlaps_page_index.rcfmt")
def _(data, work):
    def edit(p):
        pi, bf = p.doc["page_index"], p.doc["bloom_filters"]
        bf["length"] += bf["offset"] - (pi["offset"] + pi["length"] - 8)
        bf["offset"] = pi["offset"] + pi["length"] - 8
    return _doc_edit(data, edit)


@forger("bloom_bitset_not_power_of_two.rcfmt")
def _(data, work):
    """A 48-byte bitset (not a power of two) whose crc32 is right; it overlaps the next
    block's filter, but stays inside the bloom-filter region."""
    parts = split_file(data)
    rec = parts.chunks[parts.column("i")][0]
    assert int(rec["bloom_length"]) == 36 and int(parts.chunks[parts.column("i")][1]["bloom_length"]) == 36
    off = int(rec["bloom_offset"])
    bits = parts.body[off: off + 48]
    parts.body = parts.body[: off + 48] + zlib.crc32(bits).to_bytes(4, "little") + parts.body[off + 52:]
    rec["bloom_length"] = 52
    return build_file(parts)


# ---- compressed pages (zstd / lz4 base files)
@forger("zstd_garbage_body.rcfmt")
def _(data, work):
    data = base_file(work, compression="zstd")
    off = pages_of(data, work / "x", "s", 0)[0]
    body = _body(data, off)
    assert read_header(data, off)["compression"] == 1
    body[len(body) // 2:] = b"\xAA" * (len(body) - len(body) // 2)
    return patch_page(data, off, bytes(body))


@forger("lz4_uncompressed_size_mismatch.rcfmt")
def _(data, work):
    data = base_file(work, compression="lz4")
    off = pages_of(data, work / "x", "s", 1)[1]
    h = read_header(data, off)
    assert h["compression"] == 2
    return patch_page(data, off, uncompressed_size=h["uncompressed_size"] + 3)


@forger("zstd_claims_huge_page.rcfmt")
def _(data, work):
    """A tiny zstd page whose header claims 2 GiB - 1 uncompressed bytes (the limit)."""
    data = base_file(work, compression="zstd")
    off = pages_of(data, work / "x", "s", 1)[0]
    return patch_page(data, off, uncompressed_size=(1 << 31) - 1)


@forger("lz4_claims_huge_page.rcfmt")
def _(data, work):
    """A tiny lz4 page whose header claims 2 GiB - 1 uncompressed bytes (the limit)."""
    data = base_file(work, compression="lz4")
    off = pages_of(data, work / "x", "i", 0)[0]
    return patch_page(data, off, uncompressed_size=(1 << 31) - 1)


# ============================================================================ main
def generate(work: Path) -> dict[str, bytes]:
    base = base_file(work)
    out = {}
    for name, fn in FORGERS.items():
        out[name] = fn(base, work)
        assert out[name] != base, name
    return out


def main(argv: list[str]) -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        files = generate(Path(d))
    if "--check" in argv:
        differ = [n for n, b in files.items() if not (BAD / n).exists() or (BAD / n).read_bytes() != b]
        print("differ:", differ or "none")
        return 1 if differ else 0
    BAD.mkdir(exist_ok=True)
    for name, content in files.items():
        (BAD / name).write_bytes(content)
    print(f"wrote {len(files)} files to {BAD}, {sum(map(len, files.values()))} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
