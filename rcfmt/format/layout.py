"""Constants and fixed-width record layouts of format version 1 (docs/FORMAT.md).

Everything is little-endian. Records are numpy structured dtypes so that tables of
them can be viewed without copying.
"""
from __future__ import annotations

import functools
import struct

import numpy as np

MAGIC = b"RCFM"
FORMAT_VERSION = 1  # the major version this code writes and reads
HEADER = struct.Struct("<4sI")  # magic, format version
HEADER_SIZE = HEADER.size  # 8
TAIL = struct.Struct("<QI4s")  # footer length, footer crc32, magic
TAIL_SIZE = TAIL.size  # 16

#: features a file may list in "required_features"; a reader refuses unknown ones
KNOWN_FEATURES: frozenset[str] = frozenset({"nested", "duplicate_names", "nested_extensions", "empty_nested",
                                           "nested_run_end_encoded", "extension_storage",
                                           "extension_storage_runs"})

# -------------------------------------------------------------------- page header
PAGE_HEADER = struct.Struct("<BBBBIIIIIII")
PAGE_HEADER_SIZE = PAGE_HEADER.size  # 32
PAGE_DATA = 0
PAGE_DICTIONARY = 1
PAGE_FLAG_VALIDITY = 0x01  # the body starts with a validity bitmap
PAGE_KNOWN_FLAGS = PAGE_FLAG_VALIDITY

#: hard limits a reader enforces before allocating (writers never exceed them)
MAX_PAGE_ROWS = 1 << 20
MAX_PAGE_BYTES = (1 << 31) - 1

# -------------------------------------------------------------------- stats flags
STATS_HAS_MIN_MAX = 0x01
STATS_MIN_EXACT = 0x02
STATS_MAX_EXACT = 0x04

UNKNOWN_COUNT = np.uint64(0xFFFF_FFFF_FFFF_FFFF)  # distinct_count not known

# -------------------------------------------------------------------- records
BLOCK_RECORD = np.dtype(
    [("first_row", "<u8"), ("row_count", "<u8"), ("offset", "<u8"), ("length", "<u8")]
)

_CHUNK_FIXED = [
    ("offset", "<u8"),
    ("length", "<u8"),
    ("uncompressed_size", "<u8"),
    ("null_count", "<u8"),
    ("nan_count", "<u8"),
    ("distinct_count", "<u8"),
    ("page_index_offset", "<u8"),
    ("bloom_offset", "<u8"),
    ("page_index_length", "<u4"),
    ("page_index_crc", "<u4"),
    ("bloom_length", "<u4"),
    ("dictionary_length", "<u4"),
    ("page_count", "<u4"),
    ("dictionary_size", "<u4"),
    ("encoding", "u1"),
    ("compression", "u1"),
    ("stats_flags", "u1"),
    ("min_len", "u1"),
    ("max_len", "u1"),
    ("reserved", "V3"),
]
CHUNK_FIXED_SIZE = 96

_PAGE_FIXED = [
    ("first_row", "<u8"),
    ("offset", "<u8"),
    ("length", "<u4"),
    ("row_count", "<u4"),
    ("null_count", "<u4"),
    ("nan_count", "<u4"),
    ("stats_flags", "u1"),
    ("min_len", "u1"),
    ("max_len", "u1"),
    ("reserved", "V5"),
]
PAGE_FIXED_SIZE = 40


def _with_stats(fixed: list, stat_width: int) -> np.dtype:
    return np.dtype(fixed + [("min", f"V{stat_width}"), ("max", f"V{stat_width}")])


@functools.lru_cache(maxsize=None)
def chunk_record(stat_width: int) -> np.dtype:
    """Footer record of one column chunk of a column whose stats slots are ``stat_width``."""
    return _with_stats(_CHUNK_FIXED, stat_width)


@functools.lru_cache(maxsize=None)
def page_record(stat_width: int) -> np.dtype:
    """Page-index record of one data page of a column whose stats slots are ``stat_width``."""
    return _with_stats(_PAGE_FIXED, stat_width)


def view_records(buf, dtype: np.dtype, count: int, record_size: int) -> np.ndarray:
    """View ``count`` records of ``record_size`` bytes (>= dtype.itemsize) without copying.

    ``record_size`` may exceed the known layout: a newer minor version can append
    fields, which this reader then ignores.
    """
    if record_size != dtype.itemsize:
        dtype = padded_record(dtype, record_size)
    return np.frombuffer(buf, dtype=dtype, count=count)


@functools.lru_cache(maxsize=256)
def padded_record(dtype: np.dtype, record_size: int) -> np.dtype:
    """``dtype`` with its records ``record_size`` bytes apart (a newer minor version's
    longer records, whose unknown tail this reader skips)."""
    return np.dtype({"names": list(dtype.names), "formats": [dtype.fields[n][0] for n in dtype.names],
                     "offsets": [dtype.fields[n][1] for n in dtype.names], "itemsize": record_size})


assert BLOCK_RECORD.itemsize == 32
assert np.dtype(_CHUNK_FIXED).itemsize == CHUNK_FIXED_SIZE
assert np.dtype(_PAGE_FIXED).itemsize == PAGE_FIXED_SIZE
