# Kernels other native modules call directly (the page pipeline): raw pointers, no checks.
from libc.stdint cimport uint8_t, uint64_t

cdef Py_ssize_t packed_nbytes(Py_ssize_t n, int width, int itemsize) noexcept nogil
cdef void unpack_raw(const uint8_t* src, Py_ssize_t n, int width, int itemsize, uint64_t ref,
                     uint64_t first, bint delta, void* out) noexcept nogil
