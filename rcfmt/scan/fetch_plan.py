"""A scan-level fetch plan for object storage: consecutive blocks read together.

A scan of a remote file reads, per block, the byte ranges its plan needs (the pages
that may hold matching rows, of every column it reads). When those ranges form one
span per block and the spans of consecutive blocks lie within the coalescing gap of
one another -- the scan needs most of each block anyway, as a full read or a filter
that prunes few pages -- the blocks are grouped and each group is read with one
request of at most ``FetchOptions.max_request_bytes`` (:mod:`rcfmt.storage.fetch`),
instead of one or two requests per block.
Blocks whose needed bytes are scattered keep their own reads (the requests then bring
only what they need).

The plan is made before any block is decoded (planning apart from execution); a group
is fetched by the first of its blocks to need it, its buffer shared by the others and
dropped when the last is done, so memory stays within a few groups.
"""
from __future__ import annotations

import threading

import numpy as np

__all__ = ["BlockGroups"]


class _Group:
    __slots__ = ("start", "end", "pending", "buf", "error", "lock")

    def __init__(self, start: int, end: int, blocks: int):
        self.start, self.end, self.pending = start, end, blocks
        self.buf = None
        self.error = None  # the failure of its read, raised to every block of the group
        self.lock = threading.Lock()


class BlockGroups:
    """Groups of consecutive blocks, from ``spans`` (``{block: (starts, ends)}``, each
    block's needed byte ranges, sorted and coalesced): a block joins the group of the
    block before it when both need one range each, the gap between them is at most
    ``gap`` and the group stays within ``max_bytes``. Groups of one block are dropped
    (the block reads its own bytes)."""

    def __init__(self, spans: dict, gap: int, max_bytes: int):
        self._of: dict[int, _Group] = {}
        members: list[int] = []
        lo = hi = 0
        for block in sorted(spans):
            starts, ends = spans[block]
            dense = len(starts) == 1
            if dense and members and int(starts[0]) - hi <= gap and int(ends[0]) - lo <= max_bytes \
                    and int(starts[0]) >= hi:
                members.append(block)
                hi = int(ends[0])
                continue
            self._close(members, lo, hi)
            members = [block] if dense else []
            if dense:
                lo, hi = int(starts[0]), int(ends[0])
        self._close(members, lo, hi)

    def _close(self, members: list[int], lo: int, hi: int) -> None:
        if len(members) > 1:
            group = _Group(lo, hi, len(members))
            for block in members:
                self._of[block] = group

    def __len__(self) -> int:
        return len({id(g) for g in self._of.values()})

    def __contains__(self, block: int) -> bool:
        return block in self._of

    def fetch(self, block: int, file) -> tuple[np.ndarray, int, int]:
        """``(buffer, base, bytes read now)`` holding the block's group (read by the
        first block of the group to ask, with one request; 0 bytes for the others). A
        failed read is not sent again by the group's other blocks (each would wait out
        the client's retries anew): they raise its error."""
        group = self._of[block]
        with group.lock:
            if group.error is not None:
                raise group.error
            if group.buf is None:
                try:
                    group.buf = file.read_ranges(np.array([group.start], np.int64), np.array([group.end], np.int64))
                except Exception as exc:
                    group.error = exc
                    raise
                return group.buf, group.start, group.end - group.start
            return group.buf, group.start, 0

    def done(self, block: int) -> None:
        """The block no longer needs its group's bytes (the last one frees them)."""
        group = self._of.get(block)
        if group is None:
            return
        with group.lock:
            group.pending -= 1
            if group.pending <= 0:
                group.buf = None
