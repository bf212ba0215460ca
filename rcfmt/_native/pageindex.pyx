# cython: language_level=3
"""Page-index records in one pass each (no temporaries): :func:`entries_consistent`
checks them (the reader calls it for every column chunk a scan touches, so it is part
of the fixed cost of a point lookup); :func:`interval_pages` prunes pages by an
interval of a column's comparisons, from the records' min/max slots.

Records are read from the raw little-endian bytes (see docs/FORMAT.md, "Page index"):
``first_row`` u64 at 0, ``offset`` u64 at 8, ``length`` u32 at 16, ``row_count`` u32
at 20, ``null_count`` u32 at 24, ``nan_count`` u32 at 28, ``stats_flags`` u8 at 32,
then the ``min`` and ``max`` slots of the column's stats width from 40.
"""
from libc.math cimport INFINITY, NAN, nextafter
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcmp


cdef extern from *:
    """
    #include <string.h>
    /* little-endian loads (one instruction on the little-endian hosts rcfmt runs on) */
    static inline uint64_t rc_le64(const uint8_t* p) {
        uint64_t v; memcpy(&v, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        v = __builtin_bswap64(v);
    #endif
        return v;
    }
    static inline uint32_t rc_le32(const uint8_t* p) {
        uint32_t v; memcpy(&v, p, 4);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        v = __builtin_bswap32(v);
    #endif
        return v;
    }
    """
    uint64_t rc_le64(const uint8_t* p) noexcept nogil
    uint32_t rc_le32(const uint8_t* p) noexcept nogil


cdef inline uint64_t _u64(const uint8_t[::1] b, Py_ssize_t p) noexcept nogil:
    return rc_le64(&b[p])


cdef inline uint32_t _u32(const uint8_t[::1] b, Py_ssize_t p) noexcept nogil:
    return rc_le32(&b[p])


cdef bint _tile(const uint8_t[::1] raw, Py_ssize_t count, Py_ssize_t record_size,
               uint64_t rows, uint64_t start, uint64_t end) noexcept nogil:
    cdef uint64_t expected = 0, first, offset
    cdef uint32_t length, n, nulls, nans
    cdef Py_ssize_t i, p
    for i in range(count):
        p = i * record_size
        first = _u64(raw, p)
        offset = _u64(raw, p + 8)
        length = _u32(raw, p + 16)
        n = _u32(raw, p + 20)
        nulls = _u32(raw, p + 24)
        nans = _u32(raw, p + 28)
        if first != expected or n == 0 or nulls > n or nans > n - nulls:
            return False
        expected = first + n  # first == expected <= rows < 2**63: no overflow
        if expected > rows:
            return False
        if offset < start or offset > end or length > end - offset:
            return False
    return expected == rows


def entries_consistent(const uint8_t[::1] raw, Py_ssize_t count, Py_ssize_t record_size,
                       uint64_t rows, uint64_t start, uint64_t end):
    """Whether ``count`` records of ``record_size`` bytes in ``raw`` describe pages that
    tile rows ``[0, rows)`` in order (each with at least one row) and whose bytes
    ``[offset, offset + length)`` lie within the chunk ``[start, end)``, with null and
    NaN counts of at most their rows."""
    if record_size < 40 or count < 0 or raw.shape[0] < count * record_size:
        return False
    cdef bint ok
    with nogil:
        ok = _tile(raw, count, record_size, rows, start, end)
    return ok



# ------------------------------------------------------------------ page pruning by an interval
#: interval_pages value kinds
KIND_SIGNED, KIND_UNSIGNED, KIND_FLOAT64, KIND_DECIMAL128 = 0, 1, 2, 3
#: bytes_pages' bounds: strings and binaries (truncated bounds, FORMAT.md section 5.3)
KIND_BYTES = 4

cdef extern from *:
    """
    typedef __int128 rc_i128;
    static inline rc_i128 rc_make_i128(int64_t high, uint64_t low) {
        return (rc_i128)(((unsigned __int128)(uint64_t)high << 64) | (unsigned __int128)low);
    }
    """
    ctypedef long long rc_i128  # a C __int128: only built by rc_make_i128 and compared
    rc_i128 rc_make_i128(int64_t high, uint64_t low) noexcept nogil


cdef inline uint64_t _le(const uint8_t* p, int width) noexcept nogil:
    cdef uint64_t v = 0
    cdef int k
    for k in range(width - 1, -1, -1):
        v = (v << 8) | p[k]
    return v


cdef inline rc_i128 _slot_int(const uint8_t* p, int width, int kind) noexcept nogil:
    """A min/max slot as a 128-bit integer (little-endian, two's complement unless
    unsigned; decimal128 slots are 16 bytes)."""
    cdef uint64_t low
    if width == 16:
        return rc_make_i128(<int64_t>_le(p + 8, 8), _le(p, 8))
    low = _le(p, width)
    if kind == 1:
        return rc_make_i128(0, low)
    if width < 8 and (low >> (8 * width - 1)) & 1:
        low |= (<uint64_t>0xFFFFFFFFFFFFFFFF) << (8 * width)  # sign-extend to 64 bits
    return rc_make_i128(-1 if low >> 63 else 0, low)


cdef inline double _slot_f64(const uint8_t* p) noexcept nogil:
    cdef uint64_t bits = _le(p, 8)
    return (<double*>&bits)[0]


cdef void _interval_pages(const uint8_t* raw, Py_ssize_t count, Py_ssize_t record_size, int width, int kind,
                          rc_i128 ilo, rc_i128 ihi, double dlo, double dhi, uint8_t* out) noexcept nogil:
    cdef Py_ssize_t i
    cdef const uint8_t* r
    cdef int64_t ordered
    for i in range(count):
        r = raw + i * record_size
        # rows - nulls - NaNs: the values min/max bound (a corrupt count makes it <= 0)
        ordered = <int64_t>_le(r + 20, 4) - <int64_t>_le(r + 24, 4) - <int64_t>_le(r + 28, 4)
        if ordered <= 0:
            out[i] = 0  # no value a comparison can be TRUE on
        elif not (r[32] & 1):
            out[i] = 1  # no bounds: the page may match
        elif kind == 2:
            out[i] = (_slot_f64(r + 40 + width) >= dlo) & (_slot_f64(r + 40) <= dhi)
        else:
            out[i] = (_slot_int(r + 40 + width, width, kind) >= ilo) & (_slot_int(r + 40, width, kind) <= ihi)


cdef rc_i128 _to_i128(v):
    return rc_make_i128(<int64_t>(v >> 64), <uint64_t>(v & 0xFFFFFFFFFFFFFFFF))


_I128_MIN, _I128_MAX = -(1 << 127), (1 << 127) - 1


def interval_pages(const uint8_t[::1] raw, Py_ssize_t count, Py_ssize_t record_size, int width, int kind,
                   lo, int lo_kind, hi, int hi_kind, uint8_t[::1] out):
    """May page ``i`` (of ``count`` page-index records of ``record_size`` bytes in
    ``raw``, with stats slots of ``width`` bytes holding values of ``kind``) hold a
    non-null, non-NaN value ``x`` with ``lo < x`` / ``lo <= x`` (``lo_kind`` 1 / 2; 0:
    no lower bound) and ``x < hi`` / ``x <= hi``? Pages without bounds may; pages
    without such values may not. Written to ``out`` as 0/1 bytes. Bounds are ints (or
    floats for KIND_FLOAT64) in the stats domain (decimals unscaled)."""
    if record_size < 40 + 2 * width or raw.shape[0] < count * record_size or out.shape[0] < count:
        raise ValueError("records too short for their stats slots, or out too short")
    if kind == 3 and width != 16 or kind == 2 and width != 8 or kind in (0, 1) and width not in (1, 2, 4, 8):
        raise ValueError(f"stats width {width} does not fit value kind {kind}")
    cdef rc_i128 ilo = 0, ihi = 0
    cdef double dlo = 0, dhi = 0
    if kind == 2:  # strict bounds as the next double inward; none as an infinity
        dlo = <double>lo if lo_kind else -INFINITY
        dhi = <double>hi if hi_kind else INFINITY
        if lo_kind == 1:
            dlo = nextafter(dlo, INFINITY) if dlo != INFINITY else NAN
        if hi_kind == 1:
            dhi = nextafter(dhi, -INFINITY) if dhi != -INFINITY else NAN
    else:  # strict bounds as the next integer inward, clamped to 128 bits
        lo_i = int(lo) + (lo_kind == 1) if lo_kind else _I128_MIN
        hi_i = int(hi) - (hi_kind == 1) if hi_kind else _I128_MAX
        if lo_i > hi_i or lo_i > _I128_MAX or hi_i < _I128_MIN:
            out[:count] = 0  # an empty interval
            return
        ilo, ihi = _to_i128(max(lo_i, _I128_MIN)), _to_i128(min(hi_i, _I128_MAX))
    if count <= 0:
        return
    with nogil:
        _interval_pages(&raw[0], count, record_size, width, kind, ilo, ihi, dlo, dhi, &out[0])


cdef inline int _cmp_bytes(const uint8_t* a, Py_ssize_t la, const uint8_t* b, Py_ssize_t lb) noexcept nogil:
    """Lexicographic order of two byte strings, as Python compares bytes: -1, 0 or 1."""
    cdef int c = memcmp(a, b, la if la < lb else lb) if (la and lb) else 0
    if c:
        return -1 if c < 0 else 1
    return (la > lb) - (la < lb)


def bytes_pages(const uint8_t[::1] raw, Py_ssize_t count, Py_ssize_t record_size, int width,
                const uint8_t[::1] lo, int lo_kind, const uint8_t[::1] hi, int hi_kind, uint8_t[::1] out):
    """:func:`interval_pages` for string and binary columns: may page ``i`` hold a
    non-null value ``x`` with ``lo < x`` / ``lo <= x`` (``lo_kind`` 1 / 2; 0: none) and
    ``x < hi`` / ``x <= hi``, compared as bytes? A page's bounds are its first
    ``min_len`` / ``max_len`` slot bytes: a truncated min is <= every value and a
    truncated max >= every value, so the tests hold for bounds exact or not; a length
    beyond the slot makes the bounds unknown (the page may match). Written to ``out``."""
    if record_size < 40 + 2 * width or raw.shape[0] < count * record_size or out.shape[0] < count:
        raise ValueError("records too short for their stats slots, or out too short")
    cdef Py_ssize_t i, nlo = lo.shape[0], nhi = hi.shape[0], lmin, lmax
    cdef const uint8_t* r
    cdef const uint8_t* plo = &lo[0] if nlo else NULL
    cdef const uint8_t* phi = &hi[0] if nhi else NULL
    cdef int64_t ordered
    cdef bint keep
    if count <= 0:
        return
    with nogil:
        for i in range(count):
            r = &raw[0] + i * record_size
            ordered = <int64_t>rc_le32(r + 20) - <int64_t>rc_le32(r + 24) - <int64_t>rc_le32(r + 28)
            lmin, lmax = r[33], r[34]
            if ordered <= 0:
                out[i] = 0
                continue
            if not (r[32] & 1) or lmin > width or lmax > width:
                out[i] = 1  # no bounds known: the page may match
                continue
            keep = True
            if lo_kind:  # some value above lo: the max (an upper bound) above it
                keep = _cmp_bytes(r + 40 + width, lmax, plo, nlo) >= (1 if lo_kind == 1 else 0)
            if keep and hi_kind:  # some value below hi: the min (a lower bound) below it
                keep = _cmp_bytes(r + 40, lmin, phi, nhi) <= (-1 if hi_kind == 1 else 0)
            out[i] = keep


# ------------------------------------------------------------------ the pages a scan reads
cdef object _page_table(const uint8_t[::1] raw, Py_ssize_t count, Py_ssize_t record_size, const int64_t[::1] pages):
    import numpy as np
    cdef Py_ssize_t n = pages.shape[0], i, p
    if record_size < 24 or count < 0 or raw.shape[0] < count * record_size:
        raise ValueError("page-index records shorter than their count")
    out = np.empty((4, n), np.int64)
    cdef int64_t[:, ::1] t = out
    for i in range(n):
        if pages[i] < 0 or pages[i] >= count:
            raise ValueError("a page number outside the page index")
    with nogil:
        for i in range(n):
            p = pages[i] * record_size
            t[0, i] = <int64_t>_u64(raw, p + 8)
            t[1, i] = <int64_t>_u32(raw, p + 20)
            t[2, i] = <int64_t>_u32(raw, p + 16)
            t[3, i] = <int64_t>_u64(raw, p)
    return out


def page_table(const uint8_t[::1] raw, Py_ssize_t count, Py_ssize_t record_size, const int64_t[::1] pages):
    """The records ``pages`` (page numbers below ``count``) of ``count`` records of
    ``record_size`` bytes in ``raw`` as the block executor reads them: int64 (4, n) --
    each page's file offset, row count, length and first row."""
    return _page_table(raw, count, record_size, pages)


def page_tables(list raws, const int64_t[::1] counts, const int64_t[::1] sizes, list pages) -> list:
    """:func:`page_table` of several column chunks in one call: ``raws[i]``, ``counts[i]``,
    ``sizes[i]`` and ``pages[i]`` are chunk ``i``'s (a take reads a page or a few of every
    column of a block)."""
    cdef Py_ssize_t k, n = len(raws)
    if len(pages) != n or counts.shape[0] != n or sizes.shape[0] != n:
        raise ValueError("one entry per column")
    return [_page_table(raws[k], counts[k], sizes[k], pages[k]) for k in range(n)]


cdef struct Span:
    int64_t lo, hi, owner


cdef int _by_offset(const void* a, const void* b) noexcept nogil:
    cdef const Span* x = <const Span*>a
    cdef const Span* y = <const Span*>b
    if x.lo != y.lo:
        return -1 if x.lo < y.lo else 1
    if x.owner != y.owner:
        return -1 if x.owner < y.owner else 1
    return -1 if x.hi < y.hi else (1 if x.hi > y.hi else 0)


cdef Py_ssize_t _merge(Span* spans, Py_ssize_t n, int64_t gap, int64_t cross_gap, int64_t* s, int64_t* e) noexcept nogil:
    """``spans`` (``n`` >= 1) sorted by offset and merged into ``s``/``e``: neighbours of
    one column when at most ``gap`` bytes apart, of two columns when at most
    ``cross_gap``; the number of ranges."""
    cdef Py_ssize_t i, m = 0
    cdef int64_t lo, top, owner, allowed
    qsort(spans, n, sizeof(Span), _by_offset)
    lo, top, owner = spans[0].lo, spans[0].hi, spans[0].owner
    for i in range(1, n):
        allowed = gap if spans[i].owner == owner else cross_gap
        if spans[i].lo - top > allowed:
            s[m], e[m] = lo, top
            m += 1
            lo, top = spans[i].lo, spans[i].hi
        elif spans[i].hi > top:
            top = spans[i].hi
        owner = spans[i].owner
    s[m], e[m] = lo, top
    return m + 1


cdef Span* _spans(Py_ssize_t n) except NULL:
    """Room for ``n`` spans, freed by :func:`_merged` (which every caller ends with)."""
    cdef Span* spans = <Span*>malloc(max(n, 1) * sizeof(Span))
    if spans == NULL:
        raise MemoryError()
    return spans


cdef object _merged(Span* spans, Py_ssize_t n, int64_t gap, int64_t cross_gap):
    """``spans`` (from :func:`_spans`, ``n`` >= 1) merged by :func:`_merge` into int64
    ``(starts, ends)``; ``spans`` freed."""
    import numpy as np
    try:
        starts = np.empty(n, np.int64)
        ends = np.empty(n, np.int64)
    except BaseException:
        free(spans)
        raise
    cdef int64_t[::1] s = starts, e = ends
    cdef Py_ssize_t m
    with nogil:
        m = _merge(spans, n, gap, cross_gap, &s[0], &e[0])
        free(spans)
    return starts[:m], ends[:m]


def merge_ranges(const int64_t[::1] lo, const int64_t[::1] hi, const int64_t[::1] owner, int64_t gap,
                 int64_t cross_gap):
    """Byte ranges ``[lo, hi)`` of the columns ``owner`` numbers (a column's ranges
    within its chunk, the chunks apart), sorted and merged -- neighbours of one column
    when at most ``gap`` bytes apart, of two columns when at most ``cross_gap`` (no more
    than ``gap``) -- as int64 ``(starts, ends)``, or None for no range."""
    cdef Py_ssize_t n = lo.shape[0], i
    if hi.shape[0] != n or owner.shape[0] != n:
        raise ValueError("lo, hi and owner differ in length")
    if n == 0:
        return None
    cdef Span* spans = _spans(n)
    for i in range(n):
        spans[i].lo, spans[i].hi, spans[i].owner = lo[i], hi[i], owner[i]
    return _merged(spans, n, gap, cross_gap)


def page_ranges(list tables, const int64_t[:, ::1] chunks, int64_t gap, int64_t cross_gap):
    """The bytes a read of the pages of ``tables`` needs (per column a (4, n) page table,
    file offsets: :func:`page_table`), with each listing column's dictionary page
    (``chunks[i]``: column ``i``'s chunk offset and dictionary page length, 0 for none;
    the dictionary page lies at the chunk's offset), merged as :func:`merge_ranges`
    merges them: int64 ``(starts, ends)``, or None for no page."""
    cdef Py_ssize_t ncols = len(tables), k, i, n = 0, m = 0
    cdef const int64_t[:, ::1] t
    if chunks.shape[0] != ncols or chunks.shape[1] != 2:
        raise ValueError("one chunk record (offset, dictionary length) per column")
    for k in range(ncols):
        t = tables[k]
        if t.shape[0] != 4:
            raise ValueError("each column's pages are a (4, n) int64 array")
        if t.shape[1]:
            n += t.shape[1] + (1 if chunks[k, 1] > 0 else 0)
    if n == 0:
        return None
    cdef Span* spans = _spans(n)
    for k in range(ncols):
        t = tables[k]
        if not t.shape[1]:
            continue
        if chunks[k, 1] > 0:
            spans[m].lo, spans[m].hi, spans[m].owner = chunks[k, 0], chunks[k, 0] + chunks[k, 1], k
            m += 1
        for i in range(t.shape[1]):
            spans[m].lo, spans[m].hi, spans[m].owner = t[0, i], t[0, i] + t[2, i], k
            m += 1
    return _merged(spans, n, gap, cross_gap)


def shifted(list tables, int64_t base):
    """Copies of the page tables ``tables`` with their offsets made positions in a
    buffer holding file offset ``base`` at 0, and each one's bytes (int64: the sum of
    its pages' lengths)."""
    import numpy as np
    cdef Py_ssize_t ncols = len(tables), k, i, n
    cdef const int64_t[:, ::1] t
    cdef int64_t[:, ::1] o
    stored = np.zeros(ncols, np.int64)
    cdef int64_t[::1] b = stored
    out = []
    for k in range(ncols):
        t = tables[k]
        if t.shape[0] != 4:
            raise ValueError("each column's pages are a (4, n) int64 array")
        n = t.shape[1]
        copy = np.empty((4, n), np.int64)
        o = copy
        for i in range(n):
            o[0, i] = t[0, i] - base
            o[1, i] = t[1, i]
            o[2, i] = t[2, i]
            o[3, i] = t[3, i]
            b[k] += t[2, i]
        out.append(copy)
    return out, stored
