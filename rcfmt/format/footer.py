"""The footer: a JSON document (schema, metadata, table locations) followed by
fixed-width binary tables (blocks, and per column its chunk records).

``footer = u32 json_length | json (UTF-8) | zero padding to a multiple of 8 | tables``.
Table offsets in the JSON are relative to the start of the footer. See docs/FORMAT.md.
"""
from __future__ import annotations

import base64
import functools
import json
import struct

import numpy as np
import orjson
import pyarrow as pa

from ..runtime.records import record, field
from .._native import footer as _footer
from ..errors import CorruptFileError, UnsupportedError
from ..index.bitmap.layout import DIRECTORY_RECORD
from ..schema.nested import element_columns
from ..schema.nested_json import nodes_from_json, nodes_to_json, tree_features
from ..schema.types import LogicalType, logical_type_from_json, on_extension_redefined
from .layout import (
    BLOCK_RECORD,
    FORMAT_VERSION,
    HEADER_SIZE,
    KNOWN_FEATURES,
    MAX_PAGE_ROWS,
    chunk_record,
    page_record,
    padded_record,
)

__all__ = ["ColumnSchema", "FileMetaData", "serialize_footer", "parse_footer"]

_U32 = struct.Struct("<I")


@record(frozen=True)
class ColumnSchema:
    name: str
    type: LogicalType
    nullable: bool
    stat_width: int
    #: the Arrow field metadata of the field this column stores (its node's, for a nested
    #: field's column): ``((key, value), ...)`` of bytes, empty when none
    metadata: tuple = ()

    def to_json(self) -> dict:
        out = {"name": self.name, **self.type.to_json(), "nullable": self.nullable, "stat_width": self.stat_width}
        if self.metadata:
            out["metadata"] = field_metadata_json(self.metadata)
        return out


def field_metadata_json(pairs) -> list:
    """Arrow field metadata (``(key, value)`` bytes pairs) as the footer's JSON: each pair
    ``{"key" | "key_base64", "value" | "base64"}`` (UTF-8 as text, other bytes base64)."""
    out = []
    for key, value in pairs:
        entry = {}
        for name, data, raw in (("key", key, "key_base64"), ("value", value, "base64")):
            try:
                entry[name] = data.decode("utf-8")
            except UnicodeDecodeError:
                entry[raw] = base64.b64encode(data).decode("ascii")
        out.append(entry)
    return out


def field_metadata_from_json(doc) -> tuple:
    """The pairs of :func:`field_metadata_json`; ValueError when malformed."""
    if not isinstance(doc, list):
        raise ValueError(f"malformed field metadata {doc!r}")
    out = []
    for entry in doc:
        if not isinstance(entry, dict):
            raise ValueError(f"malformed field metadata {doc!r}")
        parts = []
        for name, raw in (("key", "key_base64"), ("value", "base64")):
            if isinstance(entry.get(name), str):
                parts.append(entry[name].encode("utf-8"))
            elif isinstance(entry.get(raw), str):
                parts.append(base64.b64decode(entry[raw], validate=True))
            else:
                raise ValueError(f"malformed field metadata {doc!r}")
        out.append(tuple(parts))
    return tuple(out)


@record
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
    arrow_schema: pa.Schema | None = None  # the fields as Arrow sees them, nested ones whole (set when parsed)
    nested: tuple | None = None  # rcfmt.schema.nested.Node per top-level field, when any field is nested
    physical_schema: pa.Schema | None = None  # the stored columns as Arrow sees them (set when parsed)
    #: the footer's ``bitmap_indexes`` (section 6b): the region {"offset", "length",
    #: "directory_offset", "columns": [column index, ...]} when any chunk has an index,
    #: and the writer's "report" (per column: kinds built, reasons for none; read it
    #: through :attr:`bitmap_report`, which checks it); or None
    bitmap_index: dict | None = None
    #: the writer's bloom-filter report under ``bloom_filters`` (section 6a), per column:
    #: filters kept, candidates left out of the block's share, and the HyperLogLog
    #: distinct estimates that sized them (one per block, null where not estimated).
    #: Informational: reading never depends on it (``{}`` when absent or malformed)
    bloom_report: dict = field(default_factory=dict)
    #: :meth:`chunk_fields`' tables, by the fields asked
    _fields_cache: dict = field(default_factory=dict, repr=False, compare=False)
    #: values worked out from this footer alone, by whoever works them out (a scan's
    #: projections): kept as long as the footer, which every open of an immutable file
    #: cached in this process shares
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    def chunk_fields(self, names: tuple, columns: tuple | None = None) -> np.ndarray:
        """int64 (blocks, columns, len(names)): the chunk records' integer fields
        ``names`` of every (block, column) -- or of the stored ``columns`` only, in that
        order -- built once per footer (a scan's executor reads them per block for the
        columns it decodes). Read-only."""
        key = names if columns is None else (names, columns)
        table = self._fields_cache.get(key)
        if table is None:
            chunks = self.chunks if columns is None else [self.chunks[c] for c in columns]
            table = np.zeros((self.num_blocks, len(chunks), len(names)), np.int64)
            for i, records in enumerate(chunks):
                for j, name in enumerate(names):
                    table[:, i, j] = records[name]
            table.flags.writeable = False
            self._fields_cache[key] = table
        return table

    @property
    def num_rows(self) -> int:
        return int(self.blocks["row_count"].sum()) if len(self.blocks) else 0

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def bitmap_report(self) -> dict:
        """The writer's bitmap-index report, per column (``{}`` when the footer has none);
        checked for shape here, when a tool reads it, not at every open: reading data
        never depends on it (CorruptFileError when malformed)."""
        if self.bitmap_index is None:
            return {}
        return _bitmap_report(self.bitmap_index.get("report", {}))


def _encode_metadata(metadata: dict[str, bytes]) -> list:
    out = []
    for key, value in metadata.items():
        try:
            out.append({"key": key, "value": value.decode("utf-8")})
        except UnicodeDecodeError:
            out.append({"key": key, "base64": base64.b64encode(value).decode("ascii")})
    return out


def required_features(meta: FileMetaData) -> list[str]:
    """The features a file of ``meta`` needs its reader to know (docs/FORMAT.md §5)."""
    tree = [] if meta.nested is None else tree_features(meta.nested)
    features = [] if meta.nested is None else ["nested"]
    if "nested_extensions" in tree:  # (extension types over nested ones, §3a)
        features.append("nested_extensions")
    names = [c.name for c in meta.columns]
    if len(set(names)) != len(names):
        features.append("duplicate_names")
    # (structs and unions without fields, run_end_encoded nested fields: §3a; extensions whose
    # storage holds dictionaries or views, flat or nested: §3.1, §3a)
    features += [f for f in ("empty_nested", "nested_run_end_encoded") if f in tree]
    if "extension_storage" in tree or any(_declares_storage(c.type) for c in meta.columns):
        features.append("extension_storage")
    if "extension_storage_runs" in tree:  # (§3a: runs in an extension's storage below a run_end_encoded type)
        features.append("extension_storage_runs")
    return features


def _declares_storage(ltype: LogicalType) -> bool:
    """Whether a column's type records an extension's declared storage (``arrow_storage``)."""
    return ltype.ext_storage is not None or ltype.ree_ext_storage is not None


def serialize_footer(meta: FileMetaData) -> bytes:
    tables = [meta.blocks.tobytes(), *(c.tobytes() for c in meta.chunks)]
    doc = {
        "format_version": FORMAT_VERSION,
        "required_features": required_features(meta),
        "created_by": meta.created_by,
        "num_rows": meta.num_rows,
        "schema": [c.to_json() for c in meta.columns],
        "metadata": _encode_metadata(meta.metadata),
        "page_index": {"offset": meta.page_index_region[0], "length": meta.page_index_region[1]},
        "bloom_filters": {"offset": meta.bloom_region[0], "length": meta.bloom_region[1]},
    }
    if meta.bloom_report:
        doc["bloom_filters"]["report"] = meta.bloom_report
    if meta.nested is not None:
        doc["nested"] = nodes_to_json(meta.nested)
    if meta.bitmap_index is not None:
        doc["bitmap_indexes"] = meta.bitmap_index
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


def parse_footer(buf: bytes, footer_offset: int, encodings_ok=None) -> FileMetaData:
    """Parse and validate a footer that starts at file offset ``footer_offset``.

    Every location it holds is checked to lie inside the file before ``footer_offset``,
    and every count against the bytes that can hold it (docs/FORMAT.md §9).
    ``encodings_ok(logical_type)`` may give, per encoding id, 0 where a known encoding
    cannot hold that type (the byte layout itself knows no encodings).
    """
    if len(buf) < 4:
        raise _fail("too short")
    (json_len,) = _U32.unpack_from(buf, 0)
    if 4 + json_len > len(buf):
        raise _fail("JSON length runs past the footer")
    head = _parse_json(bytes(buf[4 : 4 + json_len]), encodings_ok)
    if head.tables_end > len(buf):
        raise _fail("table runs past the footer")
    frombuffer = np.frombuffer
    blocks, *chunks = [frombuffer(buf, dtype, count, offset) for offset, dtype, count in head.tables]
    schema = head.schema
    meta = FileMetaData(list(schema.columns), blocks, chunks, dict(schema.metadata), head.created_by,
                        head.page_index, head.bloom, dict(head.extra), schema.arrow_schema, schema.nested,
                        schema.physical_schema, head.bitmap_index, head.bloom_report)
    _validate(meta, footer_offset, head, frombuffer(buf, np.uint8))
    return meta


@record(frozen=True, eq=False)
class _Schema:
    """What a footer's schema, metadata and nested tree say, parsed and checked (shared
    by every footer with the very same ones, as the files of a dataset: read-only)."""

    columns: tuple
    chunk_dtypes: tuple
    page_record_sizes: np.ndarray
    encodings_ok: np.ndarray  # (columns, 256) uint8
    metadata: dict
    arrow_schema: pa.Schema
    nested: tuple | None
    physical_schema: pa.Schema
    element: np.ndarray  # (columns,) uint8: 1 for element columns (slots are list elements, not rows)


@record(frozen=True, eq=False)
class _Head:
    """What a footer's JSON says, parsed and checked (shared by every open of the same
    footer: treat as read-only)."""

    schema: _Schema
    num_rows: int
    #: (offset, record dtype, count) of the blocks table, then of each column's chunk table
    tables: tuple
    tables_end: int  # the footer must hold this many bytes
    layout: tuple  # (blocks offset, block record size, chunk table offsets, chunk record sizes)
    created_by: str
    page_index: tuple
    bloom: tuple
    extra: dict
    bitmap_index: dict | None
    bloom_report: dict


@functools.lru_cache(maxsize=128)
def _parse_json(text: bytes, encodings_ok) -> _Head:
    """The footer's JSON parsed (cached by its bytes: a file opened again, or another
    with the very same footer, costs one dictionary lookup)."""
    try:
        doc = orjson.loads(text)  # checks UTF-8 too; a JSONDecodeError is a ValueError
    except (ValueError, RecursionError) as exc:
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
        return _head(doc, encodings_ok)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
        raise _fail(f"malformed ({type(exc).__name__}: {exc})") from None


def _table(entry: dict, dtype: np.dtype, count: int) -> tuple:
    """A table's (offset, record dtype, count, end), its layout checked (a record longer
    than this version's is viewed with the unknown tail skipped)."""
    offset, record_size = int(entry["offset"]), int(entry["record_size"])
    if record_size < dtype.itemsize or count < 0 or offset < 0:
        raise _fail(f"bad table layout {entry}")
    if record_size != dtype.itemsize:
        dtype = padded_record(dtype, record_size)
    return offset, dtype, count, offset + count * record_size


def _head(doc: dict, encodings_ok) -> _Head:
    schema = _schema(doc, encodings_ok)
    if not isinstance(doc["blocks"], dict) or len(doc["chunks"]) != len(schema.columns):
        raise _fail("one chunk table per column expected")
    pi = doc.get("page_index", {"offset": 0, "length": 0})
    bf = doc.get("bloom_filters", {"offset": 0, "length": 0})
    num_rows = doc["num_rows"]
    if not isinstance(num_rows, int) or not 0 <= num_rows < 1 << 64:
        raise _fail("num_rows disagrees with the blocks")
    nblocks = int(doc["blocks"]["count"])
    tables = [_table(doc["blocks"], BLOCK_RECORD, nblocks)]
    tables += [_table(e, dtype, nblocks) for e, dtype in zip(doc["chunks"], schema.chunk_dtypes)]
    layout = (tables[0][0], int(doc["blocks"]["record_size"]), np.array([t[0] for t in tables[1:]], np.intp),
              np.array([int(e["record_size"]) for e in doc["chunks"]], np.intp))
    bitmap_index = _bitmap_index(doc.get("bitmap_indexes"), len(schema.columns), schema.element)
    return _Head(schema, num_rows, tuple(t[:3] for t in tables), max(t[3] for t in tables), layout,
                 str(doc.get("created_by", "")), (int(pi["offset"]), int(pi["length"])),
                 (int(bf["offset"]), int(bf["length"])), {k: v for k, v in doc.items() if k not in _KNOWN_KEYS},
                 bitmap_index, _bloom_report(bf.get("report")))


def _schema(doc: dict, encodings_ok) -> _Schema:
    """The footer's schema part, from a cache keyed by the JSON values it is made of
    when they are hashable (a flat schema: every file of a dataset shares it)."""
    schema, metadata = doc["schema"], doc.get("metadata", [])
    duplicates = "duplicate_names" in doc.get("required_features", ())
    if "nested" not in doc and type(schema) is list and type(metadata) is list:
        try:
            key = (tuple(tuple(e.items()) if type(e) is dict else e for e in schema),
                   tuple(tuple(m.items()) if type(m) is dict else m for m in metadata))
            return _flat_schema(key, encodings_ok, duplicates)
        except TypeError:  # an unhashable value (unknown to this version): parse uncached
            pass
    return _build_schema(doc, encodings_ok, duplicates)


@functools.lru_cache(maxsize=256)
def _flat_schema(key: tuple, encodings_ok, duplicates: bool) -> _Schema:
    schema, metadata = key
    return _build_schema({"schema": [dict(e) if type(e) is tuple else e for e in schema],
                          "metadata": [dict(m) if type(m) is tuple else m for m in metadata]}, encodings_ok,
                         duplicates)


def _build_schema(doc: dict, encodings_ok, duplicates: bool) -> _Schema:
    """The schema part of a footer; ``duplicates``: the file lists the
    ``duplicate_names`` feature, so column names may repeat."""
    columns, fields, allowed = [], [], []
    names = set()
    for entry in doc["schema"]:
        if not isinstance(entry, dict):
            raise _fail(f"malformed column entry {entry!r}")
        items = tuple(entry.items())
        try:
            column, arrow_field, ok = _column(items, encodings_ok)
        except TypeError:  # an unhashable value (unknown to this version): parse uncached
            column, arrow_field, ok = _column.__wrapped__(items, encodings_ok)
        if column.name in names and not duplicates:
            raise _fail(f"duplicate column name {column.name!r} without the 'duplicate_names' required feature")
        names.add(column.name)
        columns.append(column)
        fields.append(arrow_field)
        allowed.append(ok)
    metadata = {}
    for item in doc.get("metadata", []):
        value = base64.b64decode(item["base64"]) if "base64" in item else item["value"].encode("utf-8")
        metadata[str(item["key"])] = value
    physical = pa.schema(fields, metadata=metadata or None)
    element = np.zeros(len(columns), np.uint8)
    required = doc.get("required_features", [])
    if "extension_storage" not in required and any(_declares_storage(c.type) for c in columns):
        raise _fail("an extension's arrow_storage without the 'extension_storage' required feature")
    nested = None
    if "nested" in doc:
        if "nested" not in required:
            raise _fail("nested fields without the 'nested' required feature")
        nested = nodes_from_json(doc["nested"], columns)
        missing = [f for f in tree_features(nested) if f not in required]
        if missing == ["nested_extensions"]:
            raise _fail("extension types of nested fields without the 'nested_extensions' required feature")
        if missing:
            raise _fail(f"nested fields that need the required features {missing}, which the file does not list")
        element[sorted(element_columns(nested))] = 1
        logical = pa.schema([n.field for n in nested], metadata=metadata or None)
    else:
        logical = physical
    return _Schema(tuple(columns), tuple(chunk_record(c.stat_width) for c in columns),
                   np.array([page_record(c.stat_width).itemsize for c in columns], np.intp),
                   np.stack(allowed) if allowed else np.ones((0, 256), np.uint8), metadata, logical, nested,
                   physical, element)


@functools.lru_cache(maxsize=4096)
def _column(items: tuple, encodings_ok) -> tuple:
    """One schema entry (its JSON items) -> (ColumnSchema, Arrow field, per encoding id
    whether it can hold the type); cached, as files of one dataset repeat their schema."""
    entry = dict(items)
    name = entry["name"]
    if not isinstance(name, str):
        raise _fail(f"bad or duplicate column name {name!r}")
    ltype = logical_type_from_json(entry)
    width = int(entry["stat_width"])
    expected = ltype.width
    if (expected and width != expected) or not 1 <= width <= 255:
        raise _fail(f"column {name!r} has stat_width {width}")
    metadata = field_metadata_from_json(entry["metadata"]) if "metadata" in entry else ()
    column = ColumnSchema(name, ltype, bool(entry["nullable"]), width, metadata)
    ok = np.ones(256, np.uint8) if encodings_ok is None else encodings_ok(ltype)
    return column, pa.field(name, ltype.to_arrow(), column.nullable, dict(metadata) or None), ok


_KNOWN_KEYS = {"format_version", "required_features", "created_by", "num_rows", "schema", "metadata",
               "page_index", "bloom_filters", "blocks", "chunks", "nested", "bitmap_indexes"}


def _bloom_report(entry) -> dict:
    """The bloom report if it has the documented shape, else ``{}`` (informational only)."""
    if not isinstance(entry, dict):
        return {}
    for value in entry.values():
        if not (isinstance(value, dict) and isinstance(value.get("filters"), int)
                and isinstance(value.get("estimated_distinct"), list)):
            return {}
    return entry


def _bitmap_index(entry, ncols: int, element: np.ndarray) -> dict | None:
    """The ``bitmap_indexes`` key checked for shape (its locations are checked with the
    other regions in :func:`_validate`)."""
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise _fail("bitmap_indexes is not an object")
    report = entry.get("report", {})  # checked when read: FileMetaData.bitmap_report
    if "columns" not in entry:
        return {"report": report}
    out = {k: int(entry[k]) for k in ("offset", "length", "directory_offset")}
    out["report"] = report
    cols = entry["columns"]
    if not isinstance(cols, list) or not cols or any(
            not isinstance(c, int) or isinstance(c, bool) or not 0 <= c < ncols or element[c] for c in cols) \
            or sorted(set(cols)) != cols:
        raise _fail("bitmap_indexes names bad columns")
    out["columns"] = list(cols)
    return out


_REPORT_KINDS = frozenset(("equality", "range", "bitsliced", "auto"))
_REPORT_COUNTS = ("kinds", "not_indexed")
_NO_COUNTS: dict = {}


def _bitmap_report(report) -> dict:
    """The writer's report checked for shape (it is informative, but tools show it and
    rewrites follow its named kinds): ``{column: {"kinds": {kind: int}, "not_indexed":
    {reason: int}, ["named": kind], ["values": {"count": int, "keys": hex}]}}``."""
    if type(report) is not dict:
        raise _fail("bitmap_indexes report is malformed")
    for name, r in report.items():
        if type(name) is not str or type(r) is not dict:
            raise _fail("bitmap_indexes report is malformed")
        for key in _REPORT_COUNTS:  # names mapped to counts (ints, not bools)
            counts = r.get(key, _NO_COUNTS)
            if type(counts) is not dict:
                raise _fail("bitmap_indexes report is malformed")
            for k, v in counts.items():
                if type(k) is not str or type(v) is not int:
                    raise _fail("bitmap_indexes report is malformed")
        named = r.get("named", "auto")
        if type(named) is not str or named not in _REPORT_KINDS:
            raise _fail("bitmap_indexes report is malformed")
        values = r.get("values")
        if values is not None and not (type(values) is dict and type(values.get("keys")) is str
                                       and isinstance(values.get("count"), int)):
            raise _fail("bitmap_indexes report is malformed")
    return report


def _region(region: tuple[int, int]) -> tuple[int, int]:
    """A region as the checks see it: one that cannot exist (negative, or past 2^64) is
    empty, so every chunk pointing into it fails its own located check."""
    off, length = region
    return (off, length) if off >= 0 and length >= 0 and off + length < 1 << 64 else (0, 0)


_MESSAGES = {
    _footer.FOOTER_BLOCK_ROWS: "block first rows do not follow row counts",
    _footer.FOOTER_NUM_ROWS: "num_rows disagrees with the blocks",
    _footer.FOOTER_BLOCK_OUTSIDE: "block outside the data region",
    _footer.FOOTER_ROWS_WITHOUT_COLUMNS: "a block has rows but the file has no columns",
    _footer.FOOTER_CHUNK_OUTSIDE: "column chunk outside its block",
    _footer.FOOTER_DICTIONARY_LENGTH: "dictionary page longer than its chunk",
    _footer.FOOTER_PAGE_INDEX_OUTSIDE: "page index entries outside the page index region",
    _footer.FOOTER_PAGE_INDEX_LENGTH: "page index length disagrees with the page count",
    _footer.FOOTER_BLOOM_OUTSIDE: "bloom filter outside the bloom filter region",
    _footer.FOOTER_PAGES_OVER_ROWS: "more pages than rows in a chunk",
    _footer.FOOTER_PAGES_OVER_BYTES: "more pages than the chunk's bytes can hold",
    _footer.FOOTER_ROWS_OVER_PAGES: "more rows than its pages can hold",
    _footer.FOOTER_COUNTS_OVER_ROWS: "chunk counts exceed block rows",
    _footer.FOOTER_ENCODING_TYPE: "chunk encoding cannot hold the column's type",
}


def _validate_bitmap_region(region: dict, nblocks: int, footer_offset: int, after: int) -> None:
    """The bitmap-index region lies after the blocks, page index and blooms and before
    the footer; its directory (columns x blocks records + crc32) ends it."""
    off, length, directory = region["offset"], region["length"], region["directory_offset"]
    size = len(region["columns"]) * nblocks * DIRECTORY_RECORD.itemsize + 4
    if not (after <= off and 0 <= length and off + length <= footer_offset):
        raise _fail("bitmap index region outside the file")
    if directory < off or directory + size != off + length:
        raise _fail("bitmap index directory does not end its region")


def _validate(meta: FileMetaData, footer_offset: int, head: _Head, footer) -> None:
    """Check that counts add up and every location lies inside the data region (one
    native pass over the tables in ``footer``, laid out as ``head.layout`` says: blocks
    offset, block record size, chunk table offsets, chunk record sizes; see
    :mod:`rcfmt._native.footer`)."""
    pi_off, pi_len = _region(meta.page_index_region)
    bf_off, bf_len = _region(meta.bloom_region)
    data_end = footer_offset
    if pi_len:
        if pi_off < HEADER_SIZE or pi_off + pi_len > footer_offset:
            raise _fail("page index region outside the file")
        data_end = pi_off
    if bf_len and (bf_off < HEADER_SIZE or bf_off + bf_len > footer_offset):
        raise _fail("bloom filter region outside the file")
    if bf_len and pi_len and bf_off < pi_off + pi_len:
        raise _fail("bloom filter region overlaps the page index")
    if bf_len and not pi_len:
        data_end = min(data_end, bf_off)
    if meta.bitmap_index is not None and "columns" in meta.bitmap_index:
        if not pi_len and not bf_len:  # (no pages, e.g. only empty blocks: the region follows the data)
            data_end = min(data_end, int(meta.bitmap_index["offset"]))
        _validate_bitmap_region(meta.bitmap_index, len(meta.blocks), footer_offset,
                                max(pi_off + pi_len, bf_off + bf_len, data_end))
    columns, schema = meta.columns, head.schema
    try:
        code, col, block = _footer.check_tables(
            footer, *head.layout[:2], len(meta.blocks), *head.layout[2:], schema.page_record_sizes,
            schema.encodings_ok, schema.element, head.num_rows, HEADER_SIZE, data_end, pi_off, pi_len, bf_off,
            bf_len, MAX_PAGE_ROWS)
    except (ValueError, OverflowError) as exc:  # tables outside the footer (also refused by _table)
        raise _fail(f"malformed table layout ({exc})") from None
    if code == _footer.FOOTER_OK:
        return
    message = _MESSAGES[code]
    if code == _footer.FOOTER_ENCODING_TYPE:
        eid = int(meta.chunks[col][block]["encoding"])
        message = f"chunk encoding id {eid} cannot hold {columns[col].type.name} values"
    raise CorruptFileError(f"footer: {message}", column=None if col < 0 else columns[col].name,
                           block=None if block < 0 else block)


on_extension_redefined(lambda: [cache.cache_clear() for cache in (_parse_json, _flat_schema, _column)])
