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

# The page pipeline's cores, for the block executor (rcfmt/_native/block.pyx): the same
# passes read_pages runs, on raw pointers, without the GIL.
from libc.stdint cimport int64_t, uint64_t

# the first failure of a pass: its code (an Err of pages.pyx, 0: none), page, position
cdef struct Failure:
    int code
    Py_ssize_t page
    Py_ssize_t pos
    int64_t a
    int64_t b
    int64_t c

# pass 1: parse and check every header of a run into the page table ``t`` (7 columns:
# position, rows, nulls, first row, values-body offset, its length, in the arena)
cdef int _headers(const uint8_t* buf, Py_ssize_t size, Py_ssize_t pos, Py_ssize_t end,
                  const int64_t* positions, const int64_t* expected, const int64_t* lengths, Py_ssize_t count,
                  Py_ssize_t max_pages, Py_ssize_t max_rows, int page_type, int encoding,
                  int64_t[:, ::1] t, Py_ssize_t* n_out, Py_ssize_t* rows_out, Py_ssize_t* arena_out,
                  Py_ssize_t* end_out, bint* any_nulls, Failure* f) noexcept nogil
# pass 2: body checksums, decompression into ``arena``, validity into ``bitmap``
cdef int _bodies(const uint8_t* buf, int64_t[:, ::1] t, Py_ssize_t n, uint8_t* arena,
                 uint8_t* bitmap, bint verify, Failure* f) except -1 nogil
# one page's values (every fixed-width mode, bools, dictionary codes); 0, or 1 if a check fails
cdef int _page_values(int mode, const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, int itemsize,
                      bint signed, uint32_t limit, int64_t decimal_lim, uint8_t* out,
                      uint64_t* scratch) noexcept nogil
# BITPACK values at chosen rows of one page, read in place; 0, 1 if a check fails, 2 to decode it whole
cdef int _bitpack_gather(int mode, const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, int itemsize,
                         bint signed, int64_t decimal_lim, const int64_t* sel, Py_ssize_t j0, Py_ssize_t j1,
                         int64_t first, uint8_t* out) noexcept nogil
# dictionary codes (any layout) / PLAIN fixed-width values at chosen rows of one page, read in place; 0, or 1
cdef int _codes_gather(const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, uint32_t limit, const int64_t* sel,
                       Py_ssize_t j0, Py_ssize_t j1, int64_t first, uint32_t* out) noexcept nogil
cdef int _plain_gather(const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, int itemsize, const int64_t* sel,
                       Py_ssize_t j0, Py_ssize_t j1, int64_t first, uint8_t* out) noexcept nogil
# one VARBINARY page's checked offsets (from 0) and where its data is; 0, or 1
cdef int _page_offsets(int mode, const uint8_t* body, Py_ssize_t size, Py_ssize_t rows,
                       uint32_t* local, const uint8_t** data, Py_ssize_t* data_len) noexcept nogil
