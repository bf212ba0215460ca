# What other native modules call directly (the page pipeline evaluates predicates in its
# decode pass): the range, set-membership and dictionary-lookup kernels. Raw pointers, no checks.
from libc.stdint cimport uint8_t, uint32_t, uint64_t

cpdef enum:
    DT_I8 = 0
    DT_I16 = 1
    DT_I32 = 2
    DT_I64 = 3
    DT_U8 = 4
    DT_U16 = 5
    DT_U32 = 6
    DT_U64 = 7
    DT_F64 = 8
    DT_F32 = 9

# o[i] = lo <= x[i] <= hi for n values of type ``dtype`` (a DT_* code), lo and hi
# pointing to one value of that type each (a NaN is in no interval); with and_into,
# o[i] = (o[i] != 0) & that
cdef void range_into(int dtype, const void* x, Py_ssize_t n, const void* lo, const void* hi,
                     uint8_t* o, bint and_into) noexcept nogil
# o[i] = (x[i] is one of the k sorted, distinct members) != negate, or ANDed into o[i]
cdef void member_into(int dtype, const void* x, Py_ssize_t n, const void* members, Py_ssize_t k, bint negate,
                      uint8_t* o, bint and_into) noexcept nogil
# the same for integers through member_bits' table (base, span, bits)
cdef void bits_into(int dtype, const void* x, Py_ssize_t n, uint64_t base, uint64_t span, const uint8_t* bits,
                    bint negate, uint8_t* o, bint and_into) noexcept nogil
