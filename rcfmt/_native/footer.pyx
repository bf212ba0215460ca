# cython: language_level=3
"""The footer's block and chunk tables checked in one pass (part of every open; a
few microseconds, so the GIL is kept).

The tables are read from their raw little-endian bytes (docs/FORMAT.md, "Footer"):

- block record: ``first_row`` u64 @0, ``row_count`` u64 @8, ``offset`` u64 @16,
  ``length`` u64 @24;
- chunk record: ``offset`` u64 @0, ``length`` @8, ``null_count`` @24, ``nan_count``
  @32, ``page_index_offset`` @48, ``bloom_offset`` @56 (all u64);
  ``page_index_length`` u32 @64, ``bloom_length`` @72, ``dictionary_length`` @76,
  ``page_count`` @80; ``encoding`` u8 @88.

The kernel returns a status (one of the ``FOOTER_*`` codes, 0 when everything holds)
and the column and block of the first failure; :mod:`rcfmt.format.footer` turns it
into the located :class:`~rcfmt.errors.CorruptFileError`. When several checks fail,
the one with the lowest code is reported, at its first column, then first block.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

cpdef enum:
    FOOTER_OK = 0
    FOOTER_BLOCK_ROWS = 1          # block first rows do not follow row counts (or rows >= 2^48)
    FOOTER_NUM_ROWS = 2            # num_rows disagrees with the blocks
    FOOTER_BLOCK_OUTSIDE = 3       # block outside the data region
    FOOTER_ROWS_WITHOUT_COLUMNS = 4
    FOOTER_CHUNK_OUTSIDE = 5       # column chunk outside its block
    FOOTER_DICTIONARY_LENGTH = 6   # dictionary page longer than its chunk
    FOOTER_PAGE_INDEX_OUTSIDE = 7
    FOOTER_BLOOM_OUTSIDE = 8
    FOOTER_PAGES_OVER_ROWS = 9     # more pages than rows in a chunk
    FOOTER_PAGES_OVER_BYTES = 10   # more pages than the chunk's bytes hold page headers
    FOOTER_ROWS_OVER_PAGES = 11    # more rows than its pages can hold
    FOOTER_COUNTS_OVER_ROWS = 12   # null or NaN count above the block's rows
    FOOTER_PAGE_INDEX_LENGTH = 13  # page index length disagrees with the page count
    FOOTER_ENCODING_TYPE = 14      # a known encoding that cannot hold the column's type
    _FOOTER_CHECKS = 15

from rcfmt._native.format cimport BLOCK_RECORD_SIZE, MIN_BLOOM_LENGTH, PAGE_HEADER_SIZE


cdef inline uint64_t _u64(const uint8_t* p) noexcept nogil:
    cdef uint64_t v
    memcpy(&v, p, 8)  # little-endian hosts only (as every kernel here)
    return v


cdef inline uint64_t _u32(const uint8_t* p) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, p, 4)
    return v


cdef inline bint _outside(uint64_t off, uint64_t length, uint64_t lo, uint64_t hi) noexcept nogil:
    """[off, off + length) not within [lo, hi) (wrap-around counts as outside)."""
    return off < lo or off > hi or length > hi - off


def check_tables(const uint8_t[::1] footer, Py_ssize_t blocks_offset, Py_ssize_t block_record_size,
                 Py_ssize_t num_blocks, const Py_ssize_t[::1] chunk_offsets,
                 const Py_ssize_t[::1] chunk_record_sizes, const Py_ssize_t[::1] page_record_sizes,
                 const uint8_t[:, ::1] encoding_ok, const uint8_t[::1] element, uint64_t num_rows,
                 uint64_t header_size,
                 uint64_t data_end, uint64_t pi_off, uint64_t pi_len, uint64_t bf_off, uint64_t bf_len,
                 uint64_t max_page_rows):
    """Check the block table and every column's chunk table; ``(code, column, block)``.

    The tables lie in ``footer``: ``num_blocks`` block records of ``block_record_size``
    bytes at ``blocks_offset``, and per column ``c`` as many chunk records of
    ``chunk_record_sizes[c]`` bytes at ``chunk_offsets[c]``. ``page_record_sizes[c]`` is
    the size of that column's page-index records; ``encoding_ok[c, e]`` is 0 when
    encoding id ``e`` is known and cannot hold column ``c``'s type. ``element[c]`` is 1
    for a column whose slots are list elements (docs/FORMAT.md §3a): its chunks hold
    any number of values, bounded by their pages (``2^20`` each), not the block's rows.
    Regions are
    ``(offset, length)`` pairs; ``data_end`` is where the data region ends.
    ``column``/``block`` are -1 where the failure has none.
    """
    cdef Py_ssize_t ncols = chunk_offsets.shape[0]
    cdef Py_ssize_t size = footer.shape[0]
    if (block_record_size < BLOCK_RECORD_SIZE or num_blocks < 0 or blocks_offset < 0
            or num_blocks * block_record_size > size - blocks_offset
            or chunk_record_sizes.shape[0] < ncols or page_record_sizes.shape[0] < ncols
            or encoding_ok.shape[0] < ncols or encoding_ok.shape[1] < 256 or element.shape[0] < ncols):
        raise ValueError("check_tables: tables outside the footer")
    cdef Py_ssize_t c, b
    for c in range(ncols):
        if (chunk_record_sizes[c] < 96 or chunk_offsets[c] < 0
                or num_blocks * chunk_record_sizes[c] > size - chunk_offsets[c]):
            raise ValueError("check_tables: chunk table outside the footer")
    cdef const uint8_t* blocks = &footer[0] + blocks_offset if size else NULL

    # --- blocks: first rows follow row counts, row counts add up, bytes in the data region
    cdef const uint8_t* rec
    cdef uint64_t expected = 0, rows
    cdef uint64_t row_limit = (<uint64_t>1) << 48
    for b in range(num_blocks):
        rec = blocks + b * block_record_size
        rows = _u64(rec + 8)
        if _u64(rec) != expected or rows >= row_limit or expected + rows < expected:
            return FOOTER_BLOCK_ROWS, -1, b
        expected += rows
    if expected != num_rows:
        return FOOTER_NUM_ROWS, -1, -1
    for b in range(num_blocks):
        rec = blocks + b * block_record_size
        if _outside(_u64(rec + 16), _u64(rec + 24), header_size, data_end):
            return FOOTER_BLOCK_OUTSIDE, -1, b
    if ncols == 0:
        for b in range(num_blocks):
            if _u64(blocks + b * block_record_size + 8):
                return FOOTER_ROWS_WITHOUT_COLUMNS, -1, b

    # --- chunks: the first failure of each check, column-major
    cdef Py_ssize_t first_col[_FOOTER_CHECKS]
    cdef Py_ssize_t first_block[_FOOTER_CHECKS]
    cdef int k
    for k in range(_FOOTER_CHECKS):
        first_col[k] = -1
        first_block[k] = -1
    cdef const uint8_t* crec
    cdef uint64_t b_off, b_len, c_off, c_len, p_off, p_len, f_off, f_len, d_len, pages, nulls, nans
    cdef Py_ssize_t rsize
    cdef uint64_t psize
    cdef int code
    cdef const uint8_t* table
    for c in range(ncols):
        table = &footer[0] + chunk_offsets[c]
        rsize = chunk_record_sizes[c]
        psize = <uint64_t>page_record_sizes[c]
        for b in range(num_blocks):
            rec = blocks + b * block_record_size
            rows = _u64(rec + 8)
            b_off = _u64(rec + 16)
            b_len = _u64(rec + 24)
            crec = table + b * rsize
            c_off = _u64(crec)
            c_len = _u64(crec + 8)
            nulls = _u64(crec + 24)
            nans = _u64(crec + 32)
            p_off = _u64(crec + 48)
            f_off = _u64(crec + 56)
            p_len = _u32(crec + 64)
            f_len = _u32(crec + 72)
            d_len = _u32(crec + 76)
            pages = _u32(crec + 80)
            if element[c]:  # slots are elements: as many as the pages may hold
                rows = pages * max_page_rows
            code = FOOTER_OK
            if _outside(c_off, c_len, b_off, b_off + b_len):
                code = FOOTER_CHUNK_OUTSIDE
            elif d_len > c_len:
                code = FOOTER_DICTIONARY_LENGTH
            elif p_len and (pi_len == 0 or _outside(p_off, p_len, pi_off, pi_off + pi_len)):
                code = FOOTER_PAGE_INDEX_OUTSIDE
            elif f_len and (f_len < MIN_BLOOM_LENGTH or bf_len == 0
                            or _outside(f_off, f_len, bf_off, bf_off + bf_len)):
                code = FOOTER_BLOOM_OUTSIDE
            elif pages > (rows if rows > 1 else 1) and not element[c]:
                code = FOOTER_PAGES_OVER_ROWS
            elif pages * PAGE_HEADER_SIZE > c_len - d_len:
                code = FOOTER_PAGES_OVER_BYTES
            elif rows > pages * max_page_rows:
                code = FOOTER_ROWS_OVER_PAGES
            elif nulls > rows or nans > rows:
                code = FOOTER_COUNTS_OVER_ROWS
            elif p_len != pages * psize:
                code = FOOTER_PAGE_INDEX_LENGTH
            elif not encoding_ok[c, crec[88]]:
                code = FOOTER_ENCODING_TYPE
            if code != FOOTER_OK and first_col[code] < 0:
                first_col[code] = c
                first_block[code] = b
    for k in range(1, _FOOTER_CHECKS):
        if first_col[k] >= 0:
            return k, first_col[k], first_block[k]
    return FOOTER_OK, -1, -1
