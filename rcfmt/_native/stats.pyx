# cython: language_level=3
"""The writer's one-pass kernels over a chunk: min / max of decimal128 and
variable-length values with optional validity (numbers use numpy's SIMD reductions,
which beat a portable scalar loop), runs and order, and null slots filled.

The Python wrapper (:mod:`rcfmt.statistics`) applies the format's rules (-0.0/+0.0
bounds, truncation of strings); these kernels only scan.
"""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy

cdef extern from *:
    uint64_t __builtin_bswap64(uint64_t) nogil

cimport cython

import numpy as np

def minmax_decimal128(const uint8_t[:, ::1] values, const uint8_t[::1] valid=None):
    """Return ``(count, min_index, max_index)`` of 16-byte two's complement LE values."""
    cdef Py_ssize_t n = values.shape[0], i
    cdef Py_ssize_t count = 0, lo_i = -1, hi_i = -1
    cdef bint has_valid = valid is not None
    cdef int64_t hi_word, lo_hi_word, hi_hi_word
    cdef uint64_t lo_word, lo_lo_word, hi_lo_word
    if values.shape[1] != 16:
        raise ValueError("decimal128 values must be 16 bytes wide")
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity length differs from values length")
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                continue
            lo_word = (<const uint64_t*>&values[i, 0])[0]
            hi_word = (<const int64_t*>&values[i, 8])[0]
            if count == 0:
                lo_i = i
                hi_i = i
                lo_lo_word = lo_word
                lo_hi_word = hi_word
                hi_lo_word = lo_word
                hi_hi_word = hi_word
            else:
                if hi_word < lo_hi_word or (hi_word == lo_hi_word and lo_word < lo_lo_word):
                    lo_i = i
                    lo_lo_word = lo_word
                    lo_hi_word = hi_word
                if hi_word > hi_hi_word or (hi_word == hi_hi_word and lo_word > hi_lo_word):
                    hi_i = i
                    hi_lo_word = lo_word
                    hi_hi_word = hi_word
            count += 1
    return count, lo_i, hi_i


ctypedef fused offset_t:
    int32_t
    int64_t


def minmax_binary(const offset_t[::1] offsets, const uint8_t[::1] data, const uint8_t[::1] valid=None,
                  const int64_t[::1] bounds=None):
    """Return ``(count, min_index, max_index)`` of byte strings in bytewise unsigned
    order: int64 arrays with one entry per range ``[bounds[k], bounds[k + 1])`` of values
    (one range over all values when ``bounds`` is None). Indices are -1 where a range
    holds no valid value.

    ``offsets`` has n+1 entries into ``data``; they must already be validated. Values
    are compared by their first 8 bytes as one big-endian integer first (zero-padded),
    and byte by byte only when those are equal.
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1, k, ranges
    if n < 0:
        n = 0
    if valid is not None and valid.shape[0] != n:
        raise ValueError("validity length differs from values length")
    whole = np.array([0, n], np.int64)
    cdef const int64_t[::1] b = whole if bounds is None else bounds
    ranges = b.shape[0] - 1
    for k in range(ranges):
        if not 0 <= b[k] <= b[k + 1] <= n:
            raise ValueError("bounds must be non-decreasing within the values")
    count = np.zeros(max(ranges, 0), np.int64)
    lo = np.full(max(ranges, 0), -1, np.int64)
    hi = np.full(max(ranges, 0), -1, np.int64)
    cdef int64_t[::1] c = count, l = lo, h = hi
    cdef const uint8_t* base = &data[0] if data.shape[0] else <const uint8_t*>b""
    cdef const uint8_t* v = &valid[0] if valid is not None and n else NULL
    if n == 0:
        return count, lo, hi
    with nogil:
        for k in range(ranges):
            _minmax_range(&offsets[0], base, data.shape[0], v, b[k], b[k + 1], &c[k], &l[k], &h[k])
    return count, lo, hi


def truncated_bounds(const offset_t[::1] offsets, const uint8_t[::1] data, const int64_t[::1] lo_i,
                     const int64_t[::1] hi_i, int limit):
    """Per unit ``k``: statistics bounds from the values at rows ``lo_i[k]`` and
    ``hi_i[k]`` (-1: the unit has none), cut to ``limit`` bytes as
    :func:`rcfmt.schema.statistics.truncate_min` / ``truncate_max`` do (a longer
    minimum keeps its prefix; a longer maximum keeps its prefix with the last byte that
    is not 0xFF incremented and what follows dropped, and has no bound if every byte is
    0xFF). Returns ``(has, mins, maxs, min_exact, max_exact)``: bool arrays and object
    arrays of ``bytes`` (b"" where ``has`` is False). ``offsets`` must be validated."""
    cdef Py_ssize_t n = lo_i.shape[0], k, size = data.shape[0]
    cdef int64_t a, b, m
    cdef bytearray top
    cdef Py_ssize_t t
    if hi_i.shape[0] != n or limit < 0:
        raise ValueError("one upper row per lower row, and a limit >= 0")
    has = np.zeros(n, bool)
    min_exact = np.zeros(n, bool)
    max_exact = np.zeros(n, bool)
    mins = np.empty(n, dtype=object)
    maxs = np.empty(n, dtype=object)
    cdef uint8_t[::1] h = has.view(np.uint8), lx = min_exact.view(np.uint8), hx = max_exact.view(np.uint8)
    cdef const uint8_t* base = &data[0] if size else <const uint8_t*>b""
    cdef Py_ssize_t rows = offsets.shape[0] - 1
    for k in range(n):
        mins[k] = maxs[k] = b""
        if lo_i[k] < 0 or hi_i[k] < 0:
            continue
        if lo_i[k] >= rows or hi_i[k] >= rows:
            raise ValueError("a bound's row is past the values")
        a, b = offsets[hi_i[k]], offsets[hi_i[k] + 1]
        m = b - a
        if m <= limit:
            maxs[k] = base[a:b]
            hx[k] = 1
        else:
            t = limit
            while t > 0 and base[a + t - 1] == 0xFF:
                t -= 1
            if t == 0:
                continue  # no upper bound that short: the unit has no bounds at all
            top = bytearray(base[a:a + t])
            top[t - 1] += 1
            maxs[k] = bytes(top)
        a, b = offsets[lo_i[k]], offsets[lo_i[k] + 1]
        m = b - a
        mins[k] = base[a:b] if m <= limit else base[a:a + limit]
        lx[k] = m <= limit
        h[k] = 1
    max_exact &= has
    return has, mins, maxs, min_exact, max_exact


cdef void _minmax_range(const offset_t* offsets, const uint8_t* base, int64_t size, const uint8_t* valid, Py_ssize_t start,
                        Py_ssize_t stop, int64_t* count_out, int64_t* lo_out, int64_t* hi_out) noexcept nogil:
    cdef Py_ssize_t i, count = 0, lo_i = -1, hi_i = -1
    cdef uint64_t key, lo_key = 0, hi_key = 0
    for i in range(start, stop):
        if valid != NULL and not valid[i]:
            continue
        key = _prefix_key(base, size, offsets[i], offsets[i + 1])
        if count == 0:
            lo_i = i
            hi_i = i
            lo_key = key
            hi_key = key
        else:
            if key < lo_key or (key == lo_key and _tie(base, offsets, i, lo_i) < 0):
                lo_i = i
                lo_key = key
            if key > hi_key or (key == hi_key and _tie(base, offsets, i, hi_i) > 0):
                hi_i = i
                hi_key = key
        count += 1
    count_out[0] = count
    lo_out[0] = lo_i
    hi_out[0] = hi_i


cdef inline uint64_t _prefix_key(const uint8_t* base, int64_t size, int64_t a0, int64_t a1) noexcept nogil:
    """The first (up to) 8 bytes at ``base[a0:a1]`` as a big-endian integer, zero-padded
    (``base`` holds ``size`` bytes): keys order like the bytes they hold (equal keys
    decide nothing)."""
    cdef uint64_t key = 0
    cdef int64_t k, m = a1 - a0
    if m >= 8:  # one load, byte-swapped to big-endian
        memcpy(&key, base + a0, 8)
        return __builtin_bswap64(key)
    if a0 + 8 <= size:  # a short value with 8 readable bytes: load them, keep its own
        memcpy(&key, base + a0, 8)
        return __builtin_bswap64(key) & ~(0xFFFFFFFFFFFFFFFFULL >> (8 * m)) if m else 0
    for k in range(m):
        key |= (<uint64_t>base[a0 + k]) << (56 - 8 * k)
    return key


cdef inline int _tie(const uint8_t* base, const offset_t* offsets, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Order of values ``a`` and ``b`` whose prefix keys are equal: up to 8 bytes each,
    the shorter is a prefix of the longer (padding and key agree), so lengths decide."""
    cdef int64_t a0 = offsets[a], b0 = offsets[b]
    cdef int64_t la = offsets[a + 1] - a0, lb = offsets[b + 1] - b0
    cdef int64_t m = la if la < lb else lb
    cdef int c = 0
    if la <= 8 and lb <= 8:
        return (la > lb) - (la < lb)
    if m > 0:
        c = memcmp(base + a0, base + b0, m)
    if c != 0:
        return c
    return (la > lb) - (la < lb)


# ------------------------------------------------------------------ runs and order
ctypedef fused ordered_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t


def runs_and_order(const ordered_t[::1] values):
    """``(runs, nondecreasing)`` of ``values`` in one pass: the number of runs of equal
    consecutive values (0 for no values) and whether no value is below the one before.
    Floats and decimals are passed as unsigned words of their width (runs are then of
    bit-identical values; the order flag means nothing for them)."""
    cdef Py_ssize_t n = values.shape[0], i, changes = 0
    cdef bint ordered = True
    if n == 0:
        return 0, True
    with nogil:
        for i in range(1, n):
            changes += values[i] != values[i - 1]
            ordered &= values[i] >= values[i - 1]
    return changes + 1, ordered


def runs_wide(const uint64_t[::1] words):
    """The number of runs of equal consecutive 16-byte values given as word pairs."""
    cdef Py_ssize_t n = words.shape[0] // 2, i, changes = 0
    if n == 0:
        return 0
    with nogil:
        for i in range(1, n):
            changes += (words[2 * i] != words[2 * i - 2]) | (words[2 * i + 1] != words[2 * i - 1])
    return changes + 1


# ------------------------------------------------------------------ null slots
ctypedef fused item_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef Py_ssize_t _fill(const item_t* v, const uint8_t* valid, Py_ssize_t n, Py_ssize_t per, item_t* out) noexcept nogil:
    """Items of ``per`` words each; see :func:`fill_null_slots`. The first valid row, or
    -1 when none is (``out`` then untouched)."""
    cdef Py_ssize_t i, k, first = 0, last
    while first < n and not valid[first]:
        first += 1
    if first == n:
        return -1
    last = first
    for i in range(n):
        if i >= first and valid[i]:
            last = i
        for k in range(per):
            out[i * per + k] = v[last * per + k]
    return first


def fill_null_slots(values, const uint8_t[::1] valid):
    """A copy of the fixed-width ``values`` (a C-contiguous numpy array of 1-, 2-, 4-, 8-
    or 16-byte items) whose null slots (``valid`` byte 0) repeat the previous valid
    value, leading nulls the first valid one; None when no row is valid. ValueError for
    another item size or a ``valid`` of another length."""
    cdef Py_ssize_t n = values.shape[0], size = values.dtype.itemsize, first = 0
    if valid.shape[0] != n:
        raise ValueError(f"{valid.shape[0]} validity bytes for {n} values")
    if size not in (1, 2, 4, 8, 16) or not values.flags.c_contiguous:
        raise ValueError("values must be C-contiguous items of 1, 2, 4, 8 or 16 bytes")
    out = np.empty_like(values)
    if n == 0:
        return out
    cdef const uint8_t[::1] src = values.reshape(-1).view(np.uint8)
    cdef uint8_t[::1] dst = out.reshape(-1).view(np.uint8)
    with nogil:
        if size == 1:
            first = _fill(<const uint8_t*>&src[0], &valid[0], n, 1, <uint8_t*>&dst[0])
        elif size == 2:
            first = _fill(<const uint16_t*>&src[0], &valid[0], n, 1, <uint16_t*>&dst[0])
        elif size == 4:
            first = _fill(<const uint32_t*>&src[0], &valid[0], n, 1, <uint32_t*>&dst[0])
        else:
            first = _fill(<const uint64_t*>&src[0], &valid[0], n, size // 8, <uint64_t*>&dst[0])
    return None if first < 0 else out
