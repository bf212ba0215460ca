"""The block executor: every flat projected column of one block in one GIL-free call.

:func:`run_block` takes the bytes of a block (or of its fetched ranges), a
:class:`BlockProgram` built once per scan -- a compact column spec (``S_COLS`` int64
per column, the tables of
:mod:`rcfmt._native.abi`: physical kind, width,
sign, decimal precision, UTF-8 check, large offsets, codes kept for ``read_dictionary``,
the encodings the type admits), the columns' filters and what is done with the rows they
pick -- and the block's chunk records (:data:`C_COLS` int64 per
column, from the footer), and decodes every column whose rows are all wanted (the
whole-chunk case) in ONE ``with nogil:`` section: page headers and checksums, body
checksums, decompression (the page pipeline's per-thread codec contexts), values of every
mode the pipeline decodes (PLAIN, RLE, BITPACK, DELTA, ALP, bools, BITPACK decimals),
dictionary chunks (the dictionary page decoded and checked, the codes checked against
its size, then the values gathered -- or the codes kept), strings/binary (PLAIN,
DELTA_LENGTH) into offsets + data, validity bitmaps, and the checks Arrow's validation
needs (well-formed UTF-8 of strings, decimal precision).

It is the page pipeline's own cores (:mod:`rcfmt._native.pages` ``_headers``,
``_bodies``, ``_page_values``, ``_page_offsets``; :mod:`rcfmt._native.validate`) run
column after column, with no Python between them: one column is decoded by
:mod:`rcfmt._native.column`, gathered and compacted by :mod:`rcfmt._native.gather`;
this module drives a block's columns (arenas, the filter's mask, the rows it picks,
the columns decoded after it) and owns what is handed back.

Outputs. Fixed-width values (decimal128 as 16-byte values), bools (Arrow's bits),
dictionary codes (uint32, when kept), string/binary offsets (int32, int64 for large
types) and validity bitmaps go into one numpy arena per column, sized from the footer
(rows x item size, each region 64-byte aligned): a column kept alone keeps only its own
memory alive, not the block's. String/binary data and kept
dictionaries are sized only by their pages: they are allocated inside the native
section and handed back owned by :class:`Owned` buffers.

Errors. The executor does not describe failures: per column it returns a status (what
failed, and at which page) and leaves that column's outputs undefined. The caller
raises the located error (:func:`rcfmt.scan.refusals.raise_refused`: the reference
decoder, :class:`rcfmt.file.chunks.ChunkDecoder`, run over the same bytes says what is
wrong, in the words every decoder of the format uses); a refused column is never
decoded another way.
"""
cimport cython
from cpython.buffer cimport PyBuffer_FillInfo
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memmove, memset

import numpy as np

cimport numpy as cnp

from rcfmt._native.pages cimport P_ARENA, P_AT, P_COLS, P_FIRST, P_LEN, P_NULLS, P_POS, P_ROWS
from rcfmt._native.pages cimport Failure, _bodies, _headers
from rcfmt._native.filters cimport (F_NULLS, Filter, Flt, _codes_into, _filter_entries, _narrow_decimals_into,
                                    _put)
from rcfmt._native.abi cimport (C_COLS, C_DICT_LENGTH, C_LENGTH, C_PAGES, R_COLS, R_DATA, R_DICT, R_DSIZE, R_NULLS,
                                R_PAGE, R_PAGES, R_ROWS, R_STATUS, R_VALID, R_VALUES, S_CODES, S_COLS, S_DISCARD,
                                ST_OK, ST_PYTHON, ST_SKIPPED)
from rcfmt._native.column cimport (Col, _arena_bytes, _column, _free_outputs, _free_temporaries, _round8, _round64,
                                   _then_column, _values_bytes, tmp_free)
from rcfmt._native.gather cimport _compact

from ..runtime import memory as _memory

cnp.import_array()

__all__ = ["BlockProgram", "run_block", "Owned"]


# ------------------------------------------------------------------ owned buffers
cdef uint8_t _EMPTY[8]


cdef class Owned:
    """A buffer malloc'ed by the executor (string data, a kept dictionary), freed with
    the last reference (``pooled``: by :func:`rcfmt._native.column.tmp_free`, which may
    keep it for reuse); exposes the buffer protocol (numpy, ``pyarrow.py_buffer``)."""

    cdef void* ptr
    cdef Py_ssize_t size
    cdef bint pooled

    def __dealloc__(self):
        if self.pooled:
            tmp_free(self.ptr)
        else:
            free(self.ptr)

    def __len__(self):
        return self.size

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, self.ptr if self.ptr != NULL else <void*>_EMPTY, self.size, 0, flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef Owned _own(void* ptr, Py_ssize_t size):
    cdef Owned o = Owned.__new__(Owned)
    o.ptr = ptr
    o.size = size
    return o


# ------------------------------------------------------------------ masks
cdef extern from *:
    """
    /* The positions of the nonzero bytes of mask[0:n] into out (in order); their count.
       Eight bytes a time, each nonzero byte folded to its low bit, the set bits walked:
       a selective mask is mostly zero words, passed over in one test each. */
    static inline uint64_t rc_fold_bytes(uint64_t w) {  /* bit 8k: byte k of w is nonzero */
        w |= w >> 4; w |= w >> 2; w |= w >> 1;
        return w & 0x0101010101010101ULL;
    }
    static int64_t rc_mask_count(const uint8_t* mask, int64_t n) {
        int64_t i = 0, m = 0;
        uint64_t w;
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, mask + i, 8);
            if (w) m += (int64_t)((rc_fold_bytes(w) * 0x0101010101010101ULL) >> 56);  /* (8 bits at most) */
        }
        for (; i < n; i++) m += mask[i] != 0;
        return m;
    }
    /* The first j where v[0:n] stops being strictly increasing within [0, limit); n if none. */
    static int64_t rc_sorted_below(const int64_t* v, int64_t n, int64_t limit) {
        int64_t j, bad = 0;
        if (n && (v[0] < 0 || v[n - 1] >= limit)) return 0;
        for (j = 1; j < n; j++) bad |= v[j] <= v[j - 1];  /* (a pass the compiler vectorizes) */
        if (!bad) return n;
        for (j = 1; j < n; j++) if (v[j] <= v[j - 1]) return j;
        return n;
    }
    static int64_t rc_mask_positions(const uint8_t* mask, int64_t n, int64_t* out) {
        int64_t i = 0, j = 0;
        uint64_t w;
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, mask + i, 8);
            if (!w) continue;
            w = rc_fold_bytes(w);
            while (w) { out[j++] = i + (__builtin_ctzll(w) >> 3); w &= w - 1; }
        }
        for (; i < n; i++) if (mask[i]) out[j++] = i;
        return j;
    }
    """
    int64_t rc_mask_count(const uint8_t* mask, int64_t n) noexcept nogil
    int64_t rc_sorted_below(const int64_t* v, int64_t n, int64_t limit) noexcept nogil
    int64_t rc_mask_positions(const uint8_t* mask, int64_t n, int64_t* out) noexcept nogil


cdef bint _none_set(const uint8_t* mask, int64_t rows) noexcept nogil:
    cdef int64_t i
    for i in range(rows):
        if mask[i]:
            return False
    return True


# ------------------------------------------------------------------ the block
cdef int _pick(const uint8_t* mask, int64_t n, const int64_t* sel, int64_t** pos, int64_t** rows,
               int64_t** starts, int64_t** ends, int64_t* count, int64_t* runs) noexcept nogil:
    """The rows a final ``mask`` (``n`` bytes) selects: their positions among the rows
    decoded, their block rows (``sel[pos]``, or ``pos`` when every row was decoded) and
    the runs of those rows (half-open). 0, or -1 out of memory (the caller frees)."""
    cdef int64_t j, k = 0, m = rc_mask_count(mask, n), r
    pos[0] = <int64_t*>malloc(8 * m + 8)
    if pos[0] == NULL:
        return -1
    rc_mask_positions(mask, n, pos[0])
    rows[0] = <int64_t*>malloc(8 * m + 8)
    starts[0] = <int64_t*>malloc(8 * m + 8)
    ends[0] = <int64_t*>malloc(8 * m + 8)
    if rows[0] == NULL or starts[0] == NULL or ends[0] == NULL:
        return -1
    for j in range(m):
        r = sel[pos[0][j]] if sel != NULL else pos[0][j]
        rows[0][j] = r
        if k and ends[0][k - 1] == r:
            ends[0][k - 1] = r + 1
        else:
            starts[0][k] = r
            ends[0][k] = r + 1
            k += 1
    count[0] = m
    runs[0] = k
    return 0


cdef _int64s(int64_t* ptr, int64_t n):
    """``n`` int64 at ``ptr`` (malloc'ed; owned from here on) as a numpy array."""
    cdef int64_t* shrunk = <int64_t*>realloc(ptr, 8 * n + 8)
    return np.frombuffer(_own(shrunk if shrunk != NULL else ptr, 8 * n), np.int64)


cdef class BlockProgram:
    """What :func:`run_block` does with every block of a scan, built (and checked) once
    per scan: ``spec``, one row of S_COLS per column; ``filters``, one :class:`Filter`
    or None per column (None: no filter), evaluated into the call's mask; with
    ``short_circuit``, the columns left once the mask holds no TRUE row are not decoded;
    ``compact`` (with filters: a flag per column), the mask is final once the filter's
    columns are decoded, and the flagged columns are returned at the rows it picks (flag
    2: a dictionary chunk as its values); ``then`` (with ``compact``): the last ``then``
    columns take no part in the filter and are decoded after it, at the rows it picked.
    See :func:`run_block` for what each does to a block."""

    cdef const int64_t[:, ::1] spec
    cdef readonly Py_ssize_t ncols
    cdef list filters  # (keeps the Filter objects ``flts`` points into alive)
    cdef const Flt** flts
    cdef readonly bint filtered
    cdef readonly bint short_circuit
    cdef uint8_t* compact  # (NULL: not compacting)
    cdef readonly Py_ssize_t then

    def __cinit__(self, const int64_t[:, ::1] spec, filters=None, bint short_circuit=False, compact=None,
                  Py_ssize_t then=0):
        cdef Py_ssize_t i, ncols = spec.shape[0]
        if spec.shape[1] != S_COLS:
            raise ValueError("spec needs S_COLS int64 per column")
        self.spec = spec
        self.ncols = ncols
        self.filtered = filters is not None
        self.short_circuit = short_circuit
        if filters is not None:
            filters = list(filters)
            if len(filters) != ncols:
                raise ValueError("filters need one entry per column")
            for i in range(ncols):
                if filters[i] is not None and not isinstance(filters[i], Filter):
                    raise TypeError("filters are Filter objects or None")
        self.filters = filters
        if compact is not None:
            compact = list(compact)
            if filters is None or len(compact) != ncols:
                raise ValueError("compact needs filters and one flag per column")
        if then < 0 or then > ncols or (then and compact is None):
            raise ValueError("then needs compact and at most one column per column")
        for i in range(ncols - then, ncols):
            if filters is not None and filters[i] is not None:
                raise ValueError("the columns decoded after the filter take no part in it")
        self.then = then
        self.flts = <const Flt**>malloc(max(ncols, 1) * sizeof(Flt*))
        if self.flts == NULL:
            raise MemoryError()
        for i in range(ncols):
            self.flts[i] = &(<Filter>filters[i]).f if filters is not None and filters[i] is not None else NULL
        if compact is not None:
            self.compact = <uint8_t*>malloc(max(ncols, 1))
            if self.compact == NULL:
                raise MemoryError()
            for i in range(ncols):
                self.compact[i] = <uint8_t>compact[i] if i < ncols - then else 0

    def __dealloc__(self):
        free(self.flts)
        free(self.compact)


def run_block(BlockProgram program not None, buf, int64_t base, const int64_t[:, ::1] chunks, int64_t rows,
              bint verify, uint8_t[::1] mask=None, const int64_t[::1] selected=None, pages=None):
    """Decode every column of one block (its rows, or the ``selected`` ones), in one
    GIL-free pass, as ``program`` (:class:`BlockProgram`) says.

    ``buf``: the block's bytes from file offset ``base`` on (a whole read, or ranges
    read into one buffer); the program's ``spec``: one row of S_COLS per column (built once per scan);
    ``chunks``: the block's chunk records, one row of C_COLS per column; ``rows``: the
    block's rows. Returns ``(arenas, results, data, dictionaries)``: per column the uint8
    arena holding its values/codes/offsets and validity, ``results`` (int64, R_COLS per
    column: status, page, where the column's outputs are in its arena, nulls, data
    bytes), and
    per column the :class:`Owned` string/binary data (or None) and the kept dictionary
    ``(values or data, int32 offsets or None)`` (or None). A column whose status is not
    ST_OK is refused (see the module docstring).

    The program's ``filters`` and ``mask`` (uint8, ``rows``): each column's filter is
    evaluated on its rows right after it is decoded, the first one written into ``mask``
    and the next ones ANDed into it (dictionary chunks: once per entry, then a lookup per
    code). With ``short_circuit``, once the mask holds no TRUE row the columns left are
    not decoded (status ST_SKIPPED): the mask is final, whatever they hold.

    ``selected`` (sorted, distinct rows of the block): only these rows are returned, one
    after another (and filtered: ``mask`` then has a byte per selected row). Every
    page's header is checked; only the pages holding a selected row have their bodies
    read (checksums, decompression) and their values decoded (``R_PAGES``), and the
    UTF-8 and precision checks cover the values returned.

    ``pages`` (with ``selected``; one entry per column, or None): the pages to read of
    each column, as the page index names them -- a C-contiguous int64 array of shape
    (4, n): their positions in ``buf``, rows, lengths, and first rows in the block, in
    row order, holding every selected row (or None: the column's whole chunk is in
    ``buf``). Only those pages (and the dictionary page) are read, each checked against
    its entry; nothing else of the chunk need be in ``buf``.

    The program's ``compact`` (with filters: one flag per column): the mask is final once every
    column is decoded (the AND of all the filters), and the flagged columns are returned
    at the rows it selects only, one after another (their ``R_NULLS`` counted there);
    the others as above. Flag 2: a dictionary chunk of the column is returned as its
    values there (``R_DICT`` 0), not as codes and its dictionary. A fifth item is then returned: ``(rows, starts, ends)``, the
    selected rows of the block (int64, in order) and their runs ``[starts, ends)``.

    The program's ``then`` (with ``compact``): the last ``then`` columns take no part in the filter
    (their ``filters`` entries None): they are decoded after it, at the rows it picked
    (their whole chunks in ``buf``; ST_SKIPPED when it picked none), into arenas sized
    for those rows -- the filter and the projection of a block in one call."""
    cdef const uint8_t[::1] view = memoryview(buf).cast("B") if not isinstance(buf, np.ndarray) else buf
    cdef Py_ssize_t size = view.shape[0]
    cdef const uint8_t* p = &view[0] if size else _EMPTY
    cdef const int64_t[:, ::1] spec = program.spec
    cdef Py_ssize_t ncols = program.ncols, i, reached = 0, then = program.then
    cdef int64_t capacity = 1, vbytes, npages, length, width, shift
    cdef bint keep, discard
    cdef bint compacting = program.compact != NULL
    cdef cnp.ndarray arena
    cdef uint8_t* a
    if chunks.shape[0] != ncols or chunks.shape[1] != C_COLS:
        raise ValueError("chunks need one row of C_COLS per column of the program")
    if rows < 0:
        raise ValueError("rows must be >= 0")
    cdef int64_t out_rows = rows, j
    cdef const int64_t* sel = NULL
    if selected is not None:
        out_rows = selected.shape[0]
        sel = &selected[0] if out_rows else <const int64_t*>_EMPTY
        with nogil:
            j = rc_sorted_below(sel, out_rows, rows)
        if j < out_rows:
            raise ValueError("selected rows must be sorted, distinct rows of the block")
    cdef const int64_t[:, ::1] listed
    if pages is not None and (selected is None or len(pages) != ncols):
        raise ValueError("pages need the selected rows and one entry per column")
    if then and pages is not None:
        raise ValueError("a program with columns decoded after the filter reads no page lists")
    cdef Py_ssize_t first_then = ncols - then
    cdef cnp.ndarray results = np.zeros((ncols, R_COLS), np.int64)
    cdef int64_t[:, ::1] r = results
    cdef int64_t shared = 0, at
    arenas = [None] * ncols
    for i in range(ncols):
        discard = spec[i, S_DISCARD] != 0 and chunks[i, C_DICT_LENGTH] > 0
        keep = spec[i, S_CODES] != 0 and chunks[i, C_DICT_LENGTH] > 0 and not discard
        r[i, R_DICT] = keep
        npages = max(chunks[i, C_PAGES], 1)
        length = max(chunks[i, C_LENGTH], 0)
        capacity = max(capacity, min(npages, length // 32 + 1))
        if i >= first_then:  # (the later columns' arenas are made once the rows are picked)
            continue
        vbytes = _values_bytes(&spec[i, 0], keep, discard, out_rows)
        if compacting:  # (the filter's columns, compacted or dropped after: one arena for all)
            r[i, R_VALUES] = shared
            r[i, R_VALID] = shared + _round64(vbytes + 8)
            shared += _arena_bytes(vbytes, out_rows)
            continue
        arena = _memory.empty(_arena_bytes(vbytes, out_rows), np.uint8)
        arenas[i] = arena
        shift = (-<int64_t>(<uintptr_t>cnp.PyArray_DATA(arena))) & 63
        r[i, R_VALUES] = shift
        r[i, R_VALID] = shift + _round64(vbytes + 8)
    if shared:  # one arena for the filter's columns, each part 64-byte aligned
        arena = _memory.empty(shared + 64, np.uint8)
        shift = (-<int64_t>(<uintptr_t>cnp.PyArray_DATA(arena))) & 63
        for i in range(first_then):
            arenas[i] = arena
            r[i, R_VALUES] += shift
            r[i, R_VALID] += shift
    cdef cnp.ndarray table = np.empty((capacity, P_COLS), np.int64)
    cdef int64_t[:, ::1] t = table
    cdef const Flt** flts = program.flts
    cdef bint short_circuit = program.short_circuit
    cdef uint8_t* mask_p = NULL
    cdef bint anded = False, empty = False
    cdef uint8_t* own_mask = NULL
    if program.filtered:
        if (mask is None and not compacting) or (mask is not None and mask.shape[0] < out_rows):
            raise ValueError("a filtered program needs a mask of one byte per row (or compact)")
        if mask is None:  # (compact: the rows it picks are the answer, the mask a scratch of its own)
            own_mask = <uint8_t*>malloc(out_rows + 8)
            if own_mask == NULL:
                raise MemoryError()
            mask_p = own_mask
        else:
            mask_p = &mask[0] if out_rows else _EMPTY
    cdef Col* cols = <Col*>malloc(max(ncols, 1) * sizeof(Col))
    if cols == NULL:
        free(own_mask)
        raise MemoryError()
    memset(cols, 0, max(ncols, 1) * sizeof(Col))
    for i in range(ncols):
        if i < first_then:
            a = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>arenas[i])
            cols[i].values = a + r[i, R_VALUES]
            cols[i].valid = a + r[i, R_VALID]
        cols[i].s = &spec[i, 0]
        cols[i].c = &chunks[i, 0]
        cols[i].keep_codes = r[i, R_DICT] != 0
        cols[i].discard = spec[i, S_DISCARD] != 0 and chunks[i, C_DICT_LENGTH] > 0
        cols[i].page = -1
        cols[i].sel = sel
        cols[i].nsel = out_rows
        cols[i].defer = compacting and program.compact[i] != 0 and i < first_then
        cols[i].as_values = cols[i].defer and program.compact[i] == 2
        if pages is not None and pages[i] is not None:
            listed = pages[i]
            if listed.shape[0] != 4:
                free(cols)
                free(own_mask)
                raise ValueError("each column's pages are a (4, n) int64 array")
            cols[i].plist = &listed[0, 0] if listed.shape[1] else <const int64_t*>_EMPTY
            cols[i].npl = listed.shape[1]
    data = [None] * ncols
    dictionaries = [None] * ncols
    cdef int64_t* pos = NULL
    cdef int64_t* picked_rows = NULL
    cdef int64_t* starts = NULL
    cdef int64_t* ends = NULL
    cdef int64_t picked = 0, runs = 0
    cdef bint no_memory = False
    picks = None
    try:
        try:
            with nogil:
                for i in range(first_then):
                    reached = i
                    if empty:
                        cols[i].status = ST_SKIPPED
                        continue
                    if _column(p, size, base, &cols[i], rows, verify, t, flts[i], mask_p, anded) == 0 \
                            and flts[i] != NULL:
                        anded = True
                        empty = short_circuit and _none_set(mask_p, out_rows)
                    _free_temporaries(&cols[i])
                reached = first_then
                if compacting:  # the mask is final: the flagged columns at the rows it selects
                    if not anded:  # (no filter on any column: every row)
                        memset(mask_p, 1, out_rows)
                    if _pick(mask_p, out_rows, sel, &pos, &picked_rows, &starts, &ends, &picked, &runs):
                        no_memory = True
                    else:
                        for i in range(first_then):
                            if cols[i].defer and cols[i].status == ST_OK and not cols[i].discard:
                                _compact(&cols[i], pos, picked, &r[i, 0])
                        for i in range(first_then, ncols):  # then the projection, at those rows
                            reached = i
                            if picked == 0:
                                cols[i].status = ST_SKIPPED
                                continue
                            _then_column(p, size, base, &cols[i], rows, verify, t, picked_rows, picked, &r[i, 0])
                            _free_temporaries(&cols[i])
                        reached = ncols
        except Exception:  # the Python codec fallback raised: the reference decoder says it again
            for i in range(reached, ncols):
                _free_temporaries(&cols[i])
                cols[i].status = ST_PYTHON
        if no_memory:
            raise MemoryError()
        if compacting:
            picks = (_int64s(picked_rows, picked), _int64s(starts, runs), _int64s(ends, runs))
            picked_rows = starts = ends = NULL
        for i in range(ncols):
            r[i, R_STATUS] = cols[i].status
            r[i, R_PAGE] = cols[i].page
            if cols[i].status != ST_OK:
                _free_outputs(&cols[i])
                continue
            if cols[i].own != NULL:  # (a later column's arena, owned by its array from here on)
                arenas[i] = np.frombuffer(_own(cols[i].own, cols[i].own_size), np.uint8)
                cols[i].own = NULL
            r[i, R_NULLS] = cols[i].nulls
            r[i, R_DATA] = cols[i].data_len
            r[i, R_DSIZE] = cols[i].dsize
            r[i, R_PAGES] = cols[i].pages_read
            r[i, R_ROWS] = cols[i].rows_read
            if cols[i].data != NULL:
                data[i] = _own(cols[i].data, cols[i].data_len)
                (<Owned>data[i]).pooled = True  # (tmp_alloc'ed: column.pyx, gather.pyx)
                cols[i].data = NULL
            if cols[i].keep_codes:
                dictionaries[i] = (_own(cols[i].ddata, cols[i].ddata_len),
                                   _own(cols[i].doffs, 4 * (cols[i].dsize + 1)) if cols[i].doffs != NULL else None)
                cols[i].ddata = NULL
                cols[i].doffs = NULL
    finally:
        for i in range(ncols):
            _free_temporaries(&cols[i])
            _free_outputs(&cols[i])
        free(cols)
        free(own_mask)
        free(pos)
        free(picked_rows)
        free(starts)
        free(ends)
    if compacting:
        return arenas, results, data, dictionaries, picks
    return arenas, results, data, dictionaries
