"""Reading datasets: :class:`Dataset` (one version of a directory of rcfmt files),
:class:`Fragment` (one file, or a range of its blocks) and :class:`DatasetScan`.

A scan prunes files with :func:`rcfmt.scan.prune.may_match` on statistics from the
stats index (one unit per file; partition columns are constant units), so file pruning
has exactly the semantics of block pruning. Partition columns in the filter are then
replaced by their (constant) truth value per file, and the rest of the filter goes to
the file's own skipping scan (blocks, pages, late materialization).
"""
from __future__ import annotations

import contextlib

import json
import operator
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields as dc_fields
from typing import Iterator, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CorruptFileError, InvalidOptionError, SchemaError, UnsupportedError
from ..storage.fetch import FetchOptions, check_fetch
from ..interop.arrow import export_stream
from ..schema.arrow_io import filter_rows
from ..file.reader import RcfmtFile
from ..scan.nnf import BoundAnd, BoundListContains, columns as expr_columns, fold
from ..scan.bind import arrow_values
from ..scan.arrow_eval import evaluate, selection_mask
from ..scan.prune import may_match
from ..scan.residual import FALSE, TRUE, prepare_filter, residual_of
from ..scan.plan import DatasetPlan
from ..scan.scanner import ScanStats
from ..schema import nested
from ..schema.types import logical_type_from_arrow, same_logical_type
from .evolution import file_renames, renamed_expr, renamed_path, renamed_schema, widens
from ..storage import (COMMIT_SCHEMES, delete_files, is_remote, list_tree, local_path, object_size, remote_kind,
                       scheme_of)
from . import log
from .index import INDEX_METADATA_KEY, Snapshot, check_inside
from .snapshot import DATA_SUFFIXES, check_version_info, discover, load_base, read_latest, read_snapshot

__all__ = ["Dataset", "DatasetScan", "Fragment", "FileInfo", "open_dataset", "scan_fragments", "prune_blocks",
           "read_snapshot", "load_base", "vacuum"]



def _threads() -> int:
    return min(4, os.cpu_count() or 1)


# ------------------------------------------------------------------ snapshots
# ------------------------------------------------------------------ fragments
def open_data_file(path: str, verify_checksums: bool = True, size: int = 0,
                   fetch: FetchOptions | None = None) -> RcfmtFile:
    """A data file the index lists (``size``: its size there, 0 if unknown); one that is
    missing makes the dataset corrupt. Data files are never replaced under their names,
    so on object storage their footers are cached across opens."""
    with missing_is_corrupt(path):
        return RcfmtFile(path, verify_checksums=verify_checksums, size=size or None, immutable=True, fetch=fetch)


@contextlib.contextmanager
def missing_is_corrupt(path: str):
    """A data file found missing (at its open, or at its first read when its footer came
    from the cache) is a CorruptFileError of the dataset."""
    try:
        yield
    except FileNotFoundError:
        raise CorruptFileError("data file listed in the dataset index is missing", path=path) from None


@dataclass(frozen=True)
class Fragment:
    """One data file (or the blocks ``[blocks[0], blocks[1])`` of it) with its partition
    values ``((name, value), ...)``. ``num_rows``, ``size`` and ``num_blocks`` are those
    of the whole file. Picklable; opening it needs only the file."""

    path: str
    partition: tuple = ()
    num_rows: int = 0
    size: int = 0
    num_blocks: int = 0
    blocks: tuple | None = None

    def split(self, pieces: int) -> list["Fragment"]:
        """At most ``pieces`` fragments covering this one's blocks in order."""
        lo, hi = self.blocks if self.blocks is not None else (0, self.num_blocks)
        n = hi - lo
        pieces = max(1, min(pieces, n))
        if pieces == 1:
            return [self]
        cuts = [lo + (n * k) // pieces for k in range(pieces + 1)]
        return [Fragment(self.path, self.partition, self.num_rows, self.size, self.num_blocks, (a, b))
                for a, b in zip(cuts[:-1], cuts[1:])]

    @property
    def estimated_size(self) -> int:
        if self.blocks is None or not self.num_blocks:
            return self.size
        return int(self.size * (self.blocks[1] - self.blocks[0]) / self.num_blocks)


@dataclass(frozen=True)
class FileInfo:
    """A data file of a dataset as the index describes it. ``stats`` maps each data column
    to a dict with ``min``, ``max`` (Python values of the column type; string bounds are
    ``str`` when they are valid UTF-8, else ``bytes``; None when unknown),
    ``null_count``, ``nan_count``, ``min_exact``, ``max_exact``."""

    path: str
    relpath: str
    size: int
    num_rows: int
    num_blocks: int
    partition: dict
    stats: dict


# ------------------------------------------------------------------ scanning
class DatasetScan:
    """A planned scan of fragments of a dataset; ``read()``, ``iter_batches()`` and
    ``stats`` (a :class:`~rcfmt.scan.scanner.ScanStats` summed over the files scanned,
    with ``files_total``/``files_pruned`` of the file pruning). ``fetch``: how reads of
    remote files trade requests for bytes (:class:`~rcfmt.storage.fetch.FetchOptions`)."""

    def __init__(self, schema: pa.Schema, fragments: Sequence[Fragment], columns: Sequence[str] | None = None,
                 filter=None, *, partition_names: Sequence[str] = (), files_total: int | None = None,
                 files_pruned: int = 0, use_threads: bool = True, verify_checksums: bool = True,
                 column_ids: dict | None = None, fetch: FetchOptions | None = None):
        self.schema = schema
        self.fragments = list(fragments)
        self.column_ids = column_ids  # (None: no column was ever renamed)
        if columns is None:
            columns = schema.names
        elif isinstance(columns, str) or not isinstance(columns, Sequence):
            raise InvalidOptionError(f"columns must be a list of column names, got {columns!r}")
        # a name is a field, or a path to a field under structs (its struct is returned pruned)
        projected = nested.project(nested.plan_schema(schema)[0], list(columns)) if columns else []
        self.columns = list(columns)
        self.output_schema = pa.schema([schema.field(n.name) if n.kind == nested.LEAF else n.field
                                        for n in projected])
        self.partition_names = set(partition_names)
        self.nnf = prepare_filter(filter, schema)
        self.use_threads = use_threads
        self.verify_checksums = verify_checksums
        self.fetch = check_fetch(fetch)
        self.stats = ScanStats(files_total=len(self.fragments) + files_pruned if files_total is None else files_total,
                               files_pruned=files_pruned)
        self._data_columns = [c for c in self.columns if c not in self.partition_names]

    # ---------------------------------------------------------------- one fragment
    def _file_scan(self, frag: Fragment, use_threads: bool):
        """(FileScan or None if the fragment cannot match, partition dict, filter left
        to apply after the file scan or None, the file's view of the dataset: the
        schema under the names the file holds the columns by, and ``{dataset column:
        name in the file}`` for those renamed since it was written)."""
        partition = dict(frag.partition)
        residual = residual_of(self.nnf, partition, self.schema)
        if residual is FALSE:
            return None, partition, None, None
        f = open_data_file(frag.path, self.verify_checksums, frag.size, self.fetch)
        try:
            opened = f.requests  # the open's reads (its footer): part of what the scan costs
            _check_against_index(f, frag)
            view = file_view(f, self.schema, self.column_ids)
            schema, renames = view.schema, view.renames
            residual = renamed_expr(residual, renames)
            # columns added to the dataset after this file was written read as NULL
            residual = _without_missing(residual, f, schema)
            if residual is FALSE:
                f.close()
                return None, partition, None, None
            wanted = [renamed_path(c, renames) for c in self._data_columns]
            absent = set(check_types(f, schema, wanted))
            columns = [c for c in wanted if c not in absent]
            pushed, post = None if residual is TRUE else residual, None
            narrower = _narrower_columns(f, schema, pushed)
            if narrower:  # columns widened since the file was written: those leaves are applied after
                pushed, post = _pushable(pushed, narrower), pushed
                columns += [c for c in sorted(expr_columns(post)) if c not in columns]
            scan = f.scan(columns, pushed, use_threads=use_threads,
                          blocks=None if frag.blocks is None else _clamp(frag.blocks, f.num_blocks))
            scan.stats.requests += opened
        except BaseException:
            f.close()
            raise
        return scan, partition, post, view

    def _post_filter(self, batch: pa.RecordBatch, post, schema: pa.Schema) -> pa.RecordBatch:
        """Rows of ``batch`` matching ``post`` (leaves on columns the file holds in a
        narrower type, evaluated on the values widened to the dataset's types;
        ``schema``: the dataset's, under the file's names)."""
        types = nested.filter_schema(schema)
        names = sorted(expr_columns(post))
        table = pa.table({name: _leaf_values(batch, name).cast(types.field(name).type) for name in names})
        return filter_rows(batch, pc.fill_null(evaluate(post, table), False))

    def _assemble(self, batch: pa.RecordBatch, partition: dict, post=None, view: "FileView | None" = None
                  ) -> pa.RecordBatch:
        if post is not None:
            batch = self._post_filter(batch, post, view.schema)
        if view is not None and view.renames:  # back to the dataset's names
            back = {old: new for new, old in view.renames.items()}
            batch = batch.rename_columns([back.get(n, n) for n in batch.schema.names])
        n = batch.num_rows
        arrays = []
        for field in self.output_schema:
            if field.name in self.partition_names:
                value = partition.get(field.name)
                arrays.append(pa.nulls(n, field.type) if value is None else
                              pa.repeat(pa.scalar(value, field.type), n))
            elif batch.schema.get_field_index(field.name) < 0:  # a column the file predates
                arrays.append(pa.nulls(n, field.type))
            else:
                arr = batch.column(batch.schema.get_field_index(field.name))
                if arr.type != field.type:  # a column widened since the file was written
                    arr = arr.cast(field.type)
                arrays.append(arr)
        if not arrays:
            return pa.record_batch([pa.nulls(n)], names=["_"]).select([])
        return pa.RecordBatch.from_arrays(arrays, schema=self.output_schema)

    def _count(self, scan) -> None:
        if scan is None:
            self.stats.files_pruned += 1
            return
        for f in dc_fields(ScanStats):
            if f.name not in ("files_total", "files_pruned"):
                setattr(self.stats, f.name, getattr(self.stats, f.name) + getattr(scan.stats, f.name))

    def _read_fragment(self, frag: Fragment, use_threads: bool):
        scan, partition, post, view = self._file_scan(frag, use_threads)
        if scan is None:
            return None, []
        try:
            with missing_is_corrupt(frag.path):
                table = scan.read()
        finally:
            scan.file.close()
        batches = [self._assemble(b, partition, post, view) for b in table.to_batches()] if table.num_rows else []
        return scan, batches

    def _count_fragment(self, frag: Fragment, use_threads: bool):
        scan, partition, post, view = self._file_scan(frag, use_threads)
        if scan is None:
            return None, 0
        try:
            with missing_is_corrupt(frag.path):
                if post is not None:  # leaves applied after the file scan need the rows
                    n = sum(self._post_filter(b, post, view.schema).num_rows for b in scan.read().to_batches())
                else:
                    n = scan.count()
        finally:
            scan.file.close()
        return scan, n

    # ---------------------------------------------------------------- planning
    def plan(self) -> DatasetPlan:
        """The scan's plan (:class:`~rcfmt.scan.plan.DatasetPlan`): what the dataset's
        index pruned, and the :meth:`~rcfmt.scan.scanner.FileScan.plan` of every file
        left (each file opened for its footer and indexes; no data page is read)."""
        files, skipped = [], []
        for frag in self.fragments:
            scan = self._file_scan(frag, False)[0]
            if scan is None:
                skipped.append(frag.path)
                continue
            try:
                with missing_is_corrupt(frag.path):
                    files.append(scan.plan())
            finally:
                scan.file.close()
        return DatasetPlan(filter=None if self.nnf is None else str(self.nnf), files_total=self.stats.files_total,
                           files_pruned=self.stats.files_pruned, skipped=tuple(skipped), files=tuple(files))

    def explain(self) -> str:
        """The plan as text: files pruned, then per file what :meth:`FileScan.explain` says."""
        return self.plan().explain()

    # ---------------------------------------------------------------- driving
    def count(self) -> int:
        """The number of selected rows, without decoding the projected columns (per
        file :meth:`FileScan.count`: from bitmap indexes where they decide the filter)."""
        results = self._each_fragment(self._count_fragment)
        for scan, _ in results:
            self._count(scan)
        return sum(n for _, n in results)

    def _each_fragment(self, fn) -> list:
        """``fn(fragment, use_threads)`` of every fragment, in order: fragments in
        parallel (each scanned on one thread), or one at a time with threaded scans."""
        frags = self.fragments
        if self.use_threads and len(frags) > 1:
            with ThreadPoolExecutor(_threads()) as pool:
                return list(pool.map(lambda fr: fn(fr, False), frags))
        return [fn(fr, self.use_threads) for fr in frags]

    def read(self) -> pa.Table:
        """Every selected row, as one table (fragments in order)."""
        results = self._each_fragment(self._read_fragment)
        batches = []
        for scan, bs in results:
            self._count(scan)
            batches.extend(bs)
        if not self.columns:
            rows = sum(b.num_rows for b in batches)
            return pa.table({"_": pa.nulls(rows)}).select([])
        return pa.Table.from_batches(batches, schema=self.output_schema)

    def __arrow_c_stream__(self, requested_schema=None):
        """The selected rows as an Arrow C stream (the Arrow PyCapsule interface),
        fragment by fragment: ``polars.DataFrame(scan)``, ``pyarrow.table(scan)``, DuckDB."""
        return export_stream(self.output_schema, self.iter_batches(), requested_schema)

    def iter_batches(self, batch_size: int = 65536) -> Iterator[pa.RecordBatch]:
        """Stream selected rows, fragment by fragment, in batches of at most ``batch_size``."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise InvalidOptionError(f"batch_size must be a positive integer, got {batch_size!r}")
        for frag in self.fragments:  # (each file's blocks decoded ahead on the pool with use_threads)
            scan, partition, post, view = self._file_scan(frag, self.use_threads)
            if scan is None:
                self._count(None)
                continue
            try:
                with missing_is_corrupt(frag.path):
                    for batch in scan.iter_batches(batch_size):
                        yield self._assemble(batch, partition, post, view)
            finally:
                scan.file.close()
                self._count(scan)


def _clamp(blocks: tuple, n: int) -> tuple[int, int]:
    return max(0, min(n, blocks[0])), max(0, min(n, blocks[1]))


def _runs(mask: np.ndarray, lo: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` of the runs of True in ``mask`` (offset by ``lo``)."""
    if not mask.any():
        return []
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    return [(lo + int(a), lo + int(b)) for a, b in zip(edges[::2], edges[1::2])]


class FileView(NamedTuple):
    """A dataset as one of its files holds it: ``schema`` under the names the file holds
    its columns by, and ``renames``, ``{dataset column: name in the file}`` for the
    columns renamed since it was written."""

    schema: pa.Schema
    renames: dict


def file_view(f: RcfmtFile, schema: pa.Schema, column_ids: dict | None) -> FileView:
    """The dataset ``schema`` as file ``f`` holds it (columns found by their stable ids,
    ``column_ids``)."""
    renames = file_renames(f.schema.names, column_ids, schema.names)
    return FileView(renamed_schema(schema, renames) if renames else schema, renames)


def _check_against_index(f: RcfmtFile, frag: Fragment) -> None:
    """The file the index names must be the file it describes: a swapped or truncated
    data file is a CorruptFileError, not rows silently read in its place."""
    if not frag.size and not frag.num_rows:  # entries built from footers at discovery
        return
    size = f.size
    if size != frag.size or f.num_rows != frag.num_rows:
        raise CorruptFileError(f"the dataset index records {frag.num_rows} rows in {frag.size} bytes for this file, "
                               f"it holds {f.num_rows} rows in {size} bytes", path=frag.path)


def _top(schema: pa.Schema, name: str) -> str:
    """The field of ``schema`` that column name ``name`` (maybe a dotted path) is in."""
    if schema.get_field_index(name) >= 0:
        return name
    for f in schema:
        if name.startswith(f.name + "."):
            return f.name
    return name


def check_types(f: RcfmtFile, schema: pa.Schema, columns: Sequence[str]) -> list[str]:
    """The columns of ``columns`` (names or dotted paths) that ``f`` lacks: written
    before they were added to the dataset, they read as NULL. Those it holds must have
    the dataset's type or one it widens (docs/DATASET.md, schema evolution); otherwise
    the file is not the file the index describes: a CorruptFileError naming file and
    column, not an Arrow cast error."""
    missing = []
    for name in columns:
        top = _top(schema, name)
        if schema.get_field_index(top) < 0:
            raise SchemaError(f"unknown column {name!r}; the dataset has {schema.names}")
        if f.schema.get_field_index(top) < 0:
            missing.append(name)
            continue
        want, got = schema.field(top).type, f.schema.field(top).type
        if not widens(got, want):
            raise CorruptFileError(f"data file holds {_type_name(got)} values where the dataset has "
                                   f"{_type_name(want)}", path=f.path, column=top)
    return missing


def _narrower_columns(f: RcfmtFile, schema: pa.Schema, expr) -> set[str]:
    """Columns of ``expr`` that ``f`` holds in a type the dataset has since widened."""
    if expr is None:
        return set()
    wanted = nested.filter_schema(schema)
    out = set()
    for name in expr_columns(expr):
        if wanted.get_field_index(name) < 0:  # a list's elements: nested types do not widen
            continue
        ours, theirs = wanted.field(name).type, f.filter_schema.field(name).type
        if not same_logical_type(logical_type_from_arrow(ours), logical_type_from_arrow(theirs)):
            out.add(name)
    return out


def _pushable(expr, columns: set[str]):
    """The AND-ed parts of ``expr`` that name none of ``columns`` (None if no part)."""
    parts = expr.children if isinstance(expr, BoundAnd) else (expr,)
    keep = [p for p in parts if not (expr_columns(p) & columns)]
    return None if not keep else keep[0] if len(keep) == 1 else BoundAnd.of(*keep)


def _leaf_values(batch: pa.RecordBatch, name: str) -> pa.Array:
    """Column ``name`` of ``batch``, or the leaf at dotted path ``name`` under its
    structs, NULL where a struct on the way is NULL."""
    if batch.schema.get_field_index(name) >= 0:
        return batch.column(batch.schema.get_field_index(name))
    top = _top(batch.schema, name)
    return nested.under_structs(batch.column(batch.schema.get_field_index(top)), name[len(top) + 1:].split("."))


def _type_name(t: pa.DataType) -> str:
    if nested.is_nested(t):
        return str(t)
    lt = logical_type_from_arrow(t)
    return str(t) if lt.annotated else lt.name  # (a duration, not its int64 storage)


def _without_missing(residual, f: RcfmtFile, schema: pa.Schema):
    """``residual`` for file ``f``: leaves on columns the file lacks (added later) are
    decided now, as on a column of NULLs (``TRUE``/``FALSE`` when nothing is left)."""
    if residual is TRUE or residual is FALSE or residual is None:
        return residual
    missing = check_types(f, schema, sorted(expr_columns(residual)))
    if not missing:
        return residual
    return residual_of(residual, {name: None for name in missing}, nested.filter_schema(schema))


def _value_sets_keep(nnf, snap: Snapshot, candidates: np.ndarray) -> np.ndarray:
    """Bool per file: may the file match, asked of the distinct values the index knows
    of its columns (docs/DATASET.md §3.2): each leaf is evaluated on those values (and a
    NULL / NaN when the file holds one); a file is kept where the tree may be TRUE.
    Files (among ``candidates``) or columns without known values may match."""
    n = len(candidates)
    files = np.flatnonzero(candidates)
    types = snap.stats_schema
    known = {}
    for name in expr_columns(nnf):
        if types.get_field_index(name) >= 0:
            sets = snap.value_sets(name)
            if any(v is not None for v in sets):
                known[name] = sets
    if not known:
        return np.ones(n, bool)

    def leaf_fn(leaf) -> np.ndarray:
        out = np.ones(n, bool)
        name = getattr(leaf, "column", None) and leaf.column.name
        if isinstance(leaf, BoundListContains) or name not in known:
            return out
        sets, stats = known[name], snap.stats_arrays(name)
        ref = leaf.column
        for i in files:
            if sets[i] is None:
                continue
            parts = [_values_array(ref, sets[i])]  # (from buffers: no pandas import on a first query)
            if stats.null_count[i]:
                parts.append(pa.nulls(1, ref.type))
            if stats.nan_count[i]:
                parts.append(pa.Array.from_buffers(ref.type, 1, [None, pa.py_buffer(
                    np.array([np.nan], ref.ltype.numpy_dtype))]))
            arr = pa.concat_arrays(parts) if len(parts) > 1 else parts[0]
            out[i] = bool(selection_mask(leaf, pa.table({name: arr})).any())
        return out

    return fold(nnf, leaf_fn, np.logical_and, np.logical_or)


def _values_array(ref, values) -> pa.Array:
    """Stats-domain ``values`` as an Arrow array of the column's type, from buffers."""
    if ref.ltype.name == "decimal128":
        data = b"".join(int(v).to_bytes(16, "little", signed=True) for v in values)
        return pa.Array.from_buffers(ref.type, len(values), [None, pa.py_buffer(data)])
    return arrow_values(ref, values)


def prune_blocks(fragments: Sequence[Fragment], schema: pa.Schema, filter, *, partition_names=(),
                 verify_checksums: bool = True, column_ids: dict | None = None,
                 fetch: FetchOptions | None = None) -> tuple[list[Fragment], list[Fragment], int]:
    """Refine fragments with their files' block statistics (reads each footer).

    Returns ``(kept, dropped, blocks_total)``: ``kept`` holds one fragment per run of
    blocks that may match ``filter`` (block statistics only; bloom filters, pages and
    rows are left to the scan), ``dropped`` the complementary block ranges. For
    planners that want as many tasks as there are surviving blocks, not files.
    ``column_ids``: :attr:`Dataset.column_ids` (files written before a rename); ``fetch``:
    the tail a remote open reads (:class:`~rcfmt.storage.fetch.FetchOptions`)."""
    nnf = prepare_filter(filter, schema)
    if nnf is None:
        return list(fragments), [], sum(
            (f.blocks[1] - f.blocks[0]) if f.blocks else f.num_blocks for f in fragments)
    kept, dropped, total = [], [], 0
    for frag in fragments:
        lo, hi = frag.blocks if frag.blocks is not None else (0, frag.num_blocks)
        total += hi - lo
        residual = residual_of(nnf, dict(frag.partition), schema)
        if residual is FALSE:
            dropped.append(frag)
            continue
        if residual is TRUE:
            kept.append(frag)
            continue
        with open_data_file(frag.path, verify_checksums, frag.size, fetch) as f:
            n = f.num_blocks
            if n != frag.num_blocks:
                raise CorruptFileError(f"the index says {frag.num_blocks} blocks, the footer {n}", path=frag.path)
            view = file_view(f, schema, column_ids)
            residual = _without_missing(renamed_expr(residual, view.renames), f, view.schema)
            if residual is TRUE or residual is FALSE:
                mask = np.full(hi - lo, residual is TRUE)
            else:
                names = sorted(expr_columns(residual))
                mask = may_match(residual, {c: f.block_stats(c) for c in names}, n)[lo:hi]
        for a, b in _runs(mask, lo):
            kept.append(Fragment(frag.path, frag.partition, frag.num_rows, frag.size, frag.num_blocks, (a, b)))
        for a, b in _runs(~mask, lo):
            dropped.append(Fragment(frag.path, frag.partition, frag.num_rows, frag.size, frag.num_blocks, (a, b)))
    return kept, dropped, total


def scan_fragments(fragments: Sequence[Fragment], schema: pa.Schema, columns: Sequence[str] | None = None,
                   filter=None, *, partition_names: Sequence[str] = (), files_total: int | None = None,
                   files_pruned: int = 0, use_threads: bool = True, verify_checksums: bool = True,
                   column_ids: dict | None = None, fetch: FetchOptions | None = None) -> DatasetScan:
    """A :class:`DatasetScan` of fragments planned elsewhere (e.g. on a Spark driver):
    needs only the files, not the index. ``schema`` is the dataset schema (data columns,
    then partition columns ``partition_names``); ``column_ids`` its
    :attr:`Dataset.column_ids` (so files written before a rename are read right)."""
    return DatasetScan(schema, fragments, columns, filter, partition_names=partition_names,
                       files_total=files_total, files_pruned=files_pruned, use_threads=use_threads,
                       verify_checksums=verify_checksums, column_ids=column_ids, fetch=fetch)


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
            return cls._open_remote(path.rstrip("/"), version)
        path = os.path.abspath(local_path(path))
        if os.path.isfile(path):
            if version is not None:
                raise InvalidOptionError("version= applies to dataset directories, not files")
            return cls(discover(os.path.dirname(path), single_file=path), path)
        if not os.path.isdir(path):
            raise FileNotFoundError(f"no dataset or rcfmt file at {path!r}")
        if version is not None:
            return cls(read_snapshot(path, version, size=_version_size(path, version)))
        snap = read_latest(path)
        return cls(snap if snap is not None else discover(path))

    @classmethod
    def _open_remote(cls, uri: str, version: int | None) -> "Dataset":
        """A dataset (with its index) or a single file at an object-store URI."""
        if version is not None:  # (time travel: one lookup of that version)
            return cls(read_snapshot(uri, version, size=_version_size(uri, version)))
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
        return int(self._snap.column_values("num_rows").sum()) if len(self._snap) else 0

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
            keep &= _value_sets_keep(nnf, self._snap, keep)
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
        return [Fragment(check_inside(self.root, os.path.join(self.root, *paths[i].split("/"))),
                         tuple(zip(names, parts[i])), int(rows[i]), int(sizes[i]), int(blocks[i]))
                for i in np.flatnonzero(keep)]

    def scan(self, columns: Sequence[str] | None = None, filter=None, *, use_threads: bool = True,
             verify_checksums: bool = True, fetch: FetchOptions | None = None) -> DatasetScan:
        """Plan a scan: files are pruned now (from the index), blocks, pages and rows as it
        runs. ``fetch``: how reads of remote files trade requests for bytes
        (:class:`~rcfmt.storage.fetch.FetchOptions`)."""
        fragments = self.get_fragments(filter)
        return DatasetScan(self.schema, fragments, columns, filter, partition_names=self.partitioning.names,
                           files_total=self.num_files, files_pruned=self.num_files - len(fragments),
                           use_threads=use_threads, verify_checksums=verify_checksums, column_ids=self.column_ids,
                           fetch=fetch)

    def read(self, columns: Sequence[str] | None = None, filter=None, *, use_threads: bool = True,
             fetch: FetchOptions | None = None) -> pa.Table:
        """The selected ``columns`` of the rows matching ``filter``, files in index order."""
        return self.scan(columns, filter, use_threads=use_threads, fetch=fetch).read()

    to_table = read

    def iter_batches(self, batch_size: int = 65536, columns: Sequence[str] | None = None,
                     filter=None, *, fetch: FetchOptions | None = None) -> Iterator[pa.RecordBatch]:
        return self.scan(columns, filter, use_threads=False, fetch=fetch).iter_batches(batch_size)

    def __arrow_c_stream__(self, requested_schema=None):
        """Every row of this version as an Arrow C stream (the Arrow PyCapsule
        interface), file by file."""
        return self.scan(use_threads=False).__arrow_c_stream__(requested_schema)

    def count_rows(self, filter=None) -> int:
        """Rows matching ``filter`` (all rows: from the index, reading no file)."""
        if filter is None:
            return self.num_rows
        return self.scan([], filter).count()

    # ---------------------------------------------------------------- maintenance
    def optimize(self, cluster_by=None, *, curve: str = "zorder", mapping: str = "rank",
                 target_file_rows: int | None = None, where=None, force: bool = False, progress=None,
                 **write_options) -> "Dataset":
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
        of rows rewritten on stderr (None: on a terminal; True, False)."""
        from .optimize import optimize
        from .files import DEFAULT_TARGET_FILE_ROWS

        return optimize(self, cluster_by, curve=curve, mapping=mapping,
                        target_file_rows=DEFAULT_TARGET_FILE_ROWS if target_file_rows is None else target_file_rows,
                        where=where, force=force, progress=progress, **write_options)

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

        add = [f if isinstance(f, pa.Field) else pa.field(*f) for f in (add or [])]
        drop = [drop] if isinstance(drop, str) else list(drop or [])
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
        version = commit(self.root, [], mode="evolve", read_version=self.version or 0, data_schema=new,
                         partitioning=self.partitioning, txn_id=f"evolve-{uuid.uuid4().hex}", renames=rename,
                         operation_info={"added_columns": [f.name for f in add], "dropped_columns_now": drop,
                                         **({"renamed_columns_now": rename} if rename else {})})
        return Dataset.open(self.root, version=version)

    def history(self) -> list[dict]:
        """Commit metadata of every version still present, oldest first."""
        out = []
        for v in log.list_versions(self.root):
            path = log.version_path(self.root, v)
            with RcfmtFile(path, immutable=True) as f:
                raw = f.metadata.get(INDEX_METADATA_KEY)
            try:
                info = json.loads(raw)
                if not isinstance(info, dict):
                    raise ValueError("not an object")
            except (TypeError, ValueError) as exc:
                raise CorruptFileError(f"index version without valid dataset metadata ({exc})", path=path) from None
            check_version_info(info, v, path)
            info.pop("schema", None)
            out.append(info)
        return out

    def vacuum(self, retention_seconds: float = 3600.0, *, dry_run: bool = False) -> list[str]:
        """Remove what no reader can need any more; see :func:`vacuum`."""
        return vacuum(self.root, retention_seconds, dry_run=dry_run)


def _version_size(root: str, version: int) -> int:
    """Bytes of the index of ``version`` (one stat or request), InvalidOptionError
    naming the versions present (a listing) if there is no such version."""
    try:
        version = operator.index(version)
    except TypeError:
        raise InvalidOptionError(f"version must be an integer, got {version!r}") from None
    size = object_size(log.version_path(root, version)) if version > 0 else None
    if size is None:
        versions = log.list_versions(root)
        raise InvalidOptionError(f"{root!r} has no version {version}; versions: {versions[:3]}...{versions[-3:]}")
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


def _kept_versions(versions: list[int], old) -> list[int]:
    """The versions vacuum keeps: from the oldest one within the retention (``old(v)``
    false) or the latest, every later one. Removing only the oldest versions keeps the
    versions present contiguous, which the version hint's walk relies on
    (:func:`rcfmt.dataset.log.find_latest`)."""
    for i, v in enumerate(versions):
        if v == versions[-1] or not old(v):
            return versions[i:]
    return []


def _refresh_hint(root: str, keep: list[int]) -> None:
    """Before vacuum deletes versions, the hint is made to name the latest version when
    it is missing, unreadable or names an older one (perhaps one vacuum removes: readers
    would then fall back to a listing). A hint naming a later version (a commit landed
    meanwhile) stays."""
    if not keep:
        return
    hint = log.read_hint(root)
    if hint is None or hint[0] < keep[-1]:
        log.write_hint(root, keep[-1], object_size(log.version_path(root, keep[-1])))


def vacuum(root, retention_seconds: float = 3600.0, *, dry_run: bool = False, progress=None) -> list[str]:
    """Delete files of the dataset at ``root`` that no reader can need: index versions
    older than ``retention_seconds`` (never the latest), data files referenced by no
    remaining version and older than the retention, staging/tmp leftovers of failed or
    crashed writers and scan claims of the Spark reader (``_scans``) older than the
    retention. Before the first commit, the files a crashed first writer published are
    removed too (files put there by other means stay). Returns the paths removed.

    On object storage (a dataset rcfmt wrote to ``s3://``) the same rules apply to
    objects, by their modification time: old index versions, and data objects no
    remaining version references (an overwritten or crashed writer's); writers there
    stage nothing. A prefix without any committed version is left alone. ``progress``:
    a bar of files deleted on stderr (None: on a terminal; True, False)."""
    from ..progress import wanted

    wanted(progress)
    if is_remote(root):
        return _vacuum_remote(root.rstrip("/"), float(retention_seconds), dry_run, progress)
    root = os.path.abspath(local_path(root))
    versions = log.list_versions(root)
    if not versions and not os.path.isdir(log.meta_dir(root)):
        return []  # a plain directory of files: nothing of a writer's to clean up
    now = time.time()
    cutoff = now - float(retention_seconds)

    def old(p):
        try:
            return os.lstat(p).st_mtime < cutoff
        except FileNotFoundError:
            return False

    keep = _kept_versions(versions, lambda v: old(log.version_path(root, v)))
    referenced = set()
    for v in keep:
        referenced.update(read_snapshot(root, v).paths)
    if not versions:  # no commit yet: only what a writer left (plain files stay, as read)
        referenced.update(discover(root).paths)
    removed = []
    for v in versions:
        if v not in keep:
            removed.append(log.version_path(root, v))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(("_", "."))]
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames:
            if name.startswith(("_", ".")) or not name.endswith(DATA_SUFFIXES):
                continue
            rel = name if rel_dir == "." else f"{rel_dir.replace(os.sep, '/')}/{name}"
            p = os.path.join(dirpath, name)
            if rel not in referenced and old(p):
                removed.append(p)
    for area in (log.staging_root(root), log.tmp_dir(root), os.path.join(root, log.META_DIR, "_scans")):
        if os.path.isdir(area):
            for name in os.listdir(area):
                p = os.path.join(area, name)
                if old(p):
                    removed.append(p)
    for name in (os.listdir(log.meta_dir(root)) if os.path.isdir(log.meta_dir(root)) else ()):
        if log.is_hint_leftover(name) and old(os.path.join(log.meta_dir(root), name)):
            removed.append(os.path.join(log.meta_dir(root), name))  # a hint write a crash interrupted
    if not dry_run:
        from ..progress import progress_bar

        _refresh_hint(root, keep)

        with progress_bar(progress, total=len(removed), unit="files", desc="vacuum") as step:
            for p in removed:
                if os.path.isdir(p):
                    log.remove_tree(p)
                else:
                    try:
                        os.unlink(p)
                    except FileNotFoundError:
                        pass
                step(1)
    return removed


def _vacuum_remote(root: str, retention_seconds: float, dry_run: bool, progress=None) -> list[str]:
    scheme = scheme_of(root)
    if scheme not in COMMIT_SCHEMES:  # refused before any request, as dataset writes there are
        raise UnsupportedError(f"{root!r}: vacuum on {scheme}:// is not supported yet (rcfmt writes datasets to "
                               f"{' and '.join(s + '://' for s in COMMIT_SCHEMES)} only); nothing was deleted")
    versions = log.list_versions(root)
    if not versions:
        return []  # nothing committed: no object here is known to be a writer's
    cutoff = time.time() - retention_seconds
    objects = dict(list_tree(root))
    meta = f"{log.META_DIR}/"

    def old(rel: str) -> bool:
        mtime = objects.get(rel)
        return mtime is not None and mtime < cutoff

    version_rel = {v: f"{meta}{os.path.basename(log.version_path(root, v))}" for v in versions}
    keep = _kept_versions(versions, lambda v: old(version_rel[v]))
    referenced = set()
    for v in keep:
        referenced.update(read_snapshot(root, v).paths)
    removed = [version_rel[v] for v in versions if v not in keep]
    for rel in sorted(objects):
        parts = rel.split("/")
        if any(p.startswith(("_", ".")) for p in parts) or not rel.endswith(DATA_SUFFIXES):
            continue
        if rel not in referenced and old(rel):
            removed.append(rel)
    paths = [f"{root}/{rel}" for rel in removed]
    if not dry_run:
        from ..progress import progress_bar

        _refresh_hint(root, keep)

        with progress_bar(progress, total=len(paths), unit="files", desc="vacuum") as step:
            for start in range(0, len(paths), 100):  # a bar step per batch of deletes
                delete_files(paths[start : start + 100])
                step(len(paths[start : start + 100]))
    return paths

