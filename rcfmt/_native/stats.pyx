# cython: language_level=3
"""One-pass min / max / NaN-count kernels over fixed-width values with optional validity.

The Python wrapper (:mod:`rcfmt.stats`) applies the format's rules (-0.0/+0.0 bounds,
truncation of strings); these kernels only scan.
"""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp

cimport cython

ctypedef fused number_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    float
    double


def minmax(const number_t[::1] values, const uint8_t[::1] valid=None):
    """Return ``(count, min, max, nan_count)`` over values whose ``valid`` byte is non-zero.

    ``count`` is the number of non-null, non-NaN values (0 means min/max are undefined).
    NaN values are counted and skipped; -0.0 and +0.0 compare equal (the first seen wins).
    """
    cdef Py_ssize_t n = values.shape[0], i
    cdef Py_ssize_t count = 0, nans = 0
    cdef number_t lo = 0, hi = 0, v
    cdef bint has_valid = valid is not None
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity length differs from values length")
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                continue
            v = values[i]
            if number_t is float or number_t is double:
                if v != v:
                    nans += 1
                    continue
            if count == 0:
                lo = v
                hi = v
            else:
                if v < lo:
                    lo = v
                if v > hi:
                    hi = v
            count += 1
    return count, lo, hi, nans


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


def minmax_binary(const int64_t[::1] offsets, const uint8_t[::1] data, const uint8_t[::1] valid=None):
    """Return ``(count, min_index, max_index)`` of byte strings, bytewise unsigned order.

    ``offsets`` has n+1 entries into ``data``; they must already be validated.
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1, i
    cdef Py_ssize_t count = 0, lo_i = -1, hi_i = -1
    cdef bint has_valid = valid is not None
    if n < 0:
        return 0, -1, -1
    if has_valid and valid.shape[0] != n:
        raise ValueError("validity length differs from values length")
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                continue
            if count == 0:
                lo_i = i
                hi_i = i
            else:
                if _cmp(data, offsets[i], offsets[i + 1], offsets[lo_i], offsets[lo_i + 1]) < 0:
                    lo_i = i
                if _cmp(data, offsets[i], offsets[i + 1], offsets[hi_i], offsets[hi_i + 1]) > 0:
                    hi_i = i
            count += 1
    return count, lo_i, hi_i


cdef inline int _cmp(const uint8_t[::1] data, int64_t a0, int64_t a1, int64_t b0, int64_t b1) noexcept nogil:
    cdef int64_t la = a1 - a0, lb = b1 - b0
    cdef int64_t m = la if la < lb else lb
    cdef int c = 0
    if m > 0:
        c = memcmp(&data[a0], &data[b0], m)
    if c != 0:
        return c
    return (la > lb) - (la < lb)
