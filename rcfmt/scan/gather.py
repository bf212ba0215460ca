"""Decoded column data at chosen positions: the filter columns' rows a filter selected
(the executor decoded them at the candidate rows), and an empty column."""
from __future__ import annotations

import numpy as np

from .._native import varbinary as _vb
from ..encodings.base import ColumnValues
from ..schema.types import PhysicalKind
from ..schema.values import ColumnData

__all__ = ["empty_values", "gather_data", "gather_values"]


def gather_values(values: ColumnValues, idx: np.ndarray) -> ColumnValues:
    """The values at positions ``idx`` (fixed width, or strings/binary with offsets)."""
    if values.offsets is None:
        return ColumnValues(values.values[idx])
    offsets = np.ascontiguousarray(values.offsets, dtype=np.int64)
    new_offsets, data = _vb.gather(offsets, values.values, idx)
    return ColumnValues(data, new_offsets)


def gather_data(data: ColumnData, idx: np.ndarray) -> ColumnData:
    """A column's decoded data (values or codes, validity, pushed mask) at positions ``idx``."""
    valid = None if data.valid is None else data.valid[idx]
    if valid is not None and valid.all():
        valid = None
    pushed = None if data.pushed is None else (data.pushed[0][idx], data.pushed[1])
    if data.codes is not None:
        return ColumnData(data.ltype, None, valid, data.codes[idx], data.dictionary, pushed)
    return ColumnData(data.ltype, gather_values(data.values, idx), valid, pushed=pushed)


def empty_values(ltype) -> ColumnValues:
    """No values of ``ltype`` (a chunk none of whose rows is read)."""
    if ltype.kind == PhysicalKind.VARBINARY:
        return ColumnValues(np.empty(0, np.uint8), np.zeros(1, np.int64))
    return ColumnValues(np.empty(0, ltype.numpy_dtype))
