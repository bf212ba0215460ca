"""``Dataset.optimize``: rewrite a dataset's files into a clustered layout, atomically.

Clustering per file (``write_dataset(cluster_by=...)``) orders rows inside each file,
but every file still spans the whole value range. ``optimize`` clusters all rows of a
partition together and cuts the result into files, so files, blocks and pages each
cover a small region of the clustering space -- what Delta Lake's ``OPTIMIZE ZORDER
BY`` does. Files never cross partitions. Per partition:

1. **fit**: a deterministic sample of the clustering columns (read file by file, rows
   in proportion to each file's size) gives the range bounds of every column (mapping
   "rank"), so keys agree across files;
2. **small partitions** (at most :data:`IN_MEMORY_ROWS` rows) are read whole, ordered
   and cut into files of ``target_file_rows`` rows;
3. **large partitions** are range-split: the sample gives ``ceil(rows / (0.9 *
   target_file_rows))`` key ranges (slack for sampling error; a range that is still
   too full becomes equal files). A streaming pass routes every row into a spill file
   of its range -- at most :data:`MAX_FANOUT` spill files at once, more ranges take
   another pass over each spill file -- then each range is read, ordered and written.
   Curves route by key (rows whose key equals a boundary shared by several ranges are
   spread over them, so one frequent key cannot make one huge file); "sort" routes by
   exact comparison with boundary rows. Memory: one input batch, the spill buffers
   (:data:`SPILL_BUFFER_ROWS` rows in all) and one range.

Files of one dataset may differ in nullability; rows are cast to the dataset schema.
The new files replace the old ones in one commit (mode "rewrite") against the version
read: concurrent appends are kept, a concurrent rewrite or overwrite of any of the same
files raises :class:`~rcfmt.CommitConflictError` and nothing changes. The data is the
same multiset of rows. Without clustering (none given, none recorded) ``optimize``
compacts: partitions whose rows fit in fewer files are rewritten in their order.

On object storage (S3, GCS) the new files stream straight to their final keys (no version
names them until the commit, a conditional PUT of the index; a failure deletes them),
and spill files go to a local temporary directory.
"""
from __future__ import annotations

import math
import os
import tempfile
import uuid

import numpy as np
import pyarrow as pa

from ..errors import InvalidOptionError, RcfmtError
from ..interop import cdata
from ..schema.arrow_io import take
from ..file.reader import RcfmtFile
from ..file.writer import Writer, WriteOptions
from ..layout import METADATA_KEY, ClusteringSpec, cluster_order
from ..predicate.nnf import columns as expr_columns
from ..predicate.residual import FALSE, TRUE, prepare_filter, residual_of
from ..storage import check_commit_support, is_remote
from . import log
from .evolution import file_renames
from .deletions import load as load_deletions
from .index import DEFAULT_INDEX_TRUNCATE
from .commits import commit
from .scanning import missing_is_corrupt
from .files import (DEFAULT_TARGET_FILE_ROWS, FileSetWriter, check_clustering_columns, clustering_info, clustering_spec,
                    inherited_bitmap_indexes, positive, recorded_clustering)

__all__ = ["optimize", "IN_MEMORY_ROWS", "OPTIMIZE_METADATA_KEY"]

#: file metadata key: the transaction of the optimize that wrote the file
OPTIMIZE_METADATA_KEY = "rcfmt.optimize"
#: partitions with at most this many rows are clustered in memory, larger ones range-split
IN_MEMORY_ROWS = 1 << 22
#: rows buffered over all open spill files (each buffers one block)
SPILL_BUFFER_ROWS = 1 << 20
#: spill files open at once; more ranges are split in several passes
MAX_FANOUT = 256
READ_BATCH_ROWS = 1 << 16
#: a partition with a file missing more than this share of its rows (deletion vectors) is rewritten
DELETED_THRESHOLD = 0.1
#: a range split aims at ranges this full, so that sampling error rarely overfills one
RANGE_FILL = 0.9


def optimize(dataset, cluster_by=None, *, curve: str = "zorder", mapping: str = "rank",
             target_file_rows: int = DEFAULT_TARGET_FILE_ROWS, where=None, stats_truncate: int | None = None,
             force: bool = False, progress=None, deleted_threshold: float = DELETED_THRESHOLD, **write_options):
    """Rewrite ``dataset`` (a :class:`~rcfmt.dataset.Dataset`) clustered by ``cluster_by``
    and commit; return the Dataset at the new version (``dataset`` itself when there was
    nothing to do). See the module docstring; ``cluster_by=None`` uses the clustering
    the dataset records, else compacts. A partition whose files all come from one
    earlier optimize with the same columns, curve and mapping (and no file above
    ``target_file_rows``) is left alone unless ``force``. ``where``: a filter on
    partition columns only; just the partitions it selects are rewritten (as Delta's
    ``OPTIMIZE ... WHERE``). ``write_options``: as for :func:`write_dataset`.
    ``progress``: a bar of rows rewritten on stderr (None: on a terminal; True, False).
    ``deleted_threshold``: a partition holding a file whose deletion vector deletes more
    than this share of its rows is rewritten whatever its layout (the rewritten files
    hold only the rows left, and no vector); rewritten files lose their vectors anyway.
    """
    from ..runtime.progress import progress_bar, wanted

    wanted(progress)
    if isinstance(deleted_threshold, bool) or not isinstance(deleted_threshold, (int, float)) or not (
            0 <= deleted_threshold <= 1):
        raise InvalidOptionError(f"deleted_threshold must be a share of rows in [0, 1], got {deleted_threshold!r}")
    target_file_rows = positive("target_file_rows", target_file_rows)
    if (curve, mapping) != ("zorder", "rank"):
        from ..layout.curves import check_curve

        check_curve(curve, mapping)
    snap = dataset.snapshot
    spec = clustering_spec(cluster_by, curve, mapping)
    if spec is None:
        spec = recorded_clustering(snap.info)
    if spec is not None:
        check_clustering_columns(spec, snap.data_schema)
    truncate = DEFAULT_INDEX_TRUNCATE if stats_truncate is None else stats_truncate
    if stats_truncate is not None:
        write_options["stats_truncate"] = stats_truncate
    WriteOptions.create(snap.data_schema, **write_options)  # bad options raise before any work

    groups = _partition_groups(snap, dataset.root)
    if where is not None:
        groups = _selected_partitions(groups, where, snap)
    deleted = _deleted_rows(snap, dataset.root)
    shares = {path: len(rows) / (len(rows) + n) for files in groups.values() for _, path, n in files
              if (rows := deleted.get(path)) is not None}
    # files written under an older schema (columns added, dropped or widened since) are
    # rewritten in the current one, whatever their layout
    if spec is None:
        todo = {key: files for key, files in groups.items()
                if math.ceil(sum(r for _, _, r in files) / target_file_rows) < len(files)
                or _worn(files, shares, deleted_threshold) or _stale(files, snap.data_schema)}
    else:
        todo = {key: files for key, files in groups.items()
                if force or not _already_optimized(files, spec, target_file_rows)
                or _worn(files, shares, deleted_threshold) or _stale(files, snap.data_schema)}
    if not todo:
        return dataset
    # the rewritten files keep the indexes they had
    inherited_bitmap_indexes([p for files in todo.values() for _, p, _ in files], snap.data_schema, write_options,
                             snap.info.get("column_ids"))
    read_version = dataset.version or 0
    adopt = snap.table if dataset.version is None else None
    txn = uuid.uuid4().hex
    remote = is_remote(dataset.root)
    if remote:  # object stores: files go straight to their final keys; spill files stay local
        check_commit_support(dataset.root)
        staging = tempfile.mkdtemp(prefix="rcfmt-optimize-")
        out = dataset.root
    else:
        staging = os.path.join(log.staging_root(dataset.root), txn)
        os.makedirs(staging)
        out = os.path.join(staging, "out")
    writer = FileSetWriter(out, snap.schema, snap.partitioning, prefix=txn[:16],
                           target_file_rows=target_file_rows, write_options=write_options, truncate=truncate,
                           metadata={OPTIMIZE_METADATA_KEY: txn})
    removed = []
    try:
        try:
            with progress_bar(progress, total=sum(n for files in todo.values() for _, _, n in files),
                              desc="optimize") as step:
                for key, files in todo.items():
                    _rewrite_partition(writer, key, files, snap.data_schema, spec, target_file_rows,
                                       os.path.join(staging, "spill"), snap.info.get("column_ids"), deleted)
                    removed.extend(rel for rel, _, _ in files)
                    step(sum(n for _, _, n in files))
            written = writer.close()
        except BaseException:
            writer.abort()
            raise
        version = commit(dataset.root, [e for e, _ in written], mode="rewrite", read_version=read_version,
                         data_schema=snap.data_schema, partitioning=snap.partitioning, txn_id=txn,
                         staged=[(p, e.path) for e, p in written], remove=removed,
                         clustering=clustering_info(spec, "partition") if spec is not None else snap.info.get(
                             "clustering"),
                         base_table_unindexed=adopt, read_base=snap if dataset.version is not None else None,
                         operation_info={"operation": "optimize", "rewritten_partitions": len(todo)},
                         checkpoint=True)
    finally:
        log.remove_tree(staging)
    return type(dataset).open(dataset.root, version=version)


# ------------------------------------------------------------------ planning
def _partition_groups(snap, root: str) -> dict[tuple, list[tuple[str, str, int]]]:
    """partition values -> ``[(relpath, absolute path, rows left), ...]`` in index order."""
    groups: dict[tuple, list] = {}
    rows = snap.live_rows() if len(snap) else []
    for rel, key, n in zip(snap.paths, snap.partition_values(), rows):
        groups.setdefault(tuple(key), []).append((rel, os.path.join(root, *rel.split("/")), int(n)))
    return groups


def _deleted_rows(snap, root: str) -> dict:
    """``{absolute path: deleted row positions}`` of the files with a deletion vector."""
    out, checked = {}, {}
    for rel, vector, n in zip(snap.paths, snap.vectors(), snap.column_values("num_rows") if len(snap) else []):
        if vector is not None:
            out[os.path.join(root, *rel.split("/"))] = load_deletions(vector.resolved(root, checked), int(n))
    return out


def _worn(files, shares: dict, threshold: float) -> bool:
    """Whether a file of the partition has more than ``threshold`` of its rows deleted."""
    return any(shares.get(path, 0.0) > threshold for _, path, _ in files)


def _selected_partitions(groups: dict, where, snap) -> dict:
    """The partitions whose values satisfy ``where`` (a filter on partition columns)."""

    nnf = prepare_filter(where, snap.schema)
    others = sorted(set(expr_columns(nnf)) - set(snap.partitioning.names)) if nnf is not None else []
    if others:
        raise InvalidOptionError(f"optimize(where=...) may only use partition columns "
                                 f"{list(snap.partitioning.names)}; it names {others}")
    out = {}
    for key, files in groups.items():
        verdict = residual_of(nnf, dict(zip(snap.partitioning.names, key)), snap.schema)
        if verdict is not TRUE and verdict is not FALSE:  # cannot happen: only partition columns
            raise InvalidOptionError(f"optimize(where=...) could not be decided on partition {key}")
        if verdict is TRUE:
            out[key] = files
    return out


def _stale(files, data_schema: pa.Schema) -> bool:
    """Whether a file of the partition holds other columns or types than the dataset's
    data columns (footers only; nullability and string offset widths aside)."""
    want = [(f.name, str(storage_type(f.type))) for f in data_schema]
    for _, path, _ in files:
        with missing_is_corrupt(path), RcfmtFile(path) as f:
            if [(g.name, str(storage_type(g.type))) for g in f.schema] != want:
                return True
    return False


def storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with 32- and 64-bit string/binary offsets alike."""
    return {pa.large_string(): pa.string(), pa.large_binary(): pa.binary()}.get(t, t)


def _already_optimized(files, spec: ClusteringSpec, target_file_rows: int) -> bool:
    """Whether every file of a partition was written by one optimize with ``spec``'s
    columns, curve and mapping (footers only). Optimize and overwrite replace whole
    partitions, so files sharing one optimize transaction are all of its output."""
    if any(n > target_file_rows for _, _, n in files):
        return False
    txns = set()
    for _, path, _ in files:
        with missing_is_corrupt(path), RcfmtFile(path) as f:
            meta = f.metadata
        txns.add(meta.get(OPTIMIZE_METADATA_KEY))
        try:
            done = ClusteringSpec.from_metadata(meta)
        except RcfmtError:
            return False
        if done is None or (done.columns, done.curve, done.mapping) != (spec.columns, spec.curve, spec.mapping):
            return False
    return len(txns) == 1 and None not in txns


def _sample(spec: ClusteringSpec, files, total: int, schema: pa.Schema, ids: dict | None = None) -> pa.Table:
    """A deterministic sample of about ``spec.sample_size`` rows of the clustering
    columns of a partition, rows drawn from each file in proportion to its size
    (``ids``: the dataset's column ids, for files written before a rename)."""
    rng = np.random.default_rng(spec.seed)
    columns = pa.schema([schema.field(c) for c in spec.columns])
    pieces = []
    for _, path, n in files:
        drawn = min(n, math.ceil(spec.sample_size * n / max(total, 1)))
        if not drawn:
            continue
        with missing_is_corrupt(path), RcfmtFile(path) as f:
            renames = file_renames(f.schema.names, ids, schema.names)
            held = [renames.get(c, c) for c in spec.columns if renames.get(c, c) in f.schema.names]
            t = _as_schema(f.read(columns=held, use_threads=False), columns, renames)  # (NULL: added since)
        idx = np.sort(rng.choice(n, size=drawn, replace=False)) if drawn < n else np.arange(n)
        pieces.append(take(t, pa.array(idx)))
    return pa.concat_tables(pieces) if pieces else columns.empty_table()


class _Router:
    """Assigns rows to ``ranges`` key ranges cut at quantiles of a sample.

    Curves: ranges of the curve key (keys wider than 64 bits compare as big-endian
    bytes); rows whose key equals a boundary shared by several ranges are spread over
    them round-robin. "sort": exact lexicographic comparison with boundary rows of the
    sorted sample (keys there are coarse -- a string's first 8 bytes -- and would let
    every file span the whole range); a row equal to a boundary goes above it."""

    def __init__(self, spec: ClusteringSpec, sample: pa.Table, ranges: int):
        self.spec = spec
        self.ranges = ranges
        cut = [(sample.num_rows * i) // ranges for i in range(1, ranges)]
        if spec.curve == "sort":
            ordered = take(sample, pa.array(cluster_order(sample, list(spec.columns), "sort")))
            self.bound_rows = take(ordered, pa.array(cut, pa.int64()))
        else:
            self.bound_keys = np.sort(_split_keys(spec, sample))[cut]

    def ids(self, batch, seen: int) -> np.ndarray:
        """Range of every row of ``batch`` (``seen``: rows routed before it)."""
        if self.spec.curve == "sort":
            return self._exact_ids(batch)
        keys = _split_keys(self.spec, batch)
        lo = np.searchsorted(self.bound_keys, keys, side="left")
        hi = np.searchsorted(self.bound_keys, keys, side="right")
        span = hi - lo + 1
        tied = np.flatnonzero(span > 1)
        ids = hi.astype(np.int64)
        if tied.size:
            ids[tied] = lo[tied] + (seen + tied) % span[tied]
        return ids

    def _exact_ids(self, batch) -> np.ndarray:
        b = self.bound_rows.num_rows
        rows = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        rows = rows.select(list(self.spec.columns)).cast(self.bound_rows.schema)
        combined = pa.concat_tables([self.bound_rows, rows])
        order = cluster_order(combined, list(self.spec.columns), "sort")  # stable: boundaries first on ties
        is_bound = order < b
        below = np.cumsum(is_bound)
        ids = np.empty(batch.num_rows, np.int64)
        ids[order[~is_bound] - b] = below[~is_bound]
        return ids


def _split_keys(spec: ClusteringSpec, table) -> np.ndarray:
    """A 1-D array ordering rows as the curve key of ``spec`` does."""
    keys = spec.keys(table)
    if keys.ndim == 1:
        return keys
    return np.ascontiguousarray(keys.astype(">u8")).view(f"S{8 * keys.shape[1]}").reshape(len(keys))


# ------------------------------------------------------------------ rewriting
def _rewrite_partition(writer: FileSetWriter, key: tuple, files, data_schema: pa.Schema,
                       spec: ClusteringSpec | None, target_file_rows: int, spill_dir: str,
                       ids: dict | None = None, deleted: dict | None = None) -> None:
    """Rewrite the ``files`` of partition ``key`` in the dataset's current schema
    (``ids``: its column ids, for files written before a rename), without the rows
    ``deleted`` (``{path: deleted row positions}``) deletes."""
    deleted = deleted or {}
    total = sum(n for _, _, n in files)
    if spec is None:  # compaction: same order, fewer files
        for _, path, _ in files:
            for batch in _batches(path, data_schema, ids, deleted.get(path)):
                writer.write_partition(key, pa.Table.from_batches([batch]))
        writer.finish_partition(key)
        return
    if total <= IN_MEMORY_ROWS or total <= target_file_rows:
        table = pa.concat_tables([_read(path, data_schema, ids, deleted.get(path)) for _, path, _ in files]
                                 ).combine_chunks()
        fitted = spec.fit(table)
        writer.metadata[METADATA_KEY] = fitted.to_json(include_bounds=False)
        writer.write_partition(key, fitted.apply(table))
        writer.finish_partition(key)
        return
    ranges = math.ceil(total / (RANGE_FILL * target_file_rows))
    sample = _sample(spec, files, total, data_schema, ids)
    fitted = spec.fit(sample)
    writer.metadata[METADATA_KEY] = fitted.to_json(include_bounds=False)
    router = _Router(fitted, sample, ranges)

    def emit(table: pa.Table) -> None:
        table = fitted.apply(table)
        pieces = math.ceil(table.num_rows / target_file_rows)  # an overfull range: equal files, not [full, tiny]
        for i in range(pieces):
            lo, hi = table.num_rows * i // pieces, table.num_rows * (i + 1) // pieces
            writer.write_partition(key, table.slice(lo, hi - lo))
            writer.finish_partition(key)

    sources = [path for _, path, _ in files]
    _split(lambda: (b for p in sources for b in _batches(p, data_schema, ids, deleted.get(p))), router, 0, ranges, data_schema,
           spill_dir, emit)


def _split(batches, router: _Router, lo: int, hi: int, schema: pa.Schema, spill_dir: str, emit) -> None:
    """Route the rows of ``batches()`` (all in ranges ``[lo, hi)``) into at most
    :data:`MAX_FANOUT` spill files of consecutive ranges, then ``emit`` each range's rows
    in range order (recursing while a spill file still holds several ranges)."""
    width = math.ceil((hi - lo) / MAX_FANOUT)  # ranges per spill file
    groups = math.ceil((hi - lo) / width)
    os.makedirs(spill_dir, exist_ok=True)
    paths = [os.path.join(spill_dir, f"{uuid.uuid4().hex[:12]}-{g:04d}.rcfmt") for g in range(groups)]
    writers: list[Writer] = []
    block_rows = max(4096, min(1 << 16, SPILL_BUFFER_ROWS // groups))
    try:
        for p in paths:  # scratch files: cheapest encoding, fast codec
            writers.append(Writer(p, schema, block_rows=block_rows, encoding="plain", dictionary=False,
                                  compression="lz4", bloom_filter_columns=None, use_threads=False))
        seen = 0
        for batch in batches():
            # tie spreading in an earlier pass may have used other ranges of the same key
            ids = np.clip(router.ids(batch, seen), lo, hi - 1)
            seen += batch.num_rows
            group = (ids - lo) // width
            order = np.argsort(group, kind="stable")
            counts = np.bincount(group, minlength=groups)
            offset = 0
            for g in np.flatnonzero(counts):  # copies: a spill buffer holds only its own rows
                writers[g].write(take(batch, pa.array(order[offset : offset + counts[g]])))
                offset += int(counts[g])
        for w in writers:
            w.close()
    except BaseException:
        for w in writers:
            try:
                w.abort()
            except Exception:
                pass
        for p in paths:
            _unlink(p)
        raise
    try:
        for g, p in enumerate(paths):
            g_lo = lo + g * width
            if width == 1:
                table = _read(p, schema)
                _unlink(p)
                if table.num_rows:
                    emit(table)
            else:
                _split(lambda p=p: _batches(p, schema), router, g_lo, min(hi, g_lo + width), schema, spill_dir,
                       emit)
                _unlink(p)
    finally:
        for p in paths:
            _unlink(p)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _read(path: str, schema: pa.Schema, ids: dict | None = None, deleted: np.ndarray | None = None) -> pa.Table:
    """A file's rows as ``schema`` (files of one dataset may differ in nullability,
    predate added columns, hold narrower types or, with the dataset's column ``ids``,
    hold columns under the names they had before a rename: rcfmt.dataset.evolution),
    without the rows ``deleted``."""
    with missing_is_corrupt(path), RcfmtFile(path) as f:
        renames = file_renames(f.schema.names, ids, schema.names)
        rows = f.scan(use_threads=False, _deleted=deleted).read()
        return pa.Table.from_batches([_as_schema(b, schema, renames) for b in rows.to_batches()], schema=schema)


def _batches(path: str, schema: pa.Schema, ids: dict | None = None, deleted: np.ndarray | None = None):
    with missing_is_corrupt(path), RcfmtFile(path) as f:
        renames = file_renames(f.schema.names, ids, schema.names)
        for batch in f.scan(use_threads=False, _deleted=deleted).iter_batches(READ_BATCH_ROWS):
            yield _as_schema(batch, schema, renames)


def _as_schema(batch, schema: pa.Schema, renames: dict | None = None):
    """``batch`` (or table) as ``schema``: ``renames`` (``{column: name in the batch}``)
    names columns held under an earlier name; columns it lacks are NULL."""
    storage = cdata.storage_schema(schema)
    if storage is not schema or cdata.has_intervals(batch.schema):  # (as their storage: rcfmt.interop.cdata)
        return cdata.relabel(_as_schema(cdata.to_storage(batch), storage, renames), schema)
    n = batch.num_rows
    where = {f.name: batch.schema.get_field_index((renames or {}).get(f.name, f.name)) for f in schema}
    arrays = [batch.column(where[f.name]).cast(f.type) if where[f.name] >= 0 else pa.nulls(n, f.type)
              for f in schema]
    if isinstance(batch, pa.Table):
        return pa.Table.from_arrays(arrays, schema=schema)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
