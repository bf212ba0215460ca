"""Selection kernels, GIL-free, one pass each.

* :func:`codes_mask`: a leaf evaluated once per dictionary entry becomes a mask per row,
  null rows decided in the same pass (numpy needs a ``take``, which first casts uint32
  codes to intp, then a ``where``); optionally ANDed into a mask already there.
* :func:`range_mask`: the conjunction of a column's comparisons, as one interval
  (``lo <(=) x <(=) hi``), nulls excluded, written or ANDed into a mask in one pass
  (numpy needs a pass per comparison and per ``&``).
* :func:`count_runs`, :func:`mask_runs`: the runs of True of a row mask, which decide
  and build a selection's row ranges (numpy needs a ``diff`` and two ``flatnonzero``).
* :func:`sparse_positions`: for a few selected rows, the pages to decode and where each
  row lands among their values (a dozen numpy calls on a handful of rows cost ~60 µs).
* :func:`take`: fixed-width values gathered by uint32 dictionary codes or int64 row
  positions (numpy's ``take`` holds the GIL and first casts uint32 indices to intp:
  ~290 µs for 50,000 int64 values from a 6,000-entry dictionary).
* :func:`ranges_mask`, :func:`ranges_rows`, :func:`mask_rows`, :func:`scatter_ranges`: a
  selection's row ranges as a mask or as rows, a mask's rows, and a mask over a selection's rows laid out over the
  block (numpy: a cumulative sum of edges, ~150 µs for a 131,072-row block of many
  ranges; ``flatnonzero``; runs of the mask mapped back to rows).
* ``range_into`` / ``member_into`` / ``bits_into`` (``select.pxd``): the range and
  set-membership kernels the block executor (``block.pyx``) evaluates filters with as it
  decodes a column (:func:`member_mask` exposes the membership kernel).
"""
from libc.math cimport INFINITY, nextafter, nextafterf
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

cimport numpy as cnp
import math

import numpy as np

cnp.import_array()

__all__ = ["codes_mask", "range_mask", "count_runs", "mask_runs", "sparse_positions", "take",
           "inclusive_bounds", "dtype_code", "ranges_mask", "mask_rows", "scatter_ranges"]


cdef Py_ssize_t _lookup(const uint8_t* t, uint32_t size, const uint32_t* c, const uint8_t* v, uint8_t nv,
                        Py_ssize_t n, uint8_t* o, bint and_into) noexcept nogil:
    # four loops, so that each stays simple enough for the compiler
    cdef Py_ssize_t i
    cdef uint32_t code
    if v == NULL and not and_into:
        for i in range(n):
            code = c[i]
            if code >= size:
                return i
            o[i] = t[code]
    elif v == NULL:
        for i in range(n):
            code = c[i]
            if code >= size:
                return i
            o[i] = (o[i] != 0) & t[code]
    elif not and_into:
        for i in range(n):
            code = c[i]
            if not v[i]:
                o[i] = nv  # a null row's code is arbitrary
            elif code >= size:
                return i
            else:
                o[i] = t[code]
    else:
        for i in range(n):
            code = c[i]
            if not v[i]:
                o[i] = (o[i] != 0) & nv
            elif code >= size:
                return i
            else:
                o[i] = (o[i] != 0) & t[code]
    return -1


def codes_mask(const uint8_t[::1] table, const uint32_t[::1] codes, const uint8_t[::1] valid, bint null_value,
               uint8_t[::1] out, bint and_into=False):
    """``out[i] = table[codes[i]]`` (bool bytes), or ``null_value`` where ``valid`` (bool
    bytes, one per row; None: no nulls) is 0; with ``and_into``, ``out[i] &=`` that.
    Returns -1, or the first valid row whose code is outside the table (``out`` is then
    partly written)."""
    cdef Py_ssize_t n = codes.shape[0], bad
    if out.shape[0] < n or (valid is not None and valid.shape[0] < n):
        raise ValueError("out and valid need one entry per code")
    if n == 0:
        return -1
    cdef const uint8_t* t = &table[0] if table.shape[0] else NULL
    cdef const uint8_t* v = &valid[0] if valid is not None else NULL
    cdef uint32_t size = <uint32_t>min(<Py_ssize_t>table.shape[0], <Py_ssize_t>0xFFFFFFFF)
    with nogil:
        bad = _lookup(t, size, &codes[0], v, 1 if null_value else 0, n, &out[0], and_into)
    return bad


ctypedef fused _value_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    double
    float

#: range_mask bound kinds
BOUND_NONE, BOUND_STRICT, BOUND_INCLUSIVE = 0, 1, 2


cdef extern from *:
    """
    /* lo <= x <= hi per value (a NaN fails both, as in numpy), optionally ANDed with
       validity bytes and with the mask already in o. One plain loop per case, each
       result first as an integer as wide as the value (so that the compiler vectorizes
       the narrowing to bytes), compiled twice on x86-64 Linux (AVX2 and baseline SSE2)
       with the variant chosen when the module loads (no -march). */
    #if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
    #define RC_CLONES __attribute__((target_clones("avx2", "default")))
    #else
    #define RC_CLONES
    #endif
    #define RC_RANGE(T, W, NAME) \
    RC_CLONES static void NAME(const T* x, Py_ssize_t n, T lo, T hi, const uint8_t* v, uint8_t* o, \
                               int and_into) { \
        Py_ssize_t i; W r; \
        if (!v && !and_into) { for (i = 0; i < n; i++) { r = (x[i] >= lo) & (x[i] <= hi); o[i] = (uint8_t)r; } } \
        else if (!v) { for (i = 0; i < n; i++) { r = (x[i] >= lo) & (x[i] <= hi) & (o[i] != 0); o[i] = (uint8_t)r; } } \
        else if (!and_into) { for (i = 0; i < n; i++) { r = (x[i] >= lo) & (x[i] <= hi) & (v[i] != 0); o[i] = (uint8_t)r; } } \
        else { for (i = 0; i < n; i++) { r = (x[i] >= lo) & (x[i] <= hi) & (v[i] != 0) & (o[i] != 0); o[i] = (uint8_t)r; } } \
    }
    RC_RANGE(int8_t, int8_t, rc_range_i8) RC_RANGE(int16_t, int16_t, rc_range_i16)
    RC_RANGE(int32_t, int32_t, rc_range_i32) RC_RANGE(int64_t, int64_t, rc_range_i64)
    RC_RANGE(uint8_t, int8_t, rc_range_u8) RC_RANGE(uint16_t, int16_t, rc_range_u16)
    RC_RANGE(uint32_t, int32_t, rc_range_u32) RC_RANGE(uint64_t, int64_t, rc_range_u64)
    RC_RANGE(double, int64_t, rc_range_f64) RC_RANGE(float, int32_t, rc_range_f32)
    """
    void rc_range_i8(const int8_t*, Py_ssize_t, int8_t, int8_t, const uint8_t*, uint8_t*, int) noexcept nogil
    void rc_range_i16(const int16_t*, Py_ssize_t, int16_t, int16_t, const uint8_t*, uint8_t*, int) noexcept nogil
    void rc_range_i32(const int32_t*, Py_ssize_t, int32_t, int32_t, const uint8_t*, uint8_t*, int) noexcept nogil
    void rc_range_i64(const int64_t*, Py_ssize_t, int64_t, int64_t, const uint8_t*, uint8_t*, int) noexcept nogil
    void rc_range_u8(const uint8_t*, Py_ssize_t, uint8_t, uint8_t, const uint8_t*, uint8_t*, int) noexcept nogil
    void rc_range_u16(const uint16_t*, Py_ssize_t, uint16_t, uint16_t, const uint8_t*, uint8_t*, int) noexcept nogil
    void rc_range_u32(const uint32_t*, Py_ssize_t, uint32_t, uint32_t, const uint8_t*, uint8_t*, int) noexcept nogil
    void rc_range_u64(const uint64_t*, Py_ssize_t, uint64_t, uint64_t, const uint8_t*, uint8_t*, int) noexcept nogil
    void rc_range_f64(const double*, Py_ssize_t, double, double, const uint8_t*, uint8_t*, int) noexcept nogil
    void rc_range_f32(const float*, Py_ssize_t, float, float, const uint8_t*, uint8_t*, int) noexcept nogil


cdef extern from *:
    """
    /* o[i] = (x[i] is one of the k sorted, distinct members m) != negate, or that ANDed
       into o[i]. Up to 16 members: one pass over x per member, each comparison a
       vectorizable loop into the byte; more: a binary search per value. Equality as in
       C (a NaN equals nothing; -0.0 equals 0.0). */
    #define RC_MEMBER(T, NAME) \
    RC_CLONES static void NAME(const T* x, Py_ssize_t n, const T* m, Py_ssize_t k, int negate, uint8_t* o, \
                               int and_into) { \
        Py_ssize_t i, j, lo, hi, mid; uint8_t neg = negate ? 1 : 0; \
        if (k <= 16) { \
            if (and_into) { for (i = 0; i < n; i++) o[i] = o[i] != 0 ? 2 : 0; } else memset(o, 0, n); \
            for (j = 0; j < k; j++) { T v = m[j]; for (i = 0; i < n; i++) o[i] |= (uint8_t)(x[i] == v); } \
            if (and_into) { for (i = 0; i < n; i++) o[i] = (uint8_t)(((o[i] & 1) ^ neg) & (o[i] >> 1)); } \
            else { for (i = 0; i < n; i++) o[i] = (uint8_t)(o[i] ^ neg); } \
            return; \
        } \
        for (i = 0; i < n; i++) { \
            T v = x[i]; lo = 0; hi = k; \
            while (lo < hi) { mid = (lo + hi) >> 1; if (m[mid] < v) lo = mid + 1; else hi = mid; } \
            uint8_t r = (uint8_t)((lo < k && m[lo] == v) ^ neg); \
            o[i] = and_into ? (uint8_t)(r & (o[i] != 0)) : r; \
        } \
    }
    RC_MEMBER(int8_t, rc_member_i8) RC_MEMBER(int16_t, rc_member_i16)
    RC_MEMBER(int32_t, rc_member_i32) RC_MEMBER(int64_t, rc_member_i64)
    RC_MEMBER(uint8_t, rc_member_u8) RC_MEMBER(uint16_t, rc_member_u16)
    RC_MEMBER(uint32_t, rc_member_u32) RC_MEMBER(uint64_t, rc_member_u64)
    RC_MEMBER(double, rc_member_f64) RC_MEMBER(float, rc_member_f32)
    /* dispatch on the DT_* codes of select.pxd (0..9, in this order) */
    static void rc_member(int dt, const void* x, Py_ssize_t n, const void* m, Py_ssize_t k, int negate,
                          uint8_t* o, int and_into) {
        switch (dt) {
        case 0: rc_member_i8((const int8_t*)x, n, (const int8_t*)m, k, negate, o, and_into); break;
        case 1: rc_member_i16((const int16_t*)x, n, (const int16_t*)m, k, negate, o, and_into); break;
        case 2: rc_member_i32((const int32_t*)x, n, (const int32_t*)m, k, negate, o, and_into); break;
        case 3: rc_member_i64((const int64_t*)x, n, (const int64_t*)m, k, negate, o, and_into); break;
        case 4: rc_member_u8((const uint8_t*)x, n, (const uint8_t*)m, k, negate, o, and_into); break;
        case 5: rc_member_u16((const uint16_t*)x, n, (const uint16_t*)m, k, negate, o, and_into); break;
        case 6: rc_member_u32((const uint32_t*)x, n, (const uint32_t*)m, k, negate, o, and_into); break;
        case 7: rc_member_u64((const uint64_t*)x, n, (const uint64_t*)m, k, negate, o, and_into); break;
        case 8: rc_member_f64((const double*)x, n, (const double*)m, k, negate, o, and_into); break;
        case 9: rc_member_f32((const float*)x, n, (const float*)m, k, negate, o, and_into); break;
        }
    }
    /* The same test on integers through a bit per value of the members' span: value x
       is a member when (uint64)x - base < span and its bit is set (C's conversion to
       uint64 is modular for every integer type, so one formula serves signed and
       unsigned values); one branch-free pass. */
    #define RC_BITS(T, NAME) \
    RC_CLONES static void NAME(const T* x, Py_ssize_t n, uint64_t base, uint64_t span, const uint8_t* bits, \
                               int negate, uint8_t* o, int and_into) { \
        Py_ssize_t i; uint8_t neg = negate ? 1 : 0; \
        for (i = 0; i < n; i++) { \
            uint64_t d = (uint64_t)x[i] - base; uint64_t inside = d < span; d = inside ? d : 0; \
            uint8_t r = (uint8_t)((inside & (bits[d >> 3] >> (d & 7))) ^ neg); \
            o[i] = and_into ? (uint8_t)(r & (o[i] != 0)) : r; \
        } \
    }
    RC_BITS(int8_t, rc_bits_i8) RC_BITS(int16_t, rc_bits_i16) RC_BITS(int32_t, rc_bits_i32)
    RC_BITS(int64_t, rc_bits_i64) RC_BITS(uint8_t, rc_bits_u8) RC_BITS(uint16_t, rc_bits_u16)
    RC_BITS(uint32_t, rc_bits_u32) RC_BITS(uint64_t, rc_bits_u64)
    static void rc_bits(int dt, const void* x, Py_ssize_t n, uint64_t base, uint64_t span, const uint8_t* bits,
                        int negate, uint8_t* o, int and_into) {
        switch (dt) {
        case 0: rc_bits_i8((const int8_t*)x, n, base, span, bits, negate, o, and_into); break;
        case 1: rc_bits_i16((const int16_t*)x, n, base, span, bits, negate, o, and_into); break;
        case 2: rc_bits_i32((const int32_t*)x, n, base, span, bits, negate, o, and_into); break;
        case 3: rc_bits_i64((const int64_t*)x, n, base, span, bits, negate, o, and_into); break;
        case 4: rc_bits_u8((const uint8_t*)x, n, base, span, bits, negate, o, and_into); break;
        case 5: rc_bits_u16((const uint16_t*)x, n, base, span, bits, negate, o, and_into); break;
        case 6: rc_bits_u32((const uint32_t*)x, n, base, span, bits, negate, o, and_into); break;
        case 7: rc_bits_u64((const uint64_t*)x, n, base, span, bits, negate, o, and_into); break;
        }
    }
    """
    void rc_member(int, const void*, Py_ssize_t, const void*, Py_ssize_t, int, uint8_t*, int) noexcept nogil
    void rc_bits(int, const void*, Py_ssize_t, uint64_t, uint64_t, const uint8_t*, int, uint8_t*, int) noexcept nogil


#: the most bits a member set's table may take (2 MiB); a wider span is searched
MAX_MEMBER_BITS = 1 << 24


def member_bits(members):
    """``(base, span, bits)``: integer ``members`` (sorted, distinct) as a bit per value
    of their span (bit ``x - base`` set for each member; ``bits`` uint8, little-endian
    bit order), or None for floats, sets the linear scan serves (16 members or fewer)
    and spans wider than :data:`MAX_MEMBER_BITS`."""
    members = np.asarray(members)
    k = members.shape[0]
    if members.dtype.kind not in "iu" or k <= 16:
        return None
    wide = members.astype(np.uint64)  # (modular, as in the kernel)
    base = int(wide[0])
    span = (int(wide[k - 1]) - base) % (1 << 64) + 1
    if span > MAX_MEMBER_BITS:
        return None
    at = (wide - np.uint64(base)).astype(np.int64)  # (the bits set directly: no byte per value of the span)
    bits = np.zeros((span + 7) >> 3, np.uint8)
    np.bitwise_or.at(bits, at >> 3, np.left_shift(1, at & 7).astype(np.uint8))
    return base, span, bits


cdef void bits_into(int dtype, const void* x, Py_ssize_t n, uint64_t base, uint64_t span, const uint8_t* bits,
                    bint negate, uint8_t* o, bint and_into) noexcept nogil:
    rc_bits(dtype, x, n, base, span, bits, negate, o, and_into)


cdef void member_into(int dtype, const void* x, Py_ssize_t n, const void* members, Py_ssize_t k, bint negate,
                      uint8_t* o, bint and_into) noexcept nogil:
    rc_member(dtype, x, n, members, k, negate, o, and_into)


def member_mask(values, members, bint negate, uint8_t[::1] out, bint and_into):
    """``out[i] = (values[i] in members) != negate`` (ANDed into ``out`` with
    ``and_into``): ``members`` sorted and distinct, of the dtype of the contiguous
    ``values`` (a type :func:`dtype_code` knows); nulls are not decided here. Integer
    sets as the page pipeline takes them (:func:`member_bits` when it gives a table)."""
    values, members = np.asarray(values), np.asarray(members)
    code = dtype_code(values.dtype)
    if code is None or members.dtype != values.dtype or values.ndim != 1 or members.ndim != 1 \
            or not values.flags.c_contiguous or not members.flags.c_contiguous:
        raise ValueError("member_mask needs contiguous values and members of one numeric dtype")
    if out.shape[0] != values.shape[0]:
        raise ValueError("out needs one byte per value")
    if members.shape[0] > 1 and not (members[1:] > members[:members.shape[0] - 1]).all():
        raise ValueError("members must be sorted and distinct")
    cdef Py_ssize_t n = values.shape[0], k = members.shape[0]
    cdef int dt = code
    cdef const void* x = cnp.PyArray_DATA(values)
    cdef const void* m = cnp.PyArray_DATA(members)
    cdef uint8_t* o = &out[0] if n else NULL
    table = member_bits(members)
    cdef const uint8_t* bits = NULL
    cdef uint64_t base = 0, span = 0
    if table is not None:
        base, span = table[0], table[1]
        bits = <const uint8_t*>cnp.PyArray_DATA(table[2])
    if n:
        with nogil:
            if bits != NULL:
                rc_bits(dt, x, n, base, span, bits, negate, o, and_into)
            else:
                rc_member(dt, x, n, m, k, negate, o, and_into)


def inclusive_bounds(dtype, lo, int lo_kind, hi, int hi_kind):
    """The interval ``lo <(=) x <(=) hi`` (bound kinds as :func:`range_mask`) as
    inclusive bounds ``(lo, hi)`` of ``dtype``, or None when no value of the type lies
    in it: a strict bound moves to the next integer (or double, or float32) inward, a
    missing or out-of-range one becomes the type's limit (an infinity for floats). A
    float32 bound is a float32 value (as the binder gives them)."""
    if not (0 <= lo_kind <= 2 and 0 <= hi_kind <= 2):
        raise ValueError("bound kinds are BOUND_NONE, BOUND_STRICT or BOUND_INCLUSIVE")
    dtype = np.dtype(dtype)
    cdef double dlo, dhi
    cdef float flo, fhi
    if dtype == np.float32:  # the float32 values nearest inside the (double) bounds
        dlo = <double>lo if lo_kind else -INFINITY
        dhi = <double>hi if hi_kind else INFINITY
        flo, fhi = <float>dlo, <float>dhi
        if <double>flo < dlo or (lo_kind == 1 and <double>flo == dlo):
            if flo == INFINITY:
                return None
            flo = nextafterf(flo, INFINITY)
        if <double>fhi > dhi or (hi_kind == 1 and <double>fhi == dhi):
            if fhi == -INFINITY:
                return None
            fhi = nextafterf(fhi, -INFINITY)
        return flo, fhi
    if dtype.kind == "f":
        dlo = <double>lo if lo_kind else -INFINITY
        dhi = <double>hi if hi_kind else INFINITY
        if (lo_kind == 1 and dlo == INFINITY) or (hi_kind == 1 and dhi == -INFINITY):
            return None
        if lo_kind == 1:
            dlo = nextafter(dlo, INFINITY)
        if hi_kind == 1:
            dhi = nextafter(dhi, -INFINITY)
        return dlo, dhi
    mn, mx = _INT_LIMITS[dtype] if dtype in _INT_LIMITS else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    lo_i = max(_least_above(lo, lo_kind == 1, mn, mx), mn) if lo_kind else mn
    hi_i = min(-_least_above(-hi if type(hi) is int else _negated(hi), hi_kind == 1, -mx, -mn), mx) if hi_kind else mx
    return None if lo_i > hi_i else (lo_i, hi_i)


_INT_LIMITS = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
               for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)}


def _negated(v):
    from fractions import Fraction  # (1 ms at import; only float, Decimal and Fraction bounds use it)

    return -Fraction(v) if not (isinstance(v, float) and not math.isfinite(v)) else -v


def _least_above(v, bint strict, mn, mx):
    """The least integer ``x`` with ``x > v`` (``strict``) or ``x >= v``, for an integer,
    float (a non-integer or infinite bound too), Decimal or Fraction ``v``; clamped
    just outside ``[mn, mx]`` for infinities."""
    if type(v) is int:
        return v + 1 if strict else v
    if isinstance(v, float) and not math.isfinite(v):
        if v != v:
            raise ValueError("a NaN bound holds no integer")
        return mn if v < 0 else mx + 1
    from fractions import Fraction

    f = Fraction(v)
    return math.floor(f) + 1 if strict else math.ceil(f)


_DTYPE_CODES = {np.dtype(t): c for t, c in [(np.int8, DT_I8), (np.int16, DT_I16), (np.int32, DT_I32),
                                            (np.int64, DT_I64), (np.uint8, DT_U8), (np.uint16, DT_U16),
                                            (np.uint32, DT_U32), (np.uint64, DT_U64), (np.float64, DT_F64),
                                            (np.float32, DT_F32)]}


def dtype_code(dtype):
    """The ``DT_*`` code :func:`range_into` takes for values of ``dtype`` (None: a type
    the range kernels do not handle)."""
    return _DTYPE_CODES.get(np.dtype(dtype))


cdef void range_into(int dtype, const void* x, Py_ssize_t n, const void* lo, const void* hi,
                     uint8_t* o, bint and_into) noexcept nogil:
    if dtype == DT_I8:
        rc_range_i8(<const int8_t*>x, n, (<const int8_t*>lo)[0], (<const int8_t*>hi)[0], NULL, o, and_into)
    elif dtype == DT_I16:
        rc_range_i16(<const int16_t*>x, n, (<const int16_t*>lo)[0], (<const int16_t*>hi)[0], NULL, o, and_into)
    elif dtype == DT_I32:
        rc_range_i32(<const int32_t*>x, n, (<const int32_t*>lo)[0], (<const int32_t*>hi)[0], NULL, o, and_into)
    elif dtype == DT_I64:
        rc_range_i64(<const int64_t*>x, n, (<const int64_t*>lo)[0], (<const int64_t*>hi)[0], NULL, o, and_into)
    elif dtype == DT_U8:
        rc_range_u8(<const uint8_t*>x, n, (<const uint8_t*>lo)[0], (<const uint8_t*>hi)[0], NULL, o, and_into)
    elif dtype == DT_U16:
        rc_range_u16(<const uint16_t*>x, n, (<const uint16_t*>lo)[0], (<const uint16_t*>hi)[0], NULL, o, and_into)
    elif dtype == DT_U32:
        rc_range_u32(<const uint32_t*>x, n, (<const uint32_t*>lo)[0], (<const uint32_t*>hi)[0], NULL, o, and_into)
    elif dtype == DT_U64:
        rc_range_u64(<const uint64_t*>x, n, (<const uint64_t*>lo)[0], (<const uint64_t*>hi)[0], NULL, o, and_into)
    elif dtype == DT_F64:
        rc_range_f64(<const double*>x, n, (<const double*>lo)[0], (<const double*>hi)[0], NULL, o, and_into)
    elif dtype == DT_F32:
        rc_range_f32(<const float*>x, n, (<const float*>lo)[0], (<const float*>hi)[0], NULL, o, and_into)


cdef void _range(const _value_t* x, Py_ssize_t n, _value_t lo, _value_t hi, const uint8_t* v, uint8_t* o,
                 int and_into) noexcept nogil:
    if _value_t is int8_t:
        rc_range_i8(x, n, lo, hi, v, o, and_into)
    elif _value_t is int16_t:
        rc_range_i16(x, n, lo, hi, v, o, and_into)
    elif _value_t is int32_t:
        rc_range_i32(x, n, lo, hi, v, o, and_into)
    elif _value_t is int64_t:
        rc_range_i64(x, n, lo, hi, v, o, and_into)
    elif _value_t is uint8_t:
        rc_range_u8(x, n, lo, hi, v, o, and_into)
    elif _value_t is uint16_t:
        rc_range_u16(x, n, lo, hi, v, o, and_into)
    elif _value_t is uint32_t:
        rc_range_u32(x, n, lo, hi, v, o, and_into)
    elif _value_t is uint64_t:
        rc_range_u64(x, n, lo, hi, v, o, and_into)
    elif _value_t is float:
        rc_range_f32(x, n, lo, hi, v, o, and_into)
    else:
        rc_range_f64(x, n, lo, hi, v, o, and_into)


def range_mask(const _value_t[::1] values, lo, int lo_kind, hi, int hi_kind, const uint8_t[::1] valid,
               uint8_t[::1] out, bint and_into=False):
    """Bool bytes ``lo < x`` / ``lo <= x`` (``lo_kind`` BOUND_STRICT / BOUND_INCLUSIVE;
    BOUND_NONE: no lower bound) and ``x < hi`` / ``x <= hi`` for each of ``values``,
    False where ``valid`` (bool bytes; None: no nulls) is 0, written to ``out`` (or
    ANDed into it). Bounds beyond the values' type are clamped to it."""
    cdef Py_ssize_t n = values.shape[0]
    if out.shape[0] < n or (valid is not None and valid.shape[0] < n):
        raise ValueError("out and valid need one entry per value")
    if not (0 <= lo_kind <= 2 and 0 <= hi_kind <= 2):
        raise ValueError("bound kinds are BOUND_NONE, BOUND_STRICT or BOUND_INCLUSIVE")
    if n == 0:
        return
    bounds = inclusive_bounds(np.asarray(values).dtype, lo, lo_kind, hi, hi_kind)
    cdef bint empty = bounds is None
    cdef _value_t lo_v = 0, hi_v = 0
    if not empty:
        lo_v, hi_v = bounds
    cdef const uint8_t* v = &valid[0] if valid is not None else NULL
    if empty:  # no value lies in the interval
        out[:n] = 0
        return
    with nogil:
        _range(&values[0], n, lo_v, hi_v, v, &out[0], and_into)


cdef extern from *:
    """
    #include <string.h>
    /* Eight mask bytes as 0/1 bytes: any nonzero byte counts as 1 (a bool array's
       bytes are 0/1, but a view of other bytes as bool must not break the counts
       the fill pass relies on). */
    static inline uint64_t rc_load64(const uint8_t* p) {
        uint64_t w; memcpy(&w, p, 8);
        const uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL;
        return ((((w & low7) + low7) | w) >> 7) & 0x0101010101010101ULL;
    }
    #define RC_LANES16 0x00FF00FF00FF00FFULL
    #define RC_SUM16 0x0001000100010001ULL
    """
    uint64_t RC_LANES16
    uint64_t RC_SUM16
    uint64_t rc_load64(const uint8_t* p) noexcept nogil
    int __builtin_ctzll(unsigned long long) noexcept nogil


cdef inline uint64_t _edges(uint64_t w, uint64_t carry) noexcept nogil:
    """Bytes of a word of 0/1 bytes that differ from the byte before them (the one
    before byte 0 is ``carry``), as 0/1 bytes."""
    return w ^ ((w << 8) | carry)


cdef inline Py_ssize_t _byte_sum(uint64_t acc) noexcept nogil:
    """Sum of the eight bytes of ``acc``."""
    acc = (acc & RC_LANES16) + ((acc >> 8) & RC_LANES16)
    return <Py_ssize_t>((acc * RC_SUM16) >> 48)


cdef Py_ssize_t _count_runs(const uint8_t* m, Py_ssize_t n) noexcept nogil:
    """Runs of 1 in ``m`` (0/1 bytes): rising edges, eight bytes per step, summed as
    byte lanes (at most 255 words per lane sum; no popcount instruction needed)."""
    cdef Py_ssize_t i = 0, runs = 0
    cdef uint64_t w, acc, carry = 0
    cdef int steps
    while i + 8 <= n:
        acc = 0
        steps = 0
        while steps < 255 and i + 8 <= n:
            w = rc_load64(m + i)
            acc += w & ~((w << 8) | carry)
            carry = w >> 56
            i += 8
            steps += 1
        runs += _byte_sum(acc)
    cdef uint8_t prev = <uint8_t>carry, cur
    while i < n:
        cur = m[i] != 0
        runs += cur & (prev ^ 1)
        prev = cur
        i += 1
    return runs


def count_runs(const uint8_t[::1] mask):
    """Number of runs of nonzero bytes in ``mask`` (a bool array's view)."""
    cdef Py_ssize_t n = mask.shape[0], runs
    if n == 0:
        return 0
    with nogil:
        runs = _count_runs(&mask[0], n)
    return runs


def mask_runs(const uint8_t[::1] mask):
    """``(starts, ends)``: int64 arrays of the half-open runs of nonzero bytes in
    ``mask`` (a bool array's view)."""
    cdef Py_ssize_t n = mask.shape[0], runs = 0, i, k = 0
    if n:
        with nogil:
            runs = _count_runs(&mask[0], n)
    cdef cnp.ndarray starts = np.empty(runs, np.int64)
    cdef cnp.ndarray ends = np.empty(runs, np.int64)
    cdef int64_t* s = <int64_t*>cnp.PyArray_DATA(starts)
    cdef int64_t* e = <int64_t*>cnp.PyArray_DATA(ends)
    cdef const uint8_t* m = &mask[0] if n else NULL
    cdef uint64_t w, edges, carry = 0
    cdef uint8_t prev = 0, cur
    cdef int j
    i = 0
    if runs:
        with nogil:
            while i + 8 <= n:  # words without an edge are skipped whole
                w = rc_load64(m + i)
                edges = _edges(w, carry)
                carry = w >> 56
                while edges:
                    j = __builtin_ctzll(edges) >> 3
                    if (w >> (8 * j)) & 1:
                        s[k] = i + j
                    else:
                        e[k] = i + j
                        k += 1
                    edges &= edges - 1
                i += 8
            prev = <uint8_t>carry
            while i < n:
                cur = m[i] != 0
                if cur != prev:
                    if cur:
                        s[k] = i
                    else:
                        e[k] = i
                        k += 1
                    prev = cur
                i += 1
            if prev:
                e[k] = n
    return starts, ends


def sparse_positions(const int64_t[::1] rows, const int64_t[::1] first, const int64_t[::1] counts):
    """For sorted ``rows`` of a block whose pages (``first`` rows, row ``counts``) tile
    it in order: ``(page_ids, positions)``, the pages holding the rows (sorted,
    distinct) and each row's position among those pages' rows decoded back to back.
    A row before the first page or past the last one raises ValueError."""
    cdef Py_ssize_t n = rows.shape[0], m = first.shape[0], i, lo, hi, mid, pages = 0
    cdef int64_t last = -1, decoded = 0, r, page
    if counts.shape[0] != m:
        raise ValueError("first and counts differ in length")
    cdef cnp.ndarray page_ids = np.empty(n, np.int64)
    cdef cnp.ndarray positions = np.empty(n, np.int64)
    cdef int64_t* pid = <int64_t*>cnp.PyArray_DATA(page_ids)
    cdef int64_t* pos = <int64_t*>cnp.PyArray_DATA(positions)
    cdef bint bad = False
    with nogil:
        for i in range(n):
            r = rows[i]
            lo, hi = 0, m  # last page whose first row <= r
            while lo < hi:
                mid = (lo + hi) >> 1
                if first[mid] <= r:
                    lo = mid + 1
                else:
                    hi = mid
            page = lo - 1
            if page < 0 or r >= first[page] + counts[page] or page < last:
                bad = True
                break
            if page != last:
                if last >= 0:
                    decoded += counts[last]
                pid[pages] = page
                pages += 1
                last = page
            pos[i] = decoded + r - first[page]
    if bad:
        raise ValueError("rows must be sorted and inside the pages")
    return page_ids[:pages], positions


# ------------------------------------------------------------------ gathers
ctypedef fused _index_t:
    uint32_t
    int64_t


cdef inline Py_ssize_t _take_items(const uint8_t* v, uint64_t nv, const _index_t* idx, Py_ssize_t n, uint8_t* o,
                                   Py_ssize_t size) noexcept nogil:
    """o[i] = item idx[i] of v (items of ``size`` bytes, a constant in each caller's
    copy, so the copies become single moves); -1, or the first i whose index is not
    below ``nv``."""
    cdef Py_ssize_t i
    cdef uint64_t k
    for i in range(n):
        k = <uint64_t>idx[i]
        if k >= nv:
            return i
        memcpy(o + i * size, v + k * size, size)
    return -1


cdef Py_ssize_t _take(const uint8_t* v, uint64_t nv, const _index_t* idx, Py_ssize_t n, uint8_t* o,
                      Py_ssize_t size) noexcept nogil:
    if size == 1:
        return _take_items(v, nv, idx, n, o, 1)
    if size == 2:
        return _take_items(v, nv, idx, n, o, 2)
    if size == 4:
        return _take_items(v, nv, idx, n, o, 4)
    if size == 8:
        return _take_items(v, nv, idx, n, o, 8)
    return _take_items(v, nv, idx, n, o, 16)


def take(values, const _index_t[::1] indices, out):
    """``out[i] = values[indices[i]]`` for contiguous fixed-width arrays ``values`` and
    ``out`` of one item size (1, 2, 4, 8 or 16 bytes; ``out`` holds ``len(indices)``
    items), GIL-free. An index outside ``values`` raises IndexError (callers pass
    checked codes and positions: it would be a bug, never read out of bounds)."""
    cdef cnp.ndarray src = values
    cdef cnp.ndarray dst = out
    cdef Py_ssize_t size = cnp.PyArray_ITEMSIZE(src), n = indices.shape[0], bad
    if (size not in (1, 2, 4, 8, 16) or cnp.PyArray_ITEMSIZE(dst) != size or not cnp.PyArray_IS_C_CONTIGUOUS(src)
            or not cnp.PyArray_IS_C_CONTIGUOUS(dst) or not cnp.PyArray_ISWRITEABLE(dst) or cnp.PyArray_SIZE(dst) < n):
        raise ValueError("take needs contiguous arrays of one item size (1, 2, 4, 8 or 16 bytes), out writable "
                         "and holding an item per index")
    cdef const uint8_t* v = <const uint8_t*>cnp.PyArray_DATA(src)
    cdef uint8_t* o = <uint8_t*>cnp.PyArray_DATA(dst)
    cdef uint64_t nv = <uint64_t>cnp.PyArray_SIZE(src)
    if n == 0:
        return out
    with nogil:
        bad = _take(v, nv, &indices[0], n, o, size)
    if bad >= 0:
        raise IndexError(f"index {indices[bad]} outside {nv} values")
    return out


def ranges_mask(const int64_t[::1] starts, const int64_t[::1] ends, Py_ssize_t n):
    """A bool array of ``n`` rows, True on the half-open ranges ``[starts[i], ends[i])``
    (each inside ``[0, n]``; numpy builds it from a cumulative sum of edges, ~10x
    slower on a block of many ranges)."""
    cdef Py_ssize_t k, count = starts.shape[0]
    if ends.shape[0] != count or n < 0:
        raise ValueError("one end per start, and n >= 0")
    for k in range(count):
        if not 0 <= starts[k] <= ends[k] <= n:
            raise ValueError(f"range [{starts[k]}, {ends[k]}) outside [0, {n}]")
    cdef cnp.ndarray out = np.empty(n, dtype=bool)
    cdef uint8_t* o = <uint8_t*>cnp.PyArray_DATA(out)
    with nogil:
        memset(o, 0, n)
        for k in range(count):
            memset(o + starts[k], 1, ends[k] - starts[k])
    return out


def ranges_rows(const int64_t[::1] starts, const int64_t[::1] ends):
    """The rows of the half-open ranges ``[starts[i], ends[i])`` one after the other, as
    int64 (numpy: a cumulative sum, a repeat and an add, each holding the GIL)."""
    cdef Py_ssize_t k, count = starts.shape[0]
    cdef int64_t total = 0, r, at = 0
    if ends.shape[0] != count:
        raise ValueError("one end per start")
    for k in range(count):
        if ends[k] < starts[k]:
            raise ValueError(f"range [{starts[k]}, {ends[k]}) ends before it starts")
        total += ends[k] - starts[k]
    cdef cnp.ndarray out = np.empty(total, dtype=np.int64)
    cdef int64_t* o = <int64_t*>cnp.PyArray_DATA(out)
    with nogil:
        for k in range(count):
            for r in range(starts[k], ends[k]):
                o[at] = r
                at += 1
    return out


def mask_rows(const uint8_t[::1] mask):
    """The int64 positions of the nonzero bytes of ``mask`` (numpy's ``flatnonzero``,
    in two GIL-free passes: a count eight bytes at a time, then the positions)."""
    cdef Py_ssize_t n = mask.shape[0], i = 0, count = 0, j
    cdef const uint8_t* m = &mask[0] if n else NULL
    cdef uint64_t acc
    cdef int steps
    with nogil:
        while i + 8 <= n:
            acc = 0
            steps = 0
            while steps < 255 and i + 8 <= n:
                acc += rc_load64(m + i)
                i += 8
                steps += 1
            count += _byte_sum(acc)
        while i < n:
            count += m[i] != 0
            i += 1
    cdef cnp.ndarray out = np.empty(count, dtype=np.int64)
    cdef int64_t* o = <int64_t*>cnp.PyArray_DATA(out)
    cdef uint64_t w
    j = 0
    with nogil:
        i = 0
        while i + 8 <= n:
            w = rc_load64(m + i)
            while w:
                o[j] = i + (__builtin_ctzll(w) >> 3)
                j += 1
                w &= w - 1
            i += 8
        while i < n:
            if m[i]:
                o[j] = i
                j += 1
            i += 1
    return out


def scatter_ranges(const uint8_t[::1] values, const int64_t[::1] starts, const int64_t[::1] ends, Py_ssize_t n):
    """A bool array of ``n`` rows: the bytes of ``values`` (as 0/1) laid out over the
    half-open ranges ``[starts[i], ends[i])`` in order (they must hold exactly
    ``len(values)`` rows, inside ``[0, n]``, in increasing order), False elsewhere:
    a selection of those rows refined by a mask over them."""
    cdef Py_ssize_t k, count = starts.shape[0], at = 0, prev = 0, i, length
    if ends.shape[0] != count or n < 0:
        raise ValueError("one end per start, and n >= 0")
    for k in range(count):
        if not prev <= starts[k] <= ends[k] <= n:
            raise ValueError(f"range [{starts[k]}, {ends[k]}) out of order or outside [0, {n}]")
        prev = ends[k]
        at += ends[k] - starts[k]
    if at != values.shape[0]:
        raise ValueError(f"the ranges hold {at} rows for {values.shape[0]} values")
    cdef cnp.ndarray out = np.empty(n, dtype=bool)
    cdef uint8_t* o = <uint8_t*>cnp.PyArray_DATA(out)
    cdef const uint8_t* v = &values[0] if values.shape[0] else NULL
    at = 0
    with nogil:
        memset(o, 0, n)
        for k in range(count):
            length = ends[k] - starts[k]
            for i in range(length):
                o[starts[k] + i] = v[at + i] != 0
            at += length
    return out
