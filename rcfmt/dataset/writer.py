"""Writing datasets: :func:`write_dataset` and :func:`begin_write`, over the
:class:`FileSetWriter` that cuts rows into partitioned data files in a staging directory
(:mod:`rcfmt.dataset.files`) and :func:`commit` (:mod:`rcfmt.dataset.commits`; the
protocol is described in :mod:`rcfmt.dataset.log`). Their names stay importable from
here.

The Spark data source uses the same pieces: each task runs a :class:`FileSetWriter`
into its own staging directory and returns the :class:`~rcfmt.dataset.index.FileEntry`
of its files; the driver calls :func:`commit` with all of them.
"""
from __future__ import annotations

import os
import uuid
from typing import Iterable

import pyarrow as pa

from ..runtime.records import record
from ..errors import InvalidOptionError, SchemaError, UnsupportedError
from ..runtime.options import names as option_names
from ..file.writer import WriteOptions
from ..interop.arrow import batches_and_schema
from ..schema.tables import storage_schema
from ..layout import ClusteringSpec
from .evolution import check_names, merge_schemas
from ..storage import check_commit_support, delete_files, is_remote, list_names, list_tree, local_path, remote_kind
from ..storage.paths import dataset_uri
from . import log
from .index import DEFAULT_INDEX_TRUNCATE, Snapshot
from .partitioning import Partitioning
from .snapshot import WRITER_FILE, load_base, read_committed
from .commits import commit, commit_version
from .files import (DEFAULT_TARGET_FILE_ROWS, FileSetWriter, check_clustering_columns, cluster_file, clustering_info,
                    clustering_spec, inherited_bitmap_indexes, inherited_hints, join_path, recorded_clustering, split_schema)

__all__ = ["write_dataset", "begin_write", "WritePlan", "FileSetWriter", "commit", "clustering_spec", "clustering_info",
           "recorded_clustering", "cluster_file", "check_clustering_columns", "DEFAULT_TARGET_FILE_ROWS"]

DATA_SUFFIXES = (".rcfmt", ".rcf")


# ------------------------------------------------------------------ write_dataset
@record
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

    def __getstate__(self):
        # sent to other processes (an engine's tasks and its commit) without ``base``: the
        # whole index, which they do not need (the commit reads the latest version anyway)
        return {**self.__dict__, "base": None}

    def clustering_for(self, cluster_by, curve: str = "zorder", mapping: str = "rank") -> ClusteringSpec | None:
        """The clustering of this write's files: ``cluster_by`` (names or a spec; an
        empty list means none) or, when None, the dataset's recorded clustering for an
        append. Checked against the data columns."""
        if (curve, mapping) != ("zorder", "rank"):
            from ..layout.curves import check_curve

            check_curve(curve, mapping)
        if cluster_by is not None and not isinstance(cluster_by, ClusteringSpec):
            cluster_by = option_names(cluster_by, "cluster_by")  # (once: an iterator is read once)
        if cluster_by is None:
            spec = self.clustering if self.mode == "append" else None
            if spec is not None and not set(spec.columns) <= set(self.data_schema.names):
                return None  # (the append leaves a clustering column out, NULL in its files: the
                #              files are not clustered; the dataset's policy stays recorded)
        elif not isinstance(cluster_by, ClusteringSpec) and not cluster_by:
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
            if not self.read_version:  # a failed first write: no skeleton left (see _remove_if_empty)
                _remove_if_empty([log.meta_dir(self.root), log.staging_root(self.root)])


def _foreign_objects(root: str) -> list[str]:
    """Objects under the object-store ``root`` that no rcfmt dataset writer made. Data
    files named as writers name them are another writer's, uploaded before its first
    commit (two first writes racing): they do not make ``root`` a plain directory."""
    if not [n for n in list_names(root) if n != log.META_DIR]:
        return []
    return [rel for rel, _ in list_tree(root)
            if not rel.startswith(f"{log.META_DIR}/") and not WRITER_FILE.match(rel.rsplit("/", 1)[-1])]


def _dirs_to_create(path: str) -> list[str]:
    """The directories ``os.makedirs(path)`` would create, outermost first."""
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing[::-1]


def _remove_if_empty(dirs: list[str]) -> None:
    """Remove ``dirs`` (outermost first) that a failed write created, innermost first,
    as long as they are empty: a failed first write leaves no skeleton of a dataset (a
    concurrent writer's files keep theirs)."""
    for path in reversed(dirs):
        try:
            os.rmdir(path)
        except OSError:
            return


def begin_write(path, schema: pa.Schema, *, partition_by=None, mode: str = "append") -> WritePlan:
    """Check a write of data with ``schema`` to the dataset at ``path`` (created if
    missing) and return its :class:`WritePlan`. Raises SchemaError when an append does
    not fit the dataset (columns, types or partitioning)."""

    if mode not in ("append", "overwrite"):
        raise InvalidOptionError(f"mode must be 'append' or 'overwrite', got {mode!r}")
    if is_remote(path):
        root = dataset_uri(path)
        check_commit_support(root)
        if remote_kind(root) == "file":
            raise InvalidOptionError(f"{root!r} is a file; a dataset is a directory")
    else:
        root = os.path.abspath(local_path(path))
    if not is_remote(root) and os.path.isfile(root):
        raise InvalidOptionError(f"{root!r} is a file; a dataset is a directory")
    check_names(schema)
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
    partitioning.check_new_names(base_snap.partitioning.names if base_snap is not None else ())
    data_schema = split_schema(schema, partitioning)
    dataset_schema = data_schema
    if mode == "append" and base_snap is not None and (len(base_snap) or base_snap.data_schema.names):
        if base_snap.partitioning != partitioning:
            raise SchemaError(f"cannot append: partitioning {list(partitioning.names)} "
                              f"({[str(t) for t in partitioning.types]}) differs from the dataset's "
                              f"{list(base_snap.partitioning.names)} "
                              f"({[str(t) for t in base_snap.partitioning.types]}); "
                              f"partition values keep their type (cast the data's to the dataset's)")
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
    from ..runtime.progress import progress_bar, wanted
    from .dataset import Dataset

    wanted(progress)  # a bad value raises before anything is written
    schema, tables = batches_and_schema(data)
    plan = begin_write(path, schema, partition_by=partition_by, mode=mode)
    truncate = DEFAULT_INDEX_TRUNCATE if stats_truncate is None else stats_truncate
    if stats_truncate is not None:
        write_options["stats_truncate"] = stats_truncate
    if "bitmap_indexes" not in write_options and plan.mode == "append" and plan.read_version:
        # an append keeps the indexes the dataset's (latest) files have
        base = plan.base
        last = [base.table.column("path")[len(base) - 1].as_py()] if len(base) else []  # (not every path listed)
        inherited_bitmap_indexes([join_path(plan.root, rel) for rel in last], plan.data_schema, write_options,
                                 base.info.get("column_ids"))
    hints = None
    if plan.mode == "append" and plan.read_version and len(plan.base) and not is_remote(plan.root):
        # appended files start from the encodings of the dataset's latest file (local files
        # only: another footer read from an object store costs more than sampling saves)
        last = plan.base.table.column("path")[len(plan.base) - 1].as_py()
        hints = inherited_hints(join_path(plan.root, last), plan.data_schema, plan.base.info.get("column_ids"))
    WriteOptions.create(plan.data_schema, **write_options)  # bad options raise before anything is written
    clustering = plan.clustering_for(cluster_by, curve, mapping)
    inherited = cluster_by is None and clustering is not None
    txn = uuid.uuid4().hex
    remote = is_remote(plan.root)
    # object stores: data files go straight to their final keys (see rcfmt.dataset.log)
    staging = plan.root if remote else os.path.join(log.staging_root(plan.root), txn)
    writer = FileSetWriter(staging, plan.schema, plan.partitioning, prefix=txn[:16],
                           target_file_rows=target_file_rows, write_options=write_options, clustering=clustering,
                           truncate=truncate, hints=hints)  # (checks its options: raises before anything is made)
    created = [] if remote else _dirs_to_create(staging)
    if not remote:
        os.makedirs(staging)  # (and the staging root: nothing is created before the checks)
    committed = False
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
        committed = True
    finally:
        if not remote:
            log.remove_tree(staging)
            if not committed:
                _remove_if_empty(created[:-1])
    return Dataset(read_committed(plan.root, version, size))  # (the rows it committed: no read)
