"""Rows by position: what ``take`` is asked for, checked, and how it is laid out.

A row's position is its 0-based number in a file (blocks in order) or in a dataset
version (files in index order). ``take`` reads the distinct positions it is given in
ascending order -- each block's as one more row selection intersected into its
candidates (:class:`~rcfmt.scan.scanner.FileScan` ``rows=``) -- and puts the rows back in
the order asked for, repeats included, with one Arrow ``take`` at the end.

:data:`ROW_POSITION` names the int64 column ``with_row_position=True`` adds to what a scan
returns (``with_row_position="name"``: a column of that name): each row's position,
file-relative for files, dataset-relative for datasets.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from ..errors import InvalidOptionError, RowIndexError, SchemaError
from ..schema.arrow_io import int64_array, take

__all__ = ["ROW_POSITION", "Positions", "check_positions", "by_unit", "reorder", "row_position_field",
           "check_no_position_column", "position_name", "free_position_name"]

#: the column ``with_row_position=True`` adds
ROW_POSITION = "_row_position"

_I64 = np.dtype(np.int64)


def row_position_field(name: str = ROW_POSITION) -> pa.Field:
    return pa.field(name, pa.int64(), nullable=False)


def position_name(value) -> str | None:
    """``with_row_position``, checked: the name of the positions' column (True:
    :data:`ROW_POSITION`; a string: itself), or None for False (InvalidOptionError otherwise)."""
    if isinstance(value, (bool, np.bool_)):
        return ROW_POSITION if value else None
    if isinstance(value, str) and value:
        return value
    raise InvalidOptionError(f"with_row_position must be True, False or a column name, got {value!r}")


def free_position_name(names) -> str:
    """A name for positions taken internally that no column of ``names`` has."""
    name = ROW_POSITION
    while name in names:
        name = "_" + name
    return name


def check_no_position_column(names, name: str = ROW_POSITION) -> None:
    """SchemaError when a column returned is named ``name`` (the row positions asked for
    would shadow it)."""
    if name in names:
        raise SchemaError(f"with_row_position adds a column {name!r}, and the columns read include one of that "
                          f"name: name the positions otherwise (with_row_position='pos'), or leave that column out")


class Positions(NamedTuple):
    """Positions asked for, checked: ``rows`` the distinct ones in ascending order (int64),
    ``order`` where each asked position stands in ``rows`` (None: ``rows`` is what was
    asked, in order), ``count`` how many were asked."""

    rows: np.ndarray
    order: np.ndarray | None
    count: int


def check_positions(indices, num_rows: int) -> Positions:
    """``indices`` (a list, numpy array, pyarrow array or any integer array-like) checked
    against ``num_rows`` rows before anything is read: non-integers, NULLs and more than
    one dimension are an :class:`InvalidOptionError`, a position below 0 or at or past
    ``num_rows`` a :class:`RowIndexError` (no wrap-around), each naming the first bad one."""
    arr = _as_array(indices)
    if arr.size == 0:
        return Positions(np.empty(0, _I64), None, 0)
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
        big = arr > np.uint64(np.iinfo(_I64).max)
        if big.any():
            i = int(np.argmax(big))
            raise _out_of_range(int(arr[i]), i, num_rows)
    arr = arr.astype(_I64, copy=False)
    bad = (arr < 0) | (arr >= num_rows)
    if bad.any():
        i = int(np.argmax(bad))
        raise _out_of_range(int(arr[i]), i, num_rows)
    if arr.size == 1 or bool((arr[1:] > arr[:-1]).all()):  # ascending and distinct: read as asked
        return Positions(np.ascontiguousarray(arr), None, int(arr.size))
    rows, order = np.unique(arr, return_inverse=True)
    return Positions(rows, order.astype(_I64, copy=False), int(arr.size))


def _out_of_range(position: int, index: int, num_rows: int) -> RowIndexError:
    return RowIndexError(f"row position {position} (at index {index} of the positions given) is out of range for "
                         f"{num_rows} rows (positions are 0 .. {num_rows - 1}; negative ones do not count from the end)",
                         position=position, index=index)


def _as_array(indices) -> np.ndarray:
    """``indices`` as a one-dimensional numpy integer array (not yet range-checked)."""
    if isinstance(indices, (pa.Array, pa.ChunkedArray)):
        if len(indices) == 0:  # (no position, whatever its type: an empty list converts to nulls)
            return np.empty(0, _I64)
        if indices.null_count:
            nulls = np.asarray(indices.is_null())
            raise InvalidOptionError(f"row positions must not be NULL: the position at index "
                                     f"{int(np.argmax(nulls))} is NULL")
        if not pa.types.is_integer(indices.type):
            raise InvalidOptionError(f"row positions must be integers, got an array of {indices.type}")
        return np.asarray(indices.to_numpy() if isinstance(indices, pa.ChunkedArray) else
                          indices.to_numpy(zero_copy_only=False))
    if isinstance(indices, (str, bytes, dict, set, frozenset)) or np.isscalar(indices) or indices is None or not (
            isinstance(indices, Sequence) or hasattr(indices, "__array__") or hasattr(indices, "__arrow_c_array__")):
        raise InvalidOptionError(f"row positions must be an array-like of integers (a list, a range, a numpy or "
                                 f"Arrow array), got {type(indices).__name__}")
    if (hasattr(indices, "__arrow_c_array__") or type(indices).__module__.startswith(("pandas", "polars"))) \
            and not isinstance(indices, np.ndarray):  # (their NULLs: Arrow's)
        try:
            converted = pa.array(indices)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
            raise InvalidOptionError(f"row positions must be an array-like of integers ({exc})") from None
        return _as_array(converted)
    # (numpy would turn bools mixed with ints into ints, and int64 with uint64 scalars into floats:
    # a list of anything but Python ints is checked value by value)
    mixed = isinstance(indices, (list, tuple)) and bool(set(map(type, indices)) - {int})
    try:
        arr = np.asarray(indices, dtype=object if mixed else None)
    except (ValueError, TypeError) as exc:
        raise InvalidOptionError(f"row positions must be an array-like of integers ({exc})") from None
    if arr.ndim != 1:
        if arr.ndim == 0 or arr.size:
            raise InvalidOptionError(f"row positions must be one-dimensional, got shape {arr.shape}")
        arr = arr.reshape(0)
    if arr.size == 0:
        return np.empty(0, _I64)
    if arr.dtype.kind in "iu":
        return arr
    if arr.dtype == object:  # a list holding None or mixed values
        for i, v in enumerate(arr.tolist()):
            if v is None:
                raise InvalidOptionError(f"row positions must not be NULL: the position at index {i} is None")
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise InvalidOptionError(f"row positions must be integers: the position at index {i} is {v!r}")
        values = [int(v) for v in arr.tolist()]
        try:
            return np.array(values, dtype=_I64)
        except OverflowError:  # (a Python int past int64: out of range whatever it is)
            big = [i for i, v in enumerate(values) if not -2**63 <= v < 2**63][0]
            raise RowIndexError(f"row position {arr[big]} (at index {big} of the positions given) is out of range",
                                position=int(arr[big]), index=big) from None
    first = arr.tolist()[0]
    raise InvalidOptionError(f"row positions must be integers, got {arr.dtype} (the position at index 0 is "
                             f"{first!r})")


def by_unit(rows: np.ndarray, unit_rows) -> dict[int, np.ndarray]:
    """``{unit: its positions, relative to its first row}`` of ascending ``rows`` over
    units (blocks of a file, files of a dataset) of ``unit_rows`` rows each, in order;
    units holding none are left out."""
    ends = np.cumsum(np.asarray(unit_rows, _I64))
    if rows.size == 0:
        return {}
    unit = np.searchsorted(ends, rows, side="right")
    cuts = np.flatnonzero(unit[1:] != unit[:-1]) + 1
    starts = ends - np.asarray(unit_rows, _I64)
    out = {}
    for lo, hi in zip(np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [rows.size])).tolist()):
        u = int(unit[lo])
        out[u] = rows[lo:hi] - starts[u]
    return out


def reorder(table: pa.Table, positions: Positions) -> pa.Table:
    """``table`` (the rows of ``positions.rows``, in that order) in the order asked for."""
    if positions.order is None:
        return table
    if table.num_columns == 0:
        return pa.table({"_": pa.nulls(positions.count)}, metadata=table.schema.metadata).select([])
    return take(table, int64_array(positions.order))
