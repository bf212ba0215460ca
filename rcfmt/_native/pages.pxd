# What other native modules call directly (the page writer): CRC-32 and the codecs the
# page pipeline resolved at import. Raw pointers, no checks.
from libc.stdint cimport uint8_t, uint32_t

cdef uint32_t crc32_raw(const uint8_t* p, size_t n, uint32_t crc) noexcept nogil
cdef bint compress_native(int codec) noexcept nogil
cdef Py_ssize_t compress_bound(int codec, Py_ssize_t n) noexcept nogil
cdef void* compressor_new() noexcept nogil
cdef void compressor_free(void* cctx) noexcept nogil
cdef Py_ssize_t compress_into(int codec, int level, const uint8_t* src, Py_ssize_t n, uint8_t* dst,
                              Py_ssize_t cap, void* cctx) noexcept nogil
