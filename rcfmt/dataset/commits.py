"""Committing a dataset version: the data files published, the new index written and the
version file created if absent, retried against commits that came first (the protocol
is described in :mod:`rcfmt.dataset.log`). :func:`commit` is what
:mod:`rcfmt.dataset.writer`, :mod:`rcfmt.dataset.optimize`, ``Dataset.evolve`` and the
Spark driver call; nothing here opens a :class:`~rcfmt.dataset.Dataset`.
"""
from __future__ import annotations

import datetime as _dt
import os
from typing import Iterable

import numpy as np
import pyarrow as pa

from ..errors import CommitConflictError, CorruptFileError, InvalidOptionError, RcfmtError, SchemaError
from .evolution import column_ids, extend_column_ids, keeps_columns, merge_schemas, renamed_path
from ..schema.arrow_io import to_numpy
from ..storage import delete_files, is_remote, object_size, replace_object
from ..storage.paths import dataset_uri
from . import changelog, log
from .index import (INDEX_METADATA_KEY, STATS_FIELDS, VALUES_FIELD, FileEntry, conform_index, Snapshot, dumps_info,
                    dv_columns, entries_table, index_schema, schema_from_json, schema_to_json, stats_schema,
                    vectors_of)
from .partitioning import Partitioning
from .snapshot import conform_rows, info_problem, read_run, read_snapshot, remember_committed, remember_run

__all__ = ["commit", "commit_version", "stream_batches", "write_index_file", "index_bytes", "publish_files", "remove_files"]

INDEX_BLOCK_ROWS = 8192
#: indexes of at most this many files are written without encoding choices (index_write_options)
SMALL_INDEX_ROWS = 256
MAX_COMMIT_ATTEMPTS = 1000


# ------------------------------------------------------------------ commit
def write_index_file(root: str, table: pa.Table, info: dict, name: str) -> str:
    """Write an index version (complete, or a change) to ``_rcfmt/_tmp/<name>.rcfmt``
    (fsync'd); return its path."""
    from ..file.writer import write_table

    d = log.tmp_dir(root)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{name}.rcfmt")
    write_table(table, path, metadata={INDEX_METADATA_KEY: dumps_info(info)}, **index_write_options(table, info))
    return path


def index_write_options(table: pa.Table, info: dict | None = None) -> dict:
    """How an index file is written: like any rcfmt file, except that an index of few
    files (at most :data:`SMALL_INDEX_ROWS`) is written plain, uncompressed and without
    bloom filters or bitmap indexes -- per column, choosing an encoding costs more than
    the bytes it could save, and every commit writes the index. A change (one row holding
    an Arrow IPC stream) is written plain and compressed."""
    if info is not None and changelog.layout_of(info) != changelog.CHECKPOINT:
        return {"encoding": "plain", "dictionary": False, "compression": "zstd", "bloom_filter_columns": None,
                "bitmap_indexes": None, "use_threads": False}
    if table.num_rows > SMALL_INDEX_ROWS:
        return {"block_rows": INDEX_BLOCK_ROWS}
    return {"block_rows": INDEX_BLOCK_ROWS, "encoding": "plain", "dictionary": False, "compression": "none",
            "bloom_filter_columns": None, "bitmap_indexes": None, "use_threads": False}


def index_bytes(table: pa.Table, info: dict) -> bytes:
    """A complete index file as bytes (for object stores, whose commit is one PUT)."""
    import tempfile

    from ..file.writer import write_table

    with tempfile.TemporaryDirectory(prefix="rcfmt-index-") as d:
        path = os.path.join(d, "index.rcfmt")
        write_table(table, path, metadata={INDEX_METADATA_KEY: dumps_info(info)},
                    **index_write_options(table, info))
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


def _vectors(table: pa.Table | None) -> tuple[list, list]:
    """``(paths, deletion vectors)`` of index rows."""
    if table is None:
        return [], []
    return table.column("path").to_pylist(), vectors_of(table)


def _check_vectors(prev: pa.Table | None, expected: dict, root: str, base: int, mode: str) -> None:
    """CommitConflictError unless every file of ``expected`` is in ``prev`` with the
    deletion vector it names (a concurrent delete, update or rewrite changed it)."""
    if not expected:
        return
    now = dict(zip(*_vectors(prev)))
    for path, vector in expected.items():
        if path not in now:
            raise CommitConflictError(f"{_OPERATIONS.get(mode, mode)} of {root!r} conflicts with version {base}, which "
                                      f"no longer has file {path!r}: it was removed meanwhile (rewritten, or every row "
                                      "deleted); nothing was written")
        if now[path] != vector:
            raise CommitConflictError(f"{_OPERATIONS.get(mode, mode)} of {root!r} conflicts with version {base}, which "
                                      f"deleted rows of file {path!r} meanwhile; nothing was written")


_OPERATIONS = {"rewrite": "rewrite", "change": "row-level change"}


def _with_vectors(table: pa.Table, deletions: dict) -> pa.Table:
    """Index rows whose files of ``deletions`` (``{relpath: DeletionVector}``) have
    those vectors."""
    paths, vectors = _vectors(table)
    vectors = [deletions.get(p, v) for p, v in zip(paths, vectors)]
    for name, column in dv_columns(vectors).items():
        i = table.schema.get_field_index(name)
        table = table.append_column(name, column) if i < 0 else table.set_column(i, name, column)
    return table


def _changes(root: str, snap: Snapshot, base: int, table: pa.Table, touched: set, info: dict, name: str,
             runs_written: list, appended: int = 0) -> tuple[pa.Table, dict, changelog.Change] | None:
    """``(stored table, info, change)`` of the new version written as its changes to ``snap``
    (version ``base``, every index column): the rows of ``table`` (the new complete index)
    whose paths are ``touched`` (added files, new deletion vectors) and the paths of
    ``snap`` that ``table`` lacks (``appended``: the number of new rows at the end of
    ``table`` when that is all that changed, an append). Runs of the chain that reach :data:`changelog.MERGE_FANOUT`
    of one level are merged first (their objects listed in ``runs_written``). None when
    the version should be a checkpoint: the chain's changes reach its checkpoint's size."""
    import pyarrow.compute as pc

    binfo = snap.info
    if appended:  # an append: the new rows are the last ones, nothing is removed
        own = changelog.Change(table.slice(table.num_rows - appended), pa.array([], pa.string()))
    else:
        base_paths = snap.table.column("path")
        new_paths = table.column("path")
        removed = base_paths.filter(pc.invert(pc.is_in(base_paths, value_set=new_paths.combine_chunks())))
        rows = table.filter(pc.is_in(new_paths, value_set=pa.array(sorted(touched), pa.string())))
        own = changelog.Change(rows, removed.combine_chunks() if isinstance(removed, pa.ChunkedArray) else removed)
    base_size = snap.index_size if snap.index_size is not None else object_size(log.version_path(root, base))
    if base_size is None:
        return None
    if changelog.layout_of(binfo) == changelog.CHANGES:
        ckpt = dict(binfo["checkpoint"])
        runs = changelog.runs_of(binfo)
        runs.append({"path": _meta_rel(log.version_path(root, base)), "size": base_size, "first": base,
                     "last": base, "level": 0})
        chain_rows = int(binfo.get("chain_rows", 0)) + own.size
    else:
        ckpt = {"version": base, "size": base_size, "files": len(snap)}
        runs, chain_rows = [], own.size
    if chain_rows >= max(changelog.CHECKPOINT_MIN_ROWS, changelog.CHECKPOINT_FRACTION * ckpt.get("files", 0)):
        return None
    ischema = index_schema(schema_from_json(info["schema"]),
                           Partitioning.from_json(info["partitioning"]))
    fan = changelog.MERGE_FANOUT
    while len(runs) >= fan and len({r["level"] for r in runs[-fan:]}) == 1:
        group = runs[-fan:]
        where = log.version_path(root, base + 1)
        try:
            loaded = [read_run(root, r, where) for r in group]
        except (OSError, RcfmtError):  # (gone: a vacuum after a checkpoint since ``base`` was read)
            remove_files(runs_written)  # (runs of lower levels merged already: no version will name them)
            del runs_written[:]
            return None  # a checkpoint then: the complete index is at hand (a lost race rebases as ever)
        merged = changelog.combine(
            [changelog.Change(conform_rows(ch.rows, ischema, r["path"]), ch.removed)
             for (ch, rec), r in zip(loaded, group)])
        first, last = group[0]["first"], group[-1]["last"]
        rel = f"{log.META_DIR}/{changelog.RUNS_DIR}/{changelog.run_name(first, last, name)}"
        run_info = {"format": "rcfmt-dataset", "format_version": changelog.CHANGES_FORMAT_VERSION,
                    "layout": changelog.RUN, "first": first, "last": last, "level": group[0]["level"] + 1,
                    "schema": info["schema"], "partitioning": info["partitioning"],
                    "transaction": info["transaction"]}
        size = _write_run(root, rel, changelog.change_table(merged), run_info, runs_written)
        remember_run(runs_written[-1], size, merged, run_info, version=False)
        runs[-fan:] = [{"path": rel, "size": size, "first": first, "last": last, "level": group[0]["level"] + 1}]
    info = {**info, "format_version": changelog.CHANGES_FORMAT_VERSION, "layout": changelog.CHANGES,
            "checkpoint": ckpt, "runs": changelog.runs_json(runs), "chain_rows": chain_rows}
    return changelog.change_table(own), info, own


def _meta_rel(path: str) -> str:
    return f"{log.META_DIR}/{os.path.basename(path)}"


def _write_run(root: str, rel: str, table: pa.Table, info: dict, written: list) -> int:
    """Write a merged run (a new, unique name; no version names it yet); its size."""
    if is_remote(root):
        data = index_bytes(table, info)
        target = f"{root.rstrip('/')}/{rel}"
        written.append(target)
        replace_object(target, data)
        return len(data)
    from ..file.writer import write_table

    target = os.path.join(root, *rel.split("/"))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    written.append(target)
    write_table(table, target, metadata={INDEX_METADATA_KEY: dumps_info(info)}, **index_write_options(table, info))
    log.fsync_dir(os.path.dirname(target))
    return os.path.getsize(target)


#: the applications (streaming queries) whose last batch a version carries: the most recent ones
STREAM_APPLICATIONS_KEPT = 1000


def _stream_records(info: dict) -> dict:
    """The ``stream_batches`` info key of a version, checked: ``{application: [batch,
    time]}``; CorruptFileError when a forged or damaged index holds anything else."""
    recorded = info.get("stream_batches")
    if recorded is None:
        return {}
    if isinstance(recorded, dict) and all(
            isinstance(app, str) and isinstance(entry, list) and len(entry) == 2
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in entry)
            and isinstance(entry[0], int) and entry[0] >= 0
            for app, entry in recorded.items()):
        return recorded
    raise CorruptFileError(
        f"dataset index version {info.get('version')}: 'stream_batches' is not a map of "
        f"application to [batch, time]: {str(recorded)[:200]!r}")


def stream_batches(info: dict) -> dict:
    """``{application id: last batch id}`` a version records (streaming sinks' micro-batches);
    CorruptFileError when the record is malformed."""
    return {app: entry[0] for app, entry in _stream_records(info).items()}


def _recorded_batch(info: dict, app: str) -> int:
    entry = _stream_records(info).get(app)
    return entry[0] if entry else -1


def _stream_info(base_info: dict, stream: tuple[str, int] | None) -> dict:
    """The version info keys of streaming sinks: ``stream_batches`` (``{application:
    [last batch, unix time]}``, carried from the base version, this commit's batch
    added; the :data:`STREAM_APPLICATIONS_KEPT` most recent applications) and, for a
    micro-batch, ``stream`` (``{"application", "batch"}``)."""
    import time

    recorded = dict(_stream_records(base_info))
    if stream is None:
        return {"stream_batches": recorded} if recorded else {}
    app, batch = stream
    recorded.pop(app, None)
    recorded[app] = [int(batch), round(time.time(), 3)]
    if len(recorded) > STREAM_APPLICATIONS_KEPT:
        newest = sorted(recorded, key=lambda a: recorded[a][1])[-STREAM_APPLICATIONS_KEPT:]
        recorded = {a: recorded[a] for a in recorded if a in set(newest)}
    return {"stream_batches": recorded, "stream": {"application": app, "batch": int(batch)}}


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
        new = renamed_path(path, renames, data_schema.names)
        if new != path:
            names.update({f"{path}.{s}": f"{new}.{s}" for s in (*STATS_FIELDS, VALUES_FIELD)})
    return table.rename_columns([names.get(n, n) for n in table.column_names])


#: how a conflict's message names the commit of each mode
_WHAT = {"append": "append to", "rewrite": "rewrite (optimize or overwrite of partitions) of",
         "change": "change (delete, update or merge) of"}


def commit(root: str, entries: list[FileEntry], *, mode: str, read_version: int, data_schema: pa.Schema,
           partitioning: Partitioning, txn_id: str, staged: list[tuple[str, str]] = (),
           clustering: dict | None = None, base_table_unindexed: pa.Table | None = None,
           operation_info: dict | None = None, remove: Iterable[str] = (), renames: dict | None = None,
           base_snapshot: Snapshot | None = None, deletions: dict | None = None, expected: dict | None = None,
           checkpoint: bool = False, stream: tuple[str, int] | None = None, read_base: Snapshot | None = None) -> int | None:
    """Publish ``staged`` data files and commit ``entries`` as a new version; return it
    (see :func:`commit_version`, which also returns the size of its index)."""
    return commit_version(root, entries, mode=mode, read_version=read_version, data_schema=data_schema,
                          partitioning=partitioning, txn_id=txn_id, staged=staged, clustering=clustering,
                          base_table_unindexed=base_table_unindexed, operation_info=operation_info, remove=remove,
                          renames=renames, base_snapshot=base_snapshot, deletions=deletions, expected=expected,
                          checkpoint=checkpoint, stream=stream, read_base=read_base)[0]


def commit_version(root: str, entries: list[FileEntry], *, mode: str, read_version: int, data_schema: pa.Schema,
                   partitioning: Partitioning, txn_id: str, staged: list[tuple[str, str]] = (),
                   clustering: dict | None = None, base_table_unindexed: pa.Table | None = None,
                   operation_info: dict | None = None, remove: Iterable[str] = (), renames: dict | None = None,
                   base_snapshot: Snapshot | None = None, deletions: dict | None = None,
                   expected: dict | None = None, checkpoint: bool = False,
                   stream: tuple[str, int] | None = None, read_base: Snapshot | None = None) -> tuple[int | None, int]:
    """:func:`commit`, returning ``(version, bytes of its index file)``.

    Publish ``staged`` data files and commit ``entries`` as a new version; return it.

    ``mode`` "append" rebases onto concurrent commits; "overwrite" raises
    :class:`CommitConflictError` if the latest version is no longer ``read_version``;
    "rewrite" replaces the files ``remove`` (relative paths) by ``entries`` and rebases
    onto concurrent commits as long as they left every file of ``remove`` in place
    with the deletion vector it had in ``read_version`` (else CommitConflictError:
    someone else rewrote them or deleted rows of them). "change" (a row-level
    delete, update or merge) gives the files of ``deletions`` (``{relpath:
    DeletionVector}``) their new vectors, removes the files ``remove`` (every row
    deleted) and adds ``entries`` (new rows), rebasing onto concurrent commits as long
    as each of those files is still there with the vector ``expected`` (``{relpath:
    DeletionVector or None}``, what the caller read) -- never losing a delete.
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
    ``read_base``: version ``read_version`` as the caller read it, any columns loaded,
    for a rebase only (its schema and deletion vectors, where a vacuum may have removed
    it from the store since; a caller that read it long before the commit must not skip
    the lookup of the latest version: a vacuum may have removed ``read_version + 1``).

    The version is written as the changes it makes to its base version
    (:mod:`rcfmt.dataset.changelog`) unless it is an overwrite, an evolve, a first
    version, ``checkpoint`` is true, or the chain of changes since the last checkpoint
    has grown to the checkpoint's size: then it is a complete index (a checkpoint).

    ``stream`` (``(application id, batch id)``, a streaming sink's micro-batch): the
    version records the batch, and every later version carries the last batch of each
    application (``stream_batches``, :func:`stream_batches`); when the version it is
    based on already records this batch or a later one of the application (a batch
    replayed after a crash between its commit and the engine's checkpoint), nothing is
    committed, the published files are removed and ``(None, 0)`` is returned.

    After the commit the version hint names the new version (best effort; see
    :func:`rcfmt.dataset.log.find_latest`)."""
    if mode not in ("append", "overwrite", "rewrite", "evolve", "change"):
        raise InvalidOptionError(f"mode must be 'append', 'overwrite', 'rewrite', 'evolve' or 'change', got {mode!r}")
    if is_remote(root):
        dataset_uri(root)  # (a URI with a query is refused: no object below the root can carry it)
    remove = set(remove)
    deletions = dict(deletions or {})
    expected = dict(expected or {})
    known = base_snapshot if (base_snapshot is not None and read_version and base_snapshot.version == read_version
                              and base_snapshot.root == root) else None
    # (the caller's read version decides a rebase by its schema and deletion vectors, even if a
    # vacuum removed it meanwhile)
    read = known if known is not None else read_base if (
        read_base is not None and read_version and read_base.version == read_version and read_base.root == root) else None

    def full_snapshot(version: int) -> Snapshot:
        """Version ``version`` with every index column: the caller's, when it is that one."""
        return known if known is not None and known.version == version else read_snapshot(root, version, columns=None)

    def read_version_snapshot() -> Snapshot:
        """Version ``read_version`` as the caller read it, or from the store; a clear
        conflict when neither has it (a vacuum removed it while this write ran)."""
        if read is not None:
            return read
        try:
            return read_snapshot(root, read_version, columns=[])
        except FileNotFoundError:
            if log.version_exists(root, read_version):
                raise
            raise CommitConflictError(
                f"{_WHAT.get(mode, mode)} {root!r} started from version {read_version}, which a vacuum removed "
                f"while it ran (it took longer than the retention, or that version was already past it); "
                f"nothing was written") from None

    published = publish_files(root, list(staged))
    committed = None
    try:
        new_rows = entries_table(entries, data_schema, partitioning)
        schema_json = schema_to_json(data_schema)
        attempt = 0
        base = read_version if known is not None else None  # (None: look the latest version up)
        if base is not None and not log.version_exists(root, read_version):
            # the version read is gone: a vacuum ran since, and may have removed read + 1 too (it
            # deletes the oldest first), which a blind create would make again below the latest
            base = None
        while True:
            if base is None:
                base = log.latest_version(root)
            schema = data_schema
            removed = 0
            snap = None  # the base version, when this version may be written as its changes
            recorded = clustering
            base_info = {}  # the base version's info (what streaming sinks committed is carried on)
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
                    replaced = known if known is not None else read_snapshot(root, base, columns=[])
                    removed = len(replaced)
                    base_info = replaced.info
                table = new_rows
            else:
                if base == 0:
                    prev = base_table_unindexed
                else:
                    snap = full_snapshot(base)
                    dropped = list(snap.info.get("dropped_columns", []))
                    what = _WHAT.get(mode, mode)  # (how a conflict names this commit)
                    if set(dropped) & set(data_schema.names):
                        raise CommitConflictError(
                            f"{what} {root!r} conflicts with version {base}, which dropped column(s) "
                            f"{sorted(set(dropped) & set(data_schema.names))}; nothing was written")
                    if snap.partitioning != partitioning:
                        raise CommitConflictError(
                            f"{what} {root!r} conflicts with version {base}, which changed the "
                            "partitioning; nothing was written")
                    if base != read_version and read_version and not keeps_columns(
                            read_version_snapshot().data_schema, snap.data_schema):
                        raise CommitConflictError(  # e.g. an overwrite with other columns
                            f"{what} {root!r} conflicts with version {base}, which changed the schema; "
                            "nothing was written")
                    try:  # concurrent appends may each add or widen columns: the union is committed
                        schema = merge_schemas(snap.data_schema, data_schema)
                    except SchemaError as exc:
                        raise CommitConflictError(
                            f"{what} {root!r} conflicts with version {base}, which changed the schema "
                            f"({exc}); nothing was written") from None
                    prev = snap.table
                    if snap.info.get("column_ids") is not None:
                        ids = column_ids(snap.info, snap.data_schema)
                    if recorded is None and mode in ("append", "change") and snap.info.get("clustering"):
                        # the policy stays; appended files are at best clustered within themselves
                        recorded = {**snap.info["clustering"], "scope": "file"}
                if mode == "rewrite" and base != read_version and read_version:
                    # the rows it rewrote are those of read_version: deleted since, they would come back
                    expected = {p: v for p, v in zip(*_vectors(read_version_snapshot().table))
                                if p in remove}
                if mode in ("rewrite", "change"):
                    _check_vectors(prev, expected, root, base, mode)
                    prev = _without_files(prev, remove, {e.path for e in entries}, root, base)
                    removed = len(remove)
                if mode == "change" and deletions:
                    prev = _with_vectors(prev, deletions)
                ischema = index_schema(schema, partitioning)
                table = conform_index(new_rows, ischema)
                if prev is not None and prev.num_rows:
                    table = pa.concat_tables([conform_index(prev, ischema), table])
                schema_json = schema_to_json(schema)
            if snap is not None:
                base_info = snap.info
            if stream is not None and _recorded_batch(base_info, stream[0]) >= stream[1]:
                remove_files(published)  # a replayed batch: committed before, by this or an earlier attempt
                return None, 0
            deleted = int(np.asarray(to_numpy(table.column("deleted_rows"))).sum()) if (
                table.num_rows and table.schema.get_field_index("deleted_rows") >= 0) else 0
            info = {
                "format": "rcfmt-dataset", "format_version": 2 if deleted else 1,
                "version": base + 1, "parent_version": base, "operation": mode, "transaction": txn_id,
                "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(),
                "schema": schema_json, "partitioning": partitioning.to_json(), "clustering": recorded,
                "num_files": table.num_rows, "num_rows": int(np.asarray(table.column("num_rows").to_numpy()).sum())
                - deleted if table.num_rows else 0,
                **({"deleted_rows": deleted} if deleted else {}),
                "added_files": len(entries), "removed_files": removed,
                **({"dropped_columns": dropped} if dropped else {}),
                **_ids_info(ids, schema),
                **_stream_info(base_info, stream),
                **(operation_info or {}),
            }
            problem = info_problem(info)  # (what readers would refuse is refused before the commit)
            if problem is not None:
                raise InvalidOptionError(f"commit of {root!r}: its version info is not one readers take: {problem}; "
                                         "nothing was written")
            stored, runs_written, own = table, [], None
            try:
                if snap is not None and mode in ("append", "rewrite", "change") and not checkpoint:
                    planned = _changes(root, snap, base, table, {e.path for e in entries} | set(deletions), info,
                                       f"{txn_id}-{attempt}", runs_written,
                                       appended=len(entries) if mode == "append" and entries else 0)
                    if planned is not None:
                        stored, info, own = planned
                if is_remote(root):
                    data = index_bytes(stored, info)
                    size = len(data)
                    published_now = log.publish_remote_version(root, base + 1, data)
                else:
                    tmp = write_index_file(root, stored, info, f"{txn_id}-{attempt}")
                    size = os.path.getsize(tmp)
                    published_now = log.publish_version(root, base + 1, tmp)
            except BaseException as exc:
                if not getattr(exc, "outcome_unknown", False):  # (a version that may yet land names them)
                    remove_files(runs_written)
                raise
            if published_now:
                committed = base + 1
                if own is not None:  # (the next writer here merges it without reading it back)
                    remember_run(log.version_path(root, committed), size, own, info)
                break
            remove_files(runs_written)  # (merged for a version another writer took)
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
    except BaseException as exc:
        if not getattr(exc, "outcome_unknown", False):  # (a version that may yet land names them)
            remove_files(published)
        raise
    log.write_hint(root, committed, size)  # (outside the try: the commit stands whatever happens here)
    try:  # this process's next append starts here (an optimisation only)
        remember_committed(root, committed, size, table, dumps_info(info))
    except Exception:
        pass
    return committed, size
