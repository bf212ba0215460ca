# Gathers of the block executor (rcfmt/_native/gather.pyx): a dictionary's entries at
# codes, a page's rows at wanted positions, validity at positions, and a decoded column
# compacted to the rows a filter picked.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t

from rcfmt._native.column cimport Col

cdef int _gather_fixed(const uint8_t* dvalues, const uint32_t* codes, int64_t rows, int width,
                       uint8_t* out) noexcept nogil
cdef int _gather_varbinary(Col* col, const uint8_t* d, const uint32_t* codes, int64_t rows) noexcept nogil
cdef void _gather_rows(const uint8_t* page, int64_t first, const int64_t* sel, Py_ssize_t j0, Py_ssize_t j1,
                       int size, uint8_t* out) noexcept nogil
cdef int64_t _gather_validity(const uint8_t* full, const int64_t* sel, int64_t nsel, uint8_t* out) noexcept nogil
cdef void _pack_bits(uint8_t* v, int64_t rows) noexcept nogil
cdef void _widen_decimals(uint8_t* values, int64_t rows) noexcept nogil
cdef void _gather_in_place(uint8_t* v, const int64_t* pos, int64_t n, int size) noexcept nogil
cdef int _own_arena(Col* col, int64_t vbytes, int64_t rows, int64_t* r) noexcept nogil
cdef int _dictionary_values(Col* col, const int64_t* pos, int64_t n, int64_t* r) noexcept nogil
cdef int _compact(Col* col, const int64_t* pos, int64_t n, int64_t* r) noexcept nogil
cdef int _compact_in_place(Col* col, const int64_t* pos, int64_t n, int64_t* r) noexcept nogil
