# Kernels other native modules call directly (the page pipeline): raw pointers, no checks.
from libc.stdint cimport uint8_t, uint64_t

cdef Py_ssize_t packed_nbytes(Py_ssize_t n, int width, int itemsize) noexcept nogil
cdef void unpack_raw(const uint8_t* src, Py_ssize_t n, int width, int itemsize, uint64_t ref,
                     uint64_t first, bint delta, void* out) noexcept nogil
cdef void pack64_raw(const uint64_t* inp, Py_ssize_t n, int width, uint64_t ref, uint8_t* out) noexcept nogil
cdef void split_raw(const uint8_t* inp, int itemsize, Py_ssize_t n, int width, uint64_t ref,
                    uint8_t* out) noexcept nogil
