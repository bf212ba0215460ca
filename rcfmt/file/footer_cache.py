"""Footers of immutable remote files (and of a dataset's local data files), kept across
opens in this process.

A dataset's data files and index versions are never rewritten under their names (data
files carry a writer's unique prefix; an index version is created once, if absent). So
for them a parsed footer, and the tail bytes read with it, are valid for as long as the
object exists: a repeated query opens them without a request (the object is opened at
its first read not served from the tail). Entries are keyed by the store (filesystem
kind and endpoint), the path and the size (both from the dataset index), and evicted
least recently used beyond ``max_bytes``. A local data file's entry holds its footer
alone (no tail: its reads cost no request); an index version on local disk is read
afresh (a dataset deleted and written again in one process may reuse its name).

Single files opened by path are never cached: they may be replaced in place, and
``pyarrow.fs`` tells neither an ETag nor a modification time finer than a second.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import NamedTuple

__all__ = ["CachedTail", "FooterCache", "FOOTERS"]


class CachedTail(NamedTuple):
    """A parsed footer and the file's bytes ``[start, start + len(tail))`` read with it;
    ``verified``: the footer checksum was checked when it was read."""

    footer: object
    start: int
    tail: bytes
    verified: bool


class FooterCache:
    """A thread-safe LRU of :class:`CachedTail` bounded by the bytes it holds."""

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self._entries: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @staticmethod
    def _cost(entry: CachedTail, footer_length: int) -> int:
        # the tail; the parsed footer, about as much again; what scans derive from it and keep
        # with it: up to 4 projections (rcfmt.scan.query.DERIVED_PROJECTIONS), each a schema
        # and relabeling of at most the footer's columns, weighing up to as much again
        return len(entry.tail) + 5 * footer_length

    def get(self, key) -> CachedTail | None:
        with self._lock:
            item = self._entries.get(key)
            if item is None:
                return None
            self._entries.move_to_end(key)
            return item[0]

    def put(self, key, entry: CachedTail, footer_length: int) -> None:
        cost = self._cost(entry, footer_length)
        if cost > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (entry, cost)
            self._bytes += cost
            while self._bytes > self.max_bytes:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)


#: the process-wide cache that :class:`~rcfmt.file.reader.RcfmtFile` uses for files
#: opened with ``immutable=True``
FOOTERS = FooterCache(128 << 20)
