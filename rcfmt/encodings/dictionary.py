"""DICTIONARY (wire id 1): one dictionary per column chunk, codes in the data pages.

The chunk's dictionary page holds the distinct values, PLAIN-encoded, in order of first
appearance. Each data page body is ``u8 layout`` followed by one code per row slot.
Codes must be smaller than the dictionary size.

- Layout 1, 2 or 4: little-endian unsigned codes of that many bytes; the body is
  exactly ``1 + rows * layout`` bytes. Byte-aligned codes suit a page that zstd
  compresses afterwards (zstd entropy-codes skewed code frequencies).
- Layout 0 (bit-packed; cascade into :func:`rcfmt.encodings.bitpack.pack_codes`):
  ``u8 0 | 7 zero bytes | u8 w | 7 zero bytes | codes bit-packed at w bits`` in the
  block layout of :mod:`rcfmt.encodings.bitpack` with ``T = 32``, ``w`` the bit length
  of ``dictionary_size - 1`` (a writer MAY use more, up to 32). The body is exactly
  ``16 + packed_size(rows, w, 4)`` bytes. Bit-packed codes suit pages left
  uncompressed: ``w`` bits per value, decoded by the vectorized kernel.

Worked example, strings ``["b", "a", "b"]`` -> dictionary page
``00000000 01000000 02000000 62 61``, data page (layout 1) ``01 00 01 00``; with layout
0: ``w = 1``, the 3 codes are row 0 of lanes 0..2 (32 lanes of u32 words), one word
per lane is kept::

    00 00 00 00 00 00 00 00   layout 0, padding
    01 00 00 00 00 00 00 00   w = 1, reserved
    00 00 00 00 01 00 00 00   lanes 0, 1: codes 0, 1
    00 00 00 00               lane 2: code 0
    + 116 x 00                lanes 3..31 (padding)

144 bytes; a page of 20,000 codes of a 7-entry dictionary takes 16 + 7,552 bytes
instead of 20,001.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..runtime import memory
from .._native import dictbuild as _dictbuild
from .._native import select as _select
from .._native import varbinary as _vb
from ..errors import CorruptFileError
from ..schema.types import LogicalType, PhysicalKind
from .base import ColumnValues, EncodedChunk, Encoding
from .bitpack import pack_code_pages, unpack_codes
from .bitpack import packed_size as _packed_size
from .plain import encode_plain

__all__ = ["Dictionary", "build_dictionary", "decode_codes", "code_width", "take", "LAYOUT_BITPACKED"]

_CODE_DTYPES = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4")}
#: data-page layout byte of bit-packed codes
LAYOUT_BITPACKED = 0
_BITPACKED_HEAD = bytes(8)
BITPACKED_HEADER_SIZE = 16


def bitpacked_codes_size(rows: int, dictionary_size: int) -> int:
    """Body bytes of ``rows`` codes in layout 0."""
    width = max(dictionary_size - 1, 0).bit_length()
    return BITPACKED_HEADER_SIZE + _packed_size(rows, width, 4)


def code_width(dictionary_size: int) -> int:
    """Narrowest byte width that holds codes ``0 .. dictionary_size - 1``."""
    return 1 if dictionary_size <= 1 << 8 else 2 if dictionary_size <= 1 << 16 else 4


def build_dictionary(chunk: ColumnValues, ltype: LogicalType, value_range: tuple[int, int] | None = None,
                     valid: np.ndarray | None = None) -> tuple[np.ndarray, ColumnValues]:
    """Return ``(codes int32[rows], dictionary values)`` for a chunk (all slots): the
    distinct values in order of first appearance, equal when their bytes are equal
    (NaN payloads and -0.0 stay apart). One GIL-free native pass
    (:mod:`rcfmt._native.dictbuild`); BOOL chunks go through Arrow. ``value_range``:
    the least and greatest value of an integer-like chunk (decimals unscaled), when
    known; a range narrower than the chunk's rows is built with a direct table.
    ``valid`` (one bool per row, some true; VARBINARY chunks): a null slot's value (of
    no meaning, usually empty) adds no entry, the slot takes its neighbour's code."""
    if ltype.kind == PhysicalKind.VARBINARY:
        offsets = chunk.offsets
        if offsets.dtype not in (np.int32, np.int64) or not offsets.flags.c_contiguous:
            offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        codes, first = _dictbuild.encode_varbinary(
            offsets, np.ascontiguousarray(chunk.values).view(np.uint8),
            None if valid is None else np.ascontiguousarray(valid, dtype=bool).view(np.uint8))
        return codes, take(ColumnValues(chunk.values, offsets), first, ltype)
    if ltype.kind == PhysicalKind.BOOL:
        encoded = pa.array(np.ascontiguousarray(chunk.values)).dictionary_encode()
        codes = np.frombuffer(encoded.indices.buffers()[1], dtype=np.int32, count=len(encoded))
        return codes, ColumnValues(encoded.dictionary.to_numpy(zero_copy_only=False).astype(bool))
    values = np.ascontiguousarray(chunk.values)
    n = len(values)
    if value_range is not None and n >= RANGE_MIN_ROWS and 0 <= value_range[1] - value_range[0] < n:
        numbers = _as_integers(values)  # a direct table no larger than the codes
        if numbers is not None:
            codes, first = _dictbuild.encode_range(numbers, *value_range)
            return codes, take(ColumnValues(values), first, ltype)
    codes, first = _dictbuild.encode_fixed(values.reshape(-1).view(np.uint8), values.dtype.itemsize)
    return codes, take(ColumnValues(values), first, ltype)


def code_counts(codes: np.ndarray, entries: int, valid=None) -> np.ndarray:
    """Rows per entry (int64, ``entries``) of a dictionary's ``codes``, non-null rows only
    when ``valid`` (one bool per row) is given: one native pass."""
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    if valid is not None:
        valid = np.ascontiguousarray(valid, dtype=bool).view(np.uint8)
    return _dictbuild.code_counts(codes, entries, valid)


#: chunks shorter than this are always hashed (a table and two reductions do not pay)
RANGE_MIN_ROWS = 4096


def _as_integers(values: np.ndarray) -> np.ndarray | None:
    """``values`` as int32/int64 numbers whose equality is their bytes' equality:
    integers, dates and times as they are, decimal128 as its low words when every high
    word is the sign extension; None otherwise (floats: -0.0 and NaN payloads)."""
    if values.dtype.kind in "Mm":
        return values.view(np.int64)
    if values.dtype in (np.int32, np.int64):
        return values
    if values.dtype.kind == "V" and values.dtype.itemsize == 16:
        words = values.view("<i8").reshape(-1, 2)
        low = words[:, 0]
        if np.array_equal(words[:, 1], low >> 63):
            return np.ascontiguousarray(low)
    return None


def decode_codes(body, rows: int, dictionary_size: int) -> np.ndarray:
    """The codes of one data page, checked against the dictionary size."""
    if len(body) < 1:
        raise CorruptFileError("dictionary page body is empty")
    width = body[0]
    if width == LAYOUT_BITPACKED:
        if len(body) < BITPACKED_HEADER_SIZE:
            raise CorruptFileError(f"bit-packed dictionary codes: body of {len(body)} bytes is shorter than "
                                   f"its {BITPACKED_HEADER_SIZE}-byte header")
        if any(body[1:8]):
            raise CorruptFileError("bit-packed dictionary codes: padding bytes are not zero")
        # validates the width, the exact length (before allocating) and every code
        return unpack_codes(memoryview(body)[8:], rows, limit=dictionary_size)
    dtype = _CODE_DTYPES.get(width)
    if dtype is None:
        raise CorruptFileError(f"unknown dictionary code layout {width}")
    if len(body) != 1 + rows * width:
        raise CorruptFileError(f"dictionary codes need {1 + rows * width} bytes, page has {len(body)}")
    codes = np.frombuffer(body, dtype=dtype, offset=1, count=rows)
    if rows and int(codes.max()) >= dictionary_size:
        raise CorruptFileError(f"dictionary code {int(codes.max())} out of range (dictionary size {dictionary_size})")
    return codes


def take(dictionary: ColumnValues, codes: np.ndarray, ltype: LogicalType) -> ColumnValues:
    """Materialize ``dictionary[codes]`` (codes already validated)."""
    if ltype.kind == PhysicalKind.VARBINARY:
        offsets = np.ascontiguousarray(dictionary.offsets, dtype=np.int64)
        new_offsets, data = _vb.gather(offsets, dictionary.values, np.ascontiguousarray(codes))
        return ColumnValues(data, new_offsets)
    values = np.ascontiguousarray(dictionary.values)
    if len(codes) < 1024:
        return ColumnValues(values[codes])
    # natively, GIL-free: numpy's take casts uint32 codes to intp first and holds the GIL
    # (~290 µs for 50,000 int64 values from a 6,000-entry dictionary, against ~30 µs)
    if codes.dtype != np.uint32 and codes.dtype != np.int64:
        codes = codes.astype(np.uint32)
    return ColumnValues(_select.take(values, np.ascontiguousarray(codes), memory.empty(len(codes), values.dtype)))


class Dictionary(Encoding):
    id = 1
    name = "dictionary"

    decode_cost = 1.1  # a gather per value (strings: a copy of each value's bytes)

    @staticmethod
    def dictionary_page_size(dictionary: ColumnValues, ltype: LogicalType) -> int:
        if ltype.kind == PhysicalKind.VARBINARY:
            return 4 * (len(dictionary) + 1) + dictionary.nbytes
        return dictionary.values.nbytes

    def estimate_size(self, chunk, ltype, analysis):
        """Dictionary page plus codes, in the layout ``analysis.params`` names (byte
        codes by default)."""
        if analysis.dictionary is None:
            return None
        codes, dictionary = analysis.dictionary
        dict_size = self.dictionary_page_size(dictionary, ltype)
        params = analysis.params.get(self.name) or {}
        if params.get("layout") == LAYOUT_BITPACKED:
            return dict_size + bitpacked_codes_size(len(chunk), len(dictionary))
        return dict_size + len(chunk) * code_width(len(dictionary))

    def encode_chunk(self, chunk, ltype, page_bounds, analysis=None):
        if analysis is not None and analysis.dictionary is not None:
            codes, dictionary = analysis.dictionary
        else:
            codes, dictionary = build_dictionary(chunk, ltype)
        params = (analysis.params.get(self.name) if analysis is not None else None) or {}
        bounds = list(zip(page_bounds[:-1], page_bounds[1:]))
        if params.get("layout") == LAYOUT_BITPACKED:
            pages = pack_code_pages(codes, max(len(dictionary) - 1, 0), page_bounds, lead=len(_BITPACKED_HEAD))
        else:
            width = code_width(len(dictionary))
            packed = codes.astype(_CODE_DTYPES[width])
            head = bytes([width])
            pages = [head + packed[start:stop].tobytes() for start, stop in bounds]
        return EncodedChunk(self, pages, dictionary=encode_plain(dictionary, ltype),
                            dictionary_size=len(dictionary), distinct_count=None)

    def encode(self, values, ltype):
        raise TypeError("DICTIONARY encodes whole chunks; use encode_chunk")

    def decode(self, body, rows, ltype, dictionary=None):
        if dictionary is None:
            raise CorruptFileError("dictionary-encoded chunk has no dictionary page")
        return take(dictionary, decode_codes(body, rows, len(dictionary)), ltype)


ENCODINGS = [Dictionary]
