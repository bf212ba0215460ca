"""Selection kernels, GIL-free, one pass each.

* :func:`codes_mask`: a leaf evaluated once per dictionary entry becomes a mask per row,
  null rows decided in the same pass (numpy needs a ``take``, which first casts uint32
  codes to intp, then a ``where``).
* :func:`count_runs`, :func:`mask_runs`: the runs of True of a row mask, which decide
  and build a selection's row ranges (numpy needs a ``diff`` and two ``flatnonzero``).
* :func:`sparse_positions`: for a few selected rows, the pages to decode and where each
  row lands among their values (a dozen numpy calls on a handful of rows cost ~60 µs).
"""
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

cimport numpy as cnp
import numpy as np

cnp.import_array()

__all__ = ["codes_mask", "count_runs", "mask_runs", "sparse_positions"]


cdef Py_ssize_t _lookup(const uint8_t* t, uint32_t size, const uint32_t* c, const uint8_t* v, uint8_t nv,
                        Py_ssize_t n, uint8_t* o) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint32_t code
    if v == NULL:
        for i in range(n):
            code = c[i]
            if code >= size:
                return i
            o[i] = t[code]
        return -1
    for i in range(n):
        code = c[i]
        if not v[i]:
            o[i] = nv  # a null row's code is arbitrary
        elif code >= size:
            return i
        else:
            o[i] = t[code]
    return -1


def codes_mask(const uint8_t[::1] table, const uint32_t[::1] codes, const uint8_t[::1] valid, bint null_value,
               uint8_t[::1] out):
    """``out[i] = table[codes[i]]`` (bool bytes), or ``null_value`` where ``valid`` (bool
    bytes, one per row; None: no nulls) is 0. Returns -1, or the first valid row whose
    code is outside the table (``out`` is then partly written)."""
    cdef Py_ssize_t n = codes.shape[0], bad
    if out.shape[0] < n or (valid is not None and valid.shape[0] < n):
        raise ValueError("out and valid need one entry per code")
    if n == 0:
        return -1
    cdef const uint8_t* t = &table[0] if table.shape[0] else NULL
    cdef const uint8_t* v = &valid[0] if valid is not None else NULL
    cdef uint32_t size = <uint32_t>min(<Py_ssize_t>table.shape[0], <Py_ssize_t>0xFFFFFFFF)
    with nogil:
        bad = _lookup(t, size, &codes[0], v, 1 if null_value else 0, n, &out[0])
    return bad


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
