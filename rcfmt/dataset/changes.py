"""Row-level changes of a dataset: :func:`delete`, :func:`update` and :func:`merge`,
merge-on-read (docs/DATASET.md §3.4).

No data file is rewritten. The rows a change removes are found by a skipping scan (the
stats index, block statistics, bloom filters, bitmap indexes, the page index, late
materialization), which returns their positions; each file holding some gets a new
deletion vector -- the rows it had deleted and these -- and a file left without rows
leaves the index. Rows a change writes (updated or inserted) go to new files. All of it
is one commit (mode "change" of :func:`~rcfmt.dataset.commits.commit_version`), which
rebases onto concurrent commits that left the changed files as it read them and
otherwise raises :class:`~rcfmt.errors.CommitConflictError`; the change is then planned
again on the latest version, at most :data:`MAX_ATTEMPTS` times, so a delete is never
lost and never applied to rows it did not see.
"""
from __future__ import annotations

import datetime
import decimal
import math
import os
import uuid
from concurrent.futures import Future
from typing import Callable

import numpy as np
import pyarrow as pa

from ..errors import CommitConflictError, InvalidDataError, InvalidOptionError, SchemaError, UnsupportedError
from ..runtime.options import names as option_names
from ..runtime.threads import thread_pool
from ..scan.positions import free_position_name
from ..schema.types import same_type
from ..predicate.residual import prepare_filter
from . import log
from .deletions import DeletionFileWriter, union
from .snapshot import read_committed, read_snapshot
from .files import DEFAULT_TARGET_FILE_ROWS, FileSetWriter, inherited_bitmap_indexes, inherited_hints, join_path

__all__ = ["delete", "update", "merge", "deletion_change", "MAX_ATTEMPTS"]

#: how many times a change is planned again after losing to a concurrent commit
MAX_ATTEMPTS = 8
_SOURCE_ROW = "__rcfmt_source_row"
_TARGET_ROW = "__rcfmt_target_row"


class _Change:
    """What one attempt of a change found: per file (by index row) the file positions it
    removes, the rows it writes, and the counts :meth:`Dataset.history` shows."""

    def __init__(self, removed: dict, written: pa.Table | None, counts: dict, staged=None):
        self.removed, self.written, self.counts = removed, written, counts
        #: ``written`` already being staged (:class:`_Prestaged`), used by the first commit
        self.staged = staged


class _Prestaged:
    """The rows a change will write, staged as data files in a thread while the change
    is planned (an upsert writes every source row whatever matches). The first commit
    takes the files (a failed commit removes what it published); :meth:`discard`
    removes them if no commit took them."""

    def __init__(self, dataset, table: pa.Table, txn: str):
        self._pool = thread_pool(1)
        # (one thread: the planning's scan has the cores; a pool of the writer's own only contends)
        self._future = self._pool.submit(_stage, dataset, table, txn, False)
        self._taken = False

    def submit(self, fn: Callable, *args) -> Future:
        """Run ``fn(*args)`` on the staging's thread, once the staging is done: work
        that overlaps the planning without a third thread contending for the GIL."""
        return self._pool.submit(fn, *args)

    def take(self):
        """``_stage``'s result, once; None after."""
        if self._taken:
            return None
        self._taken = True
        return self._future.result()

    def discard(self) -> None:
        self._pool.shutdown(wait=True)
        if self._taken:
            return
        self._taken = True
        try:
            staging, files = self._future.result()
        except BaseException:  # (the staging removed what it wrote)
            return
        if staging is not None:
            log.remove_tree(staging)
        else:
            from ..storage import delete_files

            delete_files([p for _, p in files])


def _retrying(dataset, operation: str, plan: Callable, prestaged: _Prestaged | None = None) -> "object":
    """Plan and commit a change on ``dataset``; after a conflict, on the latest version.
    The whole index, which the commit rewrites, is read while the change is planned: on
    the thread of ``prestaged`` (after its files) if given, else on a thread of its own."""
    Dataset = type(dataset)  # (not imported: rcfmt.dataset.dataset imports this module)
    _check_indexed(dataset, operation)
    current = dataset
    for attempt in range(MAX_ATTEMPTS):
        with thread_pool(1) as pool:
            args = (read_snapshot, current.root, current.version, None, current.snapshot.index_size)
            base = prestaged.submit(*args) if prestaged is not None else pool.submit(*args)
            change = plan(current)
            try:
                base = base.result()
            except FileNotFoundError:
                if log.version_exists(current.root, current.version):
                    raise
                base = None  # (a vacuum removed the version planned on: plan again on the latest)
        if base is None:
            if attempt + 1 == MAX_ATTEMPTS:
                raise CommitConflictError(f"{operation} of {current.root!r}: version {current.version} was removed "
                                          "by a vacuum while the change was planned; nothing was written")
            current = Dataset.open(current.root)
            continue
        if not change.removed and (change.written is None or not change.written.num_rows):
            return current  # nothing matched: nothing to commit
        try:
            version, size = _commit(current, operation, change, base)
        except CommitConflictError:
            if attempt + 1 == MAX_ATTEMPTS:
                raise
            log.backoff(attempt + 1)
            current = Dataset.open(current.root)
            continue
        return Dataset(read_committed(current.root, version, size))
    raise AssertionError("unreachable")  # pragma: no cover


def _check_indexed(dataset, operation: str) -> None:
    if dataset.version is None:
        raise UnsupportedError(f"{operation} needs a dataset with an index (written by rcfmt.write_dataset); "
                               f"{dataset.root!r} has none (append to it once to create one)")


def _matched(dataset, filter, columns) -> tuple[pa.Table, dict]:
    """The rows of ``dataset`` matching ``filter`` (``columns`` of them, and their
    positions), and per index row of a file holding some, their file positions."""
    position = free_position_name(dataset.schema.names)  # (a column may be named _row_position)
    table = dataset.scan(columns, filter, with_row_position=position).read()
    removed = _by_file(dataset, np.asarray(table.column(position)))
    return table.drop_columns([position]), removed


def _by_file(dataset, positions: np.ndarray) -> dict:
    """``{index row of a file: file positions}`` of version positions ``positions``."""
    from ..scan.positions import by_unit
    from .deletions import file_positions

    snap = dataset.snapshot
    vectors, rows = snap.vectors(), snap.column_values("num_rows")
    out = {}
    for u, visible in by_unit(np.sort(positions), snap.live_rows()).items():
        vector = vectors[u]
        out[u] = file_positions(visible, None if vector is None else _load(vector, dataset.root, int(rows[u])))
    return out


def _load(vector, root: str, num_rows: int) -> np.ndarray:
    from .deletions import load

    return load(vector.resolved(root), num_rows)


def _commit(dataset, operation: str, change: _Change, base=None) -> tuple[int, int]:
    """One commit of ``change`` against ``dataset``'s version (``base``: that version
    with every index column, when read already): its deletion vectors, the files it
    empties, its new files. Returns the version and the size of its index."""
    from .commits import commit_version

    snap = dataset.snapshot
    root = dataset.root
    txn = f"{operation}-{uuid.uuid4().hex}"
    vectors_out = DeletionFileWriter(root, txn)
    deletions, remove, expected = _vectors_after(dataset, change.removed, vectors_out)
    staging = None
    files = []
    try:
        ready = change.staged.take() if change.staged is not None else None
        if ready is not None:
            staging, files = ready
        elif change.written is not None and change.written.num_rows:
            staging, files = _stage(dataset, change.written, txn)
        vectors_out.close()
        version, size = commit_version(
            root, [e for e, _ in files], mode="change", read_version=dataset.version,
            data_schema=snap.data_schema, partitioning=snap.partitioning, txn_id=txn,
            staged=[(p, e.path) for e, p in files], remove=remove, deletions=deletions, expected=expected,
            operation_info={"operation": operation, **change.counts, "removed_files": len(remove)},
            base_snapshot=base)
    except BaseException as exc:
        if not getattr(exc, "outcome_unknown", False):  # (a version that may yet land names its vectors)
            vectors_out.discard()
        raise
    finally:
        if staging is not None and not _remote(root):
            log.remove_tree(staging)
    return version, size


def _vectors_after(dataset, removed: dict, vectors_out: DeletionFileWriter) -> tuple[dict, list, dict]:
    """``(deletions, remove, expected)`` of a commit deleting ``removed`` (``{index row:
    file positions}``): each file's new vector (its deleted rows and these, written to
    ``vectors_out``), the files left without rows, and the vectors they had."""
    snap = dataset.snapshot
    paths, vectors, rows = snap.paths, snap.vectors(), snap.column_values("num_rows")
    deletions, remove, expected = {}, [], {}
    for i, positions in removed.items():
        before = None if vectors[i] is None else _load(vectors[i], dataset.root, int(rows[i]))
        now = union(before, positions)
        expected[paths[i]] = vectors[i]
        if len(now) == int(rows[i]):
            remove.append(paths[i])
        else:
            deletions[paths[i]] = vectors_out.add(now)
    return deletions, remove, expected


def _remote(root: str) -> bool:
    from ..storage import is_remote

    return is_remote(root)


def _stage(dataset, table: pa.Table, txn: str, use_threads: bool = True):
    """Write ``table`` (the dataset's schema) as new data files of the dataset, not yet
    committed: ``(staging directory or None, [(FileEntry, staged path)])``;
    ``use_threads``: the writer's (encoding chunks in parallel)."""
    root = dataset.root
    staging = root if _remote(root) else os.path.join(log.staging_root(root), txn)
    if not _remote(root):
        os.makedirs(staging)
    options: dict = {"use_threads": use_threads}
    hints = None
    snap = dataset.snapshot
    if snap.paths:  # new files keep the indexes the dataset's files have, and start from their encodings
        data_schema = pa.schema([f for f in table.schema if f.name not in snap.partitioning.names])
        last = join_path(root, snap.paths[-1])
        inherited_bitmap_indexes([last], data_schema, options, dataset.column_ids)
        if not _remote(root):  # (another footer read from an object store costs more than sampling saves)
            hints = inherited_hints(last, data_schema, dataset.column_ids)
    writer = FileSetWriter(staging, table.schema, snap.partitioning, prefix=txn.rsplit("-", 1)[-1][:16],
                           target_file_rows=DEFAULT_TARGET_FILE_ROWS, write_options=options, hints=hints)
    try:
        writer.write(table)
        return (None if _remote(root) else staging), writer.close()
    except BaseException:
        writer.abort()
        if not _remote(root):
            log.remove_tree(staging)
        raise


# ------------------------------------------------------------------ the operations
def delete(dataset, filter):
    """Delete the rows matching ``filter`` (see :meth:`Dataset.delete`)."""
    if filter is None:
        raise InvalidOptionError("delete needs a filter (to delete every row, overwrite the dataset)")
    prepare_filter(filter, dataset.schema)  # (a bad filter raises here, before anything is written)

    def plan(ds) -> _Change:
        table, removed = _matched(ds, filter, [])
        return _Change(removed, None, {"rows_deleted": table.num_rows})

    return _retrying(dataset, "delete", plan)


def update(dataset, filter, set):
    """Set columns of the rows matching ``filter`` (see :meth:`Dataset.update`)."""
    if not isinstance(set, dict) or not set:
        raise InvalidOptionError(f"set must be a non-empty dict of column -> value, got {set!r}")
    values = {name: _value(dataset.schema, name, value) for name, value in set.items()}
    prepare_filter(filter, dataset.schema)  # (a bad filter raises here, before anything is written)
    typed_for = dataset.schema

    def plan(ds) -> _Change:
        nonlocal values, typed_for
        if not ds.schema.equals(typed_for):  # planned again on a version of another schema
            values = {name: _value(ds.schema, name, value) for name, value in set.items()}
            typed_for = ds.schema
        table, removed = _matched(ds, filter, None)
        for name, value in values.items():
            i = table.schema.get_field_index(name)
            table = table.set_column(i, table.schema.field(i), _repeat(value, table.num_rows))
        return _Change(removed, table, {"rows_updated": table.num_rows})

    return _retrying(dataset, "update", plan)


def _value(schema: pa.Schema, name, value) -> pa.Scalar:
    """``value`` as a scalar of column ``name``'s type (SchemaError if it is not one)."""
    i = schema.get_field_index(name) if isinstance(name, str) else -1
    if i < 0:
        raise SchemaError(f"update sets unknown column {name!r}; the dataset has {schema.names}")
    field = schema.field(i)
    errors = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError, OverflowError)
    try:
        if isinstance(value, bool) != pa.types.is_boolean(field.type) and not (
                value is None or isinstance(value, pa.Scalar)):
            raise TypeError("bools are the values of bool columns only")
        if isinstance(value, pa.Scalar):
            scalar = value if value.type == field.type else value.cast(field.type, safe=True)
            if scalar.is_valid and scalar.type != value.type and not _cast_exactly(value, scalar.type):
                raise ValueError(f"{value!r} would be stored as {scalar.as_py()!r}")
        else:
            if isinstance(value, (bytes, bytearray, memoryview)) and _textual(field.type) == "string" or \
                    isinstance(value, str) and _textual(field.type) == "binary":
                raise TypeError(f"a {type(value).__name__} is no value of {field.type}")
            if value is not None and pa.types.is_nested(field.type):
                # (pyarrow fills a field it does not find by name with NULL, truncates 1.5 into
                # an int64 element, parses '3'...: the value must come back as it was given)
                scalar = pa.scalar(value, type=field.type)
                if not _same_values(scalar.as_py(), value):
                    raise ValueError(f"{value!r} would be stored as {scalar.as_py()!r}")
                return _checked_null(scalar, name, field)
            try:  # (0 is a value of decimal(15, 2), 1 of float64, whatever type Python gives them)
                scalar = pa.scalar(value, type=field.type)
            except errors:
                inferred = pa.scalar(value)
                if (_textual(inferred.type) is None) != (_textual(field.type) is None):  # (a cast parses or prints)
                    raise TypeError(f"a {type(value).__name__} is no value of {field.type}")
                scalar = inferred.cast(field.type, safe=True)
            if isinstance(value, (int, float, decimal.Decimal)) and not _same_number(scalar.as_py(), value):
                raise ValueError(f"{value!r} would be stored as {scalar.as_py()!r}")
            if isinstance(value, (datetime.date, datetime.time)) and not _same_moment(scalar, value):
                raise ValueError(f"{value!r} would be stored as {scalar.as_py()!r}")
    except errors as exc:
        raise SchemaError(f"update sets column {name!r} ({field.type}) to {value!r}, which is not a value of "
                          f"that type ({exc})") from None
    return _checked_null(scalar, name, field)


def _checked_null(scalar: pa.Scalar, name: str, field: pa.Field) -> pa.Scalar:
    if not scalar.is_valid and not field.nullable:
        raise SchemaError(f"update sets column {name!r}, which is not nullable, to NULL")
    return scalar


def _textual(t: pa.DataType) -> str | None:
    """"string" or "binary" when values of ``t`` are strings or bytes, else None."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) \
            or pa.types.is_binary_view(t):
        return "binary"
    return None


def _same_number(stored, value) -> bool:
    """Whether a number kept its value in the column's type (1.5 in an int64 would not)."""
    if isinstance(value, float) and math.isnan(value):
        return isinstance(stored, float) and math.isnan(stored)
    return stored == value


def _same_moment(stored: pa.Scalar, value) -> bool:
    """Whether a date, time or datetime kept its value in the column's type (a time of
    day in a date column would not, nor 1.5 ms in a timestamp of milliseconds)."""
    t = stored.type
    if pa.types.is_date(t):
        return not isinstance(value, datetime.datetime) or value.time() == datetime.time(0) and value.tzinfo is None
    if pa.types.is_timestamp(t):
        fine = pa.timestamp("us", t.tz)
    elif pa.types.is_time(t):
        fine = pa.time64("us")
    else:
        return True
    return stored.cast(fine) == pa.scalar(value, type=fine)


def _cast_exactly(values, cast_type: pa.DataType) -> bool:
    """Whether ``values`` (an array, or a scalar) cast to ``cast_type`` (a cast Arrow's
    safe mode allowed) keep their values: cast back, they equal what they were (NaN
    equal to NaN); Arrow rounds a double into a decimal without complaint."""
    import pyarrow.compute as pc

    if isinstance(values, pa.Scalar):
        values = pa.array([values.as_py()], values.type) if pa.types.is_nested(values.type) \
            else pa.repeat(values, 1)
    if pa.types.is_dictionary(values.type):  # (no cast back to a dictionary: its values are what counts)
        values = values.cast(values.type.value_type)
    try:
        back = values.cast(cast_type, safe=True).cast(values.type, safe=False)
        if pa.types.is_nested(values.type):  # (no kernel compares them: whole, NaN equal to NaN)
            return back.equals(values) or _same_values(back.to_pylist(), values.to_pylist())
        same = pc.equal(back, values)
        if pa.types.is_floating(values.type):
            same = pc.or_kleene(same, pc.and_(pc.is_nan(back), pc.is_nan(values)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        # not cast back or compared: the values as Python objects (a timestamp cast to a
        # time of day, which cannot be cast back, is no longer a datetime)
        try:
            return _same_values(values.cast(cast_type, safe=True).to_pylist(), values.to_pylist())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return True  # (the cast the caller made is the check)
        except (OverflowError, ValueError):  # (values Python cannot hold: past year 9999)
            return False
    return pc.all(same).as_py() is not False


def _same_values(a, b) -> bool:
    """Whether Python value ``a`` (what Arrow holds) is ``b`` (what was given), at any
    depth: numbers by value (NaN equal to NaN, a bool only a bool), a map's pairs as a
    dict's items, other values of the same type and equal."""
    if isinstance(b, np.ndarray):
        b = b.tolist()
    if isinstance(a, (list, tuple)) and isinstance(b, dict):
        b = list(b.items())
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_values(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_values(a[k], b[k]) for k in a)
    numbers = (int, float, decimal.Decimal, np.number)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, (bool, np.bool_)) \
            and not isinstance(b, (bool, np.bool_)):
        if isinstance(a, float) and isinstance(b, (float, np.floating)) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    return type(a) is type(b) and a == b


def _fits_shape(given: pa.DataType, column: pa.DataType) -> bool:
    """Whether values of type ``given`` are values of nested type ``column`` once cast:
    the same kinds (any list into any list) and field names (a cast fills struct fields
    it does not find by name with NULL, and drops others), leaves of the same family (no
    string parsed into a number, no bool taken for 1; a NULL-typed leaf, of an empty or
    all-NULL list, fits)."""
    if pa.types.is_dictionary(given):
        given = given.value_type
    if pa.types.is_null(given):
        return True
    if _listlike(column):
        return _listlike(given) and _fits_shape(given.value_type, column.value_type)
    if pa.types.is_struct(column):
        return pa.types.is_struct(given) and [f.name for f in given] == [f.name for f in column] \
            and all(_fits_shape(g.type, c.type) for g, c in zip(given, column))
    if pa.types.is_map(column):
        return pa.types.is_map(given) and _fits_shape(given.key_type, column.key_type) \
            and _fits_shape(given.item_type, column.item_type)
    if pa.types.is_nested(column) or pa.types.is_nested(given) or isinstance(column, pa.BaseExtensionType):
        return same_type(given, column)
    return _textual(given) == _textual(column) and pa.types.is_boolean(given) == pa.types.is_boolean(column) \
        and pa.types.is_temporal(given) == pa.types.is_temporal(column)


def _listlike(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _repeat(value: pa.Scalar, n: int) -> pa.Array:
    if not value.is_valid:
        return pa.nulls(n, value.type)
    if not n:  # (pa.repeat of no row raises for lists and maps)
        return pa.array([], value.type)
    return pa.repeat(value, n)


def merge(dataset, source, on, when_matched="update", when_not_matched="insert"):
    """Upsert ``source`` into the dataset by the keys ``on`` (see :meth:`Dataset.merge`)."""
    from ..interop.arrow import batches_and_schema

    if when_matched not in ("update", "delete", None):
        raise InvalidOptionError(f"when_matched must be 'update', 'delete' or None, got {when_matched!r}")
    if when_not_matched not in ("insert", None):
        raise InvalidOptionError(f"when_not_matched must be 'insert' or None, got {when_not_matched!r}")
    keys = option_names(on, "on") if on is not None else []
    if not keys or not all(isinstance(k, str) for k in keys) or len(set(keys)) != len(keys):
        raise InvalidOptionError(f"on must name one or more distinct key columns, got {on!r}")
    schema, tables = batches_and_schema(source, "merge")
    tables = list(tables)
    given = tables[0] if len(tables) == 1 else pa.concat_tables(tables) if tables else schema.empty_table()
    upsert = when_matched == "update" and when_not_matched == "insert"
    first = _MergeSource(given, dataset.schema, keys, when_matched)
    # an upsert of a source with every column writes each source row, matched or not: its
    # files are written while the target is scanned for the matches
    prestaged = staged_rows = None
    if upsert and not first.lacking and first.src.num_rows:
        staged_rows = _full_rows(first.src, first.schema)
        prestaged = _Prestaged(dataset, staged_rows, f"merge-{uuid.uuid4().hex}")
    prepared = first

    def plan(ds) -> _Change:
        nonlocal prepared
        if not ds.schema.equals(prepared.schema):  # planned again on a version of another schema
            prepared = _MergeSource(given, ds.schema, keys, when_matched)
        src, keyed, schema, wanted = prepared.src, prepared.keyed, prepared.schema, prepared.wanted
        position = free_position_name(schema.names)  # (a column may be named _row_position)
        if not keyed.num_rows:
            target = pa.table({**{c: pa.array([], schema.field(c).type) for c in wanted},
                               position: pa.array([], pa.int64())})
        else:
            target = ds.read(wanted, prepared.candidates, with_row_position=position)
        target = target.append_column(_TARGET_ROW, pa.array(np.arange(target.num_rows, dtype=np.int64)))
        t_rows, s_rows = _matches(target, keyed, keys)
        t_rows = pa.array(t_rows)
        removed, written, counts = {}, [], {"rows_updated": 0, "rows_deleted": 0, "rows_inserted": 0}
        if prestaged is not None and prepared is first and len(np.unique(s_rows)) == len(s_rows):
            # (each source row written once: right unless a source row matched several target rows)
            removed = _by_file(ds, np.asarray(target.column(position).take(t_rows))) if len(t_rows) else {}
            counts.update(rows_updated=len(t_rows), rows_inserted=src.num_rows - len(t_rows))
            return _Change(removed, staged_rows, counts, prestaged)
        if when_matched is not None and len(t_rows):
            removed = _by_file(ds, np.asarray(target.column(position).take(t_rows)))
            if when_matched == "update":  # the source's row, with the target's values of what it lacks
                at = pa.array(s_rows)
                written.append(pa.Table.from_arrays(
                    [src.column(f.name).take(at) if f.name in src.column_names else target.column(f.name).take(t_rows)
                     for f in schema], schema=schema))
                counts["rows_updated"] = len(t_rows)
            else:
                counts["rows_deleted"] = len(t_rows)
        if when_not_matched == "insert":
            new = np.ones(src.num_rows, bool)
            new[s_rows] = False
            if new.any():
                written.append(_full_rows(src.filter(pa.array(new)), schema))
                counts["rows_inserted"] = int(new.sum())
        table = pa.concat_tables(written) if written else None
        return _Change(removed, table, counts)

    if prestaged is None:
        return _retrying(dataset, "merge", plan)
    try:
        return _retrying(dataset, "merge", plan, prestaged)
    finally:
        prestaged.discard()


class _MergeSource:
    """A merge's source prepared against one version's ``schema``: ``src`` (conformed to
    its types, with ``_SOURCE_ROW``), ``keyed`` (its rows whose keys are not NULL:
    distinct, else InvalidDataError), ``candidates`` (a filter on the keys that skips to
    the target rows that may match), ``lacking`` (the columns the source lacks, which an
    update keeps from the target) and ``wanted`` (the target columns a match reads)."""

    def __init__(self, given: pa.Table, schema: pa.Schema, keys: list, when_matched):
        import pyarrow.compute as pc

        from ..predicate.expr import col

        self.schema = schema
        src = _conformed_source(given, schema, keys)
        present = np.ones(src.num_rows, bool)
        for k in keys:
            present &= ~np.asarray(src.column(k).is_null().to_numpy(zero_copy_only=False), bool)
        every = bool(present.all())
        keyed = src if every else src.filter(pa.array(present))  # (a NULL key matches nothing: SQL equality)
        if keyed.num_rows:
            counts = _keys_alike(keyed, keys).group_by(keys).aggregate([([], "count_all")])
            dup = counts.filter(pc.greater(counts.column("count_all"), 1))
            if dup.num_rows:
                example = {k: dup.column(k)[0].as_py() for k in keys}
                raise InvalidDataError(f"merge source holds {dup.num_rows} key(s) more than once (e.g. {example}): "
                                       f"each target row must match at most one source row")
        self.src = src.append_column(_SOURCE_ROW, pa.array(np.arange(src.num_rows, dtype=np.int64)))
        self.keyed = keyed = self.src if every else self.src.filter(pa.array(present))
        self.candidates = None
        for k in keys:  # the target rows that may match, found by skipping on the keys
            leaf = _key_leaf(col(k), keyed.column(k)) if keyed.num_rows else None
            if leaf is not None:
                self.candidates = leaf if self.candidates is None else self.candidates & leaf
        self.lacking = [f.name for f in schema if f.name not in src.column_names] if when_matched == "update" else []
        self.wanted = keys + [c for c in self.lacking if c not in keys]


def _matches(target: pa.Table, keyed: pa.Table, keys: list) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of ``target`` rows (``_TARGET_ROW``) and source rows (``keyed``'s
    ``_SOURCE_ROW``, keys distinct and not NULL) whose keys are equal, as two int64
    arrays: by a search of the sorted source keys for one integer key, else a hash join."""
    if len(keys) == 1 and pa.types.is_integer(keyed.schema.field(keys[0]).type) \
            and target.column(keys[0]).null_count == 0:
        source = np.asarray(keyed.column(keys[0]).to_numpy())
        wanted = np.asarray(target.column(keys[0]).to_numpy())
        order = np.argsort(source, kind="stable")
        ordered = source[order]
        at = np.minimum(np.searchsorted(ordered, wanted), max(len(ordered) - 1, 0))
        hit = ordered[at] == wanted if len(ordered) else np.zeros(len(wanted), bool)
        t_rows = np.asarray(target.column(_TARGET_ROW).to_numpy(), np.int64)[hit]
        s_rows = np.asarray(keyed.column(_SOURCE_ROW).to_numpy(), np.int64)[order[at[hit]]]
        return t_rows, s_rows
    pairs = _keys_alike(target.select([*keys, _TARGET_ROW]), keys).join(
        _keys_alike(keyed.select([*keys, _SOURCE_ROW]), keys), keys, join_type="inner", use_threads=False)
    return (np.asarray(pairs.column(_TARGET_ROW).to_numpy(), np.int64),
            np.asarray(pairs.column(_SOURCE_ROW).to_numpy(), np.int64))


def _key_leaf(column, keys: pa.ChunkedArray):
    """``column.isin(the distinct keys)``, temporal keys as Arrow scalars (Python's dates
    and datetimes stop at years 1-9999, which Arrow's do not; other keys as Python values,
    which isin takes without a check per integer), or None where the keys cannot
    be literals (an int64-minimum nanosecond instant: numpy's NaT; the merge then reads
    every target row's key)."""
    import pyarrow.compute as pc

    t = keys.type
    if (pa.types.is_timestamp(t) or pa.types.is_duration(t)) and t.unit == "ns" and keys.null_count < len(keys) \
            and pc.min(keys.cast(pa.int64())).as_py() == -(1 << 63):
        return None
    try:
        distinct = pc.unique(keys)
        return column.isin(distinct if pa.types.is_temporal(t) else distinct.to_pylist())
    except pa.ArrowNotImplementedError:  # (decimal32 and decimal64: no kernel)
        return column.isin(list(dict.fromkeys(keys.to_pylist())))


def _keys_alike(table: pa.Table, keys: list) -> pa.Table:
    """``table`` with -0.0 made +0.0 and every NaN one NaN (whatever its sign and
    payload) in its floating-point key columns: keys SQL equality holds equal (as ``==``
    and ``isin`` compare them) then hash and group alike -- Arrow's hash join and
    group_by compare floats by their bits. NULLs stay NULL; NaN keys equal each other,
    as ``isin`` takes them."""
    for k in keys:
        column = table.column(k)
        if not pa.types.is_floating(column.type) or not len(column):
            continue
        arr = column.combine_chunks()
        values = np.asarray(arr.to_numpy(zero_copy_only=False))
        zero = values.dtype.type(0)
        mask = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), bool) if arr.null_count else None
        values = np.where(np.isnan(values), values.dtype.type(np.nan), values + zero)  # (-0.0 + 0.0 is +0.0)
        table = table.set_column(table.schema.get_field_index(k), k, pa.array(values, type=arr.type, mask=mask))
    return table


def _conformed_source(src: pa.Table, schema: pa.Schema, keys: list) -> pa.Table:
    """The merge source's columns in the dataset's types; SchemaError for a key or a
    column the dataset lacks, or a value its type cannot hold."""
    for k in keys:
        if schema.get_field_index(k) < 0:
            raise SchemaError(f"merge key {k!r} is not a column of the dataset ({schema.names})")
        if src.schema.get_field_index(k) < 0:
            raise SchemaError(f"merge key {k!r} is not a column of the source ({src.schema.names})")
        if pa.types.is_nested(schema.field(k).type):
            raise SchemaError(f"merge key {k!r} is {schema.field(k).type}: keys are columns of scalar types")
    arrays, fields = [], []
    for name in src.column_names:
        i = schema.get_field_index(name)
        if i < 0:
            raise SchemaError(f"merge source column {name!r} is not a column of the dataset ({schema.names}); "
                              f"add it with Dataset.evolve first")
        field = schema.field(i)
        column = src.column(name)
        if not same_type(column.type, field.type):
            if not _fits_shape(column.type, field.type):  # (a cast would parse '3', take True for 1, ...)
                raise SchemaError(f"merge source column {name!r} is {column.type}, the dataset's is {field.type}: "
                                  f"values are merged into the same kinds of values (and nested ones into the "
                                  f"same fields)")
            try:
                cast = column.cast(field.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(f"merge source column {name!r} is {column.type}, the dataset's is {field.type} "
                                  f"({exc})") from None
            if not _cast_exactly(column, field.type):
                raise SchemaError(f"merge source column {name!r} is {column.type}, the dataset's is {field.type}, "
                                  f"which cannot hold every value it holds exactly")
            column = cast
        if column.null_count and not field.nullable:
            raise SchemaError(f"merge source column {name!r} holds NULLs; the dataset's column is not nullable")
        arrays.append(column)
        fields.append(field)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _full_rows(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """Source rows to insert, with every column of the dataset (NULL where the source
    lacks one; SchemaError when that column is not nullable)."""
    arrays = []
    for field in schema:
        if rows.schema.get_field_index(field.name) >= 0:
            arrays.append(rows.column(field.name))
        elif field.nullable:
            arrays.append(pa.nulls(rows.num_rows, field.type))
        else:
            raise SchemaError(f"merge inserts rows without column {field.name!r}, which is not nullable")
    return pa.Table.from_arrays(arrays, schema=schema)


# ------------------------------------------------------------------ for callers committing their own change
def deletion_change(dataset, filter, vectors_out: DeletionFileWriter) -> tuple[int, dict, list, dict]:
    """The deletion of the rows of ``dataset`` (its version) matching ``filter``, for a
    caller that commits it with rows of its own (mode "change" of
    :func:`~rcfmt.dataset.commits.commit_version`; the Spark source's replaceWhere):
    ``(rows deleted, deletions, remove, expected)`` -- the commit's ``deletions=``,
    ``remove=`` and ``expected=`` arguments. New vectors go to ``vectors_out``, which
    the caller closes before the commit and discards if it fails. No retry here: on a
    conflict the caller plans again or gives up."""
    table, removed = _matched(dataset, filter, [])
    return (table.num_rows, *_vectors_after(dataset, removed, vectors_out))
