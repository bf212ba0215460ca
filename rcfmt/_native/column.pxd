# One column chunk of a block, decoded by the block executor (rcfmt/_native/column.pyx):
# the column's state and outputs (Col), the helpers its decoders and gathers share, and
# the entry points rcfmt/_native/block.pyx runs per column.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy

from rcfmt._native.abi cimport KIND_VARBINARY, S_KIND, S_LARGE, S_WIDTH
from rcfmt._native.filters cimport Flt
from rcfmt._native.offsets cimport put_offset
from rcfmt._native.pages cimport P_ARENA, P_AT, P_LEN

cdef enum:
    # a BITPACK, PLAIN or dictionary-codes page of whose rows fewer than one in this many
    # are wanted has them read where they lie (a few shifts each when packed) instead of
    # decoding the page first
    GATHER_SPARSE = 8
    # a zstd page of strings larger than this whose frame holds several blocks (the
    # writer's zstd_block_size), of which only some rows are wanted, is inflated only up
    # to the block holding the end of its last wanted string
    LAZY_BYTES = 4096


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


cdef inline void _first_offset(Col* col, bint wide) noexcept nogil:
    """Offset 0 of a string/binary output (int64 when ``wide``, else int32)."""
    put_offset(col.values, wide, 0, 0)


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


cdef void* tmp_alloc(size_t n) noexcept nogil
cdef void tmp_free(void* p) noexcept nogil
cdef void* tmp_shrink(void* p, size_t n) noexcept nogil
cdef void _free_temporaries(Col* col) noexcept nogil
cdef void _free_outputs(Col* col) noexcept nogil
cdef int _column(const uint8_t* buf, Py_ssize_t size, int64_t base, Col* col, int64_t rows, bint verify,
                 int64_t[:, ::1] t, const Flt* flt, uint8_t* mask, bint and_into) except -1 nogil
cdef int _then_column(const uint8_t* buf, Py_ssize_t size, int64_t base, Col* col, int64_t rows, bint verify,
                      int64_t[:, ::1] t, const int64_t* picked_rows, int64_t picked, int64_t* r) except -1 nogil
