"""How reads from object storage trade requests for bytes, and how many are in flight.

On an object store every request costs a round trip (10-100 ms on S3) and every byte
costs transfer time, and on some bills money. A reader that needs ranges a little apart
can read them with one request that also carries the gap between them, or with one
request each. The break-even gap is what the store moves in one round trip: time to
first byte x bandwidth (~1 MiB for 10 ms at 100 MiB/s, the default). pyarrow calls the
same trade ``CacheOptions.hole_size_limit`` (and derives it the same way in
``CacheOptions.from_network_metrics``).

    rcfmt.read_table("s3://bucket/f.rcfmt", filter=..., fetch=rcfmt.FetchOptions.fewest_bytes())

These options govern reads of remote files (an object store, or any ``filesystem=``);
local files are read with ``pread``, ranges up to :data:`LOCAL_COALESCE_GAP` apart
with one read. Every reader of several ranges merges them by this one rule,
:func:`coalesce` (or :func:`one_read` for ranges read together or not at all). The ranged
reads of remote files share one process-wide pool (:func:`fetch_pool`) of
:data:`FETCH_CONCURRENCY` threads, which also sizes the S3 client's connection pool.
"""
from __future__ import annotations

import math
import os
import threading

import numpy as np

from ..runtime.records import record
from ..errors import InvalidOptionError

__all__ = ["FetchOptions", "check_fetch", "DEFAULT", "FETCH_CONCURRENCY", "fetch_pool", "LOCAL_COALESCE_GAP",
           "SPLIT_READ_BYTES", "coalesce", "halves", "one_read"]

_MIB = 1 << 20
#: ranges of a local file at most this far apart are read with one read (a ``pread`` of
#: 64 KiB more costs less than a second system call; remote files:
#: :attr:`FetchOptions.coalesce_gap`)
LOCAL_COALESCE_GAP = 64 * 1024


@record(frozen=True)
class FetchOptions:
    """How a scan of a remote file groups its reads into requests.

    - ``coalesce_gap``: ranges at most this many bytes apart are read with one request
      (the gap read and dropped); also the most a block's projected pages may hold to be
      fetched with its filter columns' pages before the filter has chosen rows (one round
      trip instead of two, at the cost of bytes the filter may not need). 0: only ranges
      that touch are merged, and nothing is fetched speculatively.
    - ``tail_bytes``: bytes read from the end of a file at its open, which should hold
      its footer (a larger footer costs a second request for the rest). None: 1/128 of
      the file, between 64 KiB and 1 MiB (files up to 1 MiB are read whole).
    - ``max_request_bytes``: the most one coalesced request of several blocks may span.

    The default trades bytes for fewer requests, as latency to S3-like stores warrants;
    :meth:`fewest_bytes` moves only what the scan decodes (plus the tail), for stores
    billed by the byte or links slower than their latency.
    """

    coalesce_gap: int = _MIB
    tail_bytes: int | None = None
    max_request_bytes: int = 32 * _MIB

    def __post_init__(self):
        _check_int("coalesce_gap", self.coalesce_gap, 0)
        if self.tail_bytes is not None:
            _check_int("tail_bytes", self.tail_bytes, 16)
        _check_int("max_request_bytes", self.max_request_bytes, 0)

    @classmethod
    def fewest_bytes(cls) -> "FetchOptions":
        """Read only ranges the scan needs: no gap is coalesced, nothing is fetched before
        it is known to be needed, and an open reads a 64 KiB tail."""
        return cls(coalesce_gap=0, tail_bytes=64 * 1024)

    @classmethod
    def from_network(cls, first_byte_ms: float, mib_per_second: float) -> "FetchOptions":
        """Options for a store that answers a request's first byte after ``first_byte_ms``
        and then streams ``mib_per_second``: a gap is worth reading when reading it takes
        less time than a request's round trip."""
        for name, value in (("first_byte_ms", first_byte_ms), ("mib_per_second", mib_per_second)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise InvalidOptionError(f"{name} must be a finite number >= 0, got {value!r}")
        return cls(coalesce_gap=int(first_byte_ms / 1000 * mib_per_second * _MIB))

    def open_tail(self) -> int:
        """Bytes an open reads from the end of a remote file whose size it learns with
        that read (a suffix range): ``tail_bytes``, else the most :meth:`tail_length`
        reads (1 MiB)."""
        return self.tail_bytes if self.tail_bytes is not None else _MIB

    def tail_length(self, size: int) -> int:
        """Bytes read from the end of a remote file of ``size`` bytes at its open."""
        if self.tail_bytes is not None:
            return min(size, self.tail_bytes)
        if size <= _MIB:
            return size
        return min(_MIB, max(64 * 1024, size // 128))


def _check_int(name: str, value, lo: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidOptionError(f"FetchOptions.{name} must be an integer, got {value!r}")
    if value < lo:
        raise InvalidOptionError(f"FetchOptions.{name} must be >= {lo}, got {value}")


#: what a read uses when it is given no options
DEFAULT = FetchOptions()


def check_fetch(fetch) -> FetchOptions:
    """``fetch`` (None: the default) as :class:`FetchOptions`; anything else is an
    :class:`~rcfmt.errors.InvalidOptionError`."""
    if fetch is None:
        return DEFAULT
    if isinstance(fetch, FetchOptions):
        return fetch
    raise InvalidOptionError(f"fetch must be a rcfmt.FetchOptions, got {type(fetch).__name__}")


#: ranged reads of remote files in flight at once, in the whole process: object stores
#: serve many requests in parallel, and with ``FetchOptions.fewest_bytes()`` a point
#: lookup sends ~30 small ones (bench/RESULTS.md §6: 32 in flight make it as fast as the
#: default's 4 requests at 30 ms each; 8 took 1.5x as long)
FETCH_CONCURRENCY = 32
_POOL = None
_POOL_LOCK = threading.Lock()


def fetch_pool():
    """One process-wide pool for concurrent ranged reads of remote files (each read
    releases the GIL while it waits for the server)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            from ..runtime.threads import thread_pool

            _POOL = thread_pool(FETCH_CONCURRENCY, "rcfmt-fetch")
        return _POOL


def _forget_pool() -> None:
    """A forked child starts without the pool (its threads do not survive a fork, and
    its idle count would make ``submit`` wait for them forever), as
    :func:`rcfmt.runtime.threads.shared_pool`'s pools do."""
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def coalesce(lo: np.ndarray, hi: np.ndarray, gap: int) -> tuple[np.ndarray, np.ndarray]:
    """Ranges ``[lo[i], hi[i])`` (sorted by ``lo``) merged where the next one begins at
    most ``gap`` bytes past the end of all before it: ``(starts, ends)``."""
    n = len(lo)
    if n <= 1:
        return lo, hi
    if n <= 16:  # (a column's few pages: a loop is 5x faster than numpy's calls)
        starts, ends = [int(lo[0])], [int(hi[0])]
        for a, b in zip(lo[1:].tolist(), hi[1:].tolist()):
            if a - ends[-1] > gap:
                starts.append(a)
                ends.append(b)
            elif b > ends[-1]:
                ends[-1] = b
        return np.array(starts, np.int64), np.array(ends, np.int64)
    hi = np.maximum.accumulate(hi)
    cut = np.flatnonzero(lo[1:] - hi[:-1] > gap) + 1
    return lo[np.concatenate(([0], cut))], hi[np.concatenate((cut - 1, [len(hi) - 1]))]


#: a local read this large is copied in two halves side by side when the scan has a core
#: to spare (a one-block scan splitting its columns among the cores): copying a block
#: from the page cache is work on one core like any other -- the wide table's 150 MB
#: block took a fifth of a two-thread scan to read before its columns could start
SPLIT_READ_BYTES = 4 * _MIB


def halves(starts: np.ndarray, ends: np.ndarray, total: int) -> tuple[tuple, tuple]:
    """Sorted disjoint ranges ``[starts[i], ends[i])`` holding ``total`` bytes (two or
    more) cut into two lists of ranges of ``total // 2`` and the rest, the first before
    the second (a range in the middle is cut in two; no range is empty):
    ``((starts, ends), (starts, ends))``."""
    sizes = ends - starts
    before = np.cumsum(sizes) - sizes  # (bytes of the ranges before each)
    half = total // 2
    i = int(np.searchsorted(before, half, side="right")) - 1  # (the range holding byte ``half``)
    cut = int(starts[i]) + half - int(before[i])
    first = (np.append(starts[:i], starts[i]), np.append(ends[:i], cut))
    second = (np.insert(starts[i + 1:], 0, cut), np.insert(ends[i + 1:], 0, ends[i]))
    if cut == int(starts[i]):  # (the cut falls where a range begins: no empty range)
        first = (first[0][:-1], first[1][:-1])
    return first, second


def one_read(spans, gap: int) -> tuple[int, int] | None:
    """``(start, end)`` of the one read that brings every span of ``spans``
    (``(offset, length)`` pairs; length 0: none) when :func:`coalesce`'s rule with
    ``gap`` merges them into one range; None when they are fewer than two or lie further
    apart (each is then read alone). Python integers: a forged offset past 2**63 makes
    no overflow here (the read of it fails where it is checked)."""
    spans = sorted((int(o), int(n)) for o, n in spans if n)
    if len(spans) < 2:
        return None
    start, end = spans[0][0], spans[0][0] + spans[0][1]
    for offset, length in spans[1:]:
        if offset - end > gap:
            return None
        end = max(end, offset + length)
    return start, end
