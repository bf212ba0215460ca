"""Kernels for bitmap-index entries (docs/FORMAT.md section 6b), GIL-free.

* :func:`locate`: walk ``count`` bitmap containers from a position, checking each form
  and payload length, into ``(form, payload offset, payload length)`` records.
* :func:`union_into`: OR containers (records from :func:`locate`) into a bitmap of
  uint64 words, checking their contents: dense bits past the block's rows, positions
  not ascending or past the rows, runs empty, overlapping or past the rows.
* :func:`popcount`: set bits of a word array.
* :func:`equality_containers`: the writer's side, every key's container of an
  equality index from the rows' key codes, in two passes.

Errors are returned as codes (``ERR_*``) for the caller to raise; nothing is read
outside the buffer given.
"""
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy as np
cimport numpy as cnp

cnp.import_array()

__all__ = ["locate", "union_into", "popcount", "equality_containers", "OK", "ERR_TRUNCATED", "ERR_DENSE_LENGTH", "ERR_PAYLOAD_LENGTH",
           "ERR_FORM", "ERR_DENSE_TAIL", "ERR_POSITIONS", "ERR_RUNS"]

cdef enum:
    C_OK = 0
    C_TRUNCATED = 1
    C_DENSE_LENGTH = 2
    C_PAYLOAD_LENGTH = 3
    C_FORM = 4
    C_DENSE_TAIL = 5
    C_POSITIONS = 6
    C_RUNS = 7

OK = C_OK
ERR_TRUNCATED = C_TRUNCATED
ERR_DENSE_LENGTH = C_DENSE_LENGTH
ERR_PAYLOAD_LENGTH = C_PAYLOAD_LENGTH
ERR_FORM = C_FORM
ERR_DENSE_TAIL = C_DENSE_TAIL
ERR_POSITIONS = C_POSITIONS
ERR_RUNS = C_RUNS

cdef extern from *:
    """
    #include <stdint.h>
    static inline int rc_popcount64(uint64_t x) { return __builtin_popcountll(x); }
    """
    int rc_popcount64(uint64_t x) nogil


cdef inline uint32_t _u32(const uint8_t* p) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, p, 4)
    return v  # (little-endian hosts only, as the rest of the native layer)


def locate(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t count, int64_t rows, int64_t[:, ::1] out):
    """Fill ``out[:count]`` with ``(form, payload offset, payload length)``; returns
    ``(code, end position)``."""
    cdef Py_ssize_t n = buf.shape[0], i
    cdef int64_t dense = (rows + 7) >> 3
    cdef uint8_t form
    cdef uint32_t length
    cdef int code = C_OK
    with nogil:
        for i in range(count):
            if pos + 5 > n:
                code = C_TRUNCATED
                break
            form = buf[pos]
            length = _u32(&buf[pos + 1])
            pos += 5
            if <int64_t>length > <int64_t>(n - pos):
                code = C_TRUNCATED
                break
            if form == 0:
                if length != dense:
                    code = C_DENSE_LENGTH
                    break
            elif form == 1:
                if length & 3:
                    code = C_PAYLOAD_LENGTH
                    break
            elif form == 2:
                if length & 7:
                    code = C_PAYLOAD_LENGTH
                    break
            else:
                code = C_FORM
                break
            out[i, 0] = form
            out[i, 1] = pos
            out[i, 2] = length
            pos += length
    return code, pos


cdef int _union(const uint8_t[::1] buf, const int64_t[:, ::1] records, int64_t rows,
                uint64_t[::1] out) noexcept nogil:
    cdef Py_ssize_t r, k
    cdef int64_t form, off, length, count, p, prev, start, end, nbytes = (rows + 7) >> 3
    cdef uint8_t* bits = <uint8_t*>&out[0] if out.shape[0] else NULL
    cdef const uint8_t* src
    cdef uint64_t w
    cdef int tail = rows & 7
    for r in range(records.shape[0]):
        form = records[r, 0]
        off = records[r, 1]
        length = records[r, 2]
        if off < 0 or length < 0 or off + length > buf.shape[0]:
            return C_TRUNCATED
        src = &buf[off] if length else NULL
        if form == 0:
            if length != nbytes:
                return C_DENSE_LENGTH
            if tail and length and (src[length - 1] >> tail):
                return C_DENSE_TAIL
            k = 0
            while k + 8 <= length:
                memcpy(&w, src + k, 8)
                out[k >> 3] |= w
                k += 8
            while k < length:
                bits[k] |= src[k]
                k += 1
        elif form == 1:
            count = length >> 2
            prev = -1
            for k in range(count):
                p = _u32(src + 4 * k)
                if p <= prev or p >= rows:
                    return C_POSITIONS
                out[p >> 6] |= (<uint64_t>1) << (p & 63)
                prev = p
        elif form == 2:
            count = length >> 3
            prev = 0
            for k in range(count):
                start = _u32(src + 8 * k)
                end = start + _u32(src + 8 * k + 4)
                if end <= start or start < prev or end > rows:
                    return C_RUNS
                prev = end
                while start < end and (start & 63):
                    out[start >> 6] |= (<uint64_t>1) << (start & 63)
                    start += 1
                while start + 64 <= end:
                    out[start >> 6] = 0xFFFFFFFFFFFFFFFFULL
                    start += 64
                while start < end:
                    out[start >> 6] |= (<uint64_t>1) << (start & 63)
                    start += 1
        else:
            return C_FORM
    return C_OK


def union_into(const uint8_t[::1] buf, const int64_t[:, ::1] records, int64_t rows, uint64_t[::1] out):
    """OR the containers ``records`` into ``out`` (``(rows + 63) // 64`` words);
    returns an ``ERR_*`` code (``OK``: all of them valid)."""
    cdef int code
    if out.shape[0] != (rows + 63) >> 6:
        raise ValueError("out has the wrong number of words")
    if records.shape[0] and records.shape[1] != 3:
        raise ValueError("records must be (n, 3)")
    with nogil:
        code = _union(buf, records, rows, out)
    return code


def popcount(const uint64_t[::1] words) -> int:
    cdef Py_ssize_t i
    cdef int64_t total = 0
    with nogil:
        for i in range(words.shape[0]):
            total += rc_popcount64(words[i])
    return total


def slices_compare(const uint64_t[:, ::1] slices, const uint64_t[::1] numbers, uint64_t c, uint64_t[::1] lt,
                   uint64_t[::1] eq):
    """Bit-sliced comparison with the constant ``c`` (O'Neil and Quass): ``lt`` = rows
    of ``numbers`` whose value (slice ``j`` = bit ``j``) is below ``c``, ``eq`` = those
    equal to it. Slice by slice from the highest, each a straight (vectorizable) pass."""
    cdef Py_ssize_t i, nwords = numbers.shape[0]
    cdef int j, w = slices.shape[0]
    cdef uint64_t* l
    cdef uint64_t* e
    cdef const uint64_t* sp
    if lt.shape[0] != nwords or eq.shape[0] != nwords or (w and slices.shape[1] != nwords):
        raise ValueError("word counts differ")
    if w > 64:
        raise ValueError("at most 64 slices")
    if nwords == 0:
        return
    l = &lt[0]
    e = &eq[0]
    with nogil:
        for i in range(nwords):
            l[i] = 0
            e[i] = numbers[i]
        for j in range(w - 1, -1, -1):
            sp = &slices[j, 0]
            if (c >> j) & 1:
                for i in range(nwords):
                    l[i] |= e[i] & ~sp[i]
                    e[i] &= sp[i]
            else:
                for i in range(nwords):
                    e[i] &= ~sp[i]


def decode_rows(const uint8_t[::1] buf, const int64_t[:, ::1] records, int64_t rows, uint64_t[:, ::1] out):
    """Decode container ``i`` of ``records`` into row ``i`` of ``out`` (zeroed, ``(n,
    (rows + 63) // 64)``): every bitmap of an entry in one call. Returns the ``ERR_*``
    code of the first bad container (``OK``: all valid)."""
    cdef Py_ssize_t i, n = records.shape[0]
    cdef int code = C_OK
    if out.shape[0] != n or (n and out.shape[1] != (rows + 63) >> 6):
        raise ValueError("out has the wrong shape")
    with nogil:
        for i in range(n):
            code = _union(buf, records[i : i + 1, :], rows, out[i, :])
            if code != C_OK:
                break
    return code


# ------------------------------------------------------------------ writing equality bitmaps
cdef enum:
    FORM_DENSE = 0
    FORM_POSITIONS = 1
    FORM_RUNS = 2
    CONTAINER_HEAD = 5  # form (u8), payload length (u32)


cdef inline int _form(int64_t rows, int64_t k, int64_t runs, bint mask_rule) noexcept nogil:
    """The container of a key with ``k`` rows in ``runs`` runs: the smallest of dense
    bits, u32 positions and u32 runs (ties in that order: positions, runs, dense); with
    ``mask_rule`` a sparse form only where positions or runs beat a quarter of the dense
    size first (as ``format.bitmap_index.encode_mask`` decides)."""
    cdef int64_t dense = (rows + 7) >> 3, best
    if mask_rule and not (4 * k < dense or (k and rows > 1 and 8 * runs < dense)):
        return FORM_DENSE
    best = min(dense, min(4 * k, 8 * runs))
    if best == 4 * k:
        return FORM_POSITIONS
    if best == 8 * runs:
        return FORM_RUNS
    return FORM_DENSE


cdef void _dense_bits(const int64_t* codes, Py_ssize_t rows, int64_t key, uint8_t* out) noexcept nogil:
    """Bit ``i`` of ``out`` (LSB first) set where ``codes[i] == key``."""
    cdef Py_ssize_t g, t, full = rows >> 3
    cdef uint8_t b
    for g in range(full):
        b = 0
        for t in range(8):
            b |= <uint8_t>((codes[8 * g + t] == key) << t)
        out[g] = b
    if rows & 7:
        b = 0
        for t in range(rows & 7):
            b |= <uint8_t>((codes[8 * full + t] == key) << t)
        out[full] = b


def equality_containers(const int64_t[::1] codes, Py_ssize_t keys, Py_ssize_t implied, bint mask_rule):
    """The bitmap containers of an equality index: for each key ``0 .. keys - 1`` but
    ``implied`` (-1: none), the rows whose code is that key, as the smallest container
    (see :func:`_form`), in two passes over ``codes`` (-1 for rows of no key). Returns
    ``(bytes, offsets)``: the containers back to back and where each starts (one
    offset per key written, plus the end)."""
    cdef Py_ssize_t rows = codes.shape[0], i, j
    if keys < 0 or keys > 0xFFFFFFF or not -1 <= implied < max(keys, 1):
        raise ValueError("bad key count or implied key")
    for i in range(rows):
        if not -1 <= codes[i] < keys:
            raise ValueError(f"code {codes[i]} outside {keys} keys")
    # (slot 0 counts the rows of no key: no branch per row)
    count_arr = np.zeros(keys + 1, np.int64)
    runs_arr = np.zeros(keys + 1, np.int64)
    cdef int64_t[::1] count1 = count_arr, runs1 = runs_arr
    cdef int64_t c, prev = -1
    with nogil:
        for i in range(rows):
            c = codes[i]
            count1[c + 1] += 1
            runs1[c + 1] += c != prev
            prev = c
    cdef int64_t[::1] count = count_arr[1:], runs = runs_arr[1:]
    cdef bint listed = False  # some key in positions or runs
    form_arr = np.empty(keys, np.int64)
    size_arr = np.empty(keys, np.int64)
    cdef int64_t[::1] form = form_arr, size = size_arr
    cdef int64_t dense = (rows + 7) >> 3
    for j in range(keys):
        form[j] = _form(rows, count[j], runs[j], mask_rule)
        listed = listed or (j != implied and form[j] != FORM_DENSE)
        size[j] = 0 if j == implied else CONTAINER_HEAD + (
            dense if form[j] == FORM_DENSE else 4 * count[j] if form[j] == FORM_POSITIONS else 8 * runs[j])
    starts_arr = np.zeros(keys + 1, np.int64)
    np.cumsum(size_arr, out=starts_arr[1:])
    out_arr = np.zeros(int(starts_arr[keys]), np.uint8)
    cursor_arr = starts_arr[:keys] + CONTAINER_HEAD
    cdef int64_t[::1] start = starts_arr, cursor = cursor_arr
    cdef uint8_t* out = <uint8_t*>cnp.PyArray_DATA(out_arr)
    cdef uint32_t v, length
    cdef uint8_t* p
    with nogil:
        for j in range(keys):
            if j == implied:
                continue
            out[start[j]] = <uint8_t>form[j]
            length = <uint32_t>(size[j] - CONTAINER_HEAD)
            memcpy(out + start[j] + 1, &length, 4)
        for j in range(keys):  # dense keys: one packing pass each (no read-modify-write chains)
            if j != implied and form[j] == FORM_DENSE:
                _dense_bits(&codes[0] if rows else NULL, rows, j, out + start[j] + CONTAINER_HEAD)
        prev = -1
        for i in range(rows if listed else 0):
            c = codes[i]
            if c >= 0 and c != implied and form[c] != FORM_DENSE:
                if form[c] == FORM_POSITIONS:
                    v = <uint32_t>i
                    memcpy(out + cursor[c], &v, 4)
                    cursor[c] += 4
                elif c != prev:  # a run starts: (start, length 1)
                    v = <uint32_t>i
                    memcpy(out + cursor[c], &v, 4)
                    v = 1
                    memcpy(out + cursor[c] + 4, &v, 4)
                    cursor[c] += 8
                else:  # the run goes on
                    p = out + cursor[c] - 4
                    memcpy(&v, p, 4)
                    v += 1
                    memcpy(p, &v, 4)
            prev = c
    kept = np.array([j for j in range(keys) if j != implied] + [keys], np.int64)
    return out_arr, starts_arr[kept]
