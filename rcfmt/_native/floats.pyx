"""ALP kernels: decimal-like floats as integers (see :mod:`rcfmt.encodings.alp`).

A double ``v`` is *encoded* with exponent ``e`` and factor ``f`` (``0 <= f <= e``) as the
integer ``n = round(v * 10**e * 10**-f)``; it is *decoded* as
``(double)n * F10[f] * IF10[e]``, evaluated left to right in IEEE double precision,
where ``F10[k] = 10**k`` (exact) and ``IF10[k]`` is the double nearest to ``10**-k``. A
value is an *exception* unless that decode gives back exactly its bits (so NaN, the
infinities, -0.0 and values with too many digits are exceptions). Float32 values use
the same arithmetic in double precision and round the decoded double to float32.

Structure (see ../shared/STYLE.md): the ``cdef ... nogil`` kernels validate nothing;
the ``def`` wrappers check types and lengths, and turn a negative kernel status into
:class:`~rcfmt.errors.CorruptFileError`. Every kernel releases the GIL.
"""
cimport cython
from libc.math cimport fabs
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from rcfmt._native.bitpack cimport pack64_raw, packed_nbytes, split_raw

import numpy as np
cimport numpy as cnp

from rcfmt.errors import CorruptFileError

cnp.import_array()

__all__ = ["F10", "IF10", "MAX_E64", "MAX_E32", "alp_search", "alp_encode_pages", "alp_decode_inplace",
           "alp_decode_f32", "patch_exceptions", "widen_i64_to_i128"]

# 10**k for k = 0..22 are exact doubles; 10**-k are the correctly rounded doubles of
# the decimal literals (the same as Python's float(f"1e-{k}")).
cdef double F10_[23]
cdef double IF10_[23]
F10 = [float(10 ** k) for k in range(23)]
IF10 = [float(f"1e-{k}") for k in range(23)]
for _k in range(23):
    F10_[_k] = F10[_k]
    IF10_[_k] = IF10[_k]

#: largest exponent for float64 / float32 columns
MAX_E64 = 18
MAX_E32 = 10
# |x| must stay below 2**51 for the magic-number rounding below to be exact
cdef double _LIMIT = 2251799813685248.0  # 2**51
cdef double _MAGIC = 6755399441055744.0  # 2**52 + 2**51


cdef inline int64_t _round(double x) noexcept nogil:
    """Round ``x`` (|x| < 2**51) to the nearest integer, ties to even."""
    return <int64_t>((x + _MAGIC) - _MAGIC)


cdef inline bint _encode64(double v, int e, int f, int64_t* n) noexcept nogil:
    """True and ``n`` set if ``v`` round-trips with (e, f)."""
    cdef double x = v * F10_[e] * IF10_[f]
    cdef double back
    if not fabs(x) < _LIMIT:  # also false for NaN
        return False
    n[0] = _round(x)
    back = <double>n[0] * F10_[f] * IF10_[e]
    return (<uint64_t*>&back)[0] == (<uint64_t*>&v)[0]


cdef inline bint _encode32(float v, int e, int f, int64_t* n) noexcept nogil:
    cdef double x = <double>v * F10_[e] * IF10_[f]
    cdef float back
    if not fabs(x) < _LIMIT:
        return False
    n[0] = _round(x)
    back = <float>(<double>n[0] * F10_[f] * IF10_[e])
    return (<uint32_t*>&back)[0] == (<uint32_t*>&v)[0]


ctypedef fused real_t:
    float
    double


cdef inline bint _encode(real_t v, int e, int f, int64_t* n) noexcept nogil:
    if real_t is double:
        return _encode64(v, e, f, n)
    else:
        return _encode32(v, e, f, n)


cdef inline int _bits_of(uint64_t span) noexcept nogil:
    cdef int b = 0
    while span:
        b += 1
        span >>= 1
    return b


@cython.boundscheck(False)
@cython.wraparound(False)
def alp_search(const real_t[::1] sample, int max_e=-1):
    """Best ``(e, f, exceptions, width)`` for ``sample``: the pair minimizing
    ``len * width + exceptions * (value bits + 32)`` (ties: smaller e, then smaller f).
    ``width`` is the bit width of the FOR range of the non-exception integers."""
    cdef Py_ssize_t n = sample.shape[0], i
    cdef int e, f, be = 0, bf = 0, bw = 0, w
    cdef Py_ssize_t exc, bexc = n
    cdef int64_t x, lo, hi
    cdef bint any_ok
    cdef double cost, best = 1e300
    cdef int vbits = 64 if real_t is double else 32
    if max_e < 0:
        max_e = MAX_E64 if real_t is double else MAX_E32
    if not 0 <= max_e <= 22:
        raise ValueError(f"max_e {max_e} out of range 0..22")
    with nogil:
        for e in range(max_e + 1):
            for f in range(e + 1):
                exc = 0
                any_ok = False
                lo = 0
                hi = 0
                for i in range(n):
                    if _encode(sample[i], e, f, &x):
                        if not any_ok:
                            lo = x
                            hi = x
                            any_ok = True
                        elif x < lo:
                            lo = x
                        elif x > hi:
                            hi = x
                    else:
                        exc += 1
                w = _bits_of(<uint64_t>hi - <uint64_t>lo)
                cost = <double>n * w + <double>exc * (vbits + 32)
                if cost < best:
                    best, be, bf, bexc, bw = cost, e, f, exc, w
    return be, bf, bexc, bw


# the integers' layouts of alp_encode_pages
cdef enum:
    L_TIGHT = 0     # ALP: bit-packed at the span's bit length
    L_ALIGNED = 1   # ALP: bit-packed at 8, 16, 32 or 64 bits
    L_SPLIT = 2     # ALP_SPLIT: byte planes
LAYOUT_TIGHT, LAYOUT_ALIGNED, LAYOUT_SPLIT = L_TIGHT, L_ALIGNED, L_SPLIT


cdef int _layout_width(uint64_t span, int layout) noexcept nogil:
    cdef int w = _bits_of(span)
    if layout == L_SPLIT:
        return (w + 7) // 8
    if layout == L_ALIGNED and w:
        return 8 if w <= 8 else 16 if w <= 16 else 32 if w <= 32 else 64
    return w


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _encode_run(const real_t* v, Py_ssize_t n, int e, int f, int64_t* ints, uint32_t* pos,
                      Py_ssize_t* k_out, int64_t* lo_out, int64_t* hi_out) noexcept nogil:
    """ALP-encode ``v[:n]``: integers into ``ints`` (exception slots repeat the previous
    good integer, the first one when leading), exception positions into ``pos``."""
    cdef Py_ssize_t i, k = 0, first = -1, j
    cdef int64_t x, prev = 0, lo = 0, hi = 0
    for i in range(n):
        if _encode(v[i], e, f, &x):
            ints[i] = x
            if first < 0:
                first = i
                lo = hi = x
            elif x < lo:
                lo = x
            elif x > hi:
                hi = x
        else:
            pos[k] = <uint32_t>i
            k += 1
    if k:
        prev = ints[first] if first >= 0 else 0
        j = 0
        for i in range(n):
            if j < k and pos[j] == i:
                ints[i] = prev
                j += 1
            else:
                prev = ints[i]
    k_out[0] = k
    lo_out[0] = lo
    hi_out[0] = hi


@cython.boundscheck(False)
@cython.wraparound(False)
def alp_encode_pages(const real_t[::1] values, const int64_t[::1] bounds, int e, int f, int layout):
    """The ALP (``layout`` LAYOUT_TIGHT / LAYOUT_ALIGNED) or ALP_SPLIT (LAYOUT_SPLIT)
    bodies of the pages ``[bounds[j], bounds[j+1])`` of ``values``, in one GIL-free
    call: ``(buffer uint8, starts int64, sizes int64)``, body ``j`` at
    ``buffer[starts[j]:starts[j] + sizes[j]]`` (each 8-byte aligned), byte for byte what
    :meth:`rcfmt.encodings.alp.Alp.encode` lays out."""
    cdef int max_e = MAX_E64 if real_t is double else MAX_E32
    cdef int item = sizeof(real_t)
    if not (0 <= e <= max_e and 0 <= f <= e):
        raise ValueError(f"invalid ALP parameters e={e}, f={f}")
    if layout not in (LAYOUT_TIGHT, LAYOUT_ALIGNED, LAYOUT_SPLIT):
        raise ValueError(f"unknown ALP layout {layout}")
    cdef Py_ssize_t pages = bounds.shape[0] - 1, n = values.shape[0], j, a, rows, i
    if pages < 0 or bounds[0] != 0 or bounds[pages] != n:
        raise ValueError("bounds must run from 0 to len(values)")
    for j in range(pages):
        if bounds[j + 1] < bounds[j] or bounds[j + 1] - bounds[j] > 0xFFFFFFFF:
            raise ValueError("bounds must not decrease, nor a page exceed 2**32 - 1 rows")
    ints_a = np.empty(max(n, 1), dtype=np.int64)
    pos_a = np.empty(max(n, 1), dtype=np.uint32)
    meta_a = np.zeros((max(pages, 1), 4), dtype=np.int64)  # k, ref, width, body size
    starts = np.zeros(max(pages, 1), dtype=np.int64)
    cdef int64_t[::1] ints = ints_a
    cdef uint32_t[::1] pos = pos_a
    cdef int64_t[:, ::1] meta = meta_a
    cdef int64_t[::1] st = starts
    cdef Py_ssize_t k, total = 0, packed
    cdef int64_t lo, hi
    cdef int w
    with nogil:
        for j in range(pages):
            a = bounds[j]
            rows = bounds[j + 1] - a
            _encode_run(&values[0] + a if n else NULL, rows, e, f, &ints[0] + a, &pos[0] + a, &k, &lo, &hi)
            w = _layout_width(<uint64_t>hi - <uint64_t>lo, layout)
            packed = rows * w if layout == L_SPLIT else packed_nbytes(rows, w, 8)
            meta[j, 0] = k
            meta[j, 1] = lo
            meta[j, 2] = w
            meta[j, 3] = 16 + packed + k * (item + 4)
            st[j] = total
            total += (meta[j, 3] + 7) & ~7
    out = np.empty(max(total, 8) // 8, dtype=np.uint64).view(np.uint8)
    cdef uint8_t* o = <uint8_t*>cnp.PyArray_DATA(out)
    cdef uint8_t* body
    cdef uint32_t k32
    cdef const real_t* v
    with nogil:
        for j in range(pages):
            a = bounds[j]
            rows = bounds[j + 1] - a
            body = o + st[j]
            k = meta[j, 0]
            lo = meta[j, 1]
            w = <int>meta[j, 2]
            body[0] = <uint8_t>e
            body[1] = <uint8_t>f
            body[2] = <uint8_t>w
            body[3] = 0
            k32 = <uint32_t>k
            memcpy(body + 4, &k32, 4)
            memcpy(body + 8, &lo, 8)
            if layout == L_SPLIT:
                packed = rows * w
                split_raw(<const uint8_t*>(&ints[0] + a), 8, rows, w, <uint64_t>lo, body + 16)
            else:
                packed = packed_nbytes(rows, w, 8)
                if w:
                    pack64_raw(<const uint64_t*>(&ints[0] + a), rows, w, <uint64_t>lo, body + 16)
                else:
                    memset(body + 16, 0, packed)
            v = &values[0] + a
            for i in range(k):
                memcpy(body + 16 + packed + i * item, &v[pos[a + i]], item)
            if k:
                memcpy(body + 16 + packed + k * item, &pos[0] + a, 4 * k)
    return out, starts[:pages], meta_a[:pages, 3].copy()


@cython.boundscheck(False)
@cython.wraparound(False)
def alp_decode_inplace(double[::1] out, int e, int f):
    """Turn ``out`` (holding int64 integers, viewed as float64) into the decoded
    doubles, in place. Caller validates ``e`` and ``f``."""
    if not (0 <= e <= 22 and 0 <= f <= 22):
        raise ValueError(f"invalid ALP parameters e={e}, f={f}")
    cdef Py_ssize_t n = out.shape[0], i
    if n == 0:
        return
    cdef int64_t* ip = <int64_t*>&out[0]
    cdef double* dp = &out[0]
    cdef double a = F10_[f]
    cdef double b = IF10_[e]
    with nogil:
        for i in range(n):
            dp[i] = <double>ip[i] * a * b


@cython.boundscheck(False)
@cython.wraparound(False)
def alp_decode_f32(const int64_t[::1] ints, float[::1] out, int e, int f):
    """``out[i] = (float)((double)ints[i] * F10[f] * IF10[e])``."""
    if not (0 <= e <= 22 and 0 <= f <= 22):
        raise ValueError(f"invalid ALP parameters e={e}, f={f}")
    cdef Py_ssize_t n = ints.shape[0], i
    if out.shape[0] < n:
        raise ValueError("out is too short")
    cdef double a = F10_[f]
    cdef double b = IF10_[e]
    with nogil:
        for i in range(n):
            out[i] = <float>(<double>ints[i] * a * b)


@cython.boundscheck(False)
@cython.wraparound(False)
def patch_exceptions(real_t[::1] out, const uint32_t[::1] positions, const real_t[::1] values):
    """``out[positions[k]] = values[k]`` (bit copies). Positions must be strictly
    increasing and smaller than ``len(out)``: otherwise nothing is written and
    CorruptFileError names the first bad entry."""
    cdef Py_ssize_t n = out.shape[0], k, m = positions.shape[0], bad = -1
    cdef int64_t prev = -1
    if values.shape[0] != m:
        raise ValueError("positions and values differ in length")
    with nogil:
        for k in range(m):
            if <int64_t>positions[k] <= prev or <Py_ssize_t>positions[k] >= n:
                bad = k
                break
            prev = positions[k]
        if bad < 0:
            for k in range(m):
                memcpy(&out[positions[k]], &values[k], sizeof(real_t))
    if bad >= 0:
        raise CorruptFileError(
            f"ALP exception position {positions[bad]} (entry {bad}) is not increasing or not below {n}")


@cython.boundscheck(False)
@cython.wraparound(False)
def widen_i64_to_i128(const int64_t[::1] lo, int64_t[::1] out):
    """``out[2i] = lo[i]``, ``out[2i+1] = lo[i] >> 63``: int64 values as little-endian
    128-bit two's complement (decimal128 storage). ``out`` holds ``2 * len(lo)``."""
    cdef Py_ssize_t n = lo.shape[0], i
    if out.shape[0] < 2 * n:
        raise ValueError("out is too short")
    with nogil:
        for i in range(n):
            out[2 * i] = lo[i]
            out[2 * i + 1] = lo[i] >> 63


cdef void alp_factors(int e, int f, double* a, double* b) noexcept nogil:
    """ALP's decode factors: ``v = (double) n * a * b`` with ``a = 10**f``, ``b = 10**-e``
    (``0 <= f <= e <= 22``, checked by the caller)."""
    a[0] = F10_[f]
    b[0] = IF10_[e]
