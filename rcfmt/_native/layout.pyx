# cython: language_level=3
"""Kernels of the clustering layouts (:mod:`rcfmt.layout`): order-preserving keys,
bucket search, per-dimension coordinates, Z-order and Hilbert indexes.

No validation and no policy here: the Python wrappers in ``rcfmt.layout`` check every
shape and allocate every output; the kernels only loop (without the GIL).

Vocabulary
----------
*normalized key*: a ``uint64`` per value whose unsigned order is the value order.
Values narrower than 64 bits are left-aligned (their most significant bit is bit 63),
so the high bits of the key are always the most significant bits of the value.

*coordinate*: a ``uint64`` per value and dimension using the low ``bits`` bits; 0 is
reserved for NULL.

*key*: ``words`` ``uint64`` per row, most significant word first; the bits of the
index are left-aligned in the words (bit 63 of word 0 is the index's top bit), so
comparing rows word by word compares the indexes.
"""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy

cimport cython

ctypedef fused signed_t:
    int8_t
    int16_t
    int32_t
    int64_t

ctypedef fused unsigned_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

ctypedef fused float_t:
    float
    double

ctypedef fused offset_t:
    int32_t
    int64_t

ctypedef fused boffset_t:
    int32_t
    int64_t

cdef uint64_t SIGN64 = 0x8000000000000000ULL
cdef uint64_t ALL64 = 0xFFFFFFFFFFFFFFFFULL
#: most dimensions a curve kernel accepts (one bit each in a 64-bit key)
MAX_DIMS = 64

cdef enum:
    C_MAX_DIMS = 64


# ----------------------------------------------------------------------------- normalize
def normalize_signed_into(const signed_t[::1] values, uint64_t[::1] out):
    """Two's complement integers: flip the sign bit, left-align to 64 bits."""
    cdef Py_ssize_t n = values.shape[0], i
    cdef int width = sizeof(signed_t) * 8
    cdef int shift = 64 - width
    cdef uint64_t mask = ALL64 >> shift
    cdef uint64_t sign = (<uint64_t>1) << (width - 1)
    with nogil:
        for i in range(n):
            out[i] = (((<uint64_t><int64_t>values[i]) & mask) ^ sign) << shift


def normalize_unsigned_into(const unsigned_t[::1] values, uint64_t[::1] out):
    """Unsigned integers: left-align to 64 bits."""
    cdef Py_ssize_t n = values.shape[0], i
    cdef int shift = 64 - sizeof(unsigned_t) * 8
    with nogil:
        for i in range(n):
            out[i] = (<uint64_t>values[i]) << shift


def normalize_bool_into(const uint8_t[::1] values, uint64_t[::1] out):
    """Booleans (one byte each, 0 = false): false -> 0, true -> 2**63."""
    cdef Py_ssize_t n = values.shape[0], i
    with nogil:
        for i in range(n):
            out[i] = SIGN64 if values[i] else 0


def normalize_float_into(const float_t[::1] values, uint64_t[::1] out):
    """IEEE floats (the float bit trick): positive values get the sign bit set, negative
    values are inverted. -0.0 maps like +0.0 and every NaN to the largest key (NaN sorts
    after +inf). float32 keys use the 32 high bits."""
    cdef Py_ssize_t n = values.shape[0], i
    cdef float_t v
    cdef uint32_t b32
    cdef uint64_t b64
    with nogil:
        for i in range(n):
            v = values[i]
            if v != v:
                out[i] = ALL64
                continue
            if v == 0:
                v = 0  # -0.0 -> +0.0
            if float_t is float:
                memcpy(&b32, &v, 4)
                if b32 & 0x80000000U:
                    b32 = ~b32
                else:
                    b32 = b32 | 0x80000000U
                out[i] = (<uint64_t>b32) << 32
            else:
                memcpy(&b64, &v, 8)
                if b64 & SIGN64:
                    b64 = ~b64
                else:
                    b64 = b64 | SIGN64
                out[i] = b64


def normalize_decimal128_into(const uint8_t[:, ::1] values, int width, uint64_t[::1] hi, uint64_t[::1] lo):
    """16-byte two's complement little-endian decimals.

    ``width`` 32 or 64: the values fit that many bits (precision <= 9 or <= 18); ``hi``
    gets the normalized key of the value as an int32 / int64, ``lo`` zeros.
    ``width`` 128: ``hi`` gets the high word with the sign flipped, ``lo`` the low word
    (compare (hi, lo) lexicographically)."""
    cdef Py_ssize_t n = values.shape[0], i
    cdef uint64_t w0, w1
    with nogil:
        for i in range(n):
            memcpy(&w0, &values[i, 0], 8)
            memcpy(&w1, &values[i, 8], 8)
            if width == 32:
                hi[i] = ((w0 & 0xFFFFFFFFULL) ^ 0x80000000ULL) << 32
                lo[i] = 0
            elif width == 64:
                hi[i] = w0 ^ SIGN64
                lo[i] = 0
            else:
                hi[i] = w1 ^ SIGN64
                lo[i] = w0


def normalize_varbinary_into(const offset_t[::1] offsets, const uint8_t[::1] data, uint64_t[::1] out):
    """Byte strings by their first 8 bytes, big-endian, zero-padded."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, i, j, start, length
    cdef uint64_t k
    with nogil:
        for i in range(n):
            start = offsets[i]
            length = offsets[i + 1] - start
            if length > 8:
                length = 8
            k = 0
            for j in range(length):
                k |= (<uint64_t>data[start + j]) << (56 - 8 * j)
            out[i] = k


# ----------------------------------------------------------------------------- bucket search
# Bucket ids: 0 for NULL, else 1 + (number of bounds strictly below the value), so a
# value equal to bounds[j] lands in bucket j + 1: bounds are inclusive upper bounds.

def search_u64_into(const uint64_t[::1] keys, const uint64_t[::1] bounds, const uint8_t[::1] valid,
                    uint64_t[::1] out):
    """Bucket ids of normalized keys among sorted, distinct normalized bounds."""
    cdef Py_ssize_t n = keys.shape[0], m = bounds.shape[0], i, a, b, mid
    cdef bint has_valid = valid is not None
    cdef uint64_t k
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                out[i] = 0
                continue
            k = keys[i]
            a = 0
            b = m
            while a < b:
                mid = (a + b) >> 1
                if bounds[mid] < k:
                    a = mid + 1
                else:
                    b = mid
            out[i] = <uint64_t>a + 1


def search_u128_into(const uint64_t[::1] hi, const uint64_t[::1] lo, const uint64_t[::1] bounds_hi,
                     const uint64_t[::1] bounds_lo, const uint8_t[::1] valid, uint64_t[::1] out):
    """Bucket ids of (hi, lo) keys among sorted, distinct (hi, lo) bounds."""
    cdef Py_ssize_t n = hi.shape[0], m = bounds_hi.shape[0], i, a, b, mid
    cdef bint has_valid = valid is not None
    cdef uint64_t kh, kl
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                out[i] = 0
                continue
            kh = hi[i]
            kl = lo[i]
            a = 0
            b = m
            while a < b:
                mid = (a + b) >> 1
                if bounds_hi[mid] < kh or (bounds_hi[mid] == kh and bounds_lo[mid] < kl):
                    a = mid + 1
                else:
                    b = mid
            out[i] = <uint64_t>a + 1


cdef inline int _cmp_bytes(const uint8_t* a, Py_ssize_t la, const uint8_t* b, Py_ssize_t lb) noexcept nogil:
    cdef Py_ssize_t common = la if la < lb else lb
    cdef int c = 0
    if common > 0:
        c = memcmp(a, b, common)
    if c != 0:
        return c
    return (la > lb) - (la < lb)


def search_varbinary_into(const offset_t[::1] offsets, const uint8_t[::1] data,
                          const boffset_t[::1] bounds_offsets, const uint8_t[::1] bounds_data,
                          const uint8_t[::1] valid, uint64_t[::1] out):
    """Bucket ids of byte strings among sorted, distinct byte-string bounds (bytewise)."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, m = bounds_offsets.shape[0] - 1, i, a, b, mid
    cdef bint has_valid = valid is not None
    cdef const uint8_t* vp
    cdef const uint8_t* bp
    cdef const uint8_t* dbase = &data[0] if data.shape[0] else NULL
    cdef const uint8_t* bbase = &bounds_data[0] if bounds_data.shape[0] else NULL
    cdef Py_ssize_t vl
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                out[i] = 0
                continue
            vp = dbase + offsets[i] if dbase != NULL else NULL
            vl = offsets[i + 1] - offsets[i]
            a = 0
            b = m
            while a < b:
                mid = (a + b) >> 1
                bp = bbase + bounds_offsets[mid] if bbase != NULL else NULL
                if _cmp_bytes(bp, bounds_offsets[mid + 1] - bounds_offsets[mid], vp, vl) < 0:
                    a = mid + 1
                else:
                    b = mid
            out[i] = <uint64_t>a + 1


# ----------------------------------------------------------------------------- coordinates
def direct_coords_into(const uint64_t[::1] keys, const uint8_t[::1] valid, int bits, uint64_t[::1] out):
    """Coordinates of ``bits`` bits from normalized keys: NULL -> 0, else the key's high
    ``bits`` bits plus one, saturating at ``2**bits - 1`` (the top two cells merge so that
    0 stays NULL's alone; order is preserved, not strictly)."""
    cdef Py_ssize_t n = keys.shape[0], i
    cdef bint has_valid = valid is not None
    cdef int shift = 64 - bits
    cdef uint64_t top = ALL64 >> shift
    cdef uint64_t c
    with nogil:
        for i in range(n):
            if has_valid and not valid[i]:
                out[i] = 0
                continue
            c = keys[i] >> shift
            out[i] = c + 1 if c < top else top


def stretch_into(const uint64_t[::1] ids, uint64_t max_id, int bits, uint64_t[::1] out):
    """Coordinates of ``bits`` bits from bucket ids in ``[0, max_id]``: 0 (NULL) stays 0,
    ids ``1..max_id`` are spread linearly over ``1..2**bits - 1`` (exact integer
    arithmetic, no overflow for ``max_id < 2**32``)."""
    cdef Py_ssize_t n = ids.shape[0], i
    cdef uint64_t top = (ALL64 >> (64 - bits)) - 1  # 2**bits - 2
    cdef uint64_t den = max_id - 1 if max_id > 1 else 1
    cdef uint64_t q = top // den, r = top % den, x, idv
    with nogil:
        for i in range(n):
            idv = ids[i]
            if idv == 0:
                out[i] = 0
                continue
            x = idv - 1
            if x > den:
                x = den
            out[i] = 1 + x * q + (x * r) // den


# ----------------------------------------------------------------------------- curves
cdef inline void _interleave(const uint64_t* x, int k, int bits, uint64_t* key) noexcept nogil:
    """Bit ``j`` (from the top) of every dimension in turn, dimension 0 first, MSB-first
    into ``key`` (words already zeroed)."""
    cdef int j, d, p = 0
    cdef uint64_t bit
    for j in range(bits - 1, -1, -1):
        for d in range(k):
            bit = (x[d] >> j) & 1
            key[p >> 6] |= bit << (63 - (p & 63))
            p += 1


cdef inline uint64_t _spread2(uint64_t x) noexcept nogil:
    x &= 0x00000000FFFFFFFFULL
    x = (x | (x << 16)) & 0x0000FFFF0000FFFFULL
    x = (x | (x << 8)) & 0x00FF00FF00FF00FFULL
    x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0FULL
    x = (x | (x << 2)) & 0x3333333333333333ULL
    x = (x | (x << 1)) & 0x5555555555555555ULL
    return x


cdef inline uint64_t _parity_above(uint64_t v) noexcept nogil:
    """Bit j of the result is the parity of the bits of ``v`` above j, bit 0 of ``v``
    ignored: the XOR of (q - 1) over the set bits q > 1 (the last step of Skilling's
    transform)."""
    v &= ~(<uint64_t>1)
    v ^= v >> 1
    v ^= v >> 2
    v ^= v >> 4
    v ^= v >> 8
    v ^= v >> 16
    v ^= v >> 32
    return v >> 1


cdef inline void _skilling_transpose(uint64_t* x, int k, int bits) noexcept nogil:
    """Skilling's AxesToTranspose (AIP Conf. Proc. 707, 2004): turns coordinates into the
    transposed Hilbert index, in place. Written without data-dependent branches."""
    cdef uint64_t p, s, t
    cdef int i, j
    for j in range(bits - 1, 0, -1):  # inverse undo, q = 2**j
        p = ((<uint64_t>1) << j) - 1
        for i in range(k):
            s = 0 - ((x[i] >> j) & 1)  # all ones when bit j of x[i] is set
            t = (x[0] ^ x[i]) & p & ~s  # exchange the low bits of x[0] and x[i] ...
            x[0] ^= (p & s) | t  # ... or invert those of x[0]
            x[i] ^= t
    for i in range(1, k):  # Gray encode
        x[i] ^= x[i - 1]
    # t = XOR of (q - 1) over the set bits q > 1 of x[k-1]: bit j of t is the parity of
    # the bits of x[k-1] above j
    t = _parity_above(x[k - 1])
    for i in range(k):
        x[i] ^= t


cdef inline void _skilling_transpose2(uint64_t* x, int bits) noexcept nogil:
    """:func:`_skilling_transpose` for two dimensions, with both in registers."""
    cdef uint64_t x0 = x[0], x1 = x[1], p, s, t
    cdef int j
    for j in range(bits - 1, 0, -1):
        p = ((<uint64_t>1) << j) - 1
        x0 ^= p & (0 - ((x0 >> j) & 1))
        s = 0 - ((x1 >> j) & 1)
        t = (x0 ^ x1) & p & ~s
        x0 ^= (p & s) | t
        x1 ^= t
    x1 ^= x0
    t = _parity_above(x1)
    x[0] = x0 ^ t
    x[1] = x1 ^ t


cdef inline void _pack(uint64_t* x, int k, int bits, uint64_t* key, Py_ssize_t words) noexcept nogil:
    """Interleave ``x`` into one key row, with fast paths for one and two dimensions."""
    cdef Py_ssize_t w
    if words == 1 and k == 1:
        key[0] = x[0] << (64 - bits)
    elif words == 1 and k == 2 and bits <= 32:
        key[0] = ((_spread2(x[0]) << 1) | _spread2(x[1])) << (64 - 2 * bits)
    else:
        for w in range(words):
            key[w] = 0
        _interleave(x, k, bits, key)


def zorder_into(const uint64_t[:, ::1] coords, int bits, uint64_t[:, ::1] out):
    """Z-order (Morton) keys: interleave the low ``bits`` bits of the ``k`` rows of
    ``coords`` (shape ``(k, n)``) into ``out`` (shape ``(n, words)``)."""
    cdef Py_ssize_t k = coords.shape[0], n = coords.shape[1], words = out.shape[1], i
    cdef uint64_t x[C_MAX_DIMS]
    cdef int d
    with nogil:
        for i in range(n):
            for d in range(k):
                x[d] = coords[d, i]
            _pack(x, <int>k, bits, &out[i, 0], words)


def hilbert_into(const uint64_t[:, ::1] coords, int bits, uint64_t[:, ::1] out):
    """Hilbert keys of the low ``bits`` bits of ``coords`` (shape ``(k, n)``) into ``out``
    (shape ``(n, words)``). With one dimension the Hilbert index is the coordinate."""
    cdef Py_ssize_t k = coords.shape[0], n = coords.shape[1], words = out.shape[1], i
    cdef uint64_t x[C_MAX_DIMS]
    cdef int d
    with nogil:
        for i in range(n):
            for d in range(k):
                x[d] = coords[d, i]
            if k == 2:
                _skilling_transpose2(x, bits)
            elif k > 2:
                _skilling_transpose(x, <int>k, bits)
            _pack(x, <int>k, bits, &out[i, 0], words)
