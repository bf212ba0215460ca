"""The page pipeline: a run of pages of one column chunk in one GIL-free pass.

:func:`read_pages` takes the bytes of a column chunk (or of any run of its pages) and,
without the GIL, parses and checks every page header, verifies both CRC-32s,
decompresses each body into one arena, checks each validity bitmap against its null
count and copies it into one Arrow-layout bitmap for the whole run. The result is a
:class:`PageRun`: a table of pages (rows, nulls, where each values body is) plus the
arena and the bitmap. :func:`decode_values` then decodes the values of every page of
a run straight into one preallocated output array (fixed-width values, or dictionary
codes), again without the GIL; :func:`read_pages` can do both in one call. Encodings
without a kernel here are decoded page by page from :meth:`PageRun.body`. The block
executor (:mod:`rcfmt._native.block`) runs the same passes, column after column, with
filters and gathers of its own; this module's ``def`` functions are the reference
decoder's (:class:`rcfmt.file.chunks.ChunkDecoder`).

Errors. The ``nogil`` passes record the first failure (what, which page, the numbers
involved) and stop; the ``def`` wrappers turn it into the same
:class:`~rcfmt.errors.CorruptFileError` / :class:`~rcfmt.errors.ChecksumError` /
:class:`~rcfmt.errors.UnsupportedError` the format layer documents, located at the
page (number and file offset). :func:`decode_values` reports the first page whose
values fail a check; the caller describes it with the encoding's own decoder.

Decompression without the GIL: the zstd and LZ4 entry points come from
:mod:`rcfmt._native.codec_libs`; if a codec cannot be resolved, its pages are
decompressed by the Python codec under the GIL: slower, same results.

CRC-32 (zlib's polynomial) comes from :mod:`rcfmt._native.checksum`.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

import os
import sys

import numpy as np

from ..runtime import memory as _memory
cimport numpy as cnp

from rcfmt._native.checksum cimport crc32_raw
from rcfmt._native.offsets cimport offset_fits, put_offset
from rcfmt._native.codec_libs cimport (DEC_FAILED, DEC_NO_MEMORY, DEC_OK, DEC_SIZE, dctx_done, dctx_of_thread,
                                       decompress_native, partial_native, zstd_blocks_apart, zstd_error_name)
from rcfmt._native.decoders cimport (_page_values, _page_offsets, MODE_BITPACK, MODE_BITPACK_DECIMAL, MODE_BOOL_PLAIN, MODE_BOOL_RLE, MODE_CODES, MODE_DELTA, MODE_PLAIN, MODE_RLE)


from rcfmt.errors import ChecksumError, CorruptFileError, UnsupportedError
from rcfmt._native.checksum import crc32, crc32_implementation, use_clmul  # (the pipeline's CRC, for Python)
from rcfmt._native.codec_libs import codec_sources, use_native_codecs  # (its codecs, for Python)

cnp.import_array()

if sys.byteorder != "little":  # headers and kernels read little-endian words directly
    raise ImportError("rcfmt._native.pages requires a little-endian host")

__all__ = ["PageRun", "read_pages", "decode_values", "decode_varbinary", "crc32", "crc32_implementation", "codec_sources"]

# ------------------------------------------------------------------ format constants
from rcfmt._native.format cimport (CODEC_LZ4, CODEC_NONE, CODEC_ZSTD, ENC_ALP, ENC_ALP_SPLIT, ENC_BITPACK,
                                   ENC_BYTE_SPLIT, ENC_DELTA, ENC_DELTA_LENGTH, ENC_DICTIONARY, ENC_PLAIN, ENC_RLE,
                                   FLAG_VALIDITY, MAX_PAGE_BYTES, MAX_PAGE_ROWS, PAGE_DATA, PAGE_DICTIONARY,
                                   PAGE_HEADER_SIZE, BLOCK_RECORD_SIZE, MIN_BLOOM_LENGTH)
CODEC_NAMES = {CODEC_NONE: "none", CODEC_ZSTD: "zstd", CODEC_LZ4: "lz4"}


def format_constants() -> dict:
    """The format numbers the native modules use (rcfmt/_native/format.pxd), by name."""
    return {"PAGE_HEADER_SIZE": PAGE_HEADER_SIZE, "PAGE_DATA": PAGE_DATA, "PAGE_DICTIONARY": PAGE_DICTIONARY,
            "FLAG_VALIDITY": FLAG_VALIDITY, "CODEC_NONE": CODEC_NONE, "CODEC_ZSTD": CODEC_ZSTD,
            "CODEC_LZ4": CODEC_LZ4, "ENC_PLAIN": ENC_PLAIN, "ENC_DICTIONARY": ENC_DICTIONARY, "ENC_RLE": ENC_RLE,
            "ENC_BITPACK": ENC_BITPACK, "ENC_DELTA": ENC_DELTA, "ENC_ALP": ENC_ALP,
            "ENC_DELTA_LENGTH": ENC_DELTA_LENGTH, "ENC_BYTE_SPLIT": ENC_BYTE_SPLIT, "ENC_ALP_SPLIT": ENC_ALP_SPLIT,
            "BLOCK_RECORD_SIZE": BLOCK_RECORD_SIZE, "MIN_BLOOM_LENGTH": MIN_BLOOM_LENGTH,
            "MAX_PAGE_ROWS": MAX_PAGE_ROWS, "MAX_PAGE_BYTES": MAX_PAGE_BYTES}

# (the page table's columns P_*: rcfmt/_native/pages.pxd)

# ------------------------------------------------------------------ failures
cdef enum Err:
    OK = 0
    TRUNCATED_HEADER
    HEADER_CRC
    PAGE_TYPE
    FLAGS
    LIMITS
    COUNTS
    VALIDITY_FLAG
    PAST_END
    WRONG_PAGE_TYPE
    ENCODING
    EXPECTED_ROWS
    BODY_CRC
    CODEC
    STORED_SIZE
    DECOMPRESS
    DECOMPRESSED_SIZE
    VALIDITY_SHORT
    NULLS
    TOO_MANY_PAGES
    TOO_MANY_ROWS
    EXPANSION
    NO_MEMORY
    EXPECTED_LENGTH


# (cdef struct Failure: in pages.pxd, shared with the block executor)


cdef struct Header:
    uint8_t page_type
    uint8_t encoding
    uint8_t compression
    uint8_t flags
    uint32_t row_count
    uint32_t value_count
    uint32_t null_count
    uint32_t compressed_size
    uint32_t uncompressed_size
    uint32_t body_crc
    uint32_t header_crc


# ------------------------------------------------------------------ headers
cdef int _parse_header(const uint8_t* buf, Py_ssize_t size, Py_ssize_t pos, Header* h,
                       Failure* f) noexcept nogil:
    """Parse and check the page header at ``buf[pos]`` (checksum, flags, limits, counts,
    body inside ``buf[:size]``). 0 or the failure code."""
    if pos < 0 or pos + PAGE_HEADER_SIZE > size:
        f.code = TRUNCATED_HEADER
        return f.code
    memcpy(h, buf + pos, PAGE_HEADER_SIZE)
    if crc32_raw(buf + pos, PAGE_HEADER_SIZE - 4, 0) != h.header_crc:
        f.code = HEADER_CRC
    elif h.page_type != PAGE_DATA and h.page_type != PAGE_DICTIONARY:
        f.code = PAGE_TYPE
        f.a = h.page_type
    elif h.flags & ~FLAG_VALIDITY:
        f.code = FLAGS
        f.a = h.flags
    elif h.row_count > MAX_PAGE_ROWS or h.uncompressed_size > MAX_PAGE_BYTES:
        f.code = LIMITS
        f.a = h.row_count
        f.b = h.uncompressed_size
    elif h.value_count != h.row_count or h.null_count > h.row_count:
        f.code = COUNTS
        f.a = h.row_count
        f.b = h.value_count
        f.c = h.null_count
    elif ((h.flags & FLAG_VALIDITY) != 0) != (h.null_count > 0):
        f.code = VALIDITY_FLAG
    elif pos + PAGE_HEADER_SIZE + <Py_ssize_t>h.compressed_size > size:
        f.code = PAST_END
        f.a = h.compressed_size
    return f.code


# ------------------------------------------------------------------ the run
cdef class PageRun:
    """Data (or dictionary) pages of one chunk after :func:`read_pages`.

    ``pages``: int64 array, one row per page: header position in ``buf``, rows, nulls,
    first row within the run, values-body offset, values-body length, 1 if the body is
    in ``arena``. ``validity``: Arrow bitmap (uint8) over the run's rows, or None when
    no page has nulls. ``end``: position after the last page."""

    def page_number(self, Py_ssize_t k):
        """Page ``k`` of the run's number in its chunk (for error locations)."""
        return k if self.page_numbers is None else int(self.page_numbers[k])

    cdef readonly object buf
    cdef readonly object arena
    cdef readonly cnp.ndarray pages
    cdef readonly object validity
    cdef readonly object page_numbers  # the pages' numbers in their chunk (None: 0, 1, ...)
    cdef readonly Py_ssize_t count, rows, null_count, end, base
    cdef readonly Py_ssize_t bad  # with values decoded by read_pages: the first page that failed, or -1

    def body(self, Py_ssize_t k):
        """The values body of page ``k`` (after the validity bitmap), without copying."""
        cdef int64_t[:, ::1] t = self.pages
        if not 0 <= k < self.count:
            raise IndexError(k)
        src = self.arena if t[k, P_ARENA] else self.buf
        return memoryview(src).cast("B")[t[k, P_AT] : t[k, P_AT] + t[k, P_LEN]]

    def valid(self):
        """Validity as a bool array over the run's rows, or None without nulls."""
        if self.validity is None:
            return None
        return np.unpackbits(self.validity, count=self.rows, bitorder="little").view(bool)


cdef inline Py_ssize_t _round8(Py_ssize_t x) noexcept nogil:
    return (x + 7) & ~(<Py_ssize_t>7)


cdef inline int64_t _max_expansion(int codec, int64_t stored) noexcept nogil:
    """The most bytes ``stored`` compressed bytes can decompress to. A zstd block
    (3-byte header + at least 1 byte) yields at most 128 KiB; an LZ4 sequence expands
    by at most 255 bytes per input byte."""
    if codec == CODEC_ZSTD:
        return (stored // 4 + 1) * 131072
    if codec == CODEC_LZ4:
        return stored * 255 + 255
    return stored


cdef int _headers(const uint8_t* buf, Py_ssize_t size, Py_ssize_t pos, Py_ssize_t end,
                  const int64_t* positions, const int64_t* expected, const int64_t* lengths, Py_ssize_t count,
                  Py_ssize_t max_pages, Py_ssize_t max_rows, int page_type, int encoding,
                  int64_t[:, ::1] t, Py_ssize_t* n_out, Py_ssize_t* rows_out, Py_ssize_t* arena_out,
                  Py_ssize_t* end_out, bint* any_nulls, Failure* f) noexcept nogil:
    """Pass 1: parse and check every header, fill ``t``, size the arena. With
    ``positions`` the pages are at those positions (``count`` of them), each exactly
    ``lengths[k]`` bytes long if ``lengths`` is given; else they are walked from ``pos``
    to ``end`` (at most ``max_pages``)."""
    cdef Header h
    cdef Py_ssize_t k = 0, rows = 0, arena = 0, vbytes
    while True:
        if positions != NULL:
            if k == count:
                break
            pos = positions[k]
        elif pos >= end:
            break
        elif k >= max_pages:
            f.code = TOO_MANY_PAGES
            f.page = k
            f.pos = pos
            return f.code
        f.page = k
        f.pos = pos
        if _parse_header(buf, end if positions == NULL else size, pos, &h, f):
            return f.code
        if h.page_type != page_type:
            f.code = WRONG_PAGE_TYPE
            return f.code
        if page_type == PAGE_DATA and h.encoding != encoding:
            f.code = ENCODING
            f.a = h.encoding
            f.b = encoding
            return f.code
        if expected != NULL and h.row_count != expected[k]:
            f.code = EXPECTED_ROWS
            f.a = h.row_count
            f.b = expected[k]
            return f.code
        if lengths != NULL and PAGE_HEADER_SIZE + <int64_t>h.compressed_size != lengths[k]:
            f.code = EXPECTED_LENGTH
            f.a = PAGE_HEADER_SIZE + <int64_t>h.compressed_size
            f.b = lengths[k]
            return f.code
        if rows + h.row_count > max_rows:
            f.code = TOO_MANY_ROWS
            f.a = max_rows
            return f.code
        if h.compression != CODEC_NONE and h.compression != CODEC_ZSTD and h.compression != CODEC_LZ4:
            f.code = CODEC
            f.a = h.compression
            return f.code
        if h.compression != CODEC_NONE and h.uncompressed_size > _max_expansion(h.compression, h.compressed_size):
            # checked before the arena is sized: a forged size cannot make us allocate
            f.code = EXPANSION
            f.a = h.compression
            f.b = h.compressed_size
            f.c = h.uncompressed_size
            return f.code
        vbytes = (h.row_count + 7) // 8 if h.flags & FLAG_VALIDITY else 0
        t[k, P_POS] = pos
        t[k, P_ROWS] = h.row_count
        t[k, P_NULLS] = h.null_count
        t[k, P_FIRST] = rows
        t[k, P_ARENA] = h.compression != CODEC_NONE
        if h.compression != CODEC_NONE:
            # the values body (after the bitmap) lands on an 8-byte boundary
            arena = _round8(arena + vbytes) - vbytes
            t[k, P_AT] = arena  # start of the decompressed body, for now
            arena += h.uncompressed_size + 8
        else:
            t[k, P_AT] = pos + PAGE_HEADER_SIZE
        t[k, P_LEN] = h.uncompressed_size
        any_nulls[0] = any_nulls[0] or h.null_count > 0
        rows += h.row_count
        pos += PAGE_HEADER_SIZE + h.compressed_size
        k += 1
    n_out[0] = k
    rows_out[0] = rows
    arena_out[0] = arena + 8
    end_out[0] = pos
    return OK


cdef inline Py_ssize_t _count_zeros(const uint8_t* bits, Py_ssize_t n) noexcept nogil:
    """Zero bits among the first ``n`` bits of an LSB-first bitmap."""
    cdef Py_ssize_t i, ones = 0
    cdef uint64_t w
    for i in range(n // 64):
        memcpy(&w, bits + 8 * i, 8)
        ones += __builtin_popcountll(w)
    i = (n // 64) * 8
    while i * 8 < n:
        w = bits[i]
        if n - i * 8 < 8:
            w &= (1u << (n - i * 8)) - 1
        ones += __builtin_popcountll(w)
        i += 1
    return n - ones


cdef inline void _copy_bits(const uint8_t* src, Py_ssize_t n, uint8_t* dst, Py_ssize_t at) noexcept nogil:
    """Copy ``n`` bits from ``src`` (from bit 0) into ``dst`` from bit ``at``; ``dst``
    bits from ``at`` on are all 1 before (they are cleared where ``src`` has a 0)."""
    cdef Py_ssize_t i
    cdef Py_ssize_t j
    if at % 8 == 0:
        memcpy(dst + at // 8, src, n // 8)
        for i in range(n - n % 8, n):
            if not (src[i >> 3] >> (i & 7)) & 1:
                j = at + i
                dst[j >> 3] &= ~(1 << (j & 7))
        return
    for i in range(n):
        if not (src[i >> 3] >> (i & 7)) & 1:
            j = at + i
            dst[j >> 3] &= ~(1 << (j & 7))


cdef extern from *:
    int __builtin_popcountll(unsigned long long) nogil


cdef int _decompress(int codec, const uint8_t* src, Py_ssize_t n, uint8_t* dst, Py_ssize_t cap,
                     void** zctx, Failure* f) except -1 nogil:
    """Decompress one body into ``dst[:cap]``; 0, or a failure code (-1: Python error
    from the fallback codec)."""
    cdef int64_t detail = 0
    cdef int got = decompress_native(codec, src, n, dst, cap, zctx, &detail)
    if got == DEC_OK:
        return OK
    if got == DEC_NO_MEMORY:
        f.code = NO_MEMORY
        return f.code
    if got == DEC_FAILED:
        f.code = DECOMPRESS
        f.a = codec
        f.b = detail
        return f.code
    if got == DEC_SIZE:
        f.code = DECOMPRESSED_SIZE
        f.a = detail
        f.b = cap
        return f.code
    if codec != CODEC_ZSTD and codec != CODEC_LZ4:
        f.code = CODEC
        f.a = codec
        return f.code
    return _decompress_python(codec, src, n, dst, cap)


cdef int _decompress_python(int codec, const uint8_t* src, Py_ssize_t n, uint8_t* dst, Py_ssize_t cap) except -1 with gil:
    """The Python codec, when the C entry point was not found. A function of its own:
    Python objects in :func:`_decompress` would make Cython take the GIL on every return
    (to release them), i.e. once per compressed page."""
    from rcfmt import codecs
    out = codecs.decompress(codec, (<const uint8_t[:n]>src) if n else b"", cap)
    cdef const uint8_t[::1] view = memoryview(out).cast("B")
    if cap:
        memcpy(dst, &view[0], cap)
    return OK


cdef int _bodies(const uint8_t* buf, int64_t[:, ::1] t, Py_ssize_t n, uint8_t* arena,
                 uint8_t* bitmap, bint verify, Failure* f, Py_ssize_t lazy=0) except -1 nogil:
    """Pass 2: verify body checksums, decompress, check validity against the null
    counts and copy it into ``bitmap``; leave ``t`` pointing at the values bodies.
    ``lazy`` > 0: a page marked ``P_ARENA`` LAZY, larger, without nulls, whose zstd
    frame is ``zstd_blocks_apart`` is checked, left for ``column._inflate_prefix``."""
    cdef Header h
    cdef Py_ssize_t k, pos, vbytes
    cdef const uint8_t* stored
    cdef const uint8_t* body
    cdef void* zctx = dctx_of_thread()  # this thread's (created at its first zstd page)
    cdef void* held = zctx
    cdef int rc = OK
    try:
        for k in range(n):
            pos = t[k, P_POS]
            f.page = k
            f.pos = pos
            memcpy(&h, buf + pos, PAGE_HEADER_SIZE)
            stored = buf + pos + PAGE_HEADER_SIZE
            if verify and crc32_raw(stored, h.compressed_size, 0) != h.body_crc:
                f.code = BODY_CRC
                rc = f.code
                break
            if h.compression == CODEC_NONE:
                if h.compressed_size != h.uncompressed_size:
                    f.code = STORED_SIZE
                    f.a = h.compressed_size
                    f.b = h.uncompressed_size
                    rc = f.code
                    break
                body = stored
            elif (t[k, P_ARENA] == LAZY and lazy > 0 and h.compression == CODEC_ZSTD and not (h.flags & FLAG_VALIDITY)
                  and h.uncompressed_size > lazy and partial_native()
                  and zstd_blocks_apart(stored, h.compressed_size, h.uncompressed_size)):
                continue
            else:
                t[k, P_ARENA] = 1
                rc = _decompress(h.compression, stored, h.compressed_size, arena + t[k, P_AT],
                                 h.uncompressed_size, &zctx, f)
                if rc:
                    break
                body = arena + t[k, P_AT]
            vbytes = 0
            if h.flags & FLAG_VALIDITY:
                vbytes = (h.row_count + 7) // 8
                if h.uncompressed_size < vbytes:
                    f.code = VALIDITY_SHORT
                    rc = f.code
                    break
                if _count_zeros(body, h.row_count) != h.null_count:
                    f.code = NULLS
                    f.a = _count_zeros(body, h.row_count)
                    f.b = h.null_count
                    rc = f.code
                    break
                _copy_bits(body, h.row_count, bitmap, t[k, P_FIRST])
            t[k, P_AT] += vbytes
            t[k, P_LEN] -= vbytes
    finally:
        dctx_done(zctx, held, rc != OK and f.code == DECOMPRESS)  # (a context that failed is not reused)
    return rc


_MESSAGES = {
    TRUNCATED_HEADER: (CorruptFileError, "truncated page header"),
    HEADER_CRC: (ChecksumError, "page header checksum mismatch"),
    PAGE_TYPE: (CorruptFileError, "unknown page type {a}"),
    FLAGS: (CorruptFileError, "unknown page flags 0x{a:02x}"),
    LIMITS: (CorruptFileError, "page claims {a} rows / {b} bytes, beyond format limits"),
    COUNTS: (CorruptFileError, "inconsistent page counts (rows={a}, values={b}, nulls={c})"),
    VALIDITY_FLAG: (CorruptFileError, "validity flag disagrees with null count"),
    PAST_END: (CorruptFileError, "page body of {a} bytes runs past the end of its chunk"),
    ENCODING: (CorruptFileError, "page encoding {a} differs from its chunk's {b}"),
    EXPECTED_ROWS: (CorruptFileError, "page holds {a} rows, page index says {b}"),
    EXPECTED_LENGTH: (CorruptFileError, "page is {a} bytes long, page index says {b}"),
    BODY_CRC: (ChecksumError, "page body checksum mismatch"),
    CODEC: (UnsupportedError, "unknown compression codec id {a} (written by a newer rcfmt?)"),
    STORED_SIZE: (CorruptFileError, "stored size {a} != uncompressed size {b}"),
    DECOMPRESSED_SIZE: (CorruptFileError, "{codec} page decompressed to {a} bytes, header says {b}"),
    EXPANSION: (CorruptFileError, "{codec} page of {b} bytes claims {c} bytes uncompressed, more than {codec} can "
                                  "expand to"),
    VALIDITY_SHORT: (CorruptFileError, "page body shorter than its validity bitmap"),
    NULLS: (CorruptFileError, "validity bitmap has {a} nulls, header says {b}"),
    TOO_MANY_PAGES: (CorruptFileError, "more pages than the footer records"),
    TOO_MANY_ROWS: (CorruptFileError, "chunk pages hold more than the block's {a} rows"),
}


cdef object _page_label(Failure* f, object page_numbers, int page_type):
    if page_type == PAGE_DICTIONARY:
        return "dictionary"
    if page_numbers is not None:
        return int(page_numbers[f.page])
    return f.page


cdef object _error(Failure* f, Py_ssize_t base, object page_numbers, int page_type, const uint8_t* buf):
    cdef int codec = buf[f.pos + 2] if f.code == DECOMPRESSED_SIZE else f.a
    if f.code == NO_MEMORY:
        return MemoryError("out of memory creating a zstd context")
    if f.code == WRONG_PAGE_TYPE:
        cls, text = CorruptFileError, ("expected a data page" if page_type == PAGE_DATA
                                       else "dictionary page does not match its footer record")
    elif f.code == DECOMPRESS:
        name = CODEC_NAMES.get(f.a, f.a)
        detail = "corrupt LZ4 block" if f.a == CODEC_LZ4 else (<bytes>zstd_error_name(<size_t>f.b)).decode()
        cls, text = CorruptFileError, f"{name} decompression failed: {detail}"
    else:
        cls, fmt = _MESSAGES[f.code]
        text = fmt.format(a=f.a, b=f.b, c=f.c, codec=CODEC_NAMES.get(codec, codec))
    page = _page_label(f, page_numbers, page_type)
    exc = cls(text)
    if isinstance(exc, CorruptFileError):
        exc = exc.with_context(page=page, offset=base + f.pos)
    elif isinstance(exc, UnsupportedError):
        exc = UnsupportedError(f"page {page} at offset {base + f.pos}: {text}")
    return exc


def read_pages(buf, Py_ssize_t base, *, Py_ssize_t start=0, end=None, Py_ssize_t max_pages=0,
               Py_ssize_t max_rows=0, positions=None, expected_rows=None, expected_lengths=None,
               page_numbers=None, int page_type=0, int encoding=0, bint verify=True, Py_ssize_t arena_hint=0,
               values=None):
    """Run the pages of a chunk held in ``buf`` (file bytes from offset ``base`` on)
    through the pipeline; return a :class:`PageRun`.

    Either walk ``buf[start:end]`` page after page (at most ``max_pages`` pages), or,
    with ``positions`` (int64 header positions in ``buf``), take exactly those pages;
    ``expected_rows`` (int64, one per page) are the page index's row counts,
    ``expected_lengths`` its byte lengths (header and stored body: a page must not reach
    past its entry, whose bytes alone may have been read), and
    ``page_numbers`` the pages' numbers in their chunk (for error messages). Every
    page must be of ``page_type`` with ``encoding`` (data pages), and all of them
    together hold at most ``max_rows`` rows. Damage raises CorruptFileError (or
    ChecksumError, UnsupportedError) located at the page.

    With ``values = (mode, itemsize, signed, out, limit, precision)`` (as for
    :func:`decode_values`, ``out`` holding ``max_rows`` values) the values are decoded in
    the same GIL-free call and ``run.bad`` is -1 or the first page whose values failed
    their checks. Everything then happens in one GIL-free section when the
    decompressed bodies fit ``arena_hint`` bytes (an estimate the caller makes; a larger
    need is allocated between the passes, as without a hint).

    (Filters evaluated in the decode pass and rows gathered from the pages are the
    block executor's, :mod:`rcfmt._native.block`; this is the reference path.)"""
    cdef const uint8_t[::1] view = memoryview(buf).cast("B") if not isinstance(buf, np.ndarray) else buf
    cdef Py_ssize_t size = view.shape[0]
    cdef const uint8_t* p = &view[0] if size else <const uint8_t*>b""
    cdef Py_ssize_t stop = size if end is None else end
    cdef const int64_t[::1] pos_view
    cdef const int64_t[::1] exp_view
    cdef const int64_t* pos_ptr = NULL
    cdef const int64_t* exp_ptr = NULL
    cdef const int64_t[::1] len_view
    cdef const int64_t* len_ptr = NULL
    cdef Py_ssize_t count = 0, n = 0, rows = 0, arena_size = 0, run_end = 0
    cdef bint any_nulls = False
    cdef Failure f
    memset(&f, 0, sizeof(Failure))
    if not 0 <= start <= stop <= size:
        raise CorruptFileError(f"page run [{start}, {stop}) outside a {size}-byte buffer")
    if positions is not None:
        pos_view = np.ascontiguousarray(positions, dtype=np.int64)
        count = pos_view.shape[0]
        pos_ptr = &pos_view[0] if count else NULL
        if count == 0:
            pos_ptr = <const int64_t*>&count  # non-NULL: "positions given, none"
        capacity = count
    else:
        # each page takes at least a header, so the buffer bounds the table size
        capacity = min(max_pages, (stop - start) // PAGE_HEADER_SIZE + 1)
    if expected_rows is not None:
        exp_view = np.ascontiguousarray(expected_rows, dtype=np.int64)
        if exp_view.shape[0] != count:
            raise ValueError("expected_rows needs one entry per position")
        exp_ptr = &exp_view[0] if count else NULL
    if expected_lengths is not None:
        len_view = np.ascontiguousarray(expected_lengths, dtype=np.int64)
        if len_view.shape[0] != count:
            raise ValueError("expected_lengths needs one entry per position")
        len_ptr = &len_view[0] if count else NULL
    cdef cnp.ndarray table = np.zeros((max(capacity, 1), P_COLS), dtype=np.int64)
    cdef int64_t[:, ::1] t = table
    cdef ValuesSpec spec
    cdef bint decode = values is not None
    cdef Py_ssize_t bad = -1, i_sel
    if decode:
        _values_spec(&spec, values[0], values[1], values[2], values[3], max_rows, values[4], values[5])
    # preallocated when the caller knows enough: then one GIL-free section does it all
    arena = _memory.empty(arena_hint // 8 + 1, np.uint64) if arena_hint > 0 else None
    validity = np.empty((max_rows + 7) // 8, dtype=np.uint8) if decode else None
    cdef uint8_t* arena_ptr = <uint8_t*>cnp.PyArray_DATA(arena) if arena is not None else NULL
    cdef uint8_t* bitmap = <uint8_t*>cnp.PyArray_DATA(validity) if decode else NULL
    cdef Py_ssize_t have = (arena_hint // 8 + 1) * 8 if arena is not None else 0
    cdef bint done = False
    try:
        with nogil:
            _headers(p, size, start, stop, pos_ptr, exp_ptr, len_ptr, count, max_pages, max_rows, page_type,
                     encoding, t, &n, &rows, &arena_size, &run_end, &any_nulls, &f)
            if f.code == OK and arena_size <= have and decode:
                if any_nulls:
                    memset(bitmap, 0xFF, (rows + 7) // 8)
                _bodies(p, t, n, arena_ptr, bitmap if any_nulls else NULL, verify, &f)
                if f.code == OK:
                    bad = _decode_run(t, n, p, arena_ptr, &spec)
                done = True
    except CorruptFileError as exc:  # from the Python codec fallback
        raise exc.with_context(page=_page_label(&f, page_numbers, page_type), offset=base + f.pos) from None
    if f.code:
        raise _error(&f, base, page_numbers, page_type, p)
    if not done:
        if arena_size > have:
            arena = _memory.empty(arena_size // 8 + 1, np.uint64)
            arena_ptr = <uint8_t*>cnp.PyArray_DATA(arena)
        if any_nulls and not decode:
            validity = np.empty((rows + 7) // 8, dtype=np.uint8)
            bitmap = <uint8_t*>cnp.PyArray_DATA(validity)
        try:
            with nogil:
                if any_nulls:
                    memset(bitmap, 0xFF, (rows + 7) // 8)
                _bodies(p, t, n, arena_ptr, bitmap if any_nulls else NULL, verify, &f)
                if f.code == OK and decode:
                    bad = _decode_run(t, n, p, arena_ptr, &spec)
        except CorruptFileError as exc:  # from the Python codec fallback
            raise exc.with_context(page=_page_label(&f, page_numbers, page_type), offset=base + f.pos) from None
        if f.code:
            raise _error(&f, base, page_numbers, page_type, p)
    if bad == -2:
        raise MemoryError()
    if not any_nulls:
        validity = None
    elif validity.shape[0] != (rows + 7) // 8:
        validity = validity[: (rows + 7) // 8]
    if any_nulls and rows % 8:
        validity[validity.shape[0] - 1] &= (1 << (rows % 8)) - 1  # unused trailing bits are 0
    cdef PageRun run = PageRun.__new__(PageRun)
    run.buf = buf
    run.arena = arena.view(np.uint8)
    run.pages = table[:n]
    run.validity = validity
    run.page_numbers = page_numbers
    run.count = n
    run.rows = rows
    cdef int64_t nulls = 0
    for i_sel in range(n):
        nulls += t[i_sel, P_NULLS]
    run.null_count = nulls
    run.end = run_end
    run.base = base
    run.bad = bad
    return run


# ------------------------------------------------------------------ values
# (the page value kernels: rcfmt/_native/decoders.pyx)


cdef struct RunAccess:
    const uint8_t* buf     # the run's file bytes
    const uint8_t* arena   # its decompressed bodies
    uint64_t* scratch      # 8 * (most rows + 2) bytes for kernels, then ...
    uint64_t* aligned      # ... room for the longest values body (8-byte aligned copies)


cdef int _access(int64_t[:, ::1] t, Py_ssize_t n, const uint8_t* buf, const uint8_t* arena,
                 RunAccess* a) noexcept nogil:
    """Pointers to a run's bytes and one scratch allocation sized for its largest page
    (free ``a.scratch`` when done); -1 when memory runs out."""
    cdef Py_ssize_t k, most = 0, longest = 0
    for k in range(n):
        most = max(most, t[k, P_ROWS])
        longest = max(longest, t[k, P_LEN])
    a.buf = buf
    a.arena = arena
    a.scratch = <uint64_t*>malloc(8 * (most + 2) + _round8(longest) + 8)
    if a.scratch == NULL:
        return -1
    a.aligned = a.scratch + most + 2
    return 0


cdef int _open_run(PageRun run, RunAccess* a) except -1:
    """Pointers into ``run`` (kept alive by it) and one scratch allocation sized for its
    largest page; free ``a.scratch`` when done."""
    cdef const uint8_t[::1] bview = memoryview(run.buf).cast("B") if not isinstance(run.buf, np.ndarray) else run.buf
    cdef const uint8_t[::1] aview = run.arena
    if _access(run.pages, run.count, &bview[0] if bview.shape[0] else NULL, &aview[0], a):
        raise MemoryError()
    return 0


cdef inline const uint8_t* _body(RunAccess* a, int64_t[:, ::1] t, Py_ssize_t k) noexcept nogil:
    """The values body of page ``k``, 8-byte aligned (copied when it is not)."""
    cdef const uint8_t* body = (a.arena if t[k, P_ARENA] else a.buf) + t[k, P_AT]
    if (<uintptr_t>body) % 8:
        memcpy(a.aligned, body, t[k, P_LEN])
        return <const uint8_t*>a.aligned
    return body


cdef struct ValuesSpec:
    int mode
    int itemsize       # bytes per value read by the kernel
    int out_size       # bytes per value written
    bint signed
    uint32_t limit     # dictionary size (MODE_CODES)
    int64_t decimal_lim
    uint8_t* out


cdef int _values_spec(ValuesSpec* v, int mode, int itemsize, bint signed, out, Py_ssize_t rows, uint32_t limit,
                      int precision) except -1:
    """Check ``out`` for ``rows`` values of ``mode`` and fill ``v``."""
    cdef int k_digits
    v.decimal_lim = 0
    if mode == MODE_BITPACK_DECIMAL and 1 <= precision <= 18:
        v.decimal_lim = 1
        for k_digits in range(precision):
            v.decimal_lim *= 10
        v.decimal_lim -= 1
    cdef cnp.ndarray o
    if mode == MODE_CODES:
        itemsize = 4
    v.out_size = itemsize
    if mode == MODE_BOOL_PLAIN or mode == MODE_BOOL_RLE:
        itemsize = 1
    if itemsize not in (1, 2, 4, 8) and not ((mode == MODE_PLAIN or mode == MODE_RLE) and itemsize > 0):
        raise ValueError(f"itemsize {itemsize} not supported by mode {mode}")
    o = out
    if not (cnp.PyArray_IS_C_CONTIGUOUS(o) and cnp.PyArray_ISWRITEABLE(o)):
        raise ValueError("out must be a writable, contiguous array")
    if cnp.PyArray_NBYTES(o) < rows * v.out_size:
        raise ValueError("out is too small for the run")
    if (<uintptr_t>cnp.PyArray_DATA(o)) % min(itemsize, 8):
        raise ValueError("out is not aligned to its itemsize")
    v.out = <uint8_t*>cnp.PyArray_DATA(o)
    v.mode = mode
    v.itemsize = itemsize
    v.signed = signed
    v.limit = limit
    return 0


cdef Py_ssize_t _decode_run(int64_t[:, ::1] t, Py_ssize_t n, const uint8_t* buf, const uint8_t* arena,
                            ValuesSpec* v) noexcept nogil:
    """Decode every page's values into ``v.out``: -1, the first page whose values fail
    a check, or -2 when memory runs out."""
    cdef RunAccess a
    cdef Py_ssize_t k, bad = -1
    if _access(t, n, buf, arena, &a):
        return -2
    for k in range(n):
        if _page_values(v.mode, _body(&a, t, k), t[k, P_LEN], t[k, P_ROWS], v.itemsize, v.signed, v.limit,
                        v.decimal_lim, v.out + t[k, P_FIRST] * v.out_size, a.scratch):
            bad = k
            break
    free(a.scratch)
    return bad


def decode_values(PageRun run, int mode, int itemsize, bint signed, out, uint32_t limit=0, int precision=0):
    """Decode the values of every page of ``run`` into ``out`` (page after page; ``out``
    a writable, contiguous array of at least ``run.rows`` items of ``itemsize`` bytes,
    uint32 for MODE_CODES with ``limit`` the dictionary size). For
    MODE_BITPACK_DECIMAL, ``precision`` (1..38) is checked too. Returns -1, or the
    index (in the run) of the first page whose values fail a check; nothing is read or
    written outside the page bodies and ``out``."""
    cdef ValuesSpec v
    if isinstance(out, np.dtype):
        raise ValueError("decode_values needs an output array")
    _values_spec(&v, mode, itemsize, signed, out, run.rows, limit, precision)
    cdef const uint8_t[::1] bview = memoryview(run.buf).cast("B") if not isinstance(run.buf, np.ndarray) else run.buf
    cdef const uint8_t[::1] aview = run.arena
    cdef int64_t[:, ::1] t = run.pages
    cdef Py_ssize_t bad
    with nogil:
        bad = _decode_run(t, run.count, &bview[0] if bview.shape[0] else NULL, &aview[0], &v)
    if bad == -2:
        raise MemoryError()
    return bad


# ------------------------------------------------------------------ variable-length values
# (the VARBINARY layouts VB_*: rcfmt/_native/pages.pxd)


def decode_varbinary(PageRun run, int mode, out_offsets, uint8_t[::1] out_data):
    """Decode the strings/binary values of every page of ``run`` into ``out_offsets``
    (int32 or int64, ``run.rows + 1`` entries, from 0) and ``out_data`` (at least the
    sum of the values bodies' lengths). Returns ``(-1, data bytes)``, or ``(k, 0)`` for
    the first page ``k`` whose body fails a check."""
    cdef cnp.ndarray o = out_offsets
    cdef bint wide = cnp.PyArray_ITEMSIZE(o) == 8
    if cnp.PyArray_DIM(o, 0) < run.rows + 1 or not cnp.PyArray_IS_C_CONTIGUOUS(o) or \
            cnp.PyArray_ITEMSIZE(o) not in (4, 8):
        raise ValueError("out_offsets must be a contiguous int32/int64 array of rows + 1 entries")
    cdef int64_t[:, ::1] t = run.pages
    cdef Py_ssize_t k, i, n = run.count, bad = -1, capacity = out_data.shape[0]
    cdef int64_t pos = 0, first
    cdef RunAccess a
    _open_run(run, &a)
    cdef uint32_t* local = <uint32_t*>a.scratch  # rows + 1 offsets fit in 8 * (rows + 2) bytes
    cdef const uint8_t* data = NULL
    cdef Py_ssize_t data_len = 0
    cdef void* offsets = cnp.PyArray_DATA(o)
    cdef uint8_t* od = &out_data[0] if capacity else NULL
    try:
        with nogil:
            put_offset(offsets, wide, 0, 0)
            for k in range(n):
                if (_page_offsets(mode, _body(&a, t, k), t[k, P_LEN], t[k, P_ROWS], local, &data, &data_len)
                        or pos + data_len > capacity or not offset_fits(wide, pos + data_len)):
                    bad = k
                    break
                first = t[k, P_FIRST]
                for i in range(1, t[k, P_ROWS] + 1):
                    put_offset(offsets, wide, first + i, pos + local[i])
                if data_len:
                    memcpy(od + pos, data, data_len)
                pos += data_len
    finally:
        free(a.scratch)
    if bad >= 0:
        return bad, 0
    return -1, pos
