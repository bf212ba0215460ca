# cython: language_level=3
"""Kernels for variable-length values stored as offsets + data.

Kernels return a non-negative result or a negative status; the Python wrappers in
:mod:`rcfmt.encodings` turn a status into :class:`CorruptFileError`.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcmp, memcpy

import numpy as np
cimport numpy as cnp

from rcfmt._native.bytes_order cimport bytes_cmp

cnp.import_array()

ctypedef fused offset_t:
    int32_t
    int64_t

ctypedef fused code_t:
    uint8_t
    uint16_t
    uint32_t
    int32_t
    int64_t


def check_offsets(const offset_t[::1] offsets, int64_t data_length):
    """Return 0 if offsets start at 0, never decrease and end at ``data_length``.

    Otherwise return the negative position (-(i+1)) of the first bad entry.
    """
    cdef Py_ssize_t n = offsets.shape[0], i
    cdef Py_ssize_t bad = 0
    cdef int64_t prev = 0
    if n == 0 or offsets[0] != 0:
        return -1
    with nogil:
        for i in range(1, n):
            if offsets[i] < prev:
                bad = i + 1
                break
            prev = offsets[i]
    if bad:
        return -bad
    if prev != data_length:
        return -n
    return 0


cdef inline void _gather_values(const int64_t* offsets, const uint8_t* data, int64_t data_length,
                                const code_t* indices, Py_ssize_t n, uint8_t* out,
                                offset_t* out_offsets) noexcept nogil:
    """Copy values ``indices`` back to back into ``out``. Values of at most 16 bytes
    that start at least 16 bytes before ``data_length`` are copied as 16 bytes (one
    unaligned vector move): ``out`` has 16 bytes of slack at its end."""
    cdef Py_ssize_t i
    cdef int64_t k, start, length, pos = 0
    cdef int64_t short_end = data_length - 16  # a 16-byte move from here on stays inside data
    out_offsets[0] = 0
    for i in range(n):
        k = <int64_t>indices[i]
        start = offsets[k]
        length = offsets[k + 1] - start
        if length <= 16 and start <= short_end:
            memcpy(out + pos, data + start, 16)
        else:
            memcpy(out + pos, data + start, length)
        pos += length
        out_offsets[i + 1] = <offset_t>pos

def gather(const int64_t[::1] offsets, const uint8_t[::1] data, const code_t[::1] indices):
    """Gather values ``indices`` (already bounds-checked against len(offsets)-1; the
    offsets within ``data``).

    Returns ``(new_offsets, new_data)``; offsets are int32 when the data fits 2 GiB
    (Arrow's layout for string/binary), else int64.
    """
    cdef Py_ssize_t n = indices.shape[0], i
    cdef int64_t total = 0, k
    with nogil:
        for i in range(n):
            k = <int64_t>indices[i]
            total += offsets[k + 1] - offsets[k]
    # (the source is read in place: a few values gathered from a large chunk, as a
    # dictionary's entries are, cost what they copy)
    cdef const uint8_t* src = &data[0] if data.shape[0] else <const uint8_t*>b""
    out_buffer = np.empty(total + 16, dtype=np.uint8)
    cdef uint8_t[::1] od = out_buffer
    cdef bint small = total <= 2147483647
    out_offsets = np.empty(n + 1, dtype=np.int32 if small else np.int64)
    cdef int32_t[::1] o32
    cdef int64_t[::1] o64
    if small:
        o32 = out_offsets
        with nogil:
            _gather_values(&offsets[0], src, data.shape[0], &indices[0] if n else NULL, n, &od[0], &o32[0])
    else:
        o64 = out_offsets
        with nogil:
            _gather_values(&offsets[0], src, data.shape[0], &indices[0] if n else NULL, n, &od[0], &o64[0])
    return out_offsets, out_buffer[:total]

def _copy_part(const offset_t[::1] offsets, const uint8_t[::1] data, out_offsets, uint8_t[::1] out_data,
               Py_ssize_t row, int64_t pos):
    """Append one part (offsets need not start at 0) at ``row``/``pos``; return new pos."""
    cdef Py_ssize_t k = offsets.shape[0] - 1, i
    cdef int64_t start = offsets[0], length = offsets[k] - offsets[0]
    cdef int32_t[::1] o32
    cdef int64_t[::1] o64
    if length > 0:
        memcpy(&out_data[pos], &data[start], length)
    if out_offsets.dtype == np.int32:
        o32 = out_offsets
        with nogil:
            for i in range(1, k + 1):
                o32[row + i] = <int32_t>(offsets[i] - start + pos)
    else:
        o64 = out_offsets
        with nogil:
            for i in range(1, k + 1):
                o64[row + i] = offsets[i] - start + pos
    return pos + length


def concat(list offsets_list, list data_list, bint large=False):
    """Concatenate variable-length parts into Arrow layout: ``(offsets, data)`` with
    offsets starting at 0, int64 if ``large`` or the data exceeds 2 GiB, else int32."""
    cdef Py_ssize_t rows = 0, row = 0
    cdef int64_t total = 0, pos = 0
    for off in offsets_list:
        rows += off.shape[0] - 1
        total += int(off[off.shape[0] - 1]) - int(off[0])
    out_dtype = np.int64 if (large or total > 2147483647) else np.int32
    out_offsets = np.empty(rows + 1, dtype=out_dtype)
    out_offsets[0] = 0
    out_data = np.empty(total, dtype=np.uint8)
    for off, data in zip(offsets_list, data_list):
        pos = _copy_part(off, data, out_offsets, out_data, row, pos)
        row += off.shape[0] - 1
    return out_offsets, out_data


def prefix_mask(const offset_t[::1] offsets, const uint8_t[::1] data, const uint8_t[::1] prefix, bint negated,
                uint8_t[::1] out):
    """``out[i]`` = 1 where value ``i`` (``data[offsets[i]:offsets[i+1]]``) starts with
    ``prefix`` (``negated``: where it does not), else 0. Returns 0, or -1 when an offset
    falls outside ``data`` or runs backwards (nothing read out of bounds)."""
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    cdef int64_t start, end, p = prefix.shape[0], size = data.shape[0]
    cdef const uint8_t* d = &data[0] if size else NULL
    cdef const uint8_t* want = &prefix[0] if p else NULL
    cdef bint hit, bad = False
    if n < 0:
        return 0
    if out.shape[0] < n:
        raise ValueError("out is shorter than the values")
    with nogil:
        for i in range(n):
            start, end = offsets[i], offsets[i + 1]
            if start < 0 or end < start or end > size:
                bad = True
                break
            hit = end - start >= p and (p == 0 or memcmp(d + start, want, p) == 0)
            out[i] = hit != negated
    return -1 if bad else 0


def set_mask(const offset_t[::1] offsets, const uint8_t[::1] data, const int64_t[::1] member_offsets,
             const uint8_t[::1] members, bint negated, uint8_t[::1] out):
    """``out[i]`` = 1 where value ``i`` is one of the members (``negated``: where it is
    not), else 0; member ``j`` is ``members[member_offsets[j]:member_offsets[j+1]]``,
    sorted in byte order and distinct (binary search per value). Returns 0, or -1 when
    an offset of the values falls outside ``data`` or runs backwards."""
    cdef Py_ssize_t i, n = offsets.shape[0] - 1, k = member_offsets.shape[0] - 1, lo, hi, mid
    cdef int64_t start, end, size = data.shape[0]
    cdef const uint8_t* d = &data[0] if size else NULL
    cdef const uint8_t* m = &members[0] if members.shape[0] else NULL
    cdef int c
    cdef bint hit, bad = False
    if n < 0:
        return 0
    if out.shape[0] < n or k < 0 or member_offsets[k] > members.shape[0]:
        raise ValueError("out is shorter than the values, or the members' offsets pass their data")
    with nogil:
        for i in range(n):
            start, end = offsets[i], offsets[i + 1]
            if start < 0 or end < start or end > size:
                bad = True
                break
            lo, hi, hit = 0, k, False
            while lo < hi:
                mid = (lo + hi) >> 1
                c = bytes_cmp(m + member_offsets[mid], member_offsets[mid + 1] - member_offsets[mid], d + start,
                               end - start)
                if c == 0:
                    hit = True
                    break
                if c < 0:
                    lo = mid + 1
                else:
                    hi = mid
            out[i] = hit != negated
    return -1 if bad else 0
