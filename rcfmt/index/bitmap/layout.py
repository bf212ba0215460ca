"""The bytes of bitmap indexes (docs/FORMAT.md section 6b): compressed bitmaps over the
rows of a block, the per-chunk index entries that hold them, and the directory that
locates the entries.

Nothing here knows about predicates or writing policy: :mod:`rcfmt.index.bitmap.build`
builds entries, :mod:`rcfmt.index.bitmap.answer` answers predicates from them. Bitmaps are
handled in memory as little-endian ``uint64`` words (``words(rows)`` of them, bits past
the block's rows 0), so combining two is one numpy pass over ``rows / 64`` words.
"""
from __future__ import annotations

import functools
import struct
import zlib

import numpy as np

from ..._native import bitmaps as _bitmaps
from ...errors import ChecksumError, CorruptFileError

__all__ = [
    "EQUALITY", "RANGE", "BITSLICED", "KIND_NAMES", "KIND_IDS", "FORM_DENSE", "FORM_POSITIONS", "FORM_RUNS",
    "DIRECTORY_RECORD", "words", "encode_mask", "encode_bitmap", "IndexEntry", "encode_entry", "parse_entry",
    "encode_directory", "parse_directory", "entry_keys", "encode_keys", "keys_parser",
]

EQUALITY, RANGE, BITSLICED = 1, 2, 3
KIND_NAMES = {EQUALITY: "equality", RANGE: "range", BITSLICED: "bitsliced"}
KIND_IDS = {name: kind for kind, name in KIND_NAMES.items()}

FORM_DENSE, FORM_POSITIONS, FORM_RUNS = 0, 1, 2
_CONTAINER = struct.Struct("<BI")  # form, payload length
_ENTRY = struct.Struct("<BBHIII")  # kind, flags, implied key, row_count, key_count, keys_length
ENTRY_FLAG_NAN = 0x01  # a NaN bitmap follows the null bitmap (float columns)
ENTRY_FLAG_IMPLIED = 0x02  # equality: the bitmap of key ``implied`` is left out (the rows of no other key)
_BITSLICED_KEYS = struct.Struct("<16sQ")  # base (i128), step

#: one record per (indexed column, block): the entry's file offset, length and crc32
DIRECTORY_RECORD = np.dtype([("offset", "<u8"), ("length", "<u4"), ("crc32", "<u4")])


def words(rows: int) -> int:
    """uint64 words of a bitmap over ``rows`` rows."""
    return (rows + 63) >> 6


def _fail(msg: str) -> CorruptFileError:
    return CorruptFileError(f"bitmap index: {msg}")


# ------------------------------------------------------------------ one bitmap
def encode_mask(mask: np.ndarray) -> bytes:
    """One row mask (bool per row) as the smallest container, without listing its rows
    unless a sparse form can win (a few vectorized passes)."""
    rows = len(mask)
    dense = (rows + 7) >> 3
    k = int(np.count_nonzero(mask))
    if 4 * k < dense:
        return encode_bitmap(np.flatnonzero(mask), rows)
    if k and rows > 1:
        edges = int(np.count_nonzero(mask[1:] != mask[:-1])) + int(mask[0]) + int(mask[-1])
        if 4 * edges < dense:  # runs = edges / 2, 8 bytes each
            return encode_bitmap(np.flatnonzero(mask), rows)
    return _CONTAINER.pack(FORM_DENSE, dense) + np.packbits(mask, bitorder="little").tobytes()


def encode_bitmap(positions: np.ndarray, rows: int) -> bytes:
    """The rows at ``positions`` (ascending, below ``rows``) as the smallest container:
    dense bits, u32 positions or u32 (start, length) runs."""
    positions = np.asarray(positions, np.int64)
    k = len(positions)
    if k:
        breaks = np.flatnonzero(np.diff(positions) != 1) + 1
        runs = len(breaks) + 1
    else:
        runs = 0
    dense_size, positions_size, runs_size = (rows + 7) >> 3, 4 * k, 8 * runs
    best = min(dense_size, positions_size, runs_size)
    if best == positions_size:
        return _CONTAINER.pack(FORM_POSITIONS, positions_size) + positions.astype("<u4").tobytes()
    if best == runs_size:
        starts = positions[np.concatenate(([0], breaks))]
        ends = positions[np.concatenate((breaks - 1, [k - 1]))] + 1
        pairs = np.empty((runs, 2), "<u4")
        pairs[:, 0], pairs[:, 1] = starts, ends - starts
        return _CONTAINER.pack(FORM_RUNS, runs_size) + pairs.tobytes()
    mask = np.zeros(rows, bool)
    mask[positions] = True
    return _CONTAINER.pack(FORM_DENSE, dense_size) + np.packbits(mask, bitorder="little").tobytes()


_ERRORS = {
    _bitmaps.ERR_TRUNCATED: "bitmap runs past its entry",
    _bitmaps.ERR_DENSE_LENGTH: "dense bitmap of the wrong length for its block",
    _bitmaps.ERR_PAYLOAD_LENGTH: "bitmap payload not a whole number of positions or runs",
    _bitmaps.ERR_FORM: "unknown bitmap form",
    _bitmaps.ERR_DENSE_TAIL: "bits set past the block's rows",
    _bitmaps.ERR_POSITIONS: "positions not ascending within the block",
    _bitmaps.ERR_RUNS: "runs overlap, are empty or pass the block's rows",
}


def _containers(buf: memoryview, pos: int, count: int, rows: int) -> tuple[np.ndarray, int]:
    """Locate ``count`` containers from ``pos`` (forms and payload lengths checked, not
    their contents): ``(records [form, payload offset, payload length], end)``."""
    out = np.empty((count, 3), np.int64)
    code, end = _bitmaps.locate(np.frombuffer(buf, np.uint8), pos, count, rows, out)
    if code != _bitmaps.OK:
        raise _fail(_ERRORS[code])
    return out, end


def _union(buf: memoryview, records: np.ndarray, rows: int) -> np.ndarray:
    """The union of containers (rows of ``records``) as words, their contents checked
    as they are read (one native pass each)."""
    out = np.zeros(words(rows), np.uint64)
    code = _bitmaps.union_into(np.frombuffer(buf, np.uint8), np.ascontiguousarray(records, np.int64), rows, out)
    if code != _bitmaps.OK:
        raise _fail(_ERRORS[code])
    return out


# ------------------------------------------------------------------ one entry
class IndexEntry:
    """A chunk's index, parsed and checked (its bitmaps are decoded when asked for, and
    their contents checked then).

    ``keys``: ascending distinct values (equality, range; in the column's stats domain:
    int, float, bool or bytes) or ``(base, step)`` (bitsliced: values are ``base + step
    * u``, slices hold the bits of ``u``); ``implied``: the equality key whose bitmap is
    not stored (the non-null, non-NaN rows of no other key), or None;
    ``bitmap(i)`` / ``union(ids)``: per key its rows (equality), the rows with value <=
    key (range), or per binary digit of ``value - base`` from the least significant one
    (bitsliced); ``nulls``/``nans``: rows that are NULL / NaN (``nans`` None when the
    entry has no NaN bitmap). Bitmaps are words (:func:`words`).
    """

    __slots__ = ("kind", "rows", "keys", "count", "implied", "_buf", "_records", "_nulls", "_nans", "_stored",
                 "_matrix")

    def __init__(self, kind: int, rows: int, keys: tuple, count: int, buf: memoryview, records: np.ndarray,
                 has_nans: bool, implied: int | None):
        self.kind, self.rows, self.keys, self.count, self.implied = kind, rows, keys, count, implied
        self._buf, self._records = buf, records
        self._nulls = self._nans = self._matrix = None
        self._stored = 2 if has_nans else 1  # records before the first key's

    @property
    def kind_name(self) -> str:
        return KIND_NAMES[self.kind]

    @property
    def has_nans(self) -> bool:
        return self._stored == 2

    @property
    def nulls(self) -> np.ndarray:
        if self._nulls is None:
            self._nulls = _union(self._buf, self._records[:1], self.rows)
        return self._nulls

    @property
    def nans(self) -> np.ndarray | None:
        if self._nans is None and self.has_nans:
            self._nans = _union(self._buf, self._records[1:2], self.rows)
        return self._nans

    def matrix(self) -> np.ndarray:
        """Every stored key/slice bitmap decoded once, as ``(count, words)``."""
        if self._matrix is None:
            records = np.ascontiguousarray(self._records[self._stored :])
            out = np.zeros((len(records), words(self.rows)), np.uint64)
            code = _bitmaps.decode_rows(np.frombuffer(self._buf, np.uint8), records, self.rows, out)
            if code != _bitmaps.OK:
                raise _fail(_ERRORS[code])
            self._matrix = out
        return self._matrix

    def bitmap(self, i: int) -> np.ndarray:
        return self.union([i])

    def union(self, ids) -> np.ndarray:
        """The union of bitmaps ``ids`` (indexes of keys or slices)."""
        implied = self.implied
        if isinstance(ids, list) and len(ids) == 1 and ids[0] != implied:  # one bitmap
            i = ids[0] - (implied is not None and ids[0] > implied)
            return _union(self._buf, self._records[self._stored + i : self._stored + i + 1], self.rows)
        ids = np.asarray(ids, np.int64)
        if implied is None:
            return _union(self._buf, self._records[self._stored + ids], self.rows)
        if (ids == implied).any():  # the rows of no other key: the complement of the others' union
            wanted = np.zeros(self.count, bool)
            wanted[ids] = True
            others = np.flatnonzero(~wanted)
            out = ~self._stored_union(others)
            out &= ~self.nulls
            if self.has_nans:
                out &= ~self.nans
            if self.rows & 63:
                out[-1] &= np.uint64((1 << (self.rows & 63)) - 1)
            return out
        return self._stored_union(ids)

    def _stored_union(self, ids: np.ndarray) -> np.ndarray:
        """Union of keys ``ids`` (never the implied one) from their stored bitmaps."""
        stored = ids - (ids > self.implied)
        return _union(self._buf, self._records[self._stored + stored], self.rows)

    @property
    def nbytes(self) -> int:
        return len(self._buf)


def encode_entry(kind: int, rows: int, keys: bytes, key_count: int, nulls: bytes, nans: bytes | None,
                 bitmaps: list[bytes], implied: int | None = None) -> bytes:
    """An entry: header, serialized ``keys`` (:func:`encode_keys`), the null bitmap, the
    NaN bitmap if any, then ``bitmaps`` (containers from :func:`encode_mask` /
    :func:`encode_bitmap`; for equality, without the one of key ``implied`` if given)."""
    flags = (ENTRY_FLAG_NAN if nans is not None else 0) | (ENTRY_FLAG_IMPLIED if implied is not None else 0)
    head = _ENTRY.pack(kind, flags, implied or 0, rows, key_count, len(keys))
    return b"".join([head, keys, nulls, *([nans] if nans is not None else []), *bitmaps])


def parse_entry(raw: bytes, rows: int, parse_keys) -> IndexEntry:
    """An entry's bytes (checksum already verified) for a block of ``rows`` rows.
    ``parse_keys(kind, buffer, count)`` turns the keys section into a tuple (and checks
    it); the bitmaps that follow are checked to lie within the block."""
    buf = memoryview(raw)
    if len(buf) < _ENTRY.size:
        raise _fail("entry shorter than its header")
    kind, flags, implied, entry_rows, key_count, keys_length = _ENTRY.unpack_from(buf, 0)
    if kind not in KIND_NAMES:
        raise _fail(f"unknown index kind {kind}")
    if flags & ~(ENTRY_FLAG_NAN | ENTRY_FLAG_IMPLIED):
        raise _fail(f"unknown entry flags {flags:#x}")
    if flags & ENTRY_FLAG_IMPLIED:
        if kind != EQUALITY or implied >= key_count:
            raise _fail("implied key outside an equality index's keys")
    elif implied:
        raise _fail("implied key set without its flag")
    if entry_rows != rows:
        raise _fail(f"entry covers {entry_rows} rows, its block has {rows}")
    pos = _ENTRY.size
    if pos + keys_length > len(buf):
        raise _fail("keys run past the entry")
    if kind == BITSLICED and key_count > 64:
        raise _fail(f"{key_count} bit slices (at most 64)")
    # every bitmap takes at least its 5-byte container header: bound the count first
    if _CONTAINER.size * key_count > len(buf) - pos - keys_length:
        raise _fail(f"{key_count} bitmaps cannot fit the entry")
    keys = parse_keys(kind, buf[pos : pos + keys_length], key_count)
    pos += keys_length
    has_nans = bool(flags & ENTRY_FLAG_NAN)
    stored = key_count - bool(flags & ENTRY_FLAG_IMPLIED)
    records, pos = _containers(buf, pos, 1 + has_nans + stored, rows)
    if pos != len(buf):
        raise _fail(f"{len(buf) - pos} bytes after the last bitmap")
    return IndexEntry(kind, rows, keys, key_count, buf, records, has_nans,
                      implied if flags & ENTRY_FLAG_IMPLIED else None)


def entry_keys(raw: bytes, ltype) -> tuple[int, tuple]:
    """``(kind, keys)`` of an entry, reading only its header and keys (checked)."""
    buf = memoryview(raw)
    if len(buf) < _ENTRY.size:
        raise _fail("entry shorter than its header")
    kind, _, _, _, key_count, keys_length = _ENTRY.unpack_from(buf, 0)
    if kind not in KIND_NAMES or _ENTRY.size + keys_length > len(buf):
        raise _fail("bad entry header")
    return kind, keys_parser(ltype)(kind, buf[_ENTRY.size : _ENTRY.size + keys_length], key_count)


# ------------------------------------------------------------------ the directory
def encode_directory(records: np.ndarray) -> bytes:
    """The directory (records of :data:`DIRECTORY_RECORD`, column-major: all blocks of
    the first indexed column, then the next) followed by its crc32."""
    body = records.astype(DIRECTORY_RECORD, copy=False).tobytes()
    return body + struct.pack("<I", zlib.crc32(body))


def parse_directory(raw: bytes, columns: int, blocks: int, region: tuple[int, int], verify: bool) -> np.ndarray:
    """The directory as a ``(columns, blocks)`` record array, every entry checked to lie
    inside the region before the directory."""
    size = columns * blocks * DIRECTORY_RECORD.itemsize
    if len(raw) != size + 4:
        raise _fail("directory has the wrong length")
    body = raw[:size]
    if verify and zlib.crc32(body) != int.from_bytes(raw[size:], "little"):
        raise ChecksumError("bitmap index: directory checksum mismatch")
    records = np.frombuffer(body, DIRECTORY_RECORD).reshape(columns, blocks)
    start, end = region
    offsets = records["offset"].astype(np.uint64)
    lengths = records["length"].astype(np.uint64)
    present = lengths > 0
    # (no sum that can wrap: an offset near 2**64 plus its length must not come back inside)
    lo, hi = np.uint64(start), np.uint64(max(start, end))
    if present.any() and ((offsets[present] < lo) | (lengths[present] > hi - lo)
                          | (offsets[present] > hi - lengths[present])).any():
        raise _fail("entry outside the bitmap index region")
    return records


# ------------------------------------------------------------------ keys
def encode_keys(kind: int, ltype, keys) -> bytes:
    """The keys section: bitsliced, the base as a 16-byte two's complement integer;
    otherwise the ascending keys at their storage width (bool one byte, decimal128 16
    bytes), or for string/binary ``u32 offsets[count + 1] | bytes``."""
    if kind == BITSLICED:
        base, step = keys
        return _BITSLICED_KEYS.pack(int(base).to_bytes(16, "little", signed=True), int(step))
    if ltype.width == 0:  # string / binary: a list of bytes
        lengths = np.fromiter((len(k) for k in keys), np.int64, len(keys))
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype("<u4")
        return offsets.tobytes() + b"".join(keys)
    if ltype.name == "decimal128":
        return b"".join(int(k).to_bytes(16, "little", signed=True) for k in keys)
    return np.asarray(keys, ltype.numpy_dtype).astype(ltype.numpy_dtype.newbyteorder("<"), copy=False).tobytes()


def keys_parser(ltype):
    """``parse_keys`` for :func:`parse_entry` on a column of ``ltype``: the keys as a
    tuple of stats-domain values, checked strictly ascending (floats: no NaN, no -0.0).
    The chunks of a column often hold the same keys: parsed once per distinct bytes."""
    return functools.partial(_parse_keys_cached, ltype)


def _parse_keys_cached(ltype, kind: int, buf: memoryview, count: int) -> tuple:
    return _parse_keys(ltype, kind, bytes(buf), count)


@functools.lru_cache(maxsize=1024)
def _parse_keys(ltype, kind: int, buf: bytes, count: int) -> tuple:
    return _keys_parser(ltype)(kind, memoryview(buf), count)


def _keys_parser(ltype):
    def parse(kind: int, buf: memoryview, count: int) -> tuple:
        if kind == BITSLICED:
            if len(buf) != _BITSLICED_KEYS.size or not (ltype.is_integer or ltype.name in ("date32", "timestamp",
                                                                                            "decimal128")):
                raise _fail("bit slices need an integer-like column, a 16-byte base and a step")
            base, step = _BITSLICED_KEYS.unpack(buf)
            if step == 0:
                raise _fail("bit slices with step 0")
            return int.from_bytes(base, "little", signed=True), step
        if ltype.width == 0:
            if len(buf) < 4 * (count + 1):
                raise _fail("key offsets run past the keys")
            offsets = np.frombuffer(buf, "<u4", count + 1).astype(np.int64)
            data = bytes(buf[4 * (count + 1) :])
            if offsets[0] != 0 or offsets[-1] != len(data) or (np.diff(offsets) < 0).any():
                raise _fail("key offsets out of order")
            keys = tuple(data[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()))
        else:
            width = ltype.width
            if len(buf) != width * count:
                raise _fail(f"{count} keys of {width} bytes in {len(buf)} bytes")
            if ltype.name == "decimal128":
                raw = bytes(buf)
                keys = tuple(int.from_bytes(raw[i : i + 16], "little", signed=True) for i in range(0, len(raw), 16))
            else:
                if ltype.name == "bool" and (np.frombuffer(buf, np.uint8) > 1).any():
                    raise _fail("bool keys not 0 or 1")
                arr = np.frombuffer(buf, ltype.numpy_dtype.newbyteorder("<") if width > 1 else ltype.numpy_dtype, count)
                if ltype.is_float and (np.isnan(arr).any() or np.signbit(arr[arr == 0]).any()):
                    raise _fail("NaN or -0.0 among float keys")
                keys = tuple(arr.tolist())
        if any(a >= b for a, b in zip(keys, keys[1:])):
            raise _fail("keys not strictly ascending")
        return keys

    return parse
