"""Reading datasets: :class:`Dataset` (one version of a directory of rcfmt files), its
maintenance (optimize, evolve, vacuum) and history. Its scans are
:mod:`rcfmt.dataset.scanning` (:class:`DatasetScan`, :class:`Fragment`) and its vacuum
:mod:`rcfmt.dataset.vacuuming`, whose names stay importable from here.
"""
from __future__ import annotations

import operator
import os
import uuid
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError, InvalidOptionError, SchemaError, UnsupportedError
from ..runtime.options import flag, names as option_names
from ..storage.fetch import FetchOptions
from ..predicate.nnf import columns as expr_columns
from ..predicate.prune import may_match
from ..predicate.residual import prepare_filter
from ..storage import is_remote, local_path, object_size, remote_kind
from ..storage.paths import dataset_uri
from . import log
from .index import Snapshot, check_inside
from .snapshot import discover, load_base, read_chain_start, read_latest, read_snapshot, read_version_info
from .scanning import DatasetScan, FileInfo, Fragment, prune_blocks, scan_fragments, value_sets_keep
from .vacuuming import vacuum

__all__ = ["Dataset", "DatasetScan", "Fragment", "FileInfo", "open_dataset", "scan_fragments", "prune_blocks",
           "read_snapshot", "load_base", "vacuum"]



# ------------------------------------------------------------------ the dataset
class Dataset:
    """One version of a dataset (immutable: later commits are seen by :meth:`refresh`).

    Attributes: ``root``, ``version`` (None for a directory without index or a single
    file), ``schema`` (data columns, then partition columns), ``partitioning``,
    ``num_rows``, ``num_files``, ``info`` (commit metadata of this version)."""

    def __init__(self, snapshot: Snapshot, opened: str | None = None):
        self._snap = snapshot
        self._opened = opened or snapshot.root
        self.root = snapshot.root
        self.version = snapshot.version
        self.schema = snapshot.schema
        self.partitioning = snapshot.partitioning
        self.info = dict(snapshot.info)

    @property
    def snapshot(self) -> Snapshot:
        """The index version this dataset reads (its rows of files, statistics loaded on
        demand): what modules that plan and commit changes work from."""
        return self._snap

    @property
    def column_ids(self) -> dict | None:
        """``{name: id}`` of every name a data column has had since a column was first
        renamed (None before: every file holds its columns under the current names).
        Pass it to :func:`scan_fragments` and :func:`prune_blocks` with fragments
        planned elsewhere."""
        ids = self.info.get("column_ids")
        return dict(ids) if ids is not None else None

    @classmethod
    def open(cls, path, *, version: int | None = None) -> "Dataset":
        if is_remote(path):
            return cls._open_remote(dataset_uri(path), version)
        path = os.path.abspath(local_path(path))
        if os.path.isfile(path):
            if version is not None:
                raise InvalidOptionError("version= applies to dataset directories, not files")
            return cls(discover(os.path.dirname(path), single_file=path), path)
        if not os.path.isdir(path):
            raise FileNotFoundError(f"no dataset or rcfmt file at {path!r}")
        if version is not None:
            return cls(_read_version(path, version))
        snap = read_latest(path)
        return cls(snap if snap is not None else discover(path))

    @classmethod
    def _open_remote(cls, uri: str, version: int | None) -> "Dataset":
        """A dataset (with its index) or a single file at an object-store URI."""
        if version is not None:  # (time travel: one lookup of that version)
            return cls(_read_version(uri, version))
        else:
            snap = read_latest(uri)  # O(1) requests: the version hint, confirmed (rcfmt.dataset.log.find_latest)
            if snap is not None:
                return cls(snap)
        sizes = log.version_sizes(uri)  # nothing committed (or no such version): what is there?
        if not sizes:
            kind = remote_kind(uri)
            if kind == "file":
                if version is not None:
                    raise InvalidOptionError("version= applies to dataset directories, not files")
                return cls(discover(os.path.dirname(uri), single_file=uri), uri)
            if kind is None:
                raise FileNotFoundError(f"no dataset or rcfmt file at {uri!r}")
            raise UnsupportedError(f"{uri!r} has no dataset index: on object storage rcfmt reads datasets that have "
                                   f"one (written by rcfmt), not plain directories of files")
        versions = sorted(sizes)
        if version is not None and version not in sizes:
            raise InvalidOptionError(f"{uri!r} has no version {version}; versions: {versions[:3]}...{versions[-3:]}")
        chosen = versions[-1] if version is None else version
        return cls(read_snapshot(uri, chosen, size=sizes[chosen]))

    def refresh(self) -> "Dataset":
        """The latest version of this dataset (or a new discovery of a plain directory)."""
        return Dataset.open(self._opened)

    def __repr__(self) -> str:
        v = "no index" if self.version is None else f"version {self.version}"
        parts = f", partitioned by {list(self.partitioning.names)}" if self.partitioning else ""
        return f"<rcfmt dataset {self.root!r} ({v}): {self.num_files} files, {self.num_rows} rows{parts}>"

    # ---------------------------------------------------------------- properties
    @property
    def partition_by(self) -> list[str]:
        return list(self.partitioning.names)

    @property
    def num_files(self) -> int:
        return len(self._snap)

    @property
    def num_rows(self) -> int:
        """Rows of this version (deleted rows not counted; from the index)."""
        return int(self._snap.live_rows().sum()) if len(self._snap) else 0

    @property
    def num_deleted_rows(self) -> int:
        """Rows of this version's files that its deletion vectors delete."""
        return int(self._snap.deleted_counts().sum()) if len(self._snap) else 0

    @property
    def files(self) -> list[FileInfo]:
        """Every data file with its partition values and statistics (from the index)."""
        snap = self._snap
        snap.load_stats(snap.stats_schema.names)
        t = snap.table
        out = []
        parts = snap.partition_values()
        cols = {name: _pylist(t.column(name)) for name in t.schema.names if not pa.types.is_list(t.schema.field(name).type)}
        for i, rel in enumerate(cols["path"]):
            stats = {}
            for c in snap.stats_schema.names:
                lo, hi = cols[f"{c}.min"][i], cols[f"{c}.max"][i]
                if pa.types.is_string(snap.stats_schema.field(c).type) or pa.types.is_large_string(
                        snap.stats_schema.field(c).type):
                    lo, hi = _maybe_text(lo), _maybe_text(hi)
                stats[c] = {"min": lo, "max": hi, "null_count": cols[f"{c}.null_count"][i],
                            "nan_count": cols[f"{c}.nan_count"][i], "min_exact": cols[f"{c}.min_exact"][i],
                            "max_exact": cols[f"{c}.max_exact"][i]}
            out.append(FileInfo(os.path.join(self.root, *rel.split("/")), rel, cols["size"][i], cols["num_rows"][i],
                                cols["num_blocks"][i], dict(zip(snap.partitioning.names, parts[i])), stats))
        return out

    def stats_arrays(self, column: str):
        """Statistics of ``column`` with one unit per file (what file pruning sees)."""
        known = [*self._snap.stats_schema.names, *self.partitioning.names]
        if column not in known:
            raise SchemaError(f"unknown column {column!r}; the dataset has statistics of {known}")
        return self._snap.stats_arrays(column)

    # ---------------------------------------------------------------- pruning and scanning
    def prune(self, filter) -> np.ndarray:
        """Bool per file: may the file hold a row matching ``filter``? (index only)."""
        nnf = prepare_filter(filter, self.schema)
        n = len(self._snap)
        if nnf is None:
            return np.ones(n, bool)
        known = {*self._snap.stats_schema.names, *self.partitioning.names}
        names = sorted(c for c in expr_columns(nnf) if c in known)  # (no index stats of list elements)
        keep = may_match(nnf, {c: self._snap.stats_arrays(c) for c in names}, n)
        if keep.any():
            keep &= value_sets_keep(nnf, self._snap, keep)
        return keep

    def get_fragments(self, filter=None) -> list[Fragment]:
        """The files that may hold rows matching ``filter``, as fragments (index only)."""
        keep = self.prune(filter)
        snap = self._snap
        paths = snap.paths
        rows = snap.column_values("num_rows")
        sizes = snap.column_values("size")
        blocks = snap.column_values("num_blocks")
        parts = snap.partition_values()
        names = snap.partitioning.names
        live = snap.live_rows()
        first = np.cumsum(live) - live  # each file's first row in the version (files in index order)
        vectors = snap.vectors()
        real_root = None if is_remote(self.root) else os.path.realpath(self.root)
        checked: dict = {}  # (deletion files: a commit's vectors share one)
        return [Fragment(check_inside(self.root, os.path.join(self.root, *paths[i].split("/")), real_root),
                         tuple(zip(names, parts[i])), int(rows[i]), int(sizes[i]), int(blocks[i]), None,
                         int(first[i]), None if vectors[i] is None else vectors[i].resolved(self.root, checked))
                for i in np.flatnonzero(keep)]

    def scan(self, columns: Sequence[str] | None = None, filter=None, *, use_threads: bool = True,
             verify_checksums: bool = True, fetch: FetchOptions | None = None,
             read_dictionary: Sequence[str] | None = None, with_row_position: bool | str = False) -> DatasetScan:
        """Plan a scan: files are pruned now (from the index), blocks, pages and rows as it
        runs. ``fetch``: how reads of remote files trade requests for bytes
        (:class:`~rcfmt.storage.fetch.FetchOptions`); ``read_dictionary``: string or binary
        columns to return as ``pyarrow.DictionaryArray`` (int32 indices; a dictionary
        chunk's codes are kept as they are); ``with_row_position``: each row's position
        in this version (files in index order, as :meth:`read` returns them) as a last
        int64 column ``_row_position`` (or of the name given instead of True), which
        :meth:`take` reads back."""
        fragments = self.get_fragments(filter)
        return DatasetScan(self.schema, fragments, columns, filter, partition_names=self.partitioning.names,
                           files_total=self.num_files, files_pruned=self.num_files - len(fragments),
                           use_threads=use_threads, verify_checksums=verify_checksums, column_ids=self.column_ids,
                           fetch=fetch, read_dictionary=read_dictionary, with_row_position=with_row_position)

    def read(self, columns: Sequence[str] | None = None, filter=None, *, use_threads: bool = True,
             fetch: FetchOptions | None = None, with_row_position: bool | str = False) -> pa.Table:
        """The selected ``columns`` of the rows matching ``filter``, files in index order
        (``with_row_position``: and each row's position in this version, as :meth:`scan`)."""
        return self.scan(columns, filter, use_threads=use_threads, fetch=fetch,
                         with_row_position=with_row_position).read()

    to_table = read

    def take(self, indices, columns: Sequence[str] | None = None, *, use_threads: bool = True,
             fetch: FetchOptions | None = None) -> pa.Table:
        """The rows at positions ``indices`` of this version (0-based, in the order
        :meth:`read` returns the rows: files in index order), in the order given --
        unsorted and repeated positions allowed, across files, partitions and evolved
        schemas. Positions are checked before anything is read, as
        :meth:`RcfmtFile.take <rcfmt.file.reader.RcfmtFile.take>` checks them (against
        :attr:`num_rows`); only the files, blocks and pages holding a wanted row are read."""
        from ..scan.positions import by_unit, check_positions, reorder
        from .deletions import file_positions

        positions = check_positions(indices, self.num_rows)
        fragments = self.get_fragments()
        wanted = by_unit(positions.rows, [f.live_rows for f in fragments])  # (deleted rows have no position)
        chosen = [fragments[i] for i in sorted(wanted)]
        scan = DatasetScan(self.schema, chosen, columns, None, partition_names=self.partitioning.names,
                           files_total=self.num_files, files_pruned=self.num_files - len(chosen),
                           use_threads=use_threads, column_ids=self.column_ids, fetch=fetch,
                           rows={fragments[i].path: file_positions(rows, fragments[i].deleted_rows())
                                 for i, rows in wanted.items()})
        return reorder(scan.read(), positions)

    def iter_batches(self, batch_size: int = 65536, columns: Sequence[str] | None = None,
                     filter=None, *, fetch: FetchOptions | None = None,
                     with_row_position: bool | str = False) -> Iterator[pa.RecordBatch]:
        return self.scan(columns, filter, use_threads=False, fetch=fetch,
                         with_row_position=with_row_position).iter_batches(batch_size)

    def __arrow_c_stream__(self, requested_schema=None):
        """Every row of this version as an Arrow C stream (the Arrow PyCapsule
        interface), file by file."""
        return self.scan(use_threads=False).__arrow_c_stream__(requested_schema)

    def count_rows(self, filter=None) -> int:
        """Rows matching ``filter`` (all rows: from the index, reading no file)."""
        if filter is None:
            return self.num_rows
        return self.scan([], filter).count()

    # ---------------------------------------------------------------- row-level changes
    def delete(self, filter) -> "Dataset":
        """Delete the rows matching ``filter`` in one commit; returns the new version
        (this Dataset when no row matches). No file is rewritten: the matching rows,
        found with every skipping level (the stats index, block statistics, bloom
        filters, bitmap indexes, the page index), enter their files' deletion vectors
        (docs/DATASET.md §3.4); a file whose every row is deleted leaves the index. A
        concurrent commit that deleted or rewrote the same files makes the delete run
        again on the latest version (:data:`rcfmt.dataset.changes.MAX_ATTEMPTS` times,
        then :class:`CommitConflictError`)."""
        from .changes import delete

        return delete(self, filter)

    def update(self, filter, set: dict) -> "Dataset":
        """Set the columns of ``set`` (``{column: value}``, each value a Python or Arrow
        scalar of the column's type, None for NULL) in the rows matching ``filter``, in
        one commit (merge-on-read: the rows are deleted by deletion vectors and written
        again, changed, to new files, whose statistics enter the index); returns the
        new version. An unknown column or a value of another type is a
        :class:`SchemaError` before anything is written."""
        from .changes import update

        return update(self, filter, set)

    def merge(self, source, on, when_matched: str | None = "update",
              when_not_matched: str | None = "insert") -> "Dataset":
        """Upsert ``source`` (a table, RecordBatchReader, pandas or Polars frame, any
        ``__arrow_c_stream__``) by the key columns ``on``, in one commit; returns the
        new version. A target row whose keys equal a source row's is matched:
        ``when_matched`` "update" replaces it by the source row (columns the source
        lacks keep the target's values), "delete" deletes it, None leaves it. Source
        rows matching none are inserted with ``when_not_matched="insert"`` (columns the
        source lacks NULL). Keys follow SQL equality: a NULL key matches nothing. The
        target's rows are found by skipping on the keys (an ``isin`` filter of the
        source's keys), not by reading the dataset. A source key present twice is an
        :class:`InvalidDataError`, a key or column the dataset lacks, or a value its
        type cannot hold, a :class:`SchemaError`, before anything is written."""
        from .changes import merge

        return merge(self, source, on, when_matched, when_not_matched)

    # ---------------------------------------------------------------- maintenance
    def optimize(self, cluster_by=None, *, curve: str = "zorder", mapping: str = "rank",
                 target_file_rows: int | None = None, where=None, force: bool = False, progress=None,
                 deleted_threshold: float | None = None, **write_options) -> "Dataset":
        """Rewrite the files of each partition into one clustered layout and commit it
        atomically against this version; returns the new version (see
        :mod:`rcfmt.dataset.optimize`). ``cluster_by``: column names (default: the
        clustering this version records; without one, small files are compacted);
        ``curve``: "zorder", "hilbert" or "sort"; ``mapping``: "rank" or "direct";
        ``target_file_rows``: rows per file at most; ``where``: a filter on partition
        columns selecting the partitions to rewrite; ``force``: rewrite partitions an
        earlier optimize already clustered the same way (skipped by default);
        ``write_options``: as for :func:`rcfmt.write_dataset`. The rows stay the same
        multiset. Returns this Dataset when there is nothing to do. ``progress``: a bar
        of rows rewritten on stderr (None: on a terminal; True, False).
        ``deleted_threshold``: a partition with a file whose deletion vector deletes
        more than this share of its rows (default 0.1) is rewritten without them
        (rewritten files never keep a vector)."""
        from .optimize import DELETED_THRESHOLD, optimize
        from .files import DEFAULT_TARGET_FILE_ROWS

        return optimize(self, cluster_by, curve=curve, mapping=mapping,
                        target_file_rows=DEFAULT_TARGET_FILE_ROWS if target_file_rows is None else target_file_rows,
                        where=where, force=flag(force, "force"), progress=progress,
                        deleted_threshold=DELETED_THRESHOLD if deleted_threshold is None else deleted_threshold,
                        **write_options)

    def evolve(self, add=None, drop=None, rename=None) -> "Dataset":
        """Change the data columns without rewriting a file, committed against this
        version (:class:`CommitConflictError` if another commit came first); returns
        the new version.

        ``add``: pyarrow fields (or ``(name, type)`` pairs) appended to the schema,
        nullable; the files read them as NULL. ``drop``: names of data columns no
        longer seen. ``rename``: ``{old name: new name}`` of data columns (top level),
        which keep their place, type and values: each column has a stable id
        (:attr:`column_ids`), so files written before find it under the old name.
        Dropped and renamed-away names stay in the files until ``optimize`` rewrites
        them, so such a name cannot be used again: appends, adds and renames naming
        it are refused (``dropped_columns``)."""
        from ..schema.tables import storage_schema
        from .commits import commit
        from .evolution import check_names

        if self.version is None:
            raise UnsupportedError(f"evolve needs a dataset with an index (written by rcfmt.write_dataset); "
                                   f"{self.root!r} has none (append to it once to create one)")
        if add is not None and not isinstance(add, pa.Field) and (
                isinstance(add, (str, bytes, dict)) or not hasattr(add, "__iter__")):
            raise InvalidOptionError(f"add must be a pyarrow.Field or a list (a schema) of them, got {add!r}")
        add = [_field_to_add(f) for f in ([add] if isinstance(add, pa.Field) else (add or []))]
        drop = option_names(drop, "drop") if drop is not None else []
        if rename is not None and not isinstance(rename, dict):
            raise InvalidOptionError(f"rename must be a dict of old to new column names, got {rename!r}")
        rename = dict(rename or {})
        schema = self._snap.data_schema
        tombstones = set(self.info.get("dropped_columns", []))
        taken = set(schema.names) | set(self.partitioning.names) | tombstones | set(self.column_ids or ())
        for name in drop:
            if name in self.partitioning.names:
                raise SchemaError(f"cannot drop partition column {name!r}")
            if name not in schema.names:
                raise SchemaError(f"cannot drop {name!r}: not a data column of {schema.names}")
        for old, new in rename.items():
            if old in self.partitioning.names:
                raise SchemaError(f"cannot rename partition column {old!r}: its values are in the file paths")
            if old not in schema.names:
                raise SchemaError(f"cannot rename {old!r}: not a data column of {schema.names}")
            if old in drop:
                raise SchemaError(f"cannot both drop and rename {old!r}")
            if not isinstance(new, str) or not new:
                raise SchemaError(f"cannot rename {old!r} to {new!r}: a column name is a non-empty string")
            if new in taken or list(rename.values()).count(new) > 1 or new in {f.name for f in add}:
                retired = new in tombstones or new in (self.column_ids or ()) and new not in schema.names
                why = "was dropped or renamed and its values may remain in files" if retired else "exists"
                raise SchemaError(f"cannot rename {old!r} to {new!r}: a column named {new!r} {why}")
        for f in add:
            if f.name in taken or [g.name for g in add].count(f.name) > 1 or f.name in rename.values():
                why = ("was dropped or renamed and its values may remain in files"
                       if f.name in tombstones or f.name in (self.column_ids or ()) else "exists")
                raise SchemaError(f"cannot add column {f.name!r}: it {why}")
        added, _ = storage_schema(pa.schema([f.with_nullable(True) for f in add]))
        kept = [f.with_name(rename.get(f.name, f.name)) for f in schema if f.name not in drop]
        new = pa.schema(kept + list(added))
        if not add and not drop and not rename:
            return self
        if not len(new):  # (no data column: a file of none holds no row, so rows would be lost)
            raise SchemaError(f"cannot drop every data column of {self.root!r}: a dataset keeps at least one (an "
                              f"overwrite replaces its columns)")
        check_names(pa.schema(list(new) + [pa.field(n, t) for n, t in zip(self.partitioning.names,
                                                                           self.partitioning.types)]),
                    "after evolve")
        version = commit(self.root, [], mode="evolve", read_version=self.version, data_schema=new,
                         partitioning=self.partitioning, txn_id=f"evolve-{uuid.uuid4().hex}", renames=rename,
                         operation_info={"added_columns": [f.name for f in add], "dropped_columns_now": drop,
                                         **({"renamed_columns_now": rename} if rename else {})})
        return Dataset.open(self.root, version=version)

    def checkpoint(self) -> "Dataset":
        """Commit a version that holds the complete index (a checkpoint, docs/DATASET.md
        §4.2) and changes nothing else; return the dataset at it. Readers of it and of the
        versions after it need no older version file. Writers make checkpoints on their
        own as a chain of changes grows; ``optimize`` always does."""
        if self.version is None:
            raise InvalidOptionError(f"{self.root!r} has no index to checkpoint; write it with rcfmt.write_dataset")
        from .commits import commit

        snap = self._snap
        version = commit(self.root, [], mode="append", read_version=self.version, data_schema=snap.data_schema,
                         partitioning=snap.partitioning, txn_id=f"checkpoint-{uuid.uuid4().hex}",
                         operation_info={"operation": "checkpoint"}, checkpoint=True, read_base=snap)
        return Dataset.open(self.root, version=version)

    def history(self) -> list[dict]:
        """Commit metadata of every version still present, oldest first."""
        out = []
        for v in log.list_versions(self.root):
            info = read_version_info(self.root, v)
            if info is None:  # (vacuumed since the listing)
                continue
            info.pop("schema", None)
            out.append(info)
        return out

    def vacuum(self, retention_seconds: float = 3600.0, *, dry_run: bool = False,
               enforce_retention_duration: bool = True) -> list[str]:
        """Remove what no reader can need any more; see :func:`vacuum`."""
        return vacuum(self.root, retention_seconds, dry_run=dry_run,
                      enforce_retention_duration=enforce_retention_duration)


def _field_to_add(f) -> pa.Field:
    """A field ``Dataset.evolve(add=...)`` was given: a pyarrow field or a ``(name, type)`` pair."""
    if isinstance(f, pa.Field):
        return f
    if isinstance(f, (tuple, list)) and len(f) == 2 and isinstance(f[0], str) and isinstance(f[1], pa.DataType):
        return pa.field(f[0], f[1])
    raise SchemaError(f"evolve(add=...) takes pyarrow fields or (name, pyarrow type) pairs, got {f!r}")


def _read_version(root: str, version: int) -> Snapshot:
    """Version ``version`` of the dataset at ``root`` (time travel); InvalidOptionError
    naming the versions present if there is none, also when a vacuum removes it between
    the lookup and the read."""
    size = _version_size(root, version)
    try:
        return read_snapshot(root, version, size=size)
    except (FileNotFoundError, CorruptFileError):
        if log.version_exists(root, version) and not _chain_vacuumed(root, version):
            raise
        versions = log.list_versions(root)  # (a vacuum removed it, or is removing it oldest first)
        shown = versions if len(versions) <= 6 else f"{versions[:3]}...{versions[-3:]}"
        raise InvalidOptionError(f"{root!r} has no version {version} any more (a vacuum removed it meanwhile); "
                                 f"versions: {shown}") from None


def _chain_vacuumed(root: str, version: int) -> bool:
    """Whether the checkpoint changes version ``version`` is read from is gone below the
    oldest version left, older than the checkpoint the latest version is read from: a
    vacuum removing the oldest versions first is on its way to it (a checkpoint missing
    between versions present, or one the latest needs, is damage)."""
    start = read_chain_start(root, version)
    if start is None:
        return True
    versions = log.list_versions(root)
    if start == version or not versions or start >= versions[0] or log.version_exists(root, start):
        return False
    return start < (read_chain_start(root, versions[-1]) or versions[-1])  # (the latest's: no vacuum removes it)


def _version_size(root: str, version: int) -> int:
    """Bytes of the index of ``version`` (one stat or request), InvalidOptionError
    naming the versions present (a listing) if there is no such version."""
    try:
        if isinstance(version, bool):  # (True is no version 1)
            raise TypeError
        version = operator.index(version)
    except TypeError:
        raise InvalidOptionError(f"version must be an integer, got {version!r}") from None
    size = object_size(log.version_path(root, version)) if version > 0 else None
    if size is None:
        versions = log.list_versions(root)
        shown = versions if len(versions) <= 6 else f"{versions[:3]}...{versions[-3:]}"
        raise InvalidOptionError(f"{root!r} has no version {version}; versions: {shown}")
    return size


def _pylist(column) -> list:
    """Python values; dates/timestamps outside Python's range become numpy datetime64."""
    try:
        return column.to_pylist()
    except (OverflowError, ValueError):
        t = column.type
        unit = "D" if pa.types.is_date32(t) else t.unit
        ints = column.cast(pa.int32() if pa.types.is_date32(t) else pa.int64()).to_pylist()
        return [None if v is None else np.datetime64(v, unit) for v in ints]


def _maybe_text(v):
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            return v
    return v


def open_dataset(path, *, version: int | None = None) -> Dataset:
    """Open the dataset at ``path``: a directory with an index (latest version, or
    ``version``), a plain directory of rcfmt files (Hive partitions inferred, footers
    read now) or a single rcfmt file."""
    return Dataset.open(path, version=version)
