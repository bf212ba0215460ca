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

from ..errors import CommitConflictError, CorruptFileError, RcfmtError, SchemaError
from ..file.reader import RcfmtFile
from ..storage import is_remote, store_identity_of
from . import log
from .evolution import check_column_ids, check_names, merge_nullability, same_types
from . import changelog
from .index import (BASE_COLUMNS, INDEX_METADATA_KEY, VALUES_FIELD, FileEntry, Snapshot,
                    check_index_columns, check_inside, check_relpath, conform_index, entries_table, entry_from_file,
                    index_errors, index_field, index_schema, schema_from_json, stats_schema)
from .deletions import DV_COLUMNS, DV_DIR
from .partitioning import Partitioning, infer_partitioning

__all__ = ["check_version_info", "info_problem", "read_chain_start", "read_snapshot", "read_committed", "read_run", "conform_rows", "read_latest", "discover", "load_base", "DATA_SUFFIXES"]

DATA_SUFFIXES = (".rcfmt", ".rcf")
#: the newest dataset format version this rcfmt reads: 2 is a version whose files may
#: have deletion vectors (a reader of version 1 would return deleted rows: it refuses),
#: 3 a changes version or run (:mod:`.changelog`; a reader of 2 would see its own rows only)
FORMAT_VERSION = 3


def check_deletions(table: pa.Table, path: str) -> None:
    """An index's deletion-vector columns must describe possible vectors: at most the
    file's rows deleted, a vector with bytes where rows are deleted, its deletion file
    inside ``_rcfmt/deletions/`` (CorruptFileError otherwise: a forged count must not
    make a count negative, nor a forged path read outside the dataset)."""
    if table.schema.get_field_index("deleted_rows") < 0 or not table.num_rows:
        return
    missing = [n for n in ("num_rows", *DV_COLUMNS) if table.schema.get_field_index(n) < 0]
    if missing:
        raise CorruptFileError(f"index has deletion vectors without the index columns {missing}", path=path)
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


def _version_info(f, version: int | None, path: str) -> tuple[dict, pa.Schema, Partitioning]:
    """The dataset metadata of an index object: ``(info, data schema, partitioning)``,
    checked (CorruptFileError; RcfmtError for a format newer than this rcfmt). With a
    ``version``, the object must be that version (its recorded version and parent)."""
    raw = f.metadata.get(INDEX_METADATA_KEY)
    if raw is None:
        raise CorruptFileError("index file has no dataset metadata", path=path)
    try:
        info = json.loads(raw)
        data_schema = schema_from_json(info["schema"])
        partitioning = Partitioning.from_json(info["partitioning"])
    except RecursionError:  # (JSON nested thousands deep: no writer makes it)
        raise CorruptFileError("malformed dataset metadata: nested too deeply", path=path) from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptFileError(f"malformed dataset metadata: {exc}", path=path) from None
    fmt = info.get("format_version", 1)
    if type(fmt) is not int:
        raise CorruptFileError(f"malformed dataset metadata: format_version {str(fmt)[:100]!r} is not an integer",
                               path=path)
    if fmt > FORMAT_VERSION:
        raise RcfmtError(f"{path}: dataset format version {fmt} is newer than this rcfmt")
    if version is not None:
        check_version_info(info, version, path)
    bad = check_column_ids(info, data_schema) or info_problem(info)
    if bad:
        raise CorruptFileError(f"malformed dataset metadata: {bad}", path=path)
    return info, data_schema, partitioning


#: info keys that are counts, when present (history and commits compute with them)
_COUNT_KEYS = ("num_files", "num_rows", "added_files", "removed_files", "deleted_rows", "rows_deleted",
               "rows_updated", "rows_inserted", "rewritten_partitions", "chain_rows")


def _count(x) -> bool:
    return type(x) is int and x >= 0


def info_problem(info: dict) -> str | None:
    """What is wrong with the keys of a version's info that readers and writers use
    (None: nothing), besides its schema, partitioning and ``column_ids``: counts that
    are not non-negative integers, a ``dropped_columns`` that is not a list of names, a
    ``clustering`` that is not null or a spec object, and a changes version's
    ``checkpoint`` (``{"version", "size", "files"}``, integers) and ``runs``
    (:func:`changelog.runs_of`). Checked where the info is read, so no caller trips over
    a forged value (docs/DATASET.md §3, §4.2)."""
    for key in _COUNT_KEYS:
        if key in info and not _count(info[key]):
            return f"{key} {str(info[key])[:100]!r} is not a non-negative integer"
    dropped = info.get("dropped_columns", [])
    if not isinstance(dropped, list) or not all(isinstance(n, str) for n in dropped):
        return f"dropped_columns {str(dropped)[:100]!r} is not a list of column names"
    clustering = info.get("clustering")
    if clustering is not None and not (
            isinstance(clustering, dict) and isinstance(clustering.get("columns"), list)
            and all(isinstance(c, str) for c in clustering["columns"])
            and all(isinstance(clustering.get(k, ""), str) for k in ("curve", "mapping", "scope"))):
        return f"clustering {str(clustering)[:100]!r} is not a clustering spec"
    layout = info.get("layout", changelog.CHECKPOINT)
    if not isinstance(layout, str):
        return f"layout {str(layout)[:100]!r} is not a string"
    if layout == changelog.CHANGES:
        ckpt = info.get("checkpoint")
        if not isinstance(ckpt, dict) or not all(_count(ckpt.get(k)) for k in ("version", "size", "files")):
            return f"checkpoint {str(ckpt)[:100]!r} is not {{\"version\", \"size\", \"files\"}} of integers"
        if not _count(info.get("chain_rows")):
            return "a changes version has no chain_rows"
        try:
            changelog.runs_of(info)
        except (KeyError, TypeError, ValueError) as exc:
            return f"malformed runs ({str(exc)[:200]})"
    return None


def read_version_info(root: str, version: int) -> dict | None:
    """The checked metadata of index version ``version`` alone (not its chain: a changes
    version whose checkpoint is gone still has one); None when the version does not
    exist (a vacuum removed it since it was listed)."""
    path = log.version_path(root, version)
    try:
        with index_errors(version, path):
            with RcfmtFile(_inside(root, path), immutable=True) as f:
                return _version_info(f, version, path)[0]
    except (FileNotFoundError, RcfmtError):
        if not log.version_exists(root, version):
            return None
        raise


def read_chain_start(root: str, version: int) -> int | None:
    """The checkpoint index version ``version`` is read from: its own number for a
    checkpoint, the one its info names for a changes version; None when the version does
    not exist (a vacuum removed it since it was listed)."""
    info = read_version_info(root, version)
    if info is None:
        return None
    return info["checkpoint"]["version"] if changelog.layout_of(info) == changelog.CHANGES else version


def _inside(root: str, path: str) -> str:
    """``path`` (an index version of the dataset at ``root``) unless it is a symlink, or
    under one, resolving outside the root (CorruptFileError, as data files and runs)."""
    return check_inside(root, path, what="index version file")


class _NotTheCheckpoint(Exception):
    """The version a changes version names as its checkpoint is not one, or not of the
    size it names (raised by :func:`read_snapshot` before it reads further)."""


def read_snapshot(root: str, version: int, columns: Sequence[str] | None = (), size: int | None = None,
                  checkpoint_of: int | None = None) -> Snapshot:
    """Version ``version`` of the index. ``columns``: extra index columns to load besides
    the base and partition columns (None = all); ``size``: the index file's size, if
    listed (on object storage a cached index is then opened without a request). A
    changes version (:mod:`rcfmt.dataset.changelog`) is read with its checkpoint and runs,
    one read of each. ``checkpoint_of``: the changes version that names this one as its
    checkpoint (of ``size`` bytes): anything else is refused before its own chain is read."""
    path = log.version_path(root, version)
    known = _CHAINS.get(path)  # a changes version this process has read: its parts are kept
    if known is not None and known[0] == _identity(root, version, size):
        if checkpoint_of is not None:
            raise _NotTheCheckpoint(f"changes version {checkpoint_of} names version {version} as its checkpoint, "
                                    "which is not one")
        return known[1].again(columns)
    identity = None
    with index_errors(version, path), \
            RcfmtFile(_inside(root, path), size=size, immutable=True) as f:  # a version is written once, never replaced
        info, data_schema, partitioning = _version_info(f, version, path)
        layout = changelog.layout_of(info)
        # (refused before its own chain is read: a forged chain of thousands of changes
        # versions, each naming the one before as its checkpoint, must not recurse through them)
        if checkpoint_of is not None and layout != changelog.CHECKPOINT:
            raise _NotTheCheckpoint(f"changes version {checkpoint_of} names version {version} as its "
                                    "checkpoint, which is not one")
        if checkpoint_of is not None and size is not None and f.size != size:
            raise _NotTheCheckpoint(f"changes version {checkpoint_of} names version {version} of {size} bytes as "
                                    f"its checkpoint, which has {f.size}")
        if layout == changelog.CHANGES:
            identity = _identity(root, version, f.size)  # (before its changes are read from the file opened)
            own = changelog.read_change(f.read(), path)
            _check_rows(own.rows, data_schema, partitioning, path)
            size = f.size
            if identity is not None:
                _RUNS.put((path, identity), (own, info))
        elif layout != changelog.CHECKPOINT:
            raise CorruptFileError(f"index version has layout {layout!r}", path=path)
        else:
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
            size = f.size
    if layout == changelog.CHANGES:
        with index_errors(version, path):
            snap = _read_changes(root, version, info, own, columns, size, path, data_schema, partitioning)
        if identity is not None:  # (a copy: what callers load into theirs is theirs)
            kept = object.__new__(ChainSnapshot)
            kept.__dict__.update(snap.__dict__, _base=_fresh(snap._base), loading=threading.RLock())
            _CHAINS.put(path, (identity, kept))
        return snap
    _check_paths(table, path)
    return Snapshot(root, data_schema, partitioning, table, info, version, path, size)


def _check_paths(table: pa.Table, path: str) -> None:
    checked = _CHECKED_PATHS
    for rel in table.column("path").to_pylist():
        if rel not in checked:  # a path is checked once per process, not at every read of an index listing it
            check_relpath(rel, path)
            if len(checked) >= _CHECKED_MAX:
                checked.clear()
            checked.add(rel)


class _RunCache:
    """A least-recently-used map of decoded index objects, bounded in entries and in
    bytes (``cost(item)``); an item costing more than the whole bound is not kept."""

    def __init__(self, limit: int, max_bytes: int, cost):
        self._items: collections.OrderedDict = collections.OrderedDict()
        self._limit, self._max_bytes, self._cost = limit, max_bytes, cost
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            self._items.move_to_end(key)
            return entry[0]

    def put(self, key, item) -> None:
        cost = self._cost(item)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if cost > self._max_bytes:
                return
            self._items[key] = (item, cost)
            self._bytes += cost
            while len(self._items) > self._limit or self._bytes > self._max_bytes:
                self._bytes -= self._items.popitem(last=False)[1][1]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0


def _change_bytes(item) -> int:
    change, _ = item
    return change.rows.nbytes + change.removed.nbytes


def _chain_bytes(item) -> int:
    _, snap = item
    return snap._delta.nbytes + snap._base.table.nbytes + snap.table.nbytes + 8 * len(snap._order)


#: decoded changes versions and merged runs by ``(path, identity)``: a merged run's name is
#: unique (its writer's), so its size is its identity; a version's name comes back when a
#: dataset is deleted and written again (or restored from a copy) at its path, so its
#: identity is :func:`_identity`'s. A reopen or the next commit reads only what is new
_RUNS = _RunCache(256, 64 << 20, _change_bytes)
#: changes versions read: ``{path: (identity, snapshot)}`` (:func:`_identity`), so that a
#: warm reopen reads no index object
_CHAINS = _RunCache(16, 128 << 20, _chain_bytes)
#: objects of a chain read at once from an object store
REMOTE_READS = 8
#: where a merged run may be: ``_rcfmt/runs/r<first>-<last>-<writer's name>.rcfmt``
_RUN_PATH = re.compile(rf"{log.META_DIR}/{changelog.RUNS_DIR}/r[0-9]{{20}}-[0-9]{{20}}-[A-Za-z0-9_-]{{1,200}}\.rcfmt\Z")


def _version_identity(path: str, size: int):
    """:func:`_identity` of the version file at ``path`` (None: gone, or not ``size`` bytes)."""
    identity = _identity_of(path, size)
    if identity is None or (identity[1] if is_remote(path) else identity[0]) != size:
        return None
    return identity


def remember_run(path: str, size: int, change: changelog.Change, info: dict, version: bool = True) -> None:
    """Keep a changes object this process wrote (a version, or when not ``version`` a
    merged run, at ``path``, ``size`` bytes), as :func:`read_run` would decode it."""
    identity = _version_identity(path, size) if version else size
    if identity is not None:
        _RUNS.put((path, identity), (change, info))


def read_run(root: str, entry: dict, path: str) -> tuple[changelog.Change, dict]:
    """``(change, info)`` of the run ``entry`` of a changes version's ``runs`` (``path``:
    that version, for errors): a version file for a run of one version, else an object
    under ``_rcfmt/runs/``. Its name, size and versions are checked against the entry."""
    try:
        rel, run_size, first, last = entry["path"], entry["size"], entry["first"], entry["last"]
        if not all(type(x) is int for x in (run_size, first, last)) or not isinstance(rel, str):
            raise TypeError("mistyped")
    except (KeyError, TypeError) as exc:
        raise CorruptFileError(f"malformed run entry {entry!r} ({exc})", path=path) from None
    if first == last and rel == f"{log.META_DIR}/{os.path.basename(log.version_path(root, first))}":
        version = first
    elif _RUN_PATH.match(rel):
        version = None
    else:
        raise CorruptFileError(f"run entry names {rel!r}, neither version {first} nor an object of "
                               f"{log.META_DIR}/{changelog.RUNS_DIR}/", path=path)
    if version is not None:
        where = _inside(root, log.version_path(root, version))
    elif is_remote(root):
        where = f"{root.rstrip('/')}/{rel}"
    else:
        where = check_inside(root, os.path.join(root, *rel.split("/")), what="run")
    identity = _version_identity(where, run_size) if version is not None else run_size
    key = None if identity is None else (where, identity)
    cached = None if key is None else _RUNS.get(key)
    if cached is None:
        with index_errors(version, where), RcfmtFile(where, size=run_size, immutable=True) as f:
            if f.size != run_size:
                raise CorruptFileError(f"is {f.size} bytes, its run entry says {run_size}", path=where)
            info, schema, partitioning = _version_info(f, version, where)
            change = changelog.read_change(f.read(), where)
            _check_rows(change.rows, schema, partitioning, where)
        cached = (change, info)
        if key is not None:
            _RUNS.put(key, cached)
    change, info = cached
    expect = changelog.CHANGES if version is not None else changelog.RUN
    if changelog.layout_of(info) != expect or info.get("first", first) != first or info.get("last", last) != last:
        raise CorruptFileError(f"{rel} is not the {expect} of versions {first}..{last} its entry names", path=path)
    return change, info


def _chain(info: dict, version: int, path: str) -> tuple[int, int | None, list]:
    """``(checkpoint version, its size, runs)`` a changes version names, checked: the
    checkpoint is an earlier version and the runs cover the versions after it up to the
    parent, in order, without gap or overlap."""
    try:
        ckpt = info["checkpoint"]
        c, c_size, runs = ckpt["version"], ckpt.get("size"), changelog.runs_of(info)
        if type(c) is not int or (c_size is not None and type(c_size) is not int):
            raise TypeError("mistyped checkpoint")
        nxt = c + 1
        for r in runs:
            if r["first"] != nxt or r["last"] < r["first"]:
                raise ValueError(f"run {r!r} does not start at version {nxt}")
            nxt = r["last"] + 1
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptFileError(f"malformed changes version chain ({exc})", path=path) from None
    if not 1 <= c < version or nxt != version:
        raise CorruptFileError(f"changes version {version} names checkpoint {c} and runs up to {nxt - 1}, "
                               f"not a chain ending at its parent", path=path)
    return c, c_size, runs


def _check_rows(rows: pa.Table, schema: pa.Schema, partitioning: Partitioning, where: str) -> None:
    """A change's rows (read from ``where``, written under the data ``schema``) checked as
    an index version's are: columns of the index schema, typed, without forged NULLs or
    deletion vectors (once per object: :func:`read_run` keeps them checked)."""
    # (written under the index schema of their data schema: a column missing would be
    # conformed into NULLs where none may be, or counts saying every value is NULL)
    have, ischema = set(rows.schema.names), index_schema(schema, partitioning)
    required = {*DV_COLUMNS, *(f"{n}.value" for n in partitioning.names)}
    missing = [f.name for f in ischema if (not f.nullable or f.name in required) and f.name not in have]
    if missing:
        raise CorruptFileError(f"a changes object's rows lack the index columns {missing[:10]} of its dataset schema",
                               path=where)
    check_index_columns(rows, rows.schema.names, schema, partitioning, where)
    check_deletions(rows, where)


def conform_rows(rows: pa.Table, ischema: pa.Schema, where: str) -> pa.Table:
    """The (checked) index rows of a change under the index schema ``ischema`` of a
    later version of the same chain (columns added since, types widened)."""
    if rows.schema == ischema:
        return rows
    try:
        return conform_index(rows, ischema)
    except (pa.ArrowException, KeyError) as exc:
        raise CorruptFileError(f"index rows do not convert to a later version's schema ({exc})", path=where) from None


def _read_changes(root: str, version: int, info: dict, own: changelog.Change, columns, size: int, path: str,
                  data_schema: pa.Schema, partitioning: Partitioning) -> Snapshot:
    """A changes version: its checkpoint's rows with the changes of its runs and its own
    applied in order."""
    c, c_size, runs = _chain(info, version, path)
    try:
        if is_remote(root) and len(runs) > 1:  # one request each: the objects are fetched side by side
            from ..runtime.threads import thread_pool

            with thread_pool(min(REMOTE_READS, len(runs) + 1)) as pool:
                base_read = pool.submit(read_snapshot, root, c, columns, c_size, version)
                run_reads = [pool.submit(read_run, root, r, path) for r in runs]
                read = [future.result() for future in run_reads]
                base = base_read.result()
        else:
            base = read_snapshot(root, c, columns, size=c_size, checkpoint_of=version)
            read = [read_run(root, r, path) for r in runs]
    except _NotTheCheckpoint as exc:
        raise CorruptFileError(str(exc), path=path) from None
    except FileNotFoundError as exc:  # (a part the version names is gone: the chain is broken)
        raise CorruptFileError(f"changes version {version} is read with its checkpoint (version {c}) and "
                               f"{len(runs)} run(s), and one of them is missing: {exc}", path=path) from None
    if changelog.layout_of(base.info) != changelog.CHECKPOINT:
        raise CorruptFileError(f"changes version {version} names version {c} as its checkpoint, which is not one",
                               path=path)
    if base.partitioning != partitioning:
        raise CorruptFileError(f"changes version {version} has another partitioning than its checkpoint {c}",
                               path=path)
    ischema = index_schema(data_schema, partitioning)
    loaded = [(ch, rec, r["path"]) for (ch, rec), r in zip(read, runs)] + [(own, info, path)]
    if any(rec["partitioning"] != info["partitioning"] for _, rec, _ in loaded):
        raise CorruptFileError(f"a run of changes version {version} has another partitioning", path=path)
    delta = changelog.combine([changelog.Change(conform_rows(ch.rows, ischema, where), ch.removed)
                               for ch, rec, where in loaded])
    _check_paths(delta.rows, path)
    order = changelog.apply_order(base.table.column("path").combine_chunks(), delta)
    return ChainSnapshot(root, data_schema, partitioning, info, version, path, size, base, delta.rows, order, columns)


def _fresh(snap: Snapshot) -> Snapshot:
    """A new snapshot of a checkpoint over the same rows (statistics it loads are its own)."""
    return Snapshot(snap.root, snap.data_schema, snap.partitioning, snap.table, snap.info, snap.version,
                    snap.index_path, snap.index_size)


class ChainSnapshot(Snapshot):
    """A changes version: the rows of its checkpoint (``base``, whose statistics columns
    load on demand as a checkpoint's do) and its chain's changes (``delta``, every
    column), arranged by ``order`` (:func:`rcfmt.dataset.changelog.apply_order`)."""

    def __init__(self, root, data_schema, partitioning, info, version, path, size, base: Snapshot,
                 delta: pa.Table, order, columns, assembled: pa.Table | None = None):
        self._base, self._delta = base, delta
        self._order = order if isinstance(order, pa.Array) else pa.array(order, pa.int64())
        self._ischema = index_schema(data_schema, partitioning)
        names = [n for n in self._ischema.names] if columns is None else list(dict.fromkeys(
            [*BASE_COLUMNS, *DV_COLUMNS, *(f"{n}.value" for n in partitioning.names), *columns]))
        have = assembled.schema.names if assembled is not None else ()
        self._preload([n for n in names if n not in have])
        table = pa.table({n: assembled.column(n) if n in have else self._assemble(n) for n in names},
                         schema=pa.schema([self._ischema.field(n) for n in names]))
        super().__init__(root, data_schema, partitioning, table, info, version, path, size)

    def again(self, columns) -> "ChainSnapshot":
        """This version read again, with the index columns ``columns`` (as
        :func:`read_snapshot`): a new snapshot over the same parts, which loads its own
        columns (the checkpoint's statistics read on demand, as before)."""
        base = _fresh(self._base)
        return ChainSnapshot(self.root, self.data_schema, self.partitioning, self.info, self.version,
                             self.index_path, self.index_size, base, self._delta, self._order, columns, self.table)

    def _preload(self, names: list) -> None:
        """Load the checkpoint's columns ``names`` it has not loaded yet, in one read (a
        column the index gained after the checkpoint, ``<column>.values``, may be absent)."""
        base = self._base
        need = [n for n in names if base.table.schema.get_field_index(n) < 0
                and index_field(n, base.stats_schema, base.partitioning) is not None]
        for optional in (False, True):
            part = [n for n in need if n.endswith(f".{VALUES_FIELD}") == optional]
            if part:
                base.load_columns(part, optional=optional)

    def _assemble(self, name: str) -> pa.Array:
        field = self._ischema.field(name)
        base = self._base
        self._preload([name])
        have = [n for n in ("num_rows", name) if base.table.schema.get_field_index(n) >= 0]
        try:
            part = conform_index(base.table.select(list(dict.fromkeys(have))), pa.schema([field])).column(0)
        except (pa.ArrowException, KeyError) as exc:
            raise CorruptFileError(f"index column {name!r} of checkpoint {base.version} does not convert to "
                                   f"version {self.version}'s schema ({exc})", path=base.index_path) from None
        both = pa.chunked_array([*part.chunks, *self._delta.column(name).chunks], field.type)
        return both.take(self._order).combine_chunks()

    def load_columns(self, names: list, optional: bool = False) -> None:
        with self.loading:  # (threads sharing the snapshot load a column once)
            names = [n for n in names
                     if self.table.schema.get_field_index(n) < 0 and self._ischema.get_field_index(n) >= 0]
            self._preload(names)
            for name in names:
                self.table = self.table.append_column(self._ischema.field(name), self._assemble(name))


#: relative paths :func:`check_relpath` accepted (a pure check of the string: any root)
_CHECKED_PATHS: set = set()
_CHECKED_MAX = 1 << 20


#: per dataset root, the last version this process committed there: ``(version, identity
#: of its index file, its rows, its info as written)`` -- what the next append from this
#: process starts from, without reading the index it has just written
_COMMITTED: "collections.OrderedDict" = collections.OrderedDict()
_COMMITTED_ROOTS = 16
_COMMITTED_CHUNKS = 64
_COMMITTED_LOCK = threading.Lock()


def _identity(root: str, version: int, size: int | None):
    """What must not have changed for a remembered version to be used: on object stores
    its store (endpoint) and size (an index version is never replaced under its name,
    unless the dataset is deleted and written again: see DATASET.md), locally its size,
    inode and modification time (a file replaced or rewritten in place differs)."""
    return _identity_of(log.version_path(root, version), size)


def _identity_of(path: str, size: int | None):
    if is_remote(path):  # (the store too: two endpoints may hold the same bucket and key)
        return store_identity_of(path), size
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_ino, st.st_mtime_ns


def remember_committed(root: str, version: int, size: int, table: pa.Table, info_json: str) -> None:
    """Keep the complete index rows of ``version``, just committed by this process."""
    identity = _identity(root, version, size)
    if identity is None:
        return
    if max((c.num_chunks for c in table.columns), default=0) > _COMMITTED_CHUNKS:
        table = table.combine_chunks()  # (each append adds a chunk: combined now and then, not each time)
    entry = (version, identity, table, info_json)
    with _COMMITTED_LOCK:
        _COMMITTED[root] = entry
        _COMMITTED.move_to_end(root)
        while len(_COMMITTED) > _COMMITTED_ROOTS:
            _COMMITTED.popitem(last=False)


def committed_snapshot(root: str, version: int, size: int | None) -> Snapshot | None:
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


def read_committed(root: str, version: int, size: int | None) -> Snapshot:
    """Version ``version``, just committed by this process: the rows it wrote (no read)
    while its file is the one it wrote, else read."""
    known = committed_snapshot(root, version, size)
    return known if known is not None else read_snapshot(root, version, size=size)


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
        known = committed_snapshot(root, version, size)
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


def discover(root: str, single_file: str | None = None, writer: bool = False) -> Snapshot:
    """A snapshot of a directory without index (or of one file): footers are read now.
    When a dataset writer starts (``_rcfmt/`` appears) while the directory is walked,
    the files named as writers name them are left out (they may be that writer's,
    published and not committed); for a ``writer`` about to commit the first version
    that is a CommitConflictError instead (:func:`load_base` then looks again, finding
    that writer's version or its ``_rcfmt/``)."""
    if single_file is not None:
        relpaths = [os.path.basename(single_file)]
        partitioning = Partitioning()
    else:
        relpaths = []
        # A dataset writer publishes its files before it commits the first version: while
        # _rcfmt/ exists without a version, files named as it names them are uncommitted
        # (in flight, or left by a crashed writer) and are neither read nor adopted.
        had_meta = os.path.isdir(log.meta_dir(root))
        uncommitted = had_meta and not log.list_versions(root)
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
        if not had_meta and os.path.isdir(log.meta_dir(root)):  # (a writer started meanwhile)
            if writer:
                raise CommitConflictError(f"another writer started the first version of {root!r} while this one "
                                          "listed its files; nothing was written (try again)")
            if not log.list_versions(root):  # (committed since: its files are no one's to leave out)
                relpaths = [rel for rel in relpaths if not WRITER_FILE.match(rel.rsplit("/", 1)[-1])]
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
    for first in (True, False):  # (again once, when a writer started while the directory was walked)
        snap = read_latest(root, columns=None)
        if snap is not None:
            return snap.version, snap, None
        if not os.path.isdir(root):
            break
        try:
            snap = discover(root, writer=first)
        except CommitConflictError:
            continue
        if len(snap):
            return 0, snap, snap.table
        break
    return 0, None, None
