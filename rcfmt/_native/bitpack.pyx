"""Block bit-packing kernels: frame-of-reference (FOR) and delta on top of it.

Layout of the packed data (the normative description is in
:mod:`rcfmt.encodings.bitpack`): values are cut into blocks of ``BLOCK = 1024``.
Values of a ``T``-bit storage type (``T`` = 8, 16, 32, 64) are packed in ``T``-bit
words arranged in ``L = 1024 / T`` interleaved *lanes* (FastLanes-style transposed
layout): value ``j`` of a block sits in lane ``j % L``, row ``j // L``; each lane is a
little-endian bit stream of its ``T`` rows at ``w`` bits each; word ``k`` of lane ``l`` is
word ``k * L + l`` of the block. A full block is ``w * L`` words = ``128 * w`` bytes. The
last block, holding ``m < 1024`` values, keeps only its first
``ceil(ceil(m / L) * w / T) * L`` words.

Every row of a block is decoded by the same shifts for all ``L`` lanes, so the inner
loop over lanes is a plain C loop with loop-invariant shift counts, which GCC
vectorizes at ``-O3`` with baseline SSE2 (no ``-march=native``).

Measured decode speed (release build, 2.25 GHz AMD EPYC VM, SSE2, 16K values per call,
i.e. one page, output in L2), values/s: uint8 ~10 G, int16 ~5 G, int32 ~6 G,
int64 ~2.3 G for any width (numpy copy of the same output: 18 G, 12 G, 7.6 G, 4.3 G);
delta decode is bound by its running sum: ~1.5 G (int32), ~1.1 G (int64).

Structure (see ../shared/STYLE.md): the ``cdef ... nogil`` kernels work on raw
pointers and validate nothing; the ``def`` functions below validate every length,
width and alignment, allocate, and raise :class:`~rcfmt.errors.CorruptFileError`
(bad bytes) or ``ValueError`` (caller bugs) before any kernel runs.

Signed types are handled by the callers through unsigned views: FOR and delta use
wrapping (mod 2**T) arithmetic, which is exact for every input including the
extremes of int64.
"""
cimport cython
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy

import sys

import numpy as np
cimport numpy as cnp

from rcfmt.errors import CorruptFileError

cnp.import_array()

if sys.byteorder != "little":  # the SWAR kernels and the wire format assume it
    raise ImportError("rcfmt._native.bitpack requires a little-endian host")

__all__ = [
    "BLOCK", "packed_size",
    "for_pack", "for_pack_into", "for_unpack", "for_unpack_into", "split_into",
    "delta_range", "delta_pack", "delta_pack_into", "delta_unpack", "delta_unpack_into",
]

BLOCK = 1024

ctypedef fused uint_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


# ------------------------------------------------------------------ kernels (nogil)
# T = bits of the storage type, L = 1024 / T lanes; one row of a block is always
# L * T = 1024 bits = 128 bytes = 16 uint64 words.
#
# Decoding, chosen by measurement (gcc 12 -O3, x86-64 SSE2):
# - 32-bit values: plain loops over the 32 uint32 lanes of a row (GCC vectorizes them).
# - 8/16/64-bit values: the row is processed as 16 uint64 words ("SWAR": 8 or 4 lanes
#   per word for 8/16-bit values, whose bit fields never cross a lane boundary after
#   masking). Native uint8/uint16 loops vectorize poorly (C integer promotion; SSE2
#   has no 8-bit shifts): SWAR is 3-4x faster. Little-endian hosts only.
#
# _LANES64 is 16, but kept in a (never modified) module variable on purpose: with a
# compile-time trip count of 16, GCC -O3 completely unrolls the lane loop into scalar
# code *before* the vectorizer runs (measured 2x slower). A runtime bound keeps it a
# vectorized loop.
cdef Py_ssize_t _LANES64 = 16


@cython.cdivision(True)
cdef inline void _unpack_rows_u32(const uint32_t* p, uint32_t* out, int w, uint32_t ref,
                                  Py_ssize_t rows) noexcept nogil:
    """Decode ``rows`` rows (32 values each) of a 32-bit block: ``out = unpack(p) + ref``.
    ``p`` holds at least ``ceil(rows * w / 32) * 32`` words; ``1 <= w <= 32``."""
    cdef uint32_t mask = <uint32_t>0xFFFFFFFFu if w == 32 else <uint32_t>((<uint32_t>1 << w) - 1)
    cdef Py_ssize_t r, l, bit, sh
    cdef const uint32_t* lo
    cdef const uint32_t* hi
    cdef uint32_t* o
    for r in range(rows):
        bit = r * w
        sh = bit & 31
        lo = p + (bit >> 5) * 32
        o = out + r * 32
        if sh + w <= 32:
            for l in range(32):
                o[l] = ((lo[l] >> sh) & mask) + ref
        else:
            hi = lo + 32
            for l in range(32):
                o[l] = (((lo[l] >> sh) | (hi[l] << (32 - sh))) & mask) + ref


@cython.cdivision(True)
cdef inline void _unpack_rows_w64(const uint64_t* p, uint64_t* out, int w, int E,
                                  uint64_t ref, Py_ssize_t rows) noexcept nogil:
    """Decode ``rows`` rows of a block of ``E``-bit values (E = 8, 16 or 64) as 16
    uint64 words per row (SWAR for E < 64). ``p`` and ``out`` are 8-byte aligned,
    ``1 <= w <= E``, ``ref < 2**E``."""
    cdef Py_ssize_t L = _LANES64
    cdef int logE = 3 if E == 8 else (4 if E == 16 else 6)
    cdef uint64_t rep = 0x0101010101010101ULL if E == 8 else (0x0001000100010001ULL if E == 16 else 1)
    cdef uint64_t emask = <uint64_t>0xFFFFFFFFFFFFFFFFULL if E == 64 else ((<uint64_t>1 << E) - 1)
    cdef uint64_t m1 = emask if w == E else ((<uint64_t>1 << w) - 1)
    cdef uint64_t M = m1 * rep                            # value mask in every lane
    cdef uint64_t H = ((emask >> 1) + 1) * rep            # top bit of every lane
    cdef uint64_t R = (ref & emask) * rep                 # reference in every lane
    cdef uint64_t RL = R & ~H
    cdef uint64_t ML, MH, v
    cdef Py_ssize_t r, l, bit, sh
    cdef const uint64_t* lo
    cdef const uint64_t* hi
    cdef uint64_t* o
    for r in range(rows):
        bit = r * w
        sh = bit & (E - 1)
        lo = p + (bit >> logE) * L
        o = out + r * L
        if E == 64:
            if sh + w <= 64:
                for l in range(L):
                    o[l] = ((lo[l] >> sh) & M) + ref
            else:
                hi = lo + L
                for l in range(L):
                    o[l] = (((lo[l] >> sh) | (hi[l] << (64 - sh))) & M) + ref
        elif sh + w <= E:
            # lane-wise add without carries between lanes:
            # a + b = ((a & ~H) + (b & ~H)) ^ ((a ^ b) & H)
            for l in range(L):
                v = (lo[l] >> sh) & M
                o[l] = ((v & ~H) + RL) ^ ((v ^ R) & H)
        else:
            ML = (((<uint64_t>1 << (E - sh)) - 1) & emask) * rep  # bits coming from lo
            MH = M & ~ML                                           # bits coming from hi
            hi = lo + L
            for l in range(L):
                v = ((lo[l] >> sh) & ML) | ((hi[l] << (E - sh)) & MH)
                o[l] = ((v & ~H) + RL) ^ ((v ^ R) & H)


cdef inline void _unpack_block(const uint_t* p, uint_t* out, int w, uint_t ref,
                               Py_ssize_t rows) noexcept nogil:
    """Decode ``rows`` rows of one block (``rows * 1024 / T`` values) into ``out``.
    ``p`` is 8-byte aligned, ``out`` too unless ``uint_t`` is ``uint32_t`` (4 then)."""
    if uint_t is uint32_t:
        _unpack_rows_u32(p, out, w, ref, rows)
    else:
        _unpack_rows_w64(<const uint64_t*>p, <uint64_t*>out, w, <int>(sizeof(uint_t) * 8),
                         <uint64_t>ref, rows)


@cython.cdivision(True)
cdef inline void _pack_block(const uint_t* inp, uint_t* p, int w, uint_t ref) noexcept nogil:
    """Encode one full block of 1024 values ``(inp - ref) & mask`` into ``w * L`` words."""
    cdef Py_ssize_t T = sizeof(uint_t) * 8
    cdef Py_ssize_t L = _LANES64 if sizeof(uint_t) == 8 else 1024 // T
    cdef uint_t mask = <uint_t>(~<uint_t>0) if w == T else <uint_t>((<uint_t>1 << w) - 1)
    cdef Py_ssize_t r, l, bit, k, sh
    cdef uint_t* lo
    cdef uint_t* hi
    cdef const uint_t* i
    for r in range(T):
        bit = r * w
        k = bit // T
        sh = bit % T
        lo = p + k * L
        i = inp + r * L
        if sh == 0:  # first bits of word k: assign (no need to zero the output)
            for l in range(L):
                lo[l] = <uint_t>(i[l] - ref) & mask
        else:
            for l in range(L):
                lo[l] = lo[l] | <uint_t>(<uint_t>(<uint_t>(i[l] - ref) & mask) << sh)
        if sh + w > T:  # spills into word k + 1, which starts here
            hi = lo + L
            for l in range(L):
                hi[l] = <uint_t>(<uint_t>(i[l] - ref) & mask) >> (T - sh)


@cython.cdivision(True)
cdef inline Py_ssize_t _tail_words(Py_ssize_t m, int w, Py_ssize_t T) noexcept nogil:
    """Words kept of a last block holding ``m`` (1..1023) values."""
    cdef Py_ssize_t L = 1024 // T
    cdef Py_ssize_t rows = (m + L - 1) // L
    return ((rows * w + T - 1) // T) * L


@cython.cdivision(True)
cdef void _for_unpack(const uint_t* p, Py_ssize_t n, int w, uint_t ref,
                      uint_t* out) noexcept nogil:
    """Decode ``n`` values (``p`` 8-byte aligned, ``out`` aligned to its itemsize)."""
    cdef Py_ssize_t T = sizeof(uint_t) * 8
    cdef Py_ssize_t L = 1024 // T
    cdef Py_ssize_t nfull = n // 1024
    cdef Py_ssize_t m = n % 1024
    cdef Py_ssize_t b, i
    cdef uint64_t tmpbuf[1024]  # 8-byte aligned scratch block
    cdef uint_t* tmp = <uint_t*>tmpbuf
    # the SWAR kernels store whole uint64 words: 8/16-bit output must be 8-aligned
    cdef bint direct = uint_t is uint32_t or (<uintptr_t>out) % 8 == 0
    if w == 0:
        for i in range(n):
            out[i] = ref
        return
    for b in range(nfull):
        if direct:
            _unpack_block(p + b * w * L, out + b * 1024, w, ref, T)
        else:
            _unpack_block(p + b * w * L, tmp, w, ref, T)
            memcpy(out + b * 1024, tmp, 1024 * sizeof(uint_t))
    if m:
        _unpack_block(p + nfull * w * L, tmp, w, ref, (m + L - 1) // L)
        memcpy(out + nfull * 1024, tmp, m * sizeof(uint_t))


@cython.cdivision(True)
cdef void _for_pack(const uint_t* inp, Py_ssize_t n, int w, uint_t ref,
                    uint_t* p) noexcept nogil:
    cdef Py_ssize_t T = sizeof(uint_t) * 8
    cdef Py_ssize_t L = 1024 // T
    cdef Py_ssize_t nfull = n // 1024
    cdef Py_ssize_t m = n % 1024
    cdef Py_ssize_t b, i
    cdef uint_t tmp[1024]
    cdef uint_t packed[1024]  # w * L <= T * L = 1024 words
    if w == 0:
        return
    for b in range(nfull):
        _pack_block(inp + b * 1024, p + b * w * L, w, ref)
    if m:
        memcpy(tmp, inp + nfull * 1024, m * sizeof(uint_t))
        for i in range(m, 1024):
            tmp[i] = ref
        _pack_block(tmp, packed, w, ref)
        memcpy(p + nfull * w * L, packed, _tail_words(m, w, T) * sizeof(uint_t))


cdef inline void _prefix_sum(uint_t* x, Py_ssize_t n, uint_t* acc) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint_t a = acc[0]
    for i in range(n):
        a = a + x[i]
        x[i] = a
    acc[0] = a


@cython.cdivision(True)
cdef void _delta_unpack(const uint_t* p, Py_ssize_t n, int w, uint_t first, uint_t ref,
                        uint_t* out) noexcept nogil:
    """``out[i] = out[i-1] + ref + u[i]`` with ``out[-1] = first - ref`` (so ``u[0] = 0``
    gives ``out[0] = first``). Block by block, so the prefix sum runs in L1."""
    cdef Py_ssize_t T = sizeof(uint_t) * 8
    cdef Py_ssize_t L = 1024 // T
    cdef Py_ssize_t nfull = n // 1024
    cdef Py_ssize_t m = n % 1024
    cdef Py_ssize_t b, i
    cdef uint_t acc = <uint_t>(first - ref)
    cdef uint64_t tmpbuf[1024]
    cdef uint_t* tmp = <uint_t*>tmpbuf
    cdef bint direct = uint_t is uint32_t or (<uintptr_t>out) % 8 == 0
    if w == 0:
        for i in range(n):
            acc = <uint_t>(acc + ref)
            out[i] = acc
        return
    for b in range(nfull):
        if direct:
            _unpack_block(p + b * w * L, out + b * 1024, w, ref, T)
            _prefix_sum(out + b * 1024, 1024, &acc)
        else:
            _unpack_block(p + b * w * L, tmp, w, ref, T)
            _prefix_sum(tmp, 1024, &acc)
            memcpy(out + b * 1024, tmp, 1024 * sizeof(uint_t))
    if m:
        _unpack_block(p + nfull * w * L, tmp, w, ref, (m + L - 1) // L)
        _prefix_sum(tmp, m, &acc)
        memcpy(out + nfull * 1024, tmp, m * sizeof(uint_t))


@cython.cdivision(True)
cdef void _delta_pack(const uint_t* x, Py_ssize_t n, int w, uint_t ref,
                      uint_t* p) noexcept nogil:
    """Pack ``u[0] = 0``, ``u[i] = x[i] - x[i-1] - ref`` (wrapping)."""
    cdef Py_ssize_t T = sizeof(uint_t) * 8
    cdef Py_ssize_t L = 1024 // T
    cdef Py_ssize_t nfull = n // 1024
    cdef Py_ssize_t m = n % 1024
    cdef Py_ssize_t b, i, start, cnt
    cdef uint_t tmp[1024]
    cdef uint_t packed[1024]
    if w == 0 or n == 0:
        return
    for b in range(nfull + (m > 0)):
        start = b * 1024
        cnt = 1024 if b < nfull else m
        if start == 0:
            tmp[0] = 0
        else:
            tmp[0] = <uint_t>(<uint_t>(x[start] - x[start - 1]) - ref)
        for i in range(1, cnt):
            tmp[i] = <uint_t>(<uint_t>(x[start + i] - x[start + i - 1]) - ref)
        for i in range(cnt, 1024):
            tmp[i] = 0
        if b < nfull:
            _pack_block(tmp, p + b * w * L, w, 0)
        else:
            _pack_block(tmp, packed, w, 0)
            memcpy(p + nfull * w * L, packed, _tail_words(m, w, T) * sizeof(uint_t))


cdef void _delta_range(const uint_t* x, Py_ssize_t n, uint_t* dmin, uint_t* dmax) noexcept nogil:
    """Min and max of ``x[i] - x[i-1]`` (wrapping), compared as *signed* T-bit ints.

    Signed comparison is done on values with the sign bit flipped (``a ^ S``), which
    orders two's complement numbers like unsigned ones. Requires ``n >= 2``."""
    cdef uint_t S = <uint_t>(<uint_t>1 << (sizeof(uint_t) * 8 - 1))
    cdef uint_t lo = <uint_t>(~<uint_t>0)
    cdef uint_t hi = 0
    cdef uint_t d
    cdef Py_ssize_t i
    for i in range(1, n):
        d = <uint_t>(<uint_t>(x[i] - x[i - 1]) ^ S)
        lo = d if d < lo else lo
        hi = d if d > hi else hi
    dmin[0] = lo ^ S
    dmax[0] = hi ^ S


# ------------------------------------------------------------------ validation helpers
# The def functions below are called once per page: their checks use the numpy C API
# and C arithmetic (no Python attribute lookups) to keep the per-call cost ~1 us.

cdef Py_ssize_t _MAX_COUNT = (<Py_ssize_t>1) << 56  # 8 * count + 128 cannot overflow


@cython.cdivision(True)
cdef inline Py_ssize_t _packed_nbytes(Py_ssize_t n, int width, int itemsize) noexcept nogil:
    """Bytes of ``n`` (0 <= n <= _MAX_COUNT) values at ``width`` (0..8*itemsize) bits."""
    cdef Py_ssize_t T = itemsize * 8
    cdef Py_ssize_t L = 1024 // T
    cdef Py_ssize_t m = n % 1024
    cdef Py_ssize_t size = (n // 1024) * 128 * width
    if m:
        size += (((m + L - 1) // L) * width + T - 1) // T * 128
    return size


def packed_size(Py_ssize_t n, int width, int itemsize):
    """Bytes of ``n`` values packed at ``width`` bits with ``itemsize``-byte lanes."""
    if itemsize != 1 and itemsize != 2 and itemsize != 4 and itemsize != 8:
        raise ValueError(f"itemsize must be 1, 2, 4 or 8, got {itemsize}")
    if not 0 <= n <= _MAX_COUNT:
        raise ValueError(f"value count {n} out of range")
    if not 0 <= width <= 8 * itemsize:
        raise ValueError(f"bit width {width} out of range 0..{8 * itemsize}")
    return _packed_nbytes(n, width, itemsize)


cdef cnp.ndarray _int_array(object arr, str what, bint writable):
    """Check that ``arr`` is a 1-D, C-contiguous, native-order, itemsize-aligned numpy
    array of 1/2/4/8-byte integers (or datetime64/timedelta64) and return it; read-only
    inputs that are not contiguous or aligned are copied. Caller errors raise
    TypeError/ValueError."""
    if not cnp.PyArray_Check(arr):
        raise TypeError(f"{what} must be a numpy array, got {type(arr).__name__}")
    cdef cnp.ndarray a = <cnp.ndarray>arr
    cdef int typenum = cnp.PyArray_TYPE(a)
    cdef Py_ssize_t itemsize = cnp.PyArray_ITEMSIZE(a)
    if cnp.PyArray_NDIM(a) != 1:
        raise ValueError(f"{what} must be 1-D, got {cnp.PyArray_NDIM(a)}-D")
    if not (cnp.PyTypeNum_ISINTEGER(typenum) or typenum == cnp.NPY_DATETIME
            or typenum == cnp.NPY_TIMEDELTA) or itemsize not in (1, 2, 4, 8):
        raise TypeError(f"{what} must hold 1/2/4/8-byte integers, got {a.dtype}")
    if not cnp.PyArray_ISNOTSWAPPED(a):
        raise ValueError(f"{what} must be in native byte order")
    if not (cnp.PyArray_IS_C_CONTIGUOUS(a) and (<uintptr_t>cnp.PyArray_DATA(a)) % itemsize == 0):
        if writable:
            raise ValueError(f"{what} must be C-contiguous and aligned to its itemsize")
        a = np.ascontiguousarray(a).copy()
    if writable and not cnp.PyArray_ISWRITEABLE(a):
        raise ValueError(f"{what} is read-only")
    return a


cdef uint64_t _ref_bits(object ref, int itemsize, str what) except? 0xFFFFFFFFFFFFFFFF:
    """``ref`` (a Python/numpy int, signed or unsigned) reduced mod 2**T; ValueError if
    it fits neither the signed nor the unsigned T-bit range."""
    cdef object T = 8 * itemsize  # Python int: 1 << 64 must not overflow
    ref = int(ref)
    if not -(1 << (T - 1)) <= ref < (1 << T):
        raise ValueError(f"{what} {ref} does not fit in {T} bits")
    return <uint64_t>(ref & 0xFFFFFFFFFFFFFFFF)


cdef Py_ssize_t _check_src(const uint8_t[::1] src, Py_ssize_t offset, Py_ssize_t n, int width,
                           int itemsize, str what) except -1:
    """Validate a packed region ``src[offset:]`` against ``n`` values at ``width`` bits:
    its length must be exactly what they imply. Returns that byte count."""
    if n < 0 or n > _MAX_COUNT:
        raise CorruptFileError(f"{what}: value count {n} out of range")
    if offset < 0 or offset > src.shape[0]:
        raise CorruptFileError(f"{what}: offset {offset} outside a {src.shape[0]}-byte buffer")
    if not 0 <= width <= 8 * itemsize:
        raise CorruptFileError(
            f"{what}: bit width {width} out of range 0..{8 * itemsize} for {8 * itemsize}-bit values")
    cdef Py_ssize_t need = _packed_nbytes(n, width, itemsize)
    cdef Py_ssize_t have = src.shape[0] - offset
    if need != have:
        raise CorruptFileError(
            f"{what}: {have} bytes of packed data, expected {need} for {n} values at {width} bits")
    return need


cdef const uint8_t* _aligned_src(const uint8_t[::1] src, Py_ssize_t offset, Py_ssize_t nbytes,
                                 list keep) except? NULL:
    """Pointer to ``src[offset:offset+nbytes]``, 8-byte aligned: the kernels read whole
    uint64 words and vectorized code may use aligned loads. Misaligned input is copied
    into a buffer appended to ``keep`` (which keeps it alive)."""
    if nbytes == 0:
        return NULL
    cdef const uint8_t* p = &src[offset]
    if (<uintptr_t>p) % 8 == 0:
        return p
    buf = np.empty((nbytes + 7) // 8, dtype=np.uint64)
    keep.append(buf)
    memcpy(cnp.PyArray_DATA(buf), p, nbytes)
    return <const uint8_t*>cnp.PyArray_DATA(buf)


# ------------------------------------------------------------------ FOR bit-packing

cdef Py_ssize_t _pack_into(values, ref, int width, uint8_t[::1] dst, bint delta) except -1:
    """Validate, then run the FOR (``delta`` false) or delta packer for the values' width."""
    cdef cnp.ndarray v = _int_array(values, "values", False)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(v)
    cdef Py_ssize_t n = cnp.PyArray_DIM(v, 0)
    if not 0 <= width <= 8 * itemsize:
        raise ValueError(f"bit width {width} out of range 0..{8 * itemsize}")
    if n > _MAX_COUNT:
        raise ValueError(f"too many values ({n})")
    cdef uint64_t r = _ref_bits(ref, itemsize, "reference")
    cdef Py_ssize_t size = _packed_nbytes(n, width, itemsize)
    if dst.shape[0] < size:
        raise ValueError(f"dst holds {dst.shape[0]} bytes, {size} needed")
    if size == 0:
        return 0
    cdef uint8_t* op = &dst[0]
    if (<uintptr_t>op) % itemsize:
        raise ValueError("dst is not aligned to the value itemsize")
    cdef const void* ip = cnp.PyArray_DATA(v)
    with nogil:
        if itemsize == 1:
            if delta:
                _delta_pack(<const uint8_t*>ip, n, width, <uint8_t>r, <uint8_t*>op)
            else:
                _for_pack(<const uint8_t*>ip, n, width, <uint8_t>r, <uint8_t*>op)
        elif itemsize == 2:
            if delta:
                _delta_pack(<const uint16_t*>ip, n, width, <uint16_t>r, <uint16_t*>op)
            else:
                _for_pack(<const uint16_t*>ip, n, width, <uint16_t>r, <uint16_t*>op)
        elif itemsize == 4:
            if delta:
                _delta_pack(<const uint32_t*>ip, n, width, <uint32_t>r, <uint32_t*>op)
            else:
                _for_pack(<const uint32_t*>ip, n, width, <uint32_t>r, <uint32_t*>op)
        else:
            if delta:
                _delta_pack(<const uint64_t*>ip, n, width, r, <uint64_t*>op)
            else:
                _for_pack(<const uint64_t*>ip, n, width, r, <uint64_t*>op)
    return size


cdef bytes _pack_bytes(values, ref, int width, bint delta):
    cdef cnp.ndarray v = _int_array(values, "values", False)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(v)
    if not 0 <= width <= 8 * itemsize:
        raise ValueError(f"bit width {width} out of range 0..{8 * itemsize}")
    buf = np.empty(_packed_nbytes(cnp.PyArray_DIM(v, 0), width, itemsize) // 8, dtype=np.uint64)
    _pack_into(v, ref, width, buf.view(np.uint8), delta)
    return buf.tobytes()


def for_pack_into(values, ref, int width, uint8_t[::1] dst):
    """Pack ``(values - ref) mod 2**T`` at ``width`` bits into ``dst[:size]``; return
    ``size = packed_size(len(values), width, itemsize)``.

    ``values``: 1-D integer array (signed or unsigned, 1/2/4/8 bytes; T = 8 * itemsize);
    ``ref``: int (signed or unsigned). Every ``values - ref`` must fit in ``width`` bits:
    higher bits are dropped. ``dst`` must be aligned to the itemsize."""
    return _pack_into(values, ref, width, dst, False)


cdef void _split(const uint8_t* ip, int itemsize, Py_ssize_t n, int width, uint64_t r, uint8_t* op) noexcept nogil:
    cdef Py_ssize_t i
    cdef int k
    cdef uint64_t u
    for i in range(n):
        if itemsize == 1:
            u = ip[i]
        elif itemsize == 2:
            u = (<const uint16_t*>ip)[i]
        elif itemsize == 4:
            u = (<const uint32_t*>ip)[i]
        else:
            u = (<const uint64_t*>ip)[i]
        u -= r  # mod 2**64: its low T bits are (v - ref) mod 2**T
        for k in range(width):
            op[k * n + i] = <uint8_t>(u >> (8 * k))


def split_into(values, ref, int width, uint8_t[::1] dst, Py_ssize_t offset=0):
    """BYTE_SPLIT's planes: write ``(values - ref) mod 2**T`` as ``width`` byte planes
    of ``len(values)`` bytes each (plane ``k``: byte ``k`` of every value) at
    ``dst[offset:]``. ``values``: 1-D integer array (1/2/4/8 bytes, T = 8 * itemsize);
    ``ref``: int in the values' type; ``width <= itemsize``."""
    cdef cnp.ndarray v = _int_array(values, "values", False)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(v)
    cdef Py_ssize_t n = cnp.PyArray_DIM(v, 0)
    if not 0 <= width <= itemsize:
        raise ValueError(f"byte width {width} out of range 0..{itemsize}")
    cdef uint64_t r = _ref_bits(ref, itemsize, "reference")
    if offset < 0 or dst.shape[0] - offset < width * n:
        raise ValueError(f"dst holds {dst.shape[0] - offset} bytes after {offset}, {width * n} needed")
    if n == 0 or width == 0:
        return
    cdef const uint8_t* ip = <const uint8_t*>cnp.PyArray_DATA(v)
    cdef uint8_t* op = &dst[offset]
    with nogil:
        _split(ip, itemsize, n, width, r, op)


def for_pack(values, ref, int width):
    """Like :func:`for_pack_into` but returns new ``bytes``."""
    return _pack_bytes(values, ref, width, False)


cdef int _for_unpack_checked(const uint8_t[::1] src, Py_ssize_t offset, Py_ssize_t nbytes,
                             Py_ssize_t n, int width, uint64_t r, cnp.ndarray o) except -1:
    """Run the FOR decoder once ``src``, ``width``, ``n`` and ``o`` are validated."""
    cdef int itemsize = cnp.PyArray_ITEMSIZE(o)
    if n == 0:
        return 0
    keep = []
    cdef const uint8_t* ip = _aligned_src(src, offset, nbytes, keep)
    cdef void* op = cnp.PyArray_DATA(o)
    with nogil:
        unpack_raw(ip, n, width, itemsize, r, 0, False, op)
    return 0


def for_unpack_into(const uint8_t[::1] src, Py_ssize_t n, int width, ref, out,
                    Py_ssize_t offset=0):
    """Decode ``n`` values packed at ``width`` bits from ``src[offset:]`` into
    ``out[:n]``, adding ``ref`` mod 2**T (T = 8 * out.itemsize).

    ``src[offset:]`` must be exactly ``packed_size(n, width, out.itemsize)`` bytes, and
    ``width <= T``, else :class:`CorruptFileError`. ``out``: writable, contiguous,
    aligned 1-D integer array of at least ``n`` items (ValueError otherwise)."""
    cdef cnp.ndarray o = _int_array(out, "out", True)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(o)
    cdef Py_ssize_t nbytes = _check_src(src, offset, n, width, itemsize, "bit-packed data")
    if cnp.PyArray_DIM(o, 0) < n:
        raise ValueError(f"out holds {cnp.PyArray_DIM(o, 0)} values, {n} needed")
    _for_unpack_checked(src, offset, nbytes, n, width, _ref_bits(ref, itemsize, "reference"), o)


def for_unpack(const uint8_t[::1] src, Py_ssize_t n, int width, ref, dtype,
               Py_ssize_t offset=0):
    """Like :func:`for_unpack_into` but returns a new array of ``dtype``. The length of
    ``src`` is validated before anything is allocated."""
    dtype = np.dtype(dtype)
    cdef int itemsize = dtype.itemsize
    if dtype.kind not in "iuMm" or (itemsize != 1 and itemsize != 2 and itemsize != 4 and itemsize != 8):
        raise TypeError(f"dtype must be a 1/2/4/8-byte integer type, got {dtype}")
    cdef Py_ssize_t nbytes = _check_src(src, offset, n, width, itemsize, "bit-packed data")
    cdef uint64_t r = _ref_bits(ref, itemsize, "reference")
    out = np.empty(n, dtype=dtype)
    _for_unpack_checked(src, offset, nbytes, n, width, r, _int_array(out, "out", True))
    return out


# ------------------------------------------------------------------ delta

def delta_range(values):
    """``(min, max)`` of the consecutive differences ``values[i] - values[i-1]``
    computed mod 2**T and read as signed T-bit ints (Python ints); ``(0, 0)`` for
    fewer than 2 values."""
    cdef cnp.ndarray v = _int_array(values, "values", False)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(v)
    cdef Py_ssize_t n = cnp.PyArray_DIM(v, 0)
    if n < 2:
        return 0, 0
    cdef const void* ip = cnp.PyArray_DATA(v)
    cdef uint8_t a8, b8
    cdef uint16_t a16, b16
    cdef uint32_t a32, b32
    cdef uint64_t a64, b64
    with nogil:
        if itemsize == 1:
            _delta_range(<const uint8_t*>ip, n, &a8, &b8)
            a64, b64 = a8, b8
        elif itemsize == 2:
            _delta_range(<const uint16_t*>ip, n, &a16, &b16)
            a64, b64 = a16, b16
        elif itemsize == 4:
            _delta_range(<const uint32_t*>ip, n, &a32, &b32)
            a64, b64 = a32, b32
        else:
            _delta_range(<const uint64_t*>ip, n, &a64, &b64)
    cdef object T = 8 * itemsize
    lo, hi = int(a64), int(b64)
    half = 1 << (T - 1)
    return (lo - (1 << T) if lo >= half else lo), (hi - (1 << T) if hi >= half else hi)


def delta_pack_into(values, ref, int width, uint8_t[::1] dst):
    """Pack ``u[0] = 0``, ``u[i] = values[i] - values[i-1] - ref`` (mod 2**T) at
    ``width`` bits into ``dst``; return the bytes written. With
    ``lo, hi = delta_range(values)``, ``ref = lo`` and ``width = (hi - lo).bit_length()``
    are the smallest choice."""
    return _pack_into(values, ref, width, dst, True)


def delta_pack(values, ref, int width):
    """Like :func:`delta_pack_into` but returns new ``bytes``."""
    return _pack_bytes(values, ref, width, True)


cdef int _delta_unpack_checked(const uint8_t[::1] src, Py_ssize_t offset, Py_ssize_t nbytes,
                               Py_ssize_t n, int width, uint64_t f, uint64_t r,
                               cnp.ndarray o) except -1:
    """Run the delta decoder once ``src``, ``width``, ``n`` and ``o`` are validated."""
    cdef int itemsize = cnp.PyArray_ITEMSIZE(o)
    if n == 0:
        return 0
    keep = []
    cdef const uint8_t* ip = _aligned_src(src, offset, nbytes, keep)
    cdef void* op = cnp.PyArray_DATA(o)
    with nogil:
        unpack_raw(ip, n, width, itemsize, r, f, True, op)
    return 0


def delta_unpack_into(const uint8_t[::1] src, Py_ssize_t n, int width, first, ref, out,
                      Py_ssize_t offset=0):
    """Decode ``n`` delta-packed values from ``src[offset:]`` into ``out[:n]``:
    ``out[i] = out[i-1] + ref + u[i]`` (mod 2**T) with ``out[-1] = first - ref``.
    Same checks as :func:`for_unpack_into`."""
    cdef cnp.ndarray o = _int_array(out, "out", True)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(o)
    cdef Py_ssize_t nbytes = _check_src(src, offset, n, width, itemsize, "delta-packed data")
    if cnp.PyArray_DIM(o, 0) < n:
        raise ValueError(f"out holds {cnp.PyArray_DIM(o, 0)} values, {n} needed")
    cdef uint64_t r = _ref_bits(ref, itemsize, "reference")
    cdef uint64_t f = _ref_bits(first, itemsize, "first value")
    _delta_unpack_checked(src, offset, nbytes, n, width, f, r, o)


def delta_unpack(const uint8_t[::1] src, Py_ssize_t n, int width, first, ref, dtype,
                 Py_ssize_t offset=0):
    """Like :func:`delta_unpack_into` but returns a new array of ``dtype``."""
    dtype = np.dtype(dtype)
    cdef int itemsize = dtype.itemsize
    if dtype.kind not in "iuMm" or (itemsize != 1 and itemsize != 2 and itemsize != 4 and itemsize != 8):
        raise TypeError(f"dtype must be a 1/2/4/8-byte integer type, got {dtype}")
    cdef Py_ssize_t nbytes = _check_src(src, offset, n, width, itemsize, "delta-packed data")
    cdef uint64_t r = _ref_bits(ref, itemsize, "reference")
    cdef uint64_t f = _ref_bits(first, itemsize, "first value")
    out = np.empty(n, dtype=dtype)
    _delta_unpack_checked(src, offset, nbytes, n, width, f, r, _int_array(out, "out", True))
    return out


# ------------------------------------------------------------------ for other native modules

cdef Py_ssize_t packed_nbytes(Py_ssize_t n, int width, int itemsize) noexcept nogil:
    """Bytes of ``n`` values (``0 <= n <= 2**56``) packed at ``width`` bits in ``itemsize``-byte lanes."""
    return _packed_nbytes(n, width, itemsize)


cdef void unpack_raw(const uint8_t* src, Py_ssize_t n, int width, int itemsize, uint64_t ref,
                     uint64_t first, bint delta, void* out) noexcept nogil:
    """FOR (``delta`` false) or delta decode of ``n`` values into ``out``. The caller has
    checked everything: ``src`` 8-byte aligned and exactly ``packed_nbytes`` long,
    ``width <= 8 * itemsize``, ``out`` aligned to ``itemsize`` and ``n`` items long."""
    if n == 0:
        return
    if itemsize == 1:
        if delta:
            _delta_unpack(<const uint8_t*>src, n, width, <uint8_t>first, <uint8_t>ref, <uint8_t*>out)
        else:
            _for_unpack(<const uint8_t*>src, n, width, <uint8_t>ref, <uint8_t*>out)
    elif itemsize == 2:
        if delta:
            _delta_unpack(<const uint16_t*>src, n, width, <uint16_t>first, <uint16_t>ref, <uint16_t*>out)
        else:
            _for_unpack(<const uint16_t*>src, n, width, <uint16_t>ref, <uint16_t*>out)
    elif itemsize == 4:
        if delta:
            _delta_unpack(<const uint32_t*>src, n, width, <uint32_t>first, <uint32_t>ref, <uint32_t*>out)
        else:
            _for_unpack(<const uint32_t*>src, n, width, <uint32_t>ref, <uint32_t*>out)
    else:
        if delta:
            _delta_unpack(<const uint64_t*>src, n, width, first, ref, <uint64_t*>out)
        else:
            _for_unpack(<const uint64_t*>src, n, width, ref, <uint64_t*>out)


cdef void pack64_raw(const uint64_t* inp, Py_ssize_t n, int width, uint64_t ref, uint8_t* out) noexcept nogil:
    """FOR-pack ``n`` 64-bit values ``(v - ref) mod 2**64`` at ``width`` bits into ``out``
    (8-byte aligned, ``packed_nbytes(n, width, 8)`` long). The caller checked the width."""
    if n:
        _for_pack(inp, n, width, ref, <uint64_t*>out)


cdef void split_raw(const uint8_t* inp, int itemsize, Py_ssize_t n, int width, uint64_t ref,
                    uint8_t* out) noexcept nogil:
    """BYTE_SPLIT's ``width`` planes of ``n`` values of ``itemsize`` bytes at ``out``
    (``width * n`` bytes). The caller checked the width."""
    if n and width:
        _split(inp, itemsize, n, width, ref, out)
