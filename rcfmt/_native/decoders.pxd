# The page value kernels (rcfmt/_native/decoders.pyx), for the page pipeline and the block
# executor: raw pointers, no GIL, every check on the bytes done here.
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

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
