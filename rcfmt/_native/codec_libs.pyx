"""The zstd and LZ4 entry points, for decompression and compression without the GIL.

They are resolved once, at import, from the libraries the ``zstandard`` and ``lz4`` wheels
already load (their extension modules export the C symbols), else from the system's
``libzstd.so.1`` / ``liblz4.so.1``. Only stable, documented ABI functions are used
(``ZSTD_decompressDCtx``, ``ZSTD_compress2``, ``LZ4_decompress_safe``,
``LZ4_compress_default``), declared here; nothing is linked at build time, so ``pip
install`` needs no codec headers. Callers (the page pipeline, the page writer) fall back
to the Python codecs when an entry point is missing or :func:`use_native_codecs` turned
them off. Each thread keeps one zstd decompression context between calls."""
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy
from posix.dlfcn cimport RTLD_LOCAL, RTLD_NOW, dlopen, dlsym

import sys
import os

from rcfmt._native.format cimport CODEC_LZ4, CODEC_ZSTD

__all__ = ["codec_sources", "use_native_codecs"]

ctypedef void* (*zstd_create_t)() noexcept nogil
ctypedef size_t (*zstd_free_t)(void*) noexcept nogil
ctypedef size_t (*zstd_decompress_t)(void*, void*, size_t, const void*, size_t) noexcept nogil
ctypedef unsigned (*zstd_is_error_t)(size_t) noexcept nogil
ctypedef const char* (*zstd_error_name_t)(size_t) noexcept nogil
ctypedef unsigned (*zstd_version_t)() noexcept nogil
ctypedef int (*lz4_decompress_t)(const char*, char*, int, int) noexcept nogil
ctypedef size_t (*zstd_set_parameter_t)(void*, int, int) noexcept nogil
ctypedef size_t (*zstd_compress2_t)(void*, void*, size_t, const void*, size_t) noexcept nogil
ctypedef int (*lz4_compress_t)(const char*, char*, int, int) noexcept nogil
ctypedef size_t (*zstd_stream2_t)(void*, ZstdOut*, ZstdIn*, int) noexcept nogil
ctypedef size_t (*zstd_dstream_t)(void*, ZstdOut*, ZstdIn*) noexcept nogil
ctypedef size_t (*zstd_reset_t)(void*, int) noexcept nogil
ctypedef size_t (*zstd_pledge_t)(void*, unsigned long long) noexcept nogil

cdef zstd_create_t _zstd_create = NULL
cdef zstd_free_t _zstd_free = NULL


cdef extern from *:
    """
    #include <pthread.h>
    /* One zstd decompression context per thread, kept between calls (creating and
       freeing one per call cost ~12 us: its ~160 KB workspace), freed when the thread
       exits (the pthread key's destructor: a scan's pool threads do not leak them). */
    static pthread_key_t rc_zkey;
    static pthread_once_t rc_zonce = PTHREAD_ONCE_INIT;
    static int rc_zkey_ok = 0;
    static size_t (*rc_zfree)(void*) = NULL;
    static void rc_zdestroy(void* ctx) { if (ctx && rc_zfree) rc_zfree(ctx); }
    static void rc_zinit(void) { rc_zkey_ok = pthread_key_create(&rc_zkey, rc_zdestroy) == 0; }
    static void* rc_zctx_get(void) {
        pthread_once(&rc_zonce, rc_zinit);
        return rc_zkey_ok ? pthread_getspecific(rc_zkey) : NULL;
    }
    /* keep ``ctx`` for this thread; 0 when it cannot be kept (the caller frees it) */
    static int rc_zctx_keep(void* ctx, size_t (*free_fn)(void*)) {
        rc_zfree = free_fn;
        pthread_once(&rc_zonce, rc_zinit);
        return rc_zkey_ok && pthread_setspecific(rc_zkey, ctx) == 0;
    }
    static void rc_zctx_drop(void) { if (rc_zkey_ok) pthread_setspecific(rc_zkey, NULL); }
    """
    void* rc_zctx_get() noexcept nogil
    int rc_zctx_keep(void* ctx, zstd_free_t free_fn) noexcept nogil
    void rc_zctx_drop() noexcept nogil
cdef zstd_decompress_t _zstd_decompress = NULL
cdef zstd_is_error_t _zstd_is_error = NULL
cdef zstd_error_name_t _zstd_error_name = NULL
cdef lz4_decompress_t _lz4_decompress = NULL
cdef zstd_create_t _zstd_create_c = NULL
cdef zstd_free_t _zstd_free_c = NULL
cdef zstd_set_parameter_t _zstd_set_parameter = NULL
cdef zstd_compress2_t _zstd_compress2 = NULL
cdef lz4_compress_t _lz4_compress = NULL
# the streaming entry points (stable API, zstd >= 1.4): zstd blocks ended inside a page's
# frame on the writer's side, a frame inflated up to a prefix on the reader's
cdef zstd_stream2_t _zstd_compress_stream2 = NULL
cdef zstd_reset_t _zstd_cctx_reset = NULL
cdef zstd_pledge_t _zstd_pledge = NULL
cdef zstd_dstream_t _zstd_decompress_stream = NULL
cdef zstd_reset_t _zstd_dctx_reset = NULL
cdef bint _native_codecs = True
_SOURCES = {"zstd": None, "lz4": None, "zstd compress": None, "lz4 compress": None}


cdef void* _open(str path):
    cdef bytes b = os.fsencode(path)
    return dlopen(b, RTLD_NOW | RTLD_LOCAL)


cdef void* _sym(void* handle, const char* name) noexcept:
    return dlsym(handle, name) if handle != NULL else NULL


def _package_spec(top):
    """The import spec of top-level package ``top`` as the import system finds it, or
    None (what ``importlib.util.find_spec`` does, without importing ``importlib.util``)."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(top, None)
        except (ImportError, ValueError):
            return None
        if spec is not None:
            return spec
    return None


def _module_files(module_name, patterns):
    """Files named ``prefix*suffix`` (``patterns``: such pairs) in the directory of
    (sub)package ``module_name``, found without importing it: only its shared library is
    wanted, not its Python module (nor ``glob``'s patterns compiled)."""
    top, _, rest = module_name.partition(".")
    spec = _package_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return []
    where = os.path.join(list(spec.submodule_search_locations)[0], *(rest.split(".") if rest else ()))
    try:
        names = sorted(os.listdir(where))
    except OSError:
        return []
    return [os.path.join(where, name) for prefix, suffix in patterns for name in names
            if name.startswith(prefix) and name.endswith(suffix) and len(name) >= len(prefix) + len(suffix)]


def _resolve_codecs():
    """Find zstd and LZ4 entry points (see the module docstring); record where from."""
    global _zstd_create, _zstd_free, _zstd_decompress, _zstd_is_error, _zstd_error_name, _lz4_decompress
    global _zstd_create_c, _zstd_free_c, _zstd_set_parameter, _zstd_compress2, _lz4_compress
    global _zstd_compress_stream2, _zstd_cctx_reset, _zstd_pledge, _zstd_decompress_stream, _zstd_dctx_reset
    cdef void* h
    cdef zstd_version_t version
    for path in _module_files("zstandard", [("_cffi", ".so"), ("backend_c", ".so")]) + ["libzstd.so.1", "libzstd.so"]:
        h = _open(path)
        version = <zstd_version_t>_sym(h, "ZSTD_versionNumber")
        if version == NULL or version() < 10400:
            continue
        if _zstd_decompress == NULL:
            _zstd_create = <zstd_create_t>_sym(h, "ZSTD_createDCtx")
            _zstd_free = <zstd_free_t>_sym(h, "ZSTD_freeDCtx")
            _zstd_decompress = <zstd_decompress_t>_sym(h, "ZSTD_decompressDCtx")
            _zstd_is_error = <zstd_is_error_t>_sym(h, "ZSTD_isError")
            _zstd_error_name = <zstd_error_name_t>_sym(h, "ZSTD_getErrorName")
            if (_zstd_create != NULL and _zstd_free != NULL and _zstd_decompress != NULL
                    and _zstd_is_error != NULL and _zstd_error_name != NULL):
                _SOURCES["zstd"] = path
                _zstd_decompress_stream = <zstd_dstream_t>_sym(h, "ZSTD_decompressStream")
                _zstd_dctx_reset = <zstd_reset_t>_sym(h, "ZSTD_DCtx_reset")
                if _zstd_dctx_reset == NULL:
                    _zstd_decompress_stream = NULL
            else:
                _zstd_decompress = NULL
        if _zstd_compress2 == NULL and _zstd_decompress != NULL:  # (ZSTD_isError comes with it)
            _zstd_create_c = <zstd_create_t>_sym(h, "ZSTD_createCCtx")
            _zstd_free_c = <zstd_free_t>_sym(h, "ZSTD_freeCCtx")
            _zstd_set_parameter = <zstd_set_parameter_t>_sym(h, "ZSTD_CCtx_setParameter")
            _zstd_compress2 = <zstd_compress2_t>_sym(h, "ZSTD_compress2")
            if (_zstd_create_c != NULL and _zstd_free_c != NULL and _zstd_set_parameter != NULL
                    and _zstd_compress2 != NULL):
                _SOURCES["zstd compress"] = path
                _zstd_compress_stream2 = <zstd_stream2_t>_sym(h, "ZSTD_compressStream2")
                _zstd_cctx_reset = <zstd_reset_t>_sym(h, "ZSTD_CCtx_reset")
                _zstd_pledge = <zstd_pledge_t>_sym(h, "ZSTD_CCtx_setPledgedSrcSize")
                if _zstd_cctx_reset == NULL or _zstd_pledge == NULL:
                    _zstd_compress_stream2 = NULL
            else:
                _zstd_compress2 = NULL
        if _zstd_decompress != NULL and _zstd_compress2 != NULL:
            break
    for path in _module_files("lz4.block", [("_block", ".so")]) + ["liblz4.so.1", "liblz4.so"]:
        h = _open(path)
        if _lz4_decompress == NULL:
            _lz4_decompress = <lz4_decompress_t>_sym(h, "LZ4_decompress_safe")
            if _lz4_decompress != NULL:
                _SOURCES["lz4"] = path
        if _lz4_compress == NULL:
            _lz4_compress = <lz4_compress_t>_sym(h, "LZ4_compress_default")
            if _lz4_compress != NULL:
                _SOURCES["lz4 compress"] = path
        if _lz4_decompress != NULL and _lz4_compress != NULL:
            break


_resolve_codecs()


def codec_sources():
    """Where each codec's native decompressor was found (None: decompressed in Python)."""
    return dict(_SOURCES)


def use_native_codecs(bint enabled):
    """Turn the native codecs (both directions) off (tests of the Python fallback) or back on."""
    global _native_codecs
    _native_codecs = enabled


cdef enum:
    ZSTD_C_COMPRESSION_LEVEL = 100    # ZSTD_c_compressionLevel (stable API, zstd >= 1.4)
    ZSTD_C_CONTENT_SIZE_FLAG = 200    # ZSTD_c_contentSizeFlag
    ZSTD_E_FLUSH = 1                  # ZSTD_EndDirective: end the current block
    ZSTD_E_END = 2                    # ... and the frame
    ZSTD_RESET_SESSION_ONLY = 1       # ZSTD_ResetDirective


cdef bint compress_native(int codec) noexcept nogil:
    """Whether :func:`compress_into` compresses ``codec`` without the GIL."""
    if not _native_codecs:
        return False
    return (codec == CODEC_ZSTD and _zstd_compress2 != NULL) or (codec == CODEC_LZ4 and _lz4_compress != NULL)


cdef Py_ssize_t compress_bound(int codec, Py_ssize_t n) noexcept nogil:
    """The most bytes compressing ``n`` bytes with ``codec`` may take (natively)."""
    if codec == CODEC_ZSTD:  # ZSTD_COMPRESSBOUND, as documented in zstd.h
        return n + (n >> 8) + (((128 << 10) - n) >> 11 if n < (128 << 10) else 0)
    return n + n // 255 + 16  # LZ4_COMPRESSBOUND, as documented in lz4.h


cdef void* compressor_new() noexcept nogil:
    """A zstd compression context (NULL when zstd is not resolved or memory is out)."""
    return _zstd_create_c() if _zstd_create_c != NULL else NULL


cdef void compressor_free(void* cctx) noexcept nogil:
    if cctx != NULL and _zstd_free_c != NULL:
        _zstd_free_c(cctx)


cdef Py_ssize_t compress_into(int codec, int level, const uint8_t* src, Py_ssize_t n, uint8_t* dst,
                              Py_ssize_t cap, void* cctx) noexcept nogil:
    """Compress ``src[:n]`` into ``dst[:cap]`` (``cap`` >= :func:`compress_bound`) as
    :func:`rcfmt.codecs.compress` does: zstd frames without content size, byte for byte
    the same; LZ4 raw blocks from ``LZ4_compress_default`` (python-lz4's output differs
    in a few matches, within 0.1% in size). The stored size, or -1 (a codec error, or not
    :func:`compress_native`)."""
    cdef size_t got
    cdef int lz4_got
    if codec == CODEC_ZSTD and _native_codecs and _zstd_compress2 != NULL and cctx != NULL:
        if (_zstd_is_error(_zstd_set_parameter(cctx, ZSTD_C_COMPRESSION_LEVEL, level))
                or _zstd_is_error(_zstd_set_parameter(cctx, ZSTD_C_CONTENT_SIZE_FLAG, 0))):
            return -1
        got = _zstd_compress2(cctx, dst, <size_t>cap, src, <size_t>n)
        return -1 if _zstd_is_error(got) else <Py_ssize_t>got
    if codec == CODEC_LZ4 and _native_codecs and _lz4_compress != NULL and n <= 0x7E000000:
        lz4_got = _lz4_compress(<const char*>src, <char*>dst, <int>n, <int>min(cap, <Py_ssize_t>0x7FFFFFFF))
        return lz4_got if lz4_got > 0 else -1
    return -1


cdef bint blocks_native() noexcept nogil:
    """Whether :func:`compress_blocks_into` can end zstd blocks where it is told."""
    return _native_codecs and _zstd_compress2 != NULL and _zstd_compress_stream2 != NULL


cdef Py_ssize_t compress_blocks_into(int level, const uint8_t* src, Py_ssize_t n, uint8_t* dst, Py_ssize_t cap,
                                     void* cctx, Py_ssize_t block) noexcept nogil:
    """:func:`compress_into` for zstd, one frame whose blocks end every ``block`` bytes
    of ``src`` (a reader wanting a prefix of it inflates only the blocks before its
    end: :func:`inflate_to`). An ordinary zstd frame, without content size, its window
    no larger than ``n`` needs. The stored size, or -1 (a codec error, not
    :func:`blocks_native`, or ``cap`` too small)."""
    cdef ZstdIn i
    cdef ZstdOut o
    cdef size_t left
    cdef Py_ssize_t upto
    if not blocks_native() or cctx == NULL or block <= 0:
        return -1
    if (_zstd_is_error(_zstd_cctx_reset(cctx, ZSTD_RESET_SESSION_ONLY))
            or _zstd_is_error(_zstd_set_parameter(cctx, ZSTD_C_COMPRESSION_LEVEL, level))
            or _zstd_is_error(_zstd_set_parameter(cctx, ZSTD_C_CONTENT_SIZE_FLAG, 0))
            or _zstd_is_error(_zstd_pledge(cctx, <unsigned long long>n))):
        return -1
    i.src = src
    i.size = 0
    i.pos = 0
    o.dst = dst
    o.size = <size_t>cap
    o.pos = 0
    upto = 0
    while True:
        upto = min(upto + block, n)
        i.size = <size_t>upto
        while True:  # until this block is out (``left``: bytes zstd still holds)
            left = _zstd_compress_stream2(cctx, &o, &i, ZSTD_E_END if upto == n else ZSTD_E_FLUSH)
            if _zstd_is_error(left):
                _zstd_cctx_reset(cctx, ZSTD_RESET_SESSION_ONLY)
                return -1
            if left == 0 and i.pos == i.size:
                break
            if o.pos == o.size:  # (no room: cap below compress_bound)
                _zstd_cctx_reset(cctx, ZSTD_RESET_SESSION_ONLY)
                return -1
        if upto == n:
            return <Py_ssize_t>o.pos


# ------------------------------------------------------------------ decompression
cdef void* dctx_of_thread() noexcept nogil:
    """This thread's zstd decompression context (NULL before its first zstd page)."""
    return rc_zctx_get()


cdef void dctx_done(void* ctx, void* held, bint failed) noexcept nogil:
    """After a run of pages decompressed with ``ctx`` (``held``: the thread's context
    when the run began): a context that failed is freed (and no longer the thread's);
    one created during the run is kept for the thread's next calls."""
    if ctx == NULL:
        return
    if failed:
        if ctx == held:
            rc_zctx_drop()
        _zstd_free(ctx)
    elif ctx != held:
        if not rc_zctx_keep(ctx, _zstd_free):
            _zstd_free(ctx)


cdef int decompress_native(int codec, const uint8_t* src, Py_ssize_t n, uint8_t* dst, Py_ssize_t cap,
                           void** dctx, int64_t* detail) noexcept nogil:
    """Decompress ``src[:n]`` into exactly ``dst[:cap]`` natively (``dctx``: the zstd
    context, created here when NULL): DEC_OK, DEC_NO_MEMORY, DEC_FAILED (``detail``:
    zstd's error code, 0 for LZ4), DEC_SIZE (``detail``: the size it decompressed to),
    or DEC_UNAVAILABLE (no native entry point for ``codec``, or turned off)."""
    cdef size_t got
    cdef int lz4_got
    if codec == CODEC_ZSTD and _native_codecs and _zstd_decompress != NULL:
        if dctx[0] == NULL:
            dctx[0] = _zstd_create()
            if dctx[0] == NULL:
                return DEC_NO_MEMORY
        got = _zstd_decompress(dctx[0], dst, <size_t>cap, src, <size_t>n)
        if _zstd_is_error(got):
            detail[0] = <int64_t>got
            return DEC_FAILED
        if <Py_ssize_t>got != cap:
            detail[0] = <int64_t>got
            return DEC_SIZE
        return DEC_OK
    if codec == CODEC_LZ4 and _native_codecs and _lz4_decompress != NULL:
        lz4_got = _lz4_decompress(<const char*>src, <char*>dst, <int>n, <int>cap) if n <= 0x7FFFFFFF else -1
        if lz4_got < 0:
            detail[0] = 0
            return DEC_FAILED
        if lz4_got != cap:
            detail[0] = lz4_got
            return DEC_SIZE
        return DEC_OK
    return DEC_UNAVAILABLE


cdef bint partial_native() noexcept nogil:
    """Whether :func:`inflate_to` can inflate a zstd frame part of the way."""
    return _native_codecs and _zstd_decompress != NULL and _zstd_decompress_stream != NULL


cdef bint zstd_blocks_apart(const uint8_t* src, Py_ssize_t n, Py_ssize_t raw) noexcept nogil:
    """Whether the zstd frame ``src[:n]`` (``raw`` bytes inflated) is worth inflating
    part of the way (:func:`inflate_to`): its first block is not its last, and the
    window its header declares -- the buffer a streaming inflation allocates -- is at
    most ``max(2 raw, 128 KiB)`` and at most the 128 MiB zstd's streaming inflation
    accepts by default (ZSTD_WINDOWLOG_LIMIT_DEFAULT; a one-shot one has no such limit):
    RFC 8878 3.1.1, a forged window is inflated whole."""
    cdef uint32_t magic
    cdef int fhd, single, dict_flag, fcs_flag, wd, i
    cdef Py_ssize_t pos
    cdef uint64_t fcs = 0
    cdef int64_t window, limit = min(max(2 * <int64_t>raw, <int64_t>1 << 17), <int64_t>1 << 27)
    if n < 6:
        return False
    memcpy(&magic, src, 4)
    if magic != 0xFD2FB528U:  # (its magic number)
        return False
    fhd = src[4]
    single = (fhd >> 5) & 1
    dict_flag = fhd & 3
    fcs_flag = fhd >> 6
    pos = (5 + (0 if single else 1) + (dict_flag if dict_flag < 3 else 4)
           + ((1 << fcs_flag) if fcs_flag else single))  # (window, dictionary id, content size)
    if pos + 3 > n:
        return False
    if single:  # the window is the content size the header declares (forged: not the page's)
        for i in range(pos - 1, pos - 1 - ((1 << fcs_flag) if fcs_flag else 1), -1):  # (little-endian)
            fcs = (fcs << 8) | src[i]
        if fcs_flag == 1:
            fcs += 256
        window = <int64_t>fcs if fcs < (<uint64_t>1 << 62) else <int64_t>1 << 62
    else:
        wd = src[5]
        window = (<int64_t>1) << (10 + (wd >> 3))
        window += (window >> 3) * (wd & 7)
    return window <= limit and (src[pos] & 1) == 0


cdef int inflate_begin(Inflater* z, void** dctx, const uint8_t* src, Py_ssize_t n, uint8_t* dst,
                       Py_ssize_t cap) noexcept nogil:
    """Start inflating the zstd frame ``src[:n]`` (``cap`` bytes uncompressed) into
    ``dst`` with ``dctx[0]`` (created when NULL): DEC_OK, DEC_NO_MEMORY or DEC_UNAVAILABLE
    (not :func:`partial_native`)."""
    if not partial_native():
        return DEC_UNAVAILABLE
    if dctx[0] == NULL:
        dctx[0] = _zstd_create()
        if dctx[0] == NULL:
            return DEC_NO_MEMORY
    _zstd_dctx_reset(dctx[0], ZSTD_RESET_SESSION_ONLY)  # (whatever frame it was in is dropped)
    z.src.src = src
    z.src.size = <size_t>n
    z.src.pos = 0
    z.out.dst = dst
    z.out.size = 0
    z.out.pos = 0
    z.cap = cap
    z.ended = False
    return DEC_OK


cdef int _inflate_whole(Inflater* z, void* dctx, int64_t* detail) noexcept nogil:
    """The whole body inflated one-shot (as the reference decoder does), when the
    streaming inflation stopped short of ``need``: the body holds more than the frame
    (several frames, skippable ones), or zstd's streaming refused what its one-shot
    inflation reads. :func:`decompress_native`'s answer."""
    cdef void* ctx = dctx
    cdef int rc = decompress_native(CODEC_ZSTD, <const uint8_t*>z.src.src, <Py_ssize_t>z.src.size,
                                    <uint8_t*>z.out.dst, z.cap, &ctx, detail)
    if rc == DEC_OK:
        z.out.pos = <size_t>z.cap
        z.ended = True
    return rc


cdef int inflate_to(Inflater* z, void* dctx, Py_ssize_t need, int64_t* detail) noexcept nogil:
    """Inflate the frame :func:`inflate_begin` started until ``dst[:need]`` holds its
    first ``need`` bytes (``need`` at most the frame's ``cap``): zstd inflates whole
    blocks, so what follows is inflated only as far as the block holding byte ``need -
    1``. Where the streaming inflation stops short (the frame ends early or is followed
    by more, zstd refuses it) the body is inflated whole, one-shot (:func:`_inflate_whole`):
    DEC_OK; DEC_FAILED (``detail``: zstd's error code); DEC_SIZE (``detail``: the body
    inflated to that many bytes)."""
    cdef size_t got
    while <Py_ssize_t>z.out.pos < need:
        if z.ended or z.src.pos == z.src.size:  # (the frame ended, or wants more bytes than the page stores)
            return _inflate_whole(z, dctx, detail)
        z.out.size = <size_t>need
        got = _zstd_decompress_stream(dctx, &z.out, &z.src)
        if _zstd_is_error(got):
            return _inflate_whole(z, dctx, detail)
        z.ended = got == 0
    return DEC_OK


cdef const char* zstd_error_name(size_t code) noexcept nogil:
    """zstd's name for an error code :func:`decompress_native` reported."""
    if _zstd_error_name == NULL:
        return "zstd error"
    return _zstd_error_name(code)
