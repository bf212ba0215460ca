"""Page indexes an open file has read and checked, kept for its next scans
(:class:`PageIndexCache`); for a dataset's data files, whose names are never reused for
other bytes, kept for every open of the file in this process (:data:`SHARED`).

A dataset scan opens each data file it reads anew (a take of 10 rows of a 12-file
dataset opens 8 of them): with a cache per open, every query read and checked the same
page indexes again.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["PAGE_INDEX_CACHE_BYTES", "SHARED", "PageIndexCache", "SharedPageIndexes"]

#: page-index records one cache holds at most, then it keeps no more (bytes): the page
#: index of lineitem SF1's 16 columns is 0.6 MB
PAGE_INDEX_CACHE_BYTES = 64 << 20


class PageIndexCache:
    """``{(block, column): PageIndex}`` (:attr:`entries`) of one file, holding at most
    :data:`PAGE_INDEX_CACHE_BYTES` of records; thread-safe. ``owner``: the
    :class:`SharedPageIndexes` that counts its bytes, when the opens of the file share
    it (under ``key``)."""

    __slots__ = ("entries", "nbytes", "counted", "key", "_owner", "_lock")

    def __init__(self, owner: "SharedPageIndexes | None" = None, key=None):
        self.entries: dict = {}
        self.nbytes = 0
        self.counted = 0  # (of nbytes, what the owner counts: its own lock guards it)
        self.key = key
        self._owner = owner
        self._lock = threading.Lock()

    def keep(self, block: int, column: int, index):
        """``index`` (of chunk ``column`` of ``block``, read and checked) kept unless the
        cache is full or holds that chunk's already; returned."""
        size = index.entries.nbytes
        with self._lock:
            if self.nbytes + size > PAGE_INDEX_CACHE_BYTES or self.entries.setdefault((block, column), index) is not index:
                return index
            self.nbytes += size
        if self._owner is not None:
            self._owner.grew(self, size)
        return index


class SharedPageIndexes:
    """The :class:`PageIndexCache` of each file whose opens share one (by store identity,
    path and size), least recently opened dropped first once they hold more than
    ``max_bytes`` together (an open still holding a dropped one keeps using it)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self._caches: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key) -> PageIndexCache:
        """The cache the opens of the file ``key`` share (made on its first open)."""
        with self._lock:
            cache = self._caches.get(key)
            if cache is None:
                cache = self._caches[key] = PageIndexCache(self, key)
            else:
                self._caches.move_to_end(key)
            return cache

    def grew(self, cache: PageIndexCache, size: int) -> None:
        with self._lock:
            if self._caches.get(cache.key) is not cache:  # (dropped already: no longer counted)
                return
            cache.counted += size
            self._bytes += size
            while self._bytes > self.max_bytes and len(self._caches) > 1:
                key, dropped = next(iter(self._caches.items()))
                if dropped is cache:  # (the growing one last)
                    self._caches.move_to_end(key)
                    continue
                del self._caches[key]
                self._bytes -= dropped.counted

    def clear(self) -> None:
        with self._lock:
            self._caches.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._caches)


#: the page indexes of a dataset's data files, shared by their opens in this process
SHARED = SharedPageIndexes(PAGE_INDEX_CACHE_BYTES)
