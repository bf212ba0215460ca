# Arrow offsets of string/binary outputs, int32 (string, binary) or int64 (large_*) as
# ``wide`` says, read and written through one pair of inline accessors: the kernels that
# build or move offsets are written once, not once per width (a loop-invariant ``wide``
# is hoisted out of their loops by the compiler). Header-only: no module of its own.
from libc.stdint cimport int32_t, int64_t

cdef enum:
    OFFSET32_MAX = 0x7FFFFFFF  # the last byte an int32 offset reaches


cdef inline void put_offset(void* offsets, bint wide, int64_t i, int64_t value) noexcept nogil:
    """Entry ``i`` of ``offsets`` set to ``value`` (which fits: see :func:`offset_fits`)."""
    if wide:
        (<int64_t*>offsets)[i] = value
    else:
        (<int32_t*>offsets)[i] = <int32_t>value


cdef inline int64_t get_offset(const void* offsets, bint wide, int64_t i) noexcept nogil:
    """Entry ``i`` of ``offsets``."""
    return (<const int64_t*>offsets)[i] if wide else (<const int32_t*>offsets)[i]


cdef inline bint offset_fits(bint wide, int64_t value) noexcept nogil:
    """Whether ``value`` (a byte position) is an offset of that width."""
    return wide or value <= OFFSET32_MAX
