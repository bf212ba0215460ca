# Byte strings compared in memcmp order (a proper prefix sorts first): the order of
# rcfmt's string statistics, dictionaries and sets. Header-only: no module of its own.
from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcmp


cdef inline int bytes_cmp(const uint8_t* a, int64_t an, const uint8_t* b, int64_t bn) noexcept nogil:
    """<0, 0 or >0 as ``a`` sorts before, with or after ``b``."""
    cdef int c = memcmp(a, b, an if an < bn else bn) if an and bn else 0
    if c:
        return c
    return (an > bn) - (an < bn)
