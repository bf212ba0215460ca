# The validity checks as raw cores, for the block executor: the first bad value, or -1.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

cdef int64_t utf8_row32(const uint8_t* data, int64_t size, const int32_t* off, int64_t n) noexcept nogil
cdef int64_t utf8_row64(const uint8_t* data, int64_t size, const int64_t* off, int64_t n) noexcept nogil
cdef int64_t decimal_row(const uint64_t* v, int64_t n, int precision) noexcept nogil


cdef inline int64_t utf8_rows(const uint8_t* data, int64_t size, const void* off, bint wide, int64_t n) noexcept nogil:
    """:func:`utf8_row64` or :func:`utf8_row32` of offsets ``off`` as ``wide`` says."""
    return utf8_row64(data, size, <const int64_t*>off, n) if wide else utf8_row32(data, size, <const int32_t*>off, n)
