"""The human-readable reports of ``rcfmt inspect``.

``inspect FILE`` prints the schema, the blocks, and per column the encodings and
codecs chosen, stored and uncompressed sizes, null/NaN counts and the file-wide
min/max. ``inspect DATASET`` (a directory or object-store prefix) prints the version,
files, rows, partitioning, recorded clustering and the history of commits.
"""
from __future__ import annotations

import collections
import decimal

import numpy as np
import pyarrow as pa

from ..codecs import CODEC_NAMES
from ..encodings.ids import NAMES
from ..file.reader import RcfmtFile
from ..schema.arrow_io import temporal_value

__all__ = ["describe", "describe_dataset", "column_summary", "encoding_name", "format_bound"]


def encoding_name(eid: int) -> str:
    return NAMES.get(eid, f"unknown({eid})")


def column_summary(f: RcfmtFile) -> list[dict]:
    """Per column: encodings and codecs used (with chunk counts), sizes, counts, bounds."""
    out = []
    for i, col in enumerate(f.footer.columns):
        chunks = f.footer.chunks[i]
        stats = f.block_stats(i)
        has = stats.has_min_max
        lo = min(stats.min[has]) if has.any() else None
        hi = max(stats.max[has]) if has.any() else None
        encodings = collections.Counter(encoding_name(int(e)) for e in chunks["encoding"])
        codecs = collections.Counter(CODEC_NAMES.get(int(c), f"unknown({int(c)})") for c in chunks["compression"])
        out.append({
            "name": col.name,
            "type": str(col.type),
            "nullable": col.nullable,
            "encodings": dict(encodings),
            "compression": dict(codecs),
            "stored_bytes": int(chunks["length"].sum()),
            "uncompressed_bytes": int(chunks["uncompressed_size"].sum()),
            "pages": int(chunks["page_count"].sum()),
            "null_count": int(chunks["null_count"].sum()),
            "nan_count": int(chunks["nan_count"].sum()),
            "min": lo,
            "max": hi,
            "ltype": col.type,
        })
    return out


def _cell(text: str, width: int = 19) -> str:
    """``text`` in a column of ``width``: cut with an ellipsis, never silently."""
    return text if len(text) <= width else text[: width - 1] + "…"


def format_bound(value, ltype) -> str:
    """Show a stats-domain value as the user's type (dates, timestamps, decimals)."""
    if value is None:
        return "-"
    if ltype.annot is not None and ltype.annot[0] not in ("fixed_size_binary", "float16"):
        from ..schema.annotated import shown

        return str(shown(value, ltype))
    if isinstance(value, bytes):
        text = value.decode("utf-8", "backslashreplace")
        return repr(text[:24] + ("…" if len(text) > 24 else ""))
    if ltype.name == "decimal128":  # (exact: Python's default context keeps 28 digits)
        return format(decimal.Decimal(int(value)).scaleb(-ltype.scale, decimal.Context(prec=100)), "f")
    if ltype.name in ("date32", "timestamp"):
        try:
            return str(temporal_value(int(value), ltype.to_arrow()))
        except (ValueError, OverflowError, pa.ArrowException):
            # out of Python's datetime range, or a time zone this machine does not know
            return f"{int(value)} ({ltype.unit or 'days'})"
    if isinstance(value, np.generic):
        value = value.item()
    return str(value)


#: :data:`rcfmt.layout.METADATA_KEY`, looked for before the clustering package is imported
#: (2.8 ms: most files record no clustering)
CLUSTERING_KEY = "rcfmt.clustering"


def _clustering_lines(metadata) -> list[str]:
    """``clustering: hilbert[rank](a, b)`` when the file records a clustering spec."""
    if not metadata or (CLUSTERING_KEY not in metadata and CLUSTERING_KEY.encode() not in metadata):
        return []
    from ..errors import InvalidOptionError
    from ..layout import ClusteringSpec

    try:
        spec = ClusteringSpec.from_metadata(metadata)
    except InvalidOptionError as exc:
        return [f"clustering: unreadable spec ({exc})"]
    return [] if spec is None else [f"clustering: {spec}"]


def describe(f: RcfmtFile) -> str:
    """A human-readable report of the file's layout."""
    lines = [
        f"file:    {f.path}",
        f"size:    {f.size:,} bytes",
        f"rows:    {f.num_rows:,} in {f.num_blocks} blocks",
        f"created: {f.footer.created_by}",
    ]
    if f.metadata:
        keys = ", ".join(sorted(f.metadata))
        lines.append(f"metadata keys: {keys}")
    lines += _clustering_lines(f.metadata)
    header = f"{'column':<18} {'type':<24} {'encoding':<18} {'codec':<10} {'stored':>12} {'raw':>12} {'pages':>6} {'nulls':>9} {'min':>19} {'max':>19}"
    lines += ["", header, "-" * len(header)]
    for s in column_summary(f):
        enc = ",".join(s["encodings"]) or "-"
        codec = ",".join(s["compression"]) or "-"
        lines.append(
            f"{s['name'][:18]:<18} {s['type'][:24]:<24} {enc[:18]:<18} {codec[:10]:<10} {s['stored_bytes']:>12,} "
            f"{s['uncompressed_bytes']:>12,} {s['pages']:>6} {s['null_count']:>9,} "
            f"{_cell(format_bound(s['min'], s['ltype'])):>19} {_cell(format_bound(s['max'], s['ltype'])):>19}")
    return "\n".join(lines)


def describe_dataset(path) -> str:
    """A human-readable report of a dataset: latest version, layout, history."""
    from ..dataset import open_dataset

    ds = open_dataset(path)
    lines = [
        f"dataset: {ds.root}",
        f"version: {'none (no index: files discovered)' if ds.version is None else ds.version}",
        f"files:   {ds.num_files:,}",
        f"rows:    {ds.num_rows:,}" + (f" ({ds.num_deleted_rows:,} more deleted by deletion vectors)"
                                            if ds.num_deleted_rows else ""),
    ]
    if ds.partition_by:
        lines.append(f"partitioned by: {', '.join(ds.partition_by)}")
    clustering = ds.info.get("clustering")
    if clustering:
        lines.append(f"clustering: {clustering.get('curve')}[{clustering.get('mapping')}]"
                     f"({', '.join(clustering.get('columns', []))}), scope {clustering.get('scope')}")
    lines += ["", "schema:"] + [f"  {f.name}: {f.type}" for f in ds.schema]
    if ds.num_deleted_rows:
        lines += ["", f"{'deleted':>12} {'of rows':>12}  file (deletion vectors)"]
        for rel, rows, deleted in zip(ds.snapshot.paths, ds.snapshot.column_values("num_rows"), ds.snapshot.deleted_counts()):
            if deleted:
                lines.append(f"{int(deleted):>12,} {int(rows):>12,}  {rel}")
    if ds.version is not None:
        lines += ["", f"{'version':>7}  {'operation':<10} {'files':>7} {'rows':>14} {'changed rows':>20}  timestamp"]
        for h in ds.history():
            changed = " ".join(f"{sign}{h[key]:,}" for key, sign in (("rows_deleted", "-"), ("rows_updated", "~"),
                                                                     ("rows_inserted", "+")) if h.get(key))
            lines.append(f"{h.get('version', '?'):>7}  {str(h.get('operation', '?')):<10} "
                         f"{h.get('num_files', 0):>7,} {h.get('num_rows', 0):>14,} {changed:>20}  "
                         f"{h.get('timestamp', '')}")
    return "\n".join(lines)
