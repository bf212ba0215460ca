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

# zstd's streaming buffers (ZSTD_inBuffer / ZSTD_outBuffer of zstd.h)
cdef struct ZstdIn:
    const void* src
    size_t size
    size_t pos

cdef struct ZstdOut:
    void* dst
    size_t size
    size_t pos

# one zstd frame inflated up to the prefix a reader needs (see inflate_to)
cdef struct Inflater:
    ZstdIn src
    ZstdOut out
    Py_ssize_t cap   # the body's uncompressed size (a one-shot inflation fills dst[:cap])
    bint ended       # the frame is complete

cdef void* dctx_of_thread() noexcept nogil
cdef void dctx_done(void* ctx, void* held, bint failed) noexcept nogil
cdef int decompress_native(int codec, const uint8_t* src, Py_ssize_t n, uint8_t* dst, Py_ssize_t cap,
                           void** dctx, int64_t* detail) noexcept nogil
cdef const char* zstd_error_name(size_t code) noexcept nogil
cdef bint partial_native() noexcept nogil
cdef bint zstd_blocks_apart(const uint8_t* src, Py_ssize_t n, Py_ssize_t raw) noexcept nogil
cdef int inflate_begin(Inflater* z, void** dctx, const uint8_t* src, Py_ssize_t n, uint8_t* dst,
                       Py_ssize_t cap) noexcept nogil
cdef int inflate_to(Inflater* z, void* dctx, Py_ssize_t need, int64_t* detail) noexcept nogil

cdef bint compress_native(int codec) noexcept nogil
cdef Py_ssize_t compress_bound(int codec, Py_ssize_t n) noexcept nogil
cdef void* compressor_new() noexcept nogil
cdef void compressor_free(void* cctx) noexcept nogil
cdef Py_ssize_t compress_into(int codec, int level, const uint8_t* src, Py_ssize_t n, uint8_t* dst,
                              Py_ssize_t cap, void* cctx) noexcept nogil
cdef bint blocks_native() noexcept nogil
cdef Py_ssize_t compress_blocks_into(int level, const uint8_t* src, Py_ssize_t n, uint8_t* dst, Py_ssize_t cap,
                                     void* cctx, Py_ssize_t block) noexcept nogil
