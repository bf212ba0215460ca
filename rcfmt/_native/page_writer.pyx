# cython: language_level=3
"""The writer's half of the page pipeline: a column chunk's pages assembled in one
GIL-free call.

:func:`write_pages` takes the encoded bodies of a chunk's pages (its dictionary page
first, if any), and for each page packs its validity bitmap in front of the body (from
the chunk's validity, in Arrow's bit order), compresses the result with the chunk's
codec, checksums the stored body and the header (CRC-32) and lays ``header | stored
body`` after the page before it (docs/FORMAT.md, "Pages"). With ``min_saving`` the codec
is kept only when it saves that share of the chunk's bytes, else the pages are stored
uncompressed.

Compression uses the zstd and LZ4 entry points the read pipeline resolved
(:mod:`rcfmt._native.pages`); zstd's output is byte for byte what :mod:`rcfmt.codecs`
gives. When a codec is not resolved, the Python codec compresses each page with the
GIL held: slower, same format.
"""
from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

import numpy as np
cimport numpy as cnp

from rcfmt._native.checksum cimport crc32_raw
from rcfmt._native.codec_libs cimport (blocks_native, compress_blocks_into, compress_bound, compress_into,
                                       compress_native, compressor_free, compressor_new)

cnp.import_array()

__all__ = ["Compressor", "write_pages"]

from rcfmt._native.format cimport CODEC_NONE, CODEC_ZSTD, FLAG_VALIDITY, MAX_PAGE_BYTES, MAX_PAGE_ROWS, PAGE_DICTIONARY, PAGE_HEADER_SIZE


cdef class Compressor:
    """A zstd compression context, reused from call to call (not thread-safe: one per
    thread)."""
    cdef void* cctx

    def __cinit__(self):
        self.cctx = compressor_new()

    def __dealloc__(self):
        compressor_free(self.cctx)


cdef struct Page:
    const uint8_t* body
    int64_t body_len
    int64_t rows
    int64_t nulls
    int64_t first      # first row in the chunk's validity
    int64_t raw        # validity bytes + body bytes
    int64_t stored
    uint8_t page_type


cdef inline void _pack_bits(const uint8_t* valid, int64_t n, uint8_t* out) noexcept nogil:
    """``valid[:n]`` (bool bytes) as an LSB-first bitmap, trailing bits 0."""
    cdef int64_t i, k, full = n // 8
    cdef uint8_t b
    for k in range(full):
        b = 0
        for i in range(8):
            b |= (valid[8 * k + i] != 0) << i
        out[k] = b
    if n % 8:
        b = 0
        for i in range(n % 8):
            b |= (valid[8 * full + i] != 0) << i
        out[full] = b


cdef inline void _raw_body(const Page* pg, const uint8_t* valid, uint8_t* out) noexcept nogil:
    """``[validity bitmap] body`` of a page at ``out``."""
    cdef int64_t vbytes = 0
    if pg.nulls:
        vbytes = (pg.rows + 7) // 8
        _pack_bits(valid + pg.first, pg.rows, out)
    if pg.body_len:
        memcpy(out + vbytes, pg.body, pg.body_len)


cdef inline void _header(const Page* pg, int encoding, int codec, uint8_t* out) noexcept nogil:
    """The 32-byte header of a page whose stored body follows it at ``out + 32``."""
    cdef uint32_t words[7]
    out[0] = pg.page_type
    out[1] = <uint8_t>encoding
    out[2] = <uint8_t>codec
    out[3] = FLAG_VALIDITY if pg.nulls else 0
    words[0] = <uint32_t>pg.rows          # row count
    words[1] = <uint32_t>pg.rows          # value count
    words[2] = <uint32_t>pg.nulls
    words[3] = <uint32_t>pg.stored
    words[4] = <uint32_t>pg.raw           # uncompressed size
    words[5] = crc32_raw(out + PAGE_HEADER_SIZE, <size_t>pg.stored, 0)
    words[6] = 0
    memcpy(out + 4, words, 28)
    words[6] = crc32_raw(out, PAGE_HEADER_SIZE - 4, 0)
    memcpy(out + PAGE_HEADER_SIZE - 4, &words[6], 4)


cdef int64_t _compress_python(int codec, int level, const uint8_t* src, int64_t n, uint8_t* dst,
                              int64_t cap) except -2 with gil:
    """The Python codec, when the native one was not resolved (a function of its own, so
    that the GIL-free loop holds no Python object)."""
    from rcfmt import codecs
    out = codecs.compress(codec, (<const uint8_t[:n]>src) if n else b"", level)
    cdef const uint8_t[::1] view = memoryview(out).cast("B")
    if view.shape[0] > cap:
        return -1
    if view.shape[0]:
        memcpy(dst, &view[0], view.shape[0])
    return view.shape[0]


cdef int64_t _write(Page* pages, Py_ssize_t n, const uint8_t* valid, int encoding, int* codec, int level,
                    double min_saving, void* cctx, uint8_t* out, uint8_t* scratch,
                    Py_ssize_t block) except -2 nogil:
    """Lay out ``n`` pages at ``out`` with one codec; the bytes written, or -1 when
    compression failed. ``codec`` becomes CODEC_NONE when compression does not pay
    (``min_saving >= 0``). ``block`` > 0: a zstd page larger than that ends a zstd block
    every ``block`` bytes of its body."""
    cdef Py_ssize_t k
    cdef int64_t pos = 0, raw_total = 0, stored_total = 0, got
    cdef Page* pg
    cdef const uint8_t* src
    if codec[0] != CODEC_NONE:
        for k in range(n):
            pg = &pages[k]
            src = pg.body
            if pg.nulls:  # compress [validity | body] from one contiguous buffer
                _raw_body(pg, valid, scratch)
                src = scratch
            if block > 0 and codec[0] == CODEC_ZSTD and pg.raw > block and blocks_native():
                got = compress_blocks_into(level, src, pg.raw, out + pos + PAGE_HEADER_SIZE,
                                           compress_bound(codec[0], pg.raw), cctx, block)
            elif compress_native(codec[0]):
                got = compress_into(codec[0], level, src, pg.raw, out + pos + PAGE_HEADER_SIZE,
                                    compress_bound(codec[0], pg.raw), cctx)
            else:
                got = _compress_python(codec[0], level, src, pg.raw, out + pos + PAGE_HEADER_SIZE,
                                       compress_bound(codec[0], pg.raw))
            if got < 0:
                return -1
            pg.stored = got
            pos += PAGE_HEADER_SIZE + got
            raw_total += pg.raw
            stored_total += got
        if min_saving < 0 or <double>stored_total <= <double>raw_total * (1.0 - min_saving):
            pos = 0
            for k in range(n):
                _header(&pages[k], encoding, codec[0], out + pos)
                pos += PAGE_HEADER_SIZE + pages[k].stored
            return pos
        codec[0] = CODEC_NONE  # not worth it: store the pages as they are
    pos = 0
    for k in range(n):
        pg = &pages[k]
        _raw_body(pg, valid, out + pos + PAGE_HEADER_SIZE)
        pg.stored = pg.raw
        _header(pg, encoding, CODEC_NONE, out + pos)
        pos += PAGE_HEADER_SIZE + pg.raw
    return pos


def write_pages(bodies, page_types, rows, nulls, first_rows, valid, int encoding, int codec, int level,
                double min_saving=-1.0, Compressor compressor=None, int dictionary_codec=-1,
                Py_ssize_t zstd_block=0):
    """The pages of one column chunk, assembled: ``(chunk bytes, codec used, page
    lengths, uncompressed body sizes)``, lengths and sizes int64, one per page.

    ``bodies``: each page's encoded values (bytes-like), in chunk order (a dictionary
    page first); ``page_types``, ``rows``, ``nulls``: each page's type, row count and
    null count; ``first_rows``: where each page's rows start in ``valid`` (bool per row
    of the chunk, or None when no page has nulls). A page with nulls gets the validity
    bitmap of its rows in front of its body. ``codec`` (0 none, 1 zstd, 2 lz4) at
    ``level``; with ``min_saving >= 0`` the codec is dropped (codec used 0) unless
    the compressed bodies take at most ``1 - min_saving`` of the uncompressed ones.
    ``compressor``: a zstd context to reuse (one per thread). ``dictionary_codec`` (>= 0):
    a dictionary page (the first body) is compressed with it and judged on its own by
    ``min_saving``, whatever the data pages do; -1: it goes with the data pages.
    ``zstd_block`` > 0: a zstd data page larger than that is one frame whose blocks end
    every ``zstd_block`` bytes (a reader inflates a prefix of it block by block)."""
    cdef Py_ssize_t n = len(bodies), k
    cdef const uint8_t[::1] v
    cdef const uint8_t* valid_ptr = NULL
    cdef const int64_t[::1] rows_v = np.ascontiguousarray(rows, dtype=np.int64)
    cdef const int64_t[::1] nulls_v = np.ascontiguousarray(nulls, dtype=np.int64)
    cdef const int64_t[::1] first_v = np.ascontiguousarray(first_rows, dtype=np.int64)
    cdef const uint8_t[::1] types_v = np.ascontiguousarray(page_types, dtype=np.uint8)
    if not (rows_v.shape[0] == nulls_v.shape[0] == first_v.shape[0] == types_v.shape[0] == n):
        raise ValueError("write_pages needs one type, row count, null count and first row per body")
    if codec < 0 or codec > 2 or dictionary_codec < -1 or dictionary_codec > 2:
        raise ValueError(f"unknown codec id {codec} / {dictionary_codec}")
    cdef bint apart = dictionary_codec >= 0 and n > 0 and types_v[0] == PAGE_DICTIONARY
    cdef int dict_used = dictionary_codec if apart else codec
    cdef int page_codec
    cdef Py_ssize_t valid_len = 0
    if valid is not None:
        v = np.ascontiguousarray(valid).view(np.uint8)
        valid_len = v.shape[0]
        valid_ptr = &v[0] if valid_len else NULL
    keep = []  # the bodies' buffers, alive until the pages are written
    cdef Page* pages = <Page*>malloc(max(n, 1) * sizeof(Page))
    if pages == NULL:
        raise MemoryError()
    cdef const uint8_t[::1] b
    cdef int64_t capacity = 0, largest = 0, bound
    cdef uint8_t* scratch = NULL
    cdef void* cctx = NULL
    cdef int used = codec
    cdef int64_t size, got
    cdef cnp.ndarray out
    cdef uint8_t* out_ptr
    try:
        for k in range(n):
            b = memoryview(bodies[k]).cast("B") if not isinstance(bodies[k], np.ndarray) else bodies[k].view(np.uint8)
            keep.append(b)
            pages[k].body = &b[0] if b.shape[0] else NULL
            pages[k].body_len = b.shape[0]
            pages[k].rows = rows_v[k]
            pages[k].nulls = nulls_v[k]
            pages[k].first = first_v[k]
            pages[k].page_type = types_v[k]
            if not (0 <= pages[k].nulls <= pages[k].rows <= MAX_PAGE_ROWS):
                raise ValueError(f"page {k}: {pages[k].nulls} nulls in {pages[k].rows} rows")
            if pages[k].nulls and (valid_ptr == NULL or pages[k].first < 0
                                   or pages[k].first + pages[k].rows > valid_len):
                raise ValueError(f"page {k}: rows [{pages[k].first}, {pages[k].first + pages[k].rows}) "
                                 f"outside the validity of {valid_len} rows")
            pages[k].raw = pages[k].body_len + ((pages[k].rows + 7) // 8 if pages[k].nulls else 0)
            if pages[k].raw > MAX_PAGE_BYTES:
                raise ValueError("page too large")  # a writer bug: it cuts pages well below this
            page_codec = dict_used if k == 0 else codec
            bound = pages[k].raw if page_codec == CODEC_NONE else max(pages[k].raw,
                                                                      compress_bound(page_codec, pages[k].raw))
            capacity += PAGE_HEADER_SIZE + bound
            if pages[k].nulls:
                largest = max(largest, pages[k].raw)
        out = np.empty(max(capacity, 1), dtype=np.uint8)
        if (codec != CODEC_NONE or dict_used != CODEC_NONE) and largest:
            scratch = <uint8_t*>malloc(largest)
            if scratch == NULL:
                raise MemoryError()
        if (codec != CODEC_NONE and compress_native(codec)) or (dict_used != CODEC_NONE and compress_native(dict_used)):
            cctx = compressor.cctx if compressor is not None else compressor_new()
            if cctx == NULL and (codec == 1 or dict_used == 1):
                raise MemoryError()
        out_ptr = <uint8_t*>cnp.PyArray_DATA(out)
        with nogil:
            if apart:  # the dictionary page alone, then the data pages after it
                size = _write(pages, 1, valid_ptr, encoding, &dict_used, level, min_saving, cctx, out_ptr, scratch,
                              0)
                if size >= 0:
                    got = _write(pages + 1, n - 1, valid_ptr, encoding, &used, level, min_saving, cctx,
                                 out_ptr + size, scratch, zstd_block)
                    size = -1 if got < 0 else size + got
            else:
                size = _write(pages, n, valid_ptr, encoding, &used, level, min_saving, cctx, out_ptr, scratch,
                              zstd_block)
        if size < 0:
            raise RuntimeError(f"compression with codec {codec} (dictionary page: {dict_used}) failed")
        lengths = np.empty(n, dtype=np.int64)
        raw = np.empty(n, dtype=np.int64)
        for k in range(n):
            lengths[k] = PAGE_HEADER_SIZE + pages[k].stored
            raw[k] = pages[k].raw
        return out[:size], used, lengths, raw
    finally:
        if cctx != NULL and (compressor is None or cctx != compressor.cctx):
            compressor_free(cctx)
        free(scratch)
        free(pages)
