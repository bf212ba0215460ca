# cython: language_level=3
"""Dictionary building for the writer: each value's code, in order of first appearance,
from one GIL-free pass over an open-addressing hash table.

Values are equal when their stored bytes are equal (so NaN payloads and -0.0 stay
distinct, as the format's DICTIONARY encoding requires). The result is the codes
(int32, one per row) and the row where each dictionary entry first appears; the caller
gathers the dictionary from those rows.

Kernels return the number of distinct values, or -1 when memory runs out; the wrappers
raise.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp, memcpy, memset

import numpy as np
cimport numpy as cnp

cnp.import_array()

__all__ = ["code_counts", "encode_fixed", "encode_range", "encode_varbinary"]

#: first table size (slots); the table doubles when half full
cdef Py_ssize_t _FIRST_CAPACITY = 1024


cdef inline uint64_t _mix(uint64_t x) noexcept nogil:
    """A 64-bit finalizer (every input bit affects every output bit)."""
    x ^= x >> 33
    x *= 0xff51afd7ed558ccdULL
    x ^= x >> 33
    x *= 0xc4ceb9fe1a85ec53ULL
    x ^= x >> 33
    return x


ctypedef fused word_t:
    uint32_t
    uint64_t

ctypedef fused offset_t:
    int32_t
    int64_t


cdef inline uint64_t _tail(const uint8_t* p, int64_t n) noexcept nogil:
    """The ``n`` (< 8) bytes at ``p`` as a little-endian integer."""
    cdef uint64_t w = 0
    cdef int64_t k
    for k in range(n):
        w |= (<uint64_t>p[k]) << (8 * k)
    return w


cdef struct Keys:
    int32_t* codes     # slot -> code, -1 when empty
    uint64_t* lo       # slot -> the value (its first 8 bytes)
    uint64_t* hi       # slot -> its bytes 8..15 (16-byte values only)
    Py_ssize_t mask    # capacity - 1 (capacity a power of two)


cdef int _keys_init(Keys* t, Py_ssize_t capacity, bint wide) noexcept nogil:
    t.codes = <int32_t*>malloc(capacity * sizeof(int32_t))
    t.lo = <uint64_t*>malloc(capacity * sizeof(uint64_t))
    t.hi = <uint64_t*>malloc(capacity * sizeof(uint64_t)) if wide else NULL
    if t.codes == NULL or t.lo == NULL or (wide and t.hi == NULL):
        _keys_free(t)
        return -1
    memset(t.codes, 0xFF, capacity * sizeof(int32_t))
    t.mask = capacity - 1
    return 0


cdef void _keys_free(Keys* t) noexcept nogil:
    free(t.codes)
    free(t.lo)
    free(t.hi)
    t.codes = NULL
    t.lo = NULL
    t.hi = NULL


cdef inline uint64_t _hash_key(uint64_t lo, uint64_t hi) noexcept nogil:
    return _mix(lo ^ _mix(hi + 0x9e3779b97f4a7c15ULL)) if hi else _mix(lo)


cdef int _keys_grow(Keys* t) noexcept nogil:
    """Double the table, re-inserting every key."""
    cdef Keys bigger
    cdef Py_ssize_t s, j
    cdef bint wide = t.hi != NULL
    cdef uint64_t hi
    if _keys_init(&bigger, 2 * (t.mask + 1), wide):
        return -1
    for s in range(t.mask + 1):
        if t.codes[s] >= 0:
            hi = t.hi[s] if wide else 0
            j = <Py_ssize_t>(_hash_key(t.lo[s], hi) & <uint64_t>bigger.mask)
            while bigger.codes[j] >= 0:
                j = (j + 1) & bigger.mask
            bigger.codes[j] = t.codes[s]
            bigger.lo[j] = t.lo[s]
            if wide:
                bigger.hi[j] = hi
    _keys_free(t)
    t[0] = bigger
    return 0


cdef inline int32_t _add(Keys* t, Py_ssize_t j, uint64_t lo, uint64_t hi, Py_ssize_t row, int64_t* first,
                         Py_ssize_t* count) noexcept nogil:
    """Put a new value in empty slot ``j``: its code, or -1 when growing the table ran
    out of memory (the table is then freed)."""
    cdef int32_t c = <int32_t>count[0]
    t.codes[j] = c
    t.lo[j] = lo
    if t.hi != NULL:
        t.hi[j] = hi
    first[c] = row
    count[0] += 1
    if 2 * count[0] > t.mask + 1 and _keys_grow(t):
        _keys_free(t)
        return -1
    return c


cdef Py_ssize_t _words(const uint8_t* v, Py_ssize_t n, word_t width_tag, int32_t* codes,
                       int64_t* first) noexcept nogil:
    """4- or 8-byte values (``width_tag`` only selects the type), keys kept in the table."""
    cdef Keys t
    cdef Py_ssize_t i, j, count = 0
    cdef word_t w
    cdef uint64_t key
    cdef int32_t c
    if _keys_init(&t, _FIRST_CAPACITY, False):
        return -1
    for i in range(n):
        memcpy(&w, v + i * sizeof(word_t), sizeof(word_t))
        key = <uint64_t>w
        j = <Py_ssize_t>(_mix(key) & <uint64_t>t.mask)
        while True:
            c = t.codes[j]
            if c < 0:  # a new value
                c = _add(&t, j, key, 0, i, first, &count)
                if c < 0:
                    return -1
                break
            if t.lo[j] == key:
                break
            j = (j + 1) & t.mask
        codes[i] = c
        prev = c
    _keys_free(&t)
    return count


cdef Py_ssize_t _wide(const uint8_t* v, Py_ssize_t n, int32_t* codes, int64_t* first) noexcept nogil:
    """16-byte values (decimal128) as two words, kept in the table."""
    cdef Keys t
    cdef Py_ssize_t i, j, count = 0
    cdef uint64_t lo, hi
    cdef int32_t c
    if _keys_init(&t, _FIRST_CAPACITY, True):
        return -1
    for i in range(n):
        memcpy(&lo, v + 16 * i, 8)
        memcpy(&hi, v + 16 * i + 8, 8)
        j = <Py_ssize_t>(_hash_key(lo, hi) & <uint64_t>t.mask)
        while True:
            c = t.codes[j]
            if c < 0:
                c = _add(&t, j, lo, hi, i, first, &count)
                if c < 0:
                    return -1
                break
            if t.lo[j] == lo and t.hi[j] == hi:
                break
            j = (j + 1) & t.mask
        codes[i] = c
        prev = c
    _keys_free(&t)
    return count


cdef enum:
    LONG = 0xFFFF  # Keys.hi of a value longer than 8 bytes (its lo is its hash)


cdef inline uint64_t _short_word(const uint8_t* p, int64_t n, const uint8_t* end) noexcept nogil:
    """The ``n`` (<= 8) bytes at ``p`` as a little-endian integer: one 8-byte load when
    the buffer allows it."""
    cdef uint64_t w
    if n == 8 or (n and p + 8 <= end):
        memcpy(&w, p, 8)
        return w if n == 8 else w & ((1ULL << (8 * n)) - 1)
    return _tail(p, n)


cdef inline uint64_t _hash_bytes(const uint8_t* p, int64_t n, const uint8_t* end) noexcept nogil:
    cdef uint64_t h = (<uint64_t>n) * 0x9e3779b97f4a7c15ULL, w
    cdef int64_t i = 0
    while i + 8 <= n:
        memcpy(&w, p + i, 8)
        h = (h ^ w) * 0xff51afd7ed558ccdULL
        h ^= h >> 29
        i += 8
    if i < n:
        h = (h ^ _short_word(p + i, n - i, end)) * 0xc4ceb9fe1a85ec53ULL
    return _mix(h)


cdef Py_ssize_t _varbinary(const offset_t* offsets, const uint8_t* data, Py_ssize_t size, Py_ssize_t n,
                           int32_t* codes, int64_t* first, const uint8_t* valid) noexcept nogil:
    """Strings/binary. A value of at most 8 bytes is its own key (its bytes as a word, and
    its length): compared without touching the data again. A longer value is keyed by
    its hash (placed by the same rule as a key, so growing needs no rehash of the
    bytes); equal hashes compare the bytes. ``valid`` (NULL: every row): a row whose
    byte is 0 is a null slot, whose value is no value of the column: it gets the code of
    the row before it (0, the first value's, before any) and adds no entry."""
    cdef Keys t
    cdef Py_ssize_t i, j, count = 0
    cdef uint64_t lo, hi
    cdef int32_t c, prev = 0
    cdef int64_t start, length, other
    cdef const uint8_t* end = data + size
    if _keys_init(&t, _FIRST_CAPACITY, True):
        return -1
    for i in range(n):
        if valid != NULL and not valid[i]:
            codes[i] = prev
            continue
        start = offsets[i]
        length = offsets[i + 1] - start
        if length <= 8:
            lo = _short_word(data + start, length, end)
            hi = <uint64_t>length
        else:
            lo = _hash_bytes(data + start, length, end)
            hi = LONG
        j = <Py_ssize_t>(_hash_key(lo, hi) & <uint64_t>t.mask)
        while True:
            c = t.codes[j]
            if c < 0:
                c = _add(&t, j, lo, hi, i, first, &count)
                if c < 0:
                    return -1
                break
            if t.lo[j] == lo and t.hi[j] == hi:
                if hi != LONG:
                    break
                other = offsets[first[c]]
                if offsets[first[c] + 1] - other == length and memcmp(data + other, data + start, length) == 0:
                    break
            j = (j + 1) & t.mask
        codes[i] = c
        prev = c
    _keys_free(&t)
    return count


ctypedef fused int_t:
    uint8_t
    uint16_t
    int32_t
    int64_t


cdef Py_ssize_t _range(const int_t* v, Py_ssize_t n, int64_t lo, int64_t span, int32_t* codes,
                       int64_t* first) noexcept nogil:
    """Integers within ``[lo, lo + span)``: a direct table indexed by ``value - lo`` (no
    hashing, no probing; 1- and 2-byte values take it over their whole range). -1: out
    of memory; -2: a value outside the range."""
    cdef int32_t* slot = <int32_t*>malloc(span * sizeof(int32_t))
    cdef Py_ssize_t i, count = 0
    cdef int64_t k
    if slot == NULL:
        return -1
    memset(slot, 0xFF, span * sizeof(int32_t))
    for i in range(n):
        k = <int64_t>v[i] - lo
        if k < 0 or k >= span:
            free(slot)
            return -2
        if slot[k] < 0:
            slot[k] = <int32_t>count
            first[count] = i
            count += 1
        codes[i] = slot[k]
    free(slot)
    return count


def _outputs(Py_ssize_t n):
    """The codes (int32) and first rows (int64) arrays of ``n`` values."""
    if n >= 2**31:
        raise ValueError("more than 2**31 - 1 values in one chunk")
    return np.empty(n, np.int32), np.empty(n, np.int64)


def _result(Py_ssize_t count, codes_arr, first_arr):
    """``(codes, first_rows)`` of a kernel that found ``count`` distinct values (-1: it
    ran out of memory)."""
    if count == -1:
        raise MemoryError("no memory for the dictionary's table")
    return codes_arr, first_arr[:count]


def encode_range(const int_t[::1] values, int64_t lo, int64_t hi):
    """``(codes, first_rows)`` of integers all within ``[lo, hi]`` (a span of at most
    2**26), as :func:`encode_fixed` gives them for the same values' bytes (integers are
    equal exactly when their bytes are), from a direct table instead of a hash table.
    ValueError if a value lies outside the range."""
    cdef Py_ssize_t n = values.shape[0], count = 0
    if not 0 <= hi - lo < 1 << 26:
        raise ValueError(f"range [{lo}, {hi}] is empty or too wide for a direct table")
    codes_arr, first_arr = _outputs(n)
    cdef int32_t[::1] codes = codes_arr
    cdef int64_t[::1] first = first_arr
    if n:
        with nogil:
            count = _range(&values[0], n, lo, hi - lo + 1, &codes[0], &first[0])
    if count == -2:
        raise ValueError(f"a value lies outside [{lo}, {hi}]")
    return _result(count, codes_arr, first_arr)


def encode_fixed(const uint8_t[::1] values, int width):
    """``(codes, first_rows)`` of ``len(values) // width`` fixed-width values (``width``
    1, 2, 4, 8 or 16 bytes, compared as bytes): int32 codes in order of first
    appearance, and the int64 row where each code's value first appears."""
    if width not in (1, 2, 4, 8, 16):
        raise ValueError(f"width {width} is not 1, 2, 4, 8 or 16")
    cdef Py_ssize_t n = values.shape[0] // width, count
    codes_arr, first_arr = _outputs(n)
    cdef int32_t[::1] codes = codes_arr
    cdef int64_t[::1] first = first_arr
    if n == 0:
        return codes_arr, first_arr
    with nogil:
        if width == 1:
            count = _range(&values[0], n, 0, 256, &codes[0], &first[0])
        elif width == 2:  # (little-endian hosts only, as the rest of the native layer)
            count = _range(<const uint16_t*>&values[0], n, 0, 65536, &codes[0], &first[0])
        elif width == 4:
            count = _words(&values[0], n, <uint32_t>0, &codes[0], &first[0])
        elif width == 8:
            count = _words(&values[0], n, <uint64_t>0, &codes[0], &first[0])
        else:
            count = _wide(&values[0], n, &codes[0], &first[0])
    return _result(count, codes_arr, first_arr)


def encode_varbinary(const offset_t[::1] offsets, const uint8_t[::1] data, const uint8_t[::1] valid=None):
    """``(codes, first_rows)`` of the ``len(offsets) - 1`` values ``data[offsets[i] :
    offsets[i + 1]]`` (offsets checked by the caller: non-decreasing, within ``data``).
    ``valid`` (one byte per value, at least one nonzero): null slots add no entry and
    take the code of the value before them (0 before the first)."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, count
    if n < 0:
        raise ValueError("offsets must hold at least one entry")
    if valid is not None and valid.shape[0] != n:
        raise ValueError(f"{valid.shape[0]} validity bytes for {n} values")
    codes_arr, first_arr = _outputs(n)
    cdef int32_t[::1] codes = codes_arr
    cdef int64_t[::1] first = first_arr
    cdef const uint8_t* d = &data[0] if data.shape[0] else <const uint8_t*>b""
    cdef const uint8_t* v = &valid[0] if valid is not None and n else NULL
    if n == 0:
        return codes_arr, first_arr
    with nogil:
        count = _varbinary(&offsets[0], d, data.shape[0], n, &codes[0], &first[0], v)
    return _result(count, codes_arr, first_arr)



cdef int _count(const int32_t* codes, const uint8_t* valid, Py_ssize_t n, Py_ssize_t entries,
                int64_t* counts) noexcept nogil:
    """Add each code's rows (only those with a nonzero ``valid`` byte, when given) into
    ``counts``; 1 at a code outside ``[0, entries)``, -1 out of memory. Few entries
    are counted into four interleaved tables: runs of one code (a sorted or constant
    column) would otherwise wait on each increment's store."""
    cdef Py_ssize_t i, k, lanes = 4 if entries <= 1 << 16 else 1
    cdef int64_t* t = counts
    cdef uint32_t c
    if lanes > 1:
        t = <int64_t*>calloc(lanes * entries, sizeof(int64_t))
        if t == NULL:
            return -1
    for i in range(n):
        c = <uint32_t>codes[i]
        if c >= <uint64_t>entries:
            if lanes > 1:
                free(t)
            return 1
        if valid == NULL or valid[i]:
            t[(i & (lanes - 1)) * entries + c] += 1
    if lanes > 1:
        for k in range(entries):
            counts[k] = t[k] + t[entries + k] + t[2 * entries + k] + t[3 * entries + k]
        free(t)
    return 0


def code_counts(const int32_t[::1] codes, Py_ssize_t entries, const uint8_t[::1] valid=None):
    """Rows per code (int64, ``entries`` of them) of the codes of an encode function,
    counting only rows whose ``valid`` byte is nonzero when ``valid`` is given (one per
    row): ``np.bincount(codes[valid], minlength=entries)`` without its casts and copies.
    ValueError for a code outside ``[0, entries)`` or a ``valid`` of another length."""
    cdef Py_ssize_t n = codes.shape[0]
    cdef int rc = 0
    if valid is not None and valid.shape[0] != n:
        raise ValueError(f"{valid.shape[0]} validity bytes for {n} codes")
    if entries < 0:
        raise ValueError("entries must not be negative")
    counts_arr = np.zeros(entries, np.int64)
    cdef int64_t[::1] counts = counts_arr
    if n == 0:
        return counts_arr
    if entries == 0:
        raise ValueError("a code lies outside [0, 0)")
    with nogil:
        rc = _count(&codes[0], &valid[0] if valid is not None else NULL, n, entries, &counts[0])
    if rc == -1:
        raise MemoryError("no memory to count the codes")
    if rc:
        raise ValueError(f"a code lies outside [0, {entries})")
    return counts_arr
