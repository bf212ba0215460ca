"""Min/max slots: how a statistics value is stored in a fixed-width record slot.

A column's slots are ``stat_width`` bytes: the storage width for FIXED columns (the
value's little-endian bytes; decimal128 as 16-byte two's complement), 1 for BOOL, and
the truncation length for VARBINARY (the bound's bytes, zero-padded; the record's
``min_len``/``max_len`` give the real length).
"""
from __future__ import annotations

import numpy as np

from ..schema.statistics import ColumnStats, StatsArrays
from ..schema.types import LogicalType, PhysicalKind
from .layout import STATS_HAS_MIN_MAX, STATS_MAX_EXACT, STATS_MIN_EXACT

__all__ = ["stat_width", "encode_slots", "fill_slots", "stats_arrays"]

DEFAULT_TRUNCATE = 32


def stat_width(ltype: LogicalType, truncate: int = DEFAULT_TRUNCATE) -> int:
    return truncate if ltype.kind == PhysicalKind.VARBINARY else ltype.width


def _slot(value, ltype: LogicalType, width: int) -> bytes:
    if ltype.kind == PhysicalKind.VARBINARY:
        return bytes(value).ljust(width, b"\0")
    if ltype.name == "decimal128":
        return int(value).to_bytes(16, "little", signed=True)
    return np.asarray(value, dtype=ltype.numpy_dtype).tobytes()


def encode_slots(stats: ColumnStats, ltype: LogicalType, width: int) -> dict:
    """Record fields (stats_flags, min_len, max_len, min, max) for ``stats``."""
    if not stats.has_min_max:
        return {"stats_flags": 0, "min_len": 0, "max_len": 0, "min": b"\0" * width, "max": b"\0" * width}
    flags = STATS_HAS_MIN_MAX
    flags |= STATS_MIN_EXACT if stats.min_exact else 0
    flags |= STATS_MAX_EXACT if stats.max_exact else 0
    var = ltype.kind == PhysicalKind.VARBINARY
    return {
        "stats_flags": flags,
        "min_len": len(stats.min) if var else width,
        "max_len": len(stats.max) if var else width,
        "min": _slot(stats.min, ltype, width),
        "max": _slot(stats.max, ltype, width),
    }


def fill_slots(records: np.ndarray, stats: StatsArrays, ltype: LogicalType, width: int) -> None:
    """Set the statistics fields of ``records[k]`` from unit ``k`` of ``stats``, as
    :func:`encode_slots` encodes them: numeric arrays (decimal128 as int64 low words
    when they fit) in a few vectorized passes, strings and wide decimals unit by unit."""
    if not len(stats):
        return
    decimal64 = ltype.name == "decimal128" and stats.min.dtype == np.int64  # low words
    if ltype.kind != PhysicalKind.VARBINARY and ((ltype.name == "decimal128" and not decimal64)
                                                 or stats.min.dtype == object):
        for k, record in enumerate(records):
            for key, value in encode_slots(stats.unit(k), ltype, width).items():
                record[key] = value
        return
    has = stats.has_min_max
    records["stats_flags"] = np.where(has, STATS_HAS_MIN_MAX | np.where(stats.min_exact, STATS_MIN_EXACT, 0)
                                      | np.where(stats.max_exact, STATS_MAX_EXACT, 0), 0)
    if ltype.kind == PhysicalKind.VARBINARY:  # bytes of at most ``width``: zero-padded slots, lengths apart
        for field, length in (("min", "min_len"), ("max", "max_len")):
            bounds = [b if ok else b"" for b, ok in zip(getattr(stats, field).tolist(), has.tolist())]
            records[length] = np.fromiter(map(len, bounds), np.int64, len(bounds))
            records[field] = np.array(bounds, dtype=f"S{width}").view(f"V{width}") if width else b""
        return
    records["min_len"] = records["max_len"] = np.where(has, width, 0)
    dtype = np.dtype(np.int64) if decimal64 else ltype.numpy_dtype
    for field in ("min", "max"):
        values = np.asarray(getattr(stats, field))
        if values.dtype != dtype and values.dtype.itemsize == dtype.itemsize:
            values = values.view(dtype)  # (datetime64 storage, say)
        values = np.where(has, values, np.zeros(1, dtype)).astype(dtype)
        if decimal64:  # 16-byte two's complement: the low word, then its sign extension
            values = np.column_stack((values, values >> 63))
        records[field] = np.ascontiguousarray(values).view(f"V{width}").reshape(-1)


def _values(records: np.ndarray, field: str, lengths: np.ndarray, ltype: LogicalType) -> np.ndarray:
    raw = records[field]
    if ltype.kind == PhysicalKind.VARBINARY:
        out = np.empty(len(records), dtype=object)
        for i, (slot, n) in enumerate(zip(raw, lengths)):
            out[i] = bytes(slot)[: int(n)]
        return out
    if ltype.name == "decimal128":
        # 16-byte two's complement: int64 when every slot fits (the high word is the low
        # word's sign extension), as Python ints otherwise
        words = np.frombuffer(raw.tobytes(), dtype="<i8").reshape(-1, 2)
        if np.array_equal(words[:, 1], words[:, 0] >> 63):
            return words[:, 0].copy()
        out = np.empty(len(records), dtype=object)
        for i, slot in enumerate(raw):
            out[i] = int.from_bytes(bytes(slot), "little", signed=True)
        return out
    return np.frombuffer(raw.tobytes(), dtype=ltype.numpy_dtype)


def stats_arrays(records: np.ndarray, ltype: LogicalType, row_count: np.ndarray) -> StatsArrays:
    """Statistics of the units described by chunk or page ``records``."""
    flags = records["stats_flags"]
    width = records.dtype["min"].itemsize
    has = (flags & STATS_HAS_MIN_MAX) != 0
    if ltype.kind == PhysicalKind.VARBINARY:
        # a length beyond the slot cannot come from a writer: treat the bound as unknown
        has &= (records["min_len"] <= width) & (records["max_len"] <= width)
    return StatsArrays(
        row_count=np.asarray(row_count, dtype=np.int64),
        null_count=records["null_count"].astype(np.int64),
        nan_count=records["nan_count"].astype(np.int64),
        has_min_max=has,
        min=_values(records, "min", records["min_len"], ltype),
        max=_values(records, "max", records["max_len"], ltype),
        min_exact=has & ((flags & STATS_MIN_EXACT) != 0),
        max_exact=has & ((flags & STATS_MAX_EXACT) != 0),
    )
