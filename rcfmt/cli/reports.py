"""What the describing commands report, as JSON-ready dicts (the shapes of ``--json``,
documented in docs/CLI.md) built from the library's own answers.

Values are shown as the user's type: integers and floats as JSON numbers (NaN and
infinities as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``), decimals as
strings, dates and timestamps in ISO form, strings as text, binary as
``{"hex": ...}``; a missing bound is ``null``.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid

import numpy as np
import pyarrow as pa

from ..codecs import CODEC_NAMES
from ..errors import CorruptFileError, InvalidOptionError, RcfmtError, SchemaError
from ..file.reader import RcfmtFile
from ..schema.arrow_io import temporal_value, tzinfo_of
from .describe import column_summary, encoding_name

__all__ = ["is_dataset", "json_value", "schema_report", "meta_report", "pages_report", "index_report", "dictionary_report",
           "bloom_report", "check_file", "check_dataset", "dataset_report", "history_report", "rows_report"]


_EXACT = decimal.Context(prec=100)


def json_value(value, ltype=None):
    """``value`` (a stats-domain or Python value) as JSON shows it (module docstring)."""
    if value is None:
        return None
    if ltype is not None and ltype.annot is not None and ltype.annot[0] not in ("fixed_size_binary", "float16"):
        from ..schema.annotated import shown

        return json_value(shown(value, ltype))
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if ltype is not None and ltype.name in ("string", "large_string"):
            return raw.decode("utf-8", "replace")
        try:
            return raw.decode("utf-8") if ltype is None else {"hex": raw.hex()}
        except UnicodeDecodeError:
            return {"hex": raw.hex()}
    if ltype is not None and ltype.name == "decimal128" and isinstance(value, int):  # (exact: not 28 digits)
        return format(decimal.Decimal(value).scaleb(-ltype.scale, _EXACT), "f")
    if ltype is not None and ltype.name in ("date32", "timestamp") and isinstance(value, int):
        try:
            value = temporal_value(value, ltype.to_arrow())
        except (ValueError, OverflowError, pa.ArrowException):
            return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, decimal.Decimal):
        return format(value, "f") if value.is_finite() else str(value)  # (its scale's digits: no '-1E-9')
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return value


def _fields(schema: pa.Schema) -> list[dict]:
    return [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in schema]


def schema_report(path) -> dict:
    """``{"kind": "file"|"dataset", "path", "columns": [{"name", "type", "nullable"}],
    "partition_by": [...]}``."""
    if is_dataset(path):
        from ..dataset import open_dataset

        ds = open_dataset(path)
        return {"kind": "dataset", "path": str(path), "columns": _fields(ds.schema), "partition_by": ds.partition_by}
    with RcfmtFile(path) as f:
        return {"kind": "file", "path": str(path), "columns": _fields(f.schema), "partition_by": []}


def _chunk(f: RcfmtFile, block: int, col: int, stats) -> dict:
    """Chunk ``col`` of ``block``; ``stats``: the column's :meth:`~RcfmtFile.block_stats`."""
    rec = f.footer.chunks[col][block]
    column = f.footer.columns[col]
    has = bool(stats.has_min_max[block])
    return {
        "column": column.name,
        "encoding": encoding_name(int(rec["encoding"])),
        "compression": CODEC_NAMES.get(int(rec["compression"]), f"unknown({int(rec['compression'])})"),
        "offset": int(rec["offset"]),
        "stored_bytes": int(rec["length"]),
        "uncompressed_bytes": int(rec["uncompressed_size"]),
        "dictionary_bytes": int(rec["dictionary_length"]),
        "pages": int(rec["page_count"]),
        "null_count": int(rec["null_count"]),
        "nan_count": int(rec["nan_count"]),
        "min": json_value(stats.min[block], column.type) if has else None,
        "max": json_value(stats.max[block], column.type) if has else None,
        "bloom_filter_bytes": int(rec["bloom_length"]),
        "bitmap_index_bytes": f.bitmap_span(block, col)[1],
    }


def meta_report(f: RcfmtFile) -> dict:
    """The file and every block: ``{"path", "size", "num_rows", "num_blocks",
    "format_version", "created_by", "metadata_keys", "columns": [per-column summary],
    "bitmap_indexes": {column: {"kinds", "not_indexed"}} (the writer's report),
    "blocks": [{"block", "num_rows", "stored_bytes", "chunks": [...]}]}``."""
    columns = []
    for s in column_summary(f):
        columns.append({k: (json_value(v, s["ltype"]) if k in ("min", "max") else v)
                        for k, v in s.items() if k != "ltype"})
    stats = [f.block_stats(c) for c in range(len(f.footer.columns))]  # (every block's, once a column)
    blocks = []
    for b in range(f.num_blocks):
        chunks = [_chunk(f, b, c, stats[c]) for c in range(len(f.footer.columns))]
        blocks.append({"block": b, "num_rows": int(f.footer.blocks[b]["row_count"]),
                       "stored_bytes": sum(c["stored_bytes"] for c in chunks), "chunks": chunks})
    return {"path": f.path, "size": f.size, "num_rows": f.num_rows, "num_blocks": f.num_blocks,
            "created_by": f.footer.created_by, "metadata_keys": sorted(f.metadata), "columns": columns,
            "bitmap_indexes": f.footer.bitmap_report, "blocks": blocks}


def _selected(f: RcfmtFile, column: str | None, block: int | None) -> tuple[list[int], list[int]]:
    cols = list(range(len(f.footer.columns))) if column is None else [f.column_index(column)]
    if block is None:
        blocks = list(range(f.num_blocks))
    else:
        if not -f.num_blocks <= block < f.num_blocks:
            raise InvalidOptionError(f"block {block} out of range for {f.num_blocks} blocks")
        blocks = [block % f.num_blocks]
    return cols, blocks


def pages_report(f: RcfmtFile, column: str | None = None, block: int | None = None) -> list[dict]:
    """Every page (of ``column``/``block`` if given), from the page index and the page
    headers: ``[{"block", "column", "page", "first_row", "num_rows", "offset",
    "stored_bytes" (header and body), "uncompressed_bytes" (the body's), "encoding",
    "compression", "null_count", "min", "max"}]``."""
    from ..format.layout import PAGE_HEADER, PAGE_HEADER_SIZE

    cols, blocks = _selected(f, column, block)
    out = []
    for b in blocks:
        for c in cols:
            col = f.footer.columns[c]
            rec = f.footer.chunks[c][b]
            entries = f.page_index(b, c)
            stats = f.page_stats(b, c, entries)
            start = int(rec["offset"])
            chunk = f.read_range(start, int(rec["length"]))
            enc = encoding_name(int(rec["encoding"]))
            codec = CODEC_NAMES.get(int(rec["compression"]), f"unknown({int(rec['compression'])})")
            for k in range(len(entries)):
                at = int(entries["offset"][k]) - start  # inside the chunk: the page index was checked
                if not 0 <= at <= len(chunk) - PAGE_HEADER_SIZE:
                    raise CorruptFileError("page outside its chunk", path=f.path, column=col.name, block=b)
                header = PAGE_HEADER.unpack_from(chunk, at)
                has = bool(stats.has_min_max[k])
                out.append({"block": b, "column": col.name, "page": k, "first_row": int(entries["first_row"][k]),
                            "num_rows": int(entries["row_count"][k]), "offset": int(entries["offset"][k]),
                            "stored_bytes": int(entries["length"][k]), "uncompressed_bytes": int(header[8]),
                            "encoding": enc, "compression": codec, "null_count": int(stats.null_count[k]),
                            "min": json_value(stats.min[k], col.type) if has else None,
                            "max": json_value(stats.max[k], col.type) if has else None})
    return out


def index_report(f: RcfmtFile, column: str | None = None, block: int | None = None) -> dict:
    """Where the page index lies: ``{"offset", "length", "chunks": [{"block", "column",
    "offset", "length", "pages", "crc32"}]}`` (the records themselves: ``pages``)."""
    cols, blocks = _selected(f, column, block)
    region = f.footer.page_index_region
    chunks = []
    for b in blocks:
        for c in cols:
            rec = f.footer.chunks[c][b]
            chunks.append({"block": b, "column": f.footer.columns[c].name, "offset": int(rec["page_index_offset"]),
                           "length": int(rec["page_index_length"]), "pages": int(rec["page_count"]),
                           "crc32": int(rec["page_index_crc"])})
    return {"offset": int(region[0]), "length": int(region[1]), "chunks": chunks}


def dictionary_report(f: RcfmtFile, column: str, block: int | None = None) -> list[dict]:
    """Per block: ``{"block", "dictionary": [values] or null (chunk not
    dictionary-encoded)}``."""
    from ..schema.arrow_io import to_arrow

    c = f.column_index(column)
    ltype = f.footer.columns[c].type
    _, blocks = _selected(f, column, block)
    out = []
    for b in blocks:
        decoder = f.chunk_decoder(b, c)
        try:
            values = decoder.dictionary
        except CorruptFileError as exc:
            raise f.locate_error(exc, b, c) from None
        entry = {"block": b, "dictionary": None}
        if values is not None:
            shown = to_arrow(values, None, ltype).to_pylist()
            if ltype.annot == ("day_time_interval",):  # (its stored int64: as (days, ms))
                from ..schema.annotated import unpack_day_time

                shown = [unpack_day_time(v) for v in shown]
            entry["dictionary"] = [json_value(v) for v in shown]
        out.append(entry)
    return out


def _typed_literal(text: str, arrow_type: pa.DataType):
    """The command-line ``text`` as a value of the column's type."""
    try:
        if isinstance(arrow_type, pa.BaseExtensionType):
            if arrow_type.extension_name == "arrow.uuid":
                return uuid.UUID(text)
            arrow_type = arrow_type.storage_type
        if pa.types.is_fixed_size_binary(arrow_type):
            return text.encode()
        if pa.types.is_duration(arrow_type) or arrow_type.id == 21:
            return int(text)  # (in the column's unit; months for month_interval)
        if arrow_type.id == 22:  # day_time_interval: "days,milliseconds"
            days, ms = text.split(",")
            return int(days), int(ms)
        if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
            return text
        if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
            return text.encode()
        if pa.types.is_integer(arrow_type):
            return int(text)
        if pa.types.is_floating(arrow_type):
            return float(text)
        if pa.types.is_decimal(arrow_type):
            return decimal.Decimal(text)
        if pa.types.is_date(arrow_type):
            return dt.date.fromisoformat(text)
        if pa.types.is_timestamp(arrow_type):
            return dt.datetime.fromisoformat(text)
        if pa.types.is_boolean(arrow_type):
            return {"true": True, "false": False}[text.lower()]
    except (ValueError, KeyError, decimal.InvalidOperation):
        pass
    raise InvalidOptionError(f"--value {text!r} is not a {arrow_type}")


def bloom_report(f: RcfmtFile, column: str, value: str) -> dict:
    """Might each block hold ``value``? ``{"column", "value", "blocks": [{"block",
    "has_filter", "might_contain"}]}`` (``might_contain`` is true where a block has no
    filter: only a filter can rule a value out)."""
    from ..index.bloom import chunks as bloom_filters
    from ..predicate.expr import col
    from ..predicate.bind import bind

    c = f.column_index(column)  # (the stored column: a struct's leaf by its dotted path)
    if f.filter_schema.get_field_index(column) < 0:
        raise SchemaError(f"column {column!r} is not one rcfmt bloom probes: name a flat column or a struct's leaf "
                          f"({', '.join(map(repr, f.filter_schema.names))})")
    literal = _typed_literal(value, f.filter_schema.field(column).type)
    leaf = bind(col(column) == literal, f.bind_schema)
    blocks = []
    for b in range(f.num_blocks):
        bf = bloom_filters.read_filter(f, b, c)
        blocks.append({"block": b, "has_filter": bf is not None,
                       "might_contain": True if bf is None else bloom_filters.may_contain(bf, leaf)})
    return {"column": column, "value": json_value(literal), "blocks": blocks}


def check_file(path) -> dict:
    """Every checksum and structural rule of one file: the footer, each page index, bloom
    filter, bitmap index (every bitmap decoded) and page (decoded). ``{"path", "ok", "error": null or the located message,
    "blocks", "pages", "size", "num_rows"}``."""
    from ..index.bloom import chunks as bloom_filters

    pages = 0
    try:
        with RcfmtFile(path, verify_checksums=True) as f:
            for b in range(f.num_blocks):
                for c in range(len(f.footer.columns)):
                    pages += len(f.page_index(b, c))
                    bloom_filters.read_filter(f, b, c)
                    entry = f.bitmap_entry(b, c)
                    if entry is not None:
                        entry.nulls, entry.nans, entry.union(list(range(entry.count)))
                    f.read_column_chunk(b, c)
            return {"path": str(path), "ok": True, "error": None, "blocks": f.num_blocks, "pages": pages,
                    "size": f.size, "num_rows": f.num_rows}
    except (RcfmtError, FileNotFoundError) as exc:
        return {"path": str(path), "ok": False, "error": str(exc), "blocks": None, "pages": pages, "size": None,
                "num_rows": None}


def check_dataset(path) -> dict:
    """The index of the latest version and every data file it lists (as
    :func:`check_file`, plus size and row count against the index): ``{"path",
    "version", "ok", "files": [check_file results], "error"}``."""
    from ..dataset import open_dataset
    from ..dataset.deletions import load as load_deletions

    try:
        ds = open_dataset(path)
    except RcfmtError as exc:
        return {"path": str(path), "version": None, "ok": False, "files": [], "error": str(exc)}
    files = []
    vectors = {f.path: f for f in ds.get_fragments()}
    for info in ds.files:
        result = check_file(info.path)
        if result["ok"] and info.size and (result["size"], result["num_rows"]) != (info.size, info.num_rows):
            result.update(ok=False, error=f"{info.path}: the index records {info.num_rows} rows in {info.size} "
                                          f"bytes, the file holds {result['num_rows']} in {result['size']}")
        if result["ok"] and info.path in vectors:
            fragment = vectors[info.path]
            try:  # (its deletion vector: the file, its checksum, its rows, read again)
                if fragment.deletion is not None:
                    load_deletions(fragment.deletion, fragment.num_rows, fragment.path, cached=False)
            except (OSError, RcfmtError) as exc:
                result.update(ok=False, error=f"{info.path}: its deletion vector: {exc}")
        files.append(result)
    versions = _versions_unreadable(ds)
    error = next((r["error"] for r in files if not r["ok"]), None) or versions
    return {"path": str(path), "version": ds.version, "ok": error is None, "files": files, "error": error}


def _versions_unreadable(ds) -> str | None:
    """The first index version still present whose metadata cannot be read (history and
    time travel would fail on it), as an error; None if every one reads."""
    from ..dataset import log
    from ..dataset.snapshot import read_version_info

    from ..runtime.threads import thread_pool
    from ..storage import is_remote

    if ds.version is None:
        return None

    def problem(v: int) -> str | None:
        try:
            read_version_info(ds.root, v)
        except (OSError, RcfmtError) as exc:
            return f"index version {v} ({log.version_path(ds.root, v)}): {exc}"
        return None

    versions = log.list_versions(ds.root)
    if is_remote(ds.root) and len(versions) > 1:  # (a request each: side by side)
        with thread_pool(8, "rcfmt-check") as pool:
            found = list(pool.map(problem, versions))
    else:
        found = map(problem, versions)
    return next((p for p in found if p is not None), None)


def dataset_report(path) -> dict:
    """``{"path", "version", "num_files", "num_rows", "partition_by", "clustering",
    "columns": [...], "history": [...]}`` of a dataset."""
    from ..dataset import open_dataset

    ds = open_dataset(path)
    return {"path": str(path), "version": ds.version, "num_files": ds.num_files, "num_rows": ds.num_rows,
            "partition_by": ds.partition_by, "clustering": json_value(ds.info.get("clustering")),
            "columns": _fields(ds.schema),
            "history": [json_value(h) for h in ds.history()] if ds.version is not None else []}


def history_report(path) -> list[dict]:
    """Every version still present, oldest first, as the index records it."""
    from ..dataset import open_dataset

    return [json_value(h) for h in open_dataset(path).history()]


def rows_report(table: pa.Table) -> list[dict]:
    """Rows as JSON objects (a name that repeats is told apart by its position:
    ``"a [0]"``, ``"a [1]"``)."""
    table = _intervals_shown(table)
    names = table.column_names
    if len(set(names)) != len(names):
        table = table.rename_columns(_told_apart(names))
    if any(_told_apart_type(f.type) != f.type for f in table.schema):  # (pyarrow refuses repeats in structs)
        table = pa.table([pa.chunked_array([c.view(_told_apart_type(c.type)) for c in col.chunks],
                                           _told_apart_type(col.type)) for col in table.columns],
                         names=table.column_names)
    table, zones = _zones_apart(table)
    try:
        rows = table.to_pylist()
    except (OverflowError, ValueError, pa.ArrowException):  # beyond Python's dates and timedeltas
        rows, zones = _as_units(table).to_pylist(), {}
    for name, zone in zones.items():
        for row in rows:
            if row[name] is not None:
                row[name] = row[name].replace(tzinfo=dt.timezone.utc).astimezone(zone)
    return [{k: _rows_json(v) for k, v in row.items()} for row in rows]


def _rows_json(value):
    """:func:`json_value` of a value of a row (``to_pylist``'s): bytes as ``{"hex": ...}``
    whatever they hold, at any depth -- binary values (in lists, structs, maps, unions),
    which were printed as text when valid UTF-8 -- as strings arrive as ``str``."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, dict):
        return {k: _rows_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rows_json(v) for v in value]
    return json_value(value)


def _zones_apart(table: pa.Table) -> tuple[pa.Table, dict]:
    """``(table, {name: tzinfo})``: ``table`` with its top-level time-zone-aware
    timestamp columns (to the microsecond) as naive UTC ones, and their zones: pyarrow
    imports pandas (0.2 s) to convert aware timestamps to Python, not naive ones."""
    zones = {}
    for i, f in enumerate(table.schema):
        t = f.type
        if pa.types.is_timestamp(t) and t.tz is not None and t.unit != "ns":
            zone = tzinfo_of(t.tz)
            if zone is not None:
                naive = pa.timestamp(t.unit)
                table = table.set_column(i, f.with_type(naive), pa.chunked_array(
                    [c.view(naive) for c in table.column(i).chunks], naive))
                zones[f.name] = zone
    return table, zones


def _told_apart(names: list) -> list:
    return [f"{n} [{i}]" if names.count(n) > 1 else n for i, n in enumerate(names)]


def _told_apart_type(t: pa.DataType) -> pa.DataType:
    """``t`` with the repeated field names of its structs told apart (same layout)."""
    if pa.types.is_struct(t):
        kids = [f.with_type(_told_apart_type(f.type)) for f in t]
        return pa.struct([f.with_name(n) for f, n in zip(kids, _told_apart([f.name for f in kids]))])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        item = t.value_field.with_type(_told_apart_type(t.value_type))
        if pa.types.is_fixed_size_list(t):
            return pa.list_(item, t.list_size)
        return pa.large_list(item) if pa.types.is_large_list(t) else pa.list_(item)
    return t


def _intervals_shown(table: pa.Table) -> pa.Table:
    """``table`` with its month_interval and day_time_interval columns (whose values
    pyarrow cannot convert) as what they hold: months as ints, a top-level day_time as a
    struct of days and milliseconds (nested ones as their stored int64, ms << 32 | days)."""
    from ..interop import cdata

    if not cdata.has_intervals(table.schema):
        return table
    from ..schema.arrow_io import bool_array, validity

    day_time = [i for i, f in enumerate(table.schema) if f.type.id == cdata.DAY_TIME_INTERVAL_ID]
    table = cdata.to_storage(table)
    for i in day_time:
        chunks = []
        for c in table.column(i).chunks:
            pairs = np.frombuffer(c.buffers()[1], "<i4", count=2 * (c.offset + len(c)))[2 * c.offset:] \
                if len(c) else np.zeros(0, "<i4")
            parts = [pa.Array.from_buffers(pa.int32(), len(c), [None, pa.py_buffer(np.ascontiguousarray(p))])
                     for p in (pairs[0::2], pairs[1::2])]
            chunks.append(pa.StructArray.from_arrays(parts, names=["days", "milliseconds"],
                                                     mask=bool_array(~validity(c)) if c.null_count else None))
        table = table.set_column(i, table.field(i).name, pa.chunked_array(
            chunks, pa.struct([("days", pa.int32()), ("milliseconds", pa.int32())])))
    return table


def _as_units(table: pa.Table) -> pa.Table:
    """``table`` with its top-level temporal columns as their integer counts of units."""
    columns = []
    for c in table.columns:
        t = c.type
        if pa.types.is_duration(t) or pa.types.is_timestamp(t) or pa.types.is_date64(t):
            c = c.cast(pa.int64())
        elif pa.types.is_date32(t):
            c = c.cast(pa.int32())
        columns.append(c)
    return pa.table(columns, names=table.column_names)


def is_dataset(path) -> bool:
    """A directory, or an object-store prefix (anything there but a single object)."""
    import os

    from ..storage import is_remote, local_path, remote_kind

    path = str(path)
    if is_remote(path):
        return remote_kind(path) == "dir"
    return os.path.isdir(local_path(path))  # (a file:// URI too)

