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

import os
import sys
import threading

import numpy as np
import pyarrow as pa

__all__ = ["empty", "span_buffer"]

_MIB = 1 << 20

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


#: a read spanning at least this many bytes that touches at most 1/SPARSE_RATIO of them
#: (a lookup's or a take's pages, a page index's entries) gets a buffer of small pages
SPARSE_SPAN = 2 * _MIB
SPARSE_RATIO = 8
#: sparse buffers kept for reuse once no array refers to them, the largest kept, and
#: how many reuses of one before its pages go back to the system (each reuse touches
#: other ranges of it, so what it holds in memory grows until then)
ARENAS_KEPT = 4
ARENA_MAX = 64 * _MIB
ARENA_RECLAIM = 64


def span_buffer(n: int, touched: int) -> np.ndarray:
    """An uninitialised byte buffer of ``n`` bytes of which a read fills only
    ``touched`` (ranges scattered over it; the rest is never used). A dense one is
    :func:`empty`'s pool memory. A sparse one (see :data:`SPARSE_SPAN`) is an anonymous
    mapping of 4 KiB pages: the pool backs large buffers with 2 MiB huge pages, of which
    every range touched faults in and zeroes a whole one, so a first lookup reading 132
    KB in 20 ranges over 20 MB spent 1.4-2.4 ms in its faults on a quiet machine and 3-49
    ms on a loaded one (kernel compaction), against 0.2-0.9 ms in small pages. The
    mappings are kept and reused (:data:`ARENAS_KEPT`), so a warm read faults nothing in."""
    if n < SPARSE_SPAN or touched * SPARSE_RATIO > n:
        return empty(n)
    return _ARENAS.buffer(n)


def _mapping(size: int):
    import mmap

    private = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    # (private: a forked child's pages are its own, and pages given back are freed; -1
    # alone maps shared memory, which a parent's next read would overwrite under a child)
    m = mmap.mmap(-1, size, flags=private) if private else mmap.mmap(-1, size)
    advise = getattr(m, "madvise", None)
    if advise is not None and hasattr(mmap, "MADV_NOHUGEPAGE"):  # (Linux with transparent huge pages "always")
        advise(mmap.MADV_NOHUGEPAGE)
    return m


def _reclaim(m) -> None:
    """Give a free mapping's pages back to the system (its contents are nobody's)."""
    import mmap

    if hasattr(m, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
        m.madvise(mmap.MADV_DONTNEED)


def _refs(entry: list) -> int:
    """The references to ``entry``'s mapping, counted the same way whenever asked (so
    that the count of a free one, taken once, is a count to compare with)."""
    return sys.getrefcount(entry[0])


class _Arenas:
    """Mappings handed out as buffers, reused once free: no array refers to one (its
    reference count is the one :func:`_refs` gave just after it was made, when nothing
    else held it; numpy views of a buffer, and Arrow buffers made of them, hold the
    mapping). Without the GIL (free-threaded Python) reference counts are no such proof,
    and no mapping is kept."""

    def __init__(self):
        self._lock = threading.Lock()
        self._kept: list[list] = []  # [mapping, reuses, references when free]
        self._keep = getattr(sys, "_is_gil_enabled", lambda: True)()

    def buffer(self, n: int) -> np.ndarray:
        with self._lock:
            spare = None
            for entry in self._kept:  # (no local name holds a mapping while counting)
                if _refs(entry) != entry[2]:
                    continue
                if len(entry[0]) >= n:
                    entry[1] += 1
                    if entry[1] % ARENA_RECLAIM == 0:
                        _reclaim(entry[0])
                    return np.frombuffer(entry[0], np.uint8, count=n)
                spare = entry  # a free mapping too small: replaced by the new one
            size = -(-n // _MIB) * _MIB
            entry = [_mapping(size), 0, 0]
            entry[2] = _refs(entry)  # (free: only the entry holds it)
            if self._keep and size <= ARENA_MAX:
                if spare is not None:
                    spare[:] = entry
                    entry = spare
                elif len(self._kept) < ARENAS_KEPT:
                    self._kept.append(entry)
            return np.frombuffer(entry[0], np.uint8, count=n)

    def kept(self) -> list[int]:
        """The sizes of the mappings kept (tests)."""
        with self._lock:
            return [len(entry[0]) for entry in self._kept]


_ARENAS = _Arenas()
if hasattr(os, "register_at_fork"):  # a child forked while another thread held the lock starts afresh
    os.register_at_fork(after_in_child=lambda: globals().__setitem__("_ARENAS", _Arenas()))
