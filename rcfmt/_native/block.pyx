"""The block executor: every flat projected column of one block in one GIL-free call.

:func:`run_block` takes the bytes of a block (or of its fetched ranges), a compact
column spec built once per scan (:data:`S_COLS` int64 per column: physical kind, width,
sign, decimal precision, UTF-8 check, large offsets, codes kept for ``read_dictionary``,
the encodings the type admits) and the block's chunk records (:data:`C_COLS` int64 per
column, from the footer), and decodes every column whose rows are all wanted (the
whole-chunk case) in ONE ``with nogil:`` section: page headers and checksums, body
checksums, decompression (the page pipeline's per-thread codec contexts), values of every
mode the pipeline decodes (PLAIN, RLE, BITPACK, DELTA, ALP, bools, BITPACK decimals),
dictionary chunks (the dictionary page decoded and checked, the codes checked against
its size, then the values gathered -- or the codes kept), strings/binary (PLAIN,
DELTA_LENGTH) into offsets + data, validity bitmaps, and the checks the Python path
makes (well-formed UTF-8 of strings, decimal precision).

It is the page pipeline's own cores (:mod:`rcfmt._native.pages` ``_headers``,
``_bodies``, ``_page_values``, ``_page_offsets``; :mod:`rcfmt._native.validate`) run
column after column, with no Python between them.

Outputs. Fixed-width values (decimal128 as 16-byte values), bools (Arrow's bits),
dictionary codes (uint32, when kept), string/binary offsets (int32, int64 for large
types) and validity bitmaps go into one numpy arena per column, sized from the footer
(rows x item size, each region 64-byte aligned): a column kept alone keeps only its own
memory alive, not the block's. String/binary data and kept
dictionaries are sized only by their pages: they are allocated inside the native
section and handed back owned by :class:`Owned` buffers.

Errors. The executor does not describe failures: per column it returns a status (what
failed, and at which page) and leaves that column's outputs undefined. The caller
re-runs such a column through the Python page path (:class:`rcfmt.file.chunks.ChunkDecoder`),
which raises today's exact, located :class:`~rcfmt.errors.CorruptFileError` (or
ChecksumError / UnsupportedError) -- or decodes it, when the executor only refused
something it does not handle (an encoding it has no kernel for, memory): every error
and message stays the Python path's own, and every result stays correct.
"""
cimport cython
from cpython.buffer cimport PyBuffer_FillInfo
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

import numpy as np

cimport numpy as cnp

from rcfmt._native.pages cimport Failure, _bodies, _headers, _page_offsets, _page_values
from rcfmt._native.validate cimport decimal_row, utf8_row32, utf8_row64

from .. import memory as _memory
from rcfmt._native import pages as _pages

cnp.import_array()

__all__ = ["run_block", "Owned", "KIND_FIXED", "KIND_BOOL", "KIND_VARBINARY"]

# ------------------------------------------------------------------ the tables
cpdef enum:
    # the per-scan column spec: S_COLS int64 per column
    S_KIND = 0        # KIND_*
    S_WIDTH = 1       # bytes per stored value (FIXED; 16 for decimal128), 1 for bools
    S_SIGNED = 2
    S_DECIMAL = 3     # 1: decimal128 (precision S_PRECISION checked)
    S_PRECISION = 4
    S_UTF8 = 5        # 1: strings (UTF-8 checked)
    S_LARGE = 6       # 1: int64 offsets (large_string / large_binary)
    S_CODES = 7       # 1: dictionary chunks keep their codes (read_dictionary)
    S_ENCODINGS = 8   # bit e set: encoding id e is decoded here for this type
    S_COLS = 9

cpdef enum:
    # a block's chunk records: C_COLS int64 per column
    C_OFFSET = 0
    C_LENGTH = 1
    C_DICT_LENGTH = 2
    C_DICT_SIZE = 3
    C_PAGES = 4
    C_ENCODING = 5
    C_COLS = 6

cpdef enum:
    # what run_block returns per column: R_COLS int64
    R_STATUS = 0      # ST_*: 0, or why the column must go through the Python path
    R_PAGE = 1        # the page that failed (-1: the dictionary page or none)
    R_VALUES = 2      # arena offset of the values / kept codes / offsets
    R_VALID = 3       # arena offset of the validity bitmap
    R_NULLS = 4       # null rows (0: no bitmap)
    R_DATA = 5        # bytes of string/binary data
    R_DICT = 6        # 1: codes kept (a dictionary chunk of a read_dictionary column)
    R_DSIZE = 7       # entries of the kept dictionary
    R_COLS = 8

cpdef enum:
    KIND_FIXED = 0
    KIND_BOOL = 1
    KIND_VARBINARY = 2

cpdef enum:
    ST_OK = 0
    ST_UNSUPPORTED = 1  # an encoding this type has no kernel for here
    ST_CHUNK = 2        # chunk record disagrees with its encoding or the bytes read
    ST_PAGES = 3        # a header or body check (the pipeline's Failure)
    ST_COUNTS = 4       # pages or rows disagree with the footer
    ST_DICTIONARY = 5   # the dictionary page disagrees with its record
    ST_VALUES = 6       # values refused by a kernel
    ST_INVALID = 7      # ill-formed UTF-8, a decimal beyond its precision
    ST_TOO_BIG = 8      # more than 2 GiB of data for 32-bit offsets
    ST_MEMORY = 9
    ST_PYTHON = 10      # the Python codec fallback raised (columns from there on)

# the page pipeline's constants (pages.pyx; checked at import below)
cdef enum:
    P_POS = 0
    P_ROWS = 1
    P_NULLS = 2
    P_FIRST = 3
    P_AT = 4
    P_LEN = 5
    P_ARENA = 6
    P_COLS = 7
    PAGE_DATA = 0
    PAGE_DICTIONARY = 1
    MODE_PLAIN = 1
    MODE_BITPACK = 2
    MODE_BITPACK_DECIMAL = 3
    MODE_DELTA = 4
    MODE_CODES = 5
    MODE_RLE = 6
    MODE_ALP = 7
    MODE_BOOL_PLAIN = 8
    MODE_BOOL_RLE = 9
    VB_PLAIN = 1
    VB_DELTA_LENGTH = 2
    ENC_PLAIN = 0
    ENC_DICTIONARY = 1
    ENC_RLE = 2
    ENC_BITPACK = 3
    ENC_DELTA = 4
    ENC_ALP = 5
    ENC_DELTA_LENGTH = 6

cdef int64_t MAX_PAGE_ROWS = 1 << 20
cdef int64_t I32_MAX = 0x7FFFFFFF

if (_pages.MODE_PLAIN, _pages.MODE_BITPACK, _pages.MODE_BITPACK_DECIMAL, _pages.MODE_DELTA, _pages.MODE_CODES,
        _pages.MODE_RLE, _pages.MODE_ALP, _pages.MODE_BOOL_PLAIN, _pages.MODE_BOOL_RLE, _pages.VB_PLAIN,
        _pages.VB_DELTA_LENGTH) != (1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2):
    raise ImportError("rcfmt._native.block disagrees with rcfmt._native.pages on its modes")


# ------------------------------------------------------------------ owned buffers
cdef uint8_t _EMPTY[8]


cdef class Owned:
    """A buffer malloc'ed by the executor (string data, a kept dictionary), freed with
    the last reference; exposes the buffer protocol (numpy, ``pyarrow.py_buffer``)."""

    cdef void* ptr
    cdef Py_ssize_t size

    def __dealloc__(self):
        free(self.ptr)

    def __len__(self):
        return self.size

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, self.ptr if self.ptr != NULL else <void*>_EMPTY, self.size, 0, flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef Owned _own(void* ptr, Py_ssize_t size):
    cdef Owned o = Owned.__new__(Owned)
    o.ptr = ptr
    o.size = size
    return o


# ------------------------------------------------------------------ one column
cdef struct Col:
    const int64_t* s        # its spec row
    const int64_t* c        # its chunk record
    uint8_t* values         # arena: values, kept codes or offsets
    uint8_t* valid          # arena: validity bitmap
    int status
    int64_t page
    int64_t nulls
    bint keep_codes
    uint8_t* data           # owned: string/binary data (malloc)
    int64_t data_len
    uint8_t* ddata          # owned: a kept dictionary's values (fixed) or data (varbinary)
    int64_t ddata_len
    uint8_t* doffs          # owned: a kept string/binary dictionary's int32 offsets
    int64_t dsize
    # temporaries, freed after the column
    uint8_t* arena
    uint8_t* darena
    uint64_t* scratch
    uint32_t* codes
    uint8_t* dvalues        # the dictionary's fixed-width values (an aligned copy)
    uint32_t* dlocal        # the dictionary's string offsets (from 0)
    uint8_t* dpadded        # the dictionary's string data, with 16 bytes of slack


cdef inline int _fail(Col* col, int status, int64_t page) noexcept nogil:
    col.status = status
    col.page = page
    return status


cdef inline Py_ssize_t _round8(Py_ssize_t x) noexcept nogil:
    return (x + 7) & ~(<Py_ssize_t>7)


cdef inline Py_ssize_t _round64(Py_ssize_t x) noexcept nogil:
    return (x + 63) & ~(<Py_ssize_t>63)


cdef inline const uint8_t* _body(const uint8_t* buf, const uint8_t* arena, int64_t[:, ::1] t, Py_ssize_t k,
                                 uint64_t* aligned) noexcept nogil:
    """The values body of page ``k``, 8-byte aligned (copied into ``aligned`` when not)."""
    cdef const uint8_t* body = (arena if t[k, P_ARENA] else buf) + t[k, P_AT]
    if (<uintptr_t>body) % 8:
        memcpy(aligned, body, t[k, P_LEN])
        return <const uint8_t*>aligned
    return body


cdef void _free_temporaries(Col* col) noexcept nogil:
    free(col.arena)
    free(col.darena)
    free(col.scratch)
    free(col.codes)
    free(col.dvalues)
    free(col.dlocal)
    free(col.dpadded)
    col.dpadded = NULL
    col.arena = NULL
    col.darena = NULL
    col.scratch = NULL
    col.codes = NULL
    col.dvalues = NULL
    col.dlocal = NULL


cdef void _free_outputs(Col* col) noexcept nogil:
    free(col.data)
    free(col.ddata)
    free(col.doffs)
    col.data = NULL
    col.ddata = NULL
    col.doffs = NULL


cdef int _dictionary(const uint8_t* buf, Py_ssize_t size, int64_t at, Col* col, bint verify,
                     int64_t[:, ::1] t, const uint8_t** ddata, int64_t* ddata_len) except -1 nogil:
    """Decode and check the dictionary page at ``buf[at]`` (what ChunkDecoder.dictionary
    checks): fixed-width entries into ``col.dvalues``, strings/binary as offsets
    ``col.dlocal`` over ``ddata``. 0, or a status."""
    cdef const int64_t* s = col.s
    cdef const int64_t* c = col.c
    cdef Failure f
    cdef int64_t pos = at
    cdef int64_t dsize = c[C_DICT_SIZE]
    cdef Py_ssize_t n = 0, nrows = 0, arena_size = 0, run_end = 0, blen, dlen = 0
    cdef bint any_nulls = False
    cdef const uint8_t* body
    cdef const uint8_t* d = NULL
    cdef int width = <int>s[S_WIDTH]
    memset(&f, 0, sizeof(Failure))
    if dsize > MAX_PAGE_ROWS:
        return _fail(col, ST_DICTIONARY, -1)
    if _headers(buf, size, 0, size, &pos, NULL, NULL, 1, 1, MAX_PAGE_ROWS, PAGE_DICTIONARY, 0, t, &n, &nrows,
                &arena_size, &run_end, &any_nulls, &f):
        return _fail(col, ST_PAGES, -1)
    if run_end != at + c[C_DICT_LENGTH] or nrows != dsize or any_nulls:
        return _fail(col, ST_DICTIONARY, -1)
    col.darena = <uint8_t*>malloc(arena_size)
    if col.darena == NULL:
        return _fail(col, ST_MEMORY, -1)
    if _bodies(buf, t, 1, col.darena, NULL, verify, &f):
        return _fail(col, ST_PAGES, -1)
    body = (col.darena if t[0, P_ARENA] else buf) + t[0, P_AT]
    blen = t[0, P_LEN]
    col.dsize = dsize
    if s[S_KIND] == KIND_VARBINARY:  # PLAIN: int32 offsets, then the data
        col.dlocal = <uint32_t*>malloc(4 * (dsize + 1))
        if col.dlocal == NULL:
            return _fail(col, ST_MEMORY, -1)
        if _page_offsets(VB_PLAIN, body, blen, dsize, col.dlocal, &d, &dlen):
            return _fail(col, ST_DICTIONARY, -1)
        if s[S_UTF8] and utf8_row32(d, dlen, <const int32_t*>col.dlocal, dsize) >= 0:
            return _fail(col, ST_INVALID, -1)
        # a copy with 16 bytes of slack: values of at most 16 bytes are gathered as 16
        col.dpadded = <uint8_t*>malloc(dlen + 16)
        if col.dpadded == NULL:
            return _fail(col, ST_MEMORY, -1)
        if dlen:
            memcpy(col.dpadded, d, dlen)
        memset(col.dpadded + dlen, 0, 16)
        ddata[0] = col.dpadded
        ddata_len[0] = dlen
        return 0
    if blen != dsize * width:
        return _fail(col, ST_DICTIONARY, -1)
    col.dvalues = <uint8_t*>malloc(blen + 8)
    if col.dvalues == NULL:
        return _fail(col, ST_MEMORY, -1)
    memcpy(col.dvalues, body, blen)
    if s[S_DECIMAL] and decimal_row(<const uint64_t*>col.dvalues, dsize, <int>s[S_PRECISION]) >= 0:
        return _fail(col, ST_INVALID, -1)
    return 0


cdef int _gather_fixed(const uint8_t* dvalues, const uint32_t* codes, int64_t rows, int width,
                       uint8_t* out) noexcept nogil:
    cdef int64_t i
    if width == 1:
        for i in range(rows):
            out[i] = dvalues[codes[i]]
    elif width == 2:
        for i in range(rows):
            (<uint16_t*>out)[i] = (<const uint16_t*>dvalues)[codes[i]]
    elif width == 4:
        for i in range(rows):
            (<uint32_t*>out)[i] = (<const uint32_t*>dvalues)[codes[i]]
    elif width == 8:
        for i in range(rows):
            (<uint64_t*>out)[i] = (<const uint64_t*>dvalues)[codes[i]]
    elif width == 16:
        for i in range(rows):
            (<uint64_t*>out)[2 * i] = (<const uint64_t*>dvalues)[2 * <int64_t>codes[i]]
            (<uint64_t*>out)[2 * i + 1] = (<const uint64_t*>dvalues)[2 * <int64_t>codes[i] + 1]
    else:
        for i in range(rows):
            memcpy(out + i * width, dvalues + <int64_t>codes[i] * width, width)
    return 0


cdef int _gather_varbinary(Col* col, const uint8_t* d, const uint32_t* codes, int64_t rows) noexcept nogil:
    """Strings/binary of the dictionary at ``codes`` into offsets (the arena) and owned
    data; ``d`` (the padded copy) and the output have 16 bytes of slack: values of at
    most 16 bytes are copied as 16 (as rcfmt._native.varbinary.gather does)."""
    cdef const uint32_t* off = col.dlocal
    cdef int64_t i, total = 0, pos = 0, m
    cdef uint32_t code
    cdef bint wide = col.s[S_LARGE] != 0
    for i in range(rows):
        code = codes[i]
        total += off[code + 1] - off[code]
    if not wide and total > I32_MAX:
        return _fail(col, ST_TOO_BIG, -1)
    col.data = <uint8_t*>malloc(total + 16)
    if col.data == NULL:
        return _fail(col, ST_MEMORY, -1)
    if wide:
        (<int64_t*>col.values)[0] = 0
    else:
        (<int32_t*>col.values)[0] = 0
    for i in range(rows):
        code = codes[i]
        m = off[code + 1] - off[code]
        if m <= 16:
            memcpy(col.data + pos, d + off[code], 16)
        else:
            memcpy(col.data + pos, d + off[code], m)
        pos += m
        if wide:
            (<int64_t*>col.values)[i + 1] = pos
        else:
            (<int32_t*>col.values)[i + 1] = <int32_t>pos
    col.data_len = pos
    return 0


cdef int _varbinary(Col* col, const uint8_t* buf, int64_t[:, ::1] t, Py_ssize_t n, int enc,
                    uint64_t* aligned) noexcept nogil:
    """PLAIN / DELTA_LENGTH strings/binary of every page into offsets (the arena) and
    owned data (as ChunkDecoder._native_varbinary), then the UTF-8 check."""
    cdef int mode = VB_PLAIN if enc == ENC_PLAIN else VB_DELTA_LENGTH
    cdef Py_ssize_t k, i, capacity = 0, data_len = 0
    cdef int64_t pos = 0, first, rows = 0
    cdef const uint8_t* data = NULL
    cdef uint32_t* local = <uint32_t*>col.scratch
    cdef bint wide = col.s[S_LARGE] != 0
    for k in range(n):
        capacity += t[k, P_LEN]
        rows += t[k, P_ROWS]
    col.data = <uint8_t*>malloc(capacity + 1)
    if col.data == NULL:
        return _fail(col, ST_MEMORY, -1)
    if wide:
        (<int64_t*>col.values)[0] = 0
    else:
        (<int32_t*>col.values)[0] = 0
    for k in range(n):
        if _page_offsets(mode, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], local, &data,
                         &data_len) or pos + data_len > capacity:
            return _fail(col, ST_VALUES, k)
        if not wide and pos + data_len > I32_MAX:
            return _fail(col, ST_TOO_BIG, k)
        first = t[k, P_FIRST]
        if wide:
            for i in range(1, t[k, P_ROWS] + 1):
                (<int64_t*>col.values)[first + i] = pos + local[i]
        else:
            for i in range(1, t[k, P_ROWS] + 1):
                (<int32_t*>col.values)[first + i] = <int32_t>(pos + local[i])
        if data_len:
            memcpy(col.data + pos, data, data_len)
        pos += data_len
    col.data_len = pos
    if col.s[S_UTF8]:
        if (utf8_row64(col.data, pos, <const int64_t*>col.values, rows) if wide
                else utf8_row32(col.data, pos, <const int32_t*>col.values, rows)) >= 0:
            return _fail(col, ST_INVALID, -1)
    return 0


cdef void _pack_bits(uint8_t* v, int64_t rows) noexcept nogil:
    cdef int64_t j, i, nbytes = (rows + 7) // 8
    cdef uint8_t b
    cdef int k
    for j in range(nbytes):
        b = 0
        for k in range(8):
            i = 8 * j + k
            if i < rows:
                b |= (v[i] & 1) << k
        v[j] = b


cdef int _column(const uint8_t* buf, Py_ssize_t size, int64_t base, Col* col, int64_t rows, bint verify,
                 int64_t[:, ::1] t) except -1 nogil:
    """Every data page of one column chunk (and its dictionary page) into ``col``'s
    outputs: the checks and results of ChunkDecoder.decode_all + its values, or a status."""
    cdef const int64_t* s = col.s
    cdef const int64_t* c = col.c
    cdef int enc = <int>c[C_ENCODING]
    cdef int kind = <int>s[S_KIND]
    cdef int width = <int>s[S_WIDTH]
    cdef int64_t dict_len = c[C_DICT_LENGTH]
    cdef bint is_dict = dict_len > 0
    cdef int64_t at = c[C_OFFSET] - base
    cdef int64_t start = at + dict_len
    cdef int64_t end = at + c[C_LENGTH]
    cdef Failure f
    cdef Py_ssize_t n = 0, nrows = 0, arena_size = 0, run_end = 0, k, most = 0, longest = 0
    cdef bint any_nulls = False
    cdef const uint8_t* ddata = NULL
    cdef int64_t ddata_len = 0, i, nulls = 0, lo
    cdef int mode = 0, itemsize = width, out_size
    cdef bint signed = s[S_SIGNED] != 0
    cdef int64_t decimal_lim = 0
    cdef uint64_t* aligned
    memset(&f, 0, sizeof(Failure))
    if enc < 0 or enc > 62 or not ((s[S_ENCODINGS] >> enc) & 1):
        return _fail(col, ST_UNSUPPORTED, -1)
    if (enc == ENC_DICTIONARY) != is_dict or dict_len < 0 or c[C_LENGTH] < dict_len:
        return _fail(col, ST_CHUNK, -1)
    if not (0 <= at and start <= end and end <= size):
        return _fail(col, ST_CHUNK, -1)
    if is_dict and _dictionary(buf, size, at, col, verify, t, &ddata, &ddata_len):
        return col.status
    # the data pages: headers, then bodies (checksums, decompression, validity)
    if _headers(buf, size, start, end, NULL, NULL, NULL, 0, c[C_PAGES], rows, PAGE_DATA, enc, t, &n, &nrows,
                &arena_size, &run_end, &any_nulls, &f):
        return _fail(col, ST_PAGES, f.page)
    if n != c[C_PAGES] or nrows != rows:
        return _fail(col, ST_COUNTS, -1)
    col.arena = <uint8_t*>malloc(arena_size)
    if col.arena == NULL:
        return _fail(col, ST_MEMORY, -1)
    if any_nulls:
        memset(col.valid, 0xFF, (rows + 7) // 8)
    if _bodies(buf, t, n, col.arena, col.valid if any_nulls else NULL, verify, &f):
        return _fail(col, ST_PAGES, f.page)
    for k in range(n):
        most = max(most, t[k, P_ROWS])
        longest = max(longest, t[k, P_LEN])
        nulls += t[k, P_NULLS]
    col.scratch = <uint64_t*>malloc(8 * (most + 2) + _round8(longest) + 8)
    if col.scratch == NULL:
        return _fail(col, ST_MEMORY, -1)
    aligned = col.scratch + most + 2
    if any_nulls:
        col.nulls = nulls
        if rows % 8:
            col.valid[(rows + 7) // 8 - 1] &= (1 << (rows % 8)) - 1  # unused trailing bits are 0
    # the values
    if is_dict:
        col.codes = <uint32_t*>malloc(4 * rows + 8)
        if col.codes == NULL:
            return _fail(col, ST_MEMORY, -1)
        for k in range(n):
            if _page_values(MODE_CODES, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], 4, False,
                            <uint32_t>col.dsize, 0, <uint8_t*>(col.codes + t[k, P_FIRST]), col.scratch):
                return _fail(col, ST_VALUES, k)
        if col.keep_codes:  # the codes, and the dictionary handed over as it is
            memcpy(col.values, col.codes, 4 * rows)
            if kind == KIND_VARBINARY:
                col.doffs = <uint8_t*>col.dlocal
                col.dlocal = NULL
                col.ddata = col.dpadded
                col.dpadded = NULL
                col.ddata_len = ddata_len
            else:
                col.ddata = col.dvalues
                col.dvalues = NULL
                col.ddata_len = col.dsize * width
            return 0
        if kind == KIND_VARBINARY:
            return _gather_varbinary(col, ddata, col.codes, rows)
        return _gather_fixed(col.dvalues, col.codes, rows, width, col.values)
    if kind == KIND_VARBINARY:
        return _varbinary(col, buf, t, n, enc, aligned)
    if kind == KIND_BOOL:
        mode = MODE_BOOL_PLAIN if enc == ENC_PLAIN else MODE_BOOL_RLE
        itemsize = 1
    elif enc == ENC_PLAIN:
        mode = MODE_PLAIN
    elif enc == ENC_RLE:
        mode = MODE_RLE
    elif enc == ENC_ALP:
        mode = MODE_ALP
    elif enc == ENC_BITPACK and s[S_DECIMAL]:
        mode = MODE_BITPACK_DECIMAL
        itemsize = 8
        signed = True
        if 1 <= s[S_PRECISION] <= 18:
            decimal_lim = 1
            for i in range(s[S_PRECISION]):
                decimal_lim *= 10
            decimal_lim -= 1
    elif enc == ENC_BITPACK:
        mode = MODE_BITPACK
    elif enc == ENC_DELTA:
        mode = MODE_DELTA
    else:
        return _fail(col, ST_UNSUPPORTED, -1)
    out_size = itemsize
    for k in range(n):
        if _page_values(mode, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], itemsize, signed, 0,
                        decimal_lim, col.values + t[k, P_FIRST] * out_size, col.scratch):
            return _fail(col, ST_VALUES, k)
    if kind == KIND_BOOL:  # a byte per value -> Arrow's bits (LSB first), in place: byte j is written
        _pack_bits(col.values, rows)  # after bytes 8j..8j+7 are read
    elif mode == MODE_BITPACK_DECIMAL:  # int64 low words -> 16-byte decimals, in place, from the end
        i = rows - 1
        while i >= 0:
            lo = (<int64_t*>col.values)[i]
            (<int64_t*>col.values)[2 * i] = lo
            (<int64_t*>col.values)[2 * i + 1] = -1 if lo < 0 else 0
            i -= 1
    elif s[S_DECIMAL] and decimal_row(<const uint64_t*>col.values, rows, <int>s[S_PRECISION]) >= 0:
        return _fail(col, ST_INVALID, -1)
    return 0


# ------------------------------------------------------------------ the block
def run_block(buf, int64_t base, const int64_t[:, ::1] spec, const int64_t[:, ::1] chunks, int64_t rows,
              bint verify):
    """Decode every column of one block whose rows are all wanted, in one GIL-free pass.

    ``buf``: the block's bytes from file offset ``base`` on (a whole read, or ranges
    read into one buffer); ``spec``: one row of S_COLS per column (built once per scan);
    ``chunks``: the block's chunk records, one row of C_COLS per column; ``rows``: the
    block's rows. Returns ``(arenas, results, data, dictionaries)``: per column the uint8
    arena holding its values/codes/offsets and validity, ``results`` (int64, R_COLS per
    column: status, page, where the column's outputs are in its arena, nulls, data
    bytes), and
    per column the :class:`Owned` string/binary data (or None) and the kept dictionary
    ``(values or data, int32 offsets or None)`` (or None). A column whose status is not
    ST_OK must be decoded again by the Python path (see the module docstring)."""
    cdef const uint8_t[::1] view = memoryview(buf).cast("B") if not isinstance(buf, np.ndarray) else buf
    cdef Py_ssize_t size = view.shape[0]
    cdef const uint8_t* p = &view[0] if size else _EMPTY
    cdef Py_ssize_t ncols = spec.shape[0], i, reached = 0
    cdef int64_t capacity = 1, vbytes, pages, length, width, shift
    cdef bint keep
    cdef cnp.ndarray arena
    cdef uint8_t* a
    if chunks.shape[0] != ncols or spec.shape[1] != S_COLS or chunks.shape[1] != C_COLS:
        raise ValueError("spec and chunks need one row per column")
    if rows < 0:
        raise ValueError("rows must be >= 0")
    cdef cnp.ndarray results = np.zeros((ncols, R_COLS), np.int64)
    cdef int64_t[:, ::1] r = results
    arenas = [None] * ncols
    for i in range(ncols):
        keep = spec[i, S_CODES] != 0 and chunks[i, C_DICT_LENGTH] > 0
        width = spec[i, S_WIDTH]
        if keep:
            vbytes = 4 * rows
        elif spec[i, S_KIND] == KIND_VARBINARY:
            vbytes = (rows + 1) * (8 if spec[i, S_LARGE] else 4)
        else:
            vbytes = rows * width
        arena = _memory.empty(_round64(vbytes + 8) + _round64((rows + 7) // 8 + 8) + 64, np.uint8)
        arenas[i] = arena
        shift = (-<int64_t>(<uintptr_t>cnp.PyArray_DATA(arena))) & 63
        r[i, R_VALUES] = shift
        r[i, R_VALID] = shift + _round64(vbytes + 8)
        r[i, R_DICT] = keep
        pages = max(chunks[i, C_PAGES], 1)
        length = max(chunks[i, C_LENGTH], 0)
        capacity = max(capacity, min(pages, length // 32 + 1))
    cdef cnp.ndarray table = np.empty((capacity, P_COLS), np.int64)
    cdef int64_t[:, ::1] t = table
    cdef Col* cols = <Col*>malloc(max(ncols, 1) * sizeof(Col))
    if cols == NULL:
        raise MemoryError()
    memset(cols, 0, max(ncols, 1) * sizeof(Col))
    for i in range(ncols):
        a = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>arenas[i])
        cols[i].s = &spec[i, 0]
        cols[i].c = &chunks[i, 0]
        cols[i].values = a + r[i, R_VALUES]
        cols[i].valid = a + r[i, R_VALID]
        cols[i].keep_codes = r[i, R_DICT] != 0
        cols[i].page = -1
    data = [None] * ncols
    dictionaries = [None] * ncols
    try:
        try:
            with nogil:
                for i in range(ncols):
                    reached = i
                    _column(p, size, base, &cols[i], rows, verify, t)
                    _free_temporaries(&cols[i])
                reached = ncols
        except Exception:  # the Python codec fallback raised: the Python path says it again
            for i in range(reached, ncols):
                _free_temporaries(&cols[i])
                cols[i].status = ST_PYTHON
        for i in range(ncols):
            r[i, R_STATUS] = cols[i].status
            r[i, R_PAGE] = cols[i].page
            if cols[i].status != ST_OK:
                _free_outputs(&cols[i])
                continue
            r[i, R_NULLS] = cols[i].nulls
            r[i, R_DATA] = cols[i].data_len
            r[i, R_DSIZE] = cols[i].dsize
            if cols[i].data != NULL:
                data[i] = _own(cols[i].data, cols[i].data_len)
                cols[i].data = NULL
            if cols[i].keep_codes:
                dictionaries[i] = (_own(cols[i].ddata, cols[i].ddata_len),
                                   _own(cols[i].doffs, 4 * (cols[i].dsize + 1)) if cols[i].doffs != NULL else None)
                cols[i].ddata = NULL
                cols[i].doffs = NULL
    finally:
        for i in range(ncols):
            _free_temporaries(&cols[i])
            _free_outputs(&cols[i])
        free(cols)
    return arenas, results, data, dictionaries
