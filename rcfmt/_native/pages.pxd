# The page pipeline's cores, for the block executor (rcfmt/_native/block.pyx): the same
# passes read_pages runs, on raw pointers, without the GIL.
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

# the columns of a page table (PageRun.pages, the block executor's ``t``)
cdef enum:
    P_POS = 0        # header position in buf
    P_ROWS = 1
    P_NULLS = 2
    P_FIRST = 3      # first row of the page within the run
    P_AT = 4         # values body: offset in the arena (P_ARENA) or in buf
    P_LEN = 5        # values body length
    P_ARENA = 6      # 1: body in the arena (decompressed), 0: in buf, LAZY: in the arena once inflated
    P_COLS = 7

cdef enum:
    LAZY = 2         # (P_ARENA) a zstd body left for its reader to inflate as far as it needs

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
                 uint8_t* bitmap, bint verify, Failure* f, Py_ssize_t lazy=*) except -1 nogil
