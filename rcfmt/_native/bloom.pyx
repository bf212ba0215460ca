# cython: language_level=3
"""Kernels of the split-block bloom filter: XXH64 (seed 0) and the SBBF insert/probe.

No validation of arguments beyond what is needed to stay inside the buffers: kernels
return a count or a negative status and the wrappers in :mod:`rcfmt.scan.bloom` turn
a status into an exception. The byte layout is documented there.

XXH64 follows the public specification (github.com/Cyan4973/xxHash, doc/xxhash_spec.md):
stripes of 32 bytes into four accumulators when the input has at least 32 bytes, then
8-, 4- and 1-byte tails, then the avalanche. All arithmetic is modulo 2**64 and all
multi-byte reads are little-endian whatever the host.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

ctypedef fused offset_t:
    int32_t
    int64_t

# Compile-time constants (as C macros / a static const array, so that the compiler
# can fold them; module-level cdef globals would be reloaded after every store).
cdef extern from *:
    """
    #define RCFMT_XXH_P1 0x9E3779B185EBCA87ULL
    #define RCFMT_XXH_P2 0xC2B2AE3D27D4EB4FULL
    #define RCFMT_XXH_P3 0x165667B19E3779F9ULL
    #define RCFMT_XXH_P4 0x85EBCA77C2B2AE63ULL
    #define RCFMT_XXH_P5 0x27D4EB2F165667C5ULL
    /* Parquet's SBBF salt constants */
    static const uint32_t RCFMT_SBBF_SALT[8] = {
        0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
        0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};
    """
    const uint64_t P1 "RCFMT_XXH_P1"
    const uint64_t P2 "RCFMT_XXH_P2"
    const uint64_t P3 "RCFMT_XXH_P3"
    const uint64_t P4 "RCFMT_XXH_P4"
    const uint64_t P5 "RCFMT_XXH_P5"
    const uint32_t SALT "RCFMT_SBBF_SALT"[8]

# kinds of fixed-width values (see hash_fixed_into)
cdef enum:
    KIND_RAW = 0
    KIND_FLOAT = 1
    KIND_BOOL = 2


# ---------------------------------------------------------------- XXH64
cdef inline uint64_t _rotl(uint64_t x, int r) noexcept nogil:
    return (x << r) | (x >> (64 - r))


cdef inline uint64_t _read64(const uint8_t* p) noexcept nogil:
    return (<uint64_t>p[0] | (<uint64_t>p[1] << 8) | (<uint64_t>p[2] << 16)
            | (<uint64_t>p[3] << 24) | (<uint64_t>p[4] << 32) | (<uint64_t>p[5] << 40)
            | (<uint64_t>p[6] << 48) | (<uint64_t>p[7] << 56))


cdef inline uint32_t _read32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16)
            | (<uint32_t>p[3] << 24))


cdef inline uint32_t _canonical_f32(uint32_t bits) noexcept nogil:
    """The bits a float32 is hashed by: -0.0 as +0.0, every NaN as the quiet NaN."""
    if bits == 0x80000000U:
        return 0
    if (bits & 0x7FFFFFFFU) > 0x7F800000U:
        return 0x7FC00000U
    return bits


cdef inline uint64_t _canonical_f64(uint64_t bits) noexcept nogil:
    """The bits a float64 is hashed by: -0.0 as +0.0, every NaN as the quiet NaN."""
    if bits == 0x8000000000000000ULL:
        return 0
    if (bits & 0x7FFFFFFFFFFFFFFFULL) > 0x7FF0000000000000ULL:
        return 0x7FF8000000000000ULL
    return bits


cdef inline uint64_t _round(uint64_t acc, uint64_t lane) noexcept nogil:
    acc = acc + lane * P2
    acc = _rotl(acc, 31)
    return acc * P1


cdef inline uint64_t _merge(uint64_t h, uint64_t acc) noexcept nogil:
    h = h ^ _round(0, acc)
    return h * P1 + P4


cdef inline uint64_t _avalanche(uint64_t h) noexcept nogil:
    h = h ^ (h >> 33)
    h = h * P2
    h = h ^ (h >> 29)
    h = h * P3
    return h ^ (h >> 32)


cdef inline uint64_t _tail8(uint64_t h, uint64_t lane) noexcept nogil:
    h = h ^ _round(0, lane)
    return _rotl(h, 27) * P1 + P4


cdef inline uint64_t _tail4(uint64_t h, uint32_t lane) noexcept nogil:
    h = h ^ (<uint64_t>lane * P1)
    return _rotl(h, 23) * P2 + P3


cdef inline uint64_t _tail1(uint64_t h, uint8_t b) noexcept nogil:
    h = h ^ (<uint64_t>b * P5)
    return _rotl(h, 11) * P1


cdef inline uint64_t _xxh64(const uint8_t* p, size_t length) noexcept nogil:
    """XXH64 of ``length`` bytes at ``p`` with seed 0."""
    cdef const uint8_t* end = p + length
    cdef const uint8_t* limit
    cdef uint64_t v1, v2, v3, v4, h
    if length >= 32:
        limit = end - 32
        v1 = P1 + P2  # seed + P1 + P2
        v2 = P2  # seed + P2
        v3 = 0  # seed
        v4 = 0 - P1  # seed - P1
        while p <= limit:
            v1 = _round(v1, _read64(p))
            v2 = _round(v2, _read64(p + 8))
            v3 = _round(v3, _read64(p + 16))
            v4 = _round(v4, _read64(p + 24))
            p += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = P5  # seed + P5
    h = h + <uint64_t>length
    while p + 8 <= end:
        h = _tail8(h, _read64(p))
        p += 8
    if p + 4 <= end:
        h = _tail4(h, _read32(p))
        p += 4
    while p < end:
        h = _tail1(h, p[0])
        p += 1
    return _avalanche(h)


# Specialisations for the fixed widths (same results as _xxh64 on the LE bytes).
cdef inline uint64_t _xxh64_u8(uint8_t v) noexcept nogil:
    return _avalanche(_tail1(P5 + 1, v))


cdef inline uint64_t _xxh64_u16(uint32_t v) noexcept nogil:
    return _avalanche(_tail1(_tail1(P5 + 2, <uint8_t>(v & 0xFF)), <uint8_t>(v >> 8)))


cdef inline uint64_t _xxh64_u32(uint32_t v) noexcept nogil:
    return _avalanche(_tail4(P5 + 4, v))


cdef inline uint64_t _xxh64_u64(uint64_t v) noexcept nogil:
    return _avalanche(_tail8(P5 + 8, v))


cdef inline uint64_t _xxh64_u128(uint64_t lo, uint64_t hi) noexcept nogil:
    return _avalanche(_tail8(_tail8(P5 + 16, lo), hi))


def xxh64(const uint8_t[::1] data):
    """XXH64 (seed 0) of a bytes-like object, as a Python int."""
    cdef Py_ssize_t n = data.shape[0]
    cdef uint64_t h
    if n == 0:
        return _xxh64(NULL, 0)
    with nogil:
        h = _xxh64(&data[0], <size_t>n)
    return h


def hash_fixed_into(const uint8_t[::1] data, int width, int kind, uint64_t[::1] out):
    """Hash ``out.shape[0]`` values of ``width`` bytes each, stored back to back in ``data``.

    ``kind``: 0 hashes the bytes as they are; 1 treats 4- or 8-byte values as IEEE
    floats: -0.0 becomes +0.0 and every NaN the canonical quiet NaN; 2 treats 1-byte
    values as bools: any non-zero byte becomes 1.

    Returns the number of values hashed, -1 if ``data`` does not hold exactly
    ``out.shape[0] * width`` bytes, -2 for a width/kind combination not supported.
    """
    cdef Py_ssize_t n = out.shape[0], i
    cdef const uint8_t* p
    if width not in (1, 2, 4, 8, 16) or kind not in (KIND_RAW, KIND_FLOAT, KIND_BOOL):
        return -2
    if (kind == KIND_FLOAT and width not in (4, 8)) or (kind == KIND_BOOL and width != 1):
        return -2
    if data.shape[0] != n * width:
        return -1
    if n == 0:
        return 0
    p = &data[0]
    with nogil:
        if width == 1:
            if kind == KIND_BOOL:
                for i in range(n):
                    out[i] = _xxh64_u8(1 if p[i] != 0 else 0)
            else:
                for i in range(n):
                    out[i] = _xxh64_u8(p[i])
        elif width == 2:
            for i in range(n):
                out[i] = _xxh64_u16(<uint32_t>p[2 * i] | (<uint32_t>p[2 * i + 1] << 8))
        elif width == 4:
            if kind == KIND_FLOAT:
                for i in range(n):
                    out[i] = _xxh64_u32(_canonical_f32(_read32(p + 4 * i)))
            else:
                for i in range(n):
                    out[i] = _xxh64_u32(_read32(p + 4 * i))
        elif width == 8:
            if kind == KIND_FLOAT:
                for i in range(n):
                    out[i] = _xxh64_u64(_canonical_f64(_read64(p + 8 * i)))
            else:
                for i in range(n):
                    out[i] = _xxh64_u64(_read64(p + 8 * i))
        else:
            for i in range(n):
                out[i] = _xxh64_u128(_read64(p + 16 * i), _read64(p + 16 * i + 8))
    return n


def hash_binary_into(const offset_t[::1] offsets, const uint8_t[::1] data, uint64_t[::1] out):
    """Hash the ``out.shape[0]`` values ``data[offsets[i]:offsets[i+1]]``.

    Returns the number of values hashed, -1 if ``offsets`` does not hold
    ``out.shape[0] + 1`` entries, ``-(i + 2)`` if entry ``i`` of ``offsets`` is negative,
    smaller than the one before or past the end of ``data``. Nothing is hashed
    before all offsets are checked.
    """
    cdef Py_ssize_t n = out.shape[0], i
    cdef Py_ssize_t bad = 0
    cdef int64_t size = data.shape[0], prev = 0, cur
    cdef const uint8_t* p
    if offsets.shape[0] != n + 1:
        return -1
    with nogil:
        for i in range(n + 1):
            cur = <int64_t>offsets[i]
            if cur < prev or cur > size:
                bad = i + 2
                break
            prev = cur
    if bad:
        return -bad
    if n == 0:
        return 0
    p = &data[0] if size > 0 else NULL
    with nogil:
        for i in range(n):
            out[i] = _xxh64(p + offsets[i], <size_t>(offsets[i + 1] - offsets[i]))
    return n


# ---------------------------------------------------------------- SBBF
def insert(uint32_t[::1] words, const uint64_t[::1] hashes):
    """Set the bits of ``hashes`` in the filter ``words`` (8 words per block).

    Returns the number of hashes inserted, or -1 if ``words`` is not a positive
    multiple of 8 words or has 2**32 blocks or more.
    """
    cdef Py_ssize_t n = hashes.shape[0], i
    cdef uint64_t num_blocks = <uint64_t>(words.shape[0] // 8), h, base
    cdef uint32_t key
    cdef int j
    cdef uint32_t* w
    if words.shape[0] == 0 or words.shape[0] % 8 != 0 or num_blocks > 0xFFFFFFFFULL:
        return -1
    w = &words[0]
    with nogil:
        for i in range(n):
            h = hashes[i]
            base = (((h >> 32) * num_blocks) >> 32) * 8
            key = <uint32_t>h
            for j in range(8):
                w[base + j] |= (<uint32_t>1) << (<uint32_t>(key * SALT[j]) >> 27)
    return n


def probe_into(const uint32_t[::1] words, const uint64_t[::1] hashes, uint8_t[::1] out):
    """``out[i] = 1`` if all eight bits of ``hashes[i]`` are set, else 0.

    Returns the number of hashes probed, -1 for a bad ``words`` length (as
    :func:`insert`), -2 if ``out`` is shorter than ``hashes``.
    """
    cdef Py_ssize_t n = hashes.shape[0], i
    cdef uint64_t num_blocks = <uint64_t>(words.shape[0] // 8), h, base
    cdef uint32_t key, miss
    cdef int j
    cdef const uint32_t* w
    if words.shape[0] == 0 or words.shape[0] % 8 != 0 or num_blocks > 0xFFFFFFFFULL:
        return -1
    if out.shape[0] < n:
        return -2
    w = &words[0]
    with nogil:
        for i in range(n):
            h = hashes[i]
            base = (((h >> 32) * num_blocks) >> 32) * 8
            key = <uint32_t>h
            miss = 0
            for j in range(8):
                miss |= ((<uint32_t>1) << (<uint32_t>(key * SALT[j]) >> 27)) & ~w[base + j]
            out[i] = 1 if miss == 0 else 0
    return n


# ---------------------------------------------------------------- distinct-count sketch
cdef extern from *:
    """
    static inline int rcfmt_clz64(uint64_t x) { return x ? __builtin_clzll(x) : 64; }
    """
    int clz64 "rcfmt_clz64"(uint64_t x) nogil


def hll_registers(const uint64_t[::1] hashes, uint8_t[::1] registers):
    """Fold ``hashes`` into the HyperLogLog ``registers`` (2**p bytes, 4 <= p <= 16):
    register ``h >> (64 - p)`` keeps the largest rank (leading zeros + 1) of ``h << p``.

    Returns the number of hashes folded, or -1 if the register count is not a power of
    two in [16, 65536].
    """
    cdef Py_ssize_t n = hashes.shape[0], i, m = registers.shape[0]
    cdef int p = 0, rank
    cdef uint64_t h
    cdef uint8_t* reg
    if m < 16 or m > 65536:
        return -1
    while (1 << p) < m:
        p += 1
    if (1 << p) != m:
        return -1
    reg = &registers[0]
    with nogil:
        for i in range(n):
            h = hashes[i]
            rank = clz64((h << p) | ((<uint64_t>1) << (p - 1))) + 1
            if rank > reg[h >> (64 - p)]:
                reg[h >> (64 - p)] = <uint8_t>rank
    return n
