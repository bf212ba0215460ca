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
3. **large partitions** are range-split: the sample's keys give ``ceil(rows /
   (0.9 * target_file_rows))`` key ranges (slack for sampling error; a range that is
   still too full becomes equal files); one streaming pass routes every row into a spill
   file of its range (rows whose key equals a range boundary are spread over the
   ranges sharing it, so one frequent key cannot make one huge file); then each spill
   file is read, ordered and written. Memory: one input batch plus one output file.

The new files replace the old ones in one commit (mode "rewrite") against the version
read: concurrent appends are kept, a concurrent rewrite or overwrite of any of the same
files raises :class:`~rcfmt.CommitConflictError` and nothing changes. The data is the
same multiset of rows. Without clustering (none given, none recorded) ``optimize``
compacts: partitions whose rows fit in fewer files are rewritten in their order.
"""
from __future__ import annotations

import math
import os
import uuid
from dataclasses import replace

import numpy as np
import pyarrow as pa

from ..file.reader import RcfmtFile
from ..file.writer import Writer, WriteOptions
from ..layout import METADATA_KEY, ClusteringSpec, fit_bounds
from . import log
from .index import DEFAULT_INDEX_TRUNCATE
from .writer import (DEFAULT_TARGET_FILE_ROWS, FileSetWriter, _positive, clustering_info, clustering_spec, commit)

__all__ = ["optimize", "IN_MEMORY_ROWS"]

#: partitions with at most this many rows are clustered in memory, larger ones range-split
IN_MEMORY_ROWS = 1 << 22
#: rows per block of the spill files (one block per open spill file is buffered)
SPILL_BLOCK_ROWS = 16384
READ_BATCH_ROWS = 1 << 16
#: a range split aims at ranges this full, so that sampling error rarely overfills one
RANGE_FILL = 0.9


def optimize(dataset, cluster_by=None, *, curve: str = "zorder", mapping: str = "rank",
             target_file_rows: int = DEFAULT_TARGET_FILE_ROWS, stats_truncate: int | None = None,
             **write_options):
    """Rewrite ``dataset`` (a :class:`~rcfmt.dataset.Dataset`) clustered by ``cluster_by``
    and commit; return the Dataset at the new version (``dataset`` itself when there was
    nothing to do). See the module docstring; ``cluster_by=None`` uses the clustering
    the dataset records, else compacts. ``write_options``: as for :func:`write_dataset`.
    """
    target_file_rows = _positive("target_file_rows", target_file_rows)
    snap = dataset._snap
    spec = clustering_spec(cluster_by, curve, mapping)
    if spec is None:
        from .writer import recorded_clustering

        spec = recorded_clustering(snap.info)
    if spec is not None:
        missing = [c for c in spec.columns if c not in snap.data_schema.names]
        if missing:
            from ..errors import SchemaError

            raise SchemaError(f"clustering columns {missing} are not data columns of {snap.data_schema.names}")
    truncate = DEFAULT_INDEX_TRUNCATE if stats_truncate is None else stats_truncate
    if stats_truncate is not None:
        write_options["stats_truncate"] = stats_truncate
    WriteOptions.create(snap.data_schema, **write_options)  # bad options raise before any work

    groups = _partition_groups(snap, dataset.root)
    todo = {key: files for key, files in groups.items() if spec is not None or
            math.ceil(sum(r for _, _, r in files) / target_file_rows) < len(files)}
    if not todo:
        return dataset
    read_version = dataset.version or 0
    adopt = snap.table if dataset.version is None else None
    txn = uuid.uuid4().hex
    staging = os.path.join(log.staging_root(dataset.root), txn)
    os.makedirs(staging)
    writer = FileSetWriter(os.path.join(staging, "out"), snap.schema, snap.partitioning, prefix=txn[:16],
                           target_file_rows=target_file_rows, write_options=write_options, truncate=truncate)
    removed = []
    try:
        try:
            for key, files in todo.items():
                _rewrite_partition(writer, key, files, snap.data_schema, spec, target_file_rows,
                                   os.path.join(staging, "spill"))
                removed.extend(rel for rel, _, _ in files)
            written = writer.close()
        except BaseException:
            writer.abort()
            raise
        version = commit(dataset.root, [e for e, _ in written], mode="rewrite", read_version=read_version,
                         data_schema=snap.data_schema, partitioning=snap.partitioning, txn_id=txn,
                         staged=[(p, e.path) for e, p in written], remove=removed,
                         clustering=clustering_info(spec, "partition") if spec is not None else snap.info.get(
                             "clustering"),
                         base_table_unindexed=adopt,
                         operation_info={"operation": "optimize", "rewritten_partitions": len(todo)})
    finally:
        log.remove_tree(staging)
    return type(dataset).open(dataset.root, version=version)


# ------------------------------------------------------------------ planning
def _partition_groups(snap, root: str) -> dict[tuple, list[tuple[str, str, int]]]:
    """partition values -> ``[(relpath, absolute path, rows), ...]`` in index order."""
    groups: dict[tuple, list] = {}
    rows = snap.column_values("num_rows") if len(snap) else []
    for rel, key, n in zip(snap.paths, snap.partition_values(), rows):
        groups.setdefault(tuple(key), []).append((rel, os.path.join(root, *rel.split("/")), int(n)))
    return groups


def _sample(spec: ClusteringSpec, files, total: int) -> pa.Table:
    """A deterministic sample of about ``spec.sample_size`` rows of the clustering
    columns of a partition, rows drawn from each file in proportion to its size."""
    rng = np.random.default_rng(spec.seed)
    pieces = []
    for _, path, n in files:
        take = min(n, math.ceil(spec.sample_size * n / max(total, 1)))
        if not take:
            continue
        with RcfmtFile(path) as f:
            t = f.read(columns=list(spec.columns), use_threads=False)
        idx = np.sort(rng.choice(n, size=take, replace=False)) if take < n else np.arange(n)
        pieces.append(t.take(pa.array(idx)))
    return pa.concat_tables(pieces)


def _with_bounds(spec: ClusteringSpec, table) -> ClusteringSpec:
    """``spec`` with range bounds of every column from ``table`` (for mapping "rank",
    also with curve "sort", whose keys drive the range split)."""
    if spec.mapping != "rank":
        return spec
    bounds = fit_bounds(table, list(spec.columns), num_buckets=spec.num_buckets, sample_size=spec.sample_size,
                        seed=spec.seed, bounds=spec.bounds)
    return replace(spec, bounds=bounds)


def _split_keys(spec: ClusteringSpec, table) -> np.ndarray:
    """A 1-D array ordering rows as ``spec`` does up to ties: the curve key, or for
    "sort" and keys wider than 64 bits the key words as big-endian byte strings."""
    keys = spec.keys(table)
    if keys.ndim == 1:
        return keys
    return np.ascontiguousarray(keys.astype(">u8")).view(f"S{8 * keys.shape[1]}").reshape(len(keys))


def _range_ids(keys: np.ndarray, bounds: np.ndarray, start: int) -> np.ndarray:
    """Range of every key among sorted ``bounds``; keys equal to boundaries shared by
    several ranges are spread over them round-robin (``start``: rows seen before)."""
    lo = np.searchsorted(bounds, keys, side="left")
    hi = np.searchsorted(bounds, keys, side="right")
    span = hi - lo + 1
    tied = np.flatnonzero(span > 1)
    ids = hi.copy()
    if tied.size:
        ids[tied] = lo[tied] + (start + tied) % span[tied]
    return ids


# ------------------------------------------------------------------ rewriting
def _rewrite_partition(writer: FileSetWriter, key: tuple, files, data_schema: pa.Schema,
                       spec: ClusteringSpec | None, target_file_rows: int, spill_dir: str) -> None:
    total = sum(n for _, _, n in files)
    if spec is None:  # compaction: same order, fewer files
        for _, path, _ in files:
            for batch in _batches(path):
                writer.write_partition(key, pa.Table.from_batches([batch]))
        writer.finish_partition(key)
        return
    ranges = math.ceil(total / target_file_rows)
    if total <= IN_MEMORY_ROWS or ranges <= 1:
        table = pa.concat_tables([_read(path) for _, path, _ in files]).combine_chunks()
        fitted = _with_bounds(spec, table)
        writer.metadata = {METADATA_KEY: fitted.to_json(include_bounds=False)}
        writer.write_partition(key, fitted.apply(table))
        writer.finish_partition(key)
        return
    ranges = math.ceil(total / (RANGE_FILL * target_file_rows))
    sample = _sample(spec, files, total)
    fitted = _with_bounds(spec, sample)
    writer.metadata = {METADATA_KEY: fitted.to_json(include_bounds=False)}
    sample_keys = np.sort(_split_keys(fitted, sample))
    bounds = sample_keys[[(len(sample_keys) * i) // ranges for i in range(1, ranges)]]
    os.makedirs(spill_dir, exist_ok=True)
    spills = [os.path.join(spill_dir, f"range-{i:06d}.rcfmt") for i in range(ranges)]
    spill_writers = [Writer(p, data_schema, block_rows=SPILL_BLOCK_ROWS, compression="lz4", dictionary=False,
                            bloom_filter_columns=None, use_threads=False) for p in spills]
    try:
        seen = 0
        for _, path, _ in files:
            for batch in _batches(path):
                ids = _range_ids(_split_keys(fitted, batch), bounds, seen)
                seen += batch.num_rows
                order = np.argsort(ids, kind="stable")
                counts = np.bincount(ids, minlength=ranges)
                sorted_batch = batch.take(pa.array(order))
                offset = 0
                for r in np.flatnonzero(counts):
                    spill_writers[r].write(sorted_batch.slice(offset, int(counts[r])))
                    offset += int(counts[r])
        for w in spill_writers:
            w.close()
    except BaseException:
        for w in spill_writers:
            try:
                w.abort()
            except Exception:
                pass
        raise
    for p in spills:
        table = _read(p)
        os.unlink(p)
        table = fitted.apply(table)
        pieces = math.ceil(table.num_rows / target_file_rows)  # an overfull range: equal files, not [full, tiny]
        for i in range(pieces):
            lo, hi = table.num_rows * i // pieces, table.num_rows * (i + 1) // pieces
            writer.write_partition(key, table.slice(lo, hi - lo))
            writer.finish_partition(key)


def _read(path: str) -> pa.Table:
    with RcfmtFile(path) as f:
        return f.read()


def _batches(path: str):
    with RcfmtFile(path) as f:
        yield from f.iter_batches(READ_BATCH_ROWS)
