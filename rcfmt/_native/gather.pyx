"""Gathers of the block executor (:mod:`rcfmt._native.block`), on raw pointers without
the GIL: a dictionary's fixed-width entries or strings at their codes, a page's values at
the wanted rows, validity bits at positions, bools packed to Arrow's bits and BITPACK
decimals widened, and a column's outputs compacted to the rows a filter picked
(:func:`_compact`: in place, or a dictionary chunk's values gathered at them)."""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove, memset

from rcfmt._native.abi cimport (KIND_BOOL, KIND_VARBINARY, R_DICT, R_VALID, R_VALUES, S_KIND, S_LARGE, S_WIDTH,
                                 ST_MEMORY, ST_TOO_BIG)
from rcfmt._native.offsets cimport get_offset, offset_fits, put_offset
from rcfmt._native.column cimport (Col, _arena_bytes, _fail, _first_offset, _round64, _values_bytes, tmp_alloc,
                                   tmp_free, tmp_shrink)


ctypedef fused _at_t:
    uint32_t
    int64_t


cdef inline void _items(const uint8_t* src, const _at_t* at, int64_t first, Py_ssize_t j0, Py_ssize_t j1,
                        uint8_t* out, Py_ssize_t size) noexcept nogil:
    """Item j of ``out`` = item ``at[j] - first`` of ``src`` for j in [j0, j1), items of
    ``size`` bytes -- a constant in each copy :func:`_move_items` makes, so that every
    copy is one load and one store (memmove is not made so, and costed a full scan 1.3x).
    No item may be copied onto itself."""
    cdef Py_ssize_t j
    for j in range(j0, j1):
        memcpy(out + j * size, src + (<int64_t>at[j] - first) * size, size)


cdef inline void _move_items(const uint8_t* src, const _at_t* at, int64_t first, Py_ssize_t j0, Py_ssize_t j1,
                             uint8_t* out, Py_ssize_t size) noexcept nogil:
    """:func:`_items` for any item size: one copy of it per usual size (1, 2, 4, 8 and 16
    bytes: every fixed-width type, decimals included), the general one for the others."""
    if size == 1:
        _items(src, at, first, j0, j1, out, 1)
    elif size == 2:
        _items(src, at, first, j0, j1, out, 2)
    elif size == 4:
        _items(src, at, first, j0, j1, out, 4)
    elif size == 8:
        _items(src, at, first, j0, j1, out, 8)
    elif size == 16:
        _items(src, at, first, j0, j1, out, 16)
    else:
        _items(src, at, first, j0, j1, out, size)


cdef int _gather_fixed(const uint8_t* dvalues, const uint32_t* codes, int64_t rows, int width,
                       uint8_t* out) noexcept nogil:
    """A dictionary's fixed-width entries (``width`` bytes) at ``codes`` into ``out``."""
    _move_items(dvalues, codes, 0, 0, rows, out, width)
    return 0


cdef int _gather_varbinary(Col* col, const uint8_t* d, const uint32_t* codes, int64_t rows) noexcept nogil:
    """Strings/binary of the dictionary at ``codes`` into offsets (the arena) and owned
    data; ``d`` (the padded copy) and the output have 16 bytes of slack: values of at
    most 16 bytes are copied as 16 (as rcfmt._native.varbinary.gather does). Entries all
    of one length (flags, codes of airports) need no pass over the lengths."""
    cdef const uint32_t* off = col.dlocal
    cdef int64_t i, total = 0, pos = 0, m
    cdef uint32_t code, longest = 0, shortest = 0xFFFFFFFFu
    cdef bint wide = col.s[S_LARGE] != 0
    cdef bint scanned = col.dsize <= rows  # (a few rows of a large dictionary: not worth its scan)
    if scanned:
        for i in range(col.dsize):
            longest = max(longest, off[i + 1] - off[i])
            shortest = min(shortest, off[i + 1] - off[i])
    cdef bint same = scanned and col.dsize > 0 and longest == shortest and longest <= 32
    if same:
        total = rows * longest
    else:
        for i in range(rows):
            code = codes[i]
            total += off[code + 1] - off[code]
    if not offset_fits(wide, total):
        return _fail(col, ST_TOO_BIG, -1)
    col.data = <uint8_t*>tmp_alloc(total + 16)
    if col.data == NULL:
        return _fail(col, ST_MEMORY, -1)
    _first_offset(col, wide)
    if same:  # (offsets i * length: no chain from row to row)
        _gather_same(col.data, d, off, codes, rows, longest)
        if wide:
            for i in range(rows):
                put_offset(col.values, True, i + 1, (i + 1) * longest)
        else:
            for i in range(rows):
                put_offset(col.values, False, i + 1, (i + 1) * longest)
        pos = total
    elif scanned and longest <= 16:  # (every value copied as one 16-byte move: no branch per row)
        pos = _gather_short(col.data, d, off, codes, rows, col.values, True, False) if wide else \
            _gather_short(col.data, d, off, codes, rows, col.values, False, False)
    elif scanned and longest <= 32:  # (as two 16-byte moves)
        pos = _gather_short(col.data, d, off, codes, rows, col.values, True, True) if wide else \
            _gather_short(col.data, d, off, codes, rows, col.values, False, True)
    else:
        for i in range(rows):
            code = codes[i]
            m = off[code + 1] - off[code]
            if m <= 16:
                memcpy(col.data + pos, d + off[code], 16)
            else:
                memcpy(col.data + pos, d + off[code], m)
            pos += m
            put_offset(col.values, wide, i + 1, pos)
    col.data_len = pos
    return 0


cdef inline void _gather_same(uint8_t* out, const uint8_t* d, const uint32_t* off, const uint32_t* codes,
                              int64_t rows, uint32_t length) noexcept nogil:
    """The values at ``codes`` of a dictionary whose entries are all ``length`` (<= 32)
    bytes, back to back (``out`` has 16 bytes of slack)."""
    cdef int64_t i
    cdef const uint8_t* v
    if length == 1:
        for i in range(rows):
            out[i] = d[off[codes[i]]]
    elif length <= 8:
        for i in range(rows):
            memcpy(out + i * length, d + off[codes[i]], 8)
    elif length <= 16:
        for i in range(rows):
            memcpy(out + i * length, d + off[codes[i]], 16)
    else:  # (two overlapping 16-byte copies: the value's first and last 16 bytes)
        for i in range(rows):
            v = d + off[codes[i]]
            memcpy(out + i * length, v, 16)
            memcpy(out + i * length + length - 16, v + length - 16, 16)


cdef inline int64_t _gather_short(uint8_t* out, const uint8_t* d, const uint32_t* off, const uint32_t* codes,
                                  int64_t rows, void* values, bint wide, bint two) noexcept nogil:
    """:func:`_gather_varbinary`'s copy when no value exceeds 16 bytes, or 32 with
    ``two`` (``wide``, ``two``: constants at each call, so each loop is specialised); the
    data's length. A value is one 16-byte move, or two: its first 16 bytes and the 16
    ending at its end (the same ones again when it is no longer than 16: all within the
    slack)."""
    cdef int64_t i, pos = 0, m, k
    cdef const uint8_t* v
    for i in range(rows):
        v = d + off[codes[i]]
        m = off[codes[i] + 1] - off[codes[i]]
        memcpy(out + pos, v, 16)
        if two:
            k = m - 16 if m > 16 else 0
            memcpy(out + pos + k, v + k, 16)
        pos += m
        put_offset(values, wide, i + 1, pos)
    return pos


cdef void _gather_rows(const uint8_t* page, int64_t first, const int64_t* sel, Py_ssize_t j0, Py_ssize_t j1,
                       int size, uint8_t* out) noexcept nogil:
    """out[j] = page[sel[j] - first] for j in [j0, j1), values of ``size`` bytes."""
    _move_items(page, sel, first, j0, j1, out, size)


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
    """v[j] = v[pos[j]] for j in [0, n), values of ``size`` bytes; ``pos`` strictly
    increasing, so pos[j] >= j and no value is overwritten before it is moved -- and
    pos[j] - j never decreases: past the first j where they differ, no value stays."""
    cdef int64_t j0 = 0
    while j0 < n and pos[j0] == j0:
        j0 += 1
    _move_items(v, pos, 0, j0, n, v, size)


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
        if not offset_fits(wide, total):
            return _fail(col, ST_TOO_BIG, -1)
        tmp_free(col.data)
        col.data = <uint8_t*>tmp_alloc(total + 1)
        if col.data == NULL:
            return _fail(col, ST_MEMORY, -1)
        _first_offset(col, wide)
        for j in range(n):
            code = codes[pos[j]]
            m = off[code + 1] - off[code]
            if m:
                memcpy(col.data + p, col.ddata + off[code], m)
            p += m
            put_offset(col.values, wide, j + 1, p)
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
            a, b = get_offset(col.values, wide, pos[j]), get_offset(col.values, wide, pos[j] + 1)
            if b > a:
                memmove(col.data + p, col.data + a, b - a)
            p += b - a
            offsets[j + 1] = p
        for j in range(n + 1):
            put_offset(col.values, wide, j, offsets[j])
        free(offsets)
        col.data_len = p
        col.data = <uint8_t*>tmp_shrink(col.data, p + 1)  # (the owner keeps no more than it returns)
    elif col.s[S_KIND] == KIND_BOOL:
        _gather_in_place(col.values, pos, n, 1)
        _pack_bits(col.values, n)
    elif col.widen:
        _gather_in_place(col.values, pos, n, 8)
        _widen_decimals(col.values, n)
    else:
        _gather_in_place(col.values, pos, n, <int>col.s[S_WIDTH])
    return 0
