"""The filter kernels' types and entry points (:mod:`rcfmt._native.filters`), for the
block executor."""
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t


cdef enum:
    F_VALUES = 1    # fixed-width values: an interval, a member set, an excluded set
    F_NULLS = 2     # is_null / is_valid: the validity alone
    F_BYTES = 3     # strings/binary: an interval of byte strings, member and excluded sets
    F_DECIMAL = 4   # 16-byte decimals: an inclusive interval of unscaled integers


cdef struct VSet:  # sorted, distinct fixed-width values (and their bit table, if any)
    bint given
    Py_ssize_t n
    const uint8_t* values
    const uint8_t* bits
    uint64_t base
    uint64_t span


cdef struct BSet:  # sorted, distinct byte strings: data and n + 1 int64 offsets
    bint given
    Py_ssize_t n
    const uint8_t* data
    const int64_t* offsets


cdef struct Flt:
    int kind
    int dtype               # F_VALUES: a DT_* code of select.pxd
    bint empty              # no row is TRUE
    bint has_range
    bint want_null          # F_NULLS: TRUE on null rows (is_null), else on valid ones
    uint64_t lo             # F_VALUES: inclusive bounds, one value of the type each
    uint64_t hi
    VSet members
    VSet excluded
    const uint8_t* blo      # F_BYTES: the bounds (NULL: none) and whether they are strict
    int64_t blo_n
    bint lo_strict
    const uint8_t* bhi
    int64_t bhi_n
    bint hi_strict
    BSet bmembers
    BSet bexcluded
    int64_t dlo_high        # F_DECIMAL: inclusive bounds as (signed high, unsigned low) words
    uint64_t dlo_low
    int64_t dhi_high
    uint64_t dhi_low
    int64_t nlo             # F_DECIMAL: the bounds for values held as int64 (BITPACK pages)
    int64_t nhi
    bint nempty


cdef class Filter:
    cdef Flt f
    cdef list hold
    cdef _values(self, spec)
    cdef _value_set(self, VSet* out, values, dtype)
    cdef _bytes(self, spec)
    cdef _byte_set(self, BSet* out, values)


cdef inline void _put(uint8_t* o, Py_ssize_t i, bint hit, bint and_into) noexcept nogil:
    """o[i] = hit (ANDed into o[i] with ``and_into``)."""
    if and_into:
        o[i] = 1 if (hit and o[i] != 0) else 0
    else:
        o[i] = 1 if hit else 0


cdef void _filter_entries(const Flt* f, int kind, const uint8_t* values, const uint8_t* data, bint wide,
                          Py_ssize_t n, uint8_t* o, bint and_into) noexcept nogil
cdef void _narrow_decimals_into(const Flt* f, const int64_t* v, Py_ssize_t n, uint8_t* o,
                                bint and_into) noexcept nogil
cdef void _codes_into(const uint8_t* table, int64_t size, const uint32_t* codes, Py_ssize_t n, uint8_t* o,
                      bint and_into) noexcept nogil
