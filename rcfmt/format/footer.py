"""The footer: a JSON document (schema, metadata, table locations) followed by
fixed-width binary tables (blocks, and per column its chunk records).

``footer = u32 json_length | json (UTF-8) | zero padding to a multiple of 8 | tables``.
Table offsets in the JSON are relative to the start of the footer. See docs/FORMAT.md.
"""
from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass, field

import numpy as np

from ..errors import CorruptFileError, UnsupportedError
from ..types import LogicalType, logical_type_from_json
from .layout import (
    BLOCK_RECORD,
    FORMAT_VERSION,
    HEADER_SIZE,
    KNOWN_FEATURES,
    MAX_PAGE_ROWS,
    chunk_record,
    view_records,
)

__all__ = ["ColumnSchema", "FileMetaData", "serialize_footer", "parse_footer"]

_U32 = struct.Struct("<I")


@dataclass(frozen=True)
class ColumnSchema:
    name: str
    type: LogicalType
    nullable: bool
    stat_width: int

    def to_json(self) -> dict:
        return {"name": self.name, **self.type.to_json(), "nullable": self.nullable, "stat_width": self.stat_width}


@dataclass
class FileMetaData:
    """Everything the footer holds, with the tables as numpy record arrays."""

    columns: list[ColumnSchema]
    blocks: np.ndarray  # BLOCK_RECORD
    chunks: list[np.ndarray]  # per column: chunk_record(stat_width), one per block
    metadata: dict[str, bytes] = field(default_factory=dict)
    created_by: str = ""
    page_index_region: tuple[int, int] = (0, 0)  # offset, length
    bloom_region: tuple[int, int] = (0, 0)  # offset, length
    extra: dict = field(default_factory=dict)  # unknown optional JSON keys, kept for tools

    @property
    def num_rows(self) -> int:
        return int(self.blocks["row_count"].sum()) if len(self.blocks) else 0

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)


def _encode_metadata(metadata: dict[str, bytes]) -> list:
    out = []
    for key, value in metadata.items():
        try:
            out.append({"key": key, "value": value.decode("utf-8")})
        except UnicodeDecodeError:
            out.append({"key": key, "base64": base64.b64encode(value).decode("ascii")})
    return out


def serialize_footer(meta: FileMetaData) -> bytes:
    tables = [meta.blocks.tobytes(), *(c.tobytes() for c in meta.chunks)]
    doc = {
        "format_version": FORMAT_VERSION,
        "required_features": [],
        "created_by": meta.created_by,
        "num_rows": meta.num_rows,
        "schema": [c.to_json() for c in meta.columns],
        "metadata": _encode_metadata(meta.metadata),
        "page_index": {"offset": meta.page_index_region[0], "length": meta.page_index_region[1]},
        "bloom_filters": {"offset": meta.bloom_region[0], "length": meta.bloom_region[1]},
    }
    # table offsets depend on the JSON length: lay out with placeholders, then fix up
    doc["blocks"] = {"offset": 0, "count": meta.num_blocks, "record_size": BLOCK_RECORD.itemsize}
    doc["chunks"] = [{"offset": 0, "record_size": c.dtype.itemsize} for c in meta.chunks]
    for _ in range(3):  # offsets grow the JSON at most a few digits: converge quickly
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        start = (4 + len(text) + 7) // 8 * 8
        pos = start
        doc["blocks"]["offset"] = pos
        pos += len(tables[0])
        for entry, table in zip(doc["chunks"], tables[1:]):
            entry["offset"] = pos
            pos += len(table)
        new_text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if (4 + len(new_text) + 7) // 8 * 8 == start:
            text = new_text
            break
    else:  # pragma: no cover - cannot happen: lengths only grow and converge
        raise RuntimeError("footer layout did not converge")
    pad = start - 4 - len(text)
    return _U32.pack(len(text)) + text + b"\0" * pad + b"".join(tables)


def _fail(msg: str) -> CorruptFileError:
    return CorruptFileError(f"footer: {msg}")


def parse_footer(buf: bytes, footer_offset: int) -> FileMetaData:
    """Parse and validate a footer that starts at file offset ``footer_offset``.

    Every location it holds is checked to lie inside the file before ``footer_offset``.
    """
    if len(buf) < 4:
        raise _fail("too short")
    (json_len,) = _U32.unpack_from(buf, 0)
    if 4 + json_len > len(buf):
        raise _fail("JSON length runs past the footer")
    try:
        doc = json.loads(bytes(buf[4 : 4 + json_len]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _fail(f"malformed JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise _fail("JSON is not an object")
    version = doc.get("format_version")
    if not isinstance(version, int):
        raise _fail("missing format_version")
    if version > FORMAT_VERSION:
        raise UnsupportedError(f"file has format version {version}; this rcfmt reads up to {FORMAT_VERSION}")
    required = doc.get("required_features", [])
    if not isinstance(required, list):
        raise _fail("required_features is not a list")
    unknown = [f for f in required if f not in KNOWN_FEATURES]
    if unknown:
        raise UnsupportedError(f"file requires features this rcfmt does not know: {unknown}")
    try:
        return _build(doc, buf, footer_offset)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
        raise _fail(f"malformed ({type(exc).__name__}: {exc})") from None


def _table(buf, entry: dict, dtype: np.dtype, count: int) -> np.ndarray:
    offset, record_size = int(entry["offset"]), int(entry["record_size"])
    if record_size < dtype.itemsize or count < 0 or offset < 0:
        raise _fail(f"bad table layout {entry}")
    if offset + count * record_size > len(buf):
        raise _fail("table runs past the footer")
    return view_records(memoryview(buf)[offset : offset + count * record_size], dtype, count, record_size)


def _build(doc: dict, buf, footer_offset: int) -> FileMetaData:
    columns = []
    names = set()
    for entry in doc["schema"]:
        name = entry["name"]
        if not isinstance(name, str) or name in names:
            raise _fail(f"bad or duplicate column name {name!r}")
        names.add(name)
        ltype = logical_type_from_json(entry)
        width = int(entry["stat_width"])
        expected = ltype.width
        if (expected and width != expected) or not 1 <= width <= 255:
            raise _fail(f"column {name!r} has stat_width {width}")
        columns.append(ColumnSchema(name, ltype, bool(entry["nullable"]), width))
    block_entry = doc["blocks"]
    nblocks = int(block_entry["count"])
    blocks = _table(buf, block_entry, BLOCK_RECORD, nblocks)
    if len(doc["chunks"]) != len(columns):
        raise _fail("one chunk table per column expected")
    chunks = [_table(buf, e, chunk_record(c.stat_width), nblocks) for e, c in zip(doc["chunks"], columns)]
    metadata = {}
    for item in doc.get("metadata", []):
        value = base64.b64decode(item["base64"]) if "base64" in item else item["value"].encode("utf-8")
        metadata[str(item["key"])] = value
    pi = doc.get("page_index", {"offset": 0, "length": 0})
    region = (int(pi["offset"]), int(pi["length"]))
    bf = doc.get("bloom_filters", {"offset": 0, "length": 0})
    bloom_region = (int(bf["offset"]), int(bf["length"]))
    meta = FileMetaData(columns, blocks, chunks, metadata, str(doc.get("created_by", "")), region, bloom_region,
                        {k: v for k, v in doc.items() if k not in _KNOWN_KEYS})
    _validate(meta, footer_offset, doc)
    return meta


_KNOWN_KEYS = {"format_version", "required_features", "created_by", "num_rows", "schema", "metadata",
               "page_index", "bloom_filters", "blocks", "chunks"}


def _validate(meta: FileMetaData, footer_offset: int, doc: dict) -> None:
    """Check that counts add up and every location lies inside the data region."""
    blocks = meta.blocks
    rows = blocks["row_count"].astype(np.uint64)
    first = blocks["first_row"].astype(np.uint64)
    if len(blocks):
        expected_first = np.concatenate(([0], np.cumsum(rows[:-1], dtype=np.uint64)))
        if not np.array_equal(first, expected_first) or int(rows.max()) >= 1 << 48:
            raise _fail("block first rows do not follow row counts")
    if int(doc["num_rows"]) != int(rows.sum(dtype=np.uint64)):
        raise _fail("num_rows disagrees with the blocks")
    data_end = footer_offset
    pi_off, pi_len = meta.page_index_region
    if pi_len:
        if pi_off < HEADER_SIZE or pi_off + pi_len > footer_offset:
            raise _fail("page index region outside the file")
        data_end = pi_off
    bf_off, bf_len = meta.bloom_region
    if bf_len and (bf_off < HEADER_SIZE or bf_off + bf_len > footer_offset):
        raise _fail("bloom filter region outside the file")
    if bf_len and pi_len and bf_off < pi_off + pi_len:
        raise _fail("bloom filter region overlaps the page index")
    if bf_len and not pi_len:
        data_end = min(data_end, bf_off)
    b_off = blocks["offset"].astype(np.uint64)
    b_end = b_off + blocks["length"].astype(np.uint64)
    if len(blocks) and (int(b_off.min()) < HEADER_SIZE or int(b_end.max()) > data_end or np.any(b_end < b_off)):
        raise _fail("block outside the data region")
    if not meta.chunks or not len(blocks):
        return
    # every column's table at once: one (columns x blocks) array per field
    def field(name):
        return np.stack([c[name] for c in meta.chunks]).astype(np.uint64)

    c_off, c_len = field("offset"), field("length")
    c_end = c_off + c_len
    p_off, p_len = field("page_index_offset"), field("page_index_length")
    f_off, f_len = field("bloom_offset"), field("bloom_length")
    pages = field("page_count")
    checks = [
        ((c_off < b_off) | (c_end > b_end) | (c_end < c_off), "column chunk outside its block"),
        (field("dictionary_length") > c_len, "dictionary page longer than its chunk"),
        ((p_len > 0) & ((p_off < pi_off) | (p_off + p_len > pi_off + pi_len) | (p_off + p_len < p_off)),
         "page index entries outside the page index region"),
        ((f_len > 0) & ((f_off < bf_off) | (f_off + f_len > bf_off + bf_len) | (f_off + f_len < f_off)
                        | (f_len < 36)), "bloom filter outside the bloom filter region"),
        (pages > np.maximum(rows, 1), "more pages than rows in a chunk"),
        (rows > pages * np.uint64(MAX_PAGE_ROWS), "more rows than its pages can hold"),
        ((field("null_count") > rows) | (field("nan_count") > rows), "chunk counts exceed block rows"),
    ]
    for bad, message in checks:
        if bad.any():
            col = int(np.flatnonzero(bad.any(axis=1))[0])
            raise CorruptFileError(f"footer: {message}", column=meta.columns[col].name,
                                   block=int(np.flatnonzero(bad[col])[0]))
