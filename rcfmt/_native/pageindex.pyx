# cython: language_level=3
"""Page-index record checks in one pass (no temporaries): the reader calls this for
every column chunk a scan touches, so it is part of the fixed cost of a point lookup.

Records are read from the raw little-endian bytes (see docs/FORMAT.md, "Page index"):
``first_row`` u64 at 0, ``offset`` u64 at 8, ``length`` u32 at 16, ``row_count`` u32
at 20.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t


cdef inline uint64_t _u64(const uint8_t[::1] b, Py_ssize_t p) noexcept nogil:
    cdef uint64_t v = 0
    cdef int k
    for k in range(7, -1, -1):
        v = (v << 8) | b[p + k]
    return v


cdef inline uint32_t _u32(const uint8_t[::1] b, Py_ssize_t p) noexcept nogil:
    return (<uint32_t>b[p] | (<uint32_t>b[p + 1] << 8) | (<uint32_t>b[p + 2] << 16)
            | (<uint32_t>b[p + 3] << 24))


cdef bint _tile(const uint8_t[::1] raw, Py_ssize_t count, Py_ssize_t record_size,
               uint64_t rows, uint64_t start, uint64_t end) noexcept nogil:
    cdef uint64_t expected = 0, first, offset
    cdef uint32_t length, n
    cdef Py_ssize_t i, p
    for i in range(count):
        p = i * record_size
        first = _u64(raw, p)
        offset = _u64(raw, p + 8)
        length = _u32(raw, p + 16)
        n = _u32(raw, p + 20)
        if first != expected or n == 0:
            return False
        expected = first + n  # first == expected <= rows < 2**63: no overflow
        if expected > rows:
            return False
        if offset < start or offset > end or length > end - offset:
            return False
    return expected == rows


def entries_consistent(const uint8_t[::1] raw, Py_ssize_t count, Py_ssize_t record_size,
                       uint64_t rows, uint64_t start, uint64_t end):
    """Whether ``count`` records of ``record_size`` bytes in ``raw`` describe pages that
    tile rows ``[0, rows)`` in order (each with at least one row) and whose bytes
    ``[offset, offset + length)`` lie within the chunk ``[start, end)``."""
    if record_size < 24 or count < 0 or raw.shape[0] < count * record_size:
        return False
    cdef bint ok
    with nogil:
        ok = _tile(raw, count, record_size, rows, start, end)
    return ok
