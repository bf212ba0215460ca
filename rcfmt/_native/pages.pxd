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

# the columns of a page table (PageRun.pages, the block executor's ``t``)
cdef enum:
    P_POS = 0        # header position in buf
    P_ROWS = 1
    P_NULLS = 2
    P_FIRST = 3      # first row of the page within the run
    P_AT = 4         # values body: offset in the arena (P_ARENA) or in buf
    P_LEN = 5        # values body length
    P_ARENA = 6      # 1: body in the arena (decompressed), 0: in buf
    P_COLS = 7

# the fixed-width value modes of _page_values (Python sees them as rcfmt._native.pages.MODE_*)
cpdef enum:
    MODE_PLAIN = 1            # fixed-width PLAIN: rows * itemsize bytes
    MODE_BITPACK = 2          # BITPACK of 1/2/4/8-byte integers
    MODE_BITPACK_DECIMAL = 3  # BITPACK of decimal128 low words -> int64 (precision checked)
    MODE_DELTA = 4            # DELTA of 1/2/4/8-byte integers
    MODE_CODES = 5            # DICTIONARY codes -> uint32
    MODE_RLE = 6              # RLE of fixed-width values
    MODE_ALP = 7              # ALP of float64 (itemsize 8) or float32 (itemsize 4)
    MODE_BOOL_PLAIN = 8       # bits -> one byte per value (numpy bool)
    MODE_BOOL_RLE = 9         # RLE of bools (run values as bits)
    MODE_SPLIT = 10           # BYTE_SPLIT of 1/2/4/8-byte integers or float bits
    MODE_ALP_SPLIT = 11       # ALP_SPLIT of float64 (itemsize 8) or float32 (itemsize 4)

# the layouts of a VARBINARY page (_page_offsets)
cpdef enum:
    VB_PLAIN = 1          # int32 offsets[rows + 1] then the data bytes
    VB_DELTA_LENGTH = 2   # u32 m, u32 0, DELTA(int32) body of the offsets (m bytes), data

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
