"""Writing datasets: :func:`write_dataset`, the :class:`FileSetWriter` that cuts rows into
partitioned data files in a staging directory, and :func:`commit` (the protocol is
described in :mod:`rcfmt.dataset.log`).

The Spark data source uses the same pieces: each task runs a :class:`FileSetWriter`
into its own staging directory and returns the :class:`~rcfmt.dataset.index.FileEntry`
of its files; the driver calls :func:`commit` with all of them.
"""
from __future__ import annotations

import datetime as _dt
import os
import uuid
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pyarrow as pa

from ..schema import nested
from ..errors import CommitConflictError, InvalidDataError, InvalidOptionError, RcfmtError, SchemaError, UnsupportedError
from ..schema.arrow_io import take
from ..file.reader import RcfmtFile
from ..file.writer import Writer, WriteOptions, value_checker
from ..interop.arrow import arrow_stream, as_table
from ..schema.tables import storage_schema
from ..layout import METADATA_KEY, ClusteringSpec
from .evolution import column_ids, extend_column_ids, file_renames, keeps_columns, merge_schemas, renamed_path
from ..storage import (check_commit_support, delete_files, is_remote, list_names, list_tree, local_path, open_output,
                       remote_kind)
from . import log
from .index import (DEFAULT_INDEX_TRUNCATE, INDEX_METADATA_KEY, STATS_FIELDS, VALUES_FIELD, FileEntry, conform_index,
                    Snapshot, dumps_info, entries_table, entry_from_file, index_schema, schema_to_json, stats_schema)
from .partitioning import Partitioning
from .snapshot import WRITER_FILE, load_base, read_snapshot, remember_committed

__all__ = ["write_dataset", "begin_write", "WritePlan", "FileSetWriter", "commit", "clustering_spec", "clustering_info",
           "recorded_clustering", "cluster_file", "check_clustering_columns", "DEFAULT_TARGET_FILE_ROWS"]

DEFAULT_TARGET_FILE_ROWS = 1 << 22
INDEX_BLOCK_ROWS = 8192
MAX_COMMIT_ATTEMPTS = 1000
DATA_SUFFIXES = (".rcfmt", ".rcf")


# ------------------------------------------------------------------ bitmap indexes
def _join(root: str, rel: str) -> str:
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
        with RcfmtFile(path) as f:
            region, report = f.footer.bitmap_index, f.footer.bitmap_report
            back = {old: new for new, old in file_renames(f.schema.names, ids, data_schema.names).items()}
        if region is None:
            continue
        reported = True
        for column, entry in report.items():
            column = renamed_path(column, back)
            if data_schema.get_field_index(column.split(".")[0]) >= 0 and column not in option:
                option[column] = entry.get("named", "auto")
    if reported:
        write_options["bitmap_indexes"] = option or None


# ------------------------------------------------------------------ clustering
def clustering_spec(cluster_by, curve: str = "zorder", mapping: str = "rank") -> ClusteringSpec | None:
    """The :class:`~rcfmt.layout.ClusteringSpec` of ``cluster_by`` (a name, a list of
    names, a spec, or None); InvalidOptionError for bad names, curves or mappings."""
    if cluster_by is None or isinstance(cluster_by, ClusteringSpec):
        return cluster_by
    columns = (cluster_by,) if isinstance(cluster_by, str) else tuple(cluster_by)
    return ClusteringSpec(columns, curve=curve, mapping=mapping)


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
    fitted = spec if spec.fitted else spec.fit(table)
    return fitted.apply(table), {METADATA_KEY: fitted.to_json(include_bounds=False)}


# ------------------------------------------------------------------ schemas
def split_schema(schema: pa.Schema, partitioning: Partitioning) -> pa.Schema:
    """The data columns: ``schema`` without the partition columns."""
    return pa.schema([f for f in schema if f.name not in partitioning.names])


# ------------------------------------------------------------------ splitting rows by partition
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
        dictionaries.append(enc.dictionary.to_pylist())
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
                 truncate: int = DEFAULT_INDEX_TRUNCATE):
        self.staging_dir = staging_dir
        self.schema = schema
        self.partitioning = partitioning
        self.data_schema = split_schema(schema, partitioning)
        self.prefix = prefix
        self.target_file_rows = _positive("target_file_rows", target_file_rows)
        self.write_options = dict(write_options or {})
        self.clustering = clustering
        self.metadata = dict(metadata or {})
        self.truncate = truncate
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
        if not table.schema.equals(self.schema):
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
        try:  # values a reader would refuse, by rows of the data given (its files' writers look again)
            self._check_values(table)
        except InvalidDataError as exc:
            raise InvalidDataError(exc.reason, column=exc.column,
                                   row=None if exc.row is None else self._rows_seen + exc.row) from None
        self._rows_seen += table.num_rows
        if table.num_rows == 0:
            return
        for key, part in split_by_partition(table, self.partitioning):
            self.write_partition(key, part)

    def write_partition(self, key: tuple, table: pa.Table) -> None:
        """Append rows of the data columns (``data_schema``) to partition ``key``."""
        while table.num_rows:
            f = self._open.get(key) or self._new_file(key)
            room = self.target_file_rows - f.rows
            piece, table = table.slice(0, room), table.slice(room)
            if self.clustering is not None:
                f.buffer.append(piece)
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
            os.makedirs(os.path.dirname(staged), exist_ok=True)
        f = _OpenFile(relpath, staged)
        if self.clustering is None:
            f.writer = Writer(_sink(staged), self.data_schema, metadata=self.metadata, **self.write_options)
        self._open[key] = f
        return f

    def _finish(self, key: tuple) -> None:
        f = self._open.pop(key)
        if self.clustering is not None:
            table = pa.concat_tables(f.buffer).combine_chunks() if f.buffer else self.data_schema.empty_table()
            f.buffer = []
            table, meta = cluster_file(table, self.clustering)
            w = Writer(_sink(f.staged), self.data_schema, metadata={**self.metadata, **meta}, **self.write_options)
            try:
                w.write(table)
            except BaseException:
                w.abort()
                raise
            f.writer = w
        f.writer.close()
        with RcfmtFile(f.staged) as rf:
            entry = entry_from_file(rf, f.relpath, key, self.truncate)
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


def _positive(name, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidOptionError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


# ------------------------------------------------------------------ commit
def write_index_file(root: str, table: pa.Table, info: dict, name: str) -> str:
    """Write a complete index to ``_rcfmt/_tmp/<name>.rcfmt`` (fsync'd); return its path."""
    from ..file.writer import write_table

    d = log.tmp_dir(root)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{name}.rcfmt")
    write_table(table, path, metadata={INDEX_METADATA_KEY: dumps_info(info)}, block_rows=INDEX_BLOCK_ROWS)
    return path


def index_bytes(table: pa.Table, info: dict) -> bytes:
    """A complete index file as bytes (for object stores, whose commit is one PUT)."""
    import tempfile

    from ..file.writer import write_table

    with tempfile.TemporaryDirectory(prefix="rcfmt-index-") as d:
        path = os.path.join(d, "index.rcfmt")
        write_table(table, path, metadata={INDEX_METADATA_KEY: dumps_info(info)}, block_rows=INDEX_BLOCK_ROWS)
        with open(path, "rb") as f:
            return f.read()


def publish_files(root: str, staged: list[tuple[str, str]]) -> list[str]:
    """Rename staged data files (``(staged path, relpath)``) to their final place (on
    object stores they were written there: nothing moves)."""
    if is_remote(root):
        return [src for src, _ in staged]
    published = []
    try:
        dirs = set()
        for src, rel in staged:
            dst = os.path.join(root, *rel.split("/"))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.exists(dst):
                raise RcfmtError(f"data file {dst!r} already exists")
            os.rename(src, dst)
            published.append(dst)
            os.utime(dst)  # vacuum's retention counts from publication, not from the write
            dirs.add(os.path.dirname(dst))
        for d in dirs:
            log.fsync_dir(d)
    except BaseException:
        remove_files(published)
        raise
    return published


def _without_files(prev: pa.Table | None, remove: set, added: set, root: str, base: int) -> pa.Table | None:
    """Index rows ``prev`` minus the files ``remove``; CommitConflictError unless all are
    there and none of the ``added`` paths is (a concurrent first append to a directory
    without index may have adopted files this rewrite published)."""
    paths = [] if prev is None else prev.column("path").to_pylist()
    missing = remove - set(paths)
    if missing:
        raise CommitConflictError(
            f"rewrite of {root!r} conflicts with version {base}: {len(missing)} of the files it replaces "
            f"(e.g. {sorted(missing)[0]!r}) were removed meanwhile; nothing was written")
    taken = added & set(paths)
    if taken:
        raise CommitConflictError(
            f"rewrite of {root!r} conflicts with version {base}, which already lists {len(taken)} of its new "
            f"files (e.g. {sorted(taken)[0]!r}); nothing was written")
    if prev is None:
        return None
    return prev.filter(pa.array([p not in remove for p in paths], pa.bool_()))


def remove_files(paths) -> None:
    delete_files(paths)


def _ids_info(ids: dict | None, schema: pa.Schema) -> dict:
    """The version info keys of the column ids (none while no column was ever renamed):
    ``column_ids``, with ids for the columns added by this commit, and
    ``next_column_id``."""
    if ids is None:
        return {}
    ids, nxt = extend_column_ids(ids, schema)
    return {"column_ids": ids, "next_column_id": nxt}


def _evolved_clustering(recorded: dict | None, renames: dict, data_schema: pa.Schema) -> dict | None:
    """The recorded clustering policy after ``Dataset.evolve``: its columns renamed with
    theirs; none when it names a column that is gone (a policy on a dropped column cannot
    be followed by later appends and optimize)."""
    if not recorded:
        return recorded
    columns = [renames.get(c, c) for c in recorded.get("columns", [])]
    if any(data_schema.get_field_index(c) < 0 for c in columns):
        return None
    return {**recorded, "columns": columns}


def _renamed_index(table: pa.Table, data_schema: pa.Schema, renames: dict) -> pa.Table:
    """Index rows whose statistics columns (``<column or path>.<statistic>`` for the
    columns of ``data_schema``) follow the data columns ``renames`` renames."""
    names = {}
    for path in stats_schema(data_schema).names:
        new = renamed_path(path, renames)
        if new != path:
            names.update({f"{path}.{s}": f"{new}.{s}" for s in (*STATS_FIELDS, VALUES_FIELD)})
    return table.rename_columns([names.get(n, n) for n in table.column_names])


def commit(root: str, entries: list[FileEntry], *, mode: str, read_version: int, data_schema: pa.Schema,
           partitioning: Partitioning, txn_id: str, staged: list[tuple[str, str]] = (),
           clustering: dict | None = None, base_table_unindexed: pa.Table | None = None,
           operation_info: dict | None = None, remove: Iterable[str] = (), renames: dict | None = None,
           base_snapshot: Snapshot | None = None) -> int:
    """Publish ``staged`` data files and commit ``entries`` as a new version; return it
    (see :func:`commit_version`, which also returns the size of its index)."""
    return commit_version(root, entries, mode=mode, read_version=read_version, data_schema=data_schema,
                          partitioning=partitioning, txn_id=txn_id, staged=staged, clustering=clustering,
                          base_table_unindexed=base_table_unindexed, operation_info=operation_info, remove=remove,
                          renames=renames, base_snapshot=base_snapshot)[0]


def commit_version(root: str, entries: list[FileEntry], *, mode: str, read_version: int, data_schema: pa.Schema,
                   partitioning: Partitioning, txn_id: str, staged: list[tuple[str, str]] = (),
                   clustering: dict | None = None, base_table_unindexed: pa.Table | None = None,
                   operation_info: dict | None = None, remove: Iterable[str] = (), renames: dict | None = None,
                   base_snapshot: Snapshot | None = None) -> tuple[int, int]:
    """:func:`commit`, returning ``(version, bytes of its index file)``.

    Publish ``staged`` data files and commit ``entries`` as a new version; return it.

    ``mode`` "append" rebases onto concurrent commits; "overwrite" raises
    :class:`CommitConflictError` if the latest version is no longer ``read_version``;
    "rewrite" replaces the files ``remove`` (relative paths) by ``entries`` and rebases
    onto concurrent commits as long as they left every file of ``remove`` in place
    (else CommitConflictError: someone else rewrote or deleted them).
    On any failure the published files are removed again and nothing is visible.
    ``base_table_unindexed``: index rows of the files of a plain directory that this
    first commit adopts (append to a directory without index). ``clustering``: what
    the version records (:func:`clustering_info`); an append without it keeps the
    clustering its base version records. ``renames`` (``{old: new}``, mode "evolve"):
    columns whose stable ids move to new names (``column_ids``, see
    :func:`rcfmt.dataset.evolution.column_ids`); their index statistics are renamed.
    ``base_snapshot``: version ``read_version`` as the caller read it, every index column
    loaded (:func:`~rcfmt.dataset.snapshot.load_base`): the first attempt then creates
    ``read_version + 1`` from it without looking anything up or reading the index again
    (if another writer has that version, the attempt fails and rebases as usual).

    After the commit the version hint names the new version (best effort; see
    :func:`rcfmt.dataset.log.find_latest`)."""
    if mode not in ("append", "overwrite", "rewrite", "evolve"):
        raise InvalidOptionError(f"mode must be 'append', 'overwrite', 'rewrite' or 'evolve', got {mode!r}")
    remove = set(remove)
    known = base_snapshot if (base_snapshot is not None and read_version and base_snapshot.version == read_version
                              and base_snapshot.root == root) else None

    def full_snapshot(version: int) -> Snapshot:
        """Version ``version`` with every index column: the caller's, when it is that one."""
        return known if known is not None and known.version == version else read_snapshot(root, version, columns=None)

    published = publish_files(root, list(staged))
    committed = None
    try:
        new_rows = entries_table(entries, data_schema, partitioning)
        schema_json = schema_to_json(data_schema)
        attempt = 0
        base = read_version if known is not None else None  # (None: look the latest version up)
        while True:
            if base is None:
                base = log.latest_version(root)
            schema = data_schema
            removed = 0
            recorded = clustering
            dropped: list = []  # names dropped by Dataset.evolve while their bytes may remain in files
            ids = None  # the base version's column ids, when it records them (or a rename starts them)
            if mode in ("overwrite", "evolve") and base != read_version:
                raise CommitConflictError(
                    f"{mode} of {root!r} based on version {read_version} conflicts with version {base} "
                    "committed meanwhile; nothing was written")
            if mode == "evolve":  # the schema changes, the files stay
                snap = full_snapshot(base)
                dropped = list(snap.info.get("dropped_columns", [])) + [n for n in snap.data_schema.names
                                                                       if n not in data_schema.names]
                recorded = _evolved_clustering(snap.info.get("clustering"), renames or {}, data_schema)
                table = snap.table
                if renames or snap.info.get("column_ids") is not None:
                    ids = column_ids(snap.info, snap.data_schema)
                    for old, new in (renames or {}).items():
                        ids[new] = ids[old]  # the old name stays: files written before hold it
                    table = _renamed_index(table, snap.data_schema, renames or {})
                table = conform_index(table, index_schema(schema, partitioning))
                schema_json = schema_to_json(schema)
            elif mode == "overwrite":
                if base != read_version:
                    raise CommitConflictError(
                        f"overwrite of {root!r} based on version {read_version} conflicts with version {base} "
                        "committed meanwhile; nothing was written")
                if base:
                    removed = len(known) if known is not None else len(read_snapshot(root, base, columns=[]))
                table = new_rows
            else:
                if base == 0:
                    prev = base_table_unindexed
                else:
                    snap = full_snapshot(base)
                    dropped = list(snap.info.get("dropped_columns", []))
                    if set(dropped) & set(data_schema.names):
                        raise CommitConflictError(
                            f"append to {root!r} conflicts with version {base}, which dropped column(s) "
                            f"{sorted(set(dropped) & set(data_schema.names))}; nothing was written")
                    if snap.partitioning != partitioning:
                        raise CommitConflictError(
                            f"append to {root!r} conflicts with version {base}, which changed the "
                            "partitioning; nothing was written")
                    if base != read_version and read_version and not keeps_columns(
                            (known or read_snapshot(root, read_version, columns=[])).data_schema, snap.data_schema):
                        raise CommitConflictError(  # e.g. an overwrite with other columns
                            f"append to {root!r} conflicts with version {base}, which changed the schema; "
                            "nothing was written")
                    try:  # concurrent appends may each add or widen columns: the union is committed
                        schema = merge_schemas(snap.data_schema, data_schema)
                    except SchemaError as exc:
                        raise CommitConflictError(
                            f"append to {root!r} conflicts with version {base}, which changed the schema "
                            f"({exc}); nothing was written") from None
                    prev = snap.table
                    if snap.info.get("column_ids") is not None:
                        ids = column_ids(snap.info, snap.data_schema)
                    if recorded is None and mode == "append" and snap.info.get("clustering"):
                        # the policy stays; appended files are at best clustered within themselves
                        recorded = {**snap.info["clustering"], "scope": "file"}
                if mode == "rewrite":
                    prev = _without_files(prev, remove, {e.path for e in entries}, root, base)
                    removed = len(remove)
                ischema = index_schema(schema, partitioning)
                table = conform_index(new_rows, ischema)
                if prev is not None and prev.num_rows:
                    table = pa.concat_tables([conform_index(prev, ischema), table])
                schema_json = schema_to_json(schema)
            info = {
                "format": "rcfmt-dataset", "format_version": 1,
                "version": base + 1, "parent_version": base, "operation": mode, "transaction": txn_id,
                "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(),
                "schema": schema_json, "partitioning": partitioning.to_json(), "clustering": recorded,
                "num_files": table.num_rows, "num_rows": int(np.asarray(table.column("num_rows").to_numpy()).sum())
                if table.num_rows else 0,
                "added_files": len(entries), "removed_files": removed,
                **({"dropped_columns": dropped} if dropped else {}),
                **_ids_info(ids, schema),
                **(operation_info or {}),
            }
            if is_remote(root):
                data = index_bytes(table, info)
                size = len(data)
                published_now = log.publish_remote_version(root, base + 1, data)
            else:
                tmp = write_index_file(root, table, info, f"{txn_id}-{attempt}")
                size = os.path.getsize(tmp)
                published_now = log.publish_version(root, base + 1, tmp)
            if published_now:
                committed = base + 1
                break
            if mode == "overwrite":
                raise CommitConflictError(
                    f"overwrite of {root!r} based on version {read_version} conflicts with version {base + 1} "
                    "committed meanwhile (it lost the race for that version); nothing was written")
            attempt += 1
            if attempt >= MAX_COMMIT_ATTEMPTS:
                raise CommitConflictError(f"append to {root!r} gave up after {attempt} attempts")
            log.backoff(attempt)
            # another writer has base + 1: the latest is there or after it
            found = log.next_versions(root, base + 1)
            base = found[0] if found is not None else None
    except BaseException:
        remove_files(published)
        raise
    log.write_hint(root, committed, size)  # (outside the try: the commit stands whatever happens here)
    try:  # this process's next append starts here (an optimisation only)
        remember_committed(root, committed, size, table, dumps_info(info))
    except Exception:
        pass
    return committed, size


# ------------------------------------------------------------------ write_dataset
def _batches_and_schema(data):
    """(schema, iterator of tables) for any accepted input."""
    stream = arrow_stream(data)
    if stream is not None:  # a RecordBatchReader or any Arrow PyCapsule stream
        return stream.schema, (pa.Table.from_batches([b]) for b in stream)
    if isinstance(data, (pa.Table, pa.RecordBatch, dict)) or type(data).__name__ == "DataFrame":
        table = as_table(data)
        return table.schema, iter([table])
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes)):
        it = iter(data)
        try:
            first = as_table(next(it))
        except StopIteration:
            raise SchemaError("write_dataset got an empty iterable: no schema to write") from None

        def chain():
            yield first
            for item in it:
                yield as_table(item)
        return first.schema, chain()
    return as_table(data).schema, iter([as_table(data)])


@dataclass
class WritePlan:
    """What a write to a dataset commits against, checked before any file is written:
    the base version (``read_version``), the full input ``schema`` (as the dataset
    stores it), its ``data_schema`` (without partition columns) and ``partitioning``,
    ``adopt`` (index rows of the files of a directory without index, which a first
    append keeps) and the ``clustering`` the base version records. The files hold
    ``data_schema``'s columns; the commit merges it into the latest version's schema
    (:func:`rcfmt.dataset.evolution.merge_schemas`)."""

    root: str
    mode: str
    read_version: int
    schema: pa.Schema
    data_schema: pa.Schema
    partitioning: Partitioning
    adopt: pa.Table | None = None
    clustering: ClusteringSpec | None = None
    #: the dataset's data schema once this write commits (evolved: columns added or widened)
    dataset_schema: pa.Schema | None = None
    #: version ``read_version`` with every index column (None before the first commit):
    #: :func:`commit` builds the next version from it instead of reading the index again
    base: Snapshot | None = None

    def clustering_for(self, cluster_by, curve: str = "zorder", mapping: str = "rank") -> ClusteringSpec | None:
        """The clustering of this write's files: ``cluster_by`` (names or a spec; an
        empty list means none) or, when None, the dataset's recorded clustering for an
        append. Checked against the data columns."""
        if cluster_by is None:
            spec = self.clustering if self.mode == "append" else None
        elif not isinstance(cluster_by, (str, ClusteringSpec)) and len(cluster_by) == 0:
            spec = None
        else:
            spec = clustering_spec(cluster_by, curve, mapping)
        if spec is not None:
            check_clustering_columns(spec, self.data_schema)
        return spec

    # ---------------------------------------------- distributed writes (Spark's tasks)
    def check_write_options(self, options: dict) -> None:
        """Raise InvalidOptionError unless ``options`` are valid file-writer options
        for this write's files (before any task writes one)."""
        WriteOptions.create(self.data_schema, **options)

    def staging_dir(self, name: str) -> str:
        """Where the tasks of one distributed write (``name``: unique per job) stage their
        files: a new local directory under the dataset's metadata (the commit moves the
        files into place), or on object storage the dataset's root itself (tasks write
        to the final keys; no version names a file before its commit)."""
        if is_remote(self.root):
            return self.root
        path = os.path.join(log.staging_root(self.root), name)
        os.makedirs(path, exist_ok=True)
        return path

    def discard(self, staging: str, staged_paths: Iterable[str] = ()) -> None:
        """Remove what a failed or abandoned distributed write staged: a local staging
        directory (``staging``, or a task's directory under it) with everything in it;
        on object storage, the files ``staged_paths`` written to their final keys."""
        if is_remote(self.root):
            delete_files(staged_paths)
        else:
            log.remove_tree(staging)


def _foreign_objects(root: str) -> list[str]:
    """Objects under the object-store ``root`` that no rcfmt dataset writer made. Data
    files named as writers name them are another writer's, uploaded before its first
    commit (two first writes racing): they do not make ``root`` a plain directory."""
    if not [n for n in list_names(root) if n != log.META_DIR]:
        return []
    return [rel for rel, _ in list_tree(root)
            if not rel.startswith(f"{log.META_DIR}/") and not WRITER_FILE.match(rel.rsplit("/", 1)[-1])]


def begin_write(path, schema: pa.Schema, *, partition_by=None, mode: str = "append") -> WritePlan:
    """Check a write of data with ``schema`` to the dataset at ``path`` (created if
    missing) and return its :class:`WritePlan`. Raises SchemaError when an append does
    not fit the dataset (columns, types or partitioning)."""

    if mode not in ("append", "overwrite"):
        raise InvalidOptionError(f"mode must be 'append' or 'overwrite', got {mode!r}")
    if is_remote(path):
        root = path.rstrip("/")
        check_commit_support(root)
        if remote_kind(root) == "file":
            raise InvalidOptionError(f"{root!r} is a file; a dataset is a directory")
    else:
        root = os.path.abspath(local_path(path))
    if not is_remote(root) and os.path.isfile(root):
        raise InvalidOptionError(f"{root!r} is a file; a dataset is a directory")
    schema, _ = storage_schema(schema)
    schema = pa.schema([f.remove_metadata() for f in schema])
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    base_version, base_snap, unindexed = load_base(root)
    if is_remote(root) and not base_version and _foreign_objects(root):
        raise UnsupportedError(f"{root!r} holds objects but no dataset index: on object storage rcfmt writes "
                               f"to its own datasets only (it cannot adopt a plain directory there)")
    if partition_by is None and mode == "append" and base_snap is not None:
        partition_by = list(base_snap.partitioning.names)
    partitioning = Partitioning.from_schema(schema, partition_by)
    data_schema = split_schema(schema, partitioning)
    dataset_schema = data_schema
    if mode == "append" and base_snap is not None and (len(base_snap) or base_snap.data_schema.names):
        if base_snap.partitioning != partitioning:
            raise SchemaError(f"cannot append: partitioning {list(partitioning.names)} "
                              f"({[str(t) for t in partitioning.types]}) differs from the dataset's "
                              f"{list(base_snap.partitioning.names)}")
        dropped = sorted(set(base_snap.info.get("dropped_columns", [])) & set(data_schema.names))
        if dropped:
            raise SchemaError(f"cannot append: column(s) {dropped} were dropped from the dataset (or renamed) and "
                              f"their values may remain in its files; name the data otherwise (an overwrite clears "
                              f"this)")
        try:  # columns may be added, left out or widened (rcfmt.dataset.evolution)
            dataset_schema = merge_schemas(base_snap.data_schema, data_schema)
        except SchemaError as exc:
            raise SchemaError(f"cannot append: {exc}") from None
        # the files hold the dataset's types (string vs large_string as stored, widened ones)
        cast = {f.name: f.type for f in dataset_schema}
        schema = pa.schema([f.with_type(cast.get(f.name, f.type)) for f in schema])
        data_schema = split_schema(schema, partitioning)
    recorded = recorded_clustering(base_snap.info) if base_snap is not None else None
    return WritePlan(root, mode, base_version, schema, data_schema, partitioning,
                     unindexed if mode == "append" else None, recorded, dataset_schema,
                     base_snap if base_version else None)


def write_dataset(data, path, *, partition_by=None, mode: str = "append",
                  target_file_rows: int = DEFAULT_TARGET_FILE_ROWS, cluster_by=None, curve: str = "zorder",
                  mapping: str = "rank", stats_truncate: int | None = None, progress=None, **write_options):
    """Write ``data`` as data files of the dataset at ``path`` and commit them atomically.

    ``data``: a pyarrow Table/RecordBatch, pandas DataFrame, dict of arrays, a
    RecordBatchReader or an iterable of batches/tables (streamed, one block per open
    file in memory). ``partition_by``: Hive-style partition columns (default for an
    append: the dataset's). ``mode``: "append" (rebases onto concurrent commits) or
    "overwrite" (replaces every file; :class:`CommitConflictError` if another commit
    happened since this write started). ``target_file_rows``: rows per file at most.
    ``cluster_by``/``curve``/``mapping``: cluster the rows of each file (a file's rows
    are then buffered until it is full); an append without ``cluster_by`` follows the
    clustering the dataset records, ``cluster_by=[]`` opts out. For one clustered layout
    across the files of each partition, call :meth:`Dataset.optimize` afterwards.
    ``write_options``: options of :class:`rcfmt.Writer` (``block_rows``,
    ``compression``, ...); ``stats_truncate`` also bounds string stats in the index.
    ``progress``: a bar of rows written on stderr (None: on a terminal; True, False).

    Returns the :class:`~rcfmt.dataset.Dataset` at the committed version.
    """
    from ..progress import progress_bar, wanted
    from .dataset import Dataset

    wanted(progress)  # a bad value raises before anything is written
    schema, tables = _batches_and_schema(data)
    plan = begin_write(path, schema, partition_by=partition_by, mode=mode)
    truncate = DEFAULT_INDEX_TRUNCATE if stats_truncate is None else stats_truncate
    if stats_truncate is not None:
        write_options["stats_truncate"] = stats_truncate
    if "bitmap_indexes" not in write_options and plan.mode == "append" and plan.read_version:
        # an append keeps the indexes the dataset's (latest) files have
        base = plan.base
        inherited_bitmap_indexes([_join(plan.root, rel) for rel in base.paths[-1:]], plan.data_schema, write_options,
                                 base.info.get("column_ids"))
    WriteOptions.create(plan.data_schema, **write_options)  # bad options raise before anything is written
    clustering = plan.clustering_for(cluster_by, curve, mapping)
    inherited = cluster_by is None and clustering is not None
    txn = uuid.uuid4().hex
    remote = is_remote(plan.root)
    # object stores: data files go straight to their final keys (see rcfmt.dataset.log)
    staging = plan.root if remote else os.path.join(log.staging_root(plan.root), txn)
    if not remote:
        os.makedirs(staging)  # (and the staging root: nothing is created before the checks)
    writer = FileSetWriter(staging, plan.schema, plan.partitioning, prefix=txn[:16],
                           target_file_rows=target_file_rows, write_options=write_options, clustering=clustering,
                           truncate=truncate)
    try:
        try:
            with progress_bar(progress, desc="write_dataset") as step:
                for table in tables:
                    writer.write(table)
                    step(table.num_rows)
            files = writer.close()
        except BaseException:
            writer.abort()
            raise
        version, size = commit_version(
            plan.root, [e for e, _ in files], mode=plan.mode, read_version=plan.read_version,
            data_schema=plan.data_schema, partitioning=plan.partitioning, txn_id=txn,
            staged=[(p, e.path) for e, p in files], clustering=None if inherited else clustering_info(clustering, "file"),
            base_table_unindexed=plan.adopt, base_snapshot=plan.base)
    finally:
        if not remote:
            log.remove_tree(staging)
    return Dataset(read_snapshot(plan.root, version, size=size))  # (its size known: no lookup)
