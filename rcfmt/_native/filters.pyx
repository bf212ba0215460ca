"""Filter kernels of the block executor (:mod:`rcfmt._native.block`): one column's part
of a scan's filter (:class:`Filter`, built once per scan from a spec of
:func:`rcfmt.predicate.evaluate.block_predicate`) and the GIL-free kernels that evaluate it
into a byte mask -- on fixed-width values (ranges, member and excluded sets), 16-byte
and int64-held decimals, strings/binary (byte-string bounds and sets), and dictionary
codes through a per-entry table.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

import numpy as np

cimport numpy as cnp

from rcfmt._native.bytes_order cimport bytes_cmp
from rcfmt._native.offsets cimport get_offset
from rcfmt._native.select cimport DT_I64, bits_into, member_into, range_into

from rcfmt._native import select as _select

cnp.import_array()

__all__ = ["Filter"]

cdef uint8_t _EMPTY[8]


cdef class Filter:
    """One column's part of a scan's filter, as :func:`run_block` evaluates it on every
    chunk of the column, dictionary or not (built once per scan from a spec of
    :func:`rcfmt.predicate.evaluate.block_predicate`):

    * ``("values", dtype, lo, lo_kind, hi, hi_kind, members, excluded)``: fixed-width
      values of ``dtype`` in the interval (bound kinds as :func:`select.range_mask`),
      in ``members`` (None: any) and not in ``excluded`` (None: none), sorted distinct
      arrays of ``dtype``;
    * ``("nulls", want_null)``: is_null (True) / is_valid;
    * ``("bytes", lo, lo_kind, hi, hi_kind, members, excluded, empty)``: byte strings
      (UTF-8 for strings, compared as bytes, which is code point order) in the interval
      (lo/hi bytes, or None with kind BOUND_NONE), in / not in the sorted distinct lists;
    * ``("decimal", lo, hi, empty)``: unscaled 16-byte decimals in ``[lo, hi]`` (None:
      unbounded).

    A null row is never TRUE, except for is_null."""

    def __init__(self, spec):
        memset(&self.f, 0, sizeof(Flt))
        self.hold = []
        kind = spec[0]
        if kind == "nulls":
            self.f.kind = F_NULLS
            self.f.want_null = bool(spec[1])
        elif kind == "values":
            self._values(spec)
        elif kind == "bytes":
            self._bytes(spec)
        elif kind == "decimal":
            self.f.kind = F_DECIMAL
            self.f.empty = bool(spec[3])
            # 128-bit bounds (None: the least / greatest value), and the same clamped to int64
            lo = -(1 << 127) if spec[1] is None else int(spec[1])
            hi = (1 << 127) - 1 if spec[2] is None else int(spec[2])
            _words(lo, &self.f.dlo_high, &self.f.dlo_low)
            _words(hi, &self.f.dhi_high, &self.f.dhi_low)
            self.f.nempty = self.f.empty or lo > (1 << 63) - 1 or hi < -(1 << 63) or lo > hi
            self.f.nlo = max(lo, -(1 << 63)) if not self.f.nempty else 0
            self.f.nhi = min(hi, (1 << 63) - 1) if not self.f.nempty else 0
        else:
            raise ValueError(f"unknown filter kind {kind!r}")

    cdef _values(self, spec):
        cdef bytes raw
        cdef Py_ssize_t size
        dtype = np.dtype(spec[1])
        code = _select.dtype_code(dtype)
        if code is None:
            raise ValueError(f"no range kernel for {dtype} values")
        self.f.kind = F_VALUES
        self.f.dtype = code
        self.f.has_range = spec[3] != 0 or spec[5] != 0
        if self.f.has_range:
            bounds = _select.inclusive_bounds(dtype, spec[2], spec[3], spec[4], spec[5])
            self.f.empty = bounds is None
            if bounds is not None:
                raw = np.array(bounds, dtype).tobytes()
                size = dtype.itemsize
                memcpy(&self.f.lo, <const char*>raw, size)
                memcpy(&self.f.hi, (<const char*>raw) + size, size)
        self._value_set(&self.f.members, spec[6], dtype)
        self._value_set(&self.f.excluded, spec[7], dtype)

    cdef _value_set(self, VSet* out, values, dtype):
        cdef cnp.ndarray arr
        if values is None:
            return
        arr = np.ascontiguousarray(values, dtype)
        if arr.ndim != 1 or (arr.shape[0] > 1 and not (arr[1:] > arr[:arr.shape[0] - 1]).all()):
            raise ValueError("a filter's value set must be sorted and distinct")
        self.hold.append(arr)
        out.given = True
        out.n = arr.shape[0]
        out.values = <const uint8_t*>cnp.PyArray_DATA(arr) if arr.shape[0] else _EMPTY
        table = _select.member_bits(arr)
        if table is not None:
            self.hold.append(table[2])
            out.bits = <const uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>table[2])
            out.base, out.span = table[0], table[1]

    cdef _bytes(self, spec):
        cdef bytes b
        self.f.kind = F_BYTES
        self.f.empty = bool(spec[7])
        if spec[2]:
            b = bytes(spec[1])
            self.hold.append(b)
            self.f.blo, self.f.blo_n, self.f.lo_strict = <const uint8_t*>(<const char*>b), len(b), spec[2] == 1
        if spec[4]:
            b = bytes(spec[3])
            self.hold.append(b)
            self.f.bhi, self.f.bhi_n, self.f.hi_strict = <const uint8_t*>(<const char*>b), len(b), spec[4] == 1
        self._byte_set(&self.f.bmembers, spec[5])
        self._byte_set(&self.f.bexcluded, spec[6])

    cdef _byte_set(self, BSet* out, values):
        cdef cnp.ndarray data, offsets
        if values is None:
            return
        items = [bytes(v) for v in values]
        if any(a >= b for a, b in zip(items, items[1:])):
            raise ValueError("a filter's byte strings must be sorted and distinct")
        joined = b"".join(items)
        data = np.frombuffer(joined + b"\0", np.uint8)
        offsets = np.zeros(len(items) + 1, np.int64)
        np.cumsum([len(v) for v in items], out=offsets[1:])
        self.hold += [data, offsets]
        out.given = True
        out.n = len(items)
        out.data = <const uint8_t*>cnp.PyArray_DATA(data)
        out.offsets = <const int64_t*>cnp.PyArray_DATA(offsets)


cdef _words(value, int64_t* high, uint64_t* low):
    """A 128-bit two's complement integer as its signed high and unsigned low words."""
    if not -(1 << 127) <= value < (1 << 127):
        raise ValueError("a decimal bound must fit 128 bits")
    low[0] = value & 0xFFFF_FFFF_FFFF_FFFF
    high[0] = value >> 64


cdef inline bint _in_bytes(const BSet* s, const uint8_t* x, int64_t n) noexcept nogil:
    """Whether ``x`` is one of the sorted strings of ``s`` (binary search)."""
    cdef Py_ssize_t lo = 0, hi = s.n, mid
    cdef int c
    while lo < hi:
        mid = (lo + hi) >> 1
        c = bytes_cmp(s.data + s.offsets[mid], s.offsets[mid + 1] - s.offsets[mid], x, n)
        if c == 0:
            return True
        if c < 0:
            lo = mid + 1
        else:
            hi = mid
    return False


cdef inline bint _bytes_hit(const Flt* f, const uint8_t* x, int64_t n) noexcept nogil:
    cdef int c
    if f.blo != NULL:
        c = bytes_cmp(x, n, f.blo, f.blo_n)
        if c < 0 or (c == 0 and f.lo_strict):
            return False
    if f.bhi != NULL:
        c = bytes_cmp(x, n, f.bhi, f.bhi_n)
        if c > 0 or (c == 0 and f.hi_strict):
            return False
    if f.bmembers.given and not _in_bytes(&f.bmembers, x, n):
        return False
    if f.bexcluded.given and _in_bytes(&f.bexcluded, x, n):
        return False
    return True


cdef void _decimals_into(const Flt* f, const uint64_t* v, Py_ssize_t n, uint8_t* o, bint and_into) noexcept nogil:
    """16-byte decimals (low word, then the signed high word) in ``[lo, hi]``, without branches."""
    cdef Py_ssize_t i
    cdef int64_t high, lh = f.dlo_high, hh = f.dhi_high
    cdef uint64_t low, ll = f.dlo_low, hl = f.dhi_low
    cdef uint8_t hit
    for i in range(n):
        low = v[2 * i]
        high = <int64_t>v[2 * i + 1]
        hit = ((high > lh) | ((high == lh) & (low >= ll))) & ((high < hh) | ((high == hh) & (low <= hl)))
        o[i] = (hit & (o[i] != 0)) if and_into else hit


cdef void _fixed_set(const Flt* f, const VSet* s, const uint8_t* x, Py_ssize_t n, bint negate, uint8_t* o,
                     bint and_into) noexcept nogil:
    if s.bits != NULL:
        bits_into(f.dtype, x, n, s.base, s.span, s.bits, negate, o, and_into)
    else:
        member_into(f.dtype, x, n, s.values, s.n, negate, o, and_into)


cdef void _filter_entries(const Flt* f, int kind, const uint8_t* values, const uint8_t* data, bint wide,
                          Py_ssize_t n, uint8_t* o, bint and_into) noexcept nogil:
    """``f`` on ``n`` values (their validity aside) into ``o`` (ANDed with ``and_into``):
    fixed-width ``values``, 16-byte decimals, or strings/binary as offsets ``values``
    (int64 if ``wide``, else int32) over ``data``."""
    cdef Py_ssize_t i
    cdef bint written = and_into
    cdef int64_t a, b
    if f.empty:
        memset(o, 0, n)
        return
    if f.kind == F_BYTES:
        for i in range(n):
            a, b = get_offset(values, wide, i), get_offset(values, wide, i + 1)
            _put(o, i, _bytes_hit(f, data + a, b - a), and_into)
        return
    if f.kind == F_DECIMAL:
        _decimals_into(f, <const uint64_t*>values, n, o, and_into)
        return
    if f.members.given and f.members.n == 0:
        memset(o, 0, n)
        return
    if f.has_range:
        range_into(f.dtype, values, n, &f.lo, &f.hi, o, written)
        written = True
    if f.members.given:
        _fixed_set(f, &f.members, values, n, False, o, written)
        written = True
    if f.excluded.n:
        _fixed_set(f, &f.excluded, values, n, True, o, written)
        written = True
    if not written:  # no constraint but validity (is_valid, folded TRUE leaves)
        memset(o, 1, n)


cdef void _narrow_decimals_into(const Flt* f, const int64_t* v, Py_ssize_t n, uint8_t* o,
                                bint and_into) noexcept nogil:
    """F_DECIMAL on decimals held as int64 (BITPACK pages, before they are widened)."""
    if f.nempty:
        memset(o, 0, n)
    else:
        range_into(DT_I64, v, n, &f.nlo, &f.nhi, o, and_into)


cdef extern from *:
    """
    /* o[i] = bit codes[i] of a 32-entry table held in one word (ANDed into o[i] with
       and_into): variable shifts, which AVX2 does eight lanes at a time; compiled twice
       on x86-64 Linux (AVX2 and baseline) with the variant chosen when the module loads. */
    #if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
    #define RC_BLOCK_CLONES __attribute__((target_clones("avx2", "default")))
    #else
    #define RC_BLOCK_CLONES
    #endif
    RC_BLOCK_CLONES static void rc_codes_word(const uint32_t* codes, Py_ssize_t n, uint32_t word, uint8_t* o,
                                              int and_into) {
        Py_ssize_t i;
        if (and_into) { for (i = 0; i < n; i++) o[i] &= (uint8_t)((word >> (codes[i] & 31)) & 1); }
        else { for (i = 0; i < n; i++) o[i] = (uint8_t)((word >> (codes[i] & 31)) & 1); }
    }
    """
    void rc_codes_word(const uint32_t* codes, Py_ssize_t n, uint32_t word, uint8_t* o, int and_into) noexcept nogil



cdef void _codes_into(const uint8_t* table, int64_t size, const uint32_t* codes, Py_ssize_t n, uint8_t* o,
                      bint and_into) noexcept nogil:
    """o[i] = table[codes[i]] (ANDed with ``and_into``); the codes are checked against
    the dictionary's size already. Up to 32 entries the table is one word."""
    cdef Py_ssize_t i
    cdef uint32_t word = 0
    cdef int64_t k
    if size <= 32:
        for k in range(size):
            word |= (<uint32_t>(table[k] != 0)) << k
        rc_codes_word(codes, n, word, o, and_into)
    elif and_into:
        for i in range(n):
            o[i] &= table[codes[i]]
    else:
        for i in range(n):
            o[i] = table[codes[i]]
