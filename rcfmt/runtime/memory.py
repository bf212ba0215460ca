"""Buffers the engine decodes into: Arrow memory from pyarrow's default pool.

Arrays built on them go to Arrow without a copy. Measured on lineitem SF1 (bench/RESULTS.md
§3): decoding into Arrow buffers instead of ``numpy.empty`` arrays took TPC-H Q6 from 150
to 93 ms and Q_a from 290 to 230 ms (first-touch page faults on each block's fresh
megabyte buffers were costing as much as decoding them). The pool is pyarrow's default
(mimalloc in pyarrow's wheels; ``ARROW_DEFAULT_MEMORY_POOL`` chooses another, and the
buffers count in ``pyarrow.total_allocated_bytes()``): against the system allocator a
2-thread full scan faulted in half the pages (glibc hands a freed block's memory back to
the arena of the thread that allocated it, so the next scan's other thread faults in
fresh pages) and took 193-201 ms instead of 204-210, Q6 unchanged (bench/RESULTS.md §10d).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["empty"]

_POOL = pa.default_memory_pool()
#: smaller arrays come from numpy (the heap: no fresh pages to fault in, and ~0.3 µs
#: against ~4 µs for an Arrow buffer; a sparse selection asks for a dozen per column)
SMALL_BYTES = 64 * 1024


def empty(n: int, dtype=np.uint8) -> np.ndarray:
    """An uninitialised, writable array of ``n`` items of ``dtype``, 64-byte aligned
    Arrow memory from the system pool (at least 16-byte aligned numpy memory when
    smaller than ``SMALL_BYTES``); either becomes an Arrow buffer without a copy."""
    dtype = np.dtype(dtype)
    if n * dtype.itemsize < SMALL_BYTES:
        return np.empty(n, dtype)
    return np.frombuffer(pa.allocate_buffer(n * dtype.itemsize, memory_pool=_POOL), dtype)
