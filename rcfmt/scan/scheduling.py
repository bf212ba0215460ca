"""How a scan schedules its blocks: :func:`map_blocks` runs them on a pool (one worker
per core, bounded windows for streams), and a :class:`Probe` decides whether an index
is still worth asking for the next ones."""
from __future__ import annotations

from collections import deque
from concurrent.futures import wait
from itertools import islice
from typing import Iterator

from ..runtime.threads import shared_pool

__all__ = ["Probe", "map_blocks", "PROBE_BLOCKS", "STREAM_WINDOW"]

#: on a local file, when the page indexes (or the bitmap indexes) of this many blocks in
#: a row pruned no page (decided nothing) for a scan's filter, the scan stops asking
#: them for its later blocks: skipping an index is always sound, and on unclustered
#: data (lineitem in natural order under Q6) asking cost ~0.2 ms per block for nothing
PROBE_BLOCKS = 8


#: blocks decoded ahead of a stream's consumer, per worker thread (iter_batches)
STREAM_WINDOW = 2


class Probe:
    """Whether an index is worth asking for a scan's next blocks: until it has been
    asked for :data:`PROBE_BLOCKS` blocks without deciding anything once (then never
    again in this scan; once it decided something, always). Shared by the threads of a
    scan: a race only asks a block more or less, and not asking is always sound."""

    __slots__ = ("enabled", "asked", "useful")

    def __init__(self, enabled: bool = True):
        self.enabled, self.asked, self.useful = enabled, 0, False

    def worth_asking(self) -> bool:
        return not self.enabled or self.useful or self.asked < PROBE_BLOCKS

    def note(self, decided: bool) -> None:
        self.asked += 1
        self.useful = self.useful or decided


def map_blocks(fn, blocks: list[int], use_threads: bool, window: int | None = None) -> Iterator:
    """``fn(block)`` of every block, in order: on the shared scan pool (one worker per
    core: more only contend for the GIL between native passes) when ``use_threads`` and
    there are several. ``window``: at most this many blocks in flight ahead of the
    consumer (a stream holds that many decoded blocks, not the whole file); None: all
    submitted at once. A consumer that stops early cancels the blocks not yet started
    and waits for those running (the scan's file may be closed next)."""
    if not use_threads or len(blocks) < 2:
        for b in blocks:
            yield fn(b)
        return
    pool = shared_pool("scan")
    rest = iter(blocks)
    pending: deque = deque()
    try:
        pending.extend(pool.submit(fn, b) for b in islice(rest, len(blocks) if window is None else max(1, window)))
        while pending:
            done = pending.popleft().result()
            nxt = next(rest, None)
            if nxt is not None:
                pending.append(pool.submit(fn, nxt))
            yield done
    finally:
        for future in pending:
            future.cancel()
        wait(pending)
