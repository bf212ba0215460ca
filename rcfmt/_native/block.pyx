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
DELTA_LENGTH) into offsets + data, validity bitmaps, and the checks Arrow's validation
needs (well-formed UTF-8 of strings, decimal precision).

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
raises the located error (:func:`rcfmt.scan.refusals.raise_refused`: the reference
decoder, :class:`rcfmt.file.chunks.ChunkDecoder`, run over the same bytes says what is
wrong, in the words every decoder of the format uses); a refused column is never
decoded another way.
"""
cimport cython
from cpython.buffer cimport PyBuffer_FillInfo
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memmove, memset

import numpy as np

cimport numpy as cnp

from rcfmt._native.decoders cimport (MODE_ALP, MODE_ALP_SPLIT, MODE_BITPACK, MODE_BITPACK_DECIMAL, MODE_BOOL_PLAIN,
                                     MODE_BOOL_RLE, MODE_CODES, MODE_DELTA, MODE_PLAIN, MODE_RLE, MODE_SPLIT,
                                     VB_DELTA_LENGTH, VB_PLAIN, _bitpack_gather, _codes_gather, _page_offsets,
                                     _page_values, _plain_gather)
from rcfmt._native.pages cimport P_ARENA, P_AT, P_COLS, P_FIRST, P_LEN, P_NULLS, P_POS, P_ROWS
from rcfmt._native.pages cimport Failure, _bodies, _headers
from rcfmt._native.filters cimport (F_NULLS, Filter, Flt, _codes_into, _filter_entries, _narrow_decimals_into,
                                    _put)
from rcfmt._native.validate cimport decimal_row, utf8_row32, utf8_row64

from ..runtime import memory as _memory

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
    S_DISCARD = 9     # 1: only its filter needs the column (a dictionary chunk returns no values)
    S_COLS = 10

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
    R_STATUS = 0      # ST_*: 0, or why the column was refused (rcfmt.scan.refusals explains it)
    R_PAGE = 1        # the page that failed (-1: the dictionary page or none)
    R_VALUES = 2      # arena offset of the values / kept codes / offsets
    R_VALID = 3       # arena offset of the validity bitmap
    R_NULLS = 4       # null rows (0: no bitmap)
    R_DATA = 5        # bytes of string/binary data
    R_DICT = 6        # 1: codes kept (a dictionary chunk of a read_dictionary column)
    R_DSIZE = 7       # entries of the kept dictionary
    R_PAGES = 8       # data pages whose bodies were read (checked, decompressed)
    R_ROWS = 9        # rows of those pages
    R_COLS = 10

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
    ST_SKIPPED = 11     # not decoded: the filter's mask was already empty (short_circuit)
    ST_UNLISTED = 12    # a wanted row lies in none of the pages listed (the caller's error)

from rcfmt._native.format cimport (ENC_ALP, ENC_ALP_SPLIT, ENC_BITPACK, ENC_BYTE_SPLIT, ENC_DELTA, ENC_DELTA_LENGTH,
                                   ENC_DICTIONARY, ENC_PLAIN, ENC_RLE, MAX_PAGE_ROWS, PAGE_DATA, PAGE_DICTIONARY)
#: a BITPACK, PLAIN or dictionary-codes page of whose rows fewer than one in this many
#: are wanted has them read where they lie (a few shifts each when packed) instead of
#: decoding the page first
cdef int64_t GATHER_SPARSE = 8
cdef int64_t I32_MAX = 0x7FFFFFFF



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


# ------------------------------------------------------------------ masks
cdef extern from *:
    """
    /* The positions of the nonzero bytes of mask[0:n] into out (in order); their count.
       Eight bytes a time, each nonzero byte folded to its low bit, the set bits walked:
       a selective mask is mostly zero words, passed over in one test each. */
    static inline uint64_t rc_fold_bytes(uint64_t w) {  /* bit 8k: byte k of w is nonzero */
        w |= w >> 4; w |= w >> 2; w |= w >> 1;
        return w & 0x0101010101010101ULL;
    }
    static int64_t rc_mask_count(const uint8_t* mask, int64_t n) {
        int64_t i = 0, m = 0;
        uint64_t w;
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, mask + i, 8);
            if (w) m += (int64_t)((rc_fold_bytes(w) * 0x0101010101010101ULL) >> 56);  /* (8 bits at most) */
        }
        for (; i < n; i++) m += mask[i] != 0;
        return m;
    }
    /* The first j where v[0:n] stops being strictly increasing within [0, limit); n if none. */
    static int64_t rc_sorted_below(const int64_t* v, int64_t n, int64_t limit) {
        int64_t j, bad = 0;
        if (n && (v[0] < 0 || v[n - 1] >= limit)) return 0;
        for (j = 1; j < n; j++) bad |= v[j] <= v[j - 1];  /* (a pass the compiler vectorizes) */
        if (!bad) return n;
        for (j = 1; j < n; j++) if (v[j] <= v[j - 1]) return j;
        return n;
    }
    static int64_t rc_mask_positions(const uint8_t* mask, int64_t n, int64_t* out) {
        int64_t i = 0, j = 0;
        uint64_t w;
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, mask + i, 8);
            if (!w) continue;
            w = rc_fold_bytes(w);
            while (w) { out[j++] = i + (__builtin_ctzll(w) >> 3); w &= w - 1; }
        }
        for (; i < n; i++) if (mask[i]) out[j++] = i;
        return j;
    }
    """
    int64_t rc_mask_count(const uint8_t* mask, int64_t n) noexcept nogil
    int64_t rc_sorted_below(const int64_t* v, int64_t n, int64_t limit) noexcept nogil
    int64_t rc_mask_positions(const uint8_t* mask, int64_t n, int64_t* out) noexcept nogil


cdef bint _none_set(const uint8_t* mask, int64_t rows) noexcept nogil:
    cdef int64_t i
    for i in range(rows):
        if mask[i]:
            return False
    return True


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
    bint discard            # a dictionary chunk decoded for its filter only: no values out
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
    uint8_t* pagebuf        # (selected rows) one page's values, before they are gathered
    uint8_t* vfull          # (selected rows) the validity of every row of the chunk
    # the rows wanted: ``nsel`` sorted run rows ``sel`` (NULL: every row)
    const int64_t* sel
    int64_t nsel
    # (page-index mode) the ``npl`` pages to read, a (4, npl) table: buffer position,
    # rows, length, first row in the block; ``rel``: ``sel`` among those pages' rows
    const int64_t* plist
    int64_t npl
    int64_t* rel
    int64_t pages_read      # data pages whose bodies were read
    int64_t rows_read       # their rows
    # (compact) returned at the rows the final mask selects: what needs every row's
    # values first (bools packed into bits, BITPACK decimals widened) waits for that
    bint defer
    bint widen              # deferred: BITPACK decimals still int64 low words
    bint as_values          # (compact) a dictionary chunk's values gathered, not its codes
    uint32_t* kept          # deferred: a dictionary chunk's codes at every row decoded
    # (then) a column decoded at the rows the mask picked: its arena, malloc'ed once
    # they are known, owned from here on
    uint8_t* own
    int64_t own_size


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
    free(col.pagebuf)
    free(col.vfull)
    free(col.rel)
    col.rel = NULL
    col.dpadded = NULL
    col.pagebuf = NULL
    col.vfull = NULL
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
    free(col.own)
    free(col.kept)
    col.data = NULL
    col.ddata = NULL
    col.doffs = NULL
    col.own = NULL
    col.kept = NULL


cdef inline int64_t _values_bytes(const int64_t* s, bint keep, bint discard, int64_t rows) noexcept nogil:
    """Bytes of a column's values (kept codes, offsets) for ``rows`` rows in its arena."""
    if discard:
        return 0
    if keep:
        return 4 * rows
    if s[S_KIND] == KIND_VARBINARY:
        return (rows + 1) * (8 if s[S_LARGE] else 4)
    return rows * s[S_WIDTH]


cdef inline int64_t _arena_bytes(int64_t vbytes, int64_t rows) noexcept nogil:
    """An arena's size: the values, then the validity, each 64-byte aligned, + alignment slack."""
    return _round64(vbytes + 8) + _round64((rows + 7) // 8 + 8) + 64


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


cdef inline void _first_offset(Col* col, bint wide) noexcept nogil:
    """Offset 0 of a string/binary output (int64 when ``wide``, else int32)."""
    if wide:
        (<int64_t*>col.values)[0] = 0
    else:
        (<int32_t*>col.values)[0] = 0


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
    _first_offset(col, wide)
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


cdef inline Py_ssize_t _page_selection(const Col* col, int64_t first, int64_t count, Py_ssize_t* cursor) noexcept nogil:
    """The wanted rows in run rows ``[first, first + count)``: they are ``sel[j0:j1]``,
    ``j0`` the cursor given, ``j1`` the cursor returned (pages come in row order).
    Found by galloping from the cursor, then bisecting: a page holding many wanted rows
    costs a few comparisons, not one per row (``sel`` is strictly increasing)."""
    cdef Py_ssize_t lo = cursor[0], hi, step = 1, mid
    cdef int64_t end = first + count
    if lo >= col.nsel or col.sel[lo] >= end:
        return lo
    hi = lo + 1  # invariant: sel[lo] < end, and hi == nsel or sel[hi] >= end once found
    while hi < col.nsel and col.sel[hi] < end:
        lo = hi
        step *= 2
        hi = lo + step
    if hi > col.nsel:
        hi = col.nsel
    while hi - lo > 1:
        mid = lo + (hi - lo) // 2
        if col.sel[mid] < end:
            lo = mid
        else:
            hi = mid
    cursor[0] = hi
    return hi


cdef void _gather_rows(const uint8_t* page, int64_t first, const int64_t* sel, Py_ssize_t j0, Py_ssize_t j1,
                       int size, uint8_t* out) noexcept nogil:
    """out[j] = page[sel[j] - first] for j in [j0, j1), values of ``size`` bytes."""
    cdef Py_ssize_t j
    if size == 1:
        for j in range(j0, j1):
            out[j] = page[sel[j] - first]
    elif size == 2:
        for j in range(j0, j1):
            (<uint16_t*>out)[j] = (<const uint16_t*>page)[sel[j] - first]
    elif size == 4:
        for j in range(j0, j1):
            (<uint32_t*>out)[j] = (<const uint32_t*>page)[sel[j] - first]
    elif size == 8:
        for j in range(j0, j1):
            (<uint64_t*>out)[j] = (<const uint64_t*>page)[sel[j] - first]
    else:
        for j in range(j0, j1):
            memcpy(out + j * size, page + (sel[j] - first) * size, size)


cdef int64_t _gather_validity(const uint8_t* full, const int64_t* sel, int64_t nsel, uint8_t* out) noexcept nogil:
    """Bit j of ``out`` = bit sel[j] of ``full`` (trailing bits 0); the null count."""
    cdef int64_t j, r, nulls = 0
    cdef uint8_t bit
    memset(out, 0, (nsel + 7) >> 3)
    for j in range(nsel):
        r = sel[j]
        bit = (full[r >> 3] >> (r & 7)) & 1
        out[j >> 3] |= bit << (j & 7)
        nulls += 1 - bit
    return nulls


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
    if col.sel != NULL:
        return _varbinary_selected(col, buf, t, n, mode, capacity, aligned)
    col.data = <uint8_t*>malloc(capacity + 1)
    if col.data == NULL:
        return _fail(col, ST_MEMORY, -1)
    _first_offset(col, wide)
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


cdef int _varbinary_selected(Col* col, const uint8_t* buf, int64_t[:, ::1] t, Py_ssize_t n, int mode,
                             Py_ssize_t capacity, uint64_t* aligned) noexcept nogil:
    """:func:`_varbinary` for the wanted rows only: the pages holding one are read, their
    wanted strings copied; the UTF-8 check covers what is returned."""
    cdef Py_ssize_t k, data_len = 0, cursor = 0, j0, j1, j
    cdef int64_t pos = 0, first, a, m
    cdef const uint8_t* data = NULL
    cdef uint32_t* local = <uint32_t*>col.scratch
    cdef bint wide = col.s[S_LARGE] != 0
    cdef uint8_t* shrunk
    col.data = <uint8_t*>malloc(capacity + 1)
    if col.data == NULL:
        return _fail(col, ST_MEMORY, -1)
    _first_offset(col, wide)
    for k in range(n):
        first = t[k, P_FIRST]
        j0 = cursor
        j1 = _page_selection(col, first, t[k, P_ROWS], &cursor)
        if j1 == j0:
            continue
        if _page_offsets(mode, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], local, &data,
                         &data_len):
            return _fail(col, ST_VALUES, k)
        for j in range(j0, j1):
            a = local[col.sel[j] - first]
            m = local[col.sel[j] - first + 1] - a
            if pos + m > capacity:
                return _fail(col, ST_VALUES, k)
            if not wide and pos + m > I32_MAX:
                return _fail(col, ST_TOO_BIG, k)
            if m:
                memcpy(col.data + pos, data + a, m)
            pos += m
            if wide:
                (<int64_t*>col.values)[j + 1] = pos
            else:
                (<int32_t*>col.values)[j + 1] = <int32_t>pos
    col.data_len = pos
    shrunk = <uint8_t*>realloc(col.data, pos + 1)  # (the owner keeps no more than it returns)
    if shrunk != NULL:
        col.data = shrunk
    if col.s[S_UTF8]:
        if (utf8_row64(col.data, pos, <const int64_t*>col.values, col.nsel) if wide
                else utf8_row32(col.data, pos, <const int32_t*>col.values, col.nsel)) >= 0:
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


cdef void _widen_decimals(uint8_t* values, int64_t rows) noexcept nogil:
    """int64 low words -> 16-byte two's complement decimals, in place, from the end."""
    cdef int64_t i = rows - 1, lo
    while i >= 0:
        lo = (<int64_t*>values)[i]
        (<int64_t*>values)[2 * i] = lo
        (<int64_t*>values)[2 * i + 1] = -1 if lo < 0 else 0
        i -= 1


cdef void _gather_in_place(uint8_t* v, const int64_t* pos, int64_t n, int size) noexcept nogil:
    """v[j] = v[pos[j]] for j in [0, n), values of ``size`` bytes; ``pos`` increasing,
    so pos[j] >= j and no value is overwritten before it is moved."""
    cdef int64_t j
    if size == 1:
        for j in range(n):
            v[j] = v[pos[j]]
    elif size == 2:
        for j in range(n):
            (<uint16_t*>v)[j] = (<uint16_t*>v)[pos[j]]
    elif size == 4:
        for j in range(n):
            (<uint32_t*>v)[j] = (<uint32_t*>v)[pos[j]]
    elif size == 8:
        for j in range(n):
            (<uint64_t*>v)[j] = (<uint64_t*>v)[pos[j]]
    elif size == 16:
        for j in range(n):
            (<uint64_t*>v)[2 * j] = (<uint64_t*>v)[2 * pos[j]]
            (<uint64_t*>v)[2 * j + 1] = (<uint64_t*>v)[2 * pos[j] + 1]
    else:
        for j in range(n):
            if pos[j] != j:
                memcpy(v + j * size, v + pos[j] * size, size)


cdef int _own_arena(Col* col, int64_t vbytes, int64_t rows, int64_t* r) noexcept nogil:
    """An arena of the column's own for ``rows`` rows (``vbytes`` of values, then the
    validity, each 64-byte aligned), owned by it from here on (``col.own``); its values
    and validity pointed there and their places written in ``r``, its results row.
    0, or a status."""
    cdef int64_t shift
    col.own_size = _arena_bytes(vbytes, rows)
    col.own = <uint8_t*>malloc(col.own_size)
    if col.own == NULL:
        return _fail(col, ST_MEMORY, -1)
    shift = (-<int64_t>(<uintptr_t>col.own)) & 63
    r[R_VALUES] = shift
    r[R_VALID] = shift + _round64(vbytes + 8)
    col.values = col.own + shift
    col.valid = col.own + r[R_VALID]
    return 0


cdef int _dictionary_values(Col* col, const int64_t* pos, int64_t n, int64_t* r) noexcept nogil:
    """A deferred dictionary chunk's values at positions ``pos`` of the rows it was
    decoded at, gathered from its dictionary by their codes into an arena made for them
    (``r``: the column's results row; its validity, compacted already, copied along); the
    dictionary is then dropped and the column is plain. 0, or a status."""
    cdef const uint32_t* codes = col.kept
    cdef const uint32_t* off = <const uint32_t*>col.doffs
    cdef bint wide = col.s[S_LARGE] != 0, varbinary = col.s[S_KIND] == KIND_VARBINARY
    cdef int width = <int>col.s[S_WIDTH]
    cdef int64_t vbytes = (n + 1) * (8 if wide else 4) if varbinary else n * width
    cdef int64_t j, total = 0, p = 0, m
    cdef uint32_t code
    cdef uint32_t* picked
    cdef const uint8_t* valid = col.valid
    if _own_arena(col, vbytes, n, r):
        return col.status
    if col.nulls:
        memcpy(col.valid, valid, (n + 7) // 8)
    if varbinary:  # (a null row's code is 0, a valid entry's: its bytes count, as a whole decode's do)
        for j in range(n):
            code = codes[pos[j]]
            total += off[code + 1] - off[code]
        if not wide and total > I32_MAX:
            return _fail(col, ST_TOO_BIG, -1)
        free(col.data)
        col.data = <uint8_t*>malloc(total + 1)
        if col.data == NULL:
            return _fail(col, ST_MEMORY, -1)
        _first_offset(col, wide)
        for j in range(n):
            code = codes[pos[j]]
            m = off[code + 1] - off[code]
            if m:
                memcpy(col.data + p, col.ddata + off[code], m)
            p += m
            if wide:
                (<int64_t*>col.values)[j + 1] = p
            else:
                (<int32_t*>col.values)[j + 1] = <int32_t>p
        col.data_len = p
    else:  # (the codes of the rows kept, then the values by them)
        picked = <uint32_t*>malloc(4 * n + 4)
        if picked == NULL:
            return _fail(col, ST_MEMORY, -1)
        for j in range(n):
            picked[j] = codes[pos[j]]
        _gather_fixed(col.ddata, picked, n, width, col.values)
        free(picked)
    free(col.ddata)
    free(col.doffs)
    col.ddata = col.doffs = NULL
    col.ddata_len = 0
    col.keep_codes = False
    r[R_DICT] = 0
    return 0


cdef int _compact(Col* col, const int64_t* pos, int64_t n, int64_t* r) noexcept nogil:
    """A decoded column's outputs at positions ``pos`` (``n``, increasing) of the rows it
    was decoded at, and then what :func:`_column` deferred (bools packed, BITPACK
    decimals widened); a dictionary chunk's codes, or (``as_values``) its values. Compacted
    in place, then moved into an arena of the column's own sized for them (``r``: its
    results row): the arena of every row decoded is the filter's scratch. 0, or a status."""
    if _compact_in_place(col, pos, n, r):
        return col.status
    if col.own != NULL:  # (a dictionary's values: gathered into an arena of their own already)
        return 0
    cdef uint8_t* values = col.values
    cdef uint8_t* valid = col.valid
    cdef int64_t vbytes = _values_bytes(col.s, col.keep_codes, False, n)
    if _own_arena(col, vbytes, n, r):
        return col.status
    memcpy(col.values, values, vbytes)
    if col.nulls:
        memcpy(col.valid, valid, (n + 7) // 8)
    return 0


cdef int _compact_in_place(Col* col, const int64_t* pos, int64_t n, int64_t* r) noexcept nogil:
    """:func:`_compact`'s first step: the outputs at ``pos``, where they are."""
    cdef int64_t j, a, b, p = 0
    cdef uint8_t* bits
    cdef uint8_t* shrunk
    cdef int64_t* offsets
    cdef bint wide
    if col.nulls:
        bits = <uint8_t*>malloc((n + 7) // 8 + 8)
        if bits == NULL:
            return _fail(col, ST_MEMORY, -1)
        col.nulls = _gather_validity(col.valid, pos, n, bits)
        memcpy(col.valid, bits, (n + 7) // 8)
        free(bits)
    if col.keep_codes and col.as_values:
        return _dictionary_values(col, pos, n, r)
    if col.keep_codes:
        for j in range(n):
            (<uint32_t*>col.values)[j] = col.kept[pos[j]]
    elif col.s[S_KIND] == KIND_VARBINARY:  # the strings moved forward, new offsets
        wide = col.s[S_LARGE] != 0
        offsets = <int64_t*>malloc(8 * (n + 1))
        if offsets == NULL:
            return _fail(col, ST_MEMORY, -1)
        offsets[0] = 0
        for j in range(n):
            if wide:
                a, b = (<int64_t*>col.values)[pos[j]], (<int64_t*>col.values)[pos[j] + 1]
            else:
                a, b = (<int32_t*>col.values)[pos[j]], (<int32_t*>col.values)[pos[j] + 1]
            if b > a:
                memmove(col.data + p, col.data + a, b - a)
            p += b - a
            offsets[j + 1] = p
        for j in range(n + 1):
            if wide:
                (<int64_t*>col.values)[j] = offsets[j]
            else:
                (<int32_t*>col.values)[j] = <int32_t>offsets[j]
        free(offsets)
        col.data_len = p
        shrunk = <uint8_t*>realloc(col.data, p + 1)  # (the owner keeps no more than it returns)
        if shrunk != NULL:
            col.data = shrunk
    elif col.s[S_KIND] == KIND_BOOL:
        _gather_in_place(col.values, pos, n, 1)
        _pack_bits(col.values, n)
    elif col.widen:
        _gather_in_place(col.values, pos, n, 8)
        _widen_decimals(col.values, n)
    else:
        _gather_in_place(col.values, pos, n, <int>col.s[S_WIDTH])
    return 0


cdef Py_ssize_t _pages_holding(const Col* col, int64_t[:, ::1] t, Py_ssize_t n) noexcept nogil:
    """Keep in the page table ``t`` (``n`` pages, in row order) only the pages holding a
    selected row, in order; their count."""
    cdef Py_ssize_t k, m = 0, cursor = 0, j0
    cdef int c
    for k in range(n):
        j0 = cursor
        if _page_selection(col, t[k, P_FIRST], t[k, P_ROWS], &cursor) > j0:
            if m != k:
                for c in range(P_COLS):
                    t[m, c] = t[k, c]
            m += 1
    return m


cdef int _listed_pages(const uint8_t* buf, Py_ssize_t size, int64_t start, int64_t end, Col* col, int64_t rows,
                       int enc, int64_t[:, ::1] t, Py_ssize_t* n, Py_ssize_t* nrows, Py_ssize_t* arena_size,
                       Py_ssize_t* run_end, bint* any_nulls, Failure* f) noexcept nogil:
    """Page-index mode: the headers of the ``col.npl`` pages ``col.plist`` names (each
    inside the chunk's data pages, holding the rows and bytes its entry says), the run
    of their rows in the page table, and ``col.sel`` (block rows) re-pointed at
    ``col.rel``, the same rows among the run's. 0, or 1 with the column's status."""
    cdef const int64_t* pos = col.plist
    cdef const int64_t* counts = col.plist + col.npl
    cdef const int64_t* lengths = col.plist + 2 * col.npl
    cdef const int64_t* firsts = col.plist + 3 * col.npl
    cdef Py_ssize_t k = 0, j
    for j in range(col.npl):
        if not (0 <= pos[j] and start <= pos[j] and lengths[j] > 0 and pos[j] + lengths[j] <= min(end, size)):
            return _fail(col, ST_CHUNK, j)
    if _headers(buf, size, 0, 0, pos, counts, lengths, col.npl, col.npl, rows, PAGE_DATA, enc, t, n, nrows,
                arena_size, run_end, any_nulls, f):
        return _fail(col, ST_PAGES, f.page)
    col.rel = <int64_t*>malloc(8 * col.nsel + 8)
    if col.rel == NULL:
        return _fail(col, ST_MEMORY, -1)
    for j in range(col.nsel):  # (both in row order)
        while k < n[0] and firsts[k] + t[k, P_ROWS] <= col.sel[j]:
            k += 1
        if k == n[0] or col.sel[j] < firsts[k]:  # a wanted row in no page listed: the caller's error
            return _fail(col, ST_UNLISTED, -1)
        col.rel[j] = t[k, P_FIRST] + col.sel[j] - firsts[k]
    col.sel = col.rel
    return 0


cdef void _mask_nulls(Col* col, const Flt* f, int64_t rows, uint8_t* mask, bint and_into) noexcept nogil:
    """The filter on the null rows of ``col`` (its validity is complete): is_null /
    is_valid decided by the validity alone, every other filter FALSE there."""
    cdef int64_t i, j
    cdef uint8_t byte
    if f.kind == F_NULLS:
        if col.nulls == 0:
            if f.want_null:
                memset(mask, 0, rows)
            elif not and_into:
                memset(mask, 1, rows)
            return
        for i in range(rows):
            _put(mask, i, ((col.valid[i >> 3] >> (i & 7)) & 1) != f.want_null, and_into)
        return
    if col.nulls:  # a null row is not TRUE (its value above is arbitrary)
        for j in range((rows + 7) >> 3):
            byte = col.valid[j]
            if byte != 0xFF:
                for i in range(8 * j, min(8 * j + 8, rows)):
                    if not ((byte >> (i & 7)) & 1):
                        mask[i] = 0


cdef int _column(const uint8_t* buf, Py_ssize_t size, int64_t base, Col* col, int64_t rows, bint verify,
                 int64_t[:, ::1] t, const Flt* flt, uint8_t* mask, bint and_into) except -1 nogil:
    """Every data page of one column chunk (and its dictionary page) into ``col``'s
    outputs: the checks and results of ChunkDecoder.decode_all + its values, or a status.
    ``flt`` (or NULL): evaluated into ``mask`` (ANDed with ``and_into``) as each page's
    values are decoded, while they are in cache (a dictionary's entries once, before its
    pages); null rows are cleared once the values are done."""
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
    cdef uint8_t* table = NULL
    cdef bint by_value = flt != NULL and flt.kind != F_NULLS
    cdef bint selected = col.sel != NULL
    cdef int64_t out_rows = col.nsel if selected else rows
    cdef Py_ssize_t cursor = 0, j0, j1
    cdef bint whole
    cdef int got
    memset(&f, 0, sizeof(Failure))
    if by_value and kind == KIND_BOOL:
        return _fail(col, ST_UNSUPPORTED, -1)
    if enc < 0 or enc > 62 or not ((s[S_ENCODINGS] >> enc) & 1):
        return _fail(col, ST_UNSUPPORTED, -1)
    if (enc == ENC_DICTIONARY) != is_dict or dict_len < 0 or c[C_LENGTH] < dict_len:
        return _fail(col, ST_CHUNK, -1)
    if col.plist != NULL:  # only the listed pages (checked there) and the dictionary page need be in ``buf``
        if not (start <= end and (0 <= at or not is_dict)):
            return _fail(col, ST_CHUNK, -1)
    elif not (0 <= at and start <= end and end <= size):
        return _fail(col, ST_CHUNK, -1)
    if is_dict and _dictionary(buf, size, at, col, verify, t, &ddata, &ddata_len):
        return col.status
    # the data pages: headers, then bodies (checksums, decompression, validity)
    if col.plist != NULL:  # the pages the page index names, and the wanted rows among theirs
        if _listed_pages(buf, size, start, end, col, rows, enc, t, &n, &nrows, &arena_size, &run_end, &any_nulls,
                         &f):
            return col.status
        rows = nrows
    elif _headers(buf, size, start, end, NULL, NULL, NULL, 0, c[C_PAGES], rows, PAGE_DATA, enc, t, &n, &nrows,
                  &arena_size, &run_end, &any_nulls, &f):
        return _fail(col, ST_PAGES, f.page)
    elif n != c[C_PAGES] or nrows != rows:
        return _fail(col, ST_COUNTS, -1)
    if selected:  # only the pages holding a selected row are read: the others leave the table
        n = _pages_holding(col, t, n)
    col.pages_read = n
    for k in range(n):
        col.rows_read += t[k, P_ROWS]
    col.arena = <uint8_t*>malloc(arena_size)
    if col.arena == NULL:
        return _fail(col, ST_MEMORY, -1)
    if any_nulls and selected:  # every row's validity first, the wanted rows' after
        col.vfull = <uint8_t*>malloc((rows + 7) // 8 + 8)
        if col.vfull == NULL:
            return _fail(col, ST_MEMORY, -1)
    if any_nulls:
        memset(col.vfull if selected else col.valid, 0xFF, (rows + 7) // 8)
    if _bodies(buf, t, n, col.arena, (col.vfull if selected else col.valid) if any_nulls else NULL, verify, &f):
        return _fail(col, ST_PAGES, f.page)
    for k in range(n):
        most = max(most, t[k, P_ROWS])
        longest = max(longest, t[k, P_LEN])
        nulls += t[k, P_NULLS]
    col.scratch = <uint64_t*>malloc(8 * (most + 2) + _round8(longest) + 8)
    if col.scratch == NULL:
        return _fail(col, ST_MEMORY, -1)
    aligned = col.scratch + most + 2
    if selected:
        col.pagebuf = <uint8_t*>malloc(16 * most + 16)
        if col.pagebuf == NULL:
            return _fail(col, ST_MEMORY, -1)
    if any_nulls and selected:
        col.nulls = _gather_validity(col.vfull, col.sel, col.nsel, col.valid)
    elif any_nulls:
        col.nulls = nulls
        if rows % 8:
            col.valid[(rows + 7) // 8 - 1] &= (1 << (rows % 8)) - 1  # unused trailing bits are 0
    # the values
    if is_dict:
        col.codes = <uint32_t*>malloc(4 * rows + 8)
        if col.codes == NULL:
            return _fail(col, ST_MEMORY, -1)
        if by_value:  # the filter on each dictionary entry, once
            table = <uint8_t*>malloc(col.dsize + 1)
            if table == NULL:
                return _fail(col, ST_MEMORY, -1)
            if kind == KIND_VARBINARY:
                _filter_entries(flt, kind, <const uint8_t*>col.dlocal, ddata, False, col.dsize, table, False)
            else:
                _filter_entries(flt, kind, col.dvalues, NULL, False, col.dsize, table, False)
        for k in range(n):
            if selected:  # the codes of the pages holding wanted rows, gathered
                j0 = cursor
                j1 = _page_selection(col, t[k, P_FIRST], t[k, P_ROWS], &cursor)
                if j1 == j0:
                    continue
                whole = j1 - j0 == t[k, P_ROWS]  # every row of the page wanted: decoded in place
                if (j1 - j0) * GATHER_SPARSE < t[k, P_ROWS]:  # few: each code read where it lies
                    if _codes_gather(_body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS],
                                     <uint32_t>col.dsize, col.sel, j0, j1, t[k, P_FIRST], col.codes):
                        return _fail(col, ST_VALUES, k)
                    continue
                if _page_values(MODE_CODES, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], 4,
                                False, <uint32_t>col.dsize, 0, <uint8_t*>(col.codes + j0) if whole else col.pagebuf,
                                col.scratch):
                    return _fail(col, ST_VALUES, k)
                if not whole:
                    _gather_rows(col.pagebuf, t[k, P_FIRST], col.sel, j0, j1, 4, <uint8_t*>col.codes)
                continue
            if _page_values(MODE_CODES, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], 4, False,
                            <uint32_t>col.dsize, 0, <uint8_t*>(col.codes + t[k, P_FIRST]), col.scratch):
                free(table)
                return _fail(col, ST_VALUES, k)
            if by_value:
                _codes_into(table, col.dsize, col.codes + t[k, P_FIRST], t[k, P_ROWS], mask + t[k, P_FIRST],
                            and_into)
        if by_value and selected:  # the selected rows' codes, gathered
            _codes_into(table, col.dsize, col.codes, out_rows, mask, and_into)
        free(table)
        if flt != NULL:
            _mask_nulls(col, flt, out_rows, mask, and_into)
        if col.discard:  # (its filter has its answer)
            return 0
        if col.keep_codes:  # the codes, and the dictionary handed over as it is
            if col.defer:  # (compacted later: from the codes of every row, kept till then)
                col.kept = col.codes
                col.codes = NULL
            else:
                memcpy(col.values, col.codes, 4 * out_rows)
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
            return _gather_varbinary(col, ddata, col.codes, out_rows)
        return _gather_fixed(col.dvalues, col.codes, out_rows, width, col.values)
    if kind == KIND_VARBINARY:
        if _varbinary(col, buf, t, n, enc, aligned):
            return col.status
        if by_value:
            _filter_entries(flt, kind, col.values, col.data, col.s[S_LARGE] != 0, out_rows, mask, and_into)
        if flt != NULL:
            _mask_nulls(col, flt, out_rows, mask, and_into)
        return 0
    if kind == KIND_BOOL:
        mode = MODE_BOOL_PLAIN if enc == ENC_PLAIN else MODE_BOOL_RLE
        itemsize = 1
    elif enc == ENC_PLAIN:
        mode = MODE_PLAIN
    elif enc == ENC_RLE:
        mode = MODE_RLE
    elif enc == ENC_ALP:
        mode = MODE_ALP
    elif enc == ENC_ALP_SPLIT:
        mode = MODE_ALP_SPLIT
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
    elif enc == ENC_BYTE_SPLIT:
        mode = MODE_SPLIT
    else:
        return _fail(col, ST_UNSUPPORTED, -1)
    out_size = itemsize
    for k in range(n):
        if selected:  # the pages holding wanted rows, their wanted values gathered
            j0 = cursor
            j1 = _page_selection(col, t[k, P_FIRST], t[k, P_ROWS], &cursor)
            if j1 == j0:
                continue
            whole = j1 - j0 == t[k, P_ROWS]  # every row of the page wanted: decoded in place
            if (mode == MODE_BITPACK or mode == MODE_BITPACK_DECIMAL) and (j1 - j0) * GATHER_SPARSE < t[k, P_ROWS]:
                # few rows of the page: each read where it is packed, the others left packed
                got = _bitpack_gather(mode, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS],
                                      itemsize, signed, decimal_lim, col.sel, j0, j1, t[k, P_FIRST], col.values)
                if got == 1:
                    return _fail(col, ST_VALUES, k)
                if got == 0:
                    continue
            elif mode == MODE_PLAIN and (j1 - j0) * GATHER_SPARSE < t[k, P_ROWS]:  # few: copied from where they lie
                if _plain_gather(_body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], itemsize, col.sel,
                                 j0, j1, t[k, P_FIRST], col.values):
                    return _fail(col, ST_VALUES, k)
                continue
            if _page_values(mode, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], itemsize, signed,
                            0, decimal_lim, col.values + j0 * out_size if whole else col.pagebuf, col.scratch):
                return _fail(col, ST_VALUES, k)
            if not whole:
                _gather_rows(col.pagebuf, t[k, P_FIRST], col.sel, j0, j1, out_size, col.values)
            continue
        if _page_values(mode, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], itemsize, signed, 0,
                        decimal_lim, col.values + t[k, P_FIRST] * out_size, col.scratch):
            return _fail(col, ST_VALUES, k)
        if by_value and mode == MODE_BITPACK_DECIMAL:  # int64 low words, before they are widened
            _narrow_decimals_into(flt, <const int64_t*>(col.values + t[k, P_FIRST] * 8), t[k, P_ROWS],
                                  mask + t[k, P_FIRST], and_into)
        elif by_value:
            _filter_entries(flt, kind, col.values + t[k, P_FIRST] * out_size, NULL, False, t[k, P_ROWS],
                            mask + t[k, P_FIRST], and_into)
    if by_value and selected and mode == MODE_BITPACK_DECIMAL:  # the gathered values, before widening
        _narrow_decimals_into(flt, <const int64_t*>col.values, out_rows, mask, and_into)
    elif by_value and selected:
        _filter_entries(flt, kind, col.values, NULL, False, out_rows, mask, and_into)
    if flt != NULL:
        _mask_nulls(col, flt, out_rows, mask, and_into)
    if kind == KIND_BOOL:  # a byte per value -> Arrow's bits (LSB first), in place: byte j is written
        if not col.defer:  # after bytes 8j..8j+7 are read
            _pack_bits(col.values, out_rows)
    elif mode == MODE_BITPACK_DECIMAL:  # int64 low words -> 16-byte decimals, in place, from the end
        if col.defer:
            col.widen = True
        else:
            _widen_decimals(col.values, out_rows)
    elif s[S_DECIMAL] and decimal_row(<const uint64_t*>col.values, out_rows, <int>s[S_PRECISION]) >= 0:
        return _fail(col, ST_INVALID, -1)
    return 0


cdef int _then_column(const uint8_t* buf, Py_ssize_t size, int64_t base, Col* col, int64_t rows, bint verify,
                      int64_t[:, ::1] t, const int64_t* picked_rows, int64_t picked, int64_t* r) except -1 nogil:
    """A column decoded after the filter, at the ``picked`` rows it selected, into an
    arena made for them (``r``: its results row, where the values and validity lie)."""
    if _own_arena(col, _values_bytes(col.s, col.keep_codes, col.discard, picked), picked, r):
        return col.status
    col.sel = picked_rows
    col.nsel = picked
    return _column(buf, size, base, col, rows, verify, t, NULL, NULL, False)


# ------------------------------------------------------------------ the block
cdef int _pick(const uint8_t* mask, int64_t n, const int64_t* sel, int64_t** pos, int64_t** rows,
               int64_t** starts, int64_t** ends, int64_t* count, int64_t* runs) noexcept nogil:
    """The rows a final ``mask`` (``n`` bytes) selects: their positions among the rows
    decoded, their block rows (``sel[pos]``, or ``pos`` when every row was decoded) and
    the runs of those rows (half-open). 0, or -1 out of memory (the caller frees)."""
    cdef int64_t j, k = 0, m = rc_mask_count(mask, n), r
    pos[0] = <int64_t*>malloc(8 * m + 8)
    if pos[0] == NULL:
        return -1
    rc_mask_positions(mask, n, pos[0])
    rows[0] = <int64_t*>malloc(8 * m + 8)
    starts[0] = <int64_t*>malloc(8 * m + 8)
    ends[0] = <int64_t*>malloc(8 * m + 8)
    if rows[0] == NULL or starts[0] == NULL or ends[0] == NULL:
        return -1
    for j in range(m):
        r = sel[pos[0][j]] if sel != NULL else pos[0][j]
        rows[0][j] = r
        if k and ends[0][k - 1] == r:
            ends[0][k - 1] = r + 1
        else:
            starts[0][k] = r
            ends[0][k] = r + 1
            k += 1
    count[0] = m
    runs[0] = k
    return 0


cdef _int64s(int64_t* ptr, int64_t n):
    """``n`` int64 at ``ptr`` (malloc'ed; owned from here on) as a numpy array."""
    cdef int64_t* shrunk = <int64_t*>realloc(ptr, 8 * n + 8)
    return np.frombuffer(_own(shrunk if shrunk != NULL else ptr, 8 * n), np.int64)


def run_block(buf, int64_t base, const int64_t[:, ::1] spec, const int64_t[:, ::1] chunks, int64_t rows,
              bint verify, filters=None, uint8_t[::1] mask=None, bint short_circuit=False,
              const int64_t[::1] selected=None, pages=None, compact=None, Py_ssize_t then=0):
    """Decode every column of one block (its rows, or the ``selected`` ones), in one
    GIL-free pass.

    ``buf``: the block's bytes from file offset ``base`` on (a whole read, or ranges
    read into one buffer); ``spec``: one row of S_COLS per column (built once per scan);
    ``chunks``: the block's chunk records, one row of C_COLS per column; ``rows``: the
    block's rows. Returns ``(arenas, results, data, dictionaries)``: per column the uint8
    arena holding its values/codes/offsets and validity, ``results`` (int64, R_COLS per
    column: status, page, where the column's outputs are in its arena, nulls, data
    bytes), and
    per column the :class:`Owned` string/binary data (or None) and the kept dictionary
    ``(values or data, int32 offsets or None)`` (or None). A column whose status is not
    ST_OK is refused (see the module docstring).

    ``filters`` (one :class:`Filter` or None per column) and ``mask`` (uint8, ``rows``):
    each column's filter is evaluated on its rows right after it is decoded, the first
    one written into ``mask`` and the next ones ANDed into it (dictionary chunks: once
    per entry, then a lookup per code). With
    ``short_circuit``, once the mask holds no TRUE row the columns left are not decoded
    (status ST_SKIPPED): the mask is final, whatever they hold.

    ``selected`` (sorted, distinct rows of the block): only these rows are returned, one
    after another (and filtered: ``mask`` then has a byte per selected row). Every
    page's header is checked; only the pages holding a selected row have their bodies
    read (checksums, decompression) and their values decoded (``R_PAGES``), and the
    UTF-8 and precision checks cover the values returned.

    ``pages`` (with ``selected``; one entry per column, or None): the pages to read of
    each column, as the page index names them -- a C-contiguous int64 array of shape
    (4, n): their positions in ``buf``, rows, lengths, and first rows in the block, in
    row order, holding every selected row (or None: the column's whole chunk is in
    ``buf``). Only those pages (and the dictionary page) are read, each checked against
    its entry; nothing else of the chunk need be in ``buf``.

    ``compact`` (with ``filters``: one flag per column): the mask is final once every
    column is decoded (the AND of all the filters), and the flagged columns are returned
    at the rows it selects only, one after another (their ``R_NULLS`` counted there);
    the others as above. Flag 2: a dictionary chunk of the column is returned as its
    values there (``R_DICT`` 0), not as codes and its dictionary. A fifth item is then returned: ``(rows, starts, ends)``, the
    selected rows of the block (int64, in order) and their runs ``[starts, ends)``.

    ``then`` (with ``compact``): the last ``then`` columns take no part in the filter
    (their ``filters`` entries None): they are decoded after it, at the rows it picked
    (their whole chunks in ``buf``; ST_SKIPPED when it picked none), into arenas sized
    for those rows -- the filter and the projection of a block in one call."""
    cdef const uint8_t[::1] view = memoryview(buf).cast("B") if not isinstance(buf, np.ndarray) else buf
    cdef Py_ssize_t size = view.shape[0]
    cdef const uint8_t* p = &view[0] if size else _EMPTY
    cdef Py_ssize_t ncols = spec.shape[0], i, reached = 0
    cdef int64_t capacity = 1, vbytes, npages, length, width, shift
    cdef bint keep, discard
    cdef cnp.ndarray arena
    cdef uint8_t* a
    if chunks.shape[0] != ncols or spec.shape[1] != S_COLS or chunks.shape[1] != C_COLS:
        raise ValueError("spec and chunks need one row per column")
    if rows < 0:
        raise ValueError("rows must be >= 0")
    cdef int64_t out_rows = rows, j
    cdef const int64_t* sel = NULL
    if selected is not None:
        out_rows = selected.shape[0]
        sel = &selected[0] if out_rows else <const int64_t*>_EMPTY
        with nogil:
            j = rc_sorted_below(sel, out_rows, rows)
        if j < out_rows:
            raise ValueError("selected rows must be sorted, distinct rows of the block")
    cdef const int64_t[:, ::1] listed
    if pages is not None and (selected is None or len(pages) != ncols):
        raise ValueError("pages need the selected rows and one entry per column")
    if then < 0 or then > ncols or (then and (compact is None or pages is not None)):
        raise ValueError("then needs compact, no pages, and at most one column per column")
    cdef Py_ssize_t first_then = ncols - then
    cdef cnp.ndarray results = np.zeros((ncols, R_COLS), np.int64)
    cdef int64_t[:, ::1] r = results
    cdef int64_t shared = 0, at
    arenas = [None] * ncols
    for i in range(ncols):
        discard = spec[i, S_DISCARD] != 0 and chunks[i, C_DICT_LENGTH] > 0
        keep = spec[i, S_CODES] != 0 and chunks[i, C_DICT_LENGTH] > 0 and not discard
        r[i, R_DICT] = keep
        npages = max(chunks[i, C_PAGES], 1)
        length = max(chunks[i, C_LENGTH], 0)
        capacity = max(capacity, min(npages, length // 32 + 1))
        if i >= first_then:  # (the later columns' arenas are made once the rows are picked)
            continue
        vbytes = _values_bytes(&spec[i, 0], keep, discard, out_rows)
        if compact is not None:  # (the filter's columns, compacted or dropped after: one arena for all)
            r[i, R_VALUES] = shared
            r[i, R_VALID] = shared + _round64(vbytes + 8)
            shared += _arena_bytes(vbytes, out_rows)
            continue
        arena = _memory.empty(_arena_bytes(vbytes, out_rows), np.uint8)
        arenas[i] = arena
        shift = (-<int64_t>(<uintptr_t>cnp.PyArray_DATA(arena))) & 63
        r[i, R_VALUES] = shift
        r[i, R_VALID] = shift + _round64(vbytes + 8)
    if shared:  # one arena for the filter's columns, each part 64-byte aligned
        arena = _memory.empty(shared + 64, np.uint8)
        shift = (-<int64_t>(<uintptr_t>cnp.PyArray_DATA(arena))) & 63
        for i in range(first_then):
            arenas[i] = arena
            r[i, R_VALUES] += shift
            r[i, R_VALID] += shift
    cdef cnp.ndarray table = np.empty((capacity, P_COLS), np.int64)
    cdef int64_t[:, ::1] t = table
    cdef const Flt** flts = NULL
    cdef uint8_t* mask_p = NULL
    cdef bint anded = False, empty = False
    cdef uint8_t* own_mask = NULL
    if filters is not None:
        if len(filters) != ncols or (mask is None and compact is None) or (mask is not None and
                                                                             mask.shape[0] < out_rows):
            raise ValueError("filters need one entry per column and a mask of one byte per row")
        for i in range(ncols):
            if filters[i] is not None and not isinstance(filters[i], Filter):
                raise TypeError("filters are Filter objects or None")
        if mask is None:  # (compact: the rows it picks are the answer, the mask a scratch of its own)
            own_mask = <uint8_t*>malloc(out_rows + 8)
            if own_mask == NULL:
                raise MemoryError()
            mask_p = own_mask
        else:
            mask_p = &mask[0] if out_rows else _EMPTY
    flts = <const Flt**>malloc(max(ncols, 1) * sizeof(Flt*))
    if flts == NULL:
        free(own_mask)
        raise MemoryError()
    for i in range(ncols):
        flts[i] = &(<Filter>filters[i]).f if filters is not None and filters[i] is not None else NULL
    cdef bint compacting = compact is not None
    if compacting and (filters is None or len(compact) != ncols):
        free(flts)
        free(own_mask)
        raise ValueError("compact needs filters and one flag per column")
    for i in range(first_then, ncols):
        if flts[i] != NULL:
            free(flts)
            free(own_mask)
            raise ValueError("the columns decoded after the filter take no part in it")
    cdef Col* cols = <Col*>malloc(max(ncols, 1) * sizeof(Col))
    if cols == NULL:
        free(flts)
        free(own_mask)
        raise MemoryError()
    memset(cols, 0, max(ncols, 1) * sizeof(Col))
    for i in range(ncols):
        if i < first_then:
            a = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>arenas[i])
            cols[i].values = a + r[i, R_VALUES]
            cols[i].valid = a + r[i, R_VALID]
        cols[i].s = &spec[i, 0]
        cols[i].c = &chunks[i, 0]
        cols[i].keep_codes = r[i, R_DICT] != 0
        cols[i].discard = spec[i, S_DISCARD] != 0 and chunks[i, C_DICT_LENGTH] > 0
        cols[i].page = -1
        cols[i].sel = sel
        cols[i].nsel = out_rows
        cols[i].defer = compacting and bool(compact[i]) and i < first_then
        cols[i].as_values = cols[i].defer and compact[i] == 2
        if pages is not None and pages[i] is not None:
            listed = pages[i]
            if listed.shape[0] != 4:
                free(cols)
                free(flts)
                free(own_mask)
                raise ValueError("each column's pages are a (4, n) int64 array")
            cols[i].plist = &listed[0, 0] if listed.shape[1] else <const int64_t*>_EMPTY
            cols[i].npl = listed.shape[1]
    data = [None] * ncols
    dictionaries = [None] * ncols
    cdef int64_t* pos = NULL
    cdef int64_t* picked_rows = NULL
    cdef int64_t* starts = NULL
    cdef int64_t* ends = NULL
    cdef int64_t picked = 0, runs = 0
    cdef bint no_memory = False
    picks = None
    try:
        try:
            with nogil:
                for i in range(first_then):
                    reached = i
                    if empty:
                        cols[i].status = ST_SKIPPED
                        continue
                    if _column(p, size, base, &cols[i], rows, verify, t, flts[i], mask_p, anded) == 0 \
                            and flts[i] != NULL:
                        anded = True
                        empty = short_circuit and _none_set(mask_p, out_rows)
                    _free_temporaries(&cols[i])
                reached = first_then
                if compacting:  # the mask is final: the flagged columns at the rows it selects
                    if not anded:  # (no filter on any column: every row)
                        memset(mask_p, 1, out_rows)
                    if _pick(mask_p, out_rows, sel, &pos, &picked_rows, &starts, &ends, &picked, &runs):
                        no_memory = True
                    else:
                        for i in range(first_then):
                            if cols[i].defer and cols[i].status == ST_OK and not cols[i].discard:
                                _compact(&cols[i], pos, picked, &r[i, 0])
                        for i in range(first_then, ncols):  # then the projection, at those rows
                            reached = i
                            if picked == 0:
                                cols[i].status = ST_SKIPPED
                                continue
                            _then_column(p, size, base, &cols[i], rows, verify, t, picked_rows, picked, &r[i, 0])
                            _free_temporaries(&cols[i])
                        reached = ncols
        except Exception:  # the Python codec fallback raised: the reference decoder says it again
            for i in range(reached, ncols):
                _free_temporaries(&cols[i])
                cols[i].status = ST_PYTHON
        if no_memory:
            raise MemoryError()
        if compacting:
            picks = (_int64s(picked_rows, picked), _int64s(starts, runs), _int64s(ends, runs))
            picked_rows = starts = ends = NULL
        for i in range(ncols):
            r[i, R_STATUS] = cols[i].status
            r[i, R_PAGE] = cols[i].page
            if cols[i].status != ST_OK:
                _free_outputs(&cols[i])
                continue
            if cols[i].own != NULL:  # (a later column's arena, owned by its array from here on)
                arenas[i] = np.frombuffer(_own(cols[i].own, cols[i].own_size), np.uint8)
                cols[i].own = NULL
            r[i, R_NULLS] = cols[i].nulls
            r[i, R_DATA] = cols[i].data_len
            r[i, R_DSIZE] = cols[i].dsize
            r[i, R_PAGES] = cols[i].pages_read
            r[i, R_ROWS] = cols[i].rows_read
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
        free(flts)
        free(own_mask)
        free(pos)
        free(picked_rows)
        free(starts)
        free(ends)
    if compacting:
        return arenas, results, data, dictionaries, picks
    return arenas, results, data, dictionaries
