"""The bytes of a deletion vector: the deleted row positions of one data file as a
64-bit Roaring bitmap in its portable serialization (CRoaring's
``roaring64_bitmap_portable_serialize``, Java's ``Roaring64NavigableMap`` portable
format, pyroaring's ``BitMap64.serialize``; what Delta Lake's deletion vectors hold
inside their own framing). All integers are little-endian::

    uint64 bucket count
    per bucket, keys strictly ascending:
        uint32 key                      the high 32 bits of its positions
        32-bit portable Roaring bitmap  of their low 32 bits (offsets below count from its cookie)

    32-bit bitmap (https://github.com/RoaringBitmap/RoaringFormatSpec), n containers:
        uint32 12346, uint32 n                   no run container; or
        uint32 12347 | (n-1) << 16, ceil(n/8)    run bitset (bit i set: container i is a run container)
        n x (uint16 key, uint16 cardinality-1)   keys (bits 16..31) strictly ascending
        n x uint32 offset of the container       unless there is a run bitset and n < 4
        the containers, in key order:
            run     uint16 r, r x (uint16 start, uint16 length-1)   ascending, disjoint
            array   cardinality <= 4096: uint16 values, strictly ascending
            bitmap  cardinality >  4096: 1024 uint64 words, bit v of the 65536 = value v

:func:`encode` writes each container in its smallest form (a run container only when
strictly smaller than the array or bitmap it would otherwise be, as CRoaring's
``run_optimize``); :func:`decode` checks everything a forged vector could break.
"""
from __future__ import annotations

import operator
import struct

import numpy as np

from ..errors import CorruptFileError, InvalidOptionError

__all__ = ["encode", "decode"]

_NO_RUN_COOKIE = 12346
_RUN_COOKIE = 12347
_ARRAY_MAX = 4096
_BITMAP_BYTES = 8192
_MIN_BUCKET_BYTES = 12  # key and an empty no-run bitmap (cookie, count)
_MIN_CONTAINER_BYTES = 6  # descriptive header and a 1-value array
_INT64_MAX = np.iinfo(np.int64).max


def _positions(positions) -> np.ndarray:
    try:
        arr = np.asarray(positions)
    except (TypeError, ValueError) as e:
        raise InvalidOptionError(f"deletion vector positions must be a 1-D integer array: {e}") from None
    if arr.ndim != 1:
        raise InvalidOptionError(f"deletion vector positions must be 1-D, not {arr.ndim}-D")
    if arr.size == 0:
        return np.empty(0, np.int64)
    if arr.dtype.kind not in "iu":
        raise InvalidOptionError(f"deletion vector positions must be integers, not {arr.dtype}")
    if arr.dtype.kind == "u" and arr.max() > _INT64_MAX:
        raise InvalidOptionError("deletion vector positions must fit an int64")
    arr = arr.astype(np.int64, copy=False)
    bad = np.flatnonzero(arr[1:] <= arr[:-1])
    if bad.size:
        i = int(bad[0])
        what = "duplicate" if arr[i] == arr[i + 1] else "unsorted"
        raise InvalidOptionError(f"deletion vector positions must be ascending and distinct: {what} "
                                 f"{arr[i + 1]} after {arr[i]} at index {i + 1}")
    if arr[0] < 0:
        raise InvalidOptionError(f"deletion vector positions must be >= 0, not {arr[0]}")
    return arr


def encode(positions) -> bytes:
    """The portable 64-bit Roaring bytes of ``positions`` (a 1-D integer array-like,
    ascending, distinct, >= 0; InvalidOptionError otherwise)."""
    pos = _positions(positions)
    n = pos.size
    if n == 0:
        return struct.pack("<Q", 0)
    ckeys = pos >> 16  # a container's key with its bucket's: the 48 high bits
    lows = (pos & 0xFFFF).astype("<u2")
    new_container = np.empty(n, bool)
    new_container[0] = True
    np.not_equal(ckeys[1:], ckeys[:-1], out=new_container[1:])
    cont_start = np.flatnonzero(new_container)
    cont_bounds = np.append(cont_start, n)
    run_start = np.flatnonzero(new_container | np.r_[True, np.diff(pos) != 1])
    run_end = np.append(run_start[1:], n) - 1  # inclusive
    run_bounds = np.searchsorted(run_start, cont_bounds)
    highs = ckeys[cont_start] >> 16
    bucket_bounds = np.append(np.flatnonzero(np.r_[True, highs[1:] != highs[:-1]]), highs.size)

    out = [struct.pack("<Q", bucket_bounds.size - 1)]
    for b in range(bucket_bounds.size - 1):
        keys, cards, bodies, is_run = [], [], [], []
        for c in range(bucket_bounds[b], bucket_bounds[b + 1]):
            lo, hi = cont_bounds[c], cont_bounds[c + 1]
            card = int(hi - lo)
            ra, rb = run_bounds[c], run_bounds[c + 1]
            run_size = 2 + 4 * int(rb - ra)
            plain_size = 2 * card if card <= _ARRAY_MAX else _BITMAP_BYTES
            if run_size < plain_size:
                runs = np.empty((rb - ra, 2), "<u2")
                runs[:, 0] = lows[run_start[ra:rb]]
                runs[:, 1] = run_end[ra:rb] - run_start[ra:rb]
                body = struct.pack("<H", rb - ra) + runs.tobytes()
            elif card <= _ARRAY_MAX:
                body = lows[lo:hi].tobytes()
            else:
                bits = np.zeros(65536, np.uint8)
                bits[lows[lo:hi]] = 1
                body = np.packbits(bits, bitorder="little").tobytes()
            keys.append(int(ckeys[lo]) & 0xFFFF)
            cards.append(card - 1)
            bodies.append(body)
            is_run.append(run_size < plain_size)
        count = len(keys)
        desc = np.empty((count, 2), "<u2")
        desc[:, 0], desc[:, 1] = keys, cards
        if any(is_run):
            runset = np.packbits(np.array(is_run, np.uint8), bitorder="little").tobytes()
            head = [struct.pack("<I", _RUN_COOKIE | (count - 1) << 16), runset, desc.tobytes()]
            with_offsets = count >= 4
        else:
            head = [struct.pack("<II", _NO_RUN_COOKIE, count), desc.tobytes()]
            with_offsets = True
        if with_offsets:
            sizes = np.array([len(body) for body in bodies], np.int64)
            start = sum(map(len, head)) + 4 * count
            head.append((start + np.r_[0, np.cumsum(sizes[:-1])]).astype("<u4").tobytes())
        out += [struct.pack("<I", int(highs[bucket_bounds[b]])), *head, *bodies]
    return b"".join(out)


def _count(value, what: str, path) -> int:
    try:
        value = operator.index(value)
    except TypeError:
        raise CorruptFileError(f"deletion vector {what} {value!r} is not an integer", path=path) from None
    if value < 0:
        raise CorruptFileError(f"deletion vector {what} {value} is negative", path=path)
    return value


def decode(data, *, num_rows: int, cardinality: int, path: str | None = None) -> np.ndarray:
    """The sorted, distinct int64 positions that ``data`` (one vector's bytes) holds,
    each below ``num_rows``, exactly ``cardinality`` of them; CorruptFileError (with
    ``path``) for anything else. Memory is bounded by ``len(data) + cardinality``."""
    num_rows = _count(num_rows, "row count", path)
    cardinality = _count(cardinality, "cardinality", path)

    def fail(reason: str) -> CorruptFileError:
        return CorruptFileError(f"deletion vector: {reason}", path=path)

    if cardinality > num_rows:
        raise fail(f"cardinality {cardinality} exceeds the file's {num_rows} rows")
    buf = data if isinstance(data, bytes) else memoryview(data).tobytes()
    size = len(buf)
    at = 0

    def need(nbytes: int, what: str) -> int:
        nonlocal at
        if nbytes > size - at:
            raise fail(f"truncated: {what} needs {nbytes} bytes at offset {at}, {size - at} left")
        at += nbytes
        return at - nbytes

    (buckets,) = struct.unpack_from("<Q", buf, need(8, "bucket count"))
    if buckets > (size - at) // _MIN_BUCKET_BYTES:
        raise fail(f"{buckets} buckets declared, more than its {size} bytes can hold")
    containers = []  # (kind, first position of the container, cardinality, offset of its data, runs)
    total, prev_high = 0, -1
    for _ in range(buckets):
        (high,) = struct.unpack_from("<I", buf, need(4, "bucket key"))
        if high <= prev_high:
            raise fail(f"bucket key {high} after {prev_high}: not strictly ascending")
        prev_high = high
        start = at
        (cookie,) = struct.unpack_from("<I", buf, need(4, "cookie"))
        if cookie & 0xFFFF == _RUN_COOKIE:
            count = (cookie >> 16) + 1
            runset = np.frombuffer(buf, np.uint8, (count + 7) // 8, need((count + 7) // 8, "run bitset"))
            is_run = np.unpackbits(runset, bitorder="little")[:count].astype(bool)
            with_offsets = count >= 4
        elif cookie == _NO_RUN_COOKIE:
            (count,) = struct.unpack_from("<I", buf, need(4, "container count"))
            if count > 65536 or count > (size - at) // _MIN_CONTAINER_BYTES:
                raise fail(f"{count} containers declared, more than a bitmap or its bytes can hold")
            is_run = np.zeros(count, bool)
            with_offsets = True
        else:
            raise fail(f"bad cookie {cookie} at offset {start}")
        desc = np.frombuffer(buf, "<u2", 2 * count, need(4 * count, "descriptive header")).reshape(count, 2)
        keys = desc[:, 0].astype(np.int64)
        cards = desc[:, 1].astype(np.int64) + 1
        if count > 1 and np.any(keys[1:] <= keys[:-1]):
            raise fail(f"container keys of bucket {high} not strictly ascending")
        if with_offsets:
            offsets = np.frombuffer(buf, "<u4", count, need(4 * count, "offset header")).tolist()
        total += int(cards.sum())
        if total > cardinality:  # also bounds the containers listed by the cardinality
            raise fail(f"holds more than the {cardinality} positions declared")
        for i, (key, card) in enumerate(zip(keys.tolist(), cards.tolist())):
            if with_offsets and offsets[i] != at - start:
                raise fail(f"offset header says container {i} of bucket {high} is at {offsets[i]}, "
                           f"it is at {at - start}")
            first = (high << 32) | (key << 16)
            if first >= num_rows or first > _INT64_MAX - 65535:
                raise fail(f"position {first} or more in a file of {num_rows} rows")
            if is_run[i]:
                (runs,) = struct.unpack_from("<H", buf, need(2, "run count"))
                containers.append(("run", first, card, need(4 * runs, "runs"), runs))
            elif card > _ARRAY_MAX:
                containers.append(("bitmap", first, card, need(_BITMAP_BYTES, "bitmap container"), 0))
            else:
                containers.append(("array", first, card, need(2 * card, "array container"), 0))
    if at != size:
        raise fail(f"{size - at} trailing bytes after the last bucket")
    if total != cardinality:
        raise fail(f"holds {total} positions, {cardinality} declared")

    out = np.empty(cardinality, np.int64)
    k = 0
    for kind, first, card, offset, runs in containers:
        where = f"{kind} container at offset {offset}"
        if kind == "array":
            values = np.frombuffer(buf, "<u2", card, offset).astype(np.int64)
            if card > 1 and np.any(values[1:] <= values[:-1]):
                raise fail(f"{where}: values not strictly ascending")
        elif kind == "bitmap":
            values = np.flatnonzero(np.unpackbits(np.frombuffer(buf, np.uint8, _BITMAP_BYTES, offset),
                                                  bitorder="little"))
            if values.size != card:
                raise fail(f"{where}: {values.size} bits set, {card} declared")
        else:
            pairs = np.frombuffer(buf, "<u2", 2 * runs, offset).reshape(runs, 2).astype(np.int64)
            starts, lengths = pairs[:, 0], pairs[:, 1] + 1
            ends = starts + lengths  # exclusive
            if np.any(ends > 65536):
                raise fail(f"{where}: a run goes past 65535")
            if runs > 1 and np.any(starts[1:] < ends[:-1]):
                raise fail(f"{where}: runs overlap or are not ascending")
            if int(lengths.sum()) != card:
                raise fail(f"{where}: runs hold {int(lengths.sum())} values, {card} declared")
            # value j of the container: j plus the gap before its run
            values = np.arange(card, dtype=np.int64) + np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        out[k:k + card] = values
        out[k:k + card] += first
        k += card
    if cardinality and out[-1] >= num_rows:
        raise fail(f"position {int(out[-1])} in a file of {num_rows} rows")
    return out
