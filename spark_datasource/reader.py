"""Reading: planning on the driver from the stats index, scanning on executors.

Planning (driver-side Python worker, re-run on every action): open the dataset (the
latest index version, read once), prune files with the pushed filters from the index
alone; when few files survive (``planningFooters``), read their footers (and the bloom
filters and bitmap indexes of the blocks these keep) and keep only the block ranges that
may match; split large files into block ranges and pack the
fragments into partitions of about ``maxPartitionBytes`` (at least ``minPartitions``
of them when there is enough data). Scanning (executors): each partition scans its fragments with the pushed
filter -- block pruning from footers, page pruning from the page index, late
materialization -- and yields Arrow batches converted to exactly what Spark expects.

Scan statistics: with ``.option("statsDir", dir)`` the planner writes
``plan-<id>-....json`` (files total / pruned, its timings, the pickled sizes of the reader
and the partitions) and every task ``task-<id>-....json`` (its ScanStats, its timings);
:func:`read_scan_stats` sums them (:mod:`spark_datasource.timeline`: the records' timings).
"""
from __future__ import annotations

import glob
import json
import math
import os
import time
import uuid

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from rcfmt.runtime.records import replace
from rcfmt.schema.nested import bind_schema

from .compat import SCAN_SCOPED_READ_INFO
from .filters import translate_all
from .options import ReadOptions, with_store_settings
from .timeline import process_info, write_record
from .types import BatchConverter, spark_arrow_schema, to_spark_type

__all__ = ["RcfmtReader", "RcfmtPushdownReader", "RcfmtInputPartition", "plan_partitions", "read_scan_stats",
           "count_fragments", "live_block_rows"]

#: bytes a fragment "costs" beyond its size when packing partitions (opening, footer)
OPEN_COST = 1 << 20


class RcfmtInputPartition(InputPartition):
    """Fragments (files or block ranges of files) scanned by one Spark task, and the
    fragments the index pruned for this plan's filter (``pruned``): read only when the
    plan is executed by a query that did not plan it (see :mod:`spark_datasource.source`).
    ``rows``: a relation of no column without a filter -- the rows this task yields, counted
    by planning from the index (no fragment then)."""

    def __init__(self, index: int, fragments: list, pruned: list | None = None, rows: int | None = None):
        super().__init__(index)
        self.fragments = fragments
        self.pruned = pruned or []
        self.rows = rows

    def __repr__(self):
        if self.rows is not None:
            return f"RcfmtInputPartition({self.value}, {self.rows} rows from the index)"
        return f"RcfmtInputPartition({self.value}, {len(self.fragments)} fragments, {len(self.pruned)} pruned)"


def split_rows(rows: int, batch_rows: int, min_partitions: int) -> list[int]:
    """``rows`` (a count from metadata) shared by tasks as evenly as can be: one per
    ``batch_rows`` rows, at most ``min_partitions`` (Spark takes in every row, ~100-200 ns
    each, so the tasks run that in parallel); none for no row."""
    n = min(min_partitions, -(-rows // max(1, batch_rows)))
    return [rows * (k + 1) // n - rows * k // n for k in range(n)]


def plan_partitions(fragments: list, max_bytes: int, min_partitions: int) -> list[list]:
    """Group ``fragments`` (in order) into partitions, the way Spark packs files: every
    fragment costs its size plus :data:`OPEN_COST`; the target per partition is
    ``min(max_bytes, max(OPEN_COST, total cost / min_partitions))``; files larger than
    the target are first split into block ranges."""
    if not fragments:
        return []
    total = sum(f.estimated_size + OPEN_COST for f in fragments)
    target = min(max_bytes, max(OPEN_COST, math.ceil(total / max(1, min_partitions))))
    pieces = []
    for f in fragments:
        size = f.estimated_size
        if size > target and f.num_blocks > 1:
            pieces.extend(f.split(math.ceil(size / target)))
        else:
            pieces.append(f)
    groups, current, current_bytes = [], [], 0
    for p in pieces:
        cost = p.estimated_size + OPEN_COST
        if current and current_bytes + cost > target:
            groups.append(current)
            current, current_bytes = [], 0
        current.append(p)
        current_bytes += cost
    if current:
        groups.append(current)
    return groups


def spread(pruned: list, groups: list[list], min_groups: int) -> list[list]:
    """Distribute ``pruned`` fragments over ``len(groups)`` lists (new lists, up to
    ``min_groups``, when there are no groups), balancing their sizes."""
    if not pruned:
        return [[] for _ in groups]
    n = len(groups) or max(1, min(min_groups, len(pruned)))
    out: list[list] = [[] for _ in range(n)]
    sizes = [0] * n
    for f in sorted(pruned, key=lambda f: -f.estimated_size):
        k = sizes.index(min(sizes))
        out[k].append(f)
        sizes[k] += f.estimated_size + OPEN_COST
    return out


def read_scan_stats(stats_dir: str):
    """Scan statistics written with ``.option("statsDir", stats_dir)``: a
    :class:`rcfmt.ScanStats` summed over every plan of which at least one task ran
    (files_total/files_pruned from the driver's planning, the rest from the tasks).
    Use a fresh directory per query. None if no task wrote statistics."""
    from rcfmt import ScanStats

    plans = {}
    for p in glob.glob(os.path.join(stats_dir, "plan-*.json")):
        with open(p) as fh:
            plan = json.load(fh)
        plans[plan["plan_id"]] = plan
    tasks: dict[str, list] = {}
    for p in glob.glob(os.path.join(stats_dir, "task-*.json")):
        with open(p) as fh:
            task = json.load(fh)
        tasks.setdefault(task["plan_id"], []).append(task)
    if not tasks:
        return None
    out = ScanStats()
    for plan_id, ts in tasks.items():
        plan = plans.get(plan_id, {})
        out.files_total += plan.get("files_total", 0)
        out.files_pruned += plan.get("files_pruned", 0)
        out.blocks_total += plan.get("blocks_pruned_planning", 0)  # blocks no task was given
        out.blocks_pruned_stats += plan.get("blocks_pruned_planning", 0)
        counted = (plan.get("count") or {}).get("stats") or {}
        for key, value in counted.items():  # a count made by planning (its tasks report the rows)
            if key not in ("files_total", "files_pruned", "rows_total", "rows_selected"):
                setattr(out, key, getattr(out, key) + value)
        for t in ts:
            for key, value in t["stats"].items():
                if key not in ("files_total", "files_pruned"):
                    setattr(out, key, getattr(out, key) + value)
    return out


def _resolve_columns(spark_schema: StructType, dataset_schema: pa.Schema) -> list[str]:
    """Dataset column names for the fields Spark asks for (user-supplied schema: exact
    names first, then a unique case-insensitive match), with type checks."""
    names = dataset_schema.names
    lower: dict[str, list[str]] = {}
    for n in names:
        lower.setdefault(n.lower(), []).append(n)
    out = []
    for field in spark_schema.fields:
        if field.name in names:
            name = field.name
        elif len(lower.get(field.name.lower(), [])) == 1:
            name = lower[field.name.lower()][0]
        else:
            raise ValueError(f"column {field.name!r} is not in the rcfmt data; columns: {names}")
        expected = to_spark_type(dataset_schema.field(name).type, name)
        if field.dataType != expected:
            raise TypeError(f"column {field.name!r} is {expected.simpleString()} in the rcfmt data, "
                            f"but the schema given to Spark says {field.dataType.simpleString()}")
        out.append(name)
    return out


def _all_match(residual, f, names: list[str], n: int) -> np.ndarray:
    """Bool per block of file ``f``: does every row of the block satisfy ``residual``
    (bound, NNF, on the file's names ``names``), by its footer statistics alone? Yes
    where no row can make ``NOT residual`` TRUE (``may_match`` of its negation, which
    keeps NULL semantics) and no column it reads holds a NULL or a NaN (so the filter
    is TRUE or FALSE on every row). Filters on list columns never count so."""
    from rcfmt.predicate.nnf import BoundListContains, BoundNot, leaves, to_nnf
    from rcfmt.predicate.prune import may_match

    if any(isinstance(leaf, BoundListContains) for leaf in leaves(residual)):
        return np.zeros(n, bool)
    stats = {c: f.block_stats(c) for c in names}
    clean = np.ones(n, bool)
    for s in stats.values():
        clean &= (np.asarray(s.null_count, np.int64) == 0) & (np.asarray(s.nan_count, np.int64) == 0)
    if not clean.any():
        return clean
    return clean & ~may_match(to_nnf(BoundNot(residual)), stats, n)


def live_block_rows(row_count: np.ndarray, deleted: np.ndarray | None) -> np.ndarray:
    """Rows per block (the footer's ``row_count``) that the file's deletion vector
    leaves: ``deleted`` holds sorted file positions (None: no row deleted)."""
    if deleted is None or not len(deleted):
        return row_count
    ends = np.cumsum(row_count)
    cut = np.searchsorted(deleted, np.concatenate(([0], ends)), side="left")
    return row_count - np.diff(cut)


def count_fragments(fragments: list, schema: pa.Schema, expr, *, partition_names=(), verify_checksums=True,
                    column_ids=None, fetch=None, use_threads: bool = False) -> tuple:
    """Rows of ``fragments`` matching ``expr`` (the relation's filter; None: all), from
    metadata wherever it decides: whole files without a filter from the index's row
    counts, blocks the footer statistics prune or match entirely from the footer, the
    rest by a count scan that decodes only the filter columns (and answers from bitmap
    indexes where they decide). Rows deleted by the files' deletion vectors never count:
    the index's counts are of the rows left, the footer's have the deleted rows of their
    blocks subtracted, the count scan leaves them out. Returns (rows, ScanStats of the
    decoding part, rows counted from metadata)."""
    from rcfmt import ScanStats
    from rcfmt.dataset import scan_fragments
    from rcfmt.dataset.scanning import file_view, open_data_file, true_runs, without_missing
    from rcfmt.dataset.evolution import renamed_expr
    from rcfmt.predicate.nnf import columns as expr_columns
    from rcfmt.predicate.prune import may_match
    from rcfmt.predicate.residual import FALSE, TRUE, prepare_filter, residual_of

    nnf = prepare_filter(expr, schema) if expr is not None else None
    stats = ScanStats()
    total = from_meta = 0
    to_scan = []
    for frag in fragments:
        residual = TRUE if nnf is None else residual_of(nnf, dict(frag.partition), schema)
        if residual is FALSE:
            continue
        if residual is TRUE and frag.blocks is None:  # the index's row count (rows left)
            total += frag.live_rows
            from_meta += frag.live_rows
            stats.rows_total += frag.num_rows
            continue
        with open_data_file(frag.path, verify_checksums, frag.size, fetch) as f:
            n = f.num_blocks
            lo, hi = frag.blocks if frag.blocks is not None else (0, n)
            physical = np.asarray(f.footer.blocks["row_count"], np.int64)
            if residual is not TRUE:
                view = file_view(f, schema, column_ids)
                residual = without_missing(renamed_expr(residual, view.renames), f, view.schema)
            if residual is TRUE or residual is FALSE:
                maybe = np.full(n, residual is TRUE)
                every = maybe.copy()
            else:
                names = sorted(expr_columns(residual))
                maybe = may_match(residual, {c: f.block_stats(c) for c in names}, n)
                every = maybe & _all_match(residual, f, names, n)
            window = np.zeros(n, bool)
            window[lo:hi] = True
            counted = 0
            if (every & window).any():  # the footer's counts, minus the rows the deletion vector deletes
                counted = int(live_block_rows(physical, frag.deleted_rows())[every & window].sum())
            stats.rows_total += int(physical[window & ~(maybe & ~every)].sum())  # (the count scan adds its own)
            total += counted
            from_meta += counted
            stats.blocks_total += hi - lo
            stats.blocks_pruned_stats += int((~maybe & window).sum())
            for a, b in true_runs((maybe & ~every)[lo:hi], lo):
                # (the file's deletion vector and first row go with it: the count scan leaves deleted rows out)
                to_scan.append(replace(frag, blocks=(a, b)))
    if to_scan:
        scan = scan_fragments(to_scan, schema, [], expr, partition_names=partition_names, files_total=0,
                              files_pruned=0, use_threads=use_threads, verify_checksums=verify_checksums,
                              column_ids=column_ids, fetch=fetch)
        total += scan.count()
        blocks = stats.blocks_total
        stats.add(scan.stats)
        stats.blocks_total = blocks  # (the count scan's blocks are among these)
    return total, stats, from_meta


def zero_column_batches(rows: int, batch_rows: int):
    """``rows`` rows of no columns, as Arrow batches of at most ``batch_rows`` rows."""
    empty = pa.schema([])
    for start in range(0, rows, batch_rows):
        n = min(batch_rows, rows - start)
        batch = pa.record_batch([pa.nulls(n)], names=["_"]).select([])
        assert batch.schema.equals(empty) and batch.num_rows == n
        yield batch


#: the surviving bytes (estimated from block ranges) at most which a filtered read whose
#: planning read the footers runs as one task: a task costs Spark a Python worker round
#: trip (tens of ms), more than decoding a few blocks
SINGLE_TASK_BYTES = 32 << 20

#: per planner process (Spark reuses its Python workers): parsed relation filters and
#: planned fragments, keyed by dataset root, version and the version's commit (its
#: transaction id and time: a dataset deleted and written again at the same path starts
#: again at version 1) -- a committed version never changes, so they stay right; a new
#: version is a new key. Bounded, oldest dropped first.
_CACHE: dict = {}
_CACHE_ENTRIES = 256


def _plan_key(ds, options):
    """The cache key of what planning derives from ``ds`` and the relation's own filter
    (None: not cached -- a directory without index has no versions)."""
    if ds.version is None:
        return None
    return (ds.root, ds.version, ds.info.get("transaction"), ds.info.get("timestamp"), options.filter,
            options.filter_expr)


def _cached(key, make):
    """``make()``, remembered under ``key`` (a tuple whose last item is None when the
    value must not be cached)."""
    if key is None or key[-1] is None:
        return make()
    try:
        return _CACHE[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable key: no caching
        return make()
    value = make()
    if len(_CACHE) >= _CACHE_ENTRIES:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = value
    return value


class RcfmtReader(DataSourceReader):
    """Reader without filter pushdown (used where Spark does not push filters)."""

    def __init__(self, options, schema: StructType):
        t0 = time.perf_counter()
        self.opened_at = time.time()  # (wall clock: the planner's start, reported with statsDir)
        self.options = options if isinstance(options, ReadOptions) else ReadOptions(options)
        self._open(schema)
        self.open_ms = (time.perf_counter() - t0) * 1e3

    @with_store_settings
    def _open(self, schema: StructType) -> None:
        from rcfmt.dataset import Dataset

        ds = Dataset.open(self.options.path, version=self.options.version)
        self._ds = ds
        self.version = ds.version
        self.dataset_schema = ds.schema
        self.column_ids = ds.column_ids  # (files written before a rename hold old names)
        self.partition_names = list(ds.partitioning.names)
        self.columns = _resolve_columns(schema, ds.schema)
        self.spark_names = [f.name for f in schema.fields]
        self.target = spark_arrow_schema(schema)
        self.filter = None  # the pushed filters, as one rcfmt expression
        # the relation's own filter (the filter option): applied by every scan, exactly
        self.relation_filter = None
        if self.options.filter is not None or self.options.filter_expr is not None:
            self.relation_filter = _cached(("filter", _plan_key(ds, self.options)), lambda: self._parse_filter(ds))
        self.plan_id = uuid.uuid4().hex
        self.guarded = not SCAN_SCOPED_READ_INFO
        self.claims_dir = None  # set when a filter is pushed on a guarded Spark

    def _parse_filter(self, ds):
        out = None
        if self.options.filter is not None:
            from rcfmt.predicate.sql_filter import parse_filter

            out = parse_filter(self.options.filter, bind_schema(ds.schema))
        if self.options.filter_expr is not None:
            from rcfmt.predicate.sql_filter import parse_filter_expr

            expr = parse_filter_expr(self.options.filter_expr, bind_schema(ds.schema))
            out = expr if out is None else out & expr
        return out

    def __getstate__(self):  # the dataset (its index) stays on the driver
        state = dict(self.__dict__)
        state.pop("_ds", None)
        return state

    def dataset(self):
        """The dataset version this reader reads (opened again after unpickling)."""
        ds = getattr(self, "_ds", None)
        if ds is None:
            from rcfmt.dataset import Dataset

            ds = self._ds = Dataset.open(self.options.path, version=self.version)
        return ds

    def _plan_filter(self):
        """The relation's filter AND the pushed filters (None: every row)."""
        if self.relation_filter is None:
            return self.filter
        if self.filter is None:
            return self.relation_filter
        return self.relation_filter & self.filter

    @with_store_settings
    def partitions(self) -> list:
        from rcfmt.dataset import prune_blocks

        t0 = time.perf_counter()
        ds = self.dataset()
        plan_filter = self._plan_filter()
        # every file any scan of this relation may need (the relation filter prunes for all)
        # (cached only for a dataset version and the relation's own filter, given as text)
        key = _plan_key(ds, self.options)
        everything = _cached(("fragments", key), lambda: ds.get_fragments(self.relation_filter))
        if self.filter is not None:
            fragments, key = ds.get_fragments(plan_filter), None
        else:
            fragments = everything
        files_kept = len(fragments)
        kept_paths = {f.path for f in fragments}
        dropped, blocks_pruned, footers = [], 0, False
        if plan_filter is not None and 0 < len(fragments) <= self.options.planning_footers:
            # few files survive the index: their footers (and the bloom filters and bitmap
            # indexes of the blocks these keep) are cheap, prune blocks now so that tasks are
            # planned for the surviving blocks only (once per dataset version and filter): a
            # lookup on a key with bloom filters is one task on its block
            footers = True
            fragments, dropped, _ = _cached(("blocks", key), lambda: prune_blocks(
                fragments, self.dataset_schema, plan_filter, partition_names=self.partition_names,
                verify_checksums=self.options.verify_checksums, column_ids=self.column_ids,
                fetch=self.options.fetch, use_indexes=True))
            blocks_pruned = sum(f.blocks[1] - f.blocks[0] if f.blocks else f.num_blocks for f in dropped)
        small = footers and sum(f.estimated_size for f in fragments) <= SINGLE_TASK_BYTES
        if not self.columns and self.filter is None and (plan_filter is None or small):
            # count(*) and existence of the relation's rows, counted here so that tasks open no
            # file: without a filter from the index's row counts (rows left); with the
            # relation's filter, when few blocks survive (a read of them would be one task),
            # from metadata where it decides and by a count scan of the filter columns
            # elsewhere (threads: the planner's process has the driver's cores). Larger counts
            # are shared among tasks.
            if plan_filter is None:
                rows = from_meta = sum(f.live_rows for f in fragments)
                count_stats = None
            else:
                rows, count_stats, from_meta = count_fragments(
                    fragments, self.dataset_schema, plan_filter, partition_names=self.partition_names,
                    verify_checksums=self.options.verify_checksums, column_ids=self.column_ids,
                    fetch=self.options.fetch, use_threads=True)
            counts = split_rows(rows, self.options.batch_rows, self.options.min_partitions)
            partitions = [RcfmtInputPartition(i, [], rows=n) for i, n in enumerate(counts)]
            self._write_plan(ds, t0, partitions, ds.num_files - files_kept, blocks_pruned, plan_filter,
                             count={"rows": rows, "rows_from_metadata": from_meta,
                                    "stats": None if count_stats is None else count_stats.as_dict()})
            return partitions
        if small:
            groups = [fragments] if fragments else []  # few surviving blocks: one task
        else:
            groups = plan_partitions(fragments, self.options.max_partition_bytes, self.options.min_partitions)
        pruned_groups = [[] for _ in groups]
        if self.guarded and self.filter is not None:
            # keep what the pushed filter pruned, for executions this plan does not belong to
            # (what the relation's own filter prunes, no scan of the relation reads)
            pruned = [f for f in everything if f.path not in kept_paths] + dropped
            pruned_groups = spread(pruned, groups, self.options.min_partitions)
            groups += [[] for _ in range(len(pruned_groups) - len(groups))]
        partitions = [RcfmtInputPartition(i, g, p) for i, (g, p) in enumerate(zip(groups, pruned_groups))]
        self._write_plan(ds, t0, partitions, ds.num_files - files_kept, blocks_pruned, plan_filter)
        return partitions

    def _write_plan(self, ds, t0: float, partitions: list, files_pruned: int, blocks_pruned: int, plan_filter,
                    count: dict | None = None):
        """With ``statsDir``: the plan's statistics and timings (``partitions()`` began at
        ``t0``; the reader was made at ``opened_at``), the pickled sizes of the reader
        and the partitions (what Spark ships to every task) and, for a relation of no
        column, its ``count`` made here (rows, how many from metadata, the count scan's
        ScanStats)."""
        if self.options.stats_dir:
            import pickle

            plan_ms = (time.perf_counter() - t0) * 1e3
            write_record(self.options.stats_dir, "plan", {
                "plan_id": self.plan_id, "version": ds.version, "files_total": ds.num_files,
                "files_pruned": files_pruned, "blocks_pruned_planning": blocks_pruned,
                "partitions": len(partitions), "filter": repr(plan_filter), "open_ms": self.open_ms,
                "plan_ms": plan_ms, "start": self.opened_at, "end": time.time(), **process_info(),
                "reader_bytes": len(pickle.dumps(self)), "partition_bytes": [len(pickle.dumps(p)) for p in partitions],
                "count": count})

    @with_store_settings
    def read(self, partition):
        from rcfmt.dataset import scan_fragments

        fragments = list(getattr(partition, "fragments", None) or [])
        expr = self._plan_filter()
        owner = True
        if self.guarded and self.filter is not None:
            owner = claim_plan(self.claims_dir, self.plan_id)
            if not owner:  # a query that did not plan this read: every row of the relation
                fragments += list(getattr(partition, "pruned", None) or [])
                expr = self.relation_filter
        if not self.columns:  # no column wanted (count(*), existence): rows counted from metadata
            yield from self._read_count(partition, fragments, expr, owner)
            return
        started = time.time()
        scan = scan_fragments(fragments, self.dataset_schema, self.columns, expr,
                              partition_names=self.partition_names, files_total=0, files_pruned=0,
                              use_threads=False, verify_checksums=self.options.verify_checksums,
                              column_ids=self.column_ids, fetch=self.options.fetch)
        target = self.target
        convert = BatchConverter(target)
        # inside: time in this generator; outside: time Spark took between batches (it
        # serializes each batch to the JVM before asking for the next)
        t0, inside, outside, batches, rows, nbytes = time.perf_counter(), 0.0, 0.0, 0, 0, 0
        try:
            for batch in scan.iter_batches(self.options.batch_rows):
                if batch.schema.names != target.names:
                    batch = batch.rename_columns(target.names)
                batch = convert(batch)
                batches, rows, nbytes = batches + 1, rows + batch.num_rows, nbytes + batch.nbytes
                t1 = time.perf_counter()
                inside += t1 - t0
                yield batch
                t0 = time.perf_counter()
                outside += t0 - t1
        finally:
            if self.options.stats_dir:
                inside += time.perf_counter() - t0
                write_record(self.options.stats_dir, "task", {
                    "plan_id": self.plan_id, "partition": partition.value, "owner": owner,
                    "stats": scan.stats.as_dict(), "scan_ms": inside * 1e3, "handoff_ms": outside * 1e3,
                    "batches": batches, "rows": rows, "bytes": nbytes, "start": started, "end": time.time(),
                    **process_info()})

    def _read_count(self, partition, fragments, expr, owner):
        from rcfmt import ScanStats

        t0, started = time.perf_counter(), time.time()
        rows = getattr(partition, "rows", None)
        if rows is not None:  # counted by planning, from the index
            stats, from_meta = ScanStats(), rows
            stats.rows_total = rows
        else:
            rows, stats, from_meta = count_fragments(
                fragments, self.dataset_schema, expr, partition_names=self.partition_names,
                verify_checksums=self.options.verify_checksums, column_ids=self.column_ids,
                fetch=self.options.fetch)
        stats.rows_selected += from_meta  # (the count scan adds the rows it selected)
        count_ms = (time.perf_counter() - t0) * 1e3
        try:
            yield from zero_column_batches(rows, self.options.batch_rows)
        finally:
            if self.options.stats_dir:
                write_record(self.options.stats_dir, "task", {
                    "plan_id": self.plan_id, "partition": partition.value, "owner": owner,
                    "stats": stats.as_dict(), "rows_from_metadata": from_meta, "count_ms": count_ms,
                    "rows": rows, "start": started, "end": time.time(), **process_info()})


class RcfmtPushdownReader(RcfmtReader):
    """Reader offering ``pushFilters`` (used by Spark's filter-pushdown planner).

    Every filter rcfmt evaluates exactly is translated and used for file, block and page
    pruning and late materialization. Where Spark keeps the read plan scoped to the scan
    (:data:`SCAN_SCOPED_READ_INFO`), those filters are claimed (Spark drops them);
    on Spark 4.1-4.3 all filters are handed back and Spark re-applies them, as with its
    own Parquet source (see :mod:`spark_datasource.source` for why)."""

    @with_store_settings
    def pushFilters(self, filters):
        names = dict(zip(self.spark_names, self.columns))
        schema = pa.schema([self.dataset_schema.field(n) for n in dict.fromkeys(self.columns)])
        pushed, rest = translate_all(filters, schema, names)
        self.filter = pushed
        if self.guarded and pushed is not None:
            self.claims_dir = claims_directory(self.dataset())
        return rest if not self.guarded else list(filters)


# ------------------------------------------------------------------ plan ownership (Spark 4.1-4.3)
CLAIMS = "_scans"


def claims_directory(ds) -> str:
    """Where executors record which SQL execution a plan belongs to: the dataset's
    ``_rcfmt/_scans/`` when writable (shared by all executors), else (read-only or
    object-store datasets) a local temp dir."""
    import tempfile

    from rcfmt.dataset import META_DIR

    from rcfmt.storage import is_remote

    if ds.version is not None and not is_remote(ds.root):
        d = os.path.join(ds.root, META_DIR, CLAIMS)
        try:
            os.makedirs(d, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
        except OSError:
            pass
    return os.path.join(tempfile.gettempdir(), "rcfmt-scan-claims")


def _execution_id():
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return None
    return ctx.getLocalProperty("spark.sql.execution.root.id") or ctx.getLocalProperty("spark.sql.execution.id")


def claim_plan(claims_dir: str, plan_id: str, execution_id=None) -> bool:
    """True if the SQL execution running this task is the first to run plan ``plan_id``
    (it claims the plan, atomically: create-if-absent via a hard link). Tasks outside a
    SQL execution never own a plan."""
    execution = execution_id if execution_id is not None else _execution_id()
    if execution is None:
        return False
    os.makedirs(claims_dir, exist_ok=True)
    path = os.path.join(claims_dir, plan_id)
    if not os.path.exists(path):
        tmp = os.path.join(claims_dir, f".{plan_id}.{uuid.uuid4().hex}")
        with open(tmp, "w") as fh:
            fh.write(str(execution))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    with open(path) as fh:
        return fh.read() == str(execution)
