"""Writing the data files of a dataset: :class:`FileSetWriter` cuts rows into
partitioned data files in a staging directory (clustered when the dataset says so), and
the helpers that decide what the files are written with (clustering, inherited bitmap
indexes). :mod:`rcfmt.dataset.writer` (``write_dataset``), :mod:`rcfmt.dataset.optimize`
and the Spark source's tasks all write through here, then :mod:`rcfmt.dataset.commits`.
"""
from __future__ import annotations

import datetime as _dt
import errno
import os

import numpy as np
import pyarrow as pa

from ..schema import nested
from ..errors import InvalidDataError, InvalidOptionError, SchemaError
from ..runtime.options import names as option_names
from ..schema.arrow_io import take
from ..schema.gather import with_child_types
from ..schema.tables import storage_schema
from ..schema.types import same_schema
from ..file.reader import RcfmtFile
from ..file.chunk_encoding import chunk_hints
from ..file.writer import Writer, append_checked, value_checker
from ..interop.arrow import as_table
from ..interop import cdata
from ..layout import METADATA_KEY, ClusteringSpec
from .evolution import file_renames, renamed_path, widens
from ..storage import delete_files, is_remote, open_output
from .index import DEFAULT_INDEX_TRUNCATE, FileEntry, entry_from_file
from .partitioning import Partitioning
from .scanning import missing_is_corrupt

__all__ = ["FileSetWriter", "DEFAULT_TARGET_FILE_ROWS", "MAX_OPEN_FILES", "clustering_spec", "clustering_info",
           "recorded_clustering", "cluster_file", "check_clustering_columns", "inherited_bitmap_indexes", "inherited_hints",
           "split_schema", "split_by_partition", "positive", "join_path"]

DEFAULT_TARGET_FILE_ROWS = 1 << 22


# ------------------------------------------------------------------ bitmap indexes
def join_path(root: str, rel: str) -> str:
    """The file at ``rel`` (a "/"-separated path) below the dataset root ``root``."""
    return f"{root}/{rel}" if is_remote(root) else os.path.join(root, *rel.split("/"))


def inherited_bitmap_indexes(paths, data_schema: pa.Schema, write_options: dict, ids: dict | None = None) -> None:
    """Unless ``write_options`` names ``bitmap_indexes``, set it to what the files at
    ``paths`` were written with, from their footers' reports (per column the kind named,
    "auto" for the columns considered without one; an empty report: None), so that
    rewrites and appends keep the indexes. Files written before indexes report nothing:
    then the default stays. ``ids``: the dataset's column ids, so that a column renamed
    since a file was written keeps its file's indexes under its new name."""
    if "bitmap_indexes" in write_options:
        return
    option: dict = {}
    reported = False
    for path in paths:
        with missing_is_corrupt(path), RcfmtFile(path) as f:
            region, report = f.footer.bitmap_index, f.footer.bitmap_report
            back = {old: new for new, old in file_renames(f.schema.names, ids, data_schema.names).items()}
        if region is None:
            continue
        reported = True
        for column, entry in report.items():
            column = renamed_path(column, back, f.schema.names)
            if _names_column(data_schema, column) and column not in option:
                option[column] = entry.get("named", "auto")
    if reported:
        write_options["bitmap_indexes"] = option or None


def inherited_hints(path: str, data_schema: pa.Schema, ids: dict | None = None) -> dict:
    """The encodings the dataset file at ``path`` chose in its last block, as hints
    for new files of the same columns (:func:`rcfmt.file.chunk_encoding.chunk_hints`, under the
    dataset's names: ``ids`` as for :func:`inherited_bitmap_indexes`). A hint saves
    the selector's sampling while the new rows look alike; it is never binding."""
    with missing_is_corrupt(path), RcfmtFile(path) as f:
        hints = chunk_hints(f.footer)
        back = {old: new for new, old in file_renames(f.schema.names, ids, data_schema.names).items()}
    return {renamed_path(column, back, f.schema.names): decision for column, decision in hints.items()}


def _names_column(schema: pa.Schema, path: str) -> bool:
    """Whether ``path`` is a column of ``schema`` or a path under one of its nested
    columns (``c.d`` dropped beside a flat ``c`` is neither)."""
    if schema.get_field_index(path) >= 0:
        return True
    top = path.split(".")[0]
    return top != path and schema.get_field_index(top) >= 0 and nested.is_nested(schema.field(top).type)


# ------------------------------------------------------------------ clustering
def clustering_spec(cluster_by, curve: str = "zorder", mapping: str = "rank") -> ClusteringSpec | None:
    """The :class:`~rcfmt.layout.ClusteringSpec` of ``cluster_by`` (a name, a list of
    names, a spec, or None); InvalidOptionError for bad names, curves or mappings."""
    if cluster_by is None or isinstance(cluster_by, ClusteringSpec):
        return cluster_by
    return ClusteringSpec(tuple(option_names(cluster_by, "cluster_by")), curve=curve, mapping=mapping)


def check_clustering_columns(spec: ClusteringSpec, data_schema: pa.Schema) -> None:
    """SchemaError unless every clustering column is a data column (not a partition one)."""
    missing = [c for c in spec.columns if c not in data_schema.names]
    if missing:
        raise SchemaError(f"clustering columns {missing} are not data columns of {data_schema.names}")


def clustering_info(spec: ClusteringSpec | None, scope: str) -> dict | None:
    """What a version's ``info["clustering"]`` records: the spec without its bounds and
    ``scope`` -- "file" (each file clustered on its own) or "partition" (the rows of each
    partition clustered together and range-split into files, by :func:`optimize`)."""
    if spec is None:
        return None
    return {**spec.to_dict(include_bounds=False), "scope": scope}


def recorded_clustering(info: dict | None) -> ClusteringSpec | None:
    """The clustering a dataset version records (see :func:`clustering_info`), or None."""
    raw = (info or {}).get("clustering")
    if not raw:
        return None
    return ClusteringSpec.from_dict({k: v for k, v in raw.items() if k not in ("scope", "applied")})


def cluster_file(table: pa.Table, spec: ClusteringSpec) -> tuple[pa.Table, dict]:
    """One file's rows reordered by ``spec`` (fitted on them when it has no bounds yet),
    and the file metadata recording it."""
    keys = cdata.to_storage(table)  # (interval columns cluster by their stored values)
    fitted = spec if spec.fitted else spec.fit(keys)
    return take(table, pa.array(fitted.order(keys))), {METADATA_KEY: fitted.to_json(include_bounds=False)}


# ------------------------------------------------------------------ schemas
def split_schema(schema: pa.Schema, partitioning: Partitioning) -> pa.Schema:
    """The data columns: ``schema`` without the partition columns."""
    return pa.schema([f for f in schema if f.name not in partitioning.names])


# ------------------------------------------------------------------ splitting rows by partition
def _zones_as_utc(t: pa.DataType) -> pa.DataType:
    """``t`` with every aware timestamp in it, at any depth, in UTC: their values are the
    same instants whatever zone each names (Spark hands batches over in its session's)."""
    if pa.types.is_timestamp(t):
        return t if t.tz is None else pa.timestamp(t.unit, "UTC")
    return t if isinstance(t, pa.BaseExtensionType) else with_child_types(t, _zones_as_utc)


def split_by_partition(table: pa.Table, partitioning: Partitioning) -> list[tuple[tuple, pa.Table]]:
    """``[(partition values, rows without the partition columns), ...]``, in order of
    first appearance of each partition."""
    data_names = [n for n in table.schema.names if n not in partitioning.names]
    if not partitioning:
        return [((), table)]
    n = table.num_rows
    key = np.zeros(n, np.int64)
    dictionaries = []
    radix = 1
    for name in partitioning.names:
        column = table.column(name)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        enc = column.combine_chunks().dictionary_encode(null_encoding="encode")
        codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64)
        try:
            dictionaries.append(enc.dictionary.to_pylist())
        except (OverflowError, ValueError):  # (a date32 past year 9999 has no Python date, nor an ISO name)
            raise InvalidDataError(f"partition column {name!r} holds a date outside years 1-9999, which no "
                                   "partition directory can name; partition by another column") from None
        key += codes * radix
        radix *= max(1, len(enc.dictionary))
        if radix >= 2**62:
            raise InvalidOptionError("too many distinct partition value combinations")
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_key[1:] != sorted_key[:-1]))) if n else np.empty(0, int)
    groups = []
    data = table.select(data_names)
    for s, e in zip(starts, list(starts[1:]) + [n]):
        idx = order[s:e]
        k = int(sorted_key[s])
        values = []
        for d in dictionaries:
            size = max(1, len(d))
            values.append(d[k % size])
            k //= size
        groups.append((int(idx[0]), tuple(values), take(data, pa.array(idx))))
    groups.sort(key=lambda g: g[0])
    return [(_normalize_partition(v, partitioning), t) for _, v, t in groups]


def _normalize_partition(values: tuple, partitioning: Partitioning) -> tuple:
    out = []
    for v, t in zip(values, partitioning.types):
        if isinstance(v, str) and v == "":
            v = None  # Hive: '' is the default partition (read back as NULL)
        if isinstance(v, _dt.datetime):
            v = v.date()
        out.append(v)
    return tuple(out)


# ------------------------------------------------------------------ writing files
class _OpenFile:
    def __init__(self, relpath: str, staged: str):
        self.relpath = relpath
        self.staged = staged
        self.rows = 0
        self.writer: Writer | None = None
        self.buffer: list[pa.Table] = []


#: files a :class:`FileSetWriter` keeps open at once (partitions written in turn): each
#: holds a file descriptor and a block of rows in memory
MAX_OPEN_FILES = 128


class FileSetWriter:
    """Writes rows into rcfmt data files under ``staging_dir`` (mirroring their final
    relative paths), one set of files per partition, each at most ``target_file_rows``
    rows. :meth:`close` returns ``[(FileEntry, staged path), ...]``; each entry is built
    from the file's footer right after it was written.

    ``schema`` is the full input schema (partition columns included); batches passed to
    :meth:`write` must have its column names; their types are cast to it when they
    differ only in offset width or time zone representation. ``clustering`` (a
    :class:`~rcfmt.layout.ClusteringSpec`) reorders the rows of each file before it is
    written (a file's rows are buffered until it is full) and records the spec in the
    file's metadata; ``metadata`` is added to every file's footer.
    """

    def __init__(self, staging_dir: str, schema: pa.Schema, partitioning: Partitioning, *, prefix: str,
                 target_file_rows: int = DEFAULT_TARGET_FILE_ROWS, write_options: dict | None = None,
                 clustering: ClusteringSpec | None = None, metadata: dict | None = None,
                 truncate: int = DEFAULT_INDEX_TRUNCATE, hints: dict | None = None):
        self.staging_dir = staging_dir
        self.schema = schema
        self.partitioning = partitioning
        self.data_schema = split_schema(schema, partitioning)
        self.prefix = prefix
        self.target_file_rows = positive("target_file_rows", target_file_rows)
        self.write_options = dict(write_options or {})
        self.clustering = clustering
        self.metadata = dict(metadata or {})
        self.truncate = truncate
        self.hints = hints  # (stored column -> selector Decision: see inherited_hints)
        self._open: dict[tuple, _OpenFile] = {}
        self._seq = 0
        self._check_values = value_checker(schema)
        self._rows_seen = 0
        self.files: list[tuple[FileEntry, str]] = []
        if clustering is not None:
            check_clustering_columns(clustering, self.data_schema)

    def write(self, data) -> None:
        table = as_table(data)
        if table.schema.names != self.schema.names:
            raise SchemaError(f"columns {table.schema.names} differ from the dataset's {self.schema.names}")
        if not same_schema(table.schema, self.schema):
            stored, _ = storage_schema(table.schema)
            for column, given, field in zip(table.columns, stored, self.schema):  # (a cast would round, parse...)
                if column.null_count == len(column):  # (all NULL, of whatever type: a chunk of an empty column)
                    continue
                if not widens(_zones_as_utc(given.type), _zones_as_utc(field.type)):
                    raise SchemaError(f"column {field.name!r}: {given.type} data does not fit the dataset's "
                                      f"{field.type} (a dataset column may only widen: int32 -> int64, float32 -> "
                                      f"float64, decimal precision up, string -> large_string)")
            try:  # (list views by rcfmt: Arrow's cast makes invalid lists of them)
                columns = []
                for column, field in zip(table.columns, self.schema):
                    try:
                        columns.append(nested.to_storage(column, field.type))
                    except InvalidDataError as exc:
                        raise InvalidDataError(exc.reason, column=field.name,
                                               row=None if exc.row is None else self._rows_seen + exc.row) from None
                table = pa.Table.from_arrays(columns, schema=self.schema)
            except InvalidDataError:
                raise
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
                raise SchemaError(f"data does not fit the dataset schema: {exc}") from None
        try:  # values a reader would refuse, by rows of the data given
            scrub = self._check_values(table)
        except InvalidDataError as exc:
            raise InvalidDataError(exc.reason, column=exc.column,
                                   row=None if exc.row is None else self._rows_seen + exc.row) from None
        self._rows_seen += table.num_rows
        if table.num_rows == 0:
            return
        for key, part in split_by_partition(table, self.partitioning):
            # (clean rows are not looked at again by the files' writers; bytes under NULL
            # strings are left to them, which store those slots emptied)
            self.write_partition(key, part, _checked=not scrub)

    def write_partition(self, key: tuple, table: pa.Table, _checked: bool = False) -> None:
        """Append rows of the data columns (``data_schema``) to partition ``key``. At most
        :data:`MAX_OPEN_FILES` files are open at once: a new partition's file first
        finishes the file of the partition written longest ago (its later rows start
        another file)."""
        while table.num_rows:
            f = self._open.get(key)
            if f is None:
                if len(self._open) >= MAX_OPEN_FILES:
                    self._finish(next(iter(self._open)))
                f = self._new_file(key)
            else:
                self._open[key] = self._open.pop(key)  # (the most recently written last)
            room = self.target_file_rows - f.rows
            piece, table = table.slice(0, room), table.slice(room)
            if self.clustering is not None:
                f.buffer.append(piece)
            else:
                if _checked:
                    append_checked(f.writer, piece)
                else:
                    f.writer.write(piece)
            f.rows += piece.num_rows
            if f.rows >= self.target_file_rows:
                self._finish(key)

    def finish_partition(self, key: tuple) -> None:
        """Close the open file of partition ``key`` (the next rows start a new file)."""
        if key in self._open:
            self._finish(key)

    def _new_file(self, key: tuple) -> _OpenFile:
        directory = self.partitioning.directory(key)
        name = f"part-{self.prefix}-{self._seq:05d}.rcfmt"
        self._seq += 1
        relpath = f"{directory}/{name}" if directory else name
        staged = os.path.join(self.staging_dir, *relpath.split("/"))
        if not is_remote(staged):
            try:
                os.makedirs(os.path.dirname(staged), exist_ok=True)
            except OSError as e:
                if e.errno != errno.ENAMETOOLONG:
                    raise
                raise InvalidDataError(self.partitioning.too_long(key)) from None
        f = _OpenFile(relpath, staged)
        if self.clustering is None:
            f.writer = Writer(_sink(staged), self.data_schema, metadata=self.metadata, _hints=self.hints,
                              **self.write_options)
        self._open[key] = f
        return f

    def _finish(self, key: tuple) -> None:
        f = self._open.pop(key)
        if self.clustering is not None:
            table = pa.concat_tables(f.buffer).combine_chunks() if f.buffer else self.data_schema.empty_table()
            f.buffer = []
            table, meta = cluster_file(table, self.clustering)
            w = Writer(_sink(f.staged), self.data_schema, metadata={**self.metadata, **meta}, _hints=self.hints,
                       **self.write_options)
            try:
                w.write(table)
            except BaseException:
                w.abort()
                raise
            f.writer = w
        f.writer.close()
        try:
            with RcfmtFile(f.staged) as rf:
                entry = entry_from_file(rf, f.relpath, key, self.truncate)
        except BaseException:  # (its read back failed: abort() no longer sees it, so it goes here)
            delete_files([f.staged])
            raise
        self.files.append((entry, f.staged))

    def close(self) -> list[tuple[FileEntry, str]]:
        for key in list(self._open):
            self._finish(key)
        return self.files

    def abort(self) -> None:
        for f in self._open.values():
            if f.writer is not None:
                try:
                    f.writer.abort()
                except Exception:
                    pass
        self._open.clear()
        delete_files(staged for _, staged in self.files)
        self.files = []


def _sink(path: str):
    """Where a data file goes: a staging file (local), or its final object (object
    stores: nothing names it before the commit, and a failed write deletes it)."""
    return open_output(path, atomic=False) if is_remote(path) else path


def positive(name, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidOptionError(f"{name} must be a positive integer, got {value!r}")
    return min(int(value), 1 << 62)  # (more rows than any table holds: as many as there are)
