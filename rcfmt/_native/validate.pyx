"""Checks that make every array the reader returns valid Arrow (``validate(full=True)``).

* :func:`utf8_invalid_row`: each value of a string column must be well-formed UTF-8
  (Unicode 15, table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF).
  The values' bytes are checked in one pass over the data span (64 ASCII bytes per
  step), and each value boundary must fall on a character start: together these say
  that every value on its own is well-formed.
* :func:`decimal_invalid_row`: each unscaled decimal128 value must fit its declared
  precision, ``|v| <= 10**p - 1``.

Both release the GIL and return the index of the first bad value, or -1.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

cimport numpy as cnp

cnp.import_array()

__all__ = ["utf8_invalid_row", "decimal_invalid_row", "backwards_offset_row"]

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>

    /* Position of the first byte that does not start a well-formed UTF-8 sequence
       inside p[0:n], or -1. Sets *non_ascii if any byte is >= 0x80. Windows of 64
       bytes that are all ASCII are skipped with one OR-reduction (vectorized);
       other windows are checked character by character. */
    static int64_t rc_utf8_invalid_at(const uint8_t* p, int64_t n, int* non_ascii) {
        int64_t i = 0;
        while (i < n) {
            int64_t window_end = i + 64;
            if (window_end <= n) {
                uint64_t acc = 0, w;
                for (int k = 0; k < 8; k++) { memcpy(&w, p + i + 8 * k, 8); acc |= w; }
                if (!(acc & 0x8080808080808080ULL)) { i = window_end; continue; }
            } else {
                window_end = n;
            }
            while (i < window_end) {
                uint8_t c = p[i];
                if (c < 0x80) { i += 1; continue; }
                *non_ascii = 1;
                int len;
                uint8_t lo = 0x80, hi = 0xBF;
                if (c >= 0xC2 && c <= 0xDF) len = 2;
                else if (c == 0xE0) { len = 3; lo = 0xA0; }
                else if (c >= 0xE1 && c <= 0xEC) len = 3;
                else if (c == 0xED) { len = 3; hi = 0x9F; }
                else if (c >= 0xEE && c <= 0xEF) len = 3;
                else if (c == 0xF0) { len = 4; lo = 0x90; }
                else if (c >= 0xF1 && c <= 0xF3) len = 4;
                else if (c == 0xF4) { len = 4; hi = 0x8F; }
                else return i;
                if (i + len > n) return i;
                if (p[i + 1] < lo || p[i + 1] > hi) return i;
                for (int k = 2; k < len; k++)
                    if ((p[i + k] & 0xC0) != 0x80) return i;
                i += len;
            }
        }
        return -1;
    }

    /* First value (16-byte little-endian two's complement) with |v| > 10**precision - 1. */
    static int64_t rc_decimal_invalid_at(const uint64_t* v, int64_t n, int precision) {
        __int128 lim = 1;
        for (int k = 0; k < precision; k++) lim *= 10;
        lim -= 1;
        for (int64_t i = 0; i < n; i++) {
            __int128 x = (__int128)(((unsigned __int128)v[2 * i + 1] << 64) | v[2 * i]);
            if (x > lim || x < -lim) return i;
        }
        return -1;
    }
    """
    int64_t rc_utf8_invalid_at(const uint8_t* p, int64_t n, int* non_ascii) nogil
    int64_t rc_decimal_invalid_at(const uint64_t* v, int64_t n, int precision) nogil


ctypedef fused offset_t:
    int32_t
    int64_t


cdef int64_t _utf8_row(const uint8_t* data, int64_t size, const offset_t* off, int64_t n) noexcept nogil:
    cdef int64_t i, at, lo, hi, mid
    cdef int non_ascii = 0
    if n == 0 or off[n] == off[0]:
        return -1
    at = rc_utf8_invalid_at(data + off[0], off[n] - off[0], &non_ascii)
    if at < 0:
        if not non_ascii:  # ASCII only: no boundary can split a character
            return -1
        at = off[n]
        hi = n
    else:  # the value holding byte off[0] + at
        at += off[0]
        lo, hi = 0, n - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if off[mid] <= at:
                lo = mid
            else:
                hi = mid - 1
    # bytes before ``at`` are whole characters: a boundary there on a continuation
    # byte splits one, and the value before it is the first ill-formed one
    for i in range(1, hi + 1):
        if off[i] < at and (data[off[i]] & 0xC0) == 0x80:
            return i - 1
    return hi if hi < n else -1


def utf8_invalid_row(const uint8_t[::1] data, const offset_t[::1] offsets):
    """Index of the first value ``data[offsets[i]:offsets[i+1]]`` that is not well-formed
    UTF-8, or -1. The offsets must already be checked (non-decreasing, inside ``data``)."""
    cdef int64_t n = offsets.shape[0] - 1
    cdef int64_t row
    if n <= 0:
        return -1
    if offsets[0] < 0 or offsets[n] > data.shape[0] or offsets[0] > offsets[n]:
        raise ValueError("offsets outside the data")
    if data.shape[0] == 0:
        return -1
    with nogil:
        row = _utf8_row(&data[0], data.shape[0], &offsets[0], n)
    return row


def backwards_offset_row(const offset_t[::1] offsets):
    """Index ``i`` of the first value whose offsets go backwards (``offsets[i + 1] <
    offsets[i]``), or -1: one GIL-free pass, no temporaries."""
    cdef int64_t n = offsets.shape[0] - 1, i, row = -1
    if n <= 0:
        return -1
    with nogil:
        for i in range(n):
            if offsets[i + 1] < offsets[i]:
                row = i
                break
    return row


def decimal_invalid_row(values, int precision):
    """Index of the first 16-byte value of ``values`` (a contiguous array of decimal128
    storage) beyond ``precision`` digits, or -1."""
    cdef cnp.ndarray a = values
    if not cnp.PyArray_IS_C_CONTIGUOUS(a) or cnp.PyArray_ITEMSIZE(a) != 16:
        raise ValueError("values must be a contiguous array of 16-byte items")
    if not 1 <= precision <= 38:
        raise ValueError(f"precision {precision} out of range 1..38")
    cdef int64_t n = cnp.PyArray_DIM(a, 0)
    cdef const uint64_t* v = <const uint64_t*>cnp.PyArray_DATA(a)
    cdef int64_t row
    with nogil:
        row = rc_decimal_invalid_at(v, n, precision)
    return row


# ------------------------------------------------------------------ raw cores (validate.pxd)
cdef int64_t utf8_row32(const uint8_t* data, int64_t size, const int32_t* off, int64_t n) noexcept nogil:
    return _utf8_row(data, size, off, n)


cdef int64_t utf8_row64(const uint8_t* data, int64_t size, const int64_t* off, int64_t n) noexcept nogil:
    return _utf8_row(data, size, off, n)


cdef int64_t decimal_row(const uint64_t* v, int64_t n, int precision) noexcept nogil:
    return rc_decimal_invalid_at(v, n, precision)
