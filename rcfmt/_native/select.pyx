"""Row masks from dictionary codes: a leaf evaluated once per dictionary entry becomes
a mask per row with one GIL-free lookup that also decides null rows (numpy needs a
``take``, which first casts uint32 codes to intp, then a ``where``)."""
from libc.stdint cimport uint8_t, uint32_t

__all__ = ["codes_mask"]


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
