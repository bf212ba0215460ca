"""One column chunk of a block, decoded by the block executor (:mod:`rcfmt._native.block`)
without the GIL: its dictionary page checked and decoded, its data pages' headers and
bodies checked and decompressed (the page pipeline's cores), their values decoded in
every mode (or gathered at the wanted rows where they lie), strings and binary into
offsets and owned data, the filter evaluated page by page while the values are in cache,
and the checks Arrow's validation needs. A failure sets the column's status (``ST_*`` of
:mod:`rcfmt._native.abi`) and the page, and leaves its outputs undefined."""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memmove, memset

from rcfmt._native.decoders cimport (MODE_ALP, MODE_ALP_SPLIT, MODE_BITPACK, MODE_BITPACK_DECIMAL, MODE_BOOL_PLAIN,
                                     MODE_BOOL_RLE, MODE_CODES, MODE_DELTA, MODE_PLAIN, MODE_RLE, MODE_SPLIT,
                                     VB_DELTA_LENGTH, VB_PLAIN, _bitpack_gather, _codes_gather, _page_offsets,
                                     _page_values, _plain_gather)
from rcfmt._native.pages cimport P_ARENA, P_AT, P_COLS, P_FIRST, P_LEN, P_NULLS, P_POS, P_ROWS
from rcfmt._native.pages cimport LAZY, Failure, _bodies, _headers
from rcfmt._native.codec_libs cimport DEC_OK, Inflater, dctx_done, dctx_of_thread, inflate_begin, inflate_to
from rcfmt._native.filters cimport (F_NULLS, Filter, Flt, _codes_into, _filter_entries, _narrow_decimals_into,
                                    _put)
from rcfmt._native.offsets cimport offset_fits, put_offset
from rcfmt._native.validate cimport decimal_row, utf8_row32, utf8_rows
from rcfmt._native.abi cimport (C_DICT_LENGTH, C_DICT_SIZE, C_ENCODING, C_LENGTH, C_OFFSET, C_PAGES, KIND_BOOL,
                                KIND_VARBINARY, S_DECIMAL, S_ENCODINGS, S_KIND, S_LARGE, S_PRECISION, S_SIGNED,
                                S_UTF8, S_WIDTH, ST_CHUNK, ST_COUNTS, ST_DICTIONARY, ST_INVALID, ST_MEMORY, ST_PAGES,
                                ST_TOO_BIG, ST_UNLISTED, ST_UNSUPPORTED, ST_VALUES)
from rcfmt._native.format cimport (ENC_ALP, ENC_ALP_SPLIT, ENC_BITPACK, ENC_BYTE_SPLIT, ENC_DELTA, ENC_DELTA_LENGTH,
                                   ENC_DICTIONARY, ENC_PLAIN, ENC_RLE, MAX_PAGE_ROWS, PAGE_DATA, PAGE_DICTIONARY,
                                   PAGE_HEADER_SIZE)
from rcfmt._native.column cimport (GATHER_SPARSE, Col, _arena_bytes, _body, _fail, _first_offset,
                                   _page_selection, _round8, _round64, _values_bytes)
from rcfmt._native.gather cimport (_gather_fixed, _gather_in_place, _gather_rows, _gather_validity,
                                   _gather_varbinary, _own_arena, _pack_bits, _widen_decimals)


cdef extern from *:
    """
    #include <pthread.h>
    #include <stdlib.h>
    #include <string.h>
    /* The executor's large buffers (a chunk's decompressed page bodies, strings' data),
       kept for reuse: glibc serves blocks this large by mmap, so each column of each
       block faulted its pages in afresh (a 500,000-row string chunk: 13 MB of bodies, a
       quarter of its filter's time). A 16-byte header before each block holds its
       capacity (0: an ordinary malloc, freed at once). At most RC_KEPT_SLOTS blocks,
       RC_KEPT_BYTES in all, are kept, process-wide; a block is reused by a request of at
       least half its capacity. (SF1 lineitem over 12 files, alternating processes: a
       3-string IN-list 542 -> 408 ms of CPU, 80k -> 2k page faults; a 2-thread full scan
       707 -> 658 ms, 1 thread even. 16 slots left a 1-thread full scan 5% slower, as
       blocks kept out of glibc's hands left its own reuse fewer; 256 MB gained 5% more.) */
    #define RC_BIG_BYTES ((size_t)1 << 20)
    #define RC_KEPT_SLOTS 48
    #define RC_KEPT_BYTES ((size_t)128 << 20)
    static void* rc_kept[RC_KEPT_SLOTS];
    static size_t rc_kept_cap[RC_KEPT_SLOTS];
    static size_t rc_kept_total = 0;
    static pthread_mutex_t rc_kept_lock = PTHREAD_MUTEX_INITIALIZER;
    /* a child forked while another thread held the lock (a Spark worker) starts with
       it free: the kept blocks are its own copies */
    static void rc_kept_child(void) {
        pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
        rc_kept_lock = fresh;
    }
    static void rc_kept_init(void) { pthread_atfork(NULL, NULL, rc_kept_child); }

    static void* rc_tmp_alloc(size_t n) {
        size_t* h = NULL; size_t cap = 0; int i, best = -1;
        if (n >= RC_BIG_BYTES) {
            pthread_mutex_lock(&rc_kept_lock);
            for (i = 0; i < RC_KEPT_SLOTS; i++)
                if (rc_kept[i] && rc_kept_cap[i] >= n && rc_kept_cap[i] / 2 <= n
                        && (best < 0 || rc_kept_cap[i] < rc_kept_cap[best]))
                    best = i;
            if (best >= 0) {
                h = (size_t*)rc_kept[best]; cap = rc_kept_cap[best];
                rc_kept[best] = NULL; rc_kept_total -= cap;
            }
            pthread_mutex_unlock(&rc_kept_lock);
            if (h == NULL) { cap = n; h = (size_t*)malloc(n + 16); }
        } else {
            h = (size_t*)malloc(n + 16);
        }
        if (h == NULL) return NULL;
        h[0] = cap;
        return (void*)((char*)h + 16);
    }

    static void rc_tmp_free(void* p) {
        size_t* h; size_t cap; int i, slot = -1;
        if (p == NULL) return;
        h = (size_t*)((char*)p - 16); cap = h[0];
        if (cap) {
            pthread_mutex_lock(&rc_kept_lock);
            if (rc_kept_total + cap <= RC_KEPT_BYTES)
                for (i = 0; i < RC_KEPT_SLOTS && slot < 0; i++)
                    if (rc_kept[i] == NULL) slot = i;
            if (slot >= 0) { rc_kept[slot] = h; rc_kept_cap[slot] = cap; rc_kept_total += cap; h = NULL; }
            pthread_mutex_unlock(&rc_kept_lock);
        }
        free(h);
    }

    /* ``p`` holding ``n`` bytes worth keeping: an ordinary block shrunk by realloc, a
       kept-size one moved to an exact block when it would hold twice what it keeps */
    static void* rc_tmp_shrink(void* p, size_t n) {
        size_t* h = (size_t*)((char*)p - 16); size_t* e;
        if (h[0] == 0) {
            e = (size_t*)realloc(h, n + 16);
            return e == NULL ? p : (void*)((char*)e + 16);
        }
        if (n >= h[0] / 2) return p;
        e = (size_t*)malloc(n + 16);
        if (e == NULL) return p;
        e[0] = 0;
        memcpy((char*)e + 16, p, n);
        rc_tmp_free(p);
        return (void*)((char*)e + 16);
    }
    """
    void* rc_tmp_alloc(size_t n) noexcept nogil
    void rc_tmp_free(void* p) noexcept nogil
    void* rc_tmp_shrink(void* p, size_t n) noexcept nogil
    void rc_kept_init() noexcept nogil


rc_kept_init()


cdef void* tmp_alloc(size_t n) noexcept nogil:
    """``n`` bytes for a large buffer (freed by :func:`tmp_free` only), or NULL."""
    return rc_tmp_alloc(n)


cdef void tmp_free(void* p) noexcept nogil:
    rc_tmp_free(p)


cdef void* tmp_shrink(void* p, size_t n) noexcept nogil:
    """``p`` (of :func:`tmp_alloc`) keeping its first ``n`` bytes, perhaps moved; never NULL."""
    return rc_tmp_shrink(p, n)


cdef void _free_temporaries(Col* col) noexcept nogil:
    rc_tmp_free(col.arena)
    free(col.darena)
    free(col.scratch)
    free(col.codes)
    free(col.dvalues)
    free(col.dlocal)
    free(col.dpadded)
    free(col.pagebuf)
    free(col.vfull)
    free(col.rel)
    col.rel = NULL
    col.dpadded = NULL
    col.pagebuf = NULL
    col.vfull = NULL
    col.arena = NULL
    col.darena = NULL
    col.scratch = NULL
    col.codes = NULL
    col.dvalues = NULL
    col.dlocal = NULL


cdef void _free_outputs(Col* col) noexcept nogil:
    tmp_free(col.data)
    free(col.ddata)
    free(col.doffs)
    free(col.own)
    free(col.kept)
    col.data = NULL
    col.ddata = NULL
    col.doffs = NULL
    col.own = NULL
    col.kept = NULL


cdef int _dictionary(const uint8_t* buf, Py_ssize_t size, int64_t at, Col* col, bint verify,
                     int64_t[:, ::1] t, const uint8_t** ddata, int64_t* ddata_len) except -1 nogil:
    """Decode and check the dictionary page at ``buf[at]`` (what ChunkDecoder.dictionary
    checks): fixed-width entries into ``col.dvalues``, strings/binary as offsets
    ``col.dlocal`` over ``ddata``. 0, or a status."""
    cdef const int64_t* s = col.s
    cdef const int64_t* c = col.c
    cdef Failure f
    cdef int64_t pos = at
    cdef int64_t dsize = c[C_DICT_SIZE]
    cdef Py_ssize_t n = 0, nrows = 0, arena_size = 0, run_end = 0, blen, dlen = 0
    cdef bint any_nulls = False
    cdef const uint8_t* body
    cdef const uint8_t* d = NULL
    cdef int width = <int>s[S_WIDTH]
    memset(&f, 0, sizeof(Failure))
    if dsize > MAX_PAGE_ROWS:
        return _fail(col, ST_DICTIONARY, -1)
    if _headers(buf, size, 0, size, &pos, NULL, NULL, 1, 1, MAX_PAGE_ROWS, PAGE_DICTIONARY, 0, t, &n, &nrows,
                &arena_size, &run_end, &any_nulls, &f):
        return _fail(col, ST_PAGES, -1)
    if run_end != at + c[C_DICT_LENGTH] or nrows != dsize or any_nulls:
        return _fail(col, ST_DICTIONARY, -1)
    col.darena = <uint8_t*>malloc(arena_size)
    if col.darena == NULL:
        return _fail(col, ST_MEMORY, -1)
    if _bodies(buf, t, 1, col.darena, NULL, verify, &f):
        return _fail(col, ST_PAGES, -1)
    body = (col.darena if t[0, P_ARENA] else buf) + t[0, P_AT]
    blen = t[0, P_LEN]
    col.dsize = dsize
    if s[S_KIND] == KIND_VARBINARY:  # PLAIN: int32 offsets, then the data
        col.dlocal = <uint32_t*>malloc(4 * (dsize + 1))
        if col.dlocal == NULL:
            return _fail(col, ST_MEMORY, -1)
        if _page_offsets(VB_PLAIN, body, blen, dsize, col.dlocal, &d, &dlen):
            return _fail(col, ST_DICTIONARY, -1)
        if s[S_UTF8] and utf8_row32(d, dlen, <const int32_t*>col.dlocal, dsize) >= 0:
            return _fail(col, ST_INVALID, -1)
        # a copy with 16 bytes of slack: values of at most 16 bytes are gathered as 16
        col.dpadded = <uint8_t*>malloc(dlen + 16)
        if col.dpadded == NULL:
            return _fail(col, ST_MEMORY, -1)
        if dlen:
            memcpy(col.dpadded, d, dlen)
        memset(col.dpadded + dlen, 0, 16)
        ddata[0] = col.dpadded
        ddata_len[0] = dlen
        return 0
    if blen != dsize * width:
        return _fail(col, ST_DICTIONARY, -1)
    col.dvalues = <uint8_t*>malloc(blen + 8)
    if col.dvalues == NULL:
        return _fail(col, ST_MEMORY, -1)
    memcpy(col.dvalues, body, blen)
    if s[S_DECIMAL] and decimal_row(<const uint64_t*>col.dvalues, dsize, <int>s[S_PRECISION]) >= 0:
        return _fail(col, ST_INVALID, -1)
    return 0


cdef int _varbinary(Col* col, const uint8_t* buf, int64_t[:, ::1] t, Py_ssize_t n, int enc,
                    uint64_t* aligned) noexcept nogil:
    """PLAIN / DELTA_LENGTH strings/binary of every page into offsets (the arena) and
    owned data (as ChunkDecoder._native_varbinary), then the UTF-8 check."""
    cdef int mode = VB_PLAIN if enc == ENC_PLAIN else VB_DELTA_LENGTH
    cdef Py_ssize_t k, i, capacity = 0, data_len = 0
    cdef int64_t pos = 0, first, rows = 0
    cdef const uint8_t* data = NULL
    cdef uint32_t* local = <uint32_t*>col.scratch
    cdef bint wide = col.s[S_LARGE] != 0
    for k in range(n):
        capacity += t[k, P_LEN]
        rows += t[k, P_ROWS]
    if col.sel != NULL:
        return _varbinary_selected(col, buf, t, n, mode, capacity, aligned)
    col.data = <uint8_t*>tmp_alloc(capacity + 1)
    if col.data == NULL:
        return _fail(col, ST_MEMORY, -1)
    _first_offset(col, wide)
    for k in range(n):
        if _page_offsets(mode, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], local, &data,
                         &data_len) or pos + data_len > capacity:
            return _fail(col, ST_VALUES, k)
        if not offset_fits(wide, pos + data_len):
            return _fail(col, ST_TOO_BIG, k)
        first = t[k, P_FIRST]
        for i in range(1, t[k, P_ROWS] + 1):
            put_offset(col.values, wide, first + i, pos + local[i])
        if data_len:
            memcpy(col.data + pos, data, data_len)
        pos += data_len
    col.data_len = pos
    if col.s[S_UTF8]:
        if utf8_rows(col.data, pos, col.values, wide, rows) >= 0:
            return _fail(col, ST_INVALID, -1)
    return 0


cdef int _varbinary_selected(Col* col, const uint8_t* buf, int64_t[:, ::1] t, Py_ssize_t n, int mode,
                             Py_ssize_t capacity, uint64_t* aligned) noexcept nogil:
    """:func:`_varbinary` for the wanted rows only: the pages holding one are read, their
    wanted strings copied; the UTF-8 check covers what is returned. A lazy page
    (``P_ARENA`` LAZY) is inflated only as far as its last wanted string."""
    cdef void* zctx = dctx_of_thread()
    cdef void* held = zctx
    cdef int rc = 0
    try:
        rc = _varbinary_picked(col, buf, t, n, mode, capacity, aligned, &zctx)
    finally:
        dctx_done(zctx, held, rc != 0)
    return rc


cdef int _inflate_prefix(const uint8_t* buf, int64_t[:, ::1] t, Py_ssize_t k, uint8_t* arena, Inflater* z,
                         void** zctx, Py_ssize_t need, bint begin) noexcept nogil:
    """Inflate the first ``need`` bytes (at most all) of lazy page ``k``'s body into its
    place in ``arena``: ``begin`` starts its frame, later calls go on where the last
    stopped. 0, or 1 (the reference decoder then says what is wrong with the page)."""
    cdef uint32_t sizes[2]  # the header's stored and uncompressed sizes (its bytes 16-23, FORMAT.md 4.1)
    cdef int64_t detail = 0
    memcpy(sizes, buf + t[k, P_POS] + 16, 8)
    if begin and inflate_begin(z, zctx, buf + t[k, P_POS] + PAGE_HEADER_SIZE, sizes[0], arena + t[k, P_AT],
                               sizes[1]) != DEC_OK:
        return 1
    return inflate_to(z, zctx[0], min(need, <Py_ssize_t>sizes[1]), &detail) != DEC_OK


cdef int _lazy_offsets(Col* col, const uint8_t* buf, int64_t[:, ::1] t, Py_ssize_t k, int mode, Py_ssize_t j0,
                       Py_ssize_t j1, uint32_t* local, const uint8_t** data, Py_ssize_t* data_len,
                       void** zctx) noexcept nogil:
    """The offsets of lazy page ``k`` (:func:`_page_offsets`), its body inflated up to
    its offsets and then up to the end of its last wanted string (rows ``col.sel[j0:j1]``).
    0, or 1 with the column's status."""
    cdef Inflater z
    cdef uint8_t* body = col.arena + t[k, P_AT]
    cdef Py_ssize_t rows = t[k, P_ROWS], head, j
    cdef uint32_t m = 0, end = 0
    if mode == VB_PLAIN:
        head = 4 * (rows + 1)
        if _inflate_prefix(buf, t, k, col.arena, &z, zctx, head, True):
            return _fail(col, ST_PAGES, k)
    else:  # DELTA_LENGTH: ``u32 m | 4 zero bytes | m bytes of lengths`` first
        if _inflate_prefix(buf, t, k, col.arena, &z, zctx, 8, True):
            return _fail(col, ST_PAGES, k)
        if t[k, P_LEN] >= 8:
            memcpy(&m, body, 4)
        head = 8 + <Py_ssize_t>m
        if _inflate_prefix(buf, t, k, col.arena, &z, zctx, head, False):
            return _fail(col, ST_PAGES, k)
    if _page_offsets(mode, body, t[k, P_LEN], rows, local, data, data_len):  # (reads the head alone)
        return _fail(col, ST_VALUES, k)
    for j in range(j0, j1):
        end = max(end, local[col.sel[j] - t[k, P_FIRST] + 1])
    if _inflate_prefix(buf, t, k, col.arena, &z, zctx, (data[0] - body) + <Py_ssize_t>end, False):
        return _fail(col, ST_PAGES, k)
    return 0


cdef int _varbinary_picked(Col* col, const uint8_t* buf, int64_t[:, ::1] t, Py_ssize_t n, int mode,
                           Py_ssize_t capacity, uint64_t* aligned, void** zctx) noexcept nogil:
    """The body of :func:`_varbinary_selected` (``zctx``: the thread's zstd context)."""
    cdef Py_ssize_t k, data_len = 0, cursor = 0, j0, j1, j
    cdef int64_t pos = 0, first, a, m
    cdef const uint8_t* data = NULL
    cdef uint32_t* local = <uint32_t*>col.scratch
    cdef bint wide = col.s[S_LARGE] != 0
    col.data = <uint8_t*>tmp_alloc(capacity + 1)
    if col.data == NULL:
        return _fail(col, ST_MEMORY, -1)
    _first_offset(col, wide)
    for k in range(n):
        first = t[k, P_FIRST]
        j0 = cursor
        j1 = _page_selection(col, first, t[k, P_ROWS], &cursor)
        if j1 == j0:
            continue
        if t[k, P_ARENA] == LAZY:
            if _lazy_offsets(col, buf, t, k, mode, j0, j1, local, &data, &data_len, zctx):
                return col.status
        elif _page_offsets(mode, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], local, &data,
                           &data_len):
            return _fail(col, ST_VALUES, k)
        for j in range(j0, j1):
            a = local[col.sel[j] - first]
            m = local[col.sel[j] - first + 1] - a
            if pos + m > capacity:
                return _fail(col, ST_VALUES, k)
            if not offset_fits(wide, pos + m):
                return _fail(col, ST_TOO_BIG, k)
            if m:
                memcpy(col.data + pos, data + a, m)
            pos += m
            put_offset(col.values, wide, j + 1, pos)
    col.data_len = pos
    col.data = <uint8_t*>tmp_shrink(col.data, pos + 1)  # (the owner keeps no more than it returns)
    if col.s[S_UTF8]:
        if utf8_rows(col.data, pos, col.values, wide, col.nsel) >= 0:
            return _fail(col, ST_INVALID, -1)
    return 0


cdef void _mark_lazy(const Col* col, int64_t[:, ::1] t, Py_ssize_t n) noexcept nogil:
    """Mark LAZY the compressed pages (of ``n``, each holding a selected row) whose last
    selected row lies in the first three quarters of their rows: a prefix of them is
    worth inflating on its own (:func:`_bodies` keeps the mark where it can)."""
    cdef Py_ssize_t k, cursor = 0, j1
    for k in range(n):
        j1 = _page_selection(col, t[k, P_FIRST], t[k, P_ROWS], &cursor)
        if t[k, P_ARENA] and j1 > 0 and (col.sel[j1 - 1] - t[k, P_FIRST] + 1) * 4 <= t[k, P_ROWS] * 3:
            t[k, P_ARENA] = LAZY


cdef Py_ssize_t _pages_holding(const Col* col, int64_t[:, ::1] t, Py_ssize_t n) noexcept nogil:
    """Keep in the page table ``t`` (``n`` pages, in row order) only the pages holding a
    selected row, in order; their count."""
    cdef Py_ssize_t k, m = 0, cursor = 0, j0
    cdef int c
    for k in range(n):
        j0 = cursor
        if _page_selection(col, t[k, P_FIRST], t[k, P_ROWS], &cursor) > j0:
            if m != k:
                for c in range(P_COLS):
                    t[m, c] = t[k, c]
            m += 1
    return m


cdef int _listed_pages(const uint8_t* buf, Py_ssize_t size, int64_t start, int64_t end, Col* col, int64_t rows,
                       int enc, int64_t[:, ::1] t, Py_ssize_t* n, Py_ssize_t* nrows, Py_ssize_t* arena_size,
                       Py_ssize_t* run_end, bint* any_nulls, Failure* f) noexcept nogil:
    """Page-index mode: the headers of the ``col.npl`` pages ``col.plist`` names (each
    inside the chunk's data pages, holding the rows and bytes its entry says), the run
    of their rows in the page table, and ``col.sel`` (block rows) re-pointed at
    ``col.rel``, the same rows among the run's. 0, or 1 with the column's status."""
    cdef const int64_t* pos = col.plist
    cdef const int64_t* counts = col.plist + col.npl
    cdef const int64_t* lengths = col.plist + 2 * col.npl
    cdef const int64_t* firsts = col.plist + 3 * col.npl
    cdef Py_ssize_t k = 0, j
    for j in range(col.npl):
        if not (0 <= pos[j] and start <= pos[j] and lengths[j] > 0 and pos[j] + lengths[j] <= min(end, size)):
            return _fail(col, ST_CHUNK, j)
    if _headers(buf, size, 0, 0, pos, counts, lengths, col.npl, col.npl, rows, PAGE_DATA, enc, t, n, nrows,
                arena_size, run_end, any_nulls, f):
        return _fail(col, ST_PAGES, f.page)
    col.rel = <int64_t*>malloc(8 * col.nsel + 8)
    if col.rel == NULL:
        return _fail(col, ST_MEMORY, -1)
    for j in range(col.nsel):  # (both in row order)
        while k < n[0] and firsts[k] + t[k, P_ROWS] <= col.sel[j]:
            k += 1
        if k == n[0] or col.sel[j] < firsts[k]:  # a wanted row in no page listed: the caller's error
            return _fail(col, ST_UNLISTED, -1)
        col.rel[j] = t[k, P_FIRST] + col.sel[j] - firsts[k]
    col.sel = col.rel
    return 0


cdef void _mask_nulls(Col* col, const Flt* f, int64_t rows, uint8_t* mask, bint and_into) noexcept nogil:
    """The filter on the null rows of ``col`` (its validity is complete): is_null /
    is_valid decided by the validity alone, every other filter FALSE there."""
    cdef int64_t i, j
    cdef uint8_t byte
    if f.kind == F_NULLS:
        if col.nulls == 0:
            if f.want_null:
                memset(mask, 0, rows)
            elif not and_into:
                memset(mask, 1, rows)
            return
        for i in range(rows):
            _put(mask, i, ((col.valid[i >> 3] >> (i & 7)) & 1) != f.want_null, and_into)
        return
    if col.nulls:  # a null row is not TRUE (its value above is arbitrary)
        for j in range((rows + 7) >> 3):
            byte = col.valid[j]
            if byte != 0xFF:
                for i in range(8 * j, min(8 * j + 8, rows)):
                    if not ((byte >> (i & 7)) & 1):
                        mask[i] = 0


cdef int _column(const uint8_t* buf, Py_ssize_t size, int64_t base, Col* col, int64_t rows, bint verify,
                 int64_t[:, ::1] t, const Flt* flt, uint8_t* mask, bint and_into) except -1 nogil:
    """Every data page of one column chunk (and its dictionary page) into ``col``'s
    outputs: the checks and results of ChunkDecoder.decode_all + its values, or a status.
    ``flt`` (or NULL): evaluated into ``mask`` (ANDed with ``and_into``) as each page's
    values are decoded, while they are in cache (a dictionary's entries once, before its
    pages); null rows are cleared once the values are done."""
    cdef const int64_t* s = col.s
    cdef const int64_t* c = col.c
    cdef int enc = <int>c[C_ENCODING]
    cdef int kind = <int>s[S_KIND]
    cdef int width = <int>s[S_WIDTH]
    cdef int64_t dict_len = c[C_DICT_LENGTH]
    cdef bint is_dict = dict_len > 0
    cdef int64_t at = c[C_OFFSET] - base
    cdef int64_t start = at + dict_len
    cdef int64_t end = at + c[C_LENGTH]
    cdef Failure f
    cdef Py_ssize_t n = 0, nrows = 0, arena_size = 0, run_end = 0, k, most = 0, longest = 0
    cdef bint any_nulls = False
    cdef const uint8_t* ddata = NULL
    cdef int64_t ddata_len = 0, i, nulls = 0, lo
    cdef int mode = 0, itemsize = width, out_size
    cdef bint signed = s[S_SIGNED] != 0
    cdef int64_t decimal_lim = 0
    cdef uint64_t* aligned
    cdef uint8_t* table = NULL
    cdef bint by_value = flt != NULL and flt.kind != F_NULLS
    cdef bint selected = col.sel != NULL
    cdef int64_t out_rows = col.nsel if selected else rows
    cdef Py_ssize_t cursor = 0, j0, j1
    cdef bint whole
    cdef int got
    memset(&f, 0, sizeof(Failure))
    if by_value and kind == KIND_BOOL:
        return _fail(col, ST_UNSUPPORTED, -1)
    if enc < 0 or enc > 62 or not ((s[S_ENCODINGS] >> enc) & 1):
        return _fail(col, ST_UNSUPPORTED, -1)
    if (enc == ENC_DICTIONARY) != is_dict or dict_len < 0 or c[C_LENGTH] < dict_len:
        return _fail(col, ST_CHUNK, -1)
    if col.plist != NULL:  # only the listed pages (checked there) and the dictionary page need be in ``buf``
        if not (start <= end and (0 <= at or not is_dict)):
            return _fail(col, ST_CHUNK, -1)
    elif not (0 <= at and start <= end and end <= size):
        return _fail(col, ST_CHUNK, -1)
    if is_dict and _dictionary(buf, size, at, col, verify, t, &ddata, &ddata_len):
        return col.status
    # the data pages: headers, then bodies (checksums, decompression, validity)
    if col.plist != NULL:  # the pages the page index names, and the wanted rows among theirs
        if _listed_pages(buf, size, start, end, col, rows, enc, t, &n, &nrows, &arena_size, &run_end, &any_nulls,
                         &f):
            return col.status
        rows = nrows
    elif _headers(buf, size, start, end, NULL, NULL, NULL, 0, c[C_PAGES], rows, PAGE_DATA, enc, t, &n, &nrows,
                  &arena_size, &run_end, &any_nulls, &f):
        return _fail(col, ST_PAGES, f.page)
    elif n != c[C_PAGES] or nrows != rows:
        return _fail(col, ST_COUNTS, -1)
    if selected:  # only the pages holding a selected row are read: the others leave the table
        n = _pages_holding(col, t, n)
        if kind == KIND_VARBINARY and not is_dict:
            _mark_lazy(col, t, n)
    col.pages_read = n
    for k in range(n):
        col.rows_read += t[k, P_ROWS]
    col.arena = <uint8_t*>rc_tmp_alloc(arena_size)
    if col.arena == NULL:
        return _fail(col, ST_MEMORY, -1)
    if any_nulls and selected:  # every row's validity first, the wanted rows' after
        col.vfull = <uint8_t*>malloc((rows + 7) // 8 + 8)
        if col.vfull == NULL:
            return _fail(col, ST_MEMORY, -1)
    if any_nulls:
        memset(col.vfull if selected else col.valid, 0xFF, (rows + 7) // 8)
    if _bodies(buf, t, n, col.arena, (col.vfull if selected else col.valid) if any_nulls else NULL, verify, &f,
               LAZY_BYTES if selected and kind == KIND_VARBINARY and not is_dict else 0):
        return _fail(col, ST_PAGES, f.page)
    for k in range(n):
        most = max(most, t[k, P_ROWS])
        longest = max(longest, t[k, P_LEN])
        nulls += t[k, P_NULLS]
    col.scratch = <uint64_t*>malloc(8 * (most + 2) + _round8(longest) + 8)
    if col.scratch == NULL:
        return _fail(col, ST_MEMORY, -1)
    aligned = col.scratch + most + 2
    if selected:
        col.pagebuf = <uint8_t*>malloc(16 * most + 16)
        if col.pagebuf == NULL:
            return _fail(col, ST_MEMORY, -1)
    if any_nulls and selected:
        col.nulls = _gather_validity(col.vfull, col.sel, col.nsel, col.valid)
    elif any_nulls:
        col.nulls = nulls
        if rows % 8:
            col.valid[(rows + 7) // 8 - 1] &= (1 << (rows % 8)) - 1  # unused trailing bits are 0
    # the values
    if is_dict:
        col.codes = <uint32_t*>malloc(4 * rows + 8)
        if col.codes == NULL:
            return _fail(col, ST_MEMORY, -1)
        if by_value:  # the filter on each dictionary entry, once
            table = <uint8_t*>malloc(col.dsize + 1)
            if table == NULL:
                return _fail(col, ST_MEMORY, -1)
            if kind == KIND_VARBINARY:
                _filter_entries(flt, kind, <const uint8_t*>col.dlocal, ddata, False, col.dsize, table, False)
            else:
                _filter_entries(flt, kind, col.dvalues, NULL, False, col.dsize, table, False)
        for k in range(n):
            if selected:  # the codes of the pages holding wanted rows, gathered
                j0 = cursor
                j1 = _page_selection(col, t[k, P_FIRST], t[k, P_ROWS], &cursor)
                if j1 == j0:
                    continue
                whole = j1 - j0 == t[k, P_ROWS]  # every row of the page wanted: decoded in place
                if (j1 - j0) * GATHER_SPARSE < t[k, P_ROWS]:  # few: each code read where it lies
                    if _codes_gather(_body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS],
                                     <uint32_t>col.dsize, col.sel, j0, j1, t[k, P_FIRST], col.codes):
                        return _fail(col, ST_VALUES, k)
                    continue
                if _page_values(MODE_CODES, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], 4,
                                False, <uint32_t>col.dsize, 0, <uint8_t*>(col.codes + j0) if whole else col.pagebuf,
                                col.scratch):
                    return _fail(col, ST_VALUES, k)
                if not whole:
                    _gather_rows(col.pagebuf, t[k, P_FIRST], col.sel, j0, j1, 4, <uint8_t*>col.codes)
                continue
            if _page_values(MODE_CODES, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], 4, False,
                            <uint32_t>col.dsize, 0, <uint8_t*>(col.codes + t[k, P_FIRST]), col.scratch):
                free(table)
                return _fail(col, ST_VALUES, k)
            if by_value:
                _codes_into(table, col.dsize, col.codes + t[k, P_FIRST], t[k, P_ROWS], mask + t[k, P_FIRST],
                            and_into)
        if by_value and selected:  # the selected rows' codes, gathered
            _codes_into(table, col.dsize, col.codes, out_rows, mask, and_into)
        free(table)
        if flt != NULL:
            _mask_nulls(col, flt, out_rows, mask, and_into)
        if col.discard:  # (its filter has its answer)
            return 0
        if col.keep_codes:  # the codes, and the dictionary handed over as it is
            if col.defer:  # (compacted later: from the codes of every row, kept till then)
                col.kept = col.codes
                col.codes = NULL
            else:
                memcpy(col.values, col.codes, 4 * out_rows)
            if kind == KIND_VARBINARY:
                col.doffs = <uint8_t*>col.dlocal
                col.dlocal = NULL
                col.ddata = col.dpadded
                col.dpadded = NULL
                col.ddata_len = ddata_len
            else:
                col.ddata = col.dvalues
                col.dvalues = NULL
                col.ddata_len = col.dsize * width
            return 0
        if kind == KIND_VARBINARY:
            return _gather_varbinary(col, ddata, col.codes, out_rows)
        return _gather_fixed(col.dvalues, col.codes, out_rows, width, col.values)
    if kind == KIND_VARBINARY:
        if _varbinary(col, buf, t, n, enc, aligned):
            return col.status
        if by_value:
            _filter_entries(flt, kind, col.values, col.data, col.s[S_LARGE] != 0, out_rows, mask, and_into)
        if flt != NULL:
            _mask_nulls(col, flt, out_rows, mask, and_into)
        return 0
    if kind == KIND_BOOL:
        mode = MODE_BOOL_PLAIN if enc == ENC_PLAIN else MODE_BOOL_RLE
        itemsize = 1
    elif enc == ENC_PLAIN:
        mode = MODE_PLAIN
    elif enc == ENC_RLE:
        mode = MODE_RLE
    elif enc == ENC_ALP:
        mode = MODE_ALP
    elif enc == ENC_ALP_SPLIT:
        mode = MODE_ALP_SPLIT
    elif enc == ENC_BITPACK and s[S_DECIMAL]:
        mode = MODE_BITPACK_DECIMAL
        itemsize = 8
        signed = True
        if 1 <= s[S_PRECISION] <= 18:
            decimal_lim = 1
            for i in range(s[S_PRECISION]):
                decimal_lim *= 10
            decimal_lim -= 1
    elif enc == ENC_BITPACK:
        mode = MODE_BITPACK
    elif enc == ENC_DELTA:
        mode = MODE_DELTA
    elif enc == ENC_BYTE_SPLIT:
        mode = MODE_SPLIT
    else:
        return _fail(col, ST_UNSUPPORTED, -1)
    out_size = itemsize
    for k in range(n):
        if selected:  # the pages holding wanted rows, their wanted values gathered
            j0 = cursor
            j1 = _page_selection(col, t[k, P_FIRST], t[k, P_ROWS], &cursor)
            if j1 == j0:
                continue
            whole = j1 - j0 == t[k, P_ROWS]  # every row of the page wanted: decoded in place
            if (mode == MODE_BITPACK or mode == MODE_BITPACK_DECIMAL) and (j1 - j0) * GATHER_SPARSE < t[k, P_ROWS]:
                # few rows of the page: each read where it is packed, the others left packed
                got = _bitpack_gather(mode, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS],
                                      itemsize, signed, decimal_lim, col.sel, j0, j1, t[k, P_FIRST], col.values)
                if got == 1:
                    return _fail(col, ST_VALUES, k)
                if got == 0:
                    continue
            elif mode == MODE_PLAIN and (j1 - j0) * GATHER_SPARSE < t[k, P_ROWS]:  # few: copied from where they lie
                if _plain_gather(_body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], itemsize, col.sel,
                                 j0, j1, t[k, P_FIRST], col.values):
                    return _fail(col, ST_VALUES, k)
                continue
            if _page_values(mode, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], itemsize, signed,
                            0, decimal_lim, col.values + j0 * out_size if whole else col.pagebuf, col.scratch):
                return _fail(col, ST_VALUES, k)
            if not whole:
                _gather_rows(col.pagebuf, t[k, P_FIRST], col.sel, j0, j1, out_size, col.values)
            continue
        if _page_values(mode, _body(buf, col.arena, t, k, aligned), t[k, P_LEN], t[k, P_ROWS], itemsize, signed, 0,
                        decimal_lim, col.values + t[k, P_FIRST] * out_size, col.scratch):
            return _fail(col, ST_VALUES, k)
        if by_value and mode == MODE_BITPACK_DECIMAL:  # int64 low words, before they are widened
            _narrow_decimals_into(flt, <const int64_t*>(col.values + t[k, P_FIRST] * 8), t[k, P_ROWS],
                                  mask + t[k, P_FIRST], and_into)
        elif by_value:
            _filter_entries(flt, kind, col.values + t[k, P_FIRST] * out_size, NULL, False, t[k, P_ROWS],
                            mask + t[k, P_FIRST], and_into)
    if by_value and selected and mode == MODE_BITPACK_DECIMAL:  # the gathered values, before widening
        _narrow_decimals_into(flt, <const int64_t*>col.values, out_rows, mask, and_into)
    elif by_value and selected:
        _filter_entries(flt, kind, col.values, NULL, False, out_rows, mask, and_into)
    if flt != NULL:
        _mask_nulls(col, flt, out_rows, mask, and_into)
    if kind == KIND_BOOL:  # a byte per value -> Arrow's bits (LSB first), in place: byte j is written
        if not col.defer:  # after bytes 8j..8j+7 are read
            _pack_bits(col.values, out_rows)
    elif mode == MODE_BITPACK_DECIMAL:  # int64 low words -> 16-byte decimals, in place, from the end
        if col.defer:
            col.widen = True
        else:
            _widen_decimals(col.values, out_rows)
    elif s[S_DECIMAL] and decimal_row(<const uint64_t*>col.values, out_rows, <int>s[S_PRECISION]) >= 0:
        return _fail(col, ST_INVALID, -1)
    return 0


cdef int _then_column(const uint8_t* buf, Py_ssize_t size, int64_t base, Col* col, int64_t rows, bint verify,
                      int64_t[:, ::1] t, const int64_t* picked_rows, int64_t picked, int64_t* r) except -1 nogil:
    """A column decoded after the filter, at the ``picked`` rows it selected, into an
    arena made for them (``r``: its results row, where the values and validity lie)."""
    if _own_arena(col, _values_bytes(col.s, col.keep_codes, col.discard, picked), picked, r):
        return col.status
    col.sel = picked_rows
    col.nsel = picked
    return _column(buf, size, base, col, rows, verify, t, NULL, NULL, False)
