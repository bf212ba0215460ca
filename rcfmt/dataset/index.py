"""The table-level column-stats index: one row per data file, stored as an rcfmt file.

Index schema (``c`` ranges over the data columns, ``p`` over the partition columns)::

    path            string   file path relative to the dataset root, '/'-separated
    size            int64    bytes of the file
    num_rows        int64
    num_blocks      int64
    deleted_rows    int64    rows of the file its deletion vector deletes (0: none)
    dv_path, dv_offset, dv_size, dv_crc32, dv_inline
                             where the deletion vector is (:mod:`rcfmt.dataset.deletions`);
                             versions written before deletion vectors lack these columns
    p.value         typed    the file's partition value (NULL for the default partition)
    c.min, c.max    typed    file-level bounds of the non-null, non-NaN values; NULL when
                             unknown or when there is no such value. string/binary
                             columns store their bounds as ``binary`` (UTF-8 bytes for
                             strings): a truncated bound may end inside a character.
    c.null_count    int64
    c.nan_count     int64    (0 for non-float columns)
    c.min_exact     bool     the bound is a value of the file (False: truncated bound)
    c.max_exact     bool
    c.values        list     the file's distinct non-null, non-NaN values (bound type),
                             when its bitmap indexes know them all and they are few
                             (docs/DATASET.md §3.2); NULL otherwise. Loaded only by
                             pruning; index versions written before it lack it.

A name ``x.suffix`` cannot collide: suffixes contain no dot and the base columns have no
dot, so ``name.rsplit('.', 1)`` recovers (column, field); partition columns use the
suffix ``value``, which is not a stats field.

File-level bounds are built from the footer's block statistics right after the file is
written (:func:`entry_from_file`), following the rules of :mod:`rcfmt.schema.statistics`:
the min is the least block min, exact when a block attaining it has an exact min (the
max likewise); blocks without non-null non-NaN values do not contribute; any
contributing block without bounds makes the file's bounds unknown; a zero min is
-0.0, a zero max +0.0. String/binary bounds are then cut to ``truncate`` bytes
(default 32): a cut min is a prefix, a cut max has its last non-0xFF byte incremented
(no bound if all are 0xFF), and the exactness flag is cleared.
"""
from __future__ import annotations

import functools
import json
import threading

import numpy as np
import pyarrow as pa

from ..runtime.records import record, field
from ..errors import CorruptFileError
from ..schema.arrow_io import to_numpy, validity
from ..storage.paths import check_inside
from ..schema.statistics import ColumnStats, StatsArrays, truncate_max, truncate_min
from ..schema import nested, nested_json
from ..schema.types import LogicalType, PhysicalKind, logical_type_from_arrow, logical_type_from_json
from ..index.bitmap.layout import RANGE, keys_parser
from .deletions import DV_COLUMNS, DeletionVector
from .partitioning import Partitioning

__all__ = [
    "check_relpath",
    "check_inside",
    "FileEntry", "entry_from_file", "file_stats", "index_schema", "entries_table", "Snapshot",
    "schema_to_json", "schema_from_json", "INDEX_METADATA_KEY", "DEFAULT_INDEX_TRUNCATE",
    "check_index_columns", "index_errors", "index_field",
]

INDEX_METADATA_KEY = "rcfmt.dataset"
DEFAULT_INDEX_TRUNCATE = 32
BASE_COLUMNS = ("path", "size", "num_rows", "num_blocks")
STATS_FIELDS = ("min", "max", "null_count", "nan_count", "min_exact", "max_exact")
VALUES_FIELD = "values"


@record
class FileEntry:
    """What the index knows about one data file (picklable: it travels in Spark commit
    messages). ``stats`` maps data column -> file-level :class:`ColumnStats` in the
    stats domain; ``partition`` holds the typed partition values in partitioning order."""

    path: str
    size: int
    num_rows: int
    num_blocks: int
    partition: tuple = ()
    stats: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)  # column -> tuple of distinct values (stats domain), when known


# ------------------------------------------------------------------ building entries
def file_stats(sa: StatsArrays, ltype: LogicalType, truncate: int = DEFAULT_INDEX_TRUNCATE) -> ColumnStats:
    """File-level statistics of a column from its per-block statistics (module doc)."""
    rows = np.asarray(sa.row_count, np.int64)
    nulls = np.asarray(sa.null_count, np.int64)
    nans = np.asarray(sa.nan_count, np.int64)
    out = ColumnStats(null_count=int(nulls.sum()), nan_count=int(nans.sum()))
    contributing = (rows - nulls - nans) > 0
    if not contributing.any() or not np.asarray(sa.has_min_max, bool)[contributing].all():
        return out
    idx = np.flatnonzero(contributing)
    mins, maxs = sa.min[idx], sa.max[idx]
    min_exact = np.asarray(sa.min_exact, bool)[idx]
    max_exact = np.asarray(sa.max_exact, bool)[idx]
    if mins.dtype == object:
        lo, hi = min(mins), max(maxs)
        lo_exact = any(e for v, e in zip(mins, min_exact) if v == lo)
        hi_exact = any(e for v, e in zip(maxs, max_exact) if v == hi)
    else:
        lo, hi = mins.min(), maxs.max()
        lo_exact, hi_exact = bool(min_exact[mins == lo].any()), bool(max_exact[maxs == hi].any())
        if ltype.is_float:
            t = mins.dtype.type
            lo = t(-0.0) if lo == 0 else lo
            hi = t(0.0) if hi == 0 else hi
    if ltype.kind == PhysicalKind.VARBINARY:
        lo, cut_lo = truncate_min(bytes(lo), truncate)
        hi, cut_hi = truncate_max(bytes(hi), truncate)
        if hi is None:
            return out
        lo_exact, hi_exact = lo_exact and cut_lo, hi_exact and cut_hi
    out.min, out.max, out.min_exact, out.max_exact = lo, hi, bool(lo_exact), bool(hi_exact)
    return out


def entry_from_file(f, relpath: str, partition: tuple = (), truncate: int = DEFAULT_INDEX_TRUNCATE) -> FileEntry:
    """The index entry of an open :class:`~rcfmt.file.reader.RcfmtFile` (its footer only)."""
    stats = {}
    report = f.footer.bitmap_report
    values = {}
    for name in f.filter_schema.names:  # flat columns, and leaves under structs (by path)
        c = f.footer.columns[f.column_index(name)]
        stats[c.name] = file_stats(f.block_stats(c.name), c.type, truncate)
        known = report.get(c.name, {}).get("values")
        if known is not None:
            values[c.name] = _file_values(known, c.type, f.path)
    return FileEntry(relpath, int(f.size), int(f.num_rows), int(f.num_blocks), tuple(partition), stats, values)


def _file_values(known: dict, ltype: LogicalType, path: str) -> tuple:
    """The distinct values a file's footer reports for a column (keys, hex-encoded)."""
    try:
        return keys_parser(ltype)(RANGE, memoryview(bytes.fromhex(known["keys"])), int(known["count"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptFileError(f"bitmap index report: bad values ({exc})", path=path) from None


# ------------------------------------------------------------------ schema (de)serialization
def schema_to_json(schema: pa.Schema) -> list:
    return [nested_json.field_to_json(f, lambda t: logical_type_from_arrow(t).to_json()) for f in schema]


def schema_from_json(obj) -> pa.Schema:
    return pa.schema([nested_json.field_from_json(o, lambda d: logical_type_from_json(d).to_arrow()) for o in obj])


def stats_schema(data_schema: pa.Schema) -> pa.Schema:
    """The columns the index keeps statistics of: flat columns and the leaves under
    structs, by dotted path (what filters name; :func:`rcfmt.schema.nested.filter_schema`)."""
    return nested.filter_schema(data_schema)


def _bound_type(ltype: LogicalType) -> pa.DataType:
    if ltype.kind == PhysicalKind.VARBINARY:
        return pa.binary()
    return LogicalType(ltype.name, ltype.unit, ltype.tz, ltype.precision, ltype.scale).to_arrow()


_BASE_FIELDS = {f.name: f for f in (pa.field("path", pa.string(), False), pa.field("size", pa.int64(), False),
                                     pa.field("num_rows", pa.int64(), False),
                                     pa.field("num_blocks", pa.int64(), False))}
#: the deletion-vector columns (docs/DATASET.md §3.4): in every version written since
#: deletion vectors exist, absent (no row deleted) in older ones
_DV_FIELDS = {f.name: f for f in (pa.field("deleted_rows", pa.int64(), False), pa.field("dv_path", pa.string(), True),
                                  pa.field("dv_offset", pa.int64(), False), pa.field("dv_size", pa.int64(), False),
                                  pa.field("dv_crc32", pa.int64(), False), pa.field("dv_inline", pa.binary(), True))}
assert tuple(_DV_FIELDS) == DV_COLUMNS


def _stats_fields(name: str, ltype: LogicalType) -> list[pa.Field]:
    """The index columns of the statistics of data column ``name``."""
    return list(_stats_field_map(name, ltype).values())


@functools.lru_cache(maxsize=4096)
def _stats_field_map(name: str, ltype: LogicalType) -> dict:
    """:func:`_stats_fields` by index column name, made once per column and type: every
    index read checks each column it loads against them (a 12-file index of 17 data
    columns: 119 columns per read, ~5 ms of building fields each time). Fields are
    immutable; callers must not change the dict."""
    bt = _bound_type(ltype)
    fields = [pa.field(f"{name}.min", bt, True), pa.field(f"{name}.max", bt, True),
              pa.field(f"{name}.null_count", pa.int64(), False),
              pa.field(f"{name}.nan_count", pa.int64(), False),
              pa.field(f"{name}.min_exact", pa.bool_(), False),
              pa.field(f"{name}.max_exact", pa.bool_(), False),
              pa.field(f"{name}.{VALUES_FIELD}", pa.list_(bt), True)]
    return {f.name: f for f in fields}


def index_schema(data_schema: pa.Schema, partitioning: Partitioning) -> pa.Schema:
    fields = [*_BASE_FIELDS.values(), *_DV_FIELDS.values()]
    for name, t in zip(partitioning.names, partitioning.types):
        fields.append(pa.field(f"{name}.value", t, True))
    for f in stats_schema(data_schema):
        fields += _stats_fields(f.name, logical_type_from_arrow(f.type))
    return pa.schema(fields)


def index_field(name: str, stats: pa.Schema, partitioning: Partitioning) -> pa.Field | None:
    """The field of :func:`index_schema` called ``name`` (``stats``: the
    :func:`stats_schema` of the data schema), or None; without building the whole
    schema (a dataset's open checks only the columns it loads)."""
    base = _BASE_FIELDS.get(name) or _DV_FIELDS.get(name)
    if base is not None:
        return base
    column, _, suffix = name.rpartition(".")
    if suffix == "value" and column in partitioning.names:
        return pa.field(name, partitioning.types[list(partitioning.names).index(column)], True)
    i = stats.get_field_index(column) if column else -1
    if i < 0 or suffix not in (*STATS_FIELDS, VALUES_FIELD):
        return None
    return _stats_field_map(column, logical_type_from_arrow(stats.field(i).type)).get(name)


# ------------------------------------------------------------------ stats domain <-> Arrow
def domain_to_arrow(values: list, ltype: LogicalType, t: pa.DataType) -> pa.Array:
    """An Arrow array of type ``t`` from stats-domain values (None = NULL)."""
    if ltype.name == "date32":
        return pa.array([None if v is None else int(v) for v in values], pa.int32()).view(t)
    if ltype.name == "timestamp":
        return pa.array([None if v is None else int(v) for v in values], pa.int64()).view(t)
    if ltype.name == "decimal128":  # (from the unscaled integers: a negative scale's 1E+39 is no Decimal pyarrow takes)
        data, valid = bytearray(16 * len(values)), np.array([v is not None for v in values], bool)
        for i, v in enumerate(values):
            if v is not None:
                data[16 * i : 16 * i + 16] = int(v).to_bytes(16, "little", signed=True)
        validity = None if valid.all() else pa.array(valid).buffers()[1]
        return pa.Array.from_buffers(t, len(values), [validity, pa.py_buffer(bytes(data))])
    if ltype.kind == PhysicalKind.VARBINARY:
        return pa.array([None if v is None else bytes(v) for v in values], t)
    return pa.array([None if v is None else v.item() if isinstance(v, np.generic) else v for v in values], t)


def arrow_to_domain(arr, ltype: LogicalType) -> np.ndarray:
    """Stats-domain values of an index column (entries under NULL unspecified)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    n = len(arr)
    if ltype.kind == PhysicalKind.VARBINARY:
        out = np.empty(n, dtype=object)
        out[:] = arr.to_pylist()
        return out
    if ltype.name == "decimal128":
        out = np.empty(n, dtype=object)
        if n:
            raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=16 * (arr.offset + n))[16 * arr.offset:]
            raw = raw.reshape(n, 16)
            out[:] = [int.from_bytes(raw[i].tobytes(), "little", signed=True) for i in range(n)]
        return out
    return np.asarray(to_numpy(arr), dtype=ltype.numpy_dtype)


def entries_table(entries: list[FileEntry], data_schema: pa.Schema, partitioning: Partitioning) -> pa.Table:
    """The index rows of ``entries`` (schema :func:`index_schema`)."""
    schema = index_schema(data_schema, partitioning)
    cols: dict[str, pa.Array] = {
        "path": pa.array([e.path for e in entries], pa.string()),
        "size": pa.array([e.size for e in entries], pa.int64()),
        "num_rows": pa.array([e.num_rows for e in entries], pa.int64()),
        "num_blocks": pa.array([e.num_blocks for e in entries], pa.int64()),
        **dv_columns([None] * len(entries)),  # (a file is written whole: no row of it is deleted yet)
    }
    for i, (name, t) in enumerate(zip(partitioning.names, partitioning.types)):
        cols[f"{name}.value"] = pa.array([e.partition[i] for e in entries], t)
    for f in stats_schema(data_schema):
        lt = logical_type_from_arrow(f.type)
        bt = schema.field(f"{f.name}.min").type
        stats = []
        for e in entries:
            s = e.stats.get(f.name)
            if s is None:  # a file written before the column was added: every value NULL
                s = ColumnStats(null_count=e.num_rows)
            stats.append(s)
        has = [s.has_min_max for s in stats]
        cols[f"{f.name}.min"] = domain_to_arrow([s.min if h else None for s, h in zip(stats, has)], lt, bt)
        cols[f"{f.name}.max"] = domain_to_arrow([s.max if h else None for s, h in zip(stats, has)], lt, bt)
        cols[f"{f.name}.null_count"] = pa.array([s.null_count for s in stats], pa.int64())
        cols[f"{f.name}.nan_count"] = pa.array([s.nan_count for s in stats], pa.int64())
        cols[f"{f.name}.min_exact"] = pa.array([bool(h and s.min_exact) for s, h in zip(stats, has)], pa.bool_())
        cols[f"{f.name}.max_exact"] = pa.array([bool(h and s.max_exact) for s, h in zip(stats, has)], pa.bool_())
        sets = [e.values.get(f.name) for e in entries]
        flat = domain_to_arrow([v for vs in sets if vs is not None for v in vs], lt, bt)
        offsets = np.concatenate(([0], np.cumsum([0 if vs is None else len(vs) for vs in sets]))).astype(np.int32)
        cols[f"{f.name}.{VALUES_FIELD}"] = pa.ListArray.from_arrays(
            pa.array(offsets), flat, mask=pa.array([vs is None for vs in sets], pa.bool_()))
    return pa.Table.from_arrays([cols[n] for n in schema.names], schema=schema)


def dv_columns(vectors: list) -> dict:
    """The deletion-vector index columns of ``vectors`` (a :class:`DeletionVector` or
    None per file)."""
    return {
        "deleted_rows": pa.array([0 if v is None else v.cardinality for v in vectors], pa.int64()),
        "dv_path": pa.array([None if v is None else v.path for v in vectors], pa.string()),
        "dv_offset": pa.array([0 if v is None else v.offset for v in vectors], pa.int64()),
        "dv_size": pa.array([0 if v is None else v.size for v in vectors], pa.int64()),
        "dv_crc32": pa.array([0 if v is None else v.crc32 for v in vectors], pa.int64()),
        "dv_inline": pa.array([None if v is None else v.inline for v in vectors], pa.binary()),
    }


def vectors_of(table: pa.Table) -> list:
    """Per index row, its file's :class:`DeletionVector` (None: no row deleted; every
    file of a version written before deletion vectors)."""
    if table.schema.get_field_index("deleted_rows") < 0:
        return [None] * table.num_rows
    cols = [table.column(n).to_pylist() for n in DV_COLUMNS]
    return [None if not n else DeletionVector(n, p, o, s, c, i) for n, p, o, s, c, i in zip(*cols)]


def conform_index(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Index rows of an older version (or of files lacking columns) under the index
    ``schema`` of a newer data schema: statistics of columns the files lack say every
    value is NULL, those of widened columns are converted (schema evolution)."""
    n = table.num_rows
    rows = table.column("num_rows")
    cols = []
    for f in schema:
        if table.schema.get_field_index(f.name) >= 0:
            c = table.column(f.name)
            cols.append(c if c.type == f.type else c.cast(f.type))
        elif f.name.endswith(".null_count"):
            cols.append(rows)
        elif f.name.endswith(".nan_count") or f.name in ("deleted_rows", "dv_offset", "dv_size", "dv_crc32"):
            cols.append(pa.array([0] * n, pa.int64()))
        elif f.name.endswith((".min_exact", ".max_exact")):
            cols.append(pa.array([False] * n, pa.bool_()))
        else:
            cols.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


# ------------------------------------------------------------------ a loaded index
class index_errors:
    """Context: a CorruptFileError raised inside says which index version it is about
    (``dataset index version N: ...``; its path, when it has none, the version file)."""

    def __init__(self, version: int | None, path: str | None):
        self.version, self.path = version, path

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if not isinstance(exc, CorruptFileError) or self.version is None:
            return False
        prefix = f"dataset index version {self.version}: "
        if exc.reason.startswith(prefix):
            return False
        raise type(exc)(prefix + exc.reason, path=exc.path or self.path, column=exc.column, block=exc.block,
                        page=exc.page, offset=exc.offset) from None


def check_index_columns(table: pa.Table, names, data_schema: pa.Schema, partitioning: Partitioning,
                        path: str | None) -> None:
    """Raise CorruptFileError unless each of the columns ``names`` of ``table`` (read from
    an index file) is the column of that name of the version's :func:`index_schema`
    (of its recorded data schema and partitioning): present, of its type, and without
    NULLs where the schema has none -- a forged footer cannot make statistics be read
    as another type, or NULL counts as numbers."""
    stats = stats_schema(data_schema)
    for name in names:
        i, field = table.schema.get_field_index(name), index_field(name, stats, partitioning)
        if i < 0 or field is None:
            where = "the index file" if i < 0 else "the index of the version's dataset schema"
            raise CorruptFileError(f"index column {name!r} is not in {where}", path=path)
        got = table.schema.field(i)
        if got.type != field.type:
            raise CorruptFileError(f"index column {name!r} is {got.type}, the version's dataset schema makes it "
                                   f"{field.type}", path=path)
        if not field.nullable and table.column(i).null_count:
            raise CorruptFileError(f"index column {name!r} holds NULLs", path=path)


def check_relpath(rel, index_path: str | None = None) -> str:
    """``rel`` if it names a file inside the dataset root, else CorruptFileError.

    Index paths are relative, "/"-separated, and stay below the root: no absolute path,
    drive, backslash, empty, "." or ".." component, or NUL. A forged index must not make
    a reader read files outside the dataset."""
    if not isinstance(rel, str) or not rel:
        raise CorruptFileError(f"index lists an empty or non-string file path {rel!r}", path=index_path)
    parts = rel.split("/")
    if ("\\" in rel or "\0" in rel or ":" in parts[0]
            or any(p in ("", ".", "..") for p in parts)):
        raise CorruptFileError(f"index lists file path {rel!r}, which leaves the dataset root", path=index_path)
    return rel


class Snapshot:
    """One version of a dataset: its schema, partitioning and file list.

    ``table`` holds the base and partition columns of the index (loaded at once); stats
    columns are loaded on demand by :meth:`load_stats` (only those a filter needs).
    ``version`` is None for a directory without index, whose entries were built from
    footers at discovery time (then ``table`` holds every column).
    """

    def __init__(self, root: str, data_schema: pa.Schema, partitioning: Partitioning, table: pa.Table,
                 info: dict | None = None, version: int | None = None, index_path: str | None = None,
                 index_size: int | None = None):
        self.root = root
        self.data_schema = data_schema
        self.partitioning = partitioning
        self.table = table
        self.info = info or {}
        self.version = version
        self.index_path = index_path
        self.index_size = index_size  # bytes of the index file, when listed with it
        self.schema = pa.schema(list(data_schema) + partitioning.fields)
        self.stats_schema = stats_schema(data_schema)  # the data columns with statistics in the index
        self._ltypes = {f.name: logical_type_from_arrow(f.type) for f in [*self.stats_schema, *partitioning.fields]}
        #: held while index columns are appended to ``table``: a Dataset shared by threads
        #: loads each column once (two first filtered reads at once appended the same
        #: statistics twice, and every later read of the column raised KeyError). One per
        #: snapshot, so that datasets (and their object-store reads) do not wait on each
        #: other; a chain of changes takes its checkpoint's within its own.
        self.loading = threading.RLock()

    # ---- files
    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def paths(self) -> list[str]:
        return self.table.column("path").to_pylist()

    def column_values(self, name: str) -> np.ndarray:
        return to_numpy(self.table.column(name))

    def deleted_counts(self) -> np.ndarray:
        """Per file, the rows its deletion vector deletes (zeros before deletion vectors)."""
        if self.table.schema.get_field_index("deleted_rows") < 0:
            return np.zeros(len(self), np.int64)
        return np.asarray(self.column_values("deleted_rows"), np.int64)

    def live_rows(self) -> np.ndarray:
        """Per file, the rows a read returns: its rows less the deleted ones."""
        return np.asarray(self.column_values("num_rows"), np.int64) - self.deleted_counts()

    def vectors(self) -> list:
        """Per file, its :class:`DeletionVector` (path relative to the root) or None."""
        return vectors_of(self.table)

    def partition_values(self) -> list[tuple]:
        cols = [self.table.column(f"{n}.value").to_pylist() for n in self.partitioning.names]
        return list(zip(*cols)) if cols else [() for _ in range(len(self))]

    # ---- stats
    def load_stats(self, columns) -> None:
        """Make sure the stats columns of the data ``columns`` are in ``table``."""
        want = [f"{c}.{s}" for c in columns if self.stats_schema.get_field_index(c) >= 0 for s in STATS_FIELDS]
        missing = [n for n in want if self.table.schema.get_field_index(n) < 0]
        if missing:
            self.load_columns(missing)

    def load_columns(self, names: list, optional: bool = False) -> None:
        """Append index columns ``names`` to ``table``, read from the index file (a
        version is never replaced); with ``optional``, those the file lacks are skipped
        (columns added to the index after that version was written)."""
        with self.loading:
            names = [n for n in names if self.table.schema.get_field_index(n) < 0]  # (loaded meanwhile)
            if names:
                self._append_columns(names, optional)

    def _append_columns(self, names: list, optional: bool) -> None:
        from ..file.reader import RcfmtFile

        with index_errors(self.version, self.index_path):
            try:
                f = RcfmtFile(self.index_path, size=self.index_size, immutable=True)
            except FileNotFoundError:
                raise CorruptFileError("the index file was removed (by vacuum?) after this version was opened, "
                                       "before the statistics a filter needs were loaded from it: open the "
                                       "dataset again", path=self.index_path) from None
            with f:
                self._check_same_version(f)
                present = [n for n in names if f.schema.get_field_index(n) >= 0]
                if not optional and len(present) != len(names):
                    missing = [n for n in names if n not in present]
                    raise CorruptFileError(f"lacks the statistics columns {missing} of its dataset schema",
                                           path=self.index_path)
                if not present:
                    return
                extra = f.read(columns=present)
            check_index_columns(extra, present, self.data_schema, self.partitioning, self.index_path)
            if extra.num_rows != self.table.num_rows:
                raise CorruptFileError("index columns disagree in length", path=self.index_path)
        for name in present:
            self.table = self.table.append_column(extra.schema.field(name), extra.column(name))

    def _check_same_version(self, f) -> None:
        """The index file reopened for columns loaded on demand must be the one this
        version was read from (its commit's transaction): an index object replaced at its
        path since (a dataset deleted and written again, a forged or restored copy) would
        pair another index's statistics with this version's files, and a filter would
        prune files by them -- silently wrong rows."""
        want = self.info.get("transaction")
        if want is None:
            return
        try:
            got = json.loads(f.metadata.get(INDEX_METADATA_KEY) or "null")
            got = got.get("transaction") if isinstance(got, dict) else None
        except (ValueError, RecursionError):
            got = None
        if got != want:
            raise CorruptFileError("the index file was replaced after this version was opened (it records another "
                                   "commit), before the statistics a filter needs were loaded from it: open the "
                                   "dataset again", path=self.index_path)

    def value_sets(self, name: str) -> list:
        """Per file, the distinct non-null, non-NaN values of column ``name`` (a sorted
        list in the stats domain) when the index knows them, else None."""
        column = f"{name}.{VALUES_FIELD}"
        if self.stats_schema.get_field_index(name) < 0:
            return [None] * len(self)
        if self.table.schema.get_field_index(column) < 0 and self.index_path is not None:
            self.load_columns([column], optional=True)  # (versions written before it lack it)
        if self.table.schema.get_field_index(column) < 0:
            return [None] * len(self)
        lt = self._ltypes[name]
        lists = self.table.column(column)
        lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
        flat = arrow_to_domain(lists.values, lt)  # (offsets index the child array itself)
        offsets = to_numpy(lists.offsets).astype(np.int64)
        present = validity(lists)
        return [list(flat[offsets[i] : offsets[i + 1]]) if present[i] else None for i in range(len(lists))]

    def stats_arrays(self, name: str) -> StatsArrays:
        """Statistics of column ``name`` with one unit per file (partition columns too)."""
        lt = self._ltypes[name]
        rows = self.column_values("num_rows").astype(np.int64)
        n = len(rows)
        if name in self.partitioning.names:
            arr = self.table.column(f"{name}.value")
            arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
            valid = validity(arr)
            if lt.kind == PhysicalKind.VARBINARY:  # string partition values: UTF-8 bytes
                values = np.empty(n, dtype=object)
                values[:] = [None if v is None else v.encode("utf-8") for v in arr.to_pylist()]
            else:
                values = arrow_to_domain(arr, lt)
            return StatsArrays(row_count=rows, null_count=np.where(valid, 0, rows).astype(np.int64),
                               nan_count=np.zeros(n, np.int64), has_min_max=valid.copy(), min=values, max=values,
                               min_exact=valid.copy(), max_exact=valid.copy())
        self.load_stats([name])
        t = self.table
        lo_arr, hi_arr = t.column(f"{name}.min"), t.column(f"{name}.max")
        lo_arr = lo_arr.combine_chunks() if isinstance(lo_arr, pa.ChunkedArray) else lo_arr
        hi_arr = hi_arr.combine_chunks() if isinstance(hi_arr, pa.ChunkedArray) else hi_arr
        has = validity(lo_arr) & validity(hi_arr)
        return StatsArrays(
            row_count=rows,
            null_count=self.column_values(f"{name}.null_count").astype(np.int64),
            nan_count=self.column_values(f"{name}.nan_count").astype(np.int64),
            has_min_max=has,
            min=arrow_to_domain(lo_arr, lt),
            max=arrow_to_domain(hi_arr, lt),
            min_exact=has & np.asarray(self.column_values(f"{name}.min_exact"), bool),
            max_exact=has & np.asarray(self.column_values(f"{name}.max_exact"), bool),
        )


def dumps_info(info: dict) -> str:
    return json.dumps(info, sort_keys=True, separators=(",", ":"))
