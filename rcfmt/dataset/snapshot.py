"""Versions of a dataset as readers and writers load them: an index version
(:func:`read_snapshot`, checked against its name and holding valid metadata), a
directory without index (:func:`discover`: footers read now, Hive partitions
inferred), and what a writer starts from (:func:`load_base`)."""
from __future__ import annotations

import collections
import json
import os
import re
import threading
from typing import Sequence

import pyarrow as pa

from ..errors import CorruptFileError, RcfmtError, SchemaError
from ..file.reader import RcfmtFile
from ..storage import is_remote
from . import log
from .evolution import check_column_ids, check_names, merge_nullability, same_types
from .index import (BASE_COLUMNS, INDEX_METADATA_KEY, FileEntry, Snapshot, check_index_columns, check_relpath,
                    entries_table, entry_from_file, index_errors, index_field, schema_from_json, stats_schema)
from .deletions import DV_COLUMNS, DV_DIR
from .partitioning import Partitioning, infer_partitioning

__all__ = ["check_version_info", "read_snapshot", "read_latest", "discover", "load_base", "DATA_SUFFIXES"]

DATA_SUFFIXES = (".rcfmt", ".rcf")
#: the newest dataset format version this rcfmt reads: 2 is a version whose files may
#: have deletion vectors (a reader of version 1 would return deleted rows: it refuses)
FORMAT_VERSION = 2


def check_deletions(table: pa.Table, path: str) -> None:
    """An index's deletion-vector columns must describe possible vectors: at most the
    file's rows deleted, a vector with bytes where rows are deleted, its deletion file
    inside ``_rcfmt/deletions/`` (CorruptFileError otherwise: a forged count must not
    make a count negative, nor a forged path read outside the dataset)."""
    if table.schema.get_field_index("deleted_rows") < 0 or not table.num_rows:
        return
    import numpy as np

    from ..schema.arrow_io import to_numpy, validity

    deleted = np.asarray(to_numpy(table.column("deleted_rows")), np.int64)
    rows = np.asarray(to_numpy(table.column("num_rows")), np.int64)
    sizes = np.asarray(to_numpy(table.column("dv_size")), np.int64)
    where = validity(table.column("dv_path")) | validity(table.column("dv_inline"))
    bad = (deleted < 0) | (deleted > rows) | ((deleted > 0) != (sizes > 0)) | ((deleted > 0) & ~where)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CorruptFileError(f"index entry {i} records {deleted[i]} deleted rows of {rows[i]} with a vector of "
                               f"{sizes[i]} bytes", path=path)
    for rel in {p for p in table.column("dv_path").to_pylist() if p is not None}:
        check_relpath(rel, path)
        if not rel.startswith(f"{log.META_DIR}/{DV_DIR}/"):
            raise CorruptFileError(f"index names deletion file {rel!r} outside {log.META_DIR}/{DV_DIR}/", path=path)


def check_version_info(info: dict, version: int, path: str) -> None:
    """An index version must say it is the version its name says, and that its parent
    is the one before (a version copied over another, or renamed, is refused)."""
    recorded, parent = info.get("version", version), info.get("parent_version", version - 1)
    if recorded != version or parent != version - 1:
        raise CorruptFileError(f"index version file is version {version} but records version {recorded!r} "
                               f"with parent {parent!r}", path=path)


def read_snapshot(root: str, version: int, columns: Sequence[str] | None = (), size: int | None = None) -> Snapshot:
    """Version ``version`` of the index. ``columns``: extra index columns to load besides
    the base and partition columns (None = all); ``size``: the index file's size, if
    listed (on object storage a cached index is then opened without a request)."""
    path = log.version_path(root, version)
    with index_errors(version, path), \
            RcfmtFile(path, size=size, immutable=True) as f:  # a version is written once, never replaced
        raw = f.metadata.get(INDEX_METADATA_KEY)
        if raw is None:
            raise CorruptFileError("index file has no dataset metadata", path=path)
        try:
            info = json.loads(raw)
            data_schema = schema_from_json(info["schema"])
            partitioning = Partitioning.from_json(info["partitioning"])
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptFileError(f"malformed dataset metadata: {exc}", path=path) from None
        if info.get("format_version", 1) > FORMAT_VERSION:
            raise RcfmtError(f"{path}: dataset format version {info['format_version']} is newer than this rcfmt")
        check_version_info(info, version, path)
        bad_ids = check_column_ids(info, data_schema)
        if bad_ids:
            raise CorruptFileError(f"malformed dataset metadata: {bad_ids}", path=path)
        base = [*BASE_COLUMNS, *(f"{n}.value" for n in partitioning.names)]
        want = [*base, *columns] if columns is not None else base
        missing = [n for n in want if f.schema.get_field_index(n) < 0]
        if missing:
            raise CorruptFileError(f"lacks the index columns {missing} of its dataset schema", path=path)
        want += [n for n in DV_COLUMNS if f.schema.get_field_index(n) >= 0 and n not in want]
        table = f.read() if columns is None else f.read(columns=want)
        if columns is None:  # (a writer conforms these to its schema: the base ones must be there)
            stats = stats_schema(data_schema)
            want = [n for n in table.schema.names if index_field(n, stats, partitioning) is not None]
        check_index_columns(table, want, data_schema, partitioning, path)
        check_deletions(table, path)
    checked = _CHECKED_PATHS
    for rel in table.column("path").to_pylist():
        if rel not in checked:  # a path is checked once per process, not at every read of an index listing it
            check_relpath(rel, path)
            if len(checked) >= _CHECKED_MAX:
                checked.clear()
            checked.add(rel)
    return Snapshot(root, data_schema, partitioning, table, info, version, path, size)


#: relative paths :func:`check_relpath` accepted (a pure check of the string: any root)
_CHECKED_PATHS: set = set()
_CHECKED_MAX = 1 << 20


#: per dataset root, the last version this process committed there: ``(version, identity
#: of its index file, its rows, its info as written)`` -- what the next append from this
#: process starts from, without reading the index it has just written
_COMMITTED: "collections.OrderedDict" = collections.OrderedDict()
_COMMITTED_ROOTS = 16
_COMMITTED_LOCK = threading.Lock()


def _identity(root: str, version: int, size: int | None):
    """What must not have changed for a remembered version to be used: on object stores
    its size (an index version is never replaced under its name), locally its size,
    inode and modification time (a file replaced or rewritten in place differs)."""
    if is_remote(root):
        return size
    try:
        st = os.stat(log.version_path(root, version))
    except OSError:
        return None
    return st.st_size, st.st_ino, st.st_mtime_ns


def remember_committed(root: str, version: int, size: int, table: pa.Table, info_json: str) -> None:
    """Keep the complete index rows of ``version``, just committed by this process."""
    identity = _identity(root, version, size)
    if identity is None:
        return
    entry = (version, identity, table.combine_chunks(), info_json)
    with _COMMITTED_LOCK:
        _COMMITTED[root] = entry
        _COMMITTED.move_to_end(root)
        while len(_COMMITTED) > _COMMITTED_ROOTS:
            _COMMITTED.popitem(last=False)


def _committed(root: str, version: int, size: int | None) -> Snapshot | None:
    """Version ``version`` with every index column, if this process committed it last at
    ``root`` and its file is still the one it wrote."""
    with _COMMITTED_LOCK:
        entry = _COMMITTED.get(root)
    if entry is None or entry[0] != version or entry[1] != _identity(root, version, size):
        return None
    _, _, table, raw = entry
    info = json.loads(raw)
    return Snapshot(root, schema_from_json(info["schema"]), Partitioning.from_json(info["partitioning"]), table,
                    info, version, log.version_path(root, version), size)


def read_latest(root: str, columns: Sequence[str] | None = ()) -> Snapshot | None:
    """The latest version of the index (:func:`rcfmt.dataset.log.find_latest`: O(1)
    lookups from the version hint), None when nothing is committed. A hint naming a
    version that cannot be read as it says (deleted, another size) is set aside and the
    versions are listed. With ``columns=None`` (a writer's base), a version this process
    committed last is taken from memory (:func:`remember_committed`)."""
    version, size = log.find_latest(root)
    if not version:
        return None
    if columns is None:
        known = _committed(root, version, size)
        if known is not None:
            return known
    try:
        return read_snapshot(root, version, columns, size=size)
    except (OSError, RcfmtError):
        listed, listed_size = log.find_latest(root, use_hint=False)
        if not listed:
            return None
        if (listed, listed_size) == (version, size):
            raise
        return read_snapshot(root, listed, columns, size=listed_size)


#: the names :class:`~rcfmt.dataset.writer.FileSetWriter` gives data files (Python and
#: Spark writers: ``part-<transaction hex>-<numbers>.rcfmt``)
WRITER_FILE = re.compile(r"part-[0-9a-f]{12,}(?:-[0-9]+)+\.rcfmt\Z")


def discover(root: str, single_file: str | None = None) -> Snapshot:
    """A snapshot of a directory without index (or of one file): footers are read now."""
    if single_file is not None:
        relpaths = [os.path.basename(single_file)]
        partitioning = Partitioning()
    else:
        relpaths = []
        # A dataset writer publishes its files before it commits the first version: while
        # _rcfmt/ exists without a version, files named as it names them are uncommitted
        # (in flight, or left by a crashed writer) and are neither read nor adopted.
        uncommitted = os.path.isdir(log.meta_dir(root)) and not log.list_versions(root)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(("_", ".")))
            rel_dir = os.path.relpath(dirpath, root)
            for name in sorted(filenames):
                if name.startswith(("_", ".")) or not name.endswith(DATA_SUFFIXES):
                    continue
                if uncommitted and WRITER_FILE.match(name):
                    continue
                rel = name if rel_dir == "." else f"{rel_dir.replace(os.sep, '/')}/{name}"
                relpaths.append(rel)
        partitioning = infer_partitioning(relpaths)
    entries: list[FileEntry] = []
    data_schema = None
    for rel in relpaths:
        with RcfmtFile(os.path.join(root, *rel.split("/"))) as f:
            schema = pa.schema([fl.remove_metadata() for fl in f.schema])
            check_names(schema, rel)
            if data_schema is None:
                data_schema = schema
                clash = [n for n in partitioning.names if n in schema.names]
                if clash:
                    raise SchemaError(f"partition columns {clash} are also columns of {rel!r}")
            else:
                if not same_types(data_schema, schema):
                    raise SchemaError(f"file {rel!r} has schema {schema}, other files of {root!r} have {data_schema}")
                data_schema = merge_nullability(data_schema, schema)
            entries.append(entry_from_file(f, rel, partitioning.parse_path(rel)))
    if data_schema is None:
        data_schema = pa.schema([])
    return Snapshot(root, data_schema, partitioning, entries_table(entries, data_schema, partitioning),
                    {"operation": "discovered"}, None, None)


def load_base(root: str):
    """``(version, snapshot or None, index rows of an unindexed directory or None)`` of
    the dataset at ``root`` as a writer finds it."""
    snap = read_latest(root, columns=None)
    if snap is not None:
        return snap.version, snap, None
    if os.path.isdir(root):
        snap = discover(root)
        if len(snap):
            return 0, snap, snap.table
    return 0, None, None
