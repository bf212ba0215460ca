"""RLE (wire id 2): runs of equal values, for FIXED and BOOL columns.

Body: ``u32 run_count | u32 run_lengths[run_count] | PLAIN(run values)``. Every run
length is >= 1 and they add up to the page's row count. Values are equal when their
bytes are equal (NaN payloads and -0.0 are kept).

Worked example, int32 ``[7, 7, 7, 9]`` -> ``02000000 03000000 01000000 07000000 09000000``.
"""
from __future__ import annotations

import numpy as np

from ..errors import CorruptFileError
from ..schema.types import PhysicalKind
from .base import ColumnValues, EncodedChunk, Encoding
from .plain import decode_plain, encode_plain

__all__ = ["Rle", "run_starts"]


def run_starts(values: np.ndarray) -> np.ndarray:
    """Indices where a new run of bit-identical values begins (always includes 0)."""
    n = len(values)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    if values.dtype == bool:
        bits = values
    elif values.dtype.itemsize == 16:
        bits = values.view("<u8").reshape(n, 2)
    else:
        bits = values.view(f"<u{values.dtype.itemsize}")
    change = bits[1:] != bits[:-1]
    if change.ndim == 2:
        change = change.any(axis=1)
    return np.concatenate(([0], np.flatnonzero(change) + 1))


class Rle(Encoding):
    id = 2
    name = "rle"

    def estimate_size(self, chunk, ltype, analysis):
        if analysis.run_count is None:
            return None
        width = 1 if ltype.kind == PhysicalKind.BOOL else ltype.width
        return 4 + analysis.run_count * (4 + width)

    def encode(self, values, ltype):
        return bytes(self.encode_chunk(values, ltype, [0, len(values)]).pages[0])

    def encode_chunk(self, chunk, ltype, page_bounds, analysis=None):
        """Every page's runs from one pass over the chunk (a page's first row starts a
        run): the pages :meth:`encode` makes one by one."""
        v = chunk.values
        n = len(v)
        bounds = np.asarray(page_bounds, dtype=np.int64)
        starts = np.union1d(run_starts(v), bounds[:-1][bounds[:-1] < n]).astype(np.int64)
        lengths = np.diff(np.append(starts, n)).astype("<u4")
        values = v[starts]
        cut = np.searchsorted(starts, bounds).tolist()
        pages = [np.uint32(b - a).astype("<u4").tobytes() + lengths[a:b].tobytes()
                 + encode_plain(ColumnValues(values[a:b]), ltype) for a, b in zip(cut[:-1], cut[1:])]
        return EncodedChunk(self, pages)

    def decode(self, body, rows, ltype, dictionary=None):
        if len(body) < 4:
            raise CorruptFileError("RLE page too short")
        runs = int(np.frombuffer(body, dtype="<u4", count=1)[0])
        if runs > rows or (rows > 0 and runs == 0) or len(body) < 4 + 4 * runs:
            raise CorruptFileError(f"RLE page claims {runs} runs for {rows} rows in {len(body)} bytes")
        lengths = np.frombuffer(body, dtype="<u4", offset=4, count=runs)
        if runs and (int(lengths.min()) == 0 or int(lengths.sum(dtype=np.int64)) != rows):
            raise CorruptFileError("RLE run lengths do not add up to the page's rows")
        values = decode_plain(memoryview(body)[4 + 4 * runs:], runs, ltype)
        return ColumnValues(np.repeat(values.values, lengths))


ENCODINGS = [Rle]
