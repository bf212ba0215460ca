"""CRC-32 with zlib's polynomial, for the format's checksums (page headers and bodies,
footers, page indexes): by carry-less multiplication on x86-64 CPUs with PCLMULQDQ
(detected at run time; ~16 GB/s per core on a Zen 4), with 512-bit registers where the
CPU has VPCLMULQDQ and AVX-512, else with slicing-by-8 tables (~1.7 GB/s per core). :func:`crc32` equals ``zlib.crc32``; native modules call :func:`crc32_raw`
(``checksum.pxd``) without the GIL."""
from libc.stdint cimport uint8_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy

__all__ = ["crc32", "crc32_implementation", "use_clmul"]


# ------------------------------------------------------------------ slicing-by-8 tables
cdef uint32_t _CRC[8][256]


cdef void _crc_init() noexcept nogil:
    cdef uint32_t c
    cdef int i, k
    for i in range(256):
        c = <uint32_t>i
        for k in range(8):
            c = (c >> 1) ^ (0xEDB88320u if c & 1 else 0u)
        _CRC[0][i] = c
    for i in range(256):
        c = _CRC[0][i]
        for k in range(1, 8):
            c = _CRC[0][c & 0xFF] ^ (c >> 8)
            _CRC[k][i] = c


_crc_init()  # at import, before any thread can call in


cdef extern from *:
    """
    /* CRC-32 by carry-less multiplication (PCLMULQDQ), for x86-64 CPUs that have it:
       four 128-bit lanes folded 64 bytes at a time, then one lane, then a Barrett
       reduction to 32 bits (Gopal et al., "Fast CRC Computation for Generic
       Polynomials Using PCLMULQDQ Instruction", Intel, 2009; constants for the
       reflected polynomial 0xEDB88320). Built with a target attribute and chosen at
       run time by CPUID, so the extension runs on any x86-64. */
    #include <stdint.h>
    #include <stddef.h>
    #if defined(__x86_64__) && defined(__GNUC__)
    #include <cpuid.h>
    #include <immintrin.h>
    #define RC_HAVE_CLMUL_BUILD 1
    /* one 128-bit lane folded 128 bits forward onto ``data`` */
    __attribute__((target("pclmul,sse4.1")))
    static inline __m128i rc_fold128(__m128i x, __m128i data) {
        const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009eLL, 0x01751997d0LL);
        return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k3k4, 0x11), data),
                             _mm_clmulepi64_si128(x, k3k4, 0x00));
    }
    /* 128 -> 64 bits, then a Barrett reduction to the 32-bit state */
    __attribute__((target("pclmul,sse4.1")))
    static inline uint32_t rc_reduce128(__m128i x1) {
        const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009eLL, 0x01751997d0LL);
        const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124LL);
        const __m128i poly = _mm_set_epi64x(0x01f7011641LL, 0x01db710641LL);
        const __m128i mask32 = _mm_setr_epi32(-1, 0, -1, 0);
        __m128i x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
        x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
        x2 = _mm_srli_si128(x1, 4);
        x1 = _mm_and_si128(x1, mask32);
        x1 = _mm_clmulepi64_si128(x1, k5, 0x00);
        x1 = _mm_xor_si128(x1, x2);
        x2 = _mm_and_si128(x1, mask32);
        x2 = _mm_clmulepi64_si128(x2, poly, 0x10);
        x2 = _mm_and_si128(x2, mask32);
        x2 = _mm_clmulepi64_si128(x2, poly, 0x00);
        x1 = _mm_xor_si128(x1, x2);
        return (uint32_t)_mm_extract_epi32(x1, 1);
    }
    __attribute__((target("pclmul,sse4.1")))
    static uint32_t rc_crc32_clmul(const uint8_t* buf, size_t len, uint32_t crc) {
        /* len >= 64 and a multiple of 16; crc is the running (inverted) state */
        const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596LL, 0x0154442bd4LL);
        __m128i x1 = _mm_loadu_si128((const __m128i*)(buf + 0x00));
        __m128i x2 = _mm_loadu_si128((const __m128i*)(buf + 0x10));
        __m128i x3 = _mm_loadu_si128((const __m128i*)(buf + 0x20));
        __m128i x4 = _mm_loadu_si128((const __m128i*)(buf + 0x30));
        __m128i x5, x6, x7, x8;
        x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
        buf += 64;
        len -= 64;
        while (len >= 64) {
            x5 = _mm_clmulepi64_si128(x1, k1k2, 0x00);
            x6 = _mm_clmulepi64_si128(x2, k1k2, 0x00);
            x7 = _mm_clmulepi64_si128(x3, k1k2, 0x00);
            x8 = _mm_clmulepi64_si128(x4, k1k2, 0x00);
            x1 = _mm_clmulepi64_si128(x1, k1k2, 0x11);
            x2 = _mm_clmulepi64_si128(x2, k1k2, 0x11);
            x3 = _mm_clmulepi64_si128(x3, k1k2, 0x11);
            x4 = _mm_clmulepi64_si128(x4, k1k2, 0x11);
            x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), _mm_loadu_si128((const __m128i*)(buf + 0x00)));
            x2 = _mm_xor_si128(_mm_xor_si128(x2, x6), _mm_loadu_si128((const __m128i*)(buf + 0x10)));
            x3 = _mm_xor_si128(_mm_xor_si128(x3, x7), _mm_loadu_si128((const __m128i*)(buf + 0x20)));
            x4 = _mm_xor_si128(_mm_xor_si128(x4, x8), _mm_loadu_si128((const __m128i*)(buf + 0x30)));
            buf += 64;
            len -= 64;
        }
        /* fold the four lanes into one */
        x1 = rc_fold128(rc_fold128(rc_fold128(x1, x2), x3), x4);
        while (len >= 16) {
            x1 = rc_fold128(x1, _mm_loadu_si128((const __m128i*)buf));
            buf += 16;
            len -= 16;
        }
        return rc_reduce128(x1);
    }
    static int rc_cpu_has_clmul(void) {
        unsigned a, b, c, d;
        if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
        return (c & bit_PCLMUL) && (c & bit_SSE4_1);
    }
    /* The same folding with 512-bit registers (VPCLMULQDQ, AVX-512): four registers of
       four 128-bit lanes, 256 bytes a step, folded by 2048 bits; the registers then
       into one (by 512 bits), its lanes into one (by 128 bits, as above), and the same
       reduction. A fold by D bits multiplies a lane's low half by x^(D+32) mod P and its
       high half by x^(D-32) mod P (bit-reflected, shifted left by one: the 512- and
       128-bit constants above are D = 512 and D = 128). */
    __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.1")))
    static uint32_t rc_crc32_vclmul(const uint8_t* buf, size_t len, uint32_t crc) {
        /* len >= 256 and a multiple of 256; crc is the running (inverted) state */
        const __m512i k2048 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x01322d1430LL, 0x011542778aLL));
        const __m512i k512 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x01c6e41596LL, 0x0154442bd4LL));
        __m512i a = _mm512_loadu_si512((const void*)(buf + 0x00));
        __m512i b = _mm512_loadu_si512((const void*)(buf + 0x40));
        __m512i c = _mm512_loadu_si512((const void*)(buf + 0x80));
        __m512i d = _mm512_loadu_si512((const void*)(buf + 0xC0));
        __m128i x1;
        a = _mm512_xor_si512(a, _mm512_inserti32x4(_mm512_setzero_si512(), _mm_cvtsi32_si128((int)crc), 0));
        buf += 256;
        len -= 256;
    #define RC_FOLD512(v, k, data) _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(v, k, 0x00), \
                                                          _mm512_clmulepi64_epi128(v, k, 0x11), data, 0x96)
        while (len >= 256) {
            a = RC_FOLD512(a, k2048, _mm512_loadu_si512((const void*)(buf + 0x00)));
            b = RC_FOLD512(b, k2048, _mm512_loadu_si512((const void*)(buf + 0x40)));
            c = RC_FOLD512(c, k2048, _mm512_loadu_si512((const void*)(buf + 0x80)));
            d = RC_FOLD512(d, k2048, _mm512_loadu_si512((const void*)(buf + 0xC0)));
            buf += 256;
            len -= 256;
        }
        /* the four registers into one, then its four lanes into one, and the reduction */
        b = RC_FOLD512(a, k512, b);
        c = RC_FOLD512(b, k512, c);
        d = RC_FOLD512(c, k512, d);
    #undef RC_FOLD512
        x1 = rc_fold128(rc_fold128(rc_fold128(_mm512_extracti32x4_epi32(d, 0), _mm512_extracti32x4_epi32(d, 1)),
                                   _mm512_extracti32x4_epi32(d, 2)), _mm512_extracti32x4_epi32(d, 3));
        return rc_reduce128(x1);
    }
    static int rc_cpu_has_vclmul(void) {
        unsigned a, b, c, d, lo, hi;
        if (!rc_cpu_has_clmul() || !__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return 0;
        if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
        if (!(b & bit_AVX512F) || !(b & bit_AVX512VL) || !(c & bit_VPCLMULQDQ)) return 0;
        __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));  /* the OS saves the ZMM state */
        return (lo & 0xE6) == 0xE6;
    }
    #else
    #define RC_HAVE_CLMUL_BUILD 0
    static uint32_t rc_crc32_clmul(const uint8_t* buf, size_t len, uint32_t crc) { (void)buf; (void)len; return crc; }
    static uint32_t rc_crc32_vclmul(const uint8_t* buf, size_t len, uint32_t crc) { (void)buf; (void)len; return crc; }
    static int rc_cpu_has_clmul(void) { return 0; }
    static int rc_cpu_has_vclmul(void) { return 0; }
    #endif
    """
    uint32_t rc_crc32_clmul(const uint8_t* buf, size_t len, uint32_t crc) nogil
    uint32_t rc_crc32_vclmul(const uint8_t* buf, size_t len, uint32_t crc) nogil
    int rc_cpu_has_clmul() nogil
    int rc_cpu_has_vclmul() nogil


cdef bint _clmul = rc_cpu_has_clmul() != 0
cdef bint _vclmul = _clmul and rc_cpu_has_vclmul() != 0
#: buffers at least this long go through the 512-bit folding first
cdef size_t _WIDE_MIN = 512


def crc32_implementation():
    """"vpclmul" (512-bit carry-less multiply, AVX-512), "clmul" (128-bit), both chosen
    at run time, or "table" (slicing-by-8)."""
    return "vpclmul" if _vclmul else "clmul" if _clmul else "table"


def use_clmul(bint enabled, bint wide=True):
    """Use the carry-less-multiply CRC where the CPU has it (default; ``wide``: its
    512-bit form where the CPU has that), or force the tables (tests compare them)."""
    global _clmul, _vclmul
    _clmul = enabled and rc_cpu_has_clmul() != 0
    _vclmul = _clmul and wide and rc_cpu_has_vclmul() != 0


cdef uint32_t crc32_raw(const uint8_t* p, size_t n, uint32_t crc) noexcept nogil:
    """zlib's crc32(p[:n], crc)."""
    cdef uint64_t w
    cdef size_t bulk
    if _vclmul and n >= _WIDE_MIN:
        bulk = n & ~(<size_t>255)
        crc = ~rc_crc32_vclmul(p, bulk, ~crc)
        p += bulk
        n -= bulk
    if _clmul and n >= 64:
        bulk = n & ~(<size_t>15)
        crc = ~rc_crc32_clmul(p, bulk, ~crc)
        p += bulk
        n -= bulk
    crc = ~crc
    while n and (<uintptr_t>p) & 7:
        crc = _CRC[0][(crc ^ p[0]) & 0xFF] ^ (crc >> 8)
        p += 1
        n -= 1
    while n >= 8:
        memcpy(&w, p, 8)
        w ^= crc
        crc = (_CRC[7][w & 0xFF] ^ _CRC[6][(w >> 8) & 0xFF] ^ _CRC[5][(w >> 16) & 0xFF]
               ^ _CRC[4][(w >> 24) & 0xFF] ^ _CRC[3][(w >> 32) & 0xFF] ^ _CRC[2][(w >> 40) & 0xFF]
               ^ _CRC[1][(w >> 48) & 0xFF] ^ _CRC[0][w >> 56])
        p += 8
        n -= 8
    while n:
        crc = _CRC[0][(crc ^ p[0]) & 0xFF] ^ (crc >> 8)
        p += 1
        n -= 1
    return ~crc


def crc32(const uint8_t[::1] data, uint32_t value=0):
    """CRC-32 of ``data`` exactly as ``zlib.crc32(data, value)`` (GIL released)."""
    cdef size_t n = data.shape[0]
    cdef const uint8_t* p = &data[0] if n else NULL
    with nogil:
        value = crc32_raw(p, n, value)
    return value
