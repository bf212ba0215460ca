# Kernels other native modules call directly (the page pipeline).

cdef void alp_factors(int e, int f, double* a, double* b) noexcept nogil
