"""BITPACK (wire id 3): frame of reference + block bit-packing for integer-like columns.

Types: int8..int64, uint8..uint64, date32 and timestamp (their storage integers), and
decimal128 when every unscaled value of the page fits in int64 (its high 64-bit word is
the sign extension of its low word): the page then stores the low words exactly like an
int64 page (``T = 64``) and a reader sign-extends them back to 16 bytes.
Each page stores its minimum (the *reference*) and every value minus it at the
smallest bit width ``w`` that holds ``max - min``. Subtraction is done modulo
``2**T`` (``T`` = bits of the storage type), so signed types and the extremes of
int64/uint64 need no special case: ``w <= T`` always.

Page body (all little-endian)
-----------------------------

======  =====  =================================================================
offset  size   field
======  =====  =================================================================
0       1      ``w``: bit width, ``0 <= w <= T``
1       7      reserved, zero
8       8      reference: the page minimum, sign-extended (signed types) or
               zero-extended (unsigned types) to 8 bytes
16      ...    ``rows`` values ``(v - reference) mod 2**T`` bit-packed at ``w`` bits
======  =====  =================================================================

The 16-byte header keeps the packed words 8-byte aligned when the body is. The
body length must be exactly ``16 + packed_size(rows, w, T)``; ``w = 0`` means all
values equal the reference and the body is the header alone.

Packed layout (shared with DELTA and :func:`pack_codes`)
--------------------------------------------------------

Values are cut into blocks of 1024. In a block, values of a ``T``-bit type are
stored in ``L = 1024 / T`` interleaved *lanes* of ``T``-bit little-endian words
(a FastLanes-style transposed layout):

* value ``j`` of the block (``0 <= j < 1024``) is in lane ``j % L``, row ``j // L``;
* each lane is a bit stream of its ``T`` rows, ``w`` bits each, least significant bit
  first: row ``r`` occupies stream bits ``r*w .. r*w + w - 1``;
* bit ``b`` of the stream of lane ``l`` is bit ``b % T`` of word ``k = b // T`` of that
  lane, and word ``k`` of lane ``l`` is word ``k * L + l`` of the block.

A full block is thus ``w * L`` words = ``128 * w`` bytes. The last block, holding
``m < 1024`` values, uses ``R = ceil(m / L)`` rows and is truncated to its first
``ceil(R * w / T) * L`` words (a multiple of 128 bytes; bits of missing values are 0).

Every row of every lane is decoded with the same two shifts and one mask, so
decoding is a loop over the ``L`` lanes with loop-invariant shifts that compilers
vectorize (see :mod:`rcfmt._native.bitpack`).

Worked example 1 -- int16 ``[1000, 1003, 1001, 1007, 1000]``: reference 1000,
offsets ``[0, 3, 1, 7, 0]``, ``w = 3``. ``T = 16``, ``L = 64``: the 5 values fill row 0
of lanes 0..4; the last (only) block keeps ``ceil(1 * 3 / 16) * 64 = 64`` words::

    03 00 00 00 00 00 00 00   w = 3, reserved
    e8 03 00 00 00 00 00 00   reference 1000
    00 00 03 00 01 00 07 00   words of lanes 0..3: 0, 3, 1, 7
    00 00 + 118 x 00          lane 4: 0, lanes 5..63: 0 (padding)

144 bytes in all.

Worked example 2 -- uint8, 257 values, all 0 except ``v[0] = 1``, ``v[128] = 2``,
``v[256] = 7``: reference 0, ``w = 3``; ``T = 8``, ``L = 128``. Those three values are
rows 0, 1 and 2 of lane 0 (stream bits 0-2, 3-5 and 6-8); 3 rows need
``ceil(9 / 8) = 2`` words per lane, so the block keeps 256 bytes. Byte 0 of the packed
data (word 0 of lane 0) is ``1 | 2 << 3 | (7 << 6) & 0xff = 0xd1``; bit 8 of the
stream is bit 0 of word 1 of lane 0, i.e. packed byte 128 is ``7 >> 2 = 0x01``; all
other packed bytes are 0. Body: ``03`` + 7 x ``00`` + 8 x ``00`` + packed (272 bytes).

:func:`pack_codes` / :func:`unpack_codes` use the same layout with ``T = 32`` and no
reference, for dictionary codes (header: 1 byte ``w`` + 7 zero bytes).
"""
from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from .._native import bitpack as _bp
from ..errors import CorruptFileError
from ..schema.types import LogicalType
from .base import ColumnValues, EncodedChunk, Encoding
from .ids import INTEGER_TYPES

__all__ = [
    "Bitpack", "ENCODINGS", "HEADER_SIZE", "SUPPORTED_TYPES", "IntType", "int_type",
    "pack_codes", "unpack_codes", "packed_size",
]

#: logical type names BITPACK and DELTA store as integers (integer-like FIXED storage;
#: BITPACK holds decimal128's low words too: :mod:`rcfmt.encodings.ids`)
SUPPORTED_TYPES = INTEGER_TYPES

HEADER_SIZE = 16
_HEADER = struct.Struct("<B3xIq")  # w, reserved (3 bytes skipped + 4 checked), reference
_HEADER_U = struct.Struct("<B3xIQ")
_CODES_HEADER = struct.Struct("<B3xI")
CODES_HEADER_SIZE = 8

#: largest row count a page may claim (the native kernels' bound; far above any real page)
MAX_ROWS = 1 << 56

packed_size = _bp.packed_size


class IntType(NamedTuple):
    """What BITPACK and DELTA need to know about an integer-like storage type
    (precomputed: ``np.iinfo`` alone costs about a microsecond per call)."""

    dtype: np.dtype
    itemsize: int
    bits: int
    signed: bool
    min: int
    max: int


def _int_type(name: str) -> IntType:
    ltype = LogicalType(name, unit="s" if name == "timestamp" else None)
    dtype = ltype.numpy_dtype
    info = np.iinfo(dtype)
    return IntType(dtype, dtype.itemsize, 8 * dtype.itemsize, ltype.is_signed, int(info.min), int(info.max))


INT_TYPES = {name: _int_type(name) for name in SUPPORTED_TYPES}
#: decimal128 pages store their values' low 64-bit words as int64
_DECIMAL = INT_TYPES["int64"]
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def decimal_low_words(values: np.ndarray) -> np.ndarray | None:
    """The int64 low words of decimal128 storage values (``V16``, little-endian), or
    None if some value does not fit in int64 (high word not the sign extension)."""
    words = np.ascontiguousarray(values).view("<i8").reshape(-1, 2)
    lo = np.ascontiguousarray(words[:, 0])
    if len(lo) and not np.array_equal(words[:, 1], lo >> 63):
        return None
    return lo


def _decimal_from_low_words(lo: np.ndarray, rows: int) -> np.ndarray:
    from .._native import floats as _fl

    out = np.empty(rows, dtype=np.dtype("V16"))
    _fl.widen_i64_to_i128(lo, out.view("<i8"))
    return out


def int_type(ltype: LogicalType, encoding: str) -> IntType:
    """The storage facts of ``ltype``; TypeError if ``encoding`` does not support it."""
    info = INT_TYPES.get(ltype.name)
    if info is None:
        raise TypeError(f"{encoding} does not support {ltype}")
    return info


def storage_array(values: ColumnValues, info: IntType) -> np.ndarray:
    """The page's values as a contiguous array of the storage dtype (no copy when they
    already are; datetime64 and same-size integers are reinterpreted). Used by BITPACK
    and DELTA."""
    arr = np.asarray(values.values)
    if arr.dtype != info.dtype:
        if arr.dtype.kind not in "iuMm" or arr.dtype.itemsize != info.itemsize or arr.ndim != 1:
            raise TypeError(f"values must be stored as {info.dtype}, got {arr.dtype}")
        arr = arr.view(info.dtype)
    return np.ascontiguousarray(arr)


def as_buffer(body):
    """``body`` as something a ``const uint8_t[::1]`` accepts."""
    if isinstance(body, (bytes, bytearray)):
        return body
    mv = memoryview(body)
    return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")


def check_body_size(body, rows: int, width: int, itemsize: int, header: int, encoding: str) -> None:
    """CorruptFileError unless ``len(body)`` is exactly ``header`` plus the packed size
    of ``rows`` values at ``width`` bits (``width`` already checked)."""
    if not 0 <= rows <= MAX_ROWS:
        raise CorruptFileError(f"{encoding} page: row count {rows} out of range")
    need = header + packed_size(rows, width, itemsize)
    if len(body) != need:
        raise CorruptFileError(
            f"{encoding} page body is {len(body)} bytes, expected {need} for {rows} rows at {width} bits")


class Bitpack(Encoding):
    """Frame of reference + bit-packing in blocks of 1024 values (see module docs)."""

    id = 3
    name = "bitpack"


    # ------------------------------------------------------------------ encode
    @staticmethod
    def _storage(values: ColumnValues, ltype: LogicalType) -> tuple[IntType, np.ndarray]:
        if ltype.name == "decimal128":
            arr = decimal_low_words(values.values)
            if arr is None:
                raise ValueError("BITPACK stores decimal128 values only when they all fit in int64")
            return _DECIMAL, arr
        info = int_type(ltype, "BITPACK")
        return info, storage_array(values, info)

    @staticmethod
    def _width(lo: int, hi: int, info: IntType, params) -> int:
        width = (hi - lo).bit_length()
        if params is not None and params.get("aligned"):
            width = min(info.bits, next((b for b in (8, 16, 32, 64) if width <= b), 64)) if width else 0
        return width

    def encode(self, values: ColumnValues, ltype: LogicalType, params=None) -> bytes:
        info, arr = self._storage(values, ltype)
        lo, hi = (int(arr.min()), int(arr.max())) if len(arr) else (0, 0)
        width = self._width(lo, hi, info, params)
        size = packed_size(len(arr), width, info.itemsize)
        buf = np.empty((HEADER_SIZE + size) // 8, dtype=np.uint64)  # 8-byte aligned
        raw = buf.view(np.uint8)
        (_HEADER if info.signed else _HEADER_U).pack_into(raw, 0, width, 0, lo)
        _bp.for_pack_into(arr, lo, width, raw[HEADER_SIZE:])
        return raw.tobytes()

    def encode_chunk(self, chunk, ltype, page_bounds, analysis=None):
        """Every page as :meth:`encode` writes it, from one storage array, the pages'
        bounds found in two reductions over the chunk and their bodies laid out in one
        buffer (a memoryview per page, 8-byte aligned)."""
        params = analysis.params.get(self.name) if analysis is not None else None
        starts = np.asarray(page_bounds[:-1], dtype=np.int64)
        rows = np.diff(np.asarray(page_bounds, dtype=np.int64))
        if not len(starts) or not rows.all():  # (an empty page: no reduction for it)
            return EncodedChunk(self, [self.encode(chunk.slice(a, b), ltype, params)
                                       for a, b in zip(page_bounds[:-1], page_bounds[1:])])
        info, arr = self._storage(chunk, ltype)
        arr = arr[int(starts[0]):int(page_bounds[-1])]
        starts = starts - starts[0]
        los = np.minimum.reduceat(arr, starts).tolist()
        his = np.maximum.reduceat(arr, starts).tolist()
        widths = [self._width(lo, hi, info, params) for lo, hi in zip(los, his)]
        sizes = [HEADER_SIZE + packed_size(int(n), w, info.itemsize) for n, w in zip(rows.tolist(), widths)]
        raw = np.empty(sum(sizes) // 8, dtype=np.uint64).view(np.uint8)  # every size is a multiple of 8
        header = _HEADER if info.signed else _HEADER_U
        pages, at = [], 0
        for a, n, lo, width, size in zip(starts.tolist(), rows.tolist(), los, widths, sizes):
            body = raw[at:at + size]
            header.pack_into(body, 0, width, 0, lo)
            _bp.for_pack_into(arr[a:a + n], lo, width, body[HEADER_SIZE:])
            pages.append(memoryview(body))
            at += size
        return EncodedChunk(self, pages)

    def decode(self, body, rows: int, ltype: LogicalType, dictionary: ColumnValues | None = None) -> ColumnValues:
        body = as_buffer(body)
        if ltype.name == "decimal128":
            width, ref = self._header(body, rows, _DECIMAL)
            lo = _bp.for_unpack(body, rows, width, ref, np.int64, HEADER_SIZE)
            return ColumnValues(_decimal_from_low_words(lo, rows))
        info = int_type(ltype, "BITPACK")
        width, ref = self._header(body, rows, info)
        return ColumnValues(_bp.for_unpack(body, rows, width, ref, info.dtype, HEADER_SIZE))

    @staticmethod
    def _header(body, rows: int, info: IntType) -> tuple[int, int]:
        if len(body) < HEADER_SIZE:
            raise CorruptFileError(
                f"BITPACK page body is {len(body)} bytes, shorter than its {HEADER_SIZE}-byte header")
        width, reserved, ref = (_HEADER if info.signed else _HEADER_U).unpack_from(body, 0)
        if reserved or body[1] or body[2] or body[3]:
            raise CorruptFileError("BITPACK page header: reserved bytes are not zero")
        if width > info.bits:
            raise CorruptFileError(f"BITPACK page header: bit width {width} exceeds {info.bits} for {info.dtype}")
        if not info.min <= ref <= info.max:
            raise CorruptFileError(f"BITPACK page header: reference {ref} is out of range for {info.dtype}")
        # the packed length must match rows and width exactly (checked again natively)
        check_body_size(body, rows, width, info.itemsize, HEADER_SIZE, "BITPACK")
        return width, ref

    # ------------------------------------------------------------------ estimate
    def estimate_size(self, chunk: ColumnValues, ltype: LogicalType, analysis) -> int | None:
        """Size of the chunk as one page, from ``analysis.min_int``/``max_int``."""
        info = INT_TYPES.get(ltype.name)
        lo, hi = analysis.min_int, analysis.max_int
        if ltype.name == "decimal128":
            # eligible only when the selector found every value to fit in int64
            if lo is None or hi is None or not (_I64_MIN <= lo and hi <= _I64_MAX):
                return None
            info = _DECIMAL
        if info is None:
            return None
        if lo is None or hi is None:  # no non-null value: the null fill is one value
            width = 0
        else:
            width = min((int(hi) - int(lo)).bit_length(), info.bits)
        params = analysis.params.get(self.name)
        if params is not None and params.get("aligned") and width:
            width = min(info.bits, next(b for b in (8, 16, 32, 64) if width <= b))
        return HEADER_SIZE + packed_size(analysis.rows, width, info.itemsize)


# ---------------------------------------------------------------------- dictionary codes

def pack_codes(codes, max_code: int) -> bytes:
    """Bit-pack dictionary codes (``0 <= code <= max_code < 2**32``) at
    ``max_code.bit_length()`` bits: an 8-byte header (``w``, 7 zero bytes) followed
    by the packed layout with ``T = 32``. ValueError if a code exceeds ``max_code``."""
    codes = np.asarray(codes)
    max_code = int(max_code)
    if not 0 <= max_code < 1 << 32:
        raise ValueError(f"max_code {max_code} out of range 0..2**32-1")
    if codes.ndim != 1 or codes.dtype.kind not in "iu":
        raise TypeError(f"codes must be a 1-D integer array, got {codes.dtype} with {codes.ndim} dims")
    if len(codes) and (int(codes.min()) < 0 or int(codes.max()) > max_code):
        raise ValueError(f"codes out of range 0..{max_code}")
    codes = np.ascontiguousarray(codes, dtype=np.uint32)
    width = max_code.bit_length()
    size = packed_size(len(codes), width, 4)
    buf = np.empty((CODES_HEADER_SIZE + size) // 8, dtype=np.uint64)
    raw = buf.view(np.uint8)
    _CODES_HEADER.pack_into(raw, 0, width, 0)
    _bp.for_pack_into(codes, 0, width, raw[CODES_HEADER_SIZE:])
    return raw.tobytes()


def pack_code_pages(codes, max_code: int, bounds, lead: int = 0) -> list[memoryview]:
    """:func:`pack_codes` of each page ``codes[bounds[k]:bounds[k + 1]]``, after ``lead``
    zero bytes (a multiple of 8), laid out in one buffer: a memoryview per page. The
    codes are checked once, for the whole chunk."""
    codes = np.asarray(codes)
    max_code = int(max_code)
    if not 0 <= max_code < 1 << 32 or lead % 8:
        raise ValueError(f"max_code {max_code} out of range 0..2**32-1, or lead {lead} not a multiple of 8")
    if len(codes) and (int(codes.min()) < 0 or int(codes.max()) > max_code):
        raise ValueError(f"codes out of range 0..{max_code}")
    codes = np.ascontiguousarray(codes, dtype=np.uint32)
    width = max_code.bit_length()
    starts, stops = list(bounds[:-1]), list(bounds[1:])
    sizes = [lead + CODES_HEADER_SIZE + packed_size(b - a, width, 4) for a, b in zip(starts, stops)]
    raw = np.zeros(sum(sizes) // 8, dtype=np.uint64).view(np.uint8)
    pages, at = [], 0
    for a, b, size in zip(starts, stops, sizes):
        page = raw[at:at + size]
        _CODES_HEADER.pack_into(page, lead, width, 0)
        _bp.for_pack_into(codes[a:b], 0, width, page[lead + CODES_HEADER_SIZE:])
        pages.append(memoryview(page))
        at += size
    return pages


def _codes_width(buf, n: int) -> int:
    if not 0 <= n <= MAX_ROWS:
        raise CorruptFileError(f"code count {n} out of range")
    if len(buf) < CODES_HEADER_SIZE:
        raise CorruptFileError(f"packed codes are {len(buf)} bytes, shorter than their {CODES_HEADER_SIZE}-byte header")
    width, reserved = _CODES_HEADER.unpack_from(buf, 0)
    if reserved or buf[1] or buf[2] or buf[3]:
        raise CorruptFileError("packed codes header: reserved bytes are not zero")
    if width > 32:
        raise CorruptFileError(f"packed codes header: bit width {width} exceeds 32")
    return width


def unpack_codes(buf, n: int, limit: int | None = None) -> np.ndarray:
    """Decode ``n`` codes written by :func:`pack_codes`; returns a new uint32 array.
    The buffer length is checked against ``n`` before allocating."""
    buf = as_buffer(buf)
    width = _codes_width(buf, n)
    out = _bp.for_unpack(buf, n, width, 0, np.uint32, CODES_HEADER_SIZE)
    if limit is not None and n and (1 << width) > limit and int(out.max()) >= limit:
        raise CorruptFileError(f"dictionary code {int(out.max())} out of range for {limit} entries")
    return out


ENCODINGS = [Bitpack]
