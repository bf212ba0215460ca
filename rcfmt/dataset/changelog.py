"""Incremental index versions: a version records what changed, a checkpoint the whole.

A dataset version is either a **checkpoint** (the complete index, one row per data
file: every version written before this module, and every version a writer chooses to
make one) or a **changes** version: the index rows it adds or replaces and the paths it
removes, relative to its parent. A changes version names the checkpoint its chain starts
from and the **runs** that hold the changes between that checkpoint and its parent, so a
reader loads a version with one read of each object it needs: the version, its runs and
its checkpoint (docs/DATASET.md §4.2).

Runs are merged as the chain grows, like the levels of a log-structured merge tree:
when the last :data:`MERGE_FANOUT` runs of a chain have the same level, the writer of
the next version merges them into one run of the next level (an object under
``_rcfmt/runs/``), so a chain of ``k`` versions is read from at most
``(MERGE_FANOUT - 1) * log_F(k) + 2`` objects. When the rows a chain changes reach the
checkpoint's own size (and :data:`CHECKPOINT_MIN_ROWS`), the next version is a
checkpoint again: checkpoints grow geometrically, so all of them together are at most
about twice the last one.

The bytes of a changes version or a run are an rcfmt file of one row: column ``rows``
holds an Arrow IPC stream of the index rows (the index schema of the version that wrote
it), column ``removed`` the removed paths. An index row has a hundred or more columns
(seven per data column); as rcfmt columns each would carry its footer entry, as one
IPC stream they cost a few bytes each and the page is compressed whole.

Semantics of a change ``(rows, removed)`` applied to a table ``S``: the rows of ``S``
whose path is removed go; a row of ``S`` whose path ``rows`` holds is replaced in place
(a new deletion vector); the rows of ``rows`` whose path ``S`` lacks are appended in
order. Data file names are never reused, so a removed path never comes back and a
change never both removes and holds a path.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..runtime.records import record
from ..errors import CorruptFileError

__all__ = ["Change", "CHANGES", "CHECKPOINT", "RUN", "RUNS_DIR", "MERGE_FANOUT", "CHECKPOINT_MIN_ROWS",
           "change_table", "read_change", "combine", "apply_order", "layout_of", "run_name", "runs_of", "runs_json"]

#: ``layout`` of an index version or object (info key); versions without it are checkpoints
CHECKPOINT = "checkpoint"
CHANGES = "changes"
RUN = "run"
#: the dataset format version of a changes version or run (readers of 2 and below refuse)
CHANGES_FORMAT_VERSION = 3
#: runs of one level merged into one of the next
MERGE_FANOUT = 16
#: a chain changes at least this many index rows before the next version is a checkpoint
CHECKPOINT_MIN_ROWS = 256
#: ... and at least this fraction of its checkpoint's rows
CHECKPOINT_FRACTION = 1.0
#: merged runs live in ``_rcfmt/runs/``
RUNS_DIR = "runs"

_CHANGE_SCHEMA = pa.schema([pa.field("rows", pa.large_binary(), nullable=False),
                            pa.field("removed", pa.list_(pa.string()), nullable=False)])


@record(frozen=True)
class Change:
    """Index rows added or replaced (``rows``, a table under some index schema) and the
    paths removed (``removed``, a string array), relative to the table they apply to."""

    rows: pa.Table
    removed: pa.Array

    @property
    def size(self) -> int:
        """Index rows this change touches (rows held plus paths removed)."""
        return self.rows.num_rows + len(self.removed)


def runs_of(info: dict) -> list[dict]:
    """The runs a changes version's info lists, as ``{"path", "size", "first", "last",
    "level"}`` (``path`` relative to the root). They are stored compactly (an entry per
    run, in a version that may list dozens): ``[first, last, 0, size]`` for a version's
    own changes (``_rcfmt/v<first>.rcfmt``), ``[first, last, level, size, name]`` for a
    merged run (``_rcfmt/runs/<name>``). ValueError if malformed."""
    out = []
    for entry in info["runs"]:
        if not isinstance(entry, list) or len(entry) not in (4, 5) or not all(type(x) is int for x in entry[:4]):
            raise ValueError(f"malformed run entry {entry!r}")
        first, last, level, size = entry[:4]
        if len(entry) == 4:
            if level != 0 or first != last:
                raise ValueError(f"run entry {entry!r} names no merged run but is not one version")
            path = f"_rcfmt/v{first:020d}.rcfmt"
        else:
            if level < 1 or not isinstance(entry[4], str):
                raise ValueError(f"malformed run entry {entry!r}")
            path = f"_rcfmt/{RUNS_DIR}/{entry[4]}"
        out.append({"path": path, "size": size, "first": first, "last": last, "level": level})
    return out


def runs_json(runs: list[dict]) -> list:
    """``runs`` (as :func:`runs_of` gives them) in their stored form."""
    return [[r["first"], r["last"], r["level"], r["size"]] if r["level"] == 0 else
            [r["first"], r["last"], r["level"], r["size"], r["path"].rsplit("/", 1)[-1]] for r in runs]


def layout_of(info: dict) -> str:
    return info.get("layout", CHECKPOINT)


def run_name(first: int, last: int, txn: str) -> str:
    """The name (under ``_rcfmt/runs/``) of a run of versions ``first..last``."""
    return f"r{first:020d}-{last:020d}-{txn}.rcfmt"


def change_table(change: Change) -> pa.Table:
    """The one-row rcfmt table that stores ``change``."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, change.rows.schema) as w:
        w.write_table(change.rows)
    removed = change.removed.cast(pa.string()) if len(change.removed) else pa.array([], pa.string())
    return pa.Table.from_arrays(
        [pa.array([sink.getvalue().to_pybytes()], pa.large_binary()),
         pa.ListArray.from_arrays(pa.array([0, len(removed)], pa.int32()), removed)],
        schema=_CHANGE_SCHEMA)


def read_change(table: pa.Table, path: str) -> Change:
    """The change a one-row table read from a changes version or run holds
    (CorruptFileError if it is not one)."""
    if (table.num_rows != 1 or table.schema.get_field_index("rows") < 0
            or table.schema.get_field_index("removed") < 0):
        raise CorruptFileError("a changes object must have one row with columns 'rows' and 'removed'", path=path)
    rows_col, removed_col = table.column("rows"), table.column("removed")
    if not (pa.types.is_binary(rows_col.type) or pa.types.is_large_binary(rows_col.type)) or not (
            pa.types.is_list(removed_col.type) and pa.types.is_string(removed_col.type.value_type)):
        raise CorruptFileError("a changes object's columns are not binary 'rows' and list<string> 'removed'",
                               path=path)
    raw, removed = rows_col[0].as_py(), removed_col[0].values
    if raw is None or removed is None:
        raise CorruptFileError("a changes object holds NULL", path=path)
    try:
        rows = pa.ipc.open_stream(pa.py_buffer(raw)).read_all()
        rows.validate(full=True)
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise CorruptFileError(f"a changes object's rows are not a valid Arrow IPC stream ({exc})",
                               path=path) from None
    if rows.schema.get_field_index("path") < 0 or not pa.types.is_string(rows.schema.field("path").type):
        raise CorruptFileError("a changes object's rows lack the string column 'path'", path=path)
    removed = removed.combine_chunks() if isinstance(removed, pa.ChunkedArray) else removed
    if removed.null_count or rows.column("path").null_count:
        raise CorruptFileError("a changes object names a NULL path", path=path)
    paths = rows.column("path").to_pylist()
    if len(set(paths)) != len(paths):
        raise CorruptFileError("a changes object holds two rows of one path", path=path)
    if set(paths) & set(removed.to_pylist()):
        raise CorruptFileError("a changes object both holds and removes a path", path=path)
    return Change(rows, removed)


def combine(changes: list[Change]) -> Change:
    """One change equal to applying ``changes`` (their rows under one index schema) in
    order. A path keeps the place of its first row and the content of its last; a removed
    path keeps no row."""
    import pyarrow.compute as pc

    if len(changes) == 1:
        return changes[0]
    removed = pa.chunked_array([c.removed for c in changes], pa.string()).combine_chunks()
    rows = pa.concat_tables([c.rows for c in changes]).combine_chunks()
    paths = rows.column("path").to_pylist()
    last = {p: i for i, p in enumerate(paths)}  # (in order of first appearance)
    if len(last) != len(paths):  # a later row of a path replaces the earlier one, in its place
        rows = rows.take(pa.array(list(last.values()), pa.int64()))
    if len(removed):
        rows = rows.filter(pc.invert(pc.is_in(rows.column("path"), value_set=removed)))
        removed = pc.unique(removed)
    return Change(rows, removed)


def apply_order(base_paths: pa.Array, change: Change) -> np.ndarray:
    """Row indices into ``concat(base rows, change.rows)`` that make the table ``change``
    turns the base into (see the module docstring)."""
    import pyarrow.compute as pc

    n = len(base_paths)
    delta_paths = change.rows.column("path").combine_chunks()
    replaced = pc.index_in(base_paths, value_set=delta_paths)  # per base row: its new row, or NULL
    keep = np.ones(n, bool)
    if len(change.removed):
        keep &= ~np.asarray(pc.is_in(base_paths, value_set=change.removed).to_numpy(zero_copy_only=False), bool)
    where = np.arange(n, dtype=np.int64)
    has = np.asarray(replaced.is_valid().to_numpy(zero_copy_only=False), bool)
    if has.any():
        where[has] = n + np.asarray(replaced.filter(replaced.is_valid()).to_numpy(), np.int64)
    added = ~np.asarray(pc.is_in(delta_paths, value_set=base_paths).to_numpy(zero_copy_only=False), bool)
    return np.concatenate([where[keep], n + np.flatnonzero(added)]).astype(np.int64)
