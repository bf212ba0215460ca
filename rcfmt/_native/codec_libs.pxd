# The codec entry points resolved at import (rcfmt/_native/codec_libs.pyx), for the page
# pipeline and the page writer. Raw pointers, no checks; no GIL.
from libc.stdint cimport int64_t, uint8_t

# what decompress_native reports
cdef enum:
    DEC_OK = 0
    DEC_NO_MEMORY = 1
    DEC_FAILED = 2        # the codec refused the bytes
    DEC_SIZE = 3          # they decompressed to another size
    DEC_UNAVAILABLE = 4   # no native entry point (or turned off): decompress in Python

cdef void* dctx_of_thread() noexcept nogil
cdef void dctx_done(void* ctx, void* held, bint failed) noexcept nogil
cdef int decompress_native(int codec, const uint8_t* src, Py_ssize_t n, uint8_t* dst, Py_ssize_t cap,
                           void** dctx, int64_t* detail) noexcept nogil
cdef const char* zstd_error_name(size_t code) noexcept nogil

cdef bint compress_native(int codec) noexcept nogil
cdef Py_ssize_t compress_bound(int codec, Py_ssize_t n) noexcept nogil
cdef void* compressor_new() noexcept nogil
cdef void compressor_free(void* cctx) noexcept nogil
cdef Py_ssize_t compress_into(int codec, int level, const uint8_t* src, Py_ssize_t n, uint8_t* dst,
                              Py_ssize_t cap, void* cctx) noexcept nogil
