"""DICTIONARY (wire id 1): one dictionary per column chunk, codes in the data pages.

The chunk's dictionary page holds the distinct values, PLAIN-encoded, in order of first
appearance. Each data page body is ``u8 layout`` followed by one code per row slot:
layout 1, 2 or 4 means little-endian unsigned codes of that many bytes. Codes must be
smaller than the dictionary size.

Worked example, strings ``["b", "a", "b"]`` -> dictionary page
``00000000 01000000 02000000 62 61``, data page ``01 00 01 00``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._native import varbinary as _vb
from ..errors import CorruptFileError
from ..types import LogicalType, PhysicalKind
from .base import ColumnValues, EncodedChunk, Encoding
from .plain import encode_plain

__all__ = ["Dictionary", "build_dictionary", "decode_codes", "code_width", "take"]

_CODE_DTYPES = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4")}


def code_width(dictionary_size: int) -> int:
    """Narrowest byte width that holds codes ``0 .. dictionary_size - 1``."""
    return 1 if dictionary_size <= 1 << 8 else 2 if dictionary_size <= 1 << 16 else 4


def _arrow_view(chunk: ColumnValues, ltype: LogicalType) -> pa.Array:
    """The chunk's storage values as an Arrow array whose equality is bit equality."""
    n = len(chunk)
    if ltype.kind == PhysicalKind.VARBINARY:
        offsets = np.ascontiguousarray(chunk.offsets, dtype=np.int64)
        return pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(chunk.values)])
    values = np.ascontiguousarray(chunk.values)
    if ltype.kind == PhysicalKind.BOOL:
        return pa.array(values)
    if values.dtype.itemsize == 16:
        return pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(values)])
    # floats compare by bit pattern: NaN payloads and -0.0 must survive
    return pa.array(values.view(f"<u{values.dtype.itemsize}"))


def build_dictionary(chunk: ColumnValues, ltype: LogicalType) -> tuple[np.ndarray, ColumnValues]:
    """Return ``(codes int32[rows], dictionary values)`` for a chunk (all slots)."""
    encoded = _arrow_view(chunk, ltype).dictionary_encode()
    codes = np.frombuffer(encoded.indices.buffers()[1], dtype=np.int32, count=len(encoded))
    dictionary = encoded.dictionary
    if ltype.kind == PhysicalKind.VARBINARY:
        _, offsets_buf, data_buf = dictionary.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64, count=len(dictionary) + 1)
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, np.uint8)
        return codes, ColumnValues(data, offsets)
    if ltype.kind == PhysicalKind.BOOL:
        return codes, ColumnValues(dictionary.to_numpy(zero_copy_only=False).astype(bool))
    raw = np.frombuffer(dictionary.buffers()[1], dtype=ltype.numpy_dtype, count=len(dictionary))
    return codes, ColumnValues(raw)


def decode_codes(body, rows: int, dictionary_size: int) -> np.ndarray:
    """The codes of one data page, checked against the dictionary size."""
    if len(body) < 1:
        raise CorruptFileError("dictionary page body is empty")
    width = body[0]
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
    return ColumnValues(dictionary.values.take(codes))


class Dictionary(Encoding):
    id = 1
    name = "dictionary"
    kinds = frozenset({PhysicalKind.FIXED, PhysicalKind.VARBINARY})

    def estimate_size(self, chunk, ltype, analysis):
        if analysis.dictionary is None:
            return None
        codes, dictionary = analysis.dictionary
        dict_size = len(encode_plain(dictionary, ltype)) if ltype.kind == PhysicalKind.VARBINARY else dictionary.values.nbytes
        return dict_size + len(chunk) * code_width(len(dictionary))

    def encode_chunk(self, chunk, ltype, page_bounds, analysis=None):
        if analysis is not None and analysis.dictionary is not None:
            codes, dictionary = analysis.dictionary
        else:
            codes, dictionary = build_dictionary(chunk, ltype)
        width = code_width(len(dictionary))
        packed = codes.astype(_CODE_DTYPES[width])
        head = bytes([width])
        pages = [head + packed[start:stop].tobytes() for start, stop in zip(page_bounds[:-1], page_bounds[1:])]
        return EncodedChunk(self, pages, dictionary=encode_plain(dictionary, ltype),
                            dictionary_size=len(dictionary), distinct_count=None)

    def encode(self, values, ltype):
        raise TypeError("DICTIONARY encodes whole chunks; use encode_chunk")

    def decode(self, body, rows, ltype, dictionary=None):
        if dictionary is None:
            raise CorruptFileError("dictionary-encoded chunk has no dictionary page")
        return take(dictionary, decode_codes(body, rows, len(dictionary)), ltype)


ENCODINGS = [Dictionary]
