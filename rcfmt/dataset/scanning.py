"""Scanning datasets: :class:`Fragment` (one file, or a range of its blocks),
:class:`FileInfo`, :class:`DatasetScan`, and :func:`prune_blocks` / :func:`scan_fragments`
for engines that plan fragments themselves (the Spark source).

A scan prunes files with :func:`rcfmt.predicate.prune.may_match` on statistics from the
stats index (one unit per file; partition columns are constant units), so file pruning
has exactly the semantics of block pruning. Partition columns in the filter are then
replaced by their (constant) truth value per file, and the rest of the filter goes to
the file's own skipping scan (blocks, pages, late materialization).
"""
from __future__ import annotations

import contextlib
from typing import Iterator, NamedTuple, Sequence

import numpy as np
import pyarrow as pa

from ..runtime.records import fields, record, replace
from ..errors import CorruptFileError, InvalidOptionError, SchemaError
from ..storage.fetch import FetchOptions, check_fetch
from ..storage.paths import is_remote
from ..runtime.options import flag
from ..runtime.threads import MAX_FILE_THREADS, shared_pool, wait_all
from ..interop.arrow import export_stream
from ..interop import cdata
from ..schema.arrow_io import filter_rows, int64_array
from ..file.reader import RcfmtFile
from ..predicate.nnf import BoundAnd, BoundListContains, columns as expr_columns, fold, leaves
from ..predicate.bind import arrow_values
from ..predicate.prune import may_match
from ..predicate.residual import FALSE, TRUE, prepare_filter, residual_of
from ..scan.plan import DatasetPlan
from ..scan.positions import check_no_position_column, position_name, row_position_field
from ..scan import scheduling
from ..scan.scanner import ScanStats
from ..schema import nested
from ..schema.types import logical_type_from_arrow, same_logical_type
from .evolution import file_renames, renamed_expr, renamed_path, renamed_schema, widens
from .deletions import DeletionVector, load as load_deletions, visible_positions
from .index import Snapshot

__all__ = ["DatasetScan", "Fragment", "FileInfo", "scan_fragments", "prune_blocks", "open_data_file",
           "missing_is_corrupt", "file_view", "check_types", "value_sets_keep", "true_runs", "without_missing"]


# ------------------------------------------------------------------ snapshots
# ------------------------------------------------------------------ fragments
def open_data_file(path: str, verify_checksums: bool = True, size: int = 0,
                   fetch: FetchOptions | None = None) -> RcfmtFile:
    """A data file the index lists (``size``: its size there, 0 if unknown); one that is
    missing makes the dataset corrupt. Its footer is cached across opens, and the page
    indexes every open reads and checks are kept for the next ones: on object storage a
    dataset's files are its writers' (uniquely named, never replaced under their names);
    a local file may be another's (a plain directory's, one a dataset adopted), and the
    caches tell it by inode and modification time too."""
    with missing_is_corrupt(path):
        return RcfmtFile(path, verify_checksums=verify_checksums, size=size or None, immutable=True, fetch=fetch,
                         shared_page_indexes=True)


def _files_worth_threads(frags) -> bool:
    """Whether fragments are worth scanning in parallel: always on object storage (the
    requests overlap) and when the index does not know a file's size; local files when
    their blocks hold, on average, half of :data:`~rcfmt.scan.scheduling.PARALLEL_BLOCK_BYTES`
    stored bytes (every column, compressed: the estimate the index gives without a
    footer). Smaller blocks hand the GIL between the files' threads at every GIL-free
    call, which costs more than the second core gains (bench/RESULTS.md §10g: eight
    files of 4,096-row blocks, 72 KB each, read 1.5x slower in parallel than one by one)."""
    if any(is_remote(f.path) or not f.size or not f.num_blocks for f in frags):
        return True
    files = {f.path: f for f in frags}.values()
    return 2 * sum(f.size for f in files) >= scheduling.PARALLEL_BLOCK_BYTES * sum(f.num_blocks for f in files)


#: the name a dataset scan asks its files' positions under: no column of a file has it (a
#: column renamed in the dataset keeps its old name in files written before)
_FILE_POSITION = "\x00rcfmt.file_position"


@contextlib.contextmanager
def missing_is_corrupt(path: str):
    """A data file found missing (at its open, or at its first read when its footer came
    from the cache) is a CorruptFileError of the dataset."""
    try:
        yield
    except FileNotFoundError:
        raise CorruptFileError("data file listed in the dataset index is missing (vacuum removes the files of "
                               "versions older than its retention: time travel to such a version, or a handle "
                               "opened before, cannot read them; else the dataset was damaged)", path=path) from None


@record(frozen=True)
class Fragment:
    """One data file (or the blocks ``[blocks[0], blocks[1])`` of it) with its partition
    values ``((name, value), ...)``. ``num_rows``, ``size`` and ``num_blocks`` are those
    of the whole file; ``first_row`` the position of its first row in the dataset
    version (files in index order, deleted rows not counted; None when unknown: no
    row positions then); ``deletion`` the file's deletion vector in this version
    (:class:`~rcfmt.dataset.deletions.DeletionVector`, its path absolute), whose rows
    every scan of the fragment leaves out. Picklable; opening it needs only the file
    (and its deletion file)."""

    path: str
    partition: tuple = ()
    num_rows: int = 0
    size: int = 0
    num_blocks: int = 0
    blocks: tuple | None = None
    first_row: int | None = None
    deletion: DeletionVector | None = None

    @property
    def live_rows(self) -> int:
        """Rows of the file its deletion vector leaves."""
        return self.num_rows - (self.deletion.cardinality if self.deletion is not None else 0)

    def deleted_rows(self) -> np.ndarray | None:
        """The file's deleted row positions (sorted; None: none), loaded and checked."""
        return None if self.deletion is None else load_deletions(self.deletion, self.num_rows, self.path)

    def split(self, pieces: int) -> list["Fragment"]:
        """At most ``pieces`` fragments covering this one's blocks in order."""
        lo, hi = self.blocks if self.blocks is not None else (0, self.num_blocks)
        n = hi - lo
        pieces = max(1, min(pieces, n))
        if pieces == 1:
            return [self]
        cuts = [lo + (n * k) // pieces for k in range(pieces + 1)]
        return [replace(self, blocks=(a, b)) for a, b in zip(cuts[:-1], cuts[1:])]

    @property
    def estimated_size(self) -> int:
        if self.blocks is None or not self.num_blocks:
            return self.size
        return int(self.size * (self.blocks[1] - self.blocks[0]) / self.num_blocks)


@record(frozen=True)
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
def _dictionary_columns(names, schema: pa.Schema, columns: list) -> list[str]:
    """``read_dictionary``'s names, checked: selected top-level string or binary columns."""
    if names is None:
        return []
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise InvalidOptionError(f"read_dictionary must be a list of column names, got {names!r}")
    for name in names:
        if name not in columns or name not in schema.names:
            raise InvalidOptionError(f"read_dictionary names {name!r}, which is not a selected top-level column")
        t = schema.field(name).type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t)):
            raise InvalidOptionError(f"read_dictionary: column {name!r} is {t}, not strings or binary")
    return list(dict.fromkeys(names))


def _as_dictionary(field: pa.Field, names: list) -> pa.Field:
    return field.with_type(pa.dictionary(pa.int32(), field.type)) if field.name in names else field


class DatasetScan:
    """A planned scan of fragments of a dataset; ``read()``, ``iter_batches()`` and
    ``stats`` (a :class:`~rcfmt.scan.scanner.ScanStats` summed over the files scanned,
    with ``files_total``/``files_pruned`` of the file pruning). ``fetch``: how reads of
    remote files trade requests for bytes (:class:`~rcfmt.storage.fetch.FetchOptions`).
    ``with_row_position``: each row's position in the dataset version as a last int64
    column ``_row_position`` (or of the name given instead of True; the fragments must
    know their ``first_row``); ``rows``: ``{fragment path: file positions}`` to read only those rows of each (ascending,
    distinct, checked by the caller: ``Dataset.take``)."""

    def __init__(self, schema: pa.Schema, fragments: Sequence[Fragment], columns: Sequence[str] | None = None,
                 filter=None, *, partition_names: Sequence[str] = (), files_total: int | None = None,
                 files_pruned: int = 0, use_threads: bool = True, verify_checksums: bool = True,
                 column_ids: dict | None = None, fetch: FetchOptions | None = None,
                 read_dictionary: Sequence[str] | None = None, with_row_position: bool | str = False,
                 rows: dict | None = None):
        self.position = position_name(with_row_position)  # (the column's name; None: no positions)
        self.with_row_position = self.position is not None
        if self.with_row_position:
            unknown = [f.path for f in fragments if f.first_row is None]
            if unknown:
                raise InvalidOptionError(f"with_row_position needs each fragment's first_row (its place in the "
                                         f"dataset version); {unknown[0]!r} has none")
        self._rows = rows
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
        self.partition_names = set(partition_names)
        self.read_dictionary = _dictionary_columns(read_dictionary, schema, self.columns)
        self.output_schema = pa.schema([_as_dictionary(schema.field(n.name), self.read_dictionary)
                                        if n.kind == nested.LEAF else n.field for n in projected]
                                       + ([row_position_field(self.position)] if self.with_row_position else []))
        if self.with_row_position:
            check_no_position_column(self.output_schema.names[:-1], self.position)
        #: batches are assembled under the output schema with its interval types as their
        #: storage types (pyarrow holds no array of them), relabeled after (rcfmt.interop.cdata)
        self._batch_schema = cdata.storage_schema(self.output_schema)
        self.nnf = prepare_filter(filter, schema)
        self.use_threads = flag(use_threads, "use_threads")
        self.verify_checksums = flag(verify_checksums, "verify_checksums")
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
            residual = renamed_expr(residual, renames, self.schema.names)
            # columns added to the dataset after this file was written read as NULL
            residual = without_missing(residual, f, schema)
            if residual is FALSE:
                f.close()
                return None, partition, None, None
            wanted = [renamed_path(c, renames, self.schema.names) for c in self._data_columns]
            absent = set(check_types(f, schema, wanted))
            columns = [c for c in wanted if c not in absent]
            pushed, post = None if residual is TRUE else residual, None
            narrower = _narrower_columns(f, schema, pushed)
            if narrower:  # columns widened since the file was written: those leaves are applied after
                pushed, post = _pushable(pushed, narrower), pushed
                columns += [c for c in _read_for(post) if c not in columns]
            as_dictionary = [c for c in (renamed_path(c, renames, self.schema.names) for c in self.read_dictionary)
                             if c in columns]
            scan = f.scan(columns, pushed, use_threads=use_threads, read_dictionary=as_dictionary or None,
                          blocks=None if frag.blocks is None else _clamp(frag.blocks, f.num_blocks),
                          with_row_position=_FILE_POSITION if self.with_row_position else False,
                          _rows=None if self._rows is None else self._rows[frag.path],
                          _deleted=frag.deleted_rows())
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
        table = pa.table({name: _leaf_values(batch, name).cast(types.field(name).type)
                          if types.get_field_index(name) >= 0 else _leaf_values(batch, name)  # (a list: never widened)
                          for name in _read_for(post)})
        import pyarrow.compute as pc  # (on first use: most scans never need it)

        from ..predicate.arrow_eval import evaluate

        return filter_rows(batch, pc.fill_null(evaluate(post, table), False))

    def _assemble(self, batch: pa.RecordBatch, partition: dict, post=None, view: "FileView | None" = None,
                  first_row: int | None = None, deleted: np.ndarray | None = None) -> pa.RecordBatch:
        relabel = self._batch_schema is not self.output_schema
        if relabel:
            batch = cdata.to_storage(batch)
        if post is not None:
            batch = self._post_filter(batch, post, view.schema)
        if view is not None and view.renames:  # back to the dataset's names
            back = {old: new for new, old in view.renames.items()}
            batch = batch.rename_columns([back.get(n, n) for n in batch.schema.names])
        n = batch.num_rows
        arrays = []
        for field in self._batch_schema:
            if self.with_row_position and field.name == self.position:  # file positions, moved to the version's
                positions = batch.column(batch.schema.get_field_index(_FILE_POSITION))
                if first_row or deleted is not None:  # (numbered among the rows left)
                    positions = int64_array(visible_positions(np.asarray(positions), deleted) + first_row)
                arrays.append(positions)
            elif field.name in self.partition_names:
                value = partition.get(field.name)
                if value is not None and pa.types.is_dictionary(field.type):  # one entry, repeated
                    arrays.append(pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
                                                                 pa.array([value], field.type.value_type)))
                else:
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
        batch = pa.RecordBatch.from_arrays(arrays, schema=self._batch_schema)
        return cdata.relabel(batch, self.output_schema) if relabel else batch

    def _count(self, scan) -> None:
        if scan is None:
            self.stats.files_pruned += 1
            return
        for name in fields(ScanStats):
            if name not in ("files_total", "files_pruned"):
                setattr(self.stats, name, getattr(self.stats, name) + getattr(scan.stats, name))

    def _read_fragment(self, frag: Fragment, use_threads: bool):
        scan, partition, post, view = self._file_scan(frag, use_threads)
        if scan is None:
            return None, []
        try:
            with missing_is_corrupt(frag.path):
                table = scan.read()
        finally:
            scan.file.close()
        batches = ([self._assemble(b, partition, post, view, frag.first_row, scan.deleted) for b in table.to_batches()]
                   if table.num_rows else [])
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
        parallel (each scanned on one thread) when :func:`_files_worth_threads`, or one at
        a time with threaded scans (each file's blocks then go to the pool by their size)."""
        frags = self.fragments
        if self.use_threads and len(frags) > 1 and _files_worth_threads(frags) and self._take_worth_threads(frags):
            # (each file scanned on one thread: nothing on this pool waits for it; every
            # file's scan ends, its file closed, before the first error is raised)
            futures = [shared_pool("files", MAX_FILE_THREADS).submit(fn, fr, False) for fr in frags]
            wait_all(futures)
            return [f.result() for f in futures]
        return [fn(fr, self.use_threads) for fr in frags]

    def _take_worth_threads(self, frags) -> bool:
        """For a take, whether its files hold enough wanted (row, column) pairs to be read
        in parallel (:func:`~rcfmt.scan.scheduling.take_worth_threads`, a file as a
        block: a few rows per file cost their Python more than a second core gains); any
        other scan: True."""
        if self._rows is None:
            return True
        cells = sum(len(self._rows[f.path]) for f in frags) * max(len(self._data_columns), 1)
        return scheduling.take_worth_threads(cells, len(frags))

    def read(self) -> pa.Table:
        """Every selected row, as one table (fragments in order)."""
        results = self._each_fragment(self._read_fragment)
        batches = []
        for scan, bs in results:
            self._count(scan)
            batches.extend(bs)
        if not self.output_schema:
            rows = sum(b.num_rows for b in batches)
            return pa.table({"_": pa.nulls(rows)}).select([])
        return pa.Table.from_batches(batches, schema=self.output_schema)

    def __arrow_c_stream__(self, requested_schema=None):
        """The selected rows as an Arrow C stream (the Arrow PyCapsule interface),
        fragment by fragment: ``polars.DataFrame(scan)``, ``pyarrow.table(scan)``, DuckDB."""
        return export_stream(self.output_schema, self.iter_batches(), requested_schema)

    def __arrow_c_schema__(self):
        """The stream's schema (``output_schema``; ``schema`` is the dataset's, which a
        consumer such as DuckDB would otherwise take for the stream's)."""
        return self.output_schema.__arrow_c_schema__()

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
                        out = self._assemble(batch, partition, post, view, frag.first_row, scan.deleted)
                        if out.num_rows:  # (a residual filter may keep none of a batch's rows)
                            yield out
            finally:
                scan.file.close()
                self._count(scan)


def _clamp(blocks: tuple, n: int) -> tuple[int, int]:
    return max(0, min(n, blocks[0])), max(0, min(n, blocks[1]))


def true_runs(mask: np.ndarray, lo: int) -> list[tuple[int, int]]:
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


def _read_for(expr) -> list[str]:
    """The columns (or struct leaves) to read to evaluate ``expr`` on Arrow data: a
    ``list_contains`` leaf needs its list, not the element column it prunes by."""
    return sorted({leaf.list_name if isinstance(leaf, BoundListContains) else leaf.column.name
                   for leaf in leaves(expr)})


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


def without_missing(residual, f: RcfmtFile, schema: pa.Schema):
    """``residual`` for file ``f``: leaves on columns the file lacks (added later) are
    decided now, as on a column of NULLs (``TRUE``/``FALSE`` when nothing is left)."""
    if residual is TRUE or residual is FALSE or residual is None:
        return residual
    missing = check_types(f, schema, sorted(expr_columns(residual)))
    if not missing:
        return residual
    return residual_of(residual, {name: None for name in missing}, nested.filter_schema(schema))


def value_sets_keep(nnf, snap: Snapshot, candidates: np.ndarray) -> np.ndarray:
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

    from ..predicate.arrow_eval import selection_mask  # (pyarrow.compute: only when value sets are known)

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
            held = parts[0].type  # (a type stored as another, decimal64 or halffloat: the stored one)
            if stats.null_count[i]:
                parts.append(pa.nulls(1, held))
            if stats.nan_count[i]:
                parts.append(pa.Array.from_buffers(held, 1, [None, pa.py_buffer(
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
                 fetch: FetchOptions | None = None,
                 use_indexes: bool = False) -> tuple[list[Fragment], list[Fragment], int]:
    """Refine fragments with their files' block statistics (reads each footer).

    Returns ``(kept, dropped, blocks_total)``: ``kept`` holds one fragment per run of
    blocks that may match ``filter`` (by block statistics; pages and rows are left to the
    scan), ``dropped`` the complementary block ranges. For planners that want as many
    tasks as there are surviving blocks, not files. ``use_indexes``: also drop the blocks
    the files' bloom filters and bitmap indexes rule out (as a scan's block pruning does:
    reads those of the blocks the statistics keep, for ``==``/``isin`` leaves and indexed
    columns). ``column_ids``:
    :attr:`Dataset.column_ids` (files written before a rename); ``fetch``: the tail a
    remote open reads (:class:`~rcfmt.storage.fetch.FetchOptions`)."""
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
            residual = without_missing(renamed_expr(residual, view.renames, schema.names), f, view.schema)
            if residual is TRUE or residual is FALSE:
                mask = np.full(hi - lo, residual is TRUE)
            else:
                names = sorted(expr_columns(residual))
                mask = may_match(residual, {c: f.block_stats(c) for c in names}, n)[lo:hi]
                if use_indexes and mask.any():
                    # the scan's own block pruning (bloom filters, bitmap indexes) on the part of
                    # the filter the file takes as it is (columns widened since it was written: not)
                    narrower = _narrower_columns(f, view.schema, residual)
                    pushed = _pushable(residual, narrower) if narrower else residual
                    if pushed is not None:
                        kept_blocks = f.scan([], pushed, use_threads=False, blocks=(lo, hi)).blocks
                        mask &= np.isin(np.arange(lo, hi), np.asarray(kept_blocks, np.int64))
        for a, b in true_runs(mask, lo):
            kept.append(replace(frag, blocks=(a, b)))
        for a, b in true_runs(~mask, lo):
            dropped.append(replace(frag, blocks=(a, b)))
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
