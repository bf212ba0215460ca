# CRC-32 for other native modules (rcfmt/_native/checksum.pyx): zlib's crc32(p[:n], crc).
from libc.stdint cimport uint8_t, uint32_t

cdef uint32_t crc32_raw(const uint8_t* p, size_t n, uint32_t crc) noexcept nogil
