# cython: language_level=3
"""Kernels for variable-length values stored as offsets + data.

Kernels return a non-negative result or a negative status; the Python wrappers in
:mod:`rcfmt.encodings` turn a status into :class:`CorruptFileError`.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy

import numpy as np
cimport numpy as cnp

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


def gather(const int64_t[::1] offsets, const uint8_t[::1] data, const code_t[::1] indices):
    """Gather values ``indices`` (already bounds-checked against len(offsets)-1).

    Returns ``(new_offsets int64[n+1], new_data uint8[...])``.
    """
    cdef Py_ssize_t n = indices.shape[0], i
    cdef int64_t total = 0, k, start, length
    out_offsets = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] oo = out_offsets
    with nogil:
        oo[0] = 0
        for i in range(n):
            k = <int64_t>indices[i]
            total += offsets[k + 1] - offsets[k]
            oo[i + 1] = total
    out_data = np.empty(total, dtype=np.uint8)
    cdef uint8_t[::1] od = out_data
    if total == 0:
        return out_offsets, out_data
    with nogil:
        for i in range(n):
            k = <int64_t>indices[i]
            start = offsets[k]
            length = offsets[k + 1] - start
            if length > 0:
                memcpy(&od[oo[i]], &data[start], length)
    return out_offsets, out_data
